/* Seam carving (gpu/seam.h).
 *
 *   test_gpu_seam definition  the seam trace on the seed's worked example;
 *                             the first seam against brute force over every
 *                             seam of tiny frames; the tie rules on flat
 *                             frames; a free path through a protected frame
 *   test_gpu_seam twin        the fast CPU twin == the definition, seeded
 *   test_gpu_seam protect     protected objects keep their pixels and move
 *                             rigidly; boxes and centroids map through the
 *                             seam map; a frame with no room cuts the least
 *   test_gpu_seam api         bad arguments are refused
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "seam_cases.h"
#include "seam_impl.h"

/* A grey w x h RGB24 image (luma = the value) from v. */
static struct trk_image grey(uint8_t *px, const uint8_t *v, int w, int h)
{
    for (int i = 0; i < w * h; i++)
        memset(px + 3 * i, v[i], 3);
    struct trk_image im = { { px },        { (size_t)w * 3 }, w,    h,
                            TRK_FMT_RGB24, TRK_MATRIX_BT601,  true, TRK_MEM_HOST };
    return im;
}

/* The definition's cost, written out again for the brute force. */
static uint64_t cost_of(const uint8_t *v, const uint8_t *prot, int w, int h, int x, int y)
{
#define V(xx, yy) v[(yy)*w + (xx)]
    int xl = x ? x - 1 : 0, xr = x < w - 1 ? x + 1 : x, yu = y ? y - 1 : 0,
        yd = y < h - 1 ? y + 1 : y;
    uint64_t e = (uint64_t)(abs(V(xr, y) - V(xl, y)) + abs(V(x, yd) - V(x, yu)));
#undef V
    return e + (prot && prot[y * w + x] ? TRK_SEAM_PROTECT : 0);
}

/* The least cost of any vertical seam from row y at column x down. */
static uint64_t brute(const uint8_t *v, const uint8_t *prot, int w, int h, int x, int y)
{
    uint64_t c = cost_of(v, prot, w, h, x, y);
    if (y == h - 1) return c;
    uint64_t best = UINT64_MAX;
    for (int dx = -1; dx <= 1; dx++)
        if (x + dx >= 0 && x + dx < w) {
            uint64_t b = brute(v, prot, w, h, x + dx, y + 1);
            best = b < best ? b : best;
        }
    return c + best;
}

/* Carves one vertical seam with the definition; the removed pixels must
 * form one 8-connected seam of the least cost. */
static void one_seam_vs_brute(int w, int h, int pct)
{
    uint8_t v[64], prot[64], px[3 * 64], dst[3 * 64];
    int32_t dof[64];
    for (int i = 0; i < w * h; i++) {
        v[i] = (uint8_t)(seam_rand() % 6 * 40);
        prot[i] = (int)(seam_rand() % 100) < pct;
    }
    struct trk_image im = grey(px, v, w, h);
    struct trk_seam_map map = { 0, 0, 0, 0, NULL, dof };
    struct trk_seam_job job = {
        &im, prot, (size_t)w, w - 1, h, dst, (size_t)(w - 1) * 3, &map, NULL
    };
    CHECK(trk_seam_carve_ref(&job, NULL) == 0);
    uint64_t best = UINT64_MAX, got = 0;
    for (int x = 0; x < w; x++) {
        uint64_t b = brute(v, prot, w, h, x, 0);
        best = b < best ? b : best;
    }
    int prev = -1, ok = 1;
    for (int y = 0; y < h; y++) {
        int n = 0, at = -1;
        for (int x = 0; x < w; x++)
            if (dof[y * w + x] < 0) n++, at = x;
        ok &= n == 1 && (prev < 0 || abs(at - prev) <= 1);
        if (n == 1) got += cost_of(v, prot, w, h, at, y);
        prev = at;
    }
    CHECKF(ok, "%dx%d: removed pixels are not one seam", w, h);
    CHECKF(got == best, "%dx%d prot %d%%: seam cost %llu, least %llu", w, h, pct,
           (unsigned long long)got, (unsigned long long)best);
}

