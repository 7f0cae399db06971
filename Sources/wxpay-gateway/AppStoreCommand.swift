// SPDX-License-Identifier: Apache-2.0
import AppStore
import Crypto
import Foundation
import JSON

/// `wxpay-gateway appstore verify|token|backfill`: App Store signed data and Server API tokens by
/// hand, and a by-hand read of the notification history (AppStoreBackfillCommand.swift).
enum AppStoreCommand {
    static let usage = """
        usage: wxpay-gateway appstore verify --root-ca FILE [--allow-untrusted-root] --bundle-id B
                                             [--environment Production|Sandbox] [--app-apple-id N]
               wxpay-gateway appstore token --key-file P8 --key-id K --issuer I --bundle-id B
               wxpay-gateway appstore backfill --since DATE
        verify reads one JWS from standard input — a signedTransactionInfo, a signedRenewalInfo or a
        notification signedPayload, told apart by its payload — checks it (chain to the root in FILE,
        PEM or DER, at the payload's signedDate; both Apple OIDs; ES256; bundle id, environment, app
        id) and prints the verified payload as JSONValue (a notification with its transaction and renewal
        info decoded too). Without --environment either is accepted and the output names it. A root
        other than Apple Root CA - G3 needs --allow-untrusted-root (simulators, tests).
        Exit status: 0 verified; 1 refused (the rule is named on standard error); 2 usage or
        configuration error.
        token prints an App Store Server API bearer token (ES256 JWT, valid 5 minutes) made with the
        In-App Purchase key in P8.
        backfill reads the App Store's notification history from DATE (a Beijing day YYYY-MM-DD, or
        RFC 3339) to now with the gateway's configuration, and handles every notification it never
        handled (what serve does every APPSTORE_BACKFILL_INTERVAL seconds); exit 0 done, 1 some could
        not be handled, 69 the App Store failed or another instance is reading it.
        """

    static func run(_ arguments: [String]) async -> Int32 {
        switch arguments.first {
        case "verify": return verify(Array(arguments.dropFirst()))
        case "token": return token(Array(arguments.dropFirst()))
        case "backfill": return await AppStoreBackfillCommand.run(Array(arguments.dropFirst()))
        case "-h", "--help":
            print(usage)
            return 0
        default: return fail("appstore needs a subcommand: verify, token or backfill")
        }
    }

    /// Parses `--name value` options and the given flags; nil (after printing why) on a bad one.
    private static func options(_ arguments: [String], values: Set<String>, flags: Set<String> = [])
        -> [String: String]?
    {
        var result: [String: String] = [:]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if flags.contains(argument) {
                result[argument] = ""
                index += 1
            } else if values.contains(argument), index + 1 < arguments.count {
                result[argument] = arguments[index + 1]
                index += 2
            } else {
                _ = fail("unknown or incomplete option \(argument.prefix(40))")
                return nil
            }
        }
        return result
    }

    private static func verify(_ arguments: [String]) -> Int32 {
        guard let options = options(arguments, values: ["--root-ca", "--bundle-id", "--environment", "--app-apple-id"],
                                    flags: ["--allow-untrusted-root"]) else { return 2 }
        guard let rootPath = options["--root-ca"] else { return fail("--root-ca FILE is required") }
        guard let bundleID = options["--bundle-id"], !bundleID.isEmpty else { return fail("--bundle-id is required") }
        var environment: AppStoreEnvironment?
        if let name = options["--environment"] {
            guard let value = AppStoreEnvironment(rawValue: name) else { return fail("--environment must be Production or Sandbox") }
            environment = value
        }
        var appAppleID: Int64?
        if let text = options["--app-apple-id"] {
            guard let value = Int64(text), value > 0 else { return fail("--app-apple-id must be a positive number") }
            appAppleID = value
        }
        guard let rootBytes = FileManager.default.contents(atPath: rootPath), rootBytes.count <= 64 * 1024 else {
            return fail("cannot read the root certificate \(rootPath)")
        }
        let verifier: SignedDataVerifier
        do {
            let roots = try TrustedRoots.load(Array(rootBytes), allowUntrustedRoot: options["--allow-untrusted-root"] != nil)
            verifier = try SignedDataVerifier(roots: roots, bundleID: bundleID, environment: environment, appAppleID: appAppleID)
        } catch {
            return fail("\(error)")
        }
        // One byte past the JWS limit is enough to know it is too large; never more.
        var input = Data()
        while input.count <= 64 * 1024, let chunk = try? FileHandle.standardInput.read(upToCount: 64 * 1024 + 1 - input.count),
              !chunk.isEmpty {
            input.append(chunk)
        }
        let token = String(decoding: input, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        do {
            let verified = try verifier.verify(token)
            print(output(verified, token: token, verifier: verifier).serialized())
            return 0
        } catch {
            FileHandle.standardError.write(Data("appstore verify: refused: \(error)\n".utf8))
            return 1
        }
    }

    /// The verified payloads as JSON: `kind`, `environment`, `payload`, and for a notification its
    /// `transaction` and `renewalInfo` payloads.
    private static func output(_ verified: SignedDataVerifier.Verified, token: String, verifier: SignedDataVerifier) -> JSONValue {
        // Every token here was verified a moment ago; reading the payloads again cannot fail.
        let payload = (try? verifier.verifiedPayload(token)) ?? .null
        switch verified {
        case .transaction(let transaction):
            return ["kind": "transaction", "environment": .string(transaction.environment.rawValue), "payload": payload]
        case .renewalInfo(let info):
            return ["kind": "renewal_info", "environment": .string(info.environment.rawValue), "payload": payload]
        case .notification(let notification):
            var result: [String: JSONValue] = [
                "kind": "notification", "environment": .string(notification.environment.rawValue), "payload": payload,
            ]
            let data = payload["data"] ?? payload["summary"]
            if let inner = data?["signedTransactionInfo"]?.stringValue { result["transaction"] = try? verifier.verifiedPayload(inner) }
            if let inner = data?["signedRenewalInfo"]?.stringValue { result["renewalInfo"] = try? verifier.verifiedPayload(inner) }
            return .object(result)
        }
    }

    private static func token(_ arguments: [String]) -> Int32 {
        guard let options = options(arguments, values: ["--key-file", "--key-id", "--issuer", "--bundle-id"]) else { return 2 }
        guard let keyFile = options["--key-file"], let keyID = options["--key-id"], !keyID.isEmpty,
              let issuer = options["--issuer"], !issuer.isEmpty, let bundleID = options["--bundle-id"], !bundleID.isEmpty
        else { return fail("token needs --key-file, --key-id, --issuer and --bundle-id") }
        guard let bytes = FileManager.default.contents(atPath: keyFile), bytes.count <= 16 * 1024 else {
            return fail("cannot read the key file \(keyFile)")
        }
        do {
            let key = try ES256PrivateKey(pem: String(decoding: bytes, as: UTF8.self))
            print(ServerAPICredentials(key: key, keyID: keyID, issuerID: issuer, bundleID: bundleID).token(issuedAt: Date()))
            return 0
        } catch {
            return fail("the key file: \(error)")
        }
    }

    private static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("appstore: \(message)\n\(usage)\n".utf8))
        return 2
    }
}
