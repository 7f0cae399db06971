# SPDX-License-Identifier: Apache-2.0
"""What the four channel examples share (Python standard library only; wechatpy when installed).

Each example (miniprogram.py, official_account.py, pc_native.py, h5.py) plays the merchant's web
server and the client against a demo gateway (`scripts/run`): it creates an order through one of
demo mode's apps, checks the client parameters the gateway answered on its own, pays in the
simulated WeChat, and waits on the gateway until the order is final. Exit 1 at the first answer
that is not what the guide says, 2 when the gateway cannot be reached.
"""
import base64
import hashlib
import hmac
import json
import os
import sys
import time
import urllib.error
import urllib.request
import uuid

BASE = (sys.argv[1] if len(sys.argv) > 1 else os.environ.get("GATEWAY", "http://127.0.0.1:8080")).rstrip("/")
# Demo mode's published secrets (README, "Try it in two minutes (demo mode)"); never these in production.
APP_TOKEN_SECRET = os.environ.get("APP_TOKEN_SECRET", "demo-app-token-secret-simulator-only-0001")
# The v2 API key the demo merchant signs with: only the merchant's server knows it in production,
# which is why the server, not the client, checks paySign here.
API_KEY = os.environ.get("WXPAY_API_KEY", "192006250b4c09247ec02edce69f6a2d")
WAIT = 10


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def app_token(user_id, apps=None, ttl=3600):
    """An HS256 app token for `user_id`, allowed to buy only through `apps` (README, app tokens)."""
    now = int(time.time())
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    claims = {"sub": user_id, "aud": "wxpay-gateway", "iat": now, "exp": now + ttl}
    if apps is not None:
        claims["apps"] = apps
    payload = b64url(json.dumps(claims, separators=(",", ":")).encode())
    signature = hmac.new(APP_TOKEN_SECRET.encode(), f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{b64url(signature)}"


def call(method, path, token=None, body=None, raw=False):
    """One request; the read timeout is longer than any wait. `raw` answers the bytes and headers."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(BASE + path, data=data, method=method)
    if token:
        request.add_header("Authorization", "Bearer " + token)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=WAIT + 10) as response:
            content = response.read()
            return (response.status, content, dict(response.headers)) if raw else (response.status, json.loads(content or b"null"))
    except urllib.error.HTTPError as error:
        content = error.read()
        if raw:
            return error.code, content, dict(error.headers)
        try:
            return error.code, json.loads(content or b"null")
        except ValueError:
            return error.code, content.decode(errors="replace")
    except (urllib.error.URLError, OSError) as error:
        print(f"cannot reach {BASE}: {error}", file=sys.stderr)
        sys.exit(2)


def expect(condition, step, answer):
    if not condition:
        print(f"FAILED at {step}: {json.dumps(answer, ensure_ascii=False, default=str)}", file=sys.stderr)
        sys.exit(1)


def demo_openid(appid, user):
    """The demo simulator's openid of `user` under `appid` ("o" + the app id's last six characters
    + the user). In production the openid comes from WeChat: code2session (mini program) or the
    OAuth snsapi_base redirect (official account), each under that app id only."""
    return "o" + appid[-6:] + user


def v2_signature(fields, sign_type, key=API_KEY):
    """WeChat Pay v2's signature: the non-empty fields sorted by name as k=v&…, then `&key=KEY`;
    MD5 or HMAC-SHA256 (keyed with the API key), upper-case hex."""
    text = "&".join(f"{k}={fields[k]}" for k in sorted(fields) if fields[k] != "" and k != "paySign")
    text += "&key=" + key
    if sign_type == "MD5":
        return hashlib.md5(text.encode()).hexdigest().upper()
    if sign_type == "HMAC-SHA256":
        return hmac.new(key.encode(), text.encode(), hashlib.sha256).hexdigest().upper()
    raise ValueError(f"not a v2 signType: {sign_type}")


def check_jsapi_params(params, appid, prepay_id):
    """What the merchant's page hands to wx.requestPayment / getBrandWCPayRequest, checked on its
    own: every value a string, package = "prepay_id=…", paySign recomputed here and, when wechatpy
    is installed (scripts/test-tools puts it in .build/test-tools-venv), by wechatpy too."""
    expect(set(params) == {"appId", "timeStamp", "nonceStr", "package", "signType", "paySign"}, "jsapi_params keys", params)
    expect(all(isinstance(v, str) for v in params.values()), "jsapi_params are strings (timeStamp too)", params)
    expect(params["appId"] == appid, "jsapi_params appId is the app's", params)
    expect(params["package"] == "prepay_id=" + prepay_id, "package is prepay_id=…", params)
    # Seconds, not milliseconds; not in the past. Not "now" either: the gateway's clock, which a
    # demo's clock/advance moves ahead of this machine's, is the one that counts.
    expect(params["timeStamp"].isdigit() and len(params["timeStamp"]) == 10 and int(params["timeStamp"]) > time.time() - 600,
           "timeStamp in seconds", params)
    if params["signType"] == "RSA":
        print("   signType RSA (API v3): paySign is SHA256withRSA by the merchant key; verify it with the merchant's public key")
        return "RSA"
    five = {k: params[k] for k in ("appId", "timeStamp", "nonceStr", "package", "signType")}
    mine = v2_signature(five, params["signType"])
    expect(mine == params["paySign"], "paySign recomputed over the five fields", {"ours": mine, "gateway": params["paySign"]})
    checked = "recomputed here"
    try:
        from wechatpy.pay.utils import calculate_signature, calculate_signature_hmac
    except ImportError:
        return checked
    theirs = (calculate_signature if params["signType"] == "MD5" else calculate_signature_hmac)(five, API_KEY)
    expect(theirs == params["paySign"], "wechatpy's paySign", {"wechatpy": theirs, "gateway": params["paySign"]})
    return checked + " and by wechatpy"


def wait_until_final(out_trade_no, token, step):
    """The only answer a page may trust: the gateway's, waiting up to WAIT s per call."""
    deadline = time.monotonic() + 60
    while True:
        status, order = call("GET", f"/v1/orders/{out_trade_no}?wait={WAIT}", token)
        expect(status == 200, step, order)
        if order["final"] or time.monotonic() > deadline:
            break
        print(f"{step} final:false ({order['state']}): not known yet, asking again")
    expect(order["final"] and order["state"] == "SUCCESS", step, order)
    print(f"{step} the gateway says {order['state']} (final), transaction {order['transaction_id']}")
    return order


