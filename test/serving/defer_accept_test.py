"""--defer-accept (TCP_DEFER_ACCEPT) over real sockets, with the real binary.

By default (1 s) a connection is accepted only once its first bytes arrive:
a client that connects and stays silent is the kernel's, not the server's
(/metrics does not count it), and is served as soon as it sends. With
--defer-accept=0 it is accepted at once. Either way a request sent right
after connecting is answered. (A silent client is still accepted after
about the deferral; that takes the kernel's SYN-ACK retransmissions, so
this test does not wait for it.)

Usage: defer_accept_test.py PATH_TO_SERVER
"""
import re
import socket
import subprocess
import sys
import time


def get(port, path):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n" % path)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data
            data += chunk


def accepted(port):
    """connections_accepted_total, this scrape's own connection included."""
    body = get(port, b"/metrics").partition(b"\r\n\r\n")[2].decode()
    m = re.search(r"^uring_http_connections_accepted_total (\d+)", body, re.M)
    assert m, body[:500]
    return int(m.group(1))


def answered(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data.split(b"\r\n", 1)[0]


def run(server_path, extra, silent_counted):
    server = subprocess.Popen([server_path, "-p", "0", "-A", "1", "-w", "1"] + extra,
                              stdout=subprocess.PIPE, text=True)
    try:
        port = int(re.search(r"listening on \S+:(\d+)", server.stdout.readline()).group(1))
        before = accepted(port)
        silent = socket.create_connection(("127.0.0.1", port), timeout=10)
        time.sleep(0.3)  # an accept at once would have happened by now
        after = accepted(port)
        # `after` counts its own scrape; the silent one only if accepted at once.
        assert after == before + 1 + (1 if silent_counted else 0), (extra, before, after)
        silent.sendall(b"GET /test/fast HTTP/1.1\r\nHost: t\r\n\r\n")
        assert answered(silent) == b"HTTP/1.1 200 OK", extra
        # Now it is the server's either way.
        assert accepted(port) == after + 1 + (0 if silent_counted else 1), extra
        silent.close()
        assert get(port, b"/test/fast").startswith(b"HTTP/1.1 200 OK")
    finally:
        server.terminate()
        assert server.wait(timeout=20) == 0


def main():
    run(sys.argv[1], [], silent_counted=False)
    run(sys.argv[1], ["--defer-accept=2"], silent_counted=False)
    run(sys.argv[1], ["--defer-accept=0"], silent_counted=True)
    print("defer_accept_test: ok")


if __name__ == "__main__":
    main()
