/* V4L2 camera source: raw ioctls, mmap streaming, MJPEG through libavcodec.
 * The fd is non-blocking so read() can wait with poll() (a timeout means the
 * camera stopped delivering) and then drain every ready buffer, keeping only
 * the newest: tracking must see the present, not a queue of the past. */
#include "v4l2.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/videodev2.h>

#include <libavcodec/avcodec.h>

#define LOG_TAG "v4l2"
#include "camctl.h"
#include "hwdec.h"
#include "log.h"
#include "source.h"
#include "trk_assert.h"

/* mmap + copy: the driver gets a buffer back as soon as it is copied. */
#define N_MMAP_BUFFERS 4
/* USERPTR: buffers stay with the frames that hold them until the pool's
 * last holder lets go, at most one per pool frame; MIN_QUEUED more keep the
 * driver capturing while every pool frame holds one. */
#define MIN_QUEUED        2
#define N_USERPTR_BUFFERS (TRK_POOL_FRAMES + MIN_QUEUED)
#define N_BUFFERS         N_USERPTR_BUFFERS
/* USB 2 isochronous video tops out near this in practice. */
#define MAX_RAW_BYTES_PER_S (24.0 * 1000 * 1000)

struct ubufs;

/* One USERPTR buffer: our memory, which the driver fills. */
struct ubuf {
    struct ubufs *set;
    int index;
    uint8_t *p; /* page-aligned, len bytes (inside base's allocation) */
    void *base; /* what was allocated                                  */
    size_t len; /* sizeimage rounded up to whole pages                 */
    bool lent;  /* dequeued and held by a frame                        */
};

/* The USERPTR buffers of one streaming session, shared by the capture
 * thread and whichever thread lets go of a frame last (processing,
 * preview, sampler, a /snapshot.jpg request). Reference counted: the
 * source while it streams, and each lent buffer; a camera that closes
 * (unplugged, reconnect) while frames still hold buffers leaves the set
 * to its last frame, which frees it. lock guards fd, lent and refs. */
struct ubufs {
    pthread_mutex_t lock;
    int fd; /* the camera's, to queue given-back buffers on; -1 once closed */
    int refs;
    int n_lent;
    struct trk_backend *mem; /* host_alloc'ed from; NULL = page-aligned heap */
    int n;
    struct ubuf buf[N_USERPTR_BUFFERS];
};

struct v4l2_src {
    struct trk_v4l2_cfg cfg;
    char *device;
    int fd;
    void *buf[N_BUFFERS]; /* mmap'ed driver buffers (MMAP) */
    size_t len[N_BUFFERS];
    int n_buf;
    struct ubufs *ub; /* USERPTR instead, while streaming */
    bool streaming;
    bool userptr_refused; /* the driver said no once: mmap from then on */
    bool io_logged;
    uint32_t fourcc, bytesperline, sizeimage;
    int width, height;
    uint64_t drops, lent, copied;
    struct trk_source *info;  /* host_mem: where USERPTR buffers come from */
    struct trk_mjpeg *mjpeg;  /* MJPEG only */
    struct trk_hwdec_ctx *hw; /* --hwdec for MJPEG, NULL = software */
};

struct trk_mjpeg {
    AVCodecContext *dec;
    AVPacket *pkt;
    AVFrame *frame;
    struct trk_hwdec_ctx *hw; /* --hwdec: NVDEC when it can (not owned) */
    AVFrame *sw;              /* an NVDEC frame copied down (trk_hwdec_export) */
};

int trk_cam_io_parse(const char *s)
{
    if (!strcmp(s, "auto")) return TRK_CAM_IO_AUTO;
    if (!strcmp(s, "mmap")) return TRK_CAM_IO_MMAP;
    return -1;
}

