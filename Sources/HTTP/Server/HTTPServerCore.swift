// SPDX-License-Identifier: Apache-2.0
// Over 400 lines as one file: every libmicrohttpd callback (request line, access handler,
// completion) and the suspend/resume bridge work on the same counters and waiting exchanges, whose
// invariants (a suspended connection is always resumed before MHD_stop_daemon) hold only if one
// type owns them; split, each part would reach into the others' private state.
import CMicroHTTPD
import Glibc
import Lifecycle
import Synchronization

/// Everything libmicrohttpd's callbacks need, shared by its polling threads, the handlers' tasks
/// and the owning `HTTPServer`. It turns access-handler calls into routed requests, answers the
/// fast paths inline, and bridges async handlers with suspend/resume.
final class HTTPServerCore: Sendable {
    let router: HTTPRouter
    let configuration: HTTPServerConfiguration
    let deadlines: HTTPRequestDeadlines
    private let verifiesClientCertificates: Bool

    private let nextRequestID = Atomic<UInt64>(1)
    /// Requests the access handler has seen and libmicrohttpd has not yet reported complete.
    private let inFlight = Atomic<Int>(0)
    /// Connections suspended and not yet resumed: `MHD_stop_daemon` must never see one.
    private let suspended = Atomic<Int>(0)
    /// Connections handed to libmicrohttpd (`HTTPAcceptLoop`) and not yet reported closed: what
    /// the connection limit holds. Counted here because libmicrohttpd's own count lags a
    /// hand-over (and trails the closed report), and a handed-over connection that finds its
    /// polling thread at libmicrohttpd's limit is closed unread, or leaves that thread's mutex
    /// locked (0.9.75), hanging the thread for good: so libmicrohttpd's limit is set out of reach
    /// (`MHDDaemon.libmicrohttpdLimit`) and this one is kept exactly. A connection
    /// libmicrohttpd drops for want of memory before serving it is never reported and stays
    /// counted.
    private let openConnections = Atomic<Int>(0)
    /// Set when shutdown starts: responses then carry `Connection: close`.
    private let draining = Atomic<Bool>(false)
    private let waiting = Mutex(WaitingExchanges())

    /// The exchanges whose handlers are running, so a forced shutdown can answer them.
    private struct WaitingExchanges {
        var closed = false
        var exchanges: [ObjectIdentifier: HTTPExchange] = [:]
    }

    init(router: HTTPRouter, configuration: HTTPServerConfiguration) {
        self.router = router
        self.configuration = configuration
        verifiesClientCertificates = configuration.tls?.clientCAPEM != nil
        deadlines = HTTPRequestDeadlines(timeout: configuration.requestTimeout)
    }

    var statistics: HTTPServerStatistics {
        HTTPServerStatistics(
            requestsInFlight: inFlight.load(ordering: .relaxed),
            suspendedRequests: suspended.load(ordering: .relaxed),
            requestsStarted: nextRequestID.load(ordering: .relaxed) - 1,
            openConnections: openConnections.load(ordering: .relaxed))
    }

    // MARK: - Request line

    /// `MHD_OPTION_URI_LOG_CALLBACK`: the request line was read, the headers not yet. Every request
    /// whose line libmicrohttpd parsed passes here and is later reported complete (even one it
    /// refuses itself, such as a 431), so this is where a request starts being in flight.
    ///
    /// A target over the limits gets its 414 from the first access-handler call; its query is cut
    /// off here (the byte after `?` made the end of the string), so libmicrohttpd 0.9.75, which
    /// found the `?` before this call and splits the query after it, parses no parameter of it.
    /// The buffer is libmicrohttpd's own read buffer, which it writes into itself.
    func requestLine(target: UnsafePointer<CChar>?) -> UnsafeMutableRawPointer? {
        inFlight.add(1, ordering: .relaxed)
        guard let target else { return nil }
        let refusal = UnsafeRawPointer(target).withMemoryRebound(to: UInt8.self, capacity: strlen(target)) { bytes in
            HTTPRequestFraming.TargetRefusal(
                target: UnsafeBufferPointer(start: bytes, count: strlen(target)), maxBytes: configuration.maxTargetBytes,
                maxParameters: configuration.maxQueryParameters)
        }
        guard let refusal else { return nil }
        if let question = strchr(target, Int32(UInt8(ascii: "?"))) { UnsafeMutablePointer(mutating: question + 1).pointee = 0 }
        return refusal.marker
    }

