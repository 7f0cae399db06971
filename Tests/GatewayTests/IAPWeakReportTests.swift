// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Foundation
@testable import Gateway
import HTTP
import StorageCore
import TestSupport
import Testing

/// A report that does not prove possession (a bare transaction id, a receipt whose signature was not
/// verified) never credits a purchase to a reporter the gateway cannot tie to it: the outside
/// review's "take another user's waiting purchase by naming its id".
@Suite(.serialized)
struct IAPWeakReportTests {
    typealias E2E = IAPEndToEndTests

    static func withRig(_ mode: GatewayRig.Mode = .inProcess, verifiedReceipts: Bool = true,
                        _ body: (IAPRig) async throws -> Void) async throws {
        try await E2E.withRig(mode, verifiedReceipts: verifiedReceipts, body)
    }

    @Test("A bare transaction id of another user's interrupted purchase credits nobody and the owner's signed report still does",
          arguments: GatewayRig.Mode.allCases)
    func aBareIdOfAnotherUsersWaitingPurchaseCreditsNobody(mode: GatewayRig.Mode) async throws {
        try await Self.withRig(mode) { rig in
            let victims = try await rig.createOrder("victim")
            // The thief has an open order of the same product too (凑单 must not take it).
            let thiefs = try await rig.createOrder("thief")
            let (_, completed) = try rig.appStore.interruptedPurchase(SimulatedPurchase(
                user: "apple-victim", productID: IAPRig.appleProduct, appAccountToken: UUID(uuidString: E2E.token(victims))))
            #expect(completed.appAccountToken == nil)
            // Its notification arrives; nobody is known, the ledger row waits.
            #expect(try await eventually { try await rig.store.appleTransaction(completed.transactionID) != nil })
            let stolen = try await rig.report("thief", ["transaction_id": completed.transactionID])
            #expect(stolen.status == 409)
            #expect((stolen.json["error"] as? [String: Any])?["code"] as? String == "transaction_unclaimed")
            #expect(stolen.json["finish_transaction"] as? Bool == false)
            #expect(try await rig.order(E2E.number(thiefs))?.state == .notPay)
            #expect(try await rig.store.appleTransaction(completed.transactionID)?.outTradeNo == nil)
            // Support sees it waiting on the attention list.
            let attention = try await rig.gateway.send(.get, "/v1/support/attention", token: GatewayRig.support)
            let waiting = try #require(attention.json["unclaimed_transactions"] as? [[String: Any]])
            #expect(waiting.map { $0["transaction_id"] as? String } == [completed.transactionID])
            // The owner's device reports the signed transaction: credited to the owner's order.
            let owner = try await rig.report("victim", ["signed_transaction": completed.signedTransactionInfo])
            #expect(owner.status == 200 && owner.json["credited_user_id"] as? String == "victim")
            #expect(E2E.order(owner)["out_trade_no"] as? String == E2E.number(victims))
            // Now the thief's guess is answered only credited_elsewhere.
            let again = try await rig.report("thief", ["transaction_id": completed.transactionID])
            #expect(again.status == 200 && again.json["credited_elsewhere"] as? Bool == true)
            let after = try await rig.gateway.send(.get, "/v1/support/attention", token: GatewayRig.support)
            #expect((after.json["unclaimed_transactions"] as? [Any])?.isEmpty == true)
        }
    }

    @Test("A bare transaction id still credits the reporter when its token names the reporter's order")
    func aBareIdWhoseTokenNamesTheReportersOrderCredits() async throws {
        try await Self.withRig { rig in
            E2E.dropNotifications(rig)
            let created = try await rig.createOrder("user-a")
            let bought = try rig.buy("apple-a", token: E2E.token(created))
            let answer = try await rig.report("user-a", ["transaction_id": bought.transactionID])
            #expect(answer.status == 200 && answer.json["matched_by"] as? String == "app_account_token")
            #expect(try await rig.order(E2E.number(created))?.state == .success)
        }
    }

    @Test("A token-less purchase reported by id alone credits nobody, and a verified receipt of it credits the reporter")
    func aTokenlessPurchaseNeedsEvidenceOfPossession() async throws {
        try await Self.withRig { rig in
            E2E.dropNotifications(rig)
            let bought = try rig.buy("apple-a", token: nil)
            let weak = try await rig.report("user-a", ["transaction_id": bought.transactionID])
            #expect(weak.status == 409 && weak.json["finish_transaction"] as? Bool == false)
            let receipt = try await rig.report("user-a", ["receipt": bought.receipt, "transaction_id": bought.transactionID])
            #expect(receipt.status == 200 && receipt.json["credited_user_id"] as? String == "user-a")
            let words = try await rig.store.events(E2E.number(E2E.order(receipt))).map(\.detail).joined(separator: "\n")
            #expect(words.contains("PKCS #7 signature verified"))
        }
    }

    @Test("Without a receipt root, a receipt read locally is weak evidence and credits no token-less purchase")
    func anUnverifiedReceiptIsWeakEvidence() async throws {
        try await Self.withRig(verifiedReceipts: false) { rig in
            E2E.dropNotifications(rig)
            _ = try await rig.createOrder("thief")
            let bought = try rig.buy("apple-a", token: nil)
            let answer = try await rig.report("thief", ["receipt": bought.receipt, "transaction_id": bought.transactionID])
            #expect(answer.status == 409)
            #expect((answer.json["error"] as? [String: Any])?["code"] as? String == "transaction_unclaimed")
        }
    }

    @Test("A receipt signed under another root is refused as invalid signed data and changes nothing")
    func aForgedReceiptIsRefused() async throws {
        try await Self.withRig { rig in
            E2E.dropNotifications(rig)
            let bought = try rig.buy("apple-a", token: nil)
            let forged = ReceiptIssuer(pki: SimulatorPKI(), bundleID: rig.appStore.configuration.bundleID)
                .receipt(for: [try #require(rig.appStore.transaction(bought.transactionID))], now: Date())
            let answer = try await rig.report("user-a", ["receipt": forged, "transaction_id": bought.transactionID])
            #expect(answer.status == 422)
            #expect((answer.json["error"] as? [String: Any])?["code"] as? String == "invalid_signed_data")
            #expect(try await rig.store.appleTransaction(bought.transactionID) == nil)
        }
    }

    @Test("A purchase report past the route's cap is a JSON 413 that tells the app to keep the transaction")
    func anOversizedReportIsAJSON413WithFinishFalse() async throws {
        try await Self.withRig(.sockets) { rig in
            let body = #"{"transaction_id":"1","receipt":""# + String(repeating: "A", count: GatewayAPI.reportBodyLimit) + #""}"#
            let answer = try await rig.gateway.send(.post, "/v1/iap/transactions", token: GatewayRig.client, body: body)
            #expect(answer.status == 413)
            #expect((answer.json["error"] as? [String: Any])?["code"] as? String == "payload_too_large")
            #expect(answer.json["finish_transaction"] as? Bool == false)
        }
    }
}
