#!/usr/bin/env bash
# The Debian package where it matters: built here (./setup.sh package, from
# the working tree as it is), installed with apt into a freshly bootstrapped
# Debian 12 (minbase) root, whose apt resolves its Depends from the Debian
# archive alone (--no-install-recommends: Depends must be enough). Then, in
# the root: the trackd user and /etc/trackd the postinst made; the installed
# trackd, run as that user, on the demo scene with the page served from the
# installed web root /usr/share/trackd/web (fetched and compared byte for
# byte) and on a clip made with the host's ffmpeg; --check-config on the
# shipped examples; the man page; `systemd-analyze verify` on the installed
# units when the package has any; and apt-get purge. Prints a PASS/FAIL line
# per check and a summary.
#
#   tests/fresh-debian/package.sh [--root DIR] [--port N] [--mirror URL] [--build DIR] [--keep]
#
# Needs root (debootstrap, chroot, mounts), the host's ffmpeg and curl, and
# about 1 GB under DIR; takes 5-20 minutes (the build, apt). Environment:
# FRESH_ROOT (default /tmp/trackd-fresh-package), FRESH_PORT (default
# 18081), FRESH_MIRROR, FRESH_LOG (default ROOT.log), BUILD_DIR (default
# ./build), JOBS. The root is removed when every check passes, kept for a look
# otherwise (or always with --keep). Exit: 0 all passed, 1 a check failed,
# 64 usage, 69 the package build, debootstrap or mounts failed, 77 not root.
set -uo pipefail

root=${FRESH_ROOT:-/tmp/trackd-fresh-package}
port=${FRESH_PORT:-18081}
mirror=${FRESH_MIRROR:-}
build=${BUILD_DIR:-build}
keep=0
usage() {
  echo "usage: $0 [--root DIR] [--port N] [--mirror URL] [--build DIR] [--keep]" >&2
  exit 64
}
while [ $# -gt 0 ]; do
  case "$1" in
    --root) [ $# -ge 2 ] || usage; root=$2; shift 2 ;;
    --port) [ $# -ge 2 ] || usage; port=$2; shift 2 ;;
    --mirror) [ $# -ge 2 ] || usage; mirror=$2; shift 2 ;;
    --build) [ $# -ge 2 ] || usage; build=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) usage ;;
    *) echo "$0: unknown argument '$1'" >&2; usage ;;
  esac
done
for tool in ffmpeg curl python3; do
  command -v $tool >/dev/null || { echo "$0: needs $tool on this machine (./setup.sh test installs it)" >&2; exit 64; }
done

repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel) || exit 64
log=${FRESH_LOG:-}
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
fresh_check_args
fresh_init
case "$build" in /*) ;; *) build=$repo/$build ;; esac

demo_pid=""
stop_demo() {
  [ -n "$demo_pid" ] || return 0
  kill -TERM "$demo_pid" 2>/dev/null
  for _ in $(seq 100); do
    kill -0 "$demo_pid" 2>/dev/null || break
    sleep 0.2
  done
  kill -KILL "$demo_pid" 2>/dev/null
  wait "$demo_pid" 2>/dev/null
  demo_pid=""
}
cleanup() {
  stop_demo
  unmount_all
}
trap cleanup EXIT
trap 'exit 130' INT TERM

results=()
failed=0
# check NAME OK DETAIL: one PASS/FAIL line, now and in the summary.
check() {
  local line
  if [ "$2" = 0 ]; then line="PASS: $1"; else line="FAIL: $1"; failed=1; fi
  [ -n "${3:-}" ] && line="$line ($3)"
  results+=("$line")
  say "$line"
}

# --- the package, built here ---------------------------------------------------------
say "building the package: BUILD_DIR=$build ./setup.sh package (log: $log)"
start=$(date +%s)
if ! (cd "$repo" && BUILD_DIR=$build JOBS=${JOBS:-2} ./setup.sh package) >>"$log" 2>&1; then
  say "FAIL: ./setup.sh package failed (see $log)"
  exit 69
fi
version=$("$build/daemon/trackd" --version | awk '{ print $2 }')
deb=$build/trackd_${version}_$(dpkg --print-architecture).deb
[ -f "$deb" ] || { say "FAIL: no $deb after ./setup.sh package"; exit 69; }
cuda="CPU-only build"
grep -q '^CMAKE_CUDA_COMPILER:FILEPATH=/' "$build/CMakeCache.txt" && cuda="CUDA backend built in"
say "built $(basename "$deb") in $(($(date +%s) - start)) s from $(git -C "$repo" log -1 --format='%h %s' HEAD)$(
  [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ] && echo ' plus uncommitted changes')"
say "Depends: $(dpkg-deb -f "$deb" Depends)"

# --- a fresh root, the package installed by apt -----------------------------------------
fresh_bootstrap ca-certificates
fresh_mount
cp "$deb" "$root/tmp/"
say "apt-get install ./$(basename "$deb") in the root"
start=$(date +%s)
in_root "apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends /tmp/$(basename "$deb")" >>"$log" 2>&1
rc=$?
check "apt-get install ./$(basename "$deb") resolves its Depends from Debian 12 and installs" $rc \
  "exit $rc, $(($(date +%s) - start)) s"
if [ $rc != 0 ]; then
  tail -n 20 "$log" | sed 's/^/  /'
  echo "root kept for a look: $root (chroot $root /bin/bash)"
  exit 1
fi

out=$(in_root 'ldd /usr/bin/trackd | grep "not found"; /usr/bin/trackd --version' 2>&1)
echo "$out" | grep -q "not found"
nf=$?
[ $nf != 0 ] && [ "$out" = "trackd $version" ]
check "the installed trackd finds every library and says its version" $? "$out"

out=$(in_root 'id trackd; stat -c "%U:%G %a" /etc/trackd; dpkg-query -W -f="\${Conffiles}" trackd' 2>&1)
echo "$out" | grep -q "groups=.*(video)" && echo "$out" | grep -qx "root:trackd 2775" &&
  echo "$out" | grep -q "/etc/trackd/objects.json"
check "postinst: system user trackd in video, /etc/trackd root:trackd 2775, the conffile registered" $? \
  "$(echo "$out" | tr '\n' ';')"

# --- --check-config on what the package ships ------------------------------------------
for f in /usr/share/doc/trackd/examples/objects.example.json /usr/share/doc/trackd/examples/demo-objects.json \
  /etc/trackd/objects.json; do
  out=$(in_root "/usr/bin/trackd --check-config $f" 2>&1)
  rc=$?
  [ $rc = 0 ] && echo "$out" | grep -qE "^$f: ok, [1-9][0-9]* objects?$"
  check "trackd --check-config $f" $? "exit $rc: $out"
done
printf '{"objects": [\n  {"name": "x", "space": "rgb", "lo": [0, 0, 0], "hi": [300, 1, 1]}\n]}\n' >"$root/tmp/bad.json"
out=$(in_root "/usr/bin/trackd --check-config /tmp/bad.json" 2>&1)
rc=$?
[ $rc = 78 ] && echo "$out" | grep -q "^/tmp/bad.json:2:"
check "trackd --check-config on a broken file: 78 with file:line:col" $? "exit $rc: $out"

man=$root/usr/share/man/man1/trackd.1.gz
err=$(zcat "$man" 2>&1 | groff -ww -z -man 2>&1)
[ -f "$man" ] && [ -z "$err" ] && zcat "$man" | grep -q 'check\\-config'
check "the man page is installed and renders without a warning" $? "${err:-$man}"

# --- the installed trackd as the trackd user ---------------------------------------------
# Replaces the calling (sub)shell: chroot, env and setpriv all exec (runuser
# would stay in between), so a backgrounded `as_trackd ... &` leaves $! the
# trackd process itself, its signals and exit status trackd's. Call it in
# ( ) or with &.
as_trackd() {
  exec chroot "$root" /usr/bin/env -i HOME=/nonexistent LANG=C.UTF-8 PATH=/usr/bin:/bin \
    setpriv --reuid=trackd --regid=trackd --init-groups "$@"
}

if curl -s -o /dev/null "http://127.0.0.1:$port/"; then
  check "the demo with the installed web root" 1 "something already answers on 127.0.0.1:$port (choose another --port)"
else
  rm -f "$root/tmp/demo.ndjson"
  as_trackd /usr/bin/trackd --listen "127.0.0.1:$port" --output /tmp/demo.ndjson --stats-interval 0 \
    >"$root.demo.out" 2>&1 </dev/null &
  demo_pid=$!
  served=1
  for _ in $(seq 60); do
    if curl -sf -o /dev/null "http://127.0.0.1:$port/"; then served=0; break; fi
    kill -0 "$demo_pid" 2>/dev/null || break
    sleep 0.5
  done
  same=1
  if [ $served = 0 ]; then
    same=0
    for f in index.html main.js style.css; do
      curl -sf -o "$root/tmp/served.$f" "http://127.0.0.1:$port/$f" &&
        cmp -s "$root/tmp/served.$f" "$root/usr/share/trackd/web/$f" || { same=1; break; }
    done
  fi
  sleep 2 # some frames into the output
  kill -TERM "$demo_pid" 2>/dev/null
  wait "$demo_pid"
  demo_rc=$?
  demo_pid=""
  lines=$(wc -l <"$root/tmp/demo.ndjson" 2>/dev/null || echo 0)
  found=$(grep -c '"found":true' "$root/tmp/demo.ndjson" 2>/dev/null)
  check "the demo, run as trackd: the page is served from /usr/share/trackd/web (index.html, main.js, style.css byte-equal)" \
    $((served + same)) "$(grep -m1 -o 'web UI on [^ ]*' "$root.demo.out")"
  [ "$demo_rc" = 0 ] && [ "$lines" -gt 0 ] && [ "${found:-0}" -gt 0 ]
  check "the demo tracks (NDJSON lines with objects found) and exits 0 on SIGTERM" $? \
    "exit $demo_rc, $lines lines, $found with an object found"
  [ $((served + same)) = 0 ] && [ "$demo_rc" = 0 ] || tail -n 15 "$root.demo.out" | sed 's/^/  /'
fi

# A clip with a red box at x 100..159, y 80..119 (centre 129.5, 99.5).
clip_ok=1
if quiet ffmpeg -loglevel error -y -f lavfi -i "color=c=black:s=320x240:r=10,format=yuv420p" \
  -vf "drawbox=x=100:y=80:w=60:h=40:color=red:t=fill" -t 2 -pix_fmt yuv420p "$root/tmp/clip.mp4"; then
  (as_trackd /usr/bin/trackd --input /tmp/clip.mp4 --objects /usr/share/doc/trackd/examples/objects.example.json \
    --no-server --fast --output /tmp/clip.ndjson) >"$root.clip.out" 2>&1 </dev/null
  clip_rc=$?
  detail=$(python3 - "$root/tmp/clip.ndjson" <<'PY'
import json, sys
frames = [json.loads(l) for l in open(sys.argv[1])]
red = [o for f in frames for o in f["objects"] if o["name"] == "red"]
ok = len(frames) == 20 and len(red) == 20 and all(
    o["found"] and abs(o["cx"] - 129.5) < 2 and abs(o["cy"] - 99.5) < 2 for o in red)
print(f"{len(frames)} frames, red at {red[0]['cx']:.1f},{red[0]['cy']:.1f}" if red else f"{len(frames)} frames, no red")
sys.exit(0 if ok else 1)
PY
)
  clip_ok=$?
  [ "$clip_rc" = 0 ] || clip_ok=1
  detail="exit $clip_rc, $detail"
else
  detail="ffmpeg could not make the clip (see $log)"
fi
check "a clip, run as trackd with the shipped example objects: the red box in every frame at its centre" \
  $clip_ok "$detail"
[ $clip_ok = 0 ] || tail -n 10 "$root.clip.out" | sed 's/^/  /'

# --- systemd units ---------------------------------------------------------------------
units=$(in_root 'dpkg -L trackd | grep -E "/systemd/system/[^/]+\.service$"' 2>/dev/null)
if [ -z "$units" ]; then
  results+=("SKIP: systemd-analyze verify: the package has no systemd units (packaging/systemd not in this tree)")
  say "${results[-1]}"
else
  in_root 'DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends systemd' >>"$log" 2>&1
  names=$(for u in $units; do b=$(basename "$u"); echo "${b/@.service/@cam0.service}"; done | tr '\n' ' ')
  out=$(in_root "systemd-analyze verify $names" 2>&1)
  rc=$?
  [ $rc = 0 ] && [ -z "$out" ]
  check "systemd-analyze verify $names" $? "exit $rc${out:+: $out}"
fi

# --- removal ---------------------------------------------------------------------------
out=$(in_root 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -q trackd >/dev/null 2>&1; echo "exit $?";
  ls /usr/bin/trackd /etc/trackd /usr/share/trackd 2>&1 | grep -v "No such" ; getent passwd trackd | cut -d: -f1' 2>&1)
[ "$(echo "$out" | head -n 1)" = "exit 0" ] && [ "$(echo "$out" | sed 1d)" = trackd ]
check "apt-get purge trackd: files and /etc/trackd gone, the trackd user kept" $? "$(echo "$out" | tr '\n' ';')"

# --- summary ---------------------------------------------------------------------------
{
  echo "================ fresh Debian 12 package check: $(basename "$deb") ($cuda)"
  printf '%s\n' "${results[@]}"
  echo "log: $log"
} | tee -a "$log"
cleanup
if [ $failed = 0 ]; then
  [ "$keep" = 1 ] || rm -rf --one-file-system "$root" "$root".*.out
  exit 0
fi
echo "root kept for a look: $root (chroot $root /bin/bash)" | tee -a "$log"
exit 1
