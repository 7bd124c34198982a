/* Warp primitives the kernels are built from, as CUB builds its kernels
 * from block primitives: each scan or reduction is written here once. All
 * are __device__ __forceinline__, so a call compiles to the loop it
 * replaces; every lane of the warp must call them (full mask). */
#ifndef TRK_GPU_CUDA_WARP_CUH
#define TRK_GPU_CUDA_WARP_CUH

/* Every lane of a warp. */
#define TRK_CU_FULL_MASK 0xffffffffu

__device__ __forceinline__ unsigned long long trk_cu_max64(unsigned long long a,
                                                           unsigned long long b)
{
    return a > b ? a : b;
}

/* Inclusive prefix sum over the lanes: lane l (lane = its index in the
 * warp) gets the sum of v over lanes 0..l; lane 31 the warp's total. */
__device__ __forceinline__ unsigned trk_cu_warp_incl_sum(unsigned v, int lane)
{
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const unsigned u = __shfl_up_sync(TRK_CU_FULL_MASK, v, d);
        if (lane >= d) v += u;
    }
    return v;
}

/* For a row of words spread over the warp (lane l holds word c + l): the
 * word before this lane's; lane 0 gets carry, the previous 32 words' last. */
__device__ __forceinline__ unsigned trk_cu_warp_prev_word(unsigned m, int lane, unsigned carry)
{
    const unsigned prev = __shfl_up_sync(TRK_CU_FULL_MASK, m, 1);
    return lane == 0 ? carry : prev;
}

/* Sum of v over the warp, in lane 0 (the other lanes hold partial sums). */
__device__ __forceinline__ unsigned long long trk_cu_warp_sum64(unsigned long long v)
{
    for (int d = 16; d > 0; d >>= 1)
        v += __shfl_down_sync(TRK_CU_FULL_MASK, v, d);
    return v;
}

/* Sum of v over the lanes in peers (every one of them must call it), exact
 * for any 32-bit v (a square or product of coordinates below 2^16): its
 * 16-bit halves are reduced apart (each sum < 32 * 2^16) and joined in 64
 * bits; every lane in peers gets it. */
__device__ __forceinline__ unsigned long long trk_cu_reduce_add_wide(unsigned peers, unsigned v)
{
    const unsigned lo = __reduce_add_sync(peers, v & 0xffffu),
                   hi = __reduce_add_sync(peers, v >> 16);
    return ((unsigned long long)hi << 16) + lo;
}

/* Largest v over the warp, in every lane. */
__device__ __forceinline__ unsigned long long trk_cu_warp_max64(unsigned long long v)
{
    for (int d = 16; d > 0; d >>= 1)
        v = trk_cu_max64(v, __shfl_xor_sync(TRK_CU_FULL_MASK, v, d));
    return v;
}

#endif
