/* Objects configuration: the "patterns" section (OBJECTS.md, "Patterns"):
 * markers assembled from the objects' blob lists (daemon/markers.h), each
 * error at its path ("patterns[1].ids[3][2]") and position, as the objects
 * are (objects_parse.c). Parsed after the objects: every colour names one.
 *
 * Checks per pattern, in this order: its type, "kind" (it decides the
 * keys), unknown keys (in text order), missing keys, name, team, height,
 * then the kind's keys in OBJECTS.md's order; duplicate names last. */
#include "objects_int.h"

#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Bounds of the numbers (OBJECTS.md): a marker is a thing a camera sees
 * whole, so offsets and sizes beyond 10 m are typing errors. */
#define MM_MAX        10000.0
#define PX_PER_MM_MAX 1000.0
#define GAP_MAX       10.0

/* Why a colour must have blobs (the file's and set_pattern's message). */
#define NO_BLOBS                                                                                   \
    "has no \"blobs\": markers are assembled from blob lists, so a pattern's "                     \
    "colours need \"blobs\" >= 1"

static const char *const dots_keys[] = { "name",      "kind",      "team",      "height", "center",
                                         "center_mm", "px_per_mm", "tolerance", "dots",   "ids" };
static const char *const code_keys[] = { "name", "kind", "team", "height", "colors", "id", "gap" };
#define N_KEYS(a) (sizeof a / sizeof a[0])

/* A colour at the current path: a string naming an object of the set that
 * has blobs on (dots and centres are found in blob lists, not in the
 * aggregates), as its index. */
static int colour(struct trk_vctx *c, const json_t *v, const struct trk_objects *out, uint16_t *idx)
{
    char p[128], q[72];
    int rc = trk_cfg_want_string(c, v, "an object's name", p, sizeof p);
    if (rc) return rc;
    int k = -1;
    for (int i = 0; i < out->n && k < 0; i++)
        if (strlen(out->def[i].name) == json_string_length(v) &&
            !strcmp(out->def[i].name, json_string_value(v)))
            k = i;
    if (k < 0) return trk_cfg_fail_quoted(c, v, "is not the name of an object", p, sizeof p);
    if (!out->def[k].blobs) {
        trk_cfg_user_text(c, json_string_value(v), json_string_length(v), q, sizeof q);
        return trk_cfg_fail(c, 0, "%s: object %s %s", trk_cfg_path_text(c, p, sizeof p), q,
                            NO_BLOBS);
    }
    *idx = (uint16_t)k;
    return 0;
}

/* An array at the current path of lo..hi colours into idx[]; *n its length. */
static int colour_list(struct trk_vctx *c, const json_t *a, size_t lo, size_t hi,
                       const struct trk_objects *out, uint16_t *idx, unsigned *n)
{
    char p[128];
    if (!json_is_array(a))
        return trk_cfg_fail(c, 0, "%s must be an array of %zu..%zu object names, not %s",
                            trk_cfg_path_text(c, p, sizeof p), lo, hi, trk_cfg_type_name(a));
    size_t k = json_array_size(a);
    if ((k < lo || k > hi) && lo == hi)
        return trk_cfg_fail(c, 0, "%s must have %zu object names (one per dot), not %zu",
                            trk_cfg_path_text(c, p, sizeof p), lo, k);
    if (k < lo || k > hi)
        return trk_cfg_fail(c, 0, "%s must have %zu..%zu object names, not %zu",
                            trk_cfg_path_text(c, p, sizeof p), lo, hi, k);
    for (size_t i = 0; i < k; i++) {
        trk_cfg_push_index(c, (int)i);
        int rc = colour(c, json_array_get(a, i), out, &idx[i]);
        trk_cfg_pop(c);
        if (rc) return rc;
    }
    *n = (unsigned)k;
    return 0;
}

/* The optional number key of o into *v: lo < x <= hi (lo_open) or
 * lo <= x <= hi; what says what it is, for the message. */
