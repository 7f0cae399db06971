// SPDX-License-Identifier: Apache-2.0

/// Whether two user ids are the same user as the stores see them: the same bytes.
///
/// Swift's `==` on strings compares canonical equivalence: "zoë" written with one scalar equals
/// "zoe" followed by U+0308. Both databases compare bytes, so they keep those apart as two users,
/// and a check made with `==` would let an app token for one read, close or be credited with the
/// other's orders. Every decision about whose an order, a purchase or an entitlement is compares
/// with this. (Ids the gateway restricts to ASCII, such as out_trade_no, compare alike either way.)
package func sameUser(_ a: String?, _ b: String?) -> Bool {
    switch (a, b) {
    case (nil, nil): true
    case let (a?, b?): a.utf8.elementsEqual(b.utf8)
    default: false
    }
}
