/* Canny on the GPU (gpu/canny.h), bit for bit the definition, in the
 * seed's shape (000): the integer Gaussian (prefilter.cu's kernels, the
 * same ones the backend runs), Sobel and non-maximum suppression on a
 * shared-memory tile with an apron, and hysteresis by tile-local iterated
 * propagation (Luo & Duraiswami, as the seed does it): each block loads its
 * tile of the class map with a one-pixel apron, spreads "strong" over weak
 * 8-neighbours inside the tile until nothing changes, writes back, and
 * raises the launch's flag; the host relaunches until a launch changes
 * nothing.
 *
 * Why that stops at exactly rule 6's answer: values only go WEAK ->
 * STRONG, and only next to a STRONG pixel, so nothing outside the closure
 * is ever marked; a launch in which no block changed anything wrote
 * nothing, so every block saw the final map, and in it no weak pixel has a
 * strong neighbour: the closure is complete. Blocks of one launch may read
 * an apron cell while its owner writes it (a byte, WEAK or STRONG: either
 * is a state the monotone rule accepts).
 *
 * The runner uploads plane 0 of a host frame (luma needs no more), or
 * reads plane 0 of a device frame (TRK_MEM_CUDA: the backend's device, as
 * NVDEC leaves it) in place, runs the stages on its own stream and copies
 * the sums back, and the edge map only when the caller asks for it; scratch
 * is sized at create. */
#include <limits.h>
#include <math.h>

#include "../canny_impl.h"
#include "cuda_internal.cuh"
#include "warp.cuh"

/* Tiles: Sobel/NMS TRK_CANNY_CU_TX x TRK_CANNY_CU_TY outputs per block (one
 * thread each); hysteresis TRK_CANNY_CU_TX x TRK_CANNY_CU_HROWS, each of the
 * TRK_CANNY_CU_TY thread rows doing HROWS / TY rows. TX = 32 (a warp per
 * row), HROWS a multiple of TY. */
#define TRK_CANNY_CU_TX    32
#define TRK_CANNY_CU_TY    8
#define TRK_CANNY_CU_HROWS 32
/* Hysteresis launches queued between two looks at their flags (a launch
 * after one that changed nothing returns at once, so a batch longer than
 * needed costs little: launches are cheap, a look costs a round trip). */
#define TRK_CANNY_CU_BATCH 16
static_assert(TRK_CANNY_CU_TX == 32 && TRK_CANNY_CU_HROWS % TRK_CANNY_CU_TY == 0, "tiles");

struct trk_canny_cuda {
    int dev, max_w, max_h;
    cudaStream_t s;
    cudaEvent_t ev[7];
    cudaEvent_t ev_legacy;    /* a device frame's writes on the legacy stream */
    uint8_t *d_frame;         /* plane 0 of the frame, rows fp apart */
    size_t fp;                /* its largest row, rounded */
    uint8_t *d_luma, *d_sm;   /* luma and smoothed, rows gp apart */
    uint8_t *d_cls, *d_edges; /* class map and edge map, rows gp apart */
    uint32_t *d_m2;           /* m2 of the candidates, rows gp apart */
    uint16_t *d_tmp;          /* the Gaussian's intermediate, rows gp apart */
    int gp;
    unsigned long long *d_sums; /* edges, edge_m2, strong */
    unsigned *d_flag;           /* one per launch of a batch */
    unsigned *hp_flag;          /* pinned copy */
    unsigned long long *hp_sums;
};

namespace
{

/* Where a frame's plane 0 lies and how to read luma from it. */
struct luma_src {
    const uint8_t *p;
    int pitch, width, height, fmt;
    struct trk_rgb2ycc_coef k;
};

/* Rule 1: one thread per pixel (2-D grid of TX x TY blocks), byte out. */
__global__ void luma_kernel(const struct luma_src f, uint8_t *out, int op)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= f.width || y >= f.height) return;
    const uint8_t *row = f.p + (size_t)y * f.pitch;
    uint8_t v;
    if (f.fmt == TRK_FMT_YUYV) {
        v = row[2 * x];
    } else if (f.fmt == TRK_FMT_NV12 || f.fmt == TRK_FMT_I420) {
        v = row[x];
    } else {
        const int bpp = f.fmt == TRK_FMT_RGBA || f.fmt == TRK_FMT_BGRA ? 4 : 3;
        const int bgr = f.fmt == TRK_FMT_BGR24 || f.fmt == TRK_FMT_BGRA;
        const uint8_t *px = row + (size_t)x * bpp;
        v = trk_canny_y(&f.k, px[bgr ? 2 : 0], px[1], px[bgr ? 0 : 2]);
    }
    out[(size_t)y * op + x] = v;
}

