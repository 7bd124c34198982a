/* The CPU reference backend against an independent brute-force definition.
 *
 * brute() below is written from the words of backend.h and color.h, not from
 * cpu_ref.c: one object at a time, one pixel at a time, its own pixel
 * addressing and its own box test; only the colour arithmetic (conversion,
 * HSV) comes from color.h, which is the definition both must share. Results
 * must be identical (memcmp) on seeded random scenes in every pixel format,
 * with row padding, odd sizes, 0/1/7/256 objects, ROIs of every shape, hue
 * wrap, overlapping ranges, border-touching and empty objects.
 */
#include "backend.h"
#include "moments_oracle.h"
#include "../check.h"
#include "color.h"
#include "scene.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Native sample of channel c (0: R or Y, 1: G or Cb, 2: B or Cr) of pixel
 * (x, y), addressed from first principles per backend.h's layouts. */
static int sample(const struct trk_image *im, int x, int y, int c)
{
    size_t X = (size_t)x, Y = (size_t)y;
    switch (im->fmt) {
    case TRK_FMT_RGB24: return im->plane[0][Y * im->pitch[0] + 3 * X + (size_t)c];
    case TRK_FMT_RGBA: return im->plane[0][Y * im->pitch[0] + 4 * X + (size_t)c];
    case TRK_FMT_BGR24: return im->plane[0][Y * im->pitch[0] + 3 * X + (size_t)(2 - c)];
    case TRK_FMT_BGRA: return im->plane[0][Y * im->pitch[0] + 4 * X + (size_t)(2 - c)];
    case TRK_FMT_YUYV: {
        /* Bytes of a pixel pair: Y0 U Y1 V; pixel x is in pair x/2. */
        const uint8_t *pair = im->plane[0] + Y * im->pitch[0] + (X & ~(size_t)1) * 2;
        if (c == 0) return pair[(X % 2) * 2];
        return c == 1 ? pair[1] : pair[3];
    }
    case TRK_FMT_NV12:
        if (c == 0) return im->plane[0][Y * im->pitch[0] + X];
        return im->plane[1][(Y / 2) * im->pitch[1] + (X / 2) * 2 + (size_t)(c - 1)];
    case TRK_FMT_I420:
        if (c == 0) return im->plane[0][Y * im->pitch[0] + X];
        return im->plane[c][(Y / 2) * im->pitch[c] + X / 2];
    default: return -1;
    }
}

static int in_range(int v, int lo, int hi)
{
    return lo <= v && v <= hi;
}

/* Does pixel (x, y) match object o? Straight from the definitions. */
static int matches(const struct trk_image *im, const struct trk_object_def *o, int x, int y)
{
    int n0 = sample(im, x, y, 0), n1 = sample(im, x, y, 1), n2 = sample(im, x, y, 2);
    int yuv = im->fmt == TRK_FMT_YUYV || im->fmt == TRK_FMT_NV12 || im->fmt == TRK_FMT_I420;
    int k = trk_coef_index((int)im->matrix, im->full_range);
    int v[3];
    uint8_t a, b, c;
    if (o->space == TRK_SPACE_YCBCR) {
        if (yuv) {
            v[0] = n0, v[1] = n1, v[2] = n2;
        } else {
            trk_rgb_to_ycbcr(&trk_rgb2ycc_coefs[k], n0, n1, n2, &a, &b, &c);
            v[0] = a, v[1] = b, v[2] = c;
        }
    } else {
        int r = n0, g = n1, bl = n2;
        if (yuv) {
            trk_yuv_to_rgb(&trk_yuv2rgb_coefs[k], n0, n1, n2, &a, &b, &c);
            r = a, g = b, bl = c;
        }
        if (o->space == TRK_SPACE_RGB) {
            v[0] = r, v[1] = g, v[2] = bl;
        } else {
            uint16_t h;
            trk_rgb_to_hsv(r, g, bl, &h, &a, &b);
            v[0] = h, v[1] = a, v[2] = b;
        }
    }
    int ok0;
    if (o->space == TRK_SPACE_HSV && o->lo[0] > o->hi[0])
        ok0 = v[0] >= o->lo[0] || v[0] <= o->hi[0];
    else
        ok0 = in_range(v[0], o->lo[0], o->hi[0]);
    return ok0 && in_range(v[1], o->lo[1], o->hi[1]) && in_range(v[2], o->lo[2], o->hi[2]);
}

