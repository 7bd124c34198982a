/* The pre-filter (gpu/prefilter.h): its definition, the fast passes and the
 * CPU backends against it, bit for bit, and what it is for.
 *
 * One executable, one ctest test per part (argv[1]):
 *   kernel     weights: sum 256, symmetric, radius, sigma/2 for chroma, bounds
 *   definition the reference against values worked out here by hand: a
 *              constant stays, an impulse becomes w[i] w[j], borders
 *              replicate, subsampled chroma takes the sigma/2 kernel
 *   fast       the fast row passes == the reference: every format, odd sizes,
 *              pitches larger than rows, sigma from tiny to the maximum
 *   backend    cpu-ref thresholds exactly the reference's filtered frame; the
 *              fast backend (multi-threaded, portable and default kernels)
 *              gives the same results, per value of every channel
 *   noise      per-channel noise and specks: far fewer stray pixels after the
 *              filter, the object itself still found
 *   api        trk_backend_set_prefilter's bounds, in flight, back to off
 */
#include "moments_oracle.h"
#include "../check.h"
#include "backend.h"
#include "color.h"
#include "prefilter.h"
#include "scene.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

/* A w x h image of fmt with pad extra bytes per row (filled with noise too:
 * they must not matter), samples from fill(seed). */
enum fill { FILL_RANDOM, FILL_CONST };
static void make_image(enum trk_pixfmt fmt, int w, int h, int pad, enum fill fill, uint64_t seed,
                       uint8_t **buf, struct trk_image *img)
{
    struct trk_plane_layout L;
    CHECK(trk_image_plane_layout(fmt, w, h, &L) == 0);
    size_t total = 0, off[3];
    for (int p = 0; p < L.planes; p++) {
        off[p] = total;
        total += (L.row_bytes[p] + (size_t)pad) * (size_t)L.rows[p];
    }
    *buf = malloc(total);
    uint64_t st = seed;
    for (size_t i = 0; i < total; i++)
        (*buf)[i] = fill == FILL_CONST ? (uint8_t)(seed & 0xff) : (uint8_t)trk_rand_next(&st);
    memset(img, 0, sizeof(*img));
    for (int p = 0; p < L.planes; p++) {
        img->plane[p] = *buf + off[p];
        img->pitch[p] = L.row_bytes[p] + (size_t)pad;
    }
    img->width = w, img->height = h, img->fmt = fmt;
    img->matrix = (seed & 1) ? TRK_MATRIX_BT709 : TRK_MATRIX_BT601;
    img->full_range = (seed & 2) != 0;
}

static uint8_t sample(const struct trk_image *img, const struct trk_prefilter_chan *c, int x, int y)
{
    return img->plane[c->plane][(size_t)y * img->pitch[c->plane] + (size_t)c->offset +
                                (size_t)x * (size_t)c->step];
}

/* Number of samples of grids first.. where a and b differ (same format and
 * size). */
static long grid_diffs_from(const struct trk_image *a, const struct trk_image *b, int first,
                            const char *what)
{
    struct trk_prefilter_chan ch[TRK_PREFILTER_MAX_CHANS];
    int n = trk_prefilter_chans(a->fmt, a->width, a->height, ch);
    long bad = 0;
    for (int i = first; i < n; i++)
        for (int y = 0; y < ch[i].height; y++)
            for (int x = 0; x < ch[i].width; x++) {
                int va = sample(a, &ch[i], x, y), vb = sample(b, &ch[i], x, y);
                if (va != vb && bad++ < 3)
                    fprintf(stderr, "  %s: grid %d (%d, %d): %d != %d\n", what, i, x, y, va, vb);
            }
    return bad;
}

static long grid_diffs(const struct trk_image *a, const struct trk_image *b, const char *what)
{
    return grid_diffs_from(a, b, 0, what);
}

