#!/usr/bin/env python3
"""Writes the hand-made inputs of test/http2:connection_fuzz: its corpus
(connection_fuzz_corpus/, replayed in every bazel test), among them the
reproducers of the bugs it found. Each says what it is for; traces
show what they do:

    CONNECTION_FUZZ_TRACE=1 bazel-bin/test/http2/connection_fuzz FILE

Usage: test/http2/connection_fuzz_seeds.py [CORPUS_DIR]
(default: the directory beside this file). Keep in step with the
input format that connection_fuzz.cc describes at its top: a mode byte,
the upgrade's request, the scripted client's steps, flips, the handoff,
then one event a byte, and from the input's end what the handlers do.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "connection_fuzz_corpus")

# kPaths and kMethods of connection_fuzz.cc, in order.
PATHS = ["/hello", "/echo", "/big", "/throw", "/slow", "/x/../hello", "/stream", "*",
         "/files/empty", "/files/1k.txt", "/files/big.bin", "/files/dir/", "/files/dir",
         "/files/missing", "/files/escape", "/files/.hidden", "/m/bare/", "/m/1k.txt",
         "/files/inside", "/files/fifo", "/sink", "/upload", "/produce", "/files/",
         "/m/dir/", "/files/big.bin?v=1", "/m/big.bin", "/upload-echo", "/files/%2e%2e/x",
         "/files/dir/index.html", "/files/1k.txt/", "/m/escape/", "/files/a%2Fb",
         "/files/%5c.txt", "/files/dir/../1k.txt", "/m/", "/m/app.js", "/m/old.txt",
         "/files/app.js"]
P = {p: i for i, p in enumerate(PATHS)}
M = {"GET": 0, "POST": 1, "HEAD": 2, "DELETE": 3, "OPTIONS": 4, "PUT": 5, "CONNECT": 6}


# ---- the scripted client's steps

def req(method, path, body=0, fill=0, gzip=False, rng=None, cond=None, deny=False,
        expect=False, clen=False, lie=False, enc=0):
    """A request: body and fill (x-fill) in units of 257 and 64 bytes; rng and cond
    index kRanges and kConditions; clen sends content-length (lie: 70000); gzip sends
    Accept-Encoding, enc picks which (kEncodings: gzip, br, "gzip, br, zstd",
    "zstd, gzip;q=0")."""
    op = (8 if gzip else 0) | (16 if rng is not None else 0) | (32 if cond is not None else 0)
    op |= 128 if clen else 0
    how = M[method] | (64 if deny else 0) | (128 if expect else 0) | (32 if lie else 0) | (enc << 3)
    b = [op, how, P[path], fill]
    if rng is not None:
        b.append(rng)
    if cond is not None:
        b.append(cond)
    b.append(body)
    return b


def rst(stream, code=8):
    return [5, (stream - 1) // 2, code]


def wu(inc, stream=None):
    """A WINDOW_UPDATE of (inc + 1) * 4096 bytes, for the connection or a stream."""
    if stream is None:
        return [6 | 16, inc]
    return [6 | 16 | 32, (stream - 1) // 2, inc]


def settings_iw(v):
    """SETTINGS_INITIAL_WINDOW_SIZE = v * 256."""
    return [7, v]


def seed(steps, events, script=(), mode=1, first=0, upgrade=None, flips=()):
    b = [mode]
    if upgrade:
        b += upgrade
    b.append(len(steps))
    for s in steps:
        b += s
    b.append(len(flips))
    for f in flips:
        b += f
    b.append(first)
    b += events
    b += list(reversed(list(script)))  # read from the end, first byte last
    return bytes(b)


def write(name, data):
    with open(os.path.join(CORPUS, name), "wb") as f:
        f.write(data)


# ---- events (Driver::Event)

RECV = 0xF0  # a receive of 1681 bytes, or (all in) a whole send
SEND = 0xF2  # (all in) a whole send


def recv(n):
    """The op of a receive of n = 1 + 7k bytes (k <= 2, or 16 and more)."""
    return (n - 1) // 7


FILE = 8  # the file operation completes
TASK = 11
NOTIFY = 12 | 16  # a worker's progress message
DONE = 12  # a task's completion
STEAL = 13 | 16  # another connection takes a file buffer
GIVE = 13 | 32  # ... and gives them all back
TICK = 14
DEADLINE = 5
DRAIN = 6
EOF = 7
ABORT = 0xCF
REFUSE = 0x8F  # the workers' queue fills (or empties)


def fail(i):
    """The file operation fails with kFileErrors[i] (0 ENOENT, 1 EACCES, 2 EIO, ...)."""
    return 9 | (i << 4)


def short(k):
    """The read gives k/16 of what it asked."""
    return 10 | (k << 4)


def task(i=0):
    return TASK | (i << 4)


def read(i, amount):
    """Task i's worker reads at most amount * 16 + 1 bytes of its body."""
    return [task(i), 0, amount]


