# SPDX-License-Identifier: Apache-2.0
"""The processes a battery run drives: a separate WeChat Pay simulator, one or more real gateway
processes (release build, production mode pointed at the simulator), a fulfilment receiver that
verifies and deduplicates `order.paid` and `refund.*` events, and a sampler of the gateways' peak RSS.

For refunds (T11-T13) the simulator serves HTTPS and demands the merchant certificate its CA
signed on /secapi/ (certs/test), and each gateway presents the test client certificate, trusts the
test CA for WeChat's server and announces its refund-notify URL: mutual TLS as in production.

Everything listens on 127.0.0.1, lives in one temp directory, and is killed by `Rig.close`.
"""
import calendar
import hashlib
import hmac
import http.client
import json
import os
import random
import re
import signal
import socket
import sqlite3
import ssl
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

APP_ID = "wxd930ea5d5a258f4f"
MCH_ID = "10000100"
# The merchant's v2 key, the gateway's and the simulator's: not demo mode's published one, which a
# production-mode gateway refuses.
API_KEY = "batteryV2key0123456789abcdefABCD"
CLIENT_TOKEN = "bench-client-token"
SUPPORT_TOKEN = "bench-support-token"
WEBHOOK_SECRET = "battery-webhook-secret-0123456789"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The battery's build: release, with the fault-injection condition (GATEWAY_CRASH_POINT works), in
# its own scratch path so that .build/release stays a production binary (PRODUCTION_BINARY, for P1).
BINARY = os.path.join(ROOT, ".build", "battery", "release", "wxpay-gateway")
PRODUCTION_BINARY = os.path.join(ROOT, ".build", "release", "wxpay-gateway")
# TEST-ONLY certificates (certs/README.md): the simulator's server certificate, the CA that signs it
# and the merchant's client certificate.
CERTS = os.path.join(ROOT, "certs", "test")
POSTGRES_SCRIPT = os.path.join(ROOT, "scripts", "postgres")


# ---------------------------------------------------------------------------------------------
# WeChat Pay v2 signing and the flat XML WeChat posts (what `wxpay-gateway sign` computes)

def wechat_sign(fields, sign_type="HMAC-SHA256", key=API_KEY):
    text = "&".join(f"{k}={fields[k]}" for k in sorted(fields) if k != "sign" and fields[k] != "")
    text += "&key=" + key
    if sign_type == "MD5":
        return hashlib.md5(text.encode()).hexdigest().upper()
    return hmac.new(key.encode(), text.encode(), hashlib.sha256).hexdigest().upper()


def to_xml(fields):
    return "<xml>" + "".join(f"<{k}><![CDATA[{v}]]></{k}>" for k, v in fields.items()) + "</xml>"


def payment_notify(out_trade_no, transaction_id, total_fee, nonce, key=API_KEY, change=None):
    """A payment notify as WeChat sends it for an HMAC-SHA256 order (no sign_type, §4.3)."""
    fields = {
        "appid": APP_ID, "bank_type": "CFT", "cash_fee": str(total_fee), "fee_type": "CNY",
        "is_subscribe": "N", "mch_id": MCH_ID, "nonce_str": nonce, "openid": "oBatteryUser",
        "out_trade_no": out_trade_no, "result_code": "SUCCESS", "return_code": "SUCCESS",
        "time_end": time.strftime("%Y%m%d%H%M%S", time.gmtime(time.time() + 8 * 3600)),
        "total_fee": str(total_fee), "trade_type": "APP", "transaction_id": transaction_id,
    }
    fields["sign"] = wechat_sign(fields, key=key)
    if change:
        change(fields)
    return to_xml(fields)


ACK = "<return_code><![CDATA[SUCCESS]]></return_code>"


# ---------------------------------------------------------------------------------------------
# WeChat Pay API v3 (`--protocol v3`): the merchant's keys and WeChat's, and notifies as WeChat
# builds them: the transaction sealed with the APIv3 key (AES-256-GCM), the envelope signed with
# WeChat's key (SHA256withRSA over timestamp, nonce and the raw body). Python's `cryptography`
# (Debian's python3-cryptography, scripts/setup) does the cryptography.

