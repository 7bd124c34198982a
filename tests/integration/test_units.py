#!/usr/bin/python3
"""The systemd units (packaging/systemd): configured and installed by their
own CMake rules into a temporary prefix (with the built trackd put at the
prefix's bin/trackd, where ExecStart points), then

  1. `systemd-analyze verify` on trackd.service, trackd@.service (a
     template: verified as an instance) and trackd-fuse.service (with the
     built trackd-fuse at bin/trackd-fuse) says nothing and exits 0: it exits 0
     on unknown keys and bad values too, so any output fails;
  2. `systemd-analyze security --offline` rates both at 4.0 or less (its
     "OK" range; trackd-fuse.service, which needs only the network, at 2.0
     or less), so dropping hardening lines is noticed;
  3. both units carry the same service settings from User= on (the
     hardening is written twice: units cannot include a shared file).
Needs systemd-analyze (Debian's systemd package, installed by setup.sh); the
test is skipped (exit 77) only when the binary is absent.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

CMAKE, SRC, TRACKD, FUSE = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
UNITS = ("trackd.service", "trackd@.service")
# unit: (binary, the most exposure systemd-analyze security may rate it)
EXPOSURE = {"trackd.service": ("trackd", 4.0), "trackd@.service": ("trackd", 4.0),
            "trackd-fuse.service": ("trackd-fuse", 2.0)}
FAILS = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def service_tail(path):
    """The [Service] lines from User= on, comments dropped."""
    out, on = [], False
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("["):
                on = False
            if line.startswith("User="):
                on = True
            if on and line and not line.startswith("#"):
                out.append(line)
    return out


analyze = shutil.which("systemd-analyze")
if not analyze:
    print("SKIP: no systemd-analyze (Debian package systemd; ./setup.sh test installs it)")
    sys.exit(77)

with tempfile.TemporaryDirectory() as d:
    prefix = os.path.join(d, "prefix")
    r = subprocess.run([CMAKE, "-Wno-dev", "-S", os.path.join(SRC, "packaging", "systemd"), "-B",
                        os.path.join(d, "build"), f"-DCMAKE_INSTALL_PREFIX={prefix}"],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"the units configure on their own ({r.stderr.strip()})")
    r = subprocess.run([CMAKE, "--install", os.path.join(d, "build")], capture_output=True, text=True)
    check(r.returncode == 0, f"cmake --install ({r.stderr.strip()})")
    unit_dir = os.path.join(prefix, "lib", "systemd", "system")
    os.makedirs(os.path.join(prefix, "bin"))
    os.symlink(os.path.abspath(TRACKD), os.path.join(prefix, "bin", "trackd"))
    os.symlink(os.path.abspath(FUSE), os.path.join(prefix, "bin", "trackd-fuse"))
    for unit, (binary, most) in EXPOSURE.items():
        path = os.path.join(unit_dir, unit)
        check(os.path.isfile(path), f"installs lib/systemd/system/{unit}")
        if not os.path.isfile(path):
            continue
        with open(path) as f:
            text = f.read()
        check(f"ExecStart={prefix}/bin/{binary} " in text and f"{prefix}/etc/" in text,
              f"{unit}: paths follow the prefix")
        r = subprocess.run([analyze, "verify", path], capture_output=True, text=True)
        said = (r.stdout + r.stderr).strip()
        check(r.returncode == 0 and not said, f"{unit}: systemd-analyze verify is clean ({said!r})")
        r = subprocess.run([analyze, "security", "--offline=yes", path], capture_output=True,
                           text=True)
        m = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", r.stdout)
        check(m is not None and float(m.group(1)) <= most,
              f"{unit}: systemd-analyze security exposure <= {most} ({m and m.group(1)})")
    tails = [service_tail(os.path.join(unit_dir, u)) for u in UNITS]
    check(tails[0] == tails[1] and len(tails[0]) > 10,
          "both units have the same settings from User= on: "
          + str(set(tails[0]).symmetric_difference(tails[1])))
if FAILS:
    sys.exit(f"{len(FAILS)} check(s) failed")
print("all unit checks passed")
