/* The fast CPU backend ("cpu"): the same results as cpu_ref.c, bit for bit,
 * at a cost that barely grows with the number of objects.
 *
 * Design (CMVision's classic trick, widened to 256 objects):
 *   - set_objects builds, per colour space and channel, a table indexed by the
 *     channel value whose entry is the bitmask of the objects whose range
 *     contains that value (NW = 1, 2 or 4 64-bit words: only as many as the
 *     object count needs). A pixel's match mask is T0[c0] & T1[c1] & T2[c2],
 *     OR-ed over the spaces that have objects: every object in 3 loads.
 *   - A pixel that matches nothing (most of any frame) must cost little: at
 *     NW = 1 the masks are one word; at NW = 2 a one-word "summary" table
 *     (bit j = OR of bit j of both words) rejects it before the full masks
 *     are read; at NW = 4 the mask is one 256-bit vector (AVX2 copies of
 *     those kernels are picked at run time on x86-64).
 *   - Runs of pixels with equal masks are accumulated at once (mass += len,
 *     sum_x += arithmetic series), so a solid blob costs a few operations per
 *     row per object instead of per pixel.
 *   - Rows where runs are a pixel long (noise against wide boxes: each
 *     pixel a new mask of ~M/8 objects) would cost a flush per object per
 *     pixel; they take the dense path instead (cpu_fast_kern.h, "dense
 *     rows"): the row's masks are stored and summed bit-sliced, the objects
 *     as bit lanes, at a cost per pixel that does not grow with the objects
 *     (up to 64 per mask word). trk_fast_do_row picks the path per row from the
 *     previous row's flush work; frames with blob objects keep the run path.
 *   - Each space is computed once per pixel and only when some object needs
 *     it: rgb objects read packed rows in place; ycbcr objects read native
 *     YUV samples; HSV is gated by V and S before its hue division is paid.
 *     Painted classes (backend.h) are not separable per channel: one cell
 *     table (trk_class_cells, 512 KiB, made once) says which class objects
 *     hold a pixel's R, G, B cell, and each ORs its object's mask.
 *   - Rows are handed out in strips from an atomic counter to a persistent
 *     pool of threads created at create; each thread owns its accumulators,
 *     merged at the end (sums and min/max are order-free, so any thread count
 *     gives the reference's exact integers).
 *
 * ROIs: the frame is scanned only over the union of the clipped ROIs, and
 * every run is clipped to each object's ROI when it is flushed.
 *
 * Regions (trk_backend_submit_regions, section "regions"): each region is
 * scanned alone over its clipped rectangle with its object's own one-word
 * tables (or, for rgb objects on packed RGB, an SSE2 box test), by one
 * thread, blobs labelled in that thread's lists; cost = the regions' areas.
 *
 * Blobs (objects with blobs > 0; the same lists as cpu_ref.c, bit for bit):
 * run-based labelling, the runs being the ones the row kernels already find.
 *   - Frames with blob objects run a second copy of the kernels (KBLOBS in
 *     cpu_fast_kern.h) whose flush also appends each blob object's clipped
 *     run to the worker's list for that object, extending the row's last
 *     run when they touch, so each run is maximal. Frames without blob
 *     objects run the plain copy: blobs cost them nothing.
 *   - Each strip (FAST_STRIP_ROWS rows, one thread) is labelled as it is
 *     classified: after each row, one merge-like sweep joins its runs to the
 *     connected runs of the row above (overlap widened by one pixel each
 *     side for 8-connectivity) in a union-find over runs whose root is
 *     always the smaller index, i.e. the earlier first pixel. At the end of
 *     the strip every root becomes a strip component and each run adds its
 *     stats to it: mass += len, sum_x by the arithmetic series, sum_y, bbox,
 *     and crack edges 2 + 2 len minus 2 per pixel shared with a run above
 *     (a 4-neighbour pair in the mask is always inside one blob, so that
 *     side is inside for both runs).
 *   - After the pool is done, the caller merges the seams: the last row of
 *     each strip against the first of the next, with the same sweep, joins
 *     strip components (of any workers; union by earlier first pixel, so a
 *     root carries its blob's first pixel) and takes the shared pixels off
 *     the perimeter. Every component's stats go to its root, and the roots
 *     of mass >= min_area are kept in a sorted top-K (trk_blob_before).
 *   Every integer is a sum or a min/max, so thread count and strip order
 *   do not change the result. The lists are allocated at set_objects and
 *   double when a frame needs more (noise, checkerboards), keeping their
 *   size, so a steady stream of frames allocates nothing.
 *
 * Threading contract: one caller thread at a time (backend.h); the pool's
 * workers touch only their own struct worker (blob lists included), read
 * the frame context, and write the seam entries of the strips they took.
 */
