// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// A child process started with posix_spawn: every test that starts a program uses this.
///
/// Not Foundation's `Process`: on Linux its `run()` reads `/proc/self/fd` with a `d_name` copy that
/// can read past glibc's buffer and crash the whole test process now and then
/// (swiftlang/swift-corelibs-foundation#5472, fixed after the toolchain this project uses). Every
/// test target is one process, so one `Process.run()` anywhere can take the whole suite down (it
/// did: a SIGSEGV in `TestCertificates`' openssl run, and the backtracer then hung the run).
///
/// The child's descriptors: standard input, output and error as asked, every other one closed.
/// Reaped without blocking (`exitStatus`), or by a thread of its own (`waitUntilExit`).
public final class ChildProcess: @unchecked Sendable {
    /// Where one of the child's standard streams goes.
    public enum Stream: Sendable {
        case null
        /// The test process's own (its output then shows in the test log).
        case inherit
        /// A file: read for standard input; created if needed and appended to for output.
        case file(String)
        /// A pipe whose other end the caller gets (`input`, `output`, `errors`).
        case pipe
    }

    public let pid: pid_t
    /// The write end of standard input, for `.pipe`.
    public let input: FileHandle?
    /// The read ends of standard output and error, for `.pipe`.
    public let output: FileHandle?
    public let errors: FileHandle?
    private var status: Int32?
    private let lock = NSLock()

    public struct SpawnFailure: Error, CustomStringConvertible {
        public var executable: String
        public var code: Int32
        public var description: String { "cannot start \(executable): \(String(cString: strerror(code)))" }
    }

    /// Starts `executable` (looked up on PATH when it has no slash) with `arguments` and the whole
    /// `environment`, in `directory` (nil: this process's). File paths of the streams are opened in
    /// the child, so relative ones are relative to `directory`: pass absolute ones.
    public init(_ executable: String, _ arguments: [String], environment: [String: String], directory: String? = nil,
                input inputStream: Stream = .null, output outputStream: Stream, errors errorStream: Stream) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let directory { _ = GNUSpawn.addChangeDirectory?(&actions, directory) }
        // Our ends of the pipes, and the child's ends (closed here once it started).
        var ours: [Int32] = [-1, -1, -1]
        var theirs: [Int32] = []
        defer { for fd in theirs { close(fd) } }
        for (target, stream) in [(Int32(0), inputStream), (1, outputStream), (2, errorStream)] {
            switch stream {
            case .inherit:
                break
            case .null:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
            case .file(let path):
                posix_spawn_file_actions_addopen(&actions, target, path,
                                                 target == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_APPEND, 0o600)
            case .pipe:
                var ends: [Int32] = [-1, -1]
                guard pipe(&ends) == 0 else { throw SpawnFailure(executable: executable, code: errno) }
                // Close-on-exec, for children started meanwhile by other threads.
                for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
                let (child, parent) = target == 0 ? (ends[0], ends[1]) : (ends[1], ends[0])
                ours[Int(target)] = parent
                theirs.append(child)
                // dup2 clears close-on-exec on the copy the child keeps.
                posix_spawn_file_actions_adddup2(&actions, child, target)
            }
        }
        // Nothing else of the test process leaks into the child (its sockets, other children's pipes).
        _ = GNUSpawn.addCloseFrom?(&actions, 3)
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
        guard code == 0 else {
            for fd in ours where fd >= 0 { close(fd) }
            throw SpawnFailure(executable: executable, code: code)
        }
        self.pid = pid
        let handle = { (fd: Int32) in fd >= 0 ? FileHandle(fileDescriptor: fd, closeOnDealloc: true) : nil }
        input = handle(ours[0])
        output = handle(ours[1])
        errors = handle(ours[2])
    }

    /// Standard output and error to files (the original form, used by the gateway tests).
    public convenience init(_ executable: String, _ arguments: [String], environment: [String: String],
                            output: String, errors: String) throws {
        try self.init(executable, arguments, environment: environment, input: .null,
                      output: .file(output), errors: .file(errors))
    }

    /// The exit status (128 + signal when killed), once it ended; reaps it without blocking.
    public var exitStatus: Int32? {
        lock.lock()
        defer { lock.unlock() }
        if let status { return status }
        var raw: Int32 = 0
        guard waitpid(pid, &raw, WNOHANG) == pid else { return nil }
        status = Self.decode(raw)
        return status
    }

    public var isRunning: Bool { exitStatus == nil }

    /// Sends `signal` if the child has not been reaped yet (so never to a recycled pid).
    public func send(_ signal: Int32) {
        lock.lock()
        defer { lock.unlock() }
        if status == nil { kill(pid, signal) }
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

    /// Blocks the calling thread until the child ended, killing it after `timeout`. For synchronous
    /// callers and threads of their own, never for the cooperative pool.
    @discardableResult
    public func waitUntilExit(timeout: Duration = .seconds(3600)) -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while isRunning, ContinuousClock.now < deadline { usleep(10_000) }
        if isRunning {
            send(SIGKILL)
            while isRunning { usleep(10_000) }
        }
        return exitStatus ?? -1
    }

    private static func decode(_ raw: Int32) -> Int32 {
        let signal = raw & 0x7F
        return signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
    }
}

