// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON
import Testing

/// `parseMembers`, the shaped reader of the notify path, against the whole reader (`parseObject`)
/// and Foundation's `JSONSerialization`: it must refuse exactly what the whole reader refuses,
/// with the same error, and read the members it keeps to the same values.
struct JSONMembersTests {
    static let resource = JSONShape(["algorithm", "ciphertext", "nonce", "associated_data", "original_type"])
    static let envelope = JSONShape(["id", "create_time", "resource_type", "event_type", "summary", "resource"],
                                    objects: ["resource": resource])
    static let transaction = JSONShape(
        ["appid", "mchid", "out_trade_no", "transaction_id", "trade_state", "success_time", "payer", "amount"],
        objects: ["payer": JSONShape(["openid"]), "amount": JSONShape(["total", "payer_total", "currency"])])
    static let shapes = [envelope, transaction, JSONShape(["a", "b"], objects: ["a": JSONShape(["b"])])]

    static let notify = #"{"id":"EV-2018022511223320873","create_time":"2026-12-04T13:30:06+08:00","resource_type":"encrypt-resource","event_type":"TRANSACTION.SUCCESS","summary":"支付成功","resource":{"original_type":"transaction","algorithm":"AEAD_AES_256_GCM","ciphertext":"QUJDREVGR0hJSktMTU5PUA==","associated_data":"transaction","nonce":"fdasflkja484"}}"#
    static let paid = #"{"appid":"wxd678efh567hg6787","mchid":"1900000109","out_trade_no":"T1","transaction_id":"4200002345","trade_state":"SUCCESS","success_time":"2026-12-04T13:30:05+08:00","payer":{"openid":"oUpF8u"},"amount":{"total":68000,"payer_total":68000,"currency":"CNY","payer_currency":"CNY"},"scene_info":{"device_id":"013467007045764"},"promotion_detail":[{"amount":100,"coupon_id":"109519"}]}"#

    /// What `parseObject` gives, kept to `shape`'s names (recursively), as `parseMembers` reports it.
    static func expected(_ members: [String: JSONValue], _ shape: JSONShape) -> JSONValue {
        var kept: [String: JSONValue] = [:]
        for name in shape.names {
            guard let value = members[name] else { continue }
            if case .object(let nested) = value, let nestedShape = nestedShape(shape, name) {
                kept[name] = expected(nested, nestedShape)
            } else {
                kept[name] = value
            }
        }
        return .object(kept)
    }

    static func nestedShape(_ shape: JSONShape, _ name: String) -> JSONShape? {
        if shape.names == envelope.names, name == "resource" { return resource }
        if shape.names == transaction.names, name == "payer" { return JSONShape(["openid"]) }
        if shape.names == transaction.names, name == "amount" { return JSONShape(["total", "payer_total", "currency"]) }
        if shape.names == ["a", "b"], name == "a" { return JSONShape(["b"]) }
        return nil
    }

    /// Both readers on `bytes`: the same error, or the same kept members.
    static func agree(_ bytes: [UInt8], _ shape: JSONShape, maximumDepth: Int = 8, sourceLocation: SourceLocation = #_sourceLocation) {
        let whole: Result<[String: JSONValue], JSONError>
        do { whole = .success(try JSONValue.parseObject(bytes, maximumDepth: maximumDepth)) } catch { whole = .failure(error) }
        let shaped: Result<JSONMembers, JSONError>
        do { shaped = .success(try JSONValue.parseMembers(bytes, shape: shape, maximumDepth: maximumDepth)) } catch { shaped = .failure(error) }
        switch (whole, shaped) {
        case (.success(let members), .success(let read)):
            #expect(read.objectValue == expected(members, shape), sourceLocation: sourceLocation)
        case (.failure(let a), .failure(let b)):
            #expect(a == b, "\(String(decoding: bytes, as: UTF8.self))", sourceLocation: sourceLocation)
        default:
            Issue.record("the readers disagree on \(String(decoding: bytes, as: UTF8.self)): \(whole) / \(shaped)",
                         sourceLocation: sourceLocation)
        }
    }

