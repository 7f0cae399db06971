// SPDX-License-Identifier: Apache-2.0

extension FlatXML {
    /// Checks the whole body before any parsing: NUL bytes, UTF-8 validity (Unicode table 3-7: no
    /// overlong forms, no surrogates, nothing above U+10FFFF, no truncated sequence) and the XML 1.0
    /// `Char` production (no C0 control but tab, newline and carriage return; no U+FFFE, U+FFFF).
    ///
    /// After this, the parser may treat every byte below 0x80 as the ASCII character it is and
    /// never splits a multi-byte sequence, because it only cuts the text at ASCII delimiters.
    /// Runs eight ASCII bytes at a time: a notify is mostly ASCII, and this runs on every body.
    static func screen(_ base: UnsafePointer<UInt8>, count: Int) -> FlatXMLError? {
        var carriageReturn = false
        return screen(base, count: count, carriageReturn: &carriageReturn)
    }

    /// `screen`, also telling whether the body holds a carriage return anywhere: the parser's
    /// CDATA line-end normalisation can skip looking for one when it does not.
    static func screen(_ base: UnsafePointer<UInt8>, count: Int, carriageReturn: inout Bool) -> FlatXMLError? {
        var i = 0
        while i < count {
            if i &+ 8 <= count {
                let word = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
                // Any byte >= 0x80, or any byte < 0x20 ("hasless(x, 0x20)" of Bit Twiddling Hacks:
                // exact about whether such a byte exists, which is all that is asked here).
                let nonASCII = word & 0x8080_8080_8080_8080
                let control = (word &- 0x2020_2020_2020_2020) & ~word & 0x8080_8080_8080_8080
                if nonASCII | control == 0 {
                    i &+= 8
                    continue
                }
            }
            let lead = base[i]
            if lead < 0x80 {
                if lead < 0x20 {
                    if lead == 0 { return .nulByte }
                    if lead == 0x0D {
                        carriageReturn = true
                    } else if lead != 0x09 && lead != 0x0A {
                        return .invalidCharacter
                    }
                }
                i &+= 1
                continue
            }
            switch lead {
            case 0xC2...0xDF:
                guard i &+ 1 < count, isContinuation(base[i &+ 1]) else { return .invalidUTF8 }
                i &+= 2
            case 0xE0...0xEF:
                guard i &+ 2 < count else { return .invalidUTF8 }
                let second = base[i &+ 1], third = base[i &+ 2]
                let low: UInt8 = lead == 0xE0 ? 0xA0 : 0x80  // below: overlong
                let high: UInt8 = lead == 0xED ? 0x9F : 0xBF  // above: UTF-16 surrogates
                guard second >= low, second <= high, isContinuation(third) else { return .invalidUTF8 }
                // U+FFFE and U+FFFF are not XML characters.
                if lead == 0xEF && second == 0xBF && third >= 0xBE { return .invalidCharacter }
                i &+= 3
            case 0xF0...0xF4:
                guard i &+ 3 < count else { return .invalidUTF8 }
                let second = base[i &+ 1]
                let low: UInt8 = lead == 0xF0 ? 0x90 : 0x80  // below: overlong
                let high: UInt8 = lead == 0xF4 ? 0x8F : 0xBF  // above: beyond U+10FFFF
                guard second >= low, second <= high, isContinuation(base[i &+ 2]), isContinuation(base[i &+ 3])
                else { return .invalidUTF8 }
                i &+= 4
            default:
                // 0x80...0xC1 (continuation bytes, overlong two-byte leads) and 0xF5...0xFF.
                return .invalidUTF8
            }
        }
        return nil
    }

    @inline(__always)
    private static func isContinuation(_ byte: UInt8) -> Bool { byte & 0xC0 == 0x80 }
}
