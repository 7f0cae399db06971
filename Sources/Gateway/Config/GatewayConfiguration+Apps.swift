// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

/// The kind of client an app id pays in, which decides its WeChat trade type and the parameters
/// that client needs (README, "Apps and channels").
public enum WeChatAppKind: String, Sendable, Hashable, CaseIterable {
    /// A mobile app on the Open Platform: trade type APP, the SDK's PayReq.
    case app
    /// A mini program: trade type JSAPI, `wx.requestPayment`.
    case miniprogram
    /// An official account's pages inside WeChat: trade type JSAPI, `WeixinJSBridge`.
    case officialAccount = "official_account"
    /// A PC website: trade type NATIVE, a QR code of `code_url`.
    case native
    /// A mobile browser outside WeChat: trade type MWEB, a redirect to `mweb_url`.
    case h5

    /// Its place in `allCases`, for tables of per-kind instruments read without a lookup.
    var ordinal: Int {
        switch self {
        case .app: 0
        case .miniprogram: 1
        case .officialAccount: 2
        case .native: 3
        case .h5: 4
        }
    }

    /// WeChat's `trade_type` for this kind.
    public var tradeType: String {
        switch self {
        case .app: "APP"
        case .miniprogram, .officialAccount: "JSAPI"
        case .native: "NATIVE"
        case .h5: "MWEB"
        }
    }
}

/// One app id of the merchant under the short name clients choose it by.
public struct WeChatApp: Sendable, Hashable {
    public var name: String
    public var appID: String
    public var kind: WeChatAppKind

    public init(name: String, appID: String, kind: WeChatAppKind) {
        self.name = name
        self.appID = appID
        self.kind = kind
    }
}

/// The merchant's apps (WXPAY_APPS, or WXPAY_APP_ID's one app of kind `app`) and the H5 site's
/// scene (WXPAY_H5_SITE_NAME, WXPAY_H5_SITE_URL), read and checked at start by `appsChecks`.
public struct WeChatApps: Sendable {
    /// Every app, in the order configured; names and app ids are unique.
    public var all: [WeChatApp] = []
    /// The app a create that names none goes through: WXPAY_APP_ID's, else the only app of kind
    /// `app`; nil when there is none, or several and WXPAY_APP_ID does not choose.
    public var defaultApp: WeChatApp?
    /// The mobile website MWEB orders declare in `scene_info`; set exactly when an app of kind `h5` is.
    public var h5Site: H5Site?

    /// WXPAY_APPS as given, before `appsChecks` reads it.
    var listed: String?
    var h5SiteName: String?
    var h5SiteURL: String?
    var h5RedirectHosts: String?

    /// The name and address of the merchant's mobile website, as WeChat's H5 scene wants them,
    /// and the hosts an H5 order's `redirect_url` may send the payer back to.
    public struct H5Site: Sendable, Hashable {
        public var name: String
        public var url: String
        /// Lower-case host names a `redirect_url` may name besides the site's own
        /// (WXPAY_H5_REDIRECT_HOSTS).
        public var redirectHosts: Set<String>

        /// WeChat's `scene_info` is String(256): the site's name and URL must fit in it, encoded.
        public static let sceneInfoLimit = 256

        public init(name: String, url: String, redirectHosts: Set<String> = []) {
            self.name = name
            self.url = url
            self.redirectHosts = Set(redirectHosts.map { $0.lowercased() })
        }

        /// Why `redirect`, appended to WeChat's payment page, would not bring the payer back to
        /// the merchant, or nil when it would. WeChat sends the payer to whatever it names once
        /// the payment page closes, so an open redirect there is a phishing page that looks paid:
        /// only the site's own host or a listed one, over https (http only when the site itself
        /// is http), with no userinfo and no backslash (which browsers read as a slash). The URL
        /// is read here by hand, not by a URL parser, so that this check and the browser cannot
        /// disagree on where the host ends.
        public func refusal(ofRedirect redirect: String) -> String? {
            let siteIsHTTP = url.lowercased().hasPrefix("http://")
            guard let target = Self.origin(of: redirect) else {
                return "redirect_url must be an absolute http(s) URL without userinfo, spaces or backslashes"
            }
            guard target.scheme == "https" || (siteIsHTTP && target.scheme == "http") else {
                return "redirect_url must use https" + (siteIsHTTP ? " or http" : "")
            }
            let siteHost = Self.origin(of: url)?.host
            guard target.host == siteHost || redirectHosts.contains(target.host) else {
                return "redirect_url must be on the H5 site's host (\(siteHost ?? "")) or one of WXPAY_H5_REDIRECT_HOSTS"
            }
            return nil
        }

