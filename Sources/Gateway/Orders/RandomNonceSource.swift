// SPDX-License-Identifier: Apache-2.0
import WeChatPay

/// 32 random characters of `[A-Za-z0-9]` per call, from the system's cryptographic generator, as
/// the official SDK makes them. The protocol core draws no randomness itself; this is where it comes from.
public struct RandomNonceSource: NonceSource {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)

    public init() {}

    public func nextNonce() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(decoding: (0..<32).map { _ in Self.alphabet.randomElement(using: &generator)! }, as: UTF8.self)
    }
}
