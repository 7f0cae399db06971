// SPDX-License-Identifier: Apache-2.0
import AppStore
import JSON

/// A validated answer to a consumption request: the body of `PUT
/// /v1/iap/transactions/{transaction_id}/consumption`, and of APPSTORE_CONSUMPTION_DEFAULTS.
///
/// `{"customer_consented": true, "delivery_status": "DELIVERED", "sample_content_provided": false,
/// "consumption_percentage": 25000, "refund_preference": "GRANT_PRORATED"}` — Apple's values and
/// units under our snake_case names. Everything Apple would refuse is refused here, naming the
/// field, so what is recorded is what can be sent: a delivery status and refund preference from
/// Apple's lists, a percentage in milliunits 0–100,000 (0 unless delivered; above 0 for
/// GRANT_PRORATED), booleans as booleans. Consent false is a valid answer: nothing is then sent.
enum ConsumptionAnswer {
    static let fields: Set<String> = [
        "customer_consented", "delivery_status", "sample_content_provided", "consumption_percentage", "refund_preference",
    ]

    static func parse(_ body: [UInt8]) throws(APIError) -> ConsumptionInformation {
        let object = try CreateOrderInput.members(of: body)
        if let unknown = object.keys.sorted().first(where: { !fields.contains($0) }) {
            throw .invalid(CreateOrderInput.printableField(unknown), "unknown field")
        }
        func bool(_ name: String) throws(APIError) -> Bool {
            guard case .bool(let value)? = object[name] else { throw .invalid(name, "\(name) is required: true or false") }
            return value
        }
        let consented = try bool("customer_consented")
        let sample = try bool("sample_content_provided")
        let statuses = ConsumptionInformation.DeliveryStatus.allCases.map(\.rawValue).joined(separator: ", ")
        guard let statusText = try CreateOrderInput.string(object, "delivery_status", required: true, bytes: 1...64),
              let status = ConsumptionInformation.DeliveryStatus(rawValue: statusText)
        else { throw .invalid("delivery_status", "delivery_status must be one of \(statuses)") }
        var preference: ConsumptionInformation.RefundPreference?
        if let text = try CreateOrderInput.string(object, "refund_preference", required: false, bytes: 1...64) {
            guard let parsed = ConsumptionInformation.RefundPreference(rawValue: text) else {
                let preferences = ConsumptionInformation.RefundPreference.allCases.map(\.rawValue).joined(separator: ", ")
                throw .invalid("refund_preference", "refund_preference must be one of \(preferences)")
            }
            preference = parsed
        }
        let percentage = try CreateOrderInput.integer(object, "consumption_percentage", required: false,
                                                      range: 0...ConsumptionInformation.maximumPercentage)
        let information = ConsumptionInformation(customerConsented: consented, sampleContentProvided: sample,
                                                 deliveryStatus: status, consumptionPercentage: percentage,
                                                 refundPreference: preference)
        if information.violation() != nil {
            if preference == .grantProrated && !ConsumptionInformation.proratedPercentages.contains(percentage ?? 0) {
                throw .invalid("refund_preference",
                               "GRANT_PRORATED needs a consumption_percentage above 0 and below 100000 (all of it is GRANT_FULL)")
            }
            throw .invalid("consumption_percentage", "consumption_percentage must be 0 unless delivery_status is DELIVERED")
        }
        return information
    }

    /// Our names, for the timeline and the console: `consented, DELIVERED, 25.000 % consumed, GRANT_PRORATED`.
    static func summary(_ information: ConsumptionInformation) -> String {
        var parts = [information.customerConsented ? "customer consented" : "no consent", information.deliveryStatus.rawValue]
        if let percentage = information.consumptionPercentage {
            parts.append("\(AppStorePrice.decimal(Int64(percentage))) % consumed")
        }
        parts.append("sample content \(information.sampleContentProvided ? "provided" : "not provided")")
        if let preference = information.refundPreference { parts.append("refund preference \(preference.rawValue)") }
        return parts.joined(separator: ", ")
    }
}
