/* Seam carving on the GPU (gpu/seam.h): the definition's bytes and map.
 *
 * The host driver (gpu/seam_ref.c, trk_seam_run) prepares the source luma
 * and protection and calls one phase per direction; a phase here uploads
 * the grid of source indices and then, per seam, all on the device:
 *   1. cost_kernel: the definition's cost of every pixel, packed in 32 bits
 *      (energy low 16, protection bit 16), and row 0 of the cumulative map;
 *   2. the cumulative map, rows 1..h-1, one of two ways (the variant):
 *      rows: the seed's scheme, one launch per row, one thread per pixel
 *      (the launch boundary is the barrier between rows);
 *      tiled: TRK_SEAM_ROWS_PER_LAUNCH rows per launch: each block keeps a
 *      row segment in shared memory, widened by one halo pixel per row on
 *      each side, and steps down the rows there (trapezoid tiles: the
 *      halo's values go stale one pixel a row from the edges inward, never
 *      reaching the columns the block writes);
 *   3. the trace: one block finds the last row's leftmost minimum, then
 *      rows: one thread walks the parents up row by row (serial, as in the
 *      seed: it keeps the map on the device); tiled: the map kernel left
 *      each pixel's parent and, per band, where a seam entering its last
 *      row leaves its first, so one thread crosses a band a step and then
 *      one thread per band fills the band's rows in parallel; both count
 *      the protected pixels cut;
 *   4. remove_kernel: the grid without the seam, into the other buffer.
 * The grid keeps the phase's first width as its pitch. Scratch is sized at
 * create; every launch goes on the instance's stream. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>

#include "log_hook.h"
#include "../seam_impl.h"
#include "cuda_internal.cuh" /* TRK_CUDA_TRY */

#define LOG_TAG "seam"

/* Threads per block of the one-pixel-per-thread kernels (a multiple of 32). */
#define TRK_SEAM_BLOCK 256
/* Tiled map: threads (= segment width) per block, and rows per launch (a
 * band); the block writes TRK_SEAM_TILE_W - 2 * TRK_SEAM_ROWS_PER_LAUNCH
 * columns, so the rows must leave some: 2 * rows < width. The band trace
 * keeps one int per band in shared memory (TRK_SEAM_MAX_SIDE / rows + 1)
 * and walks them with the 1024 threads of one block. */
#define TRK_SEAM_TILE_W          256
#define TRK_SEAM_ROWS_PER_LAUNCH 32
static_assert(TRK_SEAM_BLOCK % 32 == 0 && TRK_SEAM_BLOCK <= 1024, "block size");
static_assert(TRK_SEAM_TILE_W % 32 == 0 && TRK_SEAM_TILE_W <= 1024, "tile width");
static_assert(2 * TRK_SEAM_ROWS_PER_LAUNCH < TRK_SEAM_TILE_W, "tile must keep output columns");
/* The tile kernel's static shared memory (costs, parents, two map rows)
 * must stay under the 48 KiB a block gets without opting in. */
static_assert(TRK_SEAM_ROWS_PER_LAUNCH * TRK_SEAM_TILE_W * 5 + 2 * 8 * TRK_SEAM_TILE_W <= 48 * 1024,
              "tile shared memory");

struct trk_seam_cuda {
    int max_w, max_h;
    cudaStream_t st;
    cudaEvent_t ev[2];
    uint8_t *d_lum, *d_prot; /* per source pixel */
    int32_t *d_idx[2];       /* ping-pong grids */
    uint32_t *d_cost;
    unsigned long long *d_m; /* the cumulative map */
    int32_t *d_seam;
    int8_t *d_dir;                 /* tiled: parents */
    int32_t *d_jump;               /* tiled: band crossings */
    unsigned long long *d_cut;     /* protected pixels cut, this phase */
    struct trk_seam_scratch *host; /* the host side's scratch */
};

