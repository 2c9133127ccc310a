#!/usr/bin/env python3
"""HTTP/2: our io_uring server against nginx and h2o, over h2 (TLS) and h2c.

Run through perf/compare_h2 (which installs nginx, h2o, h2load, curl, taskset,
openssl and python3-h2 if missing and raises the fd limit):

    perf/compare_h2 --quick                                  # smoke run, under 2 minutes
    perf/compare_h2                                          # full run, ~20 minutes (3 rounds, 5 s runs)
    perf/compare_h2 --only idle --idle-counts 10000          # one phase
    perf/compare_h2 --servers nginx,h2o --allow-missing-ours # without ours

Servers, one thread each, each with two listeners: h2 by ALPN on a TLS one and h2c with
prior knowledge on a plain one, and the same document root:
  ours   bazel-bin/src/server --listen=:P1,tls --listen=:P2 -A 1 -w 1 --http2=on
         --tls-cert=F --tls-key=F --root=DIR --idle-timeout=600s (built with
         ./bazelw build -c opt //src:server); its TLS handshake thread (--tls-workers, one
         per accept thread) is part of the one pinned CPU and of its CPU figures
  nginx  worker_processes 1; listen P1 ssl http2; listen P2 http2 (Debian 12's nginx 1.22
         spells it so); return 200 "" on /test/fast, root DIR (sendfile, open_file_cache)
  h2o    num-threads 1; a TLS listener and a plain one (h2o serves h2c on plain listeners
         by default); file.file of an empty file on /test/fast (h2o 2.2.5 has no return),
         file.dir DIR on /
/test/fast is ours' built-in empty 200 (Content-Length: 0); nginx and h2o answer the same
empty body. The TLS side is compare_tls.py's: a self-signed ECDSA P-256 certificate made at
run time, TLS 1.3 TLS_AES_128_GCM_SHA256 with X25519 (nginx: ssl_protocols, ssl_conf_command;
h2o: its own OPENSSL_CONF), every client (h2load, curl, the idle client) restricted to the
same with OPENSSL_CONF, and h2load told --tls13-ciphers and --groups as well (it sets its own
defaults over the configuration file). Every h2load run prints what it negotiated; a run that
got anything else is invalid.

Phases (--only fast,files,idle; all by default):
  fast   h2load -c100 -m10 and -c10 -m100 -t1 -D {duration} on /test/fast, over h2 and h2c
  files  the same loads on a 1 KiB and a 64 KiB file of random bytes (/f1k.bin, /f64k.bin)
  idle   resident memory per idle connection: a fresh server, one h2 and one h2c request to
         warm it, its RSS (all processes), then N connections (--idle-counts, 1,000 and
         10,000) that each did one GET /test/fast and stay open, its RSS again after
         --idle-settle seconds: (after - before) / N, per protocol. The client is this
         script (--idle-client), asyncio and python3-h2, pinned to the load CPU; it reports
         how many connections answered 200 and how many were still open after the reading.

Before measuring, every server must answer /test/fast (200, empty) and each file (200, its
exact bytes) over h2 and h2c (curl); what it answered is in the report. A server that answers
wrong is still measured: h2load's "status codes" line is parsed, and a run with any failed,
errored or timed-out request, any non-2xx answer, or another protocol or cipher than asked is
INVALID: the report prints what went wrong instead of a rate.

Each load runs against every server in turn (A B C A B C ...) for --rounds rounds; the report
gives the median and (min-max) over rounds. Servers run on CPU 1, load tools on CPU 0
(taskset). Server CPU per request is utime+stime of all its processes and threads, from
/proc/PID/stat before and after each run (compare.py's measured_run), over h2load's succeeded
requests. Targets (checked on every load row): ours' req/s >= h2o's at CPU/request <= h2o's;
idle memory per connection <= h2o's.

Results: perf/results/compare_h2-YYYYmmdd-HHMMSS.{md,json}; the report is also printed.
"""

import argparse
import asyncio
import datetime
import json
import os
import re
import select
import shlex
import signal
import ssl
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (perf/compare.py: servers, measured runs, statistics)
import compare_tls  # noqa: E402  (certificates, the TLS profile, ours' build)
from compare import fmt, fmt_range, log, ratio, warn  # noqa: E402

ALL_SERVERS = ["ours", "nginx", "h2o"]
ALL_PHASES = ["fast", "files", "idle"]
PROTOCOLS = ["h2", "h2c"]
PROTOCOL_TITLES = {"h2": "h2 (TLS)", "h2c": "h2c"}
# (connections, streams in flight per connection) of every h2load load.
LOAD_SHAPES = [(100, 10), (10, 100)]
FILE_SIZES = [1 << 10, 64 << 10]
IDLE_COUNTS = [1000, 10000]
IDLE_COUNTS_QUICK = [1000]
# Connections the idle client has in its handshake and first request at once.
IDLE_OPENING = 100
IDLE_SETTLE_S = 1.0
# Every server keeps an idle connection this long (ours --idle-timeout, nginx
# keepalive_timeout, h2o http2-idle-timeout): far longer than the idle phase holds one.
IDLE_TIMEOUT_S = 600
# Port offsets from --port-base: (TLS, plain) per server.
PORTS = {"ours": (0, 1), "nginx": (2, 3), "h2o": (4, 5)}
TLS_VERSION = "TLSv1.3"
TLS_CIPHER = "TLS_AES_128_GCM_SHA256"
TLS_GROUP = "X25519"
# Too few body bytes per answer for a file load: less than this share of the file.
BODY_SHARE_MIN = 0.9
OTHER_BUSY_PCT = 20


# ----------------------------------------------------------------------------
# Configuration text (pure)
# ----------------------------------------------------------------------------

def nginx_conf(d, tls_port, plain_port, cert, key, root, threads=1, idle_s=IDLE_TIMEOUT_S):
    """nginx 1.22 with an h2 listener on TLS (ALPN) and an h2c one (prior
    knowledge only: `listen ... http2` without ssl), /test/fast as compare.py's
    (return 200 ""), the document root as compare.py's files phase, the TLS
    settings of compare_tls.py (TLS 1.3, TLS_AES_128_GCM_SHA256, X25519).
    Since 1.19.7 keepalive_timeout and keepalive_requests govern HTTP/2 too."""
    return f"""# generated by perf/compare_h2.py
user root;
daemon off;
master_process on;
worker_processes {threads};
worker_rlimit_nofile 65536;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{
    worker_connections 32768;
}}
http {{
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout {idle_s}s;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    server {{
        listen {tls_port} ssl http2 backlog=4096;
        listen {plain_port} http2 backlog=4096;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols {TLS_VERSION};
        ssl_prefer_server_ciphers on;
        ssl_ciphers {compare_tls.TLS12_CIPHERS};
        ssl_conf_command Ciphersuites {TLS_CIPHER};
        ssl_ecdh_curve X25519:prime256v1;
        ssl_session_tickets on;
        ssl_conf_command NumTickets {compare_tls.TICKETS};{compare.nginx_files_server(root)}
        location = /test/fast {{ return 200 ""; }}
    }}
}}
"""


