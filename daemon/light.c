/* Ranges that follow the light: illumination compensation and adaptive
 * ranges (light.h says the rules). */
#include "light.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "color.h"
#include "log.h"
#include "ops/metrics.h"
#include "trk_clock.h"

#define LOG_TAG "light"

#define Q16       65536
#define GAIN_MIN  (Q16 / 8)
#define GAIN_MAX  (Q16 * 8)
#define GRID      3  /* grid points per channel of a box (light.h) */
#define HUE_MIN_S 48 /* grid points that tell a hue */
/* Samples per frame, bounding the module's cost (light.h): the reference,
 * each adapted object's pixels (shared by its blobs), each blob's ring. */
#define REF_SAMPLES     1024
#define ADAPT_SAMPLES   256
#define RING_SAMPLES    64
#define ADAPT_PER_FRAME 2    /* adapted objects updated per frame, in turn */
#define GAIN_QUANTUM    256  /* gains in steps of 1/256: noise does not move boxes */
#define RAIL_LOG_S      10.0 /* a rail warning per object at most this often */

struct light_obj {
    bool on;              /* adapt on */
    bool have_ref;        /* ref_mean holds the first frame's means */
    int ref_mean[3];      /* the first frame's means of its pixels */
    uint32_t ref_gain[3]; /* the gains then (Q16) */
    int slot;             /* its turn among the adapted objects */
    int drift[3];         /* adaptation's offset */
    struct trk_light_state st;
    double rail_logged; /* monotonic s of the last warning, 0 = none */
};

struct trk_light {
    int n;
    struct trk_illum_cfg illum;
    bool have_ref;
    uint32_t ref_q8[3];
    uint32_t gain[3];
    int ci; /* the last frame's colour coefficients (trk_coef_index) */
    struct trk_object_def taught[TRK_MAX_OBJECTS];
    struct trk_object_def comp[TRK_MAX_OBJECTS]; /* taught, compensated */
    struct trk_object_def cur[TRK_MAX_OBJECTS];  /* comp + drift: the backend's */
    struct trk_adapt_cfg adapt[TRK_MAX_OBJECTS];
    struct light_obj o[TRK_MAX_OBJECTS];
    bool any_adapt;
    int n_adapt;     /* adapted objects; o[i].slot numbers them */
    uint64_t frames; /* updates since the reset: whose turn it is */
};

int trk_light_create(struct trk_light **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : TRK_ENOMEM;
}

void trk_light_destroy(struct trk_light **l)
{
    if (!l) return;
    free(*l);
    *l = NULL;
}

void trk_light_reset(struct trk_light *l, const struct trk_objects *set, int n)
{
    l->n = n;
    l->illum = set->light.illum;
    l->have_ref = set->light.illum.has_means;
    memcpy(l->ref_q8, set->light.illum.means_q8, sizeof l->ref_q8);
    l->gain[0] = l->gain[1] = l->gain[2] = Q16;
    l->any_adapt = false;
    l->n_adapt = 0;
    l->frames = 0;
    for (int i = 0; i < n; i++) {
        l->taught[i] = l->comp[i] = l->cur[i] = set->def[i];
        l->adapt[i] = set->light.adapt[i];
        l->any_adapt |= l->adapt[i].on;
        l->o[i] = (struct light_obj){ .on = l->adapt[i].on, .slot = l->n_adapt };
        l->n_adapt += l->adapt[i].on;
        memcpy(l->o[i].st.lo, set->def[i].lo, sizeof l->o[i].st.lo);
        memcpy(l->o[i].st.hi, set->def[i].hi, sizeof l->o[i].st.hi);
    }
}

void trk_light_reset_object(struct trk_light *l, int i)
{
    if (i < 0 || i >= l->n) return;
    struct light_obj *o = &l->o[i];
    memset(o->drift, 0, sizeof o->drift);
    o->have_ref = false;
    o->st.rail = false;
}

bool trk_light_on(const struct trk_light *l)
{
    return l->n > 0 && (l->illum.reference != TRK_ILLUM_OFF || l->any_adapt);
}

