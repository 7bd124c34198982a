/* color.h's integer colour rules against double-precision formulas written
 * from the standards (Kr/Kb of BT.601 and BT.709, limited and full range),
 * plus round trips, HSV over every 24-bit colour and the hue-wrap box test;
 * the hue range, the native sample reader of every pixel format against
 * hand-written bytes, the single-pixel reader of an image, the plane geometry, the default display
 * colour (one rule for the objects file and the protocol) and TRK_ASSERT.
 *
 * The integer rules must agree with the exact maths within 1 code value
 * (they round once, in Q16); they are the definition for every backend, so
 * this is what pins them to the standards.
 */
#include "../check.h"
#include "color.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const double KR[2] = { 0.299, 0.2126 }, KB[2] = { 0.114, 0.0722 };

static double clampd(double v)
{
    return v < 0 ? 0 : v > 255 ? 255 : v;
}

/* Y'CbCr -> R'G'B' in double (ITU-R BT.601 / BT.709 equations). */
static void yuv2rgb_d(int mat, int full, int y, int cb, int cr, double rgb[3])
{
    double kr = KR[mat], kb = KB[mat], kg = 1 - kr - kb;
    double yf = full ? y : (y - 16) * 255.0 / 219.0;
    double u = full ? cb - 128 : (cb - 128) * 255.0 / 224.0;
    double v = full ? cr - 128 : (cr - 128) * 255.0 / 224.0;
    rgb[0] = clampd(yf + 2 * (1 - kr) * v);
    rgb[1] = clampd(yf - 2 * kb * (1 - kb) / kg * u - 2 * kr * (1 - kr) / kg * v);
    rgb[2] = clampd(yf + 2 * (1 - kb) * u);
}

static void rgb2ycc_d(int mat, int full, int r, int g, int b, double ycc[3])
{
    double kr = KR[mat], kb = KB[mat], kg = 1 - kr - kb;
    double yl = kr * r + kg * g + kb * b;
    double pb = (b - yl) / (2 * (1 - kb)), pr = (r - yl) / (2 * (1 - kr));
    ycc[0] = clampd(full ? yl : 16 + yl * 219.0 / 255.0);
    ycc[1] = clampd(128 + (full ? pb : pb * 224.0 / 255.0));
    ycc[2] = clampd(128 + (full ? pr : pr * 224.0 / 255.0));
}

static void test_yuv_to_rgb(void)
{
    for (int mat = 0; mat < 2; mat++)
        for (int full = 0; full < 2; full++) {
            const struct trk_yuv2rgb_coef *k = &trk_yuv2rgb_coefs[trk_coef_index(mat, full)];
            double worst = 0;
            /* Every Y, Cb, Cr triple (16.7 M) per matrix and range. */
            for (int y = 0; y < 256; y++)
                for (int cb = 0; cb < 256; cb++)
                    for (int cr = 0; cr < 256; cr++) {
                        uint8_t o[3];
                        double d[3];
                        trk_yuv_to_rgb(k, y, cb, cr, &o[0], &o[1], &o[2]);
                        yuv2rgb_d(mat, full, y, cb, cr, d);
                        for (int c = 0; c < 3; c++) {
                            double e = fabs(o[c] - d[c]);
                            if (e > worst) worst = e;
                        }
                    }
            /* The integer result rounds the exact value (error <= 0.5) up
             * to coefficient rounding: allow 1. */
            CHECKF(worst < 1.0, "yuv->rgb matrix %d full %d: worst error %.3f", mat, full, worst);
            printf("yuv->rgb matrix %d full %d: worst error %.3f\n", mat, full, worst);
        }
}