    // MARK: - Access handler

    /// One access-handler call (see `MHD_AccessHandlerCallback`): the first for a request has a
    /// nil context (or a refused target's marker); later ones carry body pieces or, with none
    /// left, ask for the response.
    func handle(
        connection: OpaquePointer, url: UnsafePointer<CChar>, method: UnsafePointer<CChar>,
        version: UnsafePointer<CChar>?, uploadData: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>,
        context: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        if let existing = context.pointee, let refusal = HTTPRequestFraming.TargetRefusal(marker: existing) {
            context.pointee = nil
            return queue(refusal.response(configuration), on: connection)
        }
        if let existing = context.pointee {
            if existing == Self.headComplete {
                context.pointee = nil
                return begin(connection: connection, url: url, method: method, context: context)
            }
            let exchange = Unmanaged<HTTPExchange>.fromOpaque(existing).takeUnretainedValue()
            return proceed(exchange, connection: connection, uploadData: uploadData, uploadSize: uploadSize)
        }
        if let refusal = Self.framingRefusal(connection, version: version) {
            // Queued before any body is read: libmicrohttpd reads nothing more from the connection.
            return queue(refusal, on: connection)
        }
        if Self.mayHaveBody(connection) {
            return begin(connection: connection, url: url, method: method, context: context)
        }
        // libmicrohttpd 0.9.75 closes the connection after a response queued in the first call (it
        // cannot tell the body was empty), so requests without a body are answered in the second
        // call, which keeps the connection alive.
        context.pointee = Self.headComplete
        return .YES
    }

