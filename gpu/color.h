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
 *   - trk_pixel_native reads the frame's own samples. YUV formats: Y is the
 *     pixel's own luma; chroma is the sample covering it with no
 *     interpolation: YUYV (x/2, y), NV12/I420 (x/2, y/2).
 *   - trk_pixel_spaces (trk_pixel_triples for the three classic spaces)
 *     derives the channels each object space tests:
 *     YUV formats: rgb, hsv, lab and rg objects use trk_yuv_to_rgb(Y, Cb,
 *     Cr) per the frame's matrix and range; ycbcr objects test the native Y,
 *     Cb, Cr samples unchanged. RGB formats: rgb objects test R, G, B; hsv
 *     objects trk_rgb_to_hsv; ycbcr objects trk_rgb_to_ycbcr per the frame's
 *     matrix and range. lab (trk_rgb_to_lab) and rg (trk_rgb_to_rg) come
 *     from R, G, B through the tables of trk_light_tables (lab.c).
 *   - trk_box_match (channel by channel: trk_chan_has) is the object test.
 * The per-value lookup tables of the fast backends are built from
 * trk_chan_values and trk_chan_has; the vectorised decoders (cpu_fast_kern.h,
 * fused.cu's load4) are tested against these functions bit for bit.
 * Every function here is inline (static inline in C, __host__ __device__
 * __forceinline__ under nvcc), so hot loops pay no call.
 */
#ifndef TRK_GPU_COLOR_H
#define TRK_GPU_COLOR_H

#include <stdint.h>

#include "backend.h"
#include "trk_assert.h"

#if defined(__CUDACC__)
#define TRK_HD __host__ __device__ __forceinline__
#else
#define TRK_HD static inline
#endif

/* ------------------------------------------------------------ channels */

/* Hue is a whole number of degrees 0..TRK_HUE_VALUES - 1; every other
 * channel of every space is a byte. The one place the 360 lives: tables,
 * range checks and wrapping all derive from it. */
#define TRK_HUE_VALUES 360

/* How many values channel c of an object space takes (space: enum trk_space
 * as int): TRK_HUE_VALUES for the hsv hue, else 256. Lookup tables have this
 * many entries. */
TRK_HD int trk_chan_values(int space, int c)
{
    return space == TRK_SPACE_HSV && c == 0 ? TRK_HUE_VALUES : 256;
}

/* The largest value of channel c of space (359 for hue, else 255). */
TRK_HD int trk_chan_max(int space, int c)
{
    return trk_chan_values(space, c) - 1;
}

/* Any whole number of degrees brought into 0..TRK_HUE_VALUES - 1. */
TRK_HD int trk_hue_wrap(int h)
{
    return (h % TRK_HUE_VALUES + TRK_HUE_VALUES) % TRK_HUE_VALUES;
}

/* Whether value v of channel c lies in a colour box's range lo[c]..hi[c].
 * For the hue of an hsv box (is_hsv, c == 0) lo > hi wraps through 0: the
 * range is lo..359 and 0..hi. The object test (trk_box_match) and the
 * per-value lookup tables of the fast backends both use this. */
TRK_HD int trk_chan_has(const uint16_t lo[3], const uint16_t hi[3], int is_hsv, int c, int v)
{
    if (is_hsv && c == 0 && lo[0] > hi[0]) return v >= lo[0] || v <= hi[0];
    return v >= lo[c] && v <= hi[c];
}

/* The centre of lo..hi, rounding half up. */
TRK_HD int trk_range_centre(int lo, int hi)
{
    return (lo + hi + 1) / 2;
}

/* The centre of an hsv hue range lo..hi, across 0 when it wraps (lo > hi),
 * rounding half up: 10..21 -> 16, 350..10 -> 0. */
TRK_HD int trk_hue_centre(int lo, int hi)
{
    const int span = lo <= hi ? hi - lo : hi + TRK_HUE_VALUES - lo;
    return (lo + (span + 1) / 2) % TRK_HUE_VALUES;
}

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
    *h = (uint16_t)(((num + TRK_HUE_VALUES * d + d / 2) / d) % TRK_HUE_VALUES);
}

/* ----------------------------------------------- lab and rg (chromaticity) */

