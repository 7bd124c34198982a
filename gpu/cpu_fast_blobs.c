/* The fast CPU backend's blob labelling: runs united row by row inside a
 * strip, strip components, the seams between strips and the K best lists
 * (the design: the top of cpu_fast.c, "Blobs"). */
#include "cpu_fast_int.h"

static uint32_t run_root(struct run *r, uint32_t i)
{
    while (r[i].p != i) {
        r[i].p = r[r[i].p].p; /* path halving */
        i = r[i].p;
    }
    return i;
}

/* The root with the smaller index (the earlier first pixel) stays root. */
static void run_unite(struct run *r, uint32_t a, uint32_t b)
{
    a = run_root(r, a);
    b = run_root(r, b);
    if (a < b)
        r[b].p = a;
    else if (b < a)
        r[a].p = b;
}

/* Calls touch(i, j, overlap) for every run i of cur[c0, c1) and j of
 * up[u0, u1) that are connected (row above, ext = 1 for 8-connectivity:
 * diagonal contact counts), with overlap = the pixels they share as
 * 4-neighbours (0 for a diagonal-only contact). Both lists are sorted and
 * their runs maximal (gaps >= 1), so one merge-like sweep finds every pair:
 * the run that ends first cannot touch anything after the other. */
#define SWEEP_ROWS(cur, c0, c1, up, u0, u1, ext, touch)                                            \
    do {                                                                                           \
        uint32_t i_ = (c0), j_ = (u0);                                                             \
        while (i_ < (c1) && j_ < (u1)) {                                                           \
            const struct run *A_ = &(cur)[i_], *B_ = &(up)[j_];                                    \
            if (B_->x0 <= A_->x1 + (ext) && A_->x0 <= B_->x1 + (ext)) {                            \
                const int32_t lo_ = A_->x0 > B_->x0 ? A_->x0 : B_->x0;                             \
                const int32_t hi_ = A_->x1 < B_->x1 ? A_->x1 : B_->x1;                             \
                const uint32_t ov_ = hi_ >= lo_ ? (uint32_t)(hi_ - lo_ + 1) : 0;                   \
                touch(i_, j_, ov_);                                                                \
            }                                                                                      \
            if (A_->x1 <= B_->x1) i_++;                                                            \
            if (B_->x1 <= A_->x1) j_++;                                                            \
        }                                                                                          \
    } while (0)

/* A strip begins: its first row's runs start at the list's end. */
void trk_fast_strip_begin(struct worker *w, const struct fctx *f)
{
    for (int bi = 0; bi < f->nb; bi++) {
        struct blist *L = &w->bl[bi];
        L->rs[0] = L->row0 = L->nrun;
        L->nrs = 1;
    }
    w->ntouched = 0;
}

/* Row k of the current strip is classified: joins the runs of each object
 * that has some on it to the connected ones of row k - 1 and counts their
 * shared pixels. Objects without runs on the row are not visited. */
void trk_fast_label_row(struct worker *w, const struct fctx *f, int k)
{
    for (int t = 0; t < w->ntouched; t++) {
        const int bi = w->touched[t];
        struct blist *L = &w->bl[bi];
        while (L->nrs <= (uint32_t)k)
            L->rs[L->nrs++] = L->row0; /* the rows above without runs */
        L->rs[k + 1] = L->row0 = L->nrun;
        L->nrs = (uint32_t)k + 2;
        if (k == 0) continue;
        struct run *r = L->run;
#define TOUCH_IN_STRIP(i, j, ov)                                                                   \
    do {                                                                                           \
        run_unite(r, (i), (j));                                                                    \
        r[i].v += (ov);                                                                            \
    } while (0)
        SWEEP_ROWS(r, L->rs[k], L->rs[k + 1], r, L->rs[k - 1], L->rs[k], f->bext[bi],
                   TOUCH_IN_STRIP);
#undef TOUCH_IN_STRIP
    }
    w->ntouched = 0;
}

