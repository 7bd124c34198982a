/* Unit tests of config/: good files, defaults, limits, the struct validator,
 * jansson-value entry points, save/reload round trips, the position index
 * and the demo objects against the real colour rules of gpu/color.h.
 *
 * Usage: test_config_objects CASE [SRCDIR TMPDIR]; ctest runs each case as
 * its own test (tests/unit/config/CMakeLists.txt). SRCDIR is the repository
 * root (for good files and config/objects.example.json), TMPDIR a scratch
 * directory for saves. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../check.h"
#include "color.h"
#include "objects.h"
#include "posindex.h"

static const char *srcdir = ".", *tmpdir = ".";

static void path_in(char *buf, size_t n, const char *dir, const char *rel)
{
    snprintf(buf, n, "%s/%s", dir, rel);
}

static int load_rel(const char *rel, struct trk_objects *o, struct trk_config_error *e)
{
    char p[1024];
    path_in(p, sizeof p, srcdir, rel);
    int rc = trk_objects_load_file(p, o, e);
    if (rc) {
        char m[600];
        trk_config_error_format(e, m, sizeof m);
        fprintf(stderr, "load %s: %s\n", rel, m);
    }
    return rc;
}

static void check_def(const struct trk_object_def *d, const char *name, enum trk_space sp, int l0,
                      int l1, int l2, int h0, int h1, int h2, uint64_t min_mass)
{
    CHECK_STR(d->name, name);
    CHECK(d->space == sp);
    CHECK(d->lo[0] == l0 && d->lo[1] == l1 && d->lo[2] == l2);
    CHECK(d->hi[0] == h0 && d->hi[1] == h1 && d->hi[2] == h2);
    CHECK(d->min_mass == min_mass);
}

/* ----------------------------------------------------------- good files */

static void test_design_example(void)
{
    struct trk_objects o;
    struct trk_config_error e;
    CHECK(load_rel("tests/unit/config/good/design_example.json", &o, &e) == 0);
    CHECK(o.n == 2);
    check_def(&o.def[0], "red", TRK_SPACE_HSV, 346, 110, 70, 14, 255, 255, 1);
    check_def(&o.def[1], "ball", TRK_SPACE_RGB, 180, 0, 0, 255, 80, 80, 30);
    /* Unused entries are zero, so whole structs compare with memcmp. */
    static const struct trk_object_def zero;
    CHECK(memcmp(&o.def[2], &zero, sizeof zero) == 0);
    CHECK(memcmp(&o.def[TRK_MAX_OBJECTS - 1], &zero, sizeof zero) == 0);
}

static void test_all_spaces(void)
{
    struct trk_objects o;
    struct trk_config_error e;
    CHECK(load_rel("tests/unit/config/good/all_spaces.json", &o, &e) == 0);
    CHECK(o.n == 7);
    check_def(&o.def[0], "skin", TRK_SPACE_YCBCR, 0, 77, 133, 255, 127, 173, 500);
    check_def(&o.def[1], "leaf", TRK_SPACE_HSV, 90, 60, 40, 150, 255, 255, 1);
    check_def(&o.def[2], "paper", TRK_SPACE_RGB, 200, 200, 200, 255, 255, 255, 1);
    check_def(&o.def[3], "everything", TRK_SPACE_HSV, 0, 0, 0, 359, 255, 255,
              9223372036854775807ull);
    check_def(&o.def[4], "single", TRK_SPACE_RGB, 7, 7, 7, 7, 7, 7, 1);
    check_def(&o.def[5], "team", TRK_SPACE_LAB, 0, 150, 140, 255, 200, 190, 1);
    check_def(&o.def[6], "marker", TRK_SPACE_RG, 120, 40, 20, 200, 90, 255, 1);
    /* rg's display colour: centre r 160, g 65, I 138 -> R 3 I r / 255 = 260
     * (clamped), G 106, B 3 I - 260 - 106 = 48. */
    CHECK(o.color[6][0] == 255 && o.color[6][1] == 106 && o.color[6][2] == 48);
    /* lab's: the centre (L 50 %, a* 47, b* 37) is a warm red. */
    CHECK(o.color[5][0] > 150 && o.color[5][1] < 100 && o.color[5][2] < 100);
    /* "#1F8F2a": hex digits in either case. */
    CHECK(o.color[1][0] == 0x1f && o.color[1][1] == 0x8f && o.color[1][2] == 0x2a);
    /* paper has no colour: the centre of its box. */
    CHECK(o.color[2][0] == 228 && o.color[2][1] == 228 && o.color[2][2] == 228);
    CHECK(o.color[4][0] == 7 && o.color[4][1] == 7 && o.color[4][2] == 7);
}

static void test_wrap_bom_crlf(void)
{
    struct trk_objects o;
    struct trk_config_error e;
    CHECK(load_rel("tests/unit/config/good/wrap_bom_crlf.json", &o, &e) == 0);
    CHECK(o.n == 2);
    /* Keys in any order. */
    check_def(&o.def[0], "wrap", TRK_SPACE_HSV, 350, 100, 100, 10, 255, 255, 2);
    check_def(&o.def[1], "nowrap", TRK_SPACE_HSV, 10, 100, 100, 350, 255, 255, 1);
    /* The wrapping box matches hue 355 and 5 but not 180; the other one the
     * opposite (gpu/color.h is the rule the backends run). */
    const struct trk_object_def *w = &o.def[0], *nw = &o.def[1];
    CHECK(trk_box_match(w->lo, w->hi, 1, 355, 200, 200));
    CHECK(trk_box_match(w->lo, w->hi, 1, 5, 200, 200));
    CHECK(!trk_box_match(w->lo, w->hi, 1, 180, 200, 200));
    CHECK(!trk_box_match(nw->lo, nw->hi, 1, 355, 200, 200));
    CHECK(trk_box_match(nw->lo, nw->hi, 1, 180, 200, 200));
}

static void test_empty(void)
{
    struct trk_objects o;
    struct trk_config_error e;
    memset(&o, 0xAB, sizeof o);
    CHECK(load_rel("tests/unit/config/good/empty.json", &o, &e) == 0);
    CHECK(o.n == 0);
    char *j = trk_objects_to_json(&o);
    CHECK(j != NULL);
    if (j) {
        struct trk_objects o2;
        CHECK(trk_objects_load_string(j, strlen(j), "empty", &o2, &e) == 0);
        CHECK(o2.n == 0);
    }
    free(j);
}

static void test_unicode_names(void)
{
    struct trk_objects o;
    struct trk_config_error e;
    CHECK(load_rel("tests/unit/config/good/unicode_names.json", &o, &e) == 0);
    CHECK(o.n == 8);
    CHECK_STR(o.def[0].name, "rouge \xc3\xa9"
                             "carlate");
    CHECK_STR(o.def[1].name, "\xe7\xbb\xbf\xe8\x89\xb2\xe7\x90\x83");
    CHECK_STR(o.def[2].name, "\xf0\x9f\x8e\xaf target");
    CHECK_STR(o.def[3].name, "\xf0\x9f\x94\xb5 blue"); /* surrogate pair escape */
    CHECK_STR(o.def[4].name, "quote \" and \\ slash /");
    CHECK(strlen(o.def[5].name) == 63); /* 21 x 3 bytes: the longest allowed */
    CHECK(trk_objects_find(&o, "RED") == 6);
    CHECK(trk_objects_find(&o, "red") == 7); /* names are case-sensitive */
    CHECK(trk_objects_find(&o, "Red") == -1);
}

/* Percent-decodes s into out (at most n - 1 bytes); false on a stray '%'. */
static bool unescape(const char *s, char *out, size_t n)
{
    size_t o = 0;
    for (; *s && o + 1 < n; s++) {
        unsigned v;
        if (*s != '%') {
            out[o++] = *s;
        } else if (sscanf(s + 1, "%2X", &v) == 1 && s[1] && s[2]) {
            out[o++] = (char)v;
            s += 2;
        } else {
            return false;
        }
    }
    out[o] = 0;
    return true;
}

/* One name rule for every output (OBJECTS.md, "Names"): the names MQTT and
 * OSC once mangled alike load and map to addresses of their own, which give
 * the name back; controls (C0, DEL, C1) and noncharacters are refused by the
 * loader, by add_object's parser and by the validator (rename). */
