#!/usr/bin/env bash
# Smoke test of the bare responder, so that perf/compare's reference cannot rot:
# in both modes it must answer a GET with an empty 200, close when asked
# (--close), and exit 0 on SIGTERM.
# Usage (from an sh_test): bare_responder_smoke.sh path/to/bare_responder
set -uo pipefail
bin="$1"
work="$(mktemp -d)"
pid=""
trap '[[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null; rm -rf "$work"' EXIT

fail() { echo "bare_responder_smoke: $*" >&2; [[ -f $work/out ]] && cat "$work/out" >&2; exit 1; }

check_mode() {
  local mode=("$@") port="" response
  "$bin" 0 "${mode[@]}" >"$work/out" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    port="$(sed -n 's/^ready: .*listening on port \([0-9]*\).*/\1/p' "$work/out")"
    [[ -n $port ]] && break
    kill -0 "$pid" 2>/dev/null || fail "exited at start-up (${mode[*]})"
    sleep 0.05
  done
  [[ -n $port ]] || fail "no ready line (${mode[*]})"

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

  kill -TERM "$pid"
  wait "$pid"
  local status=$?
  pid=""
  ((status == 0)) || fail "exit status $status on SIGTERM (${mode[*]})"
  echo "bare_responder_smoke: ok ${mode[*]:-keep-alive}"
}

check_mode
check_mode --close
