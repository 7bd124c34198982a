#include "snapshot.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LOG_TAG "snapshot"
#include "frame.h" /* trk_now */
#include "log.h"
#include "control/preview.h"

/* Three slots: the newest frame, an older one a request is still encoding,
 * and the one the processing thread fills next. */
#define SLOTS 3
/* The widest snapshot: the largest frame --size accepts (full size). */
#define SNAPSHOT_MAX_WIDTH 16384
/* A carved snapshot over TRK_PREVIEW_CARVE_WORK is carved from the frame
 * scaled down and then scaled to the size asked for: a 1080p frame carved
 * to a phone's shape at full size (~3e9 pixel-seams) took over the
 * server's 5 s answer time. */
/* JPEGs of the newest frame kept, one per kind of picture asked for. */
#define CACHE 4
/* Client addresses whose rate is followed; a new one takes the place of
 * the one heard from longest ago. */
#define PEERS 256

struct slot {
    struct trk_image img;
    uint64_t seq;
    int n;
    struct trk_object_def defs[TRK_MAX_OBJECTS];
    uint8_t colors[TRK_MAX_OBJECTS][3];
    struct trk_result_object obj[TRK_MAX_OBJECTS];
    trk_snapshot_release_fn release;
    void *ctx, *holder;                            /* holder NULL: the slot lends no frame */
    const struct trk_image *(*host)(void *holder); /* see trk_snapshot_frame */
};

/* What a request wants drawn: the cache's and the batch's key. */
struct variant {
    bool overlay;
    bool edges;
    int carve_w, carve_h; /* 0: not carved */
    bool has_mask;
    char mask[TRK_NAME_MAX];
};

struct cached {
    uint64_t gen; /* the frame's publish number; 0 = empty */
    struct variant v;
    uint8_t *jpeg;
    size_t len, cap;
};

struct waiter {
    struct variant v;
    uint64_t request;
    trk_snapshot_answer_fn answer;
    void *ctx;
};

struct peer {
    char addr[64]; /* "" = free */
    double tokens, t;
};

struct trk_snapshot {
    int quality;
    double rate; /* per client address and second; 0 = no limit */
    struct slot slots[SLOTS];
    pthread_mutex_t lock; /* guards everything below but enc */
    pthread_cond_t done;  /* reading went back to NULL, or giving fell */
    pthread_cond_t work;  /* a request waits, or quit */
    struct slot *cur;     /* the newest frame, NULL = none */
    struct slot *reading; /* the slot the encoder uses, NULL = none */
    int giving;           /* frames the encoder is giving back now */
    uint64_t gen;         /* cur's publish number (from 1) */
    struct cached cache[CACHE];
    unsigned cache_next;
    struct waiter wait[TRK_SNAPSHOT_WAITING_MAX];
    int n_wait;
    struct peer peers[PEERS];
    bool quit;
    pthread_t thread;
    bool have_thread;
    struct trk_preview *enc;       /* encoder thread only, as batch */
    struct trk_preview *carve_enc; /* the same, for carving scaled frames */
    int carve_enc_w;               /* carve_enc's width */
    struct waiter batch[TRK_SNAPSHOT_WAITING_MAX];
    _Atomic uint64_t frames, encodes, served, cached, limited, busy;
};

static void *encoder_main(void *arg);

int trk_snapshot_create(int quality, double rate, struct trk_snapshot **out)
{
    *out = NULL;
    if (!(rate >= 0)) return TRK_EINVAL;
    struct trk_snapshot *s = calloc(1, sizeof *s);
    if (!s) return TRK_ENOMEM;
    s->quality = quality < 1 ? 1 : quality > 100 ? 100 : quality;
    s->rate = rate;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->done, NULL);
    pthread_cond_init(&s->work, NULL);
    if (pthread_create(&s->thread, NULL, encoder_main, s)) {
        trk_snapshot_destroy(&s);
        return TRK_ENOMEM;
    }
    s->have_thread = true;
    *out = s;
    return 0;
}

