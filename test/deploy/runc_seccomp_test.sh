#!/usr/bin/env bash
# deploy/seccomp.json in a real container runtime: runc runs the server from
# a read-only root file system holding only the binary and its libraries, as
# UID 65532 with Docker's default capabilities, under the profile, with and
# without no_new_privileges (Docker's default and Kubernetes'
# allowPrivilegeEscalation: false put the filter at different points of the
# runtime's start-up), and as root. Each time every kind of request is
# answered and SIGTERM ends the container with status 0. Then the profile
# less the io_uring calls, refusing the rest with EPERM as Docker's default
# does: the container exits 1 with the one line that names the seccomp
# filter and deploy/seccomp.json.
#
# Needs root, runc (Debian: apt-get install runc; it installs nothing itself),
# curl, python3 and the loopback port 19330, so it is not part of
# `bazel test //...`:
#   bazel test //test/deploy:runc_seccomp_test
#   test/deploy/runc_seccomp_test.sh bazel-bin/src/server deploy/seccomp.json
set -u

SERVER=$(realpath "$1")
PROFILE=$(realpath "$2")
PORT=19330
TMP=$(mktemp -d "${TEST_TMPDIR:-/tmp}/runc-seccomp.XXXXXX")
BUNDLE="$TMP/bundle"
ID="uring-http-seccomp-$$"

fail() {
  echo "FAIL: $*" >&2
  for f in "$TMP"/ctr.*; do [ -s "$f" ] && { echo "--- $f" >&2; head -c 2000 "$f" >&2; }; done
  runc delete -f "$ID" >/dev/null 2>&1
  exit 1
}

[ "$(id -u)" -eq 0 ] || fail "needs root (runc creates the container's namespaces)"
for tool in runc curl python3 ldd; do
  command -v "$tool" >/dev/null || fail "needs $tool (runc: apt-get install runc)"
done
if ldd "$SERVER" | grep -qE 'lib(a|t|ub|l)san\.so'; then
  echo "runc_seccomp_test: SKIPPED: a sanitizer build (its runtime makes calls a container's server does not)"
  exit 0
fi

# ---------------------------------------------------------------- the image
mkdir -p "$BUNDLE/rootfs"/{usr/local/bin,proc,dev,sys,tmp,srv}
cp "$SERVER" "$BUNDLE/rootfs/usr/local/bin/uring-http"
for lib in $(ldd "$SERVER" | grep -oE '/[^ ]+'); do
  mkdir -p "$BUNDLE/rootfs$(dirname "$lib")"
  cp -L "$lib" "$BUNDLE/rootfs$lib"
done
echo "hello from runc" >"$BUNDLE/rootfs/srv/index.html"
head -c 300000 /dev/urandom >"$BUNDLE/rootfs/srv/big.bin"
chmod -R a+rX "$BUNDLE/rootfs/srv"
head -c 5000000 /dev/zero >"$TMP/zeros"
(cd "$BUNDLE" && runc spec) || fail "runc spec"
mv "$BUNDLE/config.json" "$BUNDLE/config.json.orig"

# configure PROFILE ERRNO NO_NEW_PRIVS UID [DROP_IO_URING]: config.json for
# the server under PROFILE (its archMap is Docker's: runc takes the native
# architecture), the rest refused with ERRNO.
configure() {
  python3 - "$BUNDLE" "$@" <<'EOF'
import json, sys
bundle, profile, errno_ret, nnp, uid = sys.argv[1:6]
drop = len(sys.argv) > 6
config = json.load(open(bundle + "/config.json.orig"))
process = config["process"]
process.update(terminal=False, cwd="/", noNewPrivileges=nnp == "1",
               user={"uid": int(uid), "gid": int(uid)},
               rlimits=[{"type": "RLIMIT_NOFILE", "hard": 4096, "soft": 4096}],
               args=["/usr/local/bin/uring-http", "--port=19330", "--accept-threads=2",
                     "--workers=4", "--accept-capacity=2000", "--shutdown-timeout=5s",
                     "--root=/srv", "--access-log=/dev/stdout"])
docker_caps = ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
               "CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
               "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"]
