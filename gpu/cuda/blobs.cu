/* Blob lists on the GPU: the connected components of each blob object's own
 * mask (restricted to its clipped ROI), measured, and the top K per object,
 * equal bit for bit to cpu_ref.c's flood fill (the definition).
 *
 * Run-based union-find on bit-packed masks (gpu/cuda/NOTES.md, "Blob
 * lists", says why this design):
 *   1. mask_kernel     block per row: thresholds the row once for every
 *                      object of the group (one ballot per object per 32
 *                      pixels: the mask word), then one warp per object finds
 *                      the row's runs with bit tricks and a warp scan, and
 *                      writes each run's span, parent = itself, mass = 0.
 *   2. union_kernel    thread per mask word: each run starting in the word
 *                      is united with the runs of the row above that touch
 *                      it (4: overlap, 8: overlap or diagonal).
 *   3. flatten_kernel  thread per mask word: each run's parent becomes its
 *                      root; runs add their length to the root's mass; roots
 *                      go into a compact list per object.
 *   4. select_kernel   block per object: radix select of the K best roots by
 *                      (mass desc, first asc) among those with mass >=
 *                      min_area; writes their records, tags them in parent.
 *   5. stats_kernel    thread per mask word: runs of a selected blob add
 *                      their sums, bounds and crack edges to its record.
 * Union is by atomicMin, so every root is the smallest run index of its
 * component; run indices are in raster order, so the root is the run that
 * holds the component's first pixel, and the key (mass, root index) orders
 * blobs exactly like trk_blob_before. Each kernel's writes are complete
 * before the next starts (same stream): the ordering the atomics rely on is
 * within one kernel only, and is spelled out at each. */
#include "cuda_internal.cuh"

#define FULL_MASK 0xffffffffu
/* parent[] of a selected root: TAG | its rank in the list. Run indices stay
 * below 2^31 (TRK_BLOB_MAX_SIDE), so the bit is free. */
#define SEL_TAG 0x80000000u

