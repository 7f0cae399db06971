#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpus of the App Store JWS fuzz target in fuzz/corpus-appstore/: payloads
shaped like Apple's (the target signs each input as a payload with a trusted chain) and tokens
shaped like Apple's (signed by nobody the target trusts). Deterministic; rerun after a change."""
import base64, json, os

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus-appstore")

def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

transaction = {
    "transactionId": "2000000812345678", "originalTransactionId": "2000000812345678",
    "bundleId": "com.example.courses", "productId": "course.swift.basics", "type": "Non-Consumable",
    "quantity": 1, "appAccountToken": "7d3a2f9e-3c1b-4f5e-9a8d-2b6c4e1f0a9b", "inAppOwnershipType": "PURCHASED",
    "environment": "Production", "purchaseDate": 1764460795000, "originalPurchaseDate": 1764460795000,
    "signedDate": 1764460800000, "price": 68000, "currency": "CNY", "transactionReason": "PURCHASE",
    "storefront": "CHN", "storefrontId": "143465",
}
renewal = {
    "originalTransactionId": "2000000812340000", "autoRenewProductId": "vip.monthly", "productId": "vip.monthly",
    "autoRenewStatus": 1, "environment": "Sandbox", "signedDate": 1764460800000, "renewalDate": 1767052800000,
}
notification = {
    "notificationType": "REFUND", "notificationUUID": "0b7c8a40-2d4b-4d0e-9f1c-6c2a5b3e8d11", "version": "2.0",
    "signedDate": 1764460800000,
    "data": {"bundleId": "com.example.courses", "appAppleId": 1234567890, "environment": "Production",
             "signedTransactionInfo": "eyJhbGciOiJFUzI1NiJ9.e30.AAAA"},
}
seeds = {
    "payload-transaction.json": json.dumps(transaction),
    "payload-renewal.json": json.dumps(renewal),
    "payload-notification.json": json.dumps(notification),
    "payload-escapes.json": '{"signedDate":1764460800000,"s":"\\u00e9\\ud83d\\ude00\\n\\"\\\\\\/","n":-1.5e3,"a":[true,false,null]}',
    "payload-duplicate.json": '{"signedDate":1764460800000,"bundleId":"a","bundleId":"b"}',
    "payload-deep.json": '{"signedDate":1764460800000,"d":' + "[" * 40 + "]" * 40 + "}",
    "payload-float-date.json": '{"signedDate":1.7644608e12}',
    "token-alg-none.txt": b64url(b'{"alg":"none"}') + "." + b64url(json.dumps(transaction).encode()) + ".",
    "token-shape.txt": b64url(json.dumps({"alg": "ES256", "x5c": ["MIIB", "MIIC", "MIID"]}).encode()) + "."
        + b64url(json.dumps(transaction).encode()) + "." + b64url(bytes(64)),
    "token-der-signature.txt": b64url(b'{"alg":"ES256","x5c":[]}') + "." + b64url(b"{}") + "."
        + b64url(bytes([0x30, 0x44, 0x02, 0x20]) + bytes(32) + bytes([0x02, 0x20]) + bytes(32)),
}
os.makedirs(HERE, exist_ok=True)
for name, text in seeds.items():
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
        f.write(text)
print(f"wrote {len(seeds)} seeds to {HERE}")
