#!/usr/bin/env python3
"""WebSocket fan-out (pub/sub): ours' GET /test/ws/topic, one publisher, N subscribers of one topic.

  perf/compare_ws --fanout [--quick] [--rounds 3] [--seconds 5] [--warmup 1.5] [--subs 10000,100]
                           [--modes off,shared,dedicated] [--window 8] [--size 1024]

(perf/compare_ws builds ours and perf/ws_load, then runs this with --ours and --ws-load.)

Server: src/server -p P --address=127.0.0.1 -A 1 -w 1 --ws-deflate=MODE, pinned to CPU 1 (one ring
thread: the publisher and every subscriber on it); ws_load -mode fanout, pinned to CPU 0. Per subscriber
count, one server per deflate mode, started once; rounds interleaved (off shared dedicated, off ...),
medians (min-max). Before each run every server must be quiet (its CPU time still).

Modes (what the server runs with / what the subscribers offer):
  off        --ws-deflate=off; no extension offered
  shared     --ws-deflate=shared; permessage-deflate; client_no_context_takeover; server_no_context_takeover.
             A publish is compressed once (the ring thread's compressor) and the same bytes go to everyone.
  dedicated  --ws-deflate=dedicated; permessage-deflate; client_no_context_takeover (no
             server_no_context_takeover, so that the server keeps a context per socket: offered with it,
             dedicated takes the shared path). Each subscriber's message is compressed by its own
             compressor (4 KiB window) on the ring; ws_load inflates with each subscriber's history.

Load (ws_load -mode fanout): N subscribers upgrade on /test/ws/topic?name=bench, then the publisher on
?name=bench&subscribe=0; the publisher sends --size byte text messages (a sequence number and the send time,
then JSON-ish records that compress ~3:1), keeping at most --window of them not yet delivered to every
subscriber. Every subscriber checks every message: in order, none missing, whole and byte for byte after
inflating. Delay: receive time - send time, over every delivery of the window. After --warmup s, a window of
--seconds s; then the publisher stops, waits until everything is delivered, and everyone closes with the
closing handshake (1000). Server CPU per delivery: its utime+stime over the window / deliveries in it;
client likewise (ws_load's own, all threads). Wire bytes: the frames' bytes (header + payload) per delivery.
The server's /metrics before and after each run gives the messages it queued, its backpressure drops and its
output-chunk pool's heap fallbacks.

Errors (any is reported): connections refused or not upgraded, deflate not agreed where offered, messages
lost, out of order or corrupt, connections closed or stalled, closes not clean.

--quick: 1 round of 2 s after 0.5 s of warm-up.
Writes perf/results/compare_ws_fanout-DATE.md and prints it.
"""
import argparse
import datetime
import json
import os
import platform
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import types
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_ws as cw  # noqa: E402  (Server, Sources, ws_load_cmd, med, log)

MODES = {  # mode: (ws_load flags)
    "off": [],
    "shared": ["-deflate"],
    "dedicated": ["-deflate", "-deflate-context"],
}
METRICS = ("websocket_messages_sent_total", "websocket_backpressure_drops_total", "arena_heap_fallbacks_total",
           "websocket_sent_bytes_total")
log = cw.log


