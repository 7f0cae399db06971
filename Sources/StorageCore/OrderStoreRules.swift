// SPDX-License-Identifier: Apache-2.0
import Foundation

// What every store does the same way: the preconditions of each operation and the decisions the
// one door makes. A store only says how to read and write its rows; what to write is decided here.

extension OrderRecord {
    /// `create` accepts only a new, unpaid order: payment enters an order only through
    /// `transition`, so a create cannot smuggle it in.
    package func validateNew() throws(StorageError) {
        guard state == .notPay, transactionID == nil, paidAt == nil, appleTransactionID == nil,
              originalTransactionID == nil, environment == nil
        else {
            throw .invalidArgument("an order is created NOTPAY, without payment details")
        }
        try StoreText.validate(outTradeNo, description, clientIP, signType, timeExpire, parametersDigest)
        try StoreText.validate(attach, userID, productID, appleProductID, appAccountToken, currency)
        guard OrderRecord.apiVersions.contains(apiVersion) else {
            throw .invalidArgument("an order's API version is v2 or v3")
        }
        try StoreText.validate(app, appID, openID, codeURL, mwebURL)
        if let tradeType, !OrderRecord.tradeTypes.contains(tradeType) {
            throw .invalidArgument("an order's trade type is APP, JSAPI, NATIVE or MWEB")
        }
        if let currency, !OrderRecord.isCurrencyCode(currency) {
            throw .invalidArgument("a currency is three capital letters (ISO 4217)")
        }
    }

    /// The WeChat Pay API versions an order can be created with (the column's CHECK in both stores).
    package static let apiVersions: Set<String> = ["v2", "v3"]

    /// WeChat's trade types (the column's CHECK in both stores).
    package static let tradeTypes: Set<String> = ["APP", "JSAPI", "NATIVE", "MWEB"]

    /// `CNY`, `USD`: three ASCII capitals.
    package static func isCurrencyCode(_ text: String) -> Bool {
        text.utf8.count == 3 && text.utf8.allSatisfy { $0 >= 0x41 && $0 <= 0x5A }
    }
}

package enum StoreText {
    /// PostgreSQL's `text` cannot hold U+0000, so no store accepts it: an order that one store keeps
    /// must be one every store keeps. (The gateway refuses control characters long before.) Every
    /// operation of both stores checks its text through here, or through a `validate()` below,
    /// before it touches the database: `StoreTextTests` tries each one on both stores.
    package static func validate(_ values: String?...) throws(StorageError) {
        for value in values {
            guard let value else { continue }
            if containsNUL(value) { throw .invalidArgument("text cannot contain U+0000") }
        }
    }

    /// One `memchr` over the string's bytes: every notify's outbox payload (half a KiB of JSON) is
    /// checked here, and the byte-by-byte walk of the UTF-8 view it replaced cost about a
    /// microsecond of each.
    private static func containsNUL(_ value: String) -> Bool {
        if let found = value.utf8.withContiguousStorageIfAvailable({ bytes in
            guard let base = bytes.baseAddress else { return false }
            return memchr(base, 0, bytes.count) != nil
        }) {
            return found
        }
        return value.utf8.contains(0)
    }
}

extension NewOrderEvent {
    package func validate() throws(StorageError) {
        try StoreText.validate(kind, detail)
    }
}

extension Optional<NewOrderEvent> {
    package func validate() throws(StorageError) {
        try self?.validate()
    }
}

extension OutboxEvent {
    package func validate() throws(StorageError) {
        try StoreText.validate(id, outTradeNo, type, payload, lastError)
    }

    /// An event written beside a change of `outTradeNo` must be about that order.
    package func validate(belongsTo outTradeNo: String?) throws(StorageError) {
        guard self.outTradeNo == outTradeNo else { throw .invalidArgument("the outbox event belongs to another order") }
        try validate()
    }
}

extension OrderTransition {
    package func validate() throws(StorageError) {
        try outbox?.validate(belongsTo: outTradeNo)
        try followUp?.validate(belongsTo: outTradeNo)
        try StoreText.validate(outTradeNo, transactionID, detail, receipt?.kind, receipt?.changedDetail,
                               receipt?.unchangedDetail, apple?.transactionID, apple?.originalTransactionID,
                               apple?.environment)
    }

    /// The states the door moves the order from: a move to the state the order is already in is a
    /// duplicate, never a second change.
    package var sourceStates: Set<OrderState> { allowedFrom.subtracting([to]) }

    /// Whether the door changes an order that stands as `current` (read under its lock).
    package func changes(_ current: OrderRecord) -> Bool {
        sourceStates.contains(current.state) && (expectedAmount == nil || expectedAmount == current.amount)
    }

    /// The order's flags after the change, or nil when the change adds none.
    package func flags(after current: Set<OrderFlag>) -> Set<OrderFlag>? {
        OrderRecord.flags(current, adding: addingFlags)
    }

    /// The `state_changed` event of an effective transition, e.g. `NOTPAY -> SUCCESS: notify`.
    package func stateChangedEvent(from before: OrderState) -> NewOrderEvent {
        var detail = "\(before.rawValue) -> \(to.rawValue)"
        if !self.detail.isEmpty { detail += ": " + self.detail }
        return NewOrderEvent(kind: OrderEvent.stateChangedKind, detail: detail, at: at)
    }

