#include "rewind.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOG_TAG "rewind"
#include "log.h"
#include "outputs.h"

/* One held frame, in a list in capture order (seq increasing). */
struct held {
    struct held *next;
    struct trk_record_frame f;
};

struct list {
    struct held *head, *tail;
};

struct texts {
    struct trk_record_text *head, *tail;
};

struct trk_rewind {
    struct trk_rewind_cfg cfg;

    pthread_mutex_t lock;
    pthread_cond_t cond; /* to the saver: a job, or closing */
    /* The buffer (lock): frames, their bytes (buffers' capacity), and the
     * texts (result lines and object set versions in seq order) from the
     * oldest frame on; base: the set in force at the oldest frame. */
    struct list frames;
    size_t n_frames;
    uint64_t bytes;
    struct texts texts;
    struct trk_record_text *base;
    /* The processing thread's state before each frame from the oldest on
     * (trk_rewind_state; data: daemon/state.h's bytes), seq order. */
    struct texts states;
    uint64_t last_result; /* seq of the newest result line + 1; 0 = none */
    /* One evicted frame's buffer, for the capture thread's next copy. */
    struct held *spare;
    /* The save being written (lock): its frames, texts and names. */
    bool saving, closing;
    struct list job;
    struct texts job_texts;
    struct trk_record_text *job_state; /* before its first frame, or NULL */
    char job_dir[4200], job_trigger[600];
    double job_seconds, job_wall_ms;
    double last_save; /* trk_now() of the last save; < 0 = none */
    unsigned saves;
    pthread_t saver;

    /* Processing thread: the last set seen (JSON), one not yet tied to a
     * frame, and per object (index in the set) the frames since found. */
    char *last_set, *pending_set;
    uint32_t missing[TRK_MAX_OBJECTS];
    bool was_found[TRK_MAX_OBJECTS];

    _Atomic bool mem_logged, pack_logged, save_logged;
};

double trk_rewind_bytes_per_second(int width, int height, double fps, double bpp)
{
    return (double)width * height * bpp * fps;
}

static struct trk_record_text *text_new(bool objects, uint64_t seq, const char *s, size_t len)
{
    struct trk_record_text *t = malloc(sizeof(*t) + len + 1);
    if (!t) return NULL;
    *t = (struct trk_record_text){ .objects = objects, .seq = seq, .len = len };
    memcpy(t->data, s, len);
    t->data[len] = 0;
    return t;
}

static void texts_push(struct texts *l, struct trk_record_text *t)
{
    t->next = NULL;
    if (l->tail)
        l->tail->next = t;
    else
        l->head = t;
    l->tail = t;
}

static void texts_free(struct texts *l)
{
    for (struct trk_record_text *t = l->head, *n; t; t = n) {
        n = t->next;
        free(t);
    }
    l->head = l->tail = NULL;
}

static void frames_free(struct list *l)
{
    for (struct held *h = l->head, *n; h; h = n) {
        n = h->next;
        free(h->f.buf);
        free(h);
    }
    l->head = l->tail = NULL;
}

/* Lock held: texts before the oldest frame go (results), or become the base
 * (the newest set at or before it). */
static void trim_texts(struct trk_rewind *rw)
{
    const uint64_t oldest = rw->frames.head ? rw->frames.head->f.seq : UINT64_MAX;
    struct trk_record_text *t;
    while ((t = rw->texts.head) && t->seq <= oldest && (t->objects || t->seq < oldest)) {
        rw->texts.head = t->next;
        if (!t->next) rw->texts.tail = NULL;
        if (t->objects) {
            free(rw->base);
            rw->base = t;
        } else {
            free(t);
        }
    }
    while ((t = rw->states.head) && t->seq < oldest) {
        rw->states.head = t->next;
        if (!t->next) rw->states.tail = NULL;
        free(t);
    }
}

/* Lock held: the oldest frame leaves the buffer into *gone. */
static void drop_oldest(struct trk_rewind *rw, struct list *gone)
{
    struct held *h = rw->frames.head;
    rw->frames.head = h->next;
    if (!h->next) rw->frames.tail = NULL;
    rw->n_frames--;
    rw->bytes -= h->f.cap;
    h->next = gone->head;
    gone->head = h;
}

