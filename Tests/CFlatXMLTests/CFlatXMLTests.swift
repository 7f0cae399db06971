// SPDX-License-Identifier: Apache-2.0
import CFlatXML
import CLibXML2
import Testing

/// The flat-XML C target called directly, as `FlatXMLParser` calls it: the canonical-form scanner
/// (flat_canonical.c) and the SAX2 callbacks libxml2 runs (flat_sax.c). The codec's own suites
/// (WeChatPayTests) check the verdicts end to end; these check the C contract underneath them.
struct CFlatXMLTests {
    /// A push parser with the flat callbacks and its state, as FlatXMLParser sets them up.
    final class Parser {
        let context: xmlParserCtxtPtr
        let state: UnsafeMutablePointer<wxpay_flat_state>

        init(maximumValueLength: Int = 1024) {
            wxpay_xml_check_version()
            var handler = xmlSAXHandler()
            wxpay_flat_sax_handler(&handler)
            context = xmlCreatePushParserCtxt(&handler, nil, nil, 0, nil)!
            state = wxpay_flat_state_create(context, maximumValueLength)!
        }

        deinit {
            xmlFreeParserCtxt(context)
            wxpay_flat_state_free(state)
        }

        /// The scanner's answer: true when it accepted the document.
        func scan(_ text: String, root: String = "xml") -> Bool {
            let bytes = Array(text.utf8)
            return root.withCString { root in
                wxpay_flat_state_reset(state, root, 0)
                return bytes.withUnsafeBufferPointer { wxpay_flat_parse_canonical(state, $0.baseAddress!, $0.count) } == 1
            }
        }

        /// libxml2 with the flat callbacks; the failure code they left (WXPAY_FLAT_OK when none).
        @discardableResult
        func parse(_ text: String, root: String = "xml") -> wxpay_flat_failure {
            let bytes = Array(text.utf8)
            root.withCString { root in
                wxpay_flat_state_reset(state, root, bytes.contains(0x0D) ? 1 : 0)
                xmlCtxtResetPush(context, nil, 0, nil, nil)
                xmlCtxtUseOptions(context, Int32(XML_PARSE_NONET.rawValue | XML_PARSE_IGNORE_ENC.rawValue))
                context.pointee.userData = UnsafeMutableRawPointer(state)
                defer { context.pointee.userData = nil }
                _ = bytes.withUnsafeBufferPointer { buffer in
                    buffer.withMemoryRebound(to: CChar.self) { xmlParseChunk(context, $0.baseAddress, Int32($0.count), 1) }
                }
            }
            if let document = context.pointee.myDoc {
                xmlFreeDoc(document)
                context.pointee.myDoc = nil
            }
            return state.pointee.failure
        }

        /// The recorded fields as (name, id, value).
        var fields: [(name: String, id: UInt32, value: String)] {
            let count = state.pointee.field_count
            guard count > 0, let records = state.pointee.fields else { return [] }
            return UnsafeBufferPointer(start: records, count: count).map { record in
                let value = UnsafeBufferPointer(start: state.pointee.values! + record.value_offset, count: Int(record.value_length))
                return (String(cString: record.name!), record.name_id, String(decoding: value, as: UTF8.self))
            }
        }
    }

    @Test("the scanner accepts WeChat's canonical shape and records each field's name, id and value")
    func scannerRecordsCanonicalFields() {
        let parser = Parser()
        #expect(parser.scan("<xml><return_code><![CDATA[SUCCESS]]></return_code>\n  <total_fee>100</total_fee><empty></empty></xml>\n"))
        let fields = parser.fields
        #expect(fields.map(\.name) == ["return_code", "total_fee", "empty"])
        #expect(fields.map(\.value) == ["SUCCESS", "100", ""])
        #expect(fields.map(\.id) == [0, 1, 2])
        #expect(parser.state.pointee.root_seen == 1)
    }

    @Test("the scanner declines, never refuses, every document outside the canonical shape")
    func scannerDeclinesEverythingElse() {
        let parser = Parser()
        let declined = [
            #"<?xml version="1.0"?><xml><a>1</a></xml>"#,  // a declaration
            "<xml><a>1</a><!-- c --></xml>",  // a comment
            #"<xml><a b="c">1</a></xml>"#,  // an attribute
            "<xml><a>&amp;</a></xml>",  // a reference
            "<xml><a/></xml>",  // an empty-element tag
            "<xml><a>1</a><a>2</a></xml>",  // a duplicate field
            "<xml><a>]</a></xml>",  // a bracket in plain text
            "<xml><a>1</b></xml>",  // a mismatched end tag
            "<root><a>1</a></root>",  // another root
            "<xml><a>1</a></xml>trailing",  // text after the root
            "<xml><" + String(repeating: "n", count: 129) + ">1</" + String(repeating: "n", count: 129) + "></xml>",  // a long name
            "<xml><a><![CDATA[never closed</a></xml>",
        ]
        for text in declined {
            #expect(!parser.scan(text), "\(text)")
        }
    }

