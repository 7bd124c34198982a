/* trackd-bench: every backend side by side on the standard scenes.
 *
 * For each size x object count (docs/ARCHITECTURE.md section 6, trk_scene_standard with a
 * fixed seed) and each input format, every selected backend kind, each of its
 * variants, and for CPU backends each thread count, runs trk_backend_process
 * with warm-up, then reports medians (wall clock around the call, and the
 * backend's own upload/kernel split), frames per second, and ratios against
 * the CPU reference and, when their JSON files are given, against OpenCV and
 * PyTorch baselines measured on the same scenes (bench/opencv_baseline.py,
 * bench/torch_baseline.py). Every result of every iteration is compared with
 * the reference's, field by field: any difference is reported and makes the
 * exit status non-zero, so a fast wrong backend never shows up as a win.
 *
 * Only the backend interface is used, so the tool builds wherever trk_gpu
 * does (the GPU machine has no FFmpeg or jansson). See bench/README.md.
 */
#include "bench.h"
#include "minijson.h"

#include "backend.h"
#include "color.h"
#include "scene.h"
#include "trk_clock.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define MAX_LIST        16
#define MAX_RUNNERS     64
#define MAX_EXPERIMENTS 32
#define DEFAULT_SEED    20240601u

/* ------------------------------------------------------------ extensions */

static const struct trk_bench_experiment *experiments[MAX_EXPERIMENTS];
static int n_experiments;

void trk_bench_register(const struct trk_bench_experiment *e)
{
    if (n_experiments < MAX_EXPERIMENTS) experiments[n_experiments++] = e;
}

double trk_bench_now_ms(void)
{
    return trk_now() * 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double trk_bench_median(double *v, size_t n)
{
    if (n == 0) return 0;
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* --------------------------------------------------------------- options */

struct opts {
    int nsizes, sizes[MAX_LIST][2];
    int nobjs, objs[MAX_LIST];
    int nkinds;
    enum trk_backend_kind kinds[MAX_LIST];
    int nthreads, threads[MAX_LIST];
    int nfmts;
    enum trk_pixfmt fmts[TRK_FMT_COUNT];
    int nspaces;
    enum trk_space spaces[3];
    const char *variants; /* "all", "default" or a comma list of names */
    int warmup, iters, ref_iters;
    uint64_t seed;
    const char *json, *opencv, *torch, *dump;
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: trackd-bench [options]\n"
            "  --sizes WxH,...      frame sizes (default 640x480,1920x1080,3840x2160)\n"
            "  --objects N,...      object counts (default 1,8,32,128,256)\n"
            "  --backends K,...     cpu-ref, cpu, cuda, auto (default cpu-ref,cpu,cuda;\n"
            "                       kinds not available here are skipped with a note)\n"
            "  --threads N,...      CPU thread counts, 0 = all cores (default 1,0)\n"
            "  --variants V         all | default | name,... (default all)\n"
            "  --formats F,...      rgb24 rgba bgr24 bgra yuyv nv12 i420 (default rgb24)\n"
            "  --spaces S,...       object boxes as rgb, hsv, ycbcr, lab, rg (default rgb): the\n"
            "                       disks' colours re-expressed in that space\n"
            "  --warmup N           untimed runs per case (default 3)\n"
            "  --iters N            timed runs per case (default 20)\n"
            "  --ref-iters N        timed runs of cpu-ref (default 3; it is slow)\n"
            "  --seed N             scene seed (default %u)\n"
            "  --json FILE          write all results as JSON\n"
            "  --opencv FILE        OpenCV baseline JSON (bench/opencv_baseline.py)\n"
            "  --torch FILE         PyTorch baseline JSON (bench/torch_baseline.py)\n"
            "  --dump-scenes DIR    write each scene as DIR/scene_WxH_M.{rgb,json}, then exit\n"
            "  --experiment NAME .. run a registered experiment with the rest of the args\n"
            "  --list-experiments   list them\n",
            DEFAULT_SEED);
}

int trk_bench_list(const char *s, int max, int (*one)(const char *item, int idx, void *ctx),
                   void *ctx)
{
    char buf[512];
    if (strlen(s) >= sizeof(buf)) return -1;
    strcpy(buf, s);
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (n >= max || one(tok, n, ctx)) return -1;
        n++;
    }
    return n > 0 ? n : -1;
}

int trk_bench_disk_area(int r)
{
    int n = 0;
    for (int y = -r; y <= r; y++)
        for (int x = -r; x <= r; x++)
            n += x * x + y * y <= r * r;
    return n;
}

int trk_bench_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

int trk_bench_pair(const char *s, long lo, long hi0, long hi1, int out[2])
{
    char a[32];
    const char *x = strchr(s, 'x');
    if (!x || (size_t)(x - s) >= sizeof(a)) return -1;
    memcpy(a, s, (size_t)(x - s));
    a[x - s] = '\0';
    return trk_bench_int(a, lo, hi0, &out[0]) || trk_bench_int(x + 1, lo, hi1, &out[1]) ? -1 : 0;
}

int trk_bench_seed(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    *out = strtoull(s, &end, 0);
    return errno || end == s || *end ? -1 : 0;
}

int trk_bench_format(const char *s)
{
    for (int f = 0; f < TRK_FMT_COUNT; f++)
        if (!strcmp(s, trk_pixfmt_name((enum trk_pixfmt)f))) return f;
    return -1;
}

