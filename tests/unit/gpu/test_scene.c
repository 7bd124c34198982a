/* The synthetic scenes and their known answers.
 *
 * Standard scene: the expected accumulators of every object are computed
 * from the geometry alone (disk centres and radius, painted in object order,
 * so a later disk covers an earlier one), never from the pixels, and the CPU
 * reference must produce them exactly: this checks the scene (the +-8 box
 * absorbs the +-3 noise, gray never matches, colours are distinct) and the
 * reference at once. Also: determinism, the random scene's promised mix
 * (hue wrap, overlaps, empty and border-touching objects), the dense scenes
 * (every pixel in every object; random per-pixel subsets), trk_image_from_rgb
 * layouts and chroma averaging, and the splitmix64 stream.
 */
#include "backend.h"
#include "moments_oracle.h"
#include "../check.h"
#include "color.h"
#include "scene.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static struct trk_backend *ref;

static int process_rgb(const struct trk_scene *sc, enum trk_pixfmt fmt, int pad,
                       const struct trk_roi *rois, struct trk_obj_result *out)
{
    uint8_t *buf;
    struct trk_image im;
    int err = trk_image_from_rgb(sc->rgb, sc->width, sc->height, fmt, TRK_MATRIX_BT601, true, pad,
                                 &buf, &im);
    if (err) return err;
    err = trk_backend_set_objects(ref, sc->objects, sc->n_objects);
    if (!err) err = trk_backend_process(ref, &im, rois, out, NULL);
    free(buf);
    return err;
}

/* Expected results of the standard scene from geometry: owner[] = the last
 * disk painted over each pixel (-1 = background), then per-owner sums. */
static void standard_expected(const struct trk_scene *sc, struct trk_obj_result *want)
{
    int w = sc->width, h = sc->height, r = sc->radius;
    int *owner = malloc(sizeof(int) * (size_t)w * (size_t)h);
    for (size_t i = 0; i < (size_t)w * (size_t)h; i++)
        owner[i] = -1;
    for (int k = 0; k < sc->n_objects; k++)
        for (int y = sc->cy[k] - r; y <= sc->cy[k] + r; y++)
            for (int x = sc->cx[k] - r; x <= sc->cx[k] + r; x++) {
                int dx = x - sc->cx[k], dy = y - sc->cy[k];
                if (x < 0 || y < 0 || x >= w || y >= h || dx * dx + dy * dy > r * r) continue;
                owner[(size_t)y * (size_t)w + (size_t)x] = k;
            }
    for (int k = 0; k < sc->n_objects; k++) {
        memset(&want[k], 0, sizeof(want[k]));
        want[k].x0 = want[k].y0 = want[k].x1 = want[k].y1 = -1;
    }
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int k = owner[(size_t)y * (size_t)w + (size_t)x];
            if (k < 0) continue;
            struct trk_obj_result *o = &want[k];
            if (!o->mass) o->x0 = o->x1 = x, o->y0 = o->y1 = y;
            if (x < o->x0) o->x0 = x;
            if (x > o->x1) o->x1 = x;
            if (y < o->y0) o->y0 = y;
            if (y > o->y1) o->y1 = y;
            o->mass++, o->sum_x += (uint64_t)x, o->sum_y += (uint64_t)y;
            ORACLE_ADD_MOMENTS(o, x, y);
        }
    free(owner);
}

static uint64_t disk_pixels(int r)
{
    uint64_t n = 0;
    for (int dy = -r; dy <= r; dy++)
        for (int dx = -r; dx <= r; dx++)
            n += dx * dx + dy * dy <= r * r;
    return n;
}

