/* CUDA backend == CPU reference, exactly: every variant, every input format,
 * every colour space, on seeded scenes (random objects in all spaces with hue
 * wrap and overlapping ranges, objects touching the borders, odd sizes and
 * pitches, 0 and 256 objects, ROIs, pinned and pageable input, several upload
 * bands), and on dense ones (issue 14): every pixel in every object, and
 * random per-pixel subsets of many objects, so the fused kernel's dense path
 * (many objects in one row segment) and its switch from the sparse path are
 * compared too. Needs a GPU: without one it exits 77 (ctest SKIP) and says
 * why.
 *
 *   test_cuda_exact            the full matrix
 *   test_cuda_exact --quick    a smaller one (for compute-sanitizer runs)
 *   test_cuda_exact --probe    exit 0 with a usable GPU, 77 without
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "backend.h"
#include "scene.h"

static int cases; /* comparisons made; failures are check.h's count */

#define MAXW 1280
#define MAXH 720

enum scene_kind { RANDOM, STANDARD, DENSE, HALFDENSE };
static const char *const kind_names[] = { "random", "standard", "dense", "half-dense" };

struct scene_spec {
    int w, h, m;
    enum scene_kind kind;
    uint64_t seed;
};

/* Dense scenes with 2 and 3 objects sit either side of the fused kernel's
 * default switch to the dense path (TRK_FUSED_DENSE_MIN objects of a mask
 * word present in a segment); 40 and 130 objects fill 2 and 8 mask words
 * (objects are dealt round-robin into the words: 20 and 16-17 in each).
 * Random ROIs cut objects out of stretches of rows, so the count per word
 * crosses the threshold within one frame, as the half-dense scenes do.
 * Odd widths leave a partial segment at the end of each row. */
static const struct scene_spec full_scenes[] = {
    { 1, 1, 3, RANDOM, 11 },          { 37, 23, 7, RANDOM, 12 },
    { 129, 67, 40, RANDOM, 13 },      { 320, 241, 100, RANDOM, 14 },
    { 641, 479, 256, RANDOM, 15 },    { 64, 64, 0, RANDOM, 16 },
    { 333, 190, 33, RANDOM, 17 },     { 640, 480, 256, STANDARD, 18 },
    { 1280, 720, 128, STANDARD, 19 }, { 2, 3, 256, RANDOM, 20 },
    { 37, 23, 2, DENSE, 21 },         { 67, 45, 3, DENSE, 22 },
    { 129, 67, 40, DENSE, 23 },       { 1280, 720, 130, DENSE, 24 },
    { 333, 190, 256, HALFDENSE, 25 }, { 961, 541, 100, HALFDENSE, 26 },
};
static const struct scene_spec quick_scenes[] = {
    { 37, 23, 7, RANDOM, 12 },       { 129, 67, 40, RANDOM, 13 }, { 160, 97, 256, RANDOM, 15 },
    { 64, 64, 0, RANDOM, 16 },       { 97, 61, 256, DENSE, 21 },  { 67, 45, 3, DENSE, 22 },
    { 129, 67, 100, HALFDENSE, 25 },
};

/* Variants checked beyond the ones the backend lists: other MOCT layouts and
 * factors, the long-form name, forced upload bands (odd band splits of
 * 4:2:0 frames), and results copied back instead of handed over by the
 * fused kernel's last block. */
static const char *const extra_variants[] = {
    "moct-s-r2",     "moct:arr=v,r=8", "moct-h-r16",     "fused:bands=3",          "lut:bands=2",
    "naive:bands=5", "fused:bands=8",  "fused:copyback", "fused:bands=3,copyback",
};

static void random_rois(struct trk_roi *r, int n, int w, int h, uint64_t seed)
{
    uint64_t st = seed;
    for (int i = 0; i < n; i++) {
        int kind = (int)(trk_rand_next(&st) % 5);
        int x0 = (int)(trk_rand_next(&st) % (unsigned)(w + 8)) - 4;
        int y0 = (int)(trk_rand_next(&st) % (unsigned)(h + 8)) - 4;
        int x1 = x0 + (int)(trk_rand_next(&st) % (unsigned)(w + 1));
        int y1 = y0 + (int)(trk_rand_next(&st) % (unsigned)(h + 1));
        if (kind == 0) {
            x0 = -10;
            y0 = -10;
            x1 = w + 10;
            y1 = h + 10;
        } /* beyond the frame */
        if (kind == 1) {
            x1 = x0 - 1;
        } /* empty */
        r[i] = (struct trk_roi){ x0, y0, x1, y1 };
    }
}

