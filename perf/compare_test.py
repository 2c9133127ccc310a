"""Unit tests of perf/compare.py: output parsers, statistics, targets, generated configs.

They need none of the servers or load tools, so that `bazel test //...` notices
when a change breaks the comparison script.
"""

import argparse
import json
import os
import select
import socket
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

WRK_OUTPUT = """Running 10s test @ http://127.0.0.1:18080/test/fast
  1 threads and 1000 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    10.73ms    5.02ms 210.11ms   80.43%
    Req/Sec    59.31k     4.21k   66.12k    72.00%
  Latency Distribution
     50%  850.00us
     75%   12.10ms
     90%   17.33ms
     99%    1.25s
  592551 requests in 10.01s, 21.48MB read
  Socket errors: connect 0, read 3, write 1, timeout 2
  Non-2xx or 3xx responses: 4
Requests/sec:  59197.12
Transfer/sec:      2.15MB
"""

AB_OUTPUT = """This is ApacheBench, Version 2.3 <$Revision: 1903618 $>
Server Software:
Server Hostname:        127.0.0.1
Server Port:            18080

Document Path:          /test/fast
Document Length:        0 bytes

Concurrency Level:      50
Time taken for tests:   4.123 seconds
Complete requests:      20000
Failed requests:        5
   (Connect: 0, Receive: 0, Length: 5, Exceptions: 0)
Non-2xx responses:      7
Total transferred:      760000 bytes
Requests per second:    4850.84 [#/sec] (mean)
"""


# h2load 1.52 (Debian 12), --h1 -c 10 -m 16 -t 1 -D 1 against bare_responder --pipelined.
H2LOAD_OUTPUT = """starting benchmark...
spawning thread #0: 10 total client(s). Timing-based test with 0s of warm-up time and 1s of main duration for measurements.
Warm-up started for thread #0.
progress: 10% of clients started
progress: 100% of clients started
Warm-up phase is over for thread #0.
Main benchmark duration is started for thread #0.
Application protocol: http/1.1
Main benchmark duration is over for thread #0. Stopping all clients.
Stopped all clients for thread #0

finished in 1.00s, 1069744.00 req/s, 38.77MB/s
requests: 1069744 total, 1069904 started, 1069744 done, 1069744 succeeded, 0 failed, 0 errored, 0 timeout
status codes: 1069744 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 38.77MB (40650272) total, 15.30MB (16047120) headers (space savings 0.00%), 0B (0) data
                     min         max         mean         sd        +/- sd
time for request:       37us      3.26ms       149us        79us    83.53%
time for connect:        9us        79us        48us        22us    70.00%
time to 1st byte:        0us         0us         0us         0us     0.00%
req/s           :  105517.93   109711.66   106955.12     1318.98    70.00%
"""


class ParserTest(unittest.TestCase):
    def test_wrk(self):
        r = compare.parse_wrk(WRK_OUTPUT)
        self.assertEqual(r["requests"], 592551)
        self.assertAlmostEqual(r["seconds"], 10.01)
        self.assertAlmostEqual(r["rps"], 59197.12)
        self.assertEqual(r["errors"], 3 + 1 + 2 + 4)
        self.assertAlmostEqual(r["p50_ms"], 0.85)
        self.assertAlmostEqual(r["p99_ms"], 1250.0)

    def test_wrk_transfer_is_binary_megabytes(self):
        r = compare.parse_wrk(WRK_OUTPUT)
        self.assertAlmostEqual(r["mib_per_s"], 2.15)
        out = WRK_OUTPUT.replace("2.15MB", "1.50GB")
        self.assertAlmostEqual(compare.parse_wrk(out)["mib_per_s"], 1536.0)
        out = WRK_OUTPUT.replace("2.15MB", "512.00KB")
        self.assertAlmostEqual(compare.parse_wrk(out)["mib_per_s"], 0.5)
        out = WRK_OUTPUT.replace("2.15MB", "512.00B")
        self.assertAlmostEqual(compare.parse_wrk(out)["mib_per_s"], 512 / 2 ** 20)
        out = "\n".join(l for l in WRK_OUTPUT.splitlines() if "Transfer" not in l)
        self.assertIsNone(compare.parse_wrk(out)["mib_per_s"])

    def test_wrk_without_errors_or_latency(self):
        out = "\n".join(l for l in WRK_OUTPUT.splitlines()
                        if "errors" not in l and "Non-2xx" not in l and "%" not in l)
        r = compare.parse_wrk(out)
        self.assertEqual(r["errors"], 0)
        self.assertIsNone(r["p99_ms"])

    def test_wrk_garbage(self):
        with self.assertRaises(RuntimeError):
            compare.parse_wrk("unable to connect to 127.0.0.1:1 Connection refused")

    def test_ab(self):
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write("Percentage served,Time in ms\n")
            for p in range(101):
                f.write(f"{p},{p / 10:.3f}\n")
        try:
            r = compare.parse_ab(AB_OUTPUT, f.name)
        finally:
            os.remove(f.name)
        self.assertEqual(r["requests"], 20000 - 5 - 7)
        self.assertEqual(r["errors"], 12)
        self.assertAlmostEqual(r["seconds"], 4.123)
        self.assertAlmostEqual(r["rps"], 4850.84)
        self.assertAlmostEqual(r["p50_ms"], 5.0)
        self.assertAlmostEqual(r["p99_ms"], 9.9)

    def test_ab_without_percentiles(self):
        r = compare.parse_ab(AB_OUTPUT, "/nonexistent.csv")
        self.assertIsNone(r["p50_ms"])

    def test_h2load(self):
        r = compare.parse_h2load(H2LOAD_OUTPUT)
        self.assertAlmostEqual(r["seconds"], 1.0)
        self.assertAlmostEqual(r["rps"], 1069744.0)
        self.assertEqual(r["requests"], 1069744)  # succeeded: what CPU/req divides by
        self.assertEqual(r["errors"], 0)
        self.assertAlmostEqual(r["mean_ms"], 0.149)  # the mean column, not min or max
        self.assertIsNone(r["p50_ms"])  # h2load gives no percentiles
        self.assertIsNone(r["p99_ms"])

    def test_h2load_failures_and_units(self):
        out = (H2LOAD_OUTPUT.replace("finished in 1.00s, 1069744.00 req/s", "finished in 21.72ms, 920852.71 req/s")
               .replace("1069744 succeeded, 0 failed, 0 errored", "1069700 succeeded, 44 failed, 40 errored")
               .replace("149us", "1.25ms"))
        r = compare.parse_h2load(out)
        self.assertAlmostEqual(r["seconds"], 0.02172)
        self.assertAlmostEqual(r["rps"], 920852.71)
        # failed counts 4xx/5xx and broken streams alike; errored is a part of it.
        self.assertEqual((r["requests"], r["errors"]), (1069700, 44))
        self.assertAlmostEqual(r["mean_ms"], 1.25)
        # Older h2load prints no timeout count.
        older = out.replace(", 0 timeout", "")
        self.assertEqual(compare.parse_h2load(older)["errors"], 44)

    def test_h2load_garbage(self):
        with self.assertRaises(RuntimeError):
            compare.parse_h2load("connect to 127.0.0.2:1 failed: Connection refused\nNo protocol negotiated")
        with self.assertRaises(RuntimeError):
            compare.parse_h2load("finished in 1.00s, 0.00 req/s, 0B/s\n")

    def test_h2load_load_is_parsed_as_h2load(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "h2load.txt")
            with open(path, "w") as f:
                f.write(H2LOAD_OUTPUT)
            load = compare.Load("pipelined-c100", "t", "h2load", lambda host, port, csv: ["cat", path])
            r = load.run(18080, d)
        self.assertEqual(r["requests"], 1069744)
        self.assertAlmostEqual(r["mean_ms"], 0.149)


METRICS_OUTPUT = """# HELP uring_http_sends_zerocopy_total Sends issued as IORING_OP_SEND_ZC (--send-zc).
# TYPE uring_http_sends_zerocopy_total counter
uring_http_sends_zerocopy_total 123456
# TYPE uring_http_sends_zerocopy_copied_total counter
uring_http_sends_zerocopy_copied_total 120000
uring_http_sends_zerocopy_refused_total 7
uring_http_requests_total{method="GET",route="/test/bytes",code="2xx"} 99
uring_http_sends_zerocopy_total_bogus 1
"""


def summary_of(values):
    """{load: {server: {metric: value}}} -> what compare.summarize makes of one run each."""
    return {load: {server: compare.summarize([metrics]) for server, metrics in servers.items()}
            for load, servers in values.items()}


class TargetTest(unittest.TestCase):
    def results(self, ours_cpu, ours_rps, ours_p99):
        other = {"nginx": (10.0, 40000.0, 10.0), "h2o": (10.0, 40000.0, 10.0), "bare": (6.0, 60000.0, 5.0)}
        values = {}
        for load in ("wrk-c100", "wrk-c1000"):
            values[load] = {s: {"cpu_us_per_req": c, "rps": r, "p99_ms": p} for s, (c, r, p) in other.items()}
            values[load]["ours"] = {"cpu_us_per_req": ours_cpu, "rps": ours_rps, "p99_ms": ours_p99}
        values["ab-c50"] = {"ours": {"cpu_us_per_req": 40.0}, "nginx": {"cpu_us_per_req": 50.0}}
        return {d: ok for d, _, _, ok in compare.evaluate_targets(summary_of(values), {})}

    def test_pass(self):
        t = self.results(ours_cpu=6.5, ours_rps=50000.0, ours_p99=8.0)
        self.assertTrue(t["wrk-c100 CPU/req ours/nginx"])
        self.assertTrue(t["wrk-c1000 rps ours/h2o"])
        self.assertTrue(t["wrk-c100 p99 ours/nginx"])
        self.assertTrue(t["wrk-c100 CPU/req ours/bare"])
        self.assertTrue(t["ab-c50 CPU/req ours/nginx"])  # 0.8x <= 0.85x

    def test_fail(self):
        t = self.results(ours_cpu=7.0, ours_rps=44000.0, ours_p99=11.0)
        self.assertFalse(t["wrk-c100 CPU/req ours/nginx"])   # 0.7x > 0.65x
        self.assertFalse(t["wrk-c100 rps ours/nginx"])       # 1.1x < 1.2x
        self.assertTrue(t["wrk-c100 rps ours/h2o"])          # 1.1x >= 1.1x
        self.assertFalse(t["wrk-c100 p99 ours/nginx"])
        self.assertFalse(t["wrk-c1000 CPU/req ours/bare"])   # 1.17x > 1.15x

    def test_missing_is_not_applicable(self):
        targets = compare.evaluate_targets({}, {})
        self.assertTrue(targets)
        self.assertTrue(all(ok is None for _, _, _, ok in targets))
        self.assertEqual(compare.verdict(None), "n/a")

    def test_ours_only_phases(self):
        special = {"slow": {"efficiency": 0.985, "p99_ms": 36.0},
                   "queue": {"seconds": 6.05, "deviation": 0.05 / 6},
                   "mixed": {"ratio": 0.89}}
        t = {d: ok for d, _, _, ok in compare.evaluate_targets({}, special)}
        self.assertTrue(t["slow efficiency (rps / 3333)"])
        self.assertFalse(t["slow p99"])
        self.assertTrue(t["queue test time vs 6 s"])
        self.assertFalse(t["mixed: fast rps with slow load / alone"])

    def test_slow_efficiency_names_the_references_but_checks_ours(self):
        special = {"slow": {"efficiency": 0.91, "p99_ms": 33.0,
                            "references": {"bare (delay 30 ms)": {"efficiency": 0.83, "p99_ms": 41.0},
                                           "nginx (echo_sleep 30 ms)": {"efficiency": 0.845, "p99_ms": None}}}}
        t = {d: (v, l, ok) for d, v, l, ok in compare.evaluate_targets({}, special)}
        value, limit, ok = t["slow efficiency (rps / 3333)"]
        self.assertFalse(ok)  # ours' 91% < 98%, whatever the references reach
        self.assertEqual(value, "91.0% (reference bare (delay 30 ms): 83.0%, nginx (echo_sleep 30 ms): 84.5%)")
        self.assertEqual(limit, ">= 98%")
        value, limit, ok = t["slow p99"]
        self.assertTrue(ok)  # ours' 33 ms, though the reference's 41 ms would fail
        self.assertEqual(value, "33.0 ms (reference bare (delay 30 ms): 41.0 ms)")

    def test_slow_references_alone_check_nothing(self):
        special = {"slow": {"ideal_rps": 3333.3, "references": {"bare (delay 30 ms)": {"efficiency": 0.83}}}}
        t = {d: (v, ok) for d, v, _, ok in compare.evaluate_targets({}, special)}
        self.assertEqual(t["slow efficiency (rps / 3333)"], ("- (reference bare (delay 30 ms): 83.0%)", None))
        self.assertIsNone(t["slow p99"][1])


