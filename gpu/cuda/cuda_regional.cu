/* The CUDA backend's regional form (trk_backend_submit_regions), read top
 * to bottom: the regional state at set_objects, the submit (upload of the
 * regions' rectangles or the whole frame, then regions.cu's kernels through
 * regions.cuh) and the wait that collects the results. The kernels and
 * their layouts are regions.cu's. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log_hook.h"
#include "cuda_internal.cuh"
#include "regions.cuh"
#include "../rects.h"

namespace trk_cuda
{

/* The regional form's state (regions.cu), made with the first object set,
 * and the objects' blob settings. */
int regions_set_objects(struct cuda_be *b, const struct trk_object_def *objs, int n)
{
    b->rmode = false;
    if (!b->rrm) {
        int err = trk_cu_rrm_create(b->max_w, b->max_h, b->frame_bytes, b->sms, &b->rrm);
        if (err) return err;
    }
    trk_cu_rrm_set_objects(b->rrm, objs, n);
    return 0;
}

/* Bytes [*c0, *c1) of plane p's row that pixels x0..x1 read (color.h's
 * trk_pixel_native: chroma of pixel x is sample x / 2). */
static void plane_cols(int fmt, int p, int x0, int x1, size_t *c0, size_t *c1)
{
    size_t a = (size_t)x0, z = (size_t)x1 + 1; /* samples of one byte */
    if (fmt == TRK_FMT_YUYV) {
        a = (size_t)(x0 >> 1) * 4, z = ((size_t)(x1 >> 1) + 1) * 4;
    } else if (p > 0) {
        const size_t per = fmt == TRK_FMT_NV12 ? 2 : 1; /* NV12: U, V pairs */
        a = (size_t)(x0 >> 1) * per, z = ((size_t)(x1 >> 1) + 1) * per;
    } else if (trk_fmt_bpp(fmt) > 0) {
        a *= (size_t)trk_fmt_bpp(fmt), z *= (size_t)trk_fmt_bpp(fmt);
    }
    *c0 = a;
    *c1 = z;
}

/* The ROI-only upload of the nr rectangles of img (and the chroma rows and
 * samples they use) on stream s: the copy table goes with the regions'
 * tables in one copy; the rows are packed back to back into the pinned
 * staging buffer and sent in pieces of about UPLOAD_PIECE bytes as they are
 * packed (the copy engine moves one piece while the host packs the next);
 * a kernel puts each row in place in the device frame (regions.cu). Calls:
 * two plus one per piece, and a launch, however many rectangles. Returns 1
 * (nothing queued) when the blocks would not fit the table or the staging
 * buffer, so the caller uploads the frame instead. */
#define UPLOAD_PIECE ((size_t)1 << 20)
static int upload_rects(struct cuda_be *b, const struct trk_image *img, const struct layout *L,
                        const struct trk_roi *rc, int nr, cudaStream_t s)
{
    struct trk_cu_copy *cp = trk_cu_rrm_copies(b->rrm);
    size_t total = 0;
    int nc = 0;
    unsigned row0 = 0;
    for (int i = 0; i < nr; i++)
        for (int p = 0; p < L->p.planes; p++) {
            const int vs = L->p.vshift[p];
            const int a = rc[i].y0 >> vs, z = (rc[i].y1 >> vs) + 1;
            size_t c0, c1;
            plane_cols(img->fmt, p, rc[i].x0, rc[i].x1, &c0, &c1);
            if (nc == TRK_RRM_MAX_COPIES) return 1;
            cp[nc++] = trk_cu_copy{ L->off[p] + (size_t)a * (size_t)L->pitch[p] + c0,
                                    total,
                                    (unsigned)(c1 - c0),
                                    (unsigned)(z - a),
                                    (unsigned)L->pitch[p],
                                    row0 };
            row0 += (unsigned)(z - a);
            total += (c1 - c0) * (size_t)(z - a);
        }
    if (total > b->frame_bytes) return 1;
    int err = trk_cu_rrm_upload_table(b->rrm, nc, s);
    size_t sent = 0;
    for (int i = 0; !err && i < nc; i++) {
        const int p = i % L->p.planes, a = (rc[i / L->p.planes].y0 >> L->p.vshift[p]);
        size_t c0, c1;
        plane_cols(img->fmt, p, rc[i / L->p.planes].x0, rc[i / L->p.planes].x1, &c0, &c1);
        const uint8_t *src = img->plane[p] + (size_t)a * img->pitch[p] + c0;
        uint8_t *st = b->hp_stage + cp[i].src;
        for (unsigned y = 0; y < cp[i].rows; y++)
            memcpy(st + (size_t)y * cp[i].bytes, src + (size_t)y * img->pitch[p], cp[i].bytes);
        const size_t packed = cp[i].src + (size_t)cp[i].rows * cp[i].bytes;
        if (packed - sent >= UPLOAD_PIECE || i == nc - 1) {
            err = trk_cu_rrm_upload_bytes(b->rrm, b->hp_stage, sent, packed - sent, s);
            sent = packed;
        }
    }
    if (!err) err = trk_cu_rrm_upload_scatter(b->rrm, b->d_frame, nc, s);
    b->up_bytes += total;
    return err;
}

