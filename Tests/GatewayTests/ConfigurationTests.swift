// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import Observability
import Testing
import WeChatPay

struct ConfigurationTests {
    /// A complete production environment.
    static let production = [
        "WXPAY_MCH_ID": "1230000109", "WXPAY_APP_ID": "wx8888888888888888",
        "WXPAY_API_KEY": "0123456789abcdef0123456789abcdef", "WXPAY_NOTIFY_URL": "https://pay.example.com/wechat/notify",
        "GATEWAY_CLIENT_TOKENS": "client-token-1, client-token-2",
    ]

    @Test("Two demo gateways whose databases share a directory each have a console user file of their own")
    func demoConsoleUserFilesAreNamedAfterTheirDatabase() throws {
        let first = try GatewayConfiguration(environment: Environment(["GATEWAY_DATABASE": "sqlite:/tmp/demo/g1.sqlite"]), demo: true)
        let second = try GatewayConfiguration(environment: Environment(["GATEWAY_DATABASE": "sqlite:/tmp/demo/g2.sqlite"]), demo: true)
        #expect(first.consoleUsersPath == "/tmp/demo/g1.sqlite.console-users")
        #expect(second.consoleUsersPath == "/tmp/demo/g2.sqlite.console-users")
    }

    @Test func demoModeWithNothingSetHasTheDocumentedDefaults() throws {
        let config = try GatewayConfiguration(environment: Environment([:]), demo: true)
        #expect(config.demo)
        #expect(config.mchID == GatewayConfiguration.demoMchID && config.appID == GatewayConfiguration.demoAppID)
        #expect(config.signType == .hmacSHA256)
        #expect(config.listenHost == "127.0.0.1" && config.listenPort == 8080)
        #expect(config.database == .sqlite(path: "data/gateway.sqlite"))
        #expect(config.pollInterval == 5)
        #expect(config.logLevel == .info)
        #expect(config.maxConnections == nil)
        #expect(config.apiBase == "https://api.mch.weixin.qq.com")
        #expect(config.clientTokens == [GatewayConfiguration.demoClientToken])
        #expect(config.supportTokens == [GatewayConfiguration.demoSupportToken])
    }

    @Test func aProductionStartWithNothingSetNamesEveryMissingRequiredVariableInOneMessage() {
        do {
            _ = try GatewayConfiguration(environment: Environment([:]), demo: false)
            Issue.record("a production start with no merchant was accepted")
        } catch {
            let required = ["WXPAY_APP_ID", "WXPAY_MCH_ID", "WXPAY_API_KEY", "WXPAY_NOTIFY_URL", "GATEWAY_CLIENT_TOKENS"]
            #expect(error.missing == required)
            #expect(error.problems.allSatisfy { $0.kind == .missing })
            let firstLine = error.description.split(separator: "\n").first.map(String.init) ?? ""
            for name in required { #expect(firstLine.contains(name)) }
        }
    }

    @Test("A production serve with demo mode's published tokens or app-token secret is refused naming each variable, never the value; other commands take them")
    func demoModesPublishedSecretsAreRefusedInProduction() throws {
        var env = Self.production
        env["GATEWAY_CLIENT_TOKENS"] = "client-token-1, " + GatewayConfiguration.demoClientToken
        env["GATEWAY_SUPPORT_TOKENS"] = GatewayConfiguration.demoSupportToken
        env["GATEWAY_APP_TOKEN_SECRETS"] = AppConfiguration.demoTokenSecret
        do {
            _ = try GatewayConfiguration(environment: Environment(env), demo: false)
            Issue.record("a production start took demo mode's published secrets")
        } catch {
            #expect(Set(error.variables) == ["GATEWAY_CLIENT_TOKENS", "GATEWAY_SUPPORT_TOKENS", "GATEWAY_APP_TOKEN_SECRETS"])
            #expect(error.description.contains("published in the documentation"))
            for secret in [GatewayConfiguration.demoClientToken, GatewayConfiguration.demoSupportToken, AppConfiguration.demoTokenSecret] {
                #expect(!error.description.contains(secret))
            }
        }
        // The support token given as a client token is as public.
        env = Self.production
        env["GATEWAY_CLIENT_TOKENS"] = GatewayConfiguration.demoSupportToken
        #expect(throws: ConfigurationError.self) { try GatewayConfiguration(environment: Environment(env), demo: false) }
        env = Self.production
        env["GATEWAY_APP_TOKEN_SECRETS"] = AppConfiguration.demoTokenSecret
        #expect(try GatewayConfiguration(environment: Environment(env), demo: false, command: .reconcile).app.tokenSecrets
                == [AppConfiguration.demoTokenSecret])
    }

