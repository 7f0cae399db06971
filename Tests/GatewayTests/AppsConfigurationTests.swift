// SPDX-License-Identifier: Apache-2.0
@testable import Gateway
import Testing

/// WXPAY_APPS: the merchant's app ids by name and kind, one per channel, read and checked at start.
struct AppsConfigurationTests {
    static let allKinds = "android=wx1111111111111111:app,mini=wx2222222222222222:miniprogram,"
        + "mp=wx3333333333333333:official_account,web=wx4444444444444444:native,h5=wx5555555555555555:h5"
    static let site = ["WXPAY_H5_SITE_NAME": "Course shop", "WXPAY_H5_SITE_URL": "https://m.course.example"]

    /// A complete production environment with `changes` applied (nil removes a variable).
    static func environment(_ changes: [String: String?]) -> Environment {
        var env = ConfigurationTests.production
        for (name, value) in changes { env[name] = value }
        return Environment(env)
    }

    static func refusal(_ changes: [String: String?]) -> ConfigurationError? {
        do {
            _ = try GatewayConfiguration(environment: environment(changes), demo: false)
            return nil
        } catch {
            return error
        }
    }

    @Test("WXPAY_APP_ID alone is one app of kind app, the default, as before WXPAY_APPS existed")
    func theAppIDAloneIsOneAppOfKindApp() throws {
        let configuration = try GatewayConfiguration(environment: Self.environment([:]), demo: false)
        #expect(configuration.apps.all == [WeChatApp(name: "app", appID: "wx8888888888888888", kind: .app)])
        #expect(configuration.apps.defaultApp == configuration.apps.all.first)
        #expect(configuration.appID == "wx8888888888888888")
        #expect(configuration.apps.h5Site == nil)
    }

    @Test("WXPAY_APPS names every kind, takes the place of WXPAY_APP_ID, and its one app of kind app is the default")
    func everyKindIsReadAndTheOnlyAppOfKindAppIsTheDefault() throws {
        var changes: [String: String?] = ["WXPAY_APP_ID": nil, "WXPAY_APPS": Self.allKinds]
        for (name, value) in Self.site { changes[name] = value }
        let configuration = try GatewayConfiguration(environment: Self.environment(changes), demo: false)
        #expect(configuration.apps.all.map(\.name) == ["android", "mini", "mp", "web", "h5"])
        #expect(configuration.apps.all.map(\.kind) == [.app, .miniprogram, .officialAccount, .native, .h5])
        #expect(configuration.apps.all.map(\.kind.tradeType) == ["APP", "JSAPI", "JSAPI", "NATIVE", "MWEB"])
        #expect(configuration.apps.named("mini")?.appID == "wx2222222222222222")
        #expect(configuration.apps.withAppID("wx4444444444444444")?.name == "web")
        #expect(configuration.apps.defaultApp?.name == "android")
        #expect(configuration.appID == "wx1111111111111111")
        #expect(configuration.apps.h5Site == WeChatApps.H5Site(name: "Course shop", url: "https://m.course.example"))
    }

    @Test("Spaces around entries are allowed; with two apps of kind app none is the default unless WXPAY_APP_ID chooses one")
    func twoAppsOfKindAppNeedWXPAY_APP_IDToChooseTheDefault() throws {
        let listed = " phone = wx1111111111111111 : app , pad=wx2222222222222222:app "
        let none = try GatewayConfiguration(environment: Self.environment(["WXPAY_APP_ID": nil, "WXPAY_APPS": listed]),
                                            demo: false)
        #expect(none.apps.all.map(\.name) == ["phone", "pad"])
        #expect(none.apps.defaultApp == nil)
        let chosen = try GatewayConfiguration(environment: Self.environment(["WXPAY_APP_ID": "wx2222222222222222",
                                                                             "WXPAY_APPS": listed]), demo: false)
        #expect(chosen.apps.defaultApp?.name == "pad")
        #expect(chosen.appID == "wx2222222222222222")
    }

    @Test("WXPAY_APP_ID beside WXPAY_APPS must be one of its apps of kind app")
    func anAppIDOutsideTheListIsRefused() {
        let error = Self.refusal(["WXPAY_APPS": "mini=wx2222222222222222:miniprogram"])
        #expect(error?.variables == ["WXPAY_APP_ID"])
        #expect(error?.description.contains("must be the app id of one of its apps of kind app") == true)
        let kindMismatch = Self.refusal(["WXPAY_APP_ID": "wx2222222222222222", "WXPAY_APPS": "mini=wx2222222222222222:miniprogram"])
        #expect(kindMismatch?.variables == ["WXPAY_APP_ID"])
    }

