// SPDX-License-Identifier: Apache-2.0
public import AppStore
import Crypto
import Foundation
import OperatorFiles

/// Apple In-App Purchase: the iOS app's purchases verified with the App Store (README, "iOS").
///
/// | variable | meaning | default |
/// |---|---|---|
/// | `APPSTORE_BUNDLE_ID` | the iOS app's bundle id; unset: the iOS routes are 404 | unset; demo: the simulator's app |
/// | `APPSTORE_APP_APPLE_ID` | the app's numeric Apple id; required with the bundle id (production data names it) | — |
/// | `APPSTORE_ROOT_CA_FILE` | Apple Root CA - G3 (PEM or DER), SHA-256-fingerprint-checked; required with the bundle id | — |
/// | `APPSTORE_ALLOW_UNTRUSTED_ROOT` | `1`/`on`: accept another root (a simulator's) | off |
/// | `APPSTORE_UNTRUSTED_ROOT_SHA256` | in production, required with another root: its SHA-256, acknowledging it | unset |
/// | `APPSTORE_RECEIPT_ROOT_CA_FILE` | Apple Root CA (PEM or DER), SHA-256-fingerprint-checked: app receipts read with the Server API key are verified to it (device evidence); in production required with the key unless `APPSTORE_RECEIPT_VERIFICATION=off` | — |
/// | `APPSTORE_RECEIPT_VERIFICATION` | `off`: run with the Server API key but without the receipt root, acknowledged (receipts read unverified: weak evidence) | `on` |
/// | `APPSTORE_UNTRUSTED_RECEIPT_ROOT_SHA256` | in production, required with another receipt root: its SHA-256, acknowledging it | unset |
/// | `APPSTORE_ISSUER_ID`, `APPSTORE_KEY_ID`, `APPSTORE_PRIVATE_KEY_FILE` | the Server API's In-App Purchase key (`.p8`); all three or none | none: no Server API |
/// | `APPSTORE_SHARED_SECRET` | verifyReceipt's `password` (legacy receipts) | none |
/// | `APPSTORE_API_BASE`, `APPSTORE_SANDBOX_API_BASE` | the Server API's bases (a path prefix allowed) | Apple's |
/// | `APPSTORE_RECEIPT_URL`, `APPSTORE_SANDBOX_RECEIPT_URL` | verifyReceipt | Apple's |
/// | `APPSTORE_ACCEPT_SANDBOX` | `on`/`off`: credit sandbox purchases (App Review buys there), marked `Sandbox` | `on` |
/// | `APPSTORE_BACKFILL_INTERVAL` | seconds between reads of Get Notification History; 0: off | 60 |
/// | `APPSTORE_BACKFILL_DAYS` | how far back the first read goes (1–180) | 7 |
/// | `APPSTORE_CONSUMPTION_DEFAULTS` | the answer sent to a consumption request the business did not answer (JSON, the PUT body's names) | none: not answered |
/// | `APPSTORE_CONSUMPTION_DEADLINE` | seconds after the request when the defaults are sent (under Apple's 43,200) | 36000 |
public struct AppStoreConfiguration: Sendable {
    /// APPSTORE_BUNDLE_ID; nil: App Store purchases are off (the iOS routes are 404).
    public var bundleID: String?
    public var appAppleID: Int64?
    public var rootCAFile: String?
    public var allowUntrustedRoot = false
    /// APPSTORE_UNTRUSTED_ROOT_SHA256: the SHA-256 (lowercase hex) of the root that is not Apple's,
    /// which a production start needs besides the flag (`appStoreChecks`).
    public var untrustedRootFingerprint: String?
    /// APPSTORE_RECEIPT_ROOT_CA_FILE: the root app receipts are verified to (Apple Root CA).
    public var receiptRootCAFile: String?
    /// APPSTORE_UNTRUSTED_RECEIPT_ROOT_SHA256: the acknowledgement of a receipt root that is not Apple's.
    public var untrustedReceiptRootFingerprint: String?
    /// APPSTORE_RECEIPT_VERIFICATION: false only when the operator acknowledged running the Server
    /// API key without a receipt root (`off`); production refuses that combination otherwise.
    public var receiptVerification = true
    public var issuerID: String?
    public var keyID: String?
    public var privateKeyFile: String?
    public var sharedSecret: String?
    public var apiBase = AppStoreServerAPIClient.Configuration.appleProductionBaseURL
    public var sandboxAPIBase = AppStoreServerAPIClient.Configuration.appleSandboxBaseURL
    public var receiptURL = "https://buy.itunes.apple.com/verifyReceipt"
    public var sandboxReceiptURL = "https://sandbox.itunes.apple.com/verifyReceipt"
    public var acceptSandbox = true
    /// APPSTORE_BACKFILL_INTERVAL and APPSTORE_BACKFILL_DAYS: Get Notification History.
    public var backfillInterval = 60
    public var backfillDays = 7
    /// APPSTORE_CONSUMPTION_DEFAULTS and APPSTORE_CONSUMPTION_DEADLINE: consumption requests.
    public var consumptionDefaults: ConsumptionInformation?
    public var consumptionDeadline = 36000
    /// The root loaded from `rootCAFile` and the key from `privateKeyFile`, at start (production).
    public var roots: TrustedRoots?
    /// The root loaded from `receiptRootCAFile`, at start; nil: receipts read locally are not verified.
    public var receiptRoots: TrustedRoots?
    public var privateKey: ES256PrivateKey?

