// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
import StorageCore

/// Identical creates reaching several instances on one shared store (PostgreSQL) make one
/// unifiedorder: the instance that wins the order's claim calls WeChat (see
/// OrderQueries+Instances.swift for what else changes with several instances).
extension OrderCreation {
    /// How long an instance may take over unifiedorder for an order before another may try: its
    /// three attempts with their timeouts and backoff fit in it.
    static let prepayClaimSeconds: TimeInterval = 40

    /// The order's prepay_id on a shared store: the instance that wins the order's unifiedorder
    /// claim calls WeChat, the others wait for its prepay_id (woken by the change feed when it is
    /// stored or the claim is given up, and re-reading every 250 ms whatever the feed does). A
    /// claim given up (the call failed) or run out (the instance died) lets the next one try.
    func prepayAcrossInstances(_ outTradeNo: String, claims: any OrderCallClaims) async -> Result<OrderRecord, APIError> {
        let deadline = ContinuousClock.now + .seconds(Self.prepayClaimSeconds + 5)
        do {
            while true {
                let token = signals.token()
                guard let order = try await store.order(outTradeNo) else { return .failure(.orderNotFound) }
                if hasLivePrepay(order) { return .success(order) }
                let at = now()
                let until = at.addingTimeInterval(Self.prepayClaimSeconds)
                if try await claims.claimCall(.unifiedOrder, for: outTradeNo, now: at, until: until) {
                    let result = await unifiedOrder(order)
                    if case .failure = result {
                        try? await claims.releaseCall(.unifiedOrder, for: outTradeNo, claimedUntil: until)
                    }
                    return result
                }
                // A final order has no claim to win: create's own checks answer for it.
                if order.state.isFinal { return .failure(.conflict("the order with this out_trade_no is already \(order.state.rawValue)")) }
                guard ContinuousClock.now < deadline else { return .failure(.upstreamUnavailable) }
                _ = await signals.wait(for: outTradeNo, since: token, seconds: 0.25)
            }
        } catch {
            return .failure(apiError(for: error))
        }
    }
}
