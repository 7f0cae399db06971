#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A mini program's purchase (docs/miniprogram.md), against a demo gateway (`scripts/run`):

    python3 docs/examples/miniprogram.py [BASE_URL]      # default http://127.0.0.1:8080

1. the merchant's server turns the mini program's wx.login code into the user's openid under the
   mini program's app id (code2session; the demo simulator's openid rule stands in for WeChat) and
   mints an app token allowed to buy through the mini program only (`apps: ["mini"]`);
2. creates the order through `"app": "mini"` with that openid: 201 with `jsapi_params`;
3. checks jsapi_params on its own (paySign recomputed, and by wechatpy when installed): what the
   page passes to wx.requestPayment unchanged;
4. the same token cannot buy through the Android app (403 app_not_allowed);
5. the user pays in the (simulated) WeChat: only that openid can pay a JSAPI order;
6. the page waits on the gateway until the order is final (never trusts wx.requestPayment's success).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from channel_common import app_token, demo_openid, jsapi_purchase  # noqa: E402

APP = os.environ.get("MINI_APP", "mini")
APPID = os.environ.get("MINI_APPID", "wx2421b1c4370ec43b")  # demo mode's mini program
USER = os.environ.get("APP_USER", "mini-learner")

openid = demo_openid(APPID, "u" + USER.replace("-", ""))
token = app_token(USER, apps=[APP])
print(f"1. code2session: openid {openid} under {APPID}; app token for {USER} limited to [{APP}]")

# Steps 2-6 are the official-account page's too (official_account.py): only the JS call differs.
jsapi_purchase(token, APP, APPID, openid, "wx.requestPayment")
print("OK")
