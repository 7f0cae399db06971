// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import Lifecycle
import Observability

/// `GET /v1/orders/{out_trade_no}[?wait=N]`, on a deferred route: authentication and validation
/// run on the polling thread, the read and the wait in `OrderQueries`, which answers through the
/// responder; a held wait keeps only its suspended connection and the responder, no task (see
/// OrderQueries+Wait.swift for why).
extension GatewayAPI {
    func registerOrderQuery(in router: inout HTTPRouter) {
        // A held wait whose app has gone gives back its place and its user's quota of waits at once.
        router.addDeferred(.get, "/v1/orders/{out_trade_no}", options: HTTPRouteOptions(cancelledWhenClientLeaves: true)) {
            request, responder in
            self.answerOrderQuery(request, responder)
        }
    }

    /// The same contract as every other route (`handle`): authentication first, then validation,
    /// `APIError`s as their JSON answers, and one log line per request with its duration, written
    /// when the answer goes out.
    private func answerOrderQuery(_ request: HTTPServerRequest, _ responder: HTTPServerResponder) {
        let started = ContinuousClock.now
        let (logger, requestID, method, route) = (self.logger, request.requestID, request.method, request.routeTemplate)
        let reply = { @Sendable (response: HTTPServerResponse) in
            responder.respond(response)
            // As in `handle`: nothing is built for a request line the level leaves out.
            guard logger.isEnabled(.info) else { return }
            let elapsed = ContinuousClock.now - started
            logger.with("request_id", String(requestID)).info(
                "request", ["method": method.rawValue, "route": route, "status": String(response.status),
                            "ms": String(elapsed.components.seconds * 1000
                                + elapsed.components.attoseconds / 1_000_000_000_000_000)])
        }
        let caller: Caller
        switch authorize(request, scopes: [.client, .support, .app]) {
        case .failure(let refused): return reply(Self.error(refused))
        case .success(let granted): caller = granted
        }
        let wait: Double
        do {
            wait = try Self.wait(request.query)
        } catch {
            return reply(Self.error(error))
        }
        let audited = caller.scopes.contains(.support)
        // The action holds the cancellation, not the responder (see `HTTPServerResponder.onCancel`).
        let cancellation = wait > 0 ? CancellationLatch() : nil
        if let cancellation { responder.onCancel { cancellation.cancel() } }
        services.queries.order(request.pathParameters["out_trade_no"] ?? "", wait: wait, owner: caller.owner,
                               cancellation: cancellation) { answer in
            let (response, outcome): (HTTPServerResponse, String) =
                switch answer {
                case .success(let body): (Self.json(body), "ok")
                case .failure(let error): (Self.error(error), error.code)
                }
            guard audited else { return reply(response) }
            // Support's reads are on record before they are answered (Audit/GatewayAPI+Audit.swift).
            Task { reply(await self.auditSupportCall(request, caller: caller, outcome: outcome) ?? response) }
        }
    }
}
