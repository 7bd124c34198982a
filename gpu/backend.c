/* Backend selection and the checks every backend shares. */
#include "backend_impl.h"
#include "color.h"
#include "log_hook.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct trk_backend {
    const struct trk_backend_ops *ops;
    void *self;
    int n_objects;
    int max_width, max_height;
    bool in_flight;
    bool waited; /* a frame was waited for since set_objects: blobs exist */
    /* The frame in flight or last waited for was regional: n_units results
     * (regions), else n_objects. A backend without submit_regions runs the
     * regions one by one in submit_regions (gen_regions true) and keeps
     * their results and blob lists here (allocated on first use). */
    bool regional, gen_regions;
    int n_units;
    struct regional *gen;
    bool device_refused; /* a device image was refused (logged once) */
    struct gather *g;    /* trk_backend_set_gather's, made at its first call */
};

/* The point gather (trk_backend_set_gather): n armed points (armed until
 * a submit takes them), whether the frame in flight reads them and on the
 * device (its values then come from the backend at wait), and whether val
 * holds the values of the last frame waited for. */
struct gather {
    struct trk_gather_point pts[TRK_MAX_GATHER];
    struct trk_gather_value val[TRK_MAX_GATHER];
    int n;
    bool armed, in_frame, device, ok;
};

/* The generic regional form's results: per region its aggregate, its blob
 * list and the summed timing of the submits that made them. */
struct regional {
    struct trk_obj_result res[TRK_MAX_REGIONS];
    int n_blobs[TRK_MAX_REGIONS];
    struct trk_blob blob[TRK_MAX_REGIONS][TRK_MAX_BLOBS];
    struct trk_obj_result scratch[TRK_MAX_OBJECTS];
    struct trk_roi rois[TRK_MAX_OBJECTS];
    struct trk_backend_timing timing;
};

int trk_backend_kind_parse(const char *s)
{
    if (!strcmp(s, "auto")) return TRK_BACKEND_AUTO;
    if (!strcmp(s, "cpu")) return TRK_BACKEND_CPU;
    if (!strcmp(s, "cpu-ref")) return TRK_BACKEND_CPU_REF;
    if (!strcmp(s, "cuda")) return TRK_BACKEND_CUDA;
    return -1;
}

enum trk_cuda_status trk_cuda_check(char *why, size_t why_len)
{
#ifdef TRK_HAVE_CUDA
    return trk_cuda_probe(why, why_len);
#else
    if (why) snprintf(why, why_len, "trackd was built without CUDA (no nvcc at build time)");
    return TRK_CUDA_NOT_BUILT;
#endif
}

bool trk_cuda_available(char *why, size_t why_len)
{
    return trk_cuda_check(why, why_len) == TRK_CUDA_USABLE;
}

#ifdef TRK_HAVE_CUDA
#define CUDA_OPS (&trk_cuda_ops)
#else
#define CUDA_OPS NULL
#endif

static const struct trk_backend_ops *pick(enum trk_backend_kind kind)
{
    switch (kind) {
    case TRK_BACKEND_CPU_REF: return &trk_cpu_ref_ops;
    case TRK_BACKEND_CPU: return &trk_cpu_fast_ops;
    case TRK_BACKEND_CUDA: return CUDA_OPS;
    case TRK_BACKEND_AUTO:
        if (trk_cuda_available(NULL, 0)) return CUDA_OPS;
        return pick(TRK_BACKEND_CPU);
    }
    return NULL;
}

int trk_backend_create(const struct trk_backend_cfg *cfg, struct trk_backend **out)
{
    *out = NULL;
    if (!cfg || cfg->max_width <= 0 || cfg->max_height <= 0 || cfg->max_width > TRK_MAX_SIDE ||
        cfg->max_height > TRK_MAX_SIDE)
        return TRK_EINVAL;
    const struct trk_backend_ops *ops = pick(cfg->kind);
    if (!ops) return TRK_ENODEV;
    /* No logging here: the daemon logs the one line saying why "auto" is not
     * on a GPU (daemon/main.c); the library stays quiet for tests and bench. */
    struct trk_backend *b = calloc(1, sizeof(*b));
    if (!b) return TRK_ENOMEM;
    b->ops = ops;
    b->max_width = cfg->max_width;
    b->max_height = cfg->max_height;
    int err = ops->create(cfg, &b->self);
    if (err) {
        free(b);
        return err;
    }
    *out = b;
    return 0;
}

