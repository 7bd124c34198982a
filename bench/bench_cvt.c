/* trackd-bench --experiment cvt: Lloyd's algorithm for a centroidal Voronoi
 * tessellation computed with the regional multiple reduction, the seed's own
 * application of the operator (seed 003 section 3.4; docs/ARCHITECTURE.md).
 *
 * N generators (integer positions, seeded) in a W x H domain. Each
 * iteration, for every generator k, one regional reduction over the square
 * of half-side R around it (clipped to the domain) accumulates the pixels
 * nearer to k than to any other generator (squared distances; a tie goes to
 * the lower index): mass, sum of x, sum of y. Then k moves to the rounded
 * centroid. Only generators within 3R (box) can be nearer to a pixel of k's
 * region, so each region tests those candidates, found once per iteration
 * on the host with a grid of 3R cells. R = ceil(factor * sqrt(W H / N)):
 * a cell larger than its region is cut to it (the RRM's approximation; the
 * same on every backend).
 *
 * Per N: time per iteration of the reduction on the CPU (plain C, 1 thread
 * and all cores: whole generators from a dispenser) and, in CUDA builds with
 * a device, bench_cvt.cu's kernel (one block per generator); every backend's
 * integer sums must equal the 1-thread CPU ones every iteration, and with
 * N <= 64 on a domain of at most 65536 pixels the first iteration's sums are
 * also checked against a brute-force Voronoi assignment of every pixel when
 * the regions cover the domain (factor large enough). MISMATCH and exit
 * status 1 otherwise.
 */
#include "bench.h"

#include "scene.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CV_MAX_LIST 16
#define CV_MAX_GEN  65536
#define CV_SEED     20240614u

/* One iteration's problem: generators, their candidates (generator k's
 * are cand[coff[k] .. coff[k + 1] - 1]), the region half-side. */
struct cvt {
    int w, h, n, R;
    int32_t *gx, *gy, *coff, *cand;
    size_t cand_cap;
    uint64_t *mass, *sx, *sy; /* out, per generator */
    atomic_int next;
};

/* Generator k's regional reduction. */
static void cvt_region(struct cvt *c, int k)
{
    const int gx = c->gx[k], gy = c->gy[k], R = c->R;
    const int x0 = gx - R > 0 ? gx - R : 0, x1 = gx + R < c->w - 1 ? gx + R : c->w - 1;
    const int y0 = gy - R > 0 ? gy - R : 0, y1 = gy + R < c->h - 1 ? gy + R : c->h - 1;
    const int32_t *cl = c->cand + c->coff[k];
    const int nc = c->coff[k + 1] - c->coff[k];
    uint64_t m = 0, sx = 0, sy = 0;
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++) {
            const int64_t dk = (int64_t)(x - gx) * (x - gx) + (int64_t)(y - gy) * (y - gy);
            bool mine = true;
            for (int i = 0; i < nc && mine; i++) {
                const int j = cl[i];
                const int64_t dj = (int64_t)(x - c->gx[j]) * (x - c->gx[j]) +
                                   (int64_t)(y - c->gy[j]) * (y - c->gy[j]);
                mine = dj > dk || (dj == dk && j > k);
            }
            if (!mine) continue;
            m++;
            sx += (uint64_t)x;
            sy += (uint64_t)y;
        }
    c->mass[k] = m, c->sx[k] = sx, c->sy[k] = sy;
}

static void *cvt_worker(void *arg)
{
    struct cvt *c = arg;
    for (int k; (k = atomic_fetch_add(&c->next, 1)) < c->n;)
        cvt_region(c, k);
    return NULL;
}

/* All regions on nt threads (the caller's one of them). */
static int cvt_cpu(struct cvt *c, int nt)
{
    pthread_t th[64];
    int started = 0;
    atomic_store(&c->next, 0);
    for (int i = 1; i < nt && i < 64; i++, started++)
        if (pthread_create(&th[started], NULL, cvt_worker, c)) break;
    cvt_worker(c);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    return 0;
}

/* Candidates: every other generator within 3R (box) of each generator,
 * from a grid of 3R cells (3 x 3 cells around each). 0 or -1 (memory). */
