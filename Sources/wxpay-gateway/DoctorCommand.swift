// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreHTTPTransport
import Crypto
import Foundation
import Gateway
import HTTP
import PostgresStore
import SQLiteStore
import StorageCore
import WeChatPay
import WeChatPayHTTPTransport

/// `wxpay-gateway doctor`: the production configuration checked before the first customer pays,
/// without paying or changing anything (docs/operations.md). One line per check — `ok`, `FAIL`, or
/// `skip` when the feature is not configured — then a summary. Exit status: 0 when no check
/// failed, 1 when one did, 2 when the configuration itself is refused, 64 usage.
///
/// Every check is one entry of `checks`; API v3's three (DoctorCommand+V3.swift) are skipped
/// while v3 is not configured.
enum DoctorCommand {
    static let checks: [DoctorCheck] = [
        DoctorCheck("wechat primary host") { await $0.reachable($0.configuration.apiBase) },
        DoctorCheck("wechat backup host") { await $0.reachable($0.configuration.apiBackupBase) },
        DoctorCheck("api key") { await $0.apiKey() },
        DoctorCheck("client certificate") { await $0.clientCertificate() },
        DoctorCheck("v3 keys") { $0.v3Keys() },
        DoctorCheck("wechat v3 signature") { await $0.v3Signature() },
        DoctorCheck("wechat v3 public key") { await $0.v3WeChatKey() },
        DoctorCheck("app store key") { await $0.appStoreKey() },
        DoctorCheck("app store root") { $0.appStoreRoot() },
        DoctorCheck("app store receipt root") { $0.appStoreReceiptRoot() },
        DoctorCheck("database") { await $0.database() },
        DoctorCheck("catalog") { await $0.catalog() },
    ]

    static func run(_ arguments: [String]) async -> Int32 {
        guard arguments.isEmpty else {
            FileHandle.standardError.write(Data("usage: wxpay-gateway doctor (configured with the environment, as serve)\n".utf8))
            return ExitStatus.usage
        }
        let configuration: GatewayConfiguration
        let environment = Environment(ProcessInfo.processInfo.environment)
        // What `serve` would warn about at start (a misspelt variable's "did you mean" among them),
        // said whether or not the configuration is refused: the misspelt name is often the missing one.
        let warnings = GatewayConfiguration.warnings(for: environment).map { "warn  configuration: \($0)" }
        do {
            configuration = try GatewayConfiguration(environment: environment, demo: false, command: .doctor)
        } catch {
            for line in error.description.split(separator: "\n") { print("FAIL  configuration: \(line)") }
            warnings.forEach { print($0) }
            print("doctor: the configuration is refused; nothing else was checked")
            return ExitStatus.configuration
        }
        warnings.forEach { print($0) }
        let context: DoctorContext
        do {
            context = try DoctorContext(configuration)
        } catch {
            print("FAIL  http client: \(error)")
            return 1
        }
        var counts = (passed: 0, failed: 0, skipped: 0)
        for check in checks {
            let outcome = await check.run(context)
            switch outcome {
            case .ok(let detail): counts.passed += 1; print("ok    \(check.name): \(detail)")
            case .fail(let detail): counts.failed += 1; print("FAIL  \(check.name): \(detail)")
            case .skip(let detail): counts.skipped += 1; print("skip  \(check.name): \(detail)")
            }
        }
        await context.close()
        print("doctor: \(counts.passed) passed, \(counts.failed) failed, \(counts.skipped) skipped")
        return counts.failed == 0 ? 0 : 1
    }
}

/// One pre-flight check: a name and what it finds.
struct DoctorCheck: Sendable {
    let name: String
    let run: @Sendable (DoctorContext) async -> DoctorOutcome

    init(_ name: String, _ run: @escaping @Sendable (DoctorContext) async -> DoctorOutcome) {
        self.name = name
        self.run = run
    }
}

enum DoctorOutcome: Sendable {
    case ok(String)
    case fail(String)
    /// Not configured: nothing to check, nothing wrong.
    case skip(String)
}

/// What the checks share: the configuration, one HTTP client, and the orderquery each host was
/// asked (once, however many checks read its answer).
final class DoctorContext: Sendable {
    let configuration: GatewayConfiguration
    let http: HTTPClient
    private let answers = OrderQueryAnswers()

    init(_ configuration: GatewayConfiguration) throws(HTTPClientError) {
        self.configuration = configuration
        if let caFile = configuration.refunds.caFile {
            http = try HTTPClient(configuration: .init(tls: .init(caFile: caFile)))
        } else {
            http = try HTTPClient()
        }
    }

