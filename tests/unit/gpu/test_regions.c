/* The regional form (backend.h, trk_backend_submit_regions) of every CPU
 * backend against an independent oracle.
 *
 * For each region the oracle builds the object's mask inside the region's
 * clipped rectangle with pixel_oracle.h's own addressing and box test, takes
 * the aggregate straight from the mask and the blob list from a flood fill
 * written here (explicit stack, 4 or 8 neighbours, perimeter = mask pixel
 * sides whose neighbour is outside the mask, so the region's border counts as
 * outside), then min_area, trk_blob_before order and K. Every region's result
 * and blob list must equal it, field by field, on cpu-ref (which has no
 * native regional form: backend.c runs the regions one by one) and on the
 * fast backend (native form) with 1, 2 and all threads and the portable
 * kernels. The definition itself is checked too: region j's results equal
 * process() with only object obj's ROI set (on the same backend).
 *
 * Scenes: trk_scene_random (random pixels, flat patches, objects of every
 * space, hue wrap, boxes that match noise), every pixel format with and
 * without row padding, odd sizes, some objects with blobs (K 1..64, 4 and 8
 * connectivity, min_area) and some without. Region lists: inside, touching
 * the borders, partly and wholly outside, inverted (empty), one pixel, larger
 * than the frame, overlapping, the same object many times, exact duplicates,
 * 0 regions and TRK_MAX_REGIONS. Errors: obj out of the set, n out of range,
 * blob indices past the regions.
 */
#include "backend.h"
#include "moments_oracle.h"
#include "../check.h"
#include "pixel_oracle.h"
#include "scene.h"

#include <stdlib.h>
#include <string.h>

#define MAXW  200
#define MAXH  160
#define MAXPX (MAXW * MAXH)

/* --------------------------------------------------------------- oracle */

static uint8_t omask[MAXPX];
static uint32_t ostack[MAXPX];
static struct trk_blob oall[MAXPX];

static int blob_cmp(const void *pa, const void *pb)
{
    const struct trk_blob *a = pa, *b = pb;
    return trk_blob_before(a, b) ? -1 : trk_blob_before(b, a) ? 1 : 0;
}

/* What the oracle saw, so the test can show it is not vacuous. */
static long st_regions, st_found, st_lists, st_blobs, st_cut, st_edge_cut, st_trunc;

/* Region (o, roi) of im: its aggregate in *res, its blob list in out
 * (returns the length). */
