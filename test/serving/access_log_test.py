"""--access-log: one Common Log Format line per response, with the peer's
address, written through the rings; flushed on exit.

Usage: access_log_test.py PATH_TO_SERVER
"""
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile

LINE = re.compile(r'^(\S+) - - \[(\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d \+0000)\] "(.*)" (\d{3}) (\d+|-)$')


def exchange(port, raw):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(raw)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data
            data += chunk


def main():
    log = os.path.join(tempfile.mkdtemp(), "access.log")
    server = subprocess.Popen([sys.argv[1], "-p", "0", "-A", "2", "-w", "2", "-D", "1",
                               "--access-log", log], stdout=subprocess.PIPE, text=True)
    try:
        port = int(re.search(r"listening on \S+:(\d+)", server.stdout.readline()).group(1))
        exchange(port, b"GET /test/fast HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        exchange(port, b"GET /test/slow?a=1 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        exchange(port, b'GET /missing?"q HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n')
        exchange(port, b"BROKEN\r\n\r\n")
        for _ in range(300):
            exchange(port, b"GET /test/fast HTTP/1.0\r\n\r\n")
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=20) == 0
    finally:
        if server.poll() is None:
            server.kill()
    lines = open(log).read().splitlines()
    assert len(lines) == 304, len(lines)
    parsed = [LINE.match(l) for l in lines]
    assert all(parsed), [l for l, m in zip(lines, parsed) if not m][:3]
    by_request = {}
    for m in parsed:
        assert m.group(1) == "127.0.0.1", m.group(0)
        by_request.setdefault((m.group(3), m.group(4)), []).append(m.group(5))
    assert by_request[("GET /test/fast HTTP/1.1", "200")] == ["-"]
    assert by_request[("GET /test/slow?a=1 HTTP/1.1", "200")] == ["-"]
    # The client's quote is escaped, and the 404's body length is logged.
    assert by_request[("GET /missing?\\x22q HTTP/1.1", "404")] == ["14"]
    assert by_request[("-", "400")] == ["16"]
    assert len(by_request[("GET /test/fast HTTP/1.0", "200")]) == 300
    print("access_log_test: ok")


if __name__ == "__main__":
    main()
