// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import WeChatPayV3

/// `wxpay-bench v3`: WeChat Pay API v3's cryptography on one thread against `openssl speed`
/// measured in the same run: RSA-2048 SHA256withRSA signs and verifies (`openssl speed rsa2048`),
/// AES-256-GCM on 1 KiB (`openssl speed -bytes 1024 -evp aes-256-gcm`), and whole payment
/// notifies opened (parse the headers, verify over the raw body, parse the envelope, decrypt the
/// resource, read the transaction) against OpenSSL's raw RSA-2048 verify rate. Bars: ≥ 0.9× for
/// each primitive, ≥ 0.8× for the notify.
enum V3Benchmark {
    static let command = BenchmarkCommand(
        name: "v3", summary: "v3: RSA-2048 sign/verify, AES-256-GCM, notify open/s vs openssl speed", options: run)

    static let primitiveBar = 0.9
    static let notifyBar = 0.8

    static func run(_ options: BenchmarkOptions) throws {
        let merchantKey = RSAPrivateKey.generate()
        let wechatKey = RSAPrivateKey.generate()
        let apiV3Key = try APIv3Key("a7cde1ZJB1kG2e7VfTs3jQzaWizur8Gb")
        // A request's signing message as an APP order makes it (about 330 bytes).
        let order = try PrepayRequest(appID: "wxd678efh567hg6787", mchID: "1900000109", description: "Swift 服务端课程 · 年度会员",
                                         outTradeNo: "20261204133000000001", notifyURL: "https://pay.example.com/wechat/v3/notify",
                                         total: 68000, attach: "user=10086").request()
        let message = MerchantSigner.message(method: order.method, url: order.url, timestamp: 1_764_826_200,
                                             nonce: "593BEC0C930BF1AFEB40B4A08C8FB242", body: order.body)
        let signature = merchantKey.signature(for: message)
        let merchantPublic = merchantKey.publicKey
        guard merchantPublic.isValidSignature(signature, for: message) else { throw BenchmarkFailure("the signature does not verify") }
        guard merchantKey.key.signature(for: message, digest: .sha256) == signature else {
            throw BenchmarkFailure("the RSA fast path and EVP_DigestSign sign differently")
        }
        let plaintext = (0..<1024).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let nonce = Array("0123456789ab".utf8)
        let associatedData = Array("transaction".utf8)
        let sealed = try AES256GCM.encrypt(plaintext, key: apiV3Key.bytes, nonce: nonce, associatedData: associatedData)

        // A payment notify as WeChat sends it, signed now: the figure is the merchant's whole check.
        let transaction = V3Transaction(appID: "wxd678efh567hg6787", mchID: "1900000109", outTradeNo: "20261204133000000001",
                                        transactionID: "4200002345202612041234567890", tradeType: "APP", tradeState: .success,
                                        tradeStateDescription: "支付成功", bankType: "OTHERS", attach: "user=10086",
                                        successTime: "2026-12-04T13:30:05+08:00", payerOpenID: "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o",
                                        total: 68000, payerTotal: 68000)
        let body = V3NotifyBuilder(key: apiV3Key).body(.payment(transaction), id: "EV-2018022511223320873",
                                                        createTime: "2026-12-04T13:30:06+08:00", nonce: "fdasflkja484")
        let publicKey = try WeChatPayPublicKey(id: "PUB_KEY_ID_0119000001092024", key: wechatKey.publicKey)
        let opener = V3NotifyOpener(verifier: V3Verifier(publicKey: publicKey), key: apiV3Key, mchID: "1900000109")
        let now = Date()
        let headers = WeChatPaySigner(key: wechatKey, serial: publicKey.id)
            .sign(body, timestamp: Int64(now.timeIntervalSince1970), nonce: "aZ3vQ8sFbH2kLm9P").headers
        guard case .payment(let opened) = try opener.open(headers: headers, body: body, now: now), opened == transaction else {
            throw BenchmarkFailure("the notify does not open to its transaction")
        }
        print("signing message \(message.count) B; notify body \(body.count) B; AES-256-GCM on \(plaintext.count) B; "
              + "RSA public operation on \(merchantPublic.verifiesOnIFMA ? "AVX-512 IFMA" : "OpenSSL (no AVX-512 IFMA here)")")

        let results = try Throughput.interleaved([
            ("  RSA-2048 SHA256withRSA sign", { blackHole(merchantKey.signature(for: message)) }),
            // The general EVP path (EVP_DigestSignInit per call) the fast path above replaced for v3:
            // the same bytes, kept here so one run shows what the change is worth.
            ("    the same through EVP_DigestSign", { blackHole(merchantKey.key.signature(for: message, digest: .sha256)) }),
            ("  RSA-2048 SHA256withRSA verify", { blackHole(merchantPublic.isValidSignature(signature, for: message)) }),
            // The APIv3 key's expanded cipher, as every resource is opened.
            ("  AES-256-GCM encrypt 1 KiB", {
                blackHole(try apiV3Key.cipher.seal(plaintext, nonce: nonce, associatedData: associatedData))
            }),
            ("  AES-256-GCM decrypt 1 KiB", {
                blackHole(try apiV3Key.cipher.open(sealed, nonce: nonce, associatedData: associatedData))
            }),
            ("  notify: parse + verify + decrypt + read", { blackHole(try opener.open(headers: headers, body: body, now: now)) }),
            // Where a notify's time goes: the signature check alone, and everything but it.
            ("    of which: headers + verify", { blackHole(try opener.verifier.verify(headers: headers, body: body, now: now)) }),
            ("    of which: envelope + decrypt + read", {
                let envelope = try V3Notification(body: body)
                blackHole(try V3Transaction(body: try envelope.resource.decrypt(with: apiV3Key)))
            }),
        ], options, batch: 20)
        guard options.reference else { return }
        guard let rsa = OpenSSLSpeed.rsa2048PerSecond(seconds: 3),
              let gcm = OpenSSLSpeed.evpOperationsPerSecond("aes-256-gcm", bytes: 1024, seconds: 3) else {
            print("openssl speed: could not run or parse `openssl speed rsa2048` / `-evp aes-256-gcm`")
            return
        }
        print("openssl speed -seconds 3 rsa2048: \(Throughput.format(rsa.sign)) signs/s, \(Throughput.format(rsa.verify)) verifies/s")
        print("openssl speed -seconds 3 -bytes 1024 -evp aes-256-gcm: \(Throughput.format(gcm))/s")
        // Wall-clock medians and per-CPU-second rates: on a shared machine the second is the one
        // `openssl speed` (which counts its own CPU time) compares with.
        func verdict(_ label: String, _ result: Throughput, _ reference: Double, _ bar: Double) {
            let wall = result.median / reference, cpu = result.cpuMedian / reference
            print("  \(label): \(String(format2: wall))x wall, \(String(format2: cpu))x CPU (bar ≥ \(bar)x): "
                  + "\(max(wall, cpu) >= bar ? "PASS" : "FAIL")")
        }
        verdict("sign / openssl sign", results[0], rsa.sign, primitiveBar)
        verdict("EVP_DigestSign / openssl sign", results[1], rsa.sign, primitiveBar)
        verdict("verify / openssl verify", results[2], rsa.verify, primitiveBar)
        verdict("GCM encrypt / openssl aes-256-gcm", results[3], gcm, primitiveBar)
        verdict("GCM decrypt / openssl aes-256-gcm", results[4], gcm, primitiveBar)
        verdict("notify open / openssl verify", results[5], rsa.verify, notifyBar)
    }
}
