// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// TEST-ONLY crash injection for the reliability battery (`scripts/battery/run T2`, RELIABILITY.md).
///
/// With `GATEWAY_CRASH_POINT=name:probability[,name:probability…]` in the environment, the process
/// SIGKILLs itself when it reaches a named point, with that probability, so a crash lands exactly
/// between two durable steps. Unset — as it always is outside the battery — `hit` looks a name up
/// in an empty table and returns.
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

    static let table: [String: Double] = parse(ProcessInfo.processInfo.environment["GATEWAY_CRASH_POINT"])

    /// `name:probability` pairs, comma-separated; malformed pairs, empty names and probabilities
    /// outside 0…1 are ignored.
    public static func parse(_ text: String?) -> [String: Double] {
        var table: [String: Double] = [:]
        for pair in (text ?? "").split(separator: ",") {
            let parts = pair.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty, let probability = Double(parts[1]), (0...1).contains(probability) else { continue }
            table[parts[0]] = probability
        }
        return table
    }

    /// Kills the process here when the environment asks for it (see the type's documentation).
    public static func hit(_ name: String) {
        guard let probability = table[name], Double.random(in: 0..<1) < probability else { return }
        // One unbuffered line first, so the battery can count which point fired.
        FileHandle.standardError.write(Data("crash point \(name)\n".utf8))
        kill(getpid(), SIGKILL)
    }
}