        /// The scheme and lower-case host of an absolute http(s) URL, or nil when it has
        /// userinfo, a backslash, a space or a control character, or no host.
        static func origin(of text: String) -> (scheme: String, host: String)? {
            guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\\") }) else { return nil }
            let lowered = text.lowercased()
            let scheme: String
            if lowered.hasPrefix("https://") { scheme = "https" } else if lowered.hasPrefix("http://") { scheme = "http" } else { return nil }
            let rest = lowered.dropFirst(scheme.count + 3)
            let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
            guard !authority.contains("@") else { return nil }
            var host = Substring(authority)
            if let colon = host.lastIndex(of: ":"), !host.hasSuffix("]") {
                // A port number (an empty one is the scheme's): at most 65535. (A demo's own
                // address may say 0 while its listener is still to be bound.)
                let port = host[host.index(after: colon)...]
                guard port.count <= 5, port.allSatisfy({ $0.isASCII && $0.isNumber }), port.isEmpty || (Int(port) ?? 65536) <= 65535
                else { return nil }
                host = host[..<colon]
            }
            guard !host.isEmpty else { return nil }
            return (scheme, String(host))
        }
    }

    public init() {}

    /// The app called `name`, if there is one.
    public func named(_ name: String) -> WeChatApp? { all.first { $0.name == name } }

    /// The kind of client `order` was created for: its app's, else what its trade type says
    /// (an order from before apps had names is APP; a JSAPI order of an app since removed from
    /// WXPAY_APPS counts as the official account's).
    public func kind(of order: OrderRecord) -> WeChatAppKind {
        if let name = order.app, let app = named(name) { return app.kind }
        switch order.tradeType {
        case "JSAPI": return .officialAccount
        case "NATIVE": return .native
        case "MWEB": return .h5
        default: return .app
        }
    }

    /// The app whose app id is `appID`, if the merchant has one.
    public func withAppID(_ appID: String) -> WeChatApp? { all.first { $0.appID == appID } }

    /// At most this many apps: a merchant has a handful, and each is checked on every notify.
    public static let maximumCount = 64

    /// Demo mode's apps, one of each kind, on the simulator's test merchant; the `app` one is the
    /// documentation's test app id, so today's demo orders are unchanged.
    public static let demo: [WeChatApp] = [
        WeChatApp(name: "android", appID: GatewayConfiguration.demoAppID, kind: .app),
        WeChatApp(name: "mini", appID: "wx2421b1c4370ec43b", kind: .miniprogram),
        WeChatApp(name: "mp", appID: "wx6f1e2d3c4b5a6978", kind: .officialAccount),
        WeChatApp(name: "web", appID: "wx0a1b2c3d4e5f6071", kind: .native),
        WeChatApp(name: "h5", appID: "wx9e8d7c6b5a493827", kind: .h5),
    ]
    public static let demoH5SiteName = "wxpay-gateway demo course shop"
}

extension GatewayConfiguration {
    static let appsVariables: [ConfigurationVariable] = [
        .optional("WXPAY_APPS", \.apps.listed,
                  expecting: "the merchant's apps as name=appid:kind, comma-separated (kinds: "
                      + WeChatAppKind.allCases.map(\.rawValue).joined(separator: ", ") + ")",
                  parse: ConfigurationVariable.text),
        .optional("WXPAY_H5_SITE_NAME", \.apps.h5SiteName, expecting: "the mobile website's name, 1 to 64 characters") {
            (1...64).contains($0.count) && !$0.unicodeScalars.contains { $0.properties.generalCategory == .control } ? $0 : nil
        },
        // At most 128 bytes: with the name's 64 characters, v2's scene_info stays within WeChat's 256.
        .optional("WXPAY_H5_SITE_URL", \.apps.h5SiteURL, expecting: "the mobile website's http(s) URL, at most 128 characters") {
            $0.utf8.count <= 128 ? ConfigurationVariable.url()($0) : nil
        },
        .optional("WXPAY_H5_REDIRECT_HOSTS", \.apps.h5RedirectHosts,
                  expecting: "host names, comma-separated, an H5 order's redirect_url may name besides WXPAY_H5_SITE_URL's host") {
            GatewayConfiguration.hostNames($0) != nil ? $0 : nil
        },
    ]

