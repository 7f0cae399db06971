// SPDX-License-Identifier: Apache-2.0

/// A JSON value with its kind kept, so validation can tell 100 from 100.5, "100" and true —
/// which Foundation's untyped JSONSerialization blurs on Linux (booleans are NSNumbers there).
/// Request bodies, app tokens and the catalog file are read by `JSONObjectReader`; the
/// `Decodable` conformance, which decoded bodies before, is the reference its tests compare against.
enum JSONValue: Decodable, Hashable, Sendable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let values = try? container.decode([JSONValue].self) {
            self = .array(values)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }
}

extension JSONValue {
    /// The string, when this is one.
    var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }
}
