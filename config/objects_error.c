/* How a failure of the objects file is reported: struct trk_config_error
 * (set-up, message, "file:line:col: message") and the text rules that keep
 * every message printable on one line, however hostile the file: bytes it
 * quotes are cut, checked as UTF-8 and stripped of controls. */
#include "objects_int.h"
#include "utf8.h"

#include <stdio.h>
#include <string.h>

/* Length of the UTF-8 sequence at s (n bytes), 0 when invalid; *shown
 * whether a message may quote it: not a control (C0, DEL, C1: a terminal
 * takes U+009B as CSI) nor a noncharacter. */
static size_t seq_shown(const unsigned char *s, size_t n, bool *shown)
{
    unsigned long cp;
    size_t k = trk_utf8_decode(s, n, &cp);
    *shown = k && !trk_utf8_is_control(cp) && !trk_utf8_is_noncharacter(cp);
    return k;
}

/* Makes s printable on one line and valid UTF-8, in place: controls,
 * noncharacters and invalid bytes become '?', a sequence cut by truncation
 * is dropped.
 * Messages may quote file bytes (jansson's "near '...'"). */
static void sanitize(char *s)
{
    unsigned char *p = (unsigned char *)s;
    size_t n = strlen(s), r = 0, w = 0;
    while (r < n) {
        bool shown;
        size_t k = seq_shown(p + r, n - r, &shown);
        if (k == 0 && n - r < 4 && p[r] >= 0xC2 && p[r] <= 0xF4) {
            /* Possibly a sequence cut at the buffer's end: drop the tail. */
            size_t i = r + 1;
            while (i < n && (p[i] & 0xC0) == 0x80)
                i++;
            if (i == n) break;
        }
        if (!shown) {
            p[w++] = '?';
            r += k ? k : 1;
            continue;
        }
        memmove(p + w, p + r, k);
        w += k;
        r += k;
    }
    p[w] = 0;
}

/* What sanitize replaces with '?' is replaced here too. */
void trk_config_quote(const char *s, size_t len, char *out, size_t outlen)
{
    const size_t max = 40;
    size_t r = 0, w = 0;
    while (r < len && w + 4 < outlen) {
        bool shown;
        size_t k = seq_shown((const unsigned char *)s + r, len - r, &shown);
        if (!k) k = 1;
        if (w + (shown ? k : 1) > max) break;
        if (!shown) {
            out[w++] = '?';
        } else {
            memcpy(out + w, s + r, k);
            w += k;
        }
        r += k;
    }
    if (r < len && w + 4 <= outlen) {
        memcpy(out + w, "...", 3);
        w += 3;
    }
    out[w] = 0;
}

/* strerror() may share a static buffer between threads; the GNU and XSI
 * strerror_r differ in return type, so pick by the feature macros. */
const char *trk_config_errno_text(int e, char *buf, size_t n)
{
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
    return strerror_r(e, buf, n);
#else
    if (strerror_r(e, buf, n) != 0) snprintf(buf, n, "error %d", e);
    return buf;
#endif
}

void trk_config_error_init(struct trk_config_error *err, const char *file)
{
    memset(err, 0, sizeof *err);
    /* A longer path is cut (said with the precision, so the compiler knows). */
    snprintf(err->file, sizeof err->file, "%.*s", (int)sizeof err->file - 1,
             file ? file : "<string>");
    sanitize(err->file);
}

int trk_config_error_begin(struct trk_config_error **err, struct trk_config_error *local,
                           const char *file, bool args_ok)
{
    if (!*err) *err = local;
    trk_config_error_init(*err, file);
    if (args_ok) return 0;
    trk_config_error_set(*err, 0, 0, "invalid arguments");
    return TRK_EINVAL;
}

void trk_config_error_vset(struct trk_config_error *err, const char *fmt, va_list ap)
{
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    sanitize(err->msg);
}

void trk_config_error_set(struct trk_config_error *err, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    trk_config_error_vset(err, fmt, ap);
    va_end(ap);
    err->line = line;
    err->col = col;
}

int trk_config_error_format(const struct trk_config_error *err, char *buf, size_t len)
{
    if (!err) return TRK_EINVAL;
    int n;
    if (err->line > 0)
        n = snprintf(buf, len, "%s:%d:%d: %s", err->file, err->line, err->col, err->msg);
    else
        n = snprintf(buf, len, "%s: %s", err->file, err->msg);
    return n;
}