/* ------------------------------------------------------------ measuring */

/* Clips rectangle x, y, w, h to the frame into x0..x1, y0..y1 (exclusive
 * ends); false when nothing is left. */
static bool clip_rect(const struct trk_image *img, int x, int y, int w, int h, int *x0, int *y0,
                      int *x1, int *y1)
{
    *x0 = x < 0 ? 0 : x;
    *y0 = y < 0 ? 0 : y;
    *x1 = x + w > img->width ? img->width : x + w;
    *y1 = y + h > img->height ? img->height : y + h;
    return *x0 < *x1 && *y0 < *y1;
}

/* The grid step that samples a w x h area at about most points. */
static int grid_step(int64_t w, int64_t h, int64_t most)
{
    int step = 1;
    while (w * h > most * step * step)
        step++;
    return step;
}

/* Pixel (x, y) of img in object space `space` (coefficients ci): packed RGB
 * formats read directly, the others as every single-pixel reader does
 * (trk_image_pixel_space gives the same values). */
static void pixel_in(const struct trk_image *img, int x, int y, int space, int ci, int c[3])
{
    const int fmt = img->fmt;
    if (fmt != TRK_FMT_RGB24 && fmt != TRK_FMT_RGBA && fmt != TRK_FMT_BGR24 &&
        fmt != TRK_FMT_BGRA) {
        trk_image_pixel_space(img, x, y, space, c);
        return;
    }
    const int bpp = fmt == TRK_FMT_RGB24 || fmt == TRK_FMT_BGR24 ? 3 : 4;
    const uint8_t *p = img->plane[0] + (size_t)y * img->pitch[0] + (size_t)x * (size_t)bpp;
    const bool bgr = fmt == TRK_FMT_BGR24 || fmt == TRK_FMT_BGRA;
    const uint8_t rgb[3] = { p[bgr ? 2 : 0], p[1], p[bgr ? 0 : 2] };
    if (space == TRK_SPACE_RGB) {
        c[0] = rgb[0], c[1] = rgb[1], c[2] = rgb[2];
        return;
    }
    trk_rgb_to_space(&trk_rgb2ycc_coefs[ci], space, rgb, c);
}

/* The reference's means (Q8) on img, on a grid of at most about
 * REF_SAMPLES points; false when its rectangle is outside. */
static bool measure_means(const struct trk_illum_cfg *il, const struct trk_image *img, int ci,
                          uint32_t q8[3])
{
    int x0, y0, x1, y1;
    const int32_t *r = il->rect;
    if (!(il->has_rect ? clip_rect(img, r[0], r[1], r[2], r[3], &x0, &y0, &x1, &y1)
                       : clip_rect(img, 0, 0, img->width, img->height, &x0, &y0, &x1, &y1)))
        return false;
    const int step = grid_step(x1 - x0, y1 - y0, REF_SAMPLES);
    uint64_t sum[3] = { 0, 0, 0 }, n = 0;
    for (int y = y0; y < y1; y += step)
        for (int x = x0; x < x1; x += step) {
            int v[3];
            pixel_in(img, x, y, TRK_SPACE_RGB, ci, v);
            sum[0] += (uint64_t)v[0], sum[1] += (uint64_t)v[1], sum[2] += (uint64_t)v[2];
            n++;
        }
    for (int c = 0; c < 3; c++) {
        q8[c] = (uint32_t)((sum[c] * 256 + n / 2) / n);
        if (q8[c] == 0) q8[c] = 1; /* a black reference: gain floor, not a division by 0 */
    }
    return true;
}

/* ---------------------------------------------------------- compensation */

/* v scaled by Q16 gain g: floor or ceiling, kept at the channel's ends. */
static uint16_t scale_bound(int v, uint32_t g, bool ceil_it)
{
    if (v == 0 || v == 255) return (uint16_t)v;
    uint64_t s = ((uint64_t)v * g + (ceil_it ? Q16 - 1 : 0)) >> 16;
    return (uint16_t)(s > 255 ? 255 : s);
}

