// SPDX-License-Identifier: Apache-2.0
import Foundation
import WeChatPay

/// `wxpay-bench sign`: signatures per second for a realistic 12-field unifiedorder, with both
/// algorithms, on one thread; compared with OpenSSL's raw MD5 speed measured in the same run.
enum SignBenchmark {
    static let command = BenchmarkCommand(
        name: "sign", summary: "sign a 12-field unifiedorder with MD5 and HMAC-SHA256", options: run)

    /// Issue bar for MD5 signatures per second on one core.
    static let md5Bar = 1_000_000.0

    static func run(_ options: BenchmarkOptions) throws {
        let signer = Signer(key: ProtocolFixtures.key)
        var results: [SignType: Throughput] = [:]
        for type in SignType.allCases {
            let fields = ProtocolFixtures.unifiedOrder(signType: type)
            let signingBytes = signer.signingString(for: fields).utf8.count + "&key=".utf8.count + 32
            let expected = signer.signature(for: fields, type: type)
            // A benchmark of a wrong answer is worthless: check against an independent computation.
            guard expected == ReferenceSignature.compute(fields, key: "8c1bd9e6a3f04b7d92e5c6a1f0d3b7e4", type: type) else {
                throw BenchmarkFailure("\(type) signature differs from the reference computation")
            }
            print("\(type): signing \(signingBytes) bytes (12 fields)")
            results[type] = Throughput.measure("  sign \(type)", options) {
                blackHole(signer.signature(for: fields, type: type))
            }
        }
        if let md5 = results[.md5] { reportBar(md5, bar: md5Bar) }
        if options.reference, let md5 = results[.md5] {
            if let raw = OpenSSLSpeed.md5DigestsPerSecond(bytes: 512, seconds: 3) {
                print("openssl speed -seconds 3 -bytes 512 -evp md5: \(Throughput.format(raw))/s raw 512-byte MD5 digests")
                print("  MD5 signatures / raw 512-byte digests: \(String(format1: md5.median / raw * 100))%")
            } else {
                print("openssl speed: could not run or parse `openssl speed` (is the openssl CLI installed?)")
            }
        }
    }
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
