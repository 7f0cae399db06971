// SPDX-License-Identifier: Apache-2.0

/// A JSON value with its kind kept, so a reader can tell 100 from 100.5, "100" and true — which
/// Foundation's untyped `JSONSerialization` blurs on Linux (booleans are NSNumbers there).
///
/// Read by ``parse(_:maximumDepth:)`` and ``parseObject(_:maximumDepth:)`` (JSONReader.swift),
/// written by ``serialized(sortedKeys:)`` and ``JSONObjectWriter`` (JSONWriter.swift). A number
/// that is an integer exactly (`100`, `-0`, `100.0`, `1e2`) is `.int` with its exact value: App
/// Store dates are milliseconds and ids can exceed a double's 53 bits; anything else is `.double`.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The member `name` of an object, or nil (also for values that are not objects).
    public subscript(name: String) -> JSONValue? {
        if case .object(let members) = self { return members[name] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var intValue: Int? {
        if case .int(let value) = self { return value }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var objectValue: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(nilLiteral: ()) { self = .null }
}
