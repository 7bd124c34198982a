/* Internals shared by the CUDA backend's .cu files: the device-side frame,
 * object and accumulator layouts, the shared-memory layouts, the adapters to
 * color.h's pixel rules, error macros and the launch wrappers. Private to
 * gpu/cuda/: C code includes gpu/backend.h only, the benchmark
 * gpu/cuda/bench_hooks.h. */
#ifndef TRK_GPU_CUDA_INTERNAL_CUH
#define TRK_GPU_CUDA_INTERNAL_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "../backend_impl.h"
#include "../color.h"
#include "../moments.h"
#include "fused_acc.cuh"
#include "tuning.cuh"

/* ------------------------------------------------------------- errors */

/* Logs a failed CUDA call (call text, file, line, error string). Inside a
 * backend instance's entry point the instance's budget applies: a few lines
 * per failure streak, a streak ending at the instance's next good frame
 * (cuda_backend.cu), so errors repeating at frame rate do not flood the log
 * and a later, new failure is still seen. */
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
    /* color.h's lab and rg tables in device memory (read only by frames
     * whose objects include lab or rg ones). */
    const struct trk_light_tab *light;
    /* The set's class cell table (trk_class_cells: TRK_CLASS_CELLS entries,
     * bit j = class object j has the cell) in device memory, read only
     * when the set has class objects (plain global loads, cached: a
     * frame's colours meet few cells). */
    const uint16_t *cls;
};

/* Per-object (per-slot) accumulators in global memory, all fields zero when empty, so
 * a frame's accumulators are reset with plain zero stores and every update
 * is an add or an unsigned max: nx0 = TRK_ACC_BIG - min x, px1 = max x + 1
 * (likewise y). Decoded into trk_obj_result on the host. */
struct trk_cu_acc {
    unsigned long long mass, sx, sy;
    unsigned nx0, ny0, px1, py1;
    unsigned long long sxx, syy, sxy; /* second moments (backend.h) */
};
#define TRK_ACC_BIG 0x40000000u

/* p's sums added to r's, p's bounds taken into r's (trk_cu_acc encoding:
 * every bound is a max). */
__host__ __device__ __forceinline__ void trk_cu_acc_add(struct trk_cu_acc &r,
                                                        const struct trk_cu_acc &p)
{
    r.mass += p.mass;
    r.sx += p.sx;
    r.sy += p.sy;
    r.sxx += p.sxx;
    r.syy += p.syy;
    r.sxy += p.sxy;
    r.nx0 = r.nx0 > p.nx0 ? r.nx0 : p.nx0;
    r.ny0 = r.ny0 > p.ny0 ? r.ny0 : p.ny0;
    r.px1 = r.px1 > p.px1 ? r.px1 : p.px1;
    r.py1 = r.py1 > p.py1 ? r.py1 : p.py1;
}

/* The result one accumulator stands for (host side: the fused, table and
 * MOCT results in cuda_wait.cu, the regions' in regions.cu). */
static inline void trk_cu_acc_result(const struct trk_cu_acc *a, struct trk_obj_result *out)
{
    if (!a->mass) {
        trk_result_clear(out);
        return;
    }
    out->mass = a->mass;
    out->sum_x = a->sx;
    out->sum_y = a->sy;
    out->x0 = (int32_t)(TRK_ACC_BIG - a->nx0);
    out->y0 = (int32_t)(TRK_ACC_BIG - a->ny0);
    out->x1 = (int32_t)a->px1 - 1;
    out->y1 = (int32_t)a->py1 - 1;
    out->sum_xx = a->sxx;
    out->sum_yy = a->syy;
    out->sum_xy = a->sxy;
}

/* An object as the naive and MOCT kernels test it. A class object
 * (TRK_SPACE_CLASS) has its class index (trk_class_cells) in lo[0]. */
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
    int nw;                   /* mask words per entry: 1, 2, 4 or 8 */
    int words;                /* size of the image in words (multiple of 4) */
    int sum_words;            /* words of the summary tables (they come first) */
    int has[TRK_SPACE_COUNT]; /* space present among the objects */
    int full_off[TRK_SPACE_COUNT][3], sum_off[TRK_SPACE_COUNT][3];
    int zero_off;                                 /* nw zero words */
    int wb[TRK_SPACE_COUNT], we[TRK_SPACE_COUNT]; /* mask words [wb, we) hold the space's objects */
    /* Class objects have no tables: the frame's cell table (trk_cu_frame.cls)
     * gives a pixel's classes, cls_slot[j] is class j's slot in this image
     * (-1: not among its objects). ncls: any class object here. */
    int ncls;
    int cls_slot[TRK_MAX_CLASSES];
};

/* ------------------------------------------------ shared-memory layouts */
/* The one definition of what the kernels carve out of dynamic shared memory
 * and of the byte counts the host passes at setup and launch. */

