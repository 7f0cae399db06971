// SPDX-License-Identifier: Apache-2.0
import Foundation
import SQLiteStore
import StorageCore
import Testing

struct InMemoryTests {
    @Test func anInMemoryStoreKeepsTheSamePromises() async throws {
        let store = try await SQLiteOrderStore.openInMemory()
        do {
            try await Fixture.create(Fixture.order("M1"), in: store)
            #expect(try await store.create(Fixture.order("M1", digest: "other"), event: Fixture.created).record
                .outTradeNo == "M1")
            let results = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<20 { group.addTask { try await Fixture.pay("M1", in: store).didChange } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.filter { $0 }.count == 1)
            #expect(try await store.outboxEvents("M1").count == 1)
            #expect(try await store.integrityCheck() == "ok")
            #expect(await store.isHealthy())
            #expect(store.path == nil)
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }
}
