/* trackd-bench --experiment blobs: blob lists per colour (issue 12).
 *
 * Scenes with many blobs per colour (the blob scene below: C colours x N
 * disks, clean or noisy), and per scene, for every backend with blobs on
 * (K = N) and the same objects with blobs off (the "blobs off: no slower
 * than today" comparison): medians, checked against cpu-ref's aggregates and
 * blob lists field by field (a difference marks the row and makes the exit
 * status 1). Beside them, from the same run: the one-read floor (CPU: a sum
 * and a memcpy of the frame; GPU: bench_cuda.cu's read kernel), OpenCV's
 * inRange + connectedComponentsWithStats per colour (bench/opencv_blobs.py,
 * --opencv-blobs FILE; its areas and boxes are checked against ours) and,
 * in builds with NPP, NPP's union-find labelling of the same masks.
 *
 * Backends that have no blobs yet refuse blobs > 0 with TRK_ENODEV: their
 * blobs-on rows are skipped with a `# skipped` line, the rest still runs.
 * See bench/README.md.
 */
#include "bench.h"
#include "minijson.h"

#include "backend.h"
#include "scene.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BL_MAX_LIST 16
#define BL_SEED     20240601u

/* ------------------------------------------------------------ the scene */

/* Gaussian noise of standard deviation 20 with integers only (the scene
 * must be the same on every machine, so no libm): the sum of 12 uniform
 * 16-bit draws (Irwin-Hall) has mean 12 * 32767.5 and standard deviation
 * 65536, close enough to a normal for a test picture. */
static int noise_sigma20(uint64_t *st)
{
    int64_t s2 = 0; /* twice the sum, so the mean 786420 is an integer */
    for (int w = 0; w < 3; w++) {
        uint64_t r = trk_rand_next(st);
        for (int i = 0; i < 4; i++)
            s2 += 2 * (int64_t)((r >> (16 * i)) & 0xffff);
    }
    int64_t d = (s2 - 786420) * 20; /* in units of 1/131072 */
    return (int)(d >= 0 ? (d + 65536) / 131072 : -((-d + 65536) / 131072));
}

static int rnd(uint64_t *st, int lo, int hi)
{
    return lo + (int)(trk_rand_next(st) % (uint64_t)(hi - lo + 1));
}

static uint8_t clamp8(int v)
{
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* The blob scene: `colours` objects, each the colour of the standard
 * scene's object of the same index (trk_scene_standard's palette: saturated,
 * and no +-8 box matches gray or another colour), and `per` disks of each
 * colour. Radii are drawn in [r - r/4, r + r/4] around the standard scene's
 * r (2% of the short side), so lists have both ties and order. Disks are
 * placed at seeded random positions at least 2 pixels apart (8-connected
 * blobs stay separate) when the frame has room (200 tries each; in tiny
 * frames they may touch and merge). Every object has blobs = per, 8-connected.
 *   clean: the standard scene's gray background (60..195, R = G = B), disks
 *          of their colour +-3, boxes +-8, min_area 0 (every blob counts).
 *   noisy: before the noise, 4 specks per disk (1x1 to 2x2 pixels of a
 *          colour) on the background; then every pixel and channel gets
 *          Gaussian noise of sigma 20. Boxes are +-40 (two sigma: disks come
 *          out speckled, with holes; noisy gray sometimes matches, adding
 *          natural specks) and min_area = max(5, smallest disk / 4), above
 *          any speck (4 pixels) and far below a disk.
 * Deterministic for its arguments. 0, or TRK_EINVAL / TRK_ENOMEM. */
static int blob_scene(int width, int height, int colours, int per, bool noisy, uint64_t seed,
                      struct trk_scene *out)
{
    memset(out, 0, sizeof(*out));
    if (width <= 0 || height <= 0 || colours < 1 || colours > TRK_MAX_OBJECTS || per < 1 ||
        per > TRK_MAX_BLOBS)
        return TRK_EINVAL;
    /* The palette: a 1x1 standard scene's boxes are its colours +-8. */
    struct trk_scene pal;
    int err = trk_scene_standard(1, 1, colours, 0, &pal);
    if (err) return err;
    uint8_t col[TRK_MAX_OBJECTS][3];
    for (int c = 0; c < colours; c++)
        for (int ch = 0; ch < 3; ch++) {
            const struct trk_object_def *o = &pal.objects[c];
            col[c][ch] = (uint8_t)(o->lo[ch] == 0 ? o->hi[ch] - 8 : o->lo[ch] + 8);
        }
    trk_scene_free(&pal);

    if ((size_t)width > SIZE_MAX / 3 / (size_t)height) return TRK_EINVAL;
    const size_t npx = (size_t)width * (size_t)height;
    const int n = colours * per;
    int *dx = malloc(sizeof(int) * 3 * (size_t)n);
    out->rgb = malloc(npx * 3);
    if (!dx || !out->rgb) {
        free(dx);
        free(out->rgb);
        out->rgb = NULL;
        return TRK_ENOMEM;
    }
    int *dy = dx + n, *dr = dy + n;
    out->width = width;
    out->height = height;
    out->n_objects = colours;
    uint64_t st = seed;

    int shortside = width < height ? width : height;
    int rad = (shortside * 2 + 50) / 100;
    if (rad < 1) rad = 1;
    out->radius = rad;
    const int rmin = rad - rad / 4, rmax = rad + rad / 4;

    for (size_t i = 0; i < npx; i++) {
        uint8_t v = (uint8_t)rnd(&st, 60, 195);
        out->rgb[3 * i] = out->rgb[3 * i + 1] = out->rgb[3 * i + 2] = v;
    }
    if (noisy)
        for (int s = 0; s < 4 * n; s++) {
            const uint8_t *c = col[rnd(&st, 0, colours - 1)];
            int sw = rnd(&st, 1, 2), sh = rnd(&st, 1, 2);
            int x0 = rnd(&st, 0, width - 1), y0 = rnd(&st, 0, height - 1);
            for (int y = y0; y < y0 + sh && y < height; y++)
                for (int x = x0; x < x0 + sw && x < width; x++)
                    memcpy(out->rgb + ((size_t)y * (size_t)width + (size_t)x) * 3, c, 3);
        }
    for (int k = 0; k < n; k++) {
        int r = rnd(&st, rmin, rmax), x = width / 2, y = height / 2;
        for (int tries = 0; tries < 200; tries++) {
            x = 2 * r < width ? rnd(&st, r, width - 1 - r) : width / 2;
            y = 2 * r < height ? rnd(&st, r, height - 1 - r) : height / 2;
            bool clear = true;
            for (int j = 0; j < k && clear; j++) {
                int64_t ddx = x - dx[j], ddy = y - dy[j], lim = r + dr[j] + 2;
                clear = ddx * ddx + ddy * ddy > lim * lim;
            }
            if (clear) break;
        }
        dx[k] = x, dy[k] = y, dr[k] = r;
        const uint8_t *c = col[k / per];
        for (int py = y - r; py <= y + r; py++)
            for (int px = x - r; px <= x + r; px++) {
                if (px < 0 || py < 0 || px >= width || py >= height) continue;
                if ((px - x) * (px - x) + (py - y) * (py - y) > r * r) continue;
                uint8_t *p = out->rgb + ((size_t)py * (size_t)width + (size_t)px) * 3;
                for (int ch = 0; ch < 3; ch++)
                    p[ch] = noisy ? c[ch] : clamp8(c[ch] + rnd(&st, -3, 3));
            }
    }
    if (noisy)
        for (size_t i = 0; i < 3 * npx; i++)
            out->rgb[i] = clamp8(out->rgb[i] + noise_sigma20(&st));
    free(dx);

