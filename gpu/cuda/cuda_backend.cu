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

#include "log_hook.h"
#include "bench_hooks.h"
#include "cuda_internal.cuh"
#include "regions.cuh"

/* ------------------------------------------------------------ logging */

/* Lines one failure streak of an instance logs before the rest are held
 * back. A failing frame usually logs one line (TRK_CUDA_TRY returns at
 * once); the others cover a cascade (a launch error, then the call that
 * reports it again). */
#define CUDA_LOG_LINES 4

namespace trk_cuda
{

thread_local struct cuda_log *t_log;

} // namespace trk_cuda

using trk_cuda::t_log;

void trk_cuda_log(const char *call, const char *file, int line, cudaError_t e)
{
    trk_cuda::cuda_log *l = t_log;
    if (l && l->lines >= CUDA_LOG_LINES) return;
    trk_log_write(TRK_LOG_ERROR, "cuda", 0, "%s failed at %s:%d: %s", call, file, line,
                  cudaGetErrorString(e));
    if (l && ++l->lines == CUDA_LOG_LINES)
        trk_log_write(TRK_LOG_ERROR, "cuda", 0,
                      "further CUDA errors of this backend are not logged until a frame succeeds");
}

namespace trk_cuda
{

const char *const variant_names[] = { "fused",     "lut",       "naive", "moct-h-r4",
                                      "moct-v-r4", "moct-s-r4", NULL };

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

static int parse_variant(const char *v, struct cuda_be *b)
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

/* Frees the labelling scratch and the blob masks (set_objects sizes them). */
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
    cudaFree(b->d_bmask);
    b->d_bmask = NULL;
    b->bmask_words = 0;
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

static void be_free(struct cuda_be *b)
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
    cudaFree(b->d_light);
    cudaFree(b->d_cls);
    free(b->h_cls);
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
    cudaFree(b->d_bidx);
    cudaFree(b->d_bout);
    cudaFreeHost(b->hp_bout);
    free(b->h_blob);
    trk_cu_rrm_destroy(b->rrm);
    free_gather(b);
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

static int make_events(struct cuda_be *b)
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

static int cu_create(const struct trk_backend_cfg *cfg, void **self)
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
    /* The lab and rg tables: the host's, so their bytes are the CPU backends'. */
    if (cudaMalloc(&b->d_light, sizeof(*b->d_light)) != cudaSuccess ||
        cudaMemcpy(b->d_light, trk_light_tables(), sizeof(*b->d_light), cudaMemcpyHostToDevice) !=
            cudaSuccess)
        goto fail_mem;
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

static void cu_destroy(void *self)
{
    be_free((struct cuda_be *)self);
}

static const char *cu_describe(void *self)
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

} // namespace trk_cuda

using namespace trk_cuda;

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
    cu_gather,    cu_gathered,
};

} /* extern "C" */