/* Block-local accumulators of n objects (or slots): five u64 arrays (sum x,
 * sum y, sum x*x, sum y*y, sum x*y), then five u32 arrays (count and the
 * encoded bounds of trk_cu_acc): 60 bytes an object. The base must be
 * 8-byte aligned. */
struct trk_cu_sacc {
    unsigned long long *sx, *sy, *sxx, *syy, *sxy;
    unsigned *cnt, *nx0, *ny0, *px1, *py1;
};
__host__ __device__ __forceinline__ size_t trk_cu_sacc_bytes(int n)
{
    return (size_t)n * (5 * sizeof(unsigned long long) + 5 * sizeof(unsigned));
}
__device__ __forceinline__ struct trk_cu_sacc trk_cu_sacc_at(void *base, int n)
{
    struct trk_cu_sacc a;
    a.sx = reinterpret_cast<unsigned long long *>(base);
    a.sy = a.sx + n;
    a.sxx = a.sy + n;
    a.syy = a.sxx + n;
    a.sxy = a.syy + n;
    a.cnt = reinterpret_cast<unsigned *>(a.sxy + n);
    a.nx0 = a.cnt + n;
    a.ny0 = a.nx0 + n;
    a.px1 = a.ny0 + n;
    a.py1 = a.px1 + n;
    return a;
}

/* Object k's second moments in a's block-local sums: cnt pixels of row y
 * at x = b + o, whose offsets o sum to so and their squares to soo (the
 * callers keep those in 32 bits, offsets within one row segment, and widen
 * here once): sum x*x = cnt b^2 + 2 b so + soo, sum x*y = y (cnt b + so),
 * sum y*y = cnt y^2. */
__device__ __forceinline__ void trk_cu_sacc_moments(const struct trk_cu_sacc &a, int k, unsigned b,
                                                    unsigned y, unsigned cnt, unsigned so,
                                                    unsigned soo)
{
    const unsigned long long c = cnt, bb = b, yy = y, sx = c * bb + so;
    atomicAdd(&a.sxx[k], c * bb * bb + 2ull * bb * so + soo);
    atomicAdd(&a.syy[k], c * yy * yy);
    atomicAdd(&a.sxy[k], sx * yy);
}

/* One flush per block: the block's sums of the objects it saw added to the
 * frame's accumulators g with global atomics (threads tid, tid + nthr, ...). */
__device__ __forceinline__ void trk_cu_sacc_flush(const struct trk_cu_sacc &a, struct trk_cu_acc *g,
                                                  int n, int tid, int nthr)
{
    for (int k = tid; k < n; k += nthr) {
        const unsigned c = a.cnt[k];
        if (!c) continue;
        atomicAdd(&g[k].mass, (unsigned long long)c);
        atomicAdd(&g[k].sx, a.sx[k]);
        atomicAdd(&g[k].sy, a.sy[k]);
        atomicAdd(&g[k].sxx, a.sxx[k]);
        atomicAdd(&g[k].syy, a.syy[k]);
        atomicAdd(&g[k].sxy, a.sxy[k]);
        atomicMax(&g[k].nx0, a.nx0[k]);
        atomicMax(&g[k].ny0, a.ny0[k]);
        atomicMax(&g[k].px1, a.px1[k]);
        atomicMax(&g[k].py1, a.py1[k]);
    }
}

/* Zeroes a's sums of n objects (threads tid, tid + nthr, ...). */
__device__ __forceinline__ void trk_cu_sacc_zero(const struct trk_cu_sacc &a, int n, int tid,
                                                 int nthr)
{
    for (int i = tid; i < n; i += nthr) {
        a.sx[i] = a.sy[i] = a.sxx[i] = a.syy[i] = a.sxy[i] = 0;
        a.cnt[i] = a.nx0[i] = a.ny0[i] = a.px1[i] = a.py1[i] = 0;
    }
}

/* The table kernels (fused, lut): the table image (lt.words 32-bit words, a
 * multiple of 4, so what follows is 16-byte aligned), then the accumulators
 * of n slots at s_table + lt.words. */
__host__ __device__ __forceinline__ size_t trk_cu_table_smem(const struct trk_cu_lut &lt, int n)
{
    return (size_t)lt.words * sizeof(uint32_t) + trk_cu_sacc_bytes(n);
}

/* The fused kernel (TRK_FUSED_TABLES): the words of the table image it
 * copies to shared memory (all, the summary tables that come first, or
 * none; a multiple of 4), then the accumulators of n slots (TRK_FUSED_ACC32:
 * trk_facc::WORDS 32-bit words an object, else trk_cu_sacc). */
