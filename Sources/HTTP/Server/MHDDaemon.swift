// SPDX-License-Identifier: Apache-2.0
import CMicroHTTPD
import Glibc

/// A running libmicrohttpd daemon and the C memory it borrows. Not Sendable by itself; the
/// `HTTPServer` actor owns it and is the only caller of `quiesce` and `stop`.
struct MHDDaemon: @unchecked Sendable {  // raw pointers; used only under the HTTPServer actor
    private let daemon: OpaquePointer
    private let accepting: HTTPAcceptLoop
    private let core: Unmanaged<HTTPServerCore>
    /// PEM strings handed to libmicrohttpd by pointer; freed after the daemon stops.
    private let borrowed: [UnsafeMutablePointer<CChar>]

    /// Starts polling threads, and a thread accepting connections on an already listening socket,
    /// which it owns from then on; if this throws, the caller still owns the socket.
    static func start(core: HTTPServerCore, listenFD: Int32) throws(HTTPServerError) -> MHDDaemon {
        let configuration = core.configuration
        var borrowed: [UnsafeMutablePointer<CChar>] = []
        func borrow(_ text: String) -> UnsafeMutablePointer<CChar> {
            let copy = strdup(text)!
            borrowed.append(copy)
            return copy
        }

        let retained = Unmanaged.passRetained(core)
        var options: [MHD_OptionItem] = [
            wxpay_mhd_option_value(.THREAD_POOL_SIZE, configuration.threadPoolSize),
            // Every polling thread may hold the whole limit and a margin more: the accepting
            // thread keeps the limit itself (HTTPServerCore.openConnections says why), counting a
            // connection free once libmicrohttpd reports it closed, which it does just before
            // its own count drops. A thread cleans up one connection at a time, so the margin
            // covers that window (without it, a connection handed over inside it, at the limit,
            // was closed unread: a reset). libmicrohttpd's limit is an unsigned int.
            wxpay_mhd_option_value(.CONNECTION_LIMIT, Self.libmicrohttpdLimit(configuration)),
            wxpay_mhd_option_value(.CONNECTION_TIMEOUT, configuration.connectionTimeoutSeconds),
            wxpay_mhd_option_value(.CONNECTION_MEMORY_LIMIT, configuration.connectionMemoryLimit),
            // Reject requests that bend HTTP/1.1 (bare LF, missing Host, spaces in names): the
            // ambiguity request smuggling relies on.
            wxpay_mhd_option_value(.STRICT_FOR_CLIENT, 1),
            wxpay_mhd_option_notify_completed(Self.completedCallback, retained.toOpaque()),
            wxpay_mhd_option_notify_connection(Self.connectionCallback, retained.toOpaque()),
            wxpay_mhd_option_unescape(Self.keepEncoded, nil),
            wxpay_mhd_option_uri_log(Self.requestLineCallback, retained.toOpaque()),
        ]
        if let tls = configuration.tls {
            options.append(wxpay_mhd_option_pointer(.HTTPS_MEM_CERT, borrow(tls.certificatePEM)))
            options.append(wxpay_mhd_option_pointer(.HTTPS_MEM_KEY, borrow(tls.privateKeyPEM)))
            options.append(wxpay_mhd_option_pointer(.HTTPS_PRIORITIES, borrow(tls.priorities)))
            if let clientCA = tls.clientCAPEM {
                // With a trust list libmicrohttpd asks every client for a certificate (without
                // requiring one); the access handler verifies it.
                options.append(wxpay_mhd_option_pointer(.HTTPS_MEM_TRUST, borrow(clientCA)))
            }
        }
        if configuration.connectionsPerAddress > 0 {
            options.append(wxpay_mhd_option_value(.PER_IP_CONNECTION_LIMIT, configuration.connectionsPerAddress))
        }
        options.append(wxpay_mhd_option_end())

        let daemon = options.withUnsafeMutableBufferPointer { items in
            wxpay_mhd_start_daemon(
                wxpay_mhd_server_flags(configuration.tls != nil), 0, Self.accessHandler, retained.toOpaque(),
                items.baseAddress!)
        }
        guard let daemon else {
            retained.release()
            borrowed.forEach { free($0) }
            throw .startFailed
        }
        let accepting: HTTPAcceptLoop
        do {
            let handle = DaemonHandle(daemon)
            accepting = try HTTPAcceptLoop.start(
                listenFD: listenFD, connectionLimit: configuration.connectionLimit,
                openConnections: { core.openConnectionCount },
                handOver: { fd, address, length in
                    // libmicrohttpd makes the socket non-blocking, and closes it itself when it
                    // refuses it (the per-address limit).
                    core.connectionHandedOver()
                    if MHD_add_connection(handle.daemon, fd, address, length) != .YES { core.connectionRefused() }
                })
        } catch {
            MHD_stop_daemon(daemon)
            retained.release()
            borrowed.forEach { free($0) }
            throw error
        }
        return MHDDaemon(daemon: daemon, accepting: accepting, core: retained, borrowed: borrowed)
    }

