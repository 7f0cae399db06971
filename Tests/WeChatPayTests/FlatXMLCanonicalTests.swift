// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import WeChatPay

/// The canonical-form scanner (Sources/CFlatXML/flat_canonical.c) reads the documents WeChat
/// writes and hands every other document to libxml2. It must never change a verdict: each document decodes
/// to the same fields, or fails with the same error, with and without it.
struct FlatXMLCanonicalTests {
    /// Decoding through the scanner (when it accepts) and through libxml2 alone.
    static func bothRoutes(_ bytes: [UInt8], root: String = "xml") -> (Result<Fields, FlatXMLError>, Result<Fields, FlatXMLError>) {
        func decode(_ route: FlatXML.Route) -> Result<Fields, FlatXMLError> {
            do { return .success(try FlatXML.decode(bytes, root: root, route: route)) } catch { return .failure(error) }
        }
        return (decode(.canonicalFirst), decode(.libxml2))
    }

    static let wechatDocuments: [String] = [
        // A notify as WeChat sends it: one line, every value in CDATA.
        "<xml><appid><![CDATA[wx2421b1c4370ec43b]]></appid><attach><![CDATA[支付测试]]></attach><bank_type><![CDATA[CFT]]></bank_type><fee_type><![CDATA[CNY]]></fee_type><mch_id><![CDATA[10000100]]></mch_id><sign><![CDATA[B552ED6B279343CB493C5DD0D78AB241]]></sign><total_fee>1</total_fee></xml>",
        // The documentation's layout: a field per line, numbers as plain text.
        "<xml>\n   <return_code><![CDATA[SUCCESS]]></return_code>\n   <return_msg><![CDATA[OK]]></return_msg>\n   <total_fee>100</total_fee>\n</xml>\n",
        // Empty values, both ways, and a value that is all whitespace.
        "<xml><a></a><b><![CDATA[]]></b><c>  </c><d><![CDATA[ \t\n ]]></d></xml>",
        // JSON with every XML-special character a CDATA section may hold, brackets included.
        #"<xml><detail><![CDATA[{"a":"<b>&amp;</b>","c":[[1],[2]],"d":"]]"}]]></detail><e>x>y</e></xml>"#,
        "<xml></xml>",
        "<xml>\t\n </xml>  \n",
    ]

    @Test(arguments: wechatDocuments)
    func wechatsOwnDocumentsAreReadByTheScannerAndDecodeAsLibxml2DecodesThem(_ text: String) throws {
        let bytes = Array(text.utf8)
        let scanned = try #require(FlatXML.scanCanonical(bytes), "the scanner declined \(text.debugDescription)")
        let viaLibXML2 = try FlatXML.decode(bytes, route: .libxml2)
        #expect(scanned == viaLibXML2)
        #expect(try FlatXML.decode(bytes) == viaLibXML2)
    }

    @Test func whatTheEncoderWritesIsCanonicalUnlessAValueNeedsASecondSection() throws {
        let plain: Fields = ["appid": "wxd930ea5d5a258f4f", "body": "极客学院 <Swift> & more ]]", "empty": ""]
        #expect(FlatXML.scanCanonical(try FlatXML.encode(plain)) == plain)
        // "]]>" inside a value is split across two CDATA sections, a carriage return leaves as
        // a character reference: libxml2 reads those.
        for value in ["a]]>b", "line\r\nend"] {
            let bytes = try FlatXML.encode(["v": value])
            #expect(FlatXML.scanCanonical(bytes) == nil)
            #expect(try FlatXML.decode(bytes)["v"] == value)
        }
    }

