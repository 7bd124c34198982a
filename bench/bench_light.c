/* trackd-bench --experiment light: how much of a falling light each colour
 * space keeps (issue 27, "colour spaces that separate light from colour").
 *
 * The clip (generated here, seeded): a field (a dull green with +-6 sensor
 * noise) and M disks of distinct colours (robot markers, radius 2 % of the
 * frame's smaller side, fixed positions) over F frames in which the light
 * falls linearly from 100 % to 45 % and the white balance drifts (red gain
 * 1.15 -> 0.85, blue 0.85 -> 1.15), both applied in linear light before
 * the sRGB encoding, then +-3 noise per channel.
 *
 * Objects are taught on the first frame the way a user's teach would: per
 * disk, the channels of its inner pixels (radius - 2), each channel's
 * min..max widened by a margin (hsv hue: the arc around the centre pixel's
 * hue). Per space the boxes are:
 *   rgb, hsv:  every channel taught;
 *   lab a/b:   a and b taught, L left 0..255;
 *   rg:        r and g taught, I 10..255 (no near-black pixels);
 *   class:     a painted class (backend.h) of those pixels' R, G, B cells
 *              (as the page's paint_class sets them; up to 16 disks).
 * Each object lists up to 4 blobs of at least an eighth of the disk's area
 * (8-connected), as a tracker would use it. Each frame then runs through
 * the fast CPU backend; an object is found when its largest blob has at
 * least a quarter of the disk's area and its centroid lies within a
 * quarter radius of the disk's centre; a false blob is a listed blob whose
 * centroid lies more than a radius from it. Found shares and the share of
 * (object, frame) pairs with a false blob are given per light band (bright
 * >= 85 %, mid 65..85 %, dim < 65 %), with the median time of a frame's
 * trk_backend_process (blob lists included). The first and last
 * frames are also run through cpu-ref: a difference prints MISMATCH and
 * makes the exit status 1.
 */
#include "bench.h"

#include "backend.h"
#include "color.h"
#include "scene.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LT_MAX_OBJ 64
#define LT_BANDS   3

struct lt_opts {
    int size[2];
    int m, frames, threads, margin;
    uint64_t seed;
};

static void lt_usage(FILE *f)
{
    fprintf(f, "usage: trackd-bench --experiment light [options]\n"
               "  --size WxH     frame size (default 1920x1080)\n"
               "  --objects N    disks, 1..64 (default 8; past 8 the colours come again,\n"
               "                 darker, and neighbours' boxes overlap)\n"
               "  --frames N     frames of the light ramp, >= 2 (default 60)\n"
               "  --threads N    cpu backend threads, 0 = all cores (default 0)\n"
               "  --margin N     teach margin per channel (default 8)\n"
               "  --seed N       clip seed (default 27)\n");
}

