/* Device images (struct trk_image mem = TRK_MEM_CUDA, what --hwdec hands
 * the CUDA backend): results and blob lists equal the CPU reference's on
 * the same pixels from the host, bit for bit, for every variant and input
 * format, with and without ROIs and the pre-filter, and (small scenes) in the
 * regional form (the daemon's ROI frames) with the ROIs as regions, for images the kernels
 * read in place (256-byte pitches, like FFmpeg's CUDA frames) and for ones
 * they must copy first (odd pitches). The pixels are written with an
 * asynchronous copy on the legacy default stream right before submit (how
 * NVDEC's copy reaches the surface): the backend must order its reads
 * after it. upload_bytes is 0, and the image is unchanged afterwards (the
 * backend never writes to it). Needs a GPU: without one it exits 77.
 *
 *   test_cuda_device_image            the full matrix
 *   test_cuda_device_image --quick    a smaller one (compute-sanitizer)
 *   test_cuda_device_image --probe    exit 0 with a usable GPU, 77 without
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "backend.h"
#include "dev_image.h"
#include "scene.h"

struct spec {
    int w, h, m;
    uint64_t seed;
};
static const struct spec full_specs[] = {
    { 1, 1, 3, 31 },       { 37, 23, 7, 32 },     { 129, 67, 40, 33 },
    { 320, 241, 100, 34 }, { 641, 479, 256, 35 }, { 1280, 720, 128, 36 },
};
static const struct spec quick_specs[] = { { 37, 23, 7, 32 }, { 130, 67, 40, 33 } };
#define MAXW 1280
#define MAXH 720

static int first_diff(const struct trk_obj_result *a, const struct trk_obj_result *b, int n)
{
    for (int i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof(a[i]))) return i;
    return -1;
}

/* The regional form (trk_backend_process_regions, the daemon's ROI frames),
 * on the scenes up to REGIONAL_MAX_PIXELS (the --quick ones and the small
 * ones of the full matrix: the reference, which has no regional form of its
 * own, runs one whole-frame pass per region, and on the large scenes that
 * took the test past its time on the H100):
 * a region per object at its ROI and one whole-frame region (object 0);
 * the reference's results and each region's blob list on the host image,
 * made once per case on a reference of its own (the full-frame checks
 * read the other one's lists). */
#define REGIONAL_MAX_PIXELS (130 * 67)
struct regional {
    int n;
    struct trk_region reg[TRK_MAX_OBJECTS + 1];
    struct trk_obj_result res[TRK_MAX_OBJECTS + 1];
    int nb[TRK_MAX_OBJECTS + 1];
    struct trk_blob bl[TRK_MAX_OBJECTS + 1][TRK_MAX_BLOBS];
};

static int regional_ref(struct trk_backend *ref, const struct trk_image *host,
                        const struct trk_roi *rois, int m, struct regional *w)
{
    w->n = 0;
    for (int i = 0; i < m; i++)
        w->reg[w->n++] = (struct trk_region){ .obj = i, .roi = rois[i] };
    w->reg[w->n++] =
        (struct trk_region){ .obj = 0, .roi = { 0, 0, host->width - 1, host->height - 1 } };
    int err = trk_backend_process_regions(ref, host, w->reg, w->n, w->res, NULL);
    for (int j = 0; !err && j < w->n; j++) {
        const struct trk_blob *l;
        w->nb[j] = trk_backend_blobs(ref, j, &l);
        if (w->nb[j] > 0) memcpy(w->bl[j], l, sizeof(*l) * (size_t)w->nb[j]);
    }
    return err;
}

/* cu's regional call on the device image against w: results and lists
 * equal, nothing uploaded. */
