#!/usr/bin/env bash
# Generates what nudge's API types imply, with controller-gen (pinned in the
# Makefile, run from the Go module proxy):
#   api/v1alpha1/zz_generated.deepcopy.go
#   charts/nudge/crds/nudge.dev_valuebindings.yaml   (Helm installs crds/ first)
#   config/crd/nudge.dev_valuebindings.yaml and config/crd/kustomization.yaml
# Usage: generate.sh CONTROLLER_GEN [OUT]; OUT (default: the repository) is
# where the files go, so `make generate-check` can compare a fresh copy.
set -euo pipefail
gen=${1:?usage: generate.sh CONTROLLER_GEN [OUT]}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$root}
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# shellcheck disable=SC2086 # CONTROLLER_GEN may be "go run module@version".
$gen object paths=./api/... output:object:dir="$tmp/object"
$gen crd paths=./api/... output:crd:dir="$tmp/crd"

mkdir -p "$out/api/v1alpha1" "$out/charts/nudge/crds"
cp "$tmp/object/zz_generated.deepcopy.go" "$out/api/v1alpha1/"
rm -f "$out"/charts/nudge/crds/*.yaml
cp "$tmp"/crd/*.yaml "$out/charts/nudge/crds/"
"$root/hack/chart/crds.sh" "$out/charts/nudge/crds" "$out/config/crd"