void trk_rewind_frame(struct trk_rewind *rw, struct trk_frame *f)
{
    if (!rw) return;
    pthread_mutex_lock(&rw->lock);
    struct held *h = rw->spare;
    rw->spare = NULL;
    pthread_mutex_unlock(&rw->lock);
    if (!h && !(h = calloc(1, sizeof(*h)))) return;
    /* The copy is made outside the lock: a save never waits for it. */
    if (trk_record_pack(&h->f, f)) {
        log_once(rw->pack_logged, TRK_LOG_WARN, 0,
                 "frame %llu cannot be kept for rewind (out of memory or no host image)",
                 (unsigned long long)f->seq);
        free(h->f.buf);
        free(h);
        return;
    }
    struct list gone = { 0 };
    bool cut = false;
    pthread_mutex_lock(&rw->lock);
    h->next = NULL;
    if (rw->frames.tail)
        rw->frames.tail->next = h;
    else
        rw->frames.head = h;
    rw->frames.tail = h;
    rw->n_frames++;
    rw->bytes += h->f.cap;
    while (rw->n_frames > 1 && h->f.t_capture - rw->frames.head->f.t_capture > rw->cfg.seconds)
        drop_oldest(rw, &gone);
    while (rw->n_frames > 1 && rw->bytes > rw->cfg.max_bytes) {
        drop_oldest(rw, &gone);
        cut = true;
    }
    const double span = h->f.t_capture - rw->frames.head->f.t_capture;
    trim_texts(rw);
    if (gone.head) {
        rw->spare = gone.head;
        gone.head = gone.head->next;
        rw->spare->next = NULL;
    }
    pthread_mutex_unlock(&rw->lock);
    frames_free(&gone);
    if (cut)
        log_once(rw->mem_logged, TRK_LOG_WARN, 0,
                 "the rewind buffer holds %.1f s, not %.1f s: --rewind-max-mem (%llu MB) is "
                 "reached at %dx%d %s",
                 span, rw->cfg.seconds, (unsigned long long)(rw->cfg.max_bytes / 1000000),
                 h->f.width, h->f.height, trk_pixfmt_name(h->f.fmt));
}

void trk_rewind_state(struct trk_rewind *rw, uint64_t seq, const void *data, size_t len)
{
    if (!rw) return;
    struct trk_record_text *t = text_new(false, seq, data, len);
    if (!t) return; /* a save starting at seq then has no state.bin */
    pthread_mutex_lock(&rw->lock);
    texts_push(&rw->states, t);
    pthread_mutex_unlock(&rw->lock);
}

/* Lock held: a copy of the state before the first frame a save from the
 * oldest frame on holds (the first with its result), or NULL. */
static struct trk_record_text *first_state(const struct trk_rewind *rw)
{
    const uint64_t oldest = rw->frames.head->f.seq;
    const struct trk_record_text *r = rw->texts.head;
    while (r && (r->objects || r->seq < oldest))
        r = r->next;
    for (const struct trk_record_text *t = rw->states.head; r && t && t->seq <= r->seq; t = t->next)
        if (t->seq == r->seq) return text_new(false, t->seq, t->data, t->len);
    return NULL;
}

/* The bundle's folder for save number n, made from the wall clock (UTC). */
static void bundle_name(const struct trk_rewind *rw, unsigned n, char *out, size_t len)
{
    time_t now = time(NULL);
    struct tm tm;
    char stamp[32] = "unknown";
    if (gmtime_r(&now, &tm)) strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
    snprintf(out, len, "%s/rewind-%s-%u", rw->cfg.dir, stamp, n);
}

/* Lock held: copies of the base set and of the texts up to seq last. */
static int copy_texts(const struct trk_rewind *rw, uint64_t last, struct texts *out)
{
    if (rw->base) {
        struct trk_record_text *c = text_new(true, rw->base->seq, rw->base->data, rw->base->len);
        if (!c) return TRK_ENOMEM;
        texts_push(out, c);
    }
    for (const struct trk_record_text *t = rw->texts.head; t && t->seq <= last; t = t->next) {
        struct trk_record_text *c = text_new(t->objects, t->seq, t->data, t->len);
        if (!c) return TRK_ENOMEM;
        texts_push(out, c);
    }
    return 0;
}