static void regional_case(struct trk_backend *cu, const struct trk_image *dev,
                          const struct regional *w, bool blobs_ok, const char *what)
{
    static struct trk_obj_result got[TRK_MAX_OBJECTS + 1];
    struct trk_backend_timing t = { 0 };
    int err = trk_backend_process_regions(cu, dev, w->reg, w->n, got, &t);
    CHECKF(!err, "FAIL %s regions: %s", what, trk_strerror(err));
    if (err) return;
    const int i = first_diff(w->res, got, w->n);
    CHECKF(i < 0, "FAIL %s regions: region %d (object %d) differs: mass %llu vs %llu", what, i,
           i < 0 ? 0 : w->reg[i].obj, i < 0 ? 0ULL : (unsigned long long)w->res[i].mass,
           i < 0 ? 0ULL : (unsigned long long)got[i].mass);
    CHECKF(t.upload_bytes == 0, "FAIL %s regions: upload_bytes %llu, want 0", what,
           (unsigned long long)t.upload_bytes);
    for (int j = 0; blobs_ok && j < w->n; j++) {
        const struct trk_blob *b;
        const int nb = trk_backend_blobs(cu, j, &b);
        CHECKF(nb == w->nb[j] && (nb <= 0 || !memcmp(w->bl[j], b, sizeof(*b) * (size_t)nb)),
               "FAIL %s regions: region %d blob lists differ (%d vs %d blobs)", what, j, w->nb[j],
               nb);
    }
}

