/* Seeded test frames and settings for Canny (gpu/canny.h), shared by the
 * CPU unit test (test_canny.c) and the GPU test (tests/gpu/test_cuda_canny.c)
 * so that both compare their twin with the definition on the same cases:
 * every pixel format, odd sizes from 1x1 up, padded pitches, flat frames,
 * noise and blocky scenes with edges, and every threshold edge case. */
#ifndef TRK_TEST_CANNY_CASES_H
#define TRK_TEST_CANNY_CASES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "canny.h"
#include "scene.h"

enum canny_fill {
    CANNY_FLAT,   /* every byte one value: no edges at all */
    CANNY_NOISE,  /* every byte random */
    CANNY_BLOCKS, /* constant cells of random size with a little noise: real edges */
    CANNY_FILLS
};
static const char *const canny_fill_name[CANNY_FILLS] = { "flat", "noise", "blocks" };

/* Byte i of row r of plane p for fill f. */
static uint8_t canny_byte(enum canny_fill f, uint64_t seed, int p, int r, size_t i, uint64_t *st)
{
    if (f == CANNY_FLAT) return (uint8_t)(seed * 37);
    if (f == CANNY_NOISE) return (uint8_t)trk_rand_next(st);
    const int cw = 3 + (int)(seed % 7), ch = 2 + (int)(seed % 5);
    uint64_t h = seed ^ ((uint64_t)p << 56) ^ ((uint64_t)(r / ch) << 28) ^ (i / 3 / (size_t)cw);
    h = trk_rand_next(&h);
    return (uint8_t)((h & 0xff) ^ (trk_rand_next(st) & 7));
}

/* A w x h frame of fmt, rows pad bytes longer than needed (the padding is
 * noise: it must not matter). Free *buf. */
static void canny_image(enum trk_pixfmt fmt, int w, int h, int pad, enum canny_fill f,
                        uint64_t seed, uint8_t **buf, struct trk_image *img)
{
    struct trk_plane_layout L;
    CHECK(trk_image_plane_layout(fmt, w, h, &L) == 0);
    size_t total = 0, off[3];
    for (int p = 0; p < L.planes; p++) {
        off[p] = total;
        total += (L.row_bytes[p] + (size_t)pad) * (size_t)L.rows[p];
    }
    *buf = malloc(total);
    uint64_t st = seed * 2654435761u + 1;
    memset(img, 0, sizeof(*img));
    for (int p = 0; p < L.planes; p++) {
        const size_t pitch = L.row_bytes[p] + (size_t)pad;
        for (int r = 0; r < L.rows[p]; r++)
            for (size_t i = 0; i < pitch; i++)
                (*buf)[off[p] + (size_t)r * pitch + i] = i < L.row_bytes[p]
                                                             ? canny_byte(f, seed, p, r, i, &st)
                                                             : (uint8_t)trk_rand_next(&st);
        img->plane[p] = *buf + off[p];
        img->pitch[p] = pitch;
    }
    img->width = w, img->height = h, img->fmt = fmt;
    img->matrix = (seed & 1) ? TRK_MATRIX_BT709 : TRK_MATRIX_BT601;
    img->full_range = (seed & 2) != 0;
}

/* Sizes: single pixels, rows and columns, odd and even, wider than tall. */
static const int canny_sizes[][2] = { { 1, 1 },  { 1, 9 },   { 9, 1 },    { 2, 2 },
                                      { 3, 3 },  { 5, 4 },   { 17, 13 },  { 33, 5 },
                                      { 4, 31 }, { 64, 48 }, { 101, 77 }, { 130, 3 } };
#define CANNY_NSIZES ((int)(sizeof(canny_sizes) / sizeof(canny_sizes[0])))

/* Settings: no smoothing to the largest, thresholds 0/0 (every survivor
 * strong), equal, no strong pixel possible (high = max), the top of the
 * range, and ordinary ones. */
static const struct trk_canny_cfg canny_cfgs[] = {
    { 0, 0, 0 },
    { 0, 10, 40 },
    { 1.0, 20, 60 },
    { 1.4, 30, 30 },
    { 0.5, 0, TRK_CANNY_MAX_THRESH },
    { 2.0, 5, 15 },
    { 4.0, 1, 3 },
    { 0.3, TRK_CANNY_MAX_THRESH, TRK_CANNY_MAX_THRESH },
    { 0, 100, 1000 },
};
#define CANNY_NCFGS ((int)(sizeof(canny_cfgs) / sizeof(canny_cfgs[0])))

