// SPDX-License-Identifier: Apache-2.0
import SimulatorKit

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
    /// Hold the connection `timeoutSeconds` and close it without answering (the request took
    /// effect): the caller's own timeout fires first, as when WeChat or the path to it hangs.
    public var timeoutRate: Double = 0
    /// How long a timed-out answer is held. Default 15 s, past the 10 s most clients wait.
    public var timeoutSeconds: Double = 15
    /// Answer, correctly signed, about another order than the one asked about (an orderquery
    /// answer is the other order's whole status, a paid one's when there is one; other answers
    /// naming an `out_trade_no` get the other order's number): what a proxy or a connection pool
    /// that mixes up answers produces. Only answers that name an order can carry it.
    public var otherOrderRate: Double = 0
    /// v3 only: sign the answer with a timestamp ten minutes old (the caller must refuse it).
    public var staleTimestampRate: Double = 0

    public init(
        systemErrorRate: Double = 0, http5xxRate: Double = 0, truncatedRate: Double = 0, nonUTF8Rate: Double = 0,
        badSignatureRate: Double = 0, missingSignatureRate: Double = 0, resetRate: Double = 0, latency: Double = 0,
        timeoutRate: Double = 0, timeoutSeconds: Double = 15, otherOrderRate: Double = 0, staleTimestampRate: Double = 0
    ) {
        self.staleTimestampRate = staleTimestampRate
        self.systemErrorRate = systemErrorRate
        self.http5xxRate = http5xxRate
        self.truncatedRate = truncatedRate
        self.nonUTF8Rate = nonUTF8Rate
        self.badSignatureRate = badSignatureRate
        self.missingSignatureRate = missingSignatureRate
        self.resetRate = resetRate
        self.latency = latency
        self.timeoutRate = timeoutRate
        self.timeoutSeconds = timeoutSeconds
        self.otherOrderRate = otherOrderRate
    }

    var isEmpty: Bool { self == EndpointFaults() }
}

/// Every fault the simulator injects. Endpoint keys are API paths (`/pay/unifiedorder`), v3 route
/// templates (`/v3/pay/transactions/out-trade-no/{id}`) or `*` for all.
public struct FaultPlan: Codable, Sendable, Hashable {
    public var endpoints: [String: EndpointFaults] = [:]
    public var notify = NotifyFaults()
    /// The signatures of v3 notifies (probes, stale timestamps, bad signatures, unknown serials).
    public var v3Notify = V3NotifyFaults()

    public init(endpoints: [String: EndpointFaults] = [:], notify: NotifyFaults = NotifyFaults(), v3Notify: V3NotifyFaults = V3NotifyFaults()) {
        self.endpoints = endpoints
        self.notify = notify
        self.v3Notify = v3Notify
    }

    func faults(for path: String) -> EndpointFaults {
        endpoints[path] ?? endpoints["*"] ?? EndpointFaults()
    }
}

// Fault plans are written by hand (tests, the control API, scripts): a missing key means "no such
// fault", not an error, which synthesized decoding would make it; an unknown key is refused by name.
extension EndpointFaults {
    private enum CodingKeys: String, CodingKey, CaseIterable {
        case systemErrorRate, http5xxRate, truncatedRate, nonUTF8Rate, badSignatureRate, missingSignatureRate,
             resetRate, latency, timeoutRate, timeoutSeconds, otherOrderRate, staleTimestampRate
    }

    public init(from decoder: any Decoder) throws {
        try ControlBody.refuseUnknownMembers(decoder, known: CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            systemErrorRate: try ControlBody.rate(c, .systemErrorRate),
            http5xxRate: try ControlBody.rate(c, .http5xxRate),
            truncatedRate: try ControlBody.rate(c, .truncatedRate),
            nonUTF8Rate: try ControlBody.rate(c, .nonUTF8Rate),
            badSignatureRate: try ControlBody.rate(c, .badSignatureRate),
            missingSignatureRate: try ControlBody.rate(c, .missingSignatureRate),
            resetRate: try ControlBody.rate(c, .resetRate),
            latency: try c.decodeIfPresent(Double.self, forKey: .latency) ?? 0,
            timeoutRate: try ControlBody.rate(c, .timeoutRate),
            timeoutSeconds: try c.decodeIfPresent(Double.self, forKey: .timeoutSeconds) ?? 15,
            otherOrderRate: try ControlBody.rate(c, .otherOrderRate),
            staleTimestampRate: try ControlBody.rate(c, .staleTimestampRate))
    }
}

extension FaultPlan {
    private enum CodingKeys: String, CodingKey, CaseIterable { case endpoints, notify, v3Notify }

    public init(from decoder: any Decoder) throws {
        try ControlBody.refuseUnknownMembers(decoder, known: CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(endpoints: try c.decodeIfPresent([String: EndpointFaults].self, forKey: .endpoints) ?? [:],
                  notify: try c.decodeIfPresent(NotifyFaults.self, forKey: .notify) ?? NotifyFaults(),
                  v3Notify: try c.decodeIfPresent(V3NotifyFaults.self, forKey: .v3Notify) ?? V3NotifyFaults())
    }
}
