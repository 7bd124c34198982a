/* CUDA blob lists == CPU reference blob lists, exactly (every field of every
 * listed blob, and the list lengths), on seeded scenes: random scenes with
 * random K / connectivity / min_area, coloured rectangles and disks that
 * touch each other and the borders with masks overlapping between objects,
 * checkerboard noise masks (4-connected: width * height / 2 components; the
 * K best chosen among equal masses by first pixel), grids of equal squares
 * (K truncation with ties), the 1080p 8 colours x 16 disks scene, odd sizes,
 * every pixel format, ROIs, several variants (slot layouts and upload
 * bands), object sets that change, more blob objects than one labelling
 * pass holds, and more than one row's shared mask holds (a wide frame). The
 * aggregate results are compared as well. Needs a GPU: without one it exits
 * 77 (ctest SKIP) and says why.
 *
 *   test_cuda_blobs            the full matrix (4K and the multi-pass case too)
 *   test_cuda_blobs --quick    a smaller one (for compute-sanitizer runs)
 *   test_cuda_blobs --probe    exit 0 with a usable GPU, 77 without
 *
 * A mismatch prints the case, then the first differing object, blob index,
 * field and both values (and the neighbouring blobs of both lists).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "backend.h"
#include "scene.h"

static int cases;
static long long listed; /* blobs compared, over all cases */

/* Variants: the default (grouped slots: ROIs by slot), naive (slot =
 * object), forced bands, and MOCT (one upload band; its scratch grows with
 * frame size times objects, so only on the smaller frames). */
static const char *const variants[] = { "fused", "naive", "fused:bands=3", "moct-h-r4" };
#define NV ((int)(sizeof(variants) / sizeof(variants[0])))

struct ctx {
    struct trk_backend *ref, *be[NV];
    int nv; /* variants in use: the first nv */
    int maxw, maxh;
};

static int ctx_open(struct ctx *c, int maxw, int maxh)
{
    memset(c, 0, sizeof(*c));
    c->nv = maxw * maxh <= 1280 * 720 ? NV : NV - 1;
    c->maxw = maxw;
    c->maxh = maxh;
    struct trk_backend_cfg cfg = { .kind = TRK_BACKEND_CPU_REF,
                                   .max_width = maxw,
                                   .max_height = maxh };
    int err = trk_backend_create(&cfg, &c->ref);
    cfg.kind = TRK_BACKEND_CUDA;
    for (int v = 0; v < c->nv && !err; v++) {
        cfg.variant = variants[v];
        err = trk_backend_create(&cfg, &c->be[v]);
    }
    if (err) fprintf(stderr, "creating backends %dx%d: %s\n", maxw, maxh, trk_strerror(err));
    return err;
}

static void ctx_close(struct ctx *c)
{
    trk_backend_destroy(&c->ref);
    for (int v = 0; v < NV; v++)
        trk_backend_destroy(&c->be[v]);
}

static void print_blob(const char *who, int i, const struct trk_blob *b)
{
    fprintf(stderr,
            "    %s[%d]: mass %llu sum %llu,%llu box %d,%d,%d,%d perimeter %llu first %llu\n", who,
            i, (unsigned long long)b->mass, (unsigned long long)b->sum_x,
            (unsigned long long)b->sum_y, b->x0, b->y0, b->x1, b->y1,
            (unsigned long long)b->perimeter, (unsigned long long)b->first);
}

/* The first field where a and b differ (NULL when equal), both values. */
static const char *blob_diff(const struct trk_blob *a, const struct trk_blob *b, long long *va,
                             long long *vb)
{
#define FIELD(f)                                                                                   \
    if (a->f != b->f) {                                                                            \
        *va = (long long)a->f;                                                                     \
        *vb = (long long)b->f;                                                                     \
        return #f;                                                                                 \
    }
    FIELD(mass)
    FIELD(first)
    FIELD(sum_x)
    FIELD(sum_y)
    FIELD(x0)
    FIELD(y0)
    FIELD(x1)
    FIELD(y1)
    FIELD(perimeter)
    FIELD(sum_xx)
    FIELD(sum_yy)
    FIELD(sum_xy)
#undef FIELD
    return NULL;
}

