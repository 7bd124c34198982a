/* trackd-bench --experiment rrm: the regional multiple reduction against the
 * full-frame pass on moving-object scenes (issue 13).
 *
 * M instances (disks of the standard radius, 2% of the short side) move on
 * known straight paths that bounce off the frame's edges, C = min(M, 128)
 * colours (the standard scene's palette), ceil(M / C) instances a colour.
 * Per frame and backend, both modes on the same picture, each one whole call
 * from host memory (upload included for GPU backends):
 *   full: trk_backend_process over the frame, blobs on (K = instances a
 *         colour), what the tracker's re-acquisition pass costs;
 *   roi:  trk_backend_process_regions, one region per instance around its
 *         true position (the disk's box + --margin), blobs on.
 * Checked every frame: each instance whose region holds no other disk of its
 * colour and whose disk no later-painted disk covers must have, in its
 * region, the aggregate of the true disk (mass = disk area, centroid = the
 * true centre exactly) and as its first blob the full pass's blob with the
 * same first pixel, field by field. A difference prints MISMATCH and makes
 * the exit status 1. Medians over frames, ratios full / roi, and the bytes
 * each mode uploaded (timing.upload_bytes; 0 on CPU backends).
 * CUDA rows come once per regional design of --rrm (the flat work list, the
 * seed's quadrant/patch layout with alpha and beta chosen per call, or given
 * as seed:AxB), column rrm saying which ran: the designs side by side and
 * an alpha/beta sweep in one run.
 */
#include "bench.h"

#include "backend.h"
#include "scene.h"
#include "tracker.h"

#include <errno.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RR_MAX_LIST 16
#define RR_MAX_INST 1024
#define RR_SEED     20240613u

/* The CUDA backend's regional design (gpu/cuda/bench_hooks.h), weak: a
 * build without CUDA has no such symbols and its rows say "-". */
int trk_cuda_rrm_config(struct trk_backend *b, int design, int alpha, int beta)
    __attribute__((weak));
int trk_cuda_rrm_used(struct trk_backend *b, int *design, int *alpha, int *beta)
    __attribute__((weak));

struct rr_opts {
    int nsizes, sizes[RR_MAX_LIST][2];
    int ninst, inst[RR_MAX_LIST];
    int nkinds;
    enum trk_backend_kind kinds[RR_MAX_LIST];
    int nthreads, threads[RR_MAX_LIST];
    int frames, warmup, margin;
    int radius;  /* --radius: disk radius in pixels, 0 = 2% of the short side */
    bool pinned; /* --host pinned: frames in pinned host memory, as the daemon has them */
    int tracker, full_every;              /* --regions tracker: daemon/tracker.c asks */
    int ndesigns, design[RR_MAX_LIST][3]; /* --rrm: design, alpha, beta */
    uint64_t seed;
    const char *json;
};

static void rr_usage(FILE *f)
{
    fprintf(f,
            "usage: trackd-bench --experiment rrm [options]\n"
            "  --sizes WxH,...      frame sizes (default 1920x1080,3840x2160)\n"
            "  --instances M,...    tracked instances (default 1,2,4,8,16,32,64,128,256)\n"
            "  --backends K,...     cpu-ref, cpu, cuda (default cpu,cuda)\n"
            "  --threads N,...      CPU thread counts, 0 = all cores (default 1,0)\n"
            "  --frames N           timed frames per row (default 20)\n"
            "  --warmup N           untimed frames first (default 2)\n"
            "  --margin PX          region = disk box + PX each side (default 10)\n"
            "  --radius PX          disk radius in pixels at every size (default 0: 2%% of\n"
            "                       the short side, so 4K disks are 4x the 1080p area)\n"
            "  --host pinned|pageable  host memory of the frames (default pinned: the\n"
            "                       daemon's frame pool is the CUDA backend's pinned memory;\n"
            "                       plain memory on CPU-only runs)\n"
            "  --regions R          true: regions around the true disks (default);\n"
            "                       tracker: the daemon's tracker (daemon/tracker.c) in\n"
            "                       full mode against roi mode, its own regions, reruns\n"
            "                       and periodic full frames included\n"
            "  --full-every K       tracker roi mode's full-frame period (default 15)\n"
            "  --rrm D,...          CUDA regional designs: flat, seed (alpha, beta per call)\n"
            "                       or seed:AxB (alpha A, beta B; default flat,seed)\n"
            "  --seed N             paths seed (default %u)\n"
            "  --json FILE          write the rows as JSON\n",
            RR_SEED);
}

