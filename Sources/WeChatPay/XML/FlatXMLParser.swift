// SPDX-License-Identifier: Apache-2.0
import CLibXML2
import Synchronization

/// The libxml2 SAX2 parser behind `FlatXML.decode`, for bytes `FlatXML.screen` has already checked
/// (valid UTF-8, XML characters only, no NUL).
///
/// libxml2 tokenizes; the callbacks below enforce the flat subset and refuse, with the error that
/// names it, everything else XML allows: a DOCTYPE (refused in its first callback, before any
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
    /// The callbacks' state, behind a pointer: libxml2 hands it back as `userData`, and a struct
    /// reached through a pointer costs no reference counting and no dynamic exclusivity checks,
    /// which on a class's properties took an eighth of the parse time.
    private let state: UnsafeMutablePointer<FlatXMLParseState>

    /// Whether the context's name dictionary has grown past what honest traffic needs.
    var isWorn: Bool {
        guard let dictionary = context.pointee.dict else { return false }
        return xmlDictSize(dictionary) > Self.maximumInternedNames
    }
    init() {
        wxpay_xml_check_version()
        var handler = xmlSAXHandler()
        handler.initialized = UInt32(XML_SAX2_MAGIC)
        handler.startElementNs = { user, localname, prefix, _, namespaceCount, _, attributeCount, _, _ in
            FlatXMLParseState.from(user).pointee.startElement(
                localname, refuseAttributes: prefix != nil || namespaceCount != 0 || attributeCount != 0)
        }
        handler.endElementNs = { user, _, _, _ in FlatXMLParseState.from(user).pointee.endElement() }
        handler.characters = { user, bytes, length in FlatXMLParseState.from(user).pointee.characters(bytes, Int(length)) }
        handler.ignorableWhitespace = handler.characters
        handler.cdataBlock = { user, bytes, length in FlatXMLParseState.from(user).pointee.cdata(bytes, Int(length)) }
        handler.internalSubset = { user, _, _, _ in FlatXMLParseState.from(user).pointee.fail(.doctype) }
        handler.externalSubset = { user, _, _, _ in FlatXMLParseState.from(user).pointee.fail(.doctype) }
        handler.entityDecl = { user, _, _, _, _, _ in FlatXMLParseState.from(user).pointee.fail(.doctype) }
        handler.getEntity = { user, _ in
            // Called only for references beyond the predefined five: with no DTD there are none.
            FlatXMLParseState.from(user).pointee.fail(.entity)
            return nil
        }
        handler.getParameterEntity = { user, _ in
            FlatXMLParseState.from(user).pointee.fail(.entity)
            return nil
        }
        handler.reference = { user, _ in FlatXMLParseState.from(user).pointee.fail(.entity) }
        handler.processingInstruction = { user, _, _ in FlatXMLParseState.from(user).pointee.fail(.processingInstruction) }
        handler.comment = { user, _ in FlatXMLParseState.from(user).pointee.fail(.comment) }
        handler.serror = { user, error in
            guard let user, let error else { return }
            FlatXMLParseState.from(user).pointee.libxml2Error(error.pointee)
        }
        guard let context = xmlCreatePushParserCtxt(&handler, nil, nil, 0, nil) else {
            // Allocation failure inside libxml2: nothing sensible is left to do.
            fatalError("libxml2 could not allocate a parser context")
        }
        self.context = context
        state = .allocate(capacity: 1)
        state.initialize(to: FlatXMLParseState(context: context))
    }

    deinit {
        xmlFreeParserCtxt(context)
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// Parses one document; the buffer holds all of it.
    func parse(_ buffer: UnsafeBufferPointer<UInt8>, root: String) -> Result<[Fields.Field], FlatXMLError> {
        state.pointee.reset(root: root)
        xmlCtxtResetPush(context, nil, 0, nil, nil)
        // NONET: never fetch anything. No NOENT (no entity substitution), no DTDLOAD, no HUGE (keep
        // libxml2's own limits); IGNORE_ENC: the screen proved the bytes are UTF-8, and honouring a
        // declared GBK would let one document mean two things.
        xmlCtxtUseOptions(context, Int32(XML_PARSE_NONET.rawValue | XML_PARSE_IGNORE_ENC.rawValue))
        context.pointee.userData = UnsafeMutableRawPointer(state)
        let status = buffer.withMemoryRebound(to: CChar.self) {
            xmlParseChunk(context, $0.baseAddress, Int32($0.count), 1)
        }
        context.pointee.userData = nil
        // libxml2 builds a document behind SAX for some declarations; the context does not own it.
        if let document = context.pointee.myDoc {
            xmlFreeDoc(document)
            context.pointee.myDoc = nil
        }
        if let failure = state.pointee.failure { return .failure(failure) }
        guard status == 0, context.pointee.wellFormed != 0 else {
            return .failure(.malformed(line: Int(xmlSAX2GetLineNumber(context)), column: 0))
        }
        // libxml2 only warns about XML 1.1 and other 1.x versions; WeChat's documents are 1.0.
        if let version = context.pointee.version, xmlStrEqual(version, "1.0") == 0 {
            return .failure(.malformed(line: 1, column: 0))
        }
        guard state.pointee.rootSeen, state.pointee.depth == 0 else { return .failure(.unexpectedRoot) }
        return .success(state.pointee.fields)
    }
}

