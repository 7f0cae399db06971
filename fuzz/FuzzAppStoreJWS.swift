// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the App Store JWS decoder and verifier (built by scripts/fuzz with
// -sanitize=fuzzer,address; SimulatorPKI.swift is compiled in for a chain to trust).
import AppStore
import Crypto
import Foundation
import JSON

/// A chain the verifier trusts, made once per process.
private let pki = SimulatorPKI()
private let verifier = try! SignedDataVerifier(
    roots: TrustedRoots([pki.root], allowUntrustedRoot: true), bundleID: "com.example.courses", appAppleID: 1_234_567_890)
private let header = JSONValue.object(["alg": "ES256", "x5c": .array(pki.x5c.map(JSONValue.string))]).bytes()

/// Every input is used twice, and must satisfy, or the process traps and libFuzzer keeps it:
///
/// As a token (the hostile-input path):
/// - verification never crashes, whatever the bytes, and a refusal's description is short and
///   never holds the input;
/// - each dot-separated segment decodes as strict base64url exactly when Foundation's decoder
///   (after mapping the alphabet and padding) decodes it and re-encodes it to the same text;
///
/// As a payload, signed with the trusted chain (the decoder's accepting path):
/// - the token verifies exactly when the payload is a JSON object (our strict parser) with an
///   integral `signedDate`, and then returns that very object;
/// - whatever our JSON parser accepts, Foundation's JSONSerialization accepts too;
/// - flipping any one byte of the signed token makes it fail.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAppStoreJWS(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let text = String(decoding: bytes, as: UTF8.self)

    // 1. The bytes as a token.
    do {
        _ = try verifier.verify(text)
    } catch {
        let description = "\(error)"
        precondition(description.utf8.count < 160, "an error description grew with the input")
        if text.utf8.count >= 24 { precondition(!description.contains(text), "an error description echoes the token") }
    }
    for segment in text.split(separator: ".", omittingEmptySubsequences: false).prefix(4) {
        let ours = Base64.decode(Array(segment.utf8), .urlUnpadded)
        precondition(ours == referenceBase64URL(String(segment)), "base64url disagrees with Foundation")
    }

    // 2. The bytes as the payload of a genuinely signed token.
    let parsed = try? JSONValue.parse(bytes)
    if parsed != nil {
        precondition((try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])) != nil,
                     "our parser accepts JSON Foundation refuses")
    }
    guard let leafKey = pki.leafKey else { return 0 }
    let jws = JWSSigner.sign(headerBytes: header, payloadBytes: bytes, with: leafKey)
    let verified = try? verifier.verifiedPayload(jws)
    // Accepted exactly when the token fits in 64 KiB, the payload is an object, and its signedDate
    // (floored to seconds, as the chain check does) falls in the chain's 2000–2100 validity.
    let seconds = parsed?["signedDate"]?.intValue.map { Int64((Double($0) / 1000).rounded(.down)) }
    let expectedAccepted = jws.utf8.count <= 64 * 1024 && parsed?.objectValue != nil
        && seconds.map { (946_684_800...4_102_444_800).contains($0) } == true
    precondition((verified != nil) == expectedAccepted, "a signed payload's verdict is wrong")
    if let verified { precondition(verified == parsed, "the verified payload is not what was signed") }
    if verified != nil {
        var tampered = Array(jws.utf8)
        let index = Int(bytes.count % tampered.count)
        tampered[index] = tampered[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        precondition((try? verifier.verifiedPayload(String(decoding: tampered, as: UTF8.self))) == nil, "a tampered token verifies")
    }
    return 0
}

/// base64url by Foundation: the alphabet mapped, padding added, and the decoding accepted only if
/// it re-encodes to the same (unpadded) text, which is what "canonical" means.
private func referenceBase64URL(_ text: String) -> [UInt8]? {
    guard !text.contains("="), !text.contains("+"), !text.contains("/"), text.utf8.count % 4 != 1 else { return nil }
    var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while standard.utf8.count % 4 != 0 { standard += "=" }
    guard let data = Data(base64Encoded: standard) else { return nil }
    let again = data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
    return again == text ? Array(data) : nil
}
