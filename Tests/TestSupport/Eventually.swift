// SPDX-License-Identifier: Apache-2.0

/// Polls `condition` every `interval` until it holds or `timeout` has passed, and answers whether
/// it held (a last look is taken at the deadline). For what happens on another task, thread or
/// process: the suite runs on a slow, shared machine, so the default is generous and nothing is
/// asserted about how long it took. A test that cannot go on without it says so:
///
/// ```swift
/// #expect(await eventually { harness.store.count == 1 })
/// try #require(await eventually(timeout: .seconds(180)) { await server.isStopped })
/// ```
///
/// A condition that throws ends the wait with its error.
public func eventually(timeout: Duration = .seconds(120), every interval: Duration = .milliseconds(10),
                       _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: interval)
    }
    return try await condition()
}
