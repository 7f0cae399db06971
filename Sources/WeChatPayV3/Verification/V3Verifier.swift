// SPDX-License-Identifier: Apache-2.0
import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The WeChat Pay public key of public-key mode: WeChat hands it out as a PEM file with its id
/// (`PUB_KEY_ID_…`), the value `Wechatpay-Serial` carries when WeChat signs with it.
public struct WeChatPayPublicKey: Sendable {
    public static let idPrefix = "PUB_KEY_ID_"

    public let id: String
    public let key: RSAPublicKey

    /// - Throws: ``WeChatPayV3Error/Code/invalidField`` when `id` does not start `PUB_KEY_ID_`
    ///   (the prefix is part of the id: it is how a serial names this key).
    public init(id: String, key: RSAPublicKey) throws(WeChatPayV3Error) {
        guard id.hasPrefix(Self.idPrefix), id.utf8.count > Self.idPrefix.utf8.count, id.utf8.count <= 128 else {
            throw .invalid("public_key_id")
        }
        self.id = id
        self.key = key
    }
}

/// Verifies WeChat Pay's signed answers and notifies, with the key the `Wechatpay-Serial` header
/// names: the WeChat Pay public key when it equals its `PUB_KEY_ID_…`, else a trusted platform
/// certificate of that serial. Both at once during a migration from certificates to the public key.
///
/// ```swift
/// let verifier = V3Verifier(publicKey: publicKey, platformCertificates: store)
/// try verifier.verify(try V3SignedMessage(headers: headers, body: body), now: Date())
/// ```
public struct V3Verifier: Sendable {
    /// How far a timestamp may be from now, either way: five minutes.
    public static let allowedSkew: Int64 = 300

    public let publicKey: WeChatPayPublicKey?
    public let platformCertificates: PlatformCertificateStore?

    public init(publicKey: WeChatPayPublicKey? = nil, platformCertificates: PlatformCertificateStore? = nil) {
        self.publicKey = publicKey
        self.platformCertificates = platformCertificates
    }

    /// Checks, in this order: a probe signature (refused as such), the timestamp within five
    /// minutes of `now`, the key the serial names, the signature over the raw body.
    public func verify(_ message: V3SignedMessage, now: Date) throws(WeChatPayV3Error) {
        if message.isProbe { throw WeChatPayV3Error(.signatureProbe) }
        guard let seconds = message.seconds else { throw WeChatPayV3Error(.malformedHeader, "Wechatpay-Timestamp") }
        let nowSeconds = Int64(now.timeIntervalSince1970.rounded(.down))
        guard abs(nowSeconds - seconds) <= Self.allowedSkew else { throw WeChatPayV3Error(.staleTimestamp) }
        let key = try key(for: message.serial, at: now)
        guard let signature = Base64.decode(message.signature, .standardPadded), signature.count == 256 else {
            throw WeChatPayV3Error(.badSignature)
        }
        guard key.isValidSignature(signature, for: message.signedBytes) else { throw WeChatPayV3Error(.badSignature) }
    }

    /// Reads the headers and verifies.
    public func verify(headers: [String: String], body: [UInt8], now: Date) throws(WeChatPayV3Error) {
        try verify(try V3SignedMessage(headers: headers, body: body), now: now)
    }

    /// The key `serial` names.
    public func key(for serial: String, at now: Date) throws(WeChatPayV3Error) -> RSAPublicKey {
        if let publicKey, serial == publicKey.id { return publicKey.key }
        guard let platformCertificates else { throw WeChatPayV3Error(.unknownSerial) }
        return try platformCertificates.key(for: serial, at: now)
    }

    /// What a request's `Wechatpay-Serial` should name: the public key's id when there is one (it
    /// makes WeChat sign the answer with it), else the newest trusted platform certificate.
    public func preferredSerial(at now: Date) -> String? {
        publicKey?.id ?? platformCertificates?.newestSerial(at: now)
    }
}
