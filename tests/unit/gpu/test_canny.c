/* Canny (gpu/canny.h): the definition against answers worked out by hand,
 * the fast CPU twin against the definition bit for bit, and the sharpness
 * figure's job (it falls as a picture is blurred more).
 *
 * One executable, one ctest test per part (argv[1]):
 *   params      settings' bounds: thresholds, sigma, NaN, low > high
 *   definition  known answers: a vertical step (edge on its first column,
 *               the tie rule), a horizontal and a diagonal one, a diagonal
 *               tie (strict on diagonals: neither kept), a flat
 *               frame, a weak line that hysteresis keeps only when it
 *               touches a strong pixel, luma of every format
 *   twin        trk_canny_run (cpu, 1, 2, 3 and 7 threads) == trk_canny_ref
 *               on every case of canny_cases.h, with an edge map and
 *               without (sums only); bad arguments (a device image among
 *               them: only the CUDA runner reads those)
 *   sharpness   a scene blurred by box filters of growing size and by
 *               Gaussians of growing sigma: sharpness strictly falls
 */
#include "canny_cases.h"
#include "prefilter.h"

#include <math.h>

/* ------------------------------------------------------------ helpers */

/* A w x h grey frame as I420 (Y = v, chroma 128) over *buf. */
static void grey_frame(int w, int h, const uint8_t *v, uint8_t **buf, struct trk_image *img)
{
    const int cw = (w + 1) / 2, ch = (h + 1) / 2;
    *buf = malloc((size_t)w * (size_t)h + 2 * (size_t)cw * (size_t)ch);
    memcpy(*buf, v, (size_t)w * (size_t)h);
    memset(*buf + (size_t)w * (size_t)h, 128, 2 * (size_t)cw * (size_t)ch);
    *img = (struct trk_image){ .plane = { *buf, *buf + (size_t)w * (size_t)h,
                                          *buf + (size_t)w * (size_t)h + (size_t)cw * (size_t)ch },
                               .pitch = { (size_t)w, (size_t)cw, (size_t)cw },
                               .width = w,
                               .height = h,
                               .fmt = TRK_FMT_I420 };
}

/* The definition's edges of a grey frame v (w x h) into e (w x h). */
static void ref_grey(const struct trk_canny_cfg *cfg, int w, int h, const uint8_t *v, uint8_t *e,
                     struct trk_canny_stats *st)
{
    uint8_t *buf;
    struct trk_image img;
    grey_frame(w, h, v, &buf, &img);
    struct trk_canny_params p;
    CHECK(trk_canny_params_init(&p, cfg) == 0);
    CHECK(trk_canny_ref(&p, &img, e, (size_t)w, st) == 0);
    free(buf);
}

/* ------------------------------------------------------------- params */

