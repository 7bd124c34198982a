/* Blob lists on the GPU: the connected components of each blob object's own
 * mask (restricted to its clipped ROI), measured, and the top K per object,
 * equal bit for bit to cpu_ref.c's flood fill (the definition).
 *
 * Run-based union-find (gpu/cuda/NOTES.md, "Blob lists", says why this
 * design and what it costs). Four launches per group of blob objects:
 *   1. runs_kernel     persistent blocks over rows. The row is read once for
 *                      every object of the group: per pixel, the group's
 *                      lookup tables (shared memory) give the bitmask of the
 *                      objects it matches. Only objects present in the row
 *                      get mask words (one ballot per present object per 32
 *                      pixels) and runs; each (row, object) takes its runs'
 *                      slots with one atomicAdd, its runs sorted by x.
 *   2. union_kernel    grid-stride over runs: each run is united with the
 *                      runs of the same object in the row above that touch
 *                      it (4: overlap, 8: overlap or diagonal).
 *   3. flatten_kernel  grid-stride over runs: each run's parent becomes its
 *                      root; runs add their length to the root's mass and
 *                      their first pixel to the root's (atomicMin).
 *   4. select_kernel   block per object: radix select of the K best roots by
 *                      (mass desc, first asc) among those with mass >=
 *                      min_area, then the statistics of the runs of those K
 *                      (shared-memory records), written out.
 * Work per pixel is one table lookup for all objects; everything after
 * scales with (rows x objects present) and runs, not pixels x objects.
 * Each kernel's writes are complete before the next starts (same stream):
 * the ordering the atomics rely on is within one kernel only, and is
 * spelled out at each. */
#include "cuda_internal.cuh"

#define FULL_MASK 0xffffffffu
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
static_assert(TRK_BLOB_SEL_THREADS % 32 == 0 && TRK_BLOB_SEL_THREADS >= 256 &&
                  TRK_BLOB_SEL_THREADS <= 1024,
              "select block: warp 0 scans 256 bins, 8 per lane");
static_assert(TRK_MAX_BLOBS <= TRK_BLOB_SEL_THREADS, "one thread ranks each selected blob");
static_assert(TRK_MAX_OBJECTS % 32 == 0 && TRK_MAX_OBJECTS <= 65535, "object index in 16 bits");

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
 * unrolled compares, so the array is never indexed at run time and stays
 * out of local memory). */
__device__ __forceinline__ uint32_t bit_of(const uint32_t B[MAXW], int g)
{
    uint32_t w = 0;
#pragma unroll
    for (int q = 0; q < MAXW; q++)
        if (q == (g >> 5)) w = B[q];
    return (w >> (g & 31)) & 1u;
}

/* The group's objects pixel (x, y) matches by colour: B[q] bit i = object
 * 32q + i of the group. The samples and channel triples come from color.h
 * (trk_pixel_native / trk_pixel_triples: the functions cpu_ref.c runs); the
 * tables were built with trk_chan_has per value, so ANDing a channel's three
 * entries is trk_box_match. Summary words first (the OR of an entry's
 * words): a pixel that passes none skips the full entries. Pixels past the
 * width match nothing, so runs never leave the frame. */
