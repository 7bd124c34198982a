/* Objects configuration: load (jansson for values, posindex.c for positions),
 * validate, default colours, write back, atomic save.
 *
 * Checks run in a fixed order so the reported error is predictable: the top
 * level (its keys, "camera", "prefilter"), then each object in array order;
 * within an object: its type, unknown keys (in text order), missing keys,
 * space, name, lo, hi (types and ranges), lo <= hi, min_mass, blobs,
 * min_area, connectivity, coast_frames, track, color; duplicate names last
 * for that object.
 * Only the first error is reported: a config file is fixed one edit at a
 * time, and later errors are often consequences of the first.
 */
#include "objects.h"
#include "utf8.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "color.h"
#include "posindex.h"
#include "prefilter.h"
#include "trk_buf.h" /* the writer's buffer and JSON escaping */
#include "trk_color.h"

/* ------------------------------------------------------------ text helpers */

static int is_ctrl(unsigned char c)
{
    return c < 0x20 || c == 0x7F;
}

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

/* Copies a user string for quoting in a message: at most 40 bytes, cut at a
 * character boundary and marked with "...", what sanitize replaces as '?'. */
static void quote_user(const char *s, size_t len, char *out, size_t outlen)
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

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE: return "true";
    case JSON_FALSE: return "false";
    default: return "null";
    }
}

/* -------------------------------------------------------- shared rules */

static const char *const space_names[] = { "rgb", "hsv", "ycbcr" };
static const char *const channel_names[3][3] = { { "R", "G", "B" },
                                                 { "H", "S", "V" },
                                                 { "Y", "Cb", "Cr" } };

const char *trk_objects_space_name(enum trk_space space)
{
    return (unsigned)space < 3 ? space_names[space] : NULL;
}

int trk_objects_space_parse(const char *s)
{
    for (int i = 0; s && i < 3; i++)
        if (strcmp(s, space_names[i]) == 0) return i;
    return -1;
}

/* The rule of names (and of the calibration's unit): 1..max-1 bytes of
 * UTF-8 without controls (C0, DEL, C1) or noncharacters, so that every
 * output carries it (OBJECTS.md, "Names"); msg gets e.g. "name must not be
 * empty" (what = "name"). 0 or -1. */
static int check_text(const char *what, size_t max, const char *s, size_t len, char *msg, size_t n)
{
    if (len == 0) {
        snprintf(msg, n, "%s must not be empty", what);
        return -1;
    }
    if (len >= max) {
        snprintf(msg, n, "%s is %zu bytes long (at most %zu)", what, len, max - 1);
        return -1;
    }
    for (size_t i = 0; i < len;) {
        unsigned long cp;
        size_t k = trk_utf8_decode((const unsigned char *)s + i, len - i, &cp);
        if (k == 0) {
            snprintf(msg, n, "%s is not valid UTF-8", what);
            return -1;
        }
        if (trk_utf8_is_control(cp) || trk_utf8_is_noncharacter(cp)) {
            snprintf(msg, n, "%s must not contain %s (U+%04lX at byte %zu)", what,
                     trk_utf8_is_control(cp) ? "control characters" : "Unicode noncharacters", cp,
                     i + 1);
            return -1;
        }
        i += k;
    }
    return 0;
}

static int check_name(const char *s, size_t len, char *msg, size_t n)
{
    return check_text("name", TRK_NAME_MAX, s, len, msg, n);
}

int trk_objects_check_name(const char *what, const char *s, char *msg, size_t msg_len)
{
    return check_text(what, TRK_NAME_MAX, s, strlen(s), msg, msg_len);
}

/* Channel ranges then lo <= hi. On failure returns which value is at fault
 * (0..2: lo[c], 3..5: hi[c]) and the message; -1 when the box is valid. */
static int check_box(int space, const long long lo[3], const long long hi[3], char *msg, size_t n)
{
    const char *sp = space_names[space];
    for (int k = 0; k < 6; k++) {
        int c = k % 3;
        long long v = k < 3 ? lo[c] : hi[c];
        if (v < 0 || v > (long)trk_chan_max(space, c)) {
            snprintf(msg, n, "%s[%d] = %lld is out of range 0..%ld (%s %s)", k < 3 ? "lo" : "hi", c,
                     v, (long)trk_chan_max(space, c), sp, channel_names[space][c]);
            return k;
        }
    }
    for (int c = 0; c < 3; c++) {
        if (trk_objects_channel_wraps((enum trk_space)space, c))
            continue; /* the hue range wraps through 0 when lo > hi */
        if (lo[c] > hi[c]) {
            snprintf(msg, n,
                     "lo[%d] = %lld is greater than hi[%d] = %lld (only the hsv hue may wrap)", c,
                     lo[c], c, hi[c]);
            return c;
        }
    }
    return -1;
}

const char *trk_objects_channel_name(enum trk_space space, int c)
{
    return (unsigned)space < 3 && c >= 0 && c < 3 ? channel_names[space][c] : NULL;
}

int trk_objects_channel_max(enum trk_space space, int c)
{
    return trk_chan_max(space, c);
}

bool trk_objects_channel_wraps(enum trk_space space, int c)
{
    return space == TRK_SPACE_HSV && c == 0;
}

static int hexdigit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* "#rrggbb" (either case) -> rgb; 0 or -1. */
static int parse_color(const char *s, size_t len, uint8_t rgb[3])
{
    if (len != 7 || s[0] != '#') return -1;
    for (int i = 0; i < 3; i++) {
        int h = hexdigit(s[1 + 2 * i]), l = hexdigit(s[2 + 2 * i]);
        if (h < 0 || l < 0) return -1;
        rgb[i] = (uint8_t)(h * 16 + l);
    }
    return 0;
}

/* ------------------------------------------------------- error reporting */

#define MAX_SEGS 8

/* Validation context: where we are (path from the top level) and how to
 * turn a path into a position (text + lazily built index; none when
 * validating a jansson value that came without text). */
struct vctx {
    struct trk_config_error *err;
    const char *text;
    size_t len;
    struct trk_posindex *ix;
    int ix_built;
    struct trk_path_seg path[MAX_SEGS];
    /* A file's paths start at the top level ("objects[3].lo[1]"); those of
     * trk_objects_parse_object at the object ("lo[1]"). */
    int depth;
    /* A file read at run time (trk_objects_target_load): messages quote no
     * text from it (strings, keys, unparsed bytes), since they may reach
     * someone who cannot read the file. user[i]: path[i]'s key came from
     * the text, not from our list of keys. */
    bool quiet;
    bool user[MAX_SEGS];
};

static void push_key(struct vctx *c, const char *key)
{
    c->path[c->depth].key = key;
    c->path[c->depth].key_len = strlen(key);
    c->path[c->depth].index = -1;
    c->user[c->depth] = false;
    c->depth++;
}

/* A key that is not one of ours (an unknown key, a camera control name). */
static void push_user_key(struct vctx *c, const char *key)
{
    push_key(c, key);
    c->user[c->depth - 1] = true;
}

static void push_index(struct vctx *c, int i)
{
    c->path[c->depth].key = NULL;
    c->path[c->depth].key_len = 0;
    c->path[c->depth].index = i;
    c->user[c->depth] = false;
    c->depth++;
}

static void pop(struct vctx *c)
{
    c->depth--;
}

/* A string from the text for a message: "quoted" (quote_user's rules), or
 * (not shown) for a quiet load. */
static void user_text(const struct vctx *c, const char *s, size_t len, char *out, size_t n)
{
    if (c->quiet) {
        snprintf(out, n, "(not shown)");
        return;
    }
    char q[64];
    quote_user(s, len, q, sizeof q);
    snprintf(out, n, "\"%s\"", q);
}

/* The current path as text, e.g. "objects[3].lo[1]" ("" at the base). */
static const char *path_text(const struct vctx *c, char *buf, size_t n)
{
    size_t w = 0;
    buf[0] = 0;
    for (int i = 0; i < c->depth && w < n; i++) {
        const struct trk_path_seg *s = &c->path[i];
        int k;
        if (s->key && c->quiet && c->user[i])
            k = snprintf(buf + w, n - w, "%s<key>", w ? "." : "");
        else if (s->key)
            k = snprintf(buf + w, n - w, "%s%.*s", w ? "." : "", (int)s->key_len, s->key);
        else
            k = snprintf(buf + w, n - w, "[%d]", s->index);
        if (k < 0) break;
        w += (size_t)k;
    }
    return buf;
}

