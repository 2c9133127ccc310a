"""examples/chat end to end: rooms over WebSocket (Topics), the clock
thread's broadcast, the handshake's checks, members that vanish mid-room,
and a drain that closes every socket with 1001.

Usage: chat_test.py PATH_TO_CHAT
"""
import sys
import threading
import time

from example_server import ExampleServer
from ws_client import Client, close_payload, frame


def join(server, room, name, protocol=None):
    extra = "Sec-WebSocket-Protocol: %s\r\n" % protocol if protocol else ""
    c = Client(server.port, "/chat?room=%s&name=%s" % (room, name), extra=extra)
    c.sock.sendall(c.request)
    status, headers = c.read_head()
    return c, status, headers


def text(c):
    """The next text message (pings skipped)."""
    while True:
        fin, op, payload = c.next_frame()
        if op == 0x1:
            return payload.decode()
        assert op in (0x9, 0xA), (op, payload)


def main():
    with ExampleServer(sys.argv[1], "--tick-ms=100", "--ws-ping-interval=0") as server:
        # The handshake: names checked by the route's upgrade (400), the
        # subprotocol chosen only when offered.
        _, status, _ = join(server, "bad%20room", "ann")
        assert status == 400, status
        ann, status, headers = join(server, "r1", "ann", protocol="x, chat")
        assert status == 101 and headers.get("sec-websocket-protocol") == "chat", headers
        assert text(ann) == "* ann joined"
        bob, status, headers = join(server, "r1", "bob")
        assert status == 101 and "sec-websocket-protocol" not in headers, headers
        assert text(bob) == "* bob joined"
        assert text(ann) == "* bob joined"
        # Another room hears nothing of r1.
        eve, _, _ = join(server, "r2", "eve")
        assert text(eve) == "* eve joined"
        ann.send(frame(1, b"hi all"))
        assert text(ann) == "ann: hi all"
        assert text(bob) == "ann: hi all"
        bob.send(frame(1, b"/rooms"))
        assert text(bob) == "r1: 2"
        # Work on a worker thread, answered through the sender to bob alone;
        # the room goes on meanwhile.
        bob.send(frame(1, b"/shout quiet please"))
        ann.send(frame(1, b"meanwhile"))
        assert sorted([text(bob), text(bob)]) == ["QUIET PLEASE", "ann: meanwhile"]
        assert text(ann) == "ann: meanwhile"
        # Many at once from a client that leaves before they are done.
        gone, _, _ = join(server, "r3", "gone")
        assert text(gone) == "* gone joined"
        for _ in range(50):
            gone.send(frame(1, b"/shout x"))
        gone.sock.close()
        eve.send(frame(1, b"/rooms"))
        assert text(eve) == "r2: 1", "nothing from r1 reached r2"
        # A binary message: close 1003, and the room hears bob left.
        bob.send(frame(2, b"\x00"))
        bob.expect_close(1003)
        bob.send(frame(8, close_payload(1003)))
        bob.expect_eof()
        assert text(ann) == "* bob left"
        # Many members, many messages: each member gets every line, in order.
        members = [join(server, "big", "m%d" % i)[0] for i in range(50)]
        for i, m in enumerate(members):
            # Each sees its own join and those after it.
            for j in range(i, len(members)):
                assert text(m) == "* m%d joined" % j
        for k in range(20):
            members[k % 50].send(frame(1, b"line %d" % k))
        for m in members:
            for k in range(20):
                assert text(m) == "m%d: line %d" % (k % 50, k)
        # Members that vanish (no close) while others publish: the rest go on.
        for m in members[25:]:
            m.sock.close()
        for m in members[:25]:
            m.send(frame(1, b"still here"))
        seen = 0
        for m in members[:25]:
            got = []
            while len(got) < 25:
                line = text(m)
                if line.endswith(" left"):
                    continue
                got.append(line)
            assert all(g.endswith(": still here") for g in got), got
            seen += 1
        assert seen == 25
        # The clock: every subscriber gets the time about every 100 ms.
        clocks = []
        for _ in range(3):
            c = Client(server.port, "/clock").handshake()
            clocks.append(c)
        start = time.monotonic()
        for c in clocks:
            for _ in range(5):
                t = text(c)
                assert len(t) == 20 and t.endswith("Z"), t
        assert time.monotonic() - start < 20
        # A drain: every open socket gets 1001.
        stopper = threading.Thread(target=server.stop)
        stopper.start()
        for c in [ann, eve] + members[:25] + clocks:
            c.expect_close(1001)
            c.send(frame(8, close_payload(1001)))
        stopper.join()
    print("chat_test: ok")


if __name__ == "__main__":
    main()
