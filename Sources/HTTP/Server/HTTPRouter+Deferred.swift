// SPDX-License-Identifier: Apache-2.0

/// A handler that answers through a responder, possibly long after it returned: the request stays
/// held (its connection suspended, no thread and no task) until `HTTPServerResponder.respond`.
/// The handler runs in a short-lived task; it should do its preliminary work, hand the responder
/// to whoever will answer, and return.
public typealias HTTPServerDeferredHandler = @Sendable (HTTPServerRequest, HTTPServerResponder) async -> Void

extension HTTPRouter {
    /// Adds a deferred handler for `method` on `template`: for long-polls that may be held for tens
    /// of seconds by the thousand, where a task per held request would cost more memory than the
    /// request itself (see `HTTPServerResponder`).
    ///
    /// ```swift
    /// router.addDeferred(.get, "/v1/orders/{id}") { request, responder in
    ///     let id = request.pathParameters["id"] ?? ""
    ///     if let done = orders.finished(id) { return responder.respond(.json(done)) }
    ///     orders.onFinish(id) { json in responder.respond(.json(json)) }   // no task while it waits
    /// }
    /// ```
    ///
    /// On shutdown a held request is treated like a waiting async handler: the server waits for its
    /// answer until the grace period ends, then answers 503 itself (a later `respond` is ignored).
    public mutating func addDeferred(
        _ method: HTTPMethod, _ template: String, options: HTTPRouteOptions = HTTPRouteOptions(),
        handler: @escaping HTTPServerDeferredHandler
    ) {
        insertDeferred(
            Route(method: method, template: HTTPRouteTemplate(template), options: options, handler: .deferred(handler)))
    }
}

extension HTTPRouter {
    /// Runs a deferred handler in process and waits for its answer (`respond(to:)`): a task that
    /// waits is fine here, where nothing is held by the thousand.
    static func run(_ handler: @escaping HTTPServerDeferredHandler, _ request: HTTPServerRequest) async
        -> HTTPServerResponse
    {
        await withCheckedContinuation { (continuation: CheckedContinuation<HTTPServerResponse, Never>) in
            let responder = HTTPServerResponder { continuation.resume(returning: $0) }
            Task { await handler(request, responder) }
        }
    }
}
