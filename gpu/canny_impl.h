/* Internal to gpu/: the per-pixel rules of canny.h that every Canny
 * implementation shares (compiled as C and as CUDA host and device code,
 * like color.h), and the CUDA runner behind trk_canny_create. */
#ifndef TRK_GPU_CANNY_IMPL_H
#define TRK_GPU_CANNY_IMPL_H

#include "canny.h"
#include "color.h"

/* Pixel classes after rules 4 and 5, and EDGE: a candidate hysteresis has
 * reached (the fast forms' work mark). */
enum { TRK_CANNY_NONE = 0, TRK_CANNY_WEAK = 1, TRK_CANNY_STRONG = 2, TRK_CANNY_EDGE = 3 };

/* Gradient sectors of rule 4: DIAG_DOWN pairs (x-1,y-1) with (x+1,y+1),
 * DIAG_UP (x+1,y-1) with (x-1,y+1). */
enum {
    TRK_CANNY_SECTOR_H = 0,
    TRK_CANNY_SECTOR_V,
    TRK_CANNY_SECTOR_DIAG_DOWN,
    TRK_CANNY_SECTOR_DIAG_UP
};

/* Rule 1 for R, G, B: color.h's Y alone. */
TRK_HD uint8_t trk_canny_y(const struct trk_rgb2ycc_coef *k, int r, int g, int b)
{
    return trk_clamp255(k->y_off + trk_q16_round(k->yr * r + k->yg * g + k->yb * b));
}

/* Rule 4's sector of (gx, gy), exactly: a = |gx|, b = |gy| (<= 1020, so
 * every square fits an int). */
TRK_HD int trk_canny_sector(int gx, int gy)
{
    const int a = gx < 0 ? -gx : gx, b = gy < 0 ? -gy : gy;
    if ((a + b) * (a + b) < 2 * a * a) return TRK_CANNY_SECTOR_H;
    if (b > a && (b - a) * (b - a) > 2 * a * a) return TRK_CANNY_SECTOR_V;
    return gx * gy >= 0 ? TRK_CANNY_SECTOR_DIAG_DOWN : TRK_CANNY_SECTOR_DIAG_UP;
}

/* Rule 4's survival test of magnitude m with neighbours n1 (earlier in
 * raster order) and n2, in sector sec. */
TRK_HD bool trk_canny_keeps(int sec, uint32_t m, uint32_t n1, uint32_t n2)
{
    return m > n1 && (sec >= TRK_CANNY_SECTOR_DIAG_DOWN ? m > n2 : m >= n2);
}

#ifdef __cplusplus
extern "C" {
#endif

/* The arguments every runner checks: 0 or TRK_EINVAL. edges may be NULL
 * (sums only); a device image (TRK_MEM_CUDA) passes only with device_ok. */
int trk_canny_check(const struct trk_canny_params *p, const struct trk_image *img,
                    const uint8_t *edges, size_t edges_pitch, bool device_ok);

/* The CUDA runner (cuda/canny.cu; only in CUDA builds). */
struct trk_canny_cuda;
int trk_canny_cuda_create(const struct trk_canny_opts *o, struct trk_canny_cuda **out);
void trk_canny_cuda_destroy(struct trk_canny_cuda *c);
int trk_canny_cuda_run(struct trk_canny_cuda *c, const struct trk_canny_params *p,
                       const struct trk_image *img, uint8_t *edges, size_t edges_pitch,
                       struct trk_canny_stats *st, struct trk_canny_timing *t);

#ifdef __cplusplus
}
#endif
#endif
