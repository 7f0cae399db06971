// SPDX-License-Identifier: Apache-2.0
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
        let process = try Spawned(["console-user"] + arguments, input: input ?? "/dev/null",
                                  output: folder.path + "/out", errors: folder.path + "/err", environment: environment)
        let status = await process.wait(timeout: 60)
        return (status, (try? String(contentsOfFile: folder.path + "/out", encoding: .utf8)) ?? "",
                (try? String(contentsOfFile: folder.path + "/err", encoding: .utf8)) ?? "")
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
        let process = try Spawned(["console-user", "add", "erin", "--role", "refunder", "--file", folder.users], input: nil,
                                  output: folder.path + "/out", errors: folder.path + "/err", environment: [:])
        // The command runs (waiting for its password on standard input) while ps would look at it.
        // /proc files claim a size of 0: read them to their end rather than by their size.
        func proc(_ name: String) -> String {
            String(decoding: FileHandle(forReadingAtPath: "/proc/\(process.pid)/\(name)")?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        }
        let commandLine = proc("cmdline")
        let environment = proc("environ")
        #expect(commandLine.contains("console-user") && commandLine.contains("erin"))
        #expect(!commandLine.contains(Self.password) && !environment.contains(Self.password))
        process.feed(Self.password + "\n")
        #expect(await process.wait(timeout: 60) == 0)
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
        #expect(try await ConsoleSignIn.status(base: base, name: "demo", password: demoPassword) == 303)

        #expect(try await ConsoleSignIn.status(base: base, name: "frank", password: Self.password) == 403)
        let input = try Self.passwordFile(in: folder)
        #expect(try await Self.run(["add", "frank", "--file", folder.users], input: input).status == 0)
        #expect(try await ConsoleSignIn.status(base: base, name: "frank", password: Self.password) == 303,
                "the new user signs in without a restart or a signal")
        kill(gateway.process.processIdentifier, SIGHUP)
        var reloaded = false
        for _ in 0..<1200 where !reloaded {
            reloaded = gateway.stderr.contains("console users reloaded")
            if !reloaded { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(reloaded, "SIGHUP re-reads the file")
    }
}

/// Signs in over HTTP as a browser does: the form (for its pre-login cookie and token), then the POST.
enum ConsoleSignIn {
    static func status(base: String, name: String, password: String) async throws -> Int {
        let client = try HTTPClient()
        defer { Task { await client.shutdown() } }
        let timeouts = HTTPClient.Timeouts(connect: .seconds(5), total: .seconds(60))
        let form = try await client.execute(HTTPClientRequest(method: .get, url: base + "/console/login", timeouts: timeouts))
        let cookie = form.headers.values(for: "Set-Cookie").first?.split(separator: ";").first.map(String.init) ?? ""
        let page = String(decoding: form.body, as: UTF8.self)
        let token = page.components(separatedBy: "name=\"csrf\" value=\"").dropFirst().first?.split(separator: "\"").first ?? ""
        func encode(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text }
        let body = "username=\(encode(name))&password=\(encode(password))&csrf=\(encode(String(token)))"
        let answer = try await client.execute(HTTPClientRequest(
            method: .post, url: base + "/console/login",
            headers: ["Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"], body: Array(body.utf8),
            timeouts: timeouts))
        return answer.status
    }
}

/// A child with its standard input from a path (a file, or a FIFO the test writes), started with
/// posix_spawn; output to files. The environment is PATH and HOME plus `environment`.
final class Spawned: @unchecked Sendable {
    let pid: pid_t
    private var status: Int32?
    private let lock = NSLock()

    /// The write end of the child's standard input, when `input` was nil (a pipe).
    private var inputWriter: Int32 = -1

    /// - Parameter input: a path for standard input, or nil for a pipe the test writes with `feed`.
    init(_ arguments: [String], input: String?, output: String, errors: String, environment: [String: String],
         executable: String = CommandProcess.executable.path) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var pipeEnds: [Int32] = [-1, -1]
        if let input {
            posix_spawn_file_actions_addopen(&actions, 0, input, O_RDONLY, 0)
        } else {
            guard pipe(&pipeEnds) == 0 else { throw POSIXError(.EMFILE) }
            posix_spawn_file_actions_adddup2(&actions, pipeEnds[0], 0)
            posix_spawn_file_actions_addclose(&actions, pipeEnds[1])
        }
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        var env = environment
        for name in ["PATH", "HOME"] { env[name] = ProcessInfo.processInfo.environment[name] }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let code = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        if pipeEnds[0] >= 0 { close(pipeEnds[0]) }
        guard code == 0 else {
            if pipeEnds[1] >= 0 { close(pipeEnds[1]) }
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
        self.pid = pid
        inputWriter = pipeEnds[1]
    }

    /// Writes `text` to the child's standard input and closes it.
    func feed(_ text: String) {
        guard inputWriter >= 0 else { return }
        let bytes = Array(text.utf8)
        _ = write(inputWriter, bytes, bytes.count)
        close(inputWriter)
        inputWriter = -1
    }

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

    /// Waits (polling) up to `timeout` seconds, then kills it.
    func wait(timeout: Double) async -> Int32 {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while exitStatus == nil, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        if exitStatus == nil {
            kill(pid, SIGKILL)
            while exitStatus == nil { try? await Task.sleep(for: .milliseconds(10)) }
        }
        return exitStatus ?? -1
    }
}
