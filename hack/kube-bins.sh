#!/usr/bin/env bash
# Builds the control-plane binaries nudge's tests, demo and benchmarks run
# (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd, kwok)
# from the Go module proxy into $1, skipping any binary already there.
#
# Each tool lives in a module of its own under hack/kube/ so that their
# dependency graphs never meet each other's or nudge's.
set -euo pipefail
dest=${1:?usage: kube-bins.sh DEST}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dest"
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false

k8s_version=v1.36.3
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=36"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

build() { # module-dir binary-name package [ldflags]
  local dir=$1 name=$2 pkg=$3 flags=${4:-"-s -w"}
  if [ -x "$dest/$name" ]; then return; fi
  echo "Building $name (from $pkg) into $dest"
  (cd "$here/kube/$dir" && go build -trimpath -ldflags "$flags" -o "$dest/$name.tmp" "$pkg")
  mv "$dest/$name.tmp" "$dest/$name"
}

build etcd etcd go.etcd.io/etcd/server/v3
build kwok kwok sigs.k8s.io/kwok/cmd/kwok
for c in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  build kubernetes "$c" "k8s.io/kubernetes/cmd/$c" "$ldflags"
done
