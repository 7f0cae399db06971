// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import Lifecycle

/// What `simulate` and `simulate-appstore` share: `--name value` options, and serving a simulator
/// on a port until SIGINT or SIGTERM.
enum SimulatorServing {
    enum Options {
        case help
        case values([String: String])
        case invalid(String)
    }

    /// Reads `--name value` pairs; `-h`/`--help` anywhere asks for the usage.
    static func options(_ arguments: [String], known: Set<String>) -> Options {
        var values: [String: String] = [:]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "-h" || argument == "--help" { return .help }
            guard known.contains(argument), index + 1 < arguments.count else {
                return .invalid("unknown or incomplete option \(argument.prefix(40))")
            }
            values[argument] = arguments[index + 1]
            index += 2
        }
        return .values(values)
    }

    /// What both simulators read alike: the port (0 picks a free one), the time scale, the seed.
    struct Common {
        var port: UInt16
        var timeScale: Double
        var seed: UInt64
    }

    /// How a command that read its arguments ends before serving: 0 after the usage was asked
    /// for, else the status `fail` gave for what was wrong.
    struct Exit: Error {
        let status: Int32
    }

    /// The `--name value` options and the common ones (`--port`, `--time-scale`, `--seed`), or how
    /// the command ends: `usage` printed for `--help`, `fail` called with the first problem.
    static func read(_ arguments: [String], known: Set<String>, usage: String,
                     fail: (String) -> Int32) -> Result<(options: [String: String], common: Common), Exit> {
        let options: [String: String]
        switch Self.options(arguments, known: known) {
        case .help:
            print(usage)
            return .failure(Exit(status: 0))
        case .invalid(let message):
            return .failure(Exit(status: fail(message)))
        case .values(let values):
            options = values
        }
        guard let port = UInt16(options["--port"] ?? "0") else { return .failure(Exit(status: fail("--port must be 0-65535"))) }
        guard let scale = Double(options["--time-scale"] ?? "1"), scale > 0 else {
            return .failure(Exit(status: fail("--time-scale must be positive")))
        }
        guard let seed = UInt64(options["--seed"] ?? "1") else { return .failure(Exit(status: fail("--seed must be a number"))) }
        return .success((options, Common(port: port, timeScale: scale, seed: seed)))
    }

    /// Starts the server, prints `banner` (its first line names the address: scripts read it to
    /// learn the port), runs `background` (the simulator's notify loop) until a termination
    /// signal, then stops everything. `client` is the simulator's outgoing client, shut down last.
    static func serve(_ router: HTTPRouter, _ configuration: HTTPServerConfiguration, client: HTTPClient,
                      banner: (HTTPServerSocketAddress) -> String,
                      background: @escaping @Sendable () async -> Void,
                      fail: (String) -> Int32) async -> Int32 {
        let server = HTTPServer(router: router, configuration: configuration)
        let address: HTTPServerSocketAddress
        do {
            address = try await server.start()
        } catch {
            await client.shutdown()
            return fail("cannot listen: \(error)")
        }
        // The notify loop stops first, then the server; SIGINT and SIGTERM are trapped from here,
        // before the banner tells anyone the simulator is up.
        let group = ServiceGroup(services: [
            Serving(description: "simulator", servers: [server], gracePeriod: .seconds(5)),
            BackgroundLoop(description: "notify loop", loop: background),
        ])
        // Written unbuffered, so a reader sees the first line at once.
        FileHandle.standardOutput.write(Data(banner(address).utf8))
        let status: Int32
        do {
            try await group.run()
            status = 0
        } catch {
            // A service ended before it was asked to: nothing a command line can fix.
            FileHandle.standardError.write(Data("the simulator stopped: \(error)\n".utf8))
            status = ExitStatus.internal
        }
        await client.shutdown()
        return status
    }
}
