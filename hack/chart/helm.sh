#!/usr/bin/env bash
# Builds the helm CLI pinned in hack/helm/go.mod into $1/helm, unless a helm
# of that version is already there. The chart tests and `make manifests` run it.
set -euo pipefail
dest=${1:?usage: helm.sh DEST}
module=$(cd "$(dirname "$0")/../helm" && pwd)
version=$(awk '$1 == "helm.sh/helm/v4" { print $2 }' "$module/go.mod")
if [ -z "$version" ]; then
  echo "helm.sh: no helm.sh/helm/v4 requirement in $module/go.mod" >&2
  exit 1
fi
if [ -x "$dest/helm" ] && [ "$("$dest/helm" version --template '{{.Version}}' 2>/dev/null)" = "$version" ]; then
  exit 0
fi
echo "Building helm $version into $dest"
mkdir -p "$dest"
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
(cd "$module" && go build -trimpath \
  -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$version" \
  -o "$dest/helm.tmp" helm.sh/helm/v4/cmd/helm)
mv "$dest/helm.tmp" "$dest/helm"