def piece(i, k=0, promise=False):
    """Task i's worker writes 1 + 4k bytes of its answer (promise: 16 in all)."""
    return [task(i), 1 | (8 if promise else 0) | (k << 4)]


def ret(i, throw=False):
    """Task i's worker returns (its handler throws)."""
    return [task(i), 2 | (16 if throw else 0)]


# ---- the corpus

write("files_paths", seed(
    [req("GET","/files/1k.txt"), req("GET","/files/dir/"), req("GET","/files/dir"), req("HEAD","/files/empty"),
     req("GET","/files/missing"), req("GET","/m/bare/"), req("GET","/files/escape"), req("GET","/files/.hidden"),
     req("GET","/files/fifo"), req("GET","/files/inside"), req("GET","/m/")],
    [RECV] + [FILE, SEND]*24))
write("files_paths_bad", seed(
    [req("GET","/files/a%2Fb"), req("GET","/files/%5c.txt"), req("GET","/files/dir/../1k.txt"),
     req("GET","/m/escape/"), req("GET","/files/1k.txt/"), req("GET","/files/"), req("GET","/m/dir/", deny=True),
     req("GET","/m/dir/"), req("POST","/files/1k.txt"), req("GET","/files/dir/index.html")],
    [RECV] + [FILE, SEND]*20))
write("files_conditional", seed(
    [req("GET","/files/1k.txt"), req("GET","/files/1k.txt", rng=0), req("GET","/files/1k.txt", cond=0),
     req("GET","/files/1k.txt", cond=2), req("GET","/files/1k.txt", rng=3), req("HEAD","/m/1k.txt", deny=True),
     req("GET","/m/1k.txt", rng=4, cond=4), req("GET","/files/big.bin", rng=7), req("GET","/m/1k.txt", cond=1)],
    [RECV] + [FILE, SEND]*20))
# Large files over a wide window: reads into the few buffers, short reads, buffers taken elsewhere
# (the retry tick), a read that fails, one that finds the end early.
write("files_big_reads", seed(
    [settings_iw(255), wu(255), req("GET","/files/big.bin"), req("GET","/m/big.bin")],
    [RECV, FILE, STEAL, STEAL, STEAL, FILE, TICK, TICK, GIVE, TICK, FILE, SEND, short(8), SEND,
     FILE, STEAL, STEAL, STEAL, FILE, SEND, TICK, TICK, GIVE, TICK, FILE, SEND, FILE, FILE, FILE,
     SEND] + [FILE, SEND]*12 + [short(0), FILE, SEND]))
write("files_read_fails", seed(
    [settings_iw(255), wu(255), req("GET","/files/big.bin"), req("GET","/files/1k.txt")],
    [RECV, FILE, FILE, FILE, SEND, FILE, fail(2), FILE, FILE, FILE, fail(10), SEND, SEND]))
write("files_errors", seed(
    [req("GET","/files/1k.txt"), req("GET","/files/big.bin"), req("GET","/files/dir/"), req("GET","/m/bare/"),
     req("GET","/files/inside"), req("GET","/files/escape"), req("GET","/files/dir")],
    [RECV, fail(0), fail(1), FILE, fail(2), FILE, FILE, fail(4), fail(5), FILE, fail(6), FILE, fail(10), FILE,
     fail(3), FILE, SEND, FILE, fail(1), fail(5), SEND, FILE, FILE, SEND]))
# The cache: a hit from memory, revalidation after time passes, two entries held at once.
# Precompressed siblings on /m/: every encoding asked, a sibling that is a directory, a stale
# one, HEAD and a range of a sibling, the probes taking turns with other streams' operations.
write("files_siblings", seed(
    [req("GET","/m/app.js", gzip=True), req("GET","/m/app.js", gzip=True, enc=1),
     req("GET","/m/app.js", gzip=True, enc=2), req("GET","/m/app.js", gzip=True, enc=3),
     req("GET","/m/1k.txt", gzip=True, enc=1), req("GET","/m/big.bin", gzip=True),
     req("GET","/m/old.txt", gzip=True), req("HEAD","/m/app.js", gzip=True, enc=1),
     req("GET","/m/app.js", gzip=True, rng=1)],
    [RECV] + [FILE, SEND]*40))
# The cache's gzip of a file it keeps in memory (compression on: mode bit 8), loaded first.
write("files_gzip", seed(
    [req("GET","/files/1k.txt", gzip=True), req("GET","/files/app.js", gzip=True),
     req("GET","/files/app.js", gzip=True, rng=1), req("GET","/files/1k.txt", gzip=True)],
    [RECV] + [FILE, SEND]*20, mode=1|8))
