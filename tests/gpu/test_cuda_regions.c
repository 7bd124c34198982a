/* The CUDA backend's native regional form (trk_backend_submit_regions,
 * regions.cu) == the definition, bit for bit: every region's aggregate and
 * blob list equal to those of a submit in which only the region's object
 * has a ROI (the generic form: cpu-ref's process_regions on small cases,
 * and the same submit on the CUDA backend itself), and to the fast CPU
 * backend's native form. Both designs (seed quadrants/patches with several
 * alpha/beta, and the flat work list), on seeded scenes: every pixel
 * format, odd sizes, ROIs at the borders, overlapping, empty, larger than
 * the frame, the same object in many regions, blobs on and off, 4/8
 * connectivity, min_area, TRK_MAX_REGIONS regions, the pre-filter on.
 * Before every regional call the device frame holds a different picture (a
 * full submit of a decoy frame), so a pixel the ROI-only upload missed
 * reads the decoy's value and shows as a difference. Upload bytes: a few
 * small regions copy far less than the frame; with the pre-filter on the
 * whole frame. Needs a GPU: without one it exits 77 (ctest SKIP).
 *
 *   test_cuda_regions            the full matrix
 *   test_cuda_regions --quick    a smaller one (compute-sanitizer runs)
 *   test_cuda_regions --probe    exit 0 with a usable GPU, 77 without
 *
 * A mismatch prints the case, the design, the region (object, ROI), the
 * field and both values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "backend.h"
#include "cuda/bench_hooks.h"
#include "scene.h"

static int cases, quick;
static long long regions_checked, blobs_checked;

/* Designs and seed parameters (design, alpha, beta); 0, 0 = per call. */
static const int designs[][3] = { { 0, 0, 0 }, { 2, 0, 0 }, { 1, 0, 0 },  { 1, 1, 1 }, { 1, 2, 1 },
                                  { 1, 4, 2 }, { 1, 8, 8 }, { 1, 64, 8 }, { 1, 3, 3 } };
#define ND ((int)(sizeof(designs) / sizeof(designs[0])))

struct ctx {
    struct trk_backend *ref, *cpu, *cuda;
    int maxw, maxh;
};

static int ctx_open(struct ctx *c, int maxw, int maxh)
{
    memset(c, 0, sizeof(*c));
    c->maxw = maxw, c->maxh = maxh;
    struct trk_backend_cfg cfg = {
        .kind = TRK_BACKEND_CPU_REF, .max_width = maxw, .max_height = maxh, .threads = 2
    };
    int err = trk_backend_create(&cfg, &c->ref);
    cfg.kind = TRK_BACKEND_CPU;
    if (!err) err = trk_backend_create(&cfg, &c->cpu);
    cfg.kind = TRK_BACKEND_CUDA;
    if (!err) err = trk_backend_create(&cfg, &c->cuda);
    if (err) fprintf(stderr, "creating backends %dx%d: %s\n", maxw, maxh, trk_strerror(err));
    if (!err && !trk_backend_regions_native(c->cuda)) {
        fprintf(stderr, "the CUDA backend has no native regional form\n");
        err = TRK_ENODEV;
    }
    return err;
}

static void ctx_close(struct ctx *c)
{
    trk_backend_destroy(&c->ref);
    trk_backend_destroy(&c->cpu);
    trk_backend_destroy(&c->cuda);
}

/* Region results and lists of one backend. */
struct got {
    struct trk_obj_result res[TRK_MAX_REGIONS];
    int nb[TRK_MAX_REGIONS];
    struct trk_blob bl[TRK_MAX_REGIONS][TRK_MAX_BLOBS];
    uint64_t upload_bytes;
};

static int run_regions(struct trk_backend *b, const struct trk_image *im,
                       const struct trk_region *r, int n, struct got *g)
{
    struct trk_backend_timing t = { 0 };
    int err = trk_backend_process_regions(b, im, r, n, g->res, &t);
    if (err) return err;
    g->upload_bytes = t.upload_bytes;
    for (int j = 0; j < n; j++) {
        const struct trk_blob *l = NULL;
        g->nb[j] = trk_backend_blobs(b, j, &l);
        if (g->nb[j] > 0) memcpy(g->bl[j], l, (size_t)g->nb[j] * sizeof(*l));
    }
    return 0;
}

