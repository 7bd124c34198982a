/* Whether a pixel is in an object's colour box, from first principles: the
 * oracle side of the blob and region tests. Each sample is addressed from
 * backend.h's plane layouts by this file's own code (not cpu_ref.c's); only
 * the colour arithmetic is color.h's, the definition all backends share.
 * Header-only, for the test files of this folder. */
#ifndef TRK_TEST_PIXEL_ORACLE_H
#define TRK_TEST_PIXEL_ORACLE_H

#include "backend.h"
#include "color.h"

#include <string.h>

/* Native sample of channel c (0: R or Y, 1: G or Cb, 2: B or Cr) of pixel
 * (x, y), addressed per backend.h's plane layouts. */
static int sample(const struct trk_image *im, int x, int y, int c)
{
    const size_t X = (size_t)x, Y = (size_t)y;
    const uint8_t *row0 = im->plane[0] + Y * im->pitch[0];
    switch (im->fmt) {
    case TRK_FMT_RGB24: return row0[3 * X + (size_t)c];
    case TRK_FMT_RGBA: return row0[4 * X + (size_t)c];
    case TRK_FMT_BGR24: return row0[3 * X + 2 - (size_t)c];
    case TRK_FMT_BGRA: return row0[4 * X + 2 - (size_t)c];
    case TRK_FMT_YUYV: /* Y0 U Y1 V per pixel pair */
        return c == 0 ? row0[2 * X] : row0[(X / 2) * 4 + (c == 1 ? 1 : 3)];
    case TRK_FMT_NV12:
        if (c == 0) return row0[X];
        return im->plane[1][(Y / 2) * im->pitch[1] + (X / 2) * 2 + (size_t)(c - 1)];
    case TRK_FMT_I420:
        if (c == 0) return row0[X];
        return im->plane[c][(Y / 2) * im->pitch[c] + X / 2];
    default: return -1;
    }
}

static int is_yuv(enum trk_pixfmt f)
{
    return f == TRK_FMT_YUYV || f == TRK_FMT_NV12 || f == TRK_FMT_I420;
}

/* Whether pixel (x, y) is in o's colour box. */
static int matches(const struct trk_image *im, const struct trk_object_def *o, int x, int y)
{
    const int k = trk_coef_index((int)im->matrix, im->full_range);
    int n[3], v[3];
    uint8_t a, b, c;
    for (int ch = 0; ch < 3; ch++)
        n[ch] = sample(im, x, y, ch);
    if (o->space == TRK_SPACE_YCBCR && is_yuv(im->fmt)) {
        memcpy(v, n, sizeof(v));
    } else if (o->space == TRK_SPACE_YCBCR) {
        trk_rgb_to_ycbcr(&trk_rgb2ycc_coefs[k], n[0], n[1], n[2], &a, &b, &c);
        v[0] = a, v[1] = b, v[2] = c;
    } else {
        if (is_yuv(im->fmt)) {
            trk_yuv_to_rgb(&trk_yuv2rgb_coefs[k], n[0], n[1], n[2], &a, &b, &c);
            n[0] = a, n[1] = b, n[2] = c;
        }
        if (o->space == TRK_SPACE_RGB) {
            memcpy(v, n, sizeof(v));
        } else {
            uint16_t h;
            trk_rgb_to_hsv(n[0], n[1], n[2], &h, &a, &b);
            v[0] = h, v[1] = a, v[2] = b;
        }
    }
    for (int ch = 0; ch < 3; ch++) {
        const int wraps = ch == 0 && o->space == TRK_SPACE_HSV && o->lo[0] > o->hi[0];
        const int in = wraps ? (v[0] >= o->lo[0] || v[0] <= o->hi[0])
                             : (v[ch] >= o->lo[ch] && v[ch] <= o->hi[ch]);
        if (!in) return 0;
    }
    return 1;
}

#endif
