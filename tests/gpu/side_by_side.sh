#!/bin/bash
# A restructuring that must not change speed, checked on the GPU machine: the
# previous tree (OLD, e.g. `git archive <commit>` carried to the device) and
# this one are built GPU-only side by side, then the fused kernel, blob-list
# and regional benchmarks run alternately old, new, old, new (each result
# checked against the CPU truth by trackd-bench itself). Usage, through the
# device tool:
#   run: tests/gpu/side_by_side.sh .carry/old [passes [stages]]   (logs in $OUT)
# stages: any of kernel blobs rrm cpu (default all); the kernel stage also
# gives the whole call from a device image (dev_us) and from pinned host
# memory (pin_us).
set -u
OLD=$1
PASSES=${2:-2}
STAGES=${3:-kernel blobs rrm cpu}
on() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
build() { # SRC DIR
  cmake -S "$1" -B "$2" -DTRK_GPU_ONLY=ON -DTRK_WERROR=ON > "$2.log" 2>&1 &&
    cmake --build "$2" -j8 --target trackd-bench >> "$2.log" 2>&1 || { tail -30 "$2.log"; exit 1; }
}
build "$OLD" /tmp/sbs-old &
build . /tmp/sbs-new &
wait
for tree in old new; do [ -x /tmp/sbs-$tree/bench/trackd-bench ] || { echo "$tree: no bench"; exit 1; }; done
bench() { # TREE: one pass of every benchmark, one line per case
  local B=/tmp/sbs-$1/bench/trackd-bench
  on kernel && $B --experiment cuda-kernels --sizes 1920x1080,3840x2160 --objects 8,128 \
    --formats rgb24,nv12 --variants fused --truth cpu --iters 200 --warmup 20 2>&1 | tee -a "$OUT/raw-$1.txt" |
    awk '/ fused /{print "kernel", $1, $2, $3, "kernel_us", $5, "dev_us", $13, "pin_us", $15}'
  on blobs && $B --experiment blobs --backends cuda --truth cpu --threads 0 --sizes 1920x1080 \
    --iters 20 2>&1 | awk '/ on +cuda /{print "blobs", $1, $2, $3, "median_ms", $7, "kernel", $8}'
  on rrm && $B --experiment rrm --backends cuda --sizes 1920x1080,3840x2160 --instances 8,128 \
    --rrm flat 2>&1 | awk '$4 == "cuda" {print "rrm", $1, "M=" $2, "full_ms", $7, "roi_ms", $8}'
  # The fast CPU backend (its files were split too), one thread.
  on cpu && $B --backends cpu --threads 1 --variants default --sizes 1920x1080 --objects 8,256 \
    --formats rgb24,nv12,yuyv,i420 --iters 20 2>&1 | awk '$4 == "cpu" {print "cpu", $1, $2, $3, "median_ms", $6}'
}
for p in $(seq 1 "$PASSES"); do
  for tree in old new; do
    echo "-- $tree, pass $p"
    bench $tree | tee "$OUT/$tree-$p.txt"
  done
done