/* The definition run on b itself: one submit per region, only its object
 * with a ROI. */
static int run_definition(struct trk_backend *b, int nobj, const struct trk_image *im,
                          const struct trk_region *r, int n, struct got *g)
{
    static struct trk_roi rois[TRK_MAX_OBJECTS];
    static struct trk_obj_result all[TRK_MAX_OBJECTS];
    for (int i = 0; i < nobj; i++)
        rois[i] = (struct trk_roi){ 0, 0, -1, -1 };
    for (int j = 0; j < n; j++) {
        rois[r[j].obj] = r[j].roi;
        int err = trk_backend_process(b, im, rois, all, NULL);
        rois[r[j].obj] = (struct trk_roi){ 0, 0, -1, -1 };
        if (err) return err;
        g->res[j] = all[r[j].obj];
        const struct trk_blob *l = NULL;
        g->nb[j] = trk_backend_blobs(b, r[j].obj, &l);
        if (g->nb[j] > 0) memcpy(g->bl[j], l, (size_t)g->nb[j] * sizeof(*l));
    }
    return 0;
}

/* The first field that differs (its name, both values), or NULL. */
#define F(f)                                                                                       \
    do {                                                                                           \
        if (a->f != b->f) {                                                                        \
            *va = (long long)a->f, *vb = (long long)b->f;                                          \
            return #f;                                                                             \
        }                                                                                          \
    } while (0)
#define F_SUMS()                                                                                   \
    do {                                                                                           \
        F(mass);                                                                                   \
        F(sum_x);                                                                                  \
        F(sum_y);                                                                                  \
        F(x0);                                                                                     \
        F(y0);                                                                                     \
        F(x1);                                                                                     \
        F(y1);                                                                                     \
        F(sum_xx);                                                                                 \
        F(sum_yy);                                                                                 \
        F(sum_xy);                                                                                 \
    } while (0)

static const char *res_diff(const struct trk_obj_result *a, const struct trk_obj_result *b,
                            long long *va, long long *vb)
{
    F_SUMS();
    return NULL;
}

static const char *blob_diff(const struct trk_blob *a, const struct trk_blob *b, long long *va,
                             long long *vb)
{
    F_SUMS();
    F(perimeter);
    F(first);
    return NULL;
}
#undef F_SUMS
#undef F

/* got == want for every region; prints the first difference. */
static int compare(const char *what, const char *who, const struct trk_region *r, int n,
                   const struct got *want, const struct got *got)
{
    for (int j = 0; j < n; j++) {
        long long va = 0, vb = 0;
        const char *f = res_diff(&want->res[j], &got->res[j], &va, &vb);
        const char *kind = "aggregate";
        int bi = -1;
        if (!f && want->nb[j] != got->nb[j]) {
            f = "list length", va = want->nb[j], vb = got->nb[j];
            kind = "blobs";
        }
        for (int i = 0; !f && i < want->nb[j]; i++)
            if ((f = blob_diff(&want->bl[j][i], &got->bl[j][i], &va, &vb))) kind = "blob", bi = i;
        if (f) {
            CHECKF(0,
                   "%s, %s: region %d of %d (object %d, roi %d,%d,%d,%d): %s %d %s: want %lld "
                   "got %lld",
                   what, who, j, n, r[j].obj, r[j].roi.x0, r[j].roi.y0, r[j].roi.x1, r[j].roi.y1,
                   kind, bi, f, va, vb);
            return 1;
        }
    }
    return 0;
}

/* Random regions: borders, overlapping, empty, larger than the frame, the
 * same object many times (objects drawn with repeats). */
