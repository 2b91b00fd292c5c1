#!/usr/bin/env bash
# Builds the control-plane binaries nudge's tests, demo and benchmarks run
# (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd, kwok)
# from the Go module proxy into $1, skipping any binary already there.
#
# They are tools of the module hack/kube, which also builds cert-manager and
# Flux (hack/certmanager.sh, hack/flux.sh): one dependency graph, apart from
# nudge's, so the libraries they share are compiled once. The binaries that
# are missing are built by one `go build`, which links them in parallel.
set -euo pipefail
dest=${1:?usage: kube-bins.sh DEST}
module=$(cd "$(dirname "$0")/kube" && pwd)
mkdir -p "$dest"
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false

k8s_version=v1.36.3
kube_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=36"
  kube_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

# Each binary: its name, its package, and the name `go build -o DIR/` gives
# it (the package's last element, without a major version suffix).
bins=(
  "etcd go.etcd.io/etcd/server/v3 server"
  "kwok sigs.k8s.io/kwok/cmd/kwok kwok"
  "kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver"
  "kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager kube-controller-manager"
  "kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler kube-scheduler"
  "kubectl k8s.io/kubernetes/cmd/kubectl kubectl"
)
missing=() pkgs=()
for b in "${bins[@]}"; do
  read -r name pkg _ <<<"$b"
  if [ ! -x "$dest/$name" ]; then
    missing+=("$b") pkgs+=("$pkg")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "Building ${pkgs[*]} into $dest"
tmp=$(mktemp -d "$dest/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# The version stamp for Kubernetes's commands only: of the -ldflags that
# match a package, the last wins.
(cd "$module" && go build -trimpath -ldflags "-s -w" -ldflags "k8s.io/kubernetes/cmd/...=$kube_ldflags" \
  -o "$tmp/" "${pkgs[@]}")
for b in "${missing[@]}"; do
  read -r name _ built <<<"$b"
  mv "$tmp/$built" "$dest/$name"
done
