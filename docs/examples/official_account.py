#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""An official-account (公众号) page's purchase inside WeChat (docs/official-account.md), against a
demo gateway (`scripts/run`):

    python3 docs/examples/official_account.py [BASE_URL]      # default http://127.0.0.1:8080

1. the merchant's server has the user's openid under the official account's app id (the OAuth
   snsapi_base redirect's code, exchanged for it; the demo simulator's openid rule stands in for
   WeChat) and mints an app token allowed to buy through the official account only;
   an openid the user has under the mini program is refused by the official account's app id
   (WeChat's "appid和openid不匹配", answered 400 openid_not_for_app: openids are per app id);
2. creates the order through `"app": "mp"` with the right openid: 201 with `jsapi_params`;
3. checks jsapi_params on its own (paySign recomputed, and by wechatpy when installed): what the
   page passes to WeixinJSBridge.invoke('getBrandWCPayRequest', …) unchanged;
4. the same token cannot buy through the Android app (403 app_not_allowed);
5. the user pays in the (simulated) WeChat: only that openid can pay a JSAPI order;
6. the page waits on the gateway until the order is final (never trusts get_brand_wcpay_request:ok).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from channel_common import app_token, call, demo_openid, expect, first_product, jsapi_purchase, new_out_trade_no  # noqa: E402

APP = os.environ.get("MP_APP", "mp")
APPID = os.environ.get("MP_APPID", "wx6f1e2d3c4b5a6978")  # demo mode's official account
MINI_APPID = os.environ.get("MINI_APPID", "wx2421b1c4370ec43b")  # demo mode's mini program
USER = os.environ.get("APP_USER", "mp-learner")

user = "u" + USER.replace("-", "")
openid = demo_openid(APPID, user)
token = app_token(USER, apps=[APP])
status, refused = call("POST", "/v1/orders", token, {"product_id": first_product(token)["id"],
                                                       "out_trade_no": new_out_trade_no(), "app": APP,
                                                       "openid": demo_openid(MINI_APPID, user)})
# WeChat's refusal (PARAM_ERROR, appid和openid不匹配) is the create's answer: 400 openid_not_for_app.
expect(status == 400 and refused["error"]["code"] == "openid_not_for_app" and refused["error"].get("field") == "openid"
       and refused["error"].get("wechat_code") == "PARAM_ERROR",
       "1. the mini program's openid refused", refused)
print(f"1. OAuth snsapi_base: openid {openid} under {APPID}; app token for {USER} limited to [{APP}]; "
      f"the same user's mini-program openid: {status} {refused['error']['code']} ({refused['error']['wechat_code']})")

jsapi_purchase(token, APP, APPID, openid, "WeixinJSBridge.invoke('getBrandWCPayRequest')")
print("OK")