void trk_snapshot_stop(struct trk_snapshot *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->lock);
    s->quit = true;
    pthread_cond_broadcast(&s->work);
    pthread_mutex_unlock(&s->lock);
    if (s->have_thread) pthread_join(s->thread, NULL);
    s->have_thread = false;
}

void trk_snapshot_destroy(struct trk_snapshot **ps)
{
    if (!ps || !*ps) return;
    struct trk_snapshot *s = *ps;
    trk_snapshot_stop(s);
    trk_snapshot_clear(s);
    trk_preview_destroy(&s->enc);
    trk_preview_destroy(&s->carve_enc);
    for (int i = 0; i < CACHE; i++)
        free(s->cache[i].jpeg);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->done);
    pthread_cond_destroy(&s->work);
    free(s);
    *ps = NULL;
}

/* A frame on its way back to its owner: taken from its slot under the lock
 * (once the lock is let go the slot may be filled again), given back after. */
struct lent {
    trk_snapshot_release_fn release;
    void *ctx, *holder;
};

static struct lent take(struct slot *sl)
{
    struct lent l = { 0 };
    if (sl) {
        l = (struct lent){ sl->release, sl->ctx, sl->holder };
        sl->holder = NULL;
    }
    return l;
}

static void give_back(struct lent l)
{
    if (l.holder) l.release(l.ctx, l.holder);
}

void trk_snapshot_publish(struct trk_snapshot *s, const struct trk_snapshot_frame *f)
{
    if (!s || !f || !f->img) return;
    pthread_mutex_lock(&s->lock);
    struct slot *sl = NULL;
    for (int i = 0; i < SLOTS && !sl; i++)
        if (&s->slots[i] != s->cur && &s->slots[i] != s->reading) sl = &s->slots[i];
    pthread_mutex_unlock(&s->lock);
    /* Only this thread fills slots, and no reader sees this one: filled
     * without the lock. (Three slots, at most two in use: one is free.) */
    int n = f->n < 0 ? 0 : f->n > TRK_MAX_OBJECTS ? TRK_MAX_OBJECTS : f->n;
    sl->img = *f->img;
    sl->seq = f->seq;
    sl->n = n;
    if (n) {
        memcpy(sl->defs, f->defs, (size_t)n * sizeof sl->defs[0]);
        memcpy(sl->colors, f->colors, (size_t)n * sizeof sl->colors[0]);
        memcpy(sl->obj, f->obj, (size_t)n * sizeof sl->obj[0]);
    }
    sl->release = f->release;
    sl->ctx = f->ctx;
    sl->holder = f->holder;
    sl->host = f->host;
    pthread_mutex_lock(&s->lock);
    struct slot *old = s->cur;
    s->cur = sl;
    s->gen++; /* the cache's JPEGs are of an older frame now */
    atomic_fetch_add_explicit(&s->frames, 1, memory_order_relaxed);
    /* A request still encoding the old one gives it back when done. */
    struct lent l = take(old == s->reading ? NULL : old);
    pthread_mutex_unlock(&s->lock);
    give_back(l);
}

void trk_snapshot_clear(struct trk_snapshot *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->lock);
    while (s->reading || s->giving)
        pthread_cond_wait(&s->done, &s->lock);
    struct lent l = take(s->cur);
    s->cur = NULL;
    pthread_mutex_unlock(&s->lock);
    give_back(l);
}

/* Sets pixel (x, y) of the RGB24 image when it is inside. The image is the
 * encoder's own buffer (trk_preview_rgb), which may be written. */
static void dot(const struct trk_image *rgb, int x, int y, const uint8_t c[3])
{
    if (x < 0 || y < 0 || x >= rgb->width || y >= rgb->height) return;
    memcpy((uint8_t *)rgb->plane[0] + (size_t)y * rgb->pitch[0] + (size_t)x * 3, c, 3);
}

