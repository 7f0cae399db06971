// SPDX-License-Identifier: Apache-2.0
import AppStoreSimulator
import Foundation
@testable import Gateway
@testable import GatewayConsole
import HTTP
import StorageCore
import Testing

/// The console: the audit of a search by an Apple order id (Look Up Order ID), and its cookies
/// when the gateway serves HTTPS itself.
@Suite(.serialized)
struct ConsoleReviewTests {
    typealias E2E = IAPEndToEndTests

    @Test("The audit entry of a console search by Apple order id counts the orders the page showed")
    func theAuditEntryCountsTheOrdersAnAppleOrderIdLookupShowed() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("console-users-\(UUID().uuidString)").path
        let hash = ConsoleRig.hash(ConsoleRig.password)
        try ConsoleUserFile.update(path: file) { users in users = [ConsoleUser(name: "vera", role: .viewer, password: hash)] }
        let rig = try await IAPRig.start(.inProcess, consoleUsers: file)
        do {
            E2E.dropNotifications(rig)
            let created = try await rig.createOrder("kate")
            let bought = try rig.buy("apple-kate", token: E2E.token(created))
            let browser = ConsoleBrowser(rig: rig.gateway, language: "en")
            #expect(try await browser.signIn("vera").status == 303)
            #expect(try await browser.get("/console/?q=\(bought.orderID)").status == 200)
            #expect(browser.page.contains(E2E.number(created)))
            let entries = try await rig.gateway.store.auditEntries(AuditQuery(action: "search"), limit: 10, before: nil).entries
                .map(\.entry)
            let entry = try #require(entries.first { $0.target == bought.orderID })
            #expect(entry.detail.contains("apple_order_id lookup") && entry.detail.contains("1 orders"), "\(entry.detail)")
            // A purchase no order holds (no token, no report): Apple's answer leads to its page.
            let stranger = try rig.buy("apple-stranger", token: nil)
            #expect(try await browser.get("/console/?q=\(stranger.orderID)").status == 200)
            #expect(browser.page.contains("id=\"unclaimed-purchase-link\"")
                    && browser.page.contains("href=\"/console/apple-transactions/\(stranger.transactionID)\""), "\(browser.page)")
        } catch {
            Issue.record("\(error)")
        }
        await rig.stop()
        try? FileManager.default.removeItem(atPath: file)
        try? FileManager.default.removeItem(atPath: file + ".lock")
    }

    @Test("Served over HTTPS by the gateway itself, the console's cookies are Secure and it sends HSTS; over HTTP neither")
    func overDirectHTTPSTheCookiesAreSecureWithHSTS() async throws {
        let rig = try await ConsoleRig.start()
        var router = HTTPRouter()
        GatewayAPI(services: rig.rig.services).register(in: &router)
        Console.register(rig.console, in: &router)
        for secure in [true, false] {
            let request = HTTPServerRequest(method: .get, path: "/console/login", isSecure: secure)
            let response = await router.respond(to: request)
            #expect(response.status == 200)
            let cookies = response.headers.values(for: "Set-Cookie")
            #expect(!cookies.isEmpty)
            for cookie in cookies { #expect(cookie.contains("; Secure") == secure, "\(cookie)") }
            #expect((response.headers["Strict-Transport-Security"] == "max-age=31536000") == secure)
        }
        await rig.stop()
    }
}
