// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// Where the client gets each request's `nonce_str`. Injected because the protocol module draws no
/// randomness itself: production passes a random source (32 characters from `[A-Za-z0-9]`, as the
/// official SDK does), tests and the simulator pass a deterministic one.
///
/// A nonce must be 1 to 32 ASCII letters and digits; the client refuses to send anything else.
public protocol NonceSource: Sendable {
    func nextNonce() -> String
}

/// A deterministic nonce source: `prefix` followed by a zero-padded counter (`T0000000001`, …).
///
/// For tests and the simulator, where reproducible nonces make documents comparable. Not for
/// production: WeChat expects unpredictable nonces.
public final class CountingNonceSource: NonceSource {
    private let prefix: String
    private let counter: Mutex<UInt64>

    /// - Parameters:
    ///   - prefix: ASCII letters and digits, at most 12 characters, so every nonce stays within 32.
    ///   - start: the first counter value.
    public init(prefix: String = "N", start: UInt64 = 1) {
        precondition(
            FieldFormat.alphanumeric(maxLength: 12).accepts(prefix),
            "CountingNonceSource prefix must be at most 12 ASCII letters and digits")
        self.prefix = prefix
        counter = Mutex(start)
    }

    public func nextNonce() -> String {
        let value = counter.withLock { value in
            defer { value &+= 1 }
            return value
        }
        let digits = String(value)
        return prefix + String(repeating: "0", count: max(0, 10 - digits.count)) + digits
    }
}
