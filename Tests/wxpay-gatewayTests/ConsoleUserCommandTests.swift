// SPDX-License-Identifier: Apache-2.0
import ChildProcessSupport
import Foundation
import Glibc
import HTTP
import Testing

/// `wxpay-gateway console-user` run as an operator runs it, and a served gateway picking its
/// edits up: the password only ever from standard input or a file (never in `ps`), the file
/// written atomically with mode 0600, unknown roles refused, and demo mode's own user.
@Suite(.serialized)
struct ConsoleUserCommandTests {
    static let password = "a long enough password"

    /// A temp directory for one test, removed at the end.
    struct Folder {
        let path: String
        init() throws {
            path = FileManager.default.temporaryDirectory.appendingPathComponent("console-cli-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        var users: String { path + "/users" }
        func remove() { try? FileManager.default.removeItem(atPath: path) }
    }

    /// The command run to its end with `input` as its standard input (a file's path).
    static func run(_ arguments: [String], input: String? = nil, environment: [String: String] = [:]) async throws
        -> (status: Int32, output: String, errors: String)
    {
        let folder = try Folder()
        defer { folder.remove() }
        let process = try ChildProcess(CommandProcess.executable.path, ["console-user"] + arguments,
                                       environment: Self.environment(environment), input: input.map { .file($0) } ?? .none,
                                       output: folder.path + "/out", errors: folder.path + "/err")
        let status = await process.wait(timeout: .seconds(300))
        return (status, (try? String(contentsOfFile: folder.path + "/out", encoding: .utf8)) ?? "",
                (try? String(contentsOfFile: folder.path + "/err", encoding: .utf8)) ?? "")
    }

    /// The status of a sign-in by a fresh client (303: signed in).
    static func signInStatus(_ base: String, _ name: String, password: String) async throws -> Int {
        let browser = try ConsoleFormClient()
        defer { Task { await browser.shutdown() } }
        return try await browser.signIn(base, name: name, password: password)
    }

    /// What the command runs with: PATH and HOME, and `extra`.
    static func environment(_ extra: [String: String]) -> [String: String] {
        var environment = extra
        for name in ["PATH", "HOME"] { environment[name] = ProcessInfo.processInfo.environment[name] }
        return environment
    }

    /// A whole /proc file: they claim a size of 0, so they are read to their end, not by their size
    /// (and with read(2), retried on EINTR: FileHandle's readDataToEndOfFile traps on it).
    static func proc(_ pid: pid_t, _ name: String) -> String {
        let fd = open("/proc/\(pid)/\(name)", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func passwordFile(in folder: Folder, _ text: String = password + "\n") throws -> String {
        let path = folder.path + "/password-\(UUID().uuidString)"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func lines(_ path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
    }

    static func mode(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int
    }

    @Test func addReadsThePasswordFromStandardInputAndWritesTheFileWithMode0600() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let input = try Self.passwordFile(in: folder)
        let added = try await Self.run(["add", "alice", "--role", "admin", "--file", folder.users], input: input)
        #expect(added.status == 0, "\(added.errors)")
        #expect(added.output.contains("added alice (admin)"))
        #expect(Self.mode(folder.users) == 0o600)
        let entries = Self.lines(folder.users)
        #expect(entries.count == 1 && entries[0].hasPrefix("alice:admin:$scrypt$ln=17,r=8,p=1$"))
        #expect(!entries[0].contains(Self.password))
        // The environment names the file too, and the role defaults to viewer.
        let second = try await Self.run(["add", "bob", "--password-file", input], environment: ["GATEWAY_CONSOLE_USERS": folder.users])
        #expect(second.status == 0, "\(second.errors)")
        #expect(Self.lines(folder.users).map { $0.split(separator: ":").prefix(2).joined(separator: ":") } == ["alice:admin", "bob:viewer"])
        #expect(Self.mode(folder.users) == 0o600)
    }

    @Test func passwdChangesTheHashAndTheRoleAndRemoveRemoves() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let input = try Self.passwordFile(in: folder)
        #expect(try await Self.run(["add", "carol", "--file", folder.users], input: input).status == 0)
        let before = Self.lines(folder.users)
        let changed = try await Self.run(["passwd", "carol", "--role", "refunder", "--file", folder.users], input: input)
        #expect(changed.status == 0, "\(changed.errors)")
        let after = Self.lines(folder.users)
        #expect(after.count == 1 && after[0].hasPrefix("carol:refunder:") && after != before, "a fresh salt, so a new hash")
        #expect(try await Self.run(["add", "carol", "--file", folder.users], input: input).status == 1)
        #expect(try await Self.run(["passwd", "nobody", "--file", folder.users], input: input).status == 1)
        #expect(try await Self.run(["remove", "nobody", "--file", folder.users]).status == 1)
        #expect(try await Self.run(["remove", "carol", "--file", folder.users]).status == 0)
        #expect(Self.lines(folder.users).isEmpty && Self.mode(folder.users) == 0o600)
    }

    @Test func anUnknownRoleABadNameAShortPasswordOrAPasswordArgumentAreRefusedAndWriteNothing() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let input = try Self.passwordFile(in: folder)
        let short = try Self.passwordFile(in: folder, "short\n")
        let cases: [([String], String)] = [
            (["add", "dave", "--role", "superuser", "--file", folder.users], input),
            (["add", "Dave!", "--file", folder.users], input),
            (["add", "dave", "--file", folder.users], short),
            (["add", "dave", "--password", Self.password, "--file", folder.users], input),
            (["add", "dave", "-p", Self.password, "--file", folder.users], input),
            (["rename", "dave", "--file", folder.users], input),
        ]
        for (arguments, stdin) in cases {
            let refused = try await Self.run(arguments, input: stdin)
            #expect(refused.status == 64, "\(arguments): \(refused.errors)")
            #expect(!refused.errors.contains(Self.password))
        }
        #expect(!FileManager.default.fileExists(atPath: folder.users))
        let said = try await Self.run(["add", "dave", "--password", Self.password, "--file", folder.users], input: input)
        #expect(said.errors.contains("never given on the command line"))
    }

    @Test func thePasswordIsNeverInTheProcessListWhileTheCommandRuns() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let process = try ChildProcess(CommandProcess.executable.path,
                                       ["console-user", "add", "erin", "--role", "refunder", "--file", folder.users],
                                       environment: Self.environment([:]), input: .pipe,
                                       output: folder.path + "/out", errors: folder.path + "/err")
        // The command runs (waiting for its password on standard input) while ps would look at it;
        // the kernel may show the new program's command line a moment after the spawn returned.
        var commandLine = Self.proc(process.pid, "cmdline")
        let deadline = ContinuousClock.now + .seconds(60)
        while !commandLine.contains("console-user"), process.isRunning, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            commandLine = Self.proc(process.pid, "cmdline")
        }
        let environment = Self.proc(process.pid, "environ")
        #expect(commandLine.contains("console-user") && commandLine.contains("erin"))
        #expect(!commandLine.contains(Self.password) && !environment.contains(Self.password))
        process.write(Array((Self.password + "\n").utf8))
        process.closeInput()
        #expect(await process.wait(timeout: .seconds(300)) == 0)
        #expect(Self.lines(folder.users).first?.hasPrefix("erin:refunder:") == true)
    }