struct nms_job {
    const uint8_t *sm;
    uint8_t *cls;
    uint32_t *m2;
    int pitch, width, height;
    uint32_t low2, high2;
    unsigned long long *strong;
};

__device__ __forceinline__ int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Sobel of tile cell (i, j) of s_b (apron 2: cell (i, j) is pixel
 * (x0 - 2 + i, y0 - 2 + j)); rule 3. */
__device__ __forceinline__ void sobel_at(const uint8_t (*s_b)[TRK_CANNY_CU_TX + 4], int i, int j,
                                         int &gx, int &gy)
{
    gx = (s_b[j - 1][i + 1] + 2 * s_b[j][i + 1] + s_b[j + 1][i + 1]) -
         (s_b[j - 1][i - 1] + 2 * s_b[j][i - 1] + s_b[j + 1][i - 1]);
    gy = (s_b[j + 1][i - 1] + 2 * s_b[j + 1][i] + s_b[j + 1][i + 1]) -
         (s_b[j - 1][i - 1] + 2 * s_b[j - 1][i] + s_b[j - 1][i + 1]);
}

/* Rules 3 to 5. Grid: TX x TY output tiles, one thread per output.
 * Shared: the smoothed tile with a 2-pixel apron (coordinates clamped to
 * the frame: replicated borders), then m2 of the tile with a 1-pixel apron
 * (0 outside the frame: rule 4's outside neighbours). Each output reads
 * only shared memory. Writes the class of every pixel and m2 of the
 * candidates; the strong count: one atomicAdd per warp. */
__global__ void nms_kernel(const struct nms_job j)
{
    constexpr int TX = TRK_CANNY_CU_TX, TY = TRK_CANNY_CU_TY;
    __shared__ uint8_t s_b[TY + 4][TX + 4];
    __shared__ uint32_t s_m[TY + 2][TX + 2];
    const int x0 = blockIdx.x * TX, y0 = blockIdx.y * TY;
    const int tid = threadIdx.y * TX + threadIdx.x;
    for (int c = tid; c < (TY + 4) * (TX + 4); c += TX * TY) {
        const int i = c % (TX + 4), k = c / (TX + 4);
        const int xx = clampi(x0 - 2 + i, 0, j.width - 1), yy = clampi(y0 - 2 + k, 0, j.height - 1);
        s_b[k][i] = j.sm[(size_t)yy * j.pitch + xx];
    }
    __syncthreads();
    for (int c = tid; c < (TY + 2) * (TX + 2); c += TX * TY) {
        const int i = c % (TX + 2), k = c / (TX + 2);
        const int xx = x0 - 1 + i, yy = y0 - 1 + k;
        int gx, gy;
        sobel_at(s_b, i + 1, k + 1, gx, gy);
        const bool in = xx >= 0 && yy >= 0 && xx < j.width && yy < j.height;
        s_m[k][i] = in ? (uint32_t)(gx * gx + gy * gy) : 0u;
    }
    __syncthreads();
    const int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
    const int i = threadIdx.x + 1, k = threadIdx.y + 1;
    uint8_t cls = TRK_CANNY_NONE;
    if (x < j.width && y < j.height && s_m[k][i] > j.low2) {
        int gx, gy;
        sobel_at(s_b, i + 1, k + 1, gx, gy);
        const uint32_t m = s_m[k][i];
        uint32_t n1, n2;
        const int sec = trk_canny_sector(gx, gy);
        switch (sec) {
        case TRK_CANNY_SECTOR_H: n1 = s_m[k][i - 1], n2 = s_m[k][i + 1]; break;
        case TRK_CANNY_SECTOR_V: n1 = s_m[k - 1][i], n2 = s_m[k + 1][i]; break;
        case TRK_CANNY_SECTOR_DIAG_DOWN: n1 = s_m[k - 1][i - 1], n2 = s_m[k + 1][i + 1]; break;
        default: n1 = s_m[k - 1][i + 1], n2 = s_m[k + 1][i - 1]; break;
        }
        if (trk_canny_keeps(sec, m, n1, n2)) {
            cls = m > j.high2 ? TRK_CANNY_STRONG : TRK_CANNY_WEAK;
            j.m2[(size_t)y * j.pitch + x] = m;
        }
    }
    if (x < j.width && y < j.height) j.cls[(size_t)y * j.pitch + x] = cls;
    const unsigned strong = __popc(__ballot_sync(TRK_CU_FULL_MASK, cls == TRK_CANNY_STRONG));
    if (threadIdx.x == 0 && strong) atomicAdd(j.strong, (unsigned long long)strong);
}

