#!/usr/bin/env python3
"""ASYNC handlers against SLOW ones and the bare responder (issue 21).

  perf/compare_async [--rounds 3] [--requests 4000]

Phases, each side by side in interleaved rounds (A B C A B C ...), the
servers pinned to CPU 0 and the load to CPU 1, medians reported:
  sleep   ab -c100 and -c1000 (a new connection per request, as the
          reference design's slow test): ours -A1 -w300 -D30 on
          /test/sleep?ms=30 (a ring timer, ASYNC) and /test/slow (a worker
          sleeps), and bare_responder --close --delay-ms=30 (a ring
          timer, no HTTP at all). req/s, efficiency against c/0.030 s, and
          the server's CPU per request (utime+stime of all its threads from
          /proc/PID/stat over the run); plus the SLOW tasks the workers ran
          during the ASYNC runs (none expected).
  zero    wrk -t1 -c100 keep-alive: /test/sleep?ms=0 (co_await of a zero
          timer: one IORING_OP_TIMEOUT per request) against /test/fast
          (inline), the same server; req/s and CPU per request.
  events  ours -A1 -w1: N clients (default 10,000) each GET
          /test/events?count=5&interval_ms=2000; every event counted, the
          delay of each event after the first against its schedule (p50,
          p99), and the server's resident memory per open stream (VmRSS
          with all streams open, minus before, over N) beyond an idle
          connection's, in fresh servers (cold) and in a server that
          10,000 connections came to first (warm).
  long    (only when asked: --only long) ours -A1 -w1: 1,000 clients of
          1,500 events 4 ms apart (about 45 KB each, past a pipe's 32 KiB):
          the server's peak VmRSS per stream.

Writes perf/results/compare_async-DATE.md and prints it.
"""
import argparse
import asyncio
import datetime
import os
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SERVER = os.path.join(ROOT, "bazel-bin/src/server")
BARE = os.path.join(ROOT, "bazel-bin/perf/bare_responder")
SERVER_CPU, LOAD_CPU = "0", "1"
CLK = os.sysconf("SC_CLK_TCK")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK  # utime, stime


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def wait_port(port, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"port {port} never opened")