int trk_cam_format_parse(const char *s)
{
    static const char *names[] = { "auto", "yuyv", "mjpeg", "nv12", "rgb24" };
    for (int i = 0; i < 5; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

static uint32_t want_fourcc(enum trk_cam_format f)
{
    switch (f) {
    case TRK_CAM_YUYV: return V4L2_PIX_FMT_YUYV;
    case TRK_CAM_MJPEG: return V4L2_PIX_FMT_MJPEG;
    case TRK_CAM_NV12: return V4L2_PIX_FMT_NV12;
    case TRK_CAM_RGB24: return V4L2_PIX_FMT_RGB24;
    default: return 0;
    }
}

int trk_v4l2_pixfmt(uint32_t fourcc)
{
    switch (fourcc) {
    case V4L2_PIX_FMT_YUYV: return TRK_FMT_YUYV;
    case V4L2_PIX_FMT_NV12: return TRK_FMT_NV12;
    case V4L2_PIX_FMT_YUV420: return TRK_FMT_I420;
    case V4L2_PIX_FMT_RGB24: return TRK_FMT_RGB24;
    case V4L2_PIX_FMT_BGR24: return TRK_FMT_BGR24;
    default: return -1;
    }
}

static bool offered_has(const uint32_t *offered, int n, uint32_t f)
{
    for (int i = 0; i < n; i++)
        if (offered[i] == f) return true;
    return false;
}

int trk_v4l2_choose_format(const uint32_t *offered, int n, enum trk_cam_format want, int width,
                           int height, double fps, double max_raw_bytes_per_s, uint32_t *out)
{
    if (want != TRK_CAM_AUTO) {
        uint32_t f = want_fourcc(want);
        if (!f || !offered_has(offered, n, f)) return -EINVAL;
        *out = f;
        return 0;
    }
    /* Native formats, cheapest per pixel first (4:2:0 before 4:2:2 before
     * RGB: less to copy and the same tracking). */
    static const uint32_t native[] = { V4L2_PIX_FMT_NV12, V4L2_PIX_FMT_YUV420, V4L2_PIX_FMT_YUYV,
                                       V4L2_PIX_FMT_RGB24, V4L2_PIX_FMT_BGR24 };
    static const double bpp[] = { 1.5, 1.5, 2, 3, 3 };
    bool mjpeg = offered_has(offered, n, V4L2_PIX_FMT_MJPEG);
    for (size_t i = 0; i < sizeof(native) / sizeof(native[0]); i++) {
        if (!offered_has(offered, n, native[i])) continue;
        double rate = (double)width * height * bpp[i] * (fps > 0 ? fps : 30);
        if (mjpeg && rate > max_raw_bytes_per_s) break;
        *out = native[i];
        return 0;
    }
    if (mjpeg) {
        *out = V4L2_PIX_FMT_MJPEG;
        return 0;
    }
    return -EINVAL;
}

/* Plane p of a frame laid out in its own buffer, writable. */
static uint8_t *wplane(struct trk_frame *f, int p)
{
    return f->data + (f->img.plane[p] - f->data);
}

/* Where a raw driver buffer's planes are: byte offsets, row pitches, rows
 * and row payloads, checked against bytesused. */
struct raw_layout {
    enum trk_pixfmt fmt;
    int planes;
    size_t off[3], pitch[3], rows[3], row[3];
};

static int raw_layout(uint32_t fourcc, int width, int height, uint32_t bytesperline,
                      size_t bytesused, struct raw_layout *R)
{
    int fmt = trk_v4l2_pixfmt(fourcc);
    if (fmt < 0 || width <= 0 || height <= 0) return TRK_EINVAL;
    struct trk_plane_layout L;
    if (trk_image_plane_layout((enum trk_pixfmt)fmt, width, height, &L)) return TRK_EINVAL;
    memset(R, 0, sizeof(*R));
    R->fmt = (enum trk_pixfmt)fmt;
    R->planes = L.planes;
    for (int p = 0; p < L.planes; p++) {
        R->row[p] = L.row_bytes[p];
        R->rows[p] = (size_t)L.rows[p];
    }
    /* Chroma pitches follow the luma pitch as the V4L2 spec defines for
     * single-plane formats. */
    size_t bpl = bytesperline ? bytesperline : R->row[0];
    if (bpl < R->row[0]) return TRK_EINVAL;
    R->pitch[0] = bpl;
    R->pitch[1] = fmt == TRK_FMT_NV12 ? bpl : bpl / 2;
    R->pitch[2] = R->pitch[1];
    size_t off = 0;
    for (int p = 0; p < R->planes; p++) {
        if (R->pitch[p] < R->row[p]) return TRK_EINVAL;
        R->off[p] = off;
        off += R->pitch[p] * R->rows[p];
    }
    /* The last row of the last plane need not be padded. */
    const int last = R->planes - 1;
    if (bytesused < off - (R->pitch[last] - R->row[last])) return TRK_EINVAL;
    return 0;
}

static void raw_colour(struct trk_frame *f)
{
    f->img.matrix = TRK_MATRIX_BT601;
    f->img.full_range = f->img.fmt == TRK_FMT_RGB24 || f->img.fmt == TRK_FMT_BGR24;
}

int trk_v4l2_copy(struct trk_frame *f, uint32_t fourcc, int width, int height,
                  uint32_t bytesperline, const uint8_t *buf, size_t bytesused)
{
    struct raw_layout R;
    int err = raw_layout(fourcc, width, height, bytesperline, bytesused, &R);
    if (err || (err = trk_frame_layout(f, R.fmt, width, height, 64))) return err;
    for (int p = 0; p < R.planes; p++)
        for (size_t y = 0; y < R.rows[p]; y++)
            memcpy(wplane(f, p) + y * f->img.pitch[p], buf + R.off[p] + y * R.pitch[p], R.row[p]);
    raw_colour(f);
    return 0;
}

int trk_v4l2_wrap(struct trk_frame *f, uint32_t fourcc, int width, int height,
                  uint32_t bytesperline, const uint8_t *buf, size_t bytesused)
{
    struct raw_layout R;
    int err = raw_layout(fourcc, width, height, bytesperline, bytesused, &R);
    if (err) return err;
    trk_frame_keep(f, NULL, NULL);
    memset(&f->img, 0, sizeof(f->img));
    for (int p = 0; p < R.planes; p++) {
        f->img.plane[p] = buf + R.off[p];
        f->img.pitch[p] = R.pitch[p];
    }
    f->img.width = width;
    f->img.height = height;
    f->img.fmt = R.fmt;
    raw_colour(f);
    return 0;
}

void trk_v4l2_ctrl_name(const char *name, char *out, size_t size)
{
    size_t n = 0;
    bool sep = false;
    for (const char *c = name; *c && n + 1 < size; c++) {
        if (isalnum((unsigned char)*c)) {
            if (sep && n > 0 && n + 2 < size) out[n++] = '_';
            out[n++] = (char)tolower((unsigned char)*c);
            sep = false;
        } else {
            sep = true;
        }
    }
    if (size) out[n < size ? n : size - 1] = 0;
}

bool trk_cam_control_parse(const char *s, struct trk_camera_control *c)
{
    const char *eq = strchr(s, '=');
    if (!eq || eq == s || (size_t)(eq - s) >= sizeof(c->name)) return false;
    char *end;
    errno = 0;
    long v = strtol(eq + 1, &end, 0);
    if (errno || end == eq + 1 || *end) return false;
    memcpy(c->name, s, (size_t)(eq - s));
    c->name[eq - s] = 0;
    c->value = v;
    return true;
}

static int xioctl(int fd, unsigned long req, void *arg)
{
    int r;
    do
        r = ioctl(fd, req, arg);
    while (r < 0 && errno == EINTR);
    return r < 0 ? -errno : 0;
}

int trk_v4l2_ioctl(int fd, unsigned long req, void *arg)
{
    return xioctl(fd, req, arg);
}

/* Finds a control by its v4l2-ctl style name; 0 and *q, or -ENOENT. */
static int find_control(int fd, const char *name, struct v4l2_queryctrl *q)
{
    memset(q, 0, sizeof(*q));
    q->id = V4L2_CTRL_FLAG_NEXT_CTRL;
    while (xioctl(fd, VIDIOC_QUERYCTRL, q) == 0) {
        char n[64];
        trk_v4l2_ctrl_name((const char *)q->name, n, sizeof(n));
        if (!(q->flags & V4L2_CTRL_FLAG_DISABLED) && q->type != V4L2_CTRL_TYPE_CTRL_CLASS &&
            !strcmp(n, name))
            return 0;
        q->id |= V4L2_CTRL_FLAG_NEXT_CTRL;
    }
    return -ENOENT;
}

/* A missing or refused control is logged and skipped (the camera still
 * streams). */
int trk_v4l2_set_controls(int fd, const char *device, const struct trk_camera_control *list, int n)
{
    int failed = 0;
    for (int i = 0; i < n; i++) {
        const struct trk_camera_control *c = &list[i];
        struct v4l2_queryctrl q;
        int err = find_control(fd, c->name, &q);
        if (!err) {
            struct v4l2_control ctl = { .id = q.id, .value = (int32_t)c->value };
            err = xioctl(fd, VIDIOC_S_CTRL, &ctl);
        }
        if (err) {
            log_warn_err(err, "%s: cannot set control %s=%ld", device, c->name, c->value);
            failed++;
        } else {
            log_info("%s: control %s=%ld", device, c->name, c->value);
        }
    }
    return failed;
}

/* The configured controls, or the live ones (trk_v4l2_cfg.camctl). */
static int set_controls(struct v4l2_src *s)
{
    if (s->cfg.camctl)
        s->cfg.n_controls =
            trk_camctl_controls(s->cfg.camctl, s->cfg.controls,
                                (int)(sizeof(s->cfg.controls) / sizeof(s->cfg.controls[0])));
    return trk_v4l2_set_controls(s->fd, s->device, s->cfg.controls, s->cfg.n_controls);
}

static void ubufs_free(struct ubufs *u)
{
    for (int i = 0; i < u->n; i++)
        if (u->mem)
            trk_backend_host_free(u->mem, u->buf[i].base);
        else
            free(u->buf[i].base);
    pthread_mutex_destroy(&u->lock);
    free(u);
}

/* One reference to u goes (lock held); true when it was the last. */
static bool ubufs_unref_locked(struct ubufs *u)
{
    return --u->refs == 0;
}

static int queue_ubuf(int fd, const struct ubuf *b)
{
    struct v4l2_buffer vb = { .index = (uint32_t)b->index,
                              .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
                              .memory = V4L2_MEMORY_USERPTR,
                              .m.userptr = (unsigned long)b->p,
                              .length = (uint32_t)b->len };
    return xioctl(fd, VIDIOC_QBUF, &vb);
}

/* trk_frame_hold's unhold for a lent buffer: back to the driver, or, when
 * the camera has closed meanwhile, just one reference less. Runs on the
 * thread that let go of the frame last. A refused QBUF (the camera is
 * going away) leaves the buffer out; the next read sees the outage. */
static void give_back(void *hold)
{
    struct ubuf *b = hold;
    struct ubufs *u = b->set;
    pthread_mutex_lock(&u->lock);
    TRK_ASSERT(b->lent);
    b->lent = false;
    u->n_lent--;
    if (u->fd >= 0) queue_ubuf(u->fd, b);
    bool last = ubufs_unref_locked(u);
    pthread_mutex_unlock(&u->lock);
    if (last) ubufs_free(u);
}

/* Whether the buffer just dequeued may go out with a frame: only while
 * MIN_QUEUED others stay with the driver (a driver that granted fewer
 * buffers than asked, or a pool full of held frames, gets copies). */
static bool lend(struct ubufs *u, int index)
{
    pthread_mutex_lock(&u->lock);
    bool ok = u->n - u->n_lent - 1 >= MIN_QUEUED;
    if (ok) {
        u->buf[index].lent = true;
        u->n_lent++;
        u->refs++;
    }
    pthread_mutex_unlock(&u->lock);
    return ok;
}

/* Page-aligned len bytes from mem (pinned on CUDA) or the heap: drivers
 * pin USERPTR memory page by page. */
static int ubuf_alloc(struct ubuf *b, struct trk_backend *mem, size_t len)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (!mem) {
        b->base = b->p = aligned_alloc(page, len);
        return b->p ? 0 : TRK_ENOMEM;
    }
    b->base = trk_backend_host_alloc(mem, len);
    if (b->base && (uintptr_t)b->base % page) {
        /* The CPU backends align to cache lines only: take a page more. */
        trk_backend_host_free(mem, b->base);
        b->base = trk_backend_host_alloc(mem, len + page);
    }
    if (!b->base) return TRK_ENOMEM;
    b->p = (uint8_t *)(((uintptr_t)b->base + page - 1) / page * page);
    return 0;
}

/* USERPTR streaming with buffers from mem: 0, or the driver's refusal
 * (nothing is left allocated or requested then) or TRK_ENOMEM. */
static int start_userptr(struct v4l2_src *s, struct trk_backend *mem)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    struct v4l2_requestbuffers rb = { .count = N_USERPTR_BUFFERS,
                                      .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
                                      .memory = V4L2_MEMORY_USERPTR };
    int err = xioctl(s->fd, VIDIOC_REQBUFS, &rb);
    if (err) return err;
    struct ubufs *u = calloc(1, sizeof(*u));
    if (!u) {
        err = TRK_ENOMEM;
        goto fail;
    }
    pthread_mutex_init(&u->lock, NULL);
    u->fd = s->fd;
    u->refs = 1;
    u->mem = mem;
    const size_t len = (s->sizeimage + page - 1) / page * page;
    int n = rb.count < N_USERPTR_BUFFERS ? (int)rb.count : N_USERPTR_BUFFERS;
    if (n < MIN_QUEUED + 1 || len == 0) {
        err = -ENOMEM;
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        struct ubuf *b = &u->buf[i];
        b->set = u;
        b->index = i;
        b->len = len;
        if ((err = ubuf_alloc(b, mem, len))) goto fail;
        u->n = i + 1;
        if ((err = queue_ubuf(s->fd, b))) goto fail;
    }
    enum v4l2_buf_type t = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    if ((err = xioctl(s->fd, VIDIOC_STREAMON, &t))) goto fail;
    s->ub = u;
    return 0;
fail:
    rb.count = 0; /* the driver lets go of what was queued */
    xioctl(s->fd, VIDIOC_REQBUFS, &rb);
    if (u) ubufs_free(u);
    return err;
}

