// SPDX-License-Identifier: Apache-2.0
import CFlatXML
import CLibXML2
import Synchronization

/// The parser behind `FlatXML.decode`, for bytes `FlatXML.screen` has already checked (valid
/// UTF-8, XML characters only, no NUL).
///
/// WeChat's own documents, all in one canonical shape, are read by a one-pass scanner
/// (the CFlatXML target's flat_canonical.c) that accepts that shape or declines without a verdict.
/// Every other document goes to libxml2's SAX2 parser, which decides: libxml2 tokenizes; the C
/// callbacks of CFlatXML's flat_sax.c enforce the flat subset and refuse, with the error that names
/// it, everything else XML allows: a DOCTYPE (refused in its first callback, before any
/// declaration inside it is read, so no entity can ever be declared), references to entities other
/// than the predefined five, comments, processing instructions, attributes and namespaces, text
/// outside fields, elements below a field, over-long values and duplicate names. The context runs
/// with network access off (`XML_PARSE_NONET`), no DTD loading, no entity substitution, no
/// `XML_PARSE_HUGE`, and ignores a declared encoding: the bytes are UTF-8.
///
/// Creating a context costs more than parsing a 1 KB notify, so contexts are pooled and reset
/// between documents. libxml2 interns every element name in the context's dictionary for the
/// context's life, so a context whose dictionary passes `maximumInternedNames` is retired: WeChat's
/// documents use about a hundred distinct names, an attacker sending unique names gets a fresh
/// context every few documents instead of unbounded growth.
final class FlatXMLParser {
    static let maximumInternedNames = 2048

    private let context: xmlParserCtxtPtr
    /// What the C callbacks (CFlatXML's flat_sax.c) record: fields as name ids and value ranges in
    /// one byte buffer, or the rule the document broke.
    private let state: UnsafeMutablePointer<wxpay_flat_state>
    /// One String per interned name id: WeChat's field names repeat, so each is decoded once per
    /// context, not once per document. Unchecked exclusivity: a parser is used by one caller at a
    /// time (the pool hands it out), and the dynamic checks cost 4% of a notify's parse.
    @exclusivity(unchecked) private var names: [String] = []

    /// How many names the context's dictionary holds.
    var internedNames: Int {
        context.pointee.dict.map { Int(xmlDictSize($0)) } ?? 0
    }

    /// Whether the context's name dictionary has grown past what honest traffic needs.
    var isWorn: Bool { internedNames > Self.maximumInternedNames }

    init() {
        wxpay_xml_check_version()
        var handler = xmlSAXHandler()
        wxpay_flat_sax_handler(&handler)
        guard let context = xmlCreatePushParserCtxt(&handler, nil, nil, 0, nil),
              let state = wxpay_flat_state_create(context, FlatXML.maximumValueLength)
        else {
            // Allocation failure inside libxml2 or malloc: nothing sensible is left to do.
            fatalError("libxml2 could not allocate a parser context")
        }
        self.context = context
        self.state = state
    }

    deinit {
        xmlFreeParserCtxt(context)
        wxpay_flat_state_free(state)
    }

    /// Parses one document; the buffer holds all of it. `carriageReturn`: whether it holds one
    /// (the screen knows), so CDATA needs line-end normalisation. A document in WeChat's canonical
    /// form is read by the scanner of CFlatXML's flat_canonical.c; any other, and any with a carriage
    /// return, by libxml2. `route` forces libxml2, for the tests that compare the two.
    func parse(_ buffer: UnsafeBufferPointer<UInt8>, root: String, carriageReturn: Bool,
               route: FlatXML.Route = .canonicalFirst) -> Result<[Fields.Field], FlatXMLError> {
        if route == .canonicalFirst, !carriageReturn, let fields = scanCanonical(buffer, root: root) {
            return .success(fields)
        }
        let status = root.withCString { root in
            wxpay_flat_state_reset(state, root, carriageReturn ? 1 : 0)
            xmlCtxtResetPush(context, nil, 0, nil, nil)
            // NONET: never fetch anything. No NOENT (no entity substitution), no DTDLOAD, no HUGE
            // (keep libxml2's own limits); IGNORE_ENC: the screen proved the bytes are UTF-8, and
            // honouring a declared GBK would let one document mean two things.
            xmlCtxtUseOptions(context, Int32(XML_PARSE_NONET.rawValue | XML_PARSE_IGNORE_ENC.rawValue))
            context.pointee.userData = UnsafeMutableRawPointer(state)
            defer { context.pointee.userData = nil }
            return buffer.withMemoryRebound(to: CChar.self) {
                xmlParseChunk(context, $0.baseAddress, Int32($0.count), 1)
            }
        }
        // libxml2 builds a document behind SAX for some declarations; the context does not own it.
        if let document = context.pointee.myDoc {
            xmlFreeDoc(document)
            context.pointee.myDoc = nil
        }
        if let failure = failure() { return .failure(failure) }
        guard status == 0, context.pointee.wellFormed != 0 else {
            return .failure(.malformed(line: Int(xmlSAX2GetLineNumber(context)), column: 0))
        }
        // libxml2 only warns about XML 1.1 and other 1.x versions; WeChat's documents are 1.0.
        if let version = context.pointee.version, xmlStrEqual(version, "1.0") == 0 {
            return .failure(.malformed(line: 1, column: 0))
        }
        guard state.pointee.root_seen != 0, state.pointee.depth == 0 else { return .failure(.unexpectedRoot) }
        return .success(fields())
    }

