/* The fast CPU backend ("cpu") against the reference ("cpu-ref"), bit for bit.
 *
 * One executable, one ctest test per part (argv[1]) so each stays short:
 *   corpus     seeded random scenes: every format, pads, odd sizes, all four
 *              YCbCr matrices/ranges, 0..256 objects, 1/2/3/7 threads
 *   spaces     objects of one space only (their own kernels), every format
 *   rois       random ROIs (outside, clipped, empty, 1-pixel) per object
 *   standard   the benchmark's standard scenes (small sizes), and their
 *              known answers (every disk found)
 *   allcolors_rgb, allcolors_yuv
 *              every 24-bit RGB colour, and every Y,Cb,Cr triple as YUYV
 *              (two matrices/ranges), against rgb + hsv (wrapping too) +
 *              ycbcr objects
 *   lifecycle  object sets replaced in place (tables cleared), frames smaller
 *              than the create size, default thread count, bad arguments
 *   dense      rows on the dense path: noisebox scenes and half-range boxes
 *              of every space on random scenes, every format, ROIs
 *   allcolors_light
 *              every 24-bit RGB colour against lab and rg boxes
 *   classes     painted class objects (alone, mixed, blobs, regions)
 *   lightspaces lab and rg objects (alone, and mixed with every other
 *              space) boxed around the scene's own pixels: every format,
 *              1..256 objects, 1-3 threads, both variants, ROIs, regions
 *
 * Nothing is hard-coded: the reference computes every expected value.
 */
#include "../check.h"
#include "backend.h"
#include "color.h"
#include "scene.h"
#include "../gpu/moments_scene.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct trk_backend *make_variant(enum trk_backend_kind kind, int w, int h, int threads,
                                        const char *variant)
{
    struct trk_backend_cfg cfg = {
        .kind = kind, .max_width = w, .max_height = h, .threads = threads, .variant = variant
    };
    struct trk_backend *b = NULL;
    int err = trk_backend_create(&cfg, &b);
    if (err) {
        fprintf(stderr, "trk_backend_create(kind %d, %dx%d, threads %d): %s\n", (int)kind, w, h,
                threads, trk_strerror(err));
        exit(2);
    }
    return b;
}

static struct trk_backend *make(enum trk_backend_kind kind, int w, int h, int threads)
{
    return make_variant(kind, w, h, threads, NULL);
}

static const char *space_name(enum trk_space s)
{
    static const char *const names[TRK_SPACE_COUNT] = { "rgb", "hsv", "ycbcr", "lab", "rg" };
    return (unsigned)s < TRK_SPACE_COUNT ? names[s] : "?";
}

/* Runs the reference and each of nf fast backends on img and compares every
 * object's accumulators. */
static void compare_n(struct trk_backend *ref, struct trk_backend *const *fasts, int nf,
                      const struct trk_object_def *objs, int n, const struct trk_image *img,
                      const struct trk_roi *rois, const char *what)
{
    static struct trk_obj_result want[TRK_MAX_OBJECTS], got[TRK_MAX_OBJECTS];
    memset(want, 0x11, sizeof(want));
    int e1 = trk_backend_process(ref, img, rois, want, NULL);
    CHECKF(e1 == 0, "%s: ref process: %d", what, e1);
    for (int fi = 0; fi < nf; fi++) {
        struct trk_backend *fast = fasts[fi];
        memset(got, 0x22, sizeof(got));
        int e2 = trk_backend_process(fast, img, rois, got, NULL);
        CHECKF(e2 == 0, "%s: %s process: %d", what, trk_backend_name(fast), e2);
        for (int i = 0; i < n; i++) {
            const struct trk_obj_result *a = &want[i], *b = &got[i];
            if (a->mass == b->mass && a->sum_x == b->sum_x && a->sum_y == b->sum_y &&
                a->x0 == b->x0 && a->y0 == b->y0 && a->x1 == b->x1 && a->y1 == b->y1 &&
                a->sum_xx == b->sum_xx && a->sum_yy == b->sum_yy && a->sum_xy == b->sum_xy)
                continue;
            const struct trk_object_def *o = &objs[i];
            CHECKF(0,
                   "%s: %s: object %d (%s lo %u,%u,%u hi %u,%u,%u): ref mass %llu sx %llu sy %llu "
                   "box %d,%d,%d,%d sxx %llu syy %llu sxy %llu; fast mass %llu sx %llu sy %llu "
                   "box %d,%d,%d,%d sxx %llu syy %llu sxy %llu",
                   what, trk_backend_name(fast), i, space_name(o->space), o->lo[0], o->lo[1],
                   o->lo[2], o->hi[0], o->hi[1], o->hi[2], (unsigned long long)a->mass,
                   (unsigned long long)a->sum_x, (unsigned long long)a->sum_y, a->x0, a->y0, a->x1,
                   a->y1, (unsigned long long)a->sum_xx, (unsigned long long)a->sum_yy,
                   (unsigned long long)a->sum_xy, (unsigned long long)b->mass,
                   (unsigned long long)b->sum_x, (unsigned long long)b->sum_y, b->x0, b->y0, b->x1,
                   b->y1, (unsigned long long)b->sum_xx, (unsigned long long)b->sum_yy,
                   (unsigned long long)b->sum_xy);
        }
    }
}

static void compare(struct trk_backend *ref, struct trk_backend *fast,
                    const struct trk_object_def *objs, int n, const struct trk_image *img,
                    const struct trk_roi *rois, const char *what)
{
    compare_n(ref, &fast, 1, objs, n, img, rois, what);
}

static int set_both(struct trk_backend *ref, struct trk_backend *fast,
                    const struct trk_object_def *objs, int n)
{
    int e1 = trk_backend_set_objects(ref, objs, n);
    int e2 = trk_backend_set_objects(fast, objs, n);
    CHECKF(e1 == 0 && e2 == 0, "set_objects(%d): ref %d, fast %d", n, e1, e2);
    return e1 || e2;
}

/* ------------------------------------------------------------------ corpus */

static const int counts[] = { 0, 1, 63, 64, 65, 128, 255, 256 };
#define NCOUNTS (int)(sizeof(counts) / sizeof(counts[0]))
static const int thread_opts[] = { 1, 2, 3, 7 };
/* The larger ones (>= 8192 pixels) wake the thread pool; heights are not
 * multiples of the 16-row strips. */
static const int sizes[][2] = { { 1, 1 },    { 2, 1 },    { 1, 5 },    { 7, 3 },
                                { 33, 17 },  { 64, 48 },  { 97, 61 },  { 160, 121 },
                                { 131, 70 }, { 48, 197 }, { 257, 67 }, { 9, 1031 } };
#define NSIZES (int)(sizeof(sizes) / sizeof(sizes[0]))
static const int pads[] = { 0, 1, 3, 13, 64 };