struct hyst_job {
    uint8_t *cls;
    int pitch, width, height;
    unsigned *flag;       /* this launch's: set when any block changed something */
    const unsigned *prev; /* the previous launch's in this batch, or NULL */
};

/* Whether the weak cell (i, k) of s_c has a strong 8-neighbour. */
__device__ __forceinline__ bool touches_strong(const uint8_t (*s_c)[TRK_CANNY_CU_TX + 2], int i,
                                               int k)
{
    bool t = false;
#pragma unroll
    for (int dk = -1; dk <= 1; dk++)
#pragma unroll
        for (int di = -1; di <= 1; di++)
            t |= s_c[k + dk][i + di] == TRK_CANNY_STRONG;
    return t;
}

/* Rule 6, one round (none when the previous launch of the batch changed
 * nothing). Grid: TX x HROWS tiles; thread (tx, ty) owns rows ty,
 * ty + TY, ... of its column. Shared: the tile's classes with a 1-pixel
 * apron (NONE outside the frame). Inner rounds until the tile is stable,
 * each split in a read half and a write half by barriers (no shared
 * hazards); the tile is written back only if it changed. No atomics. */
__global__ void hyst_kernel(const struct hyst_job j)
{
    constexpr int TX = TRK_CANNY_CU_TX, TY = TRK_CANNY_CU_TY, HR = TRK_CANNY_CU_HROWS;
    constexpr int PER = HR / TY;
    __shared__ uint8_t s_c[HR + 2][TX + 2];
    if (j.prev && !*j.prev) return; /* stable already: the whole block leaves */
    const int x0 = blockIdx.x * TX, y0 = blockIdx.y * HR;
    const int tid = threadIdx.y * TX + threadIdx.x;
    for (int c = tid; c < (HR + 2) * (TX + 2); c += TX * TY) {
        const int i = c % (TX + 2), k = c / (TX + 2), xx = x0 - 1 + i, yy = y0 - 1 + k;
        const bool in = xx >= 0 && yy >= 0 && xx < j.width && yy < j.height;
        s_c[k][i] = in ? j.cls[(size_t)yy * j.pitch + xx] : (uint8_t)TRK_CANNY_NONE;
    }
    __syncthreads();
    const int i = threadIdx.x + 1;
    bool tile_changed = false, again;
    do {
        bool up[PER];
#pragma unroll
        for (int r = 0; r < PER; r++) {
            const int k = threadIdx.y + r * TY + 1;
            up[r] = s_c[k][i] == TRK_CANNY_WEAK && touches_strong(s_c, i, k);
        }
        __syncthreads();
        bool mine = false;
#pragma unroll
        for (int r = 0; r < PER; r++)
            if (up[r]) s_c[threadIdx.y + r * TY + 1][i] = TRK_CANNY_STRONG, mine = true;
        again = __syncthreads_or(mine);
        tile_changed |= again;
    } while (again);
    if (!tile_changed) return;
    const int x = x0 + threadIdx.x;
    for (int r = 0; r < PER && x < j.width; r++) {
        const int y = y0 + threadIdx.y + r * TY;
        if (y < j.height) j.cls[(size_t)y * j.pitch + x] = s_c[threadIdx.y + r * TY + 1][i];
    }
    if (tid == 0) *j.flag = 1u;
}

/* The edge map (edges NULL: none, the sums only) and the sums: one thread
 * per pixel, a warp per row segment; each warp adds its edges and their m2
 * with one atomicAdd each. */
