/* trackd-bench --experiment noisebox: the fast CPU backend's worst case
 * beside its standard scene (issue 14, "bounded worst cases").
 *
 * For each size x object count x format, the standard scene
 * (trk_scene_standard) and the noisebox scene (trk_scene_noisebox: a noise
 * frame, every object a random half-range box, so every object's mask
 * changes at nearly every pixel) run through the "cpu" backend at each
 * thread count; the table shows both medians and their ratio. Every result
 * of every call is compared with cpu-ref's (computed once per scene): a
 * difference prints MISMATCH and makes the exit status 1.
 */
#include "bench.h"

#include "backend.h"
#include "scene.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NB_MAX_LIST 16

struct nb_opts {
    int nsizes, sizes[NB_MAX_LIST][2];
    int nobjs, objs[NB_MAX_LIST];
    int nthreads, threads[NB_MAX_LIST];
    int nfmts;
    enum trk_pixfmt fmts[TRK_FMT_COUNT];
    const char *variant;
    int warmup, iters;
    uint64_t seed;
    const char *json;
};

static void nb_usage(FILE *f)
{
    fprintf(f, "usage: trackd-bench --experiment noisebox [options]\n"
               "  --sizes WxH,...   frame sizes (default 1920x1080,3840x2160)\n"
               "  --objects N,...   object counts (default 8,128,256)\n"
               "  --threads N,...   thread counts, 0 = all cores (default 1,0)\n"
               "  --formats F,...   rgb24 rgba bgr24 bgra yuyv nv12 i420 (default rgb24)\n"
               "  --variant V       lut | lut-portable (default: the backend's default)\n"
               "  --warmup N        untimed calls per case (default 3)\n"
               "  --iters N         timed calls per case (default 20)\n"
               "  --seed N          scene seed (default 20240601)\n"
               "  --json FILE       write the rows as JSON\n");
}

static int nb_parse(int argc, char **argv, struct nb_opts *o)
{
    *o = (struct nb_opts){ .warmup = 3, .iters = 20, .seed = 20240601u };
    o->nsizes = trk_bench_pair_list("1920x1080,3840x2160", NB_MAX_LIST, 1, 16384, o->sizes);
    o->nobjs = trk_bench_int_list("8,128,256", NB_MAX_LIST, 0, TRK_MAX_OBJECTS, o->objs);
    o->nthreads = trk_bench_int_list("1,0", NB_MAX_LIST, 0, 1024, o->threads);
    o->nfmts = 1;
    o->fmts[0] = TRK_FMT_RGB24;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int n = 1;
        if (!v) {
            fprintf(stderr, "trackd-bench noisebox: unknown or incomplete option %s\n", a);
            return -1;
        }
        if (!strcmp(a, "--sizes"))
            n = o->nsizes = trk_bench_pair_list(v, NB_MAX_LIST, 1, 16384, o->sizes);
        else if (!strcmp(a, "--objects"))
            n = o->nobjs = trk_bench_int_list(v, NB_MAX_LIST, 0, TRK_MAX_OBJECTS, o->objs);
        else if (!strcmp(a, "--threads"))
            n = o->nthreads = trk_bench_int_list(v, NB_MAX_LIST, 0, 1024, o->threads);
        else if (!strcmp(a, "--formats")) {
            n = o->nfmts = trk_bench_format_list(v, TRK_FMT_COUNT, o->fmts);
        } else if (!strcmp(a, "--variant"))
            o->variant = v;
        else if (!strcmp(a, "--warmup"))
            n = trk_bench_int(v, 0, 100000, &o->warmup) ? -1 : 1;
        else if (!strcmp(a, "--iters"))
            n = trk_bench_int(v, 1, 100000, &o->iters) ? -1 : 1;
        else if (!strcmp(a, "--seed"))
            n = trk_bench_seed(v, &o->seed) ? -1 : 1;
        else if (!strcmp(a, "--json"))
            o->json = v;
        else {
            fprintf(stderr, "trackd-bench noisebox: unknown option %s\n", a);
            return -1;
        }
        if (n < 0) {
            fprintf(stderr, "trackd-bench noisebox: bad value for %s: %s\n", a, v);
            return -1;
        }
        i++;
    }
    return 0;
}

