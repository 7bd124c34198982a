/* The fused kernel's dense path (fused.cu): per-object statistics of one
 * warp's 128-pixel row segment when many objects are present in it.
 *
 * The warp holds, per lane L, four mask words m[j] (pixel x = base + 4 L + j,
 * bit b = object b of a 32-object word). The sparse path reduces one object
 * at a time across the warp (redux.sync, lane 0's shared atomics): its cost
 * grows with the objects present. The dense path transposes the four 32 x 32
 * bit matrices across the warp instead (5 shuffle stages), so lane b holds
 * object b's pixels of the whole segment: t[j] bit L = pixel base + 4 L + j.
 * Every lane then computes its own object's count, sum of x offsets, first
 * and last offset with popcounts and does its shared atomics itself: 32
 * objects in one pass, cost independent of how many are present.
 *
 * The arithmetic is __host__ __device__ so tests/gpu/test_fused_dense.cu
 * checks these very functions on the CPU (CI has no GPU), the warp's
 * shuffle emulated lane by lane. */
#ifndef TRK_GPU_CUDA_FUSED_DENSE_CUH
#define TRK_GPU_CUDA_FUSED_DENSE_CUH

#include <stdint.h>

/* nvcc unrolls these loops (constant trip counts); the host compiler, which
 * sees the same code for the test, does not know the pragma. */
#ifdef __CUDA_ARCH__
#define TRK_DENSE_UNROLL _Pragma("unroll")
#else
#define TRK_DENSE_UNROLL
#endif

