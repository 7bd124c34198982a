#include "notify.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <systemd/sd-daemon.h>

#define LOG_TAG "systemd"
#include "log.h"

/* Failing to notify is logged once: a manager that stopped listening would
 * otherwise get a line per second (STATUS and WATCHDOG repeat). */
static _Atomic bool send_failed;

static void notify(const char *msg)
{
    /* sd_notify: 0 when NOTIFY_SOCKET is unset, > 0 when sent. */
    int r = sd_notify(0, msg);
    if (r < 0)
        log_once(send_failed, TRK_LOG_WARN, r, "cannot notify the service manager (%s)",
                 getenv("NOTIFY_SOCKET"));
    else if (r > 0)
        trk_log_once_reset(send_failed);
}

bool trk_notify_enabled(void)
{
    return getenv("NOTIFY_SOCKET") != NULL;
}

void trk_notify_ready(const char *status)
{
    char msg[512];
    snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%s", status);
    notify(msg);
}

void trk_notify_status(const char *status)
{
    char msg[512];
    snprintf(msg, sizeof(msg), "STATUS=%s", status);
    notify(msg);
}

void trk_notify_reloading(void)
{
    notify("RELOADING=1\nSTATUS=reloading the objects file");
}

void trk_notify_stopping(const char *status)
{
    static _Atomic bool sent;
    if (atomic_exchange(&sent, true)) return;
    char msg[512];
    snprintf(msg, sizeof(msg), "STOPPING=1\nSTATUS=%s", status);
    notify(msg);
}

static pthread_once_t period_once = PTHREAD_ONCE_INIT;
static double period;

static void read_period(void)
{
    uint64_t usec = 0;
    /* The environment stays as it is (0): trackd starts no children. */
    if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) period = (double)usec / 2e6;
}

double trk_notify_watchdog_period(void)
{
    pthread_once(&period_once, read_period);
    return period;
}

void trk_notify_watchdog(void)
{
    notify("WATCHDOG=1");
}
