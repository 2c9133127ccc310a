#!/usr/bin/env bash
# Autobahn|Testsuite's fuzzingclient against the server's WebSocket echo
# endpoint (GET /test/ws): installs the suite (Python 2.7 only) into a cached
# virtualenv, starts the server on a free loopback port, runs the cases,
# then prints counts by behavior and behaviorClose and every failed case
# with Autobahn's account of it (summarize.py beside this script).
#
# Usage: run.sh [options]
#   --server PATH        the server binary (default: ./bazelw build //src:server)
#   --cases LIST         comma-separated case patterns (default: '*')
#   --exclude LIST       patterns left out (default: '12.*,13.*', the
#                        permessage-deflate sections; '' for none)
#   --quick              CI subset: sections 1-7 and 10 (no 9.* performance
#                        cases, no 12/13), well under 2 minutes
#   --report-dir DIR     where wstest writes its report (default:
#                        /tmp/autobahn-report; its old report files are removed)
#   --server-arg ARG     one more argument for the server (repeatable), e.g.
#                        --server-arg=--ws-max-message=32MiB
#   --timeout SECONDS    the whole wstest run (default: 3600; --quick: 300)
#   --strict-close       a case that passes with a bad behaviorClose
#                        (WRONG CODE, UNCLEAN, ...) counts as failed too
#   --install-only       set up the virtualenv and stop
# Environment:
#   AUTOBAHN_CACHE       cache dir (default: ${XDG_CACHE_HOME:-~/.cache}/uring_http);
#                        the virtualenv is $AUTOBAHN_CACHE/autobahn-venv
#   PYTHON2              a Python 2.7 interpreter (default: pyenv's 2.7, else
#                        python2.7 on PATH)
#   BAZEL_STARTUP_FLAGS  startup flags for ./bazelw when it builds the server,
#                        e.g. --output_base=/tmp/bazel_autobahn
# Exits 0 when every case passed (OK, NON-STRICT, INFORMATIONAL or
# UNIMPLEMENTED), 1 when a case failed or the server died, 2 on a setup error.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)

server=""
cases="*"
exclude="12.*,13.*"
quick=0
report_dir=/tmp/autobahn-report
server_args=()
timeout_s=""
strict_close=()
install_only=0

die() { echo "autobahn: $*" >&2; exit 2; }
while (($#)); do
  case $1 in
    --server) server=${2:?}; shift 2 ;;
    --server=*) server=${1#*=}; shift ;;
    --cases) cases=${2?}; shift 2 ;;
    --cases=*) cases=${1#*=}; shift ;;
    --exclude) exclude=${2?}; shift 2 ;;
    --exclude=*) exclude=${1#*=}; shift ;;
    --quick) quick=1; shift ;;
    --report-dir) report_dir=${2:?}; shift 2 ;;
    --report-dir=*) report_dir=${1#*=}; shift ;;
    --server-arg) server_args+=("${2?}"); shift 2 ;;
    --server-arg=*) server_args+=("${1#*=}"); shift ;;
    --timeout) timeout_s=${2:?}; shift 2 ;;
    --timeout=*) timeout_s=${1#*=}; shift ;;
    --strict-close) strict_close=(--strict-close); shift ;;
    --install-only) install_only=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1 (--help lists them)" ;;
  esac
done
if ((quick)); then
  cases="1.*,2.*,3.*,4.*,5.*,6.*,7.*,10.*"
  : "${timeout_s:=300}"
fi
: "${timeout_s:=3600}"

# --- Python 2.7 and the virtualenv -------------------------------------------
cache=${AUTOBAHN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/uring_http}
venv=$cache/autobahn-venv
requirements=$here/requirements.txt

find_python2() {
  local p root
  if [[ -n ${PYTHON2:-} ]]; then echo "$PYTHON2"; return; fi
  root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
  for p in "$root"/versions/2.7*/bin/python2.7; do
    [[ -x $p ]] && { echo "$p"; return; }
  done
  command -v python2.7 2>/dev/null && return
  return 1
}

setup_venv() {
  local stamp=$venv/.requirements-sha256 want py tool
  want=$(sha256sum "$requirements" | cut -d' ' -f1)
  if [[ -x $venv/bin/wstest && -f $stamp && $(cat "$stamp") == "$want" ]]; then
    return 0
  fi
  py=$(find_python2) || die "no Python 2.7: set PYTHON2, or install pyenv's 2.7 (pyenv install 2.7.18)"
  "$py" -c 'import sys; assert sys.version_info[:2] == (2, 7)' ||
    die "$py is not Python 2.7"
  echo "autobahn: creating $venv with $py" >&2
  mkdir -p "$cache"
  # virtualenv 20.15.1 still runs on, and creates environments for, 2.7;
  # installed beside the venv, not into the interpreter.
  tool=$cache/virtualenv-py27
  if [[ ! -f $tool/virtualenv/__init__.py ]]; then
    "$py" -m pip --version >/dev/null 2>&1 || "$py" -m ensurepip --default-pip >&2
    rm -rf "$tool"
    "$py" -m pip install -q --disable-pip-version-check --no-warn-script-location \
      --target "$tool" 'virtualenv==20.15.1' >&2 2> >(grep -v DEPRECATION >&2)
  fi
  rm -rf "$venv"
  PYTHONPATH=$tool "$py" -m virtualenv -q --app-data "$cache/virtualenv-app-data" "$venv" >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements" >&2 \
    2> >(grep -v DEPRECATION >&2)
  "$venv/bin/wstest" --autobahnversion >/dev/null
  echo "$want" >"$stamp"
}
setup_venv
((install_only)) && { echo "autobahn: $venv is ready"; exit 0; }

