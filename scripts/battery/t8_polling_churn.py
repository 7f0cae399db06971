# SPDX-License-Identifier: Apache-2.0
"""T8 polling under churn: many clients each holding `GET /v1/orders/{n}?wait=W` in a loop over a
set of orders for minutes, while WeChat's notifies arrive duplicated, reordered and partly dropped,
the reconciler sweeps, payments keep happening and a tenth of orderqueries fail in every way the
simulator knows (timeouts held past the gateway's 10 s included).

Passes when: C1 holds for every answer any client saw (once an answer said SUCCESS, no answer to a
request sent after it says anything else); no SUCCESS for an order WeChat does not hold paid; at
the simulator, no two orderqueries about one order closer than the poll interval (the waits and
the sweeps together ask at most once per order per interval); every paid order SUCCESS at the end
(C1–C5); and no wait answered later than its `wait` + 1 s, measured by the client from sending the
request to reading the whole answer (the driver's own event-loop lag is reported beside it).

The clients are one asyncio loop of raw keep-alive HTTP/1.1 connections, one per client, so a
thousand of them cost the driver little CPU next to the gateway's.
"""
import asyncio
import random
import re
import threading
import time

import checker
import probes
from rig import CLIENT_TOKEN, create_body, parallel

SCALES = {
    #          clients  orders  seconds  paid
    "full":    dict(clients=1000, orders=200, seconds=300, paid=150),
    "reduced": dict(clients=200, orders=40, seconds=45, paid=30),
}
WAITS = (1, 2, 5)
POLL_INTERVAL = 0.5         # the rig's GATEWAY_POLL_INTERVAL
LATE_SLACK = 1.0            # an answer may come this long after its wait
FAULT_RATE = 0.10
STATE = re.compile(rb'"state":"([A-Z_]+)"')


def fault_plan():
    return {"endpoints": {"/pay/orderquery": probes.equal_shares(FAULT_RATE, probes.DRAW_ORDER, timeoutSeconds=12),
                          "*": probes.equal_shares(FAULT_RATE, probes.DRAW_ORDER[:-1], timeoutSeconds=12)},
            "notify": {"duplicateRate": 0.3, "duplicateCopies": 3, "reorderWindow": 3, "attemptDropRate": 0.2,
                       "dropRate": 0.1}}


class Pollers:
    """The clients: each a connection that asks about a random order, waits for the answer, and
    asks again (after a short pause when the answer was final, as an app would stop polling)."""

    def __init__(self, base, numbers, clients, seconds, seed):
        self.host, self.port = base.replace("http://", "").split(":")
        self.numbers, self.clients, self.seconds, self.seed = numbers, clients, seconds, seed
        self.answers = []       # (client, number, wait, sent, received, status, state)
        self.errors = []
        self.lag = []           # (when, how late) the loop itself was, sampled every 100 ms

    def run(self):
        asyncio.run(self.main())

    async def main(self):
        self.stop_at = time.monotonic() + self.seconds
        ticker = asyncio.create_task(self.measure_lag())
        await asyncio.gather(*(self.client(i) for i in range(self.clients)))
        ticker.cancel()

    async def measure_lag(self):
        while True:
            planned = time.monotonic() + 0.1
            await asyncio.sleep(0.1)
            self.lag.append((planned, time.monotonic() - planned))

    async def client(self, index):
        rng = random.Random(self.seed * 100003 + index)
        await asyncio.sleep(rng.uniform(0, 2))      # the apps do not all start in the same millisecond
        reader = writer = None
        while time.monotonic() < self.stop_at:
            number = rng.choice(self.numbers)
            wait = rng.choice(WAITS)
            request = (f"GET /v1/orders/{number}?wait={wait} HTTP/1.1\r\nHost: {self.host}\r\n"
                       f"Authorization: Bearer {CLIENT_TOKEN}\r\n\r\n").encode()
            try:
                if writer is None:
                    reader, writer = await asyncio.open_connection(self.host, int(self.port))
                sent = time.monotonic()
                writer.write(request)
                await writer.drain()
                status, body, close = await asyncio.wait_for(self.response(reader), wait + 30)
                received = time.monotonic()
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError) as error:
                self.errors.append((index, number, type(error).__name__))
                if writer:
                    writer.close()
                reader = writer = None
                await asyncio.sleep(0.5)
                continue
            match = STATE.search(body)
            state = match.group(1).decode() if match else None
            self.answers.append((index, number, wait, sent, received, status, state))
            if close:
                writer.close()
                reader = writer = None
            if state in ("SUCCESS", "CLOSED", "REFUND", "PAYERROR", "REVOKED"):
                await asyncio.sleep(rng.uniform(0.5, 1.0))
        if writer:
            writer.close()

    @staticmethod
    async def response(reader):
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        if "content-length" not in headers:
            raise ValueError("no Content-Length")
        body = await reader.readexactly(int(headers["content-length"]))
        return status, body, headers.get("connection", "").lower() == "close"


