/* The second moments on the GPU at 8K (7680 x 4320): every CUDA variant's
 * aggregates and blob lists == cpu-ref's on the sparse scene of
 * tests/unit/gpu/moments_scene.h (the whole-frame object, a rectangle at
 * the far corner, a disc, a rotated bar, a diagonal line under 4- and
 * 8-connectivity), checked against their closed forms too; the regional
 * form on regions at the far corners == cpu-ref's; and 40 copies of the
 * whole-frame object (the fused kernel's dense path: many objects in one
 * mask word) each equal to the closed form. Needs a GPU: without one it
 * exits 77 (ctest SKIP) and says why. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "../unit/gpu/moments_scene.h"
#include "backend.h"

#define W 7680
#define H 4320

/* Both results identical; prints the first difference. */
static void same(const char *what, int k, const struct trk_obj_result *a,
                 const struct trk_obj_result *b)
{
    CHECKF(!memcmp(a, b, sizeof(*a)),
           "%s object %d: ref mass %llu sxx %llu syy %llu sxy %llu box %d,%d,%d,%d; cuda mass "
           "%llu sxx %llu syy %llu sxy %llu box %d,%d,%d,%d",
           what, k, (unsigned long long)a->mass, (unsigned long long)a->sum_xx,
           (unsigned long long)a->sum_yy, (unsigned long long)a->sum_xy, a->x0, a->y0, a->x1, a->y1,
           (unsigned long long)b->mass, (unsigned long long)b->sum_xx,
           (unsigned long long)b->sum_yy, (unsigned long long)b->sum_xy, b->x0, b->y0, b->x1,
           b->y1);
}

/* The lists of n objects (or regions) of the last frame, copied. */
struct lists {
    int n[16];
    struct trk_blob b[16][TRK_MAX_BLOBS];
};

static void take_lists(struct trk_backend *be, int n, struct lists *l)
{
    for (int j = 0; j < n; j++) {
        const struct trk_blob *bl;
        l->n[j] = trk_backend_blobs(be, j, &bl);
        if (l->n[j] > 0) memcpy(l->b[j], bl, (size_t)l->n[j] * sizeof(*bl));
    }
}

static void same_lists(const char *what, const struct lists *a, const struct lists *b, int n)
{
    for (int j = 0; j < n; j++) {
        int first = -1;
        for (int i = 0; a->n[j] == b->n[j] && i < a->n[j] && first < 0; i++)
            if (memcmp(&a->b[j][i], &b->b[j][i], sizeof(a->b[j][i]))) first = i;
        CHECKF(a->n[j] == b->n[j] && first < 0,
               "%s %d: %d blobs, cpu-ref %d; first difference at %d (sum_xx %llu vs %llu)", what, j,
               b->n[j], a->n[j], first, first >= 0 ? (unsigned long long)b->b[j][first].sum_xx : 0,
               first >= 0 ? (unsigned long long)a->b[j][first].sum_xx : 0);
    }
}

static const struct trk_region *regions(int *n)
{
    static struct trk_region r[8];
    const struct trk_region init[8] = {
        { 0, { W - 900, H - 600, W - 1, H - 1 } },
        { 1, { W - 800, H - 450, W - 1, H - 1 } },
        { 1, { W - 601, H - 406, W - 200, H - 100 } },
        { 2, { W - 1200, 100, W - 800, 500 } },
        { 3, { W - 1200, 100, W - 800, 500 } },
        { 2, { W / 2 - 400, H / 2 - 300, W / 2 + 400, H / 2 + 300 } },
        { 2, { W - 1850, H - 950, W - 1200, H - 300 } },
        { 3, { W - 1850, H - 950, W - 1200, H - 300 } },
    };
    memcpy(r, init, sizeof(init));
    *n = 8;
    return r;
}

/* 40 copies of the whole-frame object, no blobs: every mask word holds
 * many objects present in every segment, so the fused kernel takes its
 * dense path everywhere; each must equal the closed form. */
static void dense_copies(struct trk_backend *be, const struct ms_scene *sc, const char *name)
{
    static struct trk_object_def o[40];
    struct trk_obj_result got[40];
    for (int k = 0; k < 40; k++) {
        o[k] = sc->objs[0];
        o[k].blobs = 0;
    }
    const struct trk_obj_result all = ms_expect_rect(0, 0, W - 1, H - 1);
    CHECK(trk_backend_set_objects(be, o, 40) == 0);
    CHECK(trk_backend_process(be, &sc->img, NULL, got, NULL) == 0);
    char what[96];
    snprintf(what, sizeof(what), "%s dense copies", name);
    for (int k = 0; k < 40; k++)
        same(what, k, &all, &got[k]);
}

