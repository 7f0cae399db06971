// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import JSON

/// What a verified app token says: the app user it was minted for, and when it stops being valid.
public struct AppTokenClaims: Sendable, Hashable {
    /// `sub`: the user id (`UserID`: 1–64 bytes, no whitespace, control or invisible characters).
    public var subject: String
    public var issuedAt: Int
    public var expiresAt: Int
    /// `apps`: the merchant's apps (names in WXPAY_APPS) this token may create orders through; nil
    /// (the claim absent) is every app.
    public var apps: Set<String>? = nil
}

/// Why an app token was refused: the rule that failed, said without echoing the token. The
/// API answers it as 401 `invalid_token` with `description` as the message.
public enum AppTokenError: Error, Sendable, Hashable, CustomStringConvertible {
    case tooLong
    case segments
    case badBase64(segment: String)
    case notJSONObject(segment: String)
    case duplicateKey(segment: String)
    /// A number no claim can hold (beyond 64-bit integers, `1e400`): named by its member.
    case numberOutOfRange(segment: String, member: String?)
    case algorithm
    case criticalHeader
    case type
    case signature
    case subject
    case apps
    case audience
    case issuedAt
    case expiry
    case notBefore
    case issuedInFuture
    case expired
    case notYetValid
    case lifetime

    /// The rule's name for `wxpay_app_token_refusals_total{rule}`.
    public var rule: String {
        switch self {
        case .tooLong: "too_long"
        case .segments: "segments"
        case .badBase64: "base64url"
        case .notJSONObject: "json"
        case .duplicateKey: "duplicate_key"
        case .numberOutOfRange: "number_out_of_range"
        case .algorithm: "alg"
        case .criticalHeader: "crit"
        case .type: "typ"
        case .signature: "signature"
        case .subject: "sub"
        case .apps: "apps"
        case .audience: "aud"
        case .issuedAt: "iat"
        case .expiry: "exp"
        case .notBefore: "nbf"
        case .issuedInFuture: "iat_in_future"
        case .expired: "expired"
        case .notYetValid: "not_yet_valid"
        case .lifetime: "lifetime"
        }
    }

    public var description: String {
        switch self {
        case .tooLong: "the token is longer than \(AppTokenVerifier.maximumLength) bytes"
        case .segments: "the token must be three base64url segments separated by dots (header.payload.signature)"
        case .badBase64(let segment): "the token's \(segment) is not base64url without padding"
        case .notJSONObject(let segment): "the token's \(segment) is not a JSON object"
        case .duplicateKey(let segment): "the token's \(segment) repeats a JSON key"
        case .numberOutOfRange(let segment, let member):
            "the token's \(segment) holds a number out of range" + (member.map { " (\($0)): integers must fit in 64 bits" } ?? "")
        case .algorithm: "the token's header must say \"alg\":\"HS256\" (alg none, unsigned, and other algorithms are refused)"
        case .criticalHeader: "the token's header names critical extensions (crit), which are not supported"
        case .type: "the token's typ, when present, must be JWT"
        case .signature: "the token's signature does not verify with any app token secret"
        case .subject: "the token's sub must be a user id: \(UserID.rule)"
        case .apps: "the token's apps, when present, must be an array of 1 to \(AppTokenVerifier.maximumApps) app names (lower-case letters, digits, - and _)"
        case .audience: "the token's aud must be wxpay-gateway"
        case .issuedAt: "the token's iat must be a number of seconds since 1970"
        case .expiry: "the token's exp must be a number of seconds since 1970"
        case .notBefore: "the token's nbf, when present, must be a number of seconds since 1970"
        case .issuedInFuture: "the token's iat is in the future (more than 60 s of clock skew)"
        case .expired: "the token has expired"
        case .notYetValid: "the token's nbf is in the future"
        case .lifetime: "the token's exp must be after its iat and at most 24 hours after it"
        }
    }
}

/// Verifies app tokens: JWTs (RFC 7519) signed HS256 (RFC 7515) with one of the configured
/// secrets, minted by the business backend for one logged-in user.
///
/// Strict by design: only `alg` HS256 (never `none`, never another algorithm whatever the header
/// says), exactly three canonical base64url segments, JSON without repeated keys, `aud`
/// `wxpay-gateway`, `sub` a user id (`UserID`), `iat` and `exp` required with `exp - iat` at most 24 hours,
/// and 60 seconds of clock skew. The header is read before the signature is checked (it names the
/// algorithm), the payload only after. Secrets are tried in turn, every one in full, so a rotation
/// keeps older tokens valid and timing does not say which secret matched.
public struct AppTokenVerifier: Sendable {
    public static let audience = "wxpay-gateway"
    public static let maximumLength = 4096
    public static let clockSkew = 60
    public static let maximumLifetime = 24 * 3600
    public static let minimumSecretBytes = 32
    /// At most this many names in `apps` (as many as WXPAY_APPS may list).
    public static let maximumApps = WeChatApps.maximumCount

    private let keys: [HMACSHA256Key]

    /// Whether `subject` may be a token's `sub` (a user id: `subjectRule`).
    public static func isValidSubject(_ subject: String) -> Bool { UserID.isValid(subject) }
    public static let subjectRule = UserID.rule

    public init(secrets: [String]) {
        keys = secrets.map { HMACSHA256Key(Array($0.utf8)) }
    }

