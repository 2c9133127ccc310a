"""Unit tests of perf/compare_tls.py's pure parts: generated configurations, the
ClientHello/ServerHello parser and the sniffing relay, the tally of handshakes,
the s_client and ab parsers, the latency figures and the report.

They need no server, no load tool and no openssl binary: python3 perf/compare_tls_test.py
"""

import os
import socket
import contextlib
import io
import ssl
import sys
import tempfile
import threading
import unittest
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_tls as ct  # noqa: E402


# ---------------------------------------------------------------------------
# Synthetic handshake messages
# ---------------------------------------------------------------------------

def u16(n):
    return n.to_bytes(2, "big")


def ext(t, data):
    return u16(t) + u16(len(data)) + data


def handshake(mtype, body):
    return bytes([mtype]) + len(body).to_bytes(3, "big") + body


def record(ctype, payload, version=0x0303):
    return bytes([ctype]) + u16(version) + u16(len(payload)) + payload


def client_hello(versions=(0x0304, 0x0303), ciphers=(0x1301,), groups=(0x1D, 0x17), shares=(0x1D,),
                 sid=b"\x11" * 32, ticket=None, psk=False):
    exts = ext(ct.EXT_SERVER_NAME, b"\x00\x0c\x00\x00\x09localhost")
    exts += ext(ct.EXT_GROUPS, u16(2 * len(groups)) + b"".join(u16(g) for g in groups))
    if ticket is not None:
        exts += ext(ct.EXT_TICKET, ticket)
    exts += ext(ct.EXT_VERSIONS, bytes([2 * len(versions)]) + b"".join(u16(v) for v in versions))
    ks = b"".join(u16(g) + u16(32) + b"\x00" * 32 for g in shares)
    exts += ext(ct.EXT_KEY_SHARE, u16(len(ks)) + ks)
    if psk:
        exts += ext(ct.EXT_PSK, u16(7) + u16(1) + b"x" + b"\x00\x00\x00\x00" + u16(33) + b"\x20" + b"\x00" * 32)
    cs = b"".join(u16(c) for c in (0x0A0A,) + tuple(ciphers))  # with a GREASE value
    body = u16(0x0303) + b"\x01" * 32 + bytes([len(sid)]) + sid + u16(len(cs)) + cs + b"\x01\x00"
    body += u16(len(exts)) + exts
    return handshake(1, body)


def server_hello(version=0x0304, cipher=0x1301, group=0x1D, sid=b"\x11" * 32, psk=False, hrr=False):
    exts = b""
    if version == 0x0304:
        exts += ext(ct.EXT_VERSIONS, u16(0x0304))
        exts += ext(ct.EXT_KEY_SHARE, u16(group) + (b"" if hrr else u16(32) + b"\x00" * 32))
        if psk:
            exts += ext(ct.EXT_PSK, u16(0))
    random = ct.HRR_RANDOM if hrr else b"\x02" * 32
    body = u16(0x0303) + random + bytes([len(sid)]) + sid + u16(cipher) + b"\x00" + u16(len(exts)) + exts
    return handshake(2, body)


def tls12_full_flight(cipher=0xC02B, group=0x1D):
    ske = b"\x03" + u16(group) + b"\x20" + b"\x00" * 32 + u16(0x0403) + u16(4) + b"sig!"
    return record(22, server_hello(0x0303, cipher, sid=b"\x22" * 32) + handshake(11, b"\x00\x00\x00")
                  + handshake(12, ske) + handshake(14, b""))


def feed_bytewise(parser, data):
    for i in range(len(data)):
        parser.feed(data[i:i + 1])
    return parser