static void set_pos(struct vctx *c, int want_key)
{
    c->err->line = c->err->col = 0;
    if (!c->text) return;
    if (!c->ix_built) {
        c->ix_built = 1;
        trk_posindex_build(c->text, c->len, &c->ix); /* NULL on ENOMEM: 1:1 below */
    }
    /* The exact value first; an ancestor if the index somehow lacks it. */
    for (int n = c->depth; n >= 0; n--) {
        if (trk_posindex_find(c->ix, c->path, n, want_key && n == c->depth, &c->err->line,
                              &c->err->col) == 0)
            return;
    }
    c->err->line = c->err->col = 1;
}

/* Records the error at the current path (its key when want_key). The
 * message is printf-formatted; returns TRK_EINVAL for `return fail(...)`. */
__attribute__((format(printf, 3, 4))) static int fail(struct vctx *c, int want_key, const char *fmt,
                                                      ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err->msg, sizeof c->err->msg, fmt, ap);
    va_end(ap);
    sanitize(c->err->msg);
    set_pos(c, want_key);
    return TRK_EINVAL;
}

/* strerror() may share a static buffer between threads; the GNU and XSI
 * strerror_r differ in return type, so pick by the feature macros. */
static const char *errno_text(int e, char *buf, size_t n)
{
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
    return strerror_r(e, buf, n);
#else
    if (strerror_r(e, buf, n) != 0) snprintf(buf, n, "error %d", e);
    return buf;
#endif
}

static void err_init(struct trk_config_error *err, const char *file)
{
    memset(err, 0, sizeof *err);
    /* A longer path is cut (said with the precision, so the compiler knows). */
    snprintf(err->file, sizeof err->file, "%.*s", (int)sizeof err->file - 1,
             file ? file : "<string>");
    sanitize(err->file);
}

__attribute__((format(printf, 4, 5))) static void err_at(struct trk_config_error *err, int line,
                                                         int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    sanitize(err->msg);
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

/* ------------------------------------------------------------ validation */

/* In the order of OBJECTS.md's table (the saver writes them so); the first
 * four are required. */
static const char *const object_keys[] = { "name",     "space",        "lo",       "hi",
                                           "min_mass", "blobs",        "min_area", "connectivity",
                                           "track",    "coast_frames", "color" };
#define N_OBJECT_KEYS (sizeof object_keys / sizeof object_keys[0])

/* lo or hi at the current path: 3 integers (ranges are checked later,
 * together, by check_box). */
static int parse_triple(struct vctx *c, const json_t *a, long long v[3], char *p, size_t pn)
{
    if (!json_is_array(a))
        return fail(c, 0, "%s must be an array of 3 integers, not %s", path_text(c, p, pn),
                    type_name(a));
    if (json_array_size(a) != 3)
        return fail(c, 0, "%s must have 3 elements, not %zu", path_text(c, p, pn),
                    json_array_size(a));
    for (int i = 0; i < 3; i++) {
        const json_t *e = json_array_get(a, (size_t)i);
        push_index(c, i);
        if (!json_is_integer(e)) {
            int rc = fail(c, 0, "%s must be an integer, not %s", path_text(c, p, pn), type_name(e));
            pop(c);
            return rc;
        }
        v[i] = json_integer_value(e);
        pop(c);
    }
    return 0;
}

/* 0 when v (at the current path) is a string, else records "<path> must be
 * <what>, not <type>". p is scratch for the path text. */
static int want_string(struct vctx *c, const json_t *v, const char *what, char *p, size_t pn)
{
    if (json_is_string(v)) return 0;
    return fail(c, 0, "%s must be %s, not %s", path_text(c, p, pn), what, type_name(v));
}

/* Records "<path> "<v, quoted>" <why>" for the string v at the current path
 * ("(not shown)" instead of the text for a quiet load). */
static int fail_quoted(struct vctx *c, const json_t *v, const char *why, char *p, size_t pn)
{
    char q[72];
    user_text(c, json_string_value(v), json_string_length(v), q, sizeof q);
    return fail(c, 0, "%s %s %s", path_text(c, p, pn), q, why);
}

/* The optional integer key of object o into *v (left alone when absent):
 * lo..hi, or when ends_only exactly lo or hi (connectivity 4 or 8). */
static int opt_int(struct vctx *c, const json_t *o, const char *key, long long lo, long long hi,
                   bool ends_only, long long *v)
{
    const json_t *j = json_object_get(o, key);
    if (!j) return 0;
    char p[128], what[64];
    if (ends_only)
        snprintf(what, sizeof what, "%lld or %lld", lo, hi);
    else
        snprintf(what, sizeof what, "an integer %lld..%lld", lo, hi);
    int rc = 0;
    push_key(c, key);
    if (!json_is_integer(j)) {
        rc = fail(c, 0, "%s must be %s, not %s", path_text(c, p, sizeof p), what, type_name(j));
    } else {
        long long x = json_integer_value(j);
        if (x < lo || x > hi || (ends_only && x != lo && x != hi))
            rc = fail(c, 0, "%s must be %s, not %lld", path_text(c, p, sizeof p), what, x);
        else
            *v = x;
    }
    pop(c);
    return rc;
}

/* Validates the object at the current path into def/color. */
static int parse_object(struct vctx *c, const json_t *o, struct trk_object_def *def,
                        uint8_t color[3])
{
    char hb[128], p[128], m[200];
    int rc;
    const char *here = path_text(c, hb, sizeof hb);
    /* "objects[3]: missing ..." for a file, "missing ..." for a lone object. */
    const char *sep = here[0] ? ": " : "";

    if (!json_is_object(o))
        return fail(c, 0, "%s must be an object, not %s", here[0] ? here : "the value",
                    type_name(o));

    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        size_t i;
        for (i = 0; i < N_OBJECT_KEYS; i++)
            if (strcmp(key, object_keys[i]) == 0) break;
        if (i == N_OBJECT_KEYS) {
            char q[72];
            user_text(c, key, strlen(key), q, sizeof q);
            push_user_key(c, key);
            rc =
                fail(c, 1,
                     "%s%sunknown key %s (expected name, space, lo, hi, min_mass, blobs, min_area, "
                     "connectivity, track, coast_frames or color)",
                     here, sep, q);
            pop(c);
            return rc;
        }
    }
    for (size_t i = 0; i < 4; i++) /* name, space, lo, hi are required */
        if (!json_object_get(o, object_keys[i]))
            return fail(c, 0, "%s%smissing key \"%s\"", here, sep, object_keys[i]);

    memset(def, 0, sizeof *def);

    /* space first: the channel ranges depend on it. Each field below is
     * checked with its key on the path, popped whatever the outcome. */
    int space = -1;
    v = json_object_get(o, "space");
    push_key(c, "space");
    rc = want_string(c, v, "a string", p, sizeof p);
    if (!rc) {
        space = trk_objects_space_parse(json_string_value(v));
        if (space < 0 || strlen(json_string_value(v)) != json_string_length(v))
            rc = fail_quoted(c, v, "is not one of rgb, hsv, ycbcr", p, sizeof p);
    }
    pop(c);
    if (rc) return rc;
    def->space = (enum trk_space)space;

    v = json_object_get(o, "name");
    push_key(c, "name");
    rc = want_string(c, v, "a string", p, sizeof p);
    /* m starts with "name ...", so the object's path prefixes it. */
    if (!rc && check_name(json_string_value(v), json_string_length(v), m, sizeof m))
        rc = fail(c, 0, "%s%s%s", here, here[0] ? "." : "", m);
    pop(c);
    if (rc) return rc;
    memcpy(def->name, json_string_value(v), json_string_length(v));

    long long lo[3], hi[3];
    push_key(c, "lo");
    rc = parse_triple(c, json_object_get(o, "lo"), lo, p, sizeof p);
    pop(c);
    if (rc) return rc;
    push_key(c, "hi");
    rc = parse_triple(c, json_object_get(o, "hi"), hi, p, sizeof p);
    pop(c);
    if (rc) return rc;
    int bad = check_box(space, lo, hi, m, sizeof m);
    if (bad >= 0) {
        push_key(c, bad < 3 ? "lo" : "hi");
        push_index(c, bad % 3);
        rc = fail(c, 0, "%s%s%s", here, here[0] ? "." : "", m);
        pop(c);
        pop(c);
        return rc;
    }
    for (int i = 0; i < 3; i++) {
        def->lo[i] = (uint16_t)lo[i];
        def->hi[i] = (uint16_t)hi[i];
    }

    def->min_mass = 1;
    v = json_object_get(o, "min_mass");
    if (v) {
        push_key(c, "min_mass");
        if (!json_is_integer(v))
            rc = fail(c, 0, "%s must be an integer >= 1, not %s", path_text(c, p, sizeof p),
                      type_name(v));
        else if (json_integer_value(v) < 1)
            rc = fail(c, 0, "%s must be an integer >= 1, not %lld", path_text(c, p, sizeof p),
                      (long long)json_integer_value(v));
        else
            def->min_mass = (uint64_t)json_integer_value(v);
        pop(c);
        if (rc) return rc;
    }

    /* Blobs: absent keys are the defaults, stored as such (not as 0) so a
     * saved set loads back identical. min_area and connectivity are
     * accepted without blobs: a client may set them before turning blobs
     * on. */
    long long k = 0, area = 1, conn = 8;
    if ((rc = opt_int(c, o, "blobs", 0, TRK_MAX_BLOBS, false, &k)) ||
        (rc = opt_int(c, o, "min_area", 1, TRK_OBJECTS_MIN_AREA_MAX, false, &area)) ||
        (rc = opt_int(c, o, "connectivity", 4, 8, true, &conn)))
        return rc;
    def->blobs = (uint16_t)k;
    def->min_area = (uint32_t)area;
    def->connectivity = (uint8_t)conn;

    /* Tracking follows blobs: without a K there is nothing to follow, and
     * guessing one would hide the choice from the file. coast_frames is
     * accepted without track, like min_area without blobs. */
    long long coast = TRK_OBJECTS_COAST_DEFAULT;
    if ((rc = opt_int(c, o, "coast_frames", 0, TRK_OBJECTS_COAST_MAX, false, &coast))) return rc;
    def->coast_frames = (uint16_t)coast;
    v = json_object_get(o, "track");
    if (v) {
        push_key(c, "track");
        if (!json_is_boolean(v))
            rc = fail(c, 0, "%s must be true or false, not %s", path_text(c, p, sizeof p),
                      type_name(v));
        else if (json_is_true(v) && !def->blobs)
            rc = fail(c, 0, "%s: true needs \"blobs\" >= 1 (the most instances it follows), not %u",
                      path_text(c, p, sizeof p), def->blobs);
        else
            def->track = json_is_true(v);
        pop(c);
        if (rc) return rc;
    }

    v = json_object_get(o, "color");
    if (!v) {
        trk_object_display_rgb(def, color);
        return 0;
    }
    push_key(c, "color");
    rc = want_string(c, v, "a string \"#rrggbb\"", p, sizeof p);
    if (!rc && parse_color(json_string_value(v), json_string_length(v), color))
        rc = fail_quoted(c, v, "is not of the form \"#rrggbb\"", p, sizeof p);
    pop(c);
    return rc;
}

