/* Internals shared by the CUDA backend's .cu files (and bench/bench_cuda.cu):
 * the device-side frame, object and accumulator layouts, the exact per-pixel
 * decode, error macros and the launch wrappers. Not a public header: C code
 * includes gpu/backend.h only. */
#ifndef TRK_GPU_CUDA_INTERNAL_CUH
#define TRK_GPU_CUDA_INTERNAL_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "../backend_impl.h"
#include "../color.h"
#include "tuning.cuh"

/* ------------------------------------------------------------- errors */

/* Logs a failed CUDA call (call text, file, line, error string). Errors that
 * would repeat at frame rate are logged a bounded number of times. */
void trk_cuda_log(const char *call, const char *file, int line, cudaError_t e);

/* Evaluates to 0, or logs and evaluates to TRK_EBACKEND. */
#define TRK_CUDA_CHECK(call)                                                                       \
    ([&]() -> int {                                                                                \
        cudaError_t e_ = (call);                                                                   \
        if (e_ == cudaSuccess) return 0;                                                           \
        trk_cuda_log(#call, __FILE__, __LINE__, e_);                                               \
        return TRK_EBACKEND;                                                                       \
    }())
/* Returns TRK_EBACKEND from the enclosing function when the call fails. */
#define TRK_CUDA_TRY(call)                                                                         \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            trk_cuda_log(#call, __FILE__, __LINE__, e_);                                           \
            return TRK_EBACKEND;                                                                   \
        }                                                                                          \
    } while (0)

/* ------------------------------------------------------ device layouts */

/* A frame resident in device memory, as every kernel sees it. Packed
 * formats use plane[0]; NV12 plane[0..1]; I420 plane[0..2]. Pitches are
 * multiples of TRK_CUDA_PITCH_ALIGN and leave room for 4-pixel loads past
 * the last pixel of a row. */
struct trk_cu_frame {
    const uint8_t *plane[3];
    int pitch[3];
    int width, height;
    int fmt;                     /* enum trk_pixfmt */
    struct trk_yuv2rgb_coef y2r; /* per the frame's matrix and range */
    struct trk_rgb2ycc_coef r2y;
};

/* Per-object (per-slot) accumulators in global memory, all fields zero when empty, so
 * a frame's accumulators are reset with plain zero stores and every update
 * is an add or an unsigned max: nx0 = TRK_ACC_BIG - min x, px1 = max x + 1
 * (likewise y). Decoded into trk_obj_result on the host. */
struct trk_cu_acc {
    unsigned long long mass, sx, sy;
    unsigned nx0, ny0, px1, py1;
};
#define TRK_ACC_BIG 0x40000000u

/* An object as the naive and MOCT kernels test it. */
struct trk_cu_obj {
    uint16_t lo[3], hi[3];
    int space; /* enum trk_space */
};

/* Where the per-channel lookup tables of each colour space sit in the table
 * image (offsets in 32-bit words; the same image is copied to shared memory).
 * full[s][c]: entry v = nw words, bit k of word w set when object 32w+k is in
 * space s and channel c's range contains v. sum[s][c]: entry v = the OR of
 * full entry v's words (object k -> bit k % 32): a superset filter. */
struct trk_cu_lut {
    int nw;        /* mask words per entry: 1, 2, 4 or 8 */
    int words;     /* size of the image in words (multiple of 4) */
    int sum_words; /* words of the summary tables (they come first) */
    int has[3];    /* space present among the objects */
    int full_off[3][3], sum_off[3][3];
    int zero_off;     /* nw zero words */
    int wb[3], we[3]; /* mask words [wb, we) hold the space's objects */
};

