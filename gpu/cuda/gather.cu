/* Point gathers on device images (trk_backend_set_gather): the native
 * samples of a few thousand planned pixels of an NVDEC surface read in the
 * frame's own submission, so that nothing copies the frame to the host for
 * them (daemon/light.h plans the points). The kernel runs on the kernel
 * stream before the frame's kernels and writes the values to mapped host
 * memory: they are there when wait() returns, with no copy and no event of
 * their own. */
#include <stdint.h>
#include <string.h>

#include "cuda_internal.cuh"

namespace
{

static_assert(TRK_CU_GATHER_THREADS % 32 == 0 && TRK_CU_GATHER_THREADS <= 1024,
              "gather block size");

/* One gather as the kernel sees it: the image's own planes (device
 * memory), the points and where the values go (both mapped host memory,
 * or device copies). */
struct gather_job {
    const uint8_t *plane[3];
    size_t pitch[3];
    int fmt, n;
    const struct trk_gather_point *pts;
    struct trk_gather_value *vals;
};

/* One thread per point (grid-stride): its pixel's native samples by
 * color.h's trk_pixel_native, the definition trk_image_gather runs on the
 * host. No shared memory, no atomics. The system-scope fence makes each
 * thread's write visible to the host before the kernel ends, so a later
 * kernel's hand-over (trk_cu_pub: wait() returns when the host sees its
 * seq) implies these values are there too. */
static __global__ void gather_kernel(const struct gather_job j)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < j.n; i += gridDim.x * blockDim.x) {
        const struct trk_gather_point p = j.pts[i];
        int s[3];
        trk_pixel_native(j.fmt, j.plane, j.pitch, p.x, p.y, s);
        struct trk_gather_value v;
        v.s[0] = (uint8_t)s[0], v.s[1] = (uint8_t)s[1], v.s[2] = (uint8_t)s[2], v.pad = 0;
        j.vals[i] = v;
    }
    __threadfence_system();
}

/* Validates and launches on s. */
static int gather_launch(const struct gather_job *j, cudaStream_t s)
{
    if (j->n <= 0 || j->n > TRK_MAX_GATHER || !j->pts || !j->vals || !j->plane[0])
        return TRK_EINVAL;
    const int blocks = (j->n + TRK_CU_GATHER_THREADS - 1) / TRK_CU_GATHER_THREADS;
    gather_kernel<<<blocks, TRK_CU_GATHER_THREADS, 0, s>>>(*j);
    TRK_CUDA_TRY(cudaGetLastError());
    return 0;
}

} // namespace

namespace trk_cuda
{

/* The gather buffers, made at the first gather: the points then the
 * values in one pinned, mapped allocation; device copies when the device
 * cannot address it. */
static int gather_buffers(struct cuda_be *b)
{
    if (b->hp_gpts) return 0;
    const size_t pts = TRK_MAX_GATHER * sizeof(struct trk_gather_point);
    const size_t bytes = pts + TRK_MAX_GATHER * sizeof(struct trk_gather_value);
    void *h = NULL, *d = NULL;
    TRK_CUDA_TRY(cudaHostAlloc(&h, bytes, cudaHostAllocMapped));
    b->hp_gpts = (struct trk_gather_point *)h;
    b->hp_gval = (struct trk_gather_value *)((char *)h + pts);
    if (cudaHostGetDevicePointer(&d, h, 0) != cudaSuccess) {
        cudaGetLastError();
        TRK_CUDA_TRY(cudaMalloc(&b->d_gather, bytes));
        d = b->d_gather;
    } else {
        b->gather_mapped = true;
    }
    b->dp_gpts = (struct trk_gather_point *)d;
    b->dp_gval = (struct trk_gather_value *)((char *)d + pts);
    return 0;
}

void free_gather(struct cuda_be *b)
{
    cudaFreeHost(b->hp_gpts);
    cudaFree(b->d_gather);
    b->hp_gpts = b->dp_gpts = NULL;
    b->hp_gval = b->dp_gval = NULL;
    b->d_gather = NULL;
}

int cu_gather(void *self, const struct trk_gather_point *pts, int n)
{
    struct cuda_be *b = (struct cuda_be *)self;
    log_scope ls(b);
    TRK_CUDA_TRY(cudaSetDevice(b->dev));
    int err = gather_buffers(b);
    if (err) return err;
    /* No gather reads them now: the last frame was waited for. */
    memcpy(b->hp_gpts, pts, (size_t)n * sizeof(*pts));
    b->gather_arm = n;
    return 0;
}

void cu_gathered(void *self, struct trk_gather_value *out, int n)
{
    const struct cuda_be *b = (const struct cuda_be *)self;
    memcpy(out, b->hp_gval, (size_t)n * sizeof(*out));
}

int queue_gather(struct cuda_be *b, const struct trk_image *img)
{
    if (!b->gather_n) return 0;
    struct gather_job j;
    memset(&j, 0, sizeof(j));
    for (int p = 0; p < 3; p++) {
        j.plane[p] = img->plane[p];
        j.pitch[p] = img->pitch[p];
    }
    j.fmt = (int)img->fmt;
    j.n = b->gather_n;
    j.pts = b->dp_gpts;
    j.vals = b->dp_gval;
    if (!b->gather_mapped)
        TRK_CUDA_TRY(cudaMemcpyAsync(b->d_gather, b->hp_gpts, (size_t)j.n * sizeof(*j.pts),
                                     cudaMemcpyHostToDevice, b->s_k));
    int err = gather_launch(&j, b->s_k);
    if (err) return err;
    if (!b->gather_mapped)
        TRK_CUDA_TRY(cudaMemcpyAsync(b->hp_gval, b->dp_gval, (size_t)j.n * sizeof(*j.vals),
                                     cudaMemcpyDeviceToHost, b->s_k));
    return 0;
}

int gather_only(struct cuda_be *b, const struct trk_image *img)
{
    TRK_CUDA_TRY(cudaEventRecord(b->ev_legacy, cudaStreamLegacy));
    TRK_CUDA_TRY(cudaStreamWaitEvent(b->s_k, b->ev_legacy, 0));
    int err = queue_gather(b, img);
    if (err) return err;
    b->nk = 0;
    b->roi = false;
    b->up_timed = false;
    b->gathered_only = true;
    TRK_CUDA_TRY(cudaEventRecord(b->ev_done, b->s_k));
    return 0;
}

} // namespace trk_cuda
