#!/usr/bin/env bash
# Three uring-http instances behind HAProxy (deploy/haproxy/haproxy.cfg), load
# through HAProxy with wrk (keep-alive) and ab (a connection per request), one
# instance stopped with SIGTERM in the middle. Passes when no request failed
# and HAProxy marked the stopped instance DOWN while the others stayed UP.
# The instances run with --proxy-protocol behind send-proxy-v2: a request
# from 127.0.0.2 through HAProxy (which itself connects from 127.0.0.1) is
# logged with 127.0.0.2, and a connection straight to an instance, without a
# PROXY header, is closed unanswered.
#
# Not part of `bazel test //...` (tagged manual): it needs haproxy, wrk and ab,
# and the fixed loopback ports 19099-19103 of the config. Run it with
#   bazel test //test/deploy:haproxy_test
# or directly: test/deploy/haproxy_test.sh PATH_TO_SERVER [PATH_TO_HAPROXY_CFG]
# Missing tools are installed with apt-get when running as root.
set -euo pipefail

server=${1:?usage: haproxy_test.sh PATH_TO_SERVER [HAPROXY_CFG]}
config=${2:-$(dirname "$0")/../../deploy/haproxy/haproxy.cfg}
duration=${HAPROXY_TEST_SECONDS:-6}
frontend=http://127.0.0.1:19100
stats="http://127.0.0.1:19099/stats;csv"
ports=(19101 19102 19103)
names=(u1 u2 u3)
victim=1  # u2 on 19102 gets the SIGTERM

fail() {
  echo "haproxy_test: FAIL: $*" >&2
  exit 1
}