    const int margin = noisy ? 40 : 8;
    const uint32_t min_area =
        noisy ? (uint32_t)(trk_bench_disk_area(rmin) / 4 > 5 ? trk_bench_disk_area(rmin) / 4 : 5)
              : 0;
    for (int c = 0; c < colours; c++) {
        struct trk_object_def *o = &out->objects[c];
        snprintf(o->name, sizeof(o->name), "colour%d", c);
        o->space = TRK_SPACE_RGB;
        o->min_mass = 1;
        for (int ch = 0; ch < 3; ch++) {
            o->lo[ch] = (uint16_t)(col[c][ch] > margin ? col[c][ch] - margin : 0);
            o->hi[ch] = (uint16_t)(col[c][ch] + margin < 255 ? col[c][ch] + margin : 255);
        }
        o->blobs = (uint16_t)per;
        o->connectivity = 8;
        o->min_area = min_area;
    }
    return 0;
}

/* -------------------------------------------------------------- options */

struct bl_opts {
    int nsizes, sizes[BL_MAX_LIST][2];
    int nlayouts, layouts[BL_MAX_LIST][2]; /* colours x blobs per colour */
    int nnoise;
    bool noise[2];
    int nkinds;
    enum trk_backend_kind kinds[BL_MAX_LIST];
    int nthreads, threads[BL_MAX_LIST];
    int warmup, iters, ref_iters, npp_iters;
    enum trk_backend_kind truth; /* who computes the truth: cpu-ref, or cpu */
    uint64_t seed;
    const char *json, *opencv, *dump;
};

static void bl_usage(FILE *f)
{
    fprintf(f,
            "usage: trackd-bench --experiment blobs [options]\n"
            "  --sizes WxH,...       frame sizes (default 1920x1080,3840x2160)\n"
            "  --layouts CxN,...     C colours x N blobs each, K = N (default 8x16,32x4,128x1)\n"
            "  --noise L,...         clean, noisy (default clean,noisy)\n"
            "  --backends K,...      cpu-ref, cpu, cuda (default cpu,cuda; cpu-ref always\n"
            "                        computes the truth once per scene, untimed)\n"
            "  --threads N,...       CPU thread counts, 0 = all cores (default 1,0)\n"
            "  --warmup N            untimed runs per row (default 2)\n"
            "  --iters N             timed runs per row (default 10)\n"
            "  --ref-iters N         timed runs of a cpu-ref row (default 1)\n"
            "  --truth cpu-ref|cpu   who computes the truth (default cpu-ref; cpu = the fast\n"
            "                        twin, all cores, which the unit tests hold equal to\n"
            "                        cpu-ref: for large scenes where cpu-ref takes minutes)\n"
            "  --npp-iters N         timed runs of NPP per mask (default 10; NPP builds)\n"
            "  --seed N              scene seed (default %u)\n"
            "  --json FILE           write all results as JSON\n"
            "  --opencv-blobs FILE   OpenCV baseline JSON (bench/opencv_blobs.py)\n"
            "  --dump-scenes DIR     write DIR/blobs_WxH_CxN_{clean,noisy}.{rgb,json}, exit\n",
            BL_SEED);
}

/* Splits a comma list into at most max items of at most 63 chars; returns
 * the count, or -1. */
static int bl_split(const char *s, char items[][64], int max)
{
    int n = 0;
    for (const char *p = s;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0 || len >= 64 || n >= max) return -1;
        memcpy(items[n], p, len);
        items[n++][len] = '\0';
        if (!e) break;
        p = e + 1;
    }
    return n;
}

