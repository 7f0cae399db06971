// SPDX-License-Identifier: Apache-2.0

/// Reads configuration variables, naming the variable in every error so a malformed value stops
/// start-up with a message an operator can act on.
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

    /// The value of `name` converted by `parse`, `defaultValue` when unset; a value `parse` refuses
    /// is an error naming the variable and what it expects.
    public func get<T>(_ name: String, default defaultValue: T, expecting: String,
                       _ parse: (String) -> T?) throws(ConfigurationError) -> T {
        guard let text = get(name) else { return defaultValue }
        guard let value = parse(text) else { throw ConfigurationError(variable: name, expected: expecting) }
        return value
    }

    /// A comma-separated list, blanks dropped.
    public func list(_ name: String) -> [String] {
        (get(name) ?? "").split(separator: ",").map { String($0).trimmingWhitespace() }.filter { !$0.isEmpty }
    }
}

/// A configuration variable with a value the gateway cannot use. The description names the
/// variable and what it expects, never the value (it may be a secret).
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var variable: String
    public var expected: String

    public init(variable: String, expected: String) {
        self.variable = variable
        self.expected = expected
    }

    public var description: String { "\(variable): expected \(expected)" }
}

extension String {
    func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
