# SPDX-License-Identifier: Apache-2.0
"""reliability.md T15 iOS memberships for a year: auto-renewable subscriptions against the real
gateway process (production mode, the battery's build) and the App Store simulator process, on one
moved calendar.

Every user buys the monthly subscription (an order, the purchase with its appAccountToken, the
app's report until `finish_transaction`); then a year passes in steps of ten days. At each step the
App Store's clock is advanced (`POST /appstore-simulator/clock/advance`) and the gateway's with it
(`GATEWAY_TEST_CLOCK_FILE`, the fault-injection build's shifted clock), and the customers act:
some turn auto-renew off, some have a few charges fail (grace period, then recovery), some have every
charge fail (billing retry, then expiry), some upgrade to the yearly product, some are refunded their
period in progress. Apple renews by itself; 30 % of its notification attempts are dropped; the
gateway is SIGKILLed throughout. After each step the driver asks every user's entitlement
(`GET /v1/users/{user}/entitlements`) and the App Store's own view of their subscription, until they
agree (bounded): the sampled instants. At the end, every transaction Apple made (each renewal,
upgrade, recovery) is on exactly one order, and no transaction is on two.
"""
import datetime
import json
import os
import random
import threading
import time

from ios import AppStoreGateway
from rig import CLIENT_TOKEN, parallel

SCALES = {
    #          users, steps of ten days (37: a year), kills at least
    "full":    dict(t15=(500, 37, 60)),
    "reduced": dict(t15=(100, 37, 20)),
}

STEP_DAYS = 10
PRODUCTS = [
    {"productId": "com.example.vip.monthly", "subscriptionGroupIdentifier": "21000001", "period": "P1M", "level": 2,
     "gracePeriodDays": 16},
    {"productId": "com.example.vip.yearly", "subscriptionGroupIdentifier": "21000001", "period": "P1Y", "level": 1},
]
CATALOG = [
    {"id": "vip-ios", "amount": 3000, "description": "VIP 月卡（iOS）", "type": "membership", "period": "P1M",
     "entitlement": "vip", "apple_product_id": "com.example.vip.monthly"},
    {"id": "vip-ios-year", "amount": 29800, "description": "VIP 年卡（iOS）", "type": "membership", "period": "P1Y",
     "entitlement": "vip", "apple_product_id": "com.example.vip.yearly"},
]
# What a customer does, and how many do it (the rest only renew).
ACTIONS = [("auto_renew_off", 0.10), ("fail_then_recover", 0.10), ("fail_all", 0.05), ("upgrade", 0.05),
           ("refund_latest", 0.03)]


def _plan(users, steps, seed, rng):
    plan = []
    for i in range(users):
        user = dict(user=f"t15-{seed}-u{i:04d}", action=None, step=None)
        draw, edge = rng.random(), 0.0
        for action, share in ACTIONS:
            edge += share
            if draw < edge:
                user.update(action=action, step=rng.randrange(1, steps - 2))
                break
        plan.append(user)
    return plan


def _ms(text):
    """An RFC 3339 timestamp of the gateway's (`…+08:00`) as milliseconds since 1970."""
    return round(datetime.datetime.fromisoformat(text).timestamp() * 1000)


def _expected(snapshot):
    """What the gateway must say of `vip`, from the App Store's own view of the subscription: open
    while active or in its grace period, until the period's (or grace period's) end, renewing while
    auto-renew is on and Apple may still charge it. A revoked one: closed, not renewing (its end is
    the refund's instant, which the snapshot does not carry)."""
    status = snapshot["status"]
    end = snapshot.get("gracePeriodExpiresDate") if status == 4 else snapshot["expiresDate"]
    return dict(active=status in (1, 4), expires=None if status == 5 else end,
                will_renew=bool(snapshot["autoRenewStatus"]) and status in (1, 3, 4))


def _agrees(vip, expected):
    if vip is None:
        # No grant at all: every payment of the subscription was refunded (a refund of its only
        # period), which agrees with an App Store that gives nothing.
        return not expected["active"] and not expected["will_renew"]
    if vip.get("active") != expected["active"] or vip.get("will_renew") != expected["will_renew"]:
        return False
    return expected["expires"] is None or (vip.get("expires_at") and _ms(vip["expires_at"]) == expected["expires"])