namespace
{

/* One phase's view of the device arrays. */
struct seam_dev {
    const uint8_t *lum, *prot;
    const int32_t *g; /* the current grid */
    uint32_t *cost;
    unsigned long long *m;
    int8_t *dir;   /* tiled: each pixel's parent, -1, 0, +1 (ties as the trace) */
    int32_t *jump; /* tiled: on a band's last row, the seam's column on its first */
    int pitch, w, h;
};

#define SEAM_INF (~0ull >> 1)

__device__ __forceinline__ unsigned long long cost64(uint32_t c)
{
    return ((unsigned long long)(c >> 16) << 32) | (c & 0xffffu);
}

/* Grid: 2-D, one thread per pixel of the w x h grid. No shared memory: the
 * four neighbours' luma is gathered through the index grid (rows are
 * read coalesced, the luma gathers mostly hit L1/L2). Writes the cost and,
 * for row 0, the map. */
__global__ void cost_kernel(struct seam_dev d)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x >= d.w) return;
    const int32_t *row = d.g + (size_t)y * d.pitch;
    const int xl = x > 0 ? x - 1 : 0, xr = x < d.w - 1 ? x + 1 : d.w - 1;
    const int yu = y > 0 ? y - 1 : 0, yd = y < d.h - 1 ? y + 1 : d.h - 1;
    const int dx = (int)d.lum[row[xr]] - (int)d.lum[row[xl]];
    const int dy =
        (int)d.lum[d.g[(size_t)yd * d.pitch + x]] - (int)d.lum[d.g[(size_t)yu * d.pitch + x]];
    const uint32_t c = (uint32_t)(abs(dx) + abs(dy)) | (d.prot[row[x]] ? 0x10000u : 0u);
    d.cost[(size_t)y * d.pitch + x] = c;
    if (y == 0) d.m[x] = cost64(c);
}

/* The seed's scheme: row y of the map from row y - 1. Grid: 1-D, one
 * thread per pixel of the row; no shared memory. */
__global__ void dp_row_kernel(struct seam_dev d, int y)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= d.w) return;
    const unsigned long long *up = d.m + (size_t)(y - 1) * d.pitch;
    unsigned long long b = up[x];
    if (x > 0) b = min(b, up[x - 1]);
    if (x < d.w - 1) b = min(b, up[x + 1]);
    d.m[(size_t)y * d.pitch + x] = cost64(d.cost[(size_t)y * d.pitch + x]) + b;
}

/* Rows y0 .. y0 + rows - 1 of the map in one launch (a band). Grid: 1-D,
 * block b writes columns b*T .. b*T + T - 1, T = TRK_SEAM_TILE_W - 2 R;
 * thread t owns column b*T - R + t. Shared: the band's costs, two rows of
 * the map's segment (the previous and the current row) and the parent of
 * every pixel of the band (-1, 0, +1, chosen as the trace chooses): 44 KiB
 * at 256 x 32. Columns outside the image hold
 * SEAM_INF, so the minimum needs no edge tests; the segment's own two ends
 * have no outer neighbour and go stale, one more pixel per row, inside the
 * R-wide halo. A seam climbs at most one column a row, so from any column
 * the block writes it stays inside the segment's valid part all the way up
 * the band: each such column's thread follows the parents to the band's
 * first row and stores that column in jump (on the band's last row), and
 * the trace then crosses the band in one step. */