    /// The context of a body-less request between its first and second access-handler call. Never
    /// a valid object address (objects are 16-byte aligned), so it cannot be taken for an exchange.
    private static var headComplete: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: 1)! }

    /// The answer for a request whose body framing is ambiguous (`HTTPRequestFraming`), or nil.
    private static func framingRefusal(_ connection: OpaquePointer, version: UnsafePointer<CChar>?)
        -> HTTPServerResponse?
    {
        var fields = FramingFields()
        withUnsafeMutablePointer(to: &fields) { pointer in
            _ = MHD_get_connection_values(connection, .HEADER_KIND, FramingFields.collect, pointer)
        }
        return HTTPRequestFraming.refusal(
            version: version.map { String(cString: $0) } ?? "", contentLengths: fields.contentLengths,
            transferEncodings: fields.transferEncodings, whitespaceInAName: fields.whitespaceInAName || fields.foldedFraming, hosts: fields.hosts,
            authorizations: fields.authorizations, lineBreakInAValue: fields.lineBreakInAValue)
    }

    /// Whether the request announces a body (RFC 9112 §6.3: only these two headers can).
    private static func mayHaveBody(_ connection: OpaquePointer) -> Bool {
        if MHD_lookup_connection_value(connection, .HEADER_KIND, "Transfer-Encoding") != nil { return true }
        guard let length = MHD_lookup_connection_value(connection, .HEADER_KIND, "Content-Length") else { return false }
        return strcmp(length, "0") != 0
    }

    private func begin(
        connection: OpaquePointer, url: UnsafePointer<CChar>, method: UnsafePointer<CChar>,
        context: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        let method = HTTPMethod(rawValue: String(cString: method))
        // Raw bytes that are not UTF-8 are refused as their escapes are (`String(cString:)` would
        // have made each a U+FFFD, and the request would have named another resource).
        guard let path = String(validatingCString: url) else { return queue(router.refusals.malformed, on: connection) }
        let match = router.match(method: method, rawPath: path)
        guard case .found(let route, let pathParameters) = match else {
            return queue(router.refusals.answer(match) ?? router.refusals.notFound, on: connection)
        }
        var head = RequestHead()
        withUnsafeMutablePointer(to: &head) { pointer in
            _ = wxpay_mhd_visit_headers_and_arguments(connection, RequestHead.collect, pointer)
        }
        guard !head.malformedQuery else { return queue(router.refusals.malformed, on: connection) }

        let maxBodyBytes = configuration.maxBodyBytes(for: route.options)
        // libmicrohttpd has already rejected a malformed Content-Length with 400.
        let contentLength = head.headers["Content-Length"].flatMap { Int($0) }
        let certificate = verifiesClientCertificates ? Self.clientCertificate(connection) : (presented: false, verified: false)
        let verified = certificate.verified
        if let refusal = route.refusal(
            configuration: configuration, hasVerifiedClientCertificate: verified, bodyBytes: contentLength)
        {
            // 403 or 413, queued before any body is read: libmicrohttpd sends it and closes the
            // connection without reading the body.
            return queue(refusal, on: connection)
        }
        let expectsBody = (contentLength ?? 0) > 0 || head.headers["Transfer-Encoding"] != nil

        var request = HTTPServerRequest(
            method: method, path: path, routeTemplate: route.template.text, pathParameters: pathParameters,
            query: HTTPServerQuery(head.query), headers: head.headers, body: [],
            requestID: nextRequestID.add(1, ordering: .relaxed).oldValue,
            remoteAddress: wxpay_mhd_connection_client_address(connection).flatMap(HTTPServerSocketAddress.init),
            isSecure: configuration.tls != nil, hasVerifiedClientCertificate: verified)
        request.hasRejectedClientCertificate = certificate.presented && !verified

        if !expectsBody, case .immediate(let handler) = route.handler {
            return queue(HTTPRouter.run(handler, request), on: connection)
        }
        let exchange = HTTPExchange(request: request, route: route, maxBodyBytes: maxBodyBytes)
        context.pointee = Unmanaged.passRetained(exchange).toOpaque()
        if !expectsBody { return start(exchange, connection: connection) }
        return .YES
    }

    private func proceed(
        _ exchange: HTTPExchange, connection: OpaquePointer,
        uploadData: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>
    ) -> MHD_Result {
        let size = uploadSize.pointee
        if size > 0 {
            uploadSize.pointee = 0
            guard let uploadData else { return .YES }
            if exchange.appendBody(UnsafeRawBufferPointer(start: uploadData, count: size)) { return .YES }
            // libmicrohttpd 0.9.75 refuses MHD_queue_response while a body is arriving, so the
            // 413 for an oversized chunked body is written here, then the connection is closed
            // without reading the rest.
            Self.writeEarlyPayloadTooLarge(connection, Self.earlyPayloadTooLarge(exchange.route.options))
            return .NO
        }
        if exchange.isReceiving {
            let request = exchange.completeRequest()
            switch exchange.route.handler {
            case .immediate(let handler):
                return queue(HTTPRouter.run(handler, request), on: connection)
            case .suspending, .deferred:
                return start(exchange, connection: connection, request: request)
            }
        }
        if let response = exchange.takeResponse() { return queue(response, on: connection) }
        return .YES
    }

    // MARK: - Suspend and resume

    /// Suspends the connection and runs the async handler in a task; the task resumes the
    /// connection when the response is ready, and the next access-handler call queues it.
    private func start(_ exchange: HTTPExchange, connection: OpaquePointer, request: HTTPServerRequest? = nil)
        -> MHD_Result
    {
        if case .immediate = exchange.route.handler { return .NO }
        let request = request ?? exchange.completeRequest()
        let handle = MHDConnectionHandle(pointer: connection)
        HTTPRequestDeadlines.requestServed(connection)
        suspended.add(1, ordering: .relaxed)
        MHD_suspend_connection(connection)
        exchange.markRunning(
            connection: handle,
            watchedSocket: exchange.route.options.cancelledWhenClientLeaves ? wxpay_mhd_connection_fd(connection) : nil)
        let accepted = waiting.withLock { waiting -> Bool in
            guard !waiting.closed else { return false }
            waiting.exchanges[ObjectIdentifier(exchange)] = exchange
            return true
        }
        guard accepted else {
            // Shutdown already answered everyone waiting; resuming from inside the access handler
            // is allowed, libmicrohttpd picks it up once this call returns.
            deliver(router.refusals.shuttingDown, to: exchange)
            return .YES
        }
        switch exchange.route.handler {
        case .suspending(let handler):
            let task = Task { [self] in
                let response = await HTTPRouter.run(handler, request)
                deliver(response, to: exchange)
            }
            exchange.attach(task)
        case .deferred(let handler):
            // No task: the handler hands the responder on and returns (HTTPRouter+Deferred.swift);
            // answering from inside this access-handler call is allowed, as above.
            handler(request, HTTPServerResponder(exchange: exchange, core: self))
        case .immediate:
            break
        }
        return .YES
    }

    /// Hands a response to a suspended exchange and resumes its connection, once. A forced answer
    /// also cancels the handler, which can stop waiting.
    func deliver(_ response: HTTPServerResponse, to exchange: HTTPExchange, cancellingHandler: Bool = false) {
        guard let connection = exchange.complete(with: response) else { return }
        MHD_resume_connection(connection.pointer)
        suspended.subtract(1, ordering: .relaxed)
        if cancellingHandler { exchange.cancellation.cancel() } else { exchange.cancellation.forget() }
    }

    // MARK: - Completion

    /// `MHD_OPTION_NOTIFY_COMPLETED`: the request is over (answered, failed, or its client left).
    func completed(connection: OpaquePointer?, context: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
        inFlight.subtract(1, ordering: .relaxed)
        if let connection { deadlines.requestCompleted(connection) }
        guard let context, let raw = context.pointee else { return }
        context.pointee = nil
        // A body-less request between its calls, or a refused target never answered (libmicrohttpd
        // refused the request itself first): no exchange to finish.
        guard raw != Self.headComplete, HTTPRequestFraming.TargetRefusal(marker: raw) == nil else { return }
        let exchange = Unmanaged<HTTPExchange>.fromOpaque(raw).takeRetainedValue()
        exchange.finish()
        _ = waiting.withLock { $0.exchanges.removeValue(forKey: ObjectIdentifier(exchange)) }
    }

    // MARK: - Shutdown

    /// Responses from now on ask the client to close the connection.
    func beginDraining() {
        draining.store(true, ordering: .relaxed)
    }

    /// Cancels the handler of every waiting request without answering it: one that can say where
    /// its request stands (a refund recorded and sent is PROCESSING) answers it itself, rather than
    /// the client reading "shutting down" as "nothing happened".
    func cancelWaitingHandlers() {
        let exchanges = waiting.withLock { Array($0.exchanges.values) }
        for exchange in exchanges { exchange.cancelHandler() }
    }

    /// Cancels the handler of every waiting request, on a route that asks for it, whose client has
    /// left (closed its connection or reset it): a long poll nobody reads any more gives back what
    /// it holds (its place in the connection limit, a user's quota of waits, the upstream polls)
    /// now rather than when it would have ended. Returns how many were cancelled.
    @discardableResult
    func cancelRequestsWhoseClientLeft() -> Int {
        let watched = waiting.withLock { $0.exchanges.values.filter { $0.route.options.cancelledWhenClientLeaves } }
        var cancelled = 0
        for exchange in watched where !exchange.cancellation.isCancelled && exchange.clientHasLeft() {
            exchange.cancelHandler()
            cancelled += 1
        }
        return cancelled
    }

    /// Answers every waiting request with 503 and cancels its handler; later requests are answered
    /// 503 at once instead of waiting.
    func answerWaitingRequestsWithServiceUnavailable() {
        let exchanges = waiting.withLock { waiting in
            waiting.closed = true
            return Array(waiting.exchanges.values)
        }
        for exchange in exchanges {
            deliver(router.refusals.shuttingDown, to: exchange, cancellingHandler: true)
        }
    }

    // MARK: - Connections (HTTPAcceptLoop and libmicrohttpd's connection callback)

    var openConnectionCount: Int { openConnections.load(ordering: .relaxed) }

    /// Counted before the hand-over, so a connection served and closed at once never leaves the
    /// count below what is open; `refused` takes it back when libmicrohttpd would not have it.
    func connectionHandedOver() { openConnections.add(1, ordering: .relaxed) }
    func connectionRefused() { openConnections.subtract(1, ordering: .relaxed) }
    func connectionClosed() { openConnections.subtract(1, ordering: .relaxed) }

    var requestsInFlight: Int { inFlight.load(ordering: .relaxed) }
    var suspendedConnections: Int { suspended.load(ordering: .relaxed) }

    // MARK: - Responses

    /// Queues a response (libmicrohttpd copies the body; the response object is released at once).
    private func queue(_ response: HTTPServerResponse, on connection: OpaquePointer) -> MHD_Result {
        HTTPRequestDeadlines.requestServed(connection)
        // Refusing the request makes libmicrohttpd close the connection without a response.
        if response.abortsConnection { return .NO }
        // 1xx are not final answers; libmicrohttpd would refuse them and drop the connection.
        guard (200...599).contains(response.status), let mhdResponse = Self.makeResponse(response) else {
            guard let fallback = Self.makeResponse(.internalServerError) else { return .NO }
            defer { MHD_destroy_response(fallback) }
            return MHD_queue_response(connection, 500, fallback)
        }
        defer { MHD_destroy_response(mhdResponse) }
        if draining.load(ordering: .relaxed) {
            _ = MHD_add_response_header(mhdResponse, "Connection", "close")
        }
        return MHD_queue_response(connection, UInt32(response.status), mhdResponse)
    }

    /// nil when libmicrohttpd refuses a header (it rejects CR, LF and other invalid characters, so
    /// a handler cannot split the response).
    private static func makeResponse(_ response: HTTPServerResponse) -> OpaquePointer? {
        let created = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(
                bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let created else { return nil }
        for field in response.headers where MHD_add_response_header(created, field.name, field.value) != .YES {
            MHD_destroy_response(created)
            return nil
        }
        return created
    }

    /// The whole 413 of a route, as bytes on the wire (its own body, or the plain-text default).
    private static func earlyPayloadTooLarge(_ options: HTTPRouteOptions) -> [UInt8] {
        let response = options.payloadTooLargeResponse
        let type = response.headers["Content-Type"] ?? "text/plain; charset=utf-8"
        return Array(("HTTP/1.1 413 Payload Too Large\r\nContent-Type: \(type)\r\n"
            + "Content-Length: \(response.body.count)\r\nConnection: close\r\n\r\n").utf8) + response.body
    }

    /// Writes a complete 413 straight to the connection. Safe only while the request is being read:
    /// libmicrohttpd has nothing of its own to send then, and the message fits an empty socket
    /// buffer (or one TLS record), so the non-blocking write completes.
    private static func writeEarlyPayloadTooLarge(_ connection: OpaquePointer, _ message: [UInt8]) {
        message.withUnsafeBytes { bytes in
            if let session = wxpay_mhd_connection_tls_session(connection) {
                _ = gnutls_record_send(session, bytes.baseAddress, bytes.count)
                return
            }
            let fd = wxpay_mhd_connection_fd(connection)
            guard fd >= 0 else { return }
            _ = send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            // FIN after the 413, so the client reads it before the close resets the unread body.
            _ = shutdown(fd, Int32(SHUT_WR))
        }
    }

    // MARK: - TLS

    /// Whether the client presented a certificate, and whether it chains to the client CA, is
    /// valid now and allows client authentication.
    private static func clientCertificate(_ connection: OpaquePointer) -> (presented: Bool, verified: Bool) {
        guard let session = wxpay_mhd_connection_tls_session(connection) else { return (false, false) }
        var status: UInt32 = 0
        let result = wxpay_gnutls_verify_client_certificate(session, &status)
        return (result != GNUTLS_E_NO_CERTIFICATE_FOUND, result == 0 && status == 0)
    }
}

