/* trackd-bench --experiment carve: seam carving (gpu/seam.h) time against
 * the frame size and the number of seams removed, the seed's two timing
 * curves (seed 002, Figs. 5.9-5.16), for each form:
 *   cpu-ref     the definition: the whole cost and cumulative map per
 *               seam, a straightforward CPU seam carver (the baseline);
 *   cpu         the fast CPU twin (one thread);
 *   cuda-rows   the CUDA form, the seed's one launch per row;
 *   cuda-tiled  the CUDA form, several rows per launch (trapezoid tiles).
 * The CPU forms reuse one struct trk_seam_scratch across calls.
 * The scene: a smooth textured frame with protected discs (about 8 % of
 * the pixels), the tracked objects. Times are medians of whole calls
 * (host preparation, upload, carve, download, output and map); for CUDA
 * also the device time of the carve kernels alone (CUDA events). Every
 * result is compared with the first form's (carved bytes and map): a
 * difference prints MISMATCH and makes the exit status 1.
 */
#include "bench.h"

#include "seam.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CV_MAX 16

enum { CV_REF, CV_CPU, CV_CUDA_ROWS, CV_CUDA_TILED, CV_FORMS };
static const char *const cv_names[CV_FORMS] = { "cpu-ref", "cpu", "cuda-rows", "cuda-tiled" };

struct cv_opts {
    int nsizes, sizes[CV_MAX][2];
    int nseams, seams[CV_MAX];
    int rows; /* horizontal seams removed too */
    int nforms, forms[CV_FORMS];
    int warmup, iters, ref_iters;
};

static void cv_usage(FILE *f)
{
    fprintf(f, "usage: trackd-bench --experiment carve [options]\n"
               "  --sizes WxH,...   frame sizes (default 1280x720,1920x1080)\n"
               "  --seams N,...     vertical seams removed (default 1,16,64)\n"
               "  --rows N          horizontal seams removed as well (default 0)\n"
               "  --forms F,...     cpu-ref cpu cuda-rows cuda-tiled (default all; the\n"
               "                    first is the one the others are checked against)\n"
               "  --warmup N        untimed calls per case (default 1)\n"
               "  --iters N         timed calls per case (default 5)\n"
               "  --ref-iters N     timed calls of cpu-ref (default 1)\n");
}

static int carve_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

/* A comma list: kind 0 ints >= 0, 1 WxH pairs, 2 form names. */
static int carve_list(const char *s, int kind, int *out, int *n)
{
    char buf[256];
    if (strlen(s) >= sizeof buf) return -1;
    strcpy(buf, s);
    *n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (*n >= CV_MAX || (kind == 2 && *n >= CV_FORMS)) return -1;
        if (kind == 1) {
            char *x = strchr(t, 'x');
            if (!x) return -1;
            *x = '\0';
            if (carve_int(t, 1, TRK_SEAM_MAX_SIDE, &out[2 * *n]) ||
                carve_int(x + 1, 1, TRK_SEAM_MAX_SIDE, &out[2 * *n + 1]))
                return -1;
        } else if (kind == 2) {
            int f = 0;
            while (f < CV_FORMS && strcmp(t, cv_names[f]))
                f++;
            if (f == CV_FORMS) return -1;
            out[*n] = f;
        } else if (carve_int(t, 0, TRK_SEAM_MAX_SIDE - 1, &out[*n])) {
            return -1;
        }
        (*n)++;
    }
    return *n ? 0 : -1;
}

