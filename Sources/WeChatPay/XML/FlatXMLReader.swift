// SPDX-License-Identifier: Apache-2.0

/// The strict flat-XML parser behind `FlatXML.decode`: a single forward pass over bytes that
/// `FlatXML.screen` has already checked (valid UTF-8, XML characters only, no NUL).
///
/// It implements the XML 1.0 productions a WeChat Pay document can use, and nothing else:
///
///     document ::= BOM? XMLDecl? S? element S?
///     XMLDecl  ::= '<?xml' S 'version' Eq '"1.0"' (S 'encoding' Eq EncName)? (S 'standalone' Eq ('yes'|'no'))? S? '?>'
///     element  ::= '<' root S? '>' (S | field | ws-CDATA | ws-reference)* '</' root S? '>' | '<' root S? '/>'
///     field    ::= '<' Name S? '/>' | '<' Name S? '>' (CharData | Reference | CDSect)* '</' Name S? '>'
///
/// Everything else XML allows is refused with the error that names it: DOCTYPE (so no entity can
/// ever be declared, internal or external, general or parameter), references to entities other
/// than the predefined five, comments, processing instructions, attributes and namespaces, text
/// outside fields, and elements below a field. There is no code path that resolves a URI, reads
/// a file or expands an entity, which is the point: XXE, billion laughs and quadratic blowup have
/// nothing to attack. Line ends are normalised as XML requires (CR LF and lone CR become LF), so
/// values, and the signatures computed over them, are what any conforming parser would see.
///
/// libxml2 is kept as the reference this parser is checked against (the differential test and
/// fuzz target in `fuzz/`); it is not used here because its SAX2 tokenizer alone costs about
/// 3 µs on a realistic 1.2 KB notify, most of the budget of the notify path (see BENCHMARKS.md).
struct FlatXMLReader {
    private let base: UnsafePointer<UInt8>
    private let end: Int
    private var position = 0
    /// Holds a value that is not one slice of the input (references, line ends, several CDATA
    /// sections); reused across the fields of one document.
    private var scratch: [UInt8] = []
    private var names: FieldNameSet

    init(_ buffer: UnsafeBufferPointer<UInt8>, names: FieldNameSet) {
        base = buffer.baseAddress!
        end = buffer.count
        self.names = names
    }

    mutating func releaseNames() { names.release() }

    // MARK: - Document

    mutating func read(root: String) throws(FlatXMLError) -> [Fields.Field] {
        if matches(0xEF, 0xBB, 0xBF, at: 0) { position = 3 }
        if matches("<?xml", at: position) && isWhitespace(byte(at: position &+ 5)) {
            try readXMLDeclaration()
        }
        skipWhitespace()
        guard position < end else { throw malformed(at: position) }
        guard base[position] == ascii("<") else { throw malformed(at: position) }
        try refuseMarkupOutsideElements()
        let rootTag = try readStartTag(at: position)
        guard rootTag.nameEquals(root, in: base) else { throw .unexpectedRoot }
        var fields: [Fields.Field] = []
        if !rootTag.isEmpty {
            fields.reserveCapacity(32)
            try readRootContent(rootTag, into: &fields)
        }
        try readEpilog()
        return fields
    }

    /// `S 'version' Eq '"1.0"' (S 'encoding' Eq EncName)? (S 'standalone' Eq ('yes'|'no'))? S? '?>'`.
    /// The encoding is read and ignored: the bytes are UTF-8 (the screen made sure), and
    /// honouring a declared GBK or UTF-16 would let a document mean two things.
    private mutating func readXMLDeclaration() throws(FlatXMLError) {
        position &+= 5
        var sawSpace = skipWhitespace()
        var expecting = 0  // 0: version, 1: encoding or standalone, 2: standalone, 3: nothing more
        while true {
            if matches("?>", at: position) {
                guard expecting > 0 else { throw malformed(at: position) }
                position &+= 2
                return
            }
            guard sawSpace else { throw malformed(at: position) }
            if expecting == 0 && matches("version", at: position) {
                position &+= 7
                let value = try readPseudoAttributeValue()
                guard value.count == 3, matches("1.0", at: value.lowerBound) else { throw malformed(at: value.lowerBound) }
                expecting = 1
            } else if expecting == 1 && matches("encoding", at: position) {
                position &+= 8
                let value = try readPseudoAttributeValue()
                guard isEncodingName(value) else { throw malformed(at: value.lowerBound) }
                expecting = 2
            } else if (expecting == 1 || expecting == 2) && matches("standalone", at: position) {
                position &+= 10
                let value = try readPseudoAttributeValue()
                guard (value.count == 3 && matches("yes", at: value.lowerBound))
                    || (value.count == 2 && matches("no", at: value.lowerBound))
                else { throw malformed(at: value.lowerBound) }
                expecting = 3
            } else {
                throw malformed(at: position)
            }
            sawSpace = skipWhitespace()
        }
    }

