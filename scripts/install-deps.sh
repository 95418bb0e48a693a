#!/usr/bin/env bash
# Installs what pricer needs to build and test on Debian 12, from Debian's
# packages only. Idempotent: when everything is present it changes nothing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libopenblas-dev liblapacke-dev libssl-dev libspdlog-dev libcli11-dev libabsl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-numpy python3-grpcio python3-grpc-tools python3-protobuf
  python3-setuptools python3-wheel
  python3-matplotlib time
  prometheus-cpp-dev prometheus openssl
  python3-yaml python3-venv buildah debootstrap iproute2
  clang-14 libclang-rt-14-dev ccache
)
# tests/deploy renders the manifests with `kubectl kustomize` (kustomize v4
# or later: kubectl 1.21+). Debian's kubernetes-client only when none is here.
command -v kubectl > /dev/null || packages+=(kubernetes-client)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