/* The reference's output for src, in a buffer of its own (*buf). */
static void ref_filter(const struct trk_prefilter *pf, const struct trk_image *src, uint8_t **buf,
                       struct trk_image *out)
{
    *buf = malloc(trk_prefilter_frame_bytes(src->width, src->height));
    uint16_t *tmp = malloc((size_t)src->width * (size_t)src->height * sizeof(*tmp));
    uint8_t *dst[3];
    /* Poison first: every grid sample must be written. */
    memset(*buf, 0xA5, trk_prefilter_frame_bytes(src->width, src->height));
    trk_prefilter_frame_at(*buf, src, out, dst);
    trk_prefilter_ref(pf, src, dst, out->pitch, tmp);
    free(tmp);
}

static struct trk_backend *make(enum trk_backend_kind kind, int w, int h, int threads,
                                const char *variant)
{
    struct trk_backend_cfg cfg = {
        .kind = kind, .max_width = w, .max_height = h, .threads = threads, .variant = variant
    };
    struct trk_backend *b = NULL;
    int err = trk_backend_create(&cfg, &b);
    if (err) {
        fprintf(stderr, "trk_backend_create(%d): %s\n", (int)kind, trk_strerror(err));
        exit(2);
    }
    return b;
}

static const double sigmas[] = { 0.05, 0.3, 0.5, 0.8, 1.0, 1.5, 2.2, 3.0, 3.7, 4.0 };
#define N_SIGMAS (int)(sizeof(sigmas) / sizeof(sigmas[0]))

/* ------------------------------------------------------------- kernel */

static void test_kernel(void)
{
    for (int si = 0; si < N_SIGMAS; si++) {
        struct trk_prefilter pf;
        CHECK(trk_prefilter_init(&pf, sigmas[si]) == 0);
        CHECK(pf.sigma == sigmas[si]);
        for (int k = 0; k < 2; k++) {
            const struct trk_prefilter_kernel *K = &pf.k[k];
            const double s = k == TRK_PREFILTER_FULL ? sigmas[si] : sigmas[si] / 2;
            CHECKF(K->radius >= 0 && K->radius <= TRK_PREFILTER_MAX_RADIUS &&
                       K->radius <= (int)ceil(3 * s),
                   "sigma %g kernel %d radius %d", s, k, K->radius);
            int sum = 0;
            for (int i = 0; i < TRK_PREFILTER_TAPS; i++) {
                sum += K->w[i];
                if (i > 2 * K->radius) CHECK(K->w[i] == 0);
            }
            CHECKF(sum == TRK_PREFILTER_ONE, "sigma %g: weights sum to %d", s, sum);
            for (int i = 0; i <= K->radius; i++)
                CHECK(K->w[i] == K->w[2 * K->radius - i]);
            /* Outer taps are not zero (dropped), and the weights fall away
             * from the centre like a Gaussian within rounding. */
            CHECK(K->radius == 0 || K->w[0] > 0);
            for (int i = 0; i < K->radius; i++)
                CHECKF(K->w[i] <= K->w[i + 1], "sigma %g: w %d %d %d", s, K->w[0], K->w[1],
                       K->w[2]);
            /* Each weight is within 1 of its exact share (floor, then +1). */
            int r0 = (int)ceil(3 * s);
            r0 = r0 > TRK_PREFILTER_MAX_RADIUS ? TRK_PREFILTER_MAX_RADIUS : r0 < 1 ? 1 : r0;
            double g0 = 0;
            for (int i = -r0; i <= r0; i++)
                g0 += exp(-(double)(i * i) / (2 * s * s));
            for (int i = -K->radius; i <= K->radius; i++) {
                const double e = 256.0 * exp(-(double)(i * i) / (2 * s * s)) / g0;
                CHECKF(fabs(K->w[K->radius + i] - e) < 1, "sigma %g: w[%d] = %d, exact %g", s, i,
                       K->w[K->radius + i], e);
            }
        }
    }
    /* The largest sigma uses the largest radius; tiny ones are the identity. */
    struct trk_prefilter pf;
    CHECK(trk_prefilter_init(&pf, TRK_PREFILTER_MAX_SIGMA) == 0);
    CHECK(pf.k[TRK_PREFILTER_FULL].radius >= TRK_PREFILTER_MAX_RADIUS - 3);
    CHECK(trk_prefilter_init(&pf, 0.05) == 0);
    CHECK(pf.k[0].radius == 0 && pf.k[0].w[0] == 256);
    CHECK(trk_prefilter_init(&pf, 1e-300) == 0 && pf.k[0].radius == 0 && pf.k[0].w[0] == 256);
    /* Off and out of range. */
    CHECK(trk_prefilter_init(&pf, 0) == 0 && pf.sigma == 0);
    const double bad[] = { -0.001, -1, 4.0001, 100, NAN, INFINITY, -INFINITY };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECKF(trk_prefilter_init(&pf, bad[i]) == TRK_EINVAL, "sigma %g accepted", bad[i]);
        CHECK(pf.sigma == 0);
    }
}

