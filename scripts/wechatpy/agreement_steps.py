# SPDX-License-Identifier: Apache-2.0
"""The agreement scenario: wechatpy as the merchant's client against the simulator, step by step.

Each step records what wechatpy saw and what the simulator's control panel says happened. Steps run
in order and share orders (A: MD5, paid and refunded; B: HMAC-SHA256; C: closed; D: duplicated
notify; S: sandbox); a step that crashes is a disagreement and the rest still run.
"""
import subprocess
import traceback
from collections import Counter
from datetime import datetime, timedelta, timezone

from wechatpy.exceptions import WeChatPayException
from wechatpy.pay import WeChatPay
from wechatpy.pay.utils import calculate_signature_hmac

from agreement_report import EXPECTED
from agreement_signatures import HMAC, MD5

BEIJING = timezone(timedelta(hours=8))
NOTIFY_TIMEOUT = 20.0
# The fields WeChat's pages list as always present in a successful answer (doc §2.2, §2.4, §2.5, §4.2, §5).
DOCUMENTED_FIELDS = {
    "payment notify": ["appid", "mch_id", "nonce_str", "sign", "result_code", "openid", "trade_type", "bank_type",
                       "total_fee", "cash_fee", "transaction_id", "out_trade_no", "time_end"],
    "orderquery (paid)": ["trade_state", "trade_type", "bank_type", "total_fee", "cash_fee", "transaction_id",
                          "out_trade_no", "time_end", "trade_state_desc", "openid"],
    "refund": ["transaction_id", "out_trade_no", "out_refund_no", "refund_id", "refund_fee", "total_fee", "cash_fee"],
    "refundquery": ["transaction_id", "out_trade_no", "total_fee", "cash_fee", "refund_count", "out_refund_no_0",
                    "refund_id_0", "refund_fee_0", "refund_status_0", "refund_recv_accout_0"],
    "refund notify req_info": ["transaction_id", "out_trade_no", "refund_id", "out_refund_no", "total_fee",
                               "refund_fee", "settlement_refund_fee", "refund_status", "success_time",
                               "refund_recv_accout", "refund_account", "refund_request_source"],
}


def describe_error(error):
    """What wechatpy raised, in one line."""
    if isinstance(error, WeChatPayException):
        if error.return_code is None:
            status = getattr(error.response, "status_code", "?")
            return f"WeChatPayException: HTTP {status}"
        parts = [f"return_code={error.return_code}"]
        if error.result_code:
            parts.append(f"result_code={error.result_code}")
        if error.errcode:
            parts.append(f"err_code={error.errcode}")
        elif error.return_msg:
            parts.append(f"return_msg={error.return_msg}")
        return "WeChatPayException " + " ".join(parts)
    return f"{type(error).__name__}: {str(error)[:80]}"


def attempt(call):
    """(result, None) or (None, exception): wechatpy reports business failures as exceptions."""
    try:
        return call(), None
    except Exception as error:  # every wechatpy and requests failure is a view to record
        return None, error


def order_view(order):
    if order is None:
        return "no such order"
    text = f"{order['state']}, {order['totalFee']} fen, {order['signType']}"
    for refund in order.get("refunds", []):
        text += f"; refund {refund['outRefundNo']} {refund['refundFee']} fen {refund['status']}"
    return text