static void test_name_rule(void)
{
    static const char *const ok[] = { "a/b",           "a_b",
                                      "a b",           "a#b",
                                      "a,b",           "a*b",
                                      "a+b",           "a%2Fb",
                                      "a?b[c]{d}",     "\\u00a0nbsp",
                                      "\\ufdcf",       "\\ufdf0",
                                      "\\ufffd",       "\\ud83f\\udffd",
                                      "\\ud83d\\udd35" };
    enum { N_OK = sizeof(ok) / sizeof(ok[0]) };
    char text[4096];
    size_t at = (size_t)snprintf(text, sizeof text, "{\"objects\": [");
    for (int i = 0; i < N_OK; i++)
        at += (size_t)snprintf(text + at, sizeof text - at,
                               "%s{\"name\": \"%s\", \"space\": \"rgb\", \"lo\": [0, 0, 0], "
                               "\"hi\": [1, 1, 1]}",
                               i ? ", " : "", ok[i]);
    snprintf(text + at, sizeof text - at, "]}");
    struct trk_objects o;
    struct trk_config_error e;
    CHECKF(trk_objects_load_string(text, strlen(text), "names", &o, &e) == 0, "%s", e.msg);
    CHECK(o.n == N_OK);
    static const char *const reserved[2] = { "/+#", " #*,/?[]{}" }; /* MQTT, OSC */
    for (int r = 0; r < 2; r++) {
        char esc[N_OK][TRK_NAME_ESCAPED_MAX], back[TRK_NAME_MAX];
        for (int i = 0; i < o.n; i++) {
            trk_objects_escape_name(o.def[i].name, reserved[r], esc[i], sizeof esc[i]);
            CHECKF(strcspn(esc[i], reserved[r]) == strlen(esc[i]), "%s keeps a reserved byte",
                   esc[i]);
            CHECKF(unescape(esc[i], back, sizeof back) && !strcmp(back, o.def[i].name),
                   "%s does not decode to its name", esc[i]);
            for (int j = 0; j < i; j++)
                CHECKF(strcmp(esc[i], esc[j]) != 0, "%s and %s share %s", o.def[i].name,
                       o.def[j].name, esc[i]);
        }
    }
    /* The longest escape fits TRK_NAME_ESCAPED_MAX; a short buffer cuts
     * before an escape, never inside one. */
    char all_pct[TRK_NAME_MAX], esc[TRK_NAME_ESCAPED_MAX];
    memset(all_pct, '%', TRK_NAME_MAX - 1);
    all_pct[TRK_NAME_MAX - 1] = 0;
    CHECK(trk_objects_escape_name(all_pct, "", esc, sizeof esc) == 3 * (TRK_NAME_MAX - 1));
    CHECK(trk_objects_escape_name("a/b", "/", esc, 4) == 1 && !strcmp(esc, "a"));
    CHECK(trk_objects_escape_name("a/b", "/", esc, 5) == 4 && !strcmp(esc, "a%2F"));

    /* Refused, with the code point: C1 controls (raw and escaped), DEL,
     * noncharacters of the BMP's block and at the end of planes 0, 1, 16. */
    static const struct {
        const char *json, *raw, *msg;
    } bad[] = {
        { "x\\u0085", "x\xc2\x85", "control characters (U+0085 at byte 2)" },
        { "\\u0080", "\xc2\x80", "control characters (U+0080 at byte 1)" },
        { "\\u009f", "\xc2\x9f", "control characters (U+009F at byte 1)" },
        { "a\\u007f", "a\x7f", "control characters (U+007F at byte 2)" },
        { "\\ufdd0", "\xef\xb7\x90", "Unicode noncharacters (U+FDD0 at byte 1)" },
        { "\\ufdef", "\xef\xb7\xaf", "Unicode noncharacters (U+FDEF at byte 1)" },
        { "\\ufffe", "\xef\xbf\xbe", "Unicode noncharacters (U+FFFE at byte 1)" },
        { "ab\\uffff", "ab\xef\xbf\xbf", "Unicode noncharacters (U+FFFF at byte 3)" },
        { "\\ud83f\\udfff", "\xf0\x9f\xbf\xbf", "Unicode noncharacters (U+1FFFF at byte 1)" },
        { "\\udbff\\udffe", "\xf4\x8f\xbf\xbe", "Unicode noncharacters (U+10FFFE at byte 1)" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[160], m[256];
        snprintf(text, sizeof text,
                 "{\"name\": \"%s\", \"space\": \"rgb\", \"lo\": [0, 0, 0], \"hi\": [1, 1, 1]}",
                 bad[i].json);
        json_t *obj = json_loads(text, 0, NULL);
        struct trk_object_def d;
        uint8_t c[3];
        snprintf(want, sizeof want, "name must not contain %s", bad[i].msg);
        CHECKF(obj && trk_objects_parse_object(obj, &d, c, m, sizeof m) == TRK_EINVAL &&
                   !strcmp(m, want),
               "add_object %s: %s", bad[i].json, m);
        json_decref(obj);
        struct trk_objects b = o;
        snprintf(b.def[3].name, sizeof b.def[3].name, "%s", bad[i].raw);
        snprintf(want, sizeof want, "objects[3].name must not contain %s", bad[i].msg);
        CHECKF(trk_objects_validate(&b, m, sizeof m) == TRK_EINVAL && !strcmp(m, want),
               "rename %s: %s", bad[i].json, m);
    }
}

static void test_example_and_demo(void)
{
    struct trk_objects o;
    struct trk_config_error e;
    CHECK(load_rel("config/objects.example.json", &o, &e) == 0);
    CHECK(o.n >= 2);
    check_def(&o.def[0], "red", TRK_SPACE_HSV, 346, 110, 70, 14, 255, 255, 1);
    check_def(&o.def[1], "ball", TRK_SPACE_RGB, 180, 0, 0, 255, 80, 80, 30);
    const char *demo = trk_objects_demo_json();
    CHECK(trk_objects_load_string(demo, strlen(demo), "demo", &o, &e) == 0);
    CHECK(o.n == 7);
}

/* -------------------------------------------------------------- defaults */

static void test_default_colors(void)
{
    struct trk_object_def d = { .space = TRK_SPACE_HSV,
                                .lo = { 0, 255, 255 },
                                .hi = { 0, 255, 255 } };
    uint8_t c[3];
    /* Pure hues at full saturation and value. */
    static const int hue_rgb[][4] = { { 0, 255, 0, 0 },   { 60, 255, 255, 0 },
                                      { 120, 0, 255, 0 }, { 180, 0, 255, 255 },
                                      { 240, 0, 0, 255 }, { 300, 255, 0, 255 } };
    for (size_t i = 0; i < sizeof hue_rgb / sizeof hue_rgb[0]; i++) {
        d.lo[0] = d.hi[0] = (uint16_t)hue_rgb[i][0];
        trk_object_display_rgb(&d, c);
        CHECK(c[0] == hue_rgb[i][1] && c[1] == hue_rgb[i][2] && c[2] == hue_rgb[i][3]);
    }
    /* Hue 10..21 centres on 16 (rounding half up, like every channel): the
     * same colour the protocol's hello derives (test_messages). */
    struct trk_object_def o = { .space = TRK_SPACE_HSV,
                                .lo = { 10, 200, 100 },
                                .hi = { 21, 255, 255 } };
    trk_object_display_rgb(&o, c);
    CHECK(c[0] == 178 && c[1] == 61 && c[2] == 19);
    /* A wrapping range's centre is across 0: 350..10 -> 0 (red). */
    d.lo[0] = 350;
    d.hi[0] = 10;
    trk_object_display_rgb(&d, c);
    CHECK(c[0] == 255 && c[1] == 0 && c[2] == 0);
    /* The default colour must round-trip through the colour rules: converting
     * it back to HSV gives (nearly) the centre of the box. */
    for (int h = 0; h < 360; h += 7) {
        struct trk_object_def x = { .space = TRK_SPACE_HSV,
                                    .lo = { (uint16_t)h, 200, 100 },
                                    .hi = { (uint16_t)h, 255, 255 } };
        trk_object_display_rgb(&x, c);
        uint16_t hh;
        uint8_t ss, vv;
        trk_rgb_to_hsv(c[0], c[1], c[2], &hh, &ss, &vv);
        int dh = abs((int)hh - h);
        if (dh > 180) dh = 360 - dh;
        CHECK(dh <= 2);
        CHECK(abs((int)ss - 228) <= 3);
        CHECK(abs((int)vv - 178) <= 1);
    }
    /* ycbcr centre (128, 128, 128) is mid gray; rgb the box centre. */
    struct trk_object_def y = { .space = TRK_SPACE_YCBCR,
                                .lo = { 0, 0, 0 },
                                .hi = { 255, 255, 255 } };
    trk_object_display_rgb(&y, c);
    CHECK(c[0] == 128 && c[1] == 128 && c[2] == 128);
    struct trk_object_def r = { .space = TRK_SPACE_RGB,
                                .lo = { 10, 20, 30 },
                                .hi = { 20, 40, 31 } };
    trk_object_display_rgb(&r, c);
    CHECK(c[0] == 15 && c[1] == 30 && c[2] == 31);
}

/* ---------------------------------------------------------------- limits */

/* n objects, one per line after the first line. */
static char *many_objects(int n)
{
    size_t cap = 64 + (size_t)n * 100;
    char *s = malloc(cap);
    size_t w = (size_t)snprintf(s, cap, "{\"objects\": [\n");
    for (int i = 0; i < n; i++)
        w += (size_t)snprintf(s + w, cap - w,
                              "  {\"name\": \"o%d\", \"space\": \"rgb\", \"lo\": [%d, 0, 0], "
                              "\"hi\": [255, 255, 255]}%s\n",
                              i, i % 256, i + 1 < n ? "," : "");
    snprintf(s + w, cap - w, "]}\n");
    return s;
}

static void test_max_objects(void)
{
    struct trk_objects o;
    struct trk_config_error e;
    char *s = many_objects(TRK_MAX_OBJECTS);
    CHECK(trk_objects_load_string(s, strlen(s), "max", &o, &e) == 0);
    CHECK(o.n == TRK_MAX_OBJECTS);
    CHECK_STR(o.def[255].name, "o255");
    CHECK(o.def[255].lo[0] == 255);
    free(s);
    s = many_objects(TRK_MAX_OBJECTS + 1);
    CHECK(trk_objects_load_string(s, strlen(s), "max", &o, &e) == TRK_EINVAL);
    /* Object i sits on line i + 2, its '{' at column 3. */
    CHECK(e.line == TRK_MAX_OBJECTS + 2 && e.col == 3);
    CHECK_STR(e.msg, "too many objects: 257 (at most 256)");
    CHECK(e.kind == TRK_CONFIG_TOO_MANY); /* the daemon's too_many_objects */
    free(s);
}

/* The frame limits: exactly at each is valid, one past is refused by the
 * loader (at the blobs value), by validate and by check_limits alike. */
static void test_frame_limits(void)
{
    struct trk_objects o;
    memset(&o, 0, sizeof o);
    o.n = TRK_BLOB_OBJECTS_MAX;
    CHECK(o.n == 16);
    for (int i = 0; i < o.n; i++) {
        struct trk_object_def *d = &o.def[i];
        snprintf(d->name, sizeof d->name, "b%d", i);
        d->hi[0] = d->hi[1] = d->hi[2] = 9;
        d->min_mass = d->min_area = 1;
        d->connectivity = 8;
        d->blobs = 31;
        d->track = true;
    }
    char m[256];
    /* 16 x (1 + 31 + 31) = 1008 items: within both limits. */
    CHECK(trk_objects_validate(&o, m, sizeof m) == 0);
    int at = -1;
    for (int i = 8; i < 16; i++)
        o.def[i].blobs = 32; /* 1024: the limit itself */
    CHECK(trk_objects_check_limits(o.def, o.n, &at, m, sizeof m) == 0);
    o.def[2].blobs = 32; /* 1026 */
    CHECK(trk_objects_check_limits(o.def, o.n, &at, m, sizeof m) == TRK_EINVAL);
    CHECK(at == 15);
    CHECK(strstr(m, "1026 results") && strstr(m, "at most 1024"));
    CHECK(trk_objects_validate(&o, m, sizeof m) == TRK_EINVAL);
    o.def[2].blobs = 31;
    /* A 17th object with blobs, however small its K. */
    struct trk_object_def *d = &o.def[o.n++];
    *d = o.def[0];
    snprintf(d->name, sizeof d->name, "last");
    d->blobs = 1;
    d->track = false;
    CHECK(trk_objects_check_limits(o.def, o.n, &at, m, sizeof m) == TRK_EINVAL);
    CHECK(at == 16);
    CHECK_STR(m, "objects[16].blobs: 17 objects with blobs (at most 16: each is a labelling pass "
                 "over every frame)");
    d->blobs = 0; /* without blobs it is one more item: 1025 */
    CHECK(trk_objects_check_limits(o.def, o.n, &at, m, sizeof m) == TRK_EINVAL);
    CHECK(strstr(m, "objects[16]: each frame") != NULL);
    o.def[0].blobs = 30;
    CHECK(trk_objects_validate(&o, m, sizeof m) == 0);
    /* 16 untracked objects with 63 blobs: 16 x 64 = 1024, allowed (the cost
     * measured in OBJECTS.md, Limits). */
    o.n = 16;
    for (int i = 0; i < o.n; i++) {
        o.def[i].blobs = 63;
        o.def[i].track = false;
    }
    CHECK(trk_objects_validate(&o, m, sizeof m) == 0);
}

static void test_too_large(void)
{
    struct trk_objects o;
    struct trk_config_error e;
    size_t n = TRK_OBJECTS_MAX_BYTES + 1;
    char *s = malloc(n);
    /* Valid JSON padded with spaces: only the size is wrong. */
    memset(s, ' ', n);
    memcpy(s, "{\"objects\": []}", 15);
    CHECK(trk_objects_load_string(s, n, "big", &o, &e) == TRK_EINVAL);
    char m[512];
    trk_config_error_format(&e, m, sizeof m);
    CHECK_STR(m, "big:1:1: too large: more than 1048576 bytes");
    CHECK(trk_objects_load_string(s, n - 1, "big", &o, &e) == 0);

    char p[1024];
    path_in(p, sizeof p, tmpdir, "too_large.json");
    FILE *f = fopen(p, "wb");
    CHECK(f && fwrite(s, 1, n, f) == n);
    if (f) fclose(f);
    CHECK(trk_objects_load_file(p, &o, &e) == TRK_EINVAL);
    CHECK(e.line == 1 && e.col == 1 && strstr(e.msg, "too large") != NULL);
    unlink(p);
    free(s);
}

/* --------------------------------------------------------------- errors */

static void test_failure_leaves_output(void)
{
    struct trk_objects o, before;
    struct trk_config_error e;
    memset(&o, 0x5A, sizeof o);
    memcpy(&before, &o, sizeof o);
    const char *bad = "{\"objects\": [{\"name\": \"a\", \"space\": \"rgb\", \"lo\": [1, 2, 3], "
                      "\"hi\": [4, 5, 600]}]}";
    CHECK(trk_objects_load_string(bad, strlen(bad), NULL, &o, &e) == TRK_EINVAL);
    CHECK(memcmp(&o, &before, sizeof o) == 0);
    CHECK_STR(e.file, "<string>");
    CHECK(e.line == 1 && e.col == 74); /* the "600" */
    /* err may be NULL. */
    CHECK(trk_objects_load_string(bad, strlen(bad), NULL, &o, NULL) == TRK_EINVAL);
    CHECK(trk_objects_load_file("/nonexistent/x.json", &o, NULL) == -ENOENT);
    CHECK(memcmp(&o, &before, sizeof o) == 0);
    char p[1024];
    path_in(p, sizeof p, srcdir, "tests/unit/config/bad/directory.json");
    CHECK(trk_objects_load_file(p, &o, &e) == -EISDIR);
    /* Not NUL-terminated input: only len bytes are read. */
    const char *good = "{\"objects\": []}garbage";
    CHECK(trk_objects_load_string(good, 15, "n", &o, &e) == 0 && o.n == 0);
    CHECK(trk_objects_load_string(good, 16, "n", &o, &e) == TRK_EINVAL);
    CHECK(e.line == 1 && e.col == 16);
}

static void test_error_format(void)
{
    struct trk_config_error e = { .file = "a.json", .line = 3, .col = 14, .msg = "boom" };
    char buf[64];
    CHECK(trk_config_error_format(&e, buf, sizeof buf) == 17);
    CHECK_STR(buf, "a.json:3:14: boom");
    char small[8];
    CHECK(trk_config_error_format(&e, small, sizeof small) == 17);
    CHECK_STR(small, "a.json:");
    CHECK(trk_config_error_format(&e, NULL, 0) == 17);
    e.line = e.col = 0;
    CHECK(trk_config_error_format(&e, buf, sizeof buf) == 12);
    CHECK_STR(buf, "a.json: boom");
    CHECK(trk_config_error_format(NULL, buf, sizeof buf) == TRK_EINVAL);
}

static void test_from_json(void)
{
    struct trk_objects o;
    struct trk_config_error e;
    json_error_t je;
    json_t *root = json_loads("{\"objects\": [{\"name\": \"a\", \"space\": \"hsv\", "
                              "\"lo\": [350, 0, 0], \"hi\": [10, 255, 255]}]}",
                              0, &je);
    CHECK(root);
    CHECK(trk_objects_from_json(root, "ws", &o, &e) == 0);
    CHECK(o.n == 1 && o.def[0].lo[0] == 350);
    json_t *hi = json_object_get(json_array_get(json_object_get(root, "objects"), 0), "hi");
    json_array_set_new(hi, 1, json_integer(300));
    CHECK(trk_objects_from_json(root, "ws", &o, &e) == TRK_EINVAL);
    char m[512];
    trk_config_error_format(&e, m, sizeof m);
    CHECK_STR(m, "ws: objects[0].hi[1] = 300 is out of range 0..255 (hsv S)");
    CHECK(e.kind == TRK_CONFIG_INVALID);
    /* A name used twice says so by kind (the daemon's duplicate_name), not
     * only in the text. */
    json_t *dup = json_loads("{\"objects\": [{\"name\": \"a\", \"space\": \"rgb\", "
                             "\"lo\": [0, 0, 0], \"hi\": [1, 1, 1]}, {\"name\": \"a\", "
                             "\"space\": \"rgb\", \"lo\": [0, 0, 0], \"hi\": [1, 1, 1]}]}",
                             0, &je);
    CHECK(dup && trk_objects_from_json(dup, "ws", &o, &e) == TRK_EINVAL);
    CHECK(e.kind == TRK_CONFIG_DUPLICATE);
    json_decref(dup);
    /* One object on its own: messages relative to the object. */
    struct trk_object_def d;
    uint8_t c[3];
    json_t *obj = json_array_get(json_object_get(root, "objects"), 0);
    CHECK(trk_objects_parse_object(obj, &d, c, m, sizeof m) == TRK_EINVAL);
    CHECK_STR(m, "hi[1] = 300 is out of range 0..255 (hsv S)");
    json_array_set_new(hi, 1, json_integer(255));
    json_object_set_new(obj, "color", json_string("#010203"));
    CHECK(trk_objects_parse_object(obj, &d, c, m, sizeof m) == 0);
    CHECK_STR(d.name, "a");
    CHECK(c[0] == 1 && c[1] == 2 && c[2] == 3 && d.min_mass == 1);
    json_object_del(obj, "space");
    CHECK(trk_objects_parse_object(obj, &d, c, m, sizeof m) == TRK_EINVAL);
    CHECK_STR(m, "missing key \"space\"");
    json_object_set_new(obj, "space", json_string("rgb"));
    json_object_set_new(obj, "extra", json_true());
    CHECK(trk_objects_parse_object(obj, &d, c, m, sizeof m) == TRK_EINVAL);
    CHECK_STR(m, "unknown key \"extra\" (expected name, space, lo, hi, class, min_mass, blobs, "
                 "min_area, connectivity, track, coast_frames, color or adapt)");
    json_t *num = json_integer(3);
    CHECK(trk_objects_parse_object(num, &d, c, m, sizeof m) == TRK_EINVAL);
    CHECK_STR(m, "the value must be an object, not an integer");
    json_decref(num);
    /* Strings built in code may hold NUL bytes: rejected, not truncated. */
    json_object_del(obj, "extra");
    json_object_set_new(obj, "name", json_stringn("a\0b", 3));
    CHECK(trk_objects_parse_object(obj, &d, c, m, sizeof m) == TRK_EINVAL);
    CHECK_STR(m, "name must not contain control characters (U+0000 at byte 2)");
    json_decref(root);
}

static void test_validate(void)
{
    struct trk_objects o;
    struct trk_config_error e;
    const char *demo = trk_objects_demo_json();
    CHECK(trk_objects_load_string(demo, strlen(demo), "demo", &o, &e) == 0);
    char m[256];
    CHECK(trk_objects_validate(&o, m, sizeof m) == 0);
    struct trk_objects b;
#define EXPECT_INVALID(mutation, text)                                                             \
    do {                                                                                           \
        b = o;                                                                                     \
        mutation;                                                                                  \
        CHECK(trk_objects_validate(&b, m, sizeof m) == TRK_EINVAL);                                \
        CHECK_STR(m, text);                                                                        \
        CHECK(trk_objects_to_json(&b) == NULL);                                                    \
        CHECK(trk_objects_to_value(&b) == NULL);                                                   \
    } while (0)
    EXPECT_INVALID(b.n = -1, "object count -1 is out of range 0..256");
    EXPECT_INVALID(b.n = 257, "object count 257 is out of range 0..256");
    EXPECT_INVALID(memset(b.def[1].name, 'x', TRK_NAME_MAX),
                   "objects[1].name is not NUL-terminated");
    EXPECT_INVALID(b.def[1].name[0] = 0, "objects[1].name must not be empty");
    EXPECT_INVALID(strcpy(b.def[2].name, "a\nb"),
                   "objects[2].name must not contain control characters (U+000A at byte 2)");
    EXPECT_INVALID(strcpy(b.def[2].name, "a\xff"), "objects[2].name is not valid UTF-8");
    EXPECT_INVALID(b.def[3].space = (enum trk_space)7,
                   "objects[3].space 7 is not one of rgb, hsv, ycbcr, lab, rg");
    EXPECT_INVALID(b.def[0].lo[0] = 360, "objects[0].lo[0] = 360 is out of range 0..359 (hsv H)");
    EXPECT_INVALID(
        b.def[3].lo[1] = 251,
        "objects[3].lo[1] = 251 is greater than hi[1] = 250 (only the hsv hue may wrap)");
    EXPECT_INVALID(b.def[4].min_mass = 0,
                   "objects[4].min_mass 0 is out of range 1..9223372036854775807");
    EXPECT_INVALID(b.def[5].blobs = TRK_MAX_BLOBS + 1, "objects[5].blobs 65 is out of range 0..64");
    EXPECT_INVALID(b.def[5].min_area = 0, "objects[5].min_area 0 is out of range 1..268435456");
    EXPECT_INVALID(b.def[5].min_area = TRK_OBJECTS_MIN_AREA_MAX + 1,
                   "objects[5].min_area 268435457 is out of range 1..268435456");
    EXPECT_INVALID(b.def[2].connectivity = 0, "objects[2].connectivity 0 is not 4 or 8");
    EXPECT_INVALID(b.def[2].connectivity = 6, "objects[2].connectivity 6 is not 4 or 8");
    EXPECT_INVALID(strcpy(b.def[6].name, "red"),
                   "objects[6].name \"red\" is already used by objects[0]");
#undef EXPECT_INVALID
    CHECK(trk_objects_validate(NULL, NULL, 0) == TRK_EINVAL);
    char p[1024];
    path_in(p, sizeof p, tmpdir, "invalid_save.json");
    b = o;
    b.def[0].min_mass = 0;
    CHECK(trk_objects_save_file(p, &b) == TRK_EINVAL);
    CHECK(access(p, F_OK) != 0);
}

/* The blob keys: defaults when absent, the ends of each range, written back
 * only when not default, carried by every form (file, value, lone object). */
static void test_blobs(void)
{
    struct trk_objects o, b;
    struct trk_config_error e;
    CHECK(load_rel("tests/unit/config/good/blobs.json", &o, &e) == 0);
    CHECK(o.n == 4);
    const struct trk_object_def *d = o.def;
    CHECK(d[0].blobs == 0 && d[0].min_area == 1 && d[0].connectivity == 8);
    CHECK(d[1].blobs == 4 && d[1].min_area == 20 && d[1].connectivity == 4);
    CHECK(d[2].blobs == 64 && d[2].min_area == 268435456 && d[2].connectivity == 8);
    CHECK(d[3].blobs == 0 && d[3].min_area == 1 && d[3].connectivity == 8);
    CHECK(trk_objects_validate(&o, NULL, 0) == 0);

    /* The saver writes what is not default, in the table's order. */
    char *j = trk_objects_to_json(&o);
    CHECK(j != NULL);
    if (j) {
        CHECK(strstr(j, "[4, 5, 6], \"min_mass\": 1}") != NULL);
        CHECK(strstr(j, "\"min_mass\": 1, \"blobs\": 4, \"min_area\": 20, \"connectivity\": 4}"));
        CHECK(strstr(j, "\"min_mass\": 1, \"blobs\": 64, \"min_area\": 268435456}"));
        CHECK(strstr(j, "[9, 9, 9], \"min_mass\": 1}") != NULL);
        CHECK(trk_objects_load_string(j, strlen(j), "saved", &b, &e) == 0);
        CHECK(memcmp(&o, &b, sizeof o) == 0);
    }
    free(j);

    /* Every key in the value form, and back through the validator. */
    json_t *v = trk_objects_to_value(&o);
    json_t *o1 = json_array_get(json_object_get(v, "objects"), 1);
    CHECK(json_integer_value(json_object_get(o1, "blobs")) == 4);
    CHECK(json_integer_value(json_object_get(o1, "min_area")) == 20);
    CHECK(json_integer_value(json_object_get(o1, "connectivity")) == 4);
    json_t *o0 = json_array_get(json_object_get(v, "objects"), 0);
    CHECK(json_integer_value(json_object_get(o0, "blobs")) == 0);
    CHECK(json_integer_value(json_object_get(o0, "min_area")) == 1);
    CHECK(json_integer_value(json_object_get(o0, "connectivity")) == 8);
    CHECK(v && trk_objects_from_json(v, "value", &b, &e) == 0 && memcmp(&o, &b, sizeof o) == 0);

    /* One object in the file's form: "color" only when it is not the
     * default (an edit merged over it keeps a default colour following the
     * box), always with every_key; parsed back, the same object. */
    struct trk_objects t = o;
    t.color[1][0] ^= 0x40;
    for (int k = 0; k < 2; k++) {
        json_t *lone = trk_objects_object_value(&t, k, false);
        json_t *full = trk_objects_object_value(&t, k, true);
        CHECK(lone && full && json_object_size(full) == 11);
        CHECK(!json_object_get(lone, "color") == (k == 0));
        struct trk_object_def back;
        uint8_t rgb[3];
        char why[256];
        CHECK(trk_objects_parse_object(lone, &back, rgb, why, sizeof why) == 0);
        CHECK(memcmp(&back, &t.def[k], sizeof back) == 0 && memcmp(rgb, t.color[k], 3) == 0);
        json_decref(lone);
        json_decref(full);
    }
    CHECK(trk_objects_object_value(&t, t.n, true) == NULL);
    CHECK(trk_objects_object_value(&t, -1, true) == NULL);

    /* A client's edit (the teach panel's set) goes through parse_object. */
    struct trk_object_def one;
    uint8_t c[3];
    char m[256];
    CHECK(trk_objects_parse_object(o1, &one, c, m, sizeof m) == 0);
    CHECK(memcmp(&one, &o.def[1], sizeof one) == 0);
    json_object_set_new(o1, "connectivity", json_integer(6));
    CHECK(trk_objects_parse_object(o1, &one, c, m, sizeof m) == TRK_EINVAL);
    CHECK_STR(m, "connectivity must be 4 or 8, not 6");
    json_object_set_new(o1, "connectivity", json_integer(8));
    json_object_set_new(o1, "blobs", json_integer(65));
    CHECK(trk_objects_parse_object(o1, &one, c, m, sizeof m) == TRK_EINVAL);
    CHECK_STR(m, "blobs must be an integer 0..64, not 65");
    json_object_set_new(o1, "blobs", json_integer(1));
    json_object_set_new(o1, "min_area", json_integer(0));
    CHECK(trk_objects_parse_object(o1, &one, c, m, sizeof m) == TRK_EINVAL);
    CHECK_STR(m, "min_area must be an integer 1..268435456, not 0");
    json_object_del(o1, "min_area");
    json_object_del(o1, "connectivity");
    CHECK(trk_objects_parse_object(o1, &one, c, m, sizeof m) == 0);
    CHECK(one.blobs == 1 && one.min_area == 1 && one.connectivity == 8);
    json_decref(v);
}

/* The tracker keys: defaults when absent, written back only when not
 * default, carried by every form; track needs blobs (validate too). */
static void test_track(void)
{
    struct trk_objects o, b;
    struct trk_config_error e;
    CHECK(load_rel("tests/unit/config/good/track.json", &o, &e) == 0);
    CHECK(o.n == 3);
    const struct trk_object_def *d = o.def;
    CHECK(!d[0].track && d[0].coast_frames == TRK_OBJECTS_COAST_DEFAULT);
    CHECK(d[1].track && d[1].blobs == 4 && d[1].coast_frames == 0);
    CHECK(!d[2].track && d[2].coast_frames == 1000);
    char *j = trk_objects_to_json(&o);
    CHECK(j != NULL);
    if (j) {
        CHECK(strstr(j, "[4, 5, 6], \"min_mass\": 1}") != NULL);
        CHECK(strstr(j, "\"blobs\": 4, \"track\": true, \"coast_frames\": 0}") != NULL);
        CHECK(strstr(j, "\"min_mass\": 1, \"coast_frames\": 1000}") != NULL);
        CHECK(trk_objects_load_string(j, strlen(j), "saved", &b, &e) == 0);
        CHECK(memcmp(&o, &b, sizeof o) == 0);
    }
    free(j);
    json_t *v = trk_objects_to_value(&o);
    json_t *o1 = json_array_get(json_object_get(v, "objects"), 1);
    CHECK(json_is_true(json_object_get(o1, "track")));
    CHECK(json_integer_value(json_object_get(o1, "coast_frames")) == 0);
    CHECK(v && trk_objects_from_json(v, "value", &b, &e) == 0 && memcmp(&o, &b, sizeof o) == 0);
    struct trk_object_def one;
    uint8_t c[3];
    char m[256];
    json_object_set_new(o1, "blobs", json_integer(0));
    CHECK(trk_objects_parse_object(o1, &one, c, m, sizeof m) == TRK_EINVAL);
    CHECK_STR(m, "track: true needs \"blobs\" >= 1 (the most instances it follows), not 0");
    json_decref(v);
    o.def[0].track = true; /* blobs 0 */
    CHECK(trk_objects_validate(&o, m, sizeof m) == TRK_EINVAL);
    CHECK_STR(m, "objects[0].track needs blobs >= 1");
    o.def[0].track = false;
    o.def[0].coast_frames = TRK_OBJECTS_COAST_MAX + 1;
    CHECK(trk_objects_validate(&o, m, sizeof m) == TRK_EINVAL);
    CHECK_STR(m, "objects[0].coast_frames 1001 is out of range 0..1000");
}

/* ------------------------------------------------------------ round trips */

static uint32_t rng_state = 12345;
static uint32_t rnd(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}

/* A random valid set: names mixing ASCII, quotes, backslashes and multi-byte
 * characters; every space; wrapping hues; default and custom colours. */
static void random_objects(struct trk_objects *o)
{
    static const char *const pieces[] = {
        "a", "Z", " ", "\"", "\\", "/", "\xc3\xa9", "\xe7\x90\x83", "\xf0\x9f\x8e\xaf",
        "7", "{", "]"
    };
    memset(o, 0, sizeof *o);
    o->n = (int)(rnd() % 20);
    if (rnd() % 10 == 0) o->n = TRK_MAX_OBJECTS;
    for (int i = 0; i < o->n; i++) {
        struct trk_object_def *d = &o->def[i];
        int len = snprintf(d->name, sizeof d->name, "%d", i); /* unique */
        int parts = (int)(rnd() % 12);
        for (int k = 0; k < parts; k++) {
            const char *p = pieces[rnd() % (sizeof pieces / sizeof pieces[0])];
            if (len + (int)strlen(p) >= TRK_NAME_MAX) break;
            strcpy(d->name + len, p);
            len += (int)strlen(p);
        }
        d->space = (enum trk_space)(rnd() % 3);
        for (int c = 0; c < 3; c++) {
            int max = (d->space == TRK_SPACE_HSV && c == 0) ? 359 : 255;
            int a = (int)(rnd() % (unsigned)(max + 1)), b = (int)(rnd() % (unsigned)(max + 1));
            if (a > b && !(d->space == TRK_SPACE_HSV && c == 0)) {
                int t = a;
                a = b;
                b = t;
            }
            d->lo[c] = (uint16_t)a;
            d->hi[c] = (uint16_t)b;
        }
        d->min_mass = rnd() % 4 == 0 ? ((uint64_t)rnd() << 20 | rnd()) + 1 : 1 + rnd() % 100;
        /* Blob keys: the defaults half the time (not written), else any
         * valid value, the ends included. */
        d->blobs = (uint16_t)(rnd() % 2 ? 0 : rnd() % (TRK_MAX_BLOBS + 1));
        d->min_area = rnd() % 2 ? 1 : rnd() % 4 == 0 ? TRK_OBJECTS_MIN_AREA_MAX : 1 + rnd() % 1000;
        d->connectivity = rnd() % 2 ? 8 : 4;
        d->track = d->blobs && rnd() % 2;
        d->coast_frames =
            (uint16_t)(rnd() % 2 ? TRK_OBJECTS_COAST_DEFAULT : rnd() % (TRK_OBJECTS_COAST_MAX + 1));
        if (rnd() % 2) {
            trk_object_display_rgb(d, o->color[i]);
        } else {
            for (int c = 0; c < 3; c++)
                o->color[i][c] = (uint8_t)rnd();
        }
    }
    /* Valid sets stay within the frame limits: blobs off where they go over. */
    int at;
    while (trk_objects_check_limits(o->def, o->n, &at, NULL, 0)) {
        while (!o->def[at].blobs)
            at--;
        o->def[at].blobs = 0;
        o->def[at].track = false;
    }
}

static void test_round_trip(void)
{
    char p[1024];
    path_in(p, sizeof p, tmpdir, "round_trip.json");
    struct trk_objects *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    struct trk_config_error e;
    char m[512];
    for (int iter = 0; iter < 150; iter++) {
        random_objects(a);
        CHECK(trk_objects_validate(a, m, sizeof m) == 0);
        char *j = trk_objects_to_json(a);
        CHECK(j != NULL);
        if (!j) break;
        memset(b, 0xEE, sizeof *b);
        int rc = trk_objects_load_string(j, strlen(j), "to_json", b, &e);
        if (rc) {
            trk_config_error_format(&e, m, sizeof m);
            fprintf(stderr, "%s\n", m);
        }
        CHECK(rc == 0 && memcmp(a, b, sizeof *a) == 0);
        free(j);

        memset(b, 0xEE, sizeof *b);
        CHECK(trk_objects_save_file(p, a) == 0);
        CHECK(trk_objects_load_file(p, b, &e) == 0);
        CHECK(memcmp(a, b, sizeof *a) == 0);

        /* The jansson form goes back through the same validator. */
        json_t *v = trk_objects_to_value(a);
        CHECK(v != NULL);
        memset(b, 0xEE, sizeof *b);
        CHECK(v && trk_objects_from_json(v, "value", b, &e) == 0);
        CHECK(memcmp(a, b, sizeof *a) == 0);
        json_decref(v);
        if (check_failures) break;
    }
    /* A file's objects survive load -> save -> load unchanged. */
    CHECK(load_rel("tests/unit/config/good/unicode_names.json", a, &e) == 0);
    CHECK(trk_objects_save_file(p, a) == 0);
    CHECK(trk_objects_load_file(p, b, &e) == 0);
    CHECK(memcmp(a, b, sizeof *a) == 0);
    unlink(p);
    free(a);
    free(b);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return -1;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void test_atomic_save(void)
{
    char dir[1024], p[1100], link[1100], q[1100];
    path_in(dir, sizeof dir, tmpdir, "atomic");
    mkdir(dir, 0755);
    snprintf(p, sizeof p, "%s/objects.json", dir);
    snprintf(link, sizeof link, "%s/link.json", dir);
    unlink(p);
    unlink(link);
    CHECK(count_entries(dir) == 0);
    struct trk_objects o, r;
    struct trk_config_error e;
    const char *demo = trk_objects_demo_json();
    CHECK(trk_objects_load_string(demo, strlen(demo), "demo", &o, &e) == 0);

    /* New file: 0644, and nothing else left in the directory. */
    CHECK(trk_objects_save_file(p, &o) == 0);
    struct stat st;
    CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0644);
    CHECK(count_entries(dir) == 1);

    /* Replacing keeps the permission bits and a new inode (rename). */
    chmod(p, 0600);
    ino_t before = st.st_ino;
    o.def[0].min_mass = 99;
    CHECK(trk_objects_save_file(p, &o) == 0);
    CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0600 && st.st_ino != before);
    CHECK(count_entries(dir) == 1);
    CHECK(trk_objects_load_file(p, &r, &e) == 0 && r.def[0].min_mass == 99);

    /* A symlink is not followed: refused, the link and its target stay. */
    CHECK(symlink("objects.json", link) == 0);
    o.def[0].min_mass = 7;
    CHECK(trk_objects_save_file(link, &o) == -ELOOP);
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(trk_objects_load_file(p, &r, &e) == 0 && r.def[0].min_mass == 99);
    CHECK(count_entries(dir) == 2);

    /* Failure: directory missing -> -ENOENT, nothing created. */
    snprintf(q, sizeof q, "%s/no/such/dir/x.json", dir);
    CHECK(trk_objects_save_file(q, &o) == -ENOENT);
    CHECK(count_entries(dir) == 2);
    /* Failure: the target is not a regular file (a directory, a FIFO) ->
     * refused, nothing replaced, no temporary file. */
    snprintf(q, sizeof q, "%s/sub", dir);
    mkdir(q, 0755);
    int rc = trk_objects_save_file(q, &o);
    CHECK(rc == -EINVAL);
    CHECK(count_entries(dir) == 3);
    char fifo[1100];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    CHECK(mkfifo(fifo, 0600) == 0);
    CHECK(trk_objects_save_file(fifo, &o) == -EINVAL);
    CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
    CHECK(count_entries(dir) == 4);
    unlink(fifo);
    rmdir(q);
    unlink(link);
    unlink(p);
    rmdir(dir);

    /* A relative path (directory ".") works too. */
    char cwd[1024];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK(chdir(tmpdir) == 0);
    CHECK(trk_objects_save_file("relative.json", &o) == 0);
    CHECK(trk_objects_load_file("relative.json", &r, &e) == 0 && r.n == o.n);
    unlink("relative.json");
    CHECK(chdir(cwd) == 0);
}