__device__ __forceinline__ void pixel_bits(const struct trk_cu_blobjob &job, const uint32_t *lut,
                                           bool yuv, int x, int y, uint32_t B[MAXW])
{
#pragma unroll
    for (int q = 0; q < MAXW; q++)
        B[q] = 0;
    if (x >= job.f.width) return;
    int a, b, c;
    trk_cu_native(job.f, x, y, a, b, c);
    struct trk_cu_px p;
    trk_cu_triples(job.f, yuv, job.need, a, b, c, p);
    const struct trk_cu_lut &lt = job.lt;
    uint32_t sum = 0;
#pragma unroll
    for (int s = 0; s < 3; s++)
        if (lt.has[s])
            sum |= lut[lt.sum_off[s][0] + p.c[s][0]] & lut[lt.sum_off[s][1] + p.c[s][1]] &
                   lut[lt.sum_off[s][2] + p.c[s][2]];
    if (!sum) return;
    const int nw = lt.nw;
#pragma unroll
    for (int s = 0; s < 3; s++) {
        if (!lt.has[s]) continue;
        const uint32_t *t0 = lut + lt.full_off[s][0] + p.c[s][0] * nw;
        const uint32_t *t1 = lut + lt.full_off[s][1] + p.c[s][1] * nw;
        const uint32_t *t2 = lut + lt.full_off[s][2] + p.c[s][2] * nw;
#pragma unroll
        for (int q = 0; q < MAXW; q++)
            if (q < nw) B[q] |= t0[q] & t1[q] & t2[q];
    }
}

/* Grid: persistent blocks, block b takes rows b, b + gridDim.x, ...;
 * TRK_BLOB_THREADS threads; dynamic shared memory: the group's table image
 * (job.lt.words words), copied once per block. Per row:
 *   A. every lane looks up its pixels (warp w takes mask words w, w +
 *      warps, ...): the row's present objects (OR over the row of each
 *      pixel's bits, restricted to the objects whose ROI holds the row)
 *      and which mask words hold any candidate pixel go to shared memory.
 *   B. for each present object (listed in shared memory) and each mask
 *      word: the word (a ballot of bit && column inside the ROI; words
 *      without candidates are 0 without a lookup) goes to the row's slice
 *      of the mask scratch. Pixels are looked up again, but only in
 *      candidate words, which background rows and segments do not have.
 *   C. after __syncthreads (which makes the block's global stores visible
 *      to the block), warp k takes present objects k, k + warps, ...: a
 *      pass over the object's row words counts its runs (starts = m &
 *      ~(m << 1 | previous word's top bit)), lane 0 takes that many run
 *      slots with one atomicAdd on the group's run counter, and a second
 *      pass writes each run (x0 by the lane holding its start, x1 by the
 *      lane holding its end, k-th start and k-th end of a row belong to the
 *      k-th run), y and object, parent = itself, mass 0, first = its first
 *      pixel's raster index. rowoff/rowcnt name each (row, object)'s runs;
 *      absent objects get rowcnt 0.
 * Block 0 also zeroes the run counter of the next launch (ctl_next): this
 * launch's counter was zeroed by the launch before it (or at setup). */
