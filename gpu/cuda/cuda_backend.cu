/* The CUDA backend: trk_cuda_ops behind gpu/backend.h.
 *
 * Lifecycle: create allocates everything (device frame buffer, pinned
 * staging and result buffers, lookup-table and ROI buffers, MOCT scratch,
 * two streams, events); set_objects builds the lookup tables and uploads
 * them; submit reads a pinned host frame in place when it can (the fused
 * kernel's loads cross the bus: see host_in_place), else uploads the frame
 * in row bands on the copy stream while the kernel stream processes each
 * band as soon as its copy lands; wait collects the results and the
 * CUDA-event timings. Nothing is allocated per frame.
 *
 * Blob lists (objects with blobs > 0): set_objects sizes the labelling
 * scratch for the largest frame (blobs.cu); submit queues the blob pipeline
 * on the kernel stream after the last band, then one copy of the list
 * lengths and the top-K records into pinned memory; wait decodes them.
 * Objects without blobs add no work.
 *
 * Variants (cfg->variant), default first:
 *   fused                 one pass, summary + full lookup tables, warp-aggregated
 *   lut                   straightforward per-channel lookup tables
 *   naive                 every pixel tests every object
 *   moct-<a>-r<r>         seed-faithful MOCT, arrangement a in h, v, s, factor r
 *   moct:arr=<a>,r=<r>    the same, long form
 * Any of them takes options after ':' (comma-separated): bands=<n> fixes the
 * number of upload bands (1 = upload the whole frame, then process) and so
 * also turns off reading pinned frames in place; copy turns that off alone. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../log_hook.h"
#include "bench_hooks.h"
#include "cuda_internal.cuh"
#include "regions.cuh"
#include "../rects.h"

/* ------------------------------------------------------------ logging */

/* Lines one failure streak of an instance logs before the rest are held
 * back. A failing frame usually logs one line (TRK_CUDA_TRY returns at
 * once); the others cover a cascade (a launch error, then the call that
 * reports it again). */
#define CUDA_LOG_LINES 4

/* An instance's log budget: lines logged since its last good frame. The
 * daemon's log-once style: an error that fails every frame (a lost device)
 * logs its first lines once, and again only after a frame has succeeded. */
struct cuda_log {
    int lines;
};

/* The instance whose entry point this thread is running (set by log_scope),
 * so that TRK_CUDA_TRY in the launch wrappers reaches its budget without an
 * extra argument. NULL outside one: those failures are always logged. */
static thread_local struct cuda_log *t_log;

void trk_cuda_log(const char *call, const char *file, int line, cudaError_t e)
{
    struct cuda_log *l = t_log;
    if (l && l->lines >= CUDA_LOG_LINES) return;
    trk_log_write(TRK_LOG_ERROR, "cuda", 0, "%s failed at %s:%d: %s", call, file, line,
                  cudaGetErrorString(e));
    if (l && ++l->lines == CUDA_LOG_LINES)
        trk_log_write(TRK_LOG_ERROR, "cuda", 0,
                      "further CUDA errors of this backend are not logged until a frame succeeds");
}

namespace
{

enum variant { V_FUSED = 0, V_LUT, V_NAIVE, V_MOCT };

const char *const variant_names[] = { "fused",     "lut",       "naive", "moct-h-r4",
                                      "moct-v-r4", "moct-s-r4", NULL };

/* Most 32-bit words a table image can need: summary + full tables of all
 * three spaces (nine channels: eight of 256 values, the hue of
 * TRK_HUE_VALUES) at 8 mask words per entry, each table padded to 4 words. */
const int LUT_CHANNEL_VALUES = 8 * 256 + TRK_HUE_VALUES;
const int LUT_MAX_WORDS = (LUT_CHANNEL_VALUES + 16) + 8 * LUT_CHANNEL_VALUES + 64;

struct cuda_be {
    struct cuda_log log; /* trk_cuda_log's budget for this instance */
    int dev, sms;
    int variant, arr, r, bands; /* bands: 0 = automatic */
    bool copy_only;             /* variant option "copy": never read host frames in place */
    bool copyback;              /* variant option "copyback": never hand results over (below) */
    char name[80];
    int max_w, max_h;

    cudaStream_t s_up, s_k;
    cudaEvent_t ev_up0, ev_up1, ev_roi0, ev_roi1, ev_done;
    cudaEvent_t ev_legacy; /* device images: the legacy stream's work so far (untimed) */
    bool up_timed;         /* ev_up0..ev_up1 spans this frame's upload or copy */
    cudaEvent_t ev_band[TRK_CUDA_MAX_BANDS], ev_ks[TRK_CUDA_MAX_BANDS], ev_ke[TRK_CUDA_MAX_BANDS];
    bool events_made;

    uint8_t *d_frame, *hp_stage;
    size_t frame_bytes;
    struct trk_cu_acc *d_acc[2], *hp_res;
    int parity;
    /* The hand-over (trk_cu_pub): hp_res and hp_pub are mapped (dp_res,
     * dp_pub: their device addresses; NULL if mapping failed, then results
     * are always copied back); pub_wait: this frame's fused launch hands its
     * results over with seq pub_seq, so wait() watches hp_pub instead of an
     * event. */
    struct trk_cu_acc *dp_res;
    struct trk_cu_pub *hp_pub, *dp_pub;
    struct trk_cu_pubctl *d_pubctl;
    unsigned pub_seq;
    bool pub_wait;
    bool dirty; /* accumulators may hold a failed frame's partial sums */

    uint32_t *d_lut, *h_lut;
    struct trk_cu_lut lt;
    struct trk_cu_obj *d_objs;
    struct trk_roi *d_rois, *hp_rois;
    uint32_t *d_rowmask, *d_colmask;
    void *d_moct;
    size_t moct_bytes;
    int n, fused_grid;
    /* Accumulator slot of each object: the table variants place similar
     * colours in one summary group (see group_objects); the others use
     * slot = object index. slots: accumulators in use. */
    int pos[TRK_MAX_OBJECTS];
    int slots;

    /* Blob lists. bobj_of[i]: object index of blob object i (nbo of them,
     * in object order); h_bobj/d_bobj their descriptors; group: blob
     * objects labelled per pass of the pipeline (the scratch holds that
     * many); blt[i] / blut_off[i]: the table layout and offset in d_blut of
     * pass i's objects (bits 0.. of its own image); d_bctl: two run
     * counters, the pass at bctl_par uses one and zeroes the other for the
     * next; d_bout/hp_bout: list lengths then records (TRK_CU_BLOB_HDR),
     * bout_bytes of it copied back per frame. n_blob/h_blob: the decoded
     * lists of the last frame, per object. */
    int nbo, group, bctl_par;
    int bobj_of[TRK_MAX_OBJECTS];
    struct trk_cu_bobj h_bobj[TRK_MAX_OBJECTS];
    struct trk_cu_bobj *d_bobj;
    struct trk_cu_lut blt[TRK_MAX_OBJECTS];
    size_t blut_off[TRK_MAX_OBJECTS], blut_words;
    uint32_t *d_blut, *d_bctl;
    uint32_t *d_broots, *d_browoff, *d_browcnt, *d_byg, *d_bparent, *d_bmass, *d_bfirst;
    uint16_t *d_bx0, *d_bx1;
    void *d_bout, *hp_bout;
    size_t bout_bytes;
    cudaEvent_t ev_b0, ev_b1;
    bool blob_work;   /* this frame queued the blob pipeline */
    bool bench_blobs; /* h_blob holds trk_cuda_bench_kernels' last lists */
    int n_blob[TRK_MAX_OBJECTS];
    struct trk_blob (*h_blob)[TRK_MAX_BLOBS];

