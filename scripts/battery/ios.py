# SPDX-License-Identifier: Apache-2.0
"""reliability.md T10 iOS dropped orders and T14 iOS nothing reached the gateway, against the real
gateway process (production mode, APPSTORE_* pointed at a separate App Store simulator process,
`wxpay-gateway simulate-appstore`).

T10: purchases are made in the simulated App Store for iOS orders the gateway created; 30 % of the
app's reports never arrive (the app was deleted, the phone lost), 30 % of Apple's notifications are
dropped, and the gateway is SIGKILLed throughout. A reported purchase is reported until the gateway
answers `finish_transaction` (the app keeps an unfinished transaction across launches); a fifth of
the purchases carry no appAccountToken (StoreKit 1 with a lost applicationUsername), so that only
the user and the product can match them. After one clean start every purchase must be credited
exactly once (by its report, its notification or the reconciler's Get Transaction History), no
transaction on two orders, exactly one `order.paid` effect each.

T14: the same, with reports and notifications each lost at 40 % independently (so about 16 % of the
purchases lose both, a user's first purchase among them, which only Get Notification History can
find) and 5 % of the purchases of a product missing from the gateway's catalog (the app could not
make an order; it buys and reports anyway, at a price of Apple's): every purchase credited exactly
once, those at what Apple charged and flagged `unknown_product`, no paid transaction unrecorded.
"""
import base64
import hashlib
import hmac
import json
import math
import os
import random
import ssl
import subprocess
import threading
import time

from rig import BINARY, CLIENT_TOKEN, free_port, parallel

SCALES = {
    #          purchases, users, kills
    "full":    dict(t10=(1000, 100, 60), t14=(1000, 250, 60)),
    "reduced": dict(t10=(200, 20, 15), t14=(200, 50, 15)),
}

BUNDLE_ID = "com.example.courses"
APP_APPLE_ID = "1234567890"
KEY_ID = "SIMKEY0001"
ISSUER = "57246542-96fe-1a63-e053-0824d011072a"
PRODUCTS = [(f"t10-{i}", f"com.example.courses.t10.{i}", 600 + 100 * i) for i in range(5)]
# T14: the App Store sells 20 products; the gateway's catalog lacks the last one.
T14_PRODUCTS = [(f"t14-{i}", f"com.example.courses.t14.{i}", 600 + 100 * i) for i in range(20)]
T14_MISSING = T14_PRODUCTS[-1]
T14_MISSING_PRICE = 12990      # Apple's milli-units: CNY 12.99, credited as 1299 fen


