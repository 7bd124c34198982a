/* File source: libavformat demuxing and libavcodec decoding with the
 * send_packet / receive_frame loop (flushed at the end of the file). Frames
 * keep their native pixel format when a backend takes it; the rest go through
 * swscale to RGB24. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

#define LOG_TAG "file"
#include "hostpool.h"
#include "hwdec.h"
#include "log.h"
#include "source.h"

struct file_src {
    struct trk_file_cfg cfg;
    char *path;
    AVFormatContext *fmt;
    AVCodecContext *dec;
    AVPacket *pkt;
    AVFrame *frame;
    struct SwsContext *sws;
    int stream;
    bool draining; /* sent the flush packet, receiving what is left */
    double time_base;
    double loop_offset; /* added to pts after each loop, keeps pts increasing */
    double last_pts, frame_dur;
    struct trk_source *info; /* the trk_source this fills (its error text) */
    /* Since open or the last rewind: frames decoded, packets of our stream
     * read, and packets or frames the decoder rejected (damage). */
    uint64_t pass_frames, pass_packets, pass_rejected;
    /* Frames handed on since open, across --loop passes: trk_frame.src_index. */
    uint64_t handed;
    uint32_t pass; /* --loop passes begun since open, 0 the first */
    /* The key frames reading has passed, in frame-number order: where
     * trk_source_file_seek can start decoding again (kept across close and
     * open: the same file gives the same frames). seeking: the next frame
     * decoded must be a key frame of the index, which says its number. */
    struct key_point *keys;
    size_t n_keys, cap_keys;
    bool seeking;
    uint64_t seek_limit;
    char last_reject[128]; /* FFmpeg's text for the last rejection */
    /* The decoder's frame buffers in the backend's host memory (pinned on
     * CUDA); kept across reopens, frames still held keep theirs. */
    struct trk_hostpool *hostpool;
    /* --hwdec: NULL = software only; sw receives an NVDEC frame that has
     * to be copied down (trk_hwdec_export). */
    struct trk_hwdec_ctx *hw;
    AVFrame *sw;
};

/* A frame that decodes by itself (the decoder's key frame: intra, IDR)
 * and what the reading state was just before it. */
struct key_point {
    uint64_t n;         /* its src_index                          */
    int64_t pts;        /* its pts in the stream's time base      */
    double loop_offset; /* the pass's, and last_pts before it      */
    double last_pts;
    uint64_t pass_frames; /* frames of its pass before it          */
    uint32_t pass;
};

/* Key frames indexed at most: 12 MB, an all-intra file (MJPEG) of 2.4
 * hours at 30 fps; past it, seeks start at the last one indexed. */
#define MAX_KEYS (1u << 18)

static void close_all(struct file_src *s)
{
    sws_freeContext(s->sws);
    s->sws = NULL;
    av_frame_free(&s->frame);
    av_packet_free(&s->pkt);
    avcodec_free_context(&s->dec);
    avformat_close_input(&s->fmt);
}

/* The one line for a file that opens but is no video we can decode. */
static int not_video(struct file_src *s, const char *why)
{
    log_error("cannot open %s: not a video file FFmpeg can read (%s)", s->path, why);
    close_all(s);
    return TRK_SOURCE_ENOTVIDEO;
}

