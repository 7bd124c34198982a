/* Backend dispatch and the argument checks every backend shares (backend.c),
 * exercised through the CPU reference: kind selection without CUDA, the CUDA
 * kind's refusal, invalid images and objects, the submit/wait protocol,
 * timing, and the helpers (names, parsing, error text).
 */
#include "backend.h"
#include "../check.h"
#include "log_hook.h"
#include "scene.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static void test_kinds(void)
{
    struct trk_backend_cfg cfg = { .max_width = 64, .max_height = 48 };
    struct trk_backend *b = (struct trk_backend *)&cfg;
    char why[256] = "";
    bool cuda = trk_cuda_available(why, sizeof(why));

    cfg.kind = TRK_BACKEND_CPU_REF;
    CHECK(trk_backend_create(&cfg, &b) == 0 && b);
    if (b) CHECK(strcmp(trk_backend_name(b), "cpu-ref") == 0);
    trk_backend_destroy(&b);
    CHECK(b == NULL);
    trk_backend_destroy(&b); /* twice is safe */
    trk_backend_destroy(NULL);

    /* The fast CPU kind: its own backend when built, the reference before. */
    cfg.kind = TRK_BACKEND_CPU;
    CHECK(trk_backend_create(&cfg, &b) == 0 && b);
    if (b) CHECK(strncmp(trk_backend_name(b), "cpu", 3) == 0);
    trk_backend_destroy(&b);

    /* AUTO: a CPU backend whenever CUDA cannot be used. */
    cfg.kind = TRK_BACKEND_AUTO;
    CHECK(trk_backend_create(&cfg, &b) == 0 && b);
    if (b && !cuda) CHECK(strncmp(trk_backend_name(b), "cpu", 3) == 0);
    if (b && cuda) CHECK(strncmp(trk_backend_name(b), "cuda", 4) == 0);
    trk_backend_destroy(&b);

    /* CUDA without a usable GPU (or without CUDA compiled in) is refused
     * with TRK_ENODEV, and the reason is given. */
    cfg.kind = TRK_BACKEND_CUDA;
    if (!cuda) {
        b = (struct trk_backend *)&cfg;
        CHECK(trk_backend_create(&cfg, &b) == TRK_ENODEV && b == NULL);
        CHECK(why[0] != '\0');
        printf("CUDA unavailable: %s\n", why);
#ifndef TRK_TEST_CUDA_BUILT
        CHECK(strstr(why, "without CUDA") != NULL);
#endif
    }
    CHECK(trk_cuda_available(NULL, 0) == cuda);

    /* Bad configurations. */
    b = (struct trk_backend *)&cfg;
    struct trk_backend_cfg bad = { .kind = TRK_BACKEND_CPU_REF, .max_width = 0, .max_height = 10 };
    CHECK(trk_backend_create(&bad, &b) == TRK_EINVAL && b == NULL);
    bad.max_width = 10, bad.max_height = -1;
    CHECK(trk_backend_create(&bad, &b) == TRK_EINVAL && b == NULL);
    /* Past the side that bounds the exact sums (TRK_MAX_SIDE), either way. */
    bad.max_width = TRK_MAX_SIDE + 1, bad.max_height = 10;
    CHECK(trk_backend_create(&bad, &b) == TRK_EINVAL && b == NULL);
    bad.max_width = 10, bad.max_height = TRK_MAX_SIDE + 1;
    CHECK(trk_backend_create(&bad, &b) == TRK_EINVAL && b == NULL);
    bad.max_height = 10, bad.kind = (enum trk_backend_kind)99;
    CHECK(trk_backend_create(&bad, &b) == TRK_ENODEV && b == NULL);
    CHECK(trk_backend_create(NULL, &b) == TRK_EINVAL && b == NULL);

    const char *names[4];
    CHECK(trk_backend_variants(TRK_BACKEND_CPU_REF, names, 4) == 0);

    CHECK(trk_backend_kind_parse("auto") == TRK_BACKEND_AUTO);
    CHECK(trk_backend_kind_parse("cpu") == TRK_BACKEND_CPU);
    CHECK(trk_backend_kind_parse("cpu-ref") == TRK_BACKEND_CPU_REF);
    CHECK(trk_backend_kind_parse("cuda") == TRK_BACKEND_CUDA);
    CHECK(trk_backend_kind_parse("gpu") == -1);
    CHECK(trk_backend_kind_parse("") == -1);
}