def h2o_conf(d, tls_port, plain_port, cert, key, empty, root, threads=1, idle_s=IDLE_TIMEOUT_S):
    """h2o 2.2.5 with a TLS listener (h2 by ALPN) and a plain one (h2c with
    prior knowledge, on by default), an empty file on /test/fast as
    compare.py's h2o, file.dir on / as compare.py's files phase. TLS 1.3, its
    cipher, groups and tickets come from its OPENSSL_CONF
    (compare_tls.openssl_conf(server=True))."""
    return f"""# generated by perf/compare_h2.py
user: root
num-threads: {threads}
max-connections: 100000
http1-request-timeout: {idle_s}
http2-idle-timeout: {idle_s}
pid-file: {d}/h2o.pid
error-log: {d}/error.log
file.etag: OFF
ssl-session-resumption:
  mode: ticket
listen:
  port: {tls_port}
  ssl:
    certificate-file: {cert}
    key-file: {key}
    minimum-version: TLSv1.2
    cipher-suite: {compare_tls.TLS12_CIPHERS}
    cipher-preference: server
    ocsp-update-interval: 0
listen:
  port: {plain_port}
hosts:
  default:
    paths:
      /test/fast:
        file.file: {empty}
{compare.h2o_files_paths(root)}"""


def ours_cmd(binary, tls_port, plain_port, cert, key, root, workers=1, idle_s=IDLE_TIMEOUT_S, extra=()):
    """Ours with one accept thread (its TLS handshake thread beside it), a TLS
    listener and a plain one, HTTP/2 on, the document root."""
    return [binary, f"--listen=:{tls_port},tls", f"--listen=:{plain_port}", "-A", "1", "-w", str(workers),
            "--http2=on", f"--tls-cert={cert}", f"--tls-key={key}", f"--root={root}",
            f"--idle-timeout={idle_s}s"] + list(extra)


# ----------------------------------------------------------------------------
# Tool output parsers (pure)
# ----------------------------------------------------------------------------

def byte_count(text):
    """h2load's traffic figure "3.62MB (3793130)": the number in parentheses."""
    m = re.search(r"\((\d+)\)", text)
    return int(m.group(1)) if m else None


def parse_h2load(out):
    """Everything h2load printed that the phase needs: compare.parse_h2load's
    figures (requests = succeeded, 2xx and 3xx; errors = failed) plus the
    request counts, the status classes, the traffic, and what it negotiated.
    rps is succeeded / duration: h2load's own req/s counts every request that
    was done, failed or not (kept as rps_done)."""
    r = compare.parse_h2load(out)
    m = re.search(r"^finished in [^,]+, ([\d.]+) req/s", out, re.M)
    r["rps_done"] = float(m.group(1))
    m = re.search(r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                  r"(\d+) errored(?:, (\d+) timeout)?", out, re.M)
    r["total"], r["started"], r["done"], r["succeeded"], r["failed"], r["errored"] = (
        int(x) for x in m.groups()[:6])
    r["timeouts"] = int(m.group(7) or 0)
    m = re.search(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out, re.M)
    r["status"] = dict(zip(("2xx", "3xx", "4xx", "5xx"), (int(x) for x in m.groups()))) if m else None
    m = re.search(r"^traffic: (.+?) total, (.+?) headers.*?, ([^,]+?) data\s*$", out, re.M)
    r["bytes_total"], r["bytes_headers"], r["bytes_data"] = (
        (byte_count(m.group(1)), byte_count(m.group(2)), byte_count(m.group(3))) if m else (None, None, None))
    r["rps"] = r["succeeded"] / r["seconds"] if r["seconds"] > 0 else None
    r["requests"] = r["succeeded"]
    for key, pattern in (("tls_protocol", r"^TLS Protocol: (\S+)"), ("tls_cipher", r"^Cipher: (\S+)"),
                         ("tls_group", r"^Server Temp Key: (\S+)"), ("alpn", r"^Application protocol: (\S+)")):
        m = re.search(pattern, out, re.M)
        r[key] = m.group(1) if m else None
    if re.search(r"^No protocol negotiated", out, re.M):
        r["alpn"] = None
    return r


def run_problems(r, proto, body_bytes=None):
    """What makes one h2load run's figures invalid ([] if nothing): a request
    that failed, errored or timed out, an answer that is not 2xx, another
    protocol than proto, under TLS another version, cipher or group, no
    request at all, or (a file load) fewer body bytes than the answers need."""
    p = []
    if r.get("error"):
        return [r["error"]]
    st = r.get("status") or {}
    done = r.get("done") or 0
    for cls in ("3xx", "4xx", "5xx"):
        if st.get(cls):
            p.append(f"{st[cls]:,} of {done:,} answers {cls}")
    if r.get("failed") and not any(st.get(c) for c in ("4xx", "5xx")):
        p.append(f"{r['failed']:,} failed")
    if r.get("errored"):
        p.append(f"{r['errored']:,} errored")
    if r.get("timeouts"):
        p.append(f"{r['timeouts']:,} timed out")
    if r.get("alpn") != proto:
        p.append(f"protocol {r.get('alpn') or 'none'} (expected {proto})")
    if proto == "h2":
        for key, what, want in (("tls_protocol", "TLS version", TLS_VERSION), ("tls_cipher", "cipher", TLS_CIPHER),
                                ("tls_group", "key exchange", TLS_GROUP)):
            if r.get(key) != want:
                p.append(f"{what} {r.get(key)} (expected {want})")
    if not r.get("succeeded"):
        p.append("no request succeeded")
    elif body_bytes and not p and r.get("bytes_data") is not None and \
            r["bytes_data"] < BODY_SHARE_MIN * body_bytes * r["succeeded"]:
        p.append(f"{r['bytes_data'] / r['succeeded']:,.0f} body bytes per answer (the file has {body_bytes:,})")
    return p


def parse_curl(out):
    """curl -w '%{http_code} %{http_version} %{size_download}': (status,
    HTTP version, body bytes); status 0 when curl got no answer."""
    parts = out.split()
    try:
        return int(parts[0]), parts[1], int(parts[2])
    except (IndexError, ValueError):
        return 0, None, 0


