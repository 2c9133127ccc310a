"""systemd socket activation (LISTEN_FDS/LISTEN_PID), as systemd does it.

This test plays systemd: it opens the listening socket itself, starts the
server with it as descriptor 3 and LISTEN_FDS=1, LISTEN_PID=<the server's
pid> (set by the shell the server is exec'd from), and checks that:

  * the server serves on that socket (two accept threads sharing it) and
    says "from systemd" in its ready line, without binding a port of its own;
  * on SIGTERM it drains and exits 0 but leaves the socket listening: the
    socket is systemd's, and connections that arrive while no server runs
    wait in its queue;
  * the next server started on the same socket answers those waiting
    connections: a restart through systemd loses nothing;
  * LISTEN_PID naming another process is ignored (the server binds as
    usual), and a malformed LISTEN_FDS stops the start with exit status 1.

Usage: socket_activation_test.py PATH_TO_SERVER
"""
import os
import re
import signal
import socket
import subprocess
import sys
import threading

TIMEOUT = 20.0
REQUEST = b"GET /test/fast HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"


def activated(binary, sock, args=(), listen_pid=None, listen_fds="1"):
    """The server started as systemd starts it: `sock` as descriptor 3."""
    pid = "$$" if listen_pid is None else str(listen_pid)
    script = 'LISTEN_PID=%s LISTEN_FDS=%s exec "$0" "$@"' % (pid, listen_fds)

    def give_socket():
        if sock.fileno() == 3:
            os.set_inheritable(3, True)
        else:
            os.dup2(sock.fileno(), 3)  # inheritable, as dup2 makes it

    return subprocess.Popen(["/bin/sh", "-c", script, binary, "-A", "2", "-w", "1", "-C", "256",
                             *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=give_socket, close_fds=False)


def ready_line(process):
    timer = threading.Timer(TIMEOUT, process.kill)
    timer.start()
    line = process.stdout.readline()
    timer.cancel()
    assert line.startswith("uring-http ready:"), "no ready line: %r %s" % (
        line, process.stderr.read() if process.poll() is not None else "")
    return line


def get(port):
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as s:
        s.sendall(REQUEST)
        return receive_all(s)


def receive_all(s):
    data = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            return data
        data += chunk


def stop(process):
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=TIMEOUT) == 0, process.stderr.read()


def main():
    binary = sys.argv[1]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]

    # The server on systemd's socket.
    first = activated(binary, sock, ["-p", "1"])  # -p is ignored: the socket decides
    line = ready_line(first)
    assert "listening on 127.0.0.1:%d, 1 socket(s) from systemd," % port in line, line
    for _ in range(5):
        assert get(port).startswith(b"HTTP/1.1 200"), "no answer on systemd's socket"
    stop(first)
    assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 1, (
        "the server shut systemd's socket down")

    # No server runs: connections wait in the socket's queue, requests sent.
    waiting = []
    for _ in range(5):
        c = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        c.sendall(REQUEST)
        waiting.append(c)

    # The next server answers every one of them.
    second = activated(binary, sock)
    ready_line(second)
    for c in waiting:
        with c:
            answer = receive_all(c)
            assert answer.startswith(b"HTTP/1.1 200"), "a waiting connection got %r" % answer
    stop(second)
    print("socket_activation_test: 5 connections made while no server ran were answered by "
          "the next one")

    # LISTEN_PID of another process: not for us, the server binds -p.
    other = activated(binary, sock, ["-p", "0", "--address", "127.0.0.1"], listen_pid=1)
    line = ready_line(other)
    m = re.search(r"listening on 127\.0\.0\.1:(\d+), 2 socket\(s\) bound,", line)
    assert m and int(m.group(1)) != port, line
    stop(other)

    # Malformed: exit status 2, as for a bad flag (what it was given is
    # wrong), and a message naming the variable.
    for fds in ("0", "x", "99999"):
        bad = activated(binary, sock, listen_fds=fds)
        out, err = bad.communicate(timeout=TIMEOUT)
        assert bad.returncode == 2 and "LISTEN_FDS" in err, (fds, bad.returncode, out, err)
    sock.close()
    print("socket_activation_test: ok")


if __name__ == "__main__":
    main()
