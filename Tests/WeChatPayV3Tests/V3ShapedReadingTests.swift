// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON
import Testing
@testable import WeChatPayV3

/// The notify envelope and the transaction are read by shape (only their named members kept):
/// they must accept, refuse and read exactly as the same inits over the whole document did.
struct V3ShapedReadingTests {
    static let envelope = Array(#"{"id":"EV-2018022511223320873","create_time":"2026-12-04T13:30:06+08:00","resource_type":"encrypt-resource","event_type":"TRANSACTION.SUCCESS","summary":"支付成功","resource":{"original_type":"transaction","algorithm":"AEAD_AES_256_GCM","ciphertext":"QUJDREVGR0hJSktMTU5PUA==","associated_data":"transaction","nonce":"fdasflkja484"}}"#.utf8)
    static let transaction = Array(#"{"appid":"wxd678efh567hg6787","mchid":"1900000109","out_trade_no":"T1","transaction_id":"4200002345","trade_type":"APP","trade_state":"SUCCESS","trade_state_desc":"支付成功","bank_type":"OTHERS","attach":"user=1","success_time":"2026-12-04T13:30:05+08:00","payer":{"openid":"oUpF8u"},"amount":{"total":68000,"payer_total":68000,"currency":"CNY","payer_currency":"CNY"},"scene_info":{"device_id":"0134"}}"#.utf8)

    static func both<T: Equatable>(_ bytes: [UInt8], shaped: ([UInt8]) throws(WeChatPayV3Error) -> T,
                                   whole: (FieldReader) throws(WeChatPayV3Error) -> T,
                                   sourceLocation: SourceLocation = #_sourceLocation) {
        let a: Result<T, WeChatPayV3Error>
        do { a = .success(try shaped(bytes)) } catch { a = .failure(error) }
        let b: Result<T, WeChatPayV3Error>
        do { b = .success(try whole(try FieldReader.document(bytes))) } catch { b = .failure(error) }
        #expect(a == b, "\(String(decoding: bytes, as: UTF8.self))", sourceLocation: sourceLocation)
    }

    static func agree(envelope bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        both(bytes, shaped: { (body) throws(WeChatPayV3Error) in try V3Notification(body: body) },
             whole: { (reader) throws(WeChatPayV3Error) in try V3Notification(reader) }, sourceLocation: sourceLocation)
    }

    static func agree(transaction bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        both(bytes, shaped: { (body) throws(WeChatPayV3Error) in try V3Transaction(body: body) },
             whole: { (reader) throws(WeChatPayV3Error) in try V3Transaction(reader) }, sourceLocation: sourceLocation)
    }

    static func replacing(_ bytes: [UInt8], _ old: String, _ new: String) -> [UInt8] {
        Array(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: old, with: new).utf8)
    }

    @Test("the envelope and the transaction read by shape equal their whole reading, and each field error is the same")
    func fieldErrorsAreTheSame() throws {
        let notification = try V3Notification(body: Self.envelope)
        #expect(notification.resource.nonce == "fdasflkja484" && notification.summary == "支付成功")
        let paid = try V3Transaction(body: Self.transaction)
        #expect(paid.total == 68000 && paid.payerOpenID == "oUpF8u" && paid.tradeStateDescription == "支付成功")
        Self.agree(envelope: Self.envelope)
        Self.agree(transaction: Self.transaction)
        let envelopeCases: [(String, String)] = [
            (#""id":"EV-2018022511223320873","#, ""), (#""id":"EV-2018022511223320873""#, #""id":7"#),
            (#""resource_type":"encrypt-resource""#, #""resource_type":"plain""#), (#""summary":"支付成功""#, #""summary":null"#),
            (#""summary":"支付成功""#, #""summary":["x"]"#), (#","resource":{"#, #","resource":null,"r":{"#),
            (#","resource":{"#, #","resource":"x","r":{"#), (#","resource":{"#, #","resource":[],"r":{"#),
            (#","resource":{"#, #","res":{"#), (#""algorithm":"AEAD_AES_256_GCM""#, #""algorithm":"AES""#),
            (#""algorithm":"AEAD_AES_256_GCM""#, #""algorithm":1"#), (#""nonce":"fdasflkja484""#, #""nonce":"""#),
            (#""nonce":"fdasflkja484""#, #""nonce":"\#(String(repeating: "n", count: 65))""#),
            (#""ciphertext":"QUJDREVGR0hJSktMTU5PUA==","#, ""), (#""original_type":"transaction""#, #""original_type":{}"#),
            (#""event_type":"TRANSACTION.SUCCESS""#, #""event_type":"TRANSACTION.SUCCESS","event_type":"REFUND.SUCCESS""#),
            (#""id":"EV-2018022511223320873""#, #""i\u0064":"EV-2018022511223320873""#),
            (#""create_time":"2026-12-04T13:30:06+08:00","#, #""create_time":"\ud800","#),
            (#""id":"EV-2018022511223320873""#, #""id":"\#(String(repeating: "é", count: 64))""#),
            (#""id":"EV-2018022511223320873""#, #""id":"\#(String(repeating: "é", count: 65))""#),
        ]
        for (old, new) in envelopeCases { Self.agree(envelope: Self.replacing(Self.envelope, old, new)) }
        let transactionCases: [(String, String)] = [
            (#""trade_state":"SUCCESS""#, #""trade_state":"PAID""#), (#""transaction_id":"4200002345","#, ""),
            (#""total":68000"#, #""total":-1"#), (#""total":68000"#, #""total":"68000""#), (#""total":68000"#, #""total":680.5"#),
            (#""total":68000"#, #""total":68000.0"#), (#""total":68000"#, #""total":99999999999999999999"#),
            (#""amount":{"#, #""amount":null,"x":{"#), (#""amount":{"#, #""amount":7,"x":{"#), (#""payer":{"#, #""payer":[],"p":{"#),
            (#""success_time":"2026-12-04T13:30:05+08:00""#, #""success_time":"yesterday""#),
            (#""appid":"wxd678efh567hg6787""#, #""appid":"\#(String(repeating: "a", count: 33))""#),
            (#""scene_info":{"device_id":"0134"}"#, #""scene_info":{"device_id":"0134","device_id":"1"}"#),
            (#""openid":"oUpF8u""#, #""openid":"oUpF8u","openid":"x""#), (#""currency":"CNY","#, #""currency":"CNY","curr\u0065ncy":"USD","#),
            (#""trade_state_desc":"支付成功""#, #""trade_state_desc":true"#),
        ]
        for (old, new) in transactionCases { Self.agree(transaction: Self.replacing(Self.transaction, old, new)) }
    }

    @Test("10,000 seeded mutations of an envelope and of a transaction: the shaped reading accepts, refuses and reads as the whole one")
    func seededMutationsAgree() {
        var state: UInt64 = 0x26
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(max(bound, 1)))
        }
        let alphabet = Array(#"{}[]":,\ u0123456789aeflnrstu-+.E"#.utf8) + [0x00, 0x80, 0xC3, 0xFF]
        for original in [Self.envelope, Self.transaction] {
            for _ in 0..<5_000 {
                var bytes = original
                for _ in 0..<(1 + next(3)) {
                    let position = next(bytes.count + 1)
                    switch next(3) {
                    case 0 where position < bytes.count: bytes[position] = alphabet[next(alphabet.count)]
                    case 1 where position < bytes.count: bytes.remove(at: position)
                    default: bytes.insert(alphabet[next(alphabet.count)], at: position)
                    }
                }
                if original == Self.envelope { Self.agree(envelope: bytes) } else { Self.agree(transaction: bytes) }
            }
        }
    }

    @Test("a notify's Wechatpay headers are read in any case; one given twice in different cases is refused")
    func headersInAnyCase() throws {
        let headers = ["wechatpay-timestamp": "1", "WECHATPAY-NONCE": "n", "Wechatpay-Signature": "s", "wechatpay-Serial": "x",
                       "Content-Type": "application/json"]
        let message = try V3SignedMessage(headers: headers, body: [])
        #expect(message.timestamp == "1" && message.nonce == "n" && message.signature == "s" && message.serial == "x")
        var twice = headers
        twice["Wechatpay-Nonce"] = "m"
        #expect(throws: WeChatPayV3Error(.malformedHeader, "Wechatpay-Nonce")) { try V3SignedMessage(headers: twice, body: []) }
        var missing = headers
        missing["wechatpay-Serial"] = nil
        #expect(throws: WeChatPayV3Error(.missingHeader, "Wechatpay-Serial")) { try V3SignedMessage(headers: missing, body: []) }
        var typed = headers
        typed["wechatpay-signature-type"] = "WECHATPAY2-SM2"
        #expect(throws: WeChatPayV3Error(.malformedHeader, "Wechatpay-Signature-Type")) { try V3SignedMessage(headers: typed, body: []) }
        typed["wechatpay-signature-type"] = "WECHATPAY2-SHA256-RSA2048"
        #expect(throws: Never.self) { try V3SignedMessage(headers: typed, body: []) }
    }

    @Test("header names match without case exactly when their ASCII lowercase is equal: letters only, byte for byte, whatever the storage")
    func headerNameComparison() {
        let names = ["Wechatpay-Nonce", "wechatpay-nonce", "WECHATPAY-NONCE", "Wechatpay-Nonc", "Wechatpay-Nonce ", "Wechatpay_Nonce",
                     "Wechatpay-Nonc\u{E9}", "Wechatpay-NoncE", "@", "`", "[", "{", "^", "~", "", "Ｗechatpay-Nonce"]
        func lowered(_ text: String) -> [UInt8] { text.utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 } }
        for a in names {
            for b in names {
                let expected = lowered(a) == lowered(b)
                #expect(V3SignedMessage.equalIgnoringASCIICase(a, b) == expected, "\(a) vs \(b)")
                // A bridged (non-native, not contiguous) string takes the generic path: the same answer.
                let bridged = NSString(string: a) as String
                #expect(V3SignedMessage.equalIgnoringASCIICase(bridged, b) == expected, "\(a) (bridged) vs \(b)")
            }
        }
    }
}
