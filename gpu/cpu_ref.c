/* The CPU reference backend ("cpu-ref"): the definition of trackd's results.
 *
 * Every other backend is tested against this file, bit for bit, so it is
 * written to be obviously correct rather than fast: one pass over the frame,
 * pixel by pixel; for each pixel the channel triples are derived with the
 * functions of color.h only (the same arithmetic the GPU kernels run), then
 * every object is tested with trk_box_match inside its clipped ROI.
 *
 * Cost is O(width * height * objects); at 1080p with 256 objects that is
 * about half a billion box tests per frame (seconds), which is fine for a
 * reference and for tests at modest sizes. The fast backends exist for speed.
 *
 * Threading: one instance is used by one thread at a time (backend.h).
 * The work happens in submit; wait only copies the results out.
 */
#include "backend_impl.h"
#include "color.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

struct cpu_ref {
    int n;
    struct trk_object_def objs[TRK_MAX_OBJECTS];
    /* Results of the last submit, copied out by wait. */
    struct trk_obj_result res[TRK_MAX_OBJECTS];
    /* Scratch for one submit: each object's ROI clipped to the frame, and
     * whether it is non-empty. Sized once here, never per frame. */
    struct trk_roi roi[TRK_MAX_OBJECTS];
    bool live[TRK_MAX_OBJECTS];
    double total_ms;
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int ref_create(const struct trk_backend_cfg *cfg, void **self)
{
    (void)cfg; /* nothing is sized by the frame: the work is per pixel */
    struct cpu_ref *s = calloc(1, sizeof(*s));
    if (!s) return TRK_ENOMEM;
    *self = s;
    return 0;
}

static void ref_destroy(void *self)
{
    free(self);
}

static int ref_set_objects(void *self, const struct trk_object_def *objs, int n)
{
    struct cpu_ref *s = self;
    if (n < 0 || n > TRK_MAX_OBJECTS) return TRK_EINVAL;
    if (n > 0) memcpy(s->objs, objs, (size_t)n * sizeof(*objs));
    s->n = n;
    return 0;
}

/* The pixel (x, y) of img in its native encoding. For RGB formats *is_yuv is
 * 0 and a[] = R, G, B; for YUV formats *is_yuv is 1 and a[] = Y, Cb, Cr with
 * the chroma sample covering the pixel (YUYV (x/2, y), NV12/I420 (x/2, y/2)),
 * no interpolation, exactly as color.h's header defines. */
static void fetch(const struct trk_image *img, int x, int y, int *is_yuv, int a[3])
{
    const uint8_t *row = img->plane[0] + (size_t)y * img->pitch[0];
    const uint8_t *p;
    *is_yuv = 0;
    switch (img->fmt) {
    case TRK_FMT_RGB24:
    case TRK_FMT_RGBA:
        p = row + (size_t)x * (size_t)trk_pixfmt_bpp(img->fmt);
        a[0] = p[0], a[1] = p[1], a[2] = p[2];
        return;
    case TRK_FMT_BGR24:
    case TRK_FMT_BGRA:
        p = row + (size_t)x * (size_t)trk_pixfmt_bpp(img->fmt);
        a[0] = p[2], a[1] = p[1], a[2] = p[0];
        return;
    case TRK_FMT_YUYV:
        p = row + (size_t)(x / 2) * 4; /* Y0 U Y1 V */
        a[0] = p[(x & 1) ? 2 : 0], a[1] = p[1], a[2] = p[3];
        break;
    case TRK_FMT_NV12:
        p = img->plane[1] + (size_t)(y / 2) * img->pitch[1] + (size_t)(x / 2) * 2;
        a[0] = row[x], a[1] = p[0], a[2] = p[1];
        break;
    case TRK_FMT_I420:
        a[0] = row[x];
        a[1] = img->plane[1][(size_t)(y / 2) * img->pitch[1] + (size_t)(x / 2)];
        a[2] = img->plane[2][(size_t)(y / 2) * img->pitch[2] + (size_t)(x / 2)];
        break;
    default: /* unreachable: trk_image_check rejected the format */ a[0] = a[1] = a[2] = 0; return;
    }
    *is_yuv = 1;
}

static void accumulate(struct trk_obj_result *r, int x, int y)
{
    if (r->mass == 0) {
        r->x0 = r->x1 = x;
        r->y0 = r->y1 = y;
    } else {
        if (x < r->x0) r->x0 = x;
        if (x > r->x1) r->x1 = x;
        if (y < r->y0) r->y0 = y;
        if (y > r->y1) r->y1 = y;
    }
    r->mass++;
    r->sum_x += (uint64_t)x;
    r->sum_y += (uint64_t)y;
}

static int ref_submit(void *self, const struct trk_image *img, const struct trk_roi *rois)
{
    struct cpu_ref *s = self;
    double t0 = now_ms();
    int ci = trk_coef_index((int)img->matrix, img->full_range);
    const struct trk_yuv2rgb_coef *k_yuv = &trk_yuv2rgb_coefs[ci];
    const struct trk_rgb2ycc_coef *k_ycc = &trk_rgb2ycc_coefs[ci];

    for (int i = 0; i < s->n; i++) {
        trk_result_clear(&s->res[i]);
        s->live[i] = trk_roi_clip(rois, i, img->width, img->height, &s->roi[i]);
    }

    for (int y = 0; y < img->height; y++) {
        for (int x = 0; x < img->width; x++) {
            int is_yuv, nat[3];
            uint8_t rgb[3], ycc[3], sv[2];
            uint16_t hue;
            fetch(img, x, y, &is_yuv, nat);
            if (is_yuv) {
                ycc[0] = (uint8_t)nat[0], ycc[1] = (uint8_t)nat[1], ycc[2] = (uint8_t)nat[2];
                trk_yuv_to_rgb(k_yuv, nat[0], nat[1], nat[2], &rgb[0], &rgb[1], &rgb[2]);
            } else {
                rgb[0] = (uint8_t)nat[0], rgb[1] = (uint8_t)nat[1], rgb[2] = (uint8_t)nat[2];
                trk_rgb_to_ycbcr(k_ycc, nat[0], nat[1], nat[2], &ycc[0], &ycc[1], &ycc[2]);
            }
            trk_rgb_to_hsv(rgb[0], rgb[1], rgb[2], &hue, &sv[0], &sv[1]);

            for (int i = 0; i < s->n; i++) {
                const struct trk_roi *r = &s->roi[i];
                const struct trk_object_def *o = &s->objs[i];
                int m;
                if (!s->live[i] || x < r->x0 || x > r->x1 || y < r->y0 || y > r->y1) continue;
                switch (o->space) {
                case TRK_SPACE_RGB:
                    m = trk_box_match(o->lo, o->hi, 0, rgb[0], rgb[1], rgb[2]);
                    break;
                case TRK_SPACE_HSV: m = trk_box_match(o->lo, o->hi, 1, hue, sv[0], sv[1]); break;
                case TRK_SPACE_YCBCR:
                    m = trk_box_match(o->lo, o->hi, 0, ycc[0], ycc[1], ycc[2]);
                    break;
                default: m = 0; break;
                }
                if (m) accumulate(&s->res[i], x, y);
            }
        }
    }
    s->total_ms = now_ms() - t0;
    return 0;
}

static int ref_wait(void *self, struct trk_obj_result *out, struct trk_backend_timing *t)
{
    struct cpu_ref *s = self;
    if (s->n > 0 && out) memcpy(out, s->res, (size_t)s->n * sizeof(*out));
    if (t) {
        t->upload_ms = 0;
        t->kernel_ms = s->total_ms;
        t->total_ms = s->total_ms;
    }
    return 0;
}

const struct trk_backend_ops trk_cpu_ref_ops = {
    .name = "cpu-ref",
    .create = ref_create,
    .destroy = ref_destroy,
    .set_objects = ref_set_objects,
    .submit = ref_submit,
    .wait = ref_wait,
    .describe = NULL,
    .variants = NULL,
};
