#!/usr/bin/python3
"""package_deb: `cpack -G DEB` from this build gives a .deb that a Debian
system can install: its name and control fields, Depends naming the package
of every library trackd is linked with (none for CUDA), the install layout
(binary, web root, man page, examples, the /etc conffile, systemd units when
the build has them), maintainer scripts that parse, and an installed trackd
(extracted, not installed: that is tests/fresh-debian/package.sh) that runs
--check-config on the shipped examples.

    test_deb.py CPACK BUILD_DIR INSTALL_PREFIX SOURCE_DIR

Exit 77 (skipped) for a build not configured with prefix /usr: cpack refuses
it (./setup.sh configures /usr)."""
import glob
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile

CPACK, BUILD, PREFIX, SRC = sys.argv[1:5]


def expect(cond, what):
    if not cond:
        sys.exit(f"FAIL: {what}")
    print(f"ok: {what}")


def out(*cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


if PREFIX != "/usr":
    print(f"SKIP: this build's CMAKE_INSTALL_PREFIX is {PREFIX}; the package is built from a "
          "/usr build (./setup.sh build and ./setup.sh package configure one)")
    sys.exit(77)
for tool in ("dpkg-deb", "dpkg-shlibdeps", "file", "objdump"):
    expect(shutil.which(tool), f"{tool} is installed (Debian: dpkg-dev, file, binutils)")

with tempfile.TemporaryDirectory() as d:
    r = out(CPACK, "-G", "DEB", "-B", d, "--config", os.path.join(BUILD, "CPackConfig.cmake"),
            timeout=240)
    expect(r.returncode == 0, f"cpack -G DEB exits 0 ({(r.stdout + r.stderr).strip()[-600:]})")
    version = out(os.path.join(BUILD, "daemon", "trackd"), "--version").stdout.split()[1]
    arch = out("dpkg", "--print-architecture").stdout.strip()
    debs = glob.glob(os.path.join(d, "*.deb"))
    name = f"trackd_{version}_{arch}.deb"
    expect([os.path.basename(p) for p in debs] == [name], f"one package, {name} ({debs})")
    deb = debs[0]

    # --- control fields ---------------------------------------------------------
    def field(f):
        return out("dpkg-deb", "-f", deb, f).stdout.strip()

    for f, want in (("Package", "trackd"), ("Version", version), ("Architecture", arch),
                    ("Section", "video"), ("Priority", "optional")):
        expect(field(f) == want, f"{f}: {want} (got {field(f)!r})")
    expect(re.match(r".+ <[^@ ]+@[^@ ]+>$", field("Maintainer")), f"Maintainer: {field('Maintainer')}")
    desc = field("Description").splitlines()
    expect(len(desc) > 3 and "tracking" in desc[0], "Description: a summary and a long description")

    # Depends: the package of each library trackd is linked with (NEEDED),
    # found as the dynamic linker finds it, by dpkg -S.
    depends = {re.split(r"[ (]", d.strip())[0] for d in field("Depends").split(",") if d.strip()}
    x = os.path.join(d, "x")
    r = out("dpkg-deb", "-x", deb, x)
    expect(r.returncode == 0, "dpkg-deb -x unpacks it")
    trackd = os.path.join(x, "usr/bin/trackd")
    needed = re.findall(r"^\s*NEEDED\s+(\S+)", out("objdump", "-p", trackd).stdout, re.M)
    expect(len(needed) >= 5, f"trackd is linked with {len(needed)} libraries: {needed}")
    lddout = out("ldd", trackd).stdout
    paths = dict(re.findall(r"^\s*(\S+) => (/\S+)", lddout, re.M))
    # The dynamic linker itself (NEEDED by a CUDA build through the static
    # CUDA runtime) is listed by its path alone: "/lib64/ld-linux-x86-64.so.2 (0x...)".
    for p in re.findall(r"^\s*(/\S+) \(0x", lddout, re.M):
        paths.setdefault(os.path.basename(p), p)
    for soname in needed:
        path = paths.get(soname)
        expect(path, f"{soname} is found by the dynamic linker")
        owners = set()
        for p in (path, os.path.realpath(path), re.sub(r"^/usr/lib/", "/lib/", os.path.realpath(path))):
            r = out("dpkg", "-S", p)
            if r.returncode == 0:
                owners = {o.split(":")[0].strip() for o in r.stdout.split(":", 1)[0].split(",")}
                break
        expect(owners & depends, f"Depends names {soname}'s package {sorted(owners)}")
    expect("adduser" in depends, "Depends: adduser (the postinst makes the trackd user)")
    expect(not [p for p in depends if re.search("cuda|nvidia", p)],
           f"no CUDA or NVIDIA dependency (the runtime is static, the driver optional): {sorted(depends)}")

    # --- contents ---------------------------------------------------------------
    listing = out("dpkg-deb", "-c", deb).stdout.splitlines()
    files = {}
    for line in listing:
        parts = line.split()
        path = parts[5][1:]  # "./usr/bin/trackd" -> "/usr/bin/trackd"
        files[path.rstrip("/") or "/"] = parts[0]
    wanted = ["/usr/bin/trackd", "/usr/share/man/man1/trackd.1.gz", "/etc/trackd/objects.json",
              "/usr/share/doc/trackd/examples/objects.example.json",
              "/usr/share/doc/trackd/examples/demo-objects.json",
              "/usr/share/doc/trackd/OBJECTS.md", "/usr/share/doc/trackd/PROTOCOL.md",
              "/usr/bin/trackd-fuse", "/usr/share/man/man1/trackd-fuse.1.gz",
              "/usr/share/trackd/fuse-web/index.html", "/usr/share/trackd/fuse-web/app.js"]
    wanted += [f"/usr/share/trackd/web/{f}" for f in sorted(os.listdir(os.path.join(SRC, "web")))]
    missing = [w for w in wanted if w not in files]
    expect(not missing, f"the package holds the layout ({len(wanted)} files; missing: {missing})")
    expect(files["/usr/bin/trackd"] == "-rwxr-xr-x", f"/usr/bin/trackd is 0755 ({files['/usr/bin/trackd']})")
    stray = [f for f in files if not re.match(r"^/(usr|etc)(/|$)|^/lib/systemd(/|$)|^/lib$|^/$", f)
             or f.startswith("/usr/local")]
    expect(not stray, f"nothing outside /usr, /etc and /lib/systemd: {stray}")
    with gzip.open(os.path.join(x, "usr/share/man/man1/trackd.1.gz"), "rt") as f:
        man = f.read()
    expect(man.startswith('.\\" Generated') and "\\-\\-check\\-config" in man,
           "the man page is the generated one, --check-config included")
    if shutil.which("groff"):
        r = out("groff", "-ww", "-z", "-man", input=man)
        expect(r.returncode == 0 and not r.stderr, f"the packaged man page: groff -ww silent ({r.stderr.strip()})")

    units = sorted(f for f in files if re.search(r"/systemd/system/[^/]+\.service$", f))
    if not units:
        print("note: no systemd units in this build (packaging/systemd not here): none checked")
    def owner(path):
        for p in (path, os.path.realpath(path), re.sub(r"^/usr/", "/", os.path.realpath(path))):
            r = out("dpkg", "-S", p)
            if r.returncode == 0:
                return {o.split(":")[0].strip() for o in r.stdout.split(":", 1)[0].split(",")}
        return set()

    # A unit's commands are the package's own or come from a package it
    # depends on (a minimal Debian has no /bin/kill without procps).
    for u in units:
        with open(os.path.join(x, u.lstrip("/"))) as f:
            execs = re.findall(r"^Exec\w*=[-@+!:]*(/\S+)", f.read(), re.M)
        expect(execs, f"{u} has Exec lines ({execs})")
        for e in execs:
            expect(e in files or owner(e) & depends,
                   f"{u}: {e} is in the package or in one it depends on ({sorted(owner(e))})")

    # --- control archive ---------------------------------------------------------
    ctl = os.path.join(d, "control")
    expect(out("dpkg-deb", "-e", deb, ctl).returncode == 0, "dpkg-deb -e extracts the control files")
    with open(os.path.join(ctl, "conffiles")) as f:
        conffiles = f.read().split()
    expect(conffiles == ["/etc/trackd/objects.json"] and all(c in files for c in conffiles),
           f"conffiles: /etc/trackd/objects.json, shipped ({conffiles})")
    for script in ("postinst", "prerm", "postrm"):
        p = os.path.join(ctl, script)
        expect(os.path.isfile(p) and os.stat(p).st_mode & 0o777 == 0o755, f"{script}: mode 0755")
        r = out("sh", "-n", p)
        expect(r.returncode == 0, f"{script}: sh -n parses it ({r.stderr.strip()})")
    with open(os.path.join(ctl, "postinst")) as f:
        postinst = f.read()
    expect(re.search(r"adduser --system --group .*trackd", postinst) and "trackd video" in postinst,
           "postinst makes the system user trackd and puts it in video")

    # --- the packaged trackd on the packaged examples -----------------------------
    for ex in ("objects.example.json", "demo-objects.json"):
        p = os.path.join(x, "usr/share/doc/trackd/examples", ex)
        r = out(trackd, "--check-config", p)
        expect(r.returncode == 0 and re.fullmatch(re.escape(p) + r": ok, [1-9]\d* objects?\n", r.stdout),
               f"packaged trackd --check-config {ex}: {r.stdout.strip()} {r.stderr.strip()}")
    r = out(trackd, "--check-config", os.path.join(x, "etc/trackd/objects.json"))
    expect(r.returncode == 0, f"the /etc conffile passes --check-config ({r.stderr.strip()})")
print("package_deb: all passed")
