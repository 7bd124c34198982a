#include "log_hook.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

#include "trk_error.h" /* trk_strerror: TRK_E* codes and -errno */

static const char *const level_names[] = { "error", "warn", "info", "debug" };

/* Stand-alone gpu/ (tests, benchmark) writes to stderr without timestamps:
 * the daemon installs its own hook with them. */
static void default_hook(enum trk_log_level level, const char *tag, const char *line)
{
    /* One call under the stdio lock keeps lines whole across threads. */
    flockfile(stderr);
    fprintf(stderr, "trackd %s %s: %s\n", trk_log_level_name(level), tag, line);
    funlockfile(stderr);
}

static _Atomic(trk_log_hook_fn) hook = default_hook;
static _Atomic int threshold = TRK_LOG_INFO;

void trk_log_set_hook(trk_log_hook_fn fn, enum trk_log_level level)
{
    atomic_store(&hook, fn ? fn : default_hook);
    atomic_store(&threshold, (int)level);
}

bool trk_log_enabled(enum trk_log_level level)
{
    return (int)level <= atomic_load_explicit(&threshold, memory_order_relaxed);
}

const char *trk_log_level_name(enum trk_log_level level)
{
    return (unsigned)level < 4 ? level_names[level] : "?";
}

void trk_log_write(enum trk_log_level level, const char *tag, int err, const char *fmt, ...)
{
    if (!trk_log_enabled(level)) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    size_t n = k < 0 ? 0 : (size_t)k < sizeof(line) ? (size_t)k : sizeof(line) - 1;
    line[n] = '\0';
    if (err) snprintf(line + n, sizeof(line) - n, ": %s", trk_strerror(err > 0 ? -err : err));
    atomic_load (&hook)(level, tag ? tag : "trackd", line);
}