#include "cpu_fast_int.h"

/* Frees the blob scratch of nb blob objects (workers' lists included). */
static void blobs_free(struct cpu_fast *s, int nb)
{
    for (int i = 0; s->w && i < s->nthreads; i++) {
        struct blist *bl = s->w[i].bl;
        for (int bi = 0; bl && bi < nb; bi++) {
            free(bl[bi].run);
            free(bl[bi].comp);
        }
        free(bl);
        free(s->w[i].touched);
        s->w[i].bl = NULL;
        s->w[i].touched = NULL;
    }
    free(s->si);
    free(s->strip_w);
    free(s->blob);
    s->si = NULL;
    s->strip_w = NULL;
    s->blob = NULL;
}

static void fast_destroy(void *self)
{
    struct cpu_fast *s = self;
    if (!s) return;
    blobs_free(s, s->nb);
    if (s->sync_ok) {
        pthread_mutex_lock(&s->mu);
        s->quit = 1;
        pthread_cond_broadcast(&s->go);
        pthread_mutex_unlock(&s->mu);
    }
    if (s->w) {
        for (int i = 0; i < s->nthreads; i++) {
            if (s->w[i].started) pthread_join(s->w[i].th, NULL);
            free(s->w[i].plane[0]);
            free(s->w[i].mbuf);
            free(s->w[i].rf);
            free(s->w[i].rsi);
            free(s->w[i].rsw);
        }
    }
    if (s->sync_ok) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->go);
        pthread_cond_destroy(&s->done);
    }
    free(s->w);
    free(s->tab_mem);
    free(s->tab.sat);
    free(s->pf.frame);
    free(s->pf.tmp);
    free(s->pf.pad);
    free(s->otab_mem);
    free(s->cls_cells);
    free(s->rres);
    free(s->rblob);
    free(s->rnb);
    free(s);
}

static size_t tab_bytes(void)
{
    size_t words = 3 * TRK_SPACE_COUNT * ((size_t)FAST_NVALS * FAST_MAX_WORDS + FAST_NVALS) +
                   3 * ((size_t)FAST_EXT_N * FAST_MAX_WORDS + FAST_EXT_N);
    return words * sizeof(uint64_t);
}

/* Whether every unclamped R, G, B that trk_yuv_to_rgb can produce with k
 * indexes the extended tables: the sums are linear in Y, Cb and Cr, so the
 * extremes are at the corners of the sample cube. */
static int ext_fits(const struct trk_yuv2rgb_coef *k)
{
    for (int yi = 0; yi < 2; yi++)
        for (int ui = 0; ui < 2; ui++)
            for (int vi = 0; vi < 2; vi++) {
                int32_t yy = k->y_mul * ((yi ? 255 : 0) - k->y_off);
                int32_t u = ui ? 127 : -128, v = vi ? 127 : -128;
                int32_t t[3] = { k->r_cr * v, -k->g_cb * u - k->g_cr * v, k->b_cb * u };
                for (int c = 0; c < 3; c++) {
                    int32_t i = trk_q16_round(yy + t[c]) + FAST_EXT_OFF;
                    if (i < 0 || i >= FAST_EXT_N) return 0;
                }
            }
    return 1;
}

/* Threads to use: cfg->threads, or the online cores when 0. */
static int thread_count(int want)
{
    if (want <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        want = c > 0 ? (int)c : 1;
    }
    return want > FAST_MAX_THREADS ? FAST_MAX_THREADS : want;
}