    /// The receipt's timeline event, written after the `state_changed` event when there is one.
    package func receiptEvent(changed: Bool) -> NewOrderEvent? {
        receipt.map { NewOrderEvent(kind: $0.kind, detail: changed ? $0.changedDetail : $0.unchangedDetail, at: at) }
    }

    /// Whether an unchanged transition still writes its receipt: not when the order stands in a
    /// state the caller defers to a second transition (paid after close).
    package func writesReceipt(unchangedIn state: OrderState) -> Bool {
        guard let receipt else { return false }
        return !receipt.deferredWhenUnchangedIn.contains(state)
    }
}

extension NewRefund {
    /// What `createRefund` answers, from what its transaction read under the order's lock: the
    /// order's state and amount, a refund already recorded with this number, and the order's
    /// refund count and the amount its open refunds reserve. Nil: record the refund.
    package func decision(orderState: OrderState, orderAmount: Int, existing: RefundRecord?, refundCount: Int, reserved: Int,
                  maximumPerOrder: Int) -> RefundCreateResult? {
        if let existing {
            let same = existing.outTradeNo == outTradeNo && existing.parametersDigest == parametersDigest
            return same ? .existing(existing) : .conflict(existing)
        }
        guard orderState == .success || orderState == .refund else { return .orderNotRefundable(orderState) }
        guard refundCount < maximumPerOrder else { return .limitReached(refundCount) }
        guard amount <= orderAmount - reserved else { return .exceedsPaid(refundable: max(0, orderAmount - reserved)) }
        return nil
    }

    package func validate() throws(StorageError) {
        try StoreText.validate(outRefundNo, outTradeNo, reason, notifyURL, parametersDigest)
    }
}

extension RefundTransition {
    package func validate() throws(StorageError) {
        try StoreText.validate(outRefundNo, expectedOutTradeNo, refundID, failureReason, detail)
    }

    /// The states the refund door moves a refund from: never the target (a repeat is a duplicate)
    /// and never a finished state (the database would refuse it anyway).
    package var sourceStates: Set<RefundState> { allowedFrom.subtracting([to]).filter { !$0.isFinal } }

    /// Whether the refund is not the one the caller means (another order or amount): then nothing is written.
    package func mismatches(_ refund: RefundRecord) -> Bool {
        if let expectedOutTradeNo, expectedOutTradeNo != refund.outTradeNo { return true }
        if let expectedAmount, expectedAmount != refund.amount { return true }
        return false
    }

    /// The order's timeline event of an effective refund transition.
    package func stateChangedEvent(from before: RefundState, to after: RefundRecord) -> NewOrderEvent {
        var detail = "\(after.outRefundNo): \(before.rawValue) -> \(after.state.rawValue)"
        if !self.detail.isEmpty { detail += ": " + self.detail }
        return NewOrderEvent(kind: "refund_state_changed", detail: detail, at: at)
    }

    /// The order's `state_changed` event when a successful refund moves it SUCCESS → REFUND.
    package func orderRefundedEvent(_ refund: RefundRecord) -> NewOrderEvent {
        NewOrderEvent(kind: OrderEvent.stateChangedKind, detail: "SUCCESS -> REFUND: refund \(refund.outRefundNo) succeeded",
                      at: at)
    }

    /// Whether the order's `refund_needs_attention` flag may have to change (a refund entered or left CHANGE).
    package func affectsAttention(before: RefundState, after: RefundState) -> Bool { before == .change || after == .change }

    /// The outbox event to insert for the changed refund, checked to belong to its order.
    package func outboxEvent(for refund: RefundRecord) throws(StorageError) -> OutboxEvent? {
        guard let event = outbox(refund) else { return nil }
        try event.validate(belongsTo: refund.outTradeNo)
        return event
    }

    /// The second event to insert for the changed refund and its order (as it reads after the
    /// change), checked to belong to that order.
    package func followUpEvent(for refund: RefundRecord, order: OrderRecord) throws(StorageError) -> OutboxEvent? {
        guard let event = followUp(refund, order) else { return nil }
        try event.validate(belongsTo: refund.outTradeNo)
        return event
    }
}

extension OrderRecord {
    /// The order's flags with `flags` added (`addFlags`), or nil when it carries them all already.
    package func flags(adding flags: Set<OrderFlag>) -> Set<OrderFlag>? {
        Self.flags(self.flags, adding: flags)
    }

    package static func flags(_ current: Set<OrderFlag>, adding flags: Set<OrderFlag>) -> Set<OrderFlag>? {
        flags.isSubset(of: current) ? nil : current.union(flags)
    }

    /// The flags with each of `handled` the order carries replaced by its `handled.` marker
    /// (`ConsoleStore.handleAttention`); nil when it carries none of them.
    package static func flags(_ current: Set<OrderFlag>, handling handled: Set<OrderFlag>) -> Set<OrderFlag>? {
        let carried = current.intersection(handled)
        guard !carried.isEmpty else { return nil }
        return current.subtracting(carried).union(carried.map(\.handled))
    }

    /// The flags with `refund_needs_attention` set exactly when `needed`; nil when they already are.
    package static func flags(_ flags: Set<OrderFlag>, refundAttention needed: Bool) -> Set<OrderFlag>? {
        var flags = flags
        let changed = needed ? flags.insert(.refundNeedsAttention).inserted : flags.remove(.refundNeedsAttention) != nil
        return changed ? flags : nil
    }
}
