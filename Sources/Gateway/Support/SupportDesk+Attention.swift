// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

/// Clearing the attention list: a person looked at an order's flags, did what they need (delivered
/// the course an unknown product paid for, told the business of a refund made elsewhere…) and says
/// so. Each flag handled is replaced by its `handled.` marker, so the order leaves the list and
/// still says what it was; the timeline and the audit log keep who and why.
extension SupportDesk {
    /// What marking an order's attention handled did.
    public struct AttentionHandled: Sendable {
        /// The order afterwards.
        public let order: OrderRecord
        /// The flags this call marked handled (sorted by name): what its audit entry names.
        public let handled: [OrderFlag]
    }

    /// Marks the order's attention flags `flags` (every one it carries when nil) handled for
    /// `reason`, by `actor`. 404 for an unknown order; 400 for a flag that is not an attention
    /// flag; 409 `no_attention_flag` when the order carries none of them.
    public func handleAttention(_ outTradeNo: String, flags names: [String]?, reason text: String?, by actor: String)
        async throws(APIError) -> AttentionHandled
    {
        let reason = try SupportReason.parse(text)
        var flags = OrderFlag.needingAttention
        if let names {
            let listed = OrderFlag.needingAttention.map(\.rawValue).sorted().joined(separator: ", ")
            guard !names.isEmpty, names.count <= flags.count else {
                throw .invalid("flags", "flags, when given, names 1 or more of \(listed)")
            }
            flags = []
            for name in names {
                guard let flag = OrderFlag(rawValue: name), OrderFlag.needingAttention.contains(flag) else {
                    throw .invalid("flags", "flags must be among \(listed)")
                }
                flags.insert(flag)
            }
        }
        let at = now()
        guard let found = try await context.storage({ () throws(StorageError) in try await self.store.order(outTradeNo) }) else {
            throw .orderNotFound
        }
        let handling = found.flags.intersection(flags)
        guard !handling.isEmpty else { throw .noAttentionFlag }
        let event = NewOrderEvent(
            kind: "attention_handled",
            detail: "\(handling.map(\.rawValue).sorted().joined(separator: ", ")) marked handled by \(actor): \(reason)", at: at)
        let result = try await context.storage { () throws(StorageError) in
            try await self.store.handleAttention(outTradeNo, flags: handling, event: event, at: at)
        }
        guard let result else { throw .orderNotFound }
        guard result.changed else { throw .noAttentionFlag }   // handled by someone else meanwhile
        return AttentionHandled(order: result.order, handled: handling.sorted { $0.rawValue < $1.rawValue })
    }
}