    @Test func aRunningGatewayPicksUpANewUserWithoutARestartAndDemoModePrintsItsOwn() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let gateway = try CommandProcess(["serve", "--demo"], environment: [
            "GATEWAY_LISTEN": "127.0.0.1:0", "GATEWAY_DATABASE": "sqlite:\(folder.path)/gateway.sqlite",
            "GATEWAY_CONSOLE_USERS": folder.users, "GATEWAY_RECONCILE_INTERVAL": "0", "GATEWAY_LOG_LEVEL": "notice"])
        defer { Task { await gateway.stop() } }
        let banner = try #require(await gateway.line(startingWith: "support console: "), "\(gateway.stderr)")
        let base = try #require(banner.split(separator: " ").dropFirst(2).first.map { String($0.dropLast("/console/".count)) })
        let demoPassword = try #require(banner.components(separatedBy: "password: ").last)
        #expect(banner.contains("user: demo"))
        #expect(Self.mode(folder.users) == 0o600 && Self.lines(folder.users).first?.hasPrefix("demo:admin:") == true)
        #expect(try await Self.signInStatus(base, "demo", password: demoPassword) == 303)

        #expect(try await Self.signInStatus(base, "frank", password: Self.password) == 403)
        let input = try Self.passwordFile(in: folder)
        #expect(try await Self.run(["add", "frank", "--file", folder.users], input: input).status == 0)
        #expect(try await Self.signInStatus(base, "frank", password: Self.password) == 303,
                "the new user signs in without a restart or a signal")
        kill(gateway.processIdentifier, SIGHUP)
        var reloaded = false
        for _ in 0..<1200 where !reloaded {
            reloaded = gateway.stderr.contains("console users reloaded")
            if !reloaded { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(reloaded, "SIGHUP re-reads the file")
    }
}
