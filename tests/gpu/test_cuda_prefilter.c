/* CUDA backend == CPU reference with the pre-filter on (gpu/prefilter.h),
 * exactly: every variant, every input format, odd sizes and pitches, sigma
 * from small to the maximum, random scenes' objects in all spaces and, per
 * channel, 128 one-value objects whose results are a positional histogram
 * of the filtered frame (any byte the GPU filters differently shows up), with
 * and without ROIs, pinned and pageable input. Also: the filter changes the
 * results (it runs at all), turning it off gives the unfiltered results
 * back, and bad sigmas are refused. Needs a GPU: without one it exits 77
 * (ctest SKIP) and says why.
 *
 *   test_cuda_prefilter            the full matrix
 *   test_cuda_prefilter --quick    a smaller one (for compute-sanitizer runs)
 */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "backend.h"
#include "scene.h"

#define MAXW      700
#define MAXH      400
#define HIST_OBJS 128

static int cases;

static int differ(const struct trk_obj_result *a, const struct trk_obj_result *b, int n, int loud)
{
    int bad = 0;
    for (int i = 0; i < n; i++) {
        if (a[i].mass == b[i].mass && a[i].sum_x == b[i].sum_x && a[i].sum_y == b[i].sum_y &&
            a[i].x0 == b[i].x0 && a[i].y0 == b[i].y0 && a[i].x1 == b[i].x1 && a[i].y1 == b[i].y1 &&
            a[i].sum_xx == b[i].sum_xx && a[i].sum_yy == b[i].sum_yy && a[i].sum_xy == b[i].sum_xy)
            continue;
        if (!loud) {
            bad++;
            continue;
        }
        if (bad++ < 3)
            fprintf(stderr,
                    "  object %d: ref mass %llu sums %llu,%llu box %d,%d,%d,%d; cuda mass %llu "
                    "sums %llu,%llu box %d,%d,%d,%d\n",
                    i, (unsigned long long)a[i].mass, (unsigned long long)a[i].sum_x,
                    (unsigned long long)a[i].sum_y, a[i].x0, a[i].y0, a[i].x1, a[i].y1,
                    (unsigned long long)b[i].mass, (unsigned long long)b[i].sum_x,
                    (unsigned long long)b[i].sum_y, b[i].x0, b[i].y0, b[i].x1, b[i].y1);
    }
    return bad;
}

/* Object k matches values 2k, 2k + 1 of native channel c only. */
static void hist_objects(int yuv, int c, struct trk_object_def *objs)
{
    for (int k = 0; k < HIST_OBJS; k++) {
        struct trk_object_def *o = &objs[k];
        memset(o, 0, sizeof(*o));
        snprintf(o->name, sizeof(o->name), "c%dv%d", c, k);
        o->space = yuv ? TRK_SPACE_YCBCR : TRK_SPACE_RGB;
        for (int i = 0; i < 3; i++)
            o->lo[i] = 0, o->hi[i] = 255;
        o->lo[c] = (uint16_t)(2 * k);
        o->hi[c] = (uint16_t)(2 * k + 1);
        o->min_mass = 1;
    }
}

static size_t image_bytes(const struct trk_image *img)
{
    int h = img->height, ch = (h + 1) / 2;
    switch (img->fmt) {
    case TRK_FMT_NV12: return img->pitch[0] * h + img->pitch[1] * ch;
    case TRK_FMT_I420: return img->pitch[0] * h + img->pitch[1] * ch + img->pitch[2] * ch;
    default: return img->pitch[0] * h;
    }
}

static int pinned_copy(const struct trk_image *img, const uint8_t *buf, struct trk_image *out,
                       void **mem)
{
    size_t bytes = image_bytes(img);
    if (cudaMallocHost(mem, bytes) != cudaSuccess) return -1;
    memcpy(*mem, buf, bytes);
    *out = *img;
    for (int p = 0; p < 3; p++)
        if (img->plane[p]) out->plane[p] = (const uint8_t *)*mem + (img->plane[p] - buf);
    return 0;
}

