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

#include "posindex.h"

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

#define TRK_VCTX_SEGS 8

/* Validation context: where we are (path from the top level) and how to
 * turn a path into a position (text + lazily built index; none when
 * validating a jansson value that came without text). */
struct trk_vctx {
    struct trk_config_error *err;
    const char *text;
    size_t len;
    struct trk_posindex *ix;
    int ix_built;
    struct trk_path_seg path[TRK_VCTX_SEGS];
    /* A file's paths start at the top level ("objects[3].lo[1]"); those of
     * trk_objects_parse_object at the object ("lo[1]"). */
    int depth;
    /* A file read at run time (trk_objects_target_load): messages quote no
     * text from it (strings, keys, unparsed bytes), since they may reach
     * someone who cannot read the file. user[i]: path[i]'s key came from
     * the text, not from our list of keys. */
    bool quiet;
    bool user[TRK_VCTX_SEGS];
    /* The folder class files are read from (objects_classes.c); cls_dir
     * false: none (a text or JSON value), tables stay clear. */
    bool cls_dir;
    int cls_dirfd;
};

/* The checking helpers objects_parse.c and objects_patterns.c share. Each
 * records its error at the current path (the key itself when want_key) and
 * returns TRK_EINVAL; p/pn: scratch for the path text. */
const char *trk_cfg_type_name(const struct json_t *v); /* "an object", "a string", ... */
void trk_cfg_push_key(struct trk_vctx *c, const char *key);
void trk_cfg_push_user_key(struct trk_vctx *c, const char *key); /* a key from the text */
void trk_cfg_push_index(struct trk_vctx *c, int i);
void trk_cfg_pop(struct trk_vctx *c);
/* A string of the text, quoted for a message ("(not shown)" when quiet). */
void trk_cfg_user_text(const struct trk_vctx *c, const char *s, size_t len, char *out, size_t n);
/* The current path as text, e.g. "objects[3].lo[1]". */
const char *trk_cfg_path_text(const struct trk_vctx *c, char *buf, size_t n);
__attribute__((format(printf, 3, 4))) int trk_cfg_fail(struct trk_vctx *c, int want_key,
                                                       const char *fmt, ...);
int trk_cfg_want_string(struct trk_vctx *c, const struct json_t *v, const char *what, char *p,
                        size_t pn);
/* "<path> "<v>" why" for the string v. */
int trk_cfg_fail_quoted(struct trk_vctx *c, const struct json_t *v, const char *why, char *p,
                        size_t pn);
/* o must be an object with no key outside keys[0..n) ("expected ..."). */
int trk_cfg_only_keys(struct trk_vctx *c, const struct json_t *o, const char *const *keys, size_t n,
                      const char *expected);
/* "<path>.name "<name>" is already used by <list>[j]" at the current
 * element's name (TRK_CONFIG_DUPLICATE). */
int trk_cfg_fail_duplicate(struct trk_vctx *c, const char *name, const char *list, size_t j);
/* A finite number within +-bound. */
int trk_cfg_want_number(struct trk_vctx *c, const struct json_t *v, double bound, double *out);
/* An array of lo..hi numbers within +-bound into v[]; what_n names the count. */
int trk_cfg_number_array(struct trk_vctx *c, const struct json_t *a, size_t lo, size_t hi,
                         double bound, double *v, char *what_n);

/* ---------------------------------------------------- objects_patterns.c */

/* "patterns": [...] (OBJECTS.md) into out->patterns, after the objects
 * (every colour names one of out->def[0..out->n)); at the current path. */
int trk_objects_parse_patterns(struct trk_vctx *c, const struct json_t *arr,
                               struct trk_objects *out);

/* Checks patterns[0..n) against the set's objects (the loader's rules, for
 * a set in memory): 0, or TRK_EINVAL with a message naming the pattern. */
int trk_objects_check_patterns(const struct trk_objects *objs, char *msg, size_t msg_len);

/* The whole document {"objects": [...]} into out, all or nothing. text/len:
 * the text root was parsed from, for positions (NULL: errors have none);
 * quiet: messages quote nothing from the text (a file read at run time);
 * cls_dirfd: the folder class files are read from (-1: none). */
int trk_objects_parse_doc(const struct json_t *root, const char *text, size_t len, bool quiet,
                          int cls_dirfd, struct trk_objects *out, struct trk_config_error *err);

/* ------------------------------------------------------- objects_light.c */

/* The top-level "illumination" and every object's "adapt" of root (whose
 * objects are already in out->def[0..out->n)) into out->light. */
int trk_objects_parse_light(struct trk_vctx *c, const struct json_t *root, struct trk_objects *out);

/* The light rules for a set in memory: 0, or TRK_EINVAL and msg. */
int trk_objects_check_light(const struct trk_objects *objs, char *msg, size_t msg_len);

/* ", \"adapt\": {...}" for object i when on; ",\n  \"illumination\": {...}"
 * when on (the file writer's pieces). */
struct trk_buf;
void trk_objects_write_adapt(struct trk_buf *b, const struct trk_objects *objs, int i);
void trk_objects_write_illum(struct trk_buf *b, const struct trk_objects *objs);

/* ----------------------------------------------------- objects_classes.c */

/* The object o at the current path has "class": its file name checked and
 * def made a class object (no "lo"/"hi"; "space", when given, "class").
 * *file gets the name. Returns 1 when o has no "class" (a box object). */
int trk_objects_parse_class_key(struct trk_vctx *c, const struct json_t *o, const char *here,
                                struct trk_object_def *def, char file[TRK_CLASS_FILE_MAX]);

/* Object i (a class object, its file in file, its value o) gets a class
 * slot of out, its table read from c's folder, and, without a "color" of
 * its own, the table's display colour; at the current path (objects[i]). */
int trk_objects_add_class(struct trk_vctx *c, struct trk_objects *out, int i, const char *file,
                          const struct json_t *o);

/* The class rules for object i of a set in memory (its slot in range, a
 * valid file name, no other object with the same slot or file): 0, or -1
 * with msg ("class ..."). */
int trk_objects_check_class(const struct trk_objects *objs, int i, char *msg, size_t msg_len);

/* ------------------------------------------------------- objects_load.c */

/* The text as an objects file (err's file: name_for_errors); quiet as
 * trk_objects_parse_doc; cls_dirfd: the folder of its class files (-1:
 * none). */
int trk_objects_load_text(const char *text, size_t len, const char *name_for_errors, bool quiet,
                          int cls_dirfd, struct trk_objects *out, struct trk_config_error *err);

/* Reads the open file fd to its end (at most TRK_OBJECTS_MAX_BYTES + 1
 * bytes, whatever st_size says), closes it and loads the text as
 * trk_objects_load_text does. */
int trk_objects_load_fd(int fd, const char *name_for_errors, bool quiet, int cls_dirfd,
                        struct trk_objects *out, struct trk_config_error *err);

#endif
