// SPDX-License-Identifier: Apache-2.0

/// The process environment as the configuration reads it: a value is trimmed, and a blank one
/// counts as unset.
public struct Environment: Sendable {
    public var values: [String: String]

    public init(_ values: [String: String]) {
        self.values = values
    }

    /// The value of `name`, or nil when unset or blank.
    public func get(_ name: String) -> String? {
        guard let value = values[name]?.trimmingWhitespace(), !value.isEmpty else { return nil }
        return value
    }

    /// The names of the variables that start with one of `prefixes` and are set (even blank), sorted.
    public func names(withPrefixes prefixes: [String]) -> [String] {
        values.keys.filter { name in prefixes.contains { name.hasPrefix($0) } }.sorted()
    }
}

extension String {
    public func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
