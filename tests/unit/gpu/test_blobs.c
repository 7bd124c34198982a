/* Blob lists (backend.h, struct trk_blob) of every CPU backend against an
 * independent oracle: the tests that define blob correctness.
 *
 * The oracle is written from the words of backend.h, not from cpu_ref.c's
 * flood fill: each object's mask comes from this file's own pixel addressing
 * and box test (only the colour arithmetic is color.h's, the definition all
 * backends share); its components from a union-find over every pair of
 * neighbouring mask pixels (right, down and, for 8-connectivity, both lower
 * diagonals); stats per root, the perimeter counting each pixel side whose
 * neighbour is outside the mask or the frame; then min_area, a sort by
 * trk_blob_before and truncation to K.
 *
 * cpu-ref must equal the oracle, and the fast backend (1, 2, 3 threads, all
 * cores, and the portable kernels) must equal cpu-ref, field by field, on
 * seeded scenes: shapes touching each other and the frame's borders
 * (diagonal-only contacts tell 4 from 8), grids of equal squares (ties at the
 * K cut), checkerboards and noise (the most components), masks shared
 * between objects, odd sizes, every pixel format with padding and every
 * YCbCr matrix and range, ROIs, more than 64 and 128 objects (every mask
 * width of the fast kernels), blobs on and off mixed. A few hand-made
 * pictures check the oracle itself against numbers worked out by hand.
 */
#include "backend.h"
#include "moments_oracle.h"
#include "../check.h"
#include "color.h"
#include "pixel_oracle.h"
#include "scene.h"

#include <stdlib.h>
#include <string.h>

#define MAXW  256
#define MAXH  256
#define MAXPX (MAXW * MAXH)

/* ------------------------------------------------------------- the oracle */

static uint32_t uf[MAXPX];
static uint8_t omask[MAXPX];
static struct trk_blob oacc[MAXPX];
static struct trk_blob oall[MAXPX];

static uint32_t root_of(uint32_t p)
{
    while (uf[p] != p) {
        uf[p] = uf[uf[p]];
        p = uf[p];
    }
    return p;
}

static void join(uint32_t a, uint32_t b)
{
    a = root_of(a);
    b = root_of(b);
    if (a != b) uf[a] = b; /* any link will do: first is measured, not inherited */
}

static int blob_cmp(const void *pa, const void *pb)
{
    const struct trk_blob *a = pa, *b = pb;
    return trk_blob_before(a, b) ? -1 : trk_blob_before(b, a) ? 1 : 0;
}

/* What the oracle saw, for the checks that the scenes are not vacuous. */
static long st_blobs, st_trunc, st_tie_cut, st_dropped, st_lists;

/* Object o's blob list on im (rois: NULL or the raw per-object array, i its
 * index): returns the length and fills out (TRK_MAX_BLOBS entries). */