# --- the server ---------------------------------------------------------------
if [[ -z $server ]]; then
  # shellcheck disable=SC2086
  (cd "$repo" && ./bazelw ${BAZEL_STARTUP_FLAGS:-} build //src:server >&2) || die "the server did not build"
  # shellcheck disable=SC2086
  server=$(cd "$repo" && ./bazelw ${BAZEL_STARTUP_FLAGS:-} info bazel-bin 2>/dev/null)/src/server
fi
[[ -x $server ]] || die "no server binary at $server"

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

# -p 0: a free port, named by the ready line.
"$server" -p 0 --address 127.0.0.1 -A 1 "${server_args[@]}" >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do
  grep -qs "ready: listening on" "$work/server.log" && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
port=$(sed -n 's/.*listening on [^ ]*:\([0-9]*\),.*/\1/p' "$work/server.log" | head -1)
if [[ -z $port ]]; then
  echo "autobahn: the server did not say it was ready:"
  cat "$work/server.log"
  exit 2
fi
url=ws://127.0.0.1:$port/test/ws

# --- the run ------------------------------------------------------------------
mkdir -p "$report_dir"
rm -f "$report_dir"/index.json "$report_dir"/index.html "$report_dir"/*_case_*.json \
  "$report_dir"/*_case_*.html "$report_dir"/wstest.log "$report_dir"/server.log
python3 - "$work/spec.json" "$url" "$cases" "$exclude" "$report_dir" <<'EOF'
import json, sys
path, url, cases, exclude, outdir = sys.argv[1:]
split = lambda s: [p.strip() for p in s.split(",") if p.strip()]
json.dump({
    "outdir": outdir,
    "servers": [{"agent": "uring_http", "url": url}],
    "cases": split(cases),
    "exclude-cases": split(exclude),
    "exclude-agent-cases": {},
}, open(path, "w"), indent=2)
EOF
cp "$work/spec.json" "$report_dir/spec.json"

echo "autobahn: $url, cases '$cases', excluded '$exclude', report in $report_dir"
start=$SECONDS
status=0
(cd "$work" && PYTHONUNBUFFERED=1 timeout "$timeout_s" "$venv/bin/wstest" -m fuzzingclient -s "$work/spec.json") \
  >"$report_dir/wstest.log" 2>&1 || status=$?
echo "autobahn: wstest took $((SECONDS - start)) s (exit $status)"
expected=$(sed -n 's/^Ok, will run \([0-9]*\) test cases.*/\1/p' "$report_dir/wstest.log" | head -1)

failed=0
if ((status != 0)); then
  # wstest writes its report only at the end: a timeout leaves none.
  ((status == 124)) && echo "autobahn: FAILED: wstest ran past ${timeout_s} s, in case" \
    "$(sed -n 's/^Running test case ID \([^ ]*\) .*/\1/p' "$report_dir/wstest.log" | tail -1)"
  echo "autobahn: wstest exited $status; the end of wstest.log:"
  tail -n 20 "$report_dir/wstest.log"
  failed=1
fi
if grep -q "^Connection to .* failed" "$report_dir/wstest.log"; then
  echo "autobahn: FAILED: $(grep -m1 "^Connection to .* failed" "$report_dir/wstest.log")"
  failed=1
fi
if ! kill -0 "$server_pid" 2>/dev/null; then
  wait "$server_pid" && code=0 || code=$?
  server_pid=""
  echo "autobahn: FAILED: the server died during the run (exit $code); the end of its log:"
  tail -n 30 "$work/server.log"
  failed=1
else
  # A clean stop exits 0; a sanitizer build reports leaks here.
  kill -TERM "$server_pid"
  for _ in $(seq 150); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$server_pid" 2>/dev/null; then
    echo "autobahn: FAILED: the server did not stop within 15 s of SIGTERM"
    failed=1
  else
    wait "$server_pid" && code=0 || code=$?
    server_pid=""
    if ((code != 0)); then
      echo "autobahn: FAILED: the server exited $code on SIGTERM; the end of its log:"
      tail -n 30 "$work/server.log"
      failed=1
    fi
  fi
fi
cp "$work/server.log" "$report_dir/server.log"

python3 "$here/summarize.py" "$report_dir" --expected "${expected:-0}" "${strict_close[@]}" || failed=1
if ((failed)); then
  echo "autobahn: FAILED (report: $report_dir/index.html)"
  exit 1
fi
echo "autobahn: passed (report: $report_dir/index.html)"
