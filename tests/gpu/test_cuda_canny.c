/* Canny on the GPU (gpu/cuda/canny.cu) == the definition (gpu/canny.h), bit
 * for bit: every case of canny_cases.h (every format, sizes from 1x1, flat,
 * noise, blocks, every threshold edge case) against trk_canny_ref, then
 * large frames (720p, 1080p and odd sizes) against the CPU twin (itself
 * tested equal to the definition), among them a snake whose faint edge
 * winds across the whole frame from one strong end, so hysteresis needs
 * many launches; then device images (TRK_MEM_CUDA, what --hwdec cuda
 * lends the focus check) read in place. Without a usable GPU it exits 77
 * (skipped). */
#include "../unit/gpu/canny_cases.h"
#include "dev_image.h"

/* A w x h grey frame (I420, chroma 128): a snake of value 12 on 0, bars
 * 8 rows high joined at alternate ends, with a bright block (strong
 * edges) touching its first bar; every other edge of it is weak. */
static void snake(int w, int h, uint8_t **buf, struct trk_image *img)
{
    const int cw = (w + 1) / 2, ch = (h + 1) / 2;
    *buf = calloc((size_t)w * (size_t)h + 2 * (size_t)cw * (size_t)ch, 1);
    uint8_t *y = *buf;
    for (int r = 0; r < h; r++)
        for (int x = 0; x < w; x++) {
            const int bar = r / 16, in_bar = r % 16 >= 4 && r % 16 < 12 && x >= 8 && x < w - 8;
            const int link = r % 16 >= 4 && (bar % 2 ? x >= 8 && x < 16 : x >= w - 16 && x < w - 8);
            y[(size_t)r * (size_t)w + x] = in_bar || (link && r + 16 < h) ? 12 : 0;
            if (r < 24 && x < 8) y[(size_t)r * (size_t)w + x] = 250;
        }
    memset(*buf + (size_t)w * (size_t)h, 128, 2 * (size_t)cw * (size_t)ch);
    *img = (struct trk_image){ .plane = { y, y + (size_t)w * (size_t)h,
                                          y + (size_t)w * (size_t)h + (size_t)cw * (size_t)ch },
                               .pitch = { (size_t)w, (size_t)cw, (size_t)cw },
                               .width = w,
                               .height = h,
                               .fmt = TRK_FMT_I420 };
}

/* One large frame: GPU == CPU twin; prints the launches hysteresis took. */
static void large(struct trk_canny *gpu, struct trk_canny *cpu, const struct trk_image *img,
                  const struct trk_canny_cfg *cfg, const char *what)
{
    const int w = img->width, h = img->height;
    struct trk_canny_params p;
    CHECK(trk_canny_params_init(&p, cfg) == 0);
    uint8_t *a = malloc((size_t)w * (size_t)h), *b = malloc((size_t)w * (size_t)h);
    struct trk_canny_stats sa, sb;
    struct trk_canny_timing t;
    CHECK(trk_canny_run(cpu, &p, img, a, (size_t)w, &sa, NULL) == 0);
    CHECK(trk_canny_run(gpu, &p, img, b, (size_t)w, &sb, &t) == 0);
    CHECKF(canny_diffs(a, b, w, h, (size_t)w, what) == 0, "%s", what);
    CHECKF(canny_stats_equal(&sa, &sb), "%s: edges %llu/%llu", what, (unsigned long long)sa.edges,
           (unsigned long long)sb.edges);
    printf("%s %dx%d: %llu edges, hysteresis %d launches\n", what, w, h,
           (unsigned long long)sb.edges, t.hyst_rounds);
    free(a), free(b);
}

/* Device images, every format, in-place (256-byte) and odd pitches, their
 * pixels written on the legacy default stream and not waited for (as NVDEC
 * leaves them): the edge map and the sums-only call's stats equal the
 * definition's on the same pixels from the host (the CPU twin's for the
 * large sizes), and the frame is left unchanged. Host memory flagged as a
 * device image is refused. */
