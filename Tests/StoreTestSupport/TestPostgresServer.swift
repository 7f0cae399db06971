// SPDX-License-Identifier: Apache-2.0
import ChildProcessSupport
import Foundation

/// A PostgreSQL server of one test's own (`scripts/postgres`), for the tests that stop, crash or
/// restart the database under a running store. It listens only on a Unix socket in its own
/// temporary directory; `remove()` stops it and deletes everything. It is tied to this test
/// process (`scripts/postgres start --parent`): if the process dies without removing it (SIGKILL,
/// a crash), the script's watchdog stops the server and deletes its directory.
public final class TestPostgresServer: Sendable {
    public let directory: String
    /// The server's libpq URI (database `wxpay`).
    public let url: String

    private init(directory: String, url: String) {
        self.directory = directory
        self.url = url
    }

    /// Whether this run can start servers (it has one: `scripts/test` started it the same way).
    public static var isAvailable: Bool { TestPostgres.url != nil }

    public static func start() async throws -> TestPostgresServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wxpay-pg-\(UUID().uuidString.prefix(8))").path
        let output: String
        do {
            output = try await script(["start", directory, "--parent", String(getpid())])
        } catch {
            _ = try? await script(["stop", directory])
            throw error
        }
        guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix("export WXPAY_TEST_POSTGRES=") }) else {
            throw TestDatabaseError.failed("scripts/postgres start printed no URI")
        }
        let url = line.dropFirst("export WXPAY_TEST_POSTGRES=".count).trimmingCharacters(in: CharacterSet(charactersIn: "'"))
        return TestPostgresServer(directory: directory, url: url)
    }

    /// Stops the server (`crash`: immediately, without a checkpoint), keeping its data.
    public func halt(crash: Bool = false) async throws {
        _ = try await Self.script(["halt", directory] + (crash ? ["--crash"] : []))
    }

    /// Starts a halted server again.
    public func resume() async throws {
        _ = try await Self.script(["resume", directory])
    }

    public func remove() async {
        _ = try? await Self.script(["stop", directory])
    }

    /// `scripts/postgres` of this checkout.
    public static let scriptPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("scripts/postgres").path

    /// Runs `scripts/postgres` (a `ChildProcess`, not Foundation's `Process`) and returns its
    /// output, written to a file: the server the script starts outlives it.
    private static func script(_ arguments: [String]) async throws -> String {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("wxpay-pg-\(UUID().uuidString).log").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        let child = try ChildProcess(scriptPath, arguments, environment: ProcessInfo.processInfo.environment,
                                     output: log, errors: log)
        let status = await child.wait(timeout: .seconds(180))
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        guard status == 0 else {
            throw TestDatabaseError.failed("scripts/postgres \(arguments.first ?? "") failed (\(status)): \(text)")
        }
        return text
    }
}
