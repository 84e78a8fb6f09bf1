#!/usr/bin/env bash
# Builds the importable Python client package: OUT_DIR/sparrow_client/ = the sources of
# python/sparrow_client/ plus the gRPC stubs of proto/sparrow/v1/*.proto in its _proto/.
# Usage: python/gen_stubs.sh OUT_DIR      then: PYTHONPATH=OUT_DIR /usr/bin/python3
# Needs protoc and Debian's grpc_python_plugin (protobuf-compiler-grpc).
set -euo pipefail
if [[ $# -ne 1 ]]; then
  echo "usage: $0 OUT_DIR" >&2
  exit 2
fi
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
plugin=/usr/bin/grpc_python_plugin
for tool in protoc "$plugin"; do
  if ! command -v "$tool" > /dev/null; then
    echo "$0: $tool not found (apt-get install protobuf-compiler protobuf-compiler-grpc)" >&2
    exit 1
  fi
done
pkg="$out/sparrow_client"
if [[ $pkg -ef $repo/python/sparrow_client ]]; then
  echo "$0: OUT_DIR must not be python/ (the sources would be replaced)" >&2
  exit 2
fi
rm -rf "$pkg"
mkdir -p "$pkg/_proto"
cp "$repo"/python/sparrow_client/*.py "$pkg/"
cd "$repo"
protoc -I proto --python_out="$pkg/_proto" --grpc_out="$pkg/_proto" \
  --plugin=protoc-gen-grpc="$plugin" proto/sparrow/v1/*.proto
