// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// TEST-ONLY crash injection for the reliability battery (`scripts/battery/run T2`, RELIABILITY.md),
/// compiled in only when the build defines `GATEWAY_FAULT_INJECTION`:
///
/// ```sh
/// swift build -c release --scratch-path .build/battery -Xswiftc -DGATEWAY_FAULT_INJECTION
/// ```
///
/// In such a build, `GATEWAY_CRASH_POINT=name:probability[,name:probability…]` makes the process
/// SIGKILL itself when it reaches a named point, with that probability, so a crash lands exactly
/// between two durable steps. In every other build (`swift build`, `swift build -c release`,
/// `scripts/run`) `hit` is an empty inline function: nothing in the production binary can kill the
/// process on request, and `serve` warns once that a set `GATEWAY_CRASH_POINT` is ignored.
public enum CrashPoint {
    /// A notify's settlement has committed; the reply to WeChat has not been sent.
    public static let notifyCommitted = "notify_committed"
    /// The webhook receiver acknowledged an event; the outbox does not know yet.
    public static let outboxDelivered = "outbox_delivered"
    /// A reconciler sweep has checked one of its orders; the rest of its batch is still leased.
    public static let midSweep = "mid_sweep"
    /// A refund is recorded with its amount reserved; WeChat has not been asked yet.
    public static let refundRecorded = "refund_recorded"
    /// A refund notify's change has committed; the reply to WeChat has not been sent.
    public static let refundNotifyCommitted = "refund_notify_committed"
    /// Every point, for the configuration's message.
    public static let names = [notifyCommitted, outboxDelivered, midSweep, refundRecorded, refundNotifyCommitted]

    #if GATEWAY_FAULT_INJECTION
    /// Whether this build has the hook.
    public static let isCompiledIn = true
    #else
    public static let isCompiledIn = false
    #endif

    /// `name:probability` pairs, comma-separated, names from `names`, probabilities from 0 to 1;
    /// nil when any pair is malformed (a battery run with a typo must not silently crash nowhere).
    public static func parse(_ text: String) -> [String: Double]? {
        var table: [String: Double] = [:]
        for pair in text.split(separator: ",") {
            let parts = pair.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, names.contains(parts[0]), let probability = Double(parts[1]),
                  (0...1).contains(probability) else { return nil }
            table[parts[0]] = probability
        }
        return table.isEmpty ? nil : table
    }

    /// GATEWAY_CRASH_POINT's parser: the table in a fault-injection build; in any other build the
    /// variable is ignored whatever it says (`GatewayConfiguration.warnings` says so once).
    static let configured: @Sendable (String) -> [String: Double]? = { text in
        isCompiledIn ? parse(text) : [:]
    }

    #if GATEWAY_FAULT_INJECTION
    private static let table = Mutex<[String: Double]>([:])

    /// Arms the points of `configuration.crashPoints` (serve does, once, at start).
    public static func arm(_ points: [String: Double]) {
        table.withLock { $0 = points }
    }

    /// Kills the process here when armed for `name` (see the type's documentation).
    public static func hit(_ name: String) {
        guard let probability = table.withLock({ $0[name] }), Double.random(in: 0..<1) < probability else { return }
        // One unbuffered line first, so the battery can count which point fired.
        FileHandle.standardError.write(Data("crash point \(name)\n".utf8))
        kill(getpid(), SIGKILL)
    }
    #else
    /// Does nothing: this build has no crash hook.
    @inline(__always) public static func arm(_ points: [String: Double]) {}
    /// Does nothing: this build has no crash hook.
    @inline(__always) public static func hit(_ name: String) {}
    #endif
}