def t15(rig, scale, seed, result):
    users, steps, kills = SCALES[scale]["t15"]
    rng = random.Random(seed)
    plan = _plan(users, steps, seed, rng)
    clock_file = os.path.join(rig.dir, "clock-offset")
    offset = [0]

    def write_offset(seconds):
        temporary = clock_file + ".tmp"
        with open(temporary, "w") as f:
            f.write(str(seconds))
        os.replace(temporary, clock_file)

    write_offset(0)
    extra = {"APPSTORE_BACKFILL_INTERVAL": "1", "APPSTORE_BACKFILL_DAYS": "30", "GATEWAY_TEST_CLOCK_FILE": clock_file}
    with AppStoreGateway(rig, seed, [], extra, catalog=CATALOG) as (appstore, gateway):
        client = rig.client
        deadline = time.monotonic() + 1800
        status, _ = client.json(appstore.base, "PUT", "/appstore-simulator/subscription-products", json.dumps(PRODUCTS))
        result.expect(status == 200, f"PUT subscription-products answered {status}")
        status, _ = client.json(appstore.base, "PUT", "/appstore-simulator/faults", {"notify": {"dropRate": 0.3}})
        result.expect(status == 200, f"PUT faults answered {status}")

        # The gateway is SIGKILLed every 0.3–1.5 s while users subscribe and while each step's
        # renewals and their notifications arrive, and restarted; not while a step is sampled.
        killing = threading.Event()
        killing.set()
        idle = threading.Event()
        done = threading.Event()

        def killer():
            while not done.is_set() and time.monotonic() < deadline:
                if not killing.is_set():
                    idle.set()
                    time.sleep(0.05)
                    continue
                idle.clear()
                time.sleep(rng.uniform(0.3, 1.5))
                if not killing.is_set():
                    continue
                gateway.kill_and_restart(deadline)

        def quiet():
            """Stops the kills and waits until the gateway is up again."""
            killing.clear()
            idle.wait(timeout=30)
            while time.monotonic() < deadline and client.request(gateway.base, "GET", "/healthz")[0] != 200:
                time.sleep(0.05)

        thread = threading.Thread(target=killer, daemon=True)
        thread.start()

        # 1. Every user subscribes: the order, the purchase with its token, the report until it may finish.
        def subscribe(item):
            body = {"product_id": "vip-ios", "user_id": item["user"]}
            while time.monotonic() < deadline:
                status, order = client.json(gateway.base, "POST", "/v1/iap/orders", body, token=CLIENT_TOKEN)
                if status in (200, 201) and order:
                    break
                time.sleep(0.05)
            else:
                return None
            purchase = {"user": "apple-" + item["user"], "productId": "com.example.vip.monthly",
                        "type": "Auto-Renewable Subscription", "appAccountToken": order["app_account_token"]}
            status, bought = client.json(appstore.base, "POST", "/appstore-simulator/purchases", purchase)
            if status != 200 or not bought:
                return None
            item["original"] = bought["transactionId"]
            report = {"signed_transaction": bought["signedTransactionInfo"], "user_id": item["user"]}
            for _ in range(600):
                if time.monotonic() > deadline:
                    return None
                status, answer = client.json(gateway.base, "POST", "/v1/iap/transactions", report, token=CLIENT_TOKEN)
                if answer and answer.get("finish_transaction") is True:
                    return bought["transactionId"]
                time.sleep(0.1)
            return None

        subscribed = parallel(plan, subscribe, workers=8, deadline=deadline)
        quiet()
        result.expect(all(subscribed), f"only {sum(1 for s in subscribed if s)} of {len(plan)} users subscribed")
        plan = [item for item in plan if item.get("original")]

        def act(item):
            path = "/appstore-simulator/subscriptions/" + item["original"]
            action = item["action"]
            if action == "auto_renew_off":
                return client.json(appstore.base, "POST", path + "/auto-renew", {"enabled": False})[0]
            if action == "fail_then_recover":
                return client.json(appstore.base, "POST", path + "/fail-renewals", {"count": rng.randrange(1, 4)})[0]
            if action == "fail_all":
                return client.json(appstore.base, "POST", path + "/fail-renewals", {})[0]
            if action == "upgrade":
                return client.json(appstore.base, "POST", path + "/change-product", {"productId": "com.example.vip.yearly"})[0]
            if action == "refund_latest":
                _, snapshot = client.json(appstore.base, "GET", path)
                latest = (snapshot or {}).get("latestTransactionId")
                return client.json(appstore.base, "POST", f"/appstore-simulator/transactions/{latest}/refund", {})[0]
            return 200

        def sample(item):
            """(agrees, what the gateway said, what Apple holds) for one user now."""
            _, snapshot = client.json(appstore.base, "GET", "/appstore-simulator/subscriptions/" + item["original"])
            status, answer = client.json(gateway.base, "GET", f"/v1/users/{item['user']}/entitlements", token=CLIENT_TOKEN)
            if status != 200 or not answer or not snapshot:
                return False, None, snapshot
            vip = next((e for e in answer.get("entitlements", []) if e.get("entitlement") == "vip"), None)
            expected = _expected(snapshot)
            return _agrees(vip, expected), vip, expected

        # 2. A year in steps of ten days; after each, every user's entitlement must agree with Apple.
        converge_seconds, first_try, disagreements = [], 0, []
        for step in range(steps):
            if time.monotonic() > deadline:
                result.expect(False, f"the year did not finish in time (step {step} of {steps})")
                break
            for item in plan:
                if item["step"] == step and item["action"]:
                    status = act(item)
                    result.expect(status == 200, f"{item['user']}: {item['action']} answered {status}")
            offset[0] += STEP_DAYS * 86400
            write_offset(offset[0])
            status, _ = client.json(appstore.base, "POST", "/appstore-simulator/clock/advance",
                                    {"seconds": STEP_DAYS * 86400})
            result.expect(status == 200, f"clock advance answered {status}")
            killing.set()
            time.sleep(rng.uniform(1.5, 3.0))        # the renewals' notifications meet the SIGKILLs
            quiet()
            # The sampled instant: the gateway must come to agree with Apple on every user, bounded.
            started = time.monotonic()
            pending = list(plan)
            first = True
            while pending and time.monotonic() < started + 120:
                outcomes = parallel(pending, sample, workers=8)
                if first:
                    first_try += sum(1 for ok, _, _ in outcomes if ok)
                    first = False
                pending = [item for item, (ok, _, _) in zip(pending, outcomes) if not ok]
                if pending:
                    time.sleep(0.5)
            converge_seconds.append(time.monotonic() - started)
            if pending:
                for item in pending[:3]:
                    ok, vip, expected = sample(item)
                    disagreements.append(f"step {step}: {item['user']} ({item['action']}): gateway {vip}, App Store {expected}")
                result.expect(False, f"step {step}: {len(pending)} users' entitlements never agreed with the App Store")

        done.set()
        thread.join()
        run_kills = gateway.kills
        result.expect(run_kills >= kills, f"only {run_kills} kills")
        for line in disagreements[:10]:
            result.failures.append(line)

        # 3. One clean start, then every transaction Apple made on exactly one order.
        gateway.kill()
        gateway.start()
        wanted = {}
        for item in plan:
            _, snapshot = client.json(appstore.base, "GET", "/appstore-simulator/subscriptions/" + item["original"])
            for transaction in (snapshot or {}).get("transactionIds", []):
                wanted[transaction] = item["user"]

        def credited():
            return rig.sql("SELECT apple_transaction_id, out_trade_no, user_id, state FROM orders "
                           "WHERE apple_transaction_id IS NOT NULL")

        settle_until = time.monotonic() + 120
        rows = credited()
        while time.monotonic() < settle_until and len({r[0] for r in rows if r[0] in wanted}) < len(wanted):
            time.sleep(1)
            rows = credited()
        on_orders = {}
        for transaction, number, user, state in rows:
            on_orders.setdefault(transaction, []).append((number, user, state))
        missing = [t for t in wanted if t not in on_orders]
        doubled = [t for t, orders in on_orders.items() if len(orders) > 1]
        wrong_user = [t for t in wanted if t in on_orders and on_orders[t][0][1] != wanted[t]]
        result.expect(not missing, f"{len(missing)} of {len(wanted)} App Store transactions on no order: {missing[:5]}")
        result.expect(not doubled, f"transactions on two orders: {doubled[:5]}")
        result.expect(not wrong_user, f"transactions credited to another user: {wrong_user[:5]}")
        integrity = rig.integrity()
        result.expect(integrity == [["ok"]], f"integrity: {integrity}")
        _, stats = client.json(appstore.base, "GET", "/appstore-simulator/stats")
        stats = stats or {}
        status, metrics = client.request(gateway.base, "GET", "/metrics")
        text = metrics.decode(errors="replace") if status == 200 else ""
        checks = sum(float(line.split()[-1]) for line in text.splitlines()
                     if line.startswith('wxpay_appstore_subscription_checks_total{outcome="ok"}'))
        result.figures.update(
            users=len(plan), actions="/".join(f"{a}:{sum(1 for i in plan if i['action'] == a)}" for a, _ in ACTIONS),
            steps=steps, simulated_days=offset[0] // 86400, kills=run_kills,
            transactions=len(wanted), renewals=len(wanted) - len(plan),
            credited=len(wanted) - len(missing), doubled=len(doubled),
            samples=len(plan) * steps, agreed_first_try=first_try,
            converge_s_median=round(sorted(converge_seconds)[len(converge_seconds) // 2], 1) if converge_seconds else None,
            converge_s_max=round(max(converge_seconds), 1) if converge_seconds else None,
            notifications_dropped=stats.get("notifications dropped", "?"),
            renewals_simulated=stats.get("renewals", "?"),
            status_reads_last_process=int(checks), integrity=integrity[0][0] if integrity else "?")


TESTS = {"T15": t15}
