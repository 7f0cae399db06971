// SPDX-License-Identifier: Apache-2.0
import AppStoreSimulator
import Foundation
import JSON
import SimulatorKit
import Testing

/// The control panel's hand-written bodies: a member the simulator does not know is refused by
/// name, so a misspelt fault or purchase field does not look as if it took effect.
struct AppStoreControlBodyTests {
    @Test("A fault plan or a purchase with a member the App Store simulator does not know, a rate outside 0 to 1 or a member named twice is refused naming it")
    func unknownMembersAreRefusedByName() throws {
        let simulator = try AppStoreSimulator(notificationSender: ClosureNotifySender { _, _ in nil })
        let api = AppStoreSimulatorControlAPI(simulator: simulator)
        #expect(api.handle(method: "PUT", path: "/appstore-simulator/faults", body: Array(#"{"notify":{"dropRate":0.5}}"#.utf8)).status == 200)
        let cases = [
            ("/appstore-simulator/faults", "PUT", #"{"bogus":1}"#, "unknown member bogus"),
            ("/appstore-simulator/faults", "PUT", #"{"notify":{"droprate":1}}"#, "unknown member notify.droprate"),
            ("/appstore-simulator/faults", "PUT", #"{"endpoints":{"history":{"http5xx":1}}}"#, "unknown member endpoints.history.http5xx"),
            ("/appstore-simulator/purchases", "POST", #"{"user":"a","productId":"p","appAcountToken":"x"}"#, "unknown member appAcountToken"),
            ("/appstore-simulator/purchases", "POST", #"{"user":"a"}"#, "productId is required"),
            ("/appstore-simulator/faults", "PUT", #"{"endpoints":{"history":{"http5xxRate":1.5}}}"#,
             "endpoints.history.http5xxRate must be a rate from 0 to 1"),
            ("/appstore-simulator/faults", "PUT", #"{"notify":{"dropRate":0,"dropRate":1}}"#, "invalid JSON (duplicate_key at byte 24)"),
        ]
        for (path, method, body, message) in cases {
            let answer = api.handle(method: method, path: path, body: Array(body.utf8))
            #expect(answer.status == 400, "\(body)")
            let text = try JSONValue.parse(answer.body)["error"]?["message"]?.stringValue ?? ""
            #expect(text.hasSuffix(message), "\(body): \(text)")
        }
        #expect(simulator.faults.notify.dropRate == 0.5)
    }

    @Test("Several at once are sold only of a consumable, and Apple's signed price is the whole transaction's: the price of one times the quantity")
    func severalAtOnceAreAConsumablesAndThePriceIsTheTotal() throws {
        let simulator = try AppStoreSimulator(notificationSender: ClosureNotifySender { _, _ in nil })
        func payload(_ receipt: PurchaseReceipt) throws -> JSONValue {
            var part = String(receipt.signedTransactionInfo.split(separator: ".")[1])
                .replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while part.count % 4 != 0 { part += "=" }
            return try JSONValue.parse(Array(try #require(Data(base64Encoded: part))))
        }
        let three = try simulator.purchase(SimulatedPurchase(user: "a", productID: "coins", type: "Consumable", quantity: 3))
        #expect(try payload(three)["quantity"]?.intValue == 3)
        #expect(try payload(three)["price"]?.intValue == 3 * 68000)
        let given = try simulator.purchase(SimulatedPurchase(user: "a", productID: "coins", type: "Consumable", quantity: 2, price: 5000))
        #expect(try payload(given)["price"]?.intValue == 5000)
        for type in ["Non-Consumable", "Auto-Renewable Subscription", "Non-Renewing Subscription"] {
            #expect(throws: AppStoreSimulatorControlError.self, "\(type)") {
                try simulator.purchase(SimulatedPurchase(user: "a", productID: "course", type: type, quantity: 3))
            }
        }
    }
}
