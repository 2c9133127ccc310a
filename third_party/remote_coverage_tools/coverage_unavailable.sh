#!/bin/sh
echo "coverage is not available offline: Bazel 4.2.3 cannot download remote_coverage_tools" >&2
exit 1
