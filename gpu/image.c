/* Pixel formats and plane geometry (image.h). */
#include "image.h"

#include <string.h>

#include "color.h" /* trk_fmt_bpp: the bytes-per-pixel rule, for device code too */

int trk_pixfmt_bpp(enum trk_pixfmt fmt)
{
    return trk_fmt_bpp((int)fmt); /* the rule lives in color.h, for device code too */
}

const char *trk_pixfmt_name(enum trk_pixfmt fmt)
{
    static const char *const names[TRK_FMT_COUNT] = { "rgb24", "rgba", "bgr24", "bgra",
                                                      "yuyv",  "nv12", "i420" };
    return (unsigned)fmt < TRK_FMT_COUNT ? names[fmt] : "?";
}

int trk_image_plane_layout(enum trk_pixfmt fmt, int width, int height, struct trk_plane_layout *L)
{
    memset(L, 0, sizeof(*L));
    if (width <= 0 || height <= 0 || (unsigned)fmt >= TRK_FMT_COUNT) return TRK_EINVAL;
    const size_t w = (size_t)width, cw = (w + 1) / 2;
    const int ch = (height + 1) / 2;
    L->rows[0] = height;
    switch (fmt) {
    case TRK_FMT_NV12:
        L->planes = 2;
        L->row_bytes[0] = w;
        L->row_bytes[1] = 2 * cw; /* U, V interleaved */
        L->rows[1] = ch;
        L->vshift[1] = 1;
        break;
    case TRK_FMT_I420:
        L->planes = 3;
        L->row_bytes[0] = w;
        L->row_bytes[1] = L->row_bytes[2] = cw;
        L->rows[1] = L->rows[2] = ch;
        L->vshift[1] = L->vshift[2] = 1;
        break;
    case TRK_FMT_YUYV:
        L->planes = 1;
        L->row_bytes[0] = 4 * cw; /* whole pixel pairs, also for odd widths */
        break;
    default:
        L->planes = 1;
        L->row_bytes[0] = w * (size_t)trk_fmt_bpp(fmt);
        break;
    }
    return 0;
}

int trk_image_check(const struct trk_image *img)
{
    struct trk_plane_layout L;
    if (!img || trk_image_plane_layout(img->fmt, img->width, img->height, &L)) return TRK_EINVAL;
    if (img->mem != TRK_MEM_HOST && img->mem != TRK_MEM_CUDA) return TRK_EINVAL;
    for (int p = 0; p < L.planes; p++)
        if (!img->plane[p] || img->pitch[p] < L.row_bytes[p]) return TRK_EINVAL;
    return 0;
}

int trk_image_gather_check(const struct trk_image *img, const struct trk_gather_point *pts, int n)
{
    for (int i = 0; i < n; i++)
        if (pts[i].x >= img->width || pts[i].y >= img->height) return TRK_EINVAL;
    return 0;
}

void trk_image_gather(const struct trk_image *img, const struct trk_gather_point *pts, int n,
                      struct trk_gather_value *out)
{
    for (int i = 0; i < n; i++) {
        int s[3];
        trk_pixel_native((int)img->fmt, img->plane, img->pitch, pts[i].x, pts[i].y, s);
        out[i] = (struct trk_gather_value){ { (uint8_t)s[0], (uint8_t)s[1], (uint8_t)s[2] }, 0 };
    }
}
