// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import HTTP
import WeChatPay
import WeChatPayHTTPTransport

/// How `serve` and `reconcile` reach WeChat outside demo mode: HTTPS with the merchant
/// certificate presented on `/secapi/` calls (refunds), and WXPAY_API_CA_FILE, when set, trusted
/// instead of the system's store (a client of its own, so the business webhook keeps the system's).
struct WeChatConnection {
    let transport: any WeChatPayTransport
    /// The client made for WXPAY_API_CA_FILE, to shut down at the end; nil when the shared one is used.
    let ownClient: HTTPClient?

    static func open(_ configuration: GatewayConfiguration, refunds: GatewayConfiguration.Refunds,
                     sharedClient: HTTPClient) throws(HTTPClientError) -> WeChatConnection {
        var ownClient: HTTPClient?
        if let caFile = refunds.caFile {
            ownClient = try HTTPClient(configuration: .init(tls: .init(caFile: caFile)))
        }
        let transport = WeChatPayHTTPTransport(client: ownClient ?? sharedClient, configuration: .init(
            primaryBaseURL: configuration.apiBase, backupBaseURL: configuration.apiBackupBase,
            clientIdentity: refunds.clientIdentity))
        return WeChatConnection(transport: transport, ownClient: ownClient)
    }

    func close() async {
        await ownClient?.shutdown()
    }
}

extension ServeCommand {
    /// WeChat warns about nothing; we warn this long before the merchant certificate expires.
    static let certificateWarning: TimeInterval = 30 * 86400

    /// The refund configuration, with the merchant certificate read and checked now: a file that
    /// cannot be read, a wrong PKCS#12 password or a key of another certificate stops start-up
    /// (exit 78) naming the variable. Prints why and answers nil when start-up must stop.
    static func refundConfiguration(_ configuration: GatewayConfiguration, metrics: MetricsRegistry, logger: Logger)
        -> GatewayConfiguration.Refunds?
    {
        let refunds: GatewayConfiguration.Refunds
        do {
            refunds = try configuration.refunds(Environment(ProcessInfo.processInfo.environment))
        } catch {
            FileHandle.standardError.write(Data("serve: configuration error: \(error)\n".utf8))
            return nil
        }
        switch refunds.mode {
        case .off:
            logger.notice("refunds off: no merchant certificate (WXPAY_CLIENT_CERT and WXPAY_CLIENT_KEY, or WXPAY_CLIENT_P12)")
        case .embedded:
            logger.notice("refunds through the embedded simulator (demo mode)")
        case .mutualTLS(let identity):
            do {
                let certificate = try identity.inspect()
                watchExpiry(of: certificate, metrics: metrics, logger: logger)
                logger.notice("refunds on", ["certificate": certificate.commonName ?? "?",
                                             "expires": BeijingTime.formatRFC3339(certificate.notAfter)])
            } catch {
                FileHandle.standardError.write(Data("serve: configuration error: \(refunds.certificateVariables): \(error)\n".utf8))
                return nil
            }
        }
        return refunds
    }

    /// `wxpay_client_cert_expiry_seconds`, kept current (once a minute), and a warning from 30 days
    /// before the merchant certificate expires (once a day, and at start-up). An expired certificate
    /// does not stop the gateway: payments do not need it, and WeChat refuses the refunds.
    private static func watchExpiry(of certificate: TLSClientCertificate, metrics: MetricsRegistry, logger: Logger) {
        metrics.describe("wxpay_client_cert_expiry_seconds", type: "gauge",
                         help: "Seconds until the merchant API certificate (refunds) expires; negative once it has.")
        func check(warn: Bool) {
            let remaining = certificate.secondsUntilExpiry()
            metrics.set("wxpay_client_cert_expiry_seconds", to: remaining.rounded(.down))
            guard warn, remaining < certificateWarning else { return }
            let metadata = ["expires": BeijingTime.formatRFC3339(certificate.notAfter), "days": String(Int(remaining / 86400))]
            if remaining <= 0 {
                logger.error("the merchant certificate has expired: WeChat will refuse every refund", metadata)
            } else {
                logger.warning("the merchant certificate expires within 30 days: renew it in the merchant platform", metadata)
            }
        }
        check(warn: true)
        // For the process's life; a detached loop of a few lines, nothing to shut down.
        Task.detached {
            var minutes = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(60))
                minutes += 1
                check(warn: minutes % 1440 == 0)
            }
        }
    }
}
