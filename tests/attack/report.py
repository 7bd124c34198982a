#!/usr/bin/python3
"""Writes docs/RELIABILITY.md from the attack suite's figures.

    tests/attack/report.py [--run] [--build DIR ...] [--out FILE]

Each attack test prints one line `attack: NAME key=value ...`. This script
reads those lines from ctest's log of the last run in each build tree
(DIR/Testing/Temporary/LastTest.log), with each test's result, and writes
the figures table per tree (a tree configured with -DTRK_SANITIZE=ON is the
ASan/UBSan run) with the date and the machine. --run first runs
`ctest -L attack` in each tree. Default: --build build, --out
docs/RELIABILITY.md (relative to the source root).

Exit status: 0 written; 1 a tree has no attack results, or an attack test
failed (the file is written all the same, saying so); 64 usage.
"""
import argparse
import ast
import datetime
import os
import platform
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# The figures the table has a column for; any other key goes to "details".
COLUMNS = [("clients", "clients held"), ("tried", "attacks tried"),
           ("survived", "faults survived"), ("lost_bytes", "bytes lost")]
ALIASES = {"bytes_lost": "lost_bytes", "clients_held": "clients"}


def parse_log(path):
    """[(ctest name, passed, script, {attack NAME: figures})] in run order."""
    with open(path, errors="replace") as f:
        text = f.read()
    tests = []
    # Sections start with "N/M Testing: NAME"; the result line follows the
    # test's output.
    for m in re.finditer(r"^\d+/\d+ Testing: (\S+)$(.*?)^Test (Passed|Failed)",
                         text, re.M | re.S):
        name, body, result = m.group(1), m.group(2), m.group(3)
        cmd = re.search(r'^Command: (.*)$', body, re.M)
        script = None
        if cmd:
            script = next((a.strip('"') for a in cmd.group(1).split()
                           if a.strip('"').endswith(".py")), None)
        figures = {}
        for line in re.findall(r"^attack: (.*)$", body, re.M):
            parts = line.split()
            if not parts:
                continue
            kv = {}
            for p in parts[1:]:
                if "=" in p:
                    k, v = p.split("=", 1)
                    kv[ALIASES.get(k, k)] = v
            figures[parts[0]] = kv
        tests.append((name, result == "Passed", script, figures))
    return tests


def summary_of(script):
    """The first line of a test script's docstring, without "Attack: "."""
    try:
        with open(script) as f:
            doc = ast.get_docstring(ast.parse(f.read())) or ""
    except (OSError, SyntaxError):
        return ""
    first = doc.strip().splitlines()[0] if doc.strip() else ""
    first = re.sub(r"^Attack:\s*", "", first).rstrip(".")
    return first[:1].upper() + first[1:]