def idle_figures(rss_before_kib, rss_after_kib, count, opened, still_open):
    """The idle phase's figures of one measurement: resident memory per
    connection (KiB and bytes) and what makes it invalid (the server did
    not answer every connection 200, or closed some before the reading)."""
    problems = []
    answered = opened.get("answered_200", 0)
    if answered != count:
        errs = ", ".join(f"{k} x{v}" for k, v in sorted(opened.get("errors", {}).items()))
        other = ", ".join(f"{k} x{v}" for k, v in sorted(opened.get("statuses", {}).items()) if k != "200")
        problems.append(f"{answered:,} of {count:,} connections answered 200"
                        + (f" (statuses {other})" if other else "") + (f" (errors: {errs})" if errs else ""))
    if still_open is not None and still_open < answered:
        problems.append(f"{answered - still_open:,} connections closed by the server before the reading")
    delta = rss_after_kib - rss_before_kib
    return {"rss_before_mib": rss_before_kib / 1024, "rss_after_mib": rss_after_kib / 1024,
            "rss_delta_mib": delta / 1024, "kib_per_conn": delta / count, "bytes_per_conn": delta * 1024 / count,
            "problems": problems}


# ----------------------------------------------------------------------------
# Loads
# ----------------------------------------------------------------------------

def file_name(n):
    return compare.file_name(n)


class H2Load:
    """An h2load run on one path over proto (h2 or h2c), measured like
    compare.Load (compare.measured_run calls run with the listener's port)."""

    def __init__(self, proto, conns, streams, path, secs, client_conf, body_bytes=None, group=""):
        self.proto, self.conns, self.streams, self.path = proto, conns, streams, path
        self.secs, self.client_conf, self.body_bytes = secs, client_conf, body_bytes
        self.group = group
        self.key = f"{group}{'-' if group else ''}{proto}-c{conns}-m{streams}"
        self.kind = "h2load"
        self.title = f"{PROTOCOL_TITLES[proto]} h2load -c{conns} -m{streams} {path}"

    def argv(self, host, port):
        scheme = "https" if self.proto == "h2" else "http"
        cmd = ["h2load", "-c", str(self.conns), "-m", str(self.streams), "-t", "1", "-D", str(self.secs)]
        if self.proto == "h2":
            cmd = (["env", f"OPENSSL_CONF={self.client_conf}"] + cmd
                   + [f"--tls13-ciphers={TLS_CIPHER}", f"--groups={TLS_GROUP}"])
        return cmd + [f"{scheme}://{host}:{port}{self.path}"]

    def command_text(self, cpu=None):
        pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
        return shlex.join(pin + self.argv("127.0.0.N", "PORT"))

    def run(self, port, workdir, cpu=None, timeout=None):
        cmd = self.argv(compare.LOOPBACK.next(), port)
        if cpu is not None:
            cmd = ["taskset", "-c", str(cpu)] + cmd
        rc, out = compare.run_to_end(cmd, timeout or self.secs + 60)
        try:
            r = parse_h2load(out)
        except (RuntimeError, AttributeError, TypeError) as e:
            first = next((l for l in out.splitlines() if l.strip() and not l.startswith(("starting", "spawning",
                                                                                         "progress", "Warm-up"))), "")
            r = {"requests": 0, "rps": None, "seconds": self.secs, "error": f"h2load gave no figures "
                 f"(exit {rc}): {first or str(e).splitlines()[0]}", "output_tail": out[-1500:]}
        if rc != 0 and not r.get("error"):
            r["error"] = f"h2load exited with {rc}"
        r["problems"] = run_problems(r, self.proto, self.body_bytes)
        r["cmd"] = shlex.join(cmd)
        r["url"] = cmd[-1]
        if r["problems"]:
            r["rps_invalid"], r["rps"] = r.get("rps"), None
        if self.body_bytes and r.get("rps"):
            r["mib_per_s"] = r["rps"] * self.body_bytes / 2 ** 20
        return r


def fast_loads(secs, conf, protos=PROTOCOLS, shapes=LOAD_SHAPES):
    return [H2Load(p, c, m, "/test/fast", secs, conf, group="fast") for p in protos for c, m in shapes]


def files_loads(secs, conf, protos=PROTOCOLS, shapes=LOAD_SHAPES, sizes=FILE_SIZES):
    return [H2Load(p, c, m, "/" + file_name(n), secs, conf, body_bytes=n, group=f"files-{compare.size_key(n)}")
            for n in sizes for p in protos for c, m in shapes]


class Listener:
    """One protocol's listener of a server, as compare.measured_run sees a
    server: its port, label and the CPU of the whole server."""

    def __init__(self, server, proto):
        self.server, self.proto = server, proto
        self.port = server.ports[proto]
        self.label = server.label

    def cpu_ticks(self):
        return self.server.cpu_ticks()


# ----------------------------------------------------------------------------
# Servers
# ----------------------------------------------------------------------------

def curl_get(proto, port, path, client_conf, out_path, host="127.0.0.1", timeout=10):
    """One GET over h2 (ALPN, no certificate check) or h2c (prior knowledge)
    with curl: (status, HTTP version, body bytes), the body in out_path."""
    if proto == "h2":
        cmd = ["curl", "-sk", "--http2", f"https://{host}:{port}{path}"]
    else:
        cmd = ["curl", "-s", "--http2-prior-knowledge", f"http://{host}:{port}{path}"]
    cmd[1:1] = ["-o", out_path, "-w", "%{http_code} %{http_version} %{size_download}", "--max-time", str(timeout)]
    env = dict(os.environ, OPENSSL_CONF=client_conf)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                           timeout=timeout + 5)
        return parse_curl(p.stdout)
    except subprocess.TimeoutExpired:
        return 0, None, 0


class H2Server(compare.Server):
    """compare.Server with a TLS and a plain listener, ready when GET /test/fast
    answers 200 over h2c (curl), with an environment of its own (h2o's
    OPENSSL_CONF)."""

    def __init__(self, name, cmd, ports, workdir, client_conf, pin_cpu=None, env=None):
        super().__init__(name, name, cmd, ports["h2c"], workdir, pin_cpu)
        self.ports, self.client_conf, self.env = ports, client_conf, env

    def start(self, timeout=20.0):
        for port in self.ports.values():
            compare.check_port_free(port)
        cmd = (["taskset", "-c", str(self.pin_cpu)] if self.pin_cpu is not None else []) + self.cmd
        env = dict(os.environ, **self.env) if self.env else None
        self.logf = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, stdout=self.logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     cwd=self.workdir, start_new_session=True, env=env)
        deadline = time.time() + timeout
        body = os.path.join(self.workdir, f"{self.name}-ready.body")
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.label} exited with {self.proc.returncode} at start-up:\n"
                                   f"  {shlex.join(cmd)}\n{self.tail_log()}")
            status, _, _ = curl_get("h2c", self.ports["h2c"], "/test/fast", self.client_conf, body, timeout=2)
            if status == 200:
                return
            time.sleep(0.1)
        raise RuntimeError(f"{self.label} did not answer GET /test/fast over h2c on :{self.ports['h2c']} "
                           f"within {timeout}s\n{self.tail_log()}")


