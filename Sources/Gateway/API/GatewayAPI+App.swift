// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import Observability

/// The routes and rules of the Android app as a client: app-token creates priced by the catalog,
/// the catalog itself, the user's own orders and entitlements, and the API's description.
extension GatewayAPI {
    func registerApp(in router: inout HTTPRouter) {
        router.add(.get, "/v1/catalog") { request in
            try await self.handle(request, scopes: [.client, .app]) {
                Self.json(self.services.context.catalog.catalog.json)
            }
        }
        router.add(.get, "/v1/me/orders") { request in
            try await self.handle(request, scopes: [.app]) { caller in
                guard let user = caller.appUser else { throw APIError.forbidden }
                let page = try OrderPageRequest(limit: request.query["limit"], cursor: request.query["cursor"],
                                                defaultLimit: 20, maximum: 50)
                return Self.json(try await self.services.queries.userOrders(user, page: page))
            }
        }
        router.add(.get, "/v1/users/{user_id}/entitlements") { request in
            try await self.handle(request, scopes: [.client, .app]) { caller in
                Self.json(try await self.services.entitlements.json(of: request.pathParameters["user_id"] ?? "",
                                                                    owner: caller.owner))
            }
        }
        router.addImmediate(.get, "/openapi.json") { _ in
            HTTPServerResponse(status: 200, headers: ["Content-Type": "application/json"], body: OpenAPIDocument.bytes)
        }
    }

    /// Authenticates the request and checks its scope: 401 without a valid token (`invalid_token`
    /// for an app token that broke a rule), 403 when the token's scope does not allow the route.
    func authorize(_ request: HTTPServerRequest, scopes allowed: Set<Scope>) -> Result<Caller, APIError> {
        authenticate(request).flatMap { caller in caller.scopes.isDisjoint(with: allowed) ? .failure(.forbidden) : .success(caller) }
    }

    /// Who called, whatever the route allows: a token the gateway knows, or the refusal.
    func authenticate(_ request: HTTPServerRequest) -> Result<Caller, APIError> {
        switch authenticator.authenticate(authorization: request.headers["Authorization"], now: services.context.tokenClock()) {
        case .unknown:
            return .failure(.unauthorized)
        case .invalid(let error):
            services.context.instruments.appTokenRefusals.labelled(error.rule).increment()
            return .failure(.invalidToken(error))
        case .granted(let caller):
            return .success(caller)
        }
    }

    /// The create a body asks for: the backend's as it says (with catalog prices for catalog
    /// products), or the app user's, priced by the catalog and counted against the user's rate.
    func createInput(_ request: HTTPServerRequest, _ caller: Caller) throws(APIError) -> CreateOrderInput {
        let catalog = services.context.catalog.catalog
        guard let user = caller.appUser else { return try CreateOrderInput(clientJSON: request.body, catalog: catalog) }
        let peer = clientAddresses.clientIP(peer: request.remoteAddress?.host,
                                            forwardedFor: request.headers.values(for: "X-Forwarded-For"))
        let input = try CreateOrderInput(appJSON: request.body, user: user, peerIP: peer, catalog: catalog)
        _ = try OrderCreation.admittedApp(for: input, in: services.configuration.apps, allowedApps: caller.appsAllowed)
        // Counted once the request is valid and its app allowed: only creates that would reach the store and WeChat.
        if let retryAfter = services.context.userLimits.admitCreate(user) {
            services.context.instruments.createsLimited.increment()
            throw .rateLimited(retryAfter: retryAfter,
                               "this user created \(services.context.userLimits.createsPerMinute) orders in the last minute")
        }
        return input
    }
}
