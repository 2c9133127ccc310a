"""Starts an example binary on a free loopback port and stops it again.

The examples take the flags of //src:server: `-p 0` picks a free port, which
the ready line ("uring-http ready: listening on 127.0.0.1:PORT, ...") names.
"""
import http.client
import re
import signal
import subprocess
import threading

READY = re.compile(r"uring-http ready: listening on [0-9.]+:(\d+),")


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
