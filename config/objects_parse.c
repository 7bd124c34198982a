/* Objects configuration: a JSON value checked into an object set, all or
 * nothing, each error reported at its path ("objects[3].lo[1]") and, when
 * the value came from a text, at its position there (posindex.c).
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
#include "objects_int.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "color.h"
#include "posindex.h"
#include "prefilter.h"

const char *trk_cfg_type_name(const json_t *v)
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

/* ------------------------------------------------------------ paths */

void trk_cfg_push_key(struct trk_vctx *c, const char *key)
{
    c->path[c->depth].key = key;
    c->path[c->depth].key_len = strlen(key);
    c->path[c->depth].index = -1;
    c->user[c->depth] = false;
    c->depth++;
}

/* A key that is not one of ours (an unknown key, a camera control name). */
void trk_cfg_push_user_key(struct trk_vctx *c, const char *key)
{
    trk_cfg_push_key(c, key);
    c->user[c->depth - 1] = true;
}

void trk_cfg_push_index(struct trk_vctx *c, int i)
{
    c->path[c->depth].key = NULL;
    c->path[c->depth].key_len = 0;
    c->path[c->depth].index = i;
    c->user[c->depth] = false;
    c->depth++;
}

void trk_cfg_pop(struct trk_vctx *c)
{
    c->depth--;
}

/* A string from the text for a message: "quoted" (trk_config_quote's rules), or
 * (not shown) for a quiet load. */
void trk_cfg_user_text(const struct trk_vctx *c, const char *s, size_t len, char *out, size_t n)
{
    if (c->quiet) {
        snprintf(out, n, "(not shown)");
        return;
    }
    char q[64];
    trk_config_quote(s, len, q, sizeof q);
    snprintf(out, n, "\"%s\"", q);
}

/* The current path as text, e.g. "objects[3].lo[1]" ("" at the base). */
const char *trk_cfg_path_text(const struct trk_vctx *c, char *buf, size_t n)
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

static void set_pos(struct trk_vctx *c, int want_key)
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
 * message is printf-formatted; returns TRK_EINVAL for `return trk_cfg_fail(...)`. */
int trk_cfg_fail(struct trk_vctx *c, int want_key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    trk_config_error_vset(c->err, fmt, ap);
    va_end(ap);
    set_pos(c, want_key);
    return TRK_EINVAL;
}

int trk_cfg_fail_duplicate(struct trk_vctx *c, const char *name, const char *list, size_t j)
{
    char p[128], q[TRK_NAME_MAX + 16];
    snprintf(q, sizeof q, c->quiet ? "(not shown)" : "\"%s\"", name);
    trk_cfg_push_key(c, "name");
    int rc = trk_cfg_fail(c, 0, "%s %s is already used by %s[%zu]",
                          trk_cfg_path_text(c, p, sizeof p), q, list, j);
    c->err->kind = TRK_CONFIG_DUPLICATE;
    trk_cfg_pop(c);
    return rc;
}

/* ------------------------------------------------------------ validation */

/* In the order of OBJECTS.md's table (the saver writes them so); the first
 * four are required. */
static const char *const object_keys[] = { "name",         "space",    "lo",           "hi",
                                           "class",        "min_mass", "blobs",        "min_area",
                                           "connectivity", "track",    "coast_frames", "color",
                                           "adapt" };
#define N_OBJECT_KEYS (sizeof object_keys / sizeof object_keys[0])

/* lo or hi at the current path: 3 integers (ranges are checked later,
 * together, by trk_objects_check_box). */
static int parse_triple(struct trk_vctx *c, const json_t *a, long long v[3], char *p, size_t pn)
{
    if (!json_is_array(a))
        return trk_cfg_fail(c, 0, "%s must be an array of 3 integers, not %s",
                            trk_cfg_path_text(c, p, pn), trk_cfg_type_name(a));
    if (json_array_size(a) != 3)
        return trk_cfg_fail(c, 0, "%s must have 3 elements, not %zu", trk_cfg_path_text(c, p, pn),
                            json_array_size(a));
    for (int i = 0; i < 3; i++) {
        const json_t *e = json_array_get(a, (size_t)i);
        trk_cfg_push_index(c, i);
        if (!json_is_integer(e)) {
            int rc = trk_cfg_fail(c, 0, "%s must be an integer, not %s",
                                  trk_cfg_path_text(c, p, pn), trk_cfg_type_name(e));
            trk_cfg_pop(c);
            return rc;
        }
        v[i] = json_integer_value(e);
        trk_cfg_pop(c);
    }
    return 0;
}

