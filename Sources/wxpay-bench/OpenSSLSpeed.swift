// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs `openssl speed -seconds S -bytes N -evp md5` and reads how many digests it computed.
enum OpenSSLSpeed {
    static func md5DigestsPerSecond(bytes: Int, seconds: Int) -> Double? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "speed", "-seconds", "\(seconds)", "-bytes", "\(bytes)", "-evp", "md5"]
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
        // "Doing md5 for 3s on 512 size blocks: 4213795 md5's in 2.99s" (wording varies by version)
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where line.hasPrefix("Doing ") {
            let words = line.split(separator: " ")
            guard let colon = words.firstIndex(where: { $0.hasSuffix(":") }), colon + 1 < words.count,
                  let count = Double(words[colon + 1]),
                  let last = words.last, last.hasSuffix("s"), let elapsed = Double(last.dropLast()), elapsed > 0
            else { continue }
            return count / elapsed
        }
        return nil
    }
}