static int oracle(const struct trk_image *im, const struct trk_object_def *o,
                  const struct trk_roi *rois, int i, struct trk_blob *out)
{
    const int w = im->width, h = im->height;
    int rx0 = 0, ry0 = 0, rx1 = w - 1, ry1 = h - 1;
    if (rois) {
        rx0 = rois[i].x0 > 0 ? rois[i].x0 : 0;
        ry0 = rois[i].y0 > 0 ? rois[i].y0 : 0;
        rx1 = rois[i].x1 < w - 1 ? rois[i].x1 : w - 1;
        ry1 = rois[i].y1 < h - 1 ? rois[i].y1 : h - 1;
    }
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const uint32_t p = (uint32_t)(y * w + x);
            omask[p] = x >= rx0 && x <= rx1 && y >= ry0 && y <= ry1 && matches(im, o, x, y);
            uf[p] = p;
        }
    /* Every neighbouring pair once: right, down, and the lower diagonals. */
    const int eight = o->connectivity != 4;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const uint32_t p = (uint32_t)(y * w + x);
            if (!omask[p]) continue;
            if (x + 1 < w && omask[p + 1]) join(p, p + 1);
            if (y + 1 < h && omask[p + (uint32_t)w]) join(p, p + (uint32_t)w);
            if (eight && y + 1 < h && x + 1 < w && omask[p + (uint32_t)w + 1])
                join(p, p + (uint32_t)w + 1);
            if (eight && y + 1 < h && x > 0 && omask[p + (uint32_t)w - 1])
                join(p, p + (uint32_t)w - 1);
        }
    /* Stats per root; the first pixel met in raster order is the blob's first. */
    int nroots = 0;
    for (uint32_t p = 0; p < (uint32_t)(w * h); p++)
        oacc[p].mass = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const uint32_t p = (uint32_t)(y * w + x);
            if (!omask[p]) continue;
            struct trk_blob *b = &oacc[root_of(p)];
            if (b->mass == 0) {
                memset(b, 0, sizeof(*b));
                b->first = p;
                b->x0 = b->x1 = x;
                b->y0 = b->y1 = y;
                nroots++;
            }
            b->mass++;
            b->sum_x += (uint64_t)x;
            b->sum_y += (uint64_t)y;
            ORACLE_ADD_MOMENTS(b, x, y);
            b->x0 = x < b->x0 ? x : b->x0;
            b->x1 = x > b->x1 ? x : b->x1;
            b->y0 = y < b->y0 ? y : b->y0;
            b->y1 = y > b->y1 ? y : b->y1;
            const int out4 = (x == 0 || !omask[p - 1]) + (x == w - 1 || !omask[p + 1]) +
                             (y == 0 || !omask[p - (uint32_t)w]) +
                             (y == h - 1 || !omask[p + (uint32_t)w]);
            b->perimeter += (uint64_t)out4;
        }
    const uint64_t min_area = o->min_area ? o->min_area : 1;
    int n = 0;
    for (uint32_t p = 0; p < (uint32_t)(w * h); p++)
        if (omask[p] && root_of(p) == p && oacc[p].mass >= min_area) oall[n++] = oacc[p];
    qsort(oall, (size_t)n, sizeof(oall[0]), blob_cmp);
    const int k = n < o->blobs ? n : o->blobs;
    memcpy(out, oall, (size_t)k * sizeof(*out));
    if (o->blobs) {
        st_lists++;
        st_blobs += k;
        st_dropped += nroots - n;
        if (n > k) st_trunc++;
        if (n > k && k > 0 && oall[k].mass == oall[k - 1].mass) st_tie_cut++;
    }
    return k;
}

/* ----------------------------------------------------------- comparisons */

static void print_blob(const char *who, int j, const struct trk_blob *b)
{
    fprintf(stderr,
            "    %s[%d]: mass %llu sum %llu,%llu bbox %d,%d,%d,%d perimeter %llu first %llu\n", who,
            j, (unsigned long long)b->mass, (unsigned long long)b->sum_x,
            (unsigned long long)b->sum_y, b->x0, b->y0, b->x1, b->y1,
            (unsigned long long)b->perimeter, (unsigned long long)b->first);
}

/* Field by field: the first blob that differs is printed with both lists'
 * lengths. */
static void same_list(const char *what, const char *who, int obj, const struct trk_blob *want,
                      int nw, const struct trk_blob *got, int ng)
{
    int bad = nw != ng ? 0 : -1;
    for (int j = 0; bad < 0 && j < nw; j++) {
        const struct trk_blob *a = &want[j], *b = &got[j];
        if (a->mass != b->mass || a->sum_x != b->sum_x || a->sum_y != b->sum_y || a->x0 != b->x0 ||
            a->y0 != b->y0 || a->x1 != b->x1 || a->y1 != b->y1 || a->perimeter != b->perimeter ||
            a->first != b->first || !ORACLE_SAME_MOMENTS(a, b))
            bad = j;
    }
    CHECKF(bad < 0, "%s: %s object %d: %d blobs, want %d; first difference at %d", what, who, obj,
           ng, nw, bad);
    if (bad >= 0 && check_failures <= 50) {
        if (bad < nw) print_blob("want", bad, &want[bad]);
        if (bad < ng && got) print_blob("got ", bad, &got[bad]);
    }
}

