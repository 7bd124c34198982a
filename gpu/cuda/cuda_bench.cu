/* The CUDA backend's door for the benchmark (bench_hooks.h). */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log_hook.h"
#include "cuda_internal.cuh"
#include "bench_hooks.h"
#include "regions.cuh"

using namespace trk_cuda;

extern "C" {

int trk_cuda_bench_upload(struct trk_backend *bk, const struct trk_image *img,
                          const struct trk_roi *rois)
{
    struct cuda_be *b = (struct cuda_be *)trk_backend_self(bk, &trk_cuda_ops);
    if (!b) return TRK_EINVAL;
    log_scope ls(b);
    int err = trk_image_check(img);
    if (err) return err;
    if (img->mem != TRK_MEM_HOST) return TRK_EINVAL; /* times host uploads only */
    if (img->width > b->max_w || img->height > b->max_h) return TRK_ETOOBIG;
    TRK_CUDA_TRY(cudaSetDevice(b->dev));
    struct layout L;
    if (frame_layout(img->width, img->height, img->fmt, &L) > b->frame_bytes) return TRK_ETOOBIG;
    fill_frame(b, img, &L);
    bool pinned = true;
    for (int p = 0; p < L.p.planes; p++)
        pinned = pinned && plane_pinned(img, &L, p);
    if ((err = upload_rows(b, img, &L, 0, img->height, pinned))) return err;
    TRK_CUDA_TRY(cudaStreamSynchronize(b->s_up));
    /* The kernels timed next read the filtered frame, as tracking does. */
    if (b->pf.sigma > 0 && b->n) {
        if ((err = queue_prefilter(b, &L))) return err;
        TRK_CUDA_TRY(cudaStreamSynchronize(b->s_k));
    }
    b->roi = false;
    if (b->n && rois) {
        if ((err = queue_rois(b, rois))) return err;
        TRK_CUDA_TRY(cudaStreamSynchronize(b->s_k));
    }
    return 0;
}

int trk_cuda_bench_kernels(struct trk_backend *bk, int iters, float *ms, struct trk_obj_result *out)
{
    struct cuda_be *b = (struct cuda_be *)trk_backend_self(bk, &trk_cuda_ops);
    if (!b || b->n == 0 || iters < 1 || !ms) return TRK_EINVAL;
    log_scope ls(b);
    TRK_CUDA_TRY(cudaSetDevice(b->dev));
    for (int i = 0; i < iters; i++) {
        TRK_CUDA_TRY(cudaEventRecord(b->ev_ks[0], b->s_k));
        if (b->roi && (b->variant == V_FUSED || b->variant == V_LUT)) {
            struct trk_cu_job j = make_job(b, 0, b->f.height, false);
            int err = trk_cu_roimask_launch(&j, b->d_rowmask, b->d_colmask, b->s_k);
            if (err) return err;
        }
        int err = launch_rows(b, 0, b->f.height, true);
        if (err) return err;
        b->blob_work = false;
        if (b->nbo && (err = queue_blobs(b))) return err;
        TRK_CUDA_TRY(cudaEventRecord(b->ev_ke[0], b->s_k));
        TRK_CUDA_TRY(cudaMemcpyAsync(b->hp_res, b->d_acc[b->parity],
                                     (size_t)b->slots * sizeof(struct trk_cu_acc),
                                     cudaMemcpyDeviceToHost, b->s_k));
        TRK_CUDA_TRY(cudaEventSynchronize(b->ev_ke[0]));
        TRK_CUDA_TRY(cudaStreamSynchronize(b->s_k));
        b->parity ^= 1;
        ms[i] = elapsed(b->ev_ks[0], b->ev_ke[0]);
    }
    b->log.lines = 0;
    if (out) decode(b->hp_res, b->pos, b->n, out);
    if (b->blob_work) decode_blobs(b);
    b->bench_blobs = b->blob_work;
    return 0;
}

int trk_cuda_rrm_config(struct trk_backend *bk, int design, int alpha, int beta)
{
    struct cuda_be *b = (struct cuda_be *)trk_backend_self(bk, &trk_cuda_ops);
    if (!b) return TRK_EINVAL;
    log_scope ls(b);
    if (!b->rrm) {
        /* The state sets up its kernels' limits on the current device. */
        TRK_CUDA_TRY(cudaSetDevice(b->dev));
        int err = trk_cu_rrm_create(b->max_w, b->max_h, b->frame_bytes, b->sms, &b->rrm);
        if (err) return err;
    }
    return trk_cu_rrm_config(b->rrm, design, alpha, beta);
}

int trk_cuda_rrm_used(struct trk_backend *bk, int *design, int *alpha, int *beta)
{
    struct cuda_be *b = (struct cuda_be *)trk_backend_self(bk, &trk_cuda_ops);
    if (!b || !b->rrm || !design || !alpha || !beta) return TRK_EINVAL;
    trk_cu_rrm_used(b->rrm, design, alpha, beta);
    return 0;
}

int trk_cuda_bench_blobs(struct trk_backend *bk, int obj, const struct trk_blob **blobs)
{
    struct cuda_be *b = (struct cuda_be *)trk_backend_self(bk, &trk_cuda_ops);
    if (blobs) *blobs = NULL;
    if (!b || !blobs || obj < 0 || obj >= b->n || !b->bench_blobs) return TRK_EINVAL;
    return cu_blobs(b, obj, blobs);
}

} /* extern "C" */
