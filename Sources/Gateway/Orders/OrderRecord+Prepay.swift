// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension OrderRecord {
    /// How long WeChat keeps a prepay_id, and a NATIVE order's code_url with it: 2 hours. An
    /// identical create after that asks WeChat again and gets new ones.
    static let prepayLifetime: TimeInterval = 2 * 3600

    /// Whether the order holds a prepay WeChat still honours at `now`: a prepay_id (or, for a v3
    /// NATIVE order, the code_url in its place) issued less than `prepayLifetime` ago.
    func hasLivePrepay(at now: Date) -> Bool {
        guard prepayID != nil, let issuedAt = prepayIssuedAt else { return false }
        return now.timeIntervalSince(issuedAt) < Self.prepayLifetime
    }

    /// Whether the order is still open here but past its `expires_at` (the `time_expire` WeChat
    /// was sent) at `now`: WeChat has closed it, whether or not the reconciler has learnt so, and
    /// nothing can pay it any more. The QR code route and a repeated create both answer it 410
    /// `order_not_payable` from this, without asking WeChat.
    func hasExpiredUnpaid(at now: Date) -> Bool {
        !state.isFinal && expiresAt <= now
    }
}
