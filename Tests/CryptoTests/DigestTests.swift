// SPDX-License-Identifier: Apache-2.0
import Crypto
import Testing

/// MD5 (RFC 1321 appendix A.5), SHA-1 and SHA-256 (FIPS 180 examples), one shot and streamed.
struct DigestTests {
    @Test("MD5 gives RFC 1321's test suite")
    func md5KnownAnswers() {
        let vectors = [
            ("", "d41d8cd98f00b204e9800998ecf8427e"),
            ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"),
            ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
            ("12345678901234567890123456789012345678901234567890123456789012345678901234567890",
             "57edf4a22be3c955ac49da2e2107b67a"),
        ]
        for (input, digest) in vectors {
            #expect(Hex.encode(MD5.hash(input)) == digest, "\(input)")
        }
        #expect(MD5.byteCount == 16)
    }

    @Test("SHA-1 gives the FIPS 180 examples")
    func sha1KnownAnswers() {
        #expect(Hex.encode(SHA1.hash("abc")) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(Hex.encode(SHA1.hash("")) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(Hex.encode(SHA1.hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))
                == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        #expect(SHA1.byteCount == 20)
    }

    @Test("SHA-256 gives the FIPS 180 examples, one shot and streamed")
    func sha256KnownAnswers() {
        #expect(Hex.encode(SHA256.hash("abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Hex.encode(SHA256.hash("")) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(Hex.encode(SHA256.hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        // One million "a", in pieces of 1,000.
        var hasher = SHA256.Hasher()
        let piece = [UInt8](repeating: UInt8(ascii: "a"), count: 1000)
        for _ in 0..<1000 { hasher.update(piece) }
        #expect(Hex.encode(hasher.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("a streamed digest equals the one-shot digest wherever the input is cut, and copies fork")
    func streamingAgreesWithOneShot() {
        let bytes = (0..<997).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        for cut in [0, 1, 63, 64, 65, 500, 997] {
            var hasher = SHA256.Hasher()
            hasher.update(bytes[..<cut])
            var fork = hasher
            hasher.update(bytes[cut...])
            #expect(hasher.finalize() == SHA256.hash(bytes))
            fork.update([1, 2, 3])
            #expect(fork.finalize() == SHA256.hash(Array(bytes[..<cut]) + [1, 2, 3]))
        }
        // A sequence without contiguous storage is hashed the same as its array.
        #expect(SHA256.hash((0..<200).lazy.map { UInt8($0) }) == SHA256.hash((0..<200).map { UInt8($0) }))
    }
}

/// Hex, the text of digests and fingerprints.
struct HexTests {
    @Test("hex is two digits per byte in either case, and decodes either case back")
    func hexRoundTrips() {
        let bytes: [UInt8] = [0x00, 0x0F, 0xA5, 0xFF]
        #expect(Hex.encode(bytes) == "000fa5ff")
        #expect(Hex.encode(bytes, uppercase: true) == "000FA5FF")
        #expect(Hex.decode("000fa5ff") == bytes)
        #expect(Hex.decode("000FA5ff") == bytes)
        #expect(Hex.decode("") == [])
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("0g") == nil)
        #expect(Hex.decode(" 00") == nil)
    }

    @Test("a hex digit has its value in either case, and nothing else is a digit")
    func digitValues() {
        for (digit, value) in zip("0123456789abcdef".utf8, 0...15) {
            #expect(Hex.value(ofDigit: digit) == UInt8(value))
        }
        for (digit, value) in zip("ABCDEF".utf8, 10...15) {
            #expect(Hex.value(ofDigit: digit) == UInt8(value))
        }
        let digits = Set("0123456789abcdefABCDEF".utf8)
        for byte in UInt8.min...UInt8.max where !digits.contains(byte) {
            #expect(Hex.value(ofDigit: byte) == nil, "\(byte)")
        }
    }
}
