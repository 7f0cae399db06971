// SPDX-License-Identifier: Apache-2.0
import Crypto
import JSON
import Synchronization
import WeChatPay
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One platform certificate from a `GET /v3/certificates` download, decrypted and checked against
/// its entry: the serial matches, the key is RSA-2048 or more.
public struct PlatformCertificate: Sendable, Hashable {
    public let serialNumber: String
    public let certificate: Certificate
    public let key: RSAPublicKey

    public init(certificate: Certificate) throws(WeChatPayV3Error) {
        guard let serial = certificate.serialNumberHex, let key = try? RSAPublicKey(certificate: certificate) else {
            throw WeChatPayV3Error(.invalidCertificate)
        }
        self.serialNumber = serial
        self.certificate = certificate
        self.key = key
    }

    public static func == (lhs: PlatformCertificate, rhs: PlatformCertificate) -> Bool { lhs.certificate == rhs.certificate }
    public func hash(into hasher: inout Hasher) { hasher.combine(certificate) }

    /// Whether `now` is inside the certificate's validity.
    public func isValid(at now: Date) -> Bool {
        guard let validity = certificate.readableValidity else { return false }
        return validity.notBefore <= now && now <= validity.notAfter
    }
}

/// The `GET /v3/certificates` answer.
public enum PlatformCertificateDownload {
    public static let path = "/v3/certificates"
    public static var request: V3Request { V3Request(method: "GET", url: path) }

    /// The certificates of a download body, each decrypted with the APIv3 key and checked against
    /// its `serial_no`. Trust is not decided here: see ``PlatformCertificateStore/accept(_:now:)``.
    public static func certificates(in body: [UInt8], key: APIv3Key) throws(WeChatPayV3Error) -> [PlatformCertificate] {
        let document = try FieldReader.document(body)
        guard let entries = document.value("data")?.arrayValue else { throw .missing("data") }
        guard !entries.isEmpty, entries.count <= 16 else { throw .invalid("data") }
        var result: [PlatformCertificate] = []
        for entry in entries {
            let reader = FieldReader(entry, prefix: "data")
            let serial = try reader.string("serial_no", maxLength: 64)
            guard let encrypted = entry["encrypt_certificate"] else { throw .missing("data.encrypt_certificate") }
            let pem = try EncryptedResource(json: encrypted).decrypt(with: key)
            guard let certificate = Certificate(pemOrDER: pem) else { throw WeChatPayV3Error(.invalidCertificate) }
            let platform = try PlatformCertificate(certificate: certificate)
            guard platform.serialNumber == serial.uppercased().drop(while: { $0 == "0" }) else {
                throw WeChatPayV3Error(.invalidCertificate, "serial_no")
            }
            result.append(platform)
        }
        return result
    }

    /// The body WeChat answers (the simulator's half): each certificate's PEM encrypted with the
    /// APIv3 key under `associated_data` "certificate".
    public static func body(_ certificates: [PlatformCertificate], key: APIv3Key, nonces: [String]) -> [UInt8] {
        let entries: [JSONValue] = zip(certificates, nonces).map { platform, nonce in
            let validity = platform.certificate.validity
            return [
                "serial_no": .string(platform.serialNumber),
                "effective_time": .string(RFC3339.format(validity.notBefore)),
                "expire_time": .string(RFC3339.format(validity.notAfter)),
                "encrypt_certificate": EncryptedResource.seal(Array(platform.certificate.pem.utf8), key: key, nonce: nonce,
                                                              associatedData: "certificate").json,
            ]
        }
        return JSONValue.object(["data": .array(entries)]).bytes()
    }
}

/// The platform certificates a merchant trusts, with rotation: a new download is trusted only when
/// its answer's signature verifies under a key already trusted (a pinned certificate the operator
/// configured, a certificate trusted before, or the WeChat Pay public key); the first download is
/// pinned that way too, never trusted by itself. Old and new certificates stay side by side (a
/// notify signed with the old one during a rotation still verifies) until they expire.
///
/// Shared by every verification and refreshed every 12 hours, hence a class with a mutex.
public final class PlatformCertificateStore: Sendable {
    private struct State {
        var bySerial: [String: PlatformCertificate] = [:]
    }

    private let state: Mutex<State>
    /// A key that may vouch for a download though no certificate is trusted yet (the WeChat Pay
    /// public key of a merchant migrating, with its id).
    private let pinnedPublicKey: WeChatPayPublicKey?

