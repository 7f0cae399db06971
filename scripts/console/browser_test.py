#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The support console in a real browser: headless Chromium through WebDriver (selenium), against a
demo gateway with the simulator, every flow of the console's contract. Run by the Swift test
`ConsoleBrowserTests.everyConsoleFlowWorksInHeadlessChromium` (so by scripts/test), which starts the
gateway and chromedriver on loopback, makes the users and passes their addresses:

    swift test --skip-build --filter ConsoleBrowserTests

The steps run in order against one gateway (each builds on the orders and entries before it).
"""
import argparse
import sys
import unittest

from selenium.common.exceptions import NoSuchElementException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions

from console_rig import PASSWORD, SUPPORT, ConsoleRig, arguments

OPTIONS = None


class ConsoleInABrowser(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rig = ConsoleRig(OPTIONS.gateway, OPTIONS.webdriver, OPTIONS.work)
        cls.paid = cls.rig.paid_order("browser-0001", amount=990, user_id="u-42")
        cls.other = cls.rig.paid_order("browser-0002", amount=500, user_id="u-77")
        # A refund made through the JSON API, to be found by its number.
        status, _ = cls.rig.api("POST", "/v1/orders/browser-0002/refunds",
                                {"amount": 100, "reason": "api refund", "out_refund_no": "browser-r-api"})
        assert status == 201, status
        cls.browser = cls.rig.browser()

    @classmethod
    def tearDownClass(cls):
        cls.rig.close()

    def page(self):
        return self.browser.page_source

    def find(self, css):
        return self.rig.element(self.browser, css)

    def absent(self, css):
        return not self.browser.find_elements(By.CSS_SELECTOR, css)

    def post_with_page_token(self, action, fields):
        """What a person scripting their browser could do: a form of their own, with the session's
        CSRF token taken from the page, posted to `action`."""
        html = self.browser.find_element(By.TAG_NAME, "html")
        self.browser.execute_script("""
            const form = document.createElement('form');
            form.method = 'post'; form.action = arguments[0];
            const fields = arguments[1];
            fields.push(['csrf', document.querySelector('input[name=csrf]').value]);
            for (const [name, value] of fields) {
                const input = document.createElement('input');
                input.type = 'hidden'; input.name = name; input.value = value; form.appendChild(input);
            }
            document.body.appendChild(form); form.submit();
        """, action, fields)
        self.rig.wait(self.browser, expected_conditions.staleness_of(html), "the answer to " + action)

    # -- the steps ------------------------------------------------------------------------------

    def test_01_sign_in_and_the_session_cookie(self):
        self.browser.get(self.rig.base + "/console/")
        self.find("#login")
        self.assertIn("/console/login", self.browser.current_url)
        self.assertEqual(self.browser.find_element(By.TAG_NAME, "html").get_attribute("lang"), "zh-CN")
        self.rig.submit(self.browser, "#login", [("username", "rita"), ("password", PASSWORD)])
        self.find("#search")
        cookie = self.browser.get_cookie("wxpay_console_session")
        self.assertIsNotNone(cookie)
        self.assertTrue(cookie["httpOnly"])
        self.assertEqual(cookie["sameSite"], "Strict")
        self.assertEqual(cookie["path"], "/console")
        self.assertFalse(cookie["secure"])
        self.assertNotIn("wxpay_console_session", self.browser.execute_script("return document.cookie"))
        self.assertIn("rita", self.find("#who").text)

    def test_02_search_by_each_kind_of_identifier(self):
        transaction = self.paid["transaction_id"]
        for identifier, expected in [("browser-0001", "browser-0001"), (transaction, "browser-0001"),
                                     ("u-77", "browser-0002"), ("browser-r-api", "browser-0002")]:
            self.browser.get(self.rig.base + "/console/")
            self.rig.submit(self.browser, "#search", [("q", identifier)])
            results = self.find("#results")
            links = [link.text for link in results.find_elements(By.CSS_SELECTOR, "a")]
            self.assertEqual(links, [expected], identifier)
        self.browser.get(self.rig.base + "/console/")
        self.rig.submit(self.browser, "#search", [("q", "no-such-order-anywhere")])
        self.find("#no-results")

    def test_03_the_paid_order_and_its_timeline(self):
        self.browser.get(self.rig.base + "/console/")
        self.rig.submit(self.browser, "#search", [("q", "browser-0001")])
        html = self.browser.find_element(By.TAG_NAME, "html")
        self.find("#results a").click()
        self.rig.wait(self.browser, expected_conditions.staleness_of(html))
        timeline = self.find("#timeline")
        kinds = [item.get_attribute("data-kind") for item in timeline.find_elements(By.TAG_NAME, "li")]
        self.assertIn("created", kinds)
        self.assertIn("state_changed", kinds)
        self.assertIn("NOTPAY -> SUCCESS", timeline.text)
        self.assertIn("¥9.90", self.find("#fact-amount").text)
        self.assertIn("SUCCESS 支付成功", self.find("#fact-state").text)
        for suffix in ("/recheck", "/refunds"):
            self.assertTrue(self.browser.find_elements(By.CSS_SELECTOR, 'form[action$="%s"]' % suffix), suffix)

    def test_04_recheck_shows_what_wechat_said(self):
        self.browser.get(self.rig.base + "/console/orders/browser-0001")
        self.rig.submit(self.browser, "#recheck")
        notice = self.find("#notice")
        self.assertIn("trade_state=SUCCESS", notice.text)
        self.assertIn("recheck", [item.get_attribute("data-kind")
                                  for item in self.find("#timeline").find_elements(By.TAG_NAME, "li")])

    def test_05_refund_in_yuan(self):
        self.browser.get(self.rig.base + "/console/orders/browser-0001")
        number = self.find("#refund input[name=out_refund_no]").get_attribute("value")
        self.rig.submit(self.browser, "#refund", [("amount", "3.50"), ("reason", "bought by mistake")])
        self.assertIn(number, self.find("#notice").text)
        row = self.find('#refunds tr[data-state="PROCESSING"]')
        self.assertIn("¥3.50", row.text)
        self.assertIn("¥6.40", self.find("#refundable").text)
        # WeChat's bank side pays it back; the refund notify reaches the gateway.
        status, _ = self.rig.api("POST", "/simulator/refunds/%s/complete" % number, {"status": "SUCCESS"}, token=None)
        self.assertEqual(status, 200)

        def succeeded():
            self.browser.get(self.rig.base + "/console/orders/browser-0001")
            return self.browser.find_elements(By.CSS_SELECTOR, '#refunds tr[data-state="SUCCESS"]')
        self.rig.eventually(succeeded, "the refund's success on the page")
        self.assertIn("¥3.50", self.find("#fact-refunded").text)
        self.assertIn("REFUND", self.find("#fact-state").text)

    def test_06_redeliver_a_dead_event(self):
        def dead():
            self.browser.get(self.rig.base + "/console/orders/browser-0001")
            return self.browser.find_elements(By.CSS_SELECTOR, '#deliveries tr[data-status="dead"] form.redeliver')
        forms = self.rig.eventually(dead, "a dead fulfilment event")
        self.assertTrue(forms[0].get_attribute("action").endswith("/redeliver"))
        html = self.browser.find_element(By.TAG_NAME, "html")
        forms[0].find_element(By.TAG_NAME, "button").click()
        self.rig.wait(self.browser, expected_conditions.staleness_of(html))
        self.assertIn("redelivered=", self.browser.current_url)
        self.find("#notice")
        self.assertIn("fulfilment_redriven", [item.get_attribute("data-kind")
                                              for item in self.find("#timeline").find_elements(By.TAG_NAME, "li")])

    def test_07_a_role_without_the_right_sees_no_button_and_its_post_is_refused(self):
        viewer = self.rig.browser()
        self.browser, saved = viewer, self.browser
        try:
            self.rig.sign_in(viewer, "vera")
            viewer.get(self.rig.base + "/console/orders/browser-0001")
            self.find("#timeline")
            self.assertTrue(self.absent("#refund"))
            self.assertTrue(self.absent("form.redeliver"))
            self.assertTrue(self.absent("#nav-audit"))
            self.find("#recheck")
            before = len(self.rig.order("browser-0001")["refunds"])
            self.post_with_page_token("/console/orders/browser-0001/refunds", [["amount", "1.00"], ["reason", "not mine"]])
            self.assertIn("没有权限", self.find("h1").text)
            self.assertEqual(len(self.rig.order("browser-0001")["refunds"]), before)
            viewer.get(self.rig.base + "/console/audit")
            self.assertIn("没有权限", self.find("h1").text)
        finally:
            self.browser = saved

    def test_08_a_forged_csrf_token_is_refused_and_changes_nothing(self):
        self.browser.get(self.rig.base + "/console/orders/browser-0002")
        before = self.rig.order("browser-0002")
        self.browser.execute_script("document.querySelector('#refund input[name=csrf]').value = 'forged'")
        self.rig.submit(self.browser, "#refund", [("amount", "1.00"), ("reason", "forged")])
        self.assertIn("CSRF", self.find("#notice").text)
        after = self.rig.order("browser-0002")
        self.assertEqual(len(after["refunds"]), len(before["refunds"]))
        self.assertEqual(len(after["events"]), len(before["events"]))

    def test_09_five_failures_lock_the_name(self):
        stranger = self.rig.browser()
        for attempt in range(5):
            self.rig.sign_in(stranger, "lou", password="wrong password %d" % attempt)
            self.assertTrue(stranger.find_elements(By.CSS_SELECTOR, "#notice"))
        self.rig.sign_in(stranger, "lou")
        notice = self.rig.element(stranger, "#notice").text
        self.assertIn("15", notice)
        self.assertIn("锁定", notice)
        self.assertIsNone(stranger.get_cookie("wxpay_console_session"))
        # An unknown name gets the wrong password's answer.
        self.rig.sign_in(stranger, "nobody-at-all", password="wrong password")
        unknown = self.rig.element(stranger, "#notice").text
        self.rig.sign_in(stranger, "vera", password="wrong password")
        self.assertEqual(unknown, self.rig.element(stranger, "#notice").text)

    def test_10_sign_out_ends_the_session(self):
        self.browser.get(self.rig.base + "/console/")
        old = self.browser.get_cookie("wxpay_console_session")["value"]
        self.rig.submit(self.browser, "#logout")
        self.find("#login")
        self.assertIsNone(self.browser.get_cookie("wxpay_console_session"))
        self.browser.add_cookie({"name": "wxpay_console_session", "value": old, "path": "/console"})
        self.browser.get(self.rig.base + "/console/")
        self.find("#login")

    def test_11_the_audit_log_lists_all_of_it(self):
        status, _ = self.rig.api("GET", "/v1/support/orders?out_trade_no=browser-0001", token=SUPPORT)
        self.assertEqual(status, 200)
        admin = self.rig.browser(language="en-US")
        self.rig.sign_in(admin, "adam")
        self.assertEqual(admin.find_element(By.TAG_NAME, "html").get_attribute("lang"), "en")
        admin.get(self.rig.base + "/console/audit")
        table = self.rig.element(admin, "#audit")
        rows = table.find_elements(By.CSS_SELECTOR, "tbody tr")
        seen = {(row.get_attribute("data-action"), row.get_attribute("data-outcome")) for row in rows}
        for action in ("login", "logout", "search", "view_order", "recheck", "refund", "redeliver", "api_lookup",
                       "view_audit"):
            self.assertIn(action, {entry[0] for entry in seen}, action)
        self.assertIn(("refund", "forbidden"), seen)
        self.assertIn(("view_audit", "forbidden"), seen)
        self.assertIn(("login", "refused"), seen)
        self.assertIn(("login", "locked"), seen)
        self.assertIn("rita", table.text)
        self.assertIn("vera", table.text)
        self.assertIn("support token", table.text)
        self.assertIn("127.0.0.1", table.text)
        # The language switch: back to Chinese, remembered.
        html = admin.find_element(By.TAG_NAME, "html")
        admin.find_element(By.ID, "language").click()
        self.rig.wait(admin, expected_conditions.staleness_of(html))
        self.assertEqual(admin.find_element(By.TAG_NAME, "html").get_attribute("lang"), "zh-CN")
        self.assertIn("审计日志", self.rig.element(admin, "h1").text)


def main():
    global OPTIONS
    OPTIONS = arguments(argparse.ArgumentParser(description=__doc__.split("\n")[0])).parse_args()
    result = unittest.TextTestRunner(verbosity=2).run(unittest.defaultTestLoader.loadTestsFromTestCase(ConsoleInABrowser))
    failed = len(result.failures) + len(result.errors)
    print("%d passed, %d failed" % (result.testsRun - failed, failed))
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
