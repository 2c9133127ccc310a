"""GET /test/ws, the shipped server's WebSocket echo (RFC 6455), end to end
over raw sockets with a client that frames by hand, so that it can break
each rule on purpose:

- the handshake: 101 with the right Sec-WebSocket-Accept; a plain GET and
  a version other than 13 are 426 naming Upgrade: websocket and version 13;
  a bad key, a POST, a missing Connection: Upgrade are 400, and the
  connection goes on as HTTP/1.1 after them; HTTP/2 gets 426;
- messages: text and binary echoed, empty ones, 125/126/65535/65536-byte
  lengths (each length encoding), fragmented messages with pings between
  the fragments, a message split across many TCP segments, the frames sent
  right after the handshake in the same segment;
- failures: invalid UTF-8 (1007, also in the middle of a fragmented
  message), reserved bits, unknown opcodes, unmasked frames, fragmented
  or oversized control frames, continuation without a message (1002), a
  message over --ws-max-message (1009), an invalid close code (1002);
- the closing handshake: 1000 and 3000-4999 echoed, an empty close answered
  empty, a reason kept; the server closes the TCP connection after it;
- timers: a ping after --ws-ping-interval, a close 1001 after
  --ws-idle-timeout, a close 1001 when the server drains;
- permessage-deflate (RFC 7692) with --ws-deflate=shared and dedicated:
  the parameters agreed, messages compressed both ways (fragmented ones
  too, and the context kept between messages where agreed), small ones
  sent plain, a zip bomb stopped at --ws-max-message (1009), bytes that
  are not DEFLATE and compressed text that is not UTF-8 (1007), RSV1 on a
  continuation (1002), and no extension when the client offers none;
- topics (GET /test/ws/topic): a publish reaches every subscriber on both
  rings, compressed once (RSV1) for those that agreed the shared
  compressor and plain for those that did not, with a dedicated context
  compressed by each subscriber's own; subscribe=0 gets nothing; a
  subscriber that left is dropped; bad parameters are 400;
- wss: the same socket beneath TLS (a certificate made with openssl req);
- /metrics counts the sockets, messages and closes by code.

Usage: websocket_test.py PATH_TO_SERVER
"""
import base64
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import zlib

from ws_client import Client, close_payload, frame


def http_get(port, request):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(request)
    c = Client.__new__(Client)
    c.sock, c.buf = s, b""
    status, headers = c.read_head()
    body = c.read_body(int(headers.get("content-length", "0")))
    return c, status, headers, body


