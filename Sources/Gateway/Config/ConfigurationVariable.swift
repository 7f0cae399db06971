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

    /// An absolute http(s) URL with a host; `query` says whether a query string is allowed.
    public static func url(query: Bool = true) -> @Sendable (String) -> String? {
        { text in
            guard let (url, text) = httpURL(text), query || url.query == nil else { return nil }
            return text
        }
    }

    /// `text` read as an absolute http(s) URL with a host, and the text with its scheme in lower
    /// case; nil when it is none. A scheme is case-insensitive (RFC 3986, 3.1: `HTTPS://` is
    /// `https://`), but what is sent on, to WeChat as a `notify_url` say, is written as every
    /// client expects it.
    static func httpURL(_ text: String) -> (URL, String)? {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let scheme = text[..<colon].lowercased()
        guard scheme == "https" || scheme == "http" else { return nil }
        let normalized = scheme + text[colon...]
        guard let url = URL(string: normalized), url.scheme == scheme, url.host != nil else { return nil }
        return (url, normalized)
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
