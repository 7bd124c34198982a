/* Canny's fast CPU twin (canny.h) and the runner's front door (CPU or CUDA).
 *
 * The frame is cut into one band of rows per thread; the threads meet at a
 * barrier between phases, as each phase reads rows of its neighbours' bands:
 *   A  luma rows and the Gaussian's horizontal pass (prefilter.h's fast
 *      hrows) into the 16-bit intermediate;
 *   B  the vertical pass (vrows) into the smoothed frame, whose rows carry
 *      one replicated column each side (Sobel reads them unclamped);
 *   C  Sobel rows kept in a ring of three (m2 with a 0 column each side:
 *      rule 4's outside neighbours), non-maximum suppression and thresholds
 *      into the class map, which has a border of NONE all round;
 *   D  hysteresis inside the band: a depth-first flood from every strong
 *      pixel over candidates, not leaving the band.
 * Then the calling thread joins the bands: wherever an edge pixel touches an
 * unreached candidate across a band boundary it floods from there, now
 * without bounds. That reaches exactly the candidates 8-connected to a
 * strong pixel (rule 6): any path from a strong pixel either stays in a
 * band (D floods it) or crosses a boundary from a marked pixel (the join
 * floods it), and floods mark everything they touch. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "canny_impl.h"
#include "trk_clock.h"

struct band {
    struct trk_canny *c;
    int y0, y1;   /* rows [y0, y1) */
    uint8_t *pad; /* prefilter.h's hrows scratch */
    int16_t *gx[3], *gy[3];
    uint32_t *m2[3]; /* W + 2 entries: m2 of x at [x + 1], 0 at both ends */
    uint64_t strong, edges, edge_m2;
};

struct trk_canny {
    enum trk_canny_kind kind;
    struct trk_canny_cuda *cu;
    int max_w, max_h, nthreads;
    uint8_t *luma;      /* W x H, rows max_w apart */
    uint16_t *tmp;      /* the Gaussian's intermediate, rows tmp_pitch apart */
    uint8_t *sm;        /* smoothed, row y at sm + y * sm_pitch + 1 */
    uint8_t *cls;       /* (W + 2) x (H + 2), pixel (x, y) at (y + 1) * cp + x + 1 */
    uint32_t *m2;       /* m2 of the candidates, W x H packed */
    uint32_t *stack;    /* class-map indices; band b uses from y0 * W on */
    uint8_t *own_edges; /* W x H, the map when the caller wants the sums only */
    struct band *band;  /* one per thread */
    pthread_t *th;
    int nth_started;
    pthread_mutex_t gate;
    pthread_barrier_t bar;
    int bar_ok, quit;
    /* The frame in hand (set by the caller before the start barrier). */
    const struct trk_canny_params *p;
    const struct trk_image *img;
    uint8_t *edges;
    size_t ep, sm_pitch, cp, tmp_pitch;
    int W, H;
    double t_phase[4]; /* thread 0's clock at the end of A, B, C, D */
    uint64_t fix_edges, fix_m2;
};

/* -------------------------------------------------------- phases A, B */

/* Luma row y into out (rule 1). */
static void luma_row(const struct trk_image *img, int y, uint8_t *restrict out)
{
    const int W = img->width;
    const uint8_t *restrict row = img->plane[0] + (size_t)y * img->pitch[0];
    switch (img->fmt) {
    case TRK_FMT_YUYV:
        for (int x = 0; x < W; x++)
            out[x] = row[2 * x];
        return;
    case TRK_FMT_NV12:
    case TRK_FMT_I420: memcpy(out, row, (size_t)W); return;
    default: break;
    }
    const int bpp = trk_pixfmt_bpp(img->fmt);
    const int bgr = img->fmt == TRK_FMT_BGR24 || img->fmt == TRK_FMT_BGRA;
    const struct trk_rgb2ycc_coef *k =
        &trk_rgb2ycc_coefs[trk_coef_index(img->matrix, img->full_range)];
    const int ri = bgr ? 2 : 0, bi = bgr ? 0 : 2;
    for (int x = 0; x < W; x++) {
        const uint8_t *px = row + (size_t)x * (size_t)bpp;
        out[x] = trk_canny_y(k, px[ri], px[1], px[bi]);
    }
}

/* The replicated column each side of smoothed row y. */
static void sm_pad(struct trk_canny *c, int y)
{
    uint8_t *r = c->sm + (size_t)y * c->sm_pitch;
    r[0] = r[1];
    r[c->W + 1] = r[c->W];
}

