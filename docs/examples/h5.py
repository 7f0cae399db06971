#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A mobile browser's purchase outside WeChat (H5 / MWEB; docs/h5.md), against a demo gateway
(`scripts/run`):

    python3 docs/examples/h5.py [BASE_URL]      # default http://127.0.0.1:8080

1. the site's server mints an app token for the logged-in user, allowed to buy through `h5` only;
2. creates the order through `"app": "h5"` with the browser's IP and the return page's address:
   201 with `mweb_url` (WeChat's checkmweb page, `&redirect_url=` the return page, URL-encoded);
3. the browser is sent to mweb_url, which WeChat opens only from a page of the registered domain
   (it checks the Referer: a page elsewhere gets "商家参数格式有误"); the browser comes back to the
   return page whether or not the user paid, so the return page asks the gateway: not paid yet
   (final:false), and shows "checking…", not "paid";
4. the user pays in the (simulated) WeChat: the browser opens mweb_url from the site's checkout
   page, with that page as its Referer, on the simulator's page `GET /simulator/mweb` (mweb_url's
   query on the simulator's address: SIMULATOR.md), which pays and sends the browser back to the
   return page (302 to redirect_url);
5. the return page polls the gateway with `wait` until the order is final, then shows "paid".
"""
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

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

# WeChat's page (mweb_url) as the demo serves it: the simulator's `GET /simulator/mweb` takes mweb_url's
# own query, so the browser's address is mweb_url with the simulator's origin and path in place of
# WeChat's. WeChat checks the page's Referer against the site the order declared (scene_info's
# wap_url) and refuses a page elsewhere, or none.
CHECKMWEB = "https://wx.tenpay.com/cgi-bin/mmpayweb-bin/checkmweb"
expect(mweb_url.startswith(CHECKMWEB + "?"), "2. mweb_url is WeChat's checkmweb page", created)
page_url = BASE + "/simulator/mweb" + mweb_url[len(CHECKMWEB):]


class _StayOnThePage(urllib.request.HTTPRedirectHandler):
    """The browser's view of WeChat's answer: where it is sent next, not that page itself."""
    def redirect_request(self, *args, **kwargs):
        return None


def open_in_browser(url, referer):
    """A mobile browser opening `url` by navigation from the page `referer` (None: typed or pasted)."""
    request = urllib.request.Request(url)
    if referer:
        request.add_header("Referer", referer)
    try:
        with urllib.request.build_opener(_StayOnThePage).open(request, timeout=20) as response:
            return response.status, response.headers.get("Location"), response.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Location"), error.read().decode(errors="replace")


product_page = f"{SITE}/courses/checkout"
for elsewhere in [None, "https://elsewhere.example/courses"]:
    status, _, text = open_in_browser(page_url, elsewhere)
    expect(status == 403 and "商家参数格式有误" in text, "3. WeChat's page refuses a page elsewhere, or none", text)
print("3. mweb_url opened without a Referer or from another site: 403 商家参数格式有误 (nothing paid)")

status, early = call("GET", f"/v1/orders/{out_trade_no}", token)
expect(status == 200 and not early["final"] and early["state"] == "NOTPAY", "3. the return page asks first", early)
print(f"3. back on the return page before paying: the gateway says {early['state']} (final:false), so no 'paid' yet")

status, location, text = open_in_browser(page_url, product_page)
expect(status == 302 and location == return_page, "4. WeChat's page, opened from the site, pays and returns", text)
print(f"4. paid in the simulated WeChat, opened from {product_page}; the browser is sent back to {location[:48]}…")

wait_until_final(out_trade_no, token, "5.")
print("OK")
