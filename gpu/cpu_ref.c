/* The CPU reference backend ("cpu-ref"): the definition of trackd's results.
 *
 * Every other backend is tested against this file, bit for bit, so it is
 * written to be obviously correct rather than fast: one pass over the frame,
 * pixel by pixel; for each pixel the native samples (trk_pixel_native) and
 * the channel triples (trk_pixel_spaces) come from color.h only (the same
 * functions the GPU kernels run), then every object is tested with
 * trk_box_match inside its clipped ROI (a class object: its table's bit
 * for the pixel's R, G, B cell, trk_class_has).
 *
 * Cost is O(width * height * objects); at 1080p with 256 objects that is
 * about half a billion box tests per frame (seconds), which is fine for a
 * reference and for tests at modest sizes. The fast backends exist for speed.
 *
 * Blobs (objects with blobs > 0) are the plain definition too: per such
 * object the mask (restricted to its ROI) is written out, then scanned in
 * raster order; each unvisited mask pixel starts a flood fill (an explicit
 * stack, 4- or 8-neighbours) that measures one component, so components are
 * met in the order of their first pixel. The K best by trk_blob_before are
 * kept by insertion into a sorted list.
 *
 * Second moments (sum_xx, sum_yy, sum_xy) are added pixel by pixel, x*x
 * and friends in 64 bits: the frame-side limit (TRK_MAX_SIDE) keeps every
 * sum below 2^63 (backend.h).
 *
 * Threading: one instance is used by one thread at a time (backend.h).
 * The work happens in submit; wait only copies the results out.
 */
#include "backend_impl.h"
#include "color.h"

#include <stdint.h>
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
    /* Blob lists of the last submit, and the flood fill's scratch: one
     * byte per pixel (0 outside the mask, 1 in it, 2 visited) and a stack
     * of pixel indices, sized for the largest frame at create. */
    int n_blobs[TRK_MAX_OBJECTS];
    struct trk_blob (*blob)[TRK_MAX_BLOBS];
    uint8_t *mask;
    uint32_t *stack;
    /* The pre-filter (prefilter.h): its setting, and the filtered frame and
     * 16-bit intermediate, made when it is first turned on, for the largest
     * frame; submit then thresholds the filtered frame. */
    struct trk_prefilter pf;
    int max_w, max_h;
    uint8_t *pf_frame;
    uint16_t *pf_tmp;
    /* Copies of the class objects' tables (set_objects): objs[i].cls
     * points into it. */
    uint8_t (*cls)[TRK_CLASS_BYTES];
};

static void ref_destroy(void *self)
{
    struct cpu_ref *s = self;
    if (!s) return;
    free(s->blob);
    free(s->mask);
    free(s->stack);
    free(s->pf_frame);
    free(s->pf_tmp);
    free(s->cls);
    free(s);
}

static int ref_create(const struct trk_backend_cfg *cfg, void **self)
{
    struct cpu_ref *s = calloc(1, sizeof(*s));
    if (!s) return TRK_ENOMEM;
    const size_t px = (size_t)cfg->max_width * (size_t)cfg->max_height;
    s->max_w = cfg->max_width;
    s->max_h = cfg->max_height;
    s->blob = calloc(TRK_MAX_OBJECTS, sizeof(*s->blob));
    s->mask = malloc(px);
    /* Pixel indices are uint32: trackd frames stay far below 4 G pixels. */
    s->stack = px <= UINT32_MAX ? malloc(px * sizeof(*s->stack)) : NULL;
    if (!s->blob || !s->mask || !s->stack) {
        ref_destroy(s);
        return TRK_ENOMEM;
    }
    *self = s;
    return 0;
}

static int ref_set_objects(void *self, const struct trk_object_def *objs, int n)
{
    struct cpu_ref *s = self;
    if (n < 0 || n > TRK_MAX_OBJECTS) return TRK_EINVAL;
    int k = 0;
    for (int i = 0; i < n; i++)
        k += objs[i].space == TRK_SPACE_CLASS;
    uint8_t(*cls)[TRK_CLASS_BYTES] = k ? malloc((size_t)k * TRK_CLASS_BYTES) : NULL;
    if (k && !cls) return TRK_ENOMEM;
    free(s->cls);
    s->cls = cls;
    if (n > 0) memcpy(s->objs, objs, (size_t)n * sizeof(*objs));
    for (int i = 0, j = 0; i < n; i++) {
        if (objs[i].space != TRK_SPACE_CLASS) continue;
        memcpy(cls[j], objs[i].cls, TRK_CLASS_BYTES);
        s->objs[i].cls = cls[j++];
    }
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
    r->sum_xx += (uint64_t)x * (uint64_t)x;
    r->sum_yy += (uint64_t)y * (uint64_t)y;
    r->sum_xy += (uint64_t)x * (uint64_t)y;
}

