// SPDX-License-Identifier: Apache-2.0
import Foundation

/// One environment variable the gateway knows: its name, whether a production start needs it, what
/// a valid value looks like, and which property of `GatewayConfiguration` its parsed value goes to.
///
/// `GatewayConfiguration.variables` lists them all. That one list is what start-up reads, what
/// names every missing required variable in one refusal, and what tells a misspelt `GATEWAY_…`
/// from a real one — so a new variable is one entry there (and the property it fills):
///
/// ```swift
/// ConfigurationVariable("GATEWAY_POLL_INTERVAL", \.pollInterval, expecting: "seconds from 0.05 to 60",
///                       parse: ConfigurationVariable.seconds(0.05...60)),
/// ```
public struct ConfigurationVariable: Sendable {
    public enum Requirement: Sendable, Hashable {
        /// Unset (or blank) leaves the property's default.
        case optional
        /// A production start is refused without it; demo mode supplies its own value.
        case requiredOutsideDemo
        /// As `requiredOutsideDemo` while new orders use WeChat Pay API v2 (`WXPAY_API_VERSION`
        /// unset or `v2`); optional under v3, where its absence means v2 cannot sign (the v2 key).
        case requiredOutsideDemoWithV2
    }

    public let name: String
    public let requirement: Requirement
    /// What a valid value looks like, for the refusal message. Never the value itself: it may be a secret.
    public let expected: String
    /// Another variable that, when set, stands in for this required one (WXPAY_APPS for WXPAY_APP_ID).
    public private(set) var alternative: String?
    private let store: @Sendable (String, inout GatewayConfiguration) -> Bool

    /// A variable whose parsed value is stored at `property`; `parse` answers nil for a malformed value.
    public init<Value>(_ name: String, _ property: any WritableKeyPath<GatewayConfiguration, Value> & Sendable,
                       _ requirement: Requirement = .optional, expecting expected: String,
                       parse: @escaping @Sendable (String) -> Value?) {
        self.name = name
        self.requirement = requirement
        self.expected = expected
        store = { text, configuration in
            guard let value = parse(text) else { return false }
            configuration[keyPath: property] = value
            return true
        }
    }

    /// A variable for an optional property (nil while the variable is unset). A separate name, not an
    /// overload: with `Value` itself optional, a parser's nil ("malformed") could silently become a
    /// stored nil ("unset").
    public static func optional<Value>(_ name: String, _ property: any WritableKeyPath<GatewayConfiguration, Value?> & Sendable,
                                       _ requirement: Requirement = .optional, expecting expected: String,
                                       parse: @escaping @Sendable (String) -> Value?) -> ConfigurationVariable {
        ConfigurationVariable(name, property, requirement, expecting: expected) { text in parse(text).map { Optional($0) } }
    }

    /// This variable, no longer missing when `name` is set instead.
    public func satisfied(by name: String) -> ConfigurationVariable {
        var variable = self
        variable.alternative = name
        return variable
    }

    /// Parses `text` into `configuration`; false (and nothing stored) when the value is malformed.
    func apply(_ text: String, to configuration: inout GatewayConfiguration) -> Bool {
        store(text, &configuration)
    }
}

// MARK: - Parsers shared by the variables

extension ConfigurationVariable {
    /// A number of seconds inside `range`.
    public static func seconds(_ range: ClosedRange<Double>) -> @Sendable (String) -> Double? {
        { text in
            guard let value = Double(text), value.isFinite, range.contains(value) else { return nil }
            return value
        }
    }

    /// A whole number inside `range`.
    public static func integer(_ range: ClosedRange<Int>) -> @Sendable (String) -> Int? {
        { text in
            guard let value = Int(text), range.contains(value) else { return nil }
            return value
        }
    }

    /// An absolute http(s) URL with a host; `query` says whether a query string is allowed,
    /// `userinfo` whether a `user:password@` is (the business's webhook may take basic auth so).
    public static func url(query: Bool = true, userinfo: Bool = false) -> @Sendable (String) -> String? {
        { text in
            guard let (url, text) = httpURL(text, userinfo: userinfo), query || url.query == nil else { return nil }
            return text
        }
    }

    /// `text` read as an absolute http(s) URL with a host, and the text with its scheme in lower
    /// case; nil when it is none. A scheme is case-insensitive (RFC 3986, 3.1: `HTTPS://` is
    /// `https://`), but what is sent on, to WeChat as a `notify_url` say, is written as every
    /// client expects it. Foundation's parser takes more than a URL may hold, and what it takes
    /// would fail at every use instead of at start: a space or any byte outside printable ASCII
    /// (WeChat answers RETURN_FAIL to every unifiedorder naming such a notify_url), a fragment
    /// (never sent), a port beyond 65535, and — but where `userinfo` allows it — a user and
    /// password (which WeChat would be handed in every order).
    static func httpURL(_ text: String, userinfo: Bool = false) -> (URL, String)? {
        guard text.utf8.allSatisfy(isURLByte), !text.contains("#") else { return nil }
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let scheme = text[..<colon].lowercased()
        guard scheme == "https" || scheme == "http" else { return nil }
        let normalized = scheme + text[colon...]
        guard let url = URL(string: normalized), url.scheme == scheme, url.host != nil else { return nil }
        let rest = normalized.dropFirst(scheme.count + 3)
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        if authority.contains("@") && !userinfo { return nil }
        let hostAndPort = authority.split(separator: "@", omittingEmptySubsequences: false).last ?? ""
        // The port follows the host's last colon, outside an IPv6 literal's brackets.
        if let portColon = hostAndPort.lastIndex(of: ":"), !hostAndPort[portColon...].contains("]") {
            let digits = hostAndPort[hostAndPort.index(after: portColon)...]
            guard !digits.isEmpty, digits.count <= 5, let port = Int(digits), (1...65535).contains(port) else { return nil }
        }
        return (url, normalized)
    }

    /// Printable ASCII a URL may hold as it is (RFC 3986's characters and `%` escapes): not the
    /// space, a control, `"`, `<`, `>`, `\`, `^`, the backtick, `{`, `|` or `}`.
    private static func isURLByte(_ byte: UInt8) -> Bool {
        byte > 0x20 && byte < 0x7F && !Array("\"<>\\^`{|}".utf8).contains(byte)
    }

    /// One of `choices` (case-insensitive), as its value.
    public static func oneOf<Value: Sendable>(_ choices: [String: Value]) -> @Sendable (String) -> Value? {
        { text in choices[text.lowercased()] }
    }

    /// `on`/`off` (also true/false, 1/0, yes/no).
    public static let flag: @Sendable (String) -> Bool? = oneOf([
        "on": true, "true": true, "1": true, "yes": true, "off": false, "false": false, "0": false, "no": false,
    ])

    /// A comma-separated list of tokens, blanks dropped, each at least `minimumLength` bytes; nil
    /// when one is shorter or none is left.
    public static func tokens(minimumLength: Int) -> @Sendable (String) -> [String]? {
        { text in
            let tokens = text.split(separator: ",").map { String($0).trimmingWhitespace() }.filter { !$0.isEmpty }
            guard !tokens.isEmpty, tokens.allSatisfy({ $0.utf8.count >= minimumLength }) else { return nil }
            return tokens
        }
    }

    /// The value as given (already trimmed, never blank).
    public static let text: @Sendable (String) -> String? = { $0 }
}
