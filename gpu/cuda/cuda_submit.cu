/* The CUDA backend's submit path for host frames: the banded upload, the
 * pre-filter, the launches per band, ROI masks and the blob pipeline, and
 * reading a pinned frame in place. */
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

/* Whether plane p of img can be copied by the copy engine directly: the
 * whole plane in a range pinned through a backend, or (memory pinned by
 * the caller itself, e.g. the benchmark's cudaHostAlloc, in no recorded
 * range) CUDA says its first byte is pinned host memory. A plane that
 * starts in a recorded range and runs past it is staged. */
bool plane_pinned(const struct trk_image *img, const struct layout *L, int p)
{
    const size_t span = (size_t)(L->p.rows[p] - 1) * img->pitch[p] + L->p.row_bytes[p];
    const int r = pin_lookup(img->plane[p], span);
    return r == 1 || (r == 0 && host_pinned(img->plane[p]));
}

/* Copies rows [r0, r1) of every plane (chroma rows scaled for 4:2:0) from
 * img to the device frame on the copy stream, through the pinned staging
 * buffer unless img is pinned already. */
int upload_rows(struct cuda_be *b, const struct trk_image *img, const struct layout *L, int r0,
                int r1, bool pinned)
{
    for (int p = 0; p < L->p.planes; p++) {
        /* The plane rows that frame rows [r0, r1) use. */
        const int vs = L->p.vshift[p];
        const int a = r0 >> vs, z = (r1 + (1 << vs) - 1) >> vs;
        if (a >= z) continue;
        const size_t dp = (size_t)L->pitch[p], sp = img->pitch[p];
        uint8_t *d = b->d_frame + L->off[p] + (size_t)a * dp;
        const uint8_t *src = img->plane[p] + (size_t)a * sp;
        b->up_bytes += (uint64_t)(z - a) * L->p.row_bytes[p];
        if (pinned) {
            TRK_CUDA_TRY(cudaMemcpy2DAsync(d, dp, src, sp, L->p.row_bytes[p], (size_t)(z - a),
                                           cudaMemcpyHostToDevice, b->s_up));
        } else {
            uint8_t *st = b->hp_stage + L->off[p] + (size_t)a * dp;
            for (int y = 0; y < z - a; y++)
                memcpy(st + y * dp, src + y * sp, L->p.row_bytes[p]);
            TRK_CUDA_TRY(cudaMemcpyAsync(d, st, (size_t)(z - a - 1) * dp + L->p.row_bytes[p],
                                         cudaMemcpyHostToDevice, b->s_up));
        }
    }
    return 0;
}

void fill_frame(struct cuda_be *b, const struct trk_image *img, const struct layout *L)
{
    struct trk_cu_frame &f = b->f;
    memset(&f, 0, sizeof(f));
    for (int p = 0; p < L->p.planes; p++) {
        f.plane[p] = b->d_frame + L->off[p];
        f.pitch[p] = L->pitch[p];
    }
    f.width = img->width;
    f.height = img->height;
    f.fmt = img->fmt;
    const int ci = trk_coef_index(img->matrix, img->full_range);
    f.y2r = trk_yuv2rgb_coefs[ci];
    f.r2y = trk_rgb2ycc_coefs[ci];
    f.light = b->d_light;
    f.cls = b->d_cls;
}

/* With the pre-filter on: the raw frame b->f (just filled) is filtered on
 * the kernel stream into d_filt, and b->f then points there, so every
 * kernel after it sees the filtered frame. Called once the whole frame is
 * on the device (the filter reads rows around each row). */
int queue_prefilter(struct cuda_be *b, const struct layout *L)
{
    const struct trk_cu_frame raw = b->f;
    for (int p = 0; p < L->p.planes; p++) {
        b->f.plane[p] = b->d_filt + L->off[p];
        b->f.pitch[p] = L->pitch[p]; /* a device image read in place has its own */
    }
    return trk_cu_prefilter_launch(&b->pf, &raw, &b->f, b->d_pftmp, b->pftmp_pitch, b->pftmp_slab,
                                   b->s_k);
}

