#!/usr/bin/env python3
"""Compare our io_uring HTTP server with nginx, h2o and the bare io_uring responder.

Run through perf/compare (which installs the load tools and raises the fd limit):

    perf/compare                      # full run, ~15 minutes
    perf/compare --quick              # smoke run, under 2 minutes
    perf/compare --servers nginx,h2o,bare --allow-missing-ours

Phases (--only):
  keepalive  wrk -t1 -c{100,1000,2000} --latency on /test/fast, every server
  ab         ab -n 20000 -c{1,10,50} (one connection per request) on /test/fast
  pipelined  h2load --h1 -c 100 -m 16 -t 1 -D {duration} on /test/fast (16 requests in flight per
             connection), every server (bare with --pipelined)
  slow       ours -w 300 -D 30: ab -n {slow-requests} -c 100 /test/slow vs 100/0.030 req/s,
             interleaved with the same load on the references: bare --close --delay-ms=30 (a
             ring timer), bare --close --delay-ms=30 --pool-threads=300 (a worker pool doing
             ours' minimum per slow request) and, if the echo module is installed, nginx with
             echo_sleep 0.030
  queue      ours only, -A 100 -C 1000 -w 1 -D 30: ab -n 200 -c 100 /test/slow, ideal 6 s
  mixed      ours only: wrk -c100 /test/fast alone, then with the slow ab load beside it; where
             the CPUs went meanwhile: ours' ring thread(s), its workers, wrk and ab
  bodies     opt-in (not in the default run: 27 wrk runs, ~5 minutes at the defaults):
             wrk -t1 -c10 --latency /test/bytes?N for N = 16384, 65536, 262144 on ours with
             zero-copy send (--send-zc=16384) and ours --send-zc=0, and nginx serving the same
             N bytes from a file (sendfile on); req/s, MiB/s, p99, CPU/req, send-zc/copy ratios.
             perf/compare --only bodies   (or --only keepalive,ab,slow,queue,mixed,bodies)
  upload     opt-in: POST 1 GiB (Content-Length, then chunked) from a client that sends one
             fixed 1 MiB buffer again and again (python3 compare.py --upload-client), to ours'
             /test/sink and to nginx discarding it (return 204, client_max_body_size 0);
             MiB/s, server and client CPU per GiB, context switches, server RSS (0.5 s samples)
  download   opt-in: wrk -t1 -c1 GET /test/stream?bytes=67108864&chunk=65536 on ours (default
             send-zc) and ours --send-zc=0, and nginx sending a 64 MiB file (sendfile on);
             MiB/s, server CPU per MiB.  perf/compare --only upload,download
  files      opt-in: static files of 1 KiB, 16 KiB, 256 KiB and 8 MiB (random bytes) from a
             temporary document root, served by ours (--root=DIR), nginx (root, sendfile,
             open_file_cache) and h2o (file.dir): wrk -t1 -c50 --latency GET /fN.bin per size
             and ab -c50 (a connection per request) GET /f1k.bin; req/s, MiB/s (req/s x size),
             CPU/req, ratios ours/nginx and ours/h2o.  perf/compare --only files

Each load runs against each server in turn (A B C D A B C D ...) for --rounds rounds;
the report gives the median and the min-max of every figure. Server CPU time is
utime+stime of every process of the server (all threads) from /proc/PID/stat,
before and after each run, divided by the completed requests.

Results: perf/results/compare-YYYYmmdd-HHMMSS.{md,json,png}.
"""

import argparse
import datetime
import json
import os
import re
import resource
import select
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

PERF_DIR = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(PERF_DIR)
RESULTS_DIR = os.path.join(PERF_DIR, "results")
CLK_TCK = os.sysconf("SC_CLK_TCK")
ALL_SERVERS = ["ours", "nginx", "h2o", "bare"]
ALL_PHASES = ["keepalive", "ab", "pipelined", "slow", "queue", "mixed", "bodies", "upload", "download", "files"]
# bodies takes ~5 minutes at the defaults (3 sizes x 3 servers x 3 rounds x 10 s):
# only with --only; so are upload and download (large transfers, ~2 minutes together)
# and files (4 wrk loads and 1 ab load x 3 servers x 3 rounds, ~7 minutes).
DEFAULT_PHASES = ["keepalive", "ab", "pipelined", "slow", "queue", "mixed"]
# The pipelined phase: h2load --h1 -cPIPELINE_CONNECTIONS -mPIPELINE_DEPTH, one
# client thread; a pipelining client does not wait for an answer before it
# sends the next request, so the server is never idle for a round trip.
PIPELINE_CONNECTIONS = 100
PIPELINE_DEPTH = 16
# The pipelined target: ours' req/s >= this x the best of nginx and h2o.
PIPELINE_TARGET = 3.0
# The bodies phase: GET /test/bytes?N with wrk -t1 -cBODY_CONNECTIONS, per size.
BODY_SIZES = [16384, 65536, 262144]
BODY_CONNECTIONS = 10
SLOW_MS = 30
SLOW_CONCURRENCY = 100
# ab -n of the slow phase (--slow-requests): at ~2,800 req/s 10,000 requests
# are ~3.5 s of load, so a 10 ms clock tick of server CPU is 1 us/req (about
# 1% of ours' figure); --quick takes the old 3,000.
SLOW_REQUESTS = 10000
SLOW_REQUESTS_QUICK = 3000
# The pool reference's threads: as many as ours' workers in the slow phase.
SLOW_POOL_THREADS = 300
# nginx's echo module (Debian: libnginx-mod-http-echo) gives nginx a
# non-blocking sleep: the second reference of the slow phase.
NGINX_ECHO_MODULE = "/usr/lib/nginx/modules/ngx_http_echo_module.so"
# The upload phase: POST UPLOAD_BYTES to ours' /test/sink and to nginx's
# discarding location, once per framing. The client sends one fixed buffer of
# UPLOAD_BUFFER bytes (raw, or UPLOAD_BUFFER / UPLOAD_CHUNK chunks) again and
# again: it holds nothing else in memory.
UPLOAD_BYTES = 1 << 30
UPLOAD_FRAMINGS = ["length", "chunked"]
UPLOAD_CHUNK = 65536
UPLOAD_BUFFER = 1 << 20
UPLOAD_PATH = "/test/sink"
# Before measuring, every upload server must take this body (not a multiple of
# UPLOAD_CHUNK: the chunked check ends with a short chunk) in both framings.
UPLOAD_CHECK_BYTES = 3 * (1 << 20) + 1234
# The download phase: one wrk connection fetching DOWNLOAD_BYTES again and again.
DOWNLOAD_BYTES = 64 << 20
DOWNLOAD_CHUNK = 65536
DOWNLOAD_PATH = f"/test/stream?bytes={DOWNLOAD_BYTES}&chunk={DOWNLOAD_CHUNK}"
# Server RSS is sampled this often during upload and download runs.
RSS_INTERVAL = 0.5
# The files phase: a temporary document root with a file of random bytes per
# size (f1k.bin, f16k.bin, f256k.bin, f8m.bin, see file_name) and an
# index.html; wrk -t1 -cFILE_CONNECTIONS on each file, ab -cFILE_AB_CONCURRENCY
# (a connection per request) on the FILE_AB_SIZE one.
FILE_SIZES = [1 << 10, 16 << 10, 256 << 10, 8 << 20]
FILE_CONNECTIONS = 50
FILE_AB_CONCURRENCY = 50
FILE_AB_SIZE = 1 << 10
# Port offsets (from --port-base) of the files phase's servers.
FILE_PORTS = {"ours": 14, "nginx": 15, "h2o": 16}
# Port offsets of the bare responder's pipelined and pool variants.
BARE_PORTS = {"pipelined": 17, "slow-pool": 18, "mixed": 19}
PORT_COUNT = 20


def log(msg):
    print(msg, flush=True)


def warn(msg):
    print(f"WARNING: {msg}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------
# Servers
# ----------------------------------------------------------------------------

class Server:
    """One server process (and its children), started in its own session."""

    def __init__(self, name, label, cmd, port, workdir, pin_cpu=None):
        self.name = name          # ours, nginx, h2o, bare
        self.label = label        # what the report shows, e.g. "bare (close)", "bare (delay 30 ms)"
        self.cmd = cmd
        self.port = port
        self.workdir = workdir
        self.pin_cpu = pin_cpu
        self.proc = None
        self.log_path = os.path.join(workdir, f"{label.replace(' ', '_').replace('(', '').replace(')', '')}.log")

    def start(self, timeout=20.0):
        check_port_free(self.port)
        cmd = self.cmd
        if self.pin_cpu is not None:
            cmd = ["taskset", "-c", str(self.pin_cpu)] + cmd
        self.logf = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self.logf, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, cwd=self.workdir,
                                     start_new_session=True)
        deadline = time.time() + timeout
        last_err = None
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.label} exited with {self.proc.returncode} at start-up:\n"
                                   f"  {shlex.join(cmd)}\n{self.tail_log()}")
            try:
                status, headers, body = http_get(self.port, "/test/fast")
                if status != 200:
                    raise RuntimeError(f"{self.label}: GET /test/fast answered {status}")
                if len(body) > 64:
                    raise RuntimeError(f"{self.label}: GET /test/fast body of {len(body)} bytes")
                log(f"  {self.label} ready on :{self.port} (pid {self.proc.pid})")
                return
            except (OSError, ValueError) as e:
                last_err = e
                time.sleep(0.05)
        raise RuntimeError(f"{self.label} did not answer on :{self.port} within {timeout}s "
                           f"({last_err})\n{self.tail_log()}")

    def pids(self):
        """The server process and all its descendants."""
        if self.proc is None:
            return []
        children = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(entry))
            except (OSError, IndexError):
                continue
        result, todo = [], [self.proc.pid]
        while todo:
            pid = todo.pop()
            result.append(pid)
            todo.extend(children.get(pid, []))
        return result

    def cpu_ticks(self):
        total = 0
        for pid in self.pids():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                # fields[0] is field 3 (state): utime is field 14, stime 15.
                total += int(fields[11]) + int(fields[12])
            except (OSError, IndexError):
                continue
        return total

    def rss_kib(self):
        """VmRSS of every process of the server, added up (KiB)."""
        total = 0
        for pid in self.pids():
            total += proc_status_sum(f"/proc/{pid}/status", ("VmRSS:",))
        return total

    def ctx_switches(self):
        """Voluntary and involuntary context switches of every thread of every
        process of the server, added up."""
        total = 0
        for pid in self.pids():
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                total += proc_status_sum(f"/proc/{pid}/task/{tid}/status",
                                         ("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"))
        return total

    def stop(self):
        if self.proc is None:
            return None
        rc = self.proc.poll()
        if rc is None:
            try:
                os.kill(self.proc.pid, signal.SIGTERM)
                rc = self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                warn(f"{self.label} ignored SIGTERM for 10 s: killing it")
                rc = None
            except ProcessLookupError:
                rc = self.proc.wait()
        # Whatever is left of its session (nginx workers, h2o helpers) goes too.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if rc is None:
            rc = self.proc.wait()
        self.proc = None
        self.logf.close()
        return rc

    def tail_log(self, lines=15):
        try:
            with open(self.log_path, "rb") as f:
                text = f.read().decode(errors="replace")
            return "\n".join("    | " + l for l in text.splitlines()[-lines:])
        except OSError:
            return ""


def proc_status_sum(path, keys):
    """The sum of the first number on the lines of a /proc status file that
    start with one of keys; 0 for a process that is gone."""
    total = 0
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(keys):
                    total += int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return total


def check_port_free(port, wait=10.0):
    """Fails if something listens on port. An io_uring server's sockets can
    outlive its process for a moment (the ring is torn down in a kernel
    worker after exit), so a port just released gets a few seconds."""
    deadline = time.time() + wait
    while True:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("0.0.0.0", port))
            return
        except OSError as e:
            if time.time() > deadline:
                raise RuntimeError(f"port {port} is in use ({e}): choose another --port-base") from None
        finally:
            s.close()
        time.sleep(0.1)