static int opt_number(struct trk_vctx *c, const json_t *o, const char *key, double lo, double hi,
                      bool lo_open, const char *what, double *v)
{
    const json_t *j = json_object_get(o, key);
    if (!j) return 0;
    char p[128];
    trk_cfg_push_key(c, key);
    double x = 0;
    int rc = trk_cfg_want_number(c, j, DBL_MAX, &x); /* the range below */
    if (!rc && (lo_open ? !(x > lo) : !(x >= lo)))
        rc = trk_cfg_fail(c, 0, "%s must be %s %g (%s), not %g", trk_cfg_path_text(c, p, sizeof p),
                          lo_open ? ">" : ">=", lo, what, x);
    else if (!rc && x > hi)
        rc = trk_cfg_fail(c, 0, "%s must be <= %g (%s), not %g", trk_cfg_path_text(c, p, sizeof p),
                          hi, what, x);
    if (!rc) *v = x;
    trk_cfg_pop(c);
    return rc;
}

/* "dots": [[x_mm, y_mm], ...], each off the centre. */
static int parse_dots(struct trk_vctx *c, const json_t *a, struct trk_pattern *pt)
{
    char p[128];
    if (!json_is_array(a) || json_array_size(a) < 2 || json_array_size(a) > TRK_PATTERN_DOTS_MAX)
        return trk_cfg_fail(c, 0, "%s must be an array of 2..%d [x_mm, y_mm] offsets",
                            trk_cfg_path_text(c, p, sizeof p), TRK_PATTERN_DOTS_MAX);
    pt->n_dots = (unsigned)json_array_size(a);
    for (unsigned d = 0; d < pt->n_dots; d++) {
        double xy[2];
        trk_cfg_push_index(c, (int)d);
        int rc = trk_cfg_number_array(c, json_array_get(a, d), 2, 2, MM_MAX, xy, "2 (x_mm, y_mm)");
        if (!rc && hypot(xy[0], xy[1]) < 1e-6)
            rc = trk_cfg_fail(c, 0,
                              "%s is at the centre: a dot's offset sets its distance and "
                              "bearing, so it must not be 0",
                              trk_cfg_path_text(c, p, sizeof p));
        trk_cfg_pop(c);
        if (rc) return rc;
        pt->dot_x[d] = xy[0], pt->dot_y[d] = xy[1];
    }
    return 0;
}

/* "ids": [[colour per dot], ...]: id i is entry i; no two alike. */
static int parse_ids(struct trk_vctx *c, const json_t *a, const struct trk_objects *out,
                     struct trk_pattern *pt)
{
    char p[128];
    if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > TRK_PATTERN_IDS_MAX)
        return trk_cfg_fail(c, 0,
                            "%s must be an array of 1..%d ids, each the dots' colours in "
                            "\"dots\" order",
                            trk_cfg_path_text(c, p, sizeof p), TRK_PATTERN_IDS_MAX);
    pt->n_ids = (unsigned)json_array_size(a);
    for (unsigned i = 0; i < pt->n_ids; i++) {
        unsigned k = 0;
        trk_cfg_push_index(c, (int)i);
        int rc =
            colour_list(c, json_array_get(a, i), pt->n_dots, pt->n_dots, out, pt->id_colors[i], &k);
        for (unsigned j = 0; !rc && j < i; j++)
            if (!memcmp(pt->id_colors[j], pt->id_colors[i], pt->n_dots * sizeof(uint16_t)))
                rc = trk_cfg_fail(c, 0, "%s has the same colours as id %u: ids must differ",
                                  trk_cfg_path_text(c, p, sizeof p), j);
        trk_cfg_pop(c);
        if (rc) return rc;
        pt->id[i] = (int32_t)i;
    }
    return 0;
}