/* Each object's bounding box (2 pixels wide, inside the box) and a cross at
 * its centroid (its top-left pixel there), in picture pixels (o: n of them,
 * from trk_preview_objects, maybe carved). */
static void draw_overlay(const struct trk_image *rgb, const struct slot *sl,
                         const struct trk_preview_obj *o, int n)
{
    for (int i = 0; i < n; i++) {
        if (o[i].id < 0) continue;
        const uint8_t *c = sl->colors[o[i].id];
        static const uint8_t fallback[3] = { 0, 255, 0 };
        if (!c[0] && !c[1] && !c[2]) c = fallback; /* black would not show */
        const int x0 = o[i].box[0], y0 = o[i].box[1], x1 = o[i].box[2], y1 = o[i].box[3];
        for (int t = 0; t < 2; t++) {
            for (int x = x0; x <= x1; x++) {
                dot(rgb, x, y0 + t, c);
                dot(rgb, x, y1 - t, c);
            }
            for (int y = y0; y <= y1; y++) {
                dot(rgb, x0 + t, y, c);
                dot(rgb, x1 - t, y, c);
            }
        }
        int cx = (int)o[i].cx, cy = (int)o[i].cy;
        /* 2 pixels thick: 4:2:0 JPEG smears a 1-pixel line into its
         * neighbours' colour. */
        for (int d = -6; d <= 7; d++)
            for (int t = 0; t < 2; t++) {
                dot(rgb, cx + d, cy + t, c);
                dot(rgb, cx + t, cy + d, c);
            }
    }
}

/* Carves *rgb, a picture of a fw x fh frame, to v's size: at the
 * picture's scale, then scaled to that size when the picture is smaller
 * than the frame. */
static int carve(struct trk_preview *enc, struct trk_image *rgb, const struct variant *v, int fw,
                 int fh, struct trk_preview_obj *o, int n)
{
    int tw = v->carve_w, th = v->carve_h;
    if (rgb->width != fw || rgb->height != fh) {
        tw = (int)((long)v->carve_w * rgb->width / fw);
        th = (int)((long)v->carve_h * rgb->height / fh);
        tw = tw < 1 ? 1 : tw, th = th < 1 ? 1 : th;
    }
    int err = trk_preview_carve(enc, rgb, tw, th, o, n, NULL);
    if (!err && (tw != v->carve_w || th != v->carve_h))
        err = trk_preview_scale(enc, rgb, v->carve_w, v->carve_h, o, n);
    return err;
}

