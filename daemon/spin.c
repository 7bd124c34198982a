#define LOG_TAG "spin"
#include "spin.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include "log.h"
#include "pipeline.h"

/* Set by trk_spin_decide when auto found every slot held: where to try
 * again, and when (trk_spin_retry). */
static struct {
    bool waiting;
    int n;
    double next;
    char dir[PATH_MAX];
} retry;

/* Opens slot file k in dir for flock (read-only is enough), creating it if
 * it is missing: first without O_CREAT, so a file another user made opens
 * where fs.protected_regular would refuse O_CREAT on it. -errno if not. */
static int open_slot(const char *dir, int k)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/trackd-spin.%d", dir, k) >= (int)sizeof path)
        return -ENAMETOOLONG;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno == ENOENT)
        fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    return fd < 0 ? -errno : fd;
}

/* The first free slot of n in dir, its lock taken (its fd then stays open
 * until exit: closing it would release the lock): its index, or -1 when
 * none was free; then *err is 0 if some slot file opened (all held), else
 * the last open's -errno. */
static int take_slot(const char *dir, int n, int *err)
{
    bool opened = false;
    *err = -ENOENT;
    for (int k = 0; k < n; k++) {
        int fd = open_slot(dir, k);
        if (fd < 0) {
            *err = fd;
            continue;
        }
        opened = true;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) return k; /* fd kept on purpose */
        close(fd);
    }
    if (opened) *err = 0;
    return -1;
}

bool trk_spin_decide(int mode, int slots)
{
    if (mode != TRK_SPIN_AUTO) {
        log_debug("--spin %s: %s, no slot taken", mode == TRK_SPIN_ON ? "on" : "off",
                  mode == TRK_SPIN_ON ? "polling" : "sleeping");
        return mode == TRK_SPIN_ON;
    }
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const int n = slots > 0 ? slots : (int)(cpus / TRK_SPIN_MIN_CPUS);
    if (n <= 0) {
        log_debug("--spin auto: sleeping, not polling: %ld CPUs (polling needs %d)", cpus,
                  TRK_SPIN_MIN_CPUS);
        return false;
    }
    const char *env = getenv("TRACKD_SPIN_DIR");
    const char *dir = env && *env ? env : TRK_SPIN_DIR;
    int err;
    const int k = take_slot(dir, n, &err);
    if (k >= 0) {
        log_info("--spin auto: polling, in spin slot %d of %d (%s/trackd-spin.%d)", k + 1, n, dir,
                 k);
        return true;
    }
    if (!err) {
        retry.waiting = true, retry.n = n, retry.next = 0;
        snprintf(retry.dir, sizeof retry.dir, "%s", dir);
        log_info("--spin auto: sleeping, not polling: other trackd processes hold the %d spin "
                 "slot%s of this machine (%s/trackd-spin.*); trying again every %.0f s",
                 n, n == 1 ? "" : "s", dir, TRK_SPIN_RETRY_S);
        return false;
    }
    log_warn_err(err,
                 "--spin auto: %s as if the machine were this daemon's alone: cannot open the "
                 "spin slots in %s",
                 cpus >= TRK_SPIN_MIN_CPUS ? "polling" : "sleeping", dir);
    return cpus >= TRK_SPIN_MIN_CPUS;
}

bool trk_spin_retry(double now)
{
    if (!retry.waiting || now < retry.next) return false;
    retry.next = now + TRK_SPIN_RETRY_S;
    int err;
    const int k = take_slot(retry.dir, retry.n, &err);
    if (k < 0) return false; /* still held, or the folder went away: later */
    retry.waiting = false;
    log_info("--spin auto: polling from now on, in spin slot %d of %d (%s/trackd-spin.%d), "
             "which another trackd gave up",
             k + 1, retry.n, retry.dir, k);
    return true;
}
