/* Hardware decoding (--hwdec): libavcodec decoders with a CUDA hardware
 * device (NVDEC through FFmpeg's hwaccel, loaded from the driver at run
 * time), whose NV12 surfaces go to the CUDA backend as device images
 * (gpu/backend.h, TRK_MEM_CUDA) without a copy. Files, network streams and
 * MJPEG cameras use it; anything it cannot do is decoded in software, said
 * in one log line. */
#ifndef TRK_DAEMON_HWDEC_H
#define TRK_DAEMON_HWDEC_H

#include <stdbool.h>
#include <stddef.h>

#include "frame.h"

/* What --hwdec asks for. */
enum trk_hwdec {
    TRK_HWDEC_AUTO = 0, /* NVDEC when the backend is cuda and it can, else software */
    TRK_HWDEC_CUDA,     /* NVDEC or fail at start (exit 69)                           */
    TRK_HWDEC_NONE,     /* software decoding                                          */
};
/* "auto", "cuda", "none"; -1 if unknown. */
int trk_hwdec_parse(const char *s);

/* The decision made at start (daemon/main.c), before a source opens. */
struct trk_hwdec_cfg {
    enum trk_hwdec mode;
    /* The backend reads device images (CUDA, usable): NVDEC may be used.
     * False: software decoding, and why_not says why in the log line. */
    bool device_frames;
    /* why_not is that there is no usable GPU, which the backend's line says
     * (the CPU fallback): the decoder's line then goes to debug, so a
     * machine without a GPU gets one line about it. */
    bool no_gpu_said;
    int cuda_device;
    char why_not[200];
};

/* A source's read() error when --hwdec cuda cannot be honoured for its
 * video (the codec, the pixel format, the decoder device): logged; the
 * daemon exits 69 at start. Apart from TRK_SOURCE_* and TRK_E* codes. */
#define TRK_SOURCE_EHWDEC (-10102)

/* One decoder's hardware state: the CUDA device (kept over reopenings of
 * the decoder, e.g. a --loop that reopens the file) and the log-once
 * flags. Opaque; made by trk_hwdec_create. */
struct trk_hwdec_ctx;
struct AVCodecContext;
struct AVCodec;
struct AVFrame;

/* cfg is copied; what names the video in log lines ("clip.mp4",
 * "/dev/video0"). NULL when out of memory. */
struct trk_hwdec_ctx *trk_hwdec_create(const struct trk_hwdec_cfg *cfg, const char *what);
void trk_hwdec_destroy(struct trk_hwdec_ctx **h);

/* Before avcodec_open2 of dec (codec's context): sets it up for NVDEC when
 * the configuration, the codec and sw_fmt (the stream's pixel format as
 * demuxing found it, AV_PIX_FMT_NONE when unknown) allow; else leaves it
 * for software. The first call logs the one line saying which and why.
 * 0, or TRK_SOURCE_EHWDEC (logged) when --hwdec cuda cannot be had. */
int trk_hwdec_attach(struct trk_hwdec_ctx *h, struct AVCodecContext *dec,
                     const struct AVCodec *codec, int sw_fmt);

/* Whether the last attach chose NVDEC. */
bool trk_hwdec_active(const struct trk_hwdec_ctx *h);

/* A decoded frame: an NVDEC frame becomes f's device image (NV12, mem
 * TRK_MEM_CUDA), referenced until f is refilled or freed; returns 0. 1
 * when av is a software frame (the caller copies it as before). An NVDEC
 * frame whose surface is not NV12 is copied down into sw (returns 2: the
 * caller exports sw instead). Negative on failure. */
int trk_hwdec_export(struct trk_hwdec_ctx *h, struct AVFrame *av, struct AVFrame *sw,
                     struct trk_frame *f, enum trk_matrix matrix, bool full_range);

#endif