# --- tools
need=()
command -v haproxy >/dev/null || need+=(haproxy)
command -v wrk >/dev/null || need+=(wrk)
command -v ab >/dev/null || need+=(apache2-utils)
command -v curl >/dev/null || need+=(curl)
if ((${#need[@]})); then
  [[ $(id -u) -eq 0 ]] || fail "missing ${need[*]}: apt-get install them (or run as root)"
  echo "haproxy_test: installing ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

tmp=$(mktemp -d)
pids=()
haproxy_pid=""
cleanup() {
  for pid in "${pids[@]}" $haproxy_pid; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

for port in "${ports[@]}" 19099 19100; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    fail "127.0.0.1:$port is in use: the config's ports must be free"
  fi
done

# --- the instances
for i in 0 1 2; do
  "$server" --address=127.0.0.1 -p "${ports[$i]}" -A 1 -w 2 --shutdown-timeout=5s \
    --proxy-protocol --access-log="$tmp/access$i.log" >"$tmp/server$i.out" 2>&1 &
  pids+=($!)
done
for i in 0 1 2; do
  for _ in $(seq 100); do
    grep -q "uring-http ready" "$tmp/server$i.out" && break
    sleep 0.1
  done
  grep -q "uring-http ready" "$tmp/server$i.out" || fail "instance ${names[$i]} did not start: $(cat "$tmp/server$i.out")"
done

# --- HAProxy, in the foreground of a background job
haproxy -db -f "$config" >"$tmp/haproxy.out" 2>&1 &
haproxy_pid=$!

# Field $2 ("status", "wretr", ...) of server $1 (or BACKEND) in the stats CSV.
stat_field() {
  curl -fsS "$stats" 2>/dev/null | awk -F, -v name="$1" -v field="$2" '
    NR == 1 { for (i = 1; i <= NF; i++) if ($i == field) col = i; next }
    $1 == "uring_http" && $2 == name { print $col }'
}
server_status() { stat_field "$1" status; }
wait_status() {  # name, wanted status, seconds
  local deadline=$((SECONDS + $3))
  while ((SECONDS < deadline)); do
    [[ $(server_status "$1") == "$2" ]] && return 0
    sleep 0.1
  done
  return 1
}
for name in "${names[@]}"; do
  wait_status "$name" UP 10 ||
    fail "HAProxy does not see $name UP: '$(server_status "$name")'; HAProxy said: $(cat "$tmp/haproxy.out")"
done
echo "haproxy_test: 3 instances UP behind HAProxy"

# --- the client's address, through the PROXY header
# Loopback is all of 127/8: the client connects from 127.0.0.2, HAProxy
# from 127.0.0.1. One request per instance (round robin).
for i in 0 1 2; do
  curl -fsS --interface 127.0.0.2 -o /dev/null "$frontend/test/fast?client-address-$i" ||
    fail "a request from 127.0.0.2 through HAProxy failed"
done
# A client without a PROXY header, straight to an instance: closed, no answer.
if out=$(curl -sS -m 5 "http://127.0.0.1:${ports[0]}/test/fast" 2>&1); then
  fail "an instance answered a connection without a PROXY header: $out"
fi

# --- load, and a SIGTERM in the middle
wrk -t 2 -c 32 -d "${duration}s" "$frontend/test/fast" >"$tmp/wrk.out" 2>&1 &
wrk_pid=$!
ab -r -q -t "$duration" -n 10000000 -c 8 "$frontend/test/fast" >"$tmp/ab.out" 2>&1 &
ab_pid=$!
sleep $((duration / 3))
echo "haproxy_test: SIGTERM to ${names[$victim]} (pid ${pids[$victim]})"
kill -TERM "${pids[$victim]}"
status=0
wait "${pids[$victim]}" || status=$?
[[ $status -eq 0 ]] || fail "${names[$victim]} exited with status $status after SIGTERM"
wait_status "${names[$victim]}" DOWN 5 || fail "HAProxy still has ${names[$victim]} as $(server_status "${names[$victim]}")"
echo "haproxy_test: HAProxy marked ${names[$victim]} DOWN"
wait "$wrk_pid" || fail "wrk failed: $(cat "$tmp/wrk.out")"
wait "$ab_pid" || fail "ab failed: $(cat "$tmp/ab.out")"

for i in 0 2; do
  [[ $(server_status "${names[$i]}") == UP ]] || fail "${names[$i]} is $(server_status "${names[$i]}")"
done

# The access logs (written out on exit): the requests from 127.0.0.2 are
# logged with it, not with HAProxy's 127.0.0.1.
for i in 0 2; do kill -TERM "${pids[$i]}"; done
for i in 0 2; do wait "${pids[$i]}" || fail "${names[$i]} exited with status $? after SIGTERM"; done
pids=()
cat "$tmp"/access*.log >"$tmp/access.all"
marked=$(grep -c '"GET /test/fast?client-address-' "$tmp/access.all" || true)
from_client=$(grep -c '^127\.0\.0\.2 - - .*"GET /test/fast?client-address-' "$tmp/access.all" || true)
echo "haproxy_test: access logs: $marked request(s) from 127.0.0.2 through HAProxy," \
  "$from_client logged with 127.0.0.2"
((marked == 3 && from_client == 3)) ||
  fail "the access logs do not show the client's address: $(grep 'client-address' "$tmp/access.all")"
grep -q '^127\.0\.0\.1 - - .*"GET /test/fast HTTP/1.1" 200' "$tmp/access.all" ||
  fail "the load through HAProxy (from 127.0.0.1) is not logged with 127.0.0.1"

# --- the clients' view (and HAProxy's retries, which the clients never see)
echo "haproxy_test: HAProxy retried $(stat_field BACKEND wretr) request(s)," \
  "redispatched $(stat_field BACKEND wredis) to another instance"
cat "$tmp/wrk.out"
wrk_requests=$(awk '/requests in/ { print $1 }' "$tmp/wrk.out")
wrk_errors=$(awk '/Socket errors/ { gsub(",", ""); print $4 + $6 + $8 + $10 }' "$tmp/wrk.out")
wrk_non2xx=$(awk '/Non-2xx/ { print $NF }' "$tmp/wrk.out")
ab_complete=$(awk '/^Complete requests/ { print $3 }' "$tmp/ab.out")
ab_failed=$(awk '/^Failed requests/ { print $3 }' "$tmp/ab.out")
ab_non2xx=$(awk '/^Non-2xx responses/ { print $3 }' "$tmp/ab.out")
echo "haproxy_test: wrk: ${wrk_requests:-0} requests, ${wrk_errors:-0} socket errors, ${wrk_non2xx:-0} non-2xx"
echo "haproxy_test: ab: ${ab_complete:-0} requests, ${ab_failed:-0} failed, ${ab_non2xx:-0} non-2xx"
((${wrk_requests:-0} > 0 && ${ab_complete:-0} > 0)) || fail "no load went through"
((${wrk_errors:-0} == 0 && ${wrk_non2xx:-0} == 0)) || fail "wrk saw failed requests"
((${ab_failed:-0} == 0 && ${ab_non2xx:-0} == 0)) || fail "ab saw failed requests: $(cat "$tmp/ab.out")"
echo "haproxy_test: ok"