    @Test("A production serve or doctor with WeChat's published sample key as the v2 or v3 key is refused, naming the variable, never the value")
    func theDocumentationsSampleKeysAreRefusedInProduction() throws {
        var env = Self.production
        env["WXPAY_API_KEY"] = " " + GatewayConfiguration.demoKey
        for command in [GatewayConfiguration.Command.serve, .doctor] {
            do {
                _ = try GatewayConfiguration(environment: Environment(env), demo: false, command: command)
                Issue.record("a production \(command) took the published v2 key")
            } catch {
                #expect(error.variables == ["WXPAY_API_KEY"])
                #expect(error.description.contains("sample key"))
                #expect(!error.description.contains(GatewayConfiguration.demoKey))
            }
        }
        env = Self.production
        env["WXPAY_API_VERSION"] = "v3"
        env["WXPAY_API_V3_KEY"] = GatewayConfiguration.demoAPIv3Key
        do {
            _ = try GatewayConfiguration(environment: Environment(env), demo: false)
            Issue.record("a production start took demo mode's v3 key")
        } catch {
            #expect(error.variables.contains("WXPAY_API_V3_KEY"))
            #expect(!error.description.contains(GatewayConfiguration.demoAPIv3Key))
        }
        // A key of the merchant's own starts.
        #expect(try GatewayConfiguration(environment: Environment(Self.production), demo: false).apiKey != nil)
    }

    @Test func aCompleteProductionEnvironmentStartsInProductionMode() throws {
        var env = Self.production
        env["WXPAY_SIGN_TYPE"] = "MD5"
        env["GATEWAY_LOG_LEVEL"] = "WARNING"
        let config = try GatewayConfiguration(environment: Environment(env), demo: false)
        #expect(!config.demo)
        #expect(config.mchID == "1230000109" && config.appID == "wx8888888888888888")
        #expect(config.notifyURL == "https://pay.example.com/wechat/notify")
        #expect(config.clientTokens == ["client-token-1", "client-token-2"])
        #expect(config.supportTokens.isEmpty)
        #expect(config.signType == .md5)
        #expect(config.logLevel == .warning)
    }

    @Test(arguments: ["WXPAY_APP_ID", "WXPAY_MCH_ID", "WXPAY_API_KEY", "WXPAY_NOTIFY_URL", "GATEWAY_CLIENT_TOKENS"])
    func eachRequiredVariableAloneIsNamedWhenItIsMissing(variable: String) {
        var env = Self.production
        env[variable] = "  "   // blank counts as unset
        do {
            _ = try GatewayConfiguration(environment: Environment(env), demo: false)
            Issue.record("accepted without \(variable)")
        } catch {
            #expect(error.missing == [variable])
        }
    }

    @Test func demoModeTogetherWithAnyWXPAYVariableIsRefusedNamingEachOne() {
        let env = ["WXPAY_MCH_ID": "1230000109", "WXPAY_SIGN_TYPE": "MD5", "WXPAY_TYPO": "x", "GATEWAY_POLL_INTERVAL": "1"]
        do {
            _ = try GatewayConfiguration(environment: Environment(env), demo: true)
            Issue.record("a half-demo start was accepted")
        } catch {
            #expect(Set(error.variables) == ["WXPAY_MCH_ID", "WXPAY_SIGN_TYPE", "WXPAY_TYPO"])
            #expect(error.problems.allSatisfy { $0.kind == .conflict })
            #expect(!error.description.contains("1230000109"))
        }
    }