static void test_images(void)
{
    struct trk_backend_cfg cfg = { .kind = TRK_BACKEND_CPU_REF, .max_width = 32, .max_height = 16 };
    struct trk_backend *b = NULL;
    CHECK(trk_backend_create(&cfg, &b) == 0);
    if (!b) return;
    struct trk_object_def obj = { .name = "all",
                                  .space = TRK_SPACE_RGB,
                                  .lo = { 0, 0, 0 },
                                  .hi = { 255, 255, 255 },
                                  .min_mass = 1 };
    CHECK(trk_backend_set_objects(b, &obj, 1) == 0);
    static uint8_t px[64 * 64 * 4];
    struct trk_obj_result res;
    struct trk_image im = { .plane = { px, px + 4096, px + 8192 },
                            .pitch = { 96, 96, 96 },
                            .width = 32,
                            .height = 16,
                            .fmt = TRK_FMT_RGB24 };
    CHECK(trk_backend_process(b, &im, NULL, &res, NULL) == 0);
    CHECK(res.mass == 32 * 16 && res.x0 == 0 && res.y0 == 0 && res.x1 == 31 && res.y1 == 15);

    struct trk_image bad = im;
    bad.pitch[0] = 95; /* shorter than a row */
    CHECK(trk_backend_process(b, &bad, NULL, &res, NULL) == TRK_EINVAL);
    bad = im, bad.plane[0] = NULL;
    CHECK(trk_backend_process(b, &bad, NULL, &res, NULL) == TRK_EINVAL);
    bad = im, bad.width = 0;
    CHECK(trk_backend_process(b, &bad, NULL, &res, NULL) == TRK_EINVAL);
    bad = im, bad.height = -3;
    CHECK(trk_backend_process(b, &bad, NULL, &res, NULL) == TRK_EINVAL);
    bad = im, bad.fmt = TRK_FMT_COUNT;
    CHECK(trk_backend_process(b, &bad, NULL, &res, NULL) == TRK_EINVAL);
    CHECK(trk_backend_process(b, NULL, NULL, &res, NULL) == TRK_EINVAL);
    bad = im, bad.width = 33; /* larger than created for */
    bad.pitch[0] = 99;
    CHECK(trk_backend_process(b, &bad, NULL, &res, NULL) == TRK_ETOOBIG);
    bad = im, bad.height = 17;
    CHECK(trk_backend_process(b, &bad, NULL, &res, NULL) == TRK_ETOOBIG);
    /* Per-format plane and pitch rules. */
    bad = im, bad.fmt = TRK_FMT_RGBA, bad.pitch[0] = 127;
    CHECK(trk_backend_process(b, &bad, NULL, &res, NULL) == TRK_EINVAL);
    bad.pitch[0] = 128;
    CHECK(trk_backend_process(b, &bad, NULL, &res, NULL) == 0);
    bad = im, bad.fmt = TRK_FMT_YUYV, bad.pitch[0] = 63;
    CHECK(trk_backend_process(b, &bad, NULL, &res, NULL) == TRK_EINVAL);
    bad.width = 31; /* odd width still needs the whole last pair */
    CHECK(trk_backend_process(b, &bad, NULL, &res, NULL) == TRK_EINVAL);
    bad.pitch[0] = 64;
    CHECK(trk_backend_process(b, &bad, NULL, &res, NULL) == 0);
    bad = im, bad.fmt = TRK_FMT_NV12, bad.pitch[0] = 32, bad.pitch[1] = 32;
    CHECK(trk_backend_process(b, &bad, NULL, &res, NULL) == 0);
    bad.plane[1] = NULL;
    CHECK(trk_backend_process(b, &bad, NULL, &res, NULL) == TRK_EINVAL);
    bad.plane[1] = px + 4096, bad.pitch[1] = 31;
    CHECK(trk_backend_process(b, &bad, NULL, &res, NULL) == TRK_EINVAL);
    bad = im, bad.fmt = TRK_FMT_I420, bad.pitch[0] = 32, bad.pitch[1] = bad.pitch[2] = 16;
    CHECK(trk_backend_process(b, &bad, NULL, &res, NULL) == 0);
    bad.plane[2] = NULL;
    CHECK(trk_backend_process(b, &bad, NULL, &res, NULL) == TRK_EINVAL);
    bad.plane[2] = px + 8192, bad.pitch[2] = 15;
    CHECK(trk_backend_process(b, &bad, NULL, &res, NULL) == TRK_EINVAL);
    bad.pitch[0] = 31, bad.pitch[2] = 16;
    CHECK(trk_backend_process(b, &bad, NULL, &res, NULL) == TRK_EINVAL);

    /* A rejected frame leaves nothing in flight. */
    CHECK(trk_backend_wait(b, &res, NULL) == TRK_EINVAL);
    trk_backend_destroy(&b);
}

