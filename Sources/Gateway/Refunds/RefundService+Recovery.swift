// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
import StorageCore
import WeChatPay

extension RefundService {
    /// What one check of a PROCESSING refund came to.
    enum CheckOutcome: Sendable, Hashable {
        /// Still PROCESSING (WeChat is working on it, or it was just sent again).
        case open
        /// Moved to SUCCESS, CHANGE or REFUNDCLOSE by this check.
        case settled
        /// WeChat could not be asked (or answered something unusable); the next sweep asks again.
        case failed
    }

    /// Asks WeChat about a refund that heard no notify (refundquery by `out_refund_no`) and settles
    /// the answer through the one door. `REFUNDNOTEXIST` means the refund never reached WeChat (a
    /// crash between recording it and sending it, or every attempt lost on the way): it is sent
    /// again, under the same number with the same parameters, so it can never become two refunds.
    func check(_ refund: RefundRecord, source: String = "reconcile") async -> CheckOutcome {
        let number = refund.outRefundNo
        guard let current = try? await store.refund(number), current.state == .processing,
              let order = try? await context.store.order(current.outTradeNo)
        else { return .open }
        let at = now()
        _ = try? await store.touchRefund(number, queriedAt: at)
        if let problem = context.upstream.unconfigured(.queryRefund, for: order) {
            // Not WeChat failing (no backoff, no error counted): said on the timeline once a day.
            _ = try? await context.store.appendEvent(
                current.outTradeNo,
                NewOrderEvent(kind: "\(source)_failed", detail: "\(number): refundquery not sent: \(problem.shortDescription)", at: at),
                quietSince: at.addingTimeInterval(-OrderQueries.notAskedQuiet), matching: .kindAndDetail)
            return .open
        }
        do {
            let answer = try await context.upstream.queryRefund(number, order: order)
            return await apply(answer, to: current, source: source)
        } catch where error.notFound {
            _ = try? await context.store.appendEvent(
                current.outTradeNo, kind: source,
                detail: "\(number): refundquery REFUNDNOTEXIST; sending it again (same out_refund_no, same parameters)", at: at)
            switch await send(current, source: source) {
            case .accepted: return .open
            case .refused: return .settled
            case .pending: return .failed
            }
        } catch {
            _ = try? await context.store.appendEvent(
                current.outTradeNo, kind: "\(source)_failed", detail: "\(number): refundquery \(error.shortDescription)", at: now())
            instruments.queryErrors.labelled(error.shortDescription).increment()
            return .failed
        }
    }

    /// A verified refundquery answer about `refund`, settled through the one door when final.
    func apply(_ answer: UpstreamRefundReport, to refund: RefundRecord, source: String) async -> CheckOutcome {
        let number = refund.outRefundNo
        guard answer.outTradeNo == refund.outTradeNo, let entry = answer.refunds.first(where: { $0.outRefundNo == number }) else {
            logger.error("refundquery answered about another refund", ["out_refund_no": number])
            return .failed
        }
        guard entry.amount == refund.amount else {
            // A signed answer for another amount: never settled on; a person must look.
            instruments.amountMismatches.increment()
            _ = try? await context.store.appendEvent(
                refund.outTradeNo, kind: "refund_amount_mismatch",
                detail: "\(number): refundquery reports \(entry.amount) fen, the refund is \(refund.amount) fen", at: now())
            return .failed
        }
        let target: RefundState
        switch entry.status {
        case .success: target = .success
        case .change: target = .change
        case .refundClose: target = .refundClose
        case .processing, .unknown:
            if refund.refundID == nil {
                let at = now()
                _ = try? await store.recordRefundAccepted(
                    number, refundID: entry.refundID, at: at,
                    event: NewOrderEvent(kind: "refund_accepted", detail: "\(number): refundquery shows it accepted, refund_id \(entry.refundID)", at: at))
            }
            if refund.lastQueriedAt == nil {
                _ = try? await context.store.appendEvent(
                    refund.outTradeNo, kind: source, detail: "\(number): refundquery refund_status=\(entry.status.rawValue)", at: now())
            }
            return .open
        }
        do {
            let result = try await settle(
                number, to: target, source: "\(source): refundquery", refundID: entry.refundID,
                succeededAt: entry.succeededAt.map { Self.succeededAt(reported: $0, refund: refund, at: now()) },
                expectedOutTradeNo: refund.outTradeNo, expectedAmount: refund.amount)
            return result.didChange ? .settled : .open
        } catch {
            logger.error("storage failure while settling a refund", ["out_refund_no": number, "error": error.shortDescription])
            return .failed
        }
    }
}