class H2Servers:
    """Makes the servers and remembers what runs."""

    def __init__(self, args, workdir, cert, key, root, client_conf, ours_binary):
        self.args, self.workdir, self.cert, self.key, self.root = args, workdir, cert, key, root
        self.client_conf, self.ours_binary = client_conf, ours_binary
        self.running = {}
        self.server_conf = os.path.join(workdir, "openssl-server.cnf")
        with open(self.server_conf, "w") as f:
            f.write(compare_tls.openssl_conf(False, server=True))

    def make(self, name):
        a = self.args
        tls, plain = (a.port_base + o for o in PORTS[name])
        ports = {"h2": tls, "h2c": plain}
        pin = a.server_cpu if a.pin else None
        if name == "ours":
            cmd = ours_cmd(self.ours_binary, tls, plain, self.cert, self.key, self.root, a.workers,
                           extra=shlex.split(a.ours_args))
            return H2Server(name, cmd, ports, self.workdir, self.client_conf, pin)
        d = os.path.join(self.workdir, name)
        os.makedirs(d, exist_ok=True)
        if name == "nginx":
            conf = os.path.join(d, "nginx.conf")
            with open(conf, "w") as f:
                f.write(nginx_conf(d, tls, plain, self.cert, self.key, self.root))
            return H2Server(name, ["nginx", "-p", d, "-c", conf, "-e", os.path.join(d, "error.log")], ports,
                            self.workdir, self.client_conf, pin)
        if name == "h2o":
            empty = os.path.join(d, "empty")
            open(empty, "w").close()
            conf = os.path.join(d, "h2o.conf")
            with open(conf, "w") as f:
                f.write(h2o_conf(d, tls, plain, self.cert, self.key, empty, self.root))
            return H2Server(name, ["h2o", "-c", conf], ports, self.workdir, self.client_conf, pin,
                            env={"OPENSSL_CONF": self.server_conf})
        raise ValueError(name)

    def start(self, name):
        server = self.make(name)
        self.running[name] = server
        try:
            server.start()
        except (RuntimeError, OSError):
            self.running.pop(name)
            server.stop()
            raise
        return server

    def restart(self, name):
        self.stop(name)
        return self.start(name)

    def stop(self, name):
        server = self.running.pop(name, None)
        if server is None:
            return
        rc = server.stop()
        if name == "ours" and rc not in (0, None):
            warn(f"ours exited with {rc} on SIGTERM (expected 0)\n{server.tail_log()}")

    def stop_all(self):
        for name in list(self.running):
            self.stop(name)


def check_answers(server, root, client_conf, workdir, sizes=FILE_SIZES):
    """What server answers over h2 and h2c to /test/fast (200, no body) and to
    each file (200, exactly its bytes): a row per (protocol, path) with
    status, HTTP version, body bytes and a verdict ("ok" or what is wrong)."""
    rows = []
    out = os.path.join(workdir, f"{server.name}-check.body")
    for proto in PROTOCOLS:
        for path, n in [("/test/fast", 0)] + [("/" + file_name(n), n) for n in sizes]:
            status, version, size = curl_get(proto, server.ports[proto], path, client_conf, out)
            wrong = []
            if status != 200:
                wrong.append(f"status {status}" if status else "no answer")
            if status and version != "2":
                wrong.append(f"HTTP/{version}")
            if status == 200 and size != n:
                wrong.append(f"{size:,} bytes (expected {n:,})")
            if status == 200 and n and size == n:
                with open(os.path.join(root, file_name(n)), "rb") as f, open(out, "rb") as g:
                    if f.read() != g.read():
                        wrong.append("not the file's bytes")
            rows.append({"server": server.label, "proto": proto, "path": path, "status": status, "version": version,
                         "bytes": size, "verdict": "; ".join(wrong) or "ok"})
    return rows


# ----------------------------------------------------------------------------
# The idle client (a child process: compare_h2.py --idle-client ...)
# ----------------------------------------------------------------------------

class IdleConnection:
    """One HTTP/2 connection that asks GET path once and then stays open,
    answering what the server sends (SETTINGS, PING) and noting when it ends."""

    def __init__(self):
        self.alive, self.goaway, self.status = False, False, None

    async def open(self, host, port, ctx, path, h2):
        self.reader, self.writer = await asyncio.open_connection(
            host, port, ssl=ctx, server_hostname="localhost" if ctx else None)
        if ctx is not None:
            obj = self.writer.get_extra_info("ssl_object")
            self.negotiated = f"{obj.version()} {obj.cipher()[0]} {obj.selected_alpn_protocol()}"
        else:
            self.negotiated = "h2c"
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.conn.send_headers(1, [(":method", "GET"), (":scheme", "https" if ctx else "http"),
                                   (":authority", "localhost"), (":path", path),
                                   ("user-agent", "compare_h2-idle")], end_stream=True)
        self.writer.write(self.conn.data_to_send())
        self.alive = True
        done = False
        while not done:
            data = await self.reader.read(65536)
            if not data:
                self.alive = False
                raise ConnectionError("closed before the answer")
            done = self._events(data, h2)
            self.writer.write(self.conn.data_to_send())
            if not self.alive:
                raise ConnectionError("GOAWAY before the answer")
        await self.writer.drain()
        self.holder = asyncio.ensure_future(self.hold(h2))

    def _events(self, data, h2):
        done = False
        for ev in self.conn.receive_data(data):
            if isinstance(ev, h2.events.ResponseReceived):
                self.status = dict(ev.headers).get(":status")
            elif isinstance(ev, h2.events.DataReceived):
                self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, (h2.events.StreamEnded, h2.events.StreamReset)):
                done = done or ev.stream_id == 1
            elif isinstance(ev, h2.events.ConnectionTerminated):
                self.goaway, self.alive = True, False
        return done

    async def hold(self, h2):
        try:
            while True:
                data = await self.reader.read(65536)
                if not data:
                    break
                self._events(data, h2)
                self.writer.write(self.conn.data_to_send())
        except (OSError, h2.exceptions.ProtocolError):
            pass
        self.alive = False

    def close(self):
        self.holder.cancel()
        self.writer.close()


