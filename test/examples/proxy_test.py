"""//examples/proxy/proxy: a reverse proxy, against scripted upstreams.

What the upstream sees (hop-by-hop fields gone, X-Forwarded-For/-Proto and
Forwarded added, the body re-framed with one Content-Length or chunked,
never both), what the client sees (the upstream's hop-by-hop fields gone),
smuggling attempts (refused by the proxy before any byte goes upstream, or
split exactly as the proxy parsed them), upstream faults (refused: 502;
a stall: 504; a malformed answer: 502; a close mid-body: the answer cut,
never ended as if whole), round-robin and failover, kept upstream
connections, and a clean SIGTERM.

Usage: proxy_test.py PATH_TO_PROXY
"""
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

from example_server import ExampleServer, read_response


class Upstream:
    """A scripted HTTP/1.1 server: script(method, target, headers, body) ->
    raw response bytes, or a callable(sock) that writes what it likes and
    returns False to close."""

    def __init__(self, script, tls=None):
        self.script = script
        self.tls = tls  # an ssl.SSLContext (server side), or None
        self.requests = []  # (method, target, [(name, value)], body, raw head)
        self.connections = 0
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.stopping = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopping:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        buf = b""
        conn.settimeout(30)
        if self.tls is not None:
            try:
                conn = self.tls.wrap_socket(conn, server_side=True)
            except (OSError, ssl.SSLError):
                conn.close()
                return

        def fill():
            nonlocal buf
            data = conn.recv(65536)
            if not data:
                raise EOFError
            buf += data

        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    fill()
                head, _, buf = buf.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = [tuple(x.strip() for x in l.split(":", 1)) for l in lines[1:]]
                names = [n.lower() for n, _ in headers]
                body = b""
                if "content-length" in names:
                    n = int(dict((k.lower(), v) for k, v in headers)["content-length"])
                    while len(buf) < n:
                        fill()
                    body, buf = buf[:n], buf[n:]
                elif "transfer-encoding" in names:
                    while True:
                        while b"\r\n" not in buf:
                            fill()
                        size_line, _, buf = buf.partition(b"\r\n")
                        size = int(size_line.split(b";")[0], 16)
                        while len(buf) < size + 2:
                            fill()
                        body += buf[:size]
                        buf = buf[size + 2:]
                        if size == 0:
                            break
                self.requests.append((method, target, headers, body, head))
                answer = self.script(method, target, headers, body)
                if callable(answer):
                    if not answer(conn):
                        break
                else:
                    conn.sendall(answer)
        except (EOFError, OSError, ValueError):
            pass
        finally:
            conn.close()

    def close(self):
        self.stopping = True
        self.listener.close()


def ok(body=b"ok", extra=b""):
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)


def field(headers, name):
    values = [v for n, v in headers if n.lower() == name]
    return values[0] if len(values) == 1 else values


