/* Objects configuration: the light keys (objects_light.h, OBJECTS.md
 * "Light"): "illumination" at the top level and "adapt" in an object,
 * parsed after the objects (an adapt's bounds depend on the object's
 * space), checked for sets built in code, written back by the file writer. */
#include "objects_int.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "color.h"
#include "trk_buf.h"

/* Largest rectangle coordinate: the largest frame trackd takes. */
#define RECT_MAX 16384

static const char *const ref_names[] = {
    [TRK_ILLUM_PATCH] = "patch", [TRK_ILLUM_GREY_WORLD] = "grey-world"
};

/* n integers lo..hi[i] at the current path (an array) into v. */
static int int_array(struct trk_vctx *c, const json_t *a, size_t n, const int *lo, const int *hi,
                     const char *what, int *v)
{
    char p[128];
    double d[4];
    int rc = trk_cfg_number_array(c, a, n, n, 1e9, d, (char *)what);
    for (size_t i = 0; !rc && i < n; i++) {
        trk_cfg_push_index(c, (int)i);
        if (d[i] != floor(d[i]) || d[i] < lo[i] || d[i] > hi[i])
            rc = trk_cfg_fail(c, 0, "%s = %g must be an integer in %d..%d",
                              trk_cfg_path_text(c, p, sizeof p), d[i], lo[i], hi[i]);
        else
            v[i] = (int)d[i];
        trk_cfg_pop(c);
    }
    return rc;
}

static int parse_illum(struct trk_vctx *c, const json_t *o, struct trk_illum_cfg *il)
{
    static const char *const keys[] = { "reference", "rect", "means" };
    char p[128];
    int rc = trk_cfg_only_keys(c, o, keys, 3, "reference, rect or means");
    if (rc) return rc;
    const json_t *v = json_object_get(o, "reference");
    if (!v) return trk_cfg_fail(c, 0, "illumination: missing key \"reference\"");
    trk_cfg_push_key(c, "reference");
    rc = trk_cfg_want_string(c, v, "a string", p, sizeof p);
    if (!rc) {
        const char *s = json_string_value(v);
        il->reference = !strcmp(s, "patch")        ? TRK_ILLUM_PATCH
                        : !strcmp(s, "grey-world") ? TRK_ILLUM_GREY_WORLD
                                                   : TRK_ILLUM_OFF;
        if (il->reference == TRK_ILLUM_OFF)
            rc = trk_cfg_fail_quoted(c, v, "is not \"patch\" or \"grey-world\"", p, sizeof p);
    }
    trk_cfg_pop(c);
    if (rc) return rc;
    if ((v = json_object_get(o, "rect"))) {
        static const int lo[4] = { 0, 0, 1, 1 },
                         hi[4] = { RECT_MAX - 1, RECT_MAX - 1, RECT_MAX, RECT_MAX };
        int r[4];
        trk_cfg_push_key(c, "rect");
        rc = int_array(c, v, 4, lo, hi, "4 (x, y, w, h)", r);
        trk_cfg_pop(c);
        if (rc) return rc;
        il->has_rect = true;
        memcpy(il->rect, r, sizeof r);
    } else if (il->reference == TRK_ILLUM_PATCH) {
        return trk_cfg_fail(c, 0, "illumination: a \"patch\" reference needs \"rect\"");
    }
    if ((v = json_object_get(o, "means"))) {
        double m[3];
        trk_cfg_push_key(c, "means");
        rc = trk_cfg_number_array(c, v, 3, 3, 1e9, m, "3 (R, G, B)");
        for (int i = 0; !rc && i < 3; i++) {
            trk_cfg_push_index(c, i);
            if (!(m[i] >= 1 && m[i] <= 255))
                rc = trk_cfg_fail(c, 0, "%s = %g is out of range 1..255",
                                  trk_cfg_path_text(c, p, sizeof p), m[i]);
            il->means_q8[i] = (uint32_t)lrint(m[i] * 256);
            trk_cfg_pop(c);
        }
        trk_cfg_pop(c);
        if (rc) return rc;
        il->has_means = true;
    }
    return 0;
}

static int parse_adapt(struct trk_vctx *c, const json_t *o, enum trk_space space,
                       struct trk_adapt_cfg *a)
{
    static const char *const keys[] = { "max_drift", "rate", "ring" };
    int rc = trk_cfg_only_keys(c, o, keys, 3, "max_drift, rate or ring");
    if (rc) return rc;
    int lo[3] = { 0, 0, 0 }, hi[3], v[3];
    for (int i = 0; i < 3; i++) {
        hi[i] = trk_chan_max((int)space, i);
        a->max_drift[i] = space == TRK_SPACE_HSV && i == 0 ? TRK_ADAPT_HUE_DRIFT_DEFAULT
                                                           : TRK_ADAPT_DRIFT_DEFAULT;
        a->rate[i] = TRK_ADAPT_RATE_DEFAULT;
    }
    hi[0] = space == TRK_SPACE_HSV ? TRK_HUE_VALUES / 2 : hi[0];
    a->ring_permille = (uint16_t)lrint(TRK_ADAPT_RING_DEFAULT * 1000);
    const char *names[2] = { "max_drift", "rate" };
    uint16_t *dst[2] = { a->max_drift, a->rate };
    for (int k = 0; k < 2; k++) {
        const json_t *x = json_object_get(o, names[k]);
        if (!x) continue;
        trk_cfg_push_key(c, names[k]);
        rc = int_array(c, x, 3, lo, hi, "3 (one per channel)", v);
        trk_cfg_pop(c);
        if (rc) return rc;
        for (int i = 0; i < 3; i++)
            dst[k][i] = (uint16_t)v[i];
    }
    const json_t *x = json_object_get(o, "ring");
    if (x) {
        char p[128];
        double share;
        trk_cfg_push_key(c, "ring");
        rc = trk_cfg_want_number(c, x, 1e9, &share);
        if (!rc && !(share >= 0 && share <= 1))
            rc = trk_cfg_fail(c, 0, "%s = %g is out of range 0..1 (a share of the ring's pixels)",
                              trk_cfg_path_text(c, p, sizeof p), share);
        trk_cfg_pop(c);
        if (rc) return rc;
        a->ring_permille = (uint16_t)lrint(share * 1000);
    }
    a->on = true;
    return 0;
}

