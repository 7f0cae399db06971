// SPDX-License-Identifier: Apache-2.0

/// An async handler: it may wait (a long-poll of up to tens of seconds) without holding a thread.
/// The server suspends the connection while it runs.
public typealias HTTPServerHandler = @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse

/// A synchronous handler that answers at once on the server's polling thread, with no task hop.
/// For fast, non-blocking work only (a health check, a cached value): anything that blocks here
/// stalls every connection that thread serves.
public typealias HTTPServerImmediateHandler = @Sendable (HTTPServerRequest) throws -> HTTPServerResponse

/// Maps a method and a path to a handler. Build it before starting the server; the server keeps
/// a copy.
///
/// ```swift
/// var router = HTTPRouter()
/// router.addImmediate(.get, "/healthz") { _ in .text("ok") }
/// router.add(.get, "/v1/orders/{out_trade_no}") { request in
///     let id = request.pathParameters["out_trade_no"]!
///     let wait = request.query["wait"].flatMap(Int.init) ?? 0
///     return .json(try await orders.status(of: id, waitingUpTo: .seconds(wait)))
/// }
/// router.add(.post, "/wechat/notify", options: HTTPRouteOptions(maxBodyBytes: 64 * 1024)) { ... }
/// ```
///
/// A path that matches no template gets 404; a path whose template exists for other methods gets
/// 405 with an `Allow` header. `HEAD` is served by the `GET` handler (without the body). Literal
/// segments take precedence over parameters. Registering the same method and template shape twice,
/// or a malformed template, is a programming error and traps.
public struct HTTPRouter: Sendable {
    enum Handler: Sendable {
        case immediate(HTTPServerImmediateHandler)
        case suspending(HTTPServerHandler)
        /// Answers through an `HTTPServerResponder`, possibly after returning (HTTPRouter+Deferred.swift).
        case deferred(HTTPServerDeferredHandler)
    }

    struct Route: Sendable {
        let method: HTTPMethod
        let template: HTTPRouteTemplate
        let options: HTTPRouteOptions
        let handler: Handler
    }

    /// The routes of one template, by method (a handful at most: a scan beats hashing).
    struct MethodTable: Sendable {
        let template: HTTPRouteTemplate
        var routes: [Route] = []

        func route(for method: HTTPMethod) -> Route? {
            if let exact = routes.first(where: { $0.method == method }) { return exact }
            if method == .head { return routes.first { $0.method == .get } }
            return nil
        }

        var allowedMethods: [HTTPMethod] {
            var methods = routes.map(\.method)
            if methods.contains(.get) && !methods.contains(.head) { methods.append(.head) }
            return methods
        }
    }

    /// What routing decided for a method and a raw path.
    enum Match {
        case found(Route, HTTPServerPathParameters)
        case notFound
        case methodNotAllowed([HTTPMethod])
        case malformedPath
    }

    /// Templates without parameters, keyed by their text: the common case costs one hash lookup.
    private var staticTables: [String: MethodTable] = [:]
    /// Templates with parameters, by segment count, most specific first.
    private var parameterTables: [Int: [MethodTable]] = [:]

    /// How requests no route takes are answered (plain text unless set).
    public var refusals = HTTPRoutingRefusals.plainText

    public init() {}

    /// Adds an async handler for `method` on `template`.
    /// - Parameters:
    ///   - method: the method to serve (`HEAD` comes free with `GET`).
    ///   - template: a path starting with `/`, with whole-segment `{name}` parameters.
    ///   - options: body limit and client-certificate policy; defaults come from the server configuration.
    ///   - handler: runs in a task; the connection is suspended (no thread held) until it returns.
    public mutating func add(
        _ method: HTTPMethod, _ template: String, options: HTTPRouteOptions = HTTPRouteOptions(),
        handler: @escaping HTTPServerHandler
    ) {
        insert(
            Route(
                method: method, template: HTTPRouteTemplate(template), options: options, handler: .suspending(handler)))
    }