V3_KEY = "battery0v3key0123456789abcdefABC"
PUBLIC_KEY_ID = "PUB_KEY_ID_0110000100202612040000000003"


class V3Keys:
    """The merchant's API key and certificate and the WeChat Pay key (public-key mode), made for
    one run and written in `directory`."""

    def __init__(self, directory):
        import datetime
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
        from cryptography.x509.oid import NameOID
        self.merchant = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.wechatpay = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, MCH_ID)])
        now = datetime.datetime.utcnow()
        certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                       .public_key(self.merchant.public_key()).serial_number(0x5157F09E)
                       .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=365))
                       .sign(self.merchant, hashes.SHA256()))
        pkcs8 = dict(encoding=serialization.Encoding.PEM, format=serialization.PrivateFormat.PKCS8,
                     encryption_algorithm=serialization.NoEncryption())
        self.paths = {}
        for name, data in [("merchant_key.pem", self.merchant.private_bytes(**pkcs8)),
                           ("merchant_cert.pem", certificate.public_bytes(serialization.Encoding.PEM)),
                           ("wechatpay_key.pem", self.wechatpay.private_bytes(**pkcs8)),
                           ("wechatpay_pub.pem", self.wechatpay.public_key().public_bytes(
                               serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))]:
            path = os.path.join(directory, name)
            with open(path, "wb") as out:
                out.write(data)
            self.paths[name] = path

    @staticmethod
    def sign(key, message):
        import base64
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding
        return base64.b64encode(key.sign(message, padding.PKCS1v15(), hashes.SHA256())).decode()

    def gateway_env(self):
        return {"WXPAY_API_VERSION": "v3", "WXPAY_API_V3_KEY": V3_KEY,
                "WXPAY_MERCHANT_PRIVATE_KEY": self.paths["merchant_key.pem"],
                "WXPAY_MERCHANT_CERT": self.paths["merchant_cert.pem"],
                "WXPAY_PUBLIC_KEY_FILE": self.paths["wechatpay_pub.pem"], "WXPAY_PUBLIC_KEY_ID": PUBLIC_KEY_ID}

    def simulator_args(self):
        return ["--api-v3-key", V3_KEY, "--merchant-cert", self.paths["merchant_cert.pem"],
                "--public-key-id", PUBLIC_KEY_ID, "--wechatpay-key", self.paths["wechatpay_key.pem"]]