__host__ __device__ __forceinline__ int trk_cu_fused_copy_words(const struct trk_cu_lut &lt)
{
    return TRK_FUSED_TABLES == 0 ? lt.words : TRK_FUSED_TABLES == 1 ? lt.sum_words : 0;
}
__host__ __device__ __forceinline__ size_t trk_cu_fused_smem(const struct trk_cu_lut &lt, int n)
{
    return (size_t)trk_cu_fused_copy_words(lt) * sizeof(uint32_t) +
           (TRK_FUSED_ACC32 ? (size_t)n * trk_facc::WORDS * sizeof(uint32_t)
                            : trk_cu_sacc_bytes(n));
}

/* The naive kernel: n objects, their n ROIs, then the accumulators (both
 * structs are multiples of 8 bytes, so the accumulators stay aligned). */
static_assert(sizeof(struct trk_cu_obj) % 8 == 0 && sizeof(struct trk_roi) % 8 == 0,
              "naive shared layout: accumulators must stay 8-byte aligned");
__host__ __device__ __forceinline__ size_t trk_cu_naive_smem(int n)
{
    return (size_t)n * (sizeof(struct trk_cu_obj) + sizeof(struct trk_roi)) + trk_cu_sacc_bytes(n);
}

/* Results the fused kernel hands to the host itself (its last block, after
 * every block's flush): the frame's accumulators into mapped host memory
 * (trk_cu_pub_job.out), then this record, seq last, so a host that sees
 * seq sees the results; no copy back and no event to wait on. kernel_ns:
 * the launch's span on the GPU clock (%globaltimer), first block's start
 * to the last block's end. */
struct trk_cu_pub {
    unsigned seq, pad;
    unsigned long long kernel_ns;
};
/* Device-side state of the hand-over: blocks done (the last one resets it)
 * and the earliest block start (reset to ~0). */
struct trk_cu_pubctl {
    unsigned long long t0;
    unsigned done, pad;
};
/* Where a launch hands its results over; out == NULL: it does not (the
 * caller copies them back). */
struct trk_cu_pub_job {
    struct trk_cu_acc *out;    /* mapped host memory: n_obj accumulators */
    struct trk_cu_pub *rec;    /* mapped host memory                      */
    struct trk_cu_pubctl *ctl; /* device memory                           */
    unsigned seq;              /* written to rec->seq last                */
};

/* Where the fused kernel stores the blob objects' masks (blob lists,
 * blobs.cu's mask_runs_kernel reads them): object i's word w of row y (bit
 * b = pixel 32 w + b matches the object inside its clipped ROI) at
 * words[i stride + y wpr + w]. Only words of segments where the object is
 * present are stored; the reader zeroes every non-zero word it reads, so
 * the scratch is all zero between frames (memset at set-up and after a
 * failed frame). words == NULL: no masks (the other instance of the
 * kernel). */
struct trk_cu_bmask {
    uint32_t *words;
    const uint16_t *idx;                 /* slot -> blob object index     */
    uint32_t bits[TRK_MAX_OBJECTS / 32]; /* slots that are blob objects   */
    int wpr;                             /* mask words per row (this frame) */
    size_t stride;                       /* words per object: wpr x height */
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
    struct trk_cu_pub_job pub; /* fused kernel only; out NULL elsewhere  */
    struct trk_cu_bmask bm;    /* fused kernel only; words NULL elsewhere */
};

/* ---------------------------------------------------- exact pixel decode */
/* Adapters from the device frame to color.h's pixel rules (the one
 * definition; the CPU reference runs the same functions). */

/* The frame's own samples at (x, y): trk_pixel_native. */
__device__ __forceinline__ void trk_cu_native(const struct trk_cu_frame &f, int x, int y, int &a,
                                              int &b, int &c)
{
    const size_t pitch[3] = { (size_t)f.pitch[0], (size_t)f.pitch[1], (size_t)f.pitch[2] };
    int s[3];
    trk_pixel_native(f.fmt, f.plane, pitch, x, y, s);
    a = s[0], b = s[1], c = s[2];
}

/* Channel triples of one pixel in the spaces flagged in need (bit s):
 * trk_pixel_triples with the frame's coefficients. */
struct trk_cu_px {
    int c[TRK_SPACE_COUNT][3]; /* [space][channel] */
};
__device__ __forceinline__ void trk_cu_triples(const struct trk_cu_frame &f, bool yuv, int need,
                                               int a, int b, int c, struct trk_cu_px &p)
{
    const int s[3] = { a, b, c };
    trk_pixel_spaces(&f.y2r, &f.r2y, f.light, yuv, need, s, p.c);
}

/* The classes (bit j: class object j) whose tables hold the colour r, g, b. */
__device__ __forceinline__ unsigned trk_cu_cls_bits(const struct trk_cu_frame &f, int r, int g,
                                                    int b)
{
    return __ldg(f.cls + trk_class_cell(r, g, b));
}

