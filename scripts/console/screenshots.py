#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Screenshots of every support console page, in Chinese and in English, into docs/console/:
a demo gateway with a few orders (one paid with a refund back and a refund in CHANGE, its
fulfilment event dead; an iOS order paid in the demo's App Store simulator that Apple asks about and
refunds; a purchase of a product missing from the catalog), headless Chromium, one PNG per page and
language. scripts/console-screenshots
runs this through ConsoleBrowserTests, which starts the gateway and chromedriver and makes the users.
"""
import argparse
import os

from selenium.webdriver.common.by import By

from console_rig import ROOT, ConsoleRig, arguments

PAGES = ["login", "search", "order", "ios-order", "subscription", "attention", "audit"]


def full_page(rig, driver, path):
    height = driver.execute_script("return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)")
    driver.set_window_size(1280, max(800, min(int(height) + 40, 4000)))
    rig.element(driver, "footer")
    driver.save_screenshot(path)


def main():
    parser = arguments(argparse.ArgumentParser(description=__doc__.split("\n")[0]))
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "console"))
    options = parser.parse_args()
    os.makedirs(options.out, exist_ok=True)
    rig = ConsoleRig(options.gateway, options.webdriver, options.work)
    try:
        rig.paid_order("demo-0001", amount=990, user_id="u-42", description="Swift 入门课")
        rig.paid_order("demo-0002", amount=1990, user_id="u-42", description="Go 并发实战")
        status, _ = rig.api("POST", "/v1/orders", {"amount": 4900, "description": "Rust 进阶", "client_ip": "203.0.113.7",
                                                   "out_trade_no": "demo-0003", "user_id": "u-42"})
        assert status == 201, status
        for number, amount, outcome in [("demo-r1", 300, "SUCCESS"), ("demo-r2", 100, "CHANGE")]:
            status, _ = rig.api("POST", "/v1/orders/demo-0001/refunds",
                                {"amount": amount, "reason": "买错了课程", "out_refund_no": number})
            assert status == 201, status
            rig.api("POST", "/simulator/refunds/%s/complete" % number, {"status": outcome}, token=None)
            rig.eventually(lambda: any(refund["out_refund_no"] == number and refund["state"] == outcome
                                       for refund in rig.order("demo-0001")["refunds"]), number + " " + outcome)
        rig.eventually(lambda: any(event["status"] == "dead" for event in rig.order("demo-0001")["outbox"]),
                       "the dead fulfilment event")
        _, purchase = rig.ios_paid_order("demo-ios-0001", product_id="swift-201",
                                         apple_product_id="com.example.courses.swift201", user_id="u-42")
        transaction = purchase["transactionId"]
        rig.api("POST", "/appstore-simulator/transactions/%s/consumption-request" % transaction, {}, token=None)
        rig.eventually(lambda: any(event["kind"] == "appstore_consumption" for event in rig.order("demo-ios-0001")["events"]),
                       "the consumption request")
        rig.api("POST", "/appstore-simulator/transactions/%s/refund" % transaction, {}, token=None)
        rig.eventually(lambda: rig.order("demo-ios-0001")["state"] == "REFUND", "Apple's refund")
        # An iOS membership: the monthly subscription, renewed once (the demo's one clock moved a month on).
        rig.ios_paid_order("demo-ios-vip", product_id="vip-month-ios", apple_product_id="com.example.vip.monthly",
                           user_id="u-42", apple_user="apple-u-42-vip", product_type="Auto-Renewable Subscription")
        rig.api("POST", "/appstore-simulator/clock/advance", {"seconds": 32 * 86400}, token=None)
        rig.eventually(lambda: sum(1 for order in rig.orders_of("u-42") if order.get("apple_product_id") == "com.example.vip.monthly") == 2,
                       "the subscription's renewal")
        missing = rig.buy("com.example.courses.swift301", "apple-u-42", price=12990, currency="USD")
        status, _ = rig.api("POST", "/v1/iap/transactions", {"signed_transaction": missing["signedTransactionInfo"],
                                                             "user_id": "u-42"})
        assert status == 200, status
        for language, suffix in [("zh-CN", "zh-CN"), ("en-US", "en")]:
            driver = rig.browser(language=language)
            driver.get(rig.base + "/console/login")
            rig.element(driver, "#login").find_element(By.NAME, "username").send_keys("adam")
            full_page(rig, driver, os.path.join(options.out, "login-%s.png" % suffix))
            rig.sign_in(driver, "adam")
            driver.get(rig.base + "/console/")
            rig.submit(driver, "#search", [("q", "u-42")])
            rig.element(driver, "#results")
            full_page(rig, driver, os.path.join(options.out, "search-%s.png" % suffix))
            driver.get(rig.base + "/console/orders/demo-0001")
            rig.submit(driver, "#recheck")
            rig.element(driver, "#notice")
            full_page(rig, driver, os.path.join(options.out, "order-%s.png" % suffix))
            driver.get(rig.base + "/console/orders/demo-ios-0001")
            rig.element(driver, "#consumption")
            full_page(rig, driver, os.path.join(options.out, "ios-order-%s.png" % suffix))
            driver.get(rig.base + "/console/orders/demo-ios-vip")
            rig.element(driver, "#subscription-state")
            full_page(rig, driver, os.path.join(options.out, "subscription-%s.png" % suffix))
            driver.get(rig.base + "/console/attention")
            rig.element(driver, "#results")
            full_page(rig, driver, os.path.join(options.out, "attention-%s.png" % suffix))
            driver.get(rig.base + "/console/audit")
            rig.element(driver, "#audit")
            full_page(rig, driver, os.path.join(options.out, "audit-%s.png" % suffix))
        print("screenshots: %s" % ", ".join("%s-%s.png" % (page, suffix) for suffix in ("zh-CN", "en") for page in PAGES))
    finally:
        rig.close()


if __name__ == "__main__":
    main()
