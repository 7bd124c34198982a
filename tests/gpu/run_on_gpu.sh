#!/bin/bash
# Builds trackd's GPU-only tree on the GPU machine and runs the CUDA tests,
# sanitizers and benchmarks. Usage: tests/gpu/run_on_gpu.sh STAGE... where
# STAGE is build, test, sanitize, floor, kernels, seed, torch, bench, blobs, regions, rrmncu,
# ncu, devimg, dense, dense-off, wholecall, upload, chroma, handover.
# Logs go to $OUT (or ./gpu-out). Used through the device tool:
#   run: tests/gpu/run_on_gpu.sh build test kernels
set -u
OUT=${OUT:-$PWD/gpu-out}
FINAL=$OUT
OUT=$FINAL/logs  # everything goes here, then into one archive (the device
mkdir -p "$OUT"  # tool brings back at most 8 files)
B=build-gpu
BENCH=$B/bench/trackd-bench
rc=0
for stage in "$@"; do
  echo "=== $stage $(date +%T)"
  case $stage in
    build)
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv | tee "$OUT/gpu.txt"
      cmake -S . -B $B -DTRK_GPU_ONLY=ON -DTRK_WERROR=ON > "$OUT/build.log" 2>&1 &&
        cmake --build $B -j16 >> "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; } ;;
    test)
      (cd $B && ctest -L gpu -E sanitize -V) > "$OUT/test.log" 2>&1 || rc=1
      grep -E "tests passed|Test +#|FAIL|MISMATCH|SKIP|cases" "$OUT/test.log" | head -20 ;;
    unit)
      (cd $B && ctest -LE "gpu|bench" --output-on-failure) > "$OUT/unit.log" 2>&1 || rc=1
      tail -5 "$OUT/unit.log" ;;
    sanitize)
      (cd $B && ctest -L sanitizer -V) > "$OUT/sanitize.log" 2>&1 || rc=1
      grep -E "ERROR SUMMARY|tests passed|Failed|Passed|RACECHECK SUMMARY" "$OUT/sanitize.log" | head -20 ;;
    floor)
      $BENCH --experiment cuda-floor --json "$OUT/floor.json" 2>&1 | tee "$OUT/floor.txt" ;;
    quick)
      $BENCH --experiment cuda-kernels --sizes 1920x1080,3840x2160 --objects 128,256 \
        --variants fused,lut --iters 30 --cold 2>&1 | tee "$OUT/quick.txt" ;;
    sweep)
      $BENCH --experiment cuda-kernels --sizes 1920x1080,3840x2160 --objects 1,8,32,128,256 \
        --variants fused --iters 30 --cold 2>&1 | tee "$OUT/sweep.txt" ;;
    torch)
      $BENCH --dump-scenes /tmp/scenes > /dev/null &&
        python3 bench/torch_baseline.py /tmp/scenes --json "$OUT/torch.json" 2>&1 | tee "$OUT/torch.txt" ;;
    kernels)
      T=""; [ -f "$OUT/torch.json" ] && T="--torch $OUT/torch.json"
      $BENCH --experiment cuda-kernels --cold $T --json "$OUT/kernels.json" 2>&1 | tee "$OUT/kernels.txt" || rc=1 ;;
    formats)
      $BENCH --experiment cuda-kernels --sizes 1920x1080 --objects 128 --variants fused \
        --formats rgb24,rgba,bgr24,yuyv,nv12,i420 --cold 2>&1 | tee "$OUT/formats.txt" || rc=1 ;;
    dense)
      # Issue 14's dense worst case (every pixel in every object) beside the
      # standard scene, fused kernel; truth from the fast CPU backend on all
      # cores (equal to cpu-ref in CI; cpu-ref would add ~2 min at 4K).
      $BENCH --experiment cuda-kernels --scenes standard,dense --sizes 1920x1080,3840x2160 \
        --objects 8,128,256 --variants fused --truth cpu --cold --json "$OUT/dense.json" 2>&1 |
        tee "$OUT/dense.txt" || rc=1 ;;
    dense-off)
      # The same with the dense path compiled out (TRK_FUSED_DENSE_MIN=33):
      # the sparse-only kernel of before, on the same device in the same session.
      cmake -S . -B $B-sparse -DTRK_GPU_ONLY=ON -DTRK_WERROR=ON \
        -DCMAKE_CUDA_FLAGS=-DTRK_FUSED_DENSE_MIN=33 > "$OUT/build-sparse.log" 2>&1 &&
        cmake --build $B-sparse -j16 --target trackd-bench >> "$OUT/build-sparse.log" 2>&1 ||
        { tail -30 "$OUT/build-sparse.log"; exit 1; }
      $B-sparse/bench/trackd-bench --experiment cuda-kernels --scenes standard,dense \
        --sizes 1920x1080,3840x2160 --objects 8,128,256 --variants fused --truth cpu --cold \
        --json "$OUT/dense-off.json" 2>&1 | tee "$OUT/dense-off.txt" || rc=1 ;;
    wholecall)
      # Issue 14's whole-call targets: trk_backend_process from a device image
      # (NVDEC layout, dev_us), pinned trk_backend_host_alloc memory (pin_us,
      # x up+k = pin_us / (upload_us + kernel)) and malloc'ed memory (page_us),
      # beside the kernel and upload, every result against cpu-ref.
      $BENCH --experiment cuda-kernels --sizes 1920x1080,3840x2160 --objects 8,128 \
        --formats rgb24,nv12 --variants fused --iters 200 --warmup 20 \
        --json "$OUT/wholecall.json" 2>&1 | tee "$OUT/wholecall.txt" || rc=1 ;;
    upload)
      # Where a pinned whole call's time goes (issue 14's <= 1.1x (upload + kernel)):
      # the copy alone (1d, and 2d per plane as the backend issues it), the
      # call by band count, back to back and paced like a 60 fps camera.
      $BENCH --experiment cuda-upload --iters 100 2>&1 | tee "$OUT/upload.txt" || rc=1 ;;
    chroma)
      # 4:2:0 chroma loads cached three ways (TRK_FUSED_CHROMA_LOAD 0 = __ldg,
      # 1 = __ldcg, 2 = __ldca), pinned frames read in place: NV12 / I420.
      for c in 0 1 2; do
        if [ $c = 0 ]; then BB=$B; else
          BB=$B-chroma$c
          cmake -S . -B $BB -DTRK_GPU_ONLY=ON -DTRK_WERROR=ON \
            -DCMAKE_CUDA_FLAGS=-DTRK_FUSED_CHROMA_LOAD=$c > "$OUT/build-chroma$c.log" 2>&1 &&
            cmake --build $BB -j16 --target trackd-bench test_cuda_pinned >> "$OUT/build-chroma$c.log" 2>&1 ||
            { tail -30 "$OUT/build-chroma$c.log"; exit 1; }
        fi
        echo "-- TRK_FUSED_CHROMA_LOAD=$c"
        $BB/tests/gpu/test_cuda_pinned | tail -1
        $BB/bench/trackd-bench --experiment cuda-upload --sizes 1920x1080,3840x2160 --objects 8,128 \
          --formats nv12,i420 --bands default,copy --iters 100 --pace-ms 0 2>&1 | grep -v "^#"
      done 2>&1 | tee "$OUT/chroma.txt" || rc=1 ;;
    handover)
      # The fused kernel handing its results over (mapped host memory, a
      # sequence number the host watches) against the copy back and the
      # event after the kernel (variant option copyback), side by side on
      # pinned frames (in place, and the banded copy); then the whole-call
      # table (device images, pinned, pageable: the default variant).
      $BENCH --experiment cuda-upload --sizes 1920x1080,3840x2160 --objects 8,128 \
        --formats rgb24,nv12,i420 --bands default,copyback,copy --iters 200 --pace-ms 0 2>&1 |
        tee "$OUT/handover.txt" || rc=1
      $BENCH --experiment cuda-kernels --sizes 1920x1080,3840x2160 --objects 8,128 \
        --formats rgb24,nv12 --variants fused --iters 200 --warmup 20 \
        --json "$OUT/handover-wholecall.json" 2>&1 | tee "$OUT/handover-wholecall.txt" || rc=1 ;;
    seed)
      $BENCH --experiment cuda-seed --json "$OUT/seed.json" 2>&1 | tee "$OUT/seed.txt" || rc=1 ;;
    bench)
      T=""; [ -f "$OUT/torch.json" ] && T="--torch $OUT/torch.json"
      $BENCH --backends cpu-ref,cpu,cuda --variants fused,lut --sizes 1920x1080 --objects 8,128 \
        --formats rgb24,nv12 --iters 10 --ref-iters 1 $T --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.txt" || rc=1 ;;
    blobs)
      # Blob lists (issue 12): cuda beside the fast CPU twin (all cores, which
      # also gives the truth: cpu-ref needs ~50 s per 1080p frame at 128
      # colours), NPP's labelling and the read floor, clean and noisy scenes.
      $BENCH --experiment blobs --backends cpu,cuda --threads 0 --truth cpu \
        --sizes 1920x1080,3840x2160 --iters 20 --json "$OUT/blobs.json" 2>&1 | tee "$OUT/blobs.txt" || rc=1 ;;
    regions)
      # The native regional form (issue 13): the device test and its
      # sanitizer runs, then trackd-bench rrm on CUDA (full vs roi per frame,
      # whole call from host memory, upload bytes, both designs, M = 1..256,
      # 1080p and 4K) and the alpha/beta sweep at 4K M = 128.
      (cd $B && ctest -R "^gpu_cuda_regions" -V) > "$OUT/regions-test.log" 2>&1 || rc=1
      grep -E "test_cuda_regions:|CHECK failed|ERROR SUMMARY|RACECHECK SUMMARY|Passed|Failed|SKIP" "$OUT/regions-test.log" | head -20
      $BENCH --experiment rrm --backends cuda --sizes 1920x1080,3840x2160 \
        --instances 1,2,4,8,16,32,64,128,256 --rrm flat,seed --json "$OUT/rrm.json" 2>&1 | tee "$OUT/rrm.txt" || rc=1
      $BENCH --experiment rrm --backends cuda --sizes 3840x2160 --instances 128 \
        --rrm flat,seed,seed:1x1,seed:2x1,seed:4x2,seed:4x4,seed:8x2,seed:16x4,seed:64x8 \
        --json "$OUT/rrm-sweep.json" 2>&1 | tee "$OUT/rrm-sweep.txt" || rc=1 ;;
    rrmncu)
      # The regional form's kernels at 4K, 128 instances (flat design, blobs
      # K = 1): per-kernel duration, throughput and occupancy of the ROI
      # path (scatter, flat, rb = a block per blob region; bl_* only for
      # regions too large for a block: none here).
      ncu --clock-control none -k 'regex:rb_kernel|flat_kernel|scatter_kernel|bl_' -c 12 \
        --section SpeedOfLight --section Occupancy --section LaunchStats \
        $BENCH --experiment rrm --backends cuda --sizes 3840x2160 --instances 128 --rrm flat \
        --frames 3 --warmup 1 > "$OUT/rrm-ncu.txt" 2>&1
      grep -E "^  [a-zA-Z<]|Duration|Compute \(SM\) Throughput|Achieved Occupancy|Dynamic Shared" "$OUT/rrm-ncu.txt" | head -60 ;;
    devimg)
      # Device images (issue 14, --hwdec): cuda reading device memory in
      # place / copied == cpu-ref, plus memcheck and racecheck on --quick.
      (cd $B && ctest -R device_image -V) > "$OUT/devimg.log" 2>&1 || rc=1
      grep -E "FAIL|cases|SKIP|ERROR SUMMARY|RACECHECK SUMMARY|Passed|Failed" "$OUT/devimg.log" | head -30 ;;
    ncu)
      ncu --clock-control none -k regex:fused_kernel -s 3 -c 6 --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis --section InstructionStats \
        --section Occupancy --section LaunchStats --section WarpStateStats \
        $BENCH --experiment cuda-kernels --sizes 1920x1080 --objects 128,256 --variants fused --iters 1 --warmup 0 \
        > "$OUT/ncu.txt" 2>&1; grep -E "Duration|Throughput|Achieved Occupancy|Registers|Warp Cycles|Bank|Issue|Executed Ipc" "$OUT/ncu.txt" | head -24 ;;
    sass)
      cuobjdump -sass $B/gpu/libtrk_gpu.a > "$OUT/sass.txt" 2>&1; wc -l "$OUT/sass.txt" ;;
    *) echo "unknown stage $stage"; rc=2 ;;
  esac
done
tar -C "$FINAL" -czf "$FINAL/logs.tgz" logs && rm -rf "$OUT"
exit $rc
