// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import JSON

/// The `order.paid` outbox event: `{"created_at","data":{…},"id","type":"order.paid"}`, where
/// `data` is the order exactly as `GET /v1/orders/{id}` shows it once paid (`OrderView.json`),
/// plus `attach`, `user_id`, `product_id` and `paid_after_close` where they apply. Written by hand
/// on the notify hot path (JSONEncoder, its boxing and the UUID rewriting were about 8 % of a
/// notify's CPU time in the gateway benchmark).
enum PaidEventEncoding {
    /// A fresh event id, `evt_` plus 32 lowercase hex digits: the first 12 are the milliseconds
    /// since 1970, the other 20 random. Time-ordered ids append at the right edge of the outbox's
    /// primary-key index, so a group commit of many events dirties a few pages, not one random
    /// page per event.
    static func newID(at date: Date) -> String {
        id(at: date, tail: RandomBytes.take(10))
    }

    /// The id of the event that announces one thing that happened once — a payment, a refund's
    /// end — the same whenever it is written: `evt_`, 12 hex digits of `date` (the payment's time,
    /// so ids still append near the index's right edge) and 20 of SHA-256 over `fact`. Written
    /// again for the same fact — after a restore from a backup taken before it, the reconciler
    /// settles the payment a second time — the event reaches the business under the id it has
    /// applied already, so applying each id once still delivers once.
    static func derivedID(at date: Date, fact: String) -> String {
        id(at: date, tail: SHA256.hash(fact).prefix(10))
    }

    /// `derivedID` with no time of its own to lead it (a refund's end: its row may be made again
    /// at another time): `evt_` and 32 hex digits of SHA-256 over `fact`. Refund events are few;
    /// where they land in the index does not matter.
    static func derivedID(fact: String) -> String {
        var hex = Array("evt_".utf8)
        for byte in SHA256.hash(fact).prefix(16) {
            hex.append(digit(byte >> 4))
            hex.append(digit(byte & 0xF))
        }
        return String(decoding: hex, as: UTF8.self)
    }

    private static func id(at date: Date, tail: some Collection<UInt8>) -> String {
        let millis = UInt64(max(0, (date.timeIntervalSince1970 * 1000).rounded()))
        var hex = [UInt8]()
        hex.reserveCapacity(36)
        hex.append(contentsOf: "evt_".utf8)
        for shift in stride(from: 44, through: 0, by: -4) { hex.append(digit(UInt8((millis >> UInt64(shift)) & 0xF))) }
        for byte in tail {
            hex.append(digit(byte >> 4))
            hex.append(digit(byte & 0xF))
        }
        return String(decoding: hex, as: UTF8.self)
    }

    /// The event's JSON around `data`, one complete JSON object (the order's view). `type` is
    /// `order.paid`, or another order event (`order.refunded`, `order.refund_reversed`: Apple's).
    static func payload(id: String, createdAt: String, data: [UInt8], type: String = "order.paid") -> String {
        var event = JSONObjectWriter(capacity: data.count + 96)
        event.string("created_at", createdAt)
        event.raw("data", data)
        event.string("id", id)
        event.string("type", type)
        return String(decoding: event.finish(), as: UTF8.self)
    }

    private static func digit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }
}
