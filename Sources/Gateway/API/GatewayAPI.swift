// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import Observability
import StorageCore
import Synchronization
import WeChatPay
import WeChatPayV3

/// The gateway's HTTP surface: routes, authentication, JSON errors, request logging. Handlers
/// only translate between HTTP and the flows of `GatewayServices`; the flows live there.
///
/// | route | scope |
/// |---|---|
/// | POST /v1/orders | client, or app (a catalog product, for the token's user) |
/// | GET /v1/orders/{out_trade_no}[?wait=N] | client or support, or app (own orders) |
/// | POST /v1/orders/{out_trade_no}/close | client, or app (own orders) |
/// | GET /v1/orders/{out_trade_no}/qr.png, qr.svg[?scale=N&border=N] | client, or app (own orders) |
/// | GET /v1/catalog | client or app |
/// | GET /v1/me/orders | app |
/// | GET /v1/users/{user_id}/entitlements | client, or app (the token's own user) |
/// | GET /openapi.json | none |
/// | POST /wechat/notify | WeChat (signed XML) |
/// | POST /wechat/v3/notify | WeChat (API v3: `Wechatpay-*` signature, encrypted resource) |
/// | POST /v1/orders/{out_trade_no}/refunds | client |
/// | GET /v1/refunds/{out_refund_no} | client or support |
/// | POST /wechat/refund-notify | WeChat (encrypted `req_info`) |
/// | POST /wechat/v3/refund-notify | WeChat (API v3) |
/// | POST /v1/iap/orders | client, or app (a catalog product with an apple_product_id) |
/// | POST /v1/iap/transactions | client or app (the token's user, or `user_id` with a client token) |
/// | POST /appstore/notifications | Apple (signed JWS) |
/// | POST /v1/iap/offers/signature | client (with `user_id`) or app (the token's user) |
/// | PUT /v1/iap/transactions/{transaction_id}/consumption | client |
/// | GET /v1/support/orders?out_trade_no=…\|transaction_id=…\|user_id=…\|apple_transaction_id=…\|original_transaction_id=…\|apple_order_id=…[&app=…][&trade_type=…] | support |
/// | GET /v1/support/attention[?flag=…] | support |
/// | POST /v1/support/orders/{out_trade_no}/recheck | support |
/// | POST /v1/support/outbox/{id}/redrive | support |
/// | POST /v1/support/apple-transactions/{transaction_id}/assign | support |
/// | POST /v1/support/orders/{out_trade_no}/attention/handled | support |
/// | POST /v1/support/subscriptions/{original_transaction_id}/extend | support |
/// | GET /healthz, /readyz, /metrics | none |
public struct GatewayAPI: Sendable {
    public let services: GatewayServices
    let authenticator: Authenticator
    let clientAddresses: ClientAddressResolver
    let logger: Logger
    /// Body caps: an order request is small; a notify is WeChat's XML (the codec caps it at 64 KiB too).
    static let orderBodyLimit = 16 * 1024

    /// A JSON route's options: its body limit, and the 413 past it in JSON like every answer of
    /// the API (`payload_too_large`), where the HTTP library's own would be a line of plain text.
    static func jsonRoute(maxBodyBytes limit: Int) -> HTTPRouteOptions {
        HTTPRouteOptions(maxBodyBytes: limit, payloadTooLarge: ("application/json", APIError.payloadTooLarge(limit: limit).json))
    }
    static let notifyBodyLimit = 64 * 1024
    /// The longest a `wait` may hold a request.
    static let maximumWait = 30.0

    public init(services: GatewayServices, logger: Logger = .disabled) {
        self.services = services
        let configuration = services.configuration
        authenticator = Authenticator(clientTokens: configuration.clientTokens, supportTokens: configuration.supportTokens,
                                      appTokenSecrets: configuration.app.tokenSecrets)
        clientAddresses = ClientAddressResolver(trustedProxies: configuration.app.trustedProxies)
        self.logger = logger
    }


    /// Adds every route to `router`: one listener serves everything.
    public func register(in router: inout HTTPRouter) {
        registerPublic(in: &router)
        registerAdmin(in: &router)
    }