static void test_objects_and_protocol(void)
{
    struct trk_backend_cfg cfg = { .kind = TRK_BACKEND_CPU_REF, .max_width = 64, .max_height = 48 };
    struct trk_backend *b = NULL;
    CHECK(trk_backend_create(&cfg, &b) == 0);
    if (!b) return;
    static struct trk_scene sc;
    CHECK(trk_scene_random(64, 48, 8, 3, &sc) == 0);
    uint8_t *buf;
    struct trk_image im;
    CHECK(trk_image_from_rgb(sc.rgb, 64, 48, TRK_FMT_BGRA, TRK_MATRIX_BT709, false, 2, &buf, &im) ==
          0);

    /* Objects: counts, spaces and channel bounds are validated. */
    static struct trk_object_def many[TRK_MAX_OBJECTS + 1];
    CHECK(trk_backend_set_objects(b, many, TRK_MAX_OBJECTS + 1) == TRK_EINVAL);
    CHECK(trk_backend_set_objects(b, many, -1) == TRK_EINVAL);
    CHECK(trk_backend_set_objects(b, NULL, 1) == TRK_EINVAL);
    CHECK(trk_backend_set_objects(b, many, TRK_MAX_OBJECTS) == 0);
    struct trk_object_def o = { .space = TRK_SPACE_HSV,
                                .lo = { 360, 0, 0 },
                                .hi = { 10, 255, 255 } };
    CHECK(trk_backend_set_objects(b, &o, 1) == TRK_EINVAL); /* hue 0..359 */
    o.lo[0] = 359;
    CHECK(trk_backend_set_objects(b, &o, 1) == 0);
    o.space = TRK_SPACE_RGB; /* 359 is out of range for rgb */
    CHECK(trk_backend_set_objects(b, &o, 1) == TRK_EINVAL);
    o.lo[0] = 0, o.hi[2] = 256;
    CHECK(trk_backend_set_objects(b, &o, 1) == TRK_EINVAL);
    o.hi[2] = 255, o.space = TRK_SPACE_RG; /* the last space */
    CHECK(trk_backend_set_objects(b, &o, 1) == 0);
    o.space = TRK_SPACE_COUNT;
    CHECK(trk_backend_set_objects(b, &o, 1) == TRK_EINVAL);

    /* Zero objects: processing works and writes nothing. */
    CHECK(trk_backend_set_objects(b, NULL, 0) == 0);
    struct trk_obj_result sentinel;
    memset(&sentinel, 0x77, sizeof(sentinel));
    struct trk_obj_result r0 = sentinel;
    CHECK(trk_backend_process(b, &im, NULL, &r0, NULL) == 0);
    CHECK(memcmp(&r0, &sentinel, sizeof(r0)) == 0);

    /* submit + wait == process; one frame in flight at most; objects cannot
     * change under a frame in flight. */
    static struct trk_obj_result a[8], c[8];
    struct trk_backend_timing t = { -1, -1, -1, UINT64_MAX, UINT64_MAX };
    CHECK(trk_backend_set_objects(b, sc.objects, 8) == 0);
    CHECK(trk_backend_process(b, &im, NULL, a, &t) == 0);
    CHECK(t.upload_ms == 0 && t.kernel_ms == t.total_ms && t.total_ms >= 0 && t.total_ms < 10000);
    CHECK(t.upload_bytes == 0 && t.in_place_bytes == 0); /* nothing crosses a bus on the CPU */
    CHECK(trk_backend_wait(b, c, NULL) == TRK_EINVAL);   /* nothing in flight */
    CHECK(trk_backend_submit(b, &im, NULL) == 0);
    CHECK(trk_backend_submit(b, &im, NULL) == TRK_EINVAL);
    CHECK(trk_backend_set_objects(b, sc.objects, 8) == TRK_EINVAL);
    CHECK(trk_backend_wait(b, c, NULL) == 0);
    CHECK(memcmp(a, c, sizeof(a)) == 0);
    int nonempty = 0;
    for (int i = 0; i < 8; i++)
        nonempty += a[i].mass > 0;
    CHECK(nonempty > 0);

    /* Empty ROIs count nothing and give the empty-result convention. */
    static struct trk_roi rois[8];
    for (int i = 0; i < 8; i++)
        rois[i] = (struct trk_roi){ 10, 10, 9, 40 };
    CHECK(trk_backend_process(b, &im, rois, c, NULL) == 0);
    for (int i = 0; i < 8; i++)
        CHECK(c[i].mass == 0 && c[i].sum_x == 0 && c[i].sum_y == 0 && c[i].x0 == -1 &&
              c[i].y0 == -1 && c[i].x1 == -1 && c[i].y1 == -1);
    /* A ROI covering more than the frame equals no ROI. */
    for (int i = 0; i < 8; i++)
        rois[i] = (struct trk_roi){ -5, -5, 1000, 1000 };
    CHECK(trk_backend_process(b, &im, rois, c, NULL) == 0);
    CHECK(memcmp(a, c, sizeof(a)) == 0);

    free(buf);
    trk_scene_free(&sc);
    trk_backend_destroy(&b);
}