static void test_corpus(void)
{
    struct trk_backend *ref = make(TRK_BACKEND_CPU_REF, 257, 1031, 1);
    /* [threads][variant]: the default kernels and the portable ones. */
    struct trk_backend *fast[4][2];
    for (int t = 0; t < 4; t++) {
        fast[t][0] = make(TRK_BACKEND_CPU, 257, 1031, thread_opts[t]);
        fast[t][1] = make_variant(TRK_BACKEND_CPU, 257, 1031, thread_opts[t], "lut-portable");
    }
    int cases = 0;
    for (int ci = 0; ci < NCOUNTS; ci++) {
        for (int si = 0; si < NSIZES; si++) {
            int w = sizes[si][0], h = sizes[si][1], n = counts[ci];
            uint64_t seed = 1000u * (unsigned)ci + (unsigned)si;
            struct trk_scene sc;
            int err = trk_scene_random(w, h, n, seed, &sc);
            CHECKF(err == 0, "trk_scene_random: %d", err);
            if (err) continue;
            /* Every space for every count: the random scene mixes spaces. */
            for (int f = 0; f < TRK_FMT_COUNT; f++) {
                int ti = (ci + si + f) % 4;
                int mat = (ci + f) % 2, full = (si + f) % 2;
                int pad = pads[(ci * 3 + si + f) % 5];
                if (set_both(ref, fast[ti][0], sc.objects, n) ||
                    set_both(ref, fast[ti][1], sc.objects, n))
                    continue;
                uint8_t *buf;
                struct trk_image img;
                err = trk_image_from_rgb(sc.rgb, w, h, (enum trk_pixfmt)f, (enum trk_matrix)mat,
                                         full, pad, &buf, &img);
                CHECKF(err == 0, "trk_image_from_rgb: %d", err);
                if (err) continue;
                char what[160];
                snprintf(what, sizeof(what),
                         "corpus %dx%d n=%d %s pad %d %s %s threads %d seed %llu", w, h, n,
                         trk_pixfmt_name((enum trk_pixfmt)f), pad, mat ? "bt709" : "bt601",
                         full ? "full" : "limited", thread_opts[ti], (unsigned long long)seed);
                compare_n(ref, fast[ti], 2, sc.objects, n, &img, NULL, what);
                free(buf);
                cases++;
            }
            trk_scene_free(&sc);
        }
    }
    printf("corpus: %d cases\n", cases);
    trk_backend_destroy(&ref);
    for (int t = 0; t < 4; t++) {
        trk_backend_destroy(&fast[t][0]);
        trk_backend_destroy(&fast[t][1]);
    }
}

/* ------------------------------------------------------------------ spaces */

/* Object sets of a single space take their own kernels (rgb straight from
 * packed RGB or from YUV through the extended tables, ycbcr on native YUV
 * samples with chroma tested once per pair), so each space alone is run on
 * every format, at every mask width. Objects come from random scenes, cycled
 * to reach the count (repeats are fine: every object is checked). */
static void test_spaces(void)
{
    static const int ns[] = { 1, 64, 65, 129, 256 };
    static const int dims[][2] = { { 131, 70 }, { 97, 61 }, { 64, 201 }, { 3, 2 }, { 255, 33 } };
    struct trk_backend *ref = make(TRK_BACKEND_CPU_REF, 255, 201, 1);
    struct trk_backend *fasts[2] = { make(TRK_BACKEND_CPU, 255, 201, 2),
                                     make_variant(TRK_BACKEND_CPU, 255, 201, 3, "lut-portable") };
    static struct trk_object_def objs[TRK_MAX_OBJECTS];
    int cases = 0;
    for (int sp = 0; sp < 3; sp++)
        for (int ni = 0; ni < 5; ni++) {
            int w = dims[(sp + ni) % 5][0], h = dims[(sp + ni) % 5][1], n = ns[ni];
            struct trk_scene sc;
            if (trk_scene_random(w, h, 256, 7000u + (unsigned)(sp * 10 + ni), &sc)) {
                CHECKF(0, "trk_scene_random failed");
                continue;
            }
            int have = 0;
            for (int i = 0; i < 256; i++)
                if (sc.objects[i].space == (enum trk_space)sp) objs[have++] = sc.objects[i];
            for (int i = have; have > 0 && i < n; i++)
                objs[i] = objs[i % have];
            if (have == 0 || set_both(ref, fasts[0], objs, n) || set_both(ref, fasts[1], objs, n)) {
                trk_scene_free(&sc);
                continue;
            }
            for (int f = 0; f < TRK_FMT_COUNT; f++) {
                int mat = (f + ni) % 2, full = (f + sp) % 2, pad = pads[(f + ni) % 5];
                uint8_t *buf;
                struct trk_image img;
                if (trk_image_from_rgb(sc.rgb, w, h, (enum trk_pixfmt)f, (enum trk_matrix)mat, full,
                                       pad, &buf, &img)) {
                    CHECKF(0, "trk_image_from_rgb failed");
                    continue;
                }
                char what[128];
                snprintf(what, sizeof(what), "spaces %s only %dx%d n=%d %s pad %d %s %s",
                         space_name((enum trk_space)sp), w, h, n,
                         trk_pixfmt_name((enum trk_pixfmt)f), pad, mat ? "bt709" : "bt601",
                         full ? "full" : "limited");
                compare_n(ref, fasts, 2, objs, n, &img, NULL, what);
                free(buf);
                cases++;
            }
            trk_scene_free(&sc);
        }
    printf("spaces: %d cases\n", cases);
    trk_backend_destroy(&ref);
    trk_backend_destroy(&fasts[0]);
    trk_backend_destroy(&fasts[1]);
}

/* -------------------------------------------------------------------- rois */

static int rnd(uint64_t *st, int lo, int hi)
{
    return lo + (int)(trk_rand_next(st) % (uint64_t)(hi - lo + 1));
}

static void random_rois(uint64_t *st, int w, int h, int n, struct trk_roi *r)
{
    for (int i = 0; i < n; i++) {
        switch (rnd(st, 0, 5)) {
        case 0: /* the whole frame and more */
            r[i] = (struct trk_roi){ -5, -7, w + 3, h + 9 };
            break;
        case 1: /* entirely outside: empty after clipping */
            r[i] = (struct trk_roi){ w + 1, 0, w + 10, h - 1 };
            break;
        case 2: /* inverted: empty */ r[i] = (struct trk_roi){ rnd(st, 1, w), 0, 0, h - 1 }; break;
        case 3: { /* one pixel */
            int x = rnd(st, 0, w - 1), y = rnd(st, 0, h - 1);
            r[i] = (struct trk_roi){ x, y, x, y };
            break;
        }
        default: { /* a random box that may cross any border */
            int x0 = rnd(st, -w / 4, w - 1), y0 = rnd(st, -h / 4, h - 1);
            r[i] = (struct trk_roi){ x0, y0, x0 + rnd(st, 0, w), y0 + rnd(st, 0, h) };
            break;
        }
        }
    }
}

