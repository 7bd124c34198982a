/* Seam carving (seed 002): retarget a frame to a smaller width x height by
 * removing its least visible columns and rows, one 8-connected seam at a
 * time, while every protected pixel (the tracked objects' masks) is kept
 * whenever the frame has room to spare it.
 *
 * Definition (trk_seam_carve_ref is its plain transcription; every other
 * form gives the same bytes and the same map):
 *   - Luma: L = (77 R + 150 G + 29 B + 128) >> 8 of the source pixel (BT.601
 *     weights in 8 bits), computed once per source pixel.
 *   - Energy of pixel (x, y) of the current (partly carved) w x h image:
 *     e = |L(x+1, y) - L(x-1, y)| + |L(x, y+1) - L(x, y-1)| (central
 *     differences, 0..510), reading the pixels that are neighbours in the
 *     current image, coordinates clamped to it (borders replicated: a
 *     1-pixel-wide image has dx = 0). Cost E = e + TRK_SEAM_PROTECT when the
 *     pixel is protected: a 64-bit sum whose high word counts protected
 *     pixels, so a cheaper seam is one through fewer protected pixels first
 *     and of less energy second (exact for seams up to 2^23 pixels long).
 *   - Cumulative map M(x, 0) = E(x, 0); M(x, y) = E(x, y) + min(M(x-1, y-1),
 *     M(x, y-1), M(x+1, y-1)), neighbours outside the row left out.
 *   - The seam: x(h-1) = the leftmost minimum of the last row; then upwards
 *     x(y-1) = the parent of x(y) among x-1, x, x+1 with the least M, ties
 *     to the middle, then the left.
 *   - Removal: each row loses its seam pixel; the energy is recomputed on
 *     the carved image before the next seam (E changes near the seam only).
 *   - Order: all src_w - dst_w vertical seams first, then src_h - dst_h
 *     horizontal seams, found by the same steps on the transposed image
 *     (the energy is symmetric under transposition).
 *   - Protected pixels that cannot be spared (more seams than unprotected
 *     pixels in some row): the definition still holds; the seams then
 *     cross as few protected pixels as possible, least energy first, and
 *     trk_seam_info.cut_protected counts the protected pixels removed.
 * Only shrinking: dst_w <= src_w, dst_h <= src_h (no insertion).
 *
 * The carved image keeps the source's packed format (RGB24, BGR24, RGBA,
 * BGRA: whole pixels move, alpha too; luma reads R, G, B wherever the
 * format keeps them). Planar and YUV formats are not taken: callers carve
 * the RGB frame they encode (snapshots and previews are RGB).
 *
 * The seam map says where every pixel went, both ways:
 *   src_of[y' * dst_w + x'] = y * src_w + x, the source pixel of output
 *     pixel (x', y'), for applying the carve to any other per-pixel plane;
 *   dst_of[y * src_w + x] = y' * dst_w + x', where source pixel (x, y) went,
 *     or -1 when it was removed: overlays (boxes, centroids, masks) map
 *     through it (trk_seam_map_region).
 * When no protected pixel is cut (cut_protected 0), a protected object
 * whose mask is one run per row and per column, each run overlapping the
 * next row's (column's) by a pixel at least (discs, boxes: convex shapes),
 * keeps its shape exactly: an 8-connected seam cannot pass between its
 * pixels, so its mask moves rigidly and its box and centroid move by the
 * same vector. A protected mask with holes, notches or diagonal-only joins
 * may lose background pixels between its parts (they then move closer);
 * callers that need rigid overlays protect the objects' boxes.
 *
 * Plain C, no CUDA types: the CUDA form (gpu/cuda/seam.cu) includes it. */
#ifndef TRK_GPU_SEAM_H
#define TRK_GPU_SEAM_H

#include <stddef.h>
#include <stdint.h>

#include "image.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a protected pixel adds to its cost (the high word counts them). */
#define TRK_SEAM_PROTECT ((uint64_t)1 << 32)

/* A carve's seam map (see above). Arrays owned by the caller: src_of holds
 * dst_w * dst_h entries, dst_of src_w * src_h; either may be NULL. */
struct trk_seam_map {
    int src_w, src_h, dst_w, dst_h;
    int32_t *src_of;
    int32_t *dst_of;
};

/* What a carve did. */
struct trk_seam_info {
    int seams_v, seams_h; /* vertical and horizontal seams removed */
    long cut_protected;   /* protected pixels removed (0 when all fitted) */
};

