// SPDX-License-Identifier: Apache-2.0
import Storage

extension GatewayConfiguration {
    /// The variables of the order store.
    public static let databaseVariables = ["GATEWAY_DATABASE", "GATEWAY_DATABASE_POOL"]

    /// `GATEWAY_DATABASE`: `sqlite:PATH` (default `sqlite:data/gateway.sqlite`), or a libpq URI
    /// `postgres://user:password@host:port/dbname?sslmode=…` (also `postgresql://`; the password may
    /// come from `PGPASSWORD` or a passfile instead). `GATEWAY_DATABASE_POOL`: connections per
    /// instance to PostgreSQL, 1–256 (default 8); set with SQLite, it is refused rather than ignored.
    static func readDatabase(_ environment: Environment) throws(ConfigurationError) -> Database {
        let database = try environment.get(
            "GATEWAY_DATABASE", default: Database.sqlite(path: "data/gateway.sqlite"),
            expecting: "sqlite:PATH or postgres://user@host:port/dbname", parseDatabase)
        let pool = try environment.get("GATEWAY_DATABASE_POOL", default: Int?.none,
                                       expecting: "connections per instance, from 1 to 256") { text in
            guard let value = Int(text), (1...256).contains(value) else { return nil }
            return value
        }
        switch database {
        case .sqlite:
            if pool != nil {
                throw ConfigurationError(variable: "GATEWAY_DATABASE_POOL",
                                         expected: "to be unset with SQLite (it sizes the PostgreSQL pool)")
            }
            return database
        case .postgres(let settings, _):
            return .postgres(settings, poolSize: pool ?? 8)
        }
    }

    static func parseDatabase(_ text: String) -> Database? {
        if text.hasPrefix("sqlite:") {
            let path = String(text.dropFirst("sqlite:".count))
            return path.isEmpty ? nil : .sqlite(path: path)
        }
        for scheme in ["postgres://", "postgresql://"] where text.hasPrefix(scheme) {
            // libpq checks the rest when it connects; an empty authority and path is a mistake.
            guard text.count > scheme.count else { return nil }
            return .postgres(PostgresSettings(url: text), poolSize: 8)
        }
        return nil
    }

    /// The database for log lines and messages: a path, or the URI without its password.
    public var databaseDescription: String {
        switch database {
        case .sqlite(let path): "sqlite:" + path
        case .postgres(let settings, _): settings.redacted
        }
    }
}
