// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
@testable import GatewayConsole
import Testing

/// The zh-CN console shows every timeline line in Chinese: each kind by a Chinese name, and each
/// detail with its words translated and its values (ids, amounts, times, codes) kept.
struct ConsoleTimelineWordsTests {
    /// A line of every kind of detail the gateway writes (the templates, with values filled in).
    static let details: [String] = [
        "amount=990 expires_in=1800",
        "bill 2026-12-05: refund_settled_from_bill: R1: was PROCESSING locally; refundquery confirmed it; settled",
        "bill 2026-12-05: refund_bill_success_not_confirmed: R1: bill says SUCCESS; refundquery left it PROCESSING",
        "amount=990 expires_in=1800 api=v3",
        "prepay_id issued",
        "transport failure (timeout)",
        "unifiedorder answered ORDERCLOSED",
        "wait: orderquery trade_state=NOTPAY",
        "support recheck: orderquery trade_state=SUCCESS",
        "reconcile after ORDERPAID: orderquery transport failure (timeout)",
        "closed on request (iOS order: closed locally)",
        "closeorder: ORDERNOTEXIST",
        "requested by agent7",
        "reconcile: expired, closed locally",
        "reconcile: closeorder (expired)",
        "closeorder answered ORDERPAID; confirming with orderquery",
        "reconcile: closeorder ORDERNOTEXIST",
        "closeorder transport failure (timeout)",
        "bill 2026-11-30: refund_unknown: R1: a refund of 3.00 yuan this gateway never requested (refunded by hand in the merchant platform?)",
        "bill 2026-11-30: refund_mismatch: R1: bill 3.00 yuan for T1, local 2.00 yuan for T2; not applied",
        "bill 2026-11-30: refund_mismatch: R1: bill refund_id 5001, local 5002",
        "bill 2026-11-30: refund_absent_from_bill: R1: SUCCESS locally, 3.00 yuan, requested 2026-11-30 10:00:00 Beijing; not in the bill",
        "bill 2026-11-30: unknown_order: a SUCCESS line for an order this gateway never created",
        "bill 2026-11-30: paid_locally_not_in_bill: SUCCESS locally, 9.90 yuan, paid at 2026-11-30 10:00:00 Beijing; not in the bill",
        "bill 2026-11-30: unknown_order: paid 9.90 yuan at 2026-11-30 10:00:00, an order this gateway never created",
        "bill 2026-11-30: amount_mismatch: bill 9.90 yuan, order 9.80 yuan (NOTPAY locally); not settled",
        "bill 2026-11-30: transaction_mismatch: local transaction none",
        "bill 2026-11-30: settled_from_bill: was CLOSED locally; orderquery confirmed the payment; settled (flagged paid_after_close)",
        "bill 2026-11-30: not_confirmed: bill says paid; orderquery failed (transport failure (timeout)); left NOTPAY",
        "bill 2026-11-30: not_confirmed: bill says paid; orderquery answered NOTPAY; left NOTPAY",
        "bill comparison: orderquery trade_state=SUCCESS",
        "order.paid 0190a-evt acknowledged",
        "order.paid 0190a-evt given up after 12 attempts (http 500); redrive to retry",
        "order.paid 0190a-evt redriven by agent7",
        "NOTPAY -> SUCCESS: notify",
        "CLOSED -> SUCCESS: notify (paid after close)",
        "notify reported 1 fen, order is 990 fen",
        "result_code=FAIL ORDERPAID",
        "settled",
        "duplicate",
        "R1: notify says SUCCESS, the refund is CHANGE",
        "R1: refundquery REFUNDNOTEXIST; sending it again (same out_refund_no, same parameters)",
        "R1: refundquery transport failure (timeout)",
        "R1: refundquery reports 300 fen, the refund is 200 fen",
        "R1: refundquery shows it accepted, refund_id 5001",
        "R1: refundquery refund_status=SUCCESS",
        "R1: 300 fen",
        "R1: the answer names another refund or amount",
        "R1: accepted by WeChat, refund_id 5001",
        "R1: request: refund transport failure (timeout); PROCESSING, the reconciler will ask",
        "R1: PROCESSING -> SUCCESS: refund_notify",
        "R1: PROCESSING -> CLOSED: request: WeChat refused (NOTENOUGH)",
        "R1: PROCESSING -> SUCCESS: reconcile: refundquery",
        "SUCCESS -> REFUND: refund R1 succeeded",
        "iOS order for com.example.course1 (990 fen), expires_in=1800; app_account_token 6f1c0a44-2b1c-4d1f-9e6e-0a9c5b0f3a11",
        "made for App Store transaction 2000000001 (com.example.course1, Production, purchased 20…: no open order of u1 for com.example.course1",
        "made for App Store transaction 2000000002 (com.example.vip.monthly, Production, purchased 2…: a payment Apple took by itself for u1's subscription 2000000001",
        "a payment Apple took by itself for u1's subscription 2000000001 (com.example.vip.monthly): this order was made for it; via notification DID_RENEW",
        "made for App Store transaction 2000000001 (com.example.missing, Production, purchased 20…: its product com.example.missing is not in the catalog; recorded at what Apple charged (1399 in the minor unit of CNY), flagged unknown_product",
        "App Store product com.example.missing (not in the catalog)",
        "transaction 2000000001 (com.example.course1, Production, purchased 2026-11-30T02:00:00Z, original 2000000000, quantity 2, price 13.99 CNY, storefront CHN): signed_transaction (StoreKit 2 JWS) verified locally: chain to the configured root, Apple's OIDs, ES256, bundle id",
        "transaction 2000000001 (com.example.course1, Production, purchased 2026-11-30T02:00:00Z): looked up with the App Store Server API (Get Transaction Info, Production); its signedTransactionInfo verified",
        "transaction 2000000001 (com.example.course1, Sandbox, purchased 2026-11-30T02:00:00Z): the transaction is in the app receipt (read locally, 3 purchases); looked up with the App Store Server API (Get Transaction Info, Sandbox); its signedTransactionInfo verified",
        "transaction 2000000001 (com.example.course1, Sandbox, purchased 2026-11-30T02:00:00Z): receipt verified with verifyReceipt (Sandbox, status 0); the transaction is in its in_app list",
        "transaction 2000000001 (com.example.course1, Production, purchased 2026-11-30T02:00:00Z): App Store Server Notification V2 ONE_TIME_CHARGE (6f1c0a44-2b1c-4d1f-9e6e-0a9c5b0f3a11) verified, with its signedTransactionInfo; read from Get Notification History",
        "transaction 2000000001 (com.example.course1, Production, purchased 2026-11-30T02:00:00Z): found with Get Transaction History of u1's App Store account (from transaction 2000000000, reconcile); its signed transaction verified",
        "transaction 2000000001 (com.example.course1, Production, purchased 2026-11-30T02:00:00Z): verified when first seen (notification ONE_TIME_CHARGE); tried again by the reconciler",
        "transaction 2000000001 (com.example.course1, Production, purchased 2026-11-30T02:00:00Z): found with Get Refund History (daily check)",
        "transaction 2000000001 (com.example.course1, Production, purchased 2026-11-30T02:00:00Z): found with Look Up Order ID MV1234567; its signed transaction verified",
        "matched by app_account_token: the transaction carries this order's token; via App Store report (signed_transaction)",
        "matched by app_account_token: the transaction carries this order's token; App Store report (receipt) came from u2 but the token names this order of u1 (the account was switched): credited to u1; via App Store report (receipt)",
        "matched by out_trade_no: the transaction carries no usable token; the app named this open order of u1 for com.example.course1; via App Store report (transaction_id)",
        "matched by user and product (凑单): no usable token or out_trade_no; the oldest open order of u1 for com.example.course1; via notification ONE_TIME_CHARGE; original transaction 2000000000 credited u1's order T1",
        "no open order of u1 for com.example.course1: this order was made for the purchase and flagged matched_without_order (never dropped; for support to look at); via notification history ONE_TIME_CHARGE; another purchase of the same App Store account (2000000000) credited u1's order T1",
        "matched by app_account_token: the transaction carries this order's token; the order had been closed locally (unpaid at its expiry): paid after close, flagged paid_after_close; via notification ONE_TIME_CHARGE",
        "matched by user and product (凑单): no usable token or out_trade_no; the oldest open order of u1 for com.example.course1; its token names order T9, which sells com.example.course2: passed over; its token names order T8, which another transaction paid already: passed over; its appAccountToken names no order of this gateway; the out_trade_no given (T7) is not an open iOS order of u1 for com.example.course1: passed over; via reconcile (unmatched purchase; original transaction 2000000000 credited u1's order T1)",
        "transaction 2000000001 reported by u1 (signed_transaction): credited to this order before; answered finish_transaction true",
        "transaction 2000000001 reported by u2 (receipt) (the account was switched: its token names this order of u1): credited to this order before; answered finish_transaction true",
        "transaction 2000000001 reported again by u2 (transaction_id): refused 409 transaction_already_used, it credited this order of u1",
        "ONE_TIME_CHARGE (6f1c0a44-2b1c-4d1f-9e6e-0a9c5b0f3a11) about transaction 2000000001, which credited this order already; read from the notification history",
        "SUCCESS -> REFUND: Apple refunded or revoked transaction 2000000001 (1); via notification REFUND",
        "a refund of transaction 2000000001 dated 2026-11-30T02:00:00Z arrived via notification history REFUND, but Apple reversed that refund at 2026-12-01T02:00:00Z: not applied",
        "Apple reversed a refund of transaction 2000000001 (via notification REFUND_REVERSED); the order is SUCCESS: nothing to change",
        "Apple reversed a refund of transaction 2000000001 (via notification REFUND_REVERSED); the order is REFUND and a newer refund stands: nothing changed",
        "REFUND -> SUCCESS: Apple reversed its refund of transaction 2000000001 (REFUND_REVERSED); via notification REFUND_REVERSED",
        "SUCCESS -> REFUND: Apple refunded or revoked transaction 2000000001; via daily Get Refund History",
        "SUCCESS -> REFUND: Apple refunded or revoked transaction 2000000001; via support: Look Up Order ID MV1234567",
        "SUCCESS -> REFUND: Apple refunded or revoked transaction 2000000001; via support recheck (Get Transaction Info)",
        "the App Store Server API is not configured: nothing to ask",
        "Get Transaction Info: transaction 2000000001 (com.example.course1, Production, purchased 2026-11-30T02:00:00Z): looked up with the App Store Server API (Get Transaction Info, Production); its signedTransactionInfo verified; revoked",
        "Get Transaction Info: transaction 2000000001 (com.example.course1, Production, purchased 2026-11-30T02:00:00Z): looked up with the App Store Server API (Get Transaction Info, Production); its signedTransactionInfo verified; not revoked",
        "Get Transaction Info: transaction_not_found",
        "NOTPAY -> CLOSED: reconcile: expired unpaid, closed locally (an iOS order has nothing to close at Apple; a transaction arriving later still settles it, flagged paid_after_close)",
        "no App Store transaction of u1 credited yet: no account to ask Get Transaction History about",
        "Get Transaction History: transport",
        "Get Transaction History of u1's account (3 transactions of com.example.course1): no purchase of com.example.course1 that credits nothing yet",
        "Get Transaction History of u1's account (3 transactions of com.example.course1): credited 2000000001 → T1, 2000000002 → T2",
        "Apple asks for consumption information about transaction 2000000001: the customer asked for a refund (UNINTENDED_PURCHASE); answer with PUT /v1/iap/transactions/2000000001/consumption before 2026-11-30T14:00:00Z; unless answered, the configured defaults (customer consented, DELIVERED, 50 % consumed, sample content not provided, refund preference DECLINE) go at 2026-11-30T12:00:00Z",
        "Apple asks for consumption information about transaction 2000000001: the customer asked for a refund (no reason given); answer with PUT /v1/iap/transactions/2000000001/consumption before 2026-11-30T14:00:00Z; without an answer nothing is sent (APPSTORE_CONSUMPTION_DEFAULTS is not set)",
        "the business answered: no consent, UNDELIVERED_OTHER, sample content provided; without the customer's consent nothing is sent",
        "Apple's 12 hours for transaction 2000000001 passed at 2026-11-30T14:00:00Z before an answer was sent: nothing was sent",
        "no answer from the business by 2026-11-30T12:00:00Z: the configured defaults answer (customer consented, DELIVERED, sample content provided)",
        "sent to Apple (Send Consumption Information, business's answer): accepted",
        "sent to Apple (Send Consumption Information, defaults's answer): accepted",
        "Apple refused the answer (API error 4000035 (400)): not sent again",
        "sending to Apple failed (transport failure (timeout)); tried again in 60 s",
        "not sent: the App Store Server API is not configured",
        "assigned by support (console user agent7): 收据邮件 MV777; the purchase was unclaimed (first seen via App Store report (transaction_id)); credited to this order of u1; the order had been closed locally (unpaid at its expiry)",
        "transaction 2000000001 (com.example.course1, Production, purchased 2026-11-30T02:00:00Z): as recorded when first seen (notification ONE_TIME_CHARGE)",
        "matched_without_order, unknown_product marked handled by support token 1a2b3c4d: 工单 881",
        "credited to catalog product gold-pass, which now sells its App Store product com.example.course1",
    ]