static int oracle(const struct trk_image *im, const struct trk_object_def *o, struct trk_roi roi,
                  struct trk_obj_result *res, struct trk_blob *out)
{
    const int w = im->width, h = im->height;
    const int x0 = roi.x0 > 0 ? roi.x0 : 0, y0 = roi.y0 > 0 ? roi.y0 : 0;
    const int x1 = roi.x1 < w - 1 ? roi.x1 : w - 1, y1 = roi.y1 < h - 1 ? roi.y1 : h - 1;
    memset(res, 0, sizeof(*res));
    res->x0 = res->y0 = res->x1 = res->y1 = -1;
    memset(omask, 0, (size_t)w * (size_t)h);
    st_regions++;
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++) {
            if (!matches(im, o, x, y)) continue;
            omask[y * w + x] = 1;
            if (res->mass == 0) res->x0 = res->x1 = x, res->y0 = res->y1 = y;
            res->mass++;
            res->sum_x += (uint64_t)x;
            res->sum_y += (uint64_t)y;
            ORACLE_ADD_MOMENTS(res, x, y);
            res->x0 = x < res->x0 ? x : res->x0;
            res->x1 = x > res->x1 ? x : res->x1;
            res->y0 = y < res->y0 ? y : res->y0;
            res->y1 = y > res->y1 ? y : res->y1;
        }
    st_found += res->mass > 0;
    if (!o->blobs) return 0;
    const int eight = o->connectivity != 4;
    int n = 0;
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++) {
            if (omask[y * w + x] != 1) continue;
            /* Raster order within the rectangle: the first unvisited pixel
             * met is its component's first pixel. */
            struct trk_blob *b = &oall[n++];
            memset(b, 0, sizeof(*b));
            b->first = (uint64_t)y * (uint64_t)w + (uint64_t)x;
            b->x0 = b->x1 = x;
            b->y0 = b->y1 = y;
            size_t top = 0;
            omask[y * w + x] = 2;
            ostack[top++] = (uint32_t)(y * w + x);
            int touches_edge = 0;
            while (top) {
                const uint32_t p = ostack[--top];
                const int px = (int)(p % (uint32_t)w), py = (int)(p / (uint32_t)w);
                b->mass++;
                b->sum_x += (uint64_t)px;
                b->sum_y += (uint64_t)py;
                ORACLE_ADD_MOMENTS(b, px, py);
                b->x0 = px < b->x0 ? px : b->x0;
                b->x1 = px > b->x1 ? px : b->x1;
                b->y0 = py < b->y0 ? py : b->y0;
                b->y1 = py > b->y1 ? py : b->y1;
                for (int dy = -1; dy <= 1; dy++)
                    for (int dx = -1; dx <= 1; dx++) {
                        if (!dx && !dy) continue;
                        const int four = !dx || !dy;
                        const int qx = px + dx, qy = py + dy;
                        const int in = qx >= 0 && qx < w && qy >= 0 && qy < h;
                        const uint8_t m = in ? omask[qy * w + qx] : 0;
                        if (four && !m) b->perimeter++;
                        if (four && in && (qx < x0 || qx > x1 || qy < y0 || qy > y1) &&
                            matches(im, o, qx, qy))
                            touches_edge = 1; /* the region's border cuts it */
                        if (m == 1 && (four || eight)) {
                            omask[qy * w + qx] = 2;
                            ostack[top++] = (uint32_t)(qy * w + qx);
                        }
                    }
            }
            st_edge_cut += touches_edge;
        }
    const uint64_t min_area = o->min_area ? o->min_area : 1;
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (oall[i].mass >= min_area) oall[kept++] = oall[i];
    qsort(oall, (size_t)kept, sizeof(oall[0]), blob_cmp);
    const int k = kept < o->blobs ? kept : o->blobs;
    memcpy(out, oall, (size_t)k * sizeof(*out));
    st_lists++;
    st_blobs += k;
    st_cut += n - kept;
    st_trunc += kept > k;
    return k;
}

/* ----------------------------------------------------------- comparisons */

static int same_result(const struct trk_obj_result *a, const struct trk_obj_result *b)
{
    return a->mass == b->mass && a->sum_x == b->sum_x && a->sum_y == b->sum_y && a->x0 == b->x0 &&
           a->y0 == b->y0 && a->x1 == b->x1 && a->y1 == b->y1 && ORACLE_SAME_MOMENTS(a, b);
}

static int same_blob(const struct trk_blob *a, const struct trk_blob *b)
{
    return a->mass == b->mass && a->sum_x == b->sum_x && a->sum_y == b->sum_y && a->x0 == b->x0 &&
           a->y0 == b->y0 && a->x1 == b->x1 && a->y1 == b->y1 && a->perimeter == b->perimeter &&
           a->first == b->first && ORACLE_SAME_MOMENTS(a, b);
}

/* The first difference between two lists, or -1. */
static int list_diff(const struct trk_blob *a, int na, const struct trk_blob *b, int nb)
{
    for (int i = 0; i < na && i < nb; i++)
        if (!same_blob(&a[i], &b[i])) return i;
    return na == nb ? -1 : (na < nb ? na : nb);
}

/* ------------------------------------------------------------- backends */

/* [0] cpu-ref, then the fast backend: 1, 2, all threads, portable on 2. */
#define NB 5
static struct trk_backend *be[NB];
static const struct {
    int threads;
    const char *variant;
} kinds[NB] = { { 1, NULL }, { 1, NULL }, { 2, NULL }, { 0, NULL }, { 2, "lut-portable" } };

