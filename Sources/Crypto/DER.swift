// SPDX-License-Identifier: Apache-2.0
internal import COpenSSL

/// DER elements read with OpenSSL's `ASN1_get_object`, within a buffer: definite lengths only,
/// universal tags only, every element inside the range it was looked for in. It walks; it does not
/// recurse: the caller decides which element to read next, so hostile nesting costs nothing.
///
/// ```swift
/// let reader = DERReader(buffer)
/// let set = try reader.element(in: 0..<buffer.count)
/// for child in try reader.children(in: set.content) { … }
/// ```
public struct DERReader {
    public struct Element: Sendable {
        /// The universal tag number (``DER/Tag``).
        public var tag: Int32
        public var constructed: Bool
        /// Where the element's content is, in the reader's buffer.
        public var content: Range<Int>
        /// Where the element's header starts.
        public var start: Int
        /// Where the element ends (its content's end).
        public var end: Int { content.upperBound }
    }

    public let buffer: UnsafeRawBufferPointer

    public init(_ buffer: UnsafeRawBufferPointer) {
        self.buffer = buffer
    }

    /// The element starting at `range.lowerBound`, which must lie within `range`.
    public func element(in range: Range<Int>) throws(DERError) -> Element {
        guard let base = buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), range.lowerBound < range.upperBound,
              range.upperBound <= buffer.count
        else { throw DERError("a truncated ASN.1 element") }
        var pointer: UnsafePointer<UInt8>? = UnsafePointer(base + range.lowerBound)
        var length = 0
        var tag: Int32 = 0
        var tagClass: Int32 = 0
        let flags = ASN1_get_object(&pointer, &length, &tag, &tagClass, range.count)
        // 0x80: an error (too long, bad header); bit 0: indefinite length, which DER never uses.
        guard flags & 0x80 == 0, flags & 0x01 == 0, let pointer, tagClass == V_ASN1_UNIVERSAL else {
            ERR_clear_error()
            throw DERError("an ASN.1 element that is not DER")
        }
        let start = pointer - UnsafePointer(base)
        guard length >= 0, start + length <= range.upperBound else { throw DERError("an ASN.1 length past its end") }
        return Element(tag: tag, constructed: flags & V_ASN1_CONSTRUCTED != 0, content: start..<(start + length),
                       start: range.lowerBound)
    }

    /// The children of a constructed element's content, in order.
    public func children(in range: Range<Int>) throws(DERError) -> [Element] {
        var children: [Element] = []
        var offset = range.lowerBound
        while offset < range.upperBound {
            let child = try element(in: offset..<range.upperBound)
            children.append(child)
            offset = child.end
        }
        return children
    }

    /// An INTEGER element's value, decoded by OpenSSL.
    public func integer(_ element: Element) throws(DERError) -> Int64 {
        guard element.tag == DER.Tag.integer, !element.constructed,
              let base = buffer.baseAddress?.assumingMemoryBound(to: UInt8.self)
        else { throw DERError("an INTEGER was expected") }
        var pointer: UnsafePointer<UInt8>? = UnsafePointer(base + element.start)
        guard let integer = d2i_ASN1_INTEGER(nil, &pointer, element.end - element.start) else {
            ERR_clear_error()
            throw DERError("an INTEGER that does not decode")
        }
        defer { ASN1_INTEGER_free(integer) }
        var value: Int64 = 0
        guard ASN1_INTEGER_get_int64(&value, integer) == 1 else {
            ERR_clear_error()
            throw DERError("an INTEGER out of range")
        }
        return value
    }

    /// The bytes of an element's content.
    public func bytes(_ element: Element) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: buffer[element.content])
    }
}

/// The few DER encodings a payload of attributes needs (definite lengths, SET OF sorted as DER wants).
public enum DER {
    /// Universal tag numbers, as ``DERReader/Element/tag`` reports them.
    public enum Tag {
        public static let integer: Int32 = 2
        public static let octetString: Int32 = 4
        public static let utf8String: Int32 = 12
        public static let sequence: Int32 = 16
        public static let set: Int32 = 17
        public static let ia5String: Int32 = 22
    }

    /// A universal element: `identifier` is the whole identifier octet (0x30 for a SEQUENCE).
    public static func element(_ identifier: UInt8, _ content: [UInt8]) -> [UInt8] {
        var bytes = [identifier]
        if content.count < 0x80 {
            bytes.append(UInt8(content.count))
        } else {
            var length = content.count
            var digits: [UInt8] = []
            while length > 0 {
                digits.insert(UInt8(length & 0xFF), at: 0)
                length >>= 8
            }
            bytes.append(0x80 | UInt8(digits.count))
            bytes += digits
        }
        return bytes + content
    }

    public static func integer(_ value: Int64) -> [UInt8] {
        var bytes = withUnsafeBytes(of: value.bigEndian) { Array($0) }
        // The shortest two's complement form.
        while bytes.count > 1 && ((bytes[0] == 0 && bytes[1] & 0x80 == 0) || (bytes[0] == 0xFF && bytes[1] & 0x80 != 0)) {
            bytes.removeFirst()
        }
        return element(0x02, bytes)
    }

    public static func octetString(_ content: [UInt8]) -> [UInt8] { element(0x04, content) }
    public static func utf8String(_ text: String) -> [UInt8] { element(0x0C, Array(text.utf8)) }
    public static func ia5String(_ text: String) -> [UInt8] { element(0x16, Array(text.utf8)) }
    public static func sequence(_ elements: [[UInt8]]) -> [UInt8] { element(0x30, elements.flatMap { $0 }) }
    public static func set(_ elements: [[UInt8]]) -> [UInt8] {
        element(0x31, elements.sorted { $0.lexicographicallyPrecedes($1) }.flatMap { $0 })
    }
}