/* CIE L*a*b* in integers, the one definition every backend runs:
 *   1. each sRGB byte to linear light by a 256-entry table, lin[v] =
 *      round(65535 * EOTF(v / 255)) (IEC 61966-2-1: v/12.92 up to 0.04045,
 *      else ((v + 0.055) / 1.055)^2.4), written out in lab.c;
 *   2. X/Xn, Y/Yn, Z/Zn (D65 white) as t = (k_r lin[R] + k_g lin[G] +
 *      k_b lin[B] + 32768) >> 16, clamped to 0..TRK_LAB_T_ONE (units of
 *      1/16384), k the rows of the sRGB -> XYZ matrix divided by the white,
 *      times 16384, rounded (in trk_rgb_to_lab);
 *   3. f(t) from a table of TRK_LAB_T_ONE + 1 entries in Q15 (trk_lab_f: the
 *      cube root by integer search, the CIE linear segment below 216/24389);
 *   4. the bytes: L = round(255 (116 fy - 16) / 100) (L* 0..100 -> 0..255),
 *      a = 128 + round(500 (fx - fy)), b = 128 + round(200 (fy - fz)) (a*, b*
 *      in whole units, offset 128), each clamped to 0..255 (sRGB colours
 *      stay inside: a* -86..98, b* -108..95).
 * Backends use the tables of trk_light_tables() (the CUDA one uploads them),
 * so every backend computes the same bytes. */
#define TRK_LAB_T_ONE 16384
/* The tables of the spaces that separate light from colour: lab's, and
 * rg's reciprocals (trk_rgb_to_rg). */
#define TRK_RG_SUM_MAX (3 * 255)
struct trk_light_tab {
    uint16_t lin[256];
    uint16_t f[TRK_LAB_T_ONE + 1];
    uint32_t rg_inv[TRK_RG_SUM_MAX + 1]; /* [s] = ceil(2^31 / s), [0] = 0 */
};

#ifdef __cplusplus
extern "C" {
#endif
/* The tables, built once (thread-safe) and never freed. Host memory. */
const struct trk_light_tab *trk_light_tables(void);
/* Coarse cells of the RGB cube, 32 x 32 x 32 (cell = (R >> 3) << 10 |
 * (G >> 3) << 5 | B >> 3), and per cell the least and greatest lab and rg
 * channels of its 512 colours: a box that misses a cell's ranges matches
 * none of its colours, so a backend may skip the conversion there (the fast
 * CPU backend does). Built on first use (about 17 M conversions), host. */
#define TRK_LIGHT_CELLS (32 * 32 * 32)
struct trk_light_cells {
    uint8_t lo[TRK_LIGHT_CELLS][2][3], hi[TRK_LIGHT_CELLS][2][3]; /* [cell][lab, rg][channel] */
};
const struct trk_light_cells *trk_light_cell_ranges(void);
/* f(i / 16384) in Q15, i = 0..TRK_LAB_T_ONE: the table's definition. */
uint16_t trk_lab_f(int i);
/* Display only: an L, a, b byte triple back to sRGB (floating point). */
void trk_lab_to_rgb_display(int L, int a, int b, uint8_t rgb[3]);
#ifdef __cplusplus
}
#endif

TRK_HD int32_t trk_lab_t(const struct trk_light_tab *t, const int32_t k[3], int r, int g, int b)
{
    const int32_t v = (k[0] * t->lin[r] + k[1] * t->lin[g] + k[2] * t->lin[b] + 32768) >> 16;
    return v > TRK_LAB_T_ONE ? TRK_LAB_T_ONE : v;
}

TRK_HD void trk_rgb_to_lab(const struct trk_light_tab *t, int r, int g, int b, uint8_t *L,
                           uint8_t *A, uint8_t *B)
{
    /* The rows of step 2: the sRGB -> XYZ matrix divided by D65's white. */
    const int32_t k[3][3] = { { 7110, 6164, 3110 }, { 3484, 11717, 1183 }, { 291, 1794, 14300 } };
    const int32_t fx = t->f[trk_lab_t(t, k[0], r, g, b)], fy = t->f[trk_lab_t(t, k[1], r, g, b)],
                  fz = t->f[trk_lab_t(t, k[2], r, g, b)];
    /* 116 fy - 16 >= 0: f(0) = round(32768 * 16 / 116). */
    *L = trk_clamp255((255 * (116 * fy - 16 * 32768) + 1638400) / 3276800);
    *A = trk_clamp255(128 + ((500 * (fx - fy) + 16384) >> 15));
    *B = trk_clamp255(128 + ((200 * (fy - fz) + 16384) >> 15));
}