class SlowPhaseTest(unittest.TestCase):
    def test_specs_interleave_ours_and_the_references(self):
        with tempfile.NamedTemporaryFile(suffix=".so") as module:
            specs, optional, notes = compare.slow_phase_specs(compare.ALL_SERVERS, module.name)
        self.assertEqual(specs, [("ours", "slow"), ("bare", "slow"), ("bare", "slow-pool"), ("nginx", "slow")])
        self.assertEqual(optional, [("nginx", "slow")])  # a module that does not load is left out
        self.assertEqual(notes, [])

    def test_missing_echo_module_skips_nginx_with_a_note(self):
        specs, optional, notes = compare.slow_phase_specs(compare.ALL_SERVERS, "/nonexistent/echo.so")
        self.assertEqual(specs, [("ours", "slow"), ("bare", "slow"), ("bare", "slow-pool")])
        self.assertEqual(optional, [])
        self.assertEqual(len(notes), 1)
        self.assertIn("libnginx-mod-http-echo", notes[0])

    def test_references_only_where_asked(self):
        specs, _, notes = compare.slow_phase_specs(["ours", "h2o"], "/nonexistent/echo.so")
        self.assertEqual(specs, [("ours", "slow")])
        self.assertEqual(notes, [])  # nginx was not asked for: nothing to explain
        self.assertEqual(compare.slow_phase_specs(["h2o"])[0], [])
        self.assertEqual(compare.slow_phase_specs(["bare", "h2o"])[0], [("bare", "slow"), ("bare", "slow-pool")])
        self.assertEqual([compare.slow_spec_text(spec) for spec in compare.slow_phase_specs(["bare"])[0]],
                         ["bare --close --delay-ms=30", "bare --close --delay-ms=30 --pool-threads=300"])

    def test_slow_requests(self):
        self.assertEqual(compare.parse_args([]).slow_requests, 10000)  # ~1 us/req per 10 ms tick
        self.assertEqual(compare.parse_args(["--quick"]).slow_requests, 3000)
        self.assertEqual(compare.parse_args(["--quick", "--slow-requests", "20000"]).slow_requests, 20000)
        self.assertEqual(compare.parse_args(["--slow-requests", "500"]).slow_requests, 500)
        self.assertEqual(compare.parse_args(["--ab-requests", "100"]).slow_requests, 10000)  # its own count
        with open(os.devnull, "w") as devnull:
            stderr, sys.stderr = sys.stderr, devnull
            try:
                with self.assertRaises(SystemExit):
                    compare.parse_args(["--slow-requests", "0"])
            finally:
                sys.stderr = stderr

    def test_slow_load(self):
        load = compare.slow_load(10000)
        self.assertEqual((load.key, load.title, load.kind), ("slow-c100", "slow ab -n 10000 -c100", "ab"))
        cmd = load.build_cmd("127.0.0.9", 18085, "/tmp/p.csv")
        self.assertEqual(cmd[cmd.index("-n") + 1:cmd.index("-n") + 4], ["10000", "-c", "100"])
        self.assertEqual(cmd[-1], "http://127.0.0.9:18085/test/slow")

    def summary(self, pool=False):
        s = {"ours (slow)": compare.summarize([{"rps": 3000.0, "p50_ms": 31.0, "p99_ms": 34.0,
                                                "cpu_us_per_req": 60.0, "errors": 0}]),
             "bare (delay 30 ms)": compare.summarize([{"rps": 2750.0, "p50_ms": 32.0, "p99_ms": 60.0,
                                                       "cpu_us_per_req": 20.0, "errors": 0}])}
        if pool:
            s["bare (pool, delay 30 ms)"] = compare.summarize([{"rps": 2900.0, "p50_ms": 31.5, "p99_ms": 40.0,
                                                                "cpu_us_per_req": 40.0, "errors": 0}])
        return s

    def test_slow_special(self):
        s = compare.slow_special(self.summary(), ["a note"])
        self.assertAlmostEqual(s["ideal_rps"], 100 / 0.030)
        self.assertAlmostEqual(s["efficiency"], 0.9)
        self.assertEqual((s["rps"], s["p99_ms"]), (3000.0, 34.0))
        ref = s["references"]["bare (delay 30 ms)"]
        self.assertAlmostEqual(ref["efficiency"], 0.825)
        self.assertEqual((ref["p50_ms"], ref["p99_ms"], ref["cpu_us_per_req"]), (32.0, 60.0, 20.0))
        self.assertEqual(s["notes"], ["a note"])

    def test_slow_special_without_ours(self):
        s = compare.slow_special({"bare (delay 30 ms)": self.summary()["bare (delay 30 ms)"]})
        self.assertNotIn("efficiency", s)
        self.assertEqual(list(s["references"]), ["bare (delay 30 ms)"])
        text = "\n".join(compare.describe_special({"slow": s}))
        self.assertIn("| bare (delay 30 ms) | 2,750 | 82.5% |", text)
        self.assertNotIn("| ours", text)
        self.assertNotIn("interleaved with ours", text)

    def test_report_lines(self):
        text = "\n".join(compare.describe_special({"slow": compare.slow_special(self.summary(), ["skipped x"],
                                                                                 requests=10000)}))
        self.assertIn("ab -n 10000 -c 100 /test/slow", text)
        self.assertIn("efficiency 90.0%", text)
        self.assertIn("| ours (slow) | 3,000 | 90.0% | 31.00 | 34.00 | 60.00 |", text)
        self.assertIn("| bare (delay 30 ms) | 2,750 | 82.5% | 32.00 | 60.00 | 20.00 |", text)
        self.assertIn("slow ours/bare (delay 30 ms): 1.091x req/s, efficiency 90.0% vs 82.5%, CPU/req 3.00x", text)
        self.assertIn("no reference reaches the 98% target (82.5% at best)", text)
        self.assertIn("- skipped x", text)

    def test_pool_reference(self):
        s = compare.slow_special(self.summary(pool=True), requests=3000)
        self.assertEqual(s["requests"], 3000)
        self.assertEqual(list(s["references"]), ["bare (delay 30 ms)", "bare (pool, delay 30 ms)"])
        self.assertEqual(s["references"]["bare (pool, delay 30 ms)"]["cpu_us_per_req"], 40.0)
        text = "\n".join(compare.describe_special({"slow": s}))
        self.assertIn("ab -n 3000 -c 100", text)
        self.assertIn("| bare (pool, delay 30 ms) | 2,900 | 87.0% | 31.50 | 40.00 | 40.00 |", text)
        self.assertIn("slow ours/bare (pool, delay 30 ms): 1.034x req/s, efficiency 90.0% vs 87.0%, CPU/req 1.50x",
                      text)
        self.assertIn("one of 300 threads as ours does", text)
        self.assertIn("no reference reaches the 98% target (87.0% at best)", text)
        # The target rows name it beside the timer reference; the targets are ours' alone.
        t = {d: (v, ok) for d, v, _, ok in compare.evaluate_targets({}, {"slow": s})}
        self.assertEqual(t["slow efficiency (rps / 3333)"],
                         ("90.0% (reference bare (delay 30 ms): 82.5%, bare (pool, delay 30 ms): 87.0%)", False))
        rows = compare.ratio_table(["slow-c100"], {"slow-c100": self.summary(pool=True)})
        self.assertIn("| slow-c100 | ours/bare (pool, delay 30 ms) | 1.03x | 1.50x |", rows)

    def test_ratio_table_has_the_slow_line(self):
        summary = {"slow-c100": self.summary()}
        rows = compare.ratio_table(["slow-c100"], summary)
        self.assertIn("| slow-c100 | ours/bare (delay 30 ms) | 1.09x | 3.00x |", rows)


