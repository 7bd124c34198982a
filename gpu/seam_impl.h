/* What the forms of seam carving (gpu/seam.h) share on the host: the
 * carve's state as a grid of source indices, the per-pixel cost of the
 * definition, the seam trace, and the driver that runs the vertical phase,
 * transposes and runs the horizontal one. Internal to gpu/. */
#ifndef TRK_GPU_SEAM_IMPL_H
#define TRK_GPU_SEAM_IMPL_H

#include <stdint.h>

#include "seam.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A carve in progress. idx holds the current w x h image (compact rows of
 * w) as source pixel indices; lum and prot are per source pixel, so any
 * grid of indices (transposed too) reads its luma and protection through
 * them. */
struct seam_ctx {
    size_t n;            /* source pixels: src_w * src_h */
    const uint8_t *lum;  /* n */
    const uint8_t *prot; /* n, 0/1 */
    int32_t *idx;        /* src_w * src_h entries, w * h in use */
    int32_t *tmp;        /* the same size: transposes, removals */
    uint32_t *cost;      /* the same size, for the phases */
    uint64_t *m;         /* the same size, for the phases */
    int32_t *seam;       /* max(src_w, src_h) */
    long cut_protected;
    void *user; /* the phase function's own state */
};

/* The definition's cost of pixel (x, y) of the w x h grid g (rows of
 * pitch elements). */
static inline uint64_t seam_cost(const struct seam_ctx *c, const int32_t *g, size_t pitch, int w,
                                 int h, int x, int y)
{
    const int32_t *row = g + (size_t)y * pitch;
    int xl = x > 0 ? x - 1 : 0, xr = x < w - 1 ? x + 1 : w - 1;
    int yu = y > 0 ? y - 1 : 0, yd = y < h - 1 ? y + 1 : h - 1;
    int dx = (int)c->lum[row[xr]] - (int)c->lum[row[xl]];
    int dy = (int)c->lum[g[(size_t)yd * pitch + x]] - (int)c->lum[g[(size_t)yu * pitch + x]];
    uint64_t e = (uint64_t)((dx < 0 ? -dx : dx) + (dy < 0 ? -dy : dy));
    return c->prot[row[x]] ? e + TRK_SEAM_PROTECT : e;
}

/* The seam through the cumulative map m (w x h, rows of pitch elements)
 * into seam[0..h-1]: the leftmost minimum of the last row, then parents,
 * ties to the middle, then the left. */
void trk_seam_trace(const uint64_t *m, size_t pitch, int w, int h, int32_t *seam);

/* Removes seam from the w x h grid in c->idx (rows become w - 1 wide,
 * compact), counting protected pixels removed. */
void trk_seam_remove(struct seam_ctx *c, int w, int h, const int32_t *seam);

/* What struct trk_seam_scratch holds, for frames up to n pixels of
 * sides up to side. */
struct trk_seam_scratch {
    size_t n, side;
    int max_w, max_h;
    uint8_t *planes; /* 2 n: luma, protection */
    int32_t *idx, *tmp, *seam;
    uint32_t *cost;
    uint64_t *m;
};

/* One phase: removes k seams from the w x h grid in c->idx. */
typedef int (*seam_phase_fn)(struct seam_ctx *c, int w, int h, int k);

/* The whole carve of job (checked here) with phase: luma and protection,
 * the vertical phase, transpose, the horizontal phase, transpose back,
 * then the output pixels and the map. 0, TRK_EINVAL or TRK_ENOMEM. */
int trk_seam_run(const struct trk_seam_job *job, struct trk_seam_info *info, seam_phase_fn phase,
                 void *user);

#ifdef __cplusplus
}
#endif
#endif
