// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import WeChatPay

/// The codec (its canonical-form scanner, its libxml2 path and the C callbacks that enforce the
/// flat subset) against a separate libxml2 reader (`LibXML2Oracle`): both must accept the same
/// documents with the same fields, and refuse the same documents. The fuzz target runs the same
/// comparison on coverage-guided inputs; this suite keeps a fixed, reproducible share of it in
/// every test run.
struct HostileDifferentialTests {
    /// Documents at the edges of the flat subset, with whether they are valid.
    static let edges: [(String, Bool)] = [
        ("<xml/>", true),
        ("<xml></xml>", true),
        ("<xml><a/></xml>", true),
        ("<xml><a></a><b><![CDATA[]]></b></xml>", true),
        ("<xml ><a >1</a ></xml >", true),
        ("<xml>\r\n<a>x\r\ny\rz</a>\r</xml>", true),
        ("<xml><a><![CDATA[x\r\ny\r]]>\r\n</a></xml>", true),
        ("<xml><a>x\r<![CDATA[\ny]]></a></xml>", true),
        ("<xml><a>&#13;&#x0D;&#10;</a></xml>", true),
        ("<xml><a>&#x10FFFF;&#xFFFD;&#xE000;&#xD7FF;</a></xml>", true),
        ("<xml><a>&#xFFFE;</a></xml>", false),
        ("<xml><a>&#x110000;</a></xml>", false),
        ("<xml><a>&#99999999999999999999;</a></xml>", false),
        ("<xml><a>&#X41;</a></xml>", false),
        ("<xml><a>&#x;</a></xml>", false),
        ("<xml><a>&amp</a></xml>", false),
        ("<xml><a>&;</a></xml>", false),
        ("<xml><a>a]b]]c]>d</a></xml>", true),
        ("<xml><a>a]]>b</a></xml>", false),
        ("<xml><a><![CDATA[a]]]]><![CDATA[>b]]></a></xml>", true),
        ("<xml>&#32;&#x9;<a>1</a><![CDATA[ \n]]></xml>", true),
        ("<xml>&#33;<a>1</a></xml>", false),
        ("<xml><![CDATA[x]]><a>1</a></xml>", false),
        ("<xml>&amp;<a>1</a></xml>", false),
        ("<![CDATA[x]]><xml/>", false),
        ("<xml/><![CDATA[x]]>", false),
        ("<xml><a>1</a></xml>\n\t \r\n", true),
        (" <xml/>", true),
        ("\u{FEFF}<xml/>", true),
        ("\u{FEFF}<?xml version=\"1.0\"?><xml/>", true),
        ("<?xml version=\"1.0\"?><xml/>", true),
        ("<?xml version='1.0' encoding='gbk' standalone='no' ?><xml/>", true),
        ("<?xml version = \"1.0\"\n encoding\t=\"UTF-8\"?><xml/>", true),
        ("<?xml version=\"1.0\" standalone=\"yes\"?><xml/>", true),
        ("<?xml version=\"1.1\"?><xml/>", false),
        ("<?xml version=\"1.0\"encoding=\"UTF-8\"?><xml/>", false),
        ("<?xml encoding=\"UTF-8\"?><xml/>", false),
        ("<?xml version=\"1.0\" standalone=\"yes\" encoding=\"UTF-8\"?><xml/>", false),
        ("<?xml version=\"1.0\" encoding=\"8bit\"?><xml/>", false),
        ("<?xml version=\"1.0\" standalone=\"maybe\"?><xml/>", false),
        ("<?xml version=\"1.0\"?>", false),
        (" <?xml version=\"1.0\"?><xml/>", false),
        ("<?xml version=\"1.0\"?><?xml version=\"1.0\"?><xml/>", false),
        ("<xml><名前>値</名前><a·b>1</a·b><_x.y-z>2</_x.y-z></xml>", true),
        ("<xml><·a>1</·a></xml>", false),
        ("<xml><a>1</A></xml>", false),
        ("<xml><a>1</ab></xml>", false),
        ("<xml><ab>1</a></xml>", false),
        ("<xml><a>1</a b></xml>", false),
        ("<xml><a/ ></xml>", false),
        ("<xml><a b></a></xml>", false),
        ("<xml><a\tb='1'>1</a></xml>", false),
        ("<xml><a>1</a></xml><", false),
        ("<xml><a>1<", false),
        ("<xml><a>1</a", false),
        ("<xml", false),
        ("<xml><a>1</a></xml></xml>", false),
        ("<xml>< a>1</a></xml>", false),
        ("<xml><a>< b</a></xml>", false),
        ("<xml><a>></a></xml>", true),
        ("<xml><a>\"'</a></xml>", true),
        ("<xml><a>\u{7F}\u{85}\u{FFFD}\u{10FFFF}</a></xml>", true),
        ("<xml><a>\u{1}</a></xml>", false),
        ("<root><a>1</a></root>", false),
        ("<XML><a>1</a></XML>", false),
        ("<xml:x/>", false),
        ("   ", false),
    ]

