// SPDX-License-Identifier: Apache-2.0
import ChildProcessSupport
import Foundation
import HTTP
@testable import Gateway
import QRCode
import StorageCore
import StoreTestSupport
import TestSupport
import Testing
import WeChatPaySimulator

/// `GET /v1/orders/{out_trade_no}/qr.png` and `.svg`: a NATIVE order's code_url as a QR code,
/// read back by an outside decoder (zbarimg), for the order's owner only, cacheable, and refused
/// clearly for an order that has no code or can no longer be paid.
struct OrderQRCodeTests {
    static func body(_ outTradeNo: String, app: String, user: String = "u-42") -> String {
        #"{"amount":990,"description":"Swift 入门课","client_ip":"203.0.113.7","out_trade_no":"\#(outTradeNo)","user_id":"\#(user)","app":"\#(app)"}"#
    }

    static func header(_ response: GatewayRig.Response, _ name: String) -> String? {
        response.headers.first { $0.key.lowercased() == name.lowercased() }?.value
    }

    @Test("a native order's QR PNG decodes with zbarimg back to the code_url GET order shows, the SVG is the same code, and both are cacheable by ETag",
          arguments: StoreKind.all, GatewayRig.Mode.allCases)
    func theQRCodeIsTheOrdersCodeURL(store: StoreKind, mode: GatewayRig.Mode) async throws {
        let rig = try await GatewayRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        let created = try await rig.send(.post, "/v1/orders", body: Self.body("qr-0001", app: "web"))
        #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
        // GET order shows the channel and the code to draw.
        let order = try await rig.send(.get, "/v1/orders/qr-0001")
        #expect(order.json.string("app") == "web" && order.json.string("trade_type") == "NATIVE", "\(order.json)")
        let codeURL = try #require(order.json.string("code_url"))
        #expect(codeURL == created.json.string("code_url"))

        let png = try await rig.send(.get, "/v1/orders/qr-0001/qr.png")
        #expect(png.status == 200, "\(String(decoding: png.body, as: UTF8.self))")
        #expect(Self.header(png, "Content-Type") == "image/png")
        #expect(Self.header(png, "Cache-Control")?.hasPrefix("private") == true)
        #expect(try await Zbar.decode(png.body) == codeURL)
        #expect(png.body == (try QRCode.Matrix.encode(codeURL).png()))
        let tag = try #require(Self.header(png, "ETag"))

        let svg = try await rig.send(.get, "/v1/orders/qr-0001/qr.svg")
        #expect(svg.status == 200 && Self.header(svg, "Content-Type") == "image/svg+xml")
        #expect(String(decoding: svg.body, as: UTF8.self) == (try QRCode.Matrix.encode(codeURL).svg()))
        #expect(Self.header(svg, "ETag") != tag, "another image is another entity")

        // The same image asked again with its ETag: 304, nothing drawn or sent.
        let again = try await rig.send(.get, "/v1/orders/qr-0001/qr.png", headers: ["If-None-Match": tag])
        #expect(again.status == 304 && again.body.isEmpty)
        #expect(Self.header(again, "ETag") == tag)
        // A cache may send it back weak (W/"…"), or among others: If-None-Match compares weakly.
        for header in ["W/" + tag, #""other", "# + tag, "*"] {
            #expect(try await rig.send(.get, "/v1/orders/qr-0001/qr.png", headers: ["If-None-Match": header]).status == 304, "\(header)")
        }
        #expect(try await rig.send(.get, "/v1/orders/qr-0001/qr.png", headers: ["If-None-Match": #""other""#]).status == 200)

        // scale and border: a small image still decodes; out of range is clamped as the QR module clamps.
        let small = try await rig.send(.get, "/v1/orders/qr-0001/qr.png?scale=2&border=1")
        #expect(small.status == 200 && small.body.count < png.body.count)
        #expect(try await Zbar.decode(small.body) == codeURL)
        #expect(Self.header(small, "ETag") != tag)
        let huge = try await rig.send(.get, "/v1/orders/qr-0001/qr.svg?scale=1000&border=-5")
        #expect(huge.status == 200)
        #expect(String(decoding: huge.body, as: UTF8.self) == (try QRCode.Matrix.encode(codeURL).svg(scale: 32, border: 0)))
        // However large: 10^6 and numbers past Int's range are clamped like 1000.
        for large in ["scale=1000000&border=-1000000", "scale=99999999999999999999&border=-99999999999999999999"] {
            let clamped = try await rig.send(.get, "/v1/orders/qr-0001/qr.svg?\(large)")
            #expect(clamped.status == 200 && clamped.body == huge.body, "\(large)")
        }
        for bad in ["scale=abc", "border=1.5", "scale=", "scale=+3", "scale=--1", "scale=\(String(repeating: "9", count: 33))"] {
            let refused = try await rig.send(.get, "/v1/orders/qr-0001/qr.png?\(bad)")
            #expect(refused.status == 400 && refused.error?["code"] as? String == "invalid_request", "\(bad)")
            #expect(refused.error?["field"] as? String == String(bad.prefix { $0 != "=" }), "\(bad)")
        }
    }

