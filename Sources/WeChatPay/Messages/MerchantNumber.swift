// SPDX-License-Identifier: Apache-2.0

/// The bytes WeChat allows in a merchant's own numbers (`out_trade_no`, `out_refund_no`): ASCII
/// letters and digits and `_-|*@`. One rule for the field checks, the notify's claimed order and
/// the refund input; a switch, since it runs for every byte of every notify.
public enum MerchantNumber {
    @inlinable
    public static func allows(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "|"), UInt8(ascii: "*"), UInt8(ascii: "@"):
            true
        default:
            false
        }
    }
}
