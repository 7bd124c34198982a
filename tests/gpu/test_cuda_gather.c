/* Point gathers on the CUDA backend (trk_backend_set_gather; the light
 * module's points, daemon/light.h): for every input format, images read
 * in place and copied, the values equal cpu-ref's and the definition's
 * (trk_image_gather on the host copy) point for point, from a device image
 * (the gather kernel, gpu/cuda/gather.cu) and from a host image (read
 * where it lies), on:
 * - a whole-frame submit of every variant, objects without blob lists
 *   (the default hands its results over: the values must be there when
 *   wait returns on the hand-over), and the default with blob lists;
 * - a regional submit, and submits with no objects or no regions (only
 *   the gather runs);
 * - two frames in a row, each with its own points and pixels (no value
 *   of the one before is left).
 * The frame's results are those without the gather, bit for bit, the
 * device image is never written, and its pixels are written on the legacy
 * default stream just before submit (the gather must read after that).
 * Needs a GPU: without one it exits 77.
 *
 *   test_cuda_gather            the full matrix
 *   test_cuda_gather --quick    a smaller one (compute-sanitizer)
 *   test_cuda_gather --probe    exit 0 with a usable GPU, 77 without
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "backend.h"
#include "dev_image.h"
#include "scene.h"

#define MAXW 1280
#define MAXH 720
#define NPTS 6000

struct spec {
    int w, h, m;
    uint64_t seed;
};
static const struct spec full_specs[] = {
    { 1, 1, 2, 41 }, { 37, 23, 7, 42 }, { 641, 479, 40, 43 }, { 1280, 720, 16, 44 }
};
static const struct spec quick_specs[] = { { 37, 23, 7, 42 } };

static struct trk_gather_point pts[NPTS];

/* Points of a w x h image: the four corners and the last row and column,
 * then random ones; n of them (<= NPTS). */
static int make_points(int w, int h, uint64_t seed, int n)
{
    int k = 0;
    const int cx[] = { 0, w - 1, 0, w - 1 }, cy[] = { 0, 0, h - 1, h - 1 };
    for (int i = 0; i < 4 && k < n; i++)
        pts[k++] = (struct trk_gather_point){ (uint16_t)cx[i], (uint16_t)cy[i] };
    for (int x = 0; x < w && k < n / 4; x += 7)
        pts[k++] = (struct trk_gather_point){ (uint16_t)x, (uint16_t)(h - 1) };
    for (int y = 0; y < h && k < n / 2; y += 5)
        pts[k++] = (struct trk_gather_point){ (uint16_t)(w - 1), (uint16_t)y };
    while (k < n)
        pts[k++] = (struct trk_gather_point){ (uint16_t)(trk_rand_next(&seed) % (unsigned)w),
                                              (uint16_t)(trk_rand_next(&seed) % (unsigned)h) };
    return k;
}

/* One frame on b with the n points armed: submit (regional: one region
 * per object over the frame's middle, or none when nreg is 0), wait, the
 * values into vals. 0 or the error. */
static int gathered_frame(struct trk_backend *b, const struct trk_image *img, int n, int regional,
                          int nreg, struct trk_obj_result *out, struct trk_gather_value *vals)
{
    static struct trk_region reg[TRK_MAX_OBJECTS];
    for (int j = 0; j < nreg; j++)
        reg[j] = (struct trk_region){
            j, { img->width / 4, img->height / 4, img->width * 3 / 4, img->height * 3 / 4 }
        };
    int err = trk_backend_set_gather(b, pts, n);
    if (!err)
        err = regional ? trk_backend_submit_regions(b, img, reg, nreg)
                       : trk_backend_submit(b, img, NULL);
    if (!err) err = trk_backend_wait(b, out, NULL);
    const struct trk_gather_value *v;
    if (!err && trk_backend_gathered(b, &v) != n) err = TRK_EINVAL;
    if (!err) memcpy(vals, v, sizeof(*v) * (size_t)n);
    return err;
}

