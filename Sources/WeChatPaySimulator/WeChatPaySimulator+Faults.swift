// SPDX-License-Identifier: Apache-2.0
import WeChatPay

extension WeChatPaySimulator {
    /// Acts out the endpoint's fault plan on an answer. At most one fault changes the body; latency
    /// adds to any of them. The request has already taken effect, as it may have at WeChat.
    func inject(_ faults: EndpointFaults, into response: SimulatorResponse, path: String,
                book: inout OrderBook) -> SimulatorResponse {
        guard !faults.isEmpty else { return response }
        var response = response
        response.delay = faults.latency
        func count(_ kind: String) {
            book.counters.faultsInjected[kind, default: 0] += 1
            book.counters.faultsByEndpoint[path, default: [:]][kind, default: 0] += 1
        }

        if book.random.chance(faults.resetRate) {
            count("reset")
            response.resetConnection = true
            return response
        }
        if book.random.chance(faults.timeoutRate) {
            count("timeout")
            response.delay += max(0, faults.timeoutSeconds)
            response.timesOut = true
            return response
        }
        if book.random.chance(faults.http5xxRate) {
            count("http_5xx")
            response.status = 502
            response.contentType = "text/html"
            response.body = Array("<html><head><title>502 Bad Gateway</title></head><body>502 Bad Gateway</body></html>".utf8)
            return response
        }
        // The remaining faults change a signed XML answer; downloadbill text and protocol failures pass.
        guard var fields = try? FlatXML.decode(response.body), let sign = fields.nonEmpty("sign") else { return response }
        let signType: SignType = sign.utf8.count == SignType.hmacSHA256.hexLength ? .hmacSHA256 : .md5
        if book.random.chance(faults.systemErrorRate) {
            count("systemerror")
            var reply: Fields = [
                "return_code": "SUCCESS", "return_msg": "OK", "appid": configuration.appID,
                "mch_id": configuration.mchID, "nonce_str": book.random.alphanumerics(16), "result_code": "FAIL",
                "err_code": "SYSTEMERROR", "err_code_des": "系统超时",
            ]
            reply["sign"] = signer(for: path).signature(for: reply, type: signType)
            response.body = encode(reply)
        } else if book.random.chance(faults.truncatedRate) {
            count("truncated")
            response.body = Array(response.body.prefix(response.body.count / 2))
        } else if book.random.chance(faults.nonUTF8Rate) {
            count("non_utf8")
            // Latin-1 bytes in the middle of the document, as a misconfigured proxy would produce.
            let middle = response.body.count / 2
            response.body.insert(contentsOf: [0xC4, 0xE3, 0xFF], at: middle)
        } else if book.random.chance(faults.badSignatureRate) {
            count("bad_signature")
            var characters = Array(sign)
            characters[0] = characters[0] == "0" ? "1" : "0"
            fields["sign"] = String(characters)
            response.body = encode(fields)
        } else if book.random.chance(faults.missingSignatureRate) {
            count("missing_signature")
            fields["sign"] = nil
            response.body = encode(fields)
        } else if let asked = fields.nonEmpty("out_trade_no"), book.random.chance(faults.otherOrderRate),
                  let other = anotherOrder(than: asked, book: &book) {
            count("other_order")
            var reply = fields
            if WeChatPayAPI.route(path: path)?.0 == .orderQuery {
                for field in fields where !Self.envelopeFields.contains(field.name) { reply[field.name] = nil }
                reply = reply + orderStatusFields(other)
            } else {
                reply["out_trade_no"] = other.outTradeNo
                if fields["transaction_id"] != nil { reply["transaction_id"] = other.transactionID ?? "" }
            }
            reply["sign"] = nil
            reply["sign"] = signer(for: path).signature(for: reply, type: signType)
            response.body = encode(reply)
        }
        return response
    }

    /// The signer of answers on `path`: the sandbox's key there (but for getsignkey), else the merchant's.
    private func signer(for path: String) -> Signer {
        guard let (api, sandbox) = WeChatPayAPI.route(path: path), sandbox, api != .getSignKey else { return signer }
        return Signer(key: APIKey(sandboxKey))
    }

    /// What every signed answer carries besides its business fields.
    private static let envelopeFields: Set<String> = [
        "return_code", "return_msg", "appid", "mch_id", "nonce_str", "sign", "result_code", "err_code", "err_code_des",
    ]

    /// Another order of the book, a paid one when a few draws find one (the answer that would do
    /// harm if believed); nil when the book holds no other order.
    private func anotherOrder(than outTradeNo: String, book: inout OrderBook) -> SimulatedOrder? {
        let count = book.orders.count
        guard count > 1 else { return nil }
        var found: SimulatedOrder?
        for _ in 0..<8 {
            let index = book.orders.index(book.orders.startIndex, offsetBy: Int(book.random.next() % UInt64(count)))
            let candidate = book.orders[index].value
            guard candidate.outTradeNo != outTradeNo else { continue }
            found = candidate
            if candidate.isPaid { break }
        }
        return found ?? book.orders.values.first { $0.outTradeNo != outTradeNo }
    }
}