static int random_regions(struct trk_region *r, int n, int nobj, int w, int h, uint64_t *st)
{
    for (int j = 0; j < n; j++) {
        struct trk_region *R = &r[j];
        R->obj = (int)(trk_rand_next(st) % (uint64_t)nobj);
        const int kind = (int)(trk_rand_next(st) % 8);
        const int x = (int)(trk_rand_next(st) % (uint64_t)(w + 20)) - 10;
        const int y = (int)(trk_rand_next(st) % (uint64_t)(h + 20)) - 10;
        const int rw = 1 + (int)(trk_rand_next(st) % (uint64_t)(w / 3 + 2));
        const int rh = 1 + (int)(trk_rand_next(st) % (uint64_t)(h / 3 + 2));
        switch (kind) {
        case 0: R->roi = (struct trk_roi){ -50, -50, w + 50, h + 50 }; break;      /* > frame */
        case 1: R->roi = (struct trk_roi){ x, y, x - 1, y + rh }; break;           /* empty */
        case 2: R->roi = (struct trk_roi){ w - rw / 2, y, w + rw, y + rh }; break; /* border */
        case 3: R->roi = (struct trk_roi){ x, -rh / 2, x + rw, rh / 2 }; break;    /* top */
        case 4: R->roi = (struct trk_roi){ w + 5, y, w + 9, y + 3 }; break;        /* outside */
        case 5:
            if (j > 0) { /* overlapping the previous one, same or another object */
                R->roi = r[j - 1].roi;
                R->roi.x0 += rw / 4, R->roi.x1 += rw / 4;
                break;
            }
            /* fall through */
        default: R->roi = (struct trk_roi){ x, y, x + rw, y + rh }; break;
        }
    }
    return n;
}

/* One scene through every format in fmts: regions checked against the
 * references, every design; sigma: the pre-filter. */
static void run_case(struct ctx *c, const char *name, const uint8_t *rgb, int w, int h,
                     struct trk_object_def *objs, int m, const struct trk_region *r, int n,
                     unsigned fmts, double sigma)
{
    static struct got ref, cpu, def, got;
    struct trk_backend *all[3] = { c->ref, c->cpu, c->cuda };
    for (int i = 0; i < 3; i++) {
        int err = trk_backend_set_objects(all[i], objs, m);
        if (!err) err = trk_backend_set_prefilter(all[i], sigma);
        if (err) {
            CHECKF(0, "%s: set_objects / set_prefilter: %s", name, trk_strerror(err));
            return;
        }
    }
    /* cpu-ref's generic form costs a frame per region: small cases only. */
    const bool use_ref = (double)w * h * n <= (quick ? 2e6 : 2e7);
    const bool use_def = n <= 64;
    uint8_t *decoy_rgb = malloc((size_t)w * h * 3);
    if (!decoy_rgb) return;
    for (size_t i = 0; i < (size_t)w * h * 3; i++)
        decoy_rgb[i] = (uint8_t)(255 - rgb[i]);
    for (int fmt = 0; fmt < TRK_FMT_COUNT; fmt++) {
        if (!(fmts & 1u << fmt)) continue;
        uint8_t *buf = NULL, *dbuf = NULL;
        struct trk_image im, decoy;
        const int pad = fmt % 3 * 5;
        if (trk_image_from_rgb(rgb, w, h, fmt, fmt % 2 ? TRK_MATRIX_BT709 : TRK_MATRIX_BT601,
                               fmt % 3 != 1, pad, &buf, &im) ||
            trk_image_from_rgb(decoy_rgb, w, h, fmt, TRK_MATRIX_BT601, true, pad, &dbuf, &decoy)) {
            CHECKF(0, "%s: converting to %s", name, trk_pixfmt_name(fmt));
            free(buf);
            free(dbuf);
            continue;
        }
        char what[200];
        snprintf(what, sizeof(what), "%s %dx%d %s sigma %.1f, %d regions", name, w, h,
                 trk_pixfmt_name(fmt), sigma, n);
        cases++;
        int err = run_regions(c->cpu, &im, r, n, &cpu);
        CHECKF(!err, "%s: cpu: %s", what, trk_strerror(err));
        if (use_ref) {
            err = run_regions(c->ref, &im, r, n, &ref);
            CHECKF(!err, "%s: cpu-ref: %s", what, trk_strerror(err));
            if (!err) compare(what, "cpu against cpu-ref (the definition)", r, n, &ref, &cpu);
        }
        if (use_def) {
            err = run_definition(c->cuda, m, &im, r, n, &def);
            CHECKF(!err, "%s: cuda definition: %s", what, trk_strerror(err));
            if (!err) compare(what, "cuda one submit per region against cpu", r, n, &cpu, &def);
        }
        for (int d = 0; d < ND; d++) {
            if (quick && d > 4 && d != ND - 1) continue;
            err = trk_cuda_rrm_config(c->cuda, designs[d][0], designs[d][1], designs[d][2]);
            CHECKF(!err, "%s: rrm config %d: %s", what, d, trk_strerror(err));
            /* The device frame holds the decoy before the regional call. */
            struct trk_obj_result scratch[TRK_MAX_OBJECTS];
            err = trk_backend_process(c->cuda, &decoy, NULL, scratch, NULL);
            CHECKF(!err, "%s: decoy: %s", what, trk_strerror(err));
            err = run_regions(c->cuda, &im, r, n, &got);
            CHECKF(!err, "%s: cuda regions: %s", what, trk_strerror(err));
            if (err) continue;
            int used[3] = { 0, 0, 0 };
            trk_cuda_rrm_used(c->cuda, &used[0], &used[1], &used[2]);
            char who[120];
            snprintf(who, sizeof(who), "cuda native design %d (asked %d alpha %d beta %d)", used[0],
                     designs[d][0], used[1], used[2]);
            compare(what, who, r, n, &cpu, &got);
            if (designs[d][1] && n > 0) { /* no region: nothing ran, nothing to report */
                CHECKF(used[0] == 1 && used[1] == designs[d][1] && used[2] == designs[d][2],
                       "%s: asked seed alpha %d beta %d, used design %d alpha %d beta %d", what,
                       designs[d][1], designs[d][2], used[0], used[1], used[2]);
            }
            /* The pre-filter reads around every pixel: the whole frame. */
            struct trk_plane_layout L;
            trk_image_plane_layout(fmt, w, h, &L);
            uint64_t frame = 0;
            for (int p = 0; p < L.planes; p++)
                frame += (uint64_t)L.row_bytes[p] * (uint64_t)L.rows[p];
            if (sigma > 0 && n > 0)
                CHECKF(got.upload_bytes == frame, "%s: pre-filter on: uploaded %llu of %llu", what,
                       (unsigned long long)got.upload_bytes, (unsigned long long)frame);
            else
                CHECKF(got.upload_bytes <= frame, "%s: uploaded %llu, more than the frame %llu",
                       what, (unsigned long long)got.upload_bytes, (unsigned long long)frame);
        }
        regions_checked += n;
        for (int j = 0; j < n; j++)
            blobs_checked += cpu.nb[j];
        free(buf);
        free(dbuf);
    }
    free(decoy_rgb);
}