static int bl_parse(int argc, char **argv, struct bl_opts *o)
{
    *o = (struct bl_opts){ .warmup = 2,
                           .iters = 10,
                           .ref_iters = 1,
                           .npp_iters = 10,
                           .seed = BL_SEED,
                           .truth = TRK_BACKEND_CPU_REF };
    o->nsizes = 2;
    o->sizes[0][0] = 1920, o->sizes[0][1] = 1080, o->sizes[1][0] = 3840, o->sizes[1][1] = 2160;
    o->nlayouts = 3;
    o->layouts[0][0] = 8, o->layouts[0][1] = 16, o->layouts[1][0] = 32, o->layouts[1][1] = 4;
    o->layouts[2][0] = 128, o->layouts[2][1] = 1;
    o->nnoise = 2, o->noise[0] = false, o->noise[1] = true;
    o->nkinds = 2, o->kinds[0] = TRK_BACKEND_CPU, o->kinds[1] = TRK_BACKEND_CUDA;
    o->nthreads = 2, o->threads[0] = 1, o->threads[1] = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char it[BL_MAX_LIST][64];
        int n = 0, bad = 0;
        if (!v) {
            fprintf(stderr, "trackd-bench blobs: unknown or incomplete option %s\n", a);
            return -1;
        }
        i++;
        if (!strcmp(a, "--sizes")) {
            n = o->nsizes = bl_split(v, it, BL_MAX_LIST);
            for (int k = 0; k < n && !bad; k++)
                bad = trk_bench_pair(it[k], 1, 16384, 16384, o->sizes[k]);
        } else if (!strcmp(a, "--layouts")) {
            n = o->nlayouts = bl_split(v, it, BL_MAX_LIST);
            for (int k = 0; k < n && !bad; k++)
                bad = trk_bench_pair(it[k], 1, TRK_MAX_OBJECTS, TRK_MAX_BLOBS, o->layouts[k]);
        } else if (!strcmp(a, "--noise")) {
            n = o->nnoise = bl_split(v, it, 2);
            for (int k = 0; k < n && !bad; k++) {
                bad = strcmp(it[k], "clean") && strcmp(it[k], "noisy");
                o->noise[k] = !strcmp(it[k], "noisy");
            }
        } else if (!strcmp(a, "--backends")) {
            n = o->nkinds = bl_split(v, it, BL_MAX_LIST);
            for (int k = 0; k < n && !bad; k++) {
                int kind = trk_backend_kind_parse(it[k]);
                bad = kind < 0 || kind == TRK_BACKEND_AUTO;
                o->kinds[k] = (enum trk_backend_kind)kind;
            }
        } else if (!strcmp(a, "--threads")) {
            n = o->nthreads = bl_split(v, it, BL_MAX_LIST);
            for (int k = 0; k < n && !bad; k++)
                bad = trk_bench_int(it[k], 0, 1024, &o->threads[k]);
        } else if (!strcmp(a, "--warmup")) {
            bad = trk_bench_int(v, 0, 100000, &o->warmup);
        } else if (!strcmp(a, "--iters")) {
            bad = trk_bench_int(v, 1, 100000, &o->iters);
        } else if (!strcmp(a, "--truth")) {
            bad = strcmp(v, "cpu-ref") && strcmp(v, "cpu");
            if (!bad) o->truth = trk_backend_kind_parse(v);
        } else if (!strcmp(a, "--ref-iters")) {
            bad = trk_bench_int(v, 1, 100000, &o->ref_iters);
        } else if (!strcmp(a, "--npp-iters")) {
            bad = trk_bench_int(v, 1, 100000, &o->npp_iters);
        } else if (!strcmp(a, "--seed")) {
            bad = trk_bench_seed(v, &o->seed);
        } else if (!strcmp(a, "--json")) {
            o->json = v;
        } else if (!strcmp(a, "--opencv-blobs")) {
            o->opencv = v;
        } else if (!strcmp(a, "--dump-scenes")) {
            o->dump = v;
        } else {
            fprintf(stderr, "trackd-bench blobs: unknown option %s\n", a);
            return -1;
        }
        if (n < 0 || bad) {
            fprintf(stderr, "trackd-bench blobs: bad value for %s: %s\n", a, v);
            return -1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------- scene dumps */

static void scene_name(char *buf, size_t n, int w, int h, int colours, int per, bool noisy)
{
    snprintf(buf, n, "blobs_%dx%d_%dx%d_%s", w, h, colours, per, noisy ? "noisy" : "clean");
}

/* DIR/NAME.rgb (raw RGB24, pitch 3 W) and DIR/NAME.json: what
 * opencv_blobs.py needs to threshold and label the same masks. */
static int dump_scene(const char *dir, const struct trk_scene *sc, int per, bool noisy,
                      uint64_t seed)
{
    char name[128], path[4096];
    scene_name(name, sizeof(name), sc->width, sc->height, sc->n_objects, per, noisy);
    snprintf(path, sizeof(path), "%s/%s.rgb", dir, name);
    FILE *f = fopen(path, "wb");
    size_t bytes = (size_t)sc->width * (size_t)sc->height * 3;
    if (!f || fwrite(sc->rgb, 1, bytes, f) != bytes || fclose(f)) {
        fprintf(stderr, "trackd-bench blobs: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    snprintf(path, sizeof(path), "%s/%s.json", dir, name);
    f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "trackd-bench blobs: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f,
            "{\"width\":%d,\"height\":%d,\"objects\":%d,\"colours\":%d,\"per_colour\":%d,"
            "\"noisy\":%s,\"seed\":%llu,\"format\":\"rgb24\",\"pixels\":\"%s.rgb\",\"defs\":[",
            sc->width, sc->height, sc->n_objects, sc->n_objects, per, noisy ? "true" : "false",
            (unsigned long long)seed, name);
    for (int i = 0; i < sc->n_objects; i++) {
        const struct trk_object_def *o = &sc->objects[i];
        fprintf(f,
                "%s\n {\"name\":\"%s\",\"space\":\"rgb\",\"lo\":[%u,%u,%u],\"hi\":[%u,%u,%u],"
                "\"blobs\":%u,\"min_area\":%u,\"connectivity\":%u}",
                i ? "," : "", o->name, o->lo[0], o->lo[1], o->lo[2], o->hi[0], o->hi[1], o->hi[2],
                o->blobs, o->min_area, o->connectivity);
    }
    fprintf(f, "]}\n");
    return fclose(f) ? -1 : 0;
}

/* ----------------------------------------------------- OpenCV baseline */

/* One entry of opencv_blobs.py's JSON (bench/README.md). */
struct cv_entry {
    int width, height, colours, per, noisy, threads;
    double median_ms;
    const char *variant;
    const struct trk_json *check; /* per colour {"count", "top"}, optional */
};

struct cv_file {
    struct trk_json *root;
    struct cv_entry *e;
    int n;
};

static bool cv_take(const struct trk_json *j, void *item)
{
    struct cv_entry *e = item;
    e->width = (int)trk_json_num(j, "width", -1);
    e->height = (int)trk_json_num(j, "height", -1);
    e->colours = (int)trk_json_num(j, "colours", -1);
    e->per = (int)trk_json_num(j, "per_colour", -1);
    e->noisy = (int)trk_json_num(j, "noisy", -1);
    e->threads = (int)trk_json_num(j, "threads", -1);
    e->median_ms = trk_json_num(j, "median_ms", -1);
    e->variant = trk_json_str(j, "variant", "?");
    e->check = trk_json_get(j, "check");
    return e->width > 0 && e->height > 0 && e->colours > 0 && e->per > 0 && e->noisy >= 0 &&
           e->median_ms > 0;
}

static int cv_load(const char *path, struct cv_file *cf)
{
    void *items;
    int rc = trk_json_load_scenes(path, "trackd-bench blobs", &cf->root, sizeof(*cf->e), cv_take,
                                  &items, &cf->n);
    cf->e = items;
    return rc;
}

/* The entry for a scene and thread setting: variant "default" when
 * want_default, else the fastest 16-bit-label variant ("16u-*"). */
static const struct cv_entry *cv_find(const struct cv_file *cf, int w, int h, int colours, int per,
                                      bool noisy, int threads, bool want_default)
{
    const struct cv_entry *best = NULL;
    for (int i = 0; i < cf->n; i++) {
        const struct cv_entry *e = &cf->e[i];
        if (e->width != w || e->height != h || e->colours != colours || e->per != per ||
            e->noisy != (int)noisy || e->threads != threads)
            continue;
        if (want_default ? strcmp(e->variant, "default") : strncmp(e->variant, "16u-", 4)) continue;
        if (!best || e->median_ms < best->median_ms) best = e;
    }
    return best;
}

/* OpenCV's components against our lists, colour by colour. "top" holds
 * OpenCV's components with area >= min_area sorted by area descending,
 * cut after the K-th but keeping every tie of the K-th area; "count" is how
 * many there are in all. Ours must be a prefix by area, each blob's
 * (area, bbox) one of OpenCV's, and as many as min(K, count). Returns the
 * number of colours that differ (first differences on stderr). */
static int cv_check(const struct trk_json *check, const char *scene, int colours,
                    struct trk_blob (*truth)[TRK_MAX_BLOBS], const int *truth_n, int k)
{
    if (!check || check->type != TRK_JSON_ARRAY || (int)check->n != colours) {
        fprintf(stderr, "OPENCV BLOB MISMATCH on %s: no per-colour \"check\" list\n", scene);
        return 1;
    }
    int bad = 0;
    for (int c = 0; c < colours; c++) {
        const struct trk_json *cc = &check->items[c];
        const struct trk_json *top = trk_json_get(cc, "top");
        int count = (int)trk_json_num(cc, "count", -1);
        const char *why = NULL;
        bool used[4 * TRK_MAX_BLOBS] = { false };
        if (!top || top->type != TRK_JSON_ARRAY || count < 0)
            why = "malformed entry";
        else if (truth_n[c] != (count < k ? count : k))
            why = "different number of blobs";
        for (int i = 0; !why && i < truth_n[c]; i++) {
            const struct trk_blob *b = &truth[c][i];
            if (i >= (int)top->n) {
                why = "fewer components";
                break;
            }
            const struct trk_json *t = &top->items[i];
            if (t->type != TRK_JSON_ARRAY || t->n != 5 || (uint64_t)t->items[0].number != b->mass) {
                why = "areas differ";
                break;
            }
            bool found = false;
            for (size_t j = 0; j < top->n && j < 4 * TRK_MAX_BLOBS && !found; j++) {
                const struct trk_json *u = &top->items[j];
                if (used[j] || u->type != TRK_JSON_ARRAY || u->n != 5) continue;
                found = (uint64_t)u->items[0].number == b->mass &&
                        (int)u->items[1].number == b->x0 && (int)u->items[2].number == b->y0 &&
                        (int)u->items[3].number == b->x1 && (int)u->items[4].number == b->y1;
                if (found) used[j] = true;
            }
            if (!found) why = "a bounding box differs";
        }
        if (why) {
            if (bad < 5)
                fprintf(stderr,
                        "OPENCV BLOB MISMATCH on %s, colour %d: %s (ours: %d blobs, OpenCV: %d "
                        "components >= min_area)\n",
                        scene, c, why, truth_n[c], count);
            bad++;
        }
    }
    return bad;
}

/* ----------------------------------------------------------- the floor */

/* One read of the frame on one core: a sum of its bytes, 8 at a time (the
 * compiler vectorises it), and a memcpy (read + write). Medians in ms. */
static volatile uint64_t floor_sink;

static void cpu_floor(const uint8_t *p, size_t n, int iters, double *sum_ms, double *copy_ms)
{
    double *t = malloc(sizeof(double) * (size_t)iters);
    uint8_t *dst = malloc(n);
    *sum_ms = *copy_ms = 0;
    if (!t || !dst) {
        free(t);
        free(dst);
        return;
    }
    memcpy(dst, p, n); /* touch every page once */
    for (int pass = 0; pass < 2; pass++) {
        for (int it = -1; it < iters; it++) {
            double t0 = trk_bench_now_ms();
            if (pass == 0) {
                uint64_t acc = 0;
                size_t i = 0;
                for (; i + 8 <= n; i += 8) {
                    uint64_t w;
                    memcpy(&w, p + i, 8);
                    acc += (w & 0x00ff00ff00ff00ffull) + ((w >> 8) & 0x00ff00ff00ff00ffull);
                }
                for (; i < n; i++)
                    acc += p[i];
                floor_sink = acc;
            } else {
                memcpy(dst, p, n);
                floor_sink = dst[n / 2];
            }
            if (it >= 0) t[it] = trk_bench_now_ms() - t0;
        }
        *(pass == 0 ? sum_ms : copy_ms) = trk_bench_median(t, (size_t)iters);
    }
    free(t);
    free(dst);
}

/* ------------------------------------------------------------- runners */

struct bl_runner {
    enum trk_backend_kind kind;
    int threads_arg, threads;
    struct trk_backend *b;
    char label[64];
};

static int bl_runners(const struct bl_opts *o, int maxw, int maxh, struct bl_runner *r, int *nr)
{
    int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    *nr = 0;
    for (int k = 0; k < o->nkinds; k++) {
        enum trk_backend_kind kind = o->kinds[k];
        int nt = kind == TRK_BACKEND_CPU ? o->nthreads : 1;
        for (int t = 0; t < nt && *nr < BL_MAX_LIST * 2; t++) {
            struct bl_runner *x = &r[*nr];
            memset(x, 0, sizeof(*x));
            x->kind = kind;
            x->threads_arg = kind == TRK_BACKEND_CPU       ? o->threads[t]
                             : kind == TRK_BACKEND_CPU_REF ? 1
                                                           : -1;
            x->threads = x->threads_arg == 0 ? cores : x->threads_arg;
            struct trk_backend_cfg cfg = { .kind = kind,
                                           .max_width = maxw,
                                           .max_height = maxh,
                                           .threads = x->threads_arg < 0 ? 0 : x->threads_arg };
            int err = trk_backend_create(&cfg, &x->b);
            if (err == TRK_ENODEV) {
                char why[256] = "";
                if (kind == TRK_BACKEND_CUDA) trk_cuda_available(why, sizeof(why));
                printf("# skipped backend %s: %s%s%s\n", kind == TRK_BACKEND_CUDA ? "cuda" : "?",
                       trk_strerror(err), why[0] ? ": " : "", why);
                break;
            }
            if (err) {
                fprintf(stderr, "trackd-bench blobs: creating backend kind %d: %s\n", (int)kind,
                        trk_strerror(err));
                return -1;
            }
            snprintf(x->label, sizeof(x->label), "%s", trk_backend_name(x->b));
            (*nr)++;
        }
    }
    return 0;
}

/* ---------------------------------------------------------- comparison */

static bool blob_equal(const struct trk_blob *a, const struct trk_blob *b)
{
    return a->mass == b->mass && a->sum_x == b->sum_x && a->sum_y == b->sum_y && a->x0 == b->x0 &&
           a->y0 == b->y0 && a->x1 == b->x1 && a->y1 == b->y1 && a->perimeter == b->perimeter &&
           a->first == b->first && a->sum_xx == b->sum_xx && a->sum_yy == b->sum_yy &&
           a->sum_xy == b->sum_xy;
}

/* The truth of one scene: cpu-ref's aggregates and blob lists. */
struct truth {
    struct trk_obj_result res[TRK_MAX_OBJECTS];
    int nb[TRK_MAX_OBJECTS];
    struct trk_blob blob[TRK_MAX_OBJECTS][TRK_MAX_BLOBS];
};

static void truth_take(struct truth *t, const struct trk_backend *b,
                       const struct trk_obj_result *res, int n)
{
    memcpy(t->res, res, sizeof(*res) * (size_t)n);
    for (int i = 0; i < n; i++) {
        const struct trk_blob *l = NULL;
        int nb = trk_backend_blobs(b, i, &l);
        t->nb[i] = nb > 0 ? nb : 0;
        if (nb > 0) memcpy(t->blob[i], l, sizeof(*l) * (size_t)nb);
    }
}

/* Aggregates always, blob lists when blobs are on; differences are printed
 * (the first few) and counted. */
static int check_frame(const char *label, const char *scene, const struct truth *t,
                       const struct trk_backend *b, const struct trk_obj_result *got, int n,
                       bool blobs)
{
    int bad = 0;
    for (int i = 0; i < n; i++) {
        const struct trk_obj_result *w = &t->res[i], *g = &got[i];
        if (w->mass != g->mass || w->sum_x != g->sum_x || w->sum_y != g->sum_y || w->x0 != g->x0 ||
            w->y0 != g->y0 || w->x1 != g->x1 || w->y1 != g->y1 || w->sum_xx != g->sum_xx ||
            w->sum_yy != g->sum_yy || w->sum_xy != g->sum_xy) {
            if (bad++ < 5)
                fprintf(stderr, "MISMATCH %s on %s, object %d: aggregate mass %llu, want %llu\n",
                        label, scene, i, (unsigned long long)g->mass, (unsigned long long)w->mass);
            continue;
        }
        if (!blobs) continue;
        const struct trk_blob *l = NULL;
        int nb = trk_backend_blobs(b, i, &l);
        int first_diff = -1;
        if (nb != t->nb[i]) first_diff = nb < t->nb[i] ? (nb < 0 ? 0 : nb) : t->nb[i];
        for (int j = 0; first_diff < 0 && j < nb; j++)
            if (!blob_equal(&l[j], &t->blob[i][j])) first_diff = j;
        if (first_diff < 0) continue;
        if (bad++ < 5) {
            fprintf(stderr,
                    "MISMATCH %s on %s, object %d: %d blobs, cpu-ref %d; first difference "
                    "at entry %d",
                    label, scene, i, nb, t->nb[i], first_diff);
            if (first_diff < nb && first_diff < t->nb[i]) {
                const struct trk_blob *x = &l[first_diff], *y = &t->blob[i][first_diff];
                fprintf(stderr,
                        ": got mass %llu box %d,%d,%d,%d perimeter %llu first %llu; cpu-ref "
                        "mass %llu box %d,%d,%d,%d perimeter %llu first %llu",
                        (unsigned long long)x->mass, x->x0, x->y0, x->x1, x->y1,
                        (unsigned long long)x->perimeter, (unsigned long long)x->first,
                        (unsigned long long)y->mass, y->x0, y->y0, y->x1, y->y1,
                        (unsigned long long)y->perimeter, (unsigned long long)y->first);
            }
            fprintf(stderr, "\n");
        }
    }
    return bad;
}

/* ---------------------------------------------------------------- rows */

struct bl_row {
    char scene[64];
    char backend[64]; /* a backend's label, or a baseline's / floor's name */
    const char *kind; /* "backend", "floor", "opencv", "npp" */
    int threads;      /* -1: not a CPU thread setting */
    int blobs;        /* 1 on, 0 off, -1 not applicable */
    int iters;
    double median_ms, kernel_ms, per_colour_ms;
    double x_cv, x_cv_fast, x_npp, x_floor;
    int match; /* 1 yes, 0 no, -1 not checked */
};

static void row_print(const struct bl_row *r)
{
    char thr[16], c1[16], c2[16], c3[16], c4[16], k[16], pc[16];
    if (r->threads < 0)
        snprintf(thr, sizeof(thr), "-");
    else
        snprintf(thr, sizeof(thr), "%d", r->threads);
    if (r->kernel_ms > 0)
        snprintf(k, sizeof(k), "%.3f", r->kernel_ms);
    else
        snprintf(k, sizeof(k), "-");
    if (r->per_colour_ms > 0)
        snprintf(pc, sizeof(pc), "%.3f", r->per_colour_ms);
    else
        snprintf(pc, sizeof(pc), "-");
    trk_bench_ratio(c1, sizeof(c1), r->x_cv);
    trk_bench_ratio(c2, sizeof(c2), r->x_cv_fast);
    trk_bench_ratio(c3, sizeof(c3), r->x_npp);
    trk_bench_ratio(c4, sizeof(c4), r->x_floor);
    printf("%-28s %-4s %-26s %4s %10.3f %9s %9s %8s %8s %8s %8s%s\n", r->scene,
           r->blobs < 0 ? "-"
           : r->blobs   ? "on"
                        : "off",
           r->backend, thr, r->median_ms, k, pc, c1, c2, c3, c4, r->match == 0 ? "  MISMATCH" : "");
    fflush(stdout);
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static int json_write(const char *path, const struct bl_opts *o, const struct bl_row *rows, int n,
                      int mismatches, int cv_bad, int npp_bad)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "trackd-bench blobs: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f, "{\n \"tool\": \"trackd-bench\", \"experiment\": \"blobs\",\n");
    fprintf(f, " \"seed\": %llu, \"warmup\": %d, \"iters\": %d, \"ref_iters\": %d,\n",
            (unsigned long long)o->seed, o->warmup, o->iters, o->ref_iters);
    fprintf(f, " \"opencv_blobs\": ");
    if (o->opencv)
        json_str(f, o->opencv);
    else
        fprintf(f, "null");
    fprintf(f, ",\n \"mismatches\": %d, \"opencv_mismatches\": %d, \"npp_mismatches\": %d,\n",
            mismatches, cv_bad, npp_bad);
    fprintf(f, " \"results\": [");
    for (int i = 0; i < n; i++) {
        const struct bl_row *r = &rows[i];
        fprintf(f, "%s\n  {\"scene\": ", i ? "," : "");
        json_str(f, r->scene);
        fprintf(f, ", \"kind\": \"%s\", \"name\": ", r->kind);
        json_str(f, r->backend);
        fprintf(f, ", \"threads\": %d, \"blobs\": %s, \"iters\": %d, \"median_ms\": %.4f",
                r->threads,
                r->blobs < 0 ? "null"
                : r->blobs   ? "true"
                             : "false",
                r->iters, r->median_ms);
        if (r->kernel_ms > 0) fprintf(f, ", \"kernel_ms\": %.4f", r->kernel_ms);
        if (r->per_colour_ms > 0) fprintf(f, ", \"per_colour_ms\": %.4f", r->per_colour_ms);
        if (r->x_cv > 0) fprintf(f, ", \"vs_opencv_default\": %.3f", r->x_cv);
        if (r->x_cv_fast > 0) fprintf(f, ", \"vs_opencv_fastest\": %.3f", r->x_cv_fast);
        if (r->x_npp > 0) fprintf(f, ", \"vs_npp\": %.3f", r->x_npp);
        if (r->x_floor > 0) fprintf(f, ", \"floor_multiple\": %.3f", r->x_floor);
        if (r->match >= 0) fprintf(f, ", \"match\": %s", r->match ? "true" : "false");
        fprintf(f, "}");
    }
    fprintf(f, "\n ]\n}\n");
    return fclose(f) ? -1 : 0;
}

/* ------------------------------------------------------------- the run */

/* Everything measured for one scene. */
struct scene_ctx {
    const struct bl_opts *o;
    const struct trk_scene *sc;
    const struct trk_image *img;
    int per;
    bool noisy;
    char name[64];
    struct truth *truth;
    double cpu_floor_ms, gpu_floor_ms;
    const struct cv_entry *cv_def[2], *cv_fast[2]; /* [0] 1 thread, [1] all cores */
    double npp_ms; /* label + compress, all masks; 0 when not measured */
};

/* Times one runner with the given objects; appends its row. */
static int time_row(struct scene_ctx *s, struct bl_runner *x, const struct trk_object_def *objs,
                    bool blobs, struct bl_row *r, int *mismatches)
{
    const int n = s->sc->n_objects;
    int err = trk_backend_set_objects(x->b, objs, n);
    if (err == TRK_ENODEV && blobs) {
        printf("# skipped %s blobs on, %s: %s (no blob lists in this backend yet)\n", x->label,
               s->name, trk_strerror(err));
        return 1;
    }
    if (err) {
        fprintf(stderr, "trackd-bench blobs: %s set_objects: %s\n", x->label, trk_strerror(err));
        return -1;
    }
    bool is_ref = x->kind == TRK_BACKEND_CPU_REF;
    int iters = is_ref ? s->o->ref_iters : s->o->iters, warm = is_ref ? 0 : s->o->warmup;
    double *tw = malloc(sizeof(double) * 2 * (size_t)iters), *tk = tw ? tw + iters : NULL;
    static struct trk_obj_result got[TRK_MAX_OBJECTS];
    if (!tw) return -1;
    int bad = 0;
    for (int it = -warm; it < iters; it++) {
        struct trk_backend_timing t = { 0 };
        double t0 = trk_bench_now_ms();
        err = trk_backend_process(x->b, s->img, NULL, got, &t);
        double dt = trk_bench_now_ms() - t0;
        if (err) {
            fprintf(stderr, "trackd-bench blobs: %s process: %s\n", x->label, trk_strerror(err));
            free(tw);
            return -1;
        }
        bad += check_frame(x->label, s->name, s->truth, x->b, got, n, blobs);
        if (it >= 0) tw[it] = dt, tk[it] = t.kernel_ms;
    }
    memset(r, 0, sizeof(*r));
    snprintf(r->scene, sizeof(r->scene), "%s", s->name);
    snprintf(r->backend, sizeof(r->backend), "%s", x->label);
    r->kind = "backend";
    r->threads = x->threads_arg < 0 ? -1 : x->threads;
    r->blobs = blobs;
    r->iters = iters;
    r->median_ms = trk_bench_median(tw, (size_t)iters);
    r->kernel_ms = x->kind == TRK_BACKEND_CUDA ? trk_bench_median(tk, (size_t)iters) : 0;
    r->match = bad == 0;
    if (bad) (*mismatches)++;
    /* Blobs-on rows against OpenCV with the same threads; CUDA rows against
     * OpenCV on all cores (its best on this machine). Blobs-off rows do
     * not label, so they get no OpenCV ratio: they are compared with the
     * blobs-on row above them. */
    int ti = x->threads_arg == 1 ? 0 : 1;
    if (blobs && s->cv_def[ti]) r->x_cv = s->cv_def[ti]->median_ms / r->median_ms;
    if (blobs && s->cv_fast[ti]) r->x_cv_fast = s->cv_fast[ti]->median_ms / r->median_ms;
    /* GPU rows: device time (the backend's kernel_ms) against NPP's device
     * work and the GPU read floor; CPU rows: wall time against the CPU
     * floor. */
    double own = r->kernel_ms > 0 ? r->kernel_ms : r->median_ms;
    if (x->kind == TRK_BACKEND_CUDA) {
        if (s->npp_ms > 0 && blobs) r->x_npp = s->npp_ms / own;
        if (s->gpu_floor_ms > 0) r->x_floor = own / s->gpu_floor_ms;
    } else if (s->cpu_floor_ms > 0) {
        r->x_floor = own / s->cpu_floor_ms;
    }
    free(tw);
    return 0;
}

static struct bl_row *row_add(struct bl_row **rows, int *n, int *cap)
{
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 64;
        struct bl_row *p = realloc(*rows, sizeof(**rows) * (size_t)nc);
        if (!p) return NULL;
        *rows = p, *cap = nc;
    }
    struct bl_row *r = &(*rows)[(*n)++];
    memset(r, 0, sizeof(*r));
    r->threads = -1, r->blobs = -1, r->match = -1;
    return r;
}

/* Up to 4 values of a list, for a mismatch line. */
static void fmt_masses(char *buf, size_t n, const uint64_t *v, int count)
{
    size_t k = 0;
    buf[0] = 0;
    for (int j = 0; j < count && j < 4 && k < n; j++)
        k += (size_t)snprintf(buf + k, n - k, "%s%llu", j ? " " : "", (unsigned long long)v[j]);
    if (count > 4 && k < n) snprintf(buf + k, n - k, " ...");
    if (count == 0) snprintf(buf, n, "none");
}

/* NPP's regions of mask i against cpu-ref: the mask's pixel count against
 * the aggregate mass (the same threshold), no label on both mask and
 * background pixels, then its foreground regions in list order (area desc,
 * first asc) against cpu-ref's list, entry by entry: mass, first pixel and
 * box. NPP has no min_area: past a full list it may have more regions;
 * short of K, the next one must be too small to count. 0 when alike, else
 * 1 with the first difference in `what` (values: NPP's vs ours). */
static int npp_compare(const struct scene_ctx *s, int i, const struct trk_bench_npp_mask *m,
                       char *what, size_t n)
{
    const struct trk_object_def *o = &s->sc->objects[i];
    const uint64_t min_area = o->min_area ? o->min_area : 1;
    const int nb = s->truth->nb[i];
    const struct trk_blob *l = s->truth->blob[i];
    if (m->mask_px != s->truth->res[i].mass) {
        snprintf(what, n, "mask pixels: NPP's mask %llu vs cpu-ref's aggregate mass %llu",
                 (unsigned long long)m->mask_px, (unsigned long long)s->truth->res[i].mass);
        return 1;
    }
    if (m->mixed) {
        snprintf(what, n, "%d NPP labels cover both mask and background pixels", m->mixed);
        return 1;
    }
    for (int j = 0; j < nb; j++) {
        if (j >= m->n_top) {
            snprintf(what, n, "entry %d: NPP has no region (%d foreground) vs cpu-ref mass %llu", j,
                     m->components, (unsigned long long)l[j].mass);
            return 1;
        }
        const struct trk_bench_npp_region *r = &m->top[j];
        if (r->area != l[j].mass) {
            snprintf(what, n, "entry %d: NPP area %llu vs cpu-ref mass %llu", j,
                     (unsigned long long)r->area, (unsigned long long)l[j].mass);
            return 1;
        }
        if (r->first != l[j].first || r->x0 != l[j].x0 || r->y0 != l[j].y0 || r->x1 != l[j].x1 ||
            r->y1 != l[j].y1) {
            snprintf(what, n,
                     "entry %d (area %llu): NPP first %llu box %d,%d,%d,%d vs cpu-ref first %llu "
                     "box %d,%d,%d,%d",
                     j, (unsigned long long)r->area, (unsigned long long)r->first, r->x0, r->y0,
                     r->x1, r->y1, (unsigned long long)l[j].first, l[j].x0, l[j].y0, l[j].x1,
                     l[j].y1);
            return 1;
        }
    }
    if (nb < o->blobs && nb < m->n_top && m->top[nb].area >= min_area) {
        snprintf(what, n, "entry %d: NPP area %llu (>= min_area %llu) vs none in cpu-ref's list",
                 nb, (unsigned long long)m->top[nb].area, (unsigned long long)min_area);
        return 1;
    }
    return 0;
}

/* NPP on the scene's masks (when this build has it): one row per stage
 * (mean of the per-mask medians), one for label + compress over all masks
 * and one host wall clock for everything; the regions NPP found are checked
 * against cpu-ref's blob lists (npp_compare). Returns the mismatching masks. */
static int npp_rows(struct scene_ctx *s, struct bl_row **rows, int *nrows, int *cap)
{
    const int n = s->sc->n_objects;
    struct trk_bench_npp_mask *m = calloc((size_t)n, sizeof(*m));
    double all_ms = 0;
    char why[256] = "";
    if (!m) return 0;
    if (trk_bench_npp_blobs(s->sc->rgb, s->sc->width, s->sc->height, s->sc->objects, n,
                            s->o->npp_iters, m, &all_ms, why, sizeof(why))) {
        printf("# skipped npp on %s: %s\n", s->name, why);
        free(m);
        return 0;
    }
    double label = 0, comp = 0, info = 0;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        label += m[i].label_ms, comp += m[i].compress_ms, info += m[i].info_ms;
        char what[256];
        const bool differ = npp_compare(s, i, &m[i], what, sizeof(what)) != 0;
        /* What NPP's numbering and info list look like (mask 0, and every
         * mask that differs): the docs leave both open. */
        if (i == 0 || (differ && bad < 5)) {
            const struct trk_bench_npp_mask *k = &m[i];
            char info_s[160];
            if (k->n_top == 0)
                snprintf(info_s, sizeof(info_s), "no foreground region to look up");
            else if (k->info_base < 0)
                snprintf(info_s, sizeof(info_s),
                         "no entry holds the largest region's area %llu (entry label: %u, "
                         "label - 1: %u)",
                         (unsigned long long)k->top[0].area, k->info_at[0], k->info_at[1]);
            else
                snprintf(info_s, sizeof(info_s),
                         "entry = label%s, %d of %d foreground areas differ, largest's rect "
                         "%d,%d %dx%d",
                         k->info_base ? " - 1" : "", k->info_bad, k->components, k->info_box[0],
                         k->info_box[1], k->info_box[2], k->info_box[3]);
            printf("# npp on %s, mask %d: compress returned %d; labels %u..%u in the image, %d "
                   "regions (%d foreground); info list (%d entries): %s\n",
                   s->name, i, k->max_id, k->label_min, k->label_max, k->regions, k->components,
                   k->info_entries, info_s);
        }
        if (differ && bad++ < 5) {
            fflush(stdout); /* the line above first */
            uint64_t a[4], w[4];
            for (int j = 0; j < 4; j++) {
                a[j] = j < m[i].n_top ? m[i].top[j].area : 0;
                w[j] = j < s->truth->nb[i] ? s->truth->blob[i][j].mass : 0;
            }
            char na[64], nw[64];
            fmt_masses(na, sizeof(na), a, m[i].n_top);
            fmt_masses(nw, sizeof(nw), w, s->truth->nb[i]);
            fprintf(stderr,
                    "NPP MISMATCH on %s, mask %d: %s (NPP foreground areas: %s; cpu-ref masses: "
                    "%s)\n",
                    s->name, i, what, na, nw);
        }
    }
    s->npp_ms = label + comp;
    /* Device times (CUDA events) unless named wall; the threshold kernel
     * that makes each mask is outside every device time. */
    const char *names[4] = { "npp label 8-way, dev/mask", "npp compress, dev/mask",
                             "npp info+contours dev/mask", "npp label+compress, dev" };
    double v[4] = { label / n, comp / n, info / n, label + comp };
    for (int k = 0; k < 4; k++) {
        struct bl_row *r = row_add(rows, nrows, cap);
        if (!r) break;
        snprintf(r->scene, sizeof(r->scene), "%s", s->name);
        snprintf(r->backend, sizeof(r->backend), "%s", names[k]);
        r->kind = "npp";
        r->iters = s->o->npp_iters;
        r->median_ms = r->kernel_ms = v[k];
        if (k == 3) r->match = bad == 0, r->per_colour_ms = v[k] / n;
        row_print(r);
    }
    struct bl_row *r = row_add(rows, nrows, cap);
    if (r) {
        snprintf(r->scene, sizeof(r->scene), "%s", s->name);
        snprintf(r->backend, sizeof(r->backend), "npp mask..info, wall");
        r->kind = "npp";
        r->iters = s->o->npp_iters;
        r->median_ms = all_ms;
        r->per_colour_ms = all_ms / n;
        row_print(r);
    }
    free(m);
    return bad;
}

/* --dump DIR: writes the blob scenes and exits (64-style exit codes). */
static int dump_blob_scenes(const struct bl_opts *o)
{
    if (mkdir(o->dump, 0777) && errno != EEXIST) {
        fprintf(stderr, "trackd-bench blobs: mkdir %s: %s\n", o->dump, strerror(errno));
        return 74;
    }
    int nd = 0;
    for (int s = 0; s < o->nsizes; s++)
        for (int l = 0; l < o->nlayouts; l++)
            for (int z = 0; z < o->nnoise; z++) {
                struct trk_scene sc;
                int err = blob_scene(o->sizes[s][0], o->sizes[s][1], o->layouts[l][0],
                                     o->layouts[l][1], o->noise[z], o->seed, &sc);
                if (err) {
                    fprintf(stderr, "trackd-bench blobs: scene: %s\n", trk_strerror(err));
                    return 1;
                }
                err = dump_scene(o->dump, &sc, o->layouts[l][1], o->noise[z], o->seed);
                trk_scene_free(&sc);
                if (err) return 74;
                nd++;
            }
    printf("wrote %d blob scenes to %s\n", nd, o->dump);
    return 0;
}

/* One run of the experiment: what every scene shares, and its tallies. */
struct bl_run {
    const struct bl_opts *o;
    struct bl_runner *runners;
    int nr;
    struct trk_backend *ref; /* the truth, untimed */
    struct truth *truth;
    struct cv_file cv;
    bool any_cuda, have_gpu_floor, have_npp;
    struct bl_row *rows;
    int nrows, cap, mismatches, cv_bad, npp_bad;
};

static void print_head(const struct bl_run *R)
{
    const struct bl_opts *o = R->o;
    printf("# trackd-bench --experiment blobs: seed %llu, warmup %d, iters %d (cpu-ref %d); "
           "times are medians in ms; truth: %s\n",
           (unsigned long long)o->seed, o->warmup, o->iters, o->ref_iters,
           o->truth == TRK_BACKEND_CPU ? "cpu (all cores)" : "cpu-ref");
    if (!R->have_npp)
        printf("# npp: not in this build (CUDA with NPP only)\n");
    else
        printf("# npp rows, per mask (mean over the masks; CUDA events, medians of --npp-iters; "
               "the threshold kernel that makes each mask is not timed): label 8-way = "
               "nppiLabelMarkersUF, compress = nppiCompressMarkerLabelsUF, info+contours = "
               "nppiCompressedMarkerLabelsUFInfo with its contour images; label+compress, dev = "
               "those two summed over all masks (per_col: per mask); mask..info, wall = threshold, "
               "label, compress and info of every mask one after the other, host clock, a sync "
               "per mask\n");
    printf("# blobs on = each object's blob list (K = blobs per colour); off = the same objects, "
           "aggregates only\n");
    printf("# x cv / x cv-fast: OpenCV default path / fastest 16-bit variant, same threads (cuda: "
           "all cores), over this time; x npp: NPP label+compress of all masks over the cuda "
           "kernel time; x floor: this time over the one-read floor\n");
    printf("%-28s %-4s %-26s %4s %10s %9s %9s %8s %8s %8s %8s\n", "scene", "blob", "backend", "thr",
           "median_ms", "kernel", "per_col", "x cv", "x cv-fast", "x npp", "x floor");
}

/* A new row of the scene named name (NULL when out of memory). */
static struct bl_row *scene_row(struct bl_run *R, const struct scene_ctx *s, const char *backend,
                                const char *kind)
{
    struct bl_row *r = row_add(&R->rows, &R->nrows, &R->cap);
    if (!r) return NULL;
    snprintf(r->scene, sizeof(r->scene), "%s", s->name);
    snprintf(r->backend, sizeof(r->backend), "%s", backend);
    r->kind = kind;
    return r;
}

/* The floors: a CPU read and copy of the frame, and a GPU read when a cuda
 * runner is measured and this build has the hook. */
static void floor_rows(struct bl_run *R, struct scene_ctx *s)
{
    const struct trk_scene *sc = s->sc;
    const size_t bytes = (size_t)sc->width * (size_t)sc->height * 3;
    struct bl_row *r = scene_row(R, s, "floor: cpu read (sum)", "floor");
    if (r) {
        double copy_ms;
        cpu_floor(sc->rgb, bytes, R->o->iters, &s->cpu_floor_ms, &copy_ms);
        r->threads = 1, r->iters = R->o->iters;
        r->median_ms = s->cpu_floor_ms;
        row_print(r);
        if ((r = scene_row(R, s, "floor: cpu memcpy", "floor"))) {
            r->threads = 1, r->iters = R->o->iters;
            r->median_ms = copy_ms;
            row_print(r);
        }
    }
    if (R->any_cuda && R->have_gpu_floor &&
        trk_bench_cuda_read_ms(sc->rgb, bytes, R->o->iters, &s->gpu_floor_ms) == 0 &&
        (r = scene_row(R, s, "floor: gpu read", "floor"))) {
        r->iters = R->o->iters;
        r->median_ms = r->kernel_ms = s->gpu_floor_ms;
        row_print(r);
    }
}

/* The OpenCV baseline's rows for the scene (1 thread and all cores, its
 * default and fastest variants); the default's components are checked
 * against cpu-ref's blob lists. */
static void opencv_rows(struct bl_run *R, struct scene_ctx *s, int colours)
{
    static const int thr[2] = { 1, 0 };
    const struct trk_scene *sc = s->sc;
    for (int t = 0; t < 2; t++) {
        s->cv_def[t] =
            cv_find(&R->cv, sc->width, sc->height, colours, s->per, s->noisy, thr[t], true);
        s->cv_fast[t] =
            cv_find(&R->cv, sc->width, sc->height, colours, s->per, s->noisy, thr[t], false);
        const struct cv_entry *e2[2] = { s->cv_def[t], s->cv_fast[t] };
        for (int v = 0; v < 2; v++) {
            struct bl_row *r;
            if (!e2[v] || !(r = row_add(&R->rows, &R->nrows, &R->cap))) continue;
            snprintf(r->scene, sizeof(r->scene), "%s", s->name);
            snprintf(r->backend, sizeof(r->backend), "opencv %s", e2[v]->variant);
            r->kind = "opencv", r->threads = thr[t];
            r->median_ms = e2[v]->median_ms;
            r->per_colour_ms = e2[v]->median_ms / colours;
            if (v == 0) {
                int b =
                    cv_check(e2[v]->check, s->name, colours, R->truth->blob, R->truth->nb, s->per);
                r->match = b == 0;
                R->cv_bad += b;
            }
            row_print(r);
        }
    }
    if (!s->cv_def[0] && !s->cv_def[1])
        printf("# no OpenCV entry for %s in %s\n", s->name, R->o->opencv);
}

/* Every runner with blobs on, then off. 0, or 1 when a backend failed. */
static int backend_rows(struct bl_run *R, struct scene_ctx *s, int colours)
{
    static struct trk_object_def off[TRK_MAX_OBJECTS];
    for (int i = 0; i < colours; i++) {
        off[i] = s->sc->objects[i];
        off[i].blobs = 0;
    }
    for (int ri = 0; ri < R->nr; ri++)
        for (int on = 1; on >= 0; on--) {
            struct bl_row tmp, *r;
            int rc =
                time_row(s, &R->runners[ri], on ? s->sc->objects : off, on, &tmp, &R->mismatches);
            if (rc < 0) return 1;
            if (rc != 0) continue;
            tmp.per_colour_ms = tmp.median_ms / colours;
            if ((r = row_add(&R->rows, &R->nrows, &R->cap))) {
                *r = tmp;
                row_print(r);
            }
        }
    return 0;
}

/* The truth of the scene (cpu-ref, untimed) and its summary line. 0 or 1. */
static int scene_truth(struct bl_run *R, const struct scene_ctx *s, int colours)
{
    static struct trk_obj_result res[TRK_MAX_OBJECTS];
    double t0 = trk_bench_now_ms();
    int err;
    if ((err = trk_backend_set_objects(R->ref, s->sc->objects, colours)) ||
        (err = trk_backend_process(R->ref, s->img, NULL, res, NULL))) {
        fprintf(stderr, "trackd-bench blobs: cpu-ref: %s\n", trk_strerror(err));
        return 1;
    }
    truth_take(R->truth, R->ref, res, colours);
    int nblobs = 0, nfull = 0;
    for (int c = 0; c < colours; c++)
        nblobs += R->truth->nb[c], nfull += R->truth->nb[c] == s->per;
    printf("# %s: cpu-ref truth in %.0f ms: %d blobs listed, %d of %d colours "
           "with all %d\n",
           s->name, trk_bench_now_ms() - t0, nblobs, nfull, colours, s->per);
    return 0;
}

/* One blob scene: its truth, the baselines first (their numbers are the
 * ratios' numerators), then every runner. 0, or 1 on a failure. */
static int run_scene(struct bl_run *R, int w, int h, int colours, int per, bool noisy)
{
    struct trk_scene sc;
    uint8_t *buf = NULL;
    struct trk_image img;
    int err;
    if ((err = blob_scene(w, h, colours, per, noisy, R->o->seed, &sc)) ||
        (err = trk_image_from_rgb(sc.rgb, w, h, TRK_FMT_RGB24, TRK_MATRIX_BT601, true, 0, &buf,
                                  &img))) {
        fprintf(stderr, "trackd-bench blobs: scene: %s\n", trk_strerror(err));
        trk_scene_free(&sc);
        return 1;
    }
    struct scene_ctx s = {
        .o = R->o, .sc = &sc, .img = &img, .per = per, .noisy = noisy, .truth = R->truth
    };
    snprintf(s.name, sizeof(s.name), "%dx%d %dx%d %s", w, h, colours, per,
             noisy ? "noisy" : "clean");
    int failed = scene_truth(R, &s, colours);
    if (!failed) {
        floor_rows(R, &s);
        if (R->any_cuda && R->have_npp) R->npp_bad += npp_rows(&s, &R->rows, &R->nrows, &R->cap);
        if (R->o->opencv) opencv_rows(R, &s, colours);
        failed = backend_rows(R, &s, colours);
    }
    free(buf);
    trk_scene_free(&sc);
    return failed;
}

/* The runners and the truth backend for frames up to the largest size. */
static int run_open(struct bl_run *R)
{
    static struct bl_runner runners[BL_MAX_LIST * 2];
    const struct bl_opts *o = R->o;
    int maxw = 1, maxh = 1;
    for (int s = 0; s < o->nsizes; s++) {
        if (o->sizes[s][0] > maxw) maxw = o->sizes[s][0];
        if (o->sizes[s][1] > maxh) maxh = o->sizes[s][1];
    }
    R->runners = runners;
    if (bl_runners(o, maxw, maxh, runners, &R->nr)) return 1;
    /* The truth: cpu-ref once per scene, untimed (a cpu-ref row, when
     * asked for, is timed on its own instance). */
    struct trk_backend_cfg rcfg = { .kind = o->truth, .max_width = maxw, .max_height = maxh };
    int err = trk_backend_create(&rcfg, &R->ref);
    R->truth = calloc(1, sizeof(*R->truth));
    if (err || !R->truth) {
        fprintf(stderr, "trackd-bench blobs: truth backend: %s\n",
                trk_strerror(err ? err : TRK_ENOMEM));
        return 1;
    }
    for (int i = 0; i < R->nr; i++)
        R->any_cuda = R->any_cuda || runners[i].kind == TRK_BACKEND_CUDA;
    R->have_gpu_floor = trk_bench_cuda_read_ms != NULL;
    R->have_npp = trk_bench_npp_blobs != NULL;
    return 0;
}

static int run_blobs(int argc, char **argv)
{
    struct bl_opts o;
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        bl_usage(stdout);
        return 0;
    }
    if (bl_parse(argc, argv, &o)) {
        bl_usage(stderr);
        return 64;
    }
    if (o.dump) return dump_blob_scenes(&o);

    struct bl_run R = { .o = &o };
    if (o.opencv && cv_load(o.opencv, &R.cv)) return 66;
    if (run_open(&R)) return 1;
    print_head(&R);

    int failed = 0;
    for (int si = 0; si < o.nsizes && !failed; si++)
        for (int li = 0; li < o.nlayouts && !failed; li++)
            for (int zi = 0; zi < o.nnoise && !failed; zi++)
                failed = run_scene(&R, o.sizes[si][0], o.sizes[si][1], o.layouts[li][0],
                                   o.layouts[li][1], o.noise[zi]);

    if (o.json && json_write(o.json, &o, R.rows, R.nrows, R.mismatches, R.cv_bad, R.npp_bad))
        failed = 1;
    if (R.mismatches)
        fprintf(stderr,
                "trackd-bench blobs: %d row(s) where a backend differs from cpu-ref: see "
                "MISMATCH lines above\n",
                R.mismatches);
    if (R.cv_bad)
        fprintf(stderr, "trackd-bench blobs: OpenCV's components differ from cpu-ref's blobs "
                        "(different seed or scenes?): see OPENCV BLOB MISMATCH lines\n");
    for (int i = 0; i < R.nr; i++)
        trk_backend_destroy(&R.runners[i].b);
    trk_backend_destroy(&R.ref);
    free(R.truth);
    free(R.rows);
    free(R.cv.e);
    trk_json_free(R.cv.root);
    return failed || R.mismatches || R.cv_bad || R.npp_bad ? 1 : 0;
}

static const struct trk_bench_experiment blobs_exp = {
    "blobs", "blob lists per colour vs OpenCV, NPP and the read floor (issue 12)", run_blobs
};

__attribute__((constructor)) static void register_blobs(void)
{
    trk_bench_register(&blobs_exp);
}