    @Test("A production start with neither WXPAY_APP_ID nor WXPAY_APPS names WXPAY_APP_ID as missing, saying WXPAY_APPS would do")
    func neitherVariableIsAMissingAppID() {
        let error = Self.refusal(["WXPAY_APP_ID": nil])
        #expect(error?.missing == ["WXPAY_APP_ID"])
        #expect(error?.problems.first?.expected.contains("or WXPAY_APPS") == true)
    }

    @Test("A duplicate name, a duplicate app id, an unknown kind and a malformed entry are each refused in one message that names the app")
    func duplicatesAndUnknownKindsAreRefusedClearly() throws {
        let listed = "a=wx1111111111111111:app,a=wx2222222222222222:native,b=wx1111111111111111:h5,"
            + "c=wx3333333333333333:miniapp,nonsense,D=wx4444444444444444:app,e=wx-5:app"
        let error = try #require(Self.refusal(["WXPAY_APP_ID": nil, "WXPAY_APPS": listed]))
        #expect(error.variables == Array(repeating: "WXPAY_APPS", count: 6))
        let lines = error.description.split(separator: "\n").map(String.init)
        #expect(lines.contains("WXPAY_APPS: the name a is given to two apps"))
        #expect(lines.contains { $0.contains("apps a and b have the same app id wx1111111111111111") })
        #expect(lines.contains { $0.contains("app c: unknown kind \"miniapp\" (kinds: app, miniprogram, official_account, native, h5)") })
        #expect(lines.contains { $0.contains("entry 5 is not one") })
        #expect(lines.contains { $0.contains("entry 6: a name is 1 to 32 lower-case letters") })
        #expect(lines.contains { $0.contains("app e: its app id must be letters and digits") })
    }

    @Test("An empty entry, a trailing comma or more than 64 apps are refused")
    func emptyEntriesAndTooManyAppsAreRefused() {
        #expect(Self.refusal(["WXPAY_APPS": "a=wx1111111111111111:app,"])?.variables == ["WXPAY_APPS"])
        let many = (0...64).map { "a\($0)=wx\($0 + 1_000_000_000):app" }.joined(separator: ",")
        let error = Self.refusal(["WXPAY_APP_ID": nil, "WXPAY_APPS": many])
        #expect(error?.variables == ["WXPAY_APPS"])
        #expect(error?.description.contains("at most 64 apps") == true)
    }

