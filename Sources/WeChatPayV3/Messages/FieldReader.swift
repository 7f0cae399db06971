// SPDX-License-Identifier: Apache-2.0
import JSON

/// Typed reads of one JSON object's members, refusing what the protocol does not allow; errors
/// name the member (its protocol name, never its value). The object is either read whole
/// (``document(_:)``) or by a shape (``document(_:shape:)``: only the members named, for the
/// documents on the notify path); the rules are the same for both.
struct FieldReader {
    private enum Source {
        case whole([String: JSONValue])
        case shaped(JSONMembers)
    }

    private let source: Source
    /// The member path so far, for nested objects (`amount.total`).
    private(set) var prefix: String

    /// Reads `value`'s members; a value that is not an object has none.
    init(_ value: JSONValue, prefix: String = "") {
        source = .whole(value.objectValue ?? [:])
        self.prefix = prefix
    }

    init(_ members: JSONMembers, prefix: String = "") {
        source = .shaped(members)
        self.prefix = prefix
    }

    /// The same members, their errors named without the path (`ciphertext`, not `resource.ciphertext`).
    var unprefixed: FieldReader {
        var reader = self
        reader.prefix = ""
        return reader
    }

    private func name(_ key: String) -> String { prefix.isEmpty ? key : prefix + "." + key }

    /// The member `key` as read: a value, or an object read by its shape.
    private func member(_ key: String) -> JSONMember? {
        switch source {
        case .whole(let members): members[key].map(JSONMember.value)
        case .shaped(let members): members[key]
        }
    }

    /// Whether the member `key` is there (null counts as there).
    func isPresent(_ key: String) -> Bool { member(key) != nil }

    /// The member `key` when it is not an object read by a shape (nil when absent).
    func value(_ key: String) -> JSONValue? {
        switch member(key) {
        case .value(let value)?: value
        case .object(let members)?: members.objectValue
        case nil: nil
        }
    }

    func string(_ key: String, maxLength: Int = 256) throws(WeChatPayV3Error) -> String {
        guard let text = try optionalString(key, maxLength: maxLength) else { throw .missing(name(key)) }
        return text
    }

    /// An absent member or null is nil; an empty string counts as absent too.
    func optionalString(_ key: String, maxLength: Int = 256) throws(WeChatPayV3Error) -> String? {
        switch member(key) {
        case nil, .value(.null)?: return nil
        case .value(.string(let text))?:
            // UTF-8 never has fewer bytes than scalars: the count of scalars only when it could matter.
            guard text.utf8.count <= maxLength || text.unicodeScalars.count <= maxLength else { throw .invalid(name(key)) }
            return text.isEmpty ? nil : text
        default: throw .invalid(name(key))
        }
    }

    func int(_ key: String, in range: ClosedRange<Int> = 0...Int(Int32.max)) throws(WeChatPayV3Error) -> Int {
        guard let number = try optionalInt(key, in: range) else { throw .missing(name(key)) }
        return number
    }

    func optionalInt(_ key: String, in range: ClosedRange<Int> = 0...Int(Int32.max)) throws(WeChatPayV3Error) -> Int? {
        switch member(key) {
        case nil, .value(.null)?: return nil
        case .value(.int(let number))?:
            guard range.contains(number) else { throw .invalid(name(key)) }
            return number
        default: throw .invalid(name(key))
        }
    }

    func object(_ key: String) throws(WeChatPayV3Error) -> FieldReader {
        guard let reader = try optionalObject(key) else { throw .missing(name(key)) }
        return reader
    }

    func optionalObject(_ key: String) throws(WeChatPayV3Error) -> FieldReader? {
        switch member(key) {
        case nil, .value(.null)?: return nil
        case .value(.object(let members))?: return FieldReader(.object(members), prefix: name(key))
        case .object(let members)?: return FieldReader(members, prefix: name(key))
        default: throw .invalid(name(key))
        }
    }

    /// A member whose value is one of `Value`'s raw values.
    func enumeration<Value: RawRepresentable>(_ key: String, _ type: Value.Type) throws(WeChatPayV3Error) -> Value
        where Value.RawValue == String {
        guard let value = Value(rawValue: try string(key, maxLength: 64)) else { throw .invalid(name(key)) }
        return value
    }

    /// The largest body read: a notify or an answer is a few KiB; a bill answer's URL, a list of
    /// certificates, a little more.
    static let maximumDocumentBytes = 1 << 20
    /// WeChat's documents nest three levels; deeper is refused.
    static let maximumDepth = 8

    /// Parses a whole body that must be one JSON object (the strict reader: duplicates, bad UTF-8,
    /// deep nesting refused).
    static func document(_ body: [UInt8]) throws(WeChatPayV3Error) -> FieldReader {
        guard body.count <= maximumDocumentBytes,
              let members = try? JSONValue.parseObject(body, maximumDepth: maximumDepth) else {
            throw WeChatPayV3Error(.malformedDocument)
        }
        return FieldReader(.object(members))
    }

    /// The same document read by `shape`: what ``document(_:)`` refuses is refused, and only the
    /// members the shape names are kept (no tree of the rest, no `String` for names outside it).
    static func document(_ body: [UInt8], shape: JSONShape) throws(WeChatPayV3Error) -> FieldReader {
        guard body.count <= maximumDocumentBytes,
              let members = try? JSONValue.parseMembers(body, shape: shape, maximumDepth: maximumDepth) else {
            throw WeChatPayV3Error(.malformedDocument)
        }
        return FieldReader(members)
    }
}