    /* The frame in flight (or resident, for bench_hooks.h). */
    struct trk_cu_frame f;
    bool roi;
    int nk;    /* kernel intervals recorded this frame */
    bool work; /* GPU work was queued (n > 0)          */
    double t_submit;
    uint64_t up_bytes;       /* copied to the device for the frame in flight */
    uint64_t in_place_bytes; /* of those, read by the kernel from pinned host memory */

    /* The pre-filter (prefilter.cu): its setting; the filtered frame (the
     * layout of d_frame) and the 16-bit intermediate, made when it is first
     * turned on. While on, the kernels read d_filt through f. */
    struct trk_prefilter pf;
    uint8_t *d_filt;
    uint16_t *d_pftmp;
    int pftmp_pitch;
    size_t pftmp_slab;

    /* The regional form (regions.cu, made at the first set_objects): rmode
     * while the frame in flight or last waited for was regional. */
    struct trk_cu_rrm *rrm;
    bool rmode;
};

/* Points t_log at an instance for the life of one entry point. */
struct log_scope {
    struct cuda_log *prev;
    explicit log_scope(struct cuda_be *b) : prev(t_log) { t_log = &b->log; }
    ~log_scope() { t_log = prev; }
};

size_t align_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

/* Device layout of a frame: the planes of trk_image_plane_layout, each at
 * an offset with a pitch of its own. Pitches are those of the frame 4-pixel
 * aligned in width (room for the 4-pixel loads of the fused kernel past a
 * row's last pixel), rounded up to TRK_CUDA_PITCH_ALIGN. Returns the total
 * bytes. */
struct layout {
    struct trk_plane_layout p; /* planes, payload bytes per row, rows */
    size_t off[3];
    int pitch[3];
};

size_t frame_layout(int w, int h, int fmt, struct layout *L)
{
    struct trk_plane_layout wide;
    memset(L, 0, sizeof(*L));
    const int e = trk_image_plane_layout((enum trk_pixfmt)fmt, w, h, &L->p);
    const int e_wide = trk_image_plane_layout((enum trk_pixfmt)fmt, (w + 3) / 4 * 4, h, &wide);
    /* Callers pass a checked image or the create-time maximum (> 0). */
    TRK_ASSERT(e == 0 && e_wide == 0);
    size_t total = 0;
    for (int p = 0; p < L->p.planes; p++) {
        L->pitch[p] = (int)align_up(wide.row_bytes[p], TRK_CUDA_PITCH_ALIGN);
        L->off[p] = total;
        total += align_up((size_t)L->pitch[p] * L->p.rows[p], 256);
    }
    return total;
}

int parse_variant(const char *v, struct cuda_be *b)
{
    b->variant = V_FUSED;
    b->arr = TRK_ARR_H;
    b->r = 4;
    b->bands = 0;
    b->copy_only = false;
    b->copyback = false;
    if (!v || !*v) v = "fused";
    char buf[96];
    if (strlen(v) >= sizeof(buf)) return TRK_EINVAL;
    strcpy(buf, v);
    char *opts = strchr(buf, ':');
    if (opts) *opts++ = '\0';
    char arrc = 0;
    int r = -1, used = 0; /* r = -1: not given */
    if (!strcmp(buf, "fused"))
        b->variant = V_FUSED;
    else if (!strcmp(buf, "lut"))
        b->variant = V_LUT;
    else if (!strcmp(buf, "naive"))
        b->variant = V_NAIVE;
    else if (!strcmp(buf, "moct"))
        b->variant = V_MOCT;
    else if (sscanf(buf, "moct-%c-r%d%n", &arrc, &r, &used) == 2 && !buf[used])
        b->variant = V_MOCT;
    else
        return TRK_EINVAL;
    char *save = NULL;
    for (char *tok = opts ? strtok_r(opts, ",", &save) : NULL; tok;
         tok = strtok_r(NULL, ",", &save)) {
        int val;
        char c;
        used = 0;
        if (sscanf(tok, "arr=%c%n", &c, &used) == 1 && !tok[used] && b->variant == V_MOCT)
            arrc = c;
        else if (sscanf(tok, "r=%d%n", &val, &used) == 1 && !tok[used] && b->variant == V_MOCT)
            r = val;
        else if (sscanf(tok, "bands=%d%n", &val, &used) == 1 && !tok[used] && val >= 1 &&
                 val <= TRK_CUDA_MAX_BANDS)
            b->bands = val;
        else if (!strcmp(tok, "copy"))
            b->copy_only = true;
        else if (!strcmp(tok, "copyback") && b->variant == V_FUSED)
            b->copyback = true;
        else
            return TRK_EINVAL;
    }
    if (b->variant == V_MOCT) {
        if (arrc) {
            if (arrc == 'h')
                b->arr = TRK_ARR_H;
            else if (arrc == 'v')
                b->arr = TRK_ARR_V;
            else if (arrc == 's')
                b->arr = TRK_ARR_S;
            else
                return TRK_EINVAL;
        }
        if (r != -1) b->r = r;
        if (b->r < 2 || b->r > TRK_MOCT_MAX_R) return TRK_EINVAL;
    }
    static const char *const base[] = { "fused", "lut", "naive", "moct" };
    int len;
    if (b->variant == V_MOCT)
        len = snprintf(b->name, sizeof(b->name), "cuda:moct-%c-r%d", "hvs"[b->arr], b -> r);
    else if (b->variant == V_FUSED && !b->bands && !b->copy_only && !b->copyback)
        len = snprintf(b->name, sizeof(b->name), "cuda");
    else
        len = snprintf(b->name, sizeof(b->name), "cuda:%s", base[b->variant]);
    /* The options given, in a fixed order, ',' after the first. */
    const char *sep = ":";
    if (b->bands && len > 0 && (size_t)len < sizeof(b->name)) {
        len += snprintf(b->name + len, sizeof(b->name) - len, "%sbands=%d", sep, b->bands);
        sep = ",";
    }
    if (b->copy_only && len > 0 && (size_t)len < sizeof(b->name)) {
        len += snprintf(b->name + len, sizeof(b->name) - len, "%scopy", sep);
        sep = ",";
    }
    if (b->copyback && len > 0 && (size_t)len < sizeof(b->name))
        snprintf(b->name + len, sizeof(b->name) - len, "%scopyback", sep);
    return 0;
}

__global__ void probe_kernel(int *p)
{
    if (p) *p = 0;
}

/* Frees the labelling scratch (set_objects sizes it). */
void free_blob_scratch(struct cuda_be *b)
{
    uint32_t **u32[] = { &b->d_broots,  &b->d_browoff, &b->d_browcnt, &b->d_byg,
                         &b->d_bparent, &b->d_bmass,   &b->d_bfirst };
    for (uint32_t **p : u32) {
        cudaFree(*p);
        *p = NULL;
    }
    cudaFree(b->d_bx0);
    cudaFree(b->d_bx1);
    b->d_bx0 = b->d_bx1 = NULL;
    b->group = 0;
}

/* The hand-over's device state as a launch expects it (trk_cu_pubctl): no
 * block done, the earliest start at its maximum; on the kernel stream. */
cudaError_t reset_pubctl(struct cuda_be *b)
{
    cudaError_t e = cudaMemsetAsync(&b->d_pubctl->t0, 0xff, sizeof(b->d_pubctl->t0), b->s_k);
    return e != cudaSuccess
               ? e
               : cudaMemsetAsync(&b->d_pubctl->done, 0, sizeof(b->d_pubctl->done), b->s_k);
}

void be_free(struct cuda_be *b)
{
    if (!b) return;
    cudaSetDevice(b->dev);
    /* Errors here are ignored on purpose: teardown must release whatever it
     * can even after a device fault. */
    if (b->s_k) cudaStreamSynchronize(b->s_k);
    if (b->s_up) cudaStreamSynchronize(b->s_up);
    cudaFree(b->d_frame);
    cudaFreeHost(b->hp_stage);
    cudaFree(b->d_acc[0]);
    cudaFree(b->d_acc[1]);
    cudaFreeHost(b->hp_res);
    cudaFreeHost(b->hp_pub);
    cudaFree(b->d_pubctl);
    cudaFree(b->d_lut);
    free(b->h_lut);
    cudaFree(b->d_objs);
    cudaFree(b->d_rois);
    cudaFreeHost(b->hp_rois);
    cudaFree(b->d_rowmask);
    cudaFree(b->d_colmask);
    cudaFree(b->d_moct);
    cudaFree(b->d_filt);
    cudaFree(b->d_pftmp);
    free_blob_scratch(b);
    cudaFree(b->d_bobj);
    cudaFree(b->d_bctl);
    cudaFree(b->d_blut);
    cudaFree(b->d_bout);
    cudaFreeHost(b->hp_bout);
    free(b->h_blob);
    trk_cu_rrm_destroy(b->rrm);
    if (b->events_made) {
        cudaEventDestroy(b->ev_up0);
        cudaEventDestroy(b->ev_up1);
        cudaEventDestroy(b->ev_roi0);
        cudaEventDestroy(b->ev_roi1);
        cudaEventDestroy(b->ev_done);
        cudaEventDestroy(b->ev_legacy);
        cudaEventDestroy(b->ev_b0);
        cudaEventDestroy(b->ev_b1);
        for (int i = 0; i < TRK_CUDA_MAX_BANDS; i++) {
            cudaEventDestroy(b->ev_band[i]);
            cudaEventDestroy(b->ev_ks[i]);
            cudaEventDestroy(b->ev_ke[i]);
        }
    }
    if (b->s_up) cudaStreamDestroy(b->s_up);
    if (b->s_k) cudaStreamDestroy(b->s_k);
    cudaGetLastError(); /* clear a non-sticky error left by teardown */
    free(b);
}

int make_events(struct cuda_be *b)
{
    cudaEvent_t *all[] = { &b->ev_up0, &b->ev_up1, &b->ev_roi0, &b->ev_roi1, &b->ev_b0, &b->ev_b1 };
    for (cudaEvent_t *e : all)
        TRK_CUDA_TRY(cudaEventCreate(e));
    /* ev_done and ev_legacy are only waited on, never timed. */
    TRK_CUDA_TRY(cudaEventCreateWithFlags(&b->ev_done, cudaEventDisableTiming));
    TRK_CUDA_TRY(cudaEventCreateWithFlags(&b->ev_legacy, cudaEventDisableTiming));
    for (int i = 0; i < TRK_CUDA_MAX_BANDS; i++) {
        TRK_CUDA_TRY(cudaEventCreate(&b->ev_band[i]));
        TRK_CUDA_TRY(cudaEventCreate(&b->ev_ks[i]));
        TRK_CUDA_TRY(cudaEventCreate(&b->ev_ke[i]));
    }
    return 0;
}

int cu_create(const struct trk_backend_cfg *cfg, void **self)
{
    *self = NULL;
    char why[160];
    if (trk_cuda_probe(why, sizeof(why)) != TRK_CUDA_USABLE) return TRK_ENODEV;
    struct cuda_be *b = (struct cuda_be *)calloc(1, sizeof(*b));
    if (!b) return TRK_ENOMEM;
    log_scope ls(b);
    int err = parse_variant(cfg->variant, b);
    if (err) {
        free(b);
        return err;
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || cfg->cuda_device < 0 ||
        cfg->cuda_device >= ndev) {
        cudaGetLastError();
        free(b);
        return TRK_ENODEV;
    }
    b->dev = cfg->cuda_device;
    b->max_w = cfg->max_width;
    b->max_h = cfg->max_height;
    if (b->variant == V_MOCT && (b->max_w > TRK_MOCT_MAX_SIDE || b->max_h > TRK_MOCT_MAX_SIDE)) {
        free(b);
        return TRK_EINVAL;
    }
    if ((err = TRK_CUDA_CHECK(cudaSetDevice(b->dev)))) goto fail;
    if ((err = TRK_CUDA_CHECK(
             cudaDeviceGetAttribute(&b->sms, cudaDevAttrMultiProcessorCount, b->dev))))
        goto fail;
    if ((err = TRK_CUDA_CHECK(cudaStreamCreateWithFlags(&b->s_up, cudaStreamNonBlocking))))
        goto fail;
    if ((err = TRK_CUDA_CHECK(cudaStreamCreateWithFlags(&b->s_k, cudaStreamNonBlocking))))
        goto fail;
    b->events_made = true; /* destroying never-created (null) events is harmless */
    if ((err = make_events(b))) goto fail;

    {
        /* The largest frame any format can need at the configured size. */
        struct layout L;
        for (int fmt = 0; fmt < TRK_FMT_COUNT; fmt++) {
            size_t s = frame_layout(b->max_w, b->max_h, fmt, &L);
            if (s > b->frame_bytes) b->frame_bytes = s;
        }
    }
    err = TRK_ENOMEM;
    if (cudaMalloc(&b->d_frame, b->frame_bytes) != cudaSuccess) goto fail_mem;
    /* Padding bytes past a row's payload are read (and masked off) by the
     * 4-pixel loads: give them a defined value once. */
    if (cudaMemset(b->d_frame, 0, b->frame_bytes) != cudaSuccess) goto fail_mem;
    if (cudaMallocHost(&b->hp_stage, b->frame_bytes) != cudaSuccess) goto fail_mem;
    for (int i = 0; i < 2; i++) {
        if (cudaMalloc(&b->d_acc[i], TRK_MAX_OBJECTS * sizeof(struct trk_cu_acc)) != cudaSuccess)
            goto fail_mem;
        if (cudaMemset(b->d_acc[i], 0, TRK_MAX_OBJECTS * sizeof(struct trk_cu_acc)) != cudaSuccess)
            goto fail_mem;
    }
    if (cudaHostAlloc(&b->hp_res, TRK_MAX_OBJECTS * sizeof(struct trk_cu_acc),
                      cudaHostAllocMapped) != cudaSuccess ||
        cudaHostAlloc(&b->hp_pub, sizeof(struct trk_cu_pub), cudaHostAllocMapped) != cudaSuccess ||
        cudaMalloc(&b->d_pubctl, sizeof(struct trk_cu_pubctl)) != cudaSuccess)
        goto fail_mem;
    {
        /* Mapped memory the device cannot address (no such GPU is supported
         * today) only costs the hand-over: results are copied back. */
        void *dr = NULL, *dp = NULL;
        if (cudaHostGetDevicePointer(&dr, b->hp_res, 0) == cudaSuccess &&
            cudaHostGetDevicePointer(&dp, b->hp_pub, 0) == cudaSuccess) {
            b->dp_res = (struct trk_cu_acc *)dr;
            b->dp_pub = (struct trk_cu_pub *)dp;
        }
        cudaGetLastError();
        memset(b->hp_pub, 0, sizeof(*b->hp_pub));
        if (reset_pubctl(b) != cudaSuccess) goto fail_mem;
    }
    if (cudaMalloc(&b->d_lut, LUT_MAX_WORDS * 4) != cudaSuccess) goto fail_mem;
    if (!(b->h_lut = (uint32_t *)malloc(LUT_MAX_WORDS * 4))) goto fail_mem;
    if (cudaMalloc(&b->d_objs, TRK_MAX_OBJECTS * sizeof(struct trk_cu_obj)) != cudaSuccess)
        goto fail_mem;
    if (cudaMalloc(&b->d_rois, TRK_MAX_OBJECTS * sizeof(struct trk_roi)) != cudaSuccess)
        goto fail_mem;
    if (cudaMallocHost(&b->hp_rois, TRK_MAX_OBJECTS * sizeof(struct trk_roi)) != cudaSuccess)
        goto fail_mem;
    if (cudaMalloc(&b->d_rowmask, (size_t)b->max_h * 8 * 4) != cudaSuccess) goto fail_mem;
    if (cudaMalloc(&b->d_colmask, (size_t)b->max_w * 8 * 4) != cudaSuccess) goto fail_mem;
    if (cudaMalloc(&b->d_bobj, TRK_MAX_OBJECTS * sizeof(struct trk_cu_bobj)) != cudaSuccess)
        goto fail_mem;
    /* The two run counters of the blob passes (each zeroed by the pass
     * before it; both start at 0). */
    if (cudaMalloc(&b->d_bctl, 2 * 4 * sizeof(uint32_t)) != cudaSuccess) goto fail_mem;
    if (cudaMemset(b->d_bctl, 0, 2 * 4 * sizeof(uint32_t)) != cudaSuccess) goto fail_mem;
    {
        /* The largest blob output: every object listing TRK_MAX_BLOBS. */
        const size_t out =
            TRK_CU_BLOB_HDR + (size_t)TRK_MAX_OBJECTS * TRK_MAX_BLOBS * sizeof(struct trk_cu_blob);
        if (cudaMalloc(&b->d_bout, out) != cudaSuccess) goto fail_mem;
        if (cudaMallocHost(&b->hp_bout, out) != cudaSuccess) goto fail_mem;
    }
    b->h_blob = (struct trk_blob(*)[TRK_MAX_BLOBS])calloc(TRK_MAX_OBJECTS, sizeof(*b->h_blob));
    if (!b->h_blob) goto fail_mem;
    if (b->variant == V_MOCT) {
        b->moct_bytes =
            trk_cu_moct_scratch_bytes(b->max_w, b->max_h, TRK_MAX_OBJECTS, b->arr, b->r);
        if (cudaMalloc(&b->d_moct, b->moct_bytes) != cudaSuccess) goto fail_mem;
    }
    *self = b;
    return 0;
fail_mem:
    trk_log_write(TRK_LOG_ERROR, "cuda", 0, "allocation failed for a %dx%d backend: %s", b->max_w,
                  b->max_h, cudaGetErrorString(cudaGetLastError()));
fail:
    be_free(b);
    return err;
}

void cu_destroy(void *self)
{
    be_free((struct cuda_be *)self);
}

/* Builds the table image of gpu/cuda/cuda_internal.cuh (struct trk_cu_lut)
 * for objs into h (zeroed here). */
void build_lut(const struct trk_object_def *objs, int n, const int *pos, struct trk_cu_lut *lt,
               uint32_t *h)
{
    memset(lt, 0, sizeof(*lt));
    lt->nw = 1;
    while (lt->nw * 32 < n)
        lt->nw *= 2;
    const int nw = lt->nw;
    for (int s = 0; s < 3; s++) {
        lt->wb[s] = 1 << 20;
        lt->we[s] = 0;
    }
    for (int k = 0; k < n; k++) {
        const int s = objs[k].space, w = pos[k] / 32;
        lt->has[s] = 1;
        if (w < lt->wb[s]) lt->wb[s] = w;
        if (w + 1 > lt->we[s]) lt->we[s] = w + 1;
    }
    int words = 0;
    for (int s = 0; s < 3; s++)
        for (int c = 0; c < 3 && lt->has[s]; c++) {
            lt->sum_off[s][c] = words;
            words += (int)align_up((size_t)trk_chan_values(s, c), 4);
        }
    lt->sum_words = words;
    for (int s = 0; s < 3; s++)
        for (int c = 0; c < 3 && lt->has[s]; c++) {
            lt->full_off[s][c] = words;
            words += (int)align_up((size_t)trk_chan_values(s, c) * nw, 4);
        }
    /* An all-zero entry: lanes whose pixels passed no summary read it (the
     * same address for all of them: a broadcast, no divergence). */
    lt->zero_off = words;
    words += (int)align_up((size_t)nw, 4);
    lt->words = words;
    /* The shared-memory accumulators follow the image (trk_cu_table_smem). */
    TRK_ASSERT(words % 4 == 0 && words <= LUT_MAX_WORDS);
    memset(h, 0, (size_t)words * 4);
    for (int k = 0; k < n; k++) {
        const int s = objs[k].space;
        for (int c = 0; c < 3; c++) {
            const int nv = trk_chan_values(s, c);
            uint32_t *t = h + lt->full_off[s][c];
            for (int v = 0; v < nv; v++)
                if (trk_chan_has(objs[k].lo, objs[k].hi, s == TRK_SPACE_HSV, c, v))
                    t[v * nw + pos[k] / 32] |= 1u << (pos[k] % 32);
        }
    }
    for (int s = 0; s < 3; s++)
        for (int c = 0; c < 3 && lt->has[s]; c++) {
            const int nv = trk_chan_values(s, c);
            for (int v = 0; v < nv; v++) {
                uint32_t m = 0;
                for (int w = 0; w < nw; w++)
                    m |= h[lt->full_off[s][c] + v * nw + w];
                h[lt->sum_off[s][c] + v] = m;
            }
        }
}

/* Slot assignment for the table variants. Summary bit j is the OR of the
 * slots j, 32 + j, 64 + j, ...: a pixel passes the summary when, channel by
 * channel, some object of the group accepts it, which for a group of
 * unrelated colours happens often (a gray pixel inside one object's green
 * range, another's red range and a third's blue range). Groups of similar
 * colours keep the summary nearly as selective as the objects themselves,
 * so most background segments skip the full tables. Objects are sorted by
 * space, then by a coarse colour signature, and dealt into groups in order. */
struct okey {
    int space, primary, secondary, index;
};

int okey_cmp(const void *a, const void *b)
{
    const struct okey *x = (const struct okey *)a, *y = (const struct okey *)b;
    if (x->space != y->space) return x->space - y->space;
    if (x->primary != y->primary) return x->primary - y->primary;
    if (x->secondary != y->secondary) return x->secondary - y->secondary;
    return x->index - y->index;
}

void group_objects(const struct trk_object_def *objs, int n, int nw, int *pos)
{
    struct okey keys[TRK_MAX_OBJECTS];
    for (int k = 0; k < n; k++) {
        const struct trk_object_def *o = &objs[k];
        int c[3];
        for (int i = 0; i < 3; i++)
            c[i] = (o->lo[i] + o->hi[i]) / 2;
        struct okey *e = &keys[k];
        e->space = o->space;
        e->index = k;
        if (o->space == TRK_SPACE_HSV) {
            if (o->lo[0] > o->hi[0])
                c[0] = ((o->lo[0] + o->hi[0] + TRK_HUE_VALUES) / 2) % TRK_HUE_VALUES;
            e->primary = c[0] / 8;
            e->secondary = c[1];
        } else {
            /* which channel is largest and which smallest, then the middle one */
            int mx = 0, mn = 0;
            for (int i = 1; i < 3; i++) {
                if (c[i] > c[mx]) mx = i;
                if (c[i] < c[mn]) mn = i;
            }
            e->primary = mx * 3 + mn;
            const int mid = mx != mn ? 3 - mx - mn : 0;
            e->secondary = c[mid];
        }
    }
    qsort(keys, (size_t)n, sizeof(keys[0]), okey_cmp);
    for (int i = 0; i < n; i++)
        pos[keys[i].index] = (i % nw) * 32 + i / nw;
}

/* Per-object sizes of the labelling scratch, sized for the largest frame
 * so one allocation serves every frame size: root-list words (one per mask
 * word of a row), rows (rowoff and rowcnt each), run slots. */
struct blob_strides {
    size_t words, rows, runs;
};

blob_strides blob_strides_of(const struct cuda_be *b)
{
    const size_t h = (size_t)b->max_h;
    return blob_strides{ ((size_t)b->max_w + 31) / 32 * h, h, ((size_t)b->max_w + 1) / 2 * h };
}

/* The blob objects of objs (those with blobs > 0): descriptors uploaded,
 * output layout (each object's K records after the previous ones), the
 * labelling scratch for as many objects per pass as TRK_BLOB_SCRATCH_BYTES
 * allows (at least one; kept when large enough already) and each pass's
 * table image (the aggregate tables' layout and builder, with the pass's
 * objects as slots 0..). Runs after the slots (pos) are set: a blob object
 * reads its ROI from its slot. */
int setup_blobs(struct cuda_be *b, const struct trk_object_def *objs, int n)
{
    int off = 0;
    struct trk_object_def defs[TRK_MAX_OBJECTS];
    for (int k = 0; k < n; k++) {
        const struct trk_object_def *d = &objs[k];
        if (!d->blobs) continue;
        struct trk_cu_bobj *o = &b->h_bobj[b->nbo];
        memset(o, 0, sizeof(*o));
        memcpy(o->lo, d->lo, sizeof(o->lo));
        memcpy(o->hi, d->hi, sizeof(o->hi));
        o->space = d->space;
        o->conn = d->connectivity == 4 ? 4 : 8;
        o->min_area = d->min_area ? d->min_area : 1;
        o->k = d->blobs;
        o->off = off;
        o->slot = b->pos[k];
        off += d->blobs;
        defs[b->nbo] = *d;
        b->bobj_of[b->nbo++] = k;
    }
    if (!b->nbo) {
        free_blob_scratch(b);
        return 0;
    }
    if (b->max_w > TRK_BLOB_MAX_SIDE || b->max_h > TRK_BLOB_MAX_SIDE) {
        trk_log_write(TRK_LOG_ERROR, "cuda", 0,
                      "blob lists need frames of at most %d pixels a side (backend made for %dx%d)",
                      TRK_BLOB_MAX_SIDE, b->max_w, b->max_h);
        b->nbo = 0;
        return TRK_EINVAL;
    }
    b->bout_bytes = TRK_CU_BLOB_HDR + (size_t)off * sizeof(struct trk_cu_blob);
    const blob_strides st = blob_strides_of(b);
    const size_t per = trk_cu_blob_obj_bytes(b->max_w, b->max_h);
    size_t fit = TRK_BLOB_SCRATCH_BYTES / per;
    /* Run slots of a pass stay below 2^31 (the tag bit of selected roots). */
    const size_t fit_tag = ((size_t)1 << 31) / st.runs - 1;
    if (fit > fit_tag) fit = fit_tag;
    if (fit < 1) fit = 1;
    const int group = (size_t)b->nbo < fit ? b->nbo : (int)fit;
    if (group > b->group) {
        free_blob_scratch(b);
        const size_t g = (size_t)group;
        bool ok = cudaMalloc(&b->d_broots, g * st.words * 4) == cudaSuccess &&
                  cudaMalloc(&b->d_browoff, g * st.rows * 4) == cudaSuccess &&
                  cudaMalloc(&b->d_browcnt, g * st.rows * 4) == cudaSuccess &&
                  cudaMalloc(&b->d_byg, g * st.runs * 4) == cudaSuccess &&
                  cudaMalloc(&b->d_bparent, g * st.runs * 4) == cudaSuccess &&
                  cudaMalloc(&b->d_bmass, g * st.runs * 4) == cudaSuccess &&
                  cudaMalloc(&b->d_bfirst, g * st.runs * 4) == cudaSuccess &&
                  cudaMalloc(&b->d_bx0, g * st.runs * 2) == cudaSuccess &&
                  cudaMalloc(&b->d_bx1, g * st.runs * 2) == cudaSuccess;
        if (!ok) {
            trk_log_write(TRK_LOG_ERROR, "cuda", 0,
                          "blob labelling scratch for %d objects (%zu MB) failed: %s", group,
                          g * per >> 20, cudaGetErrorString(cudaGetLastError()));
            free_blob_scratch(b);
            b->nbo = 0;
            return TRK_ENOMEM;
        }
        b->group = group;
    }
    /* The passes' table images, one after the other (each a multiple of 4
     * words: 16-byte aligned). */
    uint32_t *img = (uint32_t *)malloc(LUT_MAX_WORDS * 4);
    if (!img) {
        b->nbo = 0;
        return TRK_ENOMEM;
    }
    int pos[TRK_MAX_OBJECTS];
    for (int i = 0; i < TRK_MAX_OBJECTS; i++)
        pos[i] = i;
    size_t words = 0, smem = 0;
    for (int g0 = 0, p = 0; g0 < b->nbo; g0 += b->group, p++) {
        const int gn = b->nbo - g0 < b->group ? b->nbo - g0 : b->group;
        build_lut(defs + g0, gn, pos, &b->blt[p], img);
        b->blut_off[p] = words;
        words += (size_t)b->blt[p].words;
        const size_t sm = trk_cu_blob_smem(&b->blt[p]);
        if (sm > smem) smem = sm;
    }
    /* A frame in flight may still read the old images. */
    int err = TRK_CUDA_CHECK(cudaStreamSynchronize(b->s_k));
    if (!err && words > b->blut_words) {
        cudaFree(b->d_blut);
        b->d_blut = NULL;
        b->blut_words = 0;
        if (cudaMalloc(&b->d_blut, words * 4) != cudaSuccess) {
            trk_log_write(TRK_LOG_ERROR, "cuda", 0, "blob tables (%zu KB) failed: %s",
                          words * 4 >> 10, cudaGetErrorString(cudaGetLastError()));
            err = TRK_ENOMEM;
        } else {
            b->blut_words = words;
        }
    }
    for (int g0 = 0, p = 0; !err && g0 < b->nbo; g0 += b->group, p++) {
        const int gn = b->nbo - g0 < b->group ? b->nbo - g0 : b->group;
        build_lut(defs + g0, gn, pos, &b->blt[p], img);
        err = TRK_CUDA_CHECK(cudaMemcpy(b->d_blut + b->blut_off[p], img,
                                        (size_t)b->blt[p].words * 4, cudaMemcpyHostToDevice));
    }
    free(img);
    if (!err) err = trk_cu_blobs_setup(smem);
    if (err) {
        b->nbo = 0;
        return err;
    }
    TRK_CUDA_TRY(cudaMemcpyAsync(b->d_bobj, b->h_bobj, (size_t)b->nbo * sizeof(b->h_bobj[0]),
                                 cudaMemcpyHostToDevice, b->s_k));
    TRK_CUDA_TRY(cudaStreamSynchronize(b->s_k));
    return 0;
}

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

int cu_set_objects(void *self, const struct trk_object_def *objs, int n)
{
    struct cuda_be *b = (struct cuda_be *)self;
    log_scope ls(b);
    TRK_CUDA_TRY(cudaSetDevice(b->dev));
    int rerr = regions_set_objects(b, objs, n);
    if (rerr) return rerr;
    b->n = n;
    b->nbo = 0;
    b->bench_blobs = false;
    memset(b->n_blob, 0, sizeof(b->n_blob));
    if (n == 0) return 0;
    int nw = 1;
    while (nw * 32 < n)
        nw *= 2;
    const bool tables = b->variant == V_FUSED || b->variant == V_LUT;
    if (tables) {
        group_objects(objs, n, nw, b->pos);
        b->slots = 32 * nw;
    } else {
        for (int k = 0; k < n; k++)
            b->pos[k] = k;
        b->slots = n;
    }
    build_lut(objs, n, b->pos, &b->lt, b->h_lut);
    struct trk_cu_obj h_objs[TRK_MAX_OBJECTS];
    for (int k = 0; k < n; k++) {
        memcpy(h_objs[k].lo, objs[k].lo, sizeof(h_objs[k].lo));
        memcpy(h_objs[k].hi, objs[k].hi, sizeof(h_objs[k].hi));
        h_objs[k].space = objs[k].space;
    }
    TRK_CUDA_TRY(cudaMemcpyAsync(b->d_lut, b->h_lut, (size_t)b->lt.words * 4,
                                 cudaMemcpyHostToDevice, b->s_k));
    TRK_CUDA_TRY(cudaMemcpyAsync(b->d_objs, h_objs, (size_t)n * sizeof(h_objs[0]),
                                 cudaMemcpyHostToDevice, b->s_k));
    for (int i = 0; i < 2; i++)
        TRK_CUDA_TRY(
            cudaMemsetAsync(b->d_acc[i], 0, TRK_MAX_OBJECTS * sizeof(struct trk_cu_acc), b->s_k));
    TRK_CUDA_TRY(cudaStreamSynchronize(b->s_k));
    b->parity = 0;
    b->dirty = false;
    if (b->variant == V_FUSED) {
        int bps = 0;
        int err = trk_cu_fused_setup(b->lt.nw, trk_cu_table_smem(b->lt, b->slots), &bps);
        if (err) return err;
        b->fused_grid = bps * b->sms;
    } else if (b->variant == V_LUT) {
        int err = trk_cu_lut_setup(trk_cu_table_smem(b->lt, b->slots));
        if (err) return err;
    }
    return setup_blobs(b, objs, n);
}

bool host_pinned(const void *p)
{
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return a.type == cudaMemoryTypeHost;
}

/* ------------------------------------------- host memory (backend.h) */

/* Every range this process pinned through a CUDA backend (host_alloc or
 * host_register), shared by all instances: a pool allocated through one
 * backend is uploaded directly by another (the pipeline's grown backend),
 * and the upload asks about the whole plane, not just its first byte (a
 * plane that runs past a registered buffer must take the staging path).
 * Frame pools are small: a fixed table, a lock taken once per plane. */
#define PIN_RANGES 512

struct pin_range {
    const uint8_t *p;
    size_t n;
    bool owned;         /* cudaHostAlloc'ed (host_free), else registered */
    const uint8_t *dev; /* p's address in the device's space (mapped), or NULL */
};

pthread_mutex_t pin_lock = PTHREAD_MUTEX_INITIALIZER;
struct pin_range pins[PIN_RANGES];
int n_pins;

bool pin_add(const void *p, size_t n, bool owned)
{
    void *dev = NULL;
    if (cudaHostGetDevicePointer(&dev, (void *)p, 0) != cudaSuccess) {
        cudaGetLastError(); /* not mapped: uploaded, never read in place */
        dev = NULL;
    }
    pthread_mutex_lock(&pin_lock);
    bool ok = n_pins < PIN_RANGES;
    if (ok) pins[n_pins++] = pin_range{ (const uint8_t *)p, n, owned, (const uint8_t *)dev };
    pthread_mutex_unlock(&pin_lock);
    return ok;
}

/* Removes p's range; whether it was there and, in *owned, how it was made. */
bool pin_remove(const void *p, bool *owned)
{
    bool found = false;
    pthread_mutex_lock(&pin_lock);
    for (int i = 0; i < n_pins && !found; i++)
        if (pins[i].p == p) {
            *owned = pins[i].owned;
            pins[i] = pins[--n_pins];
            found = true;
        }
    pthread_mutex_unlock(&pin_lock);
    return found;
}

/* 1: [p, p + n) lies in one recorded range; -1: p is in one but the span
 * runs past its end; 0: p is in none. */
int pin_lookup(const void *p, size_t n)
{
    const uint8_t *a = (const uint8_t *)p;
    int r = 0;
    pthread_mutex_lock(&pin_lock);
    for (int i = 0; i < n_pins && r != 1; i++)
        if (a >= pins[i].p && (size_t)(a - pins[i].p) < pins[i].n)
            r = n <= pins[i].n - (size_t)(a - pins[i].p) ? 1 : -1;
    pthread_mutex_unlock(&pin_lock);
    return r;
}

bool pin_covers(const void *p, size_t n)
{
    return pin_lookup(p, n) == 1;
}

/* The device's address of host bytes [p, p + n) when they lie in one
 * recorded, mapped range; NULL otherwise. */
const uint8_t *pin_device(const void *p, size_t n)
{
    const uint8_t *a = (const uint8_t *)p, *d = NULL;
    pthread_mutex_lock(&pin_lock);
    for (int i = 0; i < n_pins && !d; i++)
        if (a >= pins[i].p && (size_t)(a - pins[i].p) < pins[i].n &&
            n <= pins[i].n - (size_t)(a - pins[i].p) && pins[i].dev)
            d = pins[i].dev + (a - pins[i].p);
    pthread_mutex_unlock(&pin_lock);
    return d;
}

void *cu_host_alloc(void *self, size_t bytes)
{
    struct cuda_be *b = (struct cuda_be *)self;
    log_scope ls(b);
    void *p = NULL;
    if (cudaSetDevice(b->dev) != cudaSuccess ||
        cudaHostAlloc(&p, bytes, cudaHostAllocPortable | cudaHostAllocMapped) != cudaSuccess) {
        cudaGetLastError(); /* the caller falls back to pageable memory */
        return NULL;
    }
    if (!pin_add(p, bytes, true)) {
        /* Unrecorded, it would never be freed right: give it back. */
        cudaFreeHost(p);
        return NULL;
    }
    return p;
}

void cu_host_free(void *self, void *p)
{
    (void)self;
    bool owned = false;
    if (pin_remove(p, &owned) && owned) cudaFreeHost(p);
}

int cu_host_register(void *self, void *p, size_t n)
{
    struct cuda_be *b = (struct cuda_be *)self;
    log_scope ls(b);
    if (cudaSetDevice(b->dev) != cudaSuccess) {
        cudaGetLastError();
        return TRK_EBACKEND;
    }
    /* Mapped, so that the kernels can read frames there in place; where the
     * system cannot map it, pinned only (uploaded by the copy engine). */
    if (cudaHostRegister(p, n, cudaHostRegisterPortable | cudaHostRegisterMapped) != cudaSuccess &&
        (cudaGetLastError(), cudaHostRegister(p, n, cudaHostRegisterPortable)) != cudaSuccess) {
        cudaGetLastError(); /* the caller logs it once and stays pageable */
        return TRK_EBACKEND;
    }
    if (!pin_add(p, n, false)) {
        cudaHostUnregister(p);
        return TRK_EBACKEND;
    }
    return 0;
}

void cu_host_unregister(void *self, void *p)
{
    (void)self;
    bool owned = true;
    if (pin_remove(p, &owned) && !owned) cudaHostUnregister(p);
}

bool cu_host_pinned(const void *self, const void *p, size_t n)
{
    (void)self;
    return pin_covers(p, n);
}

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
int launch_rows(struct cuda_be *b, int row0, int row1, bool first, bool publish = false)
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
        j.need = 0;
        for (int s = 0; s < 3; s++)
            if (j.lt.has[s]) j.need |= 1 << s;
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
            const struct trk_cu_blob *r = &rec[o->off + s];
            struct trk_blob *d = &b->h_blob[k][s];
            d->mass = r->mass;
            d->sum_x = r->sx;
            d->sum_y = r->sy;
            d->x0 = (int32_t)r->x0;
            d->y0 = (int32_t)r->y0;
            d->x1 = (int32_t)r->x1;
            d->y1 = (int32_t)r->y1;
            d->perimeter = r->perim;
            d->first = r->first;
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
    /* A hand-over cut short leaves its ticket count and clock behind. */
    TRK_CUDA_TRY(reset_pubctl(b));
    b->dirty = false;
    return 0;
}

