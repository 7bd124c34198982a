/* The fused single-pass kernel: the CUDA backend's default variant.
 *
 * One read of the frame, native format decoded in registers, per-channel
 * lookup tables giving each pixel a bitmask of the objects it matches, and a
 * warp-aggregated reduction into block-local accumulators in shared memory
 * flushed once per block. See gpu/cuda/NOTES.md for the measurements that
 * shaped it. */
#include "cuda_internal.cuh"
#include "fused_acc.cuh"
#include "fused_dense.cuh"
#include "warp.cuh"

namespace
{

static_assert(TRK_FUSED_THREADS % 32 == 0 && TRK_FUSED_THREADS <= 1024, "block size");
static_assert(TRK_FUSED_PX_PER_LANE == 4, "the format loads assume 4 pixels per lane");
static_assert(TRK_CUDA_PITCH_ALIGN % 16 == 0, "16-byte loads need 16-byte aligned rows");
static_assert(TRK_FUSED_DENSE_MIN >= 1 && TRK_FUSED_DENSE_MIN <= 33, "dense path threshold");
static_assert(TRK_FUSED_MIN_BLOCKS >= 1, "resident blocks");
static_assert(TRK_FUSED_TABLES >= 0 && TRK_FUSED_TABLES <= 2, "table placement");
static_assert(TRK_FUSED_PRELOAD >= 0 && TRK_FUSED_PRELOAD <= 3, "prologue loads");
static_assert(TRK_FUSED_FLUSH == 0 || TRK_FUSED_FLUSH == 1, "flush");
static_assert(TRK_FUSED_ACC32 == 0 || TRK_FUSED_ACC32 == 1, "block sums");
static_assert(TRK_FUSED_SEG == 128, "fused_acc.cuh splits x as 128 s + o");

/* Where the tables are read (TRK_FUSED_TABLES): the block's copy in shared
 * memory, or the device image through L1 (read-only loads). The copy holds
 * the image's first trk_cu_fused_copy_words words at the same offsets, so
 * lt's offsets serve both. */
constexpr bool SUM_L1 = TRK_FUSED_TABLES >= 2, FULL_L1 = TRK_FUSED_TABLES >= 1;
template <bool G, class T> __device__ __forceinline__ T tab_ld(const uint32_t *p)
{
    return G ? __ldg(reinterpret_cast<const T *>(p)) : *reinterpret_cast<const T *>(p);
}

/* Format classes: the kernel is instantiated per class; RGB/BGR order is a
 * run-time (warp-uniform) swap. */
enum { CLS_RGB3 = 0, CLS_RGB4, CLS_YUYV, CLS_NV12, CLS_I420, CLS_COUNT };

__host__ __device__ inline int fmt_class(int fmt)
{
    switch (fmt) {
    case TRK_FMT_RGB24:
    case TRK_FMT_BGR24: return CLS_RGB3;
    case TRK_FMT_RGBA:
    case TRK_FMT_BGRA: return CLS_RGB4;
    case TRK_FMT_YUYV: return CLS_YUYV;
    case TRK_FMT_NV12: return CLS_NV12;
    case TRK_FMT_I420: return CLS_I420;
    }
    TRK_ASSERT(!"pixel format out of range (trk_image_check rejects it)");
    return CLS_I420;
}

__device__ __forceinline__ unsigned byte_of(uint32_t w, int j)
{
    return (w >> (8 * j)) & 0xffu;
}

/* Chroma loads of 4:2:0 frames (two rows read each chroma row): how they
 * are cached. 0: __ldg (read-only path), 1: __ldcg (L2 only), 2: __ldca
 * (L1 and L2). An experiment's switch (-DTRK_FUSED_CHROMA_LOAD=N), for
 * frames read in place from host memory, where a second read of a row
 * that no cache kept crosses the bus again. */
#ifndef TRK_FUSED_CHROMA_LOAD
#define TRK_FUSED_CHROMA_LOAD 0
#endif
template <class T> __device__ __forceinline__ T chroma_ld(const T *p)
{
#if TRK_FUSED_CHROMA_LOAD == 1
    return __ldcg(p);
#elif TRK_FUSED_CHROMA_LOAD == 2
    return __ldca(p);
#else
    return __ldg(p);
#endif
}

/* Loads the 4 pixels x0..x0+3 of row y and returns their native samples
 * packed one byte per pixel: pa/pb/pc = R,G,B (RGB classes) or Y,Cb,Cr. */
template <int CLS>
__device__ __forceinline__ void load4(const struct trk_cu_frame &f, int x0, int y, bool swap,
                                      uint32_t &pa, uint32_t &pb, uint32_t &pc)
{
    const uint8_t *row = f.plane[0] + (size_t)y * f.pitch[0];
    if (CLS == CLS_RGB3) {
        /* 12 bytes: R0 G0 B0 R1 | G1 B1 R2 G2 | B2 R3 G3 B3 */
        const uint32_t *p = reinterpret_cast<const uint32_t *>(row + 3 * x0);
        uint32_t w0 = __ldg(p), w1 = __ldg(p + 1), w2 = __ldg(p + 2);
        uint32_t r = __byte_perm(__byte_perm(w0, w1, 0x0630), w2, 0x5210);
        uint32_t g = __byte_perm(__byte_perm(w0, w1, 0x0741), w2, 0x6210);
        uint32_t b = __byte_perm(__byte_perm(w0, w1, 0x0052), w2, 0x7410);
        pa = swap ? b : r;
        pb = g;
        pc = swap ? r : b;
    } else if (CLS == CLS_RGB4) {
        uint4 q = __ldg(reinterpret_cast<const uint4 *>(row + 4 * x0));
        uint32_t lo = __byte_perm(q.x, q.y, 0x0040), hi = __byte_perm(q.z, q.w, 0x0040);
        uint32_t r = __byte_perm(lo, hi, 0x5410);
        lo = __byte_perm(q.x, q.y, 0x0051);
        hi = __byte_perm(q.z, q.w, 0x0051);
        uint32_t g = __byte_perm(lo, hi, 0x5410);
        lo = __byte_perm(q.x, q.y, 0x0062);
        hi = __byte_perm(q.z, q.w, 0x0062);
        uint32_t b = __byte_perm(lo, hi, 0x5410);
        pa = swap ? b : r;
        pb = g;
        pc = swap ? r : b;
    } else if (CLS == CLS_YUYV) {
        /* Y0 U0 Y1 V0 | Y2 U1 Y3 V1 */
        uint2 q = __ldg(reinterpret_cast<const uint2 *>(row + 2 * x0));
        pa = __byte_perm(q.x, q.y, 0x6420);
        pb = __byte_perm(q.x, q.y, 0x5511);
        pc = __byte_perm(q.x, q.y, 0x7733);
    } else if (CLS == CLS_NV12) {
        pa = __ldg(reinterpret_cast<const uint32_t *>(row + x0));
        uint32_t uv = chroma_ld(
            reinterpret_cast<const uint32_t *>(f.plane[1] + (size_t)(y >> 1) * f.pitch[1] + x0));
        pb = __byte_perm(uv, 0, 0x2200); /* U0 U0 U1 U1 */
        pc = __byte_perm(uv, 0, 0x3311);
    } else {
        pa = __ldg(reinterpret_cast<const uint32_t *>(row + x0));
        size_t co = (size_t)(y >> 1);
        uint32_t u =
            chroma_ld(reinterpret_cast<const uint16_t *>(f.plane[1] + co * f.pitch[1] + (x0 >> 1)));
        uint32_t v =
            chroma_ld(reinterpret_cast<const uint16_t *>(f.plane[2] + co * f.pitch[2] + (x0 >> 1)));
        pb = __byte_perm(u, 0, 0x1100);
        pc = __byte_perm(v, 0, 0x1100);
    }
}

/* TRK_FUSED_PRELOAD 1: asks L1 for the lines load4<CLS> will read for the
 * pixels x0..x0+3 of row y (every plane), with no register to hold: the
 * prologue's frame reads overlap its table copy, and the first unit's loads
 * then hit L1. */
__device__ __forceinline__ void prefetch_l1(const void *p)
{
    asm volatile("prefetch.L1 [%0];" ::"l"(p)); /* generic address: no cvta needed */
}
template <int CLS>
__device__ __forceinline__ void prefetch4(const struct trk_cu_frame &f, int x0, int y)
{
    const int bpp = CLS == CLS_RGB3 ? 3 : CLS == CLS_RGB4 ? 4 : CLS == CLS_YUYV ? 2 : 1;
    prefetch_l1(f.plane[0] + (size_t)y * f.pitch[0] + bpp * x0);
    if (CLS == CLS_NV12) prefetch_l1(f.plane[1] + (size_t)(y >> 1) * f.pitch[1] + x0);
    if (CLS == CLS_I420) {
        prefetch_l1(f.plane[1] + (size_t)(y >> 1) * f.pitch[1] + (x0 >> 1));
        prefetch_l1(f.plane[2] + (size_t)(y >> 1) * f.pitch[2] + (x0 >> 1));
    }
}

/* Channel values of 4 pixels in every space present: 8-bit channels one byte
 * per pixel, hue (9 bits) in two words of 16-bit halves. lab and rg only in
 * the LIGHT kernels (object sets with lab or rg objects): the others do not
 * carry them, so they pay nothing for those spaces. */
template <bool LIGHT> struct px4 {
    uint32_t rgb[3], ycc[3], sv[2], hue[2];
    uint32_t lab[LIGHT ? 3 : 1], rg[LIGHT ? 3 : 1];
    /* The classes of each pixel (trk_cu_cls_bits), LIGHT copies only. */
    unsigned cls[LIGHT ? 4 : 1];
};

/* lab and rg bytes of 4 pixels from their packed R, G, B (color.h). */
__device__ __forceinline__ void light4(const struct trk_cu_frame &f, const int *has,
                                       const uint32_t rgb[3], uint32_t lab[3], uint32_t rg[3])
{
    lab[0] = lab[1] = lab[2] = rg[0] = rg[1] = rg[2] = 0;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int r = byte_of(rgb[0], j), g = byte_of(rgb[1], j), b = byte_of(rgb[2], j);
        uint8_t c0, c1, c2;
        if (has[TRK_SPACE_LAB]) {
            trk_rgb_to_lab(f.light, r, g, b, &c0, &c1, &c2);
            lab[0] |= (uint32_t)c0 << (8 * j);
            lab[1] |= (uint32_t)c1 << (8 * j);
            lab[2] |= (uint32_t)c2 << (8 * j);
        }
        if (has[TRK_SPACE_RG]) {
            trk_rgb_to_rg(f.light, r, g, b, &c0, &c1, &c2);
            rg[0] |= (uint32_t)c0 << (8 * j);
            rg[1] |= (uint32_t)c1 << (8 * j);
            rg[2] |= (uint32_t)c2 << (8 * j);
        }
    }
}

