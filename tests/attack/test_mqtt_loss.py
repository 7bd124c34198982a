#!/usr/bin/python3
"""Attack: MQTT frames under broker faults are published or counted dropped,
and none arrives late (issue 25, item 1).

    test_mqtt_loss.py TRACKD [--seconds S]

The real trackd (demo scene, 30 fps, --mqtt-max-age 1) publishes through a
scripted proxy in front of a real mosquitto; a real subscriber reads the
broker directly and notes when each frame arrives. Three brokers:
  1. slow: the proxy reads 20 KB/s from trackd, about a third of what
     trackd sends. Every frame trackd processed is counted published or
     dropped (its totals line at exit against its NDJSON output); every
     frame counted published arrived, and the frames that arrived beyond
     those are no more than the ones counted late or lost (sent, no PUBACK
     in time); seq only grows; every frame that arrived older than the max
     age + 0.5 s (its wall_ms to the arrival) was counted late or lost (on an
     idle machine none arrives so: trackd sends a frame only while it should
     reach the broker within half the max age).
  2. stall: the proxy stops reading for 5 s mid-run (a hung broker), then
     reads again. The same accounting; the frames that arrive late are the
     ones in flight when it stalled, at most the window (8 frames), and were
     counted late.
  3. max_packet_size 600 (each frame message is larger): trackd learns the
     limit from the CONNACK, publishes no frame, counts every one refused,
     and says so in one log line that names the limit; it stays connected
     (one connection) and logs no lost connection.
  4. the same broker behind a proxy that refuses MQTT 5 as a 3.1.1-only
     broker does: trackd says it speaks 3.1.1 from then on; the broker then
     closes the connection at the first frame, so trackd backs off (no more
     than 7 connections in 8 s; 16 at 0.5 s), says so once with the largest
     message it sent, and counts every frame dropped.
Prints `attack: mqtt_loss tried=N survived=N`.
"""
import os
import re
import tempfile
import time

from attack import Daemon, check, finish, parse_args, report
from mqtt_rig import Broker, Proxy, Sub, mqtt_totals, ndjson_count

MAX_AGE = 1.0
SLACK = 0.5     # the subscriber's own delays on a loaded machine
WINDOW = 8      # TRK_MQTT_WINDOW
DEMO = ["--size", "320x240", "--fps", "30", "--backend", "cpu", "--no-preview",
        "--stats-interval", "0", "--name", "cam", "--mqtt-max-age", str(MAX_AGE)]


def run(trackd, d, name, broker, port, seconds, during=None):
    """trackd publishing to 127.0.0.1:port for seconds (during(t0) runs in
    between, if given); returns (totals, processed, frames received, log)."""
    sub = Sub(broker.port, "t/cam/#")
    out = os.path.join(d, name + ".ndjson")
    dd = os.path.join(d, name)
    os.mkdir(dd)
    with Daemon(trackd, [*DEMO, "--mqtt", f"mqtt://127.0.0.1:{port}/t", "-o", out], dd) as dm:
        t0 = time.monotonic()
        if during:
            during(t0)
        time.sleep(max(0.0, seconds - (time.monotonic() - t0)))
    time.sleep(1.0)  # what the broker has goes out to the subscriber
    sub.close()
    log = dm.log_text()
    return mqtt_totals(log), ndjson_count(out), sub.frames(), log


def accounting(name, totals, processed, frames):
    """The checks every case makes; returns whether they held."""
    if not check(totals is not None, f"{name}: trackd logs its MQTT totals at exit"):
        return False
    ok = check(totals["published"] + totals["dropped"] == processed,
               f"{name}: published {totals['published']} + dropped {totals['dropped']} = the "
               f"{processed} frames processed ({totals})")
    seqs = [s for s, _, _ in frames]
    got = len(set(seqs))
    unconfirmed = totals.get("late", 0) + totals.get("lost", 0) + totals.get("stopped", 0)
    ok &= check(totals["published"] <= got <= totals["published"] + unconfirmed,
                f"{name}: every frame counted published arrived, and no more than those "
                f"counted late/lost/stopped besides ({got} received, {totals['published']} "
                f"published, {unconfirmed} unconfirmed)")
    ok &= check(all(b > a for a, b in zip(seqs, seqs[1:])),
                f"{name}: the frames arrive in order, none twice")
    return ok


def late_frames(frames, bound):
    ages = [at - wall_ms / 1000 for _, wall_ms, at in frames]
    return [round(a, 2) for a in ages if a > bound], max(ages, default=0)


