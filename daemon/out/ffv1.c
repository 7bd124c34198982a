#include "ffv1.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>

#include "trk_error.h"

/* Where byte j of a packed group goes: plane, and sample off + step * group
 * of that plane's row. */
struct bytemap {
    int8_t plane, off, step;
};

/* A format's planar twin for FFV1: the FFmpeg format, the width it is coded
 * at, and (packed formats, NV12's chroma plane) the bytes of one group and
 * where each goes. */
struct twin {
    enum AVPixelFormat av;
    int n; /* bytes per group of the packed plane; 0: planar */
    struct bytemap m[4];
    bool nv12; /* plane 0 as it is, the map for plane 1     */
};

static int twin_of(enum trk_pixfmt fmt, int width, struct twin *t, int *coded_width)
{
    *coded_width = width;
    switch (fmt) {
    /* This FFmpeg's FFV1 codes 8-bit RGB as packed B,G,R,X or B,G,R,A. */
    case TRK_FMT_RGB24:
        *t = (struct twin){ AV_PIX_FMT_BGR0, 3, { { 0, 2, 4 }, { 0, 1, 4 }, { 0, 0, 4 } }, false };
        return 0;
    case TRK_FMT_BGR24:
        *t = (struct twin){ AV_PIX_FMT_BGR0, 3, { { 0, 0, 4 }, { 0, 1, 4 }, { 0, 2, 4 } }, false };
        return 0;
    case TRK_FMT_RGBA:
        *t = (struct twin){
            AV_PIX_FMT_BGRA, 4, { { 0, 2, 4 }, { 0, 1, 4 }, { 0, 0, 4 }, { 0, 3, 4 } }, false
        };
        return 0;
    case TRK_FMT_BGRA:
        *t = (struct twin){
            AV_PIX_FMT_BGRA, 4, { { 0, 0, 4 }, { 0, 1, 4 }, { 0, 2, 4 }, { 0, 3, 4 } }, false
        };
        return 0;
    case TRK_FMT_YUYV:
        /* Every luma sample of a row, the odd width's last one included. */
        *coded_width = 2 * ((width + 1) / 2);
        *t = (struct twin){
            AV_PIX_FMT_YUV422P, 4, { { 0, 0, 2 }, { 1, 0, 1 }, { 0, 1, 2 }, { 2, 0, 1 } }, false
        };
        return 0;
    case TRK_FMT_NV12:
        *t = (struct twin){ AV_PIX_FMT_YUV420P, 2, { { 1, 0, 1 }, { 2, 0, 1 } }, true };
        return 0;
    case TRK_FMT_I420:
        *t = (struct twin){ AV_PIX_FMT_YUV420P, 0, { { 0, 0, 0 } }, false };
        return 0;
    default: return TRK_EINVAL;
    }
}

/* Moves one packed plane (rows of groups x n bytes at b) to or from fr's
 * planes, by the map. */
static void move_packed(AVFrame *fr, uint8_t *b, int rows, int groups, const struct twin *t,
                        bool into_frame)
{
    const size_t row_bytes = (size_t)groups * (size_t)t->n;
    for (int y = 0; y < rows; y++, b += row_bytes)
        for (int j = 0; j < t->n; j++) {
            const struct bytemap m = t->m[j];
            uint8_t *p = fr->data[m.plane] + (size_t)y * (size_t)fr->linesize[m.plane] + m.off;
            const uint8_t *end = b + row_bytes;
            if (into_frame)
                for (const uint8_t *s = b + j; s < end; s += t->n, p += m.step)
                    *p = *s;
            else
                for (uint8_t *d = b + j; d < end; d += t->n, p += m.step)
                    *d = *p;
        }
}

/* Moves a plane's rows as they are. */
static void move_plane(AVFrame *fr, int plane, uint8_t *b, size_t row_bytes, int rows,
                       bool into_frame)
{
    for (int y = 0; y < rows; y++, b += row_bytes) {
        uint8_t *p = fr->data[plane] + (size_t)y * (size_t)fr->linesize[plane];
        if (into_frame)
            memcpy(p, b, row_bytes);
        else
            memcpy(b, p, row_bytes);
    }
}