int main(int argc, char **argv)
{
    bool quick = false;
    const int start = gpu_test_start(argc, argv, &quick);
    if (start >= 0) return start;
    const struct spec *specs = quick ? quick_specs : full_specs;
    const int nspecs = quick ? 2 : (int)(sizeof(full_specs) / sizeof(full_specs[0]));

    struct trk_backend_cfg rc = { .kind = TRK_BACKEND_CPU_REF,
                                  .max_width = MAXW,
                                  .max_height = MAXH };
    struct trk_backend *ref = NULL, *ref2 = NULL;
    if (trk_backend_create(&rc, &ref) || trk_backend_create(&rc, &ref2)) return 1;
    static struct regional rw;
    const char *names[8];
    int nv = trk_backend_variants(TRK_BACKEND_CUDA, names, 8);
    if (nv > 8) nv = 8;
    struct trk_backend *be[8] = { 0 };
    for (int v = 0; v < nv; v++) {
        struct trk_backend_cfg c = {
            .kind = TRK_BACKEND_CUDA, .max_width = MAXW, .max_height = MAXH, .variant = names[v]
        };
        if (trk_backend_create(&c, &be[v])) {
            fprintf(stderr, "cannot create cuda:%s\n", names[v]);
            return 1;
        }
        CHECK(trk_backend_accepts_device(be[v]));
    }
    static struct trk_obj_result want[TRK_MAX_OBJECTS], got[TRK_MAX_OBJECTS];
    static struct trk_roi rois[TRK_MAX_OBJECTS];
    int cases = 0;
    for (int si = 0; si < nspecs; si++) {
        const struct spec *sp = &specs[si];
        struct trk_scene sc;
        if (trk_scene_random(sp->w, sp->h, sp->m, sp->seed, &sc)) return 1;
        const int m = sc.n_objects;
        /* Blob lists for a few objects (the blob pipeline reads the image). */
        for (int k = 0; k < m; k += 5) {
            sc.objects[k].blobs = 4;
            sc.objects[k].connectivity = k % 2 ? 4 : 8;
        }
        uint64_t st = sp->seed;
        for (int i = 0; i < m; i++) {
            int x0 = (int)(trk_rand_next(&st) % (unsigned)sp->w) - 2;
            int y0 = (int)(trk_rand_next(&st) % (unsigned)sp->h) - 2;
            rois[i] = (struct trk_roi){ x0, y0, x0 + (int)(trk_rand_next(&st) % 200),
                                        y0 + (int)(trk_rand_next(&st) % 150) };
        }
        for (int fmt = 0; fmt < TRK_FMT_COUNT; fmt++) {
            uint8_t *buf;
            struct trk_image host;
            const bool full = (fmt + si) % 2;
            const enum trk_matrix mat = si % 2 ? TRK_MATRIX_BT709 : TRK_MATRIX_BT601;
            if (trk_image_from_rgb(sc.rgb, sp->w, sp->h, (enum trk_pixfmt)fmt, mat, full, 3, &buf,
                                   &host))
                return 1;
            for (int mode = 0; mode < 4; mode++) { /* bit 0: ROIs, bit 1: pre-filter */
                if (quick && mode == 3) continue;
                const struct trk_roi *r = mode & 1 ? rois : NULL;
                const double sigma = mode & 2 ? 1.5 : 0;
                if (trk_backend_set_objects(ref, sc.objects, m) ||
                    trk_backend_set_prefilter(ref, sigma) ||
                    trk_backend_process(ref, &host, r, want, NULL))
                    return 1;
                const bool regional = r && sp->w * sp->h <= REGIONAL_MAX_PIXELS;
                if (regional && (trk_backend_set_objects(ref2, sc.objects, m) ||
                                 trk_backend_set_prefilter(ref2, sigma) ||
                                 regional_ref(ref2, &host, r, m, &rw)))
                    return 1;
                for (int v = 0; v < nv; v++) {
                    const bool blobs_ok = trk_backend_set_objects(be[v], sc.objects, m) == 0;
                    if (!blobs_ok) { /* a variant without blob lists: aggregates only */
                        struct trk_object_def plain[TRK_MAX_OBJECTS];
                        memcpy(plain, sc.objects, sizeof(plain[0]) * (size_t)m);
                        for (int k = 0; k < m; k++)
                            plain[k].blobs = 0;
                        if (trk_backend_set_objects(be[v], plain, m)) return 1;
                    }
                    if (trk_backend_set_prefilter(be[v], sigma)) return 1;
                    for (int in_place = 0; in_place < 2; in_place++) {
                        struct dev_image d;
                        char what[200];
                        snprintf(what, sizeof(what), "cuda:%s %dx%d m=%d %s %s%s%s", names[v],
                                 sp->w, sp->h, m, trk_pixfmt_name((enum trk_pixfmt)fmt),
                                 in_place ? "in place" : "copied", r ? " roi" : "",
                                 sigma > 0 ? " prefilter" : "");
                        if (dev_make(&host, in_place, &d) || dev_fill(&d)) {
                            fprintf(stderr, "FAIL %s: device memory\n", what);
                            return 1;
                        }
                        struct trk_backend_timing t = { 0 };
                        t.upload_bytes = 99;
                        int err = trk_backend_process(be[v], &d.img, r, got, &t);
                        cases++;
                        CHECKF(!err, "FAIL %s: %s", what, trk_strerror(err));
                        if (!err) {
                            int i = first_diff(want, got, m);
                            CHECKF(i < 0,
                                   "FAIL %s: object %d: want mass %llu sx %llu sy %llu bbox "
                                   "%d,%d-%d,%d; got mass %llu sx %llu sy %llu bbox %d,%d-%d,%d",
                                   what, i, i < 0 ? 0ULL : (unsigned long long)want[i].mass,
                                   i < 0 ? 0ULL : (unsigned long long)want[i].sum_x,
                                   i < 0 ? 0ULL : (unsigned long long)want[i].sum_y,
                                   i < 0 ? 0 : want[i].x0, i < 0 ? 0 : want[i].y0,
                                   i < 0 ? 0 : want[i].x1, i < 0 ? 0 : want[i].y1,
                                   i < 0 ? 0ULL : (unsigned long long)got[i].mass,
                                   i < 0 ? 0ULL : (unsigned long long)got[i].sum_x,
                                   i < 0 ? 0ULL : (unsigned long long)got[i].sum_y,
                                   i < 0 ? 0 : got[i].x0, i < 0 ? 0 : got[i].y0,
                                   i < 0 ? 0 : got[i].x1, i < 0 ? 0 : got[i].y1);
                            CHECKF(t.upload_bytes == 0, "FAIL %s: upload_bytes %llu, want 0", what,
                                   (unsigned long long)t.upload_bytes);
                            for (int k = 0; blobs_ok && k < m; k++) {
                                const struct trk_blob *a, *b;
                                int na = trk_backend_blobs(ref, k, &a);
                                int nb = trk_backend_blobs(be[v], k, &b);
                                CHECKF(na == nb && (na <= 0 || !memcmp(a, b, sizeof(*a) * na)),
                                       "FAIL %s: object %d blob lists differ (%d vs %d blobs)",
                                       what, k, na, nb);
                            }
                        }
                        if (regional) regional_case(be[v], &d.img, &rw, blobs_ok, what);
                        CHECKF(dev_unchanged(&d), "FAIL %s: the device image was written to", what);
                        dev_free(&d);
                    }
                }
            }
            free(buf);
        }
        printf("scene %dx%d m=%d: %d cases so far\n", sp->w, sp->h, m, cases);
        trk_scene_free(&sc);
    }
    for (int v = 0; v < nv; v++)
        trk_backend_destroy(&be[v]);
    trk_backend_destroy(&ref);
    trk_backend_destroy(&ref2);
    printf("%d device-image cases\n", cases);
    return check_exit("test_cuda_device_image");
}
