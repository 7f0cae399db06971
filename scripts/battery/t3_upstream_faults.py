# SPDX-License-Identifier: Apache-2.0
"""T3 upstream faults: client calls (creates, `wait` queries, closes) while a quarter of every
upstream call is faulted in each way the simulator knows: connection resets, timeouts (the
answer held past the gateway's 10 s), HTTP 502, SYSTEMERROR, truncated XML, non-UTF-8 XML, a
wrong or missing response signature, and (orderquery) a correctly signed answer about another
order, a paid one when there is one.

Every answer must be the truth (what WeChat holds, or an earlier state not yet final) or a typed
retryable error: 503 `upstream_unavailable` with `retry_after` in the body and the `Retry-After`
header (409 `close_too_early` for a close, typed too). Never a 500, never a dropped connection,
never SUCCESS for an order WeChat does not hold paid. A client retrying each failed create with
the same body ends with every order created exactly once (one row, one `created` event, one
prepay_id, the same at WeChat), WeChat sees no OUT_TRADE_NO_USED, and every unifiedorder the
gateway sent carried the order's one parameter set. Afterwards the gateway's descriptors, sockets,
threads and RSS are back within 10 % of what a fault-free warm-up left, and its
`wxpay_upstream_*` metrics add up to the simulator's own request and fault counts per API.
"""
import json
import math
import random
import threading
import time

import checker
import probes
from rig import CLIENT_TOKEN, Client, create_body, parallel

SCALES = {
    # orders (a tenth of them closed), fault-free warm-up orders (as many: what the same load leaves
    # in memory without faults is the "before"), client calls at least
    "full":    dict(orders=6600, warmup=6600, calls=20000),
    "reduced": dict(orders=600, warmup=600, calls=1500),
}
FAULT_RATE = 0.25
HOLD = 12           # seconds the simulator holds a timed-out answer (the gateway gives up at 10)
WORKERS = 64
RETRYABLE = {(503, "upstream_unavailable"), (409, "close_too_early")}
FINAL = ("SUCCESS", "CLOSED", "REFUND", "PAYERROR", "REVOKED")


def fault_plan():
    """25 % of each API's answers, split evenly over the kinds its answers can carry."""
    without_other = probes.DRAW_ORDER[:-1]
    return {"endpoints": {
        "/pay/unifiedorder": probes.equal_shares(FAULT_RATE, without_other, timeoutSeconds=HOLD),
        "/pay/closeorder": probes.equal_shares(FAULT_RATE, without_other, timeoutSeconds=HOLD),
        "/pay/orderquery": probes.equal_shares(FAULT_RATE, probes.DRAW_ORDER, timeoutSeconds=HOLD),
    }, "notify": {"dropRate": 0.5}}


class Answers:
    """Every answer the clients got, in the order each client got them."""

    def __init__(self):
        self.lock = threading.Lock()
        self.all = []

    def add(self, **answer):
        with self.lock:
            self.all.append(answer)
        return answer


