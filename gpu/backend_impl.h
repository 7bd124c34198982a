/* Internal: how a backend plugs into backend.c. Not for the daemon. */
#ifndef TRK_GPU_BACKEND_IMPL_H
#define TRK_GPU_BACKEND_IMPL_H

#include "backend.h"
#include "prefilter.h"
#include "trk_clock.h" /* trk_now */

#include <string.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Each backend implements these; `self` is its private state. */
struct trk_backend_ops {
    const char *name;
    int (*create)(const struct trk_backend_cfg *cfg, void **self);
    void (*destroy)(void *self);
    int (*set_objects)(void *self, const struct trk_object_def *objs, int n);
    /* Starts (CPU: does) the work; img stays valid until wait returns. */
    int (*submit)(void *self, const struct trk_image *img, const struct trk_roi *rois);
    int (*wait)(void *self, struct trk_obj_result *out, struct trk_backend_timing *t);
    /* Optional: name including the variant, e.g. "cuda:moct-h". */
    const char *(*describe)(void *self);
    /* Optional: NULL-terminated variant names, default first. */
    const char *const *variants;
    /* Object obj's blob list of the last waited frame (trk_backend_blobs;
     * backend.c checks obj and the state). NULL: the backend has no blobs,
     * and set_objects refuses objects with blobs > 0 (TRK_ENODEV). */
    int (*blobs)(void *self, int obj, const struct trk_blob **out);
    /* The pre-filter from the next frame on (trk_backend_set_prefilter;
     * backend.c built pf's kernels, pf->sigma == 0 turns it off). NULL: the
     * backend has none, and only sigma 0 is accepted. */
    int (*set_prefilter)(void *self, const struct trk_prefilter *pf);
    /* The regional form (backend.h, trk_backend_submit_regions): regions
     * are checked by backend.c (obj in the set, n in range); wait then
     * writes n results and blobs() takes region indices. NULL: the backend
     * has no regional form and backend.c runs each region as a submit with
     * only that object's ROI set (correct, not fast). */
    int (*submit_regions)(void *self, const struct trk_image *img, const struct trk_region *r,
                          int n);
    /* Host memory the backend reads directly (backend.h, trk_backend_host_*).
     * NULL: backend.c's plain aligned memory, register a no-op, nothing
     * pinned (the CPU backends). All four or none. */
    void *(*host_alloc)(void *self, size_t bytes);
    void (*host_free)(void *self, void *p);
    int (*host_register)(void *self, void *p, size_t n);
    void (*host_unregister)(void *self, void *p);
    bool (*host_pinned)(const void *self, const void *p, size_t n);
    /* submit only queues the work (trk_backend_async); false: it does it. */
    bool async;
    /* Gathers from device images (trk_backend_set_gather): gather arms the
     * next submit or submit_regions (of a device image: backend.c gathers
     * host images itself) to read the n points (checked, copied) in its
     * own submission; gathered copies the values of the frame last waited
     * for into out. NULL: the backend takes no device images. */
    int (*gather)(void *self, const struct trk_gather_point *pts, int n);
    void (*gathered)(void *self, struct trk_gather_value *out, int n);
};

/* The required members of a C backend's ops whose functions follow the
 * naming <p>_create, <p>_destroy, <p>_set_objects, <p>_submit, <p>_wait:
 * `const struct trk_backend_ops x = { TRK_BACKEND_OPS(p, "name"), ... };`. */
#define TRK_BACKEND_OPS(p, name_)                                                                  \
    .name = (name_), .create = p##_create, .destroy = p##_destroy, .set_objects = p##_set_objects, \
    .submit = p##_submit, .wait = p##_wait

extern const struct trk_backend_ops trk_cpu_ref_ops;
extern const struct trk_backend_ops trk_cpu_fast_ops;
/* Defined when the CUDA sources are compiled into trk_gpu (TRK_HAVE_CUDA,
 * set by gpu/CMakeLists.txt). */
extern const struct trk_backend_ops trk_cuda_ops;
/* CUDA: TRK_CUDA_USABLE when a device is usable; else the status of
 * trk_cuda_check and a one-line reason in why. */
enum trk_cuda_status trk_cuda_probe(char *why, size_t why_len);

/* b's private state when b runs ops and has no frame in flight, else NULL:
 * for a backend's own extra entry points (gpu/cuda/bench_hooks.h). */
void *trk_backend_self(struct trk_backend *b, const struct trk_backend_ops *ops);

/* The shared empty-result convention of backend.h. */
static inline void trk_result_clear(struct trk_obj_result *r)
{
    r->mass = r->sum_x = r->sum_y = r->sum_xx = r->sum_yy = r->sum_xy = 0;
    r->x0 = r->y0 = r->x1 = r->y1 = -1;
}

/* The wait of a backend that does all its work in submit (the CPU ones):
 * copies the n results of the last submit out and reports its time, none of
 * it upload. */
static inline int trk_backend_sync_wait(const struct trk_obj_result *res, int n, double total_ms,
                                        struct trk_obj_result *out, struct trk_backend_timing *t)
{
    if (n > 0 && out) memcpy(out, res, (size_t)n * sizeof(*out));
    if (t) {
        t->upload_ms = 0;
        t->upload_bytes = 0;
        t->kernel_ms = total_ms;
        t->total_ms = total_ms;
    }
    return 0;
}

/* trk_now in ms: the clock of every backend timing. */
static inline double trk_backend_now_ms(void)
{
    return trk_now() * 1e3;
}

/* Clips an object's ROI (or the full frame when rois == NULL) to the image;
 * returns 0 when the clipped region is empty. */
static inline int trk_roi_clip(const struct trk_roi *rois, int i, int w, int h, struct trk_roi *out)
{
    struct trk_roi r = { 0, 0, w - 1, h - 1 };
    if (rois) {
        r = rois[i];
        if (r.x0 < 0) r.x0 = 0;
        if (r.y0 < 0) r.y0 = 0;
        if (r.x1 > w - 1) r.x1 = w - 1;
        if (r.y1 > h - 1) r.y1 = h - 1;
    }
    *out = r;
    return r.x0 <= r.x1 && r.y0 <= r.y1;
}

#ifdef __cplusplus
}
#endif
#endif