/* Median ms of the cpu backend on img (results checked against want);
 * *bad counts the calls whose results differ. -1 on an error. */
static double nb_time(struct trk_backend *b, const struct trk_image *img,
                      const struct trk_obj_result *want, int m, const struct nb_opts *o, int *bad)
{
    static struct trk_obj_result got[TRK_MAX_OBJECTS];
    double *t = malloc(sizeof(double) * (size_t)o->iters);
    if (!t) return -1;
    for (int it = -o->warmup; it < o->iters; it++) {
        double t0 = trk_bench_now_ms();
        int err = trk_backend_process(b, img, NULL, got, NULL);
        double dt = trk_bench_now_ms() - t0;
        if (err) {
            fprintf(stderr, "trackd-bench noisebox: process: %s\n", trk_strerror(err));
            free(t);
            return -1;
        }
        if (memcmp(got, want, sizeof(*got) * (size_t)m)) ++*bad;
        if (it >= 0) t[it] = dt;
    }
    double med = trk_bench_median(t, (size_t)o->iters);
    free(t);
    return med;
}

/* The reference's results for one scene in one format (RGB frames BT.601
 * full range, YUV BT.709 limited, as the main benchmark), and the image. */
static int nb_scene(const struct trk_scene *sc, enum trk_pixfmt fmt, struct trk_backend *ref,
                    uint8_t **buf, struct trk_image *img, struct trk_obj_result *want)
{
    const int yuv = fmt >= TRK_FMT_YUYV;
    int err = trk_image_from_rgb(sc->rgb, sc->width, sc->height, fmt,
                                 yuv ? TRK_MATRIX_BT709 : TRK_MATRIX_BT601, !yuv, 0, buf, img);
    if (!err) err = trk_backend_set_objects(ref, sc->objects, sc->n_objects);
    if (!err) err = trk_backend_process(ref, img, NULL, want, NULL);
    if (err) fprintf(stderr, "trackd-bench noisebox: cpu-ref: %s\n", trk_strerror(err));
    return err;
}

