#!/usr/bin/env bash
# Runs a Google Benchmark binary briefly so that `bazel test //...` notices
# when a benchmark stops building or crashes; the numbers are not looked at.
# Usage (from an sh_test): benchmark_smoke.sh path/to/benchmark [extra args]
set -uo pipefail
if (($# < 1)); then
  echo "usage: $0 BENCHMARK_BINARY [ARGS...]" >&2
  exit 2
fi
bin="$1"
shift
"$bin" --benchmark_min_time=0.01 "$@"
status=$?
if ((status != 0)); then
  echo "benchmark_smoke: $bin exited with status $status" >&2
  exit 1
fi