/* Hue h as an offset from centre, -179..180. */
static int hue_off(int h, int centre)
{
    int d = trk_hue_wrap(h - centre);
    return d > TRK_HUE_VALUES / 2 ? d - TRK_HUE_VALUES : d;
}

/* Channel value k of GRID between lo and hi (hue: along the wrapped range). */
static int grid_value(const struct trk_object_def *d, int c, int k)
{
    const bool hue = d->space == TRK_SPACE_HSV && c == 0;
    int lo = d->lo[c], hi = d->hi[c];
    if (hue && lo > hi) hi += TRK_HUE_VALUES;
    const int v = lo + (hi - lo) * k / (GRID - 1);
    return hue ? trk_hue_wrap(v) : v;
}

/* A box colour in RGB, scaled by g, in the box's space again; true when a
 * scaled channel went past 255 (clipped: the colour says nothing then). */
static bool through_rgb(const struct trk_object_def *d, const int v[3], const uint32_t g[3], int ci,
                        int out[3])
{
    uint8_t rgb[3];
    bool clipped = false;
    if (d->space == TRK_SPACE_HSV)
        trk_hsv_to_rgb(v[0], v[1], v[2], rgb);
    else
        trk_yuv_to_rgb(&trk_yuv2rgb_coefs[ci], v[0], v[1], v[2], &rgb[0], &rgb[1], &rgb[2]);
    for (int c = 0; c < 3; c++) {
        uint64_t s = ((uint64_t)rgb[c] * g[c] + Q16 / 2) >> 16;
        clipped |= s > 255;
        rgb[c] = (uint8_t)(s > 255 ? 255 : s);
    }
    trk_rgb_to_space(&trk_rgb2ycc_coefs[ci], (int)d->space, rgb, out);
    return clipped;
}

/* hsv and ycbcr: the box moved as its grid moves (light.h). */
static void compensate_grid(const struct trk_object_def *t, const uint32_t g[3], int ci,
                            struct trk_object_def *out)
{
    static const uint32_t unit[3] = { Q16, Q16, Q16 };
    const bool hsv = t->space == TRK_SPACE_HSV;
    const int hc = hsv ? trk_hue_centre(t->lo[0], t->hi[0]) : 0;
    const int s_min = hsv && t->hi[1] >= HUE_MIN_S ? HUE_MIN_S : 0;
    int mn[2][3], mx[2][3];
    for (int k = 0; k < 2; k++)
        for (int c = 0; c < 3; c++)
            mn[k][c] = 1 << 20, mx[k][c] = -(1 << 20);
    for (int a = 0; a < GRID; a++)
        for (int b = 0; b < GRID; b++)
            for (int e = 0; e < GRID; e++) {
                const int v[3] = { grid_value(t, 0, a), grid_value(t, 1, b), grid_value(t, 2, e) };
                int wg[3];
                /* A point the gains push past 255 is left out of both passes. */
                if (through_rgb(t, v, g, ci, wg)) continue;
                for (int k = 0; k < 2; k++) {
                    int w[3];
                    if (k)
                        memcpy(w, wg, sizeof w);
                    else
                        through_rgb(t, v, unit, ci, w);
                    for (int c = 0; c < 3; c++) {
                        if (hsv && c == 0) {
                            if (v[1] < s_min) continue;
                            w[0] = hue_off(w[0], hc);
                        }
                        mn[k][c] = w[c] < mn[k][c] ? w[c] : mn[k][c];
                        mx[k][c] = w[c] > mx[k][c] ? w[c] : mx[k][c];
                    }
                }
            }
    *out = *t;
    for (int c = 0; c < 3; c++) {
        if (mn[0][c] > mx[0][c]) continue; /* no point left: the taught bounds */
        const int lo = t->lo[c] + mn[1][c] - mn[0][c], hi = t->hi[c] + mx[1][c] - mx[0][c];
        if (hsv && c == 0) {
            const int span = trk_hue_wrap(t->hi[0] - t->lo[0]) + (hi - t->hi[0]) - (lo - t->lo[0]);
            out->lo[0] = (uint16_t)(span >= TRK_HUE_VALUES - 1 ? 0 : trk_hue_wrap(lo));
            out->hi[0] =
                (uint16_t)(span >= TRK_HUE_VALUES - 1 ? TRK_HUE_VALUES - 1 : trk_hue_wrap(hi));
            continue;
        }
        out->lo[c] = (uint16_t)(t->lo[c] == 0 ? 0 : lo < 0 ? 0 : lo > 255 ? 255 : lo);
        out->hi[c] = (uint16_t)(t->hi[c] == 255 ? 255 : hi < 0 ? 0 : hi > 255 ? 255 : hi);
        if (out->lo[c] > out->hi[c]) out->lo[c] = out->hi[c];
    }
}

