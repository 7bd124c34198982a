/* The benchmark's door into the CUDA backend: bench/bench_cuda.cu only.
 *
 * trackd-bench times the kernels alone, on a frame already resident in
 * device memory, which gpu/backend.h cannot express (every process call
 * uploads, runs and reads back). These two calls are all the benchmark gets;
 * the backend's internals (cuda_internal.cuh: device layouts, launch
 * wrappers) stay private to gpu/cuda/. Plain C, no CUDA types.
 *
 * Both take a backend made by trk_backend_create with kind TRK_BACKEND_CUDA
 * (any variant) and with no frame in flight; anything else is TRK_EINVAL.
 * They use the backend's own buffers and streams, so the daemon's path
 * (trk_backend_process) and the benchmark's run the same kernels on the
 * same device layout. */
#ifndef TRK_GPU_CUDA_BENCH_HOOKS_H
#define TRK_GPU_CUDA_BENCH_HOOKS_H

#include "../backend.h"
/* Plain #defines: the limits variant names accept (TRK_MOCT_MAX_R bounds the
 * r of "moct-<a>-r<r>", which the benchmark's sweeps walk). */
#include "tuning.cuh"

#ifdef __cplusplus
extern "C" {
#endif

/* Copies img into the device frame once and waits for the copy. rois as for
 * trk_backend_process (NULL: the whole frame); with objects set they are
 * uploaded and the ROI masks built. 0, TRK_EINVAL, TRK_ETOOBIG or
 * TRK_EBACKEND. */
int trk_cuda_bench_upload(struct trk_backend *b, const struct trk_image *img,
                          const struct trk_roi *rois);

/* Runs the variant's kernels on the resident frame iters (>= 1) times with
 * the objects set (>= 1), writing run i's kernel time (CUDA events, ms) to
 * ms[i] and the last run's results to out (one per object; out may be
 * NULL). 0, TRK_EINVAL or TRK_EBACKEND. When objects have blobs > 0, each
 * run also labels them and ms[i] includes the whole blob pipeline and the
 * copy of the top-K records to the host (the blob target's "threshold +
 * label + stats + top-K copy"). */
int trk_cuda_bench_kernels(struct trk_backend *b, int iters, float *ms, struct trk_obj_result *out);

/* Object obj's blob list of the last trk_cuda_bench_kernels run, as
 * trk_backend_blobs gives it after a wait (valid until the next submit,
 * set_objects or bench run): its length, or TRK_EINVAL when there is no
 * such run since the last set_objects or submit, or obj is out of range. */
int trk_cuda_bench_blobs(struct trk_backend *b, int obj, const struct trk_blob **blobs);

/* The regional form's design (trk_backend_submit_regions on this backend)
 * from the next call on: design 0 = default (the flat work list), 1 = the
 * seed's quadrants and patches (id = Q alpha + y' beta + x'), 2 = flat;
 * alpha (patches per quadrant, 1..64, a multiple of beta) and beta
 * (patches per quadrant row) for the seed layout, both 0 = chosen per call
 * from the ROI sizes and the SM count. For the benchmark's columns and the
 * device tests; the daemon keeps the default. 0 or TRK_EINVAL. */
int trk_cuda_rrm_config(struct trk_backend *b, int design, int alpha, int beta);
/* What the last regional call used (design 1 or 2; alpha, beta: 0 unless
 * 1). 0 or TRK_EINVAL. */
int trk_cuda_rrm_used(struct trk_backend *b, int *design, int *alpha, int *beta);

#ifdef __cplusplus
}
#endif
#endif
