// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import HTTPClientTestSupport
import Testing
import WeChatPay
@testable import WeChatPaySimulator

/// Issue 28's rules for who pays what: an openid is a user of one app id, whichever trade type the
/// control panel pays, and WeChat's H5 page (mweb_url) opens only from a page of the order's site.
struct SimulatorChannelPaymentTests {
    /// Another of the merchant's apps, bound to it as the harness's own.
    static let otherAppID = "wx2421b1c4370ec43b"
    static let site = "https://m.course.example/"
    static let scene = #"{"h5_info":{"type":"Wap","wap_url":"https://m.course.example/","wap_name":"Swift 课堂"}}"#

    static func harness() -> SimulatorHarness {
        SimulatorHarness { $0.otherAppIDs = [otherAppID] }
    }

    static func json(_ body: [UInt8]) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }

    /// An order of the harness's app in `tradeType`, with what that type requires.
    static func create(_ harness: SimulatorHarness, _ outTradeNo: String, tradeType: String) -> Fields {
        var extra: Fields = ["trade_type": tradeType]
        if tradeType == "NATIVE" { extra["product_id"] = "swift-101" }
        if tradeType == "MWEB" { extra["scene_info"] = scene }
        let answer = harness.call("/pay/unifiedorder", SimulatorHarness.order(outTradeNo, extra: extra))
        #expect(answer["result_code"] == "SUCCESS", "\(answer)")
        return answer
    }

    @Test("the control panel refuses (409 wrong_payer) an APP, NATIVE or MWEB order's payment by an openid of another app id, and takes one of the order's app",
          arguments: ["APP", "NATIVE", "MWEB"])
    func anotherAppsUserCannotPayThroughTheControlPanel(tradeType: String) {
        let harness = Self.harness()
        let api = SimulatorControlAPI(simulator: harness.simulator)
        let number = "chan-\(tradeType.lowercased())-1"
        _ = Self.create(harness, number, tradeType: tradeType)
        let stranger = SimulatorConfiguration.openID(of: "u1", under: Self.otherAppID)
        let refused = api.handle(method: "POST", path: "/simulator/orders/\(number)/pay",
                                 body: Array(#"{"openid":"\#(stranger)"}"#.utf8))
        #expect(refused.status == 409)
        #expect((Self.json(refused.body)["error"] as? [String: Any])?["code"] as? String == "wrong_payer", "\(Self.json(refused.body))")
        // Nothing was paid, nor notified.
        #expect(harness.simulator.order(number)?.state == "NOTPAY")
        #expect(harness.simulator.order(number)?.transactionID == nil)
        // Not an openid at all (no app's prefix) is no user of the app either.
        #expect(api.handle(method: "POST", path: "/simulator/orders/\(number)/pay", body: Array(#"{"openid":"o"}"#.utf8)).status == 409)
        let own = SimulatorConfiguration.openID(of: "u1", under: SimulatorHarness.appID)
        let paid = api.handle(method: "POST", path: "/simulator/orders/\(number)/pay", body: Array(#"{"openid":"\#(own)"}"#.utf8))
        #expect(paid.status == 200 && Self.json(paid.body)["state"] as? String == "SUCCESS")
    }

    @Test("without an openid the control panel pays an order as a user of its app")
    func withoutAnOpenIDAUserOfTheAppPays() {
        let harness = Self.harness()
        let api = SimulatorControlAPI(simulator: harness.simulator)
        _ = Self.create(harness, "chan-any-1", tradeType: "NATIVE")
        #expect(api.handle(method: "POST", path: "/simulator/orders/chan-any-1/pay", body: []).status == 200)
    }

    /// The simulator's control panel on a socket, and an HTTP client that does not follow redirects.
    struct Served: Sendable {
        let harness: SimulatorHarness
        let server: HTTPServer
        let client: HTTPClient
        let base: String

        static func start() async throws -> Served {
            let harness = SimulatorChannelPaymentTests.harness()
            var router = HTTPRouter()
            SimulatorRoutes.registerControl(harness.simulator, in: &router)
            let server = HTTPServer(router: router, configuration: HTTPServerConfiguration())
            let address = try await server.start()
            let client = try HTTPClient(configuration: .init(timeouts: .init(connect: .seconds(20), total: .seconds(90))))
            return Served(harness: harness, server: server, client: client, base: "http://127.0.0.1:\(address.port)")
        }

        func stop() async {
            await server.shutdown(gracePeriod: .seconds(2))
            await client.shutdown()
        }

        /// The browser opens `mweb_url` on the simulator (its origin and path replaced) from `referer`.
        func open(_ mwebURL: String, referer: String?) async throws -> HTTPClientResponse {
            let page = mwebURL.replacingOccurrences(of: "https://wx.tenpay.com/cgi-bin/mmpayweb-bin/checkmweb", with: base + "/simulator/mweb")
            return try await client.execute(HTTPClientRequest(url: page, headers: referer.map { ["Referer": $0] } ?? [:]))
        }
    }

    @Test("WeChat's H5 page refuses (403, WeChat's words) a browser with no Referer or one off the order's wap_url host, and pays nothing")
    func theH5PageRefusesAPageElsewhere() async throws {
        let served = try await Served.start()
        let mwebURL = try #require(Self.create(served.harness, "chan-h5-ref", tradeType: "MWEB")["mweb_url"])
        do {
            for referer in [nil, "https://elsewhere.example/checkout", "https://m.course.example.elsewhere.example/", "not a url"] {
                let refused = try await served.open(mwebURL, referer: referer)
                #expect(refused.status == 403, "\(referer ?? "none")")
                #expect(String(decoding: refused.body, as: UTF8.self).contains("商家参数格式有误，请联系商家解决"))
                #expect(refused.headers["Content-Type"]?.hasPrefix("text/html") == true)
            }
            #expect(served.harness.simulator.order("chan-h5-ref")?.state == "NOTPAY")
            // A page no order has (another package number, or none) is not found.
            let tampered = mwebURL.replacingOccurrences(of: "&package=", with: "&package=9")
            #expect(try await served.open(tampered, referer: Self.site).status == 404)
            #expect(try await served.open(served.base + "/simulator/mweb?prepay_id=x", referer: Self.site).status == 404)
        } catch {
            await served.stop()
            throw error
        }
        await served.stop()
    }

    @Test("WeChat's H5 page opened from the order's site pays the order as a user of its app and sends the browser to redirect_url; a paid order's page does not open again")
    func theH5PageFromTheSitePaysAndRedirects() async throws {
        let served = try await Served.start()
        do {
            let mwebURL = try #require(Self.create(served.harness, "chan-h5-pay", tradeType: "MWEB")["mweb_url"])
            let back = "https://m.course.example/paid?order=chan-h5-pay&from=h5"
            let withRedirect = mwebURL + "&redirect_url=" + (back.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
            let opened = try await served.open(withRedirect, referer: Self.site + "courses/checkout")
            #expect(opened.status == 302, "\(String(decoding: opened.body, as: UTF8.self))")
            #expect(opened.headers["Location"] == back)
            let order = try #require(served.harness.simulator.order("chan-h5-pay"))
            #expect(order.state == "SUCCESS" && order.transactionID != nil)
            #expect(try await served.open(withRedirect, referer: Self.site).status == 409)

            // Without a redirect_url the page says the payment is done; the Referer's host is
            // compared without case, as host names are.
            let plain = try #require(Self.create(served.harness, "chan-h5-plain", tradeType: "MWEB")["mweb_url"])
            let done = try await served.open(plain, referer: "https://M.Course.Example/cart")
            #expect(done.status == 200 && String(decoding: done.body, as: UTF8.self).contains("支付成功"))
            #expect(served.harness.simulator.order("chan-h5-plain")?.state == "SUCCESS")

            // A redirect_url that is no web address is not followed: the page only says it is paid.
            let script = try #require(Self.create(served.harness, "chan-h5-script", tradeType: "MWEB")["mweb_url"])
            let odd = try await served.open(script + "&redirect_url=javascript%3Aalert(1)", referer: Self.site)
            #expect(odd.status == 200 && odd.headers["Location"] == nil)
        } catch {
            await served.stop()
            throw error
        }
        await served.stop()
    }
}