/* 0 when v (at the current path) is a string, else records "<path> must be
 * <what>, not <type>". p is scratch for the path text. */
int trk_cfg_want_string(struct trk_vctx *c, const json_t *v, const char *what, char *p, size_t pn)
{
    if (json_is_string(v)) return 0;
    return trk_cfg_fail(c, 0, "%s must be %s, not %s", trk_cfg_path_text(c, p, pn), what,
                        trk_cfg_type_name(v));
}

/* Records "<path> "<v, quoted>" <why>" for the string v at the current path
 * ("(not shown)" instead of the text for a quiet load). */
int trk_cfg_fail_quoted(struct trk_vctx *c, const json_t *v, const char *why, char *p, size_t pn)
{
    char q[72];
    trk_cfg_user_text(c, json_string_value(v), json_string_length(v), q, sizeof q);
    return trk_cfg_fail(c, 0, "%s %s %s", trk_cfg_path_text(c, p, pn), q, why);
}

/* The optional integer key of object o into *v (left alone when absent):
 * lo..hi, or when ends_only exactly lo or hi (connectivity 4 or 8). */
static int opt_int(struct trk_vctx *c, const json_t *o, const char *key, long long lo, long long hi,
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
    trk_cfg_push_key(c, key);
    if (!json_is_integer(j)) {
        rc = trk_cfg_fail(c, 0, "%s must be %s, not %s", trk_cfg_path_text(c, p, sizeof p), what,
                          trk_cfg_type_name(j));
    } else {
        long long x = json_integer_value(j);
        if (x < lo || x > hi || (ends_only && x != lo && x != hi))
            rc = trk_cfg_fail(c, 0, "%s must be %s, not %lld", trk_cfg_path_text(c, p, sizeof p),
                              what, x);
        else
            *v = x;
    }
    trk_cfg_pop(c);
    return rc;
}

/* The keys of the object o at the current path ("here" as text): none
 * unknown (the first in text order is reported), none required missing. */
static int object_keys_ok(struct trk_vctx *c, const json_t *o, const char *here)
{
    /* "objects[3]: missing ..." for a file, "missing ..." for a lone object. */
    const char *sep = here[0] ? ": " : "";
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        size_t i;
        for (i = 0; i < N_OBJECT_KEYS; i++)
            if (strcmp(key, object_keys[i]) == 0) break;
        if (i == N_OBJECT_KEYS) {
            char q[72];
            trk_cfg_user_text(c, key, strlen(key), q, sizeof q);
            trk_cfg_push_user_key(c, key);
            int rc = trk_cfg_fail(
                c, 1,
                "%s%sunknown key %s (expected name, space, lo, hi, class, min_mass, blobs, "
                "min_area, connectivity, track, coast_frames, color or adapt)",
                here, sep, q);
            trk_cfg_pop(c);
            return rc;
        }
    }
    /* name, space, lo, hi are required; a class object ("class") has no box */
    const size_t req = json_object_get(o, "class") ? 1 : 4;
    for (size_t i = 0; i < req; i++)
        if (!json_object_get(o, object_keys[i]))
            return trk_cfg_fail(c, 0, "%s%smissing key \"%s\"", here, sep, object_keys[i]);
    return 0;
}

/* "space" then "name" of the object o at the current path into def. */
static int parse_space_name(struct trk_vctx *c, const json_t *o, const char *here,
                            struct trk_object_def *def)
{
    char p[128], m[200];
    /* space first: the channel ranges depend on it. Each field below is
     * checked with its key on the path, popped whatever the outcome. A
     * class object's space is set already. */
    int space = -1, rc = 0;
    const json_t *v = json_object_get(o, "space");
    if (def->space != TRK_SPACE_CLASS) {
        trk_cfg_push_key(c, "space");
        rc = trk_cfg_want_string(c, v, "a string", p, sizeof p);
        if (!rc) {
            space = trk_objects_space_parse(json_string_value(v));
            if (space < 0 || strlen(json_string_value(v)) != json_string_length(v))
                rc = trk_cfg_fail_quoted(c, v, "is not one of rgb, hsv, ycbcr, lab, rg", p,
                                         sizeof p);
        }
        trk_cfg_pop(c);
        if (rc) return rc;
        def->space = (enum trk_space)space;
    }

