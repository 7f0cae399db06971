# SPDX-License-Identifier: Apache-2.0
"""reliability.md T11-T13: refunds against the real gateway process, over mutual TLS to a separate
simulator process that demands the merchant certificate its CA signed (the rig's `tls` mode).

T11 refund storm: concurrent partial refunds asking 150 % of each order, every request twice;
T12 refund crash: SIGKILLs between recording a refund and WeChat's answer, and after the refund
notify's commit; T13 forged refund notifies: nothing changes.
"""
import base64
import random
import threading
import time

import checker
from rig import API_KEY, CLIENT_TOKEN, create_body, parallel, payment_notify, refund_notify

SCALES = {
    #          T11 orders   T12 orders, kills   T13 copies of each forgery
    "full":    dict(t11=200, t12=(300, 40), t13=1000),
    "reduced": dict(t11=40, t12=(60, 10), t13=50),
}

# How each test's rig is made: the HTTPS simulator, and refunds completing by themselves (T11, T12).
RIGS = {"T11": dict(tls=True, refund_delay=1), "T12": dict(tls=True, refund_delay=0.5), "T13": dict(tls=True)}

ACK = "<return_code><![CDATA[SUCCESS]]></return_code>"
FAIL = "<return_code><![CDATA[FAIL]]></return_code>"


def paid_orders(rig, gateway, numbers, amount_of, deadline):
    """Creates every order and has WeChat take its payment; returns how many are SUCCESS locally."""
    def create_and_pay(number):
        while time.monotonic() < deadline:
            status, _ = rig.client.json(gateway.base, "POST", "/v1/orders", create_body(number, amount_of(number)),
                                        token=CLIENT_TOKEN)
            if status in (200, 201):
                return rig.pay(number)[0] == 200
            time.sleep(0.05)
        return False
    parallel(numbers, create_and_pay, workers=16, deadline=deadline)
    return checker.wait_until_paid(rig, numbers, timeout=120)


def request_refund(rig, gateway, outTradeNo, body, deadline):
    """POSTs the refund, the same request again while the gateway is unreachable or fails (a client's
    retry: same out_refund_no, same parameters); (status, json) of the answer, (0, None) at the deadline."""
    while time.monotonic() < deadline:
        gw = gateway() if callable(gateway) else gateway
        status, answer = rig.client.json(gw.base, "POST", f"/v1/orders/{outTradeNo}/refunds", body, token=CLIENT_TOKEN)
        if status in (200, 201, 409):
            return status, answer
        time.sleep(0.1)
    return 0, None


def local_refunds(rig):
    """out_refund_no -> (out_trade_no, amount, state), from the store."""
    return {r[0]: (r[1], int(r[2]), r[3]) for r in rig.sql("SELECT out_refund_no, out_trade_no, amount, state FROM refunds")}


def wait_for_refunds(rig, numbers, state, timeout):
    wanted = set(numbers)
    deadline = time.monotonic() + timeout
    while True:
        have = {n for n, (_, _, s) in local_refunds(rig).items() if s == state}
        if wanted <= have or time.monotonic() > deadline:
            return len(wanted & have)
        time.sleep(0.25)


def check_wechat_side(rig, result, accepted, orders):
    """Each refund number WeChat received came with one parameter set; WeChat holds exactly the
    accepted refunds, with the gateway's amounts; nothing else reached it."""
    requests = rig.sim_refund_requests()
    multi = {n: r for n, r in requests.items() if r["parameterSets"] != 1}
    result.expect(not multi, f"{len(multi)} refund numbers reached WeChat with more than one parameter set, e.g. "
                             f"{sorted(multi.items())[:3]}")
    stray = set(requests) - set(accepted)
    result.expect(not stray, f"{len(stray)} refund numbers reached WeChat that the gateway did not accept, e.g. {sorted(stray)[:3]}")
    at_wechat = {}
    for order in orders:
        for refund in (rig.sim_order(order) or {}).get("refunds", []):
            at_wechat[refund["outRefundNo"]] = (order, refund["refundFee"])
    result.expect(set(at_wechat) == set(accepted),
                  f"WeChat holds {len(at_wechat)} refunds, the gateway accepted {len(accepted)}")
    wrong = [n for n, (order, fee) in at_wechat.items() if accepted.get(n) != (order, fee)]
    result.expect(not wrong, f"{len(wrong)} refunds differ between WeChat and the gateway, e.g. {wrong[:3]}")
    return {"upstream_refund_requests": sum(r["requests"] for r in requests.values()),
            "parameter_sets_max": max((r["parameterSets"] for r in requests.values()), default=0),
            "wechat_refunds": len(at_wechat)}


