// SPDX-License-Identifier: Apache-2.0
import Foundation

extension GatewayConfiguration {
    /// The support console (README, "The support console"): on when `GATEWAY_CONSOLE_USERS` names
    /// a user file (demo mode: always, with a demo user), else `/console/` is 404.
    public struct Console: Sendable, Hashable {
        /// GATEWAY_CONSOLE_USERS: the user file `wxpay-gateway console-user` edits. In demo mode,
        /// when unset, a file beside the SQLite database (`consoleUsersPath` says which).
        public var usersPath: String?
        /// GATEWAY_CONSOLE_SECURE_COOKIE: mark the session cookie `Secure` (behind a TLS-terminating proxy).
        public var secureCookie = false
    }

    static let consoleVariables: [ConfigurationVariable] = [
        .optional("GATEWAY_CONSOLE_USERS", \.console.usersPath,
                  expecting: "the path of the console's user file (made by `wxpay-gateway console-user add`)",
                  parse: ConfigurationVariable.text),
        ConfigurationVariable("GATEWAY_CONSOLE_SECURE_COOKIE", \.console.secureCookie, expecting: "on or off",
                              parse: ConfigurationVariable.flag),
    ]

    /// The user file the console reads, or nil when the console is off: the configured one, or in
    /// demo mode `<database>.console-users` beside the SQLite database
    /// (`data/gateway.sqlite.console-users` by default; on PostgreSQL, `console-users` in the working
    /// directory). Named after the database, so two demo gateways whose databases share a directory
    /// never share (and rewrite) one another's demo password.
    public var consoleUsersPath: String? {
        if let path = console.usersPath { return path }
        guard demo else { return nil }
        switch database {
        case .sqlite(let path):
            return path + ".console-users"
        case .postgres:
            return "console-users"
        }
    }

    /// Where demo mode keeps how far its clock was moved (`clock/advance`), so a restart carries on
    /// from the same moment instead of going back to the wall clock under a database whose dates
    /// were written ahead of it: `<database>.demo-clock` beside the SQLite database
    /// (`demo-clock` in the working directory on PostgreSQL). Nil outside demo mode.
    public var demoClockPath: String? {
        guard demo else { return nil }
        switch database {
        case .sqlite(let path): return path + ".demo-clock"
        case .postgres: return "demo-clock"
        }
    }

    /// Outside demo mode the file must exist and parse at start (demo mode writes its own demo
    /// user into it, so it may not exist yet): a console whose accounts cannot be read is refused,
    /// never started empty by mistake.
    static func consoleChecks(_ configuration: GatewayConfiguration, _ environment: Environment) -> [ConfigurationProblem] {
        guard !configuration.demo, let path = configuration.console.usersPath else { return [] }
        do {
            _ = try ConsoleUserFile.read(path: path)
            return []
        } catch {
            return [ConfigurationProblem("GATEWAY_CONSOLE_USERS", .malformed, expected: "a readable console user file (\(error))")]
        }
    }
}