/* scene.c's random scene with random blob settings and regions. */
static void random_case(struct ctx *c, int w, int h, int m, int n, uint64_t seed, unsigned fmts,
                        double sigma)
{
    struct trk_scene sc;
    if (trk_scene_random(w, h, m, seed, &sc)) {
        CHECKF(0, "random scene %dx%d", w, h);
        return;
    }
    uint64_t st = seed * 7919;
    for (int k = 0; k < sc.n_objects; k++) {
        struct trk_object_def *o = &sc.objects[k];
        const int kind = (int)(trk_rand_next(&st) % 5);
        o->blobs = kind == 0 ? 0 : kind == 1 ? 1 : (uint16_t)(1 + trk_rand_next(&st) % 64);
        o->connectivity = (uint8_t)(kind % 3 == 0 ? 0 : kind % 3 == 1 ? 4 : 8);
        o->min_area = (uint32_t)(trk_rand_next(&st) % 6);
    }
    static struct trk_region r[TRK_MAX_REGIONS];
    random_regions(r, n, sc.n_objects, w, h, &st);
    char name[80];
    snprintf(name, sizeof(name), "random seed %llu", (unsigned long long)seed);
    run_case(c, name, sc.rgb, w, h, sc.objects, sc.n_objects, r, n, fmts, sigma);
    trk_scene_free(&sc);
}

/* The standard scene's disks, one region per disk around it (a tracker's
 * shape: small regions far apart), the same object twice for some, with
 * blobs; upload bytes far below the frame's. */