def client_context(proto):
    """The idle client's TLS context for h2 (ALPN h2, no certificate check; the
    version and cipher come from OPENSSL_CONF), None for h2c."""
    if proto != "h2":
        return None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"])
    return ctx


async def open_idle(proto, host, port, count, path, opening=IDLE_OPENING):
    """Opens count connections (opening at a time), each asking path once and
    kept open: (tally, connections). tally: answered_200, statuses, errors (by
    exception), negotiated ("TLSv1.3 CIPHER h2" or "h2c"), seconds."""
    import h2.config  # python3-h2: imported here so that the rest of the script needs nothing
    import h2.connection
    import h2.events
    import h2.exceptions
    h2mod = sys.modules["h2"]
    ctx = client_context(proto)
    sem = asyncio.Semaphore(opening)
    conns = []
    tally = {"count": count, "answered_200": 0, "statuses": {}, "errors": {}, "negotiated": {}}

    def add(d, k):
        d[k] = d.get(k, 0) + 1

    async def one():
        async with sem:
            c = IdleConnection()
            try:
                await asyncio.wait_for(c.open(host, port, ctx, path, h2mod), 60)
            except (OSError, asyncio.TimeoutError, ssl.SSLError, h2mod.exceptions.ProtocolError) as e:
                add(tally["errors"], type(e).__name__)
                if getattr(c, "writer", None):
                    c.writer.close()
                return
            conns.append(c)
            add(tally["statuses"], str(c.status))
            add(tally["negotiated"], c.negotiated)
            tally["answered_200"] += c.status == "200"

    t0 = time.monotonic()
    await asyncio.gather(*(one() for _ in range(count)))
    tally["seconds"] = time.monotonic() - t0
    return tally, conns


def still_open(conns):
    return {"still_open": sum(c.alive for c in conns), "goaway": sum(c.goaway for c in conns)}


async def idle_client(proto, host, port, count, path):
    """open_idle, then prints its tally as a JSON line, waits for a line on
    stdin, prints how many connections are still open (JSON) and closes them."""
    tally, conns = await open_idle(proto, host, port, count, path)
    print(json.dumps(tally), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    await asyncio.sleep(0)  # whatever arrived meanwhile is read
    print(json.dumps(still_open(conns)), flush=True)
    for c in conns:
        c.close()
    await asyncio.sleep(0.1)


def idle_client_main(argv):
    proto, host, port, count, path = argv[0], argv[1], int(argv[2]), int(argv[3]), argv[4]
    compare.raise_nofile()
    asyncio.run(idle_client(proto, host, port, count, path))
    return 0


def read_json_line(proc, timeout):
    """The next line of proc's stdout as JSON, or RuntimeError after timeout."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline() if ready else ""
    if not line:
        proc.kill()
        rest = proc.communicate()[0]
        raise RuntimeError(f"the idle client said nothing within {timeout:.0f} s (exit {proc.returncode}):\n"
                           + (rest or "")[-2000:])
    return json.loads(line)


def idle_run(server, proto, count, client_conf, load_cpu, settle_s=IDLE_SETTLE_S):
    """One idle measurement on a fresh, warmed server: its RSS before, the idle
    client's connections opened, settle_s, its RSS after; figures per connection."""
    rss0, cpu0 = server.rss_kib(), server.cpu_ticks()
    host = compare.LOOPBACK.next()
    cmd = [sys.executable, os.path.abspath(__file__), "--idle-client", proto, host,
           str(server.ports[proto]), str(count), "/test/fast"]
    if load_cpu is not None:
        cmd = ["taskset", "-c", str(load_cpu)] + cmd
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, OPENSSL_CONF=client_conf))
    try:
        opened = read_json_line(proc, 120 + count / 50)
        cpu1 = server.cpu_ticks()
        time.sleep(settle_s)
        rss1 = server.rss_kib()
        proc.stdin.write("read\n")
        proc.stdin.flush()
        after = read_json_line(proc, 30)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    r = idle_figures(rss0, rss1, count, opened, after["still_open"])
    r.update(count=count, proto=proto, server=server.label, opened=opened, still_open=after["still_open"],
             goaway=after["goaway"], open_seconds=opened["seconds"],
             cpu_us_per_conn=(cpu1 - cpu0) / compare.CLK_TCK * 1e6 / count, cmd=shlex.join(cmd))
    want = f"{TLS_VERSION} {TLS_CIPHER} h2" if proto == "h2" else "h2c"
    odd = {k: v for k, v in opened["negotiated"].items() if k != want}
    if odd:
        r["problems"].append(f"negotiated {odd} (expected {want})")
    return r


# ----------------------------------------------------------------------------
# Statistics and report (pure)
# ----------------------------------------------------------------------------

METRICS = ["rps", "mib_per_s", "cpu_us_per_req", "errors", "server_cpu_pct", "client_cpu_pct", "other_pct",
           "steal_pct", "mean_ms"]
IDLE_METRICS = ["kib_per_conn", "rss_before_mib", "rss_after_mib", "open_seconds", "cpu_us_per_conn"]


def summarize(runs, metrics=METRICS):
    """compare_tls.summarize of the valid runs, and the problems of the
    others: {"runs", "invalid": [text], metric: {median, min, max}}. One
    invalid run makes the row invalid (its figures are not shown)."""
    bad = [r for r in runs if r.get("problems")]
    s = compare_tls.summarize([r for r in runs if not r.get("problems")], metrics)
    s["runs"] = len(runs)
    s["invalid"] = [f"round {r.get('round', 0) + 1}: " + "; ".join(r["problems"]) for r in bad]
    return s


def med(s, metric):
    return None if not s or s.get("invalid") else compare_tls.med(s, metric)


def row_ratio(summary, metric, a="ours", b="h2o"):
    return ratio(med(summary.get(a), metric), med(summary.get(b), metric))


def x(v, digits=2):
    return "-" if v is None else f"{v:.{digits}f}x"


def target_verdict(summary):
    """The issue's target for a load row: ours' req/s >= h2o's at CPU/request
    <= h2o's: "PASS", "FAIL (...)", or "n/a" (a server missing or invalid)."""
    r, c = row_ratio(summary, "rps"), row_ratio(summary, "cpu_us_per_req")
    if r is None or c is None:
        return "n/a"
    why = [w for w, bad in ((f"req/s {r:.3f}x", r < 1.0), (f"CPU/req {c:.3f}x", c > 1.0)) if bad]
    return "PASS" if not why else "FAIL (" + ", ".join(why) + ")"


def idle_verdict(summary):
    v = row_ratio(summary, "kib_per_conn")
    if v is None:
        return "n/a"
    return "PASS" if v <= 1.0 else f"FAIL ({v:.3f}x)"