    /// What WeChat, Apple and the apps call: the public address (GATEWAY_LISTEN).
    public func registerPublic(in router: inout HTTPRouter) {
        router.refusals = Self.routingRefusals
        router.add(.post, "/v1/orders", options: Self.jsonRoute(maxBodyBytes: Self.orderBodyLimit)) { request in
            try await self.handle(request, scopes: [.client, .app]) { caller in
                let result = try await self.services.creation.create(try self.createInput(request, caller),
                                                                     allowedApps: caller.appsAllowed)
                return Self.json(result.json, status: result.created ? 201 : 200)
            }
        }
        // Waits are held without a task: GatewayAPI+OrderQuery.swift.
        registerOrderQuery(in: &router)
        // A NATIVE order's QR code: GatewayAPI+QRCode.swift.
        registerQRCodes(in: &router)
        router.add(.post, "/v1/orders/{out_trade_no}/close", options: Self.jsonRoute(maxBodyBytes: 1024)) { request in
            try await self.handle(request, scopes: [.client, .app]) { caller in
                Self.json(try await self.services.closing.close(request.pathParameters["out_trade_no"] ?? "", owner: caller.owner))
            }
        }
        router.add(.post, "/wechat/notify", options: HTTPRouteOptions(maxBodyBytes: Self.notifyBodyLimit)) { request in
            let reply = await self.services.notifies.handleNotify(request.body)
            return HTTPServerResponse(status: 200, headers: ["Content-Type": "text/xml; charset=utf-8"], body: reply)
        }
        router.add(.post, "/wechat/v3/notify", options: HTTPRouteOptions(maxBodyBytes: Self.notifyBodyLimit)) { request in
            Self.v3Reply(await self.services.notifies.handleV3Notify(headers: Self.headerFields(request), body: request.body))
        }
        router.add(.get, "/v1/support/orders") { request in
            try await self.handle(request, scopes: [.support]) {
                Self.json(try await self.services.support.supportLookup(
                    outTradeNo: request.query["out_trade_no"], transactionID: request.query["transaction_id"],
                    userID: request.query["user_id"], appleTransactionID: request.query["apple_transaction_id"],
                    originalTransactionID: request.query["original_transaction_id"], appleOrderID: request.query["apple_order_id"],
                    app: request.query["app"], tradeType: request.query["trade_type"],
                    page: OrderPageRequest(limit: request.query["limit"], cursor: request.query["cursor"],
                                           defaultLimit: 100, maximum: 100)))
            }
        }
        router.add(.get, "/v1/support/attention") { request in
            try await self.handle(request, scopes: [.support]) {
                Self.json(try await self.services.support.attentionList(
                    flag: request.query["flag"],
                    page: OrderPageRequest(limit: request.query["limit"], cursor: request.query["cursor"],
                                           defaultLimit: 50, maximum: 100)))
            }
        }
        router.add(.post, "/v1/support/orders/{out_trade_no}/recheck", options: Self.jsonRoute(maxBodyBytes: 1024)) {
            request in
            try await self.handle(request, scopes: [.support]) {
                Self.json(try await self.services.support.recheck(request.pathParameters["out_trade_no"] ?? ""))
            }
        }
        router.add(.post, "/v1/support/outbox/{id}/redrive", options: Self.jsonRoute(maxBodyBytes: 1024)) { request in
            try await self.handle(request, scopes: [.support]) {
                Self.json(try await self.services.support.redriveOutboxEvent(request.pathParameters["id"] ?? ""))
            }
        }
        // Support's actions on the attention list: GatewayAPI+Support.swift.
        registerSupportActions(in: &router)
        registerSubscriptionExtension(in: &router)
        // One day's bill compared now: GatewayAPI+Bills.swift.
        registerBills(in: &router)
        // Refunds, their result notify and lookup: GatewayAPI+Refunds.swift.
        registerRefunds(in: &router)
        // The catalog, the app user's orders and the API description: GatewayAPI+App.swift.
        registerApp(in: &router)
        // iOS orders, transaction reports and App Store notifications: GatewayAPI+IAP.swift.
        registerIAP(in: &router)
        // Promotional offer signatures for iOS subscriptions: GatewayAPI+Offers.swift.
        registerOffers(in: &router)
    }