/* The strip [y0, y0 + rows) is classified: each run's root becomes a strip
 * component (roots come first: they hold the smallest index), each run's
 * stats go to its component. A run of length len adds 2 + 2 len crack
 * edges, minus 2 per pixel it shares with a run above (that side is inside
 * the blob, for both runs); seams between strips are settled later. */
void trk_fast_strip_end(struct worker *w, const struct fctx *f, int y0, int rows)
{
    const int strip = (y0 - f->ya) / FAST_STRIP_ROWS;
    const uint64_t width = (uint64_t)f->img->width;
    f->strip_w[strip] = (uint8_t)w->idx;
    for (int bi = 0; bi < f->nb; bi++) {
        struct blist *L = &w->bl[bi];
        struct sinfo *si = &f->si[(size_t)strip * (size_t)f->nb + (size_t)bi];
#define RS(j) ((uint32_t)(j) < L->nrs ? L->rs[j] : L->nrun)
        *si = (struct sinfo){ RS(0), RS(1), RS(rows - 1), RS(rows) };
#undef RS
        for (int k = 0; k + 1 < (int)L->nrs; k++) {
            const int32_t y = y0 + k;
            for (uint32_t i = L->rs[k]; i < L->rs[k + 1]; i++) {
                struct run *R = &L->run[i];
                const uint32_t root = run_root(L->run, i), shared = R->v;
                uint32_t c;
                if (root == i) {
                    if (L->ncomp == L->capcomp &&
                        grow((void **)&L->comp, &L->capcomp, sizeof(*L->comp))) {
                        w->oom = 1;
                        return;
                    }
                    c = L->ncomp++;
                    struct comp *C = &L->comp[c];
                    memset(&C->b, 0, sizeof(C->b));
                    C->b.x0 = R->x0, C->b.x1 = R->x1;
                    C->b.y0 = C->b.y1 = y;
                    C->b.first = (uint64_t)y * width + (uint64_t)R->x0;
                    C->parent = (uint64_t)c << FAST_WSHIFT | (uint64_t)w->idx;
                } else {
                    c = L->run[root].v;
                }
                R->v = c;
                struct trk_blob *b = &L->comp[c].b;
                const uint64_t len = (uint64_t)(R->x1 - R->x0 + 1);
                FAST_ADD_RUN(b, R->x0, R->x1, y, len);
                if (R->x0 < b->x0) b->x0 = R->x0;
                if (R->x1 > b->x1) b->x1 = R->x1;
                b->y1 = y;
                b->perimeter += 2 + 2 * len - 2 * (uint64_t)shared;
            }
        }
    }
}

/* A strip component by id (FAST_WSHIFT), of blob object bi. */
static struct comp *comp_at(const struct cpu_fast *s, int bi, uint64_t id)
{
    return &s->w[id & ((1u << FAST_WSHIFT) - 1)].bl[bi].comp[id >> FAST_WSHIFT];
}

static uint64_t comp_root(const struct cpu_fast *s, int bi, uint64_t id)
{
    for (;;) {
        struct comp *c = comp_at(s, bi, id);
        if (c->parent == id) return id;
        const uint64_t up = comp_at(s, bi, c->parent)->parent;
        c->parent = up; /* path halving */
        id = up;
    }
}

/* The root with the earlier first pixel stays root, so a component's root
 * carries its first pixel. */
static void comp_unite(const struct cpu_fast *s, int bi, uint64_t a, uint64_t b)
{
    a = comp_root(s, bi, a);
    b = comp_root(s, bi, b);
    if (a == b) return;
    struct comp *A = comp_at(s, bi, a), *B = comp_at(s, bi, b);
    if (A->b.first < B->b.first)
        B->parent = a;
    else
        A->parent = b;
}

