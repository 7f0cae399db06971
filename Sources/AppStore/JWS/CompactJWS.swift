// SPDX-License-Identifier: Apache-2.0
import Crypto
import JSON

/// A JWS in compact serialization, split and decoded but not yet verified.
///
/// Everything here is shape: three strict base64url segments, a JSON header and payload without
/// duplicate keys, `alg` ES256, an `x5c` of exactly three standard-base64 DER certificates within
/// the size limits, a 64-byte signature. Trust is ``SignedDataVerifier``'s business.
struct CompactJWS {
    /// App Store tokens are 3–6 KiB; 64 KiB leaves room and bounds the work per request.
    static let maximumSize = 64 * 1024
    /// Apple's certificates are under 1.5 KiB of DER.
    static let maximumCertificateSize = 8 * 1024

    let header: JSONValue
    let payload: JSONValue
    /// DER of x5c[0], x5c[1], x5c[2].
    let chain: [[UInt8]]
    /// The raw r‖s signature (64 bytes).
    let signature: [UInt8]
    /// SHA-256 of `base64url(header) "." base64url(payload)`, the bytes the signature covers.
    let signingInputDigest: [UInt8]

    init(_ token: String) throws(SignedDataError) {
        var token = token
        let result: Result<CompactJWS, SignedDataError> = token.withUTF8 { bytes in
            do throws(SignedDataError) {
                return .success(try CompactJWS(UnsafeRawBufferPointer(bytes)))
            } catch {
                return .failure(error)
            }
        }
        self = try result.get()
    }

    init(_ bytes: UnsafeRawBufferPointer) throws(SignedDataError) {
        guard bytes.count <= Self.maximumSize else { throw SignedDataError(.malformed, "token larger than 64 KiB") }
        guard let firstDot = bytes.firstIndex(of: UInt8(ascii: ".")),
              let secondDot = bytes[(firstDot + 1)...].firstIndex(of: UInt8(ascii: ".")),
              !bytes[(secondDot + 1)...].contains(UInt8(ascii: "."))
        else { throw SignedDataError(.malformed, "not three dot-separated segments") }
        let headerText = UnsafeRawBufferPointer(rebasing: bytes[..<firstDot])
        let payloadText = UnsafeRawBufferPointer(rebasing: bytes[(firstDot + 1)..<secondDot])
        let signatureText = UnsafeRawBufferPointer(rebasing: bytes[(secondDot + 1)...])
        guard !headerText.isEmpty, !payloadText.isEmpty, !signatureText.isEmpty else {
            throw SignedDataError(.malformed, "an empty segment")
        }
        guard let headerBytes = Base64.decode(headerText, .urlUnpadded),
              let payloadBytes = Base64.decode(payloadText, .urlUnpadded),
              let signature = Base64.decode(signatureText, .urlUnpadded)
        else { throw SignedDataError(.malformed, "a segment is not strict unpadded base64url") }

        let header: JSONValue
        do {
            header = try JSONValue.parse(headerBytes)
        } catch {
            throw error.reason == .duplicateKey
                ? SignedDataError(.malformed, "duplicate key in the header") : SignedDataError(.malformed, "header is not JSON")
        }
        guard case .object = header else { throw SignedDataError(.malformed, "header is not a JSON object") }
        guard let algorithm = header["alg"] else { throw SignedDataError(.malformed, "header has no alg") }
        guard algorithm == "ES256" else { throw SignedDataError(.unsupportedAlgorithm, "alg is not ES256") }
        guard let x5c = header["x5c"]?.arrayValue else { throw SignedDataError(.malformed, "header has no x5c array") }
        guard x5c.count == 3 else { throw SignedDataError(.invalidChain, "x5c does not hold exactly three certificates") }
        var chain: [[UInt8]] = []
        for element in x5c {
            guard let text = element.stringValue else { throw SignedDataError(.malformed, "an x5c element is not a string") }
            guard text.utf8.count <= Self.maximumCertificateSize * 4 / 3 + 4 else {
                throw SignedDataError(.malformed, "an x5c certificate is larger than 8 KiB")
            }
            guard let der = Base64.decode(text, .standardPadded), !der.isEmpty else {
                throw SignedDataError(.malformed, "an x5c element is not strict base64")
            }
            guard der.count <= Self.maximumCertificateSize else {
                throw SignedDataError(.malformed, "an x5c certificate is larger than 8 KiB")
            }
            chain.append(der)
        }
        // A DER signature (70–72 bytes) where JWS demands raw r‖s is refused here, not converted:
        // accepting both would give one signature two encodings.
        guard signature.count == 64 else { throw SignedDataError(.invalidSignature, "signature is not 64 raw bytes (r‖s)") }

        let payload: JSONValue
        do {
            payload = try JSONValue.parse(payloadBytes)
        } catch {
            throw error.reason == .duplicateKey
                ? SignedDataError(.malformed, "duplicate key in the payload") : SignedDataError(.malformed, "payload is not JSON")
        }
        guard case .object = payload else { throw SignedDataError(.malformed, "payload is not a JSON object") }

        self.header = header
        self.payload = payload
        self.chain = chain
        self.signature = signature
        signingInputDigest = SHA256.hash(UnsafeRawBufferPointer(rebasing: bytes[..<secondDot]))
    }
}

/// Makes compact JWS with ES256: the Server API's bearer tokens here, App Store signed data in the
/// simulator.
public enum JWSSigner {
    /// `base64url(header) "." base64url(payload) "." base64url(r‖s)`. `header` gets `alg` ES256.
    public static func sign(header: JSONValue, payload: JSONValue, with key: ES256PrivateKey) -> String {
        var header = header.objectValue ?? [:]
        header["alg"] = "ES256"
        return sign(headerBytes: JSONValue.object(header).bytes(), payloadBytes: payload.bytes(), with: key)
    }

    /// Signs exactly these header and payload bytes (tests build hostile headers this way).
    public static func sign(headerBytes: [UInt8], payloadBytes: [UInt8], with key: ES256PrivateKey) -> String {
        let signingInput = Base64.encode(headerBytes, .urlUnpadded) + "." + Base64.encode(payloadBytes, .urlUnpadded)
        return signingInput + "." + Base64.encode(key.signature(for: Array(signingInput.utf8)), .urlUnpadded)
    }
}
