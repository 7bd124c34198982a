/* Canny edges of a frame and the sharpness figure derived from them (seed
 * 000: Gaussian, Sobel, non-maximum suppression, double-threshold
 * hysteresis), defined in integers so that every implementation gives the
 * same bytes: trk_canny_ref is the plain transcription of the definition,
 * the fast CPU twin (cpu_fast_canny.c) and the CUDA form (cuda/canny.cu)
 * are tested equal to it, bit for bit.
 *
 * Definition, for a W x H frame (any enum trk_pixfmt):
 *   1. Luma L(x, y), a byte. YUYV, NV12, I420: the pixel's own Y sample as
 *      stored (no range conversion). RGB24, RGBA, BGR24, BGRA: the Y of
 *      color.h's trk_rgb_to_ycbcr for the frame's matrix and range,
 *      clamp(y_off + ((yr R + yg G + yb B + 2^15) >> 16)).
 *   2. Smoothing B = L blurred by gpu/prefilter.h's integer Gaussian of
 *      sigma (its FULL kernel along both axes, borders replicated); sigma 0:
 *      B = L.
 *   3. Gradients, Sobel on B with replicated borders (B read at x and y
 *      clamped to the frame), y growing downwards:
 *        gx = (B[x+1,y-1] + 2 B[x+1,y] + B[x+1,y+1]) - (same at x-1)
 *        gy = (B[x-1,y+1] + 2 B[x,y+1] + B[x+1,y+1]) - (same at y-1)
 *      |gx|, |gy| <= 1020; squared magnitude m2 = gx^2 + gy^2 (exact,
 *      <= 2080800). Magnitude comparisons are made on m2.
 *   4. Non-maximum suppression. With a = |gx|, b = |gy|, the gradient's
 *      sector is, exactly (tan 22.5 = sqrt 2 - 1, tan 67.5 = sqrt 2 + 1):
 *        horizontal  (a + b)^2 < 2 a^2            neighbours (x-1,y) (x+1,y)
 *        vertical    b > a and (b - a)^2 > 2 a^2  neighbours (x,y-1) (x,y+1)
 *        diagonal    otherwise: gx gy >= 0  -> (x-1,y-1) (x+1,y+1)
 *                               gx gy < 0   -> (x+1,y-1) (x-1,y+1)
 *      (sqrt 2 is irrational: no nonzero gradient lies on a sector edge.)
 *      Of the two neighbours, n1 is the one earlier in raster order and n2
 *      the later; a neighbour outside the frame has m2 = 0. Horizontal and
 *      vertical sectors: the pixel survives when m2 > m2(n1) and
 *      m2 >= m2(n2) (of two equal magnitudes across a vertical or
 *      horizontal edge the first is kept: a step between two pixels gives
 *      one line, not two or none). Diagonal sectors: m2 > m2(n1) and
 *      m2 > m2(n2), both strict (beside a smoothed diagonal step the
 *      pixels tie in pairs along the diagonal while the staircase is
 *      already 4-connected without them; keeping the first would thicken
 *      the line: OpenCV's rule, tests/measure/canny_eval.py).
 *   5. Double threshold, integers low <= high: a surviving pixel with
 *      m2 > low^2 is a candidate, with m2 > high^2 a strong one (the seed's
 *      BP and BD: strong when magnitude > high, weak when high >= magnitude
 *      > low, none when magnitude <= low).
 *   6. Hysteresis: the edges are the candidates of every 8-connected
 *      component of candidates that holds a strong pixel.
 * The edge map is 255 at edges and 0 elsewhere, one byte per pixel.
 *
 * Sharpness, from exact integer sums over the frame: edges (count),
 * edge_m2 = sum of m2 over the edges; then, once, in double:
 *   density   = edges / (W H)
 *   gradient  = sqrt(edge_m2 / edges) (0 without edges): the RMS gradient
 *               magnitude along the edges, in Sobel units (a step of height
 *               h across a vertical edge gives 4 h unblurred)
 *   sharpness = sqrt(edge_m2 / (W H)) = gradient * sqrt(density): the
 *               figure a focus check follows; it falls as the picture is
 *               blurred (fewer edges and softer ones).
 *
 * Plain C, no CUDA types. */
#ifndef TRK_GPU_CANNY_H
#define TRK_GPU_CANNY_H

#include <stddef.h>
#include <stdint.h>

#include "image.h"
#include "prefilter.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest threshold: above the largest magnitude (1020 sqrt 2 < 1443),
 * so high = TRK_CANNY_MAX_THRESH finds no strong pixel. */
#define TRK_CANNY_MAX_THRESH 1443

