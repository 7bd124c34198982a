#!/usr/bin/env bash
# trackd set-up on Debian 12: installs what is missing, builds, then either
# runs the demo or runs every test.
#
#   ./setup.sh demo [trackd options]   install, build, run the demo (web UI on :8080)
#   ./setup.sh test                    install, build, run the whole test suite
#   ./setup.sh build                   install build dependencies and build only
#
# Environment: BUILD_DIR (default ./build), JOBS (default: cores),
# CI=true builds with warnings as errors.
set -euo pipefail
cd "$(dirname "$0")"
mode=${1:-demo}
[ $# -gt 0 ] && shift
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}

# Debian packages: to build, and (test) what the tests drive for real.
build_pkgs=(build-essential cmake pkg-config libjansson-dev libwebsockets-dev
            libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libturbojpeg0-dev)
test_pkgs=(ffmpeg python3 python3-websockets chromium clang-format
           qemu-system-x86 linux-image-amd64 busybox-static v4l-utils cpio)

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@";
  else echo "setup.sh: need root (or sudo) to install: $*" >&2; exit 1; fi
}

install_missing() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup.sh: installing ${missing[*]}"
    as_root apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
}

# The playwright-core pinned in tests/browser/package.json runs on Node.js 18
# (Debian 12's nodejs); an older node fails there with a message that never
# names this script, so say here what is wrong.
node_min=18
check_node() {
  local v
  v=$(node -p process.versions.node 2>/dev/null) || v=unknown
  if ! [ "${v%%.*}" -ge "$node_min" ] 2>/dev/null; then
    echo "setup.sh: $(command -v node) is Node.js $v; the browser tests need Node.js" \
         "$node_min or newer (Debian 12's nodejs package is 18): upgrade it or take it" \
         "off PATH so that setup.sh installs Debian's" >&2
    exit 69
  fi
}

build() {
  install_missing "${build_pkgs[@]}"
  local werror=OFF
  [ "${CI:-}" = true ] && werror=ON
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRK_WERROR=$werror
  cmake --build "$BUILD_DIR" -j "$JOBS"
}

case "$mode" in
  demo)
    build
    echo "setup.sh: starting the demo; open http://127.0.0.1:8080/ (Ctrl-C stops)"
    exec "$BUILD_DIR/daemon/trackd" "$@"
    ;;
  build)
    build
    ;;
  test)
    install_missing "${test_pkgs[@]}"
    # Node.js for the browser test (Debian's nodejs when none is installed).
    command -v node >/dev/null && command -v npm >/dev/null || install_missing nodejs npm
    check_node
    if [ -f tests/browser/package-lock.json ]; then
      (cd tests/browser && npm ci --no-audit --no-fund --loglevel=error)
    fi
    build
    ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 600
    ;;
  *)
    echo "usage: $0 demo [trackd options] | test | build" >&2
    exit 64
    ;;
esac