/* The save/reload target: stale temporary files of a killed save are
 * removed at open (exactly ours, nothing else); other users' files are
 * neither replaced nor read; reload messages quote nothing of the file. */
static void test_save_target(void)
{
    char dir[1024], p[1100], q[1100];
    path_in(dir, sizeof dir, tmpdir, "target");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir); /* a failed run's leftovers */
    CHECK(system(cmd) == 0);
    mkdir(dir, 0755);
    snprintf(p, sizeof p, "%s/objects.json", dir);
    static const char *const mine[] = { "objects.json.tmp.Ab3xZ9" };
    static const char *const not_mine[] = { "objects.json.tmp.Ab3xZ", "objects.json.tmp.Ab3x-9",
                                            "objects.json.tmp.Ab3xZ90", "other.json.tmp.Ab3xZ9",
                                            "objects.json.bak" };
    for (size_t i = 0; i < 1; i++) {
        snprintf(q, sizeof q, "%s/%s", dir, mine[i]);
        FILE *f = fopen(q, "w");
        CHECK(f && fputs("{\"obj", f) >= 0 && fclose(f) == 0);
    }
    for (size_t i = 0; i < sizeof not_mine / sizeof not_mine[0]; i++) {
        snprintf(q, sizeof q, "%s/%s", dir, not_mine[i]);
        FILE *f = fopen(q, "w");
        CHECK(f && fclose(f) == 0);
    }
    /* Our pattern, but a link and (as root) another user's file: kept. */
    snprintf(q, sizeof q, "%s/objects.json.tmp.LINK00", dir);
    CHECK(symlink("/etc/passwd", q) == 0);
    bool root = geteuid() == 0;
    if (root) {
        snprintf(q, sizeof q, "%s/objects.json.tmp.NOBODY", dir);
        FILE *f = fopen(q, "w");
        CHECK(f && fclose(f) == 0 && chown(q, 65534, 65534) == 0);
    }
    struct trk_objects_target t;
    int stale = -1;
    char why[600];
    CHECK(trk_objects_target_open(p, &t, &stale, why, sizeof why) == 0);
    CHECKF(stale == 1, "%d stale files removed", stale);
    CHECK(count_entries(dir) == 6 + (root ? 1 : 0));
    CHECK(t.path[0] == '/' && !strcmp(t.name, "objects.json"));
    CHECK(trk_objects_target_check(&t, why, sizeof why) == 0); /* absent: fine */

    struct trk_objects o, r;
    struct trk_config_error e;
    const char *demo = trk_objects_demo_json();
    CHECK(trk_objects_load_string(demo, strlen(demo), "demo", &o, &e) == 0);
    CHECK(trk_objects_target_save(&t, &o, why, sizeof why) == 0);
    CHECK(trk_objects_target_load(&t, &r, &e) == 0 && r.n == o.n);

    if (root) { /* another user's file: not replaced, not read */
        CHECK(chown(p, 65534, 65534) == 0);
        CHECK(trk_objects_target_check(&t, why, sizeof why) == -EPERM);
        CHECKF(trk_objects_target_save(&t, &o, why, sizeof why) == -EPERM &&
                   strstr(why, "uid 65534"),
               "%s", why);
        CHECK(trk_objects_target_load(&t, &r, &e) == -EPERM && e.line == 0);
        CHECK(chown(p, 0, 0) == 0);
    }

    /* Reload messages: where and which rule, never the file's text. */
    static const char *const secret[] = {
        "supersecret password\n",
        "{\"objects\": [], \"supersecret\": 1}",
        "{\"objects\": [{\"name\": \"a\", \"space\": \"supersecret\", \"lo\": [0,0,0], "
        "\"hi\": [1,1,1]}]}",
        "{\"objects\": [{\"name\": \"a\", \"space\": \"rgb\", \"lo\": [0,0,0], "
        "\"hi\": [1,1,1], \"color\": \"supersecret\"}]}",
        "{\"objects\": [{\"name\": \"supersecret\", \"space\": \"rgb\", \"lo\": [0,0,0], "
        "\"hi\": [1,1,1]}, {\"name\": \"supersecret\", \"space\": \"rgb\", \"lo\": [0,0,0], "
        "\"hi\": [1,1,1]}]}",
        "{\"objects\": [], \"camera\": {\"supersecret\": 1}}",
        "{\"objects\": [], \"camera\": {\"controls\": {\"supersecret\": \"x\"}}}",
        "[\"\\usupersecret\"]",
        "{\"objects\": [{\"supersecret\": 1}]}",
    };
    for (size_t i = 0; i < sizeof secret / sizeof secret[0]; i++) {
        FILE *f = fopen(p, "w");
        CHECK(f && fputs(secret[i], f) >= 0 && fclose(f) == 0);
        CHECK(trk_objects_target_load(&t, &r, &e) == TRK_EINVAL);
        char line[600];
        trk_config_error_format(&e, line, sizeof line);
        CHECKF(e.line > 0 && e.col > 0 && !strstr(line, "secret") && strstr(line, t.path),
               "quiet: %s", line);
        /* The same text given at start is quoted, for its author. */
        CHECK(trk_objects_load_file(p, &r, &e) == TRK_EINVAL);
        trk_config_error_format(&e, line, sizeof line);
        CHECKF(strstr(line, "supersecret") || strstr(line, "near '"), "start: %s", line);
    }
    trk_objects_target_close(&t);
    trk_objects_target_close(&t); /* twice: safe */
    CHECK(system(cmd) == 0);
}