__global__ void __launch_bounds__(TRK_SEAM_TILE_W)
    dp_tile_kernel(struct seam_dev d, int y0, int rows)
{
    __shared__ unsigned long long s_row[2][TRK_SEAM_TILE_W];
    __shared__ int8_t s_dir[TRK_SEAM_ROWS_PER_LAUNCH][TRK_SEAM_TILE_W];
    __shared__ uint32_t s_cost[TRK_SEAM_ROWS_PER_LAUNCH][TRK_SEAM_TILE_W];
    const int R = TRK_SEAM_ROWS_PER_LAUNCH, T = TRK_SEAM_TILE_W - 2 * R;
    const int t = threadIdx.x, x = blockIdx.x * T - R + t;
    const bool in = x >= 0 && x < d.w, out = in && t >= R && t < R + T;
    s_row[0][t] = in ? d.m[(size_t)(y0 - 1) * d.pitch + x] : SEAM_INF;
    /* The band's costs first, all loads in flight at once: the row loop
     * below is a chain of R dependent steps and must not wait on memory. */
#pragma unroll
    for (int r = 0; r < TRK_SEAM_ROWS_PER_LAUNCH; r++)
        if (in && r < rows) s_cost[r][t] = d.cost[(size_t)(y0 + r) * d.pitch + x];
    __syncthreads();
    for (int r = 0; r < rows; r++) {
        const unsigned long long *prev = s_row[r & 1];
        const int y = y0 + r;
        unsigned long long v = SEAM_INF;
        int8_t dir = 0;
        if (in) {
            unsigned long long b = prev[t];
            if (t > 0 && prev[t - 1] < b) b = prev[t - 1], dir = -1;
            if (t < TRK_SEAM_TILE_W - 1 && prev[t + 1] < b) b = prev[t + 1], dir = 1;
            v = cost64(s_cost[r][t]) + b;
            if (out) { /* the map itself: only where the next band and the trace read it */
                if (r == rows - 1) d.m[(size_t)y * d.pitch + x] = v;
                d.dir[(size_t)y * d.pitch + x] = dir;
            }
        }
        s_dir[r][t] = dir;
        s_row[(r + 1) & 1][t] = v;
        __syncthreads();
    }
    if (!out) return;
    int c = t;
    for (int r = rows - 1; r > 0; r--)
        c += s_dir[r][c];
    d.jump[(size_t)(y0 + rows - 1) * d.pitch + x] = x + (c - t);
}

/* The last row's leftmost minimum into *s_x (all threads of the block
 * call it): a block reduction over (value, column) pairs. */
__device__ void last_row_min(const struct seam_dev &d, int *s_x_out)
{
    __shared__ unsigned long long s_v[1024];
    __shared__ int s_x[1024];
    const int t = threadIdx.x;
    const unsigned long long *last = d.m + (size_t)(d.h - 1) * d.pitch;
    unsigned long long bv = ~0ull;
    int bx = 0;
    for (int x = t; x < d.w; x += blockDim.x)
        if (last[x] < bv) bv = last[x], bx = x; /* strictly less: the leftmost of this thread's */
    s_v[t] = bv;
    s_x[t] = bx;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s && (s_v[t + s] < s_v[t] || (s_v[t + s] == s_v[t] && s_x[t + s] < s_x[t]))) {
            s_v[t] = s_v[t + s];
            s_x[t] = s_x[t + s];
        }
        __syncthreads();
    }
    if (t == 0) *s_x_out = s_x[0];
    __syncthreads();
}

/* The seed's trace. One block: the last row's minimum, then thread 0 walks
 * the parents up from the map (ties: the middle, then the left), writes
 * the seam and counts the protected pixels on it. */
__global__ void __launch_bounds__(1024)
    trace_kernel(struct seam_dev d, int32_t *seam, unsigned long long *cut)
{
    __shared__ int s_start;
    last_row_min(d, &s_start);
    if (threadIdx.x != 0) return;
    int x = s_start;
    unsigned long long n = 0;
    for (int y = d.h - 1;; y--) {
        seam[y] = x;
        n += d.prot[d.g[(size_t)y * d.pitch + x]] != 0;
        if (y == 0) break;
        const unsigned long long *up = d.m + (size_t)(y - 1) * d.pitch;
        int b = x;
        if (x > 0 && up[x - 1] < up[b]) b = x - 1;
        if (x < d.w - 1 && up[x + 1] < up[b]) b = x + 1;
        x = b;
    }
    *cut += n;
}