/* The backends every case runs: [0] cpu-ref, then the fast ones. */
#define NB 6
static struct trk_backend *be[NB];
static long n_cases;

static void set_all(const struct trk_object_def *objs, int n)
{
    for (int b = 0; b < NB; b++) {
        int err = trk_backend_set_objects(be[b], objs, n);
        CHECKF(err == 0, "set_objects(%d) on %s: %s", n, trk_backend_name(be[b]),
               trk_strerror(err));
    }
}

/* One frame through every backend: cpu-ref == oracle, each fast == cpu-ref
 * (the aggregates too, since the blob kernels flush runs their own way). */
static void run_case(const char *scene, const struct trk_image *im,
                     const struct trk_object_def *objs, int n, const struct trk_roi *rois)
{
    static struct trk_obj_result want_r[TRK_MAX_OBJECTS], got_r[TRK_MAX_OBJECTS];
    static struct trk_blob want[TRK_MAX_BLOBS];
    char what[160];
    snprintf(what, sizeof(what), "%s %dx%d %s matrix %d full %d rois %d", scene, im->width,
             im->height, trk_pixfmt_name(im->fmt), (int)im->matrix, (int)im->full_range,
             rois != NULL);
    int err = trk_backend_process(be[0], im, rois, want_r, NULL);
    CHECKF(err == 0, "%s: cpu-ref: %s", what, trk_strerror(err));
    for (int i = 0; i < n; i++) {
        const struct trk_blob *got;
        const int nw = oracle(im, &objs[i], rois, i, want);
        const int ng = trk_backend_blobs(be[0], i, &got);
        same_list(what, "cpu-ref vs oracle", i, want, nw, got, ng);
    }
    for (int b = 1; b < NB; b++) {
        memset(got_r, 0x5a, sizeof(got_r));
        err = trk_backend_process(be[b], im, rois, got_r, NULL);
        CHECKF(err == 0, "%s: %s: %s", what, trk_backend_name(be[b]), trk_strerror(err));
        CHECKF(n == 0 || memcmp(want_r, got_r, (size_t)n * sizeof(got_r[0])) == 0,
               "%s: %s aggregates differ from cpu-ref", what, trk_backend_name(be[b]));
        for (int i = 0; i < n; i++) {
            const struct trk_blob *r, *g;
            const int nr = trk_backend_blobs(be[0], i, &r);
            const int ng = trk_backend_blobs(be[b], i, &g);
            char who[64];
            snprintf(who, sizeof(who), "%s (backend %d) vs cpu-ref", trk_backend_name(be[b]), b);
            same_list(what, who, i, r, nr, g, ng);
        }
    }
    n_cases++;
}

/* ----------------------------------------------------------------- scenes */

static int rnd(uint64_t *st, int lo, int hi)
{
    return lo + (int)(trk_rand_next(st) % (uint64_t)(hi - lo + 1));
}

static const uint8_t palette[5][3] = {
    { 220, 30, 30 }, { 30, 200, 40 }, { 40, 50, 220 }, { 210, 40, 200 }, { 220, 210, 30 }
};

static void paint(uint8_t *rgb, int w, int h, int x, int y, int c, uint64_t *st)
{
    if (x < 0 || y < 0 || x >= w || y >= h) return;
    uint8_t *p = rgb + ((size_t)y * (size_t)w + (size_t)x) * 3;
    for (int ch = 0; ch < 3; ch++)
        p[ch] = (uint8_t)(palette[c][ch] + rnd(st, -3, 3));
}

/* Gray noise (R = G = B, which no palette box matches). */
static void background(uint8_t *rgb, int w, int h, uint64_t *st)
{
    for (int i = 0; i < w * h; i++)
        rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = (uint8_t)rnd(st, 60, 195);
}

/* Many small shapes in the palette's colours, overlapping each other and
 * the borders: rectangles, disks, 8-step random walks, diagonal staircases
 * (connected only by corners), single specks and checkered patches. */
