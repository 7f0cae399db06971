// SPDX-License-Identifier: Apache-2.0

/// The flat name/value fields of one WeChat Pay v2 document, in document order.
///
/// Order and unknown fields are kept because every received field, known or not, takes part in
/// the signature: mapping a notify into a fixed struct before verifying it drops fields and breaks
/// the signature (gopay #45). Names are unique; the XML decoder rejects duplicates.
///
/// ```swift
/// var fields = Fields(["appid": "wxd930ea5d5a258f4f"])
/// fields["mch_id"] = "10000100"
/// ```
public struct Fields: Sendable, Hashable {
    /// One field. `value` is the text content, without CDATA markers or escapes.
    public struct Field: Sendable, Hashable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public private(set) var elements: [Field]

    /// Creates an empty document.
    public init() { elements = [] }

    /// Creates a document from fields in the given order.
    /// - Precondition: names are unique (a programmer error otherwise, not an input error).
    public init(_ elements: [Field]) {
        self.elements = []
        self.elements.reserveCapacity(elements.count)
        for element in elements { self[element.name] = element.value }
    }

    /// Creates a document from name/value pairs in the given order.
    public init(_ pairs: KeyValuePairs<String, String>) {
        self.init(pairs.map { Field(name: $0.key, value: $0.value) })
    }

    /// Wraps fields whose names are known to be unique (the decoder has checked), without the
    /// linear search per field that `init(_:)` does.
    internal init(uncheckedElements elements: [Field]) {
        self.elements = elements
    }

    /// Appends a field whose name is known to be new. Used by the decoder, which has already
    /// checked for duplicates, to avoid a second linear search.
    @usableFromInline
    internal mutating func appendUnchecked(name: String, value: String) {
        elements.append(Field(name: name, value: value))
    }

    /// The value of `name`, or nil. Setting nil removes the field; setting a new name appends it.
    public subscript(name: String) -> String? {
        get {
            for element in elements where element.name == name { return element.value }
            return nil
        }
        set {
            if let index = elements.firstIndex(where: { $0.name == name }) {
                if let newValue { elements[index].value = newValue } else { elements.remove(at: index) }
            } else if let newValue {
                elements.append(Field(name: name, value: newValue))
            }
        }
    }

    /// The value of `name` when present and not empty. WeChat treats an empty value as absent.
    public func nonEmpty(_ name: String) -> String? {
        guard let value = self[name], !value.isEmpty else { return nil }
        return value
    }

    public var count: Int { elements.count }
    public var names: [String] { elements.map(\.name) }
}

extension Fields: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements.map { Field(name: $0.0, value: $0.1) })
    }
}

extension Fields: Sequence {
    public func makeIterator() -> IndexingIterator<[Field]> { elements.makeIterator() }
}
