// SPDX-License-Identifier: Apache-2.0

/// The one Base64 codec, strict: unpadded base64url (RFC 4648 §5) for JWS segments (RFC 7515 §2),
/// app tokens, order cursors and password hashes; padded standard base64 for x5c certificates
/// (RFC 7515 §4.1.6) and receipts. Strict means canonical: no whitespace, no padding where none
/// belongs (and all of it where it does), and zero bits in the unused low bits of the last
/// character, so each byte string has exactly one accepted text — an attacker cannot make two
/// different tokens carry the same bytes, and a cache keyed on bytes means the same as one keyed
/// on text.
public enum Base64 {
    /// The alphabet a text is written in.
    public enum Alphabet: Sendable {
        /// `A–Z a–z 0–9 - _`, no padding: JWS segments, app tokens.
        case urlUnpadded
        /// `A–Z a–z 0–9 + /` with `=` padding: x5c certificates, receipts.
        case standardPadded
    }

    /// Decodes `text`, or returns nil if it is not the canonical encoding of some bytes.
    public static func decode(_ text: some Collection<UInt8>, _ alphabet: Alphabet) -> [UInt8]? {
        if let result = text.withContiguousStorageIfAvailable({ decode(UnsafeRawBufferPointer($0), alphabet) }) {
            return result
        }
        return Array(text).withUnsafeBytes { decode($0, alphabet) }
    }

    public static func decode(_ text: String, _ alphabet: Alphabet) -> [UInt8]? {
        var text = text
        return text.withUTF8 { decode(UnsafeRawBufferPointer($0), alphabet) }
    }

    public static func decode(_ text: UnsafeRawBufferPointer, _ alphabet: Alphabet) -> [UInt8]? {
        var count = text.count
        switch alphabet {
        case .urlUnpadded:
            if count % 4 == 1 { return nil }
        case .standardPadded:
            guard count % 4 == 0 else { return nil }
            if count > 0 && text[count - 1] == UInt8(ascii: "=") { count -= 1 }
            if count > 0 && text[count - 1] == UInt8(ascii: "=") { count -= 1 }
        }
        let table = alphabet == .urlUnpadded ? urlTable : standardTable
        let outputCount = count / 4 * 3 + (count % 4 == 0 ? 0 : count % 4 - 1)
        var output = [UInt8](repeating: 0, count: outputCount)
        let ok = output.withUnsafeMutableBufferPointer { out -> Bool in
            var written = 0
            var index = 0
            let whole = count - count % 4
            while index < whole {
                let a = table[Int(text[index])], b = table[Int(text[index + 1])]
                let c = table[Int(text[index + 2])], d = table[Int(text[index + 3])]
                guard (a | b | c | d) & 0x80 == 0 else { return false }
                out[written] = a << 2 | b >> 4
                out[written + 1] = b << 4 | c >> 2
                out[written + 2] = c << 6 | d
                written += 3
                index += 4
            }
            switch count - whole {
            case 0: return true
            case 2:
                let a = table[Int(text[index])], b = table[Int(text[index + 1])]
                guard (a | b) & 0x80 == 0, b & 0x0F == 0 else { return false }
                out[written] = a << 2 | b >> 4
                return true
            case 3:
                let a = table[Int(text[index])], b = table[Int(text[index + 1])], c = table[Int(text[index + 2])]
                guard (a | b | c) & 0x80 == 0, c & 0x03 == 0 else { return false }
                out[written] = a << 2 | b >> 4
                out[written + 1] = b << 4 | c >> 2
                return true
            default: return false
            }
        }
        return ok ? output : nil
    }

    /// Encodes `bytes` in `alphabet`.
    public static func encode(_ bytes: some Collection<UInt8>, _ alphabet: Alphabet) -> String {
        let characters = Array((alphabet == .urlUnpadded
            ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
            : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/").utf8)
        let input = Array(bytes)
        var output: [UInt8] = []
        output.reserveCapacity((input.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= input.count {
            let value = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            output.append(characters[Int(value >> 18 & 63)])
            output.append(characters[Int(value >> 12 & 63)])
            output.append(characters[Int(value >> 6 & 63)])
            output.append(characters[Int(value & 63)])
            index += 3
        }
        let rest = input.count - index
        if rest > 0 {
            let value = UInt32(input[index]) << 16 | (rest == 2 ? UInt32(input[index + 1]) << 8 : 0)
            output.append(characters[Int(value >> 18 & 63)])
            output.append(characters[Int(value >> 12 & 63)])
            if rest == 2 { output.append(characters[Int(value >> 6 & 63)]) }
            if alphabet == .standardPadded { output.append(contentsOf: rest == 2 ? [61] : [61, 61]) }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Six-bit values by byte; 0xFF marks bytes outside the alphabet.
    private static let urlTable: [UInt8] = table("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    private static let standardTable: [UInt8] = table("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")

    private static func table(_ alphabet: String) -> [UInt8] {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, byte) in alphabet.utf8.enumerated() { table[Int(byte)] = UInt8(value) }
        return table
    }
}