static void part_params(void)
{
    struct trk_canny_params p;
    const struct trk_canny_cfg bad[] = {
        { 0, -1, 5 },   { 0, 6, 5 },    { 0, 0, TRK_CANNY_MAX_THRESH + 1 },
        { -0.1, 1, 2 }, { 4.01, 1, 2 }, { NAN, 1, 2 },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECKF(trk_canny_params_init(&p, &bad[i]) == TRK_EINVAL, "bad %zu", i);
    CHECK(trk_canny_params_init(&p, NULL) == TRK_EINVAL);
    const struct trk_canny_cfg ok = { 1.4, 30, TRK_CANNY_MAX_THRESH };
    CHECK(trk_canny_params_init(&p, &ok) == 0);
    CHECK(p.low2 == 900 && p.high2 == 1443u * 1443u && p.pf.sigma == 1.4);
    CHECK(p.pf.k[TRK_PREFILTER_FULL].radius > 0);
}

/* --------------------------------------------------------- definition */

static void step_case(int w, int h, int vertical)
{
    uint8_t *v = malloc((size_t)w * (size_t)h), *e = malloc((size_t)w * (size_t)h);
    const int at = (vertical ? w : h) / 2; /* first column (row) of the bright side */
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            v[y * w + x] = (vertical ? x : y) >= at ? 100 : 0;
    struct trk_canny_stats st;
    ref_grey(&(struct trk_canny_cfg){ 0, 50, 300 }, w, h, v, e, &st);
    /* gx = 4 * 100 on both sides of the step: the tie keeps the first. */
    long bad = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            bad += e[y * w + x] != (((vertical ? x : y) == at - 1) ? 255 : 0);
    CHECKF(bad == 0, "step %s: %ld pixels wrong", vertical ? "vertical" : "horizontal", bad);
    const int len = vertical ? h : w;
    CHECK(st.edges == (uint64_t)len && st.strong == (uint64_t)len);
    CHECK(st.edge_m2 == (uint64_t)len * 160000u && st.gradient == 400.0);
    CHECK(st.pixels == (uint64_t)w * (uint64_t)h);
    CHECK(fabs(st.sharpness - sqrt(160000.0 * len / (w * h))) < 1e-9);
    free(v), free(e);
}

/* A diagonal step x + y >= 20 (10 below, 200 above). Away from the
 * borders the magnitude across it is 190, 570, 580, 190 (times sqrt 2) on
 * the anti-diagonals x + y = 18..21, and rule 4 compares a diagonal pixel
 * with the anti-diagonals two away: both 19 and 20 survive, one
 * 4-connected staircase, two pixels in every row. */
static void diagonal_case(void)
{
    enum { W = 24, H = 20 };
    uint8_t v[W * H], e[W * H];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            v[y * W + x] = x + y >= 20 ? 200 : 10;
    struct trk_canny_stats st;
    ref_grey(&(struct trk_canny_cfg){ 0, 100, 400 }, W, H, v, e, &st);
    for (int y = 2; y < H - 2; y++)
        for (int x = 2; x < W - 2; x++) {
            const int want = x + y == 19 || x + y == 20;
            CHECKF((e[y * W + x] != 0) == want, "diagonal (%d, %d): %d", x, y, e[y * W + x]);
        }
}

/* A diagonal ramp symmetric about x + y = 19 (0, 20, 127, 234, 254 on
 * x + y <= 17, 18, 19, 20, >= 21): Sobel gives gx = gy = 167, 488, 682,
 * 488, 167 on x + y = 17..21, so the anti-diagonals 18 and 20 tie, and
 * each is the other's diagonal neighbour. Rule 4 is strict on diagonals:
 * neither is kept, only x + y = 19 (the first-of-a-tie rule would add the
 * 18 line beside it, a two-pixel-thick staircase). */
static void diagonal_tie_case(void)
{
    enum { W = 26, H = 22 };
    uint8_t v[W * H], e[W * H];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const int k = x + y;
            v[y * W + x] = k <= 17 ? 0 : k == 18 ? 20 : k == 19 ? 127 : k == 20 ? 234 : 254;
        }
    struct trk_canny_stats st;
    ref_grey(&(struct trk_canny_cfg){ 0, 100, 300 }, W, H, v, e, &st);
    for (int y = 3; y < H - 3; y++)
        for (int x = 3; x < W - 3; x++)
            CHECKF((e[y * W + x] != 0) == (x + y == 19), "diagonal tie (%d, %d): %d", x, y,
                   e[y * W + x]);
}

/* A faint horizontal step (magnitude 48: weak) that reaches a bright
 * block (strong edges) in one frame and stops 7 pixels short of it in the
 * other: hysteresis keeps the faint line only when it touches. */
static void hysteresis_case(int touching)
{
    enum { W = 40, H = 21 };
    uint8_t v[W * H], e[W * H];
    const int xe = touching ? 24 : 16;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            v[y * W + x] = y >= 10 && x < xe ? 12 : 0;
            if (x >= 24 && y >= 4 && y < 16) v[y * W + x] = 250;
        }
    struct trk_canny_stats st;
    ref_grey(&(struct trk_canny_cfg){ 0, 20, 200 }, W, H, v, e, &st);
    int line = 0;
    for (int x = 2; x < 14; x++)
        line += e[9 * W + x] != 0;
    CHECKF(touching ? line == 12 : line == 0, "hysteresis touching=%d: %d line pixels", touching,
           line);
    CHECK(st.strong > 0);
}

static void flat_case(void)
{
    uint8_t v[13 * 7], e[13 * 7];
    memset(v, 77, sizeof(v));
    struct trk_canny_stats st;
    ref_grey(&(struct trk_canny_cfg){ 1.4, 0, 0 }, 13, 7, v, e, &st);
    for (size_t i = 0; i < sizeof(e); i++)
        CHECK(e[i] == 0);
    CHECK(st.edges == 0 && st.strong == 0 && st.edge_m2 == 0 && st.sharpness == 0 &&
          st.gradient == 0 && st.density == 0);
}