static void test_to_json_format(void)
{
    struct trk_objects o;
    struct trk_config_error e;
    CHECK(load_rel("tests/unit/config/good/design_example.json", &o, &e) == 0);
    char *j = trk_objects_to_json(&o);
    CHECK(j != NULL);
    if (j)
        CHECK_STR(j, "{\n"
                     "  \"objects\": [\n"
                     "    {\"name\": \"red\", \"space\": \"hsv\", \"lo\": [346, 110, 70], "
                     "\"hi\": [14, 255, 255], \"min_mass\": 1},\n"
                     "    {\"name\": \"ball\", \"space\": \"rgb\", \"lo\": [180, 0, 0], "
                     "\"hi\": [255, 80, 80], \"min_mass\": 30}\n"
                     "  ]\n"
                     "}\n");
    free(j);
    o.color[1][0] = 0xAB;
    j = trk_objects_to_json(&o);
    CHECK(j && strstr(j, "\"min_mass\": 30, \"color\": \"#ab2828\"}") != NULL);
    free(j);
    /* The value form always carries "color": red's default is its box
     * centre, hue 0, s 183, v 163 -> (163, 163 * 72 / 255, same) = #a32e2e. */
    json_t *v = trk_objects_to_value(&o);
    char *d = v ? json_dumps(v, JSON_COMPACT) : NULL;
    CHECK(d != NULL);
    if (d)
        CHECK_STR(d, "{\"objects\":[{\"name\":\"red\",\"space\":\"hsv\",\"lo\":[346,110,70],"
                     "\"hi\":[14,255,255],\"min_mass\":1,\"blobs\":0,\"min_area\":1,"
                     "\"connectivity\":8,\"track\":false,\"coast_frames\":10,"
                     "\"color\":\"#a32e2e\"},"
                     "{\"name\":\"ball\",\"space\":\"rgb\",\"lo\":[180,0,0],"
                     "\"hi\":[255,80,80],\"min_mass\":30,\"blobs\":0,\"min_area\":1,"
                     "\"connectivity\":8,\"track\":false,\"coast_frames\":10,"
                     "\"color\":\"#ab2828\"}]}");
    free(d);
    json_decref(v);
}

