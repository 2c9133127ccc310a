"""TLS handshakes against the real server binary: where their steps run,
and which sessions resume.

  * a burst of ClientHellos whose offloaded steps would sit in the queue
    past the handshake timeout: the server shares one CPU with a busy loop
    at normal priority, so its one TLS worker (nice 19) gets about 1.5% of
    it and signs some 15 RSA handshakes a second. Most of the burst then
    resets: the worker skips their steps (counted in /metrics); the ring
    runs a step itself once it has waited the queue-wait bound (1 s); and
    a client that connects right after the burst is served. Before, the
    worker signed for every dead connection and the client's handshake
    timed out behind them;
  * a ClientHello carrying a ticket (TLS 1.2) or a PSK (TLS 1.3) the server
    cannot open (issued by another server process: other ticket keys) is
    a full handshake, and with --tls-offload=on its step goes to a worker;
    before, any ticket was taken for a resumption and signed on the ring;
  * TLS 1.3: five connections in a row, each resuming with the session the
    previous one received, all resume and each gets a fresh ticket (a new
    session id), as a client that uses each ticket once (BoringSSL) needs;
  * a session made under one SNI name's certificate does not resume under
    another's (the client then gets, and verifies, that certificate).

Usage: tls_handshake_test.py PATH_TO_SERVER
"""
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tls_test as t  # noqa: E402  (the HTTPS helpers)


def log(msg):
    print("tls_handshake_test: " + msg, flush=True)

BURST = 150  # ClientHellos at once
KEEP = 20    # ... of which these stay connected