/* Rule 1 on one pixel of every format. */
static void luma_case(void)
{
    const uint8_t rgb[4] = { 200, 100, 50, 9 }, bgr[4] = { 50, 100, 200, 9 };
    struct trk_image img = { .pitch = { 4 }, .width = 1, .height = 1, .full_range = true };
    /* BT.601 full: Y = 0.299 R + 0.587 G + 0.114 B = 124.2 */
    for (int f = TRK_FMT_RGB24; f <= TRK_FMT_BGRA; f++) {
        img.fmt = (enum trk_pixfmt)f;
        img.plane[0] = f == TRK_FMT_BGR24 || f == TRK_FMT_BGRA ? bgr : rgb;
        CHECKF(trk_canny_luma(&img, 0, 0) == 124, "%s", trk_pixfmt_name(img.fmt));
    }
    img.full_range = false; /* limited: 16 + 219/255 of it */
    img.fmt = TRK_FMT_RGB24, img.plane[0] = rgb;
    CHECK(trk_canny_luma(&img, 0, 0) == 123);
    const uint8_t yuyv[4] = { 33, 1, 44, 2 };
    img.fmt = TRK_FMT_YUYV, img.plane[0] = yuyv, img.width = 2;
    CHECK(trk_canny_luma(&img, 0, 0) == 33 && trk_canny_luma(&img, 1, 0) == 44);
}

static void part_definition(void)
{
    step_case(16, 8, 1);
    step_case(9, 14, 0);
    diagonal_case();
    diagonal_tie_case();
    hysteresis_case(1);
    hysteresis_case(0);
    flat_case();
    luma_case();
}

/* --------------------------------------------------------------- twin */

static void part_twin(void)
{
    const int threads[] = { 1, 2, 3, 7 };
    for (int i = 0; i < 4; i++) {
        struct trk_canny *c = NULL;
        const struct trk_canny_opts o = { TRK_CANNY_CPU, 130, 77, threads[i], 0 };
        CHECK(trk_canny_create(&o, &c) == 0);
        char name[32];
        snprintf(name, sizeof(name), "cpu:%d", threads[i]);
        const long n = canny_against_ref(c, name, i == 0 ? 1 : 3);
        CHECK(n > 100);
        printf("%s: %ld cases equal to the definition\n", name, n);
        /* Bad arguments: too large, short pitch, a device image. No edges
         * buffer is no error: the sums alone, whatever the pitch. */
        uint8_t *buf, e[4];
        struct trk_image img;
        canny_image(TRK_FMT_RGB24, 131, 2, 0, CANNY_NOISE, 1, &buf, &img);
        struct trk_canny_params p;
        CHECK(trk_canny_params_init(&p, &canny_cfgs[1]) == 0);
        uint8_t *big = malloc(131 * 2);
        CHECK(trk_canny_run(c, &p, &img, big, 131, NULL, NULL) == TRK_EINVAL);
        img.width = 2;
        struct trk_canny_stats s1, s2;
        CHECK(trk_canny_run(c, &p, &img, NULL, 0, &s1, NULL) == 0);
        CHECK(trk_canny_run(c, &p, &img, e, 1, NULL, NULL) == TRK_EINVAL);
        CHECK(trk_canny_run(c, &p, &img, e, 2, &s2, NULL) == 0 && canny_stats_equal(&s1, &s2));
        img.mem = TRK_MEM_CUDA;
        CHECK(trk_canny_run(c, &p, &img, e, 2, NULL, NULL) == TRK_EINVAL);
        CHECK(trk_canny_run(c, &p, &img, NULL, 0, NULL, NULL) == TRK_EINVAL);
        CHECK(trk_canny_ref(&p, &img, NULL, 0, NULL) == TRK_EINVAL);
        img.mem = TRK_MEM_HOST;
        free(big), free(buf);
        trk_canny_destroy(&c);
        trk_canny_destroy(&c);
        CHECK(c == NULL);
    }
    struct trk_canny *c = NULL;
    CHECK(trk_canny_create(&(struct trk_canny_opts){ TRK_CANNY_CPU, 0, 5, 1, 0 }, &c) ==
          TRK_EINVAL);
    CHECK(c == NULL);
}

/* ---------------------------------------------------------- sharpness */

/* A test picture: rectangles and discs of many contrasts over a gentle
 * gradient with fine texture, W x H RGB. */
enum { SW = 320, SH = 240 };
static void scene(uint8_t *rgb)
{
    uint64_t st = 99;
    for (int y = 0; y < SH; y++)
        for (int x = 0; x < SW; x++)
            for (int c = 0; c < 3; c++)
                rgb[(y * SW + x) * 3 + c] = (uint8_t)(40 + x / 8 + ((x / 3 + y / 3) % 2) * 12);
    for (int k = 0; k < 40; k++) {
        const int cx = (int)(trk_rand_next(&st) % SW), cy = (int)(trk_rand_next(&st) % SH);
        const int r = 5 + (int)(trk_rand_next(&st) % 30), disc = k % 2;
        uint8_t col[3];
        for (int c = 0; c < 3; c++)
            col[c] = (uint8_t)trk_rand_next(&st);
        for (int y = cy - r; y <= cy + r; y++)
            for (int x = cx - r; x <= cx + r; x++) {
                if (x < 0 || y < 0 || x >= SW || y >= SH) continue;
                if (disc && (x - cx) * (x - cx) + (y - cy) * (y - cy) > r * r) continue;
                memcpy(&rgb[(y * SW + x) * 3], col, 3);
            }
    }
}

