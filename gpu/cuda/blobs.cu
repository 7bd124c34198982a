/* Blob lists on the GPU: the connected components of each blob object's own
 * mask (restricted to its clipped ROI), measured, and the top K per object,
 * equal bit for bit to cpu_ref.c's flood fill (the definition).
 *
 * Run-based union-find (gpu/cuda/NOTES.md, "Blob lists", says why this
 * design and what it costs). Five launches per group of blob objects:
 *   1. runs_kernel     persistent blocks over rows. The row is read once for
 *                      every object of the group: per pixel, the group's
 *                      lookup tables (shared memory) give the bitmask of the
 *                      objects it matches. Only objects present in the row
 *                      get mask words (one ballot per present object per 32
 *                      pixels, kept in shared memory) and runs; each row
 *                      takes its runs' slots with one atomicAdd, each
 *                      (row, object)'s runs sorted by x.
 *      or mask_runs_kernel (the fused variant): the same runs from the
 *                      masks the fused kernel stored in its own pass over
 *                      the frame (trk_cu_bmask): no frame read, no lookup.
 *   2. union_kernel    grid-stride over runs: each run is united with the
 *                      runs of the same object in the row above that touch
 *                      it (4: overlap, 8: overlap or diagonal).
 *   3. flatten_kernel  grid-stride over runs: each run's parent becomes its
 *                      root; runs add their length to the root's mass and
 *                      their first pixel to the root's (atomicMin); roots
 *                      append themselves to their object's root list.
 *   4. select_kernel   block per object: radix select of the K best roots by
 *                      (mass desc, first asc) among those with mass >=
 *                      min_area (keys in shared memory when the object has
 *                      few roots), records initialised, roots tagged.
 *   5. stats_kernel    grid-stride over runs: the runs of the selected
 *                      blobs add their statistics to the records.
 * Work per pixel is one table lookup for all objects; everything after
 * scales with (rows x objects present) and runs, not pixels x objects.
 * Each kernel's writes are complete before the next starts (same stream):
 * the ordering the atomics rely on is within one kernel only, and is
 * spelled out at each. */
#include "cuda_internal.cuh"
#include "warp.cuh"

/* parent[] of a selected root: TAG | its rank in the list. Run slots stay
 * below 2^31 (checked at setup), so the bit is free. */
#define SEL_TAG 0x80000000u
/* Mask words per table entry at most (TRK_MAX_OBJECTS objects a group). */
#define MAXW (TRK_MAX_OBJECTS / 32)
/* Words of the per-row candidate bitmap: one bit per mask word of a row. */
#define CAND_WORDS ((TRK_BLOB_MAX_SIDE + 1023) / 1024)