/// What the SAX callbacks of one `FlatXMLParser` know about the document being parsed.
struct FlatXMLParseState {
    let context: xmlParserCtxtPtr
    var root: [UInt8] = []
    var depth = 0
    var rootSeen = false
    var fields: [Fields.Field] = []
    /// The interned names of this document's fields: libxml2 hands every occurrence of a name the
    /// same dictionary pointer, so a duplicate is a pointer seen before (no hashing of strings).
    var seenNames: [UnsafePointer<xmlChar>] = []
    /// The same names as a set, once a document has more fields than any WeChat document: a
    /// linear scan is fastest for 30 fields and quadratic for 10,000 hostile ones.
    var seenNameSet = Set<UnsafePointer<xmlChar>>()
    var currentName: UnsafePointer<xmlChar>?
    /// Swift strings for interned names, valid as long as the context (and its dictionary) lives:
    /// WeChat's field names repeat, so each is decoded once per context, not once per document.
    var nameStrings: [UnsafePointer<xmlChar>: String] = [:]
    var text: [UInt8] = []
    /// A value that arrived in one callback (the usual case) becomes a String at once, without
    /// passing through `text`.
    var pendingValue: String?
    var failure: FlatXMLError?

    init(context: xmlParserCtxtPtr) {
        self.context = context
    }

    static func from(_ user: UnsafeMutableRawPointer?) -> UnsafeMutablePointer<FlatXMLParseState> {
        user!.assumingMemoryBound(to: FlatXMLParseState.self)
    }

    mutating func reset(root: String) {
        self.root = Array(root.utf8)
        depth = 0
        rootSeen = false
        fields = []
        fields.reserveCapacity(32)
        seenNames.removeAll(keepingCapacity: true)
        seenNameSet.removeAll()
        currentName = nil
        text.removeAll(keepingCapacity: true)
        failure = nil
    }

    // MARK: - Callbacks

    mutating func fail(_ error: FlatXMLError) {
        if failure == nil { failure = error }
        xmlStopParser(context)
    }

    mutating func libxml2Error(_ error: xmlError) {
        guard failure == nil, error.level.rawValue >= XML_ERR_ERROR.rawValue else { return }
        switch Int(error.code) {
        case Int(XML_ERR_UNDECLARED_ENTITY.rawValue), Int(XML_WAR_UNDECLARED_ENTITY.rawValue),
             Int(XML_ERR_ENTITY_LOOP.rawValue), Int(XML_ERR_ENTITY_PE_INTERNAL.rawValue):
            fail(.entity)
        case Int(XML_ERR_INVALID_CHAR.rawValue), Int(XML_ERR_INVALID_CHARREF.rawValue),
             Int(XML_ERR_INVALID_DEC_CHARREF.rawValue), Int(XML_ERR_INVALID_HEX_CHARREF.rawValue):
            fail(.invalidCharacter)
        case Int(XML_ERR_INVALID_ENCODING.rawValue):
            fail(.invalidUTF8)
        case Int(XML_NS_ERR_UNDEFINED_NAMESPACE.rawValue), Int(XML_NS_ERR_QNAME.rawValue),
             Int(XML_NS_ERR_ATTRIBUTE_REDEFINED.rawValue), Int(XML_ERR_ATTRIBUTE_REDEFINED.rawValue):
            fail(.attributes)
        default:
            fail(.malformed(line: Int(error.line), column: Int(error.int2)))
        }
    }

