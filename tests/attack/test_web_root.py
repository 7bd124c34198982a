#!/usr/bin/python3
"""Attack: reading files outside the web root through the real trackd.

A copy of the web root gets a symlink to /etc/passwd, one to a directory
outside (holding a secret file), one to a secret file beside the root, and a
subdirectory without index.html. Raw HTTP requests (no client-side path
normalisation) try ../ and %2e%2e traversal, the symlinks and a directory
listing; none may return anything but the root's own files. A symlink that
stays inside the root still works, and so does the page.

Usage: test_web_root.py TRACKD WEB_ROOT
"""
import os
import shutil
import sys
import tempfile

from attack import FAILS, TRIED, Daemon, check, finish, http_get, report

SECRET = b"trk-secret-4f1d"


def main():
    trackd, src_root = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as d:
        root = os.path.join(d, "web")
        shutil.copytree(src_root, root)
        outside = os.path.join(d, "outside")
        os.mkdir(outside)
        with open(os.path.join(outside, "secret.txt"), "wb") as f:
            f.write(SECRET)
        with open(os.path.join(d, "beside.txt"), "wb") as f:
            f.write(SECRET)
        os.symlink("/etc/passwd", os.path.join(root, "passwd"))
        os.symlink(outside, os.path.join(root, "out"))
        os.symlink("../beside.txt", os.path.join(root, "beside.txt"))
        os.symlink("index.html", os.path.join(root, "alias.html"))  # inside: allowed
        os.mkdir(os.path.join(root, "empty"))
        with open(os.path.join(root, "empty", "x.txt"), "wb") as f:
            f.write(b"x")

        with Daemon(trackd, ["--size", "160x90", "--fps", "10", "--backend", "cpu",
                             "--no-preview", "--web-root", root], d) as dm:
            port = dm.port
            status, body = http_get(port, "/")
            check(status == 200 and b"<html" in body.lower(), f"GET / serves the page ({status})")
            index = open(os.path.join(root, "index.html"), "rb").read()
            status, body = http_get(port, "/alias.html")
            check(status == 200 and body == index,
                  f"a symlink inside the root is served ({status})")
            attacks = [
                "/passwd", "/out/secret.txt", "/out/", "/out", "/beside.txt",
                "/../beside.txt", "/../../../../etc/passwd", "/%2e%2e/beside.txt",
                "/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "/..%2fbeside.txt", "/%2E%2E/outside/secret.txt",
                "/empty/", "/empty", "/out/../out/secret.txt", "//etc/passwd",
                "/./../beside.txt", "/" + "a/" * 200 + "../" * 200 + "passwd",
            ]
            for path in attacks:
                status, body = http_get(port, path)
                leaked = SECRET in body or b"root:" in body or b"x.txt" in body
                check(not leaked and status in (None, 400, 403, 404),
                      f"GET {path[:60]} gives nothing from outside ({status}, {len(body)} bytes)")
            check(dm.alive(), "trackd still running")
    report("web_root", tried=TRIED[0], survived=TRIED[0] - len(FAILS))
    finish()


if __name__ == "__main__":
    main()
