#include "hwdec.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavutil/hwcontext.h>
#include <libavutil/pixdesc.h>

#define LOG_TAG "hwdec"
#include "log.h"

struct trk_hwdec_ctx {
    struct trk_hwdec_cfg cfg;
    char what[256];
    AVBufferRef *device; /* FFmpeg's CUDA device on the primary context */
    bool said;           /* the one line saying how the video is decoded */
    bool active;         /* the last attach chose NVDEC */
    const char *codec;   /* its name, for get_format's line */
    /* get_format went to software after NVDEC was chosen (the driver
     * refused the stream): said once. */
    atomic_bool fell_back;
};

int trk_hwdec_parse(const char *s)
{
    if (!strcmp(s, "auto")) return TRK_HWDEC_AUTO;
    if (!strcmp(s, "cuda")) return TRK_HWDEC_CUDA;
    if (!strcmp(s, "none")) return TRK_HWDEC_NONE;
    return -1;
}

struct trk_hwdec_ctx *trk_hwdec_create(const struct trk_hwdec_cfg *cfg, const char *what)
{
    struct trk_hwdec_ctx *h = calloc(1, sizeof(*h));
    if (!h) return NULL;
    h->cfg = *cfg;
    snprintf(h->what, sizeof(h->what), "%s", what);
    atomic_init(&h->fell_back, false);
    return h;
}

void trk_hwdec_destroy(struct trk_hwdec_ctx **h)
{
    if (!h || !*h) return;
    av_buffer_unref(&(*h)->device);
    free(*h);
    *h = NULL;
}

bool trk_hwdec_active(const struct trk_hwdec_ctx *h)
{
    return h && h->active;
}

/* Whether libavcodec's decoder for codec has an NVDEC hwaccel (a CUDA
 * device context in, AV_PIX_FMT_CUDA frames out). */
static bool has_nvdec(const AVCodec *codec)
{
    for (int i = 0;; i++) {
        const AVCodecHWConfig *c = avcodec_get_hw_config(codec, i);
        if (!c) return false;
        if (c->device_type == AV_HWDEVICE_TYPE_CUDA && c->pix_fmt == AV_PIX_FMT_CUDA &&
            (c->methods & AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX))
            return true;
    }
}

/* 8-bit 4:2:0 video: NVDEC's surfaces are NV12, which the backends take.
 * 10-bit video would give P010 surfaces and 4:4:4 YUV444P: decoded in
 * software (the daemon's choice; no backend format holds them). Unknown
 * (AV_PIX_FMT_NONE) is tried: get_format decides once it is known. */
static bool nv12_surfaces(int f)
{
    return f == AV_PIX_FMT_YUV420P || f == AV_PIX_FMT_YUVJ420P || f == AV_PIX_FMT_NV12 ||
           f == AV_PIX_FMT_NONE;
}

/* libavcodec's choice of output format, at the first frame and whenever the
 * stream's parameters change. NVDEC when offered (it no longer is when
 * its init failed for this stream: libavcodec then asks again without it)
 * and the surfaces would be NV12; else the decoder's own software format. */
static enum AVPixelFormat get_format(AVCodecContext *dec, const enum AVPixelFormat *fmts)
{
    /* Found through the device context, not dec->opaque: that one is the
     * pinned frame pool's (get_buffer2, hostpool.c). */
    struct trk_hwdec_ctx *h = ((AVHWDeviceContext *)dec->hw_device_ctx->data)->user_opaque;
    bool offered = false;
    for (const enum AVPixelFormat *p = fmts; *p != AV_PIX_FMT_NONE; p++)
        offered = offered || *p == AV_PIX_FMT_CUDA;
    if (offered && nv12_surfaces(dec->sw_pix_fmt)) return AV_PIX_FMT_CUDA;
    if (!atomic_exchange(&h->fell_back, true))
        log_warn("%s: NVDEC cannot decode this %s video (%s%s): decoding it in software", h->what,
                 h->codec, av_get_pix_fmt_name(dec->sw_pix_fmt) ?: "unknown format",
                 offered ? ", not 8-bit 4:2:0" : ", the driver refused it");
    for (const enum AVPixelFormat *p = fmts; *p != AV_PIX_FMT_NONE; p++) {
        const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(*p);
        if (d && !(d->flags & AV_PIX_FMT_FLAG_HWACCEL)) return *p;
    }
    return AV_PIX_FMT_NONE;
}

