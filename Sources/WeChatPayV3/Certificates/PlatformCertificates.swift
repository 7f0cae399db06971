// SPDX-License-Identifier: Apache-2.0
import Crypto
import JSON
import Synchronization
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
        guard let entries = document.value["data"]?.arrayValue else { throw .missing("data") }
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

/// RFC 3339 times as v3 writes them: Beijing time with its offset, `2018-06-08T10:34:56+08:00`.
public enum RFC3339 {
    public static func format(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down)) + 8 * 3600
        let days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400
        let rest = seconds - days * 86400
        let (year, month, day) = civil(fromDays: days)
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(year)-\(two(month))-\(two(day))T\(two(rest / 3600)):\(two(rest / 60 % 60)):\(two(rest % 60))+08:00"
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS` with `Z` or `±HH:MM` (fractions of a second are refused: v3 writes none).
    public static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 20 || bytes.count == 25 else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            guard bytes[range].allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
            return Int64(String(decoding: bytes[range], as: UTF8.self))
        }
        guard bytes[4] == 0x2D, bytes[7] == 0x2D, bytes[10] == UInt8(ascii: "T"), bytes[13] == 0x3A, bytes[16] == 0x3A,
              let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
              let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60
        else { return nil }
        var offset: Int64 = 0
        if bytes.count == 20 {
            guard bytes[19] == UInt8(ascii: "Z") else { return nil }
        } else {
            guard bytes[19] == 0x2B || bytes[19] == 0x2D, bytes[22] == 0x3A, let h = number(20..<22), let m = number(23..<25),
                  h < 24, m < 60 else { return nil }
            offset = (h * 3600 + m * 60) * (bytes[19] == 0x2B ? 1 : -1)
        }
        let days = daysFromCivil(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: TimeInterval(days * 86400 + hour * 3600 + minute * 60 + second - offset))
    }

    /// Howard Hinnant's days-from-civil and its inverse (proleptic Gregorian, 1970-01-01 = day 0).
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