/* What trk_bench_*_list's items are parsed into. */
struct list_ctx {
    long lo, hi;
    int *ints;
    int (*pairs)[2];
    enum trk_pixfmt *fmts;
};

static int one_item(const char *it, int i, void *ctx)
{
    const struct list_ctx *c = ctx;
    if (c->pairs) return trk_bench_pair(it, c->lo, c->hi, c->hi, c->pairs[i]);
    if (c->ints) return trk_bench_int(it, c->lo, c->hi, &c->ints[i]);
    const int f = trk_bench_format(it);
    if (f >= 0) c->fmts[i] = (enum trk_pixfmt)f;
    return f < 0 ? -1 : 0;
}

int trk_bench_int_list(const char *s, int max, long lo, long hi, int *out)
{
    struct list_ctx c = { .lo = lo, .hi = hi, .ints = out };
    return trk_bench_list(s, max, one_item, &c);
}

int trk_bench_pair_list(const char *s, int max, long lo, long hi, int (*pairs)[2])
{
    struct list_ctx c = { .lo = lo, .hi = hi, .pairs = pairs };
    return trk_bench_list(s, max, one_item, &c);
}

int trk_bench_format_list(const char *s, int max, enum trk_pixfmt *fmts)
{
    struct list_ctx c = { .fmts = fmts };
    return trk_bench_list(s, max, one_item, &c);
}

void trk_bench_ratio(char *buf, size_t n, double v)
{
    if (v <= 0)
        snprintf(buf, n, "-");
    else if (v >= 100)
        snprintf(buf, n, "%.0fx", v);
    else
        snprintf(buf, n, "%.1fx", v);
}

static int one_kind(const char *it, int i, void *ctx)
{
    int k = trk_backend_kind_parse(it);
    if (k < 0) return -1;
    ((struct opts *)ctx)->kinds[i] = (enum trk_backend_kind)k;
    return 0;
}

