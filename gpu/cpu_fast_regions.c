/* The regional form (backend.h, trk_backend_submit_regions). Each region is
 * measured on its own, start to end, by one thread: its rectangle (clipped)
 * is scanned row by row with the tables of its object alone (otab: one word,
 * bit 0), so the one-word kernels run whatever the object count, no other
 * object's runs are met, and the runs need no clipping (the scanned segment
 * is the region). Blob objects label the region in strips as a frame is
 * labelled, in the thread's own lists and strip table (worker.rsi/rsw),
 * and trk_fast_finish_lists joins them and keeps the K best.
 * Cost: the sum of the clipped areas; regions that overlap are scanned once
 * each (a tracker's ROIs overlap only while instances meet, and measuring
 * each on its own keeps each region's labelling exact and simple).
 * Threads: one wake-up per call; workers take whole regions from a
 * dispenser (one region is never split, so a single large region runs on
 * one thread). With the pre-filter on, the whole frame is filtered first. */
#include "cpu_fast_int.h"

/* Points w's prefetch cursor at the first row of region j (none when j is
 * past the last: the cursor then stays idle). */
static void pc_set(struct worker *w, int j)
{
    const struct cpu_fast *s = w->be;
    const struct fctx *g = &s->f;
    struct pcur *pc = &w->pc;
    struct trk_roi c;
    pc->j = j;
    pc->y = 0, pc->y1 = -1;
    if (j >= s->nreg || !trk_roi_clip(&s->regs[j].roi, 0, g->img->width, g->img->height, &c))
        return;
    pc->y = c.y0, pc->y1 = c.y1;
    for (int p = 0; p < g->lay.planes; p++) {
        const size_t rb = g->lay.row_bytes[p], wd = (size_t)g->img->width;
        pc->lo[p] = ((size_t)c.x0 * rb / wd) & ~(size_t)63;
        pc->hi[p] = ((size_t)c.x1 + 1) * rb / wd;
    }
}

/* Asks for the bytes of the cursor's row of every plane (a hint: nothing
 * is read) and moves it one row on: past its region's last row, to the
 * worker's next region, or nowhere until the worker takes another. */
void trk_fast_pc_step(struct worker *w)
{
    struct pcur *pc = &w->pc;
    while (pc->y > pc->y1) {
        if (pc->j != w->rcur || w->rnext >= w->be->nreg) return;
        pc_set(w, w->rnext);
    }
    const struct fctx *g = &w->be->f;
    const struct trk_image *img = g->img;
    for (int p = 0; p < g->lay.planes; p++) {
        const uint8_t *row = img->plane[p] + (size_t)(pc->y >> g->lay.vshift[p]) * img->pitch[p];
        for (size_t o = pc->lo[p]; o < pc->hi[p]; o += 64)
            __builtin_prefetch(row + o);
        __builtin_prefetch(row + pc->hi[p] - 1);
    }
    pc->y++;
}

/* One thread's share of a call: regions from the dispenser until none is
 * left; f (the thread's rf) gets the frame's fields once. */
