// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Foundation
@testable import Gateway
import HTTP
import StorageCore
import StoreTestSupport
import TestSupport
import Testing

/// `POST /v1/support/subscriptions/{original_transaction_id}/extend` against the App Store
/// simulator's Extend a Subscription Renewal Date: the date moves once per request id, Apple's
/// limits come back as plain refusals, only support may call it, and every call is audited.
@Suite(.serialized)
struct SubscriptionExtensionTests {
    static func path(_ id: String) -> String { "/v1/support/subscriptions/\(id)/extend" }

    static func extend(_ rig: IAPRig, _ id: String, _ body: String, token: String? = GatewayRig.support) async throws
        -> GatewayRig.Response
    {
        try await rig.gateway.send(.post, path(id), token: token, body: body)
    }

    /// A monthly subscription bought in the simulated App Store; its original transaction id.
    static func subscribe(_ rig: IAPRig, _ account: String, environment: AppStoreEnvironment = .production) throws -> String {
        try rig.buy(account, token: nil, product: "vip.monthly", environment: environment, type: "Auto-Renewable Subscription")
            .originalTransactionID
    }

    static func expires(_ rig: IAPRig, _ id: String) throws -> Int64 {
        try #require(rig.appStore.subscription(originalTransactionID: id)).expiresDate
    }

    static func audit(_ rig: IAPRig) async throws -> [NewAuditEntry] {
        try await rig.store.auditEntries(AuditQuery(action: "api_extend_subscription"), limit: 50, before: nil).entries.map(\.entry)
    }

