# SPDX-License-Identifier: Apache-2.0
"""What the console's browser tests and its screenshot script share: the gateway they talk to,
its users, and headless Chromium sessions driven through WebDriver.

The processes are not started here. `ConsoleBrowserTests` (Swift, run by scripts/test) starts a demo
gateway with the simulator and a chromedriver, both on 127.0.0.1 on free ports, with posix_spawn,
makes the users below with `wxpay-gateway console-user add`, runs a script of this folder with
their addresses, and stops everything afterwards, whatever the script did. So this side only
opens browser sessions (quit by `close()`), and every wait is for a condition with a generous
limit, never a fixed sleep: the machine may be slow and shared.
"""
import json
import os
import tempfile
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The users ConsoleBrowserTests makes (its `users`), all with the password in CONSOLE_PASSWORD.
USERS = [("vera", "viewer"), ("rita", "refunder"), ("adam", "admin"), ("lou", "viewer")]
PASSWORD = os.environ.get("CONSOLE_PASSWORD", "")
CLIENT = "demo-client-token"
SUPPORT = "demo-support-token"
WAIT = 90  # seconds: a patient limit for any one condition on a loaded machine


def arguments(parser):
    """The options every script here takes from the harness."""
    parser.add_argument("--gateway", required=True, help="the gateway's base URL (http://127.0.0.1:PORT)")
    parser.add_argument("--webdriver", required=True, help="chromedriver's URL (http://127.0.0.1:PORT)")
    parser.add_argument("--work", required=True, help="a directory for browser profiles")
    return parser


class ConsoleRig:
    def __init__(self, gateway, webdriver_url, work):
        if not PASSWORD:
            raise SystemExit("CONSOLE_PASSWORD is not set: run this through ConsoleBrowserTests")
        self.base = gateway.rstrip("/")
        self.webdriver_url = webdriver_url
        self.directory = work
        self.drivers = []

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

    def ios_paid_order(self, out_trade_no, product_id="swift-101", apple_product_id="com.example.courses.swift101",
                       user_id="u-ios", apple_user="apple-u-ios", product_type=None):
        """An iOS order bought in the demo's App Store simulator with the order's token, and reported
        by the app as StoreKit 2 does: (the order as support sees it, the simulator's purchase)."""
        status, created = self.api("POST", "/v1/iap/orders", {"product_id": product_id, "out_trade_no": out_trade_no,
                                                              "user_id": user_id})
        assert status == 201, (status, created)
        purchase = self.buy(apple_product_id, apple_user, app_account_token=created["app_account_token"],
                            product_type=product_type)
        status, answer = self.api("POST", "/v1/iap/transactions", {"signed_transaction": purchase["signedTransactionInfo"],
                                                                   "user_id": user_id})
        assert status == 200 and answer["finish_transaction"], (status, answer)
        return self.order(out_trade_no), purchase

    def buy(self, apple_product_id, apple_user, app_account_token=None, price=None, currency=None, product_type=None):
        """A purchase in the demo's App Store simulator (its control panel); `product_type` as
        StoreKit names it (`Auto-Renewable Subscription`), else the simulator's default."""
        body = {"user": apple_user, "productId": apple_product_id}
        if product_type:
            body["type"] = product_type
        if app_account_token:
            body["appAccountToken"] = app_account_token
        if price is not None:
            body["price"], body["currency"] = price, currency
        status, purchase = self.api("POST", "/appstore-simulator/purchases", body, token=None)
        assert status in (200, 201), (status, purchase)
        return purchase

    def order(self, out_trade_no):
        status, body = self.api("GET", "/v1/support/orders?out_trade_no=" + out_trade_no, token=SUPPORT)
        assert status == 200, status
        return body["orders"][0]

    def orders_of(self, user_id):
        """The user's orders as support's look-up lists them."""
        status, body = self.api("GET", "/v1/support/orders?user_id=" + user_id, token=SUPPORT)
        assert status == 200, status
        return body["orders"]

    # -- the browser ---------------------------------------------------------------------------

    def browser(self, language="zh-CN", width=1280, height=900):
        """A new headless Chromium session, with a profile of its own, from the harness's chromedriver."""
        options = webdriver.ChromeOptions()
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                         "--disable-extensions", "--no-first-run", "--lang=" + language,
                         "--window-size=%d,%d" % (width, height),
                         "--user-data-dir=" + tempfile.mkdtemp(prefix="profile-", dir=self.directory)):
            options.add_argument(argument)
        options.add_experimental_option("prefs", {"intl.accept_languages": language})
        driver = webdriver.Remote(command_executor=self.webdriver_url, options=options)
        self.drivers.append(driver)
        driver.set_page_load_timeout(WAIT)
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
        self.wait(driver, self.replaced(html), "the page after " + form_css)

    @staticmethod
    def replaced(element):
        """Whether `element`'s page has been replaced. selenium's `staleness_of` asks the element
        whether it is enabled, and Chromium answers a node caught mid-navigation with an inspector
        error ("Node with given id does not belong to the document") rather than as stale: both
        mean the old page is gone."""
        def check(_driver):
            try:
                return expected_conditions.staleness_of(element)(_driver)
            except WebDriverException as error:
                if "does not belong to the document" in str(error):
                    return True
                raise
        return check

    def sign_in(self, driver, name, password=PASSWORD):
        driver.get(self.base + "/console/login")
        self.submit(driver, "#login", [("username", name), ("password", password)])

    def close(self):
        """Ends every browser session (the harness stops chromedriver and the gateway)."""
        for driver in self.drivers:
            try:
                driver.quit()
            except Exception:
                pass
        self.drivers = []