/// glibc's posix_spawn extensions (2.29, 2.34), which Swift's Glibc module does not declare.
private enum GNUSpawn {
    typealias Actions = UnsafeMutablePointer<posix_spawn_file_actions_t>
    static let addCloseFrom: (@convention(c) (Actions, Int32) -> Int32)? = symbol("posix_spawn_file_actions_addclosefrom_np")
    static let addChangeDirectory: (@convention(c) (Actions, UnsafePointer<CChar>) -> Int32)? =
        symbol("posix_spawn_file_actions_addchdir_np")

    private static func symbol<Function>(_ name: String) -> Function? {
        // RTLD_DEFAULT is a null handle on glibc.
        guard let address = dlsym(nil, name) else { return nil }
        return unsafeBitCast(address, to: Function.self)
    }
}

/// What a program run to completion printed, and how it ended.
public struct ChildProcessResult: Sendable {
    /// The exit status, 128 + signal when killed (also when killed for running past its time).
    public var status: Int32
    public var output: [UInt8]
    public var errors: [UInt8]
    public var standardOutput: String { String(decoding: output, as: UTF8.self) }
    public var standardError: String { String(decoding: errors, as: UTF8.self) }
}

extension ChildProcess {
    /// Runs `executable` to completion on the calling thread: `input` as its standard input,
    /// its output collected through files (so no pipe can fill up), killed after `timeout`.
    /// `environment` nil: this process's. Blocks: for synchronous tests and threads of their own.
    public static func runToCompletion(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                                       input: [UInt8] = [], timeout: Duration = .seconds(30)) throws -> ChildProcessResult {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wxpay-child-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let inputPath = directory.appendingPathComponent("stdin").path
        let outputPath = directory.appendingPathComponent("stdout").path
        let errorsPath = directory.appendingPathComponent("stderr").path
        guard FileManager.default.createFile(atPath: inputPath, contents: Data(input)) else {
            throw SpawnFailure(executable: executable, code: EIO)
        }
        let child = try ChildProcess(executable, arguments, environment: environment ?? ProcessInfo.processInfo.environment,
                                     input: .file(inputPath), output: .file(outputPath), errors: .file(errorsPath))
        let status = child.waitUntilExit(timeout: timeout)
        let read = { (path: String) in [UInt8]((try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data()) }
        return ChildProcessResult(status: status, output: read(outputPath), errors: read(errorsPath))
    }

    /// `runToCompletion` on a thread of its own: waiting for a child on the cooperative pool (two
    /// threads on this machine) would stall every other test of the run for as long as it takes.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                           input: [UInt8] = [], timeout: Duration = .seconds(30)) async throws -> ChildProcessResult {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result {
                    try runToCompletion(executable, arguments, environment: environment, input: input, timeout: timeout)
                })
            }
        }
    }
}
