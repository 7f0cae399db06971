// SPDX-License-Identifier: Apache-2.0
import StorageCore
import Testing

/// `SQL` is the stores' prepared-statement key: the text it prepares must be its literals joined
/// in order, and the same statement built again (as every call builds it) must find its key.
struct SQLTests {
    static let columns: SQL = "id, out_trade_no"

    static func statement() -> SQL {
        "SELECT " + columns + " FROM orders WHERE out_trade_no = ?"
    }

    @Test func theTextIsTheLiteralsJoinedInOrder() {
        #expect(Self.statement().text == "SELECT id, out_trade_no FROM orders WHERE out_trade_no = ?")
        #expect(("A" + "B" + "" + "CD" as SQL).text == "ABCD")
        let multiline: SQL = """
            UPDATE orders
            SET state = ?1
            """
        #expect(multiline.text == "UPDATE orders\nSET state = ?1")
    }

    @Test func theSameStatementBuiltTwiceIsOneKey() {
        var cache: [SQL: Int] = [:]
        for call in 0..<3 { cache[Self.statement(), default: call] += 1 }
        #expect(cache.count == 1)
        #expect(Self.statement() == Self.statement())
        #expect(Self.statement().hashValue == Self.statement().hashValue)
    }

    @Test func differentStatementsAreDifferentKeys() {
        let one: SQL = "SELECT 1"
        let two: SQL = "SELECT 2"
        #expect(one != two)
        #expect(("SELECT " + Self.columns) != Self.statement())
        // The same text split differently is another key: harmless (one more prepared statement).
        #expect(Set([one, two, "SELECT " + Self.columns, Self.statement()]).count == 4)
    }

    @Test func oneCharacterLiteralsAreKeysToo() {
        let open: SQL = "("
        let close: SQL = ")"
        #expect((open + close).text == "()")
        #expect(open != close)
        #expect(open + close == open + close)
    }
}