/* The tiled form's trace. One block: the last row's minimum; thread 0
 * crosses the bands (rows 1 + i R .. i R + R) bottom-up by their jump
 * entries, one step a band, noting where the seam leaves each band's last
 * row; then thread i follows band i's parents, in parallel, writing the
 * seam and counting protected pixels (shared atomics, one global add). */
__global__ void __launch_bounds__(1024)
    trace_bands_kernel(struct seam_dev d, int32_t *seam, unsigned long long *cut)
{
    __shared__ int s_start, s_bottom[TRK_SEAM_MAX_SIDE / TRK_SEAM_ROWS_PER_LAUNCH + 1];
    __shared__ unsigned long long s_n;
    const int R = TRK_SEAM_ROWS_PER_LAUNCH, bands = (d.h - 1 + R - 1) / R;
    last_row_min(d, &s_start);
    if (threadIdx.x == 0) {
        int x = s_start;
        for (int i = bands - 1; i >= 0; i--) {
            const int first = 1 + i * R, last = min(first + R - 1, d.h - 1);
            s_bottom[i] = x;
            x = d.jump[(size_t)last * d.pitch + x];
            x += d.dir[(size_t)first * d.pitch + x];
        }
        seam[0] = x;
        s_n = d.prot[d.g[x]] != 0;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < bands; i += blockDim.x) {
        const int first = 1 + i * R, last = min(first + R - 1, d.h - 1);
        int x = s_bottom[i];
        unsigned long long n = 0;
        for (int y = last; y >= first; y--) {
            seam[y] = x;
            n += d.prot[d.g[(size_t)y * d.pitch + x]] != 0;
            x += d.dir[(size_t)y * d.pitch + x];
        }
        atomicAdd(&s_n, n);
    }
    __syncthreads();
    if (threadIdx.x == 0) *cut += s_n;
}

/* Grid: 2-D, one thread per pixel of the (w - 1) x h result; no shared
 * memory. Pixels right of the seam come from one column further right. */
__global__ void remove_kernel(const int32_t *g, int32_t *out, const int32_t *seam, int pitch, int w)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x >= w - 1) return;
    const size_t o = (size_t)y * pitch;
    out[o + x] = g[o + x + (x >= seam[y])];
}

} // namespace

/* The cumulative map of the current grid, rows 1..h-1, by variant. */
static int launch_map(const struct trk_seam_cuda *s, const struct seam_dev &d, int variant)
{
    if (variant == TRK_SEAM_CUDA_ROWS) {
        const unsigned blocks = (unsigned)((d.w + TRK_SEAM_BLOCK - 1) / TRK_SEAM_BLOCK);
        for (int y = 1; y < d.h; y++)
            dp_row_kernel<<<blocks, TRK_SEAM_BLOCK, 0, s->st>>>(d, y);
    } else {
        const int T = TRK_SEAM_TILE_W - 2 * TRK_SEAM_ROWS_PER_LAUNCH;
        const unsigned blocks = (unsigned)((d.w + T - 1) / T);
        for (int y = 1; y < d.h; y += TRK_SEAM_ROWS_PER_LAUNCH) {
            const int rows =
                d.h - y < TRK_SEAM_ROWS_PER_LAUNCH ? d.h - y : TRK_SEAM_ROWS_PER_LAUNCH;
            dp_tile_kernel<<<blocks, TRK_SEAM_TILE_W, 0, s->st>>>(d, y, rows);
        }
    }
    TRK_CUDA_TRY(cudaGetLastError());
    return 0;
}

/* k seams off the w x h grid in d_idx[0] (pitch w); returns which buffer
 * holds the result. */