static void test_rois(void)
{
    struct trk_backend *ref = make(TRK_BACKEND_CPU_REF, 400, 300, 1);
    struct trk_backend *fast[4];
    for (int t = 0; t < 4; t++)
        fast[t] = make(TRK_BACKEND_CPU, 400, 300, thread_opts[t]);
    static struct trk_roi rois[TRK_MAX_OBJECTS];
    uint64_t st = 77;
    int cases = 0;
    for (int rep = 0; rep < 60; rep++) {
        int w = rnd(&st, 1, 400), h = rnd(&st, 1, 300);
        int n = counts[rep % NCOUNTS];
        int f = rep % TRK_FMT_COUNT, ti = (rep / 2) % 4;
        struct trk_scene sc;
        if (trk_scene_random(w, h, TRK_MAX_OBJECTS, 500u + (unsigned)rep, &sc)) {
            CHECKF(0, "trk_scene_random failed");
            continue;
        }
        /* Odd reps: objects of one space only (their own kernels). */
        static struct trk_object_def objs[TRK_MAX_OBJECTS];
        int have = 0, sp = (rep / 2) % 3;
        for (int i = 0; i < TRK_MAX_OBJECTS; i++)
            if (!(rep & 1) || sc.objects[i].space == (enum trk_space)sp)
                objs[have++] = sc.objects[i];
        for (int i = have; have > 0 && i < n; i++)
            objs[i] = objs[i % have];
        if (set_both(ref, fast[ti], objs, n)) continue;
        uint8_t *buf;
        struct trk_image img;
        if (trk_image_from_rgb(sc.rgb, w, h, (enum trk_pixfmt)f, TRK_MATRIX_BT601, rep & 1, rep % 5,
                               &buf, &img)) {
            CHECKF(0, "trk_image_from_rgb failed");
            continue;
        }
        random_rois(&st, w, h, n, rois);
        char what[128];
        snprintf(what, sizeof(what), "rois %dx%d n=%d %s threads %d rep %d%s", w, h, n,
                 trk_pixfmt_name((enum trk_pixfmt)f), thread_opts[ti], rep,
                 rep & 1 ? (sp == 0   ? " rgb only"
                            : sp == 1 ? " hsv only"
                                      : " ycbcr only")
                         : "");
        compare(ref, fast[ti], objs, n, &img, rois, what);
        /* All ROIs in one small corner: the scanned union is tiny. */
        for (int i = 0; i < n; i++)
            rois[i] = (struct trk_roi){ 0, 0, w / 5, h / 5 };
        compare(ref, fast[ti], objs, n, &img, rois, what);
        /* One shared ROI inside the frame: rows start at an x that may be
         * odd (mid chroma pair). */
        int x0 = rnd(&st, 0, w - 1), y0 = rnd(&st, 0, h - 1);
        for (int i = 0; i < n; i++)
            rois[i] = (struct trk_roi){ x0, y0, x0 + rnd(&st, 0, w), y0 + rnd(&st, 0, h) };
        compare(ref, fast[ti], objs, n, &img, rois, what);
        free(buf);
        trk_scene_free(&sc);
        cases += 3;
    }
    printf("rois: %d cases\n", cases);
    trk_backend_destroy(&ref);
    for (int t = 0; t < 4; t++)
        trk_backend_destroy(&fast[t]);
}

/* ---------------------------------------------------------------- standard */

static void test_standard(void)
{
    static const int ms[] = { 1, 8, 32, 128, 256 };
    struct trk_backend *ref = make(TRK_BACKEND_CPU_REF, 640, 480, 1);
    struct trk_backend *fast = make(TRK_BACKEND_CPU, 640, 480, 2);
    for (int i = 0; i < 5; i++) {
        int m = ms[i], w = i % 2 ? 640 : 320, h = i % 2 ? 480 : 240;
        struct trk_scene sc;
        if (trk_scene_standard(w, h, m, 12345, &sc)) {
            CHECKF(0, "trk_scene_standard failed");
            continue;
        }
        if (set_both(ref, fast, sc.objects, m)) continue;
        for (int f = 0; f < TRK_FMT_COUNT; f++) {
            uint8_t *buf;
            struct trk_image img;
            if (trk_image_from_rgb(sc.rgb, w, h, (enum trk_pixfmt)f, TRK_MATRIX_BT709, false, 0,
                                   &buf, &img))
                continue;
            char what[96];
            snprintf(what, sizeof(what), "standard %dx%d m=%d %s", w, h, m,
                     trk_pixfmt_name((enum trk_pixfmt)f));
            compare(ref, fast, sc.objects, m, &img, NULL, what);
            if (f == TRK_FMT_RGB24) {
                /* The scene's own answer: every disk's centre pixel is its
                 * colour +-3, inside its box, so every object is found with
                 * a bbox around its centre. */
                static struct trk_obj_result r[TRK_MAX_OBJECTS];
                trk_backend_process(fast, &img, NULL, r, NULL);
                for (int k = 0; k < m; k++) {
                    /* Disks painted later cover earlier ones: only a disk
                     * whose centre no later disk covers is sure to show. */
                    int covered = 0;
                    for (int j = k + 1; j < m; j++) {
                        int dx = sc.cx[j] - sc.cx[k], dy = sc.cy[j] - sc.cy[k];
                        if (dx * dx + dy * dy <= sc.radius * sc.radius) covered = 1;
                    }
                    if (covered) continue;
                    CHECKF(r[k].mass > 0 && r[k].x0 <= sc.cx[k] && sc.cx[k] <= r[k].x1 &&
                               r[k].y0 <= sc.cy[k] && sc.cy[k] <= r[k].y1,
                           "%s: disk %d at %d,%d not found", what, k, sc.cx[k], sc.cy[k]);
                }
            }
            free(buf);
        }
        trk_scene_free(&sc);
    }
    trk_backend_destroy(&ref);
    trk_backend_destroy(&fast);
}

/* --------------------------------------------------------------- allcolors */

/* Objects of every space around colours that matter: wrapping and non-
 * wrapping hue, gray (S = 0), dark and bright corners, wide boxes. */
static int mixed_objects(uint64_t seed, struct trk_object_def *o, int n)
{
    uint64_t st = seed;
    for (int i = 0; i < n; i++) {
        memset(&o[i], 0, sizeof(o[i]));
        snprintf(o[i].name, sizeof(o[i].name), "m%d", i);
        o[i].min_mass = 1;
        o[i].space = (enum trk_space)(i % 3);
        for (int c = 0; c < 3; c++) {
            int mx = (o[i].space == TRK_SPACE_HSV && c == 0) ? 359 : 255;
            int a = rnd(&st, 0, mx), width = rnd(&st, 0, i % 4 == 0 ? mx : 60);
            int b = a + width;
            if (o[i].space == TRK_SPACE_HSV && c == 0)
                b %= 360; /* may wrap */
            else if (b > mx)
                b = mx;
            o[i].lo[c] = (uint16_t)a;
            o[i].hi[c] = (uint16_t)b;
        }
    }
    /* Fixed corner cases at the front. */
    if (n > 0) { /* red through the seam, strongly saturated */
        o[0].space = TRK_SPACE_HSV;
        o[0].lo[0] = 350, o[0].hi[0] = 10, o[0].lo[1] = 100, o[0].hi[1] = 255;
        o[0].lo[2] = 50, o[0].hi[2] = 255;
    }
    if (n > 1) { /* grays only: S = 0 (hue 0) */
        o[1].space = TRK_SPACE_HSV;
        o[1].lo[0] = 0, o[1].hi[0] = 0, o[1].lo[1] = 0, o[1].hi[1] = 0;
        o[1].lo[2] = 0, o[1].hi[2] = 255;
    }
    if (n > 2) { /* everything: runs cover whole rows */
        o[2].space = TRK_SPACE_YCBCR;
        o[2].lo[0] = o[2].lo[1] = o[2].lo[2] = 0;
        o[2].hi[0] = o[2].hi[1] = o[2].hi[2] = 255;
    }
    if (n > 3) { /* hue 359 exactly */
        o[3].space = TRK_SPACE_HSV;
        o[3].lo[0] = 359, o[3].hi[0] = 359, o[3].lo[1] = 1, o[3].hi[1] = 255;
        o[3].lo[2] = 0, o[3].hi[2] = 255;
    }
    return n;
}