static int start_mmap(struct v4l2_src *s)
{
    struct v4l2_requestbuffers rb = { .count = N_MMAP_BUFFERS,
                                      .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
                                      .memory = V4L2_MEMORY_MMAP };
    int err = xioctl(s->fd, VIDIOC_REQBUFS, &rb);
    if (err) return err;
    if (rb.count < 2) return -ENOMEM;
    for (uint32_t i = 0; i < rb.count && i < N_MMAP_BUFFERS; i++) {
        struct v4l2_buffer b = { .index = i,
                                 .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
                                 .memory = V4L2_MEMORY_MMAP };
        if ((err = xioctl(s->fd, VIDIOC_QUERYBUF, &b))) return err;
        s->buf[i] = mmap(NULL, b.length, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, b.m.offset);
        s->len[i] = b.length;
        s->n_buf = (int)i + 1;
        if (s->buf[i] == MAP_FAILED) return -errno;
        if ((err = xioctl(s->fd, VIDIOC_QBUF, &b))) return err;
    }
    enum v4l2_buf_type t = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    return xioctl(s->fd, VIDIOC_STREAMON, &t);
}

/* Streams with USERPTR where it can (raw formats the backends take, unless
 * --camera-io mmap or the driver refused before), else mmap + copy. */
static int start_streaming(struct v4l2_src *s)
{
    const bool want_userptr =
        s->cfg.io == TRK_CAM_IO_AUTO && s->fourcc != V4L2_PIX_FMT_MJPEG && !s->userptr_refused;
    struct trk_backend *mem = s->info ? s->info->host_mem : NULL;
    int err = want_userptr ? start_userptr(s, mem) : -EINVAL;
    /* Refusals; anything else (the camera went away meanwhile) fails the
     * open, which is retried as it stands. */
    const bool refused = err == -EINVAL || err == -EFAULT || err == -ENOTTY || err == -EOPNOTSUPP;
    if (want_userptr && err && !refused && err != TRK_ENOMEM) return err;
    if (want_userptr && refused) {
        s->userptr_refused = true;
        TRK_LOGX(TRK_LOG_INFO, err,
                 "%s: the driver refuses USERPTR buffers: capturing with mmap and a copy "
                 "per frame",
                 s->device);
    }
    if (!err) {
        if (!s->io_logged)
            log_info("%s: frames go to the backend in the driver's buffers (USERPTR, %d buffers, "
                     "no copy)",
                     s->device, s->ub->n);
    } else {
        if ((err = start_mmap(s))) return err;
        if (!s->io_logged && !s->userptr_refused)
            log_info("%s: capturing with mmap and a %s per frame%s", s->device,
                     s->fourcc == V4L2_PIX_FMT_MJPEG ? "decode" : "copy",
                     s->cfg.io == TRK_CAM_IO_MMAP ? " (--camera-io mmap)" : "");
    }
    s->io_logged = true;
    s->streaming = true;
    return 0;
}