static bool same_values(const struct trk_gather_value *want, const struct trk_gather_value *got,
                        int n, const char *what)
{
    for (int i = 0; i < n; i++)
        if (memcmp(&want[i], &got[i], sizeof(want[i]))) {
            CHECKF(0, "FAIL %s: point %d (%d, %d): want %d %d %d, got %d %d %d", what, i, pts[i].x,
                   pts[i].y, want[i].s[0], want[i].s[1], want[i].s[2], got[i].s[0], got[i].s[1],
                   got[i].s[2]);
            return false;
        }
    return true;
}

/* The cases of one image on one CUDA backend: device (in place, copied)
 * and host, whole-frame and regional; want: the definition's values, res:
 * the frame's results without a gather (whole frame; m objects). */
static int image_cases(struct trk_backend *ref, struct trk_backend *be, const char *name,
                       const struct trk_image *host, int m, int n,
                       const struct trk_gather_value *want, const struct trk_obj_result *res)
{
    static struct trk_gather_value got[NPTS];
    static struct trk_obj_result out[TRK_MAX_OBJECTS];
    int cases = 0;
    for (int regional = 0; regional < 2; regional++) {
        char what[200];
        /* cpu-ref through the backend API: the same values. */
        if (gathered_frame(ref, host, n, regional, m, out, got)) return -1;
        snprintf(what, sizeof(what), "cpu-ref %s", trk_pixfmt_name(host->fmt));
        same_values(want, got, n, what);
        for (int where = 0; where < 3; where++) { /* 0 host, 1 device copied, 2 in place */
            struct dev_image d;
            const struct trk_image *img = host;
            if (where) {
                if (dev_make(host, where == 2, &d) || dev_fill(&d)) return -1;
                img = &d.img;
            }
            snprintf(what, sizeof(what), "%s %dx%d m=%d %s %s%s", name, host->width, host->height,
                     m, trk_pixfmt_name(host->fmt),
                     where == 0   ? "host"
                     : where == 1 ? "device copied"
                                  : "device in place",
                     regional ? " regional" : "");
            int err = gathered_frame(be, img, n, regional, m, out, got);
            CHECKF(!err, "FAIL %s: %s", what, trk_strerror(err));
            if (!err) {
                same_values(want, got, n, what);
                CHECKF(regional || !memcmp(out, res, sizeof(*res) * (size_t)m),
                       "FAIL %s: the frame's results differ with the gather", what);
            }
            cases++;
            if (where) {
                CHECKF(dev_unchanged(&d), "FAIL %s: the device image was written to", what);
                dev_free(&d);
            }
        }
    }
    return cases;
}

/* No objects (or no regions): the gather alone, from a device image. */
static void gather_alone(struct trk_backend *be, const struct trk_image *host, int n,
                         const struct trk_gather_value *want)
{
    static struct trk_gather_value got[NPTS];
    static struct trk_obj_result out[1];
    struct dev_image d;
    if (dev_make(host, true, &d) || dev_fill(&d)) {
        CHECKF(0, "FAIL: device memory");
        return;
    }
    for (int regional = 0; regional < 2; regional++) {
        int err = gathered_frame(be, &d.img, n, regional, 0, out, got);
        CHECKF(!err, "FAIL gather alone (regional %d): %s", regional, trk_strerror(err));
        if (!err) same_values(want, got, n, regional ? "no regions" : "no objects");
        CHECK(dev_fill(&d) == 0);
    }
    dev_free(&d);
}

