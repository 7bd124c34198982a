/* trk_rects_cover (gpu/rects.h), the ROI-only upload's plan, on random
 * rectangles: every pixel an input (grown by the margin, clipped) needs is
 * in some output rectangle; outputs lie inside the frame and are no more
 * than asked for; overlapping and touching inputs become one copy; far
 * apart small inputs stay apart (the copies do not cover the frame); bad
 * arguments are refused. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "rects.h"
#include "scene.h"

static int rnd(uint64_t *st, int lo, int hi)
{
    return lo + (int)(trk_rand_next(st) % (uint64_t)(hi - lo + 1));
}

/* The covering rules for one input set; returns the output count. */
static int check_cover(const struct trk_roi *in, int n, int w, int h, int margin, int max_out,
                       uint64_t seed)
{
    struct trk_roi out[TRK_RECTS_MAX];
    const int m = trk_rects_cover(in, n, w, h, margin, max_out, out);
    CHECKF(m >= 0 && m <= max_out, "seed %llu: %d rectangles for max %d", (unsigned long long)seed,
           m, max_out);
    if (m < 0) return m;
    uint8_t *cov = calloc((size_t)w * (size_t)h, 1);
    for (int i = 0; i < m; i++) {
        const struct trk_roi *r = &out[i];
        const bool inside =
            r->x0 >= 0 && r->y0 >= 0 && r->x1 < w && r->y1 < h && r->x0 <= r->x1 && r->y0 <= r->y1;
        CHECKF(inside, "seed %llu: copy %d = %d,%d,%d,%d outside the %dx%d frame or empty",
               (unsigned long long)seed, i, r->x0, r->y0, r->x1, r->y1, w, h);
        if (!inside) continue;
        for (int y = r->y0; y <= r->y1; y++)
            memset(cov + (size_t)y * w + r->x0, 1, (size_t)(r->x1 - r->x0 + 1));
    }
    int missed = 0;
    for (int i = 0; i < n && !missed; i++) {
        /* In 64 bits: the test feeds INT32_MIN / INT32_MAX corners. */
        const int64_t x0 = (int64_t)in[i].x0 - margin, y0 = (int64_t)in[i].y0 - margin;
        const int64_t x1 = (int64_t)in[i].x1 + margin, y1 = (int64_t)in[i].y1 + margin;
        for (int y = y0 < 0 ? 0 : (int)(y0 < h ? y0 : h); y <= y1 && y < h && !missed; y++)
            for (int x = x0 < 0 ? 0 : (int)(x0 < w ? x0 : w); x <= x1 && x < w; x++)
                if (!cov[(size_t)y * w + x]) {
                    CHECKF(0,
                           "seed %llu: pixel %d,%d of input %d (%d,%d,%d,%d margin %d) "
                           "not covered",
                           (unsigned long long)seed, x, y, i, in[i].x0, in[i].y0, in[i].x1,
                           in[i].y1, margin);
                    missed = 1;
                    break;
                }
    }
    free(cov);
    return m;
}

int main(void)
{
    uint64_t st = 13;
    struct trk_roi in[TRK_RECTS_MAX], out[TRK_RECTS_MAX];
    /* Random sets: any size, anywhere (also outside and larger than the
     * frame), any margin and output cap. */
    for (int t = 0; t < 400; t++) {
        const int w = rnd(&st, 1, 300), h = rnd(&st, 1, 200);
        const int n = t % 50 == 0 ? TRK_RECTS_MAX : rnd(&st, 0, 60);
        for (int i = 0; i < n; i++) {
            const int x = rnd(&st, -40, w + 40), y = rnd(&st, -40, h + 40);
            in[i] = (struct trk_roi){ x, y, x + rnd(&st, -3, 80), y + rnd(&st, -3, 60) };
        }
        check_cover(in, n, w, h, rnd(&st, 0, 5), rnd(&st, 1, 40), (uint64_t)t);
    }
    /* Huge coordinates plus a margin do not overflow. */
    in[0] = (struct trk_roi){ INT32_MIN, INT32_MIN, INT32_MAX, INT32_MAX };
    CHECK(check_cover(in, 1, 50, 40, 7, 4, 1000) == 1);
    CHECK(trk_rects_cover(in, 1, 50, 40, 7, 4, out) == 1 && out[0].x0 == 0 && out[0].y0 == 0 &&
          out[0].x1 == 49 && out[0].y1 == 39);
    /* The same rectangle many times, and overlapping ones: one copy. */
    for (int i = 0; i < 200; i++)
        in[i] = (struct trk_roi){ 100 + i % 7, 50 + i % 5, 163 + i % 7, 113 + i % 5 };
    CHECK(check_cover(in, 200, 640, 480, 0, 32, 1001) == 1);
    /* Two touching squares: one copy of exactly their union. */
    in[0] = (struct trk_roi){ 10, 10, 19, 19 };
    in[1] = (struct trk_roi){ 20, 10, 29, 19 };
    CHECK(trk_rects_cover(in, 2, 100, 100, 0, 8, out) == 1 && out[0].x0 == 10 && out[0].x1 == 29 &&
          out[0].y0 == 10 && out[0].y1 == 19);
    /* 64 small squares far apart on a 4K frame: 64 copies when allowed
     * (nothing between them is copied), then at most the cap, and the
     * union stays well below the frame while the cap is not tiny. */
    for (int i = 0; i < 64; i++) {
        const int x = 60 + (i % 8) * 470, y = 60 + (i / 8) * 260;
        in[i] = (struct trk_roi){ x, y, x + 63, y + 63 };
    }
    CHECK(check_cover(in, 64, 3840, 2160, 0, 64, 1002) == 64);
    CHECK(trk_rects_area(in, 64) == 64u * 64 * 64);
    int m = trk_rects_cover(in, 64, 3840, 2160, 0, 64, out);
    CHECK(m == 64 && trk_rects_area(out, m) == 64u * 64 * 64);
    m = check_cover(in, 64, 3840, 2160, 0, 16, 1003);
    CHECK(m >= 1 && m <= 16);
    m = trk_rects_cover(in, 64, 3840, 2160, 0, 16, out);
    CHECKF(m > 0 && trk_rects_area(out, m) < 3840ull * 2160 / 4,
           "16 copies of 64 spread squares cover %llu pixels",
           (unsigned long long)trk_rects_area(out, m > 0 ? m : 0));
    /* Nothing to copy: all inputs empty or outside. */
    in[0] = (struct trk_roi){ 5, 5, 4, 9 };
    in[1] = (struct trk_roi){ 200, 10, 220, 20 };
    CHECK(trk_rects_cover(in, 2, 100, 100, 0, 8, out) == 0);
    /* Bad arguments. */
    CHECK(trk_rects_cover(in, -1, 100, 100, 0, 8, out) == TRK_EINVAL);
    CHECK(trk_rects_cover(in, TRK_RECTS_MAX + 1, 100, 100, 0, 8, out) == TRK_EINVAL);
    CHECK(trk_rects_cover(in, 1, 100, 100, 0, 0, out) == TRK_EINVAL);
    CHECK(trk_rects_cover(in, 1, 0, 100, 0, 8, out) == TRK_EINVAL);
    CHECK(trk_rects_cover(in, 1, 100, 100, -1, 8, out) == TRK_EINVAL);
    return check_exit("test_rects");
}