/* The centre + dots keys. */
static int parse_dots_pattern(struct trk_vctx *c, const json_t *o, const char *here,
                              const struct trk_objects *out, struct trk_pattern *pt)
{
    static const char *const need[] = { "center", "dots", "ids" };
    for (size_t i = 0; i < N_KEYS(need); i++)
        if (!json_object_get(o, need[i]))
            return trk_cfg_fail(c, 0, "%s: missing key \"%s\"", here, need[i]);
    if (!json_object_get(o, "center_mm") == !json_object_get(o, "px_per_mm"))
        return trk_cfg_fail(c, 0,
                            "%s: give one of \"center_mm\" (the centre's diameter: the scale "
                            "from its area) or \"px_per_mm\" (a fixed scale)",
                            here);
    int rc;
    trk_cfg_push_key(c, "center");
    rc = colour(c, json_object_get(o, "center"), out, &pt->centre);
    trk_cfg_pop(c);
    if (rc || (rc = opt_number(c, o, "center_mm", 0, MM_MAX, true, "mm", &pt->centre_mm)) ||
        (rc = opt_number(c, o, "px_per_mm", 0, PX_PER_MM_MAX, true, "pixels per mm",
                         &pt->px_per_mm)) ||
        (rc = opt_number(c, o, "tolerance", 0, 0.95, true, "a fraction of each dot's distance",
                         &pt->tol)))
        return rc;
    trk_cfg_push_key(c, "dots");
    rc = parse_dots(c, json_object_get(o, "dots"), pt);
    trk_cfg_pop(c);
    if (rc) return rc;
    trk_cfg_push_key(c, "ids");
    rc = parse_ids(c, json_object_get(o, "ids"), out, pt);
    trk_cfg_pop(c);
    return rc;
}

/* The colour code keys. */
static int parse_code_pattern(struct trk_vctx *c, const json_t *o, const char *here,
                              const struct trk_objects *out, struct trk_pattern *pt)
{
    char p[128];
    static const char *const need[] = { "colors", "id" };
    for (size_t i = 0; i < N_KEYS(need); i++)
        if (!json_object_get(o, need[i]))
            return trk_cfg_fail(c, 0, "%s: missing key \"%s\"", here, need[i]);
    trk_cfg_push_key(c, "colors");
    int rc =
        colour_list(c, json_object_get(o, "colors"), 2, TRK_CODE_MAX, out, pt->code, &pt->n_code);
    trk_cfg_pop(c);
    if (rc) return rc;
    const json_t *id = json_object_get(o, "id");
    trk_cfg_push_key(c, "id");
    if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) > INT32_MAX)
        rc = trk_cfg_fail(c, 0, "%s must be an integer 0..%d", trk_cfg_path_text(c, p, sizeof p),
                          INT32_MAX);
    else
        pt->code_id = (int32_t)json_integer_value(id);
    trk_cfg_pop(c);
    if (rc) return rc;
    return opt_number(c, o, "gap", 0, GAP_MAX, true, "times the two blobs' radii", &pt->gap);
}