int main(int argc, char **argv)
{
    bool quick = false;
    const int start = gpu_test_start(argc, argv, &quick);
    if (start >= 0) return start;
    const struct spec *specs = quick ? quick_specs : full_specs;
    const int nspecs = quick ? 1 : (int)(sizeof(full_specs) / sizeof(full_specs[0]));

    struct trk_backend_cfg rc = { .kind = TRK_BACKEND_CPU_REF,
                                  .max_width = MAXW,
                                  .max_height = MAXH };
    struct trk_backend *ref = NULL;
    if (trk_backend_create(&rc, &ref)) return 1;
    const char *names[8];
    int nv = trk_backend_variants(TRK_BACKEND_CUDA, names, 8);
    nv = nv > 8 ? 8 : nv;
    static struct trk_gather_value want[NPTS], want2[NPTS], got[NPTS];
    static struct trk_obj_result res[TRK_MAX_OBJECTS], out[TRK_MAX_OBJECTS];
    int cases = 0;
    for (int si = 0; si < nspecs; si++) {
        const struct spec *sp = &specs[si];
        struct trk_scene sc, sc2;
        if (trk_scene_random(sp->w, sp->h, sp->m, sp->seed, &sc) ||
            trk_scene_random(sp->w, sp->h, sp->m, sp->seed + 100, &sc2))
            return 1;
        const int m = sc.n_objects;
        for (int fmt = 0; fmt < TRK_FMT_COUNT; fmt++) {
            uint8_t *buf, *buf2;
            struct trk_image host, host2;
            const bool full = (fmt + si) % 2;
            const enum trk_matrix mat = si % 2 ? TRK_MATRIX_BT709 : TRK_MATRIX_BT601;
            if (trk_image_from_rgb(sc.rgb, sp->w, sp->h, (enum trk_pixfmt)fmt, mat, full, 3, &buf,
                                   &host) ||
                trk_image_from_rgb(sc2.rgb, sp->w, sp->h, (enum trk_pixfmt)fmt, mat, full, 1, &buf2,
                                   &host2))
                return 1;
            const int n = make_points(sp->w, sp->h, sp->seed + (uint64_t)fmt, quick ? 500 : NPTS);
            trk_image_gather(&host, pts, n, want);
            for (int v = 0; v < nv; v++)
                for (int blobs = 0; blobs < 2; blobs++) {
                    if (blobs && v > 0) continue; /* blob lists: the default variant */
                    struct trk_object_def defs[TRK_MAX_OBJECTS];
                    memcpy(defs, sc.objects, sizeof(defs[0]) * (size_t)m);
                    for (int k = 0; k < m; k++)
                        defs[k].blobs = blobs && k % 3 == 0 ? 4 : 0;
                    struct trk_backend_cfg c = { .kind = TRK_BACKEND_CUDA,
                                                 .max_width = MAXW,
                                                 .max_height = MAXH,
                                                 .variant = names[v] };
                    struct trk_backend *be = NULL;
                    if (trk_backend_create(&c, &be) || trk_backend_set_objects(be, defs, m) ||
                        trk_backend_set_objects(ref, defs, m) ||
                        trk_backend_process(ref, &host, NULL, res, NULL)) {
                        fprintf(stderr, "FAIL cuda:%s: set-up\n", names[v]);
                        return 1;
                    }
                    char name[64];
                    snprintf(name, sizeof(name), "cuda:%s%s", names[v], blobs ? " blobs" : "");
                    make_points(sp->w, sp->h, sp->seed + (uint64_t)fmt, n); /* want's points */
                    const int k = image_cases(ref, be, name, &host, m, n, want, res);
                    if (k < 0) return 1;
                    cases += k;
                    /* Two device frames in a row, each its own points. */
                    struct dev_image d;
                    if (dev_make(&host2, true, &d) || dev_fill(&d)) return 1;
                    const int n2 = make_points(sp->w, sp->h, sp->seed + 7, n / 2 + 1);
                    trk_image_gather(&host2, pts, n2, want2);
                    const int err = gathered_frame(be, &d.img, n2, 0, m, out, got);
                    CHECKF(!err, "FAIL %s second frame: %s", name, trk_strerror(err));
                    if (!err) same_values(want2, got, n2, "second frame");
                    dev_free(&d);
                    trk_backend_destroy(&be);
                }
            /* No objects: the gather alone (default variant). */
            struct trk_backend_cfg c = { .kind = TRK_BACKEND_CUDA,
                                         .max_width = MAXW,
                                         .max_height = MAXH };
            struct trk_backend *be = NULL;
            if (trk_backend_create(&c, &be)) return 1;
            make_points(sp->w, sp->h, sp->seed + (uint64_t)fmt, n);
            gather_alone(be, &host, n, want);
            trk_backend_destroy(&be);
            free(buf);
            free(buf2);
        }
        printf("scene %dx%d m=%d: %d cases so far\n", sp->w, sp->h, m, cases);
        trk_scene_free(&sc);
        trk_scene_free(&sc2);
    }
    trk_backend_destroy(&ref);
    printf("%d gather cases\n", cases);
    return check_exit("test_cuda_gather");
}
