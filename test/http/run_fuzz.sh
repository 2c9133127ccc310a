#!/usr/bin/env bash
# Builds the HTTP parser fuzz target with --config=fuzz (clang-14, libFuzzer,
# ASan+UBSan) and fuzzes it for a bounded time on a scratch copy of the
# checked-in corpus, so that new inputs do not land in the source tree.
# Exits non-zero if the fuzzer finds a crash, a leak or a failed check.
#
# Usage: test/http/run_fuzz.sh [seconds=60]
# Env:   BAZEL (default: bazel); BAZEL_STARTUP_OPTS, e.g.
#        "--output_base=/tmp/bazel_fuzz" to keep the clang build apart from
#        the gcc one (switching compilers re-configures the C++ toolchain);
#        BAZEL_BUILD_OPTS, extra build flags.
set -euo pipefail

seconds="${1:-60}"
cd "$(dirname "$0")/../.."

bazel="${BAZEL:-bazel}"
# shellcheck disable=SC2086
$bazel ${BAZEL_STARTUP_OPTS:-} build --config=fuzz ${BAZEL_BUILD_OPTS:-} \
  //test/http:parser_fuzz
# shellcheck disable=SC2086
bin="$($bazel ${BAZEL_STARTUP_OPTS:-} info --config=fuzz ${BAZEL_BUILD_OPTS:-} \
  bazel-bin)/test/http/parser_fuzz"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/artifacts"
cp test/http/parser_fuzz_corpus/* "$work/corpus/"

status=0
"$bin" "$work/corpus" \
  -max_total_time="$seconds" \
  -max_len=4096 \
  -timeout=10 \
  -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" || status=$?

if ((status != 0)); then
  mkdir -p /tmp/parser_fuzz_artifacts
  cp "$work"/artifacts/* /tmp/parser_fuzz_artifacts/ 2>/dev/null || true
  echo "run_fuzz.sh: fuzzer failed (exit $status); reproducers in" \
       "/tmp/parser_fuzz_artifacts" >&2
  exit "$status"
fi
echo "run_fuzz.sh: no crash in ${seconds}s; corpus grew to" \
     "$(ls "$work/corpus" | wc -l) inputs"
