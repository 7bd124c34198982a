/* The lab and rg spaces on the CUDA backend == the CPU reference, exactly:
 * every variant (the fused kernel's LIGHT copies, lut, naive, moct), every
 * input format and matrix/range, lab objects alone, rg alone and both mixed
 * with objects of every other space, 1..256 objects (1, 2, 4 and 8 mask
 * words), without and with ROIs; blob lists of such objects; the regional
 * form. The objects are boxes around the frame's own pixels
 * (trk_scene_pixel_objects), so each catches something. A set of rgb
 * objects alone runs alongside, so the kernels without the new spaces are
 * checked in the same run. Needs a GPU: without one it exits 77 (ctest
 * SKIP) and says why. */
#include "cuda_compare.h"

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    char why[256];
    if (!trk_cuda_available(why, sizeof(why))) {
        printf("test_cuda_lightspaces: skipped: %s\n", why);
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
    uint64_t st = 4242;
    for (int v = 0; v <= nv; v++) {
        struct trk_backend *cu = make(TRK_BACKEND_CUDA, names[v]);
        if (!cu) continue;
        for (int si = 0; si < 4; si++)
            for (int ci = 0; ci < 4; ci++) {
                const int w = sizes[si][0], h = sizes[si][1], n = counts[ci];
                struct trk_scene sc;
                if (trk_scene_random(w, h, 8, 500u + 10u * (unsigned)si + (unsigned)ci, &sc))
                    continue;
                for (int f = 0; f < TRK_FMT_COUNT; f++) {
                    uint8_t *buf;
                    struct trk_image img;
                    if (trk_image_from_rgb(sc.rgb, w, h, (enum trk_pixfmt)f,
                                           (enum trk_matrix)((ci + f) % 2), (si + f) % 2,
                                           (si + f) % 3, &buf, &img))
                        continue;
                    /* 0: lab only, 1: rg only, 2: every space mixed, 3: rgb
                     * only (the kernels without the new spaces). */
                    for (int mode = 0; mode < 4; mode++) {
                        static const int sp[4] = { TRK_SPACE_LAB, TRK_SPACE_RG, -1, TRK_SPACE_RGB };
                        trk_scene_pixel_objects(&st, &img, sp[mode], n, objs);
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
        trk_backend_destroy(&cu);
    }
    trk_backend_destroy(&ref);
    printf("test_cuda_lightspaces: %d comparisons\n", cases);
    return check_exit("test_cuda_lightspaces");
}