static void part_definition(void)
{
    /* Seed 002, Fig. 2.6, accumulated bottom-up there: upside down it is a
     * top-down map; its trace (columns 0, 1, 1, 0 from the end row) is ours. */
    const uint64_t m[16] = { 2, 8, 6, 5, 13, 5, 15, 9, 9, 6, 13, 16, 9, 10, 12, 15 };
    int32_t s[4];
    trk_seam_trace(m, 4, 4, 4, s);
    CHECK(s[3] == 0 && s[2] == 1 && s[1] == 1 && s[0] == 0);
    /* Ties: the middle first, then the left, then the right. */
    const uint64_t t[6] = { 1, 1, 1, 0, 0, 0 };
    trk_seam_trace(t, 3, 3, 2, s);
    CHECK(s[1] == 0 && s[0] == 0);
    const uint64_t t2[6] = { 0, 1, 0, 9, 0, 9 };
    trk_seam_trace(t2, 3, 3, 2, s);
    CHECK(s[1] == 1 && s[0] == 0);
    seam_rng = 7;
    for (int i = 0; i < 300; i++)
        one_seam_vs_brute(2 + i % 5, 1 + (i / 5) % 5, (i % 3) * 30);

    /* A flat frame: every cost 0, so column 0 goes (leftmost, then the
     * middle), and a row removal takes row 0. */
    uint8_t v[36], px[108], dst[108];
    int32_t so[35];
    memset(v, 50, sizeof v);
    struct trk_image im = grey(px, v, 7, 5);
    struct trk_seam_map map = { 0, 0, 0, 0, so, NULL };
    struct trk_seam_job job = { &im, NULL, 0, 6, 4, dst, 18, &map, NULL };
    CHECK(trk_seam_carve_ref(&job, NULL) == 0);
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 6; x++)
            CHECK(so[y * 6 + x] == (y + 1) * 7 + x + 1);

    /* Everything protected but one zig-zag path: the seam takes it. */
    uint8_t prot[36];
    int path[6] = { 3, 2, 1, 2, 3, 4 };
    int32_t dof[36];
    memset(prot, 1, sizeof prot);
    for (int y = 0; y < 6; y++)
        prot[y * 6 + path[y]] = 0;
    im = grey(px, v, 6, 6);
    struct trk_seam_map m2 = { 0, 0, 0, 0, NULL, dof };
    struct trk_seam_job j2 = { &im, prot, 6, 5, 6, dst, 15, &m2, NULL };
    struct trk_seam_info info;
    CHECK(trk_seam_carve_ref(&j2, &info) == 0);
    CHECK(info.cut_protected == 0 && info.seams_v == 1 && info.seams_h == 0);
    for (int y = 0; y < 6; y++)
        for (int x = 0; x < 6; x++)
            CHECK((dof[y * 6 + x] < 0) == (x == path[y]));
}

static int fast_carver(const struct trk_seam_job *job, struct trk_seam_info *info, void *user)
{
    (void)user;
    return trk_seam_carve_fast(job, info);
}

/* The fast twin on a scratch made once (user). */
static int scratch_carver(const struct trk_seam_job *job, struct trk_seam_info *info, void *user)
{
    struct trk_seam_job j = *job;
    j.scratch = user;
    return trk_seam_carve_fast(&j, info);
}

