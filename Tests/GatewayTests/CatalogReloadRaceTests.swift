// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import HTTP
import StorageCore
import StoreTestSupport
import Synchronization
import TestSupport
import Testing

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
}