static const struct trk_prefilter_chan *grey_chan(const struct trk_canny *c,
                                                  struct trk_prefilter_chan *ch)
{
    *ch =
        (struct trk_prefilter_chan){ 0, 0, 1, c->W, c->H, TRK_PREFILTER_FULL, TRK_PREFILTER_FULL };
    return ch;
}

static void phase_a(struct trk_canny *c, struct band *b)
{
    const int smooth = c->p->pf.sigma > 0;
    for (int y = b->y0; y < b->y1; y++) {
        uint8_t *out =
            smooth ? c->luma + (size_t)y * (size_t)c->max_w : c->sm + (size_t)y * c->sm_pitch + 1;
        luma_row(c->img, y, out);
        if (!smooth) sm_pad(c, y);
    }
    if (!smooth || b->y0 >= b->y1) return;
    struct trk_prefilter_chan ch;
    const struct trk_image grey = { .plane = { c->luma }, .pitch = { (size_t)c->max_w } };
    trk_prefilter_hrows(&c->p->pf, grey_chan(c, &ch), &grey, b->y0, b->y1, c->tmp, c->tmp_pitch,
                        b->pad);
}

static void phase_b(struct trk_canny *c, struct band *b)
{
    if (c->p->pf.sigma <= 0 || b->y0 >= b->y1) return;
    struct trk_prefilter_chan ch;
    uint8_t *const dst[3] = { c->sm + 1, NULL, NULL };
    const size_t dp[3] = { c->sm_pitch, 0, 0 };
    trk_prefilter_vrows(&c->p->pf, grey_chan(c, &ch), c->tmp, c->tmp_pitch, b->y0, b->y1, dst, dp);
    for (int y = b->y0; y < b->y1; y++)
        sm_pad(c, y);
}

/* ----------------------------------------------------------- phase C */

/* Sobel of row y (0 <= y < H) into gx, gy and m2 (m2[x + 1]). */
static void sobel_row(const struct trk_canny *c, int y, int16_t *restrict gx, int16_t *restrict gy,
                      uint32_t *restrict m2)
{
    const int W = c->W;
    const uint8_t *u = c->sm + (size_t)(y > 0 ? y - 1 : 0) * c->sm_pitch + 1;
    const uint8_t *m = c->sm + (size_t)y * c->sm_pitch + 1;
    const uint8_t *d = c->sm + (size_t)(y + 1 < c->H ? y + 1 : y) * c->sm_pitch + 1;
    for (int x = 0; x < W; x++) {
        const int h = (u[x + 1] - u[x - 1]) + 2 * (m[x + 1] - m[x - 1]) + (d[x + 1] - d[x - 1]);
        const int v = (d[x - 1] + 2 * d[x] + d[x + 1]) - (u[x - 1] + 2 * u[x] + u[x + 1]);
        gx[x] = (int16_t)h;
        gy[x] = (int16_t)v;
        m2[x + 1] = (uint32_t)(h * h + v * v);
    }
    m2[0] = m2[W + 1] = 0;
}

/* Ring slot i of b filled with row y, or with m2 = 0 when y is outside. */
static void ring_fill(const struct trk_canny *c, struct band *b, int i, int y)
{
    if (y >= 0 && y < c->H)
        sobel_row(c, y, b->gx[i], b->gy[i], b->m2[i]);
    else
        memset(b->m2[i], 0, (size_t)(c->W + 2) * sizeof(uint32_t));
}

/* Rules 4 and 5 for row y; up, mid, dn: m2 rows y - 1, y, y + 1. */
static void nms_row(struct trk_canny *c, struct band *b, int y, const int16_t *gx,
                    const int16_t *gy, const uint32_t *up, const uint32_t *mid, const uint32_t *dn)
{
    const uint32_t lo = c->p->low2, hi = c->p->high2;
    uint8_t *restrict cls = c->cls + (size_t)(y + 1) * c->cp + 1;
    uint8_t *restrict e = c->edges + (size_t)y * c->ep;
    memset(cls, TRK_CANNY_NONE, (size_t)c->W);
    memset(e, 0, (size_t)c->W);
    for (int x = 0; x < c->W; x++) {
        const uint32_t m = mid[x + 1];
        if (m <= lo) continue;
        uint32_t n1, n2;
        const int sec = trk_canny_sector(gx[x], gy[x]);
        switch (sec) {
        case TRK_CANNY_SECTOR_H: n1 = mid[x], n2 = mid[x + 2]; break;
        case TRK_CANNY_SECTOR_V: n1 = up[x + 1], n2 = dn[x + 1]; break;
        case TRK_CANNY_SECTOR_DIAG_DOWN: n1 = up[x], n2 = dn[x + 2]; break;
        default: n1 = up[x + 2], n2 = dn[x]; break;
        }
        if (!trk_canny_keeps(sec, m, n1, n2)) continue;
        cls[x] = m > hi ? TRK_CANNY_STRONG : TRK_CANNY_WEAK;
        b->strong += m > hi;
        c->m2[(size_t)y * (size_t)c->W + x] = m;
    }
}