static enum trk_snapshot_status encode(struct trk_snapshot *s, struct slot *sl,
                                       const struct variant *v, struct trk_buf *out, char *why,
                                       size_t why_len)
{
    const char *mask = v->has_mask ? v->mask : NULL;
    const struct trk_object_def *mdef = NULL;
    for (int i = 0; mask && i < sl->n && !mdef; i++)
        if (!strcmp(sl->defs[i].name, mask)) mdef = &sl->defs[i];
    if (mask && !mdef) {
        /* The names to pick from, as many as fit, so a typo is fixed at once. */
        size_t n = (size_t)snprintf(why, why_len, "no object named \"%.64s\"; %s", mask,
                                    sl->n ? "the objects are" : "there are no objects");
        for (int i = 0; i < sl->n && n < why_len; i++) {
            const char *name = sl->defs[i].name;
            bool fits = n + strlen(name) + 8 < why_len ||
                        (i + 1 == sl->n && n + strlen(name) + 3 < why_len);
            n += (size_t)snprintf(why + n, why_len - n, fits ? "%s %s" : "%s ...", i ? "," : ":",
                                  name);
            if (!fits) break;
        }
        return TRK_SNAPSHOT_NO_OBJECT;
    }
    if (v->carve_w > sl->img.width || v->carve_h > sl->img.height) {
        snprintf(why, why_len, "carving only shrinks: w must be at most %d and h at most %d",
                 sl->img.width, sl->img.height);
        return TRK_SNAPSHOT_BAD_SIZE;
    }
    /* A carve over the work bound works on the frame scaled down. */
    const int cw =
        v->carve_w ? trk_preview_carve_width(sl->img.width, sl->img.height, v->carve_w, v->carve_h)
                   : sl->img.width;
    const bool small = cw < sl->img.width;
    if (small && s->carve_enc_w != cw) trk_preview_destroy(&s->carve_enc);
    struct trk_preview **enc = small ? &s->carve_enc : &s->enc;
    if (!*enc && trk_preview_create(small ? cw : SNAPSHOT_MAX_WIDTH, s->quality, enc)) {
        snprintf(why, why_len, "cannot start the JPEG encoder");
        return TRK_SNAPSHOT_FAILED;
    }
    if (small) s->carve_enc_w = cw;
    struct trk_image rgb;
    const uint8_t *jpeg;
    size_t size;
    const struct trk_image *img = sl->host ? sl->host(sl->holder) : &sl->img;
    if (!img || trk_preview_rgb(*enc, img, mdef, NULL, &rgb)) {
        snprintf(why, why_len, "cannot convert the frame");
        return TRK_SNAPSHOT_FAILED;
    }
    /* Full size: the edges are the frame's own; scaled, the picture's. */
    if (v->edges && trk_preview_edges(*enc, &rgb, small ? NULL : img)) {
        snprintf(why, why_len, "cannot find the frame's edges");
        return TRK_SNAPSHOT_FAILED;
    }
    struct trk_preview_obj o[TRK_MAX_OBJECTS];
    int n = trk_preview_objects(sl->obj, sl->n, sl->img.width, sl->img.height, rgb.width,
                                rgb.height, o);
    if (v->carve_w && carve(*enc, &rgb, v, sl->img.width, sl->img.height, o, n)) {
        snprintf(why, why_len, "cannot carve the frame");
        return TRK_SNAPSHOT_FAILED;
    }
    if (v->overlay) draw_overlay(&rgb, sl, o, n);
    if (trk_preview_compress(*enc, &rgb, &jpeg, &size) || trk_buf_append(out, jpeg, size)) {
        snprintf(why, why_len, "cannot encode the frame");
        return TRK_SNAPSHOT_FAILED;
    }
    return TRK_SNAPSHOT_OK;
}

static bool same(const struct variant *a, const struct variant *b)
{
    return a->overlay == b->overlay && a->edges == b->edges && a->carve_w == b->carve_w &&
           a->carve_h == b->carve_h && a->has_mask == b->has_mask &&
           (!a->has_mask || !strcmp(a->mask, b->mask));
}

/* Under lock: the cached JPEG of frame gen drawn as v, or NULL. */
static struct cached *cache_find(struct trk_snapshot *s, uint64_t gen, const struct variant *v)
{
    for (int i = 0; i < CACHE; i++)
        if (s->cache[i].gen == gen && gen && same(&s->cache[i].v, v)) return &s->cache[i];
    return NULL;
}

/* Under lock: keeps jpeg as frame gen's picture v, in a place of an older
 * frame if there is one. */
static void cache_put(struct trk_snapshot *s, uint64_t gen, const struct variant *v,
                      const uint8_t *jpeg, size_t len)
{
    struct cached *c = NULL;
    for (int i = 0; i < CACHE && !c; i++)
        if (s->cache[i].gen != s->gen) c = &s->cache[i];
    if (!c) c = &s->cache[s->cache_next++ % CACHE];
    if (len > c->cap) {
        uint8_t *p = realloc(c->jpeg, len);
        if (!p) return;
        c->jpeg = p;
        c->cap = len;
    }
    memcpy(c->jpeg, jpeg, len);
    c->len = len;
    c->gen = gen;
    c->v = *v;
}

