// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import HTTP
import SimulatorKit
import StorageCore
import StoreTestSupport
import Synchronization
import TestSupport
import Testing
import WeChatPay

/// A create and a catalog reload at the same moment: an order naming a product the catalog does
/// not have is refused when the catalog being bound reads its id as one of its names, so that no
/// order slips in between the reload's scan of the orders and the new catalog coming into force.
struct CatalogReloadRaceTests {
    /// The store, with the binding held until the test lets it go: the reload stands between
    /// taking the new catalog in hand and binding it.
    final class HeldBinding: BindingStore {
        let store: TestStore
        let entered = Atomic<Bool>(false)
        let release: AsyncStream<Void>

        init(store: TestStore, release: AsyncStream<Void>) {
            self.store = store
            self.release = release
        }

        func bindOwner(_ owner: DatabaseOwner, at: Date) async throws(StorageError) -> DatabaseOwner {
            try await store.bindOwner(owner, at: at)
        }

        func bindProductTerms(_ terms: [ProductTerms], at: Date, reading: NameReading?, adopting: Adoption?)
            async throws(StorageError) -> [ProductTermsChange]
        {
            entered.store(true, ordering: .releasing)
            for await _ in release { break }
            return try await store.bindProductTerms(terms, at: at, reading: reading, adopting: adopting)
        }
    }

