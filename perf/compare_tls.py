#!/usr/bin/env python3
"""HTTPS: our io_uring server against nginx and h2o, with the same certificate and cipher.

Run through perf/compare_tls (which installs nginx, h2o, wrk, ab, h2load, taskset and
openssl if missing and raises the fd limit):

    perf/compare_tls --quick                                     # smoke run, under 2 minutes
    perf/compare_tls                                             # full run, ~9 minutes (3 rounds, 5 s runs)
    perf/compare_tls --servers nginx,h2o --allow-missing-ours    # without ours
    perf/compare_tls --tls12                                     # TLS 1.2 instead of 1.3
    perf/compare_tls --only handshake --certs rsa --rounds 5     # one phase, one certificate

Servers: ours (bazel-bin/src/server -p PORT -A 1 -w 1 --tls-cert=FILE --tls-key=FILE,
built with ./bazelw build -c opt //src:server), nginx (worker_processes 1) and h2o
(num-threads 1); access logs off, one listener each. Certificates are made at run time
in the run's temporary directory (openssl req -x509, CN localhost, SAN DNS:localhost and
IP:127.0.0.1): ECDSA P-256 and RSA-2048; the key files are deleted at the end.

Same protocol and cipher everywhere: every client (wrk, ab, openssl s_client) runs with
OPENSSL_CONF pointing at a generated file that offers exactly one protocol version and
cipher, TLS 1.3 TLS_AES_128_GCM_SHA256 (with --tls12: TLS 1.2 ECDHE-ECDSA-AES128-GCM-SHA256
or ECDHE-RSA-AES128-GCM-SHA256, whichever the certificate needs), and key exchange groups
X25519:P-256 (X25519 first; P-256 must be listed for an ECDSA certificate under TLS 1.2).
ab overrides the configured protocol range, hence also `ab -f TLS1.3` (or TLS1.2). nginx
is set to the same (ssl_protocols, ssl_ciphers, ssl_conf_command Ciphersuites,
ssl_ecdh_curve X25519:prime256v1) and so is h2o (its own OPENSSL_CONF: Debian's h2o 2.2.5
has no TLS 1.3 cipher directive). Ours is run as it ships. Session tickets: one per
handshake on each (ours sends one; nginx and h2o get NumTickets 1, h2o tickets only, no
session cache). Before measuring, every server is asked with openssl s_client (what it
negotiates with the restricted client, and what it picks for a client offering
everything), and the phase-2 tool's and wrk's connections are passed through a proxy
that parses every ClientHello and ServerHello (versions, cipher, group, resumption offered
and accepted): a server that negotiates anything else is left out with a note.

Phases (--only keepalive,handshake,latency; all by default):
  keepalive  wrk -t1 -c{100,1000} -d{duration}s --latency https://.../test/fast, ECDSA
             certificate (the first of --certs): req/s, p50/p99, server CPU us/request
  handshake  ab -n {handshake-requests} -c 50 -f TLS1.3 https://.../test/fast without -k:
             HTTP/1.0, one TCP connection and one full handshake per request (ab keeps no
             session: its ClientHellos offer no ticket and no PSK, which the proxy check
             confirms per server at the same -c; the kernel's PassiveOpens counter gives
             the connections per request of every run); per certificate (ECDSA, RSA):
             handshakes/s and server CPU us per handshake. ab counts a connection whose
             handshake failed as a complete request: its "SSL handshake failed" lines are
             counted as errors and taken off. (wrk -H 'Connection: close' is checked too,
             for reference: it resumes sessions with tickets, so it is not used.)
  latency    wrk -t1 -c50 -d{duration}s --latency -s delay.lua (each connection waits
             --latency-delay-ms, 10 ms, before each request: ~50/0.010 = 5,000 req/s, not
             flat out; wrk's latency is timed from the send) on keep-alive GET /test/fast,
             alone, then beside `nice -n 19 ab -c 20` making new handshakes as fast as it
             can; per certificate: p99 alone, p99 beside and their ratio
(h2load is not used: over HTTP/1.1 it keeps one connection per client for all requests.)

Each load runs against every server in turn (A B C A B C ...) for --rounds rounds; the
report gives the median and (min-max) over rounds. The server runs on CPU 1 and the load
tools on CPU 0 (taskset). Server CPU is utime+stime of all the server's processes and
threads, from /proc/PID/stat before and after each run (compare.py's measured_run).

Results: perf/results/compare_tls-YYYYmmdd-HHMMSS.{md,json}; the report is also printed.
"""

import argparse
import datetime
import json
import os
import re
import shlex
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (perf/compare.py: servers, loads, parsers, statistics)
from compare import fmt, fmt_range, log, ratio, warn  # noqa: E402

ROOT = compare.ROOT
ALL_SERVERS = ["ours", "nginx", "h2o"]
ALL_PHASES = ["keepalive", "handshake", "latency"]
CERT_KINDS = ["ecdsa", "rsa"]
CERT_TITLES = {"ecdsa": "ECDSA P-256", "rsa": "RSA-2048"}
CERT_KEYGEN = {"ecdsa": ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"],
               "rsa": ["-newkey", "rsa:2048"]}
# The protocol profiles: what every client offers and every server is set to.
PROFILES = {
    "tls13": {"title": "TLS 1.3", "version": "TLSv1.3", "ab": "TLS1.3",
              "cipher": {"ecdsa": "TLS_AES_128_GCM_SHA256", "rsa": "TLS_AES_128_GCM_SHA256"}},
    "tls12": {"title": "TLS 1.2", "version": "TLSv1.2", "ab": "TLS1.2",
              "cipher": {"ecdsa": "ECDHE-ECDSA-AES128-GCM-SHA256", "rsa": "ECDHE-RSA-AES128-GCM-SHA256"}},
}
TLS12_CIPHERS = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256"
TLS13_CIPHERS = "TLS_AES_128_GCM_SHA256"
# X25519 is the key exchange; P-256 is offered too because under TLS 1.2 the
# client's groups also say which ECDSA certificates it takes.
GROUPS = "X25519:P-256"
EXPECTED_GROUP = "X25519"
TICKETS = 1
KEEPALIVE_CONNECTIONS = [100, 1000]
HANDSHAKE_CONCURRENCY = 50
HANDSHAKE_REQUESTS = 10000
HANDSHAKE_REQUESTS_QUICK = 2000
LATENCY_CONNECTIONS = 50
LATENCY_DELAY_MS = 10
BESIDE_CONCURRENCY = 20
BESIDE_NICE = 19
# The handshake load beside runs this much longer than wrk (it starts 0.5 s
# before); its -n is only a bound.
BESIDE_EXTRA_S = 2
BESIDE_MAX_REQUESTS = 1000000
# Port offsets from --port-base, per certificate kind.
PORTS = {("ours", "ecdsa"): 0, ("nginx", "ecdsa"): 1, ("h2o", "ecdsa"): 2,
         ("ours", "rsa"): 3, ("nginx", "rsa"): 4, ("h2o", "rsa"): 5}
# The checks through the sniffing proxy (small: the proxy is Python).
CHECK_AB_REQUESTS = 500
CHECK_WRK_CONNECTIONS = 10
# A run whose load tool used more than this % of its CPU was bound by the client.
CLIENT_BOUND_PCT = 90
# A run during which other work used more than this % of all CPUs (neither the
# server nor its load tools) is named in the report as disturbed.
OTHER_BUSY_PCT = 20


# ----------------------------------------------------------------------------
# Configuration text (pure)
# ----------------------------------------------------------------------------

def openssl_conf(tls12, server=False):
    """An OPENSSL_CONF file whose system_default section allows one protocol
    version and one cipher (two under TLS 1.2: the ECDSA and the RSA one) and
    the groups GROUPS; for a server also NumTickets. OpenSSL applies it in
    every SSL_CTX_new of a process started with OPENSSL_CONF=this file; what
    the program sets afterwards wins (ab sets the protocol range: ab -f)."""
    version = PROFILES["tls12" if tls12 else "tls13"]["version"]
    lines = ["# generated by perf/compare_tls.py",
             "openssl_conf = openssl_init",
             "[openssl_init]", "ssl_conf = ssl_sect",
             "[ssl_sect]", "system_default = system_default_sect",
             "[system_default_sect]",
             f"MinProtocol = {version}", f"MaxProtocol = {version}"]
    lines.append(f"CipherString = {TLS12_CIPHERS}" if tls12 else f"Ciphersuites = {TLS13_CIPHERS}")
    lines.append(f"Groups = {GROUPS}")
    if server:
        lines.append(f"NumTickets = {TICKETS}")
    return "\n".join(lines) + "\n"


def nginx_conf(d, port, cert, key, tls12, threads=1):
    """nginx with one TLS listener serving /test/fast as compare.py's nginx does
    (return 200 "": an empty body, as ours' /test/fast), access log off."""
    version = PROFILES["tls12" if tls12 else "tls13"]["version"]
    return f"""# generated by perf/compare_tls.py
user root;
daemon off;
master_process on;
worker_processes {threads};
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
    server {{
        listen {port} ssl backlog=4096;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols {version};
        ssl_prefer_server_ciphers on;
        ssl_ciphers {TLS12_CIPHERS};
        ssl_conf_command Ciphersuites {TLS13_CIPHERS};
        ssl_ecdh_curve X25519:prime256v1;
        ssl_session_tickets on;
        ssl_conf_command NumTickets {TICKETS};
        location = /test/fast {{ return 200 ""; }}
    }}
}}
"""


