/* UTF-8 validation shared by the parsers of outside text (objects files,
 * client messages, names on the wire). Header-only: no library to link. */
#ifndef TRK_BASE_UTF8_H
#define TRK_BASE_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence starting at s (n bytes available), or 0
 * when it is not valid: overlong forms, surrogates and code points above
 * U+10FFFF are invalid, as in RFC 3629 (and as jansson decides). *cp gets
 * the code point when valid. */
static inline size_t trk_utf8_decode(const unsigned char *s, size_t n, unsigned long *cp_out)
{
    unsigned c = s[0];
    size_t len;
    unsigned long cp;
    if (c < 0x80) {
        *cp_out = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    *cp_out = cp;
    return len;
}

static inline size_t trk_utf8_seq_len(const unsigned char *s, size_t n)
{
    unsigned long cp;
    return trk_utf8_decode(s, n, &cp);
}

/* Code points no name or text label may hold, because some output refuses
 * them: C0 and C1 controls and DEL (MQTT topics, terminals, logs) and the
 * Unicode noncharacters U+FDD0..U+FDEF and U+xxFFFE/U+xxFFFF (MQTT 3.1.1
 * 1.5.3 lets a broker close the connection for them; libmosquitto refuses to
 * publish). config/OBJECTS.md, "Names". */
static inline bool trk_utf8_is_control(unsigned long cp)
{
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F);
}

static inline bool trk_utf8_is_noncharacter(unsigned long cp)
{
    return (cp >= 0xFDD0 && cp <= 0xFDEF) || (cp & 0xFFFE) == 0xFFFE;
}

#endif