    /// The claims of `token`, or the rule it broke.
    public func verify(_ token: some StringProtocol, now: Date) throws(AppTokenError) -> AppTokenClaims {
        let bytes = Array(token.utf8)
        guard bytes.count <= Self.maximumLength else { throw .tooLong }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty else { throw .segments }
        guard let headerBytes = Base64.decode(parts[0], .urlUnpadded) else { throw .badBase64(segment: "header") }
        let header = try Self.object(headerBytes, segment: "header")
        // Before the other segments: an unsigned `alg: none` token (its signature empty) is
        // refused for what it is, not for its shape.
        guard header["alg"] == .string("HS256") else { throw .algorithm }
        guard header["crit"] == nil else { throw .criticalHeader }
        if let type = header["typ"], type.stringValue?.uppercased() != "JWT" { throw .type }
        guard !parts[1].isEmpty, !parts[2].isEmpty else { throw .segments }
        guard let signature = Base64.decode(parts[2], .urlUnpadded) else { throw .badBase64(segment: "signature") }
        let signingInput = Array(bytes[..<parts[1].endIndex])
        var verified = false
        for key in keys where ConstantTime.equal(key.authenticationCode(for: signingInput), signature) { verified = true }
        guard verified else { throw .signature }
        guard let payloadBytes = Base64.decode(parts[1], .urlUnpadded) else { throw .badBase64(segment: "payload") }
        return try Self.claims(try Self.object(payloadBytes, segment: "payload"), now: Int(now.timeIntervalSince1970))
    }

    private static func object(_ bytes: [UInt8], segment: String) throws(AppTokenError) -> [String: JSONValue] {
        do {
            return try JSONValue.parseObject(bytes)
        } catch {
            switch error.reason {
            case .duplicateKey: throw .duplicateKey(segment: segment)
            case .numberOutOfRange: throw .numberOutOfRange(segment: segment, member: error.member.map { String($0.prefix(32)) })
            default: throw .notJSONObject(segment: segment)
            }
        }
    }

    private static func claims(_ payload: [String: JSONValue], now: Int) throws(AppTokenError) -> AppTokenClaims {
        // The user id every order of this token will carry: the same rule as a client's user_id.
        guard let subject = payload["sub"]?.stringValue, UserID.isValid(subject) else { throw .subject }
        // aud is one string, or (RFC 7519 §4.1.3) an array of them that names this gateway.
        switch payload["aud"] {
        case .string(audience)?: break
        case .array(let values)? where values.contains(.string(audience)): break
        default: throw .audience
        }
        guard let issuedAt = seconds(payload["iat"]) else { throw .issuedAt }
        guard let expiresAt = seconds(payload["exp"]) else { throw .expiry }
        var notBefore: Int?
        if let value = payload["nbf"] {
            guard let seconds = seconds(value) else { throw .notBefore }
            notBefore = seconds
        }
        guard expiresAt > issuedAt, expiresAt - issuedAt <= maximumLifetime else { throw .lifetime }
        guard issuedAt <= now + clockSkew else { throw .issuedInFuture }
        if let notBefore, notBefore > now + clockSkew { throw .notYetValid }
        guard expiresAt + clockSkew > now else { throw .expired }
        return AppTokenClaims(subject: subject, issuedAt: issuedAt, expiresAt: expiresAt, apps: try apps(payload["apps"]))
    }

    /// `apps`, when present: a non-empty array of app names (an empty one would be a token good
    /// for nothing, more likely a backend's bug than its intent, so it is refused, not read as none).
    static func apps(_ value: JSONValue?) throws(AppTokenError) -> Set<String>? {
        guard let value else { return nil }
        guard case .array(let items) = value, (1...maximumApps).contains(items.count) else { throw .apps }
        var names: Set<String> = []
        for item in items {
            guard let name = item.stringValue, GatewayConfiguration.isAppName(name) else { throw .apps }
            names.insert(name)
        }
        return names
    }

    /// A NumericDate: seconds since 1970, whole or not (the fraction is dropped), within a sane range.
    private static func seconds(_ value: JSONValue?) -> Int? {
        switch value {
        case .int(let seconds)? where (0...253_402_300_799).contains(seconds): seconds
        case .double(let seconds)? where seconds >= 0 && seconds < 253_402_300_800: Int(seconds.rounded(.down))
        default: nil
        }
    }
}

/// Mints app tokens: what `wxpay-gateway app-token` prints and demo mode shows at start. A
/// backend with a JWT library mints the same tokens itself (README: Python, Java, Node).
public struct AppTokenMinter: Sendable {
    private let key: HMACSHA256Key

    public init(secret: String) {
        key = HMACSHA256Key(Array(secret.utf8))
    }

    /// A token for `subject`, issued at `now` and valid for `ttl` seconds; with `apps`, good only
    /// for creates through those apps.
    public func token(subject: String, now: Date, ttl: Int, apps: [String]? = nil) -> String {
        let issuedAt = Int(now.timeIntervalSince1970)
        var payload = JSONObjectWriter(capacity: 128)
        if let apps { payload.strings("apps", apps) }
        payload.string("aud", AppTokenVerifier.audience)
        payload.number("exp", issuedAt + ttl)
        payload.number("iat", issuedAt)
        payload.string("sub", subject)
        let signingInput = Base64.encode(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8), .urlUnpadded) + "."
            + Base64.encode(payload.finish(), .urlUnpadded)
        return signingInput + "." + Base64.encode(key.authenticationCode(for: Array(signingInput.utf8)), .urlUnpadded)
    }
}