/* Mask word w of an image laid out as lt (bit k: slot 32 w + k) for the
 * classes cm; with w < 0 the summary bits (slot % 32) of all of them. */
__device__ __forceinline__ uint32_t trk_cu_cls_word(const struct trk_cu_lut &lt, unsigned cm, int w)
{
    uint32_t m = 0;
    for (; cm; cm &= cm - 1) {
        const int s = lt.cls_slot[__ffs(cm) - 1];
        if (s >= 0 && (w < 0 || (s >> 5) == w)) m |= 1u << (s & 31);
    }
    return m;
}

/* The spaces an image's pixels need (trk_pixel_spaces' need: bit s), the
 * class bit when it has class objects (their R, G, B). */
__host__ __device__ __forceinline__ int trk_cu_need(const struct trk_cu_lut &lt)
{
    int need = lt.ncls ? 1 << TRK_SPACE_CLASS : 0;
    for (int s = 0; s < TRK_SPACE_COUNT; s++)
        need |= lt.has[s] ? 1 << s : 0;
    return need;
}

/* One object's test of the pixel with native samples a, b, c (the naive,
 * MOCT and regional kernels): its box (trk_box_match) in its space, or for
 * a class object (space TRK_SPACE_CLASS, its class in lo[0]) the cell
 * table's bit. */
__device__ __forceinline__ bool trk_cu_obj_match(const struct trk_cu_frame &f, bool yuv,
                                                 const struct trk_cu_obj &o, int a, int b, int c)
{
    struct trk_cu_px p;
    trk_cu_triples(f, yuv, 1 << o.space, a, b, c, p);
    if (o.space == TRK_SPACE_CLASS) {
        const int *t = p.c[TRK_SPACE_RGB];
        return (trk_cu_cls_bits(f, t[0], t[1], t[2]) >> o.lo[0]) & 1u;
    }
    const int *t = p.c[o.space];
    return trk_box_match(o.lo, o.hi, o.space == TRK_SPACE_HSV, t[0], t[1], t[2]) != 0;
}

/* ------------------------------------------------------ launch wrappers */
/* Each validates its arguments, launches on the given stream and returns 0 or
 * a TRK_E* code (launch errors are logged by TRK_CUDA_TRY). */

/* Fused single pass (default variant). grid: blocks to launch (at most the
 * resident blocks of trk_cu_fused_setup times the SMs); dynamic shared
 * memory: trk_cu_fused_smem. */
int trk_cu_fused_launch(const struct trk_cu_job *job, int grid, cudaStream_t s);
/* Raises the shared-memory limit of the kernels lt's object set runs (with
 * lab or rg objects: the LIGHT copies) to smem (trk_cu_fused_smem) and
 * returns the resident blocks per SM at that size (>= 1), or a negative
 * error. */
int trk_cu_fused_setup(const struct trk_cu_lut *lt, size_t smem, int *blocks_per_sm);

/* Straightforward per-channel lookup tables: one thread per pixel, shared
 * atomics per matching (pixel, object). */
int trk_cu_lut_launch(const struct trk_cu_job *job, cudaStream_t s);
int trk_cu_lut_setup(size_t smem);
/* Naive: one thread per pixel looping over all objects. */
int trk_cu_naive_launch(const struct trk_cu_job *job, cudaStream_t s);

/* ROI masks: rowmask[y][w], colmask[x][w] (nw words each) from job->rois. */
int trk_cu_roimask_launch(const struct trk_cu_job *job, uint32_t *d_rowmask, uint32_t *d_colmask,
                          cudaStream_t s);

/* The pre-filter (gpu/prefilter.h) from src into dst, two launches on s
 * (prefilter.cu): both frames have the same format and size; d_tmp holds
 * TRK_PREFILTER_MAX_CHANS slabs of tmp_slab uint16, rows tmp_pitch apart
 * (>= the width). Writes only the grids' samples of dst. pf must be on. */
int trk_cu_prefilter_launch(const struct trk_prefilter *pf, const struct trk_cu_frame *src,
                            const struct trk_cu_frame *dst, uint16_t *d_tmp, int tmp_pitch,
                            size_t tmp_slab, cudaStream_t s);
/* The same on one plain grid of bytes (Canny's luma, gpu/canny.h): the FULL
 * kernel along both axes; d_tmp: height rows of tmp_pitch (>= width) uint16. */
int trk_cu_prefilter_grid_launch(const struct trk_prefilter *pf, const uint8_t *d_src,
                                 int src_pitch, uint8_t *d_dst, int dst_pitch, int width,
                                 int height, uint16_t *d_tmp, int tmp_pitch, cudaStream_t s);

