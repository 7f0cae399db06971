#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the WeChat Pay v3 simulator and the WeChatPayV3 module against the Python `wechatpayv3`
client (PyPI; run by the Swift test V3ReferenceAgreementTests with .build/test-tools-venv's Python,
see scripts/test-tools):

1. wechatpayv3's WeChatPay, in public-key mode, its gateway URL pointed at the simulator (the
   client keeps it in `_core._gate_way`), must work: pay (APP), query, close, refund,
   query_refund, trade_bill and download_bill (gunzipped, SHA-1 equal to hash_value); every
   answer's signature is verified by the client itself.
2. Its `callback` must accept the simulator's payment and refund notifies (signature verified,
   resource decrypted), posted to a receiver this script runs on 127.0.0.1.
3. It builds notifies with its own helpers (utils.rsa_sign with the WeChat Pay key, AESGCM with
   the APIv3 key), written to OUTPUT_NOTIFIES for the Swift side to open with WeChatPayV3.

    reference_agreement.py INPUT.json     # written by the Swift test; prints one JSON report

Exit status 0 when every check passed, 1 otherwise.
"""
import base64
import gzip
import hashlib
import http.server
import json
import os
import queue
import sys
import threading
import time
import urllib.request

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from wechatpayv3 import WeChatPay, WeChatPayType
from wechatpayv3.utils import load_private_key, rsa_sign

checks = []


def check(name, function):
    try:
        detail = function()
        checks.append({"name": name, "ok": True, "detail": str(detail)[:200] if detail is not None else ""})
    except Exception as error:  # every failure is reported, none stops the run
        checks.append({"name": name, "ok": False, "detail": f"{type(error).__name__}: {error}"[:300]})


class Receiver(http.server.BaseHTTPRequestHandler):
    """The merchant's notify URL: each POST is queued with its headers, answered 204."""
    received = queue.Queue()

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        Receiver.received.put(({name: value for name, value in self.headers.items()}, body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def control(base, path, body=None):
    request = urllib.request.Request(base + path, data=json.dumps(body or {}).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as answer:
        return json.loads(answer.read())


def next_notify(timeout=180):
    return Receiver.received.get(timeout=timeout)


def main():
    config = json.load(open(sys.argv[1], encoding="utf-8"))
    base = config["base_url"]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", config["notify_port"]), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    notify_url = f"http://127.0.0.1:{server.server_address[1]}/wechat/v3/notify"

    wxpay = WeChatPay(wechatpay_type=WeChatPayType.APP, mchid=config["mchid"],
                      private_key=open(config["merchant_key"], encoding="utf-8").read(),
                      cert_serial_no=config["merchant_serial"], appid=config["appid"], apiv3_key=config["apiv3_key"],
                      notify_url=notify_url, public_key=open(config["wechatpay_public_key"], encoding="utf-8").read(),
                      public_key_id=config["public_key_id"], timeout=(60, 120))
    # The gateway URL is an attribute of the client's core: the simulator instead of api.mch.weixin.qq.com.
    wxpay._core._gate_way = base
    number = config["out_trade_no"]
    state = {}

    def pay():
        code, message = wxpay.pay(description="simulated course", out_trade_no=number, amount={"total": 990, "currency": "CNY"},
                                  pay_type=WeChatPayType.APP)
        assert code == 200, (code, message)
        state["prepay_id"] = json.loads(message)["prepay_id"]
        return state["prepay_id"]

    def app_sign():
        timestamp, nonce = str(int(time.time())), "5K8264ILTKCH16CQ2502SI8ZNMTM67VS"
        signature = wxpay.sign([config["appid"], timestamp, nonce, state["prepay_id"]])
        state["app"] = {"appid": config["appid"], "timestamp": timestamp, "nonce": nonce, "prepay_id": state["prepay_id"],
                        "sign": signature}
        return "signed"

    def query_unpaid():
        code, message = wxpay.query(out_trade_no=number)
        assert code == 200 and json.loads(message)["trade_state"] == "NOTPAY", (code, message)
        return "NOTPAY"

    def pay_and_callback():
        control(base, f"/simulator/orders/{number}/pay")
        headers, body = next_notify()
        tampered = body.replace(b'"summary"', b'"summarY"')
        assert wxpay.callback(headers, tampered) is None, "a changed body must not verify"
        data = wxpay.callback(headers, body)
        assert data and data["event_type"] == "TRANSACTION.SUCCESS", data
        resource = data["resource"]
        assert resource["out_trade_no"] == number and resource["trade_state"] == "SUCCESS", resource
        assert resource["amount"]["total"] == 990, resource
        state["paid_day"] = resource["success_time"][:10]
        return resource["transaction_id"]

    def query_paid():
        code, message = wxpay.query(out_trade_no=number)
        answer = json.loads(message)
        assert code == 200 and answer["trade_state"] == "SUCCESS", (code, message)
        return answer["transaction_id"]

    def close_other():
        other = number + "C"
        code, message = wxpay.pay(description="closed course", out_trade_no=other, amount={"total": 100},
                                  pay_type=WeChatPayType.APP)
        assert code == 200, (code, message)
        code, message = wxpay.close(out_trade_no=other)
        assert code == 204, (code, message)
        code, message = wxpay.query(out_trade_no=other)
        assert json.loads(message)["trade_state"] == "CLOSED", message
        return "CLOSED"

    def refund():
        code, message = wxpay.refund(out_refund_no=number + "R1", amount={"refund": 300, "total": 990, "currency": "CNY"},
                                     out_trade_no=number, notify_url=notify_url)
        assert code == 200 and json.loads(message)["status"] == "PROCESSING", (code, message)
        return json.loads(message)["refund_id"]

    def refund_callback():
        control(base, f"/simulator/refunds/{number}R1/complete", {"status": "SUCCESS"})
        headers, body = next_notify()
        data = wxpay.callback(headers, body)
        assert data and data["event_type"] == "REFUND.SUCCESS", data
        assert data["resource"]["out_refund_no"] == number + "R1" and data["resource"]["refund_status"] == "SUCCESS", data
        return "REFUND.SUCCESS"

    def query_refund():
        code, message = wxpay.query_refund(out_refund_no=number + "R1")
        assert code == 200 and json.loads(message)["status"] == "SUCCESS", (code, message)
        return "SUCCESS"

    def unknown_order():
        code, message = wxpay.query(out_trade_no="NOSUCHORDER1")
        assert code == 404 and json.loads(message)["code"] == "ORDER_NOT_EXIST", (code, message)
        return "404 ORDER_NOT_EXIST"

    def bill():
        control(base, "/simulator/clock/advance", {"seconds": 2 * 86400})
        code, message = wxpay.trade_bill(bill_date=state["paid_day"])
        assert code == 200, (code, message)
        answer = json.loads(message)
        code, content = wxpay.download_bill(answer["download_url"])
        assert code == 200, code
        text = gzip.decompress(content)
        assert hashlib.sha1(text).hexdigest() == answer["hash_value"], "hash"
        assert number.encode() in text, "the paid order is in the bill"
        return answer["hash_value"]

    check("pay (APP) answers a prepay_id, signature verified by wechatpayv3", pay)
    check("the app's sign made by wechatpayv3 is exported for WeChatPayV3", app_sign)
    check("query of the unpaid order: NOTPAY", query_unpaid)
    check("callback accepts the simulator's payment notify", pay_and_callback)
    check("query of the paid order: SUCCESS", query_paid)
    check("close answers 204 and the order is CLOSED", close_other)
    check("refund answers PROCESSING", refund)
    check("callback accepts the simulator's refund notify", refund_callback)
    check("query_refund: SUCCESS", query_refund)
    check("query of an unknown order: 404 ORDER_NOT_EXIST", unknown_order)
    check("trade_bill + download_bill: the gunzipped bill's SHA-1 is hash_value", bill)

    # Notifies built with wechatpayv3's own helpers, for WeChatPayV3 to open.
    def build_notifies():
        signing_key = load_private_key(open(config["wechatpay_private_key"], encoding="utf-8").read())
        built = []
        for index, (event, original, resource) in enumerate([
            ("TRANSACTION.SUCCESS", "transaction", {
                "appid": config["appid"], "mchid": config["mchid"], "out_trade_no": "PYBUILT0001", "transaction_id": "4200000000202401010000000001",
                "trade_type": "APP", "trade_state": "SUCCESS", "trade_state_desc": "支付成功", "bank_type": "OTHERS",
                "success_time": "2024-01-01T10:00:00+08:00", "payer": {"openid": "oPY"}, "amount": {"total": 1234, "payer_total": 1234,
                "currency": "CNY", "payer_currency": "CNY"}}),
            ("REFUND.SUCCESS", "refund", {
                "mchid": config["mchid"], "out_trade_no": "PYBUILT0001", "transaction_id": "4200000000202401010000000001",
                "out_refund_no": "PYBUILT0001R", "refund_id": "50300000000000000000000000001", "refund_status": "SUCCESS",
                "success_time": "2024-01-02T10:00:00+08:00", "user_received_account": "支付用户零钱",
                "amount": {"total": 1234, "refund": 234, "payer_total": 1234, "payer_refund": 234}}),
        ]):
            nonce = f"PYNONCE{index:05d}"
            sealed = AESGCM(config["apiv3_key"].encode()).encrypt(nonce.encode(), json.dumps(resource, ensure_ascii=False).encode(),
                                                                   original.encode())
            body = json.dumps({"id": f"py-{index}", "create_time": "2024-01-01T10:00:01+08:00", "resource_type": "encrypt-resource",
                               "event_type": event, "summary": "built by wechatpayv3", "resource": {
                                   "original_type": original, "algorithm": "AEAD_AES_256_GCM",
                                   "ciphertext": base64.b64encode(sealed).decode(), "associated_data": original, "nonce": nonce}},
                              ensure_ascii=False)
            timestamp, header_nonce = str(int(time.time())), f"pyheadernonce{index}"
            signature = rsa_sign(signing_key, f"{timestamp}\n{header_nonce}\n{body}\n")
            built.append({"event": event, "body": body, "headers": {
                "Wechatpay-Timestamp": timestamp, "Wechatpay-Nonce": header_nonce, "Wechatpay-Signature": signature,
                "Wechatpay-Serial": config["public_key_id"], "Wechatpay-Signature-Type": "WECHATPAY2-SHA256-RSA2048"}})
        with open(config["output_notifies"], "w", encoding="utf-8") as out:
            json.dump({"notifies": built, "app": state.get("app")}, out, ensure_ascii=False)
        return len(built)

    check("notifies built with wechatpayv3's helpers are written for WeChatPayV3", build_notifies)
    server.shutdown()
    print(json.dumps({"checks": checks}, ensure_ascii=False))
    return 0 if all(c["ok"] for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