/* --------------------------------------------------------- definition */

static void test_definition(void)
{
    /* A constant frame stays what it was, border included, every format. */
    for (int fmt = 0; fmt < TRK_FMT_COUNT; fmt++)
        for (int si = 0; si < N_SIGMAS; si += 3) {
            struct trk_prefilter pf;
            trk_prefilter_init(&pf, sigmas[si]);
            uint8_t *buf, *obuf;
            struct trk_image img, out;
            make_image((enum trk_pixfmt)fmt, 13, 7, 5, FILL_CONST, 0x5a + (uint64_t)fmt * 37, &buf,
                       &img);
            ref_filter(&pf, &img, &obuf, &out);
            CHECKF(grid_diffs(&img, &out, "constant") == 0, "constant %s sigma %g changed",
                   trk_pixfmt_name((enum trk_pixfmt)fmt), sigmas[si]);
            free(buf);
            free(obuf);
        }

    /* An impulse of 255 in the luma of I420 (chroma flat) spreads as
     * round(255 w[i] w[j] / 65536) away from the borders; chroma stays. */
    for (int si = 0; si < N_SIGMAS; si++) {
        struct trk_prefilter pf;
        trk_prefilter_init(&pf, sigmas[si]);
        const struct trk_prefilter_kernel *K = &pf.k[TRK_PREFILTER_FULL];
        const int W = 41, H = 37, x0 = 20, y0 = 18, r = K->radius;
        uint8_t *buf, *obuf;
        struct trk_image img, out;
        make_image(TRK_FMT_I420, W, H, 3, FILL_CONST, 128, &buf, &img);
        for (int y = 0; y < H; y++)
            memset((uint8_t *)img.plane[0] + (size_t)y * img.pitch[0], 0, (size_t)W);
        ((uint8_t *)img.plane[0])[(size_t)y0 * img.pitch[0] + x0] = 255;
        ref_filter(&pf, &img, &obuf, &out);
        int bad = 0;
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                int dx = x - x0, dy = y - y0, want = 0;
                if (abs(dx) <= r && abs(dy) <= r)
                    want = (255 * K->w[r + dx] * K->w[r + dy] + 32768) >> 16;
                bad += out.plane[0][(size_t)y * out.pitch[0] + (size_t)x] != want;
            }
        CHECKF(bad == 0, "impulse sigma %g: %d luma samples differ from w[i] w[j]", sigmas[si],
               bad);
        CHECK(grid_diffs_from(&img, &out, 1, "chroma") == 0); /* flat chroma stays */
        free(buf);
        free(obuf);
    }

    /* Borders replicate: one row (so the vertical pass sees copies of it)
     * with 200 at x = 0 and 0 elsewhere; x = d gets the weights of the
     * offsets that clamp to 0, i.e. -r..-d. */
    for (int si = 0; si < N_SIGMAS; si++) {
        struct trk_prefilter pf;
        trk_prefilter_init(&pf, sigmas[si]);
        const struct trk_prefilter_kernel *K = &pf.k[TRK_PREFILTER_FULL];
        const int r = K->radius, W = 30;
        uint8_t *buf, *obuf;
        struct trk_image img, out;
        make_image(TRK_FMT_RGB24, W, 1, 0, FILL_CONST, 0, &buf, &img);
        buf[0] = 200; /* R of pixel 0 */
        ref_filter(&pf, &img, &obuf, &out);
        for (int x = 0; x < W; x++) {
            int wsum = 0;
            for (int i = -r; i <= r; i++)
                if (x + i <= 0) wsum += K->w[r + i];
            const int want = (200 * wsum * 256 + 32768) >> 16;
            CHECKF(out.plane[0][3 * x] == want && out.plane[0][3 * x + 1] == 0,
                   "border sigma %g x %d: %d, want %d", sigmas[si], x, out.plane[0][3 * x], want);
        }
        free(buf);
        free(obuf);
    }

    /* Subsampled chroma takes the sigma/2 kernel along its subsampled
     * direction: an impulse in NV12's U (both directions halved) and in
     * YUYV's U (halved along x only, full along y). */
    for (int si = 0; si < N_SIGMAS; si++) {
        struct trk_prefilter pf;
        trk_prefilter_init(&pf, sigmas[si]);
        for (int yuyv = 0; yuyv < 2; yuyv++) {
            const int W = 60, H = 50, cw = 30, chh = yuyv ? 50 : 25, cx = 15, cy = yuyv ? 25 : 12;
            const struct trk_prefilter_kernel *Kx = &pf.k[TRK_PREFILTER_HALF];
            const struct trk_prefilter_kernel *Ky = &pf.k[yuyv ? TRK_PREFILTER_FULL : 1];
            uint8_t *buf, *obuf;
            struct trk_image img, out;
            make_image(yuyv ? TRK_FMT_YUYV : TRK_FMT_NV12, W, H, 2, FILL_CONST, 0, &buf, &img);
            struct trk_prefilter_chan ch[4];
            trk_prefilter_chans(img.fmt, W, H, ch);
            CHECK(ch[1].width == cw && ch[1].height == chh);
            ((uint8_t *)img.plane[ch[1].plane])[(size_t)cy * img.pitch[ch[1].plane] + ch[1].offset +
                                                (size_t)cx * ch[1].step] = 255;
            ref_filter(&pf, &img, &obuf, &out);
            int bad = 0;
            for (int y = 0; y < chh; y++)
                for (int x = 0; x < cw; x++) {
                    int dx = x - cx, dy = y - cy, want = 0;
                    if (abs(dx) <= Kx->radius && abs(dy) <= Ky->radius)
                        want =
                            (255 * Kx->w[Kx->radius + dx] * Ky->w[Ky->radius + dy] + 32768) >> 16;
                    bad += sample(&out, &ch[1], x, y) != want;
                }
            CHECKF(bad == 0, "%s chroma impulse sigma %g: %d samples differ",
                   yuyv ? "yuyv" : "nv12", sigmas[si], bad);
            free(buf);
            free(obuf);
        }
    }
}

