// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import JSON
import Observability
import StorageCore

/// A validated body of `POST /v1/support/subscriptions/{original_transaction_id}/extend`:
/// `{"days": 1-90, "reason": 0-3, "request_id"?: UUID}`. `reason` is Apple's `extendReasonCode`
/// (0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage); `request_id` is
/// Apple's `requestIdentifier`: a support tool that repeats a call it got no answer to sends the
/// same one, and Apple extends once (without it each call is a fresh extension).
struct SubscriptionExtensionInput: Sendable, Hashable {
    var request: ExtendRenewalDateRequest

    static let fields: Set<String> = ["days", "reason", "request_id"]

    init(json body: [UInt8], newIdentifier: () -> UUID = UUID.init) throws(APIError) {
        let object = try GatewayAPI.supportAction(body, allowed: Self.fields)
        guard case .int(let days)? = object["days"], ExtendRenewalDateRequest.days.contains(days) else {
            throw .invalid("days", "days must be an integer from 1 to 90 (Apple extends a subscription by at most 90 days)")
        }
        guard case .int(let code)? = object["reason"], let reason = ExtendRenewalDateRequest.Reason(rawValue: code) else {
            throw .invalid("reason", "reason must be Apple's extendReasonCode: 0 undeclared, 1 customer satisfaction, 2 other, "
                               + "3 service issue or outage")
        }
        var identifier = newIdentifier()
        if let given = object["request_id"], given != .null {
            guard case .string(let text) = given, let uuid = UUID(uuidString: text) else {
                throw .invalid("request_id", "request_id must be a UUID (Apple's requestIdentifier)")
            }
            identifier = uuid
        }
        request = ExtendRenewalDateRequest(days: days, reason: reason, requestIdentifier: identifier)
    }
}

extension IAPService {
    /// What an extension did, for the answer and the audit entry.
    struct SubscriptionExtension: Sendable {
        var json: [UInt8]
        /// One line for the audit log: days, reason, request id, the new end.
        var note: String
    }

    /// Extend a Subscription Renewal Date for support (compensation after an outage): asked of
    /// the subscription's environment — the ledger's, else production, then the sandbox when
    /// production does not know it and sandbox purchases are credited. Apple's refusals are 409
    /// `extension_refused` (not active, extended twice this year, family-shared), an unknown
    /// subscription 404 `subscription_not_found`, Apple unreachable 503 `appstore_unavailable`,
    /// no In-App Purchase key 503 `appstore_key_missing`. The new end reaches the gateway as
    /// Apple's RENEWAL_EXTENDED notification, as every change of a subscription does.
    /// The console's way to the same extension, through the JSON route's own checks; answers the
    /// audit line.
    public func extendSubscription(originalTransactionID id: String, days: Int, reason: Int, requestID: UUID)
        async throws(APIError) -> String
    {
        var body = JSONObjectWriter(capacity: 96)
        body.number("days", days)
        body.number("reason", reason)
        body.string("request_id", requestID.uuidString.lowercased())
        return try await extendSubscription(originalTransactionID: id, SubscriptionExtensionInput(json: body.finish())).note
    }

    func extendSubscription(originalTransactionID id: String, _ input: SubscriptionExtensionInput) async throws(APIError)
        -> SubscriptionExtension
    {
        guard (1...32).contains(id.utf8.count), id.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            throw .invalid("original_transaction_id", "an App Store original transaction id is 1 to 32 digits")
        }
        guard let api = clients.serverAPI else { throw .appStoreKeyMissing }
        let rows = try await context.storage { () throws(StorageError) in try await self.store.appleTransactions(originalTransactionID: id) }
        let known = rows.first.flatMap { AppStoreEnvironment(rawValue: $0.facts.environment) }
        let candidates: [AppStoreEnvironment] = known.map { [$0] } ?? (clients.acceptSandbox ? [.production, .sandbox] : [.production])
        let request = input.request
        var answer: ExtendRenewalDateResponse?
        var environment = candidates[0]
        for candidate in candidates {
            environment = candidate
            // Past the deadline: 503 appstore_unavailable; the same request_id again extends once.
            let outcome = try await withDeadline(clients.deadline) { () async throws(APIError) in
                do throws(AppStoreServerAPIError) {
                    return Result<ExtendRenewalDateResponse, AppStoreServerAPIError>.success(
                        try await api.extendRenewalDate(id, request, environment: candidate))
                } catch {
                    return .failure(error)
                }
            }
            switch outcome {
            case .success(let done):
                answer = done
            case .failure(let error):
                instruments.upstreamErrors.labelled("extend_renewal_date", error.kind.rawValue).increment()
                // Apple's "no such subscription" here may mean the other environment's.
                if error.kind == .apiError, error.status == 404, candidate != candidates.last { continue }
                throw extensionRefusal(error)
            }
            if answer != nil { break }
        }
        guard let answer, answer.success else { throw .extensionRefused("Apple answered success false") }
        let ends = answer.effectiveDate.map(Timestamp.rfc3339)
        logger.info("support extended a subscription's renewal date", [
            "original_transaction_id": id, "days": String(request.days), "reason": String(request.reason.rawValue),
            "environment": environment.rawValue,
        ])
        var writer = JSONObjectWriter(capacity: 320)
        writer.number("days", request.days)
        writer.string("effective_date", ends)
        writer.string("environment", environment.rawValue)
        writer.string("original_transaction_id", id)
        writer.number("reason", request.reason.rawValue)
        writer.string("request_id", request.requestIdentifier.uuidString.lowercased())
        writer.bool("success", true)
        writer.string("web_order_line_item_id", answer.webOrderLineItemID)
        // Apple applies a request id once, with what it first came with: a repeat (another days,
        // even) answers that first extension's end. So the line says what was asked and what
        // Apple answered, never that these days were given.
        let note = "asked Apple to extend \(request.days) days (\(request.reason.name)), request_id "
            + request.requestIdentifier.uuidString.lowercased() + (ends.map { "; Apple: the period ends \($0)" } ?? "")
            + " (\(environment.rawValue); a request_id Apple saw before keeps its first extension)"
        return SubscriptionExtension(json: writer.finish(), note: note)
    }

    /// Apple's refusal of an extension, as support reads it.
    func extensionRefusal(_ error: AppStoreServerAPIError) -> APIError {
        switch (error.kind, error.status) {
        case (.invalidRequest, _): return .invalid("original_transaction_id", "an App Store original transaction id is 1 to 32 digits")
        case (.apiError, 404?), (.notFound, _): return .subscriptionNotFound
        case (.apiError, 403?):
            let why = switch error.errorCode {
            case 4_030_004?: "the subscription is not active (Apple extends only an active one)"
            case 4_030_005?: "the subscription was extended twice in the last 365 days already (Apple's limit)"
            case 4_030_007?: "the subscription is family-shared (Apple extends only the purchaser's)"
            default: "errorCode \(error.errorCode.map(String.init) ?? "none")"
            }
            return .extensionRefused(why)
        case (.apiError, _): return .extensionRefused(error.description)
        case (.unauthorized, _):
            logger.error("the App Store Server API refused our token (401): check APPSTORE_ISSUER_ID, APPSTORE_KEY_ID, "
                         + "APPSTORE_PRIVATE_KEY_FILE and APPSTORE_BUNDLE_ID")
            return .appStoreUnavailable
        default: return .appStoreUnavailable
        }
    }
}