/* Under lock: whether peer may ask now (a token bucket of s->rate per
 * second, holding at most max(rate, 1)); else *wait_s until it may. */
static bool rate_ok(struct trk_snapshot *s, const char *peer, double *wait_s)
{
    if (s->rate <= 0) return true;
    double now = trk_now(), cap = s->rate < 1 ? 1 : s->rate;
    struct peer *p = NULL, *oldest = &s->peers[0];
    for (int i = 0; i < PEERS && !p; i++) {
        if (!strcmp(s->peers[i].addr, peer)) p = &s->peers[i];
        if (s->peers[i].t < oldest->t) oldest = &s->peers[i];
    }
    if (!p) {
        p = oldest;
        snprintf(p->addr, sizeof p->addr, "%s", peer);
        p->tokens = cap;
        p->t = now;
    }
    p->tokens += (now - p->t) * s->rate;
    if (p->tokens > cap) p->tokens = cap;
    p->t = now;
    if (p->tokens < 1) {
        *wait_s = (1 - p->tokens) / s->rate;
        return false;
    }
    p->tokens -= 1;
    return true;
}

enum trk_snapshot_status trk_snapshot_request(struct trk_snapshot *s,
                                              const struct trk_snapshot_req *req,
                                              struct trk_buf *out, char *why, size_t why_len)
{
    if (!s || !req) {
        snprintf(why, why_len, "no snapshots here");
        return TRK_SNAPSHOT_NO_FRAME;
    }
    struct variant v = { .overlay = req->overlay,
                         .edges = req->edges,
                         .carve_w = req->carve_w,
                         .carve_h = req->carve_h,
                         .has_mask = req->mask != NULL };
    if (req->mask && strlen(req->mask) >= sizeof v.mask) {
        snprintf(why, why_len, "no object named \"%.64s...\"", req->mask);
        return TRK_SNAPSHOT_NO_OBJECT;
    }
    if (req->mask) snprintf(v.mask, sizeof v.mask, "%s", req->mask);
    enum trk_snapshot_status st;
    double wait_s = 0;
    pthread_mutex_lock(&s->lock);
    struct cached *c;
    if (!rate_ok(s, req->peer ? req->peer : "", &wait_s)) {
        st = TRK_SNAPSHOT_LIMITED;
        atomic_fetch_add_explicit(&s->limited, 1, memory_order_relaxed);
        snprintf(why, why_len,
                 "too many snapshots: at most %g a second per client; the next in %.2f s", s->rate,
                 wait_s);
    } else if (!s->cur || s->quit) {
        st = TRK_SNAPSHOT_NO_FRAME;
        snprintf(why, why_len, "no frame processed yet");
    } else if ((c = cache_find(s, s->gen, &v))) {
        st = trk_buf_append(out, c->jpeg, c->len) ? TRK_SNAPSHOT_FAILED : TRK_SNAPSHOT_OK;
        if (st) snprintf(why, why_len, "out of memory");
    } else if (s->n_wait == TRK_SNAPSHOT_WAITING_MAX) {
        st = TRK_SNAPSHOT_BUSY;
        atomic_fetch_add_explicit(&s->busy, 1, memory_order_relaxed);
        snprintf(why, why_len, "%d snapshot requests are waiting for the encoder: try again",
                 TRK_SNAPSHOT_WAITING_MAX);
    } else {
        st = TRK_SNAPSHOT_LATER;
        s->wait[s->n_wait++] = (struct waiter){ v, req->request, req->answer, req->ctx };
        pthread_cond_signal(&s->work);
    }
    pthread_mutex_unlock(&s->lock);
    if (st == TRK_SNAPSHOT_OK) {
        atomic_fetch_add_explicit(&s->served, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->cached, 1, memory_order_relaxed);
    }
    return st;
}

/* Encoder thread: one JPEG of sl (frame gen) per picture the batch asks
 * for, each answered to every request that wants it. */