void trk_backend_destroy(struct trk_backend **pb)
{
    if (!pb || !*pb) return;
    struct trk_backend *b = *pb;
    b->ops->destroy(b->self);
    free(b->gen);
    free(b->g);
    free(b);
    *pb = NULL;
}

int trk_backend_set_objects(struct trk_backend *b, const struct trk_object_def *objs, int n)
{
    if (n < 0 || n > TRK_MAX_OBJECTS || (n > 0 && !objs) || b->in_flight) return TRK_EINVAL;
    int n_cls = 0;
    for (int i = 0; i < n; i++) {
        const struct trk_object_def *o = &objs[i];
        if (o->space == TRK_SPACE_CLASS) {
            if (!o->cls || ++n_cls > TRK_MAX_CLASSES) return TRK_EINVAL;
        } else if ((unsigned)o->space >= TRK_SPACE_COUNT) {
            return TRK_EINVAL;
        }
        if (o->blobs > TRK_MAX_BLOBS) return TRK_EINVAL;
        if (o->connectivity != 0 && o->connectivity != 4 && o->connectivity != 8) return TRK_EINVAL;
        if (o->blobs && !b->ops->blobs) return TRK_ENODEV;
        for (int c = 0; c < 3 && o->space != TRK_SPACE_CLASS; c++) {
            const int cmax = trk_chan_max(o->space, c);
            if (o->lo[c] > cmax || o->hi[c] > cmax) return TRK_EINVAL;
        }
    }
    int err = b->ops->set_objects(b->self, objs, n);
    b->waited = false;
    if (!err) b->n_objects = b->n_units = n;
    return err;
}

int trk_backend_set_prefilter(struct trk_backend *b, double sigma)
{
    struct trk_prefilter pf;
    if (b->in_flight || trk_prefilter_init(&pf, sigma)) return TRK_EINVAL;
    /* The weights are made here, once, so that every backend filters with
     * the same integers. */
    if (!b->ops->set_prefilter) return sigma == 0 ? 0 : TRK_ENODEV;
    return b->ops->set_prefilter(b->self, &pf);
}

bool trk_backend_accepts_device(const struct trk_backend *b)
{
#ifdef TRK_HAVE_CUDA
    return b->ops == &trk_cuda_ops;
#else
    (void)b;
    return false;
#endif
}

/* A device image for a backend that reads host memory: refused with a line
 * that says so (once per instance: it would repeat every frame), since a
 * bare TRK_EINVAL would send the caller looking at sizes and pitches. */
static int device_check(struct trk_backend *b)
{
    if (trk_backend_accepts_device(b)) return 0;
    if (!b->device_refused) {
        b->device_refused = true;
        trk_log_write(TRK_LOG_ERROR, "backend", 0,
                      "backend %s reads host memory only: a device (CUDA) image is refused; "
                      "give it host frames (decode in software or copy the frame down)",
                      trk_backend_name(b));
    }
    return TRK_EINVAL;
}

/* The checks every submit shares; 0 or the code to return. */
static int submit_check(struct trk_backend *b, const struct trk_image *img)
{
    if (b->in_flight) return TRK_EINVAL;
    b->waited = false; /* the old blob lists go with the new frame */
    int err = trk_image_check(img);
    if (err) return err;
    if (img->mem != TRK_MEM_HOST && (err = device_check(b))) return err;
    if (img->width > b->max_width || img->height > b->max_height) return TRK_ETOOBIG;
    return 0;
}

int trk_backend_set_gather(struct trk_backend *b, const struct trk_gather_point *pts, int n)
{
    if (n < 0 || n > TRK_MAX_GATHER || (n > 0 && !pts) || b->in_flight) return TRK_EINVAL;
    if (!b->g && n == 0) return 0;
    if (!b->g && !(b->g = calloc(1, sizeof(*b->g)))) return TRK_ENOMEM;
    struct gather *g = b->g;
    if (n > 0) memcpy(g->pts, pts, (size_t)n * sizeof(*pts));
    g->n = n;
    g->armed = n > 0;
    g->ok = false;
    return 0;
}

int trk_backend_gathered(const struct trk_backend *b, const struct trk_gather_value **vals)
{
    *vals = NULL;
    if (!b->g || !b->g->ok || b->in_flight) return TRK_EINVAL;
    *vals = b->g->val;
    return b->g->n;
}