/* Seed-faithful MOCT (docs/ARCHITECTURE.md section 5). arr: 0 horizontal (1 x M),
 * 1 vertical (M x 1), 2 square (ceil(sqrt M)^2). r: reduction factor per
 * pass. */
enum { TRK_ARR_H = 0, TRK_ARR_V = 1, TRK_ARR_S = 2 };
struct trk_cu_moct_entry; /* defined in moct.cu */
/* Bytes of scratch the base and one reduced level need at most. */
size_t trk_cu_moct_scratch_bytes(int max_w, int max_h, int max_obj, int arr, int r);
int trk_cu_moct_launch(const struct trk_cu_job *job, int arr, int r, void *d_scratch,
                       size_t scratch_bytes, cudaStream_t s);

/* ------------------------------------------------------------ blob lists */
/* Labelling of the objects with blobs > 0 (blobs.cu; the algorithm and its
 * memory bounds are in gpu/cuda/NOTES.md, "Blob lists"). */

/* An object with blobs, as the blob kernels see it. */
struct trk_cu_bobj {
    uint16_t lo[3], hi[3];
    int space;         /* enum trk_space                                   */
    int conn;          /* 4 or 8                                           */
    unsigned min_area; /* >= 1                                             */
    int k;             /* K: most blobs listed, 1..TRK_MAX_BLOBS           */
    int off;           /* first of its K records in the output             */
    int slot;          /* its slot in the ROI array (trk_cu_job.rois)      */
};

/* One listed blob as the device builds it; decoded into trk_blob on the
 * host. Bounds are plain unsigned min/max (x0, y0 start at 0xffffffff). */
struct trk_cu_blob {
    unsigned long long sx, sy, perim, first;
    unsigned mass, x0, y0, x1, y1, pad;
    unsigned long long sxx, syy, sxy; /* second moments (backend.h) */
};

/* A record's result (host side: the blob lists of blobs.cu and regions.cu). */
static inline void trk_cu_blob_result(const struct trk_cu_blob *r, struct trk_blob *d)
{
    d->mass = r->mass;
    d->sum_x = r->sx;
    d->sum_y = r->sy;
    d->x0 = (int32_t)r->x0;
    d->y0 = (int32_t)r->y0;
    d->x1 = (int32_t)r->x1;
    d->y1 = (int32_t)r->y1;
    d->perimeter = r->perim;
    d->first = r->first;
    d->sum_xx = r->sxx;
    d->sum_yy = r->syy;
    d->sum_xy = r->sxy;
}
static_assert(sizeof(struct trk_cu_blob) % 8 == 0,
              "blob records: 64-bit atomics need 8-byte alignment");

/* The output buffer: the list length of each blob object (TRK_MAX_OBJECTS
 * words), then the records, object after object (each object's K at its
 * off). One copy brings back the lengths and the sum of K records. */
#define TRK_CU_BLOB_HDR (TRK_MAX_OBJECTS * sizeof(unsigned))
static_assert(TRK_CU_BLOB_HDR % 8 == 0, "records follow the lengths 8-byte aligned");

/* One group of blob objects through the whole pipeline (blobs.cu). The
 * group's objects are bits 0..gn-1 of its own table image (lut, lt: the
 * layout of the aggregate tables, built by the same code with slot = index
 * in the group). Scratch: the row-major tables hold every (row, object) of
 * the group; run slots are shared by the group's objects and taken by
 * (row, object) as rows finish, cap of them (at least gn x ceil(width / 2)
 * x height: the most runs the group can have, so nothing overflows). */
struct trk_cu_blobjob {
    struct trk_cu_frame f;
    const struct trk_roi *rois;     /* clipped ROIs by slot, or NULL (whole frame) */
    const struct trk_cu_bobj *objs; /* every blob object                  */
    int g0, gn;                     /* this group: blob objects [g0, g0 + gn) */
    int need;                       /* spaces the group's objects test (bit s) */
    const uint32_t *lut;            /* the group's table image (device)   */
    struct trk_cu_lut lt;
    int wpr; /* mask words per row of this frame         */
    /* The group's masks as the fused kernel stored them (trk_cu_bmask: its
     * first object's words, stride words per object), zeroed as read; NULL:
     * runs_kernel thresholds the frame itself (the other variants). */
    uint32_t *masks;
    size_t mstride;
    size_t cap;         /* run slots                                */
    uint32_t *ctl;      /* run slots taken (zeroed before the launch) */
    uint32_t *ctl_next; /* zeroed by this launch for the next one */
    /* Root lists: object g of the group owns words [g S, (g + 1) S), S =
     * wpr x height (this frame): word 0 counts its roots (zeroed by
     * runs_kernel, counted by flatten_kernel), the S - 1 after it hold
     * their run slots (those past S - 1 are counted, not stored). */
    uint32_t *roots;
    uint32_t *rowoff;                /* [y][g]: first run slot of (row, object)  */
    uint32_t *rowcnt;                /* [y][g]: its runs (sorted by x)           */
    uint16_t *x0, *x1;               /* per run: first and last pixel            */
    uint32_t *yg;                    /* per run: y | g << 16                     */
    uint32_t *parent, *mass, *first; /* per run; mass, first valid at roots */
    unsigned *counts;                /* output: list length per blob object    */
    struct trk_cu_blob *recs;        /* output: records (trk_cu_bobj.off)      */
};

