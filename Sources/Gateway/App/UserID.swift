// SPDX-License-Identifier: Apache-2.0
import JSON

/// The one rule for a user id, wherever it comes from: a client token's `user_id` on a create, an
/// app token's `sub` (which becomes the order's `user_id`), an iOS order's `user_id`.
///
/// 1–64 bytes of UTF-8 without control characters (C0, DEL, C1: WeChat's XML cannot carry most of
/// them, and U+0000 no store keeps) and without the invisible format characters that make one id
/// look like another in support's lookups, logs and the console: bidirectional overrides such as
/// U+202E, zero-width characters, line and paragraph separators, every Default_Ignorable code point
/// (which renders as nothing: U+3164 HANGUL FILLER, variation selectors, U+034F, U+17B4…), and
/// every White_Space one (a space, U+3000: `alice` and `alice ` must not be two users).
enum UserID {
    static let bytes = 1...64

    /// What the id must be, for error messages (`user_id must be …`, `the token's sub must be …`).
    static let rule = "1 to 64 bytes of UTF-8 without whitespace, control or invisible characters"

    static func isValid(_ value: String) -> Bool {
        bytes.contains(value.utf8.count) && !HiddenCharacters.occur(in: value)
    }
}

/// The characters an id must not hold because a reader cannot see them: controls (C0, DEL, C1),
/// format characters (bidirectional overrides such as U+202E, zero-width characters), line and
/// paragraph separators, every Default_Ignorable code point (U+00AD SOFT HYPHEN, U+3164 HANGUL
/// FILLER, variation selectors, U+034F, U+17B4…) and every White_Space one. A `user_id` with any
/// of them is refused (`alice` and `ali\u{200B}ce` must not be two users), and the catalog's
/// look-alike check sets them aside (`Catalog.grantsLike`).
enum HiddenCharacters {
    static func occur(in value: String) -> Bool {
        value.unicodeScalars.contains(where: isHidden)
    }

    /// What free text (a description, an attach, a reason) must not hold, and what the audit log
    /// shows as U+FFFD: control characters (C0, DEL, C1) and the line and paragraph separators
    /// (U+2028, U+2029), which break a line where a log viewer or a script reads it; and every
    /// format character and Default_Ignorable code point, which a reader cannot see but which
    /// can act: the text-direction overrides, isolates and marks (U+202A–U+202E, U+2066–U+2069,
    /// U+200E, U+200F, U+061C) turn a line or its numbers around wherever it is shown
    /// (`refund \u{202E}fed by admin`: a console page, the audit log, WeChat's refund notice), and
    /// the invisible ones (U+200B, U+2060, U+FEFF, U+00AD, tag characters, U+3164 HANGUL FILLER…)
    /// make one text look like another or a whole text look blank. Spaces stay, and so do the two
    /// invisible characters emoji are made of: the zero-width joiner (U+200D) and the variation
    /// selectors (❤️ is U+2764 U+FE0F).
    static func isRefusedInFreeText(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII { return scalar.value < 0x20 || scalar.value == 0x7F }
        switch scalar.value {
        case 0x80...0x9F: return true
        case 0x200D, 0xFE00...0xFE0F, 0xE0100...0xE01EF: return false
        default: break
        }
        let properties = scalar.properties
        // Noncharacters (U+FFFE, U+FFFF, U+FDD0–U+FDEF, the last two of each plane): WeChat's XML
        // cannot carry U+FFFE or U+FFFF, and none of them is text.
        if properties.isDefaultIgnorableCodePoint || properties.isNoncharacterCodePoint { return true }
        switch properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }

    /// Whether free text refuses `text`: a character `isRefusedInFreeText` names, except the tag
    /// characters of a flag's tag sequence (`forEachScalarOfFreeText`).
    static func refusedInFreeText(_ text: String) -> Bool {
        // Nearly every text has none of them: one pass, no array.
        guard text.unicodeScalars.contains(where: isRefusedInFreeText) else { return false }
        var refused = false
        forEachScalarOfFreeText(text) { _, isRefused in refused = refused || isRefused }
        return refused
    }

    /// Each scalar of `text` with whether free text refuses it where it stands. A tag character
    /// (U+E0020–U+E007F, invisible) is refused alone, and accepted inside a flag's tag sequence
    /// as Unicode defines it for subdivisions: 🏴 U+1F3F4, then 2–7 tag digits or lower-case tag
    /// letters, then U+E007F CANCEL TAG — the flags of Scotland, Wales and England.
    static func forEachScalarOfFreeText(_ text: String, _ body: (Unicode.Scalar, Bool) -> Void) {
        let scalars = Array(text.unicodeScalars)
        var index = 0
        while index < scalars.count {
            if scalars[index].value == 0x1F3F4, let end = flagTagSequenceEnd(scalars, base: index) {
                for scalar in scalars[index...end] { body(scalar, false) }
                index = end + 1
            } else {
                body(scalars[index], isRefusedInFreeText(scalars[index]))
                index += 1
            }
        }
    }

    /// The index of the CANCEL TAG ending a flag's tag sequence whose black flag is at `base`.
    private static func flagTagSequenceEnd(_ scalars: [Unicode.Scalar], base: Int) -> Int? {
        var index = base + 1
        while index < scalars.count, index - base <= 7,
              (0xE0030...0xE0039).contains(scalars[index].value) || (0xE0061...0xE007A).contains(scalars[index].value) {
            index += 1
        }
        guard index - base - 1 >= 2, index < scalars.count, scalars[index].value == 0xE007F else { return nil }
        return index
    }

    /// Whether `text` shows anything: a character other than whitespace (U+3000 and U+2800 BRAILLE
    /// PATTERN BLANK included) and the joiner and variation selectors free text keeps for emoji,
    /// which alone show nothing.
    static func showsSomething(_ text: String) -> Bool {
        text.unicodeScalars.contains { scalar in
            switch scalar.value {
            case 0x200D, 0x2800, 0xFE00...0xFE0F, 0xE0100...0xE01EF: false
            default: !scalar.properties.isWhitespace
            }
        }
    }

    static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        // ASCII, nearly every id: only the controls and the space are refused, and asking
        // Unicode's tables for each character was a visible part of an entitlement read.
        if scalar.isASCII { return scalar.value < 0x21 || scalar.value == 0x7F }
        let properties = scalar.properties
        if properties.isDefaultIgnorableCodePoint || properties.isWhitespace { return true }
        switch properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .spaceSeparator: return true
        default: return false
        }
    }
}

extension UserID {
    /// A body's `user_id` member: nil when absent (or empty, unless `required`), else a valid id.
    static func member(of object: [String: JSONValue], required: Bool) throws(APIError) -> String? {
        guard let value = try CreateOrderInput.string(object, "user_id", required: required, bytes: 0...bytes.upperBound,
                                                      anyCharacters: true)
        else { return nil }
        guard isValid(value) else { throw .invalid("user_id", "user_id must be \(rule)") }
        return value
    }
}