static void test_rgb_to_ycbcr(void)
{
    for (int mat = 0; mat < 2; mat++)
        for (int full = 0; full < 2; full++) {
            const struct trk_rgb2ycc_coef *k = &trk_rgb2ycc_coefs[trk_coef_index(mat, full)];
            double worst = 0;
            for (int r = 0; r < 256; r++)
                for (int g = 0; g < 256; g++)
                    for (int b = 0; b < 256; b++) {
                        uint8_t o[3];
                        double d[3];
                        trk_rgb_to_ycbcr(k, r, g, b, &o[0], &o[1], &o[2]);
                        rgb2ycc_d(mat, full, r, g, b, d);
                        for (int c = 0; c < 3; c++) {
                            double e = fabs(o[c] - d[c]);
                            if (e > worst) worst = e;
                        }
                    }
            CHECKF(worst < 1.0, "rgb->ycbcr matrix %d full %d: worst error %.3f", mat, full, worst);
            printf("rgb->ycbcr matrix %d full %d: worst error %.3f\n", mat, full, worst);
            /* Black, white and gray land on the nominal codes exactly. */
            uint8_t y, cb, cr;
            trk_rgb_to_ycbcr(k, 0, 0, 0, &y, &cb, &cr);
            CHECK(y == (full ? 0 : 16) && cb == 128 && cr == 128);
            trk_rgb_to_ycbcr(k, 255, 255, 255, &y, &cb, &cr);
            CHECK(y == (full ? 255 : 235) && cb == 128 && cr == 128);
            for (int v = 0; v < 256; v++) {
                trk_rgb_to_ycbcr(k, v, v, v, &y, &cb, &cr);
                CHECK(cb == 128 && cr == 128);
            }
        }
}

/* RGB -> YCbCr -> RGB. Full range loses at most one code (two roundings of
 * at most half a code each); limited range squeezes 256 levels into 220 (Y)
 * and 225 (C), so one more code of error is inherent. The bounds are the
 * exhaustive worst cases, so any change to the coefficients that makes the
 * round trip worse fails here. Gray must survive exactly in full range. */
static void test_round_trip(void)
{
    for (int mat = 0; mat < 2; mat++)
        for (int full = 0; full < 2; full++) {
            int ki = trk_coef_index(mat, full);
            int worst = 0;
            for (int r = 0; r < 256; r++)
                for (int g = 0; g < 256; g++)
                    for (int b = 0; b < 256; b++) {
                        uint8_t y, cb, cr, o[3];
                        trk_rgb_to_ycbcr(&trk_rgb2ycc_coefs[ki], r, g, b, &y, &cb, &cr);
                        trk_yuv_to_rgb(&trk_yuv2rgb_coefs[ki], y, cb, cr, &o[0], &o[1], &o[2]);
                        int e0 = abs(o[0] - r), e1 = abs(o[1] - g), e2 = abs(o[2] - b);
                        int e = e0 > e1 ? e0 : e1;
                        e = e > e2 ? e : e2;
                        if (e > worst) worst = e;
                    }
            printf("round trip matrix %d full %d: worst error %d\n", mat, full, worst);
            CHECKF(worst <= (full ? 1 : 2), "round trip matrix %d full %d: worst %d", mat, full,
                   worst);
            if (full)
                for (int v = 0; v < 256; v++) {
                    uint8_t y, cb, cr, o[3];
                    trk_rgb_to_ycbcr(&trk_rgb2ycc_coefs[ki], v, v, v, &y, &cb, &cr);
                    trk_yuv_to_rgb(&trk_yuv2rgb_coefs[ki], y, cb, cr, &o[0], &o[1], &o[2]);
                    CHECK(o[0] == v && o[1] == v && o[2] == v);
                }
        }
}

/* HSV against the textbook double formula, every 24-bit colour. */
static void test_hsv(void)
{
    double worst_h = 0, worst_s = 0;
    long bad = 0;
    for (int r = 0; r < 256; r++)
        for (int g = 0; g < 256; g++)
            for (int b = 0; b < 256; b++) {
                uint16_t h;
                uint8_t s, v;
                trk_rgb_to_hsv(r, g, b, &h, &s, &v);
                int mx = r > g ? (r > b ? r : b) : (g > b ? g : b);
                int mn = r < g ? (r < b ? r : b) : (g < b ? g : b);
                double d = mx - mn, hd = 0;
                if (d > 0) {
                    if (mx == r)
                        hd = 60 * fmod((g - b) / d + 6, 6);
                    else if (mx == g)
                        hd = 60 * ((b - r) / d + 2);
                    else
                        hd = 60 * ((r - g) / d + 4);
                }
                double sd = mx ? 255.0 * d / mx : 0;
                double eh = fabs(h - hd);
                if (eh > 180) eh = 360 - eh; /* circular distance */
                double es = fabs(s - sd);
                if (eh > worst_h) worst_h = eh;
                if (es > worst_s) worst_s = es;
                if (v != mx || h > 359 || (d == 0 && h != 0) || eh > 1 || es > 1) bad++;
            }
    printf("hsv: worst hue error %.3f deg, worst saturation error %.3f\n", worst_h, worst_s);
    CHECKF(bad == 0, "%ld colours off (hue %.3f, sat %.3f)", bad, worst_h, worst_s);
    uint16_t h;
    uint8_t s, v;
    /* The seam and the named colours, exactly. */
    trk_rgb_to_hsv(255, 0, 0, &h, &s, &v);
    CHECK(h == 0 && s == 255 && v == 255);
    trk_rgb_to_hsv(255, 0, 1, &h, &s, &v);
    CHECK(h == 0); /* 359.76 rounds up to 360 = 0 */
    trk_rgb_to_hsv(255, 0, 5, &h, &s, &v);
    CHECK(h == 359);
    trk_rgb_to_hsv(0, 255, 0, &h, &s, &v);
    CHECK(h == 120);
    trk_rgb_to_hsv(0, 0, 255, &h, &s, &v);
    CHECK(h == 240);
    trk_rgb_to_hsv(255, 255, 0, &h, &s, &v);
    CHECK(h == 60);
    trk_rgb_to_hsv(0, 0, 0, &h, &s, &v);
    CHECK(h == 0 && s == 0 && v == 0);
    trk_rgb_to_hsv(77, 77, 77, &h, &s, &v);
    CHECK(h == 0 && s == 0 && v == 77);
}

