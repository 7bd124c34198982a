#!/usr/bin/python3
"""The README's first program is the tested example itself: every code block
of examples/ws_client.py (from its first import) and frame_text.py's
print_frame must appear in README.md verbatim, indented as a Markdown code
block. Fails, naming the file, when an example changes and the README does not.

    readme_examples.py SOURCE_DIR
"""
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
readme = (root / "README.md").read_text()


def block(text):
    return "\n".join("    " + line if line else "" for line in text.rstrip().split("\n"))


parts = {
    "examples/ws_client.py": "import asyncio",
    "examples/frame_text.py": "def print_frame",
}
bad = []
for name, start in parts.items():
    text = (root / name).read_text()
    if start not in text:
        bad.append(f"{name}: no '{start}' to start the README's copy at")
        continue
    if block(start + text.split(start, 1)[1]) not in readme:
        bad.append(f"{name}: README.md does not show it as it is")
for b in bad:
    print("readme_examples:", b)
print("readme_examples:", "ok" if not bad else f"{len(bad)} stale")
sys.exit(1 if bad else 0)
