"""Unit tests of perf/compare_h2.py's pure parts: h2load's output over h2 and h2c
(req/s from the succeeded requests, status classes, what was negotiated), what makes
a run invalid, curl's check line, the idle figures, the summaries and verdicts, the
generated configurations and the report. With python3-h2 installed, also the idle
client against a small h2c server in the same process.

They need no server and no load tool: python3 perf/compare_h2_test.py
"""

import asyncio
import os
import sys
import tempfile
import unittest
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_h2 as ch  # noqa: E402

# h2load 1.52 (Debian 12) -c10 -m10 -t1 -D 2 over TLS against ours at 7223609.
H2LOAD_TLS = """starting benchmark...
spawning thread #0: 10 total client(s). Timing-based test with 0s of warm-up time and 2s of main duration for measurements.
Warm-up started for thread #0.
progress: 10% of clients started
progress: 100% of clients started
Warm-up phase is over for thread #0.
Main benchmark duration is started for thread #0.
TLS Protocol: TLSv1.3
Cipher: TLS_AES_128_GCM_SHA256
Server Temp Key: X25519 253 bits
Application protocol: h2
Main benchmark duration is over for thread #0. Stopping all clients.
Stopped all clients for thread #0

finished in 2.00s, 120250.00 req/s, 1.84MB/s
requests: 240500 total, 240600 started, 240500 done, 240500 succeeded, 0 failed, 0 errored, 0 timeout
status codes: 240500 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 3.67MB (3849220) total, 1.61MB (1684050) headers (space savings 90.54%), 0B (0) data
                     min         max         mean         sd        +/- sd
time for request:      105us     11.79ms       638us       809us    92.46%
time for connect:    61.42ms    119.42ms    102.79ms     20.27ms    80.00%
time to 1st byte:   120.33ms    122.18ms    121.74ms       719us    80.00%
req/s           :   11951.70    12074.97    12013.73       41.39    60.00%
"""

# The same against ours' static files before it served them over HTTP/2: every answer 501.
H2LOAD_501 = """starting benchmark...
spawning thread #0: 2 total client(s). 10 total requests
TLS Protocol: TLSv1.3
Cipher: TLS_AES_128_GCM_SHA256
Server Temp Key: X25519 253 bits
Application protocol: h2
progress: 100% done

finished in 10.12ms, 988.63 req/s, 78.20KB/s
requests: 10 total, 10 started, 10 done, 0 succeeded, 10 failed, 0 errored, 0 timeout
status codes: 0 2xx, 0 3xx, 0 4xx, 10 5xx
traffic: 810B (810) total, 176B (176) headers (space savings 81.86%), 320B (320) data
                     min         max         mean         sd        +/- sd
time for request:       30us      3.79ms       424us      1.18ms    90.00%
"""

# h2c against nginx on a 1 KiB file (status codes may count one more than succeeded).
H2LOAD_H2C = """starting benchmark...
Application protocol: h2c
finished in 1.00s, 48227.00 req/s, 52.89MB/s
requests: 48227 total, 48327 started, 48227 done, 48227 succeeded, 0 failed, 0 errored, 0 timeout
status codes: 48228 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 52.89MB (55461657) total, 4.97MB (5208624) headers (space savings 39.66%), 47.10MB (49384448) data
                     min         max         mean         sd        +/- sd
time for request:      190us     30.20ms      1.89ms      1.20ms    85.00%
"""

# A server that speaks no HTTP/2 on a plain port: h2load prints no summary.
H2LOAD_NO_H2 = """starting benchmark...
spawning thread #0: 1 total client(s). 1 total requests
Application protocol: h2c
No protocol negotiated. Fallback behaviour may be activated
Server does not support HTTP/2. Please check your configuration
"""