/* has[] of the kernels: the box spaces, then whether the set has class
 * objects (LIGHT copies only). */
const int HAS_CLS = TRK_SPACE_COUNT;

template <bool LIGHT>
__device__ __forceinline__ void convert4(const struct trk_cu_frame &f, bool yuv, const int *has,
                                         uint32_t pa, uint32_t pb, uint32_t pc, px4<LIGHT> &o)
{
    o.rgb[0] = pa;
    o.rgb[1] = pb;
    o.rgb[2] = pc;
    o.ycc[0] = pa;
    o.ycc[1] = pb;
    o.ycc[2] = pc;
    const bool light = LIGHT && (has[TRK_SPACE_LAB] | has[TRK_SPACE_RG] | has[HAS_CLS]);
    if (yuv && (has[TRK_SPACE_RGB] | has[TRK_SPACE_HSV] | light)) {
        uint32_t r = 0, g = 0, b = 0;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            uint8_t r8, g8, b8;
            trk_yuv_to_rgb(&f.y2r, byte_of(pa, j), byte_of(pb, j), byte_of(pc, j), &r8, &g8, &b8);
            r |= (uint32_t)r8 << (8 * j);
            g |= (uint32_t)g8 << (8 * j);
            b |= (uint32_t)b8 << (8 * j);
        }
        o.rgb[0] = r;
        o.rgb[1] = g;
        o.rgb[2] = b;
    }
    if (!yuv && has[TRK_SPACE_YCBCR]) {
        uint32_t y = 0, cb = 0, cr = 0;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            uint8_t y8, cb8, cr8;
            trk_rgb_to_ycbcr(&f.r2y, byte_of(pa, j), byte_of(pb, j), byte_of(pc, j), &y8, &cb8,
                             &cr8);
            y |= (uint32_t)y8 << (8 * j);
            cb |= (uint32_t)cb8 << (8 * j);
            cr |= (uint32_t)cr8 << (8 * j);
        }
        o.ycc[0] = y;
        o.ycc[1] = cb;
        o.ycc[2] = cr;
    }
    if (has[TRK_SPACE_HSV]) {
        uint32_t s = 0, v = 0, h01 = 0, h23 = 0;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            uint16_t h;
            uint8_t s8, v8;
            trk_rgb_to_hsv(byte_of(o.rgb[0], j), byte_of(o.rgb[1], j), byte_of(o.rgb[2], j), &h,
                           &s8, &v8);
            s |= (uint32_t)s8 << (8 * j);
            v |= (uint32_t)v8 << (8 * j);
            if (j < 2)
                h01 |= (uint32_t)h << (16 * j);
            else
                h23 |= (uint32_t)h << (16 * (j - 2));
        }
        o.sv[0] = s;
        o.sv[1] = v;
        o.hue[0] = h01;
        o.hue[1] = h23;
    }
    if (LIGHT && light) light4(f, has, o.rgb, o.lab, o.rg);
    if (LIGHT) {
#pragma unroll
        for (int j = 0; j < 4; j++)
            o.cls[LIGHT ? j : 0] = has[HAS_CLS]
                                       ? trk_cu_cls_bits(f, byte_of(o.rgb[0], j),
                                                         byte_of(o.rgb[1], j), byte_of(o.rgb[2], j))
                                       : 0u;
    }
}

