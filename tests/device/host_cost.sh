#!/usr/bin/env bash
# On the GPU machine, inside the bundle (bundle.sh): the host CPU per frame
# of many daemons side by side (issue 31), split by thread and into polling
# vs working. Three rows per N and case, all in one call on one machine:
#   on    --spin on: every daemon polls, which is what --spin auto did on a
#         machine of 4+ CPUs before the spin slots (the old default there);
#   auto  the default now: only the first CPUs/4 daemons poll (--spin-slots);
#   off   --spin off (many_cameras.py --spin-off): no daemon polls; the
#         difference to the rows above is the polling's cost.
#   tests/device/host_cost.sh [COUNTS] [SECONDS]   (default 1,8,16 and 6)
# TRK_BACKEND=cpu runs it on a machine without a GPU (software decoding).
set -uo pipefail
cd "$(dirname "$0")" || exit 1
export LD_LIBRARY_PATH=$PWD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
counts=${1:-1,8,16}; secs=${2:-6}
# Slot files of this run only (not another run's or service's).
TRACKD_SPIN_DIR=$(mktemp -d); export TRACKD_SPIN_DIR
be=${TRK_BACKEND:-cuda}
hw=cuda; [ "$be" = cuda ] || hw=none
# shellcheck disable=SC2034  # used through declare -n below
files=(--backend "$be" --hwdec "$hw" --input ssl1080.mp4 --loop --objects obj16.json --no-preview)
# shellcheck disable=SC2034
demo=(--backend "$be" --size 1920x1080 --fps 60 --no-preview)
echo "# $(nproc) CPUs; $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
for c in files demo; do
  declare -n args=$c
  python3 many_cameras.py ./trackd --counts "$counts" --seconds "$secs" --per-camera \
    --label "$c, --spin on (every daemon polls: the old auto)" -- "${args[@]}" --spin on
  python3 many_cameras.py ./trackd --counts "$counts" --seconds "$secs" --per-camera --spin-off \
    --label "$c, --spin auto (slots: CPUs/4 daemons poll), then --spin off" -- "${args[@]}"
done
rm -rf "$TRACKD_SPIN_DIR"
