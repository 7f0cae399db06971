// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import Observability

extension GatewayConfiguration {
    /// `GATEWAY_ADMIN_LISTEN`: a second address for what only operators use — `/metrics`,
    /// `/healthz`, `/readyz` and the support console — so the public address carries only what
    /// WeChat, Apple and the apps call (docs/operations.md). `GATEWAY_TLS_CERT` and
    /// `GATEWAY_TLS_KEY`: serve HTTPS on both addresses, for a deployment without a TLS proxy.
    static let listenerVariables: [ConfigurationVariable] = [
        .optional("GATEWAY_ADMIN_LISTEN", \.adminListen,
                  expecting: "a numeric host and a port for /metrics, /healthz, /readyz and the console, e.g. 127.0.0.1:9090",
                  parse: parseListen),
        .optional("GATEWAY_TLS_CERT", \.tlsCertificateFile,
                  expecting: "a readable PEM file: the server certificate, leaf first, then its chain",
                  parse: ConfigurationVariable.text),
        .optional("GATEWAY_TLS_KEY", \.tlsKeyFile, expecting: "a readable PEM file: the certificate's private key, unencrypted",
                  parse: ConfigurationVariable.text),
    ]

    /// Loads the TLS pair (both or neither, the key the certificate's own) and keeps the admin
    /// address apart from the public one (and on loopback in demo mode, like the public one).
    static func listenerChecks(_ configuration: inout GatewayConfiguration, _ environment: Environment)
        -> [ConfigurationProblem]
    {
        var problems: [ConfigurationProblem] = []
        if let admin = configuration.adminListen {
            if admin == configuration.listen && admin.port != 0 {
                problems.append(ConfigurationProblem(
                    "GATEWAY_ADMIN_LISTEN", .conflict, expected: "another address than GATEWAY_LISTEN"))
            }
            if configuration.demo, let address = HTTPServerSocketAddress(host: admin.host, port: UInt16(admin.port)),
               !address.isLoopback
            {
                problems.append(ConfigurationProblem(
                    "GATEWAY_ADMIN_LISTEN", .conflict, expected: "demo mode listens on loopback only (127.0.0.0/8 or ::1)"))
            }
        }
        switch (configuration.tlsCertificateFile, configuration.tlsKeyFile) {
        case (nil, nil):
            break
        case (nil, .some):
            problems.append(ConfigurationProblem("GATEWAY_TLS_CERT", .conflict, expected: "set together with GATEWAY_TLS_KEY"))
        case (.some, nil):
            problems.append(ConfigurationProblem("GATEWAY_TLS_KEY", .conflict, expected: "set together with GATEWAY_TLS_CERT"))
        case (.some(let certificateFile), .some(let keyFile)):
            guard let certificate = readSmallTextFile(certificateFile),
                  certificate.contains("-----BEGIN CERTIFICATE-----")
            else {
                problems.append(ConfigurationProblem("GATEWAY_TLS_CERT", .malformed,
                                                     expected: "a readable PEM file with the server certificate"))
                break
            }
            guard let key = readSmallTextFile(keyFile), key.contains("PRIVATE KEY-----") else {
                problems.append(ConfigurationProblem("GATEWAY_TLS_KEY", .malformed,
                                                     expected: "a readable PEM file with the certificate's private key, unencrypted"))
                break
            }
            let tls = HTTPServerConfiguration.TLS(certificatePEM: certificate, privateKeyPEM: key)
            do {
                try tls.check()
                configuration.tls = tls
            } catch {
                problems.append(ConfigurationProblem("GATEWAY_TLS_KEY", .conflict,
                                                     expected: "the private key of GATEWAY_TLS_CERT (\(error.description))"))
            }
        }
        return problems
    }

    /// `https` with TLS, else `http`: how the gateway's own addresses are written.
    public var scheme: String { tls == nil ? "http" : "https" }
}