process["capabilities"] = ({"bounding": docker_caps} if uid != "0" else
                           {k: docker_caps for k in ("bounding", "effective", "permitted")})
# The host's network, so that the test reaches the server on loopback.
linux = config["linux"]
linux["namespaces"] = [n for n in linux["namespaces"] if n["type"] != "network"]
config["root"]["readonly"] = True
rules = json.load(open(profile))["syscalls"]
if drop:
    rules = [dict(r, names=[n for n in r["names"] if not n.startswith("io_uring_")])
             for r in rules]
linux["seccomp"] = {"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": int(errno_ret),
                    "syscalls": [{"names": r["names"], "action": r["action"]}
                                 for r in rules if r["names"]]}
json.dump(config, open(bundle + "/config.json", "w"), indent=1)
EOF
}

# expect CODE ARGS...: curl's status for a request.
expect() {
  local want=$1 got
  shift
  got=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@")
  [ "$got" = "$want" ] || fail "$*: $got, expected $want"
}

# serves LABEL NO_NEW_PRIVS UID: the server in runc under the profile.
serves() {
  local label=$1 status
  configure "$PROFILE" 38 "$2" "$3" || fail "$label: config"
  (cd "$BUNDLE" && exec runc run "$ID") >"$TMP/ctr.out" 2>"$TMP/ctr.err" &
  local runc_pid=$!
  for _ in $(seq 100); do
    curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$PORT/healthz" && break
    kill -0 "$runc_pid" 2>/dev/null || break
    sleep 0.1
  done
  local u="http://127.0.0.1:$PORT"
  expect 200 "$u/test/fast"
  expect 200 "$u/test/slow"
  expect 200 "$u/test/bytes?1000000"
  expect 200 --data-binary @"$BUNDLE/rootfs/srv/big.bin" "$u/test/echo"
  expect 200 -X POST -T "$TMP/zeros" "$u/test/sink"
  expect 200 -X POST -T "$TMP/zeros" "$u/test/count"
  expect 200 "$u/test/stream?bytes=3000000"
  expect 200 "$u/metrics"
  expect 200 "$u/index.html"
  expect 200 "$u/big.bin"
  expect 206 -H 'Range: bytes=10-100' "$u/big.bin"
  expect 304 -H 'If-Modified-Since: Wed, 01 Jan 2098 00:00:00 GMT' "$u/index.html"
  expect 404 "$u/nothing-here"
  runc kill "$ID" TERM || fail "$label: runc kill"
  wait "$runc_pid"
  status=$?
  runc delete -f "$ID" >/dev/null 2>&1
  [ "$status" -eq 0 ] || fail "$label: exit status $status after SIGTERM"
  grep -q "^uring-http ready:" "$TMP/ctr.out" || fail "$label: no ready line"
  echo "runc_seccomp_test: $label: 13 requests answered, exit 0 on SIGTERM"
}

serves "UID 65532" 0 65532
serves "UID 65532, no_new_privileges" 1 65532
serves "root" 0 0

# ---------------------------------------------------------------- refused
configure "$PROFILE" 1 0 65532 drop-io-uring || fail "config"
(cd "$BUNDLE" && exec timeout 30 runc run "$ID") >"$TMP/ctr.out" 2>"$TMP/ctr.err"
status=$?
runc delete -f "$ID" >/dev/null 2>&1
[ "$status" -eq 1 ] || fail "without io_uring: exit status $status, expected 1"
[ -s "$TMP/ctr.out" ] && fail "without io_uring: wrote to stdout"
[ "$(wc -l <"$TMP/ctr.err")" -eq 1 ] || fail "without io_uring: not one line on stderr"
grep -q "^uring-http: io_uring is blocked by a seccomp filter: io_uring_setup failed with EPERM" \
  "$TMP/ctr.err" || fail "without io_uring: not the seccomp message"
grep -qF -- "--security-opt seccomp=deploy/seccomp.json" "$TMP/ctr.err" \
  || fail "without io_uring: the message does not name deploy/seccomp.json"
echo "runc_seccomp_test: without io_uring: exit 1, $(cut -c1-90 "$TMP/ctr.err")..."
rm -rf "$TMP"
echo "runc_seccomp_test: ok ($(runc --version | head -1))"