/* The keys every pattern has, then its kind's. */
static int parse_pattern(struct trk_vctx *c, const json_t *o, const struct trk_objects *out,
                         struct trk_pattern *pt)
{
    char hb[128], p[128], m[200];
    const char *here = trk_cfg_path_text(c, hb, sizeof hb);
    if (!json_is_object(o))
        return trk_cfg_fail(c, 0, "%s must be an object, not %s", here, trk_cfg_type_name(o));
    const json_t *kind = json_object_get(o, "kind");
    if (!kind) return trk_cfg_fail(c, 0, "%s: missing key \"kind\"", here);
    trk_cfg_push_key(c, "kind");
    int rc = trk_cfg_want_string(c, kind, "a string", p, sizeof p);
    bool dots = !rc && !strcmp(json_string_value(kind), "dots");
    if (!rc && !dots && strcmp(json_string_value(kind), "code"))
        rc = trk_cfg_fail_quoted(c, kind, "is not one of dots, code", p, sizeof p);
    trk_cfg_pop(c);
    if (rc) return rc;
    pt->kind = dots ? TRK_PATTERN_DOTS : TRK_PATTERN_CODE;
    if ((rc = dots ? trk_cfg_only_keys(c, o, dots_keys, N_KEYS(dots_keys),
                                       "name, kind, team, height, center, center_mm, "
                                       "px_per_mm, tolerance, dots or ids")
                   : trk_cfg_only_keys(c, o, code_keys, N_KEYS(code_keys),
                                       "name, kind, team, height, colors, id or gap")))
        return rc;
    const json_t *v = json_object_get(o, "name");
    if (!v) return trk_cfg_fail(c, 0, "%s: missing key \"name\"", here);
    trk_cfg_push_key(c, "name");
    rc = trk_cfg_want_string(c, v, "a string", p, sizeof p);
    if (!rc && trk_objects_check_text("name", TRK_NAME_MAX, json_string_value(v),
                                      json_string_length(v), m, sizeof m))
        rc = trk_cfg_fail(c, 0, "%s.%s", here, m);
    trk_cfg_pop(c);
    if (rc) return rc;
    memcpy(pt->name, json_string_value(v), json_string_length(v));
    v = json_object_get(o, "team");
    if (v) {
        trk_cfg_push_key(c, "team");
        rc = trk_cfg_want_string(c, v, "a string", p, sizeof p);
        if (!rc && !strcmp(json_string_value(v), "blue"))
            pt->team = TRK_TEAM_BLUE;
        else if (!rc && !strcmp(json_string_value(v), "yellow"))
            pt->team = TRK_TEAM_YELLOW;
        else if (!rc)
            rc = trk_cfg_fail_quoted(c, v, "is not one of blue, yellow", p, sizeof p);
        trk_cfg_pop(c);
        if (rc) return rc;
    }
    if ((rc = opt_number(c, o, "height", -MM_MAX * 1e3, MM_MAX * 1e3, false,
                         "world units above the calibration's plane", &pt->height)))
        return rc;
    return dots ? parse_dots_pattern(c, o, here, out, pt) : parse_code_pattern(c, o, here, out, pt);
}

int trk_objects_parse_patterns(struct trk_vctx *c, const json_t *arr, struct trk_objects *out)
{
    int rc = 0;
    trk_cfg_push_key(c, "patterns");
    if (!json_is_array(arr)) {
        rc = trk_cfg_fail(c, 0, "patterns must be an array, not %s", trk_cfg_type_name(arr));
    } else if (json_array_size(arr) > TRK_PATTERNS_MAX) {
        trk_cfg_push_index(c, TRK_PATTERNS_MAX);
        rc = trk_cfg_fail(c, 0, "too many patterns: %zu (at most %d)", json_array_size(arr),
                          TRK_PATTERNS_MAX);
        c->err->kind = TRK_CONFIG_TOO_MANY;
        trk_cfg_pop(c);
    }
    for (size_t i = 0; !rc && i < json_array_size(arr); i++) {
        struct trk_pattern *pt = &out->patterns[i];
        memset(pt, 0, sizeof *pt);
        trk_cfg_push_index(c, (int)i);
        rc = parse_pattern(c, json_array_get(arr, i), out, pt);
        for (size_t j = 0; !rc && j < i; j++)
            if (!strcmp(out->patterns[j].name, pt->name))
                rc = trk_cfg_fail_duplicate(c, pt->name, "patterns", j);
        trk_cfg_pop(c);
    }
    trk_cfg_pop(c);
    if (!rc) out->n_patterns = (int)json_array_size(arr);
    return rc;
}

/* Colour k of a pattern must be an object of the set with blobs. */
static bool colour_ok(const struct trk_objects *objs, uint16_t k)
{
    return k < objs->n && objs->def[k].blobs > 0;
}