class Driver:
    def __init__(self, rig, gateway, seed, deadline):
        self.rig, self.gateway, self.deadline = rig, gateway, deadline
        self.client = Client(timeout=120)       # a create may spend 3 × 10 s on timeouts upstream
        self.answers = Answers()
        self.seed = seed

    def call(self, kind, number, method, path, body=None):
        sent = time.monotonic()
        status, payload, headers = self.client.exchange(
            self.gateway.base, method, path, body=json.dumps(body) if body else None, token=CLIENT_TOKEN,
            headers={"Content-Type": "application/json"} if body else None)
        try:
            data = json.loads(payload) if payload else {}
        except ValueError:
            data = {"unparsed": payload[:200].decode(errors="replace")}
        error = data.get("error") if isinstance(data, dict) else None
        return self.answers.add(
            kind=kind, number=number, sent=sent, received=time.monotonic(), status=status,
            code=(error or {}).get("code"), retry_after=(error or {}).get("retry_after"),
            retry_after_header=headers.get("retry-after"), state=None if error else data.get("state"),
            prepay_id=None if error else data.get("prepay_id"), amount=None if error else data.get("amount"),
            transaction_id=None if error else data.get("transaction_id"))

    def backoff(self, answer):
        """Waits as the answer asks (a typed error's retry_after), else a second."""
        delay = answer["retry_after"] if answer["retry_after"] else 1
        time.sleep(min(10, max(0.05, delay)))

    def create(self, number, amount):
        body = create_body(number, amount)
        while time.monotonic() < self.deadline:
            answer = self.call("create", number, "POST", "/v1/orders", body)
            if answer["status"] in (200, 201):
                return True
            self.backoff(answer)
        return False

    def close(self, number):
        while time.monotonic() < self.deadline:
            answer = self.call("close", number, "POST", f"/v1/orders/{number}/close")
            if answer["status"] == 200 and answer["state"] in FINAL:
                return answer["state"]
            self.backoff(answer)
        return None

    def polls(self, number, paid):
        """A paying client waits for SUCCESS (a few `wait=3`), an unpaid one asks once with
        `wait=1`; both then read the order once more."""
        for _ in range(6 if paid else 1):
            answer = self.call("wait", number, "GET", f"/v1/orders/{number}?wait={3 if paid else 1}")
            if answer["state"] in FINAL or time.monotonic() > self.deadline:
                break
        self.call("get", number, "GET", f"/v1/orders/{number}")

    def order(self, number, amount, paid):
        if not self.create(number, amount):
            return
        if paid:
            self.rig.pay(number)
        self.polls(number, paid)


def quiesce(rig, gateway, seconds):
    """Lets whatever the run left in flight end: held waits answered, held upstream answers given up."""
    probes.wait_until(lambda: probes.total(probes.metrics(rig, gateway), "wxpay_waits_open") == 0, 60)
    time.sleep(seconds)
    rig.client.close_all()


