/* The picture steps of the edges view and carved views (daemon/control/
 * preview.h) and the focus check (daemon/ops/focus.h), on seeded synthetic
 * pictures with known answers: no JPEG between the pixels and the checks.
 *
 *   fit      trk_preview_fit's sizes (phone, tablet, wide, degenerate)
 *   carve    two boxes on a textured picture carved to a phone's width:
 *            every box pixel is in the carved picture, moved by its box's
 *            vector, bit for bit; boxes and centroids mapped; nothing cut
 *   squeeze  a target narrower than a box: pixels of it are cut, the box
 *            maps to its kept pixels inside the picture, never lost whole
 *   scale    a carved picture scaled 2x: boxes and centroids scaled with it
 *   message  a carved view's preview message: TRKC, header, JSON, JPEG
 *   edges    the edges view paints exactly the Canny map of the picture
 *   focus    learnt baseline, lost on a blurred picture, set again, every
 *            lent frame given back, cpu and cpu-ref runners equal */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "canny.h"
#include "control/control.h"
#include "control/preview.h"
#include "messages.h"
#include "ops/focus.h"
#include "result.h"
#include "seam.h"

#define W 160
#define H 120

/* A textured RGB picture (energy everywhere, seeded) with a red box at
 * (20..39, 10..39) and a blue one at (100..129, 70..99). */
static void scene(uint8_t *px, unsigned seed)
{
    srand(seed);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            uint8_t *p = px + ((size_t)y * W + x) * 3;
            int v = 128 + (int)(50 * sin(x / 3.0) * cos(y / 5.0)) + rand() % 9 - 4;
            p[0] = p[1] = p[2] = (uint8_t)v;
            if (x >= 20 && x <= 39 && y >= 10 && y <= 39) p[0] = 220, p[1] = 30 + x, p[2] = 40 + y;
            if (x >= 100 && x <= 129 && y >= 70 && y <= 99)
                p[0] = 30 + y, p[1] = 50, p[2] = 200 + x % 50;
        }
}

static struct trk_image rgb_image(uint8_t *px, int w, int h)
{
    return (struct trk_image){ .plane = { px },
                               .pitch = { (size_t)w * 3 },
                               .width = w,
                               .height = h,
                               .fmt = TRK_FMT_RGB24,
                               .matrix = TRK_MATRIX_BT601,
                               .full_range = true };
}

/* The scene's two objects as a frame result (frame = picture). */
static void objects(struct trk_result_object o[2])
{
    memset(o, 0, 2 * sizeof o[0]);
    o[0] = (struct trk_result_object){ .r = { .mass = 600, .x0 = 20, .y0 = 10, .x1 = 39, .y1 = 39 },
                                       .found = true,
                                       .c = { .cx = 29.5, .cy = 24.5 } };
    o[1] =
        (struct trk_result_object){ .r = { .mass = 900, .x0 = 100, .y0 = 70, .x1 = 129, .y1 = 99 },
                                    .found = true,
                                    .c = { .cx = 114.5, .cy = 84.5 } };
}

static void test_fit(void)
{
    int w, h;
    trk_preview_fit(640, 360, 390, 844, &w, &h);
    CHECKF(w == 166 && h == 360, "%dx%d", w, h);
    trk_preview_fit(640, 360, 4, 3, &w, &h);
    CHECKF(w == 480 && h == 360, "%dx%d", w, h);
    trk_preview_fit(640, 360, 16, 4, &w, &h);
    CHECKF(w == 640 && h == 160, "%dx%d", w, h);
    trk_preview_fit(640, 360, 16, 9, &w, &h);
    CHECKF(w == 640 && h == 360, "%dx%d", w, h);
    trk_preview_fit(100, 100, 1, 16384, &w, &h);
    CHECKF(w == 1 && h == 100, "%dx%d", w, h);
    trk_preview_fit(100, 100, 16384, 1, &w, &h);
    CHECKF(w == 100 && h == 1, "%dx%d", w, h);
    /* The work bound: a small carve at full size, a big one scaled down so
     * that its work is within the bound. */
    CHECK(trk_preview_carve_width(320, 240, 110, 240) == 320);
    int cw = trk_preview_carve_width(1920, 1080, 499, 1080);
    double s = (double)cw / 1920, work = (1920 - 499) * s * 1920 * s * 1080 * s;
    CHECKF(cw < 1920 && work <= TRK_PREVIEW_CARVE_WORK && work > 0.9 * TRK_PREVIEW_CARVE_WORK,
           "%d: %g", cw, work);
    CHECK(trk_preview_carve_width(16384, 16384, 1, 1) >= 16);
}

