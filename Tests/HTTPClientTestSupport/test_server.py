# SPDX-License-Identifier: Apache-2.0
"""Loopback servers for the HTTP client tests (Python standard library only).

Started by PythonTestServer.swift as `python3 test_server.py MODE [options]`. It binds 127.0.0.1 port 0,
prints `PORT <n>` on stdout, and exits when its stdin closes, so a crashed test run leaves nothing
behind. Modes:

  http       HTTP/1.1 keep-alive server (optionally TLS, optionally asking for client certificates)
  silent     accepts every connection, reads and discards, never answers
  blackhole  a listening socket whose accept queue is full, so new connections never complete

The http mode serves:
  /echo                 200, body = request body; X-Method, X-Path, X-Content-Type echo the request
  /status/<n>           status n with a short body
  /bytes/<n>            n bytes with Content-Length
  /chunked/<n>          n bytes, chunked, no Content-Length
  /connections          number of TCP connections accepted so far
  /requests             number of requests answered so far (this one excluded)
  /client-cert          200 with the client certificate's CN, or 403 when none was presented
  /inspect/...          200, body = "<method> <path> <content-type>\n" followed by the request body
  anything else         treated as /echo
"""

import argparse
import os
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Every loop and wait in here is bounded, so a forgotten server dies on its own.
MAX_LIFETIME_SECONDS = 600


class Counters:
    def __init__(self):
        self.lock = threading.Lock()
        self.connections = 0
        self.requests = 0

    def add_connection(self):
        with self.lock:
            self.connections += 1

    def add_request(self):
        with self.lock:
            self.requests += 1
            return self.requests


COUNTERS = Counters()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    timeout = 60  # an idle keep-alive connection ends its thread eventually
    # Headers and body go out in separate writes; with Nagle on, the body would wait for the
    # client's delayed ACK (40 ms per kept-alive request).
    disable_nagle_algorithm = True

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's parameter name
        pass  # quiet: the tests assert on behaviour, not on logs

    def do_GET(self):
        self.dispatch()

    def do_POST(self):
        self.dispatch()

    def do_PUT(self):
        self.dispatch()

    def do_DELETE(self):
        self.dispatch()

    def do_HEAD(self):
        self.dispatch()

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def send(self, status, body, headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def dispatch(self):
        body = self.read_body()
        answered_before = COUNTERS.requests
        COUNTERS.add_request()
        parts = self.path.split("/")
        if self.path.startswith("/status/"):
            self.send(int(parts[2]), b"status body")
        elif self.path.startswith("/bytes/"):
            self.send(200, b"x" * int(parts[2]))
        elif self.path.startswith("/chunked/"):
            self.send_chunked(int(parts[2]))
        elif self.path == "/connections":
            self.send(200, str(COUNTERS.connections).encode())
        elif self.path == "/requests":
            self.send(200, str(answered_before).encode())
        elif self.path == "/client-cert":
            self.send_client_cert()
        elif self.path == "/drop":
            # Read the request, then close without a byte of answer (a peer that dropped it).
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        elif self.path.startswith("/inspect/"):
            summary = "%s %s %s\n" % (self.command, self.path, self.headers.get("Content-Type", ""))
            self.send(200, summary.encode() + body)
        else:
            self.send(200, body, [
                ("X-Method", self.command),
                ("X-Path", self.path),
                ("X-Content-Type", self.headers.get("Content-Type", "")),
                ("X-Custom", self.headers.get("X-Custom", "")),
            ])

    def send_chunked(self, total):
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        remaining = total
        chunk = b"y" * 16384
        while remaining > 0:
            piece = chunk[: min(remaining, len(chunk))]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            remaining -= len(piece)
        self.wfile.write(b"0\r\n\r\n")

    def send_client_cert(self):
        peer = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
        if not peer:
            self.send(403, b"No required SSL certificate was sent")
            return
        common_name = ""
        for rdn in peer.get("subject", ()):
            for key, value in rdn:
                if key == "commonName":
                    common_name = value
        self.send(200, common_name.encode())


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # 100 simultaneous connects must not overflow the accept queue
    tls_context = None

    def process_request(self, request, client_address):
        COUNTERS.add_connection()
        super().process_request(request, client_address)

    def finish_request(self, request, client_address):
        # The TLS handshake runs in the connection's thread, so one slow client cannot stall accept().
        if self.tls_context is not None:
            request.settimeout(30)
            request = self.tls_context.wrap_socket(request, server_side=True, do_handshake_on_connect=False)
            try:
                request.do_handshake()
            except (ssl.SSLError, OSError):
                # Refused client certificates are part of the tests. Close like nginx's lingering
                # close: with TLS 1.3 the client has already sent its request, and closing with it
                # unread would reset the connection and destroy the alert before the client reads it.
                lingering_close(request)
                return
        super().finish_request(request, client_address)

    def handle_error(self, request, client_address):
        pass  # resets and refused handshakes are part of the tests


def lingering_close(connection):
    try:
        connection.shutdown(socket.SHUT_WR)
        connection.settimeout(2)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and connection.recv(65536):
            pass
    except OSError:
        pass
    finally:
        connection.close()


def tls_context(args):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    if args.client_ca:
        context.load_verify_locations(args.client_ca)
        context.verify_mode = ssl.CERT_REQUIRED if args.require_client_cert else ssl.CERT_OPTIONAL
    return context


def run_http(args):
    server = Server(("127.0.0.1", 0), Handler)
    if args.cert:
        server.tls_context = tls_context(args)
    announce(server.server_address[1])
    server.serve_forever(poll_interval=0.2)


def run_silent(_args):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(512)
    announce(listener.getsockname()[1])
    held = []

    def drain(connection):
        connection.settimeout(MAX_LIFETIME_SECONDS)
        try:
            while connection.recv(65536):
                pass
        except OSError:
            pass

    while len(held) < 10000:
        connection, _ = listener.accept()
        held.append(connection)  # kept open: the client must give up on its own
        threading.Thread(target=drain, args=(connection,), daemon=True).start()


def run_blackhole(_args):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    # Fill the accept queue (never accepting) until a connect attempt stalls: from then on the kernel
    # drops new SYNs, and a client's connect can only time out.
    fillers = []
    for _ in range(64):
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        probe.setblocking(False)
        probe.connect_ex(("127.0.0.1", port))
        fillers.append(probe)
        time.sleep(0.02)
        _, writable, _ = __import__("select").select([], [probe], [], 0.3)
        if not writable:
            break
    else:
        print("ERROR accept queue never filled", flush=True)
        return
    announce(port)
    time.sleep(MAX_LIFETIME_SECONDS)


def announce(port):
    print("PORT %d" % port, flush=True)


def exit_when_stdin_closes():
    try:
        while sys.stdin.buffer.read(1):
            pass
    finally:
        os._exit(0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["http", "silent", "blackhole"])
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--client-ca")
    parser.add_argument("--require-client-cert", action="store_true")
    args = parser.parse_args()
    threading.Thread(target=exit_when_stdin_closes, daemon=True).start()
    threading.Timer(MAX_LIFETIME_SECONDS, lambda: os._exit(0)).start()
    {"http": run_http, "silent": run_silent, "blackhole": run_blackhole}[args.mode](args)


if __name__ == "__main__":
    main()