/* Before a submit of img: an armed gather's points checked against it and,
 * for a device image, handed to the backend to read in its submission.
 * 0 or the code to return. */
static int gather_begin(struct trk_backend *b, const struct trk_image *img)
{
    const struct gather *g = b->g;
    if (!g || !g->armed) return 0;
    int err = trk_image_gather_check(img, g->pts, g->n);
    if (err || img->mem == TRK_MEM_HOST) return err;
    return b->ops->gather ? b->ops->gather(b->self, g->pts, g->n) : TRK_ENODEV;
}

/* After a submit of img that returned err: the gather is spent either way;
 * a host image's points are read now, the frame's work being queued. */
static void gather_end(struct trk_backend *b, const struct trk_image *img, int err)
{
    struct gather *g = b->g;
    if (!g || !g->armed) return;
    g->armed = false;
    g->in_frame = !err;
    g->device = img->mem != TRK_MEM_HOST;
    if (!err && !g->device) trk_image_gather(img, g->pts, g->n, g->val);
}

int trk_backend_submit(struct trk_backend *b, const struct trk_image *img,
                       const struct trk_roi *rois)
{
    int err = submit_check(b, img);
    if (!err) err = gather_begin(b, img);
    if (err) return err;
    err = b->ops->submit(b->self, img, rois);
    gather_end(b, img, err);
    if (!err) {
        b->in_flight = true;
        b->regional = b->gen_regions = false;
        b->n_units = b->n_objects;
    }
    return err;
}

/* The regional form for a backend without one: each region is one submit
 * in which only its object has a ROI (the region's) and every other
 * object an empty one, which is the definition of a region's result. */
static int regions_one_by_one(struct trk_backend *b, const struct trk_image *img,
                              const struct trk_region *regions, int n)
{
    if (!b->gen && !(b->gen = malloc(sizeof(*b->gen)))) return TRK_ENOMEM;
    struct regional *g = b->gen;
    const struct trk_roi none = { 0, 0, -1, -1 };
    for (int i = 0; i < b->n_objects; i++)
        g->rois[i] = none;
    memset(&g->timing, 0, sizeof(g->timing));
    for (int j = 0; j < n; j++) {
        const int obj = regions[j].obj;
        struct trk_backend_timing t = { 0 };
        g->rois[obj] = regions[j].roi;
        int err = b->ops->submit(b->self, img, g->rois);
        if (!err) err = b->ops->wait(b->self, g->scratch, &t);
        g->rois[obj] = none;
        if (err) return err;
        g->res[j] = g->scratch[obj];
        const struct trk_blob *list = NULL;
        int nb = b->ops->blobs ? b->ops->blobs(b->self, obj, &list) : 0;
        if (nb > 0) memcpy(g->blob[j], list, (size_t)nb * sizeof(*list));
        g->n_blobs[j] = nb;
        g->timing.upload_ms += t.upload_ms;
        g->timing.kernel_ms += t.kernel_ms;
        g->timing.total_ms += t.total_ms;
        g->timing.upload_bytes += t.upload_bytes;
        g->timing.in_place_bytes += t.in_place_bytes;
    }
    return 0;
}

int trk_backend_submit_regions(struct trk_backend *b, const struct trk_image *img,
                               const struct trk_region *regions, int n)
{
    if (n < 0 || n > TRK_MAX_REGIONS || (n > 0 && !regions)) return TRK_EINVAL;
    for (int j = 0; j < n; j++)
        if (regions[j].obj < 0 || regions[j].obj >= b->n_objects) return TRK_EINVAL;
    int err = submit_check(b, img);
    if (!err) err = gather_begin(b, img);
    if (err) return err;
    const bool native = b->ops->submit_regions != NULL;
    err = native ? b->ops->submit_regions(b->self, img, regions, n)
                 : regions_one_by_one(b, img, regions, n);
    gather_end(b, img, err);
    if (!err) {
        b->in_flight = true;
        b->regional = true;
        b->gen_regions = !native;
        b->n_units = n;
    }
    return err;
}

int trk_backend_wait(struct trk_backend *b, struct trk_obj_result *out,
                     struct trk_backend_timing *timing)
{
    if (!b->in_flight) return TRK_EINVAL;
    b->in_flight = false;
    int err = 0;
    if (b->gen_regions) {
        if (b->n_units > 0 && out) memcpy(out, b->gen->res, (size_t)b->n_units * sizeof(*out));
        if (timing) *timing = b->gen->timing;
    } else {
        if (timing) memset(timing, 0, sizeof(*timing)); /* fields a backend does not know */
        err = b->ops->wait(b->self, out, timing);
    }
    b->waited = !err;
    struct gather *g = b->g;
    if (g && g->in_frame) {
        g->in_frame = false;
        if (!err && g->device) b->ops->gathered(b->self, g->val, g->n);
        g->ok = !err;
    }
    return err;
}