static void phase_c(struct trk_canny *c, struct band *b)
{
    if (b->y0 >= b->y1) return;
    ring_fill(c, b, (b->y0 + 2) % 3, b->y0 - 1);
    ring_fill(c, b, b->y0 % 3, b->y0);
    for (int y = b->y0; y < b->y1; y++) {
        const int pu = (y + 2) % 3, pm = y % 3, pd = (y + 1) % 3;
        ring_fill(c, b, pd, y + 1);
        nms_row(c, b, y, b->gx[pm], b->gy[pm], b->m2[pu], b->m2[pm], b->m2[pd]);
    }
}

/* ----------------------------------------------------------- phase D */

/* Marks class-map index i an edge and counts it into *n and *m2sum. */
static void mark(struct trk_canny *c, size_t i, uint64_t *n, uint64_t *m2sum)
{
    const int y = (int)(i / c->cp) - 1, x = (int)(i % c->cp) - 1;
    c->cls[i] = TRK_CANNY_EDGE;
    c->edges[(size_t)y * c->ep + x] = 255;
    *n += 1;
    *m2sum += c->m2[(size_t)y * (size_t)c->W + x];
}

/* Floods from the pixels on stack[0, top) (marked already) over
 * candidates in rows [ylo, yhi). */
static void drain(struct trk_canny *c, uint32_t *stack, size_t top, int ylo, int yhi, uint64_t *n,
                  uint64_t *m2sum)
{
    const ptrdiff_t cp = (ptrdiff_t)c->cp;
    while (top) {
        const size_t i = stack[--top];
        const int y = (int)(i / c->cp) - 1;
        for (int dy = -1; dy <= 1; dy++) {
            if (y + dy < ylo || y + dy >= yhi) continue;
            for (int dx = -1; dx <= 1; dx++) {
                const size_t j = (size_t)((ptrdiff_t)i + dy * cp + dx);
                const uint8_t k = c->cls[j];
                if (k != TRK_CANNY_WEAK && k != TRK_CANNY_STRONG) continue;
                mark(c, j, n, m2sum);
                stack[top++] = (uint32_t)j;
            }
        }
    }
}

static void phase_d(struct trk_canny *c, struct band *b)
{
    uint32_t *stack = c->stack + (size_t)b->y0 * (size_t)c->W;
    for (int y = b->y0; y < b->y1; y++) {
        const size_t row = (size_t)(y + 1) * c->cp + 1;
        for (int x = 0; x < c->W; x++) {
            if (c->cls[row + x] != TRK_CANNY_STRONG) continue;
            mark(c, row + x, &b->edges, &b->edge_m2);
            stack[0] = (uint32_t)(row + x);
            drain(c, stack, 1, b->y0, b->y1, &b->edges, &b->edge_m2);
        }
    }
}

/* The join: across the boundary above row yb, every edge pixel's
 * unreached candidate neighbours flood the frame. */
static void join_boundary(struct trk_canny *c, int yb)
{
    const size_t ra = (size_t)yb * c->cp + 1, rb = ra + c->cp; /* rows yb - 1 and yb */
    for (int x = 0; x < c->W; x++)
        for (int side = 0; side < 2; side++) {
            const size_t at = (side ? rb : ra) + x, other = (side ? ra : rb) + x;
            if (c->cls[at] != TRK_CANNY_EDGE) continue;
            for (int dx = -1; dx <= 1; dx++) {
                const uint8_t k = c->cls[other + dx];
                if (k != TRK_CANNY_WEAK && k != TRK_CANNY_STRONG) continue;
                mark(c, other + dx, &c->fix_edges, &c->fix_m2);
                c->stack[0] = (uint32_t)(other + dx);
                drain(c, c->stack, 1, 0, c->H, &c->fix_edges, &c->fix_m2);
            }
        }
}

/* ------------------------------------------------------------ threads */