class ConfigTest(unittest.TestCase):
    def test_client_conf_tls13(self):
        c = ct.openssl_conf(False)
        self.assertIn("MinProtocol = TLSv1.3", c)
        self.assertIn("MaxProtocol = TLSv1.3", c)
        self.assertIn("Ciphersuites = TLS_AES_128_GCM_SHA256", c)
        self.assertIn("Groups = X25519:P-256", c)
        self.assertNotIn("NumTickets", c)
        self.assertTrue(c.startswith("# generated") and "system_default = system_default_sect" in c)

    def test_client_conf_tls12_and_server(self):
        c = ct.openssl_conf(True, server=True)
        self.assertIn("MinProtocol = TLSv1.2", c)
        self.assertIn("MaxProtocol = TLSv1.2", c)
        self.assertIn("CipherString = ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256", c)
        self.assertIn("NumTickets = 1", c)

    def test_nginx_conf(self):
        c = ct.nginx_conf("/d", 18181, "/d/ecdsa.crt", "/d/ecdsa.key", False)
        for line in ("listen 18181 ssl backlog=4096;", "ssl_certificate /d/ecdsa.crt;",
                     "ssl_certificate_key /d/ecdsa.key;", "ssl_protocols TLSv1.3;",
                     "ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256;", "ssl_conf_command NumTickets 1;",
                     "access_log off;", "worker_processes 1;", 'location = /test/fast { return 200 ""; }'):
            self.assertIn(line, c)
        self.assertEqual(c.count("{"), c.count("}"))
        self.assertIn("ssl_protocols TLSv1.2;", ct.nginx_conf("/d", 1, "c", "k", True))

    def test_h2o_conf(self):
        c = ct.h2o_conf("/d", 18182, "/d/rsa.crt", "/d/rsa.key", "/d/empty")
        for line in ("num-threads: 1", "  port: 18182", "    certificate-file: /d/rsa.crt",
                     "    key-file: /d/rsa.key", "        file.file: /d/empty", "  mode: ticket",
                     "    ocsp-update-interval: 0"):
            self.assertIn(line + "\n", c)
        self.assertNotIn("access-log", c)

    def test_delay_script(self):
        self.assertIn("return 10", ct.delay_script(10))

    def test_parse_args(self):
        a = ct.parse_args(["--quick", "--servers", "nginx,h2o", "--tls12"])
        self.assertEqual((a.rounds, a.duration, a.handshake_requests), (1, 2, ct.HANDSHAKE_REQUESTS_QUICK))
        self.assertEqual(a.servers, ["nginx", "h2o"])
        self.assertTrue(a.tls12)
        self.assertEqual(a.certs, ["ecdsa", "rsa"])
        self.assertEqual(ct.parse_args([]).handshake_requests, ct.HANDSHAKE_REQUESTS)
        with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
            ct.parse_args(["--servers", "apache"])