    /// Stops accepting: the accepting thread closes the listening socket within moments, so new
    /// connections are refused while open ones carry on. Does not wait (the caller is an actor).
    func quiesce() {
        accepting.requestStop()
    }

    /// Stops accepting, then the polling threads, and closes every connection; blocks until the
    /// threads are joined. Call only when no connection is suspended without a resume
    /// (libmicrohttpd aborts otherwise).
    func stop() {
        accepting.stop()
        MHD_stop_daemon(daemon)
        core.release()
        borrowed.forEach { free($0) }
    }

    /// The daemon for the accepting thread, which hands connections to it until `stop`.
    private struct DaemonHandle: @unchecked Sendable {  // libmicrohttpd's calls used are thread-safe
        let daemon: OpaquePointer
        init(_ daemon: OpaquePointer) { self.daemon = daemon }
    }

    // MARK: - C callbacks

    /// Connections a polling thread may be handed beyond the server's limit: those reported
    /// closed and not yet uncounted by libmicrohttpd, at most one per thread at a time, all of
    /// which the accepting thread may hand to the same thread.
    static func limitMargin(threads: Int) -> Int { max(16, threads) }

    /// libmicrohttpd's own limit, for all its threads: the server's limit plus the margin, per
    /// thread, within an unsigned int.
    static func libmicrohttpdLimit(_ configuration: HTTPServerConfiguration) -> Int {
        let threads = configuration.threadPoolSize
        let margin = limitMargin(threads: threads)
        return (min(configuration.connectionLimit, Int(Int32.max) / threads - margin) + margin) * threads
    }

    private static let accessHandler: MHD_AccessHandlerCallback = {
        cls, connection, url, method, version, uploadData, uploadSize, context in
        guard let cls, let connection, let url, let method, let uploadSize, let context else { return .NO }
        return Unmanaged<HTTPServerCore>.fromOpaque(cls).takeUnretainedValue().handle(
            connection: connection, url: url, method: method, version: version, uploadData: uploadData,
            uploadSize: uploadSize, context: context)
    }

    private static let requestLineCallback: wxpay_mhd_uri_log_callback = { cls, target, _ in
        guard let cls else { return nil }
        return Unmanaged<HTTPServerCore>.fromOpaque(cls).takeUnretainedValue().requestLine(target: target)
    }

    private static let completedCallback: MHD_RequestCompletedCallback = { cls, connection, context, _ in
        guard let cls else { return }
        Unmanaged<HTTPServerCore>.fromOpaque(cls).takeUnretainedValue().completed(
            connection: connection, context: context)
    }

    private static let connectionCallback: MHD_NotifyConnectionCallback = { cls, connection, socketContext, code in
        guard let cls, let connection, let socketContext else { return }
        let core = Unmanaged<HTTPServerCore>.fromOpaque(cls).takeUnretainedValue()
        let deadlines = core.deadlines
        switch code {
        case .CONNECTION_NOTIFY_STARTED:
            socketContext.pointee = deadlines.connectionStarted(connection)
        case .CONNECTION_NOTIFY_CLOSED:
            core.connectionClosed()
            if let context = socketContext.pointee {
                socketContext.pointee = nil
                deadlines.connectionClosed(context)
            }
        }
    }

    /// Leaves the path and query arguments percent-encoded (libmicrohttpd would decode `%2F` into a
    /// path separator); the router and the query decode per component.
    private static let keepEncoded: wxpay_mhd_unescape_callback = { _, _, string in
        strlen(string)
    }
}
