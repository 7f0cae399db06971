// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import Glibc

/// `wxpay-gateway console-user add|remove|passwd NAME [--role ROLE] [--password-file FILE] [--file PATH]`:
/// edits the support console's user file. The password is read from standard input (asked for
/// twice, without echo, on a terminal) or from the first line of `--password-file`: never from the
/// command line, where `ps` and shell histories would show it. A running gateway picks the change
/// up by itself (at the latest on SIGHUP).
enum ConsoleUserCommand {
    static let usage = """
        usage: wxpay-gateway console-user add|remove|passwd NAME [--role viewer|refunder|admin]
                                          [--password-file FILE] [--file PATH]
          add NAME          a new user (--role, default viewer); the password from standard input
          passwd NAME       a new password for NAME (and a new role with --role); from standard input
          remove NAME       removes NAME; their sessions end at their next request
          --role ROLE       viewer (search, view, recheck), refunder (also refund, redeliver),
                            admin (also the audit log)
          --password-file FILE  read the password from the first line of FILE instead of standard input
          --file PATH       the user file; default GATEWAY_CONSOLE_USERS
        NAME is 1 to 64 of a-z 0-9 . _ @ -; a password is 10 to 1024 bytes.
        """

    static func run(_ arguments: [String]) -> Int32 {
        var rest = arguments[...]
        guard let verb = rest.popFirst(), ["add", "remove", "passwd"].contains(verb) else {
            if arguments.first == "--help" || arguments.first == "-h" {
                print(usage)
                return 0
            }
            return fail("give add, remove or passwd")
        }
        guard let name = rest.popFirst(), !name.hasPrefix("-") else { return fail("give the user's NAME") }
        var role: ConsoleRole?
        var passwordFile: String?
        var file = ProcessInfo.processInfo.environment["GATEWAY_CONSOLE_USERS"]
        while let argument = rest.popFirst() {
            switch argument {
            case "--role":
                guard let value = rest.popFirst(), let parsed = ConsoleRole(rawValue: value) else {
                    return fail("--role must be viewer, refunder or admin")
                }
                role = parsed
            case "--password-file": passwordFile = rest.popFirst()
            case "--file": file = rest.popFirst()
            case "--password", "-p":
                return fail("a password is never given on the command line (ps shows it to everyone); "
                            + "pipe it to standard input or use --password-file FILE")
            default:
                return fail("unknown argument \(argument.prefix(40))")
            }
        }
        guard ConsoleUser.isValidName(name) else { return fail("NAME must be 1 to 64 of a-z 0-9 . _ @ -") }
        guard let file, !file.isEmpty else { return fail("no user file: set GATEWAY_CONSOLE_USERS or give --file PATH") }
        if verb == "remove" && (role != nil || passwordFile != nil) { return fail("remove takes only NAME") }

        var hash: PasswordHash?
        if verb != "remove" {
            let password: String
            switch readPassword(file: passwordFile) {
            case .success(let read): password = read
            case .failure(let problem): return fail(problem.message)
            }
            guard (10...1024).contains(password.utf8.count) else { return fail("the password must be 10 to 1024 bytes") }
            guard let made = PasswordHash.make(password) else {
                FileHandle.standardError.write(Data("console-user: scrypt failed\n".utf8))
                return 70
            }
            hash = made
        }
        do {
            var summary = ""
            try ConsoleUserFile.update(path: file) { users throws(ConsoleUserFileError) in
                let index = users.firstIndex { $0.name == name }
                switch verb {
                case "add":
                    guard index == nil else { throw .userExists(name) }
                    users.append(ConsoleUser(name: name, role: role ?? .viewer, password: hash!))
                    summary = "added \(name) (\((role ?? .viewer).rawValue))"
                case "passwd":
                    guard let index else { throw .noSuchUser(name) }
                    users[index].password = hash!
                    if let role { users[index].role = role }
                    summary = "changed the password of \(name) (\(users[index].role.rawValue))"
                default:
                    guard let index else { throw .noSuchUser(name) }
                    users.remove(at: index)
                    summary = "removed \(name)"
                }
            }
            print("console-user: \(summary) in \(file)")
            return 0
        } catch {
            FileHandle.standardError.write(Data("console-user: \(error)\n".utf8))
            return 1
        }
    }

    struct Problem: Error { var message: String }

    /// The password: the first line of `file`, or of standard input (on a terminal: asked twice
    /// with echo off). A trailing CR/LF is not part of it.
    static func readPassword(file: String?) -> Result<String, Problem> {
        if let file {
            guard let data = FileManager.default.contents(atPath: file) else { return .failure(Problem(message: "cannot read \(file)")) }
            return firstLine(data)
        }
        if isatty(STDIN_FILENO) == 1 {
            guard let first = prompt("password: "), let second = prompt("again: ") else {
                return .failure(Problem(message: "no password given"))
            }
            guard first == second else { return .failure(Problem(message: "the two passwords differ")) }
            return .success(first)
        }
        var data = Data()
        while data.count <= 4096, let chunk = try? FileHandle.standardInput.read(upToCount: 4096), !chunk.isEmpty {
            data.append(chunk)
            if chunk.contains(0x0A) { break }
        }
        return firstLine(data)
    }

    private static func firstLine(_ data: Data) -> Result<String, Problem> {
        guard let text = String(data: data.prefix(4096), encoding: .utf8) else {
            return .failure(Problem(message: "the password is not UTF-8"))
        }
        var line = String(text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
        if line.hasSuffix("\r") { line.removeLast() }
        return .success(line)
    }

    /// Reads one line from the terminal with echo off.
    private static func prompt(_ text: String) -> String? {
        FileHandle.standardError.write(Data(text.utf8))
        var saved = termios()
        tcgetattr(STDIN_FILENO, &saved)
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSANOW, &quiet)
        defer {
            tcsetattr(STDIN_FILENO, TCSANOW, &saved)
            FileHandle.standardError.write(Data("\n".utf8))
        }
        return readLine(strippingNewline: true)
    }

    private static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("console-user: \(message)\n\(usage)\n".utf8))
        return 64
    }
}