    v = json_object_get(o, "name");
    trk_cfg_push_key(c, "name");
    rc = trk_cfg_want_string(c, v, "a string", p, sizeof p);
    /* m starts with "name ...", so the object's path prefixes it. */
    if (!rc && trk_objects_check_text("name", TRK_NAME_MAX, json_string_value(v),
                                      json_string_length(v), m, sizeof m))
        rc = trk_cfg_fail(c, 0, "%s%s%s", here, here[0] ? "." : "", m);
    trk_cfg_pop(c);
    if (rc) return rc;
    memcpy(def->name, json_string_value(v), json_string_length(v));
    return 0;
}

/* "lo" and "hi" of the object o at the current path into def (its space
 * set): types first, then the ranges and lo <= hi, at the value at fault. */
static int parse_box(struct trk_vctx *c, const json_t *o, const char *here,
                     struct trk_object_def *def)
{
    char p[128], m[200];
    long long lo[3], hi[3];
    trk_cfg_push_key(c, "lo");
    int rc = parse_triple(c, json_object_get(o, "lo"), lo, p, sizeof p);
    trk_cfg_pop(c);
    if (rc) return rc;
    trk_cfg_push_key(c, "hi");
    rc = parse_triple(c, json_object_get(o, "hi"), hi, p, sizeof p);
    trk_cfg_pop(c);
    if (rc) return rc;
    int bad = trk_objects_check_box(def->space, lo, hi, m, sizeof m);
    if (bad >= 0) {
        trk_cfg_push_key(c, bad < 3 ? "lo" : "hi");
        trk_cfg_push_index(c, bad % 3);
        rc = trk_cfg_fail(c, 0, "%s%s%s", here, here[0] ? "." : "", m);
        trk_cfg_pop(c);
        trk_cfg_pop(c);
        return rc;
    }
    for (int i = 0; i < 3; i++) {
        def->lo[i] = (uint16_t)lo[i];
        def->hi[i] = (uint16_t)hi[i];
    }
    return 0;
}

/* The optional keys after the box: min_mass, blobs, min_area,
 * connectivity, coast_frames and track, into def (absent: the defaults). */
static int parse_counts(struct trk_vctx *c, const json_t *o, struct trk_object_def *def)
{
    char p[128];
    int rc = 0;
    def->min_mass = 1;
    const json_t *v = json_object_get(o, "min_mass");
    if (v) {
        trk_cfg_push_key(c, "min_mass");
        if (!json_is_integer(v))
            rc = trk_cfg_fail(c, 0, "%s must be an integer >= 1, not %s",
                              trk_cfg_path_text(c, p, sizeof p), trk_cfg_type_name(v));
        else if (json_integer_value(v) < 1)
            rc = trk_cfg_fail(c, 0, "%s must be an integer >= 1, not %lld",
                              trk_cfg_path_text(c, p, sizeof p), (long long)json_integer_value(v));
        else
            def->min_mass = (uint64_t)json_integer_value(v);
        trk_cfg_pop(c);
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
        trk_cfg_push_key(c, "track");
        if (!json_is_boolean(v))
            rc = trk_cfg_fail(c, 0, "%s must be true or false, not %s",
                              trk_cfg_path_text(c, p, sizeof p), trk_cfg_type_name(v));
        else if (json_is_true(v) && !def->blobs)
            rc = trk_cfg_fail(
                c, 0, "%s: true needs \"blobs\" >= 1 (the most instances it follows), not %u",
                trk_cfg_path_text(c, p, sizeof p), def->blobs);
        else
            def->track = json_is_true(v);
        trk_cfg_pop(c);
    }
    return rc;
}

/* Validates the object at the current path into def/color; a class
 * object's file name into file. */
static int parse_object(struct trk_vctx *c, const json_t *o, struct trk_object_def *def,
                        uint8_t color[3], char file[TRK_CLASS_FILE_MAX])
{
    char hb[128], p[128];
    int rc;
    const char *here = trk_cfg_path_text(c, hb, sizeof hb);

    if (!json_is_object(o))
        return trk_cfg_fail(c, 0, "%s must be an object, not %s", here[0] ? here : "the value",
                            trk_cfg_type_name(o));
    if ((rc = object_keys_ok(c, o, here))) return rc;
    memset(def, 0, sizeof *def);
    rc = trk_objects_parse_class_key(c, o, here, def, file);
    if (rc < 0 || (rc = parse_space_name(c, o, here, def)) ||
        (def->space != TRK_SPACE_CLASS && (rc = parse_box(c, o, here, def))) ||
        (rc = parse_counts(c, o, def)))
        return rc;

    const json_t *v = json_object_get(o, "color");
    if (!v) {
        trk_object_display_rgb(def, color);
        return 0;
    }
    trk_cfg_push_key(c, "color");
    rc = trk_cfg_want_string(c, v, "a string \"#rrggbb\"", p, sizeof p);
    if (!rc && parse_color(json_string_value(v), json_string_length(v), color))
        rc = trk_cfg_fail_quoted(c, v, "is not of the form \"#rrggbb\"", p, sizeof p);
    trk_cfg_pop(c);
    return rc;
}

