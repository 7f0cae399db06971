// SPDX-License-Identifier: Apache-2.0

/// Why bytes are not one acceptable JSON document. Never carries the input (a body, a token or a
/// signed payload may hold secrets): only the rule broken and the byte offset where it was seen.
public struct JSONError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: String, Sendable, Hashable {
        case syntax
        /// One object names a member twice. Reported only for a document otherwise well-formed.
        case duplicateKey = "duplicate_key"
        case tooDeep = "too_deep"
        /// A byte in a string that is not UTF-8.
        case invalidUTF8 = "invalid_utf8"
        /// An escaped surrogate without its other half (`"\ud800"`, `"\udc00"`): no character.
        case loneSurrogate = "lone_surrogate"
        /// An integer outside `Int`, or a number too large for a double (`1e400`).
        case numberOutOfRange = "number_out_of_range"
        /// ``JSONValue/parseObject(_:maximumDepth:)`` was given a document that is not an object.
        case notAnObject = "not_an_object"
    }

    public let reason: Reason
    /// The byte offset where reading stopped; for invalid UTF-8, the string's opening quote, and
    /// for a lone surrogate, its escape's backslash.
    public let offset: Int
    /// For a number out of range, the name of the object member it was the value of (the innermost
    /// one), so a request's answer can name its field; nil elsewhere. Never part of `description`.
    public internal(set) var member: String?

    public init(reason: Reason, offset: Int, member: String? = nil) {
        self.reason = reason
        self.offset = offset
        self.member = member
    }

    public var description: String { "invalid JSON (\(reason.rawValue) at byte \(offset))" }
}

/// The one JSON reader: strict RFC 8259, for request bodies, app tokens, the catalog file and App
/// Store signed payloads and API answers alike. Where lax parsers (and parsers among themselves)
/// disagree, the document is refused rather than resolved, because a second reader — a proxy, a
/// log, a JWS library, WeChat — may resolve it the other way:
/// - a member name given twice in one object, at any depth (`{"amount":990,…,"amount":1}`);
/// - invalid UTF-8, an escaped lone surrogate, a raw control character in a string;
/// - an integer outside `Int` (it would silently lose digits as a double), a number beyond a
///   double (`1e400`);
/// - nesting deeper than `maximumDepth` arrays and objects (the reader recurses);
/// - a byte order mark, a trailing comma, a leading zero, single quotes, trailing bytes.
extension JSONValue {
    /// How a number with a fraction or an exponent that happens to be whole (`100.0`, `1e2`) is read.
    public enum Numbers: Sendable {
        /// As `.int`, the way JSONDecoder and Apple's encoders see it (App Store payloads, the catalog).
        case exactIntegers
        /// As `.double`: only digits make an integer. For request bodies, whose integers (fen,
        /// seconds) are documented as integers, so `1.0` and `1e3` are refused like `1.5`.
        case integersAsWritten
    }

    /// Apple's payloads nest three levels and the gateway's inputs two; much deeper is an attack
    /// on the stack.
    public static let defaultMaximumDepth = 32

    /// Reads one JSON document (surrounding whitespace allowed, nothing else).
    public static func parse(_ bytes: some Collection<UInt8>, maximumDepth: Int = defaultMaximumDepth,
                             numbers: Numbers = .exactIntegers) throws(JSONError) -> JSONValue
    {
        try read(bytes, maximumDepth: maximumDepth, objectOnly: false, numbers: numbers)
    }

    /// The members of a document that must be one JSON object (a request body, a JWT segment, the
    /// catalog). Anything else is refused as ``JSONError/Reason/notAnObject`` before it is read.
    public static func parseObject(_ bytes: some Collection<UInt8>, maximumDepth: Int = defaultMaximumDepth,
                                   numbers: Numbers = .exactIntegers) throws(JSONError) -> [String: JSONValue]
    {
        guard case .object(let members) = try read(bytes, maximumDepth: maximumDepth, objectOnly: true, numbers: numbers)
        else {
            throw JSONError(reason: .notAnObject, offset: 0)
        }
        return members
    }

    private static func read(_ bytes: some Collection<UInt8>, maximumDepth: Int, objectOnly: Bool, numbers: Numbers)
        throws(JSONError) -> JSONValue
    {
        let result = bytes.withContiguousStorageIfAvailable { buffer in
            read(UnsafeRawBufferPointer(buffer), maximumDepth: maximumDepth, objectOnly: objectOnly, numbers: numbers)
        }
        if let result { return try result.get() }
        return try Array(bytes).withUnsafeBytes {
            read($0, maximumDepth: maximumDepth, objectOnly: objectOnly, numbers: numbers)
        }.get()
    }

