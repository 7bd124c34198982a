/* The position index of posindex.h: one pass over the text, iterative (no
 * recursion, so deep nesting cannot overflow the C stack), every value kept
 * as a node in text order with links to its parent, first child and next
 * sibling. Keys are stored decoded (escapes resolved to UTF-8) so a lookup
 * with jansson's key bytes finds them whatever escapes the file used. */
#include "posindex.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trk_error.h"

struct node {
    size_t off, key_off;
    size_t key_start, key_len; /* decoded key bytes in the arena */
    int line, col, key_line, key_col;
    int depth, has_key;
    int parent, first_child, last_child, next_sibling;
    char type; /* '{', '[' or 's' (any scalar) */
};

struct trk_posindex {
    struct node *nodes;
    int n, cap;
    char *arena;
    size_t alen, acap;
};

struct scanner {
    const char *s;
    size_t len, p;
    int line, col;
};

static void adv(struct scanner *sc)
{
    if (sc->s[sc->p] == '\n') {
        sc->line++;
        sc->col = 1;
    } else {
        sc->col++;
    }
    sc->p++;
}

static void skip_ws(struct scanner *sc)
{
    while (sc->p < sc->len) {
        char c = sc->s[sc->p];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        adv(sc);
    }
}

static int arena_put(struct trk_posindex *ix, const char *b, size_t n)
{
    if (ix->alen + n > ix->acap) {
        size_t cap = ix->acap ? ix->acap : 256;
        while (cap < ix->alen + n)
            cap *= 2;
        char *a = realloc(ix->arena, cap);
        if (!a) return TRK_ENOMEM;
        ix->arena = a;
        ix->acap = cap;
    }
    memcpy(ix->arena + ix->alen, b, n);
    ix->alen += n;
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Reads 4 hex digits at sc->p; -1 (and nothing consumed) if they are not. */
static long read_hex4(struct scanner *sc)
{
    if (sc->len - sc->p < 4) return -1;
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(sc->s[sc->p + i]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    for (int i = 0; i < 4; i++)
        adv(sc);
    return v;
}

static int put_utf8(struct trk_posindex *ix, unsigned long cp)
{
    char b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (char)(0xC0 | (cp >> 6));
        b[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | (cp >> 12));
        b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        b[0] = (char)(0xF0 | (cp >> 18));
        b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return arena_put(ix, b, n);
}

/* Consumes a string starting at its opening quote. With ix, also appends the
 * decoded bytes to the arena. Returns 0, 1 (unterminated) or TRK_ENOMEM. */
static int scan_string(struct scanner *sc, struct trk_posindex *ix)
{
    adv(sc); /* opening quote */
    for (;;) {
        if (sc->p >= sc->len) return 1;
        char c = sc->s[sc->p];
        if (c == '"') {
            adv(sc);
            return 0;
        }
        if (c != '\\') {
            if (ix && arena_put(ix, &c, 1)) return TRK_ENOMEM;
            adv(sc);
            continue;
        }
        adv(sc);
        if (sc->p >= sc->len) return 1;
        char e = sc->s[sc->p];
        adv(sc);
        if (!ix) continue; /* \uXXXX digits are plain bytes to a skipper */
        int rc = 0;
        switch (e) {
        case 'b': rc = arena_put(ix, "\b", 1); break;
        case 'f': rc = arena_put(ix, "\f", 1); break;
        case 'n': rc = arena_put(ix, "\n", 1); break;
        case 'r': rc = arena_put(ix, "\r", 1); break;
        case 't': rc = arena_put(ix, "\t", 1); break;
        case 'u': {
            long cp = read_hex4(sc);
            if (cp < 0) break; /* malformed: jansson rejected it already */
            /* A high surrogate followed by \uDC00..\uDFFF is one code point
             * (jansson decodes it so; a lone surrogate it rejects). */
            if (cp >= 0xD800 && cp <= 0xDBFF && sc->len - sc->p >= 6 && sc->s[sc->p] == '\\' &&
                sc->s[sc->p + 1] == 'u') {
                struct scanner peek = *sc;
                adv(&peek);
                adv(&peek);
                long lo = read_hex4(&peek);
                if (lo >= 0xDC00 && lo <= 0xDFFF) {
                    *sc = peek;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
            }
            rc = put_utf8(ix, (unsigned long)cp);
            break;
        }
        default: rc = arena_put(ix, &e, 1); break; /* \" \\ \/ */
        }
        if (rc) return rc;
    }
}

static int is_scalar_byte(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' ||
           c == '+' || c == '.';
}

static int add_node(struct trk_posindex *ix, const struct scanner *sc, int parent, char type)
{
    if (ix->n == ix->cap) {
        int cap = ix->cap ? ix->cap * 2 : 64;
        struct node *nn = realloc(ix->nodes, (size_t)cap * sizeof *nn);
        if (!nn) return TRK_ENOMEM;
        ix->nodes = nn;
        ix->cap = cap;
    }
    int i = ix->n++;
    struct node *d = &ix->nodes[i];
    memset(d, 0, sizeof *d);
    d->off = sc->p;
    d->line = sc->line;
    d->col = sc->col;
    d->type = type;
    d->parent = parent;
    d->first_child = d->last_child = d->next_sibling = -1;
    if (parent >= 0) {
        struct node *p = &ix->nodes[parent];
        d->depth = p->depth + 1;
        if (p->last_child < 0)
            p->first_child = i;
        else
            ix->nodes[p->last_child].next_sibling = i;
        p->last_child = i;
    }
    return i;
}

enum { ST_VALUE, ST_FIRST_VALUE, ST_KEY, ST_FIRST_KEY, ST_AFTER };

static int scan(struct trk_posindex *ix, const char *text, size_t len)
{
    struct scanner sc = { text, len, 0, 1, 1 };
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
        sc.p = 3;
        sc.col = 4;
    }
    int *stack = NULL, depth = 0, cap = 0;
    int st = ST_VALUE, rc = 1;
    /* The key read for the value about to come. */
    int has_key = 0, kline = 0, kcol = 0;
    size_t koff = 0, kstart = 0, klen = 0;

    for (;;) {
        skip_ws(&sc);
        if (sc.p >= sc.len) {
            rc = (st == ST_AFTER && depth == 0) ? 0 : 1;
            break;
        }
        char c = text[sc.p];
        if (st == ST_FIRST_KEY && c == '}') {
            depth--;
            adv(&sc);
            st = ST_AFTER;
            continue;
        }
        if (st == ST_FIRST_VALUE && c == ']') {
            depth--;
            adv(&sc);
            st = ST_AFTER;
            continue;
        }
        if (st == ST_KEY || st == ST_FIRST_KEY) {
            if (c != '"') break;
            koff = sc.p;
            kline = sc.line;
            kcol = sc.col;
            kstart = ix->alen;
            int r = scan_string(&sc, ix);
            if (r) {
                rc = r;
                break;
            }
            klen = ix->alen - kstart;
            skip_ws(&sc);
            if (sc.p >= sc.len || text[sc.p] != ':') break;
            adv(&sc);
            has_key = 1;
            st = ST_VALUE;
            continue;
        }
        if (st == ST_AFTER) {
            if (depth == 0) break; /* text after the top-level value */
            char open = ix->nodes[stack[depth - 1]].type;
            if (c == ',') {
                adv(&sc);
                st = open == '{' ? ST_KEY : ST_VALUE;
            } else if ((c == '}' && open == '{') || (c == ']' && open == '[')) {
                adv(&sc);
                depth--;
            } else {
                break;
            }
            continue;
        }
        /* ST_VALUE or ST_FIRST_VALUE: a value starts here. */
        char type = (c == '{' || c == '[') ? c : 's';
        if (type == 's' && c != '"' && !is_scalar_byte(c)) break;
        if (depth == 0 && ix->n > 0) break; /* a second top-level value */
        int i = add_node(ix, &sc, depth ? stack[depth - 1] : -1, type);
        if (i < 0) {
            rc = i;
            break;
        }
        if (has_key) {
            struct node *d = &ix->nodes[i];
            d->has_key = 1;
            d->key_off = koff;
            d->key_line = kline;
            d->key_col = kcol;
            d->key_start = kstart;
            d->key_len = klen;
            has_key = 0;
        }
        if (type != 's') {
            if (depth == cap) {
                int ncap = cap ? cap * 2 : 16;
                int *ns = realloc(stack, (size_t)ncap * sizeof *ns);
                if (!ns) {
                    rc = TRK_ENOMEM;
                    break;
                }
                stack = ns;
                cap = ncap;
            }
            stack[depth++] = i;
            adv(&sc);
            st = type == '{' ? ST_FIRST_KEY : ST_FIRST_VALUE;
        } else if (c == '"') {
            int r = scan_string(&sc, NULL);
            if (r) {
                rc = r;
                break;
            }
            st = ST_AFTER;
        } else {
            while (sc.p < sc.len && is_scalar_byte(text[sc.p]))
                adv(&sc);
            st = ST_AFTER;
        }
    }
    free(stack);
    return rc;
}

int trk_posindex_build(const char *text, size_t len, struct trk_posindex **out)
{
    *out = NULL;
    struct trk_posindex *ix = calloc(1, sizeof *ix);
    if (!ix) return TRK_ENOMEM;
    int rc = scan(ix, text ? text : "", text ? len : 0);
    if (rc < 0) {
        trk_posindex_destroy(&ix);
        return rc;
    }
    *out = ix;
    return rc;
}

void trk_posindex_destroy(struct trk_posindex **ix)
{
    if (!ix || !*ix) return;
    free((*ix)->nodes);
    free((*ix)->arena);
    free(*ix);
    *ix = NULL;
}

int trk_posindex_find(const struct trk_posindex *ix, const struct trk_path_seg *path, int n,
                      int want_key, int *line, int *col)
{
    if (!ix || ix->n == 0) return -1;
    int cur = 0;
    for (int s = 0; s < n && cur >= 0; s++) {
        const struct node *p = &ix->nodes[cur];
        int c = p->first_child;
        if (path[s].key) {
            if (p->type != '{') return -1;
            while (c >= 0) {
                const struct node *d = &ix->nodes[c];
                /* An empty key may have no arena at all: memcmp(NULL, ..., 0)
                 * is undefined (UBSan reports it). */
                if (d->key_len == path[s].key_len &&
                    (d->key_len == 0 ||
                     memcmp(ix->arena + d->key_start, path[s].key, d->key_len) == 0))
                    break;
                c = d->next_sibling;
            }
        } else {
            if (p->type != '[' || path[s].index < 0) return -1;
            for (int k = 0; k < path[s].index && c >= 0; k++)
                c = ix->nodes[c].next_sibling;
        }
        cur = c;
    }
    if (cur < 0) return -1;
    const struct node *d = &ix->nodes[cur];
    if (want_key) {
        if (!d->has_key) return -1;
        *line = d->key_line;
        *col = d->key_col;
    } else {
        *line = d->line;
        *col = d->col;
    }
    return 0;
}

int trk_posindex_count(const struct trk_posindex *ix)
{
    return ix ? ix->n : 0;
}

int trk_posindex_get(const struct trk_posindex *ix, int i, struct trk_posindex_entry *e)
{
    if (!ix || i < 0 || i >= ix->n) return -1;
    const struct node *d = &ix->nodes[i];
    e->off = d->off;
    e->line = d->line;
    e->col = d->col;
    e->depth = d->depth;
    e->has_key = d->has_key;
    e->key_off = d->key_off;
    e->key_line = d->key_line;
    e->key_col = d->key_col;
    return 0;
}