static int lt_parse(int argc, char **argv, struct lt_opts *o)
{
    *o = (struct lt_opts){ .size = { 1920, 1080 }, .m = 8, .frames = 60, .margin = 8, .seed = 27 };
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = !v;
        if (bad)
            ;
        else if (!strcmp(a, "--size"))
            bad = trk_bench_pair(v, 16, 16384, 16384, o->size);
        else if (!strcmp(a, "--objects"))
            bad = trk_bench_int(v, 1, LT_MAX_OBJ, &o->m);
        else if (!strcmp(a, "--frames"))
            bad = trk_bench_int(v, 2, 100000, &o->frames);
        else if (!strcmp(a, "--threads"))
            bad = trk_bench_int(v, 0, 1024, &o->threads);
        else if (!strcmp(a, "--margin"))
            bad = trk_bench_int(v, 0, 128, &o->margin);
        else if (!strcmp(a, "--seed"))
            bad = trk_bench_seed(v, &o->seed);
        else
            bad = 1;
        if (bad) {
            fprintf(stderr, "trackd-bench light: bad or incomplete option %s\n", a);
            return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------ the clip */

struct lt_clip {
    int w, h, m, r;
    int cx[LT_MAX_OBJ], cy[LT_MAX_OBJ];
    double lin[LT_MAX_OBJ][3]; /* each disk's colour in linear light */
    double bg[3];
    uint8_t enc[4096]; /* linear light (x / 4095) -> sRGB byte */
    uint64_t seed;
};

/* Marker colours (sRGB): team blue and yellow, and pink, green, orange,
 * cyan, purple, red... as SSL and small-size fields use them. */
static const uint8_t lt_colours[][3] = {
    { 30, 80, 220 },  { 240, 220, 40 }, { 240, 80, 170 }, { 40, 200, 70 },
    { 250, 140, 30 }, { 40, 200, 220 }, { 140, 60, 200 }, { 220, 40, 40 },
};

static double lt_eotf(double v)
{
    return v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4);
}

static void lt_clip_init(struct lt_clip *c, const struct lt_opts *o)
{
    memset(c, 0, sizeof(*c));
    c->w = o->size[0], c->h = o->size[1], c->m = o->m, c->seed = o->seed;
    c->r = (c->w < c->h ? c->w : c->h) / 50;
    if (c->r < 4) c->r = 4;
    for (int i = 0; i < 4096; i++) {
        const double x = i / 4095.0;
        const double v = x <= 0.0031308 ? 12.92 * x : 1.055 * pow(x, 1 / 2.4) - 0.055;
        c->enc[i] = (uint8_t)lround(v * 255);
    }
    static const uint8_t field[3] = { 70, 105, 60 };
    for (int ch = 0; ch < 3; ch++)
        c->bg[ch] = lt_eotf(field[ch] / 255.0);
    /* Disks on a grid (no overlaps), each colour a little different from
     * the last one of its hue so that many disks stay distinct. */
    uint64_t st = o->seed;
    const int cols = (int)ceil(sqrt((double)c->m * c->w / c->h));
    const int rows = (c->m + cols - 1) / cols;
    for (int k = 0; k < c->m; k++) {
        const int gx = k % cols, gy = k / cols;
        const int cw = c->w / cols, chh = c->h / rows;
        const int jx = cw > 4 * c->r ? (int)(trk_rand_next(&st) % (uint64_t)(cw - 4 * c->r)) : 0;
        const int jy = chh > 4 * c->r ? (int)(trk_rand_next(&st) % (uint64_t)(chh - 4 * c->r)) : 0;
        c->cx[k] = gx * cw + 2 * c->r + jx;
        c->cy[k] = gy * chh + 2 * c->r + jy;
        const uint8_t *s = lt_colours[k % 8];
        const double shade = 1.0 - 0.25 * (k / 8) / ((c->m + 7) / 8);
        for (int ch = 0; ch < 3; ch++)
            c->lin[k][ch] = lt_eotf(s[ch] / 255.0) * shade;
    }
}

/* The light and white balance of frame f: light 1 -> 0.45, red gain 1.15
 * -> 0.85, blue the inverse. */
static void lt_light(const struct lt_opts *o, int f, double gain[3], double *light)
{
    const double t = (double)f / (o->frames - 1);
    *light = 1.0 - 0.55 * t;
    gain[0] = 1.15 - 0.30 * t;
    gain[1] = 1.0;
    gain[2] = 0.85 + 0.30 * t;
}

/* Frame f as RGB24 into rgb (w * h * 3 bytes). */
static void lt_frame(const struct lt_clip *c, const struct lt_opts *o, int f, uint8_t *rgb)
{
    double gain[3], light;
    lt_light(o, f, gain, &light);
    int enc_bg[3][13]; /* the field's byte with its noise -6..6 */
    for (int ch = 0; ch < 3; ch++) {
        const double x = c->bg[ch] * light * gain[ch];
        const int v = c->enc[(int)lround((x > 1 ? 1 : x) * 4095)];
        for (int n = 0; n < 13; n++)
            enc_bg[ch][n] = v + n - 6;
    }
    uint64_t st = c->seed * 1000003u + (uint64_t)f;
    for (int y = 0; y < c->h; y++) {
        uint8_t *row = rgb + (size_t)y * c->w * 3;
        for (int x = 0; x < c->w; x++) {
            const uint64_t rnd = trk_rand_next(&st);
            for (int ch = 0; ch < 3; ch++)
                row[3 * x + ch] = trk_clamp255(enc_bg[ch][(rnd >> (8 * ch)) % 13]);
        }
    }
    for (int k = 0; k < c->m; k++) {
        int v[3];
        for (int ch = 0; ch < 3; ch++) {
            const double x = c->lin[k][ch] * light * gain[ch];
            v[ch] = c->enc[(int)lround((x > 1 ? 1 : x) * 4095)];
        }
        for (int y = c->cy[k] - c->r; y <= c->cy[k] + c->r; y++)
            for (int x = c->cx[k] - c->r; x <= c->cx[k] + c->r; x++) {
                const int dx = x - c->cx[k], dy = y - c->cy[k];
                if (dx * dx + dy * dy > c->r * c->r || x < 0 || y < 0 || x >= c->w || y >= c->h)
                    continue;
                const uint64_t rnd = trk_rand_next(&st);
                uint8_t *p = rgb + ((size_t)y * c->w + x) * 3;
                for (int ch = 0; ch < 3; ch++)
                    p[ch] = trk_clamp255(v[ch] + (int)((rnd >> (8 * ch)) % 7) - 3);
            }
    }
}

/* ------------------------------------------------------------ teaching */

enum { LT_RGB = 0, LT_HSV, LT_LAB, LT_RG, LT_CLASS, LT_METHODS };
static const char *const lt_method_names[LT_METHODS] = { "rgb box", "hsv box", "lab a/b",
                                                         "rg chroma", "class" };
/* The space each method reads the taught pixels in (a class: R, G, B). */
static const enum trk_space lt_method_space[LT_METHODS] = { TRK_SPACE_RGB, TRK_SPACE_HSV,
                                                            TRK_SPACE_LAB, TRK_SPACE_RG,
                                                            TRK_SPACE_RGB };
/* The painted classes' tables (at most TRK_MAX_CLASSES disks). */
static uint8_t lt_class_tab[TRK_MAX_CLASSES][TRK_CLASS_BYTES];

static int lt_clampc(int v, int mx)
{
    return v < 0 ? 0 : v > mx ? mx : v;
}

/* Disk k's box in method me's space from frame img (see the file comment). */
static void lt_teach(const struct lt_clip *c, const struct trk_image *img, int me, int k,
                     int margin, struct trk_object_def *o)
{
    const int sp = (int)lt_method_space[me];
    int lo[3] = { 1 << 20, 1 << 20, 1 << 20 }, hi[3] = { -(1 << 20), -(1 << 20), -(1 << 20) };
    int h0[3];
    trk_image_pixel_space(img, c->cx[k], c->cy[k], sp, h0);
    const int ri = c->r - 2;
    for (int y = c->cy[k] - ri; y <= c->cy[k] + ri; y++)
        for (int x = c->cx[k] - ri; x <= c->cx[k] + ri; x++) {
            const int dx = x - c->cx[k], dy = y - c->cy[k];
            if (dx * dx + dy * dy > ri * ri) continue;
            int v[3];
            trk_image_pixel_space(img, x, y, sp, v);
            if (me == LT_CLASS) { /* painted: the pixel's cell */
                const int cell = trk_class_cell(v[0], v[1], v[2]);
                lt_class_tab[k][cell >> 3] |= (uint8_t)(1u << (cell & 7));
            }
            if (sp == TRK_SPACE_HSV) /* hue as a signed distance from the centre's */
                v[0] = (trk_hue_wrap(v[0] - h0[0] + TRK_HUE_VALUES / 2)) - TRK_HUE_VALUES / 2;
            for (int ch = 0; ch < 3; ch++) {
                if (v[ch] < lo[ch]) lo[ch] = v[ch];
                if (v[ch] > hi[ch]) hi[ch] = v[ch];
            }
        }
    memset(o, 0, sizeof(*o));
    snprintf(o->name, sizeof(o->name), "disk%d", k);
    o->space = (enum trk_space)sp;
    o->min_mass = 1;
    o->blobs = 4;
    o->connectivity = 8;
    o->min_area = (uint32_t)trk_bench_disk_area(c->r) / 8;
    for (int ch = 0; ch < 3; ch++) {
        const int mx = trk_chan_max(sp, ch);
        if (sp == TRK_SPACE_HSV && ch == 0) {
            o->lo[0] = (uint16_t)trk_hue_wrap(h0[0] + lo[0] - margin);
            o->hi[0] = (uint16_t)trk_hue_wrap(h0[0] + hi[0] + margin);
            continue;
        }
        o->lo[ch] = (uint16_t)lt_clampc(lo[ch] - margin, mx);
        o->hi[ch] = (uint16_t)lt_clampc(hi[ch] + margin, mx);
    }
    if (sp == TRK_SPACE_LAB) o->lo[0] = 0, o->hi[0] = 255;
    if (sp == TRK_SPACE_RG) o->lo[2] = 10, o->hi[2] = 255;
    if (me == LT_CLASS) {
        o->space = TRK_SPACE_CLASS;
        o->cls = lt_class_tab[k];
    }
}

/* ------------------------------------------------------------ the run */

struct lt_tally {
    long frames[LT_BANDS], found[LT_BANDS], spill[LT_BANDS];
};

static int lt_band(double light)
{
    return light >= 0.85 ? 0 : light >= 0.65 ? 1 : 2;
}

/* Squared distance of blob b's centroid from disk k's centre. */
static double lt_dist2(const struct lt_clip *c, int k, const struct trk_blob *b)
{
    const double ex = (double)b->sum_x / b->mass - c->cx[k],
                 ey = (double)b->sum_y / b->mass - c->cy[k];
    return ex * ex + ey * ey;
}

static void lt_score(const struct lt_clip *c, struct trk_backend *b, int band, struct lt_tally *t)
{
    const long area = trk_bench_disk_area(c->r);
    for (int k = 0; k < c->m; k++) {
        const struct trk_blob *list;
        const int n = trk_backend_blobs(b, k, &list);
        t->frames[band]++;
        if (n > 0 && (long)list[0].mass * 4 >= area &&
            lt_dist2(c, k, &list[0]) <= c->r * c->r / 16.0)
            t->found[band]++;
        int stray = 0;
        for (int i = 0; i < n; i++)
            stray |= lt_dist2(c, k, &list[i]) > (double)c->r * c->r;
        t->spill[band] += stray;
    }
}

static int run_light(int argc, char **argv)
{
    struct lt_opts o;
    if (lt_parse(argc, argv, &o)) {
        lt_usage(stderr);
        return 2;
    }
    static struct lt_clip clip;
    lt_clip_init(&clip, &o);
    const int w = clip.w, h = clip.h;
    uint8_t *rgb = malloc((size_t)w * h * 3);
    struct trk_backend *fast = NULL, *ref = NULL;
    struct trk_backend_cfg fc = {
        .kind = TRK_BACKEND_CPU, .max_width = w, .max_height = h, .threads = o.threads
    };
    struct trk_backend_cfg rc = { .kind = TRK_BACKEND_CPU_REF, .max_width = w, .max_height = h };
    if (!rgb || trk_backend_create(&fc, &fast) || trk_backend_create(&rc, &ref)) {
        fprintf(stderr, "trackd-bench light: out of memory or no backend\n");
        return 1;
    }
    struct trk_image img = { .fmt = TRK_FMT_RGB24,
                             .width = w,
                             .height = h,
                             .plane = { rgb },
                             .pitch = { (size_t)w * 3 },
                             .matrix = TRK_MATRIX_BT601,
                             .full_range = true };
    static struct trk_object_def objs[LT_METHODS][LT_MAX_OBJ];
    lt_frame(&clip, &o, 0, rgb);
    /* Classes for at most TRK_MAX_CLASSES disks (the backends' limit). */
    const int methods = clip.m <= TRK_MAX_CLASSES ? LT_METHODS : LT_CLASS;
    for (int me = 0; me < methods; me++)
        for (int k = 0; k < clip.m; k++)
            lt_teach(&clip, &img, me, k, o.margin, &objs[me][k]);

    struct lt_tally tally[LT_METHODS];
    memset(tally, 0, sizeof(tally));
    double *ms = malloc(sizeof(double) * (size_t)o.frames * LT_METHODS);
    int mismatches = 0;
    static struct trk_obj_result res[LT_MAX_OBJ], want[LT_MAX_OBJ];
    for (int f = 0; f < o.frames && ms; f++) {
        double gain[3], light;
        lt_light(&o, f, gain, &light);
        lt_frame(&clip, &o, f, rgb);
        for (int me = 0; me < methods; me++) {
            if (trk_backend_set_objects(fast, objs[me], clip.m)) return 1;
            const double t0 = trk_bench_now_ms();
            if (trk_backend_process(fast, &img, NULL, res, NULL)) return 1;
            ms[(size_t)me * o.frames + f] = trk_bench_now_ms() - t0;
            lt_score(&clip, fast, lt_band(light), &tally[me]);
            if (f != 0 && f != o.frames - 1) continue;
            if (trk_backend_set_objects(ref, objs[me], clip.m) ||
                trk_backend_process(ref, &img, NULL, want, NULL))
                return 1;
            if (memcmp(res, want, sizeof(res[0]) * (size_t)clip.m)) {
                printf("MISMATCH: %s frame %d: cpu differs from cpu-ref\n", lt_method_names[me], f);
                mismatches++;
            }
        }
    }
    if (!ms) return 1;
    printf("# trackd-bench --experiment light: %dx%d RGB24, %d disks (radius %d), %d frames, "
           "light 100 -> 45 %%, red gain 1.15 -> 0.85, blue 0.85 -> 1.15; taught on frame 0, "
           "margin %d; backend %s\n",
           w, h, clip.m, clip.r, o.frames, o.margin, trk_backend_name(fast));
    printf("%-10s %8s %8s %8s   %8s %8s %8s   %9s\n", "space", "found hi", "mid", "dim", "false hi",
           "mid", "dim", "ms/frame");
    for (int me = 0; me < methods; me++) {
        const struct lt_tally *t = &tally[me];
        double share[2][LT_BANDS];
        for (int b = 0; b < LT_BANDS; b++) {
            share[0][b] = t->frames[b] ? 100.0 * t->found[b] / t->frames[b] : 0;
            share[1][b] = t->frames[b] ? 100.0 * t->spill[b] / t->frames[b] : 0;
        }
        printf("%-10s %7.1f%% %7.1f%% %7.1f%%   %7.1f%% %7.1f%% %7.1f%%   %9.2f\n",
               lt_method_names[me], share[0][0], share[0][1], share[0][2], share[1][0], share[1][1],
               share[1][2], trk_bench_median(ms + (size_t)me * o.frames, (size_t)o.frames));
    }
    free(ms);
    free(rgb);
    trk_backend_destroy(&fast);
    trk_backend_destroy(&ref);
    return mismatches ? 1 : 0;
}

static const struct trk_bench_experiment light_exp = {
    "light",
    "found share per light band: rgb/hsv boxes vs lab a/b, rg chromaticity and a painted class",
    run_light
};

__attribute__((constructor)) static void lt_register(void)
{
    trk_bench_register(&light_exp);
}
