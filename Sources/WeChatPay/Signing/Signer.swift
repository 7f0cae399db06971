// SPDX-License-Identifier: Apache-2.0
import COpenSSL

/// Computes and verifies v2 signatures exactly as WeChat specifies:
/// drop empty values and `sign`, sort names by ASCII byte order, join `name=value` with `&` using
/// the raw values, append `&key=<API key>`, hash, uppercase hex.
///
/// A pure value: the key is the only state, so one `Signer` is shared freely across tasks.
///
/// ```swift
/// let signer = Signer(key: APIKey("192006250b4c09247ec02edce69f6a2d"))
/// let sign = signer.signature(for: fields, type: .hmacSHA256)
/// try signer.verify(notify, expected: .hmacSHA256)
/// ```
public struct Signer: Sendable {
    public let key: APIKey

    public init(key: APIKey) {
        self.key = key
    }

    /// The uppercase hex signature of `fields` (their `sign` field, if any, is ignored).
    public func signature(for fields: Fields, type: SignType) -> String {
        withSigningBytes(of: fields) { message in
            switch type {
            case .md5:
                var digest = (UInt64(0), UInt64(0))
                return withUnsafeMutableBytes(of: &digest) { out in
                    wxpay_md5(message.baseAddress!, message.count, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    return Self.uppercaseHex(UnsafeRawBufferPointer(out))
                }
            case .hmacSHA256:
                var digest = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
                return withUnsafeMutableBytes(of: &digest) { out in
                    let ok = key.withUnsafeBytes { key in
                        wxpay_hmac_sha256(
                            key.baseAddress ?? UnsafeRawPointer(message.baseAddress!), Int32(key.count),
                            message.baseAddress!, message.count,
                            out.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    }
                    // HMAC only fails on allocation failure inside OpenSSL, which we cannot recover from.
                    precondition(ok == 1, "HMAC-SHA256 failed inside OpenSSL")
                    return Self.uppercaseHex(UnsafeRawBufferPointer(out))
                }
            }
        }
    }

    /// `stringA` of the specification: the sorted `name=value&…` string without the key.
    /// For diagnostics (the `sign` command shows it); it never contains the key.
    public func signingString(for fields: Fields) -> String {
        var bytes: [UInt8] = []
        Self.appendSortedPairs(of: fields, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Verifies the `sign` field of a received document against `expected`, the algorithm the order
    /// was created with.
    ///
    /// A document whose `sign_type` names another algorithm is rejected rather than verified with
    /// it: an attacker must not be able to choose a weaker algorithm (downgrade). A document without
    /// `sign_type` is verified with `expected`; real HMAC-SHA256 notifies often omit it.
    /// The comparison runs in constant time.
    public func verify(_ fields: Fields, expected: SignType) throws(SignatureError) {
        guard let received = fields.nonEmpty("sign") else { throw .missingSignature }
        if let declared = fields.nonEmpty("sign_type") {
            guard let declaredType = SignType(rawValue: declared) else { throw .unknownSignType }
            guard declaredType == expected else { throw .signTypeMismatch(expected: expected) }
        }
        guard received.utf8.count == expected.hexLength else { throw .mismatch }
        let computed = signature(for: fields, type: expected)
        guard Self.constantTimeEqualIgnoringHexCase(computed, received) else { throw .mismatch }
    }

    /// Which algorithm, if any, produced the document's `sign`. For the `sign --xml` diagnostic only;
    /// never use this to decide how to verify a notify (that would be a downgrade).
    public func matchingSignType(of fields: Fields) -> SignType? {
        guard let received = fields.nonEmpty("sign") else { return nil }
        for type in SignType.allCases where received.utf8.count == type.hexLength {
            if Self.constantTimeEqualIgnoringHexCase(signature(for: fields, type: type), received) { return type }
        }
        return nil
    }

    // MARK: - Building the signed bytes

    /// Calls `body` with `stringSignTemp` (`stringA&key=KEY`) as UTF-8 bytes.
    private func withSigningBytes<R>(of fields: Fields, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(512)
        Self.appendSortedPairs(of: fields, to: &bytes)
        if !bytes.isEmpty { bytes.append(UInt8(ascii: "&")) }
        bytes.append(contentsOf: "key=".utf8)
        key.withUnsafeBytes { bytes.append(contentsOf: $0) }
        return bytes.withUnsafeBytes(body)
    }

    private static func appendSortedPairs(of fields: Fields, to bytes: inout [UInt8]) {
        let elements = fields.elements
        // Sort indices, not fields, so no string is copied. Names compare as UTF-8 bytes (ASCII order).
        var order = Array(elements.indices)
        order.sort { elements[$0].name.utf8.lexicographicallyPrecedes(elements[$1].name.utf8) }
        var first = true
        for index in order {
            let field = elements[index]
            if field.value.isEmpty || field.name == "sign" { continue }
            if !first { bytes.append(UInt8(ascii: "&")) }
            first = false
            bytes.append(contentsOf: field.name.utf8)
            bytes.append(UInt8(ascii: "="))
            bytes.append(contentsOf: field.value.utf8)
        }
    }

    // MARK: - Hex and comparison

    private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    private static func uppercaseHex(_ digest: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: digest.count * 2) { out in
            hexDigits.withUnsafeBufferPointer { digits in
                for (i, byte) in digest.enumerated() {
                    out[2 * i] = digits[Int(byte >> 4)]
                    out[2 * i + 1] = digits[Int(byte & 0x0F)]
                }
            }
            return digest.count * 2
        }
    }

    /// Constant-time for equal lengths (lengths are public: 32 or 64). Lowercase hex received from
    /// a peer is accepted, as WeChat's own SDKs compare case-insensitively.
    static func constantTimeEqualIgnoringHexCase(_ computed: String, _ received: String) -> Bool {
        let a = Array(computed.utf8)
        var b = Array(received.utf8)
        guard a.count == b.count else { return false }
        for i in b.indices where b[i] >= UInt8(ascii: "a") && b[i] <= UInt8(ascii: "f") { b[i] -= 32 }
        return a.withUnsafeBytes { a in
            b.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 }
        }
    }
}