write("files_cache", seed(
    [req("GET","/files/1k.txt"), req("GET","/files/inside"), req("GET","/files/1k.txt"), req("GET","/files/dir/"),
     req("GET","/files/1k.txt"), req("GET","/files/big.bin")],
    [recv(113)] + [FILE]*6 + [SEND, recv(15), SEND, TICK|0x40, recv(15), recv(15)] + [FILE, SEND]*4 +
    [TICK|0x40, RECV] + [FILE, SEND]*10))
# Two large files at once, over the client's first window: the first fills its queue and waits
# for the window, the second takes its turn; buffers taken meanwhile.
write("files_two_big", seed(
    [req("GET","/files/big.bin"), req("GET","/m/big.bin"), req("GET","/files/1k.txt")],
    [RECV, SEND] + [FILE]*19 + [STEAL, STEAL, STEAL, FILE, TICK, FILE, GIVE, TICK] + [FILE]*4 + [SEND]*4 +
    [FILE]*6 + [SEND]))
# Two answers hold both cache entries (their windows shut): a third file is served uncached.
write("files_cache_full", seed(
    [req("GET","/files/big.bin"), req("GET","/m/big.bin"), req("GET","/files/1k.txt")],
    [RECV, SEND] + [FILE]*40 + [SEND, SEND]))
# Streams reset while their file operations are in flight or waiting their turn.
write("files_reset_meanwhile", seed(
    [req("GET","/files/big.bin"), req("GET","/files/1k.txt"), req("GET","/files/dir/"), rst(1), rst(3), rst(5)],
    [recv(113), recv(1), FILE, recv(15), FILE, recv(15), recv(15), FILE, recv(15), FILE, FILE, SEND, FILE, FILE]))
# A cached 1 KiB file whose load read came back empty (its memory dropped); the next stream that
# hits it queues the load behind another stream's statx, and is reset before its turn.
write("files_load_waits_reset", seed(
    [req("GET","/files/1k.txt"), req("GET","/files/big.bin"), req("GET","/files/1k.txt"), rst(5)],
    [recv(1)]*60 + [FILE, FILE, short(0), FILE] + [recv(1)]*46 + [FILE, FILE, SEND]))
write("files_close_meanwhile", seed(
    [req("GET","/files/big.bin"), req("GET","/files/1k.txt")],
    [RECV, FILE, FILE, SEND, FILE, ABORT, FILE]))
write("files_eof_meanwhile", seed(
    [req("GET","/files/1k.txt"), req("GET","/files/big.bin")],
    [RECV, FILE, SEND, EOF, fail(8)]))
# Sinks: one answers early and streams, one refused by middleware, one past its limit, one refused
# at its head, an empty one, one with 100-continue whose sink throws.
write("sink_bodies", seed(
    [req("POST","/sink", body=3), req("POST","/sink", body=2, deny=True), req("POST","/sink", body=20),
     req("POST","/sink", body=20, clen=True), req("POST","/sink"), req("POST","/sink", body=1, expect=True)],
    [RECV, RECV, RECV, RECV] + [SEND]*6,
    script=[0, 0x02, 0x0A, 0x00, 0x00, 0, 0, 0, 0, 0x03, 0, 0x01]))
write("sink_factory", seed(
    [req("POST","/sink", body=1), req("POST","/sink", body=1), req("POST","/sink", body=1), req("POST","/sink")],
    [RECV, SEND, SEND, SEND], script=[0x01, 0x02, 0, 0, 0x01, 0, 0x04]))
# The protocol's own refusals: CONNECT, heads over the limits, bodies over them (one stream's and
# the connection's), "*"; then the drain, a receive without buffers, a reset socket.
write("protocol_misc", seed(
    [req("CONNECT","/hello"), req("GET","/hello", fill=255), req("GET","/hello", fill=63),
     req("POST","/echo", body=1, clen=True, lie=True), req("POST","/echo", body=40), req("POST","/echo", body=40),
     req("GET","*"), req("OPTIONS","*")],
    [RECV]*16 + [SEND, DRAIN, SEND, 7|16, SEND, 7|32]))
# SLOW streamed bodies through a 1 KiB pipe: the worker reads part, the rest waits unconsumed, its
# message feeds more; a worker that answers early, one that streams, one whose handler throws.
write("upload_pipe", seed(
    [req("POST","/upload", body=6), req("POST","/upload-echo", body=5), req("POST","/upload", body=30)],
    [RECV]*8 + read(0, 40) + [NOTIFY] + read(0, 60) + [NOTIFY] + read(1, 60) + [NOTIFY] + read(1, 30) +
    piece(1) + [NOTIFY] + ret(1) + [DONE, SEND] + read(0, 255) + [NOTIFY, task(0), 3, DONE, NOTIFY, SEND] +
    read(0, 255) + [NOTIFY] + read(0, 255) + [NOTIFY] + ret(0) + [DONE, SEND, SEND]))
