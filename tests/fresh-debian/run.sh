#!/usr/bin/env bash
# Checks the two README commands where they matter most: a freshly bootstrapped
# Debian 12 (minbase) root with a clean clone of this repository. Inside the
# root, as root: `./setup.sh test` (must pass and print ctest's summary), then
# `./setup.sh demo --listen 127.0.0.1:PORT` in the background until its page
# is served. A developer machine with extra packages (a newer Node, headers)
# hides what a stock Debian lacks; this does not.
#
#   tests/fresh-debian/run.sh [--root DIR] [--port N] [--mirror URL] [--keep]
#
# Needs root (debootstrap, chroot, mounts) and about 2 GB under DIR; takes
# 10-25 minutes (apt, the build and the camera test on 2 cores). Only committed
# work is checked: the root gets a git clone of HEAD.
#
# Environment: FRESH_ROOT (default /tmp/trackd-fresh-debian), FRESH_PORT
# (default 18080), FRESH_MIRROR (default: the host's Debian apt mirror),
# FRESH_LOG (default FRESH_ROOT.log, outside the root so it outlives it).
# The root is removed when both commands pass, kept for a look when one fails
# (or always with --keep). Exit: 0 both passed, 1 one failed, 64 usage,
# 69 debootstrap or clone failed, 77 not root.
set -uo pipefail

root=${FRESH_ROOT:-/tmp/trackd-fresh-debian}
port=${FRESH_PORT:-18080}
mirror=${FRESH_MIRROR:-}
keep=0
usage() {
  echo "usage: $0 [--root DIR] [--port N] [--mirror URL] [--keep]" >&2
  exit 64
}
while [ $# -gt 0 ]; do
  case "$1" in
    --root) [ $# -ge 2 ] || usage; root=$2; shift 2 ;;
    --port) [ $# -ge 2 ] || usage; port=$2; shift 2 ;;
    --mirror) [ $# -ge 2 ] || usage; mirror=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) usage ;;
    *) echo "$0: unknown argument '$1'" >&2; usage ;;
  esac
done

repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel) || exit 64
log=${FRESH_LOG:-}
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
fresh_check_args
fresh_init
in_root_dir=/root/trackd

demo_pgid=""
stop_demo() {
  [ -n "$demo_pgid" ] || return 0
  # setsid made the demo's shell a group leader: the group holds setup.sh,
  # cmake while it builds, and trackd.
  kill -TERM -- "-$demo_pgid" 2>/dev/null
  for _ in $(seq 50); do
    kill -0 -- "-$demo_pgid" 2>/dev/null || break
    sleep 0.2
  done
  kill -KILL -- "-$demo_pgid" 2>/dev/null
  demo_pgid=""
}