class Agreement:
    def __init__(self, *, report, control, receiver, recorder, make_pay, merchant, gateway_binary, run_id):
        self.report = report
        self.control = control
        self.receiver = receiver
        self.recorder = recorder
        self.make_pay = make_pay  # make_pay(cert=None, sandbox=False) -> WeChatPay
        self.merchant = merchant  # dict: appid, mch_id, key
        self.gateway = gateway_binary
        self.pay = make_pay()
        self.pay_with_cert = make_pay(cert="merchant")
        self.sandbox = None
        self.a, self.b, self.c, self.d, self.s = (f"WPY{run_id}{suffix}" for suffix in "ABCDS")
        self.refund_a, self.refund_s = f"RWPY{run_id}A1", f"RWPY{run_id}S1"
        self.prepay = {}
        self.paid_days = {}  # out_trade_no -> Beijing bill date of its payment
        self.refund_days = {}  # out_refund_no -> Beijing bill date of its request
        self.deliberately_failed = 0
        self.documented = {}  # message kind -> documented fields it lacked
        self.injected = set()  # indexes of recorder exchanges whose answer a fault plan changed on purpose
        self.refund_notify = None
        self.refund_query = None
        self.a_times = None  # (time_start, time_expire) of order A, repeated on re-entry
        self.bill_day = None  # yyyyMMdd, Beijing
        self.bill_rows = []

    def _documented(self, kind, fields):
        missing = [name for name in DOCUMENTED_FIELDS[kind] if not fields.get(name)]
        self.documented.setdefault(kind, set()).update(missing)

    # MARK: - running

    def run(self):
        steps = [
            self.create_md5, self.create_hmac, self.reenter_identical, self.reenter_changed_amount,
            self.query_before_paying, self.pay_md5_order, self.query_after_paying, self.pay_hmac_order,
            self.close_too_early, self.close_after_five_minutes, self.close_paid_order,
            self.fault_bad_signature, self.fault_system_error, self.fault_duplicate_notify,
            self.refund_with_certificate, self.refund_without_certificate, self.refund_with_rogue_certificate,
            self.refund_query_processing, self.complete_refund, self.refund_query_success,
            self.refund_views_consistent,
            self.app_params_md5, self.app_params_hmac_order, self.sandbox_getsignkey, self.sandbox_refund,
            self.bill_before_generation, self.bill_after_generation, self.bill_empty_day, self.sandbox_isolation,
            self.request_counters, self.every_response_signature, self.every_notify, self.documented_fields,
        ]
        for step in steps:
            try:
                step()
            except Exception as error:
                detail = "".join(traceback.format_exception_only(type(error), error)).strip()
                self.report.add(step.__name__, f"step crashed: {detail[:160]}", "-", False)

    def _create(self, out_trade_no, total_fee, pay=None, **extra):
        pay = pay or self.pay
        return attempt(lambda: pay.order.create(
            trade_type="APP", body="Agreement-test goods", total_fee=total_fee, client_ip="127.0.0.1",
            notify_url=self.receiver.base_url + "/notify/pay", out_trade_no=out_trade_no, **extra))

    def _times(self):
        start = self.control.now().astimezone(BEIJING).replace(microsecond=0)
        return start, start + timedelta(hours=2)

    # MARK: - unifiedorder

    def create_md5(self):
        # Explicit time_start/time_expire, so the re-entry below can repeat every parameter.
        self.a_times = self._times()
        result, error = self._create(self.a, 101, attach="agreement", time_start=self.a_times[0],
                                     time_expire=self.a_times[1])
        order = self.control.order(self.a)
        if error:
            self.report.add("unifiedorder APP (MD5)", describe_error(error), order_view(order), False)
            return
        self.prepay[self.a] = result["prepay_id"]
        agree = order is not None and order["prepayID"] == result["prepay_id"] and order["state"] == "NOTPAY" \
            and order["totalFee"] == 101 and order["signType"] == MD5 and len(result.get("sign", "")) == 32
        self.report.add("unifiedorder APP (MD5)", f"SUCCESS, prepay_id {result['prepay_id']}",
                        f"{order_view(order)}, prepay_id {order and order['prepayID']}", agree)

    def create_hmac(self):
        # wechatpy's own defaults for time_start/time_expire (now and +2 h, Beijing time).
        result, error = self._create(self.b, 202, sign_type=HMAC)
        order = self.control.order(self.b)
        if error:
            self.report.add("unifiedorder APP (HMAC)", describe_error(error), order_view(order), False)
            return
        self.prepay[self.b] = result["prepay_id"]
        agree = order is not None and order["prepayID"] == result["prepay_id"] and order["signType"] == HMAC \
            and len(result.get("sign", "")) == 64
        self.report.add("unifiedorder APP (HMAC-SHA256)",
                        f"SUCCESS, prepay_id {result['prepay_id']}, 64-hex sign",
                        f"{order_view(order)}, prepay_id {order and order['prepayID']}", agree)

    def reenter_identical(self):
        result, error = self._create(self.a, 101, attach="agreement", time_start=self.a_times[0],
                                     time_expire=self.a_times[1])
        order = self.control.order(self.a)
        if error:
            self.report.add("re-entry, identical params", describe_error(error), order_view(order), False)
            return
        same = result["prepay_id"] == self.prepay.get(self.a) == (order or {}).get("prepayID")
        self.report.add("re-entry, identical params", f"SUCCESS, same prepay_id: {same}",
                        f"{order_view(order)}, prepay_id unchanged", same,
                        "Identical parameters (new nonce_str) re-enter the order (doc §2.1).")

    def reenter_changed_amount(self):
        result, error = self._create(self.a, 102, attach="agreement", time_start=self.a_times[0],
                                     time_expire=self.a_times[1])
        order = self.control.order(self.a)
        agree = result is None and isinstance(error, WeChatPayException) and error.errcode == "OUT_TRADE_NO_USED" \
            and order is not None and order["totalFee"] == 101
        self.report.add("re-entry, amount 101->102", describe_error(error) if error else f"SUCCESS {result}",
                        f"{order_view(order)} (amount kept)", agree)

    # MARK: - orderquery, notifies

    def query_before_paying(self):
        result, error = attempt(lambda: self.pay.order.query(out_trade_no=self.a))
        order = self.control.order(self.a)
        view = describe_error(error) if error else f"trade_state {result.get('trade_state')}"
        self.report.add("orderquery before paying", view, order_view(order),
                        result is not None and result.get("trade_state") == order["state"] == "NOTPAY")

    def _paid_view(self, notifies, order):
        first = notifies[0].fields if notifies else {}
        return (first.get("transaction_id") == order.get("transactionID")
                and first.get("total_fee") == str(order.get("totalFee"))
                and first.get("out_trade_no") == order.get("outTradeNo"))

    def pay_md5_order(self):
        # The first delivery is answered FAIL, so WeChat's retry (15 s later) is seen too.
        self.receiver.fail_first_attempt(self.a)
        status, snapshot = self.control.pay(self.a)
        first = self.receiver.wait_for("payment", self.a, 1, NOTIFY_TIMEOUT)
        self.deliberately_failed += 1
        self.control.advance(16)
        notifies = self.receiver.wait_for("payment", self.a, 2, NOTIFY_TIMEOUT)
        attempts = self.control.wait_for_notify_attempts("payment", self.a, 2, NOTIFY_TIMEOUT)
        order = self.control.order(self.a) or {}
        for notify in notifies:
            self._documented("payment notify", notify.fields)
        wechatpy_ok = len(notifies) == 2 and all(n.wechatpy_ok for n in notifies)
        independent_ok = len(notifies) == 2 and all(n.independent_ok for n in notifies)
        self.report.add(
            "payment notify (MD5 order)",
            f"{len(notifies)} received; " + "; ".join(f"{n.wechatpy_detail}, ours: {n.independent_detail}" for n in notifies[:1]),
            f"pay -> HTTP {status} {snapshot.get('state')}, transaction_id {order.get('transactionID')}",
            status == 200 and wechatpy_ok and independent_ok and self._paid_view(notifies, order))
        answers = [n.answered for n in notifies]
        acked = [a["acknowledged"] for a in attempts[:2]]
        gap = None
        if len(attempts) >= 2:
            at = [datetime.strptime(a["at"], "%Y-%m-%dT%H:%M:%SZ") for a in attempts[:2]]
            gap = (at[1] - at[0]).total_seconds()
        self.report.add(
            "notify retry after FAIL", f"receiver answered {answers}",
            f"attempts acknowledged {acked}, 2nd {gap} s after the 1st",
            len(first) == 1 and answers == ["FAIL", "SUCCESS"] and acked == [False, True]
            and gap is not None and gap >= 15,
            "WeChat retries 15 s after a FAIL reply (doc §4.5); the clock was advanced 16 s.")

    def query_after_paying(self):
        result, error = attempt(lambda: self.pay.order.query(out_trade_no=self.a))
        order = self.control.order(self.a) or {}
        if error:
            self.report.add("orderquery after paying", describe_error(error), order_view(order), False)
            return
        self.paid_days[self.a] = result.get("time_end", "")[:8]
        self._documented("orderquery (paid)", result)
        agree = result.get("trade_state") == order.get("state") == "SUCCESS" \
            and result.get("transaction_id") == order.get("transactionID") \
            and result.get("total_fee") == "101" and result.get("attach") == "agreement"
        self.report.add("orderquery after paying",
                        f"trade_state {result.get('trade_state')}, {result.get('total_fee')} fen, "
                        f"transaction_id {result.get('transaction_id')}",
                        f"{order_view(order)}, transaction_id {order.get('transactionID')}", agree)
        by_id, error = attempt(lambda: self.pay.order.query(transaction_id=order.get("transactionID")))
        self.report.add("orderquery by transaction_id",
                        describe_error(error) if error else f"out_trade_no {by_id.get('out_trade_no')}",
                        f"transaction_id belongs to {order.get('outTradeNo')}",
                        by_id is not None and by_id.get("out_trade_no") == self.a)

    def pay_hmac_order(self):
        status, snapshot = self.control.pay(self.b)
        notifies = self.receiver.wait_for("payment", self.b, 1, NOTIFY_TIMEOUT)
        order = self.control.order(self.b) or {}
        result, _ = attempt(lambda: self.pay.order.query(out_trade_no=self.b, ))
        if result:
            self.paid_days[self.b] = result.get("time_end", "")[:8]
        if not notifies:
            self.report.add("payment notify (HMAC order)", "no notify received", order_view(order), False)
            return
        notify = notifies[0]
        self._documented("payment notify", notify.fields)
        view = f"{notify.wechatpy_detail}; ours: {notify.independent_detail}"
        sim = f"pay -> HTTP {status} {snapshot.get('state')}; notify HMAC-signed, sign_type " \
              f"{notify.declared_sign_type or 'absent'}"
        if notify.independent_ok and not notify.wechatpy_ok and "HMAC" in notify.independent_detail:
            self.report.add("payment notify (HMAC order)", view, sim, EXPECTED,
                            "wechatpy's parse_payment_result verifies every notify with MD5 "
                            "(doc §7.1), but WeChat signs an HMAC-SHA256 order's notify with HMAC-SHA256, "
                            "often without sign_type (doc §1.2, §4.3: WxJava #1585/#1633). The simulator "
                            "follows WeChat; a wechatpy merchant ordering with HMAC-SHA256 would answer FAIL "
                            "to every genuine notify. The receiver answered after its own HMAC check.")
        else:
            self.report.add("payment notify (HMAC order)", view, sim,
                            notify.independent_ok and notify.wechatpy_ok and self._paid_view(notifies, order))

    # MARK: - closeorder

    def close_too_early(self):
        _, error = self._create(self.c, 303)
        if error:
            self.report.add("closeorder within 5 min", f"create failed: {describe_error(error)}", "-", False)
            return
        result, error = attempt(lambda: self.pay.order.close(self.c))
        order = self.control.order(self.c)
        agree = isinstance(error, WeChatPayException) and error.errcode == "INVALID_REQUEST" \
            and order is not None and order["state"] == "NOTPAY"
        self.report.add("closeorder within 5 min", describe_error(error) if error else f"SUCCESS {result}",
                        f"{order_view(order)} (not closed)", agree,
                        "WeChat says not to close within 5 minutes of creation (doc §2.3) but not what it "
                        "answers; INVALID_REQUEST is the simulator's choice.")

    def close_after_five_minutes(self):
        self.control.advance(301)
        result, error = attempt(lambda: self.pay.order.close(self.c))
        order = self.control.order(self.c)
        self.report.add("closeorder after +301 s", describe_error(error) if error else
                        f"result_code {result.get('result_code')}", order_view(order),
                        error is None and order is not None and order["state"] == "CLOSED")
        queried, error = attempt(lambda: self.pay.order.query(out_trade_no=self.c))
        self.report.add("orderquery closed order", describe_error(error) if error else
                        f"trade_state {queried.get('trade_state')}", order_view(order),
                        queried is not None and queried.get("trade_state") == "CLOSED")

    def close_paid_order(self):
        result, error = attempt(lambda: self.pay.order.close(self.a))
        order = self.control.order(self.a)
        self.report.add("closeorder of a paid order", describe_error(error) if error else f"SUCCESS {result}",
                        order_view(order), isinstance(error, WeChatPayException) and error.errcode == "ORDERPAID"
                        and order is not None and order["state"] == "SUCCESS")

    # MARK: - refunds

    def _refund(self, pay, out_refund_no, refund_fee=60):
        return attempt(lambda: pay.refund.apply(
            total_fee=101, refund_fee=refund_fee, out_refund_no=out_refund_no, out_trade_no=self.a,
            refund_desc="agreement", notify_url=self.receiver.base_url + "/notify/refund"))

    def refund_with_certificate(self):
        result, error = self._refund(self.pay_with_cert, self.refund_a)
        self.refund_days[self.refund_a] = self.control.now().astimezone(BEIJING).strftime("%Y%m%d")
        order = self.control.order(self.a) or {}
        refunds = order.get("refunds", [])
        if error:
            self.report.add("refund with client cert", describe_error(error), order_view(order), False)
            return
        self._documented("refund", result)
        agree = order.get("state") == "REFUND" and len(refunds) == 1 \
            and refunds[0]["refundID"] == result.get("refund_id") and refunds[0]["status"] == "PROCESSING" \
            and result.get("refund_fee") == "60"
        self.report.add("refund with client cert", f"SUCCESS, refund_id {result.get('refund_id')}, "
                        f"refund_fee {result.get('refund_fee')}", order_view(order), agree)

    def refund_without_certificate(self):
        result, error = self._refund(self.pay, self.refund_a + "X")
        order = self.control.order(self.a) or {}
        status = getattr(getattr(error, "response", None), "status_code", None)
        agree = result is None and status == 400 and len(order.get("refunds", [])) == 1
        self.report.add("refund without client cert", describe_error(error) if error else f"SUCCESS {result}",
                        f"answered 400 'No required SSL certificate was sent'; {order_view(order)}", agree,
                        "WeChat's front end answers HTTP 400 without the merchant certificate (doc §2.4); "
                        "wechatpy surfaces it as WeChatPayException with return_code None.")

    def refund_with_rogue_certificate(self):
        result, error = self._refund(self.make_pay(cert="rogue"), self.refund_a + "Y")
        order = self.control.order(self.a) or {}
        self.report.add("refund, cert of another CA", describe_error(error) if error else f"SUCCESS {result}",
                        f"refused; {order_view(order)}", result is None and len(order.get("refunds", [])) == 1)

    def refund_query_processing(self):
        result, error = attempt(lambda: self.pay.refund.query(out_refund_no=self.refund_a))
        order = self.control.order(self.a) or {}
        refunds = order.get("refunds", [])
        view = describe_error(error) if error else \
            f"refund_status_0 {result.get('refund_status_0')}, refund_count {result.get('refund_count')}"
        self.report.add("refundquery while processing", view, order_view(order),
                        result is not None and refunds and result.get("refund_status_0") == refunds[0]["status"]
                        == "PROCESSING" and result.get("refund_id_0") == refunds[0]["refundID"])

    def complete_refund(self):
        status, snapshot = self.control.complete_refund(self.refund_a)
        notifies = self.receiver.wait_for("refund", self.refund_a, 1, NOTIFY_TIMEOUT)
        attempts = self.control.wait_for_notify_attempts("refund", self.refund_a, 1, NOTIFY_TIMEOUT)
        order = self.control.order(self.a) or {}
        if not notifies:
            self.report.add("refund notify", "no notify received", order_view(order), False)
            return
        notify = notifies[0]
        inner = notify.fields
        self.refund_notify = inner
        self._documented("refund notify req_info", inner)
        agree = status == 200 and notify.wechatpy_ok and notify.independent_ok \
            and inner.get("refund_status") == "SUCCESS" and inner.get("refund_fee") == "60" \
            and inner.get("out_trade_no") == self.a and inner.get("refund_id") == order["refunds"][0]["refundID"] \
            and attempts and attempts[0]["acknowledged"]
        self.report.add("refund notify (req_info)",
                        f"{notify.wechatpy_detail}; ours: decrypted, refund_fee {inner.get('refund_fee')}",
                        f"complete -> HTTP {status}; {order_view(order)}; acknowledged "
                        f"{attempts[0]['acknowledged'] if attempts else None}", agree)

    def refund_query_success(self):
        result, error = attempt(lambda: self.pay.refund.query(out_trade_no=self.a))
        order = self.control.order(self.a) or {}
        if result:
            self.refund_query = result
            self._documented("refundquery", result)
        view = describe_error(error) if error else \
            f"refund_status_0 {result.get('refund_status_0')}, success_time {result.get('refund_success_time_0')}"
        self.report.add("refundquery after success", view, order_view(order),
                        result is not None and result.get("refund_status_0") == "SUCCESS"
                        and bool(result.get("refund_success_time_0")) and result.get("total_refund_count") == "1")

    def refund_views_consistent(self):
        """The refund notify and refundquery describe one refund; wechatpy asked for unsettled funds."""
        notify, query = self.refund_notify or {}, self.refund_query or {}
        requested = "REFUND_SOURCE_UNSETTLED_FUNDS"  # wechatpy's refund.apply default
        pairs = [("refund_account", notify.get("refund_account"), query.get("refund_account_0")),
                 ("refund_recv_accout", notify.get("refund_recv_accout"), query.get("refund_recv_accout_0"))]
        differ = [name for name, a, b in pairs if a != b]
        self.report.add(
            "refund notify vs refundquery",
            "notify: " + ", ".join(f"{name} {a}" for name, a, _ in pairs),
            "refundquery: " + ", ".join(f"{name}_0 {b}" for name, _, b in pairs),
            bool(notify) and bool(query) and not differ and query.get("refund_account_0") == requested,
            f"wechatpy requested refund_account={requested}. One refund should carry one funds source and "
            "one receiving account in both places; the documented example of refund_recv_accout is "
            "'支付用户零钱' (doc §5)." + (f" Differing: {', '.join(differ)}." if differ else ""))

    # MARK: - fault plan

    def _with_fault(self, plan, call):
        """Runs call under a fault plan, marking the exchanges it caused as deliberately faulted."""
        self.control.set_faults(plan)
        before = len(self.recorder.exchanges)
        try:
            return attempt(call)
        finally:
            self.injected.update(range(before, len(self.recorder.exchanges)))
            self.control.set_faults({})

    def fault_bad_signature(self):
        plan = {"endpoints": {"/pay/orderquery": {"badSignatureRate": 1}}}
        before = len(self.recorder.exchanges)
        result, error = self._with_fault(plan, lambda: self.pay.order.query(out_trade_no=self.a))
        checks = [self.recorder.check(index, self.merchant["key"], None)
                  for index in range(before, len(self.recorder.exchanges))]
        caught = [c for c in checks if c.kind == "signed-bad"]
        stats = self.control.stats().get("faultsInjected", {})
        if result is not None and caught:
            self.report.add("fault: corrupted response sign", "accepted: trade_state "
                            f"{result.get('trade_state')} (no response check); ours: {caught[0].detail}",
                            f"badSignatureRate 1 on /pay/orderquery; faults injected {stats}", EXPECTED,
                            "wechatpy never verifies response signatures (doc §7.1, 'response sign check ✘'); "
                            "WeChat's rules say to verify sign before reading result_code (doc §2.0). The "
                            "simulator corrupted the sign on purpose; the independent check caught it.")
        else:
            self.report.add("fault: corrupted response sign", describe_error(error) if error else "accepted",
                            f"faults injected {stats}", False)

    def fault_system_error(self):
        plan = {"endpoints": {"/pay/orderquery": {"systemErrorRate": 1}}}
        before = len(self.recorder.exchanges)
        _, error = self._with_fault(plan, lambda: self.pay.order.query(out_trade_no=self.a))
        checks = [self.recorder.check(index, self.merchant["key"], None)
                  for index in range(before, len(self.recorder.exchanges))]
        signed = bool(checks) and all(c.kind == "signed-ok" for c in checks)
        self.report.add("fault: SYSTEMERROR", describe_error(error) if error else "SUCCESS",
                        f"systemErrorRate 1 on /pay/orderquery; answer signed and valid: {signed}",
                        isinstance(error, WeChatPayException) and error.errcode == "SYSTEMERROR" and signed)

    def fault_duplicate_notify(self):
        _, error = self._create(self.d, 404)
        self.control.set_faults({"notify": {"duplicateRate": 1, "duplicateCopies": 2}})
        try:
            status, _ = self.control.pay(self.d)
            notifies = self.receiver.wait_for("payment", self.d, 2, NOTIFY_TIMEOUT)
            attempts = self.control.wait_for_notify_attempts("payment", self.d, 1, NOTIFY_TIMEOUT)
        finally:
            self.control.set_faults({})
        queried, _ = attempt(lambda: self.pay.order.query(out_trade_no=self.d))
        if queried:
            self.paid_days[self.d] = queried.get("time_end", "")[:8]
        same = len(notifies) == 2 and notifies[0].fields == notifies[1].fields
        view = f"{len(notifies)} copies received, identical: {same}, wechatpy accepted " \
            f"{sum(n.wechatpy_ok for n in notifies)}"
        self.report.add("fault: duplicate notify", f"create: {describe_error(error)}; {view}" if error else view,
                        f"duplicateRate 1: attempt 1 sent {attempts[0]['copies'] if attempts else 0} copies "
                        "concurrently", error is None and status == 200 and same and all(n.wechatpy_ok for n in notifies)
                        and attempts and attempts[0]["copies"] == 2,
                        "WeChat may deliver one notify several times at once (doc §4.1, §6.4).")

    # MARK: - APP client parameters

    def _gateway_sign(self, params, sign_type):
        arguments = [self.gateway, "sign", "--key", self.merchant["key"], "--sign-type", sign_type]
        arguments += [f"{name}={value}" for name, value in params.items() if name != "sign"]
        done = subprocess.run(arguments, capture_output=True, text=True, timeout=30, check=False)
        return done.stdout.strip() if done.returncode == 0 else f"(sign exited {done.returncode})"

    def app_params_md5(self):
        params = self.pay.order.get_appapi_params(self.prepay[self.a])
        ours = self._gateway_sign(params, MD5)
        self.report.add("get_appapi_params (MD5 order)", f"sign {params['sign']}",
                        f"wxpay-gateway sign: {ours}", params["sign"] == ours,
                        "The six lowercase keys appid, partnerid, prepayid, package, noncestr, timestamp (doc §3).")

    def app_params_hmac_order(self):
        params = self.pay.order.get_appapi_params(self.prepay[self.b])
        ours = self._gateway_sign(params, HMAC)
        theirs_hmac = calculate_signature_hmac({k: v for k, v in params.items() if k != "sign"}, self.merchant["key"])
        if params["sign"] != ours and theirs_hmac == ours and len(params["sign"]) == 32:
            self.report.add("get_appapi_params (HMAC order)", f"MD5 sign {params['sign']}",
                            f"HMAC-SHA256 sign {ours[:16]}...", EXPECTED,
                            "WeChat requires the APP re-sign to use the unifiedorder's algorithm (doc §3, "
                            "APP 调起支付); wechatpy's get_appapi_params always signs MD5. Our HMAC-SHA256 "
                            "equals wechatpy's calculate_signature_hmac over the same six fields, so only the "
                            "algorithm choice differs; the gateway follows the documentation.")
        else:
            self.report.add("get_appapi_params (HMAC order)", f"sign {params['sign']}",
                            f"wxpay-gateway sign (HMAC-SHA256): {ours}", params["sign"] == ours)

    # MARK: - sandbox

    def sandbox_getsignkey(self):
        self.sandbox = self.make_pay(sandbox=True)
        key, error = attempt(lambda: self.sandbox.sandbox_api_key)
        if error or not key:
            self.report.add("sandbox getsignkey", describe_error(error) if error else "no sandbox_signkey", "-", False)
            return
        # The sandbox key is proven by use: an MD5 sandbox unifiedorder signed with it.
        result, error = self._create(self.s, 101, pay=self.sandbox)
        order = self.control.order(self.s)
        self.report.add("sandbox getsignkey + order",
                        f"key of {len(key)} chars (differs from production: {key != self.merchant['key']}); "
                        + (describe_error(error) if error else f"sandbox unifiedorder SUCCESS"),
                        order_view(order), error is None and order is not None and key != self.merchant["key"]
                        and order["signType"] == MD5)

    def sandbox_refund(self):
        if self.sandbox is None or self.control.order(self.s) is None:
            self.report.add("sandbox refund", "no sandbox order", "-", False)
            return
        self.control.pay(self.s)
        self.receiver.wait_for("payment", self.s, 1, NOTIFY_TIMEOUT)
        _, error = attempt(lambda: self.sandbox.refund.apply(
            total_fee=101, refund_fee=101, out_refund_no=self.refund_s, out_trade_no=self.s))
        order = self.control.order(self.s) or {}
        status = getattr(getattr(error, "response", None), "status_code", None)
        if error is not None and status == 404:
            self.report.add("sandbox refund (wechatpy path)", f"{describe_error(error)} at /sandboxnew/secapi/pay/refund",
                            f"serves /sandboxnew/pay/refund; {order_view(order)}", EXPECTED,
                            "wechatpy prefixes every path with sandboxnew/, so its sandbox refund goes to "
                            "/sandboxnew/secapi/pay/refund; the sandbox refund is /sandboxnew/pay/refund with no "
                            "secapi (doc §2.7, from a blog mirror of WeChat's sandbox page, not an official page). "
                            "The simulator follows that path.")
        else:
            self.report.add("sandbox refund (wechatpy path)", describe_error(error) if error else "SUCCESS",
                            order_view(order), False)
        # The documented path, still through wechatpy's request signing (sandbox key, MD5).
        url = self.sandbox.API_BASE_URL + "sandboxnew/pay/refund"
        result, error = attempt(lambda: self.sandbox.post(url, data={
            "appid": self.merchant["appid"], "out_trade_no": self.s, "out_refund_no": self.refund_s,
            "total_fee": 101, "refund_fee": 101}))
        self.refund_days[self.refund_s] = self.control.now().astimezone(BEIJING).strftime("%Y%m%d")
        order = self.control.order(self.s) or {}
        refunds = order.get("refunds", [])
        self.report.add("sandbox refund (doc path)", describe_error(error) if error else
                        f"SUCCESS, refund_id {result.get('refund_id')}", order_view(order),
                        result is not None and len(refunds) == 1 and refunds[0]["refundID"] == result.get("refund_id"))
        queried, _ = attempt(lambda: self.sandbox.order.query(out_trade_no=self.s))
        if queried:
            self.paid_days[self.s] = queried.get("time_end", "")[:8]

    # MARK: - downloadbill

    def bill_before_generation(self):
        self.bill_day = self.paid_days.get(self.a) or self.control.now().astimezone(BEIJING).strftime("%Y%m%d")
        _, error = attempt(lambda: self.pay.tools.download_bill(self.bill_day))
        now = self.control.now().astimezone(BEIJING)
        self.report.add("downloadbill before D+1 09:00", describe_error(error) if error else "a bill",
                        f"Beijing time {now:%Y-%m-%d %H:%M}, bill for {self.bill_day} not generated",
                        isinstance(error, WeChatPayException) and error.return_msg == "Bill Creating",
                        "Bills for day D exist from D+1 09:00 Beijing time; before that 'Bill Creating' (doc §2.6).")

    def bill_after_generation(self):
        day = datetime.strptime(self.bill_day, "%Y%m%d").replace(tzinfo=BEIJING)
        target = day + timedelta(days=1, hours=9, seconds=30)
        now = self.control.now()
        self.control.advance(max(0, (target - now).total_seconds()))
        text, error = attempt(lambda: self.pay.tools.download_bill(self.bill_day))
        if error or not isinstance(text, str):
            self.report.add("downloadbill after D+1 09:00", describe_error(error) if error else repr(text)[:80],
                            "-", False)
            return
        rows, summary = parse_bill(text)
        self.bill_rows = rows
        seen = sorted((r.get("商户订单号", ""), r.get("交易状态", ""), r.get("商户退款单号", "")) for r in rows)
        expected = []
        # The sandbox order S lives in the sandbox's own books and never shows in a production bill.
        for number in (self.a, self.b, self.c, self.d):
            order = self.control.order(number)
            if order and order.get("transactionID") and self.paid_days.get(number) == self.bill_day:
                expected.append((number, "SUCCESS", ""))
            for refund in (order or {}).get("refunds", []):
                if self.refund_days.get(refund["outRefundNo"]) == self.bill_day:
                    expected.append((number, "REFUND", refund["outRefundNo"]))
        expected.sort()
        count_ok = summary.get("总交易单数") == str(len(rows)) and all(None not in row for row in rows) \
            and all(len(row) == len(rows[0]) for row in rows)
        self.report.add("downloadbill after D+1 09:00",
                        f"{len(rows)} rows: " + ", ".join(f"{n[-1]} {s}{' ' + r if r else ''}" for n, s, r in seen)
                        + f"; summary count {summary.get('总交易单数')}",
                        f"{len(expected)} expected: " + ", ".join(f"{n[-1]} {s}{' ' + r if r else ''}"
                                                                  for n, s, r in expected),
                        seen == expected and count_ok,
                        "The unpaid and closed order C is absent; refunds appear on their request day (doc §2.6).")

    def bill_empty_day(self):
        day = (datetime.strptime(self.bill_day, "%Y%m%d") - timedelta(days=1)).strftime("%Y%m%d")
        _, error = attempt(lambda: self.pay.tools.download_bill(day))
        self.report.add("downloadbill, day without trades", describe_error(error) if error else "a bill",
                        f"no payment or refund on {day}",
                        isinstance(error, WeChatPayException) and error.return_msg == "No Bill Exist")

    def sandbox_isolation(self):
        """Sandbox orders should stay out of production answers (doc §2.7: sandbox data is isolated)."""
        result, error = attempt(lambda: self.pay.order.query(out_trade_no=self.s))
        in_bill = [r for r in self.bill_rows if r.get("商户订单号") == self.s]
        query_view = describe_error(error) if error else f"trade_state {result.get('trade_state')}"
        self.report.add("sandbox isolated from production",
                        f"production orderquery of sandbox order: {query_view}; production bill rows for it: "
                        f"{len(in_bill)}", "one order book for /pay/... and /sandboxnew/pay/...",
                        isinstance(error, WeChatPayException) and error.errcode == "ORDERNOTEXIST" and not in_bill,
                        "The sandbox ('仿真测试系统') is a separate system whose data is fake and isolated (doc "
                        "§2.7, doc mirror): an order created at /sandboxnew/pay/unifiedorder should not be found by "
                        "the production /pay/orderquery nor listed in the production /pay/downloadbill.")

    # MARK: - whole-run checks

    def request_counters(self):
        stats = self.control.stats()
        counted = dict(stats.get("requests", {}))
        sent = Counter(e.path for e in self.recorder.exchanges if e.path in counted)
        # A path the simulator does not serve is answered 404 by the HTTP router and never counted.
        unserved = [e for e in self.recorder.exchanges if e.path not in counted]
        self.report.add("request counts per path", f"{sum(sent.values())} API responses over {len(sent)} paths"
                        + (f" (+{len(unserved)} router 404: {', '.join(sorted({e.path for e in unserved}))})"
                           if unserved else ""),
                        f"{sum(counted.values())} counted; nonces reused: {stats.get('reusedNonces')}",
                        dict(sent) == counted and stats.get("reusedNonces") == 0
                        and all(e.status == 404 for e in unserved))

    def every_response_signature(self):
        sandbox_key = self.sandbox._sandbox_api_key if self.sandbox else None
        checks = [self.recorder.check(index, self.merchant["key"], sandbox_key)
                  for index in range(len(self.recorder.exchanges)) if index not in self.injected]
        kinds = Counter(check.kind for check in checks)
        signed_types = Counter(check.detail.split()[0] for check in checks if check.kind == "signed-ok")
        bad = [check for check in checks if check.kind in ("signed-bad", "unsigned-undocumented")]
        for check in bad:
            self.report.add("response signature", f"{check.exchange.path}: {check.detail}",
                            f"HTTP {check.exchange.status}", False)
        self.report.add("every response's signature",
                        f"{len(checks)} responses checked with calculate_signature(_hmac) "
                        f"(+{len(self.injected)} deliberately faulted, above)",
                        f"{kinds['signed-ok']} signed and valid ({dict(signed_types)}), "
                        f"{kinds['unsigned-documented']} unsigned FAIL/getsignkey, {kinds['not-xml']} not XML "
                        f"(bill text, HTTP 400/404)", not bad and kinds["signed-ok"] > 0)

    def every_notify(self):
        received = self.receiver.received()
        history = self.control.notifies()
        delivered = sum(a["copies"] for a in history if not a["dropped"])
        independent_bad = [n for n in received if not n.independent_ok]
        hmac_orders = {self.b}
        wechatpy_bad = [n for n in received if not n.wechatpy_ok and n.reference not in hmac_orders]
        unacked = [a for a in history if not a["acknowledged"]]
        self.report.add("every notify", f"{len(received)} received; wechatpy rejected "
                        f"{len(received) - sum(n.wechatpy_ok for n in received)} (HMAC order only: "
                        f"{not wechatpy_bad}); our check rejected {len(independent_bad)}",
                        f"{len(history)} attempts, {delivered} copies sent, {len(unacked)} unacknowledged "
                        f"(deliberate: {self.deliberately_failed})",
                        len(received) == delivered and not independent_bad and not wechatpy_bad
                        and len(unacked) == self.deliberately_failed)

    def documented_fields(self):
        checked = sorted(self.documented)
        gaps = {kind: sorted(missing) for kind, missing in self.documented.items() if missing}
        self.report.add("documented fields present", f"checked in: {', '.join(checked)}",
                        "missing: " + ("; ".join(f"{k}: {', '.join(v)}" for k, v in gaps.items()) or "none"),
                        len(checked) == len(DOCUMENTED_FIELDS) and not gaps)


def parse_bill(text):
    """Detail rows and the summary of a WeChat bill, as dicts keyed by the Chinese column names.

    Every value starts with a backtick; splitting on ",`" keeps commas inside values intact (§2.6)."""
    lines = [line for line in text.replace("\r\n", "\n").split("\n") if line.strip()]
    if len(lines) < 3:
        return [], {}
    header = lines[0].lstrip("\ufeff").split(",")
    summary_at = next((i for i in range(1, len(lines)) if not lines[i].startswith("`")), len(lines))

    def values(line):
        return [value[1:] if value.startswith("`") else value for value in line[1:].split(",`")]

    rows = [dict(zip(header, values(line))) for line in lines[1:summary_at]]
    summary = {}
    if summary_at + 1 < len(lines):
        summary = dict(zip(lines[summary_at].split(","), values(lines[summary_at + 1])))
    return rows, summary
