/* Covering rectangles for ROI-only uploads (plain C, no CUDA): the CUDA
 * backend's regional form copies only the part of a frame its regions read,
 * as a few rectangles (each one cudaMemcpy2DAsync per plane), so a frame
 * that needs 128 small regions costs their area plus a few calls, not the
 * frame. */
#ifndef TRK_GPU_RECTS_H
#define TRK_GPU_RECTS_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most rectangles trk_rects_cover accepts at once (one per region). */
#define TRK_RECTS_MAX TRK_MAX_REGIONS

/* Writes to out at most max_out (>= 1) rectangles, inclusive, inside the
 * w x h frame, whose union contains every in[i] grown by margin pixels on
 * each side and clipped to the frame (inputs empty after clipping need
 * nothing). Overlapping or nearby rectangles are merged into their
 * bounding box while that costs little area (the box at most about the two
 * areas plus a small slack); when more than max_out remain, the merging
 * gets coarser until they fit (at worst one box of everything). Returns
 * how many were written (0: nothing to copy), or TRK_EINVAL for n outside
 * 0..TRK_RECTS_MAX, max_out < 1 or a frame size <= 0. */
int trk_rects_cover(const struct trk_roi *in, int n, int w, int h, int margin, int max_out,
                    struct trk_roi *out);

/* Pixels of the rectangles (overlaps counted once per rectangle). */
uint64_t trk_rects_area(const struct trk_roi *r, int n);

#ifdef __cplusplus
}
#endif
#endif
