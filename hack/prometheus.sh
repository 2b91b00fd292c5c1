#!/usr/bin/env bash
# Builds a command of the Prometheus module and version hack/promtool/go.mod
# pins into $1/$2, unless that command of that version is already there:
#   prometheus.sh DEST prometheus   the server, which test/prometheus runs
#                                   (it scrapes a running nudge and evaluates
#                                   the chart's alerts); built without the
#                                   builtinassets tag: no web UI, the HTTP API
#                                   is all the tests read.
#   prometheus.sh DEST promtool     the CLI test/alerts runs (promtool check
#                                   rules, promtool test rules).
set -euo pipefail
dest=${1:?usage: prometheus.sh DEST prometheus|promtool}
cmd=${2:?usage: prometheus.sh DEST prometheus|promtool}
case "$cmd" in
  prometheus|promtool) ;;
  *) echo "prometheus.sh: want prometheus or promtool, got $cmd" >&2; exit 2 ;;
esac
module=$(cd "$(dirname "$0")/promtool" && pwd)
# The requirement, in a require block or on a require line of its own.
version=$(awk '{ sub(/^require[ \t]+/, "") } $1 == "github.com/prometheus/prometheus" { print $2 }' "$module/go.mod")
if [ -z "$version" ]; then
  echo "prometheus.sh: no github.com/prometheus/prometheus requirement in $module/go.mod" >&2
  exit 1
fi
# Both print "<cmd>, version <Version> (...)" for --version: the module
# version is stamped there, so a cached binary of another version is rebuilt.
if [ -x "$dest/$cmd" ] && "$dest/$cmd" --version 2>/dev/null | grep -qF "version $version "; then
  exit 0
fi
echo "Building $cmd $version into $dest (several minutes on a small machine)"
mkdir -p "$dest"
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
(cd "$module" && go build -trimpath \
  -ldflags "-s -w -X github.com/prometheus/common/version.Version=$version" \
  -o "$dest/$cmd.tmp" "github.com/prometheus/prometheus/cmd/$cmd")
mv "$dest/$cmd.tmp" "$dest/$cmd"