/* --------------------------------------------------------------- fast */

static void test_fast(void)
{
    static const int sizes[][2] = { { 1, 1 },   { 2, 3 },    { 3, 2 },   { 5, 7 },
                                    { 7, 1 },   { 1, 9 },    { 13, 26 }, { 37, 23 },
                                    { 97, 61 }, { 300, 11 }, { 259, 33 } };
    struct trk_prefilter_buf fb = { 0 };
    int cases = 0;
    for (size_t zi = 0; zi < sizeof(sizes) / sizeof(sizes[0]); zi++)
        for (int fmt = 0; fmt < TRK_FMT_COUNT; fmt++)
            for (int si = 0; si < N_SIGMAS; si++) {
                const int w = sizes[zi][0], h = sizes[zi][1];
                const int pad = (int)((zi * 7 + (size_t)fmt * 3 + (size_t)si) % 4) * 9;
                struct trk_prefilter pf;
                trk_prefilter_init(&pf, sigmas[si]);
                uint8_t *buf, *obuf;
                struct trk_image img, want, got;
                make_image((enum trk_pixfmt)fmt, w, h, pad, FILL_RANDOM,
                           1000 + zi * 100 + (uint64_t)fmt * 10 + (uint64_t)si, &buf, &img);
                ref_filter(&pf, &img, &obuf, &want);
                CHECK(trk_prefilter_apply(&pf, &img, &fb, &got) == 0);
                char what[96];
                snprintf(what, sizeof(what), "%dx%d %s pad %d sigma %g", w, h,
                         trk_pixfmt_name((enum trk_pixfmt)fmt), pad, sigmas[si]);
                CHECKF(grid_diffs(&want, &got, what) == 0, "fast != reference: %s", what);
                cases++;
                free(buf);
                free(obuf);
            }
    struct trk_prefilter off;
    trk_prefilter_init(&off, 0);
    uint8_t *buf;
    struct trk_image img, out;
    make_image(TRK_FMT_RGB24, 4, 4, 0, FILL_RANDOM, 1, &buf, &img);
    CHECK(trk_prefilter_apply(&off, &img, &fb, &out) == TRK_EINVAL);
    free(buf);
    trk_prefilter_buf_free(&fb);
    trk_prefilter_buf_free(&fb); /* twice is safe */
    printf("fast: %d cases equal to the reference\n", cases);
}