namespace trk_dense
{

__host__ __device__ __forceinline__ unsigned popc(uint32_t x)
{
#ifdef __CUDA_ARCH__
    return (unsigned)__popc(x);
#else
    return (unsigned)__builtin_popcount(x);
#endif
}

/* Index of the lowest / highest set bit; x != 0. */
__host__ __device__ __forceinline__ int lowest(uint32_t x)
{
#ifdef __CUDA_ARCH__
    return __ffs(x) - 1;
#else
    return __builtin_ctz(x);
#endif
}
__host__ __device__ __forceinline__ int highest(uint32_t x)
{
#ifdef __CUDA_ARCH__
    return 31 - __clz(x);
#else
    return 31 - __builtin_clz(x);
#endif
}

/* Bits whose index has bit s clear (s a power of two <= 16):
 * 0x55555555, 0x33333333, 0x0f0f0f0f, 0x00ff00ff, 0x0000ffff. */
__host__ __device__ constexpr uint32_t lo_mask(int s)
{
    return 0xffffffffu / ((1u << s) + 1u);
}

/* One stage of the 32 x 32 bit transpose, for block size s (16, 8, 4, 2, 1
 * in that order): x is this lane's word, y the word of lane ^ s. Viewing
 * lanes as rows and bits as columns, the stage swaps the off-diagonal s x s
 * blocks of every 2s x 2s block: a lane with lane & s clear keeps its
 * columns with bit s clear and takes its partner's such columns into the
 * others; the partner the reverse. After the five stages lane b's bit L is
 * what lane L's bit b was. */
__host__ __device__ __forceinline__ uint32_t transpose_merge(uint32_t x, uint32_t y, unsigned lane,
                                                             int s)
{
    const uint32_t lo = lo_mask(s);
    return (lane & (unsigned)s) ? (x & ~lo) | ((y >> s) & lo) : (x & lo) | ((y << s) & ~lo);
}

/* One object's pixels in a segment, offsets from the segment's first pixel:
 * cnt matched pixels, sum their offsets, sq the sum of their squares, first
 * and last offset (valid when cnt > 0). cnt <= 128, sum < 128 * 128 and sq
 * <= 127 * 128 * 255 / 6 = 690880, so 32 bits hold them. */
struct seg_stats {
    unsigned cnt, sum, sq, first, last;
};

/* Sum of the set bit indices of x: sum_k 2^k popc(x & bits with index bit k). */
__host__ __device__ __forceinline__ unsigned bit_index_sum(uint32_t x)
{
    unsigned s = 0;
    TRK_DENSE_UNROLL
    for (int k = 0; k < 5; k++)
        s += (1u << k) * popc(x & ~lo_mask(1 << k));
    return s;
}

/* Sum of the squares of the set bit indices of x: an index L = sum_k 2^k l_k
 * has L^2 = sum_k 4^k l_k + sum_{k < k'} 2^(k + k' + 1) l_k l_k', so masked
 * popcounts again (15 masks). */
__host__ __device__ __forceinline__ unsigned bit_index_sq_sum(uint32_t x)
{
    unsigned s = 0;
    TRK_DENSE_UNROLL
    for (int k = 0; k < 5; k++) {
        const uint32_t xk = x & ~lo_mask(1 << k);
        s += (1u << (2 * k)) * popc(xk);
        TRK_DENSE_UNROLL
        for (int k2 = k + 1; k2 < 5; k2++)
            s += (2u << (k + k2)) * popc(xk & ~lo_mask(1 << k2));
    }
    return s;
}

/* From the transposed words: t[j] bit L = pixel 4 L + j. The sum of offsets
 * is sum_j (j popc(t[j]) + 4 sum of set bit indices of t[j]), and the sum of
 * the set bit indices of a word is sum_k 2^k popc(word & bits whose index
 * has bit k set). The first offset lies in the lowest lane any word has;
 * among the words, the lowest j set there (likewise the last). */
__host__ __device__ __forceinline__ seg_stats segment_stats(const uint32_t t[4])
{
    seg_stats r;
    /* Per lane, how many of the four words have the bit, as a bit-sliced
     * number c0 + 2 c1 + 4 c2 (carry-save adds): the five masked popcounts
     * then cover all four words at once (15 popcounts instead of 20). */
    const uint32_t s1 = t[0] ^ t[1] ^ t[2], k1 = (t[0] & t[1]) | (t[2] & (t[0] ^ t[1]));
    const uint32_t c0 = s1 ^ t[3], k2 = s1 & t[3];
    const uint32_t c1 = k1 ^ k2, c2 = k1 & k2;
    const unsigned n1 = popc(t[1]), n2 = popc(t[2]), n3 = popc(t[3]);
    const unsigned cnt = popc(t[0]) + n1 + n2 + n3;
    unsigned sum = n1 + 2u * n2 + 3u * n3;
    TRK_DENSE_UNROLL
    for (int k = 0; k < 5; k++) {
        const uint32_t ck = ~lo_mask(1 << k);
        sum += (4u << k) * (popc(c0 & ck) + 2u * popc(c1 & ck) + 4u * popc(c2 & ck));
    }
    r.cnt = cnt;
    r.sum = sum;
    /* Offset 4 L + j squared: 16 L^2 + 8 j L + j^2, summed over the words:
     * 16 sum_L L^2 (c0 + 2 c1 + 4 c2) + 8 sum_j j (index sum of t[j]) +
     * n1 + 4 n2 + 9 n3. */
    r.sq = 16u * (bit_index_sq_sum(c0) + 2u * bit_index_sq_sum(c1) + 4u * bit_index_sq_sum(c2)) +
           8u * (bit_index_sum(t[1]) + 2u * bit_index_sum(t[2]) + 3u * bit_index_sum(t[3])) + n1 +
           4u * n2 + 9u * n3;
    const uint32_t any = t[0] | t[1] | t[2] | t[3];
    r.first = r.last = 0;
    if (any) {
        const int l0 = lowest(any), l1 = highest(any);
        const unsigned j0 = (t[0] >> l0) & 1u   ? 0u
                            : (t[1] >> l0) & 1u ? 1u
                            : (t[2] >> l0) & 1u ? 2u
                                                : 3u;
        const unsigned j1 = (t[3] >> l1) & 1u   ? 3u
                            : (t[2] >> l1) & 1u ? 2u
                            : (t[1] >> l1) & 1u ? 1u
                                                : 0u;
        r.first = 4u * (unsigned)l0 + j0;
        r.last = 4u * (unsigned)l1 + j1;
    }
    return r;
}

} // namespace trk_dense

#endif
