// SPDX-License-Identifier: Apache-2.0
import AppStore
import Crypto
import Foundation
import JSON
import SimulatorKit

/// The control panel: what customers and Apple do, as JSON over HTTP under `/appstore-simulator/`.
///
/// | method | path | does |
/// |---|---|---|
/// | POST | /appstore-simulator/purchases | a purchase (body: ``SimulatedPurchase``: `user`, `productId`, optional `type`, `appAccountToken`, `environment`, `ownership`, `quantity`, `price`, `currency`, `storefront`) |
/// | POST | /appstore-simulator/purchases/interrupted | a failed purchase with the token, then a successful one without it |
/// | GET | /appstore-simulator/transactions/{id} | the transaction as the App Store holds it |
/// | POST | /appstore-simulator/transactions/{id}/refund | refund (body: optional `{"reason":0\|1}`): REFUND notification |
/// | POST | /appstore-simulator/transactions/{id}/revoke | revoke (Family Sharing ended): REVOKE notification |
/// | POST | /appstore-simulator/transactions/{id}/reverse-refund | Apple takes a refund back: REFUND_REVERSED notification |
/// | POST | /appstore-simulator/transactions/{id}/consumption-request | the customer asks for a refund (body: optional `{"reason":…}`): CONSUMPTION_REQUEST notification |
/// | GET | /appstore-simulator/consumption | every Send Consumption Information the App Store accepted |
/// | POST | /appstore-simulator/notifications/test | a TEST notification (body: optional `{"environment":"Sandbox"}`) |
/// | GET | /appstore-simulator/notifications | every notification attempt (its notificationUUID, the transactionId it carries, whether acknowledged or dropped) |
/// | GET, PUT | /appstore-simulator/faults | the fault plan (``AppStoreFaultPlan``) |
/// | GET, PUT | /appstore-simulator/subscription-products | auto-renewable products (``AppStoreSubscriptionProduct``: `productId`, `subscriptionGroupIdentifier`, `period`, `level`, `gracePeriodDays`); PUT adds or replaces |
/// | GET | /appstore-simulator/subscriptions/{originalTransactionId} | the subscription (``SubscriptionSnapshot``) |
/// | POST | /appstore-simulator/subscriptions/{id}/fail-renewals | the next `count` charges fail (body `{"count":N}`; no count: all of them) |
/// | POST | /appstore-simulator/subscriptions/{id}/recover-billing | the customer fixes their payment method: charged at once in billing retry |
/// | POST | /appstore-simulator/subscriptions/{id}/auto-renew | `{"enabled":false\|true}`: DID_CHANGE_RENEWAL_STATUS |
/// | POST | /appstore-simulator/subscriptions/{id}/change-product | `{"productId":…}`: DID_CHANGE_RENEWAL_PREF (UPGRADE now, DOWNGRADE at renewal) |
/// | POST | /appstore-simulator/clock/advance | moves simulated time (body: `{"seconds":N}`) |
/// | GET | /appstore-simulator/stats | counters |
/// | GET | /appstore-simulator/root | the root certificate (PEM) to trust |
public struct AppStoreSimulatorControlAPI: Sendable {
    public let simulator: AppStoreSimulator

    public init(simulator: AppStoreSimulator) {
        self.simulator = simulator
    }

    /// The control routes, for the HTTP front to register.
    public static let routes: [(method: String, template: String)] = [
        ("POST", "/appstore-simulator/purchases"), ("POST", "/appstore-simulator/purchases/interrupted"),
        ("GET", "/appstore-simulator/transactions/{id}"), ("POST", "/appstore-simulator/transactions/{id}/refund"),
        ("POST", "/appstore-simulator/transactions/{id}/revoke"), ("POST", "/appstore-simulator/transactions/{id}/reverse-refund"),
        ("POST", "/appstore-simulator/transactions/{id}/consumption-request"), ("GET", "/appstore-simulator/consumption"),
        ("POST", "/appstore-simulator/notifications/test"),
        ("GET", "/appstore-simulator/notifications"), ("GET", "/appstore-simulator/faults"), ("PUT", "/appstore-simulator/faults"),
        ("GET", "/appstore-simulator/subscription-products"), ("PUT", "/appstore-simulator/subscription-products"),
        ("GET", "/appstore-simulator/subscriptions/{id}"), ("POST", "/appstore-simulator/subscriptions/{id}/fail-renewals"),
        ("POST", "/appstore-simulator/subscriptions/{id}/recover-billing"), ("POST", "/appstore-simulator/subscriptions/{id}/auto-renew"),
        ("POST", "/appstore-simulator/subscriptions/{id}/change-product"),
        ("POST", "/appstore-simulator/clock/advance"), ("GET", "/appstore-simulator/stats"), ("GET", "/appstore-simulator/root"),
    ]