/* The bundle's bytes of one frame to or from its planar twin fr. */
static void move_frame(AVFrame *fr, const struct twin *t, enum trk_pixfmt fmt, int width,
                       int height, uint8_t *b, bool into_frame)
{
    struct trk_plane_layout L;
    trk_image_plane_layout(fmt, width, height, &L);
    if (t->n && !t->nv12) {
        move_packed(fr, b, L.rows[0], (int)(L.row_bytes[0] / (size_t)t->n), t, into_frame);
        return;
    }
    move_plane(fr, 0, b, L.row_bytes[0], L.rows[0], into_frame);
    b += L.row_bytes[0] * (size_t)L.rows[0];
    if (t->nv12) {
        move_packed(fr, b, L.rows[1], (int)(L.row_bytes[1] / 2), t, into_frame);
        return;
    }
    for (int p = 1; p < L.planes; p++) {
        move_plane(fr, p, b, L.row_bytes[p], L.rows[p], into_frame);
        b += L.row_bytes[p] * (size_t)L.rows[p];
    }
}

static int av_fail(int err, const char *what, char *why, size_t why_len)
{
    char text[AV_ERROR_MAX_STRING_SIZE] = "";
    av_strerror(err, text, sizeof(text));
    snprintf(why, why_len, "%s: %s", what, text);
    /* FFmpeg's errors are AVERROR(errno) where there is one. */
    return err < 0 && err > -4096 ? err : TRK_EINVAL;
}

/* ------------------------------------------------------------- writing */

struct trk_ffv1_out {
    AVFormatContext *oc;
    AVCodecContext *enc;
    AVStream *st;
    AVFrame *fr;
    AVPacket *pkt;
    struct twin t;
    enum trk_pixfmt fmt;
    int width, height;
    int64_t next_pts;
    bool header;
};

int trk_ffv1_out_open(const char *path, enum trk_pixfmt fmt, int width, int height, double fps,
                      struct trk_ffv1_out **out, char *why, size_t why_len)
{
    *out = NULL;
    struct trk_ffv1_out *w = calloc(1, sizeof(*w));
    int coded_w, err = 0;
    if (!w) return TRK_ENOMEM;
    w->fmt = fmt, w->width = width, w->height = height;
    if (twin_of(fmt, width, &w->t, &coded_w)) {
        free(w);
        snprintf(why, why_len, "no lossless FFV1 form for %s", trk_pixfmt_name(fmt));
        return TRK_EINVAL;
    }
    const AVCodec *codec = avcodec_find_encoder(AV_CODEC_ID_FFV1);
    const int rate = fps >= 1 && fps <= 1000 ? (int)(fps + 0.5) : 30;
    if (!codec) {
        snprintf(why, why_len, "this FFmpeg has no FFV1 encoder");
        err = TRK_ENODEV;
    } else if ((err = avformat_alloc_output_context2(&w->oc, NULL, "matroska", path)) < 0) {
        err = av_fail(err, "cannot make a Matroska muxer", why, why_len);
    } else if (!(w->enc = avcodec_alloc_context3(codec)) || !(w->fr = av_frame_alloc()) ||
               !(w->pkt = av_packet_alloc()) || !(w->st = avformat_new_stream(w->oc, NULL))) {
        err = TRK_ENOMEM;
        snprintf(why, why_len, "out of memory");
    }
    if (!err) {
        w->enc->width = coded_w;
        w->enc->height = height;
        w->enc->pix_fmt = w->t.av;
        w->enc->time_base = (AVRational){ 1, rate };
        w->enc->gop_size = 1;
        w->enc->level = 3;
        /* Two slice threads: the 2-core machine's writer keeps up at 720p30 */
        w->enc->thread_count = 2;
        w->enc->thread_type = FF_THREAD_SLICE;
        if (w->oc->oformat->flags & AVFMT_GLOBALHEADER)
            w->enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
        av_opt_set_int(w->enc->priv_data, "slicecrc", 1, 0);
        av_opt_set_int(w->enc->priv_data, "slices", 4, 0);
        if ((err = avcodec_open2(w->enc, codec, NULL)) < 0)
            err = av_fail(err, "cannot open the FFV1 encoder", why, why_len);
    }
    if (!err && (err = avcodec_parameters_from_context(w->st->codecpar, w->enc)) < 0)
        err = av_fail(err, "cannot describe the stream", why, why_len);
    if (!err) {
        w->st->time_base = w->enc->time_base;
        w->fr->format = w->t.av;
        w->fr->width = coded_w;
        w->fr->height = height;
        if ((err = av_frame_get_buffer(w->fr, 0)) < 0)
            err = av_fail(err, "out of memory", why, why_len);
        else if (w->t.av == AV_PIX_FMT_BGR0) /* the X bytes, never written */
            memset(w->fr->data[0], 0, (size_t)w->fr->linesize[0] * (size_t)height);
    }
    if (!err && (err = avio_open(&w->oc->pb, path, AVIO_FLAG_WRITE)) < 0)
        err = av_fail(err, path, why, why_len);
    if (!err && (err = avformat_write_header(w->oc, NULL)) < 0)
        err = av_fail(err, "cannot write the Matroska header", why, why_len);
    if (err) {
        trk_ffv1_out_close(&w);
        return err;
    }
    w->header = true;
    *out = w;
    return 0;
}

