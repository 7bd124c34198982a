/* The helpers the GPU exactness tests of the spaces share
 * (test_cuda_lightspaces.c, test_cuda_classes.c): a backend of frames up
 * to MAXW x MAXH, and CUDA against cpu-ref on a frame (aggregates and blob
 * lists) and on regions, every difference a failed check. Static: each
 * test includes it once. */
#ifndef TRK_TESTS_GPU_CUDA_COMPARE_H
#define TRK_TESTS_GPU_CUDA_COMPARE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#endif
