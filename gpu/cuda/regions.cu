/* The CUDA regional form: the regional multiple reduction (RRM) of many
 * regions in one launch, and blob lists inside regions (regions.cuh; the
 * designs and bounds are in gpu/cuda/NOTES.md, "Regions").
 *
 * Region j's result is, by definition (backend.h), object obj's aggregate
 * over its ROI clipped to the frame, and its blob list the components of the
 * object's mask restricted to that rectangle. Every kernel here tests pixels
 * with color.h's rules (trk_pixel_native, trk_pixel_triples, trk_box_match),
 * reads only pixels inside the clipped rectangles (so a ROI-only upload is
 * enough) and combines integers only, so any order gives the same bits.
 *
 * Aggregates, two designs:
 *  - seed (docs/ARCHITECTURE.md, RRM): each region cut into four quadrants
 *    around its centre (Q0..Q3: left-bottom, right-bottom, left-top,
 *    right-top), each quadrant into alpha patches, beta per patch row; one
 *    block per (region, patch) with block id j * 4 alpha + Q alpha + y' beta
 *    + x' writes the patch's partial; a second kernel reduces each region's
 *    4 alpha partials (plain stores, no atomics).
 *  - flat: one block per (region, 8-row tile) from a prefix of tiles per
 *    region (binary search), a warp per row, warp reductions, one set of
 *    global atomics per block.
 * Blobs: a region that fits a block's shared memory (at most 32768
 * pixels) is labelled start to finish by one block (rb_kernel: run labels
 * from ballots, union-find in shared memory, warp-aggregated statistics,
 * its top K, one write); larger ones by pixel union-find in global memory
 * over their pixels laid end to end (each region its own label space),
 * roots numbered per region, warp-aggregated statistics, then one block per
 * region picks its K best. */
#include <string.h>

#include "log_hook.h"
#include "regions.cuh"
#include "warp.cuh"

