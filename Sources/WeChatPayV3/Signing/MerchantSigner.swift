// SPDX-License-Identifier: Apache-2.0
import Crypto

/// The merchant's request signature: SHA256withRSA (PKCS#1 v1.5) with the merchant API private key
/// over `METHOD\nURL\ntimestamp\nnonce\nbody\n`, sent as
/// `Authorization: WECHATPAY2-SHA256-RSA2048 mchid="…",nonce_str="…",signature="…",timestamp="…",serial_no="…"`.
///
/// ```swift
/// let signer = MerchantSigner(mchID: "1900000109", serialNumber: "5157F09EFDC096DE15EBE81A47057A72", key: key)
/// let header = signer.authorization(for: request, timestamp: 1_700_000_000, nonce: "593BEC0C930BF1AFEB40B4A08C8FB242")
/// ```
public struct MerchantSigner: Sendable {
    public static let scheme = "WECHATPAY2-SHA256-RSA2048"

    public let mchID: String
    /// The merchant API certificate's serial (uppercase hex), `serial_no` in the header.
    public let serialNumber: String
    public let key: RSAPrivateKey

    public init(mchID: String, serialNumber: String, key: RSAPrivateKey) {
        self.mchID = mchID
        self.serialNumber = serialNumber
        self.key = key
    }

    /// The bytes signed for a request: every line ends in `\n`, the last too; `url` is the path and
    /// query as sent, `body` the exact bytes sent (empty for GET).
    public static func message(method: String, url: String, timestamp: Int64, nonce: String, body: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(method.utf8.count + url.utf8.count + nonce.utf8.count + body.count + 24)
        for line in [method, url, String(timestamp), nonce] {
            bytes.append(contentsOf: line.utf8)
            bytes.append(0x0A)
        }
        bytes.append(contentsOf: body)
        bytes.append(0x0A)
        return bytes
    }

    /// The base64 signature of `request` at `timestamp` (seconds) with `nonce`.
    public func signature(method: String, url: String, timestamp: Int64, nonce: String, body: [UInt8]) -> String {
        Base64.encode(key.signature(for: Self.message(method: method, url: url, timestamp: timestamp, nonce: nonce, body: body)),
                      .standardPadded)
    }

    /// The `Authorization` header's value for `request`.
    public func authorization(for request: V3Request, timestamp: Int64, nonce: String) -> String {
        let signature = signature(method: request.method, url: request.url, timestamp: timestamp, nonce: nonce, body: request.body)
        return V3Authorization(mchID: mchID, nonce: nonce, signature: signature, timestamp: String(timestamp),
                               serialNumber: serialNumber).headerValue
    }

    /// Every header a v3 request carries: Authorization, Accept, Content-Type for a body, and
    /// `Wechatpay-Serial` naming the key WeChat should sign its answer with (the `PUB_KEY_ID_…` in
    /// public-key mode: during a migration it decides which key signs the response).
    public func headers(for request: V3Request, timestamp: Int64, nonce: String, wechatpaySerial: String?) -> [String: String] {
        var headers = ["Authorization": authorization(for: request, timestamp: timestamp, nonce: nonce),
                       "Accept": "application/json"]
        if !request.body.isEmpty { headers["Content-Type"] = "application/json" }
        if let wechatpaySerial { headers["Wechatpay-Serial"] = wechatpaySerial }
        return headers
    }
}

/// The parts of an `Authorization: WECHATPAY2-SHA256-RSA2048 …` header. Field order varies
/// between SDKs; each field appears once, quoted.
public struct V3Authorization: Sendable, Hashable {
    public var mchID: String
    public var nonce: String
    public var signature: String
    public var timestamp: String
    public var serialNumber: String

    public init(mchID: String, nonce: String, signature: String, timestamp: String, serialNumber: String) {
        self.mchID = mchID
        self.nonce = nonce
        self.signature = signature
        self.timestamp = timestamp
        self.serialNumber = serialNumber
    }

    public var headerValue: String {
        "\(MerchantSigner.scheme) mchid=\"\(mchID)\",nonce_str=\"\(nonce)\",signature=\"\(signature)\","
            + "timestamp=\"\(timestamp)\",serial_no=\"\(serialNumber)\""
    }

    /// Parses a header value; nil for another scheme, a field missing, repeated or unknown, or an
    /// unquoted value. At most 4 KiB are looked at.
    public init?(headerValue: String) {
        let text = Substring(headerValue)
        guard text.utf8.count <= 4096, text.hasPrefix(MerchantSigner.scheme + " ") else { return nil }
        var rest = text.dropFirst(MerchantSigner.scheme.count + 1)
        var fields: [String: String] = [:]
        while !rest.isEmpty {
            guard let equals = rest.firstIndex(of: "=") else { return nil }
            let name = rest[..<equals].trimmingSpaces
            rest = rest[rest.index(after: equals)...]
            guard rest.first == "\"" else { return nil }
            rest = rest.dropFirst()
            guard let close = rest.firstIndex(of: "\"") else { return nil }
            let value = String(rest[..<close])
            rest = rest[rest.index(after: close)...].drop { $0 == " " }
            if rest.first == "," { rest = rest.dropFirst().drop { $0 == " " } } else if !rest.isEmpty { return nil }
            guard ["mchid", "nonce_str", "signature", "timestamp", "serial_no"].contains(name), fields[name] == nil else { return nil }
            fields[name] = value
        }
        guard let mchID = fields["mchid"], let nonce = fields["nonce_str"], let signature = fields["signature"],
              let timestamp = fields["timestamp"], let serial = fields["serial_no"] else { return nil }
        self.init(mchID: mchID, nonce: nonce, signature: signature, timestamp: timestamp, serialNumber: serial)
    }
}

extension Substring {
    var trimmingSpaces: String { String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()) }
}