void trk_fast_region_share(struct worker *w)
{
    static const int16_t only[1] = { 0 }; /* bidx: object 0 of otab is blob index 0 */
    struct cpu_fast *s = w->be;
    struct fctx *f = w->rf;
    const struct fctx *g = &s->f; /* the frame's fields, set by the caller */
    const struct trk_image *img = g->img;
    f->img = img;
    f->k_yuv = g->k_yuv;
    f->k_ycc = g->k_ycc;
    f->yy = g->yy;
    f->ext_ok = g->ext_ok;
    f->use_rois = 0;
    f->bidx = only;
    f->bext = w->rbext;
    f->si = w->rsi;
    f->strip_w = w->rsw;
    f->prefetch = 1;
    f->lay = g->lay;
    /* Each worker holds the region after the one it measures, so its
     * prefetch cursor can run into it. */
    w->rcur = atomic_fetch_add_explicit(&s->next_reg, 1, memory_order_relaxed);
    w->rnext = w->rcur < s->nreg ? atomic_fetch_add_explicit(&s->next_reg, 1, memory_order_relaxed)
                                 : s->nreg;
    pc_set(w, w->rcur);
    for (int i = 0; i < FAST_PREFETCH_ROWS; i++)
        trk_fast_pc_step(w);
    for (;; w->rcur = w->rnext,
            w->rnext = atomic_fetch_add_explicit(&s->next_reg, 1, memory_order_relaxed)) {
        const int j = w->rcur;
        if (j >= s->nreg) break;
        const struct trk_region *R = &s->regs[j];
        const int bi = s->bidx[R->obj];
        struct trk_roi c;
        s->rnb[j] = 0;
        if (!trk_roi_clip(&R->roi, 0, img->width, img->height, &c)) {
            trk_result_clear(&s->rres[j]);
            continue;
        }
        f->tab = &s->otab[R->obj];
        trk_fast_box_setup(s, f, &s->objs[R->obj]);
        f->kern = bi >= 0 ? &s->kern_b : &s->kern;
        f->nb = bi >= 0;
        f->xa = c.x0, f->xb = c.x1, f->ya = c.y0, f->yb = c.y1;
        w->acc[0] = (struct acc){ 0, 0, 0, INT32_MAX, INT32_MAX, -1, -1, 0, 0, 0 };
        if (bi >= 0) {
            w->rbext[0] = s->bext[bi];
            w->oom = 0;
            w->bl[0].nrun = w->bl[0].ncomp = w->bl[0].row0 = 0;
        }
        for (int y0 = c.y0; y0 <= c.y1; y0 += FAST_STRIP_ROWS)
            trk_fast_do_strip(w, f, y0,
                              y0 + FAST_STRIP_ROWS - 1 < c.y1 ? y0 + FAST_STRIP_ROWS - 1 : c.y1);
        const struct acc *a = &w->acc[0];
        struct trk_obj_result *r = &s->rres[j];
        if (a->mass == 0) {
            trk_result_clear(r);
        } else {
            *r = (struct trk_obj_result){ 0, 0, 0, a->x0, a->y0, a->x1, a->y1, 0, 0, 0 };
            FAST_ADD_SUMS(r, a);
        }
        if (bi < 0) continue;
        if (w->oom) {
            atomic_store_explicit(&s->rerr, 1, memory_order_relaxed);
            continue;
        }
        s->rnb[j] =
            trk_fast_finish_lists(s, f, 0, w->idx, w->idx + 1, s->bmin[bi], s->bk[bi], s->rblob[j]);
    }
}

/* Room for n regions' results and lists (kept for later calls). */
static int regions_reserve(struct cpu_fast *s, int n)
{
    if (n <= s->rcap) return 0;
    int cap = s->rcap ? s->rcap : 64;
    while (cap < n)
        cap *= 2;
    if (cap > TRK_MAX_REGIONS) cap = TRK_MAX_REGIONS;
    struct trk_obj_result *res = realloc(s->rres, (size_t)cap * sizeof(*res));
    if (res) s->rres = res;
    struct trk_blob(*bl)[TRK_MAX_BLOBS] = realloc(s->rblob, (size_t)cap * sizeof(*bl));
    if (bl) s->rblob = bl;
    int *nb = realloc(s->rnb, (size_t)cap * sizeof(*nb));
    if (nb) s->rnb = nb;
    if (!res || !bl || !nb) return TRK_ENOMEM;
    s->rcap = cap;
    return 0;
}

int trk_fast_submit_regions(void *self, const struct trk_image *img, const struct trk_region *r,
                            int n)
{
    struct cpu_fast *s = self;
    const double t0 = trk_backend_now_ms();
    s->rmode = 1;
    s->nreg = 0;
    int err = regions_reserve(s, n);
    if (err) return err;
    if (s->pf.pf.sigma > 0 && n > 0) img = trk_fast_pf_frame(s, img);
    struct fctx *g = &s->f;
    const int ci = trk_coef_index((int)img->matrix, img->full_range);
    g->img = img;
    g->k_yuv = &trk_yuv2rgb_coefs[ci];
    g->k_ycc = &trk_rgb2ycc_coefs[ci];
    g->yy = s->yytab[ci];
    g->ext_ok = s->ext_ok;
    trk_image_plane_layout(img->fmt, img->width, img->height, &g->lay);
    s->regs = r;
    s->nreg = n;
    atomic_store_explicit(&s->next_reg, 0, memory_order_relaxed);
    atomic_store_explicit(&s->rerr, 0, memory_order_relaxed);
    long px = 0;
    for (int j = 0; j < n && px < FAST_MIN_POOL_PIXELS; j++) {
        struct trk_roi c;
        if (trk_roi_clip(&r[j].roi, 0, img->width, img->height, &c))
            px += (long)(c.x1 - c.x0 + 1) * (c.y1 - c.y0 + 1);
    }
    const int nt = s->nthreads > 1 && n > 1 && px >= FAST_MIN_POOL_PIXELS ? s->nthreads : 1;
    trk_fast_pool_wake(s, nt);
    trk_fast_region_share(&s->w[0]);
    trk_fast_pool_join(s, nt);
    s->total_ms = trk_backend_now_ms() - t0;
    return atomic_load_explicit(&s->rerr, memory_order_relaxed) ? TRK_ENOMEM : 0;
}
