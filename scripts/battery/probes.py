# SPDX-License-Identifier: Apache-2.0
"""What T3, T5 and T8 measure from outside the gateway: its process (descriptors, sockets, threads,
memory), its /metrics, the fault plans they set, and the machine's load while they ran."""
import os
import re
import time


def process(pid):
    """The gateway's resources now: open descriptors, of which sockets, threads, VmRSS and VmHWM (KiB)."""
    fds = sockets = 0
    try:
        for name in os.listdir(f"/proc/{pid}/fd"):
            fds += 1
            try:
                sockets += os.readlink(f"/proc/{pid}/fd/{name}").startswith("socket:")
            except OSError:
                pass
    except OSError:
        return {}
    status = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            status[key] = value.split()[0] if value.split() else ""
    return {"fds": fds, "sockets": sockets, "threads": int(status.get("Threads", 0)),
            "rss_kib": int(status.get("VmRSS", 0)), "hwm_kib": int(status.get("VmHWM", 0)), "cpu_s": cpu_seconds(pid)}


def cpu_seconds(pid="self"):
    """User plus system CPU time a process has used, in seconds."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def metrics(rig, gateway):
    """The gateway's /metrics as [(name, {label: value}, number)]."""
    status, body = rig.client.request(gateway.base, "GET", "/metrics")
    assert status == 200, f"/metrics answered {status}"
    samples = []
    for line in body.decode().splitlines():
        match = SAMPLE.match(line)
        if match and not line.startswith("#"):
            labels = dict(LABEL.findall(match.group(3) or ""))
            samples.append((match.group(1), labels, float(match.group(4))))
    return samples


def total(samples, name, **labels):
    return sum(v for n, l, v in samples if n == name and all(l.get(k) == w for k, w in labels.items()))


# The simulator draws an answer's faults one after another, in this order (SIMULATOR.md), and stops
# at the first that applies. These are the kinds each endpoint can carry: unifiedorder's and
# closeorder's answers name no order, so they cannot be about another one.
DRAW_ORDER = ["resetRate", "timeoutRate", "http5xxRate", "systemErrorRate", "truncatedRate", "nonUTF8Rate",
              "badSignatureRate", "missingSignatureRate", "otherOrderRate"]


def equal_shares(total_rate, kinds, **extra):
    """A fault plan entry faulting `total_rate` of answers, split evenly over `kinds`: with draws in
    DRAW_ORDER, kind i applies with rate r_i times the chance none before it did, so
    r_i = s / (1 - (i - 1) s) gives each the share s = total / len(kinds)."""
    share = total_rate / len(kinds)
    plan, taken = dict(extra), 0.0
    for kind in DRAW_ORDER:
        if kind in kinds:
            plan[kind] = share / (1 - taken)
            taken += share
    return plan


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def percentile(values, fraction):
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def wait_until(condition, timeout, step=0.2):
    """Polls `condition` (bounded); returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(step)
