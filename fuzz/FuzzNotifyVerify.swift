// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the notify verifier path: FlatXML.decode, then Signer.verify.
import WeChatPay

private let key = "192006250b4c09247ec02edce69f6a2d"
private let signer = Signer(key: APIKey(key))

/// Every input must satisfy, or the process traps and libFuzzer saves the input:
/// - decode + verify never crash, whatever the bytes, for both expected algorithms;
/// - a document verifies only if its `sign` equals the reference signature (plain sort and
///   OpenSSL one-shots), and `Signer.signature` always equals that reference;
/// - after re-signing a decoded document with the key, it verifies, and changing any signed
///   value makes it fail;
/// - `signingString` never contains the key.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNotifyVerify(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let fields = try? FlatXML.decode(UnsafeBufferPointer(start: data, count: size)) else { return 0 }
    for type in SignType.allCases {
        let reference = ReferenceSigner.signature(fields, key: key, type: type)
        precondition(signer.signature(for: fields, type: type) == reference, "signature differs from the reference")

        let verified = (try? signer.verify(fields, expected: type)) != nil
        let declared = fields.nonEmpty("sign_type")
        // Hex may arrive in either case; only ASCII a-f fold (no Unicode case mapping).
        let received = fields.nonEmpty("sign").map { Array($0.utf8).map { $0 >= 0x61 && $0 <= 0x66 ? $0 - 32 : $0 } }
        let expectedVerified = received == Array(reference.utf8) && (declared == nil || declared == type.rawValue)
        precondition(verified == expectedVerified, "verify disagrees with the reference")

        var signed = fields
        signed["sign"] = reference
        if declared == nil || declared == type.rawValue {
            precondition((try? signer.verify(signed, expected: type)) != nil, "a correctly signed document fails")
            if let target = signed.elements.first(where: { $0.name != "sign" && !$0.value.isEmpty }) {
                var tampered = signed
                tampered[target.name] = target.value + "0"
                precondition((try? signer.verify(tampered, expected: type)) == nil, "a tampered document verifies")
            }
        }
    }
    precondition(!signer.signingString(for: fields).contains(key), "the signing string holds the key")
    return 0
}