/* The box test: hue ranges with lo > hi wrap through 0 (hsv only); for every
 * other channel and space lo > hi matches nothing. Compared with the set
 * definition over a dense grid of ranges and every hue. */
static void test_box_match(void)
{
    long checked = 0;
    for (int lo = 0; lo < 360; lo += (lo < 10 || lo > 350) ? 1 : 7)
        for (int hi = 0; hi < 360; hi += (hi < 10 || hi > 350) ? 1 : 7) {
            uint16_t L[3] = { (uint16_t)lo, 10, 20 }, H[3] = { (uint16_t)hi, 200, 210 };
            for (int h = 0; h < 360; h++) {
                int in_set = lo <= hi ? (h >= lo && h <= hi) : (h >= lo || h <= hi);
                CHECKF(!!trk_box_match(L, H, 1, h, 100, 100) == in_set, "hsv %d..%d h %d", lo, hi,
                       h);
                /* Non-hue channels bound the match either way. */
                CHECK(!trk_box_match(L, H, 1, h, 9, 100));
                CHECK(!trk_box_match(L, H, 1, h, 100, 211));
                /* Not hsv: no wrap. */
                if (h < 256 && lo < 256 && hi < 256)
                    CHECK(!!trk_box_match(L, H, 0, h, 100, 100) == (lo <= h && h <= hi));
                checked++;
            }
        }
    uint16_t L[3] = { 346, 110, 70 }, H[3] = { 14, 255, 255 }; /* the README's "red" */
    CHECK(trk_box_match(L, H, 1, 0, 200, 200));
    CHECK(trk_box_match(L, H, 1, 359, 200, 200));
    CHECK(trk_box_match(L, H, 1, 346, 110, 70));
    CHECK(trk_box_match(L, H, 1, 14, 255, 255));
    CHECK(!trk_box_match(L, H, 1, 15, 200, 200));
    CHECK(!trk_box_match(L, H, 1, 345, 200, 200));
    CHECK(!trk_box_match(L, H, 1, 180, 200, 200));
    CHECK(!trk_box_match(L, H, 1, 0, 109, 200));
    /* Inclusive bounds on every channel. */
    uint16_t l2[3] = { 10, 20, 30 }, h2[3] = { 10, 20, 30 };
    CHECK(trk_box_match(l2, h2, 0, 10, 20, 30));
    CHECK(!trk_box_match(l2, h2, 0, 11, 20, 30));
    CHECK(!trk_box_match(l2, h2, 0, 10, 20, 31));
    CHECK(checked > 100000);
}

