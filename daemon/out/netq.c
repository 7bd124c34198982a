#include "netq.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#define LOG_TAG "sink"
#include "log.h"
#include "outputs.h"

/* Slots: TRK_NETQ_DEPTH queued, one being filled by the processing thread
 * and one being sent. A slot is owned by whoever took it out of `free` or
 * `queue` under the lock, so copying and sending happen without it. */
#define N_SLOTS (TRK_NETQ_DEPTH + 2)

struct trk_netq {
    struct trk_netq_cfg cfg;
    char *name;
    pthread_t thread;
    struct trk_netq_frame *slots[N_SLOTS];
    _Atomic bool send_failed; /* sink thread: log once per failure run */
    bool joined;              /* owner's thread: the sink thread has ended */

    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct trk_netq_frame *queue[TRK_NETQ_DEPTH]; /* oldest at head */
    int head, count;
    struct trk_netq_frame *free[N_SLOTS];
    int n_free;
    bool quit;
    struct trk_netq_stats st;
};

const char *trk_netq_name(const struct trk_netq *s)
{
    return s->name;
}

static void *sink_main(void *arg)
{
    struct trk_netq *s = arg;
    char tname[16];
    snprintf(tname, sizeof(tname), "trk-%.11s", s->name);
    prctl(PR_SET_NAME, tname, 0, 0, 0);
    for (;;) {
        pthread_mutex_lock(&s->lock);
        while (!s->count && !s->quit)
            pthread_cond_wait(&s->cond, &s->lock);
        if (!s->count) { /* quit, and everything queued went out */
            pthread_mutex_unlock(&s->lock);
            break;
        }
        struct trk_netq_frame *f = s->queue[s->head];
        s->head = (s->head + 1) % TRK_NETQ_DEPTH;
        s->count--;
        pthread_mutex_unlock(&s->lock);

        int err = s->cfg.send(s->cfg.ctx, f);
        if (err)
            log_once(s->send_failed, TRK_LOG_WARN, err,
                     "%s: sending frame %llu failed; frames are being lost (counted) until a "
                     "send works",
                     s->name, (unsigned long long)f->r.meta.seq);
        else if (atomic_exchange(&s->send_failed, false))
            log_info("%s: sending works again (frame %llu)", s->name,
                     (unsigned long long)f->r.meta.seq);

        pthread_mutex_lock(&s->lock);
        if (err)
            s->st.failed++;
        else
            s->st.sent++;
        s->free[s->n_free++] = f;
        pthread_mutex_unlock(&s->lock);
    }
    return NULL;
}

static void free_slots(struct trk_netq *s)
{
    for (int i = 0; i < N_SLOTS; i++) {
        if (s->slots[i]) trk_frame_result_free(&s->slots[i]->r);
        free(s->slots[i]);
    }
}

int trk_netq_create(const struct trk_netq_cfg *cfg, struct trk_netq **out)
{
    *out = NULL;
    if (!cfg || !cfg->send) return TRK_EINVAL;
    int err = TRK_ENOMEM;
    struct trk_netq *s = calloc(1, sizeof(*s));
    if (!s || !(s->name = strdup(cfg->name ? cfg->name : "sink"))) goto fail;
    for (int i = 0; i < N_SLOTS; i++) {
        if (!(s->slots[i] = calloc(1, sizeof(*s->slots[i])))) goto fail;
        s->free[s->n_free++] = s->slots[i];
    }
    s->cfg = *cfg;
    s->cfg.name = s->name;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    if ((err = -pthread_create(&s->thread, NULL, sink_main, s)) != 0) {
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->cond);
        goto fail;
    }
    *out = s;
    return 0;
fail:
    if (cfg && cfg->close) cfg->close(cfg->ctx);
    if (s) {
        free_slots(s);
        free(s->name);
    }
    free(s);
    return err;
}