class HelloParserTest(unittest.TestCase):
    def test_client_hello_fresh(self):
        p = feed_bytewise(ct.HelloParser("client"), record(22, client_hello(ticket=b""), 0x0301))
        self.assertTrue(p.done)
        ch = p.info["client_hello"]
        self.assertEqual(ch["versions"], ["TLSv1.3", "TLSv1.2"])
        self.assertEqual(ch["ciphers"], ["TLS_AES_128_GCM_SHA256"])  # GREASE left out
        self.assertEqual(ch["groups"], ["X25519", "P-256"])
        self.assertEqual(ch["key_shares"], ["X25519"])
        self.assertFalse(ch["psk_offered"])
        self.assertFalse(ch["ticket_offered"])  # an empty extension asks for a ticket, offers none

    def test_client_hello_resuming(self):
        p = ct.HelloParser("client")
        p.feed(record(22, client_hello(ticket=b"T" * 100, psk=True)))
        self.assertTrue(p.info["client_hello"]["psk_offered"])
        self.assertTrue(p.info["client_hello"]["ticket_offered"])

    def test_client_hello_split_over_records(self):
        msg = client_hello()
        p = ct.HelloParser("client")
        p.feed(record(22, msg[:50]) + record(22, msg[50:]))
        self.assertEqual(p.info["client_hello"]["groups"], ["X25519", "P-256"])

    def test_real_client_hello_from_python_ssl(self):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
        with self.assertRaises(ssl.SSLWantReadError):
            obj.do_handshake()
        p = ct.HelloParser("client")
        p.feed(outgoing.read())
        ch = p.info["client_hello"]
        self.assertIn("TLSv1.3", ch["versions"])
        self.assertIn("TLS_AES_128_GCM_SHA256", ch["ciphers"])
        self.assertFalse(ch["psk_offered"])

    def test_tls13_full_and_resumed(self):
        p = feed_bytewise(ct.HelloParser("server"), record(22, server_hello()) + record(20, b"\x01")
                          + record(23, b"encrypted"))
        self.assertTrue(p.done)
        self.assertFalse(p.info["resumed"])
        self.assertEqual(p.info["server_hello"]["cipher"], "TLS_AES_128_GCM_SHA256")
        self.assertEqual(p.info["server_hello"]["group"], "X25519")
        self.assertEqual(p.info["server_hello"]["version"], "TLSv1.3")
        p = ct.HelloParser("server")
        p.feed(record(22, server_hello(psk=True)))
        self.assertTrue(p.info["resumed"])

    def test_tls13_hello_retry(self):
        p = ct.HelloParser("server")
        p.feed(record(22, server_hello(group=0x17, hrr=True)))
        self.assertTrue(p.info["hrr"])
        self.assertFalse(p.done)
        p.feed(record(20, b"\x01") + record(22, server_hello(group=0x17)))
        self.assertTrue(p.done)
        self.assertEqual(p.info["server_hello"]["group"], "P-256")

    def test_tls12_full(self):
        p = feed_bytewise(ct.HelloParser("server"), tls12_full_flight())
        self.assertTrue(p.done)
        self.assertFalse(p.info["resumed"])
        self.assertEqual(p.info["kx_group"], "X25519")
        self.assertEqual(p.info["server_hello"]["cipher"], "ECDHE-ECDSA-AES128-GCM-SHA256")
        v = ct.connection_verdict({"client_hello": {"psk_offered": False, "ticket_offered": False}}, p.info, 300, 900)
        self.assertEqual((v["full"], v["resumed"], v["version"], v["group"]), (True, False, "TLSv1.2", "X25519"))

    def test_tls12_abbreviated(self):
        p = ct.HelloParser("server")
        p.feed(record(22, server_hello(0x0303, 0xC02F) + handshake(4, b"\x00" * 10)) + record(20, b"\x01"))
        self.assertTrue(p.done)
        self.assertTrue(p.info["resumed"])

    def test_alert(self):
        p = ct.HelloParser("server")
        p.feed(record(21, b"\x02\x28"))
        self.assertEqual(p.info["alert"], 40)
        v = ct.connection_verdict({}, p.info, 100, 7)
        self.assertFalse(v["full"])
        self.assertEqual(v["alert"], 40)


def verdict(full=True, resumed=False, offered=False, version="TLSv1.3", cipher="TLS_AES_128_GCM_SHA256",
            group="X25519", client_bytes=300):
    return {"client_hello": True, "server_hello": True, "client_bytes": client_bytes, "server_bytes": 900,
            "offered_resumption": offered, "hrr": False, "alert": None, "resumed": resumed, "full": full,
            "version": version, "cipher": cipher, "group": group}