/* Adds control name = value to out's camera list. */
static int add_camera(struct vctx *c, struct trk_objects *out, const char *name, long long value)
{
    char p[128];
    if (out->n_camera >= TRK_CAMERA_MAX_CONTROLS)
        return fail(c, 1, "%s: too many camera controls (at most %d)", path_text(c, p, sizeof p),
                    TRK_CAMERA_MAX_CONTROLS);
    if (value < INT32_MIN || value > INT32_MAX)
        return fail(c, 0, "%s = %lld is out of range for a camera control",
                    path_text(c, p, sizeof p), value);
    struct trk_camera_control *cc = &out->camera[out->n_camera++];
    snprintf(cc->name, sizeof cc->name, "%s", name);
    cc->value = (long)value;
    return 0;
}

/* "camera": {"exposure_auto": false, "exposure": 100, "gain": 10,
 * "white_balance_auto": false, "white_balance_temperature": 4500,
 * "controls": {"v4l2_name": value, ...}}: automatic modes first so that
 * drivers accept the manual values after them. */
static int parse_camera(struct vctx *c, const json_t *cam, struct trk_objects *out)
{
    static const struct {
        const char *key, *control;
        bool is_bool;
    } keys[] = {
        { "exposure_auto", "auto_exposure", true },
        { "white_balance_auto", "white_balance_automatic", true },
        { "exposure", "exposure_time_absolute", false },
        { "gain", "gain", false },
        { "white_balance_temperature", "white_balance_temperature", false },
    };
    char p[128];
    int rc = 0;
    push_key(c, "camera");
    if (!json_is_object(cam)) {
        rc = fail(c, 0, "camera must be an object, not %s", type_name(cam));
        goto out;
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)cam, key, v)
    {
        size_t i;
        for (i = 0; i < sizeof keys / sizeof keys[0]; i++)
            if (!strcmp(key, keys[i].key)) break;
        if (i == sizeof keys / sizeof keys[0] && strcmp(key, "controls") != 0) {
            char q[72];
            user_text(c, key, strlen(key), q, sizeof q);
            push_user_key(c, key);
            rc = fail(c, 1,
                      "camera: unknown key %s (expected exposure_auto, exposure, gain, "
                      "white_balance_auto, white_balance_temperature or controls)",
                      q);
            pop(c);
            goto out;
        }
    }
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        v = json_object_get(cam, keys[i].key);
        if (!v) continue;
        push_key(c, keys[i].key);
        if (keys[i].is_bool && !json_is_boolean(v))
            rc = fail(c, 0, "%s must be true or false, not %s", path_text(c, p, sizeof p),
                      type_name(v));
        else if (!keys[i].is_bool && !json_is_integer(v))
            rc = fail(c, 0, "%s must be an integer, not %s", path_text(c, p, sizeof p),
                      type_name(v));
        /* V4L2's auto_exposure menu: 1 = manual, 3 = aperture priority
         * (the automatic mode UVC webcams offer). */
        else if (keys[i].is_bool)
            rc = add_camera(c, out, keys[i].control,
                            !strcmp(keys[i].key, "exposure_auto") ? (json_is_true(v) ? 3 : 1)
                                                                  : json_is_true(v));
        else
            rc = add_camera(c, out, keys[i].control, json_integer_value(v));
        pop(c);
        if (rc) goto out;
    }
    const json_t *ctl = json_object_get(cam, "controls");
    if (ctl) {
        push_key(c, "controls");
        if (!json_is_object(ctl)) {
            rc = fail(c, 0, "camera.controls must be an object, not %s", type_name(ctl));
            pop(c);
            goto out;
        }
        json_object_foreach((json_t *)ctl, key, v)
        {
            push_user_key(c, key);
            if (!*key || strlen(key) >= sizeof out->camera[0].name)
                rc = fail(c, 1, "%s: a control name must have 1..63 bytes",
                          path_text(c, p, sizeof p));
            else if (!json_is_integer(v) && !json_is_boolean(v))
                rc = fail(c, 0, "%s must be an integer or true/false, not %s",
                          path_text(c, p, sizeof p), type_name(v));
            else
                rc = add_camera(c, out, key,
                                json_is_integer(v) ? json_integer_value(v) : json_is_true(v));
            pop(c);
            if (rc) break;
        }
        pop(c);
    }
out:
    pop(c);
    return rc;
}

/* "prefilter": {"gaussian": SIGMA}, SIGMA a number in 0..4 (0 = off). */
static int parse_prefilter(struct vctx *c, const json_t *pf, struct trk_objects *out)
{
    char p[128];
    int rc = 0;
    push_key(c, "prefilter");
    if (!json_is_object(pf)) {
        rc = fail(c, 0, "prefilter must be an object, not %s", type_name(pf));
        goto out;
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)pf, key, v)
    {
        if (strcmp(key, "gaussian") != 0) {
            char q[72];
            user_text(c, key, strlen(key), q, sizeof q);
            push_user_key(c, key);
            rc = fail(c, 1, "prefilter: unknown key %s (expected gaussian)", q);
            pop(c);
            goto out;
        }
    }
    v = json_object_get(pf, "gaussian");
    if (!v) {
        rc = fail(c, 0, "prefilter: missing key \"gaussian\"");
        goto out;
    }
    push_key(c, "gaussian");
    if (!json_is_number(v)) {
        rc = fail(c, 0, "%s must be a number, not %s", path_text(c, p, sizeof p), type_name(v));
    } else {
        const double sigma = json_number_value(v);
        if (!(sigma >= 0 && sigma <= TRK_PREFILTER_MAX_SIGMA))
            rc = fail(c, 0, "%s = %g is out of range 0..%g (pixels; 0 = off)",
                      path_text(c, p, sizeof p), sigma, TRK_PREFILTER_MAX_SIGMA);
        else
            out->prefilter_sigma = sigma;
    }
    pop(c);
out:
    pop(c);
    return rc;
}

/* A JSON number at the current path within +-bound into *v. */
static int want_number(struct vctx *c, const json_t *v, double bound, double *out)
{
    char p[128];
    if (!json_is_number(v))
        return fail(c, 0, "%s must be a number, not %s", path_text(c, p, sizeof p), type_name(v));
    const double x = json_number_value(v);
    if (!(isfinite(x) && fabs(x) <= bound))
        return fail(c, 0, "%s = %g is out of range -%g..%g", path_text(c, p, sizeof p), x, bound,
                    bound);
    *out = x;
    return 0;
}