/* Whether the blob pipeline starts from the fused kernel's masks
 * (trk_cu_bmask) rather than thresholding the frame again: the default
 * variant, with blob objects. */
static bool blob_masks(const struct cuda_be *b)
{
    return b->variant == V_FUSED && b->nbo && b->d_bmask;
}

/* Words of each blob object's masks in the scratch for this frame. */
static size_t bmask_stride(const struct cuda_be *b)
{
    return (size_t)((b->f.width + 31) / 32) * (size_t)b->f.height;
}

struct trk_cu_job make_job(struct cuda_be *b, int row0, int row1, bool first)
{
    struct trk_cu_job j;
    memset(&j, 0, sizeof(j));
    j.f = b->f;
    j.n_obj = b->slots;
    j.row0 = row0;
    j.row1 = row1;
    j.acc = b->d_acc[b->parity];
    j.acc_clear = first ? b->d_acc[b->parity ^ 1] : NULL;
    j.rowmask = b->roi ? b->d_rowmask : NULL;
    j.colmask = b->roi ? b->d_colmask : NULL;
    j.rois = b->roi ? b->d_rois : NULL;
    j.objs = b->d_objs;
    j.lut = b->d_lut;
    j.lt = b->lt;
    if (blob_masks(b)) {
        j.bm.words = b->d_bmask;
        j.bm.idx = b->d_bidx;
        memcpy(j.bm.bits, b->bbits, sizeof(j.bm.bits));
        j.bm.wpr = (b->f.width + 31) / 32;
        j.bm.stride = bmask_stride(b);
    }
    return j;
}

/* Whether this frame's fused launch hands its results over (trk_cu_pub)
 * rather than have them copied back: the default variant without blob
 * lists (their kernels read the accumulators after it) and without the
 * "copyback" option, where the host memory is mapped. */
bool hands_over(const struct cuda_be *b)
{
    return b->variant == V_FUSED && !b->copyback && !b->nbo && b->dp_res && b->dp_pub;
}

/* Launches the variant's kernels for rows [row0, row1) on the kernel
 * stream; publish (fused only, the frame's last launch): the kernel hands
 * the results over with the next seq. */
int launch_rows(struct cuda_be *b, int row0, int row1, bool first, bool publish)
{
    struct trk_cu_job j = make_job(b, row0, row1, first);
    if (publish) {
        TRK_ASSERT(b->variant == V_FUSED);
        j.pub.out = b->dp_res;
        j.pub.rec = b->dp_pub;
        j.pub.ctl = b->d_pubctl;
        j.pub.seq = ++b->pub_seq;
        b->pub_wait = true;
    }
    switch (b->variant) {
    case V_FUSED: return trk_cu_fused_launch(&j, b->fused_grid, b->s_k);
    case V_LUT: return trk_cu_lut_launch(&j, b->s_k);
    case V_NAIVE: return trk_cu_naive_launch(&j, b->s_k);
    case V_MOCT: return trk_cu_moct_launch(&j, b->arr, b->r, b->d_moct, b->moct_bytes, b->s_k);
    }
    TRK_ASSERT(!"variant out of range (parse_variant sets one of the four)");
    return TRK_EINVAL;
}

/* Uploads the clipped ROIs and (for the table variants) builds the row and
 * column masks, timed between ev_roi0 and ev_roi1. */
