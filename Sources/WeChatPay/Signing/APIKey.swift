// SPDX-License-Identifier: Apache-2.0

/// The merchant's v2 API key (账户设置 → API安全 → API密钥): not the app secret, not the APIv3 key.
///
/// The key never appears in a description, a debug description, a log line or an error: printing an
/// `APIKey` prints `APIKey(***)`.
public struct APIKey: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    @usableFromInline let bytes: [UInt8]

    /// - Parameter secret: the key as configured in the merchant platform (32 ASCII characters in
    ///   production; any non-empty string is accepted so sandbox and test keys work too).
    public init(_ secret: String) {
        bytes = Array(secret.utf8)
    }

    /// Whether the key is empty, which is a configuration error wherever a key is required.
    public var isEmpty: Bool { bytes.isEmpty }

    /// The key's bytes, for the few places that need them (signing, the refund-notify AES key).
    @inlinable
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }

    public var description: String { "APIKey(***)" }
    public var debugDescription: String { "APIKey(***)" }
}
