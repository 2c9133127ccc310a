"""GET /metrics and /healthz of the real server binary, read with the
official Prometheus client parser (Debian's python3-prometheus-client).

Usage: metrics_test.py PATH_TO_SERVER
"""
import os
import re
import signal
import socket
import subprocess
import sys
import time

from prometheus_client.parser import text_string_to_metric_families


def request(port, raw):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(raw)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data
            data += chunk


def get(port, path):
    data = request(port, b"GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n" % path)
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


def samples(text):
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def main():
    server = subprocess.Popen(
        [sys.argv[1], "-p", "0", "-A", "2", "-w", "2", "-D", "20",
         # Limits that never bite, so that their families are in the scrape.
         "--max-in-flight=1000", "--rate-limit=1000"],
        stdout=subprocess.PIPE, text=True)
    try:
        ready = server.stdout.readline()
        port = int(re.search(r"listening on \S+:(\d+)", ready).group(1))

        assert get(port, b"/healthz") == (200, b"ok\n")
        for _ in range(5):
            assert get(port, b"/test/fast")[0] == 200
        for _ in range(3):
            assert get(port, b"/test/slow")[0] == 200
        assert get(port, b"/nope")[0] == 404

        # A worker counts its MSG_RING just after sending it, so the last
        # one may land a moment after its response: scrape until it shows.
        scrapes = 0
        for _ in range(100):
            scrapes += 1
            status, body = get(port, b"/metrics")
            assert status == 200, status
            m = samples(body.decode())
            if m.get(("uring_http_msg_ring_messages_total", ())) == 3:
                break
            time.sleep(0.02)

        def value(name, **labels):
            return m[(name, tuple(sorted(labels.items())))]

        fast = dict(method="GET", route="/test/fast")
        slow = dict(method="GET", route="/test/slow")
        assert value("uring_http_requests_total", code="2xx", **fast) == 5
        assert value("uring_http_requests_total", code="2xx", **slow) == 3
        assert value("uring_http_requests_total", code="4xx", method="",
                     route="(unmatched)") == 1
        assert value("uring_http_request_duration_seconds_count", **slow) == 3
        # Every SLOW request slept 20 ms on a worker: the histogram says so.
        assert value("uring_http_request_duration_seconds_bucket", le="0.01", **slow) == 0
        assert value("uring_http_request_duration_seconds_bucket", le="+Inf", **slow) == 3
        assert value("uring_http_request_duration_seconds_sum", **slow) >= 0.06
        assert value("uring_http_slow_tasks_completed_total") == 3
        assert value("uring_http_msg_ring_messages_total") == 3
        assert value("uring_http_msg_ring_received_total") == 3
        # /healthz, 5 fast, 3 slow, /nope, and every scrape up to this one
        # (a scrape counts its own connection).
        assert value("uring_http_connections_accepted_total") == 10 + scrapes, scrapes
        assert value("uring_http_connections_refused_total") == 0
        assert value("uring_http_io_uring_feature", feature="multishot-recv") == 1
        assert value("uring_http_draining") == 0
        assert value("uring_http_requests_in_flight", method="", route="(server)") == 0
        assert value("uring_http_rate_limit_evictions_total") == 0

        # Draining: /healthz answers 503 on a connection opened before SIGTERM
        # while a SLOW request keeps the server busy.
        busy = socket.create_connection(("127.0.0.1", port), timeout=10)
        busy.sendall(b"GET /test/slow?x HTTP/1.1\r\nHost: t\r\n\r\n")
        probe = socket.create_connection(("127.0.0.1", port), timeout=10)
        # Its first bytes before the signal: a connection that has sent
        # nothing is not accepted yet (TCP_DEFER_ACCEPT), not the server's.
        probe.sendall(b"GET /healthz HTTP/1.1\r\n")
        time.sleep(0.005)
        server.send_signal(signal.SIGTERM)
        time.sleep(0.005)
        probe.sendall(b"Host: t\r\n\r\n")
        answer = probe.recv(4096)
        # Either the probe was answered 503, or (being idle when the signal
        # came) it was closed without an answer: never "200 ok".
        assert answer == b"" or answer.startswith(b"HTTP/1.1 503"), answer
        reply = busy.recv(4096)
        assert reply.startswith(b"HTTP/1.1 200 OK"), reply
        assert b"Connection: close" in reply, reply
        busy.close()
        probe.close()
        assert server.wait(timeout=20) == 0
        print("metrics_test: ok")
    finally:
        if server.poll() is None:
            server.kill()


if __name__ == "__main__":
    main()