/* Normalised chromaticity: with S = R + G + B, r = round(255 R / S) and g =
 * round(255 G / S) (halves up: floor((255 R + floor(S / 2)) / S)), I =
 * round(S / 3) = floor((S + 1) / 3); a black pixel (S = 0) is r = g = 85,
 * the neutral grey's chromaticity, I = 0. The division by S is a multiply
 * by t->rg_inv[S] = ceil(2^31 / S) and a shift by 31: with the excess
 * e = rg_inv[S] S - 2^31 < S, that is the exact quotient whenever n e <
 * 2^31, and here n < 2^18, e < 2^10; test_lab checks every numerator the
 * rule makes against the plain division. */
TRK_HD int trk_rg_div(const struct trk_light_tab *t, int n, int s)
{
    return (int)(((uint64_t)(uint32_t)n * t->rg_inv[s]) >> 31);
}

TRK_HD void trk_rgb_to_rg(const struct trk_light_tab *t, int r, int g, int b, uint8_t *rn,
                          uint8_t *gn, uint8_t *i)
{
    const int s = r + g + b;
    *rn = (uint8_t)(s ? trk_rg_div(t, 255 * r + s / 2, s) : 85);
    *gn = (uint8_t)(s ? trk_rg_div(t, 255 * g + s / 2, s) : 85);
    *i = (uint8_t)((s + 1) / 3);
}

/* ---------------------------------------------------------------- pixels */

/* Bytes per pixel of a packed format (YUYV: 2, a pixel pair is 4 bytes); 0
 * for the planar and semi-planar formats. trk_pixfmt_bpp returns this. */
TRK_HD int trk_fmt_bpp(int fmt)
{
    switch (fmt) {
    case TRK_FMT_RGB24:
    case TRK_FMT_BGR24: return 3;
    case TRK_FMT_RGBA:
    case TRK_FMT_BGRA: return 4;
    case TRK_FMT_YUYV: return 2;
    default: return 0;
    }
}

/* True for the formats whose samples are Y, Cb, Cr. */
TRK_HD int trk_fmt_is_yuv(int fmt)
{
    return fmt == TRK_FMT_YUYV || fmt == TRK_FMT_NV12 || fmt == TRK_FMT_I420;
}

/* The native samples of pixel (x, y) of a frame of format fmt whose planes
 * and row pitches (bytes) are as in struct trk_image: s = R, G, B for the
 * RGB formats (returns 0), s = Y, Cb, Cr for the YUV formats (returns 1),
 * with the chroma sample covering the pixel: YUYV (x/2, y), NV12 and I420
 * (x/2, y/2), no interpolation. x, y >= 0 and inside the frame. */
TRK_HD int trk_pixel_native(int fmt, const uint8_t *const plane[3], const size_t pitch[3], int x,
                            int y, int s[3])
{
    const uint8_t *row = plane[0] + (size_t)y * pitch[0];
    const size_t cx = (size_t)(x >> 1), cy = (size_t)(y >> 1);
    switch (fmt) {
    case TRK_FMT_RGB24:
    case TRK_FMT_RGBA:
    case TRK_FMT_BGR24:
    case TRK_FMT_BGRA: {
        const uint8_t *p = row + (size_t)x * (size_t)trk_fmt_bpp(fmt);
        const int bgr = fmt == TRK_FMT_BGR24 || fmt == TRK_FMT_BGRA;
        s[0] = p[bgr ? 2 : 0], s[1] = p[1], s[2] = p[bgr ? 0 : 2];
        return 0;
    }
    case TRK_FMT_YUYV: { /* Y0 U Y1 V per pixel pair */
        const uint8_t *p = row + 4 * cx;
        s[0] = p[(x & 1) * 2], s[1] = p[1], s[2] = p[3];
        return 1;
    }
    case TRK_FMT_NV12: {
        const uint8_t *uv = plane[1] + cy * pitch[1] + 2 * cx;
        s[0] = row[x], s[1] = uv[0], s[2] = uv[1];
        return 1;
    }
    case TRK_FMT_I420:
        s[0] = row[x];
        s[1] = plane[1][cy * pitch[1] + cx];
        s[2] = plane[2][cy * pitch[2] + cx];
        return 1;
    }
    TRK_ASSERT(!"pixel format out of range (trk_image_check rejects it)");
    return 0;
}

