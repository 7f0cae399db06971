// SPDX-License-Identifier: Apache-2.0
import CLibXML2
import WeChatPay

/// libxml2's verdict on a document under the same strict rules as `FlatXML.decode`: the
/// reference the codec is checked against, in the differential test and in the
/// fuzz target (fuzz/, which compiles this file too).
///
/// It asks libxml2's SAX2 parser (no DTD loading, no network, no entity substitution, declared
/// encodings ignored) whether the bytes are well-formed XML, and refuses in its callbacks
/// whatever the flat subset forbids. A fresh context per call: slower, but nothing carries over.
/// It shares no code with the parser under test, only the limits (`FlatXML.maximumValueLength`).
enum LibXML2Oracle {
    enum Verdict: Equatable, Sendable {
        case accepted([Fields.Field])
        case refused
        /// libxml2 hit one of its own limits (a name over 50,000 bytes), where the two are
        /// allowed to differ.
        case unknown
    }

    static func verdict(_ bytes: [UInt8], root: String = "xml", maximumSize: Int = FlatXML.defaultMaximumSize) -> Verdict {
        guard !bytes.isEmpty, bytes.count <= maximumSize, !bytes.contains(0) else { return .refused }
        // libxml2 would sniff UTF-16 or EBCDIC from the first bytes; the codec takes UTF-8 only.
        guard String(validating: bytes, as: UTF8.self) != nil else { return .refused }
        let collector = Collector(root: root)
        var handler = xmlSAXHandler()
        handler.initialized = UInt32(XML_SAX2_MAGIC)
        handler.startElementNs = { user, localname, prefix, _, namespaceCount, _, attributeCount, _, _ in
            Collector.from(user).start(localname, refuse: prefix != nil || namespaceCount != 0 || attributeCount != 0)
        }
        handler.endElementNs = { user, _, _, _ in Collector.from(user).endElement() }
        handler.characters = { user, text, length in Collector.from(user).characters(text, Int(length)) }
        handler.ignorableWhitespace = handler.characters
        handler.cdataBlock = { user, text, length in Collector.from(user).cdata(text, Int(length)) }
        handler.internalSubset = { user, _, _, _ in Collector.from(user).refuse() }
        handler.externalSubset = { user, _, _, _ in Collector.from(user).refuse() }
        handler.entityDecl = { user, _, _, _, _, _ in Collector.from(user).refuse() }
        handler.getEntity = { user, _ in
            Collector.from(user).refuse()
            return nil
        }
        handler.getParameterEntity = { user, _ in
            Collector.from(user).refuse()
            return nil
        }
        handler.reference = { user, _ in Collector.from(user).refuse() }
        handler.processingInstruction = { user, _, _ in Collector.from(user).refuse() }
        handler.comment = { user, _ in Collector.from(user).refuse() }
        handler.serror = { user, error in
            guard let user, let error else { return }
            let collector = Collector.from(user)
            if error.pointee.code == Int32(XML_ERR_NAME_TOO_LONG.rawValue) { collector.unknown = true }
            if error.pointee.level.rawValue >= XML_ERR_ERROR.rawValue { collector.refused = true }
        }
        wxpay_xml_check_version()
        guard let context = xmlCreatePushParserCtxt(&handler, nil, nil, 0, nil) else { return .unknown }
        defer {
            // libxml2 builds a document behind SAX for some declarations (an entity declared in
            // a DOCTYPE); the context does not own it. Found by the fuzzer's leak checker.
            if let document = context.pointee.myDoc { xmlFreeDoc(document) }
            xmlFreeParserCtxt(context)
        }
        _ = xmlCtxtUseOptions(context, Int32(XML_PARSE_NONET.rawValue | XML_PARSE_IGNORE_ENC.rawValue))
        let unmanaged = Unmanaged.passRetained(collector)
        defer { unmanaged.release() }
        context.pointee.userData = unmanaged.toOpaque()
        let status = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { xmlParseChunk(context, $0.baseAddress, Int32($0.count), 1) }
        }
        if collector.unknown { return .unknown }
        // libxml2 only warns about "1.1" and other 1.x versions; the codec takes 1.0.
        let version = context.pointee.version.map { String(cString: $0) }
        guard status == 0, context.pointee.wellFormed != 0, !collector.refused, collector.rootSeen,
              collector.depth == 0, version == "1.0"
        else { return .refused }
        return .accepted(collector.fields)
    }

    private final class Collector {
        let root: String
        var depth = 0
        var rootSeen = false
        var fields: [Fields.Field] = []
        var name = ""
        var text: [UInt8] = []
        var refused = false
        var unknown = false

        init(root: String) { self.root = root }

        static func from(_ user: UnsafeMutableRawPointer?) -> Collector {
            Unmanaged<Collector>.fromOpaque(user!).takeUnretainedValue()
        }

        func refuse() { refused = true }

        func start(_ localname: UnsafePointer<xmlChar>?, refuse: Bool) {
            depth += 1
            if refuse || depth > 2 { refused = true }
            guard !refused, let localname else { return }
            let name = String(cString: localname)
            if depth == 1 {
                if name != root { refused = true }
                rootSeen = true
            } else {
                self.name = name
                text.removeAll()
            }
        }

        func endElement() {
            if depth == 2 && !refused {
                if fields.contains(where: { $0.name == name }) { refused = true }
                fields.append(Fields.Field(name: name, value: String(decoding: text, as: UTF8.self)))
            }
            depth -= 1
        }

        /// libxml2 hands CDATA over without the line-end normalisation XML 1.0 §2.11 applies to
        /// the whole document (other text is normalised); the codec follows the specification,
        /// so the oracle normalises here to keep the comparison about everything else. With the
        /// whole document in one chunk, each section arrives in one call.
        func cdata(_ bytes: UnsafePointer<xmlChar>?, _ length: Int) {
            guard let bytes, length > 0 else { return }
            var normalized: [UInt8] = []
            var index = 0
            while index < length {
                if bytes[index] == 0x0D {
                    normalized.append(0x0A)
                    index += index + 1 < length && bytes[index + 1] == 0x0A ? 2 : 1
                } else {
                    normalized.append(bytes[index])
                    index += 1
                }
            }
            normalized.withUnsafeBufferPointer { characters($0.baseAddress, $0.count) }
        }

        func characters(_ bytes: UnsafePointer<xmlChar>?, _ length: Int) {
            guard !refused, let bytes, length > 0 else { return }
            let chunk = UnsafeBufferPointer(start: bytes, count: length)
            if depth == 2 {
                text.append(contentsOf: chunk)
                if text.count > FlatXML.maximumValueLength { refused = true }
            } else if chunk.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }) {
                refused = true
            }
        }
    }
}