def plain_metrics(port):
    """/metrics over the plain port: no handshake to queue behind the burst."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                timeout=t.TIMEOUT) as r:
        body = r.read().decode()
    out = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


SKIPPED = "uring_http_tls_handshake_steps_skipped_total"
RECLAIMED = "uring_http_tls_handshake_steps_reclaimed_total"
OFFLOADS = "uring_http_tls_handshake_offloads_total"
RESUMED = "uring_http_tls_resumptions_total"


def burst(binary, rsa_cert, rsa_key):
    cpu = sorted(os.sched_getaffinity(0))[-1]
    mask = os.sched_getaffinity(0)
    hog = None
    srv = None
    held = []
    try:
        # The server and the busy loop on one CPU: both inherit the mask.
        os.sched_setaffinity(0, {cpu})
        try:
            srv = t.Server(binary, ["-A", "1", "-w", "1", "--tls-offload=on", "--tls-workers=1",
                                    "--handshake-timeout=4s", "--plain-port=0",
                                    "--tls-cert=" + rsa_cert, "--tls-key=" + rsa_key],
                           "burst server")
            hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        finally:
            os.sched_setaffinity(0, mask)
        srv.ca = [rsa_cert]
        m = re.search(r"plain HTTP on \S+:(\d+)", srv.ready)
        assert m, "no plain port in the ready line: %r" % srv.ready
        plain = int(m.group(1))
        m0 = plain_metrics(plain)
        hello = t.client_hello()
        for _ in range(BURST):
            s = srv.tcp()
            s.sendall(hello)
            held.append(s)  # and never a word more
        # Every step is queued (the worker signs about one in 70 ms).
        deadline = t.now() + t.TIMEOUT
        while t.delta(m0, plain_metrics(plain), OFFLOADS) < BURST:
            assert t.now() < deadline, "the burst's steps were not all offloaded"
            time.sleep(0.05)
        # Most of the burst gives up (resets): dead connections whose steps
        # are still queued. The first few wait on (the ring runs their steps
        # itself if no worker has by the queue-wait bound).
        for s in held[KEEP:]:
            t.rst_close(s)
        held = held[:KEEP]
        # A client right after the burst.
        t0 = t.now()
        try:
            status = srv.get("/test/fast")[0]
        except Exception as e:
            raise AssertionError("a client right after a burst of %d ClientHellos was not "
                                 "served (%r after %.1f s)" % (BURST, e, t.now() - t0))
        took = t.now() - t0
        assert status == 200, "after the burst: GET /test/fast answered %d" % status
        # The worker gets its CPU back and reaches the steps the ring took.
        hog.kill()
        hog.wait()
        hog = None
        deadline = t.now() + t.TIMEOUT
        while True:
            m1 = plain_metrics(plain)
            skipped = t.delta(m0, m1, SKIPPED)
            if skipped >= 1:
                break
            assert t.now() < deadline, (
                "no skipped handshake step counted within %.0f s: %s %+d, %s %+d, %s %+d"
                % (t.TIMEOUT, SKIPPED, skipped, RECLAIMED, t.delta(m0, m1, RECLAIMED),
                   OFFLOADS, t.delta(m0, m1, OFFLOADS)))
            time.sleep(0.1)
        reclaimed = t.delta(m0, m1, RECLAIMED)
        for s in held:
            s.close()
        held = []
        srv.stop()
        log("burst of %d ClientHellos (%d then reset), one starved TLS worker: the next "
            "client served in %.2f s; steps offloaded %+d, run on the ring after the queue "
            "wait %+d, skipped by the worker %+d" % (BURST, BURST - KEEP, took,
                                                     t.delta(m0, m1, OFFLOADS), reclaimed,
                                                     skipped))
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
        for s in held:
            s.close()
        if srv is not None:
            srv.kill()


def bogus_tickets(srv, other):
    """Sessions from `other` (its own ticket keys) offered to `srv`."""
    for version, name in ((ssl.TLSVersion.TLSv1_3, "TLS 1.3"),
                          (ssl.TLSVersion.TLSv1_2, "TLS 1.2")):
        ctx = t.client_context(srv.ca, version=version)
        with other.tls(ctx) as s:
            s.sendall(t.req("/test/fast"))
            assert t.Responses(s).next()[0] == 200
            foreign = s.session
        assert foreign is not None and foreign.has_ticket, "%s: no ticket from the other " \
            "server" % name
        m0 = srv.metrics()
        for _ in range(5):
            with srv.tls(ctx, session=foreign) as s:
                assert not s.session_reused, "%s: another server's ticket resumed" % name
                s.sendall(t.req("/test/fast"))
                assert t.Responses(s).next()[0] == 200
        m1 = srv.metrics()
        # The /metrics connection itself is a full handshake too.
        offloads = t.delta(m0, m1, OFFLOADS)
        assert offloads >= 5, (
            "%s: 5 full handshakes behind tickets the server cannot open: %d offloaded "
            "(--tls-offload=on)" % (name, offloads))
        assert t.delta(m0, m1, RESUMED) == 0
    log("tickets the server cannot open: full handshakes, offloaded (TLS 1.3 and 1.2)")


def single_use_tickets(srv):
    ctx = t.client_context(srv.ca, version=ssl.TLSVersion.TLSv1_3)
    with srv.tls(ctx) as s:
        s.sendall(t.req("/test/fast"))
        assert t.Responses(s).next()[0] == 200
        session = s.session
    for i in range(2, 7):
        with srv.tls(ctx, session=session) as s:
            s.sendall(t.req("/test/fast"))
            assert t.Responses(s).next()[0] == 200  # the ticket came before it
            reused = s.session_reused
            fresh = s.session
        assert reused, "connection %d did not resume with the ticket of the one before" % i
        assert fresh.id != session.id, (
            "connection %d resumed but got no fresh ticket: a client that uses each ticket "
            "once makes a full handshake next" % i)
        session = fresh
    log("TLS 1.3: 5 connections in a row, each on the previous one's ticket, all resumed")


def sessions_per_certificate(srv, ec_cert, rsa_cert):
    both = t.client_context([ec_cert, rsa_cert])
    for first, then, cert in (("other.test", "localhost", ec_cert),
                              ("localhost", "other.test", rsa_cert)):
        with srv.tls(both, server_hostname=first) as s:
            s.sendall(t.req("/test/fast", host=first))
            assert t.Responses(s).next()[0] == 200
            session = s.session
        with srv.tls(both, server_hostname=then, session=session) as s:
            reused = s.session_reused
            der = s.getpeercert(binary_form=True)
            s.sendall(t.req("/test/fast", host=then))
            assert t.Responses(s).next()[0] == 200
        assert not reused, "a session of %s resumed under SNI %s" % (first, then)
        assert der == t.der_of(cert), "SNI %s: not its certificate" % then
    log("sessions resume only under the certificate they were made under")


def main():
    binary = sys.argv[1]
    t0 = t.now()
    tmp = tempfile.mkdtemp(prefix="tls_handshake_test.")
    servers = []
    failed = []

    def run(name, fn, *args):
        try:
            fn(*args)
        except Exception as e:  # report, go on with the next check
            failed.append("%s: %s" % (name, e))
            log("FAILED %s:\n%s" % (name, traceback.format_exc()))

    try:
        ec_cert, ec_key = t.make_cert(tmp, "ec", "localhost", "DNS:localhost,IP:127.0.0.1")
        rsa_cert, rsa_key = t.make_cert(tmp, "rsa", "other.test", "DNS:other.test", rsa=True)
        rsa_local, rsa_local_key = t.make_cert(tmp, "rsa-local", "localhost",
                                               "DNS:localhost,IP:127.0.0.1", rsa=True)
        run("burst of ClientHellos", burst, binary, rsa_local, rsa_local_key)
        args = ["-A", "1", "-w", "1", "--tls-offload=on", "--tls-cert=" + ec_cert,
                "--tls-key=" + ec_key, "--tls-cert=" + rsa_cert, "--tls-key=" + rsa_key]
        a = t.Server(binary, args, "server A")
        servers.append(a)
        b = t.Server(binary, args, "server B")
        servers.append(b)
        a.ca = b.ca = [ec_cert]
        run("tickets from another server", bogus_tickets, a, b)
        run("single-use tickets", single_use_tickets, a)
        run("sessions per certificate", sessions_per_certificate, a, ec_cert, rsa_cert)
        for s in servers:
            run("SIGTERM (%s)" % s.name, s.stop)
    finally:
        for s in servers:
            s.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    if failed:
        log("%d check(s) FAILED (%.1f s):" % (len(failed), t.now() - t0))
        for f in failed:
            log("  " + f)
        sys.exit(1)
    log("ok (%.1f s)" % (t.now() - t0))


if __name__ == "__main__":
    main()
