#!/usr/bin/env bash
# Builds the Prometheus server of the module and version hack/promtool/go.mod
# pins (promtool's) into $1/prometheus, unless a prometheus of that version
# is already there. test/prometheus runs it: it scrapes a running nudge and
# evaluates the chart's alerts. Built without the builtinassets tag: no web
# UI, the HTTP API is all the tests read.
set -euo pipefail
dest=${1:?usage: prometheus.sh DEST}
module=$(cd "$(dirname "$0")/promtool" && pwd)
# The requirement, in a require block or on a require line of its own.
version=$(awk '{ sub(/^require[ \t]+/, "") } $1 == "github.com/prometheus/prometheus" { print $2 }' "$module/go.mod")
if [ -z "$version" ]; then
  echo "prometheus.sh: no github.com/prometheus/prometheus requirement in $module/go.mod" >&2
  exit 1
fi
# prometheus --version prints "prometheus, version <Version> (...)": the
# module version is stamped there, so a cached binary of another version is
# rebuilt.
if [ -x "$dest/prometheus" ] && "$dest/prometheus" --version 2>/dev/null | grep -qF "version $version "; then
  exit 0
fi
echo "Building prometheus $version into $dest (several minutes on a small machine)"
mkdir -p "$dest"
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
(cd "$module" && go build -trimpath \
  -ldflags "-s -w -X github.com/prometheus/common/version.Version=$version" \
  -o "$dest/prometheus.tmp" github.com/prometheus/prometheus/cmd/prometheus)
mv "$dest/prometheus.tmp" "$dest/prometheus"
