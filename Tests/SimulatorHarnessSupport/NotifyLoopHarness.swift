// SPDX-License-Identifier: Apache-2.0

/// What the two simulators' test harnesses (WeChat Pay's and the App Store's) share: each drives
/// a simulator whose notify loop a test runs only while it needs notifies (App Store server
/// notifications) delivered, and waits for what the loop delivers.
public protocol NotifyLoopHarness {
    /// The simulator's notify loop; it runs until its task is cancelled.
    var notifyLoop: @Sendable () async -> Void { get }
}

extension NotifyLoopHarness {
    /// Runs the notify loop for the duration of `body`.
    public func withNotifyLoop(_ body: () async throws -> Void) async rethrows {
        let loop = notifyLoop
        let task = Task { await loop() }
        defer { task.cancel() }
        try await body()
    }
}