static void test_standard(int w, int h, int m, uint64_t seed, int all_rgb_formats)
{
    static struct trk_scene sc;
    static struct trk_obj_result got[TRK_MAX_OBJECTS], want[TRK_MAX_OBJECTS];
    int err = trk_scene_standard(w, h, m, seed, &sc);
    CHECKF(err == 0, "standard %dx%d m %d", w, h, m);
    if (err) return;
    int shortside = w < h ? w : h;
    int rad = (int)lround(0.02 * shortside);
    CHECK(sc.radius == (rad < 1 ? 1 : rad));
    CHECK(sc.width == w && sc.height == h && sc.n_objects == m);

    /* Colours: every pair of boxes is disjoint in some channel by more than
     * the noise, and no box contains any gray. */
    for (int i = 0; i < m; i++) {
        const struct trk_object_def *a = &sc.objects[i];
        CHECK(a->space == TRK_SPACE_RGB && a->min_mass >= 1 && a->name[0]);
        for (int v = 0; v < 256; v++)
            CHECKF(!trk_box_match(a->lo, a->hi, 0, v, v, v), "object %d contains gray %d", i, v);
        for (int j = i + 1; j < m; j++) {
            const struct trk_object_def *b = &sc.objects[j];
            int apart = 0;
            for (int c = 0; c < 3; c++)
                apart |= a->hi[c] < b->lo[c] || b->hi[c] < a->lo[c];
            CHECKF(apart, "objects %d and %d overlap", i, j);
        }
        /* Disks lie inside the frame when they fit. */
        if (2 * sc.radius < w) CHECK(sc.cx[i] >= sc.radius && sc.cx[i] + sc.radius < w);
        if (2 * sc.radius < h) CHECK(sc.cy[i] >= sc.radius && sc.cy[i] + sc.radius < h);
    }
    /* Background: R = G = B in 60..195 wherever no disk is (checked through
     * the ownership map below: the sum of all masses = disk-covered pixels). */
    standard_expected(&sc, want);
    uint64_t covered = 0, sum_mass = 0;
    for (int k = 0; k < m; k++)
        covered += want[k].mass;
    size_t gray = 0, gray_bad = 0;
    for (size_t i = 0; i < (size_t)w * (size_t)h; i++) {
        const uint8_t *p = sc.rgb + 3 * i;
        if (p[0] == p[1] && p[1] == p[2]) {
            gray++;
            gray_bad += p[0] < 60 || p[0] > 195;
        }
    }
    CHECK(gray == (size_t)w * (size_t)h - covered); /* disk pixels are never gray */
    CHECK(gray_bad == 0);

    int nfmt = all_rgb_formats ? 4 : 1; /* RGB24, RGBA, BGR24, BGRA */
    for (int f = 0; f < nfmt; f++) {
        memset(got, 0x33, sizeof(got));
        err = process_rgb(&sc, (enum trk_pixfmt)f, f, NULL, got);
        CHECK(err == 0);
        sum_mass = 0;
        int isolated = 0;
        for (int k = 0; k < m; k++) {
            sum_mass += got[k].mass;
            CHECKF(memcmp(&got[k], &want[k], sizeof(got[k])) == 0,
                   "%dx%d m %d seed %llu %s object %d: mass %llu want %llu", w, h, m,
                   (unsigned long long)seed, trk_pixfmt_name((enum trk_pixfmt)f), k,
                   (unsigned long long)got[k].mass, (unsigned long long)want[k].mass);
            /* A disk that no other disk touches: the textbook answer. */
            int alone = 1;
            for (int j = 0; j < m; j++) {
                int dx = sc.cx[j] - sc.cx[k], dy = sc.cy[j] - sc.cy[k];
                if (j != k && dx * dx + dy * dy <= 4 * sc.radius * sc.radius) alone = 0;
            }
            if (alone && 2 * sc.radius < w && 2 * sc.radius < h) {
                isolated++;
                CHECK(got[k].mass == disk_pixels(sc.radius));
                CHECK(got[k].x0 == sc.cx[k] - sc.radius && got[k].x1 == sc.cx[k] + sc.radius);
                CHECK(got[k].y0 == sc.cy[k] - sc.radius && got[k].y1 == sc.cy[k] + sc.radius);
                CHECK(got[k].sum_x == (uint64_t)sc.cx[k] * got[k].mass);
                CHECK(got[k].sum_y == (uint64_t)sc.cy[k] * got[k].mass);
            }
        }
        CHECK(sum_mass == covered);
        /* The last disk is painted over nothing: always whole. */
        if (m > 0 && 2 * sc.radius < w && 2 * sc.radius < h)
            CHECK(got[m - 1].mass == disk_pixels(sc.radius));
        if (m > 0 && m <= 32 && w >= 640) CHECK(isolated > 0);
    }

    /* Deterministic for its arguments; another seed moves things. */
    static struct trk_scene again;
    CHECK(trk_scene_standard(w, h, m, seed, &again) == 0);
    CHECK(memcmp(sc.rgb, again.rgb, (size_t)w * (size_t)h * 3) == 0);
    CHECK(memcmp(sc.objects, again.objects, sizeof(sc.objects)) == 0);
    trk_scene_free(&again);
    CHECK(trk_scene_standard(w, h, m, seed + 1, &again) == 0);
    CHECK(memcmp(sc.rgb, again.rgb, (size_t)w * (size_t)h * 3) != 0);
    /* The palette does not depend on the seed. */
    CHECK(memcmp(sc.objects, again.objects, sizeof(sc.objects)) == 0);
    trk_scene_free(&again);
    trk_scene_free(&sc);
    trk_scene_free(&sc); /* safe twice */
}

