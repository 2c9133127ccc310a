#!/usr/bin/env bash
# Smoke test of the bare responder, so that perf/compare's reference cannot rot:
# in both modes it must answer a GET with an empty 200, close when asked
# (--close), and exit 0 on SIGTERM; with --delay-ms=200 the answer must not
# come before ~150 ms; with --pool-threads=4 a few requests at once (curl) are
# answered by the pool, no sooner than the delay; with --pipelined several
# requests in one packet get one answer each; a bad --delay-ms or
# --pool-threads, or flags that do not go together, are a usage error (status 2).
# Usage (from an sh_test): bare_responder_smoke.sh path/to/bare_responder
set -uo pipefail
bin="$1"
work="$(mktemp -d)"
pid=""
trap '[[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null; rm -rf "$work"' EXIT

fail() { echo "bare_responder_smoke: $*" >&2; [[ -f $work/out ]] && cat "$work/out" >&2; exit 1; }

# Starts the responder on a free port with the given flags: sets pid and port.
start() {
  port=""
  # Emptied here, not only by the redirection below: that one runs in the
  # child, after the loop may have read the previous responder's ready line
  # and sent to its port, whose listener can outlive the process for a moment
  # (the ring is torn down after exit): an empty reply or a reset.
  : >"$work/out"
  "$bin" 0 "$@" >"$work/out" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    port="$(sed -n 's/^ready: .*listening on port \([0-9]*\).*/\1/p' "$work/out")"
    [[ -n $port ]] && break
    kill -0 "$pid" 2>/dev/null || fail "exited at start-up ($*)"
    sleep 0.05
  done
  [[ -n $port ]] || fail "no ready line ($*)"
}

stop() {
  kill -TERM "$pid"
  wait "$pid"
  local status=$?
  pid=""
  ((status == 0)) || fail "exit status $status on SIGTERM ($*)"
}