static void scene_shapes(uint8_t *rgb, int w, int h, uint64_t *st)
{
    background(rgb, w, h, st);
    const int nshapes = 1 + w * h / 60;
    for (int s = 0; s < nshapes; s++) {
        const int c = rnd(st, 0, 4), kind = rnd(st, 0, 5);
        int x = rnd(st, -3, w + 2), y = rnd(st, -3, h + 2);
        switch (kind) {
        case 0: {
            const int rw = rnd(st, 1, 10), rh = rnd(st, 1, 10);
            for (int yy = y; yy < y + rh; yy++)
                for (int xx = x; xx < x + rw; xx++)
                    paint(rgb, w, h, xx, yy, c, st);
            break;
        }
        case 1: {
            const int r = rnd(st, 1, 7);
            for (int yy = -r; yy <= r; yy++)
                for (int xx = -r; xx <= r; xx++)
                    if (xx * xx + yy * yy <= r * r) paint(rgb, w, h, x + xx, y + yy, c, st);
            break;
        }
        case 2:
            for (int k = rnd(st, 3, 40); k > 0; k--) {
                paint(rgb, w, h, x, y, c, st);
                x += rnd(st, -1, 1), y += rnd(st, -1, 1);
            }
            break;
        case 3: {
            const int dx = rnd(st, 0, 1) ? 1 : -1;
            for (int k = rnd(st, 2, 9); k > 0; k--, x += dx, y++)
                paint(rgb, w, h, x, y, c, st);
            break;
        }
        case 4: paint(rgb, w, h, x, y, c, st); break;
        default: {
            const int rw = rnd(st, 2, 12), rh = rnd(st, 2, 12);
            for (int yy = y; yy < y + rh; yy++)
                for (int xx = x; xx < x + rw; xx++)
                    if ((xx + yy) % 2 == 0) paint(rgb, w, h, xx, yy, c, st);
            break;
        }
        }
    }
}

/* Equal squares on a grid (ties everywhere; those cut by a border are
 * smaller), a few in the other colours. */
static void scene_grid(uint8_t *rgb, int w, int h, uint64_t *st)
{
    background(rgb, w, h, st);
    const int side = rnd(st, 1, 3), gap = rnd(st, 1, 2), off = rnd(st, -2, 0);
    for (int y = off; y < h; y += side + gap)
        for (int x = off; x < w; x += side + gap) {
            const int c = rnd(st, 0, 5) == 0 ? rnd(st, 1, 4) : 0;
            for (int yy = y; yy < y + side; yy++)
                for (int xx = x; xx < x + side; xx++)
                    paint(rgb, w, h, xx, yy, c, st);
        }
}

/* A checkerboard (4-connected: one blob per pixel; 8-connected: one), or
 * noise: each pixel red or blue with probability 1/2 each... or gray. */
static void scene_checker(uint8_t *rgb, int w, int h, uint64_t *st, int noise)
{
    background(rgb, w, h, st);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            if (noise) {
                const int r = rnd(st, 0, 3);
                if (r < 2) paint(rgb, w, h, x, y, r == 0 ? 0 : 2, st);
            } else if ((x + y) % 2 == 0) {
                paint(rgb, w, h, x, y, 0, st);
            }
        }
}

/* The blob settings of one object: off a quarter of the time, K small
 * (truncation) or large, every connectivity spelling, min_area 0..6. */
static void blob_settings(struct trk_object_def *o, uint64_t *st)
{
    static const uint16_t ks[] = { 0, 0, 1, 2, 3, 4, 7, 16, 64 };
    static const uint8_t conns[] = { 0, 4, 8, 4 };
    static const uint32_t areas[] = { 0, 0, 1, 1, 2, 3, 6 };
    o->blobs = ks[rnd(st, 0, (int)(sizeof(ks) / sizeof(ks[0])) - 1)];
    o->connectivity = conns[rnd(st, 0, 3)];
    o->min_area = areas[rnd(st, 0, (int)(sizeof(areas) / sizeof(areas[0])) - 1)];
}

