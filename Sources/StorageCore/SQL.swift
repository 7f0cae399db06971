// SPDX-License-Identifier: Apache-2.0

/// SQL text that can only come from string literals in this package's stores, joined with `+`.
///
/// There is deliberately no way to build an `SQL` from a runtime `String` or by interpolation, so
/// a value can reach the database only as a bound parameter, never as SQL text.
package struct SQL: Hashable, Sendable, ExpressibleByStringLiteral {
    package let text: String

    package init(stringLiteral value: StaticString) {
        text = value.description
    }

    private init(text: String) {
        self.text = text
    }

    package static func + (lhs: SQL, rhs: SQL) -> SQL {
        SQL(text: lhs.text + rhs.text)
    }
}