/* A picture from trk_preview_rgb of the scene (the carve's source). */
static int scene_rgb(struct trk_preview *p, uint8_t *px, struct trk_image *rgb)
{
    scene(px, 7);
    struct trk_image src = rgb_image(px, W, H);
    return trk_preview_rgb(p, &src, NULL, NULL, rgb);
}

/* The carve tests' start: an encoder, the scene as its picture (*rgb, the
 * pixels in px) and the two objects in its pixels (o). */
static struct trk_preview *carve_fixture(uint8_t *px, struct trk_image *rgb,
                                         struct trk_preview_obj o[2])
{
    struct trk_preview *p = NULL;
    CHECK(trk_preview_create(W, 90, &p) == 0);
    CHECK(scene_rgb(p, px, rgb) == 0);
    struct trk_result_object ro[2];
    objects(ro);
    CHECK(trk_preview_objects(ro, 2, W, H, W, H, o) == 2);
    return p;
}

static void test_carve(void)
{
    static uint8_t px[W * H * 3];
    struct trk_image rgb;
    struct trk_preview_obj o[2];
    struct trk_preview *p = carve_fixture(px, &rgb, o);
    struct trk_seam_info info;
    int tw, th;
    trk_preview_fit(W, H, 390, 844, &tw, &th); /* 55 x 120 */
    CHECK(trk_preview_carve(p, &rgb, tw, th, o, 2, &info) == 0);
    CHECK(rgb.width == tw && rgb.height == th && info.cut_protected == 0);
    const int src_box[2][4] = { { 20, 10, 39, 39 }, { 100, 70, 129, 99 } };
    const double src_c[2][2] = { { 29.5, 24.5 }, { 114.5, 84.5 } };
    for (int k = 0; k < 2; k++) {
        const int *b = src_box[k];
        int dx = o[k].box[0] - b[0], dy = o[k].box[1] - b[1];
        CHECKF(o[k].id == k && o[k].box[2] - b[2] == dx && o[k].box[3] - b[3] == dy,
               "object %d: [%d %d %d %d]", k, o[k].box[0], o[k].box[1], o[k].box[2], o[k].box[3]);
        CHECK(fabs(o[k].cx - (src_c[k][0] + dx)) < 1e-9 &&
              fabs(o[k].cy - (src_c[k][1] + dy)) < 1e-9);
        long differ = 0;
        for (int y = b[1]; y <= b[3]; y++)
            for (int x = b[0]; x <= b[2]; x++)
                differ += memcmp(px + ((size_t)y * W + x) * 3,
                                 (const uint8_t *)rgb.plane[0] + (size_t)(y + dy) * rgb.pitch[0] +
                                     (size_t)(x + dx) * 3,
                                 3) != 0;
        CHECKF(differ == 0, "object %d: %ld pixels not moved rigidly", k, differ);
    }
    trk_preview_destroy(&p);
}

