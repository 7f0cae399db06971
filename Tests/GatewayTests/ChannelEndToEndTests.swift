// SPDX-License-Identifier: Apache-2.0
import ChildProcessSupport
import Crypto
import Foundation
@testable import Gateway
import HTTP
import Observability
import StorageCore
import StoreTestSupport
import TestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

/// Every channel of one merchant (demo mode's apps: `android` APP, `mini` and `mp` JSAPI, `web`
/// NATIVE, `h5` MWEB) end to end over sockets, in API v2 and v3: created through the app named,
/// its client parameters checked by an outside reference (wechatpy for v2's JSAPI paySign,
/// openssl for v3's), replayed, paid through that channel, notified, waited for and refunded.
struct ChannelEndToEndTests {
    enum Version: String, CaseIterable, CustomStringConvertible, Sendable {
        case v2, v3
        var description: String { rawValue }
    }

    /// Over sockets the gateway's API and WeChat's notifies go over HTTP; v3's calls to WeChat go
    /// over HTTP too, v2's in process (its refunds need the mutual TLS `RefundAPITests` covers).
    static func start(_ store: StoreKind, _ version: Version, mode: GatewayRig.Mode = .sockets) async throws -> GatewayRig {
        // The demo site is the gateway's own loopback address; the H5 pages' return page is elsewhere.
        try await GatewayRig.start(mode, store: store, environment: ["WXPAY_H5_REDIRECT_HOSTS": "m.course.example"],
                                   wechat: mode == .sockets && version == .v3 ? .http : .inProcess,
                                   v3: version == .v3 ? V3Setup(mode: .publicKey) : nil)
    }

    static func app(_ name: String) -> WeChatApp { WeChatApps.demo.first { $0.name == name }! }

    /// A user of `app` by the simulator's openid rule.
    static func openID(_ user: String, of app: String) -> String { SimulatorConfiguration.openID(of: user, under: Self.app(app).appID) }

    static func body(_ outTradeNo: String, app: String, extra: String = "") -> String {
        #"{"amount":990,"description":"Swift 入门课","client_ip":"203.0.113.7","out_trade_no":"\#(outTradeNo)","user_id":"u-42","app":"\#(app)"\#(extra)}"#
    }

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let python = root.appendingPathComponent(".build/test-tools-venv/bin/python").path

    /// wechatpy's signature of the five JSAPI fields (its `calculate_signature` for MD5,
    /// `calculate_signature_hmac` for HMAC-SHA256: what its `get_jsapi_params` signs with).
    static func wechatpySignature(_ params: [String: Any]) async throws -> String {
        try #require(FileManager.default.isExecutableFile(atPath: python), "wechatpy is not in .build/test-tools-venv: run scripts/setup")
        let fields = ["appId", "timeStamp", "nonceStr", "package", "signType"].map { "\"\($0)\": \"\(params.string($0) ?? "")\"" }
        let function = params.string("signType") == "MD5" ? "calculate_signature" : "calculate_signature_hmac"
        let program = "from wechatpy.pay.utils import calculate_signature, calculate_signature_hmac\n"
            + "print(\(function)({\(fields.joined(separator: ", "))}, \"\(GatewayConfiguration.demoKey)\"))\n"
        let output = try await run(python, program: program, name: "program.py") { _ in [] }
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Whether openssl verifies v3's paySign (SHA256withRSA over `appId\ntimeStamp\nnonceStr\npackage\n`)
    /// under the merchant's public key.
    static func opensslVerifies(_ params: [String: Any]) async throws -> Bool {
        let message = ["appId", "timeStamp", "nonceStr", "package"].map { (params.string($0) ?? "") + "\n" }.joined()
        let signature = try #require(Base64.decode(params.string("paySign") ?? "", .standardPadded))
        let output = try await run("/usr/bin/openssl", program: message, name: "message") { directory in
            try Data(signature).write(to: directory.appendingPathComponent("signature"))
            try Data(V3Setup.keys.merchantKey.key.publicKeyPEM.utf8).write(to: directory.appendingPathComponent("public.pem"))
            return ["dgst", "-sha256", "-verify", directory.appendingPathComponent("public.pem").path,
                    "-signature", directory.appendingPathComponent("signature").path, directory.appendingPathComponent("message").path]
        }
        return output.contains("Verified OK")
    }

    /// Runs `executable` on a temporary directory holding `program` as `name`, with the arguments
    /// `prepare` returns (nothing: the program file alone), and answers its output.
    private static func run(_ executable: String, program: String, name: String,
                            prepare: (URL) throws -> [String]) async throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wxpay-channel-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent(name)
        try Data(program.utf8).write(to: file)
        var arguments = try prepare(directory)
        if arguments.isEmpty { arguments = [file.path] }
        let result = try await ChildProcess.run(executable, arguments, environment: ProcessInfo.processInfo.environment,
                                                input: nil, timeout: .seconds(120))
        #expect(result.status == 0, "\(executable): \(String(decoding: result.errors, as: UTF8.self))")
        return String(decoding: result.output, as: UTF8.self)
    }