static void brute(const struct trk_image *im, const struct trk_object_def *o,
                  const struct trk_roi *roi, struct trk_obj_result *r)
{
    uint64_t mass = 0, sx = 0, sy = 0;
    struct trk_obj_result m = { 0 };
    int x0 = INT_MAX, y0 = INT_MAX, x1 = INT_MIN, y1 = INT_MIN;
    for (int y = 0; y < im->height; y++)
        for (int x = 0; x < im->width; x++) {
            if (roi && (x < roi->x0 || x > roi->x1 || y < roi->y0 || y > roi->y1)) continue;
            if (!matches(im, o, x, y)) continue;
            mass++, sx += (uint64_t)x, sy += (uint64_t)y;
            ORACLE_ADD_MOMENTS(&m, x, y);
            if (x < x0) x0 = x;
            if (x > x1) x1 = x;
            if (y < y0) y0 = y;
            if (y > y1) y1 = y;
        }
    memset(r, 0, sizeof(*r));
    r->mass = mass, r->sum_x = sx, r->sum_y = sy;
    r->sum_xx = m.sum_xx, r->sum_yy = m.sum_yy, r->sum_xy = m.sum_xy;
    if (mass) {
        r->x0 = x0, r->y0 = y0, r->x1 = x1, r->y1 = y1;
    } else {
        r->x0 = r->y0 = r->x1 = r->y1 = -1;
    }
}

/* ROIs of every shape: inside, partly outside, wholly outside, inverted,
 * single pixel, the whole frame and more. */
static void make_rois(uint64_t *st, int w, int h, int n, struct trk_roi *rois)
{
    for (int i = 0; i < n; i++) {
        struct trk_roi *r = &rois[i];
        int kind = (int)(trk_rand_next(st) % 7);
        int ax = (int)(trk_rand_next(st) % (uint64_t)(w + 8)) - 4;
        int bx = (int)(trk_rand_next(st) % (uint64_t)(w + 8)) - 4;
        int ay = (int)(trk_rand_next(st) % (uint64_t)(h + 8)) - 4;
        int by = (int)(trk_rand_next(st) % (uint64_t)(h + 8)) - 4;
        switch (kind) {
        case 0: *r = (struct trk_roi){ -1000, -1000, 100000, 100000 }; break;
        case 1: *r = (struct trk_roi){ ax, ay, ax, ay }; break;          /* 1 pixel */
        case 2: *r = (struct trk_roi){ w + 2, 0, w + 10, h - 1 }; break; /* outside */
        case 3: *r = (struct trk_roi){ bx > ax ? bx : ax, ay, bx > ax ? ax : bx, by }; break;
        default:
            *r = (struct trk_roi){ ax < bx ? ax : bx, ay < by ? ay : by, ax < bx ? bx : ax,
                                   ay < by ? by : ay };
            break;
        }
        if (kind == 3 && r->x0 == r->x1) r->x0++; /* make sure it is inverted */
    }
}

/* The clipped ROI brute() uses (backend.h: clipped to the frame; empty counts
 * nothing). An empty ROI is passed as NULL-with-nothing: mark it specially. */
static int roi_for_brute(const struct trk_roi *in, int w, int h, struct trk_roi *out)
{
    *out = *in;
    if (out->x0 < 0) out->x0 = 0;
    if (out->y0 < 0) out->y0 = 0;
    if (out->x1 > w - 1) out->x1 = w - 1;
    if (out->y1 > h - 1) out->y1 = h - 1;
    return out->x0 <= out->x1 && out->y0 <= out->y1;
}

static long n_cases, n_nonempty, n_empty;

/* The clock the CPU backends take their timings on. */
static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void run_case(struct trk_backend *b, const struct trk_scene *sc, enum trk_pixfmt fmt,
                     int pad, int coef, int use_rois, uint64_t *st)
{
    uint8_t *buf;
    struct trk_image im;
    int err = trk_image_from_rgb(sc->rgb, sc->width, sc->height, fmt, (enum trk_matrix)(coef / 2),
                                 coef & 1, pad, &buf, &im);
    CHECK(err == 0);
    if (err) return;
    int n = sc->n_objects;
    static struct trk_roi rois[TRK_MAX_OBJECTS];
    static struct trk_obj_result got[TRK_MAX_OBJECTS], want[TRK_MAX_OBJECTS];
    if (use_rois) make_rois(st, sc->width, sc->height, n, rois);
    memset(got, 0x5c, sizeof(got));
    struct trk_backend_timing t = { -1, -1, -1, 0, 0 };
    double t0 = mono_ms();
    err = trk_backend_process(b, &im, use_rois ? rois : NULL, got, &t);
    double call_ms = mono_ms() - t0;
    CHECKF(err == 0, "process: %s", trk_strerror(err));
    /* The timing is filled (it started at -1) and measures this call: no
     * upload on the CPU, and every stage lies within the call's own wall
     * time, taken on the same clock around it (a bound that holds however
     * busy the machine is). */
    CHECKF(t.upload_ms == 0 && t.kernel_ms >= 0 && t.kernel_ms <= t.total_ms &&
               t.total_ms <= call_ms + 1e-6,
           "upload %g kernel %g total %g ms, call %g ms", t.upload_ms, t.kernel_ms, t.total_ms,
           call_ms);
    for (int i = 0; i < n; i++) {
        struct trk_roi cr;
        if (use_rois && !roi_for_brute(&rois[i], sc->width, sc->height, &cr)) {
            memset(&want[i], 0, sizeof(want[i]));
            want[i].x0 = want[i].y0 = want[i].x1 = want[i].y1 = -1;
        } else {
            brute(&im, &sc->objects[i], use_rois ? &cr : NULL, &want[i]);
        }
        if (want[i].mass)
            n_nonempty++;
        else
            n_empty++;
        CHECKF(memcmp(&got[i], &want[i], sizeof(want[i])) == 0,
               "%dx%d %s pad %d coef %d rois %d obj %d (space %d lo %d,%d,%d hi %d,%d,%d): "
               "got mass %llu sx %llu sy %llu bbox %d,%d,%d,%d, want mass %llu sx %llu sy %llu "
               "bbox %d,%d,%d,%d",
               sc->width, sc->height, trk_pixfmt_name(fmt), pad, coef, use_rois, i,
               (int)sc->objects[i].space, sc->objects[i].lo[0], sc->objects[i].lo[1],
               sc->objects[i].lo[2], sc->objects[i].hi[0], sc->objects[i].hi[1],
               sc->objects[i].hi[2], (unsigned long long)got[i].mass,
               (unsigned long long)got[i].sum_x, (unsigned long long)got[i].sum_y, got[i].x0,
               got[i].y0, got[i].x1, got[i].y1, (unsigned long long)want[i].mass,
               (unsigned long long)want[i].sum_x, (unsigned long long)want[i].sum_y, want[i].x0,
               want[i].y0, want[i].x1, want[i].y1);
    }
    n_cases++;
    free(buf);
}

