#!/usr/bin/env bash
# hold_client against the real server: 600 connections over 3 processes and
# 3 source addresses, all answered 200; then 150 connections against 100
# slots, where --allow-refused accepts the 503s and the counts must add up.
# Then --websocket: 300 WebSockets on /test/ws, each handshake's accept and
# one echo checked; and 100 held past the server's idle timeout with pings
# every 500 ms, which stay open only because the client answers them.
set -euo pipefail
client=$1
server=$2
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$out"' EXIT

# Says what was missing, with the server's log, before failing.
expect() {
  grep -q "$1" "$2" && return 0
  echo "hold_client_smoke: expected \"$1\" in $(basename "$2"); server log:"
  cat "$out/server.out"
  exit 1
}

start_server() {
  # Emptied here, not by the background job's redirection: that one runs
  # after the fork, and the loop below could read the last server's ready
  # line (and its port) first.
  : >"$out/server.out"
  "$server" -p 0 -A 1 -w 1 "$@" >>"$out/server.out" 2>&1 &
  server_pid=$!
  for _ in $(seq 100); do
    grep -q "ready" "$out/server.out" && break
    sleep 0.1
  done
  port=$(sed -n 's/.*listening on [^ ]*:\([0-9]*\),.*/\1/p' "$out/server.out")
  [[ -n $port ]] || { cat "$out/server.out"; exit 1; }
}

start_server
"$client" --port "$port" --connections 600 --procs 3 --sources 3 --hold 0.2 | tee "$out/a" ||
  { echo "hold_client_smoke: the first run failed; server log:"; cat "$out/server.out"; exit 1; }
expect "answered: 200 600, 503 0" "$out/a"
expect "0 closed by the server while held" "$out/a"
kill -TERM "$server_pid"
wait "$server_pid"

start_server -C 100
# 150 connections held at once on 100 slots: 50 are refused with 503.
set +e
"$client" --port "$port" --connections 150 --procs 2 --sources 2 --hold 0.2 > "$out/b"
rc=$?
set -e
cat "$out/b"
[[ $rc -ne 0 ]]  # not all answered 200
expect "answered: 200 100, 503 50" "$out/b"
"$client" --port "$port" --connections 150 --procs 2 --sources 2 --allow-refused --hold 0 > "$out/c"
cat "$out/c"
kill -TERM "$server_pid"
wait "$server_pid"

# WebSockets: the handshake (101, Sec-WebSocket-Accept) and a 16-byte echo
# on each, held with the server's defaults (pings after 30 s: none here).
start_server
"$client" --port "$port" --connections 300 --procs 3 --sources 3 --websocket /test/ws \
  --hold 0.2 | tee "$out/d" ||
  { echo "hold_client_smoke: the WebSocket run failed; server log:"; cat "$out/server.out"; exit 1; }
expect "answered: 101 300, 503 0" "$out/d"
expect "bad handshake 0, echoes checked 300, bad echo 0" "$out/d"
expect "0 closed by the server while held" "$out/d"
kill -TERM "$server_pid"
wait "$server_pid"

# Pings every 500 ms and a 1.5 s idle timeout, held 3 s: a client that did
# not answer would lose every socket at 1.5 s (close 1001).
start_server --ws-ping-interval=500ms --ws-idle-timeout=1500ms
"$client" --port "$port" --connections 100 --procs 1 --sources 1 --websocket /test/ws \
  --ws-message 0 --hold 3 | tee "$out/e" ||
  { echo "hold_client_smoke: the WebSocket ping run failed; server log:"; cat "$out/server.out"; exit 1; }
expect "answered: 101 100, 503 0" "$out/e"
expect "0 closed by the server while held" "$out/e"
pings=$(sed -n 's/.*; \([0-9]*\) pings answered.*/\1/p' "$out/e")
((pings >= 200)) || { echo "hold_client_smoke: $pings pings answered, expected >= 200"; exit 1; }
kill -TERM "$server_pid"
wait "$server_pid"
echo "hold_client_smoke: ok"
