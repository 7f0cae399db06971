// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation

/// What a bearer token may do. Client tokens (the app backend) create, read and close any order;
/// support tokens read orders, look them up, recheck and redrive; app tokens (one user, minted by
/// the backend) buy catalog products and see only that user's orders.
enum Scope: Sendable, Hashable {
    case client
    case support
    case app
}

/// Who made a request, once their token checked out.
struct Caller: Sendable, Hashable {
    var scopes: Set<Scope>
    /// The app user (`sub`) of an app token; nil for client and support tokens.
    var appUser: String?
    /// The apps an app token may create orders through (`apps`); nil: every app.
    var appsAllowed: Set<String>? = nil
    /// Who a static token is, for the audit log: `support token 1a2b3c4d` (the first 8 hex digits
    /// of the token's SHA-256, never the token itself).
    var tokenName: String?
}

/// Checks `Authorization: Bearer …` (the scheme in any case). Client and support tokens are compared with the configured
/// ones in constant time: every token in full, whether or not an earlier one matched, so timing
/// says nothing about them. A token that matches none and has the shape of a JWT (it has a dot)
/// is verified as an app token when app token secrets are configured; its failure is 401
/// `invalid_token` saying which rule failed, where an unknown opaque token is 401 `unauthorized`.
struct Authenticator: Sendable {
    enum Outcome: Sendable, Hashable {
        case granted(Caller)
        /// No token, or an opaque one nobody configured.
        case unknown
        /// An app token that broke a rule.
        case invalid(AppTokenError)
    }

    private let tokens: [(token: [UInt8], scope: Scope, name: String)]
    private let appTokens: AppTokenVerifier?

    init(clientTokens: [String], supportTokens: [String], appTokenSecrets: [String] = []) {
        tokens = clientTokens.map { (Array($0.utf8), .client, "client token " + Self.fingerprint($0)) }
            + supportTokens.map { (Array($0.utf8), .support, "support token " + Self.fingerprint($0)) }
        appTokens = appTokenSecrets.isEmpty ? nil : AppTokenVerifier(secrets: appTokenSecrets)
    }

    func authenticate(authorization: String?, now: Date) -> Outcome {
        guard let authorization, let presented = Self.bearerCredentials(authorization) else { return .unknown }
        if let appTokens, presented.contains(UInt8(ascii: ".")) || presented.count > AppTokenVerifier.maximumLength {
            // Static tokens are compared too, so a configured token with a dot still works.
            if let caller = staticCaller(presented) { return .granted(caller) }
            do {
                let claims = try appTokens.verify(Substring(presented), now: now)
                return .granted(Caller(scopes: [.app], appUser: claims.subject, appsAllowed: claims.apps))
            } catch {
                return .invalid(error)
            }
        }
        guard presented.count <= 512, let caller = staticCaller(presented) else { return .unknown }
        return .granted(caller)
    }

    /// The credentials of `Bearer <token>`: the scheme in any case (RFC 9110 §11.1: `bearer`,
    /// `BEARER`), then one or more spaces; nil for another scheme or none.
    static func bearerCredentials(_ authorization: String) -> Substring.UTF8View? {
        let bytes = Substring(authorization).utf8
        let scheme = "bearer".utf8
        guard bytes.count > scheme.count,
              zip(bytes.prefix(scheme.count), scheme).allSatisfy({ $0 | 0x20 == $1 }),
              bytes.dropFirst(scheme.count).first == UInt8(ascii: " ")
        else { return nil }
        let credentials = bytes.dropFirst(scheme.count).drop(while: { $0 == UInt8(ascii: " ") })
        return credentials.isEmpty ? nil : credentials
    }

    private func staticCaller(_ presented: Substring.UTF8View) -> Caller? {
        guard presented.count <= 512 else { return nil }
        let bytes = Array(presented)
        var scopes = Set<Scope>()
        var name: String?
        for entry in tokens where !entry.token.isEmpty && ConstantTime.equal(entry.token, bytes) {
            scopes.insert(entry.scope)
            // A token listed as both is named by its support side: that is what the audit is about.
            if name == nil || entry.scope == .support { name = entry.name }
        }
        return scopes.isEmpty ? nil : Caller(scopes: scopes, tokenName: name)
    }

    /// The first 8 hex digits of the token's SHA-256: enough to tell configured tokens apart in
    /// the audit log, nothing to guess a token from.
    static func fingerprint(_ token: String) -> String {
        String(Hex.encode(SHA256.hash(token)).prefix(8))
    }
}

extension Caller {
    /// The user whose orders alone this caller may see: an app token's `sub`; nil (every order)
    /// for client and support tokens.
    var owner: String? { appUser }
}