/* FFmpeg shares a primary context only when it is inactive or already has
 * CU_CTX_SCHED_BLOCKING_SYNC (4); one active with other flags it refuses
 * ("Primary context already active with incompatible flags"). The CUDA
 * runtime (the GPU probe, the backend) makes it active with its default, so
 * the flags are set to FFmpeg's first, through the driver loaded at run
 * time as FFmpeg loads it (nothing at build time). The context's waits then
 * sleep instead of spinning, for the backend too. */
#define CU_SCHED_BLOCKING_SYNC 4u
static void prepare_primary_context(int ordinal)
{
    typedef int (*init_fn)(unsigned);
    typedef int (*get_fn)(int *, int);
    typedef int (*state_fn)(int, unsigned *, int *);
    typedef int (*flags_fn)(int, unsigned);
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return; /* FFmpeg will say it cannot load the driver either */
    init_fn init = (init_fn)dlsym(lib, "cuInit");
    get_fn get = (get_fn)dlsym(lib, "cuDeviceGet");
    state_fn state = (state_fn)dlsym(lib, "cuDevicePrimaryCtxGetState");
    /* _v2 may change an active context's flags (CUDA >= 11). */
    flags_fn set = (flags_fn)dlsym(lib, "cuDevicePrimaryCtxSetFlags_v2");
    if (!set) set = (flags_fn)dlsym(lib, "cuDevicePrimaryCtxSetFlags");
    int dev = 0, active = 0, r = -1;
    unsigned flags = 0;
    if (init && get && state && set && init(0) == 0 && get(&dev, ordinal) == 0 &&
        state(dev, &flags, &active) == 0 && flags != CU_SCHED_BLOCKING_SYNC) {
        r = set(dev, CU_SCHED_BLOCKING_SYNC);
        log_debug("CUDA device %d primary context (%s, flags %#x) set to blocking sync for "
                  "FFmpeg: %s",
                  ordinal, active ? "active" : "inactive", flags, r == 0 ? "ok" : "failed");
    }
    dlclose(lib);
}

/* Why this video is decoded in software, or NULL when NVDEC can take it.
 * Makes the CUDA device on first need. */
static const char *why_software(struct trk_hwdec_ctx *h, const AVCodec *codec, int sw_fmt,
                                char *buf, size_t len)
{
    if (!h->cfg.device_frames) return h->cfg.why_not;
    if (!has_nvdec(codec)) {
        snprintf(buf, len, "FFmpeg has no NVDEC decoder for %s", codec->name);
        return buf;
    }
    if (!nv12_surfaces(sw_fmt)) {
        snprintf(buf, len,
                 "its %s frames would be %s surfaces; trackd takes NVDEC's 8-bit 4:2:0 (NV12) "
                 "only",
                 av_get_pix_fmt_name(sw_fmt) ?: "?",
                 av_pix_fmt_desc_get(sw_fmt) && av_pix_fmt_desc_get(sw_fmt)->comp[0].depth > 8
                     ? "P010/P016"
                     : "non-NV12");
        return buf;
    }
    if (!h->device) {
        /* The primary context: the CUDA runtime in the backend uses the
         * same one, so the surfaces' pointers are valid there. */
        AVDictionary *o = NULL;
        char dev[16];
        snprintf(dev, sizeof(dev), "%d", h->cfg.cuda_device);
        av_dict_set(&o, "primary_ctx", "1", 0);
        prepare_primary_context(h->cfg.cuda_device);
        int err = av_hwdevice_ctx_create(&h->device, AV_HWDEVICE_TYPE_CUDA, dev, o, 0);
        av_dict_free(&o);
        if (err < 0) {
            char e[128];
            av_strerror(err, e, sizeof(e));
            snprintf(buf, len, "FFmpeg cannot open CUDA device %d for decoding (%s)",
                     h->cfg.cuda_device, e);
            return buf;
        }
        ((AVHWDeviceContext *)h->device->data)->user_opaque = h; /* for get_format */
    }
    return NULL;
}