static uint16_t clampu(int v, int hi)
{
    return (uint16_t)(v < 0 ? 0 : v > hi ? hi : v);
}

/* The palette's objects: one rgb box per colour, a box over red and
 * magenta (its mask overlaps both of theirs), an hsv box with hue wrap over
 * the same two, and a ycbcr box around green. */
static int palette_objects(struct trk_object_def *o, uint64_t *st)
{
    int n = 0;
    for (int c = 0; c < 5; c++, n++) {
        memset(&o[n], 0, sizeof(o[n]));
        snprintf(o[n].name, sizeof(o[n].name), "c%d", c);
        o[n].space = TRK_SPACE_RGB;
        for (int ch = 0; ch < 3; ch++) {
            o[n].lo[ch] = clampu(palette[c][ch] - 12, 255);
            o[n].hi[ch] = clampu(palette[c][ch] + 12, 255);
        }
    }
    memset(&o[n], 0, 3 * sizeof(o[n]));
    o[n].space = TRK_SPACE_RGB;
    o[n].lo[0] = 195, o[n].hi[0] = 235, o[n].lo[1] = 15, o[n].hi[1] = 55;
    o[n].lo[2] = 15, o[n].hi[2] = 235;
    n++;
    o[n].space = TRK_SPACE_HSV;
    o[n].lo[0] = 280, o[n].hi[0] = 20, o[n].lo[1] = 120, o[n].hi[1] = 255;
    o[n].lo[2] = 150, o[n].hi[2] = 255;
    n++;
    uint8_t y, cb, cr;
    trk_rgb_to_ycbcr(&trk_rgb2ycc_coefs[trk_coef_index(TRK_MATRIX_BT601, true)], palette[1][0],
                     palette[1][1], palette[1][2], &y, &cb, &cr);
    o[n].space = TRK_SPACE_YCBCR;
    o[n].lo[0] = clampu(y - 30, 255), o[n].hi[0] = clampu(y + 30, 255);
    o[n].lo[1] = clampu(cb - 20, 255), o[n].hi[1] = clampu(cb + 20, 255);
    o[n].lo[2] = clampu(cr - 20, 255), o[n].hi[2] = clampu(cr + 20, 255);
    n++;
    for (int i = 0; i < n; i++) {
        o[i].min_mass = 1;
        if (i >= 5) snprintf(o[i].name, sizeof(o[i].name), "mix%d", i);
        blob_settings(&o[i], st);
    }
    /* At least one object lists blobs, with each connectivity seen. */
    o[0].blobs = o[0].blobs ? o[0].blobs : 5;
    return n;
}

/* ROIs of every kind: inside, partly or wholly outside, inverted, 1 pixel,
 * the whole frame. */
static void make_rois(uint64_t *st, int w, int h, int n, struct trk_roi *rois)
{
    for (int i = 0; i < n; i++) {
        const int ax = rnd(st, -4, w + 3), bx = rnd(st, -4, w + 3);
        const int ay = rnd(st, -4, h + 3), by = rnd(st, -4, h + 3);
        switch (rnd(st, 0, 6)) {
        case 0: rois[i] = (struct trk_roi){ -100, -100, 100000, 100000 }; break;
        case 1: rois[i] = (struct trk_roi){ ax, ay, ax, ay }; break;
        case 2: rois[i] = (struct trk_roi){ w + 1, 0, w + 9, h - 1 }; break;
        case 3: rois[i] = (struct trk_roi){ 5, 5, 2, h }; break;
        default:
            rois[i] = (struct trk_roi){ ax < bx ? ax : bx, ay < by ? ay : by, ax < bx ? bx : ax,
                                        ay < by ? by : ay };
            break;
        }
    }
}

/* One picture through the formats (all of them, or a cheaper rotation of
 * two), with and without ROIs. */
