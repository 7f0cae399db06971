// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Where the PostgreSQL store connects and how: a libpq connection URI (or `key=value` string)
/// plus the store's own defaults, which the URI may override.
///
/// The password may be in the URI, in `PGPASSWORD` or in a passfile (libpq reads both itself).
/// Nothing here ever prints the URI: `redacted` is the form for logs and messages.
public struct PostgresSettings: Sendable, Hashable {
    /// `postgres://user:password@host:port/dbname?sslmode=…`, as libpq understands it.
    public var url: String
    /// Seconds libpq waits for a connection (`connect_timeout`) unless the URI says otherwise.
    public var connectTimeout: Int
    /// How long one exchange with the server may take before the connection is given up as broken.
    public var statementTimeout: Duration
    /// How long applying the migrations at `open` may take, waiting for another instance that is
    /// applying them included: a migration that rebuilds a large table takes far longer than any
    /// one exchange of a running store should.
    public var migrationTimeout: Duration

    public init(url: String, connectTimeout: Int = 5, statementTimeout: Duration = .seconds(30),
                migrationTimeout: Duration = .seconds(600)) {
        self.url = url
        self.connectTimeout = connectTimeout
        self.statementTimeout = statementTimeout
        self.migrationTimeout = migrationTimeout
    }

    /// The URI with any password replaced by `***`, for log lines and error messages.
    public var redacted: String { Self.redact(url) }

    package static func redact(_ url: String) -> String {
        var text = url
        // postgres://user:password@host → postgres://user:***@host
        if let scheme = text.range(of: "://") {
            let authorityStart = scheme.upperBound
            let authorityEnd = text[authorityStart...].firstIndex(where: { $0 == "/" || $0 == "?" }) ?? text.endIndex
            if let at = text[authorityStart..<authorityEnd].lastIndex(of: "@"),
                let colon = text[authorityStart..<at].firstIndex(of: ":")
            {
                text.replaceSubrange(text.index(after: colon)..<at, with: "***")
            }
        }
        // …?password=secret&… and key=value strings: password=secret
        var result = ""
        var rest = Substring(text)
        while let range = rest.range(of: "password=") {
            let before = rest[..<range.lowerBound]
            let isKey = before.isEmpty || before.last == "?" || before.last == "&" || before.last == " "
            result += rest[..<range.upperBound]
            rest = rest[range.upperBound...]
            if isKey {
                let end = rest.firstIndex(where: { $0 == "&" || $0 == " " }) ?? rest.endIndex
                result += "***"
                rest = rest[end...]
            }
        }
        return result + rest
    }
}
