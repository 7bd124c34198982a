/* Seam carving's fast CPU twin (gpu/seam.h): the definition's bytes and
 * map, with the work per seam cut to what the seam changed.
 *
 * The grid, the cost and the cumulative map keep the phase's first width
 * as their row pitch, so removing a seam is one shift of each row's tail.
 * The cost is local (a pixel reads its 4 neighbours), so after a removal
 * only row y's pixels next to the seam of rows y-1, y, y+1 change cost,
 * and a pixel's three parents differ from its old ones only next to the
 * seams of rows y-1 and y. The cumulative map is recomputed from the top
 * over those windows plus one pixel each side of the span that changed in
 * the row above; the span grows by at most one a row and, as soon as the
 * recomputed values equal the old ones, stops growing: on real frames it
 * dies out within a few rows instead of filling the frame. */
#include <string.h>

#include "seam_impl.h"

/* A phase's arrays, rows of pitch elements. cost: the definition's cost
 * packed in 32 bits (energy in the low 16, protection in bit 16). */
struct fast {
    size_t pitch;
    int32_t *g;
    uint32_t *cost;
    uint64_t *m;
    int32_t *seam;
};

static inline uint64_t cost64(uint32_t c)
{
    return ((uint64_t)(c >> 16) << 32) | (c & 0xffffu);
}

static inline uint32_t cost32(uint64_t c)
{
    return (uint32_t)((c >> 32) << 16 | (c & 0xffffu));
}

/* Recomputes m over [lo, hi] of row y (y > 0); returns the span of
 * positions whose value changed in *a, *b (a > b: none). */
static void dp_span(const struct fast *f, int w, int y, int lo, int hi, int *a, int *b)
{
    const uint64_t *up = f->m + (size_t)(y - 1) * f->pitch;
    uint64_t *row = f->m + (size_t)y * f->pitch;
    const uint32_t *cr = f->cost + (size_t)y * f->pitch;
    int ca = hi + 1, cb = lo - 1;
    for (int x = lo; x <= hi; x++) {
        uint64_t best = up[x];
        if (x > 0 && up[x - 1] < best) best = up[x - 1];
        if (x < w - 1 && up[x + 1] < best) best = up[x + 1];
        uint64_t v = cost64(cr[x]) + best;
        if (v != row[x]) {
            row[x] = v;
            ca = x < ca ? x : ca;
            cb = x;
        }
    }
    *a = ca;
    *b = cb;
}

/* The whole cost and cumulative map of the w x h grid. */
static void full(const struct seam_ctx *c, struct fast *f, int w, int h)
{
    for (int y = 0; y < h; y++) {
        uint32_t *cr = f->cost + (size_t)y * f->pitch;
        for (int x = 0; x < w; x++)
            cr[x] = cost32(seam_cost(c, f->g, f->pitch, w, h, x, y));
    }
    for (int x = 0; x < w; x++)
        f->m[x] = cost64(f->cost[x]);
    int a, b;
    for (int y = 1; y < h; y++)
        dp_span(f, w, y, 0, w - 1, &a, &b);
}

/* Removes f->seam from every row (the grid, cost and map) of a w-wide
 * grid; counts protected pixels removed. */
static void shift_rows(struct seam_ctx *c, struct fast *f, int w, int h)
{
    for (int y = 0; y < h; y++) {
        size_t o = (size_t)y * f->pitch;
        int s = f->seam[y], n = w - 1 - s;
        c->cut_protected += c->prot[f->g[o + s]] != 0;
        memmove(f->g + o + s, f->g + o + s + 1, (size_t)n * sizeof *f->g);
        memmove(f->cost + o + s, f->cost + o + s + 1, (size_t)n * sizeof *f->cost);
        memmove(f->m + o + s, f->m + o + s + 1, (size_t)n * sizeof *f->m);
    }
}

static inline int mini(int a, int b)
{
    return a < b ? a : b;
}
static inline int maxi(int a, int b)
{
    return a > b ? a : b;
}

/* After shift_rows (w: the new width): the cost next to the seam, then the
 * cumulative map over what changed. */
static void update(const struct seam_ctx *c, struct fast *f, int w, int h)
{
    const int32_t *s = f->seam;
    for (int y = 0; y < h; y++) {
        int su = s[y > 0 ? y - 1 : y], sd = s[y < h - 1 ? y + 1 : y];
        int lo = maxi(mini(mini(su, sd), s[y]) - 1, 0);
        int hi = mini(maxi(maxi(su, sd), s[y]), w - 1);
        uint32_t *cr = f->cost + (size_t)y * f->pitch;
        for (int x = lo; x <= hi; x++)
            cr[x] = cost32(seam_cost(c, f->g, f->pitch, w, h, x, y));
    }
    /* Row 0 is the cost itself. */
    int a = w, b = -1;
    for (int x = maxi(mini(s[0], s[h > 1 ? 1 : 0]) - 1, 0);
         x <= mini(maxi(s[0], s[h > 1 ? 1 : 0]), w - 1); x++) {
        uint64_t v = cost64(f->cost[x]);
        if (v != f->m[x]) {
            f->m[x] = v;
            a = mini(a, x);
            b = x;
        }
    }
    for (int y = 1; y < h; y++) {
        int sd = s[y < h - 1 ? y + 1 : y];
        int lo = mini(mini(s[y - 1], s[y]), sd) - 2, hi = maxi(maxi(s[y - 1], s[y]), sd) + 1;
        if (a <= b) {
            lo = mini(lo, a - 1);
            hi = maxi(hi, b + 1);
        }
        dp_span(f, w, y, maxi(lo, 0), mini(hi, w - 1), &a, &b);
    }
}

static int fast_phase(struct seam_ctx *c, int w, int h, int k)
{
    if (k == 0) return 0;
    struct fast f = { (size_t)w, c->tmp, c->cost, c->m, c->seam };
    memcpy(f.g, c->idx, (size_t)w * h * sizeof *f.g);
    full(c, &f, w, h);
    for (; k > 0; k--) {
        trk_seam_trace(f.m, f.pitch, w, h, f.seam);
        shift_rows(c, &f, w, h);
        w--;
        if (k > 1) update(c, &f, w, h);
    }
    for (int y = 0; y < h; y++) /* back to compact rows */
        memcpy(c->idx + (size_t)y * w, f.g + (size_t)y * f.pitch, (size_t)w * sizeof *f.g);
    return 0;
}

int trk_seam_carve_fast(const struct trk_seam_job *job, struct trk_seam_info *info)
{
    return trk_seam_run(job, info, fast_phase, NULL);
}