/* One launch's worth of work for the accumulating kernels. */
struct trk_cu_job {
    struct trk_cu_frame f;
    int n_obj;                    /* objects (naive, MOCT) or accumulator slots (table kernels) */
    int row0, row1;               /* rows processed by this launch         */
    struct trk_cu_acc *acc;       /* this frame's accumulators             */
    struct trk_cu_acc *acc_clear; /* the other parity: zeroed, or NULL     */
    const uint32_t *rowmask;      /* ROI: nw words per row, or NULL        */
    const uint32_t *colmask;      /* ROI: nw words per column              */
    const struct trk_roi *rois;   /* ROI: clipped, per object, or NULL     */
    const struct trk_cu_obj *objs;
    const uint32_t *lut; /* device table image                    */
    struct trk_cu_lut lt;
};

/* ---------------------------------------------------- exact pixel decode */

/* The frame's own samples at (x, y): R, G, B for RGB formats, Y, Cb, Cr for
 * YUV formats (chroma sited per color.h: YUYV (x/2, y), 4:2:0 (x/2, y/2)). */
__device__ __forceinline__ void trk_cu_native(const struct trk_cu_frame &f, int x, int y, int &a,
                                              int &b, int &c)
{
    const uint8_t *p0 = f.plane[0] + (size_t)y * f.pitch[0];
    switch (f.fmt) {
    case TRK_FMT_RGB24:
        a = p0[3 * x];
        b = p0[3 * x + 1];
        c = p0[3 * x + 2];
        break;
    case TRK_FMT_BGR24:
        c = p0[3 * x];
        b = p0[3 * x + 1];
        a = p0[3 * x + 2];
        break;
    case TRK_FMT_RGBA:
        a = p0[4 * x];
        b = p0[4 * x + 1];
        c = p0[4 * x + 2];
        break;
    case TRK_FMT_BGRA:
        c = p0[4 * x];
        b = p0[4 * x + 1];
        a = p0[4 * x + 2];
        break;
    case TRK_FMT_YUYV:
        a = p0[2 * x];
        b = p0[4 * (x >> 1) + 1];
        c = p0[4 * (x >> 1) + 3];
        break;
    case TRK_FMT_NV12: {
        const uint8_t *uv = f.plane[1] + (size_t)(y >> 1) * f.pitch[1];
        a = p0[x];
        b = uv[2 * (x >> 1)];
        c = uv[2 * (x >> 1) + 1];
        break;
    }
    default: { /* I420 */
        a = p0[x];
        b = f.plane[1][(size_t)(y >> 1) * f.pitch[1] + (x >> 1)];
        c = f.plane[2][(size_t)(y >> 1) * f.pitch[2] + (x >> 1)];
        break;
    }
    }
}

__device__ __forceinline__ bool trk_cu_is_yuv(int fmt)
{
    return fmt == TRK_FMT_YUYV || fmt == TRK_FMT_NV12 || fmt == TRK_FMT_I420;
}

/* Channel triples of one pixel in the three spaces, from its native samples,
 * with exactly the arithmetic of color.h (the CPU reference runs the same
 * functions). Only the spaces flagged in need (bit s) are computed. */
struct trk_cu_px {
    int c[3][3]; /* [space][channel] */
};
__device__ __forceinline__ void trk_cu_triples(const struct trk_cu_frame &f, bool yuv, int need,
                                               int a, int b, int c, struct trk_cu_px &p)
{
    int r = a, g = b, bl = c;
    if (yuv && (need & ((1 << TRK_SPACE_RGB) | (1 << TRK_SPACE_HSV)))) {
        uint8_t r8, g8, b8;
        trk_yuv_to_rgb(&f.y2r, a, b, c, &r8, &g8, &b8);
        r = r8;
        g = g8;
        bl = b8;
    }
    p.c[TRK_SPACE_RGB][0] = r;
    p.c[TRK_SPACE_RGB][1] = g;
    p.c[TRK_SPACE_RGB][2] = bl;
    if (need & (1 << TRK_SPACE_HSV)) {
        uint16_t h;
        uint8_t s, v;
        trk_rgb_to_hsv(r, g, bl, &h, &s, &v);
        p.c[TRK_SPACE_HSV][0] = h;
        p.c[TRK_SPACE_HSV][1] = s;
        p.c[TRK_SPACE_HSV][2] = v;
    }
    if (need & (1 << TRK_SPACE_YCBCR)) {
        if (yuv) {
            p.c[TRK_SPACE_YCBCR][0] = a;
            p.c[TRK_SPACE_YCBCR][1] = b;
            p.c[TRK_SPACE_YCBCR][2] = c;
        } else {
            uint8_t y8, cb8, cr8;
            trk_rgb_to_ycbcr(&f.r2y, r, g, bl, &y8, &cb8, &cr8);
            p.c[TRK_SPACE_YCBCR][0] = y8;
            p.c[TRK_SPACE_YCBCR][1] = cb8;
            p.c[TRK_SPACE_YCBCR][2] = cr8;
        }
    }
}

