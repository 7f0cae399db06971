// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Crypto
import Foundation
import JSON

/// `wxpay-bench jws`: App Store signed-transaction verifications per second on one thread, with
/// the verified chain cached (the steady state: Apple rotates leaves rarely) and uncached (a full
/// X509_STORE chain build per token), against `openssl speed ecdsap256`'s raw verify rate measured
/// in the same run. The goal: cached ≥ 0.5× the raw rate.
enum JWSBenchmark {
    static let command = BenchmarkCommand(
        name: "jws", summary: "App Store JWS verifications/s, chain cached and uncached, vs openssl speed ecdsap256",
        options: run)

    static let goal = 0.5

    static func run(_ options: BenchmarkOptions) throws {
        let pki = SimulatorPKI()
        let signedDate = Date(timeIntervalSince1970: 1_764_460_800)
        // A transaction shaped like Apple's (all the fields a one-time purchase carries).
        let transaction = AppStoreTransaction(
            transactionID: "2000000812345678", originalTransactionID: "2000000812345678", bundleID: "com.example.courses",
            productID: "course.swift.server.annual", type: .nonConsumable, quantity: 1, appAccountToken: UUID(),
            inAppOwnershipType: .purchased, environment: .production, purchaseDate: signedDate, originalPurchaseDate: signedDate,
            signedDate: signedDate, price: 68000, currency: "CNY", transactionReason: .purchase, storefront: "CHN")
        var payload = transaction.payload.objectValue!
        payload["storefrontId"] = "143465"
        payload["appTransactionId"] = "704289572311111111"
        let token = pki.sign(payload: .object(payload))
        let roots = try TrustedRoots([pki.root], allowUntrustedRoot: true)
        let cached = try SignedDataVerifier(roots: roots, bundleID: "com.example.courses", appAppleID: 1_234_567_890)
        let uncached = try SignedDataVerifier(roots: roots, bundleID: "com.example.courses", appAppleID: 1_234_567_890,
                                              leafCacheCapacity: 0)
        // A benchmark of a wrong answer is worthless: both must accept the token and decode it.
        guard try cached.verifyTransaction(token) == uncached.verifyTransaction(token),
              try cached.verifyTransaction(token).transactionID == "2000000812345678" else {
            throw BenchmarkFailure("the verifiers disagree on the benchmark token")
        }
        print("signed transaction: \(token.utf8.count) bytes (x5c of 3 certificates, \(payload.count) payload fields)")
        // The signature check alone, through the module's key (SHA-256 of the signing input and
        // ECDSA_do_verify): what is left of the cached figure is decoding and checking.
        let parts = token.split(separator: ".")
        let signingInput = Array((parts[0] + "." + parts[1]).utf8)
        let signature = Base64.decode(Array(parts[2].utf8), .urlUnpadded)!
        let key = pki.leafKey!.publicKey
        guard key.isValidSignature(signature, for: signingInput) else { throw BenchmarkFailure("the signature does not verify") }
        let results = try Throughput.interleaved([
            ("  verifyTransaction, chain cached", { blackHole(try cached.verifyTransaction(token)) }),
            ("  verifyTransaction, chain uncached", { blackHole(try uncached.verifyTransaction(token)) }),
            ("  ES256PublicKey.isValidSignature alone", { blackHole(key.isValidSignature(signature, for: signingInput)) }),
        ], options, batch: 50)
        guard options.reference else { return }
        guard let raw = OpenSSLSpeed.ecdsaP256PerSecond(seconds: 3) else {
            print("openssl speed: could not run or parse `openssl speed ecdsap256` (is the openssl CLI installed?)")
            return
        }
        print("openssl speed -seconds 3 ecdsap256: \(Throughput.format(raw.verify))/s raw P-256 verifies, \(Throughput.format(raw.sign))/s signs")
        for result in results.prefix(2) {
            print("\(result.label.trimmingCharacters(in: .whitespaces)) / raw verify: \(String(format2: result.median / raw.verify))x wall, "
                  + "\(String(format2: result.cpuMedian / raw.verify))x CPU")
        }
        let ratio = results[0].median / raw.verify
        print("  goal cached ≥ \(goal)x raw verify: \(ratio >= goal ? "PASS" : "FAIL") (\(String(format2: ratio))x)")
    }
}
