/* The two simple designs the fused kernel is measured against, and the ROI
 * mask builder they share with it:
 *   "lut":   one thread per pixel, per-channel lookup tables -> object
 *            bitmask, one shared atomic per field per matching object.
 *   "naive": one thread per pixel looping over every object's colour box.
 * Both keep block-local accumulators in shared memory, flushed once per
 * block. */
#include "cuda_internal.cuh"

namespace
{

static_assert(TRK_LUT_BX * TRK_LUT_BY <= 1024 && (TRK_LUT_BX * TRK_LUT_BY) % 32 == 0,
              "lut block size");

/* Shared accumulators of one block: the layout of cuda_internal.cuh. */
typedef struct trk_cu_sacc sacc;

__device__ __forceinline__ void sacc_add(const sacc &a, int k, int x, int y)
{
    atomicAdd(&a.cnt[k], 1u);
    atomicAdd(&a.sx[k], (unsigned long long)x);
    atomicAdd(&a.sy[k], (unsigned long long)y);
    atomicMax(&a.nx0[k], TRK_ACC_BIG - (unsigned)x);
    atomicMax(&a.ny0[k], TRK_ACC_BIG - (unsigned)y);
    atomicMax(&a.px1[k], (unsigned)x + 1u);
    atomicMax(&a.py1[k], (unsigned)y + 1u);
    trk_cu_sacc_moments(a, k, (unsigned)x, (unsigned)y, 1u, 0u, 0u);
}

/* The part of lut_kernel and naive_kernel around their per-pixel test,
 * after each has loaded its own tables into shared memory: zero the block's
 * accumulators (and block (0, 0) the next frame's), then sync. */
__device__ __forceinline__ void block_begin(const struct trk_cu_job &job, const sacc &a, int n,
                                            int tid, int nthr)
{
    trk_cu_sacc_zero(a, n, tid, nthr);
    if (blockIdx.x == 0 && blockIdx.y == 0 && job.acc_clear)
        for (int i = tid; i < n; i += nthr)
            job.acc_clear[i] = trk_cu_acc{};
    __syncthreads();
}

/* This thread's pixel (x, y) and its channel triples p (the spaces the
 * tables need); false for threads past the frame's or the band's edge. */
__device__ __forceinline__ bool block_pixel(const struct trk_cu_job &job, int &x, int &y,
                                            struct trk_cu_px &p)
{
    x = blockIdx.x * blockDim.x + threadIdx.x;
    y = job.row0 + blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= job.f.width || y >= job.row1) return false;
    int na, nb, nc;
    trk_cu_native(job.f, x, y, na, nb, nc);
    trk_cu_triples(job.f, trk_fmt_is_yuv(job.f.fmt), trk_cu_need(job.lt), na, nb, nc, p);
    return true;
}

/* Grid: 2-D, one thread per pixel of rows [row0, row1), TRK_LUT_BX x TRK_LUT_BY
 * per block. Shared (trk_cu_table_smem): the whole table image, then the
 * block's accumulators.
 * Atomics: every matching (pixel, object) pair does one shared atomic per
 * field (7); the block flushes objects it saw with global atomics. */
__global__ void lut_kernel(const struct trk_cu_job job)
{
    extern __shared__ uint4 s_raw[];
    const struct trk_cu_lut &lt = job.lt;
    const int n = job.n_obj, nw = lt.nw;
    uint32_t *s_lut = reinterpret_cast<uint32_t *>(s_raw);
    const sacc a = trk_cu_sacc_at(s_lut + lt.words, n);
    const int tid = threadIdx.y * blockDim.x + threadIdx.x, nthr = blockDim.x * blockDim.y;
    for (int i = tid; i < lt.words / 4; i += nthr)
        s_raw[i] = reinterpret_cast<const uint4 *>(job.lut)[i];
    block_begin(job, a, n, tid, nthr);

    int x, y;
    struct trk_cu_px p;
    if (block_pixel(job, x, y, p)) {
        const int *rgb = p.c[TRK_SPACE_RGB];
        const unsigned cm = lt.ncls ? trk_cu_cls_bits(job.f, rgb[0], rgb[1], rgb[2]) : 0u;
        for (int w = 0; w < nw; w++) {
            uint32_t m = trk_cu_cls_word(lt, cm, w);
#pragma unroll
            for (int s = 0; s < TRK_SPACE_COUNT; s++) {
                if (!lt.has[s] || w < lt.wb[s] || w >= lt.we[s]) continue;
                m |= s_lut[lt.full_off[s][0] + p.c[s][0] * nw + w] &
                     s_lut[lt.full_off[s][1] + p.c[s][1] * nw + w] &
                     s_lut[lt.full_off[s][2] + p.c[s][2] * nw + w];
            }
            if (job.rowmask) m &= job.rowmask[(size_t)y * nw + w] & job.colmask[(size_t)x * nw + w];
            while (m) {
                const int bit = __ffs(m) - 1;
                m &= m - 1;
                sacc_add(a, w * 32 + bit, x, y);
            }
        }
    }
    __syncthreads();
    trk_cu_sacc_flush(a, job.acc, n, tid, nthr);
}

/* Grid: as lut_kernel. Shared (trk_cu_naive_smem): the objects (boxes,
 * spaces), their ROIs, then the accumulators. Every pixel tests every object: M box tests per
 * pixel. */
