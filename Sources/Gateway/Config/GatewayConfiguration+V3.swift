// SPDX-License-Identifier: Apache-2.0
public import Crypto
import Foundation
import WeChatPay
public import WeChatPayV3

/// The WeChat Pay API version new orders are created with. Every order keeps its own: orders made
/// under v2 are finished in v2 after a switch to v3.
public enum WeChatPayAPIVersion: String, Sendable, Hashable, CaseIterable {
    case v2, v3
}

extension GatewayConfiguration {
    /// WeChat Pay API v3 (README, "WeChat Pay API v3").
    ///
    /// | variable | meaning | default |
    /// |---|---|---|
    /// | `WXPAY_API_VERSION` | `v2` or `v3`: the version new orders use (demo mode takes it too) | `v2` |
    /// | `WXPAY_API_V3_KEY` | the APIv3 key (32 ASCII characters): notifies and platform certificates are encrypted with it | — |
    /// | `WXPAY_MERCHANT_PRIVATE_KEY` | the merchant API private key, PEM (`apiclient_key.pem`): signs every v3 request and the app's parameters | — |
    /// | `WXPAY_MERCHANT_SERIAL` | the merchant API certificate's serial (hex) | read from `WXPAY_MERCHANT_CERT` |
    /// | `WXPAY_MERCHANT_CERT` | the merchant API certificate, PEM: its serial is used and the private key is checked against it | unset |
    /// | `WXPAY_PUBLIC_KEY_FILE`, `WXPAY_PUBLIC_KEY_ID` | public-key mode: the WeChat Pay public key (PEM, RSA-2048) and its `PUB_KEY_ID_…` | unset |
    /// | `WXPAY_PLATFORM_CERT_FILE` | certificate mode: a platform certificate (PEM) that pins the first `/v3/certificates` download | unset |
    ///
    /// v3 is on when the key, the private key and a serial are given, with the public key, a
    /// platform certificate or both (a migration between the modes).
    public struct V3: Sendable {
        public var apiVersion = WeChatPayAPIVersion.v2
        public var apiV3Key: APIv3Key?
        public var merchantPrivateKeyFile: String?
        public var merchantSerial: String?
        public var merchantCertificateFile: String?
        public var publicKeyFile: String?
        public var publicKeyID: String?
        public var platformCertificateFile: String?
        /// What the files hold, loaded and checked at start (`v3Checks`); nil while v3 is off.
        public var credentials: V3Credentials?
        /// Demo mode with WXPAY_API_VERSION=v3: the keys made at start, for the embedded simulator too.
        public var demo: DemoV3?

        public init() {}
    }

    /// What a new order records of how it is spoken about: the API version (WXPAY_API_VERSION) and
    /// the signature it uses — v2's WXPAY_SIGN_TYPE, or v3's RSA. Every later call about the order,
    /// and its notifies, follow what it recorded.
    public var newOrders: (apiVersion: String, signType: String) {
        (v3.apiVersion.rawValue, v3.apiVersion == .v3 ? "RSA" : signType.rawValue)
    }

    /// What this configuration speaks to WeChat in which version, in words for `serve`'s start and
    /// `doctor`: the version of new orders, and what of v2's orders goes through v3 for want of the
    /// v2 key or the merchant certificate (the rule itself is `VersionedUpstream`'s).
    public var apiVersionsInWords: [String] {
        var lines = ["new orders: API \(v3.apiVersion.rawValue)" + (v3.apiVersion == .v2 ? " (\(signType.rawValue))" : "")]
        guard v3.credentials != nil else { return lines }
        if apiKey == nil {
            lines.append("no v2 key (WXPAY_API_KEY): orders created with API v2 are queried, closed and refunded through API v3, "
                         + "and v2 notifies are refused (the wait and the reconciler find their payments through v3)")
        } else if refundMode == .off {
            lines.append("no v2 client certificate (WXPAY_CLIENT_CERT and WXPAY_CLIENT_KEY, or WXPAY_CLIENT_P12): refunds of orders created with API v2 go through API v3")
        }
        return lines
    }