/* Scratch bytes one blob object needs for frames up to max_w x max_h. */
size_t trk_cu_blob_obj_bytes(int max_w, int max_h);
/* Dynamic shared memory of the threshold kernel for a group's tables. */
size_t trk_cu_blob_smem(const struct trk_cu_lut *lt);
/* Raises the threshold kernel's shared-memory limit to smem (the largest
 * trk_cu_blob_smem of the groups). */
int trk_cu_blobs_setup(size_t smem);
/* Queues the group's pipeline (threshold + runs, union, flatten + mass,
 * top-K selection + stats of the selected) on s; no host sync. sms: the
 * device's multiprocessors (grid sizes). */
int trk_cu_blobs_launch(const struct trk_cu_blobjob *job, int sms, cudaStream_t s);

/* ------------------------------------------------- the backend instance */
/* Host side of the backend (trk_cuda_ops), shared by the files that
 * implement it: cuda_backend.cu (variants, lifecycle, probe),
 * cuda_objects.cu (tables, object grouping, blob set-up), cuda_pinned.cu
 * (the pinned-range registry), cuda_submit.cu (uploads and launches),
 * cuda_device_image.cu (frames already on the device), cuda_regional.cu
 * (the regional form, top to bottom), cuda_wait.cu (waits, timing,
 * results) and cuda_bench.cu (bench_hooks.h). */

struct trk_cu_rrm;

namespace trk_cuda
{

enum variant { V_FUSED = 0, V_LUT, V_NAIVE, V_MOCT };

/* Most 32-bit words a table image can need: summary + full tables of every
 * space (3 per space: all of 256 values but the hue of TRK_HUE_VALUES) at
 * 8 mask words per entry, each table padded to 4 words. */
const int LUT_CHANNEL_VALUES = (3 * TRK_SPACE_COUNT - 1) * 256 + TRK_HUE_VALUES;
const int LUT_MAX_WORDS =
    (LUT_CHANNEL_VALUES + 4 * 3 * TRK_SPACE_COUNT) + 8 * LUT_CHANNEL_VALUES + 64;

/* An instance's log budget: lines logged since its last good frame. The
 * daemon's log-once style: an error that fails every frame (a lost device)
 * logs its first lines once, and again only after a frame has succeeded. */
struct cuda_log {
    int lines;
};

/* The instance whose entry point this thread is running (set by log_scope),
 * so that TRK_CUDA_TRY in the launch wrappers reaches its budget without an
 * extra argument. NULL outside one: those failures are always logged. */
extern thread_local struct cuda_log *t_log;

struct cuda_be {
    struct cuda_log log; /* trk_cuda_log's budget for this instance */
    int dev, sms;
    int variant, arr, r, bands; /* bands: 0 = automatic */
    bool copy_only;             /* variant option "copy": never read host frames in place */
    bool copyback;              /* variant option "copyback": never hand results over (below) */
    char name[80];
    int max_w, max_h;

    cudaStream_t s_up, s_k;
    cudaEvent_t ev_up0, ev_up1, ev_roi0, ev_roi1, ev_done;
    cudaEvent_t ev_legacy; /* device images: the legacy stream's work so far (untimed) */
    bool up_timed;         /* ev_up0..ev_up1 spans this frame's upload or copy */
    cudaEvent_t ev_band[TRK_CUDA_MAX_BANDS], ev_ks[TRK_CUDA_MAX_BANDS], ev_ke[TRK_CUDA_MAX_BANDS];
    bool events_made;

    uint8_t *d_frame, *hp_stage;
    size_t frame_bytes;
    struct trk_cu_acc *d_acc[2], *hp_res;
    int parity;
    /* The hand-over (trk_cu_pub): hp_res and hp_pub are mapped (dp_res,
     * dp_pub: their device addresses; NULL if mapping failed, then results
     * are always copied back); pub_wait: this frame's fused launch hands its
     * results over with seq pub_seq, so wait() watches hp_pub instead of an
     * event. */
    struct trk_cu_acc *dp_res;
    struct trk_cu_pub *hp_pub, *dp_pub;
    struct trk_cu_pubctl *d_pubctl;
    unsigned pub_seq;
    bool pub_wait;
    bool dirty; /* accumulators may hold a failed frame's partial sums */

