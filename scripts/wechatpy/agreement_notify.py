# SPDX-License-Identifier: Apache-2.0
"""The merchant's notify_url: a loopback http.server that checks every notify twice, once with
wechatpy (parse_payment_result / parse_refund_notify_result) and once independently.

It answers SUCCESS when the independent check passes, so wechatpy's known MD5-only notify check
does not keep the simulator retrying for 24 hours; wechatpy's verdict is recorded for the table.
"""
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from agreement_signatures import decrypt_req_info, matching_sign_type, parse_xml

SUCCESS_REPLY = b"<xml><return_code><![CDATA[SUCCESS]]></return_code><return_msg><![CDATA[OK]]></return_msg></xml>"
FAIL_REPLY = b"<xml><return_code><![CDATA[FAIL]]></return_code><return_msg><![CDATA[retry]]></return_msg></xml>"
MAX_BODY = 64 * 1024


@dataclass
class ReceivedNotify:
    kind: str  # payment or refund
    reference: str  # out_trade_no or out_refund_no ("" when unreadable)
    fields: dict  # payment: the notify's fields; refund: the decrypted req_info
    declared_sign_type: str  # payment only: sign_type as sent ("" when absent)
    wechatpy_ok: bool
    wechatpy_detail: str
    independent_ok: bool
    independent_detail: str
    answered: str  # SUCCESS or FAIL


class NotifyReceiver:
    """Collects notifies; wait_for() blocks (bounded) until a matching one arrives."""

    def __init__(self, pay, key):
        self._pay = pay  # a wechatpy WeChatPay configured for the merchant
        self._key = key
        self._received = []
        self._condition = threading.Condition()
        self._fail_first = set()  # out_trade_nos whose first payment notify is answered FAIL
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(min(length, MAX_BODY))
                kind = "refund" if self.path.startswith("/notify/refund") else "payment"
                reply = receiver._handle(kind, body)
                self.send_response(200)
                self.send_header("Content-Type", "text/xml")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    @property
    def base_url(self):
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self):
        self._thread.start()

    def stop(self):
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def fail_first_attempt(self, out_trade_no):
        """Answer FAIL to the first payment notify of this order, to see WeChat's retry."""
        with self._condition:
            self._fail_first.add(out_trade_no)

    def received(self, kind=None, reference=None):
        with self._condition:
            return [n for n in self._received
                    if (kind is None or n.kind == kind) and (reference is None or n.reference == reference)]

    def wait_for(self, kind, reference, count=1, timeout=20.0):
        """The first `count` notifies of this kind and reference, or fewer if the timeout passes."""
        deadline = time.monotonic() + timeout
        with self._condition:
            while True:
                matches = [n for n in self._received if n.kind == kind and n.reference == reference]
                remaining = deadline - time.monotonic()
                if len(matches) >= count or remaining <= 0:
                    return matches[:count]
                self._condition.wait(remaining)

    def _handle(self, kind, body):
        text = body.decode("utf-8", "replace")
        notify = self._check_payment(text) if kind == "payment" else self._check_refund(text)
        with self._condition:
            fail_now = (kind == "payment" and notify.reference in self._fail_first)
            if fail_now:
                self._fail_first.discard(notify.reference)
            notify.answered = "SUCCESS" if notify.independent_ok and not fail_now else "FAIL"
            self._received.append(notify)
            self._condition.notify_all()
        return SUCCESS_REPLY if notify.answered == "SUCCESS" else FAIL_REPLY

    def _check_payment(self, text):
        try:
            self._pay.parse_payment_result(text)
            wechatpy_ok, wechatpy_detail = True, "parse_payment_result accepted"
        except Exception as error:  # InvalidSignatureException, or a parse failure
            wechatpy_ok, wechatpy_detail = False, f"parse_payment_result raised {type(error).__name__}"
        fields = parse_xml(text) or {}
        sign_type = matching_sign_type(fields, self._key) if fields else None
        declared = fields.get("sign_type", "")
        if not fields:
            independent_ok, independent_detail = False, "not a WeChat XML document"
        elif fields.get("return_code") != "SUCCESS" or not fields.get("sign"):
            independent_ok, independent_detail = False, "no SUCCESS return_code or no sign"
        elif sign_type is None:
            independent_ok, independent_detail = False, "signature matches neither MD5 nor HMAC-SHA256"
        elif declared and declared != sign_type:
            independent_ok, independent_detail = False, f"sign_type says {declared}, signed with {sign_type}"
        else:
            independent_ok, independent_detail = True, f"{sign_type} valid (sign_type {declared or 'absent'})"
        return ReceivedNotify("payment", fields.get("out_trade_no", ""), fields, declared, wechatpy_ok,
                              wechatpy_detail, independent_ok, independent_detail, "")

    def _check_refund(self, text):
        try:
            decrypted = self._pay.parse_refund_notify_result(text)
            wechatpy_ok, wechatpy_detail = True, f"parse_refund_notify_result: refund_status {decrypted.get('refund_status')}"
        except Exception as error:
            decrypted, wechatpy_ok = {}, False
            wechatpy_detail = f"parse_refund_notify_result raised {type(error).__name__}"
        outer = parse_xml(text) or {}
        try:
            inner = decrypt_req_info(outer.get("req_info", ""), self._key)
            independent_ok = (outer.get("return_code") == "SUCCESS" and "sign" not in outer
                              and outer.get("appid") == self._pay.appid and outer.get("mch_id") == self._pay.mch_id)
            independent_detail = "req_info decrypts (AES-256-ECB, md5(key)); outer unsigned, appid/mch_id ours" \
                if independent_ok else "outer fields wrong"
            same = {k: str(v) for k, v in decrypted.items()} == inner if wechatpy_ok else True
            if not same:
                independent_ok, independent_detail = False, "wechatpy's decryption differs from ours"
        except Exception as error:
            inner, independent_ok = {}, False
            independent_detail = f"req_info does not decrypt: {type(error).__name__}"
        return ReceivedNotify("refund", inner.get("out_refund_no", ""), inner, "", wechatpy_ok, wechatpy_detail,
                              independent_ok, independent_detail, "")