static int rnd(uint64_t *st, int lo, int hi)
{
    return lo + (int)(trk_rand_next(st) % (uint64_t)(hi - lo + 1));
}

static struct trk_region regs[TRK_MAX_REGIONS];
static struct trk_obj_result got[TRK_MAX_REGIONS + 1];
/* Each region's list as the backend gave it (copied: process() below
 * replaces the backend's). */
static struct trk_blob got_bl[TRK_MAX_REGIONS][TRK_MAX_BLOBS];
static int got_n[TRK_MAX_REGIONS];
static long n_cases;

/* Region lists of every kind; objects drawn from 0..nobj-1 (nobj >= 1). */
static void make_regions(uint64_t *st, int w, int h, int nobj, int n, struct trk_region *r)
{
    for (int j = 0; j < n; j++) {
        const int ax = rnd(st, -6, w + 5), bx = rnd(st, -6, w + 5);
        const int ay = rnd(st, -6, h + 5), by = rnd(st, -6, h + 5);
        const int sw = rnd(st, 1, 24), sh = rnd(st, 1, 24);
        r[j].obj = rnd(st, 0, nobj - 1);
        switch (rnd(st, 0, 11)) {
        case 0: r[j].roi = (struct trk_roi){ -50, -70, w + 40, h + 90 }; break; /* > frame */
        case 1: r[j].roi = (struct trk_roi){ ax, ay, ax, ay }; break;           /* 1 pixel */
        case 2: r[j].roi = (struct trk_roi){ w + 1, ay, w + 30, by }; break;    /* outside */
        case 3: r[j].roi = (struct trk_roi){ ax, ay, ax - 3, by }; break;       /* inverted */
        case 4: r[j].roi = (struct trk_roi){ -sw, ay, sw, ay + sh }; break;     /* left edge */
        case 5: r[j].roi = (struct trk_roi){ ax, h - sh, ax + sw, h + sh }; break;
        case 6: /* a copy of an earlier region, or one overlapping it */
            if (j > 0) {
                r[j] = r[rnd(st, 0, j - 1)];
                if (rnd(st, 0, 1)) {
                    r[j].roi.x0 += rnd(st, -4, 4), r[j].roi.x1 += rnd(st, -4, 4);
                    r[j].roi.y0 += rnd(st, -4, 4), r[j].roi.y1 += rnd(st, -4, 4);
                }
                break;
            }
            /* fall through */
        case 7:
        case 8: r[j].roi = (struct trk_roi){ ax, ay, ax + sw, ay + sh }; break; /* a tracker's */
        default:
            r[j].roi = (struct trk_roi){ ax < bx ? ax : bx, ay < by ? ay : by, ax < bx ? bx : ax,
                                         ay < by ? by : ay };
            break;
        }
    }
}

/* One frame, one region list, one backend: every region against the
 * oracle; then (def_checks regions) against process() with that object's
 * ROI alone, the definition. */