    static let v3Variables: [ConfigurationVariable] = [
        ConfigurationVariable("WXPAY_API_VERSION", \.v3.apiVersion, expecting: "v2 or v3") {
            WeChatPayAPIVersion(rawValue: $0.lowercased())
        },
        .optional("WXPAY_API_V3_KEY", \.v3.apiV3Key, expecting: "the APIv3 key: exactly 32 printable ASCII characters") {
            try? APIv3Key($0)
        },
        .optional("WXPAY_MERCHANT_PRIVATE_KEY", \.v3.merchantPrivateKeyFile,
                  expecting: "a readable PEM file: the merchant API private key (apiclient_key.pem)", parse: readableFile),
        .optional("WXPAY_MERCHANT_SERIAL", \.v3.merchantSerial,
                  expecting: "the merchant API certificate's serial number (hex digits, up to 40)") { text in
            (1...40).contains(text.utf8.count) && text.allSatisfy(\.isHexDigit) ? text.uppercased() : nil
        },
        .optional("WXPAY_MERCHANT_CERT", \.v3.merchantCertificateFile,
                  expecting: "a readable PEM file: the merchant API certificate (apiclient_cert.pem)", parse: readableFile),
        .optional("WXPAY_PUBLIC_KEY_FILE", \.v3.publicKeyFile,
                  expecting: "a readable PEM file: the WeChat Pay public key (pub_key.pem)", parse: readableFile),
        .optional("WXPAY_PUBLIC_KEY_ID", \.v3.publicKeyID, expecting: "the WeChat Pay public key's id, PUB_KEY_ID_ and up to 117 more characters") {
            $0.hasPrefix(WeChatPayPublicKey.idPrefix) && (12...128).contains($0.utf8.count)
                && $0.utf8.allSatisfy { (0x21...0x7E).contains($0) } ? $0 : nil
        },
        .optional("WXPAY_PLATFORM_CERT_FILE", \.v3.platformCertificateFile,
                  expecting: "a readable PEM file: a WeChat Pay platform certificate", parse: readableFile),
    ]

    static let v3Names = ["WXPAY_API_V3_KEY", "WXPAY_MERCHANT_PRIVATE_KEY", "WXPAY_MERCHANT_SERIAL", "WXPAY_MERCHANT_CERT",
                          "WXPAY_PUBLIC_KEY_FILE", "WXPAY_PUBLIC_KEY_ID", "WXPAY_PLATFORM_CERT_FILE"]

