#!/usr/bin/env bash
# Builds h2spec v2.2.1 (the HTTP/2 conformance tester run_h2spec.sh runs)
# with `go install` from the Go module proxy, into a cache outside the
# repository, and prints the binary's path. Needs only Go and the proxy; a
# second run finds the binary and does nothing.
#
# Usage: install_h2spec.sh   (H2SPEC_CACHE=DIR to build elsewhere)
#
# The module and its dependencies come from go.mod/go.sum beside this
# script: h2spec v2.2.1 has no go.mod of its own, so `go install
# ...@v2.2.1+incompatible` would resolve each dependency to its newest
# version, not the ones h2spec was released with.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
version=2.2.1
dir=${H2SPEC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/uring-http/h2spec-$version}
bin=$dir/h2spec

# The stamp names the pins the binary was built from: a changed go.sum
# rebuilds it instead of silently running the old one.
want=$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -d' ' -f1)
if [[ -x $bin && -f $dir/stamp && $(cat "$dir/stamp") == "$want" ]]; then
  echo "$bin"
  exit 0
fi

command -v go >/dev/null || { echo "install_h2spec: no go on PATH" >&2; exit 1; }
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "install_h2spec: building h2spec $version into $dir" >&2
# Inside this directory `go install` takes the versions from go.mod; go.sum
# refuses any other bytes. -mod=readonly: a go.mod that needs changing is an
# error here, not something to rewrite. VERSION is what h2spec's own
# Makefile sets (its source says 2.0.0).
(cd "$here" && GOBIN="$tmp" GOFLAGS="-mod=readonly -buildvcs=false" \
  go install -trimpath -ldflags "-X main.VERSION=$version" github.com/summerwind/h2spec/cmd/h2spec) >&2
mv -f "$tmp/h2spec" "$bin"
echo "$want" >"$dir/stamp"
echo "$bin"
