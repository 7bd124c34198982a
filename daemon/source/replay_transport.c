/* The replay's transport: pause, play, step, seek and re-running a range
 * of the bundle with the object set in force now (PROTOCOL.md, "Replay";
 * docs/RECORDING.md, "The page's bundle view").
 *
 * Threads: the server's thread asks (trk_replay_control), the capture
 * thread gives the frames (trk_replay_transport_next), the processing
 * thread keeps the tracker's state before each frame (the pipeline's
 * replay hooks) and accounts for each result (the output below); all meet
 * under t->lock, which none holds while it calls out, but the output's
 * broadcast. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LOG_TAG "replay"
#include "control/control.h"
#include "log.h"
#include "messages.h"
#include "out/outputs.h"
#include "replay_int.h"

/* Frames read but not yet accounted for by the output are far fewer (the
 * frame pool's): the ring says what each of the last ones was. */
#define RING 256
/* At most this many bytes of tracker states are kept (6.6 KB a frame at
 * 16 tracked objects: about 10000 frames); past it a re-run starts from an
 * earlier kept one or over. */
#define STATES_MAX (64u << 20)
/* Edited sets' tags start here (recorded sets are 1..n_ver). */
#define EDIT_TAG 1000

enum { F_SHOW = 1, F_COUNT = 2, F_LAST = 4, F_RUN = 8 };

struct given {
    uint64_t seq; /* the pipeline's */
    size_t k;     /* the bundle's frame */
    unsigned flags;
};

/* The tracker's state before a frame, as a pass left it. exact: that pass
 * came from the bundle's first frame through the recorded sets, so the
 * state is the recorded run's. */
struct kept {
    uint8_t *p;
    size_t len;
    int tag;
    bool exact;
};

/* One result line of results.ndjson. */
struct rec_line {
    int64_t off; /* -1: none for that frame */
    int64_t len;
};

struct trk_replay_transport {
    struct trk_replay *r;
    struct trk_replay_transport_cfg cfg;
    char name[256]; /* the bundle folder's name */
    double duration;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    /* Asked for (server's thread) and given (capture thread): lock. */
    bool paused;
    long long want; /* a frame to show (step, seek); -1 none */
    size_t next;    /* the frame play gives next */
    size_t cur;     /* the last frame given; SIZE_MAX none */
    bool run_on;    /* a re-run is being given */
    size_t run_from, run_to, run_at;
    uint64_t given; /* frames given: the pipeline's seq of the next */
    struct given ring[RING];
    /* The states (processing thread; tags read by the server's: lock). */
    struct kept *kept;
    size_t kept_bytes;
    bool kept_full;
    int tag, tags;
    uint64_t seen_version;
    bool seen_any;
    long long last_k; /* the frame processed last; -1 none */
    bool exact;       /* the tracker holds the recorded run's state */
    /* The run's account (processing thread; read by the server's): lock. */
    bool have_run, run_done, run_cancelled;
    size_t acc_from, acc_to, acc_start;
    uint64_t compared, differing;
    long long first;
    char first_what[480];
    json_t *last;    /* the last "replay" message: lock */
    char error[700]; /* the last frame that could not be read, "" none */
    /* results.ndjson by frame (read-only after add). */
    int rfd;
    struct rec_line *rec;
};

static struct trk_replay_transport *transport(struct trk_replay *r)
{
    return __atomic_load_n(&r->t, __ATOMIC_ACQUIRE);
}

/* The account of the run so far, as the message carries it. */
static json_t *run_json(const struct trk_replay_transport *t)
{
    if (!t->have_run) return json_null();
    json_t *first = json_null();
    if (t->first >= 0)
        first = json_pack("{s:I,s:s}", "frame", (json_int_t)t->first, "what", t->first_what);
    return json_pack("{s:I,s:I,s:I,s:b,s:b,s:I,s:I,s:o}", "from", (json_int_t)t->acc_from, "to",
                     (json_int_t)t->acc_to, "start", (json_int_t)t->acc_start, "done", t->run_done,
                     "cancelled", t->run_cancelled, "compared", (json_int_t)t->compared, "differ",
                     (json_int_t)t->differing, "first", first);
}

