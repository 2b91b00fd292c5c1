#!/usr/bin/env bash
# Checks the krew manifest `make dist` wrote with krew itself (pinned):
# validate-krew-manifest's structural checks, then `kubectl krew install
# --manifest --archive` of every platform's archive into a temporary
# KREW_ROOT (the archive's sha256, its files, the bin), and runs the host's
# installed plugin.
#   krew-check.sh DIST_DIR VERSION os/arch...
set -euo pipefail
dist=${1:?usage: krew-check.sh DIST_DIR VERSION os/arch...}
version=${2:?usage: krew-check.sh DIST_DIR VERSION os/arch...}
shift 2
krew_version=v0.4.3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
GOBIN=$tmp/tools go install "sigs.k8s.io/krew/cmd/krew@$krew_version" "sigs.k8s.io/krew/cmd/validate-krew-manifest@$krew_version"
"$tmp/tools/validate-krew-manifest" -manifest "$dist/nudge.yaml" -skip-install
host="$(go env GOHOSTOS)/$(go env GOHOSTARCH)"
for p in "$@"; do
  os=${p%/*} arch=${p#*/}
  archive=$(ls "$dist/kubectl-nudge_${version}_${os}_${arch}".*)
  root=$tmp/$os-$arch
  echo "krew install --manifest $dist/nudge.yaml --archive $archive (KREW_OS=$os KREW_ARCH=$arch)"
  KREW_ROOT=$root KREW_OS=$os KREW_ARCH=$arch KREW_NO_UPGRADE_CHECK=1 PATH="$root/bin:$PATH" \
    "$tmp/tools/krew" install --manifest "$dist/nudge.yaml" --archive "$archive" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; exit 1; }
  if [ "$p" = "$host" ]; then
    out=$("$root/bin/kubectl-nudge" version)
    case $out in
      "kubectl nudge version $version ("*) echo "$out" ;;
      *) echo "krew-check.sh: the installed plugin says \"$out\", want version $version" >&2; exit 1 ;;
    esac
  fi
done