static void stop_streaming(struct v4l2_src *s)
{
    if (s->ub) {
        /* Frames let go of lent buffers from here on without queueing them
         * on an fd that is about to close (and maybe be reused). */
        struct ubufs *u = s->ub;
        s->ub = NULL;
        pthread_mutex_lock(&u->lock);
        u->fd = -1;
        bool last = ubufs_unref_locked(u);
        pthread_mutex_unlock(&u->lock);
        if (s->streaming) {
            enum v4l2_buf_type t = V4L2_BUF_TYPE_VIDEO_CAPTURE;
            xioctl(s->fd, VIDIOC_STREAMOFF, &t);
        }
        struct v4l2_requestbuffers rb = { .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
                                          .memory = V4L2_MEMORY_USERPTR };
        xioctl(s->fd, VIDIOC_REQBUFS, &rb); /* the driver unpins our pages */
        if (last) ubufs_free(u);
        s->streaming = false;
    }
    if (s->streaming) {
        enum v4l2_buf_type t = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        xioctl(s->fd, VIDIOC_STREAMOFF, &t);
        s->streaming = false;
    }
    for (int i = 0; i < s->n_buf; i++)
        if (s->buf[i] && s->buf[i] != MAP_FAILED) munmap(s->buf[i], s->len[i]);
    memset(s->buf, 0, sizeof(s->buf));
    s->n_buf = 0;
}