/* One Canny setting. */
struct trk_canny_cfg {
    double sigma;  /* Gaussian, 0..TRK_PREFILTER_MAX_SIGMA pixels; 0 = none */
    int low, high; /* thresholds on the magnitude, 0 <= low <= high <= MAX */
};

/* A setting checked and prepared once: the Gaussian's integer kernels and
 * the squared thresholds every implementation compares m2 with. */
struct trk_canny_params {
    struct trk_prefilter pf; /* pf.sigma 0: no smoothing */
    uint32_t low2, high2;    /* low^2, high^2 */
};

/* Fills *p from cfg; 0, or TRK_EINVAL (sigma or thresholds out of range). */
int trk_canny_params_init(struct trk_canny_params *p, const struct trk_canny_cfg *cfg);

/* The exact sums of one frame and the figures derived from them once. */
struct trk_canny_stats {
    uint64_t pixels;  /* W H */
    uint64_t edges;   /* edge pixels */
    uint64_t strong;  /* strong pixels (all of them are edges) */
    uint64_t edge_m2; /* sum of m2 over the edges */
    double density;   /* edges / pixels */
    double gradient;  /* sqrt(edge_m2 / edges), 0 without edges */
    double sharpness; /* sqrt(edge_m2 / pixels) */
};

/* Fills the derived figures of *st from its sums (pixels > 0). */
void trk_canny_stats_derive(struct trk_canny_stats *st);

/* Luma of pixel (x, y) of img (a host image), rule 1 above. */
uint8_t trk_canny_luma(const struct trk_image *img, int x, int y);

/* The definition, plainly (slow; tests and the evaluation): img a checked
 * host image; edges: W x H bytes, rows edges_pitch apart (>= W), or NULL
 * for the sums alone; st may be NULL. 0, TRK_EINVAL or TRK_ENOMEM. */
int trk_canny_ref(const struct trk_canny_params *p, const struct trk_image *img, uint8_t *edges,
                  size_t edges_pitch, struct trk_canny_stats *st);

/* ------------------------------------------------------- the runners */

enum trk_canny_kind { TRK_CANNY_CPU = 0, TRK_CANNY_CUDA };

struct trk_canny_opts {
    enum trk_canny_kind kind;
    int max_width, max_height; /* scratch is sized for these at create */
    int threads;               /* CPU: threads, 0 = 1 */
    int cuda_device;           /* CUDA: device ordinal */
};

/* Per-stage times of the last run, milliseconds (CUDA: device time between
 * events; CPU: wall clock of the calling thread). */
struct trk_canny_timing {
    double upload_ms;   /* CUDA: frame to the device (~0 for a device image) */
    double luma_ms;     /* luma (CPU: with the Gaussian's horizontal pass) */
    double gauss_ms;    /* Gaussian */
    double sobel_ms;    /* Sobel + non-maximum suppression + thresholds */
    double hyst_ms;     /* hysteresis (and the sums) */
    double download_ms; /* CUDA: sums back, and the edge map when asked */
    double total_ms;    /* whole call, wall clock */
    int hyst_rounds;    /* CUDA: hysteresis launches until stable */
};

struct trk_canny;

/* Makes a runner of o->kind; 0, TRK_EINVAL, TRK_ENOMEM, or TRK_ENODEV (a
 * CUDA runner without the CUDA build or a usable device). *out NULL on
 * failure. */
int trk_canny_create(const struct trk_canny_opts *o, struct trk_canny **out);
/* Frees everything; safe on NULL and twice (sets *c = NULL). */
void trk_canny_destroy(struct trk_canny **c);
/* The edge map and sums of img (no larger than the create size) into
 * edges (W x H, rows edges_pitch apart) and *st (may be NULL); t may be
 * NULL. Same bytes as trk_canny_ref. edges NULL: the sums alone (CUDA
 * copies no map back; the CPU twin marks into its own scratch). img is a
 * host image, or, on a CUDA runner only, a device image (TRK_MEM_CUDA, on
 * the runner's cuda_device: an NVDEC frame as the backend reads it), whose
 * plane 0 is read in place with no upload; the caller keeps its pixels
 * unchanged until the call returns. 0, TRK_EINVAL (a device image on the
 * CPU runner, among others) or TRK_EBACKEND (a CUDA failure, logged). */
int trk_canny_run(struct trk_canny *c, const struct trk_canny_params *p,
                  const struct trk_image *img, uint8_t *edges, size_t edges_pitch,
                  struct trk_canny_stats *st, struct trk_canny_timing *t);
/* "cpu" or "cuda". */
const char *trk_canny_name(const struct trk_canny *c);

#ifdef __cplusplus
}
#endif
#endif
