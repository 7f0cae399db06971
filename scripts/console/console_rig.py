# SPDX-License-Identifier: Apache-2.0
"""A demo gateway with the support console, its users, some orders, and a headless Chromium
driven through WebDriver: what the console's browser tests and its screenshot script share.

Everything listens on 127.0.0.1 on a free port and is stopped by `close()`: the gateway, the
chromedriver selenium starts, and the browser. Waits are for conditions (WebDriverWait), with
generous limits, never fixed sleeps: the machine may be slow and shared.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PASSWORD = "correct horse battery"
USERS = [("vera", "viewer"), ("rita", "refunder"), ("adam", "admin"), ("lou", "viewer")]
CLIENT = "demo-client-token"
SUPPORT = "demo-support-token"
WAIT = 90  # seconds: a patient limit for any one condition on a loaded machine


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def default_binary():
    for candidate in (os.path.join(ROOT, ".build", "debug", "wxpay-gateway"),
                      os.path.join(ROOT, ".build", "release", "wxpay-gateway")):
        if os.access(candidate, os.X_OK):
            return candidate
    raise SystemExit("wxpay-gateway is not built: run `swift build` first")


class ConsoleRig:
    def __init__(self, binary=None, dead_letter=True):
        self.binary = binary or default_binary()
        self.directory = tempfile.mkdtemp(prefix="console-browser-")
        self.users_file = os.path.join(self.directory, "console-users")
        self.gateway = None
        self.drivers = []
        try:
            for name, role in USERS:
                self.cli("add", name, "--role", role)
            self.start_gateway(dead_letter)
        except BaseException:
            self.close()
            raise

    # -- the gateway ---------------------------------------------------------------------------

    def cli(self, *arguments, password=PASSWORD):
        """`wxpay-gateway console-user …` with the password on standard input, as an operator types it."""
        subprocess.run([self.binary, "console-user", *arguments, "--file", self.users_file],
                       input=(password + "\n").encode(), check=True, timeout=120,
                       stdout=subprocess.DEVNULL, env={"PATH": os.environ.get("PATH", "")})

    def start_gateway(self, dead_letter):
        environment = {
            "PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", self.directory),
            "GATEWAY_LISTEN": "127.0.0.1:0",
            "GATEWAY_DATABASE": "sqlite:" + os.path.join(self.directory, "gateway.sqlite"),
            "GATEWAY_CONSOLE_USERS": self.users_file,
            "GATEWAY_RECONCILE_INTERVAL": "0",
            "GATEWAY_LOG_LEVEL": "notice",
        }
        if dead_letter:
            # A webhook nobody listens on, given up on after a second: dead events to redeliver.
            environment.update({
                "GATEWAY_FULFILMENT_URL": "http://127.0.0.1:%d/never-listening" % free_port(),
                "GATEWAY_FULFILMENT_SECRET": "console-browser-test-secret",
                "GATEWAY_FULFILMENT_RETRY_MIN": "0.2", "GATEWAY_FULFILMENT_RETRY_MAX": "0.5",
                "GATEWAY_FULFILMENT_DEAD_AFTER": "1",
            })
        self.out = open(os.path.join(self.directory, "gateway.out"), "wb")
        self.err = open(os.path.join(self.directory, "gateway.err"), "wb")
        self.gateway = subprocess.Popen([self.binary, "serve", "--demo"], env=environment, cwd=self.directory,
                                        stdout=self.out, stderr=self.err, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            with open(os.path.join(self.directory, "gateway.out"), encoding="utf-8", errors="replace") as printed:
                for line in printed:
                    if line.startswith("listening on "):
                        self.base = line.split()[2]
                        return
            if self.gateway.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("the gateway did not start: " + self.log())

    def log(self):
        with open(os.path.join(self.directory, "gateway.err"), encoding="utf-8", errors="replace") as errors:
            return errors.read()[-4000:]

    def api(self, method, path, body=None, token=CLIENT):
        """The JSON API (or the simulator's control panel with token=None): (status, parsed body)."""
        request = urllib.request.Request(self.base + path, method=method,
                                         data=None if body is None else json.dumps(body).encode())
        if token:
            request.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(request, timeout=WAIT) as answer:
                return answer.status, json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def eventually(self, condition, what):
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError("timed out waiting for " + what)

    def paid_order(self, out_trade_no, amount=990, user_id="u-42", description="Swift 入门课"):
        status, _ = self.api("POST", "/v1/orders", {"amount": amount, "description": description,
                                                    "client_ip": "203.0.113.7", "out_trade_no": out_trade_no,
                                                    "user_id": user_id})
        assert status == 201, status
        status, _ = self.api("POST", "/simulator/orders/%s/pay" % out_trade_no, token=None)
        assert status == 200, status
        return self.eventually(lambda: self.order(out_trade_no) if self.order(out_trade_no)["state"] == "SUCCESS" else None,
                               out_trade_no + " paid")

    def order(self, out_trade_no):
        status, body = self.api("GET", "/v1/support/orders?out_trade_no=" + out_trade_no, token=SUPPORT)
        assert status == 200, status
        return body["orders"][0]

    # -- the browser ---------------------------------------------------------------------------

    def browser(self, language="zh-CN", width=1280, height=900):
        """A headless Chromium with its own profile, through a chromedriver on a free loopback port."""
        options = webdriver.ChromeOptions()
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                         "--disable-extensions", "--no-first-run", "--lang=" + language,
                         "--window-size=%d,%d" % (width, height),
                         "--user-data-dir=" + tempfile.mkdtemp(prefix="profile-", dir=self.directory)):
            options.add_argument(argument)
        options.add_experimental_option("prefs", {"intl.accept_languages": language})
        service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver", port=free_port(),
                          service_args=["--allowed-ips=127.0.0.1"],
                          log_output=os.path.join(self.directory, "chromedriver-%d.log" % len(self.drivers)))
        driver = webdriver.Chrome(options=options, service=service)
        driver.set_page_load_timeout(WAIT)
        self.drivers.append(driver)
        return driver

    def wait(self, driver, condition, what=""):
        return WebDriverWait(driver, WAIT, poll_frequency=0.1).until(condition, what)

    def element(self, driver, css):
        return self.wait(driver, expected_conditions.presence_of_element_located((By.CSS_SELECTOR, css)), css)

    def submit(self, driver, form_css, fields=()):
        """Fills `fields` ((name, value) pairs) into the form and submits it with its button; waits
        for the next page."""
        form = self.element(driver, form_css)
        for name, value in fields:
            box = form.find_element(By.NAME, name)
            box.clear()
            box.send_keys(value)
        html = driver.find_element(By.TAG_NAME, "html")
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        self.wait(driver, expected_conditions.staleness_of(html), "the page after " + form_css)

    def sign_in(self, driver, name, password=PASSWORD):
        driver.get(self.base + "/console/login")
        self.submit(driver, "#login", [("username", name), ("password", password)])

    def close(self):
        for driver in self.drivers:
            try:
                driver.quit()
            except Exception:
                pass
        if self.gateway and self.gateway.poll() is None:
            self.gateway.send_signal(signal.SIGTERM)
            try:
                self.gateway.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.gateway.kill()
                self.gateway.wait()
        for handle in (getattr(self, "out", None), getattr(self, "err", None)):
            if handle:
                handle.close()
        shutil.rmtree(self.directory, ignore_errors=True)
