#!/usr/bin/env bash
# Runs the browser test, or says loudly why it cannot run here (exit 77 = skip).
# An optional first argument names the test script (default overlay.test.mjs).
script=overlay.test.mjs
case "$1" in *.mjs) script="$1"; shift ;; esac
args=()
for a in "$@"; do args+=("$(realpath -m "$a")"); done
cd "$(dirname "$0")"
why=""
command -v node >/dev/null || why="node is not installed"
[ -x /usr/bin/chromium ] || why="${why:+$why; }/usr/bin/chromium is not installed"
[ -d node_modules/playwright-core ] || why="${why:+$why; }playwright-core is missing (run: npm ci --prefix tests/browser)"
command -v ffmpeg >/dev/null || why="${why:+$why; }the ffmpeg CLI is not installed"
if [ -n "$why" ]; then
  echo "SKIPPED: browser test cannot run: $why" >&2
  exit 77
fi
exec node "$script" "${args[@]}"