/* Fails with "<path> must be an object, not T" when o (at the current
 * path) is not one, else with "<path>: unknown key K (expected ...)" for
 * its first key that is not in keys[0..n). */
int trk_cfg_only_keys(struct trk_vctx *c, const json_t *o, const char *const *keys, size_t n,
                      const char *expected)
{
    char p[128];
    if (!json_is_object(o))
        return trk_cfg_fail(c, 0, "%s must be an object, not %s", trk_cfg_path_text(c, p, sizeof p),
                            trk_cfg_type_name(o));
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        size_t i;
        for (i = 0; i < n; i++)
            if (!strcmp(key, keys[i])) break;
        if (i < n) continue;
        char q[72];
        trk_cfg_user_text(c, key, strlen(key), q, sizeof q);
        trk_cfg_path_text(c, p, sizeof p);
        trk_cfg_push_user_key(c, key);
        int rc = trk_cfg_fail(c, 1, "%s: unknown key %s (expected %s)", p, q, expected);
        trk_cfg_pop(c);
        return rc;
    }
    return 0;
}

/* Adds control name = value to out's camera list. */
static int add_camera(struct trk_vctx *c, struct trk_objects *out, const char *name,
                      long long value)
{
    char p[128];
    if (out->n_camera >= TRK_CAMERA_MAX_CONTROLS)
        return trk_cfg_fail(c, 1, "%s: too many camera controls (at most %d)",
                            trk_cfg_path_text(c, p, sizeof p), TRK_CAMERA_MAX_CONTROLS);
    if (value < INT32_MIN || value > INT32_MAX)
        return trk_cfg_fail(c, 0, "%s = %lld is out of range for a camera control",
                            trk_cfg_path_text(c, p, sizeof p), value);
    struct trk_camera_control *cc = &out->camera[out->n_camera++];
    snprintf(cc->name, sizeof cc->name, "%s", name);
    cc->value = (long)value;
    return 0;
}

/* "camera": {"exposure_auto": false, "exposure": 100, "gain": 10,
 * "white_balance_auto": false, "white_balance_temperature": 4500,
 * "controls": {"v4l2_name": value, ...}}: automatic modes first so that
 * drivers accept the manual values after them. */