int queue_rois(struct cuda_be *b, const struct trk_roi *rois)
{
    b->roi = rois != NULL;
    if (!rois) return 0;
    /* In slot order; slots without an object get an empty ROI. */
    for (int p = 0; p < b->slots; p++)
        b->hp_rois[p] = trk_roi{ 1, 1, 0, 0 };
    for (int k = 0; k < b->n; k++)
        if (!trk_roi_clip(rois, k, b->f.width, b->f.height, &b->hp_rois[b->pos[k]]))
            b->hp_rois[b->pos[k]] = trk_roi{ 1, 1, 0, 0 }; /* empty */
    TRK_CUDA_TRY(cudaMemcpyAsync(b->d_rois, b->hp_rois, (size_t)b->slots * sizeof(struct trk_roi),
                                 cudaMemcpyHostToDevice, b->s_k));
    TRK_CUDA_TRY(cudaEventRecord(b->ev_roi0, b->s_k));
    if (b->variant == V_FUSED || b->variant == V_LUT) {
        struct trk_cu_job j = make_job(b, 0, b->f.height, false);
        int err = trk_cu_roimask_launch(&j, b->d_rowmask, b->d_colmask, b->s_k);
        if (err) return err;
    }
    TRK_CUDA_TRY(cudaEventRecord(b->ev_roi1, b->s_k));
    return 0;
}

/* Queues the blob pipeline for the resident frame on the kernel stream
 * (group after group; the kernels' ROIs are the slots queue_rois uploaded),
 * timed between ev_b0 and ev_b1, then the copy of the list lengths and the
 * records. */
int queue_blobs(struct cuda_be *b)
{
    const blob_strides st = blob_strides_of(b);
    struct trk_cu_blobjob j;
    memset(&j, 0, sizeof(j));
    j.f = b->f;
    j.rois = b->roi ? b->d_rois : NULL;
    j.objs = b->d_bobj;
    j.wpr = (b->f.width + 31) / 32;
    j.cap = (size_t)b->group * st.runs;
    j.roots = b->d_broots;
    j.rowoff = b->d_browoff;
    j.rowcnt = b->d_browcnt;
    j.x0 = b->d_bx0;
    j.x1 = b->d_bx1;
    j.yg = b->d_byg;
    j.parent = b->d_bparent;
    j.mass = b->d_bmass;
    j.first = b->d_bfirst;
    j.counts = (unsigned *)b->d_bout;
    j.recs = (struct trk_cu_blob *)((char *)b->d_bout + TRK_CU_BLOB_HDR);
    TRK_CUDA_TRY(cudaEventRecord(b->ev_b0, b->s_k));
    for (int g0 = 0, p = 0; g0 < b->nbo; g0 += b->group, p++) {
        j.g0 = g0;
        j.gn = b->nbo - g0 < b->group ? b->nbo - g0 : b->group;
        j.lut = b->d_blut + b->blut_off[p];
        j.lt = b->blt[p];
        j.need = trk_cu_need(j.lt);
        if (blob_masks(b)) {
            j.mstride = bmask_stride(b);
            j.masks = b->d_bmask + (size_t)g0 * j.mstride;
        }
        j.ctl = b->d_bctl + 4 * b->bctl_par;
        j.ctl_next = b->d_bctl + 4 * (b->bctl_par ^ 1);
        int err = trk_cu_blobs_launch(&j, b->sms, b->s_k);
        if (err) {
            /* Part of the pass may be queued: both counters zero again. */
            cudaMemsetAsync(b->d_bctl, 0, 2 * 4 * sizeof(uint32_t), b->s_k);
            return err;
        }
        b->bctl_par ^= 1;
    }
    TRK_CUDA_TRY(cudaEventRecord(b->ev_b1, b->s_k));
    TRK_CUDA_TRY(
        cudaMemcpyAsync(b->hp_bout, b->d_bout, b->bout_bytes, cudaMemcpyDeviceToHost, b->s_k));
    b->blob_work = true;
    return 0;
}

/* The lists of the last frame (hp_bout, landed) into h_blob / n_blob. */
void decode_blobs(struct cuda_be *b)
{
    const unsigned *len = (const unsigned *)b->hp_bout;
    const struct trk_cu_blob *rec =
        (const struct trk_cu_blob *)((const char *)b->hp_bout + TRK_CU_BLOB_HDR);
    for (int i = 0; i < b->nbo; i++) {
        const struct trk_cu_bobj *o = &b->h_bobj[i];
        const int k = b->bobj_of[i];
        TRK_ASSERT(len[i] <= (unsigned)o->k);
        for (unsigned s = 0; s < len[i]; s++) {
            trk_cu_blob_result(&rec[o->off + s], &b->h_blob[k][s]);
        }
        b->n_blob[k] = (int)len[i];
    }
}

