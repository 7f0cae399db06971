// SPDX-License-Identifier: Apache-2.0

/// A strict RFC 8259 reader for one JSON object, as `POST /v1/orders` sends: each member's value
/// kept with its kind (`JSONValue`), nested arrays and objects with theirs. For every well-formed
/// body it gives what `JSONDecoder` decoding `[String: JSONValue]` gave (the first of duplicate
/// names wins, a UTF-8 byte order mark is skipped, `100.0` is an integer), so validation answers
/// the same; tests compare the two. App tokens and the catalog file are read with duplicate names
/// refused instead (`Duplicates.refused`): there a second `"sub"` or `"amount"` is an attack or a
/// mistake, never something to resolve silently.
/// Malformed JSON is refused as a whole, where `JSONDecoder`'s lazy scanner let some through
/// (trailing commas, `01` inside arrays) or turned a bad escape into "must be a string".
///
/// Why not `JSONDecoder`: for a body of five fields, its `Data` copy, decoder boxes and the
/// four `try?` decode attempts per value were about 4 % of a create's CPU in the gateway benchmark.
struct JSONObjectReader {
    /// Why a body was not one JSON object. Never shown to clients: the API answers one fixed message.
    struct Malformed: Error {
        /// The JSON was well-formed but repeated a name in one object, and `Duplicates.refused` was asked.
        var duplicateName = false
    }

    /// What a name that appears twice in one object means.
    enum Duplicates {
        /// The first one wins (what JSONDecoder did with request bodies).
        case firstWins
        /// The document is refused (`Malformed.duplicateName`), at any depth.
        case refused
    }

    /// `JSONDecoder`'s nesting limit.
    static let maximumDepth = 512

    private let bytes: UnsafeRawBufferPointer
    private let duplicates: Duplicates
    private var position = 0
    /// A refused duplicate name was seen; the document is refused once read to its end.
    private var refusedDuplicate = false

    private init(_ bytes: UnsafeRawBufferPointer, duplicates: Duplicates) {
        self.bytes = bytes
        self.duplicates = duplicates
    }

