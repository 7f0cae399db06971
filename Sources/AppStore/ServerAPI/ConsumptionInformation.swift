// SPDX-License-Identifier: Apache-2.0
import JSON

/// The body of Send Consumption Information (v2), Apple's `ConsumptionRequest`: what the developer
/// tells Apple about a purchase whose customer asked for a refund (a CONSUMPTION_REQUEST
/// notification). Apple takes it only with the customer's consent (`customerConsented` true;
/// anything else is refused with 4000035), within 12 hours of the request.
///
/// The rules Apple checks are checked here too (`violation`), so a body that would be refused is
/// never sent: the delivery status and refund preference from Apple's lists, the consumption
/// percentage in milliunits 0–100,000, zero unless delivered, and for GRANT_PRORATED "greater than
/// 0 and less than 100000" (Apple's `consumptionPercentage`).
///
/// Apple's errors for this endpoint, as its documentation and app-store-server-library's `APIError`
/// give them: 4000006 InvalidTransactionId, 4000035 InvalidCustomerConsented, 4000036
/// InvalidDeliveryStatus, 4000041 InvalidSampleContentProvided, 4000044 InvalidRefundPreference,
/// 4000185 FamilyTransactionNotSupported, 4000209 ConsumptionPercentageAutoRenewableSubscription,
/// 404 4040010 TransactionIdNotFound. ConsumptionPercentageOutOfRange and
/// UndeliveredConsumptionPercentageNonZero are documented without a published code, so they are
/// answered here (and by the simulator) with 4000000 GeneralBadRequest; the gateway never depends
/// on the code of a 400 (every one means: refused, not sent again).
public struct ConsumptionInformation: Sendable, Hashable {
    /// Apple's `deliveryStatus` values.
    public enum DeliveryStatus: String, Sendable, Hashable, CaseIterable {
        case delivered = "DELIVERED"
        case undeliveredQualityIssue = "UNDELIVERED_QUALITY_ISSUE"
        case undeliveredWrongItem = "UNDELIVERED_WRONG_ITEM"
        case undeliveredServerOutage = "UNDELIVERED_SERVER_OUTAGE"
        case undeliveredOther = "UNDELIVERED_OTHER"
    }

    /// Apple's `refundPreference` values.
    public enum RefundPreference: String, Sendable, Hashable, CaseIterable {
        case decline = "DECLINE"
        case grantFull = "GRANT_FULL"
        case grantProrated = "GRANT_PRORATED"
    }

    public var customerConsented: Bool
    public var sampleContentProvided: Bool
    public var deliveryStatus: DeliveryStatus
    /// Milliunits: 100,000 is all of it.
    public var consumptionPercentage: Int?
    public var refundPreference: RefundPreference?

    public init(customerConsented: Bool, sampleContentProvided: Bool, deliveryStatus: DeliveryStatus,
                consumptionPercentage: Int? = nil, refundPreference: RefundPreference? = nil) {
        self.customerConsented = customerConsented
        self.sampleContentProvided = sampleContentProvided
        self.deliveryStatus = deliveryStatus
        self.consumptionPercentage = consumptionPercentage
        self.refundPreference = refundPreference
    }

    /// The largest `consumptionPercentage`: 100 % in milliunits.
    public static let maximumPercentage = 100_000

    /// What GRANT_PRORATED takes: a part, neither nothing nor all of it (all of it is GRANT_FULL).
    public static let proratedPercentages = 1..<maximumPercentage

    /// Why Apple would refuse the body (its error's code and words), or nil. The customer's
    /// consent is not checked here: a body without it is never sent at all.
    public func violation() -> (errorCode: Int, message: String)? {
        if let percentage = consumptionPercentage {
            guard (0...Self.maximumPercentage).contains(percentage) else {
                return (4_000_000, "Invalid request. The consumption percentage is outside the valid range.")
            }
            if deliveryStatus != .delivered && percentage != 0 {
                return (4_000_000, "Invalid request. The consumption percentage must be zero for the provided delivery status.")
            }
        }
        if refundPreference == .grantProrated && !Self.proratedPercentages.contains(consumptionPercentage ?? 0) {
            return (4_000_044, "Invalid request. The refund preference field is invalid.")
        }
        return nil
    }

    /// As Apple names it.
    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "customerConsented": .bool(customerConsented), "sampleContentProvided": .bool(sampleContentProvided),
            "deliveryStatus": .string(deliveryStatus.rawValue),
        ]
        members["consumptionPercentage"] = consumptionPercentage.map { .int($0) }
        members["refundPreference"] = refundPreference.map { .string($0.rawValue) }
        return .object(members)
    }

    /// Reads Apple's body (the members `json` writes); nil for one that is not an object of that
    /// shape. Unknown members are ignored, as Apple ignores them.
    public init?(appleJSON json: JSONValue) {
        guard case .bool(let consented)? = json["customerConsented"], case .bool(let sample)? = json["sampleContentProvided"],
              let status = json["deliveryStatus"]?.stringValue.flatMap(DeliveryStatus.init(rawValue:))
        else { return nil }
        var percentage: Int?
        if let value = json["consumptionPercentage"] {
            guard let number = value.intValue else { return nil }
            percentage = Int(number)
        }
        var preference: RefundPreference?
        if let value = json["refundPreference"] {
            guard let parsed = value.stringValue.flatMap(RefundPreference.init(rawValue:)) else { return nil }
            preference = parsed
        }
        self.init(customerConsented: consented, sampleContentProvided: sample, deliveryStatus: status,
                  consumptionPercentage: percentage, refundPreference: preference)
    }
}
