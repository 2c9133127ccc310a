"""//examples:events: server-sent events from an ASYNC handler and from one
producer thread fanned out to every /ticks stream, and their page.

Checks a counted stream (framing, ids, JSON data), that a client leaving an
endless stream frees its exchange, the 400s, the HTML page, /ticks streams
that all get the producer's events in order, and that SIGTERM ends open
streams cleanly and at once. The server runs with no worker at all: no
stream needs one.

Usage: events_test.py PATH_TO_EVENTS
"""
import datetime
import json
import signal
import sys
import time

from example_server import ExampleServer, read_chunk, read_head, read_response


def parse_events(text):
    """The events of a text/event-stream body: a list of {field: value}."""
    assert text.endswith("\n\n"), repr(text)
    events = []
    for block in text[:-2].split("\n\n"):
        fields = {}
        for line in block.split("\n"):
            name, sep, value = line.partition(": ")
            assert sep and name not in fields, repr(block)
            fields[name] = value
        events.append(fields)
    return events


def check_event(fields, i):
    assert fields["id"] == str(i), fields
    data = json.loads(fields["data"])
    assert data["tick"] == i, data
    when = datetime.datetime.strptime(data["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    assert abs((now - when).total_seconds()) < 60, (data["time"], now)


def get(stream, sock, target):
    sock.sendall(b"GET %s HTTP/1.1\r\nHost: test\r\n\r\n" % target.encode())
    return read_response(stream)


def check_counted(server):
    with server.connect() as sock, sock.makefile("rb") as stream:
        started = time.monotonic()
        response = get(stream, sock, "/events?count=3&interval_ms=50")
        elapsed = time.monotonic() - started
        assert response.status == 200, vars(response)
        assert response.header("content-type") == "text/event-stream", response.headers
        assert response.header("cache-control") == "no-cache", response.headers
        assert response.framing == "chunked", response.framing
        events = parse_events(response.body.decode())
        assert len(events) == 3, events
        for i, fields in enumerate(events):
            check_event(fields, i)
        assert len(response.chunks) == 3, response.chunks  # one write, one chunk each
        assert elapsed >= 0.09, elapsed  # two intervals between three events
        # The stream ended cleanly: the connection serves the next request.
        response = get(stream, sock, "/events?count=1&interval_ms=0")
        assert response.status == 200 and len(parse_events(response.body.decode())) == 1


def check_client_leaves(server):
    # An endless stream: read two events, then hang up.
    with server.connect() as sock, sock.makefile("rb") as stream:
        sock.sendall(b"GET /events?interval_ms=20 HTTP/1.1\r\nHost: test\r\n\r\n")
        response = read_head(stream)
        assert response.status == 200 and response.header("transfer-encoding") == "chunked"
        for i in range(2):
            check_event(parse_events(read_chunk(stream, response).decode())[0], i)
    # The server goes on serving (nothing of the stream is held).
    with server.connect(timeout=5) as sock, sock.makefile("rb") as stream:
        response = get(stream, sock, "/events?count=1&interval_ms=1")
        assert response.status == 200, vars(response)
        events = parse_events(response.body.decode())
        assert len(events) == 1, events
        check_event(events[0], 0)


def check_bad_parameters(server):
    for query in ["count=abc", "count=0", "count=-1", "count=", "count", "count=1.5",
                  "count=99999999999999999999", "interval_ms=x", "interval_ms=-5",
                  "interval_ms=3600001", "interval_ms=", "count=2&interval_ms=1e3"]:
        status, headers, body = server.request("GET", "/events?" + query)
        assert status == 400, (query, status, body)
        assert headers["content-type"] == "text/plain" and body.strip(), (query, headers, body)


def check_page(server):
    status, headers, body = server.request("GET", "/")
    assert status == 200 and headers["content-type"].startswith("text/html"), (status, headers)
    assert "EventSource('/events')" in body and "</html>" in body, body


def check_ticks(server):
    # Two subscribers of the one producer: each sees consecutive ticks, the
    # same tick with the same time in both.
    seen = []
    socks = [server.connect() for _ in range(2)]
    try:
        streams = [s.makefile("rb") for s in socks]
        heads = []
        for sock, stream in zip(socks, streams):
            sock.sendall(b"GET /ticks HTTP/1.1\r\nHost: test\r\n\r\n")
            head = read_head(stream)
            assert head.status == 200 and head.header("content-type") == "text/event-stream"
            heads.append(head)
        for stream, head in zip(streams, heads):
            events = []
            while len(events) < 4:
                events += parse_events(read_chunk(stream, head).decode())
            ids = [int(e["id"]) for e in events]
            assert ids == list(range(ids[0], ids[0] + len(ids))), ids
            seen.append({int(e["id"]): json.loads(e["data"])["time"] for e in events})
        common = set(seen[0]) & set(seen[1])
        assert common, seen
        for tick in common:
            assert seen[0][tick] == seen[1][tick], (tick, seen)
    finally:
        for s in socks:
            s.close()


def check_sigterm_ends_stream(server):
    # An open stream with a long interval: SIGTERM ends it at once (the last
    # chunk, then the connection closes) and the server exits 0.
    with server.connect() as sock, sock.makefile("rb") as stream:
        sock.sendall(b"GET /events?interval_ms=10000 HTTP/1.1\r\nHost: test\r\n\r\n")
        response = read_head(stream)
        check_event(parse_events(read_chunk(stream, response).decode())[0], 0)
        with server.connect() as ticks_sock, ticks_sock.makefile("rb") as ticks:
            ticks_sock.sendall(b"GET /ticks HTTP/1.1\r\nHost: test\r\n\r\n")
            ticks_head = read_head(ticks)
            assert read_chunk(ticks, ticks_head), "no tick"
            started = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            assert read_chunk(stream, response) is None, "the stream did not end"
            assert stream.read() == b"", "the connection stayed open"
            while read_chunk(ticks, ticks_head) is not None:
                pass  # ticks already on their way, then the end
            assert time.monotonic() - started < 5, "the streams waited"
    assert server.process.wait(timeout=10) == 0, server.process.returncode


def main():
    with ExampleServer(sys.argv[1], "-w", "0", "--tick-ms=50") as server:
        check_counted(server)
        check_client_leaves(server)
        check_bad_parameters(server)
        check_page(server)
        check_ticks(server)
        check_sigterm_ends_stream(server)
    print("events_test: ok")


if __name__ == "__main__":
    main()