def beijing_rfc3339(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%S+08:00", time.gmtime(seconds + 8 * 3600))


def v3_payment_notify(keys, out_trade_no, transaction_id, total, nonce, timestamp=None, signer=None, serial=PUBLIC_KEY_ID,
                      change_body=None, change_headers=None):
    """(body, headers) of a TRANSACTION.SUCCESS notify as WeChat sends it, signed now (or at
    `timestamp`) with WeChat's key unless `signer` (another RSA key) is given. `change_body` edits
    the bytes after signing; `change_headers` the headers."""
    import base64
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    transaction = {
        "appid": APP_ID, "mchid": MCH_ID, "out_trade_no": out_trade_no, "transaction_id": transaction_id,
        "trade_type": "APP", "trade_state": "SUCCESS", "trade_state_desc": "支付成功", "bank_type": "OTHERS",
        "success_time": beijing_rfc3339(time.time()), "payer": {"openid": "oBatteryUser"},
        "amount": {"total": total, "payer_total": total, "currency": "CNY", "payer_currency": "CNY"},
    }
    plaintext = json.dumps(transaction, ensure_ascii=False, separators=(",", ":")).encode()
    resource_nonce = hashlib.md5(nonce.encode()).hexdigest()[:12]
    sealed = AESGCM(V3_KEY.encode()).encrypt(resource_nonce.encode(), plaintext, b"transaction")
    envelope = {
        "id": hashlib.md5(("id" + nonce).encode()).hexdigest(), "create_time": beijing_rfc3339(time.time()),
        "resource_type": "encrypt-resource", "event_type": "TRANSACTION.SUCCESS", "summary": "支付成功",
        "resource": {"original_type": "transaction", "algorithm": "AEAD_AES_256_GCM",
                     "ciphertext": base64.b64encode(sealed).decode(), "associated_data": "transaction", "nonce": resource_nonce},
    }
    body = json.dumps(envelope, ensure_ascii=False, separators=(",", ":")).encode()
    stamp = str(int(timestamp if timestamp is not None else time.time()))
    signature_nonce = hashlib.md5(("sig" + nonce).encode()).hexdigest()
    signature = V3Keys.sign(signer or keys.wechatpay, f"{stamp}\n{signature_nonce}\n".encode() + body + b"\n")
    headers = {"Wechatpay-Timestamp": stamp, "Wechatpay-Nonce": signature_nonce, "Wechatpay-Signature": signature,
               "Wechatpay-Serial": serial, "Wechatpay-Signature-Type": "WECHATPAY2-SHA256-RSA2048",
               "Content-Type": "application/json"}
    if change_body:
        body = change_body(body)
    if change_headers:
        change_headers(headers)
    return body, headers


# ---------------------------------------------------------------------------------------------
# HTTP with one keep-alive connection per thread and base

class Client:
    def __init__(self, timeout=40):
        self.local = threading.local()
        self.timeout = timeout

    # The control panel of an HTTPS simulator: its server certificate is the test CA's.
    tls = ssl.create_default_context(cafile=os.path.join(CERTS, "ca.crt"))

    def request(self, base, method, path, body=None, headers=None, token=None):
        """(status, bytes); status 0 when the connection failed (the gateway may be down)."""
        status, payload, _ = self.exchange(base, method, path, body=body, headers=headers, token=token)
        return status, payload

    def exchange(self, base, method, path, body=None, headers=None, token=None):
        """(status, bytes, headers with lowercase names); status 0 when the connection failed."""
        secure = base.startswith("https://")
        host, port = base.replace("https://", "").replace("http://", "").split(":")
        conns = getattr(self.local, "conns", None)
        if conns is None:
            conns = self.local.conns = {}
        hdrs = dict(headers or {})
        if token:
            hdrs["Authorization"] = "Bearer " + token
        data = body.encode() if isinstance(body, str) else body
        for attempt in range(2):
            conn = conns.get(base)
            if conn is None:
                conn = conns[base] = (http.client.HTTPSConnection(host, int(port), timeout=self.timeout, context=self.tls)
                                      if secure else http.client.HTTPConnection(host, int(port), timeout=self.timeout))
            try:
                conn.request(method, path, body=data, headers=hdrs)
                response = conn.getresponse()
                payload = response.read()
                if response.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conns.pop(base, None)
                return response.status, payload, {k.lower(): v for k, v in response.getheaders()}
            except (OSError, http.client.HTTPException):
                conn.close()
                conns.pop(base, None)
        return 0, b"", {}

    def close_all(self):
        """Closes this thread's keep-alive connections (before counting the gateway's sockets)."""
        for conn in getattr(self.local, "conns", {}).values():
            conn.close()
        self.local.conns = {}

    def json(self, base, method, path, body=None, token=None):
        status, payload = self.request(base, method, path,
                                       body=json.dumps(body) if isinstance(body, dict) else body, token=token,
                                       headers={"Content-Type": "application/json"} if body is not None else None)
        try:
            return status, json.loads(payload) if payload else None
        except ValueError:
            return status, None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------------------------
# The fulfilment receiver: verifies Gateway-Signature, applies each event id once

class Receiver:
    def __init__(self):
        self.lock = threading.Lock()
        self.deliveries = 0
        self.invalid = 0
        self.truncated = 0        # bodies cut short by a SIGKILL of the sender (not deliveries)
        self.seen = {}            # event id -> out_trade_no
        self.effects = {}         # out_trade_no -> order.paid effects applied
        self.refund_effects = {}  # (type, out_refund_no) -> refund.* effects applied
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                if len(body) < length:
                    # The gateway was SIGKILLed while sending the body: no delivery (it sends the
                    # event again after its restart), and no verdict on a signature of half a body.
                    with receiver.lock:
                        receiver.truncated += 1
                    self.close_connection = True
                    return
                ok = receiver.verify(self.headers.get("Gateway-Signature"), body)
                status = 200
                if not ok:
                    status = 400
                    with receiver.lock:
                        receiver.invalid += 1
                else:
                    event = json.loads(body)
                    with receiver.lock:
                        receiver.deliveries += 1
                        if event["id"] not in receiver.seen:    # dedupe on the event id
                            otn = event["data"]["out_trade_no"]
                            receiver.seen[event["id"]] = otn
                            if event["type"] == "order.paid":
                                receiver.effects[otn] = receiver.effects.get(otn, 0) + 1
                            else:
                                key = (event["type"], event["data"]["out_refund_no"])
                                receiver.refund_effects[key] = receiver.refund_effects.get(key, 0) + 1
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass    # a killed gateway resets its keep-alive connections; that is the test, not an error

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/wxpay"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @staticmethod
    def verify(header, body, tolerance=300):
        t, signatures = None, []
        for part in (header or "").split(","):
            k, _, v = part.strip().partition("=")
            if k == "t":
                t = v
            elif k == "v1":
                signatures.append(v)
        if t is None or not t.isdigit() or not signatures or abs(time.time() - int(t)) > tolerance:
            return False
        expected = hmac.new(WEBHOOK_SECRET.encode(), t.encode() + b"." + body, hashlib.sha256).hexdigest()
        return any(hmac.compare_digest(expected, s) for s in signatures)

    def counts(self):
        with self.lock:
            return dict(self.effects), self.deliveries, self.invalid

    def refund_counts(self):
        """(type, out_refund_no) -> effects of refund.succeeded / refund.failed, deduplicated on the id."""
        with self.lock:
            return dict(self.refund_effects)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


# ---------------------------------------------------------------------------------------------
# Processes

def rss_kib(pid, field="VmHWM"):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Gateway:
    def __init__(self, rig, name, port, env, binary=BINARY):
        self.rig, self.name, self.port, self.env, self.binary = rig, name, port, env, binary
        self.base = f"http://127.0.0.1:{port}"
        self.proc = None
        self.kills = 0

    def start(self, timeout=30):
        log = open(os.path.join(self.rig.dir, f"{self.name}.log"), "ab")
        self.proc = subprocess.Popen([self.binary, "serve"], env=self.env, stdout=log, stderr=log,
                                     stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}; see {self.name}.log")
            status, _ = self.rig.client.request(self.base, "GET", "/healthz")
            if status == 200:
                return
            time.sleep(0.02)
        raise RuntimeError(f"{self.name} did not answer /healthz within {timeout}s")

    def sample(self):
        if self.proc and self.proc.poll() is None:
            self.rig.peak_rss_kib = max(self.rig.peak_rss_kib, rss_kib(self.proc.pid))

    def kill(self):
        """SIGKILL: no shutdown path runs, exactly like a power cut of the process."""
        if self.proc and self.proc.poll() is None:
            self.sample()
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.kills += 1

    def kill_and_restart(self, deadline):
        """SIGKILL, then start again, retrying a start that fails (the port not yet free, a crash
        point met during start-up) until `deadline` (time.monotonic())."""
        self.kill()
        while time.monotonic() < deadline:
            try:
                self.start()
                return
            except RuntimeError:
                time.sleep(0.2)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.sample()
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Balancer:
    """What stands in front of several instances in production: a plain HTTP forwarder on
    127.0.0.1 that sends each request to the next instance that is up (round robin), trying the
    others when one refuses the connection. WeChat's notify URL and the clients point at it."""

    def __init__(self, rig):
        self.rig = rig
        self.next = 0
        self.lock = threading.Lock()
        balancer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                answer = balancer.forward(self.command, self.path, body, headers)
                status, payload, content_type = answer if answer else (502, b"no instance is up", "text/plain")
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = _forward

            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass

        self.server = Server(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.client = Client(timeout=40)

    def forward(self, method, path, body, headers):
        gateways = [g for g in self.rig.gateways if g.proc and g.proc.poll() is None]
        if not gateways:
            return None
        with self.lock:
            start = self.next
            self.next += 1
        for offset in range(len(gateways)):
            gateway = gateways[(start + offset) % len(gateways)]
            status, payload = self.client.request(gateway.base, method, path, body=body, headers=headers)
            if status:
                return status, payload, "application/json" if payload[:1] in (b"{", b"[") else "text/plain"
        return None

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Rig:
    """One simulator process, gateways added on demand, the receiver, an RSS sampler; the store is
    a SQLite file, or (`store="postgres"`) a throwaway PostgreSQL server in the run's directory."""

    def __init__(self, seed=1, tls=False, refund_delay=None, store="sqlite", protocol="v2"):
        """`tls`: the simulator serves HTTPS and requires the merchant certificate for refunds;
        `refund_delay`: it completes accepted refunds SUCCESS after that many seconds; `protocol`
        `v3`: the simulator speaks API v3 too (public-key mode) and the gateways create v3 orders."""
        self.tls = tls
        self.store = store
        self.protocol = protocol
        self.dir = tempfile.mkdtemp(prefix="wxpay-battery-")
        self.v3 = V3Keys(self.dir) if protocol == "v3" else None
        self.notify_path = "/wechat/v3/notify" if self.v3 else "/wechat/notify"
        self.db = os.path.join(self.dir, "gateway.sqlite")
        self.pg_dir = os.path.join(self.dir, "postgres")
        self.pg_url = None
        if store == "postgres":
            # The server runs as an unprivileged user when the battery runs as root (CI): it must be
            # able to pass through mkdtemp's 0700 directory to its own (traverse only, no listing).
            os.chmod(self.dir, 0o711)
            # Durable settings (fsync on), like production: the battery restarts and crashes it.
            out = subprocess.run([POSTGRES_SCRIPT, "start", self.pg_dir, "--durable"], capture_output=True, text=True,
                                 timeout=180)
            if out.returncode != 0:
                raise RuntimeError("PostgreSQL did not start: " + out.stderr.strip()[-500:])
            self.pg_url = out.stdout.strip().split("=", 1)[1].strip("'")
        self.database = self.pg_url if store == "postgres" else "sqlite:" + self.db
        self.balancer = None
        self.client = Client()
        self.receiver = Receiver()
        self.gateways = []
        self.peak_rss_kib = 0
        self.stopping = threading.Event()
        log = open(os.path.join(self.dir, "simulator.log"), "wb")
        command = [BINARY, "simulate", "--port", "0", "--seed", str(seed), "--key", API_KEY]
        if tls:
            command += ["--tls-cert", os.path.join(CERTS, "server.crt"), "--tls-key", os.path.join(CERTS, "server.key"),
                        "--client-ca", os.path.join(CERTS, "ca.crt")]
        if refund_delay is not None:
            command += ["--refund-delay", str(refund_delay)]
        if self.v3:
            command += self.v3.simulator_args()
        self.sim_proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        line = self.sim_proc.stdout.readline().decode().strip()
        if not line.startswith("listening "):
            self.close()
            raise RuntimeError("the simulator did not start: " + line)
        self.sim = line.split()[1]
        threading.Thread(target=self._sample_loop, daemon=True).start()

    def _sample_loop(self):
        while not self.stopping.wait(0.1):
            for gateway in list(self.gateways):
                gateway.sample()

    def balanced(self):
        """The load balancer in front of this rig's gateways (started on first use)."""
        if self.balancer is None:
            self.balancer = Balancer(self)
        return self.balancer

    def gateway(self, reconcile_interval=1, reconcile_after=2, fulfilment=True, extra=None, binary=BINARY,
                notify_url=None, port=None):
        """`port`: one chosen before (T10: the App Store simulator posts its notifications there)."""
        port = port or free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("WXPAY_", "GATEWAY_"))}
        env.update({
            "WXPAY_MCH_ID": MCH_ID, "WXPAY_APP_ID": APP_ID, "WXPAY_API_KEY": API_KEY,
            "WXPAY_API_BASE": self.sim, "WXPAY_API_BACKUP_BASE": self.sim,
            "WXPAY_NOTIFY_URL": notify_url or f"http://127.0.0.1:{port}{self.notify_path}",
            "GATEWAY_LISTEN": f"127.0.0.1:{port}", "GATEWAY_DATABASE": self.database,
            "GATEWAY_CLIENT_TOKENS": CLIENT_TOKEN, "GATEWAY_SUPPORT_TOKENS": SUPPORT_TOKEN,
            "GATEWAY_LOG_LEVEL": "warning", "GATEWAY_POLL_INTERVAL": "0.5",
            "GATEWAY_RECONCILE_INTERVAL": str(reconcile_interval), "GATEWAY_RECONCILE_AFTER": str(reconcile_after),
            "GATEWAY_RECONCILE_RATE": "1000", "GATEWAY_RECONCILE_CONCURRENCY": "16",
        })
        if fulfilment:
            env["GATEWAY_FULFILMENT_URL"] = self.receiver.url
            env["GATEWAY_FULFILMENT_SECRET"] = WEBHOOK_SECRET
        if self.tls:
            # Refunds on: the merchant certificate, WeChat's (the simulator's) CA, our refund notify URL.
            env.update({
                "WXPAY_CLIENT_CERT": os.path.join(CERTS, "client.crt"), "WXPAY_CLIENT_KEY": os.path.join(CERTS, "client.key"),
                "WXPAY_API_CA_FILE": os.path.join(CERTS, "ca.crt"),
                "WXPAY_REFUND_NOTIFY_URL": f"http://127.0.0.1:{port}/wechat/refund-notify",
            })
        if self.v3:
            env.update(self.v3.gateway_env())
            env.setdefault("WXPAY_REFUND_NOTIFY_URL", f"http://127.0.0.1:{port}/wechat/v3/refund-notify")
        env.update(extra or {})
        gateway = Gateway(self, f"gateway-{len(self.gateways) + 1}", port, env, binary=binary)
        self.gateways.append(gateway)
        gateway.start()
        return gateway

    def acknowledged(self, reply):
        """Whether a notify's reply acknowledges it: v2's SUCCESS, v3's 2xx."""
        status, body = reply[0], reply[1]
        if self.v3:
            return 200 <= status < 300
        return status == 200 and ACK in body.decode(errors="replace")

    def refused(self, reply):
        """Whether a notify's reply refuses it: v2's FAIL, v3's 4xx/5xx with {"code":"FAIL"}."""
        status, body = reply[0], reply[1]
        if self.v3:
            return status >= 400 and b'"FAIL"' in body
        return status == 200 and "<return_code><![CDATA[FAIL]]></return_code>" in body.decode(errors="replace")

    # The simulator's control panel ------------------------------------------------------------

    def faults(self, plan):
        status, _ = self.client.json(self.sim, "PUT", "/simulator/faults", plan)
        assert status == 200, f"PUT /simulator/faults answered {status}"

    def pay(self, out_trade_no, after_close=False):
        """The user pays; `after_close` also pays a CLOSED order (the payment that raced the close)."""
        return self.client.json(self.sim, "POST", f"/simulator/orders/{out_trade_no}/pay",
                                {"afterClose": True} if after_close else {})

    def sim_orderqueries(self):
        """out_trade_no -> the times (simulated, seconds since 1970) orderquery asked about it."""
        status, body = self.client.json(self.sim, "GET", "/simulator/orderqueries")
        assert status == 200, f"GET /simulator/orderqueries answered {status}"
        return body or {}

    def sim_now(self):
        """The simulator's clock, seconds since 1970 (whole seconds)."""
        body = self.advance(0)[1] or {}
        return calendar.timegm(time.strptime(body["now"], "%Y-%m-%dT%H:%M:%SZ"))

    def unifiedorder_direct(self, out_trade_no, total_fee):
        """An order placed at WeChat by someone other than this gateway (same merchant account)."""
        fields = {"appid": APP_ID, "mch_id": MCH_ID, "nonce_str": hashlib.md5(out_trade_no.encode()).hexdigest(),
                  "sign_type": "HMAC-SHA256",
                  "body": "elsewhere", "out_trade_no": out_trade_no, "total_fee": str(total_fee),
                  "spbill_create_ip": "203.0.113.9", "notify_url": "http://127.0.0.1:9/elsewhere", "trade_type": "APP"}
        fields["sign"] = wechat_sign(fields)
        status, body = self.client.request(self.sim, "POST", "/pay/unifiedorder", body=to_xml(fields))
        return status == 200 and re.search(rb"<result_code>(<!\[CDATA\[)?SUCCESS\b", body) is not None

    def complete_refund(self, out_refund_no, status="SUCCESS"):
        return self.client.json(self.sim, "POST", f"/simulator/refunds/{out_refund_no}/complete", {"status": status})

    def sim_refund_requests(self):
        """out_refund_no -> {"requests": n, "parameterSets": k}: what WeChat received per refund number."""
        status, body = self.client.json(self.sim, "GET", "/simulator/refundrequests")
        assert status == 200, f"GET /simulator/refundrequests answered {status}"
        return body or {}

    def sim_order(self, out_trade_no):
        return self.client.json(self.sim, "GET", f"/simulator/orders/{out_trade_no}")[1]

    def sim_stats(self):
        return self.client.json(self.sim, "GET", "/simulator/stats")[1] or {}

    def advance(self, seconds):
        return self.client.json(self.sim, "POST", "/simulator/clock/advance", {"seconds": seconds})

    # The store, read-only -----------------------------------------------------------------------

    def sql(self, query):
        if self.store == "postgres":
            command = ["psql", "-X", "-q", "-A", "-t", "-F", "|", "-v", "ON_ERROR_STOP=1", self.pg_url, "-c", query]
        else:
            command = ["sqlite3", "-readonly", "-separator", "|", self.db, query]
        out = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise RuntimeError(f"{command[0]}: " + out.stderr.strip())
        return [line.split("|") for line in out.stdout.splitlines() if line]

    def integrity(self):
        """The database's own consistency check, as rows: [["ok"]] when healthy. PostgreSQL: the
        store's amcheck of its tables and indexes, and no row of a missing order (as the
        gateway's own integrity check does)."""
        if self.store != "postgres":
            return self.sql("PRAGMA integrity_check")
        heap = self.sql("SELECT COALESCE(wxpay_amcheck(), -1)")[0][0]
        orphans = self.sql("""
            SELECT (SELECT COUNT(*) FROM order_events e WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.out_trade_no = e.out_trade_no))
                 + (SELECT COUNT(*) FROM outbox x WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.out_trade_no = x.out_trade_no))
            """)[0][0]
        if heap == "0" and orphans == "0":
            return [["ok"]]
        return [[f"amcheck findings {heap} (-1: amcheck not installed), orphan rows {orphans}"]]

    def tables(self):
        """The store's tables (so a table a later migration adds is counted too)."""
        if self.store == "postgres":
            return [row[0] for row in self.sql(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
                "AND table_type = 'BASE TABLE' AND table_name <> 'battery_claims'")]
        return [row[0] for row in self.sql("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]

    def columns(self, table):
        """The names of a table's columns."""
        if self.store == "postgres":
            return [row[0] for row in self.sql(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                f"AND table_name = '{table}'")]
        return [row[1] for row in self.sql(f'PRAGMA table_info("{table}")')]

    def restart_database(self, crash=False):
        """Restarts the PostgreSQL server (`crash`: immediate stop, recovery from the WAL at start)."""
        out = subprocess.run([POSTGRES_SCRIPT, "restart", self.pg_dir] + (["--crash"] if crash else []),
                             capture_output=True, text=True, timeout=180)
        if out.returncode != 0:
            raise RuntimeError("PostgreSQL did not restart: " + out.stderr.strip()[-500:])

    def install_claim_log(self):
        """Test instrumentation, not the gateway's: triggers in the store that copy every lease a
        sweeper writes on an order (claim, and early release) into `battery_claims`, with the time
        the database wrote it. Leases are overwritten in place, so without this the per-sweep check
        could not see them. Run after the first gateway has created the schema."""
        if self.store == "postgres":
            self.sql("""
                CREATE TABLE IF NOT EXISTS battery_claims (
                    seq bigserial PRIMARY KEY, out_trade_no text NOT NULL, kind text NOT NULL, claimant text,
                    until_ms bigint, at_ms bigint NOT NULL);
                CREATE OR REPLACE FUNCTION battery_claim_log() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF NEW.claimed_until IS NOT NULL THEN
                        INSERT INTO battery_claims (out_trade_no, kind, claimant, until_ms, at_ms) VALUES
                            (NEW.out_trade_no, 'claim', NEW.claimed_by,
                             round(extract(epoch FROM NEW.claimed_until) * 1000), round(extract(epoch FROM clock_timestamp()) * 1000));
                    ELSIF OLD.claimed_until IS NOT NULL THEN
                        INSERT INTO battery_claims (out_trade_no, kind, claimant, until_ms, at_ms) VALUES
                            (NEW.out_trade_no, 'release', OLD.claimed_by,
                             round(extract(epoch FROM OLD.claimed_until) * 1000), round(extract(epoch FROM clock_timestamp()) * 1000));
                    END IF;
                    RETURN NULL;
                END $$;
                DROP TRIGGER IF EXISTS battery_claim ON orders;
                CREATE TRIGGER battery_claim AFTER UPDATE OF claimed_until ON orders
                    FOR EACH ROW EXECUTE FUNCTION battery_claim_log();
                """)
            return
        now_ms = "CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER)"
        db = sqlite3.connect(self.db, timeout=60)
        try:
            db.executescript(f"""
                CREATE TABLE IF NOT EXISTS battery_claims (
                    seq INTEGER PRIMARY KEY, out_trade_no TEXT NOT NULL, kind TEXT NOT NULL, claimant TEXT,
                    until_ms INTEGER, at_ms INTEGER NOT NULL);
                CREATE TRIGGER IF NOT EXISTS battery_claim AFTER UPDATE OF claimed_until ON orders
                    WHEN NEW.claimed_until IS NOT NULL
                    BEGIN INSERT INTO battery_claims (out_trade_no, kind, claimant, until_ms, at_ms) VALUES
                        (NEW.out_trade_no, 'claim', NEW.claimed_by, NEW.claimed_until, {now_ms}); END;
                CREATE TRIGGER IF NOT EXISTS battery_release AFTER UPDATE OF claimed_until ON orders
                    WHEN NEW.claimed_until IS NULL AND OLD.claimed_until IS NOT NULL
                    BEGIN INSERT INTO battery_claims (out_trade_no, kind, claimant, until_ms, at_ms) VALUES
                        (NEW.out_trade_no, 'release', OLD.claimed_by, OLD.claimed_until, {now_ms}); END;
            """)
            db.commit()
        finally:
            db.close()

    def close(self):
        self.stopping.set()
        for gateway in self.gateways:
            gateway.stop()
        if self.sim_proc.poll() is None:
            self.sim_proc.send_signal(signal.SIGTERM)
            try:
                self.sim_proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.sim_proc.kill()
                self.sim_proc.wait()
        self.receiver.close()
        if self.balancer:
            self.balancer.close()
        if self.store == "postgres":
            subprocess.run([POSTGRES_SCRIPT, "stop", self.pg_dir], capture_output=True, timeout=120)


def create_body(out_trade_no, amount, **extra):
    body = {"amount": amount, "description": "battery", "client_ip": "203.0.113.7", "out_trade_no": out_trade_no}
    body.update(extra)
    return body


def parallel(items, work, workers=32, deadline=None):
    """Runs `work(item)` over items on a bounded pool; results in order. Stops taking new items
    after `deadline` (monotonic seconds), so every phase is bounded in time."""
    results = [None] * len(items)
    index = [0]
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                i = index[0]
                index[0] += 1
            if i >= len(items) or (deadline and time.monotonic() > deadline):
                return
            results[i] = work(items[i])

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(min(workers, max(1, len(items))))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def seeded(seed):
    return random.Random(seed)


# ---------------------------------------------------------------------------------------------
# Refund notifies as WeChat posts them: the outer fields and req_info, AES-256-ECB (PKCS#7) under
# the lower-case hex MD5 of the API key, through the openssl command line (as the tests check it)

def refund_req_info(fields, key=API_KEY):
    inner = "<root>" + "".join(f"<{k}><![CDATA[{v}]]></{k}>" for k, v in fields.items()) + "</root>"
    aes_key = hashlib.md5(key.encode()).hexdigest().encode().hex()
    out = subprocess.run(["openssl", "enc", "-aes-256-ecb", "-K", aes_key, "-nosalt", "-a", "-A"],
                         input=inner.encode(), capture_output=True, check=True)
    return out.stdout.decode().strip()


def refund_notify(inner, key=API_KEY, outer=None):
    fields = {"return_code": "SUCCESS", "appid": APP_ID, "mch_id": MCH_ID, "nonce_str": "battery",
              "req_info": refund_req_info(inner, key)}
    fields.update(outer or {})
    return to_xml(fields)