def h2o_conf(d, port, cert, key, empty, threads=1):
    """h2o with one TLS listener serving an empty file on /test/fast, as
    compare.py's h2o does (Debian's h2o 2.2.5 has no `return`); no access-log
    directive (none is written); session resumption by tickets only (as ours
    and nginx), no OCSP stapling. Protocol version, TLS 1.3 cipher, groups and
    tickets per handshake come from its OPENSSL_CONF (openssl_conf(server=True))."""
    return f"""# generated by perf/compare_tls.py
user: root
num-threads: {threads}
max-connections: 100000
http1-request-timeout: 300
pid-file: {d}/h2o.pid
error-log: {d}/error.log
file.etag: OFF
ssl-session-resumption:
  mode: ticket
listen:
  port: {port}
  ssl:
    certificate-file: {cert}
    key-file: {key}
    minimum-version: TLSv1.2
    cipher-suite: {TLS12_CIPHERS}
    cipher-preference: server
    ocsp-update-interval: 0
hosts:
  default:
    paths:
      /test/fast:
        file.file: {empty}
"""


def delay_script(ms):
    """wrk's Lua script for the latency phase: every connection waits ms
    before each request (wrk times a request from its send, not the wait)."""
    return f"-- generated by perf/compare_tls.py\nfunction delay()\n   return {int(ms)}\nend\n"