namespace
{

static_assert(TRK_BLOB_THREADS % 32 == 0 && TRK_BLOB_THREADS <= 1024, "blob block size");
static_assert(TRK_BLOB_SEL_THREADS % 32 == 0 && TRK_BLOB_SEL_THREADS >= 256 &&
                  TRK_BLOB_SEL_THREADS <= 1024,
              "select block: warp 0 scans 256 bins, 8 per lane");
static_assert(TRK_MAX_BLOBS <= TRK_BLOB_SEL_THREADS, "one thread ranks each selected blob");
static_assert((size_t)((TRK_BLOB_MAX_SIDE + 1) / 2) * TRK_BLOB_MAX_SIDE < SEL_TAG,
              "run indices must leave the tag bit free");

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

/* Pixels set in row `row` (wpr words) between a and b inclusive. */
__device__ __forceinline__ unsigned popc_range(const uint32_t *row, int a, int b)
{
    const int wa = a >> 5, wb = b >> 5;
    unsigned n = 0;
    for (int w = wa; w <= wb; w++) {
        uint32_t m = row[w];
        if (w == wa) m &= FULL_MASK << (a & 31);
        if (w == wb) m &= FULL_MASK >> (31 - (b & 31));
        n += __popc(m);
    }
    return n;
}

/* The per-object views of the job's scratch arrays. */
struct objview {
    uint32_t *mask, *wp, *rowruns, *parent, *mass, *roots;
    uint16_t *x0, *x1;
};

__device__ __forceinline__ objview view(const struct trk_cu_blobjob &j, int g)
{
    objview v;
    v.mask = j.mask + (size_t)g * j.word_stride;
    v.wp = j.wp + (size_t)g * j.word_stride;
    v.rowruns = j.rowruns + (size_t)g * j.row_stride;
    v.parent = j.parent + (size_t)g * j.run_stride;
    v.mass = j.mass + (size_t)g * j.run_stride;
    v.roots = j.roots + (size_t)g * j.run_stride;
    v.x0 = j.x0 + (size_t)g * j.run_stride;
    v.x1 = j.x1 + (size_t)g * j.run_stride;
    return v;
}

/* Grid: one block per row y, TRK_BLOB_THREADS threads.
 * Phase 1: lane i of a warp thresholds pixel 32 w + i of the row (w the
 * warp's word this step): native samples and channel triples from color.h
 * (the functions cpu_ref.c runs), then per object its ROI and
 * trk_box_match; __ballot_sync gives the object's mask word, lane 0 stores
 * it. Pixels past the width are 0, so runs never leave the frame.
 * Phase 2 (after __syncthreads, which makes the block's global stores
 * visible to the block): warp g handles objects g, g + warps, ... Each lane
 * takes one word per step: run starts = m & ~(m << 1 | previous word's top
 * bit), ends = m & ~(m >> 1 | next word's bit 0 << 31); a warp scan of the
 * start counts gives wp (runs starting before the word) and the run index
 * of each start; the first end of a word belongs to the run still open from
 * the previous word when bit 31 of that word and bit 0 of this one are set.
 * No atomics: every run is written by the one lane holding its start (x0,
 * parent, mass) or its end (x1). Block 0 also zeroes the root counts, which
 * flatten_kernel increments. */
__global__ void __launch_bounds__(TRK_BLOB_THREADS) mask_kernel(const struct trk_cu_blobjob job)
{
    const int y = blockIdx.x;
    const int W = job.f.width, wpr = job.wpr;
    const int tid = threadIdx.x, lane = tid & 31;
    const bool yuv = trk_fmt_is_yuv(job.f.fmt);
    if (y == 0)
        for (int g = tid; g < job.gn; g += blockDim.x)
            job.nroots[g] = 0;

    for (int xs = 0; xs < wpr * 32; xs += blockDim.x) {
        const int x = xs + tid;
        const bool in = x < W;
        struct trk_cu_px p = {};
        if (in) {
            int a, b, c;
            trk_cu_native(job.f, x, y, a, b, c);
            trk_cu_triples(job.f, yuv, job.need, a, b, c, p);
        }
        for (int g = 0; g < job.gn; g++) {
            const struct trk_cu_bobj &o = job.objs[job.g0 + g];
            bool hit = false;
            if (in) {
                const struct trk_roi r =
                    job.rois ? job.rois[o.slot] : trk_roi{ 0, 0, W - 1, job.f.height - 1 };
                const int *t = p.c[o.space];
                hit = x >= r.x0 && x <= r.x1 && y >= r.y0 && y <= r.y1 &&
                      trk_box_match(o.lo, o.hi, o.space == TRK_SPACE_HSV, t[0], t[1], t[2]);
            }
            const uint32_t m = __ballot_sync(FULL_MASK, hit);
            if (lane == 0 && (x >> 5) < wpr)
                job.mask[(size_t)g * job.word_stride + (size_t)y * wpr + (x >> 5)] = m;
        }
    }
    __syncthreads();

    const int warps = blockDim.x >> 5;
    const uint32_t rbase = (uint32_t)y * (uint32_t)job.cap; /* index of run 0 of the row */
    for (int g = tid >> 5; g < job.gn; g += warps) {
        const objview v = view(job, g);
        const uint32_t *mrow = v.mask + (size_t)y * wpr;
        uint32_t *wprow = v.wp + (size_t)y * wpr;
        uint32_t running = 0, carry = 0; /* runs so far; the last word of the step before */
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
                wprow[w] = first;
                uint32_t s = st, k = first;
                while (s) {
                    const int j = __ffs(s) - 1;
                    s &= s - 1;
                    const uint32_t id = rbase + k++;
                    v.x0[id] = (uint16_t)(32 * w + j);
                    v.parent[id] = id;
                    v.mass[id] = 0;
                }
                const uint32_t open = (prev >> 31) & m & 1u;
                uint32_t e = en;
                k = first - open;
                while (e) {
                    const int j = __ffs(e) - 1;
                    e &= e - 1;
                    v.x1[rbase + k++] = (uint16_t)(32 * w + j);
                }
            }
            running += __shfl_sync(FULL_MASK, incl, 31);
            carry = __shfl_sync(FULL_MASK, m, 31);
        }
        if (lane == 0) v.rowruns[y] = running;
    }
}

