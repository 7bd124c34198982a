# Shared by run.sh and package.sh (sourced, bash): a freshly bootstrapped
# Debian 12 (minbase) root, the way a stock install has it. The caller sets
# root (any path), and may set log (default ROOT.log) and mirror (default:
# the host's Debian mirror), then calls fresh_init; fresh_bootstrap INCLUDES
# makes the root, fresh_mount mounts /proc, /sys and /dev into it,
# unmount_all undoes that (call it from an EXIT trap), in_root CMD runs CMD
# there as root in a login-like environment (in_root_dir: its folder, default
# /root). Only roots carrying the marker file are ever deleted. Exits 64
# for an unusable root, 69 when bootstrapping fails.

# The checks both scripts make of their arguments and user: --port a number
# in 1..65535 (exit 64), root (exit 77).
fresh_check_args() {
  case "$port" in '' | *[!0-9]*) echo "$0: --port needs a number, got '$port'" >&2; exit 64 ;; esac
  if [ "$port" -lt 1 ] || [ "$port" -gt 65535 ]; then echo "$0: --port $port is out of range" >&2; exit 64; fi
  [ "$(id -u)" = 0 ] || { echo "$0: needs root (debootstrap, chroot, bind mounts)" >&2; exit 77; }
}

fresh_init() {
  root=$(realpath -m "$root")
  case "$root" in / | /usr | /etc | /home | /root | /tmp | /var) echo "$0: refusing --root $root" >&2; exit 64 ;; esac
  log=${log:-$root.log}
  marker=.trackd-fresh-root # only roots carrying it are ever deleted
  : >"$log" || exit 64
}

say() { echo "[fresh] $*" | tee -a "$log"; }
# Everything a step prints goes to the log only; the terminal gets the steps.
quiet() { "$@" >>"$log" 2>&1; }

mounted_under() { awk -v r="$root" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/mounts; }

unmount_all() {
  local m
  # Deepest first (dev/pts before dev); lazy only where a straggler holds one.
  for m in $(mounted_under | sort -r); do
    umount "$m" 2>>"$log" || umount -l "$m" 2>>"$log"
  done
}

# fresh_bootstrap PACKAGES: a new root (the previous one, and its ROOT.*.out
# files, removed) with debootstrap --include=PACKAGES (comma-separated), the
# host's Debian apt sources, CA certificates, resolver and proxy settings.
fresh_bootstrap() {
  local include=$1 f uris start
  if [ -e "$root" ]; then
    if [ ! -e "$root/$marker" ]; then
      echo "$0: $root exists and was not made by this script; choose another --root" >&2
      exit 64
    fi
    unmount_all
    if [ -n "$(mounted_under)" ]; then
      echo "$0: something is still mounted under $root; not deleting it" >&2
      exit 69
    fi
    say "removing the previous root $root"
    rm -rf --one-file-system "$root" "$root".*.out
  fi

  if ! command -v debootstrap >/dev/null; then
    say "installing debootstrap"
    quiet apt-get update -q
    quiet env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap ||
      { say "FAIL: could not install debootstrap (see $log)"; exit 69; }
  fi

  # The host's Debian sources: the mirror to bootstrap from, and the source
  # files for the root (only those naming nothing but Debian archives, so a
  # host's extra repositories, e.g. a newer nodejs, stay out).
  local debian_sources=()
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    uris=$(awk '/^[[:space:]]*#/ { next }
                $1 == "URIs:" { for (i = 2; i <= NF; i++) print $i }
                $1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) { print $i; break } }' "$f")
    [ -n "$uris" ] && grep -q bookworm "$f" || continue
    if ! echo "$uris" | grep -qvE '/debian(-security)?/?$'; then
      debian_sources+=("$f")
      [ -n "${mirror:-}" ] || mirror=$(echo "$uris" | grep -E '/debian/?$' | head -n 1)
    fi
  done
  mirror=${mirror:-http://deb.debian.org/debian}

  start=$(date +%s)
  say "bootstrapping Debian 12 (minbase) into $root from $mirror (log: $log)"
  mkdir -p "$root" && touch "$root/$marker"
  if ! quiet debootstrap --variant=minbase --include="$include" bookworm "$root" "$mirror"; then
    say "FAIL: debootstrap failed (see $log)"
    exit 69
  fi
  say "bootstrapped in $(($(date +%s) - start)) s"

  if [ ${#debian_sources[@]} -gt 0 ]; then
    rm -f "$root/etc/apt/sources.list"
    for f in "${debian_sources[@]}"; do cp "$f" "$root$f"; done
  fi
  # Registries may sit behind a TLS-inspecting proxy: the root trusts what the
  # host trusts (the bundle, and the local CAs so that a later
  # update-ca-certificates in the root keeps them).
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  [ -d /usr/local/share/ca-certificates ] && cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
  [ -f /etc/npmrc ] && cp /etc/npmrc "$root/etc/npmrc"
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
  # debootstrap writes no /etc/hosts; every installed Debian has one (the
  # installer writes it), and without it "localhost" does not resolve.
  [ -f "$root/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
  # Packages installed in a chroot must not start services.
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod +x "$root/usr/sbin/policy-rc.d"
}

fresh_mount() {
  mount --bind /proc "$root/proc" &&
    mount --bind /sys "$root/sys" &&
    mount --bind /dev "$root/dev" &&
    mount --bind /dev/pts "$root/dev/pts" &&
    mount -t tmpfs -o mode=1777 shm "$root/dev/shm" ||
    { say "FAIL: could not mount /proc, /sys, /dev into $root"; exit 69; }
}

# A login-like environment: nothing of the host's but the proxy settings.
in_root() {
  local envs=(HOME=/root LANG=C.UTF-8 TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
  local v
  for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY JOBS; do
    [ -n "${!v:-}" ] && envs+=("$v=${!v}")
  done
  chroot "$root" /usr/bin/env -i "${envs[@]}" /bin/bash -c "cd ${in_root_dir:-/root} && $1"
}