/* Copies r into f, which the caller owns. */
static void copy_frame(struct trk_netq_frame *f, const struct trk_frame_result *r)
{
    trk_frame_result_copy(&f->r, r);
    if (r->meta.backend) {
        snprintf(f->backend, sizeof(f->backend), "%s", r->meta.backend);
        f->r.meta.backend = f->backend;
    }
    f->r.meta.camera = NULL;
    memcpy(f->defs, r->defs, (size_t)r->n * sizeof(*r->defs));
    f->r.defs = f->defs;
    if (r->n_patterns > 0 && r->n_patterns <= TRK_PATTERNS_MAX) {
        memcpy(f->patterns, r->patterns, (size_t)r->n_patterns * sizeof(*r->patterns));
        f->r.patterns = f->patterns;
    }
}

void trk_netq_push(struct trk_netq *s, const struct trk_frame_result *r)
{
    if (!s || s->joined) return;
    pthread_mutex_lock(&s->lock);
    struct trk_netq_frame *f;
    s->st.frames++;
    if (s->count == TRK_NETQ_DEPTH) {
        /* Full: the oldest queued frame gives way (the peer wants the
         * newest positions); its slot takes the new frame. */
        f = s->queue[s->head];
        s->head = (s->head + 1) % TRK_NETQ_DEPTH;
        s->count--;
        s->st.dropped++;
    } else {
        /* count < DEPTH: at most DEPTH - 1 queued and one being sent, so
         * at least one of the N_SLOTS is free. */
        f = s->free[--s->n_free];
    }
    pthread_mutex_unlock(&s->lock);

    copy_frame(f, r);

    pthread_mutex_lock(&s->lock);
    s->queue[(s->head + s->count) % TRK_NETQ_DEPTH] = f;
    s->count++;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

void trk_netq_get_stats(struct trk_netq *s, struct trk_netq_stats *st)
{
    pthread_mutex_lock(&s->lock);
    *st = s->st;
    pthread_mutex_unlock(&s->lock);
}

void trk_netq_drain(struct trk_netq *s)
{
    if (!s || s->joined) return;
    pthread_mutex_lock(&s->lock);
    s->quit = true;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    s->joined = true;
}

void trk_netq_destroy(struct trk_netq **ps)
{
    if (!ps || !*ps) return;
    struct trk_netq *s = *ps;
    trk_netq_drain(s);
    if (s->cfg.close) s->cfg.close(s->cfg.ctx);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free_slots(s);
    free(s->name);
    free(s);
    *ps = NULL;
}

/* ------------------------------------------------- the outputs door */

static void sink_frame(void *ctx, const struct trk_frame_result *r, const char *json, size_t len)
{
    (void)json, (void)len;
    trk_netq_push(ctx, r);
}

/* "; udp HOST:PORT 300 sent, 2 dropped, 0 failed" in the stats log line. */
static void sink_tally(void *ctx, struct trk_outputs_tally *t)
{
    struct trk_netq_stats st;
    trk_netq_get_stats(ctx, &st);
    if (t->log_at >= t->log_len) return;
    int n = snprintf(t->log + t->log_at, t->log_len - t->log_at,
                     "; %s %llu sent, %llu dropped, %llu failed", trk_netq_name(ctx),
                     (unsigned long long)st.sent, (unsigned long long)st.dropped,
                     (unsigned long long)st.failed);
    if (n > 0) t->log_at += (size_t)n;
}

/* Sends what is still queued, then says what the sink did. */
static int sink_close(void *ctx)
{
    struct trk_netq *s = ctx;
    struct trk_netq_stats st;
    trk_netq_drain(s);
    trk_netq_get_stats(s, &st);
    log_info("%s: %llu of %llu frames sent, %llu dropped (queue full), %llu failed",
             trk_netq_name(s), (unsigned long long)st.sent, (unsigned long long)st.frames,
             (unsigned long long)st.dropped, (unsigned long long)st.failed);
    trk_netq_destroy(&s);
    return 0;
}

static const struct trk_output_ops sink_ops = {
    .name = "sink", .frame = sink_frame, .tally = sink_tally, .close = sink_close
};

int trk_netq_add(struct trk_outputs *o, struct trk_netq *s)
{
    return trk_outputs_add(o, &sink_ops, s);
}