static int compare(const char *what, const struct trk_obj_result *want,
                   const struct trk_obj_result *got, int n)
{
    int bad = 0;
    for (int i = 0; i < n; i++) {
        const struct trk_obj_result *a = &want[i], *b = &got[i];
        if (a->mass == b->mass && a->sum_x == b->sum_x && a->sum_y == b->sum_y && a->x0 == b->x0 &&
            a->y0 == b->y0 && a->x1 == b->x1 && a->y1 == b->y1 && a->sum_xx == b->sum_xx &&
            a->sum_yy == b->sum_yy && a->sum_xy == b->sum_xy)
            continue;
        if (bad++ < 3)
            fprintf(stderr,
                    "MISMATCH %s object %d: ref mass %llu sums %llu,%llu box %d,%d,%d,%d "
                    "moments %llu,%llu,%llu; cuda mass %llu sums %llu,%llu box %d,%d,%d,%d "
                    "moments %llu,%llu,%llu\n",
                    what, i, (unsigned long long)a->mass, (unsigned long long)a->sum_x,
                    (unsigned long long)a->sum_y, a->x0, a->y0, a->x1, a->y1,
                    (unsigned long long)a->sum_xx, (unsigned long long)a->sum_yy,
                    (unsigned long long)a->sum_xy, (unsigned long long)b->mass,
                    (unsigned long long)b->sum_x, (unsigned long long)b->sum_y, b->x0, b->y0, b->x1,
                    b->y1, (unsigned long long)b->sum_xx, (unsigned long long)b->sum_yy,
                    (unsigned long long)b->sum_xy);
    }
    return bad;
}

/* A copy of img in pinned host memory (the backend then skips its staging
 * copy); *mem is the allocation to free with cudaFreeHost. */