    /// The fields of a document in WeChat's canonical shape, or nil when it is in any other
    /// (the scanner declines; it never refuses). The buffer must hold no carriage return.
    func scanCanonical(_ buffer: UnsafeBufferPointer<UInt8>, root: String) -> [Fields.Field]? {
        let accepted = root.withCString { root in
            wxpay_flat_state_reset(state, root, 0)
            return wxpay_flat_parse_canonical(state, buffer.baseAddress, buffer.count) != 0
        }
        return accepted ? fields() : nil
    }

    private func fields() -> [Fields.Field] {
        let count = state.pointee.field_count
        guard count > 0, let records = state.pointee.fields else { return [] }
        let values = state.pointee.values
        var fields: [Fields.Field] = []
        fields.reserveCapacity(count)
        for record in UnsafeBufferPointer(start: records, count: count) {
            let length = Int(record.value_length)
            let value = length == 0 || values == nil
                ? "" : String(decoding: UnsafeBufferPointer(start: values! + record.value_offset, count: length), as: UTF8.self)
            fields.append(Fields.Field(name: name(id: Int(record.name_id)), value: value))
        }
        return fields
    }

    /// The String for a name id. Ids are dense and handed out in order, but a document that
    /// failed may have taken some that Swift never saw, so the table catches up from C's.
    private func name(id: Int) -> String {
        if id < names.count { return names[id] }
        while names.count <= id {
            names.append(String(cString: state.pointee.id_names[names.count]!))
        }
        return names[id]
    }

    private func failure() -> FlatXMLError? {
        switch state.pointee.failure {
        case WXPAY_FLAT_OK: nil
        case WXPAY_FLAT_DOCTYPE: .doctype
        case WXPAY_FLAT_ENTITY: .entity
        case WXPAY_FLAT_PROCESSING_INSTRUCTION: .processingInstruction
        case WXPAY_FLAT_COMMENT: .comment
        case WXPAY_FLAT_TOO_DEEP: .tooDeep
        case WXPAY_FLAT_VALUE_TOO_LONG: .valueTooLong(limit: FlatXML.maximumValueLength)
        case WXPAY_FLAT_UNEXPECTED_ROOT: .unexpectedRoot
        case WXPAY_FLAT_ATTRIBUTES: .attributes
        case WXPAY_FLAT_MIXED_CONTENT: .mixedContent
        case WXPAY_FLAT_TEXT_OUTSIDE_ROOT: .malformed(line: 0, column: 0)
        case WXPAY_FLAT_DUPLICATE_FIELD:
            .duplicateField(state.pointee.duplicate_name.map { String(cString: $0) } ?? "")
        case WXPAY_FLAT_LIBXML2_ERROR: Self.libxml2Failure(
            code: Int(state.pointee.error_code), line: Int(state.pointee.error_line),
            column: Int(state.pointee.error_column))
        default: .malformed(line: 0, column: 0)  // WXPAY_FLAT_OUT_OF_MEMORY: refused, not half-read
        }
    }

    private static func libxml2Failure(code: Int, line: Int, column: Int) -> FlatXMLError {
        switch code {
        case Int(XML_ERR_UNDECLARED_ENTITY.rawValue), Int(XML_WAR_UNDECLARED_ENTITY.rawValue),
             Int(XML_ERR_ENTITY_LOOP.rawValue), Int(XML_ERR_ENTITY_PE_INTERNAL.rawValue):
            .entity
        case Int(XML_ERR_INVALID_CHAR.rawValue), Int(XML_ERR_INVALID_CHARREF.rawValue),
             Int(XML_ERR_INVALID_DEC_CHARREF.rawValue), Int(XML_ERR_INVALID_HEX_CHARREF.rawValue):
            .invalidCharacter
        case Int(XML_ERR_INVALID_ENCODING.rawValue):
            .invalidUTF8
        case Int(XML_NS_ERR_UNDEFINED_NAMESPACE.rawValue), Int(XML_NS_ERR_QNAME.rawValue),
             Int(XML_NS_ERR_ATTRIBUTE_REDEFINED.rawValue), Int(XML_ERR_ATTRIBUTE_REDEFINED.rawValue):
            .attributes
        default:
            .malformed(line: line, column: column)
        }
    }
}

/// Parser contexts are not thread-safe; each parse borrows one from here and returns it.
final class FlatXMLParserPool: Sendable {
    static let shared = FlatXMLParserPool()

    /// Idle parsers.
    // @unchecked Sendable: each parser owns C handles (a libxml2 parser context and its SAX state),
    // which are not thread-safe; a parser in the pool is owned by no one, and one taken out under
    // the mutex is used by exactly one caller until it is put back.
    private struct Idle: @unchecked Sendable { var parsers: [FlatXMLParser] = [] }
    private let idle = Mutex(Idle())
    static let maximumIdle = 16

    /// The names interned by the idle parsers' dictionaries together: what the pool keeps alive
    /// between documents, at most `maximumIdle` × `FlatXMLParser.maximumInternedNames`.
    var internedNames: Int {
        idle.withLock { $0.parsers.reduce(0) { $0 + $1.internedNames } }
    }

    func withParser<R>(_ body: (FlatXMLParser) -> R) -> R {
        let parser = idle.withLock { $0.parsers.popLast() } ?? FlatXMLParser()
        defer {
            if !parser.isWorn {
                idle.withLock { if $0.parsers.count < Self.maximumIdle { $0.parsers.append(parser) } }
            }
        }
        return body(parser)
    }
}