    @Test(arguments: edges.indices)
    func theParserAndLibxml2AgreeOnEachEdgeOfTheFlatSubset(_ index: Int) {
        let (text, valid) = Self.edges[index]
        let bytes = Array(text.utf8)
        let ours = Verdict(bytes)
        #expect(ours.isAccepted == valid, "\(text.debugDescription): \(ours)")
        let reference = LibXML2Oracle.verdict(bytes)
        #expect(ours.matches(reference), "\(text.debugDescription): ours \(ours), libxml2 \(reference)")
    }

    @Test func encodedValuesWithCarriageReturnsAndCDATATerminatorsRoundTripThroughBothParsers() throws {
        let fields: Fields = ["a": "x\r\ny\rz", "b": "]]>\r]]]>", "c": "\r"]
        let bytes = try FlatXML.encode(fields)
        #expect(try FlatXML.decode(bytes) == fields)
        #expect(LibXML2Oracle.verdict(bytes) == .accepted(fields.elements))
    }

    @Test func encodingRefusesEveryValueThatDecodingWouldRefuse() throws {
        for value in ["a\u{1}", "\u{FFFE}", "x\u{FFFF}y", "\u{0}"] {
            #expect(throws: FlatXMLError.self, "\(value.debugDescription)") { try FlatXML.encode(["a": value]) }
        }
        // The neighbours of the forbidden ones are fine.
        let fields: Fields = ["a": "\u{FFFD}\u{FEFF}\u{10000}\u{EFBF}\t\n"]
        #expect(try FlatXML.decode(try FlatXML.encode(fields)) == fields)
    }

    @Test func lineEndsAreNormalisedAsXMLRequires() throws {
        let fields = try FlatXML.decode(Array("<xml><a>x\r\ny\rz<![CDATA[\r\n]]>&#13;</a></xml>".utf8))
        #expect(fields["a"] == "x\ny\nz\n\r")
    }

    @Test func twentyThousandSeededMutationsOfRealDocumentsGetTheSameVerdictFromBoth() {
        var random = SeededGenerator(seed: 0x5EED_F1A7_C0DE)
        let seeds = Self.seedDocuments()
        var disagreements: [String] = []
        var accepted = 0
        for _ in 0..<20_000 {
            var bytes = seeds[Int(random.next() % UInt64(seeds.count))]
            let mutations = random.next() % 4 == 0 ? 2 + Int(random.next() % 3) : 1
            for _ in 0..<mutations { Mutator.mutate(&bytes, &random) }
            let ours = Verdict(bytes)
            if ours.isAccepted { accepted += 1 }
            let reference = LibXML2Oracle.verdict(bytes)
            if !ours.matches(reference) && disagreements.count < 5 {
                disagreements.append("\(String(decoding: bytes, as: UTF8.self).debugDescription): ours \(ours), libxml2 \(reference)")
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.joined(separator: "\n"))")
        // Guards against a mutator that only produces garbage: both verdicts must occur.
        #expect(accepted > 2_000 && accepted < 18_000, "accepted \(accepted)")
    }

    static func seedDocuments() -> [[UInt8]] {
        var seeds = edges.filter(\.1).map { Array($0.0.utf8) }
        seeds.append(HostileCorpus.validNotify)
        seeds.append(Array("""
            <?xml version="1.0" encoding="UTF-8"?>
            <xml>
              <return_code><![CDATA[SUCCESS]]></return_code>
              <body>腾讯 &amp; 会员 &lt;VIP&gt; &#20013;</body>
              <detail><![CDATA[{"goods":[{"id":"a]]]]><![CDATA[>b"}]}]]></detail>
              <total_fee>1</total_fee><attach/>
            </xml>
            """.utf8))
        return seeds
    }
}

/// Our parser's answer, in the oracle's terms.
struct Verdict: CustomStringConvertible {
    let fields: Fields?
    let error: FlatXMLError?

