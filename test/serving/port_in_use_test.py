"""A plain start on a port another process listens on is refused.

A second server started by mistake on a port where one already listens must
not join the first one's SO_REUSEPORT group (requests would be split between
two processes with different code and state); it must stop at start-up with
exit status 1 and a message that names --takeover, the way to restart on a
port without losing a connection. The kernel's own rule decides what
overlaps: 127.0.0.1:P and 0.0.0.0:P do, both ways. What does not listen does
not count: a port whose last listener has gone (its connections in
TIME_WAIT) starts as before.

Usage: port_in_use_test.py PATH_TO_SERVER
"""
import re
import signal
import socket
import subprocess
import sys
import threading
import time

START_TIMEOUT = 20.0


def start(binary, *args):
    """(process, port) of a server that printed its ready line."""
    process = subprocess.Popen([binary, "-A", "2", "-w", "1", "-C", "256", *args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    timer = threading.Timer(START_TIMEOUT, process.kill)
    timer.start()
    line = process.stdout.readline()
    timer.cancel()
    m = re.search(r"listening on \S+:(\d+),", line)
    assert m, "%s: no ready line: %r %s" % (args, line, process.stderr.read()
                                            if process.poll() is not None else "")
    return process, int(m.group(1))


def stop(process):
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0


def expect_refused(binary, address, port, why):
    """A plain start on address:port exits 1 with a message naming --takeover."""
    process = subprocess.Popen([binary, "-A", "2", "-w", "1", "-C", "256", "--address", address,
                                "-p", str(port)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = process.communicate(timeout=START_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
    try:
        assert "ready" not in out, "%s: a second server started on %s:%d: %r" % (
            why, address, port, out)
        assert process.returncode == 1, "%s: exit status %s, expected 1 (stderr %r)" % (
            why, process.returncode, err)
        assert "--takeover" in err, "%s: the message does not name --takeover: %r" % (why, err)
        assert str(port) in err, "%s: the message does not name the port: %r" % (why, err)
    finally:
        if process.poll() is None:
            process.kill()
    print("port_in_use_test: %s: refused: %s" % (why, err.strip().splitlines()[-1]))


def get(port):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET /test/fast HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    return data


def main():
    binary = sys.argv[1]

    # The same address twice, then the wildcard over a specific address.
    first, port = start(binary, "--address", "127.0.0.1", "-p", "0")
    try:
        expect_refused(binary, "127.0.0.1", port, "same address")
        expect_refused(binary, "0.0.0.0", port, "wildcard over 127.0.0.1")
        # The first server still answers, and alone.
        assert get(port).startswith(b"HTTP/1.1 200"), "the first server stopped answering"
    finally:
        stop(first)

    # A specific address over the wildcard.
    first, port = start(binary, "--address", "0.0.0.0", "-p", "0")
    try:
        expect_refused(binary, "127.0.0.1", port, "127.0.0.1 over the wildcard")
    finally:
        stop(first)

    # Another program's listener that would let us join (SO_REUSEPORT, same
    # user): refused all the same.
    foreign = socket.socket()
    foreign.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    foreign.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    foreign.bind(("127.0.0.1", 0))
    foreign.listen(16)
    try:
        expect_refused(binary, "127.0.0.1", foreign.getsockname()[1],
                       "another program's SO_REUSEPORT listener")
    finally:
        foreign.close()

    # Nothing listens any more (the connections of the last server are in
    # TIME_WAIT): a plain start works as it always did.
    first, port = start(binary, "--address", "127.0.0.1", "-p", "0")
    for _ in range(3):
        assert get(port).startswith(b"HTTP/1.1 200")
    stop(first)
    again, again_port = start(binary, "--address", "127.0.0.1", "-p", str(port))
    assert again_port == port
    assert get(port).startswith(b"HTTP/1.1 200")
    stop(again)
    print("port_in_use_test: ok")


if __name__ == "__main__":
    main()