def run(rig, scale, seed, result):
    sizes = SCALES[scale]
    gateway = rig.gateway(reconcile_interval=1, reconcile_after=2)
    deadline = time.monotonic() + sizes["seconds"] + 900
    rng = random.Random(seed)
    numbers = [f"t8-{seed}-{i:04d}" for i in range(sizes["orders"])]

    def create(number):
        while time.monotonic() < deadline:
            status, _ = rig.client.json(gateway.base, "POST", "/v1/orders", create_body(number, 880), token=CLIENT_TOKEN)
            if status in (200, 201):
                return True
            time.sleep(0.2)
        return False
    created = sum(1 for ok in parallel(numbers, create, workers=16) if ok)
    result.expect(created == len(numbers), f"only {created} orders were created")
    rig.faults(fault_plan())

    # Payments keep happening through the first four fifths of the run, in a random order.
    to_pay = rng.sample(numbers, sizes["paid"])
    times = sorted(rng.uniform(1, sizes["seconds"] * 0.8) for _ in to_pay)
    start = time.monotonic()
    stop = threading.Event()

    def payer():
        for number, at in zip(to_pay, times):
            if stop.wait(max(0, start + at - time.monotonic())):
                return
            rig.pay(number)
    paying = threading.Thread(target=payer, daemon=True)
    paying.start()
    before = probes.process(gateway.proc.pid)
    driver_cpu = probes.cpu_seconds()
    pollers = Pollers(gateway.base, numbers, sizes["clients"], sizes["seconds"], seed)
    pollers.run()
    driver_cpu = probes.cpu_seconds() - driver_cpu
    stop.set()
    paying.join(timeout=10)
    during = probes.process(gateway.proc.pid)

    settled = checker.wait_until_paid(rig, to_pay, timeout=180)
    result.expect(settled == len(to_pay), f"{settled}/{len(to_pay)} paid orders SUCCESS at the end")
    rig.faults({})
    queries = rig.sim_orderqueries()
    stats = rig.sim_stats()
    check_answers(rig, result, pollers, numbers)
    check_pacing(result, queries, numbers)
    reported = {a[1] for a in pollers.answers if a[6] == "SUCCESS"}
    figures, failures = checker.check(rig, numbers, reported)
    result.failures += failures
    history = rig.client.json(rig.sim, "GET", "/simulator/notifies")[1] or []
    result.figures.update(
        figures, clients=sizes["clients"], paid_at_wechat=len(to_pay), run_seconds=sizes["seconds"],
        orderqueries=stats.get("requests", {}).get("/pay/orderquery", 0),
        orderquery_faults=sum(stats.get("faultsByEndpoint", {}).get("/pay/orderquery", {}).values()),
        notify_attempts=len(history), notify_copies=sum(a.get("copies", 1) for a in history),
        notifies_dropped=sum(1 for a in history if a.get("dropped")),
        sweeps=int(probes.total(probes.metrics(rig, gateway), "wxpay_reconcile_sweeps_total")),
        gateway_threads=f"{before.get('threads')}->{during.get('threads')}",
        gateway_cpu_s=round(during.get("cpu_s", 0) - before.get("cpu_s", 0), 1), driver_cpu_s=round(driver_cpu, 1),
        gateway_sockets_end=during.get("sockets"), loadavg=probes.loadavg().replace(" ", "/"))


