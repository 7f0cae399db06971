// SPDX-License-Identifier: Apache-2.0
import Foundation
public import HTTP
import OperatorFiles

extension GatewayConfiguration {
    /// Refunds: `/secapi/pay/refund` needs the merchant's API certificate over mutual TLS, and
    /// WeChat posts each refund's result to our refund-notify URL (see `RefundService`).
    ///
    /// | variable | meaning | default |
    /// |---|---|---|
    /// | `WXPAY_CLIENT_CERT`, `WXPAY_CLIENT_KEY` | the merchant certificate and key, PEM | `certs/apiclient_cert.pem`, `certs/apiclient_key.pem` when both exist |
    /// | `WXPAY_CLIENT_P12`, `WXPAY_CLIENT_P12_PASSWORD` | the same as PKCS#12, instead of the PEM pair | password: the mch_id |
    /// | `WXPAY_API_CA_FILE` | a PEM bundle that verifies WeChat's server instead of the system's store | unset |
    /// | `WXPAY_REFUND_NOTIFY_URL` | the public URL WeChat posts refund results to; required with a certificate | demo: derived |
    /// | `GATEWAY_REFUND_QUERY_AFTER` | seconds a refund stays PROCESSING before the reconciler asks (refundquery) | 60 |
    ///
    /// Without a certificate a production gateway still starts (payments need none): refunds
    /// answer 503 `refunds_not_configured`. Demo mode refunds through the embedded simulator.
    public struct Refunds: Sendable, Hashable {
        public var certificateFile: String?
        public var keyFile: String?
        public var pkcs12File: String?
        public var pkcs12Password: String?
        public var caFile: String?
        public var notifyURL: String?
        public var queryAfter = 60.0
        /// WeChat takes at most 50 partial refunds per order.
        public var maximumPerOrder = 50
    }

    /// How refunds reach WeChat.
    public enum RefundMode: Sendable, Hashable {
        /// No certificate configured: refund requests answer 503 `refunds_not_configured`.
        case off
        /// Demo mode: the embedded simulator takes refunds in process (no TLS between them).
        case embedded
        /// The merchant certificate, presented on `/secapi/` calls only.
        case mutualTLS(TLSClientIdentity)

        /// The client identity to present, when there is one.
        public var clientIdentity: TLSClientIdentity? {
            if case .mutualTLS(let identity) = self { return identity }
            return nil
        }
    }

    /// The default PEM pair, relative to the working directory (see certs/README.md).
    public static let defaultClientCertificate = "certs/apiclient_cert.pem"
    public static let defaultClientKey = "certs/apiclient_key.pem"

    /// How refunds reach WeChat with these variables: demo mode through the simulator; otherwise the
    /// PKCS#12, or the PEM pair, or the default PEM files when both exist, or not at all.
    public var refundMode: RefundMode { refundMode(fileExists: { Self.readableFile($0) != nil }) }

    func refundMode(fileExists: (String) -> Bool) -> RefundMode {
        if demo { return .embedded }
        if let file = refunds.pkcs12File {
            // WeChat issues apiclient_cert.p12 with the mch_id as its password.
            return .mutualTLS(.pkcs12(file: file, password: refunds.pkcs12Password ?? mchID))
        }
        if let certificate = refunds.certificateFile, let key = refunds.keyFile {
            return .mutualTLS(.pem(certificateFile: certificate, keyFile: key))
        }
        if refunds.certificateFile == nil, refunds.keyFile == nil,
           fileExists(Self.defaultClientCertificate), fileExists(Self.defaultClientKey) {
            return .mutualTLS(.pem(certificateFile: Self.defaultClientCertificate, keyFile: Self.defaultClientKey))
        }
        return .off
    }

    /// The `notify_url` of refunds: WXPAY_REFUND_NOTIFY_URL, or in demo mode the listen address
    /// (until the server reports the one it bound).
    public var refundNotifyURL: String {
        refunds.notifyURL ?? listen.httpOrigin + "/wechat/refund-notify"
    }