namespace
{

const unsigned NONE = 0xffffffffu;
const int FLAT_ROWS = 8; /* rows (warps) per block of the flat design */
const int SEED_THREADS = 128;
const int BLOB_THREADS = 256;

/* A region as the aggregate kernels see it: clipped, inclusive (empty:
 * x0 > x1), and its object's index. */
struct rreg {
    int x0, y0, x1, y1;
    int obj, pad;
};

/* A non-empty region of a blob object as the labelling sees it: its pixels
 * are scratch entries [poff, poff + area) of its batch, row-major in the
 * rectangle; its list goes to output records [out, out + k). */
struct breg {
    int x0, y0, x1, y1;
    int obj, conn;
    unsigned min_area;
    int k;
    unsigned poff, out;
    int j, pad; /* region index */
};

__device__ __forceinline__ bool px_match(const struct trk_cu_frame &f, int yuv,
                                         const struct trk_cu_obj &o, int x, int y)
{
    int a, b, c;
    trk_cu_native(f, x, y, a, b, c);
    return trk_cu_obj_match(f, yuv != 0, o, a, b, c);
}

/* The next call's accumulators (the other half of the double buffer)
 * zeroed by the grid of this call's aggregate kernel: no memset call. */
__device__ __forceinline__ void clear_next(struct trk_cu_acc *clr)
{
    const struct trk_cu_acc z = {};
    for (unsigned e = blockIdx.x * blockDim.x + threadIdx.x; e < TRK_MAX_REGIONS;
         e += gridDim.x * blockDim.x)
        clr[e] = z;
}

/* ------------------------------------------------------------- flat */

__global__ void __launch_bounds__(32 * FLAT_ROWS)
    flat_kernel(struct trk_cu_frame f, const struct trk_cu_obj *objs, const struct rreg *reg,
                const int *tiles, int n, struct trk_cu_acc *acc, struct trk_cu_acc *clr)
{
    clear_next(clr);
    const int t = blockIdx.x;
    /* The region of tile t: the largest j with tiles[j] <= t. */
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (tiles[mid] <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    const int j = lo;
    const struct rreg R = reg[j];
    const struct trk_cu_obj o = objs[R.obj];
    const int yuv = trk_fmt_is_yuv(f.fmt);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int y = R.y0 + (t - tiles[j]) * FLAT_ROWS + warp;
    unsigned cnt = 0, mn = NONE, mx = 0;
    unsigned long long sx = 0, sxx = 0;
    if (y <= R.y1)
        for (int x = R.x0 + lane; x <= R.x1; x += 32)
            if (px_match(f, yuv, o, x, y)) {
                cnt++;
                sx += (unsigned)x;
                sxx += (unsigned long long)x * (unsigned)x;
                mn = min(mn, (unsigned)x);
                mx = max(mx, (unsigned)x);
            }
    cnt = __reduce_add_sync(TRK_CU_FULL_MASK, cnt);
    mn = __reduce_min_sync(TRK_CU_FULL_MASK, mn);
    mx = __reduce_max_sync(TRK_CU_FULL_MASK, mx);
    sx = trk_cu_warp_sum64(sx);
    sxx = trk_cu_warp_sum64(sxx);
    __shared__ unsigned s_cnt[FLAT_ROWS], s_mn[FLAT_ROWS], s_mx[FLAT_ROWS];
    __shared__ unsigned long long s_sx[FLAT_ROWS], s_sxx[FLAT_ROWS];
    if (lane == 0) {
        s_cnt[warp] = cnt;
        s_mn[warp] = mn;
        s_mx[warp] = mx;
        s_sx[warp] = sx;
        s_sxx[warp] = sxx;
    }
    __syncthreads();
    if (threadIdx.x != 0) return;
    unsigned long long mass = 0, tx = 0, ty = 0, txx = 0, tyy = 0, txy = 0;
    unsigned bmn = NONE, bmx = 0, ymn = NONE, ymx = 0;
    const int y0 = R.y0 + (t - tiles[j]) * FLAT_ROWS;
    for (int w = 0; w < FLAT_ROWS; w++) {
        if (!s_cnt[w]) continue;
        const unsigned yw = (unsigned)(y0 + w);
        mass += s_cnt[w];
        tx += s_sx[w];
        ty += (unsigned long long)s_cnt[w] * yw;
        txx += s_sxx[w];
        tyy += (unsigned long long)s_cnt[w] * yw * yw;
        txy += s_sx[w] * yw;
        bmn = min(bmn, s_mn[w]);
        bmx = max(bmx, s_mx[w]);
        ymn = min(ymn, yw);
        ymx = max(ymx, yw);
    }
    if (!mass) return;
    struct trk_cu_acc *a = &acc[j];
    atomicAdd(&a->mass, mass);
    atomicAdd(&a->sx, tx);
    atomicAdd(&a->sy, ty);
    atomicAdd(&a->sxx, txx);
    atomicAdd(&a->syy, tyy);
    atomicAdd(&a->sxy, txy);
    atomicMax(&a->nx0, TRK_ACC_BIG - bmn);
    atomicMax(&a->ny0, TRK_ACC_BIG - ymn);
    atomicMax(&a->px1, bmx + 1);
    atomicMax(&a->py1, ymx + 1);
}

/* ------------------------------------------------------------- seed */

/* Block-wide sum / max of one partial (trk_cu_acc encoding) into thread
 * 0's return value; every thread of the block calls it. */
__device__ struct trk_cu_acc block_combine(struct trk_cu_acc v)
{
    __shared__ struct trk_cu_acc s[SEED_THREADS / 32];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    v.mass = trk_cu_warp_sum64(v.mass);
    v.sx = trk_cu_warp_sum64(v.sx);
    v.sy = trk_cu_warp_sum64(v.sy);
    v.sxx = trk_cu_warp_sum64(v.sxx);
    v.syy = trk_cu_warp_sum64(v.syy);
    v.sxy = trk_cu_warp_sum64(v.sxy);
    v.nx0 = __reduce_max_sync(TRK_CU_FULL_MASK, v.nx0);
    v.ny0 = __reduce_max_sync(TRK_CU_FULL_MASK, v.ny0);
    v.px1 = __reduce_max_sync(TRK_CU_FULL_MASK, v.px1);
    v.py1 = __reduce_max_sync(TRK_CU_FULL_MASK, v.py1);
    if (lane == 0) s[warp] = v;
    __syncthreads();
    struct trk_cu_acc r = s[0];
    if (threadIdx.x == 0)
        for (int w = 1; w < SEED_THREADS / 32; w++)
            trk_cu_acc_add(r, s[w]);
    return r;
}

/* Stage 1: block id = j * 4 alpha + Q * alpha + y' * beta + x'. */
__global__ void __launch_bounds__(SEED_THREADS)
    seed_kernel(struct trk_cu_frame f, const struct trk_cu_obj *objs, const struct rreg *reg,
                int alpha, int beta, struct trk_cu_acc *part)
{
    const int per = 4 * alpha;
    const int j = blockIdx.x / per, id = blockIdx.x % per;
    const int Q = id / alpha, xq = id % alpha % beta, yq = id % alpha / beta;
    const int rows = alpha / beta; /* patch rows per quadrant */
    const struct rreg R = reg[j];
    struct trk_cu_acc v = {};
    if (R.x0 <= R.x1 && R.y0 <= R.y1) {
        const int W = R.x1 - R.x0 + 1, H = R.y1 - R.y0 + 1;
        const int lw = W / 2, th = H / 2; /* left columns, top rows */
        const bool right = Q == 1 || Q == 3, top = Q >= 2;
        const int qx0 = right ? R.x0 + lw : R.x0, qw = right ? W - lw : lw;
        const int qy0 = top ? R.y0 : R.y0 + th, qh = top ? th : H - th;
        const int px0 = qx0 + qw * xq / beta, pw = qx0 + qw * (xq + 1) / beta - px0;
        const int py0 = qy0 + qh * yq / rows, ph = qy0 + qh * (yq + 1) / rows - py0;
        const struct trk_cu_obj o = objs[R.obj];
        const int yuv = trk_fmt_is_yuv(f.fmt);
        unsigned mnx = NONE, mny = NONE, mxx = 0, mxy = 0, cnt = 0;
        for (int i = threadIdx.x; i < pw * ph; i += SEED_THREADS) {
            const int x = px0 + i % pw, y = py0 + i / pw;
            if (!px_match(f, yuv, o, x, y)) continue;
            cnt++;
            v.sx += (unsigned)x;
            v.sy += (unsigned)y;
            v.sxx += (unsigned long long)x * (unsigned)x;
            v.syy += (unsigned long long)y * (unsigned)y;
            v.sxy += (unsigned long long)x * (unsigned)y;
            mnx = min(mnx, (unsigned)x);
            mny = min(mny, (unsigned)y);
            mxx = max(mxx, (unsigned)x);
            mxy = max(mxy, (unsigned)y);
        }
        if (cnt) {
            v.mass = cnt;
            v.nx0 = TRK_ACC_BIG - mnx;
            v.ny0 = TRK_ACC_BIG - mny;
            v.px1 = mxx + 1;
            v.py1 = mxy + 1;
        }
    }
    v = block_combine(v);
    if (threadIdx.x == 0) part[blockIdx.x] = v;
}

/* Stage 2: region j's 4 alpha partials into acc[j]. */
__global__ void __launch_bounds__(SEED_THREADS)
    seed_reduce_kernel(const struct trk_cu_acc *part, int alpha, struct trk_cu_acc *acc,
                       struct trk_cu_acc *clr)
{
    clear_next(clr);
    const int per = 4 * alpha, j = blockIdx.x;
    struct trk_cu_acc v = {};
    for (int i = threadIdx.x; i < per; i += SEED_THREADS)
        trk_cu_acc_add(v, part[(size_t)j * per + i]);
    v = block_combine(v);
    if (threadIdx.x == 0) acc[j] = v;
}

/* ------------------------------------------------------------ blobs */

/* The blob region of scratch entry p: the largest i with poff <= p. */
__device__ __forceinline__ int breg_of(const struct breg *B, int nb, unsigned p)
{
    int lo = 0, hi = nb - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (B[mid].poff <= p)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Entry p's pixel. */
__device__ __forceinline__ void breg_xy(const struct breg &B, unsigned p, int &x, int &y)
{
    const unsigned local = p - B.poff, rw = (unsigned)(B.x1 - B.x0 + 1);
    x = B.x0 + (int)(local % rw);
    y = B.y0 + (int)(local / rw);
}

/* How the union-find reads a parent: global labels with a volatile load
 * (L2, never a stale L1 line); the shared-memory labels of rb_kernel with an
 * atomic read (racecheck then sees every access as atomic). */
struct ld_volatile {
    __device__ static unsigned ld(unsigned *p) { return *(const volatile unsigned *)p; }
};
struct ld_atomic {
    __device__ static unsigned ld(unsigned *p) { return atomicOr(p, 0u); }
};

template <class L> __device__ __forceinline__ unsigned find_root(unsigned *lab, unsigned a)
{
    unsigned n;
    while ((n = L::ld(&lab[a])) != a)
        a = n;
    return a;
}

/* Joins the sets of a and b: parents only ever point to smaller entries, so
 * a set's root is its smallest entry (its first pixel in raster order). */
template <class L> __device__ void unite(unsigned *lab, unsigned a, unsigned b)
{
    for (;;) {
        a = find_root<L>(lab, a);
        b = find_root<L>(lab, b);
        if (a == b) return;
        if (a < b) {
            const unsigned t = a;
            a = b;
            b = t;
        }
        const unsigned old = atomicMin(&lab[a], b);
        if (old == a) return;
        a = old; /* a was linked meanwhile: join its new parent with b */
    }
}

__global__ void __launch_bounds__(BLOB_THREADS)
    bl_init_kernel(struct trk_cu_frame f, const struct trk_cu_obj *objs, const struct breg *B,
                   int nb, unsigned P, unsigned *lab)
{
    const int yuv = trk_fmt_is_yuv(f.fmt);
    for (unsigned p = blockIdx.x * BLOB_THREADS + threadIdx.x; p < P;
         p += gridDim.x * BLOB_THREADS) {
        const struct breg &R = B[breg_of(B, nb, p)];
        int x, y;
        breg_xy(R, p, x, y);
        lab[p] = px_match(f, yuv, objs[R.obj], x, y) ? p : NONE;
    }
}

__global__ void __launch_bounds__(BLOB_THREADS)
    bl_union_kernel(const struct breg *B, int nb, unsigned P, unsigned *lab)
{
    for (unsigned p = blockIdx.x * BLOB_THREADS + threadIdx.x; p < P;
         p += gridDim.x * BLOB_THREADS) {
        if (lab[p] == NONE) continue;
        const struct breg &R = B[breg_of(B, nb, p)];
        int x, y;
        breg_xy(R, p, x, y);
        const unsigned rw = (unsigned)(R.x1 - R.x0 + 1);
        /* Neighbours before p in raster order, inside the rectangle. */
        if (x > R.x0 && lab[p - 1] != NONE) unite<ld_volatile>(lab, p, p - 1);
        if (y > R.y0) {
            if (lab[p - rw] != NONE) unite<ld_volatile>(lab, p, p - rw);
            if (R.conn == 8 && x > R.x0 && lab[p - rw - 1] != NONE)
                unite<ld_volatile>(lab, p, p - rw - 1);
            if (R.conn == 8 && x < R.x1 && lab[p - rw + 1] != NONE)
                unite<ld_volatile>(lab, p, p - rw + 1);
        }
    }
}

/* Every entry to its root; roots numbered per region (rank, rcnt). */
__global__ void __launch_bounds__(BLOB_THREADS)
    bl_flatten_kernel(const struct breg *B, int nb, unsigned P, unsigned *lab, unsigned *rank,
                      unsigned *rcnt)
{
    for (unsigned p = blockIdx.x * BLOB_THREADS + threadIdx.x; p < P;
         p += gridDim.x * BLOB_THREADS) {
        if (lab[p] == NONE) continue;
        const unsigned r = find_root<ld_volatile>(lab, p);
        if (r != p) {
            lab[p] = r;
        } else {
            rank[p] = atomicAdd(&rcnt[breg_of(B, nb, p)], 1u);
        }
    }
}

/* Each region's first record: an exclusive prefix of the root counts. */
__global__ void bl_scan_kernel(const unsigned *rcnt, int nb, unsigned *rbase)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    unsigned s = 0;
    for (int i = 0; i < nb; i++) {
        rbase[i] = s;
        s += rcnt[i];
    }
}

__global__ void __launch_bounds__(BLOB_THREADS)
    bl_recinit_kernel(struct trk_cu_frame f, const struct breg *B, int nb, unsigned P,
                      const unsigned *lab, const unsigned *rank, const unsigned *rbase,
                      struct trk_cu_blob *rec)
{
    for (unsigned p = blockIdx.x * BLOB_THREADS + threadIdx.x; p < P;
         p += gridDim.x * BLOB_THREADS) {
        if (lab[p] != p) continue;
        const int i = breg_of(B, nb, p);
        int x, y;
        breg_xy(B[i], p, x, y);
        struct trk_cu_blob *r = &rec[rbase[i] + rank[p]];
        r->sx = r->sy = r->perim = 0;
        r->sxx = r->syy = r->sxy = 0;
        r->first = (unsigned long long)y * (unsigned long long)f.width + (unsigned)x;
        r->mass = 0;
        r->x0 = r->y0 = NONE;
        r->x1 = r->y1 = 0;
        r->pad = 0;
    }
}

/* The pixels of a warp with the same record (peers, from __match_any_sync
 * on key) added to rec[key]: reduced in registers, then one lane (the
 * lowest of peers) does one atomic per field. x, y, edges: each lane's
 * pixel and its crack edges. Rec: trk_cu_blob (global) or rb_rec (shared). */
template <class Rec>
__device__ __forceinline__ void warp_add_blob(Rec *rec, unsigned key, unsigned peers, unsigned x,
                                              unsigned y, unsigned edges)
{
    /* Sums of 32 coordinates (sides far below 2^27) fit 32 bits; squares
     * and products (< 2^32 each) need the wide form. */
    const unsigned sx = __reduce_add_sync(peers, x), sy = __reduce_add_sync(peers, y);
    const unsigned long long sxx = trk_cu_reduce_add_wide(peers, x * x);
    const unsigned long long syy = trk_cu_reduce_add_wide(peers, y * y);
    const unsigned long long sxy = trk_cu_reduce_add_wide(peers, x * y);
    const unsigned pe = __reduce_add_sync(peers, edges);
    const unsigned x0 = __reduce_min_sync(peers, x), x1 = __reduce_max_sync(peers, x);
    const unsigned y0 = __reduce_min_sync(peers, y), y1 = __reduce_max_sync(peers, y);
    if ((threadIdx.x & 31) != (unsigned)(__ffs(peers) - 1)) return;
    Rec *r = &rec[key];
    atomicAdd(&r->mass, (unsigned)__popc(peers));
    atomicAdd(&r->sx, (decltype(r->sx))sx);
    atomicAdd(&r->sy, (decltype(r->sy))sy);
    atomicAdd(&r->perim, (decltype(r->perim))pe);
    atomicAdd(&r->sxx, sxx);
    atomicAdd(&r->syy, syy);
    atomicAdd(&r->sxy, sxy);
    atomicMin(&r->x0, x0);
    atomicMin(&r->y0, y0);
    atomicMax(&r->x1, x1);
    atomicMax(&r->y1, y1);
}

/* Statistics of every labelled entry into its root's record. A disk's
 * pixels all hit one record: lanes of a warp with the same record are
 * found with __match_any_sync and reduced in registers, and one lane per
 * distinct record does the atomics (the per-pixel atomics on one address
 * were the cost: 680 us for 128 disks at 4K). The loop is uniform per
 * block, so every lane of a warp reaches the match. */
__global__ void __launch_bounds__(BLOB_THREADS)
    bl_stats_kernel(const struct breg *B, int nb, unsigned P, const unsigned *lab,
                    const unsigned *rank, const unsigned *rbase, struct trk_cu_blob *rec)
{
    for (unsigned base = blockIdx.x * BLOB_THREADS; base < P; base += gridDim.x * BLOB_THREADS) {
        const unsigned p = base + threadIdx.x;
        const unsigned root = p < P ? lab[p] : NONE;
        unsigned key = NONE, x = 0, y = 0, edges = 0;
        if (root != NONE) {
            const int i = breg_of(B, nb, p);
            const struct breg &R = B[i];
            int xi, yi;
            breg_xy(R, p, xi, yi);
            const unsigned rw = (unsigned)(R.x1 - R.x0 + 1);
            /* Crack edges: sides whose 4-neighbour is not in the region's mask. */
            unsigned in = 0;
            in += xi > R.x0 && lab[p - 1] != NONE;
            in += xi < R.x1 && lab[p + 1] != NONE;
            in += yi > R.y0 && lab[p - rw] != NONE;
            in += yi < R.y1 && lab[p + rw] != NONE;
            key = rbase[i] + rank[root];
            x = (unsigned)xi, y = (unsigned)yi, edges = 4 - in;
        }
        const unsigned peers = __match_any_sync(TRK_CU_FULL_MASK, key);
        if (key != NONE) warp_add_blob(rec, key, peers, x, y, edges);
    }
}

/* a before b in list order (trk_blob_before): mass descending, first
 * ascending. */
__device__ __forceinline__ bool before(unsigned ma, unsigned long long fa, unsigned mb,
                                       unsigned long long fb)
{
    return ma != mb ? ma > mb : fa < fb;
}

/* One block per blob region: its K best components with mass >= min_area,
 * round by round (round s takes the best after round s - 1's choice; keys
 * are distinct since first pixels are). */
__global__ void __launch_bounds__(BLOB_THREADS)
    bl_select_kernel(const struct breg *B, const unsigned *rcnt, const unsigned *rbase,
                     const struct trk_cu_blob *rec, unsigned *counts, struct trk_cu_blob *out)
{
    __shared__ unsigned s_m[BLOB_THREADS];
    __shared__ unsigned long long s_f[BLOB_THREADS];
    __shared__ int s_i[BLOB_THREADS];
    const struct breg R = B[blockIdx.x];
    const unsigned base = rbase[blockIdx.x], cnt = rcnt[blockIdx.x];
    unsigned pm = 0;
    unsigned long long pf = 0;
    bool prev = false;
    int s = 0;
    for (; s < R.k; s++) {
        int bi = -1;
        unsigned bm = 0;
        unsigned long long bf = 0;
        for (unsigned i = threadIdx.x; i < cnt; i += BLOB_THREADS) {
            const unsigned m = rec[base + i].mass;
            const unsigned long long fi = rec[base + i].first;
            if (m < R.min_area) continue;
            if (prev && !before(pm, pf, m, fi)) continue;
            if (bi < 0 || before(m, fi, bm, bf)) {
                bi = (int)i;
                bm = m;
                bf = fi;
            }
        }
        s_m[threadIdx.x] = bm;
        s_f[threadIdx.x] = bf;
        s_i[threadIdx.x] = bi;
        __syncthreads();
        for (int d = BLOB_THREADS / 2; d > 0; d >>= 1) {
            if (threadIdx.x < d) {
                const int o = threadIdx.x + d;
                if (s_i[o] >= 0 && (s_i[threadIdx.x] < 0 ||
                                    before(s_m[o], s_f[o], s_m[threadIdx.x], s_f[threadIdx.x]))) {
                    s_m[threadIdx.x] = s_m[o];
                    s_f[threadIdx.x] = s_f[o];
                    s_i[threadIdx.x] = s_i[o];
                }
            }
            __syncthreads();
        }
        const int best = s_i[0];
        pm = s_m[0];
        pf = s_f[0];
        prev = true;
        if (best >= 0 && threadIdx.x == 0) out[R.out + s] = rec[base + best];
        __syncthreads(); /* s_* are rewritten by the next round */
        if (best < 0) break;
    }
    if (threadIdx.x == 0) counts[R.j] = (unsigned)s;
}

/* ------------------------------------------- blobs, a block per region */

/* A region of at most RB_MAX_AREA pixels whose labels and mask fit the
 * block's shared memory is labelled by one block of RB_THREADS threads,
 * start to finish, with no global scratch:
 *  1. a warp per (row, 32-pixel word) tests the pixels, keeps the word's
 *     ballot (the mask) and labels each pixel with its run's first pixel
 *     (from the ballot: the highest clear bit below the lane, or the run
 *     carried over from the word before);
 *  2. runs are united with the runs above that touch them; a pixel unites
 *     only where the pixel to its left has not already joined the same run
 *     above (about one union per run and row), with the lock-free
 *     union-find of `unite` on shared memory;
 *  3. run starts point at their root; roots are numbered (the tag bit
 *     marks a root's number in its own slot);
 *  4. per pass of up to RB_RECS roots, statistics accumulate in shared
 *     records (warp aggregation: __match_any_sync on the record, register
 *     reductions, one set of shared atomics per distinct record and warp),
 *     then the K best of those records and the list so far (mass desc,
 *     first asc) become the new list;
 *  5. the list is written once.
 * Local sums (coordinates minus the rectangle's corner) stay within 32 bits:
 * area x side <= RB_MAX_AREA^2 = 2^30. Shared words touched by several
 * threads within a phase are only touched with atomics (union-find reads
 * and writes); the rest of the phases are split by barriers. */
const int RB_THREADS = 512;
const int RB_WARPS = RB_THREADS / 32;
const int RB_RECS = 512; /* records per statistics pass */
const unsigned RB_MAX_AREA = 32768;
const unsigned RB_TAG = 0x80000000u; /* a root's slot: TAG | its number */

struct rb_rec {
    unsigned mass, sx, sy, perim, x0, y0, x1, y1, root; /* local coordinates */
    unsigned long long sxx, syy, sxy;                   /* local too: area x side^2 needs 64 bits */
};
struct rb_item {
    unsigned long long key; /* mass << 32 | ~root: larger is earlier in the list */
    struct trk_cu_blob b;
};

__device__ __forceinline__ unsigned rb_find(unsigned *lab, unsigned a)
{
    return find_root<ld_atomic>(lab, a);
}
__device__ __forceinline__ void rb_unite(unsigned *lab, unsigned a, unsigned b)
{
    unite<ld_atomic>(lab, a, b);
}

__device__ __forceinline__ bool rb_in(const unsigned *mw, int wpr, int lx, int ly)
{
    return (mw[ly * wpr + (lx >> 5)] >> (lx & 31)) & 1u;
}

/* Dynamic shared memory: labels (area words), then the mask (height x
 * ceil(width / 32) words); rb_smem_words says how many. */
__host__ __device__ __forceinline__ unsigned rb_smem_words(int w, int h)
{
    return (unsigned)w * (unsigned)h + (unsigned)h * (unsigned)((w + 31) / 32);
}

/* rb_kernel's step 1: warp k builds the mask words (mw) and run labels
 * (lab: each pixel's run start, NONE outside the mask) of rows k,
 * k + RB_WARPS, ... of region R (W x H, wpr mask words a row). */
__device__ __forceinline__ void rb_label_runs(const struct trk_cu_frame &f, int yuv,
                                              const struct trk_cu_obj &o, const struct breg &R,
                                              int W, int H, int wpr, unsigned *lab, unsigned *mw)
{
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    for (int ly = warp; ly < H; ly += RB_WARPS) {
        unsigned carry = 0; /* run start of the previous word's last pixel */
        bool last_in = false;
        for (int w = 0; w < wpr; w++) {
            const int lx = w * 32 + lane;
            const bool in = lx < W && px_match(f, yuv, o, R.x0 + lx, R.y0 + ly);
            const unsigned m = __ballot_sync(TRK_CU_FULL_MASK, in);
            const unsigned below = ~m & ((1u << lane) - 1u);
            const unsigned start = below     ? (unsigned)(w * 32 + 32 - __clz(below))
                                   : last_in ? carry
                                             : (unsigned)(w * 32);
            if (lane == 0) mw[ly * wpr + w] = m;
            if (lx < W) lab[ly * W + lx] = in ? (unsigned)ly * (unsigned)W + start : NONE;
            carry = __shfl_sync(TRK_CU_FULL_MASK, start, 31);
            last_in = (m >> 31) & 1u;
        }
    }
}

/* rb_kernel's step 2: each run united with the runs of the row above that
 * touch it (R.conn: 4 or 8), one pixel a thread. */
__device__ __forceinline__ void rb_unite_rows(const struct breg &R, unsigned A, int W, int wpr,
                                              unsigned *lab, const unsigned *mw)
{
    for (unsigned i = threadIdx.x; i < A; i += RB_THREADS) {
        const int ly = (int)(i / (unsigned)W), lx = (int)(i % (unsigned)W);
        if (ly == 0 || !rb_in(mw, wpr, lx, ly)) continue;
        const bool left = lx > 0 && rb_in(mw, wpr, lx - 1, ly);
        const bool u = rb_in(mw, wpr, lx, ly - 1);
        const bool ul = lx > 0 && rb_in(mw, wpr, lx - 1, ly - 1);
        const bool ur = lx + 1 < W && rb_in(mw, wpr, lx + 1, ly - 1);
        if (R.conn == 4) {
            /* The pixel to the left joined u's run through ul already. */
            if (u && !(left && ul)) rb_unite(lab, i, i - W);
        } else if (left) {
            /* The left pixel reached ul, u (and so u's run): only a run
             * starting at ur is new. */
            if (ur && !u) rb_unite(lab, i, i - W + 1);
        } else {
            if (ul) rb_unite(lab, i, i - W - 1);
            if (u && !ul) rb_unite(lab, i, i - W);
            if (ur && !u) rb_unite(lab, i, i - W + 1);
        }
    }
}

/* A record of rb_kernel's pass as a list item: key, and the blob in frame
 * coordinates (R's origin added; first pixel as a raster index of the
 * frame, fw pixels a row). */
__device__ __forceinline__ struct rb_item rb_item_of(const struct rb_rec &q, unsigned long long key,
                                                     const struct breg &R, int W, int fw)
{
    struct rb_item it;
    it.key = key;
    it.b.mass = q.mass;
    it.b.sx = (unsigned long long)q.sx + (unsigned long long)q.mass * (unsigned)R.x0;
    it.b.sy = (unsigned long long)q.sy + (unsigned long long)q.mass * (unsigned)R.y0;
    /* (X0 + lx)^2 = X0^2 + 2 X0 lx + lx^2 over the pixels; likewise y, xy. */
    const unsigned long long X0 = (unsigned)R.x0, Y0 = (unsigned)R.y0, m = q.mass;
    it.b.sxx = m * X0 * X0 + 2 * X0 * q.sx + q.sxx;
    it.b.syy = m * Y0 * Y0 + 2 * Y0 * q.sy + q.syy;
    it.b.sxy = m * X0 * Y0 + X0 * q.sy + Y0 * q.sx + q.sxy;
    it.b.perim = q.perim;
    it.b.first = (unsigned long long)(R.y0 + (int)(q.root / (unsigned)W)) * (unsigned long long)fw +
                 (unsigned long long)(R.x0 + (int)(q.root % (unsigned)W));
    it.b.x0 = (unsigned)R.x0 + q.x0;
    it.b.y0 = (unsigned)R.y0 + q.y0;
    it.b.x1 = (unsigned)R.x0 + q.x1;
    it.b.y1 = (unsigned)R.y0 + q.y1;
    it.b.pad = 0;
    return it;
}

/* rb_kernel's step 4, statistics: every pixel of a root numbered
 * c0 .. c0 + nrec - 1 adds to that root's record (mass, sums, bounds, crack
 * edges), the warp's pixels of one root at once (warp_add_blob). */
__device__ __forceinline__ void rb_pass_stats(unsigned A, int W, int H, int wpr,
                                              const unsigned *lab, const unsigned *mw, unsigned c0,
                                              unsigned nrec, struct rb_rec *s_rec)
{
    for (unsigned base = 0; base < A; base += RB_THREADS) {
        const unsigned i = base + threadIdx.x;
        unsigned key = NONE, lx = 0, ly = 0, edges = 0;
        bool is_root = false;
        if (i < A) {
            unsigned v = lab[i];
            if (v != NONE) {
                is_root = (v & RB_TAG) != 0;
                while (!(v & RB_TAG)) /* member -> start -> root: 2 steps at most */
                    v = lab[v];
                const unsigned k = (v & ~RB_TAG) - c0;
                if (k < nrec) {
                    key = k;
                    lx = i % (unsigned)W, ly = i / (unsigned)W;
                    unsigned in = 0;
                    in += lx > 0 && rb_in(mw, wpr, (int)lx - 1, (int)ly);
                    in += lx + 1 < (unsigned)W && rb_in(mw, wpr, (int)lx + 1, (int)ly);
                    in += ly > 0 && rb_in(mw, wpr, (int)lx, (int)ly - 1);
                    in += ly + 1 < (unsigned)H && rb_in(mw, wpr, (int)lx, (int)ly + 1);
                    edges = 4 - in;
                    if (is_root) s_rec[k].root = i;
                }
            }
        }
        const unsigned peers = __match_any_sync(TRK_CU_FULL_MASK, key);
        if (key != NONE) warp_add_blob(s_rec, key, peers, lx, ly, edges);
    }
}

__global__ void __launch_bounds__(RB_THREADS)
    rb_kernel(struct trk_cu_frame f, const struct trk_cu_obj *objs, const struct breg *B,
              unsigned *counts, struct trk_cu_blob *out)
{
    extern __shared__ unsigned rb_dyn[];
    __shared__ struct rb_rec s_rec[RB_RECS];
    __shared__ struct rb_item s_old[TRK_MAX_BLOBS], s_new[TRK_MAX_BLOBS];
    __shared__ unsigned long long s_wmax[2][RB_WARPS];
    __shared__ unsigned s_nroots;
    const struct breg R = B[blockIdx.x];
    const int W = R.x1 - R.x0 + 1, H = R.y1 - R.y0 + 1, wpr = (W + 31) >> 5;
    const unsigned A = (unsigned)W * (unsigned)H;
    unsigned *lab = rb_dyn, *mw = rb_dyn + A;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const struct trk_cu_obj o = objs[R.obj];
    const int yuv = trk_fmt_is_yuv(f.fmt);
    if (threadIdx.x == 0) s_nroots = 0;

    /* 1. Mask and run labels. */
    rb_label_runs(f, yuv, o, R, W, H, wpr, lab, mw);
    __syncthreads();

    /* 2. Runs united with the runs above that touch them. */
    rb_unite_rows(R, A, W, wpr, lab, mw);
    __syncthreads();

    /* 3. Run starts to their roots (members point at their start). */
    for (unsigned i = threadIdx.x; i < A; i += RB_THREADS) {
        const int ly = (int)(i / (unsigned)W), lx = (int)(i % (unsigned)W);
        if (!rb_in(mw, wpr, lx, ly) || (lx > 0 && rb_in(mw, wpr, lx - 1, ly))) continue;
        const unsigned r = rb_find(lab, i);
        if (r != i) atomicExch(&lab[i], r);
    }
    __syncthreads();
    /* Each thread reads and writes only its own slots here. */
    for (unsigned i = threadIdx.x; i < A; i += RB_THREADS)
        if (lab[i] == i) lab[i] = RB_TAG | atomicAdd(&s_nroots, 1u);
    __syncthreads();
    const unsigned nroots = s_nroots;

    /* 4. Statistics and the list, RB_RECS roots a pass. */
    int n_old = 0;
    for (unsigned c0 = 0; c0 < nroots; c0 += RB_RECS) {
        const unsigned nrec = min((unsigned)RB_RECS, nroots - c0);
        for (unsigned t = threadIdx.x; t < nrec; t += RB_THREADS)
            s_rec[t] = rb_rec{ 0, 0, 0, 0, NONE, NONE, 0, 0, 0, 0, 0, 0 };
        __syncthreads();
        rb_pass_stats(A, W, H, wpr, lab, mw, c0, nrec, s_rec);
        __syncthreads();
        /* The K best of this pass's records and the list so far, round by
         * round: each round the largest key below the previous round's
         * (keys are distinct: roots are). */
        unsigned long long prev = ~0ull;
        int s = 0;
        for (; s < R.k; s++) {
            unsigned long long mine = 0;
            int src = -1; /* record index, or RB_RECS + list index */
            for (unsigned t = threadIdx.x; t < nrec; t += RB_THREADS) {
                const struct rb_rec &q = s_rec[t];
                if (q.mass < R.min_area) continue;
                const unsigned long long key = (unsigned long long)q.mass << 32 | (NONE - q.root);
                if (key < prev && key > mine) mine = key, src = (int)t;
            }
            if ((int)threadIdx.x < n_old && s_old[threadIdx.x].key < prev &&
                s_old[threadIdx.x].key > mine)
                mine = s_old[threadIdx.x].key, src = RB_RECS + (int)threadIdx.x;
            const unsigned long long m = trk_cu_warp_max64(mine);
            if (lane == 0) s_wmax[s & 1][warp] = m;
            __syncthreads();
            unsigned long long best = 0;
            for (int w = 0; w < RB_WARPS; w++)
                best = trk_cu_max64(best, s_wmax[s & 1][w]);
            if (best == 0) break; /* the same for every thread */
            if (src >= 0 && mine == best) {
                if (src >= RB_RECS) {
                    s_new[s] = s_old[src - RB_RECS];
                } else {
                    s_new[s] = rb_item_of(s_rec[src], best, R, W, f.width);
                }
            }
            prev = best;
        }
        __syncthreads(); /* s_new complete; s_old and s_rec read by all */
        if ((int)threadIdx.x < s) s_old[threadIdx.x] = s_new[threadIdx.x];
        n_old = s;
        __syncthreads();
    }

    /* 5. The list. */
    if ((int)threadIdx.x < n_old) out[R.out + threadIdx.x] = s_old[threadIdx.x].b;
    if (threadIdx.x == 0) counts[R.j] = (unsigned)n_old;
}

/* One block per packed row: the row's block by binary search on row0, its
 * bytes copied by the block's threads. */
__global__ void __launch_bounds__(BLOB_THREADS)
    scatter_kernel(const struct trk_cu_copy *cp, int n, const uint8_t *pack, uint8_t *frame)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (cp[mid].row0 <= blockIdx.x)
            lo = mid;
        else
            hi = mid - 1;
    }
    const struct trk_cu_copy c = cp[lo];
    const unsigned k = blockIdx.x - c.row0;
    const uint8_t *src = pack + c.src + (size_t)k * c.bytes;
    uint8_t *dst = frame + c.dst + (size_t)k * c.dpitch;
    for (unsigned i = threadIdx.x; i < c.bytes; i += BLOB_THREADS)
        dst[i] = src[i];
}