static void serve(struct trk_snapshot *s, struct slot *sl, uint64_t gen, struct waiter *batch,
                  int n)
{
    for (int i = 0; i < n; i++) {
        if (!batch[i].answer) continue; /* answered with an earlier one */
        struct trk_buf b = { 0 };
        char why[400] = ""; /* room for the object names of a 404 */
        enum trk_snapshot_status st = TRK_SNAPSHOT_NO_FRAME;
        const struct variant *v = &batch[i].v;
        pthread_mutex_lock(&s->lock);
        /* Encoded already: a batch that came while this frame was encoded. */
        struct cached *c = sl ? cache_find(s, gen, v) : NULL;
        if (c) st = trk_buf_append(&b, c->jpeg, c->len) ? TRK_SNAPSHOT_FAILED : TRK_SNAPSHOT_OK;
        pthread_mutex_unlock(&s->lock);
        if (c) {
            if (st) snprintf(why, sizeof why, "out of memory");
        } else if (!sl) {
            snprintf(why, sizeof why, "no frame processed yet");
        } else {
            st = encode(s, sl, v, &b, why, sizeof why);
            if (st == TRK_SNAPSHOT_OK) {
                atomic_fetch_add_explicit(&s->encodes, 1, memory_order_relaxed);
                pthread_mutex_lock(&s->lock);
                cache_put(s, gen, v, (const uint8_t *)b.data, b.len);
                pthread_mutex_unlock(&s->lock);
            }
        }
        struct variant key = *v;
        for (int j = i; j < n; j++) {
            if (!batch[j].answer || !same(&batch[j].v, &key)) continue;
            if (st == TRK_SNAPSHOT_OK) {
                atomic_fetch_add_explicit(&s->served, 1, memory_order_relaxed);
                if (c) atomic_fetch_add_explicit(&s->cached, 1, memory_order_relaxed);
            }
            batch[j].answer(batch[j].ctx, batch[j].request, st, (const uint8_t *)b.data, b.len,
                            why);
            batch[j].answer = NULL;
        }
        trk_buf_free(&b);
    }
}

static void *encoder_main(void *arg)
{
    struct trk_snapshot *s = arg;
    /* Below the capture, processing and server threads, as the preview's:
     * on a busy machine snapshots wait, viewers and results do not. */
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10) != 0)
        log_debug("cannot lower the snapshot encoder's priority");
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->quit && !s->n_wait)
            pthread_cond_wait(&s->work, &s->lock);
        if (s->quit) break;
        int n = s->n_wait;
        memcpy(s->batch, s->wait, (size_t)n * sizeof s->batch[0]);
        s->n_wait = 0;
        struct slot *sl = s->reading = s->cur;
        uint64_t gen = s->gen;
        pthread_mutex_unlock(&s->lock);
        serve(s, sl, gen, s->batch, n);
        pthread_mutex_lock(&s->lock);
        s->reading = NULL;
        struct lent l = take(sl == s->cur ? NULL : sl); /* the newest stays */
        /* Given back outside the lock, but before clear may return: the
         * frames' owner may go right after it. */
        s->giving += l.holder != NULL;
        pthread_cond_broadcast(&s->done);
        pthread_mutex_unlock(&s->lock);
        give_back(l);
        pthread_mutex_lock(&s->lock);
        if (l.holder) {
            s->giving--;
            pthread_cond_broadcast(&s->done);
        }
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

void trk_snapshot_get_stats(struct trk_snapshot *s, struct trk_snapshot_stats *st)
{
    memset(st, 0, sizeof *st);
    if (!s) return;
    st->frames = atomic_load(&s->frames);
    st->encodes = atomic_load(&s->encodes);
    st->served = atomic_load(&s->served);
    st->cached = atomic_load(&s->cached);
    st->limited = atomic_load(&s->limited);
    st->busy = atomic_load(&s->busy);
}