    @Test("An h5 app needs WXPAY_H5_SITE_NAME and WXPAY_H5_SITE_URL, and the site without an h5 app is refused rather than ignored")
    func theH5SiteGoesWithAnH5App() throws {
        let h5 = "android=wx1111111111111111:app,h5=wx5555555555555555:h5"
        let missing = try #require(Self.refusal(["WXPAY_APP_ID": nil, "WXPAY_APPS": h5]))
        #expect(Set(missing.variables) == ["WXPAY_H5_SITE_NAME", "WXPAY_H5_SITE_URL"])
        #expect(missing.description.contains("required with an app of kind h5 (h5 in WXPAY_APPS)"))
        let stray = try #require(Self.refusal(Self.site.mapValues { Optional($0) }))
        #expect(Set(stray.variables) == ["WXPAY_H5_SITE_NAME", "WXPAY_H5_SITE_URL"])
        #expect(stray.description.contains("set without an app of kind h5"))
        let malformed = Self.refusal(["WXPAY_APP_ID": nil, "WXPAY_APPS": h5, "WXPAY_H5_SITE_NAME": "Course shop",
                                      "WXPAY_H5_SITE_URL": "m.course.example"])
        #expect(malformed?.problems.contains(ConfigurationProblem("WXPAY_H5_SITE_URL", .malformed,
                                                                 expected: "the mobile website's http(s) URL, at most 128 characters")) == true)
    }

    @Test("The H5 site's URL carries no credentials, and its name and URL must fit WeChat's 256-byte scene_info")
    func theH5SiteFitsWeChatsSceneInfo() throws {
        let h5 = "android=wx1111111111111111:app,h5=wx5555555555555555:h5"
        let withCredentials = try #require(Self.refusal(["WXPAY_APP_ID": nil, "WXPAY_APPS": h5, "WXPAY_H5_SITE_NAME": "Course shop",
                                                         "WXPAY_H5_SITE_URL": "https://u:p@m.course.example"]))
        #expect(withCredentials.variables == ["WXPAY_H5_SITE_URL"])
        #expect(!withCredentials.description.contains("u:p"))
        let long = try #require(Self.refusal(["WXPAY_APP_ID": nil, "WXPAY_APPS": h5,
                                              "WXPAY_H5_SITE_NAME": String(repeating: "课", count: 64),
                                              "WXPAY_H5_SITE_URL": "https://m.course.example/" + String(repeating: "a", count: 100)]))
        #expect(long.variables == ["WXPAY_H5_SITE_NAME"] && long.description.contains("256"))
        #expect(Self.refusal(["WXPAY_APP_ID": nil, "WXPAY_APPS": h5, "WXPAY_H5_SITE_NAME": String(repeating: "课", count: 40),
                              "WXPAY_H5_SITE_URL": "https://m.course.example/"]) == nil)
    }

    @Test("WXPAY_H5_REDIRECT_HOSTS is read as host names and, with the site's host, is where an H5 order's redirect_url may go")
    func redirectHostsAreReadAndChecked() throws {
        let h5 = "android=wx1111111111111111:app,h5=wx5555555555555555:h5"
        var env = ConfigurationTests.production
        env["WXPAY_APP_ID"] = nil
        env["WXPAY_APPS"] = h5
        env.merge(Self.site) { $1 }
        env["WXPAY_H5_REDIRECT_HOSTS"] = "Pay.Course.example, www.course.example"
        let site = try #require(try GatewayConfiguration(environment: Environment(env), demo: false).apps.h5Site)
        #expect(site.redirectHosts == ["pay.course.example", "www.course.example"])
        for allowed in ["https://m.course.example/paid?x=1", "https://M.COURSE.EXAMPLE:8443/", "https://pay.course.example",
                        "https://www.course.example#done"] {
            #expect(site.refusal(ofRedirect: allowed) == nil, "\(allowed)")
        }
        for refused in ["http://m.course.example/", "https://evil.example/", "https://m.course.example@evil.example/",
                        "https://evil.example\\@m.course.example/", "https://m.course.example.evil.example/",
                        "https://m.course.example:x/", "https:///", "https://m.course.example /", "//m.course.example/",
                        "https://m.course.example:99999999999999999999/", "https://m.course.example:65536/"] {
            #expect(site.refusal(ofRedirect: refused) != nil, "\(refused)")
        }
        env["WXPAY_H5_REDIRECT_HOSTS"] = "ok.example,bad host"
        #expect(throws: ConfigurationError.self) { try GatewayConfiguration(environment: Environment(env), demo: false) }
        let stray = try #require(Self.refusal(["WXPAY_H5_REDIRECT_HOSTS": "pay.course.example"]))
        #expect(stray.variables == ["WXPAY_H5_REDIRECT_HOSTS"])
    }

    @Test("Demo mode configures one app of every kind, the app one the documentation's test app id, and an H5 site")
    func demoModeHasEveryKind() throws {
        let configuration = try GatewayConfiguration(environment: Environment(["GATEWAY_LISTEN": "127.0.0.1:9090"]), demo: true)
        #expect(Set(configuration.apps.all.map(\.kind)) == Set(WeChatAppKind.allCases))
        #expect(Set(configuration.apps.all.map(\.appID)).count == configuration.apps.all.count)
        #expect(configuration.apps.defaultApp == WeChatApp(name: "android", appID: GatewayConfiguration.demoAppID, kind: .app))
        #expect(configuration.appID == GatewayConfiguration.demoAppID)
        #expect(configuration.apps.h5Site == WeChatApps.H5Site(name: WeChatApps.demoH5SiteName, url: "http://127.0.0.1:9090/"))
        #expect(throws: ConfigurationError.self) {
            try GatewayConfiguration(environment: Environment(["WXPAY_APPS": "mini=wx2222222222222222:miniprogram"]), demo: true)
        }
    }

    @Test("reconcile and doctor take WXPAY_APPS in place of WXPAY_APP_ID")
    func commandsNeedingTheAppIDTakeWXPAY_APPS() throws {
        let env = Environment(["WXPAY_MCH_ID": "1230000109", "WXPAY_API_KEY": "0123456789abcdef0123456789abcdef",
                               "WXPAY_APPS": "android=wx1111111111111111:app"])
        let configuration = try GatewayConfiguration(environment: env, demo: false, command: .reconcile)
        #expect(configuration.appID == "wx1111111111111111")
    }
}