    /// What only operators use: probes and metrics (and the support console's routes, which its
    /// module registers beside these: `Console.register`). On the public address unless
    /// GATEWAY_ADMIN_LISTEN gives them one of their own.
    public func registerAdmin(in router: inout HTTPRouter) {
        router.refusals = Self.routingRefusals
        router.addImmediate(.get, "/healthz") { _ in .json(#"{"status":"ok"}"#) }
        router.add(.get, "/readyz") { _ in
            await self.services.context.probeReadiness()
                ? .json(#"{"status":"ready"}"#)
                : .json(#"{"status":"unavailable","reason":"database"}"#, status: 503)
        }
        // The readiness gauges are measured at each scrape, so an alert sees the database as the
        // scrape found it (Observability/HealthMetrics.swift).
        router.add(.get, "/metrics") { _ in
            _ = await self.services.context.probeReadiness()
            return HTTPServerResponse(status: 200, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
                                      body: Array(self.services.metrics.exposition().utf8))
        }
    }

    /// A request's header fields by name (v3's `Wechatpay-*`). A name on several lines gets its
    /// values joined with ", ", as RFC 9110 (5.3) combines them, never the last line alone: a
    /// repeated `Wechatpay-Signature` or `-Timestamp` is then no valid value (a proxy in front may
    /// have read the first line).
    static func headerFields(_ request: HTTPServerRequest) -> [String: String] {
        var fields: [String: String] = [:]
        for field in request.headers {
            if let earlier = fields[field.name] {
                fields[field.name] = earlier + ", " + field.value
            } else {
                fields[field.name] = field.value
            }
        }
        return fields
    }

    /// A v3 notify's answer: 204 without a body, or its status with `{"code":"FAIL","message":…}`.
    static func v3Reply(_ reply: V3NotifyReply) -> HTTPServerResponse {
        reply.body.isEmpty
            ? HTTPServerResponse(status: reply.status)
            : HTTPServerResponse(status: reply.status, headers: ["Content-Type": "application/json"], body: reply.body)
    }

    /// `handle` for a handler that does not need to know who called.
    func handle(_ request: HTTPServerRequest, scopes allowed: Set<Scope>,
                _ body: () async throws -> HTTPServerResponse) async throws -> HTTPServerResponse {
        try await handle(request, scopes: allowed) { (_: Caller) in try await body() }
    }

    /// Authentication comes first (before validation and before 404), then the handler; an
    /// `APIError` becomes its JSON answer.
    func handle(_ request: HTTPServerRequest, scopes allowed: Set<Scope>, note: AuditNote? = nil,
                _ body: (Caller) async throws -> HTTPServerResponse) async throws -> HTTPServerResponse {
        // The request line's metadata is built only when it will be written: at `warning` or
        // above (the benchmarks' level) it would run for every request and write nothing.
        let logsRequests = logger.isEnabled(.info)
        let started = logsRequests ? ContinuousClock.now : nil
        var response: HTTPServerResponse
        switch authenticate(request) {
        case .failure(let refused):
            response = Self.error(refused)
        case .success(let caller) where caller.scopes.isDisjoint(with: allowed):
            response = Self.error(.forbidden)
            // A support token tried a route that is not support's (a create, a refund, a close):
            // who tried what is on record like every call it makes. The 403 stands either way.
            if caller.scopes.contains(.support) {
                _ = await auditSupportCall(request, caller: caller, outcome: APIError.forbidden.code)
            }
        case .success(let caller):
            var outcome = "ok"
            do {
                response = try await body(caller)
            } catch let error as APIError {
                response = Self.error(error)
                outcome = error.code
            } catch {
                logger.with("request_id", String(request.requestID))
                    .error("unexpected failure", ["route": request.routeTemplate])
                response = Self.error(.internalError)
                outcome = APIError.internalError.code
            }
            // Support's calls are on record (Audit/GatewayAPI+Audit.swift); a look that cannot be
            // recorded is not answered.
            if allowed.contains(.support), caller.scopes.contains(.support),
               let refused = await auditSupportCall(request, caller: caller, outcome: outcome, note: note?.text ?? "")
            {
                response = refused
            }
        }
        if let started {
            let elapsed = ContinuousClock.now - started
            logger.with("request_id", String(request.requestID)).info("request", [
                "method": request.method.rawValue, "route": request.routeTemplate, "status": String(response.status),
                "ms": String(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000),
            ])
        }
        return response
    }

    /// The query's `wait`: seconds written in decimal (`10`, `2.5`), 0 to 30; 0 without one. Given
    /// twice, or in another form `Double` would read (`0x3`, `1e1`, `+5`, ` 5`), it is refused
    /// rather than read one way here and another by a proxy or a log reader.
    static func wait(_ query: HTTPServerQuery) throws(APIError) -> Double {
        let given = query.values(for: "wait")
        guard let text = given.first else { return 0 }
        guard given.count == 1, isDecimal(text), let seconds = Double(text), seconds <= maximumWait else {
            throw .invalid("wait", "wait must be a number of seconds from 0 to 30")
        }
        return seconds
    }

    /// Digits, then at most one `.` followed by digits.
    private static func isDecimal(_ text: String) -> Bool {
        let parts = text.utf8.split(separator: UInt8(ascii: "."), maxSplits: 1, omittingEmptySubsequences: false)
        return text.utf8.count <= 16 && parts.allSatisfy { part in !part.isEmpty && part.allSatisfy { (0x30...0x39).contains($0) } }
    }

    /// What the server answers before any route: JSON errors like every other answer of the API
    /// (a path no route has, a method the route does not take, a path or query that is not
    /// percent-encoded UTF-8 or holds a NUL).
    static let routingRefusals = HTTPRoutingRefusals(
        notFound: error(.notFound),
        methodNotAllowed: error(APIError(status: 405, code: "method_not_allowed",
                                         message: "the route does not take this method; Allow lists those it takes")),
        malformed: error(APIError(status: 400, code: "invalid_request",
                                  message: "the path or query is not percent-encoded UTF-8, or holds a NUL")),
        shuttingDown: error(.shuttingDown))

    static func json(_ body: [UInt8], status: Int = 200) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: ["Content-Type": "application/json"], body: body)
    }

    static func error(_ error: APIError) -> HTTPServerResponse {
        var response = json(error.json, status: error.status)
        if let retryAfter = error.retryAfter { response.headers["Retry-After"] = String(retryAfter) }
        // RFC 6750 §3: a token that was presented but refused says so.
        if error.status == 401 {
            response.headers["WWW-Authenticate"] = error.code == "invalid_token" ? #"Bearer error="invalid_token""# : "Bearer"
        }
        return response
    }
}
