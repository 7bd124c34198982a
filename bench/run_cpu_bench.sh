#!/bin/sh
# The CPU benchmark in one run: dump the standard scenes, time OpenCV's
# per-object pipeline on them, then run trackd-bench with the OpenCV numbers,
# all on the same machine one after the other (bench/README.md).
#
# usage: bench/run_cpu_bench.sh [BUILD_DIR [OUT_DIR]] [-- extra trackd-bench args]
#   BUILD_DIR  a configured and built trackd build tree (default: build)
#   OUT_DIR    where results go (default: bench-out)
# environment:
#   SIZES      e.g. 640x480,1920x1080 (default: the three standard sizes)
#   OBJECTS    e.g. 8,128 (default: 1,8,32,128,256)
#   THREADS    CPU thread counts, 0 = all cores (default: 1,0)
#   BACKENDS   default: cpu-ref,cpu
#   KEEP_SCENES=1 keeps the raw scene dumps (hundreds of MB at 4K)
# Outputs: OUT_DIR/opencv.json, OUT_DIR/bench.json, OUT_DIR/bench.txt (the table).
set -eu

BUILD=build
OUT=bench-out
if [ $# -gt 0 ] && [ "$1" != "--" ]; then BUILD=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" != "--" ]; then OUT=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" = "--" ]; then shift; fi

SIZES=${SIZES:-640x480,1920x1080,3840x2160}
OBJECTS=${OBJECTS:-1,8,32,128,256}
THREADS=${THREADS:-1,0}
BACKENDS=${BACKENDS:-cpu-ref,cpu}
BENCH=$BUILD/bench/trackd-bench
HERE=$(dirname "$0")

if [ ! -x "$BENCH" ]; then
    echo "run_cpu_bench.sh: $BENCH not found: build trackd first (cmake --build $BUILD)" >&2
    exit 2
fi
if ! /usr/bin/python3 -c 'import cv2, numpy' 2>/dev/null; then
    echo "run_cpu_bench.sh: needs Debian's python3-opencv: apt-get install -y python3-opencv" >&2
    exit 2
fi

mkdir -p "$OUT"
"$BENCH" --sizes "$SIZES" --objects "$OBJECTS" --dump-scenes "$OUT/scenes"
/usr/bin/python3 "$HERE/opencv_baseline.py" "$OUT/scenes" --threads "$THREADS" \
    --json "$OUT/opencv.json" | tee "$OUT/opencv.txt"
if [ "${KEEP_SCENES:-0}" != 1 ]; then rm -rf "$OUT/scenes"; fi
# The table streams to the terminal and to bench.txt; sh has no pipefail, so
# the tool's exit status (non-zero on any mismatch) travels through a file.
{
    status=0
    "$BENCH" --sizes "$SIZES" --objects "$OBJECTS" --backends "$BACKENDS" --threads "$THREADS" \
        --opencv "$OUT/opencv.json" --json "$OUT/bench.json" "$@" || status=$?
    echo $status > "$OUT/.bench_status"
} | tee "$OUT/bench.txt"
status=$(cat "$OUT/.bench_status")
rm -f "$OUT/.bench_status"
exit "$status"
