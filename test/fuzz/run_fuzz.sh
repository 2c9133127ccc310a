#!/usr/bin/env bash
# Builds a fuzz target with --config=fuzz (clang-14, libFuzzer, ASan+UBSan)
# and fuzzes it for a bounded time on a scratch copy of its checked-in corpus
# (the directory <target>_corpus beside it), so that new inputs do not land
# in the source tree. Exits non-zero if the fuzzer finds a crash, a leak or a
# failed check; the reproducers are then copied to /tmp/<name>_artifacts.
#
# Usage: test/fuzz/run_fuzz.sh [seconds=60] [target=//test/http:parser_fuzz]
#        e.g. test/fuzz/run_fuzz.sh 60 //test/http1:connection_fuzz
#        (a plain name means //test/http:<name>)
# Env:   BAZEL (default: bazel); BAZEL_STARTUP_OPTS, e.g.
#        "--output_base=/tmp/bazel_fuzz" to keep the clang build apart from
#        the gcc one (switching compilers re-configures the C++ toolchain);
#        BAZEL_BUILD_OPTS, extra build flags.
set -euo pipefail

seconds="${1:-60}"
label="${2:-//test/http:parser_fuzz}"
cd "$(dirname "$0")/../.."

[[ "$label" == //* ]] || label="//test/http:${label}"
# The label goes into paths: keep it a plain package and name.
if [[ ! "$label" =~ ^//([A-Za-z0-9_/]+):([A-Za-z0-9_]+)$ ]]; then
  echo "run_fuzz.sh: bad target '$label'" >&2
  exit 2
fi
package="${BASH_REMATCH[1]}"
target="${BASH_REMATCH[2]}"
corpus="${package}/${target}_corpus"
if [[ ! -d "$corpus" ]]; then
  echo "run_fuzz.sh: no corpus directory $corpus for $label" >&2
  exit 2
fi
artifacts="/tmp/${target}_artifacts"

bazel="${BAZEL:-bazel}"
# shellcheck disable=SC2086
$bazel ${BAZEL_STARTUP_OPTS:-} build --config=fuzz ${BAZEL_BUILD_OPTS:-} \
  "$label"
# shellcheck disable=SC2086
bin="$($bazel ${BAZEL_STARTUP_OPTS:-} info --config=fuzz ${BAZEL_BUILD_OPTS:-} \
  bazel-bin)/${package}/${target}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/artifacts"
cp "$corpus"/* "$work/corpus/"

status=0
"$bin" "$work/corpus" \
  -max_total_time="$seconds" \
  -max_len=4096 \
  -timeout=10 \
  -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" || status=$?

if ((status != 0)); then
  mkdir -p "$artifacts"
  cp "$work"/artifacts/* "$artifacts/" 2>/dev/null || true
  echo "run_fuzz.sh: fuzzer failed (exit $status); reproducers in" \
       "$artifacts" >&2
  exit "$status"
fi
echo "run_fuzz.sh: no crash in ${seconds}s; corpus grew to" \
     "$(ls "$work/corpus" | wc -l) inputs"
