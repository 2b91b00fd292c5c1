#!/usr/bin/env bash
# Copies the chart's CRDs (charts/nudge/crds, written by `make generate`) into
# DIR with a kustomization, for `kubectl apply -k DIR`. Called by
# manifests.sh (DIR = config/crd) and by hack/generate.sh.
set -euo pipefail
src=${1:?usage: crds.sh CHART_CRDS DIR}
dir=${2:?usage: crds.sh CHART_CRDS DIR}
mkdir -p "$dir"
{
  echo "# Generated from charts/nudge/crds (\`make generate\`). Do not edit."
  echo "# kubectl apply -k config/crd/"
  echo "apiVersion: kustomize.config.k8s.io/v1beta1"
  echo "kind: Kustomization"
  echo "resources:"
  for f in "$src"/*.yaml; do
    cp "$f" "$dir/"
    echo "- $(basename "$f")"
  done
} >"$dir/kustomization.yaml"