def http_get(port, path, timeout=5.0):
    """A minimal HTTP/1.1 GET; returns (status, headers dict, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            head, sep, body = data.partition(b"\r\n\r\n")
            if sep:
                headers = parse_headers(head)
                length = int(headers.get("content-length", "-1"))
                if length >= 0 and len(body) >= length:
                    break
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        raise ValueError(f"no complete HTTP response from :{port}")
    status = int(head.split(b" ", 2)[1])
    return status, parse_headers(head), body


def parse_headers(head):
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        headers[k.strip().lower().decode()] = v.strip().decode()
    return headers


class Servers:
    """Builds the command lines of the servers and remembers what runs."""

    def __init__(self, args, workdir, bin_dir):
        self.args = args
        self.workdir = workdir
        self.bin_dir = bin_dir
        self.running = []

    def port(self, offset):
        return self.args.port_base + offset

    def make(self, name, variant=None):
        a = self.args
        pin = a.server_cpu if a.pin else None
        if name == "ours":
            binary = a.ours_binary or os.path.join(self.bin_dir, "src", "server")
            default = ["-A", str(a.threads), "-w", str(a.workers), "-D", str(SLOW_MS)]
            flags = {"default": default,
                     "slow": ["-A", str(a.threads), "-w", "300", "-D", str(SLOW_MS)],
                     "queue": ["-A", "100", "-C", "1000", "-w", "1", "-D", str(SLOW_MS)],
                     # The bodies phase: zero-copy send for every size it measures (the
                     # shipped threshold is 128 KiB, which this phase is there to justify),
                     # and off.
                     "send-zc": default + [f"--send-zc={min(BODY_SIZES)}"],
                     "copy": default + ["--send-zc=0"],
                     # The files phase: the document root for what no route claims
                     # (written only when asked for).
                     "files": None}[variant or "default"]
            if variant == "files":
                flags = default + [f"--root={self.docroot()}"]
            offset = {"default": 0, "slow": 5, "queue": 6, "send-zc": 9, "copy": 10,
                      "files": FILE_PORTS["ours"]}[variant or "default"]
            if variant in ("slow", "queue"):
                pin = None  # these phases compare with ideals, not with the others
            cmd = [binary, "-p", str(self.port(offset))] + flags + shlex.split(a.ours_args)
            label = "ours" if not variant else f"ours ({variant})"
            return Server("ours", label, cmd, self.port(offset), self.workdir, pin)
        if name == "nginx":
            if variant == "slow":
                # A reference for ours' slow phase: unpinned like ours (slow).
                return Server("nginx", f"nginx (echo_sleep {SLOW_MS} ms)",
                              self.nginx_cmd(self.port(8), slow=True), self.port(8), self.workdir, None)
            if variant == "bodies":
                return Server("nginx", "nginx (sendfile)", self.nginx_cmd(self.port(11), bodies=True),
                              self.port(11), self.workdir, pin)
            if variant == "upload":
                return Server("nginx", "nginx (discard)", self.nginx_cmd(self.port(12), upload=True),
                              self.port(12), self.workdir, pin)
            if variant == "download":
                return Server("nginx", "nginx (sendfile)", self.nginx_cmd(self.port(13), download=True),
                              self.port(13), self.workdir, pin)
            if variant == "files":
                port = self.port(FILE_PORTS["nginx"])
                return Server("nginx", "nginx (files)", self.nginx_cmd(port, files=self.docroot()),
                              port, self.workdir, pin)
            return Server("nginx", "nginx", self.nginx_cmd(self.port(1)), self.port(1), self.workdir, pin)
        if name == "h2o":
            if variant == "files":
                port = self.port(FILE_PORTS["h2o"])
                return Server("h2o", "h2o (files)", self.h2o_cmd(port, files=self.docroot()),
                              port, self.workdir, pin)
            return Server("h2o", "h2o", self.h2o_cmd(self.port(2)), self.port(2), self.workdir, pin)
        if name == "bare":
            binary = os.path.join(self.bin_dir, "perf", "bare_responder")
            if variant == "close":
                return Server("bare", "bare (close)", [binary, str(self.port(4)), "--close"],
                              self.port(4), self.workdir, pin)
            if variant == "slow":
                # Answers every request after exactly SLOW_MS on a ring timeout,
                # one thread: what the slow load reaches on this machine at best.
                return Server("bare", f"bare (delay {SLOW_MS} ms)",
                              [binary, str(self.port(7)), "--close", f"--delay-ms={SLOW_MS}"],
                              self.port(7), self.workdir, None)
            if variant == "slow-pool":
                # The same SLOW_MS spent on a pool thread, handed over as ours
                # does it (queue, semaphore, MSG_RING back) and nothing more:
                # what ours' worker model costs at the least.
                port = self.port(BARE_PORTS["slow-pool"])
                return Server("bare", f"bare (pool, delay {SLOW_MS} ms)",
                              [binary, str(port), "--close", f"--delay-ms={SLOW_MS}",
                               f"--pool-threads={SLOW_POOL_THREADS}"], port, self.workdir, None)
            if variant == "mixed":
                # The mixed phase's reference for the fast load: keep-alive, and
                # unpinned like ours (slow) there.
                port = self.port(BARE_PORTS["mixed"])
                return Server("bare", "bare (mixed)", [binary, str(port)], port, self.workdir, None)
            if variant == "pipelined":
                # Counts the request heads in what it receives and answers each.
                port = self.port(BARE_PORTS["pipelined"])
                return Server("bare", "bare (pipelined)", [binary, str(port), "--pipelined"], port,
                              self.workdir, pin)
            return Server("bare", "bare", [binary, str(self.port(3))], self.port(3), self.workdir, pin)
        raise ValueError(name)

    def docroot(self):
        """The files phase's document root (workdir/docroot), written on first use."""
        path = os.path.join(self.workdir, "docroot")
        if not os.path.isdir(path):
            write_docroot(path)
        return path

    def nginx_cmd(self, port, slow=False, bodies=False, upload=False, download=False, files=None):
        d = os.path.join(self.workdir, "nginx-slow" if slow else "nginx-bodies" if bodies
                         else "nginx-upload" if upload else "nginx-download" if download
                         else "nginx-files" if files else "nginx")
        os.makedirs(d, exist_ok=True)
        conf = os.path.join(d, "nginx.conf")
        # The slow reference: echo_sleep is a timer in nginx's event loop (no
        # thread blocks), echo_flush sends the empty 200 when it fires.
        load_module = f"load_module {NGINX_ECHO_MODULE};\n" if slow else ""
        slow_location = (f"\n        location = /test/slow {{ echo_sleep {SLOW_MS / 1000:.3f}; echo_flush; }}"
                         if slow else "")
        body_map, body_server = "", ""
        if bodies:
            # The bodies phase: /test/bytes?N answers the same N bytes of 'x'
            # as ours, from a file made here (in the page cache after the
            # first request) and sent with sendfile. Only the sizes of
            # BODY_SIZES exist; the map admits nothing else (no path from
            # the query string), anything else is a 404.
            files = os.path.join(d, "bytes")
            os.makedirs(files, exist_ok=True)
            for n in BODY_SIZES:
                with open(os.path.join(files, str(n)), "wb") as f:
                    f.write(b"x" * n)
            body_map = ("    map $args $body_file {\n        default /none;\n"
                        + "".join(f"        {n} /{n};\n" for n in BODY_SIZES) + "    }\n")
            body_server = ("\n        sendfile on;\n        etag off;\n        open_file_cache max=16 inactive=300s;"
                           "\n        open_file_cache_valid 300s;"
                           f"\n        location = /test/bytes {{ root {files}; try_files $body_file =404; }}")
        if upload:
            body_server += nginx_upload_location()
        if download:
            files = os.path.join(d, "files")
            os.makedirs(files, exist_ok=True)
            write_x_file(os.path.join(files, "stream"), DOWNLOAD_BYTES)
            body_server += nginx_download_location(files)
        elif files:
            body_server += nginx_files_server(files)
        with open(conf, "w") as f:
            f.write(f"""# generated by perf/compare.py
{load_module}user root;
daemon off;
master_process on;
worker_processes {self.args.threads};
worker_rlimit_nofile 65536;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{
    worker_connections 16384;
}}
http {{
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 300s;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
{body_map}    server {{
        listen {port} backlog=4096;{body_server}
        location = /test/fast {{ return 200 ""; }}{slow_location}
    }}
}}
""")
        return ["nginx", "-p", d, "-c", conf, "-e", os.path.join(d, "error.log")]

    def h2o_cmd(self, port, files=None):
        d = os.path.join(self.workdir, "h2o-files" if files else "h2o")
        os.makedirs(d, exist_ok=True)
        empty = os.path.join(d, "empty")
        open(empty, "w").close()
        conf = os.path.join(d, "h2o.conf")
        # Debian's h2o 2.2.5 has no "return" directive. Serving an empty file
        # (file.file, with h2o's open-file cache) answers 200 with
        # Content-Length: 0 and was about twice as fast as an mruby.handler
        # returning [200, {}, []] here, so h2o gets its best shot.
        with open(conf, "w") as f:
            f.write(f"""# generated by perf/compare.py
user: root
num-threads: {self.args.threads}
max-connections: 100000
http1-request-timeout: 300
pid-file: {d}/h2o.pid
error-log: {d}/error.log
file.etag: OFF
listen:
  port: {port}
hosts:
  default:
    paths:
      /test/fast:
        file.file: {empty}
{h2o_files_paths(files) if files else ""}""")
        return ["h2o", "-c", conf]

    def start(self, specs, optional=(), notes=None, verify=None):
        """Starts every (name, variant) of specs, then calls verify(server)
        if given (it raises RuntimeError when the server answers wrong). One
        listed in optional that does not start or verify is stopped and left
        out, with a line in notes; any other failure raises."""
        started = []
        for name, variant in specs:
            server = self.make(name, variant)
            self.running.append(server)
            what = "did not start"
            try:
                server.start()
                if verify is not None:
                    what = "answered wrong"
                    verify(server)
            except (RuntimeError, OSError) as e:
                if (name, variant) not in optional:
                    raise
                self.running.remove(server)
                server.stop()
                warn(f"{server.label} {what}, left out: {e}")
                if notes is not None:
                    # At start-up its last log line says why, e.g. nginx's [emerg] line.
                    last = failure_line(server.tail_log(3)) if what == "did not start" else ""
                    notes.append(f"{server.label} {what} and was left out: "
                                 f"{last or str(e).splitlines()[0]}")
                continue
            started.append(server)
        return started

    def stop_all(self):
        while self.running:
            server = self.running.pop()
            rc = server.stop()
            if server.name == "ours" and rc not in (0, None):
                warn(f"{server.label} exited with {rc} on SIGTERM (expected 0)\n{server.tail_log()}")


def nginx_upload_location():
    """nginx's side of the upload phase: read the whole body and keep none of it.

    `return` discards the request body (ngx_http_discard_request_body): nginx
    recv()s every byte of it into a 4 KiB buffer on its stack and drops it
    (Content-Length and chunked alike). It answers 204 as soon as the headers
    are in and goes on reading; the next request on the connection is read only
    after the last byte of the body, and that is what the upload client times
    (it asks GET /test/fast on the same connection once its body is sent).
    client_max_body_size 0: no limit (the default 1m answers 413 to a 1 GiB
    Content-Length). client_body_buffer_size is not used by the discard path
    (it sizes the buffer of a body that is read to be kept). lingering_time:
    nginx gives a discarded body at most this long (default 30 s) before it
    closes the connection.

    The alternatives keep the body: echo_read_request_body and
    client_body_in_file_only write whatever exceeds client_body_buffer_size to
    a temporary file, and proxy_pass hands it to another server; they would
    measure nginx writing a file or proxying, not reading a body."""
    return ("\n        location = /test/sink {"
            "\n            client_max_body_size 0;"
            "\n            client_body_buffer_size 64k;"
            "\n            lingering_time 300s;"
            "\n            lingering_timeout 60s;"
            "\n            return 204;"
            "\n        }")


def failure_line(tail):
    """The line of a server's tail_log that says why it did not start: the
    last one but a "Try '... --help'." hint (ours' after a bad flag)."""
    lines = [l.strip().lstrip("|").strip() for l in tail.splitlines()]
    return next((l for l in reversed(lines) if l and not l.startswith("Try '")), "")


def nginx_files_server(root):
    """nginx's side of the files phase: the document root for every path but
    /test/fast, as a static-file site is set up (sendfile, tcp_nopush, an
    open-file cache; access_log off is set for the whole http block)."""
    return (f"\n        root {root};"
            "\n        sendfile on;\n        tcp_nopush on;"
            "\n        open_file_cache max=1000 inactive=60s;\n        open_file_cache_valid 1s;")


def h2o_files_paths(root):
    """h2o's side of the files phase: its file handler on the document root
    for every path but /test/fast (the longer prefix wins), with ETags as h2o
    sends them by default (as nginx does; the global OFF is for the empty
    /test/fast answer); no access-log directive, so none is written."""
    return f"""      /:
        file.dir: {root}
        file.etag: ON
"""


def nginx_download_location(files):
    """nginx's side of the download phase: DOWNLOAD_BYTES of 'x' from the file
    files/stream (page cache after the first request) with sendfile, whatever
    the query string; ours builds and writes its body per request."""
    return ("\n        sendfile on;\n        etag off;\n        open_file_cache max=16 inactive=300s;"
            "\n        open_file_cache_valid 300s;"
            f"\n        location = /test/stream {{ root {files}; try_files /stream =404; }}")


def file_name(n):
    """The files phase's file of n bytes: 1024 -> "f1k.bin", 8 MiB -> "f8m.bin"."""
    return f"f{size_key(n)}.bin"


def write_docroot(path, sizes=FILE_SIZES):
    """The files phase's document root: a file of random bytes (nothing a
    server could compress or cache by content) per size, and an index.html."""
    os.makedirs(path, exist_ok=True)
    for n in sizes:
        with open(os.path.join(path, file_name(n)), "wb") as f:
            left = n
            while left > 0:
                f.write(os.urandom(min(left, 1 << 20)))
                left -= min(left, 1 << 20)
    with open(os.path.join(path, "index.html"), "w") as f:
        f.write("<!doctype html>\n<title>perf/compare files</title>\n<p>"
                + " ".join(f'<a href="{file_name(n)}">{file_name(n)}</a>' for n in sizes) + "</p>\n")
    return path


def write_x_file(path, n):
    """A file of n bytes of 'x', written 1 MiB at a time (kept if it is there)."""
    if os.path.exists(path) and os.path.getsize(path) == n:
        return
    piece = b"x" * (1 << 20)
    with open(path, "wb") as f:
        left = n
        while left > 0:
            f.write(piece[:min(left, len(piece))])
            left -= min(left, len(piece))


# ----------------------------------------------------------------------------
# Loads
# ----------------------------------------------------------------------------

LOADS = []  # filled in main from the options


class LoopbackAddresses:
    """Hands out 127.0.0.2 ... 127.0.0.254 in turn, one per run.

    A server that closes first keeps each connection in TIME_WAIT for 60 s.
    Tens of thousands of connections per minute to the same address and port
    (ab without -k) make new connections collide with those, and the SYN that
    hits one is answered with an ACK instead of a SYN-ACK: the client retries
    after 1 s, a stall that would be blamed on the server. A fresh destination
    address per run is a fresh 4-tuple space. The servers listen on all
    addresses; only loopback is ever sent to."""

    def __init__(self):
        self.n = 0

    def next(self):
        self.n = self.n % 253 + 1
        return f"127.0.0.{self.n + 1}"


LOOPBACK = LoopbackAddresses()


def syn_retransmits():
    """The kernel's TcpExt TCPSynRetrans counter (the whole machine)."""
    try:
        with open("/proc/net/netstat") as f:
            lines = f.read().splitlines()
        for names, values in zip(lines[::2], lines[1::2]):
            if names.startswith("TcpExt:"):
                return int(dict(zip(names.split()[1:], values.split()[1:]))["TCPSynRetrans"])
    except (OSError, KeyError, ValueError):
        pass
    return None


def unit_ms(value, unit):
    return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}[unit]


def parse_wrk(out):
    r = {}
    m = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m),", out)
    if not m:
        raise RuntimeError("cannot parse wrk output:\n" + out)
    r["requests"] = int(m.group(1))
    r["seconds"] = unit_ms(m.group(2), m.group(3)) / 1e3
    r["rps"] = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    errors = 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        errors += sum(int(x) for x in m.groups())
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        errors += int(m.group(1))
    r["errors"] = errors
    for pct in ("50", "99"):
        m = re.search(rf"^\s+{pct}%\s+([\d.]+)(us|ms|s|m)\s*$", out, re.M)
        r[f"p{pct}_ms"] = unit_ms(m.group(1), m.group(2)) if m else None
    # wrk's units are binary: "Transfer/sec: 2.15MB" is 2.15 MiB (headers included).
    m = re.search(r"Transfer/sec:\s+([\d.]+)([KMGT]?)B", out)
    r["mib_per_s"] = float(m.group(1)) * 1024 ** "_KMGT".index(m.group(2) or "_") / 2 ** 20 if m else None
    return r


def parse_h2load(out):
    """h2load's summary: completed requests are those it counts as succeeded
    (2xx and 3xx), errors those it counts as failed (4xx, 5xx, resets, time-outs,
    requests of a connection that broke); it gives no percentiles, only the
    mean time per request (mean_ms)."""
    r = {}
    m = re.search(r"^finished in ([\d.]+)(us|ms|s|m), ([\d.]+) req/s", out, re.M)
    if not m:
        raise RuntimeError("cannot parse h2load output:\n" + out[-3000:])
    r["seconds"] = unit_ms(m.group(1), m.group(2)) / 1e3
    r["rps"] = float(m.group(3))
    m = re.search(r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                  r"(\d+) errored(?:, (\d+) timeout)?", out, re.M)
    if not m:
        raise RuntimeError("cannot parse h2load's requests line:\n" + out[-3000:])
    r["requests"] = int(m.group(4))
    r["errors"] = int(m.group(5))
    r["p50_ms"] = r["p99_ms"] = None
    m = re.search(r"^time for request:\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)", out, re.M)
    r["mean_ms"] = unit_ms(m.group(5), m.group(6)) if m else None
    return r