int main(void)
{
    char why[256];
    if (!trk_cuda_available(why, sizeof(why))) {
        fprintf(stderr, "\n*** SKIPPED: test_cuda_moments needs a usable CUDA GPU: %s ***\n\n",
                why);
        printf("SKIP: %s\n", why);
        return 77;
    }
    static struct ms_scene sc;
    if (ms_make(W, H, &sc)) return 1;
    struct trk_backend *ref = NULL;
    struct trk_backend_cfg cfg = { .kind = TRK_BACKEND_CPU_REF, .max_width = W, .max_height = H };
    if (trk_backend_create(&cfg, &ref) || trk_backend_set_objects(ref, sc.objs, MS_OBJECTS))
        return 1;
    struct trk_obj_result want[MS_OBJECTS], got[MS_OBJECTS], want_r[8], got_r[8];
    static struct lists want_l, got_l, want_rl, got_rl;
    CHECK(trk_backend_process(ref, &sc.img, NULL, want, NULL) == 0);
    take_lists(ref, MS_OBJECTS, &want_l);
    /* cpu-ref itself against the closed forms (exactness at 8K). */
    const struct trk_obj_result all = ms_expect_rect(0, 0, W - 1, H - 1);
    const struct trk_obj_result red = ms_expect_rect(sc.rx0, sc.ry0, sc.rx1, sc.ry1);
    same("cpu-ref vs closed form", 0, &all, &want[0]);
    same("cpu-ref vs closed form", 1, &red, &want[1]);
    CHECK(want_l.n[0] == 1 && ms_blob_is(&want_l.b[0][0], &all));
    CHECK(want_l.n[1] == 1 && ms_blob_is(&want_l.b[1][0], &red));
    CHECK(want_l.n[3] == 64); /* the 4-connected diagonal: single pixels */
    int nr;
    const struct trk_region *reg = regions(&nr);
    CHECK(trk_backend_process_regions(ref, &sc.img, reg, nr, want_r, NULL) == 0);
    take_lists(ref, nr, &want_rl);
    for (int j = 0; j < nr; j++)
        CHECKF(want_r[j].mass > 0 && want_rl.n[j] > 0, "region %d finds nothing", j);

    const char *names[64];
    const int nv = trk_backend_variants(TRK_BACKEND_CUDA, names, 64);
    CHECKF(nv >= 4, "CUDA lists only %d variants", nv);
    cfg.kind = TRK_BACKEND_CUDA;
    for (int v = 0; v < nv; v++) {
        struct trk_backend *be = NULL;
        cfg.variant = names[v];
        int err = trk_backend_create(&cfg, &be);
        CHECKF(err == 0, "creating cuda variant %s: %s", names[v], trk_strerror(err));
        if (err) continue;
        CHECK(trk_backend_set_objects(be, sc.objs, MS_OBJECTS) == 0);
        memset(got, 0x5a, sizeof(got));
        CHECK(trk_backend_process(be, &sc.img, NULL, got, NULL) == 0);
        for (int k = 0; k < MS_OBJECTS; k++)
            same(names[v], k, &want[k], &got[k]);
        take_lists(be, MS_OBJECTS, &got_l);
        same_lists(names[v], &want_l, &got_l, MS_OBJECTS);
        memset(got_r, 0x5a, sizeof(got_r));
        CHECK(trk_backend_process_regions(be, &sc.img, reg, nr, got_r, NULL) == 0);
        for (int j = 0; j < nr; j++)
            same(names[v], 100 + j, &want_r[j], &got_r[j]);
        take_lists(be, nr, &got_rl);
        same_lists(names[v], &want_rl, &got_rl, nr);
        dense_copies(be, &sc, names[v]);
        printf("%-12s 8K moments: %s\n", names[v], check_failures ? "FAILED so far" : "equal");
        trk_backend_destroy(&be);
    }
    printf("8K whole frame: sum_xx %llu sum_yy %llu sum_xy %llu\n",
           (unsigned long long)want[0].sum_xx, (unsigned long long)want[0].sum_yy,
           (unsigned long long)want[0].sum_xy);
    trk_backend_destroy(&ref);
    ms_free(&sc);
    return check_exit("test_cuda_moments");
}
