// SPDX-License-Identifier: Apache-2.0

/// SQL text that can only come from string literals in this package's stores, joined with `+`.
///
/// There is deliberately no way to build an `SQL` from a runtime `String` or by interpolation, so
/// a value can reach the database only as a bound parameter, never as SQL text.
///
/// An `SQL` keeps the literals it was joined from, not their text: the stores key their prepared
/// statements by it on every call, and comparing and hashing where the literals live (their
/// addresses and lengths) costs a few words, where building, hashing and comparing the text of
/// a statement (a thousand bytes for some) cost a string allocation, a copy and a pass over every
/// byte, several times per payment. Two identical texts written in two places are two keys (two
/// prepared statements), which is harmless: the literals, and so the keys, are a fixed set.
package struct SQL: Hashable, Sendable, ExpressibleByStringLiteral {
    private let pieces: [StaticString]

    package init(stringLiteral value: StaticString) {
        pieces = [value]
    }

    private init(pieces: [StaticString]) {
        self.pieces = pieces
    }

    /// The statement's text, for the database to prepare.
    package var text: String {
        var text = ""
        for piece in pieces { text += piece.description }
        return text
    }

    package static func + (lhs: SQL, rhs: SQL) -> SQL {
        SQL(pieces: lhs.pieces + rhs.pieces)
    }

    package static func == (lhs: SQL, rhs: SQL) -> Bool {
        lhs.pieces.count == rhs.pieces.count
            && zip(lhs.pieces, rhs.pieces).allSatisfy { Piece($0) == Piece($1) }
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(pieces.count)
        for piece in pieces { hasher.combine(Piece(piece)) }
    }

    /// Where a literal lives: its address and length, or, for a one-character literal the
    /// compiler may store as a scalar, that scalar.
    private struct Piece: Hashable {
        let address: UInt
        let count: Int

        init(_ literal: StaticString) {
            if literal.hasPointerRepresentation {
                address = UInt(bitPattern: literal.utf8Start)
                count = literal.utf8CodeUnitCount
            } else {
                address = UInt(literal.unicodeScalar.value)
                count = -1
            }
        }
    }
}