    private static func read(_ bytes: UnsafeRawBufferPointer, maximumDepth: Int, objectOnly: Bool, numbers: Numbers)
        -> Result<JSONValue, JSONError>
    {
        JSONReader.document(bytes, maximumDepth: maximumDepth, numbers: numbers, objectOnly: objectOnly) {
            (reader: inout JSONReader) throws(JSONError) in try reader.value(depth: 0)
        }
    }
}

/// One pass over the bytes; strings without escapes and short integers are decoded straight from
/// the buffer, with no intermediate copy. `JSONMembers.swift` reads objects by a shape with it.
struct JSONReader {
    let bytes: UnsafeRawBufferPointer
    let maximumDepth: Int
    let numbers: JSONValue.Numbers
    var position = 0
    /// Where the first repeated member name starts; the document is refused once read to its end.
    var duplicateOffset: Int?

    init(bytes: UnsafeRawBufferPointer, maximumDepth: Int, numbers: JSONValue.Numbers) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
        self.numbers = numbers
    }

    func error(_ reason: JSONError.Reason) -> JSONError { JSONError(reason: reason, offset: position) }

    /// One whole document read by `body` (a value, or an object by a shape): whitespace around it
    /// and nothing else, an object at the top when `objectOnly`, and a well-formed document that
    /// repeats a name refused as that, so callers can say so.
    static func document<Value>(_ bytes: UnsafeRawBufferPointer, maximumDepth: Int, numbers: JSONValue.Numbers,
                                objectOnly: Bool, _ body: (inout JSONReader) throws(JSONError) -> Value)
        -> Result<Value, JSONError>
    {
        var reader = JSONReader(bytes: bytes, maximumDepth: maximumDepth, numbers: numbers)
        do throws(JSONError) {
            reader.skipWhitespace()
            if objectOnly, reader.peek() != UInt8(ascii: "{") { throw reader.error(.notAnObject) }
            let value = try body(&reader)
            reader.skipWhitespace()
            guard reader.position == bytes.count else { throw reader.error(.syntax) }
            if let offset = reader.duplicateOffset { throw JSONError(reason: .duplicateKey, offset: offset) }
            return .success(value)
        } catch {
            return .failure(error)
        }
    }

    @inline(__always) func peek() -> UInt8? { position < bytes.count ? bytes[position] : nil }

    @inline(__always) static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    mutating func expect(_ byte: UInt8) throws(JSONError) {
        guard peek() == byte else { throw error(.syntax) }
        position += 1
    }

    mutating func literal(_ text: StaticString) throws(JSONError) {
        let count = text.utf8CodeUnitCount
        guard bytes.count - position >= count else { throw error(.syntax) }
        for index in 0..<count where bytes[position + index] != text.utf8Start[index] { throw error(.syntax) }
        position += count
    }

    /// A value; `depth` counts the arrays and objects around it.
    mutating func value(depth: Int) throws(JSONError) -> JSONValue {
        guard let byte = peek() else { throw error(.syntax) }
        switch byte {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw error(.syntax)
        }
    }

    mutating func object(depth: Int) throws(JSONError) -> JSONValue {
        guard depth <= maximumDepth else { throw error(.tooDeep) }
        position += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            position += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard peek() == UInt8(ascii: "\"") else { throw error(.syntax) }
            let start = position
            let name = try string()
            skipWhitespace()
            try expect(UInt8(ascii: ":"))
            skipWhitespace()
            let value: JSONValue
            do {
                value = try self.value(depth: depth)
            } catch {
                var located = error
                if located.reason == .numberOutOfRange, located.member == nil { located.member = name }
                throw located
            }
            if members.updateValue(value, forKey: name) != nil, duplicateOffset == nil { duplicateOffset = start }
            skipWhitespace()
            guard let next = peek() else { throw error(.syntax) }
            if next == UInt8(ascii: "}") {
                position += 1
                return .object(members)
            }
            guard next == UInt8(ascii: ",") else { throw error(.syntax) }
            position += 1
        }
    }

    mutating func array(depth: Int) throws(JSONError) -> JSONValue {
        guard depth <= maximumDepth else { throw error(.tooDeep) }
        position += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if peek() == UInt8(ascii: "]") {
            position += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try value(depth: depth))
            skipWhitespace()
            guard let next = peek() else { throw error(.syntax) }
            if next == UInt8(ascii: "]") {
                position += 1
                return .array(elements)
            }
            guard next == UInt8(ascii: ",") else { throw error(.syntax) }
            position += 1
        }
    }

    /// A string, at its opening quote.
    mutating func string() throws(JSONError) -> String {
        position += 1
        let start = position
        // The common case, no escapes: the bytes between the quotes are the string. ASCII needs no
        // validation (and `String(validating:)`, generic, costs a metadata lookup per call).
        var bits: UInt8 = 0
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeRawBufferPointer(rebasing: bytes[start..<position])
                let text: String
                if bits < 0x80 {
                    text = String(decoding: slice.assumingMemoryBound(to: UInt8.self), as: UTF8.self)
                } else {
                    guard let valid = String(validating: slice, as: UTF8.self) else {
                        throw JSONError(reason: .invalidUTF8, offset: start - 1)
                    }
                    text = valid
                }
                position += 1
                return text
            }
            bits |= byte
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw error(.syntax) }
            position += 1
        }
        guard position < bytes.count else { throw error(.syntax) }
        // Escapes: the UTF-8 of the whole string, validated once at the closing quote (escapes
        // only ever add valid UTF-8; the raw bytes between them may not be).
        var utf8 = Array(UnsafeRawBufferPointer(rebasing: bytes[start..<position]))
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: utf8, as: UTF8.self) else {
                    throw JSONError(reason: .invalidUTF8, offset: start - 1)
                }
                return text
            case UInt8(ascii: "\\"):
                try escape(into: &utf8)
            default:
                guard byte >= 0x20 else { throw error(.syntax) }
                utf8.append(byte)
            }
        }
        throw error(.syntax)
    }

    /// The escape after a backslash (already consumed), as UTF-8.
    mutating func escape(into utf8: inout [UInt8]) throws(JSONError) {
        let backslash = position - 1
        guard let escaped = peek() else { throw error(.syntax) }
        position += 1
        switch escaped {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escaped)
        case UInt8(ascii: "b"): utf8.append(0x08)
        case UInt8(ascii: "f"): utf8.append(0x0C)
        case UInt8(ascii: "n"): utf8.append(0x0A)
        case UInt8(ascii: "r"): utf8.append(0x0D)
        case UInt8(ascii: "t"): utf8.append(0x09)
        case UInt8(ascii: "u"):
            var value = try hex4()
            if (0xD800...0xDBFF).contains(value) {
                // A high surrogate must be followed by an escaped low surrogate.
                guard bytes.count - position >= 6, bytes[position] == UInt8(ascii: "\\"),
                      bytes[position + 1] == UInt8(ascii: "u") else { throw JSONError(reason: .loneSurrogate, offset: backslash) }
                position += 2
                let low = try hex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw JSONError(reason: .loneSurrogate, offset: backslash) }
                value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
            }
            // nil for a lone low surrogate.
            guard let scalar = Unicode.Scalar(value), let encoded = UTF8.encode(scalar) else {
                throw JSONError(reason: .loneSurrogate, offset: backslash)
            }
            utf8.append(contentsOf: encoded)
        default:
            throw error(.syntax)
        }
    }

    mutating func hex4() throws(JSONError) -> UInt32 {
        guard bytes.count - position >= 4 else { throw error(.syntax) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a")) + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A")) + 10
            default: throw error(.syntax)
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }

    /// A number: `.int` when it is an integer exactly (also `100.0` and `1e2`, as JSONDecoder and
    /// Apple's encoders see them, unless `numbers` is `.integersAsWritten`), otherwise a finite `.double`.
    mutating func number() throws(JSONError) -> JSONValue {
        let start = position
        let negative = peek() == UInt8(ascii: "-")
        if negative { position += 1 }
        guard let first = peek(), Self.isDigit(first) else { throw error(.syntax) }
        // Up to 18 digits always fit an Int: accumulated here, no text made.
        var magnitude = 0
        let digitsStart = position
        position += 1
        if first != UInt8(ascii: "0") {
            magnitude = Int(first - UInt8(ascii: "0"))
            while let byte = peek(), Self.isDigit(byte) {
                magnitude = magnitude &* 10 &+ Int(byte - UInt8(ascii: "0"))
                position += 1
            }
        }
        let digits = position - digitsStart
        var integral = true
        if peek() == UInt8(ascii: ".") {
            integral = false
            position += 1
            guard let byte = peek(), Self.isDigit(byte) else { throw error(.syntax) }
            while let byte = peek(), Self.isDigit(byte) { position += 1 }
        }
        if let byte = peek(), byte | 0x20 == UInt8(ascii: "e") {
            integral = false
            position += 1
            if let sign = peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { position += 1 }
            guard let byte = peek(), Self.isDigit(byte) else { throw error(.syntax) }
            while let byte = peek(), Self.isDigit(byte) { position += 1 }
        }
        if integral, digits <= 18 { return .int(negative ? -magnitude : magnitude) }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        if integral {
            guard let value = Int(text) else { throw JSONError(reason: .numberOutOfRange, offset: start) }
            return .int(value)
        }
        guard let value = Double(text), value.isFinite else { throw JSONError(reason: .numberOutOfRange, offset: start) }
        if numbers == .exactIntegers, value == value.rounded(), value >= -9.223372036854775e18, value < 9.223372036854775e18 {
            return .int(Int(value))
        }
        return .double(value)
    }
}
