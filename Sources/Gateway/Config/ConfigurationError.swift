// SPDX-License-Identifier: Apache-2.0

/// One reason a start is refused: a variable missing, malformed, or in conflict with the mode or
/// another variable. Names the variable and what it should be, never its value (it may be a secret).
public struct ConfigurationProblem: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// A variable a production start needs is unset.
        case missing
        /// The value is not in the form `expected` describes.
        case malformed
        /// The value is well-formed but not allowed here (with demo mode, or with another variable).
        case conflict
        /// A file variable's path holds a FIFO, a device, a socket or a directory.
        case notRegularFile
    }

    public var variable: String
    public var kind: Kind
    /// What the variable should be, or why it cannot be what it is.
    public var expected: String

    public init(_ variable: String, _ kind: Kind, expected: String) {
        self.variable = variable
        self.kind = kind
        self.expected = expected
    }

    public var description: String {
        switch kind {
        case .missing: "\(variable) is not set: \(expected)"
        case .malformed: "\(variable): expected \(expected)"
        case .conflict: "\(variable): \(expected)"
        case .notRegularFile: "\(variable) is not a regular file: \(expected)"
        }
    }
}

/// Every reason the configuration was refused, found in one pass, so an operator fixes them all at
/// once instead of one per restart. The description is the message `serve` prints (one line per
/// problem, every missing required variable named in the first), and never holds a value.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var problems: [ConfigurationProblem]

    public init(_ problems: [ConfigurationProblem]) {
        self.problems = problems
    }

    /// The variables named, in the order found.
    public var variables: [String] { problems.map(\.variable) }

    /// The variables a production start needs that are unset.
    public var missing: [String] { problems.filter { $0.kind == .missing }.map(\.variable) }

    public var description: String {
        var lines: [String] = []
        let missing = missing
        if !missing.isEmpty {
            lines.append("missing required variables: \(missing.joined(separator: ", ")) "
                + "(a production start needs them all; demo mode, with --demo, needs none)")
        }
        lines += problems.filter { $0.kind != .missing }.map(\.description)
        return lines.joined(separator: "\n")
    }
}
