// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import JSON
import Observability
import StorageCore

/// App Store Server Notifications V2 at `POST /appstore/notifications`, and the same notifications
/// read back from Get Notification History (IAPService+Backfill.swift): iOS's answer to the lost
/// callback. A purchase the app never reported is credited by its notification; a refund or a
/// revocation moves its order to REFUND, a reversed refund back to SUCCESS; a consumption request
/// becomes a task for the business (IAPService+Consumption.swift).
///
/// Nothing is written before the `signedPayload` (and the transaction inside it) verified: a
/// forgery is answered 400, only counted and logged (the line throttled). A verified notification
/// that is not this gateway's (another app, an environment not accepted) is acknowledged 200 and
/// ignored. Every other one is handled once per `notificationUUID`, whichever way it came, and
/// answered 200 only once its effect is durable; Apple retries anything else (after 1, 12, 24, 48
/// and 72 hours), and the backfill reads it again.
extension IAPService {
    /// The largest body taken: a signedPayload carries two JWS of three certificates each.
    public static let notificationBodyLimit = 256 * 1024

    /// What handling one signedPayload came to.
    enum NotificationOutcome: Sendable {
        /// Its effect is durable, and this call recorded it: the first time it was handled.
        case handled(String)
        /// Handled before (the same notificationUUID).
        case duplicate
        /// Apple signed it, but for another app or an environment this gateway does not take.
        case ignored(SignedDataError.Rule)
        /// It did not verify; nothing was written.
        case rejected(String)
        /// Its effect could not be made durable (the database, the App Store); try again.
        case failed(APIError)
    }

