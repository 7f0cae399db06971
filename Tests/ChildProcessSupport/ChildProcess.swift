// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// A child process started with posix_spawn, its standard output and error going to files.
///
/// Not Foundation's `Process`: on Linux its `run()` reads `/proc/self/fd` with a `d_name` copy that
/// can read past glibc's buffer and crash the whole test process now and then (fixed upstream
/// after the toolchain this project uses). The tests that start the gateway, the README's token
/// examples, the Python tools, the gateway processes of the several-instance tests and the
/// PostgreSQL servers of the outage tests use this instead.
///
/// The child keeps only its standard input, output and error: every other descriptor of the test
/// process (another test's pipe, a database connection) is closed in it, so a long-lived child
/// never holds a pipe open that some other test reads to its end.
public final class ChildProcess: @unchecked Sendable {
    public let pid: pid_t
    /// Whether the child leads its own process group (`init(…ownGroup:)`).
    public let ownGroup: Bool
    private var status: Int32?
    private let lock = NSLock()
    /// The write end of the child's standard input, for `.pipe`; closing it is the child's EOF.
    private var inputEnd: Int32?

    /// Where the child's standard input comes from.
    public enum Input: Sendable {
        /// /dev/null: the child reads EOF at once.
        case none
        /// A file's contents.
        case file(String)
        /// A pipe the test writes to (`write(_:)`) and closes (`closeInput()`).
        case pipe
    }

    public struct SpawnFailure: Error, CustomStringConvertible {
        public var executable: String
        public var code: Int32
        public var description: String { "cannot start \(executable): \(String(cString: strerror(code)))" }
    }

