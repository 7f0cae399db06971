// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Synchronization

/// Leaf certificates whose chain was verified, by the SHA-256 of the leaf's DER, until the
/// chain's notAfter: a known chain then costs one ECDSA verification instead of a chain build.
///
/// An entry remembers the exact intermediate and root it was verified with, and the window in
/// which all three certificates are valid; a token reusing the leaf with another intermediate,
/// or validated at a time outside the window, is verified in full again, so the cache never
/// changes a verdict, only its cost.
final class LeafCache: Sendable {
    struct Entry: Sendable {
        let key: ES256PublicKey
        let intermediateDER: [UInt8]
        let rootDER: [UInt8]
        let notBefore: Date
        let notAfter: Date
    }

    private let capacity: Int
    /// By the SHA-256 of the leaf's DER.
    private let entries = Mutex<[[UInt8]: Entry]>([:])

    /// - Parameter capacity: at most this many leaves (Apple rotates leaves rarely; 0 disables).
    init(capacity: Int) {
        self.capacity = capacity
    }

    func key(leaf: [UInt8], intermediate: [UInt8], root: [UInt8], at time: Date) -> ES256PublicKey? {
        guard capacity > 0 else { return nil }
        guard let entry = entries.withLock({ $0[leaf] }) else { return nil }
        guard entry.notBefore <= time, time <= entry.notAfter, entry.intermediateDER == intermediate,
              entry.rootDER == root else { return nil }
        return entry.key
    }

    func insert(_ entry: Entry, leaf: [UInt8], now time: Date) {
        guard capacity > 0 else { return }
        entries.withLock { entries in
            if entries.count >= capacity {
                // Expired chains first; then the one that expires soonest.
                entries = entries.filter { $0.value.notAfter >= time }
                if entries.count >= capacity, let soonest = entries.min(by: { $0.value.notAfter < $1.value.notAfter }) {
                    entries.removeValue(forKey: soonest.key)
                }
            }
            entries[leaf] = entry
        }
    }

    var count: Int { entries.withLock { $0.count } }
}