/* The random scene's promises, checked on the results themselves. */
static void test_random(void)
{
    static struct trk_scene sc, again;
    static struct trk_obj_result got[TRK_MAX_OBJECTS];
    CHECK(trk_scene_random(64, 48, TRK_MAX_OBJECTS, 5, &sc) == 0);
    CHECK(trk_scene_random(64, 48, TRK_MAX_OBJECTS, 5, &again) == 0);
    CHECK(memcmp(sc.rgb, again.rgb, 64 * 48 * 3) == 0);
    CHECK(memcmp(sc.objects, again.objects, sizeof(sc.objects)) == 0);
    trk_scene_free(&again);

    int spaces[3] = { 0, 0, 0 }, wraps = 0, empty = 0, found = 0, border = 0;
    CHECK(process_rgb(&sc, TRK_FMT_RGB24, 0, NULL, got) == 0);
    for (int k = 0; k < sc.n_objects; k++) {
        const struct trk_object_def *o = &sc.objects[k];
        spaces[o->space]++;
        wraps += o->space == TRK_SPACE_HSV && o->lo[0] > o->hi[0];
        if (got[k].mass == 0) {
            empty++;
        } else {
            found++;
            border += got[k].x0 == 0 || got[k].y0 == 0 || got[k].x1 == 63 || got[k].y1 == 47;
        }
    }
    printf("random scene: rgb %d hsv %d ycbcr %d, %d hue-wrap, %d empty, %d found, %d on border\n",
           spaces[0], spaces[1], spaces[2], wraps, empty, found, border);
    CHECK(spaces[0] > 20 && spaces[1] > 20 && spaces[2] > 20);
    CHECK(wraps > 5 && empty > 5 && found > 100 && border > 20);
    /* Wrapping hsv objects actually match pixels. */
    int wrap_found = 0;
    for (int k = 0; k < sc.n_objects; k++)
        wrap_found += sc.objects[k].space == TRK_SPACE_HSV &&
                      sc.objects[k].lo[0] > sc.objects[k].hi[0] && got[k].mass > 0;
    CHECK(wrap_found > 3);
    trk_scene_free(&sc);

    /* Overlapping ranges: some pixel matches several objects. Per-pixel
     * membership through one-pixel ROIs on a small frame. */
    CHECK(trk_scene_random(12, 9, 48, 11, &sc) == 0);
    static struct trk_roi rois[TRK_MAX_OBJECTS];
    int multi = 0;
    for (int y = 0; y < sc.height; y++)
        for (int x = 0; x < sc.width; x++) {
            for (int k = 0; k < sc.n_objects; k++)
                rois[k] = (struct trk_roi){ x, y, x, y };
            CHECK(process_rgb(&sc, TRK_FMT_RGB24, 0, rois, got) == 0);
            int n = 0;
            for (int k = 0; k < sc.n_objects; k++) {
                n += got[k].mass > 0;
                CHECK(got[k].mass <= 1);
                if (got[k].mass)
                    CHECK(got[k].x0 == x && got[k].y0 == y && got[k].sum_x == (uint64_t)x);
            }
            multi += n >= 2;
        }
    CHECK(multi > 5);
    trk_scene_free(&sc);

    /* Every size down to 1x1 works. */
    for (int w = 1; w <= 4; w++)
        for (int h = 1; h <= 4; h++) {
            CHECK(trk_scene_random(w, h, 16, (uint64_t)(w * 10 + h), &sc) == 0);
            trk_scene_free(&sc);
            CHECK(trk_scene_standard(w, h, 16, 1, &sc) == 0);
            CHECK(sc.radius == 1);
            trk_scene_free(&sc);
        }
}

