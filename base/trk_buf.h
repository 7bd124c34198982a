/* The growable byte buffer every JSON writer of trackd appends to (the wire
 * messages, the objects file writer), with the one JSON string escaper and
 * the number formats they share. Output is byte-for-byte deterministic for
 * the same input.
 *
 * Thread safety: all functions are reentrant; a trk_buf belongs to one thread.
 */
#ifndef TRK_BASE_BUF_H
#define TRK_BASE_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A growable byte buffer. data is always NUL-terminated when non-NULL (the
 * terminator is not counted in len), so a finished message can be used as a
 * C string. A zeroed struct is a valid empty buffer.
 *
 * The first failed append sets failed and every later append is a no-op that
 * returns TRK_ENOMEM, so a message can be built with unchecked appends and
 * checked once, before sending: a failed buffer holds a truncated message. */
struct trk_buf {
    char *data;
    size_t len;  /* bytes used */
    size_t cap;  /* bytes allocated (> len when data != NULL) */
    bool failed; /* an append failed since the last reset: do not send */
};

/* Empties the buffer and clears failed, but keeps its memory (the
 * per-frame path reuses it). */
void trk_buf_reset(struct trk_buf *b);
/* Frees the memory and zeroes the struct; safe twice. */
void trk_buf_free(struct trk_buf *b);
/* Makes room for extra more bytes (+ the terminator); 0 or TRK_ENOMEM
 * (then failed is set). Every function below returns TRK_ENOMEM at once on
 * a failed buffer. */
int trk_buf_reserve(struct trk_buf *b, size_t extra);
/* trk_buf_append's way when the bytes do not fit what is allocated (or the
 * buffer failed): grows it, then appends. */
int trk_buf_append_grow(struct trk_buf *b, const void *p, size_t n);
/* Whether n more bytes and the terminator fit what b has allocated (and b
 * has not failed): the appenders' fast way, without trk_buf_reserve. */
static inline bool trk_buf_fits(const struct trk_buf *b, size_t n)
{
    return !b->failed && b->data && n < b->cap - b->len;
}
/* Appends n raw bytes; 0 or TRK_ENOMEM. Inline: a frame message is
 * thousands of short appends, almost all into room already there. */
static inline int trk_buf_append(struct trk_buf *b, const void *p, size_t n)
{
    if (!trk_buf_fits(b, n)) return trk_buf_append_grow(b, p, n);
    if (n) memcpy(b->data + b->len, p, n); /* p may be NULL when n is 0 */
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}
/* Appends a C string, raw (not escaped); 0 or TRK_ENOMEM. Inline, so a
 * literal's length is known where it is written. */
static inline int trk_buf_puts(struct trk_buf *b, const char *s)
{
    return trk_buf_append(b, s, strlen(s));
}
/* Appends printf's output for fmt, raw (not escaped); 0 or TRK_ENOMEM. */
__attribute__((format(printf, 2, 3))) int trk_buf_printf(struct trk_buf *b, const char *fmt, ...);
/* Appends s (at most n bytes, stopping at a NUL) as a quoted JSON string:
 * '"' and '\\' escaped, control characters as \n, \t, ... or \u00XX, and
 * every byte sequence that is not valid UTF-8 replaced by U+FFFD, so the
 * output is always valid JSON. NULL appends null. 0 or TRK_ENOMEM. */
int trk_buf_json_str(struct trk_buf *b, const char *s, size_t n);
/* Appends a decimal integer. */
int trk_buf_u64(struct trk_buf *b, uint64_t v);
int trk_buf_i64(struct trk_buf *b, int64_t v);
/* Appends v with exactly `decimals` (0..6) digits after the point, rounded
 * half away from zero; NaN and infinities append null (JSON has no such
 * numbers). */
int trk_buf_fixed(struct trk_buf *b, double v, int decimals);

#ifdef __cplusplus
}
#endif
#endif