static void test_helpers(void)
{
    /* Each code has its own message, the one users see in logs and in
     * "error" status messages; a code falling through to the default would
     * show as "unknown error" or as a copy of another code's text. */
    static const struct {
        int code;
        const char *text;
    } msgs[] = {
        { 0, "success" },
        { TRK_EINVAL, "invalid argument" },
        { TRK_ENOMEM, "out of memory" },
        { TRK_ENODEV, "backend not available" },
        { TRK_EBACKEND, "backend failure" },
        { TRK_ETOOBIG, "frame larger than the backend was created for" },
    };
    for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++)
        CHECKF(strcmp(trk_strerror(msgs[i].code), msgs[i].text) == 0, "code %d: \"%s\"",
               msgs[i].code, trk_strerror(msgs[i].code));
    /* -errno codes read as the C library says, not as our own codes. */
    CHECK(strcmp(trk_strerror(-ENOENT), strerror(ENOENT)) == 0);
    CHECK(strcmp(trk_strerror(-ENODEV), strerror(ENODEV)) == 0);
    /* Anything else, positive or below the errno range, is "unknown error"
     * rather than a neighbouring code's text or strerror's "Unknown error N". */
    static const int unknown[] = { 1, 42, -4096, -10000, -10006, -99999, INT_MIN };
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
        CHECKF(strcmp(trk_strerror(unknown[i]), "unknown error") == 0, "code %d: \"%s\"",
               unknown[i], trk_strerror(unknown[i]));
    static const char *names[] = { "rgb24", "rgba", "bgr24", "bgra", "yuyv", "nv12", "i420" };
    static const int bpp[] = { 3, 4, 3, 4, 2, 0, 0 };
    for (int f = 0; f < TRK_FMT_COUNT; f++) {
        CHECK(strcmp(trk_pixfmt_name((enum trk_pixfmt)f), names[f]) == 0);
        CHECK(trk_pixfmt_bpp((enum trk_pixfmt)f) == bpp[f]);
    }
    CHECK(strcmp(trk_pixfmt_name(TRK_FMT_COUNT), "?") == 0);
}

