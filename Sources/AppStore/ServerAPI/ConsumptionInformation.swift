// SPDX-License-Identifier: Apache-2.0
import JSON

/// The body of Send Consumption Information (v2), Apple's `ConsumptionRequest`: what the developer
/// tells Apple about a purchase whose customer asked for a refund (a CONSUMPTION_REQUEST
/// notification). Apple takes it only with the customer's consent (`customerConsented` true;
/// anything else is refused with 4000035), within 12 hours of the request.
///
/// The rules Apple checks are checked here too (`validate`), so a body that would be refused is
/// never sent: the delivery status and refund preference from Apple's lists, the consumption
/// percentage in milliunits 0–100,000, zero unless delivered, and above zero for GRANT_PRORATED.
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
        if refundPreference == .grantProrated && (consumptionPercentage ?? 0) == 0 {
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