/* An array at the current path of lo..hi numbers within +-bound into v[]. */
static int number_array(struct vctx *c, const json_t *a, size_t lo, size_t hi, double bound,
                        double *v, char *what_n)
{
    char p[128];
    if (!json_is_array(a))
        return fail(c, 0, "%s must be an array of %s numbers, not %s", path_text(c, p, sizeof p),
                    what_n, type_name(a));
    if (json_array_size(a) < lo || json_array_size(a) > hi)
        return fail(c, 0, "%s must have %s numbers, not %zu", path_text(c, p, sizeof p), what_n,
                    json_array_size(a));
    for (size_t i = 0; i < json_array_size(a); i++) {
        push_index(c, (int)i);
        int rc = want_number(c, json_array_get(a, i), bound, &v[i]);
        pop(c);
        if (rc) return rc;
    }
    return 0;
}

/* Fails with "<path>: unknown key K (expected ...)" for the first key of o
 * that is not in keys[0..n). */
static int only_keys(struct vctx *c, const json_t *o, const char *const *keys, size_t n,
                     const char *expected)
{
    char p[128];
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        size_t i;
        for (i = 0; i < n; i++)
            if (!strcmp(key, keys[i])) break;
        if (i < n) continue;
        char q[72];
        user_text(c, key, strlen(key), q, sizeof q);
        path_text(c, p, sizeof p);
        push_user_key(c, key);
        int rc = fail(c, 1, "%s: unknown key %s (expected %s)", p, q, expected);
        pop(c);
        return rc;
    }
    return 0;
}

/* "calibration": {"unit": U, "points": [[px, py, wx, wy], ...],
 * "camera_matrix": {"fx", "fy", "cx", "cy"}, "distortion": [k1, k2, p1,
 * p2(, k3)]}: values first (each at its place), then the geometry
 * (trk_calib_solve), reported at the point or the points array. */
static int parse_calibration(struct vctx *c, const json_t *cal, struct trk_objects *out)
{
    static const char *const keys[] = { "unit", "points", "camera_matrix", "distortion" };
    static const char *const mkeys[] = { "fx", "fy", "cx", "cy" };
    struct trk_calib *k = &out->calib;
    char p[128], m[200];
    int rc = 0;
    push_key(c, "calibration");
    if (!json_is_object(cal)) {
        rc = fail(c, 0, "calibration must be an object, not %s", type_name(cal));
        goto out;
    }
    if ((rc = only_keys(c, cal, keys, 4, "unit, points, camera_matrix or distortion"))) goto out;
    for (int i = 0; i < 2; i++)
        if (!json_object_get(cal, keys[i])) {
            rc = fail(c, 0, "calibration: missing key \"%s\"", keys[i]);
            goto out;
        }
    const json_t *v = json_object_get(cal, "unit");
    push_key(c, "unit");
    rc = want_string(c, v, "a string", p, sizeof p);
    if (!rc && check_text("calibration.unit", TRK_CALIB_UNIT_MAX, json_string_value(v),
                          json_string_length(v), m, sizeof m))
        rc = fail(c, 0, "%s", m);
    pop(c);
    if (rc) goto out;
    memcpy(k->unit, json_string_value(v), json_string_length(v));

    const json_t *pts = json_object_get(cal, "points");
    push_key(c, "points");
    if (!json_is_array(pts)) {
        rc = fail(c, 0, "calibration.points must be an array of [px, py, wx, wy], not %s",
                  type_name(pts));
    } else if (json_array_size(pts) < TRK_CALIB_MIN_POINTS ||
               json_array_size(pts) > TRK_CALIB_MAX_POINTS) {
        rc = fail(c, 0,
                  "calibration.points has %zu point pairs: a homography needs %d..%d (each "
                  "[px, py, wx, wy])",
                  json_array_size(pts), TRK_CALIB_MIN_POINTS, TRK_CALIB_MAX_POINTS);
    }
    for (size_t i = 0; !rc && i < json_array_size(pts); i++) {
        push_index(c, (int)i);
        double q[4];
        rc = number_array(c, json_array_get(pts, i), 4, 4, TRK_CALIB_WORLD_MAX, q, "4");
        /* Pixels have a tighter bound than world values. */
        for (int j = 0; !rc && j < 2; j++) {
            if (fabs(q[j]) > TRK_CALIB_PIXEL_MAX) {
                push_index(c, j);
                rc =
                    fail(c, 0, "%s = %g is out of range -%g..%g (pixels)",
                         path_text(c, p, sizeof p), q[j], TRK_CALIB_PIXEL_MAX, TRK_CALIB_PIXEL_MAX);
                pop(c);
            }
        }
        if (!rc) memcpy(k->pt[i], q, sizeof q);
        pop(c);
    }
    pop(c);
    if (rc) goto out;
    k->n = (int)json_array_size(pts);

    const json_t *cm = json_object_get(cal, "camera_matrix");
    if (cm) {
        push_key(c, "camera_matrix");
        if (!json_is_object(cm))
            rc = fail(c, 0, "calibration.camera_matrix must be an object {fx, fy, cx, cy}, not %s",
                      type_name(cm));
        else
            rc = only_keys(c, cm, mkeys, 4, "fx, fy, cx or cy");
        double mv[4];
        for (int i = 0; !rc && i < 4; i++) {
            const json_t *e = json_object_get(cm, mkeys[i]);
            if (!e) {
                rc = fail(c, 0, "calibration.camera_matrix: missing key \"%s\"", mkeys[i]);
                break;
            }
            push_key(c, mkeys[i]);
            rc = want_number(c, e, TRK_CALIB_LENS_MAX, &mv[i]);
            if (!rc && i < 2 && !(mv[i] > 0))
                rc = fail(c, 0, "%s must be > 0 (focal length in pixels), not %g",
                          path_text(c, p, sizeof p), mv[i]);
            pop(c);
        }
        pop(c);
        if (rc) goto out;
        k->lens = true;
        k->fx = mv[0], k->fy = mv[1], k->cx = mv[2], k->cy = mv[3];
    }
    const json_t *dist = json_object_get(cal, "distortion");
    if (dist) {
        push_key(c, "distortion");
        if (!cm)
            rc = fail(c, 0, "calibration.distortion needs a camera_matrix (fx, fy, cx, cy)");
        else
            rc = number_array(c, dist, 4, 5, TRK_CALIB_LENS_MAX, k->dist,
                              "4 or 5 (k1, k2, p1, p2[, k3])");
        pop(c);
        if (rc) goto out;
        k->n_dist = (int)json_array_size(dist);
    }

    struct trk_calib_fault f;
    if (trk_calib_solve(k, &f)) {
        push_key(c, "points");
        if (f.point >= 0) push_index(c, f.point);
        rc = fail(c, 0, "calibration%s%s", strncmp(f.msg, "points", 6) ? ": " : ".", f.msg);
        if (f.point >= 0) pop(c);
        pop(c);
        goto out;
    }
    k->on = true;
out:
    pop(c);
    return rc;
}

int trk_objects_frame_items(const struct trk_object_def *d)
{
    return 1 + (int)d->blobs * (d->track ? 2 : 1);
}

int trk_objects_check_limits(const struct trk_object_def *defs, int n, int *at, char *msg,
                             size_t msg_len)
{
    int items = 0, labelled = 0;
    for (int i = 0; i < n; i++) {
        items += trk_objects_frame_items(&defs[i]);
        labelled += defs[i].blobs > 0;
        const char *key = defs[i].blobs ? ".blobs" : "";
        if (at) *at = i;
        if (labelled > TRK_BLOB_OBJECTS_MAX) {
            snprintf(msg, msg_len,
                     "objects[%d]%s: %d objects with blobs (at most %d: each is a labelling pass "
                     "over every frame)",
                     i, key, labelled, TRK_BLOB_OBJECTS_MAX);
            return TRK_EINVAL;
        }
        if (items > TRK_FRAME_ITEMS_MAX) {
            snprintf(msg, msg_len,
                     "objects[%d]%s: each frame would carry up to %d results (1 per object, + "
                     "blobs, + blobs again when tracked; at most %d)",
                     i, key, items, TRK_FRAME_ITEMS_MAX);
            return TRK_EINVAL;
        }
    }
    return 0;
}

