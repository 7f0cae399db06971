// SPDX-License-Identifier: Apache-2.0
import CMicroHTTPD
import Foundation
import Glibc

/// An HTTP/1.1 server on libmicrohttpd: a thread that accepts connections (`HTTPAcceptLoop`), a
/// pool of epoll polling threads that serve them (two by default), routed handlers, and async
/// handlers that wait without holding a thread.
///
/// ```swift
/// var router = HTTPRouter()
/// router.addImmediate(.get, "/healthz") { _ in .text("ok") }
/// router.add(.get, "/v1/orders/{out_trade_no}") { request in ... }
///
/// let server = HTTPServer(router: router, configuration: HTTPServerConfiguration(host: "0.0.0.0", port: 8080))
/// let address = try await server.start()          // the bound address (the real port when asked for 0)
/// ...
/// await server.shutdown(deadline: .now + .seconds(10))
/// ```
///
/// How a request flows: libmicrohttpd parses the head on a polling thread; the router picks the
/// route (404 and 405 answered there); the body is collected up to the route's limit (413 as soon
/// as it is exceeded). An immediate handler answers on the polling thread. An async handler runs
/// in a task while its connection is suspended; when it returns, the connection is resumed and the
/// response queued, so thousands of waiting long-polls cost memory, not threads. A deferred
/// handler (`HTTPRouter.addDeferred`) goes further: it hands an `HTTPServerResponder` on and
/// returns, so a held long-poll costs no task either.
///
/// A server runs once: start it, shut it down, and make a new one to serve again. Shut it down
/// before letting go of it (a running server that is released keeps its threads and port, and says
/// so on standard error).
public actor HTTPServer {
    private enum State {
        case idle
        case running(MHDDaemon, HTTPServerSocketAddress, sweep: Task<Void, Never>)
        case stopping(Task<Void, Never>)
        case stopped
    }

    private var state: State = .idle
    private let core: HTTPServerCore

    /// The configuration the server was made with.
    public nonisolated var configuration: HTTPServerConfiguration { core.configuration }

    /// - Parameters:
    ///   - router: the routes; the server keeps a copy.
    ///   - configuration: address, limits, TLS. The default listens on 127.0.0.1 and a free port.
    public init(router: HTTPRouter, configuration: HTTPServerConfiguration = HTTPServerConfiguration()) {
        core = HTTPServerCore(router: router, configuration: configuration)
    }

    deinit {
        // Stopping here could abort the process (libmicrohttpd aborts on a suspended connection), and
        // trapping would take every other request, or every other test, down with one forgotten
        // shutdown. The daemon retains what it uses, so it keeps serving safely; say so, loudly.
        if case .running(_, let address, _) = state {
            FileHandle.standardError.write(Data(
                "HTTPServer on \(address) was released while running: call shutdown(deadline:) first; its threads keep serving\n".utf8))
        }
    }

    /// Binds, starts the polling threads and returns the address it listens on (with the port the
    /// kernel chose when the configuration asks for port 0).
    /// - Throws: `HTTPServerError`: the address is taken or invalid, TLS material is unusable, or
    ///   libmicrohttpd refused to start.
    public func start() async throws(HTTPServerError) -> HTTPServerSocketAddress {
        guard case .idle = state else { throw .alreadyStarted }
        let configuration = core.configuration
        try Self.validate(configuration)
        guard let address = HTTPServerSocketAddress(host: configuration.host, port: configuration.port) else {
            throw .invalidHost
        }
        let (fd, bound) = try HTTPListenSocket.open(address, backlog: configuration.listenBacklog)
        do {
            let daemon = try MHDDaemon.start(core: core, listenFD: fd)
            state = .running(daemon, bound, sweep: Self.sweepOverdueRequests(core))
            return bound
        } catch {
            close(fd)
            throw error
        }
    }

    /// The address the server listens on, while running.
    public var boundAddress: HTTPServerSocketAddress? {
        if case .running(_, let address, _) = state { return address }
        return nil
    }

    /// Counters for monitoring and tests.
    public nonisolated var statistics: HTTPServerStatistics { core.statistics }

    /// Stops gracefully: new connections are refused at once; requests in flight (suspended ones
    /// included) may finish until `deadline`, and their responses close their connections; the
    /// handlers of requests still waiting then are cancelled and may answer within the
    /// configuration's `shutdownCancellationWindow` (a refund recorded and sent says PROCESSING),
    /// and the rest are answered 503; then the threads stop and every connection closes. Returns
    /// when the server is fully stopped. Calling it again, or concurrently, waits for the same
    /// shutdown.
    public func shutdown(deadline: ContinuousClock.Instant) async {
        switch state {
        case .idle:
            state = .stopped
        case .stopped:
            return
        case .stopping(let task):
            await task.value
        case .running(let daemon, _, let sweep):
            let core = self.core
            // Decided now: on a loaded machine the drain may start after a short deadline passed.
            let graceGiven = deadline > .now
            core.beginDraining()
            daemon.quiesce()
            let stopping = Task { [daemon] in
                await Self.drain(core, until: deadline, window: graceGiven ? core.configuration.shutdownCancellationWindow : .zero)
                await Self.stopOffThePool(daemon)
                sweep.cancel()
            }
            state = .stopping(stopping)
            await stopping.value
            state = .stopped
        }
    }

    /// `shutdown(deadline:)` with a deadline `gracePeriod` from now.
    public func shutdown(gracePeriod: Duration = .seconds(10)) async {
        await shutdown(deadline: .now + gracePeriod)
    }

    /// Cuts connections whose request is overdue (see `HTTPServerConfiguration.requestTimeout`) or
    /// whose client has left while the server waited for a request, and cancels held requests whose
    /// client has left (`HTTPRouteOptions.cancelledWhenClientLeaves`): a few times per timeout and
    /// at least every second.
    private static func sweepOverdueRequests(_ core: HTTPServerCore) -> Task<Void, Never> {
        let interval = min(.seconds(1), max(.milliseconds(100), core.configuration.requestTimeout / 4))
        return Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                core.deadlines.cutOverdueConnections()
                core.cancelRequestsWhoseClientLeft()
            }
        }
    }

    // MARK: - Shutdown steps

    /// Waits for in-flight requests until the deadline, cancels the handlers still running and
    /// gives them `window` to answer (none when the shutdown gave no grace), then answers the ones
    /// still waiting, and every request that arrives from then on, 503.
    private static func drain(_ core: HTTPServerCore, until deadline: ContinuousClock.Instant, window: Duration) async {
        let forced = await waitForRequestsInFlight(core, until: deadline, window: window)
        // MHD_stop_daemon aborts the process if a connection is still suspended. Even when every
        // request in flight has finished, a kept-alive connection may bring another at any moment
        // (its client has not seen a "Connection: close" yet), and an async route would suspend it:
        // from here on such a request is answered 503 inside the call that would have suspended it,
        // and every request still waiting is answered now.
        core.answerWaitingRequestsWithServiceUnavailable()
        // A handler that won the race to answer may still be between claiming its exchange and
        // calling MHD_resume_connection; that takes microseconds.
        while core.suspendedConnections > 0 {
            try? await Task.sleep(for: .milliseconds(1))
        }
        guard forced else { return }
        // The forced answers go out on the polling threads; give them a moment so clients get the
        // 503 rather than a reset.
        let politeness = ContinuousClock.now + .seconds(1)
        while core.requestsInFlight > 0 && ContinuousClock.now < politeness {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Waits for the requests in flight until the deadline, then cancels the handlers still running
    /// and waits `window` more for them to answer. Returns whether some are still in flight.
    private static func waitForRequestsInFlight(
        _ core: HTTPServerCore, until deadline: ContinuousClock.Instant, window: Duration
    ) async -> Bool {
        // Polling keeps the completion callback free of any shutdown bookkeeping; 10 ms is far
        // below any deadline a caller would pass.
        while core.requestsInFlight > 0 && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        guard core.requestsInFlight > 0 else { return false }
        // Without a window there is no time to answer: the 503 goes first, and cancels as it goes.
        guard window > .zero else { return true }
        core.cancelWaitingHandlers()
        let answerBy = ContinuousClock.now + window
        while core.requestsInFlight > 0 && ContinuousClock.now < answerBy {
            try? await Task.sleep(for: .milliseconds(10))
        }
        return core.requestsInFlight > 0
    }

    /// MHD_stop_daemon joins the polling threads: a blocking call, kept off the cooperative pool
    /// on a thread of its own (a Dispatch global queue would share the pool's worker threads).
    private static func stopOffThePool(_ daemon: MHDDaemon) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                daemon.stop()
                continuation.resume()
            }
            thread.start()
        }
    }

    private static func validate(_ configuration: HTTPServerConfiguration) throws(HTTPServerError) {
        guard (1...64).contains(configuration.threadPoolSize) else {
            throw .invalidConfiguration("threadPoolSize must be 1...64")
        }
        guard configuration.connectionLimit >= configuration.threadPoolSize else {
            throw .invalidConfiguration("connectionLimit must be at least threadPoolSize")
        }
        guard configuration.connectionTimeout > .zero, configuration.requestTimeout > .zero else {
            throw .invalidConfiguration("connectionTimeout and requestTimeout must be positive")
        }
        guard configuration.connectionMemoryLimit >= 4096 else {
            throw .invalidConfiguration("connectionMemoryLimit must be at least 4096")
        }
        guard configuration.maxTargetBytes > 0, configuration.maxQueryParameters >= 0 else {
            throw .invalidConfiguration("maxTargetBytes must be positive and maxQueryParameters not negative")
        }
        guard configuration.maxBodyBytes >= 0, configuration.listenBacklog > 0 else {
            throw .invalidConfiguration("maxBodyBytes and listenBacklog must not be negative")
        }
        try configuration.tls?.check()
    }
}