/* Value of channel c of pixel j in space s. */
template <bool LIGHT>
__device__ __forceinline__ unsigned chan(const px4<LIGHT> &p, int s, int c, int j)
{
    if (s == TRK_SPACE_RGB) return byte_of(p.rgb[c], j);
    if (s == TRK_SPACE_YCBCR) return byte_of(p.ycc[c], j);
    if (LIGHT && s == TRK_SPACE_LAB) return byte_of(p.lab[LIGHT ? c : 0], j);
    if (LIGHT && s == TRK_SPACE_RG) return byte_of(p.rg[LIGHT ? c : 0], j);
    if (c == 0) return (p.hue[j >> 1] >> (16 * (j & 1))) & 0xffffu;
    return byte_of(p.sv[c - 1], j);
}

/* CW consecutive mask words of a full-table entry, ANDed over the 3
 * channels: 16-, 8- or 4-byte loads (shared, or through L1 with G). */
template <int CW, bool G>
__device__ __forceinline__ void and3(const uint32_t *t0, const uint32_t *t1, const uint32_t *t2,
                                     uint32_t m[CW])
{
    if (CW == 4) {
        uint4 a = tab_ld<G, uint4>(t0);
        uint4 b = tab_ld<G, uint4>(t1);
        uint4 c = tab_ld<G, uint4>(t2);
        m[0] |= a.x & b.x & c.x;
        m[1] |= a.y & b.y & c.y;
        m[2 % CW] |= a.z & b.z & c.z;
        m[3 % CW] |= a.w & b.w & c.w;
    } else if (CW == 2) {
        uint2 a = tab_ld<G, uint2>(t0);
        uint2 b = tab_ld<G, uint2>(t1);
        uint2 c = tab_ld<G, uint2>(t2);
        m[0] |= a.x & b.x & c.x;
        m[1 % CW] |= a.y & b.y & c.y;
    } else {
        m[0] |= tab_ld<G, uint32_t>(t0) & tab_ld<G, uint32_t>(t1) & tab_ld<G, uint32_t>(t2);
    }
}

/* The block's accumulators (shared memory after the copied tables) and the
 * one event that adds to them: cnt pixels of row y in the segment starting
 * at b, whose offsets from b sum to so and their squares to soo, bounds
 * encoded (nmin = TRK_ACC_BIG - min x, pmax = max x + 1). */
#if TRK_FUSED_ACC32
/* TRK_FUSED_ACC32: 32-bit sums relative to the block (fused_acc.cuh),
 * trk_facc::NSUM arrays of n words, then nx0, ny0, px1, py1; yb: the
 * block's first row. Native 32-bit shared atomics only. */
