/* The CPU reference backend ("cpu-ref"): the definition of trackd's results.
 *
 * Every other backend is tested against this file, bit for bit, so it is
 * written to be obviously correct rather than fast: one pass over the frame,
 * pixel by pixel; for each pixel the native samples (trk_pixel_native) and
 * the channel triples (trk_pixel_triples) come from color.h only (the same
 * functions the GPU kernels run), then every object is tested with
 * trk_box_match inside its clipped ROI.
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
    double t0 = trk_backend_now_ms();
    int ci = trk_coef_index((int)img->matrix, img->full_range);
    const struct trk_yuv2rgb_coef *k_yuv = &trk_yuv2rgb_coefs[ci];
    const struct trk_rgb2ycc_coef *k_ycc = &trk_rgb2ycc_coefs[ci];

    for (int i = 0; i < s->n; i++) {
        trk_result_clear(&s->res[i]);
        s->live[i] = trk_roi_clip(rois, i, img->width, img->height, &s->roi[i]);
    }

    for (int y = 0; y < img->height; y++) {
        for (int x = 0; x < img->width; x++) {
            int nat[3], c[3][3];
            const int is_yuv = trk_pixel_native(img->fmt, img->plane, img->pitch, x, y, nat);
            trk_pixel_triples(k_yuv, k_ycc, is_yuv, TRK_SPACES_ALL, nat, c);

            for (int i = 0; i < s->n; i++) {
                const struct trk_roi *r = &s->roi[i];
                const struct trk_object_def *o = &s->objs[i];
                if (!s->live[i] || x < r->x0 || x > r->x1 || y < r->y0 || y > r->y1) continue;
                /* set_objects accepts only the three spaces (backend.c). */
                TRK_ASSERT((unsigned)o->space <= TRK_SPACE_YCBCR);
                const int *t = c[o->space];
                const int m =
                    trk_box_match(o->lo, o->hi, o->space == TRK_SPACE_HSV, t[0], t[1], t[2]);
                if (m) accumulate(&s->res[i], x, y);
            }
        }
    }
    s->total_ms = trk_backend_now_ms() - t0;
    return 0;
}

static int ref_wait(void *self, struct trk_obj_result *out, struct trk_backend_timing *t)
{
    struct cpu_ref *s = self;
    return trk_backend_sync_wait(s->res, s->n, s->total_ms, out, t);
}

/* No variants, and the name says it all (describe NULL). */
const struct trk_backend_ops trk_cpu_ref_ops = { TRK_BACKEND_OPS(ref, "cpu-ref") };