unsigned grid_for(unsigned long long items, int sms)
{
    unsigned long long g = (items + BLOB_THREADS - 1) / BLOB_THREADS;
    const unsigned long long cap = (unsigned long long)sms * 8;
    if (g > cap) g = cap;
    return g < 1 ? 1u : (unsigned)g;
}

} // namespace

/* ------------------------------------------------------------ host */

struct trk_cu_rrm {
    int max_w, max_h, sms;
    int design, alpha, beta;                /* configured (0: automatic) */
    int used_design, used_alpha, used_beta; /* the last call's */
    uint16_t k[TRK_MAX_OBJECTS];            /* blobs K per object (0: off) */
    uint8_t conn[TRK_MAX_OBJECTS];
    uint32_t min_area[TRK_MAX_OBJECTS];
    /* The call being made (trk_cu_rrm_prepare) and then collected: regions,
     * of them blob regions labelled by a block each (ns) and by the global
     * path (nb), flat tiles, records of all lists. */
    int n, ns, nb, tiles;
    size_t out_recs;
    unsigned rb_smem; /* the block path's dynamic shared memory this call */
    /* Host copies of the call's tables (plain memory)... */
    struct rreg *h_reg;
    int *h_tiles;
    struct breg *h_sreg, *h_breg;
    /* ... laid end to end in one pinned block and copied in one call:
     * regions, tile prefix, block-path regions, global-path regions, then
     * the ROI-only upload's copy table (filled by the caller). */
    uint8_t *h_desc, *d_desc;
    size_t o_tiles, o_sreg, o_breg, o_copy, desc_bytes;
    bool desc_sent; /* this call's tables are queued (with the upload) */
    /* Results, double-buffered: half `par` holds this call's accumulators
     * (n), then the list lengths (n words at o_cnt), then the records
     * (o_rec): one copy back. The aggregate kernel zeroes the other half's
     * accumulators for the next call; acc_dirty: unknown state (start, or
     * a call that failed midway), memset both first. */
    uint8_t *d_out, *h_out;
    size_t out_half, o_cnt, o_rec;
    int par;
    bool acc_dirty;
    struct trk_cu_acc *d_part;
    unsigned rb_dyn_cap; /* dynamic shared memory the block path may use */
    /* Global-path labelling scratch (made on first use): budget entries of
     * labels and ranks, records for the most roots a batch can have. */
    size_t budget, rec_cap;
    unsigned *d_lab, *d_rank, *d_rcnt, *d_rbase;
    struct trk_cu_blob *d_rec;
    uint8_t *d_pack; /* the ROI-only upload's packed bytes (frame_bytes) */
    cudaEvent_t ev0, ev1;
    bool events;
    int n_blob[TRK_MAX_REGIONS];
    struct trk_blob (*h_blob)[TRK_MAX_BLOBS];
};