static void run_regions(const char *what, int b, const struct trk_image *im,
                        const struct trk_object_def *objs, int nobj, const struct trk_region *r,
                        int n, int def_checks, int use_oracle)
{
    static struct trk_obj_result want_r, def_r[TRK_MAX_OBJECTS];
    static struct trk_blob want[TRK_MAX_BLOBS];
    static struct trk_roi rois[TRK_MAX_OBJECTS];
    struct trk_backend *B = be[b];
    const char *name = trk_backend_name(B);
    memset(got, 0x5a, sizeof(got));
    struct trk_backend_timing t;
    int err = trk_backend_process_regions(B, im, r, n, got, &t);
    CHECKF(err == 0, "%s: %s (backend %d): process_regions(%d): %s", what, name, b, n,
           trk_strerror(err));
    if (err) return;
    CHECKF(got[n].mass == 0x5a5a5a5a5a5a5a5aull, "%s: %s wrote past the %d results", what, name, n);
    CHECKF(t.upload_bytes == 0 && t.total_ms >= 0, "%s: %s timing", what, name);
    const struct trk_blob *l;
    CHECKF(trk_backend_blobs(B, n, &l) == TRK_EINVAL, "%s: %s: blob index n accepted", what, name);
    for (int j = 0; j < n; j++) {
        const int nl = trk_backend_blobs(B, j, &l);
        CHECKF(nl >= 0 && nl <= TRK_MAX_BLOBS, "%s: %s region %d: blobs() = %d", what, name, j, nl);
        got_n[j] = nl < 0 ? 0 : nl;
        if (got_n[j]) memcpy(got_bl[j], l, (size_t)got_n[j] * sizeof(*l));
    }
    for (int j = 0; use_oracle && j < n; j++) {
        const struct trk_object_def *o = &objs[r[j].obj];
        const int nw = oracle(im, o, r[j].roi, &want_r, want);
        CHECKF(same_result(&want_r, &got[j]),
               "%s: %s (backend %d) region %d (obj %d, roi %d,%d,%d,%d): mass %llu want %llu", what,
               name, b, j, r[j].obj, r[j].roi.x0, r[j].roi.y0, r[j].roi.x1, r[j].roi.y1,
               (unsigned long long)got[j].mass, (unsigned long long)want_r.mass);
        const int d = list_diff(want, nw, got_bl[j], got_n[j]);
        CHECKF(d < 0,
               "%s: %s (backend %d) region %d (obj %d K %d conn %d): %d blobs, want %d, "
               "first difference at %d",
               what, name, b, j, r[j].obj, o->blobs, o->connectivity, got_n[j], nw, d);
    }
    /* The definition: only obj has a ROI, every other object an empty one. */
    const struct trk_roi none = { 0, 0, -1, -1 };
    for (int i = 0; i < nobj; i++)
        rois[i] = none;
    for (int c = 0; c < def_checks && n > 0; c++) {
        const int j = c < n ? (c * 7919) % n : 0;
        rois[r[j].obj] = r[j].roi;
        err = trk_backend_process(B, im, rois, def_r, NULL);
        rois[r[j].obj] = none;
        CHECKF(err == 0, "%s: %s: process: %s", what, name, trk_strerror(err));
        const int nd = err ? 0 : trk_backend_blobs(B, r[j].obj, &l);
        CHECKF(same_result(&def_r[r[j].obj], &got[j]) && list_diff(l, nd, got_bl[j], got_n[j]) < 0,
               "%s: %s (backend %d) region %d differs from process() with its ROI alone", what,
               name, b, j);
    }
    n_cases++;
}

/* ------------------------------------------------------------ the cases */

/* Blob settings: off a third of the time, every K kind, both connectivities. */
static void blob_settings(struct trk_object_def *o, uint64_t *st)
{
    static const uint16_t ks[] = { 0, 0, 0, 1, 2, 3, 5, 16, 64 };
    static const uint32_t areas[] = { 0, 0, 1, 2, 4 };
    o->blobs = ks[rnd(st, 0, 8)];
    o->connectivity = rnd(st, 0, 1) ? 4 : (rnd(st, 0, 1) ? 8 : 0);
    o->min_area = areas[rnd(st, 0, 4)];
}

static void set_all(const struct trk_object_def *objs, int n)
{
    for (int b = 0; b < NB; b++) {
        const int err = trk_backend_set_objects(be[b], objs, n);
        CHECKF(err == 0, "set_objects(%d): %s", n, trk_strerror(err));
    }
}