/* -------------------------------------------------------- position index */

static void expect_pos(const struct trk_posindex *ix, const struct trk_path_seg *p, int n, int key,
                       int line, int col)
{
    int l = -1, c = -1;
    int rc = trk_posindex_find(ix, p, n, key, &l, &c);
    if (rc != 0 || l != line || c != col) {
        fprintf(stderr, "posindex: path of %d segs key=%d: rc %d at %d:%d, want %d:%d\n", n, key,
                rc, l, c, line, col);
        check_failures++;
    }
}

#define K(s)                                                                                       \
    {                                                                                              \
        s, sizeof(s) - 1, -1                                                                       \
    }
#define I(i)                                                                                       \
    {                                                                                              \
        NULL, 0, i                                                                                 \
    }

static void test_posindex(void)
{
    /* Keys written with escapes are found by their decoded bytes. */
    const char *t = "\xef\xbb\xbf{\"a\": [1, {\"k\\u00e9\": \"x\\\"]\"},\n"
                    "  [true, null]], \"\\ud83c\\udfaf\" : -2.5e3,\n"
                    "\"\": {}}";
    struct trk_posindex *ix = NULL;
    CHECK(trk_posindex_build(t, strlen(t), &ix) == 0);
    struct trk_path_seg root[1];
    expect_pos(ix, root, 0, 0, 1, 4);
    struct trk_path_seg a[] = { K("a"), I(1), K("k\xc3\xa9") };
    expect_pos(ix, a, 1, 0, 1, 10);
    expect_pos(ix, a, 1, 1, 1, 5);
    expect_pos(ix, a, 2, 0, 1, 14);
    expect_pos(ix, a, 3, 0, 1, 26);
    expect_pos(ix, a, 3, 1, 1, 15);
    struct trk_path_seg b[] = { K("a"), I(2), I(1) };
    expect_pos(ix, b, 2, 0, 2, 3);
    expect_pos(ix, b, 3, 0, 2, 10);
    struct trk_path_seg c[] = { K("\xf0\x9f\x8e\xaf") };
    expect_pos(ix, c, 1, 0, 2, 35);
    expect_pos(ix, c, 1, 1, 2, 18);
    struct trk_path_seg d[] = { K("") };
    expect_pos(ix, d, 1, 0, 3, 5);
    /* Absent paths. */
    int l, col;
    struct trk_path_seg none1[] = { K("b") }, none2[] = { K("a"), I(3) },
                        none3[] = { K("a"), K("x") };
    CHECK(trk_posindex_find(ix, none1, 1, 0, &l, &col) == -1);
    CHECK(trk_posindex_find(ix, none2, 2, 0, &l, &col) == -1);
    CHECK(trk_posindex_find(ix, none3, 2, 0, &l, &col) == -1);
    CHECK(trk_posindex_find(ix, b, 2, 1, &l, &col) == -1); /* array elements have no key */
    CHECK(trk_posindex_count(ix) == 10);
    trk_posindex_destroy(&ix);
    trk_posindex_destroy(&ix);
    CHECK(ix == NULL);

    /* Text it cannot follow: partial index, no crash. */
    static const char *const bad[] = { "",      "{",   "{\"a\"", "{\"a\":", "[1,",   "[1 2]",
                                       "\"abc", "{}}", "{\"a\\", "[{]}",    "nul\\", "}" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(trk_posindex_build(bad[i], strlen(bad[i]), &ix) == 1);
        trk_posindex_destroy(&ix);
    }
}