int trk_rewind_save(struct trk_rewind *rw, const char *trigger, char *dir, size_t dir_len,
                    char *why, size_t why_len)
{
    const double now = trk_now();
    int err = 0;
    pthread_mutex_lock(&rw->lock);
    if (rw->saving || rw->closing) {
        err = -EBUSY;
        snprintf(why, why_len, "a rewind save is being written (%s)", rw->job_dir);
    } else if (rw->last_save >= 0 && now - rw->last_save < rw->cfg.min_gap) {
        err = -EAGAIN;
        snprintf(why, why_len, "the last rewind save was %.1f s ago; --rewind-gap is %.1f s",
                 now - rw->last_save, rw->cfg.min_gap);
    } else if (!rw->frames.head || !rw->last_result || rw->frames.head->f.seq >= rw->last_result) {
        err = -ENODATA;
        snprintf(why, why_len, "the rewind buffer holds no frame with its result yet");
    }
    if (!err) {
        /* Frames up to the newest result: the rest wait for theirs. */
        const uint64_t last = rw->last_result - 1;
        struct texts tx = { 0 };
        if (copy_texts(rw, last, &tx)) {
            texts_free(&tx);
            err = TRK_ENOMEM;
            snprintf(why, why_len, "out of memory");
        } else {
            rw->job_state = first_state(rw);
            const struct held *first = rw->frames.head, *end = first;
            struct list gone = { 0 };
            while (rw->frames.head && rw->frames.head->f.seq <= last) {
                end = rw->frames.head;
                drop_oldest(rw, &gone);
            }
            /* drop_oldest stacks them newest first: back to capture order. */
            struct list job = { 0 };
            for (struct held *h = gone.head, *n; h; h = n) {
                n = h->next;
                h->next = job.head;
                job.head = h;
                if (!job.tail) job.tail = h;
            }
            trim_texts(rw);
            rw->job = job;
            rw->job_texts = tx;
            rw->job_seconds = end->f.t_capture - first->f.t_capture;
            rw->job_wall_ms = trk_wall_ms() - (now - first->f.t_capture) * 1e3;
            snprintf(rw->job_trigger, sizeof(rw->job_trigger), "%s", trigger);
            bundle_name(rw, ++rw->saves, rw->job_dir, sizeof(rw->job_dir));
            snprintf(dir, dir_len, "%s", rw->job_dir);
            rw->saving = true;
            rw->last_save = now;
            pthread_cond_signal(&rw->cond);
        }
    }
    pthread_mutex_unlock(&rw->lock);
    return err;
}

/* Saver: the job's frames that have a result line (the others were skipped
 * by processing), as the array trk_record_write takes. */
static struct trk_record_frame **with_results(const struct list *frames,
                                              const struct trk_record_text *texts, size_t *n)
{
    size_t cap = 0;
    for (const struct held *h = frames->head; h; h = h->next)
        cap++;
    struct trk_record_frame **v = calloc(cap ? cap : 1, sizeof(*v));
    *n = 0;
    if (!v) return NULL;
    const struct trk_record_text *t = texts;
    for (struct held *h = frames->head; h; h = h->next) {
        while (t && (t->objects || t->seq < h->f.seq))
            t = t->next;
        if (t && t->seq == h->f.seq) v[(*n)++] = &h->f;
    }
    return v;
}

static void write_job(struct trk_rewind *rw)
{
    size_t n = 0;
    struct trk_record_frame **v = with_results(&rw->job, rw->job_texts.head, &n);
    struct trk_record_cfg c = rw->cfg.bundle;
    c.dir = rw->job_dir;
    c.trigger = rw->job_trigger;
    c.rewind_seconds = rw->job_seconds;
    c.started_wall_ms = rw->job_wall_ms;
    if (rw->job_state) {
        c.state = rw->job_state->data;
        c.state_len = rw->job_state->len;
    } else {
        log_warn("%s has no state before its first frame (out of memory then): a replay starts "
                 "without the tracked objects' instances",
                 rw->job_dir);
    }
    char why[700] = "out of memory";
    int err = v ? trk_record_write(&c, v, n, rw->job_texts.head, why, sizeof(why)) : TRK_ENOMEM;
    if (err)
        log_error("rewind save to %s failed: %s; tracking goes on", rw->job_dir, why);
    else
        log_info("rewind saved to %s: %zu frames, %.2f s (%s)", rw->job_dir, n, rw->job_seconds,
                 rw->job_trigger);
    free(v);
}

static void *saver_main(void *arg)
{
    struct trk_rewind *rw = arg;
    bool was_healthy = false; /* "no frames yet" at the start is no change */
    pthread_mutex_lock(&rw->lock);
    for (;;) {
        if (rw->saving) {
            pthread_mutex_unlock(&rw->lock);
            write_job(rw);
            pthread_mutex_lock(&rw->lock);
            frames_free(&rw->job);
            texts_free(&rw->job_texts);
            free(rw->job_state);
            rw->job_state = NULL;
            rw->saving = false;
        }
        if (rw->closing) break;
        if (rw->cfg.healthy) {
            pthread_mutex_unlock(&rw->lock);
            char why[300], trig[320], dir[4200], no[700];
            bool ok = rw->cfg.healthy(rw->cfg.healthy_ctx, why, sizeof(why));
            if (!ok && was_healthy) {
                snprintf(trig, sizeof(trig), "health: %s", why);
                if (trk_rewind_save(rw, trig, dir, sizeof(dir), no, sizeof(no)))
                    log_warn("health turned bad (%s); rewind not saved: %s", why, no);
                else
                    log_info("health turned bad (%s): saving the rewind buffer to %s", why, dir);
            }
            was_healthy = ok;
            pthread_mutex_lock(&rw->lock);
            if (rw->saving || rw->closing) continue;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 250 * 1000 * 1000;
            if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
            pthread_cond_timedwait(&rw->cond, &rw->lock, &ts);
        } else {
            pthread_cond_wait(&rw->cond, &rw->lock);
        }
    }
    pthread_mutex_unlock(&rw->lock);
    return NULL;
}