/* ------------------------------------------------------ launch wrappers */
/* Each validates its arguments, launches on the given stream and returns 0 or
 * a TRK_E* code (launch errors are logged by TRK_CUDA_TRY). */

/* Fused single pass (default variant). grid: blocks to launch (from
 * trk_cu_fused_grid); smem: dynamic shared bytes (trk_cu_fused_smem). */
int trk_cu_fused_launch(const struct trk_cu_job *job, int grid, cudaStream_t s);
/* Dynamic shared memory the fused kernel needs for these tables/objects. */
size_t trk_cu_fused_smem(const struct trk_cu_lut *lt, int n_obj);
/* Raises the kernels' shared-memory limit and returns the resident blocks
 * per SM at that shared-memory size (>= 1), or a negative error. */
int trk_cu_fused_setup(int nw, size_t smem, int *blocks_per_sm);

/* Straightforward per-channel lookup tables: one thread per pixel, shared
 * atomics per matching (pixel, object). */
int trk_cu_lut_launch(const struct trk_cu_job *job, cudaStream_t s);
int trk_cu_lut_setup(size_t smem);
/* Naive: one thread per pixel looping over all objects. */
int trk_cu_naive_launch(const struct trk_cu_job *job, cudaStream_t s);

/* ROI masks: rowmask[y][w], colmask[x][w] (nw words each) from job->rois. */
int trk_cu_roimask_launch(const struct trk_cu_job *job, uint32_t *d_rowmask, uint32_t *d_colmask,
                          cudaStream_t s);

/* Seed-faithful MOCT (docs/ARCHITECTURE.md section 5). arr: 0 horizontal (1 x M),
 * 1 vertical (M x 1), 2 square (ceil(sqrt M)^2). r: reduction factor per
 * pass. */
enum { TRK_ARR_H = 0, TRK_ARR_V = 1, TRK_ARR_S = 2 };
struct trk_cu_moct_entry; /* defined in moct.cu */
/* Bytes of scratch the base and one reduced level need at most. */
size_t trk_cu_moct_scratch_bytes(int max_w, int max_h, int max_obj, int arr, int r);
int trk_cu_moct_launch(const struct trk_cu_job *job, int arr, int r, void *d_scratch,
                       size_t scratch_bytes, cudaStream_t s);

/* ----------------------------------------------------- bench hooks (C) */
#ifdef __cplusplus
extern "C" {
#endif
/* For bench/bench_cuda.cu: work on a backend instance created through
 * trk_cuda_ops.create (self). upload: copies img into the device frame
 * buffer once and waits. kernels: runs the variant's kernels on that
 * resident frame `iters` times, writing each run's kernel time (CUDA events,
 * ms) to ms[i] and the last run's results to out (may be NULL). */
int trk_cuda_bench_upload(void *self, const struct trk_image *img, const struct trk_roi *rois);
int trk_cuda_bench_kernels(void *self, int iters, float *ms, struct trk_obj_result *out);
#ifdef __cplusplus
}
#endif

#endif
