"""SIGHUP's certificate reload runs on a thread of its own, not on ring 0's.

Ring 0 reads the signals (a signalfd on its ring); the reload, which reads
files and builds OpenSSL contexts, runs on the thread named uring-reload.
Checked against the real server binary with one ring (-A 1):

  * the uring-reload thread exists;
  * with the certificate file replaced by a FIFO that nobody writes yet,
    SIGHUP starts a reload that blocks reading it; meanwhile the server
    answers new TLS connections (their handshakes and requests run on the
    ring), and the thread blocked in the pipe is uring-reload (when
    /proc/PID/task/TID/wchan is readable);
  * once the certificate is written into the FIFO the reload completes: a
    new connection gets the new certificate; SIGTERM still exits 0.

Usage: tls_reload_test.py PATH_TO_SERVER
"""
import errno
import os
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tls_test as t  # noqa: E402  (the HTTPS helpers)


def log(msg):
    print("tls_reload_test: " + msg, flush=True)


def tasks(pid):
    """{tid: (name, wchan)} of the process's threads (wchan "" if unreadable)."""
    out = {}
    base = "/proc/%d/task" % pid
    for tid in os.listdir(base):
        try:
            with open("%s/%s/comm" % (base, tid)) as f:
                name = f.read().strip()
        except OSError:
            continue  # gone
        try:
            with open("%s/%s/wchan" % (base, tid)) as f:
                wchan = f.read().strip()
        except OSError:
            wchan = ""
        out[tid] = (name, "" if wchan == "0" else wchan)
    return out


def open_writer(fifo, limit):
    """The FIFO's write end, once a reader has opened it (the reload):
    O_NONBLOCK fails with ENXIO until then. None after `limit` seconds."""
    deadline = t.now() + limit
    while t.now() < deadline:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno != errno.ENXIO:
                raise
        time.sleep(0.02)
    return None


def main():
    binary = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="tls_reload_test.")
    srv = None
    writer = None
    new_pem = b""
    try:
        cert, key = t.make_cert(tmp, "old", "localhost", "DNS:localhost,IP:127.0.0.1")
        new_cert, new_key = t.make_cert(tmp, "new", "localhost", "DNS:localhost,IP:127.0.0.1")
        with open(new_cert, "rb") as f:
            new_pem = f.read()
        live_cert = os.path.join(tmp, "live.pem")
        live_key = os.path.join(tmp, "live.key")
        shutil.copyfile(cert, live_cert)
        shutil.copyfile(key, live_key)
        srv = t.Server(binary, ["-A", "1", "-w", "1", "--tls-cert=" + live_cert,
                                "--tls-key=" + live_key], "server")
        srv.ca = [cert, new_cert]
        names = sorted(name for name, _ in tasks(srv.proc.pid).values())
        assert "uring-reload" in names, "no uring-reload thread; threads: %s" % names
        assert srv.get("/test/fast")[0] == 200

        # The new key, and the certificate as a FIFO: the reload blocks on it.
        shutil.copyfile(new_key, live_key)
        os.unlink(live_cert)
        os.mkfifo(live_cert)
        srv.proc.send_signal(signal.SIGHUP)
        writer = open_writer(live_cert, t.TIMEOUT)
        assert writer is not None, "no reload opened the certificate within %.0f s" % t.TIMEOUT
        # It reads now, and waits for bytes that do not come yet.
        t0 = t.now()
        try:
            status = srv.get("/test/fast")[0]
        except Exception as e:  # the ring is stuck in the reload: a timeout
            raise AssertionError("while a reload waited on its certificate file, a new TLS "
                                 "connection was not served (%r after %.1f s): the reload "
                                 "runs on the ring" % (e, t.now() - t0))
        assert status == 200, "during the reload: GET /test/fast answered %d" % status
        took = t.now() - t0
        blocked = {tid: (name, wchan) for tid, (name, wchan) in tasks(srv.proc.pid).items()
                   if "pipe" in wchan}
        if any(wchan for _, wchan in tasks(srv.proc.pid).values()):
            names = sorted(name for name, _ in blocked.values())
            assert names == ["uring-reload"], (
                "threads waiting in a pipe during the reload: %s (expected uring-reload only)"
                % blocked)
            where = "blocked in %s on uring-reload" % list(blocked.values())[0][1]
        else:
            where = "wchan unreadable here"

        # The certificate arrives: the reload completes.
        os.write(writer, new_pem)
        os.close(writer)
        writer = None
        srv.wait_stderr("TLS reloaded", 1, "the reload once its certificate was written")
        os.unlink(live_cert)
        shutil.copyfile(new_cert, live_cert)
        with srv.tls(t.client_context([new_cert])) as s:
            assert s.getpeercert(binary_form=True) == t.der_of(new_cert), (
                "after the reload a new connection did not get the new certificate")
            s.sendall(t.req("/test/fast"))
            assert t.Responses(s).next()[0] == 200
        srv.stop()
        log("reload on uring-reload: served in %.2f s while it waited on a FIFO (%s); "
              "new certificate after it; exit 0" % (took, where))
    finally:
        if writer is not None:
            try:  # let a reload stuck on the FIFO finish so that the server can go
                os.write(writer, new_pem)
            except OSError:
                pass
            os.close(writer)
        if srv is not None:
            srv.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