    /// `Eq ('"' … '"' | "'" … "'")`, returning the range between the quotes.
    private mutating func readPseudoAttributeValue() throws(FlatXMLError) -> Range<Int> {
        skipWhitespace()
        guard byte(at: position) == ascii("=") else { throw malformed(at: position) }
        position &+= 1
        skipWhitespace()
        let quote = byte(at: position)
        guard quote == ascii("\"") || quote == ascii("'") else { throw malformed(at: position) }
        let start = position &+ 1
        var index = start
        while index < end && base[index] != quote {
            guard base[index] != ascii("<") else { throw malformed(at: index) }
            index &+= 1
        }
        guard index < end else { throw malformed(at: index) }
        position = index &+ 1
        return start..<index
    }

    /// `[A-Za-z] ([A-Za-z0-9._] | '-')*`
    private func isEncodingName(_ range: Range<Int>) -> Bool {
        guard !range.isEmpty, isASCIILetter(base[range.lowerBound]) else { return false }
        for index in range.dropFirst() {
            let byte = base[index]
            guard isASCIILetter(byte) || isDigit(byte) || byte == ascii(".") || byte == ascii("_") || byte == ascii("-")
            else { return false }
        }
        return true
    }

    /// At a `<` before the root: refuses DOCTYPE, comments and processing instructions by name.
    private func refuseMarkupOutsideElements() throws(FlatXMLError) {
        switch byte(at: position &+ 1) {
        case ascii("?"): throw .processingInstruction
        case ascii("!"): throw declarationError(at: position)
        default: return
        }
    }

    /// Names what a `<!` introduces where no CDATA section may start.
    private func declarationError(at index: Int) -> FlatXMLError {
        if matches("<!--", at: index) { return .comment }
        if matches("<!DOCTYPE", at: index) { return .doctype }
        if matches("<!ENTITY", at: index) { return .entity }
        return malformed(at: index)
    }

    // MARK: - Root content: whitespace and fields

    private mutating func readRootContent(_ rootTag: Tag, into fields: inout [Fields.Field]) throws(FlatXMLError) {
        while true {
            skipWhitespace()
            guard position < end else { throw malformed(at: position) }
            let current = base[position]
            if current == ascii("<") {
                switch byte(at: position &+ 1) {
                case ascii("/"):
                    try readEndTag(matching: rootTag)
                    return
                case ascii("?"):
                    throw .processingInstruction
                case ascii("!"):
                    guard matches("<![CDATA[", at: position) else { throw declarationError(at: position) }
                    // Allowed only when it holds whitespace, as libxml2 and any SAX consumer see it.
                    let (content, _) = try cdataContent(at: position, limit: end)
                    for index in content where !isWhitespace(base[index]) { throw .mixedContent }
                    position = content.upperBound &+ 3
                default:
                    try readField(at: position, into: &fields)
                }
            } else if current == ascii("&") {
                let (scalar, next) = try readReference(at: position)
                guard scalar == 0x20 || scalar == 0x09 || scalar == 0x0A || scalar == 0x0D else { throw .mixedContent }
                position = next
            } else {
                throw .mixedContent
            }
        }
    }