__global__ void final_kernel(const uint8_t *cls, const uint32_t *m2, uint8_t *edges, int pitch,
                             int width, int height, unsigned long long *sums)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    bool e = false;
    unsigned long long m = 0;
    if (x < width && y < height) {
        const size_t at = (size_t)y * pitch + x;
        e = cls[at] == TRK_CANNY_STRONG;
        m = e ? m2[at] : 0;
        if (edges) edges[at] = e ? 255 : 0;
    }
    const unsigned n = __popc(__ballot_sync(TRK_CU_FULL_MASK, e));
    m = trk_cu_warp_sum64(m);
    if (threadIdx.x == 0 && n) {
        atomicAdd(&sums[0], (unsigned long long)n);
        atomicAdd(&sums[1], m);
    }
}

} // namespace

/* ------------------------------------------------------------ runner */

void trk_canny_cuda_destroy(struct trk_canny_cuda *c)
{
    if (!c) return;
    cudaSetDevice(c->dev);
    if (c->s) cudaStreamSynchronize(c->s);
    cudaFree(c->d_frame), cudaFree(c->d_luma), cudaFree(c->d_sm), cudaFree(c->d_cls);
    cudaFree(c->d_edges), cudaFree(c->d_m2), cudaFree(c->d_tmp), cudaFree(c->d_sums);
    cudaFree(c->d_flag);
    cudaFreeHost(c->hp_flag), cudaFreeHost(c->hp_sums);
    for (int i = 0; i < 7; i++)
        if (c->ev[i]) cudaEventDestroy(c->ev[i]);
    if (c->ev_legacy) cudaEventDestroy(c->ev_legacy);
    if (c->s) cudaStreamDestroy(c->s);
    free(c);
}

static int cu_alloc(struct trk_canny_cuda *c)
{
    const size_t W = (size_t)c->max_w, H = (size_t)c->max_h;
    c->fp = (W * 4 + TRK_CUDA_PITCH_ALIGN - 1) / TRK_CUDA_PITCH_ALIGN * TRK_CUDA_PITCH_ALIGN;
    c->gp = (int)((W + TRK_CUDA_PITCH_ALIGN - 1) / TRK_CUDA_PITCH_ALIGN * TRK_CUDA_PITCH_ALIGN);
    const size_t g = (size_t)c->gp * H;
    TRK_CUDA_TRY(cudaSetDevice(c->dev));
    TRK_CUDA_TRY(cudaStreamCreateWithFlags(&c->s, cudaStreamNonBlocking));
    for (int i = 0; i < 7; i++)
        TRK_CUDA_TRY(cudaEventCreate(&c->ev[i]));
    TRK_CUDA_TRY(cudaEventCreateWithFlags(&c->ev_legacy, cudaEventDisableTiming));
    TRK_CUDA_TRY(cudaMalloc(&c->d_frame, c->fp * H));
    TRK_CUDA_TRY(cudaMalloc(&c->d_luma, g));
    TRK_CUDA_TRY(cudaMalloc(&c->d_sm, g));
    TRK_CUDA_TRY(cudaMalloc(&c->d_cls, g));
    TRK_CUDA_TRY(cudaMalloc(&c->d_edges, g));
    TRK_CUDA_TRY(cudaMalloc(&c->d_m2, g * sizeof(uint32_t)));
    TRK_CUDA_TRY(cudaMalloc(&c->d_tmp, g * sizeof(uint16_t)));
    TRK_CUDA_TRY(cudaMalloc(&c->d_sums, 3 * sizeof(unsigned long long)));
    TRK_CUDA_TRY(cudaMalloc(&c->d_flag, TRK_CANNY_CU_BATCH * sizeof(unsigned)));
    TRK_CUDA_TRY(cudaHostAlloc(&c->hp_flag, TRK_CANNY_CU_BATCH * sizeof(unsigned), 0));
    TRK_CUDA_TRY(cudaHostAlloc(&c->hp_sums, 3 * sizeof(unsigned long long), 0));
    return 0;
}

int trk_canny_cuda_create(const struct trk_canny_opts *o, struct trk_canny_cuda **out)
{
    *out = NULL;
    char why[160];
    if (trk_cuda_probe(why, sizeof(why)) != TRK_CUDA_USABLE) return TRK_ENODEV;
    struct trk_canny_cuda *c = (struct trk_canny_cuda *)calloc(1, sizeof(*c));
    if (!c) return TRK_ENOMEM;
    c->dev = o->cuda_device, c->max_w = o->max_width, c->max_h = o->max_height;
    const int err = cu_alloc(c);
    if (err) {
        trk_canny_cuda_destroy(c);
        return err;
    }
    *out = c;
    return 0;
}

