// SPDX-License-Identifier: Apache-2.0
@testable import Gateway
import Testing

/// The one user id rule (App/UserID.swift): what renders as nothing, or as a space, makes two ids
/// look alike, so none of it is an id.
struct UserIDTests {
    @Test("A user id with a Default_Ignorable or White_Space code point is refused",
          arguments: ["\u{3164}", "\u{115F}", "\u{FFA0}", "\u{034F}", "\u{180B}", "\u{FE00}", "\u{FE0F}", "\u{E0100}", "\u{17B4}",
                      "\u{200B}", "\u{202E}", "\u{2028}", "\u{00AD}", " ", "\u{3000}", "\u{00A0}", "\u{2003}"])
    func anInvisibleOrBlankCodePointIsRefused(scalar: String) {
        #expect(!UserID.isValid("alice" + scalar), "U+\(String(scalar.unicodeScalars.first!.value, radix: 16))")
        #expect(!UserID.isValid(scalar + "alice"))
        #expect(!UserID.isValid(scalar))
    }

    @Test("Ids in any script, with punctuation, are still ids")
    func visibleIdsAreValid() {
        for id in ["alice", "u-42", "张三", "user@example.com", "Ünïcødé_1", "한글", String(repeating: "u", count: 64)] {
            #expect(UserID.isValid(id), "\(id)")
        }
    }
}
