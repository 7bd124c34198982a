/* Covering rectangles for ROI-only uploads (rects.h). */
#include "rects.h"

#include "backend_impl.h"

static uint64_t area_of(const struct trk_roi *r)
{
    return (uint64_t)(r->x1 - r->x0 + 1) * (uint64_t)(r->y1 - r->y0 + 1);
}

uint64_t trk_rects_area(const struct trk_roi *r, int n)
{
    uint64_t a = 0;
    for (int i = 0; i < n; i++)
        a += area_of(&r[i]);
    return a;
}

/* The gap between a and b along one axis (0 when they overlap or touch). */
static int gap(int a0, int a1, int b0, int b1)
{
    return b0 > a1 ? b0 - a1 - 1 : a0 > b1 ? a0 - b1 - 1 : 0;
}

/* One round of merging at gap g: any two rectangles at most g apart on both
 * axes whose bounding box costs at most their areas plus slack (all
 * pairs when slack < 0) become that box, until no pair qualifies. Returns
 * the new count. */
static int merge_round(struct trk_roi *r, int n, int g, int64_t slack)
{
    bool changed = true;
    while (changed) {
        changed = false;
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++) {
                const struct trk_roi *a = &r[i], *b = &r[j];
                if (slack >= 0 &&
                    (gap(a->x0, a->x1, b->x0, b->x1) > g || gap(a->y0, a->y1, b->y0, b->y1) > g))
                    continue;
                const struct trk_roi box = { a->x0 < b->x0 ? a->x0 : b->x0,
                                             a->y0 < b->y0 ? a->y0 : b->y0,
                                             a->x1 > b->x1 ? a->x1 : b->x1,
                                             a->y1 > b->y1 ? a->y1 : b->y1 };
                if (slack >= 0 && area_of(&box) > area_of(a) + area_of(b) + (uint64_t)slack)
                    continue;
                r[i] = box;
                r[j] = r[--n]; /* j's slot takes the last one: look at it again */
                j = i;
                changed = true;
            }
    }
    return n;
}

int trk_rects_cover(const struct trk_roi *in, int n, int w, int h, int margin, int max_out,
                    struct trk_roi *out)
{
    if (n < 0 || n > TRK_RECTS_MAX || (n > 0 && !in) || max_out < 1 || w <= 0 || h <= 0 ||
        margin < 0)
        return TRK_EINVAL;
    struct trk_roi r[TRK_RECTS_MAX];
    int m = 0;
    for (int i = 0; i < n; i++) {
        /* Grown in 64 bits: a ROI near INT32_MAX plus a margin stays sane. */
        const int64_t x0 = (int64_t)in[i].x0 - margin, y0 = (int64_t)in[i].y0 - margin;
        const int64_t x1 = (int64_t)in[i].x1 + margin, y1 = (int64_t)in[i].y1 + margin;
        struct trk_roi c = { x0 < 0 ? 0 : (int32_t)(x0 < w ? x0 : w),
                             y0 < 0 ? 0 : (int32_t)(y0 < h ? y0 : h),
                             x1 > w - 1 ? w - 1 : (int32_t)(x1 < -1 ? -1 : x1),
                             y1 > h - 1 ? h - 1 : (int32_t)(y1 < -1 ? -1 : y1) };
        if (c.x0 <= c.x1 && c.y0 <= c.y1) r[m++] = c;
    }
    /* Near rectangles first, at a slack of a few rows' worth; then coarser
     * steps until they fit in max_out; the last step merges everything. */
    int g = 16;
    int64_t slack = 4096;
    m = merge_round(r, m, g, slack);
    while (m > max_out) {
        g *= 4;
        slack *= 4;
        const bool last = g > w && g > h;
        m = merge_round(r, m, g, last ? -1 : slack);
    }
    for (int i = 0; i < m; i++)
        out[i] = r[i];
    return m;
}
