/* The pre-filter on the GPU: gpu/prefilter.h's integer separable Gaussian,
 * bit for bit, as two kernels with shared-memory tiles and aprons (the
 * design of seeds 000 and 001: a block loads its tile plus the r samples
 * each side that its outputs reach, once, and every output then reads only
 * shared memory). Borders replicate: apron loads clamp to the grid, where
 * seed 001 zero-filled or wrapped.
 *
 * The frame comes from the upload buffer and goes to a second device frame
 * of the same layout, which the fused (or any) kernel then reads unchanged;
 * the 16-bit intermediate lives in device memory between the two launches.
 * One launch per pass covers every grid of the frame (blockIdx.z = grid). */
#include "cuda_internal.cuh"

namespace
{

static_assert(TRK_PF_H_BX % 32 == 0 && TRK_PF_H_BX * TRK_PF_H_BY <= 1024, "h block size");
static_assert(TRK_PF_V_BX == 32 && TRK_PF_V_BX * TRK_PF_V_BY <= 1024, "v block size");
static_assert(TRK_PF_V_ROWS % TRK_PF_V_BY == 0, "v tile rows: whole rows per thread");

/* One grid of the frame as the kernels see it. */
struct pf_grid {
    const uint8_t *src; /* first sample of the grid, row 0 */
    uint8_t *dst;
    int src_pitch, dst_pitch, step;
    int width, height;
    int kx, ky;
    uint16_t *tmp; /* the grid's slab of the intermediate */
};

struct pf_job {
    struct pf_grid g[TRK_PREFILTER_MAX_CHANS];
    struct trk_prefilter_kernel k[2];
    int tmp_pitch; /* elements */
};

__device__ __forceinline__ int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Horizontal pass. Grid: x tiles of TRK_PF_H_BX outputs, y tiles of
 * TRK_PF_H_BY rows, z = grid index; one thread per output sample.
 * Shared: the kernel's weights and, per row of the tile, its TRK_PF_H_BX
 * samples plus r on each side (clamped to the row: replicated borders).
 * Reads are byte-wide from global memory (samples may be strided: packed
 * RGB, YUYV, NV12's UV); each is loaded once per tile. No atomics. */
__global__ void pf_h_kernel(const struct pf_job job)
{
    __shared__ int s_w[TRK_PREFILTER_TAPS];
    __shared__ uint8_t s_in[TRK_PF_H_BY][TRK_PF_H_BX + 2 * TRK_PREFILTER_MAX_RADIUS];
    const struct pf_grid &g = job.g[blockIdx.z];
    const struct trk_prefilter_kernel &k = job.k[g.kx];
    const int r = k.radius;
    const int x0 = blockIdx.x * TRK_PF_H_BX, y = blockIdx.y * TRK_PF_H_BY + threadIdx.y;
    /* Whole blocks past this grid's size leave together (before any barrier). */
    if (x0 >= g.width || blockIdx.y * TRK_PF_H_BY >= g.height) return;
    const int tid = threadIdx.y * TRK_PF_H_BX + threadIdx.x;
    if (tid <= 2 * r) s_w[tid] = k.w[tid];
    const int yc = y < g.height ? y : g.height - 1; /* rows past the end load, store nothing */
    const uint8_t *row = g.src + (size_t)yc * g.src_pitch;
    for (int i = threadIdx.x; i < TRK_PF_H_BX + 2 * r; i += TRK_PF_H_BX)
        s_in[threadIdx.y][i] = row[(size_t)clampi(x0 - r + i, 0, g.width - 1) * g.step];
    __syncthreads();
    const int x = x0 + threadIdx.x;
    if (x >= g.width || y >= g.height) return;
    const uint8_t *p = &s_in[threadIdx.y][threadIdx.x];
    uint32_t acc = 0;
    for (int t = 0; t <= 2 * r; t++)
        acc += (uint32_t)s_w[t] * p[t];
    g.tmp[(size_t)y * job.tmp_pitch + x] = (uint16_t)acc; /* <= 255 * 256 */
}

/* Vertical pass. Grid: x tiles of TRK_PF_V_BX columns, y tiles of
 * TRK_PF_V_ROWS rows, z = grid index; each thread computes TRK_PF_V_ROWS /
 * TRK_PF_V_BY outputs of its column. Shared: the weights and the tile's
 * 16-bit rows plus r above and below (clamped: replicated borders); a warp
 * reads one shared row, consecutive columns (no bank conflicts). Output:
 * (sum + 2^15) >> 16, one byte per sample, at the grid's step. No atomics. */
__global__ void pf_v_kernel(const struct pf_job job)
{
    __shared__ int s_w[TRK_PREFILTER_TAPS];
    __shared__ uint16_t s_t[TRK_PF_V_ROWS + 2 * TRK_PREFILTER_MAX_RADIUS][TRK_PF_V_BX];
    const struct pf_grid &g = job.g[blockIdx.z];
    const struct trk_prefilter_kernel &k = job.k[g.ky];
    const int r = k.radius;
    const int x = blockIdx.x * TRK_PF_V_BX + threadIdx.x, y0 = blockIdx.y * TRK_PF_V_ROWS;
    if (blockIdx.x * TRK_PF_V_BX >= g.width || y0 >= g.height) return;
    const int tid = threadIdx.y * TRK_PF_V_BX + threadIdx.x;
    if (tid <= 2 * r) s_w[tid] = k.w[tid];
    const int xc = x < g.width ? x : g.width - 1;
    for (int i = threadIdx.y; i < TRK_PF_V_ROWS + 2 * r; i += TRK_PF_V_BY) {
        const int yy = clampi(y0 - r + i, 0, g.height - 1);
        s_t[i][threadIdx.x] = g.tmp[(size_t)yy * job.tmp_pitch + xc];
    }
    __syncthreads();
    if (x >= g.width) return;
    for (int j = threadIdx.y; j < TRK_PF_V_ROWS; j += TRK_PF_V_BY) {
        const int y = y0 + j;
        if (y >= g.height) break;
        uint32_t acc = 0;
        for (int t = 0; t <= 2 * r; t++)
            acc += (uint32_t)s_w[t] * s_t[j + t][threadIdx.x];
        g.dst[(size_t)y * g.dst_pitch + (size_t)x * g.step] = (uint8_t)((acc + 32768) >> 16);
    }
}

} // namespace

static int pf_run(const struct pf_job &job, int n, int gw, int gh, cudaStream_t s);

int trk_cu_prefilter_launch(const struct trk_prefilter *pf, const struct trk_cu_frame *src,
                            const struct trk_cu_frame *dst, uint16_t *d_tmp, int tmp_pitch,
                            size_t tmp_slab, cudaStream_t s)
{
    if (!pf || pf->sigma <= 0 || !src || !dst || !d_tmp || tmp_pitch < src->width ||
        dst->width != src->width || dst->height != src->height || dst->fmt != src->fmt)
        return TRK_EINVAL;
    struct trk_prefilter_chan ch[TRK_PREFILTER_MAX_CHANS];
    const int n = trk_prefilter_chans((enum trk_pixfmt)src->fmt, src->width, src->height, ch);
    if (n <= 0) return TRK_EINVAL;
    struct pf_job job;
    memset(&job, 0, sizeof(job));
    job.k[0] = pf->k[0];
    job.k[1] = pf->k[1];
    job.tmp_pitch = tmp_pitch;
    int gw = 0, gh = 0; /* the largest grid: the launch covers it */
    for (int i = 0; i < n; i++) {
        struct pf_grid &g = job.g[i];
        g.src = src->plane[ch[i].plane] + ch[i].offset;
        g.dst = const_cast<uint8_t *>(dst->plane[ch[i].plane]) + ch[i].offset;
        g.src_pitch = src->pitch[ch[i].plane];
        g.dst_pitch = dst->pitch[ch[i].plane];
        g.step = ch[i].step;
        g.width = ch[i].width;
        g.height = ch[i].height;
        g.kx = ch[i].kx;
        g.ky = ch[i].ky;
        g.tmp = d_tmp + (size_t)i * tmp_slab;
        if ((size_t)tmp_pitch * (size_t)g.height > tmp_slab) return TRK_EINVAL;
        gw = g.width > gw ? g.width : gw;
        gh = g.height > gh ? g.height : gh;
    }
    return pf_run(job, n, gw, gh, s);
}

int trk_cu_prefilter_grid_launch(const struct trk_prefilter *pf, const uint8_t *d_src,
                                 int src_pitch, uint8_t *d_dst, int dst_pitch, int width,
                                 int height, uint16_t *d_tmp, int tmp_pitch, cudaStream_t s)
{
    if (!pf || pf->sigma <= 0 || !d_src || !d_dst || !d_tmp || width <= 0 || height <= 0 ||
        tmp_pitch < width)
        return TRK_EINVAL;
    struct pf_job job;
    memset(&job, 0, sizeof(job));
    job.k[0] = pf->k[0];
    job.k[1] = pf->k[1];
    job.tmp_pitch = tmp_pitch;
    job.g[0] = (struct pf_grid){ d_src, d_dst,  src_pitch,          dst_pitch,          1,
                                 width, height, TRK_PREFILTER_FULL, TRK_PREFILTER_FULL, d_tmp };
    return pf_run(job, 1, width, height, s);
}

/* Both passes over the job's n grids, the largest gw x gh. */
static int pf_run(const struct pf_job &job, int n, int gw, int gh, cudaStream_t s)
{
    const dim3 hb(TRK_PF_H_BX, TRK_PF_H_BY), vb(TRK_PF_V_BX, TRK_PF_V_BY);
    const dim3 hg((gw + TRK_PF_H_BX - 1) / TRK_PF_H_BX, (gh + TRK_PF_H_BY - 1) / TRK_PF_H_BY, n);
    const dim3 vg((gw + TRK_PF_V_BX - 1) / TRK_PF_V_BX, (gh + TRK_PF_V_ROWS - 1) / TRK_PF_V_ROWS,
                  n);
    pf_h_kernel<<<hg, hb, 0, s>>>(job);
    TRK_CUDA_TRY(cudaGetLastError());
    pf_v_kernel<<<vg, vb, 0, s>>>(job);
    TRK_CUDA_TRY(cudaGetLastError());
    return 0;
}
