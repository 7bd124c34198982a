/* Seeded test frames and masks for seam carving (gpu/seam.h), and one
 * comparison of any carver against the definition: used by the unit test
 * (the fast CPU twin) and the GPU test (the CUDA form). Include after
 * check.h. */
#ifndef TRK_TEST_SEAM_CASES_H
#define TRK_TEST_SEAM_CASES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "seam.h"

static uint32_t seam_rng = 1;
static inline uint32_t seam_rand(void)
{
    seam_rng ^= seam_rng << 13;
    seam_rng ^= seam_rng >> 17;
    seam_rng ^= seam_rng << 5;
    return seam_rng;
}

enum seam_kind { SEAM_NOISE, SEAM_SMOOTH, SEAM_FLAT, SEAM_KINDS };
static const char *const seam_kind_name[SEAM_KINDS] = { "noise", "smooth", "flat" };

/* A w x h frame of bpp bytes a pixel, pitch bytes a row (the padding
 * filled with junk): noise, smooth (gradients, blocks and a little
 * noise: the fast twin's changed spans die out) or flat (every pixel the
 * same: every cost 0, ties everywhere). */
static void seam_frame(uint8_t *px, size_t pitch, int w, int h, int bpp, enum seam_kind kind)
{
    int bx = 1 + (int)(seam_rand() % 9), by = 1 + (int)(seam_rand() % 9);
    for (int y = 0; y < h; y++)
        for (size_t i = 0; i < pitch; i++) {
            int x = (int)(i / (size_t)bpp), c = (int)(i % (size_t)bpp);
            uint8_t v;
            if (kind == SEAM_NOISE)
                v = (uint8_t)seam_rand();
            else if (kind == SEAM_FLAT)
                v = (uint8_t)(90 + 7 * c);
            else
                v = (uint8_t)((x * 3 + y * 2 + 40 * ((x / bx + y / by + c) % 3) +
                               (int)(seam_rand() % 4)) &
                              0xff);
            px[(size_t)y * pitch + i] = x < w ? v : 0xee;
        }
}

/* A random protection mask: each pixel protected with probability pct %. */
static void seam_mask(uint8_t *m, size_t pitch, int w, int h, int pct)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < (int)pitch; x++)
            m[(size_t)y * pitch + x] = x < w && (int)(seam_rand() % 100) < pct;
}

/* A carver under test: same contract as trk_seam_carve_ref. */
typedef int (*seam_carver)(const struct trk_seam_job *job, struct trk_seam_info *info, void *user);

/* Carves one case with the definition and with carve; every output byte,
 * both maps and the info must agree. Returns 0 when they do. */
static int seam_compare(seam_carver carve, void *user, const struct trk_image *src,
                        const uint8_t *prot, size_t prot_pitch, int dw, int dh, const char *what)
{
    const int bpp = trk_pixfmt_bpp(src->fmt);
    const size_t dp = (size_t)dw * bpp + 5, nd = (size_t)dw * dh,
                 ns = (size_t)src->width * src->height;
    uint8_t *d[2];
    int32_t *so[2], *dof[2];
    struct trk_seam_info info[2];
    int rc[2], bad = 0;
    for (int k = 0; k < 2; k++) {
        d[k] = malloc(dp * dh);
        so[k] = malloc(nd * sizeof(int32_t));
        dof[k] = malloc(ns * sizeof(int32_t));
        memset(d[k], 0, dp * dh);
        struct trk_seam_map map = { 0, 0, 0, 0, so[k], dof[k] };
        struct trk_seam_job job = { src, prot, prot_pitch, dw, dh, d[k], dp, &map, NULL };
        rc[k] = k ? carve(&job, &info[k], user) : trk_seam_carve_ref(&job, &info[k]);
    }
    CHECKF(rc[0] == 0 && rc[1] == 0, "%s: rc %d %d", what, rc[0], rc[1]);
    if (rc[0] == 0 && rc[1] == 0) {
        for (int y = 0; y < dh && !bad; y++)
            bad = memcmp(d[0] + y * dp, d[1] + y * dp, (size_t)dw * bpp) != 0;
        CHECKF(!bad, "%s: carved pixels differ", what);
        CHECKF(memcmp(so[0], so[1], nd * sizeof(int32_t)) == 0, "%s: src_of differs", what);
        CHECKF(memcmp(dof[0], dof[1], ns * sizeof(int32_t)) == 0, "%s: dst_of differs", what);
        CHECKF(info[0].seams_v == info[1].seams_v && info[0].seams_h == info[1].seams_h &&
                   info[0].cut_protected == info[1].cut_protected,
               "%s: info %d/%d/%ld vs %d/%d/%ld", what, info[0].seams_v, info[0].seams_h,
               info[0].cut_protected, info[1].seams_v, info[1].seams_h, info[1].cut_protected);
        bad |= memcmp(so[0], so[1], nd * sizeof(int32_t)) != 0;
    }
    for (int k = 0; k < 2; k++) {
        free(d[k]);
        free(so[k]);
        free(dof[k]);
    }
    return bad || rc[0] || rc[1];
}

/* The seeded matrix: sizes (odd, 1 wide, 1 high), kinds, formats, masks,
 * targets from k = 0 to a 1-pixel-wide result. max_side bounds the sizes.
 * Returns how many cases ran. */
static int seam_matrix(seam_carver carve, void *user, int max_side, int cases)
{
    static const enum trk_pixfmt fmts[] = { TRK_FMT_RGB24, TRK_FMT_BGRA, TRK_FMT_BGR24,
                                            TRK_FMT_RGBA };
    int ran = 0;
    for (int i = 0; i < cases; i++) {
        seam_rng = 0x9e3779b9u ^ (uint32_t)(i * 2654435761u);
        int w = 1 + (int)(seam_rand() % (uint32_t)max_side);
        int h = 1 + (int)(seam_rand() % (uint32_t)max_side);
        if (i % 11 == 3) w = 1;
        if (i % 13 == 5) h = 1;
        enum seam_kind kind = (enum seam_kind)(i % SEAM_KINDS);
        enum trk_pixfmt fmt = fmts[(i / 3) % 4];
        int bpp = trk_pixfmt_bpp(fmt), pct = (int)(seam_rand() % 4) * 15;
        size_t pitch = (size_t)w * bpp + (seam_rand() % 3) * 4, mp = (size_t)w + seam_rand() % 3;
        int dw = i % 7 == 0 ? w : i % 7 == 1 ? 1 : 1 + (int)(seam_rand() % (uint32_t)w);
        int dh = i % 5 == 0 ? h : i % 5 == 1 ? 1 : 1 + (int)(seam_rand() % (uint32_t)h);
        uint8_t *px = malloc(pitch * h), *m = malloc(mp * h);
        seam_frame(px, pitch, w, h, bpp, kind);
        seam_mask(m, mp, w, h, pct);
        struct trk_image src = {
            { px }, { pitch }, w, h, fmt, TRK_MATRIX_BT601, true, TRK_MEM_HOST
        };
        char what[160];
        snprintf(what, sizeof what, "case %d: %dx%d -> %dx%d %s %s prot %d%%", i, w, h, dw, dh,
                 trk_pixfmt_name(fmt), seam_kind_name[kind], pct);
        seam_compare(carve, user, &src, pct ? m : NULL, mp, dw, dh, what);
        ran++;
        free(px);
        free(m);
    }
    return ran;
}

#endif