static void compensate(struct trk_light *l, int ci)
{
    for (int i = 0; i < l->n; i++) {
        const struct trk_object_def *t = &l->taught[i];
        if (t->space == TRK_SPACE_CLASS) { /* painted: no box to move */
            l->comp[i] = *t;
            continue;
        }
        if (t->space != TRK_SPACE_RGB) {
            compensate_grid(t, l->gain, ci, &l->comp[i]);
            continue;
        }
        l->comp[i] = *t;
        for (int c = 0; c < 3; c++) {
            l->comp[i].lo[c] = scale_bound(t->lo[c], l->gain[c], false);
            l->comp[i].hi[c] = scale_bound(t->hi[c], l->gain[c], true);
        }
    }
}

/* ------------------------------------------------------------ adaptation */

/* def's box moved by off[3] (hue wraps, other channels stay within
 * 0..255, the box's width kept where it can be). */
static void shifted(const struct trk_object_def *d, const int off[3], struct trk_object_def *out)
{
    *out = *d;
    for (int c = 0; c < 3; c++) {
        if (d->space == TRK_SPACE_HSV && c == 0) {
            const bool full = d->lo[0] == 0 && d->hi[0] == TRK_HUE_VALUES - 1;
            if (!full) {
                out->lo[0] = (uint16_t)trk_hue_wrap(d->lo[0] + off[0]);
                out->hi[0] = (uint16_t)trk_hue_wrap(d->hi[0] + off[0]);
            }
            continue;
        }
        int lo = d->lo[c] + off[c], hi = d->hi[c] + off[c];
        out->lo[c] = (uint16_t)(lo < 0 ? 0 : lo > 255 ? 255 : lo);
        out->hi[c] = (uint16_t)(hi < 0 ? 0 : hi > 255 ? 255 : hi);
    }
}

/* The box widened by w[3] on both sides (hue: at most the full circle). */
static void widened(const struct trk_object_def *d, const uint16_t w[3], struct trk_object_def *out)
{
    *out = *d;
    for (int c = 0; c < 3; c++) {
        if (d->space == TRK_SPACE_HSV && c == 0) {
            const int span = trk_hue_wrap(d->hi[0] - d->lo[0]) + 2 * w[0];
            out->lo[0] = (uint16_t)(span >= TRK_HUE_VALUES - 1 ? 0 : trk_hue_wrap(d->lo[0] - w[0]));
            out->hi[0] = (uint16_t)(span >= TRK_HUE_VALUES - 1 ? TRK_HUE_VALUES - 1
                                                               : trk_hue_wrap(d->hi[0] + w[0]));
            continue;
        }
        const int lo = d->lo[c] - w[c], hi = d->hi[c] + w[c];
        out->lo[c] = (uint16_t)(lo < 0 ? 0 : lo);
        out->hi[c] = (uint16_t)(hi > 255 ? 255 : hi);
    }
}

static bool matches(const struct trk_object_def *d, const int v[3])
{
    return trk_box_match(d->lo, d->hi, d->space == TRK_SPACE_HSV, v[0], v[1], v[2]) != 0;
}

/* What an object's pixels say this frame. */
struct gather {
    int64_t sum[3];
    int64_t n;
    int64_t ring_n, ring_hit; /* ring pixels, those the proposed box takes */
};

