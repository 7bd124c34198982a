/* Unit tests of the camera code that needs no device: format choice, pitch
 * handling, control names, MJPEG decoding (and its --hwdec fallbacks), and
 * the capture thread's reopen logic driven by a fault-injecting live source
 * through the real pipeline.
 * usage: test_daemon_v4l2 CASE
 * One case needs a GPU (the device runs it, tests/device/run-on-device.sh):
 *   test_daemon_v4l2 mjpeg-hw   the camera's MJPEG decoder with NVDEC
 * against libavcodec on what UVC cameras send; exit 77 without a usable
 * CUDA device. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/videodev2.h>
#include <turbojpeg.h>

#include "../check.h"
#include "backend.h"
#include "control/control.h"
#include "source/hwdec.h"
#include "log_hook.h"
#include "pipeline.h"
#include "same_image.h"
#include "source/source.h"
#include "source/v4l2.h"
#include "out/ndjson.h"
#include "out/outputs.h"
#include "ws.h"

#define USB2 (24.0 * 1000 * 1000)

static uint32_t choose(const uint32_t *o, int n, enum trk_cam_format want, int w, int h, double fps)
{
    uint32_t f = 0;
    return trk_v4l2_choose_format(o, n, want, w, h, fps, USB2, &f) ? 0 : f;
}

static void test_format_choice(void)
{
    const uint32_t webcam[] = { V4L2_PIX_FMT_MJPEG, V4L2_PIX_FMT_YUYV };
    /* 640x480 YUYV at 30 fps is 18 MB/s: raw fits USB 2. */
    CHECK(choose(webcam, 2, TRK_CAM_AUTO, 640, 480, 30) == V4L2_PIX_FMT_YUYV);
    /* 1280x720 YUYV at 30 fps is 55 MB/s: MJPEG. */
    CHECK(choose(webcam, 2, TRK_CAM_AUTO, 1280, 720, 30) == V4L2_PIX_FMT_MJPEG);
    /* ... but at 10 fps raw fits again. */
    CHECK(choose(webcam, 2, TRK_CAM_AUTO, 1280, 720, 10) == V4L2_PIX_FMT_YUYV);
    /* Without MJPEG, raw whatever the bandwidth. */
    CHECK(choose(webcam + 1, 1, TRK_CAM_AUTO, 1920, 1080, 60) == V4L2_PIX_FMT_YUYV);
    const uint32_t many[] = { V4L2_PIX_FMT_RGB24, V4L2_PIX_FMT_YUYV, V4L2_PIX_FMT_NV12 };
    CHECK(choose(many, 3, TRK_CAM_AUTO, 640, 480, 30) == V4L2_PIX_FMT_NV12);
    CHECK(choose(many, 3, TRK_CAM_RGB24, 640, 480, 30) == V4L2_PIX_FMT_RGB24);
    CHECK(choose(many, 3, TRK_CAM_YUYV, 640, 480, 30) == V4L2_PIX_FMT_YUYV);
    uint32_t f;
    CHECK(trk_v4l2_choose_format(many, 3, TRK_CAM_MJPEG, 640, 480, 30, USB2, &f) == -EINVAL);
    const uint32_t odd[] = { V4L2_PIX_FMT_UYVY, V4L2_PIX_FMT_SBGGR8 };
    CHECK(trk_v4l2_choose_format(odd, 2, TRK_CAM_AUTO, 640, 480, 30, USB2, &f) == -EINVAL);
    CHECK(choose(webcam, 1, TRK_CAM_AUTO, 640, 480, 30) == V4L2_PIX_FMT_MJPEG);
    CHECK(trk_cam_format_parse("nv12") == TRK_CAM_NV12);
    CHECK(trk_cam_format_parse("auto") == TRK_CAM_AUTO);
    CHECK(trk_cam_format_parse("h264") == -1);
}

/* A driver buffer of fourcc w x h with pitch bpl: pixel bytes are a
 * pattern, padding is 0xEE so a copy that takes padding shows. */
static size_t make_buffer(uint8_t *buf, uint32_t fourcc, int w, int h, size_t bpl, size_t *row0)
{
    size_t cw = (size_t)(w + 1) / 2, ch = (size_t)(h + 1) / 2;
    size_t rows[3] = { (size_t)h, 0, 0 }, row[3] = { 0 }, pitch[3] = { bpl, 0, 0 };
    if (fourcc == V4L2_PIX_FMT_YUYV) row[0] = 4 * cw;
    if (fourcc == V4L2_PIX_FMT_RGB24) row[0] = 3 * (size_t)w;
    if (fourcc == V4L2_PIX_FMT_NV12) {
        row[0] = (size_t)w, row[1] = 2 * cw, rows[1] = ch, pitch[1] = bpl;
    }
    if (fourcc == V4L2_PIX_FMT_YUV420) {
        row[0] = (size_t)w, row[1] = row[2] = cw, rows[1] = rows[2] = ch;
        pitch[1] = pitch[2] = bpl / 2;
    }
    size_t off = 0;
    for (int p = 0; p < 3 && rows[p]; p++)
        for (size_t y = 0; y < rows[p]; y++)
            for (size_t x = 0; x < pitch[p]; x++)
                buf[off++] = x < row[p] ? (uint8_t)(p * 64 + y * 7 + x) : 0xEE;
    *row0 = row[0];
    return off;
}

static void count_unhold(void *h)
{
    (*(int *)h)++;
}

static void check_copy(uint32_t fourcc, int w, int h, size_t bpl)
{
    static uint8_t buf[1 << 16];
    size_t row0;
    size_t n = make_buffer(buf, fourcc, w, h, bpl, &row0);
    struct trk_frame f = { 0 };
    CHECK(trk_v4l2_copy(&f, fourcc, w, h, (uint32_t)bpl, buf, n) == 0);
    CHECK(f.img.width == w && f.img.height == h);
    CHECK(trk_image_check(&f.img) == 0);
    /* Every pixel byte of every plane arrived, no padding did. */
    size_t planes = fourcc == V4L2_PIX_FMT_NV12 ? 2 : fourcc == V4L2_PIX_FMT_YUV420 ? 3 : 1;
    size_t cw = (size_t)(w + 1) / 2, ch = (size_t)(h + 1) / 2;
    for (size_t p = 0; p < planes; p++) {
        size_t rows = p ? ch : (size_t)h;
        size_t row = p == 0 ? row0 : fourcc == V4L2_PIX_FMT_NV12 ? 2 * cw : cw;
        for (size_t y = 0; y < rows; y++)
            for (size_t x = 0; x < row; x++)
                if (f.img.plane[p][y * f.img.pitch[p] + x] != (uint8_t)(p * 64 + y * 7 + x)) {
                    fprintf(stderr, "fourcc %.4s plane %zu (%zu,%zu) wrong\n",
                            (const char *)&fourcc, p, x, y);
                    check_failures++;
                    return;
                }
    }
    /* Wrapped in place (USERPTR capture): the same image as the copy, its
     * planes inside the driver buffer, nothing copied into the frame. */
    struct trk_frame g = { 0 };
    int held = 0;
    trk_frame_keep(&g, &held, count_unhold);
    CHECK(trk_v4l2_wrap(&g, fourcc, w, h, (uint32_t)bpl, buf, n) == 0);
    CHECK(held == 1 && g.keep == NULL); /* the old hold was let go of */
    CHECK(g.data == NULL && trk_image_check(&g.img) == 0);
    CHECK(g.img.fmt == f.img.fmt && g.img.width == w && g.img.height == h &&
          g.img.matrix == f.img.matrix && g.img.full_range == f.img.full_range);
    CHECK(same_image(&f.img, &g.img));
    for (size_t p = 0; p < planes; p++)
        CHECK(g.img.plane[p] >= buf && g.img.plane[p] < buf + n);
    /* The last row of the last plane may come unpadded; one byte less is a
     * short (wrong-size) frame. */
    size_t last_pad = fourcc == V4L2_PIX_FMT_YUV420 ? bpl / 2 - cw
                      : fourcc == V4L2_PIX_FMT_NV12 ? bpl - 2 * cw
                                                    : bpl - row0;
    CHECK(trk_v4l2_copy(&f, fourcc, w, h, (uint32_t)bpl, buf, n - last_pad) == 0);
    CHECK(trk_v4l2_copy(&f, fourcc, w, h, (uint32_t)bpl, buf, n - last_pad - 1) == TRK_EINVAL);
    CHECK(trk_v4l2_wrap(&g, fourcc, w, h, (uint32_t)bpl, buf, n - last_pad) == 0);
    CHECK(trk_v4l2_wrap(&g, fourcc, w, h, (uint32_t)bpl, buf, n - last_pad - 1) == TRK_EINVAL);
    trk_frame_free_data(&f);
}