    private mutating func readField(at start: Int, into fields: inout [Fields.Field]) throws(FlatXMLError) {
        let tag = try readStartTag(at: start)
        let value = tag.isEmpty ? "" : try readFieldContent(tag)
        let nameBytes = UnsafeBufferPointer(start: base + tag.name.lowerBound, count: tag.name.count)
        let hash = FieldNameSet.hash(nameBytes)
        guard names.insert(nameBytes, hash: hash) else { throw .duplicateField(String(decoding: nameBytes, as: UTF8.self)) }
        let name = KnownFieldNames.name(for: nameBytes, hash: hash) ?? String(decoding: nameBytes, as: UTF8.self)
        fields.append(Fields.Field(name: name, value: value))
    }

    /// Reads a field's text up to and including its end tag. The common case, one text run or one
    /// CDATA section with no reference and no carriage return, becomes a String straight from the
    /// input; anything else is assembled in `scratch`.
    private mutating func readFieldContent(_ tag: Tag) throws(FlatXMLError) -> String {
        var single: Range<Int>? = nil
        var assembling = false
        var length = 0

        func append(_ range: Range<Int>, to reader: inout FlatXMLReader) throws(FlatXMLError) {
            guard !range.isEmpty else { return }
            length &+= range.count
            guard length <= FlatXML.maximumValueLength else { throw .valueTooLong(limit: FlatXML.maximumValueLength) }
            if !assembling, single == nil {
                single = range
                return
            }
            if !assembling {
                reader.startAssembling(from: single)
                assembling = true
            }
            reader.scratch.append(contentsOf: UnsafeBufferPointer(start: reader.base + range.lowerBound, count: range.count))
        }

        func appendScalar(_ scalar: UInt32, to reader: inout FlatXMLReader) throws(FlatXMLError) {
            if !assembling {
                reader.startAssembling(from: single)
                assembling = true
            }
            let before = reader.scratch.count
            reader.appendUTF8(scalar)
            length &+= reader.scratch.count &- before
            guard length <= FlatXML.maximumValueLength else { throw .valueTooLong(limit: FlatXML.maximumValueLength) }
        }

        while true {
            // A text run: up to markup, a reference or a carriage return. The scan stops once the
            // value is over the cap, so a 20 MB text node costs no more than a 64 KB one.
            let limit = min(end, position &+ (FlatXML.maximumValueLength &- length) &+ 1)
            var index = scanText(from: position, limit: limit)
            while index < limit && base[index] == ascii("]") {
                if byte(at: index &+ 1) == ascii("]") && byte(at: index &+ 2) == ascii(">") {
                    throw malformed(at: index)  // "]]>" may not appear in text
                }
                index = scanText(from: index &+ 1, limit: limit)
            }
            try append(position..<index, to: &self)
            guard index < end else { throw malformed(at: index) }
            guard index < limit else { throw .valueTooLong(limit: FlatXML.maximumValueLength) }
            switch base[index] {
            case ascii("\r"):
                try appendScalar(0x0A, to: &self)
                position = byte(at: index &+ 1) == ascii("\n") ? index &+ 2 : index &+ 1
            case ascii("&"):
                let (scalar, next) = try readReference(at: index)
                try appendScalar(scalar, to: &self)
                position = next
            default:  // "<"
                switch byte(at: index &+ 1) {
                case ascii("/"):
                    position = index
                    try readEndTag(matching: tag)
                    if assembling { return String(decoding: scratch, as: UTF8.self) }
                    guard let single else { return "" }
                    return String(decoding: UnsafeBufferPointer(start: base + single.lowerBound, count: single.count), as: UTF8.self)
                case ascii("!"):
                    guard matches("<![CDATA[", at: index) else { throw declarationError(at: index) }
                    let (content, hasCarriageReturn) = try cdataContent(at: index, limit: FlatXML.maximumValueLength &- length)
                    if hasCarriageReturn {
                        // Carriage returns inside CDATA are normalised too: line-end handling
                        // happens before parsing in XML, so it applies to every section alike.
                        var runStart = content.lowerBound
                        var cursor = content.lowerBound
                        while cursor < content.upperBound {
                            if base[cursor] == ascii("\r") {
                                try append(runStart..<cursor, to: &self)
                                try appendScalar(0x0A, to: &self)
                                cursor &+= byte(at: cursor &+ 1) == ascii("\n") ? 2 : 1
                                runStart = cursor
                            } else {
                                cursor &+= 1
                            }
                        }
                        try append(runStart..<content.upperBound, to: &self)
                    } else {
                        try append(content, to: &self)
                    }
                    position = content.upperBound &+ 3
                case ascii("?"):
                    throw .processingInstruction
                default:
                    guard isNameStart(byte(at: index &+ 1)) else { throw malformed(at: index &+ 1) }
                    throw .tooDeep
                }
            }
        }
    }