static size_t align8(size_t v)
{
    return (v + 7) & ~(size_t)7;
}

/* Bytes of one half of the results: TRK_MAX_REGIONS accumulators, lengths
 * and records at most. */
static size_t out_half_bytes(void)
{
    const size_t R = TRK_MAX_REGIONS;
    return align8(R * sizeof(struct trk_cu_acc) + R * sizeof(unsigned)) +
           R * TRK_MAX_BLOBS * sizeof(struct trk_cu_blob);
}

static size_t desc_cap_bytes(void)
{
    const size_t R = TRK_MAX_REGIONS;
    return align8(R * sizeof(struct rreg)) + align8((R + 1) * sizeof(int)) +
           2 * align8(R * sizeof(struct breg)) + TRK_RRM_MAX_COPIES * sizeof(struct trk_cu_copy);
}

void trk_cu_rrm_destroy(struct trk_cu_rrm *r)
{
    if (!r) return;
    free(r->h_reg);
    free(r->h_tiles);
    free(r->h_sreg);
    free(r->h_breg);
    cudaFreeHost(r->h_desc);
    cudaFree(r->d_desc);
    cudaFree(r->d_out);
    cudaFreeHost(r->h_out);
    cudaFree(r->d_part);
    cudaFree(r->d_lab);
    cudaFree(r->d_rank);
    cudaFree(r->d_rcnt);
    cudaFree(r->d_rbase);
    cudaFree(r->d_rec);
    cudaFree(r->d_pack);
    if (r->events) {
        cudaEventDestroy(r->ev0);
        cudaEventDestroy(r->ev1);
    }
    free(r->h_blob);
    cudaGetLastError();
    free(r);
}