static int fast_create(const struct trk_backend_cfg *cfg, void **self)
{
    *self = NULL;
    if (cfg->threads < 0) return TRK_EINVAL;
    if (cfg->variant && strcmp(cfg->variant, "lut") && strcmp(cfg->variant, "lut-portable"))
        return TRK_EINVAL;
    struct cpu_fast *s = calloc(1, sizeof(*s));
    if (!s) return TRK_ENOMEM;
    s->max_width = cfg->max_width;
    s->max_height = cfg->max_height;
    s->nthreads = thread_count(cfg->threads);
    s->portable = cfg->variant && !strcmp(cfg->variant, "lut-portable");
    s->max_strips = (cfg->max_height + FAST_STRIP_ROWS - 1) / FAST_STRIP_ROWS;
    trk_fast_kernels_pick(&s->kern, &s->kern_b, s->portable);

    /* Tables: 3 per space full (FAST_NVALS x 4 words) and as many summaries, then 3 extended
     * (FAST_EXT_N x 4 words) + 3 summaries, one block. */
    s->tab_mem = aligned_alloc(64, tab_bytes());
    s->tab.sat = malloc(256 * 256);
    s->w = calloc((size_t)s->nthreads, sizeof(*s->w));
    if (!s->tab_mem || !s->tab.sat || !s->w) goto nomem;
    uint64_t *p = s->tab_mem;
    for (int sp = 0; sp < TRK_SPACE_COUNT; sp++)
        for (int c = 0; c < 3; c++) {
            s->tab.full[sp][c] = p;
            p += (size_t)FAST_NVALS * FAST_MAX_WORDS;
            s->tab.sum[sp][c] = p;
            p += FAST_NVALS;
        }
    for (int c = 0; c < 3; c++) {
        s->tab.ext[c] = p;
        p += (size_t)FAST_EXT_N * FAST_MAX_WORDS;
        s->tab.ext_sum[c] = p;
        p += FAST_EXT_N;
    }
    memset(s->tab_mem, 0, tab_bytes());
    s->ext_ok = 1;
    for (int ci = 0; ci < 4; ci++) {
        const struct trk_yuv2rgb_coef *k = &trk_yuv2rgb_coefs[ci];
        for (int v = 0; v < 256; v++)
            s->yytab[ci][v] = k->y_mul * (v - k->y_off);
        if (!ext_fits(k)) s->ext_ok = 0;
    }
    s->tab.nw = 1;
    s->tab.light = trk_light_tables();
    for (int mx = 0; mx < 256; mx++)
        for (int d = 0; d <= mx; d++) {
            uint16_t h;
            uint8_t sat, v;
            trk_rgb_to_hsv(mx, mx - d, mx - d, &h, &sat, &v);
            s->tab.sat[mx << 8 | d] = sat;
        }

    /* Row planes: +64 so vector-width overreads past max_width stay inside. */
    size_t plane_bytes = (size_t)cfg->max_width + 64;
    for (int i = 0; i < s->nthreads; i++) {
        struct worker *w = &s->w[i];
        w->be = s;
        w->idx = i;
        w->plane[0] = malloc(plane_bytes * FAST_PLANES);
        w->rf = calloc(1, sizeof(*w->rf));
        w->rsi = calloc((size_t)s->max_strips, sizeof(*w->rsi));
        w->rsw = calloc((size_t)s->max_strips, 1);
        /* An even count of 32-byte entries: a multiple of 64 bytes, as
         * aligned_alloc wants. */
        w->mbuf = aligned_alloc(64, (((size_t)cfg->max_width + 65) & ~(size_t)1) * FAST_MAX_WORDS *
                                        sizeof(uint64_t));
        if (!w->plane[0] || !w->rf || !w->rsi || !w->rsw || !w->mbuf) goto nomem;
        for (int k = 1; k < FAST_PLANES; k++)
            w->plane[k] = w->plane[0] + k * plane_bytes;
    }

    if (pthread_mutex_init(&s->mu, NULL)) goto nomem;
    if (pthread_cond_init(&s->go, NULL)) {
        pthread_mutex_destroy(&s->mu);
        goto nomem;
    }
    if (pthread_cond_init(&s->done, NULL)) {
        pthread_cond_destroy(&s->go);
        pthread_mutex_destroy(&s->mu);
        goto nomem;
    }
    s->sync_ok = 1;
    for (int i = 1; i < s->nthreads; i++) {
        if (pthread_create(&s->w[i].th, NULL, trk_fast_worker_main, &s->w[i])) {
            fast_destroy(s);
            return TRK_EBACKEND;
        }
        s->w[i].started = 1;
    }
    *self = s;
    return 0;
nomem:
    fast_destroy(s);
    return TRK_ENOMEM;
}

/* The blob scratch for objs: every list at its first capacity, the seam
 * table for the largest frame, the result lists. Sized here, not per frame
 * (a list that a frame outgrows doubles once and keeps its size). On failure
 * the old scratch stays and TRK_ENOMEM is returned. */
