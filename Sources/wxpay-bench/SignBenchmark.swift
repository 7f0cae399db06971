// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import WeChatPay
import WeChatPayReference

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
            let message = Array((signer.signingString(for: fields) + "&key=8c1bd9e6a3f04b7d92e5c6a1f0d3b7e4").utf8)
            let expected = signer.signature(for: fields, type: type)
            // A benchmark of a wrong answer is worthless: check against an independent computation.
            guard expected == ReferenceSigner.signature(fields, key: "8c1bd9e6a3f04b7d92e5c6a1f0d3b7e4", type: type) else {
                throw BenchmarkFailure("\(type) signature differs from the reference computation")
            }
            print("\(type): signing \(message.count) bytes (12 fields)")
            let sign = ("  sign \(type)", { blackHole(signer.signature(for: fields, type: type)) })
            guard type == .md5 else {
                results[type] = try Throughput.measure(sign.0, options, sign.1)
                continue
            }
            // The hash alone on the very same bytes, in alternating rounds: what is left is the
            // signer's own cost (sorting, copying, hex), which is what this code controls.
            var digest = [UInt8](repeating: 0, count: 16)
            let raw = ("  raw MD5 of the same \(message.count) bytes", {
                message.withUnsafeBytes { bytes in digest.withUnsafeMutableBytes { MD5.hash(bytes, into: $0.baseAddress!) } }
            })
            let measured = try Throughput.interleaved([sign, raw], options)
            results[type] = measured[0]
            let overhead = (1 / measured[0].median - 1 / measured[1].median) * 1e9
            print("  signer's own cost beyond the hash: \(Int(overhead.rounded())) ns per signature")
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