static int one_space(const char *it, int i, void *ctx)
{
    static const char *const names[TRK_SPACE_COUNT] = { "rgb", "hsv", "ycbcr", "lab", "rg" };
    for (int sp = 0; sp < TRK_SPACE_COUNT; sp++)
        if (!strcmp(it, names[sp])) {
            ((struct opts *)ctx)->spaces[i] = (enum trk_space)sp;
            return 0;
        }
    return -1;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){
        .variants = "all", .warmup = 3, .iters = 20, .ref_iters = 3, .seed = DEFAULT_SEED
    };
    if (trk_bench_pair_list("640x480,1920x1080,3840x2160", MAX_LIST, 1, 16384, o->sizes) < 0)
        return -1;
    o->nsizes = 3;
    o->nobjs = trk_bench_int_list("1,8,32,128,256", MAX_LIST, 0, TRK_MAX_OBJECTS, o->objs);
    o->nkinds = trk_bench_list("cpu-ref,cpu,cuda", MAX_LIST, one_kind, o);
    o->nthreads = trk_bench_int_list("1,0", MAX_LIST, 0, 1024, o->threads);
    o->nfmts = trk_bench_format_list("rgb24", TRK_FMT_COUNT, o->fmts);
    o->nspaces = trk_bench_list("rgb", 3, one_space, o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int n = 0;
#define OPT(name) (!strcmp(a, name) && v && (i++, 1))
        if (OPT("--sizes"))
            n = o->nsizes = trk_bench_pair_list(v, MAX_LIST, 1, 16384, o->sizes);
        else if (OPT("--objects"))
            n = o->nobjs = trk_bench_int_list(v, MAX_LIST, 0, TRK_MAX_OBJECTS, o->objs);
        else if (OPT("--backends"))
            n = o->nkinds = trk_bench_list(v, MAX_LIST, one_kind, o);
        else if (OPT("--threads"))
            n = o->nthreads = trk_bench_int_list(v, MAX_LIST, 0, 1024, o->threads);
        else if (OPT("--formats"))
            n = o->nfmts = trk_bench_format_list(v, TRK_FMT_COUNT, o->fmts);
        else if (OPT("--spaces"))
            n = o->nspaces = trk_bench_list(v, 3, one_space, o);
        else if (OPT("--variants"))
            o->variants = v;
        else if (OPT("--warmup"))
            n = trk_bench_int(v, 0, 100000, &o->warmup) ? -1 : 1;
        else if (OPT("--iters"))
            n = trk_bench_int(v, 1, 100000, &o->iters) ? -1 : 1;
        else if (OPT("--ref-iters"))
            n = trk_bench_int(v, 1, 100000, &o->ref_iters) ? -1 : 1;
        else if (OPT("--seed"))
            n = trk_bench_seed(v, &o->seed) ? -1 : 1;
        else if (OPT("--json"))
            o->json = v;
        else if (OPT("--opencv"))
            o->opencv = v;
        else if (OPT("--torch"))
            o->torch = v;
        else if (OPT("--dump-scenes"))
            o->dump = v;
        else {
            fprintf(stderr, "trackd-bench: unknown or incomplete option %s\n", a);
            return -1;
        }
#undef OPT
        if (n < 0) {
            fprintf(stderr, "trackd-bench: bad value for %s: %s\n", a, v);
            return -1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------- scene dumps */

static const char *space_name(enum trk_space s)
{
    static const char *const names[TRK_SPACE_COUNT] = { "rgb", "hsv", "ycbcr", "lab", "rg" };
    return (unsigned)s < TRK_SPACE_COUNT ? names[s] : "?";
}

/* DIR/scene_WxH_M.rgb (raw RGB24, pitch = 3 W) and .json (the objects). */
static int dump_scene(const char *dir, const struct trk_scene *sc, uint64_t seed)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/scene_%dx%d_%d.rgb", dir, sc->width, sc->height,
             sc->n_objects);
    FILE *f = fopen(path, "wb");
    size_t bytes = (size_t)sc->width * (size_t)sc->height * 3;
    if (!f || fwrite(sc->rgb, 1, bytes, f) != bytes || fclose(f)) {
        fprintf(stderr, "trackd-bench: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    snprintf(path, sizeof(path), "%s/scene_%dx%d_%d.json", dir, sc->width, sc->height,
             sc->n_objects);
    f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "trackd-bench: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f, "{\"width\":%d,\"height\":%d,\"objects\":%d,\"seed\":%llu,\"format\":\"rgb24\",",
            sc->width, sc->height, sc->n_objects, (unsigned long long)seed);
    fprintf(f, "\"pixels\":\"scene_%dx%d_%d.rgb\",\"defs\":[", sc->width, sc->height,
            sc->n_objects);
    for (int i = 0; i < sc->n_objects; i++) {
        const struct trk_object_def *o = &sc->objects[i];
        fprintf(f, "%s\n {\"name\":\"%s\",\"space\":\"%s\",\"lo\":[%u,%u,%u],\"hi\":[%u,%u,%u]}",
                i ? "," : "", o->name, space_name(o->space), o->lo[0], o->lo[1], o->lo[2], o->hi[0],
                o->hi[1], o->hi[2]);
    }
    fprintf(f, "]}\n");
    return fclose(f) ? -1 : 0;
}

/* ------------------------------------------------------------- baselines */

/* One baseline measurement (from --opencv / --torch JSON). */
struct base {
    int width, height, objects, threads; /* threads: -1 when not given */
    double median_ms;
    const char *variant;
    const struct trk_json *masses; /* optional per-object masses (array) */
};

struct baseline {
    struct trk_json *root;
    struct base *b;
    int n;
};

static bool base_take(const struct trk_json *e, void *item)
{
    struct base *b = item;
    b->width = (int)trk_json_num(e, "width", -1);
    b->height = (int)trk_json_num(e, "height", -1);
    b->objects = (int)trk_json_num(e, "objects", -1);
    b->threads = (int)trk_json_num(e, "threads", -1);
    b->median_ms = trk_json_num(e, "median_ms", -1);
    b->variant = trk_json_str(e, "variant", "?");
    b->masses = trk_json_get(e, "masses");
    return b->width > 0 && b->height > 0 && b->objects >= 0 && b->median_ms > 0;
}

static int baseline_load(const char *path, struct baseline *bl)
{
    void *items;
    int rc = trk_json_load_scenes(path, "trackd-bench", &bl->root, sizeof(*bl->b), base_take,
                                  &items, &bl->n);
    bl->b = items;
    return rc;
}

static void baseline_free(struct baseline *bl)
{
    trk_json_free(bl->root);
    free(bl->b);
    memset(bl, 0, sizeof(*bl));
}

/* The entry for this scene: with the given thread setting when present, else
 * one thread (or no thread field), else none. With several variants (torch),
 * the fastest. */
static const struct base *baseline_find(const struct baseline *bl, int w, int h, int m, int threads)
{
    const struct base *best = NULL;
    for (int pass = 0; pass < 2 && !best; pass++) {
        int want = pass == 0 ? threads : 1;
        for (int i = 0; i < bl->n; i++) {
            const struct base *b = &bl->b[i];
            if (b->width != w || b->height != h || b->objects != m) continue;
            if (b->threads >= 0 && b->threads != want) continue;
            if (!best || b->median_ms < best->median_ms) best = b;
        }
    }
    return best;
}

/* -------------------------------------------------------------- machine */

struct machine {
    char cpu[256];
    int cores;
    char os[256];
    char date[64];
};

static void machine_probe(struct machine *m)
{
    snprintf(m->cpu, sizeof(m->cpu), "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof(line), f)) {
            if (strncmp(line, "model name", 10)) continue;
            char *c = strchr(line, ':');
            if (!c) continue;
            c++;
            while (*c == ' ')
                c++;
            c[strcspn(c, "\n")] = '\0';
            snprintf(m->cpu, sizeof(m->cpu), "%s", c);
            break;
        }
        fclose(f);
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    m->cores = n > 0 ? (int)n : 1;
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(m->os, sizeof(m->os), "%s %s %s", u.sysname, u.release, u.machine);
    else
        snprintf(m->os, sizeof(m->os), "unknown");
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(m->date, sizeof(m->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ------------------------------------------------------------- runners */

/* One backend configuration under test: kind x variant x threads. */
struct runner {
    enum trk_backend_kind kind;
    const char *variant; /* NULL = default */
    int threads_arg;     /* as given (0 = all cores); -1 when not a CPU kind */
    int threads;         /* resolved count shown in the table */
    struct trk_backend *b;
    char label[96];
    double last_ms; /* median of the current case, for ratios (cpu-ref) */
};

static bool variant_selected(const char *sel, const char *name, bool is_default)
{
    if (!strcmp(sel, "all")) return true;
    if (!strcmp(sel, "default")) return is_default;
    size_t n = strlen(name);
    for (const char *p = sel; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, name, n)) return true;
        p += len + (e ? 1 : 0);
    }
    return false;
}

/* Creates every runner; kinds that are not available are skipped with a note. */
static int runners_create(const struct opts *o, int maxw, int maxh, struct runner *r, int *nr)
{
    int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    *nr = 0;
    /* cpu-ref first: its results are the truth every later runner is checked
     * against, and its time the denominator of "x ref". */
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < o->nkinds; k++) {
            enum trk_backend_kind kind = o->kinds[k];
            if ((kind == TRK_BACKEND_CPU_REF) != (pass == 0)) continue;
            const char *names[32];
            int nv = trk_backend_variants(kind, names, 32);
            if (nv > 32) nv = 32;
            int nvar = nv > 0 ? nv : 1;
            bool unavailable = false;
            for (int v = 0; v < nvar && !unavailable; v++) {
                const char *vname = nv > 0 ? names[v] : NULL;
                if (vname && !variant_selected(o->variants, vname, v == 0)) continue;
                /* The reference is single-threaded: one thread count only. */
                int nt = kind == TRK_BACKEND_CPU ? o->nthreads : 1;
                for (int t = 0; t < nt; t++) {
                    if (*nr >= MAX_RUNNERS) return 0;
                    struct runner *x = &r[*nr];
                    memset(x, 0, sizeof(*x));
                    x->kind = kind;
                    x->variant = vname;
                    x->threads_arg = kind == TRK_BACKEND_CPU       ? o->threads[t]
                                     : kind == TRK_BACKEND_CPU_REF ? 1
                                                                   : -1;
                    x->threads = x->threads_arg == 0 ? cores : x->threads_arg;
                    struct trk_backend_cfg cfg = { .kind = kind,
                                                   .max_width = maxw,
                                                   .max_height = maxh,
                                                   .threads =
                                                       x->threads_arg < 0 ? 0 : x->threads_arg,
                                                   .variant = vname };
                    int err = trk_backend_create(&cfg, &x->b);
                    if (err == TRK_ENODEV) {
                        char why[256] = "";
                        if (kind == TRK_BACKEND_CUDA) trk_cuda_available(why, sizeof(why));
                        printf("# skipped backend %s: %s%s%s\n",
                               kind == TRK_BACKEND_CUDA ? "cuda" : "?", trk_strerror(err),
                               why[0] ? ": " : "", why);
                        unavailable = true;
                        break;
                    }
                    if (err) {
                        fprintf(stderr, "trackd-bench: creating backend kind %d variant %s: %s\n",
                                (int)kind, vname ? vname : "(default)", trk_strerror(err));
                        return -1;
                    }
                    const char *name = trk_backend_name(x->b);
                    if (vname && v > 0 && !strchr(name, ':'))
                        snprintf(x->label, sizeof(x->label), "%s:%s", name, vname);
                    else
                        snprintf(x->label, sizeof(x->label), "%s", name);
                    (*nr)++;
                }
            }
        }
    return 0;
}

/* ----------------------------------------------------------- comparison */

static int results_equal(const struct trk_obj_result *a, const struct trk_obj_result *b)
{
    return a->mass == b->mass && a->sum_x == b->sum_x && a->sum_y == b->sum_y && a->x0 == b->x0 &&
           a->y0 == b->y0 && a->x1 == b->x1 && a->y1 == b->y1 && a->sum_xx == b->sum_xx &&
           a->sum_yy == b->sum_yy && a->sum_xy == b->sum_xy;
}

/* Prints the first differences loudly; returns how many objects differ. */
static int check_results(const char *label, const char *scene, const struct trk_obj_result *want,
                         const struct trk_obj_result *got, int n)
{
    int bad = 0;
    for (int i = 0; i < n; i++) {
        if (results_equal(&want[i], &got[i])) continue;
        if (bad < 5)
            fprintf(stderr,
                    "MISMATCH %s on %s, object %d: cpu-ref mass %llu sum %llu,%llu box "
                    "%d,%d,%d,%d moments %llu,%llu,%llu; got mass %llu sum %llu,%llu box "
                    "%d,%d,%d,%d moments %llu,%llu,%llu\n",
                    label, scene, i, (unsigned long long)want[i].mass,
                    (unsigned long long)want[i].sum_x, (unsigned long long)want[i].sum_y,
                    want[i].x0, want[i].y0, want[i].x1, want[i].y1,
                    (unsigned long long)want[i].sum_xx, (unsigned long long)want[i].sum_yy,
                    (unsigned long long)want[i].sum_xy, (unsigned long long)got[i].mass,
                    (unsigned long long)got[i].sum_x, (unsigned long long)got[i].sum_y, got[i].x0,
                    got[i].y0, got[i].x1, got[i].y1, (unsigned long long)got[i].sum_xx,
                    (unsigned long long)got[i].sum_yy, (unsigned long long)got[i].sum_xy);
        bad++;
    }
    return bad;
}

/* ----------------------------------------------------------------- main */

/* The standard scene's objects re-expressed in another space, so the
 * backends' hsv and ycbcr paths can be timed on the same pictures: each
 * disk's colour (the centre of its rgb box) converted to the space, widened
 * to absorb the scene's +-3 noise (hsv: hue +-6 degrees, S and V down to 40
 * below; ycbcr: +-10, in the image's own matrix and range; lab, rg: +-10).
 * rgb returns the scene's objects unchanged. */
static const struct trk_object_def *space_objects(const struct trk_scene *sc, enum trk_space space,
                                                  const struct trk_image *img,
                                                  struct trk_object_def *out)
{
    if (space == TRK_SPACE_RGB) return sc->objects;
    const struct trk_rgb2ycc_coef *k =
        &trk_rgb2ycc_coefs[trk_coef_index((int)img->matrix, img->full_range)];
    for (int i = 0; i < sc->n_objects; i++) {
        const struct trk_object_def *o = &sc->objects[i];
        int c[3];
        for (int ch = 0; ch < 3; ch++)
            c[ch] = o->lo[ch] == 0 ? o->hi[ch] - 8 : o->lo[ch] + 8;
        out[i] = *o;
        out[i].space = space;
        if (space == TRK_SPACE_HSV) {
            uint16_t h;
            uint8_t sat, v;
            trk_rgb_to_hsv(c[0], c[1], c[2], &h, &sat, &v);
            out[i].lo[0] = (uint16_t)trk_hue_wrap(h - 6);
            out[i].hi[0] = (uint16_t)trk_hue_wrap(h + 6);
            out[i].lo[1] = (uint16_t)(sat > 40 ? sat - 40 : 0), out[i].hi[1] = 255;
            out[i].lo[2] = (uint16_t)(v > 40 ? v - 40 : 0), out[i].hi[2] = 255;
        } else {
            const uint8_t rgb[3] = { (uint8_t)c[0], (uint8_t)c[1], (uint8_t)c[2] };
            int y[3];
            trk_rgb_to_space(k, (int)space, rgb, y);
            for (int ch = 0; ch < 3; ch++) {
                out[i].lo[ch] = (uint16_t)(y[ch] > 10 ? y[ch] - 10 : 0);
                out[i].hi[ch] = (uint16_t)(y[ch] < 245 ? y[ch] + 10 : 255);
            }
        }
    }
    return out;
}

struct row {
    int width, height, objects;
    enum trk_pixfmt fmt;
    enum trk_space space;
    const char *label;
    const char *variant;
    int threads_arg, threads, iters;
    double median_ms, total_ms, upload_ms, kernel_ms, min_ms;
    double vs_ref, vs_opencv, vs_torch;
    int opencv_threads;
    const char *torch_variant;
    bool match;
};

static void json_write(FILE *f, const struct opts *o, const struct machine *m,
                       const struct row *rows, int n, int mismatches, int opencv_mass_bad)
{
    fprintf(f, "{\n \"tool\": \"trackd-bench\",\n");
    fprintf(f,
            " \"machine\": {\"cpu\": \"%s\", \"cores\": %d, \"os\": \"%s\", \"date\": \"%s\"},\n",
            m->cpu, m->cores, m->os, m->date);
    fprintf(f, " \"seed\": %llu, \"warmup\": %d, \"iters\": %d, \"ref_iters\": %d,\n",
            (unsigned long long)o->seed, o->warmup, o->iters, o->ref_iters);
    fprintf(f, " \"opencv\": %s%s%s, \"torch\": %s%s%s,\n", o->opencv ? "\"" : "",
            o->opencv ? o->opencv : "null", o->opencv ? "\"" : "", o->torch ? "\"" : "",
            o->torch ? o->torch : "null", o->torch ? "\"" : "");
    fprintf(f, " \"mismatches\": %d, \"opencv_mass_mismatches\": %d,\n", mismatches,
            opencv_mass_bad);
    fprintf(f, " \"results\": [");
    for (int i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        fprintf(f,
                "%s\n  {\"width\": %d, \"height\": %d, \"objects\": %d, \"format\": \"%s\", "
                "\"space\": \"%s\", "
                "\"backend\": \"%s\", \"variant\": %s%s%s, \"threads\": %d, \"threads_arg\": %d, "
                "\"iters\": %d, \"median_ms\": %.4f, \"min_ms\": %.4f, \"backend_total_ms\": %.4f, "
                "\"upload_ms\": %.4f, \"kernel_ms\": %.4f, \"fps\": %.2f, \"match\": %s",
                i ? "," : "", r->width, r->height, r->objects, trk_pixfmt_name(r->fmt),
                space_name(r->space), r->label, r->variant ? "\"" : "",
                r->variant ? r->variant : "null", r->variant ? "\"" : "", r->threads,
                r->threads_arg, r->iters, r->median_ms, r->min_ms, r->total_ms, r->upload_ms,
                r->kernel_ms, 1000.0 / r->median_ms, r->match ? "true" : "false");
        if (r->vs_ref > 0) fprintf(f, ", \"vs_ref\": %.3f", r->vs_ref);
        if (r->vs_opencv > 0)
            fprintf(f, ", \"vs_opencv\": %.3f, \"opencv_threads\": %d", r->vs_opencv,
                    r->opencv_threads);
        if (r->vs_torch > 0)
            fprintf(f, ", \"vs_torch\": %.3f, \"torch_variant\": \"%s\"", r->vs_torch,
                    r->torch_variant);
        fprintf(f, "}");
    }
    fprintf(f, "\n ]\n}\n");
}

/* One run of the table: what every measurement of it shares. */
struct bench_run {
    const struct opts *o;
    struct runner *runners;
    int nr;
    struct trk_backend *truth_be; /* the truth when runners[0] is not cpu-ref */
    struct baseline ocv, torch;
    double *t_wall, *t_total, *t_up, *t_k; /* per iteration, maxiters each */
    struct trk_obj_result *truth, *got;
    struct row *rows;
    int nrows, mismatches, opencv_mass_bad;
};

/* One case of the table: a scene in one format and colour space. */
struct bench_case {
    const struct trk_image *img;
    enum trk_space space;
    const struct trk_object_def *objs;
    int w, h, m;
    char label[64];
};

/* Runs runner ri over the case (warm-up, then the timed iterations into the
 * run's timing arrays), checking every result against the truth. Returns
 * how many results differed, or -1 when the backend failed. */
static int measure(struct bench_run *R, int ri, const struct bench_case *bc, int iters)
{
    struct runner *x = &R->runners[ri];
    bool is_ref = x->kind == TRK_BACKEND_CPU_REF;
    int warm = is_ref ? 0 : R->o->warmup;
    int err = trk_backend_set_objects(x->b, bc->objs, bc->m);
    if (err) {
        fprintf(stderr, "trackd-bench: %s set_objects: %s\n", x->label, trk_strerror(err));
        return -1;
    }
    int bad = 0;
    for (int it = -warm; it < iters; it++) {
        struct trk_backend_timing t = { 0 };
        double t0 = trk_bench_now_ms();
        err = trk_backend_process(x->b, bc->img, NULL, R->got, &t);
        double dt = trk_bench_now_ms() - t0;
        if (err) {
            fprintf(stderr, "trackd-bench: %s process: %s\n", x->label, trk_strerror(err));
            return -1;
        }
        if (is_ref && ri == 0 && it == -warm)
            memcpy(R->truth, R->got, sizeof(R->got[0]) * (size_t)bc->m);
        else
            bad += check_results(x->label, bc->label, R->truth, R->got, bc->m);
        if (it >= 0) {
            R->t_wall[it] = dt;
            R->t_total[it] = t.total_ms;
            R->t_up[it] = t.upload_ms;
            R->t_k[it] = t.kernel_ms;
        }
    }
    return bad;
}

/* The row of runner x from the timing arrays, with its ratios (ref_ms: the
 * case's cpu-ref median, 0 before it ran). */
static void fill_row(const struct bench_run *R, const struct runner *x, const struct bench_case *bc,
                     int iters, double ref_ms, struct row *r)
{
    const struct opts *o = R->o;
    r->width = bc->w, r->height = bc->h, r->objects = bc->m, r->fmt = bc->img->fmt;
    r->space = bc->space;
    r->label = x->label, r->variant = x->variant;
    r->threads_arg = x->threads_arg, r->threads = x->threads, r->iters = iters;
    r->median_ms = trk_bench_median(R->t_wall, (size_t)iters);
    r->min_ms = R->t_wall[0]; /* sorted by the median */
    r->total_ms = trk_bench_median(R->t_total, (size_t)iters);
    r->upload_ms = trk_bench_median(R->t_up, (size_t)iters);
    r->kernel_ms = trk_bench_median(R->t_k, (size_t)iters);
    if (x->kind == TRK_BACKEND_CPU_REF) ref_ms = r->median_ms;
    if (ref_ms > 0) r->vs_ref = ref_ms / r->median_ms;
    if (o->opencv && bc->space == TRK_SPACE_RGB) {
        int want = x->threads_arg < 0 ? 1 : x->threads_arg;
        const struct base *b = baseline_find(&R->ocv, bc->w, bc->h, bc->m, want);
        if (b) {
            r->vs_opencv = b->median_ms / r->median_ms;
            r->opencv_threads = b->threads;
        }
    }
    if (o->torch && bc->space == TRK_SPACE_RGB) {
        const struct base *b = baseline_find(&R->torch, bc->w, bc->h, bc->m, -1);
        if (b) {
            r->vs_torch = b->median_ms / r->median_ms;
            r->torch_variant = b->variant;
        }
    }
}

static void print_row(const struct runner *x, const struct bench_case *bc, const struct row *r,
                      int bad)
{
    char thr[16], c1[16], c2[16], c3[16];
    if (x->threads_arg < 0)
        snprintf(thr, sizeof(thr), "-");
    else
        snprintf(thr, sizeof(thr), "%d", x->threads);
    trk_bench_ratio(c1, sizeof(c1), r->vs_ref);
    trk_bench_ratio(c2, sizeof(c2), r->vs_opencv);
    trk_bench_ratio(c3, sizeof(c3), r->vs_torch);
    printf("%-24s %-6s %-22s %4s %10.3f %9.3f %9.3f %9.1f %8s %8s %8s%s\n", bc->label,
           trk_pixfmt_name(bc->img->fmt), x->label, thr, r->median_ms, r->upload_ms, r->kernel_ms,
           1000.0 / r->median_ms, c1, c2, c3, bad ? "  MISMATCH" : "");
    fflush(stdout);
}

/* The OpenCV baseline ran on these RGB pixels: its masses must be ours, or
 * its timing is of a different computation. */
static void check_opencv_masses(struct bench_run *R, const struct bench_case *bc)
{
    const struct base *ob1 = R->o->opencv ? baseline_find(&R->ocv, bc->w, bc->h, bc->m, 1) : NULL;
    if (bc->img->fmt != TRK_FMT_RGB24 || bc->space != TRK_SPACE_RGB || !ob1 || !ob1->masses) return;
    const struct trk_json *ms = ob1->masses;
    int nbad = ms->type != TRK_JSON_ARRAY || (int)ms->n != bc->m;
    for (int i = 0; !nbad && i < bc->m; i++)
        if (ms->items[i].type != TRK_JSON_NUMBER ||
            (uint64_t)ms->items[i].number != R->truth[i].mass)
            nbad++;
    if (nbad) {
        fprintf(stderr,
                "OPENCV MASS MISMATCH on %s: the OpenCV baseline did not "
                "compute what the backends compute (different scene "
                "seed?)\n",
                bc->label);
        R->opencv_mass_bad++;
    }
}

/* Every runner on one case, a table row each. 0, or 1 when a backend failed. */
static int run_case(struct bench_run *R, const struct bench_case *bc)
{
    if (R->truth_be) {
        int err;
        if ((err = trk_backend_set_objects(R->truth_be, bc->objs, bc->m)) ||
            (err = trk_backend_process(R->truth_be, bc->img, NULL, R->truth, NULL))) {
            fprintf(stderr, "trackd-bench: cpu-ref: %s\n", trk_strerror(err));
            return 1;
        }
    }
    double ref_ms = 0;
    for (int ri = 0; ri < R->nr; ri++) {
        const struct runner *x = &R->runners[ri];
        int iters = x->kind == TRK_BACKEND_CPU_REF ? R->o->ref_iters : R->o->iters;
        int bad = measure(R, ri, bc, iters);
        if (bad < 0) return 1;
        if (bad) R->mismatches++;
        struct row *r = &R->rows[R->nrows++];
        fill_row(R, x, bc, iters, ref_ms, r);
        r->match = bad == 0;
        if (x->kind == TRK_BACKEND_CPU_REF) ref_ms = r->median_ms;
        print_row(x, bc, r, bad);
    }
    check_opencv_masses(R, bc);
    return 0;
}

/* The standard scene of w x h with m objects in every format and space.
 * 0, or 1 on a failure. */
static int run_scene(struct bench_run *R, int w, int h, int m)
{
    static struct trk_object_def objbuf[TRK_MAX_OBJECTS];
    const struct opts *o = R->o;
    struct trk_scene sc;
    int err = trk_scene_standard(w, h, m, o->seed, &sc);
    if (err) {
        fprintf(stderr, "trackd-bench: scene %dx%d m=%d: %s\n", w, h, m, trk_strerror(err));
        return 1;
    }
    char scene[48];
    snprintf(scene, sizeof(scene), "%dx%d m=%d", w, h, m);
    int failed = 0;
    for (int fi = 0; fi < o->nfmts && !failed; fi++) {
        enum trk_pixfmt fmt = o->fmts[fi];
        uint8_t *buf;
        struct trk_image img;
        /* RGB sources use BT.601 full range (JPEG's YCbCr); YUV scenes
         * are encoded as BT.709 limited, what cameras and files send. */
        bool yuv = fmt >= TRK_FMT_YUYV;
        err = trk_image_from_rgb(sc.rgb, w, h, fmt, yuv ? TRK_MATRIX_BT709 : TRK_MATRIX_BT601, !yuv,
                                 0, &buf, &img);
        if (err) {
            fprintf(stderr, "trackd-bench: image: %s\n", trk_strerror(err));
            failed = 1;
            break;
        }
        for (int si = 0; si < o->nspaces && !failed; si++) {
            struct bench_case bc = { .img = &img, .space = o->spaces[si], .w = w, .h = h, .m = m };
            bc.objs = space_objects(&sc, bc.space, &img, objbuf);
            snprintf(bc.label, sizeof(bc.label), "%s%s%s", scene,
                     bc.space == TRK_SPACE_RGB ? "" : " ",
                     bc.space == TRK_SPACE_RGB ? "" : space_name(bc.space));
            failed = run_case(R, &bc);
        }
        free(buf);
    }
    trk_scene_free(&sc);
    return failed;
}

/* --dump DIR: writes the scenes and exits. */
static int dump_scenes(const struct opts *o)
{
    if (mkdir(o->dump, 0777) && errno != EEXIST) {
        fprintf(stderr, "trackd-bench: mkdir %s: %s\n", o->dump, strerror(errno));
        return 1;
    }
    for (int s = 0; s < o->nsizes; s++)
        for (int k = 0; k < o->nobjs; k++) {
            struct trk_scene sc;
            int err = trk_scene_standard(o->sizes[s][0], o->sizes[s][1], o->objs[k], o->seed, &sc);
            if (err) {
                fprintf(stderr, "trackd-bench: scene: %s\n", trk_strerror(err));
                return 1;
            }
            err = dump_scene(o->dump, &sc, o->seed);
            trk_scene_free(&sc);
            if (err) return 1;
        }
    printf("wrote %d scenes to %s\n", o->nsizes * o->nobjs, o->dump);
    return 0;
}

/* The options that run something else than the table: help, the list of
 * experiments, an experiment. 1 with *rc set when one was given. */
static int other_command(int argc, char **argv, int *rc)
{
    *rc = 0;
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        usage(stdout);
        return 1;
    }
    if (argc > 1 && !strcmp(argv[1], "--list-experiments")) {
        for (int i = 0; i < n_experiments; i++)
            printf("%-16s %s\n", experiments[i]->name, experiments[i]->help);
        return 1;
    }
    if (argc > 2 && !strcmp(argv[1], "--experiment")) {
        for (int i = 0; i < n_experiments; i++)
            if (!strcmp(argv[2], experiments[i]->name)) {
                *rc = experiments[i]->run(argc - 2, argv + 2);
                return 1;
            }
        fprintf(stderr, "trackd-bench: no experiment %s (see --list-experiments)\n", argv[2]);
        *rc = 2;
        return 1;
    }
    return 0;
}