static void test_squeeze(void)
{
    static uint8_t px[W * H * 3];
    struct trk_image rgb;
    struct trk_preview_obj o[2];
    struct trk_preview *p = carve_fixture(px, &rgb, o);
    struct trk_seam_info info;
    CHECK(trk_preview_carve(p, &rgb, 12, H, o, 2, &info) == 0); /* boxes 20 and 30 wide */
    CHECK(info.cut_protected > 0);
    for (int k = 0; k < 2; k++) {
        CHECKF(o[k].id == k && o[k].box[0] >= 0 && o[k].box[2] < 12 && o[k].box[0] <= o[k].box[2],
               "object %d: [%d %d %d %d]", k, o[k].box[0], o[k].box[1], o[k].box[2], o[k].box[3]);
        CHECK(o[k].cx >= o[k].box[0] && o[k].cx <= o[k].box[2]);
    }
    /* Bad sizes. */
    CHECK(trk_preview_carve(p, &rgb, 13, H, o, 2, NULL) == TRK_EINVAL); /* wider than it is */
    trk_preview_destroy(&p);
}

static void test_scale(void)
{
    static uint8_t px[W * H * 3];
    struct trk_image rgb;
    struct trk_preview_obj o[2];
    struct trk_preview *p = carve_fixture(px, &rgb, o);
    CHECK(trk_preview_carve(p, &rgb, 80, 60, o, 2, NULL) == 0);
    struct trk_preview_obj before[2];
    memcpy(before, o, sizeof o);
    CHECK(trk_preview_scale(p, &rgb, 160, 120, o, 2) == 0);
    CHECK(rgb.width == 160 && rgb.height == 120);
    for (int k = 0; k < 2; k++) {
        CHECK(o[k].box[0] == 2 * before[k].box[0] && o[k].box[2] == 2 * before[k].box[2] + 1);
        CHECK(fabs(o[k].cx - ((before[k].cx + 0.5) * 2 - 0.5)) < 1e-9);
    }
    /* Only a carved picture is scaled. */
    CHECK(scene_rgb(p, px, &rgb) == 0);
    CHECK(trk_preview_scale(p, &rgb, 10, 10, o, 2) == TRK_EINVAL);
    trk_preview_destroy(&p);
}

static void test_message(void)
{
    struct trk_preview *p;
    CHECK(trk_preview_create(W, 90, &p) == 0);
    static uint8_t px[W * H * 3];
    scene(px, 7);
    struct trk_image src = rgb_image(px, W, H);
    struct trk_result_object ro[2];
    objects(ro);
    struct trk_control_view v = { .view = 1, .carve = true, .fit_w = 390, .fit_h = 844 };
    uint8_t *msg = NULL;
    size_t cap = 0, len = 0;
    CHECK(trk_preview_message(p, &src, NULL, &v, 42, ro, 2, &msg, &cap, &len) == 0);
    CHECK(len > TRK_PREVIEW_HDR + 4 && !memcmp(msg, "TRKC", 4));
    CHECK(msg[12] == 55 && msg[13] == 0 && msg[14] == 120 && msg[16] == W && msg[18] == H);
    uint32_t n = msg[20] | msg[21] << 8 | msg[22] << 16 | (uint32_t)msg[23] << 24;
    CHECK(TRK_PREVIEW_HDR + 4 + n + 2 < len);
    char *json = strndup((const char *)msg + 24, n);
    CHECKF(json &&
               !strncmp(json, "{\"carved_from\":[160,120],\"objects\":[{\"id\":0,\"bbox\":[", 52),
           "%s", json);
    free(json);
    CHECK(msg[24 + n] == 0xff && msg[25 + n] == 0xd8);
    v = (struct trk_control_view){ .view = 0 };
    CHECK(trk_preview_message(p, &src, NULL, &v, 42, ro, 2, &msg, &cap, &len) == 0);
    CHECK(!memcmp(msg, "TRKP", 4) && msg[20] == 0xff && msg[21] == 0xd8);
    free(msg);
    trk_preview_destroy(&p);
}