/* The block path's shared-memory budget on the current device: what a
 * block may opt into, less the kernel's static arrays. */
static unsigned rb_setup(void)
{
    int dev = 0, optin = 0;
    cudaFuncAttributes fa;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) !=
            cudaSuccess ||
        cudaFuncGetAttributes(&fa, rb_kernel) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    size_t cap = (size_t)optin > fa.sharedSizeBytes ? (size_t)optin - fa.sharedSizeBytes : 0;
    if (cap > 4 * (size_t)rb_smem_words(1, RB_MAX_AREA))
        cap = 4 * (size_t)rb_smem_words(1, RB_MAX_AREA);
    if (cudaFuncSetAttribute(rb_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)cap) !=
        cudaSuccess) {
        cudaGetLastError();
        /* Without the opt-in: the default 48 KB per block. */
        cap = fa.sharedSizeBytes < 48 * 1024 ? 48 * 1024 - fa.sharedSizeBytes : 0;
    }
    return (unsigned)cap;
}

int trk_cu_rrm_create(int max_w, int max_h, size_t frame_bytes, int sms, struct trk_cu_rrm **out)
{
    *out = NULL;
    struct trk_cu_rrm *r = (struct trk_cu_rrm *)calloc(1, sizeof(*r));
    if (!r) return TRK_ENOMEM;
    r->max_w = max_w;
    r->max_h = max_h;
    r->sms = sms > 0 ? sms : 1;
    const size_t R = TRK_MAX_REGIONS;
    r->out_half = align8(out_half_bytes());
    r->h_reg = (struct rreg *)malloc(R * sizeof(struct rreg));
    r->h_tiles = (int *)malloc((R + 1) * sizeof(int));
    r->h_sreg = (struct breg *)malloc(R * sizeof(struct breg));
    r->h_breg = (struct breg *)malloc(R * sizeof(struct breg));
    r->h_blob = (struct trk_blob(*)[TRK_MAX_BLOBS])calloc(R, sizeof(*r->h_blob));
    bool ok = r->h_reg && r->h_tiles && r->h_sreg && r->h_breg && r->h_blob &&
              cudaMallocHost(&r->h_desc, desc_cap_bytes()) == cudaSuccess &&
              cudaMalloc(&r->d_desc, desc_cap_bytes()) == cudaSuccess &&
              cudaMalloc(&r->d_out, 2 * r->out_half) == cudaSuccess &&
              cudaMallocHost(&r->h_out, r->out_half) == cudaSuccess &&
              cudaMalloc(&r->d_part, R * 4 * TRK_RRM_MAX_ALPHA * sizeof(struct trk_cu_acc)) ==
                  cudaSuccess &&
              cudaMalloc(&r->d_rcnt, R * sizeof(unsigned)) == cudaSuccess &&
              cudaMalloc(&r->d_rbase, R * sizeof(unsigned)) == cudaSuccess &&
              cudaMalloc(&r->d_pack, frame_bytes) == cudaSuccess &&
              cudaEventCreate(&r->ev0) == cudaSuccess && cudaEventCreate(&r->ev1) == cudaSuccess;
    r->events = ok;
    if (!ok) {
        trk_log_write(TRK_LOG_ERROR, "cuda", 0, "regional form buffers failed: %s",
                      cudaGetErrorString(cudaGetLastError()));
        trk_cu_rrm_destroy(r);
        return TRK_ENOMEM;
    }
    r->rb_dyn_cap = rb_setup();
    r->acc_dirty = true;
    *out = r;
    return 0;
}

