// SPDX-License-Identifier: Apache-2.0
import CLibXML2
import Synchronization

/// The strict codec for WeChat Pay v2 documents: `<xml>` (or another fixed root) holding simple
/// fields, each with text or CDATA content.
///
/// XML from outside is hostile (CVE-2018-13439 was XXE in WeChat's own SDK), so decoding refuses,
/// before libxml2 sees anything: bodies over the size cap, invalid UTF-8 and NUL bytes; and while
/// parsing: any DOCTYPE, entity declarations and references beyond the five predefined ones,
/// nesting deeper than `<xml><field>`, attributes, text outside fields, and duplicate field names.
/// libxml2 runs with network access off, no DTD loading and no entity substitution; nothing here
/// touches the network or the file system.
///
/// ```swift
/// let fields = try FlatXML.decode(body)
/// let bytes = try FlatXML.encode(fields)
/// ```
public enum FlatXML {
    /// Default body cap: WeChat's largest documents (notifies with coupons, refund queries with ten
    /// refunds) stay well under 16 KiB.
    public static let defaultMaximumSize = 64 * 1024

    /// Parses a flat document into fields in document order.
    /// - Parameters:
    ///   - bytes: the raw body.
    ///   - root: the root element's name: `xml` for API documents, `root` for a decrypted refund `req_info`.
    ///   - maximumSize: bodies longer than this are refused before parsing.
    public static func decode(
        _ bytes: some Collection<UInt8>, root: String = "xml", maximumSize: Int = defaultMaximumSize
    ) throws(FlatXMLError) -> Fields {
        guard bytes.count <= maximumSize else { throw .tooLarge(limit: maximumSize) }
        let result: Result<Fields, FlatXMLError>? = bytes.withContiguousStorageIfAvailable { buffer in
            decodeContiguous(UnsafeRawBufferPointer(buffer), root: root)
        }
        if let result { return try result.get() }
        return try Array(bytes).withUnsafeBytes { decodeContiguous($0, root: root) }.get()
    }

    private static func decodeContiguous(_ buffer: UnsafeRawBufferPointer, root: String) -> Result<Fields, FlatXMLError> {
        guard !buffer.isEmpty else { return .failure(.empty) }
        if let error = screen(buffer) { return .failure(error) }
        return ParserPool.shared.withParser { parser in parser.parse(buffer, root: root) }
    }

    /// Cheap checks libxml2 would make later or not at all: NUL bytes (C strings end there) and
    /// UTF-8 validity (so no declared encoding can make libxml2 transcode hostile bytes).
    private static func screen(_ buffer: UnsafeRawBufferPointer) -> FlatXMLError? {
        if buffer.contains(0) { return .nulByte }
        // Fast path: pure ASCII needs no decoding.
        var ascii = true
        for byte in buffer where byte >= 0x80 {
            ascii = false
            break
        }
        if !ascii {
            var iterator = buffer.makeIterator()
            var decoder = UTF8()
            loop: while true {
                switch decoder.decode(&iterator) {
                case .scalarValue: continue
                case .emptyInput: break loop
                case .error: return .invalidUTF8
                }
            }
        }
        return nil
    }

    // MARK: - Encoding