static void run_picture(const char *scene, const uint8_t *rgb, int w, int h,
                        const struct trk_object_def *objs, int n, uint64_t *st, int all_formats)
{
    static struct trk_roi rois[TRK_MAX_OBJECTS];
    set_all(objs, n);
    for (int fmt = 0; fmt < TRK_FMT_COUNT; fmt++) {
        if (!all_formats && rnd(st, 0, 2) != 0) continue;
        const int coef = rnd(st, 0, 3), pad = rnd(st, 0, 1) ? 3 : 0;
        uint8_t *buf;
        struct trk_image im;
        int err = trk_image_from_rgb(rgb, w, h, (enum trk_pixfmt)fmt, (enum trk_matrix)(coef >> 1),
                                     coef & 1, pad, &buf, &im);
        CHECK(err == 0);
        if (err) continue;
        run_case(scene, &im, objs, n, NULL);
        make_rois(st, w, h, n, rois);
        run_case(scene, &im, objs, n, rois);
        free(buf);
    }
}

/* The objects of one space only (each space has its own fast kernels:
 * packed RGB read in place, rgb or ycbcr straight from YUV samples). */
static void run_one_space(const char *scene, const uint8_t *rgb, int w, int h,
                          const struct trk_object_def *objs, int n, enum trk_space sp, uint64_t *st)
{
    static struct trk_object_def sub[TRK_MAX_OBJECTS];
    int m = 0;
    for (int i = 0; i < n; i++)
        if (objs[i].space == sp) {
            sub[m] = objs[i];
            sub[m].blobs = sub[m].blobs ? sub[m].blobs : 16;
            m++;
        }
    run_picture(scene, rgb, w, h, sub, m, st, 1);
}

/* --------------------------------------------------------- hand-made cases */

/* Tiny pictures whose lists are worked out by hand: they check the oracle
 * (and through it cpu-ref) against numbers that need no code. */
static void test_known(void)
{
    /* 6 x 4, R = red, . = gray:
     *   R R . . . R
     *   R R . . R .
     *   . . R . . .
     *   . . . . . R      */
    static const char *pic[] = { "RR...R", "RR..R.", "..R...", ".....R" };
    uint8_t rgb[6 * 4 * 3];
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 6; x++) {
            uint8_t *p = rgb + (y * 6 + x) * 3;
            if (pic[y][x] == 'R')
                p[0] = 220, p[1] = 30, p[2] = 30;
            else
                p[0] = p[1] = p[2] = 128;
        }
    struct trk_image im = {
        .plane = { rgb }, .pitch = { 18 }, .width = 6, .height = 4, .fmt = TRK_FMT_RGB24
    };
    struct trk_object_def o = { .name = "red",
                                .space = TRK_SPACE_RGB,
                                .lo = { 200, 0, 0 },
                                .hi = { 255, 60, 60 },
                                .min_mass = 1,
                                .blobs = 64 };
    struct trk_blob list[TRK_MAX_BLOBS];
    /* 8-connected: the 2x2 square with the pixel at (2,2) (mass 5,
     * perimeter 8 + 4), and (5,0)-(4,1) (mass 2, perimeter 8); (5,3) alone. */
    o.connectivity = 8;
    int n = oracle(&im, &o, NULL, 0, list);
    CHECK(n == 3);
    if (n == 3) {
        CHECK(list[0].mass == 5 && list[0].perimeter == 12 && list[0].first == 0);
        CHECK(list[0].sum_x == 0 + 1 + 0 + 1 + 2 && list[0].sum_y == 0 + 0 + 1 + 1 + 2);
        CHECK(list[0].x0 == 0 && list[0].y0 == 0 && list[0].x1 == 2 && list[0].y1 == 2);
        CHECK(list[1].mass == 2 && list[1].perimeter == 8 && list[1].first == 5);
        CHECK(list[1].x0 == 4 && list[1].y0 == 0 && list[1].x1 == 5 && list[1].y1 == 1);
        CHECK(list[2].mass == 1 && list[2].perimeter == 4 && list[2].first == 3 * 6 + 5);
    }
    /* 4-connected: the square (perimeter 8), then four lone pixels in
     * raster order of first pixel: (5,0), (4,1), (2,2), (5,3). */
    o.connectivity = 4;
    n = oracle(&im, &o, NULL, 0, list);
    CHECK(n == 5);
    if (n == 5) {
        CHECK(list[0].mass == 4 && list[0].perimeter == 8);
        CHECK(list[1].first == 5 && list[2].first == 10 && list[3].first == 14 &&
              list[4].first == 23);
        for (int i = 1; i < 5; i++)
            CHECK(list[i].mass == 1 && list[i].perimeter == 4);
    }
    /* K = 2 with min_area 2 at 4: the square, nothing else big enough. */
    o.blobs = 2, o.min_area = 2;
    CHECK(oracle(&im, &o, NULL, 0, list) == 1);
    /* A ROI over the right half (x 3..5): at 8 the pair, then (5,3). */
    o.blobs = 64, o.min_area = 0, o.connectivity = 8;
    struct trk_roi roi = { 3, 0, 5, 3 };
    n = oracle(&im, &o, &roi, 0, list);
    CHECK(n == 2 && list[0].mass == 2 && list[1].mass == 1);

    /* The same through cpu-ref and the fast backends. */
    set_all(&o, 1);
    run_case("known", &im, &o, 1, NULL);
    run_case("known", &im, &o, 1, &roi);
}

