// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(Glibc)
import Glibc
#endif

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

    /// Runs `scripts/postgres` and returns its output. `posix_spawn` and `waitpid` rather than
    /// Foundation's `Process`, whose `waitUntilExit` was seen to hang on a plain thread; the output
    /// goes to a file, not a pipe, since the server the script starts outlives it.
    private static func script(_ arguments: [String]) async throws -> String {
        let result: Result<String, TestDatabaseError> = await onThread {
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("wxpay-pg-\(UUID().uuidString).log").path
            defer { try? FileManager.default.removeItem(atPath: log) }
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
            let argv = ([scriptPath] + arguments).map { strdup($0) } + [nil]
            defer { for pointer in argv { free(pointer) } }
            var pid: pid_t = 0
            guard posix_spawn(&pid, scriptPath, &actions, nil, argv, environ) == 0 else {
                return .failure(.failed("cannot run scripts/postgres"))
            }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            // Exited normally with status 0 (WIFEXITED and WEXITSTATUS, which Swift cannot call).
            guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
                return .failure(.failed("scripts/postgres \(arguments.first ?? "") failed: \(output)"))
            }
            return .success(output)
        }
        return try result.get()
    }
}
