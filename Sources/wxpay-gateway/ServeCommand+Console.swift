// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Foundation
import Gateway
import GatewayConsole
import Observability
import StorageCore

extension ServeCommand {
    /// When a user file is configured (or in demo mode), the support console with its reload
    /// hook. Demo mode puts a `demo` admin with a fresh random password into the file, for the
    /// banner to print. Nil when the console's users could not be read or written (start-up stops).
    static func startConsole(_ configuration: GatewayConfiguration, services: GatewayServices, reloads: ReloadHooks,
                             logger: Logger) async -> (Console?, ConsoleBanner)? {
        guard let path = configuration.consoleUsersPath else {
            logger.notice("support console off: GATEWAY_CONSOLE_USERS is not set; /console/ answers 404")
            return (nil, ConsoleBanner(enabled: false, demoPassword: nil))
        }
        var demoPassword: String?
        if configuration.demo {
            let password = PasswordHash.randomPassword()
            let hash = await withCheckedContinuation { continuation in
                // scrypt: hundreds of milliseconds, off the cooperative pool.
                DispatchQueue.global().async { continuation.resume(returning: PasswordHash.make(password)) }
            }
            do {
                guard let hash else { throw ConsoleUserFileError.unwritable(path, EINVAL) }
                try ConsoleUserFile.update(path: path) { users in
                    users.removeAll { $0.name == demoConsoleUser }
                    users.append(ConsoleUser(name: demoConsoleUser, role: .admin, password: hash))
                }
            } catch {
                FileHandle.standardError.write(Data("serve: cannot write the demo console user: \(error)\n".utf8))
                return nil
            }
            demoPassword = password
        }
        let users: ConsoleUserDirectory
        do {
            users = try ConsoleUserDirectory(path: path, logger: logger, reported: reloads.reporter(for: "console_users"))
        } catch {
            FileHandle.standardError.write(Data("serve: cannot read the console users in \(path): \(error)\n".utf8))
            return nil
        }
        let console = Console(services: services, users: users)
        reloads.add("console_users") {
            switch console.users.reload() {
            case .success(let count):
                logger.notice("console users reloaded", ["path": path, "users": String(count)])
                return true
            case .failure(let error):
                logger.error("console user file refused; the previous users stay in force", ["path": path, "reason": "\(error)"])
                return false
            }
        }
        logger.notice("support console on", ["path": path, "users": String(users.count)])
        return (console, ConsoleBanner(enabled: true, demoPassword: demoPassword))
    }

    static let demoConsoleUser = "demo"
}

/// The banner's console line: where it is and, in demo mode, how to sign in.
struct ConsoleBanner {
    var enabled: Bool
    var demoPassword: String?

    func line(base: String) -> String {
        guard enabled else { return "" }
        guard let demoPassword else { return "support console: \(base)/console/\n" }
        return "support console: \(base)/console/   user: \(ServeCommand.demoConsoleUser)   password: \(demoPassword)\n"
    }
}
