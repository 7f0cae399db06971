// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import Testing

struct JSONTests {
    @Test func aPayloadParsesWithItsIntegersExact() throws {
        let json = try JSON.parse(Array(#" {"a":9007199254740993,"b":-1.5e3,"c":[true,false,null],"d":"x\u00e9\ud83d\ude00\n"} "#.utf8))
        #expect(json["a"] == .integer(9_007_199_254_740_993))
        #expect(json["b"] == .double(-1500))
        #expect(json["c"] == [true, false, nil])
        #expect(json["d"] == .string("xé😀\n"))
    }

    @Test func duplicateNamesAreRefusedAtEveryDepth() {
        for text in [#"{"a":1,"a":1}"#, #"{"x":{"a":1,"b":2,"a":3}}"#, #"[{"k":1,"k":2}]"#, #"{"a":1,"\u0061":2}"#] {
            #expect(throws: JSONError.self, "\(text)") { try JSON.parse(Array(text.utf8)) }
            #expect((try? JSON.parse(Array(text.utf8))) == nil)
        }
    }

    @Test func malformedJSONIsRefusedWhereLaxParsersAcceptIt() {
        let cases = ["", "{", "{\"a\":1,}", "[1,]", "01", "{\"a\":01}", "1.", ".5", "+1", "NaN", "'a'", "{\"a\" 1}",
                     "\"\\x\"", "\"\u{01}\"", "\"\\ud800\"", "\"\\udc00\"", "{} {}", "tru", "[1 2]", "99999999999999999999"]
        for text in cases {
            #expect((try? JSON.parse(Array(text.utf8))) == nil, "\(text)")
        }
        #expect((try? JSON.parse([0x22, 0xC3, 0x28, 0x22])) == nil)  // invalid UTF-8 inside a string
    }

    @Test func nestingIsBounded() {
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: JSONError.self) { try JSON.parse(Array(deep.utf8)) }
        let shallow = String(repeating: "[", count: 10) + String(repeating: "]", count: 10)
        #expect(throws: Never.self) { try JSON.parse(Array(shallow.utf8)) }
    }

    @Test func serializationRoundTripsAndFoundationAgrees() throws {
        let value: JSON = ["s": "a\"b\\c\u{01}é", "i": -42, "f": .double(0.25), "b": true, "n": nil, "a": [1, ["x": "y"]]]
        let text = value.serialized()
        #expect(try JSON.parse(Array(text.utf8)) == value)
        let foundation = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        #expect(foundation?["s"] as? String == "a\"b\\c\u{01}é")
        #expect(foundation?["i"] as? Int == -42)
    }
}

struct Base64Tests {
    @Test func randomBytesRoundTripInBothAlphabetsAndFoundationAgrees() {
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

    @Test func onlyTheCanonicalTextIsAccepted() {
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
