// SPDX-License-Identifier: Apache-2.0
import Glibc
import HTTP
import Synchronization

/// `wxpay-bench http-client --url URL [--concurrency 64] [--requests 200000] [--post]`
///
/// Keep-alive throughput of ``HTTPClient``: `concurrency` tasks each send requests back to back
/// until `requests` are done, after a warm-up that opens the connections. `--post` sends a
/// 1 KiB WeChat-sized XML body instead of a GET. Run against scripts/bench/mhd-hello-client.c
/// through scripts/bench-http-client.
enum HTTPClientBench {
    struct Options {
        var url = ""
        var concurrency = 64
        var requests = 200_000
        var post = false
    }

    static func run(_ arguments: [String]) async throws {
        let options = try parse(arguments)
        let client = try HTTPClient(configuration: .init(connectionCacheSize: max(64, options.concurrency)))
        let body = options.post ? Array(String(repeating: "<xml><a>1</a></xml>", count: 54).utf8) : []
        let request = HTTPClientRequest(
            method: options.post ? .post : .get, url: options.url,
            headers: options.post ? ["Content-Type": "text/xml; charset=utf-8"] : [:], body: body)

        _ = try await measure(client, request, concurrency: options.concurrency, total: options.concurrency * 50)
        let cpuBefore = processCPUSeconds()
        let result = try await measure(client, request, concurrency: options.concurrency, total: options.requests)
        let cpuSeconds = processCPUSeconds() - cpuBefore
        await client.shutdown()

        let seconds = Double(result.elapsed.components.seconds) + Double(result.elapsed.components.attoseconds) / 1e18
        let latencies = result.latenciesMicroseconds.sorted()
        func percentile(_ p: Double) -> Int { latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
        print("http-client \(options.post ? "POST \(body.count) B" : "GET") concurrency=\(options.concurrency)")
        print("  requests      \(result.completed) in \(rounded(seconds, decimals: 3)) s")
        print("  throughput    \(Int(Double(result.completed) / seconds)) requests/s")
        print("  latency       p50 \(percentile(0.5)) µs, p99 \(percentile(0.99)) µs, max \(latencies.last ?? 0) µs")
        // Less sensitive to a shared machine than throughput: what each request costs this process.
        print("  client CPU    \(Int(cpuSeconds * 1e6 / Double(max(1, result.completed)))) µs per request (user + system, all threads)")
        print("  errors        \(result.errors)")
        print("  new conns     \(result.newConnections) (in the measured run, after warm-up)")
    }

    private static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    private struct Result: Sendable {
        var completed = 0
        var errors = 0
        var newConnections = 0
        var latenciesMicroseconds: [Int] = []
        var elapsed: Duration = .zero
    }

    private static func measure(_ client: HTTPClient, _ request: HTTPClientRequest, concurrency: Int, total: Int) async throws -> Result {
        let issued = TicketCounter()
        let clock = ContinuousClock()
        let started = clock.now
        var result = await withTaskGroup(of: Result.self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    var local = Result()
                    local.latenciesMicroseconds.reserveCapacity(total / concurrency + 1)
                    while issued.next() < total {
                        let begin = clock.now
                        do {
                            let response = try await client.execute(request)
                            if response.status == 200 { local.completed += 1 } else { local.errors += 1 }
                            if response.openedNewConnection { local.newConnections += 1 }
                        } catch {
                            local.errors += 1
                        }
                        let (s, atto) = (clock.now - begin).components
                        local.latenciesMicroseconds.append(Int(s) * 1_000_000 + Int(atto / 1_000_000_000_000))
                    }
                    return local
                }
            }
            var merged = Result()
            for await local in group {
                merged.completed += local.completed
                merged.errors += local.errors
                merged.newConnections += local.newConnections
                merged.latenciesMicroseconds += local.latenciesMicroseconds
            }
            return merged
        }
        result.elapsed = clock.now - started
        return result
    }

    /// Hands out request numbers to the workers; an Atomic must live in a class to be shared.
    private final class TicketCounter: Sendable {
        private let value = Atomic<Int>(0)
        func next() -> Int { value.wrappingAdd(1, ordering: .relaxed).oldValue }
    }

    struct UsageError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    private static func rounded(_ value: Double, decimals: Int) -> Double {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        return (value * scale).rounded() / scale
    }

    private static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--url": options.url = iterator.next() ?? ""
            case "--concurrency": options.concurrency = Int(iterator.next() ?? "") ?? 0
            case "--requests": options.requests = Int(iterator.next() ?? "") ?? 0
            case "--post": options.post = true
            default: throw UsageError(message: "unknown argument \(argument)")
            }
        }
        guard !options.url.isEmpty, options.concurrency > 0, options.requests > 0 else {
            throw UsageError(message: "usage: wxpay-bench http-client --url URL [--concurrency N] [--requests N] [--post]")
        }
        return options
    }
}