/* Thread k's part of a frame: its band through the four phases. */
static void run_band(struct trk_canny *c, int k)
{
    struct band *b = &c->band[k];
    void (*const phase[4])(struct trk_canny *, struct band *) = { phase_a, phase_b, phase_c,
                                                                  phase_d };
    for (int i = 0; i < 4; i++) {
        phase[i](c, b);
        pthread_barrier_wait(&c->bar);
        if (k == 0) c->t_phase[i] = trk_now() * 1e3;
    }
}

static void *worker_main(void *arg)
{
    struct band *b = arg;
    struct trk_canny *c = b->c;
    const int k = (int)(b - c->band);
    pthread_mutex_lock(&c->gate); /* until cpu_alloc has made the barrier */
    pthread_mutex_unlock(&c->gate);
    if (!c->bar_ok) return NULL;
    for (;;) {
        pthread_barrier_wait(&c->bar);
        if (c->quit) return NULL;
        run_band(c, k);
    }
}

/* ------------------------------------------------------------ runner */

static int cpu_alloc(struct trk_canny *c)
{
    const size_t W = (size_t)c->max_w, H = (size_t)c->max_h, n = W * H;
    c->luma = malloc(n);
    c->tmp = malloc(trk_prefilter_tmp_pitch(c->max_w) * H * sizeof(uint16_t));
    c->sm = malloc((W + 2) * H);
    c->cls = malloc((W + 2) * (H + 2));
    c->m2 = malloc(n * sizeof(uint32_t));
    c->stack = malloc(n * sizeof(uint32_t));
    c->own_edges = malloc(n);
    c->band = calloc((size_t)c->nthreads, sizeof(*c->band));
    c->th = calloc((size_t)c->nthreads, sizeof(*c->th));
    if (!c->luma || !c->tmp || !c->sm || !c->cls || !c->m2 || !c->stack || !c->own_edges ||
        !c->band || !c->th)
        return TRK_ENOMEM;
    for (int k = 0; k < c->nthreads; k++) {
        struct band *b = &c->band[k];
        b->c = c;
        b->pad = malloc(trk_prefilter_pad_bytes(c->max_w));
        for (int i = 0; i < 3; i++) {
            b->gx[i] = malloc(W * sizeof(int16_t));
            b->gy[i] = malloc(W * sizeof(int16_t));
            b->m2[i] = malloc((W + 2) * sizeof(uint32_t));
            if (!b->gx[i] || !b->gy[i] || !b->m2[i]) return TRK_ENOMEM;
        }
        if (!b->pad) return TRK_ENOMEM;
    }
    /* The workers wait on gate until the barrier exists: its count is the
     * number of threads that did start (all of them unless one failed). */
    int err = 0;
    pthread_mutex_lock(&c->gate);
    for (int k = 1; k < c->nthreads && !err; k++) {
        err = pthread_create(&c->th[k], NULL, worker_main, &c->band[k]) ? TRK_ENOMEM : 0;
        if (!err) c->nth_started = k;
    }
    c->quit = err != 0;
    if (!pthread_barrier_init(&c->bar, NULL, (unsigned)c->nth_started + 1))
        c->bar_ok = 1;
    else
        err = TRK_ENOMEM; /* the workers see no barrier and leave */
    pthread_mutex_unlock(&c->gate);
    return err;
}

int trk_canny_create(const struct trk_canny_opts *o, struct trk_canny **out)
{
    if (!out) return TRK_EINVAL;
    *out = NULL;
    if (!o || o->max_width <= 0 || o->max_height <= 0 ||
        (uint64_t)o->max_width * (uint64_t)o->max_height >= UINT32_MAX / 2)
        return TRK_EINVAL;
    struct trk_canny *c = calloc(1, sizeof(*c));
    if (!c) return TRK_ENOMEM;
    pthread_mutex_init(&c->gate, NULL);
    c->kind = o->kind;
    c->max_w = o->max_width, c->max_h = o->max_height;
    c->nthreads = o->threads < 1 ? 1 : o->threads > 64 ? 64 : o->threads;
    int err;
    if (o->kind == TRK_CANNY_CUDA) {
#ifdef TRK_HAVE_CUDA
        err = trk_canny_cuda_create(o, &c->cu);
#else
        err = TRK_ENODEV;
#endif
    } else {
        err = o->kind == TRK_CANNY_CPU ? cpu_alloc(c) : TRK_EINVAL;
    }
    if (err) {
        trk_canny_destroy(&c);
        return err;
    }
    *out = c;
    return 0;
}

