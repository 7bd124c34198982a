/* minijson.h: a recursive-descent JSON parser into a small DOM. */
#include "minijson.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Nesting limit: the baseline files are 3 levels deep; this only stops a
 * malformed file from exhausting the stack. */
#define JSON_MAX_DEPTH 64

struct parser {
    const char *p;
    const char *start;
    char *err;
    size_t err_len;
    int failed;
};

static void fail(struct parser *ps, const char *fmt, ...)
{
    if (ps->failed) return;
    ps->failed = 1;
    if (!ps->err || !ps->err_len) return;
    int n = snprintf(ps->err, ps->err_len, "offset %ld: ", (long)(ps->p - ps->start));
    if (n < 0 || (size_t)n >= ps->err_len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->err + n, ps->err_len - (size_t)n, fmt, ap);
    va_end(ap);
}

static void skip_ws(struct parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
        ps->p++;
}

static void free_node(struct trk_json *v)
{
    free(v->key);
    free(v->string);
    for (size_t i = 0; i < v->n; i++)
        free_node(&v->items[i]);
    free(v->items);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Appends code point cp as UTF-8. */
static size_t put_utf8(char *d, unsigned cp)
{
    if (cp < 0x80) {
        d[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        d[0] = (char)(0xC0 | cp >> 6), d[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (char)(0xE0 | cp >> 12), d[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        d[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    d[0] = (char)(0xF0 | cp >> 18), d[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    d[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), d[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static char *parse_string(struct parser *ps)
{
    /* ps->p is at the opening quote. The decoded text is never longer than
     * the escaped one, so one allocation of the raw length suffices. */
    const char *s = ++ps->p;
    size_t raw = 0;
    while (s[raw] && s[raw] != '"')
        raw += s[raw] == '\\' && s[raw + 1] ? 2 : 1;
    if (!s[raw]) {
        fail(ps, "unterminated string");
        return NULL;
    }
    char *out = malloc(raw + 1), *d = out;
    if (!out) {
        fail(ps, "out of memory");
        return NULL;
    }
    while (*ps->p != '"') {
        char c = *ps->p++;
        if (c != '\\') {
            *d++ = c;
            continue;
        }
        c = *ps->p++;
        switch (c) {
        case '"': *d++ = '"'; break;
        case '\\': *d++ = '\\'; break;
        case '/': *d++ = '/'; break;
        case 'b': *d++ = '\b'; break;
        case 'f': *d++ = '\f'; break;
        case 'n': *d++ = '\n'; break;
        case 'r': *d++ = '\r'; break;
        case 't': *d++ = '\t'; break;
        case 'u': {
            unsigned cp = 0;
            for (int i = 0; i < 4; i++) {
                int h = hexval(ps->p[i]);
                if (h < 0) {
                    fail(ps, "bad \\u escape");
                    free(out);
                    return NULL;
                }
                cp = cp << 4 | (unsigned)h;
            }
            ps->p += 4;
            /* \uXXXX takes 6 bytes and yields at most 3; surrogate pairs
             * (12 bytes) yield 4, so the buffer is always large enough. */
            if (cp >= 0xD800 && cp < 0xDC00 && ps->p[0] == '\\' && ps->p[1] == 'u') {
                unsigned lo = 0;
                int ok = 1;
                for (int i = 0; i < 4 && ok; i++) {
                    int h = hexval(ps->p[2 + i]);
                    if (h < 0)
                        ok = 0; /* stops at the NUL of a cut-off text */
                    else
                        lo = lo << 4 | (unsigned)h;
                }
                if (ok && lo >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    ps->p += 6;
                }
            }
            d += put_utf8(d, cp);
            break;
        }
        default:
            fail(ps, "bad escape \\%c", c);
            free(out);
            return NULL;
        }
    }
    ps->p++; /* closing quote */
    *d = '\0';
    return out;
}

static int parse_value(struct parser *ps, struct trk_json *v, int depth);

/* Appends one zeroed child to v (array or object). */
static struct trk_json *add_child(struct parser *ps, struct trk_json *v)
{
    struct trk_json *items = realloc(v->items, (v->n + 1) * sizeof(*items));
    if (!items) {
        fail(ps, "out of memory");
        return NULL;
    }
    v->items = items;
    memset(&items[v->n], 0, sizeof(items[0]));
    return &items[v->n++];
}

static int parse_container(struct parser *ps, struct trk_json *v, int depth, int is_obj)
{
    char close = is_obj ? '}' : ']';
    v->type = is_obj ? TRK_JSON_OBJECT : TRK_JSON_ARRAY;
    ps->p++;
    skip_ws(ps);
    if (*ps->p == close) {
        ps->p++;
        return 0;
    }
    for (;;) {
        skip_ws(ps);
        char *key = NULL;
        if (is_obj) {
            if (*ps->p != '"') {
                fail(ps, "expected a member name");
                return -1;
            }
            key = parse_string(ps);
            if (!key) return -1;
            skip_ws(ps);
            if (*ps->p != ':') {
                free(key);
                fail(ps, "expected ':'");
                return -1;
            }
            ps->p++;
        }
        struct trk_json *c = add_child(ps, v);
        if (!c) {
            free(key);
            return -1;
        }
        c->key = key;
        if (parse_value(ps, c, depth + 1)) return -1;
        skip_ws(ps);
        if (*ps->p == ',') {
            ps->p++;
            continue;
        }
        if (*ps->p == close) {
            ps->p++;
            return 0;
        }
        fail(ps, "expected ',' or '%c'", close);
        return -1;
    }
}

static int parse_value(struct parser *ps, struct trk_json *v, int depth)
{
    if (depth > JSON_MAX_DEPTH) {
        fail(ps, "nested too deeply");
        return -1;
    }
    skip_ws(ps);
    switch (*ps->p) {
    case '{': return parse_container(ps, v, depth, 1);
    case '[': return parse_container(ps, v, depth, 0);
    case '"':
        v->type = TRK_JSON_STRING;
        v->string = parse_string(ps);
        return v->string ? 0 : -1;
    case 't':
        if (strncmp(ps->p, "true", 4)) break;
        v->type = TRK_JSON_BOOL, v->number = 1, ps->p += 4;
        return 0;
    case 'f':
        if (strncmp(ps->p, "false", 5)) break;
        v->type = TRK_JSON_BOOL, v->number = 0, ps->p += 5;
        return 0;
    case 'n':
        if (strncmp(ps->p, "null", 4)) break;
        v->type = TRK_JSON_NULL, ps->p += 4;
        return 0;
    default: {
        char *end;
        double d = strtod(ps->p, &end);
        if (end == ps->p) break;
        v->type = TRK_JSON_NUMBER, v->number = d, ps->p = end;
        return 0;
    }
    }
    fail(ps, "unexpected character '%c'", *ps->p ? *ps->p : '?');
    return -1;
}

struct trk_json *trk_json_parse(const char *text, char *err, size_t err_len)
{
    struct parser ps = { text, text, err, err_len, 0 };
    struct trk_json *root = calloc(1, sizeof(*root));
    if (!root) {
        if (err && err_len) snprintf(err, err_len, "out of memory");
        return NULL;
    }
    if (parse_value(&ps, root, 0) == 0) {
        skip_ws(&ps);
        if (*ps.p) fail(&ps, "trailing characters");
    }
    if (ps.failed) {
        trk_json_free(root);
        return NULL;
    }
    return root;
}

struct trk_json *trk_json_load(const char *path, char *err, size_t err_len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err && err_len) snprintf(err, err_len, "cannot open %s", path);
        return NULL;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 65536;
            char *t = realloc(text, cap);
            if (!t) {
                free(text);
                fclose(f);
                if (err && err_len) snprintf(err, err_len, "out of memory");
                return NULL;
            }
            text = t;
        }
        size_t got = fread(text + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) break;
    }
    fclose(f);
    text[len] = '\0';
    struct trk_json *root = trk_json_parse(text, err, err_len);
    free(text);
    return root;
}

void trk_json_free(struct trk_json *root)
{
    if (!root) return;
    free_node(root);
    free(root);
}

const struct trk_json *trk_json_get(const struct trk_json *o, const char *key)
{
    if (!o || o->type != TRK_JSON_OBJECT) return NULL;
    for (size_t i = 0; i < o->n; i++)
        if (o->items[i].key && !strcmp(o->items[i].key, key)) return &o->items[i];
    return NULL;
}

double trk_json_num(const struct trk_json *o, const char *key, double def)
{
    const struct trk_json *v = trk_json_get(o, key);
    return v && (v->type == TRK_JSON_NUMBER || v->type == TRK_JSON_BOOL) ? v->number : def;
}

const char *trk_json_str(const struct trk_json *o, const char *key, const char *def)
{
    const struct trk_json *v = trk_json_get(o, key);
    return v && v->type == TRK_JSON_STRING ? v->string : def;
}

int trk_json_load_scenes(const char *path, const char *who, struct trk_json **root, size_t elem,
                         bool (*take)(const struct trk_json *entry, void *item), void **items,
                         int *n)
{
    char err[256];
    *items = NULL;
    *n = 0;
    *root = trk_json_load(path, err, sizeof(err));
    if (!*root) {
        fprintf(stderr, "%s: %s: %s\n", who, path, err);
        return -1;
    }
    const struct trk_json *sc = trk_json_get(*root, "scenes");
    if (!sc || sc->type != TRK_JSON_ARRAY) {
        fprintf(stderr, "%s: %s: no \"scenes\" array\n", who, path);
        return -1;
    }
    char *it = calloc(sc->n ? sc->n : 1, elem);
    if (!it) return -1;
    *items = it;
    for (size_t i = 0; i < sc->n; i++)
        if (take(&sc->items[i], it + (size_t)*n * elem)) (*n)++;
    return 0;
}
