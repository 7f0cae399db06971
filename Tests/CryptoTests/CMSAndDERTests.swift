// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Testing

/// PKCS #7 signed data (App Store receipts) and the DER walked inside it.
struct CMSAndDERTests {
    @Test("signed data carries its content back out, and openssl verifies the signature")
    func signedDataRoundTrips() async throws {
        let chain = try CertificateTests.Chain()
        let content = DER.set([DER.sequence([DER.integer(2), DER.integer(1), DER.octetString(DER.utf8String("com.example"))])])
        let signed = CMSSignedData.sign(content, signer: chain.leaf, key: chain.leafKey, certificates: [chain.intermediate, chain.root])
        #expect(try CMSSignedData.content(of: signed) == content)

        let openssl = try OpenSSLCommand()
        defer { openssl.remove() }
        try openssl.write("signed.der", signed)
        try openssl.write("root.pem", Array(chain.root.pem.utf8))
        let verified = try await openssl.run(["cms", "-verify", "-inform", "DER", "-in", openssl.path("signed.der"), "-CAfile",
                                              openssl.path("root.pem"), "-purpose", "any"])
        #expect(verified == content)
    }

    @Test("what is not signed data is refused with a reason, never the bytes")
    func refusals() throws {
        let chain = try CertificateTests.Chain()
        let signed = CMSSignedData.sign([1, 2, 3], signer: chain.leaf, key: chain.leafKey, certificates: [])
        #expect(throws: DERError.self) { _ = try CMSSignedData.content(of: signed + [0]) }
        #expect(throws: DERError.self) { _ = try CMSSignedData.content(of: Array(signed.dropLast())) }
        #expect(throws: DERError.self) { _ = try CMSSignedData.content(of: chain.leaf.der) }
        do {
            _ = try CMSSignedData.content(of: Array("secret receipt".utf8))
        } catch {
            #expect(error.description == "not a PKCS #7 ContentInfo")
        }
    }

    @Test("DER written here reads back element by element, integers at every length")
    func derRoundTrips() throws {
        let values: [Int64] = [0, 1, 127, 128, 255, 256, -1, -128, -129, Int64.max, Int64.min]
        let bytes = DER.sequence(values.map(DER.integer) + [DER.ia5String("2026-12-04T09:00:00Z"),
                                                               DER.octetString([UInt8](repeating: 7, count: 300))])
        try bytes.withUnsafeBytes { buffer in
            let reader = DERReader(buffer)
            let sequence = try reader.element(in: 0..<buffer.count)
            #expect(sequence.tag == DER.Tag.sequence && sequence.constructed && sequence.end == buffer.count)
            let children = try reader.children(in: sequence.content)
            #expect(children.count == values.count + 2)
            for (child, value) in zip(children, values) {
                #expect(try reader.integer(child) == value)
            }
            let text = children[values.count]
            #expect(text.tag == DER.Tag.ia5String)
            #expect(String(decoding: reader.bytes(text), as: UTF8.self) == "2026-12-04T09:00:00Z")
            #expect(children.last!.content.count == 300)
            #expect(throws: DERError.self) { _ = try reader.integer(text) }
        }
        // SET OF is sorted as DER requires, whatever order it is given in.
        #expect(DER.set([DER.integer(2), DER.integer(1)]) == DER.set([DER.integer(1), DER.integer(2)]))
    }

    @Test("indefinite lengths, lengths past the end, truncation and non-universal tags are not DER")
    func derRefusals() {
        let hostile: [[UInt8]] = [
            [0x30, 0x80, 0x02, 0x01, 0x01, 0x00, 0x00],  // indefinite length
            [0x30, 0x05, 0x02, 0x01, 0x01],  // longer than the buffer
            [0x30],  // truncated header
            [0xA0, 0x03, 0x02, 0x01, 0x01],  // context-specific tag
            [0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF],  // a 4 GiB length
        ]
        for bytes in hostile {
            bytes.withUnsafeBytes { buffer in
                #expect(throws: DERError.self, "\(bytes)") { _ = try DERReader(buffer).element(in: 0..<buffer.count) }
                return
            }
        }
        // An element must lie within the range it was looked for in.
        ([0x04, 0x03, 1, 2, 3] as [UInt8]).withUnsafeBytes { buffer in
            #expect(throws: DERError.self) { _ = try DERReader(buffer).element(in: 0..<3) }
            return
        }
        // An INTEGER too large for 64 bits.
        let large: [UInt8] = [0x02, 0x09, 0x01, 0, 0, 0, 0, 0, 0, 0, 0]
        large.withUnsafeBytes { buffer in
            let reader = DERReader(buffer)
            #expect(throws: DERError.self) { _ = try reader.integer(try reader.element(in: 0..<buffer.count)) }
        }
    }
}