static void device_images(struct trk_canny *gpu, struct trk_canny *cpu, int quick)
{
    const int sizes[][2] = { { 1, 1 }, { 37, 23 }, { 130, 67 }, { 1283, 721 }, { 1920, 1080 } };
    const struct trk_canny_cfg cfg[] = { { 1.4, 20, 50 }, { 0, 40, 120 }, { 2.5, 5, 9 } };
    long n = 0;
    for (int s = 0; s < (quick ? 3 : 5); s++)
        for (int f = 0; f < TRK_FMT_COUNT; f++)
            for (int in_place = 0; in_place < 2; in_place++) {
                const int w = sizes[s][0], h = sizes[s][1], k = (s + f + in_place) % 3;
                const enum canny_fill fill = (s + f) % 2 ? CANNY_BLOCKS : CANNY_NOISE;
                uint8_t *buf;
                struct trk_image img;
                canny_image((enum trk_pixfmt)f, w, h, 3, fill, (uint64_t)(s * 97 + f * 5 + 1), &buf,
                            &img);
                char what[96];
                snprintf(what, sizeof(what), "device %dx%d %s %s%s", w, h, trk_pixfmt_name(img.fmt),
                         canny_fill_name[fill], in_place ? "" : " odd pitch");
                struct trk_canny_params p;
                CHECK(trk_canny_params_init(&p, &cfg[k]) == 0);
                const size_t np = (size_t)w * (size_t)h;
                uint8_t *want = malloc(np), *got = malloc(np);
                struct trk_canny_stats sw, sg, sn;
                CHECK(w * h > 100000 ? trk_canny_run(cpu, &p, &img, want, (size_t)w, &sw, NULL) == 0
                                     : trk_canny_ref(&p, &img, want, (size_t)w, &sw) == 0);
                struct dev_image d;
                CHECKF(dev_make(&img, in_place, &d) == 0 && dev_fill(&d) == 0, "%s", what);
                CHECKF(trk_canny_run(gpu, &p, &d.img, got, (size_t)w, &sg, NULL) == 0, "%s", what);
                CHECKF(canny_diffs(want, got, w, h, (size_t)w, what) == 0, "%s", what);
                CHECKF(canny_stats_equal(&sw, &sg), "%s: edges %llu/%llu", what,
                       (unsigned long long)sw.edges, (unsigned long long)sg.edges);
                CHECKF(dev_fill(&d) == 0, "%s", what);
                CHECKF(trk_canny_run(gpu, &p, &d.img, NULL, 0, &sn, NULL) == 0 &&
                           canny_stats_equal(&sw, &sn),
                       "%s: sums only: edges %llu/%llu", what, (unsigned long long)sw.edges,
                       (unsigned long long)sn.edges);
                CHECKF(dev_unchanged(&d), "%s: the frame was written to", what);
                img.mem = TRK_MEM_CUDA; /* host memory called a device image */
                CHECKF(trk_canny_run(gpu, &p, &img, NULL, 0, &sn, NULL) == TRK_EINVAL, "%s", what);
                dev_free(&d);
                free(want), free(got), free(buf);
                n++;
            }
    printf("cuda: %ld device images equal to the definition\n", n);
    CHECK(n == (quick ? 3 : 5) * TRK_FMT_COUNT * 2);
    (void)gpu_test_start; /* dev_image.h's; this test probes by itself */
}

/* --probe: exit 77 without a usable device (the sanitizer tests ask
 * first); --quick: every 5th small case, two large sizes, a small snake
 * (under compute-sanitizer). */
int main(int argc, char **argv)
{
    const int quick = argc > 1 && !strcmp(argv[1], "--quick");
    struct trk_canny *gpu = NULL, *cpu = NULL;
    const struct trk_canny_opts go = { TRK_CANNY_CUDA, 1920, 1080, 0, 0 };
    const int e = trk_canny_create(&go, &gpu);
    if (e == TRK_ENODEV) {
        printf("test_cuda_canny: no usable CUDA device: skipped\n");
        return 77;
    }
    if (argc > 1 && !strcmp(argv[1], "--probe")) {
        trk_canny_destroy(&gpu);
        return e ? 1 : 0;
    }
    CHECK(e == 0 && gpu);
    CHECK(!strcmp(trk_canny_name(gpu), "cuda"));
    const long n = canny_against_ref(gpu, "cuda", quick ? 5 : 1);
    printf("cuda: %ld cases equal to the definition\n", n);
    CHECK(n > (quick ? 400 : 2000));
    CHECK(trk_canny_create(&(struct trk_canny_opts){ TRK_CANNY_CPU, 1920, 1080, 2, 0 }, &cpu) == 0);
    const int sizes[][2] = { { 1283, 721 }, { 37, 1079 }, { 1920, 1080 }, { 1280, 720 } };
    const struct trk_canny_cfg cfg[] = { { 1.4, 20, 50 }, { 0, 40, 120 }, { 2.5, 5, 9 } };
    for (int s = 0; s < (quick ? 2 : 4); s++)
        for (int f = 0; f < TRK_FMT_COUNT; f += 3)
            for (int fill = CANNY_NOISE; fill < CANNY_FILLS; fill++) {
                uint8_t *buf;
                struct trk_image img;
                canny_image((enum trk_pixfmt)f, sizes[s][0], sizes[s][1], 5, (enum canny_fill)fill,
                            (uint64_t)(s * 31 + f * 7 + fill), &buf, &img);
                char what[64];
                snprintf(what, sizeof(what), "%s %s", trk_pixfmt_name(img.fmt),
                         canny_fill_name[fill]);
                large(gpu, cpu, &img, &cfg[(s + f + fill) % 3], what);
                free(buf);
            }
    uint8_t *buf;
    struct trk_image img;
    snake(quick ? 320 : 1920, quick ? 240 : 1080, &buf, &img);
    large(gpu, cpu, &img, &(struct trk_canny_cfg){ 0, 20, 200 }, "snake");
    free(buf);
    device_images(gpu, cpu, quick);
    trk_canny_destroy(&gpu);
    trk_canny_destroy(&cpu);
    return check_exit("test_cuda_canny");
}