class Proc:
    def __init__(self, cmd, port):
        self.port = port
        self.p = subprocess.Popen(["taskset", "-c", SERVER_CPU] + cmd, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        wait_port(port)

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def metric(port, name):
    try:
        out = subprocess.run(["curl", "-s", f"http://127.0.0.1:{port}/metrics"],
                             capture_output=True, text=True, timeout=5).stdout
    except subprocess.TimeoutExpired:
        return None
    m = re.search(rf"^{name} (\d+)", out, re.M)
    return int(m.group(1)) if m else None


def run_ab(proc, path, n, c):
    before = cpu_seconds(proc.p.pid)
    out = subprocess.run(["taskset", "-c", LOAD_CPU, "ab", "-q", "-n", str(n), "-c", str(c),
                          "-s", "30", f"http://127.0.0.1:{proc.port}{path}"],
                         capture_output=True, text=True).stdout
    cpu = cpu_seconds(proc.p.pid) - before
    rps = float(re.search(r"Requests per second:\s+([\d.]+)", out).group(1))
    failed = int(re.search(r"Failed requests:\s+(\d+)", out).group(1))
    non2xx = re.search(r"Non-2xx responses:\s+(\d+)", out)
    return {"rps": rps, "cpu_us": cpu * 1e6 / n, "failed": failed + (int(non2xx.group(1)) if non2xx else 0)}


def run_wrk(proc, path, seconds):
    before = cpu_seconds(proc.p.pid)
    out = subprocess.run(["taskset", "-c", LOAD_CPU, "wrk", "-t1", "-c100", f"-d{seconds}s",
                          f"http://127.0.0.1:{proc.port}{path}"], capture_output=True, text=True).stdout
    cpu = cpu_seconds(proc.p.pid) - before
    total = int(re.search(r"(\d+) requests in", out).group(1))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    return {"rps": rps, "cpu_us": cpu * 1e6 / max(total, 1), "failed": 0}


def med(rows, key):
    return statistics.median(r[key] for r in rows)


def phase_sleep(a, lines):
    port = free_port()
    ours = Proc([SERVER, "-p", str(port), "--address=127.0.0.1", "-A", "1", "-w", "300", "-D", "30"],
                port)
    bare_port = free_port()
    bare = Proc([BARE, str(bare_port), "--close", "--delay-ms=30"], bare_port)
    try:
        for c in (100, 1000):
            n = max(a.requests, c * 4)
            results = {"ours ASYNC /test/sleep?ms=30": [], "ours SLOW /test/slow": [],
                       "bare --delay-ms=30": []}
            slow_tasks_during_async = 0
            for r in range(a.rounds):
                before = metric(ours.port, "uring_http_slow_tasks_dispatched_total")
                results["ours ASYNC /test/sleep?ms=30"].append(run_ab(ours, "/test/sleep?ms=30", n, c))
                after = metric(ours.port, "uring_http_slow_tasks_dispatched_total")
                if before is not None and after is not None:
                    slow_tasks_during_async += after - before
                results["ours SLOW /test/slow"].append(run_ab(ours, "/test/slow", n, c))
                results["bare --delay-ms=30"].append(run_ab(bare, "/", n, c))
                log(f"sleep c={c} round {r + 1}: " + ", ".join(
                    f"{k.split()[1]} {v[-1]['rps']:.0f}/s {v[-1]['cpu_us']:.1f}us" for k, v in results.items()))
            ideal = c / 0.030
            lines.append(f"\n### ab -n {n} -c {c} (new connection per request), ideal {ideal:,.0f} req/s\n")
            lines.append("| server | req/s (median) | efficiency | CPU µs/req (median) | failed |")
            lines.append("|---|---:|---:|---:|---:|")
            bare_cpu = med(results["bare --delay-ms=30"], "cpu_us")
            for k, rows in results.items():
                lines.append(f"| {k} | {med(rows, 'rps'):,.0f} | {med(rows, 'rps') / ideal * 100:.1f}% | "
                             f"{med(rows, 'cpu_us'):.1f} ({med(rows, 'cpu_us') / bare_cpu:.2f}x bare) | "
                             f"{sum(x['failed'] for x in rows)} |")
            lines.append(f"\nSLOW tasks dispatched during the ASYNC runs: {slow_tasks_during_async}")
    finally:
        ours.stop()
        bare.stop()


def phase_zero(a, lines):
    port = free_port()
    ours = Proc([SERVER, "-p", str(port), "--address=127.0.0.1", "-A", "1", "-w", "4"], port)
    try:
        results = {"/test/fast (FAST, inline)": [], "/test/sleep?ms=0 (ASYNC, zero timer)": []}
        for r in range(a.rounds):
            results["/test/fast (FAST, inline)"].append(run_wrk(ours, "/test/fast", a.seconds))
            results["/test/sleep?ms=0 (ASYNC, zero timer)"].append(run_wrk(ours, "/test/sleep?ms=0", a.seconds))
            log(f"zero round {r + 1}: " + ", ".join(f"{v[-1]['rps']:.0f}/s {v[-1]['cpu_us']:.2f}us"
                                                    for v in results.values()))
        lines.append(f"\n### wrk -t1 -c100 -d{a.seconds}s keep-alive, ours -A1\n")
        lines.append("| path | req/s (median) | CPU µs/req (median) |")
        lines.append("|---|---:|---:|")
        fast_cpu = med(results["/test/fast (FAST, inline)"], "cpu_us")
        for k, rows in results.items():
            lines.append(f"| {k} | {med(rows, 'rps'):,.0f} | {med(rows, 'cpu_us'):.2f} "
                         f"({med(rows, 'cpu_us') / fast_cpu:.2f}x FAST) |")
    finally:
        ours.stop()


async def one_stream(port, path, arrivals, errors):
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET {path} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
        await writer.drain()
        buf = b""
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                break
            now = time.monotonic()
            buf += chunk
            for _ in range(buf.count(b"data: event ")):
                arrivals.append(now)
            buf = buf[buf.rfind(b"\n"):] if b"\n" in buf else buf
            if b"\r\n0\r\n\r\n" in chunk:
                break
        writer.close()
    except OSError as e:
        errors.append(str(e))


async def idle_load(port, n, pid):
    """RSS of n keep-alive connections that each made one /test/fast request
    and stay open: the connections' own memory."""
    before = rss_kib(pid)
    conns = []
    for i in range(n):
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            continue
        writer.write(b"GET /test/fast HTTP/1.1\r\nHost: t\r\n\r\n")
        conns.append((reader, writer))
        if i % 500 == 499:
            await asyncio.gather(*(w.drain() for _, w in conns[-500:]))
    await asyncio.gather(*(r.readuntil(b"\r\n\r\n") for r, _ in conns))
    await asyncio.sleep(0.5)
    opened = rss_kib(pid)
    for _, w in conns:
        w.close()
    await asyncio.sleep(1.0)
    return before, opened, len(conns)


async def events_load(port, n, count, interval_ms, pid):
    per_stream = [[] for _ in range(n)]
    errors = []
    tasks = []
    rss_before = rss_kib(pid)
    for i in range(n):
        tasks.append(asyncio.create_task(one_stream(port, f"/test/events?count={count}&interval_ms={interval_ms}",
                                                    per_stream[i], errors)))
        if i % 500 == 499:
            await asyncio.sleep(0.05)
    # All open (the first event of each has come): the memory of n streams.
    for _ in range(200):
        if sum(1 for s in per_stream if s) >= n - len(errors):
            break
        await asyncio.sleep(0.1)
    rss_open = rss_kib(pid)
    await asyncio.gather(*tasks)
    return per_stream, errors, rss_before, rss_open


def phase_events(a, lines):
    """Two measures of a stream's memory beyond its connection's:
    cold: each load in a server of its own, started fresh (in one server the
      streams would reuse the pages the idle connections touched, and a
      stream would look smaller by its connection's); every page the ring's
      pools first touch is counted against what touched it.
    warm: one server that 10,000 connections have come to and gone from
      first (its ring's receive buffers and output chunks resident, as in a
      server in service), then the idle connections, then the streams."""
    count, interval = 5, 2000

    def server():
        port = free_port()
        return port, Proc([SERVER, "-p", str(port), "--address=127.0.0.1", "-A", "1", "-w", "1"], port)

    port, ours = server()
    try:
        cold_idle = asyncio.run(idle_load(port, a.streams, ours.p.pid))
    finally:
        ours.stop()
    port, ours = server()
    try:
        per_stream, errors, before, opened = asyncio.run(
            events_load(port, a.streams, count, interval, ours.p.pid))
    finally:
        ours.stop()
    port, ours = server()
    try:
        asyncio.run(idle_load(port, a.streams, ours.p.pid))  # the warm-up
        warm_idle = asyncio.run(idle_load(port, a.streams, ours.p.pid))
        _, warm_errors, warm_before, warm_opened = asyncio.run(
            events_load(port, a.streams, count, interval, ours.p.pid))
    finally:
        ours.stop()

    delivered = sum(len(s) for s in per_stream)
    delays = []
    for s in per_stream:
        for k in range(1, len(s)):
            delays.append((s[k] - (s[0] + k * interval / 1000)) * 1000)
    delays.sort()
    p = lambda q: delays[min(len(delays) - 1, int(q * len(delays)))] if delays else float("nan")
    lines.append(f"\n### {a.streams:,} clients of /test/events?count={count}&interval_ms={interval}, ours -A1 -w1\n")
    lines.append(f"- events delivered: {delivered:,} of {a.streams * count:,}; client errors: {len(errors)} "
                 f"(warm server: {len(warm_errors)})")
    lines.append(f"- delay of an event after its schedule (from the stream's first): "
                 f"p50 {p(0.5):.1f} ms, p99 {p(0.99):.1f} ms, max {delays[-1] if delays else 0:.1f} ms "
                 f"(one Python client on one CPU reads all of them)")
    for name, (idle_before, idle_open, idle_n), b, o in (
            ("cold", cold_idle, before, opened), ("warm", warm_idle, warm_before, warm_opened)):
        per_stream_bytes = (o - b) * 1024 / max(a.streams, 1)
        per_conn_bytes = (idle_open - idle_before) * 1024 / max(idle_n, 1)
        lines.append(f"- {name}: server VmRSS {b:,} KiB before, {o:,} KiB with the streams open: "
                     f"{per_stream_bytes:,.0f} bytes per open stream, connection included; "
                     f"{idle_n:,} idle keep-alive connections (one /test/fast each): "
                     f"{per_conn_bytes:,.0f} bytes per connection; **a stream's own: "
                     f"{per_stream_bytes - per_conn_bytes:,.0f} bytes beyond its connection's**")


async def long_load(port, n, count, interval_ms, pid):
    """n streams of `count` events each, read as they come: the server's
    peak VmRSS over the run, sampled every 0.2 s."""
    per_stream = [[] for _ in range(n)]
    errors = []
    before = rss_kib(pid)
    tasks = [asyncio.create_task(one_stream(port, f"/test/events?count={count}&interval_ms={interval_ms}",
                                            per_stream[i], errors)) for i in range(n)]
    peak = before
    while not all(t.done() for t in tasks):
        await asyncio.sleep(0.2)
        peak = max(peak, rss_kib(pid))
    return per_stream, errors, before, peak


def phase_long(a, lines):
    """Long streams: what a stream holds once it has written far more than
    its pipe's bound (a pipe that kept its buffer came to hold all of it)."""
    port = free_port()
    ours = Proc([SERVER, "-p", str(port), "--address=127.0.0.1", "-A", "1", "-w", "1"], port)
    try:
        n, count, interval = 1000, 1500, 4
        per_stream, errors, before, peak = asyncio.run(long_load(port, n, count, interval, ours.p.pid))
        delivered = sum(len(s) for s in per_stream)
        lines.append(f"\n### {n:,} clients of /test/events?count={count}&interval_ms={interval} "
                     f"(about 45 KB each), ours -A1 -w1\n")
        lines.append(f"- events delivered: {delivered:,} of {n * count:,}; client errors: {len(errors)}")
        lines.append(f"- server VmRSS: {before:,} KiB before, peak {peak:,} KiB: "
                     f"{(peak - before) * 1024 / n:,.0f} bytes per stream at the peak (connection, and "
                     f"the unsent bytes of one Python client reading them all, included)")
    finally:
        ours.stop()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--requests", type=int, default=4000)
    p.add_argument("--seconds", type=int, default=3)
    p.add_argument("--streams", type=int, default=10000)
    p.add_argument("--only", default="sleep,zero,events")
    p.add_argument("--ours-binary", default=None,
                   help="run this build of ours instead of bazel-bin/src/server (an A/B of two builds)")
    a = p.parse_args()
    if a.ours_binary:
        global SERVER
        SERVER = os.path.abspath(a.ours_binary)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    for binary in (SERVER, BARE):
        if not os.path.exists(binary):
            sys.exit(f"compare_async: build first: ./bazelw build //src:server //perf:bare_responder ({binary})")
    lines = [f"# compare_async {datetime.datetime.now():%Y-%m-%d %H:%M}",
             f"\n`perf/compare_async {' '.join(sys.argv[1:])}` on {os.cpu_count()} CPUs "
             f"(servers on CPU {SERVER_CPU}, load on CPU {LOAD_CPU}; medians of {a.rounds} interleaved rounds)"]
    only = a.only.split(",")
    if "sleep" in only:
        phase_sleep(a, lines)
    if "zero" in only:
        phase_zero(a, lines)
    if "events" in only:
        phase_events(a, lines)
    if "long" in only:
        phase_long(a, lines)
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    path = os.path.join(HERE, "results", f"compare_async-{datetime.datetime.now():%Y%m%d-%H%M%S}.md")
    with open(path, "w") as f:
        f.write(text)
    print(text)
    log(f"written: {os.path.relpath(path, ROOT)}")


if __name__ == "__main__":
    main()