void trk_cu_rrm_set_objects(struct trk_cu_rrm *r, const struct trk_object_def *objs, int n)
{
    memset(r->k, 0, sizeof(r->k));
    for (int i = 0; i < n; i++) {
        r->k[i] = objs[i].blobs;
        r->conn[i] = objs[i].connectivity == 4 ? 4 : 8;
        r->min_area[i] = objs[i].min_area ? objs[i].min_area : 1;
    }
    r->n = r->ns = r->nb = 0;
}

int trk_cu_rrm_config(struct trk_cu_rrm *r, int design, int alpha, int beta)
{
    if (design < TRK_RRM_DEFAULT || design > TRK_RRM_FLAT || alpha < 0 ||
        alpha > TRK_RRM_MAX_ALPHA || beta < 0 || beta > alpha || (alpha == 0) != (beta == 0) ||
        (beta && alpha % beta))
        return TRK_EINVAL;
    r->design = design;
    r->alpha = alpha;
    r->beta = beta;
    return 0;
}

void trk_cu_rrm_used(const struct trk_cu_rrm *r, int *design, int *alpha, int *beta)
{
    *design = r->used_design;
    *alpha = r->used_alpha;
    *beta = r->used_beta;
}

/* The seed layout's defaults: patches no smaller than 32 x 8 pixels
 * (typical ROI sides, halved per quadrant), and more of them (x first when
 * wider) while the launch has fewer than 16 blocks per SM. */