static void test_edges(void)
{
    struct trk_preview *p;
    CHECK(trk_preview_create(W, 90, &p) == 0);
    static uint8_t px[W * H * 3], ref[W * H];
    struct trk_image rgb;
    CHECK(scene_rgb(p, px, &rgb) == 0);
    struct trk_canny_params cp;
    struct trk_canny_cfg cc = { .sigma = TRK_FOCUS_SIGMA,
                                .low = TRK_FOCUS_LOW,
                                .high = TRK_FOCUS_HIGH };
    CHECK(trk_canny_params_init(&cp, &cc) == 0);
    CHECK(trk_canny_ref(&cp, &rgb, ref, W, NULL) == 0);
    CHECK(trk_preview_edges(p, &rgb, NULL) == 0);
    long edges = 0, wrong = 0;
    for (int i = 0; i < W * H; i++) {
        const uint8_t *q = (const uint8_t *)rgb.plane[0] + (size_t)i * 3;
        edges += ref[i] != 0;
        if (ref[i])
            wrong += q[0] != 255 || q[1] != 255 || q[2] != 255;
        else
            wrong += q[0] != px[i * 3] / 2 || q[1] != px[i * 3 + 1] / 2;
    }
    CHECKF(edges > 200 && wrong == 0, "%ld edges, %ld pixels wrong", edges, wrong);
    struct trk_image small = rgb_image(px, W / 2, H);
    CHECK(trk_preview_edges(p, &rgb, &small) == TRK_EINVAL);
    trk_preview_destroy(&p);
}

/* ------------------------------------------------------------- focus */

static pthread_mutex_t rel_lock = PTHREAD_MUTEX_INITIALIZER;
static int released;

static void release(void *ctx, void *holder)
{
    (void)ctx, (void)holder;
    pthread_mutex_lock(&rel_lock);
    released++;
    pthread_mutex_unlock(&rel_lock);
}

/* The scene box-blurred with radius r (0: as is), in out. */
static void blurred(const uint8_t *in, uint8_t *out, int r)
{
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < 3; c++) {
                int s = 0, n = 0;
                for (int dy = -r; dy <= r; dy++)
                    for (int dx = -r; dx <= r; dx++) {
                        int xx = x + dx < 0 ? 0 : x + dx >= W ? W - 1 : x + dx;
                        int yy = y + dy < 0 ? 0 : y + dy >= H ? H - 1 : y + dy;
                        s += in[((size_t)yy * W + xx) * 3 + c], n++;
                    }
                out[((size_t)y * W + x) * 3 + c] = (uint8_t)((s + n / 2) / n);
            }
}

/* Lends img to f as frame seq and waits until it is measured. */
static void measure(struct trk_focus *f, const struct trk_image *img, uint64_t seq)
{
    struct trk_focus_reading r;
    trk_focus_get(f, &r);
    uint64_t before = r.samples;
    trk_focus_offer(f, &(struct trk_focus_frame){
                           .img = img, .seq = seq, .release = release, .holder = (void *)img });
    for (int i = 0; i < 2000; i++) { /* 20 s at most */
        trk_focus_clear(f);
        trk_focus_get(f, &r);
        if (r.samples > before) return;
        usleep(10000);
    }
    CHECKF(0, "frame %llu was not measured", (unsigned long long)seq);
}

