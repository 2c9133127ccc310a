"""The shipped server's body endpoints, end to end with raw sockets:
POST /test/echo (the body back, either framing), POST /test/sink and
POST /test/count (a streamed body of any size, counted on a worker or on
the ring), GET /test/stream?bytes=N&chunk=M (streamed from a worker:
chunked, or close-delimited for HTTP/1.0; bad parameters are a 400). A
broken or cut body to /test/sink or /test/count is the server's 400 (the
issue 19 reproduction), and with -w 1 an upload trickling below
--body-min-rate is cut with 408 while GET /test/slow is still answered.

Usage: endpoints_test.py PATH_TO_SERVER
"""
import re
import signal
import socket
import subprocess
import sys
import time


def read_response(sock, buf=b""):
    """One response from sock: (status, headers dict, body bytes, rest)."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        assert chunk, "connection closed before the head ended: %r" % buf[:200]
        buf += chunk
    head, buf = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, value = line.split(":", 1)
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding") == "chunked":
        body = b""
        while True:
            while b"\r\n" not in buf:
                buf += sock.recv(65536)
            size_line, buf = buf.split(b"\r\n", 1)
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                while not buf.startswith(b"\r\n") and b"\r\n\r\n" not in buf:
                    buf += sock.recv(65536)
                buf = buf[buf.index(b"\r\n") + 2:] if buf.startswith(b"\r\n") else buf[buf.index(b"\r\n\r\n") + 4:]
                return status, headers, body, buf
            while len(buf) < size + 2:
                buf += sock.recv(65536)
            assert buf[size:size + 2] == b"\r\n"
            body += buf[:size]
            buf = buf[size + 2:]
    if "content-length" in headers:
        n = int(headers["content-length"])
        while len(buf) < n:
            chunk = sock.recv(65536)
            assert chunk, "closed inside the body"
            buf += chunk
        return status, headers, buf[:n], buf[n:]
    # Close-delimited.
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return status, headers, buf, b""
        buf += chunk


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def chunked(body, piece):
    out = b""
    for i in range(0, len(body), piece):
        part = body[i:i + piece]
        out += b"%x\r\n" % len(part) + part + b"\r\n"
    return out + b"0\r\n\r\n"


def broken_bodies(port):
    """Each broken body of issue 19 item 2, after three good bytes: 400, close."""
    head = b"POST %s HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"
    bodies = [b"zz\r\n", b"10000000000000000\r\nx\r\n", b"5\r\nhelloXY", b"5\nhello\r\n0\r\n\r\n",
              b"5\rhello\r\n0\r\n\r\n", b"5;=x\r\nhello\r\n0\r\n\r\n", b"0\r\nX : y\r\n\r\n"]
    for path in (b"/test/sink", b"/test/count"):
        for body in bodies:
            c = connect(port)
            c.sendall(head % path)
            c.sendall(body)
            status, headers, _, _ = read_response(c)
            assert status == 400 and headers.get("connection") == "close", (path, body, status)
            c.close()
        # A Content-Length body the client's FIN cuts short.
        c = connect(port)
        c.sendall(b"POST " + path + b" HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc")
        c.shutdown(socket.SHUT_WR)
        status, headers, _, _ = read_response(c)
        assert status == 400 and headers.get("connection") == "close", (path, status)
        c.close()


def trickle(binary):
    """-w 1: a byte every 100 ms to /test/sink is cut with 408 after the
    first 1 s window, and the worker answers GET /test/slow again."""
    server = subprocess.Popen([binary, "-p", "0", "--address", "127.0.0.1", "-A", "1", "-w", "1",
                               "-D", "1", "--body-min-rate=1024", "--body-rate-window=1s"],
                              stdout=subprocess.PIPE, text=True)
    try:
        port = int(re.search(r"listening on \S+:(\d+)", server.stdout.readline()).group(1))
        t = connect(port)
        t.sendall(b"POST /test/sink HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n\r\nx")
        other = connect(port)
        other.sendall(b"GET /test/slow HTTP/1.1\r\nHost: t\r\n\r\n")
        t.setblocking(False)
        got = b""
        for _ in range(300):  # 30 s at most
            time.sleep(0.1)
            try:
                got = t.recv(65536)
                break
            except BlockingIOError:
                t.send(b"x")
        assert got.startswith(b"HTTP/1.1 408 "), got[:100]
        status, _, _, _ = read_response(other)
        assert status == 200, status
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=20) == 0
    finally:
        if server.poll() is None:
            server.kill()


def main():
    trickle(sys.argv[1])
    server = subprocess.Popen([sys.argv[1], "-p", "0", "--address", "127.0.0.1", "-A", "1", "-w", "2"],
                              stdout=subprocess.PIPE, text=True)
    try:
        port = int(re.search(r"listening on \S+:(\d+)", server.stdout.readline()).group(1))
        s = connect(port)
        body = bytes(range(256)) * 1000
        # Echo: Content-Length, then chunked, pipelined on one connection.
        s.sendall(b"POST /test/echo HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % len(body) + body +
                  b"POST /test/echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" +
                  chunked(body, 7777))
        status, headers, got, rest = read_response(s)
        assert status == 200 and got == body, status
        assert headers["content-length"] == str(len(body))
        status, headers, got, rest = read_response(s, rest)
        assert status == 200 and got == body, status
        # Sink and count: 20 MB in both framings, on one connection.
        big = b"z" * (20 << 20)
        for path in (b"/test/sink", b"/test/count"):
            s.sendall(b"POST " + path + b" HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % len(big))
            s.sendall(big)
            status, _, got, rest = read_response(s, rest)
            assert status == 200 and got == b"%d\n" % len(big), (path, status, got)
            s.sendall(b"POST " + path + b" HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
            s.sendall(chunked(big[:5 << 20], 65536))
            status, _, got, rest = read_response(s, rest)
            assert status == 200 and got == b"%d\n" % (5 << 20), (path, status, got)
        # Stream: chunked in 1.1, in M-byte writes; close-delimited in 1.0.
        s.sendall(b"GET /test/stream?bytes=1000000&chunk=4096 HTTP/1.1\r\nHost: t\r\n\r\n")
        status, headers, got, rest = read_response(s, rest)
        assert status == 200 and headers.get("transfer-encoding") == "chunked", headers
        assert got == b"x" * 1000000
        for bad in (b"/test/stream", b"/test/stream?bytes=x", b"/test/stream?bytes=1&chunk=0",
                    b"/test/stream?bytes=1&chunk=99999999999"):
            s.sendall(b"GET " + bad + b" HTTP/1.1\r\nHost: t\r\n\r\n")
            status, _, got, rest = read_response(s, rest)
            assert status == 400, (bad, status)
        s.close()
        old = connect(port)
        old.sendall(b"GET /test/stream?bytes=300000 HTTP/1.0\r\n\r\n")
        status, headers, got, _ = read_response(old)
        assert status == 200 and headers.get("connection") == "close", headers
        assert "transfer-encoding" not in headers and got == b"x" * 300000, len(got)
        old.close()
        # A connection per request (Connection: close, HTTP/1.0): the answer
        # whole, then the server's FIN, at sizes either side of the one up
        # to which the close is linked to the answer's send (16 KiB).
        for size in (0, 1, 5000, 16000, 16384, 17000, 100000):
            for i in range(40):
                c = connect(port)
                if i % 2:
                    c.sendall(b"GET /test/bytes?%d HTTP/1.0\r\n\r\n" % size)
                else:
                    c.sendall(b"GET /test/bytes?%d HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n" % size)
                status, headers, got, rest = read_response(c)
                assert status == 200 and len(got) == size, (size, status, len(got))
                assert headers.get("connection") == "close", headers
                while True:  # then EOF, nothing more
                    chunk = c.recv(65536)
                    assert not chunk or not rest, (size, rest[:100])
                    rest += chunk
                    if not chunk:
                        break
                assert rest == b"", (size, rest[:100])
                c.close()
        broken_bodies(port)
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=20) == 0
    finally:
        if server.poll() is None:
            server.kill()
    print("endpoints_test: ok")


if __name__ == "__main__":
    main()
