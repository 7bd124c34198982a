#!/usr/bin/python3
"""Integration: `cmake --install` lays out bin/, the web UI, the man page,
the examples and etc/trackd under the prefix, and gives a trackd that serves its web UI from
the installed share/trackd/web, also after the whole prefix was moved (the
folder is found from the binary's own path, not compiled in)."""
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon_proc import start_trackd  # noqa: E402

CMAKE, BUILD = sys.argv[1], sys.argv[2]
WEB_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "web")


def expect(cond, what):
    if not cond:
        sys.exit(f"FAIL: {what}")
    print(f"ok: {what}")


def get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""


with tempfile.TemporaryDirectory() as d:
    first = os.path.join(d, "first")
    r = subprocess.run([CMAKE, "--install", BUILD, "--prefix", first], capture_output=True, text=True)
    expect(r.returncode == 0, f"cmake --install into a temporary prefix ({r.stderr.strip()})")
    web_files = sorted(os.listdir(WEB_SRC))
    expect(os.path.isfile(os.path.join(first, "bin/trackd")), "installs bin/trackd")
    for f in web_files:
        expect(os.path.isfile(os.path.join(first, "share/trackd/web", f)), f"installs share/trackd/web/{f}")
    # The rest of the layout; the example for /etc stays under the prefix
    # (only prefix /usr, a package's, puts it in /etc itself).
    for f in ("share/man/man1/trackd.1.gz", "share/doc/trackd/examples/objects.example.json",
              "share/doc/trackd/examples/demo-objects.json", "etc/trackd/objects.json",
              "share/doc/trackd/OBJECTS.md", "share/doc/trackd/PROTOCOL.md",
              "bin/trackd-fuse", "share/man/man1/trackd-fuse.1.gz",
              "lib/systemd/system/trackd-fuse.service", "share/trackd/fuse-web/index.html",
              "share/trackd/fuse-web/app.js"):
        expect(os.path.isfile(os.path.join(first, f)), f"installs {f}")

    # Move the prefix: nothing may still point at the first place (or at the
    # source tree): mark the installed page to tell it from the source's.
    moved = os.path.join(d, "elsewhere", "opt")
    os.makedirs(os.path.dirname(moved))
    shutil.move(first, moved)
    web = os.path.join(moved, "share", "trackd", "web")
    marker = b"<!-- installed copy -->\n"
    with open(os.path.join(web, "index.html"), "ab") as f:
        f.write(marker)
    trackd = os.path.join(moved, "bin", "trackd")

    log_path = os.path.join(d, "trackd.log")
    with open(log_path, "w") as log:
        p, port = start_trackd(trackd, ["--no-preview"], log)
        try:
            status, body = get(port, "/")
            expect(status == 200 and marker in body, f"GET / from the moved prefix's web folder ({status})")
            for f in web_files:
                if f == "index.html":
                    continue
                status, body = get(port, "/" + f)
                with open(os.path.join(WEB_SRC, f), "rb") as src:
                    expect(status == 200 and body == src.read(), f"GET /{f} ({status})")
        finally:
            p.terminate()
            p.wait(timeout=30)
    expect(p.returncode == 0, f"trackd exits 0 on SIGTERM (got {p.returncode})")

    # --web-root still wins, and one that is not there is a clear error.
    other = os.path.join(d, "other-web")
    os.makedirs(other)
    with open(os.path.join(other, "index.html"), "w") as f:
        f.write("<html>other</html>\n")
    with open(log_path, "w") as log:
        p, port = start_trackd(trackd, ["--no-preview", "--web-root", other], log)
        try:
            status, body = get(port, "/")
            expect(status == 200 and b"other" in body, "--web-root wins over the installed folder")
        finally:
            p.terminate()
            p.wait(timeout=30)
    missing = os.path.join(d, "no-such-web")
    r = subprocess.run([trackd, "--web-root", missing, "--listen", "127.0.0.1:0", "--frames", "1"], capture_output=True,
                       text=True, timeout=60)
    expect(r.returncode == 66 and f"--web-root {missing}: no readable index.html" in r.stderr,
           f"a missing --web-root exits 66 with a clear error ({r.stderr.strip()})")
print("install: all passed")
