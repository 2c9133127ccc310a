"""A spliced file body never reaches another connection.

Clients download a large file (spliced: file -> pipe -> socket) and reset
their connections as soon as the answer starts, while other clients make new
connections beside them and check that the first bytes they get are their
own response's status line. io_uring resolves a splice's direct descriptor
only when an io-wq worker starts it: a splice still queued when its
connection closed used to run after the close had freed the descriptor's
entry and an accept had given it to a new client, which then received the
old download's bytes before its own head (about 1 new connection in 100
under this load). The close now cancels the splice by its user_data first.

Usage: splice_reuse_test.py PATH_TO_SERVER [SECONDS]
"""
import os
import re
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time


def main():
    binary = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 6.0
    root = tempfile.mkdtemp()
    with open(os.path.join(root, "big.bin"), "wb") as f:
        f.truncate(100 << 20)  # sparse zeros: every body byte is 0
    srv = subprocess.Popen([binary, "-p", "0", "--address", "127.0.0.1", "-A", "1", "-w", "1",
                            "--root", root, "--file-splice", "65536"],
                           stdout=subprocess.PIPE, text=True)
    try:
        ready = srv.stdout.readline()
        port = int(re.search(r"listening on \S+:(\d+)", ready).group(1))
        stop = time.monotonic() + seconds
        bad = []
        counts = {"leavers": 0, "checks": 0}
        lock = threading.Lock()

        def leaver():
            while time.monotonic() < stop:
                try:
                    s = socket.create_connection(("127.0.0.1", port), timeout=5)
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                    s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
                    s.recv(100)
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    s.close()
                    with lock:
                        counts["leavers"] += 1
                except OSError:
                    pass

        def checker():
            while time.monotonic() < stop:
                try:
                    s = socket.create_connection(("127.0.0.1", port), timeout=5)
                    s.sendall(b"GET /test/fast HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    first = s.recv(16)
                    s.close()
                    with lock:
                        counts["checks"] += 1
                        if first and not first.startswith(b"HTTP/1.1 "):
                            bad.append(first)
                except OSError:
                    pass

        threads = [threading.Thread(target=leaver) for _ in range(24)]
        threads += [threading.Thread(target=checker) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert srv.poll() is None, "the server died"
        print("splice_reuse_test: %d downloads reset mid-body, %d new connections checked, "
              "%d got bytes that were not theirs" % (counts["leavers"], counts["checks"], len(bad)),
              flush=True)
        assert counts["leavers"] > 100 and counts["checks"] > 100, counts
        assert not bad, "%d new connections began with another's bytes: %r" % (len(bad), bad[:3])
    finally:
        srv.terminate()
        srv.wait(timeout=30)


if __name__ == "__main__":
    main()