namespace
{

static_assert(TRK_BLOB_THREADS % 32 == 0 && TRK_BLOB_THREADS <= 1024, "blob block size");
static_assert(TRK_BLOB_ROW_THREADS % 32 == 0 && TRK_BLOB_ROW_THREADS >= 32 &&
                  TRK_BLOB_ROW_THREADS <= 1024,
              "threshold block size");
static_assert(TRK_BLOB_SEL_THREADS % 32 == 0 && TRK_BLOB_SEL_THREADS >= 256 &&
                  TRK_BLOB_SEL_THREADS <= 1024,
              "select block: warp 0 scans 256 bins, 8 per lane");
static_assert(TRK_MAX_BLOBS <= TRK_BLOB_SEL_THREADS, "one thread ranks each selected blob");
static_assert(TRK_MAX_OBJECTS % 32 == 0 && TRK_MAX_OBJECTS <= 65535, "object index in 16 bits");
static_assert((TRK_BLOB_MAX_SIDE + 31) / 32 <= TRK_BLOB_ROW_MASK_WORDS,
              "the shared row mask holds at least one object's words");
static_assert(TRK_BLOB_ROW_UNROLL >= 1 && TRK_BLOB_SEL_KEYS >= 1, "blob tuning");
static_assert(TRK_BLOB_MASK_THREADS % 32 == 0 && TRK_BLOB_MASK_THREADS <= 1024 &&
                  TRK_BLOB_MASK_BLOCKS >= 1,
              "mask runs block");

/* Parent pointers are read from L2 (ld.global.cg): during union_kernel other
 * SMs lower them with atomicMin, and an L1 copy could be stale. (A stale
 * value would still be an ancestor, so it would cost retries, not
 * correctness; see unite.) */
__device__ __forceinline__ uint32_t ld_parent(const uint32_t *P, uint32_t i)
{
    return __ldcg(P + i);
}

__device__ __forceinline__ uint32_t find_root(const uint32_t *P, uint32_t x)
{
    uint32_t p = ld_parent(P, x);
    while (p != x) {
        x = p;
        p = ld_parent(P, x);
    }
    return x;
}

/* Joins the trees of runs a and b (Playne & Hawick 2018). Invariant: parent[x]
 * <= x, only ever lowered, and always a run of x's component; so every
 * tree's root is its smallest index. atomicMin on b's slot links b's root
 * under a's when b is still a root (old == b). Otherwise someone linked b
 * meanwhile: the slot now holds min(old, a), and b's old parent `old` is in
 * b's component, so uniting a with old finishes the job. Terminates: each
 * retry starts from strictly smaller indices. */
__device__ void unite(uint32_t *P, uint32_t a, uint32_t b)
{
    for (;;) {
        a = find_root(P, a);
        b = find_root(P, b);
        if (a == b) return;
        if (a > b) {
            const uint32_t t = a;
            a = b;
            b = t;
        }
        const uint32_t old = atomicMin(&P[b], a);
        if (old == b) return;
        b = old;
    }
}

/* Bit g of the group's per-pixel mask (B[MAXW] in registers: selected by
 * unrolled AND masks, so the array is never indexed at run time and stays
 * out of local memory. Plain `if (q == g >> 5) w = B[q]` was folded back by
 * nvcc into B[g >> 5]: ptxas put B in a 32-byte local frame, stored per
 * candidate pixel and reloaded per present object in runs_kernel's phase B). */
template <int NW> __device__ __forceinline__ uint32_t bit_of(const uint32_t B[NW], int g)
{
    uint32_t w = 0;
#pragma unroll
    for (int q = 0; q < NW; q++)
        w |= B[q] & (0u - (uint32_t)(q == (g >> 5)));
    return (w >> (g & 31)) & 1u;
}

/* The native samples of pixel (x, y) (color.h's trk_pixel_native, as
 * cpu_ref.c reads them), or a = -1 (no pixel) past the width: such pixels
 * match nothing, so runs never leave the frame. Only loads: callers read
 * the samples of several words before using any, so the loads overlap. */
struct px_smp {
    int a, b, c;
};
__device__ __forceinline__ void load_px(const struct trk_cu_blobjob &job, int x, int y,
                                        struct px_smp &s)
{
    s.a = -1;
    s.b = s.c = 0;
    if (x < job.f.width) trk_cu_native(job.f, x, y, s.a, s.b, s.c);
}

/* The group's objects a pixel with samples s matches by colour: B[q] bit i
 * = object 32q + i of the group. The channel triples come from color.h
 * (trk_pixel_triples: the function cpu_ref.c runs); the tables were built
 * with trk_chan_has per value, so ANDing a channel's three entries is
 * trk_box_match. Summary words first (the OR of an entry's words): a pixel
 * that passes none skips the full entries. */
template <int NW, bool NATIVE>
__device__ __forceinline__ void pixel_bits(const struct trk_cu_blobjob &job, const uint32_t *lut,
                                           bool yuv, const struct px_smp &smp, uint32_t B[NW])
{
#pragma unroll
    for (int q = 0; q < NW; q++)
        B[q] = 0;
    if (smp.a < 0) return;
    if (NATIVE) {
        /* Every object of the group tests the frame's own space (rgb on RGB
         * formats, ycbcr on YUV ones): trk_pixel_triples gives that space
         * the native samples unchanged, so no conversion is compiled in. */
        const struct trk_cu_lut &lt = job.lt;
        const int s = yuv ? TRK_SPACE_YCBCR : TRK_SPACE_RGB, nw = lt.nw;
        if (!(lut[lt.sum_off[s][0] + smp.a] & lut[lt.sum_off[s][1] + smp.b] &
              lut[lt.sum_off[s][2] + smp.c]))
            return;
        const uint32_t *t0 = lut + lt.full_off[s][0] + smp.a * nw;
        const uint32_t *t1 = lut + lt.full_off[s][1] + smp.b * nw;
        const uint32_t *t2 = lut + lt.full_off[s][2] + smp.c * nw;
#pragma unroll
        for (int q = 0; q < NW; q++)
            if (q < nw) B[q] = t0[q] & t1[q] & t2[q];
        return;
    }
    struct trk_cu_px p;
    trk_cu_triples(job.f, yuv, job.need, smp.a, smp.b, smp.c, p);
    const struct trk_cu_lut &lt = job.lt;
    if (lt.ncls) { /* class objects: their slots' bits from the cell table */
        const int *t = p.c[TRK_SPACE_RGB];
        const unsigned cm = trk_cu_cls_bits(job.f, t[0], t[1], t[2]);
#pragma unroll
        for (int q = 0; q < NW; q++)
            B[q] = trk_cu_cls_word(lt, cm, q);
    }
    uint32_t sum = 0;
#pragma unroll
    for (int s = 0; s < TRK_SPACE_COUNT; s++)
        if (lt.has[s])
            sum |= lut[lt.sum_off[s][0] + p.c[s][0]] & lut[lt.sum_off[s][1] + p.c[s][1]] &
                   lut[lt.sum_off[s][2] + p.c[s][2]];
    if (!sum) return; /* B holds the classes, if any */
    const int nw = lt.nw;
#pragma unroll
    for (int s = 0; s < TRK_SPACE_COUNT; s++) {
        if (!lt.has[s]) continue;
        const uint32_t *t0 = lut + lt.full_off[s][0] + p.c[s][0] * nw;
        const uint32_t *t1 = lut + lt.full_off[s][1] + p.c[s][1] * nw;
        const uint32_t *t2 = lut + lt.full_off[s][2] + p.c[s][2] * nw;
#pragma unroll
        for (int q = 0; q < NW; q++)
            if (q < nw) B[q] |= t0[q] & t1[q] & t2[q];
    }
}

/* Block 0 of a group's runs kernel: the next launch's run counter (this
 * launch's was zeroed by the launch before it, or at setup) and the
 * group's root-list counters (flatten_kernel fills the lists). */
__device__ __forceinline__ void zero_counters(const struct trk_cu_blobjob &job)
{
    if (threadIdx.x == 0) *job.ctl_next = 0;
    const size_t seg = (size_t)job.wpr * (size_t)job.f.height;
    for (int g = threadIdx.x; g < job.gn; g += blockDim.x)
        job.roots[(size_t)g * seg] = 0;
}

/* runs_kernel's step A for row y: warp k looks up the pixels of mask words
 * k, k + warps, ... and ORs which active objects (s_act) match into s_pres
 * and which words have a candidate into s_cand. */
template <int NW, bool NATIVE>
__device__ __forceinline__ void
runs_presence(const struct trk_cu_blobjob &job, const uint32_t *s_lut, bool yuv, int y, int wpr,
              int nw, const uint32_t *s_act, uint32_t *s_pres, uint32_t *s_cand)
{
    constexpr int U = TRK_BLOB_ROW_UNROLL;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, warps = blockDim.x >> 5;
    for (int w0 = warp; w0 < wpr; w0 += warps * U) {
        struct px_smp smp[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            load_px(job, 32 * (w0 + u * warps) + lane, y, smp[u]);
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int w = w0 + u * warps;
            if (w >= wpr) break;
            uint32_t B[NW];
            pixel_bits<NW, NATIVE>(job, s_lut, yuv, smp[u], B);
            uint32_t any = 0;
#pragma unroll
            for (int q = 0; q < NW; q++) {
                if (q >= nw) break;
                const uint32_t o = __reduce_or_sync(TRK_CU_FULL_MASK, B[q] & s_act[q]);
                any |= o;
                if (lane == 0 && o) atomicOr(&s_pres[q], o);
            }
            if (lane == 0 && any) atomicOr(&s_cand[w >> 5], 1u << (w & 31));
        }
    }
}

/* runs_kernel's step B for row y: the mask words of present objects
 * s_list[i0 ..] (n of them) into s_mask, row i at i * wpr; words without a
 * candidate (s_cand) are 0 without a lookup. */
template <int NW, bool NATIVE>
__device__ __forceinline__ void runs_masks(const struct trk_cu_blobjob &job, const uint32_t *s_lut,
                                           bool yuv, int y, int wpr, const uint32_t *s_cand,
                                           const uint16_t *s_list, const struct trk_roi *s_roi,
                                           int i0, int n, uint32_t *s_mask)
{
    constexpr int U = TRK_BLOB_ROW_UNROLL;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, warps = blockDim.x >> 5;
    for (int w0 = warp; w0 < wpr; w0 += warps * U) {
        struct px_smp smp[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int w = w0 + u * warps;
            smp[u].a = -1;
            if (w < wpr && ((s_cand[w >> 5] >> (w & 31)) & 1u))
                load_px(job, 32 * w + lane, y, smp[u]);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int w = w0 + u * warps;
            if (w >= wpr) break;
            if (!((s_cand[w >> 5] >> (w & 31)) & 1u)) {
                for (int i = lane; i < n; i += 32)
                    s_mask[i * wpr + w] = 0;
                continue;
            }
            const int x = 32 * w + lane;
            uint32_t B[NW];
            pixel_bits<NW, NATIVE>(job, s_lut, yuv, smp[u], B);
            for (int i = 0; i < n; i++) {
                const int g = s_list[i0 + i];
                const struct trk_roi &r = s_roi[g];
                const uint32_t m =
                    __ballot_sync(TRK_CU_FULL_MASK, bit_of<NW>(B, g) && x >= r.x0 && x <= r.x1);
                if (lane == 0) s_mask[i * wpr + w] = m;
            }
        }
    }
}

/* runs_kernel's step C, first half: warp k counts the runs of objects k,
 * k + warps, ... of s_mask into s_cnt; after a barrier warp 0 turns the
 * counts into offsets (lane l holds entries PER_LANE l ..) and takes the
 * row's run slots with one atomicAdd: s_off, rowoff and rowcnt. */
__device__ __forceinline__ void runs_slots(const struct trk_cu_blobjob &job, int y, int wpr, int gn,
                                           const uint16_t *s_list, int i0, int n,
                                           const uint32_t *s_mask, uint32_t *s_cnt, uint32_t *s_off)
{
    constexpr int PER_LANE = TRK_MAX_OBJECTS / 32; /* warp 0's scan over the present objects */
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, warps = blockDim.x >> 5;
    for (int i = warp; i < n; i += warps) {
        const uint32_t *mrow = s_mask + i * wpr;
        uint32_t cnt = 0, carry = 0;
        for (int c = 0; c < wpr; c += 32) {
            const int w = c + lane;
            const uint32_t m = w < wpr ? mrow[w] : 0;
            const uint32_t prev = trk_cu_warp_prev_word(m, lane, carry);
            cnt += __popc(m & ~((m << 1) | (prev >> 31)));
            carry = __shfl_sync(TRK_CU_FULL_MASK, m, 31);
        }
        cnt = __reduce_add_sync(TRK_CU_FULL_MASK, cnt);
        if (lane == 0) s_cnt[i] = cnt;
    }
    __syncthreads();
    if (warp == 0) {
        uint32_t c[PER_LANE], sum = 0;
#pragma unroll
        for (int j = 0; j < PER_LANE; j++) {
            const int i = PER_LANE * lane + j;
            c[j] = i < n ? s_cnt[i] : 0;
            sum += c[j];
        }
        const uint32_t incl = trk_cu_warp_incl_sum(sum, lane);
        const uint32_t total = __shfl_sync(TRK_CU_FULL_MASK, incl, 31);
        uint32_t base = 0;
        if (lane == 0 && total) base = atomicAdd(job.ctl, total);
        uint32_t off = __shfl_sync(TRK_CU_FULL_MASK, base, 0) + incl - sum;
#pragma unroll
        for (int j = 0; j < PER_LANE; j++) {
            const int i = PER_LANE * lane + j;
            if (i < n) {
                const size_t ri = (size_t)y * gn + s_list[i0 + i];
                s_off[i] = off;
                job.rowoff[ri] = off;
                job.rowcnt[ri] = c[j];
                off += c[j];
            }
        }
    }
}

/* runs_kernel's step C, second half: warp k writes the runs of objects k,
 * k + warps, ... from their slots s_off on (x0 by the lane holding a run's
 * start, x1 by the lane holding its end; the k-th start and the k-th end of
 * a row are the k-th run). */
__device__ __forceinline__ void runs_write(const struct trk_cu_blobjob &job, int y, int W, int wpr,
                                           const uint16_t *s_list, int i0, int n,
                                           const uint32_t *s_mask, const uint32_t *s_off)
{
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, warps = blockDim.x >> 5;
    for (int i = warp; i < n; i += warps) {
        const int g = s_list[i0 + i];
        const uint32_t *mrow = s_mask + i * wpr;
        const uint32_t off = s_off[i];
        uint32_t running = 0, carry = 0;
        for (int c = 0; c < wpr; c += 32) {
            const int w = c + lane;
            const uint32_t m = w < wpr ? mrow[w] : 0;
            const uint32_t prev = trk_cu_warp_prev_word(m, lane, carry);
            uint32_t next = __shfl_down_sync(TRK_CU_FULL_MASK, m, 1);
            if (lane == 31) next = w + 1 < wpr ? mrow[w + 1] : 0;
            const uint32_t st = m & ~((m << 1) | (prev >> 31));
            const uint32_t en = m & ~((m >> 1) | (next << 31));
            const uint32_t cnt = __popc(st);
            const uint32_t incl = trk_cu_warp_incl_sum(cnt, lane);
            const uint32_t first = running + incl - cnt; /* runs of the row before word w */
            if (w < wpr) {
                uint32_t s = st, k = first;
                while (s) {
                    const int j = __ffs(s) - 1;
                    s &= s - 1;
                    const uint32_t id = off + k++;
                    const int x = 32 * w + j;
                    job.x0[id] = (uint16_t)x;
                    job.yg[id] = (uint32_t)y | (uint32_t)g << 16;
                    job.parent[id] = id;
                    job.mass[id] = 0;
                    job.first[id] = (uint32_t)y * (uint32_t)W + (uint32_t)x;
                }
                /* A run open from the word before ends here first. */
                const uint32_t open = (prev >> 31) & m & 1u;
                uint32_t e = en;
                k = first - open;
                while (e) {
                    const int j = __ffs(e) - 1;
                    e &= e - 1;
                    job.x1[off + k++] = (uint16_t)(32 * w + j);
                }
            }
            running += __shfl_sync(TRK_CU_FULL_MASK, incl, 31);
            carry = __shfl_sync(TRK_CU_FULL_MASK, m, 31);
        }
    }
}

/* Grid: persistent blocks, block b takes rows b, b + gridDim.x, ...;
 * TRK_BLOB_THREADS threads; dynamic shared memory: the group's table image
 * (job.lt.words words), copied once per block with the group's clipped
 * ROIs. Per row (warp w takes mask words w, w + warps, ...; it reads the
 * pixels of TRK_BLOB_ROW_UNROLL of its words before it looks any up, so a
 * row costs about one memory round trip, not one per word):
 *   A. every pixel is looked up once: the row's present objects (OR over
 *      the row of each pixel's bits, restricted to the objects whose ROI
 *      holds the row) and which mask words hold any candidate pixel go to
 *      shared memory.
 *   B. for the present objects (listed in shared memory; as many at a time
 *      as their row words fit TRK_BLOB_ROW_MASK_WORDS) and each mask word:
 *      the word (a ballot of bit && column inside the ROI; words without
 *      candidates are 0 without a lookup) goes to shared memory. Pixels
 *      are looked up again, but only in candidate words, which background
 *      rows and segments do not have.
 *   C. warp k takes present objects k, k + warps, ...: a pass over the
 *      object's row words counts its runs (starts = m & ~(m << 1 |
 *      previous word's top bit)); warp 0 turns the counts into offsets and
 *      takes the slots of all of them with one atomicAdd on the group's run
 *      counter (one per row, not one per (row, object): the counter is
 *      the one address every block hits); then a second pass writes each
 *      run (x0 by the lane holding its start, x1 by the lane holding its
 *      end, k-th start and k-th end of a row belong to the k-th run), y
 *      and object, parent = itself, mass 0, first = its first pixel's
 *      raster index. rowoff/rowcnt name each (row, object)'s runs; absent
 *      objects get rowcnt 0.
 * Block 0 also zeroes the run counter of the next launch (ctl_next: this
 * launch's counter was zeroed by the launch before it, or at setup) and the
 * group's root-list counters (flatten_kernel fills the lists). */
template <int NW, bool NATIVE>
__global__ void __launch_bounds__(TRK_BLOB_ROW_THREADS, TRK_BLOB_ROW_BLOCKS)
    runs_kernel(const struct trk_cu_blobjob job)
{
    extern __shared__ uint4 s_dyn[];
    uint32_t *s_lut = reinterpret_cast<uint32_t *>(s_dyn);
    __shared__ uint32_t s_mask[TRK_BLOB_ROW_MASK_WORDS];
    __shared__ struct trk_roi s_roi[TRK_MAX_OBJECTS];
    __shared__ uint32_t s_act[MAXW], s_pres[MAXW], s_cand[CAND_WORDS];
    __shared__ uint32_t s_cnt[TRK_MAX_OBJECTS], s_off[TRK_MAX_OBJECTS];
    __shared__ uint16_t s_list[TRK_MAX_OBJECTS];
    __shared__ int s_np;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, warps = blockDim.x >> 5;
    const int W = job.f.width, H = job.f.height, wpr = job.wpr, gn = job.gn;
    const int pw = (wpr + 31) >> 5, nw = job.lt.nw;
    const bool yuv = trk_fmt_is_yuv(job.f.fmt);
    for (int i = tid; i < job.lt.words; i += blockDim.x)
        s_lut[i] = job.lut[i];
    for (int g = tid; g < gn; g += blockDim.x)
        s_roi[g] = job.rois ? job.rois[job.objs[job.g0 + g].slot] : trk_roi{ 0, 0, W - 1, H - 1 };
    if (blockIdx.x == 0) zero_counters(job);
    /* Objects whose row words fit the shared mask at once (>= 1: wpr <=
     * 2048 <= TRK_BLOB_ROW_MASK_WORDS). */
    const int chunk = TRK_BLOB_ROW_MASK_WORDS / wpr;

    for (int y = blockIdx.x; y < H; y += gridDim.x) {
        __syncthreads(); /* tables and ROIs loaded; the previous row is done with shared state */
        /* Warp q ballots the objects 32q .. 32q + 31 whose ROI holds the row. */
        for (int q = warp; q < NW; q += warps) {
            const int g = 32 * q + lane;
            const struct trk_roi &r = s_roi[g < gn ? g : 0];
            const uint32_t act =
                __ballot_sync(TRK_CU_FULL_MASK, g < gn && y >= r.y0 && y <= r.y1 && r.x0 <= r.x1);
            if (lane == 0) s_act[q] = act, s_pres[q] = 0;
        }
        for (int i = tid; i < pw; i += blockDim.x)
            s_cand[i] = 0;
        if (tid == 0) s_np = 0;
        __syncthreads();

        /* A: presence. */
        runs_presence<NW, NATIVE>(job, s_lut, yuv, y, wpr, nw, s_act, s_pres, s_cand);
        __syncthreads();
        for (int g = tid; g < gn; g += blockDim.x) {
            if ((s_pres[g >> 5] >> (g & 31)) & 1u)
                s_list[atomicAdd(&s_np, 1)] = (uint16_t)g;
            else
                job.rowcnt[(size_t)y * gn + g] = 0;
        }
        __syncthreads();
        const int np = s_np;

        for (int i0 = 0; i0 < np; i0 += chunk) {
            const int n = np - i0 < chunk ? np - i0 : chunk;
            if (i0) __syncthreads(); /* the chunk before is done with s_mask / s_off */

            /* B: the present objects' mask words. */
            runs_masks<NW, NATIVE>(job, s_lut, yuv, y, wpr, s_cand, s_list, s_roi, i0, n, s_mask);
            __syncthreads();

            /* C: count each object's runs of the row; offsets. */
            runs_slots(job, y, wpr, gn, s_list, i0, n, s_mask, s_cnt, s_off);
            __syncthreads();

            /* C: write the runs. */
            runs_write(job, y, W, wpr, s_list, i0, n, s_mask, s_off);
        }
    }
}

/* mask_runs_kernel's gather for row y and group objects [g0, g0 + n): warp
 * k takes objects g0 + k, g0 + k + warps, ...: one read of the object's
 * row words (the fused kernel's masks) finds whether it is present; a
 * present object takes the next place i of s_list (shared atomicAdd) and
 * its words go to s_mask row i, each non-zero one zeroed in the scratch
 * (read a second time, from L1), so the scratch is all zero again for the
 * next frame; an absent object's rowcnt is 0. */
__device__ __forceinline__ void mask_gather(const struct trk_cu_blobjob &job, int y, int g0, int n,
                                            uint32_t *s_mask, uint16_t *s_list, int &s_np)
{
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, warps = blockDim.x >> 5;
    const int wpr = job.wpr;
    for (int g = g0 + warp; g < g0 + n; g += warps) {
        uint32_t *mrow = job.masks + (size_t)g * job.mstride + (size_t)y * wpr;
        uint32_t any = 0;
        for (int w = lane; w < wpr; w += 32)
            any |= mrow[w];
        if (!__any_sync(TRK_CU_FULL_MASK, any)) {
            if (lane == 0) job.rowcnt[(size_t)y * job.gn + g] = 0;
            continue;
        }
        int i = 0;
        if (lane == 0) {
            i = atomicAdd(&s_np, 1);
            s_list[i] = (uint16_t)g;
        }
        i = __shfl_sync(TRK_CU_FULL_MASK, i, 0);
        for (int w = lane; w < wpr; w += 32) {
            const uint32_t m = mrow[w];
            s_mask[i * wpr + w] = m;
            if (m) mrow[w] = 0;
        }
    }
}

/* Grid: blocks take rows in turn (grid-stride; no set-up worth keeping a
 * block for: no tables, no ROIs); TRK_BLOB_MASK_THREADS threads. The
 * masks come from the fused kernel's own pass over the frame (trk_cu_bmask:
 * colour and clipped ROI already applied), so a row costs no frame read
 * and no lookup: per chunk of the group's objects whose row words fit
 * s_mask, mask_gather copies the present objects' words into shared memory
 * (and zeroes them in the scratch), then runs_kernel's steps C as they
 * are: runs_slots counts each object's runs and takes the row's slots with
 * one atomicAdd, runs_write writes the runs. Block 0 zeroes the next
 * launch's run counter and the group's root-list counters, as runs_kernel
 * does. */
__global__ void __launch_bounds__(TRK_BLOB_MASK_THREADS, TRK_BLOB_MASK_BLOCKS)
    mask_runs_kernel(const struct trk_cu_blobjob job)
{
    __shared__ uint32_t s_mask[TRK_BLOB_ROW_MASK_WORDS];
    __shared__ uint32_t s_cnt[TRK_MAX_OBJECTS], s_off[TRK_MAX_OBJECTS];
    __shared__ uint16_t s_list[TRK_MAX_OBJECTS];
    __shared__ int s_np;
    const int tid = threadIdx.x;
    const int W = job.f.width, H = job.f.height, wpr = job.wpr, gn = job.gn;
    if (blockIdx.x == 0) zero_counters(job);
    const int chunk = TRK_BLOB_ROW_MASK_WORDS / wpr; /* >= 1 (static_assert above) */
    for (int y = blockIdx.x; y < H; y += gridDim.x) {
        for (int g0 = 0; g0 < gn; g0 += chunk) {
            const int n = gn - g0 < chunk ? gn - g0 : chunk;
            __syncthreads(); /* the chunk (or row) before is done with s_mask, s_list, s_np */
            if (tid == 0) s_np = 0;
            __syncthreads();
            mask_gather(job, y, g0, n, s_mask, s_list, s_np);
            __syncthreads();
            const int np = s_np;
            if (!np) continue;
            runs_slots(job, y, wpr, gn, s_list, 0, np, s_mask, s_cnt, s_off);
            __syncthreads();
            runs_write(job, y, W, wpr, s_list, 0, np, s_mask, s_off);
        }
    }
}

/* The first of the n runs at off (sorted, disjoint) ending at or after x. */
__device__ __forceinline__ uint32_t first_ending_from(const uint16_t *x1, uint32_t off, uint32_t n,
                                                      int x)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if ((int)x1[off + mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Grid: any (grid-stride over the group's runs; their number is on the
 * device). A thread unites its run [a, b] of row y with every run of the
 * same object in row y - 1 that touches it: [c, d] touches when d >= a - e
 * and c <= b + e (e = 1 for 8-connectivity, 0 for 4). Those runs are
 * sorted and disjoint: a binary search finds the first with d >= a - e,
 * then a walk while c <= b + e. Atomics: unite's atomicMin on parent (see
 * there); everything else is only read. */
__global__ void __launch_bounds__(TRK_BLOB_THREADS) union_kernel(const struct trk_cu_blobjob job)
{
    const uint32_t total = *job.ctl;
    for (uint32_t id = blockIdx.x * blockDim.x + threadIdx.x; id < total;
         id += gridDim.x * blockDim.x) {
        const uint32_t yg = job.yg[id];
        const int y = (int)(yg & 0xffffu), g = (int)(yg >> 16);
        if (y == 0) continue;
        const size_t ra = (size_t)(y - 1) * job.gn + g;
        const uint32_t na = job.rowcnt[ra];
        if (!na) continue;
        const uint32_t a0 = job.rowoff[ra];
        const int e = job.objs[job.g0 + g].conn == 4 ? 0 : 1;
        const int a = (int)job.x0[id] - e, b = (int)job.x1[id] + e;
        for (uint32_t u = first_ending_from(job.x1, a0, na, a); u < na && (int)job.x0[a0 + u] <= b;
             u++)
            unite(job.parent, id, a0 + u);
    }
}

/* Grid: any (grid-stride over the runs; warps stay whole to the end so the
 * root lists can be filled with warp collectives). After union_kernel
 * every tree is final: each run's root is stored as its parent (concurrent
 * finds may read the old parent or the root: both are ancestors), its
 * length is added to the root's mass and its first pixel (raster index)
 * lowers the root's (atomicMin; the root's own is its initial value). Root
 * slots are arbitrary (rows take slots in the order they finish), so the
 * first pixel is carried explicitly. Each root appends its slot to its
 * object's root list (see trk_cu_blobjob.roots): the lanes of a warp with
 * roots of the same object take their places with one atomicAdd; past the
 * list's capacity only the count grows (select_kernel then walks the runs
 * instead). */
__global__ void __launch_bounds__(TRK_BLOB_THREADS) flatten_kernel(const struct trk_cu_blobjob job)
{
    const uint32_t total = *job.ctl;
    const uint32_t lane = threadIdx.x & 31;
    const size_t seg = (size_t)job.wpr * (size_t)job.f.height;
    const uint32_t lcap = (uint32_t)(seg - 1);
    for (uint32_t id = blockIdx.x * blockDim.x + threadIdx.x; id - lane < total;
         id += gridDim.x * blockDim.x) {
        bool root = false;
        uint32_t g = 0;
        if (id < total) {
            const uint32_t r = find_root(job.parent, id);
            if (r != id) {
                job.parent[id] = r;
                atomicMin(&job.first[r], job.first[id]);
            } else {
                root = true;
                g = job.yg[id] >> 16;
            }
            atomicAdd(&job.mass[r], (uint32_t)(job.x1[id] - job.x0[id] + 1));
        }
        if (!__ballot_sync(TRK_CU_FULL_MASK, root)) continue; /* warp-uniform */
        const uint32_t peers = __match_any_sync(TRK_CU_FULL_MASK, root ? g : TRK_CU_FULL_MASK);
        const int leader = __ffs(peers) - 1;
        uint32_t base = 0;
        if (root && (int)lane == leader) base = atomicAdd(&job.roots[g * seg], __popc(peers));
        base = __shfl_sync(TRK_CU_FULL_MASK, base, leader);
        const uint32_t at = base + __popc(peers & ((1u << lane) - 1u));
        if (root && at < lcap) job.roots[g * seg + 1 + at] = id;
    }
}

/* A root's sort key: larger = earlier in the list. Mass in the high half,
 * then the complement of its first pixel's raster index (unique per blob,
 * < 2^32 as sides are <= 65535), so ties go to the first in raster order:
 * exactly trk_blob_before. Keys are unique. */
__device__ __forceinline__ unsigned long long blob_key(uint32_t mass, uint32_t first)
{
    return (unsigned long long)mass << 32 | (unsigned long long)(TRK_CU_FULL_MASK - first);
}

/* Calls f(id, y) for every run of group object g, threads of the block
 * taking rows in turn. */
template <typename F>
__device__ __forceinline__ void for_runs(const struct trk_cu_blobjob &job, int g, F f)
{
    for (int y = threadIdx.x; y < job.f.height; y += blockDim.x) {
        const size_t ri = (size_t)y * job.gn + g;
        const uint32_t n = job.rowcnt[ri];
        if (!n) continue;
        const uint32_t off = job.rowoff[ri];
        for (uint32_t k = 0; k < n; k++)
            f(off + k, y);
    }
}

/* Where select_kernel finds an object's candidate roots. */
enum { SEL_SHARED, SEL_LIST, SEL_RUNS };

/* Calls f(key, id) for every root of group object g with mass >= min_area,
 * threads of the block taking them in turn: from the keys in shared memory
 * (SEL_SHARED: nk of them, already filtered), from the object's root list
 * (SEL_LIST: n slots), or from all its runs (SEL_RUNS: roots are the runs
 * with parent == itself). */
template <typename F>
__device__ __forceinline__ void for_cands(const struct trk_cu_blobjob &job, int g, int mode,
                                          const uint32_t *list, uint32_t n,
                                          const unsigned long long *s_key, const uint32_t *s_kid,
                                          uint32_t nk, uint32_t min_area, F f)
{
    if (mode == SEL_SHARED) {
        for (uint32_t i = threadIdx.x; i < nk; i += blockDim.x)
            f(s_key[i], s_kid[i]);
    } else if (mode == SEL_LIST) {
        for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
            const uint32_t id = list[i];
            const uint32_t m = job.mass[id];
            if (m >= min_area) f(blob_key(m, job.first[id]), id);
        }
    } else {
        for_runs(job, g, [&](uint32_t id, int) {
            if (job.parent[id] != id) return;
            const uint32_t m = job.mass[id];
            if (m >= min_area) f(blob_key(m, job.first[id]), id);
        });
    }
}

/* select_kernel's first pass: counts the candidates of group object g
 * (mode: where they are) into s_valid and ORs their keys into s_or; with
 * SEL_SHARED their keys and ids also go to s_key / s_kid (s_nk of them). */
__device__ __forceinline__ void sel_gather(const struct trk_cu_blobjob &job, int g, int mode,
                                           const uint32_t *list, uint32_t nroots, uint32_t min_area,
                                           unsigned long long *s_key, uint32_t *s_kid,
                                           unsigned &s_nk, unsigned &s_valid,
                                           unsigned long long &s_or)
{
    const int tid = threadIdx.x;
    unsigned cnt = 0;
    unsigned long long orv = 0;
    if (mode == SEL_SHARED) {
        for (uint32_t i = tid; i < nroots; i += blockDim.x) {
            const uint32_t id = list[i];
            const uint32_t m = job.mass[id];
            if (m < min_area) continue;
            const unsigned long long key = blob_key(m, job.first[id]);
            const unsigned at = atomicAdd(&s_nk, 1u);
            s_key[at] = key;
            s_kid[at] = id;
            cnt++;
            orv |= key;
        }
    } else {
        for_cands(job, g, mode, list, nroots, s_key, s_kid, 0, min_area,
                  [&](unsigned long long key, uint32_t) {
                      cnt++;
                      orv |= key;
                  });
    }
    if (cnt) {
        atomicAdd(&s_valid, cnt);
        atomicOr(&s_or, orv);
    }
}

/* One round of select_kernel's radix select, warp 0: lane l holds bins
 * 255 - 8l .. 248 - 8l of s_hist, so lane order is descending key order.
 * The lane whose range crosses s_need finds the bin (the bins before it
 * are kept whole) and narrows s_prefix / s_need, or sets s_thresh and
 * s_done when exactly the keys still needed share the prefix. */
__device__ __forceinline__ void sel_round(const unsigned *s_hist, int shift,
                                          unsigned long long prefix, unsigned &s_need,
                                          unsigned long long &s_prefix,
                                          unsigned long long &s_thresh, int &s_done)
{
    const int tid = threadIdx.x, lane = tid & 31;
    /* Lane l holds bins 255 - 8l .. 248 - 8l: lane order is
     * descending key order. The lane whose range crosses need
     * finds the bin; the bins before it are kept whole. */
    const unsigned need = s_need;
    unsigned c[8], sum = 0;
#pragma unroll
    for (int q = 0; q < 8; q++) {
        c[q] = s_hist[255 - 8 * lane - q];
        sum += c[q];
    }
    const unsigned incl = trk_cu_warp_incl_sum(sum, lane);
    /* Every lane has read s_need and its bins; the deciding
     * lane writes s_need / s_prefix below. The shuffles above
     * synchronise execution but order no memory: without this
     * barrier a lane's read and the writer's store race
     * (compute-sanitizer racecheck). */
    __syncwarp();
    const unsigned excl = incl - sum;
    if (excl < need && incl >= need) {
        unsigned cum = excl;
        for (int q = 0; q < 8; q++) {
            if (cum + c[q] >= need) {
                const unsigned d = 255u - 8u * (unsigned)lane - (unsigned)q;
                const unsigned left = need - cum;
                s_prefix = prefix << 8 | d;
                s_need = left;
                if (c[q] == left || shift == 0) {
                    /* Exactly the keys still needed share this
                     * prefix: keep every key >= it. */
                    s_thresh = (prefix << 8 | d) << shift;
                    s_done = 1;
                }
                break;
            }
            cum += c[q];
        }
    }
}

/* select_kernel's output: the kept keys (kept <= K) ranked by counting,
 * each rank's record initialised (statistics zero, bounds empty) and its
 * root tagged in parent[]; the list length. */
__device__ __forceinline__ void sel_write(const struct trk_cu_blobjob &job, int g,
                                          const struct trk_cu_bobj &o, unsigned kept,
                                          const unsigned long long *s_keep,
                                          const uint32_t *s_keep_id)
{
    const int tid = threadIdx.x;
    if ((unsigned)tid < kept) {
        const unsigned long long key = s_keep[tid];
        unsigned rank = 0;
        for (unsigned i = 0; i < kept; i++)
            rank += s_keep[i] > key;
        struct trk_cu_blob rec;
        rec.mass = (unsigned)(key >> 32);
        rec.first = TRK_CU_FULL_MASK - (uint32_t)key;
        rec.sx = rec.sy = rec.perim = 0;
        rec.sxx = rec.syy = rec.sxy = 0;
        rec.x0 = rec.y0 = TRK_CU_FULL_MASK;
        rec.x1 = rec.y1 = 0;
        rec.pad = 0;
        job.recs[o.off + rank] = rec;
        job.parent[s_keep_id[tid]] = SEL_TAG | rank;
    }
    if (tid == 0) job.counts[job.g0 + g] = kept;
}

/* Grid: one block per object of the group, TRK_BLOB_SEL_THREADS threads.
 * Selection: the K largest keys among roots (parent == itself after
 * flatten_kernel) with mass >= min_area. The candidates come from the
 * object's root list when it is complete (flatten_kernel's count within
 * its capacity): with at most TRK_BLOB_SEL_KEYS roots their keys are
 * loaded into shared memory once (the common case: a read of a few
 * thousand words at most, then no global memory until the output), else
 * read from the list each pass; an incomplete list (more components than
 * the list holds) falls back to walking all the object's runs. When more
 * than K qualify, an MSB radix select (8-bit digits, starting at the
 * highest byte any key uses) narrows the prefix of the K-th largest key
 * until its bin holds exactly the keys still needed (at the last byte it
 * always does: keys are unique); the kept keys are those >= that prefix.
 * Shared: the keys, the 256-bin histogram (shared atomicAdd per candidate),
 * the kept keys (at most K, appended with a shared atomicAdd), the round's
 * state written by warp 0 between barriers. The kept keys are ranked by
 * counting (K <= 64); each rank's record is initialised in the output
 * (statistics zero, bounds empty; stats_kernel adds the rest) and its root
 * tagged in parent[] (read by stats_kernel, the next launch); the list
 * length goes out. */
__global__ void __launch_bounds__(TRK_BLOB_SEL_THREADS)
    select_kernel(const struct trk_cu_blobjob job)
{
    __shared__ unsigned s_hist[256];
    __shared__ unsigned long long s_key[TRK_BLOB_SEL_KEYS];
    __shared__ uint32_t s_kid[TRK_BLOB_SEL_KEYS];
    __shared__ unsigned long long s_keep[TRK_MAX_BLOBS];
    __shared__ uint32_t s_keep_id[TRK_MAX_BLOBS];
    __shared__ unsigned long long s_or, s_prefix, s_thresh;
    __shared__ unsigned s_valid, s_need, s_kept, s_nk;
    __shared__ int s_done;
    const int g = blockIdx.x, tid = threadIdx.x;
    const struct trk_cu_bobj &o = job.objs[job.g0 + g];
    const uint32_t K = (uint32_t)o.k, min_area = o.min_area;
    const size_t seg = (size_t)job.wpr * (size_t)job.f.height;
    const uint32_t *list = job.roots + (size_t)g * seg + 1;
    const uint32_t nroots = list[-1];
    const int mode = nroots > seg - 1              ? SEL_RUNS
                     : nroots <= TRK_BLOB_SEL_KEYS ? SEL_SHARED
                                                   : SEL_LIST;
    if (tid == 0) {
        s_or = 0;
        s_valid = 0;
        s_kept = 0;
        s_thresh = 0;
        s_nk = 0;
    }
    __syncthreads();
    sel_gather(job, g, mode, list, nroots, min_area, s_key, s_kid, s_nk, s_valid, s_or);
    __syncthreads();
    const uint32_t nk = s_nk;
    if (s_valid > K) {
        /* All keys are < 2^(top + 1): the bytes above top's are 0 in every
         * key, so the radix starts at top's byte with an empty prefix. */
        const int top = 63 - __clzll((long long)s_or);
        if (tid == 0) {
            s_prefix = 0;
            s_need = K;
            s_done = 0;
        }
        for (int shift = top / 8 * 8;; shift -= 8) {
            for (int i = tid; i < 256; i += blockDim.x)
                s_hist[i] = 0;
            __syncthreads(); /* also publishes s_prefix / s_need of the round before */
            const unsigned long long prefix = s_prefix;
            const bool first_round = shift == top / 8 * 8;
            for_cands(job, g, mode, list, nroots, s_key, s_kid, nk, min_area,
                      [&](unsigned long long key, uint32_t) {
                          /* first_round: every key matches the empty prefix
                           * (and key >> 64 would be undefined when shift is
                           * 56). */
                          if (first_round || key >> (shift + 8) == prefix)
                              atomicAdd(&s_hist[(key >> shift) & 255u], 1u);
                      });
            __syncthreads();
            if (tid < 32) sel_round(s_hist, shift, prefix, s_need, s_prefix, s_thresh, s_done);
            __syncthreads();
            /* Done at the last byte at the latest (keys are unique). */
            if (s_done || shift == 0) break;
        }
    }
    /* s_thresh: 0 keeps every valid key (at most K of them); else exactly
     * K keys are >= it. */
    const unsigned long long thresh = s_thresh;
    for_cands(job, g, mode, list, nroots, s_key, s_kid, nk, min_area,
              [&](unsigned long long key, uint32_t id) {
                  if (key < thresh) return;
                  const unsigned at = atomicAdd(&s_kept, 1u);
                  if (at < K) { /* at most K by construction; never past the arrays */
                      s_keep[at] = key;
                      s_keep_id[at] = id;
                  }
              });
    __syncthreads();
    sel_write(job, g, o, s_kept < K ? s_kept : K, s_keep, s_keep_id);
}

/* Grid: any (grid-stride over the group's runs). Every run of a selected
 * blob (its root tagged by select_kernel) adds to its record with global
 * atomics: sum of x over [a, b] = (a + b)(b - a + 1) / 2 (the product is
 * even), sum of y, the second moments (sum of x*x over the run in closed
 * form, trk_run_sum_xx; y*y and x*y from y and the run's sum of x), bounds,
 * and crack edges. A blob's perimeter is 4 mass -
 * 2 (4-adjacent pixel pairs inside it); a 4-neighbour in the mask is always
 * in the same blob, so the pairs are the len - 1 inside each run plus the
 * overlap of each run with the object's runs of the row above: each run
 * adds 2 + 2 len - 2 overlap(above). Runs of other blobs return after two
 * loads, so the pass costs the group's runs read once, in parallel over
 * the whole device, instead of a walk of each object's rows by one block. */
__global__ void __launch_bounds__(TRK_BLOB_THREADS) stats_kernel(const struct trk_cu_blobjob job)
{
    const uint32_t total = *job.ctl;
    for (uint32_t id = blockIdx.x * blockDim.x + threadIdx.x; id < total;
         id += gridDim.x * blockDim.x) {
        const uint32_t p = job.parent[id];
        const uint32_t tag = (p & SEL_TAG) ? p : job.parent[p];
        if (!(tag & SEL_TAG)) continue;
        const uint32_t yg = job.yg[id];
        const int y = (int)(yg & 0xffffu), g = (int)(yg >> 16);
        struct trk_cu_blob &rec = job.recs[job.objs[job.g0 + g].off + (tag & ~SEL_TAG)];
        const int a = job.x0[id], b = job.x1[id];
        const unsigned long long len = (unsigned long long)(b - a + 1);
        unsigned long long ov = 0;
        if (y > 0) {
            const size_t ra = (size_t)(y - 1) * job.gn + g;
            const uint32_t na = job.rowcnt[ra];
            if (na) {
                const uint32_t a0 = job.rowoff[ra];
                for (uint32_t u = first_ending_from(job.x1, a0, na, a);
                     u < na && (int)job.x0[a0 + u] <= b; u++) {
                    const int c = job.x0[a0 + u], d = job.x1[a0 + u];
                    ov += (unsigned long long)((d < b ? d : b) - (c > a ? c : a) + 1);
                }
            }
        }
        const unsigned long long rsx = (unsigned long long)(a + b) * len / 2, yy = (unsigned)y;
        atomicAdd(&rec.sx, rsx);
        atomicAdd(&rec.sy, yy * len);
        atomicAdd(&rec.sxx, (unsigned long long)trk_run_sum_xx((uint32_t)a, (uint32_t)b));
        atomicAdd(&rec.syy, yy * yy * len);
        atomicAdd(&rec.sxy, yy * rsx);
        atomicAdd(&rec.perim, 2ull + 2ull * len - 2ull * ov);
        atomicMin(&rec.x0, (unsigned)a);
        atomicMax(&rec.x1, (unsigned)b);
        atomicMin(&rec.y0, (unsigned)y);
        atomicMax(&rec.y1, (unsigned)y);
    }
}

/* runs_kernel for a group of nw table words: instances for 1, 2, 4 and 8
 * words (nw rounded up; the tables' own nw bounds every read), each also
 * for groups whose objects all test the frame's native space (no colour
 * conversion in the kernel). One instance for every case was 9300
 * instructions and ncu put 30 % of its warps' stalls on instruction fetch
 * (1080p 8 x 16, H100); per width alone, 6416 for one word and 112 us
 * instead of 130 for the whole 1080p 8 x 16 frame. */
using runs_fn = void (*)(const struct trk_cu_blobjob);
template <bool NATIVE> runs_fn runs_width(int nw)
{
    if (nw <= 1) return runs_kernel<1, NATIVE>;
    if (nw <= 2) return runs_kernel<2, NATIVE>;
    if (nw <= 4) return runs_kernel<4, NATIVE>;
    return runs_kernel<8, NATIVE>;
}
runs_fn runs_for(int nw, bool native)
{
    return native ? runs_width<true>(nw) : runs_width<false>(nw);
}
/* Whether every object of the job's group tests the frame's own space. */
bool native_only(const struct trk_cu_blobjob *job)
{
    const int ns = trk_fmt_is_yuv(job->f.fmt) ? TRK_SPACE_YCBCR : TRK_SPACE_RGB;
    if (job->lt.ncls) return false;
    for (int s = 0; s < TRK_SPACE_COUNT; s++)
        if (job->lt.has[s] != (s == ns)) return false;
    return true;
}
static_assert(MAXW == 8, "runs_for covers 1, 2, 4 and 8 words");

} // namespace