static int pinned_copy(const struct trk_image *img, const uint8_t *buf, size_t bytes,
                       struct trk_image *out, void **mem)
{
    if (cudaMallocHost(mem, bytes) != cudaSuccess) return -1;
    memcpy(*mem, buf, bytes);
    *out = *img;
    for (int p = 0; p < 3; p++)
        if (img->plane[p]) out->plane[p] = (const uint8_t *)*mem + (img->plane[p] - buf);
    return 0;
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

int main(int argc, char **argv)
{
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    char why[256];
    if (!trk_cuda_available(why, sizeof(why))) {
        fprintf(stderr, "\n*** SKIPPED: test_cuda_exact needs a usable CUDA GPU: %s ***\n\n", why);
        printf("SKIP: %s\n", why);
        return 77;
    }
    /* --probe: only say whether a GPU is usable (the sanitizer tests ask
     * first, so that a machine without one skips instead of failing). */
    if (argc > 1 && !strcmp(argv[1], "--probe")) return 0;

    const char *names[64];
    int nv = trk_backend_variants(TRK_BACKEND_CUDA, names, 48);
    if (nv < 4) {
        fprintf(stderr, "CUDA lists only %d variants\n", nv);
        return 1;
    }
    for (size_t i = 0; i < sizeof(extra_variants) / sizeof(extra_variants[0]) && !quick; i++)
        names[nv++] = extra_variants[i];
    if (quick) names[nv++] = "fused:bands=3", names[nv++] = "fused:copyback";

    struct trk_backend *ref = NULL, *be[64] = { 0 };
    struct trk_backend_cfg cfg = { .kind = TRK_BACKEND_CPU_REF,
                                   .max_width = MAXW,
                                   .max_height = MAXH };
    if (trk_backend_create(&cfg, &ref)) return 1;
    cfg.kind = TRK_BACKEND_CUDA;
    for (int v = 0; v < nv; v++) {
        cfg.variant = names[v];
        int err = trk_backend_create(&cfg, &be[v]);
        if (err) {
            fprintf(stderr, "creating cuda variant %s: %s\n", names[v], trk_strerror(err));
            return 1;
        }
        printf("variant %-16s -> %s\n", names[v], trk_backend_name(be[v]));
    }
    /* Bad variant names are refused, not silently mapped to the default. */
    {
        const char *bad[] = { "fast",           "moct-x-r4",  "moct-h-r1", "moct:arr=h,r=0",
                              "fused:bands=99", "moct-h-r4x", "lut:arr=h", "lut:copyback" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            struct trk_backend *b = NULL;
            cfg.variant = bad[i];
            int err = trk_backend_create(&cfg, &b);
            CHECKF(err == TRK_EINVAL, "variant \"%s\" accepted (%d)", bad[i], err);
            trk_backend_destroy(&b);
        }
    }

    const struct scene_spec *specs = quick ? quick_scenes : full_scenes;
    int nspecs = quick ? (int)(sizeof(quick_scenes) / sizeof(quick_scenes[0]))
                       : (int)(sizeof(full_scenes) / sizeof(full_scenes[0]));
    static struct trk_obj_result want[TRK_MAX_OBJECTS], got[TRK_MAX_OBJECTS];
    static struct trk_roi rois[TRK_MAX_OBJECTS];

    for (int si = 0; si < nspecs; si++) {
        const struct scene_spec *sp = &specs[si];
        struct trk_scene sc;
        int err;
        switch (sp->kind) {
        case STANDARD: err = trk_scene_standard(sp->w, sp->h, sp->m, sp->seed, &sc); break;
        case DENSE: err = trk_scene_dense(sp->w, sp->h, sp->m, sp->seed, &sc); break;
        case HALFDENSE: err = trk_scene_halfdense(sp->w, sp->h, sp->m, sp->seed, &sc); break;
        default: err = trk_scene_random(sp->w, sp->h, sp->m, sp->seed, &sc); break;
        }
        if (err) {
            fprintf(stderr, "scene %dx%d m=%d: %s\n", sp->w, sp->h, sp->m, trk_strerror(err));
            return 1;
        }
        int m = sc.n_objects;
        int spaces[3] = { 0, 0, 0 };
        for (int k = 0; k < m; k++)
            spaces[sc.objects[k].space]++;
        printf("scene %dx%d %s m=%d (rgb %d, hsv %d, ycbcr %d)\n", sp->w, sp->h,
               kind_names[sp->kind], m, spaces[0], spaces[1], spaces[2]);
        if (trk_backend_set_objects(ref, sc.objects, m)) return 1;
        for (int v = 0; v < nv; v++)
            if ((err = trk_backend_set_objects(be[v], sc.objects, m))) {
                fprintf(stderr, "%s set_objects: %s\n", names[v], trk_strerror(err));
                return 1;
            }
        int scene_bad = 0;
        for (int fmt = 0; fmt < TRK_FMT_COUNT; fmt++) {
            /* Vary pitch padding, matrix and range with the format. */
            int pad = (fmt * 7 + si) % 3 == 0 ? 0 : 1 + (fmt * 13 + si * 5) % 61;
            enum trk_matrix mat = (fmt + si) % 2 ? TRK_MATRIX_BT709 : TRK_MATRIX_BT601;
            bool full = (fmt + si / 2) % 2 == 0;
            uint8_t *buf;
            struct trk_image img;
            if ((err = trk_image_from_rgb(sc.rgb, sp->w, sp->h, (enum trk_pixfmt)fmt, mat, full,
                                          pad, &buf, &img))) {
                fprintf(stderr, "image: %s\n", trk_strerror(err));
                return 1;
            }
            struct trk_image pimg;
            void *pmem = NULL;
            int have_pinned = pinned_copy(&img, buf, image_bytes(&img), &pimg, &pmem) == 0;
            for (int use_roi = 0; use_roi < 2; use_roi++) {
                if (use_roi && quick && fmt % 3) continue;
                if (use_roi) random_rois(rois, m, sp->w, sp->h, sp->seed * 31 + (uint64_t)fmt);
                const struct trk_roi *r = use_roi ? rois : NULL;
                if ((err = trk_backend_process(ref, &img, r, want, NULL))) {
                    fprintf(stderr, "cpu-ref: %s\n", trk_strerror(err));
                    return 1;
                }
                /* The dense scene is what it claims: every pixel in every object. */
                for (int k = 0; sp->kind == DENSE && !use_roi && k < m; k++)
                    CHECKF(want[k].mass == (uint64_t)sp->w * (uint64_t)sp->h,
                           "dense scene: cpu-ref object %d mass %llu of %d pixels", k,
                           (unsigned long long)want[k].mass, sp->w * sp->h);
                for (int v = 0; v < nv; v++) {
                    /* Pinned input on alternate variants: both upload paths. */
                    const struct trk_image *in = (have_pinned && (v + fmt) % 2) ? &pimg : &img;
                    for (int i = 0; i < m; i++)
                        got[i] = (struct trk_obj_result){ 7, 7, 7, 7, 7, 7, 7, 7, 7, 7 };
                    struct trk_backend_timing t = { -1, -1, -1, 0, 0 };
                    /* The asynchronous form on every other case. */
                    if ((v + fmt + use_roi) % 2) {
                        err = trk_backend_submit(be[v], in, r);
                        if (!err) err = trk_backend_wait(be[v], got, &t);
                    } else {
                        err = trk_backend_process(be[v], in, r, got, &t);
                    }
                    cases++;
                    char what[160];
                    snprintf(what, sizeof(what), "%s %dx%d m=%d %s pad=%d %s%s%s", names[v], sp->w,
                             sp->h, m, trk_pixfmt_name((enum trk_pixfmt)fmt), pad,
                             mat == TRK_MATRIX_BT709 ? "bt709" : "bt601",
                             full ? "-full" : "-limited", use_roi ? " roi" : "");
                    CHECKF(!err, "FAIL %s: process: %s", what, trk_strerror(err));
                    if (err) continue;
                    CHECKF(m == 0 || (t.kernel_ms > 0 && t.upload_ms > 0 && t.total_ms > 0),
                           "FAIL %s: timing not filled (%g %g %g)", what, t.upload_ms, t.kernel_ms,
                           t.total_ms);
                    int bad = compare(what, want, got, m);
                    CHECKF(!bad, "FAIL %s: differs from the CPU reference", what);
                    if (bad) scene_bad++;
                }
            }
            if (pmem) cudaFreeHost(pmem);
            free(buf);
        }
        /* Enough pixels really matched for the comparison to mean something. */
        if (m > 0) {
            uint64_t total = 0;
            int found = 0;
            for (int k = 0; k < m; k++) {
                total += want[k].mass;
                found += want[k].mass > 0;
            }
            printf("  last reference: %d/%d objects found, %llu matched pixels; %s\n", found, m,
                   (unsigned long long)total, scene_bad ? "MISMATCHES" : "all variants equal");
        }
        trk_scene_free(&sc);
    }

    /* Results stay right when the object set shrinks and grows again
     * (accumulator parity, table rebuild). */
    {
        struct trk_scene sc;
        if (trk_scene_random(200, 150, 256, 99, &sc)) return 1;
        uint8_t *buf;
        struct trk_image img;
        if (trk_image_from_rgb(sc.rgb, 200, 150, TRK_FMT_NV12, TRK_MATRIX_BT601, false, 3, &buf,
                               &img))
            return 1;
        const int counts[] = { 256, 5, 0, 70, 256, 1 };
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            int m = counts[c];
            trk_backend_set_objects(ref, sc.objects, m);
            trk_backend_process(ref, &img, NULL, want, NULL);
            for (int v = 0; v < nv; v++) {
                trk_backend_set_objects(be[v], sc.objects, m);
                for (int rep = 0; rep < 3; rep++) {
                    int err = trk_backend_process(be[v], &img, NULL, got, NULL);
                    char what[96];
                    snprintf(what, sizeof(what), "%s resize m=%d rep %d", names[v], m, rep);
                    cases++;
                    CHECKF(!err, "FAIL %s: process: %s", what, trk_strerror(err));
                    if (!err) CHECKF(!compare(what, want, got, m), "FAIL %s: differs", what);
                }
            }
        }
        free(buf);
        trk_scene_free(&sc);
    }

    for (int v = 0; v < nv; v++)
        trk_backend_destroy(&be[v]);
    trk_backend_destroy(&ref);
    trk_backend_destroy(&ref); /* twice is safe */
    if (check_failures) {
        fprintf(stderr, "test_cuda_exact: %d of %d cases FAILED\n", check_failures, cases);
        return 1;
    }
    printf("test_cuda_exact: all %d cases equal to the CPU reference\n", cases);
    return 0;
}