/* The dense scenes of issue 14. Dense: every pixel in every object, in
 * every input format (the whole rgb cube holds any decoded pixel), with the
 * sums of a full frame. Half-dense: objects in all spaces, wide and narrow,
 * and per pixel (one-pixel ROIs) subsets of the objects that differ from
 * pixel to pixel, neither containing the other, of sizes from few to many. */
static void test_dense(void)
{
    static struct trk_scene sc, again;
    static struct trk_obj_result got[TRK_MAX_OBJECTS];
    const int w = 67, h = 45, m = 40;
    CHECK(trk_scene_dense(w, h, m, 3, &sc) == 0);
    CHECK(trk_scene_dense(w, h, m, 3, &again) == 0);
    CHECK(memcmp(sc.rgb, again.rgb, (size_t)w * h * 3) == 0);
    trk_scene_free(&again);
    CHECK(trk_scene_dense(w, h, m, 4, &again) == 0);
    CHECK(memcmp(sc.rgb, again.rgb, (size_t)w * h * 3) != 0); /* the seed matters */
    trk_scene_free(&again);
    for (int fmt = 0; fmt < TRK_FMT_COUNT; fmt++) {
        CHECK(process_rgb(&sc, (enum trk_pixfmt)fmt, 3, NULL, got) == 0);
        for (int k = 0; k < m; k++)
            CHECKF(got[k].mass == (uint64_t)w * h &&
                       got[k].sum_x == (uint64_t)h * w * (w - 1) / 2 &&
                       got[k].sum_y == (uint64_t)w * h * (h - 1) / 2 && got[k].x0 == 0 &&
                       got[k].y0 == 0 && got[k].x1 == w - 1 && got[k].y1 == h - 1,
                   "dense %s object %d: mass %llu", trk_pixfmt_name((enum trk_pixfmt)fmt), k,
                   (unsigned long long)got[k].mass);
    }
    trk_scene_free(&sc);
    CHECK(trk_scene_dense(0, 1, 1, 0, &sc) == TRK_EINVAL);
    CHECK(trk_scene_dense(1, 1, TRK_MAX_OBJECTS + 1, 0, &sc) == TRK_EINVAL);
    CHECK(trk_scene_halfdense(1, 0, 1, 0, &sc) == TRK_EINVAL);
    CHECK(trk_scene_halfdense(1, 1, -1, 0, &sc) == TRK_EINVAL);

    /* Half-dense on a frame large enough for every kind of object. */
    CHECK(trk_scene_halfdense(160, 120, 90, 5, &sc) == 0);
    CHECK(trk_scene_halfdense(160, 120, 90, 5, &again) == 0);
    CHECK(memcmp(sc.rgb, again.rgb, 160 * 120 * 3) == 0);
    CHECK(memcmp(sc.objects, again.objects, sizeof(sc.objects)) == 0);
    trk_scene_free(&again);
    CHECK(process_rgb(&sc, TRK_FMT_RGB24, 0, NULL, got) == 0);
    int spaces[3] = { 0, 0, 0 }, wide = 0, rare = 0, wraps = 0;
    for (int k = 0; k < sc.n_objects; k++) {
        const struct trk_object_def *o = &sc.objects[k];
        spaces[o->space]++;
        wraps += o->space == TRK_SPACE_HSV && o->lo[0] > o->hi[0];
        wide += got[k].mass > 160 * 120 / 3;
        rare += got[k].mass < 160 * 120 / 20;
    }
    printf("half-dense scene: rgb %d hsv %d ycbcr %d, %d hue-wrap, %d over a third of the "
           "pixels, %d under 5%%\n",
           spaces[0], spaces[1], spaces[2], wraps, wide, rare);
    CHECK(spaces[0] > 10 && spaces[1] > 10 && spaces[2] > 10 && wraps > 2);
    CHECK(wide > 10 && rare > 10);
    trk_scene_free(&sc);

    CHECK(trk_scene_halfdense(12, 9, 60, 7, &sc) == 0);
    static struct trk_roi rois[TRK_MAX_OBJECTS];
    static uint64_t set[12 * 9]; /* objects 0..59 matched by each pixel */
    int fewest = 60, most = 0;
    for (int y = 0; y < sc.height; y++)
        for (int x = 0; x < sc.width; x++) {
            for (int k = 0; k < sc.n_objects; k++)
                rois[k] = (struct trk_roi){ x, y, x, y };
            CHECK(process_rgb(&sc, TRK_FMT_RGB24, 0, rois, got) == 0);
            uint64_t bits = 0;
            for (int k = 0; k < sc.n_objects; k++)
                if (got[k].mass) bits |= 1ull << k;
            set[y * sc.width + x] = bits;
            const int n = __builtin_popcountll(bits);
            fewest = n < fewest ? n : fewest;
            most = n > most ? n : most;
        }
    int crossed = 0; /* pairs of pixels whose subsets cross */
    for (int i = 0; i < 12 * 9; i++)
        for (int j = i + 1; j < 12 * 9; j++)
            crossed += (set[i] & ~set[j]) && (set[j] & ~set[i]);
    printf("half-dense pixels: %d to %d of 60 objects each, %d crossing pairs\n", fewest, most,
           crossed);
    CHECK(most >= 15 && fewest <= 12 && most - fewest >= 8);
    CHECK(crossed > 12 * 9 * 10);
    trk_scene_free(&sc);
}