    @Test("each channel: created through its app with the parameters its client needs (checked outside), replayed identically, paid through that channel, notified, waited for and refunded",
          arguments: StoreKind.all, Version.allCases)
    func everyChannelEndToEnd(store: StoreKind, version: Version) async throws {
        let rig = try await Self.start(store, version)
        defer { Task { await rig.stop() } }
        for (index, name) in ["android", "mini", "mp", "web", "h5"].enumerated() {
            let app = Self.app(name)
            let number = "ch-\(version)-\(index)-\(name)"
            let extra = switch app.kind {
            case .miniprogram, .officialAccount: #","openid":"\#(Self.openID("learner\(index)", of: name))""#
            case .h5: #","redirect_url":"https://m.course.example/paid?order=\#(number)&x=1""#
            default: ""
            }
            let created = try await rig.send(.post, "/v1/orders", body: Self.body(number, app: name, extra: extra))
            #expect(created.status == 201, "\(name): \(String(decoding: created.body, as: UTF8.self))")
            #expect(created.json.string("app") == name && created.json.string("trade_type") == app.kind.tradeType)
            let stored = try #require(try await rig.store.order(number))
            #expect(stored.appID == app.appID && stored.tradeType == app.kind.tradeType)
            #expect(rig.simulator.order(number) != nil)

            var codeURL: String?
            switch app.kind {
            case .app:
                let params = try #require(created.json.object("app_params"))
                #expect(params.string("appId") == app.appID)
                #expect(created.json["jsapi_params"] == nil && created.json["code_url"] == nil)
            case .miniprogram, .officialAccount:
                let params = try #require(created.json.object("jsapi_params"), "\(name)")
                #expect(params.string("appId") == app.appID)
                #expect(params.string("package") == "prepay_id=" + (stored.prepayID ?? "-"))
                #expect(created.json["app_params"] == nil)
                if version == .v2 {
                    #expect(params.string("signType") == "HMAC-SHA256")
                    #expect(try await Self.wechatpySignature(params) == params.string("paySign"), "wechatpy must compute the same paySign")
                } else {
                    #expect(params.string("signType") == "RSA")
                    #expect(try await Self.opensslVerifies(params), "openssl must verify paySign under the merchant's public key")
                }
            case .native:
                codeURL = created.json.string("code_url")
                #expect(codeURL?.hasPrefix("weixin://wxpay/bizpayurl?pr=") == true, "\(created.json)")
                #expect(created.json["app_params"] == nil && created.json["jsapi_params"] == nil)
            case .h5:
                let url = try #require(created.json.string("mweb_url"))
                #expect(url.hasPrefix("https://wx.tenpay.com/cgi-bin/mmpayweb-bin/checkmweb?prepay_id="))
                #expect(url.contains("&package="))
                #expect(url.hasSuffix("&redirect_url=https%3A%2F%2Fm.course.example%2Fpaid%3Forder%3D\(number)%26x%3D1"), "\(url)")
            }
            // An identical create answers the same parameters (the stored prepay and its URLs).
            let replay = try await rig.send(.post, "/v1/orders", body: Self.body(number, app: name, extra: extra))
            #expect(replay.status == 200)
            for key in ["app_params", "jsapi_params", "code_url", "mweb_url", "prepay_id"] {
                #expect(NSDictionary(dictionary: replay.json).object(forKey: key) as? NSObject
                        == NSDictionary(dictionary: created.json).object(forKey: key) as? NSObject, "\(name): \(key)")
            }

            if let codeURL {
                // The control panel's "scan" of the QR code's content.
                let scanned = try await rig.send(.post, "/simulator/scan", token: nil, body: #"{"code_url":"\#(codeURL)"}"#)
                #expect(scanned.status == 200 && scanned.json.string("outTradeNo") == number, "\(scanned.json)")
                let unknown = try await rig.send(.post, "/simulator/scan", token: nil, body: #"{"code_url":"weixin://wxpay/bizpayurl?pr=none"}"#)
                #expect(unknown.status == 404)
            } else {
                try rig.simulator.pay(outTradeNo: number)
            }
            let waited = try await rig.send(.get, "/v1/orders/\(number)?wait=20")
            #expect(await eventually { (try? await rig.store.order(number))??.state == .success }, "\(name)")
            #expect(waited.status == 200)
            // WeChat's notify of this channel's payment verified and acknowledged (the wait may
            // have settled the order first by its query; a refused notify is never acknowledged).
            #expect(await eventually { rig.simulator.counters.notifiesAcknowledged >= index + 1 }, "\(name)")

            let refund = try await rig.send(.post, "/v1/orders/\(number)/refunds",
                                            body: #"{"amount":990,"reason":"changed my mind","out_refund_no":"r-\#(number)"}"#)
            #expect(refund.status == 201, "\(name): \(String(decoding: refund.body, as: UTF8.self))")
            _ = try rig.simulator.completeRefund(outRefundNo: "r-\(number)")
            #expect(await eventually { (try? await rig.store.order(number))??.state == .refund }, "\(name)")

            // Metrics are labelled by channel, the app's kind: one create and one replay here,
            // and the notify (settled, or a duplicate when the wait's query settled first).
            let channel = app.kind.rawValue
            #expect(rig.metrics.counter("wxpay_orders_created_total", ["outcome": "created", "channel": channel]) == 1, "\(name)")
            #expect(rig.metrics.counter("wxpay_orders_created_total", ["outcome": "replayed", "channel": channel]) == 1, "\(name)")
            #expect(await eventually {
                rig.metrics.counter("wxpay_notifies_total", ["outcome": "settled", "channel": channel])
                    + rig.metrics.counter("wxpay_notifies_total", ["outcome": "duplicate", "channel": channel]) >= 1
            }, "\(name)")
        }
    }