def dead_port():
    """A loopback port nobody listens on (bound, then closed)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def raw(server, data, timeout=10):
    """Sends data on a new connection; the responses read until the close."""
    s = server.connect(timeout=timeout)
    s.sendall(data)
    out = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except socket.timeout:
        pass
    s.close()
    return out


def test_forwarded_fields(proxy_bin):
    up = Upstream(lambda m, t, h, b: ok(
        b"hi", b"Connection: X-Up\r\nX-Up: secret\r\nKeep-Alive: timeout=5\r\n"
               b"Server: upstream\r\nX-Kept: yes\r\n"))
    with ExampleServer(proxy_bin, "--upstream=127.0.0.1:%d" % up.port) as px:
        status, headers, body = px.request("GET", "/a/b?c=d", headers={
            "Connection": "keep-alive, X-Drop", "X-Drop": "1", "Keep-Alive": "300",
            "TE": "trailers", "Proxy-Connection": "keep-alive", "Upgrade": "websocket",
            "X-Forwarded-For": "10.0.0.1", "Forwarded": "for=10.0.0.1", "X-Keep": "me"})
        assert (status, body) == (200, "hi"), (status, body)
        # The answer's hop-by-hop fields went, its own stayed; the Server is ours.
        assert "x-up" not in headers and "keep-alive" not in headers, headers
        assert headers["x-kept"] == "yes" and headers["server"] == "uring-http", headers
        method, target, fields, _, _ = up.requests[0]
        assert (method, target) == ("GET", "/a/b?c=d")
        names = [n.lower() for n, _ in fields]
        for gone in ("x-drop", "keep-alive", "te", "proxy-connection", "upgrade",
                     "content-length", "transfer-encoding"):
            assert gone not in names, (gone, fields)
        assert field(fields, "connection") == [], fields  # the client's own framing only
        assert field(fields, "host") == "127.0.0.1:%d" % px.port, fields
        assert field(fields, "x-keep") == "me"
        assert field(fields, "x-forwarded-for") == "10.0.0.1, 127.0.0.1", fields
        assert field(fields, "x-forwarded-proto") == "http"
        assert field(fields, "forwarded") == "for=10.0.0.1, for=127.0.0.1;proto=http", fields
    up.close()


def test_bodies_are_reframed_never_both(proxy_bin):
    up = Upstream(lambda m, t, h, b: ok(b"got %d" % len(b)))
    with ExampleServer(proxy_bin, "--upstream=127.0.0.1:%d" % up.port) as px:
        body = bytes(range(256)) * 4096  # 1 MiB
        status, _, text = px.request("POST", "/up", body=body)
        assert (status, text) == (200, "got %d" % len(body)), (status, text)
        _, _, fields, got, _ = up.requests[-1]
        assert got == body
        assert field(fields, "content-length") == str(len(body))
        assert field(fields, "transfer-encoding") == []
        # Chunked from the client: chunked to the upstream, the same bytes.
        out = raw(px, b"POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                      b"Connection: close\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
        assert out.startswith(b"HTTP/1.1 200") and out.endswith(b"got 11"), out
        _, _, fields, got, _ = up.requests[-1]
        assert got == b"hello world"
        assert field(fields, "transfer-encoding") == "chunked" and field(fields, "content-length") == []
    up.close()


def test_smuggling_attempts_never_reach_the_upstream(proxy_bin):
    up = Upstream(lambda m, t, h, b: ok(b"%s %s %d" % (m.encode(), t.encode(), len(b))))
    with ExampleServer(proxy_bin, "--upstream=127.0.0.1:%d" % up.port) as px:
        for attack in [
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length : 5\r\n\r\nhello",
            b"POST / HTTP/1.1\r\nHost: x\r\n Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nbad trailer\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
        ]:
            before = len(up.requests)
            out = raw(px, attack)
            assert out.startswith(b"HTTP/1.1 4") or out.startswith(b"HTTP/1.1 5"), (attack, out)
            assert not out.startswith(b"HTTP/1.1 200"), (attack, out)
            time.sleep(0.05)
            # A malformed trailer is found only after the head went up; the
            # upstream may have the head, never a second request.
            assert len(up.requests) - before <= 0 or b"bad trailer" in attack, (attack, up.requests[before:])
        # A body followed by a request: two requests upstream, each exactly
        # as the proxy parsed it.
        before = len(up.requests)
        out = raw(px, b"POST /one HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
                      b"GET /two HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert out.count(b"HTTP/1.1 200") == 2, out
        assert [(m, t, b) for m, t, _, b, _ in up.requests[before:]] == [
            ("POST", "/one", b"hello"), ("GET", "/two", b"")], up.requests[before:]
    up.close()


def test_upstream_faults(proxy_bin):
    def script(m, t, h, b):
        if t == "/cl-te":
            return b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
        if t == "/stall":
            def stall(sock):
                time.sleep(1.5)
                return False
            return stall
        if t == "/cut":
            def cut(sock):
                sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 5000)
                return False
            return cut
        if t == "/cut-chunked":
            def cut(sock):
                sock.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n")
                return False
            return cut
        return ok()

    up = Upstream(script)
    with ExampleServer(proxy_bin, "--upstream=127.0.0.1:%d" % up.port,
                       "--upstream-read-timeout=300ms") as px:
        status, _, body = px.request("GET", "/cl-te")
        assert status == 502 and "Content-Length and Transfer-Encoding" in body, (status, body)
        start = time.monotonic()
        status, _, body = px.request("GET", "/stall")
        assert status == 504 and "timed out" in body, (status, body)
        assert time.monotonic() - start < 1.4
        # Cut mid-body: the client must see a short body and a close, never
        # an answer that looks whole.
        out = raw(px, b"GET /cut HTTP/1.1\r\nHost: x\r\n\r\n")
        head, _, rest = out.partition(b"\r\n\r\n")
        assert b"Content-Length: 100000" in head and len(rest) < 100000, (head, len(rest))
        out = raw(px, b"GET /cut-chunked HTTP/1.1\r\nHost: x\r\n\r\n")
        assert b"0123456789abcdef" in out and not out.endswith(b"0\r\n\r\n"), out
        status, _, body = px.request("GET", "/fine")
        assert (status, body) == (200, "ok")
    up.close()
    # Nobody listens: 502 at once.
    with ExampleServer(proxy_bin, "--upstream=127.0.0.1:%d" % dead_port()) as px:
        status, _, body = px.request("GET", "/")
        assert status == 502 and "refused" in body, (status, body)


def test_round_robin_failover_and_kept_connections(proxy_bin):
    a = Upstream(lambda m, t, h, b: ok(b"a"))
    b = Upstream(lambda m, t, h, b: ok(b"b"))
    with ExampleServer(proxy_bin, "--upstream=127.0.0.1:%d" % a.port,
                       "--upstream=127.0.0.1:%d" % dead_port(),
                       "--upstream=127.0.0.1:%d" % b.port) as px:
        seen = []
        for _ in range(12):
            status, _, body = px.request("GET", "/")
            assert status == 200, (status, body)
            seen.append(body)
        assert seen.count("a") >= 4 and seen.count("b") >= 4, seen
        # One ring (-A 1): each upstream's connection kept and reused.
        assert a.connections == 1 and b.connections == 1, (a.connections, b.connections)
        px.stop()
    a.close()
    b.close()


def test_https_upstreams(proxy_bin):
    d = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost"], check=True, capture_output=True)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    up = Upstream(lambda m, t, h, b: ok(b"over tls"), tls=ctx)
    # Verified against the CA file, by name.
    with ExampleServer(proxy_bin, "--upstream=https://localhost:%d" % up.port,
                       "--upstream-ca-file=" + cert) as px:
        for _ in range(3):
            status, _, body = px.request("GET", "/s")
            assert (status, body) == (200, "over tls"), (status, body)
        assert up.connections == 1, up.connections  # kept
    # The system's store does not know this certificate: 502, and why.
    with ExampleServer(proxy_bin, "--upstream=https://localhost:%d" % up.port) as px:
        status, _, body = px.request("GET", "/s")
        assert status == 502 and "certificate" in body, (status, body)
    # Not verified, by address: taken.
    with ExampleServer(proxy_bin, "--upstream=https://127.0.0.1:%d" % up.port, "--upstream-insecure") as px:
        status, _, body = px.request("GET", "/s")
        assert (status, body) == (200, "over tls"), (status, body)
    up.close()


def main():
    proxy_bin = sys.argv[1]
    for test in [test_forwarded_fields, test_bodies_are_reframed_never_both,
                 test_smuggling_attempts_never_reach_the_upstream, test_upstream_faults,
                 test_round_robin_failover_and_kept_connections, test_https_upstreams]:
        test(proxy_bin)
        print("ok", test.__name__)


if __name__ == "__main__":
    main()