/* Box blur of radius r (clamped borders), in place. */
static void box_blur(uint8_t *rgb, int r)
{
    uint8_t *t = malloc((size_t)SW * SH * 3);
    for (int pass = 0; pass < 2; pass++) {
        memcpy(t, rgb, (size_t)SW * SH * 3);
        for (int y = 0; y < SH; y++)
            for (int x = 0; x < SW; x++)
                for (int c = 0; c < 3; c++) {
                    int s = 0;
                    for (int d = -r; d <= r; d++) {
                        int xx = pass ? x : x + d, yy = pass ? y + d : y;
                        xx = xx < 0 ? 0 : xx >= SW ? SW - 1 : xx;
                        yy = yy < 0 ? 0 : yy >= SH ? SH - 1 : yy;
                        s += t[(yy * SW + xx) * 3 + c];
                    }
                    rgb[(y * SW + x) * 3 + c] = (uint8_t)((s + r) / (2 * r + 1));
                }
    }
    free(t);
}

static double sharpness_of(struct trk_canny *c, const uint8_t *rgb)
{
    struct trk_image img = { .plane = { rgb },
                             .pitch = { SW * 3 },
                             .width = SW,
                             .height = SH,
                             .fmt = TRK_FMT_RGB24,
                             .full_range = true };
    struct trk_canny_params p;
    CHECK(trk_canny_params_init(&p, &(struct trk_canny_cfg){ 1.0, 20, 50 }) == 0);
    static uint8_t e[SW * SH];
    struct trk_canny_stats st, sr;
    CHECK(trk_canny_run(c, &p, &img, e, SW, &st, NULL) == 0);
    CHECK(trk_canny_ref(&p, &img, e, SW, &sr) == 0 && canny_stats_equal(&st, &sr));
    printf("  edges %6llu density %.4f gradient %7.2f sharpness %7.3f\n",
           (unsigned long long)st.edges, st.density, st.gradient, st.sharpness);
    return st.sharpness;
}

static void part_sharpness(void)
{
    struct trk_canny *c = NULL;
    CHECK(trk_canny_create(&(struct trk_canny_opts){ TRK_CANNY_CPU, SW, SH, 2, 0 }, &c) == 0);
    uint8_t *base = malloc((size_t)SW * SH * 3), *b = malloc((size_t)SW * SH * 3);
    scene(base);
    printf("box blur, radius 0..6:\n");
    double last = INFINITY;
    for (int r = 0; r <= 6; r++) {
        memcpy(b, base, (size_t)SW * SH * 3);
        if (r) box_blur(b, r);
        const double s = sharpness_of(c, b);
        CHECKF(s < last && s > 0, "box radius %d: sharpness %.3f after %.3f", r, s, last);
        last = s;
    }
    printf("Gaussian blur (prefilter.h), sigma 0.5..4:\n");
    const double sig[] = { 0.5, 1.0, 1.5, 2.0, 3.0, 4.0 };
    last = sharpness_of(c, base);
    for (int i = 0; i < 6; i++) {
        struct trk_prefilter pf;
        struct trk_prefilter_buf pb = { 0 };
        struct trk_image in = { .plane = { base },
                                .pitch = { SW * 3 },
                                .width = SW,
                                .height = SH,
                                .fmt = TRK_FMT_RGB24 },
                         out;
        CHECK(trk_prefilter_init(&pf, sig[i]) == 0);
        CHECK(trk_prefilter_apply(&pf, &in, &pb, &out) == 0);
        for (int y = 0; y < SH; y++)
            memcpy(b + (size_t)y * SW * 3, out.plane[0] + (size_t)y * out.pitch[0], SW * 3);
        trk_prefilter_buf_free(&pb);
        const double s = sharpness_of(c, b);
        CHECKF(s < last && s > 0, "sigma %.1f: sharpness %.3f after %.3f", sig[i], s, last);
        last = s;
    }
    free(base), free(b);
    trk_canny_destroy(&c);
}

int main(int argc, char **argv)
{
    const char *part = argc > 1 ? argv[1] : "all";
    const int all = !strcmp(part, "all");
    if (all || !strcmp(part, "params")) part_params();
    if (all || !strcmp(part, "definition")) part_definition();
    if (all || !strcmp(part, "twin")) part_twin();
    if (all || !strcmp(part, "sharpness")) part_sharpness();
    return check_exit("test_canny");
}