/* The grown box of blob b (half its size each side) into r[4] (x0, y0, x1,
 * y1 inclusive, may lie outside the frame). */
static void grown_box(const struct trk_blob *b, int r[4])
{
    const int gx = (b->x1 - b->x0 + 2) / 2, gy = (b->y1 - b->y0 + 2) / 2;
    r[0] = b->x0 - gx, r[1] = b->y0 - gy, r[2] = b->x1 + gx, r[3] = b->y1 + gy;
}

/* Pixels of the grown box r that the guard box takes, on a grid of at
 * most about `most` points: their sums (hue around centre[0]). */
static void gather_inside(const struct trk_image *img, const struct trk_object_def *guard, int ci,
                          const int centre[3], const int r[4], int most, struct gather *g)
{
    int x0, y0, x1, y1;
    if (!clip_rect(img, r[0], r[1], r[2] - r[0] + 1, r[3] - r[1] + 1, &x0, &y0, &x1, &y1)) return;
    const int step = grid_step(x1 - x0, y1 - y0, most);
    for (int y = y0; y < y1; y += step)
        for (int x = x0; x < x1; x += step) {
            int v[3];
            pixel_in(img, x, y, (int)guard->space, ci, v);
            if (!matches(guard, v)) continue;
            if (guard->space == TRK_SPACE_HSV) v[0] = hue_off(v[0], centre[0]);
            g->sum[0] += v[0], g->sum[1] += v[1], g->sum[2] += v[2];
            g->n++;
        }
}

/* The ring of width TRK_ADAPT_RING_PX just outside r, on a grid of at
 * most about RING_SAMPLES points (step >= 2): how many box d takes. */
static void gather_ring(const struct trk_image *img, const struct trk_object_def *d, int ci,
                        const int r[4], struct gather *g)
{
    const int w = TRK_ADAPT_RING_PX;
    const int64_t area = 2 * (int64_t)w * (r[2] - r[0] + r[3] - r[1] + 2 + 2 * w);
    int step = grid_step(area, 1, RING_SAMPLES);
    step = step < 2 ? 2 : step;
    for (int y = r[1] - w; y <= r[3] + w; y += step) {
        if (y < 0 || y >= img->height) continue;
        const bool inside_rows = y >= r[1] && y <= r[3];
        for (int x = r[0] - w; x <= r[2] + w; x += step) {
            if (inside_rows && x >= r[0] && x <= r[2]) x = r[2] + 1; /* jump over r */
            if (x < 0 || x >= img->width) continue;
            int v[3];
            pixel_in(img, x, y, (int)d->space, ci, v);
            g->ring_n++;
            g->ring_hit += matches(d, v);
        }
    }
}

/* Object i's blobs worth adapting to: those of at least half the largest's
 * mass. */
static int best_blobs(const struct trk_frame_result *res, int i, const struct trk_blob **b)
{
    const struct trk_result_object *o = &res->obj[i];
    if (i >= res->n || o->n_blobs <= 0) return 0;
    *b = &res->blobs[o->blob0];
    int n = 1;
    while (n < o->n_blobs && (*b)[n].mass * 2 >= (*b)[0].mass)
        n++;
    return n;
}

static void warn_rail(struct trk_light *l, int i, const char *why)
{
    struct light_obj *o = &l->o[i];
    const double now = trk_now();
    if (o->rail_logged > 0 && now - o->rail_logged < RAIL_LOG_S) return;
    o->rail_logged = now;
    log_warn("object \"%s\": adapted range on its guard rail (%s); drift %d %d %d", l->cur[i].name,
             why, o->drift[0], o->drift[1], o->drift[2]);
}

/* Object i's reference colour (o->ref_mean, taken at gains o->ref_gain)
 * as the compensation moves it to the current gains, into p (light.h: rgb
 * scales, other spaces through RGB with the round trip's own change taken
 * out). */
