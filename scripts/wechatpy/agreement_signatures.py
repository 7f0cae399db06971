# SPDX-License-Identifier: Apache-2.0
"""Independent checks of what the simulator sends: response signatures and refund-notify decryption.

wechatpy never verifies API response signatures, so every response wechatpy receives is recorded
by a requests hook and checked here with wechatpy's own calculate_signature /
calculate_signature_hmac, using the algorithm of the request (WeChat signs a response with the
algorithm the request declared; MD5 when it declared none).
"""
import base64
import hashlib
import threading
from dataclasses import dataclass, field

import requests
import xmltodict
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from requests.adapters import HTTPAdapter
from wechatpy.pay.utils import calculate_signature, calculate_signature_hmac

MD5 = "MD5"
HMAC = "HMAC-SHA256"


def parse_xml(text):
    """The flat fields of a WeChat XML document, or None when it is not one."""
    try:
        document = xmltodict.parse(text)
    except Exception:  # xmltodict raises expat errors and ValueError alike
        return None
    if not isinstance(document, dict) or "xml" not in document or not isinstance(document["xml"], dict):
        return None
    return {name: ("" if value is None else value) for name, value in document["xml"].items()}


def signature(fields, key, sign_type):
    """The v2 signature of fields (sign excluded) with wechatpy's own functions."""
    unsigned = {name: value for name, value in fields.items() if name != "sign"}
    if sign_type == HMAC:
        return calculate_signature_hmac(unsigned, key)
    return calculate_signature(unsigned, key)


def matching_sign_type(fields, key):
    """Which algorithm the document's sign was made with under key, or None."""
    sign = fields.get("sign")
    for sign_type in (MD5, HMAC):
        if sign and sign == signature(fields, key, sign_type):
            return sign_type
    return None


def decrypt_req_info(req_info, key):
    """Decrypts a refund notify's req_info the way WeChat documents it (AES-256-ECB, PKCS#7, key =
    the 32 ASCII bytes of lowercase hex MD5 of the API key), without wechatpy's code."""
    aes_key = hashlib.md5(key.encode()).hexdigest().encode()
    decryptor = Cipher(algorithms.AES(aes_key), modes.ECB()).decryptor()
    padded = decryptor.update(base64.b64decode(req_info)) + decryptor.finalize()
    unpadder = padding.PKCS7(128).unpadder()
    plain = unpadder.update(padded) + unpadder.finalize()
    root = xmltodict.parse(plain.decode("utf-8"))["root"]
    return {name: ("" if value is None else value) for name, value in root.items()}


@dataclass
class RecordedExchange:
    method: str
    path: str
    request_fields: dict
    status: int
    content_type: str
    text: str


@dataclass
class ResponseCheck:
    """The verdict on one recorded response."""
    exchange: RecordedExchange
    kind: str  # signed-ok, signed-bad, unsigned-documented, unsigned-undocumented, not-xml
    detail: str


class TimeoutAdapter(HTTPAdapter):
    """Gives every request on a session a timeout: wechatpy's sandbox key fetch passes none."""

    def __init__(self, timeout, **kwargs):
        self._timeout = timeout
        super().__init__(**kwargs)

    def send(self, request, **kwargs):
        if kwargs.get("timeout") is None:
            kwargs["timeout"] = self._timeout
        return super().send(request, **kwargs)


@dataclass
class ResponseRecorder:
    """Records every response a requests Session receives from the simulator's API paths."""
    exchanges: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def attach(self, session, timeout):
        session.hooks.setdefault("response", []).append(self._hook)
        session.mount("https://", TimeoutAdapter(timeout))
        session.mount("http://", TimeoutAdapter(timeout))

    def _hook(self, response, *args, **kwargs):
        request = response.request
        path = requests.utils.urlparse(request.url).path
        body = request.body or b""
        if isinstance(body, str):
            body = body.encode("utf-8")
        request_fields = parse_xml(body.decode("utf-8", "replace")) or {}
        response.encoding = "utf-8"
        with self.lock:
            self.exchanges.append(RecordedExchange(
                method=request.method, path=path, request_fields=request_fields, status=response.status_code,
                content_type=response.headers.get("Content-Type", ""), text=response.text))

    def check(self, index, production_key, sandbox_key):
        """The verdict on the index-th recorded exchange."""
        with self.lock:
            exchange = self.exchanges[index]
        return check_response(exchange, production_key, sandbox_key)


def check_response(exchange, production_key, sandbox_key):
    fields = parse_xml(exchange.text) if exchange.text.lstrip().startswith("<") else None
    if fields is None:
        if exchange.path.endswith("/pay/downloadbill") and exchange.status == 200:
            return ResponseCheck(exchange, "not-xml", "bill text: neither XML nor signed, as documented (§2.6)")
        return ResponseCheck(exchange, "not-xml", f"HTTP {exchange.status} {exchange.content_type or 'no type'}, not XML")
    sandbox = exchange.path.startswith("/sandboxnew/")
    getsignkey = exchange.path.endswith("/getsignkey")
    if "sign" not in fields or not fields["sign"]:
        if fields.get("return_code") != "SUCCESS":
            return ResponseCheck(exchange, "unsigned-documented", "return_code=FAIL is unsigned (§2.0)")
        if getsignkey:
            return ResponseCheck(exchange, "unsigned-documented", "getsignkey answers unsigned (§2.7)")
        return ResponseCheck(exchange, "unsigned-undocumented", "a SUCCESS answer without sign")
    key = sandbox_key if sandbox and not getsignkey else production_key
    if key is None:
        return ResponseCheck(exchange, "signed-bad", "sandbox response before the sandbox key was known")
    expected_type = exchange.request_fields.get("sign_type") or MD5
    if fields["sign"] == signature(fields, key, expected_type):
        return ResponseCheck(exchange, "signed-ok", f"{expected_type} signature valid")
    actual = matching_sign_type(fields, key)
    detail = f"signed with {actual}, request asked {expected_type}" if actual else "signature matches no algorithm"
    return ResponseCheck(exchange, "signed-bad", detail)