class PipelinedPhaseTest(unittest.TestCase):
    def test_in_the_default_run(self):
        self.assertIn("pipelined", compare.ALL_PHASES)
        self.assertIn("pipelined", compare.DEFAULT_PHASES)
        self.assertEqual(compare.parse_args([]).only,
                         ["keepalive", "ab", "pipelined", "slow", "queue", "mixed"])
        self.assertIn("pipelined", compare.parse_args(["--quick"]).only)
        self.assertEqual(compare.parse_args(["--only", "pipelined"]).only, ["pipelined"])

    def test_load(self):
        load = compare.pipelined_load(10)
        self.assertEqual((load.key, load.title, load.kind), ("pipelined-c100", "pipelined h2load -c100 -m16", "h2load"))
        self.assertEqual(load.build_cmd("127.0.0.5", 18080, "/x.csv"),
                         ["h2load", "--h1", "-c", "100", "-m", "16", "-t", "1", "-D", "10",
                          "http://127.0.0.5:18080/test/fast"])
        self.assertFalse(compare.own_section(load.key))  # in the main table and the ratios

    def test_specs(self):
        self.assertEqual(compare.pipelined_phase_specs(compare.ALL_SERVERS),
                         [("ours", None), ("nginx", None), ("h2o", None), ("bare", "pipelined")])
        self.assertEqual(compare.pipelined_phase_specs(["bare", "nginx"]), [("nginx", None), ("bare", "pipelined")])

    def summary(self, ours, nginx, h2o):
        values = {"ours": ours, "nginx": nginx, "h2o": h2o, "bare (pipelined)": 1500000.0}
        return {"pipelined-c100": {k: compare.summarize([{"rps": v, "mean_ms": 1.0, "errors": 0,
                                                          "cpu_us_per_req": 1e6 / v}])
                                   for k, v in values.items() if v is not None}}

    def targets(self, summary):
        return {d: (v, l, ok) for d, v, l, ok in compare.evaluate_targets(summary, {})}

    def test_target_against_the_better_of_nginx_and_h2o(self):
        name = "pipelined-c100 rps ours/best of nginx, h2o"
        value, limit, ok = self.targets(self.summary(1200000.0, 170000.0, 200000.0))[name]
        self.assertEqual(limit, ">= 3x")
        self.assertTrue(ok)  # 6x h2o's
        self.assertEqual(value, "6.000x (1,200,000 vs h2o's 200,000 req/s)")
        value, _, ok = self.targets(self.summary(550000.0, 190000.0, 150000.0))[name]
        self.assertFalse(ok)  # 2.89x nginx's
        self.assertEqual(value, "2.895x (550,000 vs nginx's 190,000 req/s)")
        _, _, ok = self.targets(self.summary(600000.0, 200000.0, None))[name]
        self.assertTrue(ok)  # exactly 3x nginx's; h2o did not run

    def test_issue13_targets(self):
        def run(rps, cpu):
            return compare.summarize([{"rps": rps, "cpu_us_per_req": cpu, "errors": 0}])
        summary = {"ab-c10": {"ours": run(28000.0, 17.5), "h2o": run(31000.0, 21.5)},
                   "ab-c50": {"ours": run(27000.0, 17.5), "h2o": run(25000.0, 21.5)}}
        special = {"slow": {"cpu_us_per_req": 76.0, "references": {
            "bare (delay 30 ms)": {"cpu_us_per_req": 40.0},
            "bare (pool, delay 30 ms)": {"cpu_us_per_req": 88.0}}}}
        t = {d: (v, l, ok) for d, v, l, ok in compare.evaluate_targets(summary, special)}
        self.assertEqual(t["ab-c10 rps ours/h2o"], ("0.903x", ">= 1x", False))
        self.assertEqual(t["ab-c10 CPU/req ours/h2o"][1:], ("<= 1x", True))
        self.assertTrue(t["ab-c50 rps ours/h2o"][2])
        self.assertEqual(t["slow CPU/req ours/bare (delay)"],
                         ("1.900x (bare (pool)/bare (delay): 2.200x)", "<= 1.2x", False))
        special["slow"]["references"] = {}
        t = {d: (v, l, ok) for d, v, l, ok in compare.evaluate_targets(summary, special)}
        self.assertIsNone(t["slow CPU/req ours/bare (delay)"][2])

    def test_target_not_applicable_without_ours_or_the_others(self):
        name = "pipelined-c100 rps ours/best of nginx, h2o"
        self.assertIsNone(self.targets(self.summary(None, 200000.0, 150000.0))[name][2])
        self.assertIsNone(self.targets(self.summary(1200000.0, None, None))[name][2])
        self.assertIsNone(self.targets({})[name][2])

    def test_report(self):
        summary = self.summary(1200000.0, 170000.0, 200000.0)
        notes = "\n".join(compare.pipelined_notes(["wrk-c100", "pipelined-c100"], summary))
        self.assertIn("pipelined-c100: h2load --h1 -c100 -m16 (16 requests in flight per connection) "
                      "gives no percentiles", notes)
        self.assertIn("ours 1.00 ms, nginx 1.00 ms, h2o 1.00 ms, bare (pipelined) 1.00 ms", notes)
        self.assertEqual(compare.pipelined_notes(["wrk-c100"], summary), [])
        rows = compare.ratio_table(["pipelined-c100"], summary)
        self.assertIn("| pipelined-c100 | ours/h2o | 6.00x | 0.17x |", rows)
        self.assertIn("| pipelined-c100 | ours/bare (pipelined) | 0.80x | 1.25x |", rows)


