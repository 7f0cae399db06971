// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Foundation
@testable import Gateway
@testable import GatewayConsole
import HTTP
import SimulatorKit
import StorageCore
import StoreTestSupport
import TestSupport
import Testing

/// The attention list can be worked off: an unclaimed App Store purchase (a weak report nothing
/// ties to a user) is assigned by support to its user's order — the same credit as a verified
/// purchase, refused where that credit would be wrong, audited with its reason — after which the
/// app's next report may finish the transaction; and an order's attention flags are marked handled.
@Suite(.serialized)
struct UnclaimedPurchaseTests {
    typealias E2E = IAPEndToEndTests

    /// A rig whose console has a viewer (vera) and a refunder (rita).
    static func withRig(_ mode: GatewayRig.Mode, store: StoreKind, _ body: (IAPRig) async throws -> Void) async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("console-users-\(UUID().uuidString)").path
        let hash = ConsoleRig.hash(ConsoleRig.password)
        try ConsoleUserFile.update(path: file) { users in
            users = [ConsoleUser(name: "vera", role: .viewer, password: hash), ConsoleUser(name: "rita", role: .refunder, password: hash)]
        }
        let rig = try await IAPRig.start(mode, store: store, consoleUsers: file)
        do {
            try await body(rig)
        } catch {
            Issue.record("\(error)")
        }
        await rig.stop()
        try? FileManager.default.removeItem(atPath: file)
        try? FileManager.default.removeItem(atPath: file + ".lock")
    }

    /// A token-less purchase of `appleAccount` whose notification is lost, reported by `user` with a
    /// bare transaction id: 409 transaction_unclaimed, its ledger row waiting. Returns its id.
    static func unclaimed(_ rig: IAPRig, _ user: String, appleAccount: String = "apple-a",
                          product: String = IAPRig.appleProduct) async throws -> String {
        let bought = try rig.buy(appleAccount, token: nil, product: product)
        let weak = try await rig.report(user, ["transaction_id": bought.transactionID])
        #expect(weak.status == 409 && weak.json["finish_transaction"] as? Bool == false)
        #expect((weak.json["error"] as? [String: Any])?["code"] as? String == "transaction_unclaimed")
        return bought.transactionID
    }

    static func assign(_ rig: IAPRig, _ id: String, _ outTradeNo: String, reason: String? = "customer sent Apple's receipt e-mail")
        async throws -> GatewayRig.Response
    {
        var body: [String: String] = ["out_trade_no": outTradeNo]
        body["reason"] = reason
        let json = String(decoding: try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys]), as: UTF8.self)
        return try await rig.gateway.send(.post, "/v1/support/apple-transactions/\(id)/assign", token: GatewayRig.support, body: json)
    }

    static func code(_ response: GatewayRig.Response) -> String? { (response.json["error"] as? [String: Any])?["code"] as? String }

    static func unclaimedIDs(_ rig: IAPRig) async throws -> [String] {
        let attention = try await rig.gateway.send(.get, "/v1/support/attention", token: GatewayRig.support)
        return (attention.json["unclaimed_transactions"] as? [[String: Any]] ?? []).compactMap { $0["transaction_id"] as? String }
    }

    @Test("Support assigns an unclaimed purchase to its user's order: credited once through the door, audited with the reason, off the list, and the app's next report may finish",
          arguments: StoreKind.all)
    func anAssignedPurchaseIsCreditedOnceAndTheNextReportFinishes(store: StoreKind) async throws {
        try await Self.withRig(.inProcess, store: store) { rig in
            E2E.dropNotifications(rig)
            let order = E2E.number(try await rig.createOrder("user-a"))
            let id = try await Self.unclaimed(rig, "user-a")
            #expect(try await Self.unclaimedIDs(rig) == [id])

            let assigned = try await Self.assign(rig, id, order, reason: "  customer sent Apple's receipt e-mail MV12345  ")
            #expect(assigned.status == 200, "\(assigned.json)")
            #expect(assigned.json["replayed"] as? Bool == false)
            let view = try #require(assigned.json["order"] as? [String: Any])
            #expect(view["state"] as? String == "SUCCESS" && view["apple_transaction_id"] as? String == id)
            #expect(try await rig.order(order)?.state == .success)
            #expect(try await rig.store.appleTransaction(id)?.outTradeNo == order)
            #expect(try await rig.store.outboxEvents(order).filter { $0.type == "order.paid" }.count == 1)
            let timeline = try await rig.store.events(order).map(\.detail).joined(separator: "\n")
            #expect(timeline.contains("assigned by support (support token") && timeline.contains("MV12345"), "\(timeline)")
            #expect(try await Self.unclaimedIDs(rig).isEmpty)

            // The audit entry keeps who, which order, which transaction and why.
            let entries = try await rig.store.auditEntries(AuditQuery(action: "api_assign_transaction"), limit: 10, before: nil)
                .entries.map(\.entry)
            let entry = try #require(entries.first)
            #expect(entry.outTradeNo == order && entry.target == id && entry.outcome == "ok" && entry.actor.hasPrefix("support token"))
            #expect(entry.detail.contains("MV12345"), "\(entry.detail)")

            // The app reports it again (it kept the transaction): now it may finish.
            let again = try await rig.report("user-a", ["transaction_id": id])
            #expect(again.status == 200 && again.json["finish_transaction"] as? Bool == true, "\(again.json)")

            // Assigning it again to the same order is the same answer; to another order, refused.
            let twice = try await Self.assign(rig, id, order)
            #expect(twice.status == 200 && twice.json["replayed"] as? Bool == true)
            #expect(try await rig.store.outboxEvents(order).filter { $0.type == "order.paid" }.count == 1)
            let other = E2E.number(try await rig.createOrder("user-a"))
            let elsewhere = try await Self.assign(rig, id, other)
            #expect(elsewhere.status == 409 && Self.code(elsewhere) == "transaction_already_credited")
            #expect(try await rig.order(other)?.state == .notPay)
        }
    }

    @Test("An assignment is refused, changing nothing, for an unknown id, no reason, another product, a paid order, another user's purchase, a refunded one, and a WeChat order",
          arguments: StoreKind.all)
    func assignmentsThatWouldBeWrongAreRefused(store: StoreKind) async throws {
        try await Self.withRig(.inProcess, store: store) { rig in
            E2E.dropNotifications(rig)
            let open = E2E.number(try await rig.createOrder("user-a"))
            let id = try await Self.unclaimed(rig, "user-a")

            #expect(Self.code(try await Self.assign(rig, "2000000999999999", open)) == "apple_transaction_not_found")
            let noReason = try await Self.assign(rig, id, open, reason: nil)
            #expect(noReason.status == 400 && (noReason.json["error"] as? [String: Any])?["field"] as? String == "reason")
            #expect(Self.code(try await Self.assign(rig, id, open, reason: "   ")) == "invalid_request")
            // One rule and one message for every way a reason is wrong: missing, empty, blank,
            // too long (201 characters of 3 bytes each; 900 bytes), a control character, a
            // text-direction override or isolate (it would turn the audit line around), an
            // invisible character, a line separator, not a string, null.
            let wrongReasons: [Any?] = [nil, "", "   ", String(repeating: "课", count: 201), String(repeating: "x", count: 900),
                                        "a\u{7}b", "ok \u{202E}evil", "a\u{2066}b", "zero\u{200B}width", "a\u{2028}b", 1, NSNull()]
            for reason in wrongReasons {
                var body: [String: Any] = ["out_trade_no": open]
                body["reason"] = reason
                let json = String(decoding: try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys]), as: UTF8.self)
                let answer = try await rig.gateway.send(.post, "/v1/support/apple-transactions/\(id)/assign", token: GatewayRig.support,
                                                        body: json)
                let error = answer.json["error"] as? [String: Any]
                #expect(answer.status == 400 && error?["field"] as? String == "reason"
                        && error?["message"] as? String == "reason is required: 1 to 200 characters saying why, no control, text-direction or invisible characters",
                        "\(json): \(answer.json)")
            }
            // Each refusal is audited with what was tried, and a refused reason's control and
            // text-direction characters are U+FFFD there: no audit line reads backwards.
            let audited = try await rig.store.auditEntries(AuditQuery(), limit: 100, before: nil).entries.map(\.entry.detail)
            #expect(audited.contains { $0.contains("ok \u{FFFD}evil") }, "\(audited)")
            #expect(!audited.contains { $0.unicodeScalars.contains { [0x202E, 0x2066, 0x07].contains($0.value) } })
            #expect(Self.code(try await Self.assign(rig, id, "no-such-order-1")) == "order_not_found")

            // A purchase of another product than the order sells.
            let otherProduct = try await Self.unclaimed(rig, "user-a", product: "com.example.courses.other")
            let mismatch = try await Self.assign(rig, otherProduct, open)
            #expect(mismatch.status == 409 && Self.code(mismatch) == "order_not_assignable", "\(mismatch.json)")

            // An order another transaction paid.
            let paidOrder = try await rig.createOrder("user-b")
            let paying = try rig.buy("apple-b", token: E2E.token(paidOrder))
            #expect(try await rig.report("user-b", ["signed_transaction": paying.signedTransactionInfo]).status == 200)
            #expect(Self.code(try await Self.assign(rig, id, E2E.number(paidOrder))) == "order_not_assignable")

            // A purchase tied to other users: its App Store account paid user-c's order since, and
            // user-a had an order open for it when it was made; user-e, who had none, is neither.
            let tied = try await Self.unclaimed(rig, "user-a", appleAccount: "apple-c")
            let cOrder = try await rig.createOrder("user-c")
            let cPaid = try rig.buy("apple-c", token: E2E.token(cOrder))
            #expect(try await rig.report("user-c", ["signed_transaction": cPaid.signedTransactionInfo]).status == 200)
            let eOrder = E2E.number(try await rig.createOrder("user-e"))
            let wrongUser = try await Self.assign(rig, tied, eOrder)
            #expect(wrongUser.status == 409 && Self.code(wrongUser) == "order_not_assignable", "\(wrongUser.json)")
            #expect((wrongUser.json["error"] as? [String: Any])?["message"] as? String ?? "" != "")
            #expect(try await rig.order(eOrder)?.state == .notPay)

            // A purchase Apple refunded since (no notification came): Apple is asked first.
            let refunded = try await Self.unclaimed(rig, "user-a", appleAccount: "apple-d")
            _ = try rig.appStore.refund(transactionID: refunded)
            let refusedRefund = try await Self.assign(rig, refunded, open)
            #expect(refusedRefund.status == 409 && Self.code(refusedRefund) == "transaction_not_assignable")
            #expect(try await rig.store.appleTransaction(refunded)?.isRevoked == true)

            // A WeChat order.
            _ = try await rig.gateway.createOrder("wechat-order-1", amount: 990)
            #expect(Self.code(try await Self.assign(rig, id, "wechat-order-1")) == "order_not_assignable")

            // Nothing moved.
            #expect(try await rig.order(open)?.state == .notPay)
            #expect(try await rig.store.appleTransaction(id)?.outTradeNo == nil)
            #expect(try await Self.unclaimedIDs(rig).contains(id))
            // Every refusal is on record with its outcome.
            let outcomes = try await rig.store.auditEntries(AuditQuery(action: "api_assign_transaction"), limit: 50, before: nil)
                .entries.map(\.entry.outcome)
            #expect(Set(outcomes).isSuperset(of: ["apple_transaction_not_found", "invalid_request", "order_not_assignable",
                                                  "transaction_not_assignable", "order_not_found"]))
        }
    }

    @Test("Support marks an order's attention flags handled: it leaves the list, keeps handled. markers, and the timeline and audit log say who and why",
          arguments: StoreKind.all)
    func attentionFlagsAreMarkedHandled(store: StoreKind) async throws {
        try await Self.withRig(.inProcess, store: store) { rig in
            E2E.dropNotifications(rig)
            // A purchase with no open order: an order made for it, flagged matched_without_order.
            let bought = try rig.buy("apple-a", token: nil)
            let credited = try await rig.report("user-a", ["signed_transaction": bought.signedTransactionInfo])
            let order = E2E.number(E2E.order(credited))
            #expect(try await rig.order(order)?.flags.contains(.matchedWithoutOrder) == true)
            func listed() async throws -> [String] {
                let attention = try await rig.gateway.send(.get, "/v1/support/attention", token: GatewayRig.support)
                return (attention.json["orders"] as? [[String: Any]] ?? []).compactMap { $0["out_trade_no"] as? String }
            }
            #expect(try await listed() == [order])
            let path = "/v1/support/orders/\(order)/attention/handled"
            let s = GatewayRig.support
            #expect(try await rig.gateway.send(.post, path, token: s, body: "{}").status == 400)
            #expect(try await rig.gateway.send(.post, path, token: s, body: #"{"reason":"x","flags":["state_changed"]}"#).status == 400)
            #expect(try await rig.gateway.send(.post, path, token: s, body: #"{"reason":"x","flags":["unknown_product"]}"#).status == 409)
            #expect(try await rig.gateway.send(.post, "/v1/support/orders/nope-0001/attention/handled", token: s,
                                               body: #"{"reason":"x"}"#).status == 404)
            #expect(try await rig.gateway.send(.post, path, token: GatewayRig.client, body: #"{"reason":"x"}"#).status == 403)
            #expect(try await listed() == [order])

            let handled = try await rig.gateway.send(.post, path, token: s, body: #"{"reason":"course delivered by hand, ticket 881"}"#)
            #expect(handled.status == 200, "\(handled.json)")
            #expect(handled.json["flags"] as? [String] == ["handled.matched_without_order"])
            #expect(try await listed().isEmpty)
            let line = try #require(try await rig.store.events(order).last { $0.kind == "attention_handled" })
            #expect(line.detail.contains("matched_without_order") && line.detail.contains("ticket 881"), "\(line.detail)")
            let entry = try #require(try await rig.store.auditEntries(AuditQuery(action: "api_attention_handled"), limit: 10, before: nil)
                .entries.map(\.entry).first { $0.outcome == "ok" })
            #expect(entry.outTradeNo == order && entry.detail.contains("ticket 881"))
            #expect(entry.detail.contains("handled: matched_without_order"), "\(entry.detail)")
            // Again: nothing left to handle.
            let again = try await rig.gateway.send(.post, path, token: s, body: #"{"reason":"again"}"#)
            #expect(again.status == 409 && Self.code(again) == "no_attention_flag")
        }
    }

    @Test("In the console over sockets: the attention list leads to the purchase, a viewer cannot assign, a refunder assigns it with a reason and CSRF, and marks an order handled",
          arguments: StoreKind.all)
    func theConsoleAssignsAndMarksHandled(store: StoreKind) async throws {
        try await Self.withRig(.sockets, store: store) { rig in
            E2E.dropNotifications(rig)
            let order = E2E.number(try await rig.createOrder("user-a"))
            let id = try await Self.unclaimed(rig, "user-a")
            let purchase = "/console/apple-transactions/\(id)"

            let vera = ConsoleBrowser(rig: rig.gateway, language: "en")
            #expect(try await vera.signIn("vera").status == 303)
            #expect(try await vera.get("/console/attention").status == 200)
            #expect(vera.page.contains("href=\"\(purchase)\""))
            // The list tells the truth: nothing credits it by itself; what the customer and support can do.
            #expect(vera.page.contains("They are not credited by themselves") && vera.page.contains("assign it to that user"))
            #expect(!vera.page.contains("The app's signed report credits them"))
            // Searching for its transaction id (the customer wrote it to support) leads there too.
            #expect(try await vera.get("/console/?q=\(id)").status == 200)
            #expect(vera.page.contains("id=\"unclaimed-purchase-link\"") && vera.page.contains("href=\"\(purchase)\""))
            #expect(!vera.page.contains("id=\"no-results\""))
            #expect(try await vera.get(purchase).status == 200)
            #expect(vera.page.contains("id=\"assign-needs-role\"") && !vera.page.contains("id=\"assign\""))
            #expect(try await vera.post(purchase + "/assign", [("out_trade_no", order), ("reason", "r")]).status == 403)

            let rita = ConsoleBrowser(rig: rig.gateway, language: "en")
            #expect(try await rita.signIn("rita").status == 303)
            #expect(try await rita.get(purchase).status == 200)
            #expect(rita.page.contains("id=\"assign\""))
            // Without the CSRF token nothing happens.
            #expect(try await rita.post(purchase + "/assign", [("out_trade_no", order), ("reason", "r")], csrf: .none).status == 403)
            try await rita.get(purchase)
            // Without a reason: refused, the form shown again with what was typed.
            let noReason = try await rita.post(purchase + "/assign", [("out_trade_no", order), ("reason", " ")])
            #expect(noReason.status == 400 && rita.page.contains("Give a reason") && rita.field("out_trade_no") == order)
            // A refusal in the page's words, not the API's English sentence.
            let noOrder = try await rita.post(purchase + "/assign", [("out_trade_no", "no-such-order-2"), ("reason", "r")])
            #expect(noOrder.status == 404 && rita.page.contains("There is no such order.") && !rita.page.contains("no order with that"))
            #expect(try await rig.order(order)?.state == .notPay)
            let done = try await rita.post(purchase + "/assign", [("out_trade_no", order), ("reason", "receipt e-mail MV777 matches")])
            #expect(done.status == 303, "\(rita.page)")
            let location = done.headers["Location"] ?? ""
            #expect(location.hasPrefix("/console/orders/\(order)"))
            #expect(try await rita.get(location).status == 200)
            #expect(rita.page.contains("was assigned to this order and credited"))
            #expect(try await rig.order(order)?.state == .success)
            #expect(try await Self.unclaimedIDs(rig).isEmpty)
            try await rita.get(purchase)
            #expect(rita.page.contains("id=\"not-assignable\"") && rita.page.contains("href=\"/console/orders/\(order)\""))

            let entries = try await rig.store.auditEntries(AuditQuery(action: "assign_transaction"), limit: 20, before: nil).entries.map(\.entry)
            // The viewer's refused attempt names the purchase and the order it tried.
            let refused = try #require(entries.first { $0.actor == "vera" && $0.outcome == "forbidden" })
            #expect(refused.target == id && refused.outTradeNo == order, "\(refused)")
            #expect(entries.contains { $0.actor == "rita" && $0.outcome == "invalid_request" })
            let ok = try #require(entries.first { $0.outcome == "ok" })
            #expect(ok.actor == "rita" && ok.outTradeNo == order && ok.target == id && ok.detail.contains("MV777"), "\(ok)")
            #expect(ok.channel == "console" && ok.role == "refunder")

            // Marking an order handled: a purchase with no open order made one, flagged.
            let bought = try rig.buy("apple-z", token: nil)
            let made = E2E.number(E2E.order(try await rig.report("user-z", ["signed_transaction": bought.signedTransactionInfo])))
            let orderPath = "/console/orders/\(made)"
            try await vera.get(orderPath)
            #expect(!vera.page.contains("id=\"handle-attention\""))
            #expect(try await vera.post(orderPath + "/attention", [("reason", "r")]).status == 403)
            try await rita.get(orderPath)
            #expect(rita.page.contains("id=\"handle-attention\""))
            let marked = try await rita.post(orderPath + "/attention", [("reason", "delivered by hand")])
            #expect(marked.status == 303)
            try await rita.get(marked.headers["Location"] ?? orderPath)
            #expect(rita.page.contains("Marked handled") && !rita.page.contains("id=\"handle-attention\""))
            #expect(try await rig.order(made)?.flags == [OrderFlag.matchedWithoutOrder.handled])
            try await rita.get("/console/attention")
            #expect(!rita.page.contains(made))
            let handled = try await rig.store.auditEntries(AuditQuery(action: "attention_handled"), limit: 10, before: nil).entries.map(\.entry)
            #expect(handled.contains { $0.actor == "rita" && $0.outcome == "ok" && $0.detail.contains("delivered by hand")
                && $0.detail.contains("handled: matched_without_order") })
            #expect(handled.contains { $0.actor == "vera" && $0.outcome == "forbidden" && $0.outTradeNo == made })
        }
    }

    @Test("An assignment while Apple cannot be reached is a 503 in support's words, and assigns nothing")
    func anAssignmentWhileAppleIsDownAssignsNothing() async throws {
        try await Self.withRig(.inProcess, store: .sqlite) { rig in
            E2E.dropNotifications(rig)
            let order = E2E.number(try await rig.createOrder("user-a"))
            let id = try await Self.unclaimed(rig, "user-a")
            rig.appStore.apply(AppStoreFaultPlan(endpoints: ["*": AppStoreEndpointFaults(http5xxRate: 1)],
                                                 notify: NotifyFaults(dropRate: 1)))
            let down = try await Self.assign(rig, id, order)
            #expect(down.status == 503)
            #expect(Self.code(down) == "appstore_unavailable")
            let message = (down.json["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(message.contains("nothing was assigned") && !message.contains("keep the transaction"), "\(message)")
            #expect(try await rig.order(order)?.state == .notPay)
            #expect(try await Self.unclaimedIDs(rig) == [id])
        }
    }
}
