// SPDX-License-Identifier: Apache-2.0

/// Faults injected into notifications (WeChat's payment and refund notifies, the App Store's
/// Server Notifications V2) on their way to the merchant.
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

extension NotifyFaults {
    private enum CodingKeys: String, CodingKey, CaseIterable {
        case dropRate, attemptDropRate, duplicateRate, duplicateCopies, delay, reorderWindow
    }

    public init(from decoder: any Decoder) throws {
        try ControlBody.refuseUnknownMembers(decoder, known: CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            dropRate: try ControlBody.rate(c, .dropRate),
            attemptDropRate: try ControlBody.rate(c, .attemptDropRate),
            duplicateRate: try ControlBody.rate(c, .duplicateRate),
            duplicateCopies: try c.decodeIfPresent(Int.self, forKey: .duplicateCopies) ?? 2,
            delay: try c.decodeIfPresent(Double.self, forKey: .delay) ?? 0,
            reorderWindow: try c.decodeIfPresent(Double.self, forKey: .reorderWindow) ?? 0)
    }
}