/* The hue range and channel limits every layer derives from TRK_HUE_VALUES. */
static void test_channels(void)
{
    CHECK(TRK_HUE_VALUES == 360);
    for (int s = 0; s < 3; s++)
        for (int c = 0; c < 3; c++) {
            const int hue = s == TRK_SPACE_HSV && c == 0;
            CHECK(trk_chan_values(s, c) == (hue ? 360 : 256));
            CHECK(trk_chan_max(s, c) == (hue ? 359 : 255));
        }
    CHECK(trk_hue_wrap(-1) == 359 && trk_hue_wrap(360) == 0 && trk_hue_wrap(725) == 5);
    CHECK(trk_hue_wrap(-725) == 355 && trk_hue_wrap(0) == 0 && trk_hue_wrap(359) == 359);
    /* Centres round half up; a wrapping range's centre lies across 0. */
    CHECK(trk_hue_centre(10, 21) == 16);
    CHECK(trk_hue_centre(350, 10) == 0);
    CHECK(trk_hue_centre(340, 10) == 355);
    CHECK(trk_hue_centre(359, 0) == 0);
    CHECK(trk_hue_centre(0, 359) == 180);
    CHECK(trk_range_centre(10, 21) == 16 && trk_range_centre(4, 4) == 4);
}

/* The default display colour: one definition (color.h) for the objects file
 * and the hello message, pinned here to exact bytes. */
static void test_display_colour(void)
{
    struct trk_object_def d = { .space = TRK_SPACE_HSV,
                                .lo = { 10, 200, 100 },
                                .hi = { 21, 255, 255 } };
    uint8_t c[3];
    /* Hue centre 16 (not 15), S 228, V 178; integer HSV -> RGB. */
    trk_object_display_rgb(&d, c);
    CHECKF(c[0] == 178 && c[1] == 61 && c[2] == 19, "hsv 10..21: %d %d %d", c[0], c[1], c[2]);
    d.lo[0] = 350, d.hi[0] = 10, d.lo[1] = d.hi[1] = 255, d.lo[2] = d.hi[2] = 255;
    trk_object_display_rgb(&d, c);
    CHECK(c[0] == 255 && c[1] == 0 && c[2] == 0);
    struct trk_object_def r = { .space = TRK_SPACE_RGB,
                                .lo = { 10, 20, 30 },
                                .hi = { 20, 40, 31 } };
    trk_object_display_rgb(&r, c);
    CHECK(c[0] == 15 && c[1] == 30 && c[2] == 31);
    struct trk_object_def y = { .space = TRK_SPACE_YCBCR,
                                .lo = { 0, 0, 0 },
                                .hi = { 255, 255, 255 } };
    trk_object_display_rgb(&y, c);
    CHECK(c[0] == 128 && c[1] == 128 && c[2] == 128);
}

/* trk_pixel_native on hand-written bytes of every format: 4x4 frames whose
 * byte at plane p, offset o is 16 p + o + 1 (pitches padded), so each sample
 * names where it was read from. */