/* need for trk_pixel_triples: the three classic spaces (rgb, hsv, ycbcr);
 * TRK_SPACES_EVERY: every space (trk_pixel_spaces, with the lab tables). */
#define TRK_SPACES_ALL   ((1 << TRK_SPACE_RGB) | (1 << TRK_SPACE_HSV) | (1 << TRK_SPACE_YCBCR))
#define TRK_SPACES_EVERY ((1 << TRK_SPACE_COUNT) - 1)
/* The spaces derived from R, G, B (on YUV frames: trk_yuv_to_rgb first). */
#define TRK_SPACES_FROM_RGB                                                                        \
    ((1 << TRK_SPACE_RGB) | (1 << TRK_SPACE_HSV) | (1 << TRK_SPACE_LAB) | (1 << TRK_SPACE_RG) |    \
     (1 << TRK_SPACE_CLASS))

/* The channel triples c[space][channel] a pixel is tested with, from its
 * native samples s (trk_pixel_native; is_yuv is its return value), for each
 * space whose bit (1 << enum trk_space) is set in need: the derivation of
 * the file comment. y2r and r2y are the frame's coefficients (only the one
 * the frame's kind needs is read); tab: trk_light_tables(), read only when
 * need has lab or rg (else it may be NULL). c has TRK_SPACE_COUNT rows;
 * c[TRK_SPACE_RGB] is always set. lab and rg derive from R, G, B like hsv. */
TRK_HD void trk_pixel_spaces(const struct trk_yuv2rgb_coef *y2r, const struct trk_rgb2ycc_coef *r2y,
                             const struct trk_light_tab *tab, int is_yuv, int need, const int s[3],
                             int c[][3])
{
    int r = s[0], g = s[1], b = s[2];
    if (is_yuv && (need & TRK_SPACES_FROM_RGB)) {
        uint8_t r8, g8, b8;
        trk_yuv_to_rgb(y2r, s[0], s[1], s[2], &r8, &g8, &b8);
        r = r8, g = g8, b = b8;
    }
    c[TRK_SPACE_RGB][0] = r, c[TRK_SPACE_RGB][1] = g, c[TRK_SPACE_RGB][2] = b;
    if (need & (1 << TRK_SPACE_HSV)) {
        uint16_t h;
        uint8_t sat, v;
        trk_rgb_to_hsv(r, g, b, &h, &sat, &v);
        c[TRK_SPACE_HSV][0] = h, c[TRK_SPACE_HSV][1] = sat, c[TRK_SPACE_HSV][2] = v;
    }
    if (need & (1 << TRK_SPACE_YCBCR)) {
        if (is_yuv) {
            c[TRK_SPACE_YCBCR][0] = s[0], c[TRK_SPACE_YCBCR][1] = s[1];
            c[TRK_SPACE_YCBCR][2] = s[2];
        } else {
            uint8_t y8, cb8, cr8;
            trk_rgb_to_ycbcr(r2y, r, g, b, &y8, &cb8, &cr8);
            c[TRK_SPACE_YCBCR][0] = y8, c[TRK_SPACE_YCBCR][1] = cb8, c[TRK_SPACE_YCBCR][2] = cr8;
        }
    }
    if (need & (1 << TRK_SPACE_LAB)) {
        uint8_t l8, a8, b8;
        trk_rgb_to_lab(tab, r, g, b, &l8, &a8, &b8);
        c[TRK_SPACE_LAB][0] = l8, c[TRK_SPACE_LAB][1] = a8, c[TRK_SPACE_LAB][2] = b8;
    }
    if (need & (1 << TRK_SPACE_RG)) {
        uint8_t rn, gn, in;
        trk_rgb_to_rg(tab, r, g, b, &rn, &gn, &in);
        c[TRK_SPACE_RG][0] = rn, c[TRK_SPACE_RG][1] = gn, c[TRK_SPACE_RG][2] = in;
    }
}

/* trk_pixel_spaces for the three classic spaces (need within
 * TRK_SPACES_ALL): no lab tables, c has 3 rows. */
TRK_HD void trk_pixel_triples(const struct trk_yuv2rgb_coef *y2r,
                              const struct trk_rgb2ycc_coef *r2y, int is_yuv, int need,
                              const int s[3], int c[3][3])
{
    TRK_ASSERT(!(need & ~TRK_SPACES_ALL));
    trk_pixel_spaces(y2r, r2y, NULL, is_yuv, need, s, c);
}