static int cvt_candidates(struct cvt *c)
{
    const int cs = 3 * c->R, gw = c->w / cs + 1, gh = c->h / cs + 1;
    int *head = malloc(sizeof(int) * (size_t)gw * (size_t)gh),
        *nxt = malloc(sizeof(int) * (size_t)c->n);
    if (!head || !nxt) {
        free(head);
        free(nxt);
        return -1;
    }
    for (int i = 0; i < gw * gh; i++)
        head[i] = -1;
    for (int k = c->n - 1; k >= 0; k--) { /* lists in index order */
        const int cell = (c->gy[k] / cs) * gw + c->gx[k] / cs;
        nxt[k] = head[cell];
        head[cell] = k;
    }
    size_t n = 0;
    for (int k = 0; k < c->n; k++) {
        c->coff[k] = (int32_t)n;
        const int cx = c->gx[k] / cs, cy = c->gy[k] / cs;
        for (int yy = cy - 1; yy <= cy + 1; yy++)
            for (int xx = cx - 1; xx <= cx + 1; xx++) {
                if (xx < 0 || yy < 0 || xx >= gw || yy >= gh) continue;
                for (int j = head[yy * gw + xx]; j >= 0; j = nxt[j]) {
                    if (j == k || abs(c->gx[j] - c->gx[k]) > cs || abs(c->gy[j] - c->gy[k]) > cs)
                        continue;
                    if (n == c->cand_cap) {
                        size_t cap = c->cand_cap ? 2 * c->cand_cap : 4096;
                        int32_t *p = realloc(c->cand, cap * sizeof(*p));
                        if (!p) {
                            free(head);
                            free(nxt);
                            return -1;
                        }
                        c->cand = p, c->cand_cap = cap;
                    }
                    c->cand[n++] = j;
                }
            }
    }
    c->coff[c->n] = (int32_t)n;
    free(head);
    free(nxt);
    return 0;
}

/* Lloyd's step: each generator to its rounded centroid (kept when empty). */
static void cvt_move(struct cvt *c)
{
    for (int k = 0; k < c->n; k++)
        if (c->mass[k]) {
            c->gx[k] = (int32_t)((c->sx[k] + c->mass[k] / 2) / c->mass[k]);
            c->gy[k] = (int32_t)((c->sy[k] + c->mass[k] / 2) / c->mass[k]);
        }
}

/* The first iteration's sums against every pixel's nearest generator of
 * all; number of generators that differ. */
static int cvt_brute(const struct cvt *c)
{
    uint64_t *m = calloc((size_t)c->n * 3, sizeof(uint64_t));
    if (!m) return c->n;
    for (int y = 0; y < c->h; y++)
        for (int x = 0; x < c->w; x++) {
            int best = 0;
            int64_t bd = INT64_MAX;
            for (int k = 0; k < c->n; k++) {
                const int64_t d = (int64_t)(x - c->gx[k]) * (x - c->gx[k]) +
                                  (int64_t)(y - c->gy[k]) * (y - c->gy[k]);
                if (d < bd) bd = d, best = k;
            }
            m[3 * best]++, m[3 * best + 1] += (uint64_t)x, m[3 * best + 2] += (uint64_t)y;
        }
    int bad = 0;
    for (int k = 0; k < c->n; k++)
        bad += m[3 * k] != c->mass[k] || m[3 * k + 1] != c->sx[k] || m[3 * k + 2] != c->sy[k];
    free(m);
    return bad;
}

static void cv_usage(FILE *f)
{
    fprintf(f, "usage: trackd-bench --experiment cvt [options]\n"
               "  --size WxH          domain (default 1024x1024)\n"
               "  --generators N,...  generator counts (default 16,64,256,1024,4096)\n"
               "  --iters N           Lloyd iterations per count (default 10)\n"
               "  --factor F          region half-side R = ceil(F sqrt(W H / N)) (default 1.0)\n"
               "  --threads N,...     CPU thread counts, 0 = all cores (default 1,0)\n"
               "  --no-cuda           CPU only\n");
}

struct cv_opts {
    int w, h, iters, ngen, gens[CV_MAX_LIST], nthr, thr[CV_MAX_LIST];
    double factor;
    bool cuda;
};