def parse_ab(out, csv_path):
    r = {}
    m = re.search(r"Complete requests:\s+(\d+)", out)
    if not m:
        raise RuntimeError("cannot parse ab output:\n" + out)
    complete = int(m.group(1))
    failed = int(re.search(r"Failed requests:\s+(\d+)", out).group(1))
    m = re.search(r"Non-2xx responses:\s+(\d+)", out)
    non2xx = int(m.group(1)) if m else 0
    r["requests"] = complete - failed - non2xx
    r["errors"] = failed + non2xx
    r["seconds"] = float(re.search(r"Time taken for tests:\s+([\d.]+) seconds", out).group(1))
    r["rps"] = float(re.search(r"Requests per second:\s+([\d.]+)", out).group(1))
    pcts = {}
    try:
        with open(csv_path) as f:
            for line in f:
                p, _, v = line.strip().partition(",")
                if p.isdigit():
                    pcts[int(p)] = float(v)
    except OSError:
        pass
    r["p50_ms"] = pcts.get(50)
    r["p99_ms"] = pcts.get(99)
    return r


class Load:
    def __init__(self, key, title, kind, build_cmd, body_bytes=None):
        self.key = key            # e.g. "wrk-c100"
        self.title = title        # e.g. "keep-alive wrk -c100"
        self.kind = kind          # "wrk" or "ab"
        self.build_cmd = build_cmd  # function(port, workdir) -> argv
        self.body_bytes = body_bytes  # the files phase: the size of every response body

    def run(self, port, workdir, cpu=None, timeout=600):
        csv = os.path.join(workdir, "ab-percentiles.csv")
        if os.path.exists(csv):
            os.remove(csv)
        host = LOOPBACK.next()
        cmd = self.build_cmd(host, port, csv)
        if cpu is not None:
            cmd = ["taskset", "-c", str(cpu)] + cmd
        rc, out = run_to_end(cmd, timeout)
        if rc != 0:
            raise RuntimeError(f"{shlex.join(cmd)} exited with {rc}:\n{out[-2000:]}")
        if self.kind == "upload":
            r = parse_upload(out)
        elif self.kind == "h2load":
            r = parse_h2load(out)
        else:
            r = parse_wrk(out) if self.kind == "wrk" else parse_ab(out, csv)
        r["url"] = cmd[-1]
        return r


def run_to_end(cmd, timeout):
    """Runs a load generator; on time-out, Ctrl-C or SIGTERM it is killed and reaped."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def wrk_load(conns, secs, path="/test/fast"):
    return Load(f"wrk-c{conns}", f"keep-alive wrk -c{conns}", "wrk",
                lambda host, port, csv: ["wrk", "-t1", f"-c{conns}", f"-d{secs}s", "--latency",
                                         f"http://{host}:{port}{path}"])


def pipelined_load(secs, conns=PIPELINE_CONNECTIONS, depth=PIPELINE_DEPTH):
    """The pipelined phase: h2load over HTTP/1.1, depth requests in flight on
    each of conns connections, one client thread, for secs seconds."""
    return Load(f"pipelined-c{conns}", f"pipelined h2load -c{conns} -m{depth}", "h2load",
                lambda host, port, csv: ["h2load", "--h1", "-c", str(conns), "-m", str(depth), "-t", "1",
                                         "-D", str(secs), f"http://{host}:{port}/test/fast"])


def pipelined_phase_specs(servers):
    """The pipelined phase's servers, those among servers: ours, nginx and h2o
    as in the keep-alive phase, and the bare responder with --pipelined (it
    otherwise answers one request per receive)."""
    return [(name, "pipelined" if name == "bare" else None) for name in ALL_SERVERS if name in servers]


def size_text(n):
    """16384 -> "16 KiB", 1048576 -> "1 MiB", 1 << 30 -> "1 GiB", 1000 -> "1000 B"."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def size_key(n):
    """16384 -> "16k", 8 MiB -> "8m", 1000 -> "1000": sizes in load keys and file names."""
    return size_text(n).replace(" ", "").replace("iB", "").replace("B", "").lower()


def body_load(n, secs, conns=BODY_CONNECTIONS):
    """The bodies phase: keep-alive GET /test/bytes?n with wrk."""
    key = "bodies-" + size_key(n)
    return Load(key, f"wrk -c{conns} /test/bytes?{n}", "wrk",
                lambda host, port, csv: ["wrk", "-t1", f"-c{conns}", f"-d{secs}s", "--latency",
                                         f"http://{host}:{port}/test/bytes?{n}"])


def check_bodies(server, sizes=BODY_SIZES, get=None):
    """Raises RuntimeError unless GET /test/bytes?N answers 200 with N bytes
    of 'x' for every N of sizes: every server of the bodies phase must send
    the same bodies."""
    get = get or http_get
    for n in sizes:
        status, _, body = get(server.port, f"/test/bytes?{n}")
        if status != 200 or body != b"x" * n:
            raise RuntimeError(f"{server.label}: GET /test/bytes?{n} answered {status} with {len(body)} bytes "
                               f"({'not all x' if len(body) == n else f'expected {n}'})")


def parse_zc_metrics(text):
    """Ours' zero-copy counters from its /metrics (Prometheus text)."""
    names = {"uring_http_sends_zerocopy_total": "sends_zc",
             "uring_http_sends_zerocopy_copied_total": "copied",
             "uring_http_sends_zerocopy_refused_total": "refused"}
    out = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in names:
            out[names[name]] = int(float(value))
    return out


def parse_counters(text, names):
    """Counters of ours' /metrics (Prometheus text): {short name: value} for
    the metric names (without labels) that are keys of names."""
    out = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in names:
            try:
                out[names[name]] = int(float(value))
            except ValueError:
                pass
    return out


# Ours' counters read after the upload and download phases: what the
# transfers cost in hand-offs, and whether anything went wrong.
OURS_COUNTERS = {"uring_http_msg_ring_messages_total": "msg_ring_messages",
                 "uring_http_streamed_request_bodies_total": "streamed_request_bodies",
                 "uring_http_chunked_request_bodies_total": "chunked_request_bodies",
                 "uring_http_streamed_responses_total": "streamed_responses",
                 "uring_http_sends_zerocopy_total": "sends_zc",
                 "uring_http_sends_zerocopy_copied_total": "sends_zc_copied",
                 "uring_http_recv_enobufs_total": "recv_enobufs",
                 "uring_http_aborted_streams_total": "aborted_streams",
                 "uring_http_bad_requests_total": "bad_requests",
                 "uring_http_timeouts_total": "timeouts",
                 "uring_http_cq_overflows_total": "cq_overflows"}
# Any of these above 0 after a transfer phase is called out in the report.
OURS_TROUBLE_COUNTERS = ["aborted_streams", "bad_requests", "timeouts", "cq_overflows"]


def read_ours_counters(started, into):
    """OURS_COUNTERS of every ours among started, into {label: counters}."""
    for server in started:
        if server.name == "ours":
            try:
                into[server.label] = parse_counters(
                    http_get(server.port, "/metrics")[2].decode(errors="replace"), OURS_COUNTERS)
            except (OSError, ValueError) as e:
                warn(f"{server.label}: no /metrics ({e})")


class ResponseReader:
    """Reads HTTP/1.1 responses one after the other from a connected socket;
    bodies with Content-Length, chunked (decoded) or up to the close."""

    def __init__(self, sock, recv_size=1 << 20):
        self.sock, self.recv_size, self.buf = sock, recv_size, bytearray()

    def _fill(self):
        data = self.sock.recv(self.recv_size)
        if not data:
            return False
        self.buf += data
        return True

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[:i + 2]
                return line
            if not self._fill():
                raise ValueError("connection closed in the middle of a chunked body")

    def _take(self, n, out):
        while n > 0:
            if not self.buf and not self._fill():
                raise ValueError("connection closed in the middle of a body")
            k = min(n, len(self.buf))
            out += self.buf[:k]
            del self.buf[:k]
            n -= k

    def read(self):
        """(status, headers, body) of the next response."""
        while True:
            i = self.buf.find(b"\r\n\r\n")
            if i >= 0:
                break
            if not self._fill():
                raise ValueError("connection closed " + ("in a response head" if self.buf else "without a response"))
        head = bytes(self.buf[:i])
        del self.buf[:i + 4]
        try:
            status = int(head.split(b" ", 2)[1])
        except (IndexError, ValueError):
            raise ValueError(f"not an HTTP response: {head[:80]!r}") from None
        if 100 <= status < 200:
            return self.read()
        headers = parse_headers(head)
        body = bytearray()
        if status in (204, 304):
            pass
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            while True:
                try:
                    size = int(self._line().split(b";")[0].strip(), 16)
                except ValueError:
                    raise ValueError("bad chunk size line") from None
                if size == 0:
                    break
                self._take(size, body)
                if self._line() != b"":
                    raise ValueError("chunk data not followed by CRLF")
            while self._line() != b"":  # trailers
                pass
        elif "content-length" in headers:
            self._take(int(headers["content-length"]), body)
        else:
            while self._fill():
                pass
            body += self.buf
            self.buf.clear()
        return status, headers, bytes(body)


def fetch(port, path, timeout=30.0):
    """GET path (Connection: close) -> (status, headers, decoded body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
        return ResponseReader(s).read()


def upload_buffer(framing, chunk=UPLOAD_CHUNK, size=UPLOAD_BUFFER):
    """What the upload client sends again and again: size bytes of body ('x'),
    raw for Content-Length, or framed as size / chunk chunks of chunk bytes."""
    if framing == "length":
        return b"x" * size
    if framing == "chunked":
        if size % chunk:
            raise ValueError(f"buffer of {size} bytes is not a whole number of {chunk}-byte chunks")
        return (f"{chunk:x}\r\n".encode() + b"x" * chunk + b"\r\n") * (size // chunk)
    raise ValueError(f"unknown framing {framing}")


def upload_client(sock, path, total, framing, host="127.0.0.1", chunk=UPLOAD_CHUNK, size=UPLOAD_BUFFER):
    """POSTs a body of total bytes over the connected sock, Content-Length
    (framing "length") or chunked, from one fixed buffer (upload_buffer): the
    client holds nothing else, whatever total is. Then it reads the answer
    and asks GET /test/fast on the same connection: that answer can only come
    once the server has read past the last byte of the body, whenever it sent
    the first one (nginx answers a discarded body before reading it). The
    time runs from the first byte sent to that second answer. Returns a dict
    (what went wrong in "error"; upload_problems judges it)."""
    buf = memoryview(upload_buffer(framing, chunk, size))
    framed = len(f"{chunk:x}") + 4 + chunk  # bytes per chunk on the wire
    te = f"Content-Length: {total}" if framing == "length" else "Transfer-Encoding: chunked"
    out = {"bytes": total, "framing": framing, "status": None, "answer": None, "answered_after_bytes": None,
           "followup_status": None}
    t0 = time.monotonic()
    sent = 0
    reader = ResponseReader(sock)
    try:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/octet-stream\r\n"
                     f"{te}\r\n\r\n".encode())
        while sent < total:
            # Readable before the body is sent: an early answer (or a close).
            if out["answered_after_bytes"] is None and select.select([sock], [], [], 0)[0]:
                out["answered_after_bytes"] = sent
            n = min(size, total - sent)
            if framing == "length":
                sock.sendall(buf[:n])
            else:
                whole, rest = divmod(n, chunk)
                if whole:
                    sock.sendall(buf[:whole * framed])
                if rest:
                    sock.sendall(f"{rest:x}\r\n".encode() + b"x" * rest + b"\r\n")
            sent += n
        if framing == "chunked":
            sock.sendall(b"0\r\n\r\n")
        out["sent_s"] = time.monotonic() - t0
        status, _, body = reader.read()
        out["status"], out["answer"] = status, body[:200].decode(errors="replace")
        out["answer_s"] = time.monotonic() - t0
        sock.sendall(f"GET /test/fast HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        out["followup_status"] = reader.read()[0]
    except (OSError, ValueError) as e:
        out["error"] = f"{type(e).__name__}: {e} after {sent} body bytes"
        if out["status"] is None:
            try:  # an answer that came before the error, e.g. a 413
                sock.settimeout(1.0)
                out["status"], _, body = reader.read()
                out["answer"] = body[:200].decode(errors="replace")
            except (OSError, ValueError):
                pass
    out["seconds"] = time.monotonic() - t0
    return out


def upload_problems(result):
    """What is wrong with an upload_client result: [] when the server took
    the body (2xx; ours' answer is the length it read, which must be the
    length sent) and answered the next request on the connection."""
    problems = []
    if result.get("error"):
        problems.append(f"failed: {result['error']}")
    status = result.get("status")
    if status is not None and status not in (200, 204):
        problems.append(f"answered {status}")
    elif status is None and not result.get("error"):
        problems.append("no answer")
    answer = (result.get("answer") or "").strip()
    if status in (200, 204) and answer and answer != str(result["bytes"]):
        problems.append(f"answered a length of {answer[:40]!r} for {result['bytes']} bytes sent")
    if status in (200, 204) and not result.get("error") and result.get("followup_status") != 200:
        problems.append(f"GET /test/fast after the body answered {result.get('followup_status')}")
    return problems


def parse_upload(out):
    """The JSON line of `compare.py --upload-client` -> the figures of a run."""
    line = next((l for l in reversed(out.splitlines()) if l.startswith("{")), None)
    if line is None:
        raise RuntimeError("no result from the upload client:\n" + out[-2000:])
    res = json.loads(line)
    problems = upload_problems(res)
    seconds = res["seconds"]
    return {"requests": 1, "seconds": seconds, "bytes": res["bytes"],
            "mib_per_s": res["bytes"] / 2 ** 20 / seconds if seconds > 0 and not problems else None,
            "errors": len(problems), "problems": problems, "status": res.get("status"),
            "answered_after_bytes": res.get("answered_after_bytes"), "sent_s": res.get("sent_s"),
            "answer_s": res.get("answer_s")}


def upload_client_main(argv):
    """python3 compare.py --upload-client FRAMING BYTES URL: one upload, its
    result as a JSON line on stdout. Blocking socket: compare.py's time-out
    ends a hung client."""
    framing, total, url = argv[0], int(argv[1]), argv[2]
    u = urllib.parse.urlsplit(url)
    try:
        sock = socket.create_connection((u.hostname, u.port))
    except OSError as e:
        print(json.dumps({"bytes": total, "framing": framing, "seconds": 0.0, "error": f"connect: {e}"}))
        return 0
    with sock:
        print(json.dumps(upload_client(sock, u.path or "/", total, framing, host=u.hostname)), flush=True)
    return 0


def upload_load(framing, n=UPLOAD_BYTES):
    """The upload phase: one POST of n bytes, framed as framing, to /test/sink."""
    return Load(f"upload-{framing}", f"POST {size_text(n)} {framing}", "upload",
                lambda host, port, csv: [sys.executable, os.path.abspath(__file__), "--upload-client", framing,
                                         str(n), f"http://{host}:{port}{UPLOAD_PATH}"])


def download_load(secs):
    """The download phase: one wrk connection GETting DOWNLOAD_PATH for secs."""
    key = "download-" + size_key(DOWNLOAD_BYTES)
    return Load(key, f"wrk -c1 GET {size_text(DOWNLOAD_BYTES)}", "wrk",
                lambda host, port, csv: ["wrk", "-t1", "-c1", f"-d{secs}s", "--timeout", "30s", "--latency",
                                         f"http://{host}:{port}{DOWNLOAD_PATH}"])


def check_upload(server, post=None, n=UPLOAD_CHECK_BYTES):
    """Raises RuntimeError unless the server takes a body of n bytes in both
    framings (2xx, the length right where it answers one) and answers the
    next request on the connection. post(port, framing, n) -> upload_client's dict."""
    def post_socket(port, framing, n):
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            return upload_client(s, UPLOAD_PATH, n, framing)
    post = post or post_socket
    for framing in UPLOAD_FRAMINGS:
        problems = upload_problems(post(server.port, framing, n))
        if problems:
            raise RuntimeError(f"{server.label}: POST {UPLOAD_PATH} of {n} bytes ({framing}): {'; '.join(problems)}")


