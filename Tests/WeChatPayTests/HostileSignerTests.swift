// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import WeChatPay
import WeChatPayReference

/// The fast signer against the plain reference, on documents built to stress its shortcuts:
/// names sharing their first eight bytes, shorter than eight, non-ASCII, empty values, `sign`
/// and its look-alikes; and the secrets it holds never being printed.
struct HostileSignerTests {
    static let key = "192006250b4c09247ec02edce69f6a2d"
    let signer = Signer(key: APIKey(Self.key))

    /// Name pieces chosen so that random names often tie on their eight-byte prefix.
    static let nameParts = ["coupon_fee_", "coupon_", "c", "sign", "sign_type", "signs", "sig", "a", "A", "_",
                            "settlement_total_fee", "中", "0", "1", "z", "x\u{7F}"]
    static let valueParts = ["", "1", "SUCCESS", "腾讯", " ", "&=", "\n", String(repeating: "v", count: 40)]

    @Test func twoThousandRandomDocumentsSignExactlyAsTheReference() {
        var random = SeededGenerator(seed: 0x51_6E_E7)
        for _ in 0..<2_000 {
            var fields = Fields()
            for _ in 0..<Int(random.next() % 40) {
                var name = ""
                for _ in 0...(random.next() % 3) { name += Self.nameParts[Int(random.next() % UInt64(Self.nameParts.count))] }
                var value = ""
                for _ in 0..<(random.next() % 3) { value += Self.valueParts[Int(random.next() % UInt64(Self.valueParts.count))] }
                fields[name] = value
            }
            for type in SignType.allCases {
                let expected = ReferenceSigner.signature(fields, key: Self.key, type: type)
                #expect(signer.signature(for: fields, type: type) == expected, "\(fields.elements)")
            }
            let stringA = fields.elements.filter { !$0.value.isEmpty && $0.name != "sign" }
                .sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
                .map { "\($0.name)=\($0.value)" }.joined(separator: "&")
            #expect(signer.signingString(for: fields) == stringA)
        }
    }

    @Test func keysOfEveryLengthIncludingEmptyAndLongerThanABlockSignAsTheReference() {
        let fields: Fields = ["appid": "wxd930ea5d5a258f4f", "body": "test"]
        for length in [0, 1, 31, 32, 63, 64, 65, 200] {
            let key = String(repeating: "k", count: length)
            let signer = Signer(key: APIKey(key))
            for type in SignType.allCases {
                #expect(signer.signature(for: fields, type: type) == ReferenceSigner.signature(fields, key: key, type: type),
                        "key length \(length), \(type)")
            }
        }
    }

    @Test func anEmptyDocumentSignsTheKeyAlone() {
        #expect(signer.signature(for: Fields(), type: .md5) == ReferenceSigner.signature(Fields(), key: Self.key, type: .md5))
        #expect(signer.signingString(for: Fields()) == "")
    }

    @Test func theHMACStatesDerivedFromTheKeyAreNeverPrinted() {
        // The precomputed HMAC states forge HMAC signatures as well as the key does.
        let printed = ["\(signer)", String(reflecting: signer), Mirror(reflecting: signer).children.map { "\($0)" }.joined()]
        for text in printed {
            #expect(!text.contains(Self.key))
            #expect(!text.contains("SHA256"))
            #expect(!text.contains("h: ("))
        }
        #expect(Mirror(reflecting: signer).children.map(\.label) == ["key"])
        #expect("\(signer)" == "Signer(key: APIKey(***))")
    }

    @Test func signaturesOfTheWrongLengthOrWithNonHexCharactersAreMismatches() {
        var fields: Fields = ["appid": "wxd930ea5d5a258f4f", "sign_type": "MD5"]
        let good = signer.signature(for: fields, type: .md5)
        for received in [String(good.dropLast()), good + "0", String(good.dropLast()) + "G",
                         String(good.dropLast()) + "\u{FF41}", String(good.dropFirst()) + "ａ"] {
            fields["sign"] = received
            #expect(throws: SignatureError.mismatch) { try signer.verify(fields, expected: .md5) }
        }
        fields["sign"] = good.lowercased()
        #expect(throws: Never.self) { try signer.verify(fields, expected: .md5) }
    }

    @Test func constantTimeComparisonFoldsOnlyASCIIHexLetters() {
        #expect(Signer.constantTimeEqualIgnoringHexCase("ABCDEF09", "abcdef09"))
        #expect(!Signer.constantTimeEqualIgnoringHexCase("ABCDEF09", "abcdeg09"))
        #expect(!Signer.constantTimeEqualIgnoringHexCase("GHIJ", "ghij"))
        #expect(!Signer.constantTimeEqualIgnoringHexCase("AB", "ABC"))
    }
}
