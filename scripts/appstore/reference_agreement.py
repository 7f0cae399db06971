#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the App Store simulator against two outside references (run by the Swift test
ReferenceAgreementTests with .build/test-tools-venv's Python; see scripts/test-tools):

1. Python `cryptography`, used directly: every JWS's x5c chain (leaf issued by the intermediate,
   the intermediate by the configured root, x5c[2] equal to it, validity at signedDate, both
   Apple OIDs, a P-256 leaf) and its raw r||s ES256 signature.
2. Apple's own app-store-server-library: SignedDataVerifier (online checks off, the simulator's
   root as its root certificate) must accept the signed transactions, renewal infos and
   notifications and refuse the rogue-signed one; AppStoreServerAPIClient (base URL overridden to
   the simulator) must work against the simulator's Server API, Get Notification History and Send
   Consumption Information included; ReceiptUtility must read the transaction ids of the
   simulator's app receipts (PKCS #7).

    reference_agreement.py INPUT.json     # written by the Swift test; prints one JSON report

Exit status 0 when every check passed, 1 otherwise.
"""
import base64
import datetime
import json
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from appstoreserverlibrary.api_client import APIException, AppStoreServerAPIClient, GetTransactionHistoryVersion
from appstoreserverlibrary.models.ConsumptionRequest import ConsumptionRequest
from appstoreserverlibrary.models.DeliveryStatus import DeliveryStatus
from appstoreserverlibrary.models.AutoRenewStatus import AutoRenewStatus
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.models.ExtendReasonCode import ExtendReasonCode
from appstoreserverlibrary.models.ExtendRenewalDateRequest import ExtendRenewalDateRequest
from appstoreserverlibrary.models.NotificationHistoryRequest import NotificationHistoryRequest
from appstoreserverlibrary.models.RefundPreference import RefundPreference
from appstoreserverlibrary.models.Status import Status
from appstoreserverlibrary.models.Type import Type
from appstoreserverlibrary.receipt_utility import ReceiptUtility
from appstoreserverlibrary.models.TransactionHistoryRequest import Order, TransactionHistoryRequest
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier, VerificationException

LEAF_OID = x509.ObjectIdentifier("1.2.840.113635.100.6.11.1")
INTERMEDIATE_OID = x509.ObjectIdentifier("1.2.840.113635.100.6.2.1")

checks = []


def check(name, function):
    try:
        detail = function()
        checks.append({"name": name, "ok": True, "detail": str(detail)[:200] if detail is not None else ""})
    except Exception as error:  # every failure is reported, none stops the run
        checks.append({"name": name, "ok": False, "detail": f"{type(error).__name__}: {error}"[:300]})


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def cryptography_verify(jws, root):
    """The chain and signature, by cryptography alone."""
    header_text, payload_text, signature_text = jws.split(".")
    header = json.loads(b64url(header_text))
    payload = json.loads(b64url(payload_text))
    assert header["alg"] == "ES256", "alg"
    chain = [x509.load_der_x509_certificate(base64.b64decode(c, validate=True)) for c in header["x5c"]]
    assert len(chain) == 3, "three certificates"
    leaf, intermediate, presented_root = chain
    assert presented_root == root, "x5c[2] is the configured root"
    intermediate.verify_directly_issued_by(root)
    leaf.verify_directly_issued_by(intermediate)
    at = datetime.datetime.fromtimestamp(payload["signedDate"] / 1000, tz=datetime.timezone.utc)
    for certificate in chain:
        assert certificate.not_valid_before_utc <= at <= certificate.not_valid_after_utc, "valid at signedDate"
    leaf.extensions.get_extension_for_oid(LEAF_OID)
    intermediate.extensions.get_extension_for_oid(INTERMEDIATE_OID)
    key = leaf.public_key()
    assert isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1", "P-256 leaf"
    raw = b64url(signature_text)
    assert len(raw) == 64, "raw r||s"
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    key.verify(der, f"{header_text}.{payload_text}".encode(), ec.ECDSA(hashes.SHA256()))
    return payload


def main(path):
    with open(path, encoding="utf-8") as file:
        data = json.load(file)
    with open(data["root_der"], "rb") as file:
        root_der = file.read()
    root = x509.load_der_x509_certificate(root_der)
    bundle, app_apple_id = data["bundle_id"], data["app_apple_id"]
    verifiers = {
        "Production": SignedDataVerifier([root_der], False, Environment.PRODUCTION, bundle, app_apple_id),
        "Sandbox": SignedDataVerifier([root_der], False, Environment.SANDBOX, bundle, None),
    }

    # 1. cryptography on every JWS the simulator made.
    for item in data["transactions"] + data["renewal_infos"] + data["notifications"]:
        check(f"cryptography verifies {item['kind']} ({item['environment']})", lambda item=item: cryptography_verify(item["jws"], root))

    # 2. Apple's SignedDataVerifier.
    for item in data["transactions"]:
        def transaction(item=item):
            decoded = verifiers[item["environment"]].verify_and_decode_signed_transaction(item["jws"])
            assert decoded.transactionId == item["transaction_id"], "transactionId"
            assert decoded.bundleId == bundle and decoded.rawEnvironment == item["environment"]
            return decoded.productId
        check(f"SignedDataVerifier accepts a transaction ({item['environment']})", transaction)
    for item in data["renewal_infos"]:
        check(f"SignedDataVerifier accepts renewal info ({item['environment']})",
              lambda item=item: verifiers[item["environment"]].verify_and_decode_renewal_info(item["jws"]).autoRenewProductId)
    for item in data["notifications"]:
        def notification(item=item):
            decoded = verifiers[item["environment"]].verify_and_decode_notification(item["jws"])
            inner = decoded.data.signedTransactionInfo
            if inner:
                verifiers[item["environment"]].verify_and_decode_signed_transaction(inner)
            return decoded.rawNotificationType
        check(f"SignedDataVerifier accepts a {item['type']} notification ({item['environment']})", notification)

    def rogue():
        try:
            verifiers["Production"].verify_and_decode_signed_transaction(data["rogue_transaction"])
        except VerificationException as error:
            return error.status.name
        raise AssertionError("a transaction signed by the rogue chain was accepted")
    check("SignedDataVerifier refuses the rogue-signed transaction", rogue)

    # 3. Apple's AppStoreServerAPIClient against the simulator's Server API.
    with open(data["key_p8"], "rb") as file:
        key = file.read()

    def client(environment, base):
        api = AppStoreServerAPIClient(key, data["key_id"], data["issuer_id"], bundle, environment)
        api._base_url = base  # the library's one base URL, overridden as its users do for tests
        return api

    production = client(Environment.PRODUCTION, data["base_url"])
    sandbox = client(Environment.SANDBOX, data["base_url"] + "/sandbox")
    ids = data["ids"]

    def transaction_info():
        response = production.get_transaction_info(ids["production"])
        return verifiers["Production"].verify_and_decode_signed_transaction(response.signedTransactionInfo).transactionId
    check("AppStoreServerAPIClient.get_transaction_info (production)", transaction_info)

    def sandbox_info():
        response = sandbox.get_transaction_info(ids["sandbox"])
        return verifiers["Sandbox"].verify_and_decode_signed_transaction(response.signedTransactionInfo).rawEnvironment
    check("AppStoreServerAPIClient.get_transaction_info (sandbox base URL)", sandbox_info)

    def history():
        seen, revision, pages = [], None, 0
        while True:
            page = production.get_transaction_history(
                ids["production"], revision, TransactionHistoryRequest(sort=Order.ASCENDING), GetTransactionHistoryVersion.V2)
            pages += 1
            seen += [verifiers["Production"].verify_and_decode_signed_transaction(t).transactionId for t in page.signedTransactions]
            assert page.bundleId == bundle and page.appAppleId == app_apple_id
            if not page.hasMore:
                break
            revision = page.revision
            assert pages < 10, "paging ends"
        assert seen == ids["history"], f"history {len(seen)} of {len(ids['history'])}"
        return f"{len(seen)} transactions in {pages} pages"
    check("AppStoreServerAPIClient.get_transaction_history v2, paged by revision", history)

    def filtered():
        page = production.get_transaction_history(
            ids["production"], None, TransactionHistoryRequest(productIds=[ids["filter_product"]], revoked=False),
            GetTransactionHistoryVersion.V2)
        products = {verifiers["Production"].verify_and_decode_signed_transaction(t).productId for t in page.signedTransactions}
        assert products == {ids["filter_product"]}, products
        return len(page.signedTransactions)
    check("AppStoreServerAPIClient.get_transaction_history with productId and revoked filters", filtered)

    def refunds():
        page = production.get_refund_history(ids["production"], None)
        refunded = [verifiers["Production"].verify_and_decode_signed_transaction(t) for t in page.signedTransactions]
        assert [t.transactionId for t in refunded] == [ids["refunded"]], [t.transactionId for t in refunded]
        assert refunded[0].revocationDate is not None
        return refunded[0].rawRevocationReason
    check("AppStoreServerAPIClient.get_refund_history", refunds)

    def lookup():
        response = production.look_up_order_id(ids["order"])
        assert response.rawStatus == 0, response.rawStatus
        return [verifiers["Production"].verify_and_decode_signed_transaction(t).transactionId for t in response.signedTransactions]
    check("AppStoreServerAPIClient.look_up_order_id", lookup)

    def not_found():
        try:
            production.get_transaction_info("2000000999999999")
        except APIException as error:
            assert error.http_status_code == 404 and error.raw_api_error == 4040010, (error.http_status_code, error.raw_api_error)
            return error.api_error
        raise AssertionError("an unknown transaction was found")
    check("AppStoreServerAPIClient gets TransactionIdNotFound (4040010) for an unknown id", not_found)

    def unauthorized():
        wrong = AppStoreServerAPIClient(key, data["key_id"], "00000000-0000-0000-0000-000000000000", bundle,
                                        Environment.PRODUCTION)
        wrong._base_url = data["base_url"]
        try:
            wrong.get_transaction_info(ids["production"])
        except APIException as error:
            assert error.http_status_code == 401, error.http_status_code
            return 401
        raise AssertionError("a token with the wrong issuer was accepted")
    check("AppStoreServerAPIClient with the wrong issuer gets 401", unauthorized)

    for environment, api in (("Production", production), ("Sandbox", sandbox)):
        def notification_history(environment=environment, api=api):
            request = NotificationHistoryRequest(startDate=ids["history_start_ms"], endDate=ids["history_end_ms"])
            seen, token, pages = [], None, 0
            while True:
                page = api.get_notification_history(token, request)
                pages += 1
                for item in page.notificationHistory:
                    decoded = verifiers[environment].verify_and_decode_notification(item.signedPayload)
                    assert item.sendAttempts and item.sendAttempts[-1].sendAttemptResult.value == "SUCCESS", item.sendAttempts
                    seen.append(decoded.notificationUUID)
                if not page.hasMore:
                    break
                token = page.paginationToken
                assert token and pages < 10, "paging ends"
            expected = ids["notifications_by_environment"][environment]
            assert len(seen) == len(set(seen)) == expected, f"{len(seen)} notifications, {expected} expected"
            return f"{len(seen)} notifications in {pages} pages"
        check(f"AppStoreServerAPIClient.get_notification_history ({environment}), paged", notification_history)

    def consumption():
        production.send_consumption_information(ids["consumable"], ConsumptionRequest(
            customerConsented=True, sampleContentProvided=False, deliveryStatus=DeliveryStatus.DELIVERED,
            consumptionPercentage=50000, refundPreference=RefundPreference.GRANT_PRORATED))
        return "accepted"
    check("AppStoreServerAPIClient.send_consumption_information (v2) is accepted", consumption)

    def consumption_refused():
        try:
            production.send_consumption_information(ids["consumable"], ConsumptionRequest(
                customerConsented=False, sampleContentProvided=False, deliveryStatus=DeliveryStatus.DELIVERED))
        except APIException as error:
            assert error.http_status_code == 400 and error.raw_api_error == 4000035, (error.http_status_code, error.raw_api_error)
            return error.api_error
        raise AssertionError("consumption information without consent was accepted")
    check("AppStoreServerAPIClient.send_consumption_information without consent gets InvalidCustomerConsented", consumption_refused)

    # Subscriptions: Get All Subscription Statuses (its signed transaction and renewal info
    # decoded by the library's models) and Extend a Subscription Renewal Date. Last, as an
    # extension sends a notification the history checks above do not count.
    for environment, api, key in (("Production", production, "subscription"), ("Sandbox", sandbox, "sandbox_subscription")):
        def statuses(environment=environment, api=api, key=key):
            response = api.get_all_subscription_statuses(ids[key])
            assert response.bundleId == bundle and response.rawEnvironment == environment, (response.bundleId, response.rawEnvironment)
            items = [(group.subscriptionGroupIdentifier, item) for group in response.data for item in group.lastTransactions]
            assert len(items) == 1, len(items)
            group, item = items[0]
            assert item.status == Status.ACTIVE and item.originalTransactionId == ids[key], (item.rawStatus, item.originalTransactionId)
            transaction = verifiers[environment].verify_and_decode_signed_transaction(item.signedTransactionInfo)
            renewal = verifiers[environment].verify_and_decode_renewal_info(item.signedRenewalInfo)
            assert transaction.type == Type.AUTO_RENEWABLE_SUBSCRIPTION, transaction.rawType
            assert transaction.subscriptionGroupIdentifier == group and transaction.webOrderLineItemId, transaction
            assert renewal.autoRenewStatus == AutoRenewStatus.ON and renewal.isInBillingRetryPeriod is False, renewal
            assert renewal.renewalDate == transaction.expiresDate and renewal.originalTransactionId == ids[key]
            return group
        check(f"AppStoreServerAPIClient.get_all_subscription_statuses ({environment}), its JWS decoded", statuses)

    def statuses_filtered():
        response = production.get_all_subscription_statuses(ids["subscription"], [Status.EXPIRED, Status.REVOKED])
        assert response.data == [], response.data
        return "no expired or revoked subscription"
    check("AppStoreServerAPIClient.get_all_subscription_statuses filtered by status", statuses_filtered)

    def extend():
        request = ExtendRenewalDateRequest(extendByDays=3, extendReasonCode=ExtendReasonCode.SERVICE_ISSUE_OR_OUTAGE,
                                           requestIdentifier="reference-agreement-1")
        first = production.extend_subscription_renewal_date(ids["subscription"], request)
        again = production.extend_subscription_renewal_date(ids["subscription"], request)
        assert first.success and first.originalTransactionId == ids["subscription"] and first.webOrderLineItemId, first
        assert again.effectiveDate == first.effectiveDate, (first.effectiveDate, again.effectiveDate)
        after = production.get_all_subscription_statuses(ids["subscription"])
        latest = verifiers["Production"].verify_and_decode_signed_transaction(after.data[0].lastTransactions[0].signedTransactionInfo)
        assert latest.expiresDate == first.effectiveDate, (latest.expiresDate, first.effectiveDate)
        return first.effectiveDate
    check("AppStoreServerAPIClient.extend_subscription_renewal_date, idempotent by requestIdentifier", extend)

    def extend_refused():
        try:
            production.extend_subscription_renewal_date(ids["subscription"], ExtendRenewalDateRequest(
                extendByDays=91, extendReasonCode=ExtendReasonCode.OTHER, requestIdentifier="reference-agreement-2"))
        except APIException as error:
            assert error.http_status_code == 400 and error.raw_api_error == 4000009, (error.http_status_code, error.raw_api_error)
            return error.api_error
        raise AssertionError("an extension by 91 days was accepted")
    check("AppStoreServerAPIClient.extend_subscription_renewal_date by 91 days gets InvalidExtendByDays", extend_refused)

    for item in ids["receipts"]:
        def receipt(item=item):
            found = ReceiptUtility().extract_transaction_id_from_app_receipt(item["receipt"])
            assert found in item["transaction_ids"], (found, item["transaction_ids"])
            return found
        check(f"ReceiptUtility reads a transaction id from an app receipt of {len(item['transaction_ids'])}", receipt)

    report = {"checks": checks, "failed": sum(not c["ok"] for c in checks)}
    print(json.dumps(report))
    return 0 if report["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
