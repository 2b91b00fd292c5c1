#!/usr/bin/env bash
# Builds Flux's kustomize-controller, a tool of the module hack/kube (the
# version its go.mod pins), into $1/kustomize-controller, unless one of that
# version is already there. test/flux runs it against the testbed.
set -euo pipefail
dest=${1:?usage: flux.sh DEST}
module=$(cd "$(dirname "$0")/kube" && pwd)
pkg=github.com/fluxcd/kustomize-controller
# The requirement, in a require block or on a require line of its own (not
# the line of the tool block, which has no version).
version=$(awk '{ sub(/^require[ \t]+/, "") } $1 == "'$pkg'" && $2 ~ /^v/ { print $2 }' "$module/go.mod")
if [ -z "$version" ]; then
  echo "flux.sh: no $pkg requirement in $module/go.mod" >&2
  exit 1
fi
# kustomize-controller has no --version: `go version -m` prints the module
# versions the binary was built from, so a cached binary of another
# version is rebuilt.
if [ -x "$dest/kustomize-controller" ] &&
  go version -m "$dest/kustomize-controller" | grep -qP "^\t(mod|dep)\t\Q$pkg\E\t\Q$version\E\t"; then
  exit 0
fi
echo "Building kustomize-controller $version into $dest (several minutes on a small machine)"
mkdir -p "$dest"
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
(cd "$module" && go build -trimpath -ldflags "-s -w" -o "$dest/kustomize-controller.tmp" "$pkg")
mv "$dest/kustomize-controller.tmp" "$dest/kustomize-controller"
