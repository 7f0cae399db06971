#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpus in fuzz/corpus/: real-shaped WeChat Pay v2 documents, signed with the
official test key the notify fuzz target uses (so its verify-success path is reachable from the
seeds), and a few hostile documents. Rerun after changing a seed; the output is deterministic."""
import hashlib, hmac, os

KEY = "192006250b4c09247ec02edce69f6a2d"
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def sign(fields, sign_type):
    pairs = sorted((k, v) for k, v in fields if v != "" and k != "sign")
    message = ("&".join(f"{k}={v}" for k, v in pairs) + "&key=" + KEY).encode()
    if sign_type == "MD5":
        return hashlib.md5(message).hexdigest().upper()
    return hmac.new(KEY.encode(), message, hashlib.sha256).hexdigest().upper()


def document(fields, cdata=True, newline=""):
    body = "".join(
        f"<{k}><![CDATA[{v}]]></{k}>{newline}" if cdata and not v.isdigit() else f"<{k}>{v}</{k}>{newline}"
        for k, v in fields)
    return f"<xml>{newline}{body}</xml>"


def signed(fields, sign_type, **options):
    return document(fields + [("sign", sign(fields, sign_type))], **options)


notify = [
    ("appid", "wx2421b1c4370ec43b"), ("attach", "支付测试"), ("bank_type", "CMB_CREDIT"),
    ("cash_fee", "900"), ("coupon_count", "2"), ("coupon_fee", "100"), ("coupon_fee_0", "60"),
    ("coupon_fee_1", "40"), ("coupon_id_0", "10000"), ("coupon_id_1", "10001"),
    ("coupon_type_0", "CASH"), ("coupon_type_1", "NO_CASH"), ("fee_type", "CNY"),
    ("is_subscribe", "Y"), ("mch_id", "10000100"), ("nonce_str", "5d2b6c2a8db53831f7eda20af46e531c"),
    ("openid", "oUpF8uMEb4qRXf22hE3X68TekukE"), ("out_trade_no", "1409811653"),
    ("result_code", "SUCCESS"), ("return_code", "SUCCESS"), ("time_end", "20140903131540"),
    ("total_fee", "1000"), ("trade_type", "APP"), ("transaction_id", "1004400740201409030005092168"),
]
unified_response = [
    ("return_code", "SUCCESS"), ("return_msg", "OK"), ("appid", "wx2421b1c4370ec43b"),
    ("mch_id", "10000100"), ("nonce_str", "IITRi8Iabbblz1Jc"), ("result_code", "SUCCESS"),
    ("prepay_id", "wx201411101639507cbf6ffd8b0779950874"), ("trade_type", "APP"),
]
orderquery_response = [
    ("return_code", "SUCCESS"), ("return_msg", "OK"), ("appid", "wx2421b1c4370ec43b"),
    ("mch_id", "10000100"), ("nonce_str", "TN55wO9Pba5yENl8"), ("result_code", "SUCCESS"),
    ("openid", "oUpF8uN95-Ptaags6E_roPHg7AG0"), ("is_subscribe", "Y"), ("trade_type", "APP"),
    ("bank_type", "CCB_DEBIT"), ("total_fee", "1"), ("fee_type", "CNY"),
    ("transaction_id", "1008450740201411110005820873"), ("out_trade_no", "1415757673"),
    ("attach", "订单额外描述"), ("time_end", "20141111170043"), ("trade_state", "SUCCESS"),
    ("trade_state_desc", "支付成功"), ("cash_fee", "1"),
]
refundquery_response = [
    ("return_code", "SUCCESS"), ("appid", "wx2421b1c4370ec43b"), ("mch_id", "10000100"),
    ("nonce_str", "TeqClE3i0mvn3DrK"), ("result_code", "SUCCESS"), ("out_trade_no", "1415757673"),
    ("transaction_id", "1008450740201411110005820873"), ("total_fee", "100"), ("cash_fee", "100"),
    ("refund_count", "2"), ("out_refund_no_0", "1415701182"), ("refund_id_0", "2008450740201411110000174436"),
    ("refund_fee_0", "1"), ("refund_status_0", "SUCCESS"), ("refund_recv_accout_0", "支付用户零钱"),
    ("out_refund_no_1", "1415701183"), ("refund_id_1", "2008450740201411110000174437"),
    ("refund_fee_1", "2"), ("refund_status_1", "PROCESSING"),
]

seeds = {
    "notify-md5.xml": signed(notify + [("sign_type", "MD5")], "MD5"),
    "notify-hmac.xml": signed(notify + [("sign_type", "HMAC-SHA256")], "HMAC-SHA256"),
    "notify-hmac-without-sign-type.xml": signed(notify, "HMAC-SHA256"),
    "notify-pretty-crlf.xml": '<?xml version="1.0" encoding="UTF-8"?>\r\n'
        + signed(notify, "MD5", newline="\r\n"),
    "unifiedorder-response.xml": signed(unified_response, "MD5"),
    "orderquery-response.xml": signed(orderquery_response, "HMAC-SHA256", cdata=False),
    "refundquery-response.xml": signed(refundquery_response, "MD5"),
    "closeorder-orderpaid.xml": signed([("return_code", "SUCCESS"), ("appid", "wx2421b1c4370ec43b"),
        ("mch_id", "10000100"), ("nonce_str", "BFK89FC6rxKCOjLX"), ("result_code", "FAIL"),
        ("err_code", "ORDERPAID"), ("err_code_des", "订单已支付")], "MD5"),
    "fail-response.xml": document([("return_code", "FAIL"), ("return_msg", "签名失败")]),
    "refund-notify.xml": document([("return_code", "SUCCESS"), ("appid", "wx2421b1c4370ec43b"),
        ("mch_id", "10000100"), ("nonce_str", "TeqClE3i0mvn3DrK"),
        ("req_info", "T87GAHG17TGAHG1TGHAHAHA1Y1CIOA9UGJH1GAHV871HAGAGQYQQPOOJMXNBCXBVNMNMAJAA==")]),
    "req-info-root.xml": "<root><out_refund_no><![CDATA[131811191610442717309]]></out_refund_no>"
        "<refund_status><![CDATA[SUCCESS]]></refund_status><success_time><![CDATA[2018-11-19 16:24:13]]>"
        "</success_time></root>",
    "entities-and-references.xml": '<xml><body>腾讯 &amp; 会员 &lt;VIP&gt; &#20013;&#x6587; &quot;&apos;</body>'
        '<detail><![CDATA[{"x":"a]]]]><![CDATA[>b"}]]></detail><attach/><a>&#13;</a></xml>',
    "hostile-xxe-file.xml": '<?xml version="1.0"?><!DOCTYPE xml [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
        '<xml><attach>&xxe;</attach></xml>',
    "hostile-xxe-http.xml": '<!DOCTYPE xml SYSTEM "http://127.0.0.1:1/x.dtd"><xml><a>1</a></xml>',
    "hostile-parameter-entity.xml": '<!DOCTYPE xml [<!ENTITY % pe SYSTEM "http://127.0.0.1:1/pe.dtd"> %pe;]>'
        '<xml><a>1</a></xml>',
    "hostile-billion-laughs.xml": '<!DOCTYPE xml [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;">'
        '<!ENTITY c "&b;&b;&b;&b;&b;">]><xml><a>&c;</a></xml>',
    "hostile-undeclared-entity.xml": "<xml><a>&xxe;</a></xml>",
    "hostile-processing-instruction.xml": "<xml><?php system('id'); ?><a>1</a></xml>",
    "hostile-comment.xml": "<xml><a>1<!-- x -->00</a></xml>",
    "hostile-attributes.xml": '<xml xmlns:xi="http://www.w3.org/2001/XInclude"><xi:include href="/etc/passwd"/></xml>',
    "hostile-duplicate.xml": "<xml><total_fee>1</total_fee><total_fee>100</total_fee></xml>",
    "hostile-deep.xml": "<xml>" + "<a>" * 50 + "</a>" * 50 + "</xml>",
    "hostile-unterminated-cdata.xml": "<xml><a><![CDATA[SUCCESS</a></xml>",
    "hostile-bom-and-declaration.xml": "\ufeff<?xml version='1.0' encoding='gbk' standalone='no'?><xml><a>1</a></xml>",
}
binary_seeds = {
    "hostile-gbk.xml": b'<?xml version="1.0" encoding="GBK"?><xml><body>\xc4\xe3\xba\xc3</body></xml>',
    "hostile-overlong-utf8.xml": b"<xml><a>\xc0\xaf</a></xml>",
    "hostile-surrogate-utf8.xml": b"<xml><a>\xed\xa0\x80</a></xml>",
    "hostile-nul.xml": b"<xml><a>1\x002</a></xml>",
    "hostile-utf16.xml": "\ufeff<xml><a>1</a></xml>".encode("utf-16-le"),
}

os.makedirs(HERE, exist_ok=True)
for name, text in seeds.items():
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(text.encode())
for name, data in binary_seeds.items():
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)
print(f"wrote {len(seeds) + len(binary_seeds)} seeds to {HERE}")
