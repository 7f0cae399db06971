// SPDX-License-Identifier: Apache-2.0
import Foundation

// The command line: one file per subcommand, dispatched here.
let arguments = Array(CommandLine.arguments.dropFirst())
let commands: [String: @Sendable ([String]) async -> Int32] = [
    "sign": { SignCommand.run($0) },
    "simulate": { await SimulateCommand.run($0) },
    "serve": { await ServeCommand.run($0) },
    "reconcile": { await ReconcileCommand.run($0) },
    "app-token": { AppTokenCommand.run($0) },
    "console-user": { ConsoleUserCommand.run($0) },
    "appstore": { await AppStoreCommand.run($0) },
    "simulate-appstore": { await SimulateAppStoreCommand.run($0) },
    "backup": { await BackupCommand.backup($0) },
    "restore": { await BackupCommand.restore($0) },
    "doctor": { await DoctorCommand.run($0) },
]

func usage() -> String {
    """
    usage: wxpay-gateway <command> [options]

    commands:
      serve     run the gateway, configured from the environment (README); serve --demo: demo mode,
                the embedded WeChat Pay simulator and its test merchant, on loopback
      reconcile compare one Beijing day's WeChat bill with the orders: reconcile --date YYYY-MM-DD
      doctor    check a production configuration before the first payment (WeChat, key, certificate,
                App Store key, database, catalog): one line per check, exit 0 only when all pass
      backup    copy the SQLite database while gateways serve, verified: backup --to FILE
      restore   put a backup in place of the database, refused while a gateway uses it: restore --from FILE [--new]
      sign      compute or check a WeChat Pay v2 signature
      app-token print an app token (HS256 JWT) for one user: app-token --sub USER [--ttl SECONDS] [--apps NAME,…]
      console-user  add, remove or change a support console user: console-user add|remove|passwd NAME [--role ROLE]
      simulate  run the WeChat Pay simulator, API v2 and v3 (API and control panel), on a port
      appstore  verify App Store signed data (appstore verify), make a Server API token (appstore token), or
                read the App Store's notification history by hand (appstore backfill --since DATE)
      simulate-appstore  run the App Store simulator (Server API, verifyReceipt, notifications) on a port
    """
}

guard let name = arguments.first, let command = commands[name] else {
    FileHandle.standardError.write(Data((usage() + "\n").utf8))
    exit(arguments.isEmpty || arguments.first == "--help" || arguments.first == "-h" ? 0 : 64)
}
exit(await command(Array(arguments.dropFirst())))
