#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A mobile browser's purchase outside WeChat (H5 / MWEB; docs/h5.md), against a demo gateway
(`scripts/run`):

    python3 docs/examples/h5.py [BASE_URL]      # default http://127.0.0.1:8080

1. the site's server mints an app token for the logged-in user, allowed to buy through `h5` only;
2. creates the order through `"app": "h5"` with the browser's IP and the return page's address:
   201 with `mweb_url` (WeChat's checkmweb page, `&redirect_url=` the return page, URL-encoded);
3. the browser is sent to mweb_url (from a page of the registered domain: WeChat checks the
   Referer) and WeChat opens; it comes back to the return page whether or not the user paid, so
   the return page asks the gateway: not paid yet (final:false), and shows "checking…", not "paid";
4. the user pays in the (simulated) WeChat;
5. the return page polls the gateway with `wait` until the order is final, then shows "paid".
"""
import os
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from channel_common import BASE, app_token, call, expect, first_product, new_out_trade_no, wait_until_final  # noqa: E402

APP = os.environ.get("H5_APP", "h5")
USER = os.environ.get("APP_USER", "h5-learner")
BROWSER_IP = "203.0.113.7"  # what the site's server saw (X-Forwarded-For behind its proxy)

token = app_token(USER, apps=[APP])
print(f"1. app token for {USER} limited to [{APP}]")

out_trade_no = new_out_trade_no()
# The return page is on the H5 site (WXPAY_H5_SITE_URL; the demo's is the gateway's own address):
# the gateway refuses a redirect_url on any other host unless WXPAY_H5_REDIRECT_HOSTS lists it.
SITE = os.environ.get("H5_SITE_URL", BASE).rstrip("/")
return_page = f"{SITE}/paid?order={out_trade_no}&from=wechat"
status, created = call("POST", "/v1/orders", token, {"product_id": first_product(token)["id"], "out_trade_no": out_trade_no,
                                                       "app": APP, "client_ip": BROWSER_IP, "redirect_url": return_page})
expect(status == 201 and created["trade_type"] == "MWEB", "2. create", created)
mweb_url = created.get("mweb_url") or ""
parsed = urllib.parse.urlsplit(mweb_url)
query = urllib.parse.parse_qs(parsed.query)
expect(parsed.scheme == "https" and query.get("redirect_url") == [return_page], "2. mweb_url carries redirect_url", created)
expect(mweb_url.endswith("&redirect_url=" + urllib.parse.quote(return_page, safe="")), "2. redirect_url URL-encoded", created)
print(f"2. created {out_trade_no} through {created['app']} (MWEB): {created['amount']} fen, mweb_url {mweb_url[:72]}…")

# The browser opens mweb_url from the site's own page: WeChat checks the Referer against the site the
# order declared (scene_info's wap_url), and refuses a page elsewhere, or none.
product_page = f"{SITE}/courses/checkout"
status, refused = call("POST", "/simulator/mweb", None, {"mweb_url": mweb_url, "referer": "https://elsewhere.example/"})
expect(status == 403 and refused["error"]["code"] == "referer_not_allowed", "3. WeChat's page refuses another site's Referer", refused)
status, opened = call("POST", "/simulator/mweb", None, {"mweb_url": mweb_url, "referer": product_page})
expect(status == 200 and opened.get("redirect_url") == return_page, "3. WeChat's page opens from the site", opened)
print(f"3. the browser opens mweb_url from {product_page} (a page elsewhere: {refused['error']['code']}); "
      f"WeChat will return it to {opened['redirect_url'][:48]}…")

status, early = call("GET", f"/v1/orders/{out_trade_no}", token)
expect(status == 200 and not early["final"] and early["state"] == "NOTPAY", "3. the return page asks first", early)
print(f"3. back on the return page before paying: the gateway says {early['state']} (final:false), so no 'paid' yet")

status, paid = call("POST", "/simulator/mweb", None, {"mweb_url": mweb_url, "referer": product_page, "pay": True})
expect(status == 200 and paid["order"]["state"] == "SUCCESS", "4. simulated payment", paid)
print("4. paid in the simulated WeChat")

wait_until_final(out_trade_no, token, "5.")
print("OK")