def check_download(server, get=None, n=DOWNLOAD_BYTES):
    """Raises RuntimeError unless GET DOWNLOAD_PATH answers 200 with n bytes of 'x'."""
    status, _, body = (get or fetch)(server.port, DOWNLOAD_PATH)
    if status != 200 or len(body) != n or body.count(b"x") != n:
        raise RuntimeError(f"{server.label}: GET {DOWNLOAD_PATH} answered {status} with {len(body)} bytes "
                           f"({'not all x' if len(body) == n else f'expected {n}'})")


def file_load(n, secs, conns=FILE_CONNECTIONS):
    """The files phase, keep-alive: wrk GET /f<n>.bin."""
    return Load(f"files-{size_key(n)}", f"wrk -c{conns} GET /{file_name(n)}", "wrk",
                lambda host, port, csv: ["wrk", "-t1", f"-c{conns}", f"-d{secs}s", "--timeout", "10s", "--latency",
                                         f"http://{host}:{port}/{file_name(n)}"], body_bytes=n)


def file_ab_load(requests, n=FILE_AB_SIZE, conc=FILE_AB_CONCURRENCY):
    """The files phase, a connection per request: ab (no -k) GET /f<n>.bin."""
    load = ab_load(requests, conc, f"/{file_name(n)}", f"files-ab-{size_key(n)}",
                   f"conn/request ab -c{conc} GET /{file_name(n)}")
    load.body_bytes = n
    return load


def files_loads(secs, ab_requests, sizes=FILE_SIZES):
    """The files phase's loads in the order they run: per size the wrk load,
    and after the FILE_AB_SIZE one the ab load on the same file."""
    loads = []
    for n in sizes:
        loads.append(file_load(n, secs))
        if n == FILE_AB_SIZE:
            loads.append(file_ab_load(ab_requests))
    return loads


def files_phase_specs(servers):
    """(specs, optional) of the files phase: ours (--root), nginx and h2o,
    those among servers, every one optional: one that does not start (ours
    before it knows --root) or serves a file wrong is left out with a note
    and the others run. bare serves no files."""
    specs = [(name, "files") for name in ("ours", "nginx", "h2o") if name in servers]
    return specs, list(specs)


def check_files(server, root, sizes=FILE_SIZES, get=None):
    """Raises RuntimeError unless GET /f<n>.bin answers 200 with a
    Content-Length of n and the file's bytes, for every n of sizes. It is also
    every server's first request of each file: what it caches is warm."""
    get = get or fetch
    for n in sizes:
        path = "/" + file_name(n)
        status, headers, body = get(server.port, path)
        length = headers.get("content-length")
        if status != 200 or length != str(n):
            raise RuntimeError(f"{server.label}: GET {path} answered {status} with "
                               + (f"Content-Length {length}" if length is not None else "no Content-Length")
                               + f" and {len(body)} bytes (expected 200 and {n})")
        with open(os.path.join(root, file_name(n)), "rb") as f:
            if body != f.read():
                raise RuntimeError(f"{server.label}: GET {path} answered {len(body)} bytes that are not the file's")


def slow_load(requests):
    """The slow phase: ab -n requests -c SLOW_CONCURRENCY /test/slow."""
    return ab_load(requests, SLOW_CONCURRENCY, "/test/slow", f"slow-c{SLOW_CONCURRENCY}",
                   f"slow ab -n {requests} -c{SLOW_CONCURRENCY}")


def ab_load(n, conc, path="/test/fast", key=None, title=None):
    # -r: count socket errors instead of stopping; -s: a fast request that
    # takes 10 s is a hang (the queue test's slowest waits 6 s).
    timeout = "10" if path == "/test/fast" else "30"
    return Load(key or f"ab-c{conc}", title or f"conn/request ab -c{conc}", "ab",
                lambda host, port, csv: ["ab", "-q", "-r", "-s", timeout, "-n", str(n), "-c", str(conc),
                                   "-e", csv, f"http://{host}:{port}{path}"])


def machine_ticks():
    """(busy, steal, total) clock ticks of all CPUs, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = v
    return user + nice + system + irq + softirq, steal, sum(v)


def children_cpu_s():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def measured_run(load, server, workdir, load_cpu, during=None):
    """One run of load against server, with the server's CPU and what else
    ran. during, if given, is told begin() right before the load generator
    starts and end() right after it has exited (CpuSplitProbe)."""
    m0, c0, syn0 = machine_ticks(), children_cpu_s(), syn_retransmits()
    before = server.cpu_ticks()
    if during is not None:
        during.begin()
    r = load.run(server.port, workdir, cpu=load_cpu)
    if during is not None:
        during.end()
    time.sleep(0.2)  # let the server finish closing the load's connections
    after = server.cpu_ticks()
    m1, c1, syn1 = machine_ticks(), children_cpu_s(), syn_retransmits()
    # SYNs the kernel had to send again (1 s each) anywhere on the machine.
    r["syn_retransmits"] = syn1 - syn0 if syn0 is not None and syn1 is not None else None
    r["cpu_s"] = (after - before) / CLK_TCK
    r["cpu_us_per_req"] = (r["cpu_s"] * 1e6 / r["requests"]) if r["requests"] else None
    # What else ran meanwhile: CPU busy on the machine that was neither the
    # server nor the (reaped) load generator, and the hypervisor's steal, in %
    # of all CPUs. A few % is the system; much more means a disturbed run.
    total = max(1, m1[2] - m0[2])
    r["load_cpu_s"] = c1 - c0
    r["other_pct"] = max(0.0, 100 * ((m1[0] - m0[0]) / CLK_TCK - r["cpu_s"] - r["load_cpu_s"]) * CLK_TCK / total)
    r["steal_pct"] = 100 * (m1[1] - m0[1]) / total
    r["server"] = server.label
    r["load"] = load.key
    return r


# Ours names its worker threads so (pthread_setname_np in src/worker/worker_pool.cc);
# every other thread of ours is a ring (accept) thread.
WORKER_THREAD_NAME = "uring-worker"
# The parts of the mixed phase's CPU split, in the report's order.
SPLIT_PARTS = [("ring", "ours' ring thread(s)"), ("workers", "ours' workers"), ("server", "ours in all"),
               ("wrk", "wrk"), ("ab", "ab (slow load)"), ("all", "all four")]


def thread_ticks(pids):
    """{(pid, tid): (name, utime+stime clock ticks)} of every thread of the
    processes pids, from /proc/PID/task/TID/stat (the name is the thread's
    comm, as /proc/PID/task/TID/comm gives it)."""
    out = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    head, _, rest = f.read().rpartition(")")
                fields = rest.split()
                # fields[0] is field 3 (state): utime is field 14, stime 15.
                out[(pid, int(tid))] = (head.partition("(")[2], int(fields[11]) + int(fields[12]))
            except (OSError, IndexError, ValueError):
                continue  # a thread that ended meanwhile
    return out


def process_ticks(pid):
    """utime+stime clock ticks of the process pid (all its threads), None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def server_reading(pids):
    """The server's CPU for cpu_split: "total", the utime+stime ticks of its
    processes (each summed over its threads by the kernel before rounding to a
    tick), and "threads", thread_ticks."""
    return {"total": sum(process_ticks(pid) or 0 for pid in pids), "threads": thread_ticks(pids)}


def cpu_split(before, after, seconds, fast_requests, wrk_s=None, ab_s=None, worker_name=WORKER_THREAD_NAME):
    """Where the CPU went during a run of seconds that completed fast_requests:
    ours' ring thread(s) (those not named worker_name) and its workers, from
    two server_reading()s, and the load generators' CPU seconds (wrk_s, ab_s;
    None: not running). Each part as CPU seconds, us per fast request and % of
    one CPU; "all" adds them up.

    The kernel gives each thread's time rounded down to a clock tick (10 ms):
    300 workers that each ran less than a tick would add up to 0, though
    together they ran for many. The process's total is summed before rounding,
    so the workers are the total less the ring threads (a few, each busy for
    many ticks: off by less than a tick each). A ring thread seen only after
    counts from 0, one seen only before (it ended) is not counted."""
    ring = 0
    for key, (name, t) in after["threads"].items():
        if name != worker_name:
            ring += t - before["threads"].get(key, (name, 0))[1]
    server = after["total"] - before["total"]
    cpu = {"ring": ring / CLK_TCK, "workers": max(0, server - ring) / CLK_TCK, "server": server / CLK_TCK}
    if wrk_s is not None:
        cpu["wrk"] = wrk_s
    if ab_s is not None:
        cpu["ab"] = ab_s
    cpu["all"] = cpu["server"] + (wrk_s or 0.0) + (ab_s or 0.0)
    return {"seconds": seconds, "fast_requests": fast_requests,
            "parts": {part: {"cpu_s": v,
                             "us_per_fast_req": v * 1e6 / fast_requests if fast_requests else None,
                             "pct_cpu": 100 * v / seconds if seconds > 0 else None}
                      for part, v in cpu.items()}}


def summarize_split(splits):
    """The median over rounds of every part's us per fast request and % of a CPU."""
    out = {}
    for part, _ in SPLIT_PARTS:
        for figure in ("us_per_fast_req", "pct_cpu"):
            vals = [s["parts"][part][figure] for s in splits
                    if part in s.get("parts", {}) and s["parts"][part].get(figure) is not None]
            if vals:
                out.setdefault(part, {})[figure] = statistics.median(vals)
    return out


class CpuSplitProbe:
    """Reads the CPU of every thread of server, and of the process other_pid
    (the slow load's ab), right before and right after a load generator runs
    (measured_run's during): cpu_split over exactly the load's run."""

    def __init__(self, server, other_pid=None):
        self.server, self.other_pid = server, other_pid
        self.threads = self.other = self.seconds = None

    def begin(self):
        self.threads = [server_reading(self.server.pids())]
        self.other = [process_ticks(self.other_pid) if self.other_pid else None]
        self.t0 = time.monotonic()

    def end(self):
        self.seconds = time.monotonic() - self.t0
        self.threads.append(server_reading(self.server.pids()))
        self.other.append(process_ticks(self.other_pid) if self.other_pid else None)

    def split(self, r):
        """cpu_split of the run r (measured_run's): its requests, and wrk's CPU
        (the load generator reaped inside it)."""
        ab_s = (self.other[1] - self.other[0]) / CLK_TCK if None not in self.other else None
        return cpu_split(self.threads[0], self.threads[1], self.seconds, r["requests"],
                         r.get("load_cpu_s"), ab_s)


def split_line(split):
    """The progress line's CPU split: us/req and % of a CPU per part."""
    return "  ".join(f"{part} {fmt(p['us_per_fast_req'], 2)} us/req {fmt(p['pct_cpu'], 0)}%"
                     for part, p in split["parts"].items() if part != "all")


class RssSampler:
    """Samples the server's RSS (Server.rss_kib) every interval seconds, from
    entering the block to leaving it, on a thread of its own."""

    def __init__(self, server, interval=RSS_INTERVAL):
        self.server, self.interval, self.samples_kib = server, interval, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while True:
            kib = self.server.rss_kib()
            if kib:
                self.samples_kib.append(kib)
            if self._stop.wait(self.interval):
                return

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        kib = self.server.rss_kib()
        if kib:
            self.samples_kib.append(kib)
        return False


def add_transfer_figures(r, ctx_switches=None, rss_kib=()):
    """Per-byte figures of an upload or download run: server CPU s/GiB and
    ms/MiB, the client's CPU s/GiB, the server's context switches per GiB and
    its RSS (min, max of the samples). The bytes are the upload's body, or
    what wrk read (Transfer/sec x time, headers and chunk framing included)."""
    nbytes = r.get("bytes")
    if nbytes is None and r.get("mib_per_s") is not None:
        nbytes = r["mib_per_s"] * r["seconds"] * 2 ** 20
        r["bytes"] = nbytes
    if ctx_switches is not None:
        r["ctx_switches"] = ctx_switches
    if nbytes:
        gib = nbytes / 2 ** 30
        r["cpu_s_per_gib"] = r["cpu_s"] / gib
        r["cpu_ms_per_mib"] = r["cpu_s"] * 1e3 / (nbytes / 2 ** 20)
        if r.get("load_cpu_s") is not None:
            r["client_cpu_s_per_gib"] = r["load_cpu_s"] / gib
        if ctx_switches is not None:
            r["ctx_per_gib"] = ctx_switches / gib
    if rss_kib:
        r["rss_min_mib"] = min(rss_kib) / 1024
        r["rss_max_mib"] = max(rss_kib) / 1024
        r["rss_samples"] = len(rss_kib)
    return r


def transfer_run(load, server, workdir, load_cpu):
    """measured_run, and meanwhile the server's RSS every RSS_INTERVAL and its
    context switches: the upload and download phases."""
    ctx0 = server.ctx_switches()
    with RssSampler(server) as rss:
        r = measured_run(load, server, workdir, load_cpu)
    return add_transfer_figures(r, server.ctx_switches() - ctx0, rss.samples_kib)


def files_run(load, server, workdir, load_cpu):
    """measured_run of a files load; MiB/s is the bodies served, req/s x the
    file's size (wrk's Transfer/sec, headers included, is kept as wire_mib_per_s)."""
    r = measured_run(load, server, workdir, load_cpu)
    r["wire_mib_per_s"] = r.get("mib_per_s")
    r["mib_per_s"] = r["rps"] * load.body_bytes / 2 ** 20
    return r


def run_line(load, r):
    """The progress line of a run of the request phases (after "round N: ")."""
    return (f"{r['rps']:>9,.0f} req/s  "
            f"err {r['errors']:<4} p50 {fmt(r['p50_ms'], 2):>6} ms  p99 {fmt(r['p99_ms'], 2):>6} ms  "
            f"cpu {fmt(r['cpu_us_per_req'], 2):>6} us/req  other {r['other_pct']:3.0f}%"
            f"  steal {r['steal_pct']:2.0f}%"
            + (f"  {r['mib_per_s']:,.0f} MiB/s" if load.key.startswith(("bodies-", "files-"))
               and r.get("mib_per_s") is not None else "")
            + (f"  mean {fmt(r['mean_ms'], 2)} ms" if r.get("mean_ms") is not None else ""))


def transfer_line(load, r):
    """The progress line of an upload or download run."""
    return (f"{fmt(r.get('mib_per_s'), 0):>6} MiB/s  err {r['errors']:<3} "
            f"server {fmt(r.get('cpu_s_per_gib'), 2)} s/GiB ({fmt(r.get('cpu_ms_per_mib'), 2)} ms/MiB)  "
            f"client {fmt(r.get('client_cpu_s_per_gib'), 2)} s/GiB  ctx {fmt(r.get('ctx_per_gib'), 0)}/GiB  "
            f"RSS {fmt(r.get('rss_min_mib'), 1)}-{fmt(r.get('rss_max_mib'), 1)} MiB  "
            f"other {r['other_pct']:3.0f}%  steal {r['steal_pct']:2.0f}%"
            + (f"  PROBLEM: {'; '.join(r['problems'])}" if r.get("problems") else ""))


# ----------------------------------------------------------------------------
# Statistics and report
# ----------------------------------------------------------------------------

