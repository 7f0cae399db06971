// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON
import Testing

/// The one JSON reader's rules: what parsers disagree on is refused, never resolved. These are the
/// App Store reader's and the gateway reader's cases together; the gateway's own suite
/// (`RequestBodyJSONTests`) checks request bodies against `JSONDecoder`, which read them before.
struct JSONReaderTests {
    static func reason(_ text: String) -> JSONError.Reason? { reason(Array(text.utf8)) }

    static func reason(_ bytes: [UInt8]) -> JSONError.Reason? {
        do {
            _ = try JSONValue.parse(bytes)
            return nil
        } catch {
            return error.reason
        }
    }

    @Test func aPayloadParsesWithItsIntegersExact() throws {
        let json = try JSONValue.parse(Array(#" {"a":9007199254740993,"b":-1.5e3,"c":[true,false,null],"d":"x\u00e9\ud83d\ude00\n","e":0.25} "#.utf8))
        #expect(json["a"] == .int(9_007_199_254_740_993))
        #expect(json["b"] == .int(-1500))
        #expect(json["c"] == [true, false, nil])
        #expect(json["d"] == .string("xé😀\n"))
        #expect(json["e"] == .double(0.25))
    }

    @Test(arguments: [
        ("100", 100), ("-0", 0), ("100.0", 100), ("1e2", 100), ("1E+2", 100), ("0.1e1", 1), ("-1.5e3", -1500),
        ("9223372036854775807", Int.max), ("-9223372036854775808", Int.min), ("123456789012345678", 123_456_789_012_345_678),
    ])
    func aNumberThatIsAnIntegerExactlyReadsAsThatInteger(text: String, value: Int) throws {
        #expect(try JSONValue.parse(Array(text.utf8)) == .int(value))
    }

    @Test(arguments: ["99999999999999999999", "9223372036854775808", "-9223372036854775809", "1e400", "-1e400"])
    func aNumberThatWouldLoseItsValueIsRefused(text: String) {
        #expect(Self.reason(text) == .numberOutOfRange)
    }

    @Test func readingIntegersAsWrittenKeepsAFractionOrExponentADouble() throws {
        let numbers = JSONValue.Numbers.integersAsWritten
        #expect(try JSONValue.parse(Array("100".utf8), numbers: numbers) == .int(100))
        #expect(try JSONValue.parse(Array("-0".utf8), numbers: numbers) == .int(0))
        #expect(try JSONValue.parse(Array("100.0".utf8), numbers: numbers) == .double(100))
        #expect(try JSONValue.parse(Array("1e3".utf8), numbers: numbers) == .double(1000))
        #expect(try JSONValue.parseObject(Array(#"{"a":{"b":[1.0]}}"#.utf8), numbers: numbers)["a"]
            == .object(["b": .array([.double(1)])]))
    }

    @Test func aNumberOutOfRangeNamesTheMemberItWasTheValueOf() {
        func member(_ text: String) -> String? {
            do {
                _ = try JSONValue.parse(Array(text.utf8))
                return "parsed"
            } catch {
                #expect(error.reason == .numberOutOfRange)
                #expect(!error.description.contains("amount") && !error.description.contains("fee"))
                return error.member
            }
        }
        #expect(member(#"{"description":"d","amount":9223372036854775808}"#) == "amount")
        #expect(member(#"{"order":{"fee":1e400}}"#) == "fee")
        #expect(member("[9223372036854775808]") == nil)
    }

    @Test func aDoubleBeyondIntegersStaysADouble() throws {
        #expect(try JSONValue.parse(Array("1e19".utf8)) == .double(1e19))
        #expect(try JSONValue.parse(Array("-1.5e-3".utf8)) == .double(-0.0015))
    }

    @Test func duplicateNamesAreRefusedAtEveryDepth() {
        for text in [#"{"a":1,"a":1}"#, #"{"x":{"a":1,"b":2,"a":3}}"#, #"[{"k":1,"k":2}]"#, #"{"a":1,"\u0061":2}"#,
                     #"{"a":"x","a":3}"#] {
            #expect(Self.reason(text) == .duplicateKey, "\(text)")
        }
    }

    /// A caller can tell "you named a member twice" from "this is not JSON" only when it is true.
    @Test func aDuplicateNameInMalformedJSONIsReportedAsMalformed() {
        #expect(Self.reason(#"{"a":1,"a":2"#) == .syntax)
        #expect(Self.reason(#"{"a":1,"a":2,}"#) == .syntax)
        #expect(Self.reason(#"{"a":1,"a":2,"b":1e400}"#) == .numberOutOfRange)
    }

    static let malformed: [String] = [
        "", " ", "{", "{\"a\":1,}", "[1,]", "01", "{\"a\":01}", "[01]", "1.", ".5", "+1", "1e", "NaN", "Infinity", "'a'",
        "{'a':1}", "{a:1}", "{\"a\" 1}", "\"\\x\"", "\"\\u00\"", "\"\u{01}\"", "{} {}", "tru", "nul", "[1 2]",
        "{\"a\":{\"b\":}}", "{\"a\":1}x", "{\"a\":1}\u{0}", "\u{FEFF}{\"a\":1}",
    ]

    @Test(arguments: malformed)
    func malformedJSONIsRefusedWhereLaxParsersAcceptIt(text: String) {
        #expect(Self.reason(text) == .syntax, "\(text)")
    }

    @Test func invalidUTF8AndLoneSurrogatesAreRefused() throws {
        for bytes: [UInt8] in [[0x22, 0xC3, 0x28, 0x22], [0x22, 0xFF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22],
                               [0x22, 0x5C, 0x6E, 0xC0, 0xAF, 0x22]] {
            #expect(Self.reason(bytes) == .invalidUTF8, "\(bytes)")
        }
        for text in [#""\ud800""#, #""\udc00""#, #""\ud83d\u0041""#, #""\ud83dx""#, #"{"a":"\ude00"}"#] {
            #expect(Self.reason(text) == .loneSurrogate, "\(text)")
        }
        #expect(try JSONValue.parse(Array(#""a\u0000b""#.utf8)) == .string("a\u{0}b"))
        // Where: the string holding the bad byte (its opening quote), the lone half's backslash.
        #expect(throws: JSONError(reason: .invalidUTF8, offset: 5)) { try JSONValue.parse([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D]) }
        #expect(throws: JSONError(reason: .invalidUTF8, offset: 5)) { try JSONValue.parse(Array(#"{"a":"\n"#.utf8) + [0xFF, 0x22, 0x7D]) }
        #expect(throws: JSONError(reason: .loneSurrogate, offset: 7)) { try JSONValue.parse(Array(#"{"a":"x\ud800y"}"#.utf8)) }
        #expect(throws: JSONError(reason: .loneSurrogate, offset: 6)) { try JSONValue.parse(Array(#"{"a":"\ud83d\u0041"}"#.utf8)) }
    }

    @Test func nestingIsBounded() throws {
        func nested(_ depth: Int) -> [UInt8] { Array((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8) }
        #expect(throws: Never.self) { try JSONValue.parse(nested(JSONValue.defaultMaximumDepth)) }
        #expect(throws: JSONError.self) { try JSONValue.parse(nested(JSONValue.defaultMaximumDepth + 1)) }
        #expect(throws: JSONError.self) { try JSONValue.parse(nested(5_000)) }
        let objects = Array((String(repeating: #"{"a":"#, count: 2_000) + "1" + String(repeating: "}", count: 2_000)).utf8)
        #expect(Self.reason(String(decoding: objects, as: UTF8.self)) == .tooDeep)
        #expect(throws: Never.self) { try JSONValue.parse(nested(100), maximumDepth: 100) }
    }

    @Test func anObjectIsRequiredWhereOneIsExpected() throws {
        #expect(try JSONValue.parseObject(Array(#" {"a":1} "#.utf8)) == ["a": .int(1)])
        for text in ["[1,2,3]", #""x""#, "1", "amount=990", "", #"[{"a":1,"a":2}]"#] {
            #expect(throws: JSONError(reason: .notAnObject, offset: 0), "\(text)") { try JSONValue.parseObject(Array(text.utf8)) }
        }
        #expect(throws: JSONError(reason: .duplicateKey, offset: 7)) { try JSONValue.parseObject(Array(#"{"a":1,"a":2}"#.utf8)) }
    }

    /// Bodies, tokens and payloads carry secrets; an error says which rule, and where, only.
    @Test func anErrorNeverRepeatsTheInput() {
        for text in [#"{"key":"s3cr3t-value","key":"s3cr3t-value"}"#, #"{"key":"s3cr3t-value",}"#, #"{"s3cr3t-value":1e400}"#] {
            do {
                _ = try JSONValue.parse(Array(text.utf8))
                Issue.record("accepted \(text)")
            } catch {
                #expect(!"\(error)".contains("s3cr3t"))
                #expect(!String(reflecting: error).contains("s3cr3t"))
            }
        }
    }

    @Test func aNonContiguousCollectionReadsAsItsBytes() throws {
        let bytes = Array(#"{"a":[1,"b"]}"#.utf8)
        #expect(try JSONValue.parse(bytes.lazy.map { $0 }) == JSONValue.parse(bytes))
    }
}

struct JSONWriterTests {
    @Test func serializationRoundTripsAndFoundationAgrees() throws {
        let value: JSONValue = ["s": "a\"b\\c\u{01}\u{08}é/", "i": -42, "f": .double(0.25), "b": true, "n": nil, "a": [1, ["x": "y"]]]
        let text = value.serialized()
        #expect(try JSONValue.parse(Array(text.utf8)) == value)
        let foundation = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        #expect(foundation?["s"] as? String == "a\"b\\c\u{01}\u{08}é/")
        #expect(foundation?["i"] as? Int == -42)
        #expect(text == #"{"a":[1,{"x":"y"}],"b":true,"f":0.25,"i":-42,"n":null,"s":"a\"b\\c\u0001\bé/"}"#)
    }

    @Test func doublesAreWrittenAsJSONCanRead() throws {
        #expect(JSONValue.double(3).serialized() == "3")
        #expect(JSONValue.double(.nan).serialized() == "null")
        #expect(JSONValue.double(-.infinity).serialized() == "null")
        #expect(try JSONValue.parse(JSONValue.double(1e300).bytes()) == .double(1e300))
    }

    @Test func anObjectWrittenMemberByMemberIsOneJSONObject() throws {
        var writer = JSONObjectWriter()
        writer.string("a", "x\ny")
        writer.string("absent", nil)
        writer.stringOrNull("b", nil)
        writer.number("c", 7)
        writer.bool("d", false)
        writer.strings("e", ["1", "2"])
        writer.raw("f", JSONValue.object(["g": 1]).bytes())
        let bytes = writer.finish()
        #expect(try JSONValue.parseObject(bytes) == ["a": "x\ny", "b": nil, "c": 7, "d": false, "e": ["1", "2"], "f": ["g": 1]])
    }
}
