#include "sink.h"

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

/* Slots: TRK_SINK_DEPTH queued, one being filled by the processing thread
 * and one being sent. A slot is owned by whoever took it out of `free` or
 * `queue` under the lock, so copying and sending happen without it. */
#define N_SLOTS (TRK_SINK_DEPTH + 2)

struct trk_sink {
    struct trk_sink_cfg cfg;
    char *name;
    pthread_t thread;
    struct trk_sink_frame *slots[N_SLOTS];
    _Atomic bool send_failed; /* sink thread: log once per failure run */
    bool joined;              /* owner's thread: the sink thread has ended */

    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct trk_sink_frame *queue[TRK_SINK_DEPTH]; /* oldest at head */
    int head, count;
    struct trk_sink_frame *free[N_SLOTS];
    int n_free;
    bool quit;
    struct trk_sink_stats st;
};

const char *trk_sink_name(const struct trk_sink *s)
{
    return s->name;
}

static void *sink_main(void *arg)
{
    struct trk_sink *s = arg;
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
        struct trk_sink_frame *f = s->queue[s->head];
        s->head = (s->head + 1) % TRK_SINK_DEPTH;
        s->count--;
        pthread_mutex_unlock(&s->lock);

        int err = s->cfg.send(s->cfg.ctx, f);
        if (err)
            log_once(s->send_failed, TRK_LOG_WARN, err,
                     "%s: sending frame %llu failed; frames are being lost (counted) until a "
                     "send works",
                     s->name, (unsigned long long)f->meta.seq);
        else if (atomic_exchange(&s->send_failed, false))
            log_info("%s: sending works again (frame %llu)", s->name,
                     (unsigned long long)f->meta.seq);

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

static void free_slots(struct trk_sink *s)
{
    for (int i = 0; i < N_SLOTS; i++) {
        if (s->slots[i]) {
            free(s->slots[i]->blob_store);
            free(s->slots[i]->inst_store);
        }
        free(s->slots[i]);
    }
}

int trk_sink_create(const struct trk_sink_cfg *cfg, struct trk_sink **out)
{
    *out = NULL;
    if (!cfg || !cfg->send) return TRK_EINVAL;
    int err = TRK_ENOMEM;
    struct trk_sink *s = calloc(1, sizeof(*s));
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

/* How many blobs object i's list in blobs contributes (never more than its
 * definition's K: what trk_msg_frame lists). */
static int blobs_of(const struct trk_object_def *def, const struct trk_blob_list *l)
{
    if (!l || !def->blobs || !l->blobs || l->n <= 0) return 0;
    return l->n < def->blobs ? l->n : def->blobs;
}

/* The tracked objects' instance lists of m into f (meta.instances NULL
 * when m has none, or when memory for them runs out). */
static void copy_instances(struct trk_sink_frame *f, const struct trk_frame_meta *m,
                           const struct trk_object_def *defs, int n)
{
    f->meta.instances = NULL;
    if (!m->instances) return;
    size_t total = 0;
    for (int i = 0; i < n; i++)
        if (defs[i].track && m->instances[i].n > 0) total += (size_t)m->instances[i].n;
    if (total > f->inst_cap) {
        struct trk_instance *ni = realloc(f->inst_store, total * sizeof(*ni));
        if (!ni) return;
        f->inst_store = ni, f->inst_cap = total;
    }
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        int k = defs[i].track && m->instances[i].n > 0 ? m->instances[i].n : 0;
        if (k) memcpy(f->inst_store + at, m->instances[i].v, (size_t)k * sizeof(*f->inst_store));
        f->inst[i] = (struct trk_instance_list){ .v = k ? f->inst_store + at : NULL, .n = k };
        at += (size_t)k;
    }
    f->meta.instances = f->inst;
}

/* Copies the frame into f, which the caller owns. */
static void copy_frame(struct trk_sink_frame *f, const struct trk_frame_meta *m,
                       const struct trk_object_def *defs, const struct trk_obj_result *res,
                       const struct trk_blob_list *blobs, int n)
{
    if (n < 0) n = 0;
    if (n > TRK_MAX_OBJECTS) n = TRK_MAX_OBJECTS;
    f->meta = *m;
    if (m->backend) {
        snprintf(f->backend, sizeof(f->backend), "%s", m->backend);
        f->meta.backend = f->backend;
    }
    if (m->calib) {
        f->calib = *m->calib;
        f->meta.calib = &f->calib;
    }
    f->meta.camera = NULL;
    copy_instances(f, m, defs, n);
    f->n = n;
    memcpy(f->defs, defs, (size_t)n * sizeof(*defs));
    memcpy(f->res, res, (size_t)n * sizeof(*res));
    size_t total = 0;
    for (int i = 0; blobs && i < n; i++)
        total += (size_t)blobs_of(&defs[i], &blobs[i]);
    if (total > f->blob_cap) {
        /* Grows to the largest frame seen, then stays: no allocation per
         * frame once the blob counts have been reached. */
        struct trk_blob *nb = realloc(f->blob_store, total * sizeof(*nb));
        if (nb) f->blob_store = nb, f->blob_cap = total;
    }
    bool room = total <= f->blob_cap;
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        int k = room && blobs ? blobs_of(&defs[i], &blobs[i]) : 0;
        if (k) memcpy(f->blob_store + at, blobs[i].blobs, (size_t)k * sizeof(struct trk_blob));
        f->blobs[i] = (struct trk_blob_list){ .blobs = k ? f->blob_store + at : NULL, .n = k };
        at += (size_t)k;
    }
}

