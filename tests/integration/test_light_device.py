#!/usr/bin/python3
"""Integration (issue 27): the light module never copies a GPU frame.

The lighting clip (light_scene.py: light 100 % -> 45 %, white balance
drifting, a grey card) as H.264 (what NVDEC decodes), with illumination
(the card as a patch) and "adapt": {} on every object, through the real
daemon with --hwdec auto.

- While it plays (paced, --loop), /metrics: frames flow, the light's gains
  have moved off 1 (the reference was measured on the frames), and
  trackd_frames_downloaded_total is 0: no frame was copied to the host
  although every frame's reference and adaptation points were read. Then
  a GET /snapshot.jpg copies one: on the GPU the counter rises to >= 1
  (the counter counts copies; host frames are never copied, so without a
  GPU it stays 0).
- The same clip with --fast: --hwdec auto (GPU: NVDEC device frames on the
  cuda backend, the points read by its gather kernel) gives the same
  results, ranges included, as --hwdec none --backend cpu-ref (software
  decoding, the points read from host memory by the definition).

Without a GPU (CI) both runs decode in software (auto picks the cpu
backend) and the checks hold as they should there; the GPU half is the
device's run (the log's decoder line says which it was).

    test_light_device.py TRACKD                  makes the clip, runs the checks
    test_light_device.py --make DIR              only makes DIR/light.mp4 and
                                                 DIR/light-objects.json
    test_light_device.py TRACKD --clip DIR --need-gpu
        the checks on DIR's clip; fails unless the GPU decoded (the device
        bundle: tests/device/bundle.sh makes DIR, run-on-device.sh runs it)

Making the clip needs ffmpeg with libx264 and /usr/bin/python3 with numpy;
the checks need neither.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from daemon_proc import http_get, start_trackd, stop_trackd  # noqa: E402

FRAMES = 120
errors = []


def check(cond, msg):
    print(("ok: " if cond else "FAIL: ") + msg, flush=True)
    if not cond:
        errors.append(msg)


def metric(text, name, labels=""):
    for line in text.splitlines():
        if line.startswith(name + labels + " "):
            return float(line.split()[-1])
    return None


def scrape(port):
    st, body = http_get(port, "/metrics", timeout=5)
    return body.decode() if st == 200 else ""


def results(stdout):
    """Per frame, the objects without timings."""
    return [json.loads(line)["objects"] for line in stdout.splitlines()]


def make(out):
    """DIR/light.mp4 (the lighting clip as H.264 4:2:0, what NVDEC decodes)
    and DIR/light-objects.json (its taught objects with illumination and
    adapt on); returns their paths."""
    with tempfile.TemporaryDirectory() as tmp:
        ffv1 = os.path.join(tmp, "light.mkv")
        subprocess.run([sys.executable, os.path.join(HERE, "light_scene.py"), ffv1, "--frames",
                        str(FRAMES)], check=True)
        truth = json.load(open(ffv1 + ".truth.json"))
        objs = json.load(open(ffv1 + ".objects.json"))
        clip = os.path.join(out, "light.mp4")
        subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", ffv1, "-c:v", "libx264",
                        "-profile:v", "high", "-pix_fmt", "yuv420p", "-crf", "16", clip],
                       check=True)
    objs["illumination"] = {"reference": "patch", "rect": truth["card"]}
    for d in objs["objects"]:
        d["adapt"] = {}
    path = os.path.join(out, "light-objects.json")
    with open(path, "w") as fh:
        json.dump(objs, fh)
    return clip, path


def main():
    args = sys.argv[1:]
    if args[0] == "--make":
        make(args[1])
        return
    trackd = args[0]
    need_gpu = "--need-gpu" in args
    with tempfile.TemporaryDirectory() as tmp:
        if "--clip" in args:
            d = args[args.index("--clip") + 1]
            clip, path = os.path.join(d, "light.mp4"), os.path.join(d, "light-objects.json")
        else:
            clip, path = make(tmp)
        objs = json.load(open(path))

        # Paced, looping: /metrics while it plays (no WebSocket client: no
        # preview is made). The focus check is on (its default): it measures
        # NVDEC frames in place on the GPU, so it copies none either (before
        # it did, one frame in 30: the H100 run of 2026-11-27 named it).
        log_path = os.path.join(tmp, "trackd.log")
        with open(log_path, "w") as log:
            p, port = start_trackd(trackd, ["--input", clip, "--objects", path, "--loop",
                                            "--output", os.devnull], log)
            try:
                def light_moved():
                    t = scrape(port) if p.poll() is None else ""
                    frames = metric(t, "trackd_frames_processed_total") or 0
                    gains = [metric(t, "trackd_light_gain", f'{{channel="{c}"}}') for c in "RGB"]
                    moved = all(g is not None for g in gains) and any(g != 1 for g in gains)
                    return t if frames >= FRAMES // 2 and moved else None
                t0, text = time.monotonic(), None
                while text is None and p.poll() is None and time.monotonic() - t0 < 90:
                    try:
                        text = light_moved()
                    except OSError:
                        pass
                    time.sleep(0.3)
                check(text is not None, "frames flow and the light's gains move off 1")
                log_text = open(log_path).read()
                gpu = "on the GPU" in log_text
                print("decoding on the GPU" if gpu else "decoding in software (no usable GPU)")
                if need_gpu:
                    check(gpu, "--need-gpu: the GPU decoded the clip")
                if text:
                    down = metric(text, "trackd_frames_downloaded_total")
                    check(down == 0, f"no frame copied to the host for the light (downloaded "
                          f"{down} after {metric(text, 'trackd_frames_processed_total')} frames)")
                st, body = http_get(port, "/snapshot.jpg")
                check(st == 200 and body[:2] == b"\xff\xd8", f"/snapshot.jpg: {st}")
                after = metric(scrape(port), "trackd_frames_downloaded_total")
                if gpu:
                    check(after is not None and after >= 1,
                          f"a snapshot of a GPU frame is counted as a copy: {after}")
                else:
                    check(after == 0, f"host frames are never copied: {after}")
            finally:
                stop_trackd(p)

        # Whole clip, --fast: the device path == cpu-ref on host frames, in
        # both modes (whole frames; regions from the second frame on).
        for mode in ("full", "roi"):
            runs = {}
            for name, extra in (("auto", []), ("cpu-ref", ["--hwdec", "none", "--backend",
                                                           "cpu-ref"])):
                r = subprocess.run([trackd, "--input", clip, "--objects", path, "--fast",
                                    "--no-server", "--output", "-", "--mode", mode, *extra],
                                   capture_output=True, text=True, timeout=600)
                check(r.returncode == 0, f"{mode} {name} runs (exit {r.returncode}: "
                      f"{r.stderr[-300:]})")
                runs[name] = results(r.stdout)
                said = [l for l in r.stderr.splitlines() if re.search(r"decoding|backend:", l)]
                print(f"{mode} {name}:", said)
            a, b = runs["auto"], runs["cpu-ref"]
            check(len(a) == FRAMES and a == b,
                  f"{mode}: --hwdec auto ({len(a)} frames) == --hwdec none --backend cpu-ref "
                  f"({len(b)}), ranges included")
        if a:
            dim = {o["name"]: o for o in a[-1]}
            check(all("range" in o for o in dim.values()),
                  "the last frame's objects carry the ranges in use")
            taught = next(d for d in objs["objects"] if d["name"] == "red")["lo"][2]
            red = dim.get("red", {}).get("range", {}).get("lo", [0, 0, 999])[2]
            check(red < taught, f"at the dim end red's V lower bound {red} is below the taught "
                  f"{taught} (the reference was measured)")
            check(sum(o["found"] for o in dim.values()) >= len(dim) - 1,
                  f"objects are found at the dim end: {[(n, o['found']) for n, o in dim.items()]}")
    if errors:
        sys.exit(f"{len(errors)} failures")
    print("ok")


if __name__ == "__main__":
    main()
