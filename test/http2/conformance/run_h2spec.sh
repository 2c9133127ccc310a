#!/usr/bin/env bash
# h2spec's 145 HTTP/2 conformance cases against the server, twice: over h2c
# (prior knowledge, on the plain port) and over h2 (TLS, ALPN, a throwaway
# certificate). Prints each mode's counts and compares the failed cases with
# expected_failures.txt beside this script: it fails on a case that is not
# listed, and names listed cases that now pass so the list can shrink.
#
# Usage: run_h2spec.sh SERVER_BINARY
#   H2SPEC=PATH     an h2spec binary (default: install_h2spec.sh builds one)
#   H2SPEC_TIMEOUT  seconds h2spec waits for each answer (default 1)
set -euo pipefail

server=${1:?usage: run_h2spec.sh SERVER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
h2spec=${H2SPEC:-$("$here/install_h2spec.sh")}
timeout=${H2SPEC_TIMEOUT:-1}
expected_file=$here/expected_failures.txt
cases=145

work=$(mktemp -d)
server_pid=""
cleanup() {
  if [[ -n $server_pid ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -keyout "$work/key.pem" -out "$work/cert.pem" -subj /CN=localhost \
  -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" >"$work/openssl.log" 2>&1 ||
  { cat "$work/openssl.log"; exit 1; }

# -p 0 and --plain-port=0: free ports, named by the ready line.
"$server" -p 0 --address 127.0.0.1 -A 1 -w 2 --http2=on --tls-cert="$work/cert.pem" \
  --tls-key="$work/key.pem" --plain-port=0 >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do
  grep -qs "plain HTTP on" "$work/server.log" && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
tls_port=$(sed -n 's/.*listening on [^ ]*:\([0-9]*\),.*/\1/p' "$work/server.log" | head -1)
h2c_port=$(sed -n 's/.*plain HTTP on [^ ]*:\([0-9]*\).*/\1/p' "$work/server.log" | head -1)
if [[ -z $tls_port || -z $h2c_port ]]; then
  echo "run_h2spec: the server did not say it was ready:"
  cat "$work/server.log"
  exit 1
fi

# The failed cases of h2spec's JUnit report, one id a line ("http2/5.1/5",
# the form h2spec takes on its command line: the group's id and the case's
# place in it, from 1).
failed_ids() {
  awk '
    /<testcase / {
      match($0, /package="[^"]*"/)
      pkg = substr($0, RSTART + 9, RLENGTH - 10)
      if (pkg != last) { n = 0; last = pkg }
      id = pkg "/" (++n)
    }
    /^ *<(failure|error)>/ { print id }
  ' "$1" | sort -u
}

# The listed ids for a mode ($1), all of them or ($2 = flaky) those that
# fail in some runs only. Lines: "ID [h2c|tls] [flaky] # reason"; no mode:
# both.
expected_ids() {
  sed 's/#.*//' "$expected_file" | awk -v mode="$1" -v which="$2" '
    NF {
      m = ""; flaky = 0
      for (i = 2; i <= NF; i++) if ($i == "flaky") flaky = 1; else m = $i
      if ((m == "" || m == mode) && (which != "flaky" || flaky)) print $1
    }' | sort -u
}

unexpected=0
for mode in h2c tls; do
  if [[ $mode == tls ]]; then args=(-p "$tls_port" -t -k); else args=(-p "$h2c_port"); fi
  start=$SECONDS
  # h2spec exits non-zero when a case fails: the report below decides.
  "$h2spec" -h 127.0.0.1 "${args[@]}" -o "$timeout" -j "$work/$mode.xml" >"$work/$mode.log" 2>&1 || true
  summary=$(grep -aE '^[0-9]+ tests, ' "$work/$mode.log" | tail -1 || true)
  if [[ -z $summary || ! -f $work/$mode.xml || $summary != "$cases tests,"* ]]; then
    echo "h2spec $mode: expected a report of $cases cases; h2spec said:"
    tail -20 "$work/$mode.log"
    unexpected=$((unexpected + 1))
    continue
  fi
  failed_ids "$work/$mode.xml" >"$work/$mode.failed"
  expected_ids "$mode" all >"$work/$mode.expected"
  expected_ids "$mode" flaky >"$work/$mode.flaky"
  new=$(comm -23 "$work/$mode.failed" "$work/$mode.expected")
  fixed=$(comm -13 "$work/$mode.failed" "$work/$mode.expected" | comm -23 - "$work/$mode.flaky")
  echo "h2spec $mode: $summary ($(comm -12 "$work/$mode.failed" "$work/$mode.expected" | wc -l) expected)" \
    "in $((SECONDS - start)) s"
  for id in $fixed; do
    echo "h2spec $mode: note: $id passes now; take it out of expected_failures.txt"
  done
  if [[ -n $new ]]; then
    for id in $new; do echo "h2spec $mode: FAILED: $id (not in expected_failures.txt)"; done
    unexpected=$((unexpected + $(wc -w <<<"$new")))
    # h2spec's own account of each failure: what it sent, expected, got.
    sed -n '/^Failures:/,$p' "$work/$mode.log"
  fi
done

if ((unexpected > 0)); then
  echo "run_h2spec: $unexpected unexpected failure(s)"
  exit 1
fi
echo "run_h2spec: ok"