/* Compares the blob lists of every object of be with ref's; prints the
 * first mismatch. Returns the number of differing objects. */
static int compare_blobs(const char *what, struct trk_backend *ref, struct trk_backend *be, int m,
                         const struct trk_object_def *objs, long long *n_ref)
{
    int bad = 0;
    for (int k = 0; k < m; k++) {
        const struct trk_blob *want, *got;
        const int nw = trk_backend_blobs(ref, k, &want);
        const int ng = trk_backend_blobs(be, k, &got);
        *n_ref += nw > 0 ? nw : 0;
        if (nw < 0 || ng < 0) {
            fprintf(stderr, "MISMATCH %s object %d: trk_backend_blobs ref %d cuda %d\n", what, k,
                    nw, ng);
            bad++;
            continue;
        }
        if (nw > objs[k].blobs) {
            fprintf(stderr, "BROKEN REFERENCE %s object %d: %d blobs listed, K = %d\n", what, k, nw,
                    objs[k].blobs);
            bad++;
            continue;
        }
        int at = -1;
        const char *field = NULL;
        long long va = 0, vb = 0;
        for (int i = 0; i < nw && i < ng && !field; i++)
            if ((field = blob_diff(&want[i], &got[i], &va, &vb))) at = i;
        if (nw == ng && !field) continue;
        if (bad++ < 2) {
            if (field)
                fprintf(stderr,
                        "MISMATCH %s object %d (K %d, %d-connected, min_area %u) blob %d field "
                        "%s: ref %lld cuda %lld (lists: ref %d, cuda %d)\n",
                        what, k, objs[k].blobs, objs[k].connectivity == 4 ? 4 : 8, objs[k].min_area,
                        at, field, va, vb, nw, ng);
            else
                fprintf(stderr,
                        "MISMATCH %s object %d (K %d, %d-connected, min_area %u): list length "
                        "ref %d cuda %d\n",
                        what, k, objs[k].blobs, objs[k].connectivity == 4 ? 4 : 8, objs[k].min_area,
                        nw, ng);
            const int shorter = nw < ng ? nw : ng;
            const int from = at >= 0 ? (at > 0 ? at - 1 : 0) : (shorter > 2 ? shorter - 2 : 0);
            const int i_end = (at >= 0 ? at : shorter) + 2;
            for (int i = from; i < i_end; i++) {
                if (i < nw) print_blob("ref ", i, &want[i]);
                if (i < ng) print_blob("cuda", i, &got[i]);
            }
        }
    }
    return bad;
}

static int compare_results(const char *what, const struct trk_obj_result *want,
                           const struct trk_obj_result *got, int m)
{
    for (int k = 0; k < m; k++) {
        const struct trk_obj_result *a = &want[k], *b = &got[k];
        if (a->mass != b->mass || a->sum_x != b->sum_x || a->sum_y != b->sum_y || a->x0 != b->x0 ||
            a->y0 != b->y0 || a->x1 != b->x1 || a->y1 != b->y1 || a->sum_xx != b->sum_xx ||
            a->sum_yy != b->sum_yy || a->sum_xy != b->sum_xy) {
            fprintf(stderr, "MISMATCH %s object %d aggregate: ref mass %llu cuda mass %llu\n", what,
                    k, (unsigned long long)a->mass, (unsigned long long)b->mass);
            return 1;
        }
    }
    return 0;
}

static void random_rois(struct trk_roi *r, int n, int w, int h, uint64_t seed)
{
    uint64_t st = seed;
    for (int i = 0; i < n; i++) {
        const int kind = (int)(trk_rand_next(&st) % 5);
        int x0 = (int)(trk_rand_next(&st) % (unsigned)(w + 8)) - 4;
        int y0 = (int)(trk_rand_next(&st) % (unsigned)(h + 8)) - 4;
        int x1 = x0 + (int)(trk_rand_next(&st) % (unsigned)(w + 1));
        int y1 = y0 + (int)(trk_rand_next(&st) % (unsigned)(h + 1));
        if (kind == 0) x0 = y0 = -10, x1 = w + 10, y1 = h + 10; /* beyond the frame */
        if (kind == 1) x1 = x0 - 1;                             /* empty */
        r[i] = (struct trk_roi){ x0, y0, x1, y1 };
    }
}

