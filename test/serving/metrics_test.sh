#!/usr/bin/env bash
# Runs metrics_test.py with a Python that has the Prometheus client parser
# (Debian's python3-prometheus-client installs it for /usr/bin/python3).
set -euo pipefail
for py in python3 /usr/bin/python3; do
  if "$py" -c 'import prometheus_client' 2>/dev/null; then
    exec "$py" "$(dirname "$0")/metrics_test.py" "$1"
  fi
done
echo "metrics_test: the Prometheus client parser is missing: apt-get install python3-prometheus-client" >&2
exit 1