    @Test("the scanner declines a value longer than the state's limit, which libxml2 then refuses")
    func longValuesAreLeftToLibxml2() {
        let parser = Parser(maximumValueLength: 8)
        let text = "<xml><a>123456789</a></xml>"
        #expect(!parser.scan(text))
        #expect(parser.parse(text) == WXPAY_FLAT_VALUE_TOO_LONG)
    }

    @Test("the SAX callbacks record the same fields and ids as the scanner, sharing the context's names")
    func saxPathAgreesWithScanner() {
        let parser = Parser()
        let text = "<xml><appid><![CDATA[wx1]]></appid><mch_id>19</mch_id></xml>"
        #expect(parser.scan(text))
        let scanned = parser.fields
        #expect(parser.parse(text) == WXPAY_FLAT_OK)
        let parsed = parser.fields
        #expect(parsed.map(\.name) == scanned.map(\.name))
        #expect(parsed.map(\.id) == scanned.map(\.id))
        #expect(parsed.map(\.value) == scanned.map(\.value))
        // A name seen before keeps its id in later documents, whichever path reads them.
        #expect(parser.parse("<xml><mch_id>20</mch_id><new_name>x</new_name></xml>") == WXPAY_FLAT_OK)
        #expect(parser.fields.map(\.id) == [1, 2])
        #expect(parser.state.pointee.ids_count == 3)
    }

    @Test("each rule of the flat subset stops libxml2 with its own failure code")
    func saxCallbacksRefuseWithTheirCode() {
        let parser = Parser()
        let cases: [(String, wxpay_flat_failure)] = [
            (#"<!DOCTYPE xml [<!ENTITY e "x">]><xml><a>&e;</a></xml>"#, WXPAY_FLAT_DOCTYPE),
            ("<xml><a>1</a><!-- c --></xml>", WXPAY_FLAT_COMMENT),
            ("<xml><?pi x?><a>1</a></xml>", WXPAY_FLAT_PROCESSING_INSTRUCTION),
            ("<xml><a><b>1</b></a></xml>", WXPAY_FLAT_TOO_DEEP),
            ("<other><a>1</a></other>", WXPAY_FLAT_UNEXPECTED_ROOT),
            (#"<xml><a id="1">1</a></xml>"#, WXPAY_FLAT_ATTRIBUTES),
            ("<xml>text<a>1</a></xml>", WXPAY_FLAT_MIXED_CONTENT),
            ("<xml><a>1</a><a>2</a></xml>", WXPAY_FLAT_DUPLICATE_FIELD),
            ("<xml><a>1</a>", WXPAY_FLAT_LIBXML2_ERROR),
        ]
        for (text, failure) in cases {
            #expect(parser.parse(text) == failure, "\(text)")
        }
        #expect(parser.parse("<xml><a>1</a><a>2</a></xml>") == WXPAY_FLAT_DUPLICATE_FIELD)
        #expect(parser.state.pointee.duplicate_name.map { String(cString: $0) } == "a")
        #expect(parser.parse("<xml><a>1</a>") == WXPAY_FLAT_LIBXML2_ERROR)
        #expect(parser.state.pointee.error_code != 0)
    }

    @Test("CR LF and a lone CR inside CDATA become LF, as XML normalises them everywhere else")
    func cdataLineEndsAreNormalised() {
        let parser = Parser()
        #expect(parser.parse("<xml><a><![CDATA[one\r\ntwo\rthree]]></a><b>x\r\ny</b></xml>") == WXPAY_FLAT_OK)
        #expect(parser.fields.map(\.value) == ["one\ntwo\nthree", "x\ny"])
    }

    @Test("buffers one large document grew are let go at the next reset; the name ids stay")
    func largeBuffersAreReleasedAtReset() {
        let parser = Parser(maximumValueLength: 1 << 20)
        let large = String(repeating: "v", count: Int(WXPAY_FLAT_KEPT_BYTES) + 1)
        #expect(parser.scan("<xml><a>\(large)</a></xml>"))
        #expect(parser.state.pointee.values_capacity > Int(WXPAY_FLAT_KEPT_BYTES))
        #expect(parser.scan("<xml><a>1</a></xml>"))
        #expect(parser.state.pointee.values_capacity <= 4096)
        #expect(parser.fields.map(\.id) == [0])
    }

    @Test("a thousand distinct names get dense ids through the table's growth")
    func manyNamesGetDenseIds() {
        let parser = Parser()
        let body = (0..<1000).map { "<n\($0)>\($0)</n\($0)>" }.joined()
        #expect(parser.scan("<xml>\(body)</xml>"))
        let fields = parser.fields
        #expect(fields.count == 1000)
        #expect(fields.map(\.id) == (0..<1000).map(UInt32.init))
        #expect(fields.allSatisfy { "n" + $0.value == $0.name })
        for id in 0..<1000 {
            #expect(String(cString: parser.state.pointee.id_names[id]!) == "n\(id)")
        }
    }
}