static int cv_parse(int argc, char **argv, struct cv_opts *o)
{
    *o = (struct cv_opts){
        2, { { 1280, 720 }, { 1920, 1080 } }, 3, { 1, 16, 64 }, 0, 4, { 0, 1, 2, 3 }, 1, 5, 1
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad;
        if (!strcmp(a, "--help")) {
            cv_usage(stdout);
            return 1;
        }
        if (!v)
            bad = 1;
        else if (!strcmp(a, "--sizes"))
            bad = carve_list(v, 1, &o->sizes[0][0], &o->nsizes);
        else if (!strcmp(a, "--seams"))
            bad = carve_list(v, 0, o->seams, &o->nseams);
        else if (!strcmp(a, "--forms"))
            bad = carve_list(v, 2, o->forms, &o->nforms);
        else if (!strcmp(a, "--rows"))
            bad = carve_int(v, 0, TRK_SEAM_MAX_SIDE - 1, &o->rows);
        else if (!strcmp(a, "--warmup"))
            bad = carve_int(v, 0, 1000, &o->warmup);
        else if (!strcmp(a, "--iters"))
            bad = carve_int(v, 1, 1000, &o->iters);
        else if (!strcmp(a, "--ref-iters"))
            bad = carve_int(v, 1, 1000, &o->ref_iters);
        else
            bad = 1;
        if (bad) {
            fprintf(stderr, "carve: bad option %s %s\n", a, v ? v : "");
            cv_usage(stderr);
            return -1;
        }
        i++;
    }
    return 0;
}

/* The scene: gradients and blocks with a little noise, and discs of their
 * own colours on a loose grid, protected. */
static void cv_scene(uint8_t *px, uint8_t *prot, int w, int h)
{
    uint32_t r = 12345;
    int rad = (w < h ? w : h) / 14 + 1, step = 5 * rad;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *p = px + 3 * ((size_t)y * w + x);
            r = r * 1103515245u + 12345u;
            int gx = x % step - step / 2, gy = y % step - step / 2,
                in = gx * gx + gy * gy < rad * rad;
            prot[(size_t)y * w + x] = (uint8_t)in;
            for (int c = 0; c < 3; c++)
                p[c] = in ? (uint8_t)(200 + 20 * c)
                          : (uint8_t)((x / 2 + y / 3 + 60 * ((x / 37 + y / 23 + c) % 3) +
                                       (int)(r >> 28)) &
                                      0xff);
        }
}

/* One form's call. 0, or a negative code (TRK_ENODEV: not here). */
static int cv_call(int form, struct trk_seam_cuda *cu, const struct trk_seam_job *job,
                   double *dev_ms)
{
    struct trk_seam_info info;
    *dev_ms = 0;
    switch (form) {
    case CV_REF: return trk_seam_carve_ref(job, &info);
    case CV_CPU: return trk_seam_carve_fast(job, &info);
    default:
        if (!cu) return TRK_ENODEV;
        return trk_seam_cuda_carve(cu,
                                   form == CV_CUDA_ROWS ? TRK_SEAM_CUDA_ROWS : TRK_SEAM_CUDA_TILED,
                                   job, &info, dev_ms);
    }
}

/* Times one form on one case; checks its output against want (NULL: none
 * yet). Returns 0, 1 on a mismatch or failure, -1 when skipped. */
static int cv_case(const struct cv_opts *o, int form, struct trk_seam_cuda *cu,
                   struct trk_seam_job *job, uint8_t *want, int32_t *want_map, int seams)
{
    const size_t nd = (size_t)job->dst_w * job->dst_h, bytes = nd * 3;
    int iters = form == CV_REF ? o->ref_iters : o->iters, rc = 0, mismatch = 0;
    double t[1000], dev[1000], d;
    /* cpu-ref is slow: one warm-up call at most (its scratch's pages). */
    for (int i = 0; i < (form == CV_REF && o->warmup ? 1 : o->warmup) && rc == 0; i++)
        rc = cv_call(form, cu, job, &d);
    for (int i = 0; i < iters && rc == 0; i++) {
        double t0 = trk_bench_now_ms();
        rc = cv_call(form, cu, job, &dev[i]);
        t[i] = trk_bench_now_ms() - t0;
    }
    const struct trk_image *s = job->src;
    if (rc) {
        printf("%5dx%-5d %5d %-10s %s\n", s->width, s->height, seams, cv_names[form],
               rc == TRK_ENODEV ? "skipped (no CUDA form or GPU here)" : "FAILED");
        return rc == TRK_ENODEV ? -1 : 1;
    }
    if (want && (memcmp(want, job->dst, bytes) ||
                 memcmp(want_map, job->map->src_of, nd * sizeof(int32_t)))) {
        printf("MISMATCH: %s carves %dx%d (%d seams) differently\n", cv_names[form], s->width,
               s->height, seams);
        mismatch = 1;
    }
    double med = trk_bench_median(t, (size_t)iters), dmed = trk_bench_median(dev, (size_t)iters);
    int total = s->width - job->dst_w + s->height - job->dst_h;
    char dv[32] = "-";
    if (form >= CV_CUDA_ROWS) snprintf(dv, sizeof dv, "%.2f", dmed);
    printf("%5dx%-5d %5d %-10s %10.2f %10s %9.3f\n", s->width, s->height, seams, cv_names[form],
           med, dv, total ? med / total : 0.0);
    return mismatch;
}