static void rois_for(struct trk_roi *r, int n, int w, int h, uint64_t seed)
{
    uint64_t st = seed;
    for (int i = 0; i < n; i++) {
        int x0 = (int)(trk_rand_next(&st) % (unsigned)(w + 8)) - 4;
        int y0 = (int)(trk_rand_next(&st) % (unsigned)(h + 8)) - 4;
        r[i] = (struct trk_roi){ x0, y0, x0 + (int)(trk_rand_next(&st) % (unsigned)(w + 1)),
                                 y0 + (int)(trk_rand_next(&st) % (unsigned)(h + 1)) };
    }
}

/* ref and every be[] on img (objs, sigma); all must equal ref's results. */
static void run_case(struct trk_backend *ref, struct trk_backend **be, const char *const *names,
                     int nv, const struct trk_object_def *objs, int m, const struct trk_image *img,
                     const struct trk_image *pimg, const struct trk_roi *rois, const char *what)
{
    static struct trk_obj_result want[TRK_MAX_OBJECTS], got[TRK_MAX_OBJECTS];
    if (trk_backend_set_objects(ref, objs, m) || trk_backend_process(ref, img, rois, want, NULL)) {
        fprintf(stderr, "cpu-ref failed on %s\n", what);
        exit(1);
    }
    for (int v = 0; v < nv; v++) {
        const struct trk_image *in = pimg && v % 2 ? pimg : img;
        memset(got, 0x5a, sizeof(got));
        int err = trk_backend_set_objects(be[v], objs, m);
        if (!err) err = trk_backend_process(be[v], in, rois, got, NULL);
        cases++;
        CHECKF(!err, "FAIL %s %s: %s", names[v], what, trk_strerror(err));
        if (!err)
            CHECKF(!differ(want, got, m, 1), "FAIL %s %s: differs from cpu-ref", names[v], what);
    }
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    char why[256];
    if (!trk_cuda_available(why, sizeof(why))) {
        fprintf(stderr, "\n*** SKIPPED: test_cuda_prefilter needs a usable CUDA GPU: %s ***\n\n",
                why);
        printf("SKIP: %s\n", why);
        return 77;
    }
    const char *names[16] = { "fused", "lut", "naive", "moct-h-r4", "fused:bands=3" };
    const int nv = quick ? 2 : 5;
    struct trk_backend *ref = NULL, *be[16] = { 0 };
    struct trk_backend_cfg cfg = { .kind = TRK_BACKEND_CPU_REF,
                                   .max_width = MAXW,
                                   .max_height = MAXH };
    if (trk_backend_create(&cfg, &ref)) return 1;
    cfg.kind = TRK_BACKEND_CUDA;
    for (int v = 0; v < nv; v++) {
        cfg.variant = names[v];
        if (trk_backend_create(&cfg, &be[v])) {
            fprintf(stderr, "creating cuda variant %s failed\n", names[v]);
            return 1;
        }
    }
    /* Bounds. */
    const double bad[] = { -1, 4.01, NAN };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(trk_backend_set_prefilter(be[0], bad[i]) == TRK_EINVAL);

    static const int sizes[][3] = { { 1, 1, 0 },     { 37, 23, 5 }, { 129, 67, 0 }, { 320, 241, 3 },
                                    { 700, 400, 0 }, { 161, 3, 7 }, { 2, 390, 1 } };
    const int nsizes = quick ? 3 : (int)(sizeof(sizes) / sizeof(sizes[0]));
    const double sigmas[] = { 0.4, 1.0, 1.7, 2.5, 4.0 };
    static struct trk_object_def objs[TRK_MAX_OBJECTS];
    static struct trk_roi rois[TRK_MAX_OBJECTS];
    for (int zi = 0; zi < nsizes; zi++) {
        const int w = sizes[zi][0], h = sizes[zi][1];
        struct trk_scene sc;
        if (trk_scene_random(w, h, 40, 500 + (uint64_t)zi, &sc)) return 1;
        for (int fmt = 0; fmt < TRK_FMT_COUNT; fmt++) {
            const double sigma = sigmas[(zi + fmt) % 5];
            const int pad = (sizes[zi][2] + fmt * 9) % 40;
            uint8_t *buf;
            struct trk_image img, pimg;
            if (trk_image_from_rgb(sc.rgb, w, h, (enum trk_pixfmt)fmt,
                                   fmt % 2 ? TRK_MATRIX_BT709 : TRK_MATRIX_BT601, fmt % 3 == 0, pad,
                                   &buf, &img))
                return 1;
            void *pmem = NULL;
            const int have_pinned = pinned_copy(&img, buf, &pimg, &pmem) == 0;
            CHECK(trk_backend_set_prefilter(ref, sigma) == 0);
            for (int v = 0; v < nv; v++)
                CHECK(trk_backend_set_prefilter(be[v], sigma) == 0);
            char what[128];
            const int yuv = fmt >= TRK_FMT_YUYV;
            for (int c = 0; c < 3; c++) {
                snprintf(what, sizeof(what), "%dx%d %s pad %d sigma %g histogram %d", w, h,
                         trk_pixfmt_name((enum trk_pixfmt)fmt), pad, sigma, c);
                hist_objects(yuv, c, objs);
                run_case(ref, be, names, nv, objs, HIST_OBJS, &img, have_pinned ? &pimg : NULL,
                         NULL, what);
            }
            snprintf(what, sizeof(what), "%dx%d %s pad %d sigma %g scene", w, h,
                     trk_pixfmt_name((enum trk_pixfmt)fmt), pad, sigma);
            run_case(ref, be, names, nv, sc.objects, sc.n_objects, &img, NULL, NULL, what);
            rois_for(rois, sc.n_objects, w, h, (uint64_t)(zi * 10 + fmt));
            snprintf(what, sizeof(what), "%dx%d %s pad %d sigma %g scene roi", w, h,
                     trk_pixfmt_name((enum trk_pixfmt)fmt), pad, sigma);
            run_case(ref, be, names, nv, sc.objects, sc.n_objects, &img, NULL, rois, what);
            if (pmem) cudaFreeHost(pmem);
            free(buf);
        }
        trk_scene_free(&sc);
    }

    /* The filter runs at all, and off gives the raw results back. */
    {
        struct trk_scene sc;
        if (trk_scene_random(211, 97, 1, 7, &sc)) return 1;
        uint8_t *buf;
        struct trk_image img;
        if (trk_image_from_rgb(sc.rgb, 211, 97, TRK_FMT_NV12, TRK_MATRIX_BT601, false, 0, &buf,
                               &img))
            return 1;
        static struct trk_obj_result raw[HIST_OBJS], on[HIST_OBJS], off[HIST_OBJS];
        hist_objects(1, 0, objs);
        CHECK(trk_backend_set_objects(be[0], objs, HIST_OBJS) == 0);
        CHECK(trk_backend_set_prefilter(be[0], 0) == 0);
        CHECK(trk_backend_process(be[0], &img, NULL, raw, NULL) == 0);
        CHECK(trk_backend_set_prefilter(be[0], 2.0) == 0);
        CHECK(trk_backend_process(be[0], &img, NULL, on, NULL) == 0);
        CHECK(trk_backend_set_prefilter(be[0], 0) == 0);
        CHECK(trk_backend_process(be[0], &img, NULL, off, NULL) == 0);
        CHECK(differ(raw, on, HIST_OBJS, 0) > 0);
        CHECK(differ(raw, off, HIST_OBJS, 1) == 0);
        free(buf);
        trk_scene_free(&sc);
    }

    for (int v = 0; v < nv; v++)
        trk_backend_destroy(&be[v]);
    trk_backend_destroy(&ref);
    printf("%d cases compared\n", cases);
    return check_exit("test_cuda_prefilter");
}