/* ------------------------------------------------------------ backend */

/* 128 objects per native channel c: object k matches value 2k or 2k + 1 of
 * that channel alone (rgb R/G/B on RGB frames, ycbcr Y/Cb/Cr on YUV ones),
 * so the results are a positional histogram of the frame the backend
 * thresholded: any changed byte shows up in some object's mass or sums. */
#define HIST_OBJS 128
static void hist_objects(int yuv, int c, struct trk_object_def *objs)
{
    for (int k = 0; k < HIST_OBJS; k++) {
        struct trk_object_def *o = &objs[k];
        memset(o, 0, sizeof(*o));
        snprintf(o->name, sizeof(o->name), "c%dv%d", c, k);
        o->space = yuv ? TRK_SPACE_YCBCR : TRK_SPACE_RGB;
        for (int i = 0; i < 3; i++)
            o->lo[i] = 0, o->hi[i] = 255;
        o->lo[c] = (uint16_t)(2 * k);
        o->hi[c] = (uint16_t)(2 * k + 1);
        o->min_mass = 1;
    }
}

/* The results cpu-ref must give for objs on the already filtered frame f,
 * worked out here from trk_pixel_native (the pixel's own samples). */
static void expected(const struct trk_image *f, int c, struct trk_obj_result *res)
{
    for (int k = 0; k < HIST_OBJS; k++)
        res[k] = (struct trk_obj_result){ 0, 0, 0, -1, -1, -1, -1, 0, 0, 0 };
    for (int y = 0; y < f->height; y++)
        for (int x = 0; x < f->width; x++) {
            int s[3];
            trk_pixel_native(f->fmt, f->plane, f->pitch, x, y, s);
            struct trk_obj_result *r = &res[s[c] / 2];
            if (r->mass == 0) r->x0 = r->x1 = x, r->y0 = r->y1 = y;
            r->mass++;
            r->sum_x += (uint64_t)x, r->sum_y += (uint64_t)y;
            ORACLE_ADD_MOMENTS(r, x, y);
            if (x < r->x0) r->x0 = x;
            if (x > r->x1) r->x1 = x;
            if (y < r->y0) r->y0 = y;
            if (y > r->y1) r->y1 = y;
        }
}

static int results_differ(const struct trk_obj_result *a, const struct trk_obj_result *b, int n)
{
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += a[i].mass != b[i].mass || a[i].sum_x != b[i].sum_x || a[i].sum_y != b[i].sum_y ||
               a[i].x0 != b[i].x0 || a[i].y0 != b[i].y0 || a[i].x1 != b[i].x1 ||
               a[i].y1 != b[i].y1 || !ORACLE_SAME_MOMENTS(&a[i], &b[i]);
    return bad;
}