    private mutating func startAssembling(from single: Range<Int>?) {
        scratch.removeAll(keepingCapacity: true)
        if let single {
            scratch.append(contentsOf: UnsafeBufferPointer(start: base + single.lowerBound, count: single.count))
        }
    }

    private mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case 0..<0x80:
            scratch.append(UInt8(truncatingIfNeeded: scalar))
        case 0x80..<0x800:
            scratch.append(0xC0 | UInt8(truncatingIfNeeded: scalar >> 6))
            scratch.append(0x80 | UInt8(truncatingIfNeeded: scalar & 0x3F))
        case 0x800..<0x10000:
            scratch.append(0xE0 | UInt8(truncatingIfNeeded: scalar >> 12))
            scratch.append(0x80 | UInt8(truncatingIfNeeded: (scalar >> 6) & 0x3F))
            scratch.append(0x80 | UInt8(truncatingIfNeeded: scalar & 0x3F))
        default:
            scratch.append(0xF0 | UInt8(truncatingIfNeeded: scalar >> 18))
            scratch.append(0x80 | UInt8(truncatingIfNeeded: (scalar >> 12) & 0x3F))
            scratch.append(0x80 | UInt8(truncatingIfNeeded: (scalar >> 6) & 0x3F))
            scratch.append(0x80 | UInt8(truncatingIfNeeded: scalar & 0x3F))
        }
    }

    /// The content range of the CDATA section starting at `start` (which holds `<![CDATA[`), and
    /// whether it holds a carriage return. Content longer than `limit` bytes is refused as soon
    /// as that is certain.
    private func cdataContent(at start: Int, limit: Int) throws(FlatXMLError) -> (Range<Int>, Bool) {
        let contentStart = start &+ 9
        // The terminator must start within limit + 1 bytes of the content; 2 more hold "]>".
        let scanLimit = min(end, contentStart &+ limit &+ 3)
        var hasCarriageReturn = false
        var index = scanCDATA(from: contentStart, limit: scanLimit)
        while index < scanLimit {
            if base[index] == ascii("\r") {
                hasCarriageReturn = true
            } else if byte(at: index &+ 1) == ascii("]") && byte(at: index &+ 2) == ascii(">") {
                return (contentStart..<index, hasCarriageReturn)
            }
            index = scanCDATA(from: index &+ 1, limit: scanLimit)
        }
        if scanLimit < end { throw .valueTooLong(limit: FlatXML.maximumValueLength) }
        throw malformed(at: end)  // unterminated
    }

    // MARK: - Scanning eight bytes at a time

    /// The first index in `start..<limit` holding `<`, `&`, `]` or a carriage return, or `limit`.
    @inline(__always)
    private func scanText(from start: Int, limit: Int) -> Int {
        var index = start
        while index &+ 8 <= limit {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
            let found = zeroBytes(word ^ 0x3C3C_3C3C_3C3C_3C3C) | zeroBytes(word ^ 0x2626_2626_2626_2626)
                | zeroBytes(word ^ 0x5D5D_5D5D_5D5D_5D5D) | zeroBytes(word ^ 0x0D0D_0D0D_0D0D_0D0D)
            if found != 0 { return index &+ found.trailingZeroBitCount &>> 3 }
            index &+= 8
        }
        while index < limit {
            let current = base[index]
            if current == ascii("<") || current == ascii("&") || current == ascii("]") || current == ascii("\r") { return index }
            index &+= 1
        }
        return limit
    }

    /// The first index in `start..<limit` holding `]` or a carriage return, or `limit`.
    @inline(__always)
    private func scanCDATA(from start: Int, limit: Int) -> Int {
        var index = start
        while index &+ 8 <= limit {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
            let found = zeroBytes(word ^ 0x5D5D_5D5D_5D5D_5D5D) | zeroBytes(word ^ 0x0D0D_0D0D_0D0D_0D0D)
            if found != 0 { return index &+ found.trailingZeroBitCount &>> 3 }
            index &+= 8
        }
        while index < limit {
            let current = base[index]
            if current == ascii("]") || current == ascii("\r") { return index }
            index &+= 1
        }
        return limit
    }

    /// The high bit of each zero byte of `word` set ("haszero" of Bit Twiddling Hacks). Bytes above
    /// a zero byte may be flagged too, through the borrow, but the lowest flag is always a true
    /// zero byte, and the lowest is all the scans above use (little-endian: the first in memory).
    @inline(__always)
    private func zeroBytes(_ word: UInt64) -> UInt64 {
        (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080
    }

    private mutating func readEpilog() throws(FlatXMLError) {
        skipWhitespace()
        guard position < end else { return }
        guard base[position] == ascii("<") else { throw malformed(at: position) }
        try refuseMarkupOutsideElements()
        throw malformed(at: position)  // a second element, or a CDATA section, after the root
    }

    // MARK: - Tags

    /// A start tag: the name's range and whether it was `<name/>`.
    struct Tag {
        var name: Range<Int>
        var isEmpty: Bool

        func nameEquals(_ other: String, in base: UnsafePointer<UInt8>) -> Bool {
            var other = other
            return other.withUTF8 { bytes in
                bytes.count == name.count && (bytes.isEmpty || memcmpEqual(base + name.lowerBound, bytes.baseAddress!, bytes.count))
            }
        }
    }

    /// `'<' Name S? ('>' | '/>')` at `start`. A space followed by anything but the tag's end is an
    /// attribute; a colon in the name is a namespace prefix. Both are refused as such.
    private mutating func readStartTag(at start: Int) throws(FlatXMLError) -> Tag {
        let nameStart = start &+ 1
        let (nameEnd, hasColon) = try scanName(at: nameStart)
        guard nameEnd > nameStart else { throw malformed(at: nameStart) }
        if hasColon { throw .attributes }
        position = nameEnd
        let sawSpace = skipWhitespace()
        let current = byte(at: position)
        if current == ascii(">") {
            position &+= 1
            return Tag(name: nameStart..<nameEnd, isEmpty: false)
        }
        if current == ascii("/") && byte(at: position &+ 1) == ascii(">") {
            position &+= 2
            return Tag(name: nameStart..<nameEnd, isEmpty: true)
        }
        if sawSpace && isNameStart(current) { throw .attributes }
        throw malformed(at: position)
    }

    /// `'</' Name S? '>'` at `position`, which must name `tag`.
    private mutating func readEndTag(matching tag: Tag) throws(FlatXMLError) {
        let nameStart = position &+ 2
        let nameEnd = nameStart &+ tag.name.count
        guard nameEnd <= end,
              memcmpEqual(base + nameStart, base + tag.name.lowerBound, tag.name.count),
              !isNameCharacterStart(byte(at: nameEnd))
        else { throw malformed(at: nameStart) }
        position = nameEnd
        skipWhitespace()
        guard byte(at: position) == ascii(">") else { throw malformed(at: position) }
        position &+= 1
    }

    // MARK: - References

    /// `'&' Name ';'` for the five predefined entities, `'&#' [0-9]+ ';'` or `'&#x' [0-9a-fA-F]+ ';'`.
    /// Returns the character and the index after the `;`.
    private func readReference(at start: Int) throws(FlatXMLError) -> (UInt32, Int) {
        if byte(at: start &+ 1) == ascii("#") {
            var index = start &+ 2
            let hexadecimal = byte(at: index) == ascii("x")
            if hexadecimal { index &+= 1 }
            let digitsStart = index
            var value: UInt32 = 0
            while index < end {
                let current = base[index]
                let digit: UInt32
                if isDigit(current) {
                    digit = UInt32(current &- ascii("0"))
                } else if hexadecimal && (current | 0x20) >= ascii("a") && (current | 0x20) <= ascii("f") {
                    digit = UInt32((current | 0x20) &- ascii("a")) &+ 10
                } else {
                    break
                }
                // Saturate past the Unicode range instead of overflowing: the value is refused anyway.
                value = min(value &* (hexadecimal ? 16 : 10) &+ digit, 0x11_0000)
                index &+= 1
            }
            guard index > digitsStart, byte(at: index) == ascii(";") else { throw malformed(at: index) }
            guard isXMLCharacter(value) else { throw .invalidCharacter }
            return (value, index &+ 1)
        }
        let nameStart = start &+ 1
        let (nameEnd, _) = try scanName(at: nameStart)
        guard nameEnd > nameStart, byte(at: nameEnd) == ascii(";") else { throw malformed(at: nameEnd) }
        let scalar: UInt32
        switch nameEnd &- nameStart {
        case 2 where matches("lt", at: nameStart): scalar = 0x3C
        case 2 where matches("gt", at: nameStart): scalar = 0x3E
        case 3 where matches("amp", at: nameStart): scalar = 0x26
        case 4 where matches("apos", at: nameStart): scalar = 0x27
        case 4 where matches("quot", at: nameStart): scalar = 0x22
        default: throw .entity  // no DTD, so every other entity is undeclared
        }
        return (scalar, nameEnd &+ 1)
    }

    private func isXMLCharacter(_ value: UInt32) -> Bool {
        switch value {
        case 0x09, 0x0A, 0x0D, 0x20...0xD7FF, 0xE000...0xFFFD, 0x1_0000...0x10_FFFF: true
        default: false
        }
    }

    // MARK: - Names

    /// Scans an XML 1.0 (fifth edition) `Name` at `start`; returns where it ends (== `start` when
    /// there is none) and whether it holds a colon.
    private func scanName(at start: Int) throws(FlatXMLError) -> (Int, Bool) {
        guard start < end else { return (start, false) }
        // Digits, '-' and '.' may continue a name but not start one.
        let first = base[start]
        if first < 0x80 && (!isASCIINameCharacter(first) || isDigit(first) || first == ascii("-") || first == ascii(".")) {
            return (start, false)
        }
        var index = start
        var colons = 0
        while index < end {
            let current = base[index]
            if current < 0x80 {
                if !isASCIINameCharacter(current) { break }
                colons &+= current == ascii(":") ? 1 : 0
                index &+= 1
            } else {
                let (scalar, length) = decodeScalar(at: index)
                guard index == start ? Self.isNameStartScalar(scalar) : Self.isNameScalar(scalar) else {
                    // Non-ASCII that cannot continue a name: a name must be followed by ASCII markup.
                    throw malformed(at: index)
                }
                index &+= length
            }
        }
        return (index, colons > 0)
    }

    /// Decodes one scalar from bytes the screen has validated.
    private func decodeScalar(at index: Int) -> (UInt32, Int) {
        let lead = UInt32(base[index])
        if lead < 0xE0 {
            return (((lead & 0x1F) << 6) | (UInt32(base[index &+ 1]) & 0x3F), 2)
        }
        if lead < 0xF0 {
            return (((lead & 0x0F) << 12) | ((UInt32(base[index &+ 1]) & 0x3F) << 6) | (UInt32(base[index &+ 2]) & 0x3F), 3)
        }
        return (((lead & 0x07) << 18) | ((UInt32(base[index &+ 1]) & 0x3F) << 12)
                    | ((UInt32(base[index &+ 2]) & 0x3F) << 6) | (UInt32(base[index &+ 3]) & 0x3F), 4)
    }

    static func isNameStartScalar(_ scalar: UInt32) -> Bool {
        switch scalar {
        case 0xC0...0xD6, 0xD8...0xF6, 0xF8...0x2FF, 0x370...0x37D, 0x37F...0x1FFF, 0x200C...0x200D,
             0x2070...0x218F, 0x2C00...0x2FEF, 0x3001...0xD7FF, 0xF900...0xFDCF, 0xFDF0...0xFFFD,
             0x1_0000...0xE_FFFF:
            true
        default:
            false
        }
    }

    static func isNameScalar(_ scalar: UInt32) -> Bool {
        isNameStartScalar(scalar) || scalar == 0xB7 || (0x300...0x36F).contains(scalar) || (0x203F...0x2040).contains(scalar)
    }

    /// Whether `byte` could start a name (ASCII test; any non-ASCII lead byte counts, the name
    /// scanner judges it properly).
    private func isNameStart(_ byte: UInt8) -> Bool {
        isASCIILetter(byte) || byte == ascii("_") || byte == ascii(":") || byte >= 0x80
    }

    /// Whether `byte` could continue a name: an end tag's name must stop where the start tag's did.
    private func isNameCharacterStart(_ byte: UInt8) -> Bool {
        isNameStart(byte) || isDigit(byte) || byte == ascii("-") || byte == ascii(".")
    }

    // MARK: - Bytes

    /// The byte at `index`, or 0 past the end: the screen refused NUL, so 0 means "no more input".
    @inline(__always)
    private func byte(at index: Int) -> UInt8 { index < end ? base[index] : 0 }

    @inline(__always)
    private func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x09 || byte == 0x0D
    }

    @discardableResult
    private mutating func skipWhitespace() -> Bool {
        let start = position
        while position < end && isWhitespace(base[position]) { position &+= 1 }
        return position > start
    }

    private func matches(_ literal: StaticString, at index: Int) -> Bool {
        let count = literal.utf8CodeUnitCount
        return index &+ count <= end && memcmpEqual(base + index, literal.utf8Start, count)
    }

    private func matches(_ a: UInt8, _ b: UInt8, _ c: UInt8, at index: Int) -> Bool {
        index &+ 3 <= end && base[index] == a && base[index &+ 1] == b && base[index &+ 2] == c
    }

    /// A malformed-document error with a 1-based line and byte column, computed only on failure.
    private func malformed(at index: Int) -> FlatXMLError {
        let stop = min(index, end)
        var line = 1
        var lineStart = 0
        var cursor = 0
        while cursor < stop {
            if base[cursor] == ascii("\n") {
                line &+= 1
                lineStart = cursor &+ 1
            }
            cursor &+= 1
        }
        return .malformed(line: line, column: stop &- lineStart &+ 1)
    }
}