void trk_sink_push(struct trk_sink *s, const struct trk_frame_meta *m,
                   const struct trk_object_def *defs, const struct trk_obj_result *res,
                   const struct trk_blob_list *blobs, int n)
{
    if (!s || s->joined) return;
    pthread_mutex_lock(&s->lock);
    struct trk_sink_frame *f;
    s->st.frames++;
    if (s->count == TRK_SINK_DEPTH) {
        /* Full: the oldest queued frame gives way (the peer wants the
         * newest positions); its slot takes the new frame. */
        f = s->queue[s->head];
        s->head = (s->head + 1) % TRK_SINK_DEPTH;
        s->count--;
        s->st.dropped++;
    } else {
        /* count < DEPTH: at most DEPTH - 1 queued and one being sent, so
         * at least one of the N_SLOTS is free. */
        f = s->free[--s->n_free];
    }
    pthread_mutex_unlock(&s->lock);

    copy_frame(f, m, defs, res, blobs, n);

    pthread_mutex_lock(&s->lock);
    s->queue[(s->head + s->count) % TRK_SINK_DEPTH] = f;
    s->count++;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

void trk_sink_get_stats(struct trk_sink *s, struct trk_sink_stats *st)
{
    pthread_mutex_lock(&s->lock);
    *st = s->st;
    pthread_mutex_unlock(&s->lock);
}

void trk_sink_drain(struct trk_sink *s)
{
    if (!s || s->joined) return;
    pthread_mutex_lock(&s->lock);
    s->quit = true;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    s->joined = true;
}

void trk_sink_destroy(struct trk_sink **ps)
{
    if (!ps || !*ps) return;
    struct trk_sink *s = *ps;
    trk_sink_drain(s);
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
    trk_sink_push(ctx, &r->meta, r->defs, r->res, r->blobs, r->n);
}

/* "; udp HOST:PORT 300 sent, 2 dropped, 0 failed" in the stats log line. */
static void sink_tally(void *ctx, struct trk_outputs_tally *t)
{
    struct trk_sink_stats st;
    trk_sink_get_stats(ctx, &st);
    if (t->log_at >= t->log_len) return;
    int n = snprintf(t->log + t->log_at, t->log_len - t->log_at,
                     "; %s %llu sent, %llu dropped, %llu failed", trk_sink_name(ctx),
                     (unsigned long long)st.sent, (unsigned long long)st.dropped,
                     (unsigned long long)st.failed);
    if (n > 0) t->log_at += (size_t)n;
}

/* Sends what is still queued, then says what the sink did. */
static int sink_close(void *ctx)
{
    struct trk_sink *s = ctx;
    struct trk_sink_stats st;
    trk_sink_drain(s);
    trk_sink_get_stats(s, &st);
    log_info("%s: %llu of %llu frames sent, %llu dropped (queue full), %llu failed",
             trk_sink_name(s), (unsigned long long)st.sent, (unsigned long long)st.frames,
             (unsigned long long)st.dropped, (unsigned long long)st.failed);
    trk_sink_destroy(&s);
    return 0;
}

static const struct trk_output_ops sink_ops = {
    .name = "sink", .frame = sink_frame, .tally = sink_tally, .close = sink_close
};

int trk_sink_add(struct trk_outputs *o, struct trk_sink *s)
{
    return trk_outputs_add(o, &sink_ops, s);
}
