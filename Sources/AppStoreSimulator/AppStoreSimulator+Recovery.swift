// SPDX-License-Identifier: Apache-2.0
import AppStore
import Crypto
import Foundation
import HTTP
import JSON
import SimulatorKit

/// Get Notification History and Send Consumption Information (v2), as Apple answers them.
extension AppStoreSimulator {
    /// How far back Get Notification History reaches.
    static let notificationHistoryDays = 180
    static let notificationHistoryPageSize = 20
    /// Apple's notification types (Get Notification History refuses others: 4000018).
    static let notificationTypes: Set<String> = [
        "CONSUMPTION_REQUEST", "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_STATUS", "DID_FAIL_TO_RENEW", "DID_RENEW",
        "EXPIRED", "EXTERNAL_PURCHASE_TOKEN", "GRACE_PERIOD_EXPIRED", "OFFER_REDEEMED", "ONE_TIME_CHARGE", "PRICE_INCREASE",
        "REFUND", "REFUND_DECLINED", "REFUND_REVERSED", "RENEWAL_EXTENDED", "RENEWAL_EXTENSION", "REVOKE", "SUBSCRIBED",
        "TEST",
    ]

    /// Get Notification History: `POST /inApps/v1/notifications/history[?paginationToken=…]`. The
    /// window (`startDate` ≤ signedDate < `endDate`, an end in the future read as now, a start at
    /// most 180 days back), one filter at most (`notificationType` with its `notificationSubtype`,
    /// or `transactionId`: that customer's), `onlyFailures`; 20 a page, oldest first, each with
    /// its send attempts (at most six). The pagination token is bound to the request's body.
    func notificationHistory(_ request: AppStoreSimulatorRequest, environment: AppStoreEnvironment, now: Date,
                             store: inout StoreState) -> AppStoreSimulatorResponse
    {
        guard let body = try? JSONValue.parse(request.body), body.objectValue != nil else {
            return Self.apiError(400, 4_000_000, "Invalid request.")
        }
        guard let start = body["startDate"]?.intValue else { return Self.apiError(400, 4_000_015, "Invalid start date.") }
        guard let end = body["endDate"]?.intValue else { return Self.apiError(400, 4_000_016, "Invalid end date.") }
        let nowMilliseconds = now.millisecondsSince1970
        guard Int64(start) >= nowMilliseconds - Int64(Self.notificationHistoryDays) * 86_400_000 else {
            return Self.apiError(400, 4_000_012, "Invalid request. The start date is earlier than the allowed start date.")
        }
        guard start < end else {
            return Self.apiError(400, 4_000_013, "Invalid request. The end date precedes the start date or the dates are the same.")
        }
        let type = body["notificationType"]?.stringValue
        let subtype = body["notificationSubtype"]?.stringValue
        let transactionID = body["transactionId"]?.stringValue
        if let type, !Self.notificationTypes.contains(type) { return Self.apiError(400, 4_000_018, "Invalid notification type.") }
        if subtype != nil && type == nil { return Self.apiError(400, 4_000_018, "Invalid notification type.") }
        if type != nil && transactionID != nil {
            return Self.apiError(400, 4_000_019, "Invalid request. Include either the transactionId or the notificationType.")
        }
        var customer: String?
        if let transactionID {
            guard Self.isTransactionID(transactionID) else { return Self.invalidTransactionID }
            guard let record = store.transactions[transactionID], record.transaction.environment == environment else {
                return Self.transactionNotFound
            }
            customer = record.user
        }
        let onlyFailures = body["onlyFailures"]?.boolValue ?? false
        // The token is the offset and a fingerprint of the request, as Apple's is good only for the
        // same request.
        let digest = SHA256.hash(request.body)
        let fingerprint = digest.prefix(6).map { String($0, radix: 16) }.joined()
        var offset = 0
        if let token = request.query["paginationToken"] {
            guard let bytes = Base64.decode(token, .urlUnpadded), let text = String(validating: bytes, as: UTF8.self),
                  let separator = text.firstIndex(of: "|"), text[text.index(after: separator)...] == fingerprint,
                  let value = Int(text[..<separator]), value >= 0
            else { return Self.apiError(400, 4_000_014, "Invalid pagination token.") }
            offset = value
        }
        let attempts = Dictionary(grouping: notifications.history, by: \.reference)
        // An end in the future is now (and what was signed this very millisecond is in).
        let clampedEnd = Int64(end) > nowMilliseconds ? nowMilliseconds + 1 : Int64(end)
        let matching = store.notificationOrder.compactMap { store.notifications[$0] }.filter { recorded in
            let signed = recorded.signedDate.millisecondsSince1970
            guard recorded.environment == environment, signed >= Int64(start), signed < clampedEnd else { return false }
            if let type, recorded.type != type { return false }
            if let subtype, recorded.subtype != subtype { return false }
            if let customer, recorded.user != customer { return false }
            if onlyFailures, attempts[recorded.uuid]?.contains(where: \.acknowledged) == true { return false }
            return true
        }
        guard offset <= matching.count else { return Self.apiError(400, 4_000_014, "Invalid pagination token.") }
        let page = matching[offset..<min(matching.count, offset + Self.notificationHistoryPageSize)]
        let items: [JSONValue] = page.map { recorded in
            let sent = (attempts[recorded.uuid] ?? []).suffix(6).map { attempt -> JSONValue in
                let result = attempt.acknowledged ? "SUCCESS" : attempt.dropped ? "TIMED_OUT" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
                return ["attemptDate": .int(Int(attempt.at.millisecondsSince1970)), "sendAttemptResult": .string(result)]
            }
            return ["signedPayload": .string(recorded.signedPayload), "sendAttempts": .array(Array(sent))]
        }
        let next = offset + page.count
        var answer: [String: JSONValue] = ["notificationHistory": .array(items), "hasMore": .bool(next < matching.count)]
        if next < matching.count {
            answer["paginationToken"] = .string(Base64.encode(Array("\(next)|\(fingerprint)".utf8), .urlUnpadded))
        }
        return Self.json(.object(answer))
    }