int reset_if_dirty(struct cuda_be *b)
{
    if (!b->dirty) return 0;
    for (int i = 0; i < 2; i++)
        TRK_CUDA_TRY(
            cudaMemsetAsync(b->d_acc[i], 0, TRK_MAX_OBJECTS * sizeof(struct trk_cu_acc), b->s_k));
    /* A hand-over cut short leaves its ticket count and clock behind; a
     * frame whose blob pipeline did not run leaves masks in the scratch. */
    TRK_CUDA_TRY(reset_pubctl(b));
    if (b->d_bmask)
        TRK_CUDA_TRY(cudaMemsetAsync(b->d_bmask, 0, b->bmask_words * sizeof(uint32_t), b->s_k));
    b->dirty = false;
    return 0;
}

/* A pinned host frame the fused kernel can read where it lies, over the
 * bus, instead of a copy then a read: its one pass over the frame is then
 * bound by the bus as the copy would be, and the kernel's work hides under
 * the transfer (H100, 1080p RGB24, 128 objects: 146 us a call against 155
 * for the banded copy; docs/BENCHMARKS.md). Only for the default (fused, no
 * bands= or copy option) with no pre-filter and no blob lists, which read
 * the frame more than once, and only when the kernels' loads fit the image
 * as they fit a device image (device_in_place) and every plane, with the
 * 4-pixel loads past its rows' last pixel, lies in one range recorded as
 * pinned and mapped (memory pinned by the caller itself is copied: its
 * extent is unknown). On true, b->f points at the planes' device
 * addresses. (Copying 4:2:0 chroma planes first and reading only the luma
 * in place, since two rows read each chroma row, was no faster on the H100:
 * the chroma copy then serialises with the kernel.) */
static bool host_in_place(struct cuda_be *b, const struct trk_image *img, const struct layout *L)
{
    struct trk_plane_layout wide;
    if (b->variant != V_FUSED || b->bands || b->copy_only || b->pf.sigma > 0 || b->nbo ||
        !device_in_place(img, &wide))
        return false;
    const uint8_t *dev[3] = { NULL, NULL, NULL };
    for (int p = 0; p < L->p.planes; p++) {
        const size_t span = (size_t)(L->p.rows[p] - 1) * img->pitch[p] + wide.row_bytes[p];
        if (!(dev[p] = pin_device(img->plane[p], span))) return false;
    }
    for (int p = 0; p < L->p.planes; p++) {
        b->f.plane[p] = dev[p];
        b->f.pitch[p] = (int)img->pitch[p];
    }
    return true;
}