static void predicted(const struct trk_light *l, int i, const struct light_obj *o, int p[3])
{
    static const uint32_t unit[3] = { Q16, Q16, Q16 };
    const struct trk_object_def *d = &l->taught[i];
    uint32_t rel[3];
    for (int c = 0; c < 3; c++)
        rel[c] = (uint32_t)((uint64_t)l->gain[c] * Q16 / o->ref_gain[c]);
    if (d->space == TRK_SPACE_RGB) {
        for (int c = 0; c < 3; c++) {
            const uint64_t v = ((uint64_t)o->ref_mean[c] * rel[c] + Q16 / 2) >> 16;
            p[c] = v > 255 ? 255 : (int)v;
        }
        return;
    }
    int a[3], b[3];
    through_rgb(d, o->ref_mean, rel, l->ci, a);
    through_rgb(d, o->ref_mean, unit, l->ci, b);
    for (int c = 0; c < 3; c++)
        p[c] = d->space == TRK_SPACE_HSV && c == 0
                   ? trk_hue_wrap(o->ref_mean[0] + hue_off(a[0], b[0]))
                   : o->ref_mean[c] + a[c] - b[c];
}

/* Object i's turn; period: frames between its turns (its rate is per
 * frame). */
static void adapt_one(struct trk_light *l, int i, const struct trk_image *img,
                      const struct trk_frame_result *res, int period)
{
    struct light_obj *o = &l->o[i];
    const struct trk_adapt_cfg *a = &l->adapt[i];
    const struct trk_blob *b;
    const int nb = best_blobs(res, i, &b);
    o->st.rail = false;
    if (nb == 0) return;
    /* The pixels around the blobs that the current box, widened by the
     * rate, takes: their means (hue around the box's hue centre). */
    struct trk_object_def cur, guard;
    shifted(&l->comp[i], o->drift, &cur);
    widened(&cur, a->rate, &guard);
    const bool hsv = cur.space == TRK_SPACE_HSV;
    const int centre[3] = { hsv ? trk_hue_centre(cur.lo[0], cur.hi[0]) : 0, 0, 0 };
    struct gather g = { 0 };
    int boxes[TRK_MAX_BLOBS][4];
    for (int k = 0; k < nb; k++) {
        grown_box(&b[k], boxes[k]);
        gather_inside(img, &guard, l->ci, centre, boxes[k], ADAPT_SAMPLES / nb, &g);
    }
    if (g.n == 0) return;
    int mean[3];
    for (int c = 0; c < 3; c++)
        mean[c] = (int)((g.sum[c] >= 0 ? g.sum[c] + g.n / 2 : g.sum[c] - g.n / 2) / g.n);
    if (hsv) mean[0] = trk_hue_wrap(mean[0] + centre[0]);
    if (!o->have_ref) {
        memcpy(o->ref_mean, mean, sizeof mean);
        memcpy(o->ref_gain, l->gain, sizeof l->gain);
        o->have_ref = true;
        return;
    }
    /* What the compensation expects of the reference colour now: the
     * adaptation follows only what it does not explain. */
    int want[3];
    predicted(l, i, o, want);
    for (int c = 0; c < 3; c++)
        want[c] = hsv && c == 0 ? hue_off(mean[0], want[0]) : mean[c] - want[c];
    int next[3];
    bool at_max = false, moved = false;
    for (int c = 0; c < 3; c++) {
        int d = want[c] - o->drift[c];
        const int most = a->rate[c] * period;
        d = d > most ? most : d < -most ? -most : d;
        next[c] = o->drift[c] + d;
        if (next[c] > a->max_drift[c]) next[c] = a->max_drift[c];
        if (next[c] < -a->max_drift[c]) next[c] = -a->max_drift[c];
        at_max |= next[c] == a->max_drift[c] || next[c] == -a->max_drift[c];
        moved |= next[c] != o->drift[c];
    }
    if (moved) {
        struct trk_object_def prop;
        shifted(&l->comp[i], next, &prop);
        for (int k = 0; k < nb; k++)
            gather_ring(img, &prop, l->ci, boxes[k], &g);
        if (g.ring_n > 0 && g.ring_hit * 1000 > (int64_t)a->ring_permille * g.ring_n) {
            o->st.rail = true;
            warn_rail(l, i, "the ring around it would match");
            return;
        }
        memcpy(o->drift, next, sizeof next);
    }
    if (at_max) {
        o->st.rail = true;
        warn_rail(l, i, "max_drift reached");
    }
}