static int carve_seams(struct trk_seam_cuda *s, int variant, int w, int h, int k, int *cur)
{
    struct seam_dev d = {
        s->d_lum, s->d_prot, NULL, s->d_cost, s->d_m, s->d_dir, s->d_jump, w, w, h
    };
    int c = 0;
    for (; k > 0; k--, d.w--) {
        d.g = s->d_idx[c];
        const dim3 grid((unsigned)((d.w + TRK_SEAM_BLOCK - 1) / TRK_SEAM_BLOCK), (unsigned)h);
        cost_kernel<<<grid, TRK_SEAM_BLOCK, 0, s->st>>>(d);
        int rc = launch_map(s, d, variant);
        if (rc) return rc;
        if (variant == TRK_SEAM_CUDA_ROWS || h == 1)
            trace_kernel<<<1, 1024, 0, s->st>>>(d, s->d_seam, s->d_cut);
        else
            trace_bands_kernel<<<1, 1024, 0, s->st>>>(d, s->d_seam, s->d_cut);
        const dim3 rgrid((unsigned)((d.w - 1 + TRK_SEAM_BLOCK - 1) / TRK_SEAM_BLOCK), (unsigned)h);
        if (d.w > 1)
            remove_kernel<<<rgrid, TRK_SEAM_BLOCK, 0, s->st>>>(s->d_idx[c], s->d_idx[c ^ 1],
                                                               s->d_seam, d.pitch, d.w);
        TRK_CUDA_TRY(cudaGetLastError());
        c ^= 1;
    }
    *cur = c;
    return 0;
}

/* What a carve hands its phases. */
struct seam_run {
    struct trk_seam_cuda *s;
    int variant;
    int uploaded; /* luma and protection are on the device */
    double ms;
};

static int cuda_phase(struct seam_ctx *c, int w, int h, int k)
{
    struct seam_run *run = (struct seam_run *)c->user;
    struct trk_seam_cuda *s = run->s;
    if (k == 0) return 0;
    if (!run->uploaded) {
        TRK_CUDA_TRY(cudaMemcpyAsync(s->d_lum, c->lum, c->n, cudaMemcpyHostToDevice, s->st));
        TRK_CUDA_TRY(cudaMemcpyAsync(s->d_prot, c->prot, c->n, cudaMemcpyHostToDevice, s->st));
        run->uploaded = 1;
    }
    TRK_CUDA_TRY(cudaMemcpyAsync(s->d_idx[0], c->idx, (size_t)w * h * sizeof(int32_t),
                                 cudaMemcpyHostToDevice, s->st));
    TRK_CUDA_TRY(cudaMemsetAsync(s->d_cut, 0, sizeof *s->d_cut, s->st));
    TRK_CUDA_TRY(cudaEventRecord(s->ev[0], s->st));
    int cur, rc = carve_seams(s, run->variant, w, h, k, &cur);
    if (rc) return rc;
    TRK_CUDA_TRY(cudaEventRecord(s->ev[1], s->st));
    /* Back to compact rows of w - k. */
    TRK_CUDA_TRY(cudaMemcpy2DAsync(c->idx, (size_t)(w - k) * sizeof(int32_t), s->d_idx[cur],
                                   (size_t)w * sizeof(int32_t), (size_t)(w - k) * sizeof(int32_t),
                                   (size_t)h, cudaMemcpyDeviceToHost, s->st));
    unsigned long long cut = 0;
    TRK_CUDA_TRY(cudaMemcpyAsync(&cut, s->d_cut, sizeof cut, cudaMemcpyDeviceToHost, s->st));
    TRK_CUDA_TRY(cudaStreamSynchronize(s->st));
    float ms = 0;
    TRK_CUDA_TRY(cudaEventElapsedTime(&ms, s->ev[0], s->ev[1]));
    run->ms += ms;
    c->cut_protected += (long)cut;
    return 0;
}

extern "C" int trk_seam_cuda_carve(struct trk_seam_cuda *s, int variant,
                                   const struct trk_seam_job *job, struct trk_seam_info *info,
                                   double *device_ms)
{
    if (!s || variant < 0 || variant >= TRK_SEAM_CUDA_VARIANTS) return TRK_EINVAL;
    int rc = trk_seam_check(job);
    if (rc) return rc;
    /* The source planes are uploaded whole (max_w * max_h bytes): the
     * frame must not be larger, and its pixel count fits them. */
    if (job->src->width > s->max_w || job->src->height > s->max_h) return TRK_ETOOBIG;
    struct seam_run run = { s, variant, 0, 0.0 };
    struct trk_seam_job j = *job;
    if (!j.scratch) j.scratch = s->host;
    rc = trk_seam_run(&j, info, cuda_phase, &run);
    if (device_ms) *device_ms = run.ms;
    return rc;
}

