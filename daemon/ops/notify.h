/* systemd's service notifications (sd_notify(3)): readiness, status text,
 * the watchdog and stop/reload announcements for Type=notify units. Every
 * function does nothing when NOTIFY_SOCKET is unset (trackd run by hand or
 * by another supervisor), so callers never check first. Thread-safe: each
 * call is one datagram, sent whole. */
#ifndef TRK_DAEMON_NOTIFY_H
#define TRK_DAEMON_NOTIFY_H

#include <stdbool.h>

/* Whether a service manager listens (NOTIFY_SOCKET is set). */
bool trk_notify_enabled(void);

/* READY=1 with a STATUS= line: start-up is done (or a reload finished). */
void trk_notify_ready(const char *status);

/* STATUS=<text>: what `systemctl status` shows, e.g. "tracking 59.9 fps, 3
 * clients" or "waiting for camera /dev/video0". */
void trk_notify_status(const char *status);

/* RELOADING=1: a SIGHUP reload started; trk_notify_ready ends it. */
void trk_notify_reloading(void);

/* STOPPING=1 with a STATUS= line; only the first call sends (a signal and
 * the end of the pipeline may both announce the stop). */
void trk_notify_stopping(const char *status);

/* Seconds between watchdog pets the manager expects, half its WatchdogSec
 * (sd_watchdog_enabled(3): WATCHDOG_USEC, and WATCHDOG_PID when set must be
 * this process); 0 when there is no watchdog. Read once, then cached. */
double trk_notify_watchdog_period(void);

/* WATCHDOG=1: this process is healthy. */
void trk_notify_watchdog(void);

#endif
