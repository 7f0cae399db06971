// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import Glibc
import Synchronization
import Testing

/// A FIFO, a device or a directory where the configuration names a file: refused at once with a
/// message naming the variable, never read (a FIFO's open would wait for a writer for ever, and
/// with it `serve`, `doctor` or a SIGHUP reload).
struct OperatorFileConfigurationTests {
    /// Runs `work` on a thread of its own and answers whether it finished within `seconds`. Once
    /// the wait is over each FIFO is opened for writing and closed, which releases a reader
    /// blocked in its open (on code that still blocks), so the test process is not left stuck.
    static func finishes(within seconds: Double, unblocking fifos: [String], _ work: @escaping @Sendable () -> Void) async -> Bool {
        let done = Mutex(false)
        Thread.detachNewThread {
            work()
            done.withLock { $0 = true }
        }
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline, !done.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(20)) }
        let finished = done.withLock { $0 }
        for _ in 0..<50 where !done.withLock({ $0 }) {
            for fifo in fifos {
                let descriptor = open(fifo, O_WRONLY | O_NONBLOCK)
                if descriptor >= 0 { close(descriptor) }
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return finished
    }

    static func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("operator-files-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Every variable naming a file the gateway reads at start or on SIGHUP (README's table).
    static let fileVariables = [
        "GATEWAY_CATALOG", "GATEWAY_CONSOLE_USERS", "GATEWAY_TLS_CERT", "GATEWAY_TLS_KEY",
        "WXPAY_CLIENT_CERT", "WXPAY_CLIENT_KEY", "WXPAY_CLIENT_P12", "WXPAY_API_CA_FILE",
        "WXPAY_MERCHANT_PRIVATE_KEY", "WXPAY_MERCHANT_CERT", "WXPAY_PUBLIC_KEY_FILE", "WXPAY_PLATFORM_CERT_FILE",
        "APPSTORE_PRIVATE_KEY_FILE", "APPSTORE_ROOT_CA_FILE", "APPSTORE_RECEIPT_ROOT_CA_FILE",
    ]

    @Test("A FIFO at any file variable's path is refused at once, naming the variable as not a regular file")
    func aFIFOAtAFileVariableIsRefusedAtOnceNamingIt() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var environment = ConfigurationTests.production
        var fifos: [String] = []
        for name in Self.fileVariables {
            let fifo = directory + "/" + name.lowercased()
            #expect(mkfifo(fifo, 0o600) == 0)
            fifos.append(fifo)
            environment[name] = fifo
        }
        let outcome = Mutex<ConfigurationError?>(nil)
        let frozen = environment
        let finished = await Self.finishes(within: 10, unblocking: fifos) {
            do {
                _ = try GatewayConfiguration(environment: Environment(frozen), demo: false)
            } catch {
                outcome.withLock { $0 = error as? ConfigurationError }
            }
        }
        #expect(finished, "reading the configuration blocked on a FIFO")
        let error = try #require(outcome.withLock { $0 })
        for name in Self.fileVariables {
            #expect(error.description.contains("\(name) is not a regular file"), "\(name)")
            // Said once, not again as an unreadable or malformed file.
            #expect(error.problems.filter { $0.variable == name }.count == 1, "\(name): \(error)")
        }
    }

    @Test("A Unix socket at any file variable's path is refused as not a regular file, as a FIFO is")
    func aSocketAtAFileVariableIsRefusedAsNotARegularFile() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/socket"
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.utf8.prefix(buffer.count - 1).enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        var environment = ConfigurationTests.production
        for name in Self.fileVariables { environment[name] = path }
        do {
            _ = try GatewayConfiguration(environment: Environment(environment), demo: false)
            Issue.record("a socket was taken as a file")
        } catch {
            for name in Self.fileVariables {
                #expect(error.description.contains("\(name) is not a regular file"), "\(name): \(error)")
            }
        }
    }

    @Test("A directory as the catalog is refused as not a regular file, and a missing catalog is still unreadable")
    func aDirectoryIsNotARegularFileAndAMissingFileIsUnreadable() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var environment = ConfigurationTests.production
        environment["GATEWAY_CATALOG"] = directory
        #expect(throws: ConfigurationError.self) { try GatewayConfiguration(environment: Environment(environment), demo: false) }
        do {
            _ = try GatewayConfiguration(environment: Environment(environment), demo: false)
        } catch {
            #expect(error.description.contains("GATEWAY_CATALOG is not a regular file"), "\(error)")
        }
        environment["GATEWAY_CATALOG"] = directory + "/missing.json"
        do {
            _ = try GatewayConfiguration(environment: Environment(environment), demo: false)
            Issue.record("a missing catalog was accepted")
        } catch {
            #expect(error.description.contains("cannot read the catalog file"), "\(error)")
        }
    }

    @Test("A catalog replaced by a FIFO is refused on reload at once, and the catalog in force stays")
    func aCatalogReloadFromAFIFOIsRefusedAtOnce() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/catalog.json"
        #expect(mkfifo(path, 0o600) == 0)
        let source = CatalogSource(.demo, path: path)
        let reloaded = ReloadOutcome()
        let finished = await Self.finishes(within: 10, unblocking: [path]) {
            // The reload is async (it may bind the catalog in the store); this thread waits for it.
            let done = DispatchSemaphore(value: 0)
            Task { [reloaded] in
                let result = await source.reload()
                reloaded.result.withLock { $0 = result }
                done.signal()
            }
            done.wait()
        }
        #expect(finished, "the reload blocked on a FIFO")
        guard case .failure(let error)? = reloaded.result.withLock({ $0 }) else {
            Issue.record("the reload did not refuse the FIFO")
            return
        }
        #expect(error.message.contains("GATEWAY_CATALOG is not a regular file"), "\(error)")
        #expect(source.catalog == .demo)
    }

    @Test("A console user file replaced by a FIFO is refused at once as not a regular file")
    func aConsoleUserFileThatIsAFIFOIsRefusedAtOnce() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/users"
        #expect(mkfifo(path, 0o600) == 0)
        let outcome = Mutex<ConsoleUserFileError?>(nil)
        let finished = await Self.finishes(within: 10, unblocking: [path]) {
            do {
                _ = try ConsoleUserFile.read(path: path)
            } catch {
                outcome.withLock { $0 = error as? ConsoleUserFileError }
            }
        }
        #expect(finished, "reading the console users blocked on a FIFO")
        let error = try #require(outcome.withLock { $0 })
        #expect(error.description.contains("is not a regular file"), "\(error)")
    }
}

/// What a reload answered, handed from the task that ran it to the test.
private final class ReloadOutcome: Sendable {
    let result = Mutex<Result<Catalog, CatalogError>?>(nil)
}
