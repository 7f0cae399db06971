// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// A child process started with posix_spawn, its standard output and error going to files.
///
/// Not Foundation's `Process`: on Linux its `run()` reads `/proc/self/fd` with a `d_name` copy that
/// can read past glibc's buffer and crash the whole test process now and then (fixed upstream
/// after the toolchain this project uses). The tests that start the gateway, the README's token
/// examples and the Python tools use this instead.
final class ChildProcess: @unchecked Sendable {
    let pid: pid_t
    private var status: Int32?
    private let lock = NSLock()

    struct SpawnFailure: Error, CustomStringConvertible {
        var executable: String
        var code: Int32
        var description: String { "cannot start \(executable): \(String(cString: strerror(code)))" }
    }

    /// Starts `executable` (looked up on PATH when it has no slash) with `arguments`, the whole
    /// `environment`, standard input from /dev/null and output appended to `output` and `errors`.
    init(_ executable: String, _ arguments: [String], environment: [String: String], output: String, errors: String) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let code = executable.contains("/")
            ? posix_spawn(&pid, executable, &actions, nil, argv, envp)
            : posix_spawnp(&pid, executable, &actions, nil, argv, envp)
        guard code == 0 else { throw SpawnFailure(executable: executable, code: code) }
        self.pid = pid
    }

    /// The exit status (128 + signal when killed), once it ended; reaps it without blocking.
    var exitStatus: Int32? {
        lock.lock()
        defer { lock.unlock() }
        if let status { return status }
        var raw: Int32 = 0
        guard waitpid(pid, &raw, WNOHANG) == pid else { return nil }
        let signal = raw & 0x7F
        status = signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
        return status
    }

    var isRunning: Bool { exitStatus == nil }

    func send(_ signal: Int32) {
        if isRunning { kill(pid, signal) }
    }

    /// Waits (polling, without blocking a cooperative thread) up to `timeout`, then kills it.
    @discardableResult
    func wait(timeout: Duration) async -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        if isRunning {
            kill(pid, SIGKILL)
            while isRunning { try? await Task.sleep(for: .milliseconds(10)) }
        }
        return exitStatus ?? -1
    }
}