/* With the lock held: the last message again with paused (and the run's
 * account) as they are now.
 * Paused is said with the last frame given (frames given before it may
 * still be on their way through the pipeline: their messages say it is
 * not paused yet). */
static void publish_locked(struct trk_replay_transport *t)
{
    if (!t->last || !t->cfg.broadcast) return;
    const json_int_t k = json_integer_value(json_object_get(t->last, "frame"));
    const bool paused = t->paused && (size_t)k == t->cur && !t->run_on && t->want < 0;
    json_object_set_new(t->last, "paused", json_boolean(paused));
    json_object_set_new(t->last, "at_end", json_boolean(paused && (size_t)k + 1 == t->r->n));
    json_object_set_new(t->last, "error", t->error[0] ? json_string(t->error) : json_null());
    json_object_set_new(t->last, "run", run_json(t));
    char *s = json_dumps(t->last, JSON_COMPACT);
    if (s) t->cfg.broadcast(t->cfg.ctx, s, strlen(s));
    free(s);
}

/* ------------------------------------------------------ capture thread */

int trk_replay_transport_next(struct trk_replay *r, size_t *k, bool *unpaced)
{
    struct trk_replay_transport *t = r->t;
    unsigned flags = 0;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 100 * 1000000L;
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&t->lock);
    for (;;) {
        if (t->want >= 0) {
            *k = (size_t)t->want;
            t->want = -1;
            flags = F_SHOW;
            break;
        }
        if (t->run_on) {
            *k = t->run_at++;
            flags = F_RUN | (*k >= t->run_from ? F_COUNT : 0);
            if (*k == t->run_to) {
                flags |= F_LAST | F_SHOW;
                t->run_on = false;
                t->paused = true;
            }
            break;
        }
        if (!t->paused && t->next < r->n) {
            *k = t->next;
            break;
        }
        if (!t->paused && !t->cfg.paused) {
            pthread_mutex_unlock(&t->lock);
            return TRK_SOURCE_EOF;
        }
        if (!t->paused) { /* --paused: the end pauses, the page stays */
            t->paused = true;
            publish_locked(t);
        }
        if (pthread_cond_timedwait(&t->cond, &t->lock, &until) == ETIMEDOUT) {
            pthread_mutex_unlock(&t->lock);
            return TRK_SOURCE_AGAIN;
        }
    }
    t->next = *k + 1;
    t->cur = *k;
    t->error[0] = 0;
    t->ring[t->given % RING] = (struct given){ .seq = t->given, .k = *k, .flags = flags };
    t->given++;
    pthread_mutex_unlock(&t->lock);
    *unpaced = flags != 0;
    return 0;
}

void trk_replay_transport_failed(struct trk_replay *r, const char *why)
{
    struct trk_replay_transport *t = r->t;
    pthread_mutex_lock(&t->lock);
    if (strcmp(t->error, why)) log_error("%s; the replay pauses", why);
    snprintf(t->error, sizeof(t->error), "%s", why);
    t->given--; /* the pipeline never got it */
    /* The last frame given before it is the current one again (its
     * message says paused), and play tries the refused frame again. */
    t->next = t->cur;
    t->cur = t->given ? t->ring[(t->given - 1) % RING].k : SIZE_MAX;
    if (t->run_on && t->have_run) t->run_cancelled = t->run_done = true;
    t->run_on = false;
    t->paused = true;
    t->want = -1;
    publish_locked(t);
    pthread_mutex_unlock(&t->lock);
}

static const struct given *given_of(struct trk_replay_transport *t, uint64_t seq)
{
    const struct given *g = &t->ring[seq % RING];
    return g->seq == seq ? g : NULL;
}