class H2loadTest(unittest.TestCase):
    def test_tls_run(self):
        r = ch.parse_h2load(H2LOAD_TLS)
        self.assertEqual(r["succeeded"], 240500)
        self.assertEqual(r["requests"], 240500)
        self.assertAlmostEqual(r["rps"], 240500 / 2.0)
        self.assertEqual(r["rps_done"], 120250.0)
        self.assertEqual(r["status"], {"2xx": 240500, "3xx": 0, "4xx": 0, "5xx": 0})
        self.assertEqual((r["tls_protocol"], r["tls_cipher"], r["tls_group"], r["alpn"]),
                         ("TLSv1.3", "TLS_AES_128_GCM_SHA256", "X25519", "h2"))
        self.assertEqual((r["bytes_total"], r["bytes_headers"], r["bytes_data"]), (3849220, 1684050, 0))
        self.assertAlmostEqual(r["mean_ms"], 0.638)
        self.assertEqual(ch.run_problems(r, "h2"), [])

    def test_every_answer_5xx_is_invalid(self):
        r = ch.parse_h2load(H2LOAD_501)
        self.assertEqual(r["requests"], 0)
        self.assertEqual(r["rps"], 0)
        self.assertEqual(r["rps_done"], 988.63)  # h2load's own rate counts the 501s
        p = ch.run_problems(r, "h2")
        self.assertIn("10 of 10 answers 5xx", p)
        self.assertIn("no request succeeded", p)
        self.assertFalse(any("failed" in x for x in p))  # the 5xx are h2load's "failed": said once

    def test_h2c_file_run(self):
        r = ch.parse_h2load(H2LOAD_H2C)
        self.assertEqual(r["alpn"], "h2c")
        self.assertIsNone(r["tls_protocol"])
        self.assertEqual(ch.run_problems(r, "h2c", body_bytes=1024), [])
        # The same bytes for a 64 KiB file are far too few per answer.
        p = ch.run_problems(r, "h2c", body_bytes=65536)
        self.assertEqual(len(p), 1)
        self.assertIn("body bytes per answer", p[0])

    def test_wrong_protocol_or_cipher(self):
        r = ch.parse_h2load(H2LOAD_H2C)
        self.assertIn("protocol h2c (expected h2)", ch.run_problems(r, "h2"))
        tls12 = H2LOAD_TLS.replace("TLSv1.3", "TLSv1.2").replace("TLS_AES_128_GCM_SHA256",
                                                                "ECDHE-ECDSA-AES256-GCM-SHA384")
        p = ch.run_problems(ch.parse_h2load(tls12), "h2")
        self.assertEqual(p, ["TLS version TLSv1.2 (expected TLSv1.3)",
                             "cipher ECDHE-ECDSA-AES256-GCM-SHA384 (expected TLS_AES_128_GCM_SHA256)"])

    def test_errors_timeouts_and_4xx(self):
        out = H2LOAD_TLS.replace("240500 succeeded, 0 failed, 0 errored, 0 timeout",
                                 "240400 succeeded, 100 failed, 3 errored, 2 timeout").replace(
            "240500 2xx, 0 3xx, 0 4xx", "240400 2xx, 0 3xx, 100 4xx")
        r = ch.parse_h2load(out)
        self.assertEqual((r["failed"], r["errored"], r["timeouts"]), (100, 3, 2))
        self.assertEqual(ch.run_problems(r, "h2"), ["100 of 240,500 answers 4xx", "3 errored", "2 timed out"])
        # Failed without a status (a reset stream) is said as failed.
        out = H2LOAD_TLS.replace("240500 succeeded, 0 failed", "240495 succeeded, 5 failed")
        self.assertEqual(ch.run_problems(ch.parse_h2load(out), "h2"), ["5 failed"])

    def test_no_summary(self):
        with self.assertRaises(RuntimeError):
            ch.parse_h2load(H2LOAD_NO_H2)
        self.assertEqual(ch.run_problems({"error": "h2load gave no figures (exit 1)"}, "h2c"),
                         ["h2load gave no figures (exit 1)"])

    def test_load_commands(self):
        load = ch.H2Load("h2", 100, 10, "/test/fast", 5, "/tmp/client.cnf", group="fast")
        self.assertEqual(load.key, "fast-h2-c100-m10")
        self.assertEqual(load.argv("127.0.0.2", 18280),
                         ["env", "OPENSSL_CONF=/tmp/client.cnf", "h2load", "-c", "100", "-m", "10", "-t", "1", "-D",
                          "5", "--tls13-ciphers=TLS_AES_128_GCM_SHA256", "--groups=X25519",
                          "https://127.0.0.2:18280/test/fast"])
        load = ch.H2Load("h2c", 10, 100, "/f64k.bin", 2, "/tmp/client.cnf", body_bytes=65536, group="files-64k")
        self.assertEqual(load.argv("127.0.0.3", 18281),
                         ["h2load", "-c", "10", "-m", "100", "-t", "1", "-D", "2", "http://127.0.0.3:18281/f64k.bin"])
        self.assertEqual(load.command_text(0).split()[:3], ["taskset", "-c", "0"])
        keys = [l.key for l in ch.fast_loads(5, "c") + ch.files_loads(5, "c")]
        self.assertEqual(len(keys), len(set(keys)))
        self.assertEqual(len(keys), 4 + 8)