static int parse_camera(struct trk_vctx *c, const json_t *cam, struct trk_objects *out)
{
    /* The file's keys; the first N_SETTINGS are settings, each the V4L2
     * control keys_ctl[i] (a menu or boolean when keys_bool[i]). */
    enum { N_SETTINGS = 5 };
    static const char *const keys[N_SETTINGS + 1] = {
        "exposure_auto", "white_balance_auto",        "exposure",
        "gain",          "white_balance_temperature", "controls"
    };
    static const char *const keys_ctl[N_SETTINGS] = { "auto_exposure", "white_balance_automatic",
                                                      "exposure_time_absolute", "gain",
                                                      "white_balance_temperature" };
    static const bool keys_bool[N_SETTINGS] = { true, true, false, false, false };
    char p[128];
    int rc = 0;
    trk_cfg_push_key(c, "camera");
    if ((rc = trk_cfg_only_keys(c, cam, keys, N_SETTINGS + 1,
                                "exposure_auto, exposure, gain, white_balance_auto, "
                                "white_balance_temperature or controls")))
        goto out;
    const char *key;
    json_t *v;
    for (size_t i = 0; i < N_SETTINGS; i++) {
        v = json_object_get(cam, keys[i]);
        if (!v) continue;
        trk_cfg_push_key(c, keys[i]);
        if (keys_bool[i] && !json_is_boolean(v))
            rc = trk_cfg_fail(c, 0, "%s must be true or false, not %s",
                              trk_cfg_path_text(c, p, sizeof p), trk_cfg_type_name(v));
        else if (!keys_bool[i] && !json_is_integer(v))
            rc = trk_cfg_fail(c, 0, "%s must be an integer, not %s",
                              trk_cfg_path_text(c, p, sizeof p), trk_cfg_type_name(v));
        /* exposure_auto is V4L2's auto_exposure menu: 1 = manual, 3 =
         * aperture priority (the automatic mode UVC webcams offer). */
        else if (keys_bool[i])
            rc = add_camera(c, out, keys_ctl[i],
                            i == 0 ? (json_is_true(v) ? 3 : 1) : json_is_true(v));
        else
            rc = add_camera(c, out, keys_ctl[i], json_integer_value(v));
        trk_cfg_pop(c);
        if (rc) goto out;
    }
    const json_t *ctl = json_object_get(cam, "controls");
    if (ctl) {
        trk_cfg_push_key(c, "controls");
        if (!json_is_object(ctl)) {
            rc = trk_cfg_fail(c, 0, "camera.controls must be an object, not %s",
                              trk_cfg_type_name(ctl));
            trk_cfg_pop(c);
            goto out;
        }
        json_object_foreach((json_t *)ctl, key, v)
        {
            trk_cfg_push_user_key(c, key);
            if (!*key || strlen(key) >= sizeof out->camera[0].name)
                rc = trk_cfg_fail(c, 1, "%s: a control name must have 1..63 bytes",
                                  trk_cfg_path_text(c, p, sizeof p));
            else if (!json_is_integer(v) && !json_is_boolean(v))
                rc = trk_cfg_fail(c, 0, "%s must be an integer or true/false, not %s",
                                  trk_cfg_path_text(c, p, sizeof p), trk_cfg_type_name(v));
            else
                rc = add_camera(c, out, key,
                                json_is_integer(v) ? json_integer_value(v) : json_is_true(v));
            trk_cfg_pop(c);
            if (rc) break;
        }
        trk_cfg_pop(c);
    }
out:
    trk_cfg_pop(c);
    return rc;
}

/* "prefilter": {"gaussian": SIGMA}, SIGMA a number in 0..4 (0 = off). */
static int parse_prefilter(struct trk_vctx *c, const json_t *pf, struct trk_objects *out)
{
    char p[128];
    int rc = 0;
    static const char *const keys[] = { "gaussian" };
    trk_cfg_push_key(c, "prefilter");
    if ((rc = trk_cfg_only_keys(c, pf, keys, 1, "gaussian"))) goto out;
    const json_t *v = json_object_get(pf, "gaussian");
    if (!v) {
        rc = trk_cfg_fail(c, 0, "prefilter: missing key \"gaussian\"");
        goto out;
    }
    trk_cfg_push_key(c, "gaussian");
    if (!json_is_number(v)) {
        rc = trk_cfg_fail(c, 0, "%s must be a number, not %s", trk_cfg_path_text(c, p, sizeof p),
                          trk_cfg_type_name(v));
    } else {
        const double sigma = json_number_value(v);
        if (!(sigma >= 0 && sigma <= TRK_PREFILTER_MAX_SIGMA))
            rc = trk_cfg_fail(c, 0, "%s = %g is out of range 0..%g (pixels; 0 = off)",
                              trk_cfg_path_text(c, p, sizeof p), sigma, TRK_PREFILTER_MAX_SIGMA);
        else
            out->prefilter_sigma = sigma;
    }
    trk_cfg_pop(c);
out:
    trk_cfg_pop(c);
    return rc;
}

/* A JSON number at the current path within +-bound into *v. */
int trk_cfg_want_number(struct trk_vctx *c, const json_t *v, double bound, double *out)
{
    char p[128];
    if (!json_is_number(v))
        return trk_cfg_fail(c, 0, "%s must be a number, not %s", trk_cfg_path_text(c, p, sizeof p),
                            trk_cfg_type_name(v));
    const double x = json_number_value(v);
    if (!(isfinite(x) && fabs(x) <= bound))
        return trk_cfg_fail(c, 0, "%s = %g is out of range -%g..%g",
                            trk_cfg_path_text(c, p, sizeof p), x, bound, bound);
    *out = x;
    return 0;
}