write("upload_workers", seed(
    [req("POST","/upload", body=5), req("POST","/upload-echo", body=5), req("POST","/upload", body=3),
     req("POST","/upload-echo", body=6, expect=True)],
    [RECV]*4 + ret(0) + piece(0, 3, promise=True) + piece(0) + [NOTIFY] + ret(0) + [DONE] + piece(0) +
    ret(0, throw=True) + ret(0, throw=True) + [DONE, NOTIFY, SEND, SEND]))
write("upload_early", seed(
    [req("POST","/upload", body=20)],
    [recv(113)] + ret(0) + [DONE, RECV, RECV, RECV, RECV, SEND, SEND]))
write("upload_reset", seed(
    [req("POST","/upload-echo", body=2), rst(1)],
    [recv(113)] + piece(0) + [NOTIFY, RECV, RECV] + piece(0) + ret(0) + [DONE, SEND, SEND]))
write("orphan_pipe", seed(
    [req("POST","/stream", body=1), rst(1)],
    [RECV, task(0), NOTIFY, DONE, SEND]))
write("upload_limits", seed(
    [req("POST","/upload", body=40), req("POST","/upload", clen=True), req("POST","/upload-echo")],
    [RECV]*7 + [task(0), DONE, SEND] + read(0, 255) + [NOTIFY, task(0), 3, DONE, SEND, SEND, SEND]))
# FAST producers: pieces, nothing then the retry tick, a broken promise, gzip, trailers, a throw.
write("producers", seed(
    [settings_iw(255), wu(200), req("GET","/produce"), req("GET","/produce", gzip=True),
     req("GET","/produce"), req("HEAD","/produce"), req("GET","/produce")],
    [RECV, SEND, TICK, SEND, TICK, SEND, TICK, SEND, DEADLINE, SEND],
    script=[0x03, 10, 0x1A, 0x01,   0x04, 0x03, 0x07,   0x01, 2, 0x05,   0x00,  0x80,
            0x02, 0x01, 0x0B, 0x04], mode=1|8))
write("producers_statuses", seed(
    [req("GET","/produce")]*5,
    [RECV, SEND, TICK, SEND, SEND],
    script=[0x08, 0x48, 0x30, 0x01, 1, 0x06, 0x00, 0x04]))
# Without workers: SLOW handlers inline; then with a full queue: 503s.
write("no_workers", seed(
    [req("GET","/slow"), req("POST","/upload", body=2), req("POST","/stream", body=1)],
    [RECV, SEND, SEND], mode=1|16))
write("tasks_refused", seed(
    [req("GET","/slow"), req("POST","/upload", body=2), req("POST","/upload")],
    [REFUSE, RECV, SEND, SEND]))
# h2c by Upgrade: stream 1 is the HTTP/1 request (a file, a streamed body), valid HTTP2-Settings.
UP_SETTINGS = [1 | (2 << 2), 3, 0, 255, 255, 2, 0, 1, 0]   # INITIAL_WINDOW_SIZE 65535, MAX_CONCURRENT 256
write("upgrade_file", seed(
    [req("GET","/files/1k.txt"), req("POST","/sink", body=2), req("GET","/hello")],
    [RECV, FILE, FILE, FILE, SEND, FILE, SEND, SEND], mode=1|4, upgrade=[0, P["/files/1k.txt"]] + UP_SETTINGS))
write("upgrade_head_range", seed(
    [req("GET","/files/big.bin")],
    [RECV, FILE, FILE, SEND, FILE, SEND], mode=1|4, upgrade=[1 | 8 | (2 << 4), P["/files/1k.txt"]] + UP_SETTINGS))
write("upgrade_upload", seed(
    [req("GET","/produce")],
    [RECV, task(0), DONE, SEND, SEND], mode=1|4, upgrade=[3, P["/upload"], 1]))
write("upgrade_sink", seed(
    [], [RECV, SEND, SEND], mode=1|4, upgrade=[3|128, P["/sink"], 1 | (1 << 2), 2, 0, 0, 100],
    script=[0, 0x02]))
write("upgrade_raw", seed([], [], mode=4|2, upgrade=[0, P["/hello"], 1]))
# ---- bugs this target found, fixed since

# An upgrade whose HTTP2-Settings do not decode: a 400, then HTTP/2 frames after it.
write("upgrade_400_then_frames",
            seed([req("GET","/hello")], [RECV, SEND], mode=1|4, upgrade=[0, P["/hello"], 0]))

# A POST whose head arrives and whose body stops: nothing of ours is out, and no deadline was
# armed (now --body-timeout is); time passes (64 s); the rest of the body comes.
write("stream_waits_without_deadline",
            seed([req("POST","/echo", body=1)],
                 [recv(15)]*4 + [0xF3, 0xF3] + [DEADLINE]*3 + [TICK|0xF0]*40 + [0x73]))
