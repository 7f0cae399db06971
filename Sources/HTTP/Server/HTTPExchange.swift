// SPDX-License-Identifier: Apache-2.0
import CMicroHTTPD
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
        /// The connection is suspended and the handler's task is running.
        case running(connection: MHDConnectionHandle)
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
        var task: Task<Void, Never>?
    }

    /// The request without its body (added when complete).
    let request: HTTPServerRequest
    let route: HTTPRouter.Route
    let maxBodyBytes: Int
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

    /// Records that the connection was suspended for the handler.
    func markRunning(connection: MHDConnectionHandle) {
        state.withLock { $0.phase = .running(connection: connection) }
    }

    /// Keeps the handler's task so a forced shutdown or a vanished connection can cancel it; cancels
    /// at once when the exchange is already over.
    func attach(_ task: Task<Void, Never>) {
        let cancelNow = state.withLock { state -> Bool in
            guard case .running = state.phase else { return true }
            state.task = task
            return false
        }
        if cancelNow { task.cancel() }
    }

    /// Delivers the response. Returns the connection to resume, and the handler's task, when this
    /// call won the race (the handler's result and a forced 503 may both arrive; only the first counts).
    func complete(with response: HTTPServerResponse) -> (connection: MHDConnectionHandle, task: Task<Void, Never>?)? {
        state.withLock { state in
            guard case .running(let connection) = state.phase else { return nil }
            state.phase = .responded(response)
            defer { state.task = nil }
            return (connection, state.task)
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

    /// Cancels the handler's task, leaving the exchange waiting for its answer: a handler that can
    /// say where its request stands answers it itself.
    func cancelHandler() {
        state.withLock { $0.task }?.cancel()
    }

    /// libmicrohttpd is done with the request; a still-running handler is cancelled.
    func finish() {
        let task = state.withLock { state -> Task<Void, Never>? in
            state.phase = .finished
            defer { state.task = nil }
            return state.task
        }
        task?.cancel()
    }
}