static int run_noisebox(int argc, char **argv)
{
    struct nb_opts o;
    if (nb_parse(argc, argv, &o)) {
        nb_usage(stderr);
        return 2;
    }
    int maxw = 1, maxh = 1;
    for (int s = 0; s < o.nsizes; s++) {
        if (o.sizes[s][0] > maxw) maxw = o.sizes[s][0];
        if (o.sizes[s][1] > maxh) maxh = o.sizes[s][1];
    }
    struct trk_backend *ref = NULL, *fast[NB_MAX_LIST] = { 0 };
    struct trk_backend_cfg rc = { .kind = TRK_BACKEND_CPU_REF,
                                  .max_width = maxw,
                                  .max_height = maxh };
    int err = trk_backend_create(&rc, &ref);
    for (int t = 0; !err && t < o.nthreads; t++) {
        struct trk_backend_cfg c = { .kind = TRK_BACKEND_CPU,
                                     .max_width = maxw,
                                     .max_height = maxh,
                                     .threads = o.threads[t],
                                     .variant = o.variant };
        err = trk_backend_create(&c, &fast[t]);
    }
    if (err) {
        fprintf(stderr, "trackd-bench noisebox: backend: %s\n", trk_strerror(err));
        return 1;
    }
    FILE *js = NULL;
    if (o.json && !(js = fopen(o.json, "w"))) {
        fprintf(stderr, "trackd-bench noisebox: cannot write %s: %s\n", o.json, strerror(errno));
        return 1;
    }
    if (js)
        fprintf(js, "{\"experiment\":\"noisebox\",\"seed\":%llu,\"rows\":[",
                (unsigned long long)o.seed);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("# trackd-bench --experiment noisebox: seed %llu, warmup %d, iters %d, %s; medians of "
           "the wall clock around trk_backend_process (ms)\n",
           (unsigned long long)o.seed, o.warmup, o.iters, trk_backend_name(fast[0]));
    printf("%-22s %-6s %4s %12s %12s %9s\n", "scene", "format", "thr", "standard", "noisebox",
           "x std");
    static struct trk_obj_result want_std[TRK_MAX_OBJECTS], want_nb[TRK_MAX_OBJECTS];
    int mismatches = 0, failed = 0, rows = 0;
    for (int s = 0; s < o.nsizes && !failed; s++)
        for (int k = 0; k < o.nobjs && !failed; k++) {
            const int w = o.sizes[s][0], h = o.sizes[s][1], m = o.objs[k];
            struct trk_scene std_sc, nb_sc;
            if (trk_scene_standard(w, h, m, o.seed, &std_sc)) return 1;
            if (trk_scene_noisebox(w, h, m, o.seed, &nb_sc)) return 1;
            for (int fi = 0; fi < o.nfmts && !failed; fi++) {
                uint8_t *b1 = NULL, *b2 = NULL;
                struct trk_image i1, i2;
                if (nb_scene(&std_sc, o.fmts[fi], ref, &b1, &i1, want_std) ||
                    nb_scene(&nb_sc, o.fmts[fi], ref, &b2, &i2, want_nb)) {
                    failed = 1;
                } else {
                    for (int t = 0; t < o.nthreads && !failed; t++) {
                        int bad = 0;
                        double ms[2] = { -1, -1 };
                        if (!trk_backend_set_objects(fast[t], std_sc.objects, m))
                            ms[0] = nb_time(fast[t], &i1, want_std, m, &o, &bad);
                        if (ms[0] >= 0 && !trk_backend_set_objects(fast[t], nb_sc.objects, m))
                            ms[1] = nb_time(fast[t], &i2, want_nb, m, &o, &bad);
                        if (ms[0] < 0 || ms[1] < 0) {
                            failed = 1;
                            break;
                        }
                        if (bad) mismatches++;
                        const int thr = o.threads[t] ? o.threads[t] : (int)cores;
                        char scene[40];
                        snprintf(scene, sizeof(scene), "%dx%d m=%d", w, h, m);
                        printf("%-22s %-6s %4d %12.3f %12.3f %8.1fx%s\n", scene,
                               trk_pixfmt_name(o.fmts[fi]), thr, ms[0], ms[1], ms[1] / ms[0],
                               bad ? "  MISMATCH against cpu-ref" : "");
                        fflush(stdout);
                        if (js)
                            fprintf(js,
                                    "%s\n {\"width\":%d,\"height\":%d,\"objects\":%d,"
                                    "\"format\":\"%s\",\"threads\":%d,\"standard_ms\":%.4f,"
                                    "\"noisebox_ms\":%.4f,\"match\":%s}",
                                    rows ? "," : "", w, h, m, trk_pixfmt_name(o.fmts[fi]), thr,
                                    ms[0], ms[1], bad ? "false" : "true");
                        rows++;
                    }
                }
                free(b1);
                free(b2);
            }
            trk_scene_free(&std_sc);
            trk_scene_free(&nb_sc);
        }
    if (js) {
        fprintf(js, "\n]}\n");
        if (fclose(js)) failed = 1;
    }
    if (mismatches)
        fprintf(stderr, "trackd-bench noisebox: %d case(s) differ from cpu-ref\n", mismatches);
    trk_backend_destroy(&ref);
    for (int t = 0; t < o.nthreads; t++)
        trk_backend_destroy(&fast[t]);
    return failed || mismatches ? 1 : 0;
}

static const struct trk_bench_experiment noisebox_exp = {
    "noisebox", "cpu backend: standard scene beside the noise/half-range-box worst case",
    run_noisebox
};

__attribute__((constructor)) static void register_noisebox(void)
{
    trk_bench_register(&noisebox_exp);
}