/* --------------------------------------------------------------- the errors */

/* trk_backend_blobs refuses what has no list: before any wait, an object out
 * of range, a frame in flight, after set_objects; blobs off lists nothing. */
static void test_errors(void)
{
    static uint8_t rgb[40 * 20 * 3];
    uint64_t st = 5;
    scene_shapes(rgb, 40, 20, &st);
    for (int y = 3; y < 8; y++) /* a red and a blue blob for sure */
        for (int x = 3; x < 8; x++) {
            paint(rgb, 40, 20, x, y, 0, &st);
            paint(rgb, 40, 20, x + 20, y, 2, &st);
        }
    struct trk_image im = {
        .plane = { rgb }, .pitch = { 120 }, .width = 40, .height = 20, .fmt = TRK_FMT_RGB24
    };
    struct trk_object_def objs[8];
    const int n = palette_objects(objs, &st);
    objs[1].blobs = 0;
    objs[2].blobs = 64;
    objs[0].min_area = objs[2].min_area = 0;
    for (int b = 0; b < NB; b++) {
        struct trk_backend *B = be[b];
        const struct trk_blob *l = (const struct trk_blob *)objs;
        struct trk_obj_result res[8];
        CHECK(trk_backend_set_objects(B, objs, n) == 0);
        CHECK(trk_backend_blobs(B, 0, &l) == TRK_EINVAL && l == NULL); /* nothing waited */
        CHECK(trk_backend_submit(B, &im, NULL) == 0);
        CHECK(trk_backend_blobs(B, 0, &l) == TRK_EINVAL); /* in flight */
        CHECK(trk_backend_wait(B, res, NULL) == 0);
        CHECK(trk_backend_blobs(B, 0, &l) >= 1 && l != NULL);
        CHECK(trk_backend_blobs(B, 2, &l) >= 1);
        CHECK(trk_backend_blobs(B, 1, &l) == 0);
        CHECK(trk_backend_blobs(B, -1, &l) == TRK_EINVAL);
        CHECK(trk_backend_blobs(B, n, &l) == TRK_EINVAL);
        CHECK(trk_backend_set_objects(B, objs, n) == 0);
        CHECK(trk_backend_blobs(B, 0, &l) == TRK_EINVAL); /* lists went with the objects */
        /* Bad blob settings are refused. */
        struct trk_object_def bad = objs[0];
        bad.blobs = TRK_MAX_BLOBS + 1;
        CHECK(trk_backend_set_objects(B, &bad, 1) == TRK_EINVAL);
        bad.blobs = 3, bad.connectivity = 6;
        CHECK(trk_backend_set_objects(B, &bad, 1) == TRK_EINVAL);
    }
}