    @Test("only the order's owner gets its QR code: an app token for another user gets GET order's not-found answer, no token 401",
          arguments: StoreKind.all, GatewayRig.Mode.allCases)
    func onlyTheOwnerGetsTheQRCode(store: StoreKind, mode: GatewayRig.Mode) async throws {
        let rig = try await GatewayRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        let created = try await rig.send(.post, "/v1/orders", body: Self.body("qr-own", app: "web", user: "u-owner"))
        #expect(created.status == 201)
        let codeURL = try #require(created.json.string("code_url"))

        let own = try await rig.send(.get, "/v1/orders/qr-own/qr.png", token: TestTokens.minted("u-owner"))
        #expect(own.status == 200)
        #expect(try await Zbar.decode(own.body) == codeURL)

        let other = try await rig.send(.get, "/v1/orders/qr-own/qr.png", token: TestTokens.minted("u-other"))
        let otherOrder = try await rig.send(.get, "/v1/orders/qr-own", token: TestTokens.minted("u-other"))
        let missing = try await rig.send(.get, "/v1/orders/no-such-order/qr.svg", token: TestTokens.minted("u-other"))
        #expect(other.status == 404 && other.body == otherOrder.body && missing.body == otherOrder.body,
                "\(String(decoding: other.body, as: UTF8.self))")