class MixedCpuSplitTest(unittest.TestCase):
    T = compare.CLK_TCK  # ticks per second

    def split(self, ab_s=0.15):
        T = self.T
        # The workers' own ticks are rounded down per thread (0 here, though they ran for 0.09 s
        # together): what counts for them is the process's total less the ring threads'.
        before = {"total": 5 * T, "threads": {(1, 1): ("server", 1 * T), (1, 2): ("uring-worker", 0),
                                              (1, 7): ("uring-accept", T), (1, 8): ("uring-accept", T)}}
        after = {"total": 5 * T + 99 * T // 100,
                 "threads": {(1, 1): ("server", 1 * T + 8 * T // 10), (1, 2): ("uring-worker", 0),
                             (1, 3): ("uring-worker", 0),  # new
                             (1, 7): ("uring-accept", T + T // 20),
                             (1, 9): ("uring-accept", T // 20)}}  # new; 8 ended: not counted
        return compare.cpu_split(before, after, seconds=2.0, fast_requests=200000, wrk_s=0.8, ab_s=ab_s)

    def test_arithmetic(self):
        s = self.split()
        self.assertEqual((s["seconds"], s["fast_requests"]), (2.0, 200000))
        p = s["parts"]
        self.assertAlmostEqual(p["ring"]["cpu_s"], 0.8 + 0.05 + 0.05)
        self.assertAlmostEqual(p["workers"]["cpu_s"], 0.09)
        self.assertAlmostEqual(p["server"]["cpu_s"], 0.99)
        self.assertAlmostEqual(p["all"]["cpu_s"], 0.99 + 0.8 + 0.15)
        self.assertAlmostEqual(p["ring"]["us_per_fast_req"], 4.5)    # 0.9 s / 200,000
        self.assertAlmostEqual(p["ring"]["pct_cpu"], 45.0)           # 0.9 s of 2 s
        self.assertAlmostEqual(p["wrk"]["us_per_fast_req"], 4.0)
        self.assertAlmostEqual(p["wrk"]["pct_cpu"], 40.0)
        self.assertAlmostEqual(p["ab"]["pct_cpu"], 7.5)
        self.assertAlmostEqual(p["all"]["pct_cpu"], 97.0)

    def test_without_ab_or_requests(self):
        s = self.split(ab_s=None)
        self.assertNotIn("ab", s["parts"])
        self.assertAlmostEqual(s["parts"]["all"]["cpu_s"], 0.99 + 0.8)
        s = compare.cpu_split({"total": 0, "threads": {}}, {"total": 0, "threads": {}}, seconds=0.0,
                              fast_requests=0)
        self.assertEqual(s["parts"]["server"], {"cpu_s": 0.0, "us_per_fast_req": None, "pct_cpu": None})
        self.assertEqual(list(s["parts"]), ["ring", "workers", "server", "all"])

    def test_a_server_without_workers_is_all_ring(self):
        s = compare.cpu_split({"total": 0, "threads": {(5, 5): ("nginx", 0)}},
                              {"total": self.T, "threads": {(5, 5): ("nginx", self.T)}}, 1.0, 1000,
                              worker_name="uring-worker")
        self.assertAlmostEqual(s["parts"]["ring"]["pct_cpu"], 100.0)
        self.assertEqual(s["parts"]["workers"]["cpu_s"], 0.0)
        # Rounding can put the ring threads' ticks a little above the total: no negative workers.
        s = compare.cpu_split({"total": 0, "threads": {}}, {"total": 9, "threads": {(5, 5): ("nginx", 10)}},
                              1.0, 1000)
        self.assertEqual(s["parts"]["workers"]["cpu_s"], 0.0)

    def test_summary_and_report(self):
        a, b, c = self.split(), self.split(), self.split()
        b["parts"]["ring"]["us_per_fast_req"] = 6.0
        c["parts"]["ring"]["us_per_fast_req"] = 1.0
        m = compare.summarize_split([a, b, c])
        self.assertAlmostEqual(m["ring"]["us_per_fast_req"], 4.5)  # the median
        self.assertAlmostEqual(m["ab"]["pct_cpu"], 7.5)
        alone = compare.summarize_split([self.split(ab_s=None)])
        self.assertNotIn("ab", alone)
        mixed = {"fast_alone_rps": 100000.0, "fast_with_slow_rps": 95000.0, "ratio": 0.95,
                 "slow_rps_beside": 3000.0, "cpus": 2, "cpu_split": {"alone": alone, "with_slow": m}}
        text = "\n".join(compare.describe_special({"mixed": mixed}))
        self.assertIn("2 CPUs = 200%", text)
        self.assertIn("Ring thread(s): ours' threads not named uring-worker", text)
        self.assertIn("workers: ours' total (/proc/PID/stat", text)
        self.assertIn("| run | ours' ring thread(s) | ours' workers | ours in all | wrk | ab (slow load) | all four "
                      "| idle or other |", text)
        self.assertIn("| fast alone | 4.50 us/req, 45% | 0.45 us/req, 4% | 4.95 us/req, 50% | 4.00 us/req, 40% | - "
                      "| 8.95 us/req, 90% | 110% |", text)
        self.assertIn("| fast beside slow | 4.50 us/req, 45% | 0.45 us/req, 4% | 4.95 us/req, 50% | "
                      "4.00 us/req, 40% | 0.75 us/req, 8% | 9.70 us/req, 97% | 103% |", text)
        self.assertEqual(compare.describe_cpu_split({"cpu_split": {}}), [])
        self.assertNotIn("mixed reference", text)

    def test_mixed_reference(self):
        ref = compare.mixed_figures([{"rps": 100.0}, {"rps": 120.0}, {"rps": 110.0}],
                                    [{"rps": 80.0}, {"rps": 90.0}, {"rps": 85.0}], [3000.0, 2900.0, 2950.0])
        self.assertEqual(ref["fast_alone_rps"], 110.0)
        self.assertEqual(ref["fast_with_slow_rps"], 85.0)
        self.assertAlmostEqual(ref["ratio"], 85.0 / 110.0)
        self.assertEqual(ref["slow_rps_beside"], 2950.0)
        mixed = {"fast_alone_rps": 100000.0, "fast_with_slow_rps": 87000.0, "ratio": 0.87,
                 "slow_rps_beside": 3000.0, "reference": ref}
        text = "\n".join(compare.describe_special({"mixed": mixed}))
        self.assertIn("- mixed reference, the same loads interleaved with ours", text)
        self.assertIn("fast alone 110 req/s, beside the slow load 85 req/s = 77.3% (slow 2,950 req/s)", text)
        t = {d: (v, ok) for d, v, _, ok in compare.evaluate_targets({}, {"mixed": mixed})}
        self.assertEqual(t["mixed: fast rps with slow load / alone"],
                         ("87.0% (reference bare + nginx (echo_sleep): 77.3%)", False))

    def test_thread_ticks_and_probe(self):
        threads = compare.thread_ticks([os.getpid()])
        self.assertIn((os.getpid(), threading.get_native_id()), threads)
        self.assertTrue(all(isinstance(t, int) and t >= 0 for _, t in threads.values()))
        self.assertEqual(compare.thread_ticks([999999999]), {})
        reading = compare.server_reading([os.getpid(), 999999999])
        self.assertLessEqual(reading["total"], compare.process_ticks(os.getpid()))  # a gone pid adds nothing
        self.assertIn((os.getpid(), threading.get_native_id()), reading["threads"])
        self.assertIsNone(compare.process_ticks(999999999))
        self.assertGreaterEqual(compare.process_ticks(os.getpid()), 0)

        class Me:
            def pids(self):
                return [os.getpid()]

        probe = compare.CpuSplitProbe(Me(), os.getpid())
        probe.begin()
        end = compare.time.monotonic() + 0.05
        while compare.time.monotonic() < end:
            pass  # some CPU on this thread (the "ring" side: it is not named uring-worker)
        probe.end()
        s = probe.split({"requests": 10, "load_cpu_s": 0.001})
        self.assertGreater(s["seconds"], 0.04)
        self.assertGreaterEqual(s["parts"]["ring"]["cpu_s"], 0.0)
        # No worker threads here: "workers" is the process's total less its
        # threads' ticks, and each thread's is rounded down to a tick while the
        # total is not (cpu_split), so up to a tick per thread shows up there.
        self.assertLessEqual(s["parts"]["workers"]["cpu_s"],
                             len(compare.thread_ticks([os.getpid()])) / compare.CLK_TCK + 1e-9)
        self.assertIn("ab", s["parts"])  # other_pid was read twice
        self.assertEqual(s["parts"]["wrk"]["cpu_s"], 0.001)

    def test_measured_run_tells_the_probe_around_the_load(self):
        events = []

        class Load:
            key = "mixed"

            def run(self, port, workdir, cpu=None):
                events.append("load")
                return {"requests": 100, "rps": 1.0}

        class Server:
            label, port = "ours (slow)", 1

            def cpu_ticks(self):
                return 0

        class Probe:
            def begin(self):
                events.append("begin")

            def end(self):
                events.append("end")

        r = compare.measured_run(Load(), Server(), tempfile.gettempdir(), None, during=Probe())
        self.assertEqual(events, ["begin", "load", "end"])
        self.assertEqual(r["cpu_us_per_req"], 0.0)
        events.clear()
        compare.measured_run(Load(), Server(), tempfile.gettempdir(), None)
        self.assertEqual(events, ["load"])


class BodiesPhaseTest(unittest.TestCase):
    def test_sizes_and_phase_is_opt_in(self):
        self.assertEqual(compare.BODY_SIZES, [16384, 65536, 262144])
        self.assertIn("bodies", compare.ALL_PHASES)
        self.assertNotIn("bodies", compare.DEFAULT_PHASES)
        self.assertNotIn("bodies", compare.parse_args([]).only)
        self.assertNotIn("bodies", compare.parse_args(["--quick"]).only)
        self.assertEqual(compare.parse_args(["--only", "bodies"]).only, ["bodies"])

    def test_load(self):
        load = compare.body_load(65536, 7)
        self.assertEqual((load.key, load.kind), ("bodies-64k", "wrk"))
        self.assertEqual(load.build_cmd("127.0.0.5", 20009, None),
                         ["wrk", "-t1", "-c10", "-d7s", "--latency", "http://127.0.0.5:20009/test/bytes?65536"])
        self.assertEqual([compare.body_load(n, 1).key for n in compare.BODY_SIZES],
                         ["bodies-16k", "bodies-64k", "bodies-256k"])
        self.assertEqual(compare.body_load(1 << 20, 1).key, "bodies-1m")
        self.assertEqual(compare.body_load(1000, 1).key, "bodies-1000")

    def test_size_text(self):
        self.assertEqual([compare.size_text(n) for n in (16384, 262144, 1 << 20, 1000, 1 << 30, 3 << 29)],
                         ["16 KiB", "256 KiB", "1 MiB", "1000 B", "1 GiB", "1536 MiB"])

    def test_specs(self):
        self.assertEqual(compare.bodies_phase_specs(compare.ALL_SERVERS),
                         ([("ours", "send-zc"), ("ours", "copy"), ("nginx", "bodies")], [("nginx", "bodies")]))
        self.assertEqual(compare.bodies_phase_specs(["ours", "h2o", "bare"]),
                         ([("ours", "send-zc"), ("ours", "copy")], []))
        self.assertEqual(compare.bodies_phase_specs(["h2o", "bare"]), ([], []))

    def test_check_bodies(self):
        class S:
            label, port = "x", 1

        compare.check_bodies(S(), [3, 5], get=lambda port, path: (200, {}, b"x" * int(path.split("?")[1])))
        with self.assertRaisesRegex(RuntimeError, r"bytes\?5 answered 200 with 4 bytes \(expected 5\)"):
            compare.check_bodies(S(), [3, 5], get=lambda port, path: (200, {}, b"x" * min(4, int(path[-1]))))
        with self.assertRaisesRegex(RuntimeError, "answered 200 with 3 bytes .not all x"):
            compare.check_bodies(S(), [3], get=lambda port, path: (200, {}, b"xyx"))
        with self.assertRaisesRegex(RuntimeError, "answered 404"):
            compare.check_bodies(S(), [3], get=lambda port, path: (404, {}, b""))

    def test_zc_metrics(self):
        self.assertEqual(compare.parse_zc_metrics(METRICS_OUTPUT),
                         {"sends_zc": 123456, "copied": 120000, "refused": 7})
        self.assertEqual(compare.parse_zc_metrics(""), {})

    def summary(self):
        def one(rps, cpu, mib=None):
            return compare.summarize([{"rps": rps, "cpu_us_per_req": cpu, "mib_per_s": mib, "errors": 0,
                                       "p50_ms": 0.5, "p99_ms": 2.0, "other_pct": 1.0, "steal_pct": 0.0}])
        return {"bodies-16k": {"ours (send-zc)": one(20000.0, 20.0, 313.0), "ours (copy)": one(20000.0, 20.0),
                               "nginx (sendfile)": one(25000.0, 16.0)},
                "bodies-64k": {"ours (send-zc)": one(15000.0, 22.0), "ours (copy)": one(10000.0, 40.0),
                               "nginx (sendfile)": one(12000.0, 30.0)},
                "wrk-c100": {"ours": one(1.0, 1.0)}}

    def test_ratios(self):
        b = compare.bodies_special(self.summary())
        self.assertEqual([s["load"] for s in b["sizes"]], ["bodies-16k", "bodies-64k"])  # 256k did not run
        r = b["sizes"][1]["ratios"]
        self.assertAlmostEqual(r["send-zc/copy"]["rps"], 1.5)
        self.assertAlmostEqual(r["send-zc/copy"]["cpu_us_per_req"], 0.55)
        self.assertAlmostEqual(r["send-zc/nginx"]["rps"], 1.25)
        self.assertAlmostEqual(r["copy/nginx"]["cpu_us_per_req"], 40 / 30)
        self.assertEqual(b["notes"], [])

    def test_ratios_without_nginx(self):
        summary = self.summary()
        for load in ("bodies-16k", "bodies-64k"):
            del summary[load]["nginx (sendfile)"]
        b = compare.bodies_special(summary)
        self.assertEqual(list(b["sizes"][0]["ratios"]), ["send-zc/copy"])

    def test_zero_copy_that_did_not_happen_is_called_out(self):
        b = compare.bodies_special(self.summary(), {"ours (send-zc)": {"sends_zc": 0}, "ours (copy)": {}})
        self.assertEqual(len(b["notes"]), 1)
        self.assertIn("ours (send-zc) issued no zero-copy send", b["notes"][0])
        b = compare.bodies_special(self.summary(), {"ours (send-zc)": {"sends_zc": 5}, "ours (copy)": {"sends_zc": 2}},
                                   ["nginx (sendfile) answered wrong and was left out: x"])
        self.assertEqual(b["notes"][0], "nginx (sendfile) answered wrong and was left out: x")
        self.assertIn("ours (copy) issued zero-copy sends", b["notes"][1])

    def test_report_lines(self):
        summary = self.summary()
        zc = {"ours (send-zc)": {"sends_zc": 123456, "copied": 120000, "refused": 0}, "ours (copy)": {"sends_zc": 0}}
        text = "\n".join(compare.describe_bodies(compare.bodies_special(summary, zc), summary))
        self.assertIn("| 16 KiB | ours (send-zc) | 20,000 | 313 | 0 | 0.50 | 2.00 | 20.00 | 1 | 0 |", text)
        self.assertIn("| 16 KiB | ours (copy) | 20,000 | - | 0 |", text)
        self.assertIn("| 64 KiB | send-zc/copy | 1.50x | 0.55x |", text)
        self.assertIn("| 64 KiB | send-zc/nginx | 1.25x | 0.73x |", text)
        self.assertIn("| 16 KiB | copy/nginx | 0.80x | 1.25x |", text)
        self.assertIn("ours (send-zc) 123,456 (completed by copying: 120,000, refused for the locked-memory "
                      "limit: 0); ours (copy) 0", text)

    def test_report_gives_bodies_their_own_section(self):
        summary = self.summary()
        args = compare.parse_args(["--only", "bodies"])
        meta = {"started": "now", "machine": "m", "versions": "v"}
        d = tempfile.mkdtemp()
        loads = ["wrk-c100", "bodies-16k", "bodies-64k"]
        for special in ({"bodies": compare.bodies_special(summary)}, {}):  # {}: interrupted in the phase
            text = compare.write_report(os.path.join(d, "r"), args, meta, loads, summary, special, [], [])
            main_table = text.split("## Response bodies")[0]
            self.assertIn("| wrk-c100 | ours |", main_table)
            self.assertNotIn("bodies-", main_table)  # not in the main table nor in its ratios
            self.assertNotIn("ours/ours", text)
            self.assertNotIn("## Slow, queue and mixed", text)
            self.assertIn("## Response bodies (wrk -t1 -c10 --latency /test/bytes?N)", text)
            self.assertIn("| 64 KiB | send-zc/copy | 1.50x | 0.55x |", text)
        del summary["wrk-c100"]  # --only bodies: no empty main table
        text = compare.write_report(os.path.join(d, "r"), args, meta, loads[1:], summary,
                                    {"bodies": compare.bodies_special(summary)}, [], [])
        self.assertNotIn("| load | server |", text)
        self.assertIn("| 256 KiB |" if "bodies-256k" in summary else "| 16 KiB | ours (copy) |", text)


def serve_one_upload(sock, early=None, answer=None, received=None):
    """The server end of a socketpair for upload_client: reads one POST (Content-Length
    or chunked), answers it with the length read (or `answer`), then answers one GET
    with 200. `early`: written before anything is read (an answer before the body)."""
    reader = compare.ResponseReader(sock)  # its buffer and line helpers read requests as well
    if early is not None:
        sock.sendall(early)
    while b"\r\n\r\n" not in reader.buf:
        if not reader._fill():
            return
    head, _, rest = bytes(reader.buf).partition(b"\r\n\r\n")
    reader.buf = bytearray(rest)
    headers = compare.parse_headers(head)
    body = bytearray()
    if "content-length" in headers:
        reader._take(int(headers["content-length"]), body)
    else:
        while True:
            size = int(reader._line(), 16)
            if size == 0:
                break
            reader._take(size, body)
            assert reader._line() == b""
        assert reader._line() == b""
    if received is not None:
        received.append(bytes(body))
    if early is None:
        text = (answer if answer is not None else str(len(body)) + "\n").encode()
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(text), text))
    while b"\r\n\r\n" not in reader.buf:
        if not reader._fill():
            return
    assert bytes(reader.buf).startswith(b"GET /test/fast HTTP/1.1\r\n")
    sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")


class UploadClientTest(unittest.TestCase):
    def upload(self, framing, n, **server_args):
        client, server = socket.socketpair()
        received = []
        t = threading.Thread(target=serve_one_upload, args=(server,), kwargs=dict(server_args, received=received))
        t.start()
        if server_args.get("early") is not None:
            # The early answer must be readable before the client sends a byte
            # of the body, or the thread's timing decides what it sees.
            select.select([client], [], [], 10)
        try:
            client.settimeout(10)
            result = compare.upload_client(client, "/test/sink", n, framing, chunk=4, size=8)
        finally:
            client.close()
            t.join(10)
            server.close()
        return result, received

    def test_buffer(self):
        self.assertEqual(compare.upload_buffer("length", 4, 8), b"x" * 8)
        self.assertEqual(compare.upload_buffer("chunked", 4, 8), b"4\r\nxxxx\r\n4\r\nxxxx\r\n")
        big = compare.upload_buffer("chunked")
        one = b"10000\r\n" + b"x" * 65536 + b"\r\n"
        self.assertEqual(big, one * 16)  # 16 chunks of 64 KiB: 1 MiB of body per buffer
        self.assertEqual(len(compare.upload_buffer("length")), 1 << 20)
        with self.assertRaises(ValueError):
            compare.upload_buffer("chunked", 4, 10)
        with self.assertRaises(ValueError):
            compare.upload_buffer("gzip")

    def test_both_framings_send_exactly_the_body(self):
        for framing in ("length", "chunked"):
            for n in (0, 3, 8, 8 * 5 + 7):  # empty, one short chunk, one buffer, buffers and a short chunk
                result, received = self.upload(framing, n)
                self.assertEqual(received, [b"x" * n], (framing, n))
                self.assertEqual((result["status"], result["answer"], result["followup_status"]),
                                 (200, f"{n}\n", 200))
                self.assertIsNone(result["answered_after_bytes"])
                self.assertEqual(compare.upload_problems(result), [])
                self.assertGreaterEqual(result["seconds"], result["answer_s"])

    def test_answer_before_the_body_is_noticed(self):
        result, received = self.upload("length", 8 * 4, early=b"HTTP/1.1 204 No Content\r\n\r\n")
        self.assertEqual(result["answered_after_bytes"], 0)
        self.assertEqual((result["status"], result["answer"], result["followup_status"]), (204, "", 200))
        self.assertEqual(received, [b"x" * 32])  # still sent whole, and timed to the follow-up answer
        self.assertEqual(compare.upload_problems(result), [])

    def test_wrong_length(self):
        result, _ = self.upload("chunked", 20, answer="19\n")
        self.assertEqual(compare.upload_problems(result), ["answered a length of '19' for 20 bytes sent"])

    def test_refused_body(self):
        client, server = socket.socketpair()
        server.sendall(b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        server.close()
        with client:
            client.settimeout(5)
            result = compare.upload_client(client, "/test/sink", 1 << 20, "length", chunk=4, size=8)
        self.assertEqual(result["status"], 413)
        problems = compare.upload_problems(result)
        self.assertTrue(problems[0].startswith("failed: "), problems)
        self.assertIn("answered 413", problems)

    def test_problems(self):
        ok = {"bytes": 10, "status": 204, "answer": "", "followup_status": 200}
        self.assertEqual(compare.upload_problems(ok), [])
        self.assertEqual(compare.upload_problems(dict(ok, status=200, answer="10\n")), [])
        self.assertEqual(compare.upload_problems(dict(ok, followup_status=None)),
                         ["GET /test/fast after the body answered None"])
        self.assertEqual(compare.upload_problems(dict(ok, status=None, followup_status=None)), ["no answer"])
        self.assertEqual(compare.upload_problems(dict(ok, status=500)), ["answered 500"])

    def test_parse(self):
        line = json.dumps({"bytes": 1 << 30, "framing": "length", "status": 200, "answer": f"{1 << 30}\n",
                           "answered_after_bytes": None, "followup_status": 200, "sent_s": 1.9,
                           "answer_s": 1.95, "seconds": 2.0})
        r = compare.parse_upload("noise\n" + line + "\n")
        self.assertEqual((r["requests"], r["errors"], r["problems"], r["bytes"]), (1, 0, [], 1 << 30))
        self.assertAlmostEqual(r["mib_per_s"], 512.0)
        bad = json.loads(line)
        bad["answer"] = "5\n"
        r = compare.parse_upload(json.dumps(bad))
        self.assertEqual(r["errors"], 1)
        self.assertIsNone(r["mib_per_s"])  # a run that went wrong has no throughput
        with self.assertRaisesRegex(RuntimeError, "no result from the upload client"):
            compare.parse_upload("Traceback ...")


class ResponseReaderTest(unittest.TestCase):
    def test_framings_one_after_the_other(self):
        client, server = socket.socketpair()
        server.sendall(b"HTTP/1.1 100 Continue\r\n\r\n"
                       b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                       b"3;ext=1\r\nabc\r\n1\r\nd\r\n0\r\nX-Trailer: 1\r\n\r\n"
                       b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"
                       b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno"
                       b"HTTP/1.0 200 OK\r\n\r\nuntil the close")
        server.close()
        with client:
            reader = compare.ResponseReader(client, recv_size=7)  # responses across many receives
            status, headers, body = reader.read()
            self.assertEqual((status, body, headers["transfer-encoding"]), (200, b"abcd", "chunked"))
            self.assertEqual(reader.read()[::2], (204, b""))
            self.assertEqual(reader.read()[::2], (404, b"no"))
            self.assertEqual(reader.read()[::2], (200, b"until the close"))
            with self.assertRaisesRegex(ValueError, "without a response"):
                reader.read()

    def test_truncated(self):
        client, server = socket.socketpair()
        server.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort")
        server.close()
        with client, self.assertRaisesRegex(ValueError, "middle of a body"):
            compare.ResponseReader(client).read()


class TransferPhaseTest(unittest.TestCase):
    def test_opt_in(self):
        for phase in ("upload", "download"):
            self.assertIn(phase, compare.ALL_PHASES)
            self.assertNotIn(phase, compare.DEFAULT_PHASES)
            self.assertNotIn(phase, compare.parse_args([]).only)
            self.assertNotIn(phase, compare.parse_args(["--quick"]).only)
        self.assertEqual(compare.parse_args(["--only", "upload,download"]).only, ["upload", "download"])

    def test_loads(self):
        load = compare.upload_load("chunked")
        self.assertEqual((load.key, load.kind), ("upload-chunked", "upload"))
        self.assertEqual(load.build_cmd("127.0.0.5", 20000, None),
                         [sys.executable, os.path.abspath(compare.__file__), "--upload-client", "chunked",
                          str(1 << 30), "http://127.0.0.5:20000/test/sink"])
        self.assertEqual(compare.upload_load("length", 5).build_cmd("h", 1, None)[-3:],
                         ["length", "5", "http://h:1/test/sink"])
        load = compare.download_load(7)
        self.assertEqual((load.key, load.kind), ("download-64m", "wrk"))
        self.assertEqual(load.build_cmd("127.0.0.5", 20000, None),
                         ["wrk", "-t1", "-c1", "-d7s", "--timeout", "30s", "--latency",
                          "http://127.0.0.5:20000/test/stream?bytes=67108864&chunk=65536"])
        self.assertEqual(compare.transfer_keys("upload"), ["upload-length", "upload-chunked"])
        self.assertEqual(compare.transfer_keys("download"), ["download-64m"])

    def test_specs(self):
        self.assertEqual(compare.transfer_phase_specs("upload", compare.ALL_SERVERS),
                         ([("ours", None), ("nginx", "upload")], [("nginx", "upload")]))
        self.assertEqual(compare.transfer_phase_specs("download", compare.ALL_SERVERS),
                         ([("ours", None), ("ours", "copy"), ("nginx", "download")], [("nginx", "download")]))
        self.assertEqual(compare.transfer_phase_specs("download", ["ours", "h2o"]),
                         ([("ours", None), ("ours", "copy")], []))
        self.assertEqual(compare.transfer_phase_specs("upload", ["h2o", "bare"]), ([], []))

    def test_checks(self):
        class S:
            label, port = "x", 1

        ok = {"bytes": 5, "status": 200, "answer": "5\n", "followup_status": 200}
        seen = []
        compare.check_upload(S(), post=lambda port, framing, n: seen.append((framing, n)) or dict(ok, bytes=n), n=5)
        self.assertEqual(seen, [("length", 5), ("chunked", 5)])
        with self.assertRaisesRegex(RuntimeError, r"x: POST /test/sink of 5 bytes \(length\): answered 413"):
            compare.check_upload(S(), post=lambda port, framing, n: dict(ok, status=413), n=5)
        compare.check_download(S(), get=lambda port, path: (200, {}, b"x" * 4), n=4)
        with self.assertRaisesRegex(RuntimeError, r"answered 200 with 3 bytes \(expected 4\)"):
            compare.check_download(S(), get=lambda port, path: (200, {}, b"xxx"), n=4)
        with self.assertRaisesRegex(RuntimeError, "not all x"):
            compare.check_download(S(), get=lambda port, path: (200, {}, b"xxyx"), n=4)

    def test_counters(self):
        text = METRICS_OUTPUT + "uring_http_msg_ring_messages_total 42\nuring_http_aborted_streams_total 2\n"
        c = compare.parse_counters(text, compare.OURS_COUNTERS)
        self.assertEqual(c, {"sends_zc": 123456, "sends_zc_copied": 120000, "msg_ring_messages": 42,
                             "aborted_streams": 2})

    def test_figures(self):
        r = {"bytes": 2 << 30, "cpu_s": 1.0, "load_cpu_s": 0.5}
        compare.add_transfer_figures(r, 4096, [20480, 30720, 25600])
        self.assertAlmostEqual(r["cpu_s_per_gib"], 0.5)
        self.assertAlmostEqual(r["cpu_ms_per_mib"], 1000 / 2048)
        self.assertAlmostEqual(r["client_cpu_s_per_gib"], 0.25)
        self.assertAlmostEqual(r["ctx_per_gib"], 2048)
        self.assertEqual((r["rss_min_mib"], r["rss_max_mib"], r["rss_samples"]), (20.0, 30.0, 3))
        r = compare.add_transfer_figures({"mib_per_s": 512.0, "seconds": 2.0, "cpu_s": 0.5, "load_cpu_s": 0.1})
        self.assertEqual(r["bytes"], 1 << 30)  # what wrk read
        self.assertAlmostEqual(r["cpu_s_per_gib"], 0.5)
        self.assertNotIn("ctx_per_gib", r)
        self.assertNotIn("rss_min_mib", r)

    def test_rss_sampler(self):
        class S:
            calls = 0

            def rss_kib(self):
                S.calls += 1
                return 1024 * S.calls

        with compare.RssSampler(S(), interval=0.01) as rss:
            pass
        self.assertGreaterEqual(len(rss.samples_kib), 2)  # at the start and at the end at least
        self.assertEqual(rss.samples_kib, sorted(rss.samples_kib))

    def summary(self):
        def one(mib, cpu_ms, **more):
            run = {"mib_per_s": mib, "cpu_ms_per_mib": cpu_ms, "cpu_s_per_gib": cpu_ms * 1.024,
                   "client_cpu_s_per_gib": 0.3, "ctx_per_gib": 1000.0, "rss_min_mib": 20.0, "rss_max_mib": 25.0,
                   "errors": 0, "other_pct": 1.0, "steal_pct": 0.0}
            run.update(more)
            return compare.summarize([run])
        return {"upload-length": {"ours": one(800.0, 0.5), "nginx (discard)": one(1000.0, 0.4)},
                "upload-chunked": {"ours": one(1200.0, 0.3), "nginx (discard)": one(1000.0, 0.4)},
                "download-64m": {"ours": one(900.0, 0.2, rps=14.1), "ours (copy)": one(1800.0, 0.1, rps=28.0),
                                 "nginx (sendfile)": one(1000.0, 0.4, rps=15.6)},
                "wrk-c100": {"ours": compare.summarize([{"rps": 1.0, "errors": 0}])}}

    def test_targets(self):
        t = {d: (v, l, ok) for d, v, l, ok in compare.evaluate_targets(self.summary(), {})}
        self.assertEqual(t["upload-length MiB/s ours/nginx (discard)"], ("0.800x (800 vs 1,000 MiB/s)", ">= 1x", False))
        self.assertEqual(t["upload-length CPU ms/MiB ours/nginx (discard)"][1:], ("<= 1x", False))
        self.assertTrue(t["upload-chunked MiB/s ours/nginx (discard)"][2])
        self.assertEqual(t["upload-chunked CPU ms/MiB ours/nginx (discard)"],
                         ("0.750x (0.300 vs 0.400 CPU ms/MiB)", "<= 1x", True))
        self.assertEqual(t["download-64m MiB/s ours/nginx (sendfile)"], ("0.900x (900 vs 1,000 MiB/s)", ">= 0.9x", True))
        summary = self.summary()
        summary["download-64m"]["ours"] = summary["download-64m"]["ours"].copy()
        summary["download-64m"]["ours"]["mib_per_s"] = {"median": 899.0, "min": 899.0, "max": 899.0}
        t = {d: ok for d, _, _, ok in compare.evaluate_targets(summary, {})}
        self.assertFalse(t["download-64m MiB/s ours/nginx (sendfile)"])
        del summary["upload-length"]["nginx (discard)"]  # nginx did not run: n/a
        t = {d: ok for d, _, _, ok in compare.evaluate_targets(summary, {})}
        self.assertIsNone(t["upload-length MiB/s ours/nginx (discard)"])

    def test_no_target_rows_when_the_phases_did_not_run(self):
        rows = [d for d, _, _, _ in compare.evaluate_targets({"wrk-c100": self.summary()["wrk-c100"]}, {})]
        self.assertFalse([d for d in rows if d.startswith(("upload-", "download-"))])

    def test_special(self):
        runs = [{"load": "upload-length", "server": "nginx (discard)", "answered_after_bytes": 1 << 20, "round": 0},
                {"load": "upload-length", "server": "nginx (discard)", "answered_after_bytes": 3 << 20, "round": 1},
                {"load": "upload-chunked", "server": "ours", "problems": ["answered 413"], "round": 2},
                {"load": "wrk-c100", "server": "ours", "problems": ["not this phase"]}]
        u = compare.transfer_special("upload", self.summary(), runs, {"ours": {"msg_ring_messages": 5}})
        self.assertEqual([e["load"] for e in u["loads"]], ["upload-length", "upload-chunked"])
        r = u["loads"][0]["ratios"]["ours/nginx"]
        self.assertAlmostEqual(r["mib_per_s"], 0.8)
        self.assertAlmostEqual(r["cpu_ms_per_mib"], 1.25)
        notes = "\n".join(u["notes"])
        self.assertIn("**upload-chunked ours round 3: answered 413**", notes)
        self.assertNotIn("not this phase", notes)
        self.assertIn("nginx (discard) answered before the whole body was sent (after 1-3 MiB)", notes)
        self.assertIn("upload-chunked: the client reached 1,200 MiB/s at best (against ours)", notes)

        runs = [{"load": "download-64m", "server": "ours"}, {"load": "download-64m", "server": "ours"}]
        d = compare.transfer_special("download", self.summary(), runs,
                                     {"ours": {"sends_zc": 0, "aborted_streams": 2},
                                      "ours (copy)": {"sends_zc": 3, "aborted_streams": 1, "timeouts": 1}})
        ratios = d["loads"][0]["ratios"]
        self.assertEqual(list(ratios), ["ours/nginx", "ours/ours (copy)", "ours (copy)/nginx"])
        self.assertAlmostEqual(ratios["ours/ours (copy)"]["mib_per_s"], 0.5)
        self.assertAlmostEqual(ratios["ours (copy)/nginx"]["cpu_ms_per_mib"], 0.25)
        notes = "\n".join(d["notes"])
        self.assertIn("ours (default --send-zc) issued no zero-copy send", notes)
        self.assertIn("**ours (copy) issued zero-copy sends although started with --send-zc=0**", notes)
        # one abort per run is wrk stopping mid-response; more (or any timeout) is called out
        self.assertIn("ours: aborted_streams 2, no more than its 2 runs", notes)
        self.assertIn("**ours (copy): aborted_streams 1, timeouts 1**", notes)

    def test_report_gives_the_transfers_their_own_sections(self):
        summary = self.summary()
        args = compare.parse_args(["--only", "upload,download"])
        meta = {"started": "now", "machine": "m", "versions": "v"}
        d = tempfile.mkdtemp()
        loads = ["wrk-c100", "upload-length", "upload-chunked", "download-64m"]
        special = {"upload": compare.transfer_special("upload", summary, [], {"ours": {"msg_ring_messages": 5}}),
                   "download": compare.transfer_special("download", summary)}
        for sp in (special, {}):  # {}: interrupted in the phase
            text = compare.write_report(os.path.join(d, "r"), args, meta, loads, summary, sp,
                                        compare.evaluate_targets(summary, sp), [])
            main_table = text.split("## Upload")[0]
            self.assertIn("| wrk-c100 | ours |", main_table)
            self.assertNotIn("upload-", main_table)
            self.assertNotIn("download-", main_table)
            self.assertIn("## Upload (POST 1 GiB to /test/sink, Content-Length and chunked, one connection)", text)
            self.assertIn("| length | ours | 800 | 0 | 0.51 | 0.500 | 0.30 | 1,000 | 20.0-25.0 | 1 | 0 |", text)
            self.assertIn("| upload-length | ours/nginx | 0.80x | 1.25x |", text)
            self.assertIn("## Download (wrk -t1 -c1 GET /test/stream?bytes=67108864&chunk=65536)", text)
            self.assertIn("| download-64m | ours (copy) | 1,800 | 28.0 | 0 | 0.10 | 0.100 |", text)
            self.assertIn("| download-64m | ours/ours (copy) | 0.50x | 2.00x |", text)
            self.assertIn("| upload-chunked CPU ms/MiB ours/nginx (discard) | 0.750x (0.300 vs 0.400 CPU ms/MiB) "
                          "| <= 1x | PASS |", text)
        self.assertIn("ours' counters over the phase (/metrics, the checks before measuring included): "
                      "ours: msg_ring_messages 5", compare.write_report(
                          os.path.join(d, "r"), args, meta, loads, summary, special, [], []))


class FilesPhaseTest(unittest.TestCase):
    def test_sizes_names_and_phase_is_opt_in(self):
        self.assertEqual(compare.FILE_SIZES, [1024, 16384, 262144, 8 << 20])
        self.assertEqual([compare.file_name(n) for n in compare.FILE_SIZES],
                         ["f1k.bin", "f16k.bin", "f256k.bin", "f8m.bin"])
        self.assertEqual(compare.size_key(1000), "1000")
        self.assertIn("files", compare.ALL_PHASES)
        self.assertNotIn("files", compare.DEFAULT_PHASES)
        self.assertNotIn("files", compare.parse_args([]).only)
        self.assertNotIn("files", compare.parse_args(["--quick"]).only)
        self.assertEqual(compare.parse_args(["--only", "files", "--servers", "nginx,h2o"]).only, ["files"])

    def test_loads(self):
        loads = compare.files_loads(7, 300)
        self.assertEqual([l.key for l in loads], ["files-1k", "files-ab-1k", "files-16k", "files-256k", "files-8m"])
        self.assertEqual(compare.files_keys(), [l.key for l in loads])
        self.assertEqual([l.body_bytes for l in loads], [1024, 1024, 16384, 262144, 8 << 20])
        self.assertEqual([l.kind for l in loads], ["wrk", "ab", "wrk", "wrk", "wrk"])
        self.assertEqual(loads[3].build_cmd("127.0.0.5", 20015, None),
                         ["wrk", "-t1", "-c50", "-d7s", "--timeout", "10s", "--latency",
                          "http://127.0.0.5:20015/f256k.bin"])
        # a connection per request: no -k
        self.assertEqual(loads[1].build_cmd("127.0.0.5", 20015, "/p.csv"),
                         ["ab", "-q", "-r", "-s", "30", "-n", "300", "-c", "50", "-e", "/p.csv",
                          "http://127.0.0.5:20015/f1k.bin"])
        self.assertEqual(loads[1].title, "conn/request ab -c50 GET /f1k.bin")
        self.assertTrue(all(compare.own_section(l.key) for l in loads))  # not in the main table
        self.assertFalse(any(l.key.startswith(("wrk-", "ab-")) for l in loads))  # nor in the chart

    def test_specs(self):
        every = [("ours", "files"), ("nginx", "files"), ("h2o", "files")]
        self.assertEqual(compare.files_phase_specs(compare.ALL_SERVERS), (every, every))
        self.assertEqual(compare.files_phase_specs(["nginx", "h2o"]), (every[1:], every[1:]))
        self.assertEqual(compare.files_phase_specs(["bare"]), ([], []))

    def test_docroot(self):
        d = os.path.join(tempfile.mkdtemp(), "root")
        compare.write_docroot(d, [5, (1 << 20) + 3])
        self.assertEqual(sorted(os.listdir(d)), ["f1048579.bin", "f5.bin", "index.html"])
        self.assertEqual(os.path.getsize(os.path.join(d, "f1048579.bin")), (1 << 20) + 3)
        with open(os.path.join(d, "f1048579.bin"), "rb") as f:
            data = f.read()
        self.assertGreater(len(set(data[:4096])), 200)  # random bytes, not one repeated
        self.assertIn('href="f5.bin"', read(os.path.join(d, "index.html")))

    def test_check_files(self):
        d = tempfile.mkdtemp()
        compare.write_docroot(d, [3, 5])

        class S:
            label, port = "nginx (files)", 1

        def serve(port, path, status=200, length=None, mangle=False):
            with open(os.path.join(d, path[1:]), "rb") as f:
                body = f.read()
            if mangle:
                body = bytes([body[0] ^ 1]) + body[1:]
            headers = {} if length is False else {"content-length": str(len(body) if length is None else length)}
            return status, headers, body

        seen = []
        compare.check_files(S(), d, [3, 5], get=lambda port, path: seen.append(path) or serve(port, path))
        self.assertEqual(seen, ["/f3.bin", "/f5.bin"])
        with self.assertRaisesRegex(RuntimeError, r"nginx \(files\): GET /f3.bin answered 404 with "
                                                  r"Content-Length 3 and 3 bytes \(expected 200 and 3\)"):
            compare.check_files(S(), d, [3], get=lambda port, path: serve(port, path, status=404))
        with self.assertRaisesRegex(RuntimeError, "answered 200 with Content-Length 4 "):
            compare.check_files(S(), d, [3], get=lambda port, path: serve(port, path, length=4))
        with self.assertRaisesRegex(RuntimeError, "answered 200 with no Content-Length"):  # chunked
            compare.check_files(S(), d, [3], get=lambda port, path: serve(port, path, length=False))
        with self.assertRaisesRegex(RuntimeError, "GET /f5.bin answered 5 bytes that are not the file's"):
            compare.check_files(S(), d, [5], get=lambda port, path: serve(port, path, mangle=True))

    def test_failure_line(self):
        tail = ("    | uring-http: unknown option '--root=/tmp/x/docroot'\n"
                "    | Try '/bin/server --help'.")
        self.assertEqual(compare.failure_line(tail), "uring-http: unknown option '--root=/tmp/x/docroot'")
        self.assertEqual(compare.failure_line("    | nginx: [emerg] no module"), "nginx: [emerg] no module")
        self.assertEqual(compare.failure_line(""), "")

    def summary(self, ours=True):
        def one(rps, cpu, n):
            return compare.summarize([{"rps": rps, "cpu_us_per_req": cpu, "mib_per_s": rps * n / 2 ** 20,
                                       "errors": 0, "p50_ms": 0.5, "p99_ms": 2.0, "other_pct": 1.0,
                                       "steal_pct": 0.0}])
        figures = {"files-1k": (1024, [(110000.0, 8.0), (100000.0, 10.0), (125000.0, 7.5)]),
                   "files-ab-1k": (1024, [(20000.0, 30.0), (24000.0, 24.0), (27000.0, 22.5)]),
                   "files-8m": (8 << 20, [(100.0, 3000.0), (106.0, 2500.0), (200.0, 4000.0)])}
        out = {}
        for key, (n, rows) in figures.items():
            labels = ["ours (files)", "nginx (files)", "h2o (files)"]
            out[key] = {label: one(rps, cpu, n) for label, (rps, cpu) in zip(labels, rows) if ours or label != labels[0]}
        out["wrk-c100"] = {"ours": compare.summarize([{"rps": 1.0, "errors": 0}])}
        return out

    def test_special(self):
        f = compare.files_special(self.summary())
        self.assertEqual([s["bytes"] for s in f["sizes"]], [1024, 8 << 20])  # 16k and 256k did not run
        self.assertEqual([e["load"] for e in f["sizes"][0]["loads"]], ["files-1k", "files-ab-1k"])
        r = f["sizes"][0]["loads"][0]["ratios"]
        self.assertEqual(list(r), ["ours/nginx", "ours/h2o"])
        self.assertAlmostEqual(r["ours/nginx"]["rps"], 1.1)
        self.assertAlmostEqual(r["ours/nginx"]["cpu_us_per_req"], 0.8)
        self.assertAlmostEqual(r["ours/h2o"]["rps"], 0.88)
        self.assertEqual(f["notes"], [])
        f = compare.files_special(self.summary(ours=False), [
            "ours (files) did not start and was left out: uring-http: unknown option '--root=/tmp/d'"])
        self.assertEqual(f["sizes"][0]["loads"][0]["ratios"], {})
        self.assertTrue(f["notes"][0].startswith("**ours does not know --root yet"))
        self.assertIn("unknown option '--root=/tmp/d'", f["notes"][1])

    def test_targets(self):
        t = {d: (v, l, ok) for d, v, l, ok in compare.evaluate_targets(self.summary(), {})}
        self.assertEqual(t["files-1k CPU us/req ours/nginx"], ("0.800x (8.0 vs 10.0 CPU us/req)", "<= 1x", True))
        self.assertEqual(t["files-1k req/s ours/nginx"], ("1.100x (110,000 vs 100,000 req/s)", ">= 1x", True))
        self.assertEqual(t["files-ab-1k req/s ours/nginx"][1:], (">= 1x", False))
        self.assertFalse(t["files-8m CPU us/req ours/nginx"][2])  # 3000 > 2500
        self.assertFalse(t["files-8m req/s ours/nginx"][2])       # 100 < 106
        self.assertNotIn("files-16k req/s ours/nginx", t)         # did not run: no row
        t = {d: ok for d, _, _, ok in compare.evaluate_targets(self.summary(ours=False), {})}
        self.assertIsNone(t["files-1k req/s ours/nginx"])         # ours left out: n/a
        rows = [d for d, _, _, _ in compare.evaluate_targets({}, {})]
        self.assertFalse([d for d in rows if d.startswith("files-")])

    def test_files_run_counts_the_bodies(self):
        class FakeLoad:
            key, body_bytes = "files-8m", 8 << 20

            def run(self, port, workdir, cpu=None):
                return {"requests": 200, "rps": 100.0, "mib_per_s": 801.5, "errors": 0, "seconds": 2.0}

        class FakeServer:
            label, port = "nginx (files)", 1

            def cpu_ticks(self):
                return 0

        r = compare.files_run(FakeLoad(), FakeServer(), tempfile.mkdtemp(), None)
        self.assertEqual(r["mib_per_s"], 800.0)        # req/s x the file's size
        self.assertEqual(r["wire_mib_per_s"], 801.5)   # wrk's, headers included
        self.assertEqual((r["server"], r["load"]), ("nginx (files)", "files-8m"))

    def test_report_gives_the_files_their_own_section(self):
        summary = self.summary()
        args = compare.parse_args(["--only", "files"])
        meta = {"started": "now", "machine": "m", "versions": "v"}
        d = tempfile.mkdtemp()
        loads = ["wrk-c100", "files-1k", "files-ab-1k", "files-8m"]
        for special in ({"files": compare.files_special(summary)}, {}):  # {}: interrupted in the phase
            text = compare.write_report(os.path.join(d, "r"), args, meta, loads, summary, special,
                                        compare.evaluate_targets(summary, special), [])
            main_table = text.split("## Static files")[0]
            self.assertIn("| wrk-c100 | ours |", main_table)
            self.assertNotIn("files-", main_table)
            self.assertIn("## Static files (wrk -t1 -c50 --latency GET /f<size>.bin; ab -c50 GET /f1k.bin, "
                          "a connection per request)", text)
            self.assertIn("### 1 KiB (GET /f1k.bin)", text)
            self.assertIn("### 8 MiB (GET /f8m.bin)", text)
            self.assertNotIn("### 16 KiB", text)
            self.assertIn("| wrk -c50 GET /f1k.bin | ours (files) | 110,000 | 107 | 0 | 0.50 | 2.00 | 8.00 | 1 | 0 |",
                          text)
            self.assertIn("| conn/request ab -c50 GET /f1k.bin | h2o (files) | 27,000 | 26 | 0 |", text)
            self.assertIn("| wrk -c50 GET /f8m.bin | nginx (files) | 106 | 848 | 0 | 0.50 | 2.00 | 2,500 |", text)
            self.assertIn("| wrk -c50 GET /f1k.bin | ours/nginx | 1.10x | 0.80x |", text)
            self.assertIn("| wrk -c50 GET /f8m.bin | ours/h2o | 0.50x | 0.75x |", text)
            self.assertIn("| files-8m req/s ours/nginx | 0.943x (100 vs 106 req/s) | >= 1x | FAIL |", text)


class SummaryTest(unittest.TestCase):
    def test_median_and_range(self):
        s = compare.summarize([{"rps": 3.0, "errors": 0}, {"rps": 1.0, "errors": 2}, {"rps": 2.0, "errors": 0}])
        self.assertEqual(s["runs"], 3)
        self.assertEqual(s["rps"], {"median": 2.0, "min": 1.0, "max": 3.0})
        self.assertEqual(s["errors"]["max"], 2)
        self.assertEqual(compare.fmt_range(s["rps"], 0), "2 (1-3)")


def read(path):
    with open(path) as f:
        return f.read()


class ConfigTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        args = compare.parse_args(["--threads", "2", "--port-base", "20000"])
        self.servers = compare.Servers(args, self.dir, "/bin-dir")

    def test_nginx(self):
        cmd = self.servers.make("nginx").cmd
        conf = read(cmd[cmd.index("-c") + 1])
        for directive in ("worker_processes 2;", "daemon off;", "access_log off;", "keepalive_requests 1000000;",
                          "listen 20001 ", 'location = /test/fast { return 200 ""; }'):
            self.assertIn(directive, conf)
        self.assertIn(self.dir, conf)  # pid and logs stay in the temporary directory

    def test_h2o(self):
        cmd = self.servers.make("h2o").cmd
        conf = read(cmd[cmd.index("-c") + 1])
        for directive in ("num-threads: 2", "port: 20002", "/test/fast:", "file.file:"):
            self.assertIn(directive, conf)

    def test_bare_pipelined(self):
        bare = self.servers.make("bare", "pipelined")
        self.assertEqual(bare.cmd, ["/bin-dir/perf/bare_responder", "20017", "--pipelined"])
        self.assertEqual((bare.label, bare.port), ("bare (pipelined)", 20017))
        args = compare.parse_args(["--port-base", "20000"])
        args.pin = True
        self.assertEqual(compare.Servers(args, self.dir, "/bin-dir").make("bare", "pipelined").pin_cpu, 1)

    def test_ours_variants(self):
        self.assertEqual(self.servers.make("ours").cmd[1:],
                         ["-p", "20000", "-A", "2", "-w", "4", "-D", "30"])
        self.assertEqual(self.servers.make("ours", "queue").cmd[1:],
                         ["-p", "20006", "-A", "100", "-C", "1000", "-w", "1", "-D", "30"])
        self.assertEqual(self.servers.make("ours", "slow").cmd[4:7], ["2", "-w", "300"])
        self.assertEqual(self.servers.make("bare", "close").cmd[1:], ["20004", "--close"])

    def test_bodies_servers(self):
        zc, copy = self.servers.make("ours", "send-zc"), self.servers.make("ours", "copy")
        self.assertEqual((zc.label, zc.port), ("ours (send-zc)", 20009))
        # zero-copy at every measured size, whatever the shipped threshold
        self.assertEqual(zc.cmd[1:], ["-p", "20009", "-A", "2", "-w", "4", "-D", "30", "--send-zc=16384"])
        self.assertEqual((copy.label, copy.port), ("ours (copy)", 20010))
        self.assertEqual(copy.cmd[1:], ["-p", "20010", "-A", "2", "-w", "4", "-D", "30", "--send-zc=0"])
        nginx = self.servers.make("nginx", "bodies")
        self.assertEqual((nginx.label, nginx.port), ("nginx (sendfile)", 20011))
        conf_path = nginx.cmd[nginx.cmd.index("-c") + 1]
        conf = read(conf_path)
        files = os.path.join(os.path.dirname(conf_path), "bytes")
        for n in compare.BODY_SIZES:
            self.assertEqual(read(os.path.join(files, str(n))), "x" * n)
            self.assertIn(f"        {n} /{n};", conf)
        self.assertIn("default /none;", conf)  # no file name from the query string
        self.assertIn(f"location = /test/bytes {{ root {files}; try_files $body_file =404; }}", conf)
        self.assertIn("sendfile on;", conf)
        self.assertIn('location = /test/fast { return 200 ""; }', conf)  # the readiness check
        self.assertIn("listen 20011 ", conf)
        cmd = self.servers.make("nginx").cmd
        self.assertNotIn("/test/bytes", read(cmd[cmd.index("-c") + 1]))

    def test_upload_and_download_servers(self):
        nginx = self.servers.make("nginx", "upload")
        self.assertEqual((nginx.label, nginx.port), ("nginx (discard)", 20012))
        conf = read(nginx.cmd[nginx.cmd.index("-c") + 1])
        # The discarding location: no body limit, nginx reads (and drops) the body, answers 204.
        self.assertIn("location = /test/sink {\n            client_max_body_size 0;\n"
                      "            client_body_buffer_size 64k;\n            lingering_time 300s;\n"
                      "            lingering_timeout 60s;\n            return 204;\n        }", conf)
        self.assertNotIn("echo_read_request_body", conf)
        self.assertNotIn("client_body_in_file_only", conf)
        self.assertNotIn("proxy_pass", conf)
        self.assertNotIn("load_module", conf)
        self.assertIn('location = /test/fast { return 200 ""; }', conf)  # the readiness check
        self.assertIn("listen 20012 ", conf)
        self.assertIn(os.path.join(self.dir, "nginx-upload"), conf)  # own pid file, logs, temp paths

        nginx = self.servers.make("nginx", "download")
        self.assertEqual((nginx.label, nginx.port), ("nginx (sendfile)", 20013))
        conf_path = nginx.cmd[nginx.cmd.index("-c") + 1]
        conf = read(conf_path)
        files = os.path.join(os.path.dirname(conf_path), "files")
        self.assertIn(f"location = /test/stream {{ root {files}; try_files /stream =404; }}", conf)
        self.assertIn("sendfile on;", conf)
        self.assertIn("listen 20013 ", conf)
        stream = os.path.join(files, "stream")
        self.assertEqual(os.path.getsize(stream), compare.DOWNLOAD_BYTES)
        with open(stream, "rb") as f:
            self.assertEqual(f.read(1 << 20), b"x" * (1 << 20))
            f.seek(-(1 << 20), os.SEEK_END)
            self.assertEqual(f.read(), b"x" * (1 << 20))
        plain = read(self.servers.make("nginx").cmd[-3])
        self.assertNotIn("/test/sink", plain)
        self.assertNotIn("/test/stream", plain)

        ours = self.servers.make("ours")  # upload and download: ours as in the fast phases
        self.assertEqual(ours.cmd[1:], ["-p", "20000", "-A", "2", "-w", "4", "-D", "30"])

    def test_files_servers(self):
        root = os.path.join(self.dir, "docroot")
        ours = self.servers.make("ours", "files")
        self.assertEqual((ours.label, ours.port), ("ours (files)", 20014))
        self.assertEqual(ours.cmd[1:], ["-p", "20014", "-A", "2", "-w", "4", "-D", "30", f"--root={root}"])
        self.assertEqual(sorted(os.listdir(root)), ["f16k.bin", "f1k.bin", "f256k.bin", "f8m.bin", "index.html"])
        self.assertEqual(os.path.getsize(os.path.join(root, "f8m.bin")), 8 << 20)
        with open(os.path.join(root, "f16k.bin"), "rb") as f:
            before = f.read()

        nginx = self.servers.make("nginx", "files")
        self.assertEqual((nginx.label, nginx.port), ("nginx (files)", 20015))
        conf = read(nginx.cmd[nginx.cmd.index("-c") + 1])
        for directive in (f"root {root};", "sendfile on;", "tcp_nopush on;",
                          "open_file_cache max=1000 inactive=60s;", "open_file_cache_valid 1s;",
                          "access_log off;", "listen 20015 ", 'location = /test/fast { return 200 ""; }'):
            self.assertIn(directive, conf)
        self.assertIn(os.path.join(self.dir, "nginx-files"), conf)  # own pid file and logs
        plain = read(self.servers.make("nginx").cmd[-3])
        self.assertNotIn("root ", plain)
        self.assertNotIn("tcp_nopush", plain)

        h2o = self.servers.make("h2o", "files")
        self.assertEqual((h2o.label, h2o.port), ("h2o (files)", 20016))
        conf_path = h2o.cmd[h2o.cmd.index("-c") + 1]
        self.assertEqual(os.path.dirname(conf_path), os.path.join(self.dir, "h2o-files"))
        conf = read(conf_path)
        self.assertIn("port: 20016\n", conf)
        self.assertIn("      /test/fast:\n        file.file: ", conf)  # the readiness check
        self.assertIn(f"      /:\n        file.dir: {root}\n        file.etag: ON\n", conf)
        self.assertNotIn("access-log", conf)
        self.assertNotIn("file.dir", read(self.servers.make("h2o").cmd[-1]))

        with open(os.path.join(root, "f16k.bin"), "rb") as f:
            self.assertEqual(f.read(), before)  # written once: every server serves the same bytes
        self.assertEqual(compare.PORT_COUNT, 1 + max(list(compare.FILE_PORTS.values())
                                                     + list(compare.BARE_PORTS.values())))

    def test_x_file(self):
        path = os.path.join(self.dir, "f")
        compare.write_x_file(path, (1 << 20) + 3)
        self.assertEqual(read(path), "x" * ((1 << 20) + 3))
        compare.write_x_file(path, 5)
        self.assertEqual(read(path), "xxxxx")

    def test_pinning(self):
        args = compare.parse_args(["--port-base", "20000"])
        args.pin = True  # as with --threads 1 on 2 CPUs or more
        servers = compare.Servers(args, self.dir, "/bin-dir")
        # The bodies phase compares servers with each other: pinned like keepalive.
        for name, variant in (("ours", None), ("ours", "send-zc"), ("ours", "copy"), ("nginx", "bodies")):
            self.assertEqual(servers.make(name, variant).pin_cpu, 1)
        # So do the upload, download and files phases.
        for name, variant in (("nginx", "upload"), ("nginx", "download"), ("ours", "files"), ("nginx", "files"),
                              ("h2o", "files")):
            self.assertEqual(servers.make(name, variant).pin_cpu, 1)
        for name, variant in (("ours", "slow"), ("ours", "queue"), ("bare", "slow"), ("bare", "slow-pool")):
            self.assertIsNone(servers.make(name, variant).pin_cpu)

    def test_slow_references(self):
        bare = self.servers.make("bare", "slow")
        self.assertEqual(bare.cmd[1:], ["20007", "--close", "--delay-ms=30"])
        self.assertEqual(bare.label, "bare (delay 30 ms)")
        self.assertIsNone(bare.pin_cpu)  # unpinned, like ours (slow)
        pool = self.servers.make("bare", "slow-pool")
        self.assertEqual(pool.cmd[1:], ["20018", "--close", "--delay-ms=30", "--pool-threads=300"])
        self.assertEqual(pool.cmd[0], "/bin-dir/perf/bare_responder")
        self.assertEqual((pool.label, pool.port, pool.pin_cpu), ("bare (pool, delay 30 ms)", 20018, None))
        nginx = self.servers.make("nginx", "slow")
        self.assertEqual((nginx.port, nginx.label, nginx.pin_cpu), (20008, "nginx (echo_sleep 30 ms)", None))
        conf = read(nginx.cmd[nginx.cmd.index("-c") + 1])
        # load_module is only allowed in the main context, before the blocks.
        lines = [l for l in conf.splitlines() if l and not l.startswith("#")]
        self.assertEqual(lines[0], f"load_module {compare.NGINX_ECHO_MODULE};")
        self.assertIn("location = /test/slow { echo_sleep 0.030; echo_flush; }", conf)
        self.assertIn('location = /test/fast { return 200 ""; }', conf)  # the readiness check
        self.assertIn("listen 20008 ", conf)
        cmd = self.servers.make("nginx").cmd
        plain = read(cmd[cmd.index("-c") + 1])
        self.assertNotIn("load_module", plain)
        self.assertNotIn("echo_sleep", plain)
        self.assertNotEqual(os.path.dirname(conf), os.path.dirname(plain))  # own pid file and logs

    def test_optional_server_that_fails_is_left_out(self):
        class Failing:
            def __init__(self, label):
                self.label, self.stopped = label, False

            def start(self):
                raise RuntimeError(f"{self.label} exited with 1 at start-up:\n  detail")

            def stop(self):
                self.stopped = True

            def tail_log(self, lines=15):
                return "    | nginx: [emerg] no module"

        made = []
        self.servers.make = lambda name, variant=None: made.append(Failing(f"{name} {variant}")) or made[-1]
        notes = []
        started = self.servers.start([("nginx", "slow")], optional=[("nginx", "slow")], notes=notes)
        self.assertEqual(started, [])
        self.assertTrue(made[0].stopped)
        self.assertEqual(self.servers.running, [])
        self.assertEqual(notes, ["nginx slow did not start and was left out: nginx: [emerg] no module"])
        with self.assertRaises(RuntimeError):
            self.servers.start([("bare", "slow")], optional=[("nginx", "slow")])

    def test_optional_server_that_answers_wrong_is_left_out(self):
        class Wrong:
            def __init__(self, label):
                self.label, self.stopped = label, False

            def start(self):
                pass

            def stop(self):
                self.stopped = True

            def tail_log(self, lines=15):
                return "    | unrelated log line"

        def verify(server):
            raise RuntimeError(f"{server.label}: GET /test/bytes?16384 answered 404 with 0 bytes\nmore")

        made = []
        self.servers.make = lambda name, variant=None: made.append(Wrong(f"{name} {variant}")) or made[-1]
        notes = []
        started = self.servers.start([("nginx", "bodies")], [("nginx", "bodies")], notes, verify)
        self.assertEqual(started, [])
        self.assertTrue(made[0].stopped)
        self.assertEqual(notes, ["nginx bodies answered wrong and was left out: "
                                 "nginx bodies: GET /test/bytes?16384 answered 404 with 0 bytes"])
        with self.assertRaisesRegex(RuntimeError, "answered 404"):
            self.servers.start([("ours", "send-zc")], [("nginx", "bodies")], notes, verify)
        ok = self.servers.start([("ours", "copy")], (), None, lambda server: None)
        self.assertEqual([s.label for s in ok], ["ours copy"])

    def test_quick_is_short(self):
        args = compare.parse_args(["--quick"])
        self.assertEqual((args.rounds, args.duration), (1, 2))


if __name__ == "__main__":
    unittest.main()
