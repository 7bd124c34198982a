#!/bin/bash
# The fused kernel's build-time knobs (gpu/cuda/tuning.cuh: TRK_FUSED_THREADS,
# _MIN_BLOCKS, _TABLES, _PRELOAD, _FLUSH, _ACC32) measured side by side on the GPU
# machine: each configuration is built GPU-only in its own directory (all in
# parallel, -j4 each), then the fused kernel benchmark runs alternating
# configurations (each result checked against the CPU truth by trackd-bench
# itself), PASSES passes, one line per case and configuration; then
# test_cuda_exact --quick (CUDA == cpu-ref, moments included, every format,
# ROIs, dense and half-dense scenes) once per configuration, and for those with
# TRK_FUSED_ACC32=1 also test_cuda_moments (8K: a whole-frame object, the 32-bit
# sums' worst case, where the launch takes extra blocks). Usage, through the
# device tool:
#   run: tests/gpu/kernel_knobs.sh [passes [NAME=DEFS ...]]     (logs in $OUT)
# DEFS: space-separated -D flags (quote the pair), e.g.
#   tests/gpu/kernel_knobs.sh 2 base= "t1024=-DTRK_FUSED_THREADS=1024 -DTRK_FUSED_MIN_BLOCKS=1"
# Default: the five configurations of gpu/cuda/NOTES.md ("Kernel knobs"): main's
# kernel, the 32-bit sums alone, with the summaries-only table copy, with each
# unit's pixels loaded one unit ahead, and all of these with the last-warp
# flush on 1024-thread blocks.
# With OLD=<source tree> (e.g. .carry/old, a `git archive` of main carried to
# the device) that tree is built and run too, as configuration "old", so the
# default knobs can be checked against the tree before them in the same call.
# STAGES (default "build bench test") splits the work over calls of the device
# tool if one would run too long: the builds stay in build-knobs/ (KNOBS_DIR;
# an ignored path, kept between calls on a warm machine), e.g.
#   STAGES=build tests/gpu/kernel_knobs.sh; STAGES="bench test" tests/gpu/kernel_knobs.sh
# SCENES=standard,dense adds issue 14's dense scene (every pixel in every
# object) to each benchmark run (default: standard).
# Exit status: non-zero when a build, a benchmark's check or an equality test
# failed.
set -u
PASSES=${1:-2}
shift $(($# > 0 ? 1 : 0))
if [ $# -eq 0 ]; then
  A="-DTRK_FUSED_ACC32=1"
  set -- "base=" "acc32=$A" "acc32-tab1=$A -DTRK_FUSED_TABLES=1" \
    "acc32-pipe=$A -DTRK_FUSED_PRELOAD=3" \
    "all=$A -DTRK_FUSED_TABLES=1 -DTRK_FUSED_PRELOAD=3 -DTRK_FUSED_FLUSH=1 -DTRK_FUSED_THREADS=1024 -DTRK_FUSED_MIN_BLOCKS=1"
fi
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
ROOT=${KNOBS_DIR:-$PWD/build-knobs}
STAGES=${STAGES:-build bench test}
on() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
rc=0
names=()
declare -A defs
acc32() { case " $1 " in *" -DTRK_FUSED_ACC32=1 "*) return 0 ;; esac; return 1; }
build() { # NAME DEFS [SRC]
  local d=$ROOT/$1 t="trackd-bench test_cuda_exact"
  acc32 "$2" && t="$t test_cuda_moments"
  cmake -S "${3:-.}" -B "$d" -DTRK_GPU_ONLY=ON -DTRK_WERROR=ON "-DCMAKE_CUDA_FLAGS=$2" > "$OUT/build-$1.log" 2>&1 &&
    cmake --build "$d" -j4 --target $t >> "$OUT/build-$1.log" 2>&1 ||
    { echo "$1: build failed"; tail -20 "$OUT/build-$1.log"; }
}
t0=$SECONDS
if [ -n "${OLD:-}" ]; then
  names+=(old)
  on build && build old "" "$OLD" &
fi
for c in "$@"; do
  names+=("${c%%=*}")
  defs[${c%%=*}]=${c#*=}
  on build && build "${c%%=*}" "${c#*=}" &
done
wait
on build && echo "-- built in $((SECONDS - t0)) s"
ok=()
for n in "${names[@]}"; do
  if [ -x "$ROOT/$n/bench/trackd-bench" ] && [ -x "$ROOT/$n/tests/gpu/test_cuda_exact" ]; then
    ok+=("$n")
  else
    echo "$n: not built, left out"; rc=1
  fi
done
bench() { # NAME PASS: the fused kernel, one line per case
  local B=$ROOT/$1/bench/trackd-bench
  $B --experiment cuda-kernels --scenes "${SCENES:-standard}" --sizes 1920x1080,3840x2160 --objects 8,128 --formats rgb24,nv12 \
    --variants fused --truth cpu --iters 200 --warmup 20 > "$OUT/raw-$1-$2.txt" 2>&1 ||
    { echo "$1: trackd-bench failed (a MISMATCH?)"; grep -i mismatch "$OUT/raw-$1-$2.txt" | head -3; rc=1; }
  # A scene other than the standard one has its name as a third word.
  awk -v c="$1" '/ fused /{o = $4 == "fused" ? 0 : 1; print c, $1, $2, o ? $3 : "standard",
    $(3 + o), "kernel_us", $(5 + o), "dev_us", $(13 + o), "pin_us", $(15 + o)}' "$OUT/raw-$1-$2.txt"
}
on bench || PASSES=0
for p in $(seq 1 "$PASSES"); do
  echo "-- pass $p ($((SECONDS - t0)) s)"
  for n in ${ok[@]+"${ok[@]}"}; do
    bench "$n" "$p" > "$OUT/lines-$n-$p.txt"
    tee -a "$OUT/knobs.txt" < "$OUT/lines-$n-$p.txt"
  done
done
on test || { echo "-- done in $((SECONDS - t0)) s"; exit $rc; }
# Equality, all configurations at once (correctness only: they share the GPU).
echo "-- test_cuda_exact --quick ($((SECONDS - t0)) s)"
pids=()
mpids=()
for n in ${ok[@]+"${ok[@]}"}; do
  "$ROOT/$n/tests/gpu/test_cuda_exact" --quick > "$OUT/exact-$n.log" 2>&1 &
  pids+=($!)
  if acc32 "${defs[$n]:-}"; then
    "$ROOT/$n/tests/gpu/test_cuda_moments" > "$OUT/moments-$n.log" 2>&1 &
    mpids+=("$n:$!")
  fi
done
for i in ${ok[@]+"${!ok[@]}"}; do
  wait "${pids[$i]}"
  e=$?
  n=${ok[$i]}
  echo "$n: test_cuda_exact --quick rc=$e $(grep -cE 'MISMATCH' "$OUT/exact-$n.log") mismatch lines; $(tail -1 "$OUT/exact-$n.log")"
  [ "$e" -eq 0 ] || rc=1
done
for m in ${mpids[@]+"${mpids[@]}"}; do
  wait "${m#*:}"
  e=$?
  echo "${m%%:*}: test_cuda_moments rc=$e; $(tail -1 "$OUT/moments-${m%%:*}.log")"
  [ "$e" -eq 0 ] || rc=1
done
echo "-- done in $((SECONDS - t0)) s"
exit $rc