static int blobs_alloc(struct cpu_fast *s, const struct trk_object_def *objs, int n)
{
    int nb = 0;
    for (int i = 0; i < n; i++)
        nb += objs[i].blobs > 0;
    struct cpu_fast next = { .nthreads = s->nthreads, .w = NULL };
    struct worker *nw = calloc((size_t)s->nthreads, sizeof(*nw));
    if (!nw) return TRK_ENOMEM;
    next.w = nw;
    int ok = 1;
    if (nb) {
        next.si = calloc((size_t)s->max_strips * (size_t)nb, sizeof(*next.si));
        next.strip_w = calloc((size_t)s->max_strips, 1);
        next.blob = calloc((size_t)nb, sizeof(*next.blob));
        ok = next.si && next.strip_w && next.blob;
        for (int i = 0; ok && i < s->nthreads; i++) {
            nw[i].bl = calloc((size_t)nb, sizeof(*nw[i].bl));
            nw[i].touched = calloc((size_t)nb, sizeof(*nw[i].touched));
            ok = nw[i].bl && nw[i].touched;
            for (int bi = 0; ok && bi < nb; bi++) {
                struct blist *L = &nw[i].bl[bi];
                L->run = malloc(FAST_BLOB_RUNS0 * sizeof(*L->run));
                L->comp = malloc(FAST_BLOB_COMPS0 * sizeof(*L->comp));
                L->caprun = L->run ? FAST_BLOB_RUNS0 : 0;
                L->capcomp = L->comp ? FAST_BLOB_COMPS0 : 0;
                ok = L->run && L->comp;
            }
        }
    }
    if (!ok) {
        blobs_free(&next, nb);
        free(nw);
        return TRK_ENOMEM;
    }
    blobs_free(s, s->nb);
    for (int i = 0; i < s->nthreads; i++) {
        s->w[i].bl = nw[i].bl;
        s->w[i].touched = nw[i].touched;
    }
    free(nw);
    s->si = next.si;
    s->strip_w = next.strip_w;
    s->blob = next.blob;
    s->nb = nb;
    nb = 0;
    for (int i = 0; i < n; i++) {
        s->bidx[i] = -1;
        if (!objs[i].blobs) continue;
        s->bidx[i] = (int16_t)nb;
        s->bext[nb] = objs[i].connectivity != 4;
        s->bk[nb] = objs[i].blobs;
        s->bmin[nb] = objs[i].min_area ? objs[i].min_area : 1;
        s->n_blobs[nb] = 0;
        nb++;
    }
    return 0;
}

/* Words of one object's own tables (obj_tables): its space's three
 * channels and, for rgb, the extended tables of YUV frames. */
static size_t obj_words(enum trk_space sp)
{
    size_t v = 0;
    if (sp == TRK_SPACE_CLASS) return 0; /* the set's cell table */
    for (int c = 0; c < 3; c++)
        v += (size_t)trk_chan_values((int)sp, c);
    return sp == TRK_SPACE_RGB ? v + 3 * (size_t)FAST_EXT_N : v;
}

/* The regions' tables (section "regions"): per object, tables in which it
 * is the only object (one word, bit 0), so a region runs the one-word
 * kernels and meets no other object's runs. Built in mem (from
 * obj_tables_alloc). */
static void obj_tables(struct cpu_fast *s, const struct trk_object_def *objs, int n, uint64_t *mem)
{
    uint64_t *p = mem;
    for (int i = 0; i < n; i++) {
        const struct trk_object_def *o = &objs[i];
        const int sp = (int)o->space;
        struct tables *t = &s->otab[i];
        memset(t, 0, sizeof(*t));
        t->n = 1;
        t->nw = 1;
        if (sp != TRK_SPACE_CLASS) t->has[sp] = 1;
        t->sat = s->tab.sat;
        t->light = s->tab.light;
        if (sp == TRK_SPACE_CLASS) {
            /* The rgb kernel's class copy runs it: rgb tables of no object. */
            static const uint64_t none[FAST_NVALS];
            t->ncls = 1;
            t->cls_cells = s->cls_cells;
            t->cls_mask[s->cls_ord[i]][0] = 1;
            for (int c = 0; c < 3; c++)
                t->full[TRK_SPACE_RGB][c] = t->sum[TRK_SPACE_RGB][c] = (uint64_t *)none;
            continue;
        }
        for (int c = 0; c < 3; c++) {
            const int nv = trk_chan_values(sp, c);
            for (int v = 0; v < nv; v++)
                p[v] = trk_chan_has(o->lo, o->hi, sp == TRK_SPACE_HSV, c, v);
            /* With one word the summary is the row itself. */
            t->full[sp][c] = t->sum[sp][c] = p;
            p += nv;
        }
        if (sp != TRK_SPACE_RGB) continue;
        for (int c = 0; c < 3; c++) {
            for (int i2 = 0; i2 < FAST_EXT_N; i2++) {
                const int v = i2 - FAST_EXT_OFF;
                p[i2] = t->full[sp][c][v < 0 ? 0 : v > 255 ? 255 : v];
            }
            t->ext[c] = t->ext_sum[c] = p;
            p += FAST_EXT_N;
        }
    }
}