__global__ void __launch_bounds__(TRK_BLOB_THREADS) runs_kernel(const struct trk_cu_blobjob job)
{
    extern __shared__ uint4 s_dyn[];
    uint32_t *s_lut = reinterpret_cast<uint32_t *>(s_dyn);
    __shared__ uint32_t s_act[MAXW], s_pres[MAXW], s_cand[CAND_WORDS];
    __shared__ uint16_t s_list[TRK_MAX_OBJECTS];
    __shared__ int s_rx0[TRK_MAX_OBJECTS], s_rx1[TRK_MAX_OBJECTS];
    __shared__ int s_np;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, warps = blockDim.x >> 5;
    const int W = job.f.width, H = job.f.height, wpr = job.wpr, gn = job.gn;
    const int pw = (wpr + 31) >> 5, nw = job.lt.nw;
    const bool yuv = trk_fmt_is_yuv(job.f.fmt);
    for (int i = tid; i < job.lt.words; i += blockDim.x)
        s_lut[i] = job.lut[i];
    if (blockIdx.x == 0 && tid == 0) *job.ctl_next = 0;

    for (int y = blockIdx.x; y < H; y += gridDim.x) {
        __syncthreads(); /* the table is loaded; the previous row is done with the lists */
        for (int i = tid; i < MAXW; i += blockDim.x)
            s_act[i] = s_pres[i] = 0;
        for (int i = tid; i < pw; i += blockDim.x)
            s_cand[i] = 0;
        if (tid == 0) s_np = 0;
        __syncthreads();
        for (int g = tid; g < gn; g += blockDim.x) {
            bool in = true;
            if (job.rois) {
                const struct trk_roi r = job.rois[job.objs[job.g0 + g].slot];
                in = y >= r.y0 && y <= r.y1 && r.x0 <= r.x1;
            }
            if (in) atomicOr(&s_act[g >> 5], 1u << (g & 31));
        }
        __syncthreads();

        /* A: presence. */
        for (int w = warp; w < wpr; w += warps) {
            uint32_t B[MAXW];
            pixel_bits(job, s_lut, yuv, 32 * w + lane, y, B);
            uint32_t any = 0;
#pragma unroll
            for (int q = 0; q < MAXW; q++) {
                if (q >= nw) break;
                const uint32_t o = __reduce_or_sync(FULL_MASK, B[q] & s_act[q]);
                any |= o;
                if (lane == 0 && o) atomicOr(&s_pres[q], o);
            }
            if (lane == 0 && any) atomicOr(&s_cand[w >> 5], 1u << (w & 31));
        }
        __syncthreads();
        for (int g = tid; g < gn; g += blockDim.x) {
            if ((s_pres[g >> 5] >> (g & 31)) & 1u) {
                const int i = atomicAdd(&s_np, 1);
                s_list[i] = (uint16_t)g;
                int x0 = 0, x1 = W - 1;
                if (job.rois) {
                    const struct trk_roi r = job.rois[job.objs[job.g0 + g].slot];
                    x0 = r.x0;
                    x1 = r.x1;
                }
                s_rx0[i] = x0;
                s_rx1[i] = x1;
            } else {
                job.rowcnt[(size_t)y * gn + g] = 0;
            }
        }
        __syncthreads();
        const int np = s_np;
        if (np == 0) continue; /* the loop head's barrier protects the lists */

        /* B: the present objects' mask words. */
        for (int w = warp; w < wpr; w += warps) {
            const bool cand = (s_cand[w >> 5] >> (w & 31)) & 1u;
            const int x = 32 * w + lane;
            uint32_t B[MAXW];
            if (cand)
                pixel_bits(job, s_lut, yuv, x, y, B);
            else
#pragma unroll
                for (int q = 0; q < MAXW; q++)
                    B[q] = 0;
            for (int i = 0; i < np; i++) {
                const int g = s_list[i];
                uint32_t m = 0;
                if (cand)
                    m = __ballot_sync(FULL_MASK, bit_of(B, g) && x >= s_rx0[i] && x <= s_rx1[i]);
                if (lane == 0) job.mask[((size_t)y * gn + g) * wpr + w] = m;
            }
        }
        __syncthreads();

        /* C: runs. */
        for (int i = warp; i < np; i += warps) {
            const int g = s_list[i];
            const uint32_t *mrow = job.mask + ((size_t)y * gn + g) * wpr;
            uint32_t n = 0, carry = 0;
            for (int c = 0; c < wpr; c += 32) {
                const int w = c + lane;
                const uint32_t m = w < wpr ? mrow[w] : 0;
                uint32_t prev = __shfl_up_sync(FULL_MASK, m, 1);
                if (lane == 0) prev = carry;
                n += __popc(m & ~((m << 1) | (prev >> 31)));
                carry = __shfl_sync(FULL_MASK, m, 31);
            }
            n = __reduce_add_sync(FULL_MASK, n);
            uint32_t off = 0;
            if (lane == 0) {
                off = atomicAdd(job.ctl, n);
                job.rowoff[(size_t)y * gn + g] = off;
                job.rowcnt[(size_t)y * gn + g] = n;
            }
            off = __shfl_sync(FULL_MASK, off, 0);
            uint32_t running = 0;
            carry = 0;
            for (int c = 0; c < wpr; c += 32) {
                const int w = c + lane;
                const uint32_t m = w < wpr ? mrow[w] : 0;
                uint32_t prev = __shfl_up_sync(FULL_MASK, m, 1);
                if (lane == 0) prev = carry;
                uint32_t next = __shfl_down_sync(FULL_MASK, m, 1);
                if (lane == 31) next = w + 1 < wpr ? mrow[w + 1] : 0;
                const uint32_t st = m & ~((m << 1) | (prev >> 31));
                const uint32_t en = m & ~((m >> 1) | (next << 31));
                const uint32_t cnt = __popc(st);
                uint32_t incl = cnt;
#pragma unroll
                for (int d = 1; d < 32; d <<= 1) {
                    const uint32_t u = __shfl_up_sync(FULL_MASK, incl, d);
                    if (lane >= d) incl += u;
                }
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
                running += __shfl_sync(FULL_MASK, incl, 31);
                carry = __shfl_sync(FULL_MASK, m, 31);
            }
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

/* Grid: any (grid-stride over the runs). After union_kernel every tree is
 * final: each run's root is stored as its parent (concurrent finds may read
 * the old parent or the root: both are ancestors), its length is added to
 * the root's mass and its first pixel (raster index) lowers the root's
 * (atomicMin; the root's own is its initial value). Root slots are
 * arbitrary (rows take slots in the order they finish), so the first pixel
 * is carried explicitly. */
__global__ void __launch_bounds__(TRK_BLOB_THREADS) flatten_kernel(const struct trk_cu_blobjob job)
{
    const uint32_t total = *job.ctl;
    for (uint32_t id = blockIdx.x * blockDim.x + threadIdx.x; id < total;
         id += gridDim.x * blockDim.x) {
        const uint32_t r = find_root(job.parent, id);
        if (r != id) {
            job.parent[id] = r;
            atomicMin(&job.first[r], job.first[id]);
        }
        atomicAdd(&job.mass[r], (uint32_t)(job.x1[id] - job.x0[id] + 1));
    }
}

/* A root's sort key: larger = earlier in the list. Mass in the high half,
 * then the complement of its first pixel's raster index (unique per blob,
 * < 2^32 as sides are <= 65535), so ties go to the first in raster order:
 * exactly trk_blob_before. Keys are unique. */
__device__ __forceinline__ unsigned long long blob_key(uint32_t mass, uint32_t first)
{
    return (unsigned long long)mass << 32 | (unsigned long long)(FULL_MASK - first);
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

/* Grid: one block per object of the group, TRK_BLOB_SEL_THREADS threads.
 * Selection: the K largest keys among roots (parent == itself after
 * flatten_kernel) with mass >= min_area. When more than K qualify, an MSB
 * radix select (8-bit digits, starting at the highest byte any key uses)
 * narrows the prefix of the K-th largest key until its bin holds exactly
 * the keys still needed (at the last byte it always does: keys are unique);
 * the kept keys are those >= that prefix. Shared: the 256-bin histogram
 * (shared atomicAdd per candidate), the kept keys (at most K, appended with
 * a shared atomicAdd), the round's state written by warp 0 between
 * barriers. The kept keys are ranked by counting (K <= 64); each rank's
 * record is initialised in shared memory and its root tagged in parent[]
 * (visible to the block after __syncthreads; read back through L2).
 * Statistics: every run of the object whose root is tagged adds to its
 * record with shared atomics: sum of x over [a, b] = (a + b)(b - a + 1) / 2
 * (the product is even), sum of y, bounds, and crack edges. A blob's
 * perimeter is 4 mass - 2 (4-adjacent pixel pairs inside it); a
 * 4-neighbour in the mask is always in the same blob, so the pairs are the
 * len - 1 inside each run plus the overlap of each run with the object's
 * runs of the row above: each run adds 2 + 2 len - 2 overlap(above).
 * Then the records go out and the list length. */
__global__ void __launch_bounds__(TRK_BLOB_SEL_THREADS)
    select_kernel(const struct trk_cu_blobjob job)
{
    __shared__ unsigned s_hist[256];
    __shared__ unsigned long long s_keep[TRK_MAX_BLOBS];
    __shared__ uint32_t s_keep_id[TRK_MAX_BLOBS];
    __shared__ struct trk_cu_blob s_rec[TRK_MAX_BLOBS];
    __shared__ unsigned long long s_or, s_prefix, s_thresh;
    __shared__ unsigned s_valid, s_need, s_kept;
    __shared__ int s_done;
    const int g = blockIdx.x, tid = threadIdx.x, lane = tid & 31;
    const struct trk_cu_bobj &o = job.objs[job.g0 + g];
    const uint32_t K = (uint32_t)o.k, min_area = o.min_area;
    const uint32_t *parent = job.parent;
    if (tid == 0) {
        s_or = 0;
        s_valid = 0;
        s_kept = 0;
        s_thresh = 0;
    }
    __syncthreads();
    {
        unsigned cnt = 0;
        unsigned long long orv = 0;
        for_runs(job, g, [&](uint32_t id, int) {
            if (parent[id] != id) return;
            const uint32_t m = job.mass[id];
            if (m < min_area) return;
            cnt++;
            orv |= blob_key(m, job.first[id]);
        });
        if (cnt) {
            atomicAdd(&s_valid, cnt);
            atomicOr(&s_or, orv);
        }
    }
    __syncthreads();
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
            for_runs(job, g, [&](uint32_t id, int) {
                if (parent[id] != id) return;
                const uint32_t m = job.mass[id];
                if (m < min_area) return;
                const unsigned long long key = blob_key(m, job.first[id]);
                /* first_round: every key matches the empty prefix (and
                 * key >> 64 would be undefined when shift is 56). */
                if (first_round || key >> (shift + 8) == prefix)
                    atomicAdd(&s_hist[(key >> shift) & 255u], 1u);
            });
            __syncthreads();
            if (tid < 32) {
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
                unsigned incl = sum;
#pragma unroll
                for (int d = 1; d < 32; d <<= 1) {
                    const unsigned u = __shfl_up_sync(FULL_MASK, incl, d);
                    if (lane >= d) incl += u;
                }
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
            __syncthreads();
            /* Done at the last byte at the latest (keys are unique). */
            if (s_done || shift == 0) break;
        }
    }
    /* s_thresh: 0 keeps every valid key (at most K of them); else exactly
     * K keys are >= it. */
    const unsigned long long thresh = s_thresh;
    for_runs(job, g, [&](uint32_t id, int) {
        if (parent[id] != id) return;
        const uint32_t m = job.mass[id];
        if (m < min_area) return;
        const unsigned long long key = blob_key(m, job.first[id]);
        if (key < thresh) return;
        const unsigned at = atomicAdd(&s_kept, 1u);
        if (at < K) { /* at most K by construction; never past the arrays */
            s_keep[at] = key;
            s_keep_id[at] = id;
        }
    });
    __syncthreads();
    const unsigned kept = s_kept < K ? s_kept : K;
    if ((unsigned)tid < kept) {
        const unsigned long long key = s_keep[tid];
        unsigned rank = 0;
        for (unsigned i = 0; i < kept; i++)
            rank += s_keep[i] > key;
        struct trk_cu_blob &rec = s_rec[rank];
        rec.mass = (unsigned)(key >> 32);
        rec.first = FULL_MASK - (uint32_t)key;
        rec.sx = rec.sy = rec.perim = 0;
        rec.x0 = rec.y0 = FULL_MASK;
        rec.x1 = rec.y1 = 0;
        rec.pad = 0;
        job.parent[s_keep_id[tid]] = SEL_TAG | rank;
    }
    __syncthreads();
    if (kept) {
        const int e_conn = 0; /* crack edges: 4-adjacency, whatever the labelling used */
        for_runs(job, g, [&](uint32_t id, int y) {
            const uint32_t p = __ldcg(parent + id);
            const uint32_t tag = (p & SEL_TAG) ? p : __ldcg(parent + p);
            if (!(tag & SEL_TAG)) return;
            struct trk_cu_blob &rec = s_rec[tag & ~SEL_TAG];
            const int a = job.x0[id], b = job.x1[id];
            const unsigned long long len = (unsigned long long)(b - a + 1);
            unsigned long long ov = 0;
            if (y > 0) {
                const size_t ra = (size_t)(y - 1) * job.gn + g;
                const uint32_t na = job.rowcnt[ra], a0 = job.rowoff[ra];
                for (uint32_t u = na ? first_ending_from(job.x1, a0, na, a - e_conn) : 0;
                     u < na && (int)job.x0[a0 + u] <= b + e_conn; u++) {
                    const int c = job.x0[a0 + u], d = job.x1[a0 + u];
                    ov += (unsigned long long)((d < b ? d : b) - (c > a ? c : a) + 1);
                }
            }
            atomicAdd(&rec.sx, (unsigned long long)(a + b) * len / 2);
            atomicAdd(&rec.sy, (unsigned long long)y * len);
            atomicAdd(&rec.perim, 2ull + 2ull * len - 2ull * ov);
            atomicMin(&rec.x0, (unsigned)a);
            atomicMax(&rec.x1, (unsigned)b);
            atomicMin(&rec.y0, (unsigned)y);
            atomicMax(&rec.y1, (unsigned)y);
        });
    }
    __syncthreads();
    if ((unsigned)tid < kept) job.recs[o.off + tid] = s_rec[tid];
    if (tid == 0) job.counts[job.g0 + g] = kept;
}

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
    TRK_CUDA_TRY(
        cudaFuncSetAttribute(runs_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    return 0;
}

int trk_cu_blobs_launch(const struct trk_cu_blobjob *job, int sms, cudaStream_t s)
{
    if (!job || job->gn < 1 || job->g0 < 0 || job->f.width < 1 || job->f.height < 1 ||
        job->f.width > TRK_BLOB_MAX_SIDE || job->f.height > TRK_BLOB_MAX_SIDE ||
        job->wpr != (job->f.width + 31) / 32 || !job->objs || !job->lut || job->lt.nw < 1 ||
        job->lt.nw > MAXW || job->gn > 32 * job->lt.nw || !job->ctl || !job->ctl_next ||
        job->ctl == job->ctl_next || !job->mask || !job->rowoff || !job->rowcnt || !job->x0 ||
        !job->x1 || !job->yg || !job->parent || !job->mass || !job->first || !job->counts ||
        !job->recs || sms < 1 ||
        (size_t)job->gn * (size_t)((job->f.width + 1) / 2) * (size_t)job->f.height > job->cap ||
        job->cap >= SEL_TAG)
        return TRK_EINVAL;
    const int H = job->f.height, T = TRK_BLOB_THREADS;
    const int rows_grid = H < TRK_BLOB_ROW_BLOCKS * sms ? H : TRK_BLOB_ROW_BLOCKS * sms;
    const int run_grid = TRK_BLOB_RUN_BLOCKS * sms;
    runs_kernel<<<rows_grid, T, trk_cu_blob_smem(&job->lt), s>>>(*job);
    TRK_CUDA_TRY(cudaGetLastError());
    union_kernel<<<run_grid, T, 0, s>>>(*job);
    TRK_CUDA_TRY(cudaGetLastError());
    flatten_kernel<<<run_grid, T, 0, s>>>(*job);
    TRK_CUDA_TRY(cudaGetLastError());
    select_kernel<<<job->gn, TRK_BLOB_SEL_THREADS, 0, s>>>(*job);
    TRK_CUDA_TRY(cudaGetLastError());
    return 0;
}
