#!/usr/bin/env python3
"""The reverse proxy example (examples/proxy) against nginx's proxy_pass.

  perf/compare_proxy [--rounds 3] [--seconds 5] [--only get100,get1000,body]

Two proxies in front of the same upstream, one thread each, side by side in
interleaved rounds (ours nginx ours nginx ...), medians and (min-max) reported:
  ours   bazel-bin/examples/proxy/proxy -p P --address=127.0.0.1 -A 1 --workers=0
         --upstream=127.0.0.1:UP --upstream-keepalive=64 (ASYNC handlers, both
         bodies streamed, upstream connections kept per ring)
  nginx  worker_processes 1; upstream u { server 127.0.0.1:UP; keepalive 64; }
         location / { proxy_pass http://u; } with
           proxy_http_version 1.1; proxy_set_header Connection "";  keep-alive
             to the upstream at all (nginx's default is HTTP/1.0 and close);
           client_max_body_size 0;       bodies of any size, as ours (unlimited);
           proxy_request_buffering off;  the request body streamed to the
             upstream as it arrives, as ours does (nginx's default would read
             the whole body first, into a temporary file past 16 KiB);
           proxy_buffering left at its default (on): the answer is read into
             8 buffers of a page and, past them, a temporary file when the
             client reads slower than the upstream sends; the report counts
             nginx's "buffered to a temporary file" warnings (ours holds a
             piece at a time);
           access_log off; keepalive_requests 1000000 for clients and for the
             upstream (nginx's default 1000 would close connections ours keeps).
         nginx adds no X-Forwarded-For/Forwarded; ours adds both (a few bytes).
Upstreams (the same for both proxies in a phase):
  get*   perf/bare_responder (an empty 200 per receive: the cheapest upstream
         there is); --get-upstream=server uses src/server's GET /test/fast instead
  body   src/server -A 1 --workers=0 --max-body-bytes=4m, POST /test/echo (the
         body back with a Content-Length; bare_responder cannot read a body)
Pinning (2 CPUs): the proxy under test alone on CPU 0; wrk AND the upstream on
CPU 1. The upstream must share a CPU with something: beside the load generator
it costs both proxies the same and leaves the proxy's CPU to the proxy, so its
CPU figures are its own. The price: req/s may be capped by CPU 1 rather than by
the proxy. The report says which, per run: "proxy busy" (its CPU seconds over
the wall seconds; ~100%: the proxy is the bottleneck), "others on CPU 0" (CPU 0
busy from /proc/stat less the proxy: anything else that ran there, e.g. a
compiler on a shared machine) and "CPU 1 busy". When the proxy is not the
bottleneck, CPU per request is the figure to read.
Phases (--only; all by default), each preceded by a 1 s warm-up per proxy:
  get100   wrk -t1 -c100 -d{seconds}s keep-alive GET /test/fast
  get1000  the same with -c1000
  body     wrk -t1 -c{body-conns} -s post.lua: POST /test/echo with a 1 MiB body,
           1 MiB answered back
Before timing, each proxy must answer through curl: GET /test/fast 200 with the
upstream's body length, and POST /test/echo of 1 MiB of random bytes 200 with
exactly those bytes back. Every wrk run's non-2xx count and socket errors are
reported (any is an error); the body phase also shows the bytes wrk read per
answer (~1 MiB; wrk rounds its total and counts answers cut at the end, so
below 0.98 MiB is flagged SHORT). --ours-args adds flags to ours (e.g. '--send-zc=0'). Proxy CPU per
request is utime+stime of all its processes and threads (/proc/PID/stat; nginx:
master and worker) over the run, over wrk's requests.
Target (the issue's): ours' req/s >= nginx's at CPU per request <= nginx's.
A proxy that dies is reported with its exit status, log tail and command line.

Writes perf/results/compare_proxy-DATE.md and prints it.
"""
import argparse
import datetime
import os
import re
import resource
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PROXY_CPU, LOAD_CPU = "0", "1"
CLK = os.sysconf("SC_CLK_TCK")
MIB = 1 << 20
PROXIES = ("ours", "nginx")
PHASES = ("get100", "get1000", "body")
UNITS = {"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Proc:
    """One server (and its children), pinned, in its own session, logging to a file."""

    def __init__(self, label, cmd, port, cpu, workdir):
        self.label, self.cmd, self.port = label, cmd, port
        self.log_path = os.path.join(workdir, f"{label}-{port}.log")
        self.logf = open(self.log_path, "wb")
        self.p = subprocess.Popen(["taskset", "-c", cpu] + cmd, stdout=self.logf, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
        end = time.monotonic() + 15
        while True:
            if self.p.poll() is not None:
                raise RuntimeError(f"{label} exited with {self.p.returncode} at start-up: "
                                   f"{shlex.join(cmd)}\n{self.tail()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return
            except OSError:
                if time.monotonic() > end:
                    raise RuntimeError(f"{label} never opened port {port}\n{self.tail()}")
                time.sleep(0.05)

    def cpu_s(self):
        """utime+stime of the process and its descendants (nginx: master and worker), all threads."""
        stats = {}
        for e in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{e}/stat") as f:
                    v = f.read().rsplit(")", 1)[1].split()
                stats[int(e)] = (int(v[1]), int(v[11]) + int(v[12]))  # ppid, utime + stime
            except (OSError, IndexError):
                pass
        tree, grown = {self.p.pid}, True
        while grown:
            new = {pid for pid, (ppid, _) in stats.items() if ppid in tree} - tree
            tree, grown = tree | new, bool(new)
        return sum(stats[pid][1] for pid in tree if pid in stats) / CLK

    def stop(self):
        rc = self.p.poll()
        if rc is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                rc = self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                rc = "ignored SIGTERM for 10 s"
        try:
            os.killpg(self.p.pid, signal.SIGKILL)  # nginx's worker, if left
        except (ProcessLookupError, PermissionError):
            pass
        self.p.wait()
        self.logf.close()
        return rc

    def tail(self, n=15):
        with open(self.log_path, "rb") as f:
            return "\n".join("    " + l for l in f.read().decode(errors="replace").splitlines()[-n:])


def cpu_ticks():
    """Per CPU: (busy, total) jiffies from /proc/stat."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu") and line[3].isdigit():
                v = [int(x) for x in line.split()[1:9]]
                out[line.split()[0][3:]] = (sum(v) - v[3] - v[4], sum(v))  # less idle, iowait
    return out


def nginx_conf(d, port, up_port, keepalive):
    return f"""# generated by perf/compare_proxy.py
user root;
daemon off;
master_process on;
worker_processes 1;
worker_rlimit_nofile {min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 65536)};
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{
    worker_connections 16384;
}}
http {{
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 300s;
    client_max_body_size 0;
    client_body_temp_path {d}/body; proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
    upstream u {{
        server 127.0.0.1:{up_port};
        keepalive {keepalive};
        keepalive_requests 1000000;
        keepalive_timeout 300s;
    }}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location / {{
            proxy_pass http://u;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_request_buffering off;
        }}
    }}
}}
"""


def start_proxy(name, a, workdir, up_port):
    port, error_log = free_port(), None
    if name == "ours":
        cmd = [os.path.join(a.bin_dir, "examples/proxy/proxy"), "-p", str(port), "--address=127.0.0.1",
               "-A", "1", "--workers=0", f"--upstream=127.0.0.1:{up_port}",
               f"--upstream-keepalive={a.keepalive}"] + shlex.split(a.ours_args)
    else:
        d = os.path.join(workdir, f"nginx-{port}")
        os.makedirs(d)
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(nginx_conf(d, port, up_port, a.keepalive))
        error_log = os.path.join(d, "error.log")
        cmd = [a.nginx, "-p", d, "-c", conf, "-e", error_log]
    proc = Proc(name, cmd, port, PROXY_CPU, workdir)
    proc.error_log = error_log or proc.log_path
    return proc


def start_upstream(kind, a, workdir):
    port = free_port()
    if kind == "bare":
        cmd = [os.path.join(a.bin_dir, "perf/bare_responder"), str(port)]
    else:
        cmd = [os.path.join(a.bin_dir, "src/server"), "-p", str(port), "--address=127.0.0.1", "-A", "1",
               "--workers=0", "--max-body-bytes=4m"]
    return Proc(f"upstream-{kind}", cmd, port, LOAD_CPU, workdir)


def curl(url, out, body=None):
    cmd = ["curl", "-sS", "-m", "20", "-o", out, "-w", "%{http_code} %{size_download}", url]
    if body:
        cmd += ["--data-binary", "@" + body, "-H", "Content-Type: application/octet-stream", "-H", "Expect:"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    code, size = (r.stdout.split() + ["0", "0"])[:2]
    return int(code), int(size), r.stderr.strip()


def check(proxy, phase, workdir, upstream_port, body_file):
    """What curl got through the proxy; raises if it is wrong."""
    out = os.path.join(workdir, "curl.out")
    if phase == "body":
        code, size, err = curl(f"http://127.0.0.1:{proxy.port}/test/echo", out, body_file)
        with open(out, "rb") as f, open(body_file, "rb") as g:
            same = f.read() == g.read()
        text = f"POST /test/echo 1 MiB: {code}, {size:,} bytes back, {'identical' if same else 'DIFFERENT'}"
        ok = code == 200 and size == MIB and same
    else:
        _, want, _ = curl(f"http://127.0.0.1:{upstream_port}/test/fast", out)
        code, size, err = curl(f"http://127.0.0.1:{proxy.port}/test/fast", out)
        text = f"GET /test/fast: {code}, {size} bytes (upstream direct: {want})"
        ok = code == 200 and size == want
    if not ok:
        raise RuntimeError(f"{proxy.label} answered wrong: {text} {err}\n{proxy.tail()}")
    return text


def parse_wrk(out):
    m = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m), ([\d.]+)([KMGT]?B) read", out)
    if not m:
        raise RuntimeError("cannot parse wrk output:\n" + out)
    r = {"requests": int(m.group(1)), "read": float(m.group(4)) * UNITS[m.group(5)],
         "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))}
    r["non2xx"] = int((re.search(r"Non-2xx or 3xx responses: (\d+)", out) or [0, 0])[1])
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    r["sockerr"] = sum(int(x) for x in m.groups()) if m else 0
    r["sockerr_text"] = m.group(0) if m else ""
    return r


def run_wrk(proxy, conns, seconds, path, script=None):
    cmd = ["taskset", "-c", LOAD_CPU, "wrk", "-t1", f"-c{conns}", f"-d{seconds}s", "--timeout", "10s"]
    cmd += (["-s", script] if script else []) + [f"http://127.0.0.1:{proxy.port}{path}"]
    cpu0, t0, s0 = proxy.cpu_s(), time.monotonic(), cpu_ticks()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120).stdout
    wall, cpu, s1 = time.monotonic() - t0, proxy.cpu_s() - cpu0, cpu_ticks()
    pct = {c: (s1[c][0] - s0[c][0]) * 100 / max(s1[c][1] - s0[c][1], 1) for c in (PROXY_CPU, LOAD_CPU)}
    r = parse_wrk(out)
    r.update(cpu_us=cpu * 1e6 / max(r["requests"], 1), busy=cpu / wall * 100, alive=proxy.p.poll() is None,
             others=max(pct[PROXY_CPU] - cpu / wall * 100, 0), load_busy=pct[LOAD_CPU])
    return r


def stat(rows, key, f):
    v = [r[key] for r in rows]
    return f"{f(statistics.median(v))} ({f(min(v))}-{f(max(v))})" if len(v) > 1 else f(v[0])


def run_phase(phase, a, workdir, post_lua, body_file, lines, summary):
    kind = "server" if phase == "body" else a.get_upstream
    conns = {"get100": 100, "get1000": 1000, "body": a.body_conns}[phase]
    path, script = ("/test/echo", post_lua) if phase == "body" else ("/test/fast", None)
    up = start_upstream(kind, a, workdir)
    proxies, results, dead, checks = {}, {p: [] for p in PROXIES}, {}, {}
    try:
        for name in PROXIES:
            proxies[name] = start_proxy(name, a, workdir, up.port)
            checks[name] = check(proxies[name], phase, workdir, up.port, body_file)
            log(f"{phase}: {name} on :{proxies[name].port}: {checks[name]}")
            run_wrk(proxies[name], conns, 1, path, script)  # warm-up
        for r in range(a.rounds):
            for name in PROXIES:
                if name in dead:
                    continue
                res = run_wrk(proxies[name], conns, a.seconds, path, script)
                results[name].append(res)
                if not res["alive"]:
                    dead[name] = (proxies[name].p.returncode, proxies[name].tail(), shlex.join(proxies[name].cmd))
                    log(f"{phase}: {name} DIED in round {r + 1} (status {proxies[name].p.returncode})")
            log(f"{phase} round {r + 1}: " + ", ".join(
                f"{n} {v[-1]['rps']:,.0f}/s {v[-1]['cpu_us']:.1f}us busy {v[-1]['busy']:.0f}% "
                f"non2xx {v[-1]['non2xx']} err {v[-1]['sockerr']}" for n, v in results.items() if v))
    finally:
        logs = {}
        for name, p in proxies.items():
            rc = p.stop()
            try:
                with open(p.error_log, errors="replace") as f:
                    logs[name] = f.read().splitlines()
            except OSError:
                logs[name] = []
            if name not in dead and rc not in (0, None):
                dead[name] = (rc, p.tail(), shlex.join(p.cmd))
        up.stop()
    upstream_text = "src/server -A1 --workers=0 --max-body-bytes=4m" if kind == "server" else "bare_responder"
    load = f"wrk -t1 -c{conns} -d{a.seconds}s --timeout 10s " + (
        "-s post.lua: POST /test/echo, 1 MiB each way (req/s = MiB/s each way)" if phase == "body"
        else "keep-alive GET /test/fast")
    lines.append(f"\n### {phase}: {load}; upstream {upstream_text}\n")
    for name in PROXIES:
        lines.append(f"- check, {name}: {checks.get(name, 'not reached')}")
    cols = (f"| proxy | req/s | proxy CPU µs/req | proxy busy % | others on CPU {PROXY_CPU} % | CPU {LOAD_CPU} busy %"
            " |"
            + (" read/answer |" if phase == "body" else "") + " non-2xx | socket errors |")
    lines += ["\n" + cols, "|---|" + "---:|" * (cols.count("|") - 2)]
    pc = lambda x: f"{x:.0f}"
    for name, rows in results.items():
        if not rows:
            continue
        extra = ""
        if phase == "body":
            per = [r["read"] / max(r["requests"], 1) for r in rows]
            extra = f" {min(per) / MIB:.3f}-{max(per) / MIB:.3f} MiB{'' if min(per) >= MIB * 0.98 else ' SHORT'} |"
        lines.append(f"| {name} | {stat(rows, 'rps', lambda x: f'{x:,.0f}')} | "
                     f"{stat(rows, 'cpu_us', lambda x: f'{x:.1f}')} | {stat(rows, 'busy', pc)} | "
                     f"{stat(rows, 'others', pc)} | {stat(rows, 'load_busy', pc)} |"
                     f"{extra} {sum(r['non2xx'] for r in rows)} | {sum(r['sockerr'] for r in rows)} |")
    for name in (n for n in PROXIES if any(r["sockerr"] for r in results[n])):
        lines.append(f"- {name} wrk socket errors: " + "; ".join(r["sockerr_text"] for r in results[name]))
    tmp = sum("buffered to a temporary file" in l for l in logs.get("nginx", []))
    other = [l for l in logs.get("nginx", []) if re.search(r"\[(error|crit|alert|emerg)\]", l)]
    lines.append(f"- nginx error.log: {tmp} answers buffered to a temporary file, {len(other)} [error] or worse"
                 + (f", e.g. `{other[0]}`" if other else ""))
    ours_log = [l for l in logs.get("ours", []) if " ready: listening" not in l]
    lines.append(f"- ours' output besides the ready line: {len(ours_log)} lines"
                 + (f", e.g. `{ours_log[0]}`" if ours_log else ""))
    for name, (rc, tail, cmd) in dead.items():
        lines.append(f"\n**{name} died (status {rc}).** Reproduce: upstream `{shlex.join(up.cmd)}`, "
                     f"proxy `{cmd}`, load `{load}`. Its last output:\n```\n{tail}\n```")
    if results["ours"] and results["nginx"]:
        m = {n: (statistics.median(r["rps"] for r in results[n]), statistics.median(r["cpu_us"] for r in results[n]))
             for n in PROXIES}
        clean = all(r["non2xx"] == 0 and r["sockerr"] == 0 for n in PROXIES for r in results[n]) and not dead
        holds = m["ours"][0] >= m["nginx"][0] and m["ours"][1] <= m["nginx"][1] and clean
        rr, cr = m["ours"][0] / m["nginx"][0], m["ours"][1] / m["nginx"][1]
        lines.append(f"\nours/nginx: req/s {rr:.2f}x, CPU/req {cr:.2f}x: target "
                     f"{'**holds**' if holds else '**missed**'}" + ("" if clean else " (errors or a crash)"))
        summary.append(f"| {phase} | {m['ours'][0]:,.0f} | {m['nginx'][0]:,.0f} | {rr:.2f} | {m['ours'][1]:.1f} | "
                       f"{m['nginx'][1]:.1f} | {cr:.2f} | {'holds' if holds else 'MISSED'} |")
    else:
        summary.append(f"| {phase} | - | - | - | - | - | - | no result (crash) |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=int, default=5, help="per wrk run")
    p.add_argument("--only", default=",".join(PHASES))
    p.add_argument("--body-conns", type=int, default=10)
    p.add_argument("--keepalive", type=int, default=64, help="idle upstream connections kept (both proxies)")
    p.add_argument("--get-upstream", choices=("bare", "server"), default="bare")
    p.add_argument("--bin-dir", default=os.path.join(ROOT, "bazel-bin"), help="bazel-bin of a -c opt build")
    p.add_argument("--nginx", default="nginx")
    p.add_argument("--ours-args", default="", help="extra flags for ours, e.g. '--send-zc=0'")
    a = p.parse_args()
    only = a.only.split(",")
    if any(x not in PHASES for x in only):
        sys.exit(f"compare_proxy: --only takes {','.join(PHASES)}")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    for b in ("examples/proxy/proxy", "perf/bare_responder", "src/server"):
        if not os.path.exists(os.path.join(a.bin_dir, b)):
            sys.exit(f"compare_proxy: build first: ./bazelw build -c opt //examples/proxy //perf:bare_responder "
                     f"//src:server (no {os.path.join(a.bin_dir, b)})")
    a.nginx = shutil.which(a.nginx) or shutil.which("nginx", path="/usr/sbin") or a.nginx
    nginx_version = subprocess.run([a.nginx, "-v"], capture_output=True, text=True).stderr.split("/")[-1].strip()
    workdir = tempfile.mkdtemp(prefix="compare_proxy-")
    post_lua, body_file = os.path.join(workdir, "post.lua"), os.path.join(workdir, "body.bin")
    with open(post_lua, "w") as f:
        f.write(f'wrk.method = "POST"\nwrk.body = string.rep("x", {MIB})\n'
                'wrk.headers["Content-Type"] = "application/octet-stream"\n')
    with open(body_file, "wb") as f:
        f.write(os.urandom(MIB))
    log(f"configurations, logs: {workdir}")
    lines = [f"# compare_proxy {datetime.datetime.now():%Y-%m-%d %H:%M}",
             f"\n`perf/compare_proxy {' '.join(sys.argv[1:])}` on {os.cpu_count()} CPUs: the proxy under test "
             f"alone on CPU {PROXY_CPU}, wrk and the upstream on CPU {LOAD_CPU}; medians (min-max) of {a.rounds} "
             f"interleaved rounds of {a.seconds} s. ours: examples/proxy -A 1 --workers=0 "
             f"--upstream-keepalive={a.keepalive}{' ' + a.ours_args if a.ours_args else ''}; "
             f"nginx {nginx_version}, worker_processes 1, keepalive "
             f"{a.keepalive}, proxy_http_version 1.1, proxy_request_buffering off, proxy_buffering on (default). "
             f"Busy: the proxy's CPU over the run's wall time (100% = its CPU is the bottleneck)."]
    summary = ["\n## Summary\n", "| phase | ours req/s | nginx req/s | ratio | ours µs/req | nginx µs/req | ratio "
               "| target: req/s >= nginx at CPU/req <= nginx |", "|---|---:|---:|---:|---:|---:|---:|---|"]
    for phase in PHASES:
        if phase in only:
            try:
                run_phase(phase, a, workdir, post_lua, body_file, lines, summary)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                log(f"{phase}: FAILED: {e}")
                lines.append(f"\n### {phase}: FAILED\n\n```\n{e}\n```")
                summary.append(f"| {phase} | - | - | - | - | - | - | FAILED (see below) |")
    text = "\n".join(lines[:2] + summary + lines[2:]) + "\n"
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    path = os.path.join(HERE, "results", f"compare_proxy-{datetime.datetime.now():%Y%m%d-%H%M%S}.md")
    with open(path, "w") as f:
        f.write(text)
    print(text)
    log(f"written: {os.path.relpath(path, ROOT)}")


if __name__ == "__main__":
    main()
