/* The growable buffer and its appenders: see trk_buf.h. */
#include "trk_buf.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trk_error.h"
#include "utf8.h"

void trk_buf_reset(struct trk_buf *b)
{
    b->len = 0;
    b->failed = false;
    if (b->data) b->data[0] = '\0';
}

void trk_buf_free(struct trk_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = false;
}

/* Every failure goes through here, so it sticks: the appends after it would
 * otherwise leave a message with a hole in the middle. */
static int buf_fail(struct trk_buf *b)
{
    b->failed = true;
    return TRK_ENOMEM;
}

int trk_buf_reserve(struct trk_buf *b, size_t extra)
{
    if (b->failed) return TRK_ENOMEM;
    if (extra > SIZE_MAX / 2 - b->len - 1) return buf_fail(b);
    size_t need = b->len + extra + 1; /* + the terminator */
    if (need <= b->cap) return 0;
    /* Doubling keeps appends amortised O(1); 256 covers most small messages
     * in one allocation. */
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) return buf_fail(b);
    b->data = p;
    b->cap = cap;
    return 0;
}

int trk_buf_append(struct trk_buf *b, const void *p, size_t n)
{
    if (trk_buf_reserve(b, n)) return TRK_ENOMEM;
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int trk_buf_puts(struct trk_buf *b, const char *s)
{
    return trk_buf_append(b, s, strlen(s));
}

int trk_buf_printf(struct trk_buf *b, const char *fmt, ...)
{
    if (b->failed) return TRK_ENOMEM;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return buf_fail(b);
    if (trk_buf_reserve(b, (size_t)n)) return TRK_ENOMEM;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

int trk_buf_json_str(struct trk_buf *b, const char *s, size_t n)
{
    if (!s) return trk_buf_append(b, "null", 4);
    const unsigned char *p = (const unsigned char *)s;
    size_t len = strnlen(s, n);
    /* Worst case: every byte becomes \u00XX (6) or U+FFFD (3). */
    if (len > SIZE_MAX / 8) return buf_fail(b);
    if (trk_buf_reserve(b, len * 6 + 2)) return TRK_ENOMEM;
    char *o = b->data + b->len;
    *o++ = '"';
    static const char hex[] = "0123456789abcdef";
    size_t i = 0;
    while (i < len) {
        unsigned c = p[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            *o++ = (char)c;
            i++;
        } else if (c < 0x80) {
            *o++ = '\\';
            switch (c) {
            case '"': *o++ = '"'; break;
            case '\\': *o++ = '\\'; break;
            case '\n': *o++ = 'n'; break;
            case '\r': *o++ = 'r'; break;
            case '\t': *o++ = 't'; break;
            case '\b': *o++ = 'b'; break;
            case '\f': *o++ = 'f'; break;
            default:
                *o++ = 'u';
                *o++ = '0';
                *o++ = '0';
                *o++ = hex[c >> 4];
                *o++ = hex[c & 15];
            }
            i++;
        } else {
            size_t k = trk_utf8_seq_len(p + i, len - i);
            if (k) {
                memcpy(o, p + i, k);
                o += k;
                i += k;
            } else {
                /* U+FFFD REPLACEMENT CHARACTER: one per bad byte keeps the
                 * output valid whatever the input (e.g. a name truncated
                 * mid-character by TRK_NAME_MAX). */
                *o++ = (char)0xEF;
                *o++ = (char)0xBF;
                *o++ = (char)0xBD;
                i++;
            }
        }
    }
    *o++ = '"';
    b->len = (size_t)(o - b->data);
    b->data[b->len] = '\0';
    return 0;
}

/* Writes v's decimal digits backwards ending at end; returns the start. */
static char *u64_digits(char *end, uint64_t v)
{
    char *p = end;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return p;
}

int trk_buf_u64(struct trk_buf *b, uint64_t v)
{
    char tmp[24];
    char *p = u64_digits(tmp + sizeof tmp, v);
    return trk_buf_append(b, p, (size_t)(tmp + sizeof tmp - p));
}

int trk_buf_i64(struct trk_buf *b, int64_t v)
{
    char tmp[24];
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    char *p = u64_digits(tmp + sizeof tmp, u);
    if (v < 0) *--p = '-';
    return trk_buf_append(b, p, (size_t)(tmp + sizeof tmp - p));
}

int trk_buf_fixed(struct trk_buf *b, double v, int decimals)
{
    static const double scale[] = { 1, 10, 100, 1e3, 1e4, 1e5, 1e6 };
    if (!isfinite(v)) return trk_buf_append(b, "null", 4);
    if (decimals < 0) decimals = 0;
    if (decimals > 6) decimals = 6;
    double s = fabs(v) * scale[decimals];
    if (s >= 9e15) {
        /* Beyond exact int64 scaling: printf's conversion is exact anyway. */
        char tmp[400];
        int k = snprintf(tmp, sizeof tmp, "%.*f", decimals, v);
        return trk_buf_append(b, tmp, (size_t)k);
    }
    /* Integer arithmetic is several times faster than printf("%.2f") and
     * this runs for every object of every frame. */
    uint64_t q = (uint64_t)llround(s);
    char tmp[32];
    char *end = tmp + sizeof tmp, *p = end;
    for (int i = 0; i < decimals; i++) {
        *--p = (char)('0' + q % 10);
        q /= 10;
    }
    if (decimals) *--p = '.';
    p = u64_digits(p, q);
    /* No "-0.00": a value that rounds to zero prints unsigned. */
    bool zero = true;
    for (const char *c = p; c < end; c++)
        if (*c >= '1' && *c <= '9') zero = false;
    if (v < 0 && !zero) *--p = '-';
    return trk_buf_append(b, p, (size_t)(end - p));
}