/* Every RGB colour once: 4096 x 4096, R,G from the position, B from the
 * 16x16 tile. NULL when out of memory. */
static uint8_t *allcolors_rgb(void)
{
    uint8_t *rgb = malloc((size_t)4096 * 4096 * 3);
    for (int y = 0; rgb && y < 4096; y++)
        for (int x = 0; x < 4096; x++) {
            uint8_t *p = rgb + ((size_t)y * 4096 + x) * 3;
            p[0] = (uint8_t)x, p[1] = (uint8_t)y, p[2] = (uint8_t)((y >> 8) << 4 | (x >> 8));
        }
    return rgb;
}

static void test_allcolors(int rgb_part, int yuv_part)
{
    enum { W = 4096, H = 4096, N = 70 }; /* 70 objects: 2-word masks */
    static struct trk_object_def objs[N];
    mixed_objects(99, objs, N);
    struct trk_backend *ref = make(TRK_BACKEND_CPU_REF, W, 65536, 1);
    struct trk_backend *fasts[2] = { make(TRK_BACKEND_CPU, W, 65536, 2),
                                     make_variant(TRK_BACKEND_CPU, W, 65536, 2, "lut-portable") };
    if (set_both(ref, fasts[0], objs, N) || set_both(ref, fasts[1], objs, N)) return;
    uint8_t *rgb = rgb_part ? allcolors_rgb() : NULL;
    if (rgb_part && !rgb) {
        CHECKF(0, "out of memory");
        return;
    }
    struct trk_image img = { .plane = { rgb },
                             .pitch = { (size_t)W * 3 },
                             .width = W,
                             .height = H,
                             .fmt = TRK_FMT_RGB24,
                             .matrix = TRK_MATRIX_BT709,
                             .full_range = false };
    if (rgb) compare_n(ref, fasts, 2, objs, N, &img, NULL, "allcolors rgb24 bt709 limited");
    free(rgb);
    if (!yuv_part) goto out;

    /* Every Y,Cb,Cr triple as YUYV: row = (Cb, Cr), 128 pairs of that chroma
     * per row carry Y = 0..255. */
    enum { YW = 256, YH = 65536 };
    uint8_t *yuyv = malloc((size_t)YW * 2 * YH);
    if (!yuyv) {
        CHECKF(0, "out of memory");
        return;
    }
    for (int y = 0; y < YH; y++)
        for (int p = 0; p < YW / 2; p++) {
            uint8_t *d = yuyv + (size_t)y * YW * 2 + (size_t)p * 4;
            d[0] = (uint8_t)(2 * p), d[1] = (uint8_t)(y >> 8), d[2] = (uint8_t)(2 * p + 1),
            d[3] = (uint8_t)y;
        }
    static const int combos[2][2] = { { TRK_MATRIX_BT601, 0 }, { TRK_MATRIX_BT709, 1 } };
    for (int c = 0; c < 2; c++) {
        struct trk_image yi = { .plane = { yuyv },
                                .pitch = { (size_t)YW * 2 },
                                .width = YW,
                                .height = YH,
                                .fmt = TRK_FMT_YUYV,
                                .matrix = (enum trk_matrix)combos[c][0],
                                .full_range = combos[c][1] };
        char what[64];
        snprintf(what, sizeof(what), "allcolors yuyv %s %s", c ? "bt709" : "bt601",
                 c ? "full" : "limited");
        compare_n(ref, fasts, 2, objs, N, &yi, NULL, what);
    }
    free(yuyv);
out:
    trk_backend_destroy(&ref);
    trk_backend_destroy(&fasts[0]);
    trk_backend_destroy(&fasts[1]);
}

/* --------------------------------------------------------------- lifecycle */

static void test_lifecycle(void)
{
    struct trk_backend *ref = make(TRK_BACKEND_CPU_REF, 120, 90, 1);
    struct trk_backend *fast = make(TRK_BACKEND_CPU, 120, 90, 0); /* 0 = cores */
    CHECKF(!strcmp(trk_backend_name(fast), "cpu"), "name %s", trk_backend_name(fast));
    struct trk_scene big, small;
    if (trk_scene_random(120, 90, 256, 4242, &big) || trk_scene_random(37, 29, 256, 4343, &small)) {
        CHECKF(0, "scene");
        return;
    }
    uint8_t *b1, *b2;
    struct trk_image i1, i2;
    trk_image_from_rgb(big.rgb, 120, 90, TRK_FMT_NV12, TRK_MATRIX_BT601, false, 5, &b1, &i1);
    trk_image_from_rgb(small.rgb, 37, 29, TRK_FMT_BGRA, TRK_MATRIX_BT601, true, 0, &b2, &i2);
    /* Shrinking and growing object sets: stale table bits would show. */
    static const int seq[] = { 256, 1, 65, 0, 200, 64, 3, 256 };
    for (int k = 0; k < 8; k++) {
        int n = seq[k];
        const struct trk_object_def *o = k % 2 ? small.objects : big.objects;
        if (set_both(ref, fast, o, n)) continue;
        char what[64];
        snprintf(what, sizeof(what), "lifecycle step %d n=%d big", k, n);
        compare(ref, fast, o, n, &i1, NULL, what);
        snprintf(what, sizeof(what), "lifecycle step %d n=%d small", k, n);
        compare(ref, fast, o, n, &i2, NULL, what);
    }
    /* Repeated frames give the same answer (accumulators reset per frame). */
    static struct trk_obj_result r1[TRK_MAX_OBJECTS], r2[TRK_MAX_OBJECTS];
    struct trk_backend_timing t;
    CHECKF(trk_backend_process(fast, &i1, NULL, r1, &t) == 0, "process");
    CHECKF(t.total_ms >= 0 && t.kernel_ms >= 0 && t.upload_ms == 0, "timing %f %f %f", t.total_ms,
           t.kernel_ms, t.upload_ms);
    CHECKF(trk_backend_process(fast, &i1, NULL, r2, NULL) == 0, "process");
    CHECKF(!memcmp(r1, r2, sizeof(r1[0]) * 256), "second frame differs");
    /* Async form: submit + wait == process. */
    CHECKF(trk_backend_submit(fast, &i1, NULL) == 0, "submit");
    CHECKF(trk_backend_wait(fast, r2, NULL) == 0, "wait");
    CHECKF(!memcmp(r1, r2, sizeof(r1[0]) * 256), "submit+wait differs");
    /* Too large a frame, bad thread count. */
    struct trk_image huge = i1;
    huge.width = 121;
    huge.pitch[0] = 200;
    CHECKF(trk_backend_process(fast, &huge, NULL, r1, NULL) == TRK_ETOOBIG, "too big accepted");
    struct trk_backend_cfg bad = {
        .kind = TRK_BACKEND_CPU, .max_width = 8, .max_height = 8, .threads = -1
    };
    struct trk_backend *bb = NULL;
    CHECKF(trk_backend_create(&bad, &bb) == TRK_EINVAL && !bb, "threads -1 accepted");
    bad.threads = 1;
    bad.variant = "no-such-variant";
    CHECKF(trk_backend_create(&bad, &bb) == TRK_EINVAL && !bb, "unknown variant accepted");
    /* The variants the benchmark iterates: default first, each creatable. */
    const char *names[8];
    int nv = trk_backend_variants(TRK_BACKEND_CPU, names, 8);
    CHECKF(nv >= 2 && nv <= 8 && !strcmp(names[0], "lut"), "variants: %d", nv);
    for (int i = 0; i < nv && i < 8; i++) {
        bad.variant = names[i];
        CHECKF(trk_backend_create(&bad, &bb) == 0 && bb, "variant %s", names[i]);
        if (bb && i > 0)
            CHECKF(strstr(trk_backend_name(bb), names[i]) != NULL, "name %s for variant %s",
                   trk_backend_name(bb), names[i]);
        trk_backend_destroy(&bb);
    }
    /* Many instances with pools, created and destroyed (no leak of threads). */
    for (int k = 0; k < 20; k++) {
        struct trk_backend *p = make(TRK_BACKEND_CPU, 64, 64, 3);
        trk_backend_destroy(&p);
        trk_backend_destroy(&p); /* twice is safe */
    }
    free(b1);
    free(b2);
    trk_scene_free(&big);
    trk_scene_free(&small);
    trk_backend_destroy(&ref);
    trk_backend_destroy(&fast);
}