struct bacc {
    unsigned *w;
    int n;
    unsigned yb;
};
__device__ __forceinline__ struct bacc bacc_at(void *base, int n, unsigned yb)
{
    return bacc{ reinterpret_cast<unsigned *>(base), n, yb };
}
__device__ __forceinline__ void bacc_event(const struct bacc &a, int k, unsigned b, unsigned y,
                                           unsigned cnt, unsigned so, unsigned soo, unsigned nmin,
                                           unsigned pmax)
{
    const trk_facc::terms t = trk_facc::event_terms(cnt, so, soo, b / TRK_FUSED_SEG, y - a.yb);
#pragma unroll
    for (int f = 0; f < trk_facc::NSUM; f++)
        atomicAdd(a.w + f * a.n + k, t.v[f]);
    unsigned *bd = a.w + trk_facc::NSUM * a.n + k;
    atomicMax(bd, nmin);
    atomicMax(bd + a.n, TRK_ACC_BIG - y);
    atomicMax(bd + 2 * a.n, pmax);
    atomicMax(bd + 3 * a.n, y + 1u);
}
__device__ __forceinline__ void bacc_zero(const struct bacc &a, int tid, int nthr)
{
    for (int i = tid; i < trk_facc::WORDS * a.n; i += nthr)
        a.w[i] = 0;
}
/* The block's sums of the objects it saw, widened, into the frame's g. */
__device__ __forceinline__ void bacc_flush(const struct bacc &a, struct trk_cu_acc *g, int tid,
                                           int nthr)
{
    for (int k = tid; k < a.n; k += nthr) {
        unsigned p[trk_facc::NSUM];
#pragma unroll
        for (int f = 0; f < trk_facc::NSUM; f++)
            p[f] = a.w[f * a.n + k];
        if (!p[trk_facc::CNT]) continue;
        const trk_facc::wide w = trk_facc::widen(p, a.yb);
        const unsigned *bd = a.w + trk_facc::NSUM * a.n + k;
        atomicAdd(&g[k].mass, w.mass);
        atomicAdd(&g[k].sx, w.sx);
        atomicAdd(&g[k].sy, w.sy);
        atomicAdd(&g[k].sxx, w.sxx);
        atomicAdd(&g[k].syy, w.syy);
        atomicAdd(&g[k].sxy, w.sxy);
        atomicMax(&g[k].nx0, bd[0]);
        atomicMax(&g[k].ny0, bd[a.n]);
        atomicMax(&g[k].px1, bd[2 * a.n]);
        atomicMax(&g[k].py1, bd[3 * a.n]);
    }
}
#else
/* 64-bit sums (trk_cu_sacc): five of the event's adds are 64-bit shared
 * atomics (compare-and-swap loops on sm_90). */
struct bacc {
    struct trk_cu_sacc s;
    int n;
};
__device__ __forceinline__ struct bacc bacc_at(void *base, int n, unsigned)
{
    return bacc{ trk_cu_sacc_at(base, n), n };
}
__device__ __forceinline__ void bacc_event(const struct bacc &a, int k, unsigned b, unsigned y,
                                           unsigned cnt, unsigned so, unsigned soo, unsigned nmin,
                                           unsigned pmax)
{
    atomicAdd(&a.s.cnt[k], cnt);
    atomicAdd(&a.s.sx[k], (unsigned long long)cnt * b + so);
    trk_cu_sacc_moments(a.s, k, b, y, cnt, so, soo);
    atomicAdd(&a.s.sy[k], (unsigned long long)cnt * y);
    atomicMax(&a.s.nx0[k], nmin);
    atomicMax(&a.s.px1[k], pmax);
    atomicMax(&a.s.ny0[k], TRK_ACC_BIG - y);
    atomicMax(&a.s.py1[k], y + 1u);
}
__device__ __forceinline__ void bacc_zero(const struct bacc &a, int tid, int nthr)
{
    trk_cu_sacc_zero(a.s, a.n, tid, nthr);
}
__device__ __forceinline__ void bacc_flush(const struct bacc &a, struct trk_cu_acc *g, int tid,
                                           int nthr)
{
    trk_cu_sacc_flush(a.s, g, a.n, tid, nthr);
}
#endif

/* The dense path for mask word q of a segment (fused_dense.cuh): the four
 * 32 x 32 bit matrices m[j] (lane L, bit b: pixel base + 4 L + j matches
 * object k0 + b) are transposed across the warp, then lane b accumulates
 * object k0 + b from its own words with popcounts: one shared atomic per
 * field and lane, 32 objects at once, instead of a redux chain and lane 0's
 * seven atomics per present object. All lanes take part (the shuffles);
 * the caller's choice is warp-uniform. Integer sums, so the results are the
 * sparse path's exactly. */
__device__ __forceinline__ void dense_word(uint32_t m0, uint32_t m1, uint32_t m2, uint32_t m3,
                                           int lane, int base, int yy, int k0,
                                           const struct bacc &acc)
{
    uint32_t t[4] = { m0, m1, m2, m3 };
#pragma unroll
    for (int s = 16; s >= 1; s >>= 1) {
#pragma unroll
        for (int j = 0; j < 4; j++)
            t[j] = trk_dense::transpose_merge(t[j], __shfl_xor_sync(TRK_CU_FULL_MASK, t[j], s),
                                              (unsigned)lane, s);
    }
    const trk_dense::seg_stats st = trk_dense::segment_stats(t);
    if (!st.cnt) return;
    const int k = k0 + lane;
    const unsigned b = (unsigned)base;
    bacc_event(acc, k, b, (unsigned)yy, st.cnt, st.sum, st.sq, TRK_ACC_BIG - (b + st.first),
               b + st.last + 1u);
}

__device__ __forceinline__ unsigned long long gpu_clock_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* The barrier among the threads that flush a block's sums: the block, or
 * the one warp that flushes (TRK_FUSED_FLUSH). */
template <bool WARP> __device__ __forceinline__ void flush_sync()
{
    if (WARP)
        __syncwarp();
    else
        __syncthreads();
}

/* The hand-over (trk_cu_pub): called after its block's flush by every
 * thread that flushed (tid of nthr: the block, or with WARP its last warp).
 * The last block to finish (a ticket after a fence, so every other block's
 * flush is visible to it) copies the n accumulators to the host's mapped
 * memory, then fences to system scope and writes the record, seq last; and
 * leaves ctl ready for the next launch. */