/* An RGB colour's channels in an object space (enum trk_space); ycbcr uses
 * the coefficients k. For places that turn a colour into a box (scenes,
 * colour sampling), not for the per-pixel hot paths. Host only. */
static inline void trk_rgb_to_space(const struct trk_rgb2ycc_coef *k, int space,
                                    const uint8_t rgb[3], int c[3])
{
    TRK_ASSERT((unsigned)space < TRK_SPACE_COUNT);
    const int s[3] = { rgb[0], rgb[1], rgb[2] };
    int t[TRK_SPACE_COUNT][3];
    trk_pixel_spaces(NULL, k, trk_light_tables(), 0, 1 << space, s, t);
    c[0] = t[space][0], c[1] = t[space][1], c[2] = t[space][2];
}

/* ------------------------------------------------------ painted classes */

/* The cell of a colour in a class table (backend.h): the top 6 bits of R,
 * G and B. */
TRK_HD int trk_class_cell(int r, int g, int b)
{
    return (r >> 2) << 12 | (g >> 2) << 6 | b >> 2;
}

/* Whether cell is set in the class table tab (TRK_CLASS_BYTES bytes). */
TRK_HD int trk_class_has(const uint8_t *tab, int cell)
{
    return tab[cell >> 3] >> (cell & 7) & 1;
}

#ifdef __cplusplus
extern "C" {
#endif
/* The cell table of a set's class objects (gpu/classes.c), which the fast
 * CPU and CUDA backends read: cells[c] bit j = the j-th class object of
 * objs[0..n) (in object order) has cell c; ord[i] = object i's j, or -1
 * for a box object. cells has TRK_CLASS_CELLS entries. Returns the number
 * of class objects, or TRK_EINVAL when there are more than TRK_MAX_CLASSES
 * or one has no table. */
int trk_class_cells(const struct trk_object_def *objs, int n, uint16_t *cells, int *ord);
#ifdef __cplusplus
}
#endif

/* The object test for one channel triple. c0 is hue for hsv objects. */
TRK_HD int trk_box_match(const uint16_t lo[3], const uint16_t hi[3], int is_hsv, int c0, int c1,
                         int c2)
{
    return trk_chan_has(lo, hi, is_hsv, 0, c0) && trk_chan_has(lo, hi, is_hsv, 1, c1) &&
           trk_chan_has(lo, hi, is_hsv, 2, c2);
}

/* ------------------------------------------------------- single pixels */

/* Pixel (x, y) of img in object space `space`: the channels every backend
 * tests it with (trk_pixel_native, then trk_pixel_triples with the image's
 * matrix and range). For code that looks at single pixels (colour samples,
 * mask and preview images), not for the per-pixel hot paths. Host only. */
static inline void trk_image_pixel_space(const struct trk_image *img, int x, int y, int space,
                                         int c[3])
{
    int nat[3], t[TRK_SPACE_COUNT][3];
    const int yuv = trk_pixel_native(img->fmt, img->plane, img->pitch, x, y, nat);
    const int ci = trk_coef_index(img->matrix, img->full_range);
    TRK_ASSERT((unsigned)space < TRK_SPACE_COUNT);
    trk_pixel_spaces(&trk_yuv2rgb_coefs[ci], &trk_rgb2ycc_coefs[ci], trk_light_tables(), yuv,
                     1 << space, nat, t);
    c[0] = t[space][0], c[1] = t[space][1], c[2] = t[space][2];
}

/* Pixel (x, y) of img as R, G, B (YUV: nearest chroma, per the image's
 * matrix and range). Host only. */
static inline void trk_image_pixel_rgb(const struct trk_image *img, int x, int y, uint8_t rgb[3])
{
    int c[3];
    trk_image_pixel_space(img, x, y, TRK_SPACE_RGB, c);
    rgb[0] = (uint8_t)c[0], rgb[1] = (uint8_t)c[1], rgb[2] = (uint8_t)c[2];
}

/* True when pixel (x, y) of img matches def's box: the backends' rule for
 * one pixel (the mask view of the preview). Host only. */