    @Test("Support extends an active subscription once per request_id, Apple's yearly limit is a 409, and the audit log says what was extended",
          arguments: StoreKind.all)
    func supportExtendsOncePerRequestAndIsAudited(store: StoreKind) async throws {
        try await IAPEndToEndTests.withRig(.inProcess, store: store) { rig in
            let id = try Self.subscribe(rig, "apple-extend")
            let before = try Self.expires(rig, id)
            let requestID = UUID().uuidString.lowercased()
            let first = try await Self.extend(rig, id, #"{"days":7,"reason":3,"request_id":"\#(requestID)"}"#)
            #expect(first.status == 200, "\(first.json)")
            let moved = before + 7 * 86_400_000
            #expect(try Self.expires(rig, id) == moved)
            #expect(first.json["effective_date"] as? String
                == Timestamp.rfc3339(Date(timeIntervalSince1970: Double(moved) / 1000)))
            #expect(first.json["success"] as? Bool == true && first.json["environment"] as? String == "Production")
            #expect(first.json["original_transaction_id"] as? String == id && first.json["request_id"] as? String == requestID)
            #expect(first.json["days"] as? Int == 7 && first.json["reason"] as? Int == 3)

            // The same request again (a tool that got no answer repeats it): the same answer, no more days.
            let repeated = try await Self.extend(rig, id, #"{"days":7,"reason":3,"request_id":"\#(requestID)"}"#)
            #expect(repeated.status == 200 && repeated.json["effective_date"] as? String == first.json["effective_date"] as? String)
            #expect(try Self.expires(rig, id) == moved)

            // A second extension this year is allowed; a third is Apple's refusal, said plainly.
            #expect(try await Self.extend(rig, id, #"{"days":1,"reason":1}"#).status == 200)
            #expect(try Self.expires(rig, id) == moved + 86_400_000)
            let third = try await Self.extend(rig, id, #"{"days":1,"reason":1}"#)
            #expect(third.status == 409 && third.error?["code"] as? String == "extension_refused")
            #expect((third.error?["message"] as? String)?.contains("twice") == true, "\(third.json)")
            #expect(try Self.expires(rig, id) == moved + 86_400_000)

            let entries = try await Self.audit(rig)
            #expect(entries.count == 4)
            #expect(entries.allSatisfy { $0.target == "original_transaction_id=\(id)" && $0.actor.hasPrefix("support token") })
            #expect(entries.filter { $0.outcome == "ok" }.count == 3)
            #expect(entries.contains { $0.detail.contains("asked Apple to extend 7 days (service issue or outage)") && $0.detail.contains(requestID) },
                    "\(entries.map(\.detail))")
            #expect(entries.contains { $0.outcome == "extension_refused" })
        }
    }

    @Test("Bad days, reasons, request ids and ids are 400, an unknown or non-subscription id 404, other tokens refused, and the renewal date stays")
    func refusalsChangeNothing() async throws {
        try await IAPEndToEndTests.withRig(.inProcess) { rig in
            let id = try Self.subscribe(rig, "apple-refused")
            let course = try rig.buy("apple-refused", token: nil).originalTransactionID
            let before = try Self.expires(rig, id)
            let cases: [(String, String, Int, String, String?)] = [
                (id, #"{"days":0,"reason":1}"#, 400, "invalid_request", "days"),
                (id, #"{"days":91,"reason":1}"#, 400, "invalid_request", "days"),
                (id, #"{"days":"7","reason":1}"#, 400, "invalid_request", "days"),
                (id, #"{"reason":1}"#, 400, "invalid_request", "days"),
                (id, #"{"days":7,"reason":4}"#, 400, "invalid_request", "reason"),
                (id, #"{"days":7}"#, 400, "invalid_request", "reason"),
                (id, #"{"days":7,"reason":1,"request_id":"again"}"#, 400, "invalid_request", "request_id"),
                (id, #"{"days":7,"reason":1,"note":"x"}"#, 400, "invalid_request", "note"),
                (id, "[]", 400, "invalid_request", nil),
                ("12ab", #"{"days":7,"reason":1}"#, 400, "invalid_request", "original_transaction_id"),
                ("999999999999", #"{"days":7,"reason":1}"#, 404, "subscription_not_found", "original_transaction_id"),
                (course, #"{"days":7,"reason":1}"#, 404, "subscription_not_found", "original_transaction_id"),
            ]
            for (target, body, status, code, field) in cases {
                let answer = try await Self.extend(rig, target, body)
                #expect(answer.status == status, "\(target) \(body): \(answer.json)")
                #expect(answer.error?["code"] as? String == code, "\(target) \(body)")
                #expect(answer.error?["field"] as? String == field, "\(target) \(body)")
            }
            let good = #"{"days":7,"reason":1}"#
            #expect(try await Self.extend(rig, id, good, token: GatewayRig.client).status == 403)
            #expect(try await Self.extend(rig, id, good, token: rig.token("apple-refused")).status == 403)
            let audited = try await Self.audit(rig).count
            #expect(try await Self.extend(rig, id, good, token: nil).status == 401)
            #expect(try await Self.audit(rig).count == audited)
            #expect(try Self.expires(rig, id) == before)
        }
    }

    @Test("A sandbox subscription the gateway has not seen is found in the sandbox after production does not know it")
    func aSandboxSubscriptionIsExtendedInTheSandbox() async throws {
        try await IAPEndToEndTests.withRig(.inProcess) { rig in
            let id = try Self.subscribe(rig, "apple-sandbox", environment: .sandbox)
            let before = try Self.expires(rig, id)
            let answer = try await Self.extend(rig, id, #"{"days":3,"reason":2}"#)
            #expect(answer.status == 200 && answer.json["environment"] as? String == "Sandbox", "\(answer.json)")
            #expect(try Self.expires(rig, id) == before + 3 * 86_400_000)
        }
    }

    @Test("Without the In-App Purchase key the route answers 503 appstore_key_missing; with App Store purchases off, 404")
    func withoutTheKeyOrTheAppStore() async throws {
        try await IAPEndToEndTests.withRig(.inProcess, serverAPI: false) { rig in
            let answer = try await Self.extend(rig, "2000000000000001", #"{"days":7,"reason":1}"#)
            #expect(answer.status == 503 && answer.error?["code"] as? String == "appstore_key_missing")
            #expect(try await Self.audit(rig).first?.outcome == "appstore_key_missing")
        }
        let rig = try await GatewayRig.start(.inProcess)
        defer { Task { await rig.stop() } }
        let off = try await rig.send(.post, Self.path("2000000000000001"), token: GatewayRig.support, body: #"{"days":7,"reason":1}"#)
        #expect(off.status == 404 && off.error?["code"] as? String == "not_found")
    }
}