static void test_focus(void)
{
    static uint8_t sharp[W * H * 3], soft[W * H * 3];
    scene(sharp, 3);
    blurred(sharp, soft, 4);
    struct trk_image a = rgb_image(sharp, W, H), b = rgb_image(soft, W, H);
    struct trk_focus *f = NULL;
    CHECK(trk_focus_create(&(struct trk_focus_cfg){ .every = 0, .warn = 0.6 }, &f) == TRK_EINVAL);
    CHECK(trk_focus_create(&(struct trk_focus_cfg){ .every = 2, .warn = 1.5 }, &f) == TRK_EINVAL);
    CHECK(trk_focus_create(&(struct trk_focus_cfg){ .every = 2, .warn = 0.6 }, &f) == 0);
    CHECK(trk_focus_due(f, 0) && !trk_focus_due(f, 1) && trk_focus_due(f, 4) &&
          !trk_focus_due(NULL, 0));
    struct trk_focus_reading r;
    trk_focus_get(f, &r);
    CHECK(r.state == TRK_FOCUS_NONE && r.sharpness < 0 && r.baseline < 0);
    double v;
    CHECK(trk_focus_set_baseline(f, 0, &v) == TRK_EINVAL); /* no sample yet */
    for (int i = 0; i < TRK_FOCUS_LEARN; i++) {
        measure(f, &a, (uint64_t)i);
        trk_focus_get(f, &r);
        CHECK(r.state == (i + 1 < TRK_FOCUS_LEARN ? TRK_FOCUS_LEARNING : TRK_FOCUS_OK));
    }
    const double s_sharp = r.sharpness;
    CHECKF(s_sharp > 0 && r.baseline == s_sharp && !strcmp(r.runner, "cpu"), "%g %g", s_sharp,
           r.baseline);
    /* One soft frame does not flip the median of three; two do. */
    measure(f, &b, 10);
    trk_focus_get(f, &r);
    CHECKF(r.sharpness > 0 && r.sharpness < 0.6 * s_sharp && r.state == TRK_FOCUS_OK,
           "soft %g of %g", r.sharpness, s_sharp);
    measure(f, &b, 11);
    trk_focus_get(f, &r);
    CHECK(r.state == TRK_FOCUS_LOST && r.ratio < 0.6);
    CHECK(!strcmp(trk_focus_state_name(r.state), "lost"));
    /* The soft picture becomes the baseline: ok again. */
    CHECK(trk_focus_set_baseline(f, 0, &v) == 0 && v == r.sharpness);
    trk_focus_get(f, &r);
    CHECK(r.state == TRK_FOCUS_OK && r.baseline == v);
    CHECK(trk_focus_set_baseline(f, 2 * s_sharp, &v) == 0 && v == 2 * s_sharp);
    trk_focus_get(f, &r);
    CHECK(r.state == TRK_FOCUS_LOST);
    /* A picture without edges is no baseline. */
    static uint8_t flat[W * H * 3];
    memset(flat, 90, sizeof flat);
    struct trk_image c = rgb_image(flat, W, H);
    measure(f, &c, 12);
    trk_focus_get(f, &r);
    CHECK(r.sharpness == 0 && trk_focus_set_baseline(f, 0, &v) == TRK_EINVAL && v == 2 * s_sharp);
    /* Offers faster than it measures: each comes back, taken or not. */
    pthread_mutex_lock(&rel_lock);
    released = 0;
    pthread_mutex_unlock(&rel_lock);
    for (int i = 0; i < 20; i++)
        trk_focus_offer(
            f, &(struct trk_focus_frame){
                   .img = &a, .seq = 100 + (uint64_t)i, .release = release, .holder = &a });
    trk_focus_clear(f);
    pthread_mutex_lock(&rel_lock);
    CHECKF(released == 20, "%d of 20 lent frames given back", released);
    pthread_mutex_unlock(&rel_lock);
    trk_focus_destroy(&f);
    trk_focus_destroy(&f); /* twice: safe */

    /* The definition's runner gives the same figure. */
    CHECK(trk_focus_create(
              &(struct trk_focus_cfg){
                  .every = 1, .warn = 0.5, .baseline = 3, .runner = TRK_FOCUS_REF },
              &f) == 0);
    measure(f, &a, 0);
    trk_focus_get(f, &r);
    CHECKF(r.sharpness == s_sharp && !strcmp(r.runner, "cpu-ref") && r.baseline == 3 &&
               r.state == TRK_FOCUS_OK,
           "%g vs %g", r.sharpness, s_sharp);
    trk_focus_destroy(&f);
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = { { "fit", test_fit },     { "carve", test_carve },     { "squeeze", test_squeeze },
                  { "scale", test_scale }, { "message", test_message }, { "edges", test_edges },
                  { "focus", test_focus } };
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        if (!only || !strcmp(only, tests[i].name)) tests[i].fn();
    return check_exit("view");
}
