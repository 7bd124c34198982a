/* The device side of trackd-bench --experiment cvt (bench_cvt.c): one Lloyd
 * iteration's regional reductions on the GPU, for the seed's CVT timing
 * shape. Compiled only in CUDA builds; bench_cvt.c reaches it through the
 * weak trk_bench_cuda_cvt (bench.h). */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include "bench.h"

/* Candidates staged in shared memory per block; more are read from global. */
#define CVT_SHARED_CAND 128
#define CVT_THREADS     256

/* One block per generator k: the block's threads stride over the pixels of
 * k's clipped square; each tests its pixel against k's candidates (staged in
 * shared memory) and adds it to per-thread sums; a warp shuffle reduction
 * and one shared-memory atomic per warp make the block's three sums, written
 * by thread 0 (each generator is one block, so no global atomics). */
static __global__ void cvt_kernel(const int32_t *gx, const int32_t *gy, const int32_t *coff,
                                  const int32_t *cand, int w, int h, int R, unsigned long long *out)
{
    __shared__ int32_t s_x[CVT_SHARED_CAND], s_y[CVT_SHARED_CAND], s_i[CVT_SHARED_CAND];
    __shared__ unsigned long long s_acc[3];
    const int k = blockIdx.x;
    const int kx = gx[k], ky = gy[k];
    const int c0 = coff[k], nc = coff[k + 1] - c0;
    for (int i = threadIdx.x; i < nc && i < CVT_SHARED_CAND; i += blockDim.x) {
        const int j = cand[c0 + i];
        s_x[i] = gx[j], s_y[i] = gy[j], s_i[i] = j;
    }
    if (threadIdx.x < 3) s_acc[threadIdx.x] = 0;
    __syncthreads();
    const int x0 = max(kx - R, 0), x1 = min(kx + R, w - 1);
    const int y0 = max(ky - R, 0), y1 = min(ky + R, h - 1);
    const int rw = x1 - x0 + 1, area = rw * (y1 - y0 + 1);
    unsigned long long m = 0, sx = 0, sy = 0;
    for (int p = threadIdx.x; p < area; p += blockDim.x) {
        const int x = x0 + p % rw, y = y0 + p / rw;
        const long long dk = (long long)(x - kx) * (x - kx) + (long long)(y - ky) * (y - ky);
        bool mine = true;
        for (int i = 0; i < nc && mine; i++) {
            int jx, jy, j;
            if (i < CVT_SHARED_CAND) {
                jx = s_x[i], jy = s_y[i], j = s_i[i];
            } else {
                j = cand[c0 + i], jx = gx[j], jy = gy[j];
            }
            const long long dj = (long long)(x - jx) * (x - jx) + (long long)(y - jy) * (y - jy);
            mine = dj > dk || (dj == dk && j > k);
        }
        if (mine) m++, sx += (unsigned long long)x, sy += (unsigned long long)y;
    }
    for (int off = 16; off > 0; off >>= 1) {
        m += __shfl_down_sync(0xffffffffu, m, off);
        sx += __shfl_down_sync(0xffffffffu, sx, off);
        sy += __shfl_down_sync(0xffffffffu, sy, off);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(&s_acc[0], m);
        atomicAdd(&s_acc[1], sx);
        atomicAdd(&s_acc[2], sy);
    }
    __syncthreads();
    if (threadIdx.x < 3) out[3 * (size_t)k + threadIdx.x] = s_acc[threadIdx.x];
}

/* Device buffers, grown as needed and kept for the run (a benchmark tool:
 * the experiment calls this once per iteration). */
static struct {
    int32_t *d_gen, *d_coff, *d_cand;
    unsigned long long *d_out;
    size_t cap_n, cap_cand;
    cudaEvent_t e0, e1;
    bool events;
} cv;

#define CVT_TRY(x)                                                                                 \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            snprintf(why, why_len, "%s: %s", #x, cudaGetErrorString(e_));                          \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

extern "C" int trk_bench_cuda_cvt(const int32_t *gx, const int32_t *gy, const int32_t *coff,
                                  const int32_t *cand, int n, int w, int h, int R, uint64_t *mass,
                                  uint64_t *sx, uint64_t *sy, double *kernel_ms, char *why,
                                  size_t why_len)
{
    const size_t ncand = (size_t)coff[n];
    if (!cv.events) {
        CVT_TRY(cudaEventCreate(&cv.e0));
        CVT_TRY(cudaEventCreate(&cv.e1));
        cv.events = true;
    }
    if ((size_t)n > cv.cap_n) {
        cudaFree(cv.d_gen);
        cudaFree(cv.d_coff);
        cudaFree(cv.d_out);
        cv.d_gen = cv.d_coff = NULL;
        cv.d_out = NULL;
        cv.cap_n = 0;
        CVT_TRY(cudaMalloc(&cv.d_gen, 2 * (size_t)n * sizeof(int32_t)));
        CVT_TRY(cudaMalloc(&cv.d_coff, ((size_t)n + 1) * sizeof(int32_t)));
        CVT_TRY(cudaMalloc(&cv.d_out, 3 * (size_t)n * sizeof(unsigned long long)));
        cv.cap_n = (size_t)n;
    }
    if (ncand > cv.cap_cand || !cv.d_cand) {
        cudaFree(cv.d_cand);
        cv.d_cand = NULL;
        cv.cap_cand = 0;
        CVT_TRY(cudaMalloc(&cv.d_cand, (ncand ? ncand : 1) * sizeof(int32_t)));
        cv.cap_cand = ncand ? ncand : 1;
    }
    CVT_TRY(cudaMemcpy(cv.d_gen, gx, (size_t)n * sizeof(int32_t), cudaMemcpyHostToDevice));
    CVT_TRY(cudaMemcpy(cv.d_gen + n, gy, (size_t)n * sizeof(int32_t), cudaMemcpyHostToDevice));
    CVT_TRY(cudaMemcpy(cv.d_coff, coff, ((size_t)n + 1) * sizeof(int32_t), cudaMemcpyHostToDevice));
    if (ncand)
        CVT_TRY(cudaMemcpy(cv.d_cand, cand, ncand * sizeof(int32_t), cudaMemcpyHostToDevice));
    CVT_TRY(cudaEventRecord(cv.e0));
    cvt_kernel<<<n, CVT_THREADS>>>(cv.d_gen, cv.d_gen + n, cv.d_coff, cv.d_cand, w, h, R, cv.d_out);
    CVT_TRY(cudaGetLastError());
    CVT_TRY(cudaEventRecord(cv.e1));
    CVT_TRY(cudaEventSynchronize(cv.e1));
    float ms = 0;
    CVT_TRY(cudaEventElapsedTime(&ms, cv.e0, cv.e1));
    *kernel_ms = ms;
    unsigned long long *h_out = new unsigned long long[3 * (size_t)n];
    cudaError_t e =
        cudaMemcpy(h_out, cv.d_out, 3 * (size_t)n * sizeof(*h_out), cudaMemcpyDeviceToHost);
    for (int k = 0; e == cudaSuccess && k < n; k++)
        mass[k] = h_out[3 * k], sx[k] = h_out[3 * k + 1], sy[k] = h_out[3 * k + 2];
    delete[] h_out;
    CVT_TRY(e);
    return 0;
}