/* The runners and the truth for sizes up to maxw x maxh. 0 or 1. */
static int run_open(struct bench_run *R, int maxw, int maxh)
{
    static struct runner runners[MAX_RUNNERS];
    R->runners = runners;
    if (runners_create(R->o, maxw, maxh, runners, &R->nr)) return 1;
    bool have_ref_runner = R->nr > 0 && runners[0].kind == TRK_BACKEND_CPU_REF;
    /* The truth for every check; reused from the cpu-ref runner when there is one. */
    if (!have_ref_runner) {
        struct trk_backend_cfg cfg = { .kind = TRK_BACKEND_CPU_REF,
                                       .max_width = maxw,
                                       .max_height = maxh };
        int err = trk_backend_create(&cfg, &R->truth_be);
        if (err) {
            fprintf(stderr, "trackd-bench: cpu-ref: %s\n", trk_strerror(err));
            return 1;
        }
    }
    return 0;
}

/* --json FILE, and the summary of mismatches. 0, or 1 when not written. */
static int run_report(const struct bench_run *R, const struct machine *mach)
{
    int failed = 0;
    if (R->o->json) {
        FILE *f = fopen(R->o->json, "w");
        if (!f) {
            fprintf(stderr, "trackd-bench: cannot write %s: %s\n", R->o->json, strerror(errno));
            failed = 1;
        } else {
            json_write(f, R->o, mach, R->rows, R->nrows, R->mismatches, R->opencv_mass_bad);
            if (fclose(f)) failed = 1;
        }
    }
    if (R->mismatches)
        fprintf(stderr,
                "trackd-bench: %d case(s) where a backend's results differ from "
                "cpu-ref: see MISMATCH lines above\n",
                R->mismatches);
    return failed;
}