def handshake_refusals(port):
    # A plain GET: 426, with the upgrade named; the connection goes on.
    c, status, headers, body = http_get(port, b"GET /test/ws HTTP/1.1\r\nHost: t\r\n\r\n")
    assert status == 426, status
    assert headers["upgrade"] == "websocket" and headers["sec-websocket-version"] == "13", headers
    c.send(b"GET /test/fast HTTP/1.1\r\nHost: t\r\n\r\n")
    assert c.read_head()[0] == 200
    c.close()
    # Version 8: 426 with the version we speak (RFC 6455 4.4).
    key = base64.b64encode(os.urandom(16)).decode()
    c, status, headers, _ = http_get(port, (
        "GET /test/ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 8\r\n\r\n" % key).encode())
    assert status == 426 and headers["sec-websocket-version"] == "13", (status, headers)
    c.close()
    # 400s: a key that is not 16 bytes, no Connection: Upgrade, two versions.
    for fields in ["Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: c2hvcnQ=\r\n"
                   "Sec-WebSocket-Version: 13\r\n",
                   "Upgrade: websocket\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n" % key,
                   "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                   "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Version: 13\r\n" % key]:
        c, status, _, _ = http_get(port, ("GET /test/ws HTTP/1.1\r\nHost: t\r\n%s\r\n" % fields).encode())
        assert status == 400, (status, fields)
        c.send(b"GET /test/fast HTTP/1.1\r\nHost: t\r\n\r\n")
        assert c.read_head()[0] == 200, "the connection goes on after a refused handshake"
        c.close()
    # A handshake with a body: 400, and the connection closes.
    c, status, _, _ = http_get(port, (
        "GET /test/ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nContent-Length: 2\r\n\r\nab" % key).encode())
    assert status == 400, status
    c.close()
    # Another method: 405.
    c, status, _, _ = http_get(port, b"POST /test/ws HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n")
    assert status == 405, status
    c.close()
    # HTTP/1.0 cannot upgrade: 400.
    c, status, _, _ = http_get(port, (
        "GET /test/ws HTTP/1.0\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % key).encode())
    assert status == 400, status
    c.close()


def echoes(port):
    c = Client(port).handshake()
    for op, payload in [(1, b"hello"), (2, bytes(range(256))), (1, b""), (2, b""),
                        (1, "h\u00e9llo \u2603 \U0001F600".encode()),
                        (2, b"x" * 125), (2, b"y" * 126), (2, b"z" * 65535), (2, b"w" * 65536),
                        (2, os.urandom(1 << 20))]:
        c.send(frame(op, payload))
        fin, rop, got = c.next_frame()
        assert fin and rop == op and got == payload, (op, len(payload), rop, len(got))
    # Fragmented, with a ping between the fragments: the pong comes first
    # (same payload), then the whole message.
    c.send(frame(1, b"fra", fin=False) + frame(9, b"are you there") + frame(0, b"gme", fin=False) +
           frame(0, b"nted"))
    assert c.next_frame() == (True, 0xA, b"are you there")
    assert c.next_frame() == (True, 1, b"fragmented")
    # One message cut into single bytes on the wire.
    data = frame(2, b"byte by byte " * 20)
    for i in range(len(data)):
        c.send(data[i:i + 1])
        if i % 16 == 0:
            time.sleep(0.001)
    assert c.next_frame() == (True, 2, b"byte by byte " * 20)
    # Bursts: many messages sent at once (from a thread, while this one
    # reads) all come back, in order: a burst of mid-sized messages must not
    # run the output queue out of segments (each starting a chunk of its
    # own) long before the byte bound, where echoes were dropped.
    for count, size in [(17, 2048), (64, 2048), (64, 16384), (500, 4096), (3000, 100)]:
        burst = b"".join(frame(2, bytes([i % 251]) * size) for i in range(count))
        sender = threading.Thread(target=c.send, args=(burst,))
        sender.start()
        for i in range(count):
            assert c.next_frame() == (True, 2, bytes([i % 251]) * size), (count, size, i)
        sender.join()
    # Many messages in one segment: each echoed, in order.
    c.send(b"".join(frame(1, b"m%d" % i) for i in range(200)))
    for i in range(200):
        assert c.next_frame() == (True, 1, b"m%d" % i)
    # A pong from the client is ignored; the close is echoed.
    c.send(frame(0xA, b"unsolicited") + frame(8, close_payload(1000, b"bye")))
    assert c.expect_close(1000) == b""
    c.expect_eof()
    c.close()
    # Frames in the same segment as the handshake.
    c = Client(port).handshake(then=frame(1, b"early") + frame(8, close_payload(3001)))
    assert c.next_frame() == (True, 1, b"early")
    c.expect_close(3001)
    c.expect_eof()
    c.close()
    # An empty close is answered empty; 4999 echoed.
    c = Client(port).handshake()
    c.send(frame(8))
    c.expect_close(None)
    c.expect_eof()
    c = Client(port).handshake()
    c.send(frame(8, close_payload(4999, b"app")))
    c.expect_close(4999)
    c.expect_eof()


def failures(port):
    cases = [
        ("invalid UTF-8", frame(1, b"\xff"), 1007),
        ("UTF-8 cut at the message's end", frame(1, b"\xe2\x82"), 1007),
        ("a surrogate in UTF-8", frame(1, b"\xed\xa0\x80"), 1007),
        ("invalid UTF-8 inside a fragmented message",
         frame(1, b"ok", fin=False) + frame(0, b"\xc0\xaf", fin=False), 1007),
        ("RSV1 without an extension", frame(1, b"x", rsv=4), 1002),
        ("RSV2", frame(1, b"x", rsv=2), 1002),
        ("opcode 3", frame(3, b"x"), 1002),
        ("opcode 11", frame(11, b""), 1002),
        ("an unmasked frame", frame(1, b"x", mask=False), 1002),
        ("a fragmented ping", frame(9, b"x", fin=False), 1002),
        ("a ping of 126 bytes", frame(9, b"p" * 126), 1002),
        ("a continuation without a message", frame(0, b"x"), 1002),
        ("a new message inside a fragmented one", frame(1, b"a", fin=False) + frame(1, b"b"), 1002),
        ("close code 1005 sent", frame(8, close_payload(1005)), 1002),
        ("close code 999", frame(8, close_payload(999)), 1002),
        ("close code 2999", frame(8, close_payload(2999)), 1002),
        ("a close of one byte", frame(8, b"\x03"), 1002),
        ("a close reason that is not UTF-8", frame(8, close_payload(1000, b"\xff")), 1007),
        ("a message over --ws-max-message", frame(2, b"", length=2 << 20), 1009),
    ]
    for name, data, code in cases:
        c = Client(port).handshake()
        c.send(data)
        try:
            c.expect_close(code)
            c.expect_eof()
        except Exception as e:
            raise AssertionError("%s: %s" % (name, e))
        c.close()
    # Over the limit only in total: fragments of 1 MiB each.
    c = Client(port).handshake()
    c.send(frame(2, b"a" * (1 << 20), fin=False))
    c.send(frame(0, b"b" * (1 << 20), fin=False))
    c.expect_close(1009)
    c.expect_eof()


def metrics(port):
    _, status, _, body = http_get(port, b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
    assert status == 200
    text = body.decode()
    values = {}
    for line in text.splitlines():
        m = re.match(r"(uring_http_websocket\S*) (\d+)", line)
        if m:
            values[m.group(1)] = int(m.group(2))
    assert values.get('uring_http_websockets_total', 0) >= 20, values
    assert values.get('uring_http_websocket_closes_total{code="1007"}', 0) >= 5, values
    assert values.get('uring_http_websocket_closes_total{code="1002"}', 0) >= 10, values
    assert values.get('uring_http_websocket_closes_total{code="1000"}', 0) >= 1, values
    assert values.get('uring_http_websocket_messages_received_total', 0) >= 200, values


def timers(binary):
    server = subprocess.Popen([binary, "-p", "0", "--address", "127.0.0.1", "-A", "1", "-w", "1",
                               "--ws-ping-interval=300ms", "--ws-idle-timeout=1s",
                               "--shutdown-timeout=5s"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        port = int(re.search(r"listening on \S+:(\d+)", server.stdout.readline()).group(1))
        # A quiet client gets a ping, then (not answering) a close 1001.
        c = Client(port).handshake()
        start = time.monotonic()
        assert c.next_frame() == (True, 0x9, b"")
        assert 0.2 < time.monotonic() - start < 10
        c.expect_close(1001)
        assert 0.8 < time.monotonic() - start < 15, time.monotonic() - start
        c.send(frame(8, close_payload(1001)))
        c.expect_eof()
        # A client that answers the pings stays.
        c = Client(port).handshake()
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline:
            fin, op, payload = c.next_frame()
            assert op == 0x9, op
            c.send(frame(0xA, payload))
        # The server drains: a close 1001 to the open socket.
        server.send_signal(signal.SIGTERM)
        c.expect_close(1001)
        c.send(frame(8, close_payload(1001)))
        c.expect_eof()
        assert server.wait(timeout=10) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def compress(data, compressor):
    out = compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH)
    assert out.endswith(b"\x00\x00\xff\xff")
    return out[:-4]


def read_compressed(c):
    """The server's next frame: (rsv1, opcode, payload)."""
    b0, b1 = c.take(2)
    assert b1 & 0x80 == 0
    n = b1 & 0x7F
    if n == 126:
        n = int.from_bytes(c.take(2), "big")
    elif n == 127:
        n = int.from_bytes(c.take(8), "big")
    return bool(b0 & 0x40), b0 & 0x0F, c.take(n)


def deflate(binary):
    for mode in ["shared", "dedicated"]:
        server = subprocess.Popen([binary, "-p", "0", "--address", "127.0.0.1", "-A", "1",
                                   "--ws-deflate=" + mode, "--ws-max-message=4MiB"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            port = int(re.search(r"listening on \S+:(\d+)", server.stdout.readline()).group(1))
            # No offer: no extension, and RSV1 is then a protocol error.
            c = Client(port).handshake()
            c.send(frame(1, b"x", rsv=4))
            c.expect_close(1002)
            c.close()
            for offer, expected in [
                    ("permessage-deflate; client_max_window_bits",
                     {"shared": "permessage-deflate; server_no_context_takeover; client_no_context_takeover",
                      "dedicated": "permessage-deflate; server_max_window_bits=12; client_max_window_bits=12"}),
                    ("x-webkit-deflate-frame, permessage-deflate",
                     {"shared": "permessage-deflate; server_no_context_takeover; client_no_context_takeover",
                      "dedicated": "permessage-deflate; server_max_window_bits=12"}),
                    # A client that inflates in a 512-byte window: we must
                    # compress in one (Autobahn 13.3.8 and after).
                    ("permessage-deflate; server_max_window_bits=9",
                     {"shared": "permessage-deflate; server_no_context_takeover; "
                                "client_no_context_takeover; server_max_window_bits=9",
                      "dedicated": "permessage-deflate; server_max_window_bits=9"})]:
                c = Client(port, extra="Sec-WebSocket-Extensions: %s\r\n" % offer)
                c.sock.sendall(c.request)
                status, headers = c.read_head()
                assert status == 101, status
                ext = headers.get("sec-websocket-extensions")
                assert ext == expected[mode], (mode, offer, ext)
                client_takeover = "client_no_context_takeover" not in ext
                server_takeover = "server_no_context_takeover" not in ext
                m = re.search(r"client_max_window_bits=(\d+)", ext)
                bits = int(m.group(1)) if m else 15
                m = re.search(r"server_max_window_bits=(\d+)", ext)
                server_bits = int(m.group(1)) if m else 15
                compressor = zlib.compressobj(6, zlib.DEFLATED, -bits)
                decompressor = zlib.decompressobj(-server_bits)
                for i in range(6):
                    # Repeats 700 bytes apart: past a 512-byte window.
                    message = base64.b64encode(os.urandom(525)) * 3 + b" %d" % i
                    if not client_takeover:
                        compressor = zlib.compressobj(6, zlib.DEFLATED, -bits)
                    payload = compress(message, compressor)
                    if i % 2:
                        # Fragmented: RSV1 on the first frame only.
                        c.send(frame(1, payload[:5], fin=False, rsv=4) + frame(0, payload[5:]))
                    else:
                        c.send(frame(1, payload, rsv=4))
                    rsv1, op, got = read_compressed(c)
                    assert rsv1 and op == 1, (rsv1, op)
                    if not server_takeover:
                        decompressor = zlib.decompressobj(-server_bits)
                    # A few bytes at a time, as a client inflating into a
                    # small buffer does: its window then holds only the
                    # agreed bytes of what came before.
                    got += b"\x00\x00\xff\xff"
                    inflated = b"".join(decompressor.decompress(got[k:k + 8])
                                        for k in range(0, len(got), 8))
                    assert inflated == message
                # A small message goes back plain.
                c.send(frame(2, b"tiny"))
                assert read_compressed(c) == (False, 2, b"tiny")
                # 20 MiB of zeros in a few KiB: stopped at --ws-max-message.
                if not client_takeover:
                    compressor = zlib.compressobj(9, zlib.DEFLATED, -bits)
                c.send(frame(2, compress(b"\0" * (20 << 20), compressor), rsv=4))
                c.expect_close(1009)
                c.expect_eof()
                c.close()
            # Not DEFLATE; compressed text that is not UTF-8; RSV1 on a continuation.
            fresh = lambda: zlib.compressobj(6, zlib.DEFLATED, -15)
            for data, code in [(frame(1, b"\xff\xff\xff\xff", rsv=4), 1007),
                               (frame(1, compress(b"ok \xc0\xaf", fresh()), rsv=4), 1007),
                               (frame(1, b"ab", fin=False) + frame(0, b"cd", rsv=4), 1002)]:
                c = Client(port, extra="Sec-WebSocket-Extensions: permessage-deflate\r\n").handshake()
                c.send(data)
                c.expect_close(code)
                c.expect_eof()
                c.close()
        finally:
            server.kill()
            server.wait()


def topics(binary):
    for mode in ["shared", "dedicated"]:
        server = subprocess.Popen([binary, "-p", "0", "--address", "127.0.0.1", "-A", "2",
                                   "--ws-deflate=" + mode],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            port = int(re.search(r"listening on \S+:(\d+)", server.stdout.readline()).group(1))
            for query in ["name=", "name=" + "x" * 65, "subscribe=2", "name=%zz"]:
                c = Client(port, path="/test/ws/topic?" + query)
                c.sock.sendall(c.request)
                status, _ = c.read_head()
                assert status == 400, (query, status)
                c.close()
            path = "/test/ws/topic?name=room"
            offer = "Sec-WebSocket-Extensions: permessage-deflate\r\n"
            # Enough sockets that both rings have some (SO_REUSEPORT spreads
            # them by the source port's hash).
            plain = [Client(port, path=path).handshake() for _ in range(4)]
            deflating = []
            for _ in range(4):
                c = Client(port, path=path, extra=offer)
                c.sock.sendall(c.request)
                status, headers = c.read_head()
                assert status == 101, status
                ext = headers.get("sec-websocket-extensions", "")
                assert ext.startswith("permessage-deflate"), ext
                m = re.search(r"server_max_window_bits=(\d+)", ext)
                takeover = "server_no_context_takeover" not in ext
                assert takeover == (mode == "dedicated"), ext
                c.window = int(m.group(1)) if m else 15
                c.decompressor = zlib.decompressobj(-c.window)
                c.takeover = takeover
                deflating.append(c)
            publisher = Client(port, path=path + "&subscribe=0").handshake()
            messages = [(1, (b'{"id": %d, "text": "the quick brown fox"} ' % i) * 40) for i in range(3)]
            messages.append((2, bytes(range(256)) * 4))
            messages.append((1, b"short"))
            for op, m in messages:
                publisher.send(frame(op, m))
            for c in plain:
                for op, m in messages:
                    assert c.next_frame() == (True, op, m)
            for c in deflating:
                for op, m in messages:
                    rsv1, got_op, got = read_compressed(c)
                    assert got_op == op, (got_op, op)
                    if len(m) < 64:
                        assert not rsv1 and got == m
                        continue
                    assert rsv1, "a long message compressed"
                    if not c.takeover:
                        c.decompressor = zlib.decompressobj(-c.window)
                    assert c.decompressor.decompress(got + b"\x00\x00\xff\xff") == m
            # The publisher is no subscriber: its next frame is the pong.
            publisher.send(frame(9, b"p"))
            assert publisher.next_frame() == (True, 0xA, b"p")
            # A subscriber that leaves is dropped; the others still get it.
            gone = plain.pop()
            gone.send(frame(8, close_payload(1000)))
            gone.expect_close(1000)
            gone.close()
            publisher.send(frame(1, b"after"))
            for c in plain:
                assert c.next_frame() == (True, 1, b"after")
            for c in deflating:
                assert read_compressed(c) == (False, 1, b"after")
            assert server.poll() is None, "the server died"
            for c in plain + deflating + [publisher]:
                c.close()
        finally:
            server.kill()
            server.wait()


def secure(binary):
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = tmp + "/cert.pem", tmp + "/key.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                        "-out", cert, "-days", "2", "-subj", "/CN=localhost"],
                       check=True, capture_output=True)
        server = subprocess.Popen([binary, "-p", "0", "--address", "127.0.0.1", "-A", "1",
                                   "--tls-cert", cert, "--tls-key", key],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            port = int(re.search(r"listening on \S+:(\d+)", server.stdout.readline()).group(1))
            context = ssl.create_default_context(cafile=cert)
            context.set_alpn_protocols(["http/1.1"])
            c = Client.__new__(Client)
            c.sock = context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10),
                                         server_hostname="localhost")
            c.key = base64.b64encode(os.urandom(16)).decode()
            c.request = ("GET /test/ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n"
                         "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                         "Sec-WebSocket-Version: 13\r\n\r\n" % c.key).encode()
            c.buf = b""
            c.handshake()
            for payload in [b"over tls", os.urandom(300000)]:
                c.send(frame(2, payload))
                assert c.next_frame() == (True, 2, payload)
            c.send(frame(8, close_payload(1000)))
            c.expect_close(1000)
            c.expect_eof()
            c.close()
        finally:
            server.kill()
            server.wait()


def main():
    binary = sys.argv[1]
    server = subprocess.Popen([binary, "-p", "0", "--address", "127.0.0.1", "-A", "1", "-w", "1",
                               "--ws-max-message=1500000"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        port = int(re.search(r"listening on \S+:(\d+)", server.stdout.readline()).group(1))
        handshake_refusals(port)
        echoes(port)
        failures(port)
        metrics(port)
        assert server.poll() is None, "the server died"
    finally:
        server.kill()
        server.wait()
    timers(binary)
    deflate(binary)
    topics(binary)
    secure(binary)
    print("websocket_test: ok")


if __name__ == "__main__":
    main()