/* --backends' items: any kind but auto. */
static int one_kind(const char *t, int i, void *ctx)
{
    const int k = trk_backend_kind_parse(t);
    if (k < 0 || k == TRK_BACKEND_AUTO) return -1;
    ((struct rr_opts *)ctx)->kinds[i] = (enum trk_backend_kind)k;
    return 0;
}

/* --rrm's items: flat, seed or seed:AxB (CUDA's regional designs). */
static int one_design(const char *t, int i, void *ctx)
{
    int *d = ((struct rr_opts *)ctx)->design[i], used = 0;
    d[0] = d[1] = d[2] = 0;
    if (!strcmp(t, "flat"))
        d[0] = 2;
    else if (!strcmp(t, "seed"))
        d[0] = 1;
    else if (sscanf(t, "seed:%dx%d%n", &d[1], &d[2], &used) == 2 && !t[used] && d[2] >= 1 &&
             d[1] >= d[2] && d[1] <= 64 && d[1] % d[2] == 0)
        d[0] = 1;
    else
        return -1;
    return 0;
}

static int rr_parse(int argc, char **argv, struct rr_opts *o)
{
    static const int inst0[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256 };
    *o = (struct rr_opts){
        .frames = 20, .warmup = 2, .margin = 10, .pinned = true, .seed = RR_SEED
    };
    o->nsizes = 2;
    o->sizes[0][0] = 1920, o->sizes[0][1] = 1080, o->sizes[1][0] = 3840, o->sizes[1][1] = 2160;
    o->ninst = 9;
    memcpy(o->inst, inst0, sizeof(inst0));
    o->nkinds = 2, o->kinds[0] = TRK_BACKEND_CPU, o->kinds[1] = TRK_BACKEND_CUDA;
    o->nthreads = 2, o->threads[0] = 1, o->threads[1] = 0;
    o->ndesigns = 2;
    o->design[0][0] = 2, o->design[1][0] = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "--help")) {
            rr_usage(stdout);
            exit(0);
        }
        if (!v) {
            fprintf(stderr, "trackd-bench rrm: unknown or incomplete option %s\n", a);
            return -1;
        }
        i++;
        if (!strcmp(a, "--sizes")) {
            bad = (o->nsizes = trk_bench_pair_list(v, RR_MAX_LIST, 16, 16384, o->sizes)) < 0;
        } else if (!strcmp(a, "--instances")) {
            bad = (o->ninst = trk_bench_int_list(v, RR_MAX_LIST, 1, RR_MAX_INST, o->inst)) < 0;
        } else if (!strcmp(a, "--threads")) {
            bad = (o->nthreads = trk_bench_int_list(v, RR_MAX_LIST, 0, 1024, o->threads)) < 0;
        } else if (!strcmp(a, "--backends")) {
            bad = (o->nkinds = trk_bench_list(v, RR_MAX_LIST, one_kind, o)) < 0;
        } else if (!strcmp(a, "--rrm")) {
            bad = (o->ndesigns = trk_bench_list(v, RR_MAX_LIST, one_design, o)) < 0;
        } else if (!strcmp(a, "--frames")) {
            bad = trk_bench_int(v, 1, 100000, &o->frames);
        } else if (!strcmp(a, "--warmup")) {
            bad = trk_bench_int(v, 0, 100000, &o->warmup);
        } else if (!strcmp(a, "--margin")) {
            bad = trk_bench_int(v, 0, 4096, &o->margin);
        } else if (!strcmp(a, "--radius")) {
            bad = trk_bench_int(v, 0, 4096, &o->radius);
        } else if (!strcmp(a, "--host")) {
            o->pinned = !strcmp(v, "pinned");
            bad = !o->pinned && strcmp(v, "pageable");
        } else if (!strcmp(a, "--regions")) {
            o->tracker = !strcmp(v, "tracker");
            bad = !o->tracker && strcmp(v, "true");
        } else if (!strcmp(a, "--full-every")) {
            bad = trk_bench_int(v, 1, 1000000, &o->full_every);
        } else if (!strcmp(a, "--seed")) {
            bad = trk_bench_seed(v, &o->seed);
        } else if (!strcmp(a, "--json")) {
            o->json = v;
        } else {
            fprintf(stderr, "trackd-bench rrm: unknown option %s\n", a);
            return -1;
        }
        if (bad) {
            fprintf(stderr, "trackd-bench rrm: bad value for %s: %s\n", a, v);
            return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------ the scene */

/* One scene: the background, the palette, every instance's path. */
struct rr_scene {
    int w, h, m, colours, per, r;
    uint8_t *bg, *rgb; /* RGB24, pitch 3 w: the background, and this frame */
    uint8_t col[TRK_MAX_OBJECTS][3];
    struct trk_object_def objs[TRK_MAX_OBJECTS];
    int x0[RR_MAX_INST], y0[RR_MAX_INST], vx[RR_MAX_INST], vy[RR_MAX_INST];
    int cx[RR_MAX_INST], cy[RR_MAX_INST]; /* this frame */
    uint64_t noise;                       /* the disks' noise stream */
};

static int rr_rnd(uint64_t *st, int lo, int hi)
{
    return lo + (int)(trk_rand_next(st) % (uint64_t)(hi - lo + 1));
}

/* p + v t reflected into [lo, hi] (a bounce off each edge). */
static int bounce(int p, int v, int t, int lo, int hi)
{
    const long span = hi - lo;
    if (span <= 0) return lo;
    long q = ((long)p - lo + (long)v * t) % (2 * span);
    if (q < 0) q += 2 * span;
    return (int)(lo + (q <= span ? q : 2 * span - q));
}

/* Where frames live with --host pinned: a CUDA backend's host memory (any
 * CUDA backend uploads it directly); NULL = malloc. */
static struct trk_backend *rr_host;

static int rr_scene_make(struct rr_scene *s, int w, int h, int m, int radius, uint64_t seed)
{
    memset(s, 0, offsetof(struct rr_scene, x0));
    s->w = w, s->h = h, s->m = m;
    s->colours = m < 128 ? m : 128;
    s->per = (m + s->colours - 1) / s->colours;
    const int shortside = w < h ? w : h;
    s->r = (shortside * 2 + 50) / 100 > 0 ? (shortside * 2 + 50) / 100 : 1;
    if (radius > 0) s->r = radius;
    if (2 * s->r + 1 > w || 2 * s->r + 1 > h) return TRK_EINVAL;
    struct trk_scene pal;
    int err = trk_scene_standard(1, 1, s->colours, 0, &pal);
    if (err) return err;
    for (int c = 0; c < s->colours; c++) {
        s->objs[c] = pal.objects[c];
        for (int ch = 0; ch < 3; ch++) {
            const struct trk_object_def *o = &pal.objects[c];
            s->col[c][ch] = (uint8_t)(o->lo[ch] == 0 ? o->hi[ch] - 8 : o->lo[ch] + 8);
        }
        s->objs[c].blobs = (uint16_t)(s->per < TRK_MAX_BLOBS ? s->per : TRK_MAX_BLOBS);
        s->objs[c].connectivity = 8;
    }
    trk_scene_free(&pal);
    const size_t bytes = (size_t)w * (size_t)h * 3;
    s->bg = malloc(bytes);
    s->rgb = rr_host ? trk_backend_host_alloc(rr_host, bytes) : malloc(bytes);
    if (!s->bg || !s->rgb) return TRK_ENOMEM;
    uint64_t st = seed;
    for (size_t i = 0; i < bytes; i += 3)
        s->bg[i] = s->bg[i + 1] = s->bg[i + 2] = (uint8_t)rr_rnd(&st, 60, 195);
    for (int i = 0; i < m; i++) {
        s->x0[i] = rr_rnd(&st, s->r, w - 1 - s->r);
        s->y0[i] = rr_rnd(&st, s->r, h - 1 - s->r);
        s->vx[i] = rr_rnd(&st, -9, 9); /* px/frame: different speeds, some still */
        s->vy[i] = rr_rnd(&st, -9, 9);
    }
    s->noise = st;
    return 0;
}

static void rr_scene_free(struct rr_scene *s)
{
    free(s->bg);
    if (rr_host)
        trk_backend_host_free(rr_host, s->rgb);
    else
        free(s->rgb);
    s->bg = s->rgb = NULL;
}

/* Frame t: the background, then every disk in instance order (a later disk
 * covers an earlier one), its colour +-3 (inside the +-8 box). */
static void rr_frame(struct rr_scene *s, int t)
{
    memcpy(s->rgb, s->bg, (size_t)s->w * (size_t)s->h * 3);
    for (int i = 0; i < s->m; i++) {
        const int cx = bounce(s->x0[i], s->vx[i], t, s->r, s->w - 1 - s->r);
        const int cy = bounce(s->y0[i], s->vy[i], t, s->r, s->h - 1 - s->r);
        s->cx[i] = cx, s->cy[i] = cy;
        const uint8_t *c = s->col[i % s->colours];
        for (int y = cy - s->r; y <= cy + s->r; y++)
            for (int x = cx - s->r; x <= cx + s->r; x++) {
                if (x < 0 || y < 0 || x >= s->w || y >= s->h) continue;
                if ((x - cx) * (x - cx) + (y - cy) * (y - cy) > s->r * s->r) continue;
                uint8_t *p = s->rgb + ((size_t)y * (size_t)s->w + (size_t)x) * 3;
                for (int ch = 0; ch < 3; ch++) {
                    const int v = c[ch] + rr_rnd(&s->noise, -3, 3);
                    p[ch] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
                }
            }
    }
}

/* ------------------------------------------------------------- checking */

static bool rr_boxes_meet(int ax, int ay, int ar, int bx, int by, int br)
{
    return abs(ax - bx) <= ar + br && abs(ay - by) <= ar + br;
}

/* Whether instance i can be checked: no other disk of its colour reaches
 * its region, no later disk of any colour reaches its disk's box (a cover
 * would change the truth; an earlier one is painted over by i). */
static bool rr_checkable(const struct rr_scene *s, int i, int margin)
{
    for (int j = 0; j < s->m; j++) {
        if (j == i) continue;
        if (j % s->colours == i % s->colours &&
            rr_boxes_meet(s->cx[i], s->cy[i], s->r + margin + 1, s->cx[j], s->cy[j], s->r))
            return false;
        if (j > i && rr_boxes_meet(s->cx[i], s->cy[i], s->r + 1, s->cx[j], s->cy[j], s->r))
            return false;
    }
    return true;
}

/* ---------------------------------------------------------------- a row */

struct rr_row {
    double full_ms, roi_ms;
    uint64_t full_up, roi_up;
    long checked, bad;
    /* --regions tracker: roi mode's mean over frames (periodic full frames
     * and reruns included), its frames with a round over grown regions and
     * those that then took a whole-frame round (rounds 2 and 3). */
    double roi_mean_ms;
    long grown, whole;
    /* Medians of the processing thread's CPU time a frame: on a loaded
     * machine wall time also counts the time other processes had the
     * core. */
    double full_cpu_ms, roi_cpu_ms;
};

/* The scene's current frame as an image. */
static struct trk_image rr_image(const struct rr_scene *s)
{
    return (struct trk_image){ .plane = { s->rgb },
                               .pitch = { (size_t)s->w * 3 },
                               .width = s->w,
                               .height = s->h,
                               .fmt = TRK_FMT_RGB24 };
}

static int cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static int cmp_u(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Both modes on frames 0 .. warmup + frames - 1 of s through b. */
static int rr_run(struct trk_backend *b, struct rr_scene *s, const struct rr_opts *o,
                  struct rr_row *row)
{
    static struct trk_obj_result full[TRK_MAX_OBJECTS], reg[RR_MAX_INST];
    static struct trk_region regions[RR_MAX_INST];
    static struct trk_blob fb[TRK_MAX_OBJECTS][TRK_MAX_BLOBS];
    static int fn[TRK_MAX_OBJECTS];
    const int nf = o->frames;
    double *tf = calloc((size_t)nf * 2, sizeof(double));
    uint64_t *uf = calloc((size_t)nf * 2, sizeof(uint64_t));
    if (!tf || !uf) {
        free(tf);
        free(uf);
        return TRK_ENOMEM;
    }
    memset(row, 0, sizeof(*row));
    const uint64_t area = (uint64_t)trk_bench_disk_area(s->r);
    const int half = s->r + o->margin;
    int err = trk_backend_set_objects(b, s->objs, s->colours);
    for (int t = 0; !err && t < o->warmup + nf; t++) {
        rr_frame(s, t);
        const struct trk_image im = rr_image(s);
        for (int i = 0; i < s->m; i++)
            regions[i] = (struct trk_region){ i % s->colours,
                                              { s->cx[i] - half, s->cy[i] - half, s->cx[i] + half,
                                                s->cy[i] + half } };
        struct trk_backend_timing tm = { 0 };
        double t0 = trk_bench_now_ms();
        err = trk_backend_process(b, &im, NULL, full, &tm);
        const double full_ms = trk_bench_now_ms() - t0;
        if (err) break;
        const uint64_t full_up = tm.upload_bytes;
        for (int c = 0; c < s->colours; c++) {
            const struct trk_blob *l;
            fn[c] = trk_backend_blobs(b, c, &l);
            if (fn[c] > 0) memcpy(fb[c], l, (size_t)fn[c] * sizeof(*l));
        }
        memset(&tm, 0, sizeof(tm));
        t0 = trk_bench_now_ms();
        err = trk_backend_process_regions(b, &im, regions, s->m, reg, &tm);
        const double roi_ms = trk_bench_now_ms() - t0;
        if (err) break;
        if (t >= o->warmup) {
            tf[t - o->warmup] = full_ms, tf[nf + t - o->warmup] = roi_ms;
            uf[t - o->warmup] = full_up, uf[nf + t - o->warmup] = tm.upload_bytes;
        }
        /* Every checkable instance: the truth, and the full pass's blob. */
        for (int i = 0; i < s->m; i++) {
            if (!rr_checkable(s, i, o->margin)) continue;
            const int c = i % s->colours;
            const struct trk_obj_result *r = &reg[i];
            const struct trk_blob *l;
            const int nl = trk_backend_blobs(b, i, &l);
            const char *why = NULL;
            if (r->mass != area || r->sum_x != (uint64_t)s->cx[i] * area ||
                r->sum_y != (uint64_t)s->cy[i] * area)
                why = "region aggregate is not the true disk";
            else if (nl < 1 || l[0].mass != r->mass || l[0].sum_x != r->sum_x ||
                     l[0].sum_xx != r->sum_xx || l[0].sum_xy != r->sum_xy)
                why = "region blob is not the disk";
            else {
                int k = 0;
                while (k < fn[c] && fb[c][k].first != l[0].first)
                    k++;
                if (k == fn[c] || memcmp(&fb[c][k], &l[0], sizeof(l[0])))
                    why = "full-frame blob differs from the region's";
            }
            row->checked++;
            if (why) {
                if (row->bad < 5)
                    fprintf(stderr, "MISMATCH %s: %dx%d M=%d frame %d instance %d at %d,%d: %s\n",
                            trk_backend_name(b), s->w, s->h, s->m, t, i, s->cx[i], s->cy[i], why);
                row->bad++;
            }
        }
    }
    if (!err) {
        qsort(tf, (size_t)nf, sizeof(*tf), cmp_d);
        qsort(tf + nf, (size_t)nf, sizeof(*tf), cmp_d);
        qsort(uf, (size_t)nf, sizeof(*uf), cmp_u);
        qsort(uf + nf, (size_t)nf, sizeof(*uf), cmp_u);
        row->full_ms = tf[nf / 2], row->roi_ms = tf[nf + nf / 2];
        row->full_up = uf[nf / 2], row->roi_up = uf[nf + nf / 2];
    }
    free(tf);
    free(uf);
    return err;
}

/* One frame through tracker t as the daemon's pipeline runs it
 * (pipeline.c, track_frame): its rounds on b, each unit's blob list. */
static int rr_track_frame(struct trk_backend *b, struct trk_tracker *t, const struct trk_image *im,
                          uint64_t seq, int nobj, int *rounds)
{
    static struct trk_obj_result res[TRK_MAX_REGIONS];
    static const struct trk_blob *ub[TRK_MAX_REGIONS];
    static int un[TRK_MAX_REGIONS];
    struct trk_tracker_plan plan;
    int err = trk_tracker_begin(t, seq, im->width, im->height, &plan);
    *rounds = 0;
    for (int more = 1; !err && more == 1;) {
        const int n = plan.full ? nobj : plan.n;
        err = plan.full ? trk_backend_process(b, im, NULL, res, NULL)
                        : trk_backend_process_regions(b, im, plan.regions, plan.n, res, NULL);
        if (err) break;
        for (int j = 0; j < n; j++)
            un[j] = trk_backend_blobs(b, j, &ub[j]);
        more = trk_tracker_measure(t, res, ub, un, n, &plan);
        if (more < 0) err = more;
        ++*rounds;
    }
    return err;
}

static double rr_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* --regions tracker: the daemon's tracker in full mode and in roi mode on
 * the same frames, each frame's whole cost (backend rounds and tracker).
 * Checked every frame, on each instance that is checkable (rr_checkable
 * with the margin 0: apart from its colour's other disks and uncovered):
 * the roi tracker has an instance whose blob is the full tracker's blob
 * of that disk (same first pixel), field by field, so the centroid is
 * identical; and that instance keeps the id it had the last time the disk
 * was checkable (no id switch, through crossings at different speeds). */
static int rr_run_tracker(struct trk_backend *b, struct rr_scene *s, const struct rr_opts *o,
                          struct rr_row *row)
{
    static uint64_t idof[RR_MAX_INST], fidof[RR_MAX_INST];
    struct trk_tracker *tf = NULL, *tr = NULL;
    const int nf = o->frames;
    double *tm = calloc((size_t)nf * 4, sizeof(double)); /* wall, then cpu */
    struct trk_tracker_cfg cf = { .max_objects = s->colours, .mode = TRK_TRACK_FULL };
    struct trk_tracker_cfg cr = { .max_objects = s->colours,
                                  .mode = TRK_TRACK_ROI,
                                  .full_every = o->full_every };
    struct trk_object_def defs[TRK_MAX_OBJECTS];
    memcpy(defs, s->objs, sizeof(defs));
    for (int c = 0; c < s->colours; c++) {
        defs[c].track = true;
        defs[c].coast_frames = 10;
    }
    int err = !tm ? TRK_ENOMEM : trk_tracker_create(&cf, &tf);
    if (!err) err = trk_tracker_create(&cr, &tr);
    if (!err) err = trk_backend_set_objects(b, defs, s->colours);
    if (!err) err = trk_tracker_reset(tf, defs, s->colours);
    if (!err) err = trk_tracker_reset(tr, defs, s->colours);
    memset(row, 0, sizeof(*row));
    memset(idof, 0, sizeof(idof));
    memset(fidof, 0, sizeof(fidof));
    double sum = 0;
    for (int t = 0; !err && t < o->warmup + nf; t++) {
        rr_frame(s, t);
        const struct trk_image im = rr_image(s);
        int rf, rr;
        double c0 = rr_cpu_ms(), t0 = trk_bench_now_ms();
        err = rr_track_frame(b, tf, &im, (uint64_t)t, s->colours, &rf);
        const double full_ms = trk_bench_now_ms() - t0, full_cpu = rr_cpu_ms() - c0;
        if (err) break;
        c0 = rr_cpu_ms(), t0 = trk_bench_now_ms();
        err = rr_track_frame(b, tr, &im, (uint64_t)t, s->colours, &rr);
        const double roi_ms = trk_bench_now_ms() - t0, roi_cpu = rr_cpu_ms() - c0;
        if (err) break;
        if (t >= o->warmup) {
            tm[t - o->warmup] = full_ms, tm[nf + t - o->warmup] = roi_ms;
            tm[2 * nf + t - o->warmup] = full_cpu, tm[3 * nf + t - o->warmup] = roi_cpu;
            sum += roi_ms;
            row->grown += rr >= 2;
            row->whole += rr >= 3;
        }
        for (int i = 0; i < s->m; i++) {
            if (!rr_checkable(s, i, 0)) continue;
            const int c = i % s->colours;
            const struct trk_instance *vf, *vr;
            const int nvf = trk_tracker_instances(tf, c, &vf);
            const int nvr = trk_tracker_instances(tr, c, &vr);
            /* The full tracker's blob of disk i: the one holding its centre. */
            int a = 0, k = 0;
            while (a < nvf && (vf[a].lost || vf[a].blob.x0 > s->cx[i] || vf[a].blob.x1 < s->cx[i] ||
                               vf[a].blob.y0 > s->cy[i] || vf[a].blob.y1 < s->cy[i]))
                a++;
            const char *why = NULL;
            if (a == nvf) {
                why = "the full tracker has no instance on the disk";
            } else {
                while (k < nvr && (vr[k].lost || vr[k].blob.first != vf[a].blob.first))
                    k++;
                if (k == nvr)
                    why = "the roi tracker has no instance on the disk";
                else if (memcmp(&vr[k].blob, &vf[a].blob, sizeof(vr[k].blob)))
                    why = "the roi tracker's blob differs from the full tracker's";
                else if (idof[i] && idof[i] != vr[k].id)
                    why = "id switch";
            }
            const uint64_t fid = a < nvf ? vf[a].id : 0;
            if (!why && fidof[i] && fidof[i] != fid) why = "id switch in the full tracker";
            if (k < nvr) idof[i] = vr[k].id; /* a switch counts once */
            if (a < nvf) fidof[i] = fid;
            row->checked++;
            if (why) {
                if (row->bad < 5)
                    fprintf(stderr,
                            "MISMATCH %s tracker: %dx%d M=%d frame %d instance %d at %d,%d: %s\n",
                            trk_backend_name(b), s->w, s->h, s->m, t, i, s->cx[i], s->cy[i], why);
                row->bad++;
            }
        }
    }
    if (!err) {
        for (int k = 0; k < 4; k++)
            qsort(tm + k * nf, (size_t)nf, sizeof(*tm), cmp_d);
        row->full_ms = tm[nf / 2], row->roi_ms = tm[nf + nf / 2];
        row->full_cpu_ms = tm[2 * nf + nf / 2], row->roi_cpu_ms = tm[3 * nf + nf / 2];
        row->roi_mean_ms = sum / nf;
    }
    free(tm);
    trk_tracker_destroy(&tf);
    trk_tracker_destroy(&tr);
    return err;
}

/* A measured row: its table line (and the tracker's summary line) and its
 * JSON entry. */
static void rr_print(const struct rr_opts *o, FILE *js, int *nrows, const struct rr_scene *sc,
                     const char *bname, const char *thr, int threads, const char *rrm,
                     const struct rr_row *row)
{
    const int w = sc->w, h = sc->h, m = sc->m;
    char size[32], xb[16];
    snprintf(size, sizeof(size), "%dx%d", w, h);
    snprintf(xb, sizeof(xb), "%s", "-");
    if (row->roi_up) snprintf(xb, sizeof(xb), "%.1fx", (double)row->full_up / row->roi_up);
    printf("%-10s %5d %4d %-10s %3s %-10s %9.3f %9.3f %7.2fx %9.2f %12llu "
           "%12llu %7s %ld%s\n",
           size, m, sc->colours, bname, thr, rrm, row->full_ms, row->roi_ms,
           row->full_ms / row->roi_ms, row->roi_ms * 1e3 / m, (unsigned long long)row->full_up,
           (unsigned long long)row->roi_up, xb, row->checked, row->bad ? " MISMATCH" : "");
    if (o->tracker)
        printf("%-10s %5d tracker roi mode: mean %.3f ms a frame (x %.2f), "
               "of %d frames %ld took a round over grown regions, %ld of "
               "those a whole-frame round; thread CPU time medians full "
               "%.3f ms, roi %.3f ms (x %.2f)%s\n",
               size, m, row->roi_mean_ms, row->full_ms / row->roi_mean_ms, o->frames, row->grown,
               row->whole, row->full_cpu_ms, row->roi_cpu_ms, row->full_cpu_ms / row->roi_cpu_ms,
               row->bad ? " MISMATCH" : "");
    if (js)
        fprintf(js,
                "%s\n{\"width\":%d,\"height\":%d,\"instances\":%d,"
                "\"colours\":%d,\"backend\":\"%s\",\"threads\":%d,"
                "\"rrm\":\"%s\","
                "\"full_ms\":%.4f,\"roi_ms\":%.4f,\"full_bytes\":%llu,"
                "\"roi_bytes\":%llu,\"checked\":%ld,\"mismatches\":%ld,"
                "\"grown_frames\":%ld,\"whole_frames\":%ld}",
                *nrows ? "," : "", w, h, m, sc->colours, bname, threads, rrm, row->full_ms,
                row->roi_ms, (unsigned long long)row->full_up, (unsigned long long)row->roi_up,
                row->checked, row->bad, row->grown, row->whole);
    (*nrows)++;
}

/* Backend kind o->kinds[k] in its ti-th configuration (a CPU thread count,
 * a CUDA design) on the scene: its row, or a line saying why not. 0, 1 when
 * it failed or mismatched, -1 when the kind is not available here. */
static int rr_config(const struct rr_opts *o, struct rr_scene *sc, int k, int ti, FILE *js,
                     int *nrows)
{
    const bool cpu = o->kinds[k] == TRK_BACKEND_CPU; /* threads apply */
    const bool cuda = o->kinds[k] == TRK_BACKEND_CUDA && trk_cuda_rrm_config;
    struct trk_backend_cfg cfg = { .kind = o->kinds[k],
                                   .max_width = sc->w,
                                   .max_height = sc->h,
                                   .threads = cpu ? o->threads[ti] : 1 };
    struct trk_backend *b = NULL;
    int err = trk_backend_create(&cfg, &b);
    if (err) {
        printf("# skipped %s: %s\n", o->kinds[k] == TRK_BACKEND_CUDA ? "cuda" : "backend",
               trk_strerror(err));
        return -1;
    }
    char rrm[24] = "-";
    if (cuda) {
        const int *d = o->design[ti];
        err = trk_cuda_rrm_config(b, d[0], d[1], d[2]);
    }
    struct rr_row row;
    if (!err) err = o->tracker ? rr_run_tracker(b, sc, o, &row) : rr_run(b, sc, o, &row);
    int ud = 0, ua = 0, ub = 0;
    if (cuda && !err && trk_cuda_rrm_used && !trk_cuda_rrm_used(b, &ud, &ua, &ub))
        snprintf(rrm, sizeof(rrm), ud == 1 ? "seed:%dx%d" : "flat", ua, ub);
    char thr[8];
    snprintf(thr, sizeof(thr), "%s", cpu ? "" : "-");
    if (cpu) snprintf(thr, sizeof(thr), "%d", cfg.threads);
    int status = 0;
    if (err) {
        printf("# %dx%d %s M=%d: %s\n", sc->w, sc->h, trk_backend_name(b), sc->m,
               trk_strerror(err));
        status = 1;
    } else {
        rr_print(o, js, nrows, sc, trk_backend_name(b), thr, cfg.threads, rrm, &row);
        if (row.bad) status = 1;
    }
    fflush(stdout);
    trk_backend_destroy(&b);
    return status;
}

/* The lines above the table (and the JSON's head). */
static void rr_head(const struct rr_opts *o, FILE *js)
{
    if (js)
        fprintf(js,
                "{\"experiment\":\"rrm\",\"margin\":%d,\"radius\":%d,\"host\":\"%s\",\"rows\":[",
                o->margin, o->radius, rr_host ? "pinned" : "pageable");
    printf("# frames in %s host memory; disk radius %s\n", rr_host ? "pinned" : "pageable",
           o->radius ? "fixed (--radius)" : "2% of the short side");
    if (o->tracker)
        printf("# rrm --regions tracker: per-frame cost of daemon/tracker.c's rounds and its own "
               "work, medians of %d frames; full = --mode full, roi = --mode roi (--full-every "
               "%d)\n",
               o->frames, o->full_every ? o->full_every : TRK_TRACK_FULL_EVERY);
    else
        printf("# rrm: per-frame whole call, medians of %d frames; full = process() over the "
               "frame (blobs on), roi = process_regions() around each instance (disk box + %d "
               "px)\n",
               o->frames, o->margin);
    printf("%-10s %5s %4s %-10s %3s %-10s %9s %9s %8s %9s %12s %12s %7s %s\n", "size", "M", "col",
           "backend", "thr", "rrm", "full_ms", "roi_ms", "x_roi", "roi_us/M", "full_bytes",
           "roi_bytes", "x_bytes", "checked");
}

static int run_rrm(int argc, char **argv)
{
    struct rr_opts o;
    if (rr_parse(argc, argv, &o)) {
        rr_usage(stderr);
        return 64;
    }
    FILE *js = NULL;
    if (o.json && !(js = fopen(o.json, "w"))) {
        fprintf(stderr, "trackd-bench rrm: cannot write %s: %s\n", o.json, strerror(errno));
        return 73;
    }
    bool any_cuda = false;
    for (int k = 0; k < o.nkinds; k++)
        any_cuda = any_cuda || o.kinds[k] == TRK_BACKEND_CUDA;
    if (o.pinned && any_cuda) {
        const struct trk_backend_cfg hc = { .kind = TRK_BACKEND_CUDA };
        if (trk_backend_create(&hc, &rr_host)) rr_host = NULL; /* the rows say why */
    }
    rr_head(&o, js);
    int status = 0, nrows = 0;
    static struct rr_scene sc;
    for (int si = 0; si < o.nsizes; si++)
        for (int mi = 0; mi < o.ninst; mi++) {
            const int w = o.sizes[si][0], h = o.sizes[si][1], m = o.inst[mi];
            int err = rr_scene_make(&sc, w, h, m, o.radius, o.seed);
            if (err) {
                fprintf(stderr, "trackd-bench rrm: scene %dx%d M=%d: %s\n", w, h, m,
                        trk_strerror(err));
                rr_scene_free(&sc);
                trk_backend_destroy(&rr_host);
                return 70;
            }
            for (int k = 0; k < o.nkinds; k++) {
                const bool cpu = o.kinds[k] == TRK_BACKEND_CPU;
                const bool cuda = o.kinds[k] == TRK_BACKEND_CUDA && trk_cuda_rrm_config;
                const int nt = cpu ? o.nthreads : cuda ? o.ndesigns : 1;
                for (int ti = 0; ti < nt; ti++) {
                    const int rc = rr_config(&o, &sc, k, ti, js, &nrows);
                    if (rc < 0) break;
                    if (rc) status = 1;
                }
            }
            rr_scene_free(&sc);
        }
    trk_backend_destroy(&rr_host);
    if (js) {
        fprintf(js, "\n]}\n");
        if (fclose(js)) {
            fprintf(stderr, "trackd-bench rrm: cannot write %s\n", o.json);
            return 74;
        }
    }
    return status;
}

static const struct trk_bench_experiment rrm_exp = {
    "rrm", "regional reduction vs full frame on moving scenes (issue 13)", run_rrm
};

__attribute__((constructor)) static void rrm_reg(void)
{
    trk_bench_register(&rrm_exp);
}