    @Test(arguments: ["0.0.0.0:8080", "192.168.1.20:8080", "[::]:8080", "10.0.0.1:0", "[2001:db8::1]:80"])
    func demoModeRefusesToListenOutsideLoopback(listen: String) {
        do {
            _ = try GatewayConfiguration(environment: Environment(["GATEWAY_LISTEN": listen]), demo: true)
            Issue.record("demo mode accepted \(listen)")
        } catch {
            #expect(error.variables == ["GATEWAY_LISTEN"])
            #expect(error.description.contains("loopback"))
        }
        // The same address is a production start's own business.
        var env = Self.production
        env["GATEWAY_LISTEN"] = listen
        #expect(throws: Never.self) { try GatewayConfiguration(environment: Environment(env), demo: false) }
    }

    @Test(arguments: ["127.0.0.1:8080", "127.8.9.10:0", "[::1]:8080", "localhost:8080"])
    func demoModeListensOnAnyLoopbackAddress(listen: String) throws {
        let config = try GatewayConfiguration(environment: Environment(["GATEWAY_LISTEN": listen]), demo: true)
        #expect(config.demo)
    }

    @Test(arguments: [
        ("GATEWAY_LISTEN", "9191"), ("GATEWAY_LISTEN", "host:99999"), ("GATEWAY_LISTEN", "example.com:80"),
        ("GATEWAY_DATABASE", "mysql://x"), ("WXPAY_SIGN_TYPE", "SHA1"), ("GATEWAY_POLL_INTERVAL", "soon"),
        ("WXPAY_API_BASE", "ftp://x"), ("WXPAY_NOTIFY_URL", "https://x.example/n?a=1"), ("GATEWAY_LOG_LEVEL", "verbose"),
        ("GATEWAY_LOG_LEVEL", "warnx"), ("GATEWAY_MAX_CONNECTIONS", "lots"), ("GATEWAY_MAX_CONNECTIONS", "8"),
        ("GATEWAY_CLIENT_TOKENS", "short"), ("GATEWAY_SUPPORT_TOKENS", "long-enough-token,tiny"),
        ("WXPAY_MCH_ID", "12345x"), ("WXPAY_APP_ID", "wx-not/an id"), ("GATEWAY_FULFILMENT_RETRY_MIN", "0.01"),
        ("GATEWAY_FULFILMENT_DEAD_AFTER", "forever"),
    ])
    func aMalformedValueStopsAProductionStartNamingTheVariableNeverTheValue(variable: String, value: String) {
        var env = Self.production
        env[variable] = value
        do {
            _ = try GatewayConfiguration(environment: Environment(env), demo: false)
            Issue.record("accepted \(variable)=\(value)")
        } catch {
            #expect(error.variables == [variable])
            #expect(error.problems.first?.kind == .malformed)
            #expect(!error.description.contains(value))
        }
    }

    @Test func everyProblemIsReportedAtOnce() {
        let env = ["WXPAY_MCH_ID": "1230000109", "GATEWAY_LOG_LEVEL": "loud", "GATEWAY_POLL_INTERVAL": "0"]
        do {
            _ = try GatewayConfiguration(environment: Environment(env), demo: false)
            Issue.record("accepted")
        } catch {
            #expect(error.missing == ["WXPAY_APP_ID", "WXPAY_API_KEY", "WXPAY_NOTIFY_URL", "GATEWAY_CLIENT_TOKENS"])
            #expect(Set(error.variables).isSuperset(of: ["GATEWAY_LOG_LEVEL", "GATEWAY_POLL_INTERVAL"]))
            #expect(error.description.split(separator: "\n").count == 3)
        }
    }

    @Test func theAPIKeyNeverAppearsInAConfigurationError() {
        let key = "short-secret-key"
        var env = Self.production
        env["WXPAY_API_KEY"] = key
        do {
            _ = try GatewayConfiguration(environment: Environment(env), demo: false)
            Issue.record("a 16-character key was accepted")
        } catch {
            #expect(error.variables == ["WXPAY_API_KEY"])
            #expect(!error.description.contains(key))
        }
    }