    /// Send Consumption Information (v2): `PUT /inApps/v2/transactions/consumption/{transactionId}`,
    /// 202 with no body once the body passes Apple's checks, each refusal with Apple's error.
    func consumption(_ id: String, body: [UInt8], environment: AppStoreEnvironment, now: Date, store: inout StoreState)
        -> AppStoreSimulatorResponse
    {
        guard Self.isTransactionID(id) else { return Self.invalidTransactionID }
        guard let record = store.transactions[id], record.transaction.environment == environment else {
            return Self.transactionNotFound
        }
        if record.transaction.inAppOwnershipType == .familyShared {
            return Self.apiError(400, 4_000_185, "Invalid request. Family Sharing transactions aren't supported by this endpoint.")
        }
        guard let json = try? JSONValue.parse(body), json.objectValue != nil else {
            return AppStoreSimulatorResponse(status: 400, contentType: "application/json", body: [])
        }
        guard json["customerConsented"] == .bool(true) else {
            return Self.apiError(400, 4_000_035, "Invalid request. The customer consented field is required and must indicate the customer consented.")
        }
        guard json["deliveryStatus"]?.stringValue.flatMap(ConsumptionInformation.DeliveryStatus.init(rawValue:)) != nil else {
            return Self.apiError(400, 4_000_036, "Invalid request. The delivery status field is invalid.")
        }
        guard json["sampleContentProvided"]?.boolValue != nil else {
            return Self.apiError(400, 4_000_041, "Invalid request. The sample content provided field is invalid.")
        }
        if let preference = json["refundPreference"],
           preference.stringValue.flatMap(ConsumptionInformation.RefundPreference.init(rawValue:)) == nil {
            return Self.apiError(400, 4_000_044, "Invalid request. The refund preference field is invalid.")
        }
        guard let information = ConsumptionInformation(appleJSON: json) else {
            return Self.apiError(400, 4_000_000, "Invalid request. The consumption percentage is outside the valid range.")
        }
        if information.consumptionPercentage != nil && record.transaction.type == .autoRenewableSubscription {
            return Self.apiError(400, 4_000_209, "Invalid request. The consumption percentage field is not supported for "
                                     + "auto-renewable subscription transactions.")
        }
        if let (code, message) = information.violation() { return Self.apiError(400, code, message) }
        store.consumptionReceived.append(ConsumptionReceived(
            transactionId: id, environment: environment, receivedAt: now.millisecondsSince1970,
            body: String(decoding: body, as: UTF8.self)))
        store.count("consumption accepted")
        return AppStoreSimulatorResponse(status: 202, contentType: "application/json", body: [])
    }
}
