/* trackd-bench extension points.
 *
 * trackd-bench (bench.c) runs every backend on the standard scenes. Extra
 * experiments that need more than the backend interface (e.g. a CUDA memory
 * floor or the seed paper's parameter sweeps) live in their own bench/bench_*.c
 * files, which bench/CMakeLists.txt compiles into the same executable. Such a
 * file registers itself from a constructor:
 *
 *     static int run_floor(int argc, char **argv) { ... return 0; }
 *     static const struct trk_bench_experiment floor_exp = {
 *         "memfloor", "device memory read floor", run_floor};
 *     __attribute__((constructor)) static void reg(void)
 *     { trk_bench_register(&floor_exp); }
 *
 * and runs with `trackd-bench --experiment memfloor [its own args...]`.
 */
#ifndef TRK_BENCH_H
#define TRK_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "image.h" /* enum trk_pixfmt */

#ifdef __cplusplus
extern "C" {
#endif

struct trk_bench_experiment {
    const char *name; /* --experiment NAME */
    const char *help; /* one line for --list-experiments */
    /* Gets the arguments after NAME (argv[0] = NAME); returns the exit code. */
    int (*run)(int argc, char **argv);
};

/* Registers e (kept by pointer: give it static storage). At most 32. */
void trk_bench_register(const struct trk_bench_experiment *e);

/* Monotonic clock in milliseconds. */
double trk_bench_now_ms(void);

/* Median of n values (sorts v in place); 0 when n == 0. */
double trk_bench_median(double *v, size_t n);

/* Pixels of a disk of radius r under the rule the experiments paint disks
 * with: (x, y) is in when x^2 + y^2 <= r^2. */
int trk_bench_disk_area(int r);

/* ------------------------------------------- the experiments' options */

/* s, whole, as a decimal int in [lo, hi] into *out. 0, or -1. */
int trk_bench_int(const char *s, long lo, long hi, int *out);

/* "AxB" (a size WxH, a layout CxN) into out: A in [lo, hi0], B in
 * [lo, hi1]. 0, or -1. */
int trk_bench_pair(const char *s, long lo, long hi0, long hi1, int out[2]);

/* s, whole, as a seed (decimal, 0x hex or 0 octal) into *out. 0, or -1. */
int trk_bench_seed(const char *s, uint64_t *out);

/* A pixel format's name ("rgb24", "nv12", ...) as its enum trk_pixfmt
 * value, or -1. */
int trk_bench_format(const char *s);

/* Splits the comma list s (at most 511 bytes; empty items are skipped) and
 * calls one() per item with its index. Returns the count, or -1 when an
 * item fails, there are more than max or there is none. */
int trk_bench_list(const char *s, int max, int (*one)(const char *item, int idx, void *ctx),
                   void *ctx);

/* trk_bench_list of ints in [lo, hi] into out[], of "AxB" pairs with both
 * in [lo, hi] into pairs[], of format names into fmts[]: the count, or -1. */
int trk_bench_int_list(const char *s, int max, long lo, long hi, int *out);
int trk_bench_pair_list(const char *s, int max, long lo, long hi, int (*pairs)[2]);
int trk_bench_format_list(const char *s, int max, enum trk_pixfmt *fmts);

/* A ratio column's text: "-" when v <= 0, else "123x" or "4.5x". */
void trk_bench_ratio(char *buf, size_t n, double v);

/* ------------------------------------------- device hooks of `blobs` */

/* The blob experiment (bench_blobs.c) is plain C; what it measures on the
 * device lives in .cu files that only CUDA builds compile. It reaches them
 * through these weak declarations: in a build without them the symbol's
 * address is NULL and the experiment says so instead of failing to link. */

/* Median device time (ms, CUDA events) of one read of `bytes` bytes that
 * were uploaded once from h (bench_cuda.cu's read kernel). 0, or -1 with a
 * message on stderr. */
int trk_bench_cuda_read_ms(const void *h, size_t bytes, int iters, double *ms)
    __attribute__((weak));

/* NPP's connected-component labelling on one mask (npp_blobs.cu, compiled
 * when CMake finds NPP): median device times of nppiLabelMarkersUF (8-way),
 * nppiCompressMarkerLabelsUF and nppiCompressedMarkerLabelsUFInfo, and what
 * they found, for checking against cpu-ref.
 *
 * NPP's UF labeller labels every connected region of equal value, the
 * background (mask 0) regions too, so the regions are measured on the host
 * from the compressed label image itself: a region is foreground when its
 * pixels are set in the mask. That does not depend on how the info list is
 * indexed or numbered; the info list is only compared with it (info_*). */
#define TRK_BENCH_NPP_TOP 64
struct trk_bench_npp_region {
    uint32_t label;         /* NPP's compressed label */
    uint64_t area;          /* pixels with this label */
    uint64_t first;         /* raster index y * width + x of its first pixel */
    int32_t x0, y0, x1, y1; /* inclusive bounding box */
};
struct trk_bench_npp_mask {
    double label_ms, compress_ms, info_ms;
    uint64_t mask_px;              /* pixels set in the mask NPP labelled */
    int max_id;                    /* what nppiCompressMarkerLabelsUF returned */
    uint32_t label_min, label_max; /* labels in the compressed image */
    int regions;                   /* distinct labels in the image, background ones too */
    int components;                /* of them, foreground regions (pixels set in the mask) */
    int mixed;                     /* labels on both mask and background pixels (must be 0) */
    int n_top;                     /* entries in top: the foreground regions in list order */
    struct trk_bench_npp_region top[TRK_BENCH_NPP_TOP]; /* area desc, first asc */
    /* The info list (info_entries entries) against those regions: the
     * indexing, entry = label - info_base (0 or 1), under which fewer
     * foreground regions' pixel counts differ (-1: none matched), and how
     * many differ under it (info_bad); info_at[0] / [1] = the pixel counts
     * at entries top[0].label and top[0].label - 1; info_box = the NppiRect
     * (x, y, width, height) of top[0]'s entry under info_base. */
    int info_entries, info_base, info_bad;
    uint32_t info_at[2];
    int32_t info_box[4];
};
struct trk_object_def;
/* For each of the n rgb objects, its mask of the RGB24 frame h_rgb (a
 * threshold kernel writes 255 / 0 on the device, not timed), then NPP on it.
 * out[i] per mask; *all_ms = median host wall time of labelling, compressing
 * and measuring all n masks one after the other. 0, or -1 with why. */
int trk_bench_npp_blobs(const unsigned char *h_rgb, int width, int height,
                        const struct trk_object_def *objs, int n, int iters,
                        struct trk_bench_npp_mask *out, double *all_ms, char *why, size_t why_len)
    __attribute__((weak));

/* ------------------------------------------------ device hook of `cvt` */

/* One Lloyd iteration's regional reductions on the device (bench_cvt.cu,
 * CUDA builds): generator k sums the pixels of its clipped square of
 * half-side R nearer to it than to each of its candidates
 * cand[coff[k] .. coff[k + 1] - 1] (a tie goes to the lower index), as
 * bench_cvt.c's CPU loop does, into mass[k], sx[k], sy[k]. *kernel_ms: the
 * kernel's device time (CUDA events). 0, or -1 with why. */
int trk_bench_cuda_cvt(const int32_t *gx, const int32_t *gy, const int32_t *coff,
                       const int32_t *cand, int n, int w, int h, int R, uint64_t *mass,
                       uint64_t *sx, uint64_t *sy, double *kernel_ms, char *why, size_t why_len)
    __attribute__((weak));

#ifdef __cplusplus
}
#endif
#endif
