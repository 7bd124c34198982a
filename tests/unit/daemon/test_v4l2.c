/* Unit tests of the camera code that needs no device: format choice, pitch
 * handling, control names, and the capture thread's reopen logic driven by a
 * fault-injecting live source through the real pipeline.
 * usage: test_daemon_v4l2 CASE */
#include <errno.h>
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
#include "control.h"
#include "log_hook.h"
#include "pipeline.h"
#include "source.h"
#include "v4l2.h"
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
    /* The last row of the last plane may come unpadded; one byte less is a
     * short (wrong-size) frame. */
    size_t last_pad = fourcc == V4L2_PIX_FMT_YUV420 ? bpl / 2 - cw
                      : fourcc == V4L2_PIX_FMT_NV12 ? bpl - 2 * cw
                                                    : bpl - row0;
    CHECK(trk_v4l2_copy(&f, fourcc, w, h, (uint32_t)bpl, buf, n - last_pad) == 0);
    CHECK(trk_v4l2_copy(&f, fourcc, w, h, (uint32_t)bpl, buf, n - last_pad - 1) == TRK_EINVAL);
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
 * fail with -ENODEV. WRONG_SIZE delivers a frame of another size. */
#define OPEN_FAIL  1000
#define WRONG_SIZE 2000
#define W          64
#define H          48

struct fake {
    const int *script;
    int n, pos;
    int open_fails; /* opens left to fail */
    bool open;
    int opens, closes, reads;
    double pts;
};

static int fake_open(void *self, struct trk_source *info)
{
    struct fake *s = self;
    s->opens++;
    if (s->open_fails == -1 || s->open_fails > 0) {
        if (s->open_fails > 0) s->open_fails--;
        return -ENODEV;
    }
    s->open = true;
    info->width = W;
    info->height = H;
    return 0;
}

static int fake_read(void *self, struct trk_frame *f)
{
    struct fake *s = self;
    s->reads++;
    if (!s->open) return -ENODEV;
    int step = s->pos < s->n ? s->script[s->pos++] : 0;
    while (step >= OPEN_FAIL && step < WRONG_SIZE) {
        s->open_fails = step - OPEN_FAIL;
        step = s->pos < s->n ? s->script[s->pos++] : 0;
    }
    if (step < 0) return step;
    /* A camera's pace (5 ms), so processing mostly keeps up. */
    struct timespec ts = { 0, 5 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    bool wrong = step == WRONG_SIZE;
    int err = trk_frame_layout(f, TRK_FMT_RGB24, wrong ? 2 * W : W, wrong ? 2 * H : H, 64);
    if (err) return err;
    memset(f->data, 200, f->cap);
    f->pts = s->pts += 0.01;
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

struct run {
    struct fake fake;
    bool file; /* not live: lossless and unpaced, every frame is processed */
    struct trk_pipeline_summary sum;
    int lines;
    double seconds;
    int err;
};

static volatile sig_atomic_t stop_flag;

static void *stopper(void *arg)
{
    double after = *(double *)arg;
    struct timespec ts = { (time_t)after, (long)((after - (time_t)after) * 1e9) };
    nanosleep(&ts, NULL);
    stop_flag = 1;
    return NULL;
}

/* Runs the real pipeline on the fake until max_frames (or a stop after
 * stop_after seconds when > 0). */
static void run_pipeline_ws(struct run *r, uint64_t max_frames, double stop_after,
                            struct trk_ws *ws)
{
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
    struct trk_pipeline_cfg pc = { .source = &src,
                                   .backend = b,
                                   .output = out,
                                   .ws = ws,
                                   .fast = r->file,
                                   .max_frames = max_frames,
                                   .control = control };
    stop_flag = 0;
    pthread_t t;
    if (stop_after > 0) pthread_create(&t, NULL, stopper, &stop_after);
    double t0 = trk_now();
    r->err = trk_pipeline_run(&pc, &stop_flag, &r->sum);
    r->seconds = trk_now() - t0;
    if (stop_after > 0) pthread_join(t, NULL);
    rewind(out);
    int c;
    while ((c = fgetc(out)) != EOF)
        r->lines += c == '\n';
    fclose(out);
    trk_control_destroy(&control);
    trk_backend_destroy(&b);
    trk_source_close(&src);
}

static void run_pipeline(struct run *r, uint64_t max_frames, double stop_after)
{
    run_pipeline_ws(r, max_frames, stop_after, NULL);
}

static void test_reopen(void)
{
    /* EIO, then the device is gone for two retries (ENODEV), a timeout, a
     * wrong-size frame: every fault is survived, with the same source. */
    static const int script[] = { 0,          0, OPEN_FAIL + 2, -EIO, 0, 0, -ETIMEDOUT, 0,
                                  WRONG_SIZE, 0, -ENODEV,       0,    0 };
    struct run r = { .fake = { .script = script, .n = sizeof(script) / sizeof(script[0]) } };
    run_pipeline(&r, 9, 0);
    CHECK(r.err == 0);
    CHECK(!r.sum.source_error);
    CHECK(r.sum.outages == 3);
    CHECK(r.sum.frames == 8); /* 9 captured; the wrong-size one is skipped */
    CHECK(r.sum.frames + r.sum.drops + r.sum.skipped == 9);
    CHECK(r.lines == 8);
    /* Opens: the first, 2 failures + 1 after EIO, 1 after the timeout, 1
     * after ENODEV. */
    CHECK(r.fake.opens == 6);
    CHECK(r.fake.closes == 4);
    /* Retries: at once, then once a second: the two failed ones cost 2 s. */
    CHECK(r.seconds > 1.9 && r.seconds < 3.5);
    fprintf(stderr, "reopen: %d opens, %.2f s, %llu outages\n", r.fake.opens, r.seconds,
            (unsigned long long)r.sum.outages);
}

static void test_stop_while_lost(void)
{
    /* A camera that never comes back: trackd keeps trying until asked to
     * stop, and the stop is honoured promptly (not after the retry). */
    static const int script[] = { 0, 0, OPEN_FAIL + 999, -ENODEV };
    struct run r = { .fake = { .script = script, .n = 4 } };
    run_pipeline(&r, 0, 2.3);
    CHECK(r.err == 0);
    CHECK(r.sum.outages == 1);
    CHECK(r.fake.opens >= 3 && r.fake.opens <= 5); /* first, at once, 1 s, 2 s */
    CHECK(r.seconds < 2.6);
    fprintf(stderr, "stop while lost: %d opens, stopped after %.2f s\n", r.fake.opens, r.seconds);
}

static void test_absent_at_start(void)
{
    /* Not there at start (main keeps it closed): the first read fails and
     * the capture thread opens it once it appears. */
    static const int script[] = { 0, 0, 0 };
    struct run r = { .fake = { .script = script, .n = 3, .open_fails = 1 } };
    run_pipeline(&r, 3, 0);
    CHECK(r.err == 0);
    CHECK(r.lines == (int)r.sum.frames && r.sum.frames + r.sum.drops == 3);
    fprintf(stderr, "absent at start: %d lines, %d opens\n", r.lines, r.fake.opens);
    CHECK(r.sum.outages == 1);
    CHECK(r.fake.opens == 2); /* at once (fails), after 1 s (works) */
}

/* Log lines captured from every layer (gpu/log_hook.h). */
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
    run_pipeline_ws(&r, 8, 0, ws);
    CHECK(r.err == 0 && r.sum.outages == 1);
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