    uint32_t *d_lut, *h_lut;
    struct trk_light_tab *d_light; /* color.h's lab and rg tables, uploaded at create */
    /* The set's class cell table (trk_class_cells; made when a set first
     * has class objects, kept) and each object's class index. */
    uint16_t *d_cls, *h_cls;
    int cls_ord[TRK_MAX_OBJECTS];
    struct trk_cu_lut lt;
    struct trk_cu_obj *d_objs;
    struct trk_roi *d_rois, *hp_rois;
    uint32_t *d_rowmask, *d_colmask;
    void *d_moct;
    size_t moct_bytes;
    int n, fused_grid;
    /* Accumulator slot of each object: the table variants place similar
     * colours in one summary group (see group_objects); the others use
     * slot = object index. slots: accumulators in use. */
    int pos[TRK_MAX_OBJECTS];
    int slots;

    /* Blob lists. bobj_of[i]: object index of blob object i (nbo of them,
     * in object order); h_bobj/d_bobj their descriptors; group: blob
     * objects labelled per pass of the pipeline (the scratch holds that
     * many); blt[i] / blut_off[i]: the table layout and offset in d_blut of
     * pass i's objects (bits 0.. of its own image); d_bctl: two run
     * counters, the pass at bctl_par uses one and zeroes the other for the
     * next; d_bout/hp_bout: list lengths then records (TRK_CU_BLOB_HDR),
     * bout_bytes of it copied back per frame. n_blob/h_blob: the decoded
     * lists of the last frame, per object. */
    int nbo, group, bctl_par;
    int bobj_of[TRK_MAX_OBJECTS];
    struct trk_cu_bobj h_bobj[TRK_MAX_OBJECTS];
    struct trk_cu_bobj *d_bobj;
    struct trk_cu_lut blt[TRK_MAX_OBJECTS];
    size_t blut_off[TRK_MAX_OBJECTS], blut_words;
    uint32_t *d_blut, *d_bctl;
    uint32_t *d_broots, *d_browoff, *d_browcnt, *d_byg, *d_bparent, *d_bmass, *d_bfirst;
    uint16_t *d_bx0, *d_bx1;
    /* The fused variant's mask scratch (trk_cu_bmask): bmask_words words,
     * all zero between frames; d_bidx slot -> blob object, bbits the blob
     * objects' slots. */
    uint32_t *d_bmask;
    size_t bmask_words;
    uint16_t *d_bidx;
    uint32_t bbits[TRK_MAX_OBJECTS / 32];
    void *d_bout, *hp_bout;
    size_t bout_bytes;
    cudaEvent_t ev_b0, ev_b1;
    bool blob_work;   /* this frame queued the blob pipeline */
    bool bench_blobs; /* h_blob holds trk_cuda_bench_kernels' last lists */
    int n_blob[TRK_MAX_OBJECTS];
    struct trk_blob (*h_blob)[TRK_MAX_BLOBS];

    /* The frame in flight (or resident, for bench_hooks.h). */
    struct trk_cu_frame f;
    bool roi;
    int nk;    /* kernel intervals recorded this frame */
    bool work; /* GPU work was queued (n > 0)          */
    double t_submit;
    uint64_t up_bytes;       /* copied to the device for the frame in flight */
    uint64_t in_place_bytes; /* of those, read by the kernel from pinned host memory */

    /* The pre-filter (prefilter.cu): its setting; the filtered frame (the
     * layout of d_frame) and the 16-bit intermediate, made when it is first
     * turned on. While on, the kernels read d_filt through f. */
    struct trk_prefilter pf;
    uint8_t *d_filt;
    uint16_t *d_pftmp;
    int pftmp_pitch;
    size_t pftmp_slab;

    /* The regional form (regions.cu, made at the first set_objects): rmode
     * while the frame in flight or last waited for was regional. */
    struct trk_cu_rrm *rrm;
    bool rmode;

