// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
@testable import GatewayConsole
import HTTP
import HTTPClientTestSupport
import Observability
import StorageCore
import Testing

/// The console's lockout, driven over raw sockets from several source addresses (the gateway
/// trusts 127.0.0.1 as its proxy, so each request's `X-Forwarded-For` is its address): failures
/// lock a name from the address they came from only, so nobody can lock `admin` out from
/// elsewhere; a name failing from many addresses is paced (slowed, never locked), except from an
/// address it signed in from before.
struct ConsoleLockoutTests {
    static let admin = "198.51.100.7"
    static let attacker = "203.0.113.66"

    /// One browser's sign-in over one raw keep-alive connection, as `address`: the form (for its
    /// pre-login token and cookie), then the POST.
    static func signIn(_ rig: ConsoleRig, from address: String, name: String, password: String) async throws -> RawResponse {
        let port = try #require(URL(string: rig.rig.base)?.port)
        let server = try #require(HTTPServerSocketAddress(host: "127.0.0.1", port: UInt16(port)))
        return try await offPool {
            let connection = try RawConnection(to: server)
            connection.send("GET /console/login HTTP/1.1\r\nHost: console\r\nX-Forwarded-For: \(address)\r\n\r\n")
            let form = try connection.readResponse()
            guard let cookie = form.headers.first(where: { $0.name.lowercased() == "set-cookie" })?.value,
                  cookie.hasPrefix("wxpay_console_login="),
                  let token = cookie.dropFirst("wxpay_console_login=".count).split(separator: ";").first
            else { throw TestFailure("no pre-login cookie") }
            let body = "username=\(name)&password=\(HTML.queryValue(password))&csrf=\(token)"
            connection.send("POST /console/login HTTP/1.1\r\nHost: console\r\nX-Forwarded-For: \(address)\r\n"
                + "Cookie: wxpay_console_login=\(token)\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
            return try connection.readResponse()
        }
    }

    static func start(pace: LoginPace = LoginPace()) async throws -> ConsoleRig {
        try await ConsoleRig.start(.sockets, environment: ["GATEWAY_TRUSTED_PROXIES": "127.0.0.1/32"], pace: pace)
    }

    @Test func failuresFromOneAddressLockTheNameFromThatAddressOnly() async throws {
        let rig = try await Self.start()
        defer { Task { await rig.stop() } }
        for attempt in 1...5 {
            let answer = try await Self.signIn(rig, from: Self.attacker, name: "adam", password: "guess \(attempt)")
            #expect(answer.status == (attempt < 5 ? 403 : 429), "attempt \(attempt)")
        }
        // From the attacker's address even the right password is refused, without a check.
        let checks = rig.rig.services.metrics.counter("wxpay_console_password_checks_total")
        let locked = try await Self.signIn(rig, from: Self.attacker, name: "adam", password: ConsoleRig.password)
        #expect(locked.status == 429 && locked.header("Retry-After") != nil)
        #expect(locked.text.contains("Other addresses are not affected") || locked.text.contains("其他地址不受影响"))
        #expect(rig.rig.services.metrics.counter("wxpay_console_password_checks_total") == checks)
        // The admin at their own address signs in; another address is refused, not locked.
        let signedIn = try await Self.signIn(rig, from: Self.admin, name: "adam", password: ConsoleRig.password)
        #expect(signedIn.status == 303)
        #expect(signedIn.headers.contains { $0.name.lowercased() == "set-cookie" && $0.value.hasPrefix("wxpay_console_session=") })
        #expect(try await Self.signIn(rig, from: "192.0.2.10", name: "adam", password: "guess").status == 403)
        // The audit log has each failure with the address it came from.
        let failures = try await rig.auditEntries(AuditQuery(actor: "adam", action: "login")).filter { $0.outcome != "ok" }
        #expect(failures.filter { $0.address == Self.attacker }.map(\.outcome) == ["locked", "refused", "refused", "refused", "refused"])
    }

    @Test func aNameFailingFromManyAddressesIsPacedNotLockedAndItsKnownAddressIsNotPaced() async throws {
        // One check a minute once paced, and no waiting: every paced attempt after the first is
        // told to come back, which makes the test's outcome independent of the machine's speed.
        let rig = try await Self.start(pace: LoginPace(interval: .seconds(60), maximumWait: .zero))
        defer { Task { await rig.stop() } }
        let metrics = rig.rig.services.metrics
        // The admin signed in from the office before: that address is known for the name.
        #expect(try await Self.signIn(rig, from: Self.admin, name: "adam", password: ConsoleRig.password).status == 303)
        // A campaign over many addresses, each staying under its own lock's threshold.
        for index in 0..<Console.paceThreshold {
            let answer = try await Self.signIn(rig, from: "192.0.2.\(index + 1)", name: "adam", password: "guess \(index)")
            #expect(answer.status == 403, "attempt \(index)")
        }
        #expect(metrics.counter("wxpay_console_logins_paced_total") == 0)
        // Now the name is paced for addresses it never signed in from: one gets its turn, the next
        // is told when to come back (429 with Retry-After), none is locked.
        let first = try await Self.signIn(rig, from: "192.0.2.200", name: "adam", password: "guess again")
        #expect(first.status == 403)
        #expect(metrics.counter("wxpay_console_logins_paced_total") == 1)
        let checks = metrics.counter("wxpay_console_password_checks_total")
        let paced = try await Self.signIn(rig, from: "192.0.2.201", name: "adam", password: ConsoleRig.password)
        #expect(paced.status == 429)
        #expect(Int(paced.header("Retry-After") ?? "") ?? 0 >= 1)
        #expect(paced.text.contains("take turns") || paced.text.contains("排队"))
        #expect(metrics.counter("wxpay_console_password_checks_total") == checks, "a paced-out attempt costs no check")
        #expect(metrics.counter("wxpay_console_logins_total", ["outcome": "paced"]) == 1)
        // The admin's known address is not paced: signed in at once, whatever the campaign does.
        let admin = try await Self.signIn(rig, from: Self.admin, name: "adam", password: ConsoleRig.password)
        #expect(admin.status == 303)
        #expect(metrics.counter("wxpay_console_logins_paced_total") == 1)
        // Another name is not paced at all.
        #expect(try await Self.signIn(rig, from: "192.0.2.202", name: "vera", password: ConsoleRig.password).status == 303)
    }

    @Test func addressesLockedFromANameCountTowardsItsPace() async throws {
        let rig = try await Self.start(pace: LoginPace(interval: .seconds(60), maximumWait: .zero))
        defer { Task { await rig.stop() } }
        let metrics = rig.rig.services.metrics
        // Four addresses each lock themselves out (5 failures each): 20 failures in all.
        for index in 1...(Console.paceThreshold / Console.lockThreshold) {
            for attempt in 1...Console.lockThreshold {
                let answer = try await Self.signIn(rig, from: "192.0.2.\(index)", name: "rita", password: "guess \(attempt)")
                #expect(answer.status == (attempt < Console.lockThreshold ? 403 : 429))
            }
        }
        #expect(metrics.counter("wxpay_console_logins_paced_total") == 0)
        #expect(try await Self.signIn(rig, from: "192.0.2.100", name: "rita", password: "guess").status == 403)
        #expect(metrics.counter("wxpay_console_logins_paced_total") == 1)
        #expect(try await Self.signIn(rig, from: "192.0.2.101", name: "rita", password: "guess").status == 429)
        #expect(metrics.counter("wxpay_console_logins_total", ["outcome": "paced"]) == 1)
    }
}