static void test_bad_args(void)
{
    struct trk_scene *sc = malloc(sizeof(*sc));
    CHECK(trk_scene_standard(0, 10, 1, 0, sc) == TRK_EINVAL && sc->rgb == NULL);
    CHECK(trk_scene_standard(10, -1, 1, 0, sc) == TRK_EINVAL);
    CHECK(trk_scene_standard(10, 10, TRK_MAX_OBJECTS + 1, 0, sc) == TRK_EINVAL);
    CHECK(trk_scene_standard(10, 10, -1, 0, sc) == TRK_EINVAL);
    CHECK(trk_scene_random(10, 10, TRK_MAX_OBJECTS + 1, 0, sc) == TRK_EINVAL);
    CHECK(trk_scene_random(0, 0, 1, 0, sc) == TRK_EINVAL);
    trk_scene_free(sc);
    trk_scene_free(NULL);
    free(sc);
    uint8_t px[3] = { 1, 2, 3 }, *buf = (uint8_t *)1;
    struct trk_image im;
    CHECK(trk_image_from_rgb(px, 1, 1, TRK_FMT_RGB24, TRK_MATRIX_BT601, true, -1, &buf, &im) ==
              TRK_EINVAL &&
          buf == NULL);
    CHECK(trk_image_from_rgb(px, 0, 1, TRK_FMT_RGB24, TRK_MATRIX_BT601, true, 0, &buf, &im) ==
          TRK_EINVAL);
    CHECK(trk_image_from_rgb(px, 1, 1, TRK_FMT_COUNT, TRK_MATRIX_BT601, true, 0, &buf, &im) ==
          TRK_EINVAL);
    CHECK(trk_image_from_rgb(NULL, 1, 1, TRK_FMT_RGB24, TRK_MATRIX_BT601, true, 0, &buf, &im) ==
          TRK_EINVAL);
}