        let anonymous = try await rig.send(.get, "/v1/orders/qr-own/qr.png", token: nil)
        #expect(anonymous.status == 401 && anonymous.body.first == UInt8(ascii: "{"))
        let support = try await rig.send(.get, "/v1/orders/qr-own/qr.png", token: GatewayRig.support)
        #expect(support.status == 403, "support reads orders, it does not show payers codes")
    }

    @Test("an order with no code_url is 409 no_qr_code; once paid, closed or past its expires_at its QR code is 410 order_not_payable",
          arguments: StoreKind.all, GatewayRig.Mode.allCases)
    func onlyAPayableNativeOrderHasAQRCode(store: StoreKind, mode: GatewayRig.Mode) async throws {
        let rig = try await GatewayRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        let app = try await rig.send(.post, "/v1/orders", body: Self.body("qr-app", app: "android"))
        #expect(app.status == 201)
        for format in ["png", "svg"] {
            let refused = try await rig.send(.get, "/v1/orders/qr-app/qr.\(format)")
            #expect(refused.status == 409 && refused.error?["code"] as? String == "no_qr_code", "\(refused.json)")
            #expect((refused.error?["message"] as? String)?.contains("APP") == true)
        }
        // A native order WeChat has not answered yet: the message says so, not "only native".
        rig.simulator.apply(FaultPlan(endpoints: ["/pay/unifiedorder": EndpointFaults(systemErrorRate: 1)]))
        #expect(try await rig.send(.post, "/v1/orders", body: Self.body("qr-pending", app: "web")).status == 503)
        rig.simulator.apply(FaultPlan())
        let pending = try await rig.send(.get, "/v1/orders/qr-pending/qr.png")
        #expect(pending.status == 409 && pending.error?["code"] as? String == "no_qr_code", "\(pending.json)")
        #expect((pending.error?["message"] as? String)?.contains("not given this native order a code_url") == true, "\(pending.json)")

        let created = try await rig.send(.post, "/v1/orders", body: Self.body("qr-paid", app: "web"))
        let codeURL = try #require(created.json.string("code_url"))
        _ = try rig.simulator.scan(codeURL: codeURL)
        let waited = try await rig.send(.get, "/v1/orders/qr-paid?wait=20")
        #expect(await eventually { (try? await rig.store.order("qr-paid"))??.state == .success })
        #expect(waited.status == 200)
        // Past its expires_at WeChat has closed it: 410 at once, before the reconciler closes it here.
        let shortLived = #"{"amount":990,"description":"Swift 入门课","client_ip":"203.0.113.7","out_trade_no":"qr-short","app":"web","expires_in":600}"#
        #expect(try await rig.send(.post, "/v1/orders", body: shortLived).status == 201)
        rig.clock.advance(by: 601)
        let expired = try await rig.send(.get, "/v1/orders/qr-short/qr.png")
        #expect(expired.status == 410 && expired.error?["code"] as? String == "order_not_payable", "\(expired.json)")
        #expect((expired.error?["message"] as? String)?.contains("expired unpaid") == true, "\(expired.json)")

        let paid = try await rig.send(.get, "/v1/orders/qr-paid/qr.png")
        #expect(paid.status == 410 && paid.error?["code"] as? String == "order_not_payable", "\(paid.json)")
        #expect((paid.error?["message"] as? String)?.contains("SUCCESS") == true)
    }

    @Test("a native order's code_url lives 2 hours: then its QR code is 409 qr_code_expired and the old code no longer scans, and the same create gets a new code that does",
          arguments: StoreKind.all, GatewayRig.Mode.allCases)
    func anExpiredCodeURLIsReplacedByTheSameCreate(store: StoreKind, mode: GatewayRig.Mode) async throws {
        let rig = try await GatewayRig.start(mode, store: store)
        defer { Task { await rig.stop() } }
        // A day to pay, so the order outlives its first code.
        let body = #"{"amount":990,"description":"Swift 入门课","client_ip":"203.0.113.7","out_trade_no":"qr-late","user_id":"u-42","app":"web","expires_in":86400}"#
        let created = try await rig.send(.post, "/v1/orders", body: body)
        #expect(created.status == 201, "\(created.json)")
        let first = try #require(created.json.string("code_url"))
        rig.clock.advance(by: 2 * 3600 - 60)
        #expect(try await rig.send(.get, "/v1/orders/qr-late/qr.png").status == 200, "still live a minute before")

        rig.clock.advance(by: 61)
        for format in ["png", "svg"] {
            let expired = try await rig.send(.get, "/v1/orders/qr-late/qr.\(format)")
            #expect(expired.status == 409 && expired.error?["code"] as? String == "qr_code_expired", "\(expired.json)")
            #expect((expired.error?["message"] as? String)?.contains("repeat the create") == true)
        }
        #expect(try #require(throws: SimulatorControlError.self) { try rig.simulator.scan(codeURL: first) }.code == .codeURLExpired)
        #expect(try await rig.store.order("qr-late")?.state == .notPay, "nothing was paid or written by the refusals")

        let again = try await rig.send(.post, "/v1/orders", body: body)
        #expect(again.status == 200, "\(again.json)")
        let second = try #require(again.json.string("code_url"))
        #expect(second != first)
        #expect(try await rig.send(.get, "/v1/orders/qr-late").json.string("code_url") == second)
        let png = try await rig.send(.get, "/v1/orders/qr-late/qr.png")
        #expect(png.status == 200)
        #expect(try await Zbar.decode(png.body) == second)
        #expect(try #require(throws: SimulatorControlError.self) { try rig.simulator.scan(codeURL: first) }.code == .codeURLExpired)
        _ = try rig.simulator.scan(codeURL: second)
        #expect(await eventually { (try? await rig.store.order("qr-late"))??.state == .success })
    }
}