    /// - Parameters:
    ///   - pinned: the operator's platform certificate(s) (`WXPAY_PLATFORM_CERT_FILE`), trusted as given.
    ///   - pinnedPublicKey: the WeChat Pay public key, when the operator has one.
    public init(pinned: [PlatformCertificate] = [], pinnedPublicKey: WeChatPayPublicKey? = nil) {
        var state = State()
        for certificate in pinned { state.bySerial[certificate.serialNumber] = certificate }
        self.state = Mutex(state)
        self.pinnedPublicKey = pinnedPublicKey
    }

    /// Every trusted certificate, by serial.
    public var certificates: [PlatformCertificate] {
        state.withLock { $0.bySerial.values.sorted { $0.serialNumber < $1.serialNumber } }
    }

    /// The key of the trusted certificate `serial` names, if it is valid at `now`.
    public func key(for serial: String, at now: Date) throws(WeChatPayV3Error) -> RSAPublicKey {
        let found = state.withLock { $0.bySerial[serial.uppercased()] }
        guard let found else { throw WeChatPayV3Error(.unknownSerial) }
        guard found.isValid(at: now) else { throw WeChatPayV3Error(.certificateNotValidNow) }
        return found.key
    }

    /// The serial of the valid certificate that became valid last (the one a rotation introduced).
    public func newestSerial(at now: Date) -> String? {
        state.withLock { state in
            state.bySerial.values.filter { $0.isValid(at: now) }
                .max { $0.certificate.validity.notBefore < $1.certificate.validity.notBefore }?.serialNumber
        }
    }

    /// Takes a `/v3/certificates` answer: its signature must verify under a key trusted before this
    /// call (never under a certificate the download itself brings), then its certificates are
    /// decrypted and added beside those already trusted. Returns the serials newly trusted.
    @discardableResult
    public func accept(_ message: V3SignedMessage, key: APIv3Key, now: Date) throws(WeChatPayV3Error) -> [String] {
        let verifier = V3Verifier(publicKey: pinnedPublicKey, platformCertificates: self)
        do {
            try verifier.verify(message, now: now)
        } catch where error.code == .unknownSerial || error.code == .badSignature || error.code == .certificateNotValidNow {
            throw WeChatPayV3Error(.untrustedDownload)
        }
        let downloaded = try PlatformCertificateDownload.certificates(in: message.body, key: key)
        return state.withLock { state in
            var added: [String] = []
            for certificate in downloaded where state.bySerial[certificate.serialNumber] == nil {
                state.bySerial[certificate.serialNumber] = certificate
                added.append(certificate.serialNumber)
            }
            // Expired certificates go; a certificate never leaves while it is still valid.
            state.bySerial = state.bySerial.filter { $0.value.certificate.validity.notAfter >= now }
            return added.sorted()
        }
    }
}

/// RFC 3339 times as v3 writes them: Beijing time with its offset, `2018-06-08T10:34:56+08:00`
/// (the calendar arithmetic is `BeijingTime`'s, v2's).
public enum RFC3339 {
    public static func format(_ date: Date) -> String {
        String(BeijingTime.formatWithSeparators(date).map { $0 == " " ? "T" : $0 }) + "+08:00"
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS` with `Z` or `±HH:MM` (fractions of a second are refused: v3 writes none).
    public static func parse(_ text: String) -> Date? {
        if let parsed = text.utf8.withContiguousStorageIfAvailable(parse) { return parsed }
        return Array(text.utf8).withUnsafeBufferPointer(parse)
    }

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        guard bytes.count == 20 || bytes.count == 25 else { return nil }
        var offset: Int64 = 0
        if bytes.count == 20 {
            guard bytes[19] == UInt8(ascii: "Z") else { return nil }
        } else {
            func digit(_ index: Int) -> Int64? {
                let value = bytes[index] &- UInt8(ascii: "0")
                return value < 10 ? Int64(value) : nil
            }
            guard bytes[19] == UInt8(ascii: "+") || bytes[19] == UInt8(ascii: "-"), bytes[22] == UInt8(ascii: ":"),
                  let h1 = digit(20), let h2 = digit(21), let m1 = digit(23), let m2 = digit(24),
                  h1 * 10 + h2 < 24, m1 * 10 + m2 < 60
            else { return nil }
            offset = ((h1 * 10 + h2) * 3600 + (m1 * 10 + m2) * 60) * (bytes[19] == UInt8(ascii: "+") ? 1 : -1)
        }
        // The wall time read as Beijing's, then moved by the difference between the offsets.
        guard let beijing = BeijingTime.parseWithSeparators(UnsafeBufferPointer(rebasing: bytes[0..<19]),
                                                            dateTimeSeparator: UInt8(ascii: "T")) else { return nil }
        return beijing + TimeInterval(8 * 3600 - offset)
    }
}