/* One scene (RGB24 picture + objects) in the given formats, with and
 * without ROIs, through cpu-ref and every variant. fmt_mask: bit f = format
 * f. Returns the most reference blobs one case listed (all objects). */
static long long run_scene(struct ctx *c, const char *name, const uint8_t *rgb, int w, int h,
                           const struct trk_object_def *objs, int m, unsigned fmt_mask, int rois,
                           uint64_t seed)
{
    static struct trk_obj_result want[TRK_MAX_OBJECTS], got[TRK_MAX_OBJECTS];
    static struct trk_roi roi[TRK_MAX_OBJECTS];
    long long n_most = 0;
    int err = trk_backend_set_objects(c->ref, objs, m);
    CHECKF(!err, "%s: cpu-ref set_objects: %s", name, trk_strerror(err));
    for (int v = 0; v < c->nv; v++) {
        err = trk_backend_set_objects(c->be[v], objs, m);
        CHECKF(!err, "%s: %s set_objects: %s", name, variants[v], trk_strerror(err));
        if (err) return 0;
    }
    for (int fmt = 0; fmt < TRK_FMT_COUNT; fmt++) {
        if (!(fmt_mask >> fmt & 1)) continue;
        const int pad = (fmt * 7 + (int)seed) % 3 == 0 ? 0 : 1 + (fmt * 13 + (int)seed * 5) % 61;
        const enum trk_matrix mat = (fmt + seed) % 2 ? TRK_MATRIX_BT709 : TRK_MATRIX_BT601;
        const bool full = (fmt + seed / 2) % 2 == 0;
        uint8_t *buf;
        struct trk_image img;
        if ((err =
                 trk_image_from_rgb(rgb, w, h, (enum trk_pixfmt)fmt, mat, full, pad, &buf, &img))) {
            CHECKF(0, "%s: image: %s", name, trk_strerror(err));
            continue;
        }
        for (int use_roi = 0; use_roi <= rois; use_roi++) {
            if (use_roi) random_rois(roi, m, w, h, seed * 31 + (uint64_t)fmt);
            const struct trk_roi *r = use_roi ? roi : NULL;
            if ((err = trk_backend_process(c->ref, &img, r, want, NULL))) {
                CHECKF(0, "%s: cpu-ref: %s", name, trk_strerror(err));
                continue;
            }
            for (int v = 0; v < c->nv; v++) {
                char what[200];
                snprintf(what, sizeof(what), "%s %dx%d m=%d %s pad=%d %s%s%s [%s]", name, w, h, m,
                         trk_pixfmt_name((enum trk_pixfmt)fmt), pad,
                         mat == TRK_MATRIX_BT709 ? "bt709" : "bt601", full ? "-full" : "-limited",
                         use_roi ? " roi" : "", variants[v]);
                struct trk_backend_timing t = { -1, -1, -1, 0, 0 };
                /* The asynchronous form on every other case. */
                if ((v + fmt + use_roi) % 2) {
                    err = trk_backend_submit(c->be[v], &img, r);
                    if (!err) {
                        const struct trk_blob *none;
                        CHECKF(trk_backend_blobs(c->be[v], 0, &none) == TRK_EINVAL,
                               "FAIL %s: blobs readable while the frame is in flight", what);
                        err = trk_backend_wait(c->be[v], got, &t);
                    }
                } else {
                    err = trk_backend_process(c->be[v], &img, r, got, &t);
                }
                cases++;
                CHECKF(!err, "FAIL %s: process: %s", what, trk_strerror(err));
                if (err) continue;
                /* No objects: no GPU work, and kernel_ms is honestly 0. */
                CHECKF(m == 0 ? t.kernel_ms == 0 : t.kernel_ms > 0,
                       "FAIL %s: kernel time %g for %d objects", what, t.kernel_ms, m);
                long long n_ref = 0;
                CHECKF(!compare_blobs(what, c->ref, c->be[v], m, objs, &n_ref),
                       "FAIL %s: blob lists differ from the CPU reference", what);
                CHECKF(!compare_results(what, want, got, m),
                       "FAIL %s: aggregates differ from the CPU reference", what);
                listed += n_ref;
                if (n_ref > n_most) n_most = n_ref;
            }
        }
        free(buf);
    }
    printf("  %-28s %4dx%-4d m=%-3d: largest reference list total %lld blobs\n", name, w, h, m,
           n_most);
    fflush(stdout);
    return n_most;
}

