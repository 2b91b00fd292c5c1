#!/usr/bin/env bash
# Builds cert-manager's controller and cainjector (hack/kube/certmanager/,
# of the module github.com/cert-manager/cert-manager that hack/kube/go.mod
# pins) into $1/cert-manager-controller and $1/cert-manager-cainjector,
# unless both of that version are already there, in one `go build`.
# test/chart/certmanager runs them against the testbed's API server.
set -euo pipefail
dest=${1:?usage: certmanager.sh DEST}
module=$(cd "$(dirname "$0")/kube" && pwd)
# The requirement, in a require block or on a require line of its own.
version=$(awk '{ sub(/^require[ \t]+/, "") } $1 == "github.com/cert-manager/cert-manager" { print $2 }' "$module/go.mod")
if [ -z "$version" ]; then
  echo "certmanager.sh: no github.com/cert-manager/cert-manager requirement in $module/go.mod" >&2
  exit 1
fi
# Each prints "<name> version <AppVersion>": the module version is stamped
# there, so a cached binary of another version is rebuilt.
cached=true
for bin in cert-manager-controller cert-manager-cainjector; do
  if ! { [ -x "$dest/$bin" ] && "$dest/$bin" --version 2>/dev/null | grep -qxF "$bin version $version"; }; then
    cached=false
  fi
done
if $cached; then
  exit 0
fi
echo "Building cert-manager $version (controller, cainjector) into $dest (several minutes on a small machine)"
mkdir -p "$dest"
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
tmp=$(mktemp -d "$dest/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(cd "$module" && go build -trimpath \
  -ldflags "-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$version" \
  -o "$tmp/" ./certmanager/controller ./certmanager/cainjector)
for bin in controller cainjector; do
  mv "$tmp/$bin" "$dest/cert-manager-$bin"
done
