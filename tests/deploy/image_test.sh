#!/usr/bin/env bash
# image_test.sh: builds the cpu image of deploy/docker/Dockerfile with buildah
# on a Debian 12 base made here with debootstrap (no Docker engine, no
# registry), runs pricerd from it, and checks it against a native pricerd:
# the image's configuration (non-root user, ports, volume, HEALTHCHECK,
# STOPSIGNAL, version label), `pricerd --version`, no missing library, health
# from the image's and the native CLI, /metrics, byte-identical results for
# one request, a writable scenario volume, and exit 0 within a few seconds of
# SIGTERM. hadolint checks the Dockerfile. About 3.5 minutes cold on 2 cores
# (debootstrap, apt, compile), about 1 minute warm (every layer cached).
#
# Needs root (debootstrap, buildah --isolation chroot; exit 77, skipped,
# otherwise), buildah, debootstrap, python3-venv (scripts/install-deps.sh) and
# the native binaries of a build tree.
#
# Environment:
#   BUILD_DIR           build tree with the native binaries (default: build)
#   PRICERD, PRICER     the native binaries (default: BUILD_DIR/server/pricerd,
#                       BUILD_DIR/client/pricer)
#   PRICER_IMAGE_CACHE  kept between runs (default: ~/.cache/pricer/image-cache,
#                       under XDG_CACHE_HOME when set, so that a fresh clone
#                       on the same machine reuses an earlier run's layers,
#                       as its compiles reuse ccache's): the
#                       base rootfs tarball, buildah's vfs storage (storage/,
#                       so the host's /var/lib/containers is not touched), the
#                       tools venv, the logs
#   PRICER_TOOLS_VENV   a venv made by scripts/deploy-tools.sh (default:
#                       PRICER_IMAGE_CACHE/tools-venv, made here)
#   PRICER_DEBIAN_MIRROR  the Debian mirror (default: the one of this host's apt
#                       sources, else http://deb.debian.org/debian)
set -euo pipefail

if [[ $(id -u) -ne 0 ]]; then
  echo "image_test: skipped: needs root (debootstrap, buildah --isolation chroot)"
  exit 77
fi

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
build_dir=$(realpath -m "${BUILD_DIR:-build}")
cache=$(realpath -m "${PRICER_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pricer/image-cache}")
native_pricerd=$(realpath -m "${PRICERD:-$build_dir/server/pricerd}")
native_pricer=$(realpath -m "${PRICER:-$build_dir/client/pricer}")
tools_venv=${PRICER_TOOLS_VENV:-$cache/tools-venv}
base_image=localhost/pricer-base:bookworm
image=localhost/pricer:cpu
builder_image=localhost/pricer-builder:cpu

fail() {
  echo "image_test: FAIL: $*" >&2
  exit 1
}
for tool in buildah debootstrap python3; do
  command -v "$tool" > /dev/null || fail "$tool is missing (scripts/install-deps.sh installs it)"
done
for binary in "$native_pricerd" "$native_pricer"; do
  [[ -x $binary ]] || fail "no native binary $binary (build first, or set BUILD_DIR, PRICERD, PRICER)"
done