__global__ void naive_kernel(const struct trk_cu_job job)
{
    extern __shared__ uint4 s_raw[];
    const int n = job.n_obj;
    struct trk_cu_obj *s_obj = reinterpret_cast<struct trk_cu_obj *>(s_raw);
    struct trk_roi *s_roi = reinterpret_cast<struct trk_roi *>(s_obj + n);
    const sacc a = trk_cu_sacc_at(s_roi + n, n);
    const int tid = threadIdx.y * blockDim.x + threadIdx.x, nthr = blockDim.x * blockDim.y;
    for (int i = tid; i < n; i += nthr) {
        s_obj[i] = job.objs[i];
        s_roi[i] = job.rois ? job.rois[i] : trk_roi{ 0, 0, job.f.width - 1, job.f.height - 1 };
    }
    block_begin(job, a, n, tid, nthr);

    int x, y;
    struct trk_cu_px p;
    if (block_pixel(job, x, y, p)) {
        const int *rgb = p.c[TRK_SPACE_RGB];
        const unsigned cm = job.lt.ncls ? trk_cu_cls_bits(job.f, rgb[0], rgb[1], rgb[2]) : 0u;
        for (int k = 0; k < n; k++) {
            const struct trk_cu_obj &o = s_obj[k];
            const struct trk_roi &r = s_roi[k];
            const int s = o.space;
            if (x < r.x0 || x > r.x1 || y < r.y0 || y > r.y1) continue;
            const bool in = s == TRK_SPACE_CLASS ? (cm >> o.lo[0]) & 1u
                                                 : trk_box_match(o.lo, o.hi, s == TRK_SPACE_HSV,
                                                                 p.c[s][0], p.c[s][1], p.c[s][2]);
            if (in) sacc_add(a, k, x, y);
        }
    }
    __syncthreads();
    trk_cu_sacc_flush(a, job.acc, n, tid, nthr);
}

/* Grid: 1-D, one thread per row (i < H) or column (i >= H). Builds, per row
 * and per column, the bitmask of objects whose (clipped) ROI covers it; a
 * pixel then counts for object k only when both masks have bit k. */
__global__ void roimask_kernel(const struct trk_cu_job job, uint32_t *rowmask, uint32_t *colmask)
{
    const int H = job.f.height, W = job.f.width, nw = job.lt.nw;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= H + W) return;
    const bool row = i < H;
    const int c = row ? i : i - H;
    uint32_t *out = row ? rowmask + (size_t)c * nw : colmask + (size_t)c * nw;
    for (int w = 0; w < nw; w++) {
        uint32_t m = 0;
        for (int b = 0; b < 32; b++) {
            const int k = w * 32 + b;
            if (k >= job.n_obj) break;
            const struct trk_roi r = job.rois[k];
            const bool in = row ? (c >= r.y0 && c <= r.y1) : (c >= r.x0 && c <= r.x1);
            if (in) m |= 1u << b;
        }
        out[w] = m;
    }
}

} // namespace

int trk_cu_lut_setup(size_t smem)
{
    TRK_CUDA_TRY(
        cudaFuncSetAttribute(lut_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    return 0;
}

static bool job_ok(const struct trk_cu_job *job)
{
    return job && job->n_obj > 0 && job->n_obj <= TRK_MAX_OBJECTS && job->row0 >= 0 &&
           job->row1 <= job->f.height && job->row0 < job->row1 && job->acc;
}

int trk_cu_lut_launch(const struct trk_cu_job *job, cudaStream_t s)
{
    if (!job_ok(job) || !job->lut) return TRK_EINVAL;
    dim3 blk(TRK_LUT_BX, TRK_LUT_BY);
    dim3 grid((job->f.width + TRK_LUT_BX - 1) / TRK_LUT_BX,
              (job->row1 - job->row0 + TRK_LUT_BY - 1) / TRK_LUT_BY);
    lut_kernel<<<grid, blk, trk_cu_table_smem(job->lt, job->n_obj), s>>>(*job);
    TRK_CUDA_TRY(cudaGetLastError());
    return 0;
}

int trk_cu_naive_launch(const struct trk_cu_job *job, cudaStream_t s)
{
    if (!job_ok(job) || !job->objs) return TRK_EINVAL;
    dim3 blk(TRK_LUT_BX, TRK_LUT_BY);
    dim3 grid((job->f.width + TRK_LUT_BX - 1) / TRK_LUT_BX,
              (job->row1 - job->row0 + TRK_LUT_BY - 1) / TRK_LUT_BY);
    naive_kernel<<<grid, blk, trk_cu_naive_smem(job->n_obj), s>>>(*job);
    TRK_CUDA_TRY(cudaGetLastError());
    return 0;
}

int trk_cu_roimask_launch(const struct trk_cu_job *job, uint32_t *d_rowmask, uint32_t *d_colmask,
                          cudaStream_t s)
{
    if (!job || !job->rois || !d_rowmask || !d_colmask || job->n_obj <= 0) return TRK_EINVAL;
    const int n = job->f.height + job->f.width;
    roimask_kernel<<<(n + 255) / 256, 256, 0, s>>>(*job, d_rowmask, d_colmask);
    TRK_CUDA_TRY(cudaGetLastError());
    return 0;
}