/* ------------------------------------------------------------------- dense */

/* fast[t][v]: t + 1 threads (1-3), v 0 the default kernels, 1 the
 * portable ones, each for frames up to w x h. */
static void make_fast_set(struct trk_backend *fast[3][2], int w, int h)
{
    for (int t = 0; t < 3; t++) {
        fast[t][0] = make(TRK_BACKEND_CPU, w, h, t + 1);
        fast[t][1] = make_variant(TRK_BACKEND_CPU, w, h, t + 1, "lut-portable");
    }
}

static void free_fast_set(struct trk_backend *fast[3][2])
{
    for (int t = 0; t < 3; t++) {
        trk_backend_destroy(&fast[t][0]);
        trk_backend_destroy(&fast[t][1]);
    }
}

/* Every RGB colour against lab and rg boxes (around random colours, and
 * boxes of one value), so the fast backend's cell gate (a cell's lab and rg
 * ranges against the boxes) meets every cell and every colour in it. */
static void test_allcolors_light(void)
{
    enum { N = 24 };
    static struct trk_object_def objs[N];
    uint8_t *rgb = allcolors_rgb();
    if (!rgb) {
        CHECKF(0, "out of memory");
        return;
    }
    struct trk_image img = { .plane = { rgb },
                             .pitch = { (size_t)4096 * 3 },
                             .width = 4096,
                             .height = 4096,
                             .fmt = TRK_FMT_RGB24,
                             .matrix = TRK_MATRIX_BT601,
                             .full_range = true };
    uint64_t st = 3131;
    for (int k = 0; k < N; k++) {
        trk_scene_pixel_objects(&st, &img, k % 2 ? TRK_SPACE_RG : TRK_SPACE_LAB, 1, &objs[k]);
        snprintf(objs[k].name, sizeof(objs[k].name), "light%d", k);
        for (int c = 0; k >= N - 6 && c < 3; c++)
            objs[k].hi[c] = objs[k].lo[c] = (uint16_t)((objs[k].lo[c] + objs[k].hi[c]) / 2);
    }
    struct trk_backend *ref = make(TRK_BACKEND_CPU_REF, 4096, 4096, 1);
    struct trk_backend *fasts[2] = { make(TRK_BACKEND_CPU, 4096, 4096, 2),
                                     make_variant(TRK_BACKEND_CPU, 4096, 4096, 2, "lut-portable") };
    if (!set_both(ref, fasts[0], objs, N) && !set_both(ref, fasts[1], objs, N))
        compare_n(ref, fasts, 2, objs, N, &img, NULL, "allcolors lab and rg");
    free(rgb);
    trk_backend_destroy(&ref);
    trk_backend_destroy(&fasts[0]);
    trk_backend_destroy(&fasts[1]);
}

/* Half-range boxes in space sp (hue: a random half circle, wrapping or
 * not): on noise each matches about 1/8 of the pixels and changes at nearly
 * every pixel, the rows that take the dense path. */
static void halfbox_objects(uint64_t *st, enum trk_space sp, int n, struct trk_object_def *o)
{
    for (int k = 0; k < n; k++) {
        memset(&o[k], 0, sizeof(o[k]));
        snprintf(o[k].name, sizeof(o[k].name), "half%d", k);
        o[k].space = sp;
        o[k].min_mass = 1;
        for (int c = 0; c < 3; c++) {
            const int mx = trk_chan_max(sp, c), half = (mx + 1) / 2;
            const int lo = rnd(st, 0, mx);
            const int hsv_hue = sp == TRK_SPACE_HSV && c == 0;
            const int l = hsv_hue ? lo : (lo > mx - half + 1 ? mx - half + 1 : lo);
            o[k].lo[c] = (uint16_t)l;
            o[k].hi[c] = (uint16_t)(hsv_hue ? (l + half - 1) % (mx + 1) : l + half - 1);
        }
    }
}

/* Dense rows (cpu_fast_kern.h, "dense rows") against the reference: the
 * noisebox scene, and random scenes (flat regions beside noise, so rows
 * switch between the run path and the dense path) with half-range boxes of
 * every space; every format, odd widths, rows longer than one 2048-pixel
 * segment, 1..256 objects (mask widths 1, 2, 4 words), 1-3 threads, both
 * kernel variants, without and with random ROIs. */