static void part_twin(void)
{
    int ran = seam_matrix(fast_carver, NULL, 40, 400);
    CHECK(ran == 400);
    struct trk_seam_scratch *sc = NULL;
    CHECK(trk_seam_scratch_create(&sc, 40, 40) == 0);
    if (sc) CHECK(seam_matrix(scratch_carver, sc, 40, 200) == 200);
    trk_seam_scratch_destroy(&sc);
    trk_seam_scratch_destroy(&sc);
    /* Larger frames, many seams: the changed spans must stop where they
     * should (smooth) and fill the frame (noise). */
    static const int sizes[][4] = {
        { 161, 97, 101, 60 }, { 97, 161, 60, 150 }, { 200, 33, 3, 2 }, { 64, 64, 64, 1 }
    };
    for (int i = 0; i < 4; i++)
        for (int kind = 0; kind < SEAM_KINDS; kind++) {
            int w = sizes[i][0], h = sizes[i][1];
            seam_rng = 99u + (uint32_t)(i * 3 + kind);
            uint8_t *px = malloc((size_t)w * h * 3), *m = malloc((size_t)w * h);
            seam_frame(px, (size_t)w * 3, w, h, 3, (enum seam_kind)kind);
            seam_mask(m, (size_t)w, w, h, kind == SEAM_FLAT ? 100 : 10);
            struct trk_image src = { { px },        { (size_t)w * 3 }, w,    h,
                                     TRK_FMT_RGB24, TRK_MATRIX_BT601,  true, TRK_MEM_HOST };
            char what[96];
            snprintf(what, sizeof what, "%dx%d -> %dx%d %s", w, h, sizes[i][2], sizes[i][3],
                     seam_kind_name[kind]);
            seam_compare(fast_carver, NULL, &src, m, (size_t)w, sizes[i][2], sizes[i][3], what);
            free(px);
            free(m);
        }
}

/* Discs of distinct colours on a background whose red stays below 100. */
#define NOBJ 6
struct disc {
    int cx, cy, r;
};

static void draw_scene(uint8_t *px, uint8_t *prot, int w, int h, const struct disc *d)
{
    seam_frame(px, (size_t)w * 3, w, h, 3, SEAM_SMOOTH);
    memset(prot, 0, (size_t)w * h);
    for (int i = 0; i < w * h; i++)
        px[3 * i] %= 100;
    for (int k = 0; k < NOBJ; k++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                int dx = x - d[k].cx, dy = y - d[k].cy;
                if (dx * dx + dy * dy > d[k].r * d[k].r) continue;
                uint8_t *p = px + 3 * (y * w + x);
                p[0] = (uint8_t)(200 + k);
                p[1] = (uint8_t)(20 * k + (x & 7)); /* texture inside: costs vary */
                p[2] = (uint8_t)(y * 5);
                prot[y * w + x] = (uint8_t)(k + 1);
            }
}

/* Object k after a carve with no protected pixel cut: every pixel kept, all
 * moved by one vector, its mapped box and centroid that of the carved
 * pixels of its colour. */
static void check_object(const uint8_t *prot, int w, int h, const uint8_t *dst, int dw, int dh,
                         const struct trk_seam_map *map, int k)
{
    int box[4] = { w, h, -1, -1 }, mvx = 0, mvy = 0, first = 1, rigid = 1;
    long n = 0;
    double sx = 0, sy = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            if (prot[y * w + x] != k + 1) continue;
            int32_t o = map->dst_of[y * w + x];
            CHECKF(o >= 0, "object %d: pixel %d,%d removed", k, x, y);
            if (o < 0) return;
            if (first) mvx = o % dw - x, mvy = o / dw - y, first = 0;
            rigid &= o % dw - x == mvx && o / dw - y == mvy;
            box[0] = x < box[0] ? x : box[0], box[1] = y < box[1] ? y : box[1];
            box[2] = x > box[2] ? x : box[2], box[3] = y > box[3] ? y : box[3];
            n++, sx += x, sy += y;
        }
    CHECKF(rigid, "object %d: pixels moved by different vectors", k);
    /* The object as it is in the carved frame, found by its colour. */
    int cbox[4] = { dw, dh, -1, -1 };
    long cn = 0;
    for (int y = 0; y < dh; y++)
        for (int x = 0; x < dw; x++)
            if (dst[3 * (y * dw + x)] == 200 + k) {
                cbox[0] = x < cbox[0] ? x : cbox[0], cbox[1] = y < cbox[1] ? y : cbox[1];
                cbox[2] = x > cbox[2] ? x : cbox[2], cbox[3] = y > cbox[3] ? y : cbox[3];
                cn++;
            }
    CHECKF(cn == n, "object %d: %ld pixels carved, %ld in the source", k, cn, n);
    int mbox[4];
    double cx, cy;
    uint8_t *mask = malloc((size_t)w * h);
    for (int i = 0; i < w * h; i++)
        mask[i] = prot[i] == k + 1;
    CHECK(trk_seam_map_region(map, mask, (size_t)w, box, mbox, &cx, &cy) == n);
    free(mask);
    CHECKF(!memcmp(mbox, cbox, sizeof cbox), "object %d: box %d,%d..%d,%d, carved %d,%d..%d,%d", k,
           mbox[0], mbox[1], mbox[2], mbox[3], cbox[0], cbox[1], cbox[2], cbox[3]);
    CHECK(mbox[0] == box[0] + mvx && mbox[2] == box[2] + mvx);
    CHECK(mbox[1] == box[1] + mvy && mbox[3] == box[3] + mvy);
    CHECK(fabs(cx - (sx / n + mvx)) < 1e-9 && fabs(cy - (sy / n + mvy)) < 1e-9);
}