def scrape(port):
    """The server's counters we compare before and after a run (None when /metrics does not answer)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None
    out = {}
    for m in METRICS:
        v = re.search(rf"^uring_http_{m} (\d+)$", text, re.M)
        out[m] = int(v.group(1)) if v else 0
    return out


def error_text(res):
    parts = []
    for k, n in res["connect_failures"].items():
        parts.append(f"{n} not connected ({k}: {res['first_connect_failure']})")
    for k, n in sorted(res["endings"].items()):
        if k != "clean":
            e = res["first_error"].get(k, "")
            parts.append(f"{n} {k}" + (f" ({e})" if e else ""))
    if res["publisher_ending"] != "clean":
        parts.append(f"publisher: {res['publisher_ending']} ({res['publisher_error']})")
    if res["deflate_offered"] and res["deflate_agreed"] != res["connected"]:
        parts.append(f"deflate agreed by {res['deflate_agreed']} of {res['connected']}"
                     + (f" ({res['first_extension_error']})" if res["first_extension_error"] else ""))
    return "; ".join(parts)


def run_fanout(a, server, mode, subs, sources, seconds, warmup, window):
    args = ["-mode", "fanout", "-addr", f"127.0.0.1:{server.port}", "-conns", str(subs), "-size", str(a.size),
            "-window", str(window), "-loops", str(a.loops), "-warmup", f"{warmup}s", "-duration", f"{seconds}s",
            "-server-pid", str(server.pid), "-close-timeout", "20s" if subs > 1000 else "5s"]
    args += MODES[mode] + sources.take(subs)
    cmd = cw.ws_load_cmd(a, args)
    m0 = scrape(server.port)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=warmup + seconds + 240)
    try:
        res = json.loads(r.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise RuntimeError(f"ws_load gave no result (status {r.returncode}): {shlex.join(cmd)}\n"
                           f"{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    m1 = scrape(server.port)
    res["cmd"] = f"taskset -c {cw.LOAD_CPU} ws_load " + shlex.join(args)
    w = max(res["wall_s"], 1e-9)
    res["busy"] = res.get("server_cpu_s", 0) / w * 100
    res["others"] = max(res["cpu_busy_pct"].get(cw.SERVER_CPU, 0) - res["busy"], 0)
    res["load_busy"] = res["load_cpu_s"] / w * 100
    res["server_wait"] = max(res.get("server_runq_wait_s", 0), 0) / w * 100
    res["load_wait"] = max(res.get("load_runq_wait_s", 0), 0) / w * 100
    res["alive"] = server.alive()
    if m0 and m1:
        res["metrics"] = {k: m1[k] - m0[k] for k in METRICS}
        sent = res["metrics"]["websocket_messages_sent_total"]
        res["heap_per_msg"] = res["metrics"]["arena_heap_fallbacks_total"] / sent if sent else None
    if not res["alive"]:
        res["errors"] += 1
    for k in ("p50_us", "p99_us"):
        res[k.replace("_us", "_ms")] = res[k] / 1000
    return res


def limit(rows):
    """What held the rate back, by the medians: who was running or waiting for a CPU nearly all the window."""
    busy = statistics.median(r["busy"] for r in rows)
    load = statistics.median(r["load_busy"] for r in rows)
    srv = statistics.median(r["busy"] + r["server_wait"] for r in rows)
    cli = statistics.median(r["load_busy"] + r["load_wait"] for r in rows)
    who = [w for w, run in (("server", srv), ("**ws_load**", cli)) if run >= 90]
    if not who:
        return "window"
    return " and ".join(who) + ("" if max(busy, load) >= 90 else " (CPU shared)")


def fmt_ms(ms):
    return f"{ms:.1f}" if ms < 100 else f"{ms:,.0f}"


def table(results, subs_list, modes):
    cols = ("| subscribers | deflate | deliveries/s | published msgs/s | p50 delay ms | p99 delay ms | "
            "server CPU µs/delivery | ws_load CPU µs/delivery | wire B/delivery | server busy % | "
            f"others on CPU {cw.SERVER_CPU} % | ws_load busy % | waited for a CPU %: server, ws_load | limit | "
            "errors |")
    out = [cols, "|---|---|" + "---:|" * (cols.count("|") - 3)]
    pc = lambda x: f"{x:.0f}"
    for subs in subs_list:
        for mode in modes:
            rows = results.get((subs, mode))
            if not rows:
                out.append(f"| {subs:,} | {mode} | not run |" + " |" * 12)
                continue
            out.append(
                f"| {subs:,} | {mode} | {cw.med(rows, 'deliveries_per_s', lambda x: f'{x:,.0f}')} | "
                f"{cw.med(rows, 'published_per_s', lambda x: f'{x:,.1f}')} | {cw.med(rows, 'p50_ms', fmt_ms)} | "
                f"{cw.med(rows, 'p99_ms', fmt_ms)} | "
                f"{cw.med(rows, 'server_cpu_us_per_delivery', lambda x: f'{x:.2f}')} | "
                f"{cw.med(rows, 'load_cpu_us_per_delivery', lambda x: f'{x:.2f}')} | "
                f"{cw.med(rows, 'wire_bytes_per_delivery', lambda x: f'{x:,.0f}')} | {cw.med(rows, 'busy', pc)} | "
                f"{cw.med(rows, 'others', pc)} | {cw.med(rows, 'load_busy', pc)} | "
                f"{statistics.median(r['server_wait'] for r in rows):.0f}, "
                f"{statistics.median(r['load_wait'] for r in rows):.0f} | {limit(rows)} | "
                f"{sum(r['errors'] for r in rows)} |")
    return out


def machine_notes():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        go = subprocess.run(["go", "version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        go = "go ?"
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    return (f"{os.cpu_count()} CPUs ({cpu}), Linux {platform.release()}, {go}; "
            f"RLIMIT_NOFILE {resource.getrlimit(resource.RLIMIT_NOFILE)[1]:,}; load average at the start {load}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=5, help="measured window per run")
    p.add_argument("--warmup", type=float, default=1.5, help="load before the window, per run")
    p.add_argument("--subs", default="10000,100", help="subscriber counts, one table row group each")
    p.add_argument("--modes", default=",".join(MODES), help="of " + ",".join(MODES))
    p.add_argument("--window", type=int, default=8, help="messages published and not yet delivered to all")
    p.add_argument("--size", type=int, default=1024, help="message bytes")
    p.add_argument("--loops", type=int, default=1, help="ws_load's subscriber epoll loops (threads)")
    p.add_argument("--quick", action="store_true", help="1 round of 2 s after 0.5 s of warm-up")
    p.add_argument("--ours-args", default="", help="extra flags for ours")
    p.add_argument("--ours", required=True, help="src/server binary (-c opt)")
    p.add_argument("--ours-from", choices=("built", "given"), default="given")
    p.add_argument("--ours-note", default="", help="what the given ours binary is, for the report")
    p.add_argument("--ws-load", required=True)
    a = p.parse_args()
    if a.quick:
        a.rounds, a.seconds, a.warmup = 1, 2, 0.5
    modes = [m for m in a.modes.split(",") if m]
    if any(m not in MODES for m in modes):
        sys.exit(f"compare_ws --fanout: --modes takes {','.join(MODES)}")
    subs_list = [int(x) for x in a.subs.split(",") if x]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if max(subs_list) + 200 > hard:
        sys.exit(f"compare_ws --fanout: {max(subs_list):,} subscribers need that many descriptors; "
                 f"RLIMIT_NOFILE's hard limit is {hard:,}")
    workdir = tempfile.mkdtemp(prefix="compare_ws_fanout-")
    log(f"modes {', '.join(modes)}; subscribers {', '.join(map(str, subs_list))}; logs in {workdir}")
    notes = machine_notes()
    t_start = time.monotonic()
    results, lines, failed, peak = {}, [], [], {}
    sources = cw.Sources()
    for subs in subs_list:
        servers = {}
        try:
            for mode in modes:
                ns = types.SimpleNamespace(ours=a.ours, ours_args=f"--ws-deflate={mode} {a.ours_args}",
                                           node_dir=None)
                servers[mode] = cw.Server("ours", ns, workdir, subs)
                # A check first: a few subscribers, every message in order and whole.
                chk = run_fanout(a, servers[mode], mode, 10, sources, 0.5, 0.2, 4)
                if chk["errors"] or not chk["delivered_total"]:
                    raise RuntimeError(f"--ws-deflate={mode} failed the fan-out check: {error_text(chk)}\n"
                                       f"{servers[mode].tail()}")
                log(f"{subs} {mode}: server on :{servers[mode].port}; check: {chk['delivered_total']} deliveries, "
                    f"extension {chk['extension']!r}")
            for r in range(a.rounds):
                for mode in modes:
                    for s in servers.values():
                        s.settle()
                    res = run_fanout(a, servers[mode], mode, subs, sources, a.seconds, a.warmup, a.window)
                    results.setdefault((subs, mode), []).append(res)
                    log(f"{subs} {mode} round {r + 1}: {res['deliveries_per_s']:,.0f} deliveries/s, "
                        f"{res['published_per_s']:,.1f} msgs/s, p99 {res['p99_us'] / 1000:,.1f} ms, "
                        f"server {res.get('server_cpu_us_per_delivery') or 0:.2f} µs/delivery busy "
                        f"{res['busy']:.0f}% waited {res['server_wait']:.0f}%, ws_load busy {res['load_busy']:.0f}% "
                        f"waited {res['load_wait']:.0f}%, "
                        f"{res.get('wire_bytes_per_delivery') or 0:,.0f} B, errors {res['errors']}"
                        + (f": {error_text(res)}" if res["errors"] else ""))
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            log(f"{subs}: FAILED: {e}")
            failed.append(f"{subs:,} subscribers: FAILED\n\n```\n{e}\n```")
        finally:
            for mode, s in servers.items():
                peak[(subs, mode)] = cw.proc_status_kb(s.pid, "VmHWM")
                rc = s.stop()
                if rc not in (0, None, -15):
                    failed.append(f"--ws-deflate={mode}, {subs:,} subscribers: exit status {rc}; "
                                  f"`{shlex.join(s.cmd)}`\n```\n{s.tail()}\n```")
    minutes = (time.monotonic() - t_start) / 60
    try:
        commit = subprocess.run(["git", "-C", cw.ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", cw.ROOT, "status", "--porcelain", "src"], capture_output=True,
                               text=True).stdout.strip()
    except OSError:
        commit, dirty = "?", ""
    if a.ours_from == "built":
        origin = f"ours built from this workspace at {commit}" + (" (with uncommitted changes in src/)" if dirty else "")
    else:
        origin = f"ours a binary given with --ours-binary ({a.ours_note or f'the workspace at {commit}'})"
    shown, argv, skip = ["perf/compare_ws", "--fanout"], sys.argv[1:], {"--ours", "--ours-from", "--ws-load"}
    while argv:  # the command line as given to perf/compare_ws (paths of this machine left out)
        x = argv.pop(0)
        if x in skip:
            argv = argv[1:]
        elif x.split("=")[0] not in skip:
            shown.append(x)
    if a.ours_from == "given":
        shown[2:2] = ["--ours-binary", "SERVER"]
    shown = shlex.join(shown)
    if os.environ.get("BAZEL_STARTUP_OPTS") and a.ours_from == "built":
        shown = f"BAZEL_STARTUP_OPTS={shlex.quote(os.environ['BAZEL_STARTUP_OPTS'])} {shown}"
    others = [r["others"] for v in results.values() for r in v]
    lines += [
        f"# compare_ws --fanout {datetime.datetime.now():%Y-%m-%d %H:%M}",
        "",
        f"`{shown}` ({minutes:.1f} minutes); {origin}; on {notes}. The machine is shared and noisy (other "
        "builds, tests and benchmarks run beside it): read the CPU per delivery, steadier than the rates, and the "
        "min-max.",
        "",
        f"Server `src/server -A 1 -w 1 --ws-deflate=MODE{' ' + a.ours_args if a.ours_args else ''}` on CPU "
        f"{cw.SERVER_CPU} (one ring thread), ws_load -mode fanout on CPU {cw.LOAD_CPU} ({a.loops} subscriber "
        f"loop{'s' if a.loops > 1 else ''}, the publisher on a thread of its own). One publisher, N subscribers "
        f"of one topic; {a.size:,} B text messages, at most {a.window} published and not yet delivered to every "
        f"subscriber. Medians (min-max) of {a.rounds} interleaved round{'s' if a.rounds > 1 else ''} of "
        f"{a.seconds:g} s after {a.warmup:g} s of warm-up. dedicated: the subscribers offer no "
        "server_no_context_takeover, so the server compresses for each socket with its own context; shared: "
        "one compression per publish for all. Delay: publisher's send to a subscriber's read, every delivery. "
        "Wire bytes: WebSocket frame bytes (header + payload) per delivery, TCP/IP not counted.",
        "",
    ]
    lines += table(results, subs_list, modes)
    lines += ["", "Busy: CPU time over the window's wall time. Waited for a CPU: time the process's threads were "
              "runnable but not running (/proc/PID/task/*/schedstat), over the window's wall time. "
              "Limit: server when its thread was running or waiting for a CPU >= 90% of the window (it would have "
              "used all of a CPU of its own), ws_load likewise (its threads together: on its one CPU the publisher "
              "and the subscriber loop also wait for each other), CPU shared when that one got < 90% of a CPU, "
              "window when neither (the publisher waited for the slowest subscriber). The client's cost per delivery is mostly the "
              "kernel's: a read per socket and the ACK it sends; with 10,000 sockets a read carries about one "
              "message."]
    lines.append("\nWhat limits the numbers: the server's one ring thread. Every delivery is a send to a socket of "
                 "its own, and the kernel's TCP path (on loopback the receiving side's too) is most of its cost; "
                 "dedicated adds the compression of every subscriber's copy. On a shared machine each process runs "
                 "on what it gets (busy + waited: what it wanted) and every wake-up may wait for a CPU.")
    for (subs, mode), rows in results.items():
        srv = statistics.median(r.get("server_cpu_us_per_delivery") or 0 for r in rows)
        cli = statistics.median(r.get("load_cpu_us_per_delivery") or 0 for r in rows)
        if srv and cli >= 0.8 * srv:
            lines.append(f"- {subs:,} {mode}: ws_load spent {cli:.2f} µs per delivery, the server {srv:.2f}: with a "
                         "CPU each and nothing else running, ws_load would limit this row as much as the server.")
    if others:
        lines.append(f"\nOther work on CPU {cw.SERVER_CPU} during the windows: median {statistics.median(others):.0f}% "
                     f"(min {min(others):.0f}%, max {max(others):.0f}%, {len(others)} runs).")
    lines.append("\nServer counters (/metrics, summed over each mode's rounds, window and drain): messages queued "
                 "to subscribers, backpressure drops, output chunks taken from the heap (the ring's chunk pool "
                 "was empty) per message queued; and the server's peak resident memory (VmHWM).\n")
    lines += ["| subscribers | deflate | messages queued | backpressure drops | heap chunks / message | peak RSS MiB |",
              "|---|---|---:|---:|---:|---:|"]
    for (subs, mode), rows in results.items():
        ms = [r["metrics"] for r in rows if r.get("metrics")]
        if ms:
            q = sum(m["websocket_messages_sent_total"] for m in ms)
            h = sum(m["arena_heap_fallbacks_total"] for m in ms)
            lines.append(f"| {subs:,} | {mode} | {q:,} | {sum(m['websocket_backpressure_drops_total'] for m in ms):,} | "
                         f"{h / q if q else 0:.2f} | {(peak.get((subs, mode)) or 0) / 1024:,.0f} |")
    for (subs, mode), rows in results.items():
        for i, r in enumerate(rows):
            if r["errors"]:
                lines.append(f"- **{subs:,} {mode}, round {i + 1}: {error_text(r)}**")
    some = next((v[0] for v in results.values() if v), None)
    if some:
        lines.append(f"\nA run: `{some['cmd']}` (-addr, -server-pid, -first-source and the mode's flags vary).")
        exts = {m: v[0]["extension"] for (s, m), v in results.items() if v}
        lines.append("Extension agreed: " + "; ".join(f"{m}: `{e or 'none'}`" for m, e in exts.items()) + ".")
    lines += [f"\n{x}" for x in failed]
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    path = os.path.join(HERE, "results", f"compare_ws_fanout-{datetime.datetime.now():%Y%m%d-%H%M%S}.md")
    with open(path, "w") as f:
        f.write(text)
    with open(path[:-3] + ".json", "w") as f:
        json.dump([dict(r, subscribers=s, deflate=m) for (s, m), v in results.items() for r in v], f, indent=1)
    print(text)
    log(f"written: {os.path.relpath(path, cw.ROOT)}")
    if failed or any(r["errors"] for v in results.values() for r in v):
        sys.exit(1)


if __name__ == "__main__":
    main()