def cell(s, metric, digits=0):
    """A summary's median (min-max), or why it is invalid."""
    if not s:
        return "-"
    if s.get("invalid"):
        return "**invalid**"
    return fmt_range(s.get(metric), digits)


def report_table(header, rows):
    return compare_tls.report_table(header, rows)


def write_report(path_base, args, meta, results):
    L = [f"# HTTP/2: {', '.join(args.servers)} over h2 (TLS 1.3, {TLS_CIPHER}, {TLS_GROUP}) and h2c", ""]
    L.append(f"- started {meta['started']}, {meta['machine']}")
    L.append(f"- {meta['versions']}")
    L.append(f"- rounds {args.rounds}, h2load runs {args.duration} s, -t 1; "
             + (f"servers pinned to CPU {args.server_cpu}, load tools to CPU {args.load_cpu} (taskset)"
                if args.pin else "not pinned"))
    for name, cmd in meta.get("server_cmds", {}).items():
        L.append(f"- {name}: `{cmd}`")
    if "ours" not in args.servers:
        L.append("- **ours is NOT part of this run**")
    for n in results.get("notes", []):
        L.append(f"- {n}")
    runs = results.get("runs", [])
    busy = [f"{r['load']} {r['server']} round {r['round'] + 1} ({r['other_pct']:.0f}%)"
            for r in runs if (r.get("other_pct") or 0) > OTHER_BUSY_PCT]
    if busy:
        L.append(f"- **other work used more than {OTHER_BUSY_PCT}% of the CPUs during {len(busy)} of {len(runs)} "
                 "runs** (req/s disturbed, CPU/req less so): " + ", ".join(busy))
    L.append("")

    checks = results.get("checks", [])
    if checks:
        wrong = [c for c in checks if c["verdict"] != "ok"]
        L += ["## What each server answers", "",
              "curl over h2 (ALPN) and h2c (prior knowledge), before measuring: "
              + ("every answer as expected." if not wrong else
                 f"**{len(wrong)} of {len(checks)} answers are wrong** (the loads on them are invalid):"), ""]
        if wrong:
            L += [report_table(["server", "protocol", "path", "status", "HTTP", "body bytes", "verdict"],
                               [[c["server"], c["proto"], c["path"], c["status"], c["version"], f"{c['bytes']:,}",
                                 c["verdict"]] for c in wrong]), ""]

    loads = results.get("loads", [])
    summary = results.get("summary", {})
    servers = [n for n in ALL_SERVERS if n in args.servers]
    if loads:
        L += ["## Summary", "",
              "Medians over rounds; ratios ours/h2o and ours/nginx. Target (every row): ours' req/s >= h2o's "
              "at CPU/request <= h2o's. A row with any failed request, non-2xx answer or wrong protocol is "
              "**invalid** (what went wrong is under its table below).", ""]
        rows = []
        for load in loads:
            s = summary.get(load["key"], {})
            rows.append([load["title"]]
                        + [cell(s.get(n), "rps", 0).split(" (")[0] for n in ALL_SERVERS if n in args.servers]
                        + [x(row_ratio(s, "rps", "ours", "h2o")), x(row_ratio(s, "rps", "ours", "nginx"))]
                        + [cell(s.get(n), "cpu_us_per_req", 2).split(" (")[0] for n in ALL_SERVERS
                           if n in args.servers]
                        + [x(row_ratio(s, "cpu_us_per_req", "ours", "h2o")),
                           x(row_ratio(s, "cpu_us_per_req", "ours", "nginx")), target_verdict(s)])
        L += [report_table(["load"] + [f"{n} req/s" for n in servers] + ["req/s ours/h2o", "req/s ours/nginx"]
                           + [f"{n} us/req" for n in servers] + ["CPU ours/h2o", "CPU ours/nginx", "target"], rows),
              ""]
    idle = results.get("idle_summary", {})
    if idle:
        L += ["## Resident memory per idle connection", "",
              "(RSS after N idle connections that each did one GET /test/fast - RSS before) / N, on a fresh "
              f"server warmed by one h2 and one h2c request; read {args.idle_settle:g} s after the last "
              "connection was answered. Target: ours <= h2o's.", ""]
        rows = []
        for key, s in idle.items():
            proto, n = key.split("-")
            rows.append([PROTOCOL_TITLES[proto], f"{int(n):,}"]
                        + [cell(s.get(name), "kib_per_conn", 2) for name in servers]
                        + [x(row_ratio(s, "kib_per_conn", "ours", "h2o")),
                           x(row_ratio(s, "kib_per_conn", "ours", "nginx")), idle_verdict(s)])
        L += [report_table(["protocol", "connections"] + [f"{n} KiB/conn" for n in servers]
                           + ["ours/h2o", "ours/nginx", "target"], rows), ""]
        rows = []
        for key, s in idle.items():
            proto, n = key.split("-")
            for name in servers:
                t = s.get(name)
                if not t:
                    continue
                rows.append([PROTOCOL_TITLES[proto], f"{int(n):,}", name, cell(t, "rss_before_mib", 1),
                             cell(t, "rss_after_mib", 1), cell(t, "open_seconds", 1),
                             cell(t, "cpu_us_per_conn", 0)])
        L += ["RSS before and after (MiB, all processes), the client's time to open and answer them all, and the "
              "server's CPU per connection meanwhile (handshake, SETTINGS, one request):", "",
              report_table(["protocol", "connections", "server", "RSS before MiB", "RSS after MiB", "opening s",
                            "server CPU us/conn"], rows), ""]
        bad = [f"{name}, {k}: " + "; ".join(t["invalid"]) for k, s in idle.items() for name, t in s.items()
               if t.get("invalid")]
        if bad:
            L += ["**Invalid idle measurements:** " + " | ".join(bad), ""]

    if loads:
        L += ["## Every load", ""]
        head = ["server", "req/s", "CPU us/req", "MiB/s (bodies)", "h2load mean ms", "server CPU %", "client CPU %",
                "other %", "status codes (last round)"]
        for load in loads:
            s = summary.get(load["key"], {})
            L += [f"### {load['title']}", "", f"`{load['command']}`", ""]
            rows = []
            for name in servers:
                t = s.get(name)
                if t is None:
                    continue
                last = next((r for r in reversed(runs) if r["load"] == load["key"] and r["server"] == name), {})
                st = last.get("status")
                rows.append([name, cell(t, "rps", 0), cell(t, "cpu_us_per_req", 2), cell(t, "mib_per_s", 0),
                             cell(t, "mean_ms", 2), cell(t, "server_cpu_pct", 0), cell(t, "client_cpu_pct", 0),
                             cell(t, "other_pct", 0),
                             ", ".join(f"{v:,} {k}" for k, v in st.items() if v) if st else "-"])
            L += [report_table(head, rows), ""]
            L += [f"ours/h2o: req/s {x(row_ratio(s, 'rps'))}, CPU/req {x(row_ratio(s, 'cpu_us_per_req'))}; "
                  f"ours/nginx: req/s {x(row_ratio(s, 'rps', 'ours', 'nginx'))}, CPU/req "
                  f"{x(row_ratio(s, 'cpu_us_per_req', 'ours', 'nginx'))}; target: {target_verdict(s)}", ""]
            for name in servers:
                t = s.get(name)
                if t and t.get("invalid"):
                    L += [f"**{name} invalid:** " + " | ".join(t["invalid"]), ""]
    conf = results.get("configs", {})
    if conf:
        L += ["## Configuration", ""]
        for title, text in conf.items():
            L += [f"{title}:", "", "```", text.rstrip("\n"), "```", ""]
    text = "\n".join(L)
    with open(path_base + ".md", "w") as f:
        f.write(text)
    return text