METRICS = ["rps", "mib_per_s", "errors", "p50_ms", "p99_ms", "mean_ms", "cpu_us_per_req", "other_pct", "steal_pct",
           # upload and download runs only
           "cpu_s_per_gib", "cpu_ms_per_mib", "client_cpu_s_per_gib", "ctx_per_gib", "rss_min_mib", "rss_max_mib"]


def summarize(runs):
    s = {"runs": len(runs)}
    for m in METRICS:
        vals = [r[m] for r in runs if r.get(m) is not None]
        if vals:
            s[m] = {"median": statistics.median(vals), "min": min(vals), "max": max(vals)}
    return s


def med(summary, load, server, metric):
    try:
        return summary[load][server][metric]["median"]
    except (KeyError, TypeError):
        return None


def fmt(x, digits=1):
    if x is None:
        return "-"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}f}"


def fmt_range(stat, digits=1):
    if not stat:
        return "-"
    if stat["min"] == stat["max"]:
        return fmt(stat["median"], digits)
    return f"{fmt(stat['median'], digits)} ({fmt(stat['min'], digits)}-{fmt(stat['max'], digits)})"


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def evaluate_targets(summary, special):
    """The issue's targets: (description, value, limit text, pass/fail/None)."""
    t = []

    def cmp(desc, value, limit, ok_if_le, fmt_value):
        if value is None:
            t.append((desc, "-", limit_text(limit, ok_if_le), None))
        else:
            ok = value <= limit if ok_if_le else value >= limit
            t.append((desc, fmt_value(value), limit_text(limit, ok_if_le), ok))

    def limit_text(limit, le):
        return ("<= " if le else ">= ") + (f"{limit:g}x" if limit < 10 else f"{limit:g}")

    x = lambda v: f"{v:.3f}x"  # 3 decimals: a 0.65x that fails <= 0.65x must show why
    for load in ("wrk-c100", "wrk-c1000"):
        cpu = lambda s: med(summary, load, s, "cpu_us_per_req")
        rps = lambda s: med(summary, load, s, "rps")
        p99 = lambda s: med(summary, load, s, "p99_ms")
        cmp(f"{load} CPU/req ours/nginx", ratio(cpu("ours"), cpu("nginx")), 0.65, True, x)
        cmp(f"{load} CPU/req ours/h2o", ratio(cpu("ours"), cpu("h2o")), 0.7, True, x)
        cmp(f"{load} rps ours/nginx", ratio(rps("ours"), rps("nginx")), 1.2, False, x)
        cmp(f"{load} rps ours/h2o", ratio(rps("ours"), rps("h2o")), 1.1, False, x)
        cmp(f"{load} p99 ours/nginx", ratio(p99("ours"), p99("nginx")), 1.0, True, x)
        cmp(f"{load} CPU/req ours/bare", ratio(cpu("ours"), cpu("bare")), 1.15, True, x)
    # Pipelined: ours against the better of nginx and h2o.
    pipelined = pipelined_load(1).key
    best = max(((med(summary, pipelined, name, "rps"), name) for name in ("nginx", "h2o")
                if med(summary, pipelined, name, "rps") is not None), default=(None, None))
    ours_rps = med(summary, pipelined, "ours", "rps")
    cmp(f"{pipelined} rps ours/best of nginx, h2o", ratio(ours_rps, best[0]), PIPELINE_TARGET, False,
        lambda v: f"{v:.3f}x ({fmt(ours_rps, 0)} vs {best[1]}'s {fmt(best[0], 0)} req/s)")
    cmp("ab-c50 CPU/req ours/nginx",
        ratio(med(summary, "ab-c50", "ours", "cpu_us_per_req"), med(summary, "ab-c50", "nginx", "cpu_us_per_req")),
        0.85, True, x)
    # Issue 13: a connection per request at least as fast as h2o's, at no more CPU.
    for load in ("ab-c10", "ab-c50"):
        cmp(f"{load} rps ours/h2o",
            ratio(med(summary, load, "ours", "rps"), med(summary, load, "h2o", "rps")), 1.0, False, x)
        cmp(f"{load} CPU/req ours/h2o",
            ratio(med(summary, load, "ours", "cpu_us_per_req"), med(summary, load, "h2o", "cpu_us_per_req")),
            1.0, True, x)
    slow = special.get("slow", {})
    # Checked on ours only; the references say what the load tool reaches here at all.
    def with_refs(text, metric, fmt_ref):
        refs = [f"{label}: {fmt_ref(r[metric])}" for label, r in slow.get("references", {}).items()
                if r.get(metric) is not None]
        return text + (f" (reference {', '.join(refs)})" if refs else "")

    pct = lambda v: f"{v * 100:.1f}%"
    ms = lambda v: f"{v:.1f} ms"
    t.append(("slow efficiency (rps / 3333)",
              with_refs(pct(slow["efficiency"]) if slow.get("efficiency") is not None else "-", "efficiency", pct),
              ">= 98%", None if slow.get("efficiency") is None else slow["efficiency"] >= 0.98))
    # Issue 13: a SLOW request's CPU against the timer reference's (no
    # threads); the pool reference's ratio beside it shows the worker
    # model's own floor.
    refs = slow.get("references", {})
    timer_cpu = refs.get(f"bare (delay {SLOW_MS} ms)", {}).get("cpu_us_per_req")
    pool_cpu = refs.get(f"bare (pool, delay {SLOW_MS} ms)", {}).get("cpu_us_per_req")
    cmp("slow CPU/req ours/bare (delay)", ratio(slow.get("cpu_us_per_req"), timer_cpu), 1.2, True,
        lambda v: f"{v:.3f}x" + (f" (bare (pool)/bare (delay): {ratio(pool_cpu, timer_cpu):.3f}x)"
                                 if ratio(pool_cpu, timer_cpu) is not None else ""))
    t.append(("slow p99",
              with_refs(ms(slow["p99_ms"]) if slow.get("p99_ms") is not None else "-", "p99_ms", ms),
              "<= 35 ms", None if slow.get("p99_ms") is None else slow["p99_ms"] <= 35.0))
    queue = special.get("queue", {})
    t.append(("queue test time vs 6 s",
              f"{queue['seconds']:.3f} s ({queue['deviation'] * 100:+.2f}%)" if queue.get("seconds") else "-",
              "within 1%", None if queue.get("seconds") is None else abs(queue["deviation"]) <= 0.01))
    mixed = special.get("mixed", {})
    ref_ratio = (mixed.get("reference") or {}).get("ratio")
    t.append(("mixed: fast rps with slow load / alone",
              (f"{mixed['ratio'] * 100:.1f}%" if mixed.get("ratio") is not None else "-") +
              (f" (reference bare + nginx (echo_sleep): {ref_ratio * 100:.1f}%)" if ref_ratio is not None else ""),
              ">= 90%", None if mixed.get("ratio") is None else mixed["ratio"] >= 0.90))
    # The files phase is opt-in: its rows only when it ran.
    for key in files_keys():
        if key not in summary:
            continue
        for metric, unit, le, digits in (("cpu_us_per_req", "CPU us/req", True, 1), ("rps", "req/s", False, 0)):
            a, b = med(summary, key, "ours (files)", metric), med(summary, key, "nginx (files)", metric)
            cmp(f"{key} {unit} ours/nginx", ratio(a, b), 1.0, le,
                lambda v, a=a, b=b, unit=unit, digits=digits: f"{v:.3f}x ({fmt(a, digits)} vs {fmt(b, digits)} {unit})")
    # The upload and download phases are opt-in: their rows only when they ran.
    for key, metric, unit, ref, limit, le in TRANSFER_TARGETS:
        if key not in summary:
            continue
        a, b = med(summary, key, "ours", metric), med(summary, key, ref, metric)
        digits = 0 if metric == "mib_per_s" else 3
        cmp(f"{key} {unit} ours/{ref}", ratio(a, b), limit, le,
            lambda v: f"{v:.3f}x ({fmt(a, digits)} vs {fmt(b, digits)} {unit})")
    return t


def verdict(ok):
    return "n/a" if ok is None else ("PASS" if ok else "FAIL")


def write_report(path_base, args, meta, loads_order, summary, special, targets, runs):
    lines = []
    lines.append(f"# Server comparison {meta['started']}\n")
    lines.append(f"- machine: {meta['machine']}")
    lines.append(f"- versions: {meta['versions']}")
    lines.append(f"- options: threads={args.threads} rounds={args.rounds} duration={args.duration}s "
                 f"slow-requests={args.slow_requests} "
                 f"servers={','.join(args.servers)} phases={','.join(args.only)} pin={args.pin}"
                 f"{' QUICK' if args.quick else ''}")
    lines.append(f"- ours: {meta.get('ours', 'not run')}")
    lines.append("- figures: median over rounds, (min-max) when they differ; CPU = server utime+stime "
                 "per completed request; errors = socket errors + non-2xx (wrk), failed + non-2xx (ab), "
                 "failed (h2load: 4xx, 5xx, resets, time-outs)\n")
    others = [r["other_pct"] for r in runs if r.get("other_pct") is not None]
    if others and statistics.median(others) > 10:
        lines.append(f"- **WARNING: the machine was busy with other work during these runs (median other CPU "
                     f"{statistics.median(others):.0f}% of all CPUs): req/s and latencies are disturbed; "
                     "CPU/req suffers less. Re-run on a quiet machine before drawing conclusions.**")
    stalled = [f"{r['load']} {r['server']} ({r['syn_retransmits']})" for r in runs if r.get("syn_retransmits")]
    if stalled:
        lines.append("- SYN retransmits (1 s connect stalls, counted machine-wide) during: " + ", ".join(stalled)
                     + ": their p99 and req/s are the network's, not the server's")
    lines.append("- other %: CPU used meanwhile by neither the server nor the load generator (max over rounds), "
                 "steal %: the hypervisor's (max); more than a few % means a disturbed run\n")
    rows = []
    for load in loads_order:
        if own_section(load):
            continue  # their own sections, with MiB/s and their ratios
        for server in summary.get(load, {}):
            rows.append(f"| {load} | {server} | {run_cells(summary, load, server)} |")
    if rows:
        lines.append("| load | server | req/s | errors (max) | p50 ms | p99 ms | CPU us/req | other % | steal % |")
        lines.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        lines.extend(rows)
    lines.extend(pipelined_notes(loads_order, summary))
    lines.append("")
    ratio_lines = ratio_table(loads_order, summary)
    if ratio_lines:
        lines.append("## Ratios (medians; rps higher is better, CPU/req lower is better)\n")
        lines.extend(ratio_lines)
        lines.append("")
    if any(k in special for k in ("slow", "queue", "mixed")):
        lines.append("## Slow, queue and mixed phases (against their ideals)\n")
        lines.extend(describe_special(special))
        lines.append("")
    bodies = special.get("bodies")
    if bodies is None and any(l.startswith("bodies-") for l in summary):
        bodies = bodies_special(summary)  # the phase was interrupted: what it measured
    if bodies is not None:
        lines.append(f"## Response bodies (wrk -t1 -c{BODY_CONNECTIONS} --latency /test/bytes?N)\n")
        lines.extend(describe_bodies(bodies, summary))
        lines.append("")
    files = special.get("files")
    if files is None and any(l.startswith("files-") for l in summary):
        files = files_special(summary)  # the phase was interrupted: what it measured
    if files is not None:
        lines.append(f"## Static files ({FILES_TITLE})\n")
        lines.extend(describe_files(files, summary))
        lines.append("")
    for phase in ("upload", "download"):
        t = special.get(phase)
        if t is None and any(key in summary for key in transfer_keys(phase)):
            t = transfer_special(phase, summary, runs)  # the phase was interrupted: what it measured
        if t is not None:
            lines.append(f"## {phase.capitalize()} ({TRANSFER_TITLES[phase]})\n")
            lines.extend(describe_transfer(phase, t, summary))
            lines.append("")
    lines.append("## Targets\n")
    lines.append("| target | value | limit | result |")
    lines.append("| --- | --- | --- | --- |")
    for desc, value, limit, ok in targets:
        lines.append(f"| {desc} | {value} | {limit} | {verdict(ok)} |")
    lines.append("")
    if os.path.exists(path_base + ".png"):
        lines.append(f"![chart]({os.path.basename(path_base)}.png)\n")
    with open(path_base + ".md", "w") as f:
        f.write("\n".join(lines))
    with open(path_base + ".json", "w") as f:
        json.dump({"meta": meta, "options": vars(args), "summary": summary, "special": special,
                   "targets": [{"target": d, "value": v, "limit": l, "result": verdict(o)}
                               for d, v, l, o in targets],
                   "runs": runs}, f, indent=2)
    return "\n".join(lines)


def pipelined_notes(loads_order, summary):
    """What the main table cannot say of the pipelined load: h2load gives no
    percentiles, only a mean time per request."""
    out = []
    for load in loads_order:
        if load.startswith("pipelined-") and summary.get(load):
            means = [f"{server} {fmt(med(summary, load, server, 'mean_ms'), 2)} ms" for server in summary[load]]
            out.append(f"\n- {load}: h2load --h1 -c{PIPELINE_CONNECTIONS} -m{PIPELINE_DEPTH} "
                       f"({PIPELINE_DEPTH} requests in flight per connection) gives no percentiles; "
                       f"its mean time per request (medians): {', '.join(means)}")
    return out


def describe_special(special):
    out = []
    if "slow" in special:
        out.extend(describe_slow(special["slow"]))
    if "queue" in special:
        q = special["queue"]
        out.append(f"- queue (ours -A 100 -C 1000 -w 1 -D {SLOW_MS}, ab -n 200 -c 100 /test/slow): "
                   f"{q['seconds']:.3f} s (min {q['min_s']:.3f}, max {q['max_s']:.3f}) for an ideal "
                   f"{q['expected']:.3f} s: {q['deviation'] * 100:+.2f}%")
    if "mixed" in special:
        m = special["mixed"]
        out.append(f"- mixed (ours -w 300 -D {SLOW_MS}): wrk -c100 /test/fast alone {m['fast_alone_rps']:,.0f} req/s, "
                   f"beside ab -c100 /test/slow {m['fast_with_slow_rps']:,.0f} req/s = {m['ratio'] * 100:.1f}%; "
                   f"the slow load meanwhile did {m['slow_rps_beside']:,.0f} req/s "
                   "(CPU/req of mixed-with-slow counts the slow requests' CPU but only the fast requests)")
        ref = m.get("reference")
        if ref and ref.get("ratio") is not None:
            out.append(f"- mixed reference, the same loads interleaved with ours against the servers that do the "
                       f"least on each path (the bare responder for the fast load, nginx's echo_sleep for the slow "
                       f"one): fast alone {ref['fast_alone_rps']:,.0f} req/s, beside the slow load "
                       f"{ref['fast_with_slow_rps']:,.0f} req/s = {ref['ratio'] * 100:.1f}% (slow "
                       f"{ref['slow_rps_beside']:,.0f} req/s): what the load tools themselves take from the fast "
                       f"load on this machine")
        out.extend(describe_cpu_split(m))
    return out