static void v4l2_close(void *self)
{
    struct v4l2_src *s = self;
    stop_streaming(s);
    if (s->fd >= 0) close(s->fd);
    s->fd = -1;
    trk_mjpeg_destroy(&s->mjpeg);
}

void trk_mjpeg_destroy(struct trk_mjpeg **d)
{
    if (!*d) return;
    av_frame_free(&(*d)->frame);
    av_frame_free(&(*d)->sw);
    av_packet_free(&(*d)->pkt);
    avcodec_free_context(&(*d)->dec);
    free(*d);
    *d = NULL;
}

int trk_mjpeg_create(struct trk_mjpeg **out)
{
    return trk_mjpeg_create_hw(out, NULL);
}

int trk_mjpeg_create_hw(struct trk_mjpeg **out, struct trk_hwdec_ctx *hw)
{
    const AVCodec *codec = avcodec_find_decoder(AV_CODEC_ID_MJPEG);
    if (!codec) return TRK_ENODEV;
    struct trk_mjpeg *d = calloc(1, sizeof(*d));
    if (!d) return TRK_ENOMEM;
    *out = d;
    d->dec = avcodec_alloc_context3(codec);
    d->pkt = av_packet_alloc();
    d->frame = av_frame_alloc();
    d->sw = av_frame_alloc();
    d->hw = hw;
    /* The JPEGs' pixel format is known at the first frame: get_format
     * decides then (4:2:2 webcams are decoded in software, logged once). */
    int err = !d->dec || !d->pkt || !d->frame || !d->sw ? TRK_ENOMEM : 0;
    if (!err && hw) err = trk_hwdec_attach(hw, d->dec, codec, AV_PIX_FMT_NONE);
    if (!err && avcodec_open2(d->dec, codec, NULL) < 0) err = TRK_EBACKEND;
    if (err) trk_mjpeg_destroy(out);
    return err;
}

/* Why the open node fd (QUERYCAP's answer err, cap) is no camera trackd can
 * stream from, into why; NULL when it is one. */
static const char *not_a_camera(int fd, int err, const struct v4l2_capability *cap, char *why,
                                size_t len)
{
    struct stat st;
    if (!fstat(fd, &st) && !S_ISCHR(st.st_mode))
        return S_ISREG(st.st_mode) ? "it is a regular file, not a camera device (/dev/videoN)"
                                   : "it is not a device node (cameras are /dev/videoN)";
    if (err == -ENOTTY || err == -EINVAL)
        return "it is not a V4L2 device (cameras are /dev/videoN; see --list-devices)";
    if (err) return NULL; /* the device failed: worth a retry */
    uint32_t caps = cap->capabilities & V4L2_CAP_DEVICE_CAPS ? cap->device_caps : cap->capabilities;
    /* %s: the device's name ("card") */
    const char *what = caps & V4L2_CAP_VIDEO_CAPTURE ? NULL
                       : caps & V4L2_CAP_META_CAPTURE
                           ? "it is a metadata node of \"%.32s\", not its video (a UVC camera's "
                             "video is usually the node just before)"
                       : caps & V4L2_CAP_VIDEO_CAPTURE_MPLANE
                           ? "it is a multi-planar capture node of \"%.32s\", which trackd does "
                             "not read"
                           : "it is a node of \"%.32s\" without video capture (an output or codec "
                             "node?)";
    if (!what && !(caps & V4L2_CAP_STREAMING))
        what = "it is a capture node of \"%.32s\" without streaming I/O, which trackd needs";
    if (!what) return NULL;
    int n = snprintf(why, len, what, (const char *)cap->card);
    if (n > 0 && (size_t)n < len) snprintf(why + n, len - n, "; see --list-devices");
    return why;
}

