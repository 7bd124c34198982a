/* Logging: levels, a per-file tag, errno text, once-only logging for errors
 * that would otherwise repeat at frame rate. Thread-safe; lines go to stderr. */
#ifndef TRK_DAEMON_LOG_H
#define TRK_DAEMON_LOG_H

#include <stdatomic.h>
#include <stdbool.h>

enum trk_log_level { TRK_LOG_ERROR = 0, TRK_LOG_WARN, TRK_LOG_INFO, TRK_LOG_DEBUG };

/* The current threshold; messages above it are skipped before formatting. */
extern _Atomic int trk_log_threshold;

/* Parses "error", "warn", "info", "debug"; -1 if unknown. */
int trk_log_level_parse(const char *s);
void trk_log_set_level(enum trk_log_level level);

/* Writes "<time> <level> <tag>: <message>" (and ": <strerror(err)>" when
 * err != 0; err may be positive errno or negative -errno / TRK_E* code). */
void trk_log_write(enum trk_log_level level, const char *tag, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define TRK_LOG_ENABLED(lvl)                                                                       \
    ((int)(lvl) <= atomic_load_explicit(&trk_log_threshold, memory_order_relaxed))
#define TRK_LOGX(lvl, err, ...)                                                                    \
    do {                                                                                           \
        if (TRK_LOG_ENABLED(lvl)) trk_log_write(lvl, LOG_TAG, err, __VA_ARGS__);                   \
    } while (0)
/* Each file defines LOG_TAG before using these. */
#define log_error(...) TRK_LOGX(TRK_LOG_ERROR, 0, __VA_ARGS__)
#define log_warn(...)  TRK_LOGX(TRK_LOG_WARN, 0, __VA_ARGS__)
#define log_info(...)  TRK_LOGX(TRK_LOG_INFO, 0, __VA_ARGS__)
#define log_debug(...) TRK_LOGX(TRK_LOG_DEBUG, 0, __VA_ARGS__)
/* With an error code appended. */
#define log_error_err(err, ...) TRK_LOGX(TRK_LOG_ERROR, err, __VA_ARGS__)
#define log_warn_err(err, ...)  TRK_LOGX(TRK_LOG_WARN, err, __VA_ARGS__)

/* Logs once per `flag` until it is reset with trk_log_once_reset: for errors
 * that would repeat every frame (e.g. a camera that keeps failing). */
#define log_once(flag, lvl, err, ...)                                                              \
    do {                                                                                           \
        if (!atomic_exchange(&(flag), true)) TRK_LOGX(lvl, err, __VA_ARGS__);                      \
    } while (0)
#define trk_log_once_reset(flag) atomic_store(&(flag), false)

#endif