    /// v3's variables complete and consistent, their files loaded: the key of the right length (a
    /// malformed problem already), the private key an RSA key that matches the merchant certificate
    /// and the serial the certificate's, the public key RSA-2048 with its id, the platform
    /// certificate RSA and valid now. Every problem is reported, in the one refusal. Demo mode makes
    /// its own keys (`demoV3`).
    static func v3Checks(_ configuration: inout GatewayConfiguration, _ environment: Environment) -> [ConfigurationProblem] {
        if configuration.demo {
            if configuration.v3.apiVersion == .v3 {
                let demo = demoV3()
                configuration.v3.demo = demo
                configuration.v3.credentials = demo.credentials
            }
            return []
        }
        let set = { (name: String) in environment.get(name) != nil }
        let anySet = v3Names.contains(where: set)
        guard anySet || configuration.v3.apiVersion == .v3 else { return [] }
        var problems: [ConfigurationProblem] = []
        let why = configuration.v3.apiVersion == .v3 ? "required with WXPAY_API_VERSION=v3" : "required for WeChat Pay API v3"
        if !set("WXPAY_API_V3_KEY") { problems.append(ConfigurationProblem("WXPAY_API_V3_KEY", .conflict, expected: why)) }
        if !set("WXPAY_MERCHANT_PRIVATE_KEY") {
            problems.append(ConfigurationProblem("WXPAY_MERCHANT_PRIVATE_KEY", .conflict, expected: why))
        }
        if !set("WXPAY_MERCHANT_SERIAL") && !set("WXPAY_MERCHANT_CERT") {
            problems.append(ConfigurationProblem("WXPAY_MERCHANT_SERIAL", .conflict,
                                                 expected: why + " (or WXPAY_MERCHANT_CERT, whose serial is read)"))
        }
        if set("WXPAY_PUBLIC_KEY_FILE") != set("WXPAY_PUBLIC_KEY_ID") {
            let (missing, other) = set("WXPAY_PUBLIC_KEY_FILE") ? ("WXPAY_PUBLIC_KEY_ID", "WXPAY_PUBLIC_KEY_FILE")
                : ("WXPAY_PUBLIC_KEY_FILE", "WXPAY_PUBLIC_KEY_ID")
            problems.append(ConfigurationProblem(missing, .conflict, expected: "required with \(other) (public-key mode)"))
        } else if !set("WXPAY_PUBLIC_KEY_FILE") && !set("WXPAY_PLATFORM_CERT_FILE") {
            problems.append(ConfigurationProblem(
                "WXPAY_PUBLIC_KEY_FILE", .conflict,
                expected: why + ": the WeChat Pay public key with WXPAY_PUBLIC_KEY_ID (public-key mode), "
                    + "or WXPAY_PLATFORM_CERT_FILE (certificate mode), or both"))
        }
        if configuration.refunds.notifyURL == nil {
            problems.append(ConfigurationProblem("WXPAY_REFUND_NOTIFY_URL", .conflict,
                                                 expected: why + " (v3 refunds need no certificate, so they are on)"))
        }
        let v3 = configuration.v3
        // What loads is checked even when something else is missing: every problem at once.
        var merchantKey: RSAPrivateKey?
        if let file = v3.merchantPrivateKeyFile {
            merchantKey = readSmallTextFile(file).flatMap { try? RSAPrivateKey(pem: $0) }
            if merchantKey == nil {
                problems.append(ConfigurationProblem("WXPAY_MERCHANT_PRIVATE_KEY", .conflict,
                                                     expected: "not an RSA private key of 2048 bits or more in PEM"))
            }
        }
        var serial = v3.merchantSerial
        if let file = v3.merchantCertificateFile {
            if let certificate = loadCertificate(file), let certificateSerial = certificate.serialNumberHex {
                if let merchantKey, !certificate.matches(merchantKey.key) {
                    problems.append(ConfigurationProblem("WXPAY_MERCHANT_PRIVATE_KEY", .conflict,
                                                         expected: "does not match the certificate WXPAY_MERCHANT_CERT"))
                }
                if let given = serial, given.drop(while: { $0 == "0" }) != certificateSerial.drop(while: { $0 == "0" }) {
                    problems.append(ConfigurationProblem("WXPAY_MERCHANT_SERIAL", .conflict,
                                                         expected: "is not the serial of WXPAY_MERCHANT_CERT"))
                }
                serial = certificateSerial
            } else {
                problems.append(ConfigurationProblem("WXPAY_MERCHANT_CERT", .conflict, expected: "not an X.509 certificate in PEM"))
            }
        }
        var publicKey: WeChatPayPublicKey?
        if let file = v3.publicKeyFile {
            let key = readSmallTextFile(file).flatMap { try? PublicKey(pem: $0) }
            if let key, key.algorithm == .rsa(bits: 2048) {
                if let rsa = try? RSAPublicKey(key) {
                    if let id = v3.publicKeyID { publicKey = try? WeChatPayPublicKey(id: id, key: rsa) }
                } else {
                    // With an exponent of 1 anyone could sign as WeChat: a broken or forged file.
                    problems.append(ConfigurationProblem("WXPAY_PUBLIC_KEY_FILE", .conflict,
                                                         expected: "an RSA-2048 public key whose exponent is not odd and at least 3 "
                                                             + "(WeChat Pay's is 65537)"))
                }
            } else {
                problems.append(ConfigurationProblem("WXPAY_PUBLIC_KEY_FILE", .conflict,
                                                     expected: "not an RSA-2048 public key in PEM (BEGIN PUBLIC KEY)"))
            }
        }
        var pinned: [PlatformCertificate] = []
        if let file = v3.platformCertificateFile {
            if let certificate = loadCertificate(file), let platform = try? PlatformCertificate(certificate: certificate) {
                if platform.isValid(at: Date()) {
                    pinned = [platform]
                } else {
                    problems.append(ConfigurationProblem("WXPAY_PLATFORM_CERT_FILE", .conflict,
                                                         expected: "the platform certificate is not valid now (expired or not yet valid)"))
                }
            } else {
                problems.append(ConfigurationProblem("WXPAY_PLATFORM_CERT_FILE", .conflict,
                                                     expected: "not an X.509 certificate with an RSA key of 2048 bits or more in PEM"))
            }
        }
        if problems.isEmpty, let key = v3.apiV3Key, let merchantKey, let serial, publicKey != nil || !pinned.isEmpty {
            configuration.v3.credentials = V3Credentials(apiV3Key: key, merchantKey: merchantKey, merchantSerial: serial,
                                                         publicKey: publicKey, pinnedCertificates: pinned)
        }
        return problems
    }