static void seed_params(const struct trk_cu_rrm *r, int n, int *alpha, int *beta)
{
    long long sw = 0, sh = 0;
    int live = 0;
    for (int j = 0; j < n; j++) {
        const struct rreg *R = &r->h_reg[j];
        if (R->x0 > R->x1) continue;
        sw += R->x1 - R->x0 + 1;
        sh += R->y1 - R->y0 + 1;
        live++;
    }
    const int qw = live ? (int)(sw / live / 2) : 1, qh = live ? (int)(sh / live / 2) : 1;
    int bx = 1, by = 1;
    while (bx * by * 2 <= TRK_RRM_MAX_ALPHA && (long long)n * 4 * bx * by < 16LL * r->sms) {
        const int pw = qw / bx, ph = qh / by;
        if (pw >= 64 && pw >= 4 * ph)
            bx *= 2;
        else if (ph >= 16)
            by *= 2;
        else if (pw >= 64)
            bx *= 2;
        else
            break;
    }
    *beta = bx;
    *alpha = bx * by;
}

/* The global path's labelling scratch, made on first use for a batch of
 * budget entries. */
static int blob_scratch(struct trk_cu_rrm *r)
{
    if (r->d_lab) return 0;
    size_t budget = (size_t)r->max_w * (size_t)r->max_h;
    if (budget < ((size_t)1 << 20)) budget = (size_t)1 << 20;
    /* A region of A pixels has at most ceil(A / 2) components (one pixel
     * of each is an independent set of the 4-neighbour grid). */
    const size_t recs = budget / 2 + TRK_MAX_REGIONS;
    if (cudaMalloc(&r->d_lab, budget * sizeof(unsigned)) != cudaSuccess ||
        cudaMalloc(&r->d_rank, budget * sizeof(unsigned)) != cudaSuccess ||
        cudaMalloc(&r->d_rec, recs * sizeof(struct trk_cu_blob)) != cudaSuccess) {
        trk_log_write(TRK_LOG_ERROR, "cuda", 0, "regional blob scratch (%zu MB) failed: %s",
                      (budget * 8 + recs * sizeof(struct trk_cu_blob)) >> 20,
                      cudaGetErrorString(cudaGetLastError()));
        cudaFree(r->d_lab);
        cudaFree(r->d_rank);
        cudaFree(r->d_rec);
        r->d_lab = r->d_rank = NULL;
        r->d_rec = NULL;
        return TRK_ENOMEM;
    }
    r->budget = budget;
    r->rec_cap = recs;
    return 0;
}

/* The global path (regions too large for a block's shared memory), batch
 * after batch of at most budget entries, its lists into counts / out. */
static int queue_blob_regions(struct trk_cu_rrm *r, const struct trk_cu_frame *f,
                              const struct trk_cu_obj *d_objs, unsigned *counts,
                              struct trk_cu_blob *out, cudaStream_t s)
{
    const struct breg *d_breg = (const struct breg *)(r->d_desc + r->o_breg);
    for (int b0 = 0; b0 < r->nb;) {
        /* This batch: regions [b0, b1), the next starting at poff 0. */
        int b1 = b0 + 1;
        while (b1 < r->nb && r->h_breg[b1].poff != 0)
            b1++;
        const struct breg *L = &r->h_breg[b1 - 1];
        const size_t P = L->poff + (size_t)(L->x1 - L->x0 + 1) * (size_t)(L->y1 - L->y0 + 1);
        const int nb = b1 - b0;
        const struct breg *dB = d_breg + b0;
        const unsigned g = grid_for(P, r->sms);
        TRK_CUDA_TRY(cudaMemsetAsync(r->d_rcnt, 0, (size_t)nb * sizeof(unsigned), s));
        bl_init_kernel<<<g, BLOB_THREADS, 0, s>>>(*f, d_objs, dB, nb, (unsigned)P, r->d_lab);
        bl_union_kernel<<<g, BLOB_THREADS, 0, s>>>(dB, nb, (unsigned)P, r->d_lab);
        bl_flatten_kernel<<<g, BLOB_THREADS, 0, s>>>(dB, nb, (unsigned)P, r->d_lab, r->d_rank,
                                                     r->d_rcnt);
        bl_scan_kernel<<<1, 1, 0, s>>>(r->d_rcnt, nb, r->d_rbase);
        bl_recinit_kernel<<<g, BLOB_THREADS, 0, s>>>(*f, dB, nb, (unsigned)P, r->d_lab, r->d_rank,
                                                     r->d_rbase, r->d_rec);
        bl_stats_kernel<<<g, BLOB_THREADS, 0, s>>>(dB, nb, (unsigned)P, r->d_lab, r->d_rank,
                                                   r->d_rbase, r->d_rec);
        bl_select_kernel<<<nb, BLOB_THREADS, 0, s>>>(dB, r->d_rcnt, r->d_rbase, r->d_rec, counts,
                                                     out);
        TRK_CUDA_TRY(cudaGetLastError());
        b0 = b1;
    }
    return 0;
}

int trk_cu_rrm_prepare(struct trk_cu_rrm *r, int width, int height, const struct trk_region *regs,
                       int n)
{
    r->n = r->ns = r->nb = r->tiles = 0;
    r->out_recs = 0;
    r->desc_sent = false;
    if (n < 0 || n > TRK_MAX_REGIONS) return TRK_EINVAL;
    r->n = n;
    int tiles = 0;
    bool global = false;
    for (int j = 0; j < n; j++) {
        struct trk_roi c;
        struct rreg *R = &r->h_reg[j];
        if (trk_roi_clip(&regs[j].roi, 0, width, height, &c))
            *R = rreg{ c.x0, c.y0, c.x1, c.y1, regs[j].obj, 0 };
        else
            *R = rreg{ 1, 1, 0, 0, regs[j].obj, 0 };
        r->h_tiles[j] = tiles;
        if (R->x0 <= R->x1) tiles += (R->y1 - R->y0 + FLAT_ROWS) / FLAT_ROWS;
    }
    r->h_tiles[n] = tiles;
    r->tiles = tiles;
    /* The non-empty blob regions: a block each when its labels and mask fit
     * the block's shared memory, else the global path, laid end to end in
     * batches of at most budget entries (a batch starts where poff is 0;
     * each region fits one, being at most a frame). */
    size_t P = 0;
    unsigned smem = 0;
    for (int j = 0; j < n; j++) {
        const struct rreg *R = &r->h_reg[j];
        const int o = R->obj;
        if (!r->k[o] || R->x0 > R->x1) continue;
        const int w = R->x1 - R->x0 + 1, h = R->y1 - R->y0 + 1;
        const size_t a = (size_t)w * (size_t)h;
        const size_t need = a <= RB_MAX_AREA ? 4 * (size_t)rb_smem_words(w, h) : SIZE_MAX;
        struct breg B = breg{ R->x0,
                              R->y0,
                              R->x1,
                              R->y1,
                              o,
                              r->conn[o],
                              r->min_area[o],
                              r->k[o],
                              0,
                              (unsigned)r->out_recs,
                              j,
                              0 };
        r->out_recs += r->k[o];
        if (need <= r->rb_dyn_cap) {
            r->h_sreg[r->ns++] = B;
            if (need > smem) smem = (unsigned)need;
            continue;
        }
        if (!global) {
            int err = blob_scratch(r);
            if (err) {
                r->n = r->ns = r->nb = 0;
                return err;
            }
            global = true;
        }
        if (P + a > r->budget) P = 0;
        B.poff = (unsigned)P;
        r->h_breg[r->nb++] = B;
        P += a;
    }
    r->rb_smem = smem;
    /* Result layout of this call: accumulators, lengths, records. */
    r->o_cnt = (size_t)n * sizeof(struct trk_cu_acc);
    r->o_rec = align8(r->o_cnt + (size_t)n * sizeof(unsigned));
    /* The tables end to end in the pinned block. */
    r->o_tiles = align8((size_t)n * sizeof(struct rreg));
    r->o_sreg = r->o_tiles + align8((size_t)(n + 1) * sizeof(int));
    r->o_breg = r->o_sreg + align8((size_t)r->ns * sizeof(struct breg));
    r->o_copy = r->o_breg + align8((size_t)r->nb * sizeof(struct breg));
    r->desc_bytes = r->o_copy;
    memcpy(r->h_desc, r->h_reg, (size_t)n * sizeof(struct rreg));
    memcpy(r->h_desc + r->o_tiles, r->h_tiles, (size_t)(n + 1) * sizeof(int));
    memcpy(r->h_desc + r->o_sreg, r->h_sreg, (size_t)r->ns * sizeof(struct breg));
    memcpy(r->h_desc + r->o_breg, r->h_breg, (size_t)r->nb * sizeof(struct breg));
    return 0;
}