/* The whole document {"objects": [...]} into out (zeroed first). */
static int parse_root(struct vctx *c, const json_t *root, struct trk_objects *out)
{
    char p[128];
    int rc;
    memset(out, 0, sizeof *out);
    if (!json_is_object(root))
        return fail(c, 0, "top level must be an object, not %s", type_name(root));
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)root, key, v)
    {
        if (strcmp(key, "objects") != 0 && strcmp(key, "camera") != 0 &&
            strcmp(key, "prefilter") != 0 && strcmp(key, "calibration") != 0) {
            char q[72];
            user_text(c, key, strlen(key), q, sizeof q);
            push_user_key(c, key);
            rc = fail(c, 1,
                      "unknown key %s at top level (expected \"objects\", \"camera\", "
                      "\"prefilter\" or \"calibration\")",
                      q);
            pop(c);
            return rc;
        }
    }
    const json_t *arr = json_object_get(root, "objects");
    if (!arr) return fail(c, 0, "missing key \"objects\"");
    const json_t *cam = json_object_get(root, "camera");
    if (cam && (rc = parse_camera(c, cam, out))) return rc;
    const json_t *pf = json_object_get(root, "prefilter");
    if (pf && (rc = parse_prefilter(c, pf, out))) return rc;
    const json_t *cal = json_object_get(root, "calibration");
    if (cal && (rc = parse_calibration(c, cal, out))) return rc;
    push_key(c, "objects");
    if (!json_is_array(arr)) {
        rc = fail(c, 0, "objects must be an array, not %s", type_name(arr));
        pop(c);
        return rc;
    }
    size_t n = json_array_size(arr);
    if (n > TRK_MAX_OBJECTS) {
        push_index(c, TRK_MAX_OBJECTS);
        rc = fail(c, 0, "too many objects: %zu (at most %d)", n, TRK_MAX_OBJECTS);
        c->err->kind = TRK_CONFIG_TOO_MANY;
        pop(c);
        pop(c);
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        push_index(c, (int)i);
        rc = parse_object(c, json_array_get(arr, i), &out->def[i], out->color[i]);
        if (rc) {
            pop(c);
            pop(c);
            return rc;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(out->def[j].name, out->def[i].name) == 0) {
                char q[TRK_NAME_MAX + 16];
                snprintf(q, sizeof q, c->quiet ? "(not shown)" : "\"%s\"", out->def[i].name);
                push_key(c, "name");
                rc = fail(c, 0, "%s %s is already used by objects[%zu]", path_text(c, p, sizeof p),
                          q, j);
                c->err->kind = TRK_CONFIG_DUPLICATE;
                pop(c);
                pop(c);
                pop(c);
                return rc;
            }
        }
        pop(c);
    }
    int at;
    char m[256];
    if (trk_objects_check_limits(out->def, (int)n, &at, m, sizeof m)) {
        /* At the blobs value that goes over, or the object without one. */
        push_index(c, at);
        if (out->def[at].blobs) push_key(c, "blobs");
        rc = fail(c, 0, "%s", m);
        c->err->kind = TRK_CONFIG_TOO_MANY;
        if (out->def[at].blobs) pop(c);
        pop(c);
        pop(c);
        return rc;
    }
    pop(c);
    out->n = (int)n;
    return 0;
}

/* --------------------------------------------------------------- loading */

/* jansson reports a column in characters; messages use bytes, so derive the
 * column from its byte position and the start of its line. */
static int byte_column(const char *text, size_t len, const json_error_t *je)
{
    size_t line_start = 0;
    int line = 1;
    for (size_t i = 0; i < len && line < je->line; i++) {
        if (text[i] == '\n') {
            line++;
            line_start = i + 1;
        }
    }
    if (line != je->line || je->position < 0 || (size_t)je->position < line_start)
        return je->column > 0 ? je->column : 1;
    long col = (long)((size_t)je->position - line_start);
    return col > 0 ? (int)col : 1;
}

/* jansson's message without what it quotes from the text when quiet: its
 * "near '...'", and the bytes of "invalid Unicode escape '\\u12'" or "control
 * character 0x01". Its own quotes ("'[' or '{' expected") stay. */
static void syntax_reason(const char *text, bool quiet, char *out, size_t n)
{
    snprintf(out, n, "%s", text);
    if (!quiet) return;
    static const char *const cuts[] = { " near ", " '\\", " 0x" };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        char *p = strstr(out, cuts[i]);
        if (p) *p = 0;
    }
    size_t k = strlen(out);
    while (k && out[k - 1] == ' ')
        out[--k] = 0;
}

static int load_text(const char *text, size_t len, const char *name_for_errors, bool quiet,
                     struct trk_objects *out, struct trk_config_error *err)
{
    struct trk_config_error local;
    if (!err) err = &local;
    err_init(err, name_for_errors);
    if (!out || (!text && len)) {
        err_at(err, 0, 0, "invalid arguments");
        return TRK_EINVAL;
    }
    if (!text) text = "";
    if (len > TRK_OBJECTS_MAX_BYTES) {
        err_at(err, 1, 1, "too large: more than %d bytes", TRK_OBJECTS_MAX_BYTES);
        return TRK_EINVAL;
    }
    /* No JSON text holds a raw NUL byte, but jansson 2.14 silently drops one
     * that follows a number ("[5\0]" loads as [5]); reject them all here so
     * the text jansson accepts is exactly what the position index scans. A
     * UTF-16 file also stops here, at its first NUL. */
    const char *nul = memchr(text, 0, len);
    if (nul) {
        int line = 1, col = 1;
        for (const char *p = text; p < nul; p++) {
            if (*p == '\n') {
                line++;
                col = 1;
            } else {
                col++;
            }
        }
        err_at(err, line, col, "syntax error: NUL byte (the text must be UTF-8 JSON)");
        return TRK_EINVAL;
    }
    /* jansson does not accept a byte order mark; some editors write one. */
    size_t bom = (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) ? 3 : 0;
    json_error_t je;
    json_t *root = json_loadb(text + bom, len - bom, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        int col = byte_column(text + bom, len - bom, &je);
        if (je.line <= 1) col += (int)bom;
        char why[sizeof je.text];
        syntax_reason(je.text, quiet, why, sizeof why);
        err_at(err, je.line > 0 ? je.line : 1, col, "syntax error: %s", why);
        return TRK_EINVAL;
    }
    struct trk_objects *tmp = malloc(sizeof *tmp);
    if (!tmp) {
        json_decref(root);
        err_at(err, 1, 1, "out of memory");
        return TRK_ENOMEM;
    }
    struct vctx c = { .err = err, .text = text, .len = len, .quiet = quiet };
    int rc = parse_root(&c, root, tmp);
    if (rc == 0) memcpy(out, tmp, sizeof *out);
    trk_posindex_destroy(&c.ix);
    free(tmp);
    json_decref(root);
    return rc;
}

int trk_objects_load_string(const char *text, size_t len, const char *name_for_errors,
                            struct trk_objects *out, struct trk_config_error *err)
{
    return load_text(text, len, name_for_errors, false, out, err);
}

/* Reads fd to its end into *buf (malloc'd; *n bytes), stopping one byte past
 * TRK_OBJECTS_MAX_BYTES so an oversized file is noticed without trusting
 * st_size (pipes, /proc files have none). 0 or a negative code, err set. */
static int read_all(int fd, char **buf, size_t *n, struct trk_config_error *err)
{
    size_t cap = 4096;
    char *b = malloc(cap);
    *n = 0;
    while (b) {
        if (*n == cap) {
            if (cap > TRK_OBJECTS_MAX_BYTES) break;
            size_t ncap = cap * 2 > TRK_OBJECTS_MAX_BYTES + 1 ? TRK_OBJECTS_MAX_BYTES + 1 : cap * 2;
            char *nb = realloc(b, ncap);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, b + *n, cap - *n);
        if (r < 0) {
            if (errno == EINTR) continue;
            char eb[128];
            int rc = -errno;
            err_at(err, 1, 1, "cannot read file: %s", errno_text(-rc, eb, sizeof eb));
            free(b);
            return rc;
        }
        if (r == 0) break;
        *n += (size_t)r;
    }
    if (!b) {
        err_at(err, 1, 1, "out of memory");
        return TRK_ENOMEM;
    }
    *buf = b;
    return 0;
}

int trk_objects_load_file(const char *path, struct trk_objects *out, struct trk_config_error *err)
{
    struct trk_config_error local;
    if (!err) err = &local;
    err_init(err, path);
    if (!path || !out) {
        err_at(err, 0, 0, "invalid arguments");
        return TRK_EINVAL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        char eb[128];
        err_at(err, 1, 1, "cannot open file: %s", errno_text(e, eb, sizeof eb));
        return -e;
    }
    char *buf;
    size_t n;
    int rc = read_all(fd, &buf, &n, err);
    close(fd);
    if (rc) return rc;
    rc = load_text(buf, n, path, false, out, err); /* too large: reported there */
    free(buf);
    return rc;
}

int trk_objects_from_json(const struct json_t *root, const char *name_for_errors,
                          struct trk_objects *out, struct trk_config_error *err)
{
    struct trk_config_error local;
    if (!err) err = &local;
    err_init(err, name_for_errors);
    if (!root || !out) {
        err_at(err, 0, 0, "invalid arguments");
        return TRK_EINVAL;
    }
    struct trk_objects *tmp = malloc(sizeof *tmp);
    if (!tmp) {
        err_at(err, 0, 0, "out of memory");
        return TRK_ENOMEM;
    }
    struct vctx c = { .err = err };
    int rc = parse_root(&c, root, tmp);
    if (rc == 0) memcpy(out, tmp, sizeof *out);
    free(tmp);
    return rc;
}