size_t trk_replay_frame_of(struct trk_replay *r, uint64_t seq)
{
    struct trk_replay_transport *t = transport(r);
    if (!t) return seq < r->n ? (size_t)seq : r->n;
    pthread_mutex_lock(&t->lock);
    const struct given *g = given_of(t, seq);
    size_t k = g ? g->k : r->n;
    pthread_mutex_unlock(&t->lock);
    return k;
}

static unsigned flags_of(struct trk_replay_transport *t, uint64_t seq, size_t *k)
{
    pthread_mutex_lock(&t->lock);
    const struct given *g = given_of(t, seq);
    unsigned f = g ? g->flags : 0;
    *k = g ? g->k : t->r->n;
    pthread_mutex_unlock(&t->lock);
    return f;
}

/* --------------------------------------------------- processing thread */

/* The recorded set in force at frame k (1..n_ver). */
static int set_at(const struct trk_replay *r, size_t k)
{
    int v = 1;
    while (v < r->n_ver && r->ver[v].first_seq <= r->idx[k].seq)
        v++;
    return v;
}

/* The tag of the set in force now: the recorded set frame_due installed,
 * or a new one for each set a client made. */
static void follow_tag(struct trk_replay_transport *t)
{
    struct trk_replay *r = t->r;
    const uint64_t v = r->control ? trk_control_version(r->control) : 0;
    if (t->seen_any && v == t->seen_version) return;
    const uint64_t inst = __atomic_load_n(&r->inst_version, __ATOMIC_ACQUIRE);
    const bool recorded = inst ? v == inst : !t->seen_any;
    pthread_mutex_lock(&t->lock); /* run_start reads them */
    t->tag = recorded ? r->installed : EDIT_TAG + t->tags++;
    if (!recorded) t->exact = false;
    t->seen_version = v;
    t->seen_any = true;
    pthread_mutex_unlock(&t->lock);
}

int trk_replay_state_hook(void *ctx, uint64_t seq, const void **data, size_t *len)
{
    struct trk_replay *r = ctx;
    struct trk_replay_transport *t = transport(r);
    size_t k;
    flags_of(t, seq, &k);
    if (k >= r->n) return 0;
    follow_tag(t);
    const bool jump = t->last_k < 0 ? k != 0 : (long long)k != t->last_k + 1;
    t->last_k = (long long)k;
    if (!jump) return 0;
    pthread_mutex_lock(&t->lock);
    const struct kept *s = &t->kept[k];
    const bool have = s->p && s->tag == t->tag;
    *data = s->p;
    *len = s->len;
    t->exact = have ? s->exact : k == 0 && !r->state && t->tag == 1;
    pthread_mutex_unlock(&t->lock);
    return have ? 1 : -1;
}

void trk_replay_keep_hook(void *ctx, uint64_t seq, const void *data, size_t len)
{
    struct trk_replay *r = ctx;
    struct trk_replay_transport *t = transport(r);
    size_t k;
    flags_of(t, seq, &k);
    if (k >= r->n) return;
    pthread_mutex_lock(&t->lock);
    struct kept *s = &t->kept[k];
    if (s->p && s->tag == t->tag && (s->exact || !t->exact)) {
        pthread_mutex_unlock(&t->lock);
        return; /* what is kept is as good */
    }
    const size_t bytes = t->kept_bytes - (s->p ? s->len : 0) + len;
    uint8_t *p = bytes <= STATES_MAX ? malloc(len ? len : 1) : NULL;
    if (!p) {
        if (!t->kept_full)
            log_warn("the tracker's states of %zu bytes are kept, no more: re-runs past them "
                     "start from an earlier frame or over",
                     t->kept_bytes);
        t->kept_full = true;
        pthread_mutex_unlock(&t->lock);
        return;
    }
    memcpy(p, data, len);
    free(s->p);
    *s = (struct kept){ .p = p, .len = len, .tag = t->tag, .exact = t->exact };
    t->kept_bytes = bytes;
    pthread_mutex_unlock(&t->lock);
}

