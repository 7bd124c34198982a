/* --spin auto on a shared machine: polling threads need cores to spare, and
 * many daemons on one host (a camera each) would all poll at once and take
 * each other's cores. So auto polls only in a daemon that holds one of the
 * machine's spin slots: --spin-slots of them (default a quarter of the
 * online CPUs, TRK_SPIN_MIN_CPUS each), one lock file each in /dev/shm (or
 * $TRACKD_SPIN_DIR), trackd-spin.K, held with flock(2) from start to exit;
 * the kernel releases it when the process ends, however it ends. The first
 * daemons to start take the slots; the rest sleep as with --spin off and
 * try again every TRK_SPIN_RETRY_S, so a slot given up (a daemon stopped)
 * goes to one of them.
 *
 * Threads: trk_spin_decide once at start, then trk_spin_retry from one
 * thread (the processing thread). */
#ifndef TRK_DAEMON_SPIN_H
#define TRK_DAEMON_SPIN_H

#include <stdbool.h>

/* The folder of the slot files when $TRACKD_SPIN_DIR is unset or empty. */
#define TRK_SPIN_DIR "/dev/shm"
/* Seconds between a waiting daemon's tries for a slot (a few open and
 * flock calls each). */
#define TRK_SPIN_RETRY_S 1.0

/* Whether this daemon polls with mode (enum trk_spin, pipeline.h): on: yes;
 * off: no; auto: whether it could take a slot (slots > 0: that many in all,
 * 0: online CPUs / TRK_SPIN_MIN_CPUS). A slot taken stays held until the
 * process exits. When no slot file can be opened (no such folder, no
 * permission) auto decides by the CPUs alone, as if the machine were its
 * own, with a warning. Logs the decision. Call once, at start. */
bool trk_spin_decide(int mode, int slots);

/* After trk_spin_decide's auto found every slot held: at most once per
 * TRK_SPIN_RETRY_S (now: trk_now's clock, s) tries for one again; true
 * once one is taken (logged; the caller starts polling), then false ever
 * after, as it is at once in every other case. */
bool trk_spin_retry(double now);

#endif