    init(_ bytes: [UInt8]) {
        do {
            fields = try FlatXML.decode(bytes)
            error = nil
        } catch {
            fields = nil
            self.error = error
        }
    }

    var isAccepted: Bool { fields != nil }

    func matches(_ reference: LibXML2Oracle.Verdict) -> Bool {
        switch reference {
        case .unknown: true
        case .refused: fields == nil
        case .accepted(let elements): fields?.elements == elements
        }
    }

    var description: String {
        if let fields { return "accepted \(fields.elements.map { "\($0.name)=\($0.value.debugDescription)" })" }
        return "refused (\(error?.shortDescription ?? "?"))"
    }
}

/// Small structure-aware mutations: the tokens that matter to an XML tokenizer, spliced in at
/// random places, plus deletions, duplications and truncations.
enum Mutator {
    static let tokens: [[UInt8]] = [
        "<", ">", "/", "</", "/>", "&", ";", "&amp;", "&lt;", "&#", "&#x", "&#13;", "&#x1;", "&#xFFFE;", "&e;",
        "]", "]]>", "<![CDATA[", "]]", "<!--", "-->", "<?", "?>", "<!DOCTYPE x>", "\r", "\r\n", "\n", " ", "\t",
        "\"", "'", "=", ":", "a", "xml", "<a>", "</a>", "<xml>", "</xml>", "中", "·", "\u{FEFF}",
        "\u{1}", "<?xml version=\"1.0\"?>", " b=\"1\"", "1.1", "x-y.z",
    ].map { Array($0.utf8) } + [[0xEF, 0xBF, 0xBE], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xE4, 0xBD], [0x00]]

    /// Tokens that keep a document valid when they land in text or between fields, so that
    /// both verdicts are common and accepted values get compared too.
    static let benignTokens: [[UInt8]] = [
        "x", "0", "中文", "&gt;", "&quot;", "&#x4E2D;", "&#13;", "<![CDATA[<&>]]>", "<b>1</b>", "<c/>", "\r\n", "]", " ",
    ].map { Array($0.utf8) }

    static func mutate(_ bytes: inout [UInt8], _ random: inout SeededGenerator) {
        let position = bytes.isEmpty ? 0 : Int(random.next() % UInt64(bytes.count + 1))
        switch random.next() % 7 {
        case 0:
            bytes.insert(contentsOf: tokens[Int(random.next() % UInt64(tokens.count))], at: position)
        case 1, 2:
            // Land after a '>' so the token starts a text run or sits between fields.
            let after = bytes[position...].firstIndex(of: UInt8(ascii: ">")).map { $0 + 1 } ?? position
            bytes.insert(contentsOf: benignTokens[Int(random.next() % UInt64(benignTokens.count))], at: after)
        case 3:
            let length = min(bytes.count - position, 1 + Int(random.next() % 8))
            bytes.removeSubrange(position..<(position + length))
        case 4:
            let length = min(bytes.count - position, 1 + Int(random.next() % 16))
            bytes.insert(contentsOf: bytes[position..<(position + length)], at: position)
        case 5:
            if position < bytes.count { bytes[position] = UInt8(truncatingIfNeeded: random.next()) }
        default:
            bytes.removeSubrange(position...)
        }
    }
}
