/* trackd pixel rules: the exact integer colour arithmetic every backend uses.
 *
 * These functions are the definition of "which objects does this pixel match".
 * They are header-only, integer-only and compile as C and as CUDA (host and
 * device), so the CPU reference and the GPU kernels run literally the same
 * arithmetic and agree bit for bit. Fixed-point coefficients have 16 fraction
 * bits, were computed once from the standard Kr/Kb constants and rounded
 * (see the table), and are never recomputed in floating point.
 *
 * Per pixel (x, y) of a frame:
 *   - YUV formats: Y is the pixel's own luma; chroma is the sample covering it
 *     with no interpolation: YUYV (x/2, y), NV12/I420 (x/2, y/2).
 *     rgb and hsv objects use trk_yuv_to_rgb(Y, Cb, Cr) per the frame's matrix
 *     and range; ycbcr objects test the native Y, Cb, Cr samples unchanged.
 *   - RGB formats: rgb objects test R, G, B; hsv objects trk_rgb_to_hsv;
 *     ycbcr objects trk_rgb_to_ycbcr per the frame's matrix and range.
 */
#ifndef TRK_GPU_COLOR_H
#define TRK_GPU_COLOR_H

#include <stdint.h>

#if defined(__CUDACC__)
#define TRK_HD __host__ __device__ __forceinline__
#else
#define TRK_HD static inline
#endif

/* Y'CbCr -> R'G'B', Q16 fixed point. R = Y' + r_cr Cr', G = Y' - g_cb Cb' -
 * g_cr Cr', B = Y' + b_cb Cb', with Y' = y_mul (Y - y_off), C' = C - 128
 * (the limited-range 255/219 and 255/224 scales are folded into the
 * coefficients). */
struct trk_yuv2rgb_coef {
    int32_t y_off, y_mul, r_cr, g_cb, g_cr, b_cb;
};

/* R'G'B' -> Y'CbCr, Q16 fixed point: Y = y_off + yr R + yg G + yb B,
 * Cb = 128 + cbr R + cbg G + cbb B, Cr = 128 + crr R + crg G + crb B. */
struct trk_rgb2ycc_coef {
    int32_t y_off;
    int32_t yr, yg, yb, cbr, cbg, cbb, crr, crg, crb;
};

/* Index: matrix * 2 + full_range (BT.601 limited, BT.601 full, BT.709 limited,
 * BT.709 full). Values from Kr/Kb = 0.299/0.114 (BT.601), 0.2126/0.0722
 * (BT.709), times 65536, rounded to nearest. */
#define TRK_YUV2RGB_TABLE                                                                          \
    {                                                                                              \
        { 16, 76309, 104597, 25675, 53279, 132201 }, { 0, 65536, 91881, 22553, 46802, 116130 },    \
            { 16, 76309, 117489, 13975, 34925, 138438 },                                           \
            { 0, 65536, 103206, 12276, 30679, 121609 },                                            \
    }
#define TRK_RGB2YCC_TABLE                                                                          \
    {                                                                                              \
        { 16, 16829, 33039, 6416, -9714, -19071, 28784, 28784, -24103, -4681 },                    \
            { 0, 19595, 38470, 7471, -11058, -21710, 32768, 32768, -27439, -5329 },                \
            { 16, 11966, 40254, 4064, -6596, -22189, 28784, 28784, -26145, -2639 },                \
            { 0, 13933, 46871, 4732, -7509, -25259, 32768, 32768, -29763, -3005 },                 \
    }

static const struct trk_yuv2rgb_coef trk_yuv2rgb_coefs[4] = TRK_YUV2RGB_TABLE;
static const struct trk_rgb2ycc_coef trk_rgb2ycc_coefs[4] = TRK_RGB2YCC_TABLE;

TRK_HD int trk_coef_index(int matrix, int full_range)
{
    return (matrix ? 2 : 0) + (full_range ? 1 : 0);
}

