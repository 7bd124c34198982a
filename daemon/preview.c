#include "preview.h"

#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "color.h"

struct trk_preview {
    int max_width, quality;
    tjhandle tj;
    uint8_t *rgb;
    size_t rgb_cap;
    unsigned char *jpeg;
    unsigned long jpeg_cap;
};

int trk_preview_create(int max_width, int quality, struct trk_preview **out)
{
    struct trk_preview *p = calloc(1, sizeof(*p));
    if (!p) return TRK_ENOMEM;
    p->max_width = max_width > 16 ? max_width : 16;
    p->quality = quality;
    p->tj = tjInitCompress();
    if (!p->tj) {
        free(p);
        return TRK_ENOMEM;
    }
    *out = p;
    return 0;
}

void trk_preview_destroy(struct trk_preview **pp)
{
    if (!pp || !*pp) return;
    struct trk_preview *p = *pp;
    tjDestroy(p->tj);
    tjFree(p->jpeg);
    free(p->rgb);
    free(p);
    *pp = NULL;
}

void trk_image_pixel_rgb(const struct trk_image *img, int x, int y, uint8_t rgb[3])
{
    const uint8_t *row = img->plane[0] + (size_t)y * img->pitch[0];
    int yy, cb, cr;
    switch (img->fmt) {
    case TRK_FMT_RGB24:
    case TRK_FMT_RGBA: {
        const uint8_t *p = row + (size_t)x * trk_pixfmt_bpp(img->fmt);
        rgb[0] = p[0], rgb[1] = p[1], rgb[2] = p[2];
        return;
    }
    case TRK_FMT_BGR24:
    case TRK_FMT_BGRA: {
        const uint8_t *p = row + (size_t)x * trk_pixfmt_bpp(img->fmt);
        rgb[0] = p[2], rgb[1] = p[1], rgb[2] = p[0];
        return;
    }
    case TRK_FMT_YUYV: {
        const uint8_t *m = row + (size_t)(x / 2) * 4;
        yy = m[(x & 1) * 2], cb = m[1], cr = m[3];
        break;
    }
    case TRK_FMT_NV12: {
        const uint8_t *c = img->plane[1] + (size_t)(y / 2) * img->pitch[1] + (size_t)(x / 2) * 2;
        yy = row[x], cb = c[0], cr = c[1];
        break;
    }
    case TRK_FMT_I420:
        yy = row[x];
        cb = img->plane[1][(size_t)(y / 2) * img->pitch[1] + x / 2];
        cr = img->plane[2][(size_t)(y / 2) * img->pitch[2] + x / 2];
        break;
    default: rgb[0] = rgb[1] = rgb[2] = 0; return;
    }
    trk_yuv_to_rgb(&trk_yuv2rgb_coefs[trk_coef_index(img->matrix, img->full_range)], yy, cb, cr,
                   &rgb[0], &rgb[1], &rgb[2]);
}

int trk_preview_encode(struct trk_preview *p, const struct trk_image *img, const uint8_t **jpeg,
                       size_t *size, int *out_w, int *out_h)
{
    int w = img->width <= p->max_width ? img->width : p->max_width;
    int h = (int)((long)img->height * w / img->width);
    if (h < 1) h = 1;
    size_t need = (size_t)w * h * 3;
    if (need > p->rgb_cap) {
        uint8_t *n = realloc(p->rgb, need);
        if (!n) return TRK_ENOMEM;
        p->rgb = n;
        p->rgb_cap = need;
    }
    /* Nearest sample at each preview pixel's centre. */
    for (int y = 0; y < h; y++) {
        int sy = (int)(((long)y * 2 + 1) * img->height / (2L * h));
        for (int x = 0; x < w; x++) {
            int sx = (int)(((long)x * 2 + 1) * img->width / (2L * w));
            trk_image_pixel_rgb(img, sx, sy, p->rgb + ((size_t)y * w + x) * 3);
        }
    }
    /* Worst-case buffer once per size, so the encoder never reallocates. */
    unsigned long worst = tjBufSize(w, h, TJSAMP_420);
    if (worst > p->jpeg_cap) {
        tjFree(p->jpeg);
        p->jpeg = tjAlloc((int)worst);
        p->jpeg_cap = p->jpeg ? worst : 0;
        if (!p->jpeg) return TRK_ENOMEM;
    }
    unsigned long jsize = p->jpeg_cap;
    if (tjCompress2(p->tj, p->rgb, w, 0, h, TJPF_RGB, &p->jpeg, &jsize, TJSAMP_420, p->quality,
                    TJFLAG_FASTDCT | TJFLAG_NOREALLOC) != 0)
        return TRK_EBACKEND;
    *jpeg = p->jpeg;
    *size = jsize;
    *out_w = w;
    *out_h = h;
    return 0;
}
