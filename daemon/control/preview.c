#include "preview.h"

#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "color.h"
#include "messages.h"

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

int trk_preview_rgb(struct trk_preview *p, const struct trk_image *img,
                    const struct trk_object_def *mask, const struct trk_image *mask_img,
                    struct trk_image *rgb)
{
    const struct trk_image *test = mask_img ? mask_img : img;
    int w, h;
    trk_msg_preview_size(img->width, img->height, p->max_width, &w, &h);
    if (w < 1) return TRK_EINVAL;
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
            uint8_t *px = p->rgb + ((size_t)y * w + x) * 3;
            if (mask && trk_pixel_matches(test, sx, sy, mask)) {
                px[0] = px[1] = px[2] = 255;
            } else {
                trk_image_pixel_rgb(img, sx, sy, px);
                if (mask) px[0] /= 4, px[1] /= 4, px[2] /= 4;
            }
        }
    }
    *rgb = (struct trk_image){ .plane = { p->rgb },
                               .pitch = { (size_t)w * 3 },
                               .width = w,
                               .height = h,
                               .fmt = TRK_FMT_RGB24,
                               .matrix = TRK_MATRIX_BT601,
                               .full_range = true };
    return 0;
}

int trk_preview_compress(struct trk_preview *p, const struct trk_image *rgb, const uint8_t **jpeg,
                         size_t *size)
{
    int w = rgb->width, h = rgb->height;
    /* Worst-case buffer once per size, so the encoder never reallocates. */
    unsigned long worst = tjBufSize(w, h, TJSAMP_420);
    if (worst > p->jpeg_cap) {
        tjFree(p->jpeg);
        p->jpeg = tjAlloc((int)worst);
        p->jpeg_cap = p->jpeg ? worst : 0;
        if (!p->jpeg) return TRK_ENOMEM;
    }
    unsigned long jsize = p->jpeg_cap;
    if (tjCompress2(p->tj, rgb->plane[0], w, (int)rgb->pitch[0], h, TJPF_RGB, &p->jpeg, &jsize,
                    TJSAMP_420, p->quality, TJFLAG_FASTDCT | TJFLAG_NOREALLOC) != 0)
        return TRK_EBACKEND;
    *jpeg = p->jpeg;
    *size = jsize;
    return 0;
}

int trk_preview_encode(struct trk_preview *p, const struct trk_image *img, const uint8_t **jpeg,
                       size_t *size, int *out_w, int *out_h)
{
    struct trk_image rgb;
    int err = trk_preview_rgb(p, img, NULL, NULL, &rgb);
    if (!err) err = trk_preview_compress(p, &rgb, jpeg, size);
    if (err) return err;
    *out_w = rgb.width;
    *out_h = rgb.height;
    return 0;
}
