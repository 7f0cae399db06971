# SPDX-License-Identifier: Apache-2.0
"""reliability.md T10 iOS dropped orders, against the real gateway process (production mode,
APPSTORE_* pointed at a separate App Store simulator process, `wxpay-gateway simulate-appstore`).

Purchases are made in the simulated App Store for iOS orders the gateway created; 30 % of the app's
reports never arrive (the app was deleted, the phone lost), 30 % of Apple's notifications are
dropped, and the gateway is SIGKILLed throughout. A reported purchase is reported until the gateway
answers `finish_transaction` (the app keeps an unfinished transaction across launches); a fifth of
the purchases carry no appAccountToken (StoreKit 1 with a lost applicationUsername), so that only
the user and the product can match them. After one clean start every purchase must be credited
exactly once (by its report, its notification or the reconciler's Get Transaction History), no
transaction on two orders, exactly one `order.paid` effect each.
"""
import hashlib
import json
import os
import random
import ssl
import subprocess
import threading
import time

from rig import BINARY, CLIENT_TOKEN, free_port, parallel

SCALES = {
    #          purchases, users, kills
    "full":    dict(t10=(1000, 100, 60)),
    "reduced": dict(t10=(200, 20, 15)),
}

BUNDLE_ID = "com.example.courses"
APP_APPLE_ID = "1234567890"
KEY_ID = "SIMKEY0001"
ISSUER = "57246542-96fe-1a63-e053-0824d011072a"
PRODUCTS = [(f"t10-{i}", f"com.example.courses.t10.{i}", 600 + 100 * i) for i in range(5)]


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
    catalog = os.path.join(rig.dir, "catalog.json")
    with open(catalog, "w") as f:
        json.dump({"products": [{"id": pid, "amount": amount, "description": "battery " + pid, "apple_product_id": apple}
                                for pid, apple, amount in PRODUCTS]}, f)
    # The gateway's port is chosen first: the simulator posts its notifications there.
    port = free_port()
    appstore = AppStore(rig, f"http://127.0.0.1:{port}/appstore/notifications", seed)
    try:
        gateway = rig.gateway(reconcile_interval=1, reconcile_after=2, port=port,
                              extra=dict(appstore.env(), GATEWAY_CATALOG=catalog))
        _run(rig, appstore, gateway, purchases, users, kills, rng, seed, result)
    finally:
        appstore.close()


def _run(rig, appstore, gateway, purchases, users, kills, rng, seed, result):
    client = rig.client
    deadline = time.monotonic() + 900
    status, _ = client.json(appstore.base, "PUT", "/appstore-simulator/faults", {"notify": {"dropRate": 0.3}})
    result.expect(status == 200, f"PUT /appstore-simulator/faults answered {status}")

    plan = []
    for i in range(purchases):
        pid, apple, _ = PRODUCTS[rng.randrange(len(PRODUCTS))]
        plan.append(dict(index=i, user=f"t10-{seed}-u{i % users:03d}", product=pid, apple=apple,
                         out_trade_no=f"t10-{seed}-{i:05d}", token=rng.random() >= 0.2, report=rng.random() >= 0.3,
                         receipt=rng.random() < 0.2))
    done = threading.Event()
    reports = {"answers": 0, "retries": 0, "finish_false": 0}
    lock = threading.Lock()

    def killer():
        while not done.is_set() and gateway.kills < kills and time.monotonic() < deadline:
            time.sleep(rng.uniform(0.3, 1.5))
            gateway.kill()
            while time.monotonic() < deadline:
                try:
                    gateway.start()
                    break
                except RuntimeError:
                    time.sleep(0.2)

    killing = threading.Thread(target=killer, daemon=True)
    killing.start()

    def buy(item):
        # 1. The app creates the order (through its backend: a client token with user_id).
        body = {"product_id": item["product"], "user_id": item["user"], "out_trade_no": item["out_trade_no"]}
        order = None
        while time.monotonic() < deadline:
            status, order = client.json(gateway.base, "POST", "/v1/iap/orders", body, token=CLIENT_TOKEN)
            if status in (200, 201):
                break
            time.sleep(0.05)
        else:
            return None
        # 2. The customer pays in the App Store: consumables (every purchase a new transaction).
        purchase = {"user": "apple-" + item["user"], "productId": item["apple"], "type": "Consumable"}
        if item["token"]:
            purchase["appAccountToken"] = order["app_account_token"]
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
            result.expect(False, f"{item['out_trade_no']}: never answered finish_transaction true")
        return bought["transactionId"]

    bought = [t for t in parallel(plan, buy, workers=8, deadline=deadline) if t]
    killing.join(timeout=max(0, deadline - time.monotonic()))
    done.set()
    killing.join()
    run_kills = gateway.kills
    result.expect(len(bought) == purchases, f"only {len(bought)} of {purchases} purchases were made")
    result.expect(run_kills >= kills, f"only {run_kills} kills")

    # One clean start: the notifications still due and the reconciler must credit the rest.
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

    # Exactly once: one order per transaction (and one transaction per order), in the database.
    per_transaction = rig.sql("SELECT apple_transaction_id, COUNT(*) FROM orders WHERE apple_transaction_id IS NOT NULL "
                              "GROUP BY apple_transaction_id HAVING COUNT(*) > 1")
    result.expect(not per_transaction, f"transactions on two orders: {per_transaction[:5]}")
    ledger = rig.sql("SELECT COUNT(*), COUNT(out_trade_no) FROM apple_transactions")[0]
    transitions = rig.sql("SELECT COUNT(*) FROM order_events WHERE kind = 'state_changed' AND detail LIKE '% -> SUCCESS%'")[0][0]
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
    integrity = rig.integrity()
    result.expect(integrity == [["ok"]], f"integrity check: {integrity}")

    by = dict(rig.sql("SELECT matched_by, COUNT(*) FROM apple_transactions WHERE out_trade_no IS NOT NULL GROUP BY matched_by"))
    sources = rig.sql("SELECT source FROM apple_transactions WHERE out_trade_no IS NOT NULL")
    first_seen = {"report": 0, "notification": 0, "reconcile": 0}
    for (source,) in sources:
        key = "report" if "report" in source else "notification" if source.startswith("notification") else "reconcile"
        first_seen[key] += 1
    _, stats = client.json(appstore.base, "GET", "/appstore-simulator/stats")
    stats = stats or {}
    flagged = rig.sql("SELECT COUNT(*) FROM orders WHERE flags LIKE '%matched_without_order%'")[0][0]
    result.figures.update(
        purchases=len(bought), users=len(set(i["user"] for i in plan)),
        reported=sum(1 for i in plan if i["report"]), without_token=sum(1 for i in plan if not i["token"]),
        receipts=sum(1 for i in plan if i["report"] and i["receipt"]),
        kills=run_kills, report_calls=reports["answers"], report_retries=reports["retries"],
        credited=len(settled), transitions=int(transitions),
        effects=sum(effects.get(o, 0) for o in settled.values()), deliveries=deliveries,
        first_seen_by="/".join(f"{k}:{v}" for k, v in first_seen.items()),
        matched_by="/".join(f"{k}:{v}" for k, v in sorted(by.items())),
        matched_without_order=int(flagged), ledger_rows=f"{ledger[0]} ({ledger[1]} credited)",
        notification_attempts=stats.get("notification attempts", "?"),
        notifications_dropped=stats.get("notifications dropped", "?"),
        notifications_acknowledged=stats.get("notifications acknowledged", "?"),
        integrity="ok" if integrity == [["ok"]] else "FAILED")


TESTS = {"T10": t10}
