// SPDX-License-Identifier: Apache-2.0

/// The field names of WeChat Pay v2 documents, so that decoding hands out one shared String per
/// name instead of validating and building a new one for every field of every document (about a
/// fifth of the cost of decoding a notify). Names not listed here decode exactly the same way,
/// only a little slower; a name is returned from here only when its bytes are equal.
enum KnownFieldNames {
    private static let names: [String] = {
        var names = [
            "appid", "mch_id", "sub_appid", "sub_mch_id", "device_info", "nonce_str", "sign", "sign_type",
            "return_code", "return_msg", "result_code", "result_msg", "err_code", "err_code_des",
            "openid", "sub_openid", "is_subscribe", "sub_is_subscribe", "trade_type", "trade_state",
            "trade_state_desc", "bank_type", "total_fee", "settlement_total_fee", "fee_type", "cash_fee",
            "cash_fee_type", "coupon_fee", "coupon_count", "transaction_id", "out_trade_no", "attach",
            "time_end", "time_start", "time_expire", "prepay_id", "code_url", "mweb_url", "body", "detail",
            "spbill_create_ip", "notify_url", "goods_tag", "limit_pay", "receipt", "scene_info",
            "profit_sharing", "product_id", "version", "promotion_detail", "out_refund_no", "refund_id",
            "refund_fee", "settlement_refund_fee", "refund_fee_type", "refund_desc", "refund_account",
            "refund_channel", "refund_status", "refund_recv_accout", "refund_request_source",
            "refund_success_time", "success_time", "cash_refund_fee", "cash_refund_fee_type",
            "coupon_refund_fee", "coupon_refund_count", "refund_count", "total_refund_count", "offset",
            "req_info", "bill_date", "bill_type", "tar_type", "error_code", "op_user_id",
        ]
        for n in 0..<10 {
            names += [
                "coupon_type_\(n)", "coupon_id_\(n)", "coupon_fee_\(n)", "out_refund_no_\(n)", "refund_id_\(n)",
                "refund_channel_\(n)", "refund_fee_\(n)", "settlement_refund_fee_\(n)", "coupon_refund_fee_\(n)",
                "coupon_refund_count_\(n)", "refund_status_\(n)", "refund_account_\(n)",
                "refund_recv_accout_\(n)", "refund_success_time_\(n)", "coupon_refund_id_\(n)",
            ]
        }
        return names
    }()

    private struct Slot {
        var hash: UInt64 = 0  // 0: empty
        var name: String = ""
    }

    /// Open addressing at load 1/4, keyed with the same hash the duplicate check computes.
    private static let table: [Slot] = {
        var capacity = 64
        while capacity < names.count * 4 { capacity *= 2 }
        var table = [Slot](repeating: Slot(), count: capacity)
        for name in names {
            var name = name
            name.makeContiguousUTF8()
            let hash = name.withUTF8 { FieldNameSet.hash($0) }
            var index = Int(truncatingIfNeeded: hash) & (capacity - 1)
            while table[index].hash != 0 { index = (index + 1) & (capacity - 1) }
            table[index] = Slot(hash: hash, name: name)
        }
        return table
    }()

    /// The shared String for `bytes` if it is a known name; `hash` is `FieldNameSet.hash(bytes)`.
    static func name(for bytes: UnsafeBufferPointer<UInt8>, hash: UInt64) -> String? {
        table.withUnsafeBufferPointer { table in
            let mask = table.count &- 1
            var index = Int(truncatingIfNeeded: hash) & mask
            while table[index].hash != 0 {
                if table[index].hash == hash {
                    let found: Bool = table[index].name.utf8.withContiguousStorageIfAvailable { known in
                        known.count == bytes.count && (bytes.isEmpty || memcmpEqual(known.baseAddress!, bytes.baseAddress!, bytes.count))
                    } ?? false
                    if found { return table[index].name }
                }
                index = (index &+ 1) & mask
            }
            return nil
        }
    }
}