/* The runs of row y that start in mask word w: [k0, k1). */
__device__ __forceinline__ void word_runs(const struct trk_cu_blobjob &job, const objview &v, int y,
                                          int w, uint32_t &k0, uint32_t &k1)
{
    const uint32_t *wprow = v.wp + (size_t)y * job.wpr;
    k0 = wprow[w];
    k1 = w + 1 < job.wpr ? wprow[w + 1] : v.rowruns[y];
}

/* Grid: x over the (row, word) pairs of the frame, y over the group's
 * objects; TRK_BLOB_THREADS threads. A thread unites each run starting in
 * its word with every run of the row above that touches it: above-run
 * [c, d] touches [a, b] when d >= a - e and c <= b + e (e = 1 for
 * 8-connectivity, 0 for 4). Runs of a row are sorted and disjoint, so they
 * are found by a binary search for the first with d >= a - e, then a walk
 * while c <= b + e. Atomics: unite's atomicMin on parent (see there); spans
 * and run counts are only read. */
__global__ void __launch_bounds__(TRK_BLOB_THREADS) union_kernel(const struct trk_cu_blobjob job)
{
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int y = (int)(t / (size_t)job.wpr), w = (int)(t % (size_t)job.wpr);
    if (y == 0 || y >= job.f.height) return;
    const int g = blockIdx.y;
    const objview v = view(job, g);
    uint32_t k0, k1;
    word_runs(job, v, y, w, k0, k1);
    if (k0 == k1) return;
    const int e = job.objs[job.g0 + g].conn == 4 ? 0 : 1;
    const uint32_t base = (uint32_t)y * (uint32_t)job.cap, abase = base - (uint32_t)job.cap;
    const uint32_t na = v.rowruns[y - 1];
    /* First above-run ending at or after the first run's a - e. */
    uint32_t j = 0, hi = na;
    const int lo0 = (int)v.x0[base + k0] - e;
    while (j < hi) {
        const uint32_t mid = (j + hi) / 2;
        if ((int)v.x1[abase + mid] < lo0)
            j = mid + 1;
        else
            hi = mid;
    }
    for (uint32_t k = k0; k < k1; k++) {
        const uint32_t id = base + k;
        const int a = v.x0[id] - e, b = v.x1[id] + e;
        while (j < na && (int)v.x1[abase + j] < a)
            j++;
        for (uint32_t u = j; u < na && (int)v.x0[abase + u] <= b; u++)
            unite(v.parent, id, abase + u);
    }
}

/* Grid: as union_kernel. After it every tree is final, so each run's root
 * is found and stored as its parent (concurrent finds may read the old
 * parent or the root: both are ancestors). The run's length goes to the
 * root's mass (atomicAdd); each root puts itself in the object's root list
 * (atomicAdd on the count zeroed by mask_kernel). */
__global__ void __launch_bounds__(TRK_BLOB_THREADS) flatten_kernel(const struct trk_cu_blobjob job)
{
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int y = (int)(t / (size_t)job.wpr), w = (int)(t % (size_t)job.wpr);
    if (y >= job.f.height) return;
    const int g = blockIdx.y;
    const objview v = view(job, g);
    uint32_t k0, k1;
    word_runs(job, v, y, w, k0, k1);
    const uint32_t base = (uint32_t)y * (uint32_t)job.cap;
    for (uint32_t k = k0; k < k1; k++) {
        const uint32_t id = base + k;
        const uint32_t r = find_root(v.parent, id);
        if (r != id)
            v.parent[id] = r;
        else
            v.roots[atomicAdd(&job.nroots[g], 1u)] = id;
        atomicAdd(&v.mass[r], (uint32_t)(v.x1[id] - v.x0[id] + 1));
    }
}

/* A root's sort key: larger = earlier in the list. Mass in the high half,
 * then the complement of the root index (smaller index = earlier first
 * pixel, so ties go to the first in raster order). Keys are unique. */
__device__ __forceinline__ unsigned long long blob_key(uint32_t mass, uint32_t root)
{
    return (unsigned long long)mass << 32 | (unsigned long long)(FULL_MASK - root);
}