# ----------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------

def versions():
    def first_line(cmd):
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=10)
            return p.stdout.strip().splitlines()[0].split(" (")[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "?"
    return "; ".join(first_line(c) for c in (["nginx", "-v"], ["h2o", "--version"], ["h2load", "--version"],
                                            ["curl", "--version"], ["openssl", "version"]))


def find_ours(args):
    """compare_tls.find_ours, which builds with ./bazelw unless told not to,
    and checks that the binary knows --http2 as well."""
    binary = compare_tls.find_ours(args)
    if binary is None:
        return None
    p = subprocess.run([binary, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=10)
    if "--http2" not in p.stdout:
        why = f"{binary} --help names no --http2: ours does not speak HTTP/2 yet"
        if args.allow_missing_ours:
            warn(why + "; --allow-missing-ours given: running WITHOUT ours")
            return None
        raise RuntimeError(why)
    return binary


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--servers", default=",".join(ALL_SERVERS), help="servers: " + ",".join(ALL_SERVERS))
    p.add_argument("--only", default=",".join(ALL_PHASES), help="phases: " + ",".join(ALL_PHASES))
    p.add_argument("--protocols", default=",".join(PROTOCOLS), help="h2 (TLS), h2c or both (default both)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of every load on every server (default 3)")
    p.add_argument("--duration", type=int, default=5, help="seconds of every h2load run (default 5)")
    p.add_argument("--idle-counts", default=None,
                   help="idle connections per measurement (default 1000,10000; --quick 1000)")
    p.add_argument("--idle-settle", type=float, default=IDLE_SETTLE_S,
                   help=f"seconds between the last idle connection's answer and the RSS reading "
                        f"(default {IDLE_SETTLE_S:g})")
    p.add_argument("--workers", type=int, default=1, help="ours -w (default 1: /test/fast and files run on the ring)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 1 round, 1 s h2load runs, the files phase with -c100 -m10 only, 1,000 idle "
                        "connections (under 2 minutes)")
    p.add_argument("--allow-missing-ours", action="store_true",
                   help="if ours does not build or does not know --http2, run the others (says so loudly)")
    p.add_argument("--skip-build", action="store_true", help="use bazel-bin/src/server as it is")
    p.add_argument("--ours-binary", help="run this binary as ours instead of building //src:server")
    p.add_argument("--ours-args", default="", help="extra flags for ours")
    p.add_argument("--port-base", type=int, default=18280, help="first of 6 ports (default 18280)")
    p.add_argument("--no-pin", dest="pin", action="store_false", help="do not pin servers and load tools")
    p.add_argument("--server-cpu", type=int, default=1, help="CPU of the servers when pinning (default 1)")
    p.add_argument("--load-cpu", type=int, default=0, help="CPU of the load tools when pinning (default 0)")
    p.add_argument("--out", default=compare.RESULTS_DIR, help="results directory (default perf/results)")
    args = p.parse_args(argv)
    args.servers = [x for x in args.servers.split(",") if x]
    args.only = [x for x in args.only.split(",") if x]
    args.protocols = [x for x in args.protocols.split(",") if x]
    for value, allowed, what in ((args.servers, ALL_SERVERS, "server"), (args.only, ALL_PHASES, "phase"),
                                 (args.protocols, PROTOCOLS, "protocol")):
        for v in value:
            if v not in allowed:
                p.error(f"unknown {what} {v}")
    if not args.servers or not args.protocols:
        p.error("no servers or no protocols")
    if args.quick:
        args.rounds = 1
        args.duration = 1
    if args.idle_counts is None:
        args.idle_counts = IDLE_COUNTS_QUICK if args.quick else IDLE_COUNTS
    else:
        args.idle_counts = [int(v) for v in args.idle_counts.split(",") if v]
    if os.cpu_count() < 2:
        args.pin = False
    return args


def main(argv):
    args = parse_args(argv)
    compare.raise_nofile()
    started = datetime.datetime.now()
    os.makedirs(args.out, exist_ok=True)
    path_base = os.path.join(args.out, f"compare_h2-{started.strftime('%Y%m%d-%H%M%S')}")
    notes = []
    ours_binary = None
    if "ours" in args.servers:
        ours_binary = find_ours(args)
        if ours_binary is None:
            args.servers.remove("ours")
            notes.append("**ours was left out** (--allow-missing-ours): it did not build or knows no --http2")
    else:
        warn("ours is NOT part of this run (--servers without ours)")
    if not args.servers:
        raise RuntimeError("no server left to run")
    meta = {"started": started.isoformat(timespec="seconds"),
            "machine": f"{os.cpu_count()} CPUs, {os.uname().release}",
            "versions": versions(), "server_cmds": {}}
    if ours_binary:
        p = subprocess.run(["git", "-C", compare.ROOT, "log", "-1", "--format=%h %s"], stdout=subprocess.PIPE,
                           text=True)
        meta["versions"] = f"ours {p.stdout.strip()[:80]}; " + meta["versions"]
    load_cpu = args.load_cpu if args.pin else None
    workdir = tempfile.mkdtemp(prefix="perf-compare-h2-")
    log(f"work directory {workdir}")
    cert, key = compare_tls.make_certificate("ecdsa", workdir)
    client_conf = os.path.join(workdir, "openssl-client.cnf")
    with open(client_conf, "w") as f:
        f.write(compare_tls.openssl_conf(False))
    root = compare.write_docroot(os.path.join(workdir, "docroot"), FILE_SIZES)
    servers = H2Servers(args, workdir, cert, key, root, client_conf, ours_binary)
    results = {"notes": notes, "checks": [], "summary": {}, "loads": [], "idle_summary": {}, "runs": [],
               "idle_runs": []}
    results["configs"] = {
        "clients' OPENSSL_CONF (h2load, curl, the idle client)": compare_tls.openssl_conf(False),
        "h2o's OPENSSL_CONF": compare_tls.openssl_conf(False, server=True),
        "nginx (server block; the http block as compare_tls.py's, keepalive_timeout 600s)": "\n".join(
            l.strip() for l in nginx_conf("D", "TLS", "PLAIN", "CERT", "KEY", "ROOT").splitlines()
            if l.strip().startswith(("listen", "ssl_", "location", "root", "sendfile", "tcp_", "open_file",
                                     "keepalive"))),
        "h2o": h2o_conf("D", "TLS", "PLAIN", "CERT", "KEY", "EMPTY", "ROOT"),
    }

    def interrupted(signum, frame):
        raise KeyboardInterrupt()
    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)

    status = 0
    try:
        for name in list(args.servers):
            try:
                s = servers.start(name)
            except (RuntimeError, OSError) as e:
                if name == "ours" and not args.allow_missing_ours:
                    raise
                warn(f"{name} did not start, left out: {e}")
                notes.append(f"**{name} did not start and was left out**: "
                             f"{compare.failure_line(str(e)) or str(e).splitlines()[0]}")
                args.servers.remove(name)
                continue
            meta["server_cmds"][name] = shlex.join(
                ([f"OPENSSL_CONF={s.env['OPENSSL_CONF']}"] if s.env else [])
                + (["taskset", "-c", str(s.pin_cpu)] if s.pin_cpu is not None else []) + s.cmd)
            rows = check_answers(s, root, client_conf, workdir)
            results["checks"] += rows
            for row in rows:
                if row["verdict"] != "ok":
                    warn(f"{name} {row['proto']} {row['path']}: {row['verdict']}")
            log(f"  {name} ready: " + ", ".join(f"{r['proto']} {r['path']} {r['status']}" for r in rows))
        running = [servers.running[n] for n in args.servers if n in servers.running]
        loads = []
        if "fast" in args.only:
            loads += fast_loads(args.duration, client_conf, args.protocols)
        if "files" in args.only:
            shapes = LOAD_SHAPES[:1] if args.quick else LOAD_SHAPES
            loads += files_loads(args.duration, client_conf, args.protocols, shapes)
        for load in loads:
            log(f"== {load.title} ==")
            results["loads"].append({"key": load.key, "title": load.title, "command": load.command_text(load_cpu)})
            per = {s.label: [] for s in running}
            for rnd in range(args.rounds):
                for s in running:
                    r = compare_tls.add_cpu_pcts(compare.measured_run(load, Listener(s, load.proto), workdir,
                                                                      load_cpu))
                    r.update(round=rnd, server=s.label, load=load.key)
                    results["runs"].append(r)
                    per[s.label].append(r)
                    log(f"  {s.label:5} round {rnd + 1}: {run_line(r)}")
            results["summary"][load.key] = {k: summarize(v) for k, v in per.items()}
        if "idle" in args.only:
            for proto in args.protocols:
                for n in args.idle_counts:
                    key = f"{proto}-{n}"
                    log(f"== idle: {n:,} {PROTOCOL_TITLES[proto]} connections ==")
                    per = {name: [] for name in args.servers}
                    for rnd in range(args.rounds):
                        for name in args.servers:
                            s = servers.restart(name)
                            for p in PROTOCOLS:  # warm: a first handshake and request of each kind
                                curl_get(p, s.ports[p], "/test/fast", client_conf, os.path.join(workdir, "warm.body"))
                            time.sleep(0.3)
                            try:
                                r = idle_run(s, proto, n, client_conf, load_cpu, args.idle_settle)
                            except RuntimeError as e:
                                r = {"problems": [str(e).splitlines()[0]], "count": n, "proto": proto}
                                warn(f"idle {name}: {e}")
                            r.update(round=rnd, server=name, load=f"idle-{key}")
                            results["idle_runs"].append(r)
                            per[name].append(r)
                            log(f"  {name:5} round {rnd + 1}: {idle_line(r)}")
                    results["idle_summary"][key] = {k: summarize(v, IDLE_METRICS) for k, v in per.items()}
            for name in args.servers:  # the next run finds them as they were
                servers.stop(name)
    except KeyboardInterrupt:
        warn("interrupted: stopping servers, writing what was measured")
        status = 130
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"compare_h2: {e}", file=sys.stderr)
        warn("run failed: stopping servers, writing what was measured")
        status = 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        servers.stop_all()
        for path in (key, cert):  # never leave a private key behind
            try:
                os.remove(path)
            except OSError:
                pass

    report = write_report(path_base, args, meta, results)
    with open(path_base + ".json", "w") as f:
        json.dump({"meta": meta, "options": vars(args), "results": results}, f, indent=1, default=str)
    log("\n" + report)
    log(f"\nresults: {path_base}.md  {path_base}.json  (server logs in {workdir})")
    return status


