// SPDX-License-Identifier: Apache-2.0

/// A JSON value, as App Store signed payloads and API answers carry it.
///
/// Read by ``JSON/parse(_:maximumDepth:)``, a strict RFC 8259 parser that refuses duplicate
/// member names (a payload with two `bundleId` members means two readers may see two different
/// values: JWS libraries disagree on which one wins), and written by ``JSON/serialized(sortedKeys:)``.
/// Integers without a fraction or exponent keep their exact value (`Int64`): App Store dates are
/// milliseconds and ids can exceed a double's 53 bits.
public enum JSON: Sendable, Hashable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    /// The member `name` of an object, or nil (also for values that are not objects).
    public subscript(name: String) -> JSON? {
        if case .object(let members) = self { return members[name] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// An integer, or a double with an integral value in Int64's range (some encoders write `1.0`).
    public var integerValue: Int64? {
        switch self {
        case .integer(let value): return value
        case .double(let value) where value.rounded() == value && abs(value) < 9.2e18: return Int64(value)
        default: return nil
        }
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    public var arrayValue: [JSON]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var objectValue: [String: JSON]? {
        if case .object(let value) = self { return value }
        return nil
    }
}

/// Why bytes are not one acceptable JSON document. Never carries the input.
public struct JSONError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: String, Sendable, Hashable {
        case syntax, duplicateKey = "duplicate_key", tooDeep = "too_deep", invalidUTF8 = "invalid_utf8"
        case numberOutOfRange = "number_out_of_range"
    }

    public let reason: Reason
    /// The byte offset where parsing stopped.
    public let offset: Int

    public var description: String { "invalid JSON (\(reason.rawValue) at byte \(offset))" }
}

extension JSON {
    /// Apple's payloads nest three levels; anything much deeper is an attack on the stack.
    public static let defaultMaximumDepth = 32

    /// Parses one JSON document (surrounding whitespace allowed, nothing else).
    /// - Throws: ``JSONError`` for malformed JSON, invalid UTF-8 in strings, duplicate member
    ///   names at any level, nesting deeper than `maximumDepth`, or integers outside Int64.
    public static func parse(_ bytes: some Collection<UInt8>, maximumDepth: Int = defaultMaximumDepth) throws(JSONError) -> JSON {
        let result: Result<JSON, JSONError>? = bytes.withContiguousStorageIfAvailable { buffer in
            parse(UnsafeRawBufferPointer(buffer), maximumDepth: maximumDepth)
        }
        if let result { return try result.get() }
        let copy = Array(bytes)
        return try copy.withUnsafeBytes { parse($0, maximumDepth: maximumDepth) }.get()
    }

    static func parse(_ bytes: UnsafeRawBufferPointer, maximumDepth: Int) -> Result<JSON, JSONError> {
        var parser = JSONParser(bytes: bytes, maximumDepth: maximumDepth)
        do throws(JSONError) {
            parser.skipWhitespace()
            let value = try parser.value(depth: 0)
            parser.skipWhitespace()
            guard parser.position == bytes.count else { throw parser.error(.syntax) }
            return .success(value)
        } catch {
            return .failure(error)
        }
    }
}

/// One pass over the bytes; strings without escapes are decoded straight from the buffer.
private struct JSONParser {
    let bytes: UnsafeRawBufferPointer
    let maximumDepth: Int
    var position = 0

    init(bytes: UnsafeRawBufferPointer, maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    func error(_ reason: JSONError.Reason) -> JSONError { JSONError(reason: reason, offset: position) }

    @inline(__always) func peek() -> UInt8? { position < bytes.count ? bytes[position] : nil }

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

    mutating func value(depth: Int) throws(JSONError) -> JSON {
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

    mutating func object(depth: Int) throws(JSONError) -> JSON {
        guard depth <= maximumDepth else { throw error(.tooDeep) }
        position += 1
        var members: [String: JSON] = [:]
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
            let value = try value(depth: depth)
            guard members.updateValue(value, forKey: name) == nil else {
                throw JSONError(reason: .duplicateKey, offset: start)
            }
            skipWhitespace()
            guard let next = peek() else { throw error(.syntax) }
            position += 1
            if next == UInt8(ascii: "}") { return .object(members) }
            guard next == UInt8(ascii: ",") else { position -= 1; throw error(.syntax) }
        }
    }

    mutating func array(depth: Int) throws(JSONError) -> JSON {
        guard depth <= maximumDepth else { throw error(.tooDeep) }
        position += 1
        var elements: [JSON] = []
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
            position += 1
            if next == UInt8(ascii: "]") { return .array(elements) }
            guard next == UInt8(ascii: ",") else { position -= 1; throw error(.syntax) }
        }
    }

    mutating func string() throws(JSONError) -> String {
        position += 1  // the opening quote
        let start = position
        // Fast path: no escapes, so the bytes between the quotes are the string.
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeRawBufferPointer(rebasing: bytes[start..<position])
                guard let text = String(validating: slice, as: UTF8.self) else { throw error(.invalidUTF8) }
                position += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw error(.syntax) }
            position += 1
        }
        guard position < bytes.count else { throw error(.syntax) }
        var scalars: [UInt8] = Array(UnsafeRawBufferPointer(rebasing: bytes[start..<position]))
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: scalars, as: UTF8.self) else { throw error(.invalidUTF8) }
                return text
            case UInt8(ascii: "\\"):
                guard let escaped = peek() else { throw error(.syntax) }
                position += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(escaped)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"):
                    var value = try hex4()
                    if (0xD800...0xDBFF).contains(value) {
                        // A high surrogate must be followed by an escaped low surrogate.
                        guard bytes.count - position >= 6, bytes[position] == UInt8(ascii: "\\"),
                              bytes[position + 1] == UInt8(ascii: "u") else { throw error(.invalidUTF8) }
                        position += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw error(.invalidUTF8) }
                        value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(value) {
                        throw error(.invalidUTF8)
                    }
                    guard let scalar = Unicode.Scalar(value) else { throw error(.invalidUTF8) }
                    scalars.append(contentsOf: UTF8.encode(scalar)!)
                default: throw error(.syntax)
                }
            default:
                guard byte >= 0x20 else { throw error(.syntax) }
                scalars.append(byte)
            }
        }
        throw error(.syntax)
    }

    mutating func hex4() throws(JSONError) -> UInt32 {
        guard bytes.count - position >= 4 else { throw error(.syntax) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error(.syntax)
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }

    mutating func number() throws(JSONError) -> JSON {
        let start = position
        if peek() == UInt8(ascii: "-") { position += 1 }
        guard let first = peek(), first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9") else { throw error(.syntax) }
        if first == UInt8(ascii: "0") {
            position += 1
        } else {
            while let byte = peek(), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { position += 1 }
        }
        var integral = true
        if peek() == UInt8(ascii: ".") {
            integral = false
            position += 1
            guard let byte = peek(), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { throw error(.syntax) }
            while let byte = peek(), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { position += 1 }
        }
        if let byte = peek(), byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
            integral = false
            position += 1
            if let sign = peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { position += 1 }
            guard let byte = peek(), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { throw error(.syntax) }
            while let byte = peek(), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { position += 1 }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        if integral {
            guard let value = Int64(text) else { throw JSONError(reason: .numberOutOfRange, offset: start) }
            return .integer(value)
        }
        guard let value = Double(text), value.isFinite else { throw JSONError(reason: .numberOutOfRange, offset: start) }
        return .double(value)
    }
}