/* Pixels where two w x h edge maps (rows pitch apart) differ; prints the
 * first few with what. */
static long canny_diffs(const uint8_t *a, const uint8_t *b, int w, int h, size_t pitch,
                        const char *what)
{
    long bad = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const uint8_t va = a[(size_t)y * pitch + x], vb = b[(size_t)y * pitch + x];
            if (va != vb && bad++ < 3)
                fprintf(stderr, "  %s (%d, %d): %d != %d\n", what, x, y, va, vb);
        }
    return bad;
}

/* Whether two stats agree in every sum and figure. */
static int canny_stats_equal(const struct trk_canny_stats *a, const struct trk_canny_stats *b)
{
    return a->pixels == b->pixels && a->edges == b->edges && a->strong == b->strong &&
           a->edge_m2 == b->edge_m2 && a->density == b->density && a->gradient == b->gradient &&
           a->sharpness == b->sharpness;
}

/* Runs c on every case (sizes x formats x fills x settings, seeded) and
 * checks edge map and stats against trk_canny_ref, and the stats of the
 * sums-only call (edges NULL) too (of the definition's as well, one case in
 * eight: it is slow); returns the cases run. stride: run every stride-th
 * case (1 = all). */
static long canny_against_ref(struct trk_canny *c, const char *name, int stride)
{
    long n = 0, idx = 0;
    for (int si = 0; si < CANNY_NSIZES; si++)
        for (int f = 0; f < TRK_FMT_COUNT; f++)
            for (int fill = 0; fill < CANNY_FILLS; fill++)
                for (int k = 0; k < CANNY_NCFGS; k++) {
                    if (idx++ % stride) continue;
                    const int w = canny_sizes[si][0], h = canny_sizes[si][1];
                    const uint64_t seed = (uint64_t)idx * 7919 + 13;
                    uint8_t *buf;
                    struct trk_image img;
                    canny_image((enum trk_pixfmt)f, w, h, (int)(idx % 9), (enum canny_fill)fill,
                                seed, &buf, &img);
                    struct trk_canny_params p;
                    CHECK(trk_canny_params_init(&p, &canny_cfgs[k]) == 0);
                    const size_t pitch = (size_t)w + 3;
                    uint8_t *want = malloc(pitch * (size_t)h), *got = malloc(pitch * (size_t)h);
                    memset(got, 0x5a, pitch * (size_t)h);
                    memcpy(want, got, pitch * (size_t)h); /* bytes past w untouched by both */
                    struct trk_canny_stats sw, sg;
                    CHECK(trk_canny_ref(&p, &img, want, pitch, &sw) == 0);
                    const int e = trk_canny_run(c, &p, &img, got, pitch, &sg, NULL);
                    char what[160];
                    snprintf(what, sizeof(what), "%s %dx%d %s %s sigma %.1f %d/%d", name, w, h,
                             trk_pixfmt_name(img.fmt), canny_fill_name[fill], canny_cfgs[k].sigma,
                             canny_cfgs[k].low, canny_cfgs[k].high);
                    CHECKF(e == 0, "%s: run %d", what, e);
                    CHECKF(canny_diffs(want, got, (int)pitch, h, pitch, what) == 0, "%s", what);
                    CHECKF(canny_stats_equal(&sw, &sg), "%s: edges %llu/%llu m2 %llu/%llu", what,
                           (unsigned long long)sw.edges, (unsigned long long)sg.edges,
                           (unsigned long long)sw.edge_m2, (unsigned long long)sg.edge_m2);
                    struct trk_canny_stats sn = { 0 }, sr = { 0 };
                    CHECKF(trk_canny_run(c, &p, &img, NULL, 0, &sn, NULL) == 0 &&
                               canny_stats_equal(&sw, &sn),
                           "%s: sums only: edges %llu/%llu", what, (unsigned long long)sw.edges,
                           (unsigned long long)sn.edges);
                    if (idx % 8 == 0)
                        CHECKF(trk_canny_ref(&p, &img, NULL, 0, &sr) == 0 &&
                                   canny_stats_equal(&sw, &sr),
                               "%s: definition, sums only", what);
                    free(want), free(got), free(buf);
                    n++;
                }
    return n;
}

#endif
