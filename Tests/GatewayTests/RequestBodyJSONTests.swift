// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import JSON
import SimulatorKit
import Testing

/// Request bodies (`POST /v1/orders`, refunds, iOS reports) against `JSONDecoder`, which read them
/// before the JSON module's reader did: the same members and kinds for every well-formed body
/// that names each member once, and malformed JSON, repeated names, a byte order mark and
/// numbers that would lose their value refused whole (the reader's own rules: `JSONReaderTests`).
struct RequestBodyJSONTests {
    /// What `JSONDecoder` made of a value, with its kind kept as the gateway's validation needs it.
    struct Decoded: Decodable {
        let value: JSONValue

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                value = .null
            } else if let bool = try? container.decode(Bool.self) {
                value = .bool(bool)
            } else if let int = try? container.decode(Int.self) {
                value = .int(int)
            } else if let double = try? container.decode(Double.self) {
                value = .double(double)
            } else if let string = try? container.decode(String.self) {
                value = .string(string)
            } else if let elements = try? container.decode([Decoded].self) {
                value = .array(elements.map(\.value))
            } else {
                value = .object(try container.decode([String: Decoded].self).mapValues(\.value))
            }
        }
    }

    static func foundation(_ body: [UInt8]) -> [String: JSONValue]? {
        (try? JSONDecoder().decode([String: Decoded].self, from: Data(body)))?.mapValues(\.value)
    }

    static let wellFormed: [String] = [
        #"{}"#, #" {"a":1} "#, "\t{\n\"a\"\r:1}\n", #"{"a":100.0}"#, #"{"a":1e2}"#, #"{"a":1E+2}"#, #"{"a":-0}"#,
        #"{"a":1.5}"#, #"{"a":-1.5e-3}"#, #"{"a":9223372036854775807}"#,
        #"{"a":-9223372036854775808}"#, #"{"a":true,"b":false,"c":null}"#, #"{"a":[1,[2,{"x":[]}]],"b":{}}"#,
        #"{"a":"\u0041\"\\\/\b\f\n\r\t"}"#, #"{"a":"\ud83d\ude00 é 中"}"#,
        #"{"":1}"#, #"{"a":"\u0000"}"#, #"{"a":0.1e1}"#, #"{"a":"100"}"#, #"{"a":1e19}"#,
        #"{"amount":990,"description":"Swift 入门课","client_ip":"203.0.113.7","out_trade_no":"A_b-c|d*9"}"#,
    ]

    @Test(arguments: wellFormed)
    func aWellFormedBodyReadsAsJSONDecoderReadIt(body: String) throws {
        let mine = try JSONValue.parseObject(Array(body.utf8))
        #expect(mine == Self.foundation(Array(body.utf8)))
    }

    /// What `JSONDecoder` let through and the gateway now refuses: `{"amount":990,…,"amount":1}`
    /// means one amount to one reader and another to the next; 20 digits lose theirs as a double.
    static let refusedSinceJSONDecoder: [String] = [
        #"{"a":1,"a":2}"#, #"{"a":"x","a":3}"#, #"{"x":{"a":1,"a":2}}"#, "\u{FEFF}{\"a\":1}", #"{"a":99999999999999999999}"#,
    ]

    @Test(arguments: refusedSinceJSONDecoder)
    func whatJSONDecoderResolvedSilentlyIsRefused(body: String) {
        #expect(Self.foundation(Array(body.utf8)) != nil)
        #expect(throws: JSONError.self) { try JSONValue.parseObject(Array(body.utf8)) }
    }

    static let malformed: [String] = [
        "", " ", #"[1]"#, #""x""#, #"{"a":1}x"#, #"{"a":01}"#, #"{"a":.5}"#, #"{"a":1.}"#, #"{"a":+1}"#, #"{"a":1e}"#,
        #"{"a":1e400}"#, #"{"a":tru}"#, #"{"a":nul}"#, #"{"a":{"b":}}"#, #"{"a":"\ud83d"}"#, #"{"a":"\ude00"}"#,
        #"{"a":"\x"}"#, #"{"a":"\u00"}"#, "{\"a\":\"\u{1}\"}", #"{"a" 1}"#, #"{a:1}"#, #"{'a':1}"#, #"{"a":1,}"#,
        #"{"a":[1,]}"#, #"{"a":[01]}"#, #"{"a":1 2}"#, "{\"a\":1}\u{0}", #"{"a":1,"a":2"#,
    ]

    /// Malformed JSON is refused whole, and never reported as a repeated name (the API's answer
    /// names the reason: "the body gives a member name twice" or "the body must be a JSON object").
    @Test(arguments: malformed)
    func malformedJSONIsRefusedWhole(body: String) {
        do {
            _ = try JSONValue.parseObject(Array(body.utf8))
            Issue.record("accepted")
        } catch {
            #expect(error.reason != .duplicateKey)
        }
    }

    @Test func aRepeatedNameInAWellFormedBodyIsReportedAsSuch() {
        do {
            _ = try JSONValue.parseObject(Array(#"{"amount":990,"amount":1}"#.utf8))
            Issue.record("accepted")
        } catch {
            #expect(error.reason == .duplicateKey)
        }
    }

    @Test func invalidUTF8AndExcessiveNestingAreRefused() {
        #expect(throws: JSONError.self) {
            try JSONValue.parseObject([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D])
        }
        let deep = Array("{\"a\":".utf8) + Array(repeating: UInt8(ascii: "["), count: 600)
            + Array(repeating: UInt8(ascii: "]"), count: 600) + [UInt8(ascii: "}")]
        #expect(throws: JSONError.self) { try JSONValue.parseObject(deep) }
    }

    /// Random edits of a valid body: whatever the reader accepts, JSONDecoder read the same way.
    @Test func whateverTheReaderAcceptsJSONDecoderReadTheSame() {
        let base = Array(#"{"amount":990,"description":"a\"b\u00e9","client_ip":"203.0.113.7","x":[1,{"y":null}],"e":-1.5e3,"t":true}"#.utf8)
        var generator = SeededRandom(seed: 0x5EED)
        var accepted = 0
        for _ in 0..<3000 {
            var body = base
            for _ in 0..<Int(generator.next() % 3 + 1) where !body.isEmpty {
                let index = Int(generator.next() % UInt64(body.count))
                let byte = UInt8(0x20 + generator.next() % 0x5F)
                switch generator.next() % 3 {
                case 0: body[index] = byte
                case 1: body.remove(at: index)
                default: body.insert(byte, at: index)
                }
            }
            guard let mine = try? JSONValue.parseObject(body) else { continue }
            accepted += 1
            #expect(mine == Self.foundation(body), "\(String(decoding: body, as: UTF8.self))")
        }
        #expect(accepted > 100)
    }
}