int trk_objects_parse_light(struct trk_vctx *c, const json_t *root, struct trk_objects *out)
{
    int rc = 0;
    const json_t *il = json_object_get(root, "illumination");
    if (il) {
        trk_cfg_push_key(c, "illumination");
        rc = parse_illum(c, il, &out->light.illum);
        trk_cfg_pop(c);
        if (rc) return rc;
    }
    const json_t *arr = json_object_get(root, "objects");
    for (int i = 0; i < out->n; i++) {
        const json_t *a = json_object_get(json_array_get(arr, (size_t)i), "adapt");
        if (!a) continue;
        trk_cfg_push_key(c, "objects");
        trk_cfg_push_index(c, i);
        trk_cfg_push_key(c, "adapt");
        rc = out->def[i].space == TRK_SPACE_CLASS
                 ? trk_cfg_fail(c, 1, "objects[%d].adapt: a class object has no box to adapt", i)
                 : parse_adapt(c, a, out->def[i].space, &out->light.adapt[i]);
        trk_cfg_pop(c);
        trk_cfg_pop(c);
        trk_cfg_pop(c);
        if (rc) return rc;
    }
    return 0;
}

int trk_objects_check_light(const struct trk_objects *objs, char *msg, size_t msg_len)
{
    const struct trk_illum_cfg *il = &objs->light.illum;
    if ((unsigned)il->reference > TRK_ILLUM_GREY_WORLD ||
        (il->reference == TRK_ILLUM_PATCH && !il->has_rect) ||
        (il->has_rect && (il->rect[0] < 0 || il->rect[1] < 0 || il->rect[2] < 1 ||
                          il->rect[3] < 1 || il->rect[0] >= RECT_MAX || il->rect[1] >= RECT_MAX ||
                          il->rect[2] > RECT_MAX || il->rect[3] > RECT_MAX))) {
        snprintf(msg, msg_len, "illumination: invalid reference or rect");
        return TRK_EINVAL;
    }
    for (int c = 0; il->has_means && c < 3; c++) {
        if (il->means_q8[c] < 256 || il->means_q8[c] > 255 * 256) {
            snprintf(msg, msg_len, "illumination.means[%d] is out of range 1..255", c);
            return TRK_EINVAL;
        }
    }
    for (int i = 0; i < objs->n; i++) {
        const struct trk_adapt_cfg *a = &objs->light.adapt[i];
        if (a->on && objs->def[i].space == TRK_SPACE_CLASS) {
            snprintf(msg, msg_len, "objects[%d].adapt: a class object has no box to adapt", i);
            return TRK_EINVAL;
        }
        for (int c = 0; a->on && c < 3; c++) {
            const int hi = objs->def[i].space == TRK_SPACE_HSV && c == 0
                               ? TRK_HUE_VALUES / 2
                               : trk_chan_max((int)objs->def[i].space, c);
            if (a->max_drift[c] > hi || a->rate[c] > hi || a->ring_permille > 1000) {
                snprintf(msg, msg_len, "objects[%d].adapt: a value is out of range", i);
                return TRK_EINVAL;
            }
        }
    }
    return 0;
}

void trk_objects_write_adapt(struct trk_buf *b, const struct trk_objects *objs, int i)
{
    const struct trk_adapt_cfg *a = &objs->light.adapt[i];
    if (!a->on) return;
    trk_buf_printf(b,
                   ", \"adapt\": {\"max_drift\": [%u, %u, %u], \"rate\": [%u, %u, %u], "
                   "\"ring\": %g}",
                   a->max_drift[0], a->max_drift[1], a->max_drift[2], a->rate[0], a->rate[1],
                   a->rate[2], a->ring_permille / 1000.0);
}

void trk_objects_write_illum(struct trk_buf *b, const struct trk_objects *objs)
{
    const struct trk_illum_cfg *il = &objs->light.illum;
    if (il->reference == TRK_ILLUM_OFF) return;
    trk_buf_printf(b, ",\n  \"illumination\": {\"reference\": \"%s\"", ref_names[il->reference]);
    if (il->has_rect)
        trk_buf_printf(b, ", \"rect\": [%d, %d, %d, %d]", il->rect[0], il->rect[1], il->rect[2],
                       il->rect[3]);
    /* Q8 values have 8 binary places: %.8g of value / 256 reads back exact. */
    if (il->has_means)
        trk_buf_printf(b, ", \"means\": [%.8g, %.8g, %.8g]", il->means_q8[0] / 256.0,
                       il->means_q8[1] / 256.0, il->means_q8[2] / 256.0);
    trk_buf_printf(b, "}");
}