static void test_backend(void)
{
    /* 131 x 67 = 8777 pixels: enough for the fast backend to wake its pool. */
    const int MW = 131, MH = 67;
    struct trk_backend *ref = make(TRK_BACKEND_CPU_REF, MW, MH, 1, NULL);
    struct trk_backend *fast[3] = { make(TRK_BACKEND_CPU, MW, MH, 3, NULL),
                                    make(TRK_BACKEND_CPU, MW, MH, 2, "lut-portable"),
                                    make(TRK_BACKEND_CPU, MW, MH, 1, NULL) };
    static struct trk_object_def objs[HIST_OBJS];
    static struct trk_obj_result want[HIST_OBJS], got[HIST_OBJS], raw[HIST_OBJS];
    const double use[] = { 0.8, 2.2, 4.0 };
    int cases = 0;
    for (int fmt = 0; fmt < TRK_FMT_COUNT; fmt++)
        for (int si = 0; si < 3; si++) {
            /* Smaller frames than the create size too, with padded rows. */
            const int w = si == 1 ? 77 : MW, h = si == 1 ? 41 : MH, pad = si * 11;
            uint8_t *buf, *obuf;
            struct trk_image img, filt;
            make_image((enum trk_pixfmt)fmt, w, h, pad, FILL_RANDOM, 77 + (uint64_t)fmt * 5 + si,
                       &buf, &img);
            struct trk_prefilter pf;
            trk_prefilter_init(&pf, use[si]);
            ref_filter(&pf, &img, &obuf, &filt);
            const int yuv = fmt >= TRK_FMT_YUYV;
            for (int c = 0; c < 3; c++) {
                char what[96];
                snprintf(what, sizeof(what), "%s %dx%d sigma %g channel %d",
                         trk_pixfmt_name((enum trk_pixfmt)fmt), w, h, use[si], c);
                hist_objects(yuv, c, objs);
                CHECK(trk_backend_set_objects(ref, objs, HIST_OBJS) == 0);
                CHECK(trk_backend_set_prefilter(ref, 0) == 0);
                CHECK(trk_backend_process(ref, &img, NULL, raw, NULL) == 0);
                CHECK(trk_backend_set_prefilter(ref, use[si]) == 0);
                CHECK(trk_backend_process(ref, &img, NULL, want, NULL) == 0);
                /* The filter is applied, and it is the definition's. */
                CHECKF(results_differ(raw, want, HIST_OBJS) > 0, "%s: filter had no effect", what);
                struct trk_obj_result def[HIST_OBJS];
                expected(&filt, c, def);
                CHECKF(!results_differ(def, want, HIST_OBJS),
                       "%s: cpu-ref did not threshold the reference's frame", what);
                for (int b = 0; b < 3; b++) {
                    CHECK(trk_backend_set_objects(fast[b], objs, HIST_OBJS) == 0);
                    CHECK(trk_backend_set_prefilter(fast[b], use[si]) == 0);
                    memset(got, 0x33, sizeof(got));
                    CHECK(trk_backend_process(fast[b], &img, NULL, got, NULL) == 0);
                    CHECKF(!results_differ(want, got, HIST_OBJS), "%s: %s (backend %d) differs",
                           what, trk_backend_name(fast[b]), b);
                    cases++;
                }
            }
            free(buf);
            free(obuf);
        }
    for (int b = 0; b < 3; b++)
        trk_backend_destroy(&fast[b]);
    trk_backend_destroy(&ref);
    printf("backend: %d cases equal\n", cases);
}

/* -------------------------------------------------------------- noise */

/* Roughly normal noise with standard deviation 20 (sum of 12 uniforms). */
static int noise20(uint64_t *st)
{
    int s = 0;
    for (int i = 0; i < 12; i++)
        s += (int)(trk_rand_next(st) % 1001);
    return (s - 6000) * 20 / 289; /* uniform 0..1000: sd 289 */
}

