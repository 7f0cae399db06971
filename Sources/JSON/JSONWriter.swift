// SPDX-License-Identifier: Apache-2.0

/// One JSON object written by hand, members in the order written — callers write keys sorted, so
/// the output is byte for byte what `JSONEncoder` with `.sortedKeys` and `.withoutEscapingSlashes`
/// gives (tests compare the two).
///
/// Why not `JSONEncoder` on the hot paths: its boxing, containers and key sorting were about 5 %
/// of a create's CPU and 8 % of a notify's in the gateway benchmark, for objects of ten fields.
/// ``JSONValue/serialized(sortedKeys:)`` writes whole values with the same string escaping.
public struct JSONObjectWriter {
    public private(set) var bytes: [UInt8]
    #if DEBUG
    private var lastKey: String?
    #endif

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
        bytes.append(UInt8(ascii: "{"))
    }

    /// Writes `"key":"value"`, or nothing when `value` is nil.
    public mutating func string(_ key: String, _ value: String?) {
        guard let value else { return }
        member(key)
        Self.quote(value, into: &bytes)
    }

    /// Writes `"key":"value"`, or `"key":null` when `value` is nil.
    public mutating func stringOrNull(_ key: String, _ value: String?) {
        member(key)
        if let value { Self.quote(value, into: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
    }

    public mutating func number(_ key: String, _ value: Int) {
        member(key)
        bytes.append(contentsOf: String(value).utf8)
    }

    /// Writes `"key":value`, or `"key":null` when `value` is nil.
    public mutating func numberOrNull(_ key: String, _ value: Int?) {
        member(key)
        bytes.append(contentsOf: (value.map { String($0) } ?? "null").utf8)
    }

    public mutating func bool(_ key: String, _ value: Bool) {
        member(key)
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    /// Writes `"key":` followed by `json`, which must be one complete JSON value.
    public mutating func raw(_ key: String, _ json: [UInt8]) {
        member(key)
        bytes.append(contentsOf: json)
    }

    /// Writes `"key":[…]` with each element one complete JSON value.
    public mutating func array(_ key: String, _ elements: [[UInt8]]) {
        member(key)
        bytes.append(UInt8(ascii: "["))
        for (index, element) in elements.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: element)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// Writes `"key":["…",…]`.
    public mutating func strings(_ key: String, _ values: [String]) {
        array(key, values.map { value in
            var quoted: [UInt8] = []
            Self.quote(value, into: &quoted)
            return quoted
        })
    }

    public consuming func finish() -> [UInt8] {
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    private mutating func member(_ key: String) {
        #if DEBUG
        // Byte order (ASCII keys), which is JSONEncoder's `.sortedKeys` order.
        assert(lastKey.map { Array($0.utf8).lexicographicallyPrecedes(Array(key.utf8)) } ?? true, "keys out of order")
        lastKey = key
        #endif
        if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
        Self.quote(key, into: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    /// RFC 8259 string escaping exactly as JSONEncoder does it: `\"`, `\\`, `\b \f \n \r \t`,
    /// other control characters as `\u00xx` (lowercase hex); everything else, `/` and non-ASCII
    /// included, as is.
    public static func quote(_ text: String, into bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            // Most values need no escaping at all: copy them in one go.
            if !utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
                bytes.append(contentsOf: utf8)
                return
            }
            for byte in utf8 {
                switch byte {
                case UInt8(ascii: "\""): bytes.append(contentsOf: #"\""#.utf8)
                case UInt8(ascii: "\\"): bytes.append(contentsOf: #"\\"#.utf8)
                case 0x08: bytes.append(contentsOf: #"\b"#.utf8)
                case 0x0C: bytes.append(contentsOf: #"\f"#.utf8)
                case 0x0A: bytes.append(contentsOf: #"\n"#.utf8)
                case 0x0D: bytes.append(contentsOf: #"\r"#.utf8)
                case 0x09: bytes.append(contentsOf: #"\t"#.utf8)
                case 0..<0x20:
                    bytes.append(contentsOf: #"\u00"#.utf8)
                    bytes.append(hexDigit(byte >> 4))
                    bytes.append(hexDigit(byte & 0xF))
                default: bytes.append(byte)
                }
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }
}

extension JSONValue {
    /// Compact JSON text. With `sortedKeys` (the default) the output is deterministic.
    public func serialized(sortedKeys: Bool = true) -> String {
        String(decoding: bytes(sortedKeys: sortedKeys), as: UTF8.self)
    }

    /// UTF-8 bytes of ``serialized(sortedKeys:)``.
    public func bytes(sortedKeys: Bool = true) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        write(to: &output, sortedKeys: sortedKeys)
        return output
    }

    private func write(to output: inout [UInt8], sortedKeys: Bool) {
        switch self {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .int(let value): output.append(contentsOf: String(value).utf8)
        case .double(let value):
            // Integral doubles as integers (`1.0` reads back as `.int(1)` anyway); JSON has no
            // NaN or infinity, so those are null rather than invalid text.
            let text = !value.isFinite ? "null"
                : value.rounded() == value && abs(value) < 1e15 ? String(Int(value)) : "\(value)"
            output.append(contentsOf: text.utf8)
        case .string(let value): JSONObjectWriter.quote(value, into: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                element.write(to: &output, sortedKeys: sortedKeys)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            let keys = sortedKeys ? members.keys.sorted() : Array(members.keys)
            for (index, key) in keys.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                JSONObjectWriter.quote(key, into: &output)
                output.append(UInt8(ascii: ":"))
                members[key]!.write(to: &output, sortedKeys: sortedKeys)
            }
            output.append(UInt8(ascii: "}"))
        }
    }
}
