#!/usr/bin/env bash
# On the GPU machine, inside the bundle: the whole daemon with --backend cuda
# against --backend cpu on the demo scene and on files, NDJSON compared.
set -uo pipefail
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fail=0
run() { echo "+ trackd $*"; ./trackd "$@" --no-server --fast --log-level warn || fail=1; }
for b in cpu cuda; do
  run --backend $b --frames 300 --output demo-$b.ndjson
  run --backend $b --size 1920x1080 --frames 120 --output demo1080-$b.ndjson
  run --backend $b --input clip420.mp4 --objects clip-objects.json --output clip420-$b.ndjson
  run --backend $b --input cliprgb.mkv --objects clip-objects.json --output cliprgb-$b.ndjson
  # Blob lists, a tracked object and the pre-filter (issue 12/13), whole frames on both.
  run --backend $b --mode full --input clip420.mp4 --objects clip-blobs-objects.json --output blobs420-$b.ndjson
  run --backend $b --mode full --input cliprgb.mkv --objects clip-blobs-objects.json --output blobsrgb-$b.ndjson
done
for n in demo demo1080 clip420 cliprgb blobs420 blobsrgb; do
  echo "== $n: cpu vs cuda"; python3 compare_ndjson.py $n-cpu.ndjson $n-cuda.ndjson || fail=1
done
# --hwdec (issue 14): NVDEC device images vs software, MJPEG tolerance, throughput.
python3 hwdec_device.py || fail=1
# The light on NVDEC frames (issue 27): no frame copied to the host for it
# (trackd_frames_downloaded_total stays 0), results == cpu-ref's on
# software-decoded frames, full and roi.
echo "== light on device frames"
python3 test_light_device.py ./trackd --clip . --need-gpu || fail=1
# The camera's MJPEG decoder with NVDEC against libavcodec (4:2:0, 4:2:2,
# without DHT, bad input mid-stream; prints MJPEG-HW WORST). Here 77 (no
# usable GPU: SKIP) is a failure too.
echo "== camera MJPEG through NVDEC: ./test_daemon_v4l2 mjpeg-hw"
./test_daemon_v4l2 mjpeg-hw; rc=$?
[ $rc = 0 ] || { echo "test_daemon_v4l2 mjpeg-hw FAILED (exit $rc)"; fail=1; }
echo "== auto picks:"; ./trackd --no-server --frames 1 --fast 2>&1 | grep -i backend
echo "== throughput, demo 1920x1080, 7 objects"
for b in cpu cuda; do
  ./trackd --backend $b --size 1920x1080 --frames 600 --fast --no-server --output /dev/null 2>&1 | grep done
done
# How late this machine wakes threads (bench/jitter.c), at the probes' 60 Hz:
# the floor under their p99 (a quiet machine: tens of us).
echo "== wake-up latency of this machine"
./trackd-jitter --hz 60 --samples 300 || fail=1
# The server's share of capture -> client (issue 31, delivery): a result's
# hand-off -> the client, in parts (wake, wait, call: bench/README.md), with
# --spin off and on, one client and three.
echo "== WebSocket hand-off -> client, in parts"
./trackd-ws-handoff --clients 1 || fail=1
./trackd-ws-handoff --clients 3 --spin on | tail -1 || fail=1
# Capture -> client latency (issue 14; docs/BENCHMARKS.md "Capture -> ..."):
# a WebSocket client on this host, t_capture against its CLOCK_MONOTONIC,
# 600 frames after 60 of warm-up; cuda, no --fast (paced, real time). Under
# each row, p50/p99 per stage (queue, process, handoff, deliver; write = the
# server's share of deliver): where the time goes. The first four rows are
# the defaults (--spin auto: on with 4+ CPUs) with an aiohttp client, the
# next four the same with the probe's blocking-socket client (--client
# socket: stamped when the last byte is read, without asyncio's wake-up and
# aiohttp's frame handling), then --spin off on both sources.
echo "== capture -> WebSocket client latency, cuda ($(nproc) CPUs)"
probe() { python3 latency_probe.py ./trackd "$@" || fail=1; }
demo="--backend cuda --size 1920x1080 --fps 60 --log-level warn"
file="--backend cuda --input clip1080p60.mp4 --objects clip-objects.json --log-level warn"
probe --header --label "demo 1920x1080@60, no preview" -- $demo --no-preview
probe --preview --label "demo 1920x1080@60, preview" -- $demo
probe --label "file 1080p60 H.264 paced, no preview" -- $file --no-preview
probe --preview --label "file 1080p60 H.264 paced, preview" -- $file
for c in socket; do
  probe --client $c --label "demo, no preview, $c client" -- $demo --no-preview
  probe --client $c --preview --label "demo, preview, $c client" -- $demo
  probe --client $c --label "file, no preview, $c client" -- $file --no-preview
  probe --client $c --preview --label "file, preview, $c client" -- $file
done
probe --label "demo, no preview, --spin off" -- $demo --no-preview --spin off
probe --label "file, no preview, --spin off" -- $file --no-preview --spin off
[ $fail = 0 ] && echo "DEVICE DAEMON CHECKS PASSED" || echo "DEVICE DAEMON CHECKS FAILED"
exit $fail