    /// WXPAY_APPS read into apps and checked with WXPAY_APP_ID and the H5 site; every problem
    /// named at once. Demo mode configures one app of each kind.
    static func appsChecks(_ configuration: inout GatewayConfiguration, _ environment: Environment) -> [ConfigurationProblem] {
        if configuration.demo {
            configuration.apps.all = WeChatApps.demo
            configuration.apps.defaultApp = WeChatApps.demo[0]
            configuration.apps.h5Site = WeChatApps.H5Site(
                name: WeChatApps.demoH5SiteName, url: configuration.listen.httpOrigin + "/",
                redirectHosts: configuration.apps.h5RedirectHosts.flatMap(GatewayConfiguration.hostNames) ?? [])
            return []
        }
        var problems: [ConfigurationProblem] = []
        let givenAppID = environment.get("WXPAY_APP_ID") != nil ? configuration.appID : nil
        if let listed = configuration.apps.listed {
            let (apps, found) = readApps(listed)
            if found.isEmpty {
                configuration.apps.all = apps
                if let givenAppID {
                    if let chosen = apps.first(where: { $0.appID == givenAppID && $0.kind == .app }) {
                        configuration.apps.defaultApp = chosen
                    } else if !givenAppID.isEmpty {
                        problems.append(ConfigurationProblem(
                            "WXPAY_APP_ID", .conflict,
                            expected: "with WXPAY_APPS it must be the app id of one of its apps of kind app (the app a "
                                + "create naming none goes through); leave it out otherwise"))
                    }
                } else {
                    let apps = apps.filter { $0.kind == .app }
                    configuration.apps.defaultApp = apps.count == 1 ? apps[0] : nil
                }
            } else {
                problems += found
            }
        } else if let givenAppID, !givenAppID.isEmpty {
            let app = WeChatApp(name: "app", appID: givenAppID, kind: .app)
            configuration.apps.all = [app]
            configuration.apps.defaultApp = app
        }
        // Calls about no order (the bill) and orders made before apps had names speak for the default app.
        configuration.appID = configuration.apps.defaultApp?.appID ?? configuration.appID
        let h5 = configuration.apps.all.first { $0.kind == .h5 }
        let siteNames = ["WXPAY_H5_SITE_NAME", "WXPAY_H5_SITE_URL"]
        if let h5 {
            for name in siteNames where environment.get(name) == nil {
                problems.append(ConfigurationProblem(
                    name, .conflict, expected: "required with an app of kind h5 (\(h5.name) in WXPAY_APPS): WeChat wants the "
                        + "mobile website's name and address in every H5 order's scene_info"))
            }
            if let name = configuration.apps.h5SiteName, let url = configuration.apps.h5SiteURL {
                let site = WeChatApps.H5Site(
                    name: name, url: url, redirectHosts: configuration.apps.h5RedirectHosts.flatMap(GatewayConfiguration.hostNames) ?? [])
                if WeChatApps.H5Site.origin(of: url) == nil {
                    // Sent to WeChat in every H5 order: no credentials, nothing a browser reads otherwise.
                    problems.append(ConfigurationProblem("WXPAY_H5_SITE_URL", .malformed,
                                                         expected: "an http(s) URL without userinfo, spaces or backslashes"))
                }
                let sceneBytes = WeChatPayV2Upstream.sceneInfo(site).utf8.count
                if sceneBytes > WeChatApps.H5Site.sceneInfoLimit {
                    problems.append(ConfigurationProblem(
                        "WXPAY_H5_SITE_NAME", .conflict,
                        expected: "a name that, with WXPAY_H5_SITE_URL, keeps scene_info within WeChat's "
                            + "\(WeChatApps.H5Site.sceneInfoLimit) bytes (it would be \(sceneBytes); a Chinese character is 3)"))
                }
                configuration.apps.h5Site = site
            }
        } else {
            for name in siteNames + ["WXPAY_H5_REDIRECT_HOSTS"] where environment.get(name) != nil {
                problems.append(ConfigurationProblem(name, .conflict,
                                                     expected: "set without an app of kind h5 in WXPAY_APPS: nothing would use it"))
            }
        }
        return problems
    }