def describe_cpu_split(m):
    """The mixed phase's table of where the CPUs went while wrk ran."""
    splits = m.get("cpu_split") or {}
    rows = [(title, splits[key]) for key, title in (("alone", "fast alone"), ("with_slow", "fast beside slow"))
            if splits.get(key)]
    if not rows:
        return []
    cpus = m.get("cpus") or os.cpu_count()
    out = [f"- where the CPUs went while wrk ran (medians over rounds): CPU per fast request and in % of one "
           f"CPU ({cpus} CPUs = {cpus * 100}%). Ring thread(s): ours' threads not named {WORKER_THREAD_NAME} "
           "(/proc/PID/task/*/stat); workers: ours' total (/proc/PID/stat, summed before the rounding to "
           "10 ms ticks that makes each worker's own figure read 0) less the ring threads; wrk's and ab's own "
           "utime+stime. Part of the loopback TCP work of one side is charged to the other.\n",
           "  | run | " + " | ".join(title for _, title in SPLIT_PARTS) + " | idle or other |",
           "  | --- |" + " ---: |" * (len(SPLIT_PARTS) + 1)]
    for title, split in rows:
        cells = []
        for part, _ in SPLIT_PARTS:
            p = split.get(part)
            cells.append(f"{fmt(p.get('us_per_fast_req'), 2)} us/req, {fmt(p.get('pct_cpu'), 0)}%" if p else "-")
        used = split.get("all", {}).get("pct_cpu")
        cells.append(f"{fmt(max(0.0, cpus * 100 - used), 0)}%" if used is not None else "-")
        out.append(f"  | {title} | " + " | ".join(cells) + " |")
    return out


def describe_slow(s):
    """The slow phase: ours and the references against the ideal, and what that shows."""
    out = []
    ideal = s["ideal_rps"]
    n = s.get("requests") or SLOW_REQUESTS
    if s.get("rps") is not None:
        out.append(f"- slow (ours -w 300 -D {SLOW_MS}, ab -n {n} -c {SLOW_CONCURRENCY} /test/slow): "
                   f"{s['rps']:,.0f} req/s of an ideal {ideal:,.0f} = efficiency {s['efficiency'] * 100:.1f}%, "
                   f"p99 {fmt(s['p99_ms'], 1)} ms")
    refs = s.get("references", {})
    if refs:
        with_ours = ", interleaved with ours" if s.get("rps") is not None else ""
        out.append(f"- slow references, the same load{with_ours}, each answer after exactly {SLOW_MS} ms: "
                   f"bare (delay) and nginx (echo_sleep) on a timer in their one event loop, no threads: "
                   "what ab with a connection per request reaches on this machine at all; bare (pool) "
                   f"hands each request to one of {SLOW_POOL_THREADS} threads as ours does (a queue push, a "
                   "semaphore wake, the sleep, one MSG_RING back) and does nothing else: the least CPU "
                   "ours' worker model can cost per request:\n")
        out.append("  | server | req/s | efficiency | p50 ms | p99 ms | CPU us/req |")
        out.append("  | --- | ---: | ---: | ---: | ---: | ---: |")
        rows = ([("ours (slow)", s)] if s.get("rps") is not None else []) + list(refs.items())
        for label, r in rows:
            eff = f"{r['efficiency'] * 100:.1f}%" if r.get("efficiency") is not None else "-"
            out.append(f"  | {label} | {fmt(r.get('rps'), 0)} | {eff} | {fmt(r.get('p50_ms'), 2)} | "
                       f"{fmt(r.get('p99_ms'), 2)} | {fmt(r.get('cpu_us_per_req'), 2)} |")
        out.append("")
        for label, r in refs.items():
            rr = ratio(s.get("rps"), r.get("rps"))
            rc = ratio(s.get("cpu_us_per_req"), r.get("cpu_us_per_req"))
            if rr is not None:
                out.append(f"- slow ours/{label}: {rr:.3f}x req/s, efficiency "
                           f"{s['efficiency'] * 100:.1f}% vs {r['efficiency'] * 100:.1f}%"
                           + (f", CPU/req {rc:.2f}x" if rc is not None else ""))
        best = max((r["efficiency"] for r in refs.values() if r.get("efficiency") is not None), default=None)
        if best is not None and best < 0.98:
            out.append(f"- no reference reaches the 98% target ({best * 100:.1f}% at best): with this load the "
                       "limit is ab and a connection per request on this machine, not the server")
    for note in s.get("notes", []):
        out.append(f"- {note}")
    return out


# (name, numerator, denominator) of the bodies phase's ratio lines.
BODY_RATIOS = [("send-zc/copy", "ours (send-zc)", "ours (copy)"),
               ("send-zc/nginx", "ours (send-zc)", "nginx (sendfile)"),
               ("copy/nginx", "ours (copy)", "nginx (sendfile)")]


def bodies_phase_specs(servers):
    """(specs, optional) of the bodies phase: ours with zero-copy send as
    shipped and ours --send-zc=0 when ours is among servers, nginx serving
    the same bodies from files when nginx is (optional: left out if it does
    not start or answers wrong). h2o and bare are not part of it."""
    specs, optional = [], []
    if "ours" in servers:
        specs += [("ours", "send-zc"), ("ours", "copy")]
    if "nginx" in servers:
        specs.append(("nginx", "bodies"))
        optional.append(("nginx", "bodies"))
    return specs, optional


def bodies_special(summary, zerocopy=None, notes=(), sizes=BODY_SIZES):
    """The bodies phase's ratios per size (medians), ours' zero-copy counters
    ({label: parse_zc_metrics(...)}) and notes; a send-zc run that sent
    nothing zero-copy (or a copy run that did) is called out."""
    out = {"sizes": [], "zerocopy": dict(zerocopy or {}), "notes": list(notes)}
    for n in sizes:
        key = body_load(n, 1).key
        if key not in summary:
            continue
        ratios = {}
        for name, a, b in BODY_RATIOS:
            rr = ratio(med(summary, key, a, "rps"), med(summary, key, b, "rps"))
            rc = ratio(med(summary, key, a, "cpu_us_per_req"), med(summary, key, b, "cpu_us_per_req"))
            if rr is not None or rc is not None:
                ratios[name] = {"rps": rr, "cpu_us_per_req": rc}
        out["sizes"].append({"bytes": n, "load": key, "ratios": ratios})
    zc = out["zerocopy"]
    if "ours (send-zc)" in zc and not zc["ours (send-zc)"].get("sends_zc"):
        out["notes"].append("**ours (send-zc) issued no zero-copy send (kernel without IORING_OP_SEND_ZC, "
                            "or the sizes are below --send-zc): its rows measure copying too**")
    if zc.get("ours (copy)", {}).get("sends_zc"):
        out["notes"].append("**ours (copy) issued zero-copy sends although started with --send-zc=0**")
    return out


def own_section(load):
    """Loads the main table and its ratios leave out: they have a section of their own."""
    return load.startswith(("bodies-", "upload-", "download-", "files-"))


TRANSFER_TITLES = {
    "upload": f"POST {size_text(UPLOAD_BYTES)} to {UPLOAD_PATH}, Content-Length and chunked, one connection",
    "download": f"wrk -t1 -c1 GET {DOWNLOAD_PATH}",
}
# (name, numerator, denominator) of the ratio lines of each transfer phase.
TRANSFER_RATIOS = {
    "upload": [("ours/nginx", "ours", "nginx (discard)")],
    "download": [("ours/nginx", "ours", "nginx (sendfile)"),
                 ("ours/ours (copy)", "ours", "ours (copy)"),
                 ("ours (copy)/nginx", "ours (copy)", "nginx (sendfile)")],
}
# (load, metric, unit, reference, limit, ok if <=): the targets of the transfer phases.
TRANSFER_TARGETS = [(f"upload-{f}", metric, unit, "nginx (discard)", 1.0, le)
                    for f in UPLOAD_FRAMINGS
                    for metric, unit, le in (("mib_per_s", "MiB/s", False), ("cpu_ms_per_mib", "CPU ms/MiB", True))]
TRANSFER_TARGETS.append((download_load(1).key, "mib_per_s", "MiB/s", "nginx (sendfile)", 0.9, False))


def transfer_keys(phase):
    return ([f"upload-{f}" for f in UPLOAD_FRAMINGS] if phase == "upload" else [download_load(1).key])


def transfer_phase_specs(phase, servers):
    """(specs, optional) of the upload or download phase. upload: ours as in
    the fast phases, nginx discarding the body; download: ours (default
    --send-zc) and ours --send-zc=0, nginx sending a file. nginx is optional
    (left out with a note if it does not start or answers wrong); h2o and
    bare are not part of these phases."""
    specs, optional = [], []
    if "ours" in servers:
        specs += [("ours", None)] + ([("ours", "copy")] if phase == "download" else [])
    if "nginx" in servers:
        specs.append(("nginx", phase))
        optional.append(("nginx", phase))
    return specs, optional


def transfer_special(phase, summary, runs=(), counters=None, notes=()):
    """The ratios (medians of MiB/s and CPU ms/MiB) per load of a transfer
    phase, ours' counters ({label: parse_counters(...)}) and notes: runs that
    went wrong, servers that answered an upload before reading it, a send-zc
    that did not happen, counters of trouble."""
    keys = transfer_keys(phase)
    out = {"loads": [], "counters": dict(counters or {}), "notes": list(notes)}
    for key in keys:
        if key not in summary:
            continue
        ratios = {}
        for name, a, b in TRANSFER_RATIOS[phase]:
            rm = ratio(med(summary, key, a, "mib_per_s"), med(summary, key, b, "mib_per_s"))
            rc = ratio(med(summary, key, a, "cpu_ms_per_mib"), med(summary, key, b, "cpu_ms_per_mib"))
            if rm is not None or rc is not None:
                ratios[name] = {"mib_per_s": rm, "cpu_ms_per_mib": rc}
        out["loads"].append({"load": key, "ratios": ratios})
    early, runs_of = {}, {}
    for r in runs:
        if r.get("load") not in keys:
            continue
        runs_of[r["server"]] = runs_of.get(r["server"], 0) + 1
        if r.get("problems"):
            out["notes"].append(f"**{r['load']} {r['server']} round {r.get('round', 0) + 1}: "
                                f"{'; '.join(r['problems'])}**")
        if r.get("answered_after_bytes") is not None:
            early.setdefault(r["server"], []).append(r["answered_after_bytes"])
    for label, sent in early.items():
        lo, hi = min(sent) / 2 ** 20, max(sent) / 2 ** 20
        out["notes"].append(f"{label} answered before the whole body was sent (after "
                            + (f"{lo:.0f}" if lo == hi else f"{lo:.0f}-{hi:.0f}") + " MiB) and read the rest "
                            "after its answer: its time runs to the answer to the next request on the "
                            "connection, like everyone's")
    # What the client reached at all: a server below that is not held back by it.
    for entry in out["loads"]:
        best = max(((s.get("mib_per_s", {}).get("max"), label) for label, s in summary[entry["load"]].items()
                    if s.get("mib_per_s")), default=None)
        if best is not None:
            out["notes"].append(f"{entry['load']}: the client reached {best[0]:,.0f} MiB/s at best "
                                f"(against {best[1]}): a server below that is not held back by the client")
    c = out["counters"]
    if phase == "download":
        if "ours" in c and not c["ours"].get("sends_zc"):
            out["notes"].append("ours (default --send-zc) issued no zero-copy send in this phase (its sends are "
                                "below the --send-zc threshold, or the kernel has no IORING_OP_SEND_ZC): "
                                "ours and ours (copy) both copy")
        if c.get("ours (copy)", {}).get("sends_zc"):
            out["notes"].append("**ours (copy) issued zero-copy sends although started with --send-zc=0**")
    for label, counts in c.items():
        trouble = {k: counts[k] for k in OURS_TROUBLE_COUNTERS if counts.get(k)}
        if phase == "download" and 0 < trouble.get("aborted_streams", 0) <= runs_of.get(label, 0):
            # wrk closes its connection in the middle of a response when its time is up: one per run.
            del trouble["aborted_streams"]
            out["notes"].append(f"{label}: aborted_streams {counts['aborted_streams']:,}, no more than its "
                                f"{runs_of[label]} runs: wrk closes its connection in the middle of a "
                                "response when its time is up")
        if trouble:
            out["notes"].append(f"**{label}: " + ", ".join(f"{k} {v:,}" for k, v in trouble.items()) + "**")
    return out


def transfer_cells(summary, load, server, with_rps=False):
    """MiB/s [responses/s] errors server-CPU(s/GiB, ms/MiB) client-CPU ctx/GiB RSS other steal."""
    s = summary[load][server]
    cells = [fmt_range(s.get("mib_per_s"), 0)]
    if with_rps:
        cells.append(fmt_range(s.get("rps"), 1))
    rss = (f"{fmt(s['rss_min_mib']['min'], 1)}-{fmt(s['rss_max_mib']['max'], 1)}"
           if "rss_min_mib" in s and "rss_max_mib" in s else "-")
    cells += [fmt(s["errors"]["max"], 0) if "errors" in s else "-",
              fmt_range(s.get("cpu_s_per_gib"), 2),
              fmt(med(summary, load, server, "cpu_ms_per_mib"), 3),
              fmt_range(s.get("client_cpu_s_per_gib"), 2),
              fmt(med(summary, load, server, "ctx_per_gib"), 0),
              rss,
              fmt(s["other_pct"]["max"], 0) if "other_pct" in s else "-",
              fmt(s["steal_pct"]["max"], 0) if "steal_pct" in s else "-"]
    return " | ".join(cells)


def describe_transfer(phase, t, summary):
    if phase == "upload":
        out = [f"- client: `compare.py --upload-client`, one connection (pinned like wrk), sending one fixed "
               f"{size_text(UPLOAD_BUFFER)} buffer again and again (chunked: {UPLOAD_BUFFER // UPLOAD_CHUNK} chunks "
               f"of {size_text(UPLOAD_CHUNK)} per buffer), then GET /test/fast on the same connection; the time "
               "runs from the first byte to that answer, which no server can give before it has read the whole "
               "body. MiB/s counts the body, not the chunk framing.",
               f"- ours: POST {UPLOAD_PATH}, read on a worker (ReadBody into 64 KiB) and dropped, answered with "
               "the length read, which must be the length sent. nginx (discard): `return 204` with "
               "`client_max_body_size 0`: nginx recv()s the body into a 4 KiB buffer and drops it "
               "(ngx_http_discard_request_body); nothing is written anywhere.",
               "- CPU: utime+stime of the server's processes (all threads) over the run; client CPU: the "
               "upload client's (a python3 process, start-up included); ctx: the server's context switches "
               "(all threads); RSS: the server's VmRSS, sampled every "
               f"{RSS_INTERVAL:g} s during the runs (min-max over all rounds)."]
        header = "| framing | server | MiB/s | errors (max) | server CPU s/GiB | server CPU ms/MiB | " \
                 "client CPU s/GiB | ctx switches/GiB | RSS MiB | other % | steal % |"
        align = "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    else:
        out = [f"- wrk -t1 -c1 fetches {size_text(DOWNLOAD_BYTES)} again and again on one keep-alive connection. "
               f"ours: GET {DOWNLOAD_PATH}, written on a worker in {size_text(DOWNLOAD_CHUNK)} writes and sent "
               "chunked; ours (copy): the same with `--send-zc=0`. nginx (sendfile): the same bytes from a file "
               "in the page cache (sendfile on, open_file_cache), Content-Length.",
               "- MiB/s: wrk's Transfer/sec (headers and chunk framing included); CPU per MiB of that; client "
               "CPU: wrk's; ctx and RSS as in the upload phase."]
        header = "| load | server | MiB/s | responses/s | errors (max) | server CPU s/GiB | server CPU ms/MiB | " \
                 "client CPU s/GiB | ctx switches/GiB | RSS MiB | other % | steal % |"
        align = "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    counters = t.get("counters", {})
    if counters:
        out.append("- ours' counters over the phase (/metrics, the checks before measuring included): "
                   + "; ".join(f"{label}: " + ", ".join(f"{k} {v:,}" for k, v in c.items() if v)
                               for label, c in counters.items()))
    out += ["", header, align]
    for entry in t.get("loads", []):
        load = entry["load"]
        first = load[len("upload-"):] if phase == "upload" else load
        for server in summary.get(load, {}):
            out.append(f"| {first} | {server} | {transfer_cells(summary, load, server, phase == 'download')} |")
    rows = [f"| {entry['load']} | {name} | {fmt(r['mib_per_s'], 2)}x | {fmt(r['cpu_ms_per_mib'], 2)}x |"
            for entry in t.get("loads", []) for name, r in entry["ratios"].items()]
    if rows:
        out.append("")
        out.append("Ratios (medians; MiB/s higher is better, CPU/MiB lower is better):\n")
        out += ["| load | ratio | MiB/s | CPU/MiB |", "| --- | --- | ---: | ---: |"] + rows
    notes = t.get("notes", [])
    if notes:
        out.append("")
        out += [f"- {note}" for note in notes]
    return out