/* ---------------------------------------------------------------- scenes */

static void fill_noise(uint8_t *rgb, int w, int h, uint64_t *st, bool gray)
{
    for (size_t i = 0; i < (size_t)w * (size_t)h; i++) {
        const uint8_t g = (uint8_t)(60 + trk_rand_next(st) % 136);
        for (int c = 0; c < 3; c++)
            rgb[3 * i + (size_t)c] = gray ? g : (uint8_t)trk_rand_next(st);
    }
}

static void paint(uint8_t *rgb, int w, int h, int x, int y, const uint8_t col[3])
{
    if (x < 0 || y < 0 || x >= w || y >= h) return;
    memcpy(rgb + ((size_t)y * (size_t)w + (size_t)x) * 3, col, 3);
}

static void paint_rect(uint8_t *rgb, int w, int h, int x0, int y0, int bw, int bh,
                       const uint8_t col[3])
{
    for (int y = y0; y < y0 + bh; y++)
        for (int x = x0; x < x0 + bw; x++)
            paint(rgb, w, h, x, y, col);
}

static void paint_disk(uint8_t *rgb, int w, int h, int cx, int cy, int r, const uint8_t col[3])
{
    for (int y = cy - r; y <= cy + r; y++)
        for (int x = cx - r; x <= cx + r; x++)
            if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r) paint(rgb, w, h, x, y, col);
}

/* An rgb object: col +- tol per channel. */
static struct trk_object_def rgb_object(const char *name, const uint8_t col[3], int tol, int k,
                                        int conn, uint32_t min_area)
{
    struct trk_object_def o;
    memset(&o, 0, sizeof(o));
    snprintf(o.name, sizeof(o.name), "%s", name);
    o.space = TRK_SPACE_RGB;
    for (int c = 0; c < 3; c++) {
        o.lo[c] = (uint16_t)(col[c] < tol ? 0 : col[c] - tol);
        o.hi[c] = (uint16_t)(col[c] + tol > 255 ? 255 : col[c] + tol);
    }
    o.min_mass = 1;
    o.blobs = (uint16_t)k;
    o.connectivity = (uint8_t)conn;
    o.min_area = min_area;
    return o;
}

static const uint8_t palette[8][3] = { { 240, 30, 30 },  { 30, 220, 40 },  { 40, 60, 230 },
                                       { 235, 225, 30 }, { 230, 40, 220 }, { 30, 220, 225 },
                                       { 250, 140, 20 }, { 130, 30, 200 } };

/* Random scenes of scene.c with blobs on most objects: random K (1..64),
 * connectivity (4, 8 or 0 = 8) and min_area (0..5). */
static void random_case(struct ctx *c, int w, int h, int m, uint64_t seed, unsigned fmts)
{
    struct trk_scene sc;
    if (trk_scene_random(w, h, m, seed, &sc)) {
        CHECKF(0, "random scene %dx%d", w, h);
        return;
    }
    uint64_t st = seed * 977;
    for (int k = 0; k < sc.n_objects; k++) {
        struct trk_object_def *o = &sc.objects[k];
        const int kind = (int)(trk_rand_next(&st) % 6);
        o->blobs = kind == 0 ? 0 : kind == 1 ? 1 : (uint16_t)(1 + trk_rand_next(&st) % 64);
        o->connectivity = (uint8_t)(kind % 3 == 0 ? 0 : kind % 3 == 1 ? 4 : 8);
        o->min_area = (uint32_t)(trk_rand_next(&st) % 6);
    }
    char name[64];
    snprintf(name, sizeof(name), "random seed %llu", (unsigned long long)seed);
    run_scene(c, name, sc.rgb, w, h, sc.objects, sc.n_objects, fmts, 1, seed);
    trk_scene_free(&sc);
}