template <bool WARP>
__device__ __forceinline__ void hand_over(const struct trk_cu_job &job, int n, int tid, int nthr)
{
    __shared__ bool last;
    const struct trk_cu_pub_job &p = job.pub;
    __threadfence();
    flush_sync<WARP>();
    if (tid == 0) last = atomicAdd(&p.ctl->done, 1u) == gridDim.x - 1;
    flush_sync<WARP>();
    if (!last) return;
    __threadfence();
    /* Volatile: the other blocks' atomics live in L2, not in this SM's L1. */
    const volatile struct trk_cu_acc *acc = job.acc;
    for (int k = tid; k < n; k += nthr) {
        struct trk_cu_acc a;
        a.mass = acc[k].mass;
        a.sx = acc[k].sx;
        a.sy = acc[k].sy;
        a.nx0 = acc[k].nx0;
        a.ny0 = acc[k].ny0;
        a.px1 = acc[k].px1;
        a.py1 = acc[k].py1;
        a.sxx = acc[k].sxx;
        a.syy = acc[k].syy;
        a.sxy = acc[k].sxy;
        p.out[k] = a;
    }
    __threadfence_system();
    flush_sync<WARP>();
    if (tid == 0) {
        volatile struct trk_cu_pubctl *ctl = p.ctl;
        p.rec->kernel_ns = gpu_clock_ns() - ctl->t0;
        ctl->t0 = ~0ull;
        ctl->done = 0;
        __threadfence_system();
        *(volatile unsigned *)&p.rec->seq = p.seq;
    }
}

/* The summary lookups of a lane's four pixels: sm[j] gets the OR over the
 * spaces present of the three channels' summary entries (a superset of the
 * objects pixel j matches: a summary is the OR of the full entry's words). */
template <bool LIGHT>
__device__ __forceinline__ void summary4(const uint32_t *tab, const struct trk_cu_lut &lt,
                                         const int *has, const px4<LIGHT> &p, uint32_t *sm)
{
#pragma unroll
    for (int s = 0; s < (LIGHT ? TRK_SPACE_COUNT : 3); s++) {
        if (!has[s]) continue;
        const uint32_t *t0 = tab + lt.sum_off[s][0];
        const uint32_t *t1 = tab + lt.sum_off[s][1];
        const uint32_t *t2 = tab + lt.sum_off[s][2];
#pragma unroll
        for (int j = 0; j < 4; j++)
            sm[j] |= tab_ld<SUM_L1, uint32_t>(t0 + chan(p, s, 0, j)) &
                     tab_ld<SUM_L1, uint32_t>(t1 + chan(p, s, 1, j)) &
                     tab_ld<SUM_L1, uint32_t>(t2 + chan(p, s, 2, j));
    }
    if (LIGHT && has[HAS_CLS]) {
#pragma unroll
        for (int j = 0; j < 4; j++)
            sm[j] |= trk_cu_cls_word(lt, p.cls[LIGHT ? j : 0], -1);
    }
}

/* The sparse path for mask word q of a segment: per object present in
 * the word (wor, warp-uniform; bit b is object k0 + b), count, sum of x
 * offsets, sum of their squares and the bounds of its pixels among the
 * lane's four (m0..m3: pixel x0 + j, offset 4 lane + j from the segment's
 * first pixel) reduced over the warp with redux.sync, then lane 0 adds them
 * with one shared atomic per field. Offsets keep the squares in 32 bits
 * (< 128 * 128^2); bacc_event widens them once. */
__device__ __forceinline__ void sparse_word(uint32_t m0, uint32_t m1, uint32_t m2, uint32_t m3,
                                            uint32_t wor, int lane, int x0, int yy, int k0,
                                            const struct bacc &acc)
{
    const unsigned lo = 4u * (unsigned)lane, base = (unsigned)x0 - lo;
    while (wor) {
        const int bit = __ffs(wor) - 1;
        wor &= wor - 1;
        const unsigned v = ((m0 >> bit) & 1u) | (((m1 >> bit) & 1u) << 1) |
                           (((m2 >> bit) & 1u) << 2) | (((m3 >> bit) & 1u) << 3);
        unsigned cnt = __popc(v);
        const unsigned j1 = (v >> 1) & 1u, j2 = (v >> 2) & 1u, j3 = (v >> 3) & 1u;
        const unsigned sj = j1 + 2u * j2 + 3u * j3;
        unsigned so = cnt * lo + sj;
        unsigned soo = cnt * lo * lo + 2u * lo * sj + j1 + 4u * j2 + 9u * j3;
        unsigned nmin = v ? TRK_ACC_BIG - (unsigned)(x0 + __ffs(v) - 1) : 0u;
        unsigned pmax = v ? (unsigned)(x0 + 32 - __clz(v)) : 0u;
        cnt = __reduce_add_sync(TRK_CU_FULL_MASK, cnt);
        so = __reduce_add_sync(TRK_CU_FULL_MASK, so);
        soo = __reduce_add_sync(TRK_CU_FULL_MASK, soo);
        nmin = __reduce_max_sync(TRK_CU_FULL_MASK, nmin);
        pmax = __reduce_max_sync(TRK_CU_FULL_MASK, pmax);
        if (lane == 0) bacc_event(acc, k0 + bit, base, (unsigned)yy, cnt, so, soo, nmin, pmax);
    }
}

/* Blob lists (trk_cu_bmask): the masks of the blob objects among the
 * objects of mask word q present in the segment (bw = wor & bm.bits[q],
 * warp-uniform; bit b is slot k0 + b). A 32-pixel mask word is held by 8
 * lanes, 4 pixels each (lane L: pixels x0 .. x0 + 3, bits 4 (L & 7) .. of
 * word x0 / 32): each lane puts its nibble in place, three xor-shuffles OR
 * the 8 lanes' nibbles, and the first lane of each 8 stores the word (the
 * four lanes' stores are one 16-byte request). Pixels past the row's end
 * have m = 0, and their word (x0 >= W) is not stored. */