    /// Answers one control request: a status, a content type and a body.
    public func handle(method: String, path: String, body: [UInt8]) -> (status: Int, contentType: String, body: [UInt8]) {
        let parts = path.split(separator: "/").map(String.init)
        guard parts.first == "appstore-simulator" else { return error(404, "not_found", "no such control route") }
        let route = Array(parts.dropFirst())
        let decoder = JSONDecoder()
        switch (method, route.count, route.first, route.last) {
        case ("POST", 1, "purchases", _), ("POST", 2, "purchases", "interrupted"):
            let purchase: SimulatedPurchase
            do {
                purchase = try decoder.decode(SimulatedPurchase.self, from: Data(body))
            } catch {
                return self.error(400, "invalid_request",
                                  "the body must be a purchase: {\"user\":…,\"productId\":…}: \(ControlBody.problem(error))")
            }
            do throws(AppStoreSimulatorControlError) {
                if route.count == 1 { return ok(try simulator.purchase(purchase)) }
                let (failed, completed) = try simulator.interruptedPurchase(purchase)
                return ok(Interrupted(failed: failed, completed: completed))
            } catch {
                return self.error(error.code == .alreadySubscribed ? 409 : 400, error.code.rawValue, error.description)
            }
        case ("GET", 2, "transactions", _):
            guard let transaction = simulator.transaction(route[1]) else {
                return error(404, "transaction_not_found", "no such transaction")
            }
            return (200, "application/json", transaction.payload.bytes())
        case ("POST", 3, "transactions", "refund"), ("POST", 3, "transactions", "revoke"):
            let reason = (try? JSONDecoder().decode(RefundBody.self, from: Data(body)))?.reason ?? 0
            do throws(AppStoreSimulatorControlError) {
                let transaction = route[2] == "refund"
                    ? try simulator.refund(transactionID: route[1], reason: reason) : try simulator.revoke(transactionID: route[1])
                return (200, "application/json", transaction.payload.bytes())
            } catch {
                return self.error(error.code == .transactionNotFound ? 404 : 409, error.code.rawValue, error.description)
            }
        case ("POST", 3, "transactions", "reverse-refund"):
            do throws(AppStoreSimulatorControlError) {
                return (200, "application/json", try simulator.reverseRefund(transactionID: route[1]).payload.bytes())
            } catch {
                return self.error(error.code == .transactionNotFound ? 404 : 409, error.code.rawValue, error.description)
            }
        case ("POST", 3, "transactions", "consumption-request"):
            let reason = (try? JSONDecoder().decode(ConsumptionRequestBody.self, from: Data(body)))?.reason ?? "UNINTENDED_PURCHASE"
            do throws(AppStoreSimulatorControlError) {
                return ok(["notificationUUID": try simulator.requestConsumption(transactionID: route[1], reason: reason)])
            } catch {
                return self.error(404, error.code.rawValue, error.description)
            }
        case ("GET", 1, "consumption", _):
            return ok(simulator.consumptionReceived)
        case ("POST", 2, "notifications", "test"):
            let environment = (try? decoder.decode(TestBody.self, from: Data(body)))?.environment ?? .production
            return ok(["notificationUUID": simulator.sendTestNotification(environment: environment)])
        case ("GET", 1, "notifications", _):
            let transactions = simulator.notificationTransactions
            return ok(simulator.notificationHistory.map {
                Attempt(notificationUUID: $0.reference, transactionId: transactions[$0.reference], number: $0.number,
                        at: $0.at.millisecondsSince1970, acknowledged: $0.acknowledged, dropped: $0.dropped, copies: $0.copies)
            })
        case ("GET", 1, "faults", _):
            return ok(simulator.faults)
        case ("PUT", 1, "faults", _):
            let plan: AppStoreFaultPlan
            do {
                // The strict reader first: a member named twice is refused, where JSONDecoder would
                // keep one of the two silently.
                _ = try JSONValue.parse(body)
                plan = try decoder.decode(AppStoreFaultPlan.self, from: Data(body))
            } catch let error as JSONError {
                return self.error(400, "invalid_request", "the body must be a fault plan: \(error)")
            } catch {
                return self.error(400, "invalid_request", "the body must be a fault plan: \(ControlBody.problem(error))")
            }
            simulator.apply(plan)
            return ok(plan)
        case ("GET", 1, "subscription-products", _):
            return ok(simulator.subscriptionProducts)
        case ("PUT", 1, "subscription-products", _):
            do {
                let products = try decoder.decode([AppStoreSubscriptionProduct].self, from: Data(body))
                simulator.configureSubscriptionProducts(products)
                return ok(simulator.subscriptionProducts)
            } catch {
                return self.error(400, "invalid_request", "the body must be a list of subscription products: \(ControlBody.problem(error))")
            }
        case ("GET", 2, "subscriptions", _):
            guard let subscription = simulator.subscription(originalTransactionID: route[1]) else {
                return error(404, "subscription_not_found", "no subscription has this original transaction id")
            }
            return ok(subscription)
        case ("POST", 3, "subscriptions", _):
            return subscriptionCommand(route[2], id: route[1], body: body)
        case ("POST", 2, "clock", "advance"):
            switch ClockAdvance(body, clock: simulator.clock) {
            case .advanced:
                simulator.catchUpSubscriptions()
                return ok(["now": simulator.clock.now().millisecondsSince1970])
            case .notAdjustable: return error(409, "clock_not_adjustable", "this simulator runs on a clock that cannot be advanced")
            case .invalidSeconds: return error(400, "invalid_request", "seconds must be between 0 and 34560000")
            }
        case ("GET", 1, "stats", _):
            return ok(simulator.counters)
        case ("GET", 1, "root", _):
            return (200, "application/x-pem-file", Array(simulator.pki.root.pem.utf8))
        default:
            return error(404, "not_found", "no such control route")
        }
    }