static void test_pixel_native(void)
{
    uint8_t mem[3][64];
    for (int p = 0; p < 3; p++)
        for (int o = 0; o < 64; o++)
            mem[p][o] = (uint8_t)(64 * p + o + 1);
    const uint8_t *plane[3] = { mem[0], mem[1], mem[2] };
    int s[3];
    /* Packed RGB: pitch 15 (RGB24/BGR24), 17 (RGBA/BGRA); pixel (2, 1). */
    size_t p3[3] = { 15, 0, 0 }, p4[3] = { 17, 0, 0 };
    CHECK(trk_pixel_native(TRK_FMT_RGB24, plane, p3, 2, 1, s) == 0);
    CHECK(s[0] == mem[0][21] && s[1] == mem[0][22] && s[2] == mem[0][23]);
    CHECK(trk_pixel_native(TRK_FMT_BGR24, plane, p3, 2, 1, s) == 0);
    CHECK(s[0] == mem[0][23] && s[1] == mem[0][22] && s[2] == mem[0][21]);
    CHECK(trk_pixel_native(TRK_FMT_RGBA, plane, p4, 2, 1, s) == 0);
    CHECK(s[0] == mem[0][25] && s[1] == mem[0][26] && s[2] == mem[0][27]);
    CHECK(trk_pixel_native(TRK_FMT_BGRA, plane, p4, 2, 1, s) == 0);
    CHECK(s[0] == mem[0][27] && s[1] == mem[0][26] && s[2] == mem[0][25]);
    /* YUYV, pitch 9: pixel (3, 2) is Y1 of pair 1 of row 2 (Y0 U Y1 V). */
    size_t py[3] = { 9, 0, 0 };
    CHECK(trk_pixel_native(TRK_FMT_YUYV, plane, py, 3, 2, s) == 1);
    CHECK(s[0] == mem[0][18 + 6] && s[1] == mem[0][18 + 5] && s[2] == mem[0][18 + 7]);
    CHECK(trk_pixel_native(TRK_FMT_YUYV, plane, py, 2, 2, s) == 1);
    CHECK(s[0] == mem[0][18 + 4] && s[1] == mem[0][18 + 5] && s[2] == mem[0][18 + 7]);
    /* NV12, pitches 5 and 6: pixel (3, 3) uses chroma (1, 1). */
    size_t pn[3] = { 5, 6, 0 };
    CHECK(trk_pixel_native(TRK_FMT_NV12, plane, pn, 3, 3, s) == 1);
    CHECK(s[0] == mem[0][18] && s[1] == mem[1][6 + 2] && s[2] == mem[1][6 + 3]);
    /* I420, pitches 5, 3, 4: pixel (2, 3) uses chroma (1, 1). */
    size_t pi[3] = { 5, 3, 4 };
    CHECK(trk_pixel_native(TRK_FMT_I420, plane, pi, 2, 3, s) == 1);
    CHECK(s[0] == mem[0][17] && s[1] == mem[1][3 + 1] && s[2] == mem[2][4 + 1]);
    /* The triples of a YUV pixel: ycbcr is the native samples, rgb the
     * frame's conversion of them, hsv of that rgb. */
    int t[3][3];
    const struct trk_yuv2rgb_coef *k = &trk_yuv2rgb_coefs[trk_coef_index(TRK_MATRIX_BT709, 0)];
    trk_pixel_triples(k, NULL, 1, TRK_SPACES_ALL, s, t);
    uint8_t r, g, b, sat, v;
    uint16_t h;
    trk_yuv_to_rgb(k, s[0], s[1], s[2], &r, &g, &b);
    trk_rgb_to_hsv(r, g, b, &h, &sat, &v);
    CHECK(t[TRK_SPACE_YCBCR][0] == s[0] && t[TRK_SPACE_YCBCR][1] == s[1] &&
          t[TRK_SPACE_YCBCR][2] == s[2]);
    CHECK(t[TRK_SPACE_RGB][0] == r && t[TRK_SPACE_RGB][1] == g && t[TRK_SPACE_RGB][2] == b);
    CHECK(t[TRK_SPACE_HSV][0] == h && t[TRK_SPACE_HSV][1] == sat && t[TRK_SPACE_HSV][2] == v);
}

/* trk_image_pixel_rgb / trk_image_pixel_space read a pixel through the
 * image's own format, matrix and range: a BGRA pixel comes back as R, G, B;
 * an I420 pixel converts with the image's coefficients (BT.709 limited
 * here, which no other matrix/range maps to the same colour). */
static void test_image_pixel(void)
{
    uint8_t bgra[2 * 4] = { 10, 20, 30, 0, 200, 100, 50, 0 };
    struct trk_image img = {
        .plane = { bgra }, .pitch = { 8 }, .width = 2, .height = 1, .fmt = TRK_FMT_BGRA
    };
    uint8_t rgb[3];
    trk_image_pixel_rgb(&img, 1, 0, rgb);
    CHECKF(rgb[0] == 50 && rgb[1] == 100 && rgb[2] == 200, "bgra -> %d %d %d", rgb[0], rgb[1],
           rgb[2]);

    /* 2x2 I420: Y 60, 70 / 80, 90; one chroma sample Cb 90, Cr 200. */
    uint8_t y[4] = { 60, 70, 80, 90 }, cb[1] = { 90 }, cr[1] = { 200 };
    img = (struct trk_image){ .plane = { y, cb, cr },
                              .pitch = { 2, 1, 1 },
                              .width = 2,
                              .height = 2,
                              .fmt = TRK_FMT_I420,
                              .matrix = TRK_MATRIX_BT709,
                              .full_range = 0 };
    const struct trk_yuv2rgb_coef *k = &trk_yuv2rgb_coefs[trk_coef_index(TRK_MATRIX_BT709, 0)];
    uint8_t r, g, b;
    trk_yuv_to_rgb(k, 90, 90, 200, &r, &g, &b);
    trk_image_pixel_rgb(&img, 1, 1, rgb);
    CHECKF(rgb[0] == r && rgb[1] == g && rgb[2] == b, "i420 -> %d %d %d, want %d %d %d", rgb[0],
           rgb[1], rgb[2], r, g, b);
    /* Any other coefficients give another colour for this pixel. */
    for (int ci = 0; ci < 4; ci++) {
        if (ci == trk_coef_index(TRK_MATRIX_BT709, 0)) continue;
        uint8_t r2, g2, b2;
        trk_yuv_to_rgb(&trk_yuv2rgb_coefs[ci], 90, 90, 200, &r2, &g2, &b2);
        CHECK(r2 != r || g2 != g || b2 != b);
    }
    int c[3];
    trk_image_pixel_space(&img, 1, 1, TRK_SPACE_YCBCR, c);
    CHECK(c[0] == 90 && c[1] == 90 && c[2] == 200);
    uint16_t h;
    uint8_t sat, v;
    trk_rgb_to_hsv(r, g, b, &h, &sat, &v);
    trk_image_pixel_space(&img, 1, 1, TRK_SPACE_HSV, c);
    CHECK(c[0] == h && c[1] == sat && c[2] == v);
}

