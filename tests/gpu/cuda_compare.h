/* The helpers the GPU exactness tests of the spaces share
 * (test_cuda_lightspaces.c, test_cuda_classes.c): a backend of frames up
 * to MAXW x MAXH, and CUDA against cpu-ref on a frame (aggregates and blob
 * lists) and on regions, every difference a failed check, and the loop
 * over variants, scenes, formats and object sets. Static: each test
 * includes it once. */
#ifndef TRK_TESTS_GPU_CUDA_COMPARE_H
#define TRK_TESTS_GPU_CUDA_COMPARE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../unit/check.h"
#include "backend.h"
#include "scene.h"

#define MAXW 333
#define MAXH 190

static int cases;

static struct trk_backend *make(enum trk_backend_kind kind, const char *variant)
{
    struct trk_backend_cfg cfg = {
        .kind = kind, .max_width = MAXW, .max_height = MAXH, .threads = 1, .variant = variant
    };
    struct trk_backend *b = NULL;
    int err = trk_backend_create(&cfg, &b);
    CHECKF(err == 0, "create %s: %s", variant ? variant : "(default)", trk_strerror(err));
    return b;
}

static void compare(struct trk_backend *ref, struct trk_backend *cu,
                    const struct trk_object_def *objs, int n, const struct trk_image *img,
                    const struct trk_roi *rois, const char *what)
{
    static struct trk_obj_result want[TRK_MAX_OBJECTS], got[TRK_MAX_OBJECTS];
    memset(want, 0x11, sizeof(want));
    memset(got, 0x22, sizeof(got));
    int e1 = trk_backend_process(ref, img, rois, want, NULL);
    int e2 = trk_backend_process(cu, img, rois, got, NULL);
    CHECKF(e1 == 0 && e2 == 0, "%s: process ref %d cuda %d", what, e1, e2);
    cases++;
    for (int i = 0; i < n && !e1 && !e2; i++) {
        CHECKF(!memcmp(&want[i], &got[i], sizeof(want[i])),
               "%s: %s: object %d (space %d lo %u,%u,%u hi %u,%u,%u): mass ref %llu cuda %llu",
               what, trk_backend_name(cu), i, (int)objs[i].space, objs[i].lo[0], objs[i].lo[1],
               objs[i].lo[2], objs[i].hi[0], objs[i].hi[1], objs[i].hi[2],
               (unsigned long long)want[i].mass, (unsigned long long)got[i].mass);
        if (!objs[i].blobs) continue;
        const struct trk_blob *a, *b;
        int na = trk_backend_blobs(ref, i, &a), nb = trk_backend_blobs(cu, i, &b);
        CHECKF(na == nb && (na <= 0 || !memcmp(a, b, (size_t)na * sizeof(*a))),
               "%s: %s: object %d blobs: ref %d cuda %d (or different)", what, trk_backend_name(cu),
               i, na, nb);
    }
}

static void compare_regions(struct trk_backend *ref, struct trk_backend *cu, uint64_t *st,
                            const struct trk_image *img, int n, const char *what)
{
    static struct trk_region reg[64];
    static struct trk_obj_result want[64], got[64];
    const int nr = n < 64 ? n : 64;
    for (int j = 0; j < nr; j++) {
        reg[j].obj = (int)(trk_rand_next(st) % (uint64_t)n);
        reg[j].roi.x0 = (int)(trk_rand_next(st) % (uint64_t)img->width) - 1;
        reg[j].roi.y0 = (int)(trk_rand_next(st) % (uint64_t)img->height) - 1;
        reg[j].roi.x1 = reg[j].roi.x0 + (int)(trk_rand_next(st) % 80u);
        reg[j].roi.y1 = reg[j].roi.y0 + (int)(trk_rand_next(st) % 60u);
    }
    int e1 = trk_backend_process_regions(ref, img, reg, nr, want, NULL);
    int e2 = trk_backend_process_regions(cu, img, reg, nr, got, NULL);
    CHECKF(e1 == 0 && e2 == 0, "%s: regions ref %d cuda %d", what, e1, e2);
    cases++;
    for (int j = 0; j < nr && !e1 && !e2; j++)
        CHECKF(!memcmp(&want[j], &got[j], sizeof(want[j])),
               "%s: region %d (object %d): mass ref %llu cuda %llu", what, j, reg[j].obj,
               (unsigned long long)want[j].mass, (unsigned long long)got[j].mass);
}

/* make(st, img, n, mode, objs): a mode's n objects for img. The test
 * proper: CUDA (every variant, and "fused:copyback") against cpu-ref on
 * random scenes of 4 sizes x 4 object counts x every format (both matrices
 * and ranges), each of `modes` object sets with blob lists on every 7th
 * object, without and with random ROIs, and the regional form on the
 * default variant. Returns the exit status (check_exit), 77 without a
 * usable GPU (ctest SKIP). */
