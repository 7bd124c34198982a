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

int trk_buf_append_grow(struct trk_buf *b, const void *p, size_t n)
{
    if (trk_buf_reserve(b, n)) return TRK_ENOMEM;
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
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

/* "00" .. "99": two digits per step. */
static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930"
    "31323334353637383940414243444546474849505152535455565758596061"
    "62636465666768697071727374757677787980818283848586878889909192"
    "93949596979899";

/* Writes v's decimal digits backwards ending at end; returns the start. */
static char *u64_digits(char *end, uint64_t v)
{
    char *p = end;
    while (v >= 100) {
        const unsigned r = (unsigned)(v % 100);
        v /= 100;
        p -= 2;
        memcpy(p, digit_pairs + 2 * r, 2);
    }
    if (v >= 10) {
        p -= 2;
        memcpy(p, digit_pairs + 2 * v, 2);
    } else {
        *--p = (char)('0' + v);
    }
    return p;
}

/* How many decimal digits v has (1 for 0). */
static size_t u64_len(uint64_t v)
{
    size_t n = 1;
    for (uint64_t t = 10; n < 20 && v >= t; t *= 10)
        n++;
    return n;
}

/* Room for n more bytes and the terminator, then n bytes claimed: where
 * they go, or NULL (failed). The number appenders write their digits there
 * directly, backwards from the end. */
static char *claim(struct trk_buf *b, size_t n)
{
    if (!trk_buf_fits(b, n) && trk_buf_reserve(b, n)) return NULL;
    char *at = b->data + b->len;
    b->len += n;
    b->data[b->len] = '\0';
    return at;
}

int trk_buf_u64(struct trk_buf *b, uint64_t v)
{
    const size_t n = u64_len(v);
    char *at = claim(b, n);
    if (!at) return TRK_ENOMEM;
    u64_digits(at + n, v);
    return 0;
}

int trk_buf_i64(struct trk_buf *b, int64_t v)
{
    const uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    const size_t n = u64_len(u) + (v < 0);
    char *at = claim(b, n);
    if (!at) return TRK_ENOMEM;
    if (v < 0) *at = '-';
    u64_digits(at + n, u);
    return 0;
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
    /* llround(s), exactly (s < 2^53: the truncation and the difference are
     * exact), without the library call: half away from zero. */
    uint64_t q = (uint64_t)s;
    q += s - (double)q >= 0.5;
    uint64_t ip, f;
    /* Constant divisors: a multiply each, not a division. */
    switch (decimals) {
    case 0: ip = q, f = 0; break;
    case 1: ip = q / 10, f = q % 10; break;
    case 2: ip = q / 100, f = q % 100; break;
    case 3: ip = q / 1000, f = q % 1000; break;
    case 4: ip = q / 10000, f = q % 10000; break;
    case 5: ip = q / 100000, f = q % 100000; break;
    default: ip = q / 1000000, f = q % 1000000; break;
    }
    /* No "-0.00": a value that rounds to zero (q = 0) prints unsigned. */
    const bool neg = v < 0 && q;
    const size_t n = (size_t)neg + u64_len(ip) + (decimals ? (size_t)decimals + 1 : 0);
    char *at = claim(b, n);
    if (!at) return TRK_ENOMEM;
    char *p = at + n;
    if (decimals) {
        /* The fraction's digits, zeros on the left included, then the point. */
        char *stop = p - decimals;
        while (p - stop >= 2) {
            p -= 2;
            memcpy(p, digit_pairs + 2 * (f % 100), 2);
            f /= 100;
        }
        if (p > stop) *--p = (char)('0' + f % 10);
        *--p = '.';
    }
    u64_digits(p, ip);
    if (neg) *at = '-';
    return 0;
}
