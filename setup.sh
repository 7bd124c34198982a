#!/usr/bin/env bash
# trackd set-up on Debian 12: installs what is missing, builds, then either
# runs the demo or runs every test.
#
#   ./setup.sh demo [trackd options]   install, build, run the demo (web UI on :8080)
#   ./setup.sh test                    install, build, run the whole test suite
#   ./setup.sh build                   install build dependencies and build only
#   ./setup.sh package                 build, then the Debian package (cpack -G DEB):
#                                      BUILD_DIR/trackd_VERSION_ARCH.deb
#
# Environment: BUILD_DIR (default ./build), JOBS (default: cores),
# CI=true builds with warnings as errors. test also builds an ASan/UBSan tree
# (SAN_BUILD_DIR, default BUILD_DIR-asan) and runs the unit, fuzz-corpus and
# attack tests there first; SANITIZE=0 skips that.
set -euo pipefail
cd "$(dirname "$0")"
mode=${1:-demo}
[ $# -gt 0 ] && shift
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}

# Debian packages: to build, and (test) what the tests drive for real.
build_pkgs=(build-essential cmake pkg-config libjansson-dev libwebsockets-dev
            libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libturbojpeg0-dev
            libsystemd-dev libmosquitto-dev liblo-dev libprotobuf-c-dev protobuf-c-compiler)
test_pkgs=(ffmpeg python3 python3-websockets chromium clang-format
           qemu-system-x86 linux-image-amd64 busybox-static v4l-utils cpio
           systemd prometheus python3-pil groff-base man-db file
           python3-opencv mosquitto python3-paho-mqtt openssl liblo-tools
           python3-protobuf protobuf-compiler)
# The Debian package: dpkg-shlibdeps (dpkg-dev, in build-essential) needs file.
package_pkgs=(file)

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
  # Prefix /usr, a Debian package's: the tree packages as it is (files that
  # name the prefix, the systemd units, say /usr/bin). `cmake --install`
  # takes --prefix for anywhere else.
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRK_WERROR=$werror \
    -DCMAKE_INSTALL_PREFIX=/usr
  cmake --build "$BUILD_DIR" -j "$JOBS"
}

# The ASan/UBSan run: host code only (no CUDA: nvcc takes no -fsanitize and
# no GPU runs it here), only the tests that need no browser or camera. Every
# report is fatal (-fno-sanitize-recover=all, halt/abort on error, leaks
# checked at exit), so a test that triggers one fails. Returns ctest's status.
sanitize() {
  local dir=${SAN_BUILD_DIR:-$BUILD_DIR-asan} werror=OFF t0=$SECONDS
  [ "${CI:-}" = true ] && werror=ON
  echo "setup.sh: ASan/UBSan build in $dir"
  # (set -e does not apply inside a function called with ||: check each step.)
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRK_CUDA=OFF -DTRK_SANITIZE=ON \
    -DTRK_WERROR=$werror || return
  cmake --build "$dir" -j "$JOBS" || return
  local rc=0
  # Left out: the two exhaustive 16.7M-colour comparisons (allcolors_*): the
  # same code as the other gpu_fast tests, over 2 minutes each under ASan.
  ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1 \
    UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1 \
    ctest --test-dir "$dir" -L 'unit|fuzz|attack' -E 'allcolors' --output-on-failure \
    --timeout 600 || rc=$?
  echo "setup.sh: ASan/UBSan run took $((SECONDS - t0)) s (build and tests), ctest status $rc"
  return $rc
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
  package)
    install_missing "${package_pkgs[@]}"
    build
    (cd "$BUILD_DIR" && cpack -G DEB)
    ;;
  test)
    install_missing "${test_pkgs[@]}"
    # Node.js for the browser test (Debian's nodejs when none is installed).
    command -v node >/dev/null && command -v npm >/dev/null || install_missing nodejs npm
    check_node
    if [ -f tests/browser/package-lock.json ]; then
      (cd tests/browser && npm ci --no-audit --no-fund --loglevel=error)
    fi
    # The Node.js example client's ws package (examples/node, pinned).
    (cd examples/node && npm ci --no-audit --no-fund --loglevel=error)
    build
    # The sanitizer run goes first so the whole suite's ctest summary comes
    # last (CI reads it); its failure is repeated below that summary.
    san=0
    [ "${SANITIZE:-1}" = 0 ] || sanitize || san=$?
    rc=0
    ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 600 || rc=$?
    if [ "$san" != 0 ]; then
      echo "setup.sh: the ASan/UBSan run failed (ctest status $san): see its summary above" >&2
      [ "$rc" != 0 ] || rc=$san
    fi
    exit $rc
    ;;
  *)
    echo "usage: $0 demo [trackd options] | test | build | package" >&2
    exit 64
    ;;
esac
