"""Type=notify, --pid-file and --daemonize with the real server binary.

Usage: systemd_test.py PATH_TO_SERVER
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time


def wait_for(predicate, seconds=10):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def main():
    binary = sys.argv[1]
    tmp = tempfile.mkdtemp()
    notify_path = os.path.join(tmp, "notify.sock")
    pid_file = os.path.join(tmp, "server.pid")
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    notify.settimeout(10)

    # Foreground, as systemd runs a Type=notify service.
    env = dict(os.environ, NOTIFY_SOCKET=notify_path)
    server = subprocess.Popen([binary, "-p", "0", "-A", "1", "-w", "1",
                               "--pid-file", pid_file], env=env, stdout=subprocess.DEVNULL)
    try:
        ready = notify.recv(256).decode()
        assert ready.startswith("READY=1"), ready
        assert "MAINPID=%d" % server.pid in ready, ready
        assert int(open(pid_file).read()) == server.pid
        server.send_signal(signal.SIGTERM)
        assert notify.recv(256) == b"STOPPING=1"
        assert server.wait(timeout=20) == 0
        assert not os.path.exists(pid_file), "pid file left behind"
    finally:
        if server.poll() is None:
            server.kill()

    # Daemonized: the command returns at once, the daemon keeps serving.
    launcher = subprocess.run([binary, "-p", "0", "-A", "1", "-w", "1", "-d",
                               "--pid-file", pid_file], timeout=20)
    assert launcher.returncode == 0
    assert wait_for(lambda: os.path.exists(pid_file) and open(pid_file).read().strip())
    pid = int(open(pid_file).read())
    assert alive(pid)
    os.kill(pid, signal.SIGTERM)
    assert wait_for(lambda: not alive(pid)), "daemon did not stop"
    assert not os.path.exists(pid_file)
    print("systemd_test: ok")


if __name__ == "__main__":
    main()