/* An array at the current path of lo..hi numbers within +-bound into v[]. */
int trk_cfg_number_array(struct trk_vctx *c, const json_t *a, size_t lo, size_t hi, double bound,
                         double *v, char *what_n)
{
    char p[128];
    if (!json_is_array(a))
        return trk_cfg_fail(c, 0, "%s must be an array of %s numbers, not %s",
                            trk_cfg_path_text(c, p, sizeof p), what_n, trk_cfg_type_name(a));
    if (json_array_size(a) < lo || json_array_size(a) > hi)
        return trk_cfg_fail(c, 0, "%s must have %s numbers, not %zu",
                            trk_cfg_path_text(c, p, sizeof p), what_n, json_array_size(a));
    for (size_t i = 0; i < json_array_size(a); i++) {
        trk_cfg_push_index(c, (int)i);
        int rc = trk_cfg_want_number(c, json_array_get(a, i), bound, &v[i]);
        trk_cfg_pop(c);
        if (rc) return rc;
    }
    return 0;
}

/* "calibration": {"unit": U, "points": [[px, py, wx, wy], ...],
 * "camera_matrix": {"fx", "fy", "cx", "cy"}, "distortion": [k1, k2, p1,
 * p2(, k3)]}: values first (each at its place), then the geometry
 * (trk_calib_solve), reported at the point or the points array. */
static int parse_calibration(struct trk_vctx *c, const json_t *cal, struct trk_objects *out)
{
    static const char *const keys[] = { "unit", "points", "camera_matrix", "distortion" };
    static const char *const mkeys[] = { "fx", "fy", "cx", "cy" };
    struct trk_calib *k = &out->calib;
    char p[128], m[200];
    int rc = 0;
    trk_cfg_push_key(c, "calibration");
    if ((rc = trk_cfg_only_keys(c, cal, keys, 4, "unit, points, camera_matrix or distortion")))
        goto out;
    for (int i = 0; i < 2; i++)
        if (!json_object_get(cal, keys[i])) {
            rc = trk_cfg_fail(c, 0, "calibration: missing key \"%s\"", keys[i]);
            goto out;
        }
    const json_t *v = json_object_get(cal, "unit");
    trk_cfg_push_key(c, "unit");
    rc = trk_cfg_want_string(c, v, "a string", p, sizeof p);
    if (!rc && trk_objects_check_text("calibration.unit", TRK_CALIB_UNIT_MAX, json_string_value(v),
                                      json_string_length(v), m, sizeof m))
        rc = trk_cfg_fail(c, 0, "%s", m);
    trk_cfg_pop(c);
    if (rc) goto out;
    memcpy(k->unit, json_string_value(v), json_string_length(v));

    const json_t *pts = json_object_get(cal, "points");
    trk_cfg_push_key(c, "points");
    if (!json_is_array(pts)) {
        rc = trk_cfg_fail(c, 0, "calibration.points must be an array of [px, py, wx, wy], not %s",
                          trk_cfg_type_name(pts));
    } else if (json_array_size(pts) < TRK_CALIB_MIN_POINTS ||
               json_array_size(pts) > TRK_CALIB_MAX_POINTS) {
        rc = trk_cfg_fail(c, 0,
                          "calibration.points has %zu point pairs: a homography needs %d..%d (each "
                          "[px, py, wx, wy])",
                          json_array_size(pts), TRK_CALIB_MIN_POINTS, TRK_CALIB_MAX_POINTS);
    }
    for (size_t i = 0; !rc && i < json_array_size(pts); i++) {
        trk_cfg_push_index(c, (int)i);
        double q[4];
        rc = trk_cfg_number_array(c, json_array_get(pts, i), 4, 4, TRK_CALIB_WORLD_MAX, q, "4");
        /* Pixels have a tighter bound than world values. */
        for (int j = 0; !rc && j < 2; j++) {
            if (fabs(q[j]) > TRK_CALIB_PIXEL_MAX) {
                trk_cfg_push_index(c, j);
                rc = trk_cfg_fail(c, 0, "%s = %g is out of range -%g..%g (pixels)",
                                  trk_cfg_path_text(c, p, sizeof p), q[j], TRK_CALIB_PIXEL_MAX,
                                  TRK_CALIB_PIXEL_MAX);
                trk_cfg_pop(c);
            }
        }
        if (!rc) memcpy(k->pt[i], q, sizeof q);
        trk_cfg_pop(c);
    }
    trk_cfg_pop(c);
    if (rc) goto out;
    k->n = (int)json_array_size(pts);

    const json_t *cm = json_object_get(cal, "camera_matrix");
    if (cm) {
        trk_cfg_push_key(c, "camera_matrix");
        if (!json_is_object(cm))
            rc = trk_cfg_fail(
                c, 0, "calibration.camera_matrix must be an object {fx, fy, cx, cy}, not %s",
                trk_cfg_type_name(cm));
        else
            rc = trk_cfg_only_keys(c, cm, mkeys, 4, "fx, fy, cx or cy");
        double mv[4];
        for (int i = 0; !rc && i < 4; i++) {
            const json_t *e = json_object_get(cm, mkeys[i]);
            if (!e) {
                rc = trk_cfg_fail(c, 0, "calibration.camera_matrix: missing key \"%s\"", mkeys[i]);
                break;
            }
            trk_cfg_push_key(c, mkeys[i]);
            rc = trk_cfg_want_number(c, e, TRK_CALIB_LENS_MAX, &mv[i]);
            if (!rc && i < 2 && !(mv[i] > 0))
                rc = trk_cfg_fail(c, 0, "%s must be > 0 (focal length in pixels), not %g",
                                  trk_cfg_path_text(c, p, sizeof p), mv[i]);
            trk_cfg_pop(c);
        }
        trk_cfg_pop(c);
        if (rc) goto out;
        k->lens = true;
        k->fx = mv[0], k->fy = mv[1], k->cx = mv[2], k->cy = mv[3];
    }
    const json_t *dist = json_object_get(cal, "distortion");
    if (dist) {
        trk_cfg_push_key(c, "distortion");
        if (!cm)
            rc =
                trk_cfg_fail(c, 0, "calibration.distortion needs a camera_matrix (fx, fy, cx, cy)");
        else
            rc = trk_cfg_number_array(c, dist, 4, 5, TRK_CALIB_LENS_MAX, k->dist,
                                      "4 or 5 (k1, k2, p1, p2[, k3])");
        trk_cfg_pop(c);
        if (rc) goto out;
        k->n_dist = (int)json_array_size(dist);
    }

    struct trk_calib_fault f;
    if (trk_calib_solve(k, &f)) {
        trk_cfg_push_key(c, "points");
        if (f.point >= 0) trk_cfg_push_index(c, f.point);
        rc = trk_cfg_fail(c, 0, "calibration%s%s", strncmp(f.msg, "points", 6) ? ": " : ".", f.msg);
        if (f.point >= 0) trk_cfg_pop(c);
        trk_cfg_pop(c);
        goto out;
    }
    k->on = true;
out:
    trk_cfg_pop(c);
    return rc;
}

