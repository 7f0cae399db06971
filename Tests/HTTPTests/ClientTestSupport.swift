// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import Testing

/// The client error `body` throws, or `nil` when it succeeds. (Closures do not infer typed throws
/// yet, so any other error is recorded as a test failure here.)
func failure(of body: () async throws -> HTTPClientResponse) async -> HTTPClientError? {
    do {
        _ = try await body()
        return nil
    } catch let error as HTTPClientError {
        return error
    } catch {
        Issue.record("expected an HTTPClientError, got \(error)")
        return nil
    }
}

/// Threads of this process whose name starts with `prefix` (from /proc/self/task/*/comm). Tests
/// run in parallel, so a process-wide count also sees other suites' threads; counting by name sees
/// only the component under test (a thread inherits its creator's name, so helper threads that
/// libcurl would start, such as resolver threads, count too).
func threadCount(namedWithPrefix prefix: String) -> Int {
    guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else { return -1 }
    return tasks.filter { task in
        guard let name = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8) else { return false }
        return name.hasPrefix(prefix)
    }.count
}

/// A request with short timeouts, for tests that expect failures.
func quickRequest(_ url: String, connect: Duration = .seconds(2), total: Duration = .seconds(5)) -> HTTPClientRequest {
    HTTPClientRequest(url: url, timeouts: .init(connect: connect, total: total))
}
