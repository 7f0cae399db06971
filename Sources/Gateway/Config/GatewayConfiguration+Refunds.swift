// SPDX-License-Identifier: Apache-2.0
import Foundation
public import HTTP

extension GatewayConfiguration {
    /// How refunds reach WeChat: `/secapi/pay/refund` needs the merchant's API certificate over
    /// mutual TLS, and WeChat posts each refund's result to our refund-notify URL.
    ///
    /// | variable | meaning | default |
    /// |---|---|---|
    /// | `WXPAY_CLIENT_CERT`, `WXPAY_CLIENT_KEY` | the merchant certificate and key, PEM | `certs/apiclient_cert.pem`, `certs/apiclient_key.pem` when both exist |
    /// | `WXPAY_CLIENT_P12`, `WXPAY_CLIENT_P12_PASSWORD` | the same as PKCS#12 (instead of the PEM pair) | password: the mch_id |
    /// | `WXPAY_API_CA_FILE` | a PEM bundle that verifies WeChat's server instead of the system's store | unset |
    /// | `WXPAY_REFUND_NOTIFY_URL` | the public URL WeChat posts refund results to; required with a certificate | demo: derived |
    /// | `GATEWAY_REFUND_QUERY_AFTER` | seconds a refund stays PROCESSING before the reconciler asks (refundquery) | 60 |
    ///
    /// No certificate outside demo mode: refunds are off (503 `refunds_not_configured`). Demo mode
    /// refunds through the embedded simulator, in process.
    public struct Refunds: Sendable {
        public enum Mode: Sendable, Hashable {
            /// No certificate configured: refund requests answer 503 `refunds_not_configured`.
            case off
            /// Demo mode: the embedded simulator takes refunds in process (no TLS between them).
            case embedded
            /// The merchant certificate, presented on `/secapi/` calls only.
            case mutualTLS(TLSClientIdentity)
        }

        public var mode: Mode
        /// The variable(s) that named the certificate, for start-up messages.
        public var certificateVariables: String
        /// WXPAY_API_CA_FILE: trusted instead of the system's CA store for every call to WeChat.
        public var caFile: String?
        /// WXPAY_REFUND_NOTIFY_URL, sent as `notify_url` with every refund.
        public var notifyURL: String
        /// GATEWAY_REFUND_QUERY_AFTER: seconds before a PROCESSING refund is asked about.
        public var queryAfter: Double
        /// WeChat takes at most 50 partial refunds per order.
        public var maximumPerOrder: Int

        public init(mode: Mode, certificateVariables: String = "", caFile: String? = nil, notifyURL: String,
                    queryAfter: Double = 60, maximumPerOrder: Int = 50) {
            self.mode = mode
            self.certificateVariables = certificateVariables
            self.caFile = caFile
            self.notifyURL = notifyURL
            self.queryAfter = queryAfter
            self.maximumPerOrder = maximumPerOrder
        }

        /// Whether refunds can be sent at all.
        public var isConfigured: Bool { mode != .off }

        /// The client identity to present, when there is one.
        public var clientIdentity: TLSClientIdentity? {
            if case .mutualTLS(let identity) = mode { return identity }
            return nil
        }
    }

    /// The default PEM pair, relative to the working directory (see certs/README.md).
    public static let defaultClientCertificate = "certs/apiclient_cert.pem"
    public static let defaultClientKey = "certs/apiclient_key.pem"

    /// Reads the refund variables (table on `Refunds`); the first malformed one stops start-up.
    /// - Parameter fileExists: how the default certificate files are looked for (tests replace it).
    public func refunds(_ environment: Environment,
                        fileExists: (String) -> Bool = { FileManager.default.fileExists(atPath: $0) })
        throws(ConfigurationError) -> Refunds
    {
        let queryAfter = try environment.get("GATEWAY_REFUND_QUERY_AFTER", default: 60.0,
                                             expecting: "seconds from 0 to 86400") {
            guard let value = Double($0), value >= 0, value <= 86400 else { return nil }
            return value
        }
        let caFile = environment.get("WXPAY_API_CA_FILE")
        if let caFile, !fileExists(caFile) {
            throw ConfigurationError(variable: "WXPAY_API_CA_FILE", expected: "a readable PEM file of CA certificates")
        }
        let host = listenHost == "0.0.0.0" ? "127.0.0.1" : listenHost
        let derived = "http://\(host):\(listenPort)/wechat/refund-notify"
        let configuredURL = try environment.get("WXPAY_REFUND_NOTIFY_URL", default: nil as String?,
                                                expecting: "an http(s) URL without a query string") { text in
            guard let url = URL(string: text), url.scheme == "https" || url.scheme == "http", url.host != nil,
                  url.query == nil, text.utf8.count <= 256 else { return nil }
            return text
        }

        let (mode, variables) = try refundMode(environment, fileExists: fileExists)
        if case .mutualTLS = mode, configuredURL == nil {
            throw ConfigurationError(variable: "WXPAY_REFUND_NOTIFY_URL",
                                     expected: "the public URL WeChat posts refund results to (required with \(variables))")
        }
        return Refunds(mode: mode, certificateVariables: variables, caFile: caFile,
                       notifyURL: configuredURL ?? derived, queryAfter: queryAfter)
    }

    private func refundMode(_ environment: Environment, fileExists: (String) -> Bool) throws(ConfigurationError)
        -> (Refunds.Mode, String)
    {
        // Demo mode has no real WeChat: the embedded simulator takes refunds whatever is configured.
        if demo { return (.embedded, "") }
        let p12 = environment.get("WXPAY_CLIENT_P12")
        let certificate = environment.get("WXPAY_CLIENT_CERT")
        let key = environment.get("WXPAY_CLIENT_KEY")
        if let p12 {
            guard certificate == nil, key == nil else {
                throw ConfigurationError(variable: "WXPAY_CLIENT_P12",
                                         expected: "either WXPAY_CLIENT_P12 or WXPAY_CLIENT_CERT with WXPAY_CLIENT_KEY, not both")
            }
            // WeChat issues apiclient_cert.p12 with the mch_id as its password.
            let password = environment.values["WXPAY_CLIENT_P12_PASSWORD"] ?? mchID
            return (.mutualTLS(.pkcs12(file: p12, password: password)), "WXPAY_CLIENT_P12")
        }
        switch (certificate, key) {
        case (let certificate?, let key?):
            return (.mutualTLS(.pem(certificateFile: certificate, keyFile: key)), "WXPAY_CLIENT_CERT/WXPAY_CLIENT_KEY")
        case (nil, nil):
            guard fileExists(Self.defaultClientCertificate), fileExists(Self.defaultClientKey) else { return (.off, "") }
            return (.mutualTLS(.pem(certificateFile: Self.defaultClientCertificate, keyFile: Self.defaultClientKey)),
                    "WXPAY_CLIENT_CERT/WXPAY_CLIENT_KEY (default files)")
        case (nil, _):
            throw ConfigurationError(variable: "WXPAY_CLIENT_CERT", expected: "the merchant certificate (PEM), set with WXPAY_CLIENT_KEY")
        case (_, nil):
            throw ConfigurationError(variable: "WXPAY_CLIENT_KEY", expected: "the merchant key (PEM), set with WXPAY_CLIENT_CERT")
        }
    }
}
