// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
import StorageCore
import WeChatPay

/// The create flow (`POST /v1/orders`): the order recorded idempotently on its out_trade_no and
/// its parameters, one prepay per order at a time (OrderCreation+Instances.swift across several
/// instances), and the app's payment parameters.
public final class OrderCreation: OrderFlow {
    let context: GatewayContext
    /// What WeChat's refusals mean for the order (ORDERPAID is asked about first).
    let queries: OrderQueries

    /// How long WeChat keeps a prepay_id (2 hours); a re-entry after that asks for a fresh one.
    static let prepayLifetime: TimeInterval = 2 * 3600

    /// Made by `GatewayServices`, the composition root.
    init(context: GatewayContext, queries: OrderQueries) {
        self.context = context
        self.queries = queries
    }

    /// What `create` answers: the order and whether this call created it (201) or found it (200).
    public struct Created: Sendable {
        public var created: Bool
        var view: OrderView
        public var json: [UInt8] { view.json }
    }

    /// Creates the order, or answers the existing one for an identical replay.
    public func create(_ input: CreateOrderInput) async throws(APIError) -> Created {
        // Every order goes through the default app until a create can name another (issue 28).
        guard let app = configuration.apps.defaultApp else {
            throw .invalid("app", "the merchant has no default app: WXPAY_APPS lists no single app of kind app")
        }
        let createdAt = now()
        let outTradeNo = input.outTradeNo ?? Self.generateOutTradeNo(at: createdAt)
        let expiresAt = Date(timeIntervalSince1970: (createdAt.timeIntervalSince1970 + Double(input.expiresIn)).rounded(.down))
        let record = OrderRecord(
            outTradeNo: outTradeNo, amount: input.amount, description: input.description, clientIP: input.clientIP,
            attach: input.attach, userID: input.userID, productID: input.productID,
            signType: configuration.newOrders.signType, timeExpire: BeijingTime.format(expiresAt), expiresAt: expiresAt,
            createdAt: createdAt, parametersDigest: input.parametersDigest, apiVersion: configuration.newOrders.apiVersion,
            app: app.name, appID: app.appID, tradeType: app.kind.tradeType)
        let result = try await storage { () throws(StorageError) in
            try await self.store.create(record, event: NewOrderEvent(
                kind: "created", detail: "amount=\(input.amount) expires_in=\(input.expiresIn) api=\(record.apiVersion)",
                at: createdAt))
        }
        let (order, created) = try instruments.creates.resolve(result)
        return Created(created: created, view: try await prepare(order))
    }

    /// Makes sure the order has a live prepay_id (one unifiedorder per order at a time, however
    /// many identical creates arrive) and signs the app parameters.
    private func prepare(_ order: OrderRecord) async throws(APIError) -> OrderView {
        var order = order
        if !hasLivePrepay(order) {
            let outTradeNo = order.outTradeNo
            let outcome = await upstream.prepays.run(outTradeNo) { [self] in
                await self.requestPrepay(outTradeNo)
            }
            order = try outcome.get()
        }
        guard let prepayID = order.prepayID, let issuedAt = order.prepayIssuedAt else { throw .internalError }
        var view = OrderView(order)
        view.prepayID = prepayID
        do {
            view.appParams = try upstream.appPayment(for: order, prepayID: prepayID, issuedAt: issuedAt)
        } catch {
            logger.error("app parameters could not be signed", ["error": "\(error)"])
            throw .internalError
        }
        return view
    }

    func hasLivePrepay(_ order: OrderRecord) -> Bool {
        guard order.prepayID != nil, let issuedAt = order.prepayIssuedAt else { return false }
        return now().timeIntervalSince(issuedAt) < Self.prepayLifetime
    }

    /// The order with a live prepay_id: one unifiedorder (with retries on the same parameters) for
    /// the order as stored, unless a concurrent caller stored one meanwhile. With several instances
    /// on one store, one of them calls (OrderCreation+Instances.swift).
    private func requestPrepay(_ outTradeNo: String) async -> Result<OrderRecord, APIError> {
        if let claims = store as? any OrderCallClaims { return await prepayAcrossInstances(outTradeNo, claims: claims) }
        do {
            // Re-read: a concurrent caller may have stored a prepay_id while this one waited.
            guard let order = try await store.order(outTradeNo) else { return .failure(.orderNotFound) }
            if hasLivePrepay(order) { return .success(order) }
            return await unifiedOrder(order)
        } catch {
            return .failure(apiError(for: error))
        }
    }

    /// A prepay for `order` (v2 unifiedorder), and its prepay_id stored.
    func unifiedOrder(_ order: OrderRecord) async -> Result<OrderRecord, APIError> {
        let outTradeNo = order.outTradeNo
        let prepayID: String
        do {
            prepayID = try await upstream.prepay(order, notifyURL: context.callbacks.payment(for: order.apiVersion))
        } catch {
            return .failure(await queries.upstreamFailure(error, outTradeNo: outTradeNo, api: "unifiedorder"))
        }
        do {
            let issuedAt = now()
            // The prepay_id and its timeline event in one write (one savepoint in the group commit).
            guard let updated = try await store.setPrepay(
                outTradeNo, prepayID: prepayID, issuedAt: issuedAt,
                event: NewOrderEvent(kind: "prepay", detail: "prepay_id issued", at: issuedAt))
            else { return .failure(.orderNotFound) }
            return .success(updated)
        } catch {
            return .failure(apiError(for: error))
        }
    }

    /// A fresh out_trade_no: Beijing date and time plus 12 random characters (26 in all).
    static func generateOutTradeNo(at date: Date) -> String {
        BeijingTime.format(date) + String(RandomNonceSource().nextNonce().prefix(12))
    }
}
