// SPDX-License-Identifier: Apache-2.0
import StorageCore

extension GatewayConfiguration {
    /// `GATEWAY_DATABASE`: `sqlite:PATH` (default `sqlite:data/gateway.sqlite`), or a libpq URI
    /// `postgres://user:password@host:port/dbname?sslmode=…` (also `postgresql://`; the password may
    /// come from `PGPASSWORD` or a passfile instead). `GATEWAY_DATABASE_POOL`: connections per
    /// instance to PostgreSQL, 1–256 (default 8).
    static let databaseVariables: [ConfigurationVariable] = [
        ConfigurationVariable("GATEWAY_DATABASE", \.database,
                              expecting: "sqlite:PATH or a PostgreSQL URI postgres://user@host:port/dbname",
                              parse: parseDatabase),
        ConfigurationVariable("GATEWAY_DATABASE_POOL", \.databasePoolSetting,
                              expecting: "connections per instance to PostgreSQL, from 1 to 256",
                              parse: ConfigurationVariable.integer(1...256)),
    ]

    /// Where the database is when GATEWAY_DATABASE is not set.
    public static let defaultDatabase = Database.sqlite(path: "data/gateway.sqlite")

    /// The database alone, as `backup` and `restore` read it: GATEWAY_DATABASE and nothing else, so
    /// that a run with the gateway's own environment file never fails on a setting it does not use.
    public static func database(in environment: Environment) throws(ConfigurationError) -> Database {
        guard let text = environment.get("GATEWAY_DATABASE") else { return defaultDatabase }
        guard let database = parseDatabase(text) else {
            let variable = databaseVariables.first { $0.name == "GATEWAY_DATABASE" }
            throw ConfigurationError([ConfigurationProblem("GATEWAY_DATABASE", .malformed, expected: variable?.expected ?? "")])
        }
        return database
    }

    /// The pool size as the variable sets it (and the record that it was set).
    var databasePoolSetting: Int {
        get { databasePool }
        set {
            databasePool = newValue
            databasePoolIsSet = true
        }
    }

    /// A pool size means PostgreSQL: with SQLite it would be silently ignored, so it is refused.
    static func databaseChecks(_ configuration: GatewayConfiguration, _ environment: Environment) -> [ConfigurationProblem] {
        guard configuration.databasePoolIsSet, case .sqlite = configuration.database else { return [] }
        return [ConfigurationProblem("GATEWAY_DATABASE_POOL", .conflict,
                                     expected: "only with a PostgreSQL GATEWAY_DATABASE (it sizes the connection pool)")]
    }

    static func parseDatabase(_ text: String) -> Database? {
        if text.hasPrefix("sqlite:") {
            let path = String(text.dropFirst("sqlite:".count))
            return path.isEmpty ? nil : .sqlite(path: path)
        }
        for scheme in ["postgres://", "postgresql://"] where text.hasPrefix(scheme) {
            // libpq checks the rest when it connects; a bare scheme is a mistake.
            guard text.count > scheme.count else { return nil }
            return .postgres(PostgresSettings(url: text))
        }
        return nil
    }

    /// The database for log lines and messages: a path, or the URI without its password.
    public var databaseDescription: String {
        switch database {
        case .sqlite(let path): "sqlite:" + path
        case .postgres(let settings): settings.redacted
        }
    }
}