    /// Starts `executable` (looked up on PATH when it has no slash) with `arguments`, the whole
    /// `environment`, standard input from /dev/null and output appended to `output` and `errors`.
    ///
    /// With `ownGroup`, the child leads a process group of its own (its pid), so `sendToGroup`
    /// reaches what it starts too: a chromedriver's browsers, which outlive it otherwise.
    public init(_ executable: String, _ arguments: [String], environment: [String: String], input: Input = .none,
                output: String, errors: String, directory: String? = nil, ownGroup: Bool = false) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        if ownGroup {
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
            posix_spawnattr_setpgroup(&attributes, 0)
        }
        self.ownGroup = ownGroup
        var pipeEnds: [Int32] = [-1, -1]
        switch input {
        case .none:
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        case .file(let path):
            posix_spawn_file_actions_addopen(&actions, 0, path, O_RDONLY, 0)
        case .pipe:
            // Close-on-exec in the parent (children of this type close everything above 2 anyway).
            guard pipe(&pipeEnds) == 0 else { throw SpawnFailure(executable: executable, code: errno) }
            for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            posix_spawn_file_actions_adddup2(&actions, pipeEnds[0], 0)
        }
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        _ = Self.closeFrom?(&actions, 3)
        if let directory { _ = Self.changeDirectory?(&actions, directory) }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let code = executable.contains("/")
            ? posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
            : posix_spawnp(&pid, executable, &actions, &attributes, argv, envp)
        if pipeEnds[0] >= 0 { close(pipeEnds[0]) }
        guard code == 0 else {
            if pipeEnds[1] >= 0 { close(pipeEnds[1]) }
            throw SpawnFailure(executable: executable, code: code)
        }
        self.pid = pid
        inputEnd = pipeEnds[1] >= 0 ? pipeEnds[1] : nil
    }

    deinit {
        if let inputEnd { close(inputEnd) }
    }

    /// Writes to the child's standard input (`.pipe`); false if it cannot take it (it exited).
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        guard let input = lock.withLock({ inputEnd }) else { return false }
        var offset = 0
        while offset < bytes.count {
            // MSG_NOSIGNAL does not apply to pipes; SIGPIPE is ignored by the test process's runtime.
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(input, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }

    /// Closes the child's standard input (`.pipe`): it reads EOF.
    public func closeInput() {
        let input = lock.withLock { () -> Int32? in
            defer { inputEnd = nil }
            return inputEnd
        }
        if let input { close(input) }
    }

    /// The exit status (128 + signal when killed), once it ended; reaps it without blocking.
    public var exitStatus: Int32? {
        lock.lock()
        defer { lock.unlock() }
        if let status { return status }
        var raw: Int32 = 0
        guard waitpid(pid, &raw, WNOHANG) == pid else { return nil }
        let signal = raw & 0x7F
        status = signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
        return status
    }

    public var isRunning: Bool { exitStatus == nil }

    /// Sends `signal` unless the child has been reaped: checked and sent under the lock that
    /// reaping takes, so a signal can never reach a recycled pid (another thread may be reaping it).
    public func send(_ signal: Int32) {
        lock.lock()
        defer { lock.unlock() }
        if status == nil { kill(pid, signal) }
    }

    /// Sends `signal` to the child's whole process group (`ownGroup`), whatever is left of it:
    /// the processes it started may outlive it.
    public func sendToGroup(_ signal: Int32) {
        precondition(ownGroup, "the child was not started in a group of its own")
        kill(-pid, signal)
    }

    /// Waits (polling, without blocking a cooperative thread) up to `timeout`, then kills it.
    @discardableResult
    public func wait(timeout: Duration) async -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        if isRunning {
            send(SIGKILL)
            while isRunning { try? await Task.sleep(for: .milliseconds(10)) }
        }
        return exitStatus ?? -1
    }

    // glibc's file actions that Swift's Glibc module does not show (they are behind _GNU_SOURCE),
    // looked up once; nil on a libc without them.
    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private typealias ChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>,
                                                        UnsafePointer<CChar>) -> Int32
    private static let closeFrom: CloseFrom? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        .map { unsafeBitCast($0, to: CloseFrom.self) }
    private static let changeDirectory: ChangeDirectory? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np")
        .map { unsafeBitCast($0, to: ChangeDirectory.self) }

    /// Runs `executable` to its end (killed after `timeout`) and returns its status and output.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String],
                           input: [UInt8]? = nil, timeout: Duration = .seconds(60)) async throws
        -> (status: Int32, output: [UInt8], errors: [UInt8])
    {
        let run = try Captured(executable, arguments, environment: environment, input: input)
        defer { run.remove() }
        return run.result(status: await run.child.wait(timeout: timeout))
    }

    /// The same, for a caller that is not async; blocks the calling thread until the child ends.
    public static func runBlocking(_ executable: String, _ arguments: [String], environment: [String: String],
                                   input: [UInt8]? = nil, timeout: Duration = .seconds(60)) throws
        -> (status: Int32, output: [UInt8], errors: [UInt8])
    {
        let run = try Captured(executable, arguments, environment: environment, input: input)
        defer { run.remove() }
        let child = run.child
        let deadline = ContinuousClock.now + timeout
        while child.isRunning, ContinuousClock.now < deadline { usleep(5_000) }
        if child.isRunning {
            child.send(SIGKILL)
            while child.isRunning { usleep(5_000) }
        }
        return run.result(status: child.exitStatus ?? -1)
    }

    /// A child of `run`/`runBlocking`: its input, output and errors in files of a temporary
    /// directory of its own (files, not pipes, so a chatty child can never block on a full pipe).
    private struct Captured {
        let directory: URL
        let child: ChildProcess

        init(_ executable: String, _ arguments: [String], environment: [String: String], input: [UInt8]?) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("wxpay-child-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let inputPath = directory.appendingPathComponent("stdin").path
            if let input { _ = FileManager.default.createFile(atPath: inputPath, contents: Data(input)) }
            do {
                child = try ChildProcess(executable, arguments, environment: environment,
                                         input: input == nil ? .none : .file(inputPath),
                                         output: directory.appendingPathComponent("stdout").path,
                                         errors: directory.appendingPathComponent("stderr").path)
            } catch {
                try? FileManager.default.removeItem(at: directory)
                throw error
            }
        }

        func result(status: Int32) -> (status: Int32, output: [UInt8], errors: [UInt8]) {
            func read(_ name: String) -> [UInt8] {
                (try? Data(contentsOf: directory.appendingPathComponent(name))).map { [UInt8]($0) } ?? []
            }
            return (status, read("stdout"), read("stderr"))
        }

        func remove() { try? FileManager.default.removeItem(at: directory) }
    }
}