/* ---------------------------------------------------------------- update */

bool trk_light_update(struct trk_light *l, const struct trk_image *img,
                      const struct trk_frame_result *res, const struct trk_object_def **defs)
{
    if (!trk_light_on(l)) return false;
    const int ci = l->ci = trk_coef_index(img->matrix, img->full_range);
    if (l->illum.reference != TRK_ILLUM_OFF) {
        uint32_t q8[3];
        if (measure_means(&l->illum, img, ci, q8)) {
            if (!l->have_ref) {
                memcpy(l->ref_q8, q8, sizeof q8);
                l->have_ref = true;
            }
            uint32_t g[3];
            for (int c = 0; c < 3; c++) {
                uint64_t v = (uint64_t)q8[c] * Q16 / l->ref_q8[c];
                v = (v + GAIN_QUANTUM / 2) / GAIN_QUANTUM * GAIN_QUANTUM;
                g[c] = (uint32_t)(v < GAIN_MIN ? GAIN_MIN : v > GAIN_MAX ? GAIN_MAX : v);
            }
            if (memcmp(g, l->gain, sizeof g)) {
                memcpy(l->gain, g, sizeof g);
                compensate(l, ci);
            }
        }
    }
    const int period = (l->n_adapt + ADAPT_PER_FRAME - 1) / ADAPT_PER_FRAME;
    for (int i = 0; l->any_adapt && i < l->n; i++)
        if (l->o[i].on && l->frames % (uint64_t)period == (uint64_t)(l->o[i].slot % period))
            adapt_one(l, i, img, res, period);
    l->frames++;
    bool changed = false;
    for (int i = 0; i < l->n; i++) {
        struct trk_object_def next;
        shifted(&l->comp[i], l->o[i].drift, &next);
        struct light_obj *o = &l->o[i];
        for (int c = 0; c < 3; c++)
            o->st.drift[c] = (int16_t)o->drift[c];
        if (!memcmp(next.lo, l->cur[i].lo, sizeof next.lo) &&
            !memcmp(next.hi, l->cur[i].hi, sizeof next.hi))
            continue;
        l->cur[i] = next;
        memcpy(o->st.lo, next.lo, sizeof next.lo);
        memcpy(o->st.hi, next.hi, sizeof next.hi);
        changed = true;
    }
    *defs = l->cur;
    return changed;
}

const struct trk_light_state *trk_light_state(const struct trk_light *l, int i)
{
    return i >= 0 && i < l->n ? &l->o[i].st : NULL;
}

void trk_light_gains(const struct trk_light *l, uint32_t gain_q16[3])
{
    memcpy(gain_q16, l->gain, sizeof l->gain);
}

bool trk_light_means(const struct trk_light *l, uint32_t means_q8[3])
{
    for (int c = 0; l->have_ref && c < 3; c++) {
        const uint64_t v = ((uint64_t)l->ref_q8[c] * l->gain[c] + Q16 / 2) >> 16;
        /* The file's range (1..255). */
        means_q8[c] = (uint32_t)(v < 256 ? 256 : v > 255 * 256 ? 255 * 256 : v);
    }
    return l->have_ref;
}

int trk_light_report(const struct trk_light *l, struct trk_metrics_range *out)
{
    if (!trk_light_on(l)) return 0;
    for (int i = 0; i < l->n; i++) {
        const struct trk_light_state *st = &l->o[i].st;
        struct trk_metrics_range *r = &out[i];
        snprintf(r->name, sizeof r->name, "%s", l->taught[i].name);
        r->space = (int)l->taught[i].space;
        memcpy(r->lo, st->lo, sizeof r->lo);
        memcpy(r->hi, st->hi, sizeof r->hi);
        memcpy(r->drift, st->drift, sizeof r->drift);
        r->rail = st->rail;
    }
    return l->n;
}