int main(void)
{
    static const int sizes[][2] = { { 1, 1 },   { 2, 1 },   { 1, 2 },  { 3, 5 },
                                    { 5, 3 },   { 2, 2 },   { 17, 9 }, { 9, 17 },
                                    { 33, 31 }, { 64, 48 }, { 101, 7 } };
    static const int counts[] = { 0, 1, 7, TRK_MAX_OBJECTS };
    struct trk_backend_cfg cfg = { .kind = TRK_BACKEND_CPU_REF,
                                   .max_width = 256,
                                   .max_height = 256 };
    struct trk_backend *b = NULL;
    int err = trk_backend_create(&cfg, &b);
    CHECK(err == 0 && b);
    if (!b) return check_exit("test_cpu_ref");
    uint64_t st = 0x7e57c0de;

    /* Small and odd sizes: every format x padding x matrix/range x ROI mode. */
    int seed = 1;
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
        for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
            static struct trk_scene sc;
            err = trk_scene_random(sizes[si][0], sizes[si][1], counts[ci], (uint64_t)seed++, &sc);
            CHECK(err == 0);
            if (err) continue;
            CHECK(trk_backend_set_objects(b, sc.objects, sc.n_objects) == 0);
            for (int fmt = 0; fmt < TRK_FMT_COUNT; fmt++)
                for (int pad = 0; pad <= 5; pad += 5)
                    for (int rois = 0; rois < 2; rois++)
                        run_case(b, &sc, (enum trk_pixfmt)fmt, pad, (fmt + pad + rois) % 4, rois,
                                 &st);
            trk_scene_free(&sc);
        }

    /* The full object count on a mid-size frame, every format, with and
     * without ROIs. */
    {
        static struct trk_scene sc;
        err = trk_scene_random(47, 29, TRK_MAX_OBJECTS, 4242, &sc);
        CHECK(err == 0);
        if (!err) {
            CHECK(trk_backend_set_objects(b, sc.objects, sc.n_objects) == 0);
            for (int fmt = 0; fmt < TRK_FMT_COUNT; fmt++)
                for (int rois = 0; rois < 2; rois++)
                    run_case(b, &sc, (enum trk_pixfmt)fmt, 3, (fmt + rois) % 4, rois, &st);
            trk_scene_free(&sc);
        }
    }

    /* The standard scene through the same comparison (its objects are rgb
     * boxes; YUV formats blur disk edges, which is what makes it a test). */
    {
        static struct trk_scene sc;
        err = trk_scene_standard(160, 120, 32, 99, &sc);
        CHECK(err == 0);
        if (!err) {
            CHECK(trk_backend_set_objects(b, sc.objects, sc.n_objects) == 0);
            for (int fmt = 0; fmt < TRK_FMT_COUNT; fmt++)
                run_case(b, &sc, (enum trk_pixfmt)fmt, 1, fmt % 4, fmt & 1, &st);
            trk_scene_free(&sc);
        }
    }

    /* The comparison must not be vacuous: both empty and non-empty results
     * must have been compared, many times. */
    printf("%ld cases, %ld non-empty and %ld empty object results compared\n", n_cases, n_nonempty,
           n_empty);
    CHECK(n_nonempty > 1000 && n_empty > 100);
    trk_backend_destroy(&b);
    return check_exit("test_cpu_ref");
}
