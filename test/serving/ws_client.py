"""A WebSocket client that frames by hand (RFC 6455), for tests that must
break each rule on purpose: frame() builds any frame (masked or not,
reserved bits, any length field), Client does the handshake and reads the
server's frames, checking that they are unmasked and use no reserved bit.
"""
import base64
import hashlib
import os
import socket
import struct

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def frame(op, payload=b"", fin=True, mask=True, rsv=0, length=None):
    b0 = (0x80 if fin else 0) | (rsv << 4) | op
    n = len(payload) if length is None else length
    m = 0x80 if mask else 0
    if n < 126:
        head = bytes([b0, m | n])
    elif n < 65536:
        head = bytes([b0, m | 126]) + struct.pack(">H", n)
    else:
        head = bytes([b0, m | 127]) + struct.pack(">Q", n)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(c ^ key[i % 4] for i, c in enumerate(payload))


def close_payload(code, reason=b""):
    return struct.pack(">H", code) + reason


class Client:
    def __init__(self, port, path="/test/ws", extra=""):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.key = base64.b64encode(os.urandom(16)).decode()
        self.request = ("GET %s HTTP/1.1\r\nHost: test\r\nUpgrade: websocket\r\n"
                        "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                        "Sec-WebSocket-Version: 13\r\n%s\r\n" % (path, self.key, extra)).encode()
        self.buf = b""

    def handshake(self, then=b""):
        self.sock.sendall(self.request + then)
        status, headers = self.read_head()
        assert status == 101, (status, headers)
        expected = base64.b64encode(hashlib.sha1(self.key.encode() + GUID).digest()).decode()
        assert headers["sec-websocket-accept"] == expected, headers
        assert headers["upgrade"].lower() == "websocket", headers
        assert headers["connection"].lower() == "upgrade", headers
        return self

    def read_head(self):
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            assert chunk, "closed before the head ended: %r" % self.buf
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
        return int(lines[0].split()[1]), headers

    def read_body(self, n):
        self.read(n)
        body, self.buf = self.buf[:n], self.buf[n:]
        return body

    def read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("closed with %d of %d bytes" % (len(self.buf), n))
            self.buf += chunk

    def take(self, n):
        self.read(n)
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, data):
        self.sock.sendall(data)

    def next_frame(self):
        """(fin, opcode, payload) of the server's next frame; it must be unmasked."""
        b0, b1 = self.take(2)
        assert b1 & 0x80 == 0, "a server frame is never masked"
        assert b0 & 0x70 == 0, "no reserved bit without an extension"
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack(">H", self.take(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", self.take(8))[0]
        return bool(b0 & 0x80), b0 & 0x0F, self.take(n)

    def expect_close(self, code):
        """The server's close frame with `code` (None: an empty one), then its FIN."""
        fin, op, payload = self.next_frame()
        while op == 0xA or op == 0x9:  # a ping of the server's own may come first
            fin, op, payload = self.next_frame()
        assert op == 0x8, (op, payload)
        if code is None:
            assert payload == b"", payload
        else:
            assert len(payload) >= 2 and struct.unpack(">H", payload[:2])[0] == code, payload
        return payload[2:]

    def expect_eof(self):
        self.sock.settimeout(10)
        while True:
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                raise AssertionError("the server reset the connection instead of closing it")
            if not chunk:
                return
            self.buf += chunk
            assert len(self.buf) < 1 << 20, "data after the close"

    def close(self):
        self.sock.close()