    @Test func anOrderForANameTheCatalogBeingBoundGivesIsRefusedAndTheReloadGoesThrough() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("catalog-race-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"products":[{"id":"swift-101","amount":990,"description":"Swift"}]}"#.utf8).write(to: file)
        let rig = try await GatewayRig.start(.inProcess, environment: ["GATEWAY_CATALOG": file.path])
        do {
            let source = rig.services.context.catalog
            #expect(try await Catalog.load(path: file.path).bind(in: rig.store, at: Date()) == nil)
            try Data(#"""
                {"products":[{"id":"swift-101","amount":990,"description":"Swift"},
                 {"id":"zinc-month","amount":3000,"description":"Zinc","type":"membership","period":"P1M","entitlement":"zinc"}]}
                """#.utf8).write(to: file)
            let (release, letGo) = AsyncStream<Void>.makeStream()
            let held = HeldBinding(store: rig.store, release: release)
            let reload = Task { await source.reload(binding: held, at: Date()) }
            #expect(await eventually { held.entered.load(ordering: .acquiring) })
            // The catalog in force does not have `zinc`; the one being bound reads `zinc-pro` as it.
            let body = #"{"amount":100,"description":"x","product_id":"zinc-pro","user_id":"ur1","client_ip":"203.0.113.7","out_trade_no":"race-1"}"#
            let refused = try await rig.send(.post, "/v1/orders", body: body)
            #expect(refused.status == 400 && refused.error?["field"] as? String == "product_id", "\(refused.json)")
            #expect(try await rig.store.order("race-1") == nil)
            letGo.yield()
            letGo.finish()
            guard case .success = await reload.value else {
                Issue.record("the reload was refused")
                await rig.stop()
                return
            }
            // In force now: refused as any create of such an id is.
            #expect(try await rig.send(.post, "/v1/orders", body: body).status == 400)
            // An id nobody's names read as is created while a reload is held, as ever.
            let other = #"{"amount":100,"description":"x","product_id":"copper","user_id":"ur1","client_ip":"203.0.113.7","out_trade_no":"race-2"}"#
            #expect(try await rig.send(.post, "/v1/orders", body: other).status == 201)
        } catch {
            await rig.stop()
            throw error
        }
        await rig.stop()
    }

    /// Several gateways on one database reload one after the other: a gateway whose catalog is
    /// behind sells a product only under the terms the database holds for it. Another's reload may
    /// have left out an unsold product (its terms forgotten) or changed what it grants; a sale
    /// priced by the old catalog would have granted whatever the database says then (for a
    /// forgotten membership, a course of its id for ever).
    @Test(arguments: StoreKind.all) func aGatewayWhoseCatalogIsBehindTheDatabasesDoesNotSellAProductAnotherChanged(_ kind: StoreKind)
        async throws
    {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("catalog-behind-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        let course = #"{"id":"swift-101","amount":990,"description":"Swift"}"#
        func zinc(_ period: String) -> String {
            #"{"id":"zinc-month","amount":3000,"description":"Zinc","type":"membership","period":"\#(period)","entitlement":"zinc"}"#
        }
        func catalog(_ products: String...) throws -> Catalog {
            try Data(#"{"products":[\#(products.joined(separator: ","))]}"#.utf8).write(to: file)
            return try Catalog.load(path: file.path)
        }
        _ = try catalog(course, zinc("P1M"))
        let rig = try await GatewayRig.start(.inProcess, store: kind, environment: ["GATEWAY_CATALOG": file.path])
        do {
            #expect(try await rig.services.context.catalog.catalog.bind(in: rig.store, at: Date()) == nil)
            func create(_ number: String, _ productID: String) async throws -> GatewayRig.Response {
                try await rig.send(.post, "/v1/orders", body: #"{"product_id":"\#(productID)","user_id":"ur1","client_ip":"203.0.113.7","out_trade_no":"\#(number)"}"#)
            }
            // Another gateway reloads a catalog without the unsold membership.
            #expect(try await catalog(course).bind(in: rig.store, at: Date()) == nil)
            let refused = try await create("behind-1", "zinc-month")
            #expect(refused.status == 503 && refused.error?["code"] as? String == "catalog_changed", "\(refused.json)")
            // No time on its own mends it: nothing invites a client to hammer this gateway.
            #expect(refused.headers["Retry-After"] == nil)
            #expect(try await rig.store.order("behind-1") == nil)
            #expect(try await create("behind-2", "swift-101").status == 201)
            // Another makes it a year: still not sold here under the month.
            #expect(try await catalog(course, zinc("P1Y")).bind(in: rig.store, at: Date()) == nil)
            #expect(try await create("behind-1", "zinc-month").status == 503)
            #expect(try await rig.store.order("behind-1") == nil)
            // Reloaded to the file the others have, this gateway sells it under the year.
            guard case .success = await rig.services.context.catalog.reload(binding: rig.store, at: Date()) else {
                Issue.record("the reload was refused")
                await rig.stop()
                return
            }
            #expect(try await create("behind-1", "zinc-month").status == 201)
            // Sold now: the month is refused to every gateway's reload.
            #expect(try await catalog(course, zinc("P1M")).bind(in: rig.store, at: Date()) != nil)
        } catch {
            await rig.stop()
            throw error
        }
        await rig.stop()
    }

    /// A gateway not yet reloaded answers a buyer's entitlements from the terms the database holds
    /// for the sale, not from its own catalog: another instance reloaded first, made an unsold
    /// year's pass a month's, and sold it. Its answer (and its webhooks) would otherwise give a
    /// year for a month's price until it is reloaded, and the webhook's year would stay.
    @Test(arguments: StoreKind.all) func aGatewayWhoseCatalogIsBehindAnswersEntitlementsFromTheTermsOnRecord(_ kind: StoreKind)
        async throws
    {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("catalog-held-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"products":[{"id":"gold","amount":100,"description":"Gold","type":"membership","period":"P1Y"}]}"#.utf8)
            .write(to: file)
        let rig = try await GatewayRig.start(.inProcess, store: kind, environment: ["GATEWAY_CATALOG": file.path])
        do {
            #expect(try await rig.services.context.catalog.catalog.bind(in: rig.store, at: Date()) == nil)
            // Another gateway's reload makes the unsold pass a month's, and it sells one.
            let month = Catalog(products: [CatalogProduct(id: "gold", amount: 100, description: "Gold",
                                                          kind: .membership(try #require(MembershipPeriod("P1M"))))])
            #expect(try await month.bind(in: rig.store, at: Date()) == nil)
            let now = rig.clock.now()
            var record = OrderRecord(
                outTradeNo: "held-1", amount: 100, description: "Gold", clientIP: "203.0.113.7", userID: "buyer",
                productID: "gold", signType: "HMAC-SHA256", timeExpire: BeijingTime.format(now + 7200), expiresAt: now + 7200,
                createdAt: now, parametersDigest: "held-1")
            record.app = "app"
            _ = try await rig.store.create(record, event: NewOrderEvent(kind: "created", detail: "test", at: now),
                                           terms: .catalog("membership P1M gold"))
            let paidAt = Date(timeIntervalSince1970: (now.timeIntervalSince1970 * 1000).rounded(.down) / 1000)
            _ = try await rig.store.transition("held-1", to: .success, from: OrderState.open, transactionID: "4200000000-held-1",
                                               paidAt: paidAt, expectedAmount: 100, detail: "test", at: now)
            let answer = try await rig.send(.get, "/v1/users/buyer/entitlements")
            let gold = (answer.json["entitlements"] as? [[String: Any]])?.first
            #expect(gold?["expires_at"] as? String == Timestamp.rfc3339(try #require(MembershipPeriod("P1M")).end(from: paidAt)),
                    "\(answer.json)")
            // Its own catalog still says a year: what it sells stays refused until it is reloaded.
            #expect(rig.services.context.catalog.catalog.product("gold")?.kind == .membership(try #require(MembershipPeriod("P1Y"))))
        } catch {
            await rig.stop()
            throw error
        }
        await rig.stop()
    }

    /// Another gateway's reload gives a new name (an entitlement `platinum`): a gateway not yet
    /// reloaded does not sell a product id outside its catalog that reads as it. Its paid order
    /// would grant `platinum` for ever where the catalog lacks the name, and nothing once every
    /// catalog has it; an up-to-date gateway refuses such an id (400), this one cannot know it.
    @Test(arguments: StoreKind.all) func aGatewayWhoseCatalogIsBehindDoesNotSellAnIdThatReadsAsANameAnotherGave(_ kind: StoreKind)
        async throws
    {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("catalog-names-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"products":[{"id":"swift-101","amount":990,"description":"Swift"}]}"#.utf8).write(to: file)
        let rig = try await GatewayRig.start(.inProcess, store: kind, environment: ["GATEWAY_CATALOG": file.path])
        do {
            #expect(try await rig.services.context.catalog.catalog.bind(in: rig.store, at: Date()) == nil)
            let platinum = Catalog(products: [
                CatalogProduct(id: "swift-101", amount: 990, description: "Swift"),
                CatalogProduct(id: "plat-month", amount: 5000, description: "Platinum",
                               kind: .membership(try #require(MembershipPeriod("P1M"))), entitlement: "platinum"),
            ])
            #expect(try await platinum.bind(in: rig.store, at: Date()) == nil)
            func create(_ number: String, _ productID: String) async throws -> GatewayRig.Response {
                try await rig.send(.post, "/v1/orders", body: #"{"amount":1,"description":"x","product_id":"\#(productID)","user_id":"ur1","client_ip":"203.0.113.7","out_trade_no":"\#(number)"}"#)
            }
            for (number, id) in [("names-1", "platinum"), ("names-2", "PLATINUM"), ("names-3", "platinum-lifetime")] {
                let refused = try await create(number, id)
                #expect(refused.status == 503 && refused.error?["code"] as? String == "catalog_changed", "\(id): \(refused.json)")
                #expect(try await rig.store.order(number) == nil)
            }
            #expect(try await create("names-4", "copper").status == 201)
        } catch {
            await rig.stop()
            throw error
        }
        await rig.stop()
    }
}