int trk_cu_rrm_queue(struct trk_cu_rrm *r, const struct trk_cu_frame *f,
                     const struct trk_cu_obj *d_objs, cudaStream_t s)
{
    const int n = r->n;
    int design = r->design == TRK_RRM_DEFAULT ? TRK_RRM_FLAT : r->design;
    int alpha = r->alpha, beta = r->beta;
    if (design == TRK_RRM_SEED && !alpha) seed_params(r, n, &alpha, &beta);
    r->used_design = design;
    r->used_alpha = design == TRK_RRM_SEED ? alpha : 0;
    r->used_beta = design == TRK_RRM_SEED ? beta : 0;
    const bool was_dirty = r->acc_dirty;
    r->acc_dirty = true; /* until every call below has been queued */
    uint8_t *half = r->d_out + (size_t)r->par * r->out_half;
    uint8_t *other = r->d_out + (size_t)(r->par ^ 1) * r->out_half;
    struct trk_cu_acc *acc = (struct trk_cu_acc *)half, *clr = (struct trk_cu_acc *)other;
    unsigned *counts = (unsigned *)(half + r->o_cnt);
    struct trk_cu_blob *recs = (struct trk_cu_blob *)(half + r->o_rec);
    if (n > 0 && !r->desc_sent) {
        TRK_CUDA_TRY(
            cudaMemcpyAsync(r->d_desc, r->h_desc, r->desc_bytes, cudaMemcpyHostToDevice, s));
        r->desc_sent = true;
    }
    if (was_dirty) {
        TRK_CUDA_TRY(cudaMemsetAsync(r->d_out, 0, 2 * r->out_half, s));
    }
    TRK_CUDA_TRY(cudaEventRecord(r->ev0, s));
    bool flipped = false;
    if (n > 0) {
        const struct rreg *d_reg = (const struct rreg *)r->d_desc;
        if (design == TRK_RRM_FLAT) {
            if (r->tiles > 0) {
                flat_kernel<<<r->tiles, 32 * FLAT_ROWS, 0, s>>>(
                    *f, d_objs, d_reg, (const int *)(r->d_desc + r->o_tiles), n, acc, clr);
                flipped = true;
            }
        } else {
            seed_kernel<<<n * 4 * alpha, SEED_THREADS, 0, s>>>(*f, d_objs, d_reg, alpha, beta,
                                                               r->d_part);
            seed_reduce_kernel<<<n, SEED_THREADS, 0, s>>>(r->d_part, alpha, acc, clr);
            flipped = true;
        }
        if (r->ns > 0)
            rb_kernel<<<r->ns, RB_THREADS, r->rb_smem, s>>>(
                *f, d_objs, (const struct breg *)(r->d_desc + r->o_sreg), counts, recs);
        TRK_CUDA_TRY(cudaGetLastError());
    }
    if (r->nb > 0) {
        int err = queue_blob_regions(r, f, d_objs, counts, recs, s);
        if (err) return err;
    }
    TRK_CUDA_TRY(cudaEventRecord(r->ev1, s));
    if (n > 0) {
        const size_t bytes =
            r->ns + r->nb > 0 ? r->o_rec + r->out_recs * sizeof(struct trk_cu_blob) : r->o_cnt;
        TRK_CUDA_TRY(cudaMemcpyAsync(r->h_out, half, bytes, cudaMemcpyDeviceToHost, s));
    }
    /* The next call's half is zero: cleared by this call's aggregate
     * kernel, or still as it was when nothing ran. */
    if (flipped) r->par ^= 1;
    r->acc_dirty = false;
    return 0;
}

static void collect_list(struct trk_cu_rrm *r, const struct breg *B, const unsigned *len,
                         const struct trk_cu_blob *rec)
{
    TRK_ASSERT(len[B->j] <= (unsigned)B->k);
    for (unsigned s = 0; s < len[B->j]; s++) {
        trk_cu_blob_result(&rec[B->out + s], &r->h_blob[B->j][s]);
    }
    r->n_blob[B->j] = (int)len[B->j];
}

void trk_cu_rrm_collect(struct trk_cu_rrm *r, struct trk_obj_result *out, double *kernel_ms)
{
    float ms = 0;
    /* ev1 is done once the frame is (the caller waited), but its stamp can
     * show a little later than the frame's last event (span() in
     * cuda_wait.cu): wait for it, at once in the usual case. */
    if (cudaEventSynchronize(r->ev1) != cudaSuccess ||
        cudaEventElapsedTime(&ms, r->ev0, r->ev1) != cudaSuccess) {
        cudaGetLastError();
        ms = 0;
    }
    if (kernel_ms) *kernel_ms = ms;
    const struct trk_cu_acc *acc = (const struct trk_cu_acc *)r->h_out;
    for (int j = 0; j < r->n; j++) {
        r->n_blob[j] = 0;
        if (out) trk_cu_acc_result(&acc[j], &out[j]);
    }
    const unsigned *len = (const unsigned *)(r->h_out + r->o_cnt);
    const struct trk_cu_blob *rec = (const struct trk_cu_blob *)(r->h_out + r->o_rec);
    for (int i = 0; i < r->ns; i++)
        collect_list(r, &r->h_sreg[i], len, rec);
    for (int i = 0; i < r->nb; i++)
        collect_list(r, &r->h_breg[i], len, rec);
}

int trk_cu_rrm_blobs(struct trk_cu_rrm *r, int j, const struct trk_blob **out)
{
    *out = r->h_blob[j];
    return j < r->n ? r->n_blob[j] : 0;
}

struct trk_cu_copy *trk_cu_rrm_copies(struct trk_cu_rrm *r)
{
    return (struct trk_cu_copy *)(r->h_desc + r->o_copy);
}

int trk_cu_rrm_upload_table(struct trk_cu_rrm *r, int n, cudaStream_t s)
{
    if (n < 0 || n > TRK_RRM_MAX_COPIES) return TRK_EINVAL;
    TRK_CUDA_TRY(cudaMemcpyAsync(r->d_desc, r->h_desc,
                                 r->o_copy + (size_t)n * sizeof(struct trk_cu_copy),
                                 cudaMemcpyHostToDevice, s));
    r->desc_sent = true;
    return 0;
}

int trk_cu_rrm_upload_bytes(struct trk_cu_rrm *r, const uint8_t *h_packed, size_t off, size_t bytes,
                            cudaStream_t s)
{
    if (bytes == 0) return 0;
    TRK_CUDA_TRY(
        cudaMemcpyAsync(r->d_pack + off, h_packed + off, bytes, cudaMemcpyHostToDevice, s));
    return 0;
}

int trk_cu_rrm_upload_scatter(struct trk_cu_rrm *r, uint8_t *frame, int n, cudaStream_t s)
{
    if (n < 0 || n > TRK_RRM_MAX_COPIES) return TRK_EINVAL;
    if (n == 0) return 0;
    const struct trk_cu_copy *h = trk_cu_rrm_copies(r);
    const unsigned rows = h[n - 1].row0 + h[n - 1].rows;
    if (rows == 0) return 0;
    scatter_kernel<<<rows, BLOB_THREADS, 0, s>>>(
        (const struct trk_cu_copy *)(r->d_desc + r->o_copy), n, r->d_pack, frame);
    TRK_CUDA_TRY(cudaGetLastError());
    return 0;
}