typedef void (*make_objects_fn)(uint64_t *st, const struct trk_image *img, int n, int mode,
                                struct trk_object_def *objs);
static int run_spaces_test(int argc, char **argv, const char *test, int modes, make_objects_fn fill,
                           unsigned seed, uint64_t st)
{
    /* Optional "K N": only the variants v with v % N == K (ctest runs the
     * shards side by side; each reports its time per variant). */
    const int shard = argc == 3 ? atoi(argv[1]) : 0, nshards = argc == 3 ? atoi(argv[2]) : 1;
    if (nshards < 1 || shard < 0 || shard >= nshards) {
        fprintf(stderr, "usage: %s [SHARD NSHARDS]\n", test);
        return 2;
    }
    char why[256];
    if (!trk_cuda_available(why, sizeof(why))) {
        printf("%s: skipped: %s\n", test, why);
        return 77;
    }
    static const int sizes[][2] = { { 1, 1 }, { 37, 23 }, { 129, 67 }, { 333, 190 } };
    static const int counts[] = { 1, 40, 130, 256 };
    static struct trk_object_def objs[TRK_MAX_OBJECTS];
    static struct trk_roi rois[TRK_MAX_OBJECTS];
    const char *names[16];
    const int nv = trk_backend_variants(TRK_BACKEND_CUDA, names, 15);
    names[nv] = "fused:copyback";
    struct trk_backend *ref = make(TRK_BACKEND_CPU_REF, NULL);
    for (int v = shard; v <= nv; v += nshards) {
        struct trk_backend *cu = make(TRK_BACKEND_CUDA, names[v]);
        if (!cu) continue;
        const int before = cases;
        const time_t t0 = time(NULL);
        for (int si = 0; si < 4; si++)
            for (int ci = 0; ci < 4; ci++) {
                const int w = sizes[si][0], h = sizes[si][1], n = counts[ci];
                struct trk_scene sc;
                if (trk_scene_random(w, h, 8, seed + 10u * (unsigned)si + (unsigned)ci, &sc))
                    continue;
                for (int f = 0; f < TRK_FMT_COUNT; f++) {
                    uint8_t *buf;
                    struct trk_image img;
                    if (trk_image_from_rgb(sc.rgb, w, h, (enum trk_pixfmt)f,
                                           (enum trk_matrix)((ci + f) % 2), (si + f) % 2,
                                           (si + f) % 3, &buf, &img))
                        continue;
                    for (int mode = 0; mode < modes; mode++) {
                        fill(&st, &img, n, mode, objs);
                        /* Blob lists on a few objects (every variant has them). */
                        for (int k = 0; k < n; k += 7)
                            objs[k].blobs = 3, objs[k].connectivity = (uint8_t)(k % 2 ? 4 : 8);
                        int e1 = trk_backend_set_objects(ref, objs, n);
                        int e2 = trk_backend_set_objects(cu, objs, n);
                        CHECKF(e1 == 0 && e2 == 0, "set_objects ref %d cuda %d", e1, e2);
                        if (e1 || e2) continue;
                        char what[160];
                        snprintf(what, sizeof(what), "%s %dx%d n=%d %s mode %d", names[v], w, h, n,
                                 trk_pixfmt_name((enum trk_pixfmt)f), mode);
                        compare(ref, cu, objs, n, &img, NULL, what);
                        for (int i = 0; i < n; i++) {
                            rois[i].x0 = (int)(trk_rand_next(&st) % (uint64_t)w) - 2;
                            rois[i].y0 = (int)(trk_rand_next(&st) % (uint64_t)h) - 2;
                            rois[i].x1 = rois[i].x0 + (int)(trk_rand_next(&st) % (uint64_t)w);
                            rois[i].y1 = rois[i].y0 + (int)(trk_rand_next(&st) % (uint64_t)h);
                        }
                        compare(ref, cu, objs, n, &img, rois, what);
                        if (v == 0) compare_regions(ref, cu, &st, &img, n, what);
                    }
                    free(buf);
                }
                trk_scene_free(&sc);
            }
        printf("%s: %s: %d comparisons in %lld s\n", test, names[v], cases - before,
               (long long)(time(NULL) - t0));
        fflush(stdout);
        trk_backend_destroy(&cu);
    }
    trk_backend_destroy(&ref);
    CHECKF(cases > 0, "shard %d of %d compared nothing", shard, nshards);
    printf("%s: %d comparisons\n", test, cases);
    return check_exit(test);
}

#endif