static uint64_t *obj_tables_alloc(const struct trk_object_def *objs, int n)
{
    size_t words = 8; /* never 0 */
    for (int i = 0; i < n; i++)
        words += obj_words(objs[i].space);
    return aligned_alloc(64, align64(words * sizeof(uint64_t)));
}

/* tab.gate for objs: the cells whose lab or rg ranges meet some lab or rg
 * object's box (a cell that meets none holds no colour any of them
 * matches, so the kernel skips both conversions there: exact). */
static void light_gate(struct cpu_fast *s, const struct trk_object_def *objs, int n)
{
    const struct trk_light_cells *cr = trk_light_cell_ranges();
    memset(s->light_gate, 0, sizeof(s->light_gate));
    for (int cell = 0; cell < TRK_LIGHT_CELLS; cell++)
        for (int i = 0; i < n; i++) {
            const struct trk_object_def *o = &objs[i];
            if (o->space != TRK_SPACE_LAB && o->space != TRK_SPACE_RG) continue;
            const int sp = o->space == TRK_SPACE_RG;
            int meets = 1;
            for (int c = 0; c < 3; c++)
                meets &= cr->lo[cell][sp][c] <= o->hi[c] && cr->hi[cell][sp][c] >= o->lo[c];
            if (!meets) continue;
            s->light_gate[cell >> 6] |= 1ull << (cell & 63);
            break;
        }
    s->tab.gate = s->light_gate;
}

static int fast_set_objects(void *self, const struct trk_object_def *objs, int n)
{
    struct cpu_fast *s = self;
    struct tables *t = &s->tab;
    if (n < 0 || n > TRK_MAX_OBJECTS) return TRK_EINVAL;
    int ncls = 0;
    for (int i = 0; i < n; i++)
        ncls += objs[i].space == TRK_SPACE_CLASS;
    if (ncls && !s->cls_cells) {
        s->cls_cells = malloc(TRK_CLASS_CELLS * sizeof(*s->cls_cells));
        if (!s->cls_cells) return TRK_ENOMEM;
    }
    uint64_t *omem = obj_tables_alloc(objs, n);
    if (!omem) return TRK_ENOMEM;
    int err = blobs_alloc(s, objs, n);
    if (err) {
        free(omem);
        return err;
    }
    free(s->otab_mem);
    s->otab_mem = omem;
    /* backend.c checked the class count and tables: this cannot fail. */
    if (ncls) trk_class_cells(objs, n, s->cls_cells, s->cls_ord);
    obj_tables(s, objs, n, omem);
    if (n > 0) memcpy(s->objs, objs, (size_t)n * sizeof(*objs));
    int nw = n <= 64 ? 1 : n <= 128 ? 2 : 4;
    memset(s->tab_mem, 0, tab_bytes());
    memset(t->has, 0, sizeof(t->has));
    memset(t->cls_mask, 0, sizeof(t->cls_mask));
    t->ncls = ncls;
    t->cls_cells = s->cls_cells;
    for (int i = 0; i < n; i++) {
        const struct trk_object_def *o = &objs[i];
        int sp = (int)o->space, wi = i >> 6;
        uint64_t bit = 1ull << (i & 63);
        if (sp == TRK_SPACE_CLASS) {
            t->cls_mask[s->cls_ord[i]][wi] = bit;
            continue;
        }
        t->has[sp] = 1;
        for (int c = 0; c < 3; c++) {
            const int nv = trk_chan_values(sp, c);
            uint64_t *full = t->full[sp][c];
            uint64_t *sum = t->sum[sp][c];
            for (int v = 0; v < nv; v++) {
                if (!trk_chan_has(o->lo, o->hi, sp == TRK_SPACE_HSV, c, v)) continue;
                full[(size_t)v * nw + wi] |= bit;
                sum[v] |= bit;
            }
        }
    }
    /* Extended R, G, B tables for YUV frames: row i is row clamp255(i - OFF). */
    if (t->has[TRK_SPACE_RGB]) {
        for (int c = 0; c < 3; c++)
            for (int i = 0; i < FAST_EXT_N; i++) {
                int v = i - FAST_EXT_OFF;
                v = v < 0 ? 0 : v > 255 ? 255 : v;
                memcpy(t->ext[c] + (size_t)i * nw, t->full[TRK_SPACE_RGB][c] + (size_t)v * nw,
                       (size_t)nw * sizeof(uint64_t));
                t->ext_sum[c][i] = t->sum[TRK_SPACE_RGB][c][v];
            }
    }
    if (t->has[TRK_SPACE_LAB] || t->has[TRK_SPACE_RG]) light_gate(s, objs, n);
    t->nw = nw;
    t->n = n;
    return 0;
}