/* Rectangles and disks of three colours on noise: touching each other and
 * the borders; red and yellow objects whose masks overlap (one object takes
 * both colours); an object matching about half of all noise pixels (many
 * tiny components, K = 64). */
static void rects_case(struct ctx *c, int w, int h, uint64_t seed, unsigned fmts)
{
    uint8_t *rgb = malloc((size_t)w * (size_t)h * 3);
    uint64_t st = seed;
    fill_noise(rgb, w, h, &st, false);
    static const uint8_t col[3][3] = { { 250, 20, 20 }, { 20, 250, 20 }, { 240, 240, 20 } };
    const int nshapes = w * h / 250 + 4;
    for (int i = 0; i < nshapes; i++) {
        const int k = (int)(trk_rand_next(&st) % 3);
        const int x = (int)(trk_rand_next(&st) % (unsigned)(w + 6)) - 3;
        const int y = (int)(trk_rand_next(&st) % (unsigned)(h + 6)) - 3;
        const int a = 1 + (int)(trk_rand_next(&st) % 12), b = 1 + (int)(trk_rand_next(&st) % 9);
        if (i % 2)
            paint_disk(rgb, w, h, x, y, a / 2, col[k]);
        else
            paint_rect(rgb, w, h, x, y, a, b, col[k]);
    }
    struct trk_object_def o[8];
    for (int k = 0; k < 3; k++) {
        char nm[16];
        snprintf(nm, sizeof(nm), "c%d", k);
        o[k] = rgb_object(nm, col[k], 12, 1 + 7 * k, k % 2 ? 4 : 8, 0);
    }
    o[3] = rgb_object("red+yellow", col[0], 12, 16, 8, 0);
    o[3].hi[1] = 255; /* also takes yellow: overlaps objects 0 and 2 */
    o[4] = o[3];
    o[4].connectivity = 4;
    o[4].blobs = 64;
    o[5] = rgb_object("green-min", col[1], 12, 10, 8, 6);
    o[6] = rgb_object("yellow-k1", col[2], 12, 1, 4, 3);
    o[7] = rgb_object("noise", col[0], 0, 64, 8, 0);
    for (int ch = 0; ch < 3; ch++)
        o[7].lo[ch] = 0, o[7].hi[ch] = 255;
    o[7].hi[2] = 127;
    char name[64];
    snprintf(name, sizeof(name), "rects seed %llu", (unsigned long long)seed);
    const long long n = run_scene(c, name, rgb, w, h, o, 8, fmts, 1, seed);
    CHECKF(n > 0, "%s: the reference lists no blob: the scene tests nothing", name);
    free(rgb);
}

/* A checkerboard of red in the frame (4-connected: every red pixel its own
 * blob, all of mass 1, so the list is the first K in raster order;
 * 8-connected: one blob), plus a grid of equal 3x3 green squares one pixel
 * apart (equal masses: ties by first pixel; 8- and 4-connected differ only
 * at the corners, here none touch). */
static void checker_case(struct ctx *c, int w, int h, unsigned fmts)
{
    uint8_t *rgb = calloc((size_t)w * (size_t)h, 3);
    const uint8_t red[3] = { 255, 0, 0 }, green[3] = { 0, 255, 0 };
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            if ((x + y) % 2 == 0 && x < w * 2 / 3) paint(rgb, w, h, x, y, red);
    for (int y = 1; y + 3 <= h; y += 4)
        for (int x = w * 2 / 3 + 1; x + 3 <= w; x += 4)
            paint_rect(rgb, w, h, x, y, 3, 3, green);
    struct trk_object_def o[6];
    o[0] = rgb_object("checker4", red, 10, 64, 4, 0);
    o[1] = rgb_object("checker8", red, 10, 3, 8, 0);
    o[2] = rgb_object("checker4-min2", red, 10, 5, 4, 2); /* nothing qualifies */
    o[3] = rgb_object("squares", green, 10, 7, 8, 0);
    o[4] = rgb_object("squares4-min9", green, 10, 33, 4, 9);
    o[5] = rgb_object("squares-min10", green, 10, 4, 8, 10); /* nothing qualifies */
    char name[64];
    snprintf(name, sizeof(name), "checker");
    /* YUV chroma subsampling would blur a one-pixel checkerboard into a
     * different mask on each side; still exact, so every format runs. */
    const long long n = run_scene(c, name, rgb, w, h, o, 6, fmts, 1, (uint64_t)w);
    CHECKF(n > 0, "%s: the reference lists no blob", name);
    free(rgb);
}

