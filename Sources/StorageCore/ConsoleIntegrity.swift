// SPDX-License-Identifier: Apache-2.0

/// What the integrity check verifies of the console's tables and the audit log, beyond the
/// database's own checks of pages and indexes: the rules the console store and the audit log
/// promise, each as a query counting the rows that break it. The same SQL serves both stores
/// (their timestamps compare the same way: INTEGER on SQLite, timestamptz on PostgreSQL).
///
/// Failed logins and lockouts have no rule the store can check alone: the window, the
/// threshold and the lock's length are the console's, passed in with each call.
package enum ConsoleIntegrity {
    package struct Rule: Sendable {
        /// What a row that breaks it is, for the check's report (with the count in front).
        package let finding: String
        /// One row, one column: how many rows break it.
        package let violations: SQL
    }

    package static let rules: [Rule] = [
        // The console touches a session only before its absolute end (`Console.signedIn`, `touch`):
        // a session seen later was honoured past it.
        Rule(finding: "console sessions seen after their absolute expiry",
             violations: "SELECT COUNT(*) FROM console_sessions WHERE last_seen_at > expires_at"),
        // A session is created seen at its start, touched only forwards, and ends after it began.
        Rule(finding: "console sessions seen before they began or ending before they began",
             violations: "SELECT COUNT(*) FROM console_sessions WHERE last_seen_at < created_at OR expires_at <= created_at"),
        // Every entry is the console's or the JSON support API's (`NewAuditEntry.channel`).
        Rule(finding: "audit entries of a channel other than console or api",
             violations: "SELECT COUNT(*) FROM audit_log WHERE channel NOT IN ('console', 'api')"),
    ]

    /// The report line for `count` rows breaking `rule`.
    package static func line(_ count: Int, _ rule: Rule) -> String { "\(count) \(rule.finding)" }
}
