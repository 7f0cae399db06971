# SPDX-License-Identifier: Apache-2.0
"""C1–C5 of reliability.md, checked from outside the gateway: the SQLite file read-only with the
sqlite3 CLI, the simulator's control panel (what WeChat holds), and the receiver's effects."""
import time

from rig import parallel

PAID = ("SUCCESS", "REFUND")


def wait_for_outbox(rig, timeout=90):
    """Waits until no order.paid event is still pending delivery (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pending = int(rig.sql("SELECT COUNT(*) FROM outbox WHERE delivered_at IS NULL AND dead_at IS NULL")[0][0])
        if pending == 0:
            return True
        time.sleep(0.2)
    return False


def wait_until_paid(rig, numbers, timeout):
    """Waits until every order in `numbers` is SUCCESS locally (bounded); returns how many are."""
    wanted = set(numbers)
    deadline = time.monotonic() + timeout
    while True:
        paid = {row[0] for row in rig.sql("SELECT out_trade_no FROM orders WHERE state IN ('SUCCESS','REFUND')")}
        done = len(wanted & paid)
        if done == len(wanted) or time.monotonic() > deadline:
            return done
        time.sleep(0.25)


def check(rig, numbers, reported_success=(), outbox_timeout=90):
    """Returns (figures, failures). `numbers`: every out_trade_no the run created;
    `reported_success`: orders some answer of the gateway reported SUCCESS during the run (C1)."""
    failures = []
    drained = wait_for_outbox(rig, outbox_timeout)
    if not drained:
        failures.append("outbox not drained in time")
    local = {row[0]: (row[1], int(row[2])) for row in rig.sql("SELECT out_trade_no, state, amount FROM orders")}
    transitions = {row[0]: int(row[1]) for row in rig.sql(
        "SELECT out_trade_no, COUNT(*) FROM order_events WHERE kind = 'state_changed' "
        "AND detail LIKE '%-> SUCCESS%' GROUP BY out_trade_no")}
    outbox = {row[0]: int(row[1]) for row in rig.sql("SELECT out_trade_no, COUNT(*) FROM outbox GROUP BY out_trade_no")}
    integrity = rig.sql("PRAGMA integrity_check")
    sim = dict(zip(numbers, parallel(numbers, rig.sim_order, workers=16)))
    effects, deliveries, invalid = rig.receiver.counts()

    wechat_paid = {n for n, o in sim.items() if o and o.get("state") in PAID}
    local_paid = {n for n, (state, _) in local.items() if state in PAID}

    c1 = [n for n in reported_success if local.get(n, ("", 0))[0] not in PAID]
    c2 = [n for n in numbers if effects.get(n, 0) != (1 if n in wechat_paid else 0)]
    c3 = [n for n in local_paid if n not in wechat_paid or sim[n].get("totalFee") != local[n][1]]
    c4 = [n for n, count in transitions.items() if count > 1]
    c5 = [n for n in wechat_paid if n not in local_paid]
    for name, bad in (("C1", c1), ("C2", c2), ("C3", c3), ("C4", c4), ("C5", c5)):
        if bad:
            failures.append(f"{name} violated for {len(bad)} orders, e.g. {sorted(bad)[:3]}")
    if integrity != [["ok"]]:
        failures.append("integrity_check: " + " ".join(r[0] for r in integrity[:3]))
    if invalid:
        failures.append(f"{invalid} webhook deliveries with a bad signature")
    figures = {
        "orders": len(numbers), "wechat_paid": len(wechat_paid), "local_success": len(local_paid & set(numbers)),
        "transitions": sum(transitions.get(n, 0) for n in numbers),
        "outbox_events": sum(outbox.get(n, 0) for n in numbers),
        "effects": sum(effects.get(n, 0) for n in numbers), "webhook_deliveries": deliveries,
        "integrity": integrity[0][0] if integrity else "?",
    }
    return figures, failures