size_t trk_cu_blob_obj_bytes(int max_w, int max_h)
{
    const size_t wpr = ((size_t)max_w + 31) / 32, h = (size_t)max_h;
    const size_t runs = ((size_t)max_w + 1) / 2 * h;
    /* Mask words, rowoff and rowcnt per row; per run slot x0, x1 (16-bit),
     * y|object, parent, mass, first (32-bit). */
    return wpr * h * 4 + h * 2 * 4 + runs * (2 * 2 + 4 * 4);
}

size_t trk_cu_blob_smem(const struct trk_cu_lut *lt)
{
    return (size_t)lt->words * sizeof(uint32_t);
}

int trk_cu_blobs_setup(size_t smem)
{
    for (int native = 0; native < 2; native++)
        for (int nw = 1; nw <= MAXW; nw *= 2)
            TRK_CUDA_TRY(cudaFuncSetAttribute(
                runs_for(nw, native), cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    return 0;
}

int trk_cu_blobs_launch(const struct trk_cu_blobjob *job, int sms, cudaStream_t s)
{
    if (!job || job->gn < 1 || job->g0 < 0 || job->f.width < 1 || job->f.height < 1 ||
        job->f.width > TRK_BLOB_MAX_SIDE || job->f.height > TRK_BLOB_MAX_SIDE ||
        job->wpr != (job->f.width + 31) / 32 || !job->objs || !job->lut || job->lt.nw < 1 ||
        job->lt.nw > MAXW || job->gn > 32 * job->lt.nw || !job->ctl || !job->ctl_next ||
        job->ctl == job->ctl_next || !job->roots || !job->rowoff || !job->rowcnt || !job->x0 ||
        !job->x1 || !job->yg || !job->parent || !job->mass || !job->first || !job->counts ||
        !job->recs || sms < 1 ||
        (job->masks && job->mstride < (size_t)job->wpr * (size_t)job->f.height) ||
        (size_t)job->gn * (size_t)((job->f.width + 1) / 2) * (size_t)job->f.height > job->cap ||
        job->cap >= SEL_TAG)
        return TRK_EINVAL;
    const int H = job->f.height, T = TRK_BLOB_THREADS;
    const int rows_grid = H < TRK_BLOB_ROW_BLOCKS * sms ? H : TRK_BLOB_ROW_BLOCKS * sms;
    const int run_grid = TRK_BLOB_RUN_BLOCKS * sms;
    const int mask_grid = H < TRK_BLOB_MASK_BLOCKS * sms ? H : TRK_BLOB_MASK_BLOCKS * sms;
    if (job->masks)
        mask_runs_kernel<<<mask_grid, TRK_BLOB_MASK_THREADS, 0, s>>>(*job);
    else
        runs_for(
            job->lt.nw,
            native_only(job))<<<rows_grid, TRK_BLOB_ROW_THREADS, trk_cu_blob_smem(&job->lt), s>>>(
            *job);
    TRK_CUDA_TRY(cudaGetLastError());
    union_kernel<<<run_grid, T, 0, s>>>(*job);
    TRK_CUDA_TRY(cudaGetLastError());
    flatten_kernel<<<run_grid, T, 0, s>>>(*job);
    TRK_CUDA_TRY(cudaGetLastError());
    select_kernel<<<job->gn, TRK_BLOB_SEL_THREADS, 0, s>>>(*job);
    TRK_CUDA_TRY(cudaGetLastError());
    stats_kernel<<<run_grid, T, 0, s>>>(*job);
    TRK_CUDA_TRY(cudaGetLastError());
    return 0;
}
