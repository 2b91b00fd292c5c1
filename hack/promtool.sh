#!/usr/bin/env bash
# Builds the promtool CLI pinned in hack/promtool/go.mod into $1/promtool,
# unless a promtool of that version is already there. test/alerts runs it
# (promtool check rules, promtool test rules).
set -euo pipefail
dest=${1:?usage: promtool.sh DEST}
module=$(cd "$(dirname "$0")/promtool" && pwd)
# The requirement, in a require block or on a require line of its own.
version=$(awk '{ sub(/^require[ \t]+/, "") } $1 == "github.com/prometheus/prometheus" { print $2 }' "$module/go.mod")
if [ -z "$version" ]; then
  echo "promtool.sh: no github.com/prometheus/prometheus requirement in $module/go.mod" >&2
  exit 1
fi
# promtool --version prints "promtool, version <Version> (...)": the module
# version is stamped there, so a cached binary of another version is rebuilt.
if [ -x "$dest/promtool" ] && "$dest/promtool" --version 2>/dev/null | grep -qF "version $version "; then
  exit 0
fi
echo "Building promtool $version into $dest (several minutes on a small machine)"
mkdir -p "$dest"
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
(cd "$module" && go build -trimpath \
  -ldflags "-s -w -X github.com/prometheus/common/version.Version=$version" \
  -o "$dest/promtool.tmp" github.com/prometheus/prometheus/cmd/promtool)
mv "$dest/promtool.tmp" "$dest/promtool"