def run_line(r):
    """A load run's progress line."""
    head = (f"{r['rps']:>9,.0f} req/s" if r.get("rps") is not None else "  INVALID      ")
    st = r.get("status")
    return (f"{head}  cpu {fmt(r.get('cpu_us_per_req'), 2):>6} us/req  server {fmt(r.get('server_cpu_pct'), 0)}%  "
            f"client {fmt(r.get('client_cpu_pct'), 0)}%  other {r.get('other_pct', 0):.0f}%"
            + (f"  [{', '.join(f'{v} {k}' for k, v in st.items() if v)}]" if st else "")
            + (f"  INVALID: {'; '.join(r['problems'])}" if r.get("problems") else ""))


def idle_line(r):
    if "kib_per_conn" not in r:
        return "INVALID: " + "; ".join(r["problems"])
    return (f"{r['kib_per_conn']:6.2f} KiB/conn  RSS {r['rss_before_mib']:.1f} -> {r['rss_after_mib']:.1f} MiB  "
            f"opened in {r['open_seconds']:.1f} s, server {r['cpu_us_per_conn']:.0f} us/conn, still open "
            f"{r['still_open']:,}" + (f"  INVALID: {'; '.join(r['problems'])}" if r["problems"] else ""))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--idle-client"]:
        sys.exit(idle_client_main(sys.argv[2:]))
    try:
        sys.exit(main(sys.argv[1:]))
    except RuntimeError as e:
        print(f"compare_h2: {e}", file=sys.stderr)
        sys.exit(1)