static void disks_case(struct ctx *c, int w, int h, int m, unsigned fmts)
{
    struct trk_scene sc;
    if (trk_scene_standard(w, h, m, 5, &sc)) {
        CHECKF(0, "standard scene %dx%d", w, h);
        return;
    }
    for (int k = 0; k < m; k++) {
        sc.objects[k].blobs = (uint16_t)(k % 3 ? 2 : 0);
        sc.objects[k].connectivity = (uint8_t)(k % 2 ? 4 : 8);
    }
    static struct trk_region r[TRK_MAX_REGIONS];
    int n = 0;
    const int half = sc.radius + 8;
    for (int k = 0; k < m && n < TRK_MAX_REGIONS - 1; k++) {
        r[n++] = (struct trk_region){
            k, { sc.cx[k] - half, sc.cy[k] - half, sc.cx[k] + half, sc.cy[k] + half }
        };
        if (k % 4 == 0)
            r[n++] = (struct trk_region){
                k, { sc.cx[k] - half / 2, sc.cy[k] - half, sc.cx[k] + half * 2, sc.cy[k] }
            };
    }
    run_case(c, "disks", sc.rgb, w, h, sc.objects, m, r, n, fmts, 0);
    /* Upload: the regions' rectangles, not the frame. */
    struct trk_image im = { .plane = { sc.rgb },
                            .pitch = { (size_t)w * 3 },
                            .width = w,
                            .height = h,
                            .fmt = TRK_FMT_RGB24 };
    /* The bound: every region's clipped area (overlaps counted twice), 3
     * bytes a pixel, twice over for the rows merging adds between near
     * rectangles; when that reaches half the frame the frame goes whole. */
    uint64_t area = 0;
    for (int j = 0; j < n; j++) {
        const int x0 = r[j].roi.x0 < 0 ? 0 : r[j].roi.x0, y0 = r[j].roi.y0 < 0 ? 0 : r[j].roi.y0;
        const int x1 = r[j].roi.x1 >= w ? w - 1 : r[j].roi.x1;
        const int y1 = r[j].roi.y1 >= h ? h - 1 : r[j].roi.y1;
        if (x0 <= x1 && y0 <= y1) area += (uint64_t)(x1 - x0 + 1) * (uint64_t)(y1 - y0 + 1);
    }
    const uint64_t frame = (uint64_t)w * h * 3, bound = 2 * 3 * area;
    static struct got g;
    if (!run_regions(c->cuda, &im, r, n, &g))
        CHECKF(g.upload_bytes > 0 &&
                   (bound >= frame / 2 ? g.upload_bytes <= frame : g.upload_bytes <= bound),
               "disks %dx%d: %d small regions (%llu pixels) uploaded %llu bytes of a %llu-byte "
               "frame",
               w, h, n, (unsigned long long)area, (unsigned long long)g.upload_bytes,
               (unsigned long long)frame);
    trk_scene_free(&sc);
}

/* Noise that makes thousands of components per region (more than the
 * block path's records per pass: several statistics passes, the list
 * merged across them), solid bars across it (components larger than a
 * warp's row word, many runs joined), regions at the block path's area
 * limit (128 x 256 = 32768 pixels) and just over it (the global path), the
 * whole frame, and K larger than the components. */
static void noise_case(struct ctx *c, unsigned fmts)
{
    const int w = 200, h = 260;
    uint8_t *rgb = malloc((size_t)w * h * 3);
    if (!rgb) return;
    uint64_t st = 4242;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const bool bar = (y % 40 < 3 && x % 50 < 45) || (x % 60 < 2 && y % 70 < 60);
            const bool red = bar || trk_rand_next(&st) % 100 < 35;
            uint8_t *px = rgb + ((size_t)y * w + x) * 3;
            px[0] = red ? 220 : 20, px[1] = 20, px[2] = red ? 20 : 220;
        }
    struct trk_object_def objs[3];
    memset(objs, 0, sizeof(objs));
    for (int k = 0; k < 3; k++) {
        snprintf(objs[k].name, sizeof(objs[k].name), "noise%d", k);
        objs[k].space = TRK_SPACE_RGB;
        objs[k].min_mass = 1;
        objs[k].lo[0] = k < 2 ? 180 : 0, objs[k].hi[0] = k < 2 ? 255 : 60;
        objs[k].lo[1] = 0, objs[k].hi[1] = 60;
        objs[k].lo[2] = k < 2 ? 0 : 180, objs[k].hi[2] = k < 2 ? 60 : 255;
    }
    objs[0].blobs = 64, objs[0].connectivity = 8;
    objs[1].blobs = 64, objs[1].connectivity = 4, objs[1].min_area = 2;
    objs[2].blobs = 5, objs[2].connectivity = 8;
    const struct trk_region r[] = {
        { 0, { 5, 5, 184, 184 } },       /* 32400 pixels: a block, several passes */
        { 1, { 5, 5, 184, 184 } },       /* the same, 4-connected, min_area 2 */
        { 0, { 0, 0, 181, 180 } },       /* 32942 pixels: the global path */
        { 1, { 10, 0, 137, 255 } },      /* 128 x 256: the block path's limit */
        { 2, { -5, -5, w + 5, h + 5 } }, /* the whole frame */
        { 0, { 50, 50, 60, 58 } },       /* K 64, a few components */
        { 1, { 0, 258, 199, 259 } },     /* two rows, 4-connected */
        { 0, { 199, 0, 199, 259 } },     /* one column */
    };
    run_case(c, "noise", rgb, w, h, objs, 3, r, (int)(sizeof(r) / sizeof(r[0])), fmts, 0);
    free(rgb);
}