static void test_dense(void)
{
    static const int dsizes[][2] = { { 1, 1 },    { 3, 2 },    { 97, 61 },
                                     { 131, 70 }, { 257, 67 }, { 2113, 9 } };
    static const int dcounts[] = { 1, 8, 64, 65, 128, 129, 256 };
    static struct trk_object_def objs[TRK_MAX_OBJECTS];
    static struct trk_roi rois[TRK_MAX_OBJECTS];
    struct trk_backend *ref = make(TRK_BACKEND_CPU_REF, 2113, 70, 1);
    struct trk_backend *fast[3][2];
    make_fast_set(fast, 2113, 70);
    int cases = 0;
    uint64_t st = 1414;
    for (int si = 0; si < (int)(sizeof(dsizes) / sizeof(dsizes[0])); si++)
        for (int ci = 0; ci < (int)(sizeof(dcounts) / sizeof(dcounts[0])); ci++) {
            const int w = dsizes[si][0], h = dsizes[si][1], n = dcounts[ci];
            for (int kind = 0; kind < 2; kind++) {
                struct trk_scene sc;
                const uint64_t seed = 9000u + 100u * (unsigned)si + 10u * (unsigned)ci + kind;
                int err = kind ? trk_scene_random(w, h, n, seed, &sc)
                               : trk_scene_noisebox(w, h, n, seed, &sc);
                CHECKF(err == 0, "scene: %d", err);
                if (err) continue;
                for (int f = 0; f < TRK_FMT_COUNT; f++) {
                    /* noisebox: its rgb boxes; random: half boxes of one
                     * space per format, or a mix of all three. */
                    const int mode = kind ? (f + si + ci) % 4 : 0;
                    if (!kind) {
                        memcpy(objs, sc.objects, sizeof(objs[0]) * (size_t)n);
                    } else if (mode < 3) {
                        halfbox_objects(&st, (enum trk_space)mode, n, objs);
                    } else {
                        for (int k = 0; k < n; k++)
                            halfbox_objects(&st, (enum trk_space)rnd(&st, 0, 2), 1, &objs[k]);
                    }
                    const int ti = (si + ci + f) % 3, mat = (ci + f) % 2, full = (si + f) % 2;
                    if (set_both(ref, fast[ti][0], objs, n) || set_both(ref, fast[ti][1], objs, n))
                        continue;
                    uint8_t *buf;
                    struct trk_image img;
                    err = trk_image_from_rgb(sc.rgb, w, h, (enum trk_pixfmt)f, (enum trk_matrix)mat,
                                             full, (si + f) % 3, &buf, &img);
                    CHECKF(err == 0, "trk_image_from_rgb: %d", err);
                    if (err) continue;
                    for (int r = 0; r < 1 + (f + ci) % 2; r++) {
                        if (r) random_rois(&st, w, h, n, rois);
                        char what[200];
                        snprintf(what, sizeof(what),
                                 "dense %s %dx%d n=%d %s mode %d %s threads %d seed %llu",
                                 kind ? "random" : "noisebox", w, h, n,
                                 trk_pixfmt_name((enum trk_pixfmt)f), mode, r ? "rois" : "no rois",
                                 ti + 1, (unsigned long long)seed);
                        compare_n(ref, fast[ti], 2, objs, n, &img, r ? rois : NULL, what);
                        cases++;
                    }
                    free(buf);
                }
                trk_scene_free(&sc);
            }
        }
    printf("dense: %d cases\n", cases);
    trk_backend_destroy(&ref);
    free_fast_set(fast);
}

/* ------------------------------------------------------------ lightspaces */

/* Regions of objects in every space: the fast regional form against the
 * reference's (its one-by-one submits), every region bit for bit. */
static void compare_regions(struct trk_backend *ref, struct trk_backend *fast, uint64_t *st,
                            const struct trk_image *img, int n, const char *what)
{
    static struct trk_region reg[64];
    static struct trk_obj_result want[64], got[64];
    const int nr = n < 64 ? n : 64;
    for (int j = 0; j < nr; j++) {
        reg[j].obj = rnd(st, 0, n - 1);
        reg[j].roi.x0 = rnd(st, -2, img->width - 1);
        reg[j].roi.y0 = rnd(st, -2, img->height - 1);
        reg[j].roi.x1 = reg[j].roi.x0 + rnd(st, 0, img->width);
        reg[j].roi.y1 = reg[j].roi.y0 + rnd(st, 0, img->height);
    }
    int e1 = trk_backend_process_regions(ref, img, reg, nr, want, NULL);
    int e2 = trk_backend_process_regions(fast, img, reg, nr, got, NULL);
    CHECKF(e1 == 0 && e2 == 0, "%s: regions: ref %d fast %d", what, e1, e2);
    for (int j = 0; j < nr && !e1 && !e2; j++)
        CHECKF(!memcmp(&want[j], &got[j], sizeof(want[j])),
               "%s: region %d (object %d): mass %llu vs %llu", what, j, reg[j].obj,
               (unsigned long long)want[j].mass, (unsigned long long)got[j].mass);
}

/* Object i's blob lists of both backends, bit for bit. */
static void compare_blobs(struct trk_backend *ref, struct trk_backend *fast, int n,
                          const char *what)
{
    for (int i = 0; i < n; i++) {
        const struct trk_blob *a, *b;
        const int na = trk_backend_blobs(ref, i, &a), nb = trk_backend_blobs(fast, i, &b);
        CHECKF(na == nb && (na <= 0 || !memcmp(a, b, (size_t)na * sizeof(*a))),
               "%s: object %d blobs: ref %d, fast %d lists differ", what, i, na, nb);
    }
}

/* The state the exactness parts (lightspaces, classes) share: the
 * backends, the PRNG, the objects and ROIs, the cases run. */
struct xctx {
    struct trk_backend *ref, *fast[3][2];
    uint64_t st;
    int cases;
    struct trk_object_def objs[TRK_MAX_OBJECTS];
    struct trk_roi rois[TRK_MAX_OBJECTS];
    uint8_t tabs[TRK_MAX_CLASSES][TRK_CLASS_BYTES];
};

/* One set of objects (x->objs[0..n)) on img through the reference and the
 * fast backends of thread count ti + 1: both variants, without and with
 * ROIs, then the regional form; blobs too when they are on. what: the
 * part and its mode. */
static void run_set(struct xctx *x, const struct trk_image *img, int n, int f, int ti,
                    const char *part, int mode, int blobs)
{
    if (set_both(x->ref, x->fast[ti][0], x->objs, n) ||
        set_both(x->ref, x->fast[ti][1], x->objs, n))
        return;
    for (int r = 0; r < 2; r++) {
        if (r) random_rois(&x->st, img->width, img->height, n, x->rois);
        char what[200];
        snprintf(what, sizeof(what), "%s %dx%d n=%d %s mode %d %s threads %d", part, img->width,
                 img->height, n, trk_pixfmt_name((enum trk_pixfmt)f), mode, r ? "rois" : "no rois",
                 ti + 1);
        compare_n(x->ref, x->fast[ti], 2, x->objs, n, img, r ? x->rois : NULL, what);
        if (blobs) compare_blobs(x->ref, x->fast[ti][1], n, what);
        x->cases++;
    }
    char what[160];
    snprintf(what, sizeof(what), "%s regions %dx%d n=%d %s mode %d", part, img->width, img->height,
             n, trk_pixfmt_name((enum trk_pixfmt)f), mode);
    compare_regions(x->ref, x->fast[ti][mode & 1], &x->st, img, n, what);
}

/* fn(x, img, n, f, ti) for every frame size x object count of the
 * exactness parts and every format (both matrices and ranges, thread
 * counts 1..3 in turn); the scenes' seeds from base. */
