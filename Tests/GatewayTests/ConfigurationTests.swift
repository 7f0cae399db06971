// SPDX-License-Identifier: Apache-2.0
import Gateway
import Testing
import WeChatPay

struct ConfigurationTests {
    @Test func noMerchantMeansDemoModeWithTheDocumentedDefaults() throws {
        let config = try GatewayConfiguration(environment: Environment([:]))
        #expect(config.demo)
        #expect(config.signType == .hmacSHA256)
        #expect(config.listenHost == "127.0.0.1" && config.listenPort == 8080)
        #expect(config.database == .sqlite(path: "data/gateway.sqlite"))
        #expect(config.pollInterval == 5)
        #expect(config.apiBase == "https://api.mch.weixin.qq.com")
        #expect(config.clientTokens == [GatewayConfiguration.demoClientToken])
    }

    @Test func aProductionMerchantNeedsItsKeyAppIDNotifyURLAndTokens() throws {
        var env = ["WXPAY_MCH_ID": "1230000109", "WXPAY_APP_ID": "wx8888888888888888",
                   "WXPAY_API_KEY": "0123456789abcdef0123456789abcdef",
                   "WXPAY_NOTIFY_URL": "https://pay.example.com/wechat/notify",
                   "GATEWAY_CLIENT_TOKENS": "client-token-1, client-token-2", "WXPAY_SIGN_TYPE": "MD5"]
        let config = try GatewayConfiguration(environment: Environment(env))
        #expect(!config.demo)
        #expect(config.clientTokens == ["client-token-1", "client-token-2"])
        #expect(config.signType == .md5)
        env["WXPAY_API_KEY"] = nil
        #expect(throws: ConfigurationError.self) { try GatewayConfiguration(environment: Environment(env)) }
    }

    @Test(arguments: [
        ("GATEWAY_LISTEN", "8080"), ("GATEWAY_LISTEN", "host:99999"), ("GATEWAY_DATABASE", "mysql://x"),
        ("WXPAY_SIGN_TYPE", "SHA1"), ("GATEWAY_POLL_INTERVAL", "soon"), ("WXPAY_API_BASE", "ftp://x"),
        ("WXPAY_NOTIFY_URL", "https://x.example/n?a=1"),
    ])
    func aMalformedValueStopsStartUpNamingTheVariable(variable: String, value: String) {
        do {
            _ = try GatewayConfiguration(environment: Environment([variable: value]))
            Issue.record("accepted \(variable)=\(value)")
        } catch {
            #expect(error.variable == variable)
            #expect(!error.description.contains(value))
        }
    }

    @Test func theAPIKeyNeverAppearsInAConfigurationError() {
        let key = "short-secret-key"
        do {
            _ = try GatewayConfiguration(environment: Environment([
                "WXPAY_MCH_ID": "1230000109", "WXPAY_APP_ID": "wx1", "WXPAY_API_KEY": key,
                "WXPAY_NOTIFY_URL": "https://x.example/n", "GATEWAY_CLIENT_TOKENS": "client-token-1"]))
            Issue.record("a 16-character key was accepted")
        } catch {
            #expect(error.variable == "WXPAY_API_KEY")
            #expect(!error.description.contains(key))
        }
    }
}