/* ------------------------------------------------ device images */

/* Whether the kernels can read a device image where it is: the fused
 * kernel's 16-byte loads need 16-byte aligned planes and pitches, and each
 * row room for the 4-pixel-wide loads past its last pixel (what
 * frame_layout gives d_frame; the bytes there are read and masked off).
 * FFmpeg's CUDA frames (256-byte aligned pitches) qualify. wide (if not
 * NULL) gets the planes' layout at the width rounded up to those loads. */
bool device_in_place(const struct trk_image *img, struct trk_plane_layout *wide_out = NULL)
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
    if (err) return err;
    if ((err = queue_rois(b, rois))) return err;
    if ((err = queue_whole(b, L, img->height))) return err;
    return queue_finish(b);
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
bool host_in_place(struct cuda_be *b, const struct trk_image *img, const struct layout *L)
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
    if (b->n == 0) return 0;
    TRK_CUDA_TRY(cudaSetDevice(b->dev));
    return end_call(b, submit_impl(b, img, rois));
}

/* ------------------------------------------------------ regional form */

/* Bytes [*c0, *c1) of plane p's row that pixels x0..x1 read (color.h's
 * trk_pixel_native: chroma of pixel x is sample x / 2). */
void plane_cols(int fmt, int p, int x0, int x1, size_t *c0, size_t *c1)
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
int upload_rects(struct cuda_be *b, const struct trk_image *img, const struct layout *L,
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
int regions_impl(struct cuda_be *b, const struct trk_image *img, const struct trk_region *regs,
                 int n)
{
    struct layout L;
    const size_t bytes = frame_layout(img->width, img->height, img->fmt, &L);
    if (bytes > b->frame_bytes) return TRK_ETOOBIG;
    fill_frame(b, img, &L);
    int err = trk_cu_rrm_prepare(b->rrm, img->width, img->height, regs, n);
    if (err) return err;
    static_assert(TRK_RECTS_MAX >= TRK_MAX_REGIONS, "a rectangle per region");
    struct trk_roi rois[TRK_MAX_REGIONS], rects[TRK_RECTS_MAX];
    int nr = -1; /* -1: the whole frame */
    if (b->pf.sigma <= 0) {
        for (int j = 0; j < n; j++)
            rois[j] = regs[j].roi;
        nr = trk_rects_cover(rois, n, img->width, img->height, 0, TRK_RECTS_MAX, rects);
        if (nr < 0) return nr;
        if (trk_rects_area(rects, nr) * 2 > (uint64_t)img->width * (uint64_t)img->height) nr = -1;
    }
    if (img->mem == TRK_MEM_CUDA) {
        /* Already on the device: the regions read it where it is. */
        if ((err = queue_device_frame(b, img, &L))) return err;
    } else {
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
    if (n == 0) return 0;
    TRK_CUDA_TRY(cudaSetDevice(b->dev));
    return end_call(b, regions_impl(b, img, regs, n));
}

float elapsed(cudaEvent_t a, cudaEvent_t z);
float span(cudaEvent_t a, cudaEvent_t z);

/* Waits for ev: polls it for up to TRK_CU_WAIT_SPIN_US, then blocks (in
 * whatever way the context's scheduling flags say). The poll spares a
 * blocking-sync context a sleep and a wake-up per frame. */
static cudaError_t wait_event(cudaEvent_t ev)
{
    const double until = trk_backend_now_ms() + TRK_CU_WAIT_SPIN_US * 1e-3;
    cudaError_t e;
    while ((e = cudaEventQuery(ev)) == cudaErrorNotReady && trk_backend_now_ms() < until) {
    }
    /* "Not ready" is no error: none may be left for a launch check. */
    if (cudaPeekAtLastError() == cudaErrorNotReady) cudaGetLastError();
    return e == cudaErrorNotReady ? cudaEventSynchronize(ev) : e;
}

/* Waits for a frame whose kernel hands its results over (trk_cu_pub):
 * watches the record's seq in host memory, which the GPU writes the moment
 * its last block is done, sooner than an event after the kernel completes.
 * Every 20 us it asks the stream's event as well, for an error (the kernel
 * then never writes seq); after TRK_CU_WAIT_SPIN_US it blocks on the event
 * as wait_event does. */
static cudaError_t wait_handover(struct cuda_be *b)
{
    const unsigned want = b->pub_seq;
    const unsigned *seq = &b->hp_pub->seq;
    const double t0 = trk_backend_now_ms(), until = t0 + TRK_CU_WAIT_SPIN_US * 1e-3;
    double ask = t0 + 0.02;
    for (;;) {
        if (__atomic_load_n(seq, __ATOMIC_ACQUIRE) == want) return cudaSuccess;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        asm volatile("yield");
#endif
        const double now = trk_backend_now_ms();
        if (now < ask) continue;
        ask = now + 0.02;
        cudaError_t e = cudaEventQuery(b->ev_done);
        if (e == cudaErrorNotReady) {
            if (cudaPeekAtLastError() == cudaErrorNotReady) cudaGetLastError();
            if (now < until) continue;
            e = cudaEventSynchronize(b->ev_done);
        }
        if (e != cudaSuccess) return e;
        /* The stream is done, so the kernel's writes are all visible: seq
         * is there unless the kernel did not hand over (a defect). */
        if (__atomic_load_n(seq, __ATOMIC_ACQUIRE) == want) return cudaSuccess;
        trk_log_write(TRK_LOG_ERROR, "cuda", 0,
                      "the kernel finished without handing its results over (seq %u, want %u)",
                      __atomic_load_n(seq, __ATOMIC_ACQUIRE), want);
        b->dirty = true; /* reset the hand-over's state before the next frame */
        return cudaErrorUnknown;
    }
}

int wait_regions(struct cuda_be *b, struct trk_obj_result *out, struct trk_backend_timing *t)
{
    double k = 0;
    if (b->work) {
        b->work = false;
        TRK_CUDA_TRY(cudaSetDevice(b->dev));
        TRK_CUDA_TRY(wait_event(b->ev_done));
        b->log.lines = 0;
        trk_cu_rrm_collect(b->rrm, out, &k);
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

void decode(const struct trk_cu_acc *acc, const int *pos, int n, struct trk_obj_result *out)
{
    for (int k = 0; k < n; k++) {
        const struct trk_cu_acc *a = &acc[pos[k]];
        if (!a->mass) {
            trk_result_clear(&out[k]);
            continue;
        }
        out[k].mass = a->mass;
        out[k].sum_x = a->sx;
        out[k].sum_y = a->sy;
        out[k].x0 = (int32_t)(TRK_ACC_BIG - a->nx0);
        out[k].y0 = (int32_t)(TRK_ACC_BIG - a->ny0);
        out[k].x1 = (int32_t)a->px1 - 1;
        out[k].y1 = (int32_t)a->py1 - 1;
    }
}

/* The time between two events of a frame that wait() has seen done. They
 * were queued before what it waited for, yet can show as complete a little
 * later: a hand-over's seq and the engines' event stamps take different
 * paths, as do a copy engine's event and a kernel's (1 call in ~3600 on
 * the H100 read "not ready"). So z is waited for first, which is at once
 * in the usual case. */
float span(cudaEvent_t a, cudaEvent_t z)
{
    if (wait_event(z) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return elapsed(a, z);
}

/* The time between two completed events; 0 if CUDA cannot say (logged,
 * the first few times in the process: a timing of 0 is then no
 * measurement). */
float elapsed(cudaEvent_t a, cudaEvent_t z)
{
    static int logged;
    float ms = 0;
    const cudaError_t e = cudaEventElapsedTime(&ms, a, z);
    if (e != cudaSuccess) {
        cudaGetLastError();
        if (__atomic_fetch_add(&logged, 1, __ATOMIC_RELAXED) < 3)
            trk_log_write(TRK_LOG_WARN, "cuda", 0, "event timing unavailable: %s",
                          cudaGetErrorString(e));
        return 0;
    }
    return ms;
}

int cu_wait(void *self, struct trk_obj_result *out, struct trk_backend_timing *t)
{
    struct cuda_be *b = (struct cuda_be *)self;
    log_scope ls(b);
    if (b->rmode) return wait_regions(b, out, t);
    if (!b->work) {
        if (t) {
            t->upload_ms = t->kernel_ms = 0;
            t->upload_bytes = 0;
            t->total_ms = trk_backend_now_ms() - b->t_submit;
        }
        return 0;
    }
    b->work = false;
    TRK_CUDA_TRY(cudaSetDevice(b->dev));
    TRK_CUDA_TRY(b->pub_wait ? wait_handover(b) : wait_event(b->ev_done));
    b->log.lines = 0; /* a good frame ends the failure streak */
    decode(b->hp_res, b->pos, b->n, out);
    if (b->blob_work) decode_blobs(b);
    if (t) {
        t->upload_ms = b->up_timed ? span(b->ev_up0, b->ev_up1) : 0;
        t->upload_bytes = b->up_bytes;
        t->in_place_bytes = b->in_place_bytes;
        double k = b->roi ? span(b->ev_roi0, b->ev_roi1) : 0;
        if (b->blob_work) k += span(b->ev_b0, b->ev_b1);
        for (int i = 0; i < b->nk; i++)
            k += span(b->ev_ks[i], b->ev_ke[i]);
        if (b->pub_wait) k += (double)b->hp_pub->kernel_ns * 1e-6;
        t->kernel_ms = k;
        t->total_ms = trk_backend_now_ms() - b->t_submit;
    }
    return 0;
}

int cu_blobs(void *self, int obj, const struct trk_blob **out)
{
    struct cuda_be *b = (struct cuda_be *)self;
    if (b->rmode) return trk_cu_rrm_blobs(b->rrm, obj, out);
    *out = b->h_blob[obj];
    return b->n_blob[obj];
}

const char *cu_describe(void *self)
{
    return ((struct cuda_be *)self)->name;
}

int cu_set_prefilter(void *self, const struct trk_prefilter *pf)
{
    struct cuda_be *b = (struct cuda_be *)self;
    log_scope ls(b);
    if (pf->sigma > 0 && !b->d_filt) {
        TRK_CUDA_TRY(cudaSetDevice(b->dev));
        b->pftmp_pitch = (int)align_up((size_t)b->max_w, 64);
        b->pftmp_slab = (size_t)b->pftmp_pitch * (size_t)b->max_h;
        uint8_t *filt = NULL;
        uint16_t *tmp = NULL;
        /* Padding bytes of d_filt are read (and masked off) like d_frame's:
         * defined once here; the filter writes only samples. */
        if (cudaMalloc(&filt, b->frame_bytes) != cudaSuccess ||
            cudaMemset(filt, 0, b->frame_bytes) != cudaSuccess ||
            cudaMalloc(&tmp, TRK_PREFILTER_MAX_CHANS * b->pftmp_slab * sizeof(*tmp)) !=
                cudaSuccess) {
            trk_log_write(TRK_LOG_ERROR, "cuda", 0, "pre-filter allocation failed (%dx%d): %s",
                          b->max_w, b->max_h, cudaGetErrorString(cudaGetLastError()));
            cudaFree(filt);
            cudaFree(tmp);
            return TRK_ENOMEM;
        }
        b->d_filt = filt;
        b->d_pftmp = tmp;
    }
    b->pf = *pf;
    return 0;
}

} // namespace

extern "C" {

enum trk_cuda_status trk_cuda_probe(char *why, size_t why_len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        /* Without libcuda the runtime says "driver version is insufficient";
         * a driver version of 0 tells that apart from a driver too old. */
        int driver = 0;
        cudaDriverGetVersion(&driver);
        bool absent = driver == 0 || e == cudaErrorNoDevice || e == cudaSuccess;
        int runtime = 0;
        cudaRuntimeGetVersion(&runtime);
        if (why && !absent && e == cudaErrorInsufficientDriver)
            snprintf(why, why_len,
                     "the NVIDIA driver is too old: it supports CUDA %d.%d, this build needs "
                     "%d.%d (update the driver)",
                     driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
        else if (why)
            snprintf(why, why_len, "%s (CUDA runtime: %s)",
                     driver == 0 ? "no NVIDIA driver found"
                     : absent    ? "no NVIDIA GPU found"
                                 : "no usable CUDA device",
                     e != cudaSuccess ? cudaGetErrorString(e) : "no devices");
        cudaGetLastError();
        return absent ? TRK_CUDA_ABSENT : TRK_CUDA_UNUSABLE;
    }
    /* A device too old for the compiled code (sm_90 and its PTX) has no
     * image for our kernels: ask for one. */
    cudaFuncAttributes fa;
    e = cudaFuncGetAttributes(&fa, probe_kernel);
    if (e != cudaSuccess) {
        int major = 0, minor = 0;
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
        if (why)
            snprintf(why, why_len,
                     "CUDA device 0 (compute capability %d.%d) cannot run this build: %s", major,
                     minor, cudaGetErrorString(e));
        cudaGetLastError();
        return TRK_CUDA_UNUSABLE;
    }
    return TRK_CUDA_USABLE;
}

const struct trk_backend_ops trk_cuda_ops = {
    "cuda",       cu_create,        cu_destroy,         cu_set_objects,
    cu_submit,    cu_wait,          cu_describe,        variant_names,
    cu_blobs,     cu_set_prefilter, cu_submit_regions,  cu_host_alloc,
    cu_host_free, cu_host_register, cu_host_unregister, cu_host_pinned,
    true, /* async: submit queues the copies and kernels */
};

/* ------------------------------------------------ bench_hooks.h */

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