/* Opens the file and its decoder, filling info (desc, size, rate). */
static int open_input(struct file_src *s, struct trk_source *info)
{
    char e[128];
    int err = avformat_open_input(&s->fmt, s->path, NULL, NULL);
    if (err < 0) {
        av_strerror(err, e, sizeof(e));
        /* errno values (missing, unreadable) are the caller's to report. */
        if (err > -4096) return err;
        return not_video(s, e);
    }
    /* FFmpeg renders any .txt as ANSI art ("tty"): text is never a clip. */
    if (!strcmp(s->fmt->iformat->name, "tty")) return not_video(s, "it is text");
    if ((err = avformat_find_stream_info(s->fmt, NULL)) < 0) {
        av_strerror(err, e, sizeof(e));
        return not_video(s, e);
    }
    const AVCodec *codec = NULL;
    s->stream = av_find_best_stream(s->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
    if (s->stream == AVERROR_STREAM_NOT_FOUND) return not_video(s, "it has no video stream");
    if (s->stream == AVERROR_DECODER_NOT_FOUND)
        return not_video(s, "FFmpeg has no decoder for its video");
    if (s->stream < 0) {
        err = s->stream;
        goto fail;
    }
    AVStream *st = s->fmt->streams[s->stream];
    s->dec = avcodec_alloc_context3(codec);
    if (!s->dec) {
        err = AVERROR(ENOMEM);
        goto fail;
    }
    if ((err = avcodec_parameters_to_context(s->dec, st->codecpar)) < 0) goto fail;
    trk_hostpool_attach(s->hostpool, s->dec);
    s->dec->thread_count = 0; /* let FFmpeg pick: decoding runs beside tracking */
    if (s->hw && (err = trk_hwdec_attach(s->hw, s->dec, codec, st->codecpar->format)) < 0) {
        close_all(s);
        return err; /* said why */
    }
    if ((err = avcodec_open2(s->dec, codec, NULL)) < 0) goto fail;
    s->pkt = av_packet_alloc();
    s->frame = av_frame_alloc();
    if (!s->pkt || !s->frame) {
        err = AVERROR(ENOMEM);
        goto fail;
    }
    s->time_base = av_q2d(st->time_base);
    AVRational fr = st->avg_frame_rate.num ? st->avg_frame_rate : st->r_frame_rate;
    info->fps = fr.num && fr.den ? av_q2d(fr) : 0;
    s->frame_dur = info->fps > 0 ? 1.0 / info->fps : 1.0 / 30;
    info->width = s->dec->width;
    info->height = s->dec->height;
    if (info->width <= 0 || info->height <= 0)
        return not_video(s, "FFmpeg cannot tell its frame size: no frame of it decodes");
    snprintf(info->desc, sizeof(info->desc), "file %s (%s %dx%d %.2f fps)", s->path, codec->name,
             info->width, info->height, info->fps);
    s->draining = false;
    s->loop_offset = 0;
    s->last_pts = -1;
    s->pass_frames = s->pass_packets = s->pass_rejected = 0;
    return 0;
fail:
    close_all(s);
    /* errno values (no memory) are the caller's to report; FFmpeg's own
     * codes mean the video cannot be decoded, said here in its words. */
    if (err > -4096) return err;
    av_strerror(err, e, sizeof(e));
    log_error("cannot open %s: its video cannot be decoded (%s)", s->path, e);
    return TRK_SOURCE_ENOTVIDEO;
}

static int file_open(void *self, struct trk_source *info)
{
    struct file_src *s = self;
    s->info = info;
    info->error[0] = 0;
    s->handed = 0;
    s->pass = 0;
    s->seeking = false;
    return open_input(s, info);
}

/* A read that cannot go on: logs why once, in FFmpeg's words, keeps it for
 * the pipeline's status message, and returns TRK_SOURCE_EDECODE. */
static int decode_failed(struct file_src *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int decode_failed(struct file_src *s, const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    log_error("%s: %s", s->path, why);
    if (s->info) snprintf(s->info->error, sizeof(s->info->error), "%s", why);
    return TRK_SOURCE_EDECODE;
}

/* The end of a pass through the file: a pass where nothing decoded is an
 * error (the file is damaged or not what its header says; with --loop it
 * would spin for ever), a pass with rejected packets is worth a warning. */
static int end_of_pass(struct file_src *s)
{
    if (s->pass_frames == 0)
        return decode_failed(s,
                             "no frame could be decoded: the %s decoder gave none for the %llu "
                             "video packets read (%llu rejected%s%s)",
                             s->dec->codec->name, (unsigned long long)s->pass_packets,
                             (unsigned long long)s->pass_rejected, s->pass_rejected ? ": " : "",
                             s->last_reject);
    /* Counted as packets that gave no frame: frame-threaded decoders do
     * not report every rejection, the drained decoder's balance is exact. */
    if (s->pass_rejected && s->pass_packets > s->pass_frames)
        log_warn("%s: %llu of %llu video packets could not be decoded and were skipped (%s); "
                 "%llu frames were",
                 s->path, (unsigned long long)(s->pass_packets - s->pass_frames),
                 (unsigned long long)s->pass_packets, s->last_reject,
                 (unsigned long long)s->pass_frames);
    s->pass_frames = s->pass_packets = s->pass_rejected = 0;
    return 0;
}

/* A packet or frame the decoder rejects as damaged is skipped and counted. */
static void rejected(struct file_src *s, int err)
{
    s->pass_rejected++;
    av_strerror(err, s->last_reject, sizeof(s->last_reject));
}

static enum trk_pixfmt native_format(enum AVPixelFormat f, bool *full_range)
{
    switch (f) {
    case AV_PIX_FMT_YUVJ420P: *full_range = true; return TRK_FMT_I420;
    case AV_PIX_FMT_YUV420P: return TRK_FMT_I420;
    case AV_PIX_FMT_NV12: return TRK_FMT_NV12;
    case AV_PIX_FMT_YUYV422: return TRK_FMT_YUYV;
    case AV_PIX_FMT_RGB24: return TRK_FMT_RGB24;
    case AV_PIX_FMT_BGR24: return TRK_FMT_BGR24;
    case AV_PIX_FMT_RGBA:
    case AV_PIX_FMT_RGB0: return TRK_FMT_RGBA;
    case AV_PIX_FMT_BGRA:
    case AV_PIX_FMT_BGR0: return TRK_FMT_BGRA;
    default: return TRK_FMT_COUNT;
    }
}

static void unhold_avframe(void *hold)
{
    AVFrame *av = hold;
    av_frame_free(&av);
}

/* The decoded frame, in a format the backends take, goes to f as it is: f
 * keeps a reference to the decoder's buffer (pinned when it came from the
 * host pool) until the frame is reused, instead of a copy. */
static int hold_decoded(struct file_src *s, struct trk_frame *f, enum trk_pixfmt fmt)
{
    AVFrame *keep = av_frame_alloc();
    if (!keep) return TRK_ENOMEM;
    av_frame_move_ref(keep, s->frame);
    trk_frame_keep(f, keep, unhold_avframe);
    memset(&f->img, 0, sizeof(f->img));
    struct trk_plane_layout L;
    int err = trk_image_plane_layout(fmt, keep->width, keep->height, &L);
    if (err) return err;
    for (int p = 0; p < L.planes; p++) {
        if (keep->linesize[p] < (int)L.row_bytes[p]) return TRK_EINVAL; /* flipped or odd */
        f->img.plane[p] = keep->data[p];
        f->img.pitch[p] = (size_t)keep->linesize[p];
    }
    f->img.width = keep->width;
    f->img.height = keep->height;
    f->img.fmt = fmt;
    return 0;
}

/* Converts the decoded AVFrame into f, or hands it over as it is. */
static int export_frame(struct file_src *s, struct trk_frame *f)
{
    AVFrame *av = s->frame;
    bool full = av->color_range == AVCOL_RANGE_JPEG;
    enum trk_pixfmt fmt = native_format((enum AVPixelFormat)av->format, &full);
    /* Unspecified matrix: BT.709 for HD, BT.601 for SD (what players do). */
    enum trk_matrix matrix = av->colorspace == AVCOL_SPC_BT709 ? TRK_MATRIX_BT709
                             : av->colorspace == AVCOL_SPC_UNSPECIFIED && av->height >= 720
                                 ? TRK_MATRIX_BT709
                                 : TRK_MATRIX_BT601;
    if (fmt == TRK_FMT_COUNT) {
        /* Anything else: swscale to RGB24 (then full-range BT.601 for ycbcr). */
        s->sws = sws_getCachedContext(s->sws, av->width, av->height, (enum AVPixelFormat)av->format,
                                      av->width, av->height, AV_PIX_FMT_RGB24, SWS_POINT, NULL,
                                      NULL, NULL);
        if (!s->sws)
            return decode_failed(s, "FFmpeg cannot convert its %s frames to RGB",
                                 av_get_pix_fmt_name((enum AVPixelFormat)av->format));
        int err = trk_frame_layout(f, TRK_FMT_RGB24, av->width, av->height, 64);
        if (err) return err;
        uint8_t *dst[4] = { (uint8_t *)f->img.plane[0], NULL, NULL, NULL };
        int dst_ls[4] = { (int)f->img.pitch[0], 0, 0, 0 };
        sws_scale(s->sws, (const uint8_t *const *)av->data, av->linesize, 0, av->height, dst,
                  dst_ls);
        f->img.matrix = TRK_MATRIX_BT601;
        f->img.full_range = true;
        return 0;
    }
    int err = hold_decoded(s, f, fmt);
    if (err) return err;
    f->img.matrix = matrix;
    f->img.full_range = full;
    return 0;
}

/* The decoded frame into f: an NVDEC frame (--hwdec) as a device image,
 * kept referenced by f, no copy; anything else through export_frame. */
static int export_decoded(struct file_src *s, struct trk_frame *f)
{
    AVFrame *av = s->frame;
    if (!s->hw || av->format != AV_PIX_FMT_CUDA) return export_frame(s, f);
    if (!s->sw && !(s->sw = av_frame_alloc())) return TRK_ENOMEM;
    /* export_frame's matrix rule: BT.709 when said or HD and unsaid. */
    enum trk_matrix m = av->colorspace == AVCOL_SPC_BT709 ? TRK_MATRIX_BT709
                        : av->colorspace == AVCOL_SPC_UNSPECIFIED && av->height >= 720
                            ? TRK_MATRIX_BT709
                            : TRK_MATRIX_BT601;
    int r = trk_hwdec_export(s->hw, av, s->sw, f, m, av->color_range == AVCOL_RANGE_JPEG);
    if (r < 0)
        return decode_failed(s, "a frame decoded on the GPU cannot be handed on: %s",
                             trk_strerror(r));
    if (r == 2) { /* copied down: exported as a software frame */
        av_frame_unref(s->frame);
        av_frame_move_ref(s->frame, s->sw);
        return export_frame(s, f);
    }
    return 0;
}

/* --loop: back to the first frame. Formats that cannot seek (raw H.264
 * and other elementary streams: EPERM) are closed and opened again. */
static int rewind_file(struct file_src *s)
{
    int err = av_seek_frame(s->fmt, s->stream, 0, AVSEEK_FLAG_BACKWARD);
    if (err < 0) err = avformat_seek_file(s->fmt, -1, INT64_MIN, 0, 0, 0);
    double next = s->last_pts + s->frame_dur;
    if (err < 0) {
        char e[128];
        av_strerror(err, e, sizeof(e));
        log_debug("%s cannot seek (%s): opening it again to loop", s->path, e);
        close_all(s);
        struct trk_source scratch = { 0 }; /* the first open's desc and size stay */
        if ((err = open_input(s, &scratch)) < 0)
            return err == TRK_SOURCE_ENOTVIDEO
                       ? decode_failed(s, "cannot open it again to loop (see above)")
                       : err;
    } else {
        avcodec_flush_buffers(s->dec);
    }
    s->draining = false;
    s->loop_offset = next;
    s->last_pts = next - s->frame_dur;
    s->pass++;
    return 0;
}

static bool is_key(const AVFrame *av)
{
#ifdef AV_FRAME_FLAG_KEY
    return av->flags & AV_FRAME_FLAG_KEY;
#else
    return av->key_frame;
#endif
}

/* The reading state just before key frame k, as reading forward had it. */
static void restore(struct file_src *s, const struct key_point *k)
{
    s->handed = k->n;
    s->pass = k->pass;
    s->loop_offset = k->loop_offset;
    s->last_pts = k->last_pts;
    /* For end_of_pass: the frames before it, none rejected since. */
    s->pass_frames = s->pass_packets = k->pass_frames;
    s->pass_rejected = 0;
}

/* Whether the frame just decoded can start a seek: a key frame with its
 * own pts (the one the demuxer seeks to). */
static bool seekable_key(const AVFrame *av)
{
    return is_key(av) && av->pts != AV_NOPTS_VALUE && av->best_effort_timestamp == av->pts;
}

/* Key frame pts, about to be handed on as frame s->handed: indexed when
 * it is past the last one indexed. Out of memory: not indexed (a seek
 * starts further back). */
static void note_key(struct file_src *s, int64_t pts)
{
    if ((s->n_keys && s->keys[s->n_keys - 1].n >= s->handed) || s->n_keys == MAX_KEYS) return;
    if (s->n_keys == s->cap_keys) {
        size_t cap = s->cap_keys ? 2 * s->cap_keys : 64;
        struct key_point *k = realloc(s->keys, cap * sizeof(*k));
        if (!k) return;
        s->keys = k;
        s->cap_keys = cap;
    }
    s->keys[s->n_keys++] = (struct key_point){ .n = s->handed,
                                               .pts = pts,
                                               .loop_offset = s->loop_offset,
                                               .last_pts = s->last_pts,
                                               .pass_frames = s->pass_frames,
                                               .pass = s->pass };
}

/* The first frame decoded after a seek: a key frame of the index in the
 * pass sought, at or before the frame sought (the demuxer may land on an
 * earlier one than asked), whose state is taken. false: it landed
 * elsewhere (or the decoder gave a frame before the key frame first). */
static bool seek_landed(struct file_src *s)
{
    const AVFrame *av = s->frame;
    s->seeking = false;
    if (!seekable_key(av)) return false;
    for (size_t i = s->n_keys; i-- > 0;) {
        const struct key_point *k = &s->keys[i];
        if (k->n > s->seek_limit || k->pass != s->pass) continue;
        if (k->pts != av->pts) continue;
        restore(s, k);
        return true;
    }
    return false;
}

static int file_read(void *self, struct trk_frame *f)
{
    struct file_src *s = self;
    trk_hostpool_set_mem(s->hostpool, s->info ? s->info->host_mem : NULL);
    for (;;) {
        int err = avcodec_receive_frame(s->dec, s->frame);
        if (err == 0 && s->seeking && !seek_landed(s)) {
            av_frame_unref(s->frame);
            return TRK_SOURCE_ESEEK;
        }
        if (err == 0) {
            int64_t ts = s->frame->best_effort_timestamp;
            const bool key = seekable_key(s->frame);
            double pts = ts == AV_NOPTS_VALUE ? s->last_pts + s->frame_dur : ts * s->time_base;
            if (ts != AV_NOPTS_VALUE) {
                int64_t start = s->fmt->streams[s->stream]->start_time;
                if (start != AV_NOPTS_VALUE) pts -= start * s->time_base;
                pts += s->loop_offset;
            }
            err = export_decoded(s, f);
            av_frame_unref(s->frame);
            if (err) return err;
            if (key && s->cfg.seekable) note_key(s, ts);
            f->pts = pts;
            f->packet_len = 0;
            f->src_index = s->handed++;
            s->last_pts = pts;
            s->pass_frames++;
            return 0;
        }
        if (err == AVERROR_INVALIDDATA) { /* a damaged frame (frame threads report it here) */
            rejected(s, err);
            continue;
        }
        if (err == AVERROR_EOF || (err == AVERROR(EAGAIN) && s->draining)) {
            if ((err = end_of_pass(s))) return err;
            if (!s->cfg.loop) return TRK_SOURCE_EOF;
            if ((err = rewind_file(s)) < 0) return err;
            continue;
        }
        if (err != AVERROR(EAGAIN)) {
            if (err > -4096) return err;
            char e[128];
            av_strerror(err, e, sizeof(e));
            return decode_failed(s, "decoding failed after %llu frames: %s",
                                 (unsigned long long)s->pass_frames, e);
        }
        /* The decoder wants input: feed it the next packet of our stream. */
        err = av_read_frame(s->fmt, s->pkt);
        if (err == AVERROR_EOF) {
            s->draining = true;
            avcodec_send_packet(s->dec, NULL); /* flush: receive the rest */
            continue;
        }
        if (err < 0 && err > -4096) return err; /* the disk: EIO and such */
        if (err < 0) {
            char e[128];
            av_strerror(err, e, sizeof(e));
            return decode_failed(s, "reading it failed after %llu frames: %s",
                                 (unsigned long long)s->pass_frames, e);
        }
        if (s->pkt->stream_index == s->stream) {
            s->pass_packets++;
            err = avcodec_send_packet(s->dec, s->pkt);
            if (err == AVERROR_INVALIDDATA) {
                rejected(s, err);
            } else if (err < 0 && err != AVERROR(EAGAIN)) {
                av_packet_unref(s->pkt);
                if (err > -4096) return err;
                char e[128];
                av_strerror(err, e, sizeof(e));
                return decode_failed(s, "decoding failed after %llu frames: %s",
                                     (unsigned long long)s->pass_frames, e);
            }
        }
        av_packet_unref(s->pkt);
    }
}

static void file_close(void *self)
{
    close_all(self);
}

static void file_destroy(void *self)
{
    struct file_src *s = self;
    close_all(s);
    trk_hostpool_destroy(&s->hostpool);
    trk_hwdec_destroy(&s->hw);
    av_frame_free(&s->sw);
    free(s->keys);
    free(s->path);
    free(s);
}

static const struct trk_source_ops file_ops = {
    .kind = "file",
    .open = file_open,
    .read = file_read,
    .close = file_close,
    .destroy = file_destroy,
};

int trk_source_file_create(const struct trk_file_cfg *cfg, struct trk_source *out)
{
    struct file_src *s = calloc(1, sizeof(*s));
    if (!s || !(s->path = strdup(cfg->path)) || trk_hostpool_create(&s->hostpool)) {
        if (s) free(s->path);
        free(s);
        return TRK_ENOMEM;
    }
    s->cfg = *cfg;
    s->cfg.path = s->path;
    if (cfg->hwdec && !(s->hw = trk_hwdec_create(cfg->hwdec, s->path))) {
        free(s->path);
        free(s);
        return TRK_ENOMEM;
    }
    s->cfg.hwdec = NULL; /* s->hw has it */
    av_log_set_level(AV_LOG_ERROR);
    memset(out, 0, sizeof(*out));
    out->ops = &file_ops;
    out->self = s;
    return 0;
}

int trk_source_file_seek(struct trk_source *src, uint64_t n, uint64_t *next)
{
    if (src->ops != &file_ops) return -EINVAL;
    struct file_src *s = src->self;
    if (!s->fmt) return -EBADF;
    /* The last key frame at or before n. */
    size_t lo = 0, hi = s->n_keys;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->keys[mid].n <= n)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo) return -ENOENT;
    const struct key_point *k = &s->keys[lo - 1];
    if (!s->seeking && s->handed >= k->n && s->handed <= n) { /* reading on is as near */
        *next = s->handed;
        return 0;
    }
    int err = av_seek_frame(s->fmt, s->stream, k->pts, AVSEEK_FLAG_BACKWARD);
    if (err < 0) return err > -4096 ? err : -ESPIPE;
    avcodec_flush_buffers(s->dec);
    s->draining = false;
    restore(s, k);
    s->seeking = true;
    s->seek_limit = n;
    *next = k->n;
    return 0;
}
