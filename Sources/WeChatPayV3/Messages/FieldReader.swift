// SPDX-License-Identifier: Apache-2.0
import JSON

/// Typed reads of one JSON object's members, refusing what the protocol does not allow; errors
/// name the member (its protocol name, never its value).
struct FieldReader {
    let value: JSONValue
    /// The member path so far, for nested objects (`amount.total`).
    let prefix: String

    init(_ value: JSONValue, prefix: String = "") {
        self.value = value
        self.prefix = prefix
    }

    private func name(_ key: String) -> String { prefix.isEmpty ? key : prefix + "." + key }

    func string(_ key: String, maxLength: Int = 256) throws(WeChatPayV3Error) -> String {
        guard let text = try optionalString(key, maxLength: maxLength) else { throw .missing(name(key)) }
        return text
    }

    /// An absent member or null is nil; an empty string counts as absent too.
    func optionalString(_ key: String, maxLength: Int = 256) throws(WeChatPayV3Error) -> String? {
        switch value[key] {
        case nil, .null?: return nil
        case .string(let text)?:
            guard text.unicodeScalars.count <= maxLength else { throw .invalid(name(key)) }
            return text.isEmpty ? nil : text
        default: throw .invalid(name(key))
        }
    }

    func int(_ key: String, in range: ClosedRange<Int> = 0...Int(Int32.max)) throws(WeChatPayV3Error) -> Int {
        guard let number = try optionalInt(key, in: range) else { throw .missing(name(key)) }
        return number
    }

    func optionalInt(_ key: String, in range: ClosedRange<Int> = 0...Int(Int32.max)) throws(WeChatPayV3Error) -> Int? {
        switch value[key] {
        case nil, .null?: return nil
        case .int(let number)?:
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
        switch value[key] {
        case nil, .null?: return nil
        case .object?: return FieldReader(value[key]!, prefix: name(key))
        default: throw .invalid(name(key))
        }
    }

    /// A member whose value is one of `Value`'s raw values.
    func enumeration<Value: RawRepresentable>(_ key: String, _ type: Value.Type) throws(WeChatPayV3Error) -> Value
        where Value.RawValue == String {
        guard let value = Value(rawValue: try string(key, maxLength: 64)) else { throw .invalid(name(key)) }
        return value
    }

    /// Parses a whole body that must be one JSON object (the strict reader: duplicates, bad UTF-8,
    /// deep nesting refused).
    static func document(_ body: [UInt8]) throws(WeChatPayV3Error) -> FieldReader {
        guard body.count <= 1 << 20, let value = try? JSONValue.parse(body, maximumDepth: 8),
              case .object = value else { throw WeChatPayV3Error(.malformedDocument) }
        return FieldReader(value)
    }
}
