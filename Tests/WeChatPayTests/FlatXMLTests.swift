// SPDX-License-Identifier: Apache-2.0
import Testing
import WeChatPay

struct FlatXMLTests {
    @Test func aNotifyWithCDATAAndPlainFieldsDecodesInDocumentOrder() throws {
        let body = """
            <xml><return_code><![CDATA[SUCCESS]]></return_code>
            <appid><![CDATA[wx2421b1c4370ec43b]]></appid>
            <total_fee>1</total_fee><attach></attach><body>腾讯 &amp; 会员 &lt;VIP&gt;</body></xml>
            """
        let fields = try FlatXML.decode(Array(body.utf8))
        #expect(fields.names == ["return_code", "appid", "total_fee", "attach", "body"])
        #expect(fields["return_code"] == "SUCCESS")
        #expect(fields["total_fee"] == "1")
        #expect(fields["attach"] == "")
        #expect(fields["body"] == "腾讯 & 会员 <VIP>")
    }

    /// The parser records names in C and turns them into Strings once a document is accepted; a
    /// refused document may have met names the next one then uses, in another order.
    @Test func namesMetInARefusedDocumentDoNotShiftTheNamesOfTheNextOnes() throws {
        for round in 0..<50 {
            let first = "first_\(round)", second = "second_\(round)", third = "third_\(round)"
            let refused = "<xml><\(first)>1</\(first)><\(second)>2</\(second)><\(first)>dup</\(first)></xml>"
            #expect(throws: FlatXMLError.self) { try FlatXML.decode(Array(refused.utf8)) }
            let accepted = "<xml><\(third)>3</\(third)><\(second)>2</\(second)><\(first)>1</\(first)></xml>"
            let fields = try FlatXML.decode(Array(accepted.utf8))
            #expect(fields.names == [third, second, first])
            #expect(fields[first] == "1" && fields[second] == "2" && fields[third] == "3")
        }
    }

    /// Refusing stops libxml2, which frees the text a callback is reading; a CDATA section with
    /// carriage returns is handed over in pieces, and the pieces after a refusal must not be read
    /// (the fuzzer found this under AddressSanitizer).
    @Test func cdataWithCarriageReturnsIsRefusedCleanlyWhereItDoesNotBelong() throws {
        #expect(throws: FlatXMLError.mixedContent) {
            try FlatXML.decode(Array("<xml><![CDATA[a\rb\rc]]><a>1</a></xml>".utf8))
        }
        let long = String(repeating: "x", count: FlatXML.maximumValueLength) + "\ry\rz"
        #expect(throws: FlatXMLError.valueTooLong(limit: FlatXML.maximumValueLength)) {
            try FlatXML.decode(Array("<xml><a><![CDATA[\(long)]]></a></xml>".utf8), maximumSize: 2 * FlatXML.maximumValueLength)
        }
    }

    @Test func anXMLDeclarationIsAccepted() throws {
        let fields = try FlatXML.decode(Array("<?xml version=\"1.0\" encoding=\"UTF-8\"?><xml><a>1</a></xml>".utf8))
        #expect(fields["a"] == "1")
    }

    @Test func encodingRoundTripsValuesThatContainTheCDATATerminator() throws {
        let fields: Fields = ["detail": #"{"x":"a]]>b"}"#, "body": "课程 ]]]> <&>", "empty": "", "tail": "]]"]
        let bytes = try FlatXML.encode(fields)
        #expect(try FlatXML.decode(bytes) == fields)
    }

    @Test func encodingRefusesNamesThatAreNotPlainAndControlCharacters() {
        #expect(throws: FlatXMLError.unencodableName) { try FlatXML.encode(["a b": "1"]) }
        #expect(throws: FlatXMLError.self) { try FlatXML.encode(["a": "x\u{1}y"]) }
    }

    @Test func theRefundReqInfoRootIsAcceptedOnlyWhenAsked() throws {
        let body = Array("<root><out_refund_no>r1</out_refund_no></root>".utf8)
        #expect(try FlatXML.decode(body, root: "root")["out_refund_no"] == "r1")
        #expect(throws: FlatXMLError.unexpectedRoot) { try FlatXML.decode(body) }
    }

    @Test func duplicateFieldsAreRefused() {
        #expect(throws: FlatXMLError.self) {
            try FlatXML.decode(Array("<xml><total_fee>1</total_fee><total_fee>100</total_fee></xml>".utf8))
        }
    }

    @Test func nestingDeeperThanAFieldIsRefused() {
        #expect(throws: FlatXMLError.tooDeep) { try FlatXML.decode(Array("<xml><a><b>1</b></a></xml>".utf8)) }
    }

    @Test func attributesAndTextOutsideFieldsAreRefused() {
        #expect(throws: FlatXMLError.attributes) { try FlatXML.decode(Array("<xml><a x=\"1\">1</a></xml>".utf8)) }
        #expect(throws: FlatXMLError.mixedContent) { try FlatXML.decode(Array("<xml>junk<a>1</a></xml>".utf8)) }
    }

    @Test func emptyAndTruncatedDocumentsAreRefused() {
        #expect(throws: FlatXMLError.empty) { try FlatXML.decode([UInt8]()) }
        #expect(throws: FlatXMLError.self) { try FlatXML.decode(Array("<xml><a>1</a>".utf8)) }
        #expect(throws: FlatXMLError.self) { try FlatXML.decode(Array("not xml".utf8)) }
    }
}