    /// Writes `<root><name><![CDATA[value]]></name>…</root>` in field order.
    ///
    /// Every value goes in CDATA (WeChat recommends it for JSON values such as `detail`); a `]]>`
    /// inside a value is split across two CDATA sections so the text round-trips exactly.
    /// - Throws: when a name is not a plain XML name, or a value holds a character XML 1.0 cannot
    ///   carry (most C0 controls); the document would otherwise be refused by WeChat or sign differently.
    public static func encode(_ fields: Fields, root: String = "xml") throws(FlatXMLError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 + fields.elements.reduce(0) { $0 + 2 * $1.name.utf8.count + $1.value.utf8.count + 23 })
        guard isPlainName(root) else { throw .unencodableName }
        out.append(UInt8(ascii: "<"))
        out.append(contentsOf: root.utf8)
        out.append(UInt8(ascii: ">"))
        for field in fields {
            guard isPlainName(field.name) else { throw .unencodableName }
            out.append(UInt8(ascii: "<"))
            out.append(contentsOf: field.name.utf8)
            out.append(UInt8(ascii: ">"))
            if !field.value.isEmpty {
                out.append(contentsOf: "<![CDATA[".utf8)
                var closing = 0  // how many of "]]" we have just written
                for byte in field.value.utf8 {
                    if byte < 0x20 && byte != 0x09 && byte != 0x0A && byte != 0x0D {
                        throw .unencodableValue(field.name)
                    }
                    if byte == UInt8(ascii: ">") && closing >= 2 {
                        // "]]>" would end the section: close after "]]", reopen, then write ">".
                        out.append(contentsOf: "]]><![CDATA[".utf8)
                    }
                    out.append(byte)
                    closing = byte == UInt8(ascii: "]") ? closing + 1 : 0
                }
                out.append(contentsOf: "]]>".utf8)
            }
            out.append(contentsOf: "</".utf8)
            out.append(contentsOf: field.name.utf8)
            out.append(UInt8(ascii: ">"))
        }
        out.append(contentsOf: "</".utf8)
        out.append(contentsOf: root.utf8)
        out.append(UInt8(ascii: ">"))
        return out
    }

    /// ASCII letters, digits and `_`, starting with a letter or `_`: every WeChat field name
    /// (`coupon_fee_0`, `refund_recv_accout_1`) and nothing that needs escaping.
    public static func isPlainName(_ name: String) -> Bool {
        var first = true
        for byte in name.utf8 {
            let letter = (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
            let digit = byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
            guard letter || byte == UInt8(ascii: "_") || (digit && !first) else { return false }
            first = false
        }
        return !first
    }
}

// MARK: - The SAX2 parser

/// One reusable libxml2 push-parser context. Creating a context costs more than parsing a 1 KB
/// notify, so contexts are pooled; each is used by one parse at a time.
private final class FlatXMLParser {
    let context: xmlParserCtxtPtr
    // Parse state, reset for each document.
    var root = "xml"
    var depth = 0
    var fields = Fields()
    var seen = Set<String>()
    var currentName: String?
    var text: [UInt8] = []
    var failure: FlatXMLError?
    var rootSeen = false

    init() {
        wxpay_xml_check_version()
        var handler = xmlSAXHandler()
        handler.initialized = UInt32(XML_SAX2_MAGIC)
        handler.startElementNs = { user, localname, prefix, _, namespaceCount, _, attributeCount, _, _ in
            FlatXMLParser.from(user).startElement(localname, hasPrefix: prefix != nil,
                                                  namespaces: namespaceCount, attributes: attributeCount)
        }
        handler.endElementNs = { user, _, _, _ in FlatXMLParser.from(user).endElement() }
        handler.characters = { user, bytes, length in FlatXMLParser.from(user).characters(bytes, Int(length)) }
        handler.cdataBlock = { user, bytes, length in FlatXMLParser.from(user).characters(bytes, Int(length)) }
        handler.internalSubset = { user, _, _, _ in FlatXMLParser.from(user).fail(.doctype) }
        handler.externalSubset = { user, _, _, _ in FlatXMLParser.from(user).fail(.doctype) }
        handler.entityDecl = { user, _, _, _, _, _ in FlatXMLParser.from(user).fail(.entity) }
        handler.getEntity = { user, _ in
            // Called only for non-predefined references: there is no DTD, so there are none.
            FlatXMLParser.from(user).fail(.entity)
            return nil
        }
        handler.getParameterEntity = { user, _ in
            FlatXMLParser.from(user).fail(.entity)
            return nil
        }
        handler.reference = { user, _ in FlatXMLParser.from(user).fail(.entity) }
        handler.serror = { user, error in
            guard let user, let error else { return }
            let parser = FlatXMLParser.from(user)
            guard parser.failure == nil else { return }
            let e = error.pointee
            if e.level.rawValue >= XML_ERR_ERROR.rawValue {
                // Errors about undeclared entities come from the well-formedness check, not a callback.
                if e.code == Int32(XML_ERR_UNDECLARED_ENTITY.rawValue) || e.code == Int32(XML_WAR_UNDECLARED_ENTITY.rawValue)
                    || e.code == Int32(XML_ERR_ENTITY_LOOP.rawValue) || e.code == Int32(XML_ERR_ENTITY_PE_INTERNAL.rawValue)
                {
                    parser.failure = .entity
                } else if e.code == Int32(XML_ERR_INVALID_CHAR.rawValue) || e.code == Int32(XML_ERR_INVALID_ENCODING.rawValue) {
                    parser.failure = .invalidUTF8
                } else {
                    parser.failure = .malformed(line: Int(e.line), column: Int(e.int2))
                }
            }
        }
        guard let context = xmlCreatePushParserCtxt(&handler, nil, nil, 0, nil) else {
            // Allocation failure inside libxml2: nothing sensible to do but stop.
            fatalError("libxml2 could not allocate a parser context")
        }
        self.context = context
    }

