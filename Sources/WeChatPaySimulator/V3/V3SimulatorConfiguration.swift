// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import SimulatorKit
import WeChatPayV3

/// What the simulated WeChat Pay needs to speak API v3 besides v2's merchant: the APIv3 key, the
/// merchant certificate whose key must sign requests, and WeChat's own keys in either mode or both.
///
/// - Public-key mode: `wechatpayKey` + `publicKeyID` (`PUB_KEY_ID_…`); `/v3/certificates`
///   answers 404 RESOURCE_NOT_EXISTS, as it does for merchants onboarded since late 2024.
/// - Certificate mode: `platformCertificates` true; the simulator issues itself a platform
///   certificate (and more at each rotation) and serves them, encrypted, at `/v3/certificates`.
/// - Both (a migration): answers are signed with the key the request's `Wechatpay-Serial` names,
///   notifies with ``V3SimulatorConfiguration/notifySerial`` (the public key unless changed).
public struct V3SimulatorConfiguration: Sendable {
    public var apiV3Key: APIv3Key
    /// The merchant API certificate: requests must be signed by its key and name its serial.
    public var merchantCertificate: Certificate
    public var publicKeyID: String?
    /// The private half of the WeChat Pay public key (the simulator signs with it).
    public var wechatpayKey: RSAPrivateKey?
    public var platformCertificates: Bool
    /// Where bill download URLs point when a request carries no Host header.
    public var baseURL: String

    public init(apiV3Key: APIv3Key, merchantCertificate: Certificate, publicKeyID: String? = nil, wechatpayKey: RSAPrivateKey? = nil,
                platformCertificates: Bool = false, baseURL: String = "https://api.mch.weixin.qq.com") {
        self.apiV3Key = apiV3Key
        self.merchantCertificate = merchantCertificate
        self.publicKeyID = publicKeyID
        self.wechatpayKey = wechatpayKey
        self.platformCertificates = platformCertificates
        self.baseURL = baseURL
    }

    /// Why this configuration cannot run, or nil: a mode must be chosen, the public key needs both
    /// halves and a `PUB_KEY_ID_` id, the merchant certificate must carry an RSA key and a serial.
    public var problem: String? {
        if (publicKeyID == nil) != (wechatpayKey == nil) { return "the WeChat Pay public key needs both its id and its private half" }
        if let publicKeyID, !publicKeyID.hasPrefix(WeChatPayPublicKey.idPrefix) { return "the public key id must start PUB_KEY_ID_" }
        if publicKeyID == nil && !platformCertificates { return "neither public-key mode nor platform certificates are configured" }
        if merchantCertificate.serialNumberHex == nil || (try? RSAPublicKey(certificate: merchantCertificate)) == nil {
            return "the merchant certificate must carry an RSA key of 2048 bits or more and a serial"
        }
        return nil
    }
}

/// Faults in the signatures of v3 notifies, drawn per attempt (WeChat retries on its schedule).
public struct V3NotifyFaults: Codable, Sendable, Hashable {
    /// Sign the attempt with a `WECHATPAY/SIGNTEST/` probe instead (the merchant must refuse it).
    public var probeRate: Double = 0
    /// Sign with a timestamp ten minutes old (the merchant must refuse it).
    public var staleTimestampRate: Double = 0
    /// Corrupt the signature (the merchant must refuse it).
    public var badSignatureRate: Double = 0
    /// Name a serial no key has (the merchant must refuse it).
    public var unknownSerialRate: Double = 0

    public init(probeRate: Double = 0, staleTimestampRate: Double = 0, badSignatureRate: Double = 0, unknownSerialRate: Double = 0) {
        self.probeRate = probeRate
        self.staleTimestampRate = staleTimestampRate
        self.badSignatureRate = badSignatureRate
        self.unknownSerialRate = unknownSerialRate
    }

    private enum CodingKeys: String, CodingKey, CaseIterable { case probeRate, staleTimestampRate, badSignatureRate, unknownSerialRate }

    public init(from decoder: any Decoder) throws {
        try ControlBody.refuseUnknownMembers(decoder, known: CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(probeRate: try ControlBody.rate(c, .probeRate),
                  staleTimestampRate: try ControlBody.rate(c, .staleTimestampRate),
                  badSignatureRate: try ControlBody.rate(c, .badSignatureRate),
                  unknownSerialRate: try ControlBody.rate(c, .unknownSerialRate))
    }
}
