// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresStore
import SQLiteStore
import StorageCore
import StoreTestSupport
import Testing

/// What `doctor` learns of a database without changing it: the open orders created with WeChat Pay
/// API v2, which a gateway without the v2 key finishes through v3.
struct StoreInspectionTests {
    static func inspect(_ database: TestDatabase, terms: [ProductTerms] = []) async throws -> StoreInspection {
        switch database.kind {
        case .sqlite: try await SQLiteOrderStore.inspect(path: database.location, terms: terms)
        case .postgres: try await PostgresOrderStore.inspect(database.postgresSettings!, terms: terms)
        }
    }

    @Test("the inspection counts the open WeChat orders created with API v2, not v3's, not paid ones, not App Store ones",
          arguments: StoreKind.all)
    func openV2Orders(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, database async throws in
            #expect(try await Self.inspect(database).openV2Orders == 0)
            _ = try await Fixture.create(Fixture.order("INS-V2-OPEN-1"), in: store)
            _ = try await Fixture.create(Fixture.order("INS-V2-OPEN-2"), in: store)
            _ = try await Fixture.create(Fixture.order("INS-V2-PAID"), in: store)
            _ = try await Fixture.pay("INS-V2-PAID", in: store)
            var v3 = Fixture.order("INS-V3-OPEN")
            v3.apiVersion = "v3"
            v3.signType = "RSA"
            _ = try await Fixture.create(v3, in: store)
            var apple = Fixture.order("INS-APPLE-OPEN")
            apple.channel = .apple
            apple.appAccountToken = UUID().uuidString.lowercased()
            apple.appleProductID = "com.example.course"
            _ = try await Fixture.create(apple, in: store)
            let inspection = try await Self.inspect(database)
            #expect(inspection.openV2Orders == 2)
            #expect(inspection.exists && inspection.writable)
        }
    }

    @Test("the inspection tells what binding a catalog's terms would refuse, and writes nothing", arguments: StoreKind.all)
    func termChanges(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, database async throws in
            let month = ProductTerms(productID: "vip-month", terms: "membership P1M vip")
            let year = ProductTerms(productID: "vip-month", terms: "membership P1Y vip")
            #expect(try await store.bindProductTerms([month], at: TestTime.at(1)).isEmpty)
            // Unsold, any terms would be taken.
            #expect(try await Self.inspect(database, terms: [year]).termChanges.isEmpty)
            var order = Fixture.order("INS-TERMS")
            order.productID = "vip-month"
            try await Fixture.create(order, in: store)
            #expect(try await Self.inspect(database, terms: [year]).termChanges
                    == [ProductTermsChange(productID: "vip-month", recorded: "membership P1M vip", given: "membership P1Y vip")])
            #expect(try await Self.inspect(database, terms: []).termChanges
                    == [ProductTermsChange(productID: "vip-month", recorded: "membership P1M vip", given: nil)])
            #expect(try await Self.inspect(database, terms: [month]).termChanges.isEmpty)
            // Nothing was recorded by looking: the year is still refused, the month still taken.
            #expect(try await store.bindProductTerms([year], at: TestTime.at(2)).count == 1)
            #expect(try await store.bindProductTerms([month], at: TestTime.at(3)).isEmpty)
        }
    }
}