int trk_objects_parse_object(const struct json_t *obj, struct trk_object_def *def, uint8_t color[3],
                             char *msg, size_t msg_len)
{
    struct trk_config_error err;
    err_init(&err, NULL);
    if (!obj || !def || !color) {
        if (msg && msg_len) snprintf(msg, msg_len, "invalid arguments");
        return TRK_EINVAL;
    }
    struct trk_object_def d;
    uint8_t rgb[3];
    struct vctx c = { .err = &err };
    int rc = parse_object(&c, obj, &d, rgb);
    if (rc) {
        if (msg && msg_len) snprintf(msg, msg_len, "%s", err.msg);
        return rc;
    }
    *def = d;
    memcpy(color, rgb, 3);
    return 0;
}

int trk_objects_validate(const struct trk_objects *objs, char *msg, size_t msg_len)
{
    char m[200];
    char dummy[1];
    if (!msg || !msg_len) {
        msg = dummy;
        msg_len = sizeof dummy;
    }
    if (!objs) {
        snprintf(msg, msg_len, "invalid arguments");
        return TRK_EINVAL;
    }
    if (objs->n < 0 || objs->n > TRK_MAX_OBJECTS) {
        snprintf(msg, msg_len, "object count %d is out of range 0..%d", objs->n, TRK_MAX_OBJECTS);
        return TRK_EINVAL;
    }
    if (!(objs->prefilter_sigma >= 0 && objs->prefilter_sigma <= TRK_PREFILTER_MAX_SIGMA)) {
        snprintf(msg, msg_len, "prefilter.gaussian %g is out of range 0..%g", objs->prefilter_sigma,
                 TRK_PREFILTER_MAX_SIGMA);
        return TRK_EINVAL;
    }
    if (objs->calib.on) {
        /* The loader's rules, on a copy: the derived fields are recomputed. */
        struct trk_calib k = objs->calib;
        struct trk_calib_fault f;
        const char *nul = memchr(k.unit, 0, sizeof k.unit);
        if (!nul || check_text("calibration.unit", TRK_CALIB_UNIT_MAX, k.unit,
                               (size_t)(nul - k.unit), m, sizeof m)) {
            snprintf(msg, msg_len, "%s", nul ? m : "calibration.unit is not NUL-terminated");
            return TRK_EINVAL;
        }
        if (k.n_dist != 0 && k.n_dist != 4 && k.n_dist != 5) {
            snprintf(msg, msg_len, "calibration.distortion has %d values (4 or 5)", k.n_dist);
            return TRK_EINVAL;
        }
        if (trk_calib_solve(&k, &f)) {
            snprintf(msg, msg_len, "calibration%s%s", strncmp(f.msg, "points", 6) ? ": " : ".",
                     f.msg);
            return TRK_EINVAL;
        }
    }
    for (int i = 0; i < objs->n; i++) {
        const struct trk_object_def *d = &objs->def[i];
        const char *nul = memchr(d->name, 0, sizeof d->name);
        if (!nul) {
            snprintf(msg, msg_len, "objects[%d].name is not NUL-terminated", i);
            return TRK_EINVAL;
        }
        if (check_name(d->name, (size_t)(nul - d->name), m, sizeof m)) {
            snprintf(msg, msg_len, "objects[%d].%s", i, m);
            return TRK_EINVAL;
        }
        if ((unsigned)d->space > TRK_SPACE_YCBCR) {
            snprintf(msg, msg_len, "objects[%d].space %d is not one of rgb, hsv, ycbcr", i,
                     (int)d->space);
            return TRK_EINVAL;
        }
        long long lo[3], hi[3];
        for (int c = 0; c < 3; c++) {
            lo[c] = d->lo[c];
            hi[c] = d->hi[c];
        }
        if (check_box(d->space, lo, hi, m, sizeof m) >= 0) {
            snprintf(msg, msg_len, "objects[%d].%s", i, m);
            return TRK_EINVAL;
        }
        /* The file format stores min_mass as a JSON integer (int64). */
        if (d->min_mass < 1 || d->min_mass > (uint64_t)INT64_MAX) {
            snprintf(msg, msg_len, "objects[%d].min_mass %llu is out of range 1..%lld", i,
                     (unsigned long long)d->min_mass, (long long)INT64_MAX);
            return TRK_EINVAL;
        }
        /* The loader's ranges; it stores absent keys as their defaults
         * (1 and 8), never as the 0 a backend would also take. */
        if (d->blobs > TRK_MAX_BLOBS) {
            snprintf(msg, msg_len, "objects[%d].blobs %u is out of range 0..%d", i, d->blobs,
                     TRK_MAX_BLOBS);
            return TRK_EINVAL;
        }
        if (d->min_area < 1 || d->min_area > TRK_OBJECTS_MIN_AREA_MAX) {
            snprintf(msg, msg_len, "objects[%d].min_area %u is out of range 1..%d", i,
                     (unsigned)d->min_area, TRK_OBJECTS_MIN_AREA_MAX);
            return TRK_EINVAL;
        }
        if (d->connectivity != 4 && d->connectivity != 8) {
            snprintf(msg, msg_len, "objects[%d].connectivity %u is not 4 or 8", i, d->connectivity);
            return TRK_EINVAL;
        }
        if (d->track && !d->blobs) {
            snprintf(msg, msg_len, "objects[%d].track needs blobs >= 1", i);
            return TRK_EINVAL;
        }
        if (d->coast_frames > TRK_OBJECTS_COAST_MAX) {
            snprintf(msg, msg_len, "objects[%d].coast_frames %u is out of range 0..%d", i,
                     d->coast_frames, TRK_OBJECTS_COAST_MAX);
            return TRK_EINVAL;
        }
        for (int j = 0; j < i; j++) {
            if (strcmp(objs->def[j].name, d->name) == 0) {
                snprintf(msg, msg_len, "objects[%d].name \"%s\" is already used by objects[%d]", i,
                         d->name, j);
                return TRK_EINVAL;
            }
        }
    }
    return trk_objects_check_limits(objs->def, objs->n, NULL, msg, msg_len);
}

int trk_objects_find(const struct trk_objects *objs, const char *name)
{
    if (!objs || !name) return -1;
    if (strlen(name) >= TRK_NAME_MAX) return -1;
    for (int i = 0; i < objs->n && i < TRK_MAX_OBJECTS; i++)
        if (strncmp(objs->def[i].name, name, TRK_NAME_MAX) == 0) return i;
    return -1;
}

bool trk_camera_control_is_auto(const char *name)
{
    static const char *const autos[] = { "auto_exposure", "white_balance_automatic",
                                         "gain_automatic" };
    for (size_t i = 0; i < sizeof autos / sizeof autos[0]; i++)
        if (!strcmp(name, autos[i])) return true;
    return false;
}

int trk_camera_controls_remove(struct trk_camera_control *list, int *n, const char *name)
{
    int kept = 0, gone = 0;
    for (int i = 0; i < *n; i++)
        if (strcmp(list[i].name, name) != 0)
            list[kept++] = list[i];
        else
            gone++;
    *n = kept;
    return gone;
}

int trk_camera_controls_set(struct trk_camera_control *list, int *n, const char *name, long value)
{
    if (!*name || strlen(name) >= sizeof list[0].name) return TRK_EINVAL;
    for (int i = 0; i < *n; i++)
        if (!strcmp(list[i].name, name)) {
            list[i].value = value;
            int rest = *n - i - 1;
            trk_camera_controls_remove(list + i + 1, &rest, name);
            *n = i + 1 + rest;
            return 0;
        }
    if (*n >= TRK_CAMERA_MAX_CONTROLS) return TRK_ENOMEM;
    int at = *n;
    if (trk_camera_control_is_auto(name))
        for (at = 0; at < *n && trk_camera_control_is_auto(list[at].name); at++)
            ;
    memmove(list + at + 1, list + at, (size_t)(*n - at) * sizeof list[0]);
    snprintf(list[at].name, sizeof list[at].name, "%s", name);
    list[at].value = value;
    (*n)++;
    return 0;
}

size_t trk_objects_escape_name(const char *name, const char *reserved, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    if (!cap) return 0;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        bool esc = *p == '%' || is_ctrl(*p) || strchr(reserved, *p);
        if (o + (esc ? 3 : 1) >= cap) break;
        if (esc) {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        } else {
            out[o++] = (char)*p;
        }
    }
    out[o] = 0;
    return o;
}

/* --------------------------------------------------------------- writing */