/* ------------------------------------------------------------------- main */

int main(void)
{
    static const struct {
        int threads;
        const char *variant;
    } kinds[NB] = { { 1, NULL }, { 1, NULL }, { 2, NULL },
                    { 3, NULL }, { 0, NULL }, { 3, "lut-portable" } };
    for (int b = 0; b < NB; b++) {
        struct trk_backend_cfg cfg = { .kind = b ? TRK_BACKEND_CPU : TRK_BACKEND_CPU_REF,
                                       .max_width = MAXW,
                                       .max_height = MAXH,
                                       .threads = kinds[b].threads,
                                       .variant = kinds[b].variant };
        int err = trk_backend_create(&cfg, &be[b]);
        CHECKF(err == 0, "create backend %d: %s", b, trk_strerror(err));
        if (err) return check_exit("test_blobs");
    }
    test_known();
    test_errors();

    /* Odd and small sizes, and ones large enough (>= 8192 pixels, several
     * 16-row strips) to wake the fast backend's thread pool. */
    static const int sizes[][2] = { { 1, 1 },    { 1, 9 },     { 9, 1 },    { 2, 2 },   { 3, 5 },
                                    { 33, 17 },  { 17, 33 },   { 64, 48 },  { 101, 7 }, { 7, 101 },
                                    { 131, 97 }, { 160, 120 }, { 97, 203 }, { 256, 40 } };
    const int nsizes = (int)(sizeof(sizes) / sizeof(sizes[0]));
    static uint8_t rgb[MAXPX * 3];
    static struct trk_object_def objs[TRK_MAX_OBJECTS];
    uint64_t st = 0xb10b5;
    for (int si = 0; si < nsizes; si++) {
        const int w = sizes[si][0], h = sizes[si][1];
        const int small = w * h <= 64 * 48;
        int n;
        scene_shapes(rgb, w, h, &st);
        n = palette_objects(objs, &st);
        run_picture("shapes", rgb, w, h, objs, n, &st, small || si == nsizes - 2);
        run_one_space("shapes, one space", rgb, w, h, objs, n, (enum trk_space)(si % 3), &st);
        scene_grid(rgb, w, h, &st);
        n = palette_objects(objs, &st);
        run_picture("grid", rgb, w, h, objs, n, &st, 0);
        scene_checker(rgb, w, h, &st, si & 1);
        n = palette_objects(objs, &st);
        run_picture(si & 1 ? "noise" : "checker", rgb, w, h, objs, n, &st, 0);
    }
    /* Random scenes and objects of every space (hue wrap, overlapping
     * boxes), with more than 64 and 128 objects: every mask width. */
    static const int many[][3] = {
        { 64, 48, 9 }, { 131, 70, 70 }, { 47, 29, 140 }, { 97, 90, 256 }
    };
    for (int i = 0; i < 4; i++) {
        static struct trk_scene sc;
        CHECK(trk_scene_random(many[i][0], many[i][1], many[i][2], (uint64_t)(77 + i), &sc) == 0);
        for (int k = 0; k < sc.n_objects; k++) {
            blob_settings(&sc.objects[k], &st);
            if (i == 3 && k % 4) sc.objects[k].blobs = 0; /* cpu-ref is slow */
        }
        run_picture("random", sc.rgb, sc.width, sc.height, sc.objects, sc.n_objects, &st, i == 0);
        trk_scene_free(&sc);
    }

    /* Not vacuous: many blobs compared, lists cut at K (some at a tie),
     * components dropped by min_area. */
    printf("%ld frames, %ld blob lists, %ld blobs; %ld cut at K (%ld at a tie), %ld small "
           "components dropped\n",
           n_cases, st_lists, st_blobs, st_trunc, st_tie_cut, st_dropped);
    CHECK(st_blobs > 5000 && st_trunc > 100 && st_tie_cut > 20 && st_dropped > 1000);
    for (int b = 0; b < NB; b++)
        trk_backend_destroy(&be[b]);
    return check_exit("test_blobs");
}
