/* The fused kernel's block-local sums in 32-bit words (TRK_FUSED_ACC32,
 * fused.cu): what one (object, row segment) event adds, the bound that keeps
 * every sum of a block below 2^32, and the widening into the frame's 64-bit
 * sums at the flush.
 *
 * Why: a 64-bit shared atomicAdd is a compare-and-swap loop on sm_90, and an
 * event with the second moments did five of them (sum x, sum y, x*x, y*y,
 * x*y). Here every per-event term is a 32-bit add (native shared atomics,
 * no result waited for), exact because each is taken relative to the block:
 * y from the block's first row yb, x^2 split by the segment's index s (x = 128
 * s + o, o the offset in the segment): x^2 = 16384 s^2 + 256 s o + o^2. A
 * block's sums are bounded by its pixel count times the largest term, and
 * the launch picks enough blocks (acc32_fits) that this stays below 2^32.
 *
 * __host__ __device__, so tests/gpu/test_fused_dense.cu checks the
 * arithmetic and the bound on the CPU (CI has no GPU). */
#ifndef TRK_GPU_CUDA_FUSED_ACC_CUH
#define TRK_GPU_CUDA_FUSED_ACC_CUH

#include <stdint.h>

namespace trk_facc
{

/* The 32-bit sums of one object in one block, in their shared-memory order;
 * the four encoded bounds (trk_cu_acc: nx0, ny0, px1, py1) follow: WORDS
 * words an object. */
enum { CNT, SX, SY, SYY, SXY, SS, SSO, SOO, NSUM, WORDS = NSUM + 4 };

/* What an event adds to each sum: cnt pixels of row yb + yr at x = 128 s + o
 * whose offsets o sum to so and their squares to soo. */
struct terms {
    unsigned v[NSUM];
};
__host__ __device__ __forceinline__ struct terms event_terms(unsigned cnt, unsigned so,
                                                             unsigned soo, unsigned s, unsigned yr)
{
    struct terms t;
    const unsigned sx = cnt * 128u * s + so;
    t.v[CNT] = cnt;
    t.v[SX] = sx;
    t.v[SY] = cnt * yr;
    t.v[SYY] = cnt * yr * yr;
    t.v[SXY] = sx * yr;
    t.v[SS] = cnt * s * s;
    t.v[SSO] = s * so;
    t.v[SOO] = soo;
    return t;
}

/* The frame-coordinate sums of a block's 32-bit sums (p: NSUM words, yb
 * its first row). */
struct wide {
    unsigned long long mass, sx, sy, sxx, syy, sxy;
};
__host__ __device__ __forceinline__ struct wide widen(const unsigned *p, unsigned yb)
{
    struct wide w;
    const unsigned long long c = p[CNT], y = yb, sy = p[SY];
    w.mass = c;
    w.sx = p[SX];
    w.sy = c * y + sy;
    w.syy = c * y * y + 2ull * y * sy + p[SYY];
    w.sxy = y * p[SX] + p[SXY];
    w.sxx = 16384ull * p[SS] + 256ull * p[SSO] + p[SOO];
    return w;
}

/* Whether a launch of grid blocks over units row segments (segs of them a
 * row, w pixels wide) keeps every block's sums below 2^32. A block takes at
 * most per = ceil(units / grid) units: at most C = 128 per pixels of one
 * object, rows yb .. yb + r with r <= (per - 1) / segs + 1, x <= w - 1,
 * s <= segs - 1, o <= 127; so every sum is at most C times the largest of
 * (w - 1) r (x y; x alone is smaller), r^2, (segs - 1)^2, 127 (segs - 1),
 * 127^2. Any frame fits with enough blocks (per = 1: 128 x 65535 x 1). */
__host__ __device__ __forceinline__ bool acc32_fits(long long units, int segs, int w,
                                                    long long grid)
{
    if (units <= 0 || grid <= 0 || segs <= 0 || w <= 0) return false;
    const unsigned long long per = (unsigned long long)((units + grid - 1) / grid);
    const unsigned long long c = 128ull * per, r = (per - 1) / (unsigned)segs + 1,
                             s = (unsigned)segs - 1;
    unsigned long long f = (unsigned long long)(w - 1) * r;
    if (r * r > f) f = r * r;
    if (s * s > f) f = s * s;
    if (127ull * s > f) f = 127ull * s;
    if (127ull * 127ull > f) f = 127ull * 127ull;
    return f <= 0xffffffffull / c;
}

/* The grid of a launch with 32-bit sums: grid blocks, doubled (at most one
 * unit a block) until every block's sums fit. */
__host__ __device__ __forceinline__ long long acc32_grid(long long units, int segs, int w,
                                                         long long grid)
{
    while (grid < units && !acc32_fits(units, segs, w, grid))
        grid = 2 * grid < units ? 2 * grid : units;
    return grid;
}

} // namespace trk_facc

#endif
