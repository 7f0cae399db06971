// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import Gateway
import StorageCore
import WeChatPay

/// How the console writes amounts, times and states, and reads amounts and dates typed into it.
enum ConsoleFormat {
    /// Fen as yuan: 990 → `¥9.90`.
    static func yuan(_ fen: Int) -> String {
        let sign = fen < 0 ? "-" : ""
        let value = abs(fen)
        return "\(sign)¥\(value / 100).\(String(value % 100).leftPadded(to: 2))"
    }

    /// A timeline line's amounts, which the gateway writes in fen (`refund_requested: R1: 350
    /// fen`, a create's `amount=350`), with their yuan first, as the rest of the page shows money:
    /// `¥3.50 (350 fen)`, `amount=¥3.50 (350 fen)`. Only a whole number standing alone before the
    /// word `fen`, or as the value of `amount=`, is one (not the digits ending an id).
    static func yuanAmounts(in detail: String) -> String {
        let bytes = Array(detail.utf8)
        let unit = Array(" fen".utf8)
        let key = Array("amount=".utf8)
        func isWordByte(_ byte: UInt8) -> Bool {
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte >= 0x80
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + 16)
        var index = 0
        while index < bytes.count {
            let isDigit = (0x30...0x39).contains(bytes[index])
            guard isDigit, index == 0 || !isWordByte(bytes[index - 1]) else {
                output.append(bytes[index])
                index += 1
                continue
            }
            var end = index
            while end < bytes.count, (0x30...0x39).contains(bytes[end]) { end += 1 }
            let afterUnit = end + unit.count
            let keyStart = index - key.count
            let isAmountValue = keyStart >= 0 && bytes[keyStart..<index].elementsEqual(key)
                && (keyStart == 0 || !isWordByte(bytes[keyStart - 1])) && (end == bytes.count || !isWordByte(bytes[end]))
            if end - index <= 12, afterUnit <= bytes.count, bytes[end..<afterUnit].elementsEqual(unit),
               afterUnit == bytes.count || !isWordByte(bytes[afterUnit]),
               let fen = Int(String(decoding: bytes[index..<end], as: UTF8.self))
            {
                output += Array("\(yuan(fen)) (".utf8) + bytes[index..<afterUnit] + [UInt8(ascii: ")")]
                index = afterUnit
            } else if isAmountValue, end - index <= 12, let fen = Int(String(decoding: bytes[index..<end], as: UTF8.self)) {
                output += Array("\(yuan(fen)) (".utf8) + bytes[index..<end] + Array(" fen)".utf8)
                index = end
            } else {
                output += bytes[index..<end]
                index = end
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// An amount in the minor unit of its currency: yuan for CNY (nil is CNY, as every WeChat Pay
    /// order and every App Store order charged in yuan); else the decimals the currency has and
    /// its code, as Apple charged it: 1299 USD → `12.99 USD`, 120 JPY → `120 JPY`.
    static func money(_ minor: Int, currency: String?) -> String {
        guard let currency, currency != "CNY" else { return yuan(minor) }
        let decimals = AppStorePrice.decimals(currency)
        let sign = minor < 0 ? "-" : ""
        var divisor = 1
        for _ in 0..<decimals { divisor *= 10 }
        let value = abs(minor)
        let fraction = decimals == 0 ? "" : "." + String(value % divisor).leftPadded(to: decimals)
        return "\(sign)\(value / divisor)\(fraction) \(currency)"
    }

    /// An amount typed in yuan (`3`, `3.5`, `3.50`, `¥3.50`) as fen; nil for anything else (more
    /// than two decimals, a sign, a thousands separator, more than 10,000,000 yuan).
    static func fen(fromYuan text: String) -> Int? {
        var value = text.trimmingWhitespace()
        if value.hasPrefix("¥") || value.hasPrefix("￥") { value.removeFirst() }
        let parts = value.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.count <= 8, whole.allSatisfy({ $0.isASCII && $0.isNumber })
        else { return nil }
        var fen = Int(whole)! * 100
        if parts.count == 2 {
            let decimals = parts[1]
            guard !decimals.isEmpty, decimals.count <= 2, decimals.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            fen += Int(decimals)! * (decimals.count == 1 ? 10 : 1)
        }
        return fen
    }

    /// Beijing time as support staff read it: `2026-11-30 14:23:43`.
    static func time(_ date: Date) -> String { BeijingTime.formatWithSeparators(date) }

    /// `yyyy-MM-dd` (a date input's value) as the Beijing day it names: its first instant.
    static func beijingDay(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return nil }
        return BeijingTime.parseDay(text.replacingOccurrences(of: "-", with: ""))
    }

    /// The Beijing day of an instant as `yyyy-MM-dd`.
    static func day(_ date: Date) -> String { String(time(date).prefix(10)) }

    /// WeChat's own Chinese name of a trade_state (its documentation's `trade_state_desc` words).
    static func chinese(_ state: OrderState) -> String {
        switch state {
        case .notPay: "未支付"
        case .success: "支付成功"
        case .refund: "转入退款"
        case .closed: "已关闭"
        case .revoked: "已撤销"
        case .payError: "支付失败"
        case .userPaying: "用户支付中"
        }
    }

    /// WeChat's Chinese name of a refund_status.
    static func chinese(_ state: RefundState) -> String {
        switch state {
        case .processing: "退款处理中"
        case .success: "退款成功"
        case .change: "退款异常"
        case .refundClose: "退款关闭"
        }
    }
}

extension String {
    func leftPadded(to width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}