extension JSON {
    /// Compact JSON text. With `sortedKeys` (the default) the output is deterministic.
    public func serialized(sortedKeys: Bool = true) -> String {
        var output = ""
        write(to: &output, sortedKeys: sortedKeys)
        return output
    }

    /// UTF-8 bytes of ``serialized(sortedKeys:)``.
    public func bytes(sortedKeys: Bool = true) -> [UInt8] { Array(serialized(sortedKeys: sortedKeys).utf8) }

    private func write(to output: inout String, sortedKeys: Bool) {
        switch self {
        case .null: output += "null"
        case .bool(let value): output += value ? "true" : "false"
        case .integer(let value): output += String(value)
        case .double(let value):
            output += value.rounded() == value && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"
        case .string(let value): Self.writeString(value, to: &output)
        case .array(let elements):
            output += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { output += "," }
                element.write(to: &output, sortedKeys: sortedKeys)
            }
            output += "]"
        case .object(let members):
            output += "{"
            let keys = sortedKeys ? members.keys.sorted() : Array(members.keys)
            for (index, key) in keys.enumerated() {
                if index > 0 { output += "," }
                Self.writeString(key, to: &output)
                output += ":"
                members[key]!.write(to: &output, sortedKeys: sortedKeys)
            }
            output += "}"
        }
    }

    private static func writeString(_ value: String, to output: inout String) {
        output += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    output.unicodeScalars.append(scalar)
                }
            }
        }
        output += "\""
    }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(nilLiteral: ()) { self = .null }
}
