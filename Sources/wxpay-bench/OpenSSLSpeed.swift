// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs `openssl speed` and reads its figures: raw MD5 digests for the signer, raw P-256 ECDSA for
/// the App Store verifier.
enum OpenSSLSpeed {
    /// `openssl speed -seconds S -bytes N -evp md5`: digests per second.
    static func md5DigestsPerSecond(bytes: Int, seconds: Int) -> Double? {
        evpOperationsPerSecond("md5", bytes: bytes, seconds: seconds)
    }

    /// `openssl speed -seconds S -bytes N -evp CIPHER`: operations (of N bytes each) per second.
    static func evpOperationsPerSecond(_ algorithm: String, bytes: Int, seconds: Int) -> Double? {
        guard let output = run(["-seconds", "\(seconds)", "-bytes", "\(bytes)", "-evp", algorithm], seconds: seconds) else { return nil }
        // "Doing md5 for 3s on 512 size blocks: 4213795 md5's in 2.99s" (wording varies by version)
        for line in output.split(separator: "\n") where line.hasPrefix("Doing ") {
            let words = line.split(separator: " ")
            guard let colon = words.firstIndex(where: { $0.hasSuffix(":") }), colon + 1 < words.count,
                  let count = Double(words[colon + 1]),
                  let last = words.last, last.hasSuffix("s"), let elapsed = Double(last.dropLast()), elapsed > 0
            else { continue }
            return count / elapsed
        }
        return nil
    }

    /// `openssl speed -seconds S ecdsap256`: signs and verifies per second.
    static func ecdsaP256PerSecond(seconds: Int) -> (sign: Double, verify: Double)? {
        guard let output = run(["-seconds", "\(seconds)", "ecdsap256"], seconds: 2 * seconds) else { return nil }
        // " 256 bits ecdsa (nistp256)   0.0000s   0.0001s  41851.3  13579.8": sign/s and verify/s last.
        for line in output.split(separator: "\n") where line.contains("ecdsa (nistp256)") {
            let numbers = line.split(separator: " ").compactMap { Double($0) }
            if numbers.count >= 3, let verify = numbers.last, verify > 0 { return (numbers[numbers.count - 2], verify) }
        }
        return nil
    }

    /// `openssl speed -seconds S rsa2048`: signs and verifies per second.
    static func rsa2048PerSecond(seconds: Int) -> (sign: Double, verify: Double)? {
        guard let output = run(["-seconds", "\(seconds)", "rsa2048"], seconds: 4 * seconds) else { return nil }
        // "rsa 2048 bits 0.000245s 0.000016s   4081.0  61689.4" (3.0); 3.x later adds encrypt and
        // decrypt columns after sign/s and verify/s.
        for line in output.split(separator: "\n") where line.hasPrefix("rsa") && line.contains("2048 bits") {
            // After "bits": the times (with an "s"), then the rates: sign/s and verify/s first.
            let words = line.split(separator: " ")
            guard let bits = words.firstIndex(of: "bits") else { continue }
            let rates = words[(bits + 1)...].filter { !$0.hasSuffix("s") }.compactMap { Double($0) }
            if rates.count >= 2 { return (rates[0], rates[1]) }
        }
        return nil
    }

    private static func run(_ arguments: [String], seconds: Int) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "speed"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        // `openssl speed` times its runs with SIGALRM, and a child inherits the spawning thread's
        // signal mask: under the async main the thread has SIGALRM blocked, and openssl then
        // never stops. Spawn with nothing blocked, then put the mask back.
        var nothing = sigset_t()
        var saved = sigset_t()
        sigemptyset(&nothing)
        pthread_sigmask(SIG_SETMASK, &nothing, &saved)
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        do { try process.run() } catch { return nil }
        let watchdog = DispatchWorkItem { if process.isRunning { process.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(seconds + 30), execute: watchdog)
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        watchdog.cancel()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
