// SPDX-License-Identifier: Apache-2.0

/// Builds the bytes WeChat signs: `stringA` (the non-empty fields but `sign`, sorted by name as
/// bytes, joined as `name=value&…`) and, with a key, `stringSignTemp` (`stringA&key=KEY`).
///
/// Signing a unifiedorder has to take well under a microsecond beside the hash, so this avoids
/// every heap allocation: the sort entries and the message live in temporary (stack) buffers,
/// names are ordered by their first sixteen bytes as two integers (a full byte comparison only
/// breaks ties beyond that), and bytes are copied straight out of the strings' storage.
enum SigningMessage {
    private struct Entry {
        /// The name's first sixteen bytes as two big-endian integers, zero-padded: integer order
        /// is byte order, and WeChat's names that share eight bytes (`coupon_fee_0`,
        /// `coupon_fee_1`, `coupon_id_0`) still differ within sixteen.
        var prefix: UInt64
        var suffix: UInt64
        var index: Int
    }

    /// The prefix of "sign", to skip that field without comparing strings.
    private static let signPrefix: UInt64 = 0x7369_676E_0000_0000

    /// Calls `body` with the message for `fields`; with `key`, the key is appended as
    /// `&key=KEY` (or `key=KEY` when no field is signed).
    static func withBytes<R>(of fields: Fields, key: APIKey?, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        fields.elements.withUnsafeBufferPointer { elements in
            withScratchBuffer(of: Entry.self, capacity: max(elements.count, 1)) { entries in
                var used = 0
                var length = 0
                // Fields are read in place (elements[index].name), never copied out: a copy would
                // retain and release both strings, which costs more than the rest of the loop.
                for index in elements.indices {
                    let valueCount = elements[index].value.utf8.count
                    guard valueCount > 0 else { continue }
                    let (prefix, suffix, nameCount) = withUTF8(elements[index].name) { name in
                        (sortKey(name, from: 0), sortKey(name, from: 8), name.count)
                    }
                    if prefix == signPrefix && nameCount == 4 { continue }
                    entries[used] = Entry(prefix: prefix, suffix: suffix, index: index)
                    used &+= 1
                    length &+= nameCount &+ valueCount &+ 2  // "=" and "&"
                }
                sort(entries, count: used, elements: elements)
                if used > 0 { length &-= 1 }  // no "&" after the last pair
                var keyCount = 0
                if let key {
                    keyCount = key.withUnsafeBytes { $0.count }
                    length &+= (used > 0 ? 5 : 4) &+ keyCount
                }
                return withScratchBuffer(of: UInt8.self, capacity: max(length, 1)) { bytes in
                    let message = UnsafeMutableRawBufferPointer(bytes)
                    var out = message.baseAddress!
                    for position in 0..<used {
                        let index = entries[position].index
                        if position > 0 {
                            out.storeBytes(of: UInt8(ascii: "&"), as: UInt8.self)
                            out += 1
                        }
                        out = append(elements[index].name, at: out)
                        out.storeBytes(of: UInt8(ascii: "="), as: UInt8.self)
                        out += 1
                        out = append(elements[index].value, at: out)
                    }
                    if let key {
                        let label: StaticString = used > 0 ? "&key=" : "key="
                        out.copyMemory(from: label.utf8Start, byteCount: label.utf8CodeUnitCount)
                        out += label.utf8CodeUnitCount
                        key.withUnsafeBytes { bytes in
                            if let base = bytes.baseAddress { out.copyMemory(from: base, byteCount: bytes.count) }
                        }
                        out += keyCount
                    }
                    let written = out - message.baseAddress!
                    precondition(written == length, "signing message length miscounted")
                    let result = body(UnsafeRawBufferPointer(start: message.baseAddress, count: written))
                    // The message ends with the key; leave no copy of it behind.
                    message.initializeMemory(as: UInt8.self, repeating: 0)
                    return result
                }
            }
        }
    }

