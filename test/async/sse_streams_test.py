"""10,000 server-sent event streams open at once on one ring with one worker.

The shipped server (-A 1 -w 1) serves GET /test/events?count=3&interval_ms=M
as an ASYNC handler: each stream waits on ring timers between its events,
and no thread is held while it waits. 10,000 clients (one asyncio loop, this
process) open a stream each; once the server reports 10,000 ASYNC exchanges
active at the same moment (uring_http_async_active, read from /metrics),
every stream must go on to receive its three events, in order, and its
last chunk (ended, not cut), and the workers must have run nothing
(uring_http_slow_tasks_dispatched_total and async_worker_calls stay 0).
Nothing here is timed: the interval only keeps the streams open while they
are counted.

Usage: sse_streams_test.py PATH_TO_SERVER
"""
import asyncio
import re
import resource
import socket
import subprocess
import sys

STREAMS = 10_000
EVENTS = 3
INTERVAL_MS = 10000  # long enough for all 10,000 to be open at once, even under TSan


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metric(text, name):
    m = re.search(r"^%s (\d+)" % re.escape(name), text, re.M)
    if m is None:
        raise AssertionError("no %s in /metrics" % name)
    return int(m.group(1))


async def metrics(port):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    data = await reader.read()
    writer.close()
    return data.decode(errors="replace")


async def one_stream(port, opened, results, i):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /test/events?count=%d&interval_ms=%d HTTP/1.1\r\nHost: t\r\n\r\n"
                 % (EVENTS, INTERVAL_MS))
    opened.append(i)
    data = b""
    while not data.endswith(b"\r\n0\r\n\r\n"):
        chunk = await reader.read(65536)
        if not chunk:
            break
        data += chunk
    writer.close()
    results[i] = data


def check_stream(data):
    head, _, body = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        return "status line %r" % head[:40]
    if b"text/event-stream" not in head.lower():
        return "no text/event-stream"
    if not body.endswith(b"\r\n0\r\n\r\n"):
        return "the stream was cut (no last chunk)"
    # Chunks: "<hex>\r\n<data>\r\n" ... "0\r\n\r\n".
    text, at = b"", 0
    while True:
        eol = body.index(b"\r\n", at)
        n = int(body[at:eol], 16)
        if n == 0:
            break
        text += body[eol + 2:eol + 2 + n]
        at = eol + 2 + n + 2
    ids = re.findall(rb"^id: (\d+)$", text, re.M)
    datas = re.findall(rb"^data: (.*)$", text, re.M)
    want = [b"%d" % k for k in range(1, EVENTS + 1)]
    if ids != want or datas != [b"event " + k for k in want]:
        return "events %r %r" % (ids, datas)
    return None


async def run(port):
    opened, results = [], [None] * STREAMS
    tasks = []
    for i in range(STREAMS):
        tasks.append(asyncio.create_task(one_stream(port, opened, results, i)))
        if i % 500 == 499:
            await asyncio.sleep(0)  # let the connects go out
    # All 10,000 at once on the ring (each waits on its timer).
    peak = 0
    for _ in range(600):
        await asyncio.sleep(0.05)
        if len(opened) < STREAMS:
            continue
        peak = max(peak, metric(await metrics(port), "uring_http_async_active"))
        if peak >= STREAMS:
            break
    await asyncio.gather(*tasks)
    text = await metrics(port)
    return peak, results, text


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = STREAMS + 1000
    if hard != resource.RLIM_INFINITY and hard < want:
        print("sse_streams_test: RLIMIT_NOFILE's hard limit %d is under %d: skipped" % (hard, want))
        return 0
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    port = free_port()
    server = subprocess.Popen([sys.argv[1], "-p", str(port), "--address=127.0.0.1", "-A", "1", "-w", "1"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready = server.stdout.readline()
        assert ready, "the server printed no ready line"
        peak, results, text = asyncio.run(run(port))
        bad = [(i, check_stream(d or b"")) for i, d in enumerate(results)]
        bad = [(i, why) for i, why in bad if why is not None]
        assert not bad, "%d of %d streams wrong, first: %r" % (len(bad), STREAMS, bad[:3])
        assert peak >= STREAMS, "at most %d ASYNC exchanges were active at once" % peak
        assert metric(text, "uring_http_slow_tasks_dispatched_total") == 0
        assert metric(text, "uring_http_async_worker_calls_total") == 0
        assert metric(text, "uring_http_async_started_total") >= STREAMS
        print("sse_streams_test: %d streams open at once, %d events each, all delivered; "
              "no worker ran" % (STREAMS, EVENTS))
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