bool trk_ffv1_out_fits(const struct trk_ffv1_out *w, enum trk_pixfmt fmt, int width, int height)
{
    return w && w->fmt == fmt && w->width == width && w->height == height;
}

int trk_ffv1_out_put(struct trk_ffv1_out *w, const uint8_t *frame, uint64_t *offset,
                     uint64_t *bytes, char *why, size_t why_len)
{
    int err = av_frame_make_writable(w->fr);
    if (err < 0) return av_fail(err, "out of memory", why, why_len);
    move_frame(w->fr, &w->t, w->fmt, w->width, w->height, (uint8_t *)frame, true);
    w->fr->pts = w->next_pts++;
    const int64_t before = avio_tell(w->oc->pb);
    if ((err = avcodec_send_frame(w->enc, w->fr)) < 0)
        return av_fail(err, "encoding a frame failed", why, why_len);
    /* FFV1 is intra only and has no delay: one packet per frame, now. */
    if ((err = avcodec_receive_packet(w->enc, w->pkt)) < 0)
        return av_fail(err, "the FFV1 encoder gave no packet", why, why_len);
    av_packet_rescale_ts(w->pkt, w->enc->time_base, w->st->time_base);
    w->pkt->stream_index = w->st->index;
    err = av_write_frame(w->oc, w->pkt);
    av_packet_unref(w->pkt);
    /* Out of the muxer's cluster and onto the disk now: the index line
     * that follows must name a frame that is there (a cluster a frame). */
    if (err >= 0) err = av_write_frame(w->oc, NULL);
    if (err >= 0) avio_flush(w->oc->pb);
    if (err >= 0 && w->oc->pb->error < 0) err = w->oc->pb->error;
    if (err < 0) return av_fail(err, "writing the packet failed", why, why_len);
    *offset = (uint64_t)before;
    *bytes = (uint64_t)(avio_tell(w->oc->pb) - before);
    return 0;
}

int trk_ffv1_out_close(struct trk_ffv1_out **wp)
{
    struct trk_ffv1_out *w = *wp;
    int err = 0;
    if (!w) return 0;
    if (w->header && (err = av_write_trailer(w->oc)) > 0) err = 0;
    if (w->oc && w->oc->pb && avio_closep(&w->oc->pb) < 0 && !err) err = -EIO;
    avformat_free_context(w->oc);
    avcodec_free_context(&w->enc);
    av_frame_free(&w->fr);
    av_packet_free(&w->pkt);
    free(w);
    *wp = NULL;
    return err;
}

/* ------------------------------------------------------------- reading */

struct trk_ffv1_in {
    AVFormatContext *ic;
    AVCodecContext *dec;
    AVFrame *fr;
    AVPacket *pkt;
    int stream;
    bool flushed;
};

