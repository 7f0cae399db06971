// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import StoreTestSupport
import Testing

/// What a database is bound to (`BindingStore`), in both stores alike.
struct BindingStoreTests {
    @Test(arguments: StoreKind.all) func theFirstOwnerBindsTheDatabaseAndEveryLaterOneIsToldWhoseItIs(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let merchant = DatabaseOwner(demo: false, mchID: "10000100")
            #expect(try await store.bindOwner(merchant, at: TestTime.at(1)) == merchant)
            #expect(try await store.bindOwner(DatabaseOwner(demo: true, mchID: "1900000109"), at: TestTime.at(2)) == merchant)
            #expect(try await store.bindOwner(DatabaseOwner(demo: false, mchID: "10000200"), at: TestTime.at(3)) == merchant)
        }
    }

    @Test(arguments: StoreKind.all) func aSoldProductKeepsItsTermsAndAnUnsoldOneMayChangeThem(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let month = ProductTerms(productID: "vip-month", terms: "membership P1M vip")
            let course = ProductTerms(productID: "swift-101", terms: "course swift-101")
            #expect(try await store.bindProductTerms([month, course], at: TestTime.at(1)).isEmpty)
            #expect(try await store.bindProductTerms([month, course], at: TestTime.at(2)).isEmpty)
            var order = Fixture.order("B1")
            order.productID = "vip-month"
            try await Fixture.create(order, in: store)

            // Sold: the year is refused, and nothing of that catalog is recorded (not the course's
            // new terms, not a new product's).
            let year = ProductTerms(productID: "vip-month", terms: "membership P1Y vip")
            let basics = ProductTerms(productID: "swift-101", terms: "course swift-basics")
            let newcomer = ProductTerms(productID: "go-101", terms: "course go-101")
            #expect(try await store.bindProductTerms([year, basics, newcomer], at: TestTime.at(3))
                    == [ProductTermsChange(productID: "vip-month", recorded: "membership P1M vip", given: "membership P1Y vip")])
            #expect(try await store.bindProductTerms([month, course, newcomer], at: TestTime.at(4)).isEmpty)
            // Unsold: the course may change what it grants, and the change is what is on record then.
            #expect(try await store.bindProductTerms([month, basics], at: TestTime.at(5)).isEmpty)
            #expect(try await store.bindProductTerms([month, course], at: TestTime.at(6)).isEmpty)
            #expect(try await store.bindProductTerms([year, course], at: TestTime.at(7)).count == 1)
        }
    }

    @Test(arguments: StoreKind.all) func aSoldProductMayNotLeaveTheCatalogAndAnUnsoldOneMay(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let month = ProductTerms(productID: "vip-month", terms: "membership P1M vip")
            let course = ProductTerms(productID: "swift-101", terms: "course swift-101")
            #expect(try await store.bindProductTerms([month, course], at: TestTime.at(1)).isEmpty)
            var order = Fixture.order("B2")
            order.productID = "vip-month"
            try await Fixture.create(order, in: store)
            #expect(try await store.bindProductTerms([course], at: TestTime.at(2))
                    == [ProductTermsChange(productID: "vip-month", recorded: "membership P1M vip", given: nil)])
            #expect(try await store.bindProductTerms([month], at: TestTime.at(3)).isEmpty)
        }
    }

    @Test(arguments: StoreKind.all) func aProductSoldBeforeAnyCatalogHadItMayJoinOneOnlyAsTheCourseItsBuyersHold(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let course = ProductTerms(productID: "swift-101", terms: "course swift-101")
            #expect(try await store.bindProductTerms([course], at: TestTime.at(1)).isEmpty)
            // A client's order names a product no catalog has: its buyer holds a course of its id.
            var order = Fixture.order("B3")
            order.productID = "vip-month"
            try await Fixture.create(order, in: store)
            let month = ProductTerms(productID: "vip-month", terms: "membership P1M vip")
            #expect(try await store.bindProductTerms([course, month], at: TestTime.at(2))
                    == [ProductTermsChange(productID: "vip-month", recorded: "course vip-month", given: "membership P1M vip")])
            // As the course its buyers hold it may join; an unsold newcomer takes any terms.
            let held = ProductTerms(productID: "vip-month", terms: "course vip-month")
            let year = ProductTerms(productID: "vip-year", terms: "membership P1Y vip")
            #expect(try await store.bindProductTerms([course, held, year], at: TestTime.at(3)).isEmpty)
            #expect(try await store.bindProductTerms([course, month], at: TestTime.at(4)).count == 1)
        }
    }

    @Test(arguments: StoreKind.all) func theFirstBindingOfADatabaseFromBeforeBindingsTakesTheCatalogAsItIs(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            // Sold under the catalog of its day, before the database recorded any terms.
            var order = Fixture.order("B4")
            order.productID = "vip-month"
            try await Fixture.create(order, in: store)
            let month = ProductTerms(productID: "vip-month", terms: "membership P1M vip")
            #expect(try await store.bindProductTerms([month], at: TestTime.at(1)).isEmpty)
            // From then on the terms are on record.
            let year = ProductTerms(productID: "vip-month", terms: "membership P1Y vip")
            #expect(try await store.bindProductTerms([year], at: TestTime.at(2)).count == 1)
        }
    }

    /// The catalog's reading, simplified: an id reads as a name it equals or starts as (`vip-lifetime` as `vip`).
    static let reading: NameReading = { id, names in names.first { id == $0 || id.hasPrefix($0 + "-") } }

    @Test(arguments: StoreKind.all) func aNewNameThatAProductSoldOutsideTheCatalogReadsAsIsRefused(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let course = ProductTerms(productID: "swift-101", terms: "course swift-101")
            #expect(try await store.bindProductTerms([course], at: TestTime.at(1), reading: Self.reading).isEmpty)
            // Sold outside the catalog: its buyer holds a course of `vip-lifetime`.
            var order = Fixture.order("B5")
            order.productID = "vip-lifetime"
            try await Fixture.create(order, in: store)
            // A membership granting `vip`, a name `vip-lifetime` reads as: it would grant nothing.
            let month = ProductTerms(productID: "vip-month", terms: "membership P1M vip")
            #expect(try await store.bindProductTerms([course, month], at: TestTime.at(2), reading: Self.reading)
                    == [ProductTermsChange(productID: "vip-lifetime", recorded: "course vip-lifetime", given: nil, readsAs: "vip")])
            // Nothing was recorded: the same catalog is refused again; one whose names it does not
            // read as is taken, and then taken again at the next start (no name is new).
            #expect(try await store.bindProductTerms([course, month], at: TestTime.at(3), reading: Self.reading).count == 1)
            let gold = ProductTerms(productID: "gold-month", terms: "membership P1M gold")
            #expect(try await store.bindProductTerms([course, gold], at: TestTime.at(4), reading: Self.reading).isEmpty)
            #expect(try await store.bindProductTerms([course, gold], at: TestTime.at(5), reading: Self.reading).isEmpty)
        }
    }

    @Test(arguments: StoreKind.all) func aNewAppStoreProductIDIsANameTheCatalogGivesToo(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let course = ProductTerms(productID: "swift-101", terms: "course swift-101", appleProductID: "com.x.swift")
            #expect(try await store.bindProductTerms([course], at: TestTime.at(1), reading: Self.reading).isEmpty)
            var order = Fixture.order("B6")
            order.productID = "silver"
            try await Fixture.create(order, in: store)
            // An App Store product id `silver` reads as the sold `silver`: refused like an id would be.
            let newcomer = ProductTerms(productID: "newa", terms: "course newa", appleProductID: "silver")
            #expect(try await store.bindProductTerms([course, newcomer], at: TestTime.at(2), reading: Self.reading)
                    == [ProductTermsChange(productID: "silver", recorded: "course silver", given: nil, readsAs: "silver")])
            // App Store ids on record are names on record: the same catalog starts again without a
            // scan finding anything new, and a sold product named like one is not new either.
            var other = Fixture.order("B7")
            other.productID = "com.x.swift"
            try await Fixture.create(other, in: store)
            #expect(try await store.bindProductTerms([course], at: TestTime.at(3), reading: Self.reading).isEmpty)
        }
    }

    @Test(arguments: StoreKind.all) func anAppStorePurchaseOfAnUnknownProductBecomesTheSaleOfTheFirstProductToGiveItsID(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let course = ProductTerms(productID: "swift-101", terms: "course swift-101")
            #expect(try await store.bindProductTerms([course], at: TestTime.at(1)).isEmpty)
            var purchase = Fixture.order("B8")
            purchase.channel = .apple
            purchase.productID = nil
            purchase.flags = [.unknownProduct, .matchedWithoutOrder]
            purchase.appleProductID = "com.x.gold"
            purchase.appAccountToken = UUID().uuidString.lowercased()
            try await Fixture.create(purchase, in: store)
            let adopting: Adoption = { order in
                (NewOrderEvent(kind: "appstore_product", detail: "credited to catalog product \(order.productID ?? "-")", at: TestTime.at(2)),
                 OutboxEvent(id: "evt_adopt_" + order.outTradeNo, outTradeNo: order.outTradeNo, type: "entitlement.changed",
                             payload: #"{"out_trade_no":"B8","user_id":"u1"}"#, createdAt: TestTime.at(2), nextAttemptAt: TestTime.at(2)))
            }
            let gold = ProductTerms(productID: "gold-pass", terms: "membership P1M gold", appleProductID: "com.x.gold")
            #expect(try await store.bindProductTerms([course, gold], at: TestTime.at(2), reading: nil, adopting: adopting).isEmpty)
            #expect(try await store.order("B8")?.productID == "gold-pass")
            // What support was asked to decide is decided: off the attention list, still saying what it was.
            #expect(try await store.order("B8")?.flags == [OrderFlag.unknownProduct.handled, .matchedWithoutOrder])
            #expect(try await store.events("B8").filter { $0.kind == "appstore_product" }.map(\.detail) == ["credited to catalog product gold-pass"])
            #expect(try await store.outboxEvents("B8").map(\.id) == ["evt_adopt_B8"])
            // Its sale now: the terms are fixed, and the App Store id on record adopts nothing again.
            let year = ProductTerms(productID: "gold-pass", terms: "membership P1Y gold", appleProductID: "com.x.gold")
            #expect(try await store.bindProductTerms([course, year], at: TestTime.at(3), reading: nil, adopting: adopting).count == 1)
            #expect(try await store.bindProductTerms([course, gold], at: TestTime.at(4), reading: nil, adopting: adopting).isEmpty)
            #expect(try await store.events("B8").filter { $0.kind == "appstore_product" }.count == 1)
        }
    }

    @Test(arguments: StoreKind.all) func aProductThatLeftUnsoldIsForgottenAndSoldOutsideLaterKeepsItsCourse(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let course = ProductTerms(productID: "swift-101", terms: "course swift-101")
            let gold = ProductTerms(productID: "gold", terms: "membership P1M vip")
            #expect(try await store.bindProductTerms([course, gold], at: TestTime.at(1), reading: Self.reading).isEmpty)
            // It leaves, never sold; then a client's order sells `gold` outside the catalog.
            #expect(try await store.bindProductTerms([course], at: TestTime.at(2), reading: Self.reading).isEmpty)
            var order = Fixture.order("B9")
            order.productID = "gold"
            try await Fixture.create(order, in: store)
            // Its old terms do not come back over the course its buyer holds; that course may join.
            #expect(try await store.bindProductTerms([course, gold], at: TestTime.at(3), reading: Self.reading)
                    == [ProductTermsChange(productID: "gold", recorded: "course gold", given: "membership P1M vip")])
            let held = ProductTerms(productID: "gold", terms: "course gold")
            #expect(try await store.bindProductTerms([course, held], at: TestTime.at(4), reading: Self.reading).isEmpty)
        }
    }

    @Test(arguments: StoreKind.all) func aConsumablesEntitlementIsANameTheCatalogGives(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let course = ProductTerms(productID: "swift-101", terms: "course swift-101")
            #expect(try await store.bindProductTerms([course], at: TestTime.at(1), reading: Self.reading).isEmpty)
            var order = Fixture.order("B10")
            order.productID = "coins9"
            try await Fixture.create(order, in: store)
            let gems = ProductTerms(productID: "gems", terms: "consumable", otherNames: ["coins9"])
            #expect(try await store.bindProductTerms([course, gems], at: TestTime.at(2), reading: Self.reading)
                    == [ProductTermsChange(productID: "coins9", recorded: "course coins9", given: nil, readsAs: "coins9")])
        }
    }

    @Test(arguments: StoreKind.all) func aProductSoldThroughTheAppStoreKeepsTheAppStoreProductIDItWasBoughtAs(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            let month = ProductTerms(productID: "vip-month", terms: "membership P1M vip", appleProductID: "com.x.month")
            let gold = ProductTerms(productID: "gold", terms: "membership P1M gold")
            #expect(try await store.bindProductTerms([month, gold], at: TestTime.at(1)).isEmpty)
            // Sold through WeChat only: its App Store product id may still change.
            var paid = Fixture.order("B11")
            paid.productID = "vip-month"
            try await Fixture.create(paid, in: store)
            var renamed = month
            renamed.appleProductID = "com.x.vip.month"
            #expect(try await store.bindProductTerms([renamed, gold], at: TestTime.at(2)).isEmpty)
            // Bought through the App Store as com.x.vip.month: Apple renews it under that id.
            var purchase = Fixture.order("B12")
            purchase.channel = .apple
            purchase.productID = "vip-month"
            purchase.appleProductID = "com.x.vip.month"
            purchase.appAccountToken = UUID().uuidString.lowercased()
            try await Fixture.create(purchase, in: store)
            let change = { (given: String?, takenBy: String?) in
                [ProductTermsChange(productID: "vip-month", recorded: "membership P1M vip", given: "membership P1M vip",
                                    appStore: .init(soldAs: "com.x.vip.month", given: given, takenBy: takenBy))]
            }
            var none = month
            none.appleProductID = nil
            #expect(try await store.bindProductTerms([none, gold], at: TestTime.at(3)) == change(nil, nil))
            #expect(try await store.bindProductTerms([month, gold], at: TestTime.at(4)) == change("com.x.month", nil))
            var goldTakesIt = gold
            goldTakesIt.appleProductID = "com.x.vip.month"
            #expect(try await store.bindProductTerms([none, goldTakesIt], at: TestTime.at(5)) == change(nil, "gold"))
            // Refused, nothing was recorded: the id stays with vip-month, and keeping it is accepted.
            #expect(try await store.bindProductTerms([renamed, gold], at: TestTime.at(6)).isEmpty)
            var goldToo = gold
            goldToo.appleProductID = "com.x.gold"
            #expect(try await store.bindProductTerms([renamed, goldToo], at: TestTime.at(7)).isEmpty)
        }
    }

    @Test(arguments: StoreKind.all) func aNewOrderIsStoredOnlyUnderTheTermsTheDatabaseHoldsForItsProduct(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ async throws in
            func order(_ number: String, _ productID: String) -> OrderRecord {
                var order = Fixture.order(number)
                order.productID = productID
                return order
            }
            // Before any catalog is bound there is nothing to hold an order against.
            try await Fixture.create(order("B20", "vip-month"), in: store)
            let month = ProductTerms(productID: "vip-month", terms: "membership P1M vip")
            let course = ProductTerms(productID: "swift-101", terms: "course swift-101")
            #expect(try await store.bindProductTerms([month, course], at: TestTime.at(1)).isEmpty)

            // Priced by a catalog that makes the month a year, or does not have it: refused, nothing written.
            await #expect(throws: StorageError.termsChanged) {
                try await store.create(order("B21", "vip-month"), event: Fixture.created, terms: .catalog("membership P1Y vip"))
            }
            await #expect(throws: StorageError.termsChanged) {
                try await store.create(order("B21", "vip-month"), event: Fixture.created, terms: .outsideCatalog(reading: nil))
            }
            #expect(try await store.order("B21") == nil)
            // A product the database has no terms for is sold only outside the catalog.
            await #expect(throws: StorageError.termsChanged) {
                try await store.create(order("B22", "go-101"), event: Fixture.created, terms: .catalog("course go-101"))
            }
            guard case .created = try await store.create(order("B22", "go-101"), event: Fixture.created, terms: .outsideCatalog(reading: nil))
            else { throw FixtureError.notCreated }

            // Another gateway's reload leaves out the unsold course, and its terms are forgotten: a
            // gateway whose catalog still has it may not sell it (its buyers would hold whatever the
            // database says then, a course of its id for ever however it was priced).
            #expect(try await store.bindProductTerms([month], at: TestTime.at(2)).isEmpty)
            await #expect(throws: StorageError.termsChanged) {
                try await store.create(order("B23", "swift-101"), event: Fixture.created, terms: .catalog("course swift-101"))
            }
            #expect(try await store.order("B23") == nil)

            // Under the terms on record it is stored; a repeat of a stored order is answered as ever,
            // whatever catalog priced the repeat.
            guard case .created = try await store.create(order("B21", "vip-month"), event: Fixture.created,
                                                         terms: .catalog("membership P1M vip"))
            else { throw FixtureError.notCreated }
            guard case .existing = try await store.create(order("B21", "vip-month"), event: Fixture.created,
                                                          terms: .catalog("membership P1Y vip"))
            else { throw FixtureError.notCreated }
        }
    }
}