/* Lines the backend logs, collected (the library's one logger). */
static char logged[4][512];
static int n_logged;
static void collect(enum trk_log_level level, const char *tag, const char *line)
{
    (void)level, (void)tag;
    if (n_logged < 4) snprintf(logged[n_logged], sizeof(logged[0]), "%s", line);
    n_logged++;
}

/* Device images (mem = TRK_MEM_CUDA): trk_image_check takes the value, the
 * CPU backends refuse such a frame with TRK_EINVAL and one line naming the
 * reason (not again for the next frame), without reading it and without
 * leaving a frame in flight; host frames still work after. Only the CUDA
 * backend says it accepts them. */
static void test_device_images(void)
{
    static uint8_t px[32 * 16 * 3];
    struct trk_image host = {
        .plane = { px }, .pitch = { 96 }, .width = 32, .height = 16, .fmt = TRK_FMT_RGB24
    };
    CHECK(host.mem == TRK_MEM_HOST); /* initializers without mem mean host */
    struct trk_image dev = host;
    dev.mem = TRK_MEM_CUDA;
    CHECK(trk_image_check(&dev) == 0);
    struct trk_image bad = host;
    bad.mem = (enum trk_mem)7;
    CHECK(trk_image_check(&bad) == TRK_EINVAL);
    bad = dev, bad.pitch[0] = 95; /* a device image's values are checked too */
    CHECK(trk_image_check(&bad) == TRK_EINVAL);

    const enum trk_backend_kind kinds[] = { TRK_BACKEND_CPU_REF, TRK_BACKEND_CPU };
    for (int k = 0; k < 2; k++) {
        struct trk_backend_cfg cfg = { .kind = kinds[k], .max_width = 32, .max_height = 16 };
        struct trk_backend *b = NULL;
        CHECK(trk_backend_create(&cfg, &b) == 0);
        if (!b) continue;
        CHECK(!trk_backend_accepts_device(b));
        struct trk_object_def obj = {
            .name = "all", .space = TRK_SPACE_RGB, .hi = { 255, 255, 255 }, .min_mass = 1
        };
        CHECK(trk_backend_set_objects(b, &obj, 1) == 0);
        struct trk_obj_result res;
        n_logged = 0;
        trk_log_set_hook(collect, TRK_LOG_DEBUG);
        CHECK(trk_backend_process(b, &dev, NULL, &res, NULL) == TRK_EINVAL);
        CHECK(trk_backend_wait(b, &res, NULL) == TRK_EINVAL); /* nothing in flight */
        struct trk_region r = { .obj = 0, .roi = { 0, 0, 31, 15 } };
        CHECK(trk_backend_process_regions(b, &dev, &r, 1, &res, NULL) == TRK_EINVAL);
        trk_log_set_hook(NULL, TRK_LOG_INFO);
        CHECK(n_logged == 1);
        if (n_logged >= 1) {
            CHECK(strstr(logged[0], "device") && strstr(logged[0], "host memory"));
            printf("%s refuses a device image: %s\n", trk_backend_name(b), logged[0]);
        }
        CHECK(trk_backend_process(b, &host, NULL, &res, NULL) == 0 && res.mass == 32 * 16);
        trk_backend_destroy(&b);
    }
    if (trk_cuda_available(NULL, 0)) {
        struct trk_backend_cfg cfg = { .kind = TRK_BACKEND_CUDA,
                                       .max_width = 32,
                                       .max_height = 16 };
        struct trk_backend *b = NULL;
        CHECK(trk_backend_create(&cfg, &b) == 0);
        if (b) CHECK(trk_backend_accepts_device(b));
        trk_backend_destroy(&b);
    }
}

int main(void)
{
    test_kinds();
    test_images();
    test_device_images();
    test_objects_and_protocol();
    test_helpers();
    return check_exit("test_backend");
}