def run(rig, scale, seed, result):
    sizes = SCALES[scale]
    gateway = rig.gateway(reconcile_interval=2, reconcile_after=5)
    started = time.monotonic()
    deadline = started + 2400
    rng = random.Random(seed)
    driver = Driver(rig, gateway, seed, deadline)
    fresh = probes.process(gateway.proc.pid)

    # A fault-free warm-up of the same shape: what it leaves (connection caches, pools, the
    # database's pages) is the "before" the leak check compares with.
    warm = [f"t3-{seed}-w{i:05d}" for i in range(sizes["warmup"])]
    warm_paid = {n for n in warm if rng.random() < 0.5}
    parallel(warm, lambda n: driver.order(n, 700, n in warm_paid), workers=WORKERS, deadline=deadline)
    quiesce(rig, gateway, 3)
    before = probes.process(gateway.proc.pid)
    stats_before = rig.sim_stats()
    samples_before = probes.metrics(rig, gateway)
    driver.answers = Answers()

    rig.faults(fault_plan())
    numbers = [f"t3-{seed}-{i:05d}" for i in range(sizes["orders"])]
    closing = numbers[:len(numbers) // 10]
    rest = numbers[len(closing):]
    amount = {n: 100 + rng.randrange(9000) for n in numbers}
    paid = {n for n in numbers if rng.random() < 0.5}

    # The orders to close come first: WeChat (and the gateway) refuse a close within 5 minutes.
    parallel(closing, lambda n: driver.create(n, amount[n]), workers=WORKERS, deadline=deadline)
    window = time.monotonic() + 301
    parallel(rest, lambda n: driver.order(n, amount[n], n in paid), workers=WORKERS, deadline=deadline)
    time.sleep(max(0, window - time.monotonic()))

    def close(number):
        if number in paid:
            rig.pay(number)         # paid just before the close: closeorder answers ORDERPAID
        driver.close(number)
        driver.call("get", number, "GET", f"/v1/orders/{number}")
    parallel(closing, close, workers=WORKERS, deadline=deadline)
    load_seconds = round(time.monotonic() - started, 1)
    stats_faulted = rig.sim_stats()     # the requests made while the faults were on
    rig.faults({})
    wechat_paid = [n for n in numbers if n in paid]
    settled = checker.wait_until_paid(rig, wechat_paid, timeout=180)
    result.expect(settled == len(wechat_paid), f"{settled}/{len(wechat_paid)} paid orders SUCCESS after the faults")
    quiesce(rig, gateway, HOLD + 3)
    after = probes.process(gateway.proc.pid)
    # The sweeps go on meanwhile: WeChat's counts are read between two readings of the metrics.
    samples = probes.metrics(rig, gateway)
    stats = rig.sim_stats()
    samples_end = probes.metrics(rig, gateway)

    answers = driver.answers.all
    check_answers(rig, result, answers, numbers, amount, paid, closing)
    check_orders(rig, result, numbers, amount, stats, stats_before)
    check_metrics(result, samples, samples_end, samples_before, stats, stats_before, stats_faulted)
    check_resources(result, fresh, before, after)
    reported = {a["number"] for a in answers if a["state"] == "SUCCESS"}
    # C1–C5 over every order of the run, the warm-up's too (they were swept under the faults).
    figures, failures = checker.check(rig, warm + numbers, reported)
    result.failures += failures
    result.expect(len(answers) >= sizes["calls"], f"only {len(answers)} client calls")
    statuses = {}
    for a in answers:
        statuses[f"{a['kind']}_{a['status']}"] = statuses.get(f"{a['kind']}_{a['status']}", 0) + 1
    result.figures.update(
        figures, client_calls=len(answers), **{k: statuses[k] for k in sorted(statuses)},
        paid=len(wechat_paid), closes_paid=len(set(closing) & paid), closes_unpaid=len(set(closing) - paid),
        load_seconds=load_seconds, loadavg=probes.loadavg().replace(" ", "/"))


def check_answers(rig, result, answers, numbers, amount, paid, closing):
    """Each answer the truth or typed retryable; per order never back from SUCCESS (C1)."""
    sim = dict(zip(numbers, parallel(numbers, rig.sim_order, workers=16)))
    wrong, untyped, ghost, prepays = [], [], [], {}
    last_success = {}
    for a in sorted(answers, key=lambda a: a["sent"]):
        number, status, held = a["number"], a["status"], sim.get(a["number"]) or {}
        if status in (200, 201):
            if a["kind"] == "create":
                prepays.setdefault(number, set()).add(a["prepay_id"])
                if a["prepay_id"] != held.get("prepayID") or a["amount"] != amount[number]:
                    wrong.append((number, "create answered another prepay_id or amount"))
            state = a["state"]
            if state == "SUCCESS" and (held.get("state") not in ("SUCCESS", "REFUND")
                                       or held.get("totalFee") != amount[number]
                                       or a["transaction_id"] != held.get("transactionID")):
                ghost.append(number)
            if state == "CLOSED" and held.get("state") != "CLOSED":
                wrong.append((number, f"answered CLOSED, WeChat holds {held.get('state')}"))
            if state == "SUCCESS":
                last_success.setdefault(number, a["received"])
            elif number in last_success and a["sent"] > last_success[number]:
                wrong.append((number, f"C1: {state} after SUCCESS was answered"))
            if a["kind"] == "close" and state not in FINAL:
                wrong.append((number, f"a close answered {state}"))
        elif (status, a["code"]) in RETRYABLE and (a["kind"] != "wait" and a["kind"] != "get"):
            if not (isinstance(a["retry_after"], int) and a["retry_after"] >= 1
                    and a["retry_after_header"] == str(a["retry_after"])):
                untyped.append((number, status, a["code"], "without retry_after"))
            if a["code"] == "close_too_early" and a["kind"] != "close":
                untyped.append((number, status, a["code"]))
        else:
            untyped.append((number, status, a["code"], a["kind"]))
    two_prepays = [n for n, ids in prepays.items() if len(ids) > 1]
    closed_ok = sum(1 for n in closing if (sim.get(n) or {}).get("state") == ("SUCCESS" if n in paid else "CLOSED"))
    result.expect(not ghost, f"{len(ghost)} SUCCESS answers WeChat does not back, e.g. {ghost[:3]}")
    result.expect(not wrong, f"{len(wrong)} wrong answers, e.g. {wrong[:3]}")
    result.expect(not untyped, f"{len(untyped)} answers neither the truth nor typed retryable, e.g. {untyped[:3]}")
    result.expect(not two_prepays, f"{len(two_prepays)} orders answered two prepay_ids, e.g. {two_prepays[:3]}")
    result.expect(closed_ok == len(closing), f"{closed_ok}/{len(closing)} closed orders end as WeChat holds them")
    result.figures.update(answers_retryable=sum(1 for a in answers if (a["status"], a["code"]) in RETRYABLE),
                          answers_success_state=sum(1 for a in answers if a["state"] == "SUCCESS"),
                          answers_wrong=len(wrong) + len(ghost), answers_untyped=len(untyped))


def check_orders(rig, result, numbers, amount, stats, stats_before):
    """Every order created exactly once, here and at WeChat, with one parameter set."""
    prefix = numbers[0].rsplit("-", 1)[0] + "-"
    local = {r[0]: r[1:] for r in rig.sql(
        f"SELECT out_trade_no, amount, prepay_id FROM orders WHERE out_trade_no LIKE '{prefix}%'")}
    created = {r[0]: int(r[1]) for r in rig.sql(
        f"SELECT out_trade_no, COUNT(*) FROM order_events WHERE kind = 'created' AND out_trade_no LIKE '{prefix}%' "
        "GROUP BY out_trade_no")}
    prepay_events = {r[0]: int(r[1]) for r in rig.sql(
        f"SELECT out_trade_no, COUNT(*) FROM order_events WHERE kind = 'prepay' AND out_trade_no LIKE '{prefix}%' "
        "GROUP BY out_trade_no")}
    sim = dict(zip(numbers, parallel(numbers, rig.sim_order, workers=16)))
    missing = [n for n in numbers if n not in local or not sim.get(n)]
    twice = [n for n in numbers if created.get(n) != 1 or prepay_events.get(n) != 1]
    differ = [n for n in numbers if n in local and sim.get(n)
              and (int(local[n][0]) != amount[n] or sim[n].get("totalFee") != amount[n]
                   or local[n][1] != sim[n].get("prepayID"))]
    used = stats.get("businessFailures", {}).get("OUT_TRADE_NO_USED", 0)
    reused = stats.get("reusedNonces", 0) - stats_before.get("reusedNonces", 0)
    result.expect(not missing, f"{len(missing)} orders missing here or at WeChat, e.g. {missing[:3]}")
    result.expect(not twice, f"{len(twice)} orders created or given a prepay_id more than once, e.g. {twice[:3]}")
    result.expect(not differ, f"{len(differ)} orders differ from WeChat's, e.g. {differ[:3]}")
    result.expect(used == 0, f"WeChat answered OUT_TRADE_NO_USED {used} times")
    result.expect(reused == 0, f"{reused} nonce_str values were sent twice")
    result.figures.update(orders_created_once=len(numbers) - len(missing) - len(twice), out_trade_no_used=used,
                          business_failures=",".join(f"{k}:{v}" for k, v in sorted(stats.get("businessFailures", {}).items())))


# How the gateway labels a failed call, by the fault that caused it.
OUTCOME_OF_FAULT = {"reset": "transport", "timeout": "transport", "http_5xx": "http_status",
                    "systemerror": "business_error", "truncated": "malformed_response", "non_utf8": "malformed_response",
                    "bad_signature": "signature", "missing_signature": "signature", "other_order": "answer_mismatch"}


def outcome_group(outcome):
    if outcome.startswith("transport_"):
        return "transport"
    return "signature" if outcome in ("bad_sign", "missing_sign", "sign_type_mismatch", "unknown_sign_type") else outcome


def check_metrics(result, samples, samples_end, samples_before, stats, stats_before, stats_faulted):
    """wxpay_upstream_* against the simulator: calls = requests, failed calls = faults, per API and
    per kind of fault; the latency histogram counted every call. The sweeps go on while the counts
    are read (the gateway counts a call when it ends, WeChat when it arrives), so WeChat's count
    must lie between the gateway's just before and just after it; the faults stopped earlier."""
    for api, path in (("unifiedorder", "/pay/unifiedorder"), ("orderquery", "/pay/orderquery"),
                      ("closeorder", "/pay/closeorder")):
        def delta(name, at=samples, **labels):
            return probes.total(at, name, api=api, **labels) - probes.total(samples_before, name, api=api, **labels)
        calls, calls_end = delta("wxpay_upstream_calls_total"), delta("wxpay_upstream_calls_total", at=samples_end)
        timed = delta("wxpay_upstream_duration_seconds_count")
        requests = stats.get("requests", {}).get(path, 0) - stats_before.get("requests", {}).get(path, 0)
        faults = dict(stats.get("faultsByEndpoint", {}).get(path, {}))
        for kind, count in stats_before.get("faultsByEndpoint", {}).get(path, {}).items():
            faults[kind] -= count
        by_outcome = {}
        for name, labels, value in samples:
            if name == "wxpay_upstream_calls_total" and labels.get("api") == api and labels.get("outcome") != "success":
                earlier = probes.total(samples_before, name, api=api, outcome=labels["outcome"])
                group = outcome_group(labels["outcome"])
                by_outcome[group] = by_outcome.get(group, 0) + value - earlier
        by_fault = {}
        for kind, count in faults.items():
            by_fault[OUTCOME_OF_FAULT.get(kind, kind)] = by_fault.get(OUTCOME_OF_FAULT.get(kind, kind), 0) + count
        by_outcome = {k: int(v) for k, v in by_outcome.items() if v}
        by_fault = {k: v for k, v in by_fault.items() if v}
        result.expect(calls <= requests <= calls_end,
                      f"{api}: the gateway counted {calls:.0f}–{calls_end:.0f} calls, WeChat {requests} requests")
        result.expect(timed == calls, f"{api}: {timed:.0f} latencies observed for {calls:.0f} calls")
        result.expect(by_outcome == by_fault, f"{api}: failed calls {by_outcome} but faults injected {by_fault}")
        # The share of calls faulted while the faults were on (the sweeps went on after).
        faulted_requests = stats_faulted.get("requests", {}).get(path, 0) - stats_before.get("requests", {}).get(path, 0)
        share = sum(faults.values()) / faulted_requests if faulted_requests else 0
        if faulted_requests >= 400:
            result.expect(abs(share - FAULT_RATE) < 0.04, f"{api}: {share:.1%} of calls faulted, not ~25 %")
        result.figures[f"{api}_calls"] = int(calls)
        result.figures[f"{api}_faulted"] = f"{sum(faults.values())}({share:.1%})"
    result.figures["faults"] = ",".join(f"{k}:{v}" for k, v in sorted(
        (k, v - stats_before.get("faultsInjected", {}).get(k, 0)) for k, v in stats.get("faultsInjected", {}).items()))


def check_resources(result, fresh, before, after):
    """Descriptors, sockets, threads and RSS back within 10 % of what the same load without faults left."""
    for key in ("fds", "sockets", "threads", "rss_kib"):
        limit = math.ceil(before[key] * 1.10)
        result.expect(after[key] <= limit, f"{key}: {after[key]} after the run, {before[key]} before (limit {limit})")
    result.figures.update(fds=f"{before['fds']}->{after['fds']}", sockets=f"{before['sockets']}->{after['sockets']}",
                          threads=f"{before['threads']}->{after['threads']}",
                          rss_mib=f"{before['rss_kib'] / 1024:.1f}->{after['rss_kib'] / 1024:.1f}",
                          rss_fresh_mib=round(fresh["rss_kib"] / 1024, 1))


TESTS = {"T3": run}