/* Whether pixel (x, y) is in object o's colour box (ROIs aside). */
static int pixel_matches(const struct trk_image *img, const struct trk_yuv2rgb_coef *k_yuv,
                         const struct trk_rgb2ycc_coef *k_ycc, const struct trk_object_def *o,
                         int x, int y)
{
    int nat[3], c[TRK_SPACE_COUNT][3];
    const int is_yuv = trk_pixel_native(img->fmt, img->plane, img->pitch, x, y, nat);
    /* set_objects accepts only the spaces of enum trk_space (backend.c). */
    TRK_ASSERT((unsigned)o->space <= TRK_SPACE_CLASS);
    trk_pixel_spaces(k_yuv, k_ycc, trk_light_tables(), is_yuv, 1 << o->space, nat, c);
    if (o->space == TRK_SPACE_CLASS) {
        const int *rgb = c[TRK_SPACE_RGB];
        return trk_class_has(o->cls, trk_class_cell(rgb[0], rgb[1], rgb[2]));
    }
    const int *t = c[o->space];
    return trk_box_match(o->lo, o->hi, o->space == TRK_SPACE_HSV, t[0], t[1], t[2]);
}

/* Puts b into the sorted list (*n entries, at most k) when it belongs there. */
static void keep_best(struct trk_blob *list, int *n, int k, const struct trk_blob *b)
{
    int at = *n;
    while (at > 0 && trk_blob_before(b, &list[at - 1]))
        at--;
    if (at >= k) return;
    int last = *n < k ? *n : k - 1; /* the entry that falls off, if full */
    memmove(&list[at + 1], &list[at], (size_t)(last - at) * sizeof(*list));
    list[at] = *b;
    if (*n < k) (*n)++;
}

/* Measures the component of the unvisited mask pixel p0 (its first pixel in
 * raster order, since the caller scans in that order) by flood fill. */
static void flood(struct cpu_ref *s, int w, int h, int conn, uint32_t p0, struct trk_blob *b)
{
    static const int dx8[8] = { 1, -1, 0, 0, 1, 1, -1, -1 };
    static const int dy8[8] = { 0, 0, 1, -1, 1, -1, 1, -1 };
    size_t top = 0;
    memset(b, 0, sizeof(*b));
    b->x0 = b->y0 = INT32_MAX;
    b->x1 = b->y1 = -1;
    b->first = p0;
    s->mask[p0] = 2;
    s->stack[top++] = p0;
    while (top > 0) {
        const uint32_t p = s->stack[--top];
        const int x = (int)(p % (uint32_t)w), y = (int)(p / (uint32_t)w);
        b->mass++;
        b->sum_x += (uint64_t)x;
        b->sum_y += (uint64_t)y;
        b->sum_xx += (uint64_t)x * (uint64_t)x;
        b->sum_yy += (uint64_t)y * (uint64_t)y;
        b->sum_xy += (uint64_t)x * (uint64_t)y;
        if (x < b->x0) b->x0 = x;
        if (x > b->x1) b->x1 = x;
        if (y < b->y0) b->y0 = y;
        if (y > b->y1) b->y1 = y;
        for (int d = 0; d < conn; d++) {
            const int nx = x + dx8[d], ny = y + dy8[d];
            const bool inside = nx >= 0 && nx < w && ny >= 0 && ny < h;
            const uint32_t q = inside ? (uint32_t)ny * (uint32_t)w + (uint32_t)nx : 0;
            /* Crack edges: the 4 sides whose neighbour is not in the mask
             * (a 4-neighbour in the mask is in this blob). */
            if (d < 4 && (!inside || s->mask[q] == 0)) b->perimeter++;
            if (inside && s->mask[q] == 1) {
                s->mask[q] = 2;
                s->stack[top++] = q;
            }
        }
    }
}

/* Object i's blob list: its mask inside its clipped ROI, then every
 * component in raster order of first pixels. */