    deinit { xmlFreeParserCtxt(context) }

    static func from(_ user: UnsafeMutableRawPointer?) -> FlatXMLParser {
        Unmanaged<FlatXMLParser>.fromOpaque(user!).takeUnretainedValue()
    }

    func parse(_ buffer: UnsafeRawBufferPointer, root: String) -> Result<Fields, FlatXMLError> {
        self.root = root
        depth = 0
        fields = Fields()
        seen.removeAll(keepingCapacity: true)
        currentName = nil
        text.removeAll(keepingCapacity: true)
        failure = nil
        rootSeen = false

        xmlCtxtResetPush(context, nil, 0, nil, "UTF-8")
        // NONET: never fetch anything. No NOENT (no entity substitution), no DTDLOAD, no HUGE (keep
        // libxml2's own limits on text and depth), IGNORE_ENC: the bytes were validated as UTF-8.
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOCDATA.rawValue | XML_PARSE_IGNORE_ENC.rawValue)
        xmlCtxtUseOptions(context, options)
        context.pointee.userData = Unmanaged.passUnretained(self).toOpaque()
        let status = xmlParseChunk(context, buffer.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(buffer.count), 1)
        context.pointee.userData = nil
        if let failure { return .failure(failure) }
        if status != 0 || context.pointee.wellFormed == 0 { return .failure(.malformed(line: 0, column: 0)) }
        if depth != 0 || !rootSeen { return .failure(.unexpectedRoot) }
        return .success(fields)
    }


    func fail(_ error: FlatXMLError) {
        if failure == nil { failure = error }
        xmlStopParser(context)
    }

    func startElement(_ localname: UnsafePointer<xmlChar>?, hasPrefix: Bool, namespaces: Int32, attributes: Int32) {
        guard failure == nil, let localname else { return }
        if hasPrefix || namespaces != 0 || attributes != 0 { return fail(.attributes) }
        depth += 1
        switch depth {
        case 1:
            guard xmlStrEqual(localname, root) != 0 else { return fail(.unexpectedRoot) }
            rootSeen = true
        case 2:
            currentName = String(cString: localname)
            text.removeAll(keepingCapacity: true)
        default:
            fail(.tooDeep)
        }
    }

    func endElement() {
        guard failure == nil else { return }
        if depth == 2, let name = currentName {
            guard seen.insert(name).inserted else { return fail(.duplicateField(name)) }
            fields.appendUnchecked(name: name, value: String(decoding: text, as: UTF8.self))
            currentName = nil
        }
        depth -= 1
    }

    func characters(_ bytes: UnsafePointer<xmlChar>?, _ length: Int) {
        guard failure == nil, let bytes, length > 0 else { return }
        let chunk = UnsafeBufferPointer(start: bytes, count: length)
        if depth == 2 {
            text.append(contentsOf: chunk)
        } else if chunk.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }) {
            fail(.mixedContent)
        }
    }
}

/// Parser contexts are not thread-safe; each parse borrows one from here and returns it.
private final class ParserPool: Sendable {
    static let shared = ParserPool()

    /// Holds idle parsers. `FlatXMLParser` is not Sendable, but a parser in the pool is owned by no
    /// one, and one taken out is used by exactly one caller until it is put back.
    private struct Idle: @unchecked Sendable { var parsers: [FlatXMLParser] = [] }
    private let idle = Mutex(Idle())
    private static let maximumIdle = 64

    func withParser<R>(_ body: (FlatXMLParser) -> R) -> R {
        let parser = idle.withLock { $0.parsers.popLast() } ?? FlatXMLParser()
        defer {
            idle.withLock { if $0.parsers.count < Self.maximumIdle { $0.parsers.append(parser) } }
        }
        return body(parser)
    }
}