def check_effects(rig, result, succeeded):
    """Exactly one refund.succeeded effect per successful refund, and no refund.failed."""
    effects = rig.receiver.refund_counts()
    wrong = [n for n in succeeded if effects.get(("refund.succeeded", n), 0) != 1]
    result.expect(not wrong, f"{len(wrong)} refunds without exactly one refund.succeeded effect, e.g. {wrong[:3]}")
    failed = [k for k in effects if k[0] == "refund.failed"]
    result.expect(not failed, f"{len(failed)} refund.failed effects, e.g. {failed[:3]}")
    return sum(v for (kind, _), v in effects.items() if kind == "refund.succeeded")


# ------------------------------------------------------------------------------------------------
def t11(rig, scale, seed, result):
    """Refund storm: per paid order, 10 partial refunds of 15 % each (150 % in all), every request
    sent twice, all at once across the orders, with 10 % of WeChat's refund answers SYSTEMERROR (after
    the refund took effect) and 20 % of its refund notifies in three concurrent copies."""
    orders = SCALES[scale]["t11"]
    gateway = rig.gateway(reconcile_interval=1, reconcile_after=3600, extra={"GATEWAY_REFUND_QUERY_AFTER": "2"})
    deadline = time.monotonic() + 900
    numbers = [f"t11-{seed}-{i:04d}" for i in range(orders)]
    amount_of = {n: 1000 + 20 * i for i, n in enumerate(numbers)}      # 15 % of each is whole fen
    result.expect(paid_orders(rig, gateway, numbers, amount_of.get, deadline) == orders, "not every order was paid")
    rig.faults({"endpoints": {"/secapi/pay/refund": {"systemErrorRate": 0.1}},
                "notify": {"duplicateRate": 0.2, "duplicateCopies": 3}})
    requests = [(n, {"amount": amount_of[n] * 15 // 100, "reason": "t11 storm", "out_refund_no": f"{n}-r{k}"})
                for n in numbers for k in range(10) for _ in range(2)]
    random.Random(seed).shuffle(requests)
    started = time.monotonic()
    answers = parallel(requests, lambda r: request_refund(rig, gateway, r[0], r[1], deadline), workers=64, deadline=deadline)
    result.figures["request_seconds"] = round(time.monotonic() - started, 1)
    by_number = {}
    for (order, body), answer in zip(requests, answers):
        by_number.setdefault(body["out_refund_no"], []).append((order, body, answer or (0, None)))
    accepted, refused, codes = {}, 0, {}
    for number, copies in by_number.items():
        statuses = sorted(a[0] for _, _, a in copies)
        if statuses == [200, 201]:
            order, body, _ = copies[0]
            accepted[number] = (order, body["amount"])
            states = {(a[1] or {}).get("state") for _, _, a in copies}
            result.expect(states <= {"PROCESSING", "SUCCESS"}, f"{number} answered {states}")
        elif statuses == [409, 409]:
            refused += 2
            for _, _, a in copies:
                code = ((a[1] or {}).get("error") or {}).get("code")
                codes[code] = codes.get(code, 0) + 1
        else:
            result.failures.append(f"{number}'s two copies answered {statuses}")
    result.expect(set(codes) <= {"refund_exceeds_paid"}, f"refusals other than refund_exceeds_paid: {codes}")
    per_order = {}
    for order, amount in accepted.values():
        per_order.setdefault(order, []).append(amount)
    over = [o for o in numbers if sum(per_order.get(o, [])) > amount_of[o]]
    result.expect(not over, f"{len(over)} orders had more accepted than paid, e.g. {over[:3]}")
    result.expect(all(len(per_order.get(o, [])) == 6 for o in numbers),
                  "an order did not get exactly 6 refunds of 15 % (90 %)")
    local = local_refunds(rig)
    result.expect(set(local) == set(accepted), f"the store holds {len(local)} refunds, {len(accepted)} were accepted")
    local_over = [o for o in numbers if sum(a for (t, a, _) in local.values() if t == o) > amount_of[o]]
    result.expect(not local_over, f"{len(local_over)} orders reserve more than paid in the store")
    settled = wait_for_refunds(rig, list(accepted), "SUCCESS", timeout=240)
    result.figures["success_seconds"] = round(time.monotonic() - started, 1)
    result.expect(settled == len(accepted), f"{settled}/{len(accepted)} accepted refunds ended SUCCESS")
    refund_orders = int(rig.sql("SELECT COUNT(*) FROM orders WHERE state = 'REFUND'")[0][0])
    result.expect(refund_orders == orders, f"{refund_orders}/{orders} orders are REFUND")
    figures, failures = checker.check(rig, numbers)
    result.failures += failures
    wechat = check_wechat_side(rig, result, accepted, numbers)
    effects = check_effects(rig, result, list(accepted))
    stats = rig.sim_stats()
    result.figures.update(orders=orders, refund_requests=len(requests), accepted=len(accepted), refused=refused,
                          refunds_success=settled, refund_effects=effects, order_effects=figures["effects"],
                          systemerrors_injected=stats.get("faultsInjected", {}).get("systemerror", 0),
                          integrity=figures["integrity"], **wechat)


# ------------------------------------------------------------------------------------------------
def t12(rig, scale, seed, result):
    """Refund crash: one refund per paid order while the gateway is SIGKILLed at random moments and
    at the test-only crash points between recording a refund and sending it (`refund_recorded`) and
    between the refund notify's commit and its reply (`refund_notify_committed`); the client retries
    its same request after every failure. After a clean start every refund ends in one final state,
    under the one number it was requested with, with one refund.succeeded effect."""
    orders, kills = SCALES[scale]["t12"]
    rng = random.Random(seed)
    points = "refund_recorded:0.05,refund_notify_committed:0.05"
    gateway = rig.gateway(reconcile_interval=1, reconcile_after=3600,
                          extra={"GATEWAY_REFUND_QUERY_AFTER": "2", "GATEWAY_CRASH_POINT": points})
    deadline = time.monotonic() + 900
    numbers = [f"t12-{seed}-{i:04d}" for i in range(orders)]
    result.expect(paid_orders(rig, gateway, numbers, lambda n: 800, deadline) == orders, "not every order was paid")
    # WeChat takes 0.3 s to answer a refund, so a random kill often lands between the refund
    # reaching WeChat and its answer reaching the gateway (accepted there, unknown here).
    rig.faults({"endpoints": {"/secapi/pay/refund": {"latency": 0.3}}})
    done = threading.Event()

    def killer():
        while (not done.is_set() or gateway.kills < kills) and time.monotonic() < deadline:
            time.sleep(rng.uniform(0.3, 1.5))
            if gateway.proc.poll() is None:     # else a crash point already killed it
                gateway.kill()
            try:
                gateway.start()
            except RuntimeError:
                time.sleep(0.2)

    killing = threading.Thread(target=killer, daemon=True)
    killing.start()
    requests = [(n, {"amount": 400, "reason": "t12 crash", "out_refund_no": f"{n}-r1"}) for n in numbers]
    answers = parallel(requests, lambda r: request_refund(rig, gateway, r[0], r[1], deadline), workers=8, deadline=deadline)
    answered = sum(1 for a in answers if a and a[0] in (200, 201))
    result.expect(answered == orders, f"only {answered}/{orders} refund requests were answered 200/201")
    done.set()          # the killer goes on until its count, over the notifies and sweeps that follow
    killing.join()
    gateway.kill()
    gateway.env.pop("GATEWAY_CRASH_POINT", None)
    gateway.start()     # the final, clean start
    restarted = time.monotonic()
    accepted = {f"{n}-r1": (n, 400) for n in numbers}
    settled = wait_for_refunds(rig, list(accepted), "SUCCESS", timeout=240)
    result.figures["settled_after_restart_s"] = round(time.monotonic() - restarted, 1)
    result.expect(settled == orders, f"{settled}/{orders} refunds SUCCESS after the final start")
    local = local_refunds(rig)
    result.expect(set(local) == set(accepted), f"the store holds {sorted(set(local) ^ set(accepted))[:3]} beyond the requests")
    figures, failures = checker.check(rig, numbers)
    result.failures += failures
    wechat = check_wechat_side(rig, result, accepted, numbers)
    effects = check_effects(rig, result, list(accepted))
    with open(f"{rig.dir}/{gateway.name}.log", errors="replace") as log:
        fired = [line.split()[2] for line in log if line.startswith("crash point ")]
    named = {point: fired.count(point) for point in sorted(set(fired))}
    result.expect(sum(named.values()) > 0, "no crash point fired")
    result.expect(gateway.kills >= kills, f"only {gateway.kills} kills")
    stats = rig.sim_stats()

    def events_like(pattern):
        return int(rig.sql(f"SELECT COUNT(DISTINCT out_trade_no) FROM order_events WHERE detail LIKE '{pattern}'")[0][0])
    # Which recovery each refund needed: sent again after WeChat never got it (a kill between
    # recording and sending), its acceptance learnt by refundquery (a kill in flight), or finished
    # by refundquery instead of its notify.
    result.figures.update(resent_after_refundnotexist=events_like("%REFUNDNOTEXIST; sending it again%"),
                          accepted_learnt_by_refundquery=events_like("%refundquery shows it accepted%"),
                          finished_by_refundquery=events_like("%PROCESSING -> SUCCESS: reconcile: refundquery%"),
                          client_replays_answered_200=sum(1 for a in answers if a and a[0] == 200))
    result.figures.update(orders=orders, refunds=len(local), refunds_success=settled, refund_effects=effects,
                          kills=gateway.kills, crash_points=",".join(f"{k}:{v}" for k, v in named.items()) or "none",
                          refund_notify_attempts=sum(1 for a in rig.client.json(rig.sim, "GET", "/simulator/notifies")[1] or []
                                                     if a.get("kind") == "refund"),
                          order_effects=figures["effects"], integrity=figures["integrity"],
                          notifies=stats.get("notifyAttempts", 0), **wechat)


# ------------------------------------------------------------------------------------------------
def t13(rig, scale, seed, result):
    """Forged refund notifies: encrypted with another key, tampered ciphertext, another refund's
    genuine req_info replayed, changed amounts, another order, an unknown refund, a foreign
    merchant, return_code FAIL, a payment notify, not XML; each many times. Nothing changes."""
    copies = SCALES[scale]["t13"]
    gateway = rig.gateway(reconcile_interval=0)     # no sweeps: only the notifies could change anything
    deadline = time.monotonic() + 300
    a, b = f"t13-{seed}-a", f"t13-{seed}-b"
    result.expect(paid_orders(rig, gateway, [a, b], lambda n: 900, deadline) == 2, "the orders were not paid")
    for order in (a, b):
        status, _ = request_refund(rig, gateway, order, {"amount": 300, "reason": "t13", "out_refund_no": f"{order}-r1"},
                                   deadline)
        result.expect(status == 201, f"the refund of {order} answered {status}")
    rig.complete_refund(f"{a}-r1")
    result.expect(wait_for_refunds(rig, [f"{a}-r1"], "SUCCESS", timeout=60) == 1, "A's genuine notify did not settle it")

    def inner(order, **change):
        sim = rig.sim_order(order)
        refund = sim["refunds"][0]
        fields = {"out_refund_no": refund["outRefundNo"], "out_trade_no": order,
                  "refund_account": "REFUND_SOURCE_UNSETTLED_FUNDS", "refund_fee": str(refund["refundFee"]),
                  "refund_id": refund["refundID"], "refund_recv_accout": "支付用户零钱", "refund_request_source": "API",
                  "refund_status": "SUCCESS", "settlement_refund_fee": str(refund["refundFee"]),
                  "settlement_total_fee": str(sim["totalFee"]),
                  "success_time": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(time.time() + 8 * 3600)),
                  "total_fee": str(sim["totalFee"]), "transaction_id": sim["transactionID"]}
        fields.update(change)
        return fields

    genuine_a = refund_notify(inner(a))
    good_b = refund_notify(inner(b))
    cipher = bytearray(base64.b64decode(good_b.split("<req_info><![CDATA[")[1].split("]]>")[0]))
    cipher[-3] ^= 0x5A
    tampered = good_b.split("<req_info><![CDATA[")[0] + "<req_info><![CDATA[" + base64.b64encode(bytes(cipher)).decode() \
        + "]]>" + good_b.split("<req_info><![CDATA[")[1].split("]]>", 1)[1]
    forgeries = [
        ("another key", refund_notify(inner(b), key="f" * 32)),
        ("tampered ciphertext", tampered),
        ("changed amount", refund_notify(inner(b, refund_fee="1", settlement_refund_fee="1"))),
        ("changed order amount", refund_notify(inner(b, total_fee="1"))),
        ("another order", refund_notify(inner(b, out_trade_no=a))),
        ("unknown refund", refund_notify(inner(b, out_refund_no=f"{b}-nobody"))),
        ("foreign merchant", refund_notify(inner(b), outer={"mch_id": "10000999"})),
        ("return_code FAIL", refund_notify(inner(b), outer={"return_code": "FAIL"})),
        ("a payment notify", payment_notify(b, "4200000000202611300000009999", 900, "pay")),
        ("not XML", '{"req_info":"x"}'),
    ]
    tables = ["refunds", "orders", "outbox", "order_events"]
    # The webhook deliveries of the genuine events so far write too (delivered_at, a timeline line):
    # they finish before the snapshot, so only the forgeries could change it.
    result.expect(checker.wait_for_outbox(rig), "the outbox did not drain")
    before = {t: rig.sql(f"SELECT * FROM {t} ORDER BY 1") for t in tables}
    sends = [(name, body) for name, body in forgeries for _ in range(copies)]
    replies = parallel(sends, lambda s: rig.client.request(gateway.base, "POST", "/wechat/refund-notify", body=s[1]),
                       workers=32, deadline=deadline)
    refused = sum(1 for r in replies if r and r[0] == 200 and FAIL in r[1].decode(errors="replace"))
    result.expect(refused == len(sends), f"only {refused}/{len(sends)} forgeries were answered FAIL")
    # A's genuine req_info replayed while B is PROCESSING: it names A, which is SUCCESS already.
    replayed = parallel([genuine_a] * copies, lambda body: rig.client.request(gateway.base, "POST", "/wechat/refund-notify",
                                                                              body=body), workers=32, deadline=deadline)
    acknowledged = sum(1 for r in replayed if r and r[0] == 200 and ACK in r[1].decode(errors="replace"))
    result.expect(acknowledged == copies, f"{acknowledged}/{copies} replays were acknowledged as duplicates")
    after = {t: rig.sql(f"SELECT * FROM {t} ORDER BY 1") for t in tables}
    changed = [t for t in tables if after[t] != before[t]]
    result.expect(not changed, f"rows changed in {changed}")
    result.expect(local_refunds(rig)[f"{b}-r1"][2] == "PROCESSING", "B's refund changed")
    status, metrics = rig.client.request(gateway.base, "GET", "/metrics")
    counted = sum(float(line.rsplit(" ", 1)[1]) for line in metrics.decode().splitlines()
                  if line.startswith('wxpay_refund_notifies_total{outcome="rejected"'))
    result.expect(counted == len(sends), f"{counted:.0f} of {len(sends)} refusals are counted")
    # The endpoint still works: B's genuine notify settles B.
    rig.complete_refund(f"{b}-r1")
    result.expect(wait_for_refunds(rig, [f"{b}-r1"], "SUCCESS", timeout=60) == 1, "B's genuine notify did not settle it")
    figures, failures = checker.check(rig, [a, b])
    result.failures += failures
    effects = check_effects(rig, result, [f"{a}-r1", f"{b}-r1"])
    result.figures.update(forgeries=len(sends), refused=refused, kinds=len(forgeries), replays=copies,
                          replays_acknowledged=acknowledged, metric_rejections=int(counted), tables_changed=len(changed),
                          refund_effects=effects, integrity=figures["integrity"])


TESTS = {"T11": t11, "T12": t12, "T13": t13}