check_mode() {
  local mode=("$@") port="" response
  start "${mode[@]}"

  # Two requests on one connection (keep-alive) or one and EOF (--close).
  exec 3<>"/dev/tcp/127.0.0.1/$port" || fail "cannot connect to $port"
  printf 'GET /test/fast HTTP/1.1\r\nHost: x\r\n\r\n' >&3
  IFS= read -r -t 5 response <&3 || fail "no response (${mode[*]})"
  [[ $response == $'HTTP/1.1 200 OK\r' ]] || fail "unexpected status line '$response'"
  if ((${#mode[@]})); then
    # --close: the rest of the response, then EOF within 5 s.
    timeout 5 cat <&3 >"$work/rest" || fail "--close did not close the connection"
    grep -q "Connection: close" "$work/rest" || fail "--close answered without Connection: close"
  else
    IFS= read -r -t 5 _ <&3; IFS= read -r -t 5 _ <&3  # Content-Length, blank line
    printf 'GET /test/fast HTTP/1.1\r\nHost: x\r\n\r\n' >&3
    IFS= read -r -t 5 response <&3 || fail "no second response on a kept-alive connection"
    [[ $response == $'HTTP/1.1 200 OK\r' ]] || fail "unexpected second status line '$response'"
  fi
  exec 3<&-
  stop "${mode[@]}"
  echo "bare_responder_smoke: ok ${mode[*]:-keep-alive}"
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# --delay-ms=200: the answer comes, and not before ~150 ms (no tight upper
# bound: a loaded CI machine may be slow, only "never" is a failure).
check_delay() {
  local port="" response t0 elapsed
  start --close --delay-ms=200
  exec 3<>"/dev/tcp/127.0.0.1/$port" || fail "cannot connect to $port"
  t0=$(now_ms)
  printf 'GET /test/slow HTTP/1.1\r\nHost: x\r\n\r\n' >&3
  IFS= read -r -t 30 response <&3 || fail "no delayed response within 30 s"
  elapsed=$(($(now_ms) - t0))
  [[ $response == $'HTTP/1.1 200 OK\r' ]] || fail "unexpected delayed status line '$response'"
  ((elapsed >= 150)) || fail "--delay-ms=200 answered after ${elapsed} ms"
  timeout 30 cat <&3 >"$work/rest" || fail "--close --delay-ms did not close the connection"
  grep -q "Connection: close" "$work/rest" || fail "--close --delay-ms answered without Connection: close"
  exec 3<&-
  stop --close --delay-ms=200
  echo "bare_responder_smoke: ok --close --delay-ms=200 (answered after ${elapsed} ms)"
}

# --close --delay-ms=5 --pool-threads=4: eight requests at once through curl
# (twice the pool), each answered with a 200 and Connection: close, none
# sooner than the delay; then SIGTERM joins the threads and exits 0. curl
# closes as soon as it has read the empty 200, often before our shutdown has
# run: the slot must not be reused for another connection until it has.
check_pool() {
  local port="" i curls=()
  start --close --delay-ms=5 --pool-threads=4
  grep -q "worker pool: 4 threads, 5 ms each" "$work/out" || fail "no pool in the ready line: $(head -1 "$work/out")"
  [[ $(cat /proc/"$pid"/task/*/comm | grep -c '^bare-worker$') == 4 ]] || fail "not 4 bare-worker threads"
  for i in $(seq 8); do
    curl -sS -i --max-time 30 -w 'time_total %{time_total}\n' "http://127.0.0.1:$port/test/slow" \
      >"$work/curl$i" 2>&1 &
    curls+=($!)
  done
  wait "${curls[@]}"
  for i in $(seq 8); do
    head -1 "$work/curl$i" | grep -q $'^HTTP/1.1 200 OK\r$' || fail "pool: answer $i: $(cat "$work/curl$i")"
    grep -q "Connection: close" "$work/curl$i" || fail "pool: answer $i without Connection: close"
    # No sooner than the 5 ms sleep on a pool thread (curl's time in seconds).
    awk '/^time_total/ { exit !($2 >= 0.004) }' "$work/curl$i" || fail "pool: answer $i too soon: $(tail -1 "$work/curl$i")"
  done
  stop --close --delay-ms=5 --pool-threads=4
  echo "bare_responder_smoke: ok --close --delay-ms=5 --pool-threads=4 (8 requests)"
}

# --pipelined: three requests in one write get three answers; a request whose
# "\r\n\r\n" is split over two writes gets exactly one.
check_pipelined() {
  local port="" i response
  start --pipelined
  exec 3<>"/dev/tcp/127.0.0.1/$port" || fail "cannot connect to $port"
  local request=$'GET /test/fast HTTP/1.1\r\nHost: x\r\n\r\n'
  printf '%s%s%s' "$request" "$request" "$request" >&3
  for i in 1 2 3; do
    IFS= read -r -t 5 response <&3 || fail "pipelined: no answer $i of 3"
    [[ $response == $'HTTP/1.1 200 OK\r' ]] || fail "pipelined: unexpected status line '$response'"
    IFS= read -r -t 5 _ <&3; IFS= read -r -t 5 _ <&3  # Content-Length, blank line
  done
  printf '%s' "${request%?}" >&3
  sleep 0.2
  printf '\n' >&3
  IFS= read -r -t 5 response <&3 || fail "pipelined: no answer to a head split over two writes"
  [[ $response == $'HTTP/1.1 200 OK\r' ]] || fail "pipelined: unexpected status line '$response'"
  IFS= read -r -t 5 _ <&3; IFS= read -r -t 5 _ <&3
  if IFS= read -r -t 0.5 response <&3; then fail "pipelined: an answer too many: '$response'"; fi
  exec 3<&-
  stop --pipelined
  echo "bare_responder_smoke: ok --pipelined"
}

# A bad flag value, or flags that do not go together, are refused with the
# usage line and status 2, before listening.
check_refused() {
  local status
  timeout 10 "$bin" 0 "$@" >"$work/out" 2>&1
  status=$?
  ((status == 2)) || fail "$*: exit status $status, expected 2"
  grep -q "usage:" "$work/out" || fail "$*: no usage line"
  echo "bare_responder_smoke: ok $* refused"
}

check_mode
check_mode --close
check_delay
check_pool
check_pipelined
for bad in --delay-ms=abc --delay-ms=-1 --delay-ms= --delay-ms=10x --delay-ms=60001; do
  check_refused "$bad"
done
for bad in --pool-threads=0 --pool-threads=4097 --pool-threads=abc --pool-threads= --pool-threads=4x \
           --pool-threads=-1 --pool-threads=99999999999999999999; do
  check_refused --close --delay-ms=5 "$bad"
done
check_refused --close --pool-threads=4          # the pool spends the delay: none given
check_refused --pipelined --close
check_refused --pipelined --delay-ms=5