static void test_noise(void)
{
    /* Grey background and a red square, per-channel noise (sd 20) on every
     * pixel, and 1% of the background turned into specks of the square's
     * exact colour: what a noisy camera and a box tuned on the square give. */
    const int W = 240, H = 160, X0 = 80, Y0 = 50, S = 60;
    uint8_t *rgb = malloc((size_t)W * H * 3);
    uint64_t st = 4242;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const int in = x >= X0 && x < X0 + S && y >= Y0 && y < Y0 + S;
            const int base[3] = { in ? 190 : 110, in ? 40 : 110, in ? 40 : 110 };
            uint8_t *p = rgb + ((size_t)y * W + x) * 3;
            for (int c = 0; c < 3; c++)
                p[c] = trk_clamp255(base[c] + noise20(&st));
            if (!in && trk_rand_next(&st) % 100 == 0) p[0] = 190, p[1] = 40, p[2] = 40;
        }
    struct trk_object_def o[3];
    memset(o, 0, sizeof(o));
    for (int i = 0; i < 3; i++) {
        snprintf(o[i].name, sizeof(o[i].name), "red%d", i);
        o[i].space = TRK_SPACE_HSV;
        o[i].lo[0] = 340, o[i].hi[0] = 20; /* hue wraps through 0 */
        o[i].lo[1] = 120, o[i].hi[1] = 255;
        o[i].lo[2] = 120, o[i].hi[2] = 255;
        o[i].min_mass = 1;
    }
    /* The same box three times: object 0 counts the whole frame, object 1
     * the square and 4 pixels around it (where the blur spreads its edge:
     * not stray), object 2 the square's inside 3 pixels in from its edges. */
    const int M = 4;
    const struct trk_roi rois[3] = { { 0, 0, W - 1, H - 1 },
                                     { X0 - M, Y0 - M, X0 + S - 1 + M, Y0 + S - 1 + M },
                                     { X0 + 3, Y0 + 3, X0 + S - 4, Y0 + S - 4 } };
    const long inner = (long)(S - 6) * (S - 6);
    const enum trk_pixfmt fmts[] = { TRK_FMT_RGB24, TRK_FMT_NV12, TRK_FMT_YUYV };
    for (int kind = 0; kind < 2; kind++)
        for (size_t fi = 0; fi < sizeof(fmts) / sizeof(fmts[0]); fi++) {
            struct trk_backend *b =
                make(kind ? TRK_BACKEND_CPU : TRK_BACKEND_CPU_REF, W, H, 2, NULL);
            uint8_t *buf;
            struct trk_image img;
            CHECK(trk_image_from_rgb(rgb, W, H, fmts[fi], TRK_MATRIX_BT601, true, 0, &buf, &img) ==
                  0);
            CHECK(trk_backend_set_objects(b, o, 3) == 0);
            struct trk_obj_result r0[3], r1[3];
            CHECK(trk_backend_process(b, &img, rois, r0, NULL) == 0);
            CHECK(trk_backend_set_prefilter(b, 1.5) == 0);
            CHECK(trk_backend_process(b, &img, rois, r1, NULL) == 0);
            const long stray0 = (long)(r0[0].mass - r0[1].mass);
            const long stray1 = (long)(r1[0].mass - r1[1].mass);
            printf("noise %s %s: stray pixels %ld raw, %ld filtered; inside %llu / %ld raw, %llu "
                   "filtered; bbox raw %d,%d-%d,%d filtered %d,%d-%d,%d\n",
                   trk_backend_name(b), trk_pixfmt_name(fmts[fi]), stray0, stray1,
                   (unsigned long long)r0[2].mass, inner, (unsigned long long)r1[2].mass, r0[0].x0,
                   r0[0].y0, r0[0].x1, r0[0].y1, r1[0].x0, r1[0].y0, r1[0].x1, r1[0].y1);
            /* The specks are there to be removed (the test means something),
             * and the filter removes nearly all of them. */
            CHECKF(stray0 >= 200, "%s: only %ld stray pixels without the filter",
                   trk_pixfmt_name(fmts[fi]), stray0);
            CHECKF(stray1 * 20 <= stray0, "%s: %ld stray pixels left of %ld",
                   trk_pixfmt_name(fmts[fi]), stray1, stray0);
            /* The square is still found, whole. */
            CHECKF(r1[2].mass * 100 >= (uint64_t)inner * 98, "%s: square inside %llu of %ld",
                   trk_pixfmt_name(fmts[fi]), (unsigned long long)r1[2].mass, inner);
            free(buf);
            trk_backend_destroy(&b);
        }
    free(rgb);
}

