#!/usr/bin/env bash
# The shipped binary when io_uring is refused: under a seccomp filter that
# makes io_uring_setup fail with EPERM (Docker's and containerd's default
# profiles) and with ENOSYS (Podman's), with two accept threads (two rings
# refused), the server writes nothing on stdout, exactly one line on stderr
# naming the seccomp filter and deploy/seccomp.json, and exits with status 1.
#
# Usage: uring_refused_test.sh path/to/server path/to/refuse_io_uring
set -u

SERVER="$1"
REFUSE="$2"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"

fail() {
  echo "FAIL: $*" >&2
  for f in "$TMP"/refused.*; do [ -f "$f" ] && { echo "--- $f" >&2; cat "$f" >&2; }; done
  exit 1
}

# refused ERRNO BEGINNING: the one line begins with "uring-http: BEGINNING".
refused() {
  local error=$1 beginning=$2 status
  timeout 30 "$REFUSE" "$error" "$SERVER" -p 0 --address 127.0.0.1 -A 2 -w 2 \
    >"$TMP/refused.out" 2>"$TMP/refused.err"
  status=$?
  [ "$status" -eq 1 ] || fail "$error: exit status $status, expected 1"
  [ -s "$TMP/refused.out" ] && fail "$error: wrote to stdout"
  [ "$(wc -l <"$TMP/refused.err")" -eq 1 ] || fail "$error: not one line on stderr"
  grep -qF "uring-http: $beginning" "$TMP/refused.err" || fail "$error: not '$beginning'"
  head -c 12 "$TMP/refused.err" | grep -q "^uring-http: " || fail "$error: not at the start"
  grep -qF -- "--security-opt seccomp=deploy/seccomp.json" "$TMP/refused.err" \
    || fail "$error: the message does not name deploy/seccomp.json"
  echo "uring_refused_test: $error: exit 1, $(cut -c1-100 "$TMP/refused.err")..."
}

refused EPERM "io_uring is blocked by a seccomp filter: io_uring_setup failed with EPERM"
refused ENOSYS "io_uring is probably blocked by a seccomp filter: io_uring_setup failed with ENOSYS"
echo "uring_refused_test: ok"
