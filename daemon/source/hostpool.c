#include "hostpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <libavutil/imgutils.h>

/* Row and plane alignment of the pool's frames: at least every SIMD width
 * FFmpeg's decoders use (STRIDE_ALIGN is at most 64), and a cache line. */
#define POOL_ALIGN 64

struct trk_hostpool {
    /* One for the owner and one per buffer allocated and not yet freed:
     * the last to let go frees the struct. */
    atomic_int refs;
    pthread_mutex_t lock; /* guards pool and size */
    AVBufferPool *pool;   /* buffers of size bytes; a new size, a new pool */
    size_t size;
    _Atomic(struct trk_backend *) mem;
    atomic_uint_fast64_t frames, fallbacks, allocated, freed;
};

static void unref(struct trk_hostpool *p)
{
    if (atomic_fetch_sub(&p->refs, 1) != 1) return;
    pthread_mutex_destroy(&p->lock);
    free(p);
}

int trk_hostpool_create(struct trk_hostpool **out)
{
    struct trk_hostpool *p = calloc(1, sizeof(*p));
    *out = p;
    if (!p) return TRK_ENOMEM;
    atomic_init(&p->refs, 1);
    pthread_mutex_init(&p->lock, NULL);
    return 0;
}

void trk_hostpool_destroy(struct trk_hostpool **pp)
{
    struct trk_hostpool *p = *pp;
    if (!p) return;
    *pp = NULL;
    pthread_mutex_lock(&p->lock);
    /* Frees the AVBufferPool once its last buffer is back. */
    av_buffer_pool_uninit(&p->pool);
    pthread_mutex_unlock(&p->lock);
    unref(p);
}

void trk_hostpool_set_mem(struct trk_hostpool *p, struct trk_backend *mem)
{
    struct trk_backend *none = NULL;
    if (p && mem) atomic_compare_exchange_strong(&p->mem, &none, mem);
}

/* The underlying free of one pool buffer (FFmpeg calls it when the pool is
 * gone and the buffer comes back, on whatever thread let go last). */
static void buffer_free(void *opaque, uint8_t *data)
{
    struct trk_hostpool *p = opaque;
    trk_backend_host_free(atomic_load(&p->mem), data);
    atomic_fetch_add(&p->freed, 1);
    unref(p);
}

static AVBufferRef *buffer_alloc(void *opaque, size_t size)
{
    struct trk_hostpool *p = opaque;
    struct trk_backend *mem = atomic_load(&p->mem);
    uint8_t *d = trk_backend_host_alloc(mem, size);
    if (!d) return NULL;
    AVBufferRef *r = av_buffer_create(d, size, buffer_free, p, 0);
    if (!r) {
        trk_backend_host_free(mem, d);
        return NULL;
    }
    atomic_fetch_add(&p->refs, 1);
    atomic_fetch_add(&p->allocated, 1);
    return r;
}

/* The formats the file source hands to the backends as decoded (ffmpeg.c,
 * native_format); the others are converted, so their buffers need not be
 * pinned. */
static bool handled(int fmt)
{
    switch (fmt) {
    case AV_PIX_FMT_YUV420P:
    case AV_PIX_FMT_YUVJ420P:
    case AV_PIX_FMT_NV12:
    case AV_PIX_FMT_YUYV422:
    case AV_PIX_FMT_RGB24:
    case AV_PIX_FMT_BGR24:
    case AV_PIX_FMT_RGBA:
    case AV_PIX_FMT_RGB0:
    case AV_PIX_FMT_BGRA:
    case AV_PIX_FMT_BGR0: return true;
    default: return false;
    }
}

static size_t align_up(size_t v)
{
    return (v + POOL_ALIGN - 1) / POOL_ALIGN * POOL_ALIGN;
}

/* FFmpeg's rules for a get_buffer2 (avcodec.h): the frame's width and height
 * padded with avcodec_align_dimensions2 (decoders write past the visible
 * picture, motion vectors read past it), every linesize a multiple of the
 * alignment the codec asks for (and POOL_ALIGN), and the planes in
 * frame->buf with data/linesize/extended_data set. Widening the width until
 * every plane's linesize is aligned keeps the chroma linesize the luma's
 * fixed fraction, as the default allocator does (some decoders rely on it). */
static int layout(AVCodecContext *ctx, const AVFrame *f, int linesize[4], size_t plane[4],
                  size_t *total)
{
    int w = f->width, h = f->height;
    int align[AV_NUM_DATA_POINTERS];
    avcodec_align_dimensions2(ctx, &w, &h, align);
    for (int tries = 0;; tries++) {
        if (tries > 16 || av_image_fill_linesizes(linesize, f->format, w) < 0) return -1;
        bool ok = true;
        for (int i = 0; i < 4; i++) {
            int a = align[i] > POOL_ALIGN ? align[i] : POOL_ALIGN;
            ok = ok && linesize[i] % a == 0;
        }
        if (ok) break;
        w += w & ~(w - 1); /* the next multiple of a larger power of two */
    }
    ptrdiff_t ls[4] = { linesize[0], linesize[1], linesize[2], linesize[3] };
    if (av_image_fill_plane_sizes(plane, f->format, h, ls) < 0) return -1;
    *total = AV_INPUT_BUFFER_PADDING_SIZE;
    for (int i = 0; i < 4; i++)
        *total += align_up(plane[i]);
    return 0;
}

static int get_buffer2(AVCodecContext *ctx, AVFrame *f, int flags)
{
    struct trk_hostpool *p = ctx->opaque;
    int linesize[4];
    size_t plane[4], total;
    if (!atomic_load(&p->mem) || !(ctx->codec->capabilities & AV_CODEC_CAP_DR1) ||
        !handled(f->format) || layout(ctx, f, linesize, plane, &total))
        goto fallback;
    pthread_mutex_lock(&p->lock);
    if (total != p->size) {
        /* A new frame size: the old pool goes once its frames are back. */
        av_buffer_pool_uninit(&p->pool);
        p->pool = av_buffer_pool_init2(total, p, buffer_alloc, NULL);
        p->size = p->pool ? total : 0;
    }
    AVBufferRef *buf = p->pool ? av_buffer_pool_get(p->pool) : NULL;
    pthread_mutex_unlock(&p->lock);
    if (!buf) goto fallback;
    size_t off = 0;
    for (int i = 0; i < 4; i++) {
        f->data[i] = plane[i] ? buf->data + off : NULL;
        f->linesize[i] = plane[i] ? linesize[i] : 0;
        off += align_up(plane[i]);
    }
    f->buf[0] = buf;
    f->extended_data = f->data;
    atomic_fetch_add(&p->frames, 1);
    return 0;
fallback:
    atomic_fetch_add(&p->fallbacks, 1);
    return avcodec_default_get_buffer2(ctx, f, flags);
}

void trk_hostpool_attach(struct trk_hostpool *p, AVCodecContext *dec)
{
    dec->opaque = p;
    dec->get_buffer2 = get_buffer2;
}

void trk_hostpool_get_stats(struct trk_hostpool *p, struct trk_hostpool_stats *st)
{
    st->frames = atomic_load(&p->frames);
    st->fallbacks = atomic_load(&p->fallbacks);
    st->allocated = atomic_load(&p->allocated);
    st->live = st->allocated - atomic_load(&p->freed);
}