static void test_scenes(void)
{
    /* w, h, objects, regions: odd sizes, small and pool-sized frames,
     * every mask width (more than 64 and 128 objects), up to the most
     * regions. */
    static const int cases[][4] = { { 1, 1, 1, 9 },
                                    { 9, 1, 3, 20 },
                                    { 3, 7, 4, 33 },
                                    { 33, 17, 6, 64 },
                                    { 64, 48, 12, 200 },
                                    { 101, 37, 9, 1 },
                                    { 160, 120, 8, 40 },
                                    { 199, 157, 5, 24 },
                                    { 47, 29, 70, 300 },
                                    { 97, 61, 140, 150 },
                                    { 48, 40, 10, TRK_MAX_REGIONS } };
    const int ncases = (int)(sizeof(cases) / sizeof(cases[0]));
    uint64_t st = 0x5e610;
    for (int ci = 0; ci < ncases; ci++) {
        const int w = cases[ci][0], h = cases[ci][1], m = cases[ci][2], nr = cases[ci][3];
        struct trk_scene sc;
        CHECK(trk_scene_random(w, h, m, (uint64_t)(1000 + ci), &sc) == 0);
        for (int k = 0; k < m; k++)
            blob_settings(&sc.objects[k], &st);
        sc.objects[0].blobs = 8; /* some lists for sure */
        set_all(sc.objects, m);
        make_regions(&st, w, h, m, nr, regs);
        for (int fmt = 0; fmt < TRK_FMT_COUNT; fmt++) {
            /* All formats on the small frames, two or three on the others. */
            if (w * h > 64 * 48 && rnd(&st, 0, 2)) continue;
            const int coef = rnd(&st, 0, 3), pad = rnd(&st, 0, 1) ? 5 : 0;
            uint8_t *buf;
            struct trk_image im;
            int err = trk_image_from_rgb(sc.rgb, w, h, (enum trk_pixfmt)fmt,
                                         (enum trk_matrix)(coef >> 1), coef & 1, pad, &buf, &im);
            CHECK(err == 0);
            if (err) continue;
            char what[128];
            snprintf(what, sizeof(what), "%dx%d %s m=%d n=%d", w, h, trk_pixfmt_name(im.fmt), m,
                     nr);
            for (int b = 0; b < NB; b++) {
                /* cpu-ref runs n whole-frame submits: fewer regions there on
                 * the costly cases, and fewer definition checks. */
                const int n = b == 0 && nr * w * h > 200000 ? 200000 / (w * h) + 1 : nr;
                run_regions(what, b, &im, sc.objects, m, regs, n, b == 0 ? 2 : 8, 1);
            }
            free(buf);
        }
        trk_scene_free(&sc);
    }
}

/* The pre-filter on: the regions see the filtered frame like process()
 * (only the definition is checked: the oracle reads raw pixels). */
static void test_prefilter(void)
{
    uint64_t st = 77;
    struct trk_scene sc;
    CHECK(trk_scene_random(131, 70, 9, 4242, &sc) == 0);
    for (int k = 0; k < 9; k++)
        blob_settings(&sc.objects[k], &st);
    set_all(sc.objects, 9);
    make_regions(&st, 131, 70, 9, 60, regs);
    struct trk_image im = {
        .plane = { sc.rgb }, .pitch = { 131 * 3 }, .width = 131, .height = 70, .fmt = TRK_FMT_RGB24
    };
    for (int b = 0; b < NB; b++) {
        CHECK(trk_backend_set_prefilter(be[b], 1.2) == 0);
        run_regions("prefilter", b, &im, sc.objects, 9, regs, b ? 60 : 6, 6, 0);
        CHECK(trk_backend_set_prefilter(be[b], 0) == 0);
    }
    trk_scene_free(&sc);
}

/* Bad region lists are refused before any work; blob indices follow the
 * last frame's kind (regions, then objects). */