int trk_backend_blobs(const struct trk_backend *b, int obj, const struct trk_blob **blobs)
{
    *blobs = NULL;
    if (obj < 0 || obj >= b->n_units || b->in_flight || !b->waited) return TRK_EINVAL;
    if (b->gen_regions) {
        *blobs = b->gen->blob[obj];
        return b->gen->n_blobs[obj];
    }
    return b->ops->blobs ? b->ops->blobs(b->self, obj, blobs) : 0;
}

bool trk_backend_async(const struct trk_backend *b)
{
    return b->ops->async;
}

bool trk_backend_regions_native(const struct trk_backend *b)
{
    return b->ops->submit_regions != NULL;
}

int trk_backend_process_regions(struct trk_backend *b, const struct trk_image *img,
                                const struct trk_region *regions, int n, struct trk_obj_result *out,
                                struct trk_backend_timing *timing)
{
    int err = trk_backend_submit_regions(b, img, regions, n);
    return err ? err : trk_backend_wait(b, out, timing);
}

int trk_backend_process(struct trk_backend *b, const struct trk_image *img,
                        const struct trk_roi *rois, struct trk_obj_result *out,
                        struct trk_backend_timing *timing)
{
    int err = trk_backend_submit(b, img, rois);
    return err ? err : trk_backend_wait(b, out, timing);
}

int trk_backend_variants(enum trk_backend_kind kind, const char **names, int max)
{
    const struct trk_backend_ops *ops = pick(kind);
    int n = 0;
    if (!ops || !ops->variants) return 0;
    for (; ops->variants[n]; n++)
        if (n < max) names[n] = ops->variants[n];
    return n;
}

void *trk_backend_self(struct trk_backend *b, const struct trk_backend_ops *ops)
{
    return b && b->ops == ops && !b->in_flight ? b->self : NULL;
}

const char *trk_backend_name(const struct trk_backend *b)
{
    return b->ops->describe ? b->ops->describe(b->self) : b->ops->name;
}

/* ------------------------------------------------------ host memory */

/* Without a backend hook: cache-line aligned heap memory, rounded up so the
 * size is a multiple of the alignment (aligned_alloc's rule). */
#define HOST_ALIGN 64

void *trk_backend_host_alloc(struct trk_backend *b, size_t bytes)
{
    if (!b || bytes == 0) return NULL;
    if (b->ops->host_alloc) return b->ops->host_alloc(b->self, bytes);
    if (bytes > SIZE_MAX - HOST_ALIGN) return NULL;
    return aligned_alloc(HOST_ALIGN, (bytes + HOST_ALIGN - 1) / HOST_ALIGN * HOST_ALIGN);
}

void trk_backend_host_free(struct trk_backend *b, void *p)
{
    if (!b || !p) return;
    if (b->ops->host_free)
        b->ops->host_free(b->self, p);
    else
        free(p);
}

int trk_backend_host_register(struct trk_backend *b, void *p, size_t n)
{
    if (!b || !p || n == 0) return TRK_EINVAL;
    return b->ops->host_register ? b->ops->host_register(b->self, p, n) : 0;
}

void trk_backend_host_unregister(struct trk_backend *b, void *p)
{
    if (b && p && b->ops->host_unregister) b->ops->host_unregister(b->self, p);
}

bool trk_backend_host_pinned(const struct trk_backend *b, const void *p, size_t n)
{
    return b && p && n && b->ops->host_pinned && b->ops->host_pinned(b->self, p, n);
}

bool trk_backend_image_pinned(const struct trk_backend *b, const struct trk_image *img)
{
    struct trk_plane_layout L;
    if (!b || !b->ops->host_pinned || trk_image_check(img) ||
        trk_image_plane_layout(img->fmt, img->width, img->height, &L))
        return false;
    for (int p = 0; p < L.planes; p++) {
        const size_t span = (size_t)(L.rows[p] - 1) * img->pitch[p] + L.row_bytes[p];
        if (!b->ops->host_pinned(b->self, img->plane[p], span)) return false;
    }
    return true;
}