static void label_object(struct cpu_ref *s, const struct trk_image *img,
                         const struct trk_yuv2rgb_coef *k_yuv, const struct trk_rgb2ycc_coef *k_ycc,
                         int i)
{
    const struct trk_object_def *o = &s->objs[i];
    const struct trk_roi *r = &s->roi[i];
    const int w = img->width, h = img->height;
    const int conn = o->connectivity == 4 ? 4 : 8;
    const uint64_t min_area = o->min_area ? o->min_area : 1;
    s->n_blobs[i] = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const bool in_roi = s->live[i] && x >= r->x0 && x <= r->x1 && y >= r->y0 && y <= r->y1;
            s->mask[(size_t)y * (size_t)w + (size_t)x] =
                in_roi && pixel_matches(img, k_yuv, k_ycc, o, x, y);
        }
    const uint32_t npx = (uint32_t)w * (uint32_t)h;
    for (uint32_t p = 0; p < npx; p++) {
        if (s->mask[p] != 1) continue;
        struct trk_blob b;
        flood(s, w, h, conn, p, &b);
        if (b.mass >= min_area) keep_best(s->blob[i], &s->n_blobs[i], o->blobs, &b);
    }
}

static int ref_set_prefilter(void *self, const struct trk_prefilter *pf)
{
    struct cpu_ref *s = self;
    if (pf->sigma > 0 && !s->pf_frame) {
        /* The largest grid of any format is a full-size luma or byte plane. */
        uint8_t *frame = malloc(trk_prefilter_frame_bytes(s->max_w, s->max_h));
        uint16_t *tmp = malloc((size_t)s->max_w * (size_t)s->max_h * sizeof(*tmp));
        if (!frame || !tmp) {
            free(frame);
            free(tmp);
            return TRK_ENOMEM;
        }
        s->pf_frame = frame;
        s->pf_tmp = tmp;
    }
    s->pf = *pf;
    return 0;
}

static int ref_submit(void *self, const struct trk_image *img, const struct trk_roi *rois)
{
    struct cpu_ref *s = self;
    double t0 = trk_backend_now_ms();
    struct trk_image filtered;
    if (s->pf.sigma > 0 && s->n > 0) {
        /* Everything below (aggregates and blobs) sees the filtered frame. */
        uint8_t *dst[3];
        trk_prefilter_frame_at(s->pf_frame, img, &filtered, dst);
        trk_prefilter_ref(&s->pf, img, dst, filtered.pitch, s->pf_tmp);
        img = &filtered;
    }
    int ci = trk_coef_index((int)img->matrix, img->full_range);
    const struct trk_yuv2rgb_coef *k_yuv = &trk_yuv2rgb_coefs[ci];
    const struct trk_rgb2ycc_coef *k_ycc = &trk_rgb2ycc_coefs[ci];

    for (int i = 0; i < s->n; i++) {
        trk_result_clear(&s->res[i]);
        s->live[i] = trk_roi_clip(rois, i, img->width, img->height, &s->roi[i]);
    }

    for (int y = 0; y < img->height; y++) {
        for (int x = 0; x < img->width; x++) {
            for (int i = 0; i < s->n; i++) {
                const struct trk_roi *r = &s->roi[i];
                if (!s->live[i] || x < r->x0 || x > r->x1 || y < r->y0 || y > r->y1) continue;
                if (pixel_matches(img, k_yuv, k_ycc, &s->objs[i], x, y))
                    accumulate(&s->res[i], x, y);
            }
        }
    }
    for (int i = 0; i < s->n; i++) {
        s->n_blobs[i] = 0;
        if (s->objs[i].blobs) label_object(s, img, k_yuv, k_ycc, i);
    }
    s->total_ms = trk_backend_now_ms() - t0;
    return 0;
}

static int ref_wait(void *self, struct trk_obj_result *out, struct trk_backend_timing *t)
{
    struct cpu_ref *s = self;
    return trk_backend_sync_wait(s->res, s->n, s->total_ms, out, t);
}

static int ref_blobs(void *self, int obj, const struct trk_blob **out)
{
    struct cpu_ref *s = self;
    *out = s->blob[obj];
    return s->n_blobs[obj];
}

/* No variants, and the name says it all (describe NULL). */
const struct trk_backend_ops trk_cpu_ref_ops = { TRK_BACKEND_OPS(ref, "cpu-ref"),
                                                 .blobs = ref_blobs,
                                                 .set_prefilter = ref_set_prefilter };