/* ------------------------------------------------------------ demo scene */

static int matches(const struct trk_object_def *d, const uint8_t rgb[3], int coef)
{
    int c0 = rgb[0], c1 = rgb[1], c2 = rgb[2];
    if (d->space == TRK_SPACE_HSV) {
        uint16_t h;
        uint8_t s, v;
        trk_rgb_to_hsv(rgb[0], rgb[1], rgb[2], &h, &s, &v);
        c0 = h, c1 = s, c2 = v;
    } else if (d->space == TRK_SPACE_YCBCR) {
        uint8_t y, cb, cr;
        trk_rgb_to_ycbcr(&trk_rgb2ycc_coefs[coef], rgb[0], rgb[1], rgb[2], &y, &cb, &cr);
        c0 = y, c1 = cb, c2 = cr;
    }
    return trk_box_match(d->lo, d->hi, d->space == TRK_SPACE_HSV, c0, c1, c2);
}

/* The demo balls (config/demo_objects.c) with +-3 noise on each channel
 * match only their own object under every YCbCr encoding, also after a
 * round trip through YUV (the rgb/hsv path for YUV sources), and the gray
 * background matches none. */
static void test_demo_objects(void)
{
    static const struct {
        const char *name;
        uint8_t rgb[3];
    } balls[] = { { "red", { 230, 40, 40 } },      { "green", { 40, 200, 60 } },
                  { "blue", { 40, 80, 230 } },     { "yellow", { 240, 220, 40 } },
                  { "magenta", { 220, 50, 220 } }, { "cyan", { 40, 210, 220 } },
                  { "orange", { 250, 140, 30 } } };
    struct trk_objects o;
    struct trk_config_error e;
    const char *demo = trk_objects_demo_json();
    CHECK(trk_objects_load_string(demo, strlen(demo), "demo", &o, &e) == 0);
    CHECK(o.n == 7);
    int spaces[3] = { 0 };
    for (int i = 0; i < o.n; i++)
        spaces[o.def[i].space]++;
    CHECK(spaces[TRK_SPACE_RGB] >= 1 && spaces[TRK_SPACE_HSV] >= 1 && spaces[TRK_SPACE_YCBCR] >= 1);
    CHECK(o.def[trk_objects_find(&o, "blue")].space == TRK_SPACE_YCBCR);
    CHECK(o.def[trk_objects_find(&o, "yellow")].space == TRK_SPACE_RGB);
    for (size_t b = 0; b < 7; b++) {
        int own = trk_objects_find(&o, balls[b].name);
        CHECK(own >= 0);
        if (own < 0) continue;
        CHECK(memcmp(o.color[own], balls[b].rgb, 3) == 0);
        for (int coef = 0; coef < 4; coef++) {
            for (int n = 0; n < 27; n++) {
                uint8_t px[3];
                for (int c = 0; c < 3; c++)
                    px[c] = (uint8_t)(balls[b].rgb[c] + ((n / (c == 0   ? 1
                                                               : c == 1 ? 3
                                                                        : 9)) %
                                                             3 -
                                                         1) *
                                                            3);
                /* Through YUV and back, as a YUV source's rgb/hsv path. */
                uint8_t y, cb, cr, rt[3];
                trk_rgb_to_ycbcr(&trk_rgb2ycc_coefs[coef], px[0], px[1], px[2], &y, &cb, &cr);
                trk_yuv_to_rgb(&trk_yuv2rgb_coefs[coef], y, cb, cr, &rt[0], &rt[1], &rt[2]);
                for (int i = 0; i < o.n; i++) {
                    int m1 = matches(&o.def[i], px, coef), m2 = matches(&o.def[i], rt, coef);
                    if (m1 != (i == own) || m2 != (i == own)) {
                        fprintf(stderr, "ball %s (%d,%d,%d) coef %d vs object %s: %d %d\n",
                                balls[b].name, px[0], px[1], px[2], coef, o.def[i].name, m1, m2);
                        check_failures++;
                    }
                }
            }
        }
    }
    /* Background: gray 60..195 with +-3 per channel noise. */
    for (int g = 57; g <= 198; g++)
        for (int n = 0; n < 343; n++) {
            uint8_t px[3] = { (uint8_t)(g + n % 7 - 3), (uint8_t)(g + n / 7 % 7 - 3),
                              (uint8_t)(g + n / 49 - 3) };
            for (int coef = 0; coef < 4; coef++)
                for (int i = 0; i < o.n; i++)
                    if (matches(&o.def[i], px, coef)) {
                        fprintf(stderr, "gray (%d,%d,%d) matches %s\n", px[0], px[1], px[2],
                                o.def[i].name);
                        check_failures++;
                        return;
                    }
        }
}

/* The optional "camera" object: friendly keys become V4L2 controls with
 * the automatic modes first (drivers refuse manual values while they are
 * on), then the "controls" in file order. */
static void test_camera(void)
{
    const char *text = "{\"camera\": {\"controls\": {\"brightness\": 10, \"power_line\": true},"
                       " \"gain\": 7, \"exposure\": 100, \"white_balance_temperature\": 4500,"
                       " \"white_balance_auto\": false, \"exposure_auto\": false},"
                       " \"objects\": []}";
    struct trk_objects o;
    struct trk_config_error err;
    CHECK(trk_objects_load_string(text, strlen(text), NULL, &o, &err) == 0);
    static const struct {
        const char *name;
        long value;
    } want[] = { { "auto_exposure", 1 },
                 { "white_balance_automatic", 0 },
                 { "exposure_time_absolute", 100 },
                 { "gain", 7 },
                 { "white_balance_temperature", 4500 },
                 { "brightness", 10 },
                 { "power_line", 1 } };
    CHECK(o.n_camera == 7);
    for (int i = 0; i < o.n_camera && i < 7; i++) {
        CHECK_STR(o.camera[i].name, want[i].name);
        CHECK(o.camera[i].value == want[i].value);
    }
    /* Saved and reloaded: the same controls in the same order. */
    char *saved = trk_objects_to_json(&o);
    struct trk_objects back;
    CHECK(saved && trk_objects_load_string(saved, strlen(saved), NULL, &back, &err) == 0);
    CHECK(back.n_camera == o.n_camera);
    for (int i = 0; i < back.n_camera && i < o.n_camera; i++) {
        CHECK_STR(back.camera[i].name, o.camera[i].name);
        CHECK(back.camera[i].value == o.camera[i].value);
    }
    free(saved);
    const char *on = "{\"objects\": [], \"camera\": {\"exposure_auto\": true}}";
    CHECK(trk_objects_load_string(on, strlen(on), NULL, &o, &err) == 0);
    CHECK(o.n_camera == 1 && o.camera[0].value == 3); /* aperture priority */
    const char *none = "{\"objects\": []}";
    CHECK(trk_objects_load_string(none, strlen(none), NULL, &o, &err) == 0);
    CHECK(o.n_camera == 0);
}

