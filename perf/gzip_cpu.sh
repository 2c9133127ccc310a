#!/usr/bin/env bash
# What gzip costs the server per response: CPU time (user+system, from
# /proc/PID/stat) per request and bytes sent, for GET /test/text?N with and
# without "Accept-Encoding: gzip", under ab -k (keep-alive, 4 connections).
# The server runs with --gzip=on in both cases: without the header it does
# the negotiation and adds Vary, and that is all.
#
# Usage: perf/gzip_cpu.sh [server binary] [extra server flags...]
#   (build it first: ./bazelw build -c opt //src:server)
set -euo pipefail
server="${1:-bazel-bin/src/server}"
shift || true
port=$((20000 + RANDOM % 20000))
"$server" --port="$port" --accept-threads=1 --workers=1 --gzip=on "$@" >/dev/null 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  curl -fs "http://127.0.0.1:$port/test/fast" >/dev/null 2>&1 && break
  sleep 0.05
done
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }

printf '%-10s %-9s %9s %12s %14s\n' body gzip requests bytes/resp cpu_us/request
for spec in 2048:40000 65536:10000 1048576:600; do
  n=${spec%%:*}
  requests=${spec##*:}
  for accept in no yes; do
    header=()
    [[ $accept == yes ]] && header=(-H "Accept-Encoding: gzip")
    url="http://127.0.0.1:$port/test/text?$n"
    ab -q -k -c 4 -n 200 "${header[@]}" "$url" >/dev/null  # warm-up
    before=$(cpu)
    out=$(ab -q -k -c 4 -n "$requests" "${header[@]}" "$url")
    after=$(cpu)
    failed=$(awk '/^Failed requests/ {print $3}' <<<"$out")
    length=$(awk '/^Document Length/ {print $3}' <<<"$out")
    [[ $failed == 0 ]] || { echo "ab: $failed failed requests" >&2; exit 1; }
    us=$(awk -v d=$((after - before)) -v t="$ticks" -v r="$requests" \
      'BEGIN {printf "%.1f", d / t * 1e6 / r}')
    printf '%-10s %-9s %9s %12s %14s\n' "$n" "$accept" "$requests" "$length" "$us"
  done
done