    static let refundVariables: [ConfigurationVariable] = [
        .optional("WXPAY_CLIENT_CERT", \.refunds.certificateFile,
                  expecting: "a readable PEM file: the merchant API certificate (apiclient_cert.pem)", parse: readableFile),
        .optional("WXPAY_CLIENT_KEY", \.refunds.keyFile,
                  expecting: "a readable PEM file: the merchant API key (apiclient_key.pem)", parse: readableFile),
        .optional("WXPAY_CLIENT_P12", \.refunds.pkcs12File,
                  expecting: "a readable PKCS#12 file: the merchant API certificate (apiclient_cert.p12)", parse: readableFile),
        .optional("WXPAY_CLIENT_P12_PASSWORD", \.refunds.pkcs12Password,
                  expecting: "the PKCS#12 file's password (default: the mch_id)", parse: ConfigurationVariable.text),
        .optional("WXPAY_API_CA_FILE", \.refunds.caFile,
                  expecting: "a readable PEM file of the CA certificates that verify WeChat's server", parse: readableFile),
        .optional("WXPAY_REFUND_NOTIFY_URL", \.refunds.notifyURL,
                  expecting: "the public http(s) URL WeChat posts refund results to, without a query string",
                  parse: ConfigurationVariable.url(query: false)),
        ConfigurationVariable("GATEWAY_REFUND_QUERY_AFTER", \.refunds.queryAfter, expecting: "seconds from 0 to 86400",
                              parse: ConfigurationVariable.seconds(0...86400)),
    ]

    /// One certificate form, complete; a notify URL with it; and a certificate that loads and
    /// matches its key (a wrong file or password stops the start, not the first refund).
    static func refundChecks(_ configuration: GatewayConfiguration, _ environment: Environment) -> [ConfigurationProblem] {
        guard !configuration.demo else { return [] }
        let set = { (name: String) in environment.get(name) != nil }
        var problems: [ConfigurationProblem] = []
        if set("WXPAY_CLIENT_P12") && (set("WXPAY_CLIENT_CERT") || set("WXPAY_CLIENT_KEY")) {
            problems.append(ConfigurationProblem("WXPAY_CLIENT_P12", .conflict,
                                                 expected: "give either WXPAY_CLIENT_P12 or WXPAY_CLIENT_CERT with WXPAY_CLIENT_KEY, not both"))
        } else if set("WXPAY_CLIENT_CERT") != set("WXPAY_CLIENT_KEY") {
            let (missing, other) = set("WXPAY_CLIENT_CERT") ? ("WXPAY_CLIENT_KEY", "WXPAY_CLIENT_CERT")
                : ("WXPAY_CLIENT_CERT", "WXPAY_CLIENT_KEY")
            problems.append(ConfigurationProblem(missing, .conflict, expected: "required with \(other) (the PEM pair)"))
        }
        // A malformed file variable is reported already; nothing to load then.
        let files = [("WXPAY_CLIENT_CERT", configuration.refunds.certificateFile),
                     ("WXPAY_CLIENT_KEY", configuration.refunds.keyFile), ("WXPAY_CLIENT_P12", configuration.refunds.pkcs12File)]
        let malformed = files.contains { name, value in set(name) && value == nil }
        guard problems.isEmpty, !malformed, case .mutualTLS(let identity) = configuration.refundMode else { return problems }
        if configuration.refunds.notifyURL == nil {
            problems.append(ConfigurationProblem(
                "WXPAY_REFUND_NOTIFY_URL", .conflict,
                expected: "required with a v2 client certificate (WXPAY_CLIENT_CERT): the public http(s) URL WeChat posts refund results to"))
        }
        do {
            _ = try identity.inspect()
        } catch {
            let variable = configuration.refunds.pkcs12File != nil ? "WXPAY_CLIENT_P12"
                : configuration.refunds.certificateFile != nil ? "WXPAY_CLIENT_CERT" : "WXPAY_CLIENT_CERT (default files)"
            problems.append(ConfigurationProblem(variable, .conflict, expected: error.description))
        }
        return problems
    }

    /// A path that opens as a regular file (never a FIFO, whose open would block); the problem of
    /// one that is not names the variable (`fileChecks`).
    static let readableFile: @Sendable (String) -> String? = { (try? OperatorFile.requireRegular($0)) != nil ? $0 : nil }
}