extern "C" void trk_seam_cuda_destroy(struct trk_seam_cuda **sp)
{
    struct trk_seam_cuda *s = sp ? *sp : NULL;
    if (!s) return;
    cudaFree(s->d_cut);
    cudaFree(s->d_jump);
    cudaFree(s->d_dir);
    cudaFree(s->d_seam);
    cudaFree(s->d_m);
    cudaFree(s->d_cost);
    cudaFree(s->d_idx[1]);
    cudaFree(s->d_idx[0]);
    cudaFree(s->d_prot);
    cudaFree(s->d_lum);
    if (s->ev[1]) cudaEventDestroy(s->ev[1]);
    if (s->ev[0]) cudaEventDestroy(s->ev[0]);
    if (s->st) cudaStreamDestroy(s->st);
    trk_seam_scratch_destroy(&s->host);
    free(s);
    *sp = NULL;
}

extern "C" int trk_seam_cuda_create(struct trk_seam_cuda **out, int max_w, int max_h)
{
    if (!out) return TRK_EINVAL;
    *out = NULL;
    struct trk_seam_scratch *host = NULL; /* checks the sizes too */
    int rc = trk_seam_scratch_create(&host, max_w, max_h), devs = 0;
    if (rc) return rc;
    if (cudaGetDeviceCount(&devs) != cudaSuccess || devs < 1) {
        cudaGetLastError(); /* clear it: no GPU is not an error of later calls */
        log_info("no CUDA device: the CUDA form is off");
        trk_seam_scratch_destroy(&host);
        return TRK_ENODEV;
    }
    struct trk_seam_cuda *s = (struct trk_seam_cuda *)calloc(1, sizeof *s);
    if (!s) {
        trk_seam_scratch_destroy(&host);
        return TRK_ENOMEM;
    }
    s->max_w = max_w;
    s->max_h = max_h;
    s->host = host;
    const size_t n = (size_t)max_w * max_h, side = (size_t)(max_w > max_h ? max_w : max_h);
    const bool ok =
        cudaStreamCreateWithFlags(&s->st, cudaStreamNonBlocking) == cudaSuccess &&
        cudaEventCreate(&s->ev[0]) == cudaSuccess && cudaEventCreate(&s->ev[1]) == cudaSuccess &&
        cudaMalloc(&s->d_lum, n) == cudaSuccess && cudaMalloc(&s->d_prot, n) == cudaSuccess &&
        cudaMalloc(&s->d_idx[0], n * sizeof(int32_t)) == cudaSuccess &&
        cudaMalloc(&s->d_idx[1], n * sizeof(int32_t)) == cudaSuccess &&
        cudaMalloc(&s->d_cost, n * sizeof(uint32_t)) == cudaSuccess &&
        cudaMalloc(&s->d_m, n * sizeof(unsigned long long)) == cudaSuccess &&
        cudaMalloc(&s->d_seam, side * sizeof(int32_t)) == cudaSuccess &&
        cudaMalloc(&s->d_dir, n) == cudaSuccess &&
        cudaMalloc(&s->d_jump, n * sizeof(int32_t)) == cudaSuccess &&
        cudaMalloc(&s->d_cut, sizeof(unsigned long long)) == cudaSuccess;
    if (!ok) {
        cudaError_t e = cudaGetLastError();
        log_error("device setup failed: %s", cudaGetErrorString(e));
        trk_seam_cuda_destroy(&s);
        return e == cudaErrorMemoryAllocation ? TRK_ENOMEM : TRK_ENODEV;
    }
    *out = s;
    return 0;
}
