// SPDX-License-Identifier: Apache-2.0
import CLibXML2

/// Raw libxml2 parses of a document, as floors to compare `FlatXML.decode` with.
enum LibXML2Reference {
    /// The tree API most SDKs use: build a DOM, then free it.
    struct Tree {
        func parse(_ body: [UInt8]) {
            body.withUnsafeBufferPointer { buffer in
                let options = Int32(XML_PARSE_NONET.rawValue)
                let document = buffer.withMemoryRebound(to: CChar.self) {
                    xmlReadMemory($0.baseAddress, Int32($0.count), nil, "UTF-8", options)
                }
                precondition(document != nil, "the reference notify must parse")
                xmlFreeDoc(document)
            }
        }
    }

    /// SAX2 with a push context reused across documents and callbacks that do nothing: the
    /// cost of libxml2's tokenizer alone.
    final class ReusedSAX {
        private let context: xmlParserCtxtPtr

        init() {
            wxpay_xml_check_version()
            var handler = xmlSAXHandler()
            handler.initialized = UInt32(XML_SAX2_MAGIC)
            handler.startElementNs = { _, _, _, _, _, _, _, _, _ in }
            handler.endElementNs = { _, _, _, _ in }
            handler.characters = { _, _, _ in }
            handler.cdataBlock = { _, _, _ in }
            context = xmlCreatePushParserCtxt(&handler, nil, nil, 0, nil)!
        }

        deinit { xmlFreeParserCtxt(context) }

        func parse(_ body: [UInt8]) {
            xmlCtxtResetPush(context, nil, 0, nil, nil)
            _ = xmlCtxtUseOptions(context, Int32(XML_PARSE_NONET.rawValue))
            let status = body.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { xmlParseChunk(context, $0.baseAddress, Int32($0.count), 1) }
            }
            precondition(status == 0, "the reference notify must parse")
        }
    }
}