/* Host scratch for carves of frames up to max_w x max_h pixels (about
 * 26 bytes a pixel), made once so that no carve allocates (or faults in
 * fresh pages) per frame. 0, TRK_EINVAL or TRK_ENOMEM. */
struct trk_seam_scratch;
int trk_seam_scratch_create(struct trk_seam_scratch **out, int max_w, int max_h);
/* Frees and NULLs *s; safe on NULL. */
void trk_seam_scratch_destroy(struct trk_seam_scratch **s);

/* One carve's arguments. src: a host image of a packed 3- or 4-byte
 * format; prot: one byte per source pixel (non-zero = protected) with
 * prot_pitch bytes per row, or NULL for none; dst: dst_pitch bytes per
 * row (>= dst_w * bpp), src's format; map: NULL or arrays to fill;
 * scratch: NULL (the carve allocates its own) or one at least as large as
 * src (else TRK_ETOOBIG); one carve at a time uses it. */
struct trk_seam_job {
    const struct trk_image *src;
    const uint8_t *prot;
    size_t prot_pitch;
    int dst_w, dst_h;
    uint8_t *dst;
    size_t dst_pitch;
    struct trk_seam_map *map;
    struct trk_seam_scratch *scratch;
};

/* Arguments valid: format packed RGB/BGR(A) on the host, 1 <= dst_w <=
 * src_w, 1 <= dst_h <= src_h, dst and pitches large enough, src no bigger
 * than TRK_SEAM_MAX_SIDE on either side. 0 or TRK_EINVAL. */
#define TRK_SEAM_MAX_SIDE 16384
int trk_seam_check(const struct trk_seam_job *job);

/* The definition, plainly: full energy and cumulative map per seam. 0,
 * TRK_EINVAL, TRK_ETOOBIG or TRK_ENOMEM. info may be NULL. */
int trk_seam_carve_ref(const struct trk_seam_job *job, struct trk_seam_info *info);

/* The fast CPU twin: the same bytes and map; after each seam only the
 * energy next to it and the part of the cumulative map it changed are
 * recomputed. 0, TRK_EINVAL, TRK_ETOOBIG or TRK_ENOMEM. */
int trk_seam_carve_fast(const struct trk_seam_job *job, struct trk_seam_info *info);

/* Source luma of the definition for one pixel of format fmt. */
uint8_t trk_seam_luma(const uint8_t *px, enum trk_pixfmt fmt);

/* A source region (the pixels of box [x0, x1] x [y0, y1], inclusive, set in
 * mask, or all of them when mask is NULL; mask_pitch bytes per row) seen in
 * the carved frame: *out_box = the bounding box of where its kept pixels
 * went, and (*cx, *cy) their centroid in output pixels. Returns how many of
 * its pixels were kept (0: box and centroid untouched; also when the map
 * has no dst_of). The box is clipped to the source frame. */
long trk_seam_map_region(const struct trk_seam_map *map, const uint8_t *mask, size_t mask_pitch,
                         const int box[4], int out_box[4], double *cx, double *cy);

/* ------------------------------------------------------------ CUDA form */

/* The CUDA form (gpu/cuda/seam.cu; CUDA builds only, else the functions
 * return TRK_ENODEV). Scratch for frames up to max_w x max_h is allocated
 * at create. Variants of the cumulative map: */
enum trk_seam_cuda_variant {
    TRK_SEAM_CUDA_ROWS = 0, /* the seed's scheme: one launch per row */
    TRK_SEAM_CUDA_TILED,    /* TRK_SEAM_ROWS_PER_LAUNCH rows per launch, trapezoid tiles */
    TRK_SEAM_CUDA_VARIANTS
};
const char *trk_seam_cuda_variant_name(int variant);

struct trk_seam_cuda;
/* 0, TRK_EINVAL, TRK_ENOMEM or TRK_ENODEV (not compiled, or no usable GPU:
 * logged). */
int trk_seam_cuda_create(struct trk_seam_cuda **out, int max_w, int max_h);
/* Frees and NULLs *s; safe on NULL. */
void trk_seam_cuda_destroy(struct trk_seam_cuda **s);
/* The same carve as trk_seam_carve_ref, on the device (upload, carve,
 * download; synchronous). TRK_ETOOBIG past create's size, TRK_EBACKEND on a
 * CUDA failure (logged). *device_ms (may be NULL): the device time of the
 * carve kernels alone (CUDA events), transfers excluded. */
int trk_seam_cuda_carve(struct trk_seam_cuda *s, int variant, const struct trk_seam_job *job,
                        struct trk_seam_info *info, double *device_ms);

#ifdef __cplusplus
}
#endif
#endif