static void test_pitch(void)
{
    check_copy(V4L2_PIX_FMT_YUYV, 6, 3, 12);  /* tight */
    check_copy(V4L2_PIX_FMT_YUYV, 6, 3, 32);  /* padded rows */
    check_copy(V4L2_PIX_FMT_YUYV, 5, 3, 16);  /* odd width */
    check_copy(V4L2_PIX_FMT_RGB24, 5, 4, 16); /* 15 bytes a row in 16 */
    check_copy(V4L2_PIX_FMT_NV12, 6, 4, 8);
    check_copy(V4L2_PIX_FMT_NV12, 7, 5, 64);
    check_copy(V4L2_PIX_FMT_YUV420, 6, 4, 16);
    check_copy(V4L2_PIX_FMT_YUV420, 9, 3, 32);
    struct trk_frame f = { 0 };
    uint8_t buf[256] = { 0 };
    /* A pitch smaller than a row, an unknown format. */
    CHECK(trk_v4l2_copy(&f, V4L2_PIX_FMT_YUYV, 8, 2, 8, buf, sizeof(buf)) == TRK_EINVAL);
    CHECK(trk_v4l2_copy(&f, V4L2_PIX_FMT_UYVY, 8, 2, 16, buf, sizeof(buf)) == TRK_EINVAL);
    /* bytesperline 0 (some drivers for packed formats): tight rows. */
    CHECK(trk_v4l2_copy(&f, V4L2_PIX_FMT_YUYV, 8, 2, 0, buf, 32) == 0);
    CHECK(trk_v4l2_copy(&f, V4L2_PIX_FMT_YUYV, 8, 2, 0, buf, 31) == TRK_EINVAL);
    CHECK(trk_v4l2_wrap(&f, V4L2_PIX_FMT_YUYV, 8, 2, 8, buf, sizeof(buf)) == TRK_EINVAL);
    CHECK(trk_v4l2_wrap(&f, V4L2_PIX_FMT_MJPEG, 8, 2, 16, buf, sizeof(buf)) == TRK_EINVAL);
    CHECK(trk_v4l2_wrap(&f, V4L2_PIX_FMT_YUYV, 8, 2, 0, buf, 31) == TRK_EINVAL);
    CHECK(trk_cam_io_parse("auto") == TRK_CAM_IO_AUTO &&
          trk_cam_io_parse("mmap") == TRK_CAM_IO_MMAP);
    CHECK(trk_cam_io_parse("userptr") == -1);
    trk_frame_free_data(&f);
}

static void test_controls(void)
{
    char n[64];
    trk_v4l2_ctrl_name("White Balance, Automatic", n, sizeof(n));
    CHECK(!strcmp(n, "white_balance_automatic"));
    trk_v4l2_ctrl_name("Exposure Time, Absolute", n, sizeof(n));
    CHECK(!strcmp(n, "exposure_time_absolute"));
    trk_v4l2_ctrl_name("OSD Text Mode", n, sizeof(n));
    CHECK(!strcmp(n, "osd_text_mode"));
    trk_v4l2_ctrl_name("  Gain  ", n, sizeof(n));
    CHECK(!strcmp(n, "gain"));
    trk_v4l2_ctrl_name("Exposure Time, Absolute", n, 9);
    CHECK(!strcmp(n, "exposure"));
    struct trk_camera_control c;
    CHECK(trk_cam_control_parse("gain=10", &c) && !strcmp(c.name, "gain") && c.value == 10);
    CHECK(trk_cam_control_parse("x=0x10", &c) && c.value == 16);
    CHECK(trk_cam_control_parse("brightness=-5", &c) && c.value == -5);
    CHECK(!trk_cam_control_parse("=5", &c));
    CHECK(!trk_cam_control_parse("gain=", &c));
    CHECK(!trk_cam_control_parse("gain=1a", &c));
    CHECK(!trk_cam_control_parse("gain", &c));
}

/* A JPEG made by libjpeg-turbo (left half red, right half blue) decodes to
 * I420 with the full-range BT.601 values of those colours, for the
 * subsamplings webcams send; a corrupt one is rejected. */
static void check_mjpeg(int subsamp)
{
    enum { JW = 64, JH = 48 };
    static uint8_t rgb[JW * JH * 3];
    for (int y = 0; y < JH; y++)
        for (int x = 0; x < JW; x++) {
            uint8_t *p = rgb + (y * JW + x) * 3;
            p[0] = x < JW / 2 ? 255 : 0;
            p[1] = 0;
            p[2] = x < JW / 2 ? 0 : 255;
        }
    tjhandle tj = tjInitCompress();
    unsigned char *jpeg = NULL;
    unsigned long len = 0;
    CHECK(tjCompress2(tj, rgb, JW, 0, JH, TJPF_RGB, &jpeg, &len, subsamp, 95, 0) == 0);
    tjDestroy(tj);
    struct trk_mjpeg *d = NULL;
    struct trk_frame f = { 0 };
    CHECK(trk_mjpeg_create(&d) == 0);
    CHECK(trk_mjpeg_decode(d, jpeg, len, &f) == 0);
    CHECK(f.img.fmt == TRK_FMT_I420 && f.img.width == JW && f.img.height == JH);
    CHECK(f.img.full_range && f.img.matrix == TRK_MATRIX_BT601);
    CHECK(trk_image_check(&f.img) == 0);
    /* Full-range BT.601: red Y 76 Cb 85 Cr 255, blue Y 29 Cb 255 Cr 107. */
    const int want[2][3] = { { 76, 85, 255 }, { 29, 255, 107 } };
    for (int side = 0; side < 2; side++) {
        int x = side ? 3 * JW / 4 : JW / 4, y = JH / 2;
        int got[3] = { f.img.plane[0][y * f.img.pitch[0] + x],
                       f.img.plane[1][y / 2 * f.img.pitch[1] + x / 2],
                       f.img.plane[2][y / 2 * f.img.pitch[2] + x / 2] };
        for (int c = 0; c < 3; c++)
            if (abs(got[c] - want[side][c]) > 4) {
                fprintf(stderr, "subsamp %d side %d channel %d: %d, want %d\n", subsamp, side, c,
                        got[c], want[side][c]);
                check_failures++;
            }
    }
    /* Truncated to its header: rejected, and the decoder still works after. */
    CHECK(trk_mjpeg_decode(d, jpeg, 100, &f) == TRK_EINVAL);
    CHECK(trk_mjpeg_decode(d, jpeg, len, &f) == 0);
    trk_frame_free_data(&f);
    trk_mjpeg_destroy(&d);
    CHECK(d == NULL);
    tjFree(jpeg);
}

static void test_mjpeg(void)
{
    check_mjpeg(TJSAMP_420);
    check_mjpeg(TJSAMP_422);
}

/* ------------------------------------------------ fault-injecting source */

/* A scripted live source: each read consumes the next step. A step is a
 * frame (0), an error for read (negative), or OPEN_FAIL n: the next n opens
 * fail with -ENODEV. WRONG_SIZE delivers a frame of another size.
 *
 * A live source drops frames by design when processing falls behind, so on
 * a busy machine any frame may be dropped for a newer one. To test that
 * frames flow again after each fault whatever the scheduling, the fake
 * camera holds each fault back until the pipeline has written a result for
 * a frame delivered since the previous fault (FAULT_WAIT_S at most; a
 * pipeline that did not recover fails the test). */
#define OPEN_FAIL  1000
#define WRONG_SIZE 2000
#define W          64
#define H          48
#define MAX_FAULTS 8
#define MAX_OPENS  32
/* Generous: nominally a result comes within milliseconds. */
#define FAULT_WAIT_S 10.0

struct fake {
    const int *script;
    int n, pos;
    int open_fails; /* opens left to fail */
    bool open;
    int opens, closes, reads;
    double pts;
    FILE *out;          /* the pipeline's NDJSON output (flushed per line) */
    uint64_t delivered; /* frames delivered = the pipeline's seq of the next */
    int faults;
    uint64_t seq_at_fault[MAX_FAULTS]; /* frames delivered before each fault */
    double t_fault[MAX_FAULTS];
    double t_open[MAX_OPENS];
    int stuck_fault;      /* 1 + the fault held back in vain; 0 = none */
    pthread_mutex_t lock; /* opens is read by the stopper thread */
};

/* Seq of the last result written so far, -1 before the first. Reads the
 * output through its descriptor without moving the pipeline's offset. */
static long long last_result_seq(FILE *out)
{
    static char buf[1 << 16];
    ssize_t n = pread(fileno(out), buf, sizeof(buf) - 1, 0);
    if (n <= 0) return -1;
    buf[n] = 0;
    long long seq = -1;
    for (const char *p = buf; (p = strstr(p, "\"seq\":")); p++)
        seq = strtoll(p + 6, NULL, 10);
    return seq;
}

