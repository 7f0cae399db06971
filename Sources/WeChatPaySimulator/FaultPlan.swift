// SPDX-License-Identifier: Apache-2.0

/// Faults injected into one API endpoint's answers. Rates are probabilities from 0 to 1, drawn from
/// the simulator's seeded generator, so a run with the same seed and the same requests replays.
public struct EndpointFaults: Codable, Sendable, Hashable {
    /// Answer `result_code=FAIL, err_code=SYSTEMERROR` after the request took effect: the merchant
    /// cannot tell whether it did, which is WeChat's real ambiguity.
    public var systemErrorRate: Double = 0
    /// Answer HTTP 502 with an HTML body.
    public var http5xxRate: Double = 0
    /// Cut the XML answer in half.
    public var truncatedRate: Double = 0
    /// Put bytes that are not UTF-8 into the answer.
    public var nonUTF8Rate: Double = 0
    /// Corrupt the answer's signature.
    public var badSignatureRate: Double = 0
    /// Leave the signature out of a SUCCESS answer.
    public var missingSignatureRate: Double = 0
    /// Close the connection without answering (the request took effect).
    public var resetRate: Double = 0
    /// Seconds added before answering.
    public var latency: Double = 0

    public init(
        systemErrorRate: Double = 0, http5xxRate: Double = 0, truncatedRate: Double = 0, nonUTF8Rate: Double = 0,
        badSignatureRate: Double = 0, missingSignatureRate: Double = 0, resetRate: Double = 0, latency: Double = 0
    ) {
        self.systemErrorRate = systemErrorRate
        self.http5xxRate = http5xxRate
        self.truncatedRate = truncatedRate
        self.nonUTF8Rate = nonUTF8Rate
        self.badSignatureRate = badSignatureRate
        self.missingSignatureRate = missingSignatureRate
        self.resetRate = resetRate
        self.latency = latency
    }

    var isEmpty: Bool { self == EndpointFaults() }
}

/// Faults injected into payment and refund notifies on their way to the merchant.
public struct NotifyFaults: Codable, Sendable, Hashable {
    /// Drop every attempt of an order's notify: the merchant never hears of the payment and must query.
    public var dropRate: Double = 0
    /// Drop a single attempt (WeChat retries on its schedule).
    public var attemptDropRate: Double = 0
    /// Send an attempt several times at once (WeChat documents concurrent duplicates).
    public var duplicateRate: Double = 0
    /// How many copies a duplicated attempt sends, all concurrently.
    public var duplicateCopies: Int = 2
    /// Seconds added before the first attempt.
    public var delay: Double = 0
    /// Up to this many extra seconds, drawn per notify, so notifies arrive out of order.
    public var reorderWindow: Double = 0

    public init(
        dropRate: Double = 0, attemptDropRate: Double = 0, duplicateRate: Double = 0, duplicateCopies: Int = 2,
        delay: Double = 0, reorderWindow: Double = 0
    ) {
        self.dropRate = dropRate
        self.attemptDropRate = attemptDropRate
        self.duplicateRate = duplicateRate
        self.duplicateCopies = duplicateCopies
        self.delay = delay
        self.reorderWindow = reorderWindow
    }
}

/// Every fault the simulator injects. Endpoint keys are API paths (`/pay/unifiedorder`) or `*` for all.
public struct FaultPlan: Codable, Sendable, Hashable {
    public var endpoints: [String: EndpointFaults] = [:]
    public var notify = NotifyFaults()

    public init(endpoints: [String: EndpointFaults] = [:], notify: NotifyFaults = NotifyFaults()) {
        self.endpoints = endpoints
        self.notify = notify
    }

    func faults(for path: String) -> EndpointFaults {
        endpoints[path] ?? endpoints["*"] ?? EndpointFaults()
    }
}
