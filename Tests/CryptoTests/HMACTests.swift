// SPDX-License-Identifier: Apache-2.0
import Crypto
import Testing

/// HMAC against RFC 4231's test cases, through the keyed schedule (HMACSHA256Key, what the signer
/// and app tokens use) and through OpenSSL's one-shot HMAC().
struct HMACTests {
    /// RFC 4231 section 4: key, data, HMAC-SHA-256, HMAC-SHA-512 (case 5's outputs are truncated
    /// to 128 bits in the RFC, so it is checked by its prefix).
    static let cases: [(key: [UInt8], data: [UInt8], sha256: String, sha512: String)] = [
        ([UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8),
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
         "87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cde"
            + "daa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854"),
        (Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
         "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554"
            + "9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"),
        ([UInt8](repeating: 0xaa, count: 20), [UInt8](repeating: 0xdd, count: 50),
         "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
         "fa73b0089d56a284efb0f0756c890be9b1b5dbdd8ee81a3655f83e33b2279d39"
            + "bf3e848279a722c806b485a47e67c807b946a337bee8942674278859e13292fb"),
        (Array(1...25), [UInt8](repeating: 0xcd, count: 50),
         "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
         "b0ba465637458c6990e5a8c5f61d4af7e576d97ff94b872de76f8050361ee3db"
            + "a91ca5c11aa25eb4d679275cc5788063a5f19741120c4f2de2adebeb10a298dd"),
        ([UInt8](repeating: 0x0c, count: 20), Array("Test With Truncation".utf8),
         "a3b6167473100ee06e0c796c2955552b", "415fad6271580a531d4179bc891d87a6"),
        ([UInt8](repeating: 0xaa, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
         "80b24263c7c1a3ebb71493c1dd7be8b49b46d1f41b4aeec1121b013783f8f352"
            + "6b56d037e05f2598bd0fd2215d6a1e5295e64f73f63f0aec8b915a985d786598"),
        ([UInt8](repeating: 0xaa, count: 131),
         Array(("This is a test using a larger than block-size key and a larger than block-size data. "
                + "The key needs to be hashed before being used by the HMAC algorithm.").utf8),
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
         "e37b6a775dc87dbaa4dfa9f96e5e3ffddebd71f8867289865df5a32d20cdc944"
            + "b6022cac3c4982b10d5eeb55c3e4de15134676fb6de0446065c97440fa8c6a58"),
    ]

    @Test("HMAC-SHA256 with a key schedule gives every RFC 4231 answer, keys longer than a block included")
    func keyScheduleGivesRFC4231() {
        for (index, vector) in Self.cases.enumerated() {
            let mac = Hex.encode(HMACSHA256Key(vector.key).authenticationCode(for: vector.data))
            #expect(mac.hasPrefix(vector.sha256), "case \(index + 1)")
        }
    }

    @Test("one-shot HMAC gives RFC 4231's SHA-256 and SHA-512 answers and agrees with the key schedule")
    func oneShotGivesRFC4231() {
        for (index, vector) in Self.cases.enumerated() {
            let sha256 = HMAC.authenticationCode(.sha256, key: vector.key, message: vector.data)
            #expect(Hex.encode(sha256).hasPrefix(vector.sha256), "case \(index + 1)")
            #expect(Hex.encode(HMAC.authenticationCode(.sha512, key: vector.key, message: vector.data)).hasPrefix(vector.sha512),
                    "case \(index + 1)")
            #expect(sha256 == HMACSHA256Key(vector.key).authenticationCode(for: vector.data))
        }
        // RFC 4231 case 2 with SHA-384.
        #expect(Hex.encode(HMAC.authenticationCode(.sha384, key: Array("Jefe".utf8),
                                                   message: Array("what do ya want for nothing?".utf8)))
                == "af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e8e2240ca5e69e2c78b3239ecfab21649")
    }

    @Test("an empty key and an empty message are an HMAC like any other, and one key serves many messages")
    func emptyKeyAndMessage() {
        let key = HMACSHA256Key([])
        let mac = key.authenticationCode(for: [])
        #expect(Hex.encode(mac) == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
        #expect(mac == HMAC.authenticationCode(.sha256, key: [], message: []))
        // The schedule is never consumed: the same key twice gives the same MAC.
        let message = Array("twice".utf8)
        #expect(key.authenticationCode(for: message) == key.authenticationCode(for: message))
    }

    @Test("a key's description, debug description and mirror show nothing of it")
    func keysNeverPrint() {
        let key = HMACSHA256Key(Array("secret-key-material".utf8))
        #expect(String(describing: key) == "HMACSHA256Key(…)")
        #expect(String(reflecting: key) == "HMACSHA256Key(…)")
        var dumped = ""
        dump(key, to: &dumped)
        #expect(!dumped.contains("secret") && Mirror(reflecting: key).children.isEmpty)
    }
}

/// The one constant-time comparison.
struct ConstantTimeTests {
    @Test("equal bytes compare equal; a different byte or length does not")
    func comparesBytes() {
        #expect(ConstantTime.equal([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equal([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equal([1, 2, 3], [1, 2]))
        #expect(ConstantTime.equal([], []))
        #expect(!ConstantTime.equal([], [0]))
        #expect(ConstantTime.equal("token", "token"))
        #expect(!ConstantTime.equal("token", "tokeN"))
        #expect(!ConstantTime.equal("token", "token "))
    }
}

/// Random bytes from OpenSSL's CSPRNG.
struct RandomBytesTests {
    @Test("random bytes come in the length asked for and differ between draws")
    func randomBytesDiffer() {
        #expect(RandomBytes.take(0).isEmpty)
        let a = RandomBytes.take(32), b = RandomBytes.take(32)
        #expect(a.count == 32 && b.count == 32)
        #expect(a != b)
        // 4,096 bytes use most of the 256 values (a stuck generator would not).
        #expect(Set(RandomBytes.take(4096)).count > 200)
    }
}
