# SPDX-License-Identifier: Apache-2.0
"""Starts `wxpay-gateway simulate` over HTTPS with client verification, and talks to its control panel."""
import queue
import subprocess
import threading
import time
from datetime import datetime, timezone

import requests

from agreement_signatures import TimeoutAdapter


class SimulatorError(Exception):
    pass


class SimulatorProcess:
    """One simulator child process. stop() is safe to call at any time, more than once."""

    def __init__(self, binary, arguments, start_timeout=30.0):
        self._command = [binary, "simulate", "--port", "0", *arguments]
        self._start_timeout = start_timeout
        self._process = None
        self._lines = queue.Queue()
        self.output = []  # everything the simulator printed, for diagnostics
        self.base_url = None

    def start(self):
        self._process = subprocess.Popen(self._command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, text=True, bufsize=1)
        # A reader thread drains the pipe, so the simulator never blocks on a full one.
        threading.Thread(target=self._drain, daemon=True).start()
        deadline = time.monotonic() + self._start_timeout
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=max(0.05, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                raise SimulatorError("the simulator exited before listening: " + " | ".join(self.output[-5:]))
            if line.startswith("listening "):
                self.base_url = line.split(" ", 1)[1].strip().rstrip("/")
                return self.base_url
        self.stop()
        raise SimulatorError(f"the simulator did not print its address within {self._start_timeout:.0f} s")

    def _drain(self):
        for line in self._process.stdout:
            self.output.append(line.rstrip("\n"))
            self._lines.put(line)
        self._lines.put(None)

    def stop(self):
        if self._process is None or self._process.poll() is not None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=5)


class ControlPanel:
    """The simulator's JSON control API (/simulator/...)."""

    def __init__(self, base_url, ca_file, timeout=10.0):
        self._base = base_url
        self._session = requests.Session()
        self._session.trust_env = False  # REQUESTS_CA_BUNDLE would override verify=
        self._session.verify = ca_file
        self._session.mount("https://", TimeoutAdapter(timeout))
        self._session.mount("http://", TimeoutAdapter(timeout))

    def close(self):
        self._session.close()

    def _call(self, method, path, body=None):
        response = self._session.request(method, self._base + path, json=body)
        try:
            payload = response.json()
        except ValueError:
            payload = {"error": {"code": "not_json", "message": response.text[:200]}}
        return response.status_code, payload

    def order(self, out_trade_no):
        status, payload = self._call("GET", f"/simulator/orders/{out_trade_no}")
        return payload if status == 200 else None

    def pay(self, out_trade_no):
        return self._call("POST", f"/simulator/orders/{out_trade_no}/pay", {})

    def complete_refund(self, out_refund_no, status="SUCCESS"):
        return self._call("POST", f"/simulator/refunds/{out_refund_no}/complete", {"status": status})

    def now(self):
        """Simulated time, as an aware UTC datetime (advancing by 0 s reads it)."""
        return self.advance(0)

    def advance(self, seconds):
        status, payload = self._call("POST", "/simulator/clock/advance", {"seconds": seconds})
        if status != 200:
            raise SimulatorError(f"clock advance refused: {payload}")
        return datetime.strptime(payload["now"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)

    def set_faults(self, plan):
        """Replaces the fault plan (see SIMULATOR.md); an empty dict clears every fault."""
        status, payload = self._call("PUT", "/simulator/faults", plan)
        if status != 200:
            raise SimulatorError(f"fault plan refused: {payload}")
        return payload

    def stats(self):
        return self._call("GET", "/simulator/stats")[1]

    def notifies(self):
        return self._call("GET", "/simulator/notifies")[1]

    def wait_for_notify_attempts(self, kind, reference, count, timeout=20.0):
        """The simulator's record of at least `count` attempts (acknowledged or not), bounded in time."""
        deadline = time.monotonic() + timeout
        while True:
            attempts = [a for a in self.notifies() if a["kind"] == kind and a["reference"] == reference]
            if len(attempts) >= count or time.monotonic() >= deadline:
                return attempts
            time.sleep(0.1)