class CheckAndIdleTest(unittest.TestCase):
    def test_curl_line(self):
        self.assertEqual(ch.parse_curl("200 2 1024"), (200, "2", 1024))
        self.assertEqual(ch.parse_curl("501 2 32"), (501, "2", 32))
        self.assertEqual(ch.parse_curl("000 0 0"), (0, "0", 0))
        self.assertEqual(ch.parse_curl(""), (0, None, 0))

    def test_idle_figures(self):
        opened = {"answered_200": 1000, "statuses": {"200": 1000}, "errors": {}}
        f = ch.idle_figures(20 * 1024, 30 * 1024, 1000, opened, 1000)
        self.assertAlmostEqual(f["kib_per_conn"], 10.24)
        self.assertAlmostEqual(f["bytes_per_conn"], 10.24 * 1024)
        self.assertEqual((f["rss_before_mib"], f["rss_after_mib"], f["rss_delta_mib"]), (20, 30, 10))
        self.assertEqual(f["problems"], [])

    def test_idle_figures_invalid(self):
        opened = {"answered_200": 990, "statuses": {"200": 990, "503": 5}, "errors": {"ConnectionError": 5}}
        f = ch.idle_figures(0, 1000, 1000, opened, 980)
        self.assertEqual(f["problems"], ["990 of 1,000 connections answered 200 (statuses 503 x5) "
                                         "(errors: ConnectionError x5)",
                                         "10 connections closed by the server before the reading"])


class ConfigTest(unittest.TestCase):
    def test_nginx(self):
        c = ch.nginx_conf("/d", 18282, 18283, "/c.crt", "/c.key", "/root")
        self.assertIn("listen 18282 ssl http2 backlog=4096;", c)
        self.assertIn("listen 18283 http2 backlog=4096;", c)
        self.assertIn("worker_processes 1;", c)
        self.assertIn("ssl_protocols TLSv1.3;", c)
        self.assertIn("ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256;", c)
        self.assertIn('location = /test/fast { return 200 ""; }', c)
        self.assertIn("root /root;", c)
        self.assertIn("keepalive_timeout 600s;", c)
        self.assertNotIn("http2_idle_timeout", c)  # obsolete since 1.19.7

    def test_h2o(self):
        c = ch.h2o_conf("/d", 18284, 18285, "/c.crt", "/c.key", "/d/empty", "/root")
        self.assertEqual(c.count("\nlisten:\n"), 2)
        self.assertIn("  port: 18284\n  ssl:\n    certificate-file: /c.crt\n", c)
        self.assertIn("listen:\n  port: 18285\nhosts:", c)
        self.assertIn("num-threads: 1\n", c)
        self.assertIn("http2-idle-timeout: 600\n", c)
        self.assertIn("      /test/fast:\n        file.file: /d/empty\n", c)
        self.assertIn("      /:\n        file.dir: /root\n", c)

    def test_ours(self):
        cmd = ch.ours_cmd("/bin/server", 18280, 18281, "/c.crt", "/c.key", "/root", 1, extra=["-v"])
        self.assertEqual(cmd, ["/bin/server", "--listen=:18280,tls", "--listen=:18281", "-A", "1", "-w", "1",
                               "--http2=on", "--tls-cert=/c.crt", "--tls-key=/c.key", "--root=/root",
                               "--idle-timeout=600s", "-v"])