int main(int argc, char **argv)
{
    int rc;
    if (other_command(argc, argv, &rc)) return rc;
    struct opts o;
    if (parse_opts(argc, argv, &o)) {
        usage(stderr);
        return 2;
    }
    if (o.dump) return dump_scenes(&o);

    struct bench_run R = { .o = &o };
    if (o.opencv && baseline_load(o.opencv, &R.ocv)) return 1;
    if (o.torch && baseline_load(o.torch, &R.torch)) return 1;

    int maxw = 1, maxh = 1;
    for (int s = 0; s < o.nsizes; s++) {
        if (o.sizes[s][0] > maxw) maxw = o.sizes[s][0];
        if (o.sizes[s][1] > maxh) maxh = o.sizes[s][1];
    }
    struct machine mach;
    machine_probe(&mach);
    printf("# trackd-bench  %s  %s, %d cores, %s\n", mach.date, mach.cpu, mach.cores, mach.os);
    if (run_open(&R, maxw, maxh)) return 1;

    printf("# seed %llu, warmup %d, iters %d (cpu-ref %d); times are medians of the wall clock "
           "around trk_backend_process\n",
           (unsigned long long)o.seed, o.warmup, o.iters, o.ref_iters);
    printf("%-24s %-6s %-22s %4s %10s %9s %9s %9s %8s %8s %8s\n", "scene", "format", "backend",
           "thr", "median_ms", "upload", "kernel", "fps", "x ref", "x opencv", "x torch");

    int maxiters = o.iters > o.ref_iters ? o.iters : o.ref_iters;
    R.t_wall = malloc(sizeof(double) * (size_t)maxiters * 4);
    int nrows_max = o.nsizes * o.nobjs * o.nfmts * o.nspaces * (R.nr ? R.nr : 1);
    static struct trk_obj_result truth[TRK_MAX_OBJECTS], got[TRK_MAX_OBJECTS];
    R.truth = truth, R.got = got;
    R.rows = calloc((size_t)nrows_max, sizeof(*R.rows));
    if (!R.t_wall || !R.rows) return 1;
    R.t_total = R.t_wall + maxiters, R.t_up = R.t_total + maxiters, R.t_k = R.t_up + maxiters;

    int failed = 0;
    for (int s = 0; s < o.nsizes && !failed; s++)
        for (int k = 0; k < o.nobjs && !failed; k++)
            failed = run_scene(&R, o.sizes[s][0], o.sizes[s][1], o.objs[k]);
    if (run_report(&R, &mach)) failed = 1;
    for (int i = 0; i < R.nr; i++)
        trk_backend_destroy(&R.runners[i].b);
    trk_backend_destroy(&R.truth_be);
    baseline_free(&R.ocv);
    baseline_free(&R.torch);
    free(R.t_wall);
    free(R.rows);
    return failed || R.mismatches || R.opencv_mass_bad ? 1 : 0;
}
