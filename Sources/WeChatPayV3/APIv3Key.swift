// SPDX-License-Identifier: Apache-2.0
import Crypto

/// The merchant's APIv3 key: 32 ASCII characters set in the merchant platform, used as the raw
/// AES-256-GCM key of notify resources and platform certificates.
///
/// Its description is redacted: a key never reaches a log through string interpolation.
public struct APIv3Key: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The key's 32 bytes (its ASCII text).
    public let bytes: [UInt8]
    /// The key expanded once for AES-256-GCM: every resource is opened with it.
    public let cipher: AES256GCMKey

    /// - Throws: ``WeChatPayV3Error/Code/invalidAPIv3Key`` unless `text` is 32 printable ASCII
    ///   characters (a key of another length is the most common v3 decryption failure).
    public init(_ text: String) throws(WeChatPayV3Error) {
        let bytes = Array(text.utf8)
        guard bytes.count == 32, bytes.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw WeChatPayV3Error(.invalidAPIv3Key)
        }
        self.bytes = bytes
        do { cipher = try AES256GCMKey(bytes) } catch { throw WeChatPayV3Error(.invalidAPIv3Key) }
    }

    public static func == (lhs: APIv3Key, rhs: APIv3Key) -> Bool { ConstantTime.equal(lhs.bytes, rhs.bytes) }
    public func hash(into hasher: inout Hasher) { hasher.combine(bytes) }

    public var description: String { "APIv3Key(redacted)" }
    public var debugDescription: String { description }
}
