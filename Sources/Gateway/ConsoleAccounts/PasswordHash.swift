// SPDX-License-Identifier: Apache-2.0
import Crypto
import Dispatch
import Synchronization

/// A console password as the user file stores it: scrypt (Crypto's, OpenSSL's `EVP_PBE_scrypt`) with
/// a per-user random salt, written as a PHC string, `$scrypt$ln=17,r=8,p=1$<salt>$<hash>` (salt and
/// hash in unpadded base64url).
///
/// The cost is OWASP's floor for scrypt: N = 2^17, r = 8, p = 1 (128 MiB and a few hundred
/// milliseconds per check), and a file entry below it is refused when the file is read, so a
/// hand-edited weak hash never protects a console account. Entries above a ceiling are refused
/// too: a check must stay bounded in memory and time.
public struct PasswordHash: Sendable, Hashable, CustomStringConvertible {
    public struct Parameters: Sendable, Hashable {
        /// log2 of scrypt's N.
        public var logN: Int
        public var r: Int
        public var p: Int

        public static let standard = Parameters(logN: 17, r: 8, p: 1)
        static let minimum = standard
        static let maximum = Parameters(logN: 20, r: 16, p: 4)

        var isAllowed: Bool {
            (Self.minimum.logN...Self.maximum.logN).contains(logN) && (Self.minimum.r...Self.maximum.r).contains(r)
                && (Self.minimum.p...Self.maximum.p).contains(p)
        }
    }

    public let parameters: Parameters
    let salt: [UInt8]
    let hash: [UInt8]

    static let saltBytes = 16
    static let hashBytes = 32

    /// A fresh hash of `password` with a random salt. Runs scrypt on the calling thread: call it
    /// off the cooperative pool (`PasswordChecks` does, the CLI runs on its own).
    public static func make(_ password: String, parameters: Parameters = .standard) -> PasswordHash? {
        let salt = RandomBytes.take(saltBytes)
        guard let hash = derive(password, salt: salt, parameters: parameters) else { return nil }
        return PasswordHash(parameters: parameters, salt: salt, hash: hash)
    }

    /// A fresh random password that can be typed and pasted (base64url of `bytes` random bytes):
    /// demo mode's own user gets one.
    public static func randomPassword(bytes: Int = 12) -> String {
        Base64.encode(RandomBytes.take(bytes), .urlUnpadded)
    }

    /// Whether `password` is the one hashed here, compared in constant time. Runs scrypt on the
    /// calling thread.
    public func matches(_ password: String) -> Bool {
        guard let derived = Self.derive(password, salt: salt, parameters: parameters) else { return false }
        return ConstantTime.equal(derived, hash)
    }

    /// Parses a stored PHC string; nil when it is not one this gateway accepts.
    public init?(encoded text: String) {
        let parts = text.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0].isEmpty, parts[1] == "scrypt" else { return nil }
        var values: [String: Int] = [:]
        for item in parts[2].split(separator: ",") {
            let pair = item.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, let value = Int(pair[1]), values[String(pair[0])] == nil else { return nil }
            values[String(pair[0])] = value
        }
        guard values.count == 3, let logN = values["ln"], let r = values["r"], let p = values["p"] else { return nil }
        let parameters = Parameters(logN: logN, r: r, p: p)
        guard parameters.isAllowed, let salt = Base64.decode(parts[3].utf8, .urlUnpadded), salt.count >= Self.saltBytes,
              let hash = Base64.decode(parts[4].utf8, .urlUnpadded), hash.count == Self.hashBytes
        else { return nil }
        self.init(parameters: parameters, salt: salt, hash: hash)
    }

    init(parameters: Parameters, salt: [UInt8], hash: [UInt8]) {
        self.parameters = parameters
        self.salt = salt
        self.hash = hash
    }

    /// The PHC string stored in the user file.
    public var encoded: String {
        "$scrypt$ln=\(parameters.logN),r=\(parameters.r),p=\(parameters.p)$\(Base64.encode(salt, .urlUnpadded))$\(Base64.encode(hash, .urlUnpadded))"
    }

    /// Never the hash itself, so a log line or an error cannot carry it.
    public var description: String { "PasswordHash(scrypt ln=\(parameters.logN))" }

    private static func derive(_ password: String, salt: [UInt8], parameters: Parameters) -> [UInt8]? {
        Scrypt.derive(password: Array(password.utf8), salt: salt, logN: parameters.logN, r: parameters.r, p: parameters.p,
                      length: hashBytes)
    }
}

/// Password checks for the login form: each one is scrypt's 128 MiB and hundreds of milliseconds,
/// so they run on threads of their own (never the cooperative pool), two at a time at most, with
/// a bounded queue: a flood of logins costs bounded memory and is answered "busy", not by
/// exhausting the machine.
public final class PasswordChecks: Sendable {
    private let queue = DispatchQueue(label: "wxpay.console.passwords", attributes: .concurrent)
    private let slots: DispatchSemaphore
    private let waiting = Mutex<Int>(0)
    let maximumWaiting: Int

    public init(concurrency: Int = 2, maximumWaiting: Int = 32) {
        slots = DispatchSemaphore(value: concurrency)
        self.maximumWaiting = maximumWaiting
    }

    /// Whether `password` matches `hash`; nil when too many checks are queued already.
    public func check(_ password: String, against hash: PasswordHash) async -> Bool? {
        let admitted = waiting.withLock { count -> Bool in
            guard count < maximumWaiting else { return false }
            count += 1
            return true
        }
        guard admitted else { return nil }
        return await withCheckedContinuation { continuation in
            queue.async { [self] in
                slots.wait()
                let matched = hash.matches(password)
                slots.signal()
                waiting.withLock { $0 -= 1 }
                continuation.resume(returning: matched)
            }
        }
    }
}

extension PasswordHash {
    /// A hash no password matches (random bytes, never derived): what an unknown name is checked
    /// against, with the real cost.
    public init(unmatchable parameters: Parameters) {
        self.init(parameters: parameters, salt: RandomBytes.take(Self.saltBytes), hash: RandomBytes.take(Self.hashBytes))
    }
}