    /// Handles one delivered notification; returns the HTTP status and body to answer.
    public func handleNotification(_ body: [UInt8]) async -> (status: Int, body: [UInt8]) {
        guard let object = try? JSONValue.parseObject(body), case .string(let signedPayload)? = object["signedPayload"] else {
            return rejected("malformed")
        }
        switch await process(signedPayload, source: "notification") {
        case .handled:
            instruments.notificationHandled.increment()
            return (200, Array(#"{"status":"ok"}"#.utf8))
        case .duplicate:
            instruments.notificationDuplicate.increment()
            return (200, Array(#"{"status":"duplicate"}"#.utf8))
        case .ignored(let rule):
            instruments.notificationIgnored.labelled(rule.rawValue).increment()
            if let suppressed = rejectedNotificationLog.admit(rule.rawValue) {
                logger.warning("App Store notification for another app or environment ignored",
                               ["rule": rule.rawValue, "suppressed": String(suppressed)])
            }
            return (200, Array(#"{"status":"ignored"}"#.utf8))
        case .rejected(let reason):
            return rejected(reason)
        case .failed(let error):
            logger.error("App Store notification not handled; Apple retries it", ["error": error.code])
            instruments.notificationFailed.increment()
            return (error.status >= 500 ? error.status : 500, error.json)
        }
    }

    /// Verifies one signedPayload and makes its effect durable, once per notificationUUID.
    /// - Parameter source: `notification` (Apple delivered it) or `notification history` (the
    ///   backfill read it), for the timeline.
    func process(_ signedPayload: String, source: String) async -> NotificationOutcome {
        let notification: AppStoreNotification
        do {
            notification = try clients.verifier.verifyNotification(signedPayload)
        } catch where [.bundleMismatch, .environmentMismatch, .appAppleIDMismatch].contains(error.rule) {
            return .ignored(error.rule)
        } catch {
            return .rejected(error.rule.rawValue)
        }
        do {
            if try await store.appStoreNotification(notification.notificationUUID) != nil { return .duplicate }
        } catch {
            return .failed(.internalError)
        }
        let outcome: String
        do {
            outcome = try await apply(notification, source: source)
            // The subscription's state, before the notification counts as handled: a failure
            // here has Apple send it again (merging the same word twice changes nothing).
            let type = notification.notificationType.rawValue + (notification.subtype.map { "/\($0.rawValue)" } ?? "")
            try await recordSubscription(from: notification, source: "\(source) \(type)", announce: !outcome.hasPrefix("credited"))
        } catch {
            return .failed(error)
        }
        let record = AppStoreNotificationRecord(
            notificationUUID: notification.notificationUUID, notificationType: notification.notificationType.rawValue,
            subtype: notification.subtype?.rawValue, environment: notification.environment.rawValue,
            transactionID: notification.transaction?.transactionID, signedDate: notification.signedDate, receivedAt: now(),
            outcome: String(outcome.prefix(500)))
        do {
            // The effect is durable and idempotent: a second copy racing this one finds it done.
            return try await store.recordAppStoreNotification(record) ? .handled(outcome) : .duplicate
        } catch {
            return .failed(.internalError)
        }
    }

    /// The notification's effect, made durable; returns what it did in a few words.
    private func apply(_ notification: AppStoreNotification, source via: String) async throws(APIError) -> String {
        let type = notification.notificationType.rawValue + (notification.subtype.map { "/\($0.rawValue)" } ?? "")
        guard let transaction = notification.transaction else { return "recorded (\(type), no transaction)" }
        let source = "\(via) \(type)"
        let purchase = VerifiedPurchase(
            transaction, via: source,
            verification: "App Store Server Notification V2 \(type) (\(notification.notificationUUID)) verified, with its "
                + "signedTransactionInfo" + (via == "notification" ? "" : "; read from Get Notification History"))
        if notification.notificationType == .refundReversed {
            let order = try await reverseRefund(purchase, reversedAt: notification.signedDate, source: source)
            guard let order else { return "refund reversal recorded (\(transaction.transactionID) credits no order)" }
            return "\(type): \(order.outTradeNo) is \(order.state.rawValue)"
        }
        let isRevocation = notification.notificationType == .refund || notification.notificationType == .revoke
            || transaction.revocationDate != nil
        if isRevocation {
            let reason = transaction.revocationReason.map { "revocationReason \($0)" }
            let order = try await recordRevocation(purchase, source: source, reason: reason)
            guard let order else { return "revocation recorded (\(transaction.transactionID) credits no order)" }
            return "\(type): \(order.outTradeNo) is \(order.state.rawValue)"
        }
        var outcome = try await creditOrRecord(purchase, notification: notification, type: type, source: source)
        if notification.notificationType == .consumptionRequest {
            outcome += "; " + (try await recordConsumptionRequest(notification, purchase: purchase))
        }
        return outcome
    }

    /// A notification's purchase: credited (matched by its token, or by its user once inferred), or
    /// only on the timeline when it credited an order already, or left in the ledger for later.
    private func creditOrRecord(_ purchase: VerifiedPurchase, notification: AppStoreNotification, type: String, source: String)
        async throws(APIError) -> String
    {
        if let known = try await context.storage({ () throws(StorageError) in try await self.store.appleTransaction(purchase.transactionID) }),
           let credited = known.outTradeNo {
            // Credited already (the app reported it, or an earlier notification): only the timeline
            // hears of it, and the order gets the count it lacked, if this says one.
            _ = try? await fillIn(purchase, known: known, order: nil, source: source)
            _ = try? await context.store.appendEvent(
                credited, kind: "appstore_notification",
                detail: "\(type) (\(notification.notificationUUID)) about transaction \(purchase.transactionID), which "
                    + "credited this order already" + (source.hasPrefix("notification history") ? "; read from the notification history" : ""),
                at: now())
            return "recorded on \(credited)"
        }
        do {
            // The token, if any, names the order; else whose purchase it is must be inferred.
            if let answer = try await creditWithoutReporter(purchase, source: source) {
                return "credited \(purchase.transactionID) to \(answer.order.outTradeNo) (\(answer.matchedBy.rawValue))"
            }
        } catch where error.code == "transaction_already_used" {
            // Another copy of this notification (Apple sends duplicates, and retries) credited the
            // transaction meanwhile, to the user its token names rather than the one inferred here:
            // its effect is done.
            return "credited meanwhile by another copy: \(purchase.transactionID)"
        } catch where error.code == "transaction_not_creditable" {
            logger.warning("App Store notification carries a transaction that can never be credited",
                           ["transaction_id": purchase.transactionID, "reason": error.message])
            return "not creditable: \(error.message)"
        }
        // Recorded in the ledger: the app's next report (it keeps the unfinished transaction) or
        // the reconciler credits it once its user is known.
        logger.warning("App Store purchase without a known order or user; waiting for the app's report",
                       ["transaction_id": purchase.transactionID, "product_id": purchase.productID])
        return "unmatched: \(purchase.transactionID) waits for its user"
    }

    /// A notification that did not verify: 400, nothing written, counted, logged at most once a second.
    private func rejected(_ reason: String) -> (status: Int, body: [UInt8]) {
        instruments.notificationRejected.labelled(reason).increment()
        if let suppressed = rejectedNotificationLog.admit(reason) {
            logger.warning("App Store notification rejected", ["reason": reason, "suppressed": String(suppressed)])
        }
        return (400, APIError.invalid("signedPayload", "the notification did not verify (\(reason)); nothing was changed").json)
    }
}