static void hold_fault(struct fake *s)
{
    if (!s->out) return;
    long long want = s->faults ? (long long)s->seq_at_fault[s->faults - 1] : 0;
    double until = trk_now() + FAULT_WAIT_S;
    while (last_result_seq(s->out) < want) {
        if (trk_now() > until) {
            if (!s->stuck_fault) s->stuck_fault = s->faults + 1;
            return;
        }
        struct timespec ts = { 0, 2 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
}

static void note_fault(struct fake *s)
{
    hold_fault(s);
    if (s->faults < MAX_FAULTS) {
        s->seq_at_fault[s->faults] = s->delivered;
        s->t_fault[s->faults] = trk_now();
    }
    s->faults++;
}

static int fake_open(void *self, struct trk_source *info)
{
    struct fake *s = self;
    pthread_mutex_lock(&s->lock);
    if (s->opens < MAX_OPENS) s->t_open[s->opens] = trk_now();
    s->opens++;
    pthread_mutex_unlock(&s->lock);
    if (s->open_fails == -1 || s->open_fails > 0) {
        if (s->open_fails > 0) s->open_fails--;
        return -ENODEV;
    }
    s->open = true;
    info->width = W;
    info->height = H;
    return 0;
}

static int fake_opens(struct fake *s)
{
    pthread_mutex_lock(&s->lock);
    int n = s->opens;
    pthread_mutex_unlock(&s->lock);
    return n;
}

static int fake_read(void *self, struct trk_frame *f)
{
    struct fake *s = self;
    s->reads++;
    if (!s->open) return -ENODEV;
    int step = s->pos < s->n ? s->script[s->pos++] : 0;
    bool held = false;
    while (step >= OPEN_FAIL && step < WRONG_SIZE) {
        /* The device vanishes here: the fault is the error that follows. */
        note_fault(s);
        held = true;
        s->open_fails = step - OPEN_FAIL;
        step = s->pos < s->n ? s->script[s->pos++] : 0;
    }
    if (step < 0) {
        if (!held) note_fault(s);
        return step;
    }
    /* A camera's pace (5 ms), so processing mostly keeps up. */
    struct timespec ts = { 0, 5 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    bool wrong = step == WRONG_SIZE;
    int err = trk_frame_layout(f, TRK_FMT_RGB24, wrong ? 2 * W : W, wrong ? 2 * H : H, 64);
    if (err) return err;
    memset(f->data, 200, f->cap);
    f->pts = s->pts += 0.01;
    s->delivered++;
    return 0;
}

static void fake_close(void *self)
{
    struct fake *s = self;
    if (s->open) s->closes++;
    s->open = false;
}

static void fake_destroy(void *self)
{
    (void)self;
}

static const struct trk_source_ops fake_ops = { "fake", fake_open, fake_read, fake_close,
                                                fake_destroy };

#define MAX_LINES 256

struct run {
    struct fake fake;
    bool file; /* not live: lossless and unpaced, every frame is processed */
    struct trk_pipeline_summary sum;
    int lines;
    long long seq[MAX_LINES]; /* seq of each result line, in output order */
    double seconds, t_end;
    int err;
};

static volatile sig_atomic_t stop_flag;

/* Requests a stop after `after` seconds, or when `at_opens` opens have been
 * made (> 0), unless the run ends first. */
struct timer {
    double after;
    struct fake *fake;
    int at_opens;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done, fired;
    double t_fired;
    int opens_at_fire;
};

static void *timer_main(void *arg)
{
    struct timer *t = arg;
    double until = trk_now() + t->after;
    pthread_mutex_lock(&t->lock);
    while (!t->done) {
        double now = trk_now();
        if (now >= until || (t->at_opens > 0 && fake_opens(t->fake) >= t->at_opens)) {
            t->opens_at_fire = fake_opens(t->fake);
            t->t_fired = now;
            t->fired = true;
            stop_flag = 1;
            break;
        }
        /* Short slices: at_opens is polled. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 2 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&t->cond, &t->lock, &ts);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

/* Runs the real pipeline on the fake until max_frames (or until the timer
 * stops it: the planned stop of a test, or a deadline that fails it). */
static void run_pipeline_ws(struct run *r, uint64_t max_frames, struct timer *tm, struct trk_ws *ws)
{
    pthread_mutex_init(&r->fake.lock, NULL);
    struct trk_source src = { .ops = &fake_ops, .self = &r->fake, .live = !r->file };
    strcpy(src.desc, "fake camera");
    if (!r->fake.open_fails) trk_source_open(&src);
    struct trk_backend *b = NULL;
    struct trk_backend_cfg bc = { .kind = TRK_BACKEND_CPU_REF, .max_width = W, .max_height = H };
    struct trk_object_def def = { .name = "all", .space = TRK_SPACE_RGB, .hi = { 255, 255, 255 } };
    CHECK(trk_backend_create(&bc, &b) == 0);
    /* The object set reaches the pipeline through the control module, as
     * in trackd. */
    static struct trk_objects objs = { .n = 1, .color = { { 255, 0, 0 } } };
    objs.def[0] = def;
    struct trk_control_cfg cc = { .objects = &objs };
    struct trk_control *control = NULL;
    CHECK(trk_control_create(&cc, &control) == 0);
    FILE *out = tmpfile();
    r->fake.out = out;
    /* The results file and the server's clients, through the outputs door
     * as in trackd (the door closes its own copy of the file). */
    struct trk_outputs *outs = NULL;
    CHECK(trk_outputs_create(&outs) == 0);
    CHECK(trk_ndjson_add(outs, fdopen(dup(fileno(out)), "w"), "results", true, NULL) == 0);
    if (ws) CHECK(trk_websocket_add(outs, ws) == 0);
    struct trk_pipeline_cfg pc = { .source = &src,
                                   .backend = b,
                                   .outputs = outs, /* the fake reads the file */
                                   .ws = ws,
                                   .fast = r->file,
                                   .max_frames = max_frames,
                                   .control = control };
    stop_flag = 0;
    pthread_t t;
    if (tm) {
        tm->fake = &r->fake;
        pthread_mutex_init(&tm->lock, NULL);
        pthread_cond_init(&tm->cond, NULL);
        pthread_create(&t, NULL, timer_main, tm);
    }
    double t0 = trk_now();
    r->err = trk_pipeline_run(&pc, &stop_flag, &r->sum);
    r->t_end = trk_now();
    r->seconds = r->t_end - t0;
    if (tm) {
        pthread_mutex_lock(&tm->lock);
        tm->done = true;
        pthread_cond_signal(&tm->cond);
        pthread_mutex_unlock(&tm->lock);
        pthread_join(t, NULL);
    }
    CHECK(trk_outputs_destroy(&outs) == 0);
    rewind(out);
    char line[4096];
    while (fgets(line, sizeof(line), out)) {
        const char *p = strstr(line, "\"seq\":");
        if (r->lines < MAX_LINES) r->seq[r->lines] = p ? strtoll(p + 6, NULL, 10) : -1;
        r->lines++;
    }
    fclose(out);
    trk_control_destroy(&control);
    r->fake.out = NULL;
    trk_backend_destroy(&b);
    trk_source_close(&src);
    pthread_mutex_destroy(&r->fake.lock);
}

static void run_pipeline(struct run *r, uint64_t max_frames, struct timer *tm)
{
    run_pipeline_ws(r, max_frames, tm, NULL);
}

/* After each fault the pipeline processed at least one frame delivered after
 * it (and before the next fault), and no fault was held back in vain. The
 * last fault is left out when the camera never came back. */
static void check_flow_after_faults(const struct run *r, const char *what, bool last_recovers)
{
    const struct fake *s = &r->fake;
    CHECK(s->stuck_fault == 0);
    if (s->stuck_fault)
        fprintf(stderr, "%s: no result before fault %d within %.0f s\n", what, s->stuck_fault,
                FAULT_WAIT_S);
    int nf = s->faults < MAX_FAULTS ? s->faults : MAX_FAULTS;
    for (int k = 0; k < nf - !last_recovers; k++) {
        long long lo = (long long)s->seq_at_fault[k];
        long long hi = k + 1 < nf ? (long long)s->seq_at_fault[k + 1] : -1;
        bool seen = false;
        for (int i = 0; i < r->lines && i < MAX_LINES; i++)
            seen |= r->seq[i] >= lo && (hi < 0 || r->seq[i] < hi);
        if (!seen) {
            fprintf(stderr, "%s: no frame processed after fault %d (seq %lld..%lld)\n", what, k + 1,
                    lo, hi);
            check_failures++;
        }
    }
}

/* Every frame delivered is accounted for once: a result line, a counted drop
 * (replaced by a newer frame before processing took it), or a counted
 * backend rejection. */
static void check_accounting(const struct run *r, uint64_t delivered, const char *what)
{
    CHECK(r->fake.delivered == delivered);
    CHECK(r->lines == (int)r->sum.frames);
    CHECK(r->sum.frames + r->sum.drops + r->sum.skipped == delivered);
    CHECK(r->sum.frames >= 1);
    /* Results come in delivery order, each frame once. */
    for (int i = 1; i < r->lines && i < MAX_LINES; i++)
        CHECK(r->seq[i] > r->seq[i - 1]);
    fprintf(stderr, "%s: %llu delivered: %llu processed, %llu dropped, %llu skipped\n", what,
            (unsigned long long)r->fake.delivered, (unsigned long long)r->sum.frames,
            (unsigned long long)r->sum.drops, (unsigned long long)r->sum.skipped);
}

/* A deadline that only a hung pipeline misses (nominally the runs below take
 * 1-2 s; a loaded 2-core CI machine stretches that far less than 10x). */
#define DEADLINE_S 20.0

static void test_reopen(void)
{
    /* EIO, then the device is gone for two retries (ENODEV), a timeout, a
     * wrong-size frame: every fault is survived, with the same source. */
    static const int script[] = { 0,          0, OPEN_FAIL + 2, -EIO, 0, 0, -ETIMEDOUT, 0,
                                  WRONG_SIZE, 0, -ENODEV,       0,    0 };
    struct run r = { .fake = { .script = script, .n = sizeof(script) / sizeof(script[0]) } };
    struct timer deadline = { .after = DEADLINE_S };
    run_pipeline(&r, 9, &deadline);
    CHECK(!deadline.fired);
    CHECK(r.err == 0);
    CHECK(!r.sum.source_error);
    CHECK(r.sum.outages == 3);
    CHECK(r.fake.faults == 3);
    /* 9 delivered; any may be dropped for a newer one on a busy machine, the
     * wrong-size one is rejected unless it was dropped. */
    check_accounting(&r, 9, "reopen");
    CHECK(r.sum.skipped <= 1);
    check_flow_after_faults(&r, "reopen", true);
    /* Opens: the first, 2 failures + 1 after EIO, 1 after the timeout, 1
     * after ENODEV. */
    CHECK(r.fake.opens == 6);
    CHECK(r.fake.closes == 4);
    /* Retries: at once, then once a second after the loss (lower bounds: a
     * busy machine only makes them later). The one that works comes by a
     * generous deadline (nominally 2 s after the loss). */
    if (r.fake.opens == 6) {
        double lost = r.fake.t_fault[0];
        CHECK(r.fake.t_open[2] >= lost + 1.0 - 1e-3);
        CHECK(r.fake.t_open[3] >= lost + 2.0 - 1e-3);
        CHECK(r.fake.t_open[3] < lost + 2.0 + 3.0);
        fprintf(stderr, "reopen: retries %.3f, %.3f, %.3f s after the loss\n",
                r.fake.t_open[1] - lost, r.fake.t_open[2] - lost, r.fake.t_open[3] - lost);
    }
    fprintf(stderr, "reopen: %d opens, %.2f s, %llu outages\n", r.fake.opens, r.seconds,
            (unsigned long long)r.sum.outages);
}

static void test_stop_while_lost(void)
{
    /* A camera that never comes back: trackd keeps trying until asked to
     * stop, and the stop is honoured promptly (not after the next retry). The
     * stop comes just after the retry 2 s after the loss, so the next one is
     * a second away. */
    static const int script[] = { 0, 0, OPEN_FAIL + 999, -ENODEV };
    struct run r = { .fake = { .script = script, .n = 4 } };
    /* Opens: the first, at once, 1 s, 2 s after the loss. */
    struct timer tm = { .after = DEADLINE_S, .at_opens = 4 };
    run_pipeline(&r, 0, &tm);
    CHECK(tm.fired && tm.opens_at_fire == 4);
    CHECK(r.err == 0);
    CHECK(r.sum.outages == 1);
    CHECK(!r.sum.source_error);
    CHECK(r.fake.faults == 1);
    check_flow_after_faults(&r, "stop while lost", false);
    /* No retry after the stop, and the run ended well before the next retry
     * was due (a second after the last; 0.5 s is ten times what the
     * pipeline's 50 ms wake-ups need). */
    CHECK(r.fake.opens == tm.opens_at_fire);
    CHECK(r.t_end - tm.t_fired < 0.5);
    if (r.fake.opens >= 4) CHECK(r.fake.t_open[3] >= r.fake.t_fault[0] + 2.0 - 1e-3);
    fprintf(stderr, "stop while lost: %d opens, stopped %.3f s after the request\n", r.fake.opens,
            r.t_end - tm.t_fired);
}

static void test_absent_at_start(void)
{
    /* Not there at start (main keeps it closed): the first read fails and
     * the capture thread opens it once it appears. */
    static const int script[] = { 0, 0, 0 };
    struct run r = { .fake = { .script = script, .n = 3, .open_fails = 1 } };
    struct timer deadline = { .after = DEADLINE_S };
    run_pipeline(&r, 3, &deadline);
    CHECK(!deadline.fired);
    CHECK(r.err == 0);
    check_accounting(&r, 3, "absent at start");
    CHECK(r.sum.skipped == 0);
    fprintf(stderr, "absent at start: %d lines, %d opens\n", r.lines, r.fake.opens);
    CHECK(r.sum.outages == 1);
    CHECK(r.fake.opens == 2); /* at once (fails), after 1 s (works) */
}

/* Log lines captured from every layer (base/log_hook.h). */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_text[16384];

static void capture_log(enum trk_log_level level, const char *tag, const char *line)
{
    pthread_mutex_lock(&log_lock);
    size_t n = strlen(log_text);
    snprintf(log_text + n, sizeof(log_text) - n, "%s %s: %s\n", trk_log_level_name(level), tag,
             line);
    pthread_mutex_unlock(&log_lock);
}

static int count_in(const char *text, const char *what)
{
    int n = 0;
    for (const char *s = text; (s = strstr(s, what)); s += strlen(what))
        n++;
    return n;
}

/* Frames the backend rejects are skipped and counted, and each run of
 * failures is logged: after a frame works again, the next failure is
 * logged too (not silent for the rest of the run). A file-like source is
 * lossless, so every frame reaches the backend. */
static void test_skip_recover(void)
{
    static const int script[] = { 0, WRONG_SIZE, WRONG_SIZE, 0, WRONG_SIZE, 0 };
    struct run r = { .fake = { .script = script, .n = 6 }, .file = true };
    log_text[0] = '\0';
    trk_log_set_hook(capture_log, TRK_LOG_INFO);
    run_pipeline(&r, 6, 0);
    trk_log_set_hook(NULL, TRK_LOG_INFO);
    fprintf(stderr, "skip/recover log:\n%s", log_text);
    CHECK(r.err == 0);
    CHECK(r.sum.frames == 3 && r.sum.drops == 0);
    CHECK(r.sum.skipped == 3);
    CHECK(r.lines == 3);
    /* Two runs of failures (frames 1-2, frame 4): two error lines, each
     * followed by a recovery line. */
    CHECK(count_in(log_text, "error pipeline: backend cpu-ref failed on frame ") == 2);
    CHECK(strstr(log_text, "failed on frame 1;") && strstr(log_text, "failed on frame 4;"));
    CHECK(count_in(log_text, "info pipeline: backend cpu-ref works again") == 2);
    CHECK(strstr(log_text, "works again on frame 3 (2 frames skipped") != NULL);
    CHECK(strstr(log_text, "works again on frame 5 (3 frames skipped") != NULL);
}

/* The object set comes from the control module; without one the pipeline
 * refuses to start rather than track nothing. */
static void test_needs_control(void)
{
    struct fake fk = { 0 };
    struct trk_source src = { .ops = &fake_ops, .self = &fk };
    struct trk_backend *b = NULL;
    struct trk_backend_cfg bc = { .kind = TRK_BACKEND_CPU_REF, .max_width = W, .max_height = H };
    CHECK(trk_backend_create(&bc, &b) == 0);
    struct trk_pipeline_cfg pc = { .source = &src, .backend = b };
    struct trk_pipeline_summary sum;
    stop_flag = 0;
    CHECK(trk_pipeline_run(&pc, &stop_flag, &sum) == TRK_EINVAL);
    CHECK(fk.reads == 0);
    trk_backend_destroy(&b);
}

/* ------------------------------------------- MJPEG cameras and --hwdec */

/* What a UVC camera sends: a scene of coloured disks (soft 1-pixel edges,
 * a little sensor noise) on a grey ramp, compressed by libjpeg-turbo at
 * quality 85 with the standard Huffman tables, as 4:2:0 or 4:2:2, and the
 * 4:2:0 JPEGs again without their DHT segments (most UVC cameras leave them
 * out: the decoder must use the standard tables of JPEG's annex K). Each
 * frame of a stream moves the disks a little. */
struct cam_disk {
    double fx, fy, fr; /* centre and radius as fractions of width, height, height */
    uint8_t rgb[3];
};
static const struct cam_disk cam_disks[] = {
    { 0.22, 0.30, 0.11, { 210, 40, 35 } },   /* red: H 2, S 212, V 210       */
    { 0.70, 0.30, 0.12, { 40, 190, 60 } },   /* green: H 128, S 201, V 190   */
    { 0.30, 0.72, 0.10, { 225, 205, 40 } },  /* yellow: H 54, S 210, V 225   */
    { 0.72, 0.72, 0.09, { 245, 245, 240 } }, /* white: Y 244, Cb 126, Cr 128 */
};
#define CAM_DISKS ((int)(sizeof(cam_disks) / sizeof(cam_disks[0])))
/* One object per disk, its box far from the disk's colour and from the
 * background (grey: S 0, Y <= 160), so that only the soft edges decide.
 * No disk's hue is near another's complement: JPEG's ringing at an edge
 * overshoots the chroma towards the complement of the disk's hue, and
 * would put stray pixels (which each decoder places differently) in that
 * object's box. */
static const struct trk_object_def cam_objs[CAM_DISKS] = {
    { .name = "red", .space = TRK_SPACE_HSV, .lo = { 340, 120, 100 }, .hi = { 20, 255, 255 } },
    { .name = "green", .space = TRK_SPACE_HSV, .lo = { 105, 120, 100 }, .hi = { 150, 255, 255 } },
    { .name = "yellow", .space = TRK_SPACE_HSV, .lo = { 40, 120, 100 }, .hi = { 70, 255, 255 } },
    { .name = "white", .space = TRK_SPACE_YCBCR, .lo = { 215, 112, 112 }, .hi = { 255, 144, 144 } },
};
#define CAM_FRAMES 5
#define CAM_MAXW   1280
#define CAM_MAXH   720

static uint32_t cam_hash(uint32_t x)
{
    x ^= x >> 16, x *= 0x7feb352dU, x ^= x >> 15, x *= 0x846ca68bU, x ^= x >> 16;
    return x;
}

/* Frame k of a w x h stream as packed RGB. */
static void cam_scene(uint8_t *rgb, int w, int h, int k)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double c[3];
            for (int i = 0; i < 3; i++)
                c[i] = 50 + 100.0 * x / w + 10.0 * y / h;
            for (int d = 0; d < CAM_DISKS; d++) {
                double dx = x - (cam_disks[d].fx * w + 5 * k),
                       dy = y - (cam_disks[d].fy * h + 3 * k);
                double cover = cam_disks[d].fr * h + 0.5 - sqrt(dx * dx + dy * dy);
                cover = cover < 0 ? 0 : cover > 1 ? 1 : cover;
                for (int i = 0; i < 3; i++)
                    c[i] += cover * (cam_disks[d].rgb[i] - c[i]);
            }
            uint32_t n = cam_hash((uint32_t)(((k * CAM_MAXH + y) * CAM_MAXW) + x));
            for (int i = 0; i < 3; i++) {
                int v = (int)lround(c[i]) + (int)((n >> (8 * i)) % 9) - 4;
                rgb[((size_t)y * w + x) * 3 + i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
        }
}

/* The JPEG without its DHT segments (the ones before the scan: the
 * entropy-coded data after SOS is copied as it is); its length. */
static size_t cam_strip_dht(const uint8_t *in, size_t len, uint8_t *out)
{
    size_t i = 2, o = 2;
    memcpy(out, in, 2); /* SOI */
    while (i + 4 <= len && in[i] == 0xFF) {
        size_t seg = 2 + ((size_t)in[i + 2] << 8 | in[i + 3]);
        bool sos = in[i + 1] == 0xDA;
        if (in[i + 1] != 0xC4) {
            memcpy(out + o, in + i, sos ? len - i : seg);
            o += sos ? len - i : seg;
        }
        if (sos) return o;
        i += seg;
    }
    return 0; /* no scan: not what libjpeg-turbo writes */
}

/* Offset of the first marker m (0xFFm) in the JPEG's headers; 0 if none. */
static size_t cam_marker(const uint8_t *j, size_t len, uint8_t m)
{
    for (size_t i = 2; i + 4 <= len && j[i] == 0xFF; i += 2 + ((size_t)j[i + 2] << 8 | j[i + 3])) {
        if (j[i + 1] == m) return i;
        if (j[i + 1] == 0xDA) break;
    }
    return 0;
}

/* The largest differences between two decoders' results, over a run. */
struct cam_worst {
    double centroid_px, mass_pct;
    int bbox_px;
    int pix_max;      /* largest |Y|, |Cb|, |Cr| difference of one sample */
    double pix_mean;  /* largest mean |difference| of a plane over a frame */
    uint64_t results; /* object results compared */
};

static bool same_results(const struct trk_obj_result *a, const struct trk_obj_result *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i].mass != b[i].mass || a[i].sum_x != b[i].sum_x || a[i].sum_y != b[i].sum_y ||
            a[i].x0 != b[i].x0 || a[i].y0 != b[i].y0 || a[i].x1 != b[i].x1 || a[i].y1 != b[i].y1)
            return false;
    return true;
}

static void print_result(const char *who, int i, const struct trk_obj_result *r)
{
    fprintf(stderr, "  %s %s: mass %llu centroid %.3f,%.3f bbox %d,%d-%d,%d\n", who,
            cam_objs[i].name, (unsigned long long)r->mass,
            r->mass ? (double)r->sum_x / r->mass : -1, r->mass ? (double)r->sum_y / r->mass : -1,
            r->x0, r->y0, r->x1, r->y1);
}

/* Tolerances between NVDEC's and libavcodec's decoding of one JPEG (see
 * test_mjpeg_hw). */
#define TOL_CENTROID_PX 0.5
#define TOL_MASS_PCT    1.0
#define TOL_BBOX_PX     2

/* NVDEC's results (hw) against libavcodec's (sw) on one frame: every disk
 * found by both, within the tolerances; the worst differences noted. */
static void compare_decoders(const char *what, const struct trk_obj_result *hw,
                             const struct trk_obj_result *sw, struct cam_worst *worst)
{
    for (int i = 0; i < CAM_DISKS; i++) {
        const struct trk_obj_result *a = &hw[i], *b = &sw[i];
        CHECKF(a->mass > 0 && b->mass > 0, "%s %s: found by NVDEC %d, software %d", what,
               cam_objs[i].name, a->mass > 0, b->mass > 0);
        if (!a->mass || !b->mass) continue;
        double dc = fmax(fabs((double)a->sum_x / a->mass - (double)b->sum_x / b->mass),
                         fabs((double)a->sum_y / a->mass - (double)b->sum_y / b->mass));
        double dm = fabs((double)a->mass - (double)b->mass) / (double)b->mass * 100;
        int db = abs(a->x0 - b->x0);
        db = abs(a->y0 - b->y0) > db ? abs(a->y0 - b->y0) : db;
        db = abs(a->x1 - b->x1) > db ? abs(a->x1 - b->x1) : db;
        db = abs(a->y1 - b->y1) > db ? abs(a->y1 - b->y1) : db;
        worst->centroid_px = fmax(worst->centroid_px, dc);
        worst->mass_pct = fmax(worst->mass_pct, dm);
        worst->bbox_px = db > worst->bbox_px ? db : worst->bbox_px;
        worst->results++;
        if (dc > TOL_CENTROID_PX || dm > TOL_MASS_PCT || db > TOL_BBOX_PX) {
            fprintf(stderr,
                    "%s %s: NVDEC vs software: centroid %.3f px (<= %.1f), mass %.3f %% "
                    "(<= %.1f), bbox %d px (<= %d)\n",
                    what, cam_objs[i].name, dc, TOL_CENTROID_PX, dm, TOL_MASS_PCT, db, TOL_BBOX_PX);
            print_result("NVDEC   ", i, a);
            print_result("software", i, b);
            check_failures++;
        }
    }
}

/* Pixel differences of an NV12 (NVDEC, downloaded) and an I420 (software)
 * frame of the same JPEG, into worst; false when they cannot be compared. */
static bool compare_pixels(const struct trk_image *nv12, const struct trk_image *i420,
                           struct cam_worst *worst)
{
    if (nv12->fmt != TRK_FMT_NV12 || i420->fmt != TRK_FMT_I420 || nv12->width != i420->width ||
        nv12->height != i420->height)
        return false;
    int w = i420->width, h = i420->height, cw = (w + 1) / 2, ch = (h + 1) / 2;
    for (int p = 0; p < 3; p++) {
        int pw = p ? cw : w, ph = p ? ch : h;
        uint64_t sum = 0;
        for (int y = 0; y < ph; y++)
            for (int x = 0; x < pw; x++) {
                int a = p == 0 ? nv12->plane[0][(size_t)y * nv12->pitch[0] + x]
                               : nv12->plane[1][(size_t)y * nv12->pitch[1] + 2 * x + (p - 1)];
                int d = abs(a - i420->plane[p][(size_t)y * i420->pitch[p] + x]);
                sum += (uint64_t)d;
                worst->pix_max = d > worst->pix_max ? d : worst->pix_max;
            }
        worst->pix_mean = fmax(worst->pix_mean, (double)sum / ((double)pw * ph));
    }
    return true;
}

/* Input a camera may send that is no JPEG: decode must say so (TRK_EINVAL)
 * and the next frame must decode as if nothing had happened. cut: the JPEG
 * up to its scan (headers and SOF: the decoder starts a picture, for NVDEC
 * a surface, that never gets its data), then noise. A JPEG cut in the
 * middle of its scan is decoded by libavcodec as far as it goes (it
 * emulates the missing EOI): either answer is right, but it must not
 * break the stream either. */
static void feed_bad(const char *what, struct trk_mjpeg *d, const uint8_t *jpeg, size_t len,
                     struct trk_frame *f)
{
    static uint8_t noise[4096];
    for (size_t i = 0; i < sizeof(noise); i++)
        noise[i] = (uint8_t)cam_hash((uint32_t)i + 77);
    size_t sos = cam_marker(jpeg, len, 0xDA);
    CHECK(sos > 0);
    int err = trk_mjpeg_decode(d, jpeg, sos, f);
    CHECKF(err == TRK_EINVAL, "%s: headers without a scan: %d, want TRK_EINVAL", what, err);
    err = trk_mjpeg_decode(d, noise, sizeof(noise), f);
    CHECKF(err == TRK_EINVAL, "%s: noise: %d, want TRK_EINVAL", what, err);
    err = trk_mjpeg_decode(d, jpeg, sos + (len - sos) / 2, f);
    CHECKF(err == 0 || err == TRK_EINVAL, "%s: cut in its scan: %d", what, err);
    fprintf(stderr, "%s: a JPEG cut in its scan: %s\n", what,
            err ? "rejected" : "decoded as far as it goes");
}

/* One frame (in, len) through the NVDEC decoder dhw into fhw, checked
 * against the software decoder's frame fsw and its cpu results r_cpu; the
 * CUDA backend's results on NVDEC's frame in r_hw. false when there are
 * none. */
static bool cam_gpu_frame(const char *fw, struct trk_mjpeg *dhw, const uint8_t *in, size_t len,
                          struct trk_frame *fhw, const struct trk_frame *fsw, bool is420,
                          struct trk_backend *cuda, const struct trk_obj_result *r_cpu,
                          struct trk_obj_result *r_hw, struct cam_worst *worst)
{
    int err = trk_mjpeg_decode(dhw, in, len, fhw);
    CHECKF(err == 0, "%s: the NVDEC decoder: %d (%s)", fw, err, trk_strerror(err));
    if (err) return false;
    /* 4:2:0: NVDEC, a device image; 4:2:2: software, a host frame. */
    CHECKF(fhw->img.mem == (is420 ? TRK_MEM_CUDA : TRK_MEM_HOST),
           "%s: the NVDEC decoder gave a %s frame (%s), want %s", fw,
           fhw->img.mem == TRK_MEM_CUDA ? "device" : "host", trk_pixfmt_name(fhw->img.fmt),
           is420 ? "device" : "host");
    CHECK(fhw->img.fmt == (is420 ? TRK_FMT_NV12 : TRK_FMT_I420));
    CHECK(fhw->img.width == fsw->img.width && fhw->img.height == fsw->img.height &&
          fhw->img.full_range && fhw->img.matrix == TRK_MATRIX_BT601);
    CHECK(trk_image_check(&fhw->img) == 0);
    struct trk_obj_result r_cuda_sw[CAM_DISKS];
    struct trk_backend_timing t = { 0 };
    CHECK(trk_backend_process(cuda, &fsw->img, NULL, r_cuda_sw, NULL) == 0);
    /* The same pixels: the CUDA backend equals the CPU one exactly. */
    if (!same_results(r_cuda_sw, r_cpu, CAM_DISKS)) {
        fprintf(stderr, "%s: cuda != cpu on the software frame\n", fw);
        for (int i = 0; i < CAM_DISKS; i++)
            print_result("cuda", i, &r_cuda_sw[i]), print_result("cpu ", i, &r_cpu[i]);
        check_failures++;
    }
    err = trk_backend_process(cuda, &fhw->img, NULL, r_hw, &t);
    CHECKF(err == 0, "%s: cuda on the NVDEC decoder's frame: %d (%s)", fw, err, trk_strerror(err));
    if (err) return false;
    if (is420) {
        /* Read in place: nothing crossed from the host. */
        CHECKF(t.upload_bytes == 0, "%s: upload_bytes %llu from a device image", fw,
               (unsigned long long)t.upload_bytes);
        compare_decoders(fw, r_hw, r_cuda_sw, worst);
        const struct trk_image *host = trk_frame_host(fhw);
        CHECKF(host && compare_pixels(host, &fsw->img, worst), "%s: NVDEC frame downloaded", fw);
    } else {
        /* The fallback is libavcodec: the same frame exactly. */
        CHECKF(same_image(&fhw->img, &fsw->img), "%s: fallback frame == software frame", fw);
        CHECKF(same_results(r_hw, r_cuda_sw, CAM_DISKS), "%s: fallback results", fw);
    }
    return true;
}

/* One camera stream: w x h JPEGs of one kind, CAM_FRAMES of them with bad
 * input after the second, through one software decoder, each frame
 * through the cpu backend (every disk found). With cuda (the GPU machine)
 * also through one NVDEC decoder (--hwdec cuda's state, as the V4L2 source
 * makes it: cam_gpu_frame). The 4:2:0 stream with DHT fills ref, the one
 * without DHT is compared with it: the standard tables are the ones
 * libjpeg-turbo wrote, so the pictures must be the same exactly (the
 * software decoder's Y plane, NVDEC's results). */
struct cam_ref {
    struct trk_obj_result hw[CAM_FRAMES][CAM_DISKS];
    uint8_t *sw_y[CAM_FRAMES]; /* the software frame's Y plane, packed */
};

static void cam_stream(int w, int h, int subsamp, bool dht_less, struct trk_backend *cuda,
                       struct trk_backend *cpu, struct cam_ref *ref, struct cam_worst *worst)
{
    bool gpu = cuda != NULL, is420 = subsamp == TJSAMP_420;
    char what[64];
    snprintf(what, sizeof(what), "cam %dx%d %s%s", w, h, is420 ? "4:2:0" : "4:2:2",
             dht_less ? " no DHT" : "");
    struct trk_hwdec_cfg cfg = { .mode = TRK_HWDEC_CUDA, .device_frames = true };
    struct trk_hwdec_ctx *hw = gpu ? trk_hwdec_create(&cfg, what) : NULL;
    struct trk_mjpeg *dsw = NULL, *dhw = NULL;
    CHECK(trk_mjpeg_create(&dsw) == 0);
    if (gpu) {
        int err = hw ? trk_mjpeg_create_hw(&dhw, hw) : TRK_ENOMEM;
        CHECKF(err == 0, "%s: trk_mjpeg_create_hw: %d (%s)", what, err, trk_strerror(err));
    }
    uint8_t *rgb = malloc((size_t)w * h * 3), *stripped = malloc((size_t)w * h * 3 + 4096);
    tjhandle tj = tjInitCompress();
    struct trk_frame fsw = { 0 }, fhw = { 0 };
    for (int k = 0; rgb && stripped && dsw && (dhw || !gpu) && k < CAM_FRAMES; k++) {
        char fw[96];
        snprintf(fw, sizeof(fw), "%s frame %d", what, k);
        cam_scene(rgb, w, h, k);
        unsigned char *jpeg = NULL;
        unsigned long jlen = 0;
        CHECK(tjCompress2(tj, rgb, w, 0, h, TJPF_RGB, &jpeg, &jlen, subsamp, 85, 0) == 0);
        const uint8_t *in = jpeg;
        size_t len = jlen;
        CHECK(cam_marker(jpeg, jlen, 0xC4) > 0); /* libjpeg-turbo writes its tables */
        if (dht_less) {
            len = cam_strip_dht(jpeg, jlen, stripped);
            in = stripped;
            CHECKF(len > 0 && len < jlen && !cam_marker(stripped, len, 0xC4),
                   "%s: DHT removed (%zu -> %zu bytes)", fw, (size_t)jlen, len);
        }
        if (k == 2) {
            feed_bad(fw, dsw, in, len, &fsw);
            if (gpu) feed_bad(fw, dhw, in, len, &fhw);
        }
        int err = trk_mjpeg_decode(dsw, in, len, &fsw);
        CHECKF(err == 0, "%s: the software decoder: %d", fw, err);
        struct trk_obj_result r_cpu[CAM_DISKS], r_hw[CAM_DISKS];
        bool have_hw = false;
        if (!err) {
            CHECK(fsw.img.mem == TRK_MEM_HOST && fsw.img.fmt == TRK_FMT_I420);
            CHECK(fsw.img.width == w && fsw.img.height == h && trk_image_check(&fsw.img) == 0);
            CHECK(trk_backend_process(cpu, &fsw.img, NULL, r_cpu, NULL) == 0);
            for (int i = 0; i < CAM_DISKS; i++)
                CHECKF(r_cpu[i].mass > 0, "%s: %s not found in the software frame", fw,
                       cam_objs[i].name);
            if (gpu)
                have_hw =
                    cam_gpu_frame(fw, dhw, in, len, &fhw, &fsw, is420, cuda, r_cpu, r_hw, worst);
        }
        tjFree(jpeg);
        if (err || !ref || !is420) continue;
        if (!dht_less) {
            memcpy(ref->hw[k], r_hw, sizeof(r_hw));
            ref->sw_y[k] = malloc((size_t)w * h);
            for (int y = 0; ref->sw_y[k] && y < h; y++)
                memcpy(ref->sw_y[k] + (size_t)y * w, fsw.img.plane[0] + y * fsw.img.pitch[0],
                       (size_t)w);
            continue;
        }
        bool same_y = ref->sw_y[k] != NULL;
        for (int y = 0; same_y && y < h; y++)
            same_y = !memcmp(ref->sw_y[k] + (size_t)y * w, fsw.img.plane[0] + y * fsw.img.pitch[0],
                             (size_t)w);
        CHECKF(same_y, "%s: software decoding without DHT == with DHT", fw);
        if (have_hw && !same_results(r_hw, ref->hw[k], CAM_DISKS)) {
            fprintf(stderr, "%s: NVDEC without DHT != NVDEC with DHT (standard tables not used?)\n",
                    fw);
            for (int i = 0; i < CAM_DISKS; i++)
                print_result("no DHT", i, &r_hw[i]), print_result("DHT   ", i, &ref->hw[k][i]);
            check_failures++;
        }
    }
    tjDestroy(tj);
    free(rgb);
    free(stripped);
    trk_frame_free_data(&fsw);
    trk_frame_free_data(&fhw);
    trk_mjpeg_destroy(&dsw);
    trk_mjpeg_destroy(&dhw);
    trk_hwdec_destroy(&hw);
}

/* The streams of test_mjpeg_hw without the GPU (CI): the software decoder
 * on what cameras send, the JPEGs without DHT included, bad input in the
 * middle of a stream. */
static void test_mjpeg_camera(void)
{
    unsetenv("TJ_OPTIMIZE"); /* libjpeg-turbo writes the standard tables */
    struct trk_backend *cpu = NULL;
    struct trk_backend_cfg bc = { .kind = TRK_BACKEND_CPU,
                                  .max_width = CAM_MAXW,
                                  .max_height = CAM_MAXH };
    CHECK(trk_backend_create(&bc, &cpu) == 0);
    if (!cpu) return;
    CHECK(trk_backend_set_objects(cpu, cam_objs, CAM_DISKS) == 0);
    static const int sizes[][2] = { { 640, 480 }, { 1280, 720 } };
    for (int s = 0; s < 2; s++) {
        struct cam_ref ref = { 0 };
        struct cam_worst worst = { 0 };
        cam_stream(sizes[s][0], sizes[s][1], TJSAMP_420, false, NULL, cpu, &ref, &worst);
        cam_stream(sizes[s][0], sizes[s][1], TJSAMP_420, true, NULL, cpu, &ref, &worst);
        cam_stream(sizes[s][0], sizes[s][1], TJSAMP_422, false, NULL, cpu, NULL, &worst);
        for (int k = 0; k < CAM_FRAMES; k++) {
            CHECK(ref.sw_y[k] != NULL);
            free(ref.sw_y[k]);
        }
    }
    trk_backend_destroy(&cpu);
}

/* The camera's MJPEG decoder with NVDEC (--hwdec), on the GPU machine: the
 * streams of cam_stream, 640x480 and 1280x720. NVDEC and libavcodec decode
 * the same coefficients with different IDCTs (each within about a level of
 * the exact one), so the box borders move by a fraction of a pixel along
 * a disk's soft edge and a few edge pixels flip, spread around the
 * circumference. Tolerances (disks of radius >= 43 px): mass <= 1 %,
 * centroid <= 0.5 px, box edges <= 2 px. What two other IDCTs do to these
 * very frames, measured here against libavcodec: libjpeg-turbo's accurate
 * one (samples within 1 level) mass <= 0.02 %, centroid <= 0.02 px, boxes
 * equal; its fast one (within 3 levels) mass <= 0.2 %, centroid <= 0.05 px,
 * boxes equal: the tolerances leave room for an IDCT five times worse. (At
 * quality 70 the fast IDCT put a ringing pixel 6 px beyond a disk's edge in
 * one frame: box edges are as fragile as the colour box is close to the
 * ringing; at 85 there is none.) Prints the worst differences seen.
 * Without a usable GPU: SKIP, exit 77 (never a pass). */
static int test_mjpeg_hw(void)
{
    char why[256] = "";
    if (trk_cuda_check(why, sizeof(why)) != TRK_CUDA_USABLE) {
        printf("SKIP: mjpeg-hw needs a usable CUDA device: %s\n", why);
        return 77;
    }
    unsetenv("TJ_OPTIMIZE"); /* libjpeg-turbo writes the standard tables */
    struct trk_backend *cuda = NULL, *cpu = NULL;
    struct trk_backend_cfg bc = { .kind = TRK_BACKEND_CUDA,
                                  .max_width = CAM_MAXW,
                                  .max_height = CAM_MAXH };
    int err = trk_backend_create(&bc, &cuda);
    CHECKF(err == 0, "the CUDA backend: %s", trk_strerror(err));
    bc.kind = TRK_BACKEND_CPU;
    CHECK(trk_backend_create(&bc, &cpu) == 0);
    if (!cuda || !cpu) return check_exit("test_v4l2 mjpeg-hw");
    CHECK(trk_backend_set_objects(cuda, cam_objs, CAM_DISKS) == 0);
    CHECK(trk_backend_set_objects(cpu, cam_objs, CAM_DISKS) == 0);
    log_text[0] = '\0';
    trk_log_set_hook(capture_log, TRK_LOG_INFO);
    static const int sizes[][2] = { { 640, 480 }, { 1280, 720 } };
    struct cam_worst worst = { 0 };
    for (int s = 0; s < 2; s++) {
        int w = sizes[s][0], h = sizes[s][1];
        struct cam_ref ref = { 0 };
        cam_stream(w, h, TJSAMP_420, false, cuda, cpu, &ref, &worst);
        cam_stream(w, h, TJSAMP_420, true, cuda, cpu, &ref, &worst);
        cam_stream(w, h, TJSAMP_422, false, cuda, cpu, NULL, &worst);
        for (int k = 0; k < CAM_FRAMES; k++)
            free(ref.sw_y[k]);
    }
    trk_log_set_hook(NULL, TRK_LOG_INFO);
    fprintf(stderr, "mjpeg-hw log:\n%s", log_text);
    /* NVDEC for 4:2:0, said once per stream; 4:2:2 falls back, said once. */
    for (int s = 0; s < 2; s++) {
        char line[160];
        for (int v = 0; v < 2; v++) {
            snprintf(line, sizeof(line), "cam %dx%d 4:2:0%s: decoding mjpeg on the GPU",
                     sizes[s][0], sizes[s][1], v ? " no DHT" : "");
            CHECKF(count_in(log_text, line) == 1, "one line \"%s\"", line);
        }
        snprintf(line, sizeof(line), "cam %dx%d 4:2:2: NVDEC cannot decode this mjpeg video",
                 sizes[s][0], sizes[s][1]);
        CHECKF(count_in(log_text, line) == 1, "one line \"%s\"", line);
    }
    CHECK(count_in(log_text, "NVDEC cannot decode") == 2);
    printf("MJPEG-HW WORST NVDEC vs libavcodec (%llu object results, 4:2:0 and 4:2:0 without "
           "DHT, 640x480 and 1280x720, q85): centroid %.3f px (tolerance %.1f), mass %.3f %% "
           "(%.1f), bbox %d px (%d); samples: max |diff| %d, worst plane mean |diff| %.3f\n",
           (unsigned long long)worst.results, worst.centroid_px, TOL_CENTROID_PX, worst.mass_pct,
           TOL_MASS_PCT, worst.bbox_px, TOL_BBOX_PX, worst.pix_max, worst.pix_mean);
    CHECK(worst.results == 2 * 2 * CAM_FRAMES * CAM_DISKS);
    /* Garbage (wrong tables, a wrong plane) is tens of levels off. */
    CHECKF(worst.pix_mean <= 2.0, "mean sample difference %.3f", worst.pix_mean);
    trk_backend_destroy(&cuda);
    trk_backend_destroy(&cpu);
    return check_exit("test_v4l2 mjpeg-hw");
}

/* In CI (no GPU): the camera's decoder with --hwdec auto decodes in
 * software, said in one line (also across a reopening of the camera, which
 * makes a new decoder with the same state), with frames identical to the
 * plain software decoder's; --hwdec cuda refuses with the reason. The
 * configuration is the one trackd plans without a usable GPU. */
static void test_mjpeg_fallback(void)
{
    struct trk_hwdec_cfg cfg = { .mode = TRK_HWDEC_AUTO, .device_frames = false };
    char why[150] = "", reason[sizeof(cfg.why_not)];
    enum trk_cuda_status st = trk_cuda_check(why, sizeof(why));
    snprintf(reason, sizeof(reason), "no usable GPU (%s)",
             st == TRK_CUDA_USABLE ? "a GPU is present: planned as without one" : why);
    snprintf(cfg.why_not, sizeof(cfg.why_not), "%s", reason);
    log_text[0] = '\0';
    trk_log_set_hook(capture_log, TRK_LOG_INFO);
    struct trk_hwdec_ctx *hw = trk_hwdec_create(&cfg, "/dev/video7");
    CHECK(hw != NULL);
    tjhandle tj = tjInitCompress();
    enum { FW = 320, FH = 240 };
    static uint8_t rgb[FW * FH * 3];
    cam_scene(rgb, FW, FH, 0);
    for (int open = 0; open < 2; open++) {
        struct trk_mjpeg *dhw = NULL, *dsw = NULL;
        CHECK(trk_mjpeg_create_hw(&dhw, hw) == 0 && dhw != NULL);
        CHECK(trk_mjpeg_create(&dsw) == 0);
        CHECK(!trk_hwdec_active(hw));
        for (int s = 0; dhw && dsw && s < 2; s++) {
            unsigned char *jpeg = NULL;
            unsigned long len = 0;
            CHECK(tjCompress2(tj, rgb, FW, 0, FH, TJPF_RGB, &jpeg, &len,
                              s ? TJSAMP_422 : TJSAMP_420, 85, 0) == 0);
            struct trk_frame a = { 0 }, b = { 0 };
            CHECK(trk_mjpeg_decode(dhw, jpeg, len, &a) == 0);
            CHECK(trk_mjpeg_decode(dsw, jpeg, len, &b) == 0);
            CHECK(a.img.mem == TRK_MEM_HOST && a.img.fmt == TRK_FMT_I420);
            CHECKF(same_image(&a.img, &b.img), "open %d subsamp %d: same frame", open, s);
            CHECK(trk_mjpeg_decode(dhw, jpeg, 100, &a) == TRK_EINVAL);
            trk_frame_free_data(&a);
            trk_frame_free_data(&b);
            tjFree(jpeg);
        }
        trk_mjpeg_destroy(&dhw);
        trk_mjpeg_destroy(&dsw);
    }
    trk_hwdec_destroy(&hw);
    tjDestroy(tj);

    /* --hwdec cuda cannot be had: refused, with the device and the reason. */
    cfg.mode = TRK_HWDEC_CUDA;
    hw = trk_hwdec_create(&cfg, "/dev/video7");
    struct trk_mjpeg *d = NULL;
    CHECK(trk_mjpeg_create_hw(&d, hw) == TRK_SOURCE_EHWDEC && d == NULL);
    trk_hwdec_destroy(&hw);
    trk_log_set_hook(NULL, TRK_LOG_INFO);
    fprintf(stderr, "mjpeg fallback log:\n%s", log_text);
    char line[400];
    snprintf(line, sizeof(line), "info hwdec: /dev/video7: decoding mjpeg in software: %s\n",
             reason);
    CHECKF(count_in(log_text, line) == 1, "one line \"%s\"", line);
    CHECK(count_in(log_text, "decoding mjpeg") == 1);
    snprintf(line, sizeof(line),
             "error hwdec: --hwdec cuda: /dev/video7 cannot be decoded on the GPU: %s\n", reason);
    CHECKF(count_in(log_text, line) == 1, "one line \"%s\"", line);
}

static const char *client_py;

/* Web clients are told: a real WebSocket client (python3-websockets) sees
 * status "lost" when the camera goes and "ok" when it is back. */
static void test_status_ws(void)
{
    struct trk_ws *ws = NULL;
    struct trk_ws_cfg wc = { .address = "127.0.0.1", .port = 0 };
    CHECK(trk_ws_create(&wc, &ws) == 0 && trk_ws_start(ws) == 0);
    if (!ws) return;
    char port[16], out[] = "/tmp/trk_status_XXXXXX";
    snprintf(port, sizeof(port), "%d", trk_ws_port(ws));
    int fd = mkstemp(out);
    CHECK(fd >= 0);
    close(fd);
    char *argv[] = { "/usr/bin/python3", (char *)client_py, port, "4", out, NULL };
    pid_t pid;
    extern char **environ;
    CHECK(posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) == 0);
    /* Wait for the client to connect. */
    char buf[4096] = "";
    for (int i = 0; i < 100 && !strstr(buf, "connected"); i++) {
        struct timespec ts = { 0, 50 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        FILE *f = fopen(out, "r");
        if (f) {
            buf[fread(buf, 1, sizeof(buf) - 1, f)] = 0;
            fclose(f);
        }
    }
    CHECK(strstr(buf, "connected") != NULL);
    /* Frames, a loss that lasts one retry (1 s), frames again. */
    static const int script[] = { 0, 0, 0, 0, OPEN_FAIL + 1, -ENODEV, 0, 0, 0, 0 };
    struct run r = { .fake = { .script = script, .n = 10 } };
    struct timer deadline = { .after = DEADLINE_S };
    run_pipeline_ws(&r, 8, &deadline, ws);
    CHECK(!deadline.fired);
    CHECK(r.err == 0 && r.sum.outages == 1);
    check_flow_after_faults(&r, "status", true);
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    FILE *f = fopen(out, "r");
    buf[0] = 0;
    if (f) {
        buf[fread(buf, 1, sizeof(buf) - 1, f)] = 0;
        fclose(f);
    }
    unlink(out);
    fprintf(stderr, "client saw:\n%s", buf);
    const char *lost = strstr(buf, "\nlost ");
    CHECK(lost != NULL);
    CHECK(lost && strstr(lost, "No such device"));
    CHECK(lost && strstr(lost, "\nok fake camera"));
    trk_ws_destroy(&ws);
}

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    const char *c = argv[1];
    if (!strcmp(c, "format_choice"))
        test_format_choice();
    else if (!strcmp(c, "pitch"))
        test_pitch();
    else if (!strcmp(c, "controls"))
        test_controls();
    else if (!strcmp(c, "mjpeg"))
        test_mjpeg();
    else if (!strcmp(c, "mjpeg_camera"))
        test_mjpeg_camera();
    else if (!strcmp(c, "mjpeg_fallback"))
        test_mjpeg_fallback();
    else if (!strcmp(c, "mjpeg-hw"))
        return test_mjpeg_hw();
    else if (!strcmp(c, "reopen"))
        test_reopen();
    else if (!strcmp(c, "skip_recover"))
        test_skip_recover();
    else if (!strcmp(c, "needs_control"))
        test_needs_control();
    else if (!strcmp(c, "stop_while_lost"))
        test_stop_while_lost();
    else if (!strcmp(c, "status_ws") && argc > 2) {
        client_py = argv[2];
        test_status_ws();
    } else if (!strcmp(c, "absent_at_start"))
        test_absent_at_start();
    else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    return check_exit("test_v4l2");
}
