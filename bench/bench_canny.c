/* trackd-bench --experiment canny: Canny (gpu/canny.h) per stage.
 *
 * Timing (default): a synthetic scene (rectangles and discs of many
 * contrasts on a textured gradient, noise on top) at each size, through
 * each runner (cpu at each thread count, cuda); medians of every stage
 * (canny.h's struct trk_canny_timing) over --iters calls after --warmup.
 * The first call of every case is checked against the CPU twin (cuda) or
 * the definition (cpu, sizes up to 1920x1080): a difference prints
 * MISMATCH and makes the exit status 1.
 *
 * One image (--image IN.pgm): the evaluation's entry point
 * (tests/measure/canny_eval.py). Runs one runner on a binary PGM and writes
 * the edge map (--out, PGM 0/255), the smoothed luma the Sobel stage saw
 * (--smoothed, PGM: what OpenCV's Canny is given for a like-for-like
 * comparison) and a JSON line of the sums and figures on stdout. */
#include "bench.h"

#include "canny.h"
#include "scene.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CB_MAX 8

struct cb_opts {
    int nsizes, sizes[CB_MAX][2];
    int nthreads, threads[CB_MAX];
    int cpu, cuda, first_cuda; /* runners; first_cuda: cuda listed first */
    enum trk_pixfmt fmt;
    struct trk_canny_cfg cfg;
    int warmup, iters;
    const char *image, *out, *smoothed;
};

static void cb_usage(FILE *f)
{
    fprintf(f, "usage: trackd-bench --experiment canny [options]\n"
               "  --sizes WxH,...     frame sizes (default 1280x720,1920x1080)\n"
               "  --runners R,...     cpu, cuda (default cpu,cuda; cuda skipped without a GPU)\n"
               "  --threads N,...     cpu threads (default 1,2)\n"
               "  --format F          pixel format of the scene (default rgb24)\n"
               "  --sigma S --low L --high H   the setting (default 1.4, 20, 50)\n"
               "  --warmup N --iters N         untimed and timed calls (default 3, 20)\n"
               "  --image IN.pgm [--out E.pgm] [--smoothed S.pgm]   one image, one runner\n"
               "                      (the first of --runners and of --threads)\n");
}

