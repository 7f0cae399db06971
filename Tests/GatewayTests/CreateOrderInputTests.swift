// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import Testing

/// A noncharacter, which Swift's string literals refuse to spell.
private func noncharacter(_ value: UInt32) -> String { String(Character(Unicode.Scalar(value)!)) }

struct CreateOrderInputTests {
    func parse(_ json: String) throws(APIError) -> CreateOrderInput {
        try CreateOrderInput(json: Array(json.utf8))
    }

    @Test func aMinimalBodyGetsTheDefaultExpiry() throws {
        let input = try parse(#"{"amount":990,"description":"Swift 入门课","client_ip":"203.0.113.7"}"#)
        #expect(input.amount == 990)
        #expect(input.expiresIn == 7200)
        #expect(input.outTradeNo == nil)
    }

    @Test func everyOptionalFieldIsAccepted() throws {
        let input = try parse(#"{"amount":1,"description":"d","client_ip":"2001:db8::1","out_trade_no":"A_b-c|d*9","attach":"x","user_id":"u1","product_id":"p1","expires_in":300}"#)
        #expect(input.outTradeNo == "A_b-c|d*9")
        #expect(input.expiresIn == 300)
    }

    @Test(arguments: [
        (#"{"description":"d","client_ip":"1.2.3.4"}"#, "amount"),
        (#"{"amount":0,"description":"d","client_ip":"1.2.3.4"}"#, "amount"),
        (#"{"amount":1.5,"description":"d","client_ip":"1.2.3.4"}"#, "amount"),
        (#"{"amount":"100","description":"d","client_ip":"1.2.3.4"}"#, "amount"),
        (#"{"amount":true,"description":"d","client_ip":"1.2.3.4"}"#, "amount"),
        (#"{"amount":1,"description":"","client_ip":"1.2.3.4"}"#, "description"),
        (#"{"amount":1,"description":"d","client_ip":"localhost"}"#, "client_ip"),
        (#"{"amount":1,"description":"d","client_ip":"1.2.3.4","out_trade_no":"abc"}"#, "out_trade_no"),
        (#"{"amount":1,"description":"d","client_ip":"1.2.3.4","out_trade_no":"abc def"}"#, "out_trade_no"),
        (#"{"amount":1,"description":"d","client_ip":"1.2.3.4","expires_in":299}"#, "expires_in"),
        (#"{"amount":1,"description":"d","client_ip":"1.2.3.4","expires_in":86401}"#, "expires_in"),
        (#"{"amount":1,"description":"d","client_ip":"1.2.3.4","product_id":"123456789012345678901234567890123"}"#, "product_id"),
        (#"{"amount":1,"description":"d","client_ip":"1.2.3.4","amout":5}"#, "amout"),
        (#"{"amount":1,"description":"a\u0001b","client_ip":"1.2.3.4"}"#, "description"),
    ])
    func invalidBodiesNameTheOffendingField(json: String, field: String) {
        #expect(throws: APIError.self) { try parse(json) }
        do { _ = try parse(json) } catch {
            #expect(error.status == 400)
            #expect(error.code == "invalid_request")
            #expect(error.field == field)
        }
    }

    @Test("free text refuses what breaks a line, turns it around or cannot be seen, and keeps what is merely unusual",
          arguments: [
              ("a\u{7}b", false), ("a\u{85}b", false), ("a\u{2028}b", false), ("a\u{2029}b", false),
              ("ok \u{202E}evil", false), ("a\u{2066}b", false), ("price 100\u{200F}", false), ("\u{200E}x", false),
              ("zero\u{200B}width", false), ("\u{FEFF}bom", false), ("refund \u{061C}100 200", false),
              ("a\u{200C}b", false), ("a\u{2060}b", false), ("a\u{206A}b", false), ("soft\u{00AD}hyphen", false),
              ("a\u{180E}b", false), ("\u{E0001}\u{E0041}", false), ("a\u{FFF9}b", false), ("\u{3164}", false),
              ("\u{115F}x", false), ("ab" + noncharacter(0xFFFE) + "cd", false), ("a" + noncharacter(0xFFFF), false),
              (noncharacter(0x1FFFE), false), (noncharacter(0xFDD0), false),
              ("Swift 入门课", true), ("café — ½ price", true), ("emoji 📚", true), ("a\u{00A0}b", true),
              ("love ❤️", true), ("family 👨‍👩‍👧", true), ("全角　空格", true),
              // Tags only in a flag's tag sequence: Scotland's flag, but not its tags without the
              // black flag, without the cancel tag, with capital tag letters, or trailing after it.
              ("Edinburgh \u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}", true),
              ("\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}", false),
              ("\u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}", false),
              ("\u{1F3F4}\u{E0047}\u{E0042}\u{E007F}", false),
              ("\u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}\u{E0061}", false),
              ("\u{1F3F4}\u{E0061}\u{E0062}\u{E0063}\u{E0064}\u{E0065}\u{E0066}\u{E0067}\u{E0068}\u{E007F}", false),
          ])
    func freeTextRefusesControlDirectionAndInvisibleCharacters(description: String, accepted: Bool) throws {
        let body = try JSONSerialization.data(withJSONObject: ["amount": 1, "description": description, "client_ip": "1.2.3.4"])
        do {
            _ = try CreateOrderInput(json: Array(body))
            #expect(accepted, "accepted \(description.unicodeScalars.map { String($0.value, radix: 16) })")
        } catch {
            #expect(!accepted)
            #expect(error.field == "description")
            #expect(error.message == "description must not contain control, text-direction or invisible characters")
        }
    }

    @Test("a description that shows nothing is refused as blank: spaces of any width, or only the joiner or a variation selector",
          arguments: ["   ", "\u{3000}\u{3000}", "\u{00A0}", "\u{2800}", "\u{1680} ", "\u{200D}", "\u{200D}\u{200D}", "\u{FE0F}",
                      "\u{E0100}"])
    func aBlankDescriptionIsRefused(description: String) throws {
        let body = try JSONSerialization.data(withJSONObject: ["amount": 1, "description": description, "client_ip": "1.2.3.4"])
        do {
            _ = try CreateOrderInput(json: Array(body))
            Issue.record("accepted \(description.unicodeScalars.map { String($0.value, radix: 16) })")
        } catch {
            #expect(error.field == "description")
            #expect(error.message == "description must not be blank")
        }
    }

    @Test func aDescriptionOf128BytesIsRefusedEvenWhenItIsFewerCharacters() {
        let description = String(repeating: "课", count: 43)  // 129 bytes of UTF-8
        #expect(throws: APIError.self) { try parse(#"{"amount":1,"description":"\#(description)","client_ip":"1.2.3.4"}"#) }
    }

    @Test func notAnObjectIsRefusedWithoutAField() {
        for body in ["[]", "", "nope", "{\"amount\":"] {
            do { _ = try parse(body); Issue.record("accepted \(body)") } catch { #expect(error.field == nil) }
        }
    }

    /// Found by the battery's T5: the first of two "amount" members silently won.
    @Test func aMemberNameGivenTwiceIsRefusedAtAnyDepth() {
        for body in [#"{"amount":990,"description":"d","client_ip":"1.2.3.4","amount":1}"#,
                     #"{"amount":990,"description":"d","description":"e","client_ip":"1.2.3.4"}"#,
                     #"{"amount":990,"description":"d","client_ip":"1.2.3.4","attach":"x","x":{"a":1,"a":2}}"#] {
            do {
                _ = try parse(body)
                Issue.record("accepted \(body)")
            } catch {
                #expect(error.code == "invalid_request" && error.message == "the body gives a member name twice")
            }
        }
    }

    @Test func theDigestSeparatesDifferentParameterSets() throws {
        let a = try parse(#"{"amount":1,"description":"ab","client_ip":"1.2.3.4","attach":"c"}"#)
        let b = try parse(#"{"amount":1,"description":"a","client_ip":"1.2.3.4","attach":"bc"}"#)
        let c = try parse(#"{"amount":1,"description":"ab","client_ip":"1.2.3.4","attach":"c","expires_in":7200}"#)
        #expect(a.parametersDigest != b.parametersDigest)
        #expect(a.parametersDigest == c.parametersDigest)
    }
}