class TallyTest(unittest.TestCase):
    def test_counts_and_empty_connection(self):
        empty = {"client_hello": False, "server_hello": False, "client_bytes": 0, "server_bytes": 0,
                 "offered_resumption": False, "hrr": False, "alert": None, "resumed": False, "full": False}
        t = ct.tally([verdict(), verdict(), empty])
        self.assertEqual((t["connections"], t["empty"], t["full"]), (2, 1, 2))
        self.assertEqual(t["ciphers"], {"TLS_AES_128_GCM_SHA256": 2})
        self.assertEqual(ct.tally_problems(t, "TLSv1.3", "TLS_AES_128_GCM_SHA256", connections=2), [])

    def test_problems(self):
        t = ct.tally([verdict()] * 205)
        self.assertEqual(ct.tally_problems(t, "TLSv1.3", "TLS_AES_128_GCM_SHA256", requests=200, extra=10), [])
        self.assertEqual(ct.tally_problems(t, "TLSv1.3", "TLS_AES_128_GCM_SHA256", requests=200),
                         ["205 connections for 200 requests"])
        t = ct.tally([verdict(), verdict(full=False, resumed=True, offered=True),
                      verdict(cipher="TLS_AES_256_GCM_SHA384")])
        p = ct.tally_problems(t, "TLSv1.3", "TLS_AES_128_GCM_SHA256")
        self.assertIn("2 full handshakes of 3 connections", p)
        self.assertIn("1 resumed", p)
        self.assertIn("1 ClientHellos offered a ticket or PSK", p)
        self.assertIn("ciphers: {'TLS_AES_256_GCM_SHA384': 1}", p)
        self.assertEqual(ct.tally_problems(ct.tally([]), "TLSv1.3", "x"), ["no connection seen"])
        self.assertEqual(ct.tally_wrong(t, "TLSv1.3", "TLS_AES_128_GCM_SHA256"),
                         ["1 resumed", "1 ClientHellos offered a ticket or PSK",
                          "ciphers: {'TLS_AES_256_GCM_SHA384': 1}"])
        self.assertEqual(ct.tally_wrong(ct.tally([verdict()] * 9), "TLSv1.3", "TLS_AES_128_GCM_SHA256"), [])
        self.assertIn("2 full handshakes", ct.tally_text(ct.tally([verdict(), verdict()])))


class SnifferTest(unittest.TestCase):
    def test_relay_parses_both_directions(self):
        """A fake server answering a ClientHello with a ServerHello, through the relay."""
        ls = socket.socket()
        ls.bind(("127.0.0.1", 0))
        ls.listen(8)
        port = ls.getsockname()[1]

        def serve():
            for _ in range(2):
                c, _ = ls.accept()
                with c:
                    data = b""
                    while len(data) < 5:
                        data += c.recv(65536)
                    c.sendall(record(22, server_hello(psk=b"T" * 10 in data)) + record(23, b"x" * 100))
                    while c.recv(65536):
                        pass
        t = threading.Thread(target=serve, daemon=True)
        t.start()
        with ct.HandshakeSniffer(port) as sn:
            for resume in (False, True):
                with socket.create_connection(("127.0.0.1", sn.port)) as s:
                    s.sendall(record(22, client_hello(ticket=b"T" * 10 if resume else b"", psk=resume)))
                    got = b""
                    while len(got) < 100:
                        got += s.recv(65536)
                    s.shutdown(socket.SHUT_WR)
                    while s.recv(65536):
                        pass
        t.join(timeout=5)
        ls.close()
        tally = ct.tally(sn.verdicts())
        self.assertEqual((tally["connections"], tally["full"], tally["resumed"], tally["offered_resumption"]),
                         (2, 1, 1, 1))


S_CLIENT_13 = """CONNECTED(00000003)
---
Peer signing digest: SHA256
Peer signature type: ECDSA
Server Temp Key: X25519, 253 bits
---
New, TLSv1.3, Cipher is TLS_AES_128_GCM_SHA256
Server public key is 256 bit
---
HTTP/1.1 200 OK
Content-Length: 0

---
Post-Handshake New Session Ticket arrived:
SSL-Session:
    TLS session ticket lifetime hint: 300 (seconds)
---
"""

S_CLIENT_12 = """Peer signature type: RSA-PSS
Server Temp Key: X25519, 253 bits
---
New, TLSv1.2, Cipher is ECDHE-RSA-AES128-GCM-SHA256
Server public key is 2048 bit
SSL-Session:
    TLS session ticket lifetime hint: 7200 (seconds)
HTTP/1.1 200 OK
"""

