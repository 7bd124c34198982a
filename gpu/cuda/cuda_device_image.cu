/* The CUDA backend on frames already in device memory (TRK_MEM_CUDA):
 * read in place when the kernels' loads fit, else copied on the device. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log_hook.h"
#include "cuda_internal.cuh"

namespace trk_cuda
{

/* ------------------------------------------------ device images */

/* Whether the kernels can read a device image where it is: the fused
 * kernel's 16-byte loads need 16-byte aligned planes and pitches, and each
 * row room for the 4-pixel-wide loads past its last pixel (what
 * frame_layout gives d_frame; the bytes there are read and masked off).
 * FFmpeg's CUDA frames (256-byte aligned pitches) qualify. wide (if not
 * NULL) gets the planes' layout at the width rounded up to those loads. */
bool device_in_place(const struct trk_image *img, struct trk_plane_layout *wide_out)
{
    struct trk_plane_layout wide;
    if (trk_image_plane_layout(img->fmt, (img->width + 3) / 4 * 4, img->height, &wide))
        return false;
    if (wide_out) *wide_out = wide;
    for (int p = 0; p < wide.planes; p++)
        if ((uintptr_t)img->plane[p] % 16 || img->pitch[p] % 16 ||
            img->pitch[p] < wide.row_bytes[p] || img->pitch[p] > (size_t)INT_MAX)
            return false;
    return true;
}

/* A device image as the kernels' frame, on the kernel stream after the work
 * already queued on CUDA's legacy default stream (where FFmpeg copies into
 * its surfaces): b->f points at the image's planes (read in place), or,
 * when the kernels cannot read it there, at d_frame after a copy on the
 * GPU. Nothing is written to the image: the pre-filter writes d_filt.
 * Nothing crosses the bus (upload_bytes stays 0); upload_ms is that copy,
 * 0 in place. Each call queued here delays the kernel's start by its host
 * cost, so the in-place path queues two: the ordering through an untimed
 * event (the cheapest kind to wait on), and no timing events around a copy
 * that is not made. */
int queue_device_frame(struct cuda_be *b, const struct trk_image *img, const struct layout *L)
{
    TRK_CUDA_TRY(cudaEventRecord(b->ev_legacy, cudaStreamLegacy));
    TRK_CUDA_TRY(cudaStreamWaitEvent(b->s_k, b->ev_legacy, 0));
    b->up_timed = !device_in_place(img);
    if (!b->up_timed) {
        for (int p = 0; p < L->p.planes; p++) {
            b->f.plane[p] = img->plane[p];
            b->f.pitch[p] = (int)img->pitch[p];
        }
        return 0;
    }
    TRK_CUDA_TRY(cudaEventRecord(b->ev_up0, b->s_k));
    for (int p = 0; p < L->p.planes; p++)
        TRK_CUDA_TRY(cudaMemcpy2DAsync(b->d_frame + L->off[p], (size_t)L->pitch[p], img->plane[p],
                                       img->pitch[p], L->p.row_bytes[p], (size_t)L->p.rows[p],
                                       cudaMemcpyDeviceToDevice, b->s_k));
    TRK_CUDA_TRY(cudaEventRecord(b->ev_up1, b->s_k));
    return 0;
}

/* The whole frame's kernels in one go, once the frame is on the device:
 * the pre-filter (if set), then every row. Timed by events, except a
 * launch that hands its results over: it times itself (trk_cu_pub), and
 * an event after it would not be complete when wait() returns. */
int queue_whole(struct cuda_be *b, const struct layout *L, int height)
{
    int err;
    const bool pub = hands_over(b), pf = b->pf.sigma > 0;
    b->nk = 0;
    if (!pub || pf) {
        TRK_CUDA_TRY(cudaEventRecord(b->ev_ks[0], b->s_k));
        b->nk = 1;
    }
    if (pf && (err = queue_prefilter(b, L))) return err;
    if (pub && pf) TRK_CUDA_TRY(cudaEventRecord(b->ev_ke[0], b->s_k));
    if ((err = launch_rows(b, 0, height, true, pub))) return err;
    if (!pub) TRK_CUDA_TRY(cudaEventRecord(b->ev_ke[0], b->s_k));
    return 0;
}

/* After the frame's kernels: blob lists, the results' copy back, the event
 * wait() waits for. */
int queue_finish(struct cuda_be *b)
{
    int err;
    if (b->nbo && (err = queue_blobs(b))) return err;
    if (!b->pub_wait)
        TRK_CUDA_TRY(cudaMemcpyAsync(b->hp_res, b->d_acc[b->parity],
                                     (size_t)b->slots * sizeof(struct trk_cu_acc),
                                     cudaMemcpyDeviceToHost, b->s_k));
    TRK_CUDA_TRY(cudaEventRecord(b->ev_done, b->s_k));
    b->parity ^= 1;
    b->dirty = false;
    return 0;
}

int submit_device(struct cuda_be *b, const struct trk_image *img, const struct trk_roi *rois,
                  const struct layout *L)
{
    int err = queue_device_frame(b, img, L);
    if (!err) err = queue_gather(b, img);
    if (err) return err;
    if ((err = queue_rois(b, rois))) return err;
    if ((err = queue_whole(b, L, img->height))) return err;
    return queue_finish(b);
}

} // namespace trk_cuda