/* The experiment's options into o (defaults first). 0, or 64 with usage. */
static int cv_parse(int argc, char **argv, struct cv_opts *o)
{
    *o = (struct cv_opts){ .w = 1024,
                           .h = 1024,
                           .iters = 10,
                           .ngen = 5,
                           .gens = { 16, 64, 256, 1024, 4096 },
                           .nthr = 2,
                           .thr = { 1, 0 },
                           .factor = 1.0,
                           .cuda = true };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "--no-cuda")) {
            o->cuda = false;
            continue;
        }
        if (!v) {
            cv_usage(stderr);
            return 64;
        }
        i++;
        if (!strcmp(a, "--size")) {
            int wh[2];
            bad = trk_bench_pair(v, 1, 16384, 16384, wh);
            if (!bad) o->w = wh[0], o->h = wh[1];
        } else if (!strcmp(a, "--generators")) {
            bad = (o->ngen = trk_bench_int_list(v, CV_MAX_LIST, 1, CV_MAX_GEN, o->gens)) < 0;
        } else if (!strcmp(a, "--threads")) {
            bad = (o->nthr = trk_bench_int_list(v, CV_MAX_LIST, 0, 64, o->thr)) < 0;
        } else if (!strcmp(a, "--iters")) {
            bad = trk_bench_int(v, 1, 100000, &o->iters);
        } else if (!strcmp(a, "--factor")) {
            char *end;
            o->factor = strtod(v, &end);
            bad = end == v || *end || !(o->factor > 0 && o->factor <= 100);
        } else {
            bad = 1;
        }
        if (bad) {
            fprintf(stderr, "trackd-bench cvt: bad option or value: %s %s\n", a, v);
            cv_usage(stderr);
            return 64;
        }
    }
    return 0;
}

/* Iteration it's sums in c against the reference: backend 0 (b == 0)
 * writes them into ref, and on a small domain its first iteration is
 * checked by brute force (*note then says so); every other backend must
 * equal them. Adds the mismatches to *bad. */
static void cv_check(const struct cv_opts *o, const struct cvt *c, int b, int it, uint64_t *ref,
                     long *bad, const char **note)
{
    const int n = c->n;
    uint64_t *r = ref + (size_t)it * 3 * (size_t)n;
    if (b == 0) {
        memcpy(r, c->mass, sizeof(uint64_t) * 3 * (size_t)n);
        if (it == 0 && n <= 64 && (long)o->w * o->h <= 65536 && c->R >= o->w && c->R >= o->h) {
            const int nbad = cvt_brute(c);
            if (nbad) {
                fprintf(stderr, "MISMATCH cvt N=%d: %d generators differ from brute force\n", n,
                        nbad);
                (*bad)++;
            }
            *note = nbad ? "" : " (= brute force)";
        }
    } else if (memcmp(r, c->mass, sizeof(uint64_t) * 3 * (size_t)n)) {
        if (!*bad)
            fprintf(stderr, "MISMATCH cvt N=%d iteration %d: sums differ from 1 thread\n", n, it);
        (*bad)++;
    }
}

/* One backend (b < o->nthr: the CPU with o->thr[b] threads; b == o->nthr:
 * cuda) for n generators of region half-side R, every iteration from start
 * and checked (cv_check), then its line. 0, 1 on a mismatch, 71 out of
 * memory. */