    /// Insertion sort: a WeChat document has a few dozen fields, often nearly sorted already.
    private static func sort(_ entries: UnsafeMutableBufferPointer<Entry>, count: Int,
                             elements: UnsafeBufferPointer<Fields.Field>) {
        guard count > 1 else { return }
        for next in 1..<count {
            let entry = entries[next]
            var position = next
            while position > 0 && precedes(entry, entries[position &- 1], elements) {
                entries[position] = entries[position &- 1]
                position &-= 1
            }
            entries[position] = entry
        }
    }

    @inline(__always)
    private static func precedes(_ a: Entry, _ b: Entry, _ elements: UnsafeBufferPointer<Fields.Field>) -> Bool {
        if a.prefix != b.prefix { return a.prefix < b.prefix }
        if a.suffix != b.suffix { return a.suffix < b.suffix }
        return withUTF8(elements[a.index].name) { left in
            withUTF8(elements[b.index].name) { right in
                left.lexicographicallyPrecedes(right)
            }
        }
    }

    /// Bytes `offset..<offset + 8` of `name` as a big-endian integer, zero-padded.
    @inline(__always)
    private static func sortKey(_ name: UnsafeBufferPointer<UInt8>, from offset: Int) -> UInt64 {
        if name.count >= offset &+ 8 {
            return UInt64(bigEndian: UnsafeRawPointer(name.baseAddress! + offset).loadUnaligned(as: UInt64.self))
        }
        var key: UInt64 = 0
        var shift: UInt64 = 56
        var index = offset
        while index < name.count {
            key |= UInt64(name[index]) << shift
            shift &-= 8
            index &+= 1
        }
        return key
    }

    @inline(__always)
    private static func append(_ string: String, at out: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer {
        withUTF8(string) { bytes in
            guard let base = bytes.baseAddress else { return out }
            copy(UnsafeRawPointer(base), to: out, count: bytes.count)
            return out + bytes.count
        }
    }

    /// memmove costs a call and a size dispatch; names and most values are under 16 bytes.
    ///
    /// A small string (up to 15 bytes) reaches here as a 16-byte copy that the standard library
    /// has just written to the stack as two 8-byte words. A load that straddles those two words
    /// cannot be forwarded from the pending stores and waits for them (it showed as the hottest
    /// instructions of signing), so every load below stays within one aligned 8-byte word of
    /// the source, and none reads past `count`.
    @inline(__always)
    private static func copy(_ source: UnsafeRawPointer, to destination: UnsafeMutableRawPointer, count: Int) {
        if count > 16 {
            destination.copyMemory(from: source, byteCount: count)
            return
        }
        var offset = 0
        if count >= 8 {
            destination.storeBytes(of: source.loadUnaligned(as: UInt64.self), as: UInt64.self)
            offset = 8
        }
        copyWithinWord(source + offset, to: destination + offset, count: count &- offset)
    }

    /// Copies 0...8 bytes whose source lies within one 8-byte word (see `copy`).
    @inline(__always)
    private static func copyWithinWord(_ source: UnsafeRawPointer, to destination: UnsafeMutableRawPointer, count: Int) {
        switch count {
        case 8:
            destination.storeBytes(of: source.loadUnaligned(as: UInt64.self), as: UInt64.self)
        case 4..<8:
            let head = source.loadUnaligned(as: UInt32.self)
            let tail = source.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self)
            destination.storeBytes(of: head, as: UInt32.self)
            destination.storeBytes(of: tail, toByteOffset: count &- 4, as: UInt32.self)
        default:
            var offset = 0
            while offset < count {
                destination.storeBytes(of: source.load(fromByteOffset: offset, as: UInt8.self), toByteOffset: offset, as: UInt8.self)
                offset &+= 1
            }
        }
    }

    /// The string's UTF-8 in place when it is stored contiguously (always, for native strings).
    @inline(__always)
    static func withUTF8<R>(_ string: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let result = string.utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = string
        return copy.withUTF8(body)
    }
}
