// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway

/// `wxpay-gateway app-token --sub USER [--ttl SECONDS] [--apps NAME,…] [--secret-file FILE]`: prints an app token
/// (HS256 JWT) for one user, signed with the first of GATEWAY_APP_TOKEN_SECRETS or the secret in
/// FILE. For tests, and for backends without a JWT library (the README shows how to mint one in
/// Python, Java and Node).
enum AppTokenCommand {
    static let usage = """
        usage: wxpay-gateway app-token --sub USER [--ttl SECONDS] [--apps NAME,…] [--secret-file FILE]
          --sub USER          the app user's id (1 to 64 bytes, no whitespace, control or invisible characters), the token's sub
          --ttl SECONDS       how long the token is valid, 1 to 86400 (default 3600)
          --apps NAME,…       the only apps (names in WXPAY_APPS) it may create orders through,
                              checked against WXPAY_APPS (or WXPAY_APP_ID's app, app) when set;
                              default: every app (no apps claim)
          --secret-file FILE  the HS256 secret (at least 32 bytes; a trailing newline is ignored);
                              default: the first of GATEWAY_APP_TOKEN_SECRETS
        """

    static func run(_ arguments: [String]) -> Int32 {
        var subject: String?
        var ttl = 3600
        var secretFile: String?
        var apps: [String]?
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--sub": subject = rest.popFirst()
            case "--ttl":
                guard let value = rest.popFirst().flatMap(Int.init), (1...AppTokenVerifier.maximumLifetime).contains(value) else {
                    return fail("--ttl must be a number of seconds from 1 to \(AppTokenVerifier.maximumLifetime)")
                }
                ttl = value
            case "--secret-file": secretFile = rest.popFirst()
            case "--apps":
                let names = (rest.popFirst() ?? "").split(separator: ",", omittingEmptySubsequences: false).map(String.init)
                guard (1...AppTokenVerifier.maximumApps).contains(names.count), names.allSatisfy(GatewayConfiguration.isAppName) else {
                    return fail("--apps must be 1 to \(AppTokenVerifier.maximumApps) app names (lower-case letters, digits, - and _), comma-separated")
                }
                guard apps == nil, Set(names).count == names.count else {
                    return fail("--apps is given once, each app named once")
                }
                apps = names
            case "--help", "-h":
                print(usage)
                return 0
            default: return fail("unknown argument \(argument.prefix(40))")
            }
        }
        let environment = Environment(ProcessInfo.processInfo.environment)
        // A name the gateway does not have makes a token that can never create anything.
        if let apps {
            switch GatewayConfiguration.configuredAppNames(environment) {
            case .failure(let error)?:
                return fail("--apps cannot be checked: the gateway would refuse this WXPAY_APPS (\(error))")
            case .success(let known)?:
                let unknown = apps.filter { !known.contains($0) }
                guard unknown.isEmpty else {
                    return fail("--apps names \(unknown.joined(separator: ", ")), not an app of this gateway (its apps: \(known.joined(separator: ", ")))")
                }
            case nil:
                break
            }
        }
        guard let subject else { return fail("--sub USER (\(AppTokenVerifier.subjectRule)) is required") }
        guard AppTokenVerifier.isValidSubject(subject) else {
            return fail("--sub must be a user id: \(AppTokenVerifier.subjectRule)")
        }
        let secret: String
        if let secretFile {
            guard let data = FileManager.default.contents(atPath: secretFile) else { return fail("cannot read \(secretFile)") }
            var text = String(decoding: data, as: UTF8.self)
            while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
            secret = text
        } else {
            let secrets = environment.get("GATEWAY_APP_TOKEN_SECRETS") ?? ""
            guard let first = secrets.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) })
                .first(where: { !$0.isEmpty })
            else {
                return fail("no secret: set GATEWAY_APP_TOKEN_SECRETS or give --secret-file FILE")
            }
            secret = first
        }
        guard secret.utf8.count >= AppTokenVerifier.minimumSecretBytes else {
            return fail("the secret must be at least \(AppTokenVerifier.minimumSecretBytes) bytes")
        }
        print(AppTokenMinter(secret: secret).token(subject: subject, now: Date(), ttl: ttl, apps: apps))
        return 0
    }

    private static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("app-token: \(message)\n\(usage)\n".utf8))
        return 64
    }
}