cleanup() {
  stop_demo
  unmount_all
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- a fresh root --------------------------------------------------------------
fresh_bootstrap git,ca-certificates,sudo,curl

head=$(git -C "$repo" rev-parse HEAD)
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  say "note: $repo has uncommitted changes; only the commit is checked"
fi
say "cloning $repo at $(git -C "$repo" log -1 --format='%h %s' HEAD)"
if ! quiet git clone --no-hardlinks --no-checkout "$repo" "$root/root/trackd" ||
  ! quiet git -C "$root/root/trackd" checkout --detach "$head"; then
  say "FAIL: git clone failed (see $log)"
  exit 69
fi

fresh_mount

# --- ./setup.sh test -------------------------------------------------------------
say "running ./setup.sh test in the root (10-25 min; tail -f $log)"
start=$(date +%s)
test_out=$root.test.out
in_root './setup.sh test' 2>&1 | tee "$test_out" >>"$log"
test_rc=${PIPESTATUS[0]}
test_s=$(($(date +%s) - start))
ctest_summary=$(grep -E '^[0-9]+% tests passed' "$test_out" | tail -n 1)
ctest_failed=$(sed -n '/^The following tests FAILED:/,/^Errors while running/p' "$test_out" |
  grep -vE '^(The following|Errors while)')
# A skipped test counts as passed for ctest; list skips, since a browser or
# camera test skipped in a fresh root is exactly what this is here to catch.
ctest_skipped=$(sed -n '/^The following tests did not run:/,/^$/p' "$test_out" |
  grep -vE '^(The following|$)')
if [ "$test_rc" = 0 ] && [ -n "$ctest_summary" ]; then test_result=PASS; else test_result=FAIL; fi

# --- ./setup.sh demo -------------------------------------------------------------
say "running ./setup.sh demo --listen 127.0.0.1:$port in the root"
demo_result=FAIL
demo_s=""
demo_why="no page within 600 s"
demo_out=$root.demo.out
if curl -s -o /dev/null "http://127.0.0.1:$port/"; then
  demo_why="something already answers on 127.0.0.1:$port (choose another --port)"
else
  rm -f "$root/tmp/demo.pid"
  start=$(date +%s)
  # setsid: its own process group, so the whole demo stops by one id.
  setsid chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash -c "echo \$\$ >/tmp/demo.pid; cd /root/trackd && exec ./setup.sh demo --listen 127.0.0.1:$port" \
    >"$demo_out" 2>&1 </dev/null &
  demo_pid=$!
  for _ in $(seq 50); do
    [ -s "$root/tmp/demo.pid" ] && break
    sleep 0.1
  done
  demo_pgid=$(cat "$root/tmp/demo.pid" 2>/dev/null || echo "$demo_pid")
  # The first start installs and builds; allow it ten minutes.
  while [ $(($(date +%s) - start)) -lt 600 ]; do
    # trackd's own page, not whatever else might answer on the port.
    if in_root "curl -sf -o /tmp/page.html http://127.0.0.1:$port/ && grep -q '<title>trackd</title>' /tmp/page.html" 2>/dev/null; then
      demo_s=$(($(date +%s) - start))
      demo_result=PASS
      break
    fi
    kill -0 -- "-$demo_pgid" 2>/dev/null || break
    sleep 1
  done
  demo_alive=0
  kill -0 -- "-$demo_pgid" 2>/dev/null && demo_alive=1
  stop_demo
  wait "$demo_pid" 2>/dev/null
  demo_rc=$?
  [ "$demo_result" = PASS ] || [ "$demo_alive" = 1 ] || demo_why="it exited $demo_rc"
  cat "$demo_out" >>"$log"
fi

# --- summary -----------------------------------------------------------------------
{
  echo "================ fresh Debian 12 check of $(git -C "$repo" log -1 --format='%h %s' "$head")"
  echo "./setup.sh test: $test_result (exit $test_rc, ${test_s} s)"
  echo "  ctest: ${ctest_summary:-no ctest summary printed}"
  [ -n "$ctest_failed" ] && echo "$ctest_failed" | sed 's/^[[:space:]]*/  failed: /'
  [ -n "$ctest_skipped" ] && echo "$ctest_skipped" | sed 's/^[[:space:]]*/  skipped: /'
  if [ "$demo_result" = PASS ]; then
    echo "./setup.sh demo: PASS (page served ${demo_s} s after start; the test command had built it)"
  else
    echo "./setup.sh demo: FAIL ($demo_why; last lines:)"
    tail -n 15 "$demo_out" 2>/dev/null | sed 's/^/  /'
  fi
  if [ "$test_result" != PASS ]; then
    echo "last lines of ./setup.sh test:"
    tail -n 25 "$test_out" | sed 's/^/  /'
  fi
  echo "log: $log"
} | tee -a "$log"

cleanup
if [ "$test_result" = PASS ] && [ "$demo_result" = PASS ]; then
  if [ "$keep" = 0 ]; then
    rm -rf --one-file-system "$root" "$test_out" "$demo_out"
  fi
  exit 0
fi
echo "root kept for a look: $root (chroot $root /bin/bash)" | tee -a "$log"
exit 1
