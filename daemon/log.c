#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backend.h" /* trk_strerror: TRK_E* codes and -errno */

_Atomic int trk_log_threshold = TRK_LOG_INFO;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

int trk_log_level_parse(const char *s)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, level_names[i])) return i;
    if (!strcmp(s, "warning")) return TRK_LOG_WARN;
    return -1;
}

void trk_log_set_level(enum trk_log_level level)
{
    atomic_store(&trk_log_threshold, (int)level);
}

void trk_log_write(enum trk_log_level level, const char *tag, int err, const char *fmt, ...)
{
    char msg[1024];
    size_t n = 0;
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    n += strftime(msg, sizeof(msg), "%H:%M:%S", &tm);
    n += (size_t)snprintf(msg + n, sizeof(msg) - n, ".%03ld %-5s %s: ", ts.tv_nsec / 1000000,
                          level_names[level], tag);
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(msg + n, sizeof(msg) - n, fmt, ap);
    va_end(ap);
    if (k > 0) n = n + (size_t)k < sizeof(msg) ? n + (size_t)k : sizeof(msg) - 1;
    if (err) {
        int e = err > 0 ? -err : err;
        k = snprintf(msg + n, sizeof(msg) - n, ": %s", trk_strerror(e));
        if (k > 0) n = n + (size_t)k < sizeof(msg) ? n + (size_t)k : sizeof(msg) - 1;
    }
    /* One fputs per line under the stdio lock keeps lines whole across threads. */
    flockfile(stderr);
    fputs(msg, stderr);
    fputc('\n', stderr);
    funlockfile(stderr);
}
