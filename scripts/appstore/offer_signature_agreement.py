#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the gateway's promotional offer signatures (POST /v1/iap/offers/signature) against
Apple's own conventions (run by the Swift test OfferSignatureAgreementTests with
.build/test-tools-venv's Python; see scripts/test-tools):

1. PyJWT, as the App Store Server Library uses it, decodes each signature with the public half of
   the In-App Purchase key: ES256 only, audience `promotional-offer`, the issuer id, `iat` present.
2. Python `cryptography`, used directly, verifies the raw r||s ES256 signature over the signing input.
3. Apple's app-store-server-library's PromotionalOfferV2SignatureCreator, given the same key, ids
   and offer, makes a signature with the same header and the same claims: same names, same values
   but for `iat` (within a few minutes of ours) and `nonce` (a fresh lowercase UUID in each).
4. Every nonce is different, and a signature whose claims were changed is refused.

    offer_signature_agreement.py INPUT.json     # written by the Swift test; prints one JSON report

INPUT.json: {"key_p8", "key_id", "issuer_id", "bundle_id",
             "signatures": [{"jws", "product_id", "offer_identifier", "transaction_id" (or null)}]}

Exit status 0 when every check passed, 1 otherwise.
"""
import base64
import json
import sys
import time
import uuid

import jwt
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from appstoreserverlibrary.jws_signature_creator import PromotionalOfferV2SignatureCreator

checks = []


def check(name, function):
    try:
        detail = function()
        checks.append({"name": name, "ok": True, "detail": str(detail)[:200] if detail is not None else ""})
    except Exception as error:  # every failure is reported, none stops the run
        checks.append({"name": name, "ok": False, "detail": f"{type(error).__name__}: {error}"[:300]})


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def parts(jws):
    header_text, payload_text, signature_text = jws.split(".")
    return json.loads(b64url(header_text)), json.loads(b64url(payload_text)), signature_text


def main(path):
    with open(path, encoding="utf-8") as file:
        given = json.load(file)
    with open(given["key_p8"], "rb") as file:
        key_pem = file.read()
    private_key = serialization.load_pem_private_key(key_pem, password=None)
    public_key = private_key.public_key()
    creator = PromotionalOfferV2SignatureCreator(signing_key=key_pem, key_id=given["key_id"],
                                                 issuer_id=given["issuer_id"], bundle_id=given["bundle_id"])
    nonces = []

    for index, item in enumerate(given["signatures"]):
        jws = item["jws"]
        label = f"signature {index + 1} ({'with' if item['transaction_id'] else 'without'} transactionId)"

        def pyjwt_decodes():
            claims = jwt.decode(jws, public_key, algorithms=["ES256"], audience="promotional-offer",
                                issuer=given["issuer_id"], leeway=300, options={"require": ["iat", "aud", "iss"]})
            return sorted(claims)

        def cryptography_verifies():
            signing_input, _, signature_text = jws.rpartition(".")
            raw = b64url(signature_text)
            assert len(raw) == 64, f"r||s is 64 bytes, not {len(raw)}"
            der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
            public_key.verify(der, signing_input.encode("ascii"), ec.ECDSA(hashes.SHA256()))

        def same_as_apples_library():
            header, claims, _ = parts(jws)
            reference = creator.create_signature(product_id=item["product_id"], offer_identifier=item["offer_identifier"],
                                                 transaction_id=item["transaction_id"])
            reference_header, reference_claims, _ = parts(reference)
            assert header == reference_header, f"header {header} != the library's {reference_header}"
            assert sorted(claims) == sorted(reference_claims), f"claims {sorted(claims)} != the library's {sorted(reference_claims)}"
            for name, value in reference_claims.items():
                if name in ("iat", "nonce"):
                    continue
                assert claims[name] == value, f"{name}: {claims[name]!r} != the library's {value!r}"
            assert isinstance(claims["iat"], int), "iat is an integer number of seconds"
            assert abs(claims["iat"] - reference_claims["iat"]) <= 300, "iat is now"
            assert claims["productId"] == item["product_id"] and claims["offerIdentifier"] == item["offer_identifier"]
            return header

        def nonce_is_a_lowercase_uuid():
            _, claims, _ = parts(jws)
            nonce = claims["nonce"]
            assert str(uuid.UUID(nonce)) == nonce, f"nonce {nonce!r} is not a lowercase UUID"
            nonces.append(nonce)

        def tampered_is_refused():
            header_text, payload_text, signature_text = jws.split(".")
            claims = json.loads(b64url(payload_text))
            claims["offerIdentifier"] = claims["offerIdentifier"] + "x"
            forged_payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
            try:
                jwt.decode(f"{header_text}.{forged_payload}.{signature_text}", public_key, algorithms=["ES256"],
                           audience="promotional-offer", leeway=300)
            except jwt.InvalidSignatureError:
                return "refused"
            raise AssertionError("a changed claim still verified")

        check(f"{label}: PyJWT decodes it with the key's public half (ES256, aud, iss, iat)", pyjwt_decodes)
        check(f"{label}: cryptography verifies the raw ES256 signature", cryptography_verifies)
        check(f"{label}: header and claims are PromotionalOfferV2SignatureCreator's", same_as_apples_library)
        check(f"{label}: nonce is a lowercase UUID", nonce_is_a_lowercase_uuid)
        check(f"{label}: a changed claim no longer verifies", tampered_is_refused)

    def nonces_differ():
        assert len(nonces) == len(given["signatures"]) and len(set(nonces)) == len(nonces), "every nonce is fresh"

    check("every signature has a nonce of its own", nonces_differ)
    report = {"checks": checks, "checked_at": int(time.time())}
    print(json.dumps(report))
    return 0 if all(item["ok"] for item in checks) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
