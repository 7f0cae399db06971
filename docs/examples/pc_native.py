#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A PC website's purchase by QR code (NATIVE; docs/pc-web.md), against a demo gateway (`scripts/run`):

    python3 docs/examples/pc_native.py [BASE_URL]      # default http://127.0.0.1:8080

1. the site's server mints an app token for the logged-in user, allowed to buy through `web` only;
2. creates the order through `"app": "web"`: 201 with `code_url` (weixin://wxpay/bizpayurl?pr=…);
3. the page shows code_url as a QR code: the gateway's `GET /v1/orders/{id}/qr.png` when this
   gateway has it (decoded back with zbarimg when installed, to prove it holds code_url), else the
   page renders code_url itself with any QR library (`qrencode` when installed);
4. a phone (the simulated WeChat) scans the code and pays: `POST /simulator/scan` with code_url;
5. the page polls the gateway with `wait` until the order is final, then shows "paid".
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from channel_common import app_token, call, expect, first_product, new_out_trade_no, wait_until_final  # noqa: E402

APP = os.environ.get("WEB_APP", "web")
USER = os.environ.get("APP_USER", "web-learner")

token = app_token(USER, apps=[APP])
print(f"1. app token for {USER} limited to [{APP}]")

out_trade_no = new_out_trade_no()
status, created = call("POST", "/v1/orders", token, {"product_id": first_product(token)["id"],
                                                       "out_trade_no": out_trade_no, "app": APP})
expect(status == 201 and created["trade_type"] == "NATIVE", "2. create", created)
code_url = created.get("code_url") or ""
expect(code_url.startswith("weixin://wxpay/bizpayurl?"), "2. code_url", created)
expect("jsapi_params" not in created and "app_params" not in created, "2. no client parameters", created)
print(f"2. created {out_trade_no} through {created['app']} (NATIVE): {created['amount']} fen, code_url {code_url}")

status, png, headers = call("GET", f"/v1/orders/{out_trade_no}/qr.png", token, raw=True)
if status == 200:
    expect(png.startswith(b"\x89PNG\r\n\x1a\n"), "3. qr.png is a PNG", headers)
    zbarimg = shutil.which("zbarimg")
    if zbarimg:
        with tempfile.NamedTemporaryFile(suffix=".png") as image:
            image.write(png)
            image.flush()
            decoded = subprocess.run([zbarimg, "--quiet", "--raw", image.name], capture_output=True, text=True, timeout=60)
        expect(decoded.stdout.strip() == code_url, "3. the QR holds code_url", decoded.stdout)
        print(f"3. qr.png from the gateway ({len(png)} bytes), decoded by zbarimg back to code_url")
    else:
        print(f"3. qr.png from the gateway ({len(png)} bytes; install zbar-tools to decode it here)")
else:
    expect(status == 404, "3. qr.png", png)
    qrencode = shutil.which("qrencode")
    if qrencode:
        subprocess.run([qrencode, "-t", "UTF8", "-m", "1", code_url], check=True, timeout=60)
    print(f"3. this gateway has no qr.png route ({status}): the page renders code_url itself"
          + ("" if qrencode else " (install qrencode to see it here)"))

status, scanned = call("POST", "/simulator/scan", body={"code_url": code_url})
expect(status == 200, "4. scan and pay", scanned)
print("4. scanned with the simulated WeChat and paid")

wait_until_final(out_trade_no, token, "5.")
print("OK")
