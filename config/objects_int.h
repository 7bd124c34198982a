/* Internals of the objects file, shared by its files and private to config/:
 * objects.c (the rules of a set: spaces, channels, names, boxes, limits,
 * checking a set in memory, camera control lists), objects_error.c (how a
 * failure is reported: struct trk_config_error and text safe to print),
 * objects_parse.c (a JSON value checked into a set, each error at its path),
 * objects_load.c (texts and files: reading, syntax errors),
 * objects_write.c (a set back to text or JSON values) and objects_target.c
 * (the save and reload target: file safety, atomic save). */
#ifndef TRK_CONFIG_OBJECTS_INT_H
#define TRK_CONFIG_OBJECTS_INT_H

#include "objects.h"

#include <stdarg.h>

/* ------------------------------------------------------------ objects.c */

/* The rule of names (and of the calibration's unit): 1..max-1 bytes of
 * UTF-8 without controls (C0, DEL, C1) or noncharacters, so that every
 * output carries it (OBJECTS.md, "Names"); msg gets e.g. "name must not be
 * empty" (what = "name"). 0 or -1. */
int trk_objects_check_text(const char *what, size_t max, const char *s, size_t len, char *msg,
                           size_t n);

/* Channel ranges then lo <= hi. On failure returns which value is at fault
 * (0..2: lo[c], 3..5: hi[c]) and the message; -1 when the box is valid. */
int trk_objects_check_box(int space, const long long lo[3], const long long hi[3], char *msg,
                          size_t n);

/* ------------------------------------------------------ objects_error.c */

/* Clears err and sets its file (NULL: "<string>"), cut and made printable. */
void trk_config_error_init(struct trk_config_error *err, const char *file);

/* A public entry point's start: *err, or local when the caller passed none
 * (*err is then set to it), cleared for file. TRK_EINVAL, after "invalid
 * arguments", when !args_ok; else 0. */
int trk_config_error_begin(struct trk_config_error **err, struct trk_config_error *local,
                           const char *file, bool args_ok);

/* The message, printf-formatted and made printable on one line (controls,
 * noncharacters and invalid bytes become '?'); the position is left alone. */
void trk_config_error_vset(struct trk_config_error *err, const char *fmt, va_list ap);

/* The message as trk_config_error_vset and the position line:col (0:0 for
 * none). */
__attribute__((format(printf, 4, 5))) void
trk_config_error_set(struct trk_config_error *err, int line, int col, const char *fmt, ...);

/* Copies a user string for quoting in a message: at most 40 bytes, cut at a
 * character boundary and marked with "...", what a message cannot show
 * replaced by '?'. */
void trk_config_quote(const char *s, size_t len, char *out, size_t outlen);

/* strerror(e) into buf, thread-safe; returns the text. */
const char *trk_config_errno_text(int e, char *buf, size_t n);

/* ------------------------------------------------------ objects_parse.c */

/* The whole document {"objects": [...]} into out, all or nothing. text/len:
 * the text root was parsed from, for positions (NULL: errors have none);
 * quiet: messages quote nothing from the text (a file read at run time). */
int trk_objects_parse_doc(const struct json_t *root, const char *text, size_t len, bool quiet,
                          struct trk_objects *out, struct trk_config_error *err);

/* ------------------------------------------------------- objects_load.c */

/* The text as an objects file (err's file: name_for_errors); quiet as
 * trk_objects_parse_doc. */
int trk_objects_load_text(const char *text, size_t len, const char *name_for_errors, bool quiet,
                          struct trk_objects *out, struct trk_config_error *err);

/* Reads the open file fd to its end (at most TRK_OBJECTS_MAX_BYTES + 1
 * bytes, whatever st_size says), closes it and loads the text as
 * trk_objects_load_text does. */
int trk_objects_load_fd(int fd, const char *name_for_errors, bool quiet, struct trk_objects *out,
                        struct trk_config_error *err);

#endif