/* The benchmark's shape: gray noise, 8 colours x 16 disks (radius 2 % of
 * the short side) at seeded positions (they may touch or overlap), K = 16. */
static void disks_case(struct ctx *c, int w, int h, uint64_t seed, unsigned fmts, int rois)
{
    uint8_t *rgb = malloc((size_t)w * (size_t)h * 3);
    uint64_t st = seed;
    fill_noise(rgb, w, h, &st, true);
    const int r = (w < h ? w : h) / 50 + 1;
    for (int k = 0; k < 8; k++)
        for (int i = 0; i < 16; i++) {
            const int cx = r + (int)(trk_rand_next(&st) % (unsigned)(w - 2 * r));
            const int cy = r + (int)(trk_rand_next(&st) % (unsigned)(h - 2 * r));
            paint_disk(rgb, w, h, cx, cy, r, palette[k]);
        }
    struct trk_object_def o[8];
    for (int k = 0; k < 8; k++) {
        char nm[16];
        snprintf(nm, sizeof(nm), "disk%d", k);
        o[k] = rgb_object(nm, palette[k], 10, 16, 8, 0);
    }
    char name[64];
    snprintf(name, sizeof(name), "disks 8x16 seed %llu", (unsigned long long)seed);
    const long long n = run_scene(c, name, rgb, w, h, o, 8, fmts, rois, seed);
    CHECKF(n >= 8 * 8, "%s: the reference lists only %lld blobs", name, n);
    free(rgb);
}

/* Object sets that change on one backend (scratch reuse and regrowth, the
 * output layout) and repeated frames (per-frame state), then more blob
 * objects than one labelling pass holds at 1080p (several passes). */
static void sets_case(struct ctx *c, int m_many)
{
    const int w = c->maxw, h = c->maxh;
    struct trk_scene sc;
    if (trk_scene_random(w, h, m_many, 4242, &sc)) {
        CHECKF(0, "random scene %dx%d", w, h);
        return;
    }
    for (int k = 0; k < sc.n_objects; k++) {
        sc.objects[k].blobs = (uint16_t)(1 + k % 64);
        sc.objects[k].connectivity = k % 2 ? 4 : 8;
        sc.objects[k].min_area = (uint32_t)(k % 4);
    }
    const int counts[] = { 3, 1, 0, 9, m_many, 2 };
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        char name[64];
        snprintf(name, sizeof(name), "object set of %d", counts[i]);
        /* Two frames per set: nothing of the first may leak into the second. */
        run_scene(c, name, sc.rgb, w, h, sc.objects, counts[i], 1u << TRK_FMT_NV12, 0, i);
        if (counts[i] < m_many) /* (the big set is slow on cpu-ref) */
            run_scene(c, name, sc.rgb, w, h, sc.objects, counts[i], 1u << TRK_FMT_RGB24, 0, i);
    }
    trk_scene_free(&sc);
}

