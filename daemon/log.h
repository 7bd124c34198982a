/* The daemon's side of the one logger (base/log_hook.h): it installs the hook
 * that writes lines to stderr (timestamped, or with journal priorities) with
 * the level from --log-level.
 * Files log with log_error/log_info/log_once from base/log_hook.h, as gpu/ and
 * protocol/ do. */
#ifndef TRK_DAEMON_LOG_H
#define TRK_DAEMON_LOG_H

#include "log_hook.h"

/* Parses "error", "warn", "info", "debug"; -1 if unknown. */
int trk_log_level_parse(const char *s);

/* Installs the daemon's hook for every layer, levels up to `level`:
 * "<time> <level> <tag>: <line>" on stderr, or "<N><tag>: <line>" (N the
 * syslog priority, no time) when stderr is the journal. Call once at start. */
void trk_log_set_level(enum trk_log_level level);

/* Whether stderr is systemd's journal: JOURNAL_STREAM names stderr's device
 * and inode (systemd.exec(5)). */
bool trk_log_stderr_is_journal(void);

#endif
