"""Starts an example binary on a free loopback port and stops it again.

The examples take the flags of //src:server: `-p 0` picks a free port, which
the ready line ("uring-http ready: listening on 127.0.0.1:PORT, ...") names.

For tests that need to see the wire (framing, pipelining, streams read a
piece at a time), ExampleServer.connect() gives a raw socket and
read_head/read_chunk/read_response parse what comes back on it.
"""
import http.client
import re
import signal
import socket
import subprocess
import threading

READY = re.compile(r"uring-http ready: listening on \S+:(\d+),")


class ExampleServer:
    def __init__(self, binary, *extra_args):
        self.process = subprocess.Popen(
            [binary, "-p", "0", "--address", "127.0.0.1", "-A", "1", *extra_args],
            stdout=subprocess.PIPE, text=True)
        # A watchdog: a server that never gets ready must not hang the test.
        timer = threading.Timer(20, self.process.kill)
        timer.start()
        line = self.process.stdout.readline()
        timer.cancel()
        match = READY.match(line)
        assert match, "no ready line from %s: %r" % (binary, line)
        self.port = int(match.group(1))

    def request(self, method, target, body=None, headers=None):
        """One request on a new connection: (status, headers dict, body str)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.request(method, target, body=body, headers=headers or {})
            response = connection.getresponse()
            return (response.status, {k.lower(): v for k, v in response.getheaders()},
                    response.read().decode())
        finally:
            connection.close()

    def connect(self, timeout=10):
        """A raw TCP connection to the server (the caller closes it)."""
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)

    def stop(self):
        """SIGTERM (a drain) and the exit status, which must be 0."""
        self.process.send_signal(signal.SIGTERM)
        try:
            status = self.process.wait(timeout=20)
        finally:
            if self.process.poll() is None:
                self.process.kill()
        assert status == 0, "exit status %s after SIGTERM" % status

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.process.poll() is None:
            if exc[0] is None:
                self.stop()
            else:
                self.process.kill()
                self.process.wait()


class Response:
    """A response read off a raw connection (see read_response)."""

    def __init__(self, version, status, headers):
        self.version = version  # "HTTP/1.1"
        self.status = status
        self.headers = headers  # lower-case name -> value (repeats joined by ", ")
        self.framing = None     # "length", "chunked", "close" or "none"
        self.body = b""
        self.chunks = []        # chunked: the size of each chunk, in order
        self.trailers = {}      # chunked: lower-case name -> value

    def header(self, name):
        return self.headers.get(name.lower())


def _read_line(stream):
    line = stream.readline(65537)
    assert line.endswith(b"\r\n"), "truncated line: %r" % line
    return line[:-2]


def _read_fields(stream):
    fields = {}
    while True:
        line = _read_line(stream)
        if not line:
            return fields
        name, sep, value = line.decode("latin-1").partition(":")
        assert sep and name == name.strip(), "bad field line: %r" % line
        name, value = name.lower(), value.strip()
        fields[name] = fields[name] + ", " + value if name in fields else value


def read_head(stream):
    """The status line and headers from a binary file object (sock.makefile("rb"))."""
    line = _read_line(stream).decode("latin-1")
    version, status, _ = (line + " ").split(" ", 2)
    assert version.startswith("HTTP/1.") and status.isdigit(), "bad status line: %r" % line
    return Response(version, int(status), _read_fields(stream))


def read_chunk(stream, response):
    """The next chunk of a chunked body (its size recorded in response.chunks),
    or None after the last chunk, whose trailers go to response.trailers."""
    size_line = _read_line(stream).decode("latin-1")
    size = int(size_line.split(";", 1)[0].strip(), 16)
    if size == 0:
        response.trailers = _read_fields(stream)
        return None
    data = stream.read(size)
    assert len(data) == size, "chunk cut short: %d of %d bytes" % (len(data), size)
    assert stream.read(2) == b"\r\n", "no CRLF after a chunk"
    response.chunks.append(size)
    return data


def read_response(stream, head_only=False):
    """One whole response from a binary file object, framed as RFC 9112 says:
    Content-Length, chunked (chunks and trailers recorded), or until the
    connection closes. head_only: the answer to a HEAD (no body follows)."""
    response = read_head(stream)
    encoding = response.header("transfer-encoding")
    length = response.header("content-length")
    if head_only or response.status in (204, 304):
        response.framing = "none"
    elif encoding is not None:
        assert encoding.lower() == "chunked", encoding
        assert length is None, "both Content-Length and Transfer-Encoding"
        response.framing = "chunked"
        pieces = []
        while True:
            data = read_chunk(stream, response)
            if data is None:
                break
            pieces.append(data)
        response.body = b"".join(pieces)
    elif length is not None:
        response.framing = "length"
        response.body = stream.read(int(length))
        assert len(response.body) == int(length), "body cut short"
    else:
        response.framing = "close"
        response.body = stream.read()
    return response