static void protect_case(int w, int h, int dw, int dh, const struct disc *d)
{
    uint8_t *px = malloc((size_t)w * h * 3), *prot = malloc((size_t)w * h);
    uint8_t *dst = malloc((size_t)dw * dh * 3);
    int32_t *so = malloc((size_t)dw * dh * 4), *dof = malloc((size_t)w * h * 4);
    draw_scene(px, prot, w, h, d);
    struct trk_image im = { { px },        { (size_t)w * 3 }, w,    h,
                            TRK_FMT_RGB24, TRK_MATRIX_BT601,  true, TRK_MEM_HOST };
    struct trk_seam_map map = { 0, 0, 0, 0, so, dof };
    struct trk_seam_job job = { &im, prot, (size_t)w, dw, dh, dst, (size_t)dw * 3, &map, NULL };
    struct trk_seam_info info;
    CHECK(trk_seam_carve_fast(&job, &info) == 0);
    CHECKF(info.cut_protected == 0, "%dx%d -> %dx%d: %ld protected pixels cut", w, h, dw, dh,
           info.cut_protected);
    for (int k = 0; k < NOBJ; k++)
        check_object(prot, w, h, dst, dw, dh, &map, k);
    /* A box past the frame's edges is clipped: the whole frame maps onto
     * the whole carved frame, every output pixel once. A map without
     * dst_of maps nothing. */
    int all[4] = { -5, -5, w + 5, h + 5 }, ob[4];
    double ax, ay;
    CHECK(trk_seam_map_region(&map, NULL, 0, all, ob, &ax, &ay) == (long)dw * dh);
    CHECK(ob[0] == 0 && ob[1] == 0 && ob[2] == dw - 1 && ob[3] == dh - 1);
    struct trk_seam_map nomap = map;
    nomap.dst_of = NULL;
    CHECK(trk_seam_map_region(&nomap, NULL, 0, all, ob, &ax, &ay) == 0);
    /* The map also carries any plane: the carved pixels are the sources'. */
    for (int i = 0; i < dw * dh; i++)
        CHECK(!memcmp(dst + 3 * i, px + 3 * so[i], 3));
    free(px);
    free(prot);
    free(dst);
    free(so);
    free(dof);
}

static void part_protect(void)
{
    const struct disc d[NOBJ] = { { 20, 20, 9 },  { 70, 25, 12 }, { 130, 18, 8 },
                                  { 35, 90, 14 }, { 95, 85, 6 },  { 140, 100, 10 } };
    seam_rng = 1234;
    protect_case(160, 120, 160, 120, d); /* k = 0: the identity */
    protect_case(160, 120, 120, 120, d);
    protect_case(160, 120, 160, 80, d);
    protect_case(160, 120, 100, 70, d); /* about a phone's 10:7 from 4:3 */
    /* No room at all: everything protected, so every seam pixel is. */
    uint8_t v[48], px[144], dst[144], prot[48];
    memset(prot, 1, sizeof prot);
    for (int i = 0; i < 48; i++)
        v[i] = (uint8_t)(seam_rand() % 256);
    struct trk_image im = grey(px, v, 8, 6);
    struct trk_seam_job job = { &im, prot, 8, 5, 4, dst, 15, NULL, NULL };
    struct trk_seam_info info;
    CHECK(trk_seam_carve_ref(&job, &info) == 0);
    CHECK(info.seams_v == 3 && info.seams_h == 2 && info.cut_protected == 3 * 6 + 2 * 5);
    seam_compare(fast_carver, NULL, &im, prot, 8, 5, 4, "all protected");
}

