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
from selenium.webdriver.support.select import Select

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
        # An iOS order paid in the demo's App Store simulator; Apple asks about its consumption
        # and then refunds it. A purchase of a product missing from the catalog, in USD, reported
        # by the app: credited and flagged unknown_product.
        cls.ios, cls.purchase = cls.rig.ios_paid_order("browser-ios-0001")
        transaction = cls.purchase["transactionId"]
        status, _ = cls.rig.api("POST", "/appstore-simulator/transactions/%s/consumption-request" % transaction,
                                {"reason": "UNINTENDED_PURCHASE"}, token=None)
        assert status == 200, status
        cls.rig.eventually(lambda: any(event["kind"] == "appstore_consumption"
                                       for event in cls.rig.order("browser-ios-0001")["events"]), "the consumption request")
        status, _ = cls.rig.api("POST", "/appstore-simulator/transactions/%s/refund" % transaction, {}, token=None)
        assert status == 200, status
        cls.rig.eventually(lambda: cls.rig.order("browser-ios-0001")["state"] == "REFUND", "Apple's refund")
        missing = cls.rig.buy("com.example.courses.not-in-catalog", "apple-u-ios", price=12990, currency="USD")
        status, cls.unknown = cls.rig.api("POST", "/v1/iap/transactions",
                                          {"signed_transaction": missing["signedTransactionInfo"], "user_id": "u-ios"})
        assert status == 200 and cls.unknown["finish_transaction"], (status, cls.unknown)
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
        self.rig.wait(self.browser, self.rig.replaced(html), "the answer to " + action)

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

    def test_02b_each_order_shows_its_app_and_trade_type_and_the_search_filters_by_them(self):
        # One user's orders through three of the demo's apps: the Android app, the PC page's QR
        # code (NATIVE) and the mobile site (MWEB).
        for number, app in [("browser-ch-app", "android"), ("browser-ch-web", "web"), ("browser-ch-h5", "h5")]:
            status, created = self.rig.api("POST", "/v1/orders", {"amount": 990, "description": "Swift 入门课",
                                                                 "client_ip": "203.0.113.7", "out_trade_no": number,
                                                                 "user_id": "u-channels", "app": app})
            self.assertEqual(status, 201, created)

        def search(q, app="", trade_type=""):
            self.browser.get(self.rig.base + "/console/")
            form = self.find("#search")
            Select(form.find_element(By.ID, "app")).select_by_value(app)
            Select(form.find_element(By.ID, "trade-type")).select_by_value(trade_type)
            self.rig.submit(self.browser, "#search", [("q", q)])
            if not self.absent("#no-results"):
                return {}
            rows = self.find("#results").find_elements(By.CSS_SELECTOR, "tbody tr")
            return {row.find_element(By.CSS_SELECTOR, "a").text: row.find_element(By.CSS_SELECTOR, "td.app").text
                    for row in rows}

        self.assertEqual(search("u-channels"), {"browser-ch-app": "android · APP", "browser-ch-web": "web · NATIVE",
                                                "browser-ch-h5": "h5 · MWEB"})
        self.assertIn("交易类型", self.find("#results thead").text)
        self.assertEqual(search("u-channels", trade_type="NATIVE"), {"browser-ch-web": "web · NATIVE"})
        # The filters stay chosen on the page of results, so the next page keeps them.
        self.assertEqual(Select(self.find("#trade-type")).first_selected_option.get_attribute("value"), "NATIVE")
        self.assertEqual(search("", app="h5"), {"browser-ch-h5": "h5 · MWEB"})
        self.assertEqual(search("u-channels", app="web", trade_type="MWEB"), {})
        # The order page says which app (with its app id) and which trade type.
        self.browser.get(self.rig.base + "/console/orders/browser-ch-web")
        self.assertTrue(self.find("#fact-app").text.startswith("web (wx"), self.find("#fact-app").text)
        self.assertEqual(self.find("#fact-trade-type").text, "NATIVE")

    def test_03_the_paid_order_and_its_timeline(self):
        self.browser.get(self.rig.base + "/console/")
        self.rig.submit(self.browser, "#search", [("q", "browser-0001")])
        html = self.browser.find_element(By.TAG_NAME, "html")
        self.find("#results a").click()
        self.rig.wait(self.browser, self.rig.replaced(html))
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
        # Partly refunded, and it says so: ¥3.50 of ¥9.90.
        self.assertIn("REFUND", self.find("#fact-state").text)
        self.assertIn("部分退款", self.find("#fact-state").text)
        self.assertIn("¥9.90", self.find("#fact-state").text)

    def test_06_redeliver_a_dead_event(self):
        def dead():
            self.browser.get(self.rig.base + "/console/orders/browser-0001")
            return self.browser.find_elements(By.CSS_SELECTOR, '#deliveries tr[data-status="dead"] form.redeliver')
        forms = self.rig.eventually(dead, "a dead fulfilment event")
        self.assertTrue(forms[0].get_attribute("action").endswith("/redeliver"))
        html = self.browser.find_element(By.TAG_NAME, "html")
        forms[0].find_element(By.TAG_NAME, "button").click()
        self.rig.wait(self.browser, self.rig.replaced(html))
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

    def test_09b_an_ios_order_shows_apples_facts_in_chinese(self):
        transaction = self.purchase["transactionId"]
        self.browser.get(self.rig.base + "/console/")
        self.rig.submit(self.browser, "#search", [("q", transaction)])
        row = self.find('#results tr[data-channel="apple"]')
        self.assertIn("browser-ios-0001", row.text)
        self.assertIn("App Store", row.text)
        self.assertIn(transaction, row.text)
        html = self.browser.find_element(By.TAG_NAME, "html")
        row.find_element(By.TAG_NAME, "a").click()
        self.rig.wait(self.browser, self.rig.replaced(html))
        self.assertIn("App Store", self.find("#fact-channel").text)
        self.assertEqual(self.find("#fact-apple-transaction-id").text, transaction)
        self.assertEqual(self.find("#fact-original-transaction-id").text, self.purchase["originalTransactionId"])
        self.assertEqual(self.find("#fact-app-account-token").text, self.ios["app_account_token"])
        self.assertIn("Production", self.find("#fact-environment").text)
        self.assertEqual(self.find("#fact-storefront").text, "CHN")
        self.assertIn("¥9.90", self.find("#fact-apple-charged").text)
        # WeChat's facts are not there: no "transaction_id none", no prepay_id, no sign type.
        facts = self.find("#facts").text
        for wechat in ("微信支付单号", "预支付 ID", "签名方式"):
            self.assertNotIn(wechat, facts)
        # Apple refunded it: the state, the amount refunded, the refund's date; no WeChat form.
        self.assertIn("REFUND", self.find("#fact-state").text)
        self.assertIn("¥9.90", self.find("#fact-refunded").text)
        self.assertIn("Apple 已于", self.find("#fact-apple-refund").text)
        self.assertTrue(self.absent("#refund"))
        self.assertIn("只有顾客本人", self.find("#refunds-apple").text)
        # Apple's consumption request, waiting for the business's answer.
        self.assertIn("待回答", self.find('#consumption tr[data-state="requested"]').text)
        # The timeline in Chinese: the kinds' names and the details' words.
        timeline = self.find("#timeline")
        kinds = [item.get_attribute("data-kind") for item in timeline.find_elements(By.TAG_NAME, "li")]
        for kind in ("appstore_verified", "appstore_match", "appstore_consumption"):
            self.assertIn(kind, kinds)
        self.assertIn("App Store 交易已验证", timeline.text)
        self.assertIn("按 app_account_token 匹配", timeline.text)
        self.assertIn("Apple 请求交易的消费信息", timeline.text)
        self.assertNotIn("matched by app_account_token", timeline.text)

    def test_09c_search_takes_every_apple_id_and_apples_order_id(self):
        for identifier in (self.purchase["originalTransactionId"], self.ios["app_account_token"], self.purchase["orderId"]):
            self.browser.get(self.rig.base + "/console/")
            self.rig.submit(self.browser, "#search", [("q", identifier)])
            links = [link.text for link in self.find("#results").find_elements(By.CSS_SELECTOR, "a")]
            self.assertEqual(links, ["browser-ios-0001"], identifier)
        # The Order ID from Apple's e-mail is not stored: Apple's Look Up Order ID was asked.
        self.assertIn("Look Up Order ID", self.find("#notice").text)
        self.assertIn(self.purchase["orderId"], self.find("#notice").text)

    def test_09d_recheck_of_an_ios_order_asks_the_app_store(self):
        self.browser.get(self.rig.base + "/console/orders/browser-ios-0001")
        self.assertIn("App Store", self.find("#recheck").find_element(By.XPATH, "..").text)
        self.rig.submit(self.browser, "#recheck")
        notice = self.find("#notice").text
        self.assertIn("App Store 的回答", notice)
        self.assertIn("Get Transaction Info", notice)
        self.assertNotIn("微信", notice)

    def test_09e_the_attention_page_lists_the_flagged_orders(self):
        self.browser.get(self.rig.base + "/console/")
        html = self.browser.find_element(By.TAG_NAME, "html")
        self.find("#nav-attention").click()
        self.rig.wait(self.browser, self.rig.replaced(html))
        unknown = self.unknown["order"]["out_trade_no"]
        row = self.find('#results tr[data-channel="apple"]')
        self.assertIn(unknown, row.text)
        self.assertIn("unknown_product", row.text)
        self.assertIn("12.99 USD", row.text)
        self.assertIn("unknown_product", self.find("#flag-explanations").text)
        html = self.browser.find_element(By.TAG_NAME, "html")
        self.find('#attention-flags a[data-flag="refund_needs_attention"]').click()
        self.rig.wait(self.browser, self.rig.replaced(html))
        self.find("#no-results")
        # Its order page says what the flag means and what Apple charged, in dollars.
        self.browser.get(self.rig.base + "/console/orders/" + unknown)
        self.assertIn("不在商品目录中", self.find("#warnings").text)
        self.assertIn("12.99 USD", self.find("#fact-amount").text)
        self.assertIn("12.99 USD", self.find("#fact-apple-charged").text)

    def test_09f_the_ios_order_in_english(self):
        english = self.rig.browser(language="en-US")
        self.rig.sign_in(english, "vera")
        english.get(self.rig.base + "/console/orders/browser-ios-0001")
        self.assertEqual(english.find_element(By.TAG_NAME, "html").get_attribute("lang"), "en")
        facts = self.rig.element(english, "#facts").text
        for label in ("Apple transaction id", "Original transaction id", "Environment", "Storefront", "Apple charged",
                      "App Store refund"):
            self.assertIn(label, facts)
        self.assertIn("App Store (iOS)", self.rig.element(english, "#fact-channel").text)
        self.assertIn("Apple refunded it at", self.rig.element(english, "#fact-apple-refund").text)
        self.assertIn("only the customer can ask Apple", self.rig.element(english, "#refunds-apple").text)
        timeline = self.rig.element(english, "#timeline").text
        self.assertIn("App Store transaction verified", timeline)
        self.assertIn("matched by app_account_token", timeline)
        self.assertIn("waiting for an answer", self.rig.element(english, "#consumption").text)
        english.get(self.rig.base + "/console/attention")
        self.assertIn("Orders that need attention", self.rig.element(english, "h1").text)

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
        # A lookup by an Apple id is audited with that id as its target.
        transaction = self.purchase["transactionId"]
        status, _ = self.rig.api("GET", "/v1/support/orders?apple_transaction_id=" + transaction, token=SUPPORT)
        self.assertEqual(status, 200)
        admin = self.rig.browser(language="en-US")
        self.rig.sign_in(admin, "adam")
        self.assertEqual(admin.find_element(By.TAG_NAME, "html").get_attribute("lang"), "en")
        admin.get(self.rig.base + "/console/audit")
        table = self.rig.element(admin, "#audit")
        rows = table.find_elements(By.CSS_SELECTOR, "tbody tr")
        seen = {(row.get_attribute("data-action"), row.get_attribute("data-outcome")) for row in rows}
        for action in ("login", "logout", "search", "view_order", "view_attention", "recheck", "refund", "redeliver",
                       "api_lookup", "view_audit"):
            self.assertIn(action, {entry[0] for entry in seen}, action)
        lookups = [row.text for row in rows if row.get_attribute("data-action") == "api_lookup"]
        self.assertTrue(any(transaction in text for text in lookups), lookups)
        self.assertTrue(any(row.get_attribute("data-action") == "search" and self.purchase["orderId"] in row.text
                            for row in rows))
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
        self.rig.wait(admin, self.rig.replaced(html))
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