static int v4l2_open(void *self, struct trk_source *info)
{
    struct v4l2_src *s = self;
    int err;
    info->error[0] = 0;
    s->fd = open(s->device, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (s->fd < 0 && errno == EISDIR) {
        snprintf(info->error, sizeof(info->error), "it is a directory, not a camera device");
        return TRK_SOURCE_ENOTCAMERA;
    }
    if (s->fd < 0) return -errno;
    struct v4l2_capability cap = { 0 };
    err = xioctl(s->fd, VIDIOC_QUERYCAP, &cap);
    const char *why = not_a_camera(s->fd, err, &cap, info->error, sizeof(info->error));
    if (why) {
        if (why != info->error) snprintf(info->error, sizeof(info->error), "%s", why);
        err = TRK_SOURCE_ENOTCAMERA;
        goto fail;
    }
    if (err) goto fail;
    uint32_t offered[64];
    int n = 0;
    struct v4l2_fmtdesc fd = { .type = V4L2_BUF_TYPE_VIDEO_CAPTURE };
    for (fd.index = 0; n < 64 && xioctl(s->fd, VIDIOC_ENUM_FMT, &fd) == 0; fd.index++)
        offered[n++] = fd.pixelformat;
    uint32_t fourcc;
    if (trk_v4l2_choose_format(offered, n, s->cfg.format, s->cfg.width, s->cfg.height, s->cfg.fps,
                               MAX_RAW_BYTES_PER_S, &fourcc)) {
        log_error("%s offers no usable pixel format%s (see --list-formats)", s->device,
                  s->cfg.format ? " of the one asked for" : "");
        err = -EINVAL;
        goto fail;
    }
    struct v4l2_format f = { .type = V4L2_BUF_TYPE_VIDEO_CAPTURE };
    f.fmt.pix.width = (uint32_t)s->cfg.width;
    f.fmt.pix.height = (uint32_t)s->cfg.height;
    f.fmt.pix.pixelformat = fourcc;
    f.fmt.pix.field = V4L2_FIELD_NONE;
    if ((err = xioctl(s->fd, VIDIOC_S_FMT, &f))) goto fail;
    if (f.fmt.pix.pixelformat != fourcc) {
        err = -EINVAL;
        goto fail;
    }
    s->fourcc = fourcc;
    s->width = (int)f.fmt.pix.width;
    s->height = (int)f.fmt.pix.height;
    s->bytesperline = f.fmt.pix.bytesperline;
    s->sizeimage = f.fmt.pix.sizeimage;
    /* The rate after the format: some drivers (vivid) reset it on S_FMT. */
    struct v4l2_streamparm parm = { .type = V4L2_BUF_TYPE_VIDEO_CAPTURE };
    if (s->cfg.fps > 0) {
        parm.parm.capture.timeperframe.numerator = 1000;
        parm.parm.capture.timeperframe.denominator = (uint32_t)(s->cfg.fps * 1000 + 0.5);
        xioctl(s->fd, VIDIOC_S_PARM, &parm); /* not every driver can */
    }
    double fps = 0;
    if (xioctl(s->fd, VIDIOC_G_PARM, &parm) == 0 && parm.parm.capture.timeperframe.numerator)
        fps = (double)parm.parm.capture.timeperframe.denominator /
              parm.parm.capture.timeperframe.numerator;
    set_controls(s);
    if (fourcc == V4L2_PIX_FMT_MJPEG && (err = trk_mjpeg_create_hw(&s->mjpeg, s->hw))) goto fail;

    s->info = info;
    if ((err = start_streaming(s))) goto fail;
    char fcc[5] = { (char)(fourcc & 0xff), (char)(fourcc >> 8 & 0xff), (char)(fourcc >> 16 & 0xff),
                    (char)(fourcc >> 24 & 0xff), 0 };
    info->width = s->width;
    info->height = s->height;
    info->fps = fps;
    info->live = true;
    snprintf(info->desc, sizeof(info->desc), "camera %s (%s, %s %dx%d %.2f fps)", s->device,
             cap.card, fcc, s->width, s->height, fps);
    return 0;
fail:
    v4l2_close(s);
    return err;
}

/* An NVDEC frame (--hwdec) into f as a device image (JPEG: full range,
 * BT.601), referenced by f: 0. 1: d->frame is a software frame (perhaps
 * copied down from the GPU), for the caller to copy. TRK_EINVAL when it
 * cannot be had (the frame is skipped). */
static int mjpeg_device_frame(struct trk_mjpeg *d, struct trk_frame *f)
{
    int r = trk_hwdec_export(d->hw, d->frame, d->sw, f, TRK_MATRIX_BT601, true);
    if (r == 2) {
        av_frame_unref(d->frame);
        av_frame_move_ref(d->frame, d->sw);
        return 1;
    }
    if (r != 1) av_frame_unref(d->frame);
    return r < 0 ? TRK_EINVAL : r;
}

/* The decoder gives full-range 4:2:0 or 4:2:2 (webcams); 4:2:2 chroma
 * keeps every other row. */
int trk_mjpeg_decode(struct trk_mjpeg *d, const uint8_t *data, size_t len, struct trk_frame *f)
{
    d->pkt->data = (uint8_t *)data;
    d->pkt->size = (int)len;
    int err = avcodec_send_packet(d->dec, d->pkt);
    if (err >= 0) err = avcodec_receive_frame(d->dec, d->frame);
    if (err < 0) return TRK_EINVAL; /* a corrupt JPEG: skip the frame */
    AVFrame *av = d->frame;
    if (d->hw && (err = mjpeg_device_frame(d, f)) != 1) return err;
    int vstep;
    switch (av->format) {
    case AV_PIX_FMT_YUVJ420P:
    case AV_PIX_FMT_YUV420P: vstep = 1; break;
    case AV_PIX_FMT_YUVJ422P:
    case AV_PIX_FMT_YUV422P: vstep = 2; break;
    default: av_frame_unref(av); return TRK_EINVAL;
    }
    if ((err = trk_frame_layout(f, TRK_FMT_I420, av->width, av->height, 64))) return err;
    for (int y = 0; y < av->height; y++)
        memcpy(wplane(f, 0) + (size_t)y * f->img.pitch[0],
               av->data[0] + (ptrdiff_t)y * av->linesize[0], (size_t)av->width);
    int cw = (av->width + 1) / 2, ch = (av->height + 1) / 2;
    for (int p = 1; p < 3; p++)
        for (int y = 0; y < ch; y++)
            memcpy(wplane(f, p) + (size_t)y * f->img.pitch[p],
                   av->data[p] + (ptrdiff_t)y * vstep * av->linesize[p], (size_t)cw);
    f->img.matrix = TRK_MATRIX_BT601;
    f->img.full_range = av->format == AV_PIX_FMT_YUVJ420P || av->format == AV_PIX_FMT_YUVJ422P ||
                        av->color_range == AVCOL_RANGE_JPEG;
    av_frame_unref(av);
    return 0;
}

static int v4l2_read(void *self, struct trk_frame *f)
{
    struct v4l2_src *s = self;
    if (s->fd < 0 || !s->streaming) return -ENODEV;
    struct trk_backend *mem = s->info ? s->info->host_mem : NULL;
    if (s->ub && s->ub->mem != mem) {
        /* The pipeline names the backend's memory after the first open:
         * buffers in it once, so the backend reads them directly. */
        stop_streaming(s);
        int err = start_streaming(s);
        if (err) return err;
    }
    for (;;) {
        struct pollfd pfd = { .fd = s->fd, .events = POLLIN };
        int r = poll(&pfd, 1, (int)(s->cfg.timeout * 1000));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -errno;
        if (r == 0) return -ETIMEDOUT;
        if (pfd.revents & (POLLERR | POLLHUP | POLLNVAL)) return -ENODEV;
        /* Take every ready buffer; requeue all but the newest. */
        struct v4l2_buffer b, newest = { 0 };
        bool have = false;
        int err;
        for (;;) {
            memset(&b, 0, sizeof(b));
            b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
            b.memory = s->ub ? V4L2_MEMORY_USERPTR : V4L2_MEMORY_MMAP;
            err = xioctl(s->fd, VIDIOC_DQBUF, &b);
            if (err) break;
            if (have) {
                s->drops++;
                if ((err = xioctl(s->fd, VIDIOC_QBUF, &newest))) return err;
            }
            newest = b;
            have = true;
        }
        if (err != -EAGAIN) {
            if (have) xioctl(s->fd, VIDIOC_QBUF, &newest);
            return err;
        }
        if (!have) continue;
        const int n_buf = s->ub ? s->ub->n : s->n_buf;
        if (newest.flags & V4L2_BUF_FLAG_ERROR || newest.index >= (uint32_t)n_buf) {
            /* A corrupted frame: drop it and wait for the next. */
            s->drops++;
            if ((err = xioctl(s->fd, VIDIOC_QBUF, &newest))) return err;
            continue;
        }
        double ts = (double)newest.timestamp.tv_sec + newest.timestamp.tv_usec * 1e-6;
        const uint8_t *data = s->ub ? s->ub->buf[newest.index].p : s->buf[newest.index];
        int qerr = 0;
        f->packet_len = 0;
        if (s->ub && lend(s->ub, (int)newest.index)) {
            /* The frame reads the driver's buffer; it goes back to the
             * driver when the frame's last holder lets go (give_back). */
            struct ubuf *ub = &s->ub->buf[newest.index];
            err = trk_v4l2_wrap(f, s->fourcc, s->width, s->height, s->bytesperline, data,
                                newest.bytesused);
            if (err)
                give_back(ub);
            else
                trk_frame_keep(f, ub, give_back);
            s->lent += !err;
        } else {
            err = s->fourcc == V4L2_PIX_FMT_MJPEG
                      ? trk_mjpeg_decode(s->mjpeg, data, newest.bytesused, f)
                      : trk_v4l2_copy(f, s->fourcc, s->width, s->height, s->bytesperline, data,
                                      newest.bytesused);
            /* --record-storage copy: the JPEG as the driver delivered it
             * (out of memory: not kept, the frame is recorded decoded). */
            if (!err && s->fourcc == V4L2_PIX_FMT_MJPEG && s->info && s->info->keep_packets &&
                trk_frame_set_packet(f, data, newest.bytesused))
                f->packet_len = 0;
            s->copied += !err;
            qerr = xioctl(s->fd, VIDIOC_QBUF, &newest);
        }
        if (err == TRK_EINVAL) {
            /* Short or undecodable frame: skip, counted. */
            s->drops++;
            if (qerr) return qerr;
            continue;
        }
        if (err) return err;
        if (qerr) return qerr;
        bool mono =
            (newest.flags & V4L2_BUF_FLAG_TIMESTAMP_MASK) == V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC;
        f->t_capture = mono && ts > 0 ? ts : trk_now();
        f->pts = f->t_capture;
        return 0;
    }
}

static void v4l2_destroy(void *self)
{
    struct v4l2_src *s = self;
    if (s->drops)
        log_info("%s: %llu stale or corrupt frames dropped in the driver queue", s->device,
                 (unsigned long long)s->drops);
    trk_hwdec_destroy(&s->hw);
    if (s->lent || s->copied)
        log_info("%s: %llu frames passed on in the driver's buffers, %llu copied or decoded",
                 s->device, (unsigned long long)s->lent, (unsigned long long)s->copied);
    free(s->device);
    free(s);
}

static const struct trk_source_ops v4l2_ops = {
    .kind = "camera",
    .open = v4l2_open,
    .read = v4l2_read,
    .close = v4l2_close,
    .destroy = v4l2_destroy,
};

int trk_source_v4l2_create(const struct trk_v4l2_cfg *cfg, struct trk_source *out)
{
    memset(out, 0, sizeof(*out));
    struct v4l2_src *s = calloc(1, sizeof(*s));
    if (!s) return TRK_ENOMEM;
    s->cfg = *cfg;
    s->device = strdup(cfg->device);
    if (!s->device) {
        free(s);
        return TRK_ENOMEM;
    }
    s->cfg.device = s->device;
    if (cfg->hwdec && !(s->hw = trk_hwdec_create(cfg->hwdec, s->device))) {
        free(s->device);
        free(s);
        return TRK_ENOMEM;
    }
    s->cfg.hwdec = NULL; /* s->hw has it */
    if (s->cfg.timeout <= 0) s->cfg.timeout = 2.0;
    s->fd = -1;
    out->ops = &v4l2_ops;
    out->self = s;
    out->live = true;
    out->width = cfg->width;
    out->height = cfg->height;
    out->fps = cfg->fps;
    snprintf(out->desc, sizeof(out->desc), "camera %s", cfg->device);
    return 0;
}

uint64_t trk_source_v4l2_drops(const struct trk_source *s)
{
    return s->ops == &v4l2_ops ? ((const struct v4l2_src *)s->self)->drops : 0;
}

void trk_source_v4l2_io_stats(const struct trk_source *s, struct trk_v4l2_io_stats *st)
{
    memset(st, 0, sizeof(*st));
    if (s->ops != &v4l2_ops) return;
    const struct v4l2_src *v = s->self;
    st->lent = v->lent;
    st->copied = v->copied;
}

static void fourcc_str(uint32_t f, char out[5])
{
    for (int i = 0; i < 4; i++)
        out[i] = (char)(f >> (8 * i) & 0xff);
    out[4] = 0;
}

int trk_v4l2_list_devices(FILE *out)
{
    /* Stable names first: by-id links survive replugging into another port. */
    const char *dirs[] = { "/dev/v4l/by-id", "/dev" };
    int found = 0;
    for (int d = 0; d < 2; d++) {
        DIR *dir = opendir(dirs[d]);
        if (!dir) continue;
        struct dirent *e;
        while ((e = readdir(dir))) {
            if (e->d_name[0] == '.' || (d == 1 && strncmp(e->d_name, "video", 5))) continue;
            char path[512];
            snprintf(path, sizeof(path), "%s/%s", dirs[d], e->d_name);
            int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
            if (fd < 0) {
                /* A camera the user may not open is not "no camera". */
                log_warn_err(errno, "%s exists but cannot be opened%s", path,
                             errno == EACCES ? " (is this user in the 'video' group?)" : "");
                continue;
            }
            struct v4l2_capability cap = { 0 };
            if (xioctl(fd, VIDIOC_QUERYCAP, &cap) == 0) {
                uint32_t caps =
                    cap.capabilities & V4L2_CAP_DEVICE_CAPS ? cap.device_caps : cap.capabilities;
                if (caps & V4L2_CAP_VIDEO_CAPTURE) {
                    fprintf(out, "%s\t%s (%s)\n", path, cap.card, cap.bus_info);
                    found++;
                }
            }
            close(fd);
        }
        closedir(dir);
    }
    return found;
}

int trk_v4l2_list_formats(const char *device, FILE *out)
{
    int fd = open(device, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return -errno;
    struct v4l2_fmtdesc f = { .type = V4L2_BUF_TYPE_VIDEO_CAPTURE };
    for (f.index = 0; xioctl(fd, VIDIOC_ENUM_FMT, &f) == 0; f.index++) {
        char fcc[5];
        fourcc_str(f.pixelformat, fcc);
        fprintf(out, "%s\t%s%s\n", fcc, f.description,
                trk_v4l2_pixfmt(f.pixelformat) >= 0 || f.pixelformat == V4L2_PIX_FMT_MJPEG
                    ? ""
                    : " (not supported by trackd)");
        struct v4l2_frmsizeenum sz = { .pixel_format = f.pixelformat };
        for (sz.index = 0; xioctl(fd, VIDIOC_ENUM_FRAMESIZES, &sz) == 0; sz.index++) {
            if (sz.type == V4L2_FRMSIZE_TYPE_DISCRETE) {
                fprintf(out, "\t%ux%u\n", sz.discrete.width, sz.discrete.height);
            } else {
                fprintf(out, "\t%ux%u .. %ux%u\n", sz.stepwise.min_width, sz.stepwise.min_height,
                        sz.stepwise.max_width, sz.stepwise.max_height);
                break;
            }
        }
    }
    close(fd);
    return 0;
}

int trk_v4l2_list_controls(const char *device, FILE *out)
{
    int fd = open(device, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return -errno;
    struct v4l2_queryctrl q = { .id = V4L2_CTRL_FLAG_NEXT_CTRL };
    while (xioctl(fd, VIDIOC_QUERYCTRL, &q) == 0) {
        if (q.type != V4L2_CTRL_TYPE_CTRL_CLASS && !(q.flags & V4L2_CTRL_FLAG_DISABLED)) {
            char n[64];
            trk_v4l2_ctrl_name((const char *)q.name, n, sizeof(n));
            struct v4l2_control c = { .id = q.id };
            bool has = q.type != V4L2_CTRL_TYPE_BUTTON && xioctl(fd, VIDIOC_G_CTRL, &c) == 0;
            fprintf(out, "%-32s min=%d max=%d step=%d default=%d", n, q.minimum, q.maximum, q.step,
                    q.default_value);
            if (has) fprintf(out, " value=%d", c.value);
            fputc('\n', out);
        }
        q.id |= V4L2_CTRL_FLAG_NEXT_CTRL;
    }
    close(fd);
    return 0;
}
