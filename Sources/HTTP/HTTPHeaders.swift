// SPDX-License-Identifier: Apache-2.0

/// HTTP header fields in the order they were received or added, for the server's requests and
/// responses and the client's alike. Names compare case-insensitively (RFC 9110 §5.1); repeated
/// names are kept, so nothing a peer sent is silently merged away.
///
/// ```swift
/// var headers: HTTPHeaders = ["Content-Type": "application/json"]
/// headers.add(name: "Cache-Control", value: "no-store")
/// headers["content-type"]              // "application/json"
/// headers.values(for: "Set-Cookie")    // every value, in order
/// ```
public struct HTTPHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    /// One header line.
    public struct Field: Sendable, Hashable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    private var fields: [Field]

    /// Empty headers.
    public init() { fields = [] }

    /// Headers from fields, in order.
    public init(_ fields: [Field]) { self.fields = fields }

    /// Headers from `(name, value)` pairs, in order.
    public init(_ pairs: [(String, String)]) {
        fields = pairs.map { Field(name: $0.0, value: $0.1) }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { Field(name: $0.0, value: $0.1) }
    }

    /// The number of fields, counting repeated names.
    public var count: Int { fields.count }

    public var isEmpty: Bool { fields.isEmpty }

    /// The first value for `name` (case-insensitive), or nil. Setting replaces every field of that
    /// name with one field (or removes them all when set to nil).
    public subscript(name: String) -> String? {
        get { fields.first { Self.namesMatch($0.name, name) }?.value }
        set {
            fields.removeAll { Self.namesMatch($0.name, name) }
            if let newValue { fields.append(Field(name: name, value: newValue)) }
        }
    }

    /// Every value for `name` (case-insensitive), in order.
    public func values(for name: String) -> [String] {
        fields.filter { Self.namesMatch($0.name, name) }.map(\.value)
    }

    /// Appends a field, keeping any existing field of the same name.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Whether a field named `name` is present (case-insensitive).
    public func contains(_ name: String) -> Bool {
        fields.contains { Self.namesMatch($0.name, name) }
    }

    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// ASCII case-insensitive comparison without allocating lowercased copies; header names are
    /// tokens (RFC 9110 §5.6.2), so ASCII folding is the whole rule.
    static func namesMatch(_ a: String, _ b: String) -> Bool {
        var left = a.utf8.makeIterator()
        var right = b.utf8.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil): return true
            case (let x?, let y?):
                if x != y && asciiLower(x) != asciiLower(y) { return false }
            default: return false
            }
        }
    }

    private static func asciiLower(_ byte: UInt8) -> UInt8 {
        (byte >= 0x41 && byte <= 0x5A) ? byte | 0x20 : byte
    }
}
