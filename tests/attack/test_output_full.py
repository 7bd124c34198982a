#!/usr/bin/python3
"""Attack: the NDJSON output cannot be written (issue 11, item 2).

The real trackd writes results to a sink that fails:
  1. -o /dev/full: every write fails (ENOSPC). Exit 74, the log says how many
     of how many result lines were lost.
  2. a file under a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored): the
     write that crosses the limit is cut mid-line (EFBIG after a partial
     write). Exit 74, the lost count matches what is missing, and the file
     holds whole lines only (the cut line was truncated away).
  3. a 64 KiB tmpfs, when this machine lets us mount one (root): a real full
     disk, same checks as 2. Skipped, and said so, where mount is refused.
Prints `attack: output_full tried=N survived=N lost_bytes=0`: lost_bytes
counts result bytes lost without the log saying so (must be 0).
"""
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile

from attack import FAILS, check, finish, report, run_file

FRAMES = 300  # the demo scene at 320x240: ~300 KB of results, well over the limits


def run(trackd, out, log, limit=None):
    """trackd on the demo scene, --fast, results to out; returns the exit status."""
    def pre():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # inherited: EFBIG instead of death
        if limit:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return run_file(trackd, ["--size", "320x240", "--frames", str(FRAMES), "-o", out], log,
                    stdout=subprocess.DEVNULL, preexec_fn=pre)


def lost_report(text):
    """(lost, total) from the log's 'N of M result lines were lost', or None."""
    m = re.search(r"(\d+) of (\d+) result lines were lost", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def check_file_sink(trackd, d, out, name, limit=None):
    """Cases 2 and 3: returns the result bytes lost without a word (0 = none)."""
    log = os.path.join(d, name + ".log")
    rc = run(trackd, out, log, limit)
    text = open(log).read()
    check(rc == 74, f"{name}: exit 74 when results were lost (got {rc})")
    data = open(out, "rb").read()
    lines = data.split(b"\n")
    check(data.endswith(b"\n"), f"{name}: the file ends with a complete line")
    good = 0
    for ln in lines[:-1]:
        try:
            m = json.loads(ln)
            good += m.get("type") == "frame"
        except ValueError:
            check(False, f"{name}: a line in the file is not valid JSON: {ln[:60]!r}...")
            break
    check(good == len(lines) - 1, f"{name}: every one of the {good} lines in the file is a whole "
          "frame result")
    seqs = [json.loads(ln)["seq"] for ln in lines[:-1]]
    check(seqs == list(range(len(seqs))), f"{name}: the lines in the file are frames 0..n-1, "
          "none missing before the failure")
    rep = lost_report(text)
    check(rep is not None, f"{name}: the log says how many result lines were lost")
    if rep:
        check(rep[1] == FRAMES, f"{name}: of all {FRAMES} lines (log: {rep[1]})")
        check(rep[0] == FRAMES - good, f"{name}: the lost count ({rep[0]}) is what is missing "
              f"from the file ({FRAMES - good})")
    # A failed write cuts a line unless the limit falls exactly between two
    # lines (the file then ends at the limit or a page boundary).
    at_boundary = len(data) == limit or (limit is None and len(data) % 4096 == 0)
    check(at_boundary or ("truncated" in text and "whole lines only" in text),
          f"{name}: the log says the cut line was truncated away")
    # Bytes lost silently: lines neither in the file nor counted in the log.
    silent = FRAMES - good - (rep[0] if rep else 0)
    return max(silent, 0) * 300


def main():
    trackd = sys.argv[1]
    tried = survived = lost_bytes = 0
    with tempfile.TemporaryDirectory() as d:
        # 1. /dev/full
        log = os.path.join(d, "full.log")
        rc = run(trackd, "/dev/full", log)
        text = open(log).read()
        tried += 1
        ok = check(rc == 74, f"/dev/full: exit 74 (got {rc})")
        rep = lost_report(text)
        ok &= check(rep == (FRAMES, FRAMES), f"/dev/full: the log says all {FRAMES} of {FRAMES} "
                    f"result lines were lost (got {rep})")
        ok &= check("No space left on device" in text, "/dev/full: the log names the error")
        survived += ok
        if not rep:
            lost_bytes += FRAMES * 300

        # 2. a file-size limit: the write that crosses it is cut mid-line
        tried += 1
        n = len(FAILS)
        lost_bytes += check_file_sink(trackd, d, os.path.join(d, "limited.ndjson"), "fsize-limit",
                                      limit=20000)
        survived += len(FAILS) == n
        check(os.path.getsize(os.path.join(d, "limited.ndjson")) <= 20000,
              "fsize-limit: the file stays within the limit")

        # 3. a real full disk: a 64 KiB tmpfs
        mnt = os.path.join(d, "mnt")
        os.mkdir(mnt)
        m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt],
                           capture_output=True, text=True)
        if m.returncode != 0:
            print("skip tmpfs: cannot mount one here (" + (m.stderr.strip() or "not root") +
                  "); the file-size limit above covers cut lines")
        else:
            try:
                tried += 1
                n = len(FAILS)
                lost_bytes += check_file_sink(trackd, d, os.path.join(mnt, "r.ndjson"), "tmpfs-64k")
                survived += len(FAILS) == n
            finally:
                subprocess.run(["umount", mnt])
    report("output_full", tried=tried, survived=survived, lost_bytes=lost_bytes)
    finish()


if __name__ == "__main__":
    main()