/* A comma list of ints (or WxH pairs when pairs) into out; count or -1. */
static int cb_list(const char *s, int pairs, int *out)
{
    int n = 0;
    while (s && *s && n < CB_MAX) {
        int a, b, used;
        if (pairs ? sscanf(s, "%dx%d%n", &a, &b, &used) != 2 : sscanf(s, "%d%n", &a, &used) != 1)
            return -1;
        if (a < (pairs ? 1 : 0) || (pairs && (b < 1 || a > 16384 || b > 16384))) return -1;
        out[pairs ? 2 * n : n] = a;
        if (pairs) out[2 * n + 1] = b;
        n++;
        s += used;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return s && *s ? -1 : n;
}

static int cb_parse(int argc, char **argv, struct cb_opts *o)
{
    *o = (struct cb_opts){ .nsizes = 2,
                           .sizes = { { 1280, 720 }, { 1920, 1080 } },
                           .nthreads = 2,
                           .threads = { 1, 2 },
                           .cpu = 1,
                           .cuda = 1,
                           .fmt = TRK_FMT_RGB24,
                           .cfg = { 1.4, 20, 50 },
                           .warmup = 3,
                           .iters = 20 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = !v;
        if (!v) break;
        if (!strcmp(a, "--sizes"))
            bad = (o->nsizes = cb_list(v, 1, &o->sizes[0][0])) <= 0;
        else if (!strcmp(a, "--threads"))
            bad = (o->nthreads = cb_list(v, 0, o->threads)) <= 0;
        else if (!strcmp(a, "--runners")) {
            const char *pc = strstr(v, "cpu"), *pg = strstr(v, "cuda");
            o->cpu = pc != NULL, o->cuda = pg != NULL;
            o->first_cuda = pg && (!pc || pg < pc);
            bad = !o->cpu && !o->cuda;
        } else if (!strcmp(a, "--format")) {
            int f = 0;
            while (f < TRK_FMT_COUNT && strcmp(v, trk_pixfmt_name((enum trk_pixfmt)f)))
                f++;
            o->fmt = (enum trk_pixfmt)f, bad = f == TRK_FMT_COUNT;
        } else if (!strcmp(a, "--sigma"))
            o->cfg.sigma = atof(v);
        else if (!strcmp(a, "--low"))
            o->cfg.low = atoi(v);
        else if (!strcmp(a, "--high"))
            o->cfg.high = atoi(v);
        else if (!strcmp(a, "--warmup"))
            bad = (o->warmup = atoi(v)) < 0;
        else if (!strcmp(a, "--iters"))
            bad = (o->iters = atoi(v)) < 1;
        else if (!strcmp(a, "--image"))
            o->image = v;
        else if (!strcmp(a, "--out"))
            o->out = v;
        else if (!strcmp(a, "--smoothed"))
            o->smoothed = v;
        else
            bad = 1;
        if (bad) {
            fprintf(stderr, "canny: bad option %s %s\n", a, v);
            return -1;
        }
        i++;
    }
    return 0;
}

/* ------------------------------------------------------------- images */

/* A w x h grey image as I420 (chroma 128) over a new buffer. */
static uint8_t *grey_image(int w, int h, struct trk_image *img)
{
    const size_t n = (size_t)w * (size_t)h, cn = (size_t)((w + 1) / 2) * (size_t)((h + 1) / 2);
    uint8_t *b = malloc(n + 2 * cn);
    if (!b) return NULL;
    memset(b + n, 128, 2 * cn);
    *img = (struct trk_image){ .plane = { b, b + n, b + n + cn },
                               .pitch = { (size_t)w, (size_t)(w + 1) / 2, (size_t)(w + 1) / 2 },
                               .width = w,
                               .height = h,
                               .fmt = TRK_FMT_I420,
                               .full_range = true };
    return b;
}

static uint8_t *read_pgm(const char *path, struct trk_image *img)
{
    FILE *f = fopen(path, "rb");
    int w, h, maxv;
    uint8_t *b = NULL;
    if (f && fscanf(f, "P5 %d %d %d", &w, &h, &maxv) == 3 && fgetc(f) != EOF && maxv == 255 &&
        w > 0 && h > 0 && w <= 16384 && h <= 16384 && (b = grey_image(w, h, img)) &&
        fread(b, 1, (size_t)w * (size_t)h, f) != (size_t)w * (size_t)h) {
        free(b);
        b = NULL;
    }
    if (!b) fprintf(stderr, "canny: %s: not a binary 8-bit PGM\n", path);
    if (f) fclose(f);
    return b;
}

static int write_pgm(const char *path, const uint8_t *p, size_t pitch, int w, int h)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fprintf(f, "P5\n%d %d\n255\n", w, h) > 0;
    for (int y = 0; ok && y < h; y++)
        ok = fwrite(p + (size_t)y * pitch, 1, (size_t)w, f) == (size_t)w;
    if (f && fclose(f)) ok = 0;
    if (!ok) fprintf(stderr, "canny: cannot write %s\n", path);
    return ok ? 0 : -1;
}

/* The timing scene: a textured gradient, 60 rectangles and discs, noise. */
static uint8_t *scene(enum trk_pixfmt fmt, int w, int h, struct trk_image *img)
{
    uint8_t *g = malloc((size_t)w * (size_t)h), *b = NULL;
    struct trk_image grey;
    uint64_t st = 20240601;
    for (int y = 0; g && y < h; y++)
        for (int x = 0; x < w; x++)
            g[(size_t)y * w + x] = (uint8_t)(40 + x * 80 / w + ((x / 3 + y / 3) % 2) * 10);
    for (int k = 0; g && k < 60; k++) {
        const int cx = (int)(trk_rand_next(&st) % (uint64_t)w);
        const int cy = (int)(trk_rand_next(&st) % (uint64_t)h);
        const int r = 4 + (int)(trk_rand_next(&st) % (uint64_t)(w / 10 + 1)), v = (int)(st & 255);
        for (int y = cy - r < 0 ? 0 : cy - r; y <= cy + r && y < h; y++)
            for (int x = cx - r < 0 ? 0 : cx - r; x <= cx + r && x < w; x++)
                if (k % 2 || (x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r)
                    g[(size_t)y * w + x] = (uint8_t)v;
    }
    for (size_t i = 0; g && i < (size_t)w * (size_t)h; i++)
        g[i] = (uint8_t)(g[i] + (int)(trk_rand_next(&st) % 9) - 4);
    if (g && (b = grey_image(w, h, &grey))) {
        memcpy(b, g, (size_t)w * (size_t)h);
        *img = grey;
    }
    free(g);
    if (!b || fmt == TRK_FMT_I420) return b;
    /* Other formats: the same luma in each (RGB grey, YUV Y with 128 chroma). */
    struct trk_plane_layout L;
    trk_image_plane_layout(fmt, w, h, &L);
    size_t total = 0;
    for (int p = 0; p < L.planes; p++)
        total += L.row_bytes[p] * (size_t)L.rows[p];
    uint8_t *o = malloc(total);
    memset(o, 128, total);
    *img = (struct trk_image){ .width = w, .height = h, .fmt = fmt, .full_range = true };
    for (int p = 0, at = 0; p < L.planes; at += (int)(L.row_bytes[p] * (size_t)L.rows[p]), p++)
        img->plane[p] = o + at, img->pitch[p] = L.row_bytes[p];
    const int rgb = fmt <= TRK_FMT_BGRA, bpp = trk_pixfmt_bpp(fmt);
    const int step = fmt == TRK_FMT_YUYV ? 2 : rgb ? bpp : 1, nc = rgb ? bpp : 1;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < nc; c++)
                o[(size_t)y * L.row_bytes[0] + (size_t)x * step + c] = b[(size_t)y * w + x];
    free(b);
    return o;
}

