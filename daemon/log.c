#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

/* The journal stamps every line itself and reads a leading "<N>" as its
 * syslog priority (sd-daemon(3)): err 3, warning 4, info 6, debug 7. A line
 * with a newline in it (an FFmpeg message) gets the prefix on each part, or
 * the journal would file the rest at its default level. */
static void journal_hook(enum trk_log_level level, const char *tag, const char *line)
{
    static const int prio[] = {
        [TRK_LOG_ERROR] = 3, [TRK_LOG_WARN] = 4, [TRK_LOG_INFO] = 6, [TRK_LOG_DEBUG] = 7
    };
    int p = prio[level];
    flockfile(stderr);
    for (;;) {
        const char *nl = strchr(line, '\n');
        int len = nl ? (int)(nl - line) : (int)strlen(line);
        fprintf(stderr, "<%d>%s: %.*s\n", p, tag, len, line);
        if (!nl || !nl[1]) break;
        line = nl + 1;
    }
    funlockfile(stderr);
}

bool trk_log_stderr_is_journal(void)
{
    /* systemd sets JOURNAL_STREAM=<dev>:<inode> of the stream it connected
     * to stderr; stderr redirected elsewhere (a file, a pipe to a script)
     * no longer matches and keeps the plain format. */
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    char end;
    struct stat st;
    if (!js || sscanf(js, "%llu:%llu%c", &dev, &ino, &end) != 2) return false;
    return fstat(STDERR_FILENO, &st) == 0 && (unsigned long long)st.st_dev == dev &&
           (unsigned long long)st.st_ino == ino;
}

void trk_log_set_level(enum trk_log_level level)
{
    trk_log_set_hook(trk_log_stderr_is_journal() ? journal_hook : stderr_hook, level);
}
