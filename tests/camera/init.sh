#!/bin/sh
# /init of the vivid test VM (busybox sh). Loads vivid, runs trackd against
# it in several ways and prints each run's NDJSON and log between markers on
# the serial console; run_vivid.py on the host judges them. Ends with the
# marker TRK-VIVID-END and powers off.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
echo; echo "@@EVENT init $(cut -d' ' -f1 /proc/uptime)"
# vivid's dependencies in load order (modules.dep read backwards).
for m in rc-core cec mc videodev videobuf2-common videobuf2-v4l2 videobuf2-memops \
         videobuf2-vmalloc videobuf2-dma-contig v4l2-dv-timings v4l2-tpg vivid; do
  a=
  # A second instance (capture node only) on dma-contig, where vivid takes
  # no USERPTR buffers: the fallback to mmap + copy.
  [ $m = vivid ] && a="n_devs=2 allocators=0,1 node_types=0xe1d3d,0x1"
  insmod /modules/$m.ko $a || echo "@@ERROR insmod $m"
done
i=0
while [ ! -e /dev/video0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done

dump() { # name file...
  echo "@@BEGIN $1"
  shift
  cat "$@"
  echo "@@END"
}
up() { cut -d' ' -f1 /proc/uptime; }

T="trackd --device /dev/video0 --no-server --objects /objs.json"
# A stable name as udev would make it (there is no udev here): the fault
# run below goes through it, also across unbind/bind.
mkdir -p /dev/v4l/by-id
ln -s ../../video0 /dev/v4l/by-id/platform-vivid.0-video-index0
echo "@@BEGIN devices"; trackd --list-devices; echo "@@END"
echo "@@BEGIN formats"; trackd --device /dev/video0 --list-formats; echo "@@END"
echo "@@BEGIN controls"; trackd --device /dev/video0 --list-controls; echo "@@END"
# Each format in the driver's buffers (USERPTR, the default), and again
# with --camera-io mmap (mmap + copy): the same results.
for f in yuyv nv12 rgb24; do
  for io in auto mmap; do
    n=$f; [ $io = mmap ] && n=$f-mmap
    $T --format $f --camera-io $io --size 640x480 --fps 25 --frames 15 -o /tmp/$n.ndjson \
      2>/tmp/$n.log
    echo "@@RC $n $?"
    dump $n /tmp/$n.ndjson
    dump $n.log /tmp/$n.log
  done
done
# The driver refuses USERPTR: one log line, frames copied, same results.
i=0
while [ -z "$D2" ] && [ $i -lt 50 ]; do
  for n in /sys/class/video4linux/video*; do
    [ "$(cat $n/name 2>/dev/null)" = vivid-001-vid-cap ] && D2=/dev/${n##*/}
  done
  [ -z "$D2" ] && sleep 0.1
  i=$((i + 1))
done
trackd --device ${D2:-/dev/none} --no-server --objects /objs.json --format yuyv --size 640x480 \
  --fps 25 --frames 15 -o /tmp/yuyv-refused.ndjson 2>/tmp/yuyv-refused.log
echo "@@RC yuyv-refused $?"
dump yuyv-refused /tmp/yuyv-refused.ndjson
dump yuyv-refused.log /tmp/yuyv-refused.log
# Nodes that are there but no video capture (vivid's metadata capture and
# video output nodes): exit 66 at once with the reason, no waiting.
for kind in meta-cap vid-out; do
  node=/dev/none
  for n in /sys/class/video4linux/video*; do
    [ "$(cat $n/name 2>/dev/null)" = vivid-000-$kind ] && node=/dev/${n##*/}
  done
  trackd --device $node --no-server -o /tmp/$kind.ndjson 2>/tmp/$kind.log
  echo "@@RC $kind $?"
  dump $kind.log /tmp/$kind.log
done
# A control: test pattern 8 is "100% Green" (the green box then covers the frame).
$T --format yuyv --size 640x480 --fps 25 --frames 10 --control test_pattern=8 \
   -o /tmp/ctl.ndjson 2>/tmp/ctl.log
echo "@@RC ctl $?"
dump ctl /tmp/ctl.ndjson
dump ctl.log /tmp/ctl.log

# Faults while streaming: vivid's disconnect control, a fatal streaming
# error (EIO), a stall (every buffer dropped: trackd's 2 s timeout), then a
# real unplug (unbind) and replug (bind). Before each fault (and the stop),
# frames must have flowed again: 30 new results (~1 s at 30 fps), waited for
# rather than slept for, as a loaded host slows the emulated guest; 30 s at
# most (run_vivid.py's FLOW_WAIT_S), else @@NOFLOW fails the test. stdout
# (-o -) is flushed per result, so the line count is current.
results() {
  c=$(wc -l </tmp/live.ndjson 2>/dev/null)
  echo "${c:-0}"
}
flowed() { # after-what
  n=$(($(results) + 30))
  i=0
  while [ "$(results)" -lt $n ]; do
    kill -0 $pid 2>/dev/null || { echo "@@NOFLOW $1 (trackd exited)"; return; }
    i=$((i + 1))
    [ $i -gt 300 ] && { echo "@@NOFLOW $1"; return; }
    sleep 0.1
  done
}
: >/tmp/live.ndjson # exists before the first count
trackd --device /dev/v4l/by-id/platform-vivid.0-video-index0 --no-server --objects /objs.json \
  --format yuyv --size 320x240 --fps 30 --stats-interval 0 -o - >>/tmp/live.ndjson 2>/tmp/live.log &
pid=$!
flowed start
echo "@@EVENT disconnect $(up)"
v4l2-ctl -d /dev/video0 -c disconnect=1 || echo "@@ERROR v4l2-ctl disconnect"
flowed disconnect
echo "@@EVENT eio $(up)"
v4l2-ctl -d /dev/video0 -c inject_fatal_streaming_error=1 || echo "@@ERROR v4l2-ctl eio"
flowed eio
echo "@@EVENT stall $(up)"
v4l2-ctl -d /dev/video0 -c percentage_of_dropped_buffers=100 || echo "@@ERROR v4l2-ctl stall"
# In effect from here (v4l2-ctl itself can take a loaded guest ~1 s).
echo "@@EVENT stalled $(up)"
sleep 3
echo "@@EVENT unstall $(up)"
v4l2-ctl -d /dev/video0 -c percentage_of_dropped_buffers=0 || echo "@@ERROR v4l2-ctl unstall"
flowed unstall
echo "@@EVENT unbind $(up)"
echo vivid.0 > /sys/bus/platform/drivers/vivid/unbind
sleep 2.5
echo "@@EVENT bind $(up)"
echo vivid.0 > /sys/bus/platform/drivers/vivid/bind
flowed bind
echo "@@EVENT stop $(up)"
kill -TERM $pid
wait $pid
echo "@@RC live $?"
dump live.log /tmp/live.log
dump live /tmp/live.ndjson

# The same camera with --camera-io mmap: frames flow again after a
# disconnect (the USERPTR run above went through every fault).
: >/tmp/livemm.ndjson
trackd --device /dev/video0 --no-server --objects /objs.json --camera-io mmap \
  --format yuyv --size 320x240 --fps 30 --stats-interval 0 -o - >>/tmp/livemm.ndjson \
  2>/tmp/livemm.log &
pid=$!
results() {
  c=$(wc -l </tmp/livemm.ndjson 2>/dev/null)
  echo "${c:-0}"
}
flowed mmap-start
echo "@@EVENT mmdisconnect $(up)"
v4l2-ctl -d /dev/video0 -c disconnect=1 || echo "@@ERROR v4l2-ctl disconnect (mmap)"
flowed mmap-disconnect
echo "@@EVENT mmstop $(up)"
kill -TERM $pid
wait $pid
echo "@@RC livemm $?"
dump livemm.log /tmp/livemm.log
dump livemm /tmp/livemm.ndjson
echo "TRK-VIVID-END"
poweroff -f