/* ------------------------------------------------------------ timing */

static int cb_make(const struct cb_opts *o, int cuda, int threads, int w, int h,
                   struct trk_canny **c)
{
    const struct trk_canny_opts co = { cuda ? TRK_CANNY_CUDA : TRK_CANNY_CPU, w, h, threads, 0 };
    const int e = trk_canny_create(&co, c);
    if (e == TRK_ENODEV && cuda)
        printf("%dx%d cuda: skipped (no usable CUDA device)\n", w, h);
    else if (e)
        fprintf(stderr, "canny: %s runner: %s\n", cuda ? "cuda" : "cpu", trk_strerror(e));
    (void)o;
    return e;
}

/* The first call's edges against the truth (the definition, or the CPU
 * twin for cuda and large frames); 0 when equal. */
static int cb_check(const struct trk_canny_params *p, const struct trk_image *img,
                    const uint8_t *got, int cuda, int threads)
{
    const int w = img->width, h = img->height;
    uint8_t *want = malloc((size_t)w * (size_t)h);
    struct trk_canny *cpu = NULL;
    int bad = !want;
    if (!bad && !cuda && (long)w * h <= 1920L * 1080) {
        bad = trk_canny_ref(p, img, want, (size_t)w, NULL) != 0;
    } else if (!bad) {
        const struct trk_canny_opts co = { TRK_CANNY_CPU, w, h, cuda ? 4 : 1, 0 };
        bad =
            trk_canny_create(&co, &cpu) || trk_canny_run(cpu, p, img, want, (size_t)w, NULL, NULL);
        trk_canny_destroy(&cpu);
    }
    long diff = 0;
    for (size_t i = 0; !bad && i < (size_t)w * (size_t)h; i++)
        diff += want[i] != got[i];
    if (bad || diff)
        printf("MISMATCH %dx%d %s:%d: %ld pixels differ\n", w, h, cuda ? "cuda" : "cpu", threads,
               diff);
    free(want);
    return bad || diff;
}

static int cb_case(const struct cb_opts *o, const struct trk_canny_params *p,
                   const struct trk_image *img, int cuda, int threads)
{
    const int w = img->width, h = img->height;
    struct trk_canny *c = NULL;
    int e = cb_make(o, cuda, threads, w, h, &c);
    if (e) return e == TRK_ENODEV && cuda ? 0 : 1;
    uint8_t *edges = malloc((size_t)w * (size_t)h);
    double v[7][256];
    int n = o->iters < 256 ? o->iters : 256, rounds = 0, fail = 0;
    struct trk_canny_stats st;
    for (int i = 0; i < o->warmup + n && !fail; i++) {
        struct trk_canny_timing t;
        fail = trk_canny_run(c, p, img, edges, (size_t)w, &st, &t) != 0;
        if (!fail && i == 0) fail = cb_check(p, img, edges, cuda, threads);
        if (fail || i < o->warmup) continue;
        const double *f[7] = { &t.total_ms, &t.upload_ms, &t.luma_ms,    &t.gauss_ms,
                               &t.sobel_ms, &t.hyst_ms,   &t.download_ms };
        for (int k = 0; k < 7; k++)
            v[k][i - o->warmup] = *f[k];
        rounds = t.hyst_rounds;
    }
    if (!fail) {
        printf("%5dx%-5d %-5s %2d", w, h, cuda ? "cuda" : "cpu", cuda ? 0 : threads);
        for (int k = 0; k < 7; k++)
            printf(" %8.3f", trk_bench_median(v[k], (size_t)n));
        printf(" %6d %7.4f %8.3f\n", rounds, st.density, st.sharpness);
    }
    free(edges);
    trk_canny_destroy(&c);
    return fail;
}

