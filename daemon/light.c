/* Ranges that follow the light: illumination compensation and adaptive
 * ranges (light.h says the rules). */
#include "light.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h" /* TRK_MAX_GATHER, TRK_MAX_BLOBS */
#include "color.h"
#include "log.h"
#include "ops/metrics.h"
#include "state.h"
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
/* The most points one plan holds: the reference's, then per object in turn
 * those around its blobs and a ring per blob. */
#define PLAN_MAX (REF_SAMPLES + ADAPT_PER_FRAME * (ADAPT_SAMPLES + RING_SAMPLES * TRK_MAX_BLOBS))
_Static_assert(PLAN_MAX <= TRK_MAX_GATHER, "a plan fits one backend gather");

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

/* An adapted object's share of a plan: its blobs' grown boxes, the points
 * around them (pts[in0, in1)) and the rings' (pts[in1, ring1)). */
struct plan_obj {
    int obj, nb;
    int box[TRK_MAX_BLOBS][4];
    int in0, in1, ring1;
};

/* The points of the next frame the update reads (light.h): the
 * reference's (pts[0, ref1)), then the adapted objects' in turn. made: it
 * waits for its update. */
struct light_plan {
    bool made;
    int n, ref1, n_obj;
    struct plan_obj o[ADAPT_PER_FRAME];
    struct trk_gather_point pts[PLAN_MAX];
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
    bool res_stale;  /* the results a plan gets are another set's (a reset since) */
    /* A loaded state's blobs for the next plan (trk_light_load): its
     * results are not the replay's. */
    bool seeded;
    struct light_seed {
        int nb;
        int box[TRK_MAX_BLOBS][4];
    } seed[TRK_MAX_OBJECTS];
    struct light_plan plan;
    struct trk_gather_value vals[PLAN_MAX]; /* trk_light_step_host's reads */
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
    l->res_stale = true;
    l->seeded = false;
    l->plan.made = false;
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

/* ------------------------------------------------------------- the plan */

/* Clips rectangle x, y, w, h to a width x height frame into x0..x1,
 * y0..y1 (exclusive ends); false when nothing is left. */
static bool clip_rect(int width, int height, int x, int y, int w, int h, int *x0, int *y0, int *x1,
                      int *y1)
{
    *x0 = x < 0 ? 0 : x;
    *y0 = y < 0 ? 0 : y;
    *x1 = x + w > width ? width : x + w;
    *y1 = y + h > height ? height : y + h;
    return *x0 < *x1 && *y0 < *y1;
}

/* The least step whose square grid has about most points on a w x h area
 * (w h <= most step^2). */
static int area_step(int64_t w, int64_t h, int64_t most)
{
    int step = 1;
    while (w * h > most * step * step)
        step++;
    return step;
}

/* The grid step that samples a w x h area at most points: the least step
 * with ceil(w / step) ceil(h / step) <= most. */
static int grid_step(int64_t w, int64_t h, int64_t most)
{
    int step = area_step(w, h, most);
    while (((w + step - 1) / step) * ((h + step - 1) / step) > most)
        step++;
    return step;
}

static void plan_add(struct light_plan *pl, int x, int y)
{
    TRK_ASSERT(pl->n < PLAN_MAX);
    pl->pts[pl->n++] = (struct trk_gather_point){ (uint16_t)x, (uint16_t)y };
}

/* Rectangle x, y, w, h clipped to the frame, on a grid of at most most
 * points from its top left corner. */
static void plan_grid(struct light_plan *pl, int width, int height, int x, int y, int w, int h,
                      int most)
{
    int x0, y0, x1, y1;
    if (!clip_rect(width, height, x, y, w, h, &x0, &y0, &x1, &y1)) return;
    const int step = grid_step(x1 - x0, y1 - y0, most);
    for (int yy = y0; yy < y1; yy += step)
        for (int xx = x0; xx < x1; xx += step)
            plan_add(pl, xx, yy);
}

/* The ring of width TRK_ADAPT_RING_PX just outside r (inclusive bounds)
 * on a grid of step `step` from its top left corner, the frame's points
 * only: how many (counting stops past most), added to pl unless NULL. */
static int ring_grid(struct light_plan *pl, int width, int height, const int r[4], int step,
                     int most)
{
    const int w = TRK_ADAPT_RING_PX;
    int n = 0;
    for (int y = r[1] - w; y <= r[3] + w; y += step) {
        if (y < 0 || y >= height) continue;
        const bool inside_rows = y >= r[1] && y <= r[3];
        for (int x = r[0] - w; x <= r[2] + w; x += step) {
            if (inside_rows && x >= r[0] && x <= r[2]) x = r[2] + 1; /* jump over r */
            if (x < 0 || x >= width) continue;
            if (++n > most) return n;
            if (pl) plan_add(pl, x, y);
        }
    }
    return n;
}

/* The ring around r at most RING_SAMPLES points: the least step >= 2 (and
 * >= the ring's area step) that has no more. */
static void plan_ring(struct light_plan *pl, int width, int height, const int r[4])
{
    const int w = TRK_ADAPT_RING_PX;
    const int64_t area = 2 * (int64_t)w * (r[2] - r[0] + r[3] - r[1] + 2 + 2 * w);
    int step = area_step(area, 1, RING_SAMPLES);
    step = step < 2 ? 2 : step;
    while (ring_grid(NULL, width, height, r, step, RING_SAMPLES) > RING_SAMPLES)
        step++;
    ring_grid(pl, width, height, r, step, RING_SAMPLES);
}

/* The grown box of blob b (half its size each side) into r[4] (x0, y0, x1,
 * y1 inclusive, may lie outside the frame). */
static void grown_box(const struct trk_blob *b, int r[4])
{
    const int gx = (b->x1 - b->x0 + 2) / 2, gy = (b->y1 - b->y0 + 2) / 2;
    r[0] = b->x0 - gx, r[1] = b->y0 - gy, r[2] = b->x1 + gx, r[3] = b->y1 + gy;
}

/* Object i's blobs worth adapting to: those of at least half the largest's
 * mass. */
static int best_blobs(const struct trk_frame_result *res, int i, const struct trk_blob **b)
{
    if (i >= res->n || res->obj[i].n_blobs <= 0) return 0;
    const struct trk_result_object *o = &res->obj[i];
    *b = &res->blobs[o->blob0];
    int n = 1;
    while (n < o->n_blobs && (*b)[n].mass * 2 >= (*b)[0].mass)
        n++;
    return n;
}

/* Adapted objects' turns: each every period frames. */
static int adapt_period(const struct trk_light *l)
{
    return (l->n_adapt + ADAPT_PER_FRAME - 1) / ADAPT_PER_FRAME;
}

/* The grown boxes of res's best blobs of object i (none while res is
 * another set's) into box: how many. */
static int plan_boxes(const struct trk_light *l, int i, const struct trk_frame_result *res,
                      int box[TRK_MAX_BLOBS][4])
{
    const struct trk_blob *b = NULL;
    int nb = l->res_stale || !res ? 0 : best_blobs(res, i, &b);
    nb = nb > TRK_MAX_BLOBS ? TRK_MAX_BLOBS : nb; /* a list holds at most K */
    for (int k = 0; k < nb; k++)
        grown_box(&b[k], box[k]);
    return nb;
}

/* Object i's plan: around res's best blobs of it, or a loaded state's. */
static void plan_object(struct trk_light *l, int i, int width, int height,
                        const struct trk_frame_result *res)
{
    struct light_plan *pl = &l->plan;
    TRK_ASSERT(pl->n_obj < ADAPT_PER_FRAME);
    struct plan_obj *po = &pl->o[pl->n_obj++];
    po->obj = i;
    if (l->seeded) {
        po->nb = l->seed[i].nb;
        memcpy(po->box, l->seed[i].box, sizeof(po->box[0]) * (size_t)po->nb);
    } else {
        po->nb = plan_boxes(l, i, res, po->box);
    }
    po->in0 = pl->n;
    for (int k = 0; k < po->nb; k++) {
        int *r = po->box[k];
        plan_grid(pl, width, height, r[0], r[1], r[2] - r[0] + 1, r[3] - r[1] + 1,
                  ADAPT_SAMPLES / po->nb);
    }
    po->in1 = pl->n;
    for (int k = 0; k < po->nb; k++)
        plan_ring(pl, width, height, po->box[k]);
    po->ring1 = pl->n;
}

int trk_light_plan(struct trk_light *l, const struct trk_image *next,
                   const struct trk_frame_result *res, const struct trk_gather_point **pts)
{
    struct light_plan *pl = &l->plan;
    pl->n = pl->ref1 = pl->n_obj = 0;
    pl->made = trk_light_on(l);
    *pts = pl->pts;
    if (!pl->made) return 0;
    const int w = next->width, h = next->height;
    const int32_t *r = l->illum.rect;
    if (l->illum.reference != TRK_ILLUM_OFF)
        plan_grid(pl, w, h, l->illum.has_rect ? r[0] : 0, l->illum.has_rect ? r[1] : 0,
                  l->illum.has_rect ? r[2] : w, l->illum.has_rect ? r[3] : h, REF_SAMPLES);
    pl->ref1 = pl->n;
    const int period = adapt_period(l);
    for (int i = 0; l->any_adapt && i < l->n; i++)
        if (l->o[i].on && l->frames % (uint64_t)period == (uint64_t)(l->o[i].slot % period))
            plan_object(l, i, w, h, res);
    l->seeded = false;
    return pl->n;
}

/* ------------------------------------------------------------ measuring */

/* The gathered values of a plan and how to read them: the frame's kind
 * and colour coefficients (trk_coef_index). */
struct samples {
    const struct trk_gather_value *v;
    int yuv, ci;
};

/* Point k in object space `space`: what every backend tests the pixel with
 * (trk_pixel_triples on its native samples). */
static void sample_in(const struct samples *sm, int k, int space, int c[3])
{
    const uint8_t *v = sm->v[k].s;
    const int s[3] = { v[0], v[1], v[2] };
    int t[3][3];
    trk_pixel_triples(&trk_yuv2rgb_coefs[sm->ci], &trk_rgb2ycc_coefs[sm->ci], sm->yuv, 1 << space,
                      s, t);
    c[0] = t[space][0], c[1] = t[space][1], c[2] = t[space][2];
}

/* The reference's means (Q8) from its n points; false when it has none
 * (its rectangle lies outside the frame). */
static bool measure_means(const struct samples *sm, int n, uint32_t q8[3])
{
    if (n == 0) return false;
    uint64_t sum[3] = { 0, 0, 0 };
    for (int k = 0; k < n; k++) {
        int v[3];
        sample_in(sm, k, TRK_SPACE_RGB, v);
        sum[0] += (uint64_t)v[0], sum[1] += (uint64_t)v[1], sum[2] += (uint64_t)v[2];
    }
    for (int c = 0; c < 3; c++) {
        q8[c] = (uint32_t)((sum[c] * 256 + (uint64_t)n / 2) / (uint64_t)n);
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

/* What an object's points say this frame. */
struct gather {
    int64_t sum[3];
    int64_t n;
    int64_t ring_n, ring_hit; /* ring points, those the proposed box takes */
};

/* Points [k0, k1) that the guard box takes: their sums (hue around
 * centre[0]). */
static void gather_inside(const struct samples *sm, int k0, int k1,
                          const struct trk_object_def *guard, const int centre[3], struct gather *g)
{
    for (int k = k0; k < k1; k++) {
        int v[3];
        sample_in(sm, k, (int)guard->space, v);
        if (!matches(guard, v)) continue;
        if (guard->space == TRK_SPACE_HSV) v[0] = hue_off(v[0], centre[0]);
        g->sum[0] += v[0], g->sum[1] += v[1], g->sum[2] += v[2];
        g->n++;
    }
}

/* Ring points [k0, k1): how many box d takes. */
static void gather_ring(const struct samples *sm, int k0, int k1, const struct trk_object_def *d,
                        struct gather *g)
{
    for (int k = k0; k < k1; k++) {
        int v[3];
        sample_in(sm, k, (int)d->space, v);
        g->ring_n++;
        g->ring_hit += matches(d, v);
    }
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

/* The turn of the plan's object po; period: frames between its turns (its
 * rate is per frame). */
static void adapt_one(struct trk_light *l, const struct plan_obj *po, const struct samples *sm,
                      int period)
{
    const int i = po->obj;
    struct light_obj *o = &l->o[i];
    const struct trk_adapt_cfg *a = &l->adapt[i];
    o->st.rail = false;
    if (po->nb == 0) return;
    /* The pixels around the blobs that the current box, widened by the
     * rate, takes: their means (hue around the box's hue centre). */
    struct trk_object_def cur, guard;
    shifted(&l->comp[i], o->drift, &cur);
    widened(&cur, a->rate, &guard);
    const bool hsv = cur.space == TRK_SPACE_HSV;
    const int centre[3] = { hsv ? trk_hue_centre(cur.lo[0], cur.hi[0]) : 0, 0, 0 };
    struct gather g = { 0 };
    gather_inside(sm, po->in0, po->in1, &guard, centre, &g);
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
        gather_ring(sm, po->in1, po->ring1, &prop, &g);
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
                      const struct trk_gather_value *vals, int n,
                      const struct trk_object_def **defs)
{
    struct light_plan *pl = &l->plan;
    if (!trk_light_on(l) || !pl->made || n != pl->n || (n > 0 && !vals)) return false;
    pl->made = false;
    const int ci = l->ci = trk_coef_index(img->matrix, img->full_range);
    const struct samples sm = { vals, trk_fmt_is_yuv((int)img->fmt), ci };
    if (l->illum.reference != TRK_ILLUM_OFF) {
        uint32_t q8[3];
        if (measure_means(&sm, pl->ref1, q8)) {
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
    for (int k = 0; k < pl->n_obj; k++)
        adapt_one(l, &pl->o[k], &sm, adapt_period(l));
    l->frames++;
    l->res_stale = false;
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

bool trk_light_step_host(struct trk_light *l, const struct trk_image *img,
                         const struct trk_frame_result *res, const struct trk_object_def **defs)
{
    const struct trk_gather_point *pts;
    const int n = trk_light_plan(l, img, res, &pts);
    trk_image_gather(img, pts, n, l->vals);
    return trk_light_update(l, img, l->vals, n, defs);
}

/* ----------------------------------------------------------- state.bin */

#define STATE_TAG 0x5448474cu /* "LGHT" little-endian: the light's state */
#define SEED_LIM  (1 << 17)   /* a seed box's reach: blobs' boxes grown by half */

/* The module's and each object's state as written (daemon/state.h: the
 * build's own layout, its sizes checked on reading). */
struct saved_light {
    uint32_t have_ref, ci, res_stale, pad;
    uint32_t ref_q8[3], gain[3];
    uint64_t frames;
};
struct saved_obj {
    uint32_t have_ref, rail, nb;
    int32_t ref_mean[3], drift[3];
    uint32_t ref_gain[3];
    uint16_t comp_lo[3], comp_hi[3], cur_lo[3], cur_hi[3];
};

void trk_light_save(const struct trk_light *l, const struct trk_frame_result *res,
                    struct trk_bytes *b)
{
    const uint32_t head[4] = { STATE_TAG, (uint32_t)sizeof(struct saved_light),
                               (uint32_t)sizeof(struct saved_obj), (uint32_t)l->n };
    trk_bytes_put(b, head, sizeof(head));
    struct saved_light sl;
    memset(&sl, 0, sizeof(sl));
    sl.have_ref = l->have_ref, sl.ci = (uint32_t)l->ci, sl.res_stale = l->res_stale;
    memcpy(sl.ref_q8, l->ref_q8, sizeof(sl.ref_q8));
    memcpy(sl.gain, l->gain, sizeof(sl.gain));
    sl.frames = l->frames;
    trk_bytes_put(b, &sl, sizeof(sl));
    for (int i = 0; i < l->n; i++) {
        const struct light_obj *o = &l->o[i];
        int box[TRK_MAX_BLOBS][4];
        struct saved_obj so;
        memset(&so, 0, sizeof(so));
        so.have_ref = o->have_ref, so.rail = o->st.rail;
        so.nb = o->on ? (uint32_t)plan_boxes(l, i, res, box) : 0;
        memcpy(so.ref_mean, o->ref_mean, sizeof(so.ref_mean));
        memcpy(so.drift, o->drift, sizeof(so.drift));
        memcpy(so.ref_gain, o->ref_gain, sizeof(so.ref_gain));
        memcpy(so.comp_lo, l->comp[i].lo, sizeof(so.comp_lo));
        memcpy(so.comp_hi, l->comp[i].hi, sizeof(so.comp_hi));
        memcpy(so.cur_lo, l->cur[i].lo, sizeof(so.cur_lo));
        memcpy(so.cur_hi, l->cur[i].hi, sizeof(so.cur_hi));
        trk_bytes_put(b, &so, sizeof(so));
        trk_bytes_put(b, box, sizeof(box[0]) * so.nb);
    }
}

/* Box bounds an object of space `space` can have. */
static bool box_ok(int space, const uint16_t lo[3], const uint16_t hi[3])
{
    for (int c = 0; c < 3; c++) {
        const int top = space == TRK_SPACE_HSV && c == 0 ? TRK_HUE_VALUES - 1 : 255;
        if (lo[c] > top || hi[c] > top) return false;
    }
    return true;
}

/* Each of v[3] within lo..hi. */
static bool within(const uint32_t v[3], uint32_t lo, uint32_t hi)
{
    for (int c = 0; c < 3; c++)
        if (v[c] < lo || v[c] > hi) return false;
    return true;
}

/* Object i's saved state within what its set and a frame allow: the
 * reason when not. */
static const char *obj_wrong(const struct trk_light *l, int i, const struct saved_obj *so)
{
    const struct trk_adapt_cfg *a = &l->adapt[i];
    const int space = (int)l->taught[i].space;
    if (so->have_ref > 1 || so->rail > 1) return "a light flag is neither 0 nor 1";
    if (so->nb > (l->o[i].on ? TRK_MAX_BLOBS : 0))
        return "an object's light blob count is out of range";
    if (!box_ok(space, so->comp_lo, so->comp_hi) || !box_ok(space, so->cur_lo, so->cur_hi))
        return "an object's light-adjusted box is out of range";
    for (int c = 0; c < 3; c++) {
        const int top = space == TRK_SPACE_HSV && c == 0 ? TRK_HUE_VALUES - 1 : 255;
        if (so->drift[c] < -(int)a->max_drift[c] || so->drift[c] > (int)a->max_drift[c])
            return "an object's drift is past its max_drift";
        if (so->have_ref && (so->ref_mean[c] < 0 || so->ref_mean[c] > top))
            return "an object's reference colour is out of range";
    }
    if (so->have_ref && !within(so->ref_gain, GAIN_MIN, GAIN_MAX))
        return "an object's reference gains are out of range";
    return NULL;
}

int trk_light_load(struct trk_light *l, struct trk_rd *r)
{
    uint32_t head[4] = { 0 };
    const size_t at = r->off;
    trk_rd_get(r, head, sizeof(head));
    const int wrong = r->bad                                  ? -1
                      : head[0] != STATE_TAG                  ? 0
                      : head[1] != sizeof(struct saved_light) ? 1
                      : head[2] != sizeof(struct saved_obj)   ? 2
                      : head[3] != (uint32_t)l->n             ? 3
                                                              : -1;
    static const char *const why[4] = { "no light state here",
                                        "a light state of another build's layout",
                                        "a light state of another build's layout",
                                        "the light state's object count is not the first set's" };
    if (wrong >= 0) {
        r->off = at + 4 * (size_t)wrong;
        trk_rd_fail(r, why[wrong]);
    }
    struct saved_light sl;
    size_t here = r->off;
    trk_rd_get(r, &sl, sizeof(sl));
    if (!r->bad && (sl.have_ref > 1 || sl.res_stale > 1 || sl.ci >= 4 || sl.pad ||
                    !within(sl.gain, GAIN_MIN, GAIN_MAX) ||
                    (sl.have_ref && !within(sl.ref_q8, 1, 255 * 256)))) {
        r->off = here;
        trk_rd_fail(r, "the light's gains or reference are out of range");
    }
    if (!r->bad) {
        l->have_ref = sl.have_ref, l->ci = (int)sl.ci, l->res_stale = sl.res_stale;
        memcpy(l->ref_q8, sl.ref_q8, sizeof(l->ref_q8));
        memcpy(l->gain, sl.gain, sizeof(l->gain));
        l->frames = sl.frames;
    }
    for (int i = 0; i < l->n && !r->bad; i++) {
        struct saved_obj so;
        here = r->off;
        trk_rd_get(r, &so, sizeof(so));
        const char *bad = r->bad ? NULL : obj_wrong(l, i, &so);
        if (bad) {
            r->off = here;
            trk_rd_fail(r, bad);
            break;
        }
        struct light_seed *sd = &l->seed[i];
        sd->nb = (int)so.nb;
        for (int k = 0; k < sd->nb && !r->bad; k++) {
            int32_t v[4] = { 0 };
            here = r->off;
            trk_rd_get(r, v, sizeof(v));
            if (!r->bad && (v[0] < -SEED_LIM || v[1] < -SEED_LIM || v[2] > SEED_LIM ||
                            v[3] > SEED_LIM || v[0] > v[2] || v[1] > v[3])) {
                r->off = here;
                trk_rd_fail(r, "a light blob box is out of range");
            }
            for (int c = 0; c < 4; c++)
                sd->box[k][c] = v[c];
        }
        struct light_obj *o = &l->o[i];
        o->have_ref = so.have_ref, o->st.rail = so.rail;
        memcpy(o->ref_mean, so.ref_mean, sizeof(o->ref_mean));
        memcpy(o->drift, so.drift, sizeof(o->drift));
        memcpy(o->ref_gain, so.ref_gain, sizeof(o->ref_gain));
        memcpy(l->comp[i].lo, so.comp_lo, sizeof(so.comp_lo));
        memcpy(l->comp[i].hi, so.comp_hi, sizeof(so.comp_hi));
        memcpy(l->cur[i].lo, so.cur_lo, sizeof(so.cur_lo));
        memcpy(l->cur[i].hi, so.cur_hi, sizeof(so.cur_hi));
        for (int c = 0; c < 3; c++)
            o->st.drift[c] = (int16_t)o->drift[c];
        memcpy(o->st.lo, so.cur_lo, sizeof(o->st.lo));
        memcpy(o->st.hi, so.cur_hi, sizeof(o->st.hi));
    }
    l->seeded = !r->bad;
    return r->bad ? TRK_EINVAL : 0;
}

const struct trk_object_def *trk_light_defs(const struct trk_light *l)
{
    return l->cur;
}