    /// Demo mode's app: the embedded App Store simulator's defaults.
    public static let demoBundleID = "com.example.courses"
    public static let demoAppAppleID: Int64 = 1_234_567_890

    public init() {}

    /// Whether the iOS routes exist.
    public var isEnabled: Bool { bundleID != nil }

    /// The Server API's credentials, when all three variables are set (and the key loaded).
    public var serverAPICredentials: ServerAPICredentials? {
        guard let bundleID, let privateKey, let keyID, let issuerID else { return nil }
        return ServerAPICredentials(key: privateKey, keyID: keyID, issuerID: issuerID, bundleID: bundleID)
    }
}

extension GatewayConfiguration {
    static let appStoreVariables: [ConfigurationVariable] = [
        .optional("APPSTORE_BUNDLE_ID", \.appStore.bundleID,
                  expecting: "the iOS app's bundle id (1 to 155 of A-Z a-z 0-9 . -)") { text in
            (1...155).contains(text.utf8.count)
                && text.utf8.allSatisfy { Self.isBundleIDByte($0) } ? text : nil
        },
        .optional("APPSTORE_APP_APPLE_ID", \.appStore.appAppleID, expecting: "the app's numeric Apple id") { text in
            Int64(text).flatMap { $0 > 0 && text.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } ? $0 : nil }
        },
        .optional("APPSTORE_ROOT_CA_FILE", \.appStore.rootCAFile,
                  expecting: "a readable file holding Apple Root CA - G3 (AppleRootCA-G3.cer, PEM or DER)", parse: readableFile),
        ConfigurationVariable("APPSTORE_ALLOW_UNTRUSTED_ROOT", \.appStore.allowUntrustedRoot,
                              expecting: "1 or on to accept a root other than Apple Root CA - G3 (a simulator's)",
                              parse: ConfigurationVariable.flag),
        .optional("APPSTORE_UNTRUSTED_ROOT_SHA256", \.appStore.untrustedRootFingerprint,
                  expecting: "the SHA-256 of the root certificate's DER encoding: 64 hex digits (colons allowed)",
                  parse: parseFingerprint),
        .optional("APPSTORE_RECEIPT_ROOT_CA_FILE", \.appStore.receiptRootCAFile,
                  expecting: "a readable file holding Apple Root CA (AppleIncRootCertificate.cer, PEM or DER)", parse: readableFile),
        .optional("APPSTORE_UNTRUSTED_RECEIPT_ROOT_SHA256", \.appStore.untrustedReceiptRootFingerprint,
                  expecting: "the SHA-256 of the receipt root certificate's DER encoding: 64 hex digits (colons allowed)",
                  parse: parseFingerprint),
        ConfigurationVariable("APPSTORE_RECEIPT_VERIFICATION", \.appStore.receiptVerification,
                              expecting: "on, or off to run the Server API key without APPSTORE_RECEIPT_ROOT_CA_FILE "
                                  + "(StoreKit 1 receipts then read unverified: weak evidence)",
                              parse: ConfigurationVariable.flag),
        .optional("APPSTORE_ISSUER_ID", \.appStore.issuerID,
                  expecting: "the issuer id of the In-App Purchase key (a UUID from App Store Connect)") { text in
            UUID(uuidString: text) != nil ? text.lowercased() : nil
        },
        .optional("APPSTORE_KEY_ID", \.appStore.keyID, expecting: "the In-App Purchase key's id (10 letters and digits)") { text in
            (1...32).contains(text.utf8.count) && text.unicodeScalars.allSatisfy({ $0.isASCII && $0.properties.isAlphabetic || ("0"..."9").contains($0) })
                ? text : nil
        },
        .optional("APPSTORE_PRIVATE_KEY_FILE", \.appStore.privateKeyFile,
                  expecting: "a readable .p8 file: the In-App Purchase key (PKCS#8, P-256)", parse: readableFile),
        .optional("APPSTORE_SHARED_SECRET", \.appStore.sharedSecret,
                  expecting: "the app-specific shared secret for verifyReceipt (letters and digits)") { text in
            (8...64).contains(text.utf8.count) && text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) })
                ? text : nil
        },
        ConfigurationVariable("APPSTORE_API_BASE", \.appStore.apiBase,
                              expecting: "an http(s) URL (a path prefix allowed, no query)", parse: parseBaseWithPath),
        ConfigurationVariable("APPSTORE_SANDBOX_API_BASE", \.appStore.sandboxAPIBase,
                              expecting: "an http(s) URL (a path prefix allowed, no query)", parse: parseBaseWithPath),
        ConfigurationVariable("APPSTORE_RECEIPT_URL", \.appStore.receiptURL, expecting: "an http(s) URL without a query",
                              parse: ConfigurationVariable.url(query: false)),
        ConfigurationVariable("APPSTORE_SANDBOX_RECEIPT_URL", \.appStore.sandboxReceiptURL,
                              expecting: "an http(s) URL without a query", parse: ConfigurationVariable.url(query: false)),
        ConfigurationVariable("APPSTORE_ACCEPT_SANDBOX", \.appStore.acceptSandbox, expecting: "on or off",
                              parse: ConfigurationVariable.flag),
        ConfigurationVariable("APPSTORE_BACKFILL_INTERVAL", \.appStore.backfillInterval,
                              expecting: "seconds between reads of the notification history, 0 (off) to 86400",
                              parse: ConfigurationVariable.integer(0...86400)),
        ConfigurationVariable("APPSTORE_BACKFILL_DAYS", \.appStore.backfillDays,
                              expecting: "days the first read of the notification history goes back, 1 to 180",
                              parse: ConfigurationVariable.integer(1...AppStoreRecoveryPolicy.appleHistoryDays)),
        .optional("APPSTORE_CONSUMPTION_DEFAULTS", \.appStore.consumptionDefaults,
                  expecting: "a JSON object with the consumption PUT body's members (customer_consented, delivery_status, "
                      + "sample_content_provided, consumption_percentage, refund_preference) and Apple's values") { text in
            try? ConsumptionAnswer.parse(Array(text.utf8))
        },
        ConfigurationVariable("APPSTORE_CONSUMPTION_DEADLINE", \.appStore.consumptionDeadline,
                              expecting: "seconds after a consumption request when the defaults are sent, 0 to 43199 "
                                  + "(Apple takes an answer for 12 hours)",
                              parse: ConfigurationVariable.integer(0...(Int(AppStoreRecoveryPolicy.appleConsumptionWindow) - 1))),
    ]

    /// The roots in a root certificate file (64 KiB at most) that `variable` names, which must be
    /// `apple`'s unless `allowUntrustedRoot`; nil, and a problem, when the file cannot be read or used.
    private static func loadRoots(_ file: String, variable: String, allowUntrustedRoot: Bool, apple: TrustedRoots.AppleRoot,
                                  _ problems: inout [ConfigurationProblem]) -> TrustedRoots? {
        guard let bytes = try? OperatorFile.read(file, maximumBytes: 64 * 1024) else {
            problems.append(ConfigurationProblem(variable, .conflict, expected: "a readable root certificate file (64 KiB at most)"))
            return nil
        }
        do {
            return try TrustedRoots.load(bytes, allowUntrustedRoot: allowUntrustedRoot, apple: apple)
        } catch {
            // Only a certificate that is not Apple's is a matter of trust; a file that holds none is
            // the wrong file, whatever is allowed.
            let hint = Certificate(pemOrDER: Array(bytes)) == nil ? "" : " (APPSTORE_ALLOW_UNTRUSTED_ROOT=1 for a simulator's root)"
            problems.append(ConfigurationProblem(variable, .conflict, expected: "\(error)\(hint)"))
            return nil
        }
    }

    /// A production gateway that trusts a root other than Apple's credits every purchase whoever
    /// holds that root's key signs: a simulator's or a test root left in a production configuration
    /// would let anyone mint paid orders. `APPSTORE_ALLOW_UNTRUSTED_ROOT` alone is one word that can
    /// be copied from a test setup; production also needs the root's own SHA-256 in `name`
    /// (`APPSTORE_UNTRUSTED_ROOT_SHA256` for the JWS root of `file`, `APPSTORE_UNTRUSTED_RECEIPT_ROOT_SHA256`
    /// for the receipt root), an acknowledgement that names the very root (a swapped file no longer
    /// matches), or the start is refused. The fingerprint without such a root would do nothing, so
    /// it is refused too.
    static func untrustedRootChecks(_ roots: TrustedRoots?, acknowledged: String?, name: String, file: String,
                                    _ environment: Environment) -> [ConfigurationProblem] {
        guard let roots else { return [] }
        let apple = roots.apple.name
        guard let root = roots.untrustedRoot else {
            return acknowledged == nil ? [] : [ConfigurationProblem(
                name, .conflict, expected: "unset: the root in \(file) is \(apple), nothing to acknowledge")]
        }
        let fingerprint = root.sha256Fingerprint
        guard let acknowledged else {
            if environment.get(name) != nil { return [] }  // set but malformed: its parser's problem is reported
            // A conflict rather than a plain missing name: the message must say which root it is about.
            return [ConfigurationProblem(
                name, .conflict,
                expected: "required in production with a root that is not \(apple): purchases signed under it are "
                    + "credited as real. To acknowledge this root, set it to its SHA-256, \(fingerprint)")]
        }
        guard acknowledged == fingerprint else {
            return [ConfigurationProblem(name, .conflict, expected: "the SHA-256 of the root in \(file), which is \(fingerprint)")]
        }
        return []
    }

    /// 64 hex digits (colons allowed), lowercased: a certificate's SHA-256 as an operator copies it.
    static func parseFingerprint(_ text: String) -> String? {
        let hex = text.lowercased().filter { $0 != ":" }
        return hex.utf8.count == 64 && hex.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) })
            ? hex : nil
    }

    static func isBundleIDByte(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || byte == UInt8(ascii: ".")
            || byte == UInt8(ascii: "-")
    }

    /// A base URL that may carry a path prefix (`http://127.0.0.1:9000/sandbox`); a trailing slash is dropped.
    static func parseBaseWithPath(_ text: String) -> String? {
        guard let (url, text) = ConfigurationVariable.httpURL(text), url.query == nil, url.fragment == nil else { return nil }
        var base = text
        while base.hasSuffix("/") { base.removeLast() }
        return base
    }

    /// Demo mode embeds the App Store simulator (its own app, root and key: nothing to set); in
    /// production the bundle id needs its app id and Apple's root, a root other than Apple Root CA -
    /// G3 needs the explicit flag and its own fingerprint as a second acknowledgement
    /// (`untrustedRootChecks`), the Server API key comes whole, and no App Store variable is set
    /// without the bundle id (it would silently do nothing).
    static func appStoreChecks(_ configuration: inout GatewayConfiguration, _ environment: Environment,
                               command: Command = .serve) -> [ConfigurationProblem] {
        let set = environment.names(withPrefixes: ["APPSTORE_"]).filter { environment.get($0) != nil }
        if configuration.demo {
            configuration.appStore.bundleID = AppStoreConfiguration.demoBundleID
            configuration.appStore.appAppleID = AppStoreConfiguration.demoAppAppleID
            return set.map {
                ConfigurationProblem($0, .conflict, expected: "not allowed with --demo (demo mode embeds the App Store "
                                     + "simulator and its app; unset it, or start without --demo for production)")
            }
        }
        let appStore = configuration.appStore
        guard appStore.bundleID != nil else {
            return set.isEmpty ? [] : [ConfigurationProblem(
                "APPSTORE_BUNDLE_ID", .conflict,
                expected: "required with \(set.sorted().joined(separator: ", ")): without it App Store purchases are off")]
        }
        var problems: [ConfigurationProblem] = []
        if appStore.appAppleID == nil && environment.get("APPSTORE_APP_APPLE_ID") == nil {
            problems.append(ConfigurationProblem("APPSTORE_APP_APPLE_ID", .missing,
                                                 expected: "required with APPSTORE_BUNDLE_ID: the app's numeric Apple id, "
                                                     + "which production notifications must name"))
        }
        if let file = appStore.rootCAFile {
            configuration.appStore.roots = loadRoots(file, variable: "APPSTORE_ROOT_CA_FILE",
                                                     allowUntrustedRoot: appStore.allowUntrustedRoot, apple: .g3, &problems)
            problems += untrustedRootChecks(configuration.appStore.roots, acknowledged: appStore.untrustedRootFingerprint,
                                            name: "APPSTORE_UNTRUSTED_ROOT_SHA256", file: "APPSTORE_ROOT_CA_FILE", environment)
        } else if environment.get("APPSTORE_ROOT_CA_FILE") == nil {
            problems.append(ConfigurationProblem("APPSTORE_ROOT_CA_FILE", .missing,
                                                 expected: "required with APPSTORE_BUNDLE_ID: Apple Root CA - G3 (AppleRootCA-G3.cer "
                                                     + "from Apple), which every signed transaction must chain to"))
        }
        if let file = appStore.receiptRootCAFile {
            configuration.appStore.receiptRoots = loadRoots(file, variable: "APPSTORE_RECEIPT_ROOT_CA_FILE",
                                                            allowUntrustedRoot: appStore.allowUntrustedRoot, apple: .appleRootCA,
                                                            &problems)
            problems += untrustedRootChecks(configuration.appStore.receiptRoots,
                                            acknowledged: appStore.untrustedReceiptRootFingerprint,
                                            name: "APPSTORE_UNTRUSTED_RECEIPT_ROOT_SHA256", file: "APPSTORE_RECEIPT_ROOT_CA_FILE",
                                            environment)
        } else if appStore.untrustedReceiptRootFingerprint != nil {
            problems.append(ConfigurationProblem("APPSTORE_UNTRUSTED_RECEIPT_ROOT_SHA256", .conflict,
                                                 expected: "unset: APPSTORE_RECEIPT_ROOT_CA_FILE is not set, nothing to acknowledge"))
        }
        let keyParts = ["APPSTORE_ISSUER_ID", "APPSTORE_KEY_ID", "APPSTORE_PRIVATE_KEY_FILE"]
        let given = keyParts.filter { environment.get($0) != nil }
        if !given.isEmpty && given.count < keyParts.count {
            for missing in keyParts where !given.contains(missing) {
                problems.append(ConfigurationProblem(missing, .conflict,
                                                     expected: "required with \(given.joined(separator: ", ")) (the Server API key comes whole)"))
            }
        } else if let file = appStore.privateKeyFile {
            do {
                guard let bytes = try? OperatorFile.read(file, maximumBytes: 16 * 1024) else {
                    throw AppStoreConfigurationError("cannot read the key file")
                }
                configuration.appStore.privateKey = try ES256PrivateKey(pem: String(decoding: bytes, as: UTF8.self))
            } catch {
                problems.append(ConfigurationProblem("APPSTORE_PRIVATE_KEY_FILE", .conflict,
                                                     expected: "a PKCS#8 P-256 key (.p8) that loads: \(error)"))
            }
        }
        problems += receiptVerificationChecks(appStore, keyGiven: given.count == keyParts.count, command: command, environment)
        return problems
    }

    /// Where to get the receipt root, and how to know it is the right file: the words every
    /// refusal about it says.
    static let receiptRootSource = "Apple Root CA (AppleIncRootCertificate.cer from Apple's PKI page, "
        + "https://www.apple.com/certificateauthority/), whose SHA-256 the gateway checks: \(TrustedRoots.appleRootCAFingerprint)"

    /// With the Server API key a StoreKit 1 receipt is read locally, and only a receipt verified to
    /// the receipt root proves that the reporter holds the purchase: without the root, a token-less
    /// or interrupted StoreKit 1 purchase can only be reported as weak evidence, which credits
    /// nobody it cannot be tied to (409 `transaction_unclaimed`, waiting for support). So
    /// production fails closed, as for the G3 root: the key needs the receipt root, unless the
    /// operator says `APPSTORE_RECEIPT_VERIFICATION=off` (and `serve` still warns). `off` with a
    /// root, or without the key (receipts then go to verifyReceipt, which verifies them), would
    /// mean nothing and is refused too.
    static func receiptVerificationChecks(_ appStore: AppStoreConfiguration, keyGiven: Bool, command: Command,
                                          _ environment: Environment) -> [ConfigurationProblem] {
        let rootSet = environment.get("APPSTORE_RECEIPT_ROOT_CA_FILE") != nil
        guard appStore.receiptVerification else {
            if rootSet {
                return [ConfigurationProblem("APPSTORE_RECEIPT_VERIFICATION", .conflict,
                                             expected: "unset or on: APPSTORE_RECEIPT_ROOT_CA_FILE is set, so receipts are verified to it")]
            }
            if !keyGiven {
                return [ConfigurationProblem("APPSTORE_RECEIPT_VERIFICATION", .conflict,
                                             expected: "unset: without the Server API key (APPSTORE_ISSUER_ID, APPSTORE_KEY_ID, "
                                                 + "APPSTORE_PRIVATE_KEY_FILE) receipts go to verifyReceipt, nothing to turn off")]
            }
            return []
        }
        guard keyGiven, !rootSet, command.requires("APPSTORE_RECEIPT_ROOT_CA_FILE") else { return [] }
        // A conflict rather than a plain missing name: the message must say where to get the file.
        return [ConfigurationProblem(
            "APPSTORE_RECEIPT_ROOT_CA_FILE", .conflict,
            expected: "required with the App Store Server API key: \(receiptRootSource). Without it a StoreKit 1 receipt "
                + "is read unverified, and a token-less or interrupted purchase reported with it credits nobody "
                + "(409 transaction_unclaimed, waiting for support). To run without it anyway, set "
                + "APPSTORE_RECEIPT_VERIFICATION=off")]
    }
}