int trk_ffv1_in_open(const char *path, struct trk_ffv1_in **out, char *why, size_t why_len)
{
    *out = NULL;
    struct trk_ffv1_in *r = calloc(1, sizeof(*r));
    if (!r) return TRK_ENOMEM;
    int err = avformat_open_input(&r->ic, path, NULL, NULL);
    if (err < 0) {
        err = av_fail(err, path, why, why_len);
    } else if ((err = avformat_find_stream_info(r->ic, NULL)) < 0) {
        err = av_fail(err, path, why, why_len);
    } else {
        r->stream = av_find_best_stream(r->ic, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
        const AVCodec *codec = avcodec_find_decoder(AV_CODEC_ID_FFV1);
        if (r->stream < 0 || r->ic->streams[r->stream]->codecpar->codec_id != AV_CODEC_ID_FFV1 ||
            !codec) {
            snprintf(why, why_len, "%s: not a Matroska file with an FFV1 stream", path);
            err = TRK_EINVAL;
        } else if (!(r->dec = avcodec_alloc_context3(codec)) || !(r->fr = av_frame_alloc()) ||
                   !(r->pkt = av_packet_alloc())) {
            snprintf(why, why_len, "out of memory");
            err = TRK_ENOMEM;
        } else if ((err = avcodec_parameters_to_context(r->dec,
                                                        r->ic->streams[r->stream]->codecpar)) < 0 ||
                   (err = avcodec_open2(r->dec, codec, NULL)) < 0) {
            err = av_fail(err, path, why, why_len);
        }
    }
    if (err) {
        trk_ffv1_in_close(&r);
        return err;
    }
    *out = r;
    return 0;
}

int trk_ffv1_in_count(struct trk_ffv1_in *r, uint64_t *packets, char *why, size_t why_len)
{
    uint64_t n = 0;
    int err;
    while ((err = av_read_frame(r->ic, r->pkt)) >= 0) {
        n += r->pkt->stream_index == r->stream;
        av_packet_unref(r->pkt);
    }
    *packets = n;
    if (err != AVERROR_EOF) return av_fail(err, "reading the packets failed", why, why_len);
    return trk_ffv1_in_rewind(r);
}

int trk_ffv1_in_rewind(struct trk_ffv1_in *r)
{
    avcodec_flush_buffers(r->dec);
    r->flushed = false;
    int err = avformat_seek_file(r->ic, r->stream, INT64_MIN, 0, 0, AVSEEK_FLAG_BACKWARD);
    return err < 0 ? -EIO : 0;
}

int trk_ffv1_in_next(struct trk_ffv1_in *r, enum trk_pixfmt fmt, int width, int height,
                     uint8_t *frame, char *why, size_t why_len)
{
    struct twin t;
    int coded_w;
    if (twin_of(fmt, width, &t, &coded_w)) {
        snprintf(why, why_len, "no lossless FFV1 form for %s", trk_pixfmt_name(fmt));
        return TRK_EINVAL;
    }
    int err;
    while ((err = avcodec_receive_frame(r->dec, r->fr)) == AVERROR(EAGAIN)) {
        if (r->flushed) break;
        err = av_read_frame(r->ic, r->pkt);
        if (err == AVERROR_EOF) {
            r->flushed = true;
            err = avcodec_send_packet(r->dec, NULL);
        } else if (err >= 0) {
            if (r->pkt->stream_index == r->stream) err = avcodec_send_packet(r->dec, r->pkt);
            av_packet_unref(r->pkt);
        }
        if (err < 0 && err != AVERROR_EOF) return av_fail(err, "decoding failed", why, why_len);
    }
    if (err == AVERROR_EOF || err == AVERROR(EAGAIN)) {
        snprintf(why, why_len, "the file ends before this frame");
        return -EIO;
    }
    if (err < 0) return av_fail(err, "decoding failed", why, why_len);
    int rc = 0;
    if (r->fr->format != t.av || r->fr->width != coded_w || r->fr->height != height) {
        snprintf(why, why_len, "the stream holds %s %dx%d, the index says %s %dx%d",
                 av_get_pix_fmt_name(r->fr->format), r->fr->width, r->fr->height,
                 trk_pixfmt_name(fmt), width, height);
        rc = TRK_EINVAL;
    } else {
        move_frame(r->fr, &t, fmt, width, height, frame, false);
    }
    av_frame_unref(r->fr);
    return rc;
}

void trk_ffv1_in_close(struct trk_ffv1_in **rp)
{
    struct trk_ffv1_in *r = *rp;
    if (!r) return;
    avformat_close_input(&r->ic);
    avcodec_free_context(&r->dec);
    av_frame_free(&r->fr);
    av_packet_free(&r->pkt);
    free(r);
    *rp = NULL;
}