typedef void (*case_fn)(struct xctx *x, const struct trk_image *img, int n, int f, int ti);
static void each_case(struct xctx *x, const int *counts, int nc, unsigned base, case_fn fn)
{
    static const int lsizes[][2] = { { 1, 1 }, { 7, 3 }, { 97, 61 }, { 131, 70 } };
    for (int si = 0; si < (int)(sizeof(lsizes) / sizeof(lsizes[0])); si++)
        for (int ci = 0; ci < nc; ci++) {
            const int w = lsizes[si][0], h = lsizes[si][1];
            struct trk_scene sc;
            int err = trk_scene_random(w, h, 8, base + 10u * (unsigned)si + (unsigned)ci, &sc);
            CHECKF(err == 0, "scene: %d", err);
            if (err) continue;
            for (int f = 0; f < TRK_FMT_COUNT; f++) {
                const int mat = (ci + f) % 2, full = (si + f) % 2;
                uint8_t *buf;
                struct trk_image img;
                err = trk_image_from_rgb(sc.rgb, w, h, (enum trk_pixfmt)f, (enum trk_matrix)mat,
                                         full, (si + f) % 3, &buf, &img);
                CHECKF(err == 0, "trk_image_from_rgb: %d", err);
                if (err) continue;
                fn(x, &img, counts[ci], f, (si + ci + f) % 3);
                free(buf);
            }
            trk_scene_free(&sc);
        }
}

/* lightspaces: mode 0 lab only, 1 rg only, 2 every space mixed, 3 lab and
 * rg boxes of one value per channel (a pixel's own: the edges of the fast
 * backend's cell gate). */
static void lightspaces_case(struct xctx *x, const struct trk_image *img, int n, int f, int ti)
{
    for (int mode = 0; mode < 4; mode++) {
        trk_scene_pixel_objects(&x->st, img,
                                mode == 0   ? TRK_SPACE_LAB
                                : mode == 1 ? TRK_SPACE_RG
                                            : -1,
                                n, x->objs);
        for (int k = 0; mode == 3 && k < n; k++) {
            struct trk_object_def *o = &x->objs[k];
            o->space = k % 2 ? TRK_SPACE_RG : TRK_SPACE_LAB;
            int c[3];
            trk_image_pixel_space(img, (k * 7) % img->width, (k * 3) % img->height, o->space, c);
            for (int ch = 0; ch < 3; ch++)
                o->lo[ch] = o->hi[ch] = (uint16_t)c[ch];
        }
        run_set(x, img, n, f, ti, "lightspaces", mode, 0);
    }
}

static struct xctx *xctx_new(unsigned seed)
{
    struct xctx *x = calloc(1, sizeof(*x));
    if (!x) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    x->ref = make(TRK_BACKEND_CPU_REF, 131, 70, 1);
    make_fast_set(x->fast, 131, 70);
    x->st = seed;
    return x;
}

static void xctx_free(struct xctx *x, const char *part)
{
    printf("%s: %d cases\n", part, x->cases);
    trk_backend_destroy(&x->ref);
    free_fast_set(x->fast);
    free(x);
}

/* lab and rg objects (color.h's integer definitions) on the fast backend's
 * generic kernel against the reference: alone, and mixed with objects of
 * the other spaces (so frames of only rgb or only ycbcr objects keep their
 * own kernels and mixed frames run the generic one); every format, both
 * matrices and ranges, mask widths 1, 2, 4 words, 1-3 threads, both
 * variants, without and with ROIs, and the regional form. */
static void test_lightspaces(void)
{
    static const int lcounts[] = { 1, 8, 65, 129, 256 };
    struct xctx *x = xctx_new(2727);
    each_case(x, lcounts, 5, 7100u, lightspaces_case);
    xctx_free(x, "lightspaces");
}

/* ---------------------------------------------------------------- classes */

/* The class rule by hand on cpu-ref: a table of cells 0 (R, G, B < 4) and
 * (255 >> 2, 0, 0): of the pixels (0,0,0), (3,3,3), (4,0,0), (255,3,0),
 * (252,0,4) only the first two and the fourth are in it. */
static void classes_by_hand(void)
{
    static uint8_t tab[TRK_CLASS_BYTES];
    const int cells[2] = { 0, 63 << 12 };
    for (int i = 0; i < 2; i++)
        tab[cells[i] >> 3] |= (uint8_t)(1u << (cells[i] & 7));
    uint8_t px[5][3] = { { 0, 0, 0 }, { 3, 3, 3 }, { 4, 0, 0 }, { 255, 3, 0 }, { 252, 0, 4 } };
    struct trk_image img = { .plane = { &px[0][0] },
                             .pitch = { sizeof(px) },
                             .width = 5,
                             .height = 1,
                             .fmt = TRK_FMT_RGB24,
                             .matrix = TRK_MATRIX_BT601,
                             .full_range = true };
    struct trk_object_def o = { .name = "c", .space = TRK_SPACE_CLASS, .min_mass = 1, .cls = tab };
    struct trk_backend *ref = make(TRK_BACKEND_CPU_REF, 5, 1, 1);
    struct trk_obj_result r;
    CHECKF(trk_backend_set_objects(ref, &o, 1) == 0, "class set_objects");
    CHECKF(trk_backend_process(ref, &img, NULL, &r, NULL) == 0, "class process");
    CHECKF(r.mass == 3 && r.sum_x == 0 + 1 + 3 && r.x0 == 0 && r.x1 == 3,
           "class by hand: mass %llu sum_x %llu x %d..%d", (unsigned long long)r.mass,
           (unsigned long long)r.sum_x, r.x0, r.x1);
    /* The backend keeps its own copy: clearing ours changes nothing. */
    memset(tab, 0, sizeof(tab));
    CHECKF(trk_backend_process(ref, &img, NULL, &r, NULL) == 0 && r.mass == 3,
           "class copy: mass %llu", (unsigned long long)r.mass);
    /* No table, or more than TRK_MAX_CLASSES class objects: refused. */
    o.cls = NULL;
    CHECKF(trk_backend_set_objects(ref, &o, 1) == TRK_EINVAL, "class without a table");
    static struct trk_object_def many[TRK_MAX_CLASSES + 1];
    for (int k = 0; k <= TRK_MAX_CLASSES; k++)
        many[k] = (struct trk_object_def){ .space = TRK_SPACE_CLASS, .min_mass = 1, .cls = tab };
    CHECKF(trk_backend_set_objects(ref, many, TRK_MAX_CLASSES + 1) == TRK_EINVAL,
           "too many classes");
    CHECKF(trk_backend_set_objects(ref, many, TRK_MAX_CLASSES) == 0, "16 classes");
    trk_backend_destroy(&ref);
}

/* classes: mode 0 classes only (up to 16, the rest rgb boxes: the rgb
 * kernels' class copy), 1 every space mixed with classes (every third
 * object a class: the generic kernel), 2 the same with blobs on some. */
