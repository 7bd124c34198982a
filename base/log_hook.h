/* The one logger of trackd. Every layer (gpu/, protocol/, daemon/) logs
 * through trk_log_write; where the lines go and which levels pass is set
 * once, by the daemon at start (trk_log_set_hook). It lives in base/, the
 * ground floor, so every layer has it, the GPU-only build (the GPU test
 * machine, the benchmark) included: there, without a hook, lines go to
 * stderr at level info.
 *
 * Plain C, usable from .cu files (no atomics in this header for C++). */
#ifndef TRK_BASE_LOG_HOOK_H
#define TRK_BASE_LOG_HOOK_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

enum trk_log_level { TRK_LOG_ERROR = 0, TRK_LOG_WARN, TRK_LOG_INFO, TRK_LOG_DEBUG };

/* Receives one finished line: the message with ": <error text>" appended
 * when the caller gave an error code; no newline, no timestamp. Called from
 * any thread, possibly from several at once; must not call trk_log_*. */
typedef void (*trk_log_hook_fn)(enum trk_log_level level, const char *tag, const char *line);

/* Sets where lines go (NULL = the default: stderr, "trackd <level> <tag>:
 * <line>") and the most verbose level that passes. Call once at start,
 * before other threads log; later calls are safe but may race with lines
 * being written. */
void trk_log_set_hook(trk_log_hook_fn hook, enum trk_log_level threshold);

/* True when lines of this level pass: callers skip formatting otherwise. */
bool trk_log_enabled(enum trk_log_level level);

/* "error", "warn", "info", "debug". */
const char *trk_log_level_name(enum trk_log_level level);

/* Formats the line and hands it to the hook when level passes. err != 0
 * appends ": " and trk_strerror's text; it may be a positive errno, a
 * negative -errno or a TRK_E* code. Lines longer than ~1000 bytes are cut. */
void trk_log_write(enum trk_log_level level, const char *tag, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define TRK_LOGX(lvl, err, ...)                                                                    \
    do {                                                                                           \
        if (trk_log_enabled(lvl)) trk_log_write(lvl, LOG_TAG, err, __VA_ARGS__);                   \
    } while (0)
/* Each file defines LOG_TAG (a short string: "pipeline", "ws") before using
 * these. */
#define log_error(...) TRK_LOGX(TRK_LOG_ERROR, 0, __VA_ARGS__)
#define log_warn(...)  TRK_LOGX(TRK_LOG_WARN, 0, __VA_ARGS__)
#define log_info(...)  TRK_LOGX(TRK_LOG_INFO, 0, __VA_ARGS__)
#define log_debug(...) TRK_LOGX(TRK_LOG_DEBUG, 0, __VA_ARGS__)
/* With an error code appended. */
#define log_error_err(err, ...) TRK_LOGX(TRK_LOG_ERROR, err, __VA_ARGS__)
#define log_warn_err(err, ...)  TRK_LOGX(TRK_LOG_WARN, err, __VA_ARGS__)

#ifndef __cplusplus
#include <stdatomic.h>
/* Logs once per `flag` (an _Atomic bool) until trk_log_once_reset: for
 * errors that would repeat every frame (a camera that keeps failing). Keep
 * the flag in the instance whose failure it reports and reset it when that
 * instance works again, so the next failure is logged too. */
#define log_once(flag, lvl, err, ...)                                                              \
    do {                                                                                           \
        if (!atomic_exchange(&(flag), true)) TRK_LOGX(lvl, err, __VA_ARGS__);                      \
    } while (0)
#define trk_log_once_reset(flag) atomic_store(&(flag), false)
#endif

#ifdef __cplusplus
}
#endif
#endif