    @Test("a notify envelope and a paid transaction read by shape keep exactly their named members, unknown members checked and dropped")
    func shapedReadKeepsNamedMembers() throws {
        let envelope = try JSONValue.parseMembers(Array(Self.notify.utf8), shape: Self.envelope)
        #expect(envelope["id"] == .value("EV-2018022511223320873"))
        #expect(envelope["summary"] == .value("支付成功"))
        guard case .object(let resource)? = envelope["resource"] else {
            Issue.record("resource not read by its shape")
            return
        }
        #expect(resource["nonce"] == .value("fdasflkja484"))
        let paid = try JSONValue.parseMembers(Array(Self.paid.utf8), shape: Self.transaction)
        guard case .object(let amount)? = paid["amount"] else {
            Issue.record("amount not read by its shape")
            return
        }
        #expect(amount["total"] == .value(68000))
        #expect(amount["payer_currency"] == nil)
        #expect(paid["scene_info"] == nil && paid["trade_type"] == nil)
        for shape in Self.shapes {
            Self.agree(Array(Self.notify.utf8), shape)
            Self.agree(Array(Self.paid.utf8), shape)
        }
    }

    @Test("hostile documents are refused by the shaped reader with the whole reader's error: duplicates at any depth, escapes, surrogates, types, depth, numbers, trailing bytes")
    func hostileDocumentsAreRefusedAlike() {
        let documents = [
            // A repeated name: a kept one, an escaped spelling of a kept one, an unknown one, inside
            // a skipped member, inside a kept nested object, after a syntax error.
            #"{"id":"a","id":"b"}"#, #"{"id":"a","\u0069d":"b"}"#, #"{"\u0069d":"a","id":"b"}"#, #"{"x":1,"x":2}"#,
            #"{"x":{"y":1,"y":2}}"#, #"{"x":[{"y":1,"y":2}]}"#, #"{"resource":{"nonce":"a","nonce":"b"}}"#,
            #"{"amount":{"total":1,"tot\u0061l":2}}"#, #"{"id":"a","id":"b",}"#, #"{"a":{"b":1,"b":2},"a":3}"#,
            #"{"a":{"b":1},"b":2,"c":3,"b":4}"#,
            // Escapes and surrogates in names and values, kept and skipped.
            #"{"id":"\ud83d\ude00"}"#, #"{"id":"\ud800"}"#, #"{"id":"\udc00"}"#, #"{"x":"\ud800x"}"#, #"{"\ud800":1}"#,
            #"{"id":"\u00e9\n\t\"\\\/"}"#, #"{"id":"\x"}"#, #"{"id":"\u12G4"}"#, #"{"i\u0064":"v"}"#, #"{"\"":1}"#,
            "{\"id\":\"a\u{1}b\"}", "{\"i\u{1}d\":1}", "{\"id\"\u{0}:1}",
            // Types the protocol does not expect: the reader keeps them, FieldReader refuses them.
            #"{"id":1,"resource":"x","amount":[1],"payer":null,"total":true}"#, #"{"resource":null}"#, #"{"resource":[]}"#,
            // Depth: in a kept object, in a skipped member, at the limit and beyond.
            #"{"x":[[[[[[[1]]]]]]]}"#, #"{"x":[[[[[[[[1]]]]]]]]}"#, #"{"a":{"b":{"c":{"d":{"e":{"f":{"g":{}}}}}}}}"#,
            #"{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{}}}}}}}}}"#, #"{"resource":{"x":[[[[[[1]]]]]]}}"#,
            #"{"resource":{"x":[[[[[[[1]]]]]]]}}"#,
            // Numbers: huge, out of range, malformed, in kept and skipped members.
            #"{"total":99999999999999999999}"#, #"{"amount":{"total":1e400}}"#, #"{"x":-9223372036854775809}"#,
            #"{"a":{"b":1e400}}"#, #"{"amount":{"total":01}}"#, #"{"amount":{"total":1.}}"#, #"{"amount":{"total":-}}"#,
            #"{"amount":{"total":100.0}}"#, #"{"amount":{"total":1e2}}"#, #"{"amount":{"total":9223372036854775807}}"#,
            // Structure: trailing bytes, commas, a byte order mark, not an object, truncation.
            #"{"id":"a"} x"#, #"{"id":"a"}}"#, #"{"id":"a",}"#, #"{,}"#, #"{"id" "a"}"#, #"{"id":"a""b":1}"#,
            "\u{FEFF}{\"id\":\"a\"}", #"["id"]"#, #""id""#, "", " ", "{", #"{"id":"a"#, #"{"id":"#, #"{"id""#, "{} ",
            " \n{ \"id\" : \"a\" , \"x\" : { } }\r\n", #"{"id":tru}"#, #"{"id":nul}"#, #"{"x":[1,]}"#, #"{'id':'a'}"#,
        ]
        for document in documents {
            for shape in Self.shapes {
                Self.agree(Array(document.utf8), shape)
            }
        }
        // Invalid UTF-8 in a kept name or value, a skipped one, and bytes that are a kept name's prefix.
        for bytes: [UInt8] in [[0x7B, 0x22, 0x69, 0x64, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D],
                               [0x7B, 0x22, 0xC3, 0x22, 0x3A, 0x31, 0x7D], [0x7B, 0x22, 0x69, 0xED, 0xA0, 0x80, 0x22, 0x3A, 0x31, 0x7D],
                               [0x7B, 0x22, 0x69, 0x64, 0xC3, 0xA9, 0x22, 0x3A, 0x31, 0x7D]] {
            for shape in Self.shapes { Self.agree(bytes, shape) }
        }
    }