    /* Point gathers (gather.cu, trk_backend_set_gather), made at the first:
     * the points and values in one pinned buffer, mapped (gather_mapped:
     * dp_* are its device addresses) or else copied through d_gather
     * (dp_* point there); gather_arm points armed for the next submit,
     * which begin_call moves to gather_n (this submit's); gathered_only: a
     * submit without objects queued only the gather. */
    struct trk_gather_point *hp_gpts, *dp_gpts;
    struct trk_gather_value *hp_gval, *dp_gval;
    void *d_gather;
    bool gather_mapped, gathered_only;
    int gather_arm, gather_n;
};

/* Points t_log at an instance for the life of one entry point. */
struct log_scope {
    struct cuda_log *prev;
    explicit log_scope(struct cuda_be *b) : prev(t_log) { t_log = &b->log; }
    ~log_scope() { t_log = prev; }
};

inline size_t align_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

/* Device layout of a frame: the planes of trk_image_plane_layout, each at
 * an offset with a pitch of its own. Pitches are those of the frame 4-pixel
 * aligned in width (room for the 4-pixel loads of the fused kernel past a
 * row's last pixel), rounded up to TRK_CUDA_PITCH_ALIGN. Returns the total
 * bytes. */
struct layout {
    struct trk_plane_layout p; /* planes, payload bytes per row, rows */
    size_t off[3];
    int pitch[3];
};

/* Per-object sizes of the labelling scratch, sized for the largest frame
 * so one allocation serves every frame size: root-list words (one per mask
 * word of a row), rows (rowoff and rowcnt each), run slots. */
struct blob_strides {
    size_t words, rows, runs;
};

/* -- cuda_backend.cu */
size_t frame_layout(int w, int h, int fmt, struct layout *L);
int cu_set_prefilter(void *self, const struct trk_prefilter *pf);
void free_blob_scratch(struct cuda_be *b);
cudaError_t reset_pubctl(struct cuda_be *b);
/* -- cuda_objects.cu */
int cu_set_objects(void *self, const struct trk_object_def *objs, int n);
blob_strides blob_strides_of(const struct cuda_be *b);
/* -- cuda_pinned.cu */
bool host_pinned(const void *p);
int pin_lookup(const void *p, size_t n);
bool pin_covers(const void *p, size_t n);
const uint8_t *pin_device(const void *p, size_t n);
void *cu_host_alloc(void *self, size_t bytes);
void cu_host_free(void *self, void *p);
int cu_host_register(void *self, void *p, size_t n);
void cu_host_unregister(void *self, void *p);
bool cu_host_pinned(const void *self, const void *p, size_t n);
/* -- cuda_submit.cu */
bool plane_pinned(const struct trk_image *img, const struct layout *L, int p);
int upload_rows(struct cuda_be *b, const struct trk_image *img, const struct layout *L, int r0,
                int r1, bool pinned);
void fill_frame(struct cuda_be *b, const struct trk_image *img, const struct layout *L);
int queue_prefilter(struct cuda_be *b, const struct layout *L);
struct trk_cu_job make_job(struct cuda_be *b, int row0, int row1, bool first);
bool hands_over(const struct cuda_be *b);
int launch_rows(struct cuda_be *b, int row0, int row1, bool first, bool publish = false);
int queue_rois(struct cuda_be *b, const struct trk_roi *rois);
int queue_blobs(struct cuda_be *b);
void decode_blobs(struct cuda_be *b);
int reset_if_dirty(struct cuda_be *b);
int submit_impl(struct cuda_be *b, const struct trk_image *img, const struct trk_roi *rois);
void begin_call(struct cuda_be *b, bool rmode);
int end_call(struct cuda_be *b, int err);
int cu_submit(void *self, const struct trk_image *img, const struct trk_roi *rois);
/* -- cuda_device_image.cu */
bool device_in_place(const struct trk_image *img, struct trk_plane_layout *wide_out = NULL);
int queue_device_frame(struct cuda_be *b, const struct trk_image *img, const struct layout *L);
int queue_whole(struct cuda_be *b, const struct layout *L, int height);
int queue_finish(struct cuda_be *b);
int submit_device(struct cuda_be *b, const struct trk_image *img, const struct trk_roi *rois,
                  const struct layout *L);
/* -- cuda_regional.cu */
int regions_set_objects(struct cuda_be *b, const struct trk_object_def *objs, int n);
int cu_submit_regions(void *self, const struct trk_image *img, const struct trk_region *regs,
                      int n);
int wait_regions(struct cuda_be *b, struct trk_obj_result *out, struct trk_backend_timing *t);
/* -- gather.cu */
int cu_gather(void *self, const struct trk_gather_point *pts, int n);
void cu_gathered(void *self, struct trk_gather_value *out, int n);
void free_gather(struct cuda_be *b);
/* This submit's gather (gather_n points; none: nothing queued) of device
 * image img on the kernel stream, which must be ordered after the
 * image's producer already (queue_device_frame). */
int queue_gather(struct cuda_be *b, const struct trk_image *img);
/* A submit without objects that has points to read: after the legacy
 * stream's work, only the gather, then ev_done. */
int gather_only(struct cuda_be *b, const struct trk_image *img);
/* -- cuda_wait.cu */
cudaError_t wait_event(cudaEvent_t ev);
float span(cudaEvent_t a, cudaEvent_t z);
float elapsed(cudaEvent_t a, cudaEvent_t z);
void decode(const struct trk_cu_acc *acc, const int *pos, int n, struct trk_obj_result *out);
int cu_wait(void *self, struct trk_obj_result *out, struct trk_backend_timing *t);
int cu_blobs(void *self, int obj, const struct trk_blob **out);

} // namespace trk_cuda

#endif