static void test_errors(void)
{
    struct trk_scene sc;
    CHECK(trk_scene_random(40, 30, 4, 9, &sc) == 0);
    sc.objects[1].blobs = 3;
    set_all(sc.objects, 4);
    struct trk_image im = {
        .plane = { sc.rgb }, .pitch = { 120 }, .width = 40, .height = 30, .fmt = TRK_FMT_RGB24
    };
    for (int b = 0; b < NB; b++) {
        struct trk_backend *B = be[b];
        const struct trk_blob *l;
        struct trk_region r[3] = { { 1, { 0, 0, 39, 29 } }, { 2, { 5, 5, 9, 9 } } };
        r[2] = (struct trk_region){ 4, { 0, 0, 3, 3 } }; /* obj == n_objects */
        CHECK(trk_backend_process_regions(B, &im, r, 3, got, NULL) == TRK_EINVAL);
        r[2].obj = -1;
        CHECK(trk_backend_process_regions(B, &im, r, 3, got, NULL) == TRK_EINVAL);
        CHECK(trk_backend_process_regions(B, &im, r, -1, got, NULL) == TRK_EINVAL);
        CHECK(trk_backend_process_regions(B, &im, r, TRK_MAX_REGIONS + 1, got, NULL) == TRK_EINVAL);
        CHECK(trk_backend_process_regions(B, &im, NULL, 2, got, NULL) == TRK_EINVAL);
        CHECK(trk_backend_blobs(B, 0, &l) == TRK_EINVAL); /* nothing waited for */
        /* 0 regions: no results, no lists. */
        CHECK(trk_backend_process_regions(B, &im, r, 0, got, NULL) == 0);
        CHECK(trk_backend_blobs(B, 0, &l) == TRK_EINVAL);
        /* Two regions: index 1 is a region, 2 is not (4 objects though). */
        CHECK(trk_backend_process_regions(B, &im, r, 2, got, NULL) == 0);
        CHECK(trk_backend_blobs(B, 0, &l) >= 1); /* object 1, blobs on */
        CHECK(trk_backend_blobs(B, 1, &l) == 0); /* object 2, blobs off */
        CHECK(trk_backend_blobs(B, 2, &l) == TRK_EINVAL);
        /* A frame of objects again: indices are objects. */
        CHECK(trk_backend_process(B, &im, NULL, got, NULL) == 0);
        CHECK(trk_backend_blobs(B, 3, &l) == 0 && trk_backend_blobs(B, 1, &l) >= 1);
        /* In flight: no second submit, no lists. */
        CHECK(trk_backend_submit_regions(B, &im, r, 2) == 0);
        CHECK(trk_backend_submit_regions(B, &im, r, 2) == TRK_EINVAL);
        CHECK(trk_backend_blobs(B, 0, &l) == TRK_EINVAL);
        CHECK(trk_backend_wait(B, got, NULL) == 0);
        /* Regions on an image larger than the backend was made for. */
        struct trk_image big = im;
        big.width = MAXW + 1, big.pitch[0] = (size_t)big.width * 3;
        uint8_t *px = calloc((size_t)big.width * 30 * 3, 1);
        big.plane[0] = px;
        CHECK(trk_backend_process_regions(B, &big, r, 2, got, NULL) == TRK_ETOOBIG);
        free(px);
    }
    trk_scene_free(&sc);
}

int main(void)
{
    for (int b = 0; b < NB; b++) {
        struct trk_backend_cfg cfg = { .kind = b ? TRK_BACKEND_CPU : TRK_BACKEND_CPU_REF,
                                       .max_width = MAXW,
                                       .max_height = MAXH,
                                       .threads = kinds[b].threads,
                                       .variant = kinds[b].variant };
        const int err = trk_backend_create(&cfg, &be[b]);
        CHECKF(err == 0, "create backend %d: %s", b, trk_strerror(err));
        if (err) return check_exit("test_regions");
    }
    test_errors();
    test_prefilter();
    test_scenes();
    printf("%ld region lists checked; oracle: %ld regions, %ld found, %ld blob lists, %ld blobs, "
           "%ld lists cut at K, %ld components under min_area, %ld cut by a region border\n",
           n_cases, st_regions, st_found, st_lists, st_blobs, st_trunc, st_cut, st_edge_cut);
    /* Not vacuous: many regions found something, lists cut at K, blobs cut
     * by region borders, components dropped by min_area. */
    CHECK(st_found > 2000 && st_blobs > 2000 && st_trunc > 100 && st_edge_cut > 500 &&
          st_cut > 100);
    for (int b = 0; b < NB; b++)
        trk_backend_destroy(&be[b]);
    return check_exit("test_regions");
}
