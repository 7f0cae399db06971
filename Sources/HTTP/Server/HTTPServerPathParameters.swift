// SPDX-License-Identifier: Apache-2.0

/// The values a request's path gave the `{name}` segments of its route template, percent-decoded.
///
/// For the route `/v1/orders/{out_trade_no}/close` and the path `/v1/orders/T%2F1/close`,
/// `parameters["out_trade_no"] == "T/1"`.
public struct HTTPServerPathParameters: Sendable, Hashable {
    private var pairs: [(name: String, value: String)]

    /// No parameters.
    public init() { pairs = [] }

    /// Parameters from name/value pairs (for handler tests that build requests by hand).
    public init(_ values: KeyValuePairs<String, String>) {
        pairs = values.map { ($0.key, $0.value) }
    }

    mutating func append(name: String, value: String) {
        pairs.append((name, value))
    }

    /// The value of `{name}`, or nil when the route has no such parameter.
    public subscript(name: String) -> String? {
        pairs.first { $0.name == name }?.value
    }

    /// The parameter names in template order.
    public var names: [String] { pairs.map(\.name) }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.pairs.elementsEqual(rhs.pairs) { $0.name == $1.name && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        for pair in pairs {
            hasher.combine(pair.name)
            hasher.combine(pair.value)
        }
    }
}