AB_TLS = """Server Software:        nginx/1.22.1
SSL/TLS Protocol:       TLSv1.3,TLS_AES_128_GCM_SHA256,256,128
Server Temp Key:        X25519 253 bits
Complete requests:      200
Total transferred:      28400 bytes
"""


class ToolParserTest(unittest.TestCase):
    def test_s_client(self):
        r = ct.parse_s_client(S_CLIENT_13, False)
        self.assertEqual((r["protocol"], r["cipher"], r["group"], r["signature"], r["key_bits"], r["tickets"],
                          r["http_status"]), ("TLSv1.3", "TLS_AES_128_GCM_SHA256", "X25519", "ECDSA", 256, 1, 200))
        r = ct.parse_s_client(S_CLIENT_12, True)
        self.assertEqual((r["protocol"], r["cipher"], r["signature"], r["key_bits"], r["tickets"]),
                         ("TLSv1.2", "ECDHE-RSA-AES128-GCM-SHA256", "RSA-PSS", 2048, 1))
        r = ct.parse_s_client("CONNECTED(00000003)\nNew, (NONE), Cipher is (NONE)\n", False)
        self.assertEqual((r["protocol"], r["cipher"], r["http_status"]), (None, None, None))

    def test_ab_tls(self):
        t = ct.parse_ab_tls(AB_TLS)
        self.assertEqual(t, {"protocol": "TLSv1.3", "cipher": "TLS_AES_128_GCM_SHA256", "transferred": 28400})
        self.assertIsNone(ct.ab_tls_problem(t, 200, "TLSv1.3", "TLS_AES_128_GCM_SHA256"))
        self.assertIn("expected TLSv1.2", ct.ab_tls_problem(t, 200, "TLSv1.2", "ECDHE-RSA-AES128-GCM-SHA256"))
        self.assertIn("28400 bytes", ct.ab_tls_problem(t, 1000, "TLSv1.3", "TLS_AES_128_GCM_SHA256"))
        self.assertIn("no handshake", ct.ab_tls_problem(ct.parse_ab_tls("Complete requests: 3\n"), 3, "a", "b"))

    def test_ab_tls_errors(self):
        out = AB_TLS + ("SSL handshake failed (1).\n80B5:error:0A000410:SSL routines::alert\n" * 3
                        + "SSL read failed (5) - closing connection\n")
        self.assertEqual(ct.ab_tls_errors(out), 4)
        r = ct.fix_ab_counts({"requests": 200, "errors": 1, "seconds": 2.0, "rps": 100.0}, out)
        self.assertEqual((r["requests"], r["errors"], r["rps"], r["tls_errors"]), (196, 5, 98.0, 4))
        r = ct.fix_ab_counts({"requests": 200, "errors": 0, "seconds": 2.0, "rps": 100.0}, AB_TLS)
        self.assertEqual((r["requests"], r["rps"], r["tls_errors"]), (200, 100.0, 0))

    def test_passive_opens(self):
        n = ct.passive_opens()
        self.assertTrue(n is None or n >= 0)


