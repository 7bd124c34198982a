#!/usr/bin/env python3
"""Lists functions of production C and CUDA code longer than the house limit
(STYLE.md habit 17: no function over ~120 lines, kernels included).

A function is what the house format (.clang-format, BreakBeforeBraces: Linux)
makes of it: its signature starts at column 0 and its body is the lines from
a "{" alone at column 0 to the next "}" at column 0. Its length is counted
from the first line of the signature to that closing brace, both included.

Usage: long_functions.py [--max N] [--allow FILE] [PATH...]
  PATH: files or folders (default: CHECKED below, from the repository root).
  --allow FILE: "path:function" lines (# comments) that may still be long:
  the known exceptions outside the folders already done. Listed functions
  that are no longer long are reported too, so the list only shrinks.
Exit status 1 when a function not in the allow list is over the limit.
"""
import argparse
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# Production code: the folders whose functions must stay under the limit.
CHECKED = ["base", "gpu", "scene", "config", "protocol", "daemon", "fuse", "bench"]
EXTS = (".c", ".h", ".cu", ".cuh")
# Column-0 lines that open a brace but are not functions.
NOT_FUNC = re.compile(r"^(namespace|extern|struct|union|enum|typedef|class|static const|const)\b")
# Attribute-like words before a name: __launch_bounds__(256) kernel(...).
ATTRS = {"__launch_bounds__", "__attribute__", "alignas", "__align__"}
NAME = re.compile(r"([A-Za-z_]\w*)\s*(<[^()]*>)?\s*\(")


def functions(path):
    """Yields (name, first line, length) of every function defined in path."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i] != "{":
            i += 1
            continue
        # The signature: the column-0 lines above the brace, back to the one
        # that is not a continuation of it.
        s = i - 1
        while s > 0 and lines[s] and lines[s][0] in " \t" and lines[s - 1] and \
                not lines[s - 1].rstrip().endswith((";", "}", "*/")):
            s -= 1
        head = " ".join(l.strip() for l in lines[s:i])
        end = i + 1
        while end < len(lines) and not lines[end].startswith("}"):
            end += 1
        names = [m.group(1) for m in NAME.finditer(head) if m.group(1) not in ATTRS]
        if names and not NOT_FUNC.match(lines[s]) and not head.startswith("#"):
            yield names[0], s + 1, end - s + 1
        i = end + 1


def sources(paths):
    for p in paths:
        if os.path.isfile(p):
            yield p
            continue
        for d, dirs, files in os.walk(p):
            dirs[:] = sorted(x for x in dirs if x not in ("node_modules", "build"))
            for name in sorted(files):
                if name.endswith(EXTS):
                    yield os.path.join(d, name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max", type=int, default=120)
    ap.add_argument("--allow")
    ap.add_argument("paths", nargs="*")
    a = ap.parse_args()
    os.chdir(ROOT)
    allow = set()
    if a.allow:
        with open(a.allow, encoding="utf-8") as f:
            allow = {l.split("#")[0].strip() for l in f} - {""}
    paths = a.paths or [p for p in CHECKED if os.path.isdir(p)]
    bad, seen = 0, set()
    for path in sources(paths):
        rel = os.path.relpath(path, ROOT)
        for name, line, n in functions(path):
            key = f"{rel}:{name}"
            if n <= a.max:
                continue
            seen.add(key)
            if key in allow:
                print(f"known: {rel}:{line}: {name} is {n} lines")
            else:
                print(f"too long: {rel}:{line}: {name} is {n} lines (limit {a.max})")
                bad = 1
    for key in sorted(allow - seen):
        print(f"no longer long (remove from the allow list): {key}")
    if not bad:
        print(f"long functions: none over {a.max} lines outside the allow list")
    return bad


if __name__ == "__main__":
    sys.exit(main())