/* Grid: one block per object of the group, TRK_BLOB_SEL_THREADS threads.
 * Keeps the K largest keys among roots with mass >= min_area: when more
 * than K qualify, an MSB radix select (8-bit digits, starting at the
 * highest byte any key uses) narrows the prefix of the K-th largest key
 * until its bin holds exactly the keys still needed (at the last byte it
 * always does: keys are unique); the kept keys are then those >= that
 * prefix. Shared: the 256-bin histogram (shared atomicAdd per candidate),
 * the kept keys (at most K, appended with a shared atomicAdd), the round's
 * state written by warp 0 between barriers. The kept keys are ranked by
 * counting (K <= 64), each rank's record initialised and its root tagged
 * in parent[] for stats_kernel. */
__global__ void __launch_bounds__(TRK_BLOB_SEL_THREADS)
    select_kernel(const struct trk_cu_blobjob job)
{
    __shared__ unsigned s_hist[256];
    __shared__ unsigned long long s_keep[TRK_MAX_BLOBS];
    __shared__ unsigned long long s_or, s_prefix, s_thresh;
    __shared__ unsigned s_valid, s_need, s_kept;
    __shared__ int s_done;
    const int g = blockIdx.x, tid = threadIdx.x, lane = tid & 31;
    const struct trk_cu_bobj &o = job.objs[job.g0 + g];
    const objview v = view(job, g);
    const uint32_t n = job.nroots[g], K = (uint32_t)o.k, min_area = o.min_area;
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
        for (uint32_t i = tid; i < n; i += blockDim.x) {
            const uint32_t r = v.roots[i], m = v.mass[r];
            if (m < min_area) continue;
            cnt++;
            orv |= blob_key(m, r);
        }
        atomicAdd(&s_valid, cnt);
        atomicOr(&s_or, orv);
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
            for (uint32_t i = tid; i < n; i += blockDim.x) {
                const uint32_t r = v.roots[i], m = v.mass[r];
                if (m < min_area) continue;
                const unsigned long long key = blob_key(m, r);
                /* first_round: every key matches the empty prefix (and
                 * key >> 64 would be undefined when shift is 56). */
                if (first_round || key >> (shift + 8) == prefix)
                    atomicAdd(&s_hist[(key >> shift) & 255u], 1u);
            }
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
                 * (compute-sanitizer racecheck: 48 hazards). */
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
    for (uint32_t i = tid; i < n; i += blockDim.x) {
        const uint32_t r = v.roots[i], m = v.mass[r];
        if (m < min_area) continue;
        const unsigned long long key = blob_key(m, r);
        if (key < thresh) continue;
        const unsigned at = atomicAdd(&s_kept, 1u);
        if (at < K) s_keep[at] = key; /* at most K by construction; never past the array */
    }
    __syncthreads();
    const unsigned kept = s_kept < K ? s_kept : K;
    if ((unsigned)tid < kept) {
        const unsigned long long key = s_keep[tid];
        unsigned rank = 0;
        for (unsigned i = 0; i < kept; i++)
            rank += s_keep[i] > key;
        const uint32_t root = FULL_MASK - (uint32_t)key;
        const uint32_t y = root / (uint32_t)job.cap;
        struct trk_cu_blob &rec = job.recs[o.off + rank];
        rec.mass = (unsigned)(key >> 32);
        rec.first = (unsigned long long)y * (unsigned)job.f.width + v.x0[root];
        rec.sx = rec.sy = rec.perim = 0;
        rec.x0 = rec.y0 = FULL_MASK;
        rec.x1 = rec.y1 = 0;
        rec.pad = 0;
        v.parent[root] = SEL_TAG | rank;
    }
    if (tid == 0) job.counts[job.g0 + g] = kept;
}

/* Grid: as union_kernel. A run whose root was selected (its parent, or its
 * own slot when it is the root, carries SEL_TAG) adds to the blob's record:
 * sum of x over [a, b] = (a + b)(b - a + 1) / 2 (the product is even), sum
 * of y, bounds (atomicMin / atomicMax on the initial 0xffffffff / 0), and
 * crack edges: 2 (the run's ends: its neighbours left and right are off the
 * mask) + its pixels whose neighbour above is off + those whose neighbour
 * below is off (popcounts of the mask rows above and below over [a, b]). A
 * 4-neighbour in the mask is always in the same blob, so this is the
 * definition. Global atomics on K records per object. */
