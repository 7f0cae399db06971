// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import HTTP
import StorageCore
import StoreTestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

/// reliability.md T5 at reduced scale through the gateway's own routes over real sockets (the full
/// run, against the production build with slow-loris and 100 MB bodies, is
/// `scripts/battery/run T5`; the parser's corpus is HostileXMLTests, the server's limits
/// ServerLimitsTests). Every hostile body is refused with a clear error, no file's content comes
/// back, nothing is written, and a normal request is answered right after.
struct BatteryHostileInputTests {
    static let canary = "canary-" + UUID().uuidString
    static let canaryPath: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("t5-\(UUID().uuidString).txt").path
        _ = FileManager.default.createFile(atPath: path, contents: Data(canary.utf8))
        return path
    }()

    static func xml() -> [(String, [UInt8])] {
        let file = "file://" + canaryPath
        func field(_ value: [UInt8]) -> [UInt8] { Array("<xml><return_code>SUCCESS</return_code><a>".utf8) + value + Array("</a></xml>".utf8) }
        var laughs = #"<?xml version="1.0"?><!DOCTYPE xml [<!ENTITY lol0 "lol">"#
        for i in 1...9 { laughs += "<!ENTITY lol\(i) \"" + String(repeating: "&lol\(i - 1);", count: 10) + "\">" }
        laughs += "]><xml><a>&lol9;</a></xml>"
        return [
            ("XXE reading a file", Array(#"<!DOCTYPE xml [<!ENTITY xxe SYSTEM "\#(file)">]><xml><attach>&xxe;</attach></xml>"#.utf8)),
            ("parameter entity", Array(#"<!DOCTYPE xml [<!ENTITY % pe SYSTEM "\#(file)"> %pe;]><xml><a>1</a></xml>"#.utf8)),
            ("billion laughs", Array(laughs.utf8)),
            ("deep nesting", Array(String(repeating: "<xml>", count: 10_000).utf8)),
            ("invalid UTF-8", field([0xC0, 0xAF])),
            ("NUL byte", field([0x31, 0x00, 0x32])),
            ("duplicate fields", Array("<xml><total_fee>1</total_fee><total_fee>100</total_fee></xml>".utf8)),
            ("unterminated CDATA", Array("<xml><a><![CDATA[SUCCESS</a></xml>".utf8)),
            ("processing instruction", Array("<xml><?php system('id'); ?><a>1</a></xml>".utf8)),
            ("over 64 KiB", Array("<xml><a>".utf8) + Array(repeating: UInt8(ascii: "x"), count: 200_000) + Array("</a></xml>".utf8)),
        ]
    }

    /// scripts/battery/t5_hostile.py's JSON corpus, each with the answer's message (all 400
    /// `invalid_request`, but the body over the route's 16 KiB: 413): the battery relies on them.
    static func json() -> [(String, [UInt8])] {
        let valid = #"{"amount":990,"description":"battery","client_ip":"203.0.113.7","out_trade_no":"t5-json"}"#
        return [
            ("deep nesting", Array((String(repeating: "[", count: 5_000) + String(repeating: "]", count: 5_000)).utf8)),
            ("deep object nesting", Array((String(repeating: #"{"a":"#, count: 2_000) + "1" + String(repeating: "}", count: 2_000)).utf8)),
            ("invalid UTF-8", Array(valid.replacingOccurrences(of: "battery", with: "x").utf8).map { $0 == UInt8(ascii: "x") ? 0xFF : $0 }),
            ("raw NUL", Array(valid.replacingOccurrences(of: "battery", with: "a\u{0}b").utf8)),
            ("escaped NUL", Array(valid.replacingOccurrences(of: "battery", with: #"a\u0000b"#).utf8)),
            ("duplicate keys", Array((String(valid.dropLast()) + #","amount":1}"#).utf8)),
            ("lone surrogate", Array(valid.replacingOccurrences(of: "battery", with: #"\ud800"#).utf8)),
            ("an amount of 1e400", Array(valid.replacingOccurrences(of: "990", with: "1e400").utf8)),
            ("unterminated", Array(valid.dropLast(3).utf8)),
            ("not JSON", Array("amount=990".utf8)),
            ("an array", Array("[1,2,3]".utf8)),
            ("over 16 KiB", Array((#"{"description":""# + String(repeating: "x", count: 100_000) + #""}"#).utf8)),
        ]
    }

    static let jsonMessages: [String: String] = [
        "escaped NUL": "description must not contain control, text-direction or invisible characters",
        "duplicate keys": "the body gives a member name twice",
        // A number no reader can hold is named by its member, not called a malformed body.
        "an amount of 1e400": "amount is out of range",
        // Bytes that are not UTF-8 are called that, not "not a JSON object".
        "invalid UTF-8": "the body must be UTF-8: the string at byte 28 holds a byte that is not",
        "lone surrogate": "the escape at byte 29 is half a surrogate pair, which is no character",
        // An object that is too deep, or not JSON at all, is called that, with where it broke.
        "deep object nesting": "the body nests arrays and objects more than 32 deep (at byte 160)",
        "raw NUL": "the body must be a JSON object: it is not valid JSON at byte 30",
        "unterminated": "the body must be a JSON object: it is not valid JSON at byte 86",
    ]

    /// The answer to a body, or nil when the body is over the route's limit and its upload failed:
    /// the 413 goes out as soon as the size is known, and the server may close before the client
    /// has sent the rest, so the client sees the send fail instead of reading the 413 (a refusal
    /// too; seen once in a full run on a loaded machine, with the 100 KB JSON body).
    static func refusable(_ body: [UInt8], over limit: Int,
                          _ send: ([UInt8]) async throws -> GatewayRig.Response) async throws -> GatewayRig.Response? {
        do {
            return try await send(body)
        } catch where body.count > limit {
            return nil
        }
    }

    @Test(arguments: StoreKind.all)
    func hostileBodiesAtTheNotifyAndCreateRoutesAreRefusedAndWriteNothing(store: StoreKind) async throws {
        let rig = try await GatewayRig.start(.sockets, store: store)
        defer { Task { await rig.stop() } }
        #expect(try await rig.createOrder("t5-normal").status == 201)
        let rows = await TableRowCounts.of(rig.database)
        var refusals: [String] = []
        for (name, body) in Self.xml() {
            guard let reply = try await Self.refusable(body, over: GatewayAPI.notifyBodyLimit, {
                try await rig.send(.post, "/wechat/notify", token: nil, bytes: $0)
            }) else {
                refusals.append(name)
                continue
            }
            let text = String(decoding: reply.body, as: UTF8.self)
            #expect((reply.status == 200 && text.contains("<return_code><![CDATA[FAIL]]></return_code>")) || reply.status == 413,
                    "notify \(name): \(reply.status) \(text.prefix(80))")
            #expect(!text.contains(Self.canary), "notify \(name) answered the file's content")
            refusals.append(name)
        }
        for (name, body) in Self.json() {
            guard let reply = try await Self.refusable(body, over: GatewayAPI.orderBodyLimit, {
                try await rig.send(.post, "/v1/orders", bytes: $0, headers: ["Content-Type": "application/json"])
            }) else {
                refusals.append(name)
                continue
            }
            #expect(reply.status == 400 || reply.status == 413, "create \(name): \(reply.status)")
            if reply.status == 400 {
                let error = reply.json["error"] as? [String: Any]
                #expect(error?["code"] as? String == "invalid_request", "create \(name)")
                #expect(error?["message"] as? String == Self.jsonMessages[name] ?? "the body must be a JSON object", "create \(name)")
            }
            let anonymous = try await Self.refusable(body, over: GatewayAPI.orderBodyLimit) {
                try await rig.send(.post, "/v1/orders", token: nil, bytes: $0)
            }
            #expect(anonymous == nil || anonymous?.status == 401 || anonymous?.status == 413,
                    "create without a token, \(name): \(anonymous?.status ?? 0)")
            refusals.append(name)
        }
        // 20 MB announced by Content-Length: refused with 413 as soon as the size is known.
        // The server may close before the client has sent the whole body: that upload fails
        // (sendFailed) instead of reading the 413, a refusal too; the battery's T5 reads the 413.
        let huge = try? await rig.send(.post, "/wechat/notify", token: nil,
                                      bytes: Array(repeating: UInt8(ascii: "x"), count: 20_000_000))
        #expect(huge == nil || huge?.status == 413)
        #expect(await TableRowCounts.of(rig.database) == rows, "hostile input wrote a row")
        #expect(try await rig.send(.get, "/v1/orders/t5-normal").json["state"] as? String == "NOTPAY")
        #expect(try await rig.createOrder("t5-after").status == 201, "a normal create right after")
        #expect(refusals.count == Self.xml().count + Self.json().count)
    }
}
