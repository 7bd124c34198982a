#!/bin/sh
# /init of the camera-controls VM (busybox sh): loads vivid and an e1000
# network card (qemu forwards a loopback port of the host to the guest's
# 8080), starts trackd with its web server on the camera, then runs the
# commands run_controls.py sends on the serial console, one per line
# ("@@CMD N command"), answering "@@DONE N" after each; the host speaks the
# control protocol to trackd and checks the camera itself with v4l2-ctl
# through these commands. "@@CMD N stop" ends trackd, prints its log and
# powers off.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
stty -echo 2>/dev/null
for m in rc-core cec mc videodev videobuf2-common videobuf2-v4l2 videobuf2-memops \
         videobuf2-vmalloc videobuf2-dma-contig v4l2-dv-timings v4l2-tpg vivid e1000; do
  insmod /modules/$m.ko || echo "@@ERROR insmod $m"
done
i=0
while { [ ! -e /dev/video0 ] || [ ! -e /sys/class/net/eth0 ]; } && [ $i -lt 100 ]; do
  sleep 0.1
  i=$((i + 1))
done
ip link set lo up
ip addr add 10.0.2.15/24 dev eth0 && ip link set eth0 up || echo "@@ERROR network"
cp /objs.json /tmp/objs.json
echo "@@BEGIN controls"; v4l2-ctl -d /dev/video0 -l; echo "@@END"

# trackd on the camera with its web server; $1: more options.
start() {
  : >/tmp/trackd.log
  trackd --device /dev/video0 --objects /tmp/objs.json --size 320x240 --fps 10 \
    --listen 0.0.0.0:8080 --control-token camtest --stats-interval 0 "$@" \
    >/dev/null 2>>/tmp/trackd.log &
  pid=$!
  echo "@@STARTED $pid"
}
stop() {
  kill -TERM $pid 2>/dev/null
  wait $pid
  echo "@@RC trackd $?"
  echo "@@BEGIN trackd.log"; cat /tmp/trackd.log; echo "@@END"
}
# One control's value as the driver has it.
ctl() { echo "@@CTL $1 $(v4l2-ctl -d /dev/video0 -C "$1" | sed 's/.*: //')"; }
# The file trackd saves to and reloads from.
file() { echo "@@FILE $(tr -d '\n' </tmp/objs.json)"; }
# Waits (30 s at most) until trackd's log has the text.
logged() {
  i=0
  while ! grep -q "$1" /tmp/trackd.log && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  grep -q "$1" /tmp/trackd.log || echo "@@ERROR not logged: $1"
}

start
echo "@@READY"
while read -r tag n cmd; do
  [ "$tag" = "@@CMD" ] || continue
  if [ "$cmd" = "quit" ]; then
    echo "@@DONE $n"
    break
  fi
  eval "$cmd"
  echo "@@DONE $n"
done
echo "TRK-VIVID-END"
poweroff -f