/* ---------------------------------------------------------------- api */

static void test_api(void)
{
    for (int kind = 0; kind < 2; kind++) {
        struct trk_backend *b = make(kind ? TRK_BACKEND_CPU : TRK_BACKEND_CPU_REF, 64, 48, 2, NULL);
        const double bad[] = { -0.5, 4.5, NAN, INFINITY };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
            CHECKF(trk_backend_set_prefilter(b, bad[i]) == TRK_EINVAL, "sigma %g accepted", bad[i]);
        CHECK(trk_backend_set_prefilter(b, 0) == 0);
        CHECK(trk_backend_set_prefilter(b, 4.0) == 0);
        CHECK(trk_backend_set_prefilter(b, 0.01) == 0);

        uint8_t *buf;
        struct trk_image img;
        make_image(TRK_FMT_BGRA, 64, 48, 4, FILL_RANDOM, 9, &buf, &img);
        struct trk_object_def o[HIST_OBJS];
        hist_objects(0, 1, o);
        struct trk_obj_result off0[HIST_OBJS], on[HIST_OBJS], off1[HIST_OBJS];
        CHECK(trk_backend_set_objects(b, o, HIST_OBJS) == 0);
        CHECK(trk_backend_set_prefilter(b, 0) == 0);
        CHECK(trk_backend_process(b, &img, NULL, off0, NULL) == 0);
        CHECK(trk_backend_set_prefilter(b, 1.2) == 0);
        /* Not while a frame is in flight. */
        CHECK(trk_backend_submit(b, &img, NULL) == 0);
        CHECK(trk_backend_set_prefilter(b, 0) == TRK_EINVAL);
        CHECK(trk_backend_wait(b, on, NULL) == 0);
        CHECK(results_differ(off0, on, HIST_OBJS) > 0);
        /* Object sets come and go; the setting stays until changed. */
        CHECK(trk_backend_set_objects(b, o, 1) == 0);
        CHECK(trk_backend_set_objects(b, o, HIST_OBJS) == 0);
        struct trk_obj_result again[HIST_OBJS];
        CHECK(trk_backend_process(b, &img, NULL, again, NULL) == 0);
        CHECK(!results_differ(on, again, HIST_OBJS));
        /* Off again: the raw frame's results. */
        CHECK(trk_backend_set_prefilter(b, 0) == 0);
        CHECK(trk_backend_process(b, &img, NULL, off1, NULL) == 0);
        CHECK(!results_differ(off0, off1, HIST_OBJS));
        free(buf);
        trk_backend_destroy(&b);
    }
}

int main(int argc, char **argv)
{
    const char *part = argc > 1 ? argv[1] : "all";
    int all = !strcmp(part, "all"), known = 0;
    if (all || !strcmp(part, "kernel")) test_kernel(), known = 1;
    if (all || !strcmp(part, "definition")) test_definition(), known = 1;
    if (all || !strcmp(part, "fast")) test_fast(), known = 1;
    if (all || !strcmp(part, "backend")) test_backend(), known = 1;
    if (all || !strcmp(part, "noise")) test_noise(), known = 1;
    if (all || !strcmp(part, "api")) test_api(), known = 1;
    if (!known) {
        fprintf(stderr, "usage: %s [kernel|definition|fast|backend|noise|api|all]\n", argv[0]);
        return 2;
    }
    char name[96];
    snprintf(name, sizeof(name), "test_prefilter %s", part);
    return check_exit(name);
}