/* v with the fewest digits that read back as the same double. */
static void sb_double(struct trk_buf *b, double v)
{
    char num[32];
    snprintf(num, sizeof num, "%.15g", v);
    if (strtod(num, NULL) != v) snprintf(num, sizeof num, "%.17g", v);
    trk_buf_printf(b, "%s", num);
}

/* The calibration section as the file has it: the values given, one point
 * pair per line (the derived fields are recomputed on load). */
static void sb_calibration(struct trk_buf *b, const struct trk_calib *k)
{
    trk_buf_printf(b, ",\n  \"calibration\": {\"unit\": ");
    trk_buf_json_str(b, k->unit, sizeof k->unit);
    trk_buf_printf(b, ", \"points\": [\n");
    for (int i = 0; i < k->n; i++) {
        trk_buf_printf(b, "    [");
        for (int j = 0; j < 4; j++) {
            if (j) trk_buf_printf(b, ", ");
            sb_double(b, k->pt[i][j]);
        }
        trk_buf_printf(b, "]%s\n", i + 1 < k->n ? "," : "");
    }
    trk_buf_printf(b, "  ]");
    if (k->lens) {
        const double m[4] = { k->fx, k->fy, k->cx, k->cy };
        static const char *const names[4] = { "fx", "fy", "cx", "cy" };
        trk_buf_printf(b, ",\n  \"camera_matrix\": {");
        for (int j = 0; j < 4; j++) {
            trk_buf_printf(b, "%s\"%s\": ", j ? ", " : "", names[j]);
            sb_double(b, m[j]);
        }
        trk_buf_printf(b, "}");
    }
    if (k->n_dist) {
        trk_buf_printf(b, ",\n  \"distortion\": [");
        for (int j = 0; j < k->n_dist; j++) {
            if (j) trk_buf_printf(b, ", ");
            sb_double(b, k->dist[j]);
        }
        trk_buf_printf(b, "]");
    }
    trk_buf_printf(b, "}");
}

char *trk_objects_to_json(const struct trk_objects *objs)
{
    if (trk_objects_validate(objs, NULL, 0)) return NULL;
    struct trk_buf b = { 0 };
    if (objs->n == 0) {
        trk_buf_printf(&b, "{\n  \"objects\": []");
    } else {
        trk_buf_printf(&b, "{\n  \"objects\": [\n");
        for (int i = 0; i < objs->n; i++) {
            const struct trk_object_def *d = &objs->def[i];
            uint8_t def_rgb[3];
            trk_object_display_rgb(d, def_rgb);
            trk_buf_printf(&b, "    {\"name\": ");
            trk_buf_json_str(&b, d->name, sizeof d->name);
            trk_buf_printf(&b,
                           ", \"space\": \"%s\", \"lo\": [%u, %u, %u], \"hi\": [%u, %u, %u], "
                           "\"min_mass\": %llu",
                           space_names[d->space], d->lo[0], d->lo[1], d->lo[2], d->hi[0], d->hi[1],
                           d->hi[2], (unsigned long long)d->min_mass);
            /* Only when not the default, so files without blobs round-trip
             * byte for byte. */
            if (d->blobs) trk_buf_printf(&b, ", \"blobs\": %u", d->blobs);
            if (d->min_area != 1) trk_buf_printf(&b, ", \"min_area\": %u", (unsigned)d->min_area);
            if (d->connectivity != 8) trk_buf_printf(&b, ", \"connectivity\": %u", d->connectivity);
            if (d->track) trk_buf_printf(&b, ", \"track\": true");
            if (d->coast_frames != TRK_OBJECTS_COAST_DEFAULT)
                trk_buf_printf(&b, ", \"coast_frames\": %u", d->coast_frames);
            if (memcmp(def_rgb, objs->color[i], 3) != 0) {
                char hex[TRK_COLOR_HEX_SIZE];
                trk_color_hex(objs->color[i], hex);
                trk_buf_printf(&b, ", \"color\": \"%s\"", hex);
            }
            trk_buf_printf(&b, "}%s\n", i + 1 < objs->n ? "," : "");
        }
        trk_buf_printf(&b, "  ]");
    }
    /* The camera settings as their V4L2 controls (already in setting order),
     * so a save keeps them. */
    if (objs->n_camera > 0) {
        trk_buf_printf(&b, ",\n  \"camera\": {\"controls\": {");
        for (int i = 0; i < objs->n_camera; i++) {
            trk_buf_printf(&b, "%s", i ? ", " : "");
            trk_buf_json_str(&b, objs->camera[i].name, sizeof objs->camera[i].name);
            trk_buf_printf(&b, ": %ld", objs->camera[i].value);
        }
        trk_buf_printf(&b, "}}");
    }
    /* The pre-filter when on. */
    if (objs->prefilter_sigma > 0) {
        trk_buf_printf(&b, ",\n  \"prefilter\": {\"gaussian\": ");
        sb_double(&b, objs->prefilter_sigma);
        trk_buf_printf(&b, "}");
    }
    if (objs->calib.on) sb_calibration(&b, &objs->calib);
    trk_buf_printf(&b, "\n}\n");
    if (b.failed) {
        trk_buf_free(&b);
        return NULL;
    }
    return b.data;
}

struct json_t *trk_objects_object_value(const struct trk_objects *objs, int i, bool every_key)
{
    if (!objs || i < 0 || i >= objs->n) return NULL;
    const struct trk_object_def *d = &objs->def[i];
    json_t *o = json_pack(
        "{s:s, s:s, s:[i,i,i], s:[i,i,i], s:I, s:i, s:I, s:i, s:b, s:i}", "name", d->name, "space",
        space_names[d->space], "lo", (int)d->lo[0], (int)d->lo[1], (int)d->lo[2], "hi",
        (int)d->hi[0], (int)d->hi[1], (int)d->hi[2], "min_mass", (json_int_t)d->min_mass, "blobs",
        (int)d->blobs, "min_area", (json_int_t)d->min_area, "connectivity", (int)d->connectivity,
        "track", (int)d->track, "coast_frames", (int)d->coast_frames);
    uint8_t def_rgb[3];
    trk_object_display_rgb(d, def_rgb);
    if (o && (every_key || memcmp(def_rgb, objs->color[i], 3) != 0)) {
        char color[TRK_COLOR_HEX_SIZE];
        trk_color_hex(objs->color[i], color);
        if (json_object_set_new(o, "color", json_string(color))) {
            json_decref(o);
            o = NULL;
        }
    }
    return o;
}

struct json_t *trk_objects_to_value(const struct trk_objects *objs)
{
    if (trk_objects_validate(objs, NULL, 0)) return NULL;
    json_t *arr = json_array();
    for (int i = 0; arr && i < objs->n; i++) {
        json_t *o = trk_objects_object_value(objs, i, true);
        if (!o || json_array_append_new(arr, o)) {
            json_decref(arr);
            arr = NULL;
        }
    }
    if (!arr) return NULL;
    json_t *root = json_object();
    if (!root || json_object_set_new(root, "objects", arr)) {
        json_decref(root);
        return NULL;
    }
    return root;
}

static int write_all(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ------------------------------------------------------- save/reload target */

/* Temporary files are NAME.tmp. plus TMP_RAND characters of tmp_chars: the
 * exact pattern trk_objects_target_open removes, so nothing else is. */
#define TMP_RAND 6
static const char tmp_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

static bool is_our_tmp(const char *entry, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(entry, name, n) != 0 || strncmp(entry + n, ".tmp.", 5) != 0) return false;
    const char *r = entry + n + 5;
    if (strlen(r) != TMP_RAND) return false;
    for (int i = 0; i < TMP_RAND; i++)
        if (!r[i] || !strchr(tmp_chars, r[i])) return false;
    return true;
}

/* Removes NAME.tmp.XXXXXX files that a daemon killed in the middle of a
 * save left: regular files of this user only. Returns how many. */