/// Every `Content-Length` and `Transfer-Encoding` field of a request (names are case-insensitive),
/// and whether any name has a space or tab in it (libmicrohttpd 0.9.75 keeps `Transfer-Encoding :`
/// as a name of its own, even in strict mode).
private struct FramingFields {
    var contentLengths: [String] = []
    var transferEncodings: [String] = []
    var whitespaceInAName = false
    /// A name that starts as a framing field's and goes on: a folded (obs-fold) framing field.
    var foldedFraming = false
    var hosts = 0
    var authorizations = 0
    /// A CR or LF kept inside a field's value: a bare CR libmicrohttpd did not take as a line end.
    var lineBreakInAValue = false

    static let collect: MHD_KeyValueIterator = { cls, _, key, value in
        guard let cls, let key else { return .YES }
        let fields = cls.assumingMemoryBound(to: FramingFields.self)
        if strpbrk(key, " \t") != nil { fields.pointee.whitespaceInAName = true }
        if let value, strpbrk(value, "\r\n") != nil { fields.pointee.lineBreakInAValue = true }
        // libmicrohttpd 0.9.75 unfolds an obs-fold continuation into the field's name
        // (`Transfer-Encoding:` CRLF SP `chunked` becomes a field `Transfer-Encodingchunked`).
        if strncasecmp(key, "Transfer-Encoding", 17) == 0 && key[17] != 0
            || strncasecmp(key, "Content-Length", 14) == 0 && key[14] != 0 { fields.pointee.foldedFraming = true }
        let text = value.map { String(cString: $0) } ?? ""
        if strcasecmp(key, "Content-Length") == 0 {
            fields.pointee.contentLengths.append(text)
        } else if strcasecmp(key, "Transfer-Encoding") == 0 {
            fields.pointee.transferEncodings.append(text)
        } else if strcasecmp(key, "Host") == 0 {
            fields.pointee.hosts += 1
        } else if strcasecmp(key, "Authorization") == 0 {
            fields.pointee.authorizations += 1
        }
        return .YES
    }
}