void trk_canny_destroy(struct trk_canny **cp)
{
    struct trk_canny *c = cp ? *cp : NULL;
    if (!c) return;
#ifdef TRK_HAVE_CUDA
    if (c->cu) trk_canny_cuda_destroy(c->cu);
#endif
    if (c->bar_ok) {
        c->quit = 1; /* read by the workers after the barrier below */
        pthread_barrier_wait(&c->bar);
    }
    for (int k = 1; k <= c->nth_started; k++)
        pthread_join(c->th[k], NULL);
    if (c->bar_ok) pthread_barrier_destroy(&c->bar);
    pthread_mutex_destroy(&c->gate);
    for (int k = 0; c->band && k < c->nthreads; k++) {
        free(c->band[k].pad);
        for (int i = 0; i < 3; i++)
            free(c->band[k].gx[i]), free(c->band[k].gy[i]), free(c->band[k].m2[i]);
    }
    free(c->luma), free(c->tmp), free(c->sm), free(c->cls), free(c->m2), free(c->stack);
    free(c->own_edges);
    free(c->band), free(c->th);
    free(c);
    *cp = NULL;
}

const char *trk_canny_name(const struct trk_canny *c)
{
    return c && c->kind == TRK_CANNY_CUDA ? "cuda" : "cpu";
}

/* The frame's geometry, the class map's border and the bands. */
static void cpu_setup(struct trk_canny *c, const struct trk_canny_params *p,
                      const struct trk_image *img, uint8_t *edges, size_t ep)
{
    c->p = p, c->img = img, c->edges = edges, c->ep = ep;
    c->W = img->width, c->H = img->height;
    c->sm_pitch = c->cp = (size_t)c->W + 2;
    c->tmp_pitch = trk_prefilter_tmp_pitch(c->W);
    memset(c->cls, TRK_CANNY_NONE, c->cp);
    memset(c->cls + (size_t)(c->H + 1) * c->cp, TRK_CANNY_NONE, c->cp);
    for (int y = 1; y <= c->H; y++)
        c->cls[(size_t)y * c->cp] = c->cls[(size_t)y * c->cp + c->W + 1] = TRK_CANNY_NONE;
    for (int k = 0; k < c->nthreads; k++) {
        struct band *b = &c->band[k];
        b->y0 = (int)((int64_t)k * c->H / c->nthreads);
        b->y1 = (int)((int64_t)(k + 1) * c->H / c->nthreads);
        b->strong = b->edges = b->edge_m2 = 0;
    }
    c->fix_edges = c->fix_m2 = 0;
}

int trk_canny_run(struct trk_canny *c, const struct trk_canny_params *p,
                  const struct trk_image *img, uint8_t *edges, size_t edges_pitch,
                  struct trk_canny_stats *st, struct trk_canny_timing *t)
{
    if (!c) return TRK_EINVAL;
#ifdef TRK_HAVE_CUDA
    if (c->cu) return trk_canny_cuda_run(c->cu, p, img, edges, edges_pitch, st, t);
#endif
    if (trk_canny_check(p, img, edges, edges_pitch, false)) return TRK_EINVAL;
    if (img->width > c->max_w || img->height > c->max_h) return TRK_EINVAL;
    const double t0 = trk_now() * 1e3;
    /* Sums only: the phases mark edges as they go, into scratch. */
    if (!edges) edges = c->own_edges, edges_pitch = (size_t)img->width;
    cpu_setup(c, p, img, edges, edges_pitch);
    pthread_barrier_wait(&c->bar); /* the workers start */
    run_band(c, 0);
    for (int k = 1; k < c->nthreads; k++)
        if (c->band[k].y0 > 0 && c->band[k].y0 < c->H) join_boundary(c, c->band[k].y0);
    struct trk_canny_stats s = { .pixels = (uint64_t)c->W * (uint64_t)c->H };
    s.edges = c->fix_edges, s.edge_m2 = c->fix_m2;
    for (int k = 0; k < c->nthreads; k++) {
        s.strong += c->band[k].strong;
        s.edges += c->band[k].edges;
        s.edge_m2 += c->band[k].edge_m2;
    }
    trk_canny_stats_derive(&s);
    if (st) *st = s;
    if (t) {
        const double t1 = trk_now() * 1e3, *ph = c->t_phase;
        *t = (struct trk_canny_timing){ .luma_ms = ph[0] - t0,
                                        .gauss_ms = ph[1] - ph[0],
                                        .sobel_ms = ph[2] - ph[1],
                                        .hyst_ms = t1 - ph[2],
                                        .total_ms = t1 - t0 };
    }
    return 0;
}
