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

    /// Creates the order, or answers the existing one for an identical replay. `allowedApps` is an
    /// app token's `apps` claim: a create through another app is 403 `app_not_allowed`, before
    /// anything is written.
    public func create(_ input: CreateOrderInput, allowedApps: Set<String>? = nil) async throws(APIError) -> Created {
        let app = try Self.admittedApp(for: input, in: configuration.apps, allowedApps: allowedApps)
        // The request was read against the catalog in force; a reload binding another may have
        // begun since (`CatalogSource.readsAsACatalogName`): checked before the insert, and again after.
        if let productID = input.productID, context.catalog.readsAsACatalogName(productID) {
            throw CreateOrderInput.readsAsACatalogName
        }
        let createdAt = now()
        let outTradeNo = input.outTradeNo ?? Self.generateOutTradeNo(at: createdAt)
        let expiresAt = Date(timeIntervalSince1970: (createdAt.timeIntervalSince1970 + Double(input.expiresIn)).rounded(.down))
        let record = OrderRecord(
            outTradeNo: outTradeNo, amount: input.amount, description: input.description, clientIP: input.clientIP,
            attach: input.attach, userID: input.userID, productID: input.productID,
            signType: configuration.newOrders.signType, timeExpire: BeijingTime.format(expiresAt), expiresAt: expiresAt,
            createdAt: createdAt, parametersDigest: input.parametersDigest, apiVersion: configuration.newOrders.apiVersion,
            app: app.name, appID: app.appID, tradeType: app.kind.tradeType, openID: input.openID)
        var result = try await storage { () throws(StorageError) in
            try await self.store.create(record, event: NewOrderEvent(
                kind: "created",
                detail: "amount=\(input.amount) expires_in=\(input.expiresIn) app=\(app.name) api=\(record.apiVersion)",
                at: createdAt), terms: input.terms)
        }
        if case .conflict(let stored) = result, input.clientIPFromPeer, stored.parametersDigest == input.legacyParametersDigest {
            // Created before the peer's address left the digest, and retried from the same one.
            result = .existing(stored)
        }
        let (order, created) = try instruments.creates(app.kind).resolve(result)
        // Again now that the order is stored, before it can be paid: a reload's scan of the
        // orders may have run between the check above and the insert.
        if let productID = order.productID, !hasLivePrepay(order), context.catalog.readsAsACatalogName(productID) {
            throw CreateOrderInput.readsAsACatalogName
        }
        return Created(created: created, view: try await prepare(order, redirectURL: input.redirectURL))
    }

    /// The app a create goes through, refused (403 `app_not_allowed`) when the app token's
    /// `apps` claim does not name it. The API asks before counting a create against the user's
    /// rate, so that a refused app costs the user nothing.
    static func admittedApp(for input: CreateOrderInput, in apps: WeChatApps,
                            allowedApps: Set<String>?) throws(APIError) -> WeChatApp {
        let app = try app(for: input, in: apps)
        if let allowedApps, !allowedApps.contains(app.name) { throw .appNotAllowed(app.name) }
        return app
    }

    /// The app a create goes through and whether the request suits its kind, decided before
    /// anything is written: a named app must exist (else the default app, which must exist), a
    /// JSAPI app needs the payer's openid and no other kind takes one, and only an h5 app takes a
    /// redirect_url, back to the merchant's own site (`H5Site.refusal(ofRedirect:)`).
    static func app(for input: CreateOrderInput, in apps: WeChatApps) throws(APIError) -> WeChatApp {
        let app: WeChatApp
        if let name = input.app {
            guard let named = apps.named(name) else {
                let names = apps.all.map(\.name).joined(separator: ", ")
                throw .invalid("app", "app must be one of the merchant's apps (\(names))")
            }
            app = named
        } else {
            guard let defaultApp = apps.defaultApp else {
                throw .invalid("app", "app is required: the merchant has no default app (WXPAY_APPS lists no single app of kind app)")
            }
            app = defaultApp
        }
        switch app.kind {
        case .miniprogram, .officialAccount:
            guard input.openID != nil else {
                throw .invalid("openid", "openid is required for app \(app.name) (\(app.kind.rawValue)): the payer's openid under its app id")
            }
        case .app, .native, .h5:
            guard input.openID == nil else {
                throw .invalid("openid", "openid is only for JSAPI apps (miniprogram, official_account); \(app.name) is \(app.kind.rawValue)")
            }
        }
        if let redirect = input.redirectURL {
            guard app.kind == .h5 else {
                throw .invalid("redirect_url", "redirect_url is only for h5 apps; \(app.name) is \(app.kind.rawValue)")
            }
            if let refusal = apps.h5Site?.refusal(ofRedirect: redirect) { throw .invalid("redirect_url", refusal) }
        }
        return app
    }

    /// Makes sure the order has a live prepay_id (one unifiedorder per order at a time, however
    /// many identical creates arrive) and answers what its client needs, by trade type. An order
    /// past its expires_at is answered here: WeChat closed it, and a prepay for it would only be
    /// refused (time_expire in the past) and add a failed line to its timeline each time.
    private func prepare(_ order: OrderRecord, redirectURL: String?) async throws(APIError) -> OrderView {
        if order.hasExpiredUnpaid(at: now()) { throw .orderExpired(at: order.expiresAt) }
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
            switch order.tradeType ?? "APP" {
            case "JSAPI": view.jsapiParams = try upstream.jsapiPayment(for: order, prepayID: prepayID, issuedAt: issuedAt)
            // The prepay stored them with the prepay_id (the upstream refuses an answer without).
            case "NATIVE": view.codeURL = order.codeURL
            case "MWEB": view.mwebURL = order.mwebURL.map { Self.mwebURL($0, redirectURL: redirectURL) }
            default: view.appParams = try upstream.appPayment(for: order, prepayID: prepayID, issuedAt: issuedAt)
            }
        } catch {
            // A repeated create of an order whose API version lost its keys (v3's, after going back).
            if error.isUnconfiguredVersion { throw .apiVersionNotConfigured(error) }
            logger.error("client parameters could not be made", ["error": "\(error)", "trade_type": order.tradeType ?? "APP"])
            throw .internalError
        }
        return view
    }

    /// WeChat's H5 page with `redirect_url` appended, URL-encoded as WeChat asks (every byte but
    /// unreserved ones escaped, so the URL's own `?`, `&` and `=` stay inside the parameter).
    static func mwebURL(_ url: String, redirectURL: String?) -> String {
        guard let redirectURL else { return url }
        var unreserved = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
        unreserved.insert(charactersIn: "-._~")
        let encoded = redirectURL.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
        return url + (url.contains("?") ? "&" : "?") + "redirect_url=" + encoded
    }

    func hasLivePrepay(_ order: OrderRecord) -> Bool {
        order.hasLivePrepay(at: now())
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
        let prepay: StoredPrepay
        do {
            prepay = try await upstream.prepay(order, notifyURL: context.callbacks.payment(for: order.apiVersion))
        } catch {
            var failure = await queries.upstreamFailure(error, outTradeNo: outTradeNo, api: "unifiedorder")
            failure.outTradeNo = outTradeNo
            return .failure(failure)
        }
        do {
            let issuedAt = now()
            // The prepay_id and its timeline event in one write (one savepoint in the group commit).
            guard let updated = try await store.setPrepay(
                outTradeNo, prepay: prepay, issuedAt: issuedAt,
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
