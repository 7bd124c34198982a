#include "workq.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "trk_error.h" /* TRK_EINVAL, TRK_ENOMEM */

struct trk_workq {
    trk_workq_fn run;
    void *ctx;
    size_t job_size;
    int max_jobs;
    pthread_t worker;
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t wake;  /* to the worker: a job was pushed, or quit */
    int head, n;          /* the ring in jobs, from head */
    bool quit;
    unsigned char *jobs; /* max_jobs * job_size */
    unsigned char *cur;  /* the job the worker runs (a copy) */
};

static void *worker(void *arg)
{
    struct trk_workq *q = arg;
    pthread_mutex_lock(&q->lock);
    for (;;) {
        while (!q->n && !q->quit)
            pthread_cond_wait(&q->wake, &q->lock);
        if (!q->n) break; /* quit, and every queued job is done */
        memcpy(q->cur, q->jobs + (size_t)q->head * q->job_size, q->job_size);
        q->head = (q->head + 1) % q->max_jobs;
        q->n--;
        pthread_mutex_unlock(&q->lock);
        q->run(q->ctx, q->cur);
        pthread_mutex_lock(&q->lock);
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

int trk_workq_create(size_t job_size, int max_jobs, trk_workq_fn run, void *ctx,
                     struct trk_workq **out)
{
    *out = NULL;
    if (!job_size || max_jobs < 1 || !run) return TRK_EINVAL;
    struct trk_workq *q = calloc(1, sizeof(*q));
    if (!q) return TRK_ENOMEM;
    q->run = run;
    q->ctx = ctx;
    q->job_size = job_size;
    q->max_jobs = max_jobs;
    q->jobs = calloc((size_t)max_jobs, job_size);
    q->cur = calloc(1, job_size);
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->wake, NULL);
    if (!q->jobs || !q->cur || pthread_create(&q->worker, NULL, worker, q) != 0) {
        pthread_cond_destroy(&q->wake);
        pthread_mutex_destroy(&q->lock);
        free(q->jobs);
        free(q->cur);
        free(q);
        return TRK_ENOMEM;
    }
    *out = q;
    return 0;
}

bool trk_workq_push(struct trk_workq *q, const void *job)
{
    pthread_mutex_lock(&q->lock);
    bool ok = q->n < q->max_jobs;
    if (ok) {
        memcpy(q->jobs + (size_t)((q->head + q->n++) % q->max_jobs) * q->job_size, job,
               q->job_size);
        pthread_cond_signal(&q->wake);
    }
    pthread_mutex_unlock(&q->lock);
    return ok;
}

void trk_workq_destroy(struct trk_workq **pq)
{
    if (!pq || !*pq) return;
    struct trk_workq *q = *pq;
    *pq = NULL;
    pthread_mutex_lock(&q->lock);
    q->quit = true;
    pthread_cond_signal(&q->wake);
    pthread_mutex_unlock(&q->lock);
    pthread_join(q->worker, NULL);
    pthread_cond_destroy(&q->wake);
    pthread_mutex_destroy(&q->lock);
    free(q->jobs);
    free(q->cur);
    free(q);
}