/* trk_image_from_rgb: layouts, pitches, and the documented sample values. */
static void test_image_from_rgb(void)
{
    static const int sizes[][2] = { { 1, 1 }, { 2, 2 }, { 3, 5 }, { 8, 4 }, { 17, 9 } };
    uint64_t st = 77;
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        int w = sizes[si][0], h = sizes[si][1], cw = (w + 1) / 2, ch = (h + 1) / 2;
        uint8_t *rgb = malloc((size_t)w * (size_t)h * 3);
        for (int i = 0; i < w * h * 3; i++)
            rgb[i] = (uint8_t)trk_rand_next(&st);
        for (int fmt = 0; fmt < TRK_FMT_COUNT; fmt++)
            for (int pad = 0; pad <= 7; pad += 7)
                for (int coef = 0; coef < 4; coef++) {
                    uint8_t *buf;
                    struct trk_image im;
                    int err =
                        trk_image_from_rgb(rgb, w, h, (enum trk_pixfmt)fmt,
                                           (enum trk_matrix)(coef / 2), coef & 1, pad, &buf, &im);
                    CHECK(err == 0);
                    if (err) continue;
                    CHECK(trk_image_check(&im) == 0);
                    CHECK(im.plane[0] == buf && im.width == w && im.height == h &&
                          (int)im.fmt == fmt && (int)im.matrix == coef / 2 &&
                          im.full_range == (coef & 1));
                    const struct trk_rgb2ycc_coef *k = &trk_rgb2ycc_coefs[coef];
                    int bpp = trk_pixfmt_bpp((enum trk_pixfmt)fmt);
                    if (bpp >= 3) {
                        CHECK(im.pitch[0] == (size_t)(w * bpp + pad));
                        int bgr = fmt == TRK_FMT_BGR24 || fmt == TRK_FMT_BGRA;
                        for (int y = 0; y < h; y++)
                            for (int x = 0; x < w; x++)
                                for (int c = 0; c < 3; c++)
                                    CHECK(im.plane[0][(size_t)y * im.pitch[0] +
                                                      (size_t)(x * bpp + (bgr ? 2 - c : c))] ==
                                          rgb[(y * w + x) * 3 + c]);
                    } else {
                        /* Expected Y per pixel and chroma per block. */
                        int bh = fmt == TRK_FMT_YUYV ? 1 : 2;
                        if (fmt == TRK_FMT_YUYV) CHECK(im.pitch[0] == (size_t)(4 * cw + pad));
                        if (fmt == TRK_FMT_NV12)
                            CHECK(im.pitch[0] == (size_t)(w + pad) &&
                                  im.pitch[1] == (size_t)(2 * cw + pad) &&
                                  im.plane[1] == buf + im.pitch[0] * (size_t)h);
                        if (fmt == TRK_FMT_I420)
                            CHECK(im.pitch[0] == (size_t)(w + pad) &&
                                  im.pitch[1] == (size_t)(cw + pad) &&
                                  im.pitch[2] == (size_t)(cw + pad) &&
                                  im.plane[1] == buf + im.pitch[0] * (size_t)h &&
                                  im.plane[2] == im.plane[1] + im.pitch[1] * (size_t)ch);
                        for (int y = 0; y < h; y++)
                            for (int x = 0; x < w; x++) {
                                const uint8_t *s = rgb + (y * w + x) * 3;
                                uint8_t Y, cb, cr;
                                trk_rgb_to_ycbcr(k, s[0], s[1], s[2], &Y, &cb, &cr);
                                int sy;
                                if (fmt == TRK_FMT_YUYV)
                                    sy = im.plane[0][(size_t)y * im.pitch[0] +
                                                     (size_t)(x / 2 * 4 + (x & 1) * 2)];
                                else
                                    sy = im.plane[0][(size_t)y * im.pitch[0] + (size_t)x];
                                CHECK(sy == Y);
                                if (x % 2 || y % bh) continue;
                                /* Block average over the pixels that exist. */
                                int scb = 0, scr = 0, n = 0;
                                for (int yy = y; yy < y + bh && yy < h; yy++)
                                    for (int xx = x; xx < x + 2 && xx < w; xx++) {
                                        const uint8_t *t = rgb + (yy * w + xx) * 3;
                                        trk_rgb_to_ycbcr(k, t[0], t[1], t[2], &Y, &cb, &cr);
                                        scb += cb, scr += cr, n++;
                                    }
                                int ecb = (scb + n / 2) / n, ecr = (scr + n / 2) / n, gcb, gcr;
                                if (fmt == TRK_FMT_YUYV) {
                                    const uint8_t *q =
                                        im.plane[0] + (size_t)y * im.pitch[0] + (size_t)(x / 2 * 4);
                                    gcb = q[1], gcr = q[3];
                                } else if (fmt == TRK_FMT_NV12) {
                                    const uint8_t *q =
                                        im.plane[1] + (size_t)(y / 2) * im.pitch[1] + (size_t)x;
                                    gcb = q[0], gcr = q[1];
                                } else {
                                    gcb = im.plane[1]
                                                  [(size_t)(y / 2) * im.pitch[1] + (size_t)(x / 2)];
                                    gcr = im.plane[2]
                                                  [(size_t)(y / 2) * im.pitch[2] + (size_t)(x / 2)];
                                }
                                CHECKF(gcb == ecb && gcr == ecr, "%s %dx%d at %d,%d",
                                       trk_pixfmt_name((enum trk_pixfmt)fmt), w, h, x, y);
                            }
                    }
                    free(buf);
                }
        free(rgb);
    }
}

