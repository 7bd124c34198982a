/* The daemon's side of the one logger (gpu/log_hook.h): it installs the hook
 * that writes timestamped lines to stderr, with the level from --log-level.
 * Files log with log_error/log_info/log_once from gpu/log_hook.h, as gpu/ and
 * protocol/ do. */
#ifndef TRK_DAEMON_LOG_H
#define TRK_DAEMON_LOG_H

#include "log_hook.h"

/* Parses "error", "warn", "info", "debug"; -1 if unknown. */
int trk_log_level_parse(const char *s);

/* Installs the daemon's hook: "<time> <level> <tag>: <line>" on stderr, for
 * every layer, levels up to `level`. Call once at start. */
void trk_log_set_level(enum trk_log_level level);

#endif
