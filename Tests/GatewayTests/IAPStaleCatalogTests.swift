// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Foundation
@testable import Gateway
import HTTP
import StorageCore
import StoreTestSupport
import Testing

/// An App Store purchase reported to a gateway whose catalog is behind the database's (another
/// instance reloaded first): the order the credit would make is made only under terms the
/// database holds. Until this gateway is reloaded the purchase is refused (503 `catalog_changed`,
/// `finish_transaction` false, nothing written): the app keeps it and reports it again, Apple
/// sends its notification again, and a gateway whose catalog is the bound one credits it.
struct IAPStaleCatalogTests {
    /// The rig's catalog, bound; then another gateway's catalog `other(products)`, bound after it.
    static func rig(_ store: StoreKind, other: ([CatalogProduct]) -> [CatalogProduct]) async throws -> IAPRig {
        let rig = try await IAPRig.start(.inProcess, store: store)
        let catalog = rig.gateway.services.context.catalog.catalog
        #expect(try await catalog.bind(in: rig.store, at: Date()) == nil)
        #expect(try await Catalog(products: other(catalog.products)).bind(in: rig.store, at: Date()) == nil)
        return rig
    }

    static func expectRefusedAndNothingWritten(_ rig: IAPRig, _ answer: GatewayRig.Response, _ bought: PurchaseReceipt,
                                               sourceLocation: SourceLocation = #_sourceLocation) async throws {
        #expect(answer.status == 503 && answer.error?["code"] as? String == "catalog_changed", "\(answer.json)",
                sourceLocation: sourceLocation)
        #expect(answer.json["finish_transaction"] as? Bool == false, "\(answer.json)", sourceLocation: sourceLocation)
        // The ledger may keep it as seen, credited to nothing.
        #expect(try await rig.store.appleTransaction(bought.transactionID)?.outTradeNo == nil, sourceLocation: sourceLocation)
        #expect(try await rig.store.orders(userID: "user-a", limit: 10, after: nil).orders.isEmpty, sourceLocation: sourceLocation)
    }

    @Test("A purchase of a product another gateway's reload removed is not made an order under the terms this gateway's catalog still gives",
          arguments: StoreKind.all)
    func aPurchaseOfAProductAnotherReloadRemovedIsRefused(store: StoreKind) async throws {
        let rig = try await Self.rig(store) { $0.filter { $0.id != IAPRig.product } }
        defer { Task { await rig.stop() } }
        let bought = try rig.buy("apple-a", token: nil)
        let answer = try await rig.report("user-a", ["signed_transaction": bought.signedTransactionInfo])
        try await Self.expectRefusedAndNothingWritten(rig, answer, bought)
    }

    @Test("A purchase of an App Store product another gateway's reload gave to a product is not recorded as one no product sells",
          arguments: StoreKind.all)
    func aPurchaseOfAProductAnotherReloadAddedIsRefused(store: StoreKind) async throws {
        let rig = try await Self.rig(store) {
            $0 + [CatalogProduct(id: "gold-ios", amount: 6800, description: "Gold", appleProductID: "com.example.gold",
                                 kind: .membership(MembershipPeriod("P1M")!), entitlement: "gold")]
        }
        defer { Task { await rig.stop() } }
        let bought = try rig.buy("apple-a", token: nil, product: "com.example.gold", price: 68_000, currency: "CNY")
        let answer = try await rig.report("user-a", ["signed_transaction": bought.signedTransactionInfo])
        try await Self.expectRefusedAndNothingWritten(rig, answer, bought)
    }

    @Test("A purchase of an App Store product id another gateway's reload moved to another product is not credited to the product this gateway's catalog still gives it",
          arguments: StoreKind.all)
    func aPurchaseOfAnIDAnotherReloadMovedIsRefused(store: StoreKind) async throws {
        let rig = try await Self.rig(store) { products in
            products.map { product in
                var moved = product
                if product.id == IAPRig.product { moved.appleProductID = "com.example.courses.swift101.v2" }
                return moved
            } + [CatalogProduct(id: "gold-ios", amount: 6800, description: "Gold", appleProductID: IAPRig.appleProduct,
                                kind: .membership(MembershipPeriod("P1M")!), entitlement: "gold")]
        }
        defer { Task { await rig.stop() } }
        let bought = try rig.buy("apple-a", token: nil)
        let answer = try await rig.report("user-a", ["signed_transaction": bought.signedTransactionInfo])
        try await Self.expectRefusedAndNothingWritten(rig, answer, bought)
        // Nor is an iOS order made for it under the id this gateway's catalog still gives it.
        let create = try await rig.gateway.send(.post, "/v1/iap/orders", token: rig.token("user-a"),
                                                body: #"{"product_id":"\#(IAPRig.product)"}"#)
        #expect(create.status == 503 && create.error?["code"] as? String == "catalog_changed", "\(create.json)")
    }
}