def run(server, rnd, rps=None, cpu=None, problems=(), **kw):
    return dict(server=server, round=rnd, rps=rps, cpu_us_per_req=cpu, problems=list(problems), other_pct=1.0, **kw)


class SummaryTest(unittest.TestCase):
    def test_invalid_run_makes_the_row_invalid(self):
        s = ch.summarize([run("ours", 0, 100, 2.0), run("ours", 1, None, None, ["10 of 10 answers 5xx"])])
        self.assertEqual(s["runs"], 2)
        self.assertEqual(s["invalid"], ["round 2: 10 of 10 answers 5xx"])
        self.assertIsNone(ch.med(s, "rps"))
        self.assertEqual(ch.cell(s, "rps"), "**invalid**")

    def test_verdicts(self):
        mk = lambda rps, cpu: ch.summarize([run("x", 0, rps, cpu)])
        row = {"ours": mk(110, 1.0), "h2o": mk(100, 1.0), "nginx": mk(50, 2.0)}
        self.assertEqual(ch.target_verdict(row), "PASS")
        self.assertAlmostEqual(ch.row_ratio(row, "rps", "ours", "nginx"), 2.2)
        row["h2o"] = mk(100, 0.8)
        self.assertEqual(ch.target_verdict(row), "FAIL (CPU/req 1.250x)")
        row["ours"] = mk(90, 0.8)
        self.assertEqual(ch.target_verdict(row), "FAIL (req/s 0.900x)")
        row["ours"] = ch.summarize([run("ours", 0, None, None, ["no request succeeded"])])
        self.assertEqual(ch.target_verdict(row), "n/a")
        self.assertEqual(ch.target_verdict({"ours": mk(1, 1)}), "n/a")
        idle = lambda k: ch.summarize([dict(kib_per_conn=k, problems=[])], ch.IDLE_METRICS)
        self.assertEqual(ch.idle_verdict({"ours": idle(3.0), "h2o": idle(3.0)}), "PASS")
        self.assertEqual(ch.idle_verdict({"ours": idle(6.0), "h2o": idle(3.0)}), "FAIL (2.000x)")

    def test_report(self):
        args = SimpleNamespace(servers=["ours", "nginx", "h2o"], rounds=1, duration=1, pin=True, server_cpu=1,
                               load_cpu=0, idle_settle=1.0)
        meta = {"started": "2026-11-26T22:00:00", "machine": "2 CPUs", "versions": "v", "server_cmds": {}}
        ok = lambda name, rps, cpu: ch.summarize([run(name, 0, rps, cpu)])
        bad = ch.summarize([run("ours", 0, None, None, ["82,600 of 82,600 answers 5xx", "no request succeeded"],
                                status={"2xx": 0, "3xx": 0, "4xx": 0, "5xx": 82600})])
        results = {
            "checks": [{"server": "ours", "proto": "h2c", "path": "/f1k.bin", "status": 501, "version": "2",
                        "bytes": 32, "verdict": "status 501"}],
            "loads": [{"key": "fast-h2c-c100-m10", "title": "h2c h2load -c100 -m10 /test/fast", "command": "h2load"},
                      {"key": "files-1k-h2c-c100-m10", "title": "h2c h2load -c100 -m10 /f1k.bin",
                       "command": "h2load"}],
            "summary": {"fast-h2c-c100-m10": {"ours": ok("ours", 200000, 2.0), "nginx": ok("nginx", 80000, 6.0),
                                              "h2o": ok("h2o", 180000, 1.9)},
                        "files-1k-h2c-c100-m10": {"ours": bad, "nginx": ok("nginx", 50000, 12.0),
                                                  "h2o": ok("h2o", 150000, 2.5)}},
            "idle_summary": {"h2c-1000": {n: ch.summarize([dict(kib_per_conn=k, rss_before_mib=20, rss_after_mib=30,
                                                               open_seconds=1, cpu_us_per_conn=70, problems=[])],
                                                         ch.IDLE_METRICS)
                                          for n, k in (("ours", 4.0), ("nginx", 6.1), ("h2o", 3.2))}},
            "runs": [run("ours", 0, None, None, ["x"], load="files-1k-h2c-c100-m10",
                         status={"2xx": 0, "3xx": 0, "4xx": 0, "5xx": 82600})],
        }
        with tempfile.TemporaryDirectory() as d:
            text = ch.write_report(os.path.join(d, "r"), args, meta, results)
            self.assertTrue(os.path.exists(os.path.join(d, "r.md")))
        self.assertIn("| ours | h2c | /f1k.bin | 501 | 2 | 32 | status 501 |", text)
        self.assertIn("| h2c h2load -c100 -m10 /test/fast | 200,000 | 80,000 | 180,000 | 1.11x | 2.50x | 2.00 | "
                      "6.00 | 1.90 | 1.05x | 0.33x | FAIL (CPU/req 1.053x) |", text)
        self.assertIn("| h2c h2load -c100 -m10 /f1k.bin | **invalid** | 50,000 | 150,000 | - | - | **invalid** | "
                      "12.00 | 2.50 | - | - | n/a |", text)
        self.assertIn("**ours invalid:** round 1: 82,600 of 82,600 answers 5xx; no request succeeded", text)
        self.assertIn("82,600 5xx", text)
        self.assertIn("| h2c | 1,000 | 4.00 | 6.10 | 3.20 | 1.25x | 0.66x | FAIL (1.250x) |", text)