def new_out_trade_no():
    """Chosen by the client and kept for retries (a UUID without dashes fits)."""
    return uuid.uuid4().hex


def first_product(token):
    status, catalog = call("GET", "/v1/catalog", token)
    expect(status == 200 and catalog["products"], "catalog", catalog)
    return catalog["products"][0]


def jsapi_purchase(token, app, appid, openid, js_call):
    """A JSAPI purchase (mini program or official account) after the openid is known: steps 2-6."""
    product = first_product(token)
    out_trade_no = new_out_trade_no()
    status, created = call("POST", "/v1/orders", token, {"product_id": product["id"], "out_trade_no": out_trade_no,
                                                           "app": app, "openid": openid})
    expect(status == 201 and created["trade_type"] == "JSAPI" and "jsapi_params" in created, "2. create", created)
    params = created["jsapi_params"]
    print(f"2. created {out_trade_no} through {created['app']} ({created['trade_type']}): {created['amount']} fen, "
          f"package={params['package']}")

    checked = check_jsapi_params(params, appid, created["prepay_id"])
    print(f"3. jsapi_params for {js_call}: signType={params['signType']} timeStamp={params['timeStamp']!r}, paySign {checked}")

    status, refused = call("POST", "/v1/orders", token, {"product_id": product["id"], "out_trade_no": new_out_trade_no(),
                                                           "app": "android"})
    expect(status == 403 and refused["error"]["code"] == "app_not_allowed", "4. another app refused", refused)
    print("4. the same token through the Android app: 403 app_not_allowed, nothing written")

    status, stranger = call("POST", f"/simulator/orders/{out_trade_no}/pay", body={"openid": demo_openid(appid, "someoneelse")})
    expect(status == 409, "5. another payer refused", stranger)
    status, paid = call("POST", f"/simulator/orders/{out_trade_no}/pay", body={"openid": openid})
    expect(status == 200, "5. simulated payment", paid)
    print("5. paid in the simulated WeChat by the order's own payer (another openid: 409)")

    wait_until_final(out_trade_no, token, "6.")