class AppStore:
    """The App Store simulator process, its root certificate and the Server API key it made."""

    def __init__(self, rig, notification_url, seed):
        self.root = os.path.join(rig.dir, "appstore-root.pem")
        self.key = os.path.join(rig.dir, "appstore-key.p8")
        log = open(os.path.join(rig.dir, "appstore-simulator.log"), "wb")
        self.proc = subprocess.Popen(
            [BINARY, "simulate-appstore", "--port", "0", "--root-out", self.root, "--api-key-out", self.key,
             "--notification-url", notification_url, "--retry-scale", "3600", "--seed", str(seed)],
            stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        line = self.proc.stdout.readline().decode().strip()
        if not line.startswith("listening "):
            self.close()
            raise RuntimeError("the App Store simulator did not start: " + line)
        self.base = line.split()[1]
        # Drain what else it prints, so a full pipe never blocks it.
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def env(self):
        return {
            "APPSTORE_BUNDLE_ID": BUNDLE_ID, "APPSTORE_APP_APPLE_ID": APP_APPLE_ID,
            "APPSTORE_ROOT_CA_FILE": self.root, "APPSTORE_ALLOW_UNTRUSTED_ROOT": "1",
            # A production start trusts a root other than Apple's only when told which one.
            "APPSTORE_UNTRUSTED_ROOT_SHA256": self.root_fingerprint(),
            # Receipts read locally are verified to the simulator's root, so a StoreKit 1 report
            # proves its device holds the purchase (as Apple Root CA does in production).
            "APPSTORE_RECEIPT_ROOT_CA_FILE": self.root,
            "APPSTORE_UNTRUSTED_RECEIPT_ROOT_SHA256": self.root_fingerprint(),
            "APPSTORE_ISSUER_ID": ISSUER, "APPSTORE_KEY_ID": KEY_ID, "APPSTORE_PRIVATE_KEY_FILE": self.key,
            "APPSTORE_API_BASE": self.base, "APPSTORE_SANDBOX_API_BASE": self.base + "/sandbox",
            "APPSTORE_RECEIPT_URL": self.base + "/verifyReceipt",
            "APPSTORE_SANDBOX_RECEIPT_URL": self.base + "/sandbox/verifyReceipt",
        }

    def root_fingerprint(self):
        """The SHA-256 of the simulator's root certificate (DER), as the gateway checks it."""
        with open(self.root) as f:
            return hashlib.sha256(ssl.PEM_cert_to_DER_cert(f.read())).hexdigest()

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def t10(rig, scale, seed, result):
    purchases, users, kills = SCALES[scale]["t10"]
    rng = random.Random(seed)
    plan = []
    for i in range(purchases):
        pid, apple, _ = PRODUCTS[rng.randrange(len(PRODUCTS))]
        plan.append(dict(index=i, user=f"t10-{seed}-u{i % users:03d}", product=pid, apple=apple,
                         out_trade_no=f"t10-{seed}-{i:05d}", token=rng.random() >= 0.2, report=rng.random() >= 0.3,
                         receipt=rng.random() < 0.2))
    with AppStoreGateway(rig, seed, PRODUCTS, {}) as (appstore, gateway):
        run = _purchases_under_faults(rig, appstore, gateway, plan, kills, notify_drop=0.3, result=result, rng=rng)
        if run is None:
            return
        settled, effects, deliveries = _exactly_once(rig, run, result)
        by = dict(rig.sql("SELECT matched_by, COUNT(*) FROM apple_transactions WHERE out_trade_no IS NOT NULL GROUP BY matched_by"))
        _, stats = rig.client.json(appstore.base, "GET", "/appstore-simulator/stats")
        stats = stats or {}
        flagged = rig.sql("SELECT COUNT(*) FROM orders WHERE flags LIKE '%matched_without_order%'")[0][0]
        ledger = rig.sql("SELECT COUNT(*), COUNT(out_trade_no) FROM apple_transactions")[0]
        result.figures.update(
            purchases=len(run["bought"]), users=len(set(i["user"] for i in plan)),
            reported=sum(1 for i in plan if i["report"]), without_token=sum(1 for i in plan if not i["token"]),
            receipts=sum(1 for i in plan if i["report"] and i["receipt"]),
            kills=run["kills"], report_calls=run["reports"]["answers"], report_retries=run["reports"]["retries"],
            credited=len(settled), transitions=run["transitions"],
            effects=effects, deliveries=deliveries,
            first_seen_by=_first_seen(rig),
            matched_by="/".join(f"{k}:{v}" for k, v in sorted(by.items())),
            matched_without_order=int(flagged), ledger_rows=f"{ledger[0]} ({ledger[1]} credited)",
            notification_attempts=stats.get("notification attempts", "?"),
            notifications_dropped=stats.get("notifications dropped", "?"),
            notifications_acknowledged=stats.get("notifications acknowledged", "?"),
            integrity=run["integrity"])


def t14(rig, scale, seed, result):
    """Nothing reached the gateway: reports and notifications each lost at 40 %, independently;
    Get Notification History every second (APPSTORE_BACKFILL_INTERVAL=1) with the sweeps."""
    purchases, users, kills = SCALES[scale]["t14"]
    rng = random.Random(seed)
    listed = T14_PRODUCTS[:-1]
    plan = []
    for i in range(purchases):
        user = f"t14-{seed}-u{i % users:03d}"
        # A user's first purchase is of a listed product: a purchase of the missing one has no
        # order and no token, and when both its report and its notification are lost only the
        # user's other purchases of the same App Store account can say whose it is.
        missing = i >= users and rng.random() < 0.05
        pid, apple, _ = T14_MISSING if missing else listed[rng.randrange(len(listed))]
        plan.append(dict(index=i, user=user, product=None if missing else pid, apple=apple,
                         out_trade_no=None if missing else f"t14-{seed}-{i:05d}", token=not missing,
                         report=rng.random() >= 0.4, receipt=rng.random() < 0.2,
                         price=T14_MISSING_PRICE if missing else None, first=i < users))
    extra = {"APPSTORE_BACKFILL_INTERVAL": "1", "APPSTORE_BACKFILL_DAYS": "1"}
    with AppStoreGateway(rig, seed, listed, extra) as (appstore, gateway):
        run = _purchases_under_faults(rig, appstore, gateway, plan, kills, notify_drop=0.4, result=result, rng=rng)
        if run is None:
            return
        settled, effects, deliveries = _exactly_once(rig, run, result)
        # Each purchase of a listed product paid its own order (its token names it).
        planned = {i["transaction_id"]: i for i in plan if i.get("transaction_id")}
        astray = [t for t, o in settled.items() if planned[t]["out_trade_no"] and planned[t]["out_trade_no"] != o]
        result.expect(not astray, f"purchases credited to another order than theirs: {astray[:5]}")
        # The missing product's: an order of their user at what Apple charged, flagged.
        unknown = [i for i in plan if i["product"] is None and i.get("transaction_id") in settled]
        rows = {r[0]: r[1:] for r in rig.sql(
            "SELECT apple_transaction_id, user_id, amount, COALESCE(currency, ''), flags FROM orders "
            "WHERE apple_transaction_id IS NOT NULL AND flags LIKE '%unknown_product%'")}
        wrong = [i["transaction_id"] for i in unknown
                 if i["transaction_id"] not in rows or rows[i["transaction_id"]][0] != i["user"]
                 or int(rows[i["transaction_id"]][1]) != T14_MISSING_PRICE // 10 or rows[i["transaction_id"]][2] != ""]
        result.expect(not wrong, f"unknown-product purchases not recorded at Apple's price for their user: {wrong[:5]}")
        result.expect(len(rows) == len(unknown), f"{len(rows)} orders flagged unknown_product for {len(unknown)} such purchases")
        # No paid transaction unrecorded: the ledger has each, credited.
        ledger = dict(rig.sql("SELECT transaction_id, COALESCE(out_trade_no, '') FROM apple_transactions"))
        unrecorded = [t for t in run["bought"] if not ledger.get(t)]
        result.expect(not unrecorded, f"paid transactions not recorded on an order: {unrecorded[:5]}")
        both_lost = [i for i in plan if not i["report"] and i.get("transaction_id") in run["dropped_transactions"]]
        _, stats = rig.client.json(appstore.base, "GET", "/appstore-simulator/stats")
        stats = stats or {}
        status, metrics = rig.client.request(gateway.base, "GET", "/metrics")
        metric = _metrics(metrics.decode(errors="replace") if status == 200 else "")
        result.figures.update(
            purchases=len(run["bought"]), users=len(set(i["user"] for i in plan)),
            reported=sum(1 for i in plan if i["report"]), receipts=sum(1 for i in plan if i["report"] and i["receipt"]),
            notifications_dropped=stats.get("notifications dropped", "?"),
            both_lost=len(both_lost), both_lost_first_purchases=sum(1 for i in both_lost if i["first"]),
            missing_product=len([i for i in plan if i["product"] is None]), unknown_product_orders=len(rows),
            kills=run["kills"], report_calls=run["reports"]["answers"], report_retries=run["reports"]["retries"],
            credited=len(settled), transitions=run["transitions"], effects=effects, deliveries=deliveries,
            first_seen_by=_first_seen(rig),
            backfill_runs_after_restart=metric.get('wxpay_appstore_backfill_runs_total{outcome="ok"}', 0),
            ledger_rows=len(ledger), integrity=run["integrity"])


class AppStoreGateway:
    """The App Store simulator process and a gateway pointed at it, with a catalog of `products`
    (a context manager: the simulator is stopped on leaving; the rig stops the gateway)."""

    def __init__(self, rig, seed, products, extra, reconcile_interval=1, catalog=None):
        """`catalog`: the catalog's products as written (T15's memberships), instead of `products`."""
        self.rig, self.seed, self.products, self.extra = rig, seed, products, extra
        self.reconcile_interval = reconcile_interval
        self.catalog = catalog

    def __enter__(self):
        catalog = os.path.join(self.rig.dir, "catalog.json")
        with open(catalog, "w") as f:
            json.dump({"products": self.catalog or [{"id": pid, "amount": amount, "description": "battery " + pid,
                                                     "apple_product_id": apple} for pid, apple, amount in self.products]}, f)
        # The gateway's port is chosen first: the simulator posts its notifications there.
        port = free_port()
        self.appstore = AppStore(self.rig, f"http://127.0.0.1:{port}/appstore/notifications", self.seed)
        try:
            gateway = self.rig.gateway(reconcile_interval=self.reconcile_interval, reconcile_after=2, port=port,
                                       extra=dict(self.appstore.env(), GATEWAY_CATALOG=catalog, **self.extra))
        except BaseException:
            self.appstore.close()
            raise
        return self.appstore, gateway

    def __exit__(self, *_):
        self.appstore.close()


def _purchases_under_faults(rig, appstore, gateway, plan, kills, notify_drop, result, rng):
    """Makes every purchase of `plan` (creating its order first when it has a product) and reports
    the ones to report until `finish_transaction`, with `notify_drop` of Apple's notifications
    dropped and the gateway SIGKILLed `kills` times; then one clean start, and waits (bounded) for
    every purchase to be credited. Returns what the checks need, or None when the purchases could
    not all be made (the failure is recorded)."""
    client = rig.client
    deadline = time.monotonic() + 900
    status, _ = client.json(appstore.base, "PUT", "/appstore-simulator/faults", {"notify": {"dropRate": notify_drop}})
    result.expect(status == 200, f"PUT /appstore-simulator/faults answered {status}")
    done = threading.Event()
    reports = {"answers": 0, "retries": 0, "finish_false": 0}
    lock = threading.Lock()

    def killer():
        while not done.is_set() and gateway.kills < kills and time.monotonic() < deadline:
            time.sleep(rng.uniform(0.3, 1.5))
            gateway.kill_and_restart(deadline)

    killing = threading.Thread(target=killer, daemon=True)
    killing.start()

    def buy(item):
        # 1. The app creates the order (through its backend: a client token with user_id); a
        #    product missing from the catalog has none (the gateway answers 400 unknown_product).
        order = None
        if item["product"]:
            body = {"product_id": item["product"], "user_id": item["user"], "out_trade_no": item["out_trade_no"]}
            while time.monotonic() < deadline:
                status, order = client.json(gateway.base, "POST", "/v1/iap/orders", body, token=CLIENT_TOKEN)
                if status in (200, 201):
                    break
                time.sleep(0.05)
            else:
                return None
        # 2. The customer pays in the App Store: consumables (every purchase a new transaction).
        purchase = {"user": "apple-" + item["user"], "productId": item["apple"], "type": "Consumable"}
        if item["token"] and order:
            purchase["appAccountToken"] = order["app_account_token"]
        if item.get("price"):
            purchase.update(price=item["price"], currency="CNY")
        status, bought = client.json(appstore.base, "POST", "/appstore-simulator/purchases", purchase)
        if status != 200 or not bought:
            return None
        item["transaction_id"] = bought["transactionId"]
        if not item["report"]:
            return bought["transactionId"]
        # 3. The app reports until it may finish (it keeps the transaction across crashes of the gateway).
        report = ({"receipt": bought["receipt"], "transaction_id": bought["transactionId"]} if item["receipt"]
                  else {"signed_transaction": bought["signedTransactionInfo"]})
        report["user_id"] = item["user"]
        for _ in range(600):    # bounded: a report the gateway keeps refusing fails the test below
            if time.monotonic() > deadline:
                break
            status, answer = client.json(gateway.base, "POST", "/v1/iap/transactions", report, token=CLIENT_TOKEN)
            with lock:
                reports["answers"] += 1
            if answer and answer.get("finish_transaction") is True:
                result.expect(status == 200, f"{item['out_trade_no']}: finish_transaction with {status} {answer}")
                break
            with lock:
                reports["retries"] += 1
                if answer and answer.get("finish_transaction") is False:
                    reports["finish_false"] += 1
            time.sleep(0.1)
        else:
            result.expect(False, f"{item['out_trade_no'] or item['transaction_id']}: never answered finish_transaction true")
        return bought["transactionId"]

    bought = [t for t in parallel(plan, buy, workers=8, deadline=deadline) if t]
    killing.join(timeout=max(0, deadline - time.monotonic()))
    done.set()
    killing.join()
    run_kills = gateway.kills
    result.expect(len(bought) == len(plan), f"only {len(bought)} of {len(plan)} purchases were made")
    result.expect(run_kills >= kills, f"only {run_kills} kills")
    if not bought:
        return None

    # One clean start: the notifications still due, the reconciler and the backfill must credit the rest.
    gateway.kill()
    gateway.start()
    restarted = time.monotonic()
    wanted = set(bought)

    def credited():
        rows = rig.sql("SELECT apple_transaction_id, out_trade_no FROM orders WHERE apple_transaction_id IS NOT NULL")
        return {row[0]: row[1] for row in rows if row[0] in wanted}

    while time.monotonic() < restarted + 300 and len(credited()) < len(wanted):
        time.sleep(1)
    settled = credited()
    result.figures["credited_after_restart_s"] = round(time.monotonic() - restarted, 1)
    result.expect(len(settled) == len(wanted), f"{len(settled)}/{len(wanted)} purchases credited after the final start")
    # Which purchases' notifications the App Store dropped (every attempt), from its own record.
    _, sent = client.json(appstore.base, "GET", "/appstore-simulator/notifications")
    dropped = {n.get("transactionId") for n in (sent or []) if n.get("dropped")}
    integrity = rig.integrity()
    return dict(bought=bought, settled=settled, kills=run_kills, reports=reports, dropped_transactions=dropped,
                transitions=None, integrity="ok" if integrity == [["ok"]] else "FAILED", raw_integrity=integrity)


def _exactly_once(rig, run, result):
    """No transaction on two orders, one transition into SUCCESS per credit, exactly one
    `order.paid` effect per credited order and none for another, integrity clean. Returns
    (settled, effects, deliveries)."""
    settled = run["settled"]
    per_transaction = rig.sql("SELECT apple_transaction_id, COUNT(*) FROM orders WHERE apple_transaction_id IS NOT NULL "
                              "GROUP BY apple_transaction_id HAVING COUNT(*) > 1")
    result.expect(not per_transaction, f"transactions on two orders: {per_transaction[:5]}")
    transitions = rig.sql("SELECT COUNT(*) FROM order_events WHERE kind = 'state_changed' AND detail LIKE '% -> SUCCESS%'")[0][0]
    run["transitions"] = int(transitions)
    result.expect(int(transitions) == len(settled), f"{transitions} transitions into SUCCESS for {len(settled)} credits")
    paid_orders = {row[0] for row in rig.sql("SELECT out_trade_no FROM orders WHERE state = 'SUCCESS'")}
    # Exactly one order.paid effect per credited order (the receiver deduplicates on the event id).
    effect_deadline = time.monotonic() + 120
    while time.monotonic() < effect_deadline:
        effects, deliveries, invalid = rig.receiver.counts()
        if sum(effects.get(o, 0) for o in settled.values()) >= len(settled):
            break
        time.sleep(0.5)
    effects, deliveries, invalid = rig.receiver.counts()
    wrong = {o: effects.get(o, 0) for o in settled.values() if effects.get(o, 0) != 1}
    result.expect(not wrong, f"orders without exactly one order.paid effect: {list(wrong.items())[:5]}")
    strays = set(effects) - set(settled.values())
    result.expect(not strays, f"order.paid effects for orders no purchase credited: {sorted(strays)[:5]}")
    result.expect(paid_orders == set(settled.values()), "SUCCESS orders other than the credited ones")
    result.expect(invalid == 0, f"{invalid} webhook deliveries failed verification")
    result.expect(run["raw_integrity"] == [["ok"]], f"integrity check: {run['raw_integrity']}")
    return settled, sum(effects.get(o, 0) for o in settled.values()), deliveries


def _first_seen(rig):
    """How each credited purchase first reached the gateway, from its ledger row's source."""
    first_seen = {"report": 0, "notification": 0, "notification_history": 0, "reconcile": 0}
    for (source,) in rig.sql("SELECT source FROM apple_transactions WHERE out_trade_no IS NOT NULL"):
        key = ("report" if "report" in source else "notification_history" if source.startswith("notification history")
               else "notification" if source.startswith("notification") else "reconcile")
        first_seen[key] += 1
    return "/".join(f"{k}:{v}" for k, v in first_seen.items())


def _metrics(text):
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            try:
                values[name] = float(value)
            except ValueError:
                pass
    return values


# T6's enumeration (issue 23): app users who report transaction ids that are not theirs.
APP_TOKEN_SECRET = "battery-app-token-secret-0123456789abcdef"
REPORT_RATE = 30        # GATEWAY_APP_REPORT_RATE, the default


def app_token(user, secret=APP_TOKEN_SECRET, ttl=3600):
    """An app token as the business backend mints it (HS256, README "Minting an app token")."""
    def b64url(data):
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
    now = int(time.time())
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    payload = b64url(json.dumps({"aud": "wxpay-gateway", "exp": now + ttl, "iat": now, "sub": user},
                                separators=(",", ":")).encode())
    signature = hmac.new(secret.encode(), f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{b64url(signature)}"


T6_PRODUCTS = [("t6-ios", "com.example.courses.t6", 990)]
# What T6's gateway needs besides the App Store (AppStoreGateway): app tokens, the report limit.
T6_ENV = {"GATEWAY_APP_TOKEN_SECRETS": APP_TOKEN_SECRET, "GATEWAY_APP_REPORT_RATE": str(REPORT_RATE)}


def t6_enumeration(rig, gateway, appstore, scale, seed, result):
    """Victims buy and report their purchases; then attackers, each with an app token of their own,
    report sequential transaction ids around the victims' as bare `transaction_id`s. A victim's
    transaction must answer only `{"credited_elsewhere":true,"finish_transaction":true}` (no user
    id, out_trade_no, token or amount of the order anywhere in the answer), every answer past an
    attacker's per-minute limit must be 429 with Retry-After and `finish_transaction` false, the
    victims' orders must not change, and their timelines get at most one report line a minute."""
    client = rig.client
    victims, attackers, per_attacker = (20, 40, 2 * REPORT_RATE) if scale == "full" else (5, 6, REPORT_RATE + 10)
    pid, apple, _ = T6_PRODUCTS[0]
    owned = {}
    for i in range(victims):
        user, number = f"t6-{seed}-victim-{i:02d}", f"t6-{seed}-ios-{i:02d}"
        status, order = client.json(gateway.base, "POST", "/v1/iap/orders",
                                    {"product_id": pid, "user_id": user, "out_trade_no": number}, token=CLIENT_TOKEN)
        result.expect(status == 201, f"iOS order {number}: {status}")
        status, bought = client.json(appstore.base, "POST", "/appstore-simulator/purchases",
                                     {"user": "apple-" + user, "productId": apple, "type": "Consumable",
                                      "appAccountToken": order["app_account_token"]})
        status, answer = client.json(gateway.base, "POST", "/v1/iap/transactions",
                                     {"signed_transaction": bought["signedTransactionInfo"], "user_id": user},
                                     token=CLIENT_TOKEN)
        result.expect(status == 200 and answer.get("finish_transaction") is True, f"{number} not credited: {status} {answer}")
        owned[bought["transactionId"]] = dict(user=user, out_trade_no=number, token=order["app_account_token"],
                                              amount=str(order["amount"]))
    before = rig.sql("SELECT out_trade_no, state, user_id, apple_transaction_id, amount FROM orders "
                     "WHERE out_trade_no LIKE 't6-%-ios-%' ORDER BY 1")
    orders_before = rig.sql("SELECT COUNT(*) FROM orders")[0][0]
    ids = sorted(int(t) for t in owned)
    candidates = [str(n) for n in range(ids[0] - 10, ids[-1] + 11)]    # the victims' and their neighbours'
    secrets = [value for o in owned.values() for value in (o["user"], o["out_trade_no"], o["token"])]
    jobs = []
    rng = random.Random(seed)
    for a in range(attackers):
        token = app_token(f"t6-{seed}-attacker-{a:02d}")
        picks = [rng.choice(candidates) for _ in range(per_attacker)]
        jobs += [(a, token, t) for t in picks]
    counts = {"elsewhere": 0, "limited": 0, "limited_without_retry_after": 0, "not_found": 0, "unclaimed": 0, "other": 0,
              "leaks": 0}
    lock = threading.Lock()
    began = time.monotonic()

    def report(job):
        _, token, transaction = job
        status, raw, headers = client.exchange(gateway.base, "POST", "/v1/iap/transactions",
                                               body=json.dumps({"transaction_id": transaction}).encode(), token=token)
        text = raw.decode(errors="replace")
        body = json.loads(raw or b"null") if raw[:1] in (b"{", b"[") else None
        with lock:
            if any(secret in text for secret in secrets):
                counts["leaks"] += 1
                result.failures.append(f"an answer about {transaction} leaks the order: {text[:200]}")
            if status == 429:
                counts["limited"] += 1
                if not headers.get("retry-after") or (body or {}).get("finish_transaction") is not False:
                    counts["limited_without_retry_after"] += 1
            elif transaction in owned:
                if status == 200 and body == {"credited_elsewhere": True, "finish_transaction": True}:
                    counts["elsewhere"] += 1
                else:
                    counts["other"] += 1
                    result.failures.append(f"{transaction} (another user's) answered {status} {text[:200]}")
            elif status == 422 and (body or {}).get("error", {}).get("code") == "transaction_not_found":
                counts["not_found"] += 1
            elif status == 409 and (body or {}).get("error", {}).get("code") == "transaction_unclaimed" \
                    and (body or {}).get("finish_transaction") is False:
                counts["unclaimed"] += 1    # a purchase nothing ties to the attacker: credited to nobody
            else:
                counts["other"] += 1
                result.failures.append(f"{transaction} (nobody's) answered {status} {text[:200]}")
        return status
    parallel(jobs, report, workers=8, deadline=time.monotonic() + 600)
    lasted = time.monotonic() - began
    # Within the minute each attacker is answered REPORT_RATE times, the rest 429.
    expected_limited = attackers * max(0, per_attacker - REPORT_RATE) if lasted < 60 else None
    if expected_limited is not None:
        result.expect(counts["limited"] == expected_limited, f"{counts['limited']} answers 429, {expected_limited} expected")
    result.expect(counts["limited_without_retry_after"] == 0,
                  f"{counts['limited_without_retry_after']} 429s without Retry-After or with finish_transaction")
    after = rig.sql("SELECT out_trade_no, state, user_id, apple_transaction_id, amount FROM orders "
                    "WHERE out_trade_no LIKE 't6-%-ios-%' ORDER BY 1")
    result.expect(after == before, "a victim's order changed")
    orders_after = rig.sql("SELECT COUNT(*) FROM orders")[0][0]
    result.expect(orders_after == orders_before, f"the enumeration made orders: {orders_before} -> {orders_after}")
    lines = dict(rig.sql("SELECT out_trade_no, COUNT(*) FROM order_events WHERE kind = 'appstore_report' "
                         "AND out_trade_no LIKE 't6-%-ios-%' GROUP BY out_trade_no"))
    bound = max(1, math.ceil(lasted / 60))
    crowded = {o: n for o, n in lines.items() if int(n) > bound}
    result.expect(not crowded, f"more than {bound} report lines on an order in {lasted:.0f} s: {crowded}")
    status, metrics = client.request(gateway.base, "GET", "/metrics")
    metric = _metrics(metrics.decode(errors="replace") if status == 200 else "")
    limited_counted = metric.get('wxpay_app_rate_limited_total{limit="reports"}', 0)
    result.expect(limited_counted == counts["limited"], f"{limited_counted:.0f} of {counts['limited']} 429s counted")
    result.figures.update(
        enumeration_attackers=attackers, enumeration_reports=len(jobs), enumeration_ids=len(candidates),
        answered_credited_elsewhere=counts["elsewhere"], answered_not_found=counts["not_found"],
        answered_429=counts["limited"], leaks=counts["leaks"], victims=victims,
        report_lines_max=max((int(n) for n in lines.values()), default=0),
        report_lines_suppressed=int(metric.get("wxpay_appstore_report_lines_suppressed_total", 0)),
        enumeration_s=round(lasted, 1))


TESTS = {"T10": t10, "T14": t14}