/* The regional form's upload and kernels. Without the pre-filter only the
 * regions' rectangles are copied (trk_rects_cover merges overlapping and
 * near ones; upload_rects), unless they cover more than half the frame
 * (then the frame, in one copy per plane).
 * With the pre-filter on, the whole frame is uploaded and filtered first:
 * the filter reads a margin around every pixel and the filtered frame is
 * what every region measures.
 * The ROI-only upload and the kernels share the kernel stream: one stream,
 * no event between them, the tables in the upload's first copy. */
static int regions_impl(struct cuda_be *b, const struct trk_image *img,
                        const struct trk_region *regs, int n)
{
    struct layout L;
    const size_t bytes = frame_layout(img->width, img->height, img->fmt, &L);
    if (bytes > b->frame_bytes) return TRK_ETOOBIG;
    fill_frame(b, img, &L);
    int err = trk_cu_rrm_prepare(b->rrm, img->width, img->height, regs, n);
    if (err) return err;
    if (img->mem == TRK_MEM_CUDA) {
        /* Already on the device: the regions read it where it is (and the
         * gather, if any, first). Nothing is copied, so no rectangles are
         * worked out (their merging is quadratic in the regions: ~30 us of
         * host time for 256 of them). */
        if ((err = queue_device_frame(b, img, &L)) || (err = queue_gather(b, img))) return err;
    } else {
        static_assert(TRK_RECTS_MAX >= TRK_MAX_REGIONS, "a rectangle per region");
        struct trk_roi rois[TRK_MAX_REGIONS], rects[TRK_RECTS_MAX];
        int nr = -1; /* -1: the whole frame */
        if (b->pf.sigma <= 0) {
            for (int j = 0; j < n; j++)
                rois[j] = regs[j].roi;
            nr = trk_rects_cover(rois, n, img->width, img->height, 0, TRK_RECTS_MAX, rects);
            if (nr < 0) return nr;
            if (trk_rects_area(rects, nr) * 2 > (uint64_t)img->width * (uint64_t)img->height)
                nr = -1;
        }
        err = 1;
        if (nr >= 0) {
            TRK_CUDA_TRY(cudaEventRecord(b->ev_up0, b->s_k));
            err = upload_rects(b, img, &L, rects, nr, b->s_k);
            if (err < 0) return err;
            if (!err) TRK_CUDA_TRY(cudaEventRecord(b->ev_up1, b->s_k));
        }
        if (err == 1) {
            TRK_CUDA_TRY(cudaEventRecord(b->ev_up0, b->s_up));
            bool pinned = true;
            for (int p = 0; p < L.p.planes; p++)
                pinned = pinned && plane_pinned(img, &L, p);
            if ((err = upload_rows(b, img, &L, 0, img->height, pinned))) return err;
            TRK_CUDA_TRY(cudaEventRecord(b->ev_up1, b->s_up));
            TRK_CUDA_TRY(cudaStreamWaitEvent(b->s_k, b->ev_up1, 0));
        }
    }
    b->nk = 0;
    if (b->pf.sigma > 0) {
        TRK_CUDA_TRY(cudaEventRecord(b->ev_ks[0], b->s_k));
        if ((err = queue_prefilter(b, &L))) return err;
        TRK_CUDA_TRY(cudaEventRecord(b->ev_ke[0], b->s_k));
        b->nk = 1;
    }
    if ((err = trk_cu_rrm_queue(b->rrm, &b->f, b->d_objs, b->s_k))) return err;
    TRK_CUDA_TRY(cudaEventRecord(b->ev_done, b->s_k));
    return 0;
}

int cu_submit_regions(void *self, const struct trk_image *img, const struct trk_region *regs, int n)
{
    struct cuda_be *b = (struct cuda_be *)self;
    log_scope ls(b);
    begin_call(b, true);
    /* backend.c checked every region's object against the set: n > 0
     * means objects, and so the regional state, exist. */
    if (n == 0 && !b->gather_n) return 0;
    TRK_CUDA_TRY(cudaSetDevice(b->dev));
    return end_call(b, n == 0 ? gather_only(b, img) : regions_impl(b, img, regs, n));
}

int wait_regions(struct cuda_be *b, struct trk_obj_result *out, struct trk_backend_timing *t)
{
    double k = 0;
    if (b->work) {
        b->work = false;
        TRK_CUDA_TRY(cudaSetDevice(b->dev));
        TRK_CUDA_TRY(wait_event(b->ev_done));
        b->log.lines = 0;
        if (!b->gathered_only) trk_cu_rrm_collect(b->rrm, out, &k);
        for (int i = 0; i < b->nk; i++)
            k += span(b->ev_ks[i], b->ev_ke[i]);
    }
    if (t) {
        t->upload_ms = b->up_bytes ? span(b->ev_up0, b->ev_up1) : 0;
        t->upload_bytes = b->up_bytes;
        t->kernel_ms = k;
        t->total_ms = trk_backend_now_ms() - b->t_submit;
    }
    return 0;
}

} // namespace trk_cuda
