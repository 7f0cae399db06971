// SPDX-License-Identifier: Apache-2.0

/// The strict codec for WeChat Pay v2 documents: `<xml>` (or another fixed root) holding simple
/// fields, each with text or CDATA content.
///
/// XML from outside is hostile (CVE-2018-13439 was XXE in WeChat's own SDK), so decoding refuses,
/// before parsing: bodies over the size cap, NUL bytes, invalid UTF-8 and characters XML forbids;
/// and while parsing: any DOCTYPE, references to entities other than the five predefined ones,
/// comments, processing instructions, attributes and namespaces, nesting deeper than
/// `<xml><field>`, text outside fields, values over `maximumValueLength` and duplicate field
/// names. libxml2's SAX2 parser decides (`FlatXMLParser`), with network access, DTD loading and
/// entity substitution off; a declared encoding is ignored, the bytes are UTF-8. Documents in the
/// one shape WeChat writes are read by a one-pass scanner instead, which can only accept that
/// shape or hand the document to libxml2, never refuse (Sources/CFlatXML/flat_canonical.c).
///
/// ```swift
/// let fields = try FlatXML.decode(body)
/// let bytes = try FlatXML.encode(fields)
/// ```
public enum FlatXML {
    /// Default body cap: WeChat's largest documents (notifies with coupons, refund queries with ten
    /// refunds) stay well under 16 KiB.
    public static let defaultMaximumSize = 64 * 1024

    /// The longest field value accepted, whatever `maximumSize` allows: WeChat's longest values
    /// (`detail`, `promotion_detail`, a refund notify's `req_info`) stay far below it.
    public static let maximumValueLength = 64 * 1024

    /// Parses a flat document into fields in document order.
    /// - Parameters:
    ///   - bytes: the raw body, UTF-8 (a UTF-8 byte order mark is skipped).
    ///   - root: the root element's name: `xml` for API documents, `root` for a decrypted refund `req_info`.
    ///   - maximumSize: bodies longer than this are refused before parsing.
    /// - Throws: `FlatXMLError`, naming the rule the document broke.
    public static func decode(
        _ bytes: some Collection<UInt8>, root: String = "xml", maximumSize: Int = defaultMaximumSize
    ) throws(FlatXMLError) -> Fields {
        try decode(bytes, root: root, maximumSize: maximumSize, route: .canonicalFirst)
    }

    /// Which parser reads a document. Decoding must not depend on it: the tests and the fuzz
    /// target decode every input both ways and compare.
    enum Route: Sendable {
        /// The canonical-form scanner when the document is in WeChat's canonical shape, libxml2 otherwise.
        case canonicalFirst
        /// libxml2 always.
        case libxml2
    }

    static func decode(
        _ bytes: some Collection<UInt8>, root: String = "xml", maximumSize: Int = defaultMaximumSize, route: Route
    ) throws(FlatXMLError) -> Fields {
        guard bytes.count <= maximumSize else { throw .tooLarge(limit: maximumSize) }
        let result: Result<Fields, FlatXMLError>? = bytes.withContiguousStorageIfAvailable { buffer in
            decodeContiguous(buffer, root: root, route: route)
        }
        if let result { return try result.get() }
        return try Array(bytes).withUnsafeBufferPointer { decodeContiguous($0, root: root, route: route) }.get()
    }

    private static func decodeContiguous(_ buffer: UnsafeBufferPointer<UInt8>, root: String, route: Route) -> Result<Fields, FlatXMLError> {
        screened(buffer).flatMap { document, carriageReturn in
            FlatXMLParserPool.shared.withParser { parser in
                parser.parse(document, root: root, carriageReturn: carriageReturn, route: route).map { Fields(uncheckedElements: $0) }
            }
        }
    }

    /// The fields of `bytes` when the canonical-form scanner accepts them, nil when it declines
    /// (then only libxml2 decides). For the tests that check the scanner is what reads WeChat's documents.
    static func scanCanonical(_ bytes: [UInt8], root: String = "xml") -> Fields? {
        bytes.withUnsafeBufferPointer { buffer in
            guard case .success(let (document, carriageReturn)) = screened(buffer), !carriageReturn else { return nil }
            return FlatXMLParserPool.shared.withParser { $0.scanCanonical(document, root: root) }.map { Fields(uncheckedElements: $0) }
        }
    }

    /// The document to parse, after the screen: without a UTF-8 byte order mark (a pooled, reset
    /// context does not sniff for one), and whether it holds a carriage return.
    private static func screened(_ buffer: UnsafeBufferPointer<UInt8>) -> Result<(UnsafeBufferPointer<UInt8>, Bool), FlatXMLError> {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return .failure(.empty) }
        var carriageReturn = false
        if let error = screen(base, count: buffer.count, carriageReturn: &carriageReturn) { return .failure(error) }
        let hasBOM = buffer.count >= 3 && base[0] == 0xEF && base[1] == 0xBB && base[2] == 0xBF
        let document = hasBOM ? UnsafeBufferPointer(rebasing: buffer[3...]) : buffer
        guard !document.isEmpty else { return .failure(.empty) }
        return .success((document, carriageReturn))
    }

    // MARK: - Encoding

    /// Writes `<root><name><![CDATA[value]]></name>…</root>` in field order.
    ///
    /// Every value goes in CDATA (WeChat recommends it for JSON values such as `detail`); a `]]>`
    /// inside a value is split across two CDATA sections and a carriage return leaves the section
    /// as `&#13;`, so the text round-trips exactly through any conforming parser.
    /// - Throws: when a name is not a plain XML name, or a value holds a character XML 1.0 cannot
    ///   carry (most C0 controls, U+FFFE, U+FFFF); the document would otherwise be refused by WeChat
    ///   (and by `decode`) or sign differently.
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
                var previous: (UInt8, UInt8) = (0, 0)  // to spot U+FFFE and U+FFFF: EF BF BE, EF BF BF
                for byte in field.value.utf8 {
                    if byte < 0x20 && byte != 0x09 && byte != 0x0A && byte != 0x0D {
                        throw .unencodableValue(field.name)
                    }
                    if byte >= 0xBE && byte <= 0xBF && previous == (0xEF, 0xBF) {
                        throw .unencodableValue(field.name)
                    }
                    previous = (previous.1, byte)
                    if byte == 0x0D {
                        // A parser normalises a raw carriage return to a newline (XML 1.0 §2.11),
                        // even inside CDATA; only a character reference carries it through.
                        out.append(contentsOf: "]]>&#13;<![CDATA[".utf8)
                        closing = 0
                        continue
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