static int run_carve(int argc, char **argv)
{
    struct cv_opts o;
    int rc = cv_parse(argc, argv, &o);
    if (rc) return rc < 0 ? 2 : 0;
    int maxw = 1, maxh = 1, bad = 0;
    for (int i = 0; i < o.nsizes; i++) {
        maxw = o.sizes[i][0] > maxw ? o.sizes[i][0] : maxw;
        maxh = o.sizes[i][1] > maxh ? o.sizes[i][1] : maxh;
    }
    struct trk_seam_cuda *cu = NULL;
    /* The CPU forms reuse one scratch, as a daemon would (the CUDA form
     * has its own). */
    struct trk_seam_scratch *scratch = NULL;
    if (trk_seam_scratch_create(&scratch, maxw, maxh)) {
        fprintf(stderr, "carve: out of memory\n");
        return 1;
    }
    int want_cuda = 0;
    for (int f = 0; f < o.nforms; f++)
        want_cuda |= o.forms[f] >= CV_CUDA_ROWS;
    if (want_cuda && trk_seam_cuda_create(&cu, maxw, maxh))
        printf("carve: CUDA form unavailable, its rows are skipped\n");
    printf("%-11s %5s %-10s %10s %10s %9s\n", "size", "seams", "form", "ms", "device ms",
           "ms/seam");
    for (int i = 0; i < o.nsizes; i++) {
        const int w = o.sizes[i][0], h = o.sizes[i][1];
        uint8_t *px = malloc((size_t)w * h * 3), *prot = malloc((size_t)w * h);
        uint8_t *dst = malloc((size_t)w * h * 3), *want = malloc((size_t)w * h * 3);
        int32_t *so = malloc((size_t)w * h * 4), *want_map = malloc((size_t)w * h * 4);
        cv_scene(px, prot, w, h);
        struct trk_image src = { { px },        { (size_t)w * 3 }, w,    h,
                                 TRK_FMT_RGB24, TRK_MATRIX_BT601,  true, TRK_MEM_HOST };
        for (int k = 0; k < o.nseams; k++) {
            if (o.seams[k] >= w || o.rows >= h) continue;
            struct trk_seam_map map = { 0, 0, 0, 0, so, NULL };
            struct trk_seam_job job = { &src,
                                        prot,
                                        (size_t)w,
                                        w - o.seams[k],
                                        h - o.rows,
                                        dst,
                                        (size_t)(w - o.seams[k]) * 3,
                                        &map,
                                        scratch };
            int have = 0; /* want holds the first form's result */
            for (int f = 0; f < o.nforms; f++) {
                int r = cv_case(&o, o.forms[f], cu, &job, have ? want : NULL, want_map, o.seams[k]);
                bad |= r > 0;
                if (f == 0 && r == 0) {
                    have = 1;
                    memcpy(want, dst, (size_t)job.dst_w * job.dst_h * 3);
                    memcpy(want_map, so, (size_t)job.dst_w * job.dst_h * 4);
                }
            }
        }
        free(px), free(prot), free(dst), free(want), free(so), free(want_map);
    }
    trk_seam_cuda_destroy(&cu);
    trk_seam_scratch_destroy(&scratch);
    return bad;
}

static const struct trk_bench_experiment carve_exp = {
    "carve", "seam carving: time vs frame size and seams removed, every form", run_carve
};
__attribute__((constructor)) static void carve_reg(void)
{
    trk_bench_register(&carve_exp);
}