    private func subscriptionCommand(_ command: String, id: String, body: [UInt8]) -> (status: Int, contentType: String, body: [UInt8]) {
        struct Body: Decodable { var count: Int?; var enabled: Bool?; var productId: String? }
        let parsed = body.isEmpty ? Body() : (try? JSONDecoder().decode(Body.self, from: Data(body)))
        guard let parsed else { return error(400, "invalid_request", "the body must be a JSON object") }
        do throws(AppStoreSimulatorControlError) {
            switch command {
            case "fail-renewals": return ok(try simulator.failRenewals(originalTransactionID: id, count: parsed.count))
            case "recover-billing": return ok(try simulator.recoverBilling(originalTransactionID: id))
            case "auto-renew":
                guard let enabled = parsed.enabled else { return error(400, "invalid_request", "enabled (a boolean) is required") }
                return ok(try simulator.setAutoRenew(originalTransactionID: id, enabled: enabled))
            case "change-product":
                guard let product = parsed.productId else { return error(400, "invalid_request", "productId is required") }
                return ok(try simulator.changeProduct(originalTransactionID: id, to: product))
            default: return error(404, "not_found", "no such control route")
            }
        } catch {
            return self.error(error.code == .subscriptionNotFound ? 404 : 409, error.code.rawValue, error.description)
        }
    }

    private struct Interrupted: Encodable { var failed: FailedPurchase; var completed: PurchaseReceipt }
    private struct RefundBody: Decodable { var reason: Int? }
    private struct ConsumptionRequestBody: Decodable { var reason: String? }
    private struct TestBody: Decodable { var environment: AppStoreEnvironment? }
    private struct Attempt: Encodable {
        var notificationUUID: String, transactionId: String?, number: Int, at: Int64, acknowledged: Bool, dropped: Bool,
            copies: Int
    }

    private func ok(_ value: some Encodable) -> (status: Int, contentType: String, body: [UInt8]) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (200, "application/json", (try? Array(encoder.encode(value))) ?? Array("{}".utf8))
    }

    private func error(_ status: Int, _ code: String, _ message: String) -> (status: Int, contentType: String, body: [UInt8]) {
        (status, "application/json", JSONValue.object(["error": ["code": .string(code), "message": .string(message)]]).bytes())
    }
}