static int cb_timing(const struct cb_opts *o, const struct trk_canny_params *p)
{
    printf("canny: sigma %.2f low %d high %d, %s scene, medians of %d calls (ms)\n", o->cfg.sigma,
           o->cfg.low, o->cfg.high, trk_pixfmt_name(o->fmt), o->iters);
    printf("%-11s %-5s %2s %8s %8s %8s %8s %8s %8s %8s %6s %7s %8s\n", "size", "run", "th", "total",
           "upload", "luma", "gauss", "sobel+nms", "hyst", "download", "rounds", "density",
           "sharp");
    int fail = 0;
    for (int s = 0; s < o->nsizes; s++) {
        struct trk_image img;
        uint8_t *buf = scene(o->fmt, o->sizes[s][0], o->sizes[s][1], &img);
        if (!buf) return 1;
        for (int t = 0; o->cpu && t < o->nthreads; t++)
            fail |= cb_case(o, p, &img, 0, o->threads[t]);
        if (o->cuda) fail |= cb_case(o, p, &img, 1, 0);
        free(buf);
    }
    return fail;
}

/* ------------------------------------------------------------ one image */

static int cb_image(const struct cb_opts *o, const struct trk_canny_params *p)
{
    struct trk_image img;
    uint8_t *buf = read_pgm(o->image, &img);
    if (!buf) return 1;
    const int w = img.width, h = img.height, cuda = o->first_cuda;
    struct trk_canny *c = NULL;
    uint8_t *edges = malloc((size_t)w * (size_t)h);
    struct trk_canny_stats st;
    struct trk_canny_timing t = { 0 };
    int fail = cb_make(o, cuda, o->threads[0], w, h, &c) || !edges ||
               trk_canny_run(c, p, &img, edges, (size_t)w, &st, &t);
    if (!fail && o->out) fail = write_pgm(o->out, edges, (size_t)w, w, h);
    if (!fail && o->smoothed) {
        struct trk_prefilter_buf pb = { 0 };
        struct trk_image sm = img;
        fail = p->pf.sigma > 0 && trk_prefilter_apply(&p->pf, &img, &pb, &sm);
        if (!fail) fail = write_pgm(o->smoothed, sm.plane[0], sm.pitch[0], w, h);
        trk_prefilter_buf_free(&pb);
    }
    if (!fail)
        printf("{\"runner\":\"%s\",\"width\":%d,\"height\":%d,\"edges\":%llu,\"strong\":%llu,"
               "\"edge_m2\":%llu,\"density\":%.6f,\"gradient\":%.4f,\"sharpness\":%.4f,"
               "\"total_ms\":%.3f}\n",
               trk_canny_name(c), w, h, (unsigned long long)st.edges, (unsigned long long)st.strong,
               (unsigned long long)st.edge_m2, st.density, st.gradient, st.sharpness, t.total_ms);
    trk_canny_destroy(&c);
    free(edges), free(buf);
    return fail ? 1 : 0;
}

static int cb_run(int argc, char **argv)
{
    struct cb_opts o;
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        cb_usage(stdout);
        return 0;
    }
    if (cb_parse(argc, argv, &o)) {
        cb_usage(stderr);
        return 2;
    }
    struct trk_canny_params p;
    if (trk_canny_params_init(&p, &o.cfg)) {
        fprintf(stderr, "canny: bad setting (sigma 0..%g, 0 <= low <= high <= %d)\n",
                TRK_PREFILTER_MAX_SIGMA, TRK_CANNY_MAX_THRESH);
        return 2;
    }
    return o.image ? cb_image(&o, &p) : cb_timing(&o, &p);
}

static const struct trk_bench_experiment canny_exp = {
    "canny", "Canny edges per stage (cpu, cuda); --image for the evaluation", cb_run
};
__attribute__((constructor)) static void cb_reg(void)
{
    trk_bench_register(&canny_exp);
}