static int remove_stale(const struct trk_objects_target *t)
{
    int fd = openat(t->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return 0;
    }
    int removed = 0;
    struct dirent *e;
    struct stat st;
    while ((e = readdir(d)) != NULL) {
        if (!is_our_tmp(e->d_name, t->name)) continue;
        if (fstatat(t->dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            st.st_uid == geteuid() && unlinkat(t->dirfd, e->d_name, 0) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

int trk_objects_target_open(const char *path, struct trk_objects_target *t, int *stale_removed,
                            char *why, size_t why_len)
{
    char dummy[1];
    if (!why || !why_len) why = dummy, why_len = sizeof dummy;
    if (stale_removed) *stale_removed = 0;
    if (!t) return TRK_EINVAL;
    t->dirfd = -1;
    t->name[0] = t->path[0] = 0;
    const char *slash = path ? strrchr(path, '/') : NULL;
    const char *base = slash ? slash + 1 : path;
    if (!path || !*base || !strcmp(base, ".") || !strcmp(base, "..") ||
        strlen(base) >= sizeof t->name) {
        snprintf(why, why_len, "'%s' does not name a file", path ? path : "");
        return TRK_EINVAL;
    }
    char dir[sizeof t->path];
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else if ((size_t)(slash - path) < sizeof dir)
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    else {
        snprintf(why, why_len, "the path is too long");
        return TRK_EINVAL;
    }
    char eb[128];
    /* The folder is resolved here, once; later the file is only named in
     * it, so swapping a folder of the path afterwards redirects nothing. */
    char *real = realpath(dir, NULL);
    int fd = real ? open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd < 0) {
        int e = errno;
        snprintf(why, why_len, "folder %s: %s", dir, errno_text(e, eb, sizeof eb));
        free(real);
        return -e;
    }
    snprintf(t->name, sizeof t->name, "%s", base);
    int n = snprintf(t->path, sizeof t->path, "%s%s%s", real, strcmp(real, "/") ? "/" : "", base);
    free(real);
    if (n < 0 || (size_t)n >= sizeof t->path) {
        close(fd);
        snprintf(why, why_len, "the path is too long");
        return TRK_EINVAL;
    }
    t->dirfd = fd;
    int removed = remove_stale(t);
    if (stale_removed) *stale_removed = removed;
    return 0;
}

void trk_objects_target_close(struct trk_objects_target *t)
{
    if (t && t->dirfd >= 0) {
        close(t->dirfd);
        t->dirfd = -1;
    }
}

/* The file's state for save (for_save) or reload: 0 with *st filled when
 * it may be used, -ENOENT when it is absent, else a negative code and why
 * (a predicate for the path: "is a symbolic link: ..."). */
static int check_file(const struct trk_objects_target *t, bool for_save, struct stat *st, char *why,
                      size_t why_len)
{
    char eb[128];
    if (fstatat(t->dirfd, t->name, st, AT_SYMLINK_NOFOLLOW) < 0) {
        int e = errno;
        snprintf(why, why_len, "cannot be examined: %s", errno_text(e, eb, sizeof eb));
        return -e;
    }
    if (S_ISLNK(st->st_mode)) {
        snprintf(why, why_len, "is a symbolic link: trackd does not follow it (%s a regular file)",
                 for_save ? "save to" : "reload from");
        return -ELOOP;
    }
    if (!S_ISREG(st->st_mode)) {
        snprintf(why, why_len, "is not a regular file: trackd does not %s it",
                 for_save ? "replace" : "read");
        return -EINVAL;
    }
    /* Replacing a file of another user would give it to us; reading one could
     * hand its content to whoever asked. Root's files are read (a daemon
     * user reading /etc), never replaced unless we are root. */
    uid_t me = geteuid();
    if (st->st_uid != me && (for_save || st->st_uid != 0)) {
        snprintf(why, why_len,
                 "belongs to uid %u, not to trackd's user (uid %u): trackd does not %s it",
                 (unsigned)st->st_uid, (unsigned)me, for_save ? "replace" : "read");
        return -EPERM;
    }
    return 0;
}

int trk_objects_target_check(const struct trk_objects_target *t, char *why, size_t why_len)
{
    char dummy[1];
    if (!why || !why_len) why = dummy, why_len = sizeof dummy;
    if (!t || t->dirfd < 0) return TRK_EINVAL;
    struct stat st;
    char m[200];
    int rc = check_file(t, true, &st, m, sizeof m);
    if (rc == -ENOENT) return 0;
    if (rc) snprintf(why, why_len, "%s %s", t->path, m);
    return rc;
}

int trk_objects_target_load(const struct trk_objects_target *t, struct trk_objects *out,
                            struct trk_config_error *err)
{
    struct trk_config_error local;
    if (!err) err = &local;
    err_init(err, t ? t->path : NULL);
    if (!t || t->dirfd < 0 || !out) {
        err_at(err, 0, 0, "invalid arguments");
        return TRK_EINVAL;
    }
    /* Checked without opening (opening a device can act on it); the open
     * re-checks that the same regular file is there. A file replaced in
     * between (an atomic save by trackd or an editor: rename over it) is
     * checked again, a few times. O_NONBLOCK: a FIFO swapped in meanwhile
     * does not wait for a writer. */
    int rc = -EAGAIN, fd = -1;
    for (int tries = 0; rc == -EAGAIN && tries < 5; tries++) {
        struct stat st, fst;
        char m[200];
        rc = check_file(t, false, &st, m, sizeof m);
        if (rc) {
            err_at(err, 0, 0, "%s", rc == -ENOENT ? "does not exist" : m);
            return rc;
        }
        fd = openat(t->dirfd, t->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
            int e = errno;
            char eb[128];
            err_at(err, 0, 0, "cannot open: %s", errno_text(e, eb, sizeof eb));
            return -e;
        }
        if (fstat(fd, &fst) < 0 || !S_ISREG(fst.st_mode) || fst.st_ino != st.st_ino ||
            fst.st_dev != st.st_dev) {
            close(fd);
            fd = -1;
            rc = -EAGAIN;
        }
    }
    if (fd < 0) {
        err_at(err, 0, 0, "the file kept changing while it was opened: not read");
        return -EAGAIN;
    }
    char *buf;
    size_t n;
    rc = read_all(fd, &buf, &n, err);
    close(fd);
    if (rc) return rc;
    rc = load_text(buf, n, t->path, true, out, err);
    free(buf);
    return rc;
}

int trk_objects_target_save(const struct trk_objects_target *t, const struct trk_objects *objs,
                            char *why, size_t why_len)
{
    char dummy[1], eb[128];
    if (!why || !why_len) why = dummy, why_len = sizeof dummy;
    if (!t || t->dirfd < 0 || trk_objects_validate(objs, why, why_len)) return TRK_EINVAL;
    struct stat st;
    char m[200];
    int rc = check_file(t, true, &st, m, sizeof m);
    if (rc && rc != -ENOENT) {
        snprintf(why, why_len, "%s %s", t->path, m);
        return rc;
    }
    mode_t mode = rc ? 0644 : (st.st_mode & 0777); /* no set-id bits on a data file */
    char *text = trk_objects_to_json(objs);
    if (!text) {
        snprintf(why, why_len, "out of memory");
        return TRK_ENOMEM;
    }
    char tmp[sizeof t->name + 16];
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 16; tries++) {
        unsigned char r[TMP_RAND];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
            rc = -errno;
            break;
        }
        int k = snprintf(tmp, sizeof tmp, "%s.tmp.", t->name);
        for (int i = 0; i < TMP_RAND; i++)
            tmp[k + i] = tmp_chars[r[i] % (sizeof tmp_chars - 1)];
        tmp[k + TMP_RAND] = 0;
        /* O_EXCL: never an existing file, never through a link. */
        fd = openat(t->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST) {
            rc = -errno;
            break;
        }
    }
    if (fd < 0) {
        if (!rc) rc = -EEXIST;
        snprintf(why, why_len, "cannot create a temporary file beside %s: %s", t->path,
                 errno_text(-rc, eb, sizeof eb));
        free(text);
        return rc;
    }
    rc = write_all(fd, text, strlen(text));
    free(text);
    if (!rc && (fchmod(fd, mode) < 0 || fsync(fd) < 0)) rc = -errno;
    if (close(fd) < 0 && !rc) rc = -errno;
    /* rename replaces the directory entry, never writes into what the name
     * pointed to: even a link or FIFO put there after the check above only
     * loses its name, whatever it pointed to stays untouched. */
    if (!rc && renameat(t->dirfd, tmp, t->dirfd, t->name) < 0) rc = -errno;
    if (rc) {
        unlinkat(t->dirfd, tmp, 0);
        snprintf(why, why_len, "writing %s: %s", t->path, errno_text(-rc, eb, sizeof eb));
        return rc;
    }
    /* The rename is durable only once the directory entry is on disk; some
     * file systems refuse fsync on a directory (EINVAL): the data is safe. */
    if (fsync(t->dirfd) < 0 && errno != EINVAL) {
        rc = -errno;
        snprintf(why, why_len, "syncing the folder of %s: %s", t->path,
                 errno_text(-rc, eb, sizeof eb));
    }
    return rc;
}

int trk_objects_save_file(const char *path, const struct trk_objects *objs)
{
    if (!path || !*path || trk_objects_validate(objs, NULL, 0)) return TRK_EINVAL;
    struct trk_objects_target t;
    int rc = trk_objects_target_open(path, &t, NULL, NULL, 0);
    if (!rc) rc = trk_objects_target_save(&t, objs, NULL, 0);
    trk_objects_target_close(&t);
    return rc;
}
