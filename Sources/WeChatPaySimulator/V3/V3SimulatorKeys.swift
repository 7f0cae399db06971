// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Synchronization
import WeChatPayV3

/// WeChat's side of v3 in the simulator: the keys it signs with (the public key's private half,
/// the platform certificates' keys, rotated on request), the merchant's key it checks requests
/// with, the notify signature faults, and the bills handed out for download.
final class V3SimulatorKeys: Sendable {
    struct PlatformKey: Sendable {
        var certificate: PlatformCertificate
        var key: RSAPrivateKey
    }

    struct State: Sendable {
        var platform: [PlatformKey] = []
        var notifySerial: String?
        var notifyFaults = V3NotifyFaults()
        var random: SeededRandom
        /// Bill download tokens → (bill text, gzip, expiry).
        var bills: [String: (text: [UInt8], gzip: Bool, expires: Date)] = [:]
        var nextSerial: UInt64
        /// Platform certificates issued so far: the next one's key is `platformKey(seed:rotation:)` of it.
        var rotations = 0
    }

    let configuration: V3SimulatorConfiguration
    let merchantKey: RSAPublicKey
    let merchantSerial: String
    let state: Mutex<State>
    private let seed: UInt64

    /// The platform keys of every simulator in this process, by seed and rotation: a simulator's
    /// n-th platform certificate is issued for the n-th key of its seed. An RSA-2048 key takes 50 to
    /// 500 ms of CPU to make, and a test run starts hundreds of simulators, most of them at once:
    /// making a key each had the whole suite waiting on key generation for 25 s at a time. Seeded
    /// like the rest of the simulator (the same seed, the same keys); a rotation still brings a key
    /// not used before by that simulator.
    private static let platformKeys = Mutex<[PlatformKeyIndex: RSAPrivateKey]>([:])

    private struct PlatformKeyIndex: Hashable {
        var seed: UInt64
        var rotation: Int
    }

    private static func platformKey(seed: UInt64, rotation: Int) -> RSAPrivateKey {
        let index = PlatformKeyIndex(seed: seed, rotation: rotation)
        if let made = platformKeys.withLock({ $0[index] }) { return made }
        // Made outside the lock, so one simulator's key does not hold up another's; if two make the
        // same one at once, the first kept is the one both use.
        let key = RSAPrivateKey.generate()
        return platformKeys.withLock { keys in
            if let made = keys[index] { return made }
            keys[index] = key
            return key
        }
    }

    init(configuration: V3SimulatorConfiguration, seed: UInt64, now: Date) {
        self.configuration = configuration
        guard let merchantKey = try? RSAPublicKey(certificate: configuration.merchantCertificate),
              let serial = configuration.merchantCertificate.serialNumberHex else {
            preconditionFailure(configuration.problem ?? "invalid v3 simulator configuration")
        }
        self.merchantKey = merchantKey
        merchantSerial = serial
        self.seed = seed
        var state = State(random: SeededRandom(seed: seed ^ 0x76_33), nextSerial: 0x3A5E_0000_0000 | (seed & 0xFFFF) << 16)
        state.notifySerial = configuration.publicKeyID
        self.state = Mutex(state)
        if configuration.platformCertificates { _ = rotate(now: now) }
    }

    /// Issues a new platform certificate valid from a day before `now` for five years; from now on
    /// it signs (the old one stays served and trusted beside it). Returns its serial.
    @discardableResult
    func rotate(now: Date) -> String {
        let (serial, rotation) = state.withLock { state -> (UInt64, Int) in
            state.nextSerial += 1
            defer { state.rotations += 1 }
            return (state.nextSerial, state.rotations)
        }
        let key = Self.platformKey(seed: seed, rotation: rotation)
        guard let certificate = CertificateIssuer.issue(
            .init(commonName: "Tenpay.com Root CA simulated platform", organization: "Tenpay.com", country: "CN"),
            key: key.key, issuer: nil, issuerKey: key.key, serial: serial,
            validity: (now - 86400)...(now + 5 * 365 * 86400), kind: .leaf),
            let platform = try? PlatformCertificate(certificate: certificate)
        else { preconditionFailure("the simulator could not issue a platform certificate") }
        state.withLock { state in
            state.platform.append(PlatformKey(certificate: platform, key: key))
            if configuration.publicKeyID == nil { state.notifySerial = platform.serialNumber }
        }
        return platform.serialNumber
    }

    var platformCertificates: [PlatformCertificate] { state.withLock { $0.platform.map(\.certificate) } }

    /// The signer for `serial` when it names one of WeChat's keys, else the default one: the public
    /// key when there is one, else the newest platform certificate.
    func signer(for serial: String?) -> WeChatPaySigner {
        state.withLock { state in
            if let serial, let publicKeyID = configuration.publicKeyID, serial == publicKeyID, let key = configuration.wechatpayKey {
                return WeChatPaySigner(key: key, serial: publicKeyID)
            }
            if let serial, let platform = state.platform.first(where: { $0.certificate.serialNumber == serial.uppercased() }) {
                return WeChatPaySigner(key: platform.key, serial: platform.certificate.serialNumber)
            }
            if let publicKeyID = configuration.publicKeyID, let key = configuration.wechatpayKey {
                return WeChatPaySigner(key: key, serial: publicKeyID)
            }
            let newest = state.platform[state.platform.count - 1]
            return WeChatPaySigner(key: newest.key, serial: newest.certificate.serialNumber)
        }
    }

    /// The serial notifies are signed with now.
    var notifySerial: String? {
        get { state.withLock { $0.notifySerial } }
    }

    /// Switches the key notifies are signed with; false when `serial` names no key of WeChat's.
    func setNotifySerial(_ serial: String) -> Bool {
        state.withLock { state in
            guard serial == configuration.publicKeyID || state.platform.contains(where: { $0.certificate.serialNumber == serial })
            else { return false }
            state.notifySerial = serial
            return true
        }
    }

    /// A nonce of `count` alphanumerics from the seeded generator.
    func nonce(_ count: Int = 32) -> String { state.withLock { $0.random.alphanumerics(count) } }

    /// The headers of one notify attempt: signed now with the notify key, or with the fault drawn.
    func notifyHeaders(for body: [UInt8], now: Date) -> [String: String] {
        let (nonce, probe, stale, bad, unknown) = state.withLock { state in
            let faults = state.notifyFaults
            return (state.random.alphanumerics(32), state.random.chance(faults.probeRate), state.random.chance(faults.staleTimestampRate),
                    state.random.chance(faults.badSignatureRate), state.random.chance(faults.unknownSerialRate))
        }
        var timestamp = Int64(now.timeIntervalSince1970.rounded(.down))
        if stale { timestamp -= 600 }
        var message = signer(for: notifySerial).sign(body, timestamp: timestamp, nonce: nonce)
        if probe { message.signature = V3SignedMessage.probePrefix + nonce }
        if bad { message.signature = Self.corrupt(message.signature) }
        if unknown { message.serial = "7FFFFFFFFFFFFFFF" }
        var headers = message.headers
        headers["Content-Type"] = "application/json"
        return headers
    }

    /// The signature with its first character changed: still base64, no longer valid.
    static func corrupt(_ signature: String) -> String {
        var characters = Array(signature)
        guard !characters.isEmpty else { return "AAAA" }
        characters[0] = characters[0] == "A" ? "B" : "A"
        return String(characters)
    }
}