class FiguresAndReportTest(unittest.TestCase):
    def runs(self, p99s, label, load):
        return [{"round": i, "rps": 4000.0, "p50_ms": 0.5, "p99_ms": p, "errors": 0, "cpu_us_per_req": 20.0,
                 "server_cpu_pct": 50.0, "client_cpu_pct": 20.0, "other_pct": 1.0, "beside_rps": 1000.0,
                 "beside_cpu_pct": 80.0, "server": label, "load": load} for i, p in enumerate(p99s)]

    def test_latency_figures(self):
        alone, beside = self.runs([1.0, 2.0, 1.5], "x", "a"), self.runs([4.0, 5.0, 9.0], "x", "b")
        f = ct.latency_figures(ct.summarize(alone), ct.summarize(beside))
        self.assertEqual((f["p99_alone_ms"], f["p99_beside_ms"]), (1.5, 5.0))
        self.assertAlmostEqual(f["p99_ratio"], 5.0 / 1.5)
        self.assertEqual(ct.pair_ratios(alone, beside), [4.0, 2.5, 6.0])
        self.assertEqual(f["handshakes_per_s_beside"], 1000.0)

    def test_report(self):
        args = ct.parse_args(["--quick"])
        labels = ["ours (ecdsa)", "nginx (ecdsa)", "h2o (ecdsa)"]
        summary = {}
        for key in ("keepalive-c100", "handshake-ecdsa"):
            summary[key] = {}
            for k, label in enumerate(labels):
                rs = self.runs([1.0], label, key)
                for r in rs:
                    r.update(rps=1000.0 * (k + 1), cpu_us_per_req=10.0 * (k + 1), conns_per_s=900.0 * (k + 1),
                             cpu_us_per_conn=400.0, conns_per_req=1.01, client_cpu_pct=95.0)
                summary[key][label] = ct.summarize(rs)
        t = ct.tally([verdict()] * 3)
        check = {"s_client": ct.parse_s_client(S_CLIENT_13, False),
                 "s_client_unrestricted": ct.parse_s_client(S_CLIENT_13, False),
                 "ab": {"tally": t, "requests": 3, "problems": []},
                 "wrk": {"tally": t, "requests": 100, "problems": []},
                 "wrk_close": {"tally": ct.tally([verdict(), verdict(full=False, resumed=True)]), "requests": 2,
                               "problems": ["1 resumed"]}}
        f = ct.latency_figures(ct.summarize(self.runs([1.0], "x", "a")), ct.summarize(self.runs([3.0], "x", "b")))
        results = {"notes": ["a note"], "checks": {labels[0]: check}, "summary": summary,
                   "titles": {"keepalive-c100": "wrk -c100", "handshake-ecdsa": "ab -c50"},
                   "commands": {"check-ab": "ab ...", "keepalive-c100": "wrk ...", "handshake-ecdsa": "ab ...",
                                "latency-alone": "wrk -s delay.lua", "latency-beside-ab": "nice ab"},
                   "latency": {"ecdsa": {labels[0]: dict(f, ratios=[3.0])}}, "beside_problems": [],
                   "configs": {"clients' OPENSSL_CONF": ct.openssl_conf(False)},
                   "runs": [{"load": "handshake-ecdsa", "server": labels[1], "round": 0, "other_pct": 45.0},
                            {"load": "handshake-ecdsa", "server": labels[0], "round": 0, "other_pct": 2.0}]}
        meta = {"started": "now", "machine": "2 CPUs", "versions": "v", "server_cmds": {labels[0]: "server"}}
        with tempfile.TemporaryDirectory() as d:
            text = ct.write_report(os.path.join(d, "r"), args, meta, results)
            self.assertTrue(os.path.exists(os.path.join(d, "r.md")))
        self.assertIn("ours/nginx: req/s 0.50x, CPU/req 0.50x", text)
        self.assertIn("ours/h2o: handshakes/s 0.33x", text)
        self.assertIn("| ECDSA P-256 | ours (ecdsa) | 4,000 | 0.50 | 1.00 | 4,000 | 0.50 | 3.00 | 3.00x |", text)
        self.assertIn("not used: it resumes 1 of 2 (reference)", text)
        self.assertIn("ab used more than 90% of its CPU", text)
        self.assertIn("MinProtocol = TLSv1.3", text)
        self.assertIn("during 1 of 2 runs** (req/s and latencies disturbed, CPU/req less so; worth repeating): "
                      "handshake-ecdsa nginx (ecdsa) round 1 (45%)", text)


if __name__ == "__main__":
    unittest.main()