/* trk_image_plane_layout at an odd size (5 x 3), and its refusals. */
static void test_plane_layout(void)
{
    static const struct {
        int planes;
        size_t row[3];
        int rows[3], vshift[3];
    } want[TRK_FMT_COUNT] = {
        [TRK_FMT_RGB24] = { 1, { 15 }, { 3 }, { 0 } },
        [TRK_FMT_RGBA] = { 1, { 20 }, { 3 }, { 0 } },
        [TRK_FMT_BGR24] = { 1, { 15 }, { 3 }, { 0 } },
        [TRK_FMT_BGRA] = { 1, { 20 }, { 3 }, { 0 } },
        [TRK_FMT_YUYV] = { 1, { 12 }, { 3 }, { 0 } }, /* 3 whole pixel pairs */
        [TRK_FMT_NV12] = { 2, { 5, 6 }, { 3, 2 }, { 0, 1 } },
        [TRK_FMT_I420] = { 3, { 5, 3, 3 }, { 3, 2, 2 }, { 0, 1, 1 } },
    };
    for (int f = 0; f < TRK_FMT_COUNT; f++) {
        struct trk_plane_layout L;
        CHECK(trk_image_plane_layout((enum trk_pixfmt)f, 5, 3, &L) == 0);
        CHECKF(L.planes == want[f].planes, "fmt %d planes %d", f, L.planes);
        for (int p = 0; p < 3; p++)
            CHECKF(L.row_bytes[p] == want[f].row[p] && L.rows[p] == want[f].rows[p] &&
                       L.vshift[p] == want[f].vshift[p],
                   "fmt %d plane %d: %zu bytes x %d rows, shift %d", f, p, L.row_bytes[p],
                   L.rows[p], L.vshift[p]);
    }
    struct trk_plane_layout L;
    CHECK(trk_image_plane_layout(TRK_FMT_COUNT, 5, 3, &L) == TRK_EINVAL && L.planes == 0);
    CHECK(trk_image_plane_layout(TRK_FMT_NV12, 0, 3, &L) == TRK_EINVAL);
    CHECK(trk_image_plane_layout(TRK_FMT_NV12, 5, -1, &L) == TRK_EINVAL);
}

/* TRK_ASSERT stays on whatever NDEBUG says (this file is built like the
 * library, -DNDEBUG in release builds): a false condition prints file:line
 * and aborts. Run in a child so the abort is observed, not suffered. */
static void test_assert(void)
{
    int fds[2];
    if (pipe(fds) != 0) {
        CHECK(!"pipe");
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        volatile int two = 2;
        TRK_ASSERT(two == 1);
        TRK_ASSERT(two == 2); /* not reached */
        _exit(0);
    }
    close(fds[1]);
    char out[512] = "";
    size_t n = 0;
    ssize_t got;
    while (n + 1 < sizeof(out) && (got = read(fds[0], out + n, sizeof(out) - 1 - n)) > 0)
        n += (size_t)got;
    out[n] = 0;
    close(fds[0]);
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
    CHECKF(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "child status %d", st);
    CHECKF(strstr(out, "test_color.c:") && strstr(out, "assertion failed: two == 1"),
           "assert message: %s", out);
}

int main(void)
{
    test_yuv_to_rgb();
    test_rgb_to_ycbcr();
    test_round_trip();
    test_hsv();
    test_box_match();
    test_channels();
    test_display_colour();
    test_pixel_native();
    test_image_pixel();
    test_plane_layout();
    test_assert();
    return check_exit("test_color");
}