int trk_hwdec_attach(struct trk_hwdec_ctx *h, AVCodecContext *dec, const AVCodec *codec, int sw_fmt)
{
    char buf[300];
    const char *why = why_software(h, codec, sw_fmt, buf, sizeof(buf));
    h->active = why == NULL;
    if (why && h->cfg.mode == TRK_HWDEC_CUDA) {
        log_error("--hwdec cuda: %s cannot be decoded on the GPU: %s", h->what, why);
        return TRK_SOURCE_EHWDEC;
    }
    if (!h->said) {
        h->said = true;
        if (why)
            trk_log_write(h->cfg.no_gpu_said && why == h->cfg.why_not ? TRK_LOG_DEBUG
                                                                      : TRK_LOG_INFO,
                          LOG_TAG, 0, "%s: decoding %s in software: %s", h->what, codec->name, why);
        else
            log_info("%s: decoding %s on the GPU (NVDEC, CUDA device %d): frames stay in device "
                     "memory",
                     h->what, codec->name, h->cfg.cuda_device);
    }
    if (why) return 0;
    h->codec = codec->name;
    dec->get_format = get_format;
    dec->hw_device_ctx = av_buffer_ref(h->device);
    if (!dec->hw_device_ctx) return TRK_ENOMEM;
    /* Frames sit in the pool (and the snapshot) until their slot is
     * reused: surfaces for them beyond the decoder's own. */
    dec->extra_hw_frames = TRK_POOL_FRAMES + 2;
    /* One thread: NVDEC decodes; frame threads would only cost CPU. */
    dec->thread_count = 1;
    return 0;
}

/* A device frame's hold: a reference to FFmpeg's frame (its surface). */
struct hold {
    struct trk_frame_hold base;
    AVFrame *frame;
};

static void keep_memory(void *opaque, uint8_t *data)
{
    (void)opaque, (void)data;
}

static int hold_download(struct trk_frame_hold *b, const struct trk_image *dst)
{
    struct hold *h = (struct hold *)b;
    AVFrame *sw = av_frame_alloc();
    if (!sw) return TRK_ENOMEM;
    sw->format = AV_PIX_FMT_NV12;
    sw->width = h->frame->width;
    sw->height = h->frame->height;
    for (int p = 0; p < 2; p++) {
        sw->data[p] = (uint8_t *)dst->plane[p];
        sw->linesize[p] = (int)dst->pitch[p];
    }
    /* transfer_data allocates unless dst has a buffer: this one wraps
     * the frame's memory and frees nothing. */
    sw->buf[0] = av_buffer_create(sw->data[0], 1, keep_memory, NULL, 0);
    int err = TRK_ENOMEM;
    if (sw->buf[0] && (err = av_hwframe_transfer_data(sw, h->frame, 0)) < 0) {
        char e[128];
        av_strerror(err, e, sizeof(e));
        log_error("copying a decoded frame from the GPU failed: %s", e);
        err = TRK_EBACKEND;
    }
    av_frame_free(&sw);
    return err;
}

static void hold_release(struct trk_frame_hold *b)
{
    struct hold *h = (struct hold *)b;
    av_frame_free(&h->frame);
    free(h);
}

int trk_hwdec_export(struct trk_hwdec_ctx *h, AVFrame *av, AVFrame *sw, struct trk_frame *f,
                     enum trk_matrix matrix, bool full_range)
{
    (void)h;
    if (av->format != AV_PIX_FMT_CUDA) return 1;
    const AVHWFramesContext *fc =
        av->hw_frames_ctx ? (const AVHWFramesContext *)av->hw_frames_ctx->data : NULL;
    if (!fc || fc->sw_format != AV_PIX_FMT_NV12) {
        /* get_format keeps other surfaces away; should one come, it is
         * copied down and exported like a software frame. */
        av_frame_unref(sw);
        if (av_hwframe_transfer_data(sw, av, 0) < 0 || av_frame_copy_props(sw, av) < 0)
            return TRK_EBACKEND;
        return 2;
    }
    struct hold *ho = calloc(1, sizeof(*ho));
    if (!ho || !(ho->frame = av_frame_clone(av))) {
        free(ho);
        return TRK_ENOMEM;
    }
    ho->base.download = hold_download;
    ho->base.release = hold_release;
    struct trk_image img = { .plane = { av->data[0], av->data[1] },
                             .pitch = { (size_t)av->linesize[0], (size_t)av->linesize[1] },
                             .width = av->width,
                             .height = av->height,
                             .fmt = TRK_FMT_NV12,
                             .matrix = matrix,
                             .full_range = full_range,
                             .mem = TRK_MEM_CUDA };
    trk_frame_set_device(f, &img, &ho->base);
    return 0;
}