int main(int argc, char **argv)
{
    quick = argc > 1 && !strcmp(argv[1], "--quick");
    char why[256];
    if (!trk_cuda_available(why, sizeof(why))) {
        fprintf(stderr, "\n*** SKIPPED: test_cuda_regions needs a usable CUDA GPU: %s ***\n\n",
                why);
        printf("SKIP: %s\n", why);
        return 77;
    }
    if (argc > 1 && !strcmp(argv[1], "--probe")) return 0;
    const unsigned all = (1u << TRK_FMT_COUNT) - 1;
    const unsigned two = 1u << TRK_FMT_RGB24 | 1u << TRK_FMT_NV12;
    struct ctx c;
    if (ctx_open(&c, 700, 500)) return 1;
    static const struct {
        int w, h, m, n;
    } rnd[] = { { 1, 1, 3, 4 },       { 2, 3, 5, 9 },        { 37, 23, 7, 40 }, { 129, 67, 12, 64 },
                { 333, 190, 20, 33 }, { 641, 479, 30, 100 }, { 700, 500, 9, 1 } };
    const int n_rnd = quick ? 4 : (int)(sizeof(rnd) / sizeof(rnd[0]));
    for (int i = 0; i < n_rnd; i++)
        random_case(&c, rnd[i].w, rnd[i].h, rnd[i].m, rnd[i].n, 100 + (uint64_t)i,
                    quick || rnd[i].w > 300 ? two : all, 0);
    /* The pre-filter on (the whole frame filtered, then the regions). */
    random_case(&c, 129, 67, 6, 20, 200, quick ? two : all, 1.5);
    /* No regions at all, then regions again. */
    random_case(&c, 64, 48, 4, 0, 201, two, 0);
    /* TRK_MAX_REGIONS regions (blobs on most objects). */
    random_case(&c, quick ? 96 : 320, quick ? 64 : 240, 16, TRK_MAX_REGIONS, 202,
                1u << TRK_FMT_RGB24, 0);
    disks_case(&c, 640, 480, 64, quick ? two : all);
    noise_case(&c, quick ? 1u << TRK_FMT_RGB24 : two);
    ctx_close(&c);
    if (!quick) {
        if (ctx_open(&c, 1920, 1080)) return 1;
        disks_case(&c, 1920, 1080, 128, two);
        disks_case(&c, 1920, 1080, 16, two); /* regions far apart: a small upload */
        ctx_close(&c);
        if (ctx_open(&c, 3840, 2160)) return 1;
        disks_case(&c, 3840, 2160, 128, 1u << TRK_FMT_NV12);
        /* One region of the whole 4K frame with blobs (labelling scratch of
         * a frame, one batch). */
        random_case(&c, 3840, 2160, 3, 2, 203, 1u << TRK_FMT_RGB24, 0);
        ctx_close(&c);
    }
    if (check_failures) {
        fprintf(stderr, "test_cuda_regions: %d checks FAILED over %d cases\n", check_failures,
                cases);
        return 1;
    }
    printf("test_cuda_regions: all %d cases equal (%lld regions, %lld blobs compared)\n", cases,
           regions_checked, blobs_checked);
    return 0;
}
