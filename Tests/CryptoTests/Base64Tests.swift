// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Testing

struct Base64Tests {
    @Test("random bytes round-trip in both alphabets, and the standard alphabet writes what Foundation writes")
    func randomBytesRoundTrip() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let standard = Base64.encode(bytes, .standardPadded)
            #expect(standard == Data(bytes).base64EncodedString())
            #expect(Base64.decode(standard, .standardPadded) == bytes)
            let url = Base64.encode(bytes, .urlUnpadded)
            #expect(!url.contains("=") && !url.contains("+") && !url.contains("/"))
            #expect(Base64.decode(url, .urlUnpadded) == bytes)
        }
    }

    @Test("only the canonical text of some bytes is accepted: no stray padding, bits or whitespace")
    func onlyTheCanonicalTextIsAccepted() {
        #expect(Base64.decode("QQ", .urlUnpadded) == [0x41])
        #expect(Base64.decode("QR", .urlUnpadded) == nil)  // non-zero unused bits
        #expect(Base64.decode("QQ==", .urlUnpadded) == nil)  // padding in base64url
        #expect(Base64.decode("Q", .urlUnpadded) == nil)  // impossible length
        #expect(Base64.decode("QQ", .standardPadded) == nil)  // missing padding
        #expect(Base64.decode("QQ==", .standardPadded) == [0x41])
        #expect(Base64.decode("QR==", .standardPadded) == nil)
        #expect(Base64.decode("Q Q=", .standardPadded) == nil)
        #expect(Base64.decode("+/8=", .standardPadded) == [0xFB, 0xFF])
        #expect(Base64.decode("-_8", .urlUnpadded) == [0xFB, 0xFF])
        #expect(Base64.decode("+/8", .urlUnpadded) == nil)
        #expect(Base64.decode("A===", .standardPadded) == nil)
    }
}