/* The camera card's edits (trk_camera_controls_set/remove) over a file's
 * camera section, saved and loaded back: the section holds exactly the
 * edited controls, automatic modes before the manual values, and nothing
 * else of the file changes. */
static void test_camera_edit(void)
{
    const char *text =
        "{\"objects\": [{\"name\": \"red\", \"space\": \"hsv\", \"lo\": [346, 110, 70],"
        " \"hi\": [14, 255, 255], \"blobs\": 3, \"track\": true}],"
        " \"camera\": {\"gain\": 7, \"exposure_auto\": false, \"exposure\": 100,"
        " \"controls\": {\"brightness\": 10, \"gain\": 9}},"
        " \"prefilter\": {\"gaussian\": 1.5}}";
    struct trk_objects o, back;
    struct trk_config_error err;
    CHECK(trk_objects_load_string(text, strlen(text), NULL, &o, &err) == 0);
    /* gain twice (a key and a control): one entry, the new value. */
    CHECK(trk_camera_controls_set(o.camera, &o.n_camera, "gain", 50) == 0);
    /* Automatic white balance is new: before the first manual value. */
    CHECK(trk_camera_controls_set(o.camera, &o.n_camera, "white_balance_automatic", 1) == 0);
    CHECK(trk_camera_controls_set(o.camera, &o.n_camera, "white_balance_temperature", 4000) == 0);
    /* Auto exposure on: the page drops the manual value it overrides. */
    CHECK(trk_camera_controls_set(o.camera, &o.n_camera, "auto_exposure", 3) == 0);
    CHECK(trk_camera_controls_remove(o.camera, &o.n_camera, "exposure_time_absolute") == 1);
    CHECK(trk_camera_controls_remove(o.camera, &o.n_camera, "exposure_time_absolute") == 0);
    CHECK(trk_camera_controls_set(o.camera, &o.n_camera, "", 1) == TRK_EINVAL);
    static const struct {
        const char *name;
        long value;
    } want[] = { { "auto_exposure", 3 },
                 { "white_balance_automatic", 1 },
                 { "gain", 50 },
                 { "brightness", 10 },
                 { "white_balance_temperature", 4000 } };
    const int nw = (int)(sizeof want / sizeof want[0]);
    char p[512];
    path_in(p, sizeof p, tmpdir, "camera_edit.json");
    CHECK(trk_objects_save_file(p, &o) == 0);
    CHECK(trk_objects_load_file(p, &back, &err) == 0);
    CHECKF(back.n_camera == nw, "%d controls", back.n_camera);
    for (int i = 0; i < back.n_camera && i < nw; i++) {
        CHECK_STR(back.camera[i].name, want[i].name);
        CHECK(back.camera[i].value == want[i].value);
    }
    /* The rest of the file as it was. */
    CHECK(back.n == 1 && back.def[0].blobs == 3 && back.def[0].track);
    CHECK(back.prefilter_sigma == 1.5);
    /* A full list takes no new name, but still a new value. */
    o.n_camera = 0;
    for (int i = 0; i < TRK_CAMERA_MAX_CONTROLS; i++) {
        char name[16];
        snprintf(name, sizeof name, "c%d", i);
        CHECK(trk_camera_controls_set(o.camera, &o.n_camera, name, i) == 0);
    }
    CHECK(trk_camera_controls_set(o.camera, &o.n_camera, "gain", 1) == TRK_ENOMEM);
    CHECK(trk_camera_controls_set(o.camera, &o.n_camera, "c3", 33) == 0);
    CHECK(o.n_camera == TRK_CAMERA_MAX_CONTROLS && o.camera[3].value == 33);
    remove(p);
}

static void test_prefilter(void)
{
    struct trk_objects o;
    struct trk_config_error err;
    /* Absent: off, and a save writes no key (old files round-trip as they
     * were). */
    const char *none = "{\"objects\": []}";
    CHECK(trk_objects_load_string(none, strlen(none), NULL, &o, &err) == 0);
    CHECK(o.prefilter_sigma == 0);
    char *saved = trk_objects_to_json(&o);
    CHECK(saved && !strstr(saved, "prefilter"));
    free(saved);
    /* Reals and integers, 0 and the bounds; saved and loaded back exactly. */
    const double ok[] = { 0, 0.1, 1, 1.5, 2.25, 1.0 / 3.0, 4 };
    const char *texts[] = { "0", "0.1", "1", "1.5", "2.25", "0.33333333333333331", "4.0" };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char text[160];
        snprintf(text, sizeof text, "{\"prefilter\": {\"gaussian\": %s}, \"objects\": []}",
                 texts[i]);
        CHECKF(trk_objects_load_string(text, strlen(text), NULL, &o, &err) == 0, "%s", text);
        CHECKF(o.prefilter_sigma == ok[i], "%s: %g", text, o.prefilter_sigma);
        saved = trk_objects_to_json(&o);
        struct trk_objects back;
        CHECK(saved && trk_objects_load_string(saved, strlen(saved), NULL, &back, &err) == 0);
        CHECKF(back.prefilter_sigma == ok[i], "%s saved as %s", texts[i], saved);
        CHECK((ok[i] > 0) == (strstr(saved, "\"prefilter\": {\"gaussian\": ") != NULL));
        free(saved);
    }
    /* The validator holds sets built in code to the same range. */
    memset(&o, 0, sizeof o);
    char msg[200];
    o.prefilter_sigma = 4.5;
    CHECK(trk_objects_validate(&o, msg, sizeof msg) == TRK_EINVAL);
    CHECK_STR(msg, "prefilter.gaussian 4.5 is out of range 0..4");
    o.prefilter_sigma = NAN;
    CHECK(trk_objects_validate(&o, msg, sizeof msg) == TRK_EINVAL);
    CHECK(trk_objects_to_json(&o) == NULL);
    o.prefilter_sigma = 2;
    CHECK(trk_objects_validate(&o, msg, sizeof msg) == 0);
}

/* ------------------------------------------------------------- patterns */

/* The SSL presets: the league's standard 16-id pattern as the file gives
 * it (slots FL, FR, BL, BR; ids in the pattern image's order), the two
 * teams differing only by the centre; every preset saved and loaded back
 * identical; a colour code round-trips; the validator refuses a pattern
 * whose colour lost its blobs (an edit in memory). */
static void test_patterns(void)
{
    static const char *const std16[16] = { "PPGP", "GPGP", "GGGP", "PGGP", "PPPG", "GPPG",
                                           "GGPG", "PGPG", "GGGG", "PPPP", "PPGG", "GGPP",
                                           "GPGG", "GPPP", "PGGG", "PGPP" };
    static const char *const presets[] = { "examples/ssl-blue.json", "examples/ssl-yellow.json",
                                           "examples/ssl-field.json" };
    struct trk_objects o, back;
    struct trk_config_error e;
    for (size_t f = 0; f < 3; f++) {
        CHECK(load_rel(presets[f], &o, &e) == 0);
        CHECK(o.n_patterns == (f == 2 ? 2 : 1));
        for (int i = 0; i < o.n_patterns; i++) {
            const struct trk_pattern *p = &o.patterns[i];
            CHECK(p->kind == TRK_PATTERN_DOTS && p->n_dots == 4 && p->n_ids == 16);
            CHECK(p->centre_mm == 50 && p->px_per_mm == 0 && p->height == 150);
            CHECK_STR(o.def[p->centre].name, p->team == TRK_TEAM_BLUE ? "blue" : "yellow");
            CHECK(!strcmp(p->name, o.def[p->centre].name));
            CHECK(p->dot_x[0] == 35 && p->dot_y[0] == 54.772 && p->dot_x[3] == -54.772 &&
                  p->dot_y[3] == -35);
            for (int id = 0; id < 16; id++) {
                CHECK(p->id[id] == id);
                for (int d = 0; d < 4; d++)
                    CHECK_STR(o.def[p->id_colors[id][d]].name,
                              std16[id][d] == 'P' ? "pink" : "green");
            }
        }
        char *saved = trk_objects_to_json(&o);
        CHECK(saved && trk_objects_load_string(saved, strlen(saved), "saved", &back, &e) == 0);
        CHECK(back.n_patterns == o.n_patterns &&
              !memcmp(back.patterns, o.patterns, sizeof o.patterns));
        free(saved);
    }
    const char *code = "{\"objects\": [{\"name\": \"r\", \"space\": \"rgb\", \"lo\": [200, 0, 0], "
                       "\"hi\": [255, 60, 60], \"blobs\": 4},"
                       "{\"name\": \"g\", \"space\": \"rgb\", \"lo\": [0, 200, 0], "
                       "\"hi\": [60, 255, 60], \"blobs\": 4}],"
                       "\"patterns\": [{\"name\": \"tag\", \"kind\": \"code\", "
                       "\"colors\": [\"r\", \"g\", \"r\"], \"id\": 12, \"gap\": 2.5}]}";
    CHECK(trk_objects_load_string(code, strlen(code), "code", &o, &e) == 0);
    CHECK(o.n_patterns == 1 && o.patterns[0].kind == TRK_PATTERN_CODE &&
          o.patterns[0].n_code == 3 && o.patterns[0].code[1] == 1 && o.patterns[0].code_id == 12 &&
          o.patterns[0].gap == 2.5);
    char *saved = trk_objects_to_json(&o);
    CHECK(saved && trk_objects_load_string(saved, strlen(saved), "saved", &back, &e) == 0);
    CHECK(!memcmp(back.patterns, o.patterns, sizeof o.patterns));
    free(saved);
    char msg[200];
    o.def[1].blobs = 0;
    CHECK(trk_objects_validate(&o, msg, sizeof msg) == TRK_EINVAL);
    CHECK_STR(msg, "patterns[0] \"tag\": invalid colours (each an object with blobs)");
    CHECK(trk_objects_to_json(&o) == NULL);
}

/* ------------------------------------------------------------------ main */

/* Painted classes: class files beside the objects file (read, decoded,
 * every header fault at its offset), the objects file's "class" key, the
 * display colour, validation, the writer's "class" and a round trip. */
static void write_bytes(const char *path, const uint8_t *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(b, 1, n, f) == n);
    if (f) fclose(f);
}

