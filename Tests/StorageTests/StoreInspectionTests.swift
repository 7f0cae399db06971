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
    static func inspect(_ database: TestDatabase) async throws -> StoreInspection {
        switch database.kind {
        case .sqlite: try await SQLiteOrderStore.inspect(path: database.location)
        case .postgres: try await PostgresOrderStore.inspect(database.postgresSettings!)
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
}