def run_cells(summary, load, server, with_mib=False):
    """The figure columns of one server's row: req/s [MiB/s] errors p50 p99 CPU other steal."""
    s = summary[load][server]
    cells = [fmt_range(s.get("rps"), 0)]
    if with_mib:
        cells.append(fmt_range(s.get("mib_per_s"), 0))
    cells += [fmt(s["errors"]["max"], 0) if "errors" in s else "-",
              fmt(med(summary, load, server, "p50_ms"), 2),
              fmt(med(summary, load, server, "p99_ms"), 2),
              fmt_range(s.get("cpu_us_per_req"), 2),
              fmt(s["other_pct"]["max"], 0) if "other_pct" in s else "-",
              fmt(s["steal_pct"]["max"], 0) if "steal_pct" in s else "-"]
    return " | ".join(cells)


def describe_bodies(b, summary):
    out = [f"- ours (send-zc): `--send-zc={min(BODY_SIZES)}`, every size sent with IORING_OP_SEND_ZC "
           "(the shipped default starts at 128 KiB); ours (copy): `--send-zc=0`. Both build the body per request. nginx (sendfile): the same N bytes "
           "of 'x' from a file in the page cache (sendfile on, open_file_cache), nothing built per request."]
    zc = b.get("zerocopy", {})
    if zc:
        parts = []
        for label, c in zc.items():
            text = f"{label} {c.get('sends_zc', 0):,}"
            if c.get("sends_zc"):
                text += (f" (completed by copying: {c.get('copied', 0):,}, "
                         f"refused for the locked-memory limit: {c.get('refused', 0):,})")
            parts.append(text)
        out.append("- zero-copy sends over the phase (ours' /metrics): " + "; ".join(parts))
    out.append("")
    out.append("| size | server | req/s | MiB/s | errors (max) | p50 ms | p99 ms | CPU us/req | other % | steal % |")
    out.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for size in b.get("sizes", []):
        load = size["load"]
        for server in summary.get(load, {}):
            out.append(f"| {size_text(size['bytes'])} | {server} | "
                       f"{run_cells(summary, load, server, with_mib=True)} |")
    rows = [f"| {size_text(size['bytes'])} | {name} | {fmt(r['rps'], 2)}x | {fmt(r['cpu_us_per_req'], 2)}x |"
            for size in b.get("sizes", []) for name, r in size["ratios"].items()]
    if rows:
        out.append("")
        out.append("Ratios (medians; req/s higher is better, CPU/req lower is better):\n")
        out += ["| size | ratio | req/s | CPU/req |", "| --- | --- | ---: | ---: |"] + rows
    notes = b.get("notes", [])
    if notes:
        out.append("")
        out += [f"- {note}" for note in notes]
    return out


FILES_TITLE = (f"wrk -t1 -c{FILE_CONNECTIONS} --latency GET /f<size>.bin; "
               f"ab -c{FILE_AB_CONCURRENCY} GET /{file_name(FILE_AB_SIZE)}, a connection per request")
# (name, numerator, denominator) of the files phase's ratio lines.
FILE_RATIOS = [("ours/nginx", "ours (files)", "nginx (files)"), ("ours/h2o", "ours (files)", "h2o (files)")]


def files_keys(sizes=FILE_SIZES):
    """The files phase's load keys, in the order they run."""
    return [load.key for load in files_loads(1, 1, sizes)]


def files_special(summary, notes=(), sizes=FILE_SIZES):
    """The files phase per size: its loads (wrk, and ab on the FILE_AB_SIZE
    file) with the ratios ours/nginx and ours/h2o of the medians, and notes;
    ours left out for not knowing --root is said in bold."""
    out = {"sizes": [], "notes": list(notes)}
    for n in sizes:
        entry = {"bytes": n, "file": file_name(n), "loads": []}
        for load in files_loads(1, 1, [n]):
            if load.key not in summary:
                continue
            ratios = {}
            for name, a, b in FILE_RATIOS:
                rr = ratio(med(summary, load.key, a, "rps"), med(summary, load.key, b, "rps"))
                rc = ratio(med(summary, load.key, a, "cpu_us_per_req"), med(summary, load.key, b, "cpu_us_per_req"))
                if rr is not None or rc is not None:
                    ratios[name] = {"rps": rr, "cpu_us_per_req": rc}
            entry["loads"].append({"load": load.key, "title": load.title, "ratios": ratios})
        if entry["loads"]:
            out["sizes"].append(entry)
    if any("unknown option '--root" in note for note in out["notes"]):
        out["notes"].insert(0, "**ours does not know --root yet (it exited at start-up: unknown option): "
                               "the phase ran without it, no target could be checked**")
    return out


def describe_files(f, summary):
    out = ["- a temporary document root with one file of random bytes per size; ours (files): "
           "`--root=DIR` (DIR serves the GET and HEAD paths no route claims), nginx (files): `root DIR; "
           "sendfile on; tcp_nopush on; open_file_cache max=1000 inactive=60s; open_file_cache_valid 1s;`, "
           "h2o (files): `file.dir: DIR`; access logs off, ETag and the rest at each server's defaults. Every "
           "server first answered each file once (200, Content-Length, the file's bytes): its caches are warm.",
           "- MiB/s: req/s x the file's size (bodies only); CPU us/req: the server's utime+stime per request."]
    for size in f.get("sizes", []):
        out.append("")
        out.append(f"### {size_text(size['bytes'])} (GET /{size['file']})\n")
        out.append("| load | server | req/s | MiB/s | errors (max) | p50 ms | p99 ms | CPU us/req | other % | steal % |")
        out.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for entry in size["loads"]:
            for server in summary.get(entry["load"], {}):
                out.append(f"| {entry['title']} | {server} | {run_cells(summary, entry['load'], server, with_mib=True)} |")
        rows = [f"| {entry['title']} | {name} | {fmt(r['rps'], 2)}x | {fmt(r['cpu_us_per_req'], 2)}x |"
                for entry in size["loads"] for name, r in entry["ratios"].items()]
        if rows:
            out.append("")
            out += ["| load | ratio | req/s and MiB/s | CPU/req |", "| --- | --- | ---: | ---: |"] + rows
    notes = f.get("notes", [])
    if notes:
        out.append("")
        out += [f"- {note}" for note in notes]
    return out


def ratio_table(loads_order, summary):
    rows = []
    for load in loads_order:
        if own_section(load):
            continue  # send-zc/copy and the others in describe_bodies, describe_transfer
        servers = summary.get(load, {})
        ours = next((s for s in servers if s.startswith("ours")), None)
        if ours is None:
            continue
        for other in servers:
            if other == ours:
                continue
            rr = ratio(med(summary, load, ours, "rps"), med(summary, load, other, "rps"))
            rc = ratio(med(summary, load, ours, "cpu_us_per_req"), med(summary, load, other, "cpu_us_per_req"))
            rows.append(f"| {load} | ours/{other} | {fmt(rr, 2)}x | {fmt(rc, 2)}x |")
    if not rows:
        return []
    return ["| load | ratio | req/s | CPU/req |", "| --- | --- | ---: | ---: |"] + rows


def draw_chart(path_png, loads_order, summary):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        warn("matplotlib missing (apt-get install python3-matplotlib): no chart")
        return
    # Only the fast loads that ran against the comparison servers (not slow, queue, mixed).
    loads = [l for l in loads_order if l.startswith(("wrk-", "ab-", "pipelined-"))
             and any(not k.startswith("ours (") for k in summary.get(l, {}))]
    if not loads:
        return
    families = []
    for l in loads:
        for s in summary[l]:
            fam = s.split(" ")[0]
            if fam not in families:
                families.append(fam)
    # Keep-alive, connection-per-request and pipelined costs differ tenfold: one column each.
    groups = [(t, [l for l in loads if l.startswith(p)])
              for t, p in (("keep-alive (wrk)", "wrk-"), ("connection per request (ab)", "ab-"),
                           (f"pipelined (h2load -m{PIPELINE_DEPTH})", "pipelined-"))]
    groups = [g for g in groups if g[1]]
    fig, axes = plt.subplots(2, len(groups), figsize=(6 * len(groups) + 1, 8), squeeze=False)
    width = 0.8 / max(1, len(families))
    for col, (title, group) in enumerate(groups):
        for row, (metric, ylabel) in enumerate((("rps", "requests/s"), ("cpu_us_per_req", "server CPU us/request"))):
            ax = axes[row][col]
            for i, fam in enumerate(families):
                xs, ys, lo, hi = [], [], [], []
                for j, l in enumerate(group):
                    s = next((v for k, v in summary[l].items() if k.split(" ")[0] == fam), None)
                    if s and metric in s:
                        xs.append(j + (i - (len(families) - 1) / 2) * width)
                        ys.append(s[metric]["median"])
                        lo.append(s[metric]["median"] - s[metric]["min"])
                        hi.append(s[metric]["max"] - s[metric]["median"])
                ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=fam)
            ax.set_xticks(range(len(group)))
            ax.set_xticklabels(group)
            ax.set_ylabel(ylabel)
            ax.grid(axis="y", alpha=0.3)
            if row == 0:
                ax.set_title(f"{title}: median, bars span min-max")
    axes[0][0].legend()
    fig.tight_layout()
    fig.savefig(path_png, dpi=100)
    plt.close(fig)


# ----------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------

def build(args):
    startup = ["bazel"]
    if args.bazel_output_base:
        startup.append(f"--output_base={args.bazel_output_base}")
    targets = []
    if "ours" in args.servers and not args.ours_binary:
        targets.append("//src:server")
    if "bare" in args.servers:
        targets.append("//perf:bare_responder")
    # With a private output base, leave the workspace's bazel-* links alone.
    extra = ["--symlink_prefix=/"] if args.bazel_output_base else []
    if targets and not args.skip_build:
        log(f"building {' '.join(targets)} ...")
        p = subprocess.run(startup + ["build", "-c", "opt"] + extra + targets, cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            out = "\n".join(l for l in p.stdout.splitlines() if "linux-sandbox" not in l)
            if "ours" in args.servers and args.allow_missing_ours:
                warn("building //src:server failed; --allow-missing-ours given: running WITHOUT ours\n"
                     + out[-3000:])
                args.servers.remove("ours")
                return build(args)
            raise RuntimeError("bazel build failed (use --allow-missing-ours to run without ours):\n"
                               + out[-5000:])
    p = subprocess.run(startup + ["info", "-c", "opt", "bazel-bin"], cwd=ROOT,
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True)
    bin_dir = p.stdout.strip()
    for name, rel in (("ours", "src/server"), ("bare", "perf/bare_responder")):
        path = args.ours_binary if name == "ours" and args.ours_binary else os.path.join(bin_dir, rel)
        if name in args.servers and not os.access(path, os.X_OK):
            if name == "ours" and args.allow_missing_ours:
                warn(f"{path} missing; --allow-missing-ours given: running WITHOUT ours")
                args.servers.remove("ours")
            else:
                raise RuntimeError(f"{path} is missing")
    return bin_dir


def versions():
    def first_line(cmd):
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=10)
            return p.stdout.strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "?"
    return "; ".join([first_line(["nginx", "-v"]), first_line(["h2o", "--version"]),
                      first_line(["wrk", "--version"]).split(" [")[0],
                      first_line(["h2load", "--version"]),
                      first_line(["ab", "-V"])])


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 65536) if hard != resource.RLIM_INFINITY else 65536
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=1,
                   help="server threads: ours -A N, nginx worker_processes N, h2o num-threads N (default 1)")
    p.add_argument("--workers", type=int, default=4, help="ours -w for the fast phases (default 4)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of every load on every server (default 3)")
    p.add_argument("--duration", type=int, default=10, help="seconds of every wrk run (default 10)")
    p.add_argument("--ab-requests", type=int, default=20000, help="requests of every ab run (default 20000)")
    p.add_argument("--slow-requests", type=int, default=None,
                   help=f"requests of every slow-phase ab run (default {SLOW_REQUESTS}, with --quick "
                   f"{SLOW_REQUESTS_QUICK}): enough load that a 10 ms CPU tick is ~1 us/req")
    p.add_argument("--only", default=",".join(DEFAULT_PHASES),
                   help="phases, comma-separated: " + ",".join(ALL_PHASES) + " (default: all but bodies, "
                   "which takes ~5 minutes at the defaults: --only bodies, upload and download: "
                   "--only upload,download, and files: --only files)")
    p.add_argument("--servers", default=",".join(ALL_SERVERS), help="servers: " + ",".join(ALL_SERVERS))
    p.add_argument("--port-base", type=int, default=18080, help=f"first of {PORT_COUNT} loopback ports (default 18080)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 1 round, 2 s wrk runs, 2000-request ab runs (under 2 minutes)")
    p.add_argument("--allow-missing-ours", action="store_true",
                   help="if //src:server does not build, run the others anyway (says so loudly)")
    p.add_argument("--bazel-output-base", help="bazel --output_base for the build (keeps bazel-* links)")
    p.add_argument("--skip-build", action="store_true", help="use the binaries already built")
    p.add_argument("--ours-binary", help="run this binary as ours instead of building //src:server "
                   "(e.g. an older build to compare against)")
    p.add_argument("--ours-args", default="", help="extra flags for ours, e.g. '-C 4096'")
    p.add_argument("--no-pin", dest="pin", action="store_false",
                   help="do not pin server and load to separate CPUs (pinning is on with --threads 1)")
    p.add_argument("--server-cpu", type=int, default=1, help="CPU for the server when pinning (default 1)")
    p.add_argument("--load-cpu", type=int, default=0, help="CPU for wrk/ab when pinning (default 0)")
    p.add_argument("--out", default=RESULTS_DIR, help="results directory (default perf/results)")
    args = p.parse_args(argv)
    args.only = [x for x in args.only.split(",") if x]
    args.servers = [x for x in args.servers.split(",") if x]
    for x in args.only:
        if x not in ALL_PHASES:
            p.error(f"unknown phase {x}")
    for x in args.servers:
        if x not in ALL_SERVERS:
            p.error(f"unknown server {x}")
    if args.quick:
        args.rounds = 1
        args.duration = 2
        args.ab_requests = 2000
    if args.slow_requests is None:
        args.slow_requests = SLOW_REQUESTS_QUICK if args.quick else SLOW_REQUESTS
    if args.slow_requests < 1:
        p.error("--slow-requests must be at least 1")
    if args.threads != 1 or os.cpu_count() < 2:
        args.pin = False
    return args