    @Test("a create naming an unknown app, a JSAPI app without openid, an openid or redirect_url its kind does not take is 400 naming the field, and writes nothing",
          arguments: GatewayRig.Mode.allCases)
    func badChannelRequestsAreRefusedAndWriteNothing(mode: GatewayRig.Mode) async throws {
        let rig = try await Self.start(.sqlite, .v2, mode: mode)
        defer { Task { await rig.stop() } }
        let cases: [(String, String, String)] = [
            ("nope", "", "app"),
            ("Mini", "", "app"),
            ("mini", "", "openid"),
            ("android", #","openid":"\#(Self.openID("u1", of: "android"))""#, "openid"),
            ("web", #","redirect_url":"https://m.course.example/""#, "redirect_url"),
            ("h5", #","redirect_url":"javascript:alert(1)""#, "redirect_url"),
            // WeChat sends the payer wherever redirect_url says: only the merchant's own hosts.
            ("h5", #","redirect_url":"https://evil.example/paid""#, "redirect_url"),
            ("h5", #","redirect_url":"https://m.course.example@evil.example/""#, "redirect_url"),
            ("h5", #","redirect_url":"https://m.course.example.evil.example/""#, "redirect_url"),
            ("h5", #","redirect_url":"https://evil.example\\@m.course.example/""#, "redirect_url"),
            ("h5", #","redirect_url":"ftp://m.course.example/""#, "redirect_url"),
            ("mp", #","openid":"o bad""#, "openid"),
        ]
        for (index, (app, extra, field)) in cases.enumerated() {
            let response = try await rig.send(.post, "/v1/orders", body: Self.body("bad-ch-\(index)", app: app, extra: extra))
            #expect(response.status == 400, "\(app) \(extra): \(String(decoding: response.body, as: UTF8.self))")
            #expect(response.error?["code"] as? String == "invalid_request" && response.error?["field"] as? String == field,
                    "\(app) \(extra): \(response.json)")
            #expect(try await rig.store.order("bad-ch-\(index)") == nil)
        }
        #expect(rig.simulator.orderCount == 0)
    }

    @Test("every channel's payment whose notify was lost is settled by the reconciler's orderquery under its own app id, and the day's bill then matches every one",
          arguments: StoreKind.all, Version.allCases)
    func theReconcilerAndTheBillWorkForEveryChannel(store: StoreKind, version: Version) async throws {
        let rig = try await Self.start(store, version, mode: .inProcess)
        defer { Task { await rig.stop() } }
        // Keep every payment on one Beijing day, whatever time the test runs.
        let secondOfDay = (Int(rig.clock.now().timeIntervalSince1970) + BeijingTime.offsetSeconds) % 86400
        if secondOfDay > 86400 - 900 { rig.clock.advance(by: 1200) }
        let paymentDay = rig.clock.now()
        rig.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
        let names = ["android", "mini", "mp", "web", "h5"]
        for name in names {
            let extra = Self.app(name).kind == .miniprogram || Self.app(name).kind == .officialAccount
                ? #","openid":"\#(Self.openID("rec-\(name)", of: name))""# : ""
            #expect(try await rig.send(.post, "/v1/orders", body: Self.body("rec-\(version)-\(name)", app: name, extra: extra)).status == 201)
            try rig.simulator.pay(outTradeNo: "rec-\(version)-\(name)")
        }
        rig.clock.advance(by: 120)
        _ = await Reconciler(services: rig.services, configuration: .init(interval: 30, after: 60, concurrency: 4, rate: 1000)).sweep()
        for name in names {
            let order = try #require(try await rig.store.order("rec-\(version)-\(name)"))
            #expect(order.state == .success, "\(name): \(order.state)")
            #expect(order.appID == Self.app(name).appID && order.transactionID == rig.simulator.order(order.outTradeNo)?.transactionID)
        }
        // The next morning's bill lists the five payments, each matched to its order.
        let dayStart = try #require(BeijingTime.parseDay(BeijingTime.formatDay(paymentDay)))
        rig.clock.advance(by: (dayStart + 86400 + 10 * 3600 + 60).timeIntervalSince(rig.clock.now()))
        let day = BeijingTime.formatDay(paymentDay)
        let report = try await BillReconciler(services: rig.services).reconcile(day: "\(day.prefix(4))-\(day.dropFirst(4).prefix(2))-\(day.suffix(2))")
        #expect(report.billPayments == 5 && report.matched == 5 && report.isClean, "\(report.render())")
    }

    @Test("WeChat's H5 page opens only from the order's site: the simulator holds the Referer to scene_info's host, then pays and returns to redirect_url",
          arguments: Version.allCases)
    func theH5PageOpensOnlyFromTheOrdersSite(version: Version) async throws {
        let rig = try await Self.start(.sqlite, version, mode: .inProcess)
        defer { Task { await rig.stop() } }
        let site = try #require(rig.services.configuration.apps.h5Site?.url)
        let created = try await rig.send(.post, "/v1/orders", body: Self.body(
            "h5-ref-1", app: "h5", extra: #","redirect_url":"https://m.course.example/paid?order=h5-ref-1""#))
        #expect(created.status == 201)
        let mwebURL = try #require(created.json.string("mweb_url"))
        func open(_ url: String, referer: String?, pay: Bool = false) async throws -> GatewayRig.Response {
            var body: [String: Any] = ["mweb_url": url, "pay": pay]
            if let referer { body["referer"] = referer }
            let data = try JSONSerialization.data(withJSONObject: body)
            return try await rig.send(.post, "/simulator/mweb", token: nil, body: String(decoding: data, as: UTF8.self))
        }
        for referer in [nil, "https://elsewhere.example/checkout", "https://127.0.0.1.elsewhere.example/"] {
            let refused = try await open(mwebURL, referer: referer)
            #expect(refused.status == 403 && refused.error?["code"] as? String == "referer_not_allowed", "\(referer ?? "none")")
        }
        let tampered = mwebURL.replacingOccurrences(of: "&package=", with: "&package=9")
        #expect(try await open(tampered, referer: site + "checkout").status == 404)
        let opened = try await open(mwebURL, referer: site + "checkout")
        #expect(opened.status == 200, "\(String(decoding: opened.body, as: UTF8.self))")
        #expect(opened.json.string("redirect_url") == "https://m.course.example/paid?order=h5-ref-1")
        #expect(try await rig.store.order("h5-ref-1")?.state == .notPay)
        let paid = try await open(mwebURL, referer: site + "checkout", pay: true)
        #expect(paid.status == 200 && paid.json.object("order")?.string("state") == "SUCCESS")
        #expect(await eventually { (try? await rig.store.order("h5-ref-1"))??.state == .success })
        #expect(try await open(mwebURL, referer: site).status == 409, "a paid order's page does not open again")
    }

    @Test("an order of one app is never paid by another app's parameters: another app's user cannot be its payer, nor another app's notify settle it",
          arguments: StoreKind.all, Version.allCases)
    func anotherAppCannotPayTheOrder(store: StoreKind, version: Version) async throws {
        let rig = try await Self.start(store, version, mode: .inProcess)
        defer { Task { await rig.stop() } }
        // The mini program's user asked for under the official account's app id: WeChat refuses it.
        let crossed = try await rig.send(.post, "/v1/orders", body: Self.body("cross-1", app: "mp",
                                                                              extra: #","openid":"\#(Self.openID("u1", of: "mini"))""#))
        #expect(crossed.status == 400 && crossed.error?["code"] as? String == "openid_not_for_app"
                && crossed.error?["field"] as? String == "openid" && crossed.error?["wechat_code"] as? String == "PARAM_ERROR"
                && crossed.error?["out_trade_no"] as? String == "cross-1",
                "\(String(decoding: crossed.body, as: UTF8.self))")
        #expect(try await rig.store.order("cross-1")?.prepayID == nil)
        // WeChat's own words are on the timeline for support, not only its code.
        let failed = try await rig.store.events("cross-1").filter { $0.kind == "unifiedorder_failed" }
        #expect(failed.count == 1 && failed.first?.detail.contains("appid和openid不匹配") == true, "\(failed.map(\.detail))")

        let created = try await rig.send(.post, "/v1/orders", body: Self.body("cross-2", app: "mini",
                                                                              extra: #","openid":"\#(Self.openID("u2", of: "mini"))""#))
        #expect(created.status == 201)
        // Another user (of the official account) cannot pay the mini program's order.
        do {
            try rig.simulator.pay(outTradeNo: "cross-2", openid: Self.openID("u2", of: "mp"))
            Issue.record("another app's user paid the order")
        } catch {
            #expect(error.code == .wrongPayer)
        }
        // Nor a PC page's (NATIVE) order by the mini program's user; a user of the page's app id pays it.
        #expect(try await rig.send(.post, "/v1/orders", body: Self.body("cross-3", app: "web")).status == 201)
        do {
            try rig.simulator.pay(outTradeNo: "cross-3", openid: Self.openID("u3", of: "mini"))
            Issue.record("another app's user paid the native order")
        } catch {
            #expect(error.code == .wrongPayer)
        }
        #expect(rig.simulator.order("cross-3")?.state == "NOTPAY")
        try rig.simulator.pay(outTradeNo: "cross-3", openid: Self.openID("u3", of: "web"))
        if version == .v2 {
            // A notify under the merchant's key but for another of its apps settles nothing.
            var builder = PaymentNotifyBuilder(merchant: MerchantIdentity(appID: Self.app("mp").appID, mchID: GatewayConfiguration.demoMchID),
                                               outTradeNo: "cross-2", transactionID: "4200000000202612050000000001", totalFee: 990,
                                               timeEnd: Date(), nonce: "crossed")
            builder.openid = Self.openID("u2", of: "mp")
            builder.tradeType = "JSAPI"
            let fields = builder.fields(signedWith: Signer(key: APIKey(GatewayConfiguration.demoKey)), signType: .hmacSHA256,
                                        declaresSignType: false)
            let reply = try await rig.send(.post, "/wechat/notify", token: nil, bytes: try FlatXML.encode(fields))
            #expect(String(decoding: reply.body, as: UTF8.self).contains("FAIL"))
        }
        #expect(try await rig.store.order("cross-2")?.state == .notPay)
        // The right payer pays it.
        try rig.simulator.pay(outTradeNo: "cross-2", openid: Self.openID("u2", of: "mini"))
        #expect(await eventually { (try? await rig.store.order("cross-2"))??.state == .success })
    }
}
