// SPDX-License-Identifier: Apache-2.0
import StorageCore

extension GatewayContext {
    /// The order as the API shows it: a paid order with its refunds and what they returned
    /// (`refunded_amount` counts successful refunds), and its flags when it has any
    /// (`refund_needs_attention`, `paid_after_close`). Only a paid order can have refunds, so no
    /// other order costs a read.
    func view(_ order: OrderRecord) async throws(StorageError) -> OrderView {
        var view = OrderView(order)
        if !order.flags.isEmpty { view.flags = order.flags.map(\.rawValue).sorted() }
        // Apple refunds a purchase whole, and the gateway makes no refunds of its own on them.
        if order.channel == .apple {
            if order.state == .refund { view.refundedAmount = order.amount }
            return view
        }
        guard order.state == .success || order.state == .refund else { return view }
        let records = try await store.refunds(outTradeNo: order.outTradeNo)
        view.refunds = records.map(RefundView.init)
        view.refundedAmount = records.filter { $0.state == .success }.reduce(0) { $0 + $1.amount }
        return view
    }

    /// `view(_:)`, a storage failure answered as a 500 (or 503 while the database is down).
    func apiView(_ order: OrderRecord) async throws(APIError) -> OrderView {
        try await storage { () throws(StorageError) in try await self.view(order) }
    }

    /// `view(_:)` as JSON, a storage failure answered as a 500 (or 503).
    func viewJSON(_ order: OrderRecord) async throws(APIError) -> [UInt8] {
        try await apiView(order).json
    }
}