def main(argv):
    args = parse_args(argv)
    nofile = raise_nofile()
    if nofile < 4200:
        warn(f"RLIMIT_NOFILE is {nofile}: wrk -c2000 may fail (ulimit -n 65536)")
    started = datetime.datetime.now()
    stamp = started.strftime("%Y%m%d-%H%M%S")
    os.makedirs(args.out, exist_ok=True)
    path_base = os.path.join(args.out, f"compare-{stamp}")

    if "ours" not in args.servers:
        warn("ours is NOT part of this run (--servers without ours): no targets can be checked")
    bin_dir = build(args)
    ours_only = [p for p in ("queue", "mixed") if p in args.only]
    slow_specs, slow_optional, slow_notes = slow_phase_specs(args.servers)
    if "slow" in args.only and not slow_specs:
        ours_only.insert(0, "slow")
    if ours_only and "ours" not in args.servers:
        warn(f"skipping {','.join(ours_only)}: they need ours")

    meta = {"started": started.isoformat(timespec="seconds"),
            "machine": f"{os.cpu_count()} CPUs, {os.uname().release}",
            "versions": versions()}
    if "ours" in args.servers:
        # The report names the target, not this machine's output path.
        meta["ours"] = args.ours_binary or "bazel-bin/src/server (bazel build -c opt //src:server)"
    load_cpu = args.load_cpu if args.pin else None

    workdir = tempfile.mkdtemp(prefix="perf-compare-")
    servers = Servers(args, workdir, bin_dir)
    runs, summary, special, loads_order = [], {}, {}, []

    def run_matrix(loads, specs, optional=(), notes=None, verify=None, before_stop=None,
                   measure=measured_run, line=run_line):
        """Every load against every server, interleaved, --rounds times;
        before_stop(started) runs after the last load, before the servers stop.
        measure(load, server, workdir, load_cpu) takes a run, line(load, r) says it."""
        started = servers.start(specs, optional, notes, verify)
        width = max([13] + [len(s.label) for s in started])
        for load in loads:
            loads_order.append(load.key)
            per_server = {s.label: [] for s in started}
            for rnd in range(args.rounds):
                for server in started:
                    r = measure(load, server, workdir, load_cpu)
                    r["round"] = rnd
                    runs.append(r)
                    per_server[server.label].append(r)
                    log(f"  {load.key:10} {server.label:{width}} round {rnd + 1}: {line(load, r)}")
            summary[load.key] = {k: summarize(v) for k, v in per_server.items()}
        if before_stop is not None:
            before_stop(started)
        servers.stop_all()

    def interrupted(signum, frame):
        raise KeyboardInterrupt()
    # Also when started in the background, where SIGINT arrives ignored.
    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)

    status = 0
    try:
        if "keepalive" in args.only:
            log("== keep-alive phase (wrk) ==")
            loads = [wrk_load(c, args.duration) for c in (100, 1000, 2000)]
            run_matrix(loads, [(s, None) for s in ALL_SERVERS if s in args.servers])
        if "ab" in args.only:
            log("== connection-per-request phase (ab) ==")
            loads = [ab_load(args.ab_requests, c) for c in (1, 10, 50)]
            run_matrix(loads, [(s, "close" if s == "bare" else None) for s in ALL_SERVERS if s in args.servers])
        if "pipelined" in args.only:
            log(f"== pipelined phase (h2load --h1 -c{PIPELINE_CONNECTIONS} -m{PIPELINE_DEPTH}) ==")
            run_matrix([pipelined_load(args.duration)], pipelined_phase_specs(args.servers))
        if "slow" in args.only and slow_specs:
            log(f"== slow phase ({', '.join(slow_spec_text(spec) for spec in slow_specs)}) ==")
            run_matrix([slow_load(args.slow_requests)], slow_specs, slow_optional, slow_notes)
            special["slow"] = slow_special(summary.get("slow-c100", {}), slow_notes, args.slow_requests)
        if "ours" in args.servers and "queue" in args.only:
            log("== queue phase (ours -A 100 -C 1000 -w 1 -D 30) ==")
            run_matrix([ab_load(200, 100, "/test/slow", "queue-c100", "queue ab -n 200 -c100")],
                       [("ours", "queue")])
            times = [r["seconds"] for r in runs if r["load"] == "queue-c100"]
            t = statistics.median(times)
            expected = 200 * SLOW_MS / 1000
            special["queue"] = {"seconds": t, "expected": expected, "deviation": t / expected - 1,
                                "min_s": min(times), "max_s": max(times)}
        if "ours" in args.servers and "mixed" in args.only:
            log("== mixed phase (ours: wrk -c100 /test/fast, alone and beside ab -c100 /test/slow) ==")
            special["mixed"] = run_mixed(args, servers, workdir, runs, summary, loads_order)
        if "bodies" in args.only:
            specs, optional = bodies_phase_specs(args.servers)
            if not specs:
                warn("skipping bodies: it needs ours or nginx")
            else:
                log(f"== bodies phase (wrk -t1 -c{BODY_CONNECTIONS} /test/bytes?N, "
                    f"N = {', '.join(str(n) for n in BODY_SIZES)}) ==")
                body_notes, zerocopy = [], {}

                def read_zc_counters(started):
                    for server in started:
                        if server.name == "ours":
                            try:
                                zerocopy[server.label] = parse_zc_metrics(
                                    http_get(server.port, "/metrics")[2].decode(errors="replace"))
                            except (OSError, ValueError) as e:
                                warn(f"{server.label}: no /metrics ({e})")

                run_matrix([body_load(n, args.duration) for n in BODY_SIZES], specs, optional, body_notes,
                           verify=check_bodies, before_stop=read_zc_counters)
                special["bodies"] = bodies_special(summary, zerocopy, body_notes)
        for phase in ("upload", "download"):
            if phase not in args.only:
                continue
            specs, optional = transfer_phase_specs(phase, args.servers)
            if not specs:
                warn(f"skipping {phase}: it needs ours or nginx")
                continue
            log(f"== {phase} phase ({TRANSFER_TITLES[phase]}) ==")
            loads = ([upload_load(f) for f in UPLOAD_FRAMINGS] if phase == "upload"
                     else [download_load(args.duration)])
            notes, counters = [], {}
            run_matrix(loads, specs, optional, notes,
                       verify=check_upload if phase == "upload" else check_download,
                       before_stop=lambda started, into=counters: read_ours_counters(started, into),
                       measure=transfer_run, line=transfer_line)
            special[phase] = transfer_special(phase, summary, runs, counters, notes)
        if "files" in args.only:
            specs, optional = files_phase_specs(args.servers)
            if not specs:
                warn("skipping files: it needs ours, nginx or h2o")
            else:
                root = servers.docroot()
                log(f"== files phase ({FILES_TITLE}; "
                    f"{', '.join(file_name(n) for n in FILE_SIZES)} in {root}) ==")
                file_notes = []
                run_matrix(files_loads(args.duration, args.ab_requests), specs, optional, file_notes,
                           verify=lambda server: check_files(server, root), measure=files_run)
                special["files"] = files_special(summary, file_notes)
                if special["files"]["notes"] and special["files"]["notes"][0].startswith("**ours does not know"):
                    warn(special["files"]["notes"][0].strip("*"))
    except KeyboardInterrupt:
        warn("interrupted: stopping servers, writing what was measured")
        status = 130
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"compare: {e}", file=sys.stderr)
        warn("run failed: stopping servers, writing what was measured")
        status = 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not leave servers behind
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        servers.stop_all()
        # The logs stay in the temporary directory; the download phase's 64 MiB file
        # and the files phase's document root do not.
        try:
            os.remove(os.path.join(workdir, "nginx-download", "files", "stream"))
        except OSError:
            pass
        shutil.rmtree(os.path.join(workdir, "docroot"), ignore_errors=True)

    targets = evaluate_targets(summary, special)
    draw_chart(path_base + ".png", loads_order, summary)
    report = write_report(path_base, args, meta, loads_order, summary, special, targets, runs)
    log("\n" + report)
    log(f"\nresults: {path_base}.md  {path_base}.json  {path_base}.png")
    return status


def slow_phase_specs(servers, echo_module=NGINX_ECHO_MODULE):
    """(specs, optional, notes) of the slow phase: ours (slow), interleaved
    with the references that are among servers: the bare responder with
    --delay-ms on a ring timer and on a worker pool (--pool-threads), and nginx
    with echo_sleep when its echo module is installed.
    nginx is optional (a module built for another nginx fails at start-up)."""
    specs, optional, notes = [], [], []
    if "ours" in servers:
        specs.append(("ours", "slow"))
    if "bare" in servers:
        specs += [("bare", "slow"), ("bare", "slow-pool")]
    if "nginx" in servers:
        if os.path.exists(echo_module):
            specs.append(("nginx", "slow"))
            optional.append(("nginx", "slow"))
        else:
            notes.append(f"nginx reference skipped: {echo_module} is missing "
                         "(apt-get install libnginx-mod-http-echo)")
    return specs, optional, notes


def slow_spec_text(spec):
    return {("ours", "slow"): f"ours -w 300 -D {SLOW_MS}",
            ("bare", "slow"): f"bare --close --delay-ms={SLOW_MS}",
            ("bare", "slow-pool"): f"bare --close --delay-ms={SLOW_MS} --pool-threads={SLOW_POOL_THREADS}",
            ("nginx", "slow"): f"nginx echo_sleep {SLOW_MS / 1000:.3f}"}[spec]


def slow_special(load_summary, notes=(), requests=None):
    """The slow phase's figures: ours' (what the targets check) and every
    reference's, each as req/s, efficiency against the ideal, p50, p99 and
    CPU us/req; requests is the ab -n of every run."""
    ideal = SLOW_CONCURRENCY / (SLOW_MS / 1000)

    def figures(s):
        rps = s.get("rps", {}).get("median")
        return {"rps": rps, "efficiency": rps / ideal if rps is not None else None,
                "p50_ms": s.get("p50_ms", {}).get("median"), "p99_ms": s.get("p99_ms", {}).get("median"),
                "cpu_us_per_req": s.get("cpu_us_per_req", {}).get("median")}

    out = {"ideal_rps": ideal, "requests": requests, "references": {}, "notes": list(notes)}
    for label, s in load_summary.items():
        if label.startswith("ours"):
            out.update(figures(s))
        else:
            out["references"][label] = figures(s)
    return out


def mixed_round(fast, fast_server, slow_server, workdir, rnd, slow_secs, tag=""):
    """One round of the mixed phase: wrk's fast load on fast_server alone,
    then beside ab's slow load on slow_server. Returns (alone, beside, the
    slow load's parsed ab figures)."""
    probe = CpuSplitProbe(fast_server)
    alone = measured_run(fast, fast_server, workdir, None, during=probe)
    alone["cpu_split"] = probe.split(alone)
    log(f"  {tag}fast alone        round {rnd + 1}: {alone['rps']:>9,.0f} req/s  "
        f"p99 {fmt(alone['p99_ms'], 2)} ms")
    log(f"    cpu: {split_line(alone['cpu_split'])}")
    csv = os.path.join(workdir, "ab-mixed.csv")
    ab = subprocess.Popen(["ab", "-q", "-r", "-s", "60", "-t", str(slow_secs), "-n", "10000000",
                           "-c", "100", "-e", csv, f"http://{LOOPBACK.next()}:{slow_server.port}/test/slow"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(0.5)  # let the slow load ramp up first
        probe = CpuSplitProbe(fast_server, ab.pid)
        beside = measured_run(fast, fast_server, workdir, None, during=probe)
        beside["cpu_split"] = probe.split(beside)
        out, _ = ab.communicate(timeout=slow_secs + 60)
    finally:
        if ab.poll() is None:
            ab.kill()
            ab.wait()
    s = parse_ab(out, csv)
    log(f"  {tag}fast beside slow  round {rnd + 1}: {beside['rps']:>9,.0f} req/s  "
        f"p99 {fmt(beside['p99_ms'], 2)} ms; slow {s['rps']:,.0f} req/s, err {s['errors']}, "
        f"p99 {fmt(s['p99_ms'], 2)} ms")
    log(f"    cpu: {split_line(beside['cpu_split'])}")
    return alone, beside, s


def mixed_figures(alone, beside, slow_rps):
    a = statistics.median(r["rps"] for r in alone)
    m = statistics.median(r["rps"] for r in beside)
    return {"fast_alone_rps": a, "fast_with_slow_rps": m, "ratio": m / a if a else None,
            "slow_rps_beside": statistics.median(slow_rps)}


def run_mixed(args, servers, workdir, runs, summary, loads_order):
    [ours] = servers.start([("ours", "slow")])
    # The reference pair, interleaved with ours round by round: the same two
    # loads against the servers that do the least on each path (the bare
    # responder for the fast one, nginx's echo_sleep for the slow one), so
    # that what the load tools themselves take from the fast load shows.
    refs = []
    if "bare" in args.servers and "nginx" in args.servers and os.path.exists(NGINX_ECHO_MODULE):
        specs = [("bare", "mixed"), ("nginx", "slow")]
        refs = servers.start(specs, optional=specs, notes=[])
        if len(refs) != 2:
            refs = []
    fast = wrk_load(100, args.duration)
    slow_secs = args.duration + 2
    alone, mixed, slow_rps = [], [], []
    ref_alone, ref_mixed, ref_slow_rps = [], [], []
    for rnd in range(args.rounds):
        a, m, s = mixed_round(fast, ours, ours, workdir, rnd, slow_secs)
        for r, load in ((a, "mixed-alone"), (m, "mixed-with-slow")):
            r.update(round=rnd, load=load)
            runs.append(r)
        alone.append(a)
        mixed.append(m)
        slow_rps.append(s["rps"])
        if refs:
            a, m, s = mixed_round(fast, refs[0], refs[1], workdir, rnd, slow_secs, tag="reference: ")
            for r, load in ((a, "mixed-alone"), (m, "mixed-with-slow")):
                r.update(round=rnd, load=load, server="bare (mixed) + nginx (echo_sleep)")
                runs.append(r)
            ref_alone.append(a)
            ref_mixed.append(m)
            ref_slow_rps.append(s["rps"])
    servers.stop_all()
    summary["mixed-alone"] = {"ours (slow)": summarize(alone)}
    summary["mixed-with-slow"] = {"ours (slow)": summarize(mixed)}
    loads_order += ["mixed-alone", "mixed-with-slow"]
    out = mixed_figures(alone, mixed, slow_rps)
    out.update({"cpu_split": {"alone": summarize_split([r["cpu_split"] for r in alone]),
                              "with_slow": summarize_split([r["cpu_split"] for r in mixed])},
                "cpus": os.cpu_count()})
    if refs:
        out["reference"] = mixed_figures(ref_alone, ref_mixed, ref_slow_rps)
    return out


if __name__ == "__main__":
    if sys.argv[1:2] == ["--upload-client"]:
        # The upload phase's load generator (a child process, pinned like wrk).
        sys.exit(upload_client_main(sys.argv[2:]))
    try:
        sys.exit(main(sys.argv[1:]))
    except RuntimeError as e:
        print(f"compare: {e}", file=sys.stderr)
        sys.exit(1)