    @Test func theWebhookRetryScheduleIsConfigurableAndReachesTheDispatcher() throws {
        let defaults = try #require(FulfilmentDispatcher.Configuration(try GatewayConfiguration(
            environment: Environment(["GATEWAY_FULFILMENT_URL": "https://shop.example/hook",
                                      "GATEWAY_FULFILMENT_SECRET": "0123456789abcdef"]), demo: true).fulfilment))
        #expect(defaults.initialBackoff == 5 && defaults.maxBackoff == 3600 && defaults.maxAge == 86400)
        let set = try #require(FulfilmentDispatcher.Configuration(try GatewayConfiguration(
            environment: Environment(["GATEWAY_FULFILMENT_URL": "https://shop.example/hook",
                                      "GATEWAY_FULFILMENT_SECRET": "0123456789abcdef",
                                      "GATEWAY_FULFILMENT_RETRY_MIN": "2", "GATEWAY_FULFILMENT_RETRY_MAX": "60",
                                      "GATEWAY_FULFILMENT_DEAD_AFTER": "3600"]), demo: true).fulfilment))
        #expect(set.initialBackoff == 2 && set.maxBackoff == 60 && set.maxAge == 3600)
        #expect(FulfilmentDispatcher.Configuration(GatewayConfiguration.demo().fulfilment) == nil)
        #expect(throws: ConfigurationError([ConfigurationProblem(
            "GATEWAY_FULFILMENT_RETRY_MAX", .conflict, expected: "must not be less than GATEWAY_FULFILMENT_RETRY_MIN")])) {
            try GatewayConfiguration(environment: Environment(["GATEWAY_FULFILMENT_RETRY_MIN": "60",
                                                               "GATEWAY_FULFILMENT_RETRY_MAX": "10"]), demo: true)
        }
    }

    @Test func aMisspeltVariableIsNamedInAWarningWithTheOneItMostLikelyMeant() {
        let warnings = GatewayConfiguration.warnings(for: Environment([
            "GATEWAY_FULFILMENT_ULR": "https://shop.example/hook", "WXPAY_MCHID": "1", "APPSTORE_ISSUER": "x",
            "GATEWAY_POLL_INTERVAL": "1", "HOME": "/root", "GATEWAY_SOMETHING_ELSE_ENTIRELY": "", "APPSTORE_PRIVATE_KEY": "k",
            "GATEWAY_X": "",
        ]))
        #expect(warnings.count == 6)
        #expect(warnings.contains { $0.hasPrefix("GATEWAY_FULFILMENT_ULR ") && $0.contains("did you mean GATEWAY_FULFILMENT_URL?") })
        #expect(warnings.contains { $0.hasPrefix("WXPAY_MCHID ") && $0.contains("did you mean WXPAY_MCH_ID?") })
        // A name typed without its last word is matched to the whole one.
        #expect(warnings.contains { $0.hasPrefix("APPSTORE_ISSUER ") && $0.contains("did you mean APPSTORE_ISSUER_ID?") })
        #expect(warnings.contains { $0.hasPrefix("APPSTORE_PRIVATE_KEY ") && $0.contains("did you mean APPSTORE_PRIVATE_KEY_FILE?") })
        #expect(warnings.contains { $0.hasPrefix("GATEWAY_X ") && !$0.contains("did you mean") })
        #expect(warnings.contains { $0.hasPrefix("GATEWAY_SOMETHING_ELSE_ENTIRELY ") && !$0.contains("did you mean") })
        #expect(!warnings.joined().contains("shop.example"))
        #expect(GatewayConfiguration.warnings(for: Environment(Self.production)).isEmpty)
    }

    @Test("With the Server API key but no receipt root, start-up warns that a token-less StoreKit 1 purchase cannot be credited from its receipt")
    func aServerAPIKeyWithoutAReceiptRootIsWarnedAbout() {
        var env = Self.production
        env["APPSTORE_PRIVATE_KEY_FILE"] = "/etc/wxpay-gateway/SubscriptionKey.p8"
        let warnings = GatewayConfiguration.warnings(for: Environment(env))
        #expect(warnings.count == 1)
        #expect(warnings.first?.hasPrefix("APPSTORE_RECEIPT_ROOT_CA_FILE is not set") == true)
        #expect(warnings.first?.contains("/etc/wxpay-gateway") == false)
        env["APPSTORE_RECEIPT_ROOT_CA_FILE"] = "/etc/wxpay-gateway/AppleIncRootCertificate.cer"
        #expect(GatewayConfiguration.warnings(for: Environment(env)).isEmpty)
    }

    #if !GATEWAY_FAULT_INJECTION
    @Test func aNormalBuildHasNoCrashHookIgnoresGATEWAY_CRASH_POINTAndWarnsOnce() throws {
        #expect(!CrashPoint.isCompiledIn)
        let env = ["GATEWAY_CRASH_POINT": "notify_committed:1"]
        let config = try GatewayConfiguration(environment: Environment(env), demo: true)
        #expect(config.crashPoints.isEmpty)
        let warnings = GatewayConfiguration.warnings(for: Environment(env))
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains("GATEWAY_CRASH_POINT is set but ignored") == true)
        // Even a malformed value is only ignored: nothing here reads it.
        #expect(throws: Never.self) {
            try GatewayConfiguration(environment: Environment(["GATEWAY_CRASH_POINT": "nonsense"]), demo: true)
        }
    }

    @Test("A normal build has no shifted clock: GATEWAY_TEST_CLOCK_FILE is ignored, with one warning, and the clock is the system's")
    func aNormalBuildIgnoresTheTestClockFile() throws {
        #expect(!TestClock.isCompiledIn)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("clock-\(UUID().uuidString)")
        try Data("31536000".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let env = ["GATEWAY_TEST_CLOCK_FILE": file.path]
        let config = try GatewayConfiguration(environment: Environment(env), demo: true)
        #expect(config.testClockFile == nil)
        let warnings = GatewayConfiguration.warnings(for: Environment(env))
        #expect(warnings.count == 1 && warnings.first?.contains("GATEWAY_TEST_CLOCK_FILE is set but ignored") == true)
        // Even handed the file, this build's clock is the system's.
        #expect(abs(TestClock.now(offsetFile: file.path)().timeIntervalSinceNow) < 3600)
    }
    #endif

    @Test func everyKnownVariableIsListedOnceWithAGatewayPrefixAndDocumentedInTheREADME() throws {
        let names = GatewayConfiguration.variables.map(\.name)
        #expect(Set(names).count == names.count)
        for name in names {
            #expect(GatewayConfiguration.variablePrefixes.contains { name.hasPrefix($0) }, "\(name)")
        }
        let readme = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../README.md").standardizedFileURL, encoding: .utf8)
        // The battery's two fault-injection variables are said apart from the table.
        let battery: Set = ["GATEWAY_CRASH_POINT", "GATEWAY_TEST_CLOCK_FILE"]
        for name in names where !battery.contains(name) {
            #expect(readme.contains("| `\(name)` |"), "\(name) is not in the README's configuration table")
        }
        for name in battery { #expect(readme.contains("`\(name)`")) }
    }

    @Test("A token given both as the app backend's and as support's is refused at start, naming both variables and never the token")
    func aTokenSharedByTheClientAndSupportVariablesIsRefused() throws {
        var env = Self.production
        env["GATEWAY_CLIENT_TOKENS"] = "client-token-1, shared-token-77"
        env["GATEWAY_SUPPORT_TOKENS"] = "support-token-1,shared-token-77"
        env["GATEWAY_LISTEN"] = "nowhere"
        do {
            _ = try GatewayConfiguration(environment: Environment(env), demo: false)
            Issue.record("a token shared by the client and support variables was accepted")
        } catch {
            // One message with every problem: the shared token beside the malformed listen address.
            #expect(Set(error.variables) == ["GATEWAY_SUPPORT_TOKENS", "GATEWAY_LISTEN"], "\(error)")
            #expect(error.description.contains("GATEWAY_SUPPORT_TOKENS: shares a token with GATEWAY_CLIENT_TOKENS"), "\(error)")
            #expect(!error.description.contains("shared-token-77"))
        }
        env["GATEWAY_LISTEN"] = nil
        env["GATEWAY_SUPPORT_TOKENS"] = "support-token-1"
        #expect(try GatewayConfiguration(environment: Environment(env), demo: false).supportTokens == ["support-token-1"])
    }

    @Test("A URL variable's scheme is taken in any case and written in lower case, and what is not http(s) is still refused")
    func urlSchemesAreCaseInsensitive() throws {
        var env = Self.production
        env["WXPAY_NOTIFY_URL"] = "HTTPS://pay.example.com/wechat/notify"
        env["WXPAY_REFUND_NOTIFY_URL"] = "Https://pay.example.com/wechat/refund-notify"
        env["WXPAY_API_BASE"] = "HTTPS://api.mch.weixin.qq.com"
        env["GATEWAY_FULFILMENT_URL"] = "HTTP://127.0.0.1:9000/fulfil"
        env["GATEWAY_FULFILMENT_SECRET"] = "0123456789abcdef"
        let config = try GatewayConfiguration(environment: Environment(env), demo: false)
        #expect(config.notifyURL == "https://pay.example.com/wechat/notify")
        #expect(config.refunds.notifyURL == "https://pay.example.com/wechat/refund-notify")
        #expect(config.apiBase == "https://api.mch.weixin.qq.com")
        #expect(config.fulfilment.url == "http://127.0.0.1:9000/fulfil")
        for refused in ["FTP://pay.example.com/notify", "HTTPS:/pay.example.com/notify", "HTTPS://", "pay.example.com/notify",
                        "HTTPSX://pay.example.com/notify", "HTTPS://pay.example.com/notify?x=1", "javascript:alert(1)"] {
            var bad = Self.production
            bad["WXPAY_NOTIFY_URL"] = refused
            #expect(throws: ConfigurationError.self, "\(refused)") { try GatewayConfiguration(environment: Environment(bad), demo: false) }
        }
    }

    /// Foundation's URL parser takes what would fail at every use instead of at start: WeChat
    /// answered RETURN_FAIL to every unifiedorder naming a notify_url with a space, and a webhook
    /// URL with one failed every delivery.
    @Test("A URL variable holding a space, a byte outside printable ASCII, a fragment, a port beyond 65535 or (but the webhook's) a user is refused")
    func urlsThatWouldFailAtEveryUseAreRefusedAtStart() throws {
        // (A value's leading and trailing blanks are the environment reader's to trim.)
        let refusedURLs = [
            "https://pay.example.com/wechat/no tify", "https://pay.example.com/\u{7F}notify", "https://pay.example.com/通知",
            "https://pay.example.com/notify#x", "https://pay.example.com:99999/notify", "https://pay.example.com:0/notify",
            "https://pay.example.com:/notify", "https://user:pw@pay.example.com/notify", "https://pay.example.com/a|b",
            "https://pay.example.com/{x}",
        ]
        let refusedBases = [
            "https://api.exa mple.com", "https://api.example.com:99999", "https://user:pw@api.example.com",
            "https://api.example.com#x", "https://api.例子.com",
        ]
        var cases = refusedURLs.map { ("WXPAY_NOTIFY_URL", $0) } + refusedBases.map { ("WXPAY_API_BASE", $0) }
        cases += refusedURLs.filter { !$0.contains("user:pw@") }.map { ("GATEWAY_FULFILMENT_URL", $0) }
        for (variable, refused) in cases {
            var bad = Self.production
            bad[variable] = refused
            bad["GATEWAY_FULFILMENT_SECRET"] = "0123456789abcdef"
            #expect(throws: ConfigurationError.self, "\(variable)=\(refused)") {
                try GatewayConfiguration(environment: Environment(bad), demo: false)
            }
        }
        var good = Self.production
        good["WXPAY_NOTIFY_URL"] = "https://pay.example.com:8443/wechat/notify%20x"
        good["WXPAY_API_BASE"] = "https://[::1]:9000"
        good["GATEWAY_FULFILMENT_URL"] = "https://hook:s3cret@shop.example.com/fulfil"
        good["GATEWAY_FULFILMENT_SECRET"] = "0123456789abcdef"
        let config = try GatewayConfiguration(environment: Environment(good), demo: false)
        #expect(config.notifyURL == "https://pay.example.com:8443/wechat/notify%20x")
        #expect(config.apiBase == "https://[::1]:9000")
        #expect(config.fulfilment.url == "https://hook:s3cret@shop.example.com/fulfil")
    }

    @Test func editDistanceCountsATranspositionAsOneEdit() {
        #expect(GatewayConfiguration.editDistance(Array("URL".utf8), Array("ULR".utf8)) == 1)
        #expect(GatewayConfiguration.editDistance(Array("".utf8), Array("abc".utf8)) == 3)
        #expect(GatewayConfiguration.editDistance(Array("kitten".utf8), Array("sitting".utf8)) == 3)
    }
}
