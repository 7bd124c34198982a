#!/bin/sh
# man_lint.sh trackd.1: the man page as its readers get it. groff -ww (all
# warnings) must say nothing, man -l with warnings on must render it without
# a word on stderr, and the rendering must hold the sections and an option
# (a page that renders empty also renders "cleanly").
set -u
page=$1
fail() { echo "FAIL: $*"; exit 1; }
[ -r "$page" ] || fail "cannot read $page"
command -v groff >/dev/null || fail "groff is missing (Debian: groff-base; ./setup.sh test installs it)"
command -v man >/dev/null || fail "man is missing (Debian: man-db; ./setup.sh test installs it)"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

groff -ww -z -man "$page" 2>"$tmp/groff.err"
rc=$?
[ $rc = 0 ] && [ ! -s "$tmp/groff.err" ] || fail "groff -ww -z -man exit $rc: $(cat "$tmp/groff.err")"
echo "ok: groff -ww -z -man: no warning"

# man-db's -l reads the file itself; --warnings passes -w to groff.
LC_ALL=C.UTF-8 MANWIDTH=80 MAN_KEEP_FORMATTING= man --warnings -E UTF-8 -l "$page" \
  >"$tmp/page.txt" 2>"$tmp/man.err"
rc=$?
[ $rc = 0 ] && [ ! -s "$tmp/man.err" ] || fail "man --warnings -l exit $rc: $(cat "$tmp/man.err")"
echo "ok: man --warnings -l: no warning"
for want in NAME SYNOPSIS DESCRIPTION OPTIONS EXAMPLES "EXIT STATUS" FILES "--check-config FILE"; do
  grep -q -- "^ *$want" "$tmp/page.txt" || fail "the rendered page has no line starting with '$want'"
done
# Copied from the page, an option must still work: hyphens, not dashes.
grep -q -- "--objects FILE" "$tmp/page.txt" || fail "'--objects FILE' does not render as ASCII"
echo "ok: the rendered page has every section and option names in ASCII"
