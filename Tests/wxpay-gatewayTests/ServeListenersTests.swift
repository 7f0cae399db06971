// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import HTTPClientTestSupport
import Testing

/// `serve`'s addresses: the operators' routes on GATEWAY_ADMIN_LISTEN, and HTTPS on both with
/// GATEWAY_TLS_CERT/_KEY (certs/README.md), run as the built binary.
@Suite(.serialized)
struct ServeListenersTests {
    @Test(.timeLimit(.minutes(3)))
    func withACertificateBothAddressesServeHTTPSAndTheAdminRoutesLiveOnlyOnTheirOwn() async throws {
        let directory = try Operations.temporaryDirectory("wxpay-tls")
        let admin = closedLoopbackPort()
        let started = StartedGateway()
        let gateway = try #require(try await started.start({ port in
            ["GATEWAY_LISTEN": "127.0.0.1:\(port)", "GATEWAY_ADMIN_LISTEN": "127.0.0.1:\(admin)",
             "GATEWAY_TLS_CERT": TestCertificates.serverCertificate, "GATEWAY_TLS_KEY": TestCertificates.serverKey,
             "GATEWAY_DATABASE": "sqlite:\(directory)/g.sqlite", "GATEWAY_RECONCILE_INTERVAL": "0"]
        }, demo: true))
        let client = try HTTPClient(configuration: .init(tls: .init(caFile: TestCertificates.ca)))
        do {
            let base = started.base.replacingOccurrences(of: "http://", with: "https://")
            #expect(gateway.stdout.contains("listening on \(base)"), "\(gateway.stdout)")
            #expect(gateway.stdout.contains("admin (metrics, health, console) on https://127.0.0.1:\(admin)"))
            #expect(try await client.send(.get, base + "/openapi.json").status == 200)
            #expect(try await client.send(.get, base + "/metrics").status == 404)
            #expect(try await client.send(.get, base + "/healthz").status == 404)
            // A scrape and /readyz give the database 1 s to answer, which a machine loaded by the
            // whole suite has missed: a late answer is asked again, a few times.
            var ready = false
            for _ in 0..<5 where !ready {
                let metrics = try await client.send(.get, "https://127.0.0.1:\(admin)/metrics")
                #expect(metrics.status == 200)
                let readyz = try await client.send(.get, "https://127.0.0.1:\(admin)/readyz")
                ready = metrics.body.contains("wxpay_ready 1") && metrics.body.contains("wxpay_database_up 1") && readyz.status == 200
            }
            #expect(ready)
            #expect(try await client.send(.get, "https://127.0.0.1:\(admin)/v1/catalog").status == 404)
            // Plain HTTP on the TLS port gets no answer a client could take for one.
            let plain = try HTTPClient()
            let answer = try? await plain.send(.get, started.base + "/openapi.json")
            #expect(answer?.status != 200)
            await plain.shutdown()
        } catch {
            Issue.record("\(error)")
        }
        await client.shutdown()
        #expect(await started.gateway?.stop() == 0)
        try? FileManager.default.removeItem(atPath: directory)
    }

    @Test("Run by systemd as a Type=notify unit, serve says READY=1 on $NOTIFY_SOCKET once it listens, so a reload queued behind the start finds its signals trapped")
    func serveTellsSystemdWhenItIsReady() async throws {
        let directory = try Operations.temporaryDirectory("wxpay-notify")
        let path = directory + "/notify"
        let listener = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        try #require(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0)
        let started = StartedGateway()
        let gateway = try #require(try await started.start({ port in
            ["GATEWAY_LISTEN": "127.0.0.1:\(port)", "GATEWAY_DATABASE": "sqlite:\(directory)/g.sqlite",
             "GATEWAY_RECONCILE_INTERVAL": "0", "NOTIFY_SOCKET": path]
        }, demo: true))
        var buffer = [UInt8](repeating: 0, count: 256)
        var received: String?
        for _ in 0..<500 where received == nil {
            let count = recv(listener, &buffer, buffer.count, 0)
            if count > 0 { received = String(decoding: buffer[0..<count], as: UTF8.self) } else { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(received == "READY=1")
        await gateway.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    @Test func aCertificateWithoutItsKeyOrWithAnotherKeyAndAnAdminAddressLikeThePublicOneAreRefused() async throws {
        func refusal(_ environment: [String: String]) async throws -> (Int32?, String) {
            let process = try CommandProcess(["serve", "--demo"], environment: environment.merging(
                ["GATEWAY_LISTEN": "127.0.0.1:0", "GATEWAY_DATABASE": "sqlite:" + FileManager.default.temporaryDirectory
                    .appendingPathComponent("wxpay-refuse-\(UUID().uuidString)/g.sqlite").path]) { first, _ in first })
            let status = await process.exitStatus()
            let stderr = process.stderr
            await process.stop()
            return (status, stderr)
        }
        let alone = try await refusal(["GATEWAY_TLS_CERT": TestCertificates.serverCertificate])
        #expect(alone.0 == 2 && alone.1.contains("GATEWAY_TLS_KEY: set together with GATEWAY_TLS_CERT"), "\(alone.1)")
        let other = try await refusal(["GATEWAY_TLS_CERT": TestCertificates.serverCertificate,
                                       "GATEWAY_TLS_KEY": TestCertificates.clientKey])
        #expect(other.0 == 2 && other.1.contains("GATEWAY_TLS_KEY: the private key of GATEWAY_TLS_CERT"), "\(other.1)")
        #expect(!other.1.contains("PRIVATE KEY"))
        let same = try await refusal(["GATEWAY_LISTEN": "127.0.0.1:18080", "GATEWAY_ADMIN_LISTEN": "127.0.0.1:18080"])
        #expect(same.0 == 2 && same.1.contains("GATEWAY_ADMIN_LISTEN: another address than GATEWAY_LISTEN"), "\(same.1)")
        let exposed = try await refusal(["GATEWAY_ADMIN_LISTEN": "0.0.0.0:9090"])
        #expect(exposed.0 == 2 && exposed.1.contains("GATEWAY_ADMIN_LISTEN: demo mode listens on loopback only"), "\(exposed.1)")
    }
}