static int cv_backend(const struct cv_opts *o, int n, int R, int b, const int32_t *start,
                      uint64_t *ref)
{
    const bool gpu = b == o->nthr;
    int t = gpu ? 1 : o->thr[b];
    if (!gpu && t == 0) t = (int)sysconf(_SC_NPROCESSORS_ONLN);
    struct cvt c = { .w = o->w, .h = o->h, .n = n, .R = R };
    c.gx = malloc(sizeof(int32_t) * (size_t)n);
    c.gy = malloc(sizeof(int32_t) * (size_t)n);
    c.coff = malloc(sizeof(int32_t) * ((size_t)n + 1));
    c.mass = malloc(sizeof(uint64_t) * 3 * (size_t)n);
    if (!c.gx || !c.gy || !c.coff || !c.mass) return 71;
    c.sx = c.mass + n, c.sy = c.mass + 2 * n;
    for (int k = 0; k < n; k++)
        c.gx[k] = start[2 * k], c.gy[k] = start[2 * k + 1];
    double *ms = calloc((size_t)o->iters, sizeof(double)), cand_ms = 0;
    long bad = 0, ncand = 0;
    uint64_t cover = 0;
    const char *note = "";
    for (int it = 0; it < o->iters && ms; it++) {
        double t0 = trk_bench_now_ms();
        if (cvt_candidates(&c)) return 71;
        cand_ms += trk_bench_now_ms() - t0;
        ncand += c.coff[n];
        t0 = trk_bench_now_ms();
        if (gpu) {
            char why[256] = "";
            if (trk_bench_cuda_cvt(c.gx, c.gy, c.coff, c.cand, n, o->w, o->h, R, c.mass, c.sx, c.sy,
                                   &ms[it], why, sizeof(why))) {
                printf("# skipped cuda: %s\n", why);
                note = "skip";
                break;
            }
        } else {
            cvt_cpu(&c, t);
            ms[it] = trk_bench_now_ms() - t0;
        }
        cv_check(o, &c, b, it, ref, &bad, &note);
        if (it == o->iters - 1)
            for (int k = 0; k < n; k++)
                cover += c.mass[k];
        cvt_move(&c);
    }
    if (strcmp(note, "skip")) {
        const double med = trk_bench_median(ms, (size_t)o->iters);
        char name[32];
        snprintf(name, sizeof(name), gpu ? "cuda" : "cpu:%d", t);
        printf("%6d %5d %6.1f %-8s %10.3f %10.3f %7.1f%% %s%s\n", n, R,
               (double)ncand / o->iters / n, name, med, cand_ms / o->iters,
               100.0 * (double)cover / ((double)o->w * o->h), bad ? "MISMATCH" : "ok", note);
        fflush(stdout);
    }
    free(ms);
    free(c.gx);
    free(c.gy);
    free(c.coff);
    free(c.cand);
    free(c.mass);
    return bad ? 1 : 0;
}

static int run_cvt(int argc, char **argv)
{
    struct cv_opts o;
    int rc = cv_parse(argc, argv, &o);
    if (rc) return rc;
    const bool have_cuda = o.cuda && trk_bench_cuda_cvt != NULL;
    if (o.cuda && !have_cuda) printf("# skipped cuda: this build has no CUDA (bench_cvt.cu)\n");
    printf("# cvt: Lloyd on a %dx%d domain, %d iterations; ms = median time of one iteration's "
           "reductions (all generators)\n",
           o.w, o.h, o.iters);
    printf("%6s %5s %6s %-8s %10s %10s %8s %s\n", "N", "R", "cand", "backend", "ms/iter", "cand_ms",
           "cover", "check");
    int status = 0;
    for (int gi = 0; gi < o.ngen; gi++) {
        const int n = o.gens[gi];
        const int R = (int)ceil(o.factor * sqrt((double)o.w * o.h / n));
        const int nb = o.nthr + have_cuda;
        /* Every backend runs the same iterations from the same start. */
        int32_t *start = malloc(sizeof(int32_t) * 2 * (size_t)n);
        uint64_t *ref = malloc(sizeof(uint64_t) * 3 * (size_t)n * (size_t)o.iters);
        if (!start || !ref) return 71;
        uint64_t st = CV_SEED + (uint64_t)n;
        for (int k = 0; k < n; k++) {
            start[2 * k] = (int32_t)(trk_rand_next(&st) % (uint64_t)o.w);
            start[2 * k + 1] = (int32_t)(trk_rand_next(&st) % (uint64_t)o.h);
        }
        for (int b = 0; b < nb; b++) {
            rc = cv_backend(&o, n, R, b, start, ref);
            if (rc == 71) return 71;
            if (rc) status = 1;
        }
        free(start);
        free(ref);
    }
    return status;
}

static const struct trk_bench_experiment cvt_exp = {
    "cvt", "Lloyd's CVT with the regional reduction (seed 003 section 3.4)", run_cvt
};

__attribute__((constructor)) static void cvt_reg(void)
{
    trk_bench_register(&cvt_exp);
}
