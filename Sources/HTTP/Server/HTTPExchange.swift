// SPDX-License-Identifier: Apache-2.0
import CMicroHTTPD
import Lifecycle
import Synchronization

/// A libmicrohttpd connection handle that may cross threads. libmicrohttpd allows
/// `MHD_resume_connection` from any thread; every other use stays on the polling thread that owns
/// the connection, and `HTTPExchange` guarantees the handle is not used after the request completed.
struct MHDConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// The state of one request that outlives a single access-handler call: one with a body to
/// collect, or one whose handler runs asynchronously while its connection is suspended.
///
/// The polling thread drives it through the access-handler calls and the completion callback; the
/// handler's task (or a forced shutdown) delivers the response from another thread. The state
/// machine makes sure exactly one party resumes the connection, and nobody after it is gone.
final class HTTPExchange: Sendable {
    enum Phase {
        /// Headers seen; the body (if any) is arriving.
        case receiving
        /// The connection is suspended and the handler is running; `watchedSocket` is its socket
        /// when the route is cancelled once its client leaves.
        case running(connection: MHDConnectionHandle, watchedSocket: Int32?)
        /// The response is ready and the connection was resumed; the next access-handler call queues it.
        case responded(HTTPServerResponse)
        /// The response was handed to libmicrohttpd.
        case queued
        /// libmicrohttpd reported the request complete (answered, failed or the client went away).
        case finished
    }

    private struct State {
        var phase: Phase = .receiving
        /// Kept outside `phase` so appending never copies it.
        var body: [UInt8] = []
    }

    /// The request without its body (added when complete).
    let request: HTTPServerRequest
    let route: HTTPRouter.Route
    let maxBodyBytes: Int
    /// Cancels the handler: its task, or what a deferred handler registered.
    let cancellation = CancellationLatch()
    private let state = Mutex(State())

    init(request: HTTPServerRequest, route: HTTPRouter.Route, maxBodyBytes: Int) {
        self.request = request
        self.route = route
        self.maxBodyBytes = maxBodyBytes
    }

    /// Adds a piece of the body; false when the body would pass the limit (the caller answers 413).
    func appendBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        state.withLock { state in
            guard case .receiving = state.phase else { return true }
            guard state.body.count + bytes.count <= maxBodyBytes else { return false }
            state.body.append(contentsOf: bytes)
            return true
        }
    }

    /// The complete request; the exchange lets go of the body.
    func completeRequest() -> HTTPServerRequest {
        var request = self.request
        request.body = state.withLock { state in
            defer { state.body = [] }
            return state.body
        }
        return request
    }

    /// Records that the connection was suspended for the handler; `watchedSocket` is its socket
    /// when the sweep should look for the client leaving.
    func markRunning(connection: MHDConnectionHandle, watchedSocket: Int32?) {
        state.withLock { $0.phase = .running(connection: connection, watchedSocket: watchedSocket) }
    }

    /// Keeps the handler's task so a forced shutdown or a vanished client can cancel it; cancels
    /// at once when the exchange is already over or was cancelled.
    func attach(_ task: Task<Void, Never>) {
        let over = state.withLock { state -> Bool in
            guard case .running = state.phase else { return true }
            return false
        }
        if over { return task.cancel() }
        cancellation.whenCancelled { task.cancel() }
    }

    /// Delivers the response. Returns the connection to resume when this call won the race (the
    /// handler's result and a forced 503 may both arrive; only the first counts).
    func complete(with response: HTTPServerResponse) -> MHDConnectionHandle? {
        state.withLock { state in
            guard case .running(let connection, _) = state.phase else { return nil }
            state.phase = .responded(response)
            return connection
        }
    }

    /// Whether the handler is still running and the route's client has left (see
    /// `ClientDeparture`). The look happens under the lock, while the connection is certainly
    /// still suspended: libmicrohttpd closes no suspended connection, so the socket is still this
    /// connection's and not a newer one reusing its number.
    func clientHasLeft() -> Bool {
        state.withLock { state in
            guard case .running(_, let socket?) = state.phase else { return false }
            return ClientDeparture.hasStoppedWaiting(socket: socket)
        }
    }

    /// The response to queue, when one is waiting.
    func takeResponse() -> HTTPServerResponse? {
        state.withLock { state in
            guard case .responded(let response) = state.phase else { return nil }
            state.phase = .queued
            return response
        }
    }

    /// Whether the exchange is still collecting its body.
    var isReceiving: Bool {
        state.withLock { if case .receiving = $0.phase { true } else { false } }
    }

    /// Cancels the handler, leaving the exchange waiting for its answer: a handler that can say
    /// where its request stands answers it itself.
    func cancelHandler() {
        cancellation.cancel()
    }

    /// libmicrohttpd is done with the request; a still-running handler is cancelled.
    func finish() {
        state.withLock { $0.phase = .finished }
        cancellation.cancel()
    }
}