    @Test("20,000 seeded mutations of a notify and a transaction: the shaped reader refuses and reads exactly as the whole reader")
    func seededMutationsAgree() {
        var random = SplitMix(seed: 26)
        let alphabet = Array(#"{}[]":,\ u0123456789abcdefe+-.tnr"#.utf8) + [0x00, 0x1F, 0x80, 0xC3, 0xED, 0xFF]
        for (source, shape) in [(Self.notify, Self.envelope), (Self.paid, Self.transaction)] {
            let original = Array(source.utf8)
            for _ in 0..<10_000 {
                var bytes = original
                for _ in 0..<(1 + random.next(3)) {
                    let position = random.next(bytes.count + 1)
                    switch random.next(4) {
                    case 0 where position < bytes.count: bytes[position] = alphabet[random.next(alphabet.count)]
                    case 1 where position < bytes.count: bytes.remove(at: position)
                    case 2:
                        // A member repeated: a slice of the document copied elsewhere.
                        let start = random.next(original.count), length = random.next(24)
                        bytes.insert(contentsOf: original[start..<min(original.count, start + length)], at: position)
                    default: bytes.insert(alphabet[random.next(alphabet.count)], at: position)
                    }
                }
                Self.agree(bytes, shape)
            }
        }
    }

    @Test("the members kept read as Foundation's JSONSerialization reads them (strings with escapes and non-ASCII, integers)")
    func keptMembersMatchFoundation() throws {
        let documents = [
            Self.notify, Self.paid,
            #"{"id":"a\u00e9\ud83d\ude00\n\"\\\/b","summary":"支付成功 · 年度会员","amount":{"total":9223372036854775807,"currency":"CNY"}}"#,
            #"{"appid":"","mchid":"0","out_trade_no":"x\u0041","amount":{"total":-0,"payer_total":0}}"#,
        ]
        for document in documents {
            let bytes = Array(document.utf8)
            let foundation = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
            for shape in [Self.envelope, Self.transaction] {
                let members = try JSONValue.parseMembers(bytes, shape: shape)
                for (name, member) in zip(members.names, members.values) {
                    switch member {
                    case .value(.string(let text))?: #expect(foundation[name] as? String == text)
                    case .value(.int(let number))?: #expect((foundation[name] as? NSNumber)?.intValue == number)
                    case .object(let nested)?:
                        let object = try #require(foundation[name] as? [String: Any])
                        for (inner, value) in zip(nested.names, nested.values) {
                            switch value {
                            case .value(.string(let text))?: #expect(object[inner] as? String == text)
                            case .value(.int(let number))?: #expect((object[inner] as? NSNumber)?.int64Value == Int64(number))
                            case nil: #expect(object[inner] == nil)
                            default: break
                            }
                        }
                    case nil: #expect(foundation[name] == nil)
                    default: break
                    }
                }
            }
        }
        // Where Foundation resolves instead of refusing, the shaped reader refuses like the whole one.
        let repeated = Array(#"{"id":"a","id":"b"}"#.utf8)
        #expect(try JSONSerialization.jsonObject(with: Data(repeated)) is [String: Any])
        #expect(throws: JSONError(reason: .duplicateKey, offset: 10)) { try JSONValue.parseMembers(repeated, shape: Self.envelope) }
    }

    @Test("a large document with thousands of unknown members is read in one pass, a repeated one among them found")
    func manyUnknownMembersAreBounded() {
        var text = #"{"id":"a""#
        for index in 0..<20_000 { text += #","m\#(index)":\#(index)"# }
        Self.agree(Array((text + "}").utf8), Self.envelope)
        Self.agree(Array((text + #","m19999":1}"#).utf8), Self.envelope)
    }
}

/// A small deterministic generator (SplitMix64), so a failure reproduces.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(max(bound, 1)))
    }
}