/// A field's value without the spaces and tabs around it, which RFC 9110 (§5.5) says are not part
/// of it: libmicrohttpd drops only the leading ones, so `Authorization: Bearer t␠` or a
/// `Wechatpay-Signature` with a trailing space would otherwise not be what was meant.
func fieldValue(_ text: UnsafePointer<CChar>) -> String {
    var start = 0, end = strlen(text)
    func isBlank(_ c: CChar) -> Bool { c == 0x20 || c == 0x09 }
    while start < end, isBlank(text[start]) { start += 1 }
    while end > start, isBlank(text[end - 1]) { end -= 1 }
    return text.withMemoryRebound(to: UInt8.self, capacity: end) {
        String(decoding: UnsafeBufferPointer(start: $0 + start, count: end - start), as: UTF8.self)
    }
}

/// Headers and query arguments, gathered in one pass over libmicrohttpd's list.
private struct RequestHead {
    var headers = HTTPHeaders()
    var query: [HTTPServerQuery.Item] = []
    var malformedQuery = false

    static let collect: MHD_KeyValueIterator = { cls, kind, key, value in
        guard let cls, let key else { return .YES }
        let head = cls.assumingMemoryBound(to: RequestHead.self)
        if kind == .HEADER_KIND {
            head.pointee.headers.add(name: String(cString: key), value: value.map(fieldValue) ?? "")
        } else if let name = String(validatingCString: key), let raw = value.map({ String(validatingCString: $0) }) ?? "",
            let item = HTTPServerQuery.decodedItem(rawName: name, rawValue: raw)
        {
            head.pointee.query.append(item)
        } else {
            head.pointee.malformedQuery = true
        }
        return .YES
    }
}