/* Processing thread: --rewind-on lost:K. An object found before and not
 * found for more than K frames, or an instance of a tracked object lost
 * for more than K: one save when it crosses K (the saved seconds end
 * there). */
static void check_lost(struct trk_rewind *rw, const struct trk_frame_result *res)
{
    const uint32_t k = (uint32_t)rw->cfg.lost_frames;
    char trig[300] = "";
    for (int i = 0; i < res->n && !trig[0]; i++) {
        const struct trk_result_object *o = &res->obj[i];
        if (o->found) {
            rw->missing[i] = 0;
            rw->was_found[i] = true;
        } else if (rw->was_found[i] && ++rw->missing[i] == k + 1) {
            snprintf(trig, sizeof(trig), "lost: %s not found for %u frames", res->defs[i].name,
                     k + 1);
        }
        for (int j = 0; o->has_instances && j < o->n_inst && !trig[0]; j++) {
            const struct trk_instance *in = &res->inst[o->inst0 + (size_t)j];
            if (in->lost == k + 1)
                snprintf(trig, sizeof(trig), "lost: %s instance %llu lost for %u frames",
                         res->defs[i].name, (unsigned long long)in->id, k + 1);
        }
    }
    if (!trig[0]) return;
    char dir[4200], why[700];
    if (trk_rewind_save(rw, trig, dir, sizeof(dir), why, sizeof(why)))
        log_once(rw->save_logged, TRK_LOG_WARN, 0, "%s; rewind not saved: %s", trig, why);
    else
        log_info("%s: saving the rewind buffer to %s", trig, dir);
}

static void rw_frame(void *ctx, const struct trk_frame_result *res, const char *json, size_t len)
{
    struct trk_rewind *rw = ctx;
    struct trk_record_text *set = NULL, *line = NULL;
    if (rw->pending_set) {
        set = text_new(true, res->meta.seq, rw->pending_set, strlen(rw->pending_set));
        free(rw->pending_set);
        rw->pending_set = NULL;
        memset(rw->missing, 0, sizeof(rw->missing));
        memset(rw->was_found, 0, sizeof(rw->was_found));
    }
    if (json) line = text_new(false, res->meta.seq, json, len);
    pthread_mutex_lock(&rw->lock);
    if (set) texts_push(&rw->texts, set);
    if (line) {
        texts_push(&rw->texts, line);
        rw->last_result = res->meta.seq + 1;
    }
    trim_texts(rw);
    pthread_mutex_unlock(&rw->lock);
    if (rw->cfg.lost_frames > 0) check_lost(rw, res);
}

static void rw_objects(void *ctx, const struct trk_objects *set)
{
    struct trk_rewind *rw = ctx;
    trk_record_set_changed(&rw->last_set, &rw->pending_set, set);
}

static int rw_close(void *ctx)
{
    struct trk_rewind *rw = ctx;
    pthread_mutex_lock(&rw->lock);
    rw->closing = true;
    pthread_cond_signal(&rw->cond);
    pthread_mutex_unlock(&rw->lock);
    pthread_join(rw->saver, NULL);
    frames_free(&rw->frames);
    texts_free(&rw->texts);
    texts_free(&rw->states);
    if (rw->spare) {
        free(rw->spare->f.buf);
        free(rw->spare);
    }
    free(rw->base);
    free(rw->last_set);
    free(rw->pending_set);
    pthread_mutex_destroy(&rw->lock);
    pthread_cond_destroy(&rw->cond);
    free(rw);
    return 0;
}

static const struct trk_output_ops rewind_ops = {
    .name = "rewind",
    .json = true,
    .frame = rw_frame,
    .objects = rw_objects,
    .close = rw_close,
};

int trk_rewind_add(const struct trk_rewind_cfg *cfg, struct trk_outputs *o, struct trk_rewind **out)
{
    *out = NULL;
    struct trk_rewind *rw = calloc(1, sizeof(*rw));
    if (!rw) return TRK_ENOMEM;
    rw->cfg = *cfg;
    rw->last_save = -1;
    pthread_mutex_init(&rw->lock, NULL);
    pthread_cond_init(&rw->cond, NULL);
    if (pthread_create(&rw->saver, NULL, saver_main, rw) != 0) {
        pthread_mutex_destroy(&rw->lock);
        pthread_cond_destroy(&rw->cond);
        free(rw);
        return TRK_ENOMEM;
    }
    if (trk_outputs_add(o, &rewind_ops, rw)) return TRK_ENOMEM; /* closed it */
    log_info("the last %.1f s kept (at most %llu MB), saved to %s/rewind-*", cfg->seconds,
             (unsigned long long)(cfg->max_bytes / 1000000), cfg->dir);
    *out = rw;
    return 0;
}