static void test_classes(void)
{
    static uint8_t bits[TRK_CLASS_BYTES], back[TRK_CLASS_BYTES], file[TRK_CLASS_FILE_BYTES + 4];
    memset(bits, 0, sizeof bits);
    /* Cells of pure red (R 252..255, G and B < 4) and one of dark green. */
    const int cells[2] = { trk_class_cell(255, 0, 0), trk_class_cell(0, 100, 0) };
    for (int i = 0; i < 2; i++)
        bits[cells[i] >> 3] |= (uint8_t)(1u << (cells[i] & 7));
    trk_class_file_encode(bits, file);
    CHECK(!memcmp(file, "TRKCLASS", 8) && file[8] == 1 && file[9] == 0 && file[10] == 0 &&
          file[11] == 6 && file[12] == 2 && file[13] == 0);
    size_t at = 99;
    char m[200];
    CHECK(trk_class_file_decode(file, TRK_CLASS_FILE_BYTES, back, &at, m, sizeof m) == 0);
    CHECK(!memcmp(bits, back, sizeof bits));
    /* Each fault at its offset. */
    struct {
        size_t off, len;
        uint8_t val;
        size_t want_at;
        const char *want;
    } bad[] = {
        { 0, 10, 0, 10, "ends inside the header (10 of 16 bytes)" },
        { 3, TRK_CLASS_FILE_BYTES, 'x', 0,
          "not a trackd class table (it starts with \"TRKCLASS\")" },
        { 8, TRK_CLASS_FILE_BYTES, 2, 8, "version 2 (this trackd reads version 1)" },
        { 10, TRK_CLASS_FILE_BYTES, 1, 10, "space 1 (0, R G B, is the only one)" },
        { 11, TRK_CLASS_FILE_BYTES, 5, 11, "5 bits per channel (6 expected)" },
        { 0, TRK_CLASS_FILE_BYTES - 1, 0, TRK_CLASS_FILE_BYTES - 1,
          "ends inside the table (32783 of 32784 bytes)" },
        { 0, TRK_CLASS_FILE_BYTES + 3, 0, TRK_CLASS_FILE_BYTES, "3 bytes after the table" },
        { 12, TRK_CLASS_FILE_BYTES, 3, 12, "the header counts 3 cells, the table has 2" },
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        trk_class_file_encode(bits, file);
        if (bad[k].val) file[bad[k].off] = bad[k].val;
        at = 99;
        CHECKF(trk_class_file_decode(file, bad[k].len, back, &at, m, sizeof m) == TRK_EINVAL &&
                   at == bad[k].want_at && !strcmp(m, bad[k].want),
               "fault %zu: at %zu \"%s\"", k, at, m);
    }
    /* Names: beside the objects file only. */
    const char *names_bad[] = { "", ".lut", "x.LUT", "../x.lut", "a/b.lut", "x y.lut", "x.lut~" };
    for (size_t k = 0; k < sizeof names_bad / sizeof names_bad[0]; k++)
        CHECKF(trk_class_file_name_check(names_bad[k], m, sizeof m) == -1, "name \"%s\" passed",
               names_bad[k]);
    CHECK(trk_class_file_name_check("ball_2-b.lut", m, sizeof m) == 0);

    /* An objects file naming two tables beside it. */
    char dir[1024], p[1100], q[1100];
    path_in(dir, sizeof dir, tmpdir, "classes");
    mkdir(dir, 0755);
    trk_class_file_encode(bits, file);
    snprintf(q, sizeof q, "%s/red.lut", dir);
    write_bytes(q, file, TRK_CLASS_FILE_BYTES);
    static uint8_t empty[TRK_CLASS_BYTES];
    trk_class_file_encode(empty, file);
    snprintf(q, sizeof q, "%s/none.lut", dir);
    write_bytes(q, file, TRK_CLASS_FILE_BYTES);
    snprintf(p, sizeof p, "%s/objects.json", dir);
    const char *text =
        "{\"objects\": [\n"
        "  {\"name\": \"ball\", \"space\": \"rgb\", \"lo\": [1, 2, 3], \"hi\": [4, 5, 6]},\n"
        "  {\"name\": \"red\", \"class\": \"red.lut\", \"blobs\": 2},\n"
        "  {\"name\": \"none\", \"space\": \"class\", \"class\": \"none.lut\"}\n"
        "]}\n";
    write_bytes(p, (const uint8_t *)text, strlen(text));
    static struct trk_objects o, r;
    struct trk_config_error e;
    int rc = trk_objects_load_file(p, &o, &e);
    CHECKF(rc == 0, "load: %s:%d:%d: %s", e.file, e.line, e.col, e.msg);
    CHECK(o.n == 3 && o.n_classes == 2 && o.def[1].space == TRK_SPACE_CLASS &&
          o.def[2].space == TRK_SPACE_CLASS && o.def[1].blobs == 2);
    CHECK(o.def[1].cls == o.classes[o.def[1].cls_slot].bits && o.def[0].cls == NULL);
    CHECK(!strcmp(o.classes[o.def[1].cls_slot].file, "red.lut") &&
          !memcmp(o.classes[o.def[1].cls_slot].bits, bits, sizeof bits));
    /* The display colour: the cells' centres (254, 2, 2) and (2, 102, 2) averaged,
     * gray for an empty class. */
    CHECKF(o.color[1][0] == 128 && o.color[1][1] == 52 && o.color[1][2] == 2,
           "class colour %u %u %u", o.color[1][0], o.color[1][1], o.color[1][2]);
    CHECK(o.color[2][0] == 128 && o.color[2][1] == 128 && o.color[2][2] == 128);
    CHECK(trk_objects_validate(&o, m, sizeof m) == 0);
    /* A copy is re-bound to its own tables. */
    r = o;
    trk_objects_bind_classes(&r);
    CHECK(r.def[1].cls == r.classes[r.def[1].cls_slot].bits);
    /* The writer names the file instead of a box; it loads back the same. */
    char *json = trk_objects_to_json(&o);
    CHECK(json && strstr(json, "\"class\": \"red.lut\"") && !strstr(json, "\"space\": \"class\""));
    if (json) write_bytes(p, (const uint8_t *)json, strlen(json));
    free(json);
    CHECK(trk_objects_load_file(p, &r, &e) == 0 && r.n_classes == 2 &&
          !memcmp(r.classes[r.def[1].cls_slot].bits, bits, sizeof bits) &&
          !memcmp(r.color, o.color, sizeof o.color));
    /* A save writes the tables beside the file: painted bits survive. */
    o.classes[o.def[2].cls_slot].bits[100] = 0x81;
    snprintf(q, sizeof q, "%s/none.lut", dir);
    unlink(q);
    CHECK(trk_objects_save_file(p, &o) == 0);
    CHECK(trk_objects_load_file(p, &r, &e) == 0 && r.n_classes == 2 &&
          r.classes[r.def[2].cls_slot].bits[100] == 0x81 &&
          !memcmp(r.classes[r.def[1].cls_slot].bits, bits, sizeof bits));
    CHECK(count_entries(dir) == 3); /* no temporary file left */
    o.classes[o.def[2].cls_slot].bits[100] = 0;
    CHECK(trk_objects_save_file(p, &o) == 0);
    /* From JSON (no folder): the same objects, tables clear. */
    json_t *v = trk_objects_to_value(&o);
    CHECK(v && !json_object_get(json_array_get(json_object_get(v, "objects"), 1), "lo"));
    CHECK(v && trk_objects_from_json(v, "msg", &r, &e) == 0 && r.n_classes == 2 &&
          r.def[1].space == TRK_SPACE_CLASS && !memcmp(r.classes[0].bits, empty, sizeof empty));
    json_decref(v);
    /* Validation: a slot out of range, two objects on one table. */
    r = o;
    r.def[2].cls_slot = 5;
    CHECK(trk_objects_validate(&r, m, sizeof m) == TRK_EINVAL && strstr(m, "objects[2]"));
    r.def[2].cls_slot = r.def[1].cls_slot;
    CHECK(trk_objects_validate(&r, m, sizeof m) == TRK_EINVAL && strstr(m, "already"));
    /* A file broken on disk: the objects file's error names the class file
     * and the offset. */
    trk_class_file_encode(bits, file);
    file[8] = 7;
    snprintf(q, sizeof q, "%s/red.lut", dir);
    write_bytes(q, file, TRK_CLASS_FILE_BYTES);
    write_bytes(p, (const uint8_t *)text, strlen(text));
    CHECK(trk_objects_load_file(p, &r, &e) == TRK_EINVAL && e.line == 3);
    CHECKF(!strcmp(e.msg, "objects[1].class: red.lut: offset 8: version 7 (this trackd reads "
                          "version 1)"),
           "broken file: %s", e.msg);
    unlink(q);
    CHECK(trk_objects_load_file(p, &r, &e) < 0 && strstr(e.msg, "red.lut: cannot open"));
    snprintf(q, sizeof q, "%s/none.lut", dir);
    unlink(q);
    unlink(p);
    rmdir(dir);
}

static const struct {
    const char *name;
    void (*fn)(void);
} tests[] = {
    { "design_example", test_design_example },
    { "all_spaces", test_all_spaces },
    { "wrap_bom_crlf", test_wrap_bom_crlf },
    { "empty", test_empty },
    { "unicode_names", test_unicode_names },
    { "name_rule", test_name_rule },
    { "example_and_demo", test_example_and_demo },
    { "default_colors", test_default_colors },
    { "max_objects", test_max_objects },
    { "frame_limits", test_frame_limits },
    { "too_large", test_too_large },
    { "failure_leaves_output", test_failure_leaves_output },
    { "error_format", test_error_format },
    { "from_json", test_from_json },
    { "validate", test_validate },
    { "round_trip", test_round_trip },
    { "atomic_save", test_atomic_save },
    { "save_target", test_save_target },
    { "to_json_format", test_to_json_format },
    { "posindex", test_posindex },
    { "demo_objects", test_demo_objects },
    { "camera", test_camera },
    { "camera_edit", test_camera_edit },
    { "blobs", test_blobs },
    { "track", test_track },
    { "prefilter", test_prefilter },
    { "patterns", test_patterns },
    { "classes", test_classes },
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CASE|all [SRCDIR TMPDIR]\n", argv[0]);
        return 2;
    }
    if (argc >= 4) {
        srcdir = argv[2];
        tmpdir = argv[3];
    }
    mkdir(tmpdir, 0755);
    int ran = 0;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (strcmp(argv[1], "all") && strcmp(argv[1], tests[i].name)) continue;
        int before = check_failures;
        tests[i].fn();
        printf("%s: %s\n", tests[i].name, check_failures == before ? "ok" : "FAILED");
        ran++;
    }
    if (!ran) {
        fprintf(stderr, "unknown case %s\n", argv[1]);
        return 2;
    }
    return check_failures ? 1 : 0;
}