    func close() async {
        await http.shutdown()
    }

    /// A v2 client of WeChat at exactly `base` (no failover: each host is checked on its own), with `key`.
    func wechat(_ base: String, key: APIKey) -> (client: WeChatPayClient, transport: WeChatPayHTTPTransport) {
        let transport = WeChatPayHTTPTransport(client: http, configuration: .init(
            primaryBaseURL: base, backupBaseURL: nil, clientIdentity: configuration.refundMode.clientIdentity,
            timeouts: .init(connect: .seconds(5), total: .seconds(10))))
        let merchant = MerchantCredentials(appID: configuration.appID, mchID: configuration.mchID, key: key,
                                           signType: configuration.signType)
        return (WeChatPayClient(merchant: merchant, transport: transport, nonces: RandomNonceSource()), transport)
    }

    /// A number no order has: WeChat can only answer that it does not exist.
    static func impossibleNumber(_ prefix: String) -> String {
        prefix + (0..<8).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    /// The orderquery of an impossible number at `base`, asked once (only with the v2 key).
    func orderQuery(_ base: String, key: APIKey) async -> Result<OrderQueryResponse, WeChatPayError> {
        await answers.answer(for: base) {
            do throws(WeChatPayError) {
                return .success(try await self.wechat(base, key: key).client.send(
                    OrderQueryRequest(outTradeNo: Self.impossibleNumber("doctor-"))))
            } catch {
                return .failure(error)
            }
        }
    }

    // MARK: - The checks

    func reachable(_ base: String) async -> DoctorOutcome {
        // Without the v2 key (API v3 only), v3's signed query asks instead.
        guard let key = configuration.apiKey else { return await reachableV3(base) }
        switch await orderQuery(base, key: key) {
        case .success:
            return .ok("\(base) answers (orderquery)")
        case .failure(let error):
            switch error.kind {
            case .transport: return .fail("\(base) cannot be reached: \(error.shortDescription)")
            case .httpStatus: return .fail("\(base) answers \(error.description), not as WeChat Pay's API does")
            default: return .ok("\(base) answers (orderquery)")
            }
        }
    }

    func apiKey() async -> DoctorOutcome {
        guard let key = configuration.apiKey else { return await withoutV2Key() }
        var answer = await orderQuery(configuration.apiBase, key: key)
        if case .failure(let error) = answer, error.kind == .transport || error.kind == .httpStatus {
            answer = await orderQuery(configuration.apiBackupBase, key: key)
        }
        switch answer {
        case .success:
            return .fail("WeChat answered an orderquery for a number no order has as if it existed")
        case .failure(let error):
            if error.errorCode == .orderNotExist {
                return .ok("an orderquery of a number that cannot exist is a signed ORDERNOTEXIST")
            }
            switch error.kind {
            case .protocolFailure:
                return .fail("WeChat refused the request (\(error.description)); a wrong WXPAY_API_KEY or WXPAY_MCH_ID is answered this way (签名错误)")
            case .badSignature:
                return .fail("WeChat's answer does not verify with WXPAY_API_KEY (\(error.shortDescription)): the key is wrong")
            case .merchantMismatch:
                return .fail("WeChat answered for another merchant: check WXPAY_APP_ID and WXPAY_MCH_ID")
            case .transport, .httpStatus:
                return .fail("neither host could be asked (\(error.shortDescription))")
            default:
                return .fail("unexpected answer: \(error.description)")
            }
        }
    }

    func clientCertificate() async -> DoctorOutcome {
        guard case .mutualTLS(let identity) = configuration.refundMode else {
            if configuration.v3.credentials != nil {
                return .skip("no v2 client certificate configured (WXPAY_CLIENT_CERT and WXPAY_CLIENT_KEY, or WXPAY_CLIENT_P12): refunds go through API v3, those of orders created with v2 too")
            }
            return .skip("no v2 client certificate configured (WXPAY_CLIENT_CERT and WXPAY_CLIENT_KEY, or WXPAY_CLIENT_P12): refunds are off")
        }
        guard let key = configuration.apiKey else {
            return .skip("not used: without WXPAY_API_KEY every refund goes through API v3, which needs no certificate")
        }
        let certificate: TLSClientCertificate
        do {
            certificate = try identity.inspect()
        } catch {
            return .fail("the certificate cannot be read: \(error)")
        }
        let days = Int(certificate.secondsUntilExpiry() / 86400)
        let name = "CN=\(certificate.commonName ?? "?"), \(days) days left"
        let (client, transport) = wechat(configuration.apiBase, key: key)
        do throws(WeChatPayError) {
            // A refundquery made with the certificate, as WeChat's older SDKs make every one.
            var request = try client.transportRequest(for: RefundQueryRequest(.outRefundNo(Self.impossibleNumber("doctor-r"))))
            request.needsClientCertificate = true
            let response: TransportResponse
            do {
                response = try await transport.send(request)
            } catch {
                return .fail("the TLS connection with the certificate failed (\(error)); \(name)")
            }
            _ = try client.decodeResponse(response, for: RefundQueryRequest.self)
            return .fail("WeChat answered a refundquery for a refund that cannot exist as if it existed")
        } catch {
            if error.errorCode == .refundNotExist {
                guard days >= 30 else { return .fail("accepted, but it expires within 30 days: renew it now; \(name)") }
                return .ok("a refundquery over mutual TLS is a signed REFUNDNOTEXIST; \(name)")
            }
            if error.kind == .httpStatus {
                return .fail("WeChat's front end refused the certificate (\(error.description)); \(name)")
            }
            if error.kind == .protocolFailure {
                return .fail("cannot be checked: WeChat refused the refundquery itself (\(error.description)); fix the api key first; \(name)")
            }
            return .fail("unexpected answer to the refundquery: \(error.description); \(name)")
        }
    }

    func appStoreKey() async -> DoctorOutcome {
        let appStore = configuration.appStore
        guard let credentials = appStore.serverAPICredentials else {
            return .skip("APPSTORE_ISSUER_ID, APPSTORE_KEY_ID and APPSTORE_PRIVATE_KEY_FILE are not set")
        }
        let api = AppStoreServerAPIClient(
            credentials: credentials,
            configuration: .init(productionBaseURL: appStore.apiBase, sandboxBaseURL: appStore.sandboxAPIBase, sandboxFallback: false),
            transport: AppStoreHTTPTransport(client: http, timeouts: .init(connect: .seconds(5), total: .seconds(10))),
            clock: SystemAppStoreClock())
        let token: String
        do {
            token = try await api.requestTestNotification()
        } catch {
            if error.kind == .unauthorized {
                return .fail("the App Store refused the key (401): check APPSTORE_KEY_ID, APPSTORE_ISSUER_ID, the .p8 and APPSTORE_BUNDLE_ID")
            }
            return .fail("Request a Test Notification failed: \(error)")
        }
        // Apple sends at once; give a slow notification URL its due.
        let deadline = ContinuousClock.now + .seconds(30)
        var last: AppStoreServerAPIClient.TestNotificationStatus?
        while ContinuousClock.now < deadline {
            if let status = try? await api.testNotificationStatus(token) {
                last = status
                if status.delivered { return .ok("the key works and Apple's test notification reached the gateway") }
            }
            try? await Task.sleep(for: .seconds(1))
        }
        guard let attempt = last?.attempts.last else {
            return .fail("the key works, but Apple made no attempt to deliver the test notification within 30 s")
        }
        return .fail("the key works, but the test notification did not arrive (\(attempt.result)): check the production server URL in App Store Connect")
    }

    /// What the App Store's signed data is verified to (the configuration loaded the root and, in
    /// production, checked an acknowledged fingerprint of any other already): said here as `serve`
    /// says it at start, since a root that is not Apple's credits whatever its key's holder signs.
    func appStoreRoot() -> DoctorOutcome {
        let appStore = configuration.appStore
        guard appStore.isEnabled, let roots = appStore.roots else { return .skip("APPSTORE_BUNDLE_ID is not set") }
        guard let other = roots.untrustedRoot else {
            return .ok("signed transactions and notifications are verified to \(roots.apple.name) "
                       + "(SHA-256 \(roots.apple.fingerprint.prefix(8))…)")
        }
        return .ok("signed transactions and notifications are verified to a root that is not \(roots.apple.name), acknowledged "
                   + "by its SHA-256 \(other.sha256Fingerprint.prefix(8))… (a simulator's or a test root: whoever holds its key "
                   + "can sign purchases)")
    }

    /// Whether StoreKit 1 receipts read with the Server API key are verified (the configuration
    /// loaded the root and checked its fingerprint already; a key without a root and without
    /// `APPSTORE_RECEIPT_VERIFICATION=off` refuses the configuration).
    func appStoreReceiptRoot() -> DoctorOutcome {
        let appStore = configuration.appStore
        guard appStore.isEnabled else { return .skip("APPSTORE_BUNDLE_ID is not set") }
        guard appStore.serverAPICredentials != nil else {
            return .skip("no Server API key: receipts go to verifyReceipt, which verifies them")
        }
        guard let roots = appStore.receiptRoots else {
            return .skip("APPSTORE_RECEIPT_VERIFICATION=off: StoreKit 1 receipts are read unverified (weak evidence); a "
                         + "token-less or interrupted purchase reported with one waits unclaimed for support")
        }
        guard let other = roots.untrustedRoot else {
            return .ok("receipts are verified to \(roots.apple.name) (SHA-256 \(TrustedRoots.appleRootCAFingerprint.prefix(8))…)")
        }
        return .ok("receipts are verified to a root that is not Apple Root CA, acknowledged by its SHA-256 "
                   + "\(other.sha256Fingerprint.prefix(8))… (a simulator's or a test root)")
    }

    /// What the database holds, learnt without migrating or writing it, and what it would refuse
    /// of the catalog's terms.
    func inspect() async throws(StorageError) -> StoreInspection {
        let terms = configuration.app.catalog.products.map(\.terms)
        return switch configuration.database {
        case .sqlite(let path): try await SQLiteOrderStore.inspect(path: path, terms: terms, reading: Catalog.nameReading)
        case .postgres(let settings): try await PostgresOrderStore.inspect(settings, terms: terms, reading: Catalog.nameReading)
        }
    }

    func database() async -> DoctorOutcome {
        let inspection: StoreInspection
        do {
            inspection = try await inspect()
        } catch {
            return .fail("\(configuration.databaseDescription) cannot be opened: \(error)")
        }
        let name = configuration.databaseDescription
        if case .sqlite(let path) = configuration.database {
            do throws(SQLiteDatabaseFile.SeveralNames) {
                try SQLiteDatabaseFile.requireOneName(SQLiteDatabaseFile.resolved(path) ?? path)
            } catch {
                return .fail(error.description)
            }
        }
        guard inspection.schemaVersion <= inspection.latestVersion else {
            return .fail("\(name) is at schema version \(inspection.schemaVersion), newer than this program's \(inspection.latestVersion): run the version that migrated it")
        }
        guard inspection.writable else { return .fail("\(name) is not writable (permissions, a read-only standby, or a restore running)") }
        // What serve would refuse: a database another mode or merchant served first.
        if let owner = inspection.owner,
           let refusal = ServeCommand.ownerRefusal(bound: owner, wanted: DatabaseOwner(demo: configuration.demo, mchID: configuration.mchID))
        {
            return .fail(refusal)
        }
        guard inspection.exists else {
            return .ok("\(name) does not exist yet; the first serve creates it at schema version \(inspection.latestVersion)")
        }
        if inspection.schemaVersion < inspection.latestVersion {
            return .ok("\(name) is at schema version \(inspection.schemaVersion); serve migrates it to \(inspection.latestVersion) at start, writable")
        }
        return .ok("\(name) at schema version \(inspection.schemaVersion) of \(inspection.latestVersion), writable")
    }

    func catalog() async -> DoctorOutcome {
        // The configuration read and validated the file already: a bad one refuses the configuration.
        // What is left is what serve would refuse of it in this database: a sold product's terms
        // changed or the product left out (none set counts too).
        let products = configuration.app.catalog.products
        if let inspection = try? await inspect(), let refusal = Catalog.refusal(inspection.termChanges) {
            return .fail("GATEWAY_CATALOG: " + refusal.message)
        }
        guard !products.isEmpty else { return .skip("GATEWAY_CATALOG is not set (orders name their own amounts)") }
        return .ok("\(products.count) products, \(products.filter(\.active).count) active")
    }
}

/// Each host's orderquery answer, asked once however many checks read it.
private actor OrderQueryAnswers {
    private var answers: [String: Task<Result<OrderQueryResponse, WeChatPayError>, Never>] = [:]

    func answer(for base: String, _ ask: @escaping @Sendable () async -> Result<OrderQueryResponse, WeChatPayError>)
        async -> Result<OrderQueryResponse, WeChatPayError>
    {
        if let task = answers[base] { return await task.value }
        let task = Task { await ask() }
        answers[base] = task
        return await task.value
    }
}
