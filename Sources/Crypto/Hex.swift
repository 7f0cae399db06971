// SPDX-License-Identifier: Apache-2.0

/// Hexadecimal text of bytes: digests in signatures, fingerprints, session ids.
public enum Hex {
    @usableFromInline static let lowercaseDigits: StaticString = "0123456789abcdef"
    @usableFromInline static let uppercaseDigits: StaticString = "0123456789ABCDEF"

    /// Two digits per byte, lowercase unless `uppercase`.
    public static func encode(_ bytes: some Sequence<UInt8>, uppercase: Bool = false) -> String {
        if let text = bytes.withContiguousStorageIfAvailable({ encode(UnsafeRawBufferPointer($0), uppercase: uppercase) }) {
            return text
        }
        return Array(bytes).withUnsafeBytes { encode($0, uppercase: uppercase) }
    }

    public static func encode(_ bytes: UnsafeRawBufferPointer, uppercase: Bool = false) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            write(bytes, uppercase: uppercase, to: UnsafeMutableRawBufferPointer(out))
            return bytes.count * 2
        }
    }

    /// Writes two digits per byte of `bytes` into `out` (at least twice as long), without allocating.
    /// Inlinable: the signer writes every signature with it.
    @inlinable
    public static func write(_ bytes: UnsafeRawBufferPointer, uppercase: Bool, to out: UnsafeMutableRawBufferPointer) {
        precondition(out.count >= bytes.count * 2, "the hex buffer is too short")
        let table = uppercase ? uppercaseDigits.utf8Start : lowercaseDigits.utf8Start
        for index in 0..<bytes.count {
            let byte = bytes[index]
            out[2 &* index] = table[Int(byte >> 4)]
            out[2 &* index &+ 1] = table[Int(byte & 0x0F)]
        }
    }

    /// The bytes `text` spells (digits of either case, an even number of them), or nil.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = value(ofDigit: utf8[index]), let low = value(ofDigit: utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    /// The value of one hex digit (either case), or nil: also for percent-escapes and chunk sizes.
    public static func value(ofDigit c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