def check_answers(rig, result, pollers, numbers):
    answers = pollers.answers
    sim = dict(zip(numbers, parallel(numbers, rig.sim_order, workers=16)))
    first_success = {}
    for _, number, _, _, received, _, state in answers:
        if state == "SUCCESS":
            first_success[number] = min(first_success.get(number, received), received)
    back = [(n, state) for _, n, _, sent, _, _, state in answers
            if n in first_success and sent > first_success[n] and state != "SUCCESS"]
    ghosts = {n for _, n, _, _, _, _, state in answers
              if state == "SUCCESS" and (sim.get(n) or {}).get("state") not in ("SUCCESS", "REFUND")}
    bad_status = [(n, status) for _, n, _, _, _, status, _ in answers if status != 200]
    late = [(received - sent - wait, n, wait) for _, n, wait, sent, received, _, _ in answers
            if received - sent > wait + LATE_SLACK]
    lateness = [received - sent - wait for _, _, wait, sent, received, _, state in answers if state not in
                ("SUCCESS", "CLOSED", "REFUND", "PAYERROR", "REVOKED")]
    result.expect(not back, f"C1: {len(back)} answers went back from SUCCESS, e.g. {back[:3]}")
    result.expect(not ghosts, f"{len(ghosts)} orders answered SUCCESS that WeChat does not hold paid")
    result.expect(not bad_status, f"{len(bad_status)} answers were not 200, e.g. {bad_status[:3]}")
    result.expect(not pollers.errors, f"{len(pollers.errors)} requests failed, e.g. {pollers.errors[:3]}")
    result.expect(not late, f"{len(late)} waits answered later than wait + {LATE_SLACK:.0f} s, "
                            f"the latest {max(late)[0] + 0:.2f} s past its wait" if late else "")
    # Where the late answers fell: how many distinct seconds, and how late the driver's own loop
    # was meanwhile (a late loop reads an answer late however early it arrived).
    lags = sorted(pollers.lag)
    driver_lag_during_late = []
    late_windows = [(sent, received) for _, n, wait, sent, received, _, _ in answers if received - sent > wait + LATE_SLACK]
    for sent, received in late_windows:
        window = [lag for at, lag in lags if sent <= at <= received]
        driver_lag_during_late.append(max(window, default=0))
    result.figures.update(
        late_answer_seconds=len({int(sent) for sent, _ in late_windows}),
        driver_lag_during_late_max_s=round(max(driver_lag_during_late, default=0), 3),
        late_answers_with_driver_lag_over_half_s=sum(1 for lag in driver_lag_during_late if lag > 0.5))
    result.figures.update(
        answers=len(answers), answers_success=sum(1 for a in answers if a[6] == "SUCCESS"),
        answers_after_first_success=sum(1 for a in answers if a[1] in first_success and a[3] > first_success[a[1]]),
        late_answers=len(late), wait_overrun_p99_s=round(probes.percentile(lateness, 0.99), 3),
        wait_overrun_max_s=round(max(lateness, default=0), 3),
        driver_loop_lag_max_s=round(max((lag for _, lag in pollers.lag), default=0), 3),
        driver_loop_lag_p99_s=round(probes.percentile([lag for _, lag in pollers.lag], 0.99), 3),
        request_errors=len(pollers.errors))


def check_pacing(result, queries, numbers, tolerance=0.005):
    """At most one orderquery per order per poll interval, as WeChat saw them arrive."""
    close_pairs, gaps = [], []
    for number in numbers:
        times = sorted(queries.get(number, []))
        for a, b in zip(times, times[1:]):
            gaps.append(b - a)
            if b - a < POLL_INTERVAL - tolerance:
                close_pairs.append((number, round(b - a, 3)))
    result.expect(not close_pairs, f"{len(close_pairs)} pairs of orderqueries about one order closer than "
                                   f"{POLL_INTERVAL} s, e.g. {close_pairs[:3]}")
    result.figures.update(orderquery_pairs_closer_than_interval=len(close_pairs),
                          orderquery_gap_min_s=round(min(gaps, default=0), 3),
                          orderqueries_per_order_max=max((len(queries.get(n, [])) for n in numbers), default=0))


TESTS = {"T8": run}