/* Puts b into the sorted list (*n entries, at most k) when it belongs there. */
static void keep_best(struct trk_blob *list, int *n, int k, const struct trk_blob *b)
{
    if (*n == k && !trk_blob_before(b, &list[k - 1])) return; /* the usual case */
    int at = *n;
    while (at > 0 && trk_blob_before(b, &list[at - 1]))
        at--;
    const int last = *n < k ? *n : k - 1; /* the entry that falls off, if full */
    memmove(&list[at + 1], &list[at], (size_t)(last - at) * sizeof(*list));
    list[at] = *b;
    if (*n < k) (*n)++;
}

/* After every strip of f is labelled, blob object bi's list: joins the
 * strip components across each seam (the last row of a strip against the
 * first of the next, with the same sweep as inside a strip), adds every
 * component's stats to its root, and keeps the K best roots of at least
 * min_area in list; returns its length. The strips' runs and components are
 * in the lists of workers k0 .. k1 - 1 (a frame: all that took part; a
 * region: the one that measured it). */
int trk_fast_finish_lists(const struct cpu_fast *s, const struct fctx *f, int bi, int k0, int k1,
                          uint64_t min_area, int K, struct trk_blob *list)
{
    const int nstrips = (f->yb - f->ya) / FAST_STRIP_ROWS + 1;
    const int ext = f->bext[bi];
    for (int st = 0; st + 1 < nstrips; st++) {
        const uint64_t wu = f->strip_w[st], wd = f->strip_w[st + 1];
        const struct sinfo *su = &f->si[(size_t)st * (size_t)f->nb + (size_t)bi];
        const struct sinfo *sd = su + f->nb;
        const struct blist *U = &s->w[wu].bl[bi], *D = &s->w[wd].bl[bi];
#define TOUCH_AT_SEAM(i, j, ov)                                                                    \
    do {                                                                                           \
        const uint64_t cd_ = (uint64_t)D->run[i].v << FAST_WSHIFT | wd;                            \
        const uint64_t cu_ = (uint64_t)U->run[j].v << FAST_WSHIFT | wu;                            \
        comp_unite(s, bi, cd_, cu_);                                                               \
        comp_at(s, bi, cd_)->b.perimeter -= 2 * (uint64_t)(ov);                                    \
    } while (0)
        SWEEP_ROWS(D->run, sd->a0, sd->a1, U->run, su->z0, su->z1, ext, TOUCH_AT_SEAM);
#undef TOUCH_AT_SEAM
    }
    for (int k = k0; k < k1; k++) {
        const struct blist *L = &s->w[k].bl[bi];
        for (uint32_t c = 0; c < L->ncomp; c++) {
            const uint64_t id = (uint64_t)c << FAST_WSHIFT | (uint64_t)k;
            const uint64_t root = comp_root(s, bi, id);
            if (root == id) continue;
            const struct trk_blob *a = &L->comp[c].b;
            struct trk_blob *b = &comp_at(s, bi, root)->b;
            FAST_ADD_SUMS(b, a);
            b->perimeter += a->perimeter;
            if (a->x0 < b->x0) b->x0 = a->x0;
            if (a->x1 > b->x1) b->x1 = a->x1;
            if (a->y0 < b->y0) b->y0 = a->y0;
            if (a->y1 > b->y1) b->y1 = a->y1;
        }
    }
    int n = 0;
    for (int k = k0; k < k1; k++) {
        const struct blist *L = &s->w[k].bl[bi];
        for (uint32_t c = 0; c < L->ncomp; c++) {
            const struct comp *C = &L->comp[c];
            if (C->parent == ((uint64_t)c << FAST_WSHIFT | (uint64_t)k) && C->b.mass >= min_area)
                keep_best(list, &n, K, &C->b);
        }
    }
    return n;
}

/* Every blob object's list of the frame (nacc workers took part). */
void trk_fast_blobs_finish(struct cpu_fast *s, int nacc)
{
    for (int bi = 0; bi < s->nb; bi++)
        s->n_blobs[bi] =
            trk_fast_finish_lists(s, &s->f, bi, 0, nacc, s->bmin[bi], s->bk[bi], s->blob[bi]);
}