def late_counted(name, totals, frames):
    """Every frame that arrived past the max age (+ SLACK) was counted late
    or lost: trackd never counts a frame published that came late."""
    late, oldest = late_frames(frames, MAX_AGE + SLACK)
    counted = totals.get("late", 0) + totals.get("lost", 0) if totals else 0
    return check(len(late) <= counted,
                 f"{name}: {len(late)} frames arrived older than {MAX_AGE} + {SLACK} s, no more "
                 f"than the {counted} counted late or lost (oldest {oldest:.2f} s: {late[:10]})")


def case_slow(trackd, d, seconds):
    broker = Broker(d)
    proxy = Proxy(broker.port, "slow", rate=20000)
    try:
        totals, processed, frames, log = run(trackd, d, "slow", broker, proxy.port, seconds)
    finally:
        proxy.close()
        broker.stop()
    ok = accounting("slow", totals, processed, frames)
    if totals:
        ok &= check(totals["published"] > 0 and totals.get("age", 0) + totals.get("queue", 0) > 0,
                    f"slow: some frames get through, the rest are dropped for their age or the "
                    f"queue ({totals})")
    ok &= late_counted("slow", totals, frames)
    return ok


def case_stall(trackd, d, seconds):
    broker = Broker(d)
    proxy = Proxy(broker.port, "stall")

    def stall(t0):
        time.sleep(3)
        proxy.stalled.set()
        time.sleep(5)
        proxy.stalled.clear()

    try:
        totals, processed, frames, log = run(trackd, d, "stall", broker, proxy.port,
                                             seconds, stall)
    finally:
        proxy.close()
        broker.stop()
    ok = accounting("stall", totals, processed, frames)
    if totals:
        ok &= check(totals.get("age", 0) + totals.get("queue", 0) > 100,
                    f"stall: the frames of the 5 s stall are counted dropped ({totals})")
    ok &= late_counted("stall", totals, frames)
    late, _ = late_frames(frames, MAX_AGE + SLACK)
    ok &= check(len(late) <= WINDOW, f"stall: at most the window ({WINDOW}) of frames sent "
                f"before the stall arrive late ({len(late)}: {late[:10]})")
    return ok


def case_max_packet(trackd, d, seconds):
    broker = Broker(d, max_packet=600)
    try:
        totals, processed, frames, log = run(trackd, d, "max_packet", broker, broker.port,
                                             seconds)
    finally:
        broker.stop()
    ok = accounting("max_packet", totals, processed, frames)
    if totals:
        ok &= check(totals["published"] == 0 and totals.get("refused", 0) > 0.8 * processed,
                    f"max_packet: no frame published, (nearly) all refused ({totals})")
        ok &= check(totals["connections"] == 1, "max_packet: one connection, never dropped "
                    f"({totals['connections']})")
    said = re.findall(r"refuses packets over 600 bytes", log)
    ok &= check(len(said) == 1, f"max_packet: one log line names the broker's limit "
                f"({len(said)} lines)")
    ok &= check(not re.search(r"lost \(|ended .* later", log),
                "max_packet: no lost connection logged")
    ok &= check(not frames, f"max_packet: the subscriber got no frame ({len(frames)})")
    return ok


def case_v311(trackd, d, seconds):
    broker = Broker(d, max_packet=600)
    proxy = Proxy(broker.port, "v311")
    try:
        totals, processed, frames, log = run(trackd, d, "v311", broker, proxy.port, seconds)
    finally:
        proxy.close()
        broker.stop()
    ok = accounting("v311", totals, processed, frames)
    ok &= check(len(re.findall(r"does not speak MQTT 5", log)) == 1,
                "v311: one log line says the broker does not speak MQTT 5")
    said = re.findall(r"accepted the connection and it ended .*largest message sent on it was "
                      r"\d+ bytes", log)
    ok &= check(len(said) == 1, f"v311: one log line says the broker drops the connection, "
                f"with the largest message sent ({len(said)})")
    if totals:
        ok &= check(totals["published"] == 0 and 2 <= totals["connections"] <= 7,
                    f"v311: nothing published, the reconnects back off ({totals})")
    ok &= check(not frames, f"v311: the subscriber got no frame ({len(frames)})")
    return ok


def main():
    a = parse_args(seconds=12.0)
    results = []
    with tempfile.TemporaryDirectory() as d:
        results.append(case_slow(a.trackd, d, a.seconds))
        results.append(case_stall(a.trackd, d, a.seconds))
        results.append(case_max_packet(a.trackd, d, 5.0))
        results.append(case_v311(a.trackd, d, 8.0))
    report("mqtt_loss", tried=len(results), survived=sum(results))
    finish()


if __name__ == "__main__":
    main()