/* Hysteresis launches until one changes nothing; returns how many ran, or
 * a negative error. */
static int hysteresis(struct trk_canny_cuda *c, int W, int H)
{
    const dim3 blk(TRK_CANNY_CU_TX, TRK_CANNY_CU_TY);
    const dim3 grid((W + TRK_CANNY_CU_TX - 1) / TRK_CANNY_CU_TX,
                    (H + TRK_CANNY_CU_HROWS - 1) / TRK_CANNY_CU_HROWS);
    for (int rounds = 0;;) {
        TRK_CUDA_TRY(cudaMemsetAsync(c->d_flag, 0, TRK_CANNY_CU_BATCH * sizeof(unsigned), c->s));
        for (int b = 0; b < TRK_CANNY_CU_BATCH; b++) {
            const struct hyst_job j = { c->d_cls, c->gp,         W,
                                        H,        c->d_flag + b, b ? c->d_flag + b - 1 : NULL };
            hyst_kernel<<<grid, blk, 0, c->s>>>(j);
        }
        TRK_CUDA_TRY(cudaGetLastError());
        TRK_CUDA_TRY(cudaMemcpyAsync(c->hp_flag, c->d_flag, TRK_CANNY_CU_BATCH * sizeof(unsigned),
                                     cudaMemcpyDeviceToHost, c->s));
        TRK_CUDA_TRY(cudaStreamSynchronize(c->s));
        for (int b = 0; b < TRK_CANNY_CU_BATCH; b++) {
            rounds++;
            if (!c->hp_flag[b]) return rounds;
        }
    }
}

/* Upload (a host frame's; a device frame is read where it is), luma,
 * Gaussian and Sobel/NMS queued on c->s, events between. */
static int front(struct trk_canny_cuda *c, const struct trk_canny_params *p,
                 const struct trk_image *img)
{
    const int W = img->width, H = img->height;
    struct trk_plane_layout L;
    if (trk_image_plane_layout(img->fmt, W, H, &L)) return TRK_EINVAL;
    TRK_CUDA_TRY(cudaEventRecord(c->ev[0], c->s));
    const bool dev = img->mem == TRK_MEM_CUDA;
    if (dev) {
        /* Read after what the legacy default stream holds (where FFmpeg
         * copies into its surfaces): c->s does not wait for it by itself. */
        TRK_CUDA_TRY(cudaEventRecord(c->ev_legacy, cudaStreamLegacy));
        TRK_CUDA_TRY(cudaStreamWaitEvent(c->s, c->ev_legacy, 0));
    } else {
        TRK_CUDA_TRY(cudaMemcpy2DAsync(c->d_frame, c->fp, img->plane[0], img->pitch[0],
                                       L.row_bytes[0], (size_t)H, cudaMemcpyHostToDevice, c->s));
    }
    TRK_CUDA_TRY(cudaMemsetAsync(c->d_sums, 0, 3 * sizeof(unsigned long long), c->s));
    TRK_CUDA_TRY(cudaEventRecord(c->ev[1], c->s));
    const struct luma_src f = { dev ? img->plane[0] : c->d_frame,
                                dev ? (int)img->pitch[0] : (int)c->fp,
                                W,
                                H,
                                (int)img->fmt,
                                trk_rgb2ycc_coefs[trk_coef_index(img->matrix, img->full_range)] };
    const dim3 blk(TRK_CANNY_CU_TX, TRK_CANNY_CU_TY);
    const dim3 grid((W + TRK_CANNY_CU_TX - 1) / TRK_CANNY_CU_TX,
                    (H + TRK_CANNY_CU_TY - 1) / TRK_CANNY_CU_TY);
    luma_kernel<<<grid, blk, 0, c->s>>>(f, c->d_luma, c->gp);
    TRK_CUDA_TRY(cudaGetLastError());
    TRK_CUDA_TRY(cudaEventRecord(c->ev[2], c->s));
    const uint8_t *sm = c->d_luma;
    if (p->pf.sigma > 0) {
        const int e = trk_cu_prefilter_grid_launch(&p->pf, c->d_luma, c->gp, c->d_sm, c->gp, W, H,
                                                   c->d_tmp, c->gp, c->s);
        if (e) return e;
        sm = c->d_sm;
    }
    TRK_CUDA_TRY(cudaEventRecord(c->ev[3], c->s));
    const struct nms_job j = {
        sm, c->d_cls, c->d_m2, c->gp, W, H, p->low2, p->high2, c->d_sums + 2
    };
    nms_kernel<<<grid, blk, 0, c->s>>>(j);
    TRK_CUDA_TRY(cudaGetLastError());
    TRK_CUDA_TRY(cudaEventRecord(c->ev[4], c->s));
    return 0;
}

