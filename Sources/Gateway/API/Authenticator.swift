// SPDX-License-Identifier: Apache-2.0
import COpenSSL

/// Who a bearer token belongs to. Client tokens (the app backend) create, read and close orders;
/// support tokens read orders, look them up and ask for a recheck.
enum Scope: Sendable, Hashable {
    case client
    case support
}

/// Checks `Authorization: Bearer …` against the configured tokens in constant time: every token is
/// compared in full, whether or not an earlier one matched, so timing says nothing about them.
struct Authenticator: Sendable {
    private let tokens: [(token: [UInt8], scope: Scope)]

    init(clientTokens: [String], supportTokens: [String]) {
        tokens = clientTokens.map { (Array($0.utf8), .client) } + supportTokens.map { (Array($0.utf8), .support) }
    }

    /// The scopes the header's token grants; empty when there is no valid token.
    func scopes(authorization: String?) -> Set<Scope> {
        guard let authorization, authorization.utf8.count <= 512 else { return [] }
        let prefix = "Bearer "
        guard authorization.hasPrefix(prefix) else { return [] }
        let presented = Array(authorization.utf8.dropFirst(prefix.utf8.count))
        var scopes = Set<Scope>()
        for entry in tokens where Self.constantTimeEqual(entry.token, presented) {
            scopes.insert(entry.scope)
        }
        return scopes
    }

    private static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        // Lengths are compared openly (a token's length is not a secret worth a padded compare);
        // the bytes are compared by OpenSSL's constant-time routine.
        guard a.count == b.count, !a.isEmpty else { return false }
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress!, y.baseAddress!, a.count) == 0 } }
    }
}