static void part_api(void)
{
    uint8_t px[60], dst[60];
    struct trk_image im = { { px },        { 12 },           4,    5,
                            TRK_FMT_RGB24, TRK_MATRIX_BT601, true, TRK_MEM_HOST };
    memset(px, 1, sizeof px);
    struct trk_seam_job ok = { &im, NULL, 0, 3, 4, dst, 9, NULL, NULL };
    CHECK(trk_seam_check(&ok) == 0);
    CHECK(trk_seam_check(NULL) == TRK_EINVAL);
    struct trk_seam_job j = ok;
    j.dst_w = 5; /* only shrinking */
    CHECK(trk_seam_carve_ref(&j, NULL) == TRK_EINVAL &&
          trk_seam_carve_fast(&j, NULL) == TRK_EINVAL);
    j = ok, j.dst_h = 0;
    CHECK(trk_seam_carve_fast(&j, NULL) == TRK_EINVAL);
    j = ok, j.dst_pitch = 8;
    CHECK(trk_seam_check(&j) == TRK_EINVAL);
    j = ok, j.prot = px, j.prot_pitch = 3;
    CHECK(trk_seam_check(&j) == TRK_EINVAL);
    j = ok, j.dst = NULL;
    CHECK(trk_seam_check(&j) == TRK_EINVAL);
    struct trk_image bad = im;
    bad.fmt = TRK_FMT_YUYV;
    j = ok, j.src = &bad;
    CHECK(trk_seam_check(&j) == TRK_EINVAL);
    bad = im, bad.pitch[0] = 11;
    CHECK(trk_seam_check(&j) == TRK_EINVAL);
    bad = im, bad.mem = TRK_MEM_CUDA;
    CHECK(trk_seam_check(&j) == TRK_EINVAL);
    struct trk_seam_scratch *sc = NULL;
    CHECK(trk_seam_scratch_create(&sc, 4, 4) == 0);
    CHECK(trk_seam_scratch_create(NULL, 4, 4) == TRK_EINVAL);
    struct trk_seam_scratch *none = NULL;
    CHECK(trk_seam_scratch_create(&none, 0, 4) == TRK_EINVAL && none == NULL);
    j = ok, j.scratch = sc; /* 4 x 4 scratch, 4 x 5 frame */
    CHECK(trk_seam_carve_fast(&j, NULL) == TRK_ETOOBIG &&
          trk_seam_carve_ref(&j, NULL) == TRK_ETOOBIG);
    trk_seam_scratch_destroy(&sc);
    CHECK(strcmp(trk_seam_cuda_variant_name(TRK_SEAM_CUDA_TILED), "tiled") == 0);
    CHECK(strcmp(trk_seam_cuda_variant_name(7), "?") == 0);
}

int main(int argc, char **argv)
{
    const char *part = argc > 1 ? argv[1] : "all";
    int all = !strcmp(part, "all"), known = all;
    if (all || !strcmp(part, "definition")) part_definition(), known = 1;
    if (all || !strcmp(part, "twin")) part_twin(), known = 1;
    if (all || !strcmp(part, "protect")) part_protect(), known = 1;
    if (all || !strcmp(part, "api")) part_api(), known = 1;
    if (!known) {
        fprintf(stderr, "unknown part %s\n", part);
        return 2;
    }
    return check_exit("test_gpu_seam");
}