bool trk_replay_show_hook(void *ctx, uint64_t seq)
{
    struct trk_replay *r = ctx;
    size_t k;
    return flags_of(transport(r), seq, &k) & F_SHOW;
}

/* The recorded result of frame k, parsed; NULL when it has none. */
static json_t *recorded(struct trk_replay_transport *t, size_t k)
{
    const struct rec_line *l = &t->rec[k];
    if (l->off < 0 || l->len <= 0 || l->len > (64 << 20)) return NULL;
    char *buf = malloc((size_t)l->len);
    json_t *v = NULL;
    if (buf && pread(t->rfd, buf, (size_t)l->len, l->off) == l->len)
        v = json_loadb(buf, (size_t)l->len, 0, NULL);
    free(buf);
    return v;
}

/* What differs between the recorded result then and the one now, into
 * what ("" when they agree). */
static void compare(json_t *then, json_t *now, char *what, size_t len)
{
    char path[512] = "";
    json_t *d[2];
    what[0] = 0;
    if (!then) {
        snprintf(what, len, "the bundle has no recorded result for it");
    } else if (!now) {
        snprintf(what, len, "no result now");
    } else if (trk_replay_differ(then, now, path, sizeof(path), true, d)) {
        char *a = d[0] ? json_dumps(d[0], JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        char *b = d[1] ? json_dumps(d[1], JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        snprintf(what, len, "field %s: recorded %.120s, now %.120s", path, a ? a : "(none)",
                 b ? b : "(none)");
        free(a);
        free(b);
    }
}

/* Each result: compared with the recorded one (counted in a run), and the
 * "replay" message to every client. */
static void transport_frame(void *ctx, const struct trk_frame_result *res, const char *json,
                            size_t len)
{
    struct trk_replay *r = ctx;
    struct trk_replay_transport *t = r->t;
    size_t k;
    const unsigned flags = flags_of(t, res->meta.seq, &k);
    if (k >= r->n) return;
    json_t *now = json ? json_loadb(json, len, 0, NULL) : NULL;
    json_t *then = recorded(t, k);
    char what[480];
    compare(then, now, what, sizeof(what));
    json_decref(now);
    const struct entry *e = &r->idx[k];
    pthread_mutex_lock(&t->lock);
    if (flags & F_COUNT && t->have_run && !t->run_done) {
        t->compared++;
        if (what[0]) {
            if (t->first < 0) {
                t->first = (long long)k;
                snprintf(t->first_what, sizeof(t->first_what), "%s", what);
            }
            t->differing++;
        }
    }
    if (flags & F_LAST && t->have_run) t->run_done = true;
    json_t *m = json_pack("{s:s,s:s,s:I,s:f,s:I,s:I,s:I,s:f,s:s,s:o,s:o}", "type", "replay",
                          "bundle", t->name, "frames", (json_int_t)r->n, "duration", t->duration,
                          "frame", (json_int_t)k, "seq", (json_int_t)res->meta.seq, "recorded_seq",
                          (json_int_t)e->seq, "t", e->pts - r->idx[0].pts, "objects",
                          t->tag >= EDIT_TAG ? "edited"
                          : t->tag == 0      ? "file"
                                             : "recorded",
                          "differs", what[0] ? json_string(what) : json_null(), "recorded",
                          then ? then : json_null());
    /* publish_locked adds paused, at_end, error and run. */
    if (m) { /* else out of memory: the clients keep the last one */
        json_decref(t->last);
        t->last = m;
        publish_locked(t);
    }
    pthread_mutex_unlock(&t->lock);
}

static const struct trk_output_ops transport_ops = {
    .name = "replay",
    .json = true,
    .frame = transport_frame,
};

/* ------------------------------------------------------ server's thread */

/* With the lock held: where a re-run from frame from starts so that the
 * tracker has the state the recorded run had there: the nearest frame at
 * or before it whose exact state a pass kept, under the set in force
 * there; from itself when the set was edited (the tracker starts over
 * there, as it does at any set change) or none was kept. */
static size_t run_start(struct trk_replay_transport *t, size_t from)
{
    struct trk_replay *r = t->r;
    const uint64_t inst = __atomic_load_n(&r->inst_version, __ATOMIC_ACQUIRE);
    const uint64_t v = r->control ? trk_control_version(r->control) : 0;
    if (inst ? v != inst : v != t->seen_version) return from;
    for (size_t k = from + 1; k-- > 0;) {
        const struct kept *s = &t->kept[k];
        if (s->p && s->exact && s->tag == (inst ? set_at(r, k) : t->tag)) return k;
    }
    return from;
}

static int out_of(char *why, size_t len, const char *what, long long v, size_t n)
{
    return trk_replay_fail(why, len, TRK_MSG_OUT_OF_RANGE,
                           "%s %lld is outside the bundle's frames 0..%zu", what, v, n - 1);
}

int trk_replay_control(void *ctx, int op, long long a, long long b, long long *frame, char *why,
                       size_t why_len)
{
    struct trk_replay *r = ctx;
    struct trk_replay_transport *t = transport(r);
    if (!t)
        return trk_replay_fail(why, why_len, TRK_MSG_UNSUPPORTED,
                               "this replay has no transport (--verify, or no server)");
    const long long n = (long long)r->n;
    int rc = 0;
    pthread_mutex_lock(&t->lock);
    const long long cur = t->cur == SIZE_MAX ? 0 : (long long)t->cur;
    *frame = cur;
    switch (op) {
    case TRK_CTL_REPLAY_PAUSE:
    case TRK_CTL_REPLAY_PLAY:
        if (t->run_on && t->have_run) t->run_cancelled = t->run_done = true;
        t->run_on = false;
        t->paused = op == TRK_CTL_REPLAY_PAUSE;
        if (!t->paused && t->next >= r->n) t->next = 0; /* at the end: from the start */
        *frame = t->paused ? cur : (long long)t->next;
        break;
    case TRK_CTL_REPLAY_STEP:
    case TRK_CTL_REPLAY_SEEK:
        if (op == TRK_CTL_REPLAY_STEP && a != 1 && a != -1) {
            rc = trk_replay_fail(why, why_len, TRK_MSG_OUT_OF_RANGE,
                                 "\"delta\" must be 1 or -1, not %lld", a);
            break;
        }
        *frame = op == TRK_CTL_REPLAY_STEP ? cur + a : a;
        if (*frame < 0 || *frame >= n) {
            rc = out_of(why, why_len, op == TRK_CTL_REPLAY_STEP ? "a step to frame" : "frame",
                        *frame, r->n);
            break;
        }
        if (t->run_on && t->have_run) t->run_cancelled = t->run_done = true;
        t->run_on = false;
        t->paused = true;
        t->want = *frame;
        break;
    case TRK_CTL_REPLAY_RUN:
        if (a < 0 || a >= n) {
            rc = out_of(why, why_len, "\"from\"", a, r->n);
        } else if (b < 0 || b >= n) {
            rc = out_of(why, why_len, "\"to\"", b, r->n);
        } else if (a > b) {
            rc = trk_replay_fail(why, why_len, TRK_MSG_OUT_OF_RANGE,
                                 "\"from\" %lld is after \"to\" %lld: a run goes forward", a, b);
        } else {
            t->run_on = true;
            t->paused = true;
            t->want = -1;
            t->run_from = (size_t)a;
            t->run_to = (size_t)b;
            t->run_at = run_start(t, (size_t)a);
            t->have_run = true;
            t->run_done = t->run_cancelled = false;
            t->acc_from = (size_t)a, t->acc_to = (size_t)b, t->acc_start = t->run_at;
            t->compared = t->differing = 0;
            t->first = -1;
            t->first_what[0] = 0;
            *frame = a;
        }
        break;
    default: rc = trk_replay_fail(why, why_len, TRK_MSG_UNSUPPORTED, "not a replay request");
    }
    if (!rc) {
        pthread_cond_broadcast(&t->cond);
        publish_locked(t);
    }
    pthread_mutex_unlock(&t->lock);
    return rc;
}

/* ----------------------------------------------------------- lifecycle */

/* results.ndjson's line of each frame, by the recorded seq (a line that
 * is not a frame message, or names no frame of the index, is passed
 * over: the overlay of that frame is then "none recorded"). */
static int index_results(struct trk_replay_transport *t)
{
    struct trk_replay *r = t->r;
    char path[4200];
    snprintf(path, sizeof(path), "%s/results.ndjson", r->dir);
    for (size_t k = 0; k < r->n; k++)
        t->rec[k].off = -1;
    FILE *f = fopen(path, "re");
    if (!f) {
        log_warn("%s: cannot open (%s): the page shows no recorded results", path, strerror(errno));
        return 0;
    }
    t->rfd = dup(fileno(f));
    char *line = NULL;
    size_t cap = 0, k = 0;
    ssize_t got;
    int64_t off = 0;
    while ((got = getline(&line, &cap, f)) > 0) {
        json_t *v = line[got - 1] == '\n' ? json_loadb(line, (size_t)got, 0, NULL) : NULL;
        json_t *s = json_object_get(v, "seq");
        if (json_is_integer(s)) {
            const uint64_t seq = (uint64_t)json_integer_value(s);
            /* Results come in seq order: the index is walked along. */
            while (k < r->n && r->idx[k].seq < seq)
                k++;
            if (k < r->n && r->idx[k].seq == seq) t->rec[k] = (struct rec_line){ off, got };
        }
        json_decref(v);
        off += got;
    }
    free(line);
    fclose(f);
    return t->rfd < 0 ? -errno : 0;
}

int trk_replay_transport_add(struct trk_replay *r, const struct trk_replay_transport_cfg *cfg,
                             struct trk_outputs *o)
{
    struct trk_replay_transport *t = calloc(1, sizeof(*t));
    if (!t) return TRK_ENOMEM;
    t->r = r;
    t->cfg = *cfg;
    t->rfd = -1;
    t->want = cfg->paused ? 0 : -1;
    t->paused = cfg->paused;
    t->cur = SIZE_MAX;
    t->last_k = -1;
    t->exact = true; /* the first pass starts at the first frame */
    t->first = -1;
    /* The folder's own name ("run1" of "/data/run1/"). */
    char dir[sizeof(r->dir)];
    snprintf(dir, sizeof(dir), "%s", r->dir);
    for (size_t n = strlen(dir); n > 1 && dir[n - 1] == '/';)
        dir[--n] = 0;
    const char *slash = strrchr(dir, '/');
    snprintf(t->name, sizeof(t->name), "%s", slash && slash[1] ? slash + 1 : dir);
    t->duration = r->idx[r->n - 1].pts - r->idx[0].pts;
    pthread_mutex_init(&t->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_cond_init(&t->cond, &ca);
    pthread_condattr_destroy(&ca);
    int err = 0;
    if (!(t->kept = calloc(r->n, sizeof(*t->kept))) || !(t->rec = calloc(r->n, sizeof(*t->rec))))
        err = TRK_ENOMEM;
    if (!err) err = index_results(t);
    if (!err) err = trk_outputs_add(o, &transport_ops, r);
    if (err) {
        trk_replay_transport_destroy(&t);
        return err;
    }
    __atomic_store_n(&r->t, t, __ATOMIC_RELEASE);
    return 0;
}

void trk_replay_transport_destroy(struct trk_replay_transport **pt)
{
    struct trk_replay_transport *t = *pt;
    if (!t) return;
    *pt = NULL;
    for (size_t k = 0; t->kept && k < t->r->n; k++)
        free(t->kept[k].p);
    free(t->kept);
    free(t->rec);
    if (t->rfd >= 0) close(t->rfd);
    json_decref(t->last);
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
    free(t);
}
