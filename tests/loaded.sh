#!/bin/sh
# Runs ctest while the machine is busy: a CI box shares its cores, and a test
# that only passes on an idle machine is a flaky test. Starts BUSY shell busy
# loops (default 2 per core), runs ctest with the given arguments, and always
# stops the loops again (normal end, failure, Ctrl-C or kill).
#
#   tests/loaded.sh [BUILD_DIR] [ctest arguments...]
#
# BUILD_DIR defaults to ./build; BUSY=n overrides the number of loops. Exits
# with ctest's status (64 on a usage error).
set -u
build=build
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
    build=$1
    shift
fi
if [ ! -f "$build/CTestTestfile.cmake" ]; then
    echo "loaded.sh: $build is not a ctest build directory (usage: $0 [BUILD_DIR] [ctest args])" >&2
    exit 64
fi
busy=${BUSY:-$((2 * $(nproc)))}
case $busy in
'' | *[!0-9]*)
    echo "loaded.sh: BUSY must be a number, not '$busy'" >&2
    exit 64
    ;;
esac

pids=""
ctest_pid=""
stop_busy() {
    # Only what was started here, by process id: the loops, and ctest when
    # the script itself is being stopped.
    [ -n "$ctest_pid" ] && kill "$ctest_pid" 2>/dev/null
    for p in $pids; do kill "$p" 2>/dev/null; done
    for p in $pids; do wait "$p" 2>/dev/null; done
    pids=""
}
trap stop_busy EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

i=0
while [ "$i" -lt "$busy" ]; do
    sh -c 'while :; do :; done' &
    pids="$pids $!"
    i=$((i + 1))
done
echo "loaded.sh: $busy busy loops on $(nproc) cores (pids$pids)"
# In the background so that a signal to this script is handled at once
# (wait returns), not after the whole suite.
ctest --test-dir "$build" "$@" &
ctest_pid=$!
wait "$ctest_pid"
rc=$?
ctest_pid=""
stop_busy
echo "loaded.sh: busy loops stopped; ctest exit $rc"
exit $rc