int trk_objects_check_patterns(const struct trk_objects *objs, char *msg, size_t msg_len)
{
    char m[200];
    if (objs->n_patterns < 0 || objs->n_patterns > TRK_PATTERNS_MAX) {
        snprintf(msg, msg_len, "pattern count %d is out of range 0..%d", objs->n_patterns,
                 TRK_PATTERNS_MAX);
        return TRK_EINVAL;
    }
    for (int i = 0; i < objs->n_patterns; i++) {
        const struct trk_pattern *pt = &objs->patterns[i];
        const char *nul = memchr(pt->name, 0, sizeof pt->name);
        const char *bad = NULL;
        bool ok = true;
        if (!nul || trk_objects_check_text("name", TRK_NAME_MAX, pt->name, (size_t)(nul - pt->name),
                                           m, sizeof m)) {
            snprintf(msg, msg_len, "patterns[%d].%s", i, nul ? m : "name is not NUL-terminated");
            return TRK_EINVAL;
        }
        if (pt->kind == TRK_PATTERN_DOTS) {
            ok = colour_ok(objs, pt->centre);
            bad = ok && (pt->n_dots < 2 || pt->n_dots > TRK_PATTERN_DOTS_MAX || pt->n_ids < 1 ||
                         pt->n_ids > TRK_PATTERN_IDS_MAX)
                      ? "dot or id count"
                      : NULL;
            bad = !bad && ok && !(pt->centre_mm > 0) == !(pt->px_per_mm > 0) ? "scale" : bad;
            for (unsigned k = 0; ok && !bad && k < pt->n_ids * pt->n_dots; k++)
                ok = colour_ok(objs, pt->id_colors[k / pt->n_dots][k % pt->n_dots]);
        } else if (pt->kind == TRK_PATTERN_CODE) {
            bad = pt->n_code < 2 || pt->n_code > TRK_CODE_MAX ? "colour count" : NULL;
            for (unsigned k = 0; !bad && ok && k < pt->n_code; k++)
                ok = colour_ok(objs, pt->code[k]);
        } else {
            bad = "kind";
        }
        if (!ok) bad = "colours (each an object with blobs)";
        if (bad) {
            snprintf(msg, msg_len, "patterns[%d] \"%s\": invalid %s", i, pt->name, bad);
            return TRK_EINVAL;
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(objs->patterns[j].name, pt->name)) {
                snprintf(msg, msg_len, "patterns[%d].name \"%s\" is already used by patterns[%d]",
                         i, pt->name, j);
                return TRK_EINVAL;
            }
    }
    return 0;
}

/* Object k of src as an index of dst's objects (by name), or -1 when dst
 * has no such object or it has no blobs. */
static int remap(const struct trk_objects *dst, const struct trk_objects *src, uint16_t k)
{
    int i = k < src->n ? trk_objects_find(dst, src->def[k].name) : -1;
    return i >= 0 && dst->def[i].blobs ? i : -1;
}

int trk_objects_carry_patterns(struct trk_objects *dst, const struct trk_objects *src, char *why,
                               size_t why_len)
{
    struct trk_pattern p[TRK_PATTERNS_MAX];
    int n = src->n_patterns > 0 && src->n_patterns <= TRK_PATTERNS_MAX ? src->n_patterns : 0;
    for (int i = 0; i < n; i++) {
        p[i] = src->patterns[i];
        uint16_t *k[TRK_PATTERN_IDS_MAX * TRK_PATTERN_DOTS_MAX + 1];
        unsigned nk = 0;
        if (p[i].kind == TRK_PATTERN_CODE) {
            for (unsigned c = 0; c < p[i].n_code && c < TRK_CODE_MAX; c++)
                k[nk++] = &p[i].code[c];
        } else {
            k[nk++] = &p[i].centre;
            for (unsigned id = 0; id < p[i].n_ids && id < TRK_PATTERN_IDS_MAX; id++)
                for (unsigned d = 0; d < p[i].n_dots && d < TRK_PATTERN_DOTS_MAX; d++)
                    k[nk++] = &p[i].id_colors[id][d];
        }
        for (unsigned j = 0; j < nk; j++) {
            int to = remap(dst, src, *k[j]);
            if (to < 0) {
                snprintf(why, why_len,
                         "pattern \"%s\" uses object \"%s\": the set must keep it, with blobs "
                         "(edit the pattern in the objects file first)",
                         p[i].name, *k[j] < src->n ? src->def[*k[j]].name : "?");
                return TRK_EINVAL;
            }
            *k[j] = (uint16_t)to;
        }
    }
    memcpy(dst->patterns, p, (size_t)n * sizeof(p[0]));
    dst->n_patterns = n;
    return 0;
}