    /// Each is in a shape the scanner does not read: some valid, most not.
    static let declined: [String] = [
        #"<?xml version="1.0" encoding="UTF-8"?><xml><a>1</a></xml>"#,
        "<xml><a>1</a>\r\n</xml>",
        "<xml><a><![CDATA[x\ry]]></a></xml>",
        "<xml><a/></xml>",
        "<xml/>",
        " <xml><a>1</a></xml>",
        "<xml ><a>1</a></xml>",
        "<xml><a >1</a></xml>",
        "<xml><a>1</a ></xml>",
        "<xml><a>1</a></xml >",
        "<xml><a>&amp;</a></xml>",
        "<xml><a>&#20013;</a></xml>",
        "<xml><a>x]y</a></xml>",
        "<xml><a>a]]>b</a></xml>",
        "<xml><a x=\"1\">1</a></xml>",
        "<xml><p:a>1</p:a></xml>",
        "<xml><a-b>1</a-b></xml>",
        "<xml><名前>1</名前></xml>",
        "<xml><1a>1</1a></xml>",
        "<xml><a><![CDATA[x]]><![CDATA[y]]></a></xml>",
        "<xml><a>x<![CDATA[y]]></a></xml>",
        "<xml><a><![CDATA[x]]>y</a></xml>",
        "<xml><a><![CDATA[x]></a></xml>",
        "<xml><a><b>1</b></a></xml>",
        "<xml><a>1</b></xml>",
        "<xml><a>1</ab></xml>",
        "<xml><ab>1</a></xml>",
        "<xml><a>1</a><a>2</a></xml>",
        "<xml><a>1</a></xml><b/>",
        "<xml><a>1</a></xml>x",
        "<xml><a>1</a></xmlx>",
        "<xml><a>1</a>",
        "<xml><a>1",
        "<xml>x<a>1</a></xml>",
        "<xml><!-- c --><a>1</a></xml>",
        "<xml><?pi x?><a>1</a></xml>",
        "<!DOCTYPE xml [<!ENTITY e \"x\">]><xml><a>&e;</a></xml>",
        "<xmlx><a>1</a></xmlx>",
        "<root><a>1</a></root>",
        "<xml><\(String(repeating: "n", count: 129))>1</\(String(repeating: "n", count: 129))></xml>",
    ]

    @Test(arguments: declined)
    func theScannerDeclinesEveryOtherShapeAndLibxml2Decides(_ text: String) {
        let bytes = Array(text.utf8)
        #expect(FlatXML.scanCanonical(bytes) == nil, "the scanner accepted \(text.debugDescription)")
        let (withScanner, libxml2Only) = Self.bothRoutes(bytes)
        #expect(withScanner == libxml2Only)
    }

    @Test(arguments: ["xmlns", "xml", "xmlfoo", "XMLNS", "_", "_9", "sign"])
    func namesXMLReservesOrTreatsSpeciallyReadTheSameBothWays(_ name: String) throws {
        let bytes = Array("<xml><\(name)>1</\(name)></xml>".utf8)
        let (withScanner, libxml2Only) = Self.bothRoutes(bytes)
        #expect(withScanner == libxml2Only)
        #expect(LibXML2Oracle.verdict(bytes) == .accepted([Fields.Field(name: name, value: "1")]))
    }

    @Test func aCanonicalDocumentUnderAnotherRootIsLeftToLibxml2() throws {
        let bytes = Array("<xml><a>1</a></xml>".utf8)
        #expect(FlatXML.scanCanonical(bytes, root: "root") == nil)
        #expect(throws: FlatXMLError.unexpectedRoot) { try FlatXML.decode(bytes, root: "root") }
        let refund = Array("<root><out_refund_no><![CDATA[R1]]></out_refund_no></root>".utf8)
        #expect(FlatXML.scanCanonical(refund, root: "root") == ["out_refund_no": "R1"])
    }