    /// The members of the object `body` holds.
    static func members(of body: [UInt8], duplicates: Duplicates = .firstWins) throws(Malformed) -> [String: JSONValue] {
        let result = body.withUnsafeBytes { buffer -> Result<[String: JSONValue], Malformed> in
            var reader = JSONObjectReader(buffer, duplicates: duplicates)
            do throws(Malformed) {
                return .success(try reader.topLevelObject())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private mutating func topLevelObject() throws(Malformed) -> [String: JSONValue] {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
        skipWhitespace()
        guard peek() == UInt8(ascii: "{") else { throw Malformed() }
        let members = try object(depth: 0)
        skipWhitespace()
        guard position == bytes.count else { throw Malformed() }
        guard !refusedDuplicate else { throw Malformed(duplicateName: true) }
        return members
    }

    /// An object, at the opening brace.
    private mutating func object(depth: Int) throws(Malformed) -> [String: JSONValue] {
        position += 1
        var members: [String: JSONValue] = [:]
        var duplicateName = false
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            position += 1
            return members
        }
        while true {
            skipWhitespace()
            let name = try string()
            skipWhitespace()
            try expect(UInt8(ascii: ":"))
            skipWhitespace()
            let value = try value(depth: depth + 1)
            // The first of duplicate names wins, as it did with JSONDecoder. A refused duplicate
            // is reported only once the whole document proved well-formed.
            if members[name] == nil { members[name] = value } else { duplicateName = true }
            skipWhitespace()
            if peek() == UInt8(ascii: ",") {
                position += 1
                continue
            }
            try expect(UInt8(ascii: "}"))
            break
        }
        if duplicateName && duplicates == .refused { refusedDuplicate = true }
        return members
    }

    private mutating func value(depth: Int) throws(Malformed) -> JSONValue {
        guard depth < Self.maximumDepth, let byte = peek() else { throw Malformed() }
        switch byte {
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "["): return .array(try array(depth: depth))
        case UInt8(ascii: "{"): return .object(try object(depth: depth))
        default: return try number()
        }
    }

    /// An array, at the opening bracket.
    private mutating func array(depth: Int) throws(Malformed) -> [JSONValue] {
        position += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if peek() == UInt8(ascii: "]") {
            position += 1
            return elements
        }
        while true {
            skipWhitespace()
            elements.append(try value(depth: depth + 1))
            skipWhitespace()
            if peek() == UInt8(ascii: ",") {
                position += 1
                continue
            }
            try expect(UInt8(ascii: "]"))
            return elements
        }
    }

    /// A number: an integer when it is one exactly (`100`, `-0`, and like `JSONDecoder` also
    /// `100.0` and `1e2`), otherwise a double.
    private mutating func number() throws(Malformed) -> JSONValue {
        let start = position
        if peek() == UInt8(ascii: "-") { position += 1 }
        guard let first = peek(), isDigit(first) else { throw Malformed() }
        position += 1
        if first != UInt8(ascii: "0") {
            while let byte = peek(), isDigit(byte) { position += 1 }
        }
        var isInteger = true
        if peek() == UInt8(ascii: ".") {
            isInteger = false
            position += 1
            guard let byte = peek(), isDigit(byte) else { throw Malformed() }
            while let byte = peek(), isDigit(byte) { position += 1 }
        }
        if let byte = peek(), byte | 0x20 == UInt8(ascii: "e") {
            isInteger = false
            position += 1
            if let sign = peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { position += 1 }
            guard let byte = peek(), isDigit(byte) else { throw Malformed() }
            while let byte = peek(), isDigit(byte) { position += 1 }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        if isInteger, let integer = Int(text) { return .int(integer) }
        guard let double = Double(text), double.isFinite else { throw Malformed() }
        // JSONDecoder gives an Int for any number that is one exactly.
        if double == double.rounded(), double >= -9.223372036854775e18, double < 9.223372036854775e18 {
            return .int(Int(double))
        }
        return .double(double)
    }

    private mutating func string() throws(Malformed) -> String {
        try expect(UInt8(ascii: "\""))
        let start = position
        // The common case, no escapes: one validated UTF-8 copy.
        while let byte = peek(), byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") {
            guard byte >= 0x20 else { throw Malformed() }
            position += 1
        }
        guard let stop = peek() else { throw Malformed() }
        if stop == UInt8(ascii: "\"") {
            let text = try validUTF8(UnsafeRawBufferPointer(rebasing: bytes[start..<position]))
            position += 1
            return text
        }
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: try validUTF8(UnsafeRawBufferPointer(rebasing: bytes[start..<position])).unicodeScalars)
        var runStart = position
        while true {
            guard let byte = peek() else { throw Malformed() }
            switch byte {
            case UInt8(ascii: "\""):
                scalars.append(contentsOf: try validUTF8(UnsafeRawBufferPointer(rebasing: bytes[runStart..<position])).unicodeScalars)
                position += 1
                return String(scalars)
            case UInt8(ascii: "\\"):
                scalars.append(contentsOf: try validUTF8(UnsafeRawBufferPointer(rebasing: bytes[runStart..<position])).unicodeScalars)
                position += 1
                scalars.append(try escape())
                runStart = position
            case 0..<0x20:
                throw Malformed()
            default:
                position += 1
            }
        }
    }

    /// The character after a backslash (already consumed).
    private mutating func escape() throws(Malformed) -> Unicode.Scalar {
        guard let byte = peek() else { throw Malformed() }
        position += 1
        switch byte {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            let unit = try hex4()
            if (0xD800..<0xDC00).contains(unit) {
                // A high surrogate must be followed by an escaped low one.
                guard peek() == UInt8(ascii: "\\") else { throw Malformed() }
                position += 1
                guard peek() == UInt8(ascii: "u") else { throw Malformed() }
                position += 1
                let low = try hex4()
                guard (0xDC00..<0xE000).contains(low),
                      let scalar = Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
                else { throw Malformed() }
                return scalar
            }
            guard let scalar = Unicode.Scalar(unit) else { throw Malformed() }
            return scalar
        default:
            throw Malformed()
        }
    }

    private mutating func hex4() throws(Malformed) -> UInt32 {
        guard bytes.count - position >= 4 else { throw Malformed() }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a")) + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A")) + 10
            default: throw Malformed()
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }

    private func validUTF8(_ slice: UnsafeRawBufferPointer) throws(Malformed) -> String {
        guard let text = String(validating: slice, as: UTF8.self) else { throw Malformed() }
        return text
    }

    private mutating func literal(_ word: StaticString) throws(Malformed) {
        let count = word.utf8CodeUnitCount
        guard bytes.count - position >= count else { throw Malformed() }
        for index in 0..<count where bytes[position + index] != word.utf8Start[index] { throw Malformed() }
        position += count
    }

    private mutating func expect(_ byte: UInt8) throws(Malformed) {
        guard peek() == byte else { throw Malformed() }
        position += 1
    }

    private mutating func skipWhitespace() {
        while let byte = peek(), byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { position += 1 }
    }

    private func peek() -> UInt8? {
        position < bytes.count ? bytes[position] : nil
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