mkdir -p "$cache/logs"
work=$(mktemp -d)
export STORAGE_DRIVER=vfs
buildah=(buildah --root "$cache/storage" --runroot "$cache/run" --storage-driver vfs)
bh() { "${buildah[@]}" "$@"; }
# descendant PID NAME: the process NAME below PID (`buildah run` starts
# buildah-chroot-runtime, which starts buildah-chroot-exec, which starts it).
descendant() {
  local child found
  for child in $(pgrep -P "$1" || true); do
    if [[ $(ps -o comm= -p "$child") == "$2" ]]; then
      echo "$child"
      return 0
    fi
    if found=$(descendant "$child" "$2"); then
      echo "$found"
      return 0
    fi
  done
  return 1
}
containers=()
pids=()
image_run_pid=
cleanup() {
  local pid container
  if [[ -n $image_run_pid ]] && pid=$(descendant "$image_run_pid" pricerd); then kill -KILL "$pid"; fi
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2> /dev/null || true; done
  for container in "${containers[@]}"; do bh rm "$container" > /dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

start=$SECONDS
step() { printf 'image_test: [%4ds] %s\n' $((SECONDS - start)) "$*"; }

# --- hadolint ----------------------------------------------------------------
step "hadolint deploy/docker/Dockerfile"
if [[ ! -x $tools_venv/bin/hadolint ]]; then
  scripts/deploy-tools.sh "$tools_venv" > "$cache/logs/tools-venv.log" 2>&1 \
    || { cat "$cache/logs/tools-venv.log"; fail "scripts/deploy-tools.sh $tools_venv"; }
fi
"$tools_venv/bin/hadolint" deploy/docker/Dockerfile || fail "hadolint deploy/docker/Dockerfile"
hadolint_result="passed ($("$tools_venv/bin/hadolint" --version | grep -o '[0-9][0-9.]*' | head -1))"

# --- the base image: debootstrap --variant=minbase bookworm --------------------
debian_mirror() {
  local mirror
  mirror=$(sed -n 's|^URIs: *\(https\?://[^ ]*/debian\)/\?$|\1|p' /etc/apt/sources.list.d/*.sources \
    2> /dev/null | head -1 || true)
  if [[ -z $mirror ]]; then
    mirror=$(sed -n 's|^deb \(\[[^]]*\] \)\?\(https\?://[^ ]*/debian\)/\? bookworm .*|\2|p' \
      /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2> /dev/null | head -1 || true)
  fi
  echo "${mirror:-http://deb.debian.org/debian}"
}
mirror=${PRICER_DEBIAN_MIRROR:-$(debian_mirror)}
base_tar=$cache/base/bookworm-minbase.tar
if [[ ! -f $base_tar ]]; then
  step "debootstrap --variant=minbase bookworm from $mirror"
  rootfs=$cache/base/rootfs
  rm -rf "$rootfs" && mkdir -p "$rootfs"
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror" > "$cache/logs/debootstrap.log" 2>&1 \
    || { tail -20 "$cache/logs/debootstrap.log"; fail "debootstrap"; }
  # Made like debian:bookworm-slim: the updates and security suites, no
  # documentation, man pages or translations, no apt caches.
  rm -f "$rootfs/etc/apt/sources.list"
  cat > "$rootfs/etc/apt/sources.list.d/debian.sources" << EOF
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${mirror%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  cat > "$rootfs/etc/dpkg/dpkg.cfg.d/slim" << 'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
  find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  rm -rf "$rootfs"/usr/share/{man,groff,info,lintian}/* "$rootfs"/var/cache/apt/*.bin \
    "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
  tar -C "$rootfs" --numeric-owner -cf "$base_tar.tmp" . && mv "$base_tar.tmp" "$base_tar"
  rm -rf "$rootfs"
fi
if ! bh inspect --type image "$base_image" > /dev/null 2>&1; then
  step "import the base as $base_image"
  container=$(bh from scratch)
  containers+=("$container")
  bh add "$container" "$base_tar" / > /dev/null
  bh config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd /bin/bash "$container"
  bh commit -q "$container" "$base_image" > /dev/null
fi

# --- build ----------------------------------------------------------------------
version=$(sed -n 's/^project(pricer VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
build_log=$cache/logs/build-cpu.log
bud() {
  bh bud --isolation chroot --layers --force-rm --format docker \
    --build-arg BASE_IMAGE="$base_image" \
    -f deploy/docker/Dockerfile "$@" . >> "$build_log" 2>&1 \
    || { tail -40 "$build_log"; fail "buildah bud $* (log: $build_log)"; }
}
step "buildah bud the cpu image (log: $build_log)"
: > "$build_log"
build_start=$SECONDS
# The builder stage is tagged too, so that pruning below keeps its cached
# layers and drops only those of earlier sources.
bud --target builder -t "$builder_image"
bud -t "$image"
build_seconds=$((SECONDS - build_start))
bh rmi --prune > /dev/null 2>&1 || true
image_size=$(bh images --format '{{.Size}}' "$image")
step "built $image: $image_size in ${build_seconds} s"

# --- run --------------------------------------------------------------------------
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
container=$(bh from "$image")
containers+=("$container")
# OpenBLAS chooses its kernels by CPU unless OPENBLAS_CORETYPE names one, and
# kernels round differently: both servers get this environment's OPENBLAS_*.
openblas_env=()
while IFS= read -r name; do
  openblas_env+=(--env "$name=${!name}")
done < <(compgen -e | grep '^OPENBLAS_' || true)
in_image() {
  bh run --isolation chroot --network host "${openblas_env[@]}" "$container" -- "$@"
}

uid=$(in_image id -u)
[[ $uid != 0 ]] || fail "the image runs as root"
image_version=$(in_image pricerd --version)
[[ $image_version == "pricerd $version "* ]] || fail "pricerd --version in the image: '$image_version'"
# The image's configuration, as Docker and Kubernetes read it; prints the entrypoint.
entrypoint=$(bh inspect --type image "$image" | python3 -c '
import json, sys
config = json.load(sys.stdin)["Docker"]["config"]
want = {
    "User": "10001:10001",
    "StopSignal": "SIGTERM",
    "ExposedPorts": {"50051/tcp": {}, "9464/tcp": {}},
    "Volumes": {"/var/lib/pricer/scenarios": {}},
    "Healthcheck.Test": ["CMD", "pricer", "health", "--target", "127.0.0.1:50051"],
    "Labels.org.opencontainers.image.version": sys.argv[1],
}
for key, value in want.items():
    field, _, sub = key.partition(".")
    got = config.get(field) if not sub else (config.get(field) or {}).get(sub)
    if got != value:
        sys.exit(f"image config {key} is {got!r}, not {value!r}"
                 + (" (ARG VERSION in deploy/docker/Dockerfile)" if "version" in key else ""))
env = dict(e.split("=", 1) for e in config["Env"])
for name in ("PRICER_LISTEN", "PRICER_METRICS_LISTEN", "PRICER_SCENARIO_DIR"):
    if name not in env:
        sys.exit(f"image config Env has no {name}")
print(" ".join(config["Entrypoint"]))
' "$version") || fail "the image's configuration"
libraries=$(in_image ldd /opt/pricer/bin/pricerd /opt/pricer/bin/pricer)
! grep 'not found' <<< "$libraries" || fail "libraries missing in the image"
step "in the image: uid $uid, $image_version, no library missing, entrypoint $entrypoint"

# wait_serving CLI... TARGET: until `pricer health` exits 0 (30 s at most).
wait_serving() {
  local target=${*: -1} i
  for ((i = 0; i < 150; i++)); do
    if "${@:1:$#-1}" health --target "$target" > /dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  return 1
}
port=$(free_port)
metrics_port=$(free_port)
# The image's entrypoint configured by environment, as `docker run -e` does
# (PRICER_SCENARIO_DIR is the image's). Not through in_image, so that $! is
# buildah's pid.
read -r -a entrypoint_words <<< "$entrypoint"
"${buildah[@]}" run --isolation chroot --network host "${openblas_env[@]}" \
  --env PRICER_LISTEN="127.0.0.1:$port" --env PRICER_METRICS_LISTEN="127.0.0.1:$metrics_port" \
  --env PRICER_DEVICES=cpu --env PRICER_DEVICE_MEMORY=1GiB "$container" -- "${entrypoint_words[@]}" \
  > "$cache/logs/pricerd-image.log" 2>&1 < /dev/null &
image_run_pid=$!
pids+=("$image_run_pid")
native_port=$(free_port)
native_metrics_port=$(free_port)
"$native_pricerd" --listen "127.0.0.1:$native_port" --metrics-listen "127.0.0.1:$native_metrics_port" \
  --scenario-dir "$work/native-scenarios" --devices cpu --device-memory 1GiB \
  > "$cache/logs/pricerd-native.log" 2>&1 < /dev/null &
native_pid=$!
pids+=("$native_pid")

wait_serving "$native_pricer" "127.0.0.1:$port" \
  || { cat "$cache/logs/pricerd-image.log"; fail "pricerd in the image is not serving"; }
in_image pricer health --target "127.0.0.1:$port" > /dev/null || fail "pricer health from the image"
wait_serving "$native_pricer" "127.0.0.1:$native_port" \
  || { cat "$cache/logs/pricerd-native.log"; fail "the native pricerd is not serving"; }
python3 -c 'import sys, urllib.request; sys.exit("pricer_build_info" not in
  urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
  "http://127.0.0.1:$metrics_port/metrics" || fail "no pricer_build_info on the image's /metrics"
step "pricerd in the image on 127.0.0.1:$port serving (health from the image's and the native CLI, /metrics)"

request=(--issuers 20 --paths 2000 --scenarios 3000 --seed 5 --rate 0.02 --stats "mean,stddev,var:0.99")
"$native_pricer" price --target "127.0.0.1:$port" "${request[@]}" \
  --full-out "$work/image.npy" --stats-out "$work/image.csv" > "$work/image.out" \
  || fail "pricing through the image's pricerd"
"$native_pricer" price --target "127.0.0.1:$native_port" "${request[@]}" \
  --full-out "$work/native.npy" --stats-out "$work/native.csv" > "$work/native.out" \
  || fail "pricing through the native pricerd"
identical=yes
cmp "$work/image.npy" "$work/native.npy" || identical=no
cmp "$work/image.csv" "$work/native.csv" || identical=no
[[ $identical == yes ]] || fail "the image's results differ from the native ones"
step "price ${request[*]}: full SC and statistics byte-identical"

# An uploaded scenario set lands in the scenario volume, written as the image's user.
set_id=$("$native_pricer" upload --target "127.0.0.1:$port" "$work/image.npy" 2> "$work/upload.err")
[[ -n $set_id ]] || fail "pricer upload printed no id"
stored=$(in_image ls -A /var/lib/pricer/scenarios)
[[ -n $stored ]] || fail "upload $set_id left nothing in PRICER_SCENARIO_DIR"
step "upload $set_id stored in the scenario volume"

# SIGTERM to pricerd itself, as `docker stop` sends it (chroot isolation
# shares the host's PID namespace; buildah run, signalled, would kill it): it
# drains, exits 0, and buildah run returns that status.
image_pricerd=$(descendant "$image_run_pid" pricerd) || fail "no pricerd below buildah run ($image_run_pid)"
kill -TERM "$image_pricerd"
drain_start=$SECONDS
drain_code=0
timeout 20 tail --pid="$image_run_pid" -f /dev/null || fail "pricerd still running 20 s after SIGTERM"
wait "$image_run_pid" || drain_code=$?
image_run_pid=
drain_seconds=$((SECONDS - drain_start))
((drain_code == 0)) || { tail -5 "$cache/logs/pricerd-image.log"; fail "pricerd exited $drain_code after SIGTERM"; }
((drain_seconds <= 10)) || fail "pricerd took $drain_seconds s to drain an idle server"
kill -TERM "$native_pid"
wait "$native_pid" || fail "the native pricerd exited $? after SIGTERM"
pids=()
step "SIGTERM: pricerd in the image exited $drain_code after ${drain_seconds} s"

printf '\nimage_test: summary\n'
printf '  %-22s %s\n' \
  base "$base_image (debootstrap minbase, $mirror)" \
  image "$image" \
  "image size" "$image_size" \
  "build seconds" "$build_seconds" \
  "result identical" "$identical" \
  "drain exit code" "$drain_code" \
  hadolint "$hadolint_result" \
  "total seconds" "$((SECONDS - start))"
echo "image_test: PASS"
