/* Internal to config/: where each JSON value and key sits in the source text.
 *
 * jansson parses values but keeps no positions, so error messages could not
 * point at the offending token. This is a second, minimal JSON scanner over
 * the same text that records the (line, column) of every value and of every
 * object key, addressed by path (objects[3].lo[1] is the segments
 * "objects", 3, "lo", 1). It is run only on text that jansson has already
 * accepted, but it never reads out of bounds on any input (the fuzz target
 * feeds it garbage too): on text it cannot follow it stops and keeps what it
 * indexed so far.
 *
 * Lines and columns are 1-based; columns count bytes, and only '\n' ends a
 * line (the same rule jansson uses). A leading UTF-8 byte order mark is
 * skipped but its three bytes still count as columns 1..3 of line 1.
 */
#ifndef TRK_CONFIG_POSINDEX_H
#define TRK_CONFIG_POSINDEX_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One step of a path: an object member (key != NULL, key_len bytes, already
 * decoded from JSON escapes, so it compares equal to jansson's key) or an
 * array element (key == NULL, index >= 0). */
struct trk_path_seg {
    const char *key;
    size_t key_len;
    int index;
};

/* One indexed value, for tests and the fuzz target. */
struct trk_posindex_entry {
    size_t off;     /* byte offset of the value's first byte             */
    int line, col;  /* its position                                      */
    int depth;      /* 0 for the top-level value                         */
    int has_key;    /* 1 when the value is an object member              */
    size_t key_off; /* byte offset of the key's opening quote            */
    int key_line, key_col;
};

struct trk_posindex;

/* Scans text[0..len) and builds the index. Returns 0 when the whole text was
 * followed, 1 when the scanner stopped early (text is not valid JSON; the
 * index holds what came before), TRK_ENOMEM on allocation failure (*out is
 * then NULL). */
int trk_posindex_build(const char *text, size_t len, struct trk_posindex **out);

/* Frees the index; safe on NULL and twice (sets *ix = NULL). */
void trk_posindex_destroy(struct trk_posindex **ix);

/* Looks up the value at path[0..n) (n == 0: the top-level value). With
 * want_key, returns the position of the member's key instead (the last
 * segment must then be a key). Returns 0 and sets *line, *col, or -1 when the
 * path is not in the index. */
int trk_posindex_find(const struct trk_posindex *ix, const struct trk_path_seg *path, int n,
                      int want_key, int *line, int *col);

/* Number of indexed values, and the i-th in text order (0 or -1). */
int trk_posindex_count(const struct trk_posindex *ix);
int trk_posindex_get(const struct trk_posindex *ix, int i, struct trk_posindex_entry *e);

#ifdef __cplusplus
}
#endif
#endif
