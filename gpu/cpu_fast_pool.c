/* The fast CPU backend's threads: the strip dispenser a frame is shared
 * out by, the persistent workers and waking and joining them. */
#include "cpu_fast_int.h"

/* Rows [y0, y1] of f (one strip: y0 - f->ya is a multiple of
 * FAST_STRIP_ROWS), classified and, with blob objects, labelled. */
void trk_fast_do_strip(struct worker *w, const struct fctx *f, int y0, int y1)
{
    if (!f->nb) {
        for (int y = y0; y <= y1; y++) {
            if (f->prefetch) trk_fast_pc_step(w);
            trk_fast_do_row(w, f, y);
        }
        return;
    }
    trk_fast_strip_begin(w, f);
    for (int y = y0; y <= y1; y++) {
        if (f->prefetch) trk_fast_pc_step(w);
        trk_fast_do_row(w, f, y);
        trk_fast_label_row(w, f, y - y0);
    }
    trk_fast_strip_end(w, f, y0, y1 - y0 + 1);
}

/* A thread's share of a frame: strips from the dispenser until none is left. */
void trk_fast_run_share(struct worker *w, struct fctx *f, int n)
{
    for (int i = 0; i < n; i++) {
        w->acc[i] = (struct acc){ 0, 0, 0, INT32_MAX, INT32_MAX, -1, -1, 0, 0, 0 };
    }
    w->dense = 0; /* every frame starts on the run path */
    if (f->nb) {
        w->oom = 0;
        for (int bi = 0; bi < f->nb; bi++)
            w->bl[bi].nrun = w->bl[bi].ncomp = w->bl[bi].row0 = 0;
    }
    for (;;) {
        int y0 = atomic_fetch_add_explicit(&f->next_row, FAST_STRIP_ROWS, memory_order_relaxed);
        if (y0 > f->yb) break;
        int y1 = y0 + FAST_STRIP_ROWS - 1;
        if (y1 > f->yb) y1 = f->yb;
        trk_fast_do_strip(w, f, y0, y1);
    }
}

void *trk_fast_worker_main(void *arg)
{
    struct worker *w = arg;
    struct cpu_fast *s = w->be;
    unsigned long seen = 0;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (s->gen == seen && !s->quit)
            pthread_cond_wait(&s->go, &s->mu);
        if (s->quit) {
            pthread_mutex_unlock(&s->mu);
            return NULL;
        }
        seen = s->gen;
        pthread_mutex_unlock(&s->mu);

        if (s->pf.phase)
            trk_fast_pf_share(w, s);
        else if (s->rmode)
            trk_fast_region_share(w);
        else
            trk_fast_run_share(w, &s->f, s->tab.n);

        pthread_mutex_lock(&s->mu);
        if (--s->pending == 0) pthread_cond_signal(&s->done);
        pthread_mutex_unlock(&s->mu);
    }
}

/* Wakes the pool's workers for the job the caller has set up (nothing when
 * nt == 1: the caller's thread does it all)... */
void trk_fast_pool_wake(struct cpu_fast *s, int nt)
{
    if (nt <= 1) return;
    pthread_mutex_lock(&s->mu);
    s->pending = s->nthreads - 1;
    s->gen++;
    pthread_cond_broadcast(&s->go);
    pthread_mutex_unlock(&s->mu);
}

/* ...and, after the caller's own share, waits until every worker is done. */
void trk_fast_pool_join(struct cpu_fast *s, int nt)
{
    if (nt <= 1) return;
    pthread_mutex_lock(&s->mu);
    while (s->pending > 0)
        pthread_cond_wait(&s->done, &s->mu);
    pthread_mutex_unlock(&s->mu);
}