__device__ __forceinline__ void store_masks(uint32_t m0, uint32_t m1, uint32_t m2, uint32_t m3,
                                            uint32_t bw, int lane, int x0, int yy, int k0, int W,
                                            const struct trk_cu_bmask &bm)
{
    const int sh = 4 * (lane & 7);
    uint32_t *row = bm.words + (size_t)yy * bm.wpr + (x0 >> 5);
    while (bw) {
        const int bit = __ffs(bw) - 1;
        bw &= bw - 1;
        uint32_t w = (((m0 >> bit) & 1u) | (((m1 >> bit) & 1u) << 1) | (((m2 >> bit) & 1u) << 2) |
                      (((m3 >> bit) & 1u) << 3))
                     << sh;
        w |= __shfl_xor_sync(TRK_CU_FULL_MASK, w, 1);
        w |= __shfl_xor_sync(TRK_CU_FULL_MASK, w, 2);
        w |= __shfl_xor_sync(TRK_CU_FULL_MASK, w, 4);
        if (!sh && x0 < W) row[(size_t)__ldg(bm.idx + k0 + bit) * bm.stride] = w;
    }
}

/* The full-table phase of one unit (a warp's row segment with a candidate
 * pixel): per chunk of up to 4 mask words, each pixel's full masks (the AND
 * of its channels' entries, OR over the spaces; pixels that passed no
 * summary read the zero entry), the class bits and the ROI masks; then per
 * mask word the blob masks (BM), and the dense or the sparse reduction into
 * the block's accumulators. tab: where the full tables are read
 * (FULL_L1: the device image). */
template <int NW, bool LIGHT, bool BM>
__device__ __forceinline__ void
unit_detail(const struct trk_cu_job &job, const uint32_t *tab, const int *has, const px4<LIGHT> &p,
            const uint32_t sm[4], int lane, int x0, int yy, const struct bacc &s_acc)
{
    constexpr int CW = NW < 4 ? NW : 4;
    const struct trk_cu_lut &lt = job.lt;
    const int W = job.f.width;
#pragma unroll
    for (int ch = 0; ch < NW; ch += CW) {
        uint32_t m[4][CW];
        /* Branch-free: a pixel that passed no summary reads the zero
         * entry (one address for all such lanes: a broadcast), so the
         * warp never diverges here. */
#pragma unroll
        for (int j = 0; j < 4; j++) {
#pragma unroll
            for (int q = 0; q < CW; q++)
                m[j][q] = 0;
#pragma unroll
            for (int s = 0; s < (LIGHT ? TRK_SPACE_COUNT : 3); s++) {
                if (!has[s] || ch >= lt.we[s] || ch + CW <= lt.wb[s]) continue;
                const bool on = sm[j] != 0;
                and3<CW, FULL_L1>(
                    tab + (on ? lt.full_off[s][0] + chan(p, s, 0, j) * NW : lt.zero_off) + ch,
                    tab + (on ? lt.full_off[s][1] + chan(p, s, 1, j) * NW : lt.zero_off) + ch,
                    tab + (on ? lt.full_off[s][2] + chan(p, s, 2, j) * NW : lt.zero_off) + ch,
                    m[j]);
            }
            if (LIGHT && has[HAS_CLS] && sm[j]) { /* sm[j] 0: past the row, or none */
#pragma unroll
                for (int q = 0; q < CW; q++)
                    m[j][q] |= trk_cu_cls_word(lt, p.cls[LIGHT ? j : 0], ch + q);
            }
            if (job.rowmask) {
                const int xc = min(x0 + j, W - 1); /* m[j] is 0 past the row's end */
#pragma unroll
                for (int q = 0; q < CW; q++)
                    m[j][q] &= __ldg(job.rowmask + (size_t)yy * NW + ch + q) &
                               __ldg(job.colmask + (size_t)xc * NW + ch + q);
            }
        }
#pragma unroll
        for (int q = 0; q < CW; q++) {
            uint32_t wor =
                __reduce_or_sync(TRK_CU_FULL_MASK, m[0][q] | m[1][q] | m[2][q] | m[3][q]);
            if (BM && (wor & job.bm.bits[ch + q]))
                store_masks(m[0][q], m[1][q], m[2][q], m[3][q], wor & job.bm.bits[ch + q], lane, x0,
                            yy, (ch + q) * 32, W, job.bm);
            if (__popc(wor) >= TRK_FUSED_DENSE_MIN) {
                dense_word(m[0][q], m[1][q], m[2][q], m[3][q], lane,
                           x0 - lane * TRK_FUSED_PX_PER_LANE, yy, (ch + q) * 32, s_acc);
                continue;
            }
            sparse_word(m[0][q], m[1][q], m[2][q], m[3][q], wor, lane, x0, yy, (ch + q) * 32,
                        s_acc);
        }
    }
}

/* The block's prologue: its copy of the table image's first words
 * (trk_cu_fused_copy_words) from g into s, n4 16-byte words; with
 * TRK_FUSED_PRELOAD (1 or 2) up to four loads per thread in flight before
 * it stores any. The caller's barrier follows. */
__device__ __forceinline__ void copy_tables(const uint4 *g, uint4 *s, int n4, int tid, int nthr)
{
#if TRK_FUSED_PRELOAD
    for (int i = tid; i < n4; i += 4 * nthr) {
        uint4 v[4];
#pragma unroll
        for (int k = 0; k < 4; k++)
            if (i + k * nthr < n4) v[k] = __ldg(g + i + k * nthr);
#pragma unroll
        for (int k = 0; k < 4; k++)
            if (i + k * nthr < n4) s[i + k * nthr] = v[k];
    }
#else
    for (int i = tid; i < n4; i += nthr)
        s[i] = g[i];
#endif
}

/* The block's epilogue: its sums into the frame's accumulators, and the
 * hand-over when job.pub.out is set. TRK_FUSED_FLUSH 0: after a block
 * barrier, by all its threads. 1: each warp takes a ticket from left (set
 * to the block's warps before the prologue's barrier) when its units are
 * done; the others return, the last flushes alone. A fence before the
 * ticket and one after it make every warp's shared atomics visible to the
 * last. */
