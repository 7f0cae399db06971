// SPDX-License-Identifier: Apache-2.0
import AppStoreSimulator
import Foundation
import SimulatorKit
import Testing

/// Where the simulator's transaction ids start: 1 for a replayable run, later for a simulator
/// restarted beside a ledger that holds the ids an earlier run issued (demo mode).
struct SimulatorTransactionIDTests {
    @Test("A simulator told where to start numbers its first transaction from there, never from 1 again")
    func theFirstTransactionNumberIsConfigurable() throws {
        func firstID(_ first: UInt64?) throws -> String {
            var configuration = AppStoreSimulatorConfiguration(seed: 3)
            if let first { configuration.firstTransactionNumber = first }
            let simulator = try AppStoreSimulator(configuration: configuration, notificationSender: ClosureNotifySender { _, _ in nil })
            return try simulator.purchase(SimulatedPurchase(user: "u", productID: "p")).transactionID
        }
        #expect(try firstID(nil) == "2000000100000001")
        #expect(try firstID(183_000_000_000) == "2000183100000000")
    }
}