/* ------------------------------------------------------------ submit */

static int cmp_i32(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

/* Dense rows with ROIs: the scanned span cut at every ROI edge, and per
 * stretch the objects whose ROI's x range holds it (fctx.seg_*). */
static void dense_stretches(struct cpu_fast *s, int n)
{
    struct fctx *f = &s->f;
    int nx = 0;
    s->seg_x[nx++] = f->xa;
    s->seg_x[nx++] = f->xb + 1;
    for (int i = 0; i < n; i++) {
        const struct trk_roi *r = &f->roi[i];
        if (r->x1 < r->x0) continue; /* empty */
        s->seg_x[nx++] = r->x0;      /* clipped: inside [xa, xb + 1] */
        s->seg_x[nx++] = r->x1 + 1;
    }
    qsort(s->seg_x, (size_t)nx, sizeof(s->seg_x[0]), cmp_i32);
    int u = 1;
    for (int i = 1; i < nx; i++)
        if (s->seg_x[i] != s->seg_x[u - 1]) s->seg_x[u++] = s->seg_x[i];
    f->nseg = u - 1;
    memset(s->seg_allow, 0, (size_t)f->nseg * FAST_MAX_WORDS * sizeof(uint64_t));
    for (int sg = 0; sg < f->nseg; sg++)
        for (int i = 0; i < n; i++) {
            const struct trk_roi *r = &f->roi[i];
            if (s->seg_x[sg] >= r->x0 && s->seg_x[sg] <= r->x1)
                s->seg_allow[(size_t)sg * FAST_MAX_WORDS + (size_t)(i >> 6)] |= 1ull << (i & 63);
        }
    f->seg_x = s->seg_x;
    f->seg_allow = s->seg_allow;
}

static int fast_submit(void *self, const struct trk_image *img, const struct trk_roi *rois)
{
    struct cpu_fast *s = self;
    struct fctx *f = &s->f;
    int n = s->tab.n;
    double t0 = trk_backend_now_ms();
    s->rmode = 0;
    /* Everything below (aggregates and blobs) sees the filtered frame. */
    if (s->pf.pf.sigma > 0 && n > 0) img = trk_fast_pf_frame(s, img);

    f->tab = &s->tab;
    f->kern = &s->kern;
    f->img = img;
    int ci = trk_coef_index((int)img->matrix, img->full_range);
    f->k_yuv = &trk_yuv2rgb_coefs[ci];
    f->k_ycc = &trk_rgb2ycc_coefs[ci];
    f->yy = s->yytab[ci];
    f->ext_ok = s->ext_ok;
    f->use_rois = rois != NULL;
    f->prefetch = 0;
    f->box = 0;
    f->nb = s->nb;
    f->bidx = s->bidx;
    f->bext = s->bext;
    f->si = s->si;
    f->strip_w = s->strip_w;
    if (s->nb) f->kern = &s->kern_b;
    /* The scanned region: the whole frame, or the union of the live ROIs. */
    int xa = INT_MAX, xb = -1, ya = INT_MAX, yb = -1;
    for (int i = 0; i < n; i++) {
        struct trk_roi *r = &f->roi[i];
        if (!trk_roi_clip(rois, i, img->width, img->height, r)) {
            *r = (struct trk_roi){ 0, 0, -1, -1 };
            continue;
        }
        if (r->x0 < xa) xa = r->x0;
        if (r->x1 > xb) xb = r->x1;
        if (r->y0 < ya) ya = r->y0;
        if (r->y1 > yb) yb = r->y1;
    }
    f->xa = xa, f->xb = xb, f->ya = ya, f->yb = yb;
    atomic_store_explicit(&f->next_row, ya, memory_order_relaxed);
    f->dense_ok = !s->nb;
    if (f->dense_ok && rois && xb >= 0) dense_stretches(s, n);

    int nt = 1; /* threads taking part: 1, or the whole pool */
    if (xb >= 0) {
        /* Wake the pool only when there are strips to share and enough
         * pixels to repay the wake-up; every woken worker then takes strips
         * from the dispenser until none is left. */
        int strips = (yb - ya + FAST_STRIP_ROWS) / FAST_STRIP_ROWS;
        long px = (long)(xb - xa + 1) * (yb - ya + 1);
        if (s->nthreads > 1 && strips > 1 && px >= FAST_MIN_POOL_PIXELS) nt = s->nthreads;
        trk_fast_pool_wake(s, nt);
        trk_fast_run_share(&s->w[0], f, n);
        trk_fast_pool_join(s, nt);
    }

    /* Threads whose accumulators hold this frame. */
    int nacc = xb < 0 ? 0 : nt;
    if (s->nb) {
        for (int k = 0; k < nacc; k++)
            if (s->w[k].oom) return TRK_ENOMEM;
        if (nacc) trk_fast_blobs_finish(s, nacc);
        for (int bi = 0; !nacc && bi < s->nb; bi++)
            s->n_blobs[bi] = 0;
    }
    /* Merge: sums add, boxes take min/max; any order gives the same integers. */
    for (int i = 0; i < n; i++) {
        struct acc m = { 0, 0, 0, INT32_MAX, INT32_MAX, -1, -1, 0, 0, 0 };
        for (int k = 0; k < nacc; k++) {
            const struct acc *a = &s->w[k].acc[i];
            FAST_ADD_SUMS(&m, a);
            if (a->x0 < m.x0) m.x0 = a->x0;
            if (a->y0 < m.y0) m.y0 = a->y0;
            if (a->x1 > m.x1) m.x1 = a->x1;
            if (a->y1 > m.y1) m.y1 = a->y1;
        }
        struct trk_obj_result *r = &s->res[i];
        if (m.mass == 0) {
            trk_result_clear(r);
        } else {
            *r = (struct trk_obj_result){ 0 };
            FAST_ADD_SUMS(r, &m);
            r->x0 = m.x0, r->y0 = m.y0, r->x1 = m.x1, r->y1 = m.y1;
        }
    }
    s->total_ms = trk_backend_now_ms() - t0;
    return 0;
}

static int fast_wait(void *self, struct trk_obj_result *out, struct trk_backend_timing *t)
{
    struct cpu_fast *s = self;
    if (s->rmode) return trk_backend_sync_wait(s->rres, s->nreg, s->total_ms, out, t);
    return trk_backend_sync_wait(s->res, s->tab.n, s->total_ms, out, t);
}

/* Variants: "lut" (default) uses the best kernels this CPU runs; "lut-portable"
 * only the baseline-ISA ones, so tests cover both and the benchmark shows
 * what the AVX2 copies buy. */
static const char *const fast_variants[] = { "lut", "lut-portable", NULL };

static const char *fast_describe(void *self)
{
    const struct cpu_fast *s = self;
    return s->portable ? "cpu:lut-portable" : "cpu";
}

static int fast_blobs(void *self, int obj, const struct trk_blob **out)
{
    static const struct trk_blob none[1];
    struct cpu_fast *s = self;
    if (s->rmode) { /* obj is a region (backend.c checked it) */
        *out = s->rblob[obj];
        return s->rnb[obj];
    }
    const int bi = s->bidx[obj];
    *out = bi < 0 ? none : s->blob[bi];
    return bi < 0 ? 0 : s->n_blobs[bi];
}

const struct trk_backend_ops trk_cpu_fast_ops = {
    TRK_BACKEND_OPS(fast, "cpu"), .describe = fast_describe,
    .variants = fast_variants,    .set_prefilter = trk_fast_set_prefilter,
    .blobs = fast_blobs,          .submit_regions = trk_fast_submit_regions,
};