static inline bool trk_pixel_matches(const struct trk_image *img, int x, int y,
                                     const struct trk_object_def *def)
{
    int c[3];
    if (def->space == TRK_SPACE_CLASS) {
        trk_image_pixel_space(img, x, y, TRK_SPACE_RGB, c);
        return def->cls && trk_class_has(def->cls, trk_class_cell(c[0], c[1], c[2]));
    }
    trk_image_pixel_space(img, x, y, def->space, c);
    return trk_box_match(def->lo, def->hi, def->space == TRK_SPACE_HSV, c[0], c[1], c[2]) != 0;
}

/* ------------------------------------------------------- display colour */

/* HSV -> RGB in integers (h in degrees 0..359, s and v 0..255), rounding to
 * nearest. Only for display colours: tracking never converts this way. */
static inline void trk_hsv_to_rgb(int h, int s, int v, uint8_t rgb[3])
{
    const int sector = h / 60, f = h % 60; /* position in the sector, 0..59 */
    const int den = 255 * 60;
    const int p = (v * (255 - s) + 127) / 255;
    const int q = (v * (den - s * f) + den / 2) / den;
    const int t = (v * (den - s * (60 - f)) + den / 2) / den;
    int r, g, b;
    switch (sector) {
    case 0: r = v, g = t, b = p; break;
    case 1: r = q, g = v, b = p; break;
    case 2: r = p, g = v, b = t; break;
    case 3: r = p, g = q, b = v; break;
    case 4: r = t, g = p, b = v; break;
    default: r = v, g = p, b = q; break;
    }
    rgb[0] = (uint8_t)r, rgb[1] = (uint8_t)g, rgb[2] = (uint8_t)b;
}

/* The display colour of an object without a "color" of its own (web
 * overlays, the hello message, the objects file): the centre of its box
 * (trk_range_centre; hsv: trk_hue_centre) converted to RGB: rgb the centre
 * itself, hsv per trk_hsv_to_rgb, ycbcr with BT.601 full range, lab per
 * trk_lab_to_rgb_display, rg as R = 3 I r / 255, G = 3 I g / 255, B the
 * rest (clamped); a class the mean of its cells' centres. Never used for tracking. Host code only
 * (both display functions). */
static inline void trk_object_display_rgb(const struct trk_object_def *def, uint8_t rgb[3])
{
    int c[3];
    for (int i = 0; i < 3; i++)
        c[i] = trk_range_centre(def->lo[i], def->hi[i]);
    switch (def->space) {
    case TRK_SPACE_RGB:
        rgb[0] = trk_clamp255(c[0]), rgb[1] = trk_clamp255(c[1]), rgb[2] = trk_clamp255(c[2]);
        return;
    case TRK_SPACE_HSV:
        trk_hsv_to_rgb(trk_hue_centre(def->lo[0], def->hi[0]), c[1], c[2], rgb);
        return;
    case TRK_SPACE_YCBCR: {
        const struct trk_yuv2rgb_coef *k = &trk_yuv2rgb_coefs[trk_coef_index(TRK_MATRIX_BT601, 1)];
        trk_yuv_to_rgb(k, c[0], c[1], c[2], &rgb[0], &rgb[1], &rgb[2]);
        return;
    }
    case TRK_SPACE_LAB: trk_lab_to_rgb_display(c[0], c[1], c[2], rgb); return;
    case TRK_SPACE_RG: {
        const int r = (3 * c[2] * c[0] + 127) / 255, g = (3 * c[2] * c[1] + 127) / 255;
        rgb[0] = trk_clamp255(r), rgb[1] = trk_clamp255(g), rgb[2] = trk_clamp255(3 * c[2] - r - g);
        return;
    }
    case TRK_SPACE_CLASS: { /* the mean of its cells' centres; gray when empty */
        uint64_t sum[3] = { 0, 0, 0 }, k = 0;
        for (int cell = 0; def->cls && cell < TRK_CLASS_CELLS; cell++) {
            if (!trk_class_has(def->cls, cell)) continue;
            sum[0] += (uint64_t)((cell >> 12) * 4 + 2),
                sum[1] += (uint64_t)((cell >> 6 & 63) * 4 + 2);
            sum[2] += (uint64_t)((cell & 63) * 4 + 2), k++;
        }
        for (int i = 0; i < 3; i++)
            rgb[i] = (uint8_t)(k ? (sum[i] + k / 2) / k : 128);
        return;
    }
    }
    TRK_ASSERT(!"object space out of range (trk_backend_set_objects rejects it)");
}

#endif