int main(int argc, char **argv)
{
    const int quick = argc > 1 && !strcmp(argv[1], "--quick");
    char why[256];
    if (!trk_cuda_available(why, sizeof(why))) {
        fprintf(stderr, "\n*** SKIPPED: test_cuda_blobs needs a usable CUDA GPU: %s ***\n\n", why);
        printf("SKIP: %s\n", why);
        return 77;
    }
    if (argc > 1 && !strcmp(argv[1], "--probe")) return 0;
    const unsigned all = (1u << TRK_FMT_COUNT) - 1;
    const unsigned two = 1u << TRK_FMT_RGB24 | 1u << TRK_FMT_NV12;
    const unsigned three = 1u << TRK_FMT_RGB24 | 1u << TRK_FMT_YUYV | 1u << TRK_FMT_I420;
    struct ctx c;

    if (ctx_open(&c, 700, 500)) return 1;
    static const struct {
        int w, h, m;
    } rnd[] = { { 1, 1, 3 },     { 2, 3, 9 },      { 37, 23, 7 },
                { 129, 67, 40 }, { 333, 190, 33 }, { 641, 479, 64 } };
    const int n_rnd = quick ? 4 : (int)(sizeof(rnd) / sizeof(rnd[0]));
    for (int i = 0; i < n_rnd; i++)
        random_case(&c, rnd[i].w, rnd[i].h, rnd[i].m, 11 + (uint64_t)i,
                    quick            ? two
                    : rnd[i].w > 200 ? three
                                     : all);
    rects_case(&c, 97, 61, 5, quick ? two : all);
    if (!quick) rects_case(&c, 700, 500, 6, all);
    checker_case(&c, quick ? 101 : 641, quick ? 77 : 479, quick ? two : all);
    disks_case(&c, 640, 480, 7, quick ? two : all, 1);
    /* A frame smaller than the backend's largest, after a larger one. */
    rects_case(&c, 33, 17, 8, two);
    ctx_close(&c);

    if (!quick) {
        if (ctx_open(&c, 1920, 1080)) return 1;
        disks_case(&c, 1920, 1080, 9, all, 0);
        checker_case(&c, 1920, 1080, 1u << TRK_FMT_RGB24);
        /* 70 blob objects: more than one pass of TRK_BLOB_SCRATCH_BYTES at
         * 1080p (about 21 MB each: 51 per pass). */
        sets_case(&c, 70);
        ctx_close(&c);
        if (ctx_open(&c, 3840, 2160)) return 1;
        disks_case(&c, 3840, 2160, 10, two, 0);
        ctx_close(&c);
    } else {
        if (ctx_open(&c, 320, 240)) return 1;
        sets_case(&c, 12);
        ctx_close(&c);
    }

    /* A wide frame with more blob objects than the mask runs kernel holds
     * in shared memory for one row (TRK_BLOB_ROW_MASK_WORDS / 125 words =
     * 24 objects at 4000 wide): each row is done in chunks of objects. */
    if (ctx_open(&c, 4000, 48)) return 1;
    random_case(&c, 4000, quick ? 16 : 48, quick ? 40 : 64, 61, two);
    ctx_close(&c);

    /* Wider than blob spans hold (16 bits: sides up to 65535) but within the
     * backends' limit (TRK_MAX_SIDE, 65536): refused at set_objects with a
     * clear error, while objects without blobs still work there. Wider
     * still: refused at create. */
    {
        struct trk_backend *b = NULL;
        struct trk_backend_cfg cfg = { .kind = TRK_BACKEND_CUDA,
                                       .max_width = TRK_MAX_SIDE,
                                       .max_height = 2 };
        int err = trk_backend_create(&cfg, &b);
        CHECKF(!err, "creating a %dx2 backend: %s", TRK_MAX_SIDE, trk_strerror(err));
        if (!err) {
            const uint8_t red[3] = { 255, 0, 0 };
            struct trk_object_def o = rgb_object("wide", red, 10, 4, 8, 0);
            err = trk_backend_set_objects(b, &o, 1);
            CHECKF(err == TRK_EINVAL, "blobs on a %d-wide backend: %s", TRK_MAX_SIDE,
                   trk_strerror(err));
            o.blobs = 0;
            err = trk_backend_set_objects(b, &o, 1);
            CHECKF(!err, "no blobs on a %d-wide backend: %s", TRK_MAX_SIDE, trk_strerror(err));
        }
        trk_backend_destroy(&b);
        cfg.max_width = 70000;
        err = trk_backend_create(&cfg, &b);
        CHECKF(err == TRK_EINVAL && !b, "a 70000x2 backend: %s", trk_strerror(err));
    }

    if (check_failures) {
        fprintf(stderr, "test_cuda_blobs: %d of %d cases FAILED\n", check_failures, cases);
        return 1;
    }
    printf("test_cuda_blobs: all %d cases equal to the CPU reference (%lld blobs compared)\n",
           cases, listed);
    return 0;
}