try:
    import h2.config  # noqa: F401
    import h2.connection
    import h2.events
    HAVE_H2 = True
except ImportError:
    HAVE_H2 = False


@unittest.skipUnless(HAVE_H2, "python3-h2 is not installed")
class IdleClientTest(unittest.TestCase):
    """The idle client against an h2c server made with python3-h2 here: every
    connection answered 200 and held; one the server closes is seen as gone."""

    def test_open_hold_and_lose(self):
        async def main():
            server_conns = []

            async def serve(reader, writer):
                conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
                conn.initiate_connection()
                writer.write(conn.data_to_send())
                server_conns.append(writer)
                while True:
                    data = await reader.read(65536)
                    if not data:
                        break
                    for ev in conn.receive_data(data):
                        if isinstance(ev, h2.events.RequestReceived):
                            status = "200" if dict(ev.headers).get(b":path") == b"/test/fast" else "404"
                            conn.send_headers(ev.stream_id, [(":status", status), ("content-length", "0")],
                                              end_stream=True)
                    writer.write(conn.data_to_send())
                writer.close()

            server = await asyncio.start_server(serve, "127.0.0.1", 0)
            port = server.sockets[0].getsockname()[1]
            tally, conns = await ch.open_idle("h2c", "127.0.0.1", port, 20, "/test/fast", opening=5)
            self.assertEqual(tally["answered_200"], 20)
            self.assertEqual(tally["negotiated"], {"h2c": 20})
            self.assertEqual(tally["errors"], {})
            self.assertEqual(ch.still_open(conns), {"still_open": 20, "goaway": 0})
            server_conns[0].close()
            await asyncio.sleep(0.2)
            self.assertEqual(ch.still_open(conns)["still_open"], 19)
            tally, more = await ch.open_idle("h2c", "127.0.0.1", port, 3, "/nothing", opening=5)
            self.assertEqual((tally["answered_200"], tally["statuses"]), (0, {"404": 3}))
            for c in conns + more:
                c.close()
            server.close()
            await server.wait_closed()

        asyncio.run(main())


if __name__ == "__main__":
    unittest.main()
