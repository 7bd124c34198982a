#!/usr/bin/env bash
# Bundles a built trackd with the shared libraries it needs (from ldd), test
# clips and objects, into a folder that the GPU machine (no FFmpeg, no
# libwebsockets there) can run: run-on-device.sh inside it does the checks.
#
#   tests/device/bundle.sh BUILD_DIR OUT_DIR
# writes OUT_DIR/trackd-bundle.tar.xz (xz: FFmpeg's dependencies are ~170 MB
# unpacked, ~50 MB packed, under the device tool's 64 MiB carry limit). On the
# device: tar xJf trackd-bundle.tar.xz -C /tmp && /tmp/bundle/run-on-device.sh
set -euo pipefail
build=${1:?build dir}; dest=${2:?output dir}
out=$(mktemp -d)/bundle
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out"; mkdir -p "$out/lib"
# Stripped: the carry to the device is limited to 64 MiB in all.
strip -o "$out/trackd" "$build/daemon/trackd"
strip -o "$out/trackd-jitter" "$build/bench/trackd-jitter"
# The WebSocket server's share of delivery in parts (bench/ws_handoff.c; its
# libraries are trackd's).
strip -o "$out/trackd-ws-handoff" "$build/bench/trackd-ws-handoff"
# The C client many_cameras.py --probe runs (bench/ws_probe.c; no libraries).
strip -o "$out/trackd-ws-probe" "$build/bench/trackd-ws-probe"
# The camera's MJPEG decoder with NVDEC (run-on-device.sh runs its mjpeg-hw
# case), stripped. It adds ~0.1 MB to the .tar.xz: xz's window finds the
# CUDA kernels it shares with trackd (the bundle was 61.13 MB without it).
strip -o "$out/test_daemon_v4l2" "$build/tests/unit/daemon/test_daemon_v4l2"
# (trackd-bench is not bundled: nothing here runs it, and the GPU-only build
# on the device has its own; the bundle must stay under the carry limit.)
# Everything ldd resolves except the C runtime, which the target has (newer).
for bin in "$build/daemon/trackd" "$build/tests/unit/daemon/test_daemon_v4l2"; do
  ldd "$bin" | awk '/=> \//{print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libcuda.so*) ;;
      *) [ -e "$out/lib/$(basename "$lib")" ] || cp -L "$lib" "$out/lib/" ;;
    esac
  done
done
cp "$here/compare_ndjson.py" "$here/run-on-device.sh" "$here/latency_probe.py" "$here/many_cameras.py" \
   "$here/host_cost.sh" "$here/frame_split.py" \
   "$here/hwdec_device.py" "$here/../integration/daemon_proc.py" "$out/"
cp -r "$here/../../web" "$out/web"
# Clips made here (the GPU machine has no ffmpeg CLI): 4:2:0 and RGB.
ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=1280x720:rate=30 -t 4 \
  -c:v libx264 -preset veryfast -pix_fmt yuv420p "$out/clip420.mp4"
ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=640x480:rate=30 -t 3 \
  -c:v ffv1 -pix_fmt bgr0 "$out/cliprgb.mkv"
# --hwdec (hwdec_device.py): HEVC 8-bit, MJPEG 4:2:0 and 4:2:2, 10-bit H.264
# (software fallbacks); a 1080p60 H.264 clip for the throughput runs and the
# latency probe (played at its own rate: 14 s).
ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=640x480:rate=30 -t 2 \
  -c:v libx265 -preset ultrafast -x265-params log-level=error -pix_fmt yuv420p "$out/cliphevc.mp4"
ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=640x480:rate=30 -t 2 \
  -c:v mjpeg -q:v 3 -pix_fmt yuvj420p "$out/clipmjpeg.mkv"
ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=320x240:rate=30 -t 1 \
  -c:v mjpeg -q:v 3 -pix_fmt yuvj422p "$out/clipmjpeg422.mkv"
ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=320x240:rate=30 -t 1 \
  -c:v libx264 -preset veryfast -pix_fmt yuv420p10le "$out/clip10.mp4"
ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=1920x1080:rate=60 -t 14 \
  -c:v libx264 -preset veryfast -crf 32 -pix_fmt yuv420p "$out/clip1080p60.mp4"
cp "$here/clip-objects.json" "$here/clip-blobs-objects.json" "$out/"
# Many cameras (host_cost.sh, many_cameras.py): the 1080p60 field clip with
# 16 robots (~1.5 MB; minutes to draw, so $TRK_SSL1080 may name one made
# before) and 16 objects with blobs and tracking.
if [ -n "${TRK_SSL1080:-}" ]; then cp "$TRK_SSL1080" "$out/ssl1080.mp4"
else /usr/bin/python3 "$here/../integration/ssl_scene.py" "$out/ssl1080.mp4" --size 1920x1080 \
       --robots 16 --fps 60 --frames 120 --h264 && rm -f "$out/ssl1080.mp4.truth.json"; fi
/usr/bin/python3 "$here/obj16.py" "$out/obj16.json"
# The light on NVDEC frames (issue 27): the lighting clip as H.264 (~0.3 MB)
# and its objects with illumination and adapt, made here (numpy, ffmpeg).
cp "$here/../integration/test_light_device.py" "$out/"
/usr/bin/python3 "$here/../integration/test_light_device.py" --make "$out"
mkdir -p "$dest"
tar -C "$(dirname "$out")" -cf - bundle | xz -T2 -9 > "$dest/trackd-bundle.tar.xz"
rm -rf "$(dirname "$out")"
ls -la "$dest/trackd-bundle.tar.xz"
