#!/usr/bin/env python3
"""WebSocket echo: ours (src/server's GET /test/ws) against established servers.

  perf/compare_ws [--quick] [--rounds 3] [--seconds 5] [--only e64c100,...,mem]
                  [--peers ours,gorilla,node_ws,tungstenite]

Servers, one thread each, each echoing every text and binary message on
/test/ws (sources in perf/ws_peers/, built by perf/compare_ws):
  ours         src/server -p P --address=127.0.0.1 -A 1 -w 1 (-C's default,
               100,000, is clamped to RLIMIT_NOFILE, which the script raises
               to its hard limit)
  gorilla      github.com/gorilla/websocket (Go), GOMAXPROCS=1, a goroutine per
               connection, NextReader into a kept buffer + WriteMessage
  node_ws      ws (Node.js) with bufferutil, perMessageDeflate off
  tungstenite  tokio-tungstenite (Rust), tokio's current-thread runtime, the
               stream forwarded into the sink (its echo example)
No compression anywhere: ws_load offers no extension (and ours' --ws-deflate is off
by default), so every server answers without permessage-deflate.

Pinning (2 CPUs): every server on CPU 1 (only the one under load is busy),
the load generator (perf/ws_load, Go) alone on CPU 0. The report says per run
who was busy: "server busy" (its CPU seconds over the window; ~100%: the
server is the bottleneck), "others on CPU 1" (CPU 1 busy from /proc/stat less
the server: anything else, e.g. a compiler on a shared machine) and "load
busy" (ws_load's own CPU over the window; near 100% with the server well below
it: the load generator was the bottleneck and the rate is not the server's).

Throughput phases (--only; all by default):
  e64c100    64 B messages,   100 connections,    16 in flight on each
  e64c10k    64 B messages,   10,000 connections, 1 in flight on each
  e16kc100   16 KiB messages, 100 connections,    2 in flight on each
  e16kc10k   16 KiB messages, 10,000 connections, 1 in flight on each
  burst      2 KiB messages,  10 connections,     64 in flight on each: not
             by default (--only burst); a probe of a server's output queue
             when a client sends a burst faster than it reads the echoes
(--window PHASE=W changes one.) 100 connections pipeline, so that a server
can take several messages per read and answer them with one write; 10,000
connections with one each are 10,000 clients that wait for their answer (and
keep 10,000 messages in flight).
Binary messages (--text: text, ASCII, which ours and ws check as UTF-8 and
gorilla does not). Every connection keeps its window of messages in flight:
each echo that comes back (checked byte for byte) sends one more. Per run:
connect all (10,000 from 8 source addresses 127.0.0.x, rotated per run, so
that no 4-tuple of an earlier run's TIME_WAIT is met), --warmup s of load, a
measured window of --seconds s, then every connection drains and closes with
the closing handshake (1000). Rounds interleaved (ours gorilla node_ws
tungstenite, ours ...), each server started once per phase; medians (min-max)
of the rounds. Before each run the previous server must be quiet (its CPU time
not moving), so that the closes of 10,000 connections are not charged to the
next one. Server CPU per message: utime+stime of the server's process (all
threads, /proc/PID/stat) over the window, read by ws_load at the window's
edges, divided by the echoes received in it. Latency: from the write that
carried a message to the read that completed its echo, over every message of
the window (with a window of W in flight it includes the queueing behind the
W-1 others: Little's law, not an idle round trip).

Errors (any is reported): connections refused or not upgraded, connections
that received no echo in the window (stalled), and every ending that is not
clean: a bad echo, a close or EOF from the server during the load, echoes not
delivered by the end, a close not answered with 1000, or TCP left open after
it. A server that dies is reported with its status, log tail and command line.

Memory phase (mem): per server, fresh, N connections (--mem-conns, default
10,000 and 100,000) from ws_load -mode hold: each upgraded, one 64 B message
echoed, then held idle. (VmRSS held - VmRSS before) / N, and the same of
RssAnon, in bytes per connection (the server's own memory; the kernel's socket
memory is not in it). 100,000 needs 100,000 descriptors in one server process:
skipped, with the reason, when RLIMIT_NOFILE's hard limit is below that.

Before timing, each server must pass ws_load -mode check (text and binary, 0 B
to 200 KiB, echoed with their type; close answered).

--quick: 1 round of 2 s, 0.5 s warm-up, memory at 10,000 only.

Writes perf/results/compare_ws-DATE.md and prints it.
"""
import argparse
import datetime
import json
import os
import platform
import resource
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SERVER_CPU, LOAD_CPU = "1", "0"
CLK = os.sysconf("SC_CLK_TCK")
SERVERS = ("ours", "gorilla", "node_ws", "tungstenite")
PHASES = {  # name: (message bytes, connections, window: messages in flight per connection)
    "e64c100": (64, 100, 16),
    "e64c10k": (64, 10000, 1),
    "e16kc100": (16384, 100, 2),
    "e16kc10k": (16384, 10000, 1),
    "burst": (2048, 10, 64),
}
ALL_PHASES = tuple(PHASES) + ("mem",)
DEFAULT_PHASES = tuple(p for p in ALL_PHASES if p != "burst")
OTHERS = []  # every run's share of the server's CPU that other work took
PEER_TEXT = {
    "ours": "src/server -A 1 -w 1",
    "gorilla": "gorilla/websocket, GOMAXPROCS=1",
    "node_ws": "Node.js ws + bufferutil",
    "tungstenite": "tokio-tungstenite, current-thread runtime",
}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_cpu_s(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            v = f.read().rsplit(")", 1)[1].split()
        return (int(v[11]) + int(v[12])) / CLK
    except (OSError, IndexError):
        return None


def proc_status_kb(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class Server:
    """One server, pinned to SERVER_CPU, in its own session, logging to a file."""

    def __init__(self, name, a, workdir, conns):
        self.name, self.port = name, free_port()
        env = dict(os.environ)
        if name == "ours":
            cmd = [a.ours, "-p", str(self.port), "--address=127.0.0.1", "-A", "1", "-w", "1"]
            cmd += shlex.split(a.ours_args)
        elif name == "gorilla":
            cmd = [a.gorilla, "-addr", f"127.0.0.1:{self.port}"]
            env["GOMAXPROCS"] = "1"
        elif name == "node_ws":
            cmd = ["node", os.path.join(a.node_dir, "server.js"), str(self.port)]
        else:
            cmd = [a.tungstenite, f"127.0.0.1:{self.port}"]
        self.cmd = cmd
        self.env_text = "GOMAXPROCS=1 " if name == "gorilla" else ""
        self.log_path = os.path.join(workdir, f"{name}-{self.port}.log")
        self.logf = open(self.log_path, "wb")
        self.p = subprocess.Popen(["taskset", "-c", SERVER_CPU] + cmd, stdout=self.logf, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True, env=env,
                                  cwd=a.node_dir if name == "node_ws" else None)
        end = time.monotonic() + 20
        while True:
            if self.p.poll() is not None:
                raise RuntimeError(f"{name} exited with {self.p.returncode} at start-up: "
                                   f"{shlex.join(cmd)}\n{self.tail()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > end:
                    raise RuntimeError(f"{name} never opened port {self.port}\n{self.tail()}")
                time.sleep(0.05)

    @property
    def pid(self):
        return self.p.pid

    def alive(self):
        return self.p.poll() is None

    def settle(self, limit=8.0):
        """Until its CPU time stops moving (0.3 s without a tick), at most `limit` s."""
        end, last = time.monotonic() + limit, proc_cpu_s(self.pid)
        while time.monotonic() < end:
            time.sleep(0.3)
            now = proc_cpu_s(self.pid)
            if now is None or now == last:
                return
            last = now

    def stop(self):
        rc = self.p.poll()
        if rc is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                rc = self.p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                rc = "ignored SIGTERM for 15 s"
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.p.wait()
        self.logf.close()
        return rc

    def lines(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace").splitlines()

    def tail(self, n=15):
        return "\n".join("    " + l for l in self.lines()[-n:])


class Sources:
    """8 source addresses per 10,000-connection run, a new set each run."""

    def __init__(self):
        self.next = 2

    def take(self, conns):
        if conns < 2000:
            return []
        if self.next + 8 > 250:
            self.next = 2
        first, self.next = self.next, self.next + 8
        return ["-sources", "8", "-first-source", str(first)]


def ws_load_cmd(a, args):
    return ["taskset", "-c", LOAD_CPU, a.ws_load, "-clk-tck", str(CLK)] + args


def check(a, server):
    r = subprocess.run(ws_load_cmd(a, ["-mode", "check", "-addr", f"127.0.0.1:{server.port}"]),
                       capture_output=True, text=True, timeout=120)
    text = (r.stdout.strip() or r.stderr.strip()).splitlines()[-1] if (r.stdout or r.stderr) else "no output"
    if r.returncode != 0:
        raise RuntimeError(f"{server.name} failed the echo check: {text}\n{server.tail()}")
    return text


def run_load(a, server, size, conns, window, sources):
    args = ["-addr", f"127.0.0.1:{server.port}", "-conns", str(conns), "-window", str(window), "-size", str(size),
            "-warmup", f"{a.warmup}s", "-duration", f"{a.seconds}s", "-server-pid", str(server.pid),
            "-close-timeout", "10s" if conns > 1000 else "5s"]
    args += sources.take(conns) + (["-text"] if a.text else [])
    cmd = ws_load_cmd(a, args)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=a.warmup + a.seconds + 180)
    try:
        res = json.loads(r.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise RuntimeError(f"ws_load gave no result (status {r.returncode}): {shlex.join(cmd)}\n"
                           f"{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    res["cmd"] = f"taskset -c {LOAD_CPU} ws_load " + shlex.join(args)
    w = max(res["wall_s"], 1e-9)
    res["busy"] = res.get("server_cpu_s", 0) / w * 100
    res["others"] = max(res["cpu_busy_pct"].get(SERVER_CPU, 0) - res["busy"], 0)
    res["load_busy"] = res["load_cpu_s"] / w * 100
    res["alive"] = server.alive()
    res["errors"] = error_count(res)
    return res


def limit(rows):
    """What held the rate back, by the medians: the server's CPU, ws_load's, or neither (the CPUs were shared)."""
    busy = statistics.median(r["busy"] for r in rows)
    load = statistics.median(r["load_busy"] for r in rows)
    others = statistics.median(r["others"] for r in rows)
    if busy >= 90:
        return "server"
    if load >= 90:
        return "**ws_load**"
    if others >= 10:
        return "CPU shared"
    return "-"


def error_count(res):
    bad_endings = sum(n for k, n in res["endings"].items() if k != "clean")
    return sum(res["connect_failures"].values()) + bad_endings + res["conns_never_echoed"]


def error_text(res):
    parts = []
    for k, n in res["connect_failures"].items():
        parts.append(f"{n} not connected ({k}: {res['first_connect_failure']})")
    for k, n in sorted(res["endings"].items()):
        if k != "clean":
            e = res["first_error"].get(k, "")
            parts.append(f"{n} {k}" + (f" ({e})" if e else ""))
    if res["conns_never_echoed"]:
        parts.append(f"{res['conns_never_echoed']} never echoed, from the start to the end")
    return "; ".join(parts)


def med(rows, key, f):
    v = [r[key] for r in rows if r.get(key) is not None]
    if not v:
        return "-"
    return f"{f(statistics.median(v))} ({f(min(v))}-{f(max(v))})" if len(v) > 1 else f(v[0])


def fmt_lat(us):
    return f"{us / 1000:.2f}" if us < 10000 else f"{us / 1000:.0f}"


def run_phase(phase, a, servers_wanted, workdir, sources, lines, summary):
    size, conns, window = PHASES[phase]
    servers, results, dead, checks = {}, {n: [] for n in servers_wanted}, {}, {}
    try:
        for name in servers_wanted:
            servers[name] = Server(name, a, workdir, conns)
            checks[name] = check(a, servers[name])
            log(f"{phase}: {name} on :{servers[name].port}: {checks[name]}")
        for r in range(a.rounds):
            for name in servers_wanted:
                if name in dead:
                    continue
                s = servers[name]
                for other in servers.values():
                    other.settle()
                res = run_load(a, s, size, conns, window, sources)
                results[name].append(res)
                if not res["alive"]:
                    dead[name] = (s.p.returncode, s.tail(), shlex.join(s.cmd), res["cmd"])
                    log(f"{phase}: {name} DIED in round {r + 1} (status {s.p.returncode})")
                if res["errors"]:
                    log(f"{phase}: {name} round {r + 1} ERRORS: {error_text(res)}")
            log(f"{phase} round {r + 1}: " + ", ".join(
                f"{n} {v[-1]['msgs_per_s']:,.0f}/s {v[-1].get('server_cpu_us_per_msg', 0):.2f}us "
                f"busy {v[-1]['busy']:.0f}% load {v[-1]['load_busy']:.0f}% p99 {fmt_lat(v[-1]['p99_us'])}ms "
                f"err {v[-1]['errors']}" for n, v in results.items() if v))
    finally:
        logs = {}
        for name, s in servers.items():
            rc = s.stop()
            logs[name] = s.lines()
            if name not in dead and rc not in (0, None, -signal.SIGTERM):
                dead[name] = (rc, s.tail(), shlex.join(s.cmd), "(at its stop: SIGTERM)")
    what = f"{size:,} B" if size < 1024 else f"{size // 1024} KiB"
    lines.append(f"\n### {phase}: {what} {'text' if a.text else 'binary'} messages, {conns:,} connections, "
                 f"{window} in flight each\n")
    some = next((v[0] for v in results.values() if v), None)
    if some:
        lines.append(f"Load: `{some['cmd']}` (-addr, -server-pid and -first-source vary by run).\n")
    for name in servers_wanted:
        lines.append(f"- check, {name}: {checks.get(name, 'not reached')}")
    cols = ("| server | msgs/s | x ours | MiB/s each way | server CPU µs/msg | x ours | p50 ms | p99 ms | "
            f"server busy % | others on CPU {SERVER_CPU} % | ws_load busy % (CPU {LOAD_CPU}) | limit | connect s | errors |")
    lines += ["\n" + cols, "|---|" + "---:|" * (cols.count("|") - 2)]
    pc = lambda x: f"{x:.0f}"
    mo = {n: (statistics.median(r["msgs_per_s"] for r in v),
              statistics.median(r.get("server_cpu_us_per_msg", 0) for r in v)) for n, v in results.items() if v}
    for name in servers_wanted:
        rows = results[name]
        if not rows:
            continue
        rr = cr = "-"
        if "ours" in mo and mo["ours"][0] > 0:
            rr = f"{mo[name][0] / mo['ours'][0]:.2f}"
            cr = f"{mo[name][1] / mo['ours'][1]:.2f}" if mo["ours"][1] > 0 else "-"
        lines.append(f"| {name} | {med(rows, 'msgs_per_s', lambda x: f'{x:,.0f}')} | {rr} | "
                     f"{med(rows, 'mib_per_s_each_way', lambda x: f'{x:,.1f}')} | "
                     f"{med(rows, 'server_cpu_us_per_msg', lambda x: f'{x:.2f}')} | {cr} | "
                     f"{med(rows, 'p50_us', fmt_lat)} | {med(rows, 'p99_us', fmt_lat)} | "
                     f"{med(rows, 'busy', pc)} | {med(rows, 'others', pc)} | {med(rows, 'load_busy', pc)} | {limit(rows)} | "
                     f"{med(rows, 'connect_s', lambda x: f'{x:.1f}')} | {sum(r['errors'] for r in rows)} |")
    for name in servers_wanted:
        idle = [r["conns_without_echo_in_window"] for r in results[name]]
        if any(idle):
            lines.append(f"- {name}: connections without an echo inside the window (not an error; unfairness or "
                         f"round trips longer than the window), per round: {', '.join(map(str, idle))}")
        for i, r in enumerate(results[name]):
            if r["errors"]:
                lines.append(f"- **{name}, round {i + 1}: {error_text(r)}**")
    ours_log = [l for l in logs.get("ours", []) if "ready" not in l]
    lines.append(f"- ours' output besides the ready line: {len(ours_log)} lines"
                 + (f", e.g. `{ours_log[0]}`" if ours_log else ""))
    for name, (rc, tail, cmd, load) in dead.items():
        lines.append(f"\n**{name} died (status {rc}).** Reproduce: server `taskset -c {SERVER_CPU} {cmd}`, "
                     f"load `{load}`. Its last output:\n```\n{tail}\n```")
    row = [phase]
    for name in servers_wanted:
        if name in mo:
            m = mo[name]
            ratio = ""
            if name != "ours" and "ours" in mo and mo["ours"][0] > 0:
                ratio = f" ({m[0] / mo['ours'][0]:.2f}x)"
            row.append(f"{m[0]:,.0f}{ratio}")
        else:
            row.append("-")
    for name in servers_wanted:
        if name in mo:
            m = mo[name]
            ratio = ""
            if name != "ours" and "ours" in mo and mo["ours"][1] > 0:
                ratio = f" ({m[1] / mo['ours'][1]:.2f}x)"
            row.append(f"{m[1]:.2f}{ratio}")
        else:
            row.append("-")
    for v in results.values():
        OTHERS.extend(r["others"] for r in v)
    errs = {n: sum(r["errors"] for r in v) for n, v in results.items()}
    row.append(", ".join(f"{n} {e}" for n, e in errs.items() if e) + (", " if any(errs.values()) and dead else "")
               + ", ".join(f"{n} died" for n in dead) or "none")
    summary.append("| " + " | ".join(row) + " |")


def run_mem(a, servers_wanted, workdir, sources, lines, mem_summary):
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    lines.append("\n### mem: resident memory per idle WebSocket connection\n")
    lines.append("Each server fresh; ws_load -mode hold opens N connections (upgraded, one 64 B binary message "
                 "echoed on each), holds them idle; the server's VmRSS and RssAnon (/proc/PID/status) before the "
                 "first connection and 1 s after the last echo; (held - before) / N; VmRSS held / N also counts "
                 "what a server set up before any connection (ours: its slot table, sized by RLIMIT_NOFILE). "
                 "The kernel's socket memory is not in it. No server is asked to collect garbage first.\n")
    cols = ("| server | N | held | VmRSS before MiB | VmRSS held MiB | RSS bytes/conn | x ours | RssAnon bytes/conn "
            "| VmRSS held / N | connect s | lost while held |")
    lines += [cols, "|---|" + "---:|" * (cols.count("|") - 2)]
    notes = []
    for n in a.mem_conns:
        if n + 200 > hard:
            why = (f"N={n:,} skipped: RLIMIT_NOFILE's hard limit here is {hard:,} (and raising it needs "
                   f"CAP_SYS_RESOURCE, which this machine does not give), so no single-process server can hold "
                   f"{n:,} sockets; neither can one ws_load process.")
            lines.append(f"| (all) | {n:,} | skipped | | | | | | | | |")
            mem_summary.append(f"- {why}")
            log(f"mem: {why}")
            continue
        per = {}
        for name in servers_wanted:
            s = None
            try:
                s = Server(name, a, workdir, n)
                s.settle(3)
                time.sleep(0.5)
                rss0, anon0 = proc_status_kb(s.pid, "VmRSS"), proc_status_kb(s.pid, "RssAnon")
                cmd = ws_load_cmd(a, ["-mode", "hold", "-addr", f"127.0.0.1:{s.port}", "-conns", str(n),
                                      "-size", "64"] + sources.take(n))
                h = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
                first = json.loads(h.stdout.readline() or "{}")
                time.sleep(1.0)
                rss1, anon1 = proc_status_kb(s.pid, "VmRSS"), proc_status_kb(s.pid, "RssAnon")
                out, err = h.communicate(timeout=120)  # closes its stdin: the release
                last = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
                held = first.get("echoed", 0)
                if rss1 is None or not held:
                    raise RuntimeError(f"{name}: nothing held ({first}) alive={s.alive()}\n{err[-1000:]}\n{s.tail()}")
                b = (rss1 - rss0) * 1024 / held
                ba = (anon1 - anon0) * 1024 / held
                per[name] = b
                lost = last.get("lost", "?")
                note = "" if held == n and lost == 0 else f" ({first.get('first_lost') or first.get('first_connect_failure') or last.get('first_lost')})"
                rr = f"{b / per['ours']:.2f}" if "ours" in per and per["ours"] > 0 else "-"
                lines.append(f"| {name} | {n:,} | {held:,} | {rss0 / 1024:.1f} | {rss1 / 1024:.1f} | {b:,.0f} | {rr} | "
                             f"{ba:,.0f} | {rss1 * 1024 / held:,.0f} | {first.get('connect_s', 0):.1f} | {lost}{note} |")
                log(f"mem {n}: {name}: {held} held, {b:,.0f} B/conn RSS, {ba:,.0f} B/conn anon")
            except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
                lines.append(f"| {name} | {n:,} | FAILED | | | | | | | | |")
                mem_summary.append(f"- mem {name} N={n}: FAILED: {e}")
                log(f"mem {name}: FAILED: {e}")
            finally:
                if s:
                    rc = s.stop()
                    if rc not in (0, None, -signal.SIGTERM):
                        mem_summary.append(f"- mem {name} N={n}: exit status {rc} at its stop; `{shlex.join(s.cmd)}`")
        if per and "tungstenite" in per:
            notes.append("tokio-tungstenite's WebSocketConfig::read_buffer_size defaults to 128 KiB a connection, "
                         "and the peer keeps the default: that buffer is most of its figure.")
        if per:
            mem_summary.append(f"- {n:,} idle connections, RSS bytes per connection: " + ", ".join(
                f"{k} {v:,.0f}" + (f" ({v / per['ours']:.2f}x ours)" if k != "ours" and per.get("ours") else "")
                for k, v in per.items()))
    lines += [""] + [f"- {x}" for x in dict.fromkeys(notes)]


def machine_notes():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    def ver(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "?"
    return (f"{os.cpu_count()} CPUs ({cpu}), Linux {platform.release()}, {ver(['go', 'version'])}, "
            f"node {ver(['node', '--version'])}, {ver(['rustc', '--version'])}; "
            f"RLIMIT_NOFILE {resource.getrlimit(resource.RLIMIT_NOFILE)[1]:,}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=5, help="measured window per run")
    p.add_argument("--warmup", type=float, default=1, help="load before the window, per run")
    p.add_argument("--only", default=",".join(DEFAULT_PHASES), help="of " + ",".join(ALL_PHASES))
    p.add_argument("--peers", default=",".join(SERVERS), help="servers to run (ours first), of " + ",".join(SERVERS))
    p.add_argument("--mem-conns", default="10000,100000")
    p.add_argument("--quick", action="store_true", help="1 round of 2 s, 0.5 s warm-up, memory at 10,000 only")
    p.add_argument("--window", action="append", default=[], metavar="PHASE=W",
                   help="messages in flight per connection in a phase, e.g. e64c10k=4")
    p.add_argument("--text", action="store_true", help="text messages instead of binary")
    p.add_argument("--ours-args", default="", help="extra flags for ours")
    p.add_argument("--ours", required=True, help="src/server binary (-c opt)")
    p.add_argument("--ours-from", choices=("built", "given"), default="given",
                   help="built: from this workspace by perf/compare_ws; given: --ours-binary")
    p.add_argument("--ours-note", default="", help="what the given ours binary is, for the report")
    p.add_argument("--ws-load", required=True)
    p.add_argument("--gorilla")
    p.add_argument("--node-dir", help="a directory with server.js and node_modules/ws")
    p.add_argument("--tungstenite")
    a = p.parse_args()
    argv = [x for x in sys.argv[1:]]
    shown = []  # the command line as given to perf/compare_ws (paths of this machine left out)
    skip = {"--ours", "--ours-from", "--ws-load", "--gorilla", "--node-dir", "--tungstenite"}
    i = 0
    while i < len(argv):
        if argv[i] in skip:
            i += 2
            continue
        if argv[i].split("=")[0] in skip:
            i += 1
            continue
        shown.append(argv[i])
        i += 1
    if a.quick:
        a.rounds, a.seconds, a.warmup = 1, 2, 0.5
        if "--mem-conns" not in " ".join(argv):
            a.mem_conns = "10000"
    a.mem_conns = [int(x) for x in a.mem_conns.split(",") if x]
    for w in a.window:
        ph, _, v = w.partition("=")
        if ph not in PHASES or not v.isdigit() or int(v) < 1:
            sys.exit(f"compare_ws: --window PHASE=W, PHASE of {','.join(PHASES)}")
        PHASES[ph] = PHASES[ph][:2] + (int(v),)
    only = a.only.split(",")
    if any(x not in ALL_PHASES for x in only):
        sys.exit(f"compare_ws: --only takes {','.join(ALL_PHASES)}")
    have = {"ours": a.ours, "gorilla": a.gorilla, "node_ws": a.node_dir, "tungstenite": a.tungstenite}
    wanted = [n for n in a.peers.split(",") if n]
    if any(n not in SERVERS for n in wanted):
        sys.exit(f"compare_ws: --peers takes {','.join(SERVERS)}")
    missing = [n for n in wanted if not have[n]]
    servers = [n for n in SERVERS if n in wanted and have[n]]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    workdir = tempfile.mkdtemp(prefix="compare_ws-")
    log(f"servers {', '.join(servers)}; logs in {workdir}")
    versions = {}
    if a.node_dir:
        try:
            with open(os.path.join(a.node_dir, "node_modules", "ws", "package.json")) as f:
                versions["ws"] = json.load(f)["version"]
        except OSError:
            pass
    for name, path in (("gorilla", os.path.join(HERE, "ws_peers", "gorilla", "go.mod")),
                       ("tungstenite", os.path.join(HERE, "ws_peers", "tungstenite", "Cargo.lock"))):
        try:
            with open(path) as f:
                t = f.read()
            if name == "gorilla":
                versions["gorilla/websocket"] = t.split("github.com/gorilla/websocket ")[1].split()[0]
            else:
                for dep in ("tokio-tungstenite", "tokio"):
                    versions[dep] = t.split(f'name = "{dep}"\nversion = "')[1].split('"')[0]
        except (OSError, IndexError):
            pass
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "src"], capture_output=True,
                               text=True).stdout.strip()
    except OSError:
        commit, dirty = "?", ""
    if a.ours_from == "built":
        origin = f"ours built from this workspace at {commit}" + (" (with uncommitted changes in src/)" if dirty else "")
    else:
        origin = (f"ours a binary given with --ours-binary ({a.ours_note})" if a.ours_note
                  else f"ours a binary given with --ours-binary (the workspace at {commit})")
    if a.ours_from == "given":
        shown = ["--ours-binary", "SERVER"] + shown
    peers = "; ".join(f"{n}: {PEER_TEXT[n]}" for n in servers if n != "ours")
    header = (
        f"\n`perf/compare_ws {shlex.join(shown)}`: {origin}; on {machine_notes()}. "
        f"Every server on CPU {SERVER_CPU} with one thread (ours -A 1 -w 1"
        f"{' ' + a.ours_args if a.ours_args else ''}; {peers}); the load generator (perf/ws_load: one Go thread, "
        f"one epoll loop) alone on CPU {LOAD_CPU}. Medians (min-max) of {a.rounds} interleaved "
        f"round{'s' if a.rounds > 1 else ''} of {a.seconds:g} s after {a.warmup:g} s of warm-up; "
        f"{'text' if a.text else 'binary'} messages. Versions: "
        + ", ".join(f"{k} {v}" for k, v in versions.items()) + ". "
        "Server CPU per message: the server's utime+stime over the window / echoes received in it. "
        "x ours: the server's figure over ours' (msgs/s: above 1 is faster than ours; CPU: above 1 costs more). "
        "Busy: the server's CPU over the window's wall time (100% = the server is the bottleneck); "
        "limit: server (busy >= 90%), ws_load (the load generator >= 90% busy: the rate is not the server's), "
        f"CPU shared (neither, and others took >= 10% of CPU {SERVER_CPU}).")
    lines = [f"# compare_ws {datetime.datetime.now():%Y-%m-%d %H:%M}", header]
    if missing:
        lines.append(f"\nLeft out (no build): {', '.join(missing)}.")
    summary = ["\n## Summary\n",
               "Messages per second (x ours), then server CPU µs per message (x ours); medians.\n",
               "| phase | " + " | ".join(f"{n} msgs/s" for n in servers) + " | "
               + " | ".join(f"{n} µs/msg" for n in servers) + " | errors |",
               "|---|" + "---:|" * (2 * len(servers)) + "---|"]
    mem_summary = []
    sources = Sources()
    for phase in PHASES:
        if phase in only:
            try:
                run_phase(phase, a, servers, workdir, sources, lines, summary)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                log(f"{phase}: FAILED: {e}")
                lines.append(f"\n### {phase}: FAILED\n\n```\n{e}\n```")
                summary.append(f"| {phase} | FAILED (see below) |" + " |" * (2 * len(servers)))
    if "mem" in only:
        run_mem(a, servers, workdir, sources, lines, mem_summary)
    if OTHERS:
        q = statistics.quantiles(OTHERS, n=4) if len(OTHERS) > 1 else [OTHERS[0]] * 3
        summary.append(f"\nOther work on CPU {SERVER_CPU} during the measured windows: median {q[1]:.0f}% of it "
                       f"(quartiles {q[0]:.0f}-{q[2]:.0f}%, {len(OTHERS)} runs)"
                       + (": the machine was shared, so a server's rate is what it got of the CPU, and its CPU per "
                          "message is the steadier figure." if q[1] >= 10 else "."))
    if mem_summary:
        summary += ["\nMemory:\n"] + mem_summary
    text = "\n".join(lines[:2] + summary + lines[2:]) + "\n"
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    path = os.path.join(HERE, "results", f"compare_ws-{datetime.datetime.now():%Y%m%d-%H%M%S}.md")
    with open(path, "w") as f:
        f.write(text)
    print(text)
    log(f"written: {os.path.relpath(path, ROOT)}")


if __name__ == "__main__":
    main()