int submit_impl(struct cuda_be *b, const struct trk_image *img, const struct trk_roi *rois)
{
    struct layout L;
    const size_t bytes = frame_layout(img->width, img->height, img->fmt, &L);
    if (bytes > b->frame_bytes) return TRK_ETOOBIG;
    fill_frame(b, img, &L);
    int err = reset_if_dirty(b);
    if (err) return err;
    b->dirty = true; /* until the frame is fully queued */
    if (img->mem == TRK_MEM_CUDA) return submit_device(b, img, rois, &L);

    if (host_in_place(b, img, &L)) {
        /* The bytes still cross the bus (upload_bytes), inside the kernel's
         * time (upload_ms 0). */
        b->up_timed = false;
        for (int p = 0; p < L.p.planes; p++)
            b->up_bytes += (uint64_t)L.p.rows[p] * L.p.row_bytes[p];
        b->in_place_bytes = b->up_bytes;
        if ((err = queue_rois(b, rois))) return err;
        if ((err = queue_whole(b, &L, img->height))) return err;
        return queue_finish(b);
    }
    bool pinned = true;
    for (int p = 0; p < L.p.planes; p++)
        pinned = pinned && plane_pinned(img, &L, p);

    int nb = b->bands;
    /* MOCT and the pre-filter need the whole frame before their kernels. */
    const bool whole = b->variant == V_MOCT || b->pf.sigma > 0;
    if (b->variant == V_MOCT)
        nb = 1;
    else if (!nb)
        nb = (int)((bytes + TRK_CUDA_BAND_BYTES - 1) / TRK_CUDA_BAND_BYTES);
    if (nb > TRK_CUDA_MAX_BANDS) nb = TRK_CUDA_MAX_BANDS;
    if (nb < 1) nb = 1;
    int rows_per = (img->height + nb - 1) / nb;
    rows_per += rows_per & 1; /* even: 4:2:0 chroma rows split cleanly */

    if ((err = queue_rois(b, rois))) return err;
    TRK_CUDA_TRY(cudaEventRecord(b->ev_up0, b->s_up));
    int band = 0;
    for (int r0 = 0; r0 < img->height; r0 += rows_per, band++) {
        const int r1 = r0 + rows_per < img->height ? r0 + rows_per : img->height;
        if ((err = upload_rows(b, img, &L, r0, r1, pinned))) return err;
        TRK_CUDA_TRY(cudaEventRecord(b->ev_band[band], b->s_up));
        if (whole) continue;
        /* The last band's launch hands the results over where it can, and
         * then times itself (queue_whole says why). */
        const bool pub = r1 == img->height && hands_over(b);
        TRK_CUDA_TRY(cudaStreamWaitEvent(b->s_k, b->ev_band[band], 0));
        if (!pub) TRK_CUDA_TRY(cudaEventRecord(b->ev_ks[band], b->s_k));
        if ((err = launch_rows(b, r0, r1, band == 0, pub))) return err;
        if (!pub) TRK_CUDA_TRY(cudaEventRecord(b->ev_ke[band], b->s_k));
    }
    TRK_CUDA_TRY(cudaEventRecord(b->ev_up1, b->s_up));
    b->nk = b->pub_wait ? band - 1 : band;
    if (whole) {
        TRK_CUDA_TRY(cudaStreamWaitEvent(b->s_k, b->ev_up1, 0));
        if ((err = queue_whole(b, &L, img->height))) return err;
    }
    /* After the last band's kernel: the stream has waited for every band. */
    return queue_finish(b);
}

/* The start of a submit (frame or regions): nothing in flight, nothing
 * uploaded yet. */
void begin_call(struct cuda_be *b, bool rmode)
{
    b->t_submit = trk_backend_now_ms();
    b->work = false;
    b->up_bytes = 0;
    b->in_place_bytes = 0;
    b->blob_work = false;
    b->bench_blobs = false;
    b->rmode = rmode;
    b->pub_wait = false;
    b->up_timed = true; /* a host frame's upload; queue_device_frame says for a device image */
    b->gather_n = b->gather_arm; /* read by this submit only */
    b->gather_arm = 0;
    b->gathered_only = false;
}

/* The end of a submit that queued work: on an error, what was queued is
 * drained so the buffers are free for the next frame. */
int end_call(struct cuda_be *b, int err)
{
    if (err) {
        cudaStreamSynchronize(b->s_up);
        cudaStreamSynchronize(b->s_k);
        return err;
    }
    b->work = true;
    return 0;
}

int cu_submit(void *self, const struct trk_image *img, const struct trk_roi *rois)
{
    struct cuda_be *b = (struct cuda_be *)self;
    log_scope ls(b);
    begin_call(b, false);
    if (b->n == 0 && !b->gather_n) return 0;
    TRK_CUDA_TRY(cudaSetDevice(b->dev));
    return end_call(b, b->n == 0 ? gather_only(b, img) : submit_impl(b, img, rois));
}

} // namespace trk_cuda