static void classes_case(struct xctx *x, const struct trk_image *img, int n, int f, int ti)
{
    for (int mode = 0; mode < 3; mode++) {
        trk_scene_pixel_objects(&x->st, img, mode == 0 ? TRK_SPACE_RGB : -1, n, x->objs);
        const int every = mode == 0 ? 1 : n > 48 ? n / 16 + 1 : 3;
        trk_scene_class_objects(&x->st, img, n, mode == 0 ? 0 : 1, every, x->objs, x->tabs);
        for (int k = 0; mode == 2 && k < n && k < 24; k += 3) {
            x->objs[k + (k < n - 1)].blobs = 3;
            x->objs[k + (k < n - 1)].connectivity = k % 2 ? 4 : 8;
        }
        run_set(x, img, n, f, ti, "classes", mode, mode == 2);
    }
}

/* Painted classes on the fast backend against the reference, by hand
 * first; then every format, both matrices and ranges, mask widths 1, 2, 4
 * words, 1-3 threads, both variants, without and with ROIs, blob lists
 * and the regional form. */
static void test_classes(void)
{
    static const int lcounts[] = { 1, 16, 40, 129, 256 };
    classes_by_hand();
    struct xctx *x = xctx_new(2828);
    each_case(x, lcounts, 5, 8100u, classes_case);
    xctx_free(x, "classes");
}

/* The second moments at 8K (7680 x 4320; x*x summed over the frame is
 * about 6.5e14): the fast backend's aggregates and blobs of the whole-frame
 * object and of the red rectangle against their closed forms, then cpu-ref
 * and the fast backend through the regional form on regions at the far
 * corners (cpu-ref costs what the regions cover, so the 8K frame stays
 * cheap), blobs included, both connectivities. */
static void test_moments8k(void)
{
    const int W = 7680, H = 4320;
    struct ms_scene sc;
    if (ms_make(W, H, &sc)) {
        CHECKF(0, "out of memory");
        return;
    }
    struct trk_backend *ref = make(TRK_BACKEND_CPU_REF, W, H, 1);
    struct trk_backend *fast = make(TRK_BACKEND_CPU, W, H, 2);
    if (set_both(ref, fast, sc.objs, MS_OBJECTS)) goto out;
    struct trk_obj_result got[MS_OBJECTS];
    CHECK(trk_backend_process(fast, &sc.img, NULL, got, NULL) == 0);
    const struct trk_obj_result all = ms_expect_rect(0, 0, W - 1, H - 1);
    const struct trk_obj_result red = ms_expect_rect(sc.rx0, sc.ry0, sc.rx1, sc.ry1);
    CHECKF(!memcmp(&got[0], &all, sizeof(all)), "8K whole frame: sum_xx %llu want %llu",
           (unsigned long long)got[0].sum_xx, (unsigned long long)all.sum_xx);
    CHECKF(!memcmp(&got[1], &red, sizeof(red)), "8K rectangle: sum_xy %llu want %llu",
           (unsigned long long)got[1].sum_xy, (unsigned long long)red.sum_xy);
    const struct trk_blob *bl;
    CHECK(trk_backend_blobs(fast, 0, &bl) == 1 && ms_blob_is(&bl[0], &all));
    CHECK(trk_backend_blobs(fast, 1, &bl) == 1 && ms_blob_is(&bl[0], &red));
    /* Regions: a corner of every object, the bar's middle and the diagonal. */
    const struct trk_region reg[] = {
        { 0, { W - 900, H - 600, W - 1, H - 1 } },
        { 1, { W - 800, H - 450, W - 1, H - 1 } },
        { 1, { sc.rx0 + 100, sc.ry0 - 5, W - 200, H - 100 } },
        { 2, { W - 1200, 100, W - 800, 500 } },
        { 3, { W - 1200, 100, W - 800, 500 } },
        { 2, { W / 2 - 400, H / 2 - 300, W / 2 + 400, H / 2 + 300 } },
        { 2, { W - 1850, H - 950, W - 1200, H - 300 } },
        { 3, { W - 1850, H - 950, W - 1200, H - 300 } },
    };
    const int nr = (int)(sizeof(reg) / sizeof(reg[0]));
    struct trk_obj_result want_r[8], got_r[8];
    CHECK(trk_backend_process_regions(ref, &sc.img, reg, nr, want_r, NULL) == 0);
    static struct trk_blob want_b[8][TRK_MAX_BLOBS];
    int want_n[8];
    for (int j = 0; j < nr; j++) {
        want_n[j] = trk_backend_blobs(ref, j, &bl);
        if (want_n[j] > 0) memcpy(want_b[j], bl, (size_t)want_n[j] * sizeof(*bl));
    }
    CHECK(trk_backend_process_regions(fast, &sc.img, reg, nr, got_r, NULL) == 0);
    for (int j = 0; j < nr; j++) {
        CHECKF(!memcmp(&want_r[j], &got_r[j], sizeof(got_r[j])),
               "8K region %d: cpu-ref sum_xx %llu, fast %llu", j,
               (unsigned long long)want_r[j].sum_xx, (unsigned long long)got_r[j].sum_xx);
        CHECKF(want_r[j].mass > 0, "8K region %d is empty: the test would prove nothing", j);
        const int n = trk_backend_blobs(fast, j, &bl);
        CHECKF(n == want_n[j] && n > 0 && !memcmp(bl, want_b[j], (size_t)n * sizeof(*bl)),
               "8K region %d blobs: %d, cpu-ref %d", j, n, want_n[j]);
    }
    /* 4-connectivity breaks the diagonal into single pixels: many blobs. */
    CHECK(want_n[7] == 64);
    printf("moments8k: whole frame sum_xx %llu, %d regions\n", (unsigned long long)got[0].sum_xx,
           nr);
out:
    trk_backend_destroy(&ref);
    trk_backend_destroy(&fast);
    ms_free(&sc);
}

int main(int argc, char **argv)
{
    const char *part = argc > 1 ? argv[1] : "all";
    int all = !strcmp(part, "all"), known = 0;
    if (all || !strcmp(part, "corpus")) test_corpus(), known = 1;
    if (all || !strcmp(part, "spaces")) test_spaces(), known = 1;
    if (all || !strcmp(part, "rois")) test_rois(), known = 1;
    if (all || !strcmp(part, "standard")) test_standard(), known = 1;
    if (all || !strcmp(part, "allcolors_rgb")) test_allcolors(1, 0), known = 1;
    if (all || !strcmp(part, "allcolors_yuv")) test_allcolors(0, 1), known = 1;
    if (all || !strcmp(part, "lifecycle")) test_lifecycle(), known = 1;
    if (all || !strcmp(part, "dense")) test_dense(), known = 1;
    if (all || !strcmp(part, "lightspaces")) test_lightspaces(), known = 1;
    if (all || !strcmp(part, "allcolors_light")) test_allcolors_light(), known = 1;
    if (all || !strcmp(part, "classes")) test_classes(), known = 1;
    if (all || !strcmp(part, "moments8k")) test_moments8k(), known = 1;
    if (!known) {
        fprintf(stderr,
                "usage: %s "
                "[corpus|spaces|rois|standard|allcolors_rgb|allcolors_yuv|lifecycle|dense|"
                "lightspaces|allcolors_light|classes|moments8k|all]\n",
                argv[0]);
        return 2;
    }
    char name[96];
    snprintf(name, sizeof(name), "test_cpu_fast %s", part);
    return check_exit(name);
}