    /// Adds a synchronous handler that answers on the polling thread itself (see
    /// `HTTPServerImmediateHandler`): the fast path, for routes that never wait.
    public mutating func addImmediate(
        _ method: HTTPMethod, _ template: String, options: HTTPRouteOptions = HTTPRouteOptions(),
        handler: @escaping HTTPServerImmediateHandler
    ) {
        insert(
            Route(method: method, template: HTTPRouteTemplate(template), options: options, handler: .immediate(handler))
        )
    }

    /// For `addDeferred` (HTTPRouter+Deferred.swift), which cannot reach the private `insert`.
    mutating func insertDeferred(_ route: Route) { insert(route) }

    private mutating func insert(_ route: Route) {
        let template = route.template
        if template.isStatic {
            var table = staticTables[template.text] ?? MethodTable(template: template)
            precondition(
                !table.routes.contains { $0.method == route.method },
                "route registered twice: \(route.method) \(template.text)")
            table.routes.append(route)
            staticTables[template.text] = table
            return
        }
        var tables = parameterTables[template.segments.count] ?? []
        if let index = tables.firstIndex(where: { $0.template.shape == template.shape }) {
            precondition(
                !tables[index].routes.contains { $0.method == route.method },
                "route registered twice: \(route.method) \(template.text)")
            precondition(
                tables[index].template == template,
                "route \(template.text) must name its parameters like \(tables[index].template.text)")
            tables[index].routes.append(route)
        } else {
            tables.append(MethodTable(template: template, routes: [route]))
            // Stable: among equally specific templates, registration order decides.
            var sorted: [MethodTable] = []
            for table in tables {
                let position = sorted.firstIndex { HTTPRouteTemplate.isMoreSpecific(table.template, than: $0.template) }
                sorted.insert(table, at: position ?? sorted.endIndex)
            }
            tables = sorted
        }
        parameterTables[template.segments.count] = tables
    }

    /// Every registered method and template (`HEAD` only where it was registered itself), sorted by
    /// template then method: for checks that a route list or an API description is complete.
    public var registeredRoutes: [(method: HTTPMethod, template: String)] {
        let tables = Array(staticTables.values) + parameterTables.values.flatMap { $0 }
        return tables.flatMap { table in table.routes.map { ($0.method, table.template.text) } }
            .sorted { ($0.1, $0.0.rawValue) < ($1.1, $1.0.rawValue) }
    }

    /// Routes a method and a raw (still percent-encoded) path without its query.
    func match(method: HTTPMethod, rawPath: String) -> Match {
        var allowed: [HTTPMethod] = []
        // Fast path: an unencoded path that names a static template exactly.
        let encoded = rawPath.utf8.contains(UInt8(ascii: "%"))
        if !encoded, let table = staticTables[rawPath] {
            if let route = table.route(for: method) { return .found(route, HTTPServerPathParameters()) }
            allowed = table.allowedMethods
        }
        guard rawPath.hasPrefix("/") else { return .notFound }
        var segments: [String] = []
        for raw in rawPath.utf8.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            guard let decoded = PercentDecoding.decode(Substring(raw)) else { return .malformedPath }
            segments.append(decoded)
        }
        // An encoded path may still equal a static template once decoded, segment by segment (an
        // encoded "/" stays inside its segment and never matches a literal separator).
        if encoded {
            for table in staticTables.values where table.template.match(segments) != nil {
                if let route = table.route(for: method) { return .found(route, HTTPServerPathParameters()) }
                allowed.append(contentsOf: table.allowedMethods)
            }
        }
        for table in parameterTables[segments.count] ?? [] {
            guard let parameters = table.template.match(segments) else { continue }
            if let route = table.route(for: method) { return .found(route, parameters) }
            allowed.append(contentsOf: table.allowedMethods)
        }
        if allowed.isEmpty { return .notFound }
        var unique: [HTTPMethod] = []
        for method in allowed where !unique.contains(method) { unique.append(method) }
        return .methodNotAllowed(unique.sorted { $0.rawValue < $1.rawValue })
    }
}