/* The whole document {"objects": [...]} into out (zeroed first). */
static int parse_root(struct trk_vctx *c, const json_t *root, struct trk_objects *out)
{
    int rc;
    memset(out, 0, sizeof *out);
    if (!json_is_object(root))
        return trk_cfg_fail(c, 0, "top level must be an object, not %s", trk_cfg_type_name(root));
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)root, key, v)
    {
        if (strcmp(key, "objects") != 0 && strcmp(key, "camera") != 0 &&
            strcmp(key, "prefilter") != 0 && strcmp(key, "calibration") != 0 &&
            strcmp(key, "patterns") != 0 && strcmp(key, "illumination") != 0) {
            char q[72];
            trk_cfg_user_text(c, key, strlen(key), q, sizeof q);
            trk_cfg_push_user_key(c, key);
            rc = trk_cfg_fail(c, 1,
                              "unknown key %s at top level (expected \"objects\", \"camera\", "
                              "\"prefilter\", \"calibration\", \"patterns\" or "
                              "\"illumination\")",
                              q);
            trk_cfg_pop(c);
            return rc;
        }
    }
    const json_t *arr = json_object_get(root, "objects");
    if (!arr) return trk_cfg_fail(c, 0, "missing key \"objects\"");
    const json_t *cam = json_object_get(root, "camera");
    if (cam && (rc = parse_camera(c, cam, out))) return rc;
    const json_t *pf = json_object_get(root, "prefilter");
    if (pf && (rc = parse_prefilter(c, pf, out))) return rc;
    const json_t *cal = json_object_get(root, "calibration");
    if (cal && (rc = parse_calibration(c, cal, out))) return rc;
    trk_cfg_push_key(c, "objects");
    if (!json_is_array(arr)) {
        rc = trk_cfg_fail(c, 0, "objects must be an array, not %s", trk_cfg_type_name(arr));
        trk_cfg_pop(c);
        return rc;
    }
    size_t n = json_array_size(arr);
    if (n > TRK_MAX_OBJECTS) {
        trk_cfg_push_index(c, TRK_MAX_OBJECTS);
        rc = trk_cfg_fail(c, 0, "too many objects: %zu (at most %d)", n, TRK_MAX_OBJECTS);
        c->err->kind = TRK_CONFIG_TOO_MANY;
        trk_cfg_pop(c);
        trk_cfg_pop(c);
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        trk_cfg_push_index(c, (int)i);
        char file[TRK_CLASS_FILE_MAX];
        rc = parse_object(c, json_array_get(arr, i), &out->def[i], out->color[i], file);
        if (!rc && out->def[i].space == TRK_SPACE_CLASS)
            rc = trk_objects_add_class(c, out, (int)i, file, json_array_get(arr, i));
        if (rc) {
            trk_cfg_pop(c);
            trk_cfg_pop(c);
            return rc;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(out->def[j].name, out->def[i].name) == 0) {
                rc = trk_cfg_fail_duplicate(c, out->def[i].name, "objects", j);
                trk_cfg_pop(c);
                trk_cfg_pop(c);
                return rc;
            }
        }
        trk_cfg_pop(c);
    }
    int at;
    char m[256];
    if (trk_objects_check_limits(out->def, (int)n, &at, m, sizeof m)) {
        /* At the blobs value that goes over, or the object without one. */
        trk_cfg_push_index(c, at);
        if (out->def[at].blobs) trk_cfg_push_key(c, "blobs");
        rc = trk_cfg_fail(c, 0, "%s", m);
        c->err->kind = TRK_CONFIG_TOO_MANY;
        if (out->def[at].blobs) trk_cfg_pop(c);
        trk_cfg_pop(c);
        trk_cfg_pop(c);
        return rc;
    }
    trk_cfg_pop(c);
    out->n = (int)n;
    if ((rc = trk_objects_parse_light(c, root, out))) return rc;
    /* Patterns last: their colours name objects. */
    const json_t *pats = json_object_get(root, "patterns");
    return pats ? trk_objects_parse_patterns(c, pats, out) : 0;
}

