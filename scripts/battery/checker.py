# SPDX-License-Identifier: Apache-2.0
"""C1–C5 of reliability.md, checked from outside the gateway: the store read with its own client (the
sqlite3 CLI, read-only, or psql), the simulator's control panel (what WeChat holds), and the
receiver's effects."""
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
    integrity = rig.integrity()
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


def queries_per_sweep(rig, numbers, extra_allowed=None, slack_ms=30000, tolerance_ms=5, lease_ms=1800):
    """reliability.md T7 "each order queried at most once per sweep", from outside. A sweep checks an
    order only under its lease (`battery_claims`, copied by `Rig.install_claim_log`), so the claim
    holds when, for every order, (a) no two leases overlapped in time (several sweepers never held
    it at once) and (b) every orderquery WeChat received about it can be given a lease of its own:
    the queries, in time order, are matched to the leases, in time order, at most one per lease
    (greedy by earliest end, which finds the largest matching). A query fits a lease when it
    arrived after the lease began and at most `slack_ms` after it ended (the sweeper checks its
    lease before the call leaves; the call may reach WeChat later). A lease released early was
    skipped (no call), so it takes no query. `extra_allowed[n]` queries per order may be left over:
    calls that are not a sweep's (a client's close confirming ORDERPAID). Returns (figures, failures)."""
    extra_allowed = extra_allowed or {}
    leases = {}
    for number, kind, claimant, until, at in rig.sql(
            "SELECT out_trade_no, kind, claimant, until_ms, at_ms FROM battery_claims ORDER BY seq"):
        until, at = int(until), int(at)
        if kind == "claim":
            leases.setdefault(number, []).append([at, until, claimant, until, False])
        else:   # released early (a skipped order): the lease it ends stopped at `at`
            for lease in reversed(leases.get(number, [])):
                if lease[2] == claimant and lease[3] == until:
                    lease[1], lease[4] = min(lease[1], at), True
                    break
    queried = rig.sim_orderqueries()
    overlapping, unmatched, lateness = [], {}, []
    close_pairs = 0     # two queries of one order closer together than one lease (sweeps only)
    total_queries = total_leases = released = matched = 0
    for number in numbers:
        own = sorted(leases.get(number, []))
        total_leases += len(own)
        released += sum(1 for lease in own if lease[4])
        for a, b in zip(own, own[1:]):
            if b[0] < a[1] - tolerance_ms:
                overlapping.append(number)
                break
        usable = [lease for lease in own if not lease[4]]
        times = sorted(round(t * 1000) for t in queried.get(number, []))
        total_queries += len(times)
        if number not in extra_allowed:
            close_pairs += sum(1 for a, b in zip(times, times[1:]) if b - a < lease_ms)
        i, left = 0, 0
        for t in times:
            while i < len(usable) and usable[i][3] + slack_ms < t:
                i += 1
            if i < len(usable) and usable[i][0] - tolerance_ms <= t:
                matched += 1
                if number not in extra_allowed:
                    lateness.append(t - usable[i][3])
                i += 1
            else:
                left += 1
        if left > extra_allowed.get(number, 0):
            unmatched[number] = left
    failures = []
    if overlapping:
        failures.append(f"{len(overlapping)} orders were leased to two sweeps at once, e.g. {sorted(overlapping)[:3]}")
    if unmatched:
        failures.append(f"{len(unmatched)} orders had orderqueries beyond one per lease, e.g. "
                        f"{sorted(unmatched.items())[:3]}")
    if total_leases == 0:
        failures.append("no lease was recorded (is the claim log installed?)")
    lateness.sort()
    figures = {"leases": total_leases, "leases_released": released,
               "orderqueries_per_order_max": max((len(queried.get(n, [])) for n in numbers), default=0),
               "orderqueries_in_leases": matched, "orderqueries_outside": total_queries - matched,
               "orders_leased_twice_at_once": len(overlapping),
               "queries_after_lease_end": sum(1 for x in lateness if x > 0),
               "query_after_lease_end_p99_ms": lateness[int(len(lateness) * 0.99)] if lateness else 0,
               "query_after_lease_end_max_ms": lateness[-1] if lateness else 0,
               "query_pairs_closer_than_a_lease": close_pairs}
    return figures, failures