static float ev_ms(const struct trk_canny_cuda *c, int a, int b)
{
    float ms = 0;
    cudaEventElapsedTime(&ms, c->ev[a], c->ev[b]);
    return ms;
}

/* Whether a device image's plane 0 is memory the runner's device reads
 * (not another GPU's, not host memory) with a pitch the kernel takes. */
static bool on_device(const struct trk_canny_cuda *c, const struct trk_image *img)
{
    cudaPointerAttributes a;
    const bool known = cudaPointerGetAttributes(&a, img->plane[0]) == cudaSuccess;
    (void)cudaGetLastError(); /* an unknown pointer's error is no launch's */
    return known && (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged) &&
           a.device == c->dev && img->pitch[0] <= (size_t)INT_MAX;
}

int trk_canny_cuda_run(struct trk_canny_cuda *c, const struct trk_canny_params *p,
                       const struct trk_image *img, uint8_t *edges, size_t edges_pitch,
                       struct trk_canny_stats *st, struct trk_canny_timing *t)
{
    if (trk_canny_check(p, img, edges, edges_pitch, true)) return TRK_EINVAL;
    const int W = img->width, H = img->height;
    if (W > c->max_w || H > c->max_h) return TRK_EINVAL;
    const double t0 = trk_backend_now_ms();
    TRK_CUDA_TRY(cudaSetDevice(c->dev));
    if (img->mem == TRK_MEM_CUDA && !on_device(c, img)) return TRK_EINVAL;
    int err = front(c, p, img);
    if (err) return err;
    const int rounds = hysteresis(c, W, H);
    if (rounds < 0) return rounds;
    const dim3 blk(TRK_CANNY_CU_TX, TRK_CANNY_CU_TY);
    const dim3 grid((W + TRK_CANNY_CU_TX - 1) / TRK_CANNY_CU_TX,
                    (H + TRK_CANNY_CU_TY - 1) / TRK_CANNY_CU_TY);
    final_kernel<<<grid, blk, 0, c->s>>>(c->d_cls, c->d_m2, edges ? c->d_edges : NULL, c->gp, W, H,
                                         c->d_sums);
    TRK_CUDA_TRY(cudaGetLastError());
    TRK_CUDA_TRY(cudaEventRecord(c->ev[5], c->s));
    if (edges)
        TRK_CUDA_TRY(cudaMemcpy2DAsync(edges, edges_pitch, c->d_edges, (size_t)c->gp, (size_t)W,
                                       (size_t)H, cudaMemcpyDeviceToHost, c->s));
    TRK_CUDA_TRY(cudaMemcpyAsync(c->hp_sums, c->d_sums, 3 * sizeof(unsigned long long),
                                 cudaMemcpyDeviceToHost, c->s));
    TRK_CUDA_TRY(cudaEventRecord(c->ev[6], c->s));
    TRK_CUDA_TRY(cudaStreamSynchronize(c->s));
    struct trk_canny_stats s = {};
    s.pixels = (uint64_t)W * (uint64_t)H;
    s.edges = c->hp_sums[0], s.edge_m2 = c->hp_sums[1], s.strong = c->hp_sums[2];
    trk_canny_stats_derive(&s);
    if (st) *st = s;
    if (t) {
        t->upload_ms = ev_ms(c, 0, 1), t->luma_ms = ev_ms(c, 1, 2), t->gauss_ms = ev_ms(c, 2, 3);
        t->sobel_ms = ev_ms(c, 3, 4), t->hyst_ms = ev_ms(c, 4, 5);
        t->download_ms = ev_ms(c, 5, 6);
        t->total_ms = trk_backend_now_ms() - t0;
        t->hyst_rounds = rounds;
    }
    return 0;
}