    @Test func aValueOverTheLimitIsLeftToLibxml2WhichRefusesIt() {
        let long = String(repeating: "x", count: FlatXML.maximumValueLength + 1)
        let bytes = Array("<xml><a>\(long)</a></xml>".utf8)
        #expect(FlatXML.scanCanonical(bytes) == nil)
        #expect(throws: FlatXMLError.valueTooLong(limit: FlatXML.maximumValueLength)) {
            try FlatXML.decode(bytes, maximumSize: bytes.count)
        }
        let atLimit = Array("<xml><a>\(long.dropLast())</a></xml>".utf8)
        #expect(FlatXML.scanCanonical(atLimit)?["a"]?.utf8.count == FlatXML.maximumValueLength)
    }

    @Test func namesTheScannerMetFirstAreTheNamesLibxml2LaterReportsAsDuplicates() throws {
        // Both paths share the parser context's name ids: a name first interned by the scanner
        // must still be recognised when libxml2 meets it twice.
        _ = FlatXML.scanCanonical(Array("<xml><scanner_first_name>1</scanner_first_name></xml>".utf8))
        let duplicate = Array("<xml>\r\n<scanner_first_name>1</scanner_first_name><scanner_first_name>2</scanner_first_name></xml>".utf8)
        #expect(throws: FlatXMLError.duplicateField("scanner_first_name")) { try FlatXML.decode(duplicate) }
    }

    @Test func tenThousandGeneratedDocumentsWithAwkwardValuesDecodeTheSameBothWays() {
        var random = SeededGenerator(seed: 0x0DD_BA11_CDA7A)
        // Pieces a value may be made of: brackets and '>' that nearly close a CDATA section,
        // markup characters, non-ASCII, whitespace.
        let pieces = ["a", "Z", "0", "_", "]", "]]", ">", "<", "&", "&amp;", "中文", "é", "😀", " ", "\t", "\n", "\"", "'", "=", "/"]
        let names = ["appid", "mch_id", "sign", "a", "B_1", "_x", "coupon_fee_0", "xmlns", "total_fee"]
        var scanned = 0
        var disagreements: [String] = []
        for _ in 0..<10_000 {
            var text = "<xml>"
            for _ in 0..<Int(random.next() % 6) {
                let name = names[Int(random.next() % UInt64(names.count))]
                var value = ""
                for _ in 0..<Int(random.next() % 8) { value += pieces[Int(random.next() % UInt64(pieces.count))] }
                let separator = ["", "\n", " \t"][Int(random.next() % 3)]
                // As CDATA (the usual way), or as it stands (valid text only without '<' and '&').
                let content = random.next() % 3 == 0 ? value : "<![CDATA[\(value)]]>"
                text += "\(separator)<\(name)>\(content)</\(name)>"
            }
            text += "</xml>"
            let bytes = Array(text.utf8)
            if FlatXML.scanCanonical(bytes) != nil { scanned += 1 }
            let (withScanner, libxml2Only) = Self.bothRoutes(bytes)
            if withScanner != libxml2Only && disagreements.count < 5 {
                disagreements.append("\(text.debugDescription): \(withScanner) against \(libxml2Only)")
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.joined(separator: "\n"))")
        // About half stay in the scanner's shape (no duplicate name, no markup in plain text).
        #expect(scanned > 3_000, "scanned \(scanned)")
    }

    @Test func fortyThousandSeededMutationsOfCanonicalDocumentsDecodeTheSameWithAndWithoutTheScanner() {
        var random = SeededGenerator(seed: 0xCA70_11CA_15CA_77E5)
        let seeds = Self.wechatDocuments.map { Array($0.utf8) } + [HostileCorpus.validNotify]
        var disagreements: [String] = []
        var scanned = 0
        var refused = 0
        for _ in 0..<40_000 {
            var bytes = seeds[Int(random.next() % UInt64(seeds.count))]
            let mutations = random.next() % 4 == 0 ? 2 + Int(random.next() % 3) : 1
            for _ in 0..<mutations { Mutator.mutate(&bytes, &random) }
            if FlatXML.scanCanonical(bytes) != nil { scanned += 1 }
            let (withScanner, libxml2Only) = Self.bothRoutes(bytes)
            if case .failure = libxml2Only { refused += 1 }
            if withScanner != libxml2Only && disagreements.count < 5 {
                disagreements.append("\(String(decoding: bytes, as: UTF8.self).debugDescription): \(withScanner) against \(libxml2Only)")
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.joined(separator: "\n"))")
        // Guards against mutations that never reach the scanner or never leave its shape (about
        // one mutant in ten stays canonical).
        #expect(scanned > 2_000 && refused > 6_000, "scanned \(scanned), refused \(refused)")
    }
}