@inline(__always)
private func ascii(_ scalar: Unicode.Scalar) -> UInt8 { UInt8(ascii: scalar) }

@inline(__always)
private func isASCIILetter(_ byte: UInt8) -> Bool { (byte | 0x20) &- ascii("a") < 26 }

@inline(__always)
private func isDigit(_ byte: UInt8) -> Bool { byte &- ascii("0") < 10 }

/// Classes of the bytes below 0x80 for names: `n` a name character (`[A-Za-z0-9_.-]`), `c` the
/// colon, `.` neither. One load per byte, where range tests cost a dozen instructions.
private let asciiNameClasses: StaticString =
    ".............................................nn.nnnnnnnnnnc......nnnnnnnnnnnnnnnnnnnnnnnnnn....n.nnnnnnnnnnnnnnnnnnnnnnnnnn....."

/// `[A-Za-z0-9_:.-]`, the ASCII part of XML's NameChar. `byte` must be below 0x80.
@inline(__always)
private func isASCIINameCharacter(_ byte: UInt8) -> Bool {
    asciiNameClasses.utf8Start[Int(byte)] != UInt8(ascii: ".")
}

/// Byte equality, eight bytes at a time (names and tags are short; memcmp costs a call).
@inline(__always)
func memcmpEqual(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ count: Int) -> Bool {
    var index = 0
    while index &+ 8 <= count {
        let left = UnsafeRawPointer(a + index).loadUnaligned(as: UInt64.self)
        let right = UnsafeRawPointer(b + index).loadUnaligned(as: UInt64.self)
        if left != right { return false }
        index &+= 8
    }
    while index < count {
        if a[index] != b[index] { return false }
        index &+= 1
    }
    return true
}