    static func loadCertificate(_ file: String) -> Certificate? {
        guard let bytes = readSmallFile(file) else { return nil }
        return Certificate(pemOrDER: bytes)
    }

    /// Demo mode's v3 merchant, made at each start (WeChat publishes no v3 test keys): a merchant key
    /// and its certificate, and the WeChat Pay public key whose private half the embedded simulator
    /// signs with (public-key mode).
    public static func demoV3(now: Date = Date()) -> DemoV3 {
        let merchantKey = RSAPrivateKey.generate()
        let wechatpayKey = RSAPrivateKey.generate()
        guard let certificate = CertificateIssuer.issue(
            .init(commonName: demoMchID, organization: "Demo merchant", country: "CN"), key: merchantKey.key, issuer: nil,
            issuerKey: merchantKey.key, serial: 0x5157_F09E_FDC0_96DE, validity: (now - 86400)...(now + 365 * 86400), kind: .leaf),
            let serial = certificate.serialNumberHex,
            let publicKey = try? WeChatPayPublicKey(id: demoPublicKeyID, key: wechatpayKey.publicKey),
            let apiV3Key = try? APIv3Key(demoAPIv3Key)
        else { preconditionFailure("demo mode could not make its v3 keys") }
        return DemoV3(credentials: V3Credentials(apiV3Key: apiV3Key, merchantKey: merchantKey, merchantSerial: serial,
                                                 publicKey: publicKey, pinnedCertificates: []),
                      merchantCertificate: certificate, wechatpayKey: wechatpayKey)
    }

    public static let demoAPIv3Key = "demoAPIv3Key0123456789abcdefABCD"
    public static let demoPublicKeyID = "PUB_KEY_ID_0110000100202612040000000000"
}

/// Demo mode's v3 keys: the gateway's credentials, and what the embedded simulator needs to be
/// WeChat for them.
public struct DemoV3: Sendable {
    public var credentials: V3Credentials
    public var merchantCertificate: Certificate
    public var wechatpayKey: RSAPrivateKey
}

/// The merchant's v3 keys and WeChat's, loaded and checked: the gateway signs with the first two
/// and verifies with the public key (`PUB_KEY_ID_…` serials) and the platform certificates (any
/// other serial; the configured one pins the first download), both at once during a migration.
public struct V3Credentials: Sendable {
    public var apiV3Key: APIv3Key
    public var merchantKey: RSAPrivateKey
    /// The merchant API certificate's serial, uppercase hex.
    public var merchantSerial: String
    public var publicKey: WeChatPayPublicKey?
    public var pinnedCertificates: [PlatformCertificate]

    public init(apiV3Key: APIv3Key, merchantKey: RSAPrivateKey, merchantSerial: String, publicKey: WeChatPayPublicKey?,
                pinnedCertificates: [PlatformCertificate]) {
        self.apiV3Key = apiV3Key
        self.merchantKey = merchantKey
        self.merchantSerial = merchantSerial.uppercased()
        self.publicKey = publicKey
        self.pinnedCertificates = pinnedCertificates
    }

    /// Whether platform certificates are used (and refreshed every 12 hours).
    public var usesCertificates: Bool { !pinnedCertificates.isEmpty }
}