__device__ __forceinline__ void block_flush(const struct trk_cu_job &job, const struct bacc &s_acc,
                                            unsigned *left, int n)
{
#if TRK_FUSED_FLUSH
    const int lane = threadIdx.x & 31;
    unsigned t = 0;
    __threadfence_block();
    __syncwarp();
    if (lane == 0) t = atomicSub(left, 1u);
    if (__shfl_sync(TRK_CU_FULL_MASK, t, 0) != 1u) return;
    __threadfence_block();
    bacc_flush(s_acc, job.acc, lane, 32);
    if (job.pub.out) hand_over<true>(job, n, lane, 32);
#else
    (void)left;
    __syncthreads();
    bacc_flush(s_acc, job.acc, threadIdx.x, blockDim.x);
    if (job.pub.out) hand_over<false>(job, n, threadIdx.x, blockDim.x);
#endif
}

/* Grid: persistent-style, blockIdx.x owns a contiguous range of units (row
 * segments of TRK_FUSED_SEG pixels) of rows [row0, row1), its warps take the
 * range's units in turn. A contiguous range keeps the set of objects one
 * block touches small, so the final flush costs few global atomics.
 * Shared memory (trk_cu_fused_smem): the table image or its summary tables
 * (TRK_FUSED_TABLES; none with 2) and the block's accumulators (bacc: u64
 * sums, u32 count and encoded bounds; with TRK_FUSED_ACC32 u32 sums taken
 * relative to the block).
 * Per unit: each lane loads 4 pixels, the 3 summary lookups per pixel
 * reject pixels that match nothing (exact: a summary is the OR of the full
 * entry's words); warps with any candidate load the full masks in chunks of
 * up to 4 words, OR them across the warp (redux.sync) and, per object present
 * in the segment, reduce count / sums of x and x^2 / min / max with redux.sync and let
 * lane 0 do one shared atomic per field. Matched pixels of one object in a
 * segment thus cost one event per warp, not one atomic per pixel. A mask
 * word with TRK_FUSED_DENSE_MIN or more objects present takes the dense path
 * (dense_word) instead: its cost per word does not grow with the objects
 * present, so a frame where every pixel matches every object costs a few
 * times a sparse one, not M times. With job.pub.out set, the last block
 * hands the results over to the host itself (hand_over). LIGHT: the object
 * set has lab, rg or class objects (those are compiled in only then; a
 * class adds its slot's bit from the frame's cell table, trk_cu_cls_word,
 * to the summary and the full masks). BM (the instance for sets with blob
 * lists): the blob objects' mask words of each segment where they are
 * present also go to job.bm (store_masks); the instance without has none
 * of that code. With TRK_FUSED_PRELOAD each warp's first unit's pixels are
 * prefetched into L1 (1) or loaded into registers (2, 3) before the
 * prologue's barrier; with 3 every unit's pixels are loaded while the unit
 * before is worked on. */
template <int CLS, int NW, bool LIGHT, bool BM>
__global__ void __launch_bounds__(TRK_FUSED_THREADS, TRK_FUSED_MIN_BLOCKS)
    fused_kernel(const struct trk_cu_job job)
{
    extern __shared__ uint4 s_raw[];
    __shared__ unsigned s_left; /* warps not done (TRK_FUSED_FLUSH) */
    const struct trk_cu_lut &lt = job.lt;
    const int n = job.n_obj;
    /* Layout and size: trk_cu_fused_smem (cuda_internal.cuh). */
    uint32_t *s_lut = reinterpret_cast<uint32_t *>(s_raw);
    const uint32_t *sum_tab = SUM_L1 ? job.lut : s_lut, *full_tab = FULL_L1 ? job.lut : s_lut;

    const int tid = threadIdx.x;
    if (job.pub.out && tid == 0) atomicMin(&job.pub.ctl->t0, gpu_clock_ns());
    const struct trk_cu_frame &f = job.f;
    const bool yuv = CLS >= CLS_YUYV;
    const bool swap = f.fmt == TRK_FMT_BGR24 || f.fmt == TRK_FMT_BGRA;
    int has[TRK_SPACE_COUNT + 1];
#pragma unroll
    for (int s = 0; s < TRK_SPACE_COUNT; s++)
        has[s] = s < 3 || LIGHT ? lt.has[s] : 0;
    has[HAS_CLS] = LIGHT ? lt.ncls : 0;
    const int W = f.width;
    const int segs = (W + TRK_FUSED_SEG - 1) / TRK_FUSED_SEG;
    const int total = (job.row1 - job.row0) * segs;
    const int per = (total + gridDim.x - 1) / gridDim.x;
    const int u_begin = blockIdx.x * per;
    const int u_end = min(total, u_begin + per);
    const int lane = tid & 31, nwarps = blockDim.x >> 5;
    const struct bacc s_acc =
        bacc_at(s_lut + trk_cu_fused_copy_words(lt), n, (unsigned)(job.row0 + u_begin / segs));

    /* (y, seg) of unit u, stepped incrementally: no division per unit. */
    int u = u_begin + (tid >> 5);
    int y = job.row0 + u / segs, seg = u % segs;
    uint32_t pa = 0, pb = 0, pc = 0;
    const int x0p = seg * TRK_FUSED_SEG + lane * TRK_FUSED_PX_PER_LANE;
    if (TRK_FUSED_PRELOAD == 1 && u < u_end && x0p < W) prefetch4<CLS>(f, x0p, y);
    if (TRK_FUSED_PRELOAD >= 2 && u < u_end && x0p < W) load4<CLS>(f, x0p, y, swap, pa, pb, pc);
    copy_tables(reinterpret_cast<const uint4 *>(job.lut), s_raw, trk_cu_fused_copy_words(lt) / 4,
                tid, blockDim.x);
    bacc_zero(s_acc, tid, blockDim.x);
    if (blockIdx.x == 0 && job.acc_clear)
        for (int i = tid; i < n; i += blockDim.x)
            job.acc_clear[i] = trk_cu_acc{};
    if (TRK_FUSED_FLUSH && tid == 0) s_left = (unsigned)nwarps;
    __syncthreads();

    for (bool pre = TRK_FUSED_PRELOAD >= 2; u < u_end; u += nwarps, pre = TRK_FUSED_PRELOAD == 3) {
        const int x0 = seg * TRK_FUSED_SEG + lane * TRK_FUSED_PX_PER_LANE;
        const int yy = y;
        seg += nwarps;
        while (seg >= segs) {
            seg -= segs;
            y++;
        }
        uint32_t ca = pa, cb = pb, cc = pc;
        const int x0n = seg * TRK_FUSED_SEG + lane * TRK_FUSED_PX_PER_LANE;
        if (TRK_FUSED_PRELOAD == 3 && u + nwarps < u_end && x0n < W)
            load4<CLS>(f, x0n, y, swap, pa, pb, pc); /* the next unit's, one unit ahead */
        uint32_t sm[4] = { 0, 0, 0, 0 };
        px4<LIGHT> p;
        if (x0 < W) {
            if (!pre) load4<CLS>(f, x0, yy, swap, ca, cb, cc);
            convert4(f, yuv, has, ca, cb, cc, p);
            summary4(sum_tab, lt, has, p, sm);
#pragma unroll
            for (int j = 1; j < 4; j++)
                if (x0 + j >= W) sm[j] = 0;
        }
        if (!__any_sync(TRK_CU_FULL_MASK, sm[0] | sm[1] | sm[2] | sm[3])) continue;
        unit_detail<NW, LIGHT, BM>(job, full_tab, has, p, sm, lane, x0, yy, s_acc);
    }
    block_flush(job, s_acc, &s_left, n);
}