    /// The names of the apps a gateway started with `environment` serves, for a tool that checks
    /// a name against them (`app-token --apps`): WXPAY_APPS's, or `app` for WXPAY_APP_ID's one
    /// app; nil when neither is set (the tool runs away from the gateway's configuration). A
    /// WXPAY_APPS the gateway would refuse to start with is refused here too, with its problems.
    public static func configuredAppNames(_ environment: Environment) -> Result<[String], ConfigurationError>? {
        if let listed = environment.get("WXPAY_APPS") {
            let (apps, problems) = readApps(listed)
            return problems.isEmpty ? .success(apps.map(\.name)) : .failure(ConfigurationError(problems))
        }
        return environment.get("WXPAY_APP_ID") != nil ? .success(["app"]) : nil
    }

    /// `name=appid:kind` entries: names of lower-case letters, digits, `-` and `_` (at most 32),
    /// app ids of letters and digits; a name or app id given twice, or an unknown kind, refused.
    /// Problems name the entry by its position and name, and say what is wrong with it.
    static func readApps(_ text: String) -> (apps: [WeChatApp], problems: [ConfigurationProblem]) {
        let kinds = WeChatAppKind.allCases.map(\.rawValue).joined(separator: ", ")
        var apps: [WeChatApp] = []
        var problems: [ConfigurationProblem] = []
        let entries = text.split(separator: ",", omittingEmptySubsequences: false).map { String($0).trimmingWhitespace() }
        guard entries.count <= WeChatApps.maximumCount else {
            return ([], [ConfigurationProblem("WXPAY_APPS", .malformed, expected: "at most \(WeChatApps.maximumCount) apps")])
        }
        func refuse(_ why: String) { problems.append(ConfigurationProblem("WXPAY_APPS", .conflict, expected: why)) }
        for (index, entry) in entries.enumerated() {
            let position = "entry \(index + 1)"
            guard let equals = entry.firstIndex(of: "="), let colon = entry.lastIndex(of: ":"), equals < colon else {
                problems.append(ConfigurationProblem("WXPAY_APPS", .malformed,
                                                     expected: "name=appid:kind entries, comma-separated (\(position) is not one)"))
                continue
            }
            let name = String(entry[..<equals]).trimmingWhitespace()
            let appID = String(entry[entry.index(after: equals)..<colon]).trimmingWhitespace()
            let kindText = String(entry[entry.index(after: colon)...]).trimmingWhitespace()
            guard isAppName(name) else {
                refuse("\(position): a name is 1 to 32 lower-case letters, digits, '-' or '_'")
                continue
            }
            guard asciiWord(appID) != nil, !appID.isEmpty else {
                refuse("app \(name): its app id must be letters and digits (at most 32)")
                continue
            }
            guard let kind = WeChatAppKind(rawValue: kindText) else {
                refuse("app \(name): unknown kind \"\(kindText.prefix(32))\" (kinds: \(kinds))")
                continue
            }
            if apps.contains(where: { $0.name == name }) {
                refuse("the name \(name) is given to two apps")
            } else if let twin = apps.first(where: { $0.appID == appID }) {
                refuse("apps \(twin.name) and \(name) have the same app id \(appID): an app id is one app of one kind")
            } else {
                apps.append(WeChatApp(name: name, appID: appID, kind: kind))
            }
        }
        return (apps, problems)
    }

    /// Comma-separated host names (letters, digits, `-` and `.`, at most 253 each, at most 32 of
    /// them), lower-cased; nil when any is not one.
    public static func hostNames(_ text: String) -> Set<String>? {
        let names = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard !names.isEmpty, names.count <= 32 else { return nil }
        for name in names {
            guard (1...253).contains(name.utf8.count), !name.hasPrefix("."), !name.hasSuffix("."), !name.contains(".."),
                  name.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x2E })
            else { return nil }
        }
        return Set(names)
    }

    public static func isAppName(_ text: String) -> Bool {
        (1...32).contains(text.utf8.count) && text.utf8.allSatisfy {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
        }
    }
}
