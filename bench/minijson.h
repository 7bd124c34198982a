/* A small JSON reader for the benchmark's baseline files (--opencv, --torch).
 *
 * The benchmark builds on the GPU machine, which has no jansson, and only
 * reads a few small files it documents itself, so a tiny DOM parser is enough:
 * the whole text is parsed into a tree of trk_json nodes, freed at once.
 * Not for untrusted input at scale (depth is limited, numbers are doubles).
 */
#ifndef TRK_BENCH_MINIJSON_H
#define TRK_BENCH_MINIJSON_H

#include <stdbool.h>
#include <stddef.h>

enum trk_json_type {
    TRK_JSON_NULL = 0,
    TRK_JSON_BOOL,
    TRK_JSON_NUMBER,
    TRK_JSON_STRING,
    TRK_JSON_ARRAY,
    TRK_JSON_OBJECT,
};

/* One value. Arrays and objects hold their children in `items`/`n`; object
 * children carry their member name in `key`. */
struct trk_json {
    enum trk_json_type type;
    char *key;     /* member name inside an object, else NULL */
    double number; /* TRK_JSON_NUMBER, TRK_JSON_BOOL (0/1) */
    char *string;  /* TRK_JSON_STRING (decoded, NUL-terminated) */
    struct trk_json *items;
    size_t n;
};

/* Parses text; returns the root or NULL with a message in err (if non-NULL). */
struct trk_json *trk_json_parse(const char *text, char *err, size_t err_len);

/* Reads and parses a file; NULL with a message on failure. */
struct trk_json *trk_json_load(const char *path, char *err, size_t err_len);
/* A baseline file's "scenes" array (the Python baselines' JSON) as a table:
 * loads path into *root and calloc's *items, then take() fills the next
 * item (elem bytes) from each entry and says whether it is usable (one that
 * is not is overwritten by the next); *n counts the usable ones. 0, or -1,
 * after "WHO: path: why" on stderr when the file is at fault (*root and
 * *items, NULL or not, are the caller's to free). */
int trk_json_load_scenes(const char *path, const char *who, struct trk_json **root, size_t elem,
                         bool (*take)(const struct trk_json *entry, void *item), void **items,
                         int *n);

/* Frees a tree returned by trk_json_parse/load; safe on NULL. */
void trk_json_free(struct trk_json *root);

/* Member `key` of an object, or NULL (also when o is not an object). */
const struct trk_json *trk_json_get(const struct trk_json *o, const char *key);

/* Member `key` as a number, or def when absent or not a number. */
double trk_json_num(const struct trk_json *o, const char *key, double def);

/* Member `key` as a string, or def when absent or not a string. */
const char *trk_json_str(const struct trk_json *o, const char *key, const char *def);

#endif