unsigned trk_pattern_slots(const struct trk_pattern *pt, uint16_t out[TRK_PATTERN_SLOTS_MAX])
{
    unsigned n = 0;
    if (pt->kind == TRK_PATTERN_CODE) {
        for (; n < pt->n_code && n < TRK_CODE_MAX; n++)
            out[n] = pt->code[n];
        return n;
    }
    for (unsigned id = 0; id < pt->n_ids && id < TRK_PATTERN_IDS_MAX; id++)
        for (unsigned d = 0; d < pt->n_dots && d < TRK_PATTERN_DOTS_MAX; d++) {
            unsigned j = 0;
            while (j < n && out[j] != pt->id_colors[id][d])
                j++;
            if (j == n) out[n++] = pt->id_colors[id][d];
        }
    return n;
}

/* The object called name in o, with blobs, as *idx; else TRK_EINVAL with
 * why (what: where the name was, e.g. "dots[1]"). */
static int named_colour(const struct trk_objects *o, const char *name, const char *what,
                        uint16_t *idx, char *why, size_t why_len)
{
    int k = trk_objects_find(o, name);
    if (k < 0)
        snprintf(why, why_len, "%s: \"%.80s\" is not the name of an object", what, name);
    else if (!o->def[k].blobs)
        snprintf(why, why_len, "%s: object \"%s\" %s", what, o->def[k].name, NO_BLOBS);
    else
        *idx = (uint16_t)k;
    return k >= 0 && o->def[k].blobs ? 0 : TRK_EINVAL;
}

int trk_objects_set_pattern(struct trk_objects *o, int k, const char *centre,
                            const char *const *names, unsigned n, const char *key, char *why,
                            size_t why_len)
{
    if (k < 0 || k >= o->n_patterns) {
        snprintf(why, why_len, "no pattern %d (%d patterns)", k, o->n_patterns);
        return TRK_EINVAL;
    }
    struct trk_pattern pt = o->patterns[k];
    uint16_t old[TRK_PATTERN_SLOTS_MAX], now[TRK_PATTERN_SLOTS_MAX];
    unsigned slots = trk_pattern_slots(&pt, old);
    char what[48];
    if (centre && pt.kind != TRK_PATTERN_DOTS) {
        snprintf(why, why_len, "pattern \"%s\" is a colour code: it has no centre", pt.name);
        return TRK_EINVAL;
    }
    if (centre && named_colour(o, centre, "center", &pt.centre, why, why_len)) return TRK_EINVAL;
    if (names && n != slots) {
        snprintf(why, why_len, "%s must have %u object names (pattern \"%s\"'s colours), not %u",
                 key, slots, pt.name, n);
        return TRK_EINVAL;
    }
    for (unsigned i = 0; names && i < n; i++) {
        snprintf(what, sizeof what, "%s[%u]", key, i);
        if (named_colour(o, names[i], what, &now[i], why, why_len)) return TRK_EINVAL;
    }
    if (names && pt.kind == TRK_PATTERN_CODE) memcpy(pt.code, now, n * sizeof now[0]);
    for (unsigned id = 0; names && pt.kind == TRK_PATTERN_DOTS && id < pt.n_ids; id++)
        for (unsigned d = 0; d < pt.n_dots; d++) {
            unsigned j = 0;
            while (j + 1 < n && old[j] != pt.id_colors[id][d])
                j++;
            pt.id_colors[id][d] = now[j];
        }
    for (unsigned i = 0; pt.kind == TRK_PATTERN_DOTS && i < pt.n_ids; i++)
        for (unsigned j = 0; j < i; j++)
            if (!memcmp(pt.id_colors[j], pt.id_colors[i], pt.n_dots * sizeof(uint16_t))) {
                snprintf(why, why_len,
                         "%s: ids %u and %u of pattern \"%s\" would have the same colours: ids "
                         "must differ",
                         key, j, i, pt.name);
                return TRK_EINVAL;
            }
    o->patterns[k] = pt;
    return 0;
}
