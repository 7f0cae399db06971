// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Glibc
import HTTP
import Synchronization

/// `wxpay-bench http-server [--port N] [--threads N]`: serves a trivial JSON route on 127.0.0.1
/// for scripts/bench-http-server to load with wrk, until SIGINT or SIGTERM. Prints
/// `listening <host:port>` once bound.
///
/// Routes: `GET /json` (immediate handler: the fast path), `GET /json-async` (async handler:
/// suspend, task, resume), `GET /v1/orders/{id}` (async, with a path parameter).
enum HTTPServerBench {
    static let body = #"{"return_code":"SUCCESS","trade_state":"NOTPAY"}"#

    static func run(_ arguments: [String]) async {
        var port: UInt16 = 0
        var threads = 2
        var index = 0
        while index < arguments.count {
            let value = index + 1 < arguments.count ? arguments[index + 1] : ""
            switch arguments[index] {
            case "--port": port = UInt16(value) ?? 0
            case "--threads": threads = Int(value) ?? 2
            default:
                print("usage: wxpay-bench http-server [--port N] [--threads N]")
                exit(2)
            }
            index += 2
        }

        // Built once, as a static route would: the handler returns a copy (two retains), and the
        // server still copies the bytes into a fresh libmicrohttpd response per request.
        let response = HTTPServerResponse.json(body)
        var router = HTTPRouter()
        router.addImmediate(.get, "/json") { _ in response }
        router.add(.get, "/json-async") { _ in response }
        router.add(.get, "/v1/orders/{id}") { request in
            .json(#"{"out_trade_no":"\#(request.pathParameters["id"] ?? "")","trade_state":"NOTPAY"}"#)
        }
        let configuration = HTTPServerConfiguration(host: "127.0.0.1", port: port, threadPoolSize: threads)
        let server = HTTPServer(router: router, configuration: configuration)
        let address: HTTPServerSocketAddress
        do {
            address = try await server.start()
        } catch {
            print("http-server: \(error)")
            exit(1)
        }
        print("listening \(address)")
        fflush(nil)  // flush stdout for the script reading it; `stdout` itself is a global var Swift 6 refuses

        await waitForTerminationSignal()
        await server.shutdown(gracePeriod: .seconds(2))
        let statistics = server.statistics
        print("stopped after \(statistics.requestsStarted) requests")
    }

    /// Suspends until SIGINT or SIGTERM, delivered through Dispatch sources rather than handlers.
    private static func waitForTerminationSignal() async {
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let queue = DispatchQueue(label: "http-server-bench.signals")
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = Once()
            let sources = [SIGINT, SIGTERM].map { DispatchSource.makeSignalSource(signal: $0, queue: queue) }
            for source in sources {
                source.setEventHandler {
                    if once.first() {
                        sources.forEach { $0.cancel() }
                        continuation.resume()
                    }
                }
                source.resume()
            }
        }
    }

    /// True exactly once, whichever signal's handler asks first.
    private final class Once: Sendable {
        private let fired = Atomic<Bool>(false)
        func first() -> Bool { !fired.exchange(true, ordering: .relaxed) }
    }
}
