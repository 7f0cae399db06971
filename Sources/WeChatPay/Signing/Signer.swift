// SPDX-License-Identifier: Apache-2.0
import Crypto

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
public struct Signer: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let key: APIKey
    /// HMAC-SHA256's key schedule, computed once per key. It is as secret as the key (it forges
    /// HMAC signatures without it), so `description`, `debugDescription` and the mirror below
    /// leave it out.
    private let hmacKey: HMACSHA256Key

    public init(key: APIKey) {
        self.key = key
        hmacKey = key.withUnsafeBytes { HMACSHA256Key($0) }
    }

    /// The uppercase hex signature of `fields` (their `sign` field, if any, is ignored).
    public func signature(for fields: Fields, type: SignType) -> String {
        withDigest(of: fields, type: type) { digest in
            String(unsafeUninitializedCapacity: digest.count * 2) { out in
                Self.writeUppercaseHex(digest, to: UnsafeMutableRawBufferPointer(out))
                return digest.count * 2
            }
        }
    }

    /// `stringA` of the specification: the sorted `name=value&…` string without the key.
    /// For diagnostics (the `sign` command shows it); it never contains the key.
    public func signingString(for fields: Fields) -> String {
        SigningMessage.withBytes(of: fields, key: nil) { String(decoding: $0, as: UTF8.self) }
    }

    /// Verifies the `sign` field of a received document against `expected`, the algorithm the order
    /// was created with.
    ///
    /// A document whose `sign_type` names another algorithm is rejected rather than verified with
    /// it: an attacker must not be able to choose a weaker algorithm (downgrade). A document without
    /// `sign_type` is verified with `expected`; real HMAC-SHA256 notifies often omit it.
    /// The comparison runs in constant time.
    public func verify(_ fields: Fields, expected: SignType) throws(SignatureError) {
        var received: String?
        var declared: String?
        for field in fields {
            switch field.name.utf8.count {
            case 4 where field.name == "sign": received = field.value
            case 9 where field.name == "sign_type": declared = field.value
            default: continue
            }
        }
        guard let received, !received.isEmpty else { throw .missingSignature }
        if let declared, !declared.isEmpty {
            guard let declaredType = SignType(rawValue: declared) else { throw .unknownSignType }
            guard declaredType == expected else { throw .signTypeMismatch(expected: expected) }
        }
        guard received.utf8.count == expected.hexLength else { throw .mismatch }
        let matches = withDigest(of: fields, type: expected) { Self.constantTimeEqual(digest: $0, hex: received) }
        guard matches else { throw .mismatch }
    }

    /// Which algorithm, if any, produced the document's `sign`. For the `sign --xml` diagnostic only;
    /// never use this to decide how to verify a notify (that would be a downgrade).
    public func matchingSignType(of fields: Fields) -> SignType? {
        guard let received = fields.nonEmpty("sign") else { return nil }
        for type in SignType.allCases where received.utf8.count == type.hexLength {
            if withDigest(of: fields, type: type, { Self.constantTimeEqual(digest: $0, hex: received) }) { return type }
        }
        return nil
    }

    public var description: String { "Signer(key: \(key))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["key": key], displayStyle: .struct) }

    // MARK: - Digests

    /// Calls `body` with the raw digest (16 bytes for MD5, 32 for HMAC-SHA256) of `stringSignTemp`.
    private func withDigest<R>(of fields: Fields, type: SignType, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        var digest = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        return withUnsafeMutableBytes(of: &digest) { out in
            let output = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
            switch type {
            case .md5:
                SigningMessage.withBytes(of: fields, key: key) { message in
                    MD5.hash(message, into: output)
                }
                return body(UnsafeRawBufferPointer(rebasing: out[..<MD5.byteCount]))
            case .hmacSHA256:
                // HMAC keys the hash itself, but WeChat still appends "&key=KEY" to the message.
                // The schedule taken out first: the closure then captures it alone, not the signer.
                let hmacKey = self.hmacKey
                SigningMessage.withBytes(of: fields, key: key) { message in
                    hmacKey.authenticationCode(for: message, into: output)
                }
                return body(UnsafeRawBufferPointer(out))
            }
        }
    }

    // MARK: - Hex and comparison

    private static func writeUppercaseHex(_ digest: UnsafeRawBufferPointer, to out: UnsafeMutableRawBufferPointer) {
        Hex.write(digest, uppercase: true, to: out)
    }

    /// Whether `hex` spells `digest` (either case), in time that depends only on the lengths,
    /// which are public (32 or 64).
    static func constantTimeEqual(digest: UnsafeRawBufferPointer, hex: String) -> Bool {
        let count = hex.utf8.count
        guard count == digest.count * 2, count <= 128 else { return false }
        return withScratchBuffer(of: UInt8.self, capacity: 256) { bytes in
            let buffer = UnsafeMutableRawBufferPointer(bytes)
            let computed = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
            let received = UnsafeMutableRawBufferPointer(rebasing: buffer[128..<128 + count])
            writeUppercaseHex(digest, to: computed)
            SigningMessage.withUTF8(hex) { uppercaseHex(UnsafeRawBufferPointer($0), into: received) }
            return ConstantTime.equal(UnsafeRawBufferPointer(computed), UnsafeRawBufferPointer(received))
        }
    }

    /// Constant-time for equal lengths (lengths are public: 32 or 64). Lowercase hex received from
    /// a peer is accepted, as WeChat's own SDKs compare case-insensitively.
    static func constantTimeEqualIgnoringHexCase(_ computed: String, _ received: String) -> Bool {
        let count = computed.utf8.count
        guard count == received.utf8.count, count <= 128 else { return false }
        return withScratchBuffer(of: UInt8.self, capacity: 256) { bytes in
            let buffer = UnsafeMutableRawBufferPointer(bytes)
            let a = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
            let b = UnsafeMutableRawBufferPointer(rebasing: buffer[128..<128 + count])
            SigningMessage.withUTF8(computed) { uppercaseHex(UnsafeRawBufferPointer($0), into: a) }
            SigningMessage.withUTF8(received) { uppercaseHex(UnsafeRawBufferPointer($0), into: b) }
            return ConstantTime.equal(UnsafeRawBufferPointer(a), UnsafeRawBufferPointer(b))
        }
    }

    /// Branch-free uppercase of a-f (subtract 32 when the byte is in range), so the time does not
    /// depend on which digits a received signature has.
    private static func uppercaseHex(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
        for index in 0..<bytes.count {
            let byte = bytes[index]
            let isLowerHex = UInt8(truncatingIfNeeded: (Int(byte) &- 0x61) >> 8 &+ 1) & UInt8(truncatingIfNeeded: (0x66 &- Int(byte)) >> 8 &+ 1)
            out[index] = byte &- (isLowerHex &* 32)
        }
    }
}