extension HTTPServerConfiguration.TLS {
    /// Checks what `HTTPServer.start()` would refuse: TLS missing from libmicrohttpd, a key that is
    /// not the certificate's, a client CA list GnuTLS cannot use. A configuration reader calls it
    /// to refuse a start with a clear message before anything listens.
    public func check() throws(HTTPServerError) {
        guard wxpay_mhd_supports_tls() == 1 else { throw .tlsUnavailable }
        let keyPair = GnuTLSCredentialCheck.keyPair(certificatePEM: certificatePEM, keyPEM: privateKeyPEM)
        guard keyPair == 0 else { throw .tlsCertificateRejected(gnutlsCode: keyPair) }
        if let clientCAPEM {
            let trusted = GnuTLSCredentialCheck.trustedCertificates(clientCAPEM)
            guard trusted > 0 else { throw .tlsClientCARejected(gnutlsCode: trusted) }
        }
    }
}

/// PEM loaded into throwaway GnuTLS credentials, so a bad file becomes a precise error before the
/// daemon starts (libmicrohttpd only reports that starting failed).
private enum GnuTLSCredentialCheck {
    /// 0 when GnuTLS takes the certificate chain and key as a pair, else its error code.
    static func keyPair(certificatePEM: String, keyPEM: String) -> Int32 {
        let rc = withCredentials { credentials in
            withDatum(certificatePEM) { certificate in
                withDatum(keyPEM) { key in gnutls_certificate_set_x509_key_mem(credentials, &certificate, &key, GNUTLS_X509_FMT_PEM) }
            }
        }
        return rc < 0 ? rc : 0
    }

    /// The number of CA certificates in a PEM trust list (at least 1 when usable), or a GnuTLS error code.
    static func trustedCertificates(_ caPEM: String) -> Int32 {
        withCredentials { credentials in
            withDatum(caPEM) { ca in gnutls_certificate_set_x509_trust_mem(credentials, &ca, GNUTLS_X509_FMT_PEM) }
        }
    }

    private static func withCredentials(_ body: (gnutls_certificate_credentials_t) -> Int32) -> Int32 {
        var credentials: gnutls_certificate_credentials_t?
        let rc = gnutls_certificate_allocate_credentials(&credentials)
        guard rc >= 0, let credentials else { return rc }
        defer { gnutls_certificate_free_credentials(credentials) }
        return body(credentials)
    }

    /// The text as GnuTLS data, up to its first NUL (as a C string would end).
    private static func withDatum(_ text: String, _ body: (inout gnutls_datum_t) -> Int32) -> Int32 {
        var bytes = Array(text.utf8.prefix { $0 != 0 })
        return bytes.withUnsafeMutableBufferPointer { buffer in
            var datum = gnutls_datum_t(data: buffer.baseAddress, size: UInt32(buffer.count))
            return body(&datum)
        }
    }
}
