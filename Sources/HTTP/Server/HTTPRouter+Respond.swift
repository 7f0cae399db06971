// SPDX-License-Identifier: Apache-2.0

extension HTTPRouter {
    /// Answers a request in-process, with no socket: the same routing (404, 405, 400), route
    /// policies (client certificate, body limit) and error mapping as the server, so handlers can
    /// be tested directly and the same test can then run against a live server.
    ///
    /// ```swift
    /// let response = await router.respond(to: HTTPServerRequest(method: .get, path: "/v1/orders/T1"))
    /// #expect(response.status == 200)
    /// ```
    ///
    /// `request.path` is the raw (percent-encoded) path without the query; set `request.query`
    /// directly. `routeTemplate` and `pathParameters` are filled in from the match.
    public func respond(
        to request: HTTPServerRequest, configuration: HTTPServerConfiguration = HTTPServerConfiguration()
    ) async -> HTTPServerResponse {
        let route: Route
        var routed = request
        switch match(method: request.method, rawPath: request.path) {
        case .found(let found, let parameters):
            route = found
            routed.routeTemplate = found.template.text
            routed.pathParameters = parameters
        case let other:
            return refusals.answer(other) ?? refusals.notFound
        }
        if let refusal = route.refusal(
            configuration: configuration, hasVerifiedClientCertificate: request.hasVerifiedClientCertificate,
            bodyBytes: request.body.count)
        {
            return refusal
        }
        switch route.handler {
        case .immediate(let handler): return Self.run(handler, routed)
        case .suspending(let handler): return await Self.run(handler, routed)
        case .deferred(let handler): return await Self.run(handler, routed)
        }
    }

    static func run(_ handler: HTTPServerImmediateHandler, _ request: HTTPServerRequest) -> HTTPServerResponse {
        do { return try handler(request) } catch { return response(for: error) }
    }

    static func run(_ handler: HTTPServerHandler, _ request: HTTPServerRequest) async -> HTTPServerResponse {
        do { return try await handler(request) } catch { return response(for: error) }
    }

    /// A handler's error as a response: its own choice if it offers one, else a 500 that reveals nothing.
    static func response(for error: any Error) -> HTTPServerResponse {
        (error as? any HTTPServerResponseError)?.response ?? .internalServerError
    }
}

extension HTTPRouter.Route {
    /// The answer when the request may not reach this route's handler: 403 without a required
    /// client certificate, 413 when the body (or its announced length) passes the limit.
    func refusal(
        configuration: HTTPServerConfiguration, hasVerifiedClientCertificate: Bool, bodyBytes: Int?
    ) -> HTTPServerResponse? {
        if configuration.clientCertificatePolicy(for: options) == .required && !hasVerifiedClientCertificate {
            return .forbiddenWithoutClientCertificate
        }
        if let bodyBytes, bodyBytes > configuration.maxBodyBytes(for: options) {
            var response = options.payloadTooLargeResponse
            response.headers["Connection"] = "close"
            return response
        }
        return nil
    }
}