typedef void (*fused_fn)(const struct trk_cu_job);

template <int NW, bool LIGHT, bool BM> fused_fn pick_cls(int cls)
{
    switch (cls) {
    case CLS_RGB3: return fused_kernel<CLS_RGB3, NW, LIGHT, BM>;
    case CLS_RGB4: return fused_kernel<CLS_RGB4, NW, LIGHT, BM>;
    case CLS_YUYV: return fused_kernel<CLS_YUYV, NW, LIGHT, BM>;
    case CLS_NV12: return fused_kernel<CLS_NV12, NW, LIGHT, BM>;
    case CLS_I420: return fused_kernel<CLS_I420, NW, LIGHT, BM>;
    }
    TRK_ASSERT(!"format class out of range");
    return NULL;
}

template <bool LIGHT, bool BM> fused_fn pick_nw(int cls, int nw)
{
    switch (nw) {
    case 1: return pick_cls<1, LIGHT, BM>(cls);
    case 2: return pick_cls<2, LIGHT, BM>(cls);
    case 4: return pick_cls<4, LIGHT, BM>(cls);
    case 8: return pick_cls<8, LIGHT, BM>(cls);
    default: return NULL;
    }
}

/* The kernel for a format class, mask width and object set (light: it has
 * lab, rg or class objects; bm: the instance that also stores the blob
 * objects' masks): chosen per set, never per pixel. */
fused_fn pick(int cls, int nw, bool light, bool bm)
{
    if (light) return bm ? pick_nw<true, true>(cls, nw) : pick_nw<true, false>(cls, nw);
    return bm ? pick_nw<false, true>(cls, nw) : pick_nw<false, false>(cls, nw);
}

bool has_light(const struct trk_cu_lut &lt)
{
    return lt.has[TRK_SPACE_LAB] || lt.has[TRK_SPACE_RG] || lt.ncls;
}

} // namespace

int trk_cu_fused_setup(const struct trk_cu_lut *lt, size_t smem, int *blocks_per_sm)
{
    int best = 0;
    for (int i = 0; i < 2 * CLS_COUNT; i++) {
        fused_fn fn = pick(i % CLS_COUNT, lt->nw, has_light(*lt), i >= CLS_COUNT);
        if (!fn) return TRK_EINVAL;
        TRK_CUDA_TRY(
            cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        int b = 0;
        TRK_CUDA_TRY(
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, fn, TRK_FUSED_THREADS, smem));
        if (i == 0 || b < best) best = b;
    }
    if (best < 1) return TRK_EINVAL;
    *blocks_per_sm = best;
    return 0;
}

int trk_cu_fused_launch(const struct trk_cu_job *job, int grid, cudaStream_t s)
{
    if (!job || job->n_obj <= 0 || job->n_obj > TRK_MAX_OBJECTS || grid < 1 || job->row0 < 0 ||
        job->row1 > job->f.height || job->row0 >= job->row1 || !job->lut)
        return TRK_EINVAL;
    const struct trk_cu_bmask &bm = job->bm;
    if (bm.words && (!bm.idx || bm.wpr != (job->f.width + 31) / 32 ||
                     bm.stride < (size_t)bm.wpr * (size_t)job->f.height))
        return TRK_EINVAL;
    fused_fn fn = pick(fmt_class(job->f.fmt), job->lt.nw, has_light(job->lt), bm.words != NULL);
    if (!fn) return TRK_EINVAL;
    const int segs = (job->f.width + TRK_FUSED_SEG - 1) / TRK_FUSED_SEG;
    const long units = (long)(job->row1 - job->row0) * segs;
    long want = (units + TRK_FUSED_MIN_UNITS_PER_BLOCK - 1) / TRK_FUSED_MIN_UNITS_PER_BLOCK;
    if (want < grid) grid = (int)want;
    /* 32-bit block sums: more blocks (in waves) where a block's share of a
     * large frame could overflow them; per = 1 always fits. */
    if (TRK_FUSED_ACC32) grid = (int)trk_facc::acc32_grid(units, segs, job->f.width, grid);
    fn<<<grid, TRK_FUSED_THREADS, trk_cu_fused_smem(job->lt, job->n_obj), s>>>(*job);
    TRK_CUDA_TRY(cudaGetLastError());
    return 0;
}