def cache_flag(build, name):
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith(name + ":"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return ""


def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    osname = ""
    try:
        with open("/etc/os-release") as f:
            osname = next((ln.split("=", 1)[1].strip().strip('"') for ln in f
                           if ln.startswith("PRETTY_NAME=")), "")
    except OSError:
        pass
    return (f"{cpu or platform.processor() or 'unknown CPU'}, {os.cpu_count()} cores, "
            f"{osname or platform.system()}, Linux {platform.release()}")


def revision():
    try:
        return subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def table(tests):
    # Totals: the most clients held at once; the sums of the others. None:
    # no test measured it.
    rows, totals, failed = [], {k: None for k, _ in COLUMNS}, []
    for name, passed, script, figures in tests:
        if not figures:
            if name.startswith("attack") or passed is False:
                if not passed:
                    failed.append(name)
            continue
        if not passed:
            failed.append(name)
        for attack, kv in figures.items():
            cells = []
            for k, _ in COLUMNS:
                v = kv.get(k, "")
                if v.isdigit():
                    t = totals[k] or 0
                    totals[k] = max(t, int(v)) if k == "clients" else t + int(v)
                cells.append(v or "–")
            details = " ".join(f"{k}={v}" for k, v in kv.items()
                               if k not in dict(COLUMNS))
            what = summary_of(script) if script else ""
            rows.append(f"| {attack} | {what} | " + " | ".join(cells) +
                        f" | {details} | {'passed' if passed else '**FAILED**'} |")
    head = ("| attack | what | " + " | ".join(t for _, t in COLUMNS) +
            " | details | result |\n|---|---|" + "---:|" * len(COLUMNS) + "---|---|")
    total = ("| **all** | | " + " | ".join("–" if totals[k] is None else f"**{totals[k]}**"
                                           for k, _ in COLUMNS) + " | | |")
    return "\n".join([head] + rows + [total]), failed, len(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", action="append", help="build tree (repeatable; default build)")
    ap.add_argument("--run", action="store_true", help="run ctest -L attack in each tree first")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "RELIABILITY.md"))
    a = ap.parse_args()
    builds = [os.path.abspath(os.path.join(ROOT, b) if not os.path.isabs(b) else b)
              for b in (a.build or ["build"])]
    sections, bad = [], False
    for b in builds:
        sanitized = cache_flag(b, "TRK_SANITIZE").upper() in ("ON", "1", "TRUE", "YES")
        if a.run:
            env = dict(os.environ)
            if sanitized:  # as setup.sh runs it: every report fatal
                env.setdefault("ASAN_OPTIONS", "halt_on_error=1:abort_on_error=1:detect_leaks=1")
                env.setdefault("UBSAN_OPTIONS",
                               "halt_on_error=1:abort_on_error=1:print_stacktrace=1")
            subprocess.run(["ctest", "--test-dir", b, "-L", "attack", "--output-on-failure"],
                           check=False, env=env)
        log = os.path.join(b, "Testing", "Temporary", "LastTest.log")
        if not os.path.exists(log):
            print(f"report.py: {log}: no ctest log (run ctest -L attack there first)",
                  file=sys.stderr)
            bad = True
            continue
        tests = parse_log(log)
        body, failed, n = table(tests)
        if n == 0:
            print(f"report.py: {log}: no attack results in the last run", file=sys.stderr)
            bad = True
            continue
        kind = ("ASan/UBSan build (`-DTRK_SANITIZE=ON`: every sanitizer report is fatal; RSS "
                "bounds not checked, LeakSanitizer checks at exit)" if sanitized else
                f"{cache_flag(b, 'CMAKE_BUILD_TYPE') or 'default'} build")
        when = datetime.datetime.fromtimestamp(os.path.getmtime(log), datetime.timezone.utc)
        note = (f"\n\n**Failed:** {', '.join(failed)} (see `{os.path.relpath(log, ROOT)}`)."
                if failed else "")
        bad |= bool(failed)
        sections.append(f"## {kind}\n\nRun {when:%Y-%m-%d %H:%M} UTC.\n\n{body}{note}")
    if not sections:
        return 1
    now = datetime.datetime.now(datetime.timezone.utc)
    doc = f"""# trackd reliability figures

Generated by `tests/attack/report.py` on {now:%Y-%m-%d %H:%M} UTC from the attack suite
(`tests/attack/`, ctest label `attack`) at revision `{revision() or 'unknown'}`.
Machine: {machine()}. Do not edit by hand: regenerate (README, Tests).

Each attack test drives the real daemon over raw sockets and prints one line
`attack: NAME key=value ...`; the columns are those keys:

- **clients held**: connections the daemon held open at once during the attack (`clients`;
  the total is the largest);
- **attacks tried**: hostile or unlucky inputs sent: connections, messages, signals,
  faults (`tried`);
- **faults survived**: of those, the ones after which the daemon answered as documented and
  kept tracking (`survived`); anything less than tried is a failed test;
- **bytes lost**: result bytes lost without being reported (`lost_bytes`); must be 0.

"–" means the test does not measure that figure. The other keys are under details
(`rss_growth_kb`: resident memory growth during the attack, `fd_growth`: open descriptors
left over).

""" + "\n\n".join(sections) + "\n"
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        f.write(doc)
    print(f"report.py: wrote {a.out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
