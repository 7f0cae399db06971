// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import HTTP
import Lifecycle
import Observability
import WeChatPay
import WeChatPayHTTPTransport

/// How `serve` and `reconcile` reach WeChat outside demo mode: HTTPS with the merchant
/// certificate presented on `/secapi/` calls (refunds), and WXPAY_API_CA_FILE, when set, trusted
/// instead of the system's store (a client of its own, so the business webhook keeps the system's).
struct WeChatConnection {
    let transport: any WeChatPayTransport
    /// The client made for WXPAY_API_CA_FILE, to shut down at the end; nil when the shared one is used.
    let ownClient: HTTPClient?

    static func open(_ configuration: GatewayConfiguration, sharedClient: HTTPClient) throws(HTTPClientError)
        -> WeChatConnection
    {
        var ownClient: HTTPClient?
        if let caFile = configuration.refunds.caFile {
            ownClient = try HTTPClient(configuration: .init(tls: .init(caFile: caFile)))
        }
        let transport = WeChatPayHTTPTransport(client: ownClient ?? sharedClient, configuration: .init(
            primaryBaseURL: configuration.apiBase, backupBaseURL: configuration.apiBackupBase,
            clientIdentity: configuration.refundMode.clientIdentity))
        return WeChatConnection(transport: transport, ownClient: ownClient)
    }

    func close() async {
        await ownClient?.shutdown()
    }
}

extension ServeCommand {
    /// We warn this long before the merchant certificate expires.
    static let certificateWarning: TimeInterval = 30 * 86400
    static let certificateExpiry = Metric<Gauge>(
        "wxpay_client_cert_expiry_seconds", help: "Seconds until the merchant API certificate (refunds) expires; negative once it has.")

    /// Says how refunds reach WeChat and, with a merchant certificate (which the configuration's
    /// checks have loaded and matched with its key already), sets `wxpay_client_cert_expiry_seconds`
    /// and warns from 30 days before it expires; the watch it answers keeps both current.
    /// `v3`: API v3 is configured, which refunds without a certificate (v2 orders' too).
    static func announceRefunds(_ mode: GatewayConfiguration.RefundMode, v3: Bool, metrics: MetricsRegistry,
                                logger: Logger) -> CertificateExpiryWatch? {
        switch mode {
        case .off where v3:
            logger.notice("refunds on through API v3 (no v2 client certificate, WXPAY_CLIENT_CERT: orders created with v2 are refunded through v3 too)")
            return nil
        case .off:
            logger.notice("refunds off: no v2 client certificate (WXPAY_CLIENT_CERT and WXPAY_CLIENT_KEY, or WXPAY_CLIENT_P12) and no API v3")
            return nil
        case .embedded:
            logger.notice("refunds through the embedded simulator (demo mode)")
            return nil
        case .mutualTLS(let identity):
            guard let certificate = try? identity.inspect() else { return nil }
            logger.notice("refunds on", ["certificate": certificate.commonName ?? "?",
                                         "expires": BeijingTime.formatRFC3339(certificate.notAfter)])
            let watch = CertificateExpiryWatch(certificate: certificate, metrics: metrics, logger: logger)
            watch.check(warn: true)
            return watch
        }
    }
}

/// The merchant certificate's expiry: the gauge once a minute and the warning once a day. An
/// expired certificate does not stop the gateway: payments do not need it, and WeChat refuses the
/// refunds.
struct CertificateExpiryWatch: Service, CustomStringConvertible {
    let certificate: TLSClientCertificate
    let expiry: Gauge
    let logger: Logger

    init(certificate: TLSClientCertificate, metrics: MetricsRegistry, logger: Logger) {
        self.certificate = certificate
        metrics.describe(ServeCommand.certificateExpiry)
        expiry = metrics.makeGauge(ServeCommand.certificateExpiry)
        self.logger = logger
    }

    var description: String { "merchant certificate expiry watch" }

    func check(warn: Bool) {
        let remaining = certificate.secondsUntilExpiry()
        expiry.set(remaining.rounded(.down))
        guard warn, remaining < ServeCommand.certificateWarning else { return }
        let metadata = ["expires": BeijingTime.formatRFC3339(certificate.notAfter), "days": String(Int(remaining / 86400))]
        if remaining <= 0 {
            logger.error("the merchant certificate (WXPAY_CLIENT_CERT, v2 refunds) has expired: WeChat will refuse every v2 refund", metadata)
        } else {
            logger.warning("the merchant certificate (WXPAY_CLIENT_CERT, v2 refunds) expires within 30 days: renew it in the merchant platform", metadata)
        }
    }

    func run() async {
        await cancelWhenGracefulShutdown {
            var minutes = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(60))
                minutes += 1
                check(warn: minutes % 1440 == 0)
            }
        }
    }
}
