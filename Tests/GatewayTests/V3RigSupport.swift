// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
@testable import Gateway
import HTTP
import WeChatPaySimulator
import WeChatPayV3

/// WeChat Pay API v3 on both sides of a `GatewayRig`: the simulator speaks v3 in the chosen key
/// mode, the gateway holds the merchant's keys and trusts WeChat's (the public key, the simulator's
/// platform certificates pinned, or both during a migration).
struct V3Setup: Sendable {
    enum KeyMode: String, Sendable, CaseIterable, CustomStringConvertible {
        case publicKey = "public-key"
        case certificates
        /// A migration: both at once, notifies signed with either.
        case both
        var description: String { rawValue }
    }

    var mode: KeyMode
    /// The version new orders use (v2 with v3 configured: a merchant about to switch).
    var newOrders: WeChatPayAPIVersion = .v3
    /// Whether the gateway holds the v2 key (WXPAY_API_KEY); false: a merchant on v3 only.
    var v2Key = true

    static let apiV3Key = "a7cde1ZJB1kG2e7VfTs3jQzaWizur8Gb"
    static let publicKeyID = "PUB_KEY_ID_0110000100202612040000000001"

    /// The merchant's key and certificate and WeChat's key, made once per test process (RSA key
    /// generation is the slow part of a rig).
    struct Keys: Sendable {
        let merchantKey = RSAPrivateKey.generate()
        let wechatpayKey = RSAPrivateKey.generate()
        let certificate: Certificate
        init() {
            let now = Date()
            certificate = CertificateIssuer.issue(.init(commonName: GatewayConfiguration.demoMchID, organization: "Tests", country: "CN"),
                                                  key: merchantKey.key, issuer: nil, issuerKey: merchantKey.key, serial: 0x5157_F09E,
                                                  validity: (now - 86400)...(now + 86400 * 365), kind: .leaf)!
        }
        var serial: String { certificate.serialNumberHex! }
        var publicKey: WeChatPayPublicKey { try! WeChatPayPublicKey(id: V3Setup.publicKeyID, key: wechatpayKey.publicKey) }
    }
    static let keys = Keys()

    var simulator: V3SimulatorConfiguration {
        V3SimulatorConfiguration(apiV3Key: try! APIv3Key(Self.apiV3Key), merchantCertificate: Self.keys.certificate,
                                 publicKeyID: mode == .certificates ? nil : Self.publicKeyID,
                                 wechatpayKey: mode == .certificates ? nil : Self.keys.wechatpayKey,
                                 platformCertificates: mode != .publicKey)
    }

    /// The gateway's credentials; in certificate mode the simulator's first certificate pins.
    func credentials(trusting certificates: [PlatformCertificate]) -> V3Credentials {
        V3Credentials(apiV3Key: try! APIv3Key(Self.apiV3Key), merchantKey: Self.keys.merchantKey, merchantSerial: Self.keys.serial,
                      publicKey: mode == .certificates ? nil : Self.keys.publicKey,
                      pinnedCertificates: mode == .publicKey ? [] : Array(certificates.prefix(1)))
    }
}

extension GatewayRig {
    /// A v3 notify as WeChat sends it, sealed with the APIv3 key and signed by `signer` at
    /// `timestamp` (now unless given), posted to `path` without a bearer token.
    func v3Notify(_ event: V3NotifyEvent, signer: WeChatPaySigner, timestamp: Int64? = nil, path: String = "/wechat/v3/notify",
                  change: (inout [String: String]) -> Void = { _ in }) async throws -> Response {
        let body = V3NotifyBuilder(key: try APIv3Key(V3Setup.apiV3Key)).body(
            event, id: UUID().uuidString, createTime: RFC3339.format(Date()), nonce: "n0nce0123456")
        var headers = signer.sign(body, timestamp: timestamp ?? Int64(Date().timeIntervalSince1970), nonce: UUID().uuidString).headers
        headers["Content-Type"] = "application/json"
        change(&headers)
        return try await send(.post, path, token: nil, bytes: body, headers: headers)
    }

    /// WeChat's public-key signer (public-key mode).
    static var publicKeySigner: WeChatPaySigner { WeChatPaySigner(key: V3Setup.keys.wechatpayKey, serial: V3Setup.publicKeyID) }

    /// The transaction a TRANSACTION.SUCCESS notify for `outTradeNo` carries.
    static func paidTransaction(_ outTradeNo: String, amount: Int, transactionID: String = "4200000000202612040000000001")
        -> V3Transaction {
        V3Transaction(appID: GatewayConfiguration.demoAppID, mchID: GatewayConfiguration.demoMchID, outTradeNo: outTradeNo,
                      transactionID: transactionID, tradeType: "APP", tradeState: .success, tradeStateDescription: "支付成功",
                      bankType: "OTHERS", successTime: RFC3339.format(Date()), payerOpenID: "oV3", total: amount, payerTotal: amount)
    }
}
