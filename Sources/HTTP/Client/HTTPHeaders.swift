// SPDX-License-Identifier: Apache-2.0

/// An ordered list of HTTP header fields. Names compare case-insensitively; repeated names are kept.
///
/// ```swift
/// var headers = HTTPHeaders()
/// headers.add(name: "Content-Type", value: "text/xml; charset=utf-8")
/// headers.first(name: "content-type")   // "text/xml; charset=utf-8"
/// ```
public struct HTTPHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    /// One header line.
    public struct Field: Sendable, Hashable {
        /// The field name as given; compare with `lowercased()`.
        public var name: String
        /// The field value, without surrounding whitespace.
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    private var fields: [Field]

    /// Creates headers from `(name, value)` pairs, in order.
    public init(_ pairs: [(String, String)] = []) {
        fields = pairs.map { Field(name: $0.0, value: $0.1) }
    }

    /// `["Content-Type": "text/xml"]`; the order of the literal is kept.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// Appends a field, keeping any earlier field with the same name.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Replaces every field named `name` (any case) with one field.
    public mutating func replaceOrAdd(name: String, value: String) {
        fields.removeAll { $0.name.lowercased() == name.lowercased() }
        fields.append(Field(name: name, value: value))
    }

    /// The values of every field named `name` (any case), in order.
    public subscript(name: String) -> [String] {
        let wanted = name.lowercased()
        return fields.filter { $0.name.lowercased() == wanted }.map(\.value)
    }

    /// The value of the first field named `name` (any case).
    public func first(name: String) -> String? {
        let wanted = name.lowercased()
        return fields.first { $0.name.lowercased() == wanted }?.value
    }

    /// Whether some field is named `name` (any case).
    public func contains(name: String) -> Bool { first(name: name) != nil }

    /// The number of fields, repeats included.
    public var count: Int { fields.count }

    /// The fields in order.
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }
}
