#include "log.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

int trk_log_level_parse(const char *s)
{
    for (int i = TRK_LOG_ERROR; i <= TRK_LOG_DEBUG; i++)
        if (!strcmp(s, trk_log_level_name((enum trk_log_level)i))) return i;
    if (!strcmp(s, "warning")) return TRK_LOG_WARN;
    return -1;
}

/* Wall-clock time of day to the millisecond: what an operator matches
 * against other logs (journal, camera events). */
static void stderr_hook(enum trk_log_level level, const char *tag, const char *line)
{
    struct timespec ts;
    struct tm tm;
    char when[16];
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof(when), "%H:%M:%S", &tm);
    /* One fprintf under the stdio lock keeps lines whole across threads. */
    flockfile(stderr);
    fprintf(stderr, "%s.%03ld %-5s %s: %s\n", when, ts.tv_nsec / 1000000, trk_log_level_name(level),
            tag, line);
    funlockfile(stderr);
}

void trk_log_set_level(enum trk_log_level level)
{
    trk_log_set_hook(stderr_hook, level);
}
