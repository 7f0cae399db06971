// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A PostgreSQL server of one test's own (`scripts/postgres`), for the tests that stop, crash or
/// restart the database under a running store. It listens only on a Unix socket in its own
/// temporary directory; `remove()` stops it and deletes everything.
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
        let output = try await script(["start", directory])
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

    private static let scriptPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("scripts/postgres").path

    /// Runs `scripts/postgres` and returns its output. Foundation's `Process` as the rest of the
    /// suite uses it (its SIGCHLD handling is what every other child process relies on), but ended
    /// through `terminationHandler`: `waitUntilExit` was seen to hang on a plain thread. The output
    /// goes to a file, not a pipe, since the server the script starts outlives it.
    private static func script(_ arguments: [String]) async throws -> String {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("wxpay-pg-\(UUID().uuidString).log").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        guard FileManager.default.createFile(atPath: log, contents: nil), let output = FileHandle(forWritingAtPath: log) else {
            throw TestDatabaseError.failed("cannot create \(log)")
        }
        defer { try? output.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: scriptPath)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = output
        let status: Int32? = await withCheckedContinuation { continuation in
            process.terminationHandler = { ended in continuation.resume(returning: ended.terminationStatus) }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(returning: nil)
            }
        }
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        guard status == 0 else {
            throw TestDatabaseError.failed("scripts/postgres \(arguments.first ?? "") failed (\(status.map(String.init) ?? "not run")): \(text)")
        }
        return text
    }
}