/* ------------------------------------------------------------ entry points */

int trk_objects_parse_doc(const json_t *root, const char *text, size_t len, bool quiet,
                          int cls_dirfd, struct trk_objects *out, struct trk_config_error *err)
{
    struct trk_objects *tmp = malloc(sizeof *tmp);
    if (!tmp) {
        /* A text has a place to point at; a value alone has none. */
        trk_config_error_set(err, text ? 1 : 0, text ? 1 : 0, "out of memory");
        return TRK_ENOMEM;
    }
    struct trk_vctx c = { .err = err,
                          .text = text,
                          .len = len,
                          .quiet = quiet,
                          .cls_dir = cls_dirfd >= 0,
                          .cls_dirfd = cls_dirfd };
    int rc = parse_root(&c, root, tmp);
    if (rc == 0) {
        memcpy(out, tmp, sizeof *out);
        trk_objects_bind_classes(out);
    }
    trk_posindex_destroy(&c.ix);
    free(tmp);
    return rc;
}

int trk_objects_from_json(const struct json_t *root, const char *name_for_errors,
                          struct trk_objects *out, struct trk_config_error *err)
{
    struct trk_config_error local;
    if (trk_config_error_begin(&err, &local, name_for_errors, root && out)) return TRK_EINVAL;
    return trk_objects_parse_doc(root, NULL, 0, false, -1, out, err);
}

int trk_objects_parse_object(const struct json_t *obj, struct trk_object_def *def, uint8_t color[3],
                             char *msg, size_t msg_len)
{
    char file[TRK_CLASS_FILE_MAX];
    return trk_objects_parse_object_file(obj, def, color, file, msg, msg_len);
}

int trk_objects_parse_object_file(const struct json_t *obj, struct trk_object_def *def,
                                  uint8_t color[3], char file[TRK_CLASS_FILE_MAX], char *msg,
                                  size_t msg_len)
{
    struct trk_config_error err;
    trk_config_error_init(&err, NULL);
    if (!obj || !def || !color) {
        if (msg && msg_len) snprintf(msg, msg_len, "invalid arguments");
        return TRK_EINVAL;
    }
    struct trk_object_def d;
    uint8_t rgb[3];
    struct trk_vctx c = { .err = &err };
    file[0] = 0;
    int rc = parse_object(&c, obj, &d, rgb, file);
    if (rc) {
        if (msg && msg_len) snprintf(msg, msg_len, "%s", err.msg);
        return rc;
    }
    *def = d;
    memcpy(color, rgb, 3);
    return 0;
}