    /// Words that may stay: the names support staff look things up by, and values.
    static let kept: Set<String> = [
        "orderquery", "closeorder", "refundquery", "unifiedorder", "notify", "token", "receipt", "true", "s", "id", "bundle",
        "http", "error", "timeout", "transport",
    ]

    @Test func everyDetailReadsInChineseWithItsValuesKept() {
        let zh = ConsoleLanguage.chinese.text
        for detail in Self.details {
            let chinese = zh.eventDetail(detail)
            #expect(Self.englishWords(in: chinese).isEmpty, "untranslated \(Self.englishWords(in: chinese)) in: \(chinese)")
            for value in ["2000000001", "com.example.course1", "paid_after_close", "T1", "R1", "2026-11-30T14:00:00Z"]
            where detail.contains(value) {
                #expect(chinese.contains(value), "\(value) lost from: \(chinese)")
            }
        }
        #expect(zh.eventDetail("matched_without_order") == "matched_without_order")
        #expect(zh.eventDetail("/v1/iap/transactions/1/consumption") == "/v1/iap/transactions/1/consumption")
    }

    @Test func englishShowsTheDetailAsWrittenWithItsAmountsInYuanToo() {
        let en = ConsoleLanguage.english.text
        for detail in Self.details { #expect(en.eventDetail(detail) == ConsoleFormat.yuanAmounts(in: detail)) }
        #expect(en.eventDetail("R1: 300 fen") == "R1: ¥3.00 (300 fen)")
    }

    @Test func everyTimelineKindTheCodeWritesHasAChineseName() throws {
        let zh = ConsoleLanguage.chinese.text
        let en = ConsoleLanguage.english.text
        for kind in try TimelineKindsTests.writtenKinds() {
            #expect(zh.eventName(kind) != kind && !zh.eventName(kind).isEmpty, "no Chinese name for \(kind)")
            #expect(en.eventName(kind) != kind, "no English name for \(kind)")
        }
    }

    /// Lowercase English words standing alone (not part of an id or a code), not in `kept`.
    static func englishWords(in text: String) -> [String] {
        let characters = Array(text)
        var words: [String] = []
        var index = 0
        while index < characters.count {
            guard characters[index].isASCII, characters[index].isLetter else { index += 1; continue }
            var end = index
            while end < characters.count, characters[end].isASCII, characters[end].isLetter { end += 1 }
            let word = String(characters[index..<end])
            let before = index > 0 ? characters[index - 1] : " "
            let after = end < characters.count ? characters[end] : " "
            let standsAlone = !ConsoleTimelineWords.isWordCharacter(before) && !ConsoleTimelineWords.isWordCharacter(after)
            if standsAlone, word == word.lowercased(), !kept.contains(word) { words.append(word) }
            index = end
        }
        return words
    }
}