static void test_rand(void)
{
    /* splitmix64's published first outputs for seed 0. */
    uint64_t st = 0;
    CHECK(trk_rand_next(&st) == 0xe220a8397b1dcdafULL);
    CHECK(trk_rand_next(&st) == 0x6e789e6aa1b965f4ULL);
    CHECK(trk_rand_next(&st) == 0x06c45d188009454fULL);
}

/* The noisebox scene (the fast CPU backend's worst case): deterministic,
 * every box half the range of each channel, so on its noise each object
 * matches about 1/8 of the pixels. */
static void test_noisebox(void)
{
    static struct trk_scene sc, again;
    static struct trk_obj_result got[TRK_MAX_OBJECTS];
    CHECK(trk_scene_noisebox(256, 128, 64, 3, &sc) == 0);
    CHECK(trk_scene_noisebox(256, 128, 64, 3, &again) == 0);
    CHECK(memcmp(sc.rgb, again.rgb, 256 * 128 * 3) == 0);
    CHECK(memcmp(sc.objects, again.objects, sizeof(sc.objects)) == 0);
    trk_scene_free(&again);
    CHECK(trk_scene_noisebox(256, 128, 64, 4, &again) == 0);
    CHECK(memcmp(sc.rgb, again.rgb, 256 * 128 * 3) != 0);
    trk_scene_free(&again);
    CHECK(process_rgb(&sc, TRK_FMT_RGB24, 0, NULL, got) == 0);
    for (int k = 0; k < sc.n_objects; k++) {
        const struct trk_object_def *o = &sc.objects[k];
        CHECK(o->space == TRK_SPACE_RGB);
        for (int c = 0; c < 3; c++)
            CHECK(o->lo[c] <= 127 && o->hi[c] == o->lo[c] + 127);
        /* 32768 pixels, p = 1/8: mean 4096, sd ~60. */
        CHECKF(got[k].mass > 3600 && got[k].mass < 4600, "object %d mass %llu", k,
               (unsigned long long)got[k].mass);
    }
    trk_scene_free(&sc);
    CHECK(trk_scene_noisebox(3, 1, 1, 0, &sc) == 0);
    trk_scene_free(&sc);
    CHECK(trk_scene_noisebox(10, 10, TRK_MAX_OBJECTS + 1, 0, &sc) == TRK_EINVAL);
    CHECK(trk_scene_noisebox(0, 10, 1, 0, &sc) == TRK_EINVAL);
}

int main(void)
{
    struct trk_backend_cfg cfg = { .kind = TRK_BACKEND_CPU_REF,
                                   .max_width = 1920,
                                   .max_height = 1080 };
    CHECK(trk_backend_create(&cfg, &ref) == 0);
    if (!ref) return check_exit("test_scene");
    test_rand();
    test_bad_args();
    test_image_from_rgb();
    test_random();
    test_dense();
    test_noisebox();
    /* docs/ARCHITECTURE.md section 6 sizes and object counts (the largest frame with few
     * objects: the reference is O(pixels x objects)). */
    test_standard(640, 480, 1, 1, 1);
    test_standard(640, 480, 8, 2, 1);
    test_standard(640, 480, 32, 3, 0);
    test_standard(640, 480, 128, 4, 0);
    test_standard(640, 480, 256, 5, 0);
    test_standard(1920, 1080, 8, 6, 0);
    test_standard(101, 77, 64, 7, 1);
    test_standard(33, 17, 256, 8, 0); /* crowded: disks cover each other */
    trk_backend_destroy(&ref);
    return check_exit("test_scene");
}
