#!/usr/bin/env bash
# deploy/k8s: renders both overlays with `kubectl kustomize` and validates every object against
# the Kubernetes 1.27 schemas plus the properties the deployment relies on (validate_k8s.mjs).
# Without kubectl (not in Debian: install it by hand) only the complete objects of the
# kustomization directories are validated, then the test is skipped (77): the overlays were not
# rendered. Flags in the manifests are checked against BIN_DIR/sparrowd --help when it exists.
# Usage: k8s_manifests_test.sh BIN_DIR   (run from the repository root)
set -euo pipefail
bin="$1"
here="$(dirname "$0")"
k8s=deploy/k8s
if [[ ! -d "$here/node_modules/kubernetes-models" ]]; then
  echo "SKIP: tests/deploy/node_modules is missing (make deps)"
  exit 77
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if ! command -v kubectl >/dev/null; then
  node "$here/validate_k8s.mjs" raw "$k8s/base" "$k8s"/overlays/*
  echo "SKIP: kubectl is missing: the overlays were not rendered"
  exit 77
fi
help_args=()
if [[ -x "$bin/sparrowd" ]]; then
  "$bin/sparrowd" --help >"$tmp/sparrowd-help.txt"
  help_args=(--sparrowd-help "$tmp/sparrowd-help.txt")
fi
rendered=()
for overlay in "$k8s"/overlays/*/; do
  name="$(basename "$overlay")"
  kubectl kustomize "$overlay" >"$tmp/$name.yaml"
  rendered+=("$name=$tmp/$name.yaml")
done
node "$here/validate_k8s.mjs" "${help_args[@]}" rendered "${rendered[@]}"