__global__ void __launch_bounds__(TRK_BLOB_THREADS) stats_kernel(const struct trk_cu_blobjob job)
{
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int H = job.f.height;
    const int y = (int)(t / (size_t)job.wpr), w = (int)(t % (size_t)job.wpr);
    if (y >= H) return;
    const int g = blockIdx.y;
    const objview v = view(job, g);
    uint32_t k0, k1;
    word_runs(job, v, y, w, k0, k1);
    if (k0 == k1) return;
    const struct trk_cu_bobj &o = job.objs[job.g0 + g];
    const uint32_t base = (uint32_t)y * (uint32_t)job.cap;
    for (uint32_t k = k0; k < k1; k++) {
        const uint32_t id = base + k;
        const uint32_t p = v.parent[id];
        uint32_t tag = p;
        if (!(p & SEL_TAG)) tag = v.parent[p]; /* p is the root */
        if (!(tag & SEL_TAG)) continue;
        struct trk_cu_blob &rec = job.recs[o.off + (int)(tag & ~SEL_TAG)];
        const int a = v.x0[id], b = v.x1[id];
        const unsigned long long len = (unsigned long long)(b - a + 1);
        const unsigned above = y > 0 ? popc_range(v.mask + (size_t)(y - 1) * job.wpr, a, b) : 0;
        const unsigned below = y + 1 < H ? popc_range(v.mask + (size_t)(y + 1) * job.wpr, a, b) : 0;
        atomicAdd(&rec.sx, (unsigned long long)(a + b) * len / 2);
        atomicAdd(&rec.sy, (unsigned long long)y * len);
        atomicAdd(&rec.perim, 2ull + (len - above) + (len - below));
        atomicMin(&rec.x0, (unsigned)a);
        atomicMax(&rec.x1, (unsigned)b);
        atomicMin(&rec.y0, (unsigned)y);
        atomicMax(&rec.y1, (unsigned)y);
    }
}

} // namespace

size_t trk_cu_blob_obj_bytes(int max_w, int max_h)
{
    const size_t wpr = ((size_t)max_w + 31) / 32, h = (size_t)max_h;
    const size_t runs = ((size_t)max_w + 1) / 2 * h;
    /* mask + wp words, rowruns, then parent, mass, roots (32-bit) and the
     * two 16-bit span ends per run, plus the root count. */
    return 2 * wpr * h * 4 + h * 4 + runs * (3 * 4 + 2 * 2) + 4;
}

int trk_cu_blobs_launch(const struct trk_cu_blobjob *job, cudaStream_t s)
{
    if (!job || job->gn < 1 || job->g0 < 0 || job->f.width < 1 || job->f.height < 1 ||
        job->f.width > TRK_BLOB_MAX_SIDE || job->f.height > TRK_BLOB_MAX_SIDE ||
        job->wpr != (job->f.width + 31) / 32 || job->cap != (job->f.width + 1) / 2 || !job->objs ||
        !job->mask || !job->wp || !job->rowruns || !job->parent || !job->mass || !job->roots ||
        !job->nroots || !job->x0 || !job->x1 || !job->counts || !job->recs || job->gn > 65535)
        return TRK_EINVAL;
    const int H = job->f.height, T = TRK_BLOB_THREADS;
    const size_t words = (size_t)H * (size_t)job->wpr;
    const dim3 grid((unsigned)((words + T - 1) / T), (unsigned)job->gn);
    mask_kernel<<<H, T, 0, s>>>(*job);
    TRK_CUDA_TRY(cudaGetLastError());
    union_kernel<<<grid, T, 0, s>>>(*job);
    TRK_CUDA_TRY(cudaGetLastError());
    flatten_kernel<<<grid, T, 0, s>>>(*job);
    TRK_CUDA_TRY(cudaGetLastError());
    select_kernel<<<job->gn, TRK_BLOB_SEL_THREADS, 0, s>>>(*job);
    TRK_CUDA_TRY(cudaGetLastError());
    stats_kernel<<<grid, T, 0, s>>>(*job);
    TRK_CUDA_TRY(cudaGetLastError());
    return 0;
}