TRK_HD uint8_t trk_clamp255(int32_t v)
{
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* Q16 -> integer, rounding half up. >> of a negative int is an arithmetic
 * shift on every compiler we build with (gcc, clang, nvcc). */
TRK_HD int32_t trk_q16_round(int32_t v)
{
    return (v + 32768) >> 16;
}

TRK_HD void trk_yuv_to_rgb(const struct trk_yuv2rgb_coef *k, int y, int cb, int cr, uint8_t *r,
                           uint8_t *g, uint8_t *b)
{
    int32_t yy = k->y_mul * (y - k->y_off);
    int32_t u = cb - 128, v = cr - 128;
    *r = trk_clamp255(trk_q16_round(yy + k->r_cr * v));
    *g = trk_clamp255(trk_q16_round(yy - k->g_cb * u - k->g_cr * v));
    *b = trk_clamp255(trk_q16_round(yy + k->b_cb * u));
}

TRK_HD void trk_rgb_to_ycbcr(const struct trk_rgb2ycc_coef *k, int r, int g, int b, uint8_t *y,
                             uint8_t *cb, uint8_t *cr)
{
    *y = trk_clamp255(k->y_off + trk_q16_round(k->yr * r + k->yg * g + k->yb * b));
    *cb = trk_clamp255(128 + trk_q16_round(k->cbr * r + k->cbg * g + k->cbb * b));
    *cr = trk_clamp255(128 + trk_q16_round(k->crr * r + k->crg * g + k->crb * b));
}

/* Integer HSV: V = max(R,G,B); S = round(255 (V - min) / V) (0 when V = 0);
 * H in whole degrees 0..359 = round(60 * sector position), 0 when V = min.
 * The max channel is chosen R first, then G, then B (ties). */
TRK_HD void trk_rgb_to_hsv(int r, int g, int b, uint16_t *h, uint8_t *s, uint8_t *v)
{
    int mx = r > g ? r : g;
    mx = mx > b ? mx : b;
    int mn = r < g ? r : g;
    mn = mn < b ? mn : b;
    int d = mx - mn;
    *v = (uint8_t)mx;
    *s = (uint8_t)(mx == 0 ? 0 : (255 * d + mx / 2) / mx);
    if (d == 0) {
        *h = 0;
        return;
    }
    int num; /* 60 * d * (hue / 60), may be negative for the red sector */
    if (mx == r)
        num = 60 * (g - b);
    else if (mx == g)
        num = 120 * d + 60 * (b - r);
    else
        num = 240 * d + 60 * (r - g);
    /* + 360 d keeps it non-negative so / floors; + d/2 rounds to nearest. */
    *h = (uint16_t)(((num + 360 * d + d / 2) / d) % 360);
}

/* An RGB colour's channels in an object space: space is the value of enum
 * trk_space (0 rgb, 1 hsv, 2 ycbcr; an int here so this header stays free of
 * backend.h); ycbcr uses the coefficients k. For places that turn a colour
 * into a box (scenes, colour sampling), not for the per-pixel hot paths. */
TRK_HD void trk_rgb_to_space(const struct trk_rgb2ycc_coef *k, int space, const uint8_t rgb[3],
                             int c[3])
{
    if (space == 1) {
        uint16_t h;
        uint8_t s, v;
        trk_rgb_to_hsv(rgb[0], rgb[1], rgb[2], &h, &s, &v);
        c[0] = h, c[1] = s, c[2] = v;
    } else if (space == 2) {
        uint8_t y, cb, cr;
        trk_rgb_to_ycbcr(k, rgb[0], rgb[1], rgb[2], &y, &cb, &cr);
        c[0] = y, c[1] = cb, c[2] = cr;
    } else {
        c[0] = rgb[0], c[1] = rgb[1], c[2] = rgb[2];
    }
}

/* The object test for one channel triple. c0 is hue for hsv objects. */
TRK_HD int trk_box_match(const uint16_t lo[3], const uint16_t hi[3], int is_hsv, int c0, int c1,
                         int c2)
{
    int ok0 =
        (is_hsv && lo[0] > hi[0]) ? (c0 >= lo[0] || c0 <= hi[0]) : (c0 >= lo[0] && c0 <= hi[0]);
    return ok0 && c1 >= lo[1] && c1 <= hi[1] && c2 >= lo[2] && c2 <= hi[2];
}

#endif
