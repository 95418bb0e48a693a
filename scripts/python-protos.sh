#!/usr/bin/env bash
# The generated modules of the Python client, client/python/pricer_client/_proto/:
# pricer_pb2.py (with its .pyi), pricer_pb2_grpc.py, devices_pb2.py, statistics_pb2.py, book_pb2.py,
# shared_memory_pb2.py and client_protocol_pb2.py from proto/pricer/v1/, their imports moved from
# `pricer.v1` into `pricer_client._proto` so that the package needs nothing
# else on sys.path (and no top-level `pricer` module, a name PyPI gives to
# another project).
#
# They are committed, made by Debian 12's protoc 3.21.12 and grpc_python_plugin
# 1.51: protoc 3.20 is the oldest that writes the builder-style code which both
# Debian's python3-protobuf 4.21 and the newest protobuf from PyPI accept, while
# grpcio-tools from PyPI writes code that refuses any protobuf runtime older than
# its own (and a grpcio older than its own).
#
# Usage: scripts/python-protos.sh          regenerate them in place
#        scripts/python-protos.sh --check  exit 1 when they differ from the protos
set -euo pipefail
cd "$(dirname "$0")/.."
want="libprotoc 3.21.12"
if [[ "$(protoc --version)" != "$want" ]]; then
  echo "python-protos: needs Debian 12's protoc ($want), found $(protoc --version)" >&2
  exit 2
fi
out=client/python/pricer_client/_proto
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
protoc --proto_path=proto --python_out="$tmp" --pyi_out="$tmp" \
  proto/pricer/v1/pricer.proto proto/pricer/v1/devices.proto proto/pricer/v1/statistics.proto \
  proto/pricer/v1/book.proto proto/pricer/v1/shared_memory.proto \
  proto/pricer/v1/client_protocol.proto
protoc --proto_path=proto --grpc_python_out="$tmp" \
  --plugin=protoc-gen-grpc_python="$(command -v grpc_python_plugin)" proto/pricer/v1/pricer.proto
mkdir -p "$tmp/_proto"
for f in "$tmp"/pricer/v1/*.py "$tmp"/pricer/v1/*.pyi; do
  # Only import lines: the serialized descriptors keep the package pricer.v1.
  sed -E 's/^(from|import) pricer\.v1([. ])/\1 pricer_client._proto\2/' "$f" > "$tmp/_proto/$(basename "$f")"
done
cat > "$tmp/_proto/__init__.py" <<'PY'
"""Modules generated from proto/pricer/v1/ by scripts/python-protos.sh: do not edit."""
PY
if [[ "${1:-}" == "--check" ]]; then
  if ! diff -r -u "$out" "$tmp/_proto" -x __pycache__; then
    echo "python-protos: $out differs from proto/pricer/v1/: run scripts/python-protos.sh" >&2
    exit 1
  fi
  echo "python-protos: $out matches proto/pricer/v1/"
  exit 0
fi
rm -rf "$out"
cp -r "$tmp/_proto" "$out"
echo "python-protos: wrote $out"