    mutating func startElement(_ localname: UnsafePointer<xmlChar>?, refuseAttributes: Bool) {
        guard failure == nil, let localname else { return }
        if refuseAttributes { return fail(.attributes) }
        depth += 1
        switch depth {
        case 1:
            let name = UnsafeBufferPointer(start: localname, count: Int(xmlStrlen(localname)))
            guard name.elementsEqual(root) else { return fail(.unexpectedRoot) }
            rootSeen = true
        case 2:
            currentName = localname
            text.removeAll(keepingCapacity: true)
            pendingValue = nil
        default:
            fail(.tooDeep)
        }
    }

    mutating func endElement() {
        guard failure == nil else { return }
        if depth == 2, let name = currentName {
            let string = nameString(name)
            if seenNames.count < 64 {
                guard !seenNames.contains(name) else { return fail(.duplicateField(string)) }
                seenNames.append(name)
                if seenNames.count == 64 { seenNameSet = Set(seenNames) }
            } else {
                guard seenNameSet.insert(name).inserted else { return fail(.duplicateField(string)) }
            }
            let value = pendingValue ?? (text.isEmpty ? "" : String(decoding: text, as: UTF8.self))
            pendingValue = nil
            fields.append(Fields.Field(name: string, value: value))
        }
        depth -= 1
    }

    mutating func nameString(_ name: UnsafePointer<xmlChar>) -> String {
        if let known = nameStrings[name] { return known }
        let string = String(cString: name)
        nameStrings[name] = string
        return string
    }

    mutating func characters(_ bytes: UnsafePointer<xmlChar>?, _ length: Int) {
        guard failure == nil, let bytes, length > 0 else { return }
        let chunk = UnsafeBufferPointer(start: bytes, count: length)
        if depth == 2 {
            if text.isEmpty && pendingValue == nil {
                guard length <= FlatXML.maximumValueLength else {
                    return fail(.valueTooLong(limit: FlatXML.maximumValueLength))
                }
                pendingValue = String(decoding: chunk, as: UTF8.self)
                return
            }
            if let pending = pendingValue {
                text.append(contentsOf: pending.utf8)
                pendingValue = nil
            }
            guard text.count + length <= FlatXML.maximumValueLength else {
                return fail(.valueTooLong(limit: FlatXML.maximumValueLength))
            }
            text.append(contentsOf: chunk)
        } else if chunk.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }) {
            fail(depth == 0 ? .malformed(line: 0, column: 0) : .mixedContent)
        }
    }

    /// libxml2 hands CDATA over without the line-end normalisation XML 1.0 §2.11 applies to the
    /// whole document (other text is normalised): CR LF and a lone CR become LF here, so a value
    /// reads the same whether it came as text or as CDATA.
    mutating func cdata(_ bytes: UnsafePointer<xmlChar>?, _ length: Int) {
        guard failure == nil, let bytes, length > 0 else { return }
        let chunk = UnsafeBufferPointer(start: bytes, count: length)
        guard chunk.contains(0x0D) else { return characters(bytes, length) }
        var normalized: [UInt8] = []
        normalized.reserveCapacity(length)
        var index = 0
        while index < length {
            if chunk[index] == 0x0D {
                normalized.append(0x0A)
                index += index + 1 < length && chunk[index + 1] == 0x0A ? 2 : 1
            } else {
                normalized.append(chunk[index])
                index += 1
            }
        }
        normalized.withUnsafeBufferPointer { characters($0.baseAddress, $0.count) }
    }
}

/// Parser contexts are not thread-safe; each parse borrows one from here and returns it.
final class FlatXMLParserPool: Sendable {
    static let shared = FlatXMLParserPool()

    /// Idle parsers. `FlatXMLParser` is not Sendable, but a parser in the pool is owned by no one,
    /// and one taken out is used by exactly one caller until it is put back.
    private struct Idle: @unchecked Sendable { var parsers: [FlatXMLParser] = [] }
    private let idle = Mutex(Idle())
    private static let maximumIdle = 16

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