def make_certificate(kind, directory):
    """A self-signed certificate and its key (kind ecdsa or rsa) in directory:
    (cert path, key path)."""
    cert = os.path.join(directory, f"{kind}.crt")
    key = os.path.join(directory, f"{kind}.key")
    cmd = (["openssl", "req", "-x509"] + CERT_KEYGEN[kind]
           + ["-nodes", "-keyout", key, "-out", cert, "-days", "7", "-subj", "/CN=localhost",
              "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed:\n{p.stdout[-2000:]}")
    os.chmod(key, 0o600)
    return cert, key


# ----------------------------------------------------------------------------
# TLS handshake parsing (pure): ClientHello and ServerHello from the wire
# ----------------------------------------------------------------------------

CIPHER_NAMES = {0x1301: "TLS_AES_128_GCM_SHA256", 0x1302: "TLS_AES_256_GCM_SHA384",
                0x1303: "TLS_CHACHA20_POLY1305_SHA256",
                0xC02B: "ECDHE-ECDSA-AES128-GCM-SHA256", 0xC02F: "ECDHE-RSA-AES128-GCM-SHA256",
                0xC02C: "ECDHE-ECDSA-AES256-GCM-SHA384", 0xC030: "ECDHE-RSA-AES256-GCM-SHA384",
                0xCCA9: "ECDHE-ECDSA-CHACHA20-POLY1305", 0xCCA8: "ECDHE-RSA-CHACHA20-POLY1305"}
GROUP_NAMES = {0x0017: "P-256", 0x0018: "P-384", 0x0019: "P-521", 0x001D: "X25519", 0x001E: "X448"}
VERSION_NAMES = {0x0301: "TLSv1", 0x0302: "TLSv1.1", 0x0303: "TLSv1.2", 0x0304: "TLSv1.3"}
# A ServerHello with this random is a HelloRetryRequest (RFC 8446 4.1.3).
HRR_RANDOM = bytes.fromhex("CF21AD74E59A6111BE1D8C021E65B891C2A211167ABB8C5E079E09E2C8A8339C")
EXT_SERVER_NAME, EXT_GROUPS, EXT_TICKET, EXT_PSK, EXT_EARLY_DATA, EXT_VERSIONS, EXT_KEY_SHARE = (
    0, 10, 35, 41, 42, 43, 51)


def name_of(table, code):
    return table.get(code, f"0x{code:04x}")


def u16(b, i):
    return int.from_bytes(b[i:i + 2], "big")


def parse_extensions(b, i):
    """{type: data} of the extensions block starting at b[i] (its u16 length)."""
    out = {}
    if i + 2 > len(b):
        return out
    end = min(len(b), i + 2 + u16(b, i))
    i += 2
    while i + 4 <= end:
        t, n = u16(b, i), u16(b, i + 2)
        out[t] = bytes(b[i + 4:i + 4 + n])
        i += 4 + n
    return out


def parse_client_hello(body):
    """The parts of a ClientHello (handshake body, after type and length) that
    say what the client offers and whether it tries to resume."""
    i = 2 + 32
    sid = body[i + 1:i + 1 + body[i]]
    i += 1 + body[i]
    n = u16(body, i)
    ciphers = [u16(body, i + 2 + k) for k in range(0, n, 2)]
    i += 2 + n
    i += 1 + body[i]
    ext = parse_extensions(body, i)
    versions = ([u16(ext[EXT_VERSIONS], 1 + k) for k in range(0, ext[EXT_VERSIONS][0], 2)]
                if EXT_VERSIONS in ext else [u16(body, 0)])
    groups = ([u16(ext[EXT_GROUPS], 2 + k) for k in range(0, u16(ext[EXT_GROUPS], 0), 2)]
              if EXT_GROUPS in ext else [])
    shares = []
    if EXT_KEY_SHARE in ext:
        ks, k = ext[EXT_KEY_SHARE], 2
        while k + 4 <= len(ks):
            shares.append(u16(ks, k))
            k += 4 + u16(ks, k + 2)
    return {"versions": [name_of(VERSION_NAMES, v) for v in versions],
            "ciphers": [name_of(CIPHER_NAMES, c) for c in ciphers if (c & 0x0F0F) != 0x0A0A],  # no GREASE
            "groups": [name_of(GROUP_NAMES, g) for g in groups],
            "key_shares": [name_of(GROUP_NAMES, g) for g in shares],
            "session_id": bytes(sid),
            "ticket_offered": len(ext.get(EXT_TICKET, b"")) > 0,  # an empty one asks for a new ticket
            "psk_offered": EXT_PSK in ext,
            "early_data": EXT_EARLY_DATA in ext}


def parse_server_hello(body):
    """The version, cipher and group a ServerHello chose, whether it is a
    HelloRetryRequest and (TLS 1.3) whether it accepted a PSK (resumption)."""
    random = bytes(body[2:34])
    i = 34
    sid = body[i + 1:i + 1 + body[i]]
    i += 1 + body[i]
    cipher = u16(body, i)
    ext = parse_extensions(body, i + 3)
    version = u16(ext[EXT_VERSIONS], 0) if EXT_VERSIONS in ext else u16(body, 0)
    group = u16(ext[EXT_KEY_SHARE], 0) if EXT_KEY_SHARE in ext else None
    return {"version": name_of(VERSION_NAMES, version), "cipher": name_of(CIPHER_NAMES, cipher),
            "group": name_of(GROUP_NAMES, group) if group is not None else None,
            "session_id": bytes(sid), "hrr": random == HRR_RANDOM, "psk_accepted": EXT_PSK in ext}


class HelloParser:
    """Fed one direction of a TLS connection from its first byte; parses the
    plaintext start of the handshake and stops (done) where it is known:
    the client's after its ClientHello; the server's after a TLS 1.3
    ServerHello, or under TLS 1.2 after ServerHelloDone (a full handshake,
    the group from ServerKeyExchange) or at a ChangeCipherSpec before any
    Certificate (an abbreviated one: resumed). info holds what was found."""

    def __init__(self, side):
        self.side = side
        self.buf = bytearray()
        self.hs = bytearray()
        self.done = False
        self.info = {}
        self.bytes = 0

    def feed(self, data):
        self.bytes += len(data)
        if self.done:
            return
        self.buf += data
        while not self.done and len(self.buf) >= 5:
            ctype, n = self.buf[0], u16(self.buf, 3)
            if len(self.buf) < 5 + n:
                return
            frag = bytes(self.buf[5:5 + n])
            del self.buf[:5 + n]
            if ctype == 22:
                self.hs += frag
                self._messages()
            elif ctype == 20:  # ChangeCipherSpec
                if self.side == "server" and self.info.get("server_hello") and \
                        self.info["server_hello"]["version"] == "TLSv1.2" and not self.info.get("certificate"):
                    self.info["resumed"] = True
                    self.done = True
            elif ctype == 21:
                self.info["alert"] = frag[1] if len(frag) > 1 else None
                self.done = True
            else:  # application data: encrypted from here on
                self.done = True

    def _messages(self):
        while not self.done and len(self.hs) >= 4:
            mtype, n = self.hs[0], int.from_bytes(self.hs[1:4], "big")
            if len(self.hs) < 4 + n:
                return
            body = bytes(self.hs[4:4 + n])
            del self.hs[:4 + n]
            try:
                self._message(mtype, body)
            except (IndexError, KeyError):
                self.info["malformed"] = mtype
                self.done = True

    def _message(self, mtype, body):
        if self.side == "client":
            if mtype == 1:
                self.info["client_hello"] = parse_client_hello(body)
                self.done = True
            return
        if mtype == 2:
            sh = parse_server_hello(body)
            if sh["hrr"]:
                self.info["hrr"] = True  # a second ServerHello follows the client's second ClientHello
                return
            self.info["server_hello"] = sh
            if sh["version"] == "TLSv1.3":
                self.info["resumed"] = sh["psk_accepted"]
                self.done = True
        elif mtype == 11:
            self.info["certificate"] = True
        elif mtype == 12 and body[:1] == b"\x03":  # ServerKeyExchange, named curve
            self.info["kx_group"] = name_of(GROUP_NAMES, u16(body, 1))
        elif mtype == 14:  # ServerHelloDone: a full TLS 1.2 handshake
            self.info["resumed"] = False
            self.done = True


def connection_verdict(client, server, client_bytes=None, server_bytes=None):
    """One connection's handshake from the two HelloParsers' info (and the
    bytes each side sent, if known)."""
    ch, sh = client.get("client_hello"), server.get("server_hello")
    out = {"client_hello": ch is not None, "server_hello": sh is not None,
           "client_bytes": client_bytes, "server_bytes": server_bytes,
           "offered_resumption": bool(ch and (ch["psk_offered"] or ch["ticket_offered"])),
           "hrr": bool(server.get("hrr")), "alert": server.get("alert")}
    if sh:
        out.update(version=sh["version"], cipher=sh["cipher"],
                   group=sh["group"] or server.get("kx_group"))
    resumed = server.get("resumed")
    out["resumed"] = bool(resumed)
    out["full"] = sh is not None and resumed is False
    return out


def tally(verdicts):
    """What a set of connections' handshakes were: counts and the versions,
    ciphers and groups chosen ({name: count}). A connection on which the
    client sent nothing (wrk connects once to check the address before it
    starts) counts as "empty" and nothing else."""
    t = {"connections": 0, "empty": 0, "client_hellos": 0, "server_hellos": 0, "full": 0, "resumed": 0,
         "offered_resumption": 0, "hrr": 0, "alerts": 0, "versions": {}, "ciphers": {}, "groups": {}}
    for v in verdicts:
        if v.get("client_bytes") == 0:
            t["empty"] += 1
            continue
        t["connections"] += 1
        t["client_hellos"] += v["client_hello"]
        t["server_hellos"] += v["server_hello"]
        t["full"] += v["full"]
        t["resumed"] += v["resumed"]
        t["offered_resumption"] += v["offered_resumption"]
        t["hrr"] += v["hrr"]
        t["alerts"] += v["alert"] is not None
        for k, key in (("version", "versions"), ("cipher", "ciphers"), ("group", "groups")):
            if v.get(k):
                t[key][v[k]] = t[key].get(v[k], 0) + 1
    return t


def tally_problems(t, version, cipher, group=EXPECTED_GROUP, requests=None, extra=0, connections=None):
    """What is wrong with a tally for a phase that must make a full handshake
    of version, cipher and group on every connection: [] if nothing. requests:
    a connection per request expected, and at most extra more (ab -c N opens
    up to N - 1 connections too many at the end); connections: exactly that many."""
    p = []
    n = t["connections"]
    if n == 0:
        return ["no connection seen"]
    if requests is not None and not requests <= n <= requests + extra:
        p.append(f"{n} connections for {requests} requests")
    if connections is not None and n != connections:
        p.append(f"{n} connections, expected {connections}")
    if t["full"] != n:
        p.append(f"{t['full']} full handshakes of {n} connections")
    if t["resumed"]:
        p.append(f"{t['resumed']} resumed")
    if t["offered_resumption"]:
        p.append(f"{t['offered_resumption']} ClientHellos offered a ticket or PSK")
    if t["hrr"]:
        p.append(f"{t['hrr']} HelloRetryRequests")
    for key, want in (("versions", version), ("ciphers", cipher), ("groups", group)):
        other = {k: v for k, v in t[key].items() if k != want}
        if other:
            p.append(f"{key}: {other}")
    return p


def tally_wrong(t, version, cipher, group=EXPECTED_GROUP):
    """The part of tally_problems that makes a server's figures incomparable:
    another version, cipher or group negotiated, or a session resumed (or
    offered). A connection too many or a handshake that failed is reported,
    but the server is still measured."""
    p = []
    if t["resumed"]:
        p.append(f"{t['resumed']} resumed")
    if t["offered_resumption"]:
        p.append(f"{t['offered_resumption']} ClientHellos offered a ticket or PSK")
    for key, want in (("versions", version), ("ciphers", cipher), ("groups", group)):
        other = {k: v for k, v in t[key].items() if k != want}
        if other:
            p.append(f"{key}: {other}")
    return p


def tally_text(t):
    def names(d):
        return ", ".join(f"{k} x{v}" for k, v in sorted(d.items())) or "-"
    return (f"{t['connections']} connections: {t['full']} full handshakes, {t['resumed']} resumed, "
            f"{t['offered_resumption']} ClientHellos offering a ticket/PSK; {names(t['versions'])}; "
            f"{names(t['ciphers'])}; {names(t['groups'])}")


# ----------------------------------------------------------------------------
# The sniffing proxy: every connection's handshake, seen on the wire
# ----------------------------------------------------------------------------

class HandshakeSniffer:
    """A TCP relay on 127.0.0.1 (an ephemeral port) to upstream_port that
    parses the plaintext start of every connection's handshake in both
    directions (HelloParser) and keeps connection_verdict of each. Used as a
    context manager around a small run of a load tool; verdicts() after."""

    def __init__(self, upstream_port, upstream_host="127.0.0.1"):
        self.upstream = (upstream_host, upstream_port)
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(1024)
        self.lsock.settimeout(0.2)
        self.port = self.lsock.getsockname()[1]
        self._verdicts, self._threads = [], []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._acceptor = threading.Thread(target=self._accept_loop, daemon=True)

    def __enter__(self):
        self._acceptor.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._acceptor.join()
        self.lsock.close()
        for t in list(self._threads):
            t.join(timeout=5)
        return False

    def verdicts(self):
        with self._lock:
            return list(self._verdicts)

    def _accept_loop(self):
        while not self._stop.is_set():
            try:
                c, _ = self.lsock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            t = threading.Thread(target=self._relay, args=(c,), daemon=True)
            self._threads.append(t)
            t.start()

    @staticmethod
    def _pump(src, dst, parser):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    dst.shutdown(socket.SHUT_WR)
                    return
                parser.feed(data)
                dst.sendall(data)
        except OSError:
            for s in (src, dst):  # wakes the other direction's recv
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _relay(self, c):
        cp, sp = HelloParser("client"), HelloParser("server")
        try:
            u = socket.create_connection(self.upstream, timeout=10)
            u.settimeout(None)
        except OSError:
            c.close()
            return
        c.settimeout(None)
        back = threading.Thread(target=self._pump, args=(u, c, sp), daemon=True)
        back.start()
        self._pump(c, u, cp)
        back.join(timeout=30)
        c.close()
        u.close()
        with self._lock:
            self._verdicts.append(connection_verdict(cp.info, sp.info, cp.bytes, sp.bytes))


# ----------------------------------------------------------------------------
# Tool output parsers (pure)
# ----------------------------------------------------------------------------

def parse_s_client(out, tls12):
    """What openssl s_client printed: protocol, cipher, key exchange, the
    server's signature type, key size, tickets received, HTTP status."""
    r = {}
    m = re.search(r"^(?:New|Reused), (\S+), Cipher is (\S+)", out, re.M)
    r["protocol"], r["cipher"] = (m.group(1), m.group(2)) if m else (None, None)
    if r["protocol"] == "(NONE)":
        r["protocol"] = r["cipher"] = None
    m = re.search(r"^Server Temp Key: ([^,\n]+)", out, re.M)
    r["group"] = m.group(1).strip() if m else None
    m = re.search(r"^Peer signature type: (\S+)", out, re.M)
    r["signature"] = m.group(1) if m else None
    m = re.search(r"^Server public key is (\d+) bit", out, re.M)
    r["key_bits"] = int(m.group(1)) if m else None
    if tls12:
        r["tickets"] = len(re.findall(r"TLS session ticket lifetime hint", out))
    else:
        r["tickets"] = len(re.findall(r"Post-Handshake New Session Ticket arrived", out))
    m = re.search(r"^HTTP/1\.[01] (\d{3})", out, re.M)
    r["http_status"] = int(m.group(1)) if m else None
    return r


def parse_ab_tls(out):
    """ab's "SSL/TLS Protocol:" line (the first connection's protocol and
    cipher) and its total bytes received."""
    m = re.search(r"^SSL/TLS Protocol:\s+([^,\s]+),([^,\s]+)", out, re.M)
    t = re.search(r"^Total transferred:\s+(\d+) bytes", out, re.M)
    return {"protocol": m.group(1) if m else None, "cipher": m.group(2) if m else None,
            "transferred": int(t.group(1)) if t else None}


AB_TLS_ERRORS = re.compile(r"^SSL (?:handshake failed|read failed|write failed)", re.M)


def ab_tls_errors(out):
    """How many connections ab gave up on with a TLS error ("SSL handshake
    failed (1).", "SSL read failed ...", "SSL write failed ..."). ab counts
    such a connection as a complete request (with a body as long as the
    others' when they are empty, so not even as failed) and opens the next."""
    return len(AB_TLS_ERRORS.findall(out))


def fix_ab_counts(r, out):
    """parse_ab's figures less the connections ab_tls_errors found: they are
    errors, not requests; req/s is recomputed from what is left."""
    n = ab_tls_errors(out)
    r["tls_errors"] = n
    if n:
        r["requests"] = max(0, r["requests"] - n)
        r["errors"] = (r.get("errors") or 0) + n
        if r.get("seconds"):
            r["rps"] = r["requests"] / r["seconds"]
    return r


def ab_tls_problem(tls, requests, version, cipher):
    """None if ab's TLS line names version and cipher and it received at least
    a minimal response (40 bytes) per completed request, else what is wrong
    (ab counts a failed handshake as neither complete nor failed)."""
    if tls["protocol"] is None:
        return "ab printed no SSL/TLS Protocol line: no handshake succeeded"
    if (tls["protocol"], tls["cipher"]) != (version, cipher):
        return f"ab negotiated {tls['protocol']} {tls['cipher']}, expected {version} {cipher}"
    if requests and (tls["transferred"] or 0) < 40 * requests:
        return f"ab received {tls['transferred']} bytes for {requests} responses"
    return None


def passive_opens():
    """The kernel's Tcp PassiveOpens (connections accepted, the whole machine)."""
    try:
        with open("/proc/net/snmp") as f:
            lines = [l for l in f if l.startswith("Tcp:")]
        return int(dict(zip(lines[0].split()[1:], lines[1].split()[1:]))["PassiveOpens"])
    except (OSError, IndexError, KeyError, ValueError):
        return None


# ----------------------------------------------------------------------------
# Loads
# ----------------------------------------------------------------------------

class TlsLoad:
    """A wrk or ab run against https://HOST:PORT/test/fast with the client
    OPENSSL_CONF; measured like compare.Load (compare.measured_run calls run),
    plus ab's TLS line, checked, and the TCP connections accepted meanwhile."""

    def __init__(self, key, title, kind, build_cmd, expect=None):
        self.key, self.title, self.kind, self.build_cmd = key, title, kind, build_cmd
        self.expect = expect  # (version, cipher) ab must report

    def command_text(self, cpu=None):
        pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
        return shlex.join(pin + self.build_cmd("127.0.0.N", "PORT", "ab-percentiles.csv"))

    def run(self, port, workdir, cpu=None, timeout=600, host=None):
        csv = os.path.join(workdir, "ab-percentiles.csv")
        if os.path.exists(csv):
            os.remove(csv)
        cmd = self.build_cmd(host or compare.LOOPBACK.next(), port, csv)
        if cpu is not None:
            cmd = ["taskset", "-c", str(cpu)] + cmd
        opens0 = passive_opens()
        rc, out = compare.run_to_end(cmd, timeout)
        opens1 = passive_opens()
        if rc != 0:
            raise RuntimeError(f"{shlex.join(cmd)} exited with {rc}:\n{out[-2000:]}")
        if self.kind == "wrk":
            r = compare.parse_wrk(out)
        else:
            r = fix_ab_counts(compare.parse_ab(out, csv), out)
            r["tls"] = parse_ab_tls(out)
            if self.expect:
                problem = ab_tls_problem(r["tls"], r["requests"], *self.expect)
                if problem:
                    raise RuntimeError(f"{shlex.join(cmd)}: {problem}:\n{out[-2000:]}")
        r["tcp_connections"] = opens1 - opens0 if None not in (opens0, opens1) else None
        r["conns_per_req"] = r["tcp_connections"] / r["requests"] if r["requests"] and \
            r["tcp_connections"] is not None else None
        r["url"] = cmd[-1]
        r["cmd"] = shlex.join(cmd)
        return r


def client_env(conf):
    return ["env", f"OPENSSL_CONF={conf}"]


def wrk_load(key, title, conns, secs, conf, script=None):
    extra = ["-s", script] if script else []
    return TlsLoad(key, title, "wrk",
                   lambda host, port, csv: client_env(conf) + ["wrk", "-t1", f"-c{conns}", f"-d{secs}s",
                                                               "--latency"] + extra
                   + [f"https://{host}:{port}/test/fast"])


def ab_cmd(conf, proto, requests, conc, host, port, csv=None, seconds=None):
    """ab over TLS without -k: HTTP/1.0, a connection per request. -r: count
    socket errors instead of stopping; -s 10: a request taking 10 s is a hang."""
    cmd = client_env(conf) + ["ab", "-q", "-r", "-s", "10", "-f", proto]
    if seconds:
        cmd += ["-t", str(seconds)]
    cmd += ["-n", str(requests), "-c", str(conc)]
    if csv:
        cmd += ["-e", csv]
    return cmd + [f"https://{host}:{port}/test/fast"]


def handshake_load(kind, requests, conc, conf, profile):
    return TlsLoad(f"handshake-{kind}", f"new connections ab -c{conc}, {CERT_TITLES[kind]}", "ab",
                   lambda host, port, csv: ab_cmd(conf, profile["ab"], requests, conc, host, port, csv),
                   expect=(profile["version"], profile["cipher"][kind]))


# ----------------------------------------------------------------------------
# Servers
# ----------------------------------------------------------------------------

def https_get(port, path="/test/fast", host="127.0.0.1", timeout=5.0):
    """GET over TLS (no certificate check), Connection: close: (status, headers, body)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection((host, port), timeout=timeout) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
            return compare.ResponseReader(s).read()


class TlsServer(compare.Server):
    """compare.Server started with an environment of its own and checked
    ready over TLS (GET /test/fast answers 200 with at most 64 bytes)."""

    def __init__(self, name, label, cmd, port, workdir, pin_cpu=None, env=None, kind=None):
        super().__init__(name, label, cmd, port, workdir, pin_cpu)
        self.env = env
        self.kind = kind

    def start(self, timeout=20.0):
        compare.check_port_free(self.port)
        cmd = self.cmd
        if self.pin_cpu is not None:
            cmd = ["taskset", "-c", str(self.pin_cpu)] + cmd
        env = dict(os.environ, **self.env) if self.env else None
        self.logf = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self.logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     cwd=self.workdir, start_new_session=True, env=env)
        deadline = time.time() + timeout
        last_err = None
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.label} exited with {self.proc.returncode} at start-up:\n"
                                   f"  {shlex.join(cmd)}\n{self.tail_log()}")
            try:
                status, _, body = https_get(self.port)
                if status != 200 or len(body) > 64:
                    raise RuntimeError(f"{self.label}: GET /test/fast answered {status} with {len(body)} bytes")
                log(f"  {self.label} ready on :{self.port} (pid {self.proc.pid})")
                return
            except (OSError, ValueError) as e:
                last_err = e
                time.sleep(0.1)
        raise RuntimeError(f"{self.label} did not answer over TLS on :{self.port} within {timeout}s "
                           f"({last_err})\n{self.tail_log()}")


class TlsServers:
    """Makes the servers of one certificate kind and remembers what runs."""

    def __init__(self, args, workdir, certs, ours_binary):
        self.args, self.workdir, self.certs, self.ours_binary = args, workdir, certs, ours_binary
        self.running = []
        self.server_conf = os.path.join(workdir, "openssl-server.cnf")
        with open(self.server_conf, "w") as f:
            f.write(openssl_conf(args.tls12, server=True))

    def make(self, name, kind):
        a = self.args
        port = a.port_base + PORTS[(name, kind)]
        cert, key = self.certs[kind]
        pin = a.server_cpu if a.pin else None
        label = f"{name} ({kind})"
        if name == "ours":
            cmd = ([self.ours_binary, "-p", str(port), "-A", "1", "-w", "1", f"--tls-cert={cert}",
                    f"--tls-key={key}"] + shlex.split(a.ours_args))
            return TlsServer(name, label, cmd, port, self.workdir, pin, kind=kind)
        d = os.path.join(self.workdir, f"{name}-{kind}")
        os.makedirs(d, exist_ok=True)
        if name == "nginx":
            conf = os.path.join(d, "nginx.conf")
            with open(conf, "w") as f:
                f.write(nginx_conf(d, port, cert, key, a.tls12))
            return TlsServer(name, label, ["nginx", "-p", d, "-c", conf, "-e", os.path.join(d, "error.log")],
                             port, self.workdir, pin, kind=kind)
        if name == "h2o":
            empty = os.path.join(d, "empty")
            open(empty, "w").close()
            conf = os.path.join(d, "h2o.conf")
            with open(conf, "w") as f:
                f.write(h2o_conf(d, port, cert, key, empty))
            return TlsServer(name, label, ["h2o", "-c", conf], port, self.workdir, pin,
                             env={"OPENSSL_CONF": self.server_conf}, kind=kind)
        raise ValueError(name)

    def start(self, names, kind, optional, notes):
        """Starts names with the kind's certificate; one of optional that does
        not start is left out with a line in notes, any other failure raises."""
        started = []
        for name in names:
            server = self.make(name, kind)
            self.running.append(server)
            try:
                server.start()
            except (RuntimeError, OSError) as e:
                self.running.remove(server)
                server.stop()
                if name not in optional:
                    raise
                warn(f"{server.label} did not start, left out: {e}")
                why = compare.failure_line(server.tail_log(3)) or str(e).splitlines()[0]
                notes.append(f"**{server.label} did not start and was left out**: {why}")
                continue
            started.append(server)
        return started

    def drop(self, server):
        self.running.remove(server)
        server.stop()

    def stop_all(self):
        while self.running:
            server = self.running.pop()
            rc = server.stop()
            if server.name == "ours" and rc not in (0, None):
                warn(f"{server.label} exited with {rc} on SIGTERM (expected 0)\n{server.tail_log()}")


# ----------------------------------------------------------------------------
# Checks before measuring
# ----------------------------------------------------------------------------

def s_client(port, conf=None, tls12=False, timeout=15):
    """openssl s_client against port (client OPENSSL_CONF conf, or the
    system's), one GET /test/fast with Connection: close: parse_s_client."""
    cmd = ["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "localhost", "-ign_eof"]
    env = dict(os.environ, OPENSSL_CONF=conf) if conf else None
    try:
        p = subprocess.run(cmd, input="GET /test/fast HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout, env=env)
        out = p.stdout
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
    return parse_s_client(out, tls12)


def sniff(server, argv_for, timeout=120):
    """Runs argv_for(port) (a load tool, unpinned) through a HandshakeSniffer in
    front of server: (tally, tool output)."""
    with HandshakeSniffer(server.port) as sn:
        rc, out = compare.run_to_end(argv_for(sn.port), timeout)
        time.sleep(0.3)  # the relays finish
    if rc != 0:
        raise RuntimeError(f"{shlex.join(argv_for(sn.port))} exited with {rc}:\n{out[-1500:]}")
    return tally(sn.verdicts()), out


def check_server(server, args, conf, profile):
    """What server negotiates, through s_client (with the restricted client
    and with one offering everything) and through the sniffing proxy for ab
    (the handshake phase) and wrk (keep-alive, and with Connection: close for
    reference). Returns (figures, problems); a problem (tally_wrong, or
    s_client not getting the version, cipher and group wanted) leaves the
    server out; figures[tool]["problems"] lists everything odd."""
    kind = server.kind
    cipher = profile["cipher"][kind]
    version = profile["version"]
    sc = s_client(server.port, conf, args.tls12)
    sc_any = s_client(server.port, None, args.tls12)
    problems = []
    if (sc["protocol"], sc["cipher"]) != (version, cipher):
        problems.append(f"s_client negotiated {sc['protocol']} {sc['cipher']}, expected {version} {cipher}")
    if sc["group"] != EXPECTED_GROUP:
        problems.append(f"s_client: key exchange {sc['group']}, expected {EXPECTED_GROUP}")
    if sc["http_status"] != 200:
        problems.append(f"s_client: GET /test/fast answered {sc['http_status']}")
    out = {"s_client": sc, "s_client_unrestricted": sc_any}
    n, c = CHECK_AB_REQUESTS, args.handshake_concurrency
    t, ab_out = sniff(server, lambda port: ab_cmd(conf, profile["ab"], n, c, "127.0.0.1", port))
    out["ab"] = {"tally": t, "requests": n, "tls": parse_ab_tls(ab_out), "tls_errors": ab_tls_errors(ab_out),
                 "problems": tally_problems(t, version, cipher, requests=n, extra=c)}
    if out["ab"]["tls_errors"]:
        out["ab"]["problems"].append(f"ab reported {out['ab']['tls_errors']} TLS errors")
    if t["connections"] == 0:
        problems.append("ab through the proxy: no connection seen")
    problems += [f"ab through the proxy: {p}" for p in tally_wrong(t, version, cipher)]
    c = CHECK_WRK_CONNECTIONS
    wrk = client_env(conf) + ["wrk", "-t1", f"-c{c}", "-d1s"]
    t, wrk_out = sniff(server, lambda port: wrk + [f"https://127.0.0.1:{port}/test/fast"])
    w = compare.parse_wrk(wrk_out)
    out["wrk"] = {"tally": t, "requests": w["requests"], "connections": c,
                  "problems": tally_problems(t, version, cipher, connections=c)}
    problems += [f"wrk through the proxy: {p}" for p in tally_wrong(t, version, cipher)]
    t, wrk_out = sniff(server, lambda port: wrk + ["-H", "Connection: close",
                                                   f"https://127.0.0.1:{port}/test/fast"])
    w = compare.parse_wrk(wrk_out)
    out["wrk_close"] = {"tally": t, "requests": w["requests"],
                        "problems": tally_problems(t, version, cipher, requests=w["requests"])}
    return out, problems


# ----------------------------------------------------------------------------
# Runs
# ----------------------------------------------------------------------------

def add_cpu_pcts(r):
    """Server and load-tool CPU in % of one CPU over the run."""
    s = r.get("seconds") or 0
    r["server_cpu_pct"] = 100 * r["cpu_s"] / s if s > 0 else None
    r["client_cpu_pct"] = 100 * r["load_cpu_s"] / s if s > 0 and r.get("load_cpu_s") is not None else None
    return r


def tls_run(load, server, workdir, load_cpu):
    """compare.measured_run with CPU percentages and, for ab, the figures per
    TCP connection accepted on the machine (PassiveOpens; kept in the JSON
    only: anything else that opens connections meanwhile counts too)."""
    r = add_cpu_pcts(compare.measured_run(load, server, workdir, load_cpu))
    n = r.get("tcp_connections")
    if load.kind == "ab" and n:
        r["conns_per_s"] = n / r["seconds"] if r["seconds"] > 0 else None
        r["cpu_us_per_conn"] = r["cpu_s"] * 1e6 / n
    return r


def beside_cmd(conf, profile, args, host, port, csv):
    """The latency phase's handshake load: ab -c {beside-concurrency} for
    --duration + BESIDE_EXTRA_S seconds, niced (unpinned here)."""
    cmd = ab_cmd(conf, profile["ab"], BESIDE_MAX_REQUESTS, args.beside_concurrency, host, port, csv,
                 seconds=args.duration + BESIDE_EXTRA_S)
    return (["nice", "-n", str(args.beside_nice)] if args.beside_nice else []) + cmd


def beside_run(load, server, workdir, load_cpu, conf, profile, args):
    """The latency load on server while ab makes new connections to it as fast
    as it can (nice, on the load CPU): the wrk run's figures, and ab's in
    r["beside"]. ab starts 0.5 s before wrk and runs for BESIDE_EXTRA_S
    seconds more than wrk's --duration (ab -t): it outlasts wrk's run and
    ends by itself. (Not SIGINT after wrk: ab prints its figures from the
    signal handler, and now and then it crashed there with nothing printed.)"""
    csv = os.path.join(workdir, "ab-beside.csv")
    cmd = beside_cmd(conf, profile, args, compare.LOOPBACK.next(), server.port, csv)
    if load_cpu is not None:
        cmd = ["taskset", "-c", str(load_cpu)] + cmd
    ab = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(0.5)
        if ab.poll() is not None:
            raise RuntimeError(f"{shlex.join(cmd)} exited with {ab.returncode}:\n{ab.communicate()[0][-2000:]}")
        t0, ab0 = time.monotonic(), compare.process_ticks(ab.pid)
        r = tls_run(load, server, workdir, load_cpu)
        t1, ab1 = time.monotonic(), compare.process_ticks(ab.pid)
        out, _ = ab.communicate(timeout=args.duration + BESIDE_EXTRA_S + 60)
    finally:
        if ab.poll() is None:
            ab.kill()
            ab.wait()
    try:
        b = fix_ab_counts(compare.parse_ab(out, csv), out)
    except RuntimeError:
        b = {"rps": None, "requests": 0, "errors": None, "p99_ms": None, "exit": ab.returncode,
             "output_tail": out[-1500:]}
        warn(f"the handshake load beside {server.label} gave no figures (exit {ab.returncode}):\n{out[-1500:]}")
    b["tls"] = parse_ab_tls(out)
    b["problem"] = ab_tls_problem(b["tls"], b["requests"], profile["version"], profile["cipher"][server.kind])
    b["cmd"] = shlex.join(cmd)
    # ab's CPU while wrk ran, in % of one CPU; measured_run counted it as
    # other (ab is reaped after): taken off there, in % of all CPUs.
    b["cpu_pct"] = 100 * (ab1 - ab0) / compare.CLK_TCK / (t1 - t0) if None not in (ab0, ab1) else None
    if b["cpu_pct"] is not None:
        r["other_pct"] = max(0.0, r["other_pct"] - b["cpu_pct"] / (os.cpu_count() or 1))
    r["beside"] = b
    r["beside_rps"] = b["rps"]
    r["beside_cpu_pct"] = b["cpu_pct"]
    return r


# ----------------------------------------------------------------------------
# Statistics and report (pure)
# ----------------------------------------------------------------------------

METRICS = ["rps", "errors", "p50_ms", "p99_ms", "cpu_us_per_req", "server_cpu_pct", "client_cpu_pct",
           "conns_per_req", "conns_per_s", "cpu_us_per_conn", "other_pct", "steal_pct", "beside_rps",
           "beside_cpu_pct"]


def summarize(runs, metrics=METRICS):
    s = {"runs": len(runs)}
    for m in metrics:
        vals = [r[m] for r in runs if r.get(m) is not None]
        if vals:
            s[m] = {"median": statistics.median(vals), "min": min(vals), "max": max(vals)}
    return s


def med(s, metric):
    return (s or {}).get(metric, {}).get("median")


def latency_figures(alone, beside):
    """The latency phase's per-server figures from the summaries of the runs
    alone and beside the handshake load: p99s and their ratio (of the
    medians), p50s, req/s, the handshake load's rate and CPU, the server's CPU."""
    a, b = med(alone, "p99_ms"), med(beside, "p99_ms")
    return {"p99_alone_ms": a, "p99_beside_ms": b, "p99_ratio": ratio(b, a),
            "p50_alone_ms": med(alone, "p50_ms"), "p50_beside_ms": med(beside, "p50_ms"),
            "rps_alone": med(alone, "rps"), "rps_beside": med(beside, "rps"),
            "handshakes_per_s_beside": med(beside, "beside_rps"),
            "ab_cpu_pct_beside": med(beside, "beside_cpu_pct"),
            "server_cpu_pct_alone": med(alone, "server_cpu_pct"),
            "server_cpu_pct_beside": med(beside, "server_cpu_pct")}


def pair_ratios(alone_runs, beside_runs, metric="p99_ms"):
    """beside/alone of metric, round by round."""
    out = []
    by_round = {r["round"]: r for r in alone_runs}
    for r in beside_runs:
        a = by_round.get(r["round"])
        if a and a.get(metric) and r.get(metric) is not None:
            out.append(r[metric] / a[metric])
    return out


def ratio_cells(summary_by_label, metric, labels, base_name, digits=2):
    """"x.xx" of ours/base for metric, where both ran."""
    ours = next((l for l in labels if l.startswith("ours")), None)
    base = next((l for l in labels if l.startswith(base_name)), None)
    if not ours or not base:
        return "-"
    r = ratio(med(summary_by_label.get(ours), metric), med(summary_by_label.get(base), metric))
    return fmt(r, digits) + "x" if r is not None else "-"


def verdict_text(key, x):
    """The check table's verdict of one tool's tally."""
    if key == "wrk_close":
        t = x["tally"]
        return (f"not used: it resumes {t['resumed']} of {t['connections']}" if t["resumed"]
                else "not used") + " (reference)"
    return "; ".join(x["problems"]) or "ok"


def report_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def write_report(path_base, args, meta, results):
    profile = PROFILES["tls12" if args.tls12 else "tls13"]
    L = [f"# HTTPS: {', '.join(args.servers)} ({profile['title']}, "
         f"{' / '.join(sorted(set(profile['cipher'].values())))}, key exchange {EXPECTED_GROUP})", ""]
    L.append(f"- started {meta['started']}, {meta['machine']}")
    L.append(f"- {meta['versions']}")
    L.append(f"- rounds {args.rounds}, wrk runs {args.duration} s, handshake phase ab -n {args.handshake_requests} "
             f"-c {args.handshake_concurrency}; " + (f"servers pinned to CPU {args.server_cpu}, load tools to CPU "
                                                     f"{args.load_cpu} (taskset)" if args.pin else "not pinned"))
    for name, cmd in meta.get("server_cmds", {}).items():
        L.append(f"- {name}: `{cmd}`")
    L.append(f"- clients: OPENSSL_CONF offering only {profile['version']} "
             f"{' or '.join(sorted(set(profile['cipher'].values())))}, groups {GROUPS}; ab also -f {profile['ab']}")
    if "ours" not in args.servers:
        L.append("- **ours is NOT part of this run**")
    for n in results.get("notes", []):
        L.append(f"- {n}")
    busy = [f"{r['load']} {r['server']} round {r['round'] + 1} ({r['other_pct']:.0f}%)"
            for r in results.get("runs", []) if (r.get("other_pct") or 0) > OTHER_BUSY_PCT]
    if busy:
        L.append(f"- **other work used more than {OTHER_BUSY_PCT}% of the CPUs during {len(busy)} of "
                 f"{len(results['runs'])} runs** (req/s and latencies disturbed, CPU/req less so; worth "
                 f"repeating): " + ", ".join(busy))
    L.append("")

    checks = results.get("checks", {})
    if checks:
        L += ["## What each server negotiated", "",
              "openssl s_client with the clients' OPENSSL_CONF, and (last column) with the system's "
              "(a client offering every version and cipher: the server's own choice).", ""]
        rows = []
        for label, c in checks.items():
            sc, sa = c["s_client"], c["s_client_unrestricted"]
            rows.append([label, sc["protocol"], sc["cipher"], sc["group"], f"{sc['signature']} {sc['key_bits']}",
                         sc["tickets"], sc["http_status"], f"{sa['protocol']} {sa['cipher']} {sa['group']}"])
        L += [report_table(["server", "protocol", "cipher", "key exchange", "signature, key bits",
                            "tickets/handshake", "GET", "unrestricted client gets"], rows), ""]
        L += ["## Full-handshake check", "",
              f"Every connection of `{results['commands'].get('check-ab', 'ab')}` and of wrk through a proxy that "
              "parses each ClientHello and ServerHello. Full: a TLS 1.3 ServerHello without pre_shared_key, or a "
              "TLS 1.2 handshake with a Certificate and ServerHelloDone; resumed: a TLS 1.3 ServerHello accepting "
              "a PSK, or a TLS 1.2 ChangeCipherSpec before any Certificate. Connections on which the client "
              "sent nothing (wrk connects once to check the address) are not counted. wrk with "
              "`Connection: close` is there to show why it is not the handshake phase's tool.", ""]
        rows = []
        for label, c in checks.items():
            for tool, key in (("ab (handshake phase)", "ab"), ("wrk keep-alive", "wrk"),
                              ("wrk -H 'Connection: close' (reference)", "wrk_close")):
                x = c.get(key)
                if not x:
                    continue
                t = x["tally"]
                rows.append([label, tool, x["requests"], t["connections"], t["full"], t["resumed"],
                             t["offered_resumption"], ", ".join(f"{k} {v}" for k, v in t["versions"].items()) or "-",
                             ", ".join(f"{k} {v}" for k, v in t["ciphers"].items()) or "-",
                             ", ".join(f"{k} {v}" for k, v in t["groups"].items()) or "-",
                             verdict_text(key, x)])
        L += [report_table(["server", "tool", "requests", "TCP connections", "full handshakes", "resumed",
                            "ClientHellos offering ticket/PSK", "versions", "ciphers", "groups", "verdict"], rows), ""]

    summary = results.get("summary", {})
    cmds = results.get("commands", {})

    def std_rows(key):
        rows = []
        for label, s in summary.get(key, {}).items():
            rows.append([label, fmt_range(s.get("rps"), 0), fmt(med(s, "errors"), 0), fmt_range(s.get("p50_ms"), 2),
                         fmt_range(s.get("p99_ms"), 2), fmt_range(s.get("cpu_us_per_req"), 1),
                         fmt_range(s.get("server_cpu_pct"), 0), fmt_range(s.get("client_cpu_pct"), 0),
                         fmt_range(s.get("other_pct"), 0)])
        return rows

    head = ["server", "req/s", "errors", "p50 ms", "p99 ms", "server CPU us/req", "server CPU %", "client CPU %",
            "other %"]
    ka = [k for k in summary if k.startswith("keepalive-")]
    if ka:
        L += ["## 1. Keep-alive HTTPS", ""]
        for key in ka:
            L += [f"### {results['titles'][key]}", "", f"`{cmds[key]}`", "", report_table(head, std_rows(key)), ""]
            labels = list(summary[key])
            L += [f"ours/nginx: req/s {ratio_cells(summary[key], 'rps', labels, 'nginx')}, CPU/req "
                  f"{ratio_cells(summary[key], 'cpu_us_per_req', labels, 'nginx')}; ours/h2o: req/s "
                  f"{ratio_cells(summary[key], 'rps', labels, 'h2o')}, CPU/req "
                  f"{ratio_cells(summary[key], 'cpu_us_per_req', labels, 'h2o')}", ""]
        L += [f"wrk opens its {', '.join(str(c) for c in KEEPALIVE_CONNECTIONS)} connections (full handshakes) at "
              "the start of each run: their cost is in the CPU/req. wrk decrypts and encrypts as much as the "
              f"server does: where its CPU % (client) is above {CLIENT_BOUND_PCT}, wrk set the rate, and the "
              "servers compare by CPU/req.", ""]
    hs = [k for k in summary if k.startswith("handshake-")]
    if hs:
        L += ["## 2. New TLS connections per second", "",
              "ab without -k speaks HTTP/1.0 and opens a new TCP connection, with a full handshake, for every "
              "request: checked above through the proxy (no ClientHello offers a ticket or PSK, every ServerHello "
              "is a full handshake). handshakes/s is ab's requests/s and server CPU us/handshake the server's CPU "
              "per request, less the connections ab gave up on with a TLS error (ab counts those as complete "
              "requests; here they are errors). ab also opens up to -c - 1 connections more than it makes "
              "requests at the end of a run (see the check), each a full handshake: at most (c - 1)/n more "
              "CPU per request, the same for every server. TCP conns/req is the kernel's PassiveOpens counter "
              "over the run per request: machine-wide, so anything else opening connections meanwhile (see "
              "other %) adds to it.", ""]
        for key in hs:
            rows = []
            for label, s in summary[key].items():
                rows.append([label, fmt_range(s.get("rps"), 0), fmt_range(s.get("cpu_us_per_req"), 1),
                             fmt(med(s, "errors"), 0),
                             fmt_range(s.get("p50_ms"), 1), fmt_range(s.get("p99_ms"), 1),
                             fmt_range(s.get("server_cpu_pct"), 0), fmt_range(s.get("client_cpu_pct"), 0),
                             fmt_range(s.get("conns_per_req"), 3), fmt_range(s.get("other_pct"), 0)])
            L += [f"### {results['titles'][key]}", "", f"`{cmds[key]}`", "",
                  report_table(["server", "handshakes/s", "server CPU us/handshake", "errors",
                                "p50 ms", "p99 ms", "server CPU %", "client CPU %", "TCP conns/req", "other %"],
                               rows), ""]
            labels = list(summary[key])
            L += [f"ours/nginx: handshakes/s {ratio_cells(summary[key], 'rps', labels, 'nginx')}, "
                  f"CPU/handshake {ratio_cells(summary[key], 'cpu_us_per_req', labels, 'nginx')}; ours/h2o: "
                  f"handshakes/s {ratio_cells(summary[key], 'rps', labels, 'h2o')}, CPU/handshake "
                  f"{ratio_cells(summary[key], 'cpu_us_per_req', labels, 'h2o')}", ""]
            bound = [l for l, s in summary[key].items() if (med(s, "client_cpu_pct") or 0) > CLIENT_BOUND_PCT]
            if bound:
                L += [f"ab used more than {CLIENT_BOUND_PCT}% of its CPU against {', '.join(bound)}: there the "
                      "client, not the server, set the rate; compare the CPU per handshake.", ""]
    lat = results.get("latency", {})
    if lat:
        L += ["## 3. Keep-alive p99 beside new handshakes", "",
              f"`{cmds.get('latency-alone')}` alone, then the same while "
              f"`{cmds.get('latency-beside-ab')}` makes new connections as fast as it can (started 0.5 s before "
              f"wrk, for {BESIDE_EXTRA_S} s more than wrk's {args.duration} s: it outlasts wrk). Each wrk "
              "connection waits "
              f"{args.latency_delay_ms} ms before each request, so the keep-alive load is not flat out.", ""]
        rows = []
        for kind, per in lat.items():
            for label, f in per.items():
                rows.append([CERT_TITLES[kind], label, fmt(f["rps_alone"], 0), fmt(f["p50_alone_ms"], 2),
                             fmt(f["p99_alone_ms"], 2), fmt(f["rps_beside"], 0), fmt(f["p50_beside_ms"], 2),
                             fmt(f["p99_beside_ms"], 2),
                             (fmt(f["p99_ratio"], 2) + "x" if f["p99_ratio"] is not None else "-")
                             + (f" ({fmt(min(f['ratios']), 2)}-{fmt(max(f['ratios']), 2)})"
                                if len(f.get("ratios", [])) > 1 else ""),
                             fmt(f["handshakes_per_s_beside"], 0), fmt(f.get("ab_cpu_pct_beside"), 0),
                             f"{fmt(f.get('server_cpu_pct_alone'), 0)} / {fmt(f.get('server_cpu_pct_beside'), 0)}"])
        L += [report_table(["certificate", "server", "req/s alone", "p50 ms alone", "p99 ms alone", "req/s beside",
                            "p50 ms beside", "p99 ms beside", "p99 beside/alone", "handshakes/s beside",
                            "ab CPU % beside", "server CPU % alone / beside"], rows), ""]
        probs = results.get("beside_problems", [])
        if probs:
            L += ["**The handshake load beside had problems:** " + "; ".join(probs), ""]
    conf = results.get("configs", {})
    if conf:
        L += ["## Configuration", ""]
        for title, text in conf.items():
            L += [f"{title}:", "", "```", text.rstrip("\n"), "```", ""]
    if cmds:
        L += ["## Command lines", "", "HOST is 127.0.0.2, .3, ... in turn (a fresh 4-tuple space per run); "
              "PORT the server's.", ""]
        L += [f"- {k}: `{v}`" for k, v in cmds.items()]
        L.append("")
    text = "\n".join(L)
    with open(path_base + ".md", "w") as f:
        f.write(text)
    return text


# ----------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------

def find_ours(args):
    """The binary of ours, built unless --skip-build or --ours-binary; None
    (with a loud warning) when it is missing or knows no --tls-cert and
    --allow-missing-ours is given, else RuntimeError."""
    def missing(why):
        if args.allow_missing_ours:
            warn(f"{why}; --allow-missing-ours given: running WITHOUT ours")
            return None
        raise RuntimeError(f"{why} (use --allow-missing-ours or --servers nginx,h2o to run without ours)")

    binary = args.ours_binary or os.path.join(ROOT, "bazel-bin", "src", "server")
    if not args.ours_binary and not args.skip_build:
        log("building //src:server (./bazelw build -c opt //src:server) ...")
        p = subprocess.run([os.path.join(ROOT, "bazelw"), "build", "-c", "opt", "//src:server"], cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            out = "\n".join(l for l in p.stdout.splitlines() if "linux-sandbox" not in l)
            return missing("building //src:server failed:\n" + out[-3000:])
    if not os.access(binary, os.X_OK):
        return missing(f"{binary} is missing")
    try:
        p = subprocess.run([binary, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=10)
        if "--tls-cert" not in p.stdout:
            return missing(f"{binary} --help names no --tls-cert: ours does not speak TLS yet")
    except (OSError, subprocess.TimeoutExpired) as e:
        return missing(f"{binary} --help failed: {e}")
    return binary


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--servers", default=",".join(ALL_SERVERS), help="servers: " + ",".join(ALL_SERVERS))
    p.add_argument("--only", default=",".join(ALL_PHASES), help="phases: " + ",".join(ALL_PHASES))
    p.add_argument("--certs", default=",".join(CERT_KINDS),
                   help="certificates for the handshake and latency phases: ecdsa,rsa (the keep-alive phase "
                        "uses the first)")
    p.add_argument("--tls12", action="store_true",
                   help="TLS 1.2 with ECDHE-ECDSA-AES128-GCM-SHA256 / ECDHE-RSA-AES128-GCM-SHA256 instead of "
                        "TLS 1.3 TLS_AES_128_GCM_SHA256")
    p.add_argument("--rounds", type=int, default=3, help="rounds of every load on every server (default 3)")
    p.add_argument("--duration", type=int, default=5, help="seconds of every wrk run (default 5)")
    p.add_argument("--handshake-requests", type=int, default=None,
                   help=f"ab -n of the handshake phase (default {HANDSHAKE_REQUESTS}, --quick "
                        f"{HANDSHAKE_REQUESTS_QUICK})")
    p.add_argument("--handshake-concurrency", type=int, default=HANDSHAKE_CONCURRENCY,
                   help=f"ab -c of the handshake phase (default {HANDSHAKE_CONCURRENCY})")
    p.add_argument("--latency-connections", type=int, default=LATENCY_CONNECTIONS,
                   help=f"wrk -c of the latency phase (default {LATENCY_CONNECTIONS})")
    p.add_argument("--latency-delay-ms", type=int, default=LATENCY_DELAY_MS,
                   help=f"wait of each wrk connection before each request in the latency phase (default "
                        f"{LATENCY_DELAY_MS}; 0: flat out)")
    p.add_argument("--beside-concurrency", type=int, default=BESIDE_CONCURRENCY,
                   help=f"ab -c of the handshake load beside (default {BESIDE_CONCURRENCY})")
    p.add_argument("--beside-nice", type=int, default=BESIDE_NICE,
                   help=f"nice of that ab, which shares the load CPU with wrk (default {BESIDE_NICE}; 0: none)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 1 round, 2 s wrk runs, 2000 handshakes per ab run (under 2 minutes)")
    p.add_argument("--allow-missing-ours", action="store_true",
                   help="if ours does not build or does not know --tls-cert, run the others (says so loudly)")
    p.add_argument("--skip-build", action="store_true", help="use bazel-bin/src/server as it is")
    p.add_argument("--ours-binary", help="run this binary as ours instead of building //src:server")
    p.add_argument("--ours-args", default="", help="extra flags for ours")
    p.add_argument("--port-base", type=int, default=18180, help="first of 6 ports (default 18180)")
    p.add_argument("--no-pin", dest="pin", action="store_false", help="do not pin servers and load tools")
    p.add_argument("--server-cpu", type=int, default=1, help="CPU of the servers when pinning (default 1)")
    p.add_argument("--load-cpu", type=int, default=0, help="CPU of the load tools when pinning (default 0)")
    p.add_argument("--out", default=compare.RESULTS_DIR, help="results directory (default perf/results)")
    args = p.parse_args(argv)
    args.servers = [x for x in args.servers.split(",") if x]
    args.only = [x for x in args.only.split(",") if x]
    args.certs = [x for x in args.certs.split(",") if x]
    for x in args.servers:
        if x not in ALL_SERVERS:
            p.error(f"unknown server {x}")
    for x in args.only:
        if x not in ALL_PHASES:
            p.error(f"unknown phase {x}")
    for x in args.certs:
        if x not in CERT_KINDS:
            p.error(f"unknown certificate kind {x}")
    if not args.servers or not args.certs:
        p.error("no servers or no certificates")
    if args.quick:
        args.rounds = 1
        args.duration = 2
    if args.handshake_requests is None:
        args.handshake_requests = HANDSHAKE_REQUESTS_QUICK if args.quick else HANDSHAKE_REQUESTS
    if os.cpu_count() < 2:
        args.pin = False
    return args


def main(argv):
    args = parse_args(argv)
    compare.raise_nofile()
    started = datetime.datetime.now()
    os.makedirs(args.out, exist_ok=True)
    path_base = os.path.join(args.out, f"compare_tls-{started.strftime('%Y%m%d-%H%M%S')}")
    profile = PROFILES["tls12" if args.tls12 else "tls13"]
    notes = []
    ours_binary = None
    if "ours" in args.servers:
        ours_binary = find_ours(args)
        if ours_binary is None:
            args.servers.remove("ours")
            notes.append("**ours was left out** (--allow-missing-ours): it did not build or knows no --tls-cert")
    else:
        warn("ours is NOT part of this run (--servers without ours)")
    if not args.servers:
        raise RuntimeError("no server left to run")
    meta = {"started": started.isoformat(timespec="seconds"),
            "machine": f"{os.cpu_count()} CPUs, {os.uname().release}",
            "versions": compare.versions() + "; " + subprocess.run(
                ["openssl", "version"], stdout=subprocess.PIPE, text=True).stdout.strip()}
    load_cpu = args.load_cpu if args.pin else None
    workdir = tempfile.mkdtemp(prefix="perf-compare-tls-")
    log(f"work directory {workdir}")
    certs = {kind: make_certificate(kind, workdir) for kind in args.certs}
    client_conf = os.path.join(workdir, "openssl-client.cnf")
    with open(client_conf, "w") as f:
        f.write(openssl_conf(args.tls12))
    script = os.path.join(workdir, "delay.lua")
    with open(script, "w") as f:
        f.write(delay_script(args.latency_delay_ms))
    servers = TlsServers(args, workdir, certs, ours_binary)
    results = {"notes": notes, "checks": {}, "summary": {}, "titles": {}, "commands": {}, "latency": {},
               "beside_problems": [], "runs": []}
    runs = results["runs"]
    results["configs"] = {
        f"clients' OPENSSL_CONF ({client_conf})": openssl_conf(args.tls12),
        f"h2o's OPENSSL_CONF ({servers.server_conf})": openssl_conf(args.tls12, server=True),
        "nginx's TLS directives (server block; plus access_log off, keepalive_requests 1000000)": "\n".join(
            l.strip() for l in nginx_conf("D", "PORT", "CERT", "KEY", args.tls12).splitlines()
            if l.strip().startswith(("listen", "ssl_", "location"))),
        "h2o's listener (plus ssl-session-resumption: mode: ticket, file.etag: OFF)": h2o_conf(
            "D", "PORT", "CERT", "KEY", "EMPTY").split("listen:\n", 1)[1].split("hosts:", 1)[0],
    }
    if "ours" in args.servers:
        results["configs"]["ours (as it ships: no TLS settings but its flags)"] = (
            "-p PORT -A 1 -w 1 --tls-cert=CERT --tls-key=KEY" + (" " + args.ours_args if args.ours_args else ""))
    cmds = results["commands"]
    cmds["check-ab"] = shlex.join(ab_cmd(client_conf, profile["ab"], CHECK_AB_REQUESTS,
                                         args.handshake_concurrency, "127.0.0.1", "PROXY"))
    meta["server_cmds"] = {}

    def interrupted(signum, frame):
        raise KeyboardInterrupt()
    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)

    def run_matrix(load, started_servers, measure=tls_run):
        """load against every server, interleaved, --rounds times: {label: summary}."""
        per = {s.label: [] for s in started_servers}
        width = max(len(s.label) for s in started_servers)
        for rnd in range(args.rounds):
            for server in started_servers:
                r = measure(load, server, workdir, load_cpu)
                r.update(round=rnd, server=server.label, load=load.key)
                runs.append(r)
                per[server.label].append(r)
                log(f"  {load.key:16} {server.label:{width}} round {rnd + 1}: {line(r)}")
        return per

    status = 0
    try:
        for i, kind in enumerate(args.certs):
            log(f"== {CERT_TITLES[kind]} certificate ==")
            optional = [n for n in args.servers if n != "ours" or args.allow_missing_ours]
            started_servers = servers.start(args.servers, kind, optional, notes)
            for s in started_servers:
                meta["server_cmds"][s.label] = shlex.join(
                    (["taskset", "-c", str(s.pin_cpu)] if s.pin_cpu is not None else [])
                    + (["env", f"OPENSSL_CONF={s.env['OPENSSL_CONF']}"] if s.env else []) + s.cmd)
            checked = []
            for s in started_servers:
                log(f"  checking {s.label}: s_client, ab and wrk through the handshake proxy ...")
                figures, problems = check_server(s, args, client_conf, profile)
                results["checks"][s.label] = figures
                log(f"    s_client: {figures['s_client']['protocol']} {figures['s_client']['cipher']} "
                    f"{figures['s_client']['group']} {figures['s_client']['signature']}, "
                    f"{figures['s_client']['tickets']} ticket(s); unrestricted client: "
                    f"{figures['s_client_unrestricted']['protocol']} {figures['s_client_unrestricted']['cipher']}")
                for k in ("ab", "wrk", "wrk_close"):
                    log(f"    {k:9}: {tally_text(figures[k]['tally'])}")
                odd = [f"{k}: {p}" for k in ("ab", "wrk") for p in figures[k]["problems"]]
                if odd and not problems:
                    warn(f"{s.label}: " + "; ".join(odd))
                    notes.append(f"**{s.label} in the full-handshake check**: " + "; ".join(odd))
                if problems:
                    warn(f"{s.label} left out: " + "; ".join(problems))
                    notes.append(f"**{s.label} was left out**: " + "; ".join(problems))
                    servers.drop(s)
                else:
                    checked.append(s)
            if not checked:
                continue
            if i == 0 and "keepalive" in args.only:
                log(f"== keep-alive phase ({CERT_TITLES[kind]}) ==")
                for c in KEEPALIVE_CONNECTIONS:
                    key = f"keepalive-c{c}"
                    load = wrk_load(key, f"wrk -t1 -c{c} -d{args.duration}s --latency, {CERT_TITLES[kind]}",
                                    c, args.duration, client_conf)
                    results["titles"][key], cmds[key] = load.title, load.command_text(load_cpu)
                    per = run_matrix(load, checked)
                    results["summary"][key] = {k: summarize(v) for k, v in per.items()}
            if "handshake" in args.only:
                log(f"== handshake phase ({CERT_TITLES[kind]}) ==")
                load = handshake_load(kind, args.handshake_requests, args.handshake_concurrency, client_conf,
                                      profile)
                results["titles"][load.key], cmds[load.key] = load.title, load.command_text(load_cpu)
                per = run_matrix(load, checked)
                results["summary"][load.key] = {k: summarize(v) for k, v in per.items()}
            if "latency" in args.only:
                log(f"== latency phase ({CERT_TITLES[kind]}) ==")
                key = f"latency-{kind}"
                load = wrk_load(key, f"wrk -c{args.latency_connections} with {args.latency_delay_ms} ms delay",
                                args.latency_connections, args.duration, client_conf,
                                script if args.latency_delay_ms > 0 else None)
                cmds["latency-alone"] = load.command_text(load_cpu)
                cmds["latency-beside-ab"] = shlex.join(
                    (["taskset", "-c", str(load_cpu)] if load_cpu is not None else [])
                    + beside_cmd(client_conf, profile, args, "127.0.0.N", "PORT", "ab-beside.csv"))
                alone = {s.label: [] for s in checked}
                beside = {s.label: [] for s in checked}
                width = max(len(s.label) for s in checked)
                for rnd in range(args.rounds):
                    for server in checked:
                        r = tls_run(load, server, workdir, load_cpu)
                        r.update(round=rnd, server=server.label, load=key + "-alone")
                        runs.append(r)
                        alone[server.label].append(r)
                        log(f"  {key + ' alone':16} {server.label:{width}} round {rnd + 1}: {line(r)}")
                        r = beside_run(load, server, workdir, load_cpu, client_conf, profile, args)
                        r.update(round=rnd, server=server.label, load=key + "-beside")
                        runs.append(r)
                        beside[server.label].append(r)
                        if r["beside"]["problem"]:
                            results["beside_problems"].append(f"{server.label} round {rnd + 1}: "
                                                              f"{r['beside']['problem']}")
                        log(f"  {key + ' beside':16} {server.label:{width}} round {rnd + 1}: {line(r)}  "
                            f"[ab beside: {fmt(r['beside']['rps'], 0)} handshakes/s, err {r['beside']['errors']}]")
                per = {}
                for label in alone:
                    f = latency_figures(summarize(alone[label]), summarize(beside[label]))
                    f["ratios"] = pair_ratios(alone[label], beside[label])
                    per[label] = f
                results["latency"][kind] = per
                results["summary"][key + "-alone"] = {k: summarize(v) for k, v in alone.items()}
                results["summary"][key + "-beside"] = {k: summarize(v) for k, v in beside.items()}
            servers.stop_all()
    except KeyboardInterrupt:
        warn("interrupted: stopping servers, writing what was measured")
        status = 130
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"compare_tls: {e}", file=sys.stderr)
        warn("run failed: stopping servers, writing what was measured")
        status = 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        servers.stop_all()
        for cert, key in certs.values():  # never leave private keys behind
            for path in (key, cert):
                try:
                    os.remove(path)
                except OSError:
                    pass

    # The summaries of the latency phase's runs are in results["latency"]; the
    # report's per-load tables are for the other phases.
    summary_for_tables = {k: v for k, v in results["summary"].items() if not k.startswith("latency-")}
    report = write_report(path_base, args, meta, dict(results, summary=summary_for_tables))
    with open(path_base + ".json", "w") as f:
        json.dump({"meta": meta, "options": vars(args), "results": results}, f, indent=1, default=str)
    log("\n" + report)
    log(f"\nresults: {path_base}.md  {path_base}.json  (server logs in {workdir})")
    return status


def line(r):
    """A run's progress line."""
    return (f"{r['rps']:>9,.0f} req/s  err {r['errors']:<4} p50 {fmt(r['p50_ms'], 2):>6} ms  "
            f"p99 {fmt(r['p99_ms'], 2):>6} ms  cpu {fmt(r['cpu_us_per_req'], 1):>6} us/req  "
            f"server {fmt(r.get('server_cpu_pct'), 0)}%  client {fmt(r.get('client_cpu_pct'), 0)}%"
            + (f"  tls errors {r.get('tls_errors', 0)}  conns/req {r['conns_per_req']:.3f}"
               if r.get("conns_per_req") is not None and r.get("load", "").startswith("handshake") else "")
            + f"  other {r['other_pct']:.0f}%")


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except RuntimeError as e:
        print(f"compare_tls: {e}", file=sys.stderr)
        sys.exit(1)
