#!/bin/sh
# The blobs benchmark in one run (issue 12): dump the blob scenes, time
# OpenCV's inRange + connectedComponentsWithStats on them, then run
# trackd-bench --experiment blobs with the OpenCV numbers, all on the same
# machine one after the other (bench/README.md, "The blobs experiment").
#
# usage: bench/run_blobs_bench.sh [BUILD_DIR [OUT_DIR]] [-- extra trackd-bench blobs args]
#   BUILD_DIR  a configured and built trackd build tree (default: build)
#   OUT_DIR    where results go (default: bench-out)
# environment:
#   SIZES      e.g. 1920x1080 (default: 1920x1080,3840x2160)
#   LAYOUTS    colours x blobs per colour (default: 8x16,32x4,128x1)
#   NOISE      clean, noisy (default: clean,noisy)
#   THREADS    CPU thread counts, 0 = all cores (default: 1,0)
#   BACKENDS   default: cpu,cuda (cuda rows are skipped where there is no GPU)
#   CV_VARIANTS  opencv_blobs.py --variants (default: all of them)
#   KEEP_SCENES=1 keeps the raw scene dumps (about 25 MB each at 4K)
# Outputs: OUT_DIR/opencv_blobs.{json,txt}, OUT_DIR/blobs.json, OUT_DIR/blobs.txt (the table).
set -eu

BUILD=build
OUT=bench-out
if [ $# -gt 0 ] && [ "$1" != "--" ]; then BUILD=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" != "--" ]; then OUT=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" = "--" ]; then shift; fi

SIZES=${SIZES:-1920x1080,3840x2160}
LAYOUTS=${LAYOUTS:-8x16,32x4,128x1}
NOISE=${NOISE:-clean,noisy}
THREADS=${THREADS:-1,0}
BACKENDS=${BACKENDS:-cpu,cuda}
BENCH=$BUILD/bench/trackd-bench
HERE=$(dirname "$0")

if [ ! -x "$BENCH" ]; then
    echo "run_blobs_bench.sh: $BENCH not found: build trackd first (cmake --build $BUILD)" >&2
    exit 2
fi
if ! /usr/bin/python3 -c 'import cv2, numpy' 2>/dev/null; then
    echo "run_blobs_bench.sh: needs Debian's python3-opencv: apt-get install -y python3-opencv" >&2
    exit 2
fi

mkdir -p "$OUT"
SCENES="--sizes $SIZES --layouts $LAYOUTS --noise $NOISE"
# shellcheck disable=SC2086 # SCENES is a list of options
"$BENCH" --experiment blobs $SCENES --dump-scenes "$OUT/blob-scenes"
if [ -n "${CV_VARIANTS:-}" ]; then
    /usr/bin/python3 "$HERE/opencv_blobs.py" "$OUT/blob-scenes" --threads "$THREADS" \
        --variants "$CV_VARIANTS" --json "$OUT/opencv_blobs.json" | tee "$OUT/opencv_blobs.txt"
else
    /usr/bin/python3 "$HERE/opencv_blobs.py" "$OUT/blob-scenes" --threads "$THREADS" \
        --json "$OUT/opencv_blobs.json" | tee "$OUT/opencv_blobs.txt"
fi
if [ "${KEEP_SCENES:-0}" != 1 ]; then rm -rf "$OUT/blob-scenes"; fi
# The table streams to the terminal and to blobs.txt; sh has no pipefail, so
# the tool's exit status (non-zero on any mismatch) travels through a file.
{
    status=0
    # shellcheck disable=SC2086
    "$BENCH" --experiment blobs $SCENES --backends "$BACKENDS" --threads "$THREADS" \
        --opencv-blobs "$OUT/opencv_blobs.json" --json "$OUT/blobs.json" "$@" || status=$?
    echo $status > "$OUT/.blobs_status"
} | tee "$OUT/blobs.txt"
status=$(cat "$OUT/.blobs_status")
rm -f "$OUT/.blobs_status"
exit "$status"
