/* The server's messages on their way out (see ws_int.h): refcounted
 * messages, the hand-off producers fill under ws->lock, the service thread's
 * fan-out to the per-client queues (results bounded in messages and bytes,
 * replies likewise, newest-only slots for the other kinds), the writes in
 * publish order, and the polling while a result is expected. The producers'
 * side of ws.h (broadcast, send_to, hello, views, write delays) lives here
 * too.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "trk_clock.h"
#include "trk_error.h"
#define LOG_TAG "ws"
#include "log_hook.h"
#include "ws_guard.h"
#include "ws_int.h"

static struct msg *msg_new(const void *data, size_t len, bool binary, uint64_t order)
{
    if (len > SIZE_MAX - sizeof(struct msg) - LWS_PRE - 1) return NULL;
    struct msg *m = malloc(sizeof *m + LWS_PRE + len + 1);
    if (!m) return NULL;
    atomic_init(&m->refs, 1);
    m->binary = binary;
    m->order = order;
    m->t_handoff = 0;
    m->t_taken = 0;
    m->view = 0;
    m->len = len;
    if (len) memcpy(m->buf + LWS_PRE, data, len);
    m->buf[LWS_PRE + len] = '\0';
    return m;
}

static uint64_t new_order(struct trk_ws *ws)
{
    return atomic_fetch_add_explicit(&ws->next_order, 1, memory_order_relaxed) + 1;
}

static void count_drop(struct trk_ws *ws, struct client *c)
{
    if (c) atomic_fetch_add_explicit(&c->dropped, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&ws->dropped, 1, memory_order_relaxed);
}

/* ------------------------------------------------------- bounded rings */

/* The oldest message leaves ring r over at[]; the caller releases it. */
static struct msg *ring_pop(struct ring *r, struct msg **at)
{
    struct msg *m = at[r->head];
    at[r->head] = NULL;
    r->bytes -= m->len;
    r->head = (r->head + 1) % r->cap;
    r->count--;
    return m;
}

/* Queues m (taking over the caller's reference) at the newest end of ring r
 * over at[]; returns its index. First the oldest go, in messages and in
 * bytes (a slow client skips ahead to the newest), each one of c's drops (c
 * NULL: the server's only): into gone[] (*n_gone of them, for the caller to
 * release after its lock) when gone is given, else released here. */
static unsigned ring_push(struct trk_ws *ws, struct client *c, struct ring *r, struct msg **at,
                          struct msg *m, struct msg **gone, unsigned *n_gone)
{
    while (r->count && (r->count == r->cap || r->bytes + m->len > r->max_bytes)) {
        struct msg *old = ring_pop(r, at);
        if (gone)
            gone[(*n_gone)++] = old;
        else
            msg_unref(&old);
        count_drop(ws, c);
    }
    unsigned i = (r->head + r->count++) % r->cap;
    r->bytes += m->len;
    at[i] = m;
    return i;
}

static void ring_clear(struct ring *r, struct msg **at)
{
    while (r->count) {
        struct msg *m = ring_pop(r, at);
        msg_unref(&m);
    }
}

/* ------------------------------------------------------ client queues */

int trk_ws_client_init(struct trk_ws *ws, struct client *c)
{
    c->result_at = calloc((size_t)ws->queue_len, sizeof *c->result_at);
    if (!c->result_at) return TRK_ENOMEM;
    c->results = (struct ring){ .cap = (unsigned)ws->queue_len, .max_bytes = TRK_WS_QUEUE_BYTES };
    c->replies = (struct ring){ .cap = CLIENT_REPLIES, .max_bytes = CLIENT_REPLY_BYTES };
    return 0;
}

bool trk_ws_client_pending(const struct client *c)
{
    if (c->hello || c->results.count || c->replies.count) return true;
    for (int k = 0; k < TRK_WS_KIND_COUNT; k++)
        if (c->slot[k]) return true;
    return false;
}

/* Service thread: queue m (taking a new reference) for client c. */
static void client_push(struct trk_ws *ws, struct client *c, int kind, struct msg *m)
{
    if (kind == TRK_WS_RESULT) {
        if (m->view != c->predict_slot + 1) return; /* another form is this client's */
        ring_push(ws, c, &c->results, c->result_at, msg_ref(m), NULL, NULL);
        return;
    }
    if (kind == TRK_WS_PREVIEW && (!c->preview_on || m->view != atomic_load(&c->view))) return;
    if (c->slot[kind]) {
        msg_unref(&c->slot[kind]);
        count_drop(ws, c);
    }
    c->slot[kind] = msg_ref(m);
}

/* Service thread: queue a reply (takes over the caller's reference). */
static void client_reply(struct trk_ws *ws, struct client *c, struct msg *m)
{
    ring_push(ws, c, &c->replies, c->reply_at, m, NULL, NULL);
    lws_callback_on_writable(c->wsi);
}

static void write_now(struct trk_ws *ws, struct client *c);

void trk_ws_client_reply_buf(struct trk_ws *ws, struct client *c, const struct trk_buf *b)
{
    struct msg *m = msg_new(b->data, b->len, false, new_order(ws));
    if (!m) return;
    client_reply(ws, c, m);
    write_now(ws, c);
}

/* Service thread: the next message to write, in publish order (hello
 * first). Returns where it is stored so the caller can release it. */
static struct msg **client_next(struct client *c)
{
    if (c->hello) return &c->hello;
    struct msg **best = NULL;
    if (c->replies.count) best = &c->reply_at[c->replies.head];
    if (c->results.count) {
        struct msg **r = &c->result_at[c->results.head];
        if (!best || (*r)->order < (*best)->order) best = r;
    }
    for (int k = 0; k < TRK_WS_KIND_COUNT; k++)
        if (c->slot[k] && (!best || c->slot[k]->order < (*best)->order)) best = &c->slot[k];
    return best;
}

/* Releases the message at where (from client_next), written. */
static void client_pop(struct client *c, struct msg **where)
{
    struct msg *m = NULL;
    if (c->replies.count && where == &c->reply_at[c->replies.head])
        m = ring_pop(&c->replies, c->reply_at);
    else if (c->results.count && where == &c->result_at[c->results.head])
        m = ring_pop(&c->results, c->result_at);
    msg_unref(m ? &m : where);
}

/* Releases everything a closing client still holds. */
void trk_ws_client_clear(struct client *c)
{
    ring_clear(&c->results, c->result_at);
    free(c->result_at);
    c->result_at = NULL;
    msg_unref(&c->hello);
    for (int k = 0; k < TRK_WS_KIND_COUNT; k++)
        msg_unref(&c->slot[k]);
    ring_clear(&c->replies, c->reply_at);
    free(c->rx);
    c->rx = NULL;
}

/* Service thread: result m has just been written to a client, the write
 * call from t_write on; keeps how long after its hand-off, in parts (the
 * wake-up, fan-out and write: issue 14's latency split). */
static void record_write(struct trk_ws *ws, const struct msg *m, double t_write)
{
    double now = trk_now();
    struct trk_ws_write_split s = {
        .wake_ms = (float)((m->t_taken - m->t_handoff) * 1e3),
        .wait_ms = (float)((t_write - m->t_taken) * 1e3),
        .call_ms = (float)((now - t_write) * 1e3),
    };
    pthread_mutex_lock(&ws->lock);
    ws->write_split[ws->n_writes++ % TRK_WS_WRITE_SAMPLES] = s;
    pthread_mutex_unlock(&ws->lock);
}

/* Service thread: writes c's next message (there is one). 0, or -1 when
 * the write failed. */
static int write_next(struct trk_ws *ws, struct client *c)
{
    struct msg **where = client_next(c);
    struct msg *m = *where;
    double t_write = m->t_handoff > 0 ? trk_now() : 0;
    int n =
        lws_write(c->wsi, m->buf + LWS_PRE, m->len, m->binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT);
    if (n < (int)m->len) {
        log_warn("client %llu: write failed, closing", (unsigned long long)c->id);
        return -1;
    }
    if (m->t_handoff > 0) record_write(ws, m, t_write);
    atomic_fetch_add_explicit(&c->sent, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->bytes, m->len, memory_order_relaxed);
    atomic_fetch_add_explicit(&ws->sent, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&ws->bytes, m->len, memory_order_relaxed);
    client_pop(c, where);
    return 0;
}

int trk_ws_client_write(struct trk_ws *ws, struct client *c)
{
    struct lws *wsi = c->wsi;
    if (c->write_failed) return -1;
    struct msg **where = client_next(c);
    if (!where && c->closing) {
        /* Everything pending is written: a close frame, so the client
         * sees a clean close with the reason rather than a dropped
         * connection (1006). lws sends it and waits for the answer. */
        lws_close_reason(wsi, (enum lws_close_status)ws->close_code,
                         (unsigned char *)ws->close_reason, strlen(ws->close_reason));
        return -1;
    }
    if (!where) return 0;
    if (write_next(ws, c)) return -1;
    if (trk_ws_client_pending(c) || c->closing) lws_callback_on_writable(wsi);
    return 0;
}

/* Service thread, outside WRITEABLE (the drain's fan-out; a reply made as
 * the request is read, so a sync reply's send time is its write's): c's
 * next message goes at once instead of after the poll round that would
 * report c's socket writable, when that is safe: nothing of c's is left unsent in lws (so lws
 * holds at most one message per client, as with WRITEABLE writes, and a
 * slow client's backlog stays in its bounded queues), no close is under way
 * on either side (lws then writes the close frames), no unmasked frame came
 * (WRITEABLE closes). lws_write outside WRITEABLE is fine on the service
 * thread: a frame the kernel takes only in part is kept whole in lws, ahead
 * of anything written later. A failure closes c at its next WRITEABLE. */
static void write_now(struct trk_ws *ws, struct client *c)
{
    if (c->closing || c->peer_closed || c->write_failed || !trk_ws_client_pending(c) ||
        lws_partial_buffered(c->wsi) || trk_ws_guard_unmasked(c->fd))
        return;
    if (write_next(ws, c)) c->write_failed = true;
}

/* ------------------------------------------------------------ hand-off */

/* Empties hand-off h (what it held is the caller's) and sets its bounds. */
static void handoff_empty(struct handoff *h)
{
    memset(h, 0, sizeof *h);
    h->results = (struct ring){ .cap = HANDOFF_RESULTS, .max_bytes = HANDOFF_RESULT_BYTES };
    h->replies = (struct ring){ .cap = HANDOFF_REPLIES, .max_bytes = HANDOFF_REPLY_BYTES };
}

/* Service thread: moves everything published since the last wake-up to the
 * clients. */
static void drain(struct trk_ws *ws)
{
    /* Swap the hand-off out under the lock (a 6 KiB copy), fan out without
     * it so producers never wait for the fan-out. */
    struct handoff *h = &ws->taken;
    pthread_mutex_lock(&ws->lock);
    *h = ws->h;
    handoff_empty(&ws->h);
    bool closing = ws->closing;
    struct answer *answers = ws->answers;
    ws->answers = NULL;
    pthread_mutex_unlock(&ws->lock);
    double t_taken = trk_now();
    trk_ws_http_deliver(ws, answers);

    while (h->results.count) {
        struct msg *m = ring_pop(&h->results, h->result_at);
        m->t_taken = t_taken;
        for (struct client *c = ws->clients; c; c = c->next)
            client_push(ws, c, TRK_WS_RESULT, m);
        msg_unref(&m);
    }
    for (int k = 0; k < TRK_WS_KIND_COUNT; k++) {
        if (!h->slot[k]) continue;
        for (struct client *c = ws->clients; c; c = c->next)
            client_push(ws, c, k, h->slot[k]);
        msg_unref(&h->slot[k]);
    }
    for (int v = 0; v < TRK_WS_VIEWS; v++) {
        if (!h->views[v]) continue;
        for (struct client *c = ws->clients; c; c = c->next)
            client_push(ws, c, TRK_WS_PREVIEW, h->views[v]);
        msg_unref(&h->views[v]);
    }
    while (h->replies.count) {
        uint64_t to = h->reply_to[h->replies.head];
        struct msg *m = ring_pop(&h->replies, h->reply_at);
        struct client *c = ws->clients;
        while (c && c->id != to)
            c = c->next;
        if (c)
            client_reply(ws, c, m);
        else
            msg_unref(&m); /* the client has gone */
    }
    for (struct client *c = ws->clients; c; c = c->next) {
        c->closing |= closing;
        write_now(ws, c);
        if (trk_ws_client_pending(c) || c->closing || c->write_failed)
            lws_callback_on_writable(c->wsi);
    }
}

/* Service thread: drains when something was handed over since the last
 * drain. */
static void drain_handed(struct trk_ws *ws)
{
    if (atomic_exchange(&ws->handed, false)) drain(ws);
}

static void spin_cb(lws_sorted_usec_list_t *sul);

/* Service thread: while a result is expected (trk_ws_expect), a timer due
 * at once keeps lws_service's poll from sleeping, so the result's hand-off
 * finds the thread awake: no wake-up between the processing thread and the
 * socket write. */
static void arm_spin(struct trk_ws *ws)
{
    if (atomic_load(&ws->stopping) || trk_now() >= atomic_load(&ws->hot_until)) {
        atomic_store(&ws->spinning, false);
        return;
    }
    atomic_store(&ws->spinning, true);
    lws_sul_schedule(ws->ctx, 0, &ws->spin_sul, spin_cb, 1);
}

static void spin_cb(lws_sorted_usec_list_t *sul)
{
    struct trk_ws *ws = lws_container_of(sul, struct trk_ws, spin_sul);
    /* Runnable, yet leaving the core to a thread that shares it (on a
     * loaded machine: the processing thread itself). */
    sched_yield();
    /* Producers do not wake a spinning thread (wake()): it looks itself. */
    drain_handed(ws);
    arm_spin(ws);
    /* Spinning just ended: what a producer handed over while it still saw
     * the thread spinning is taken now (one that comes later wakes it). */
    if (!atomic_load(&ws->spinning)) drain_handed(ws);
    /* An expect that came as the window closed (it saw the timer armed
     * and did not wake the thread) still gets its spin. */
    if (!atomic_load(&ws->spinning) && !atomic_load(&ws->stopping) &&
        trk_now() < atomic_load(&ws->hot_until))
        arm_spin(ws);
}

void trk_ws_drain(struct trk_ws *ws)
{
    atomic_store(&ws->handed, false);
    drain(ws);
    if (!atomic_load(&ws->spinning)) arm_spin(ws);
}

void trk_ws_handoff_clear(struct handoff *h)
{
    ring_clear(&h->results, h->result_at);
    for (int k = 0; k < TRK_WS_KIND_COUNT; k++)
        msg_unref(&h->slot[k]);
    for (int v = 0; v < TRK_WS_VIEWS; v++)
        msg_unref(&h->views[v]);
    ring_clear(&h->replies, h->reply_at);
    handoff_empty(h);
}

/* ------------------------------------------------------- producers' API */

void trk_ws_set_hello(struct trk_ws *ws, const char *json)
{
    if (!ws) return;
    struct msg *m = json ? msg_new(json, strlen(json), false, 0) : NULL;
    if (json && !m) log_error("out of memory setting the hello message");
    pthread_mutex_lock(&ws->lock);
    struct msg *old = ws->hello;
    ws->hello = m;
    pthread_mutex_unlock(&ws->lock);
    msg_unref(&old);
}

/* Takes ws->lock to hand m over, and gives m its order there, so hand-off
 * order == publish order. */
static void lock_order(struct trk_ws *ws, struct msg *m)
{
    pthread_mutex_lock(&ws->lock);
    m->order = new_order(ws);
}

/* Leaves ws->lock, then releases the n messages dropped from the hand-off
 * while it was held. */
static void unlock_release(struct trk_ws *ws, struct msg **gone, unsigned n)
{
    pthread_mutex_unlock(&ws->lock);
    while (n)
        msg_unref(&gone[--n]);
}

/* trk_ws_broadcast and trk_ws_broadcast_view: view is a preview's. */
static int publish(struct trk_ws *ws, enum trk_ws_kind kind, int view, const void *data, size_t len)
{
    if (!ws || (int)kind < 0 || kind >= TRK_WS_KIND_COUNT || (!data && len)) return TRK_EINVAL;
    if (view < 0 || view >= TRK_WS_VIEWS) return TRK_EINVAL;
    /* Nobody to send to: skip the copy. STATUS and REPLAY are kept for
     * future clients. */
    struct msg **last = kind == TRK_WS_STATUS   ? &ws->last_status
                        : kind == TRK_WS_REPLAY ? &ws->last_replay
                                                : NULL;
    if (atomic_load_explicit(&ws->n_clients, memory_order_relaxed) == 0 && !last) return 0;
    struct msg *m = msg_new(data, len, kind == TRK_WS_PREVIEW, 0);
    if (!m) return TRK_ENOMEM;
    m->view = view;
    struct msg *old = NULL, *old_status = NULL;
    struct msg *gone[HANDOFF_RESULTS]; /* results dropped for m, freed after the lock */
    unsigned n_gone = 0;
    lock_order(ws, m);
    struct handoff *h = &ws->h;
    if (!ws->running) {
        /* Before start or after stop: nothing to hand over; a status is
         * still remembered for the clients of a later start. */
        if (last) {
            old_status = *last;
            *last = m;
        } else {
            old = m;
        }
    } else if (kind == TRK_WS_RESULT) {
        m->t_handoff = trk_now();
        /* The expected result is here: poll on only while it is written. */
        if (atomic_load(&ws->hot_until) > m->t_handoff + WRITE_GRACE_S)
            atomic_store(&ws->hot_until, m->t_handoff + WRITE_GRACE_S);
        ring_push(ws, NULL, &h->results, h->result_at, m, gone, &n_gone);
    } else if (kind == TRK_WS_PREVIEW) {
        old = h->views[view];
        h->views[view] = m;
    } else {
        old = h->slot[kind];
        h->slot[kind] = m;
        if (last) {
            old_status = *last;
            *last = msg_ref(m);
        }
    }
    if (old && old != m) count_drop(ws, NULL);
    wake(ws);
    unlock_release(ws, gone, n_gone);
    msg_unref(&old);
    msg_unref(&old_status);
    return 0;
}

int trk_ws_broadcast(struct trk_ws *ws, enum trk_ws_kind kind, const void *data, size_t len)
{
    return publish(ws, kind, 0, data, len);
}

int trk_ws_broadcast_predicted(struct trk_ws *ws, int slot, const void *data, size_t len)
{
    if (slot < 0 || slot >= TRK_WS_PREDICT_SLOTS) return TRK_EINVAL;
    return publish(ws, TRK_WS_RESULT, 1 + slot, data, len);
}

unsigned trk_ws_predict_slots(struct trk_ws *ws, double ahead[TRK_WS_PREDICT_SLOTS])
{
    if (!ws || atomic_load_explicit(&ws->n_predict, memory_order_relaxed) == 0) return 0;
    unsigned used = 0;
    pthread_mutex_lock(&ws->lock);
    for (int k = 0; k < TRK_WS_PREDICT_SLOTS; k++) {
        if (ws->predict_refs[k] > 0) used |= 1u << k;
        ahead[k] = ws->predict_ahead[k];
    }
    pthread_mutex_unlock(&ws->lock);
    return used;
}

int trk_ws_predict_join(struct trk_ws *ws, struct client *c, bool on, double ahead)
{
    int slot = -1;
    pthread_mutex_lock(&ws->lock);
    if (on) {
        for (int k = 0; k < TRK_WS_PREDICT_SLOTS && slot < 0; k++)
            if (ws->predict_refs[k] > 0 && ws->predict_ahead[k] == ahead) slot = k;
        for (int k = 0; k < TRK_WS_PREDICT_SLOTS && slot < 0; k++)
            if (ws->predict_refs[k] == 0 || (k == c->predict_slot && ws->predict_refs[k] == 1))
                slot = k;
    }
    if (on && slot < 0) {
        pthread_mutex_unlock(&ws->lock);
        return -EBUSY;
    }
    if (c->predict_slot >= 0) {
        ws->predict_refs[c->predict_slot]--;
        atomic_fetch_sub(&ws->n_predict, 1);
    }
    if (slot >= 0) {
        ws->predict_refs[slot]++;
        ws->predict_ahead[slot] = ahead;
        atomic_fetch_add(&ws->n_predict, 1);
    }
    c->predict_slot = slot;
    pthread_mutex_unlock(&ws->lock);
    return 0;
}

int trk_ws_broadcast_view(struct trk_ws *ws, int view, const void *data, size_t len)
{
    return publish(ws, TRK_WS_PREVIEW, view, data, len);
}

int trk_ws_set_view(struct trk_ws *ws, uint64_t client_id, int view)
{
    if (!ws || view < 0 || view >= TRK_WS_VIEWS) return TRK_EINVAL;
    int rc = -ENOENT;
    pthread_mutex_lock(&ws->lock);
    for (struct client *c = ws->clients; c; c = c->next)
        if (c->id == client_id) {
            atomic_store(&c->view, view);
            rc = 0;
            break;
        }
    pthread_mutex_unlock(&ws->lock);
    return rc;
}

int trk_ws_expect(struct trk_ws *ws, double within_s)
{
    if (!ws || !(within_s > 0)) return TRK_EINVAL;
    if (atomic_load_explicit(&ws->n_clients, memory_order_relaxed) == 0) return 0;
    atomic_store(&ws->hot_until, trk_now() + within_s);
    if (atomic_load(&ws->spinning)) return 0; /* it polls already */
    pthread_mutex_lock(&ws->lock);
    wake(ws);
    pthread_mutex_unlock(&ws->lock);
    return 0;
}

int trk_ws_send_to(struct trk_ws *ws, uint64_t client_id, const char *json, size_t len)
{
    if (!ws || (!json && len)) return TRK_EINVAL;
    struct msg *m = msg_new(json, len, false, 0);
    if (!m) return TRK_ENOMEM;
    struct msg *gone[HANDOFF_REPLIES]; /* replies dropped for m, freed after the lock */
    unsigned n_gone = 0;
    lock_order(ws, m);
    if (ws->running) {
        struct handoff *h = &ws->h;
        h->reply_to[ring_push(ws, NULL, &h->replies, h->reply_at, m, gone, &n_gone)] = client_id;
        m = NULL;
        wake(ws);
    }
    unlock_release(ws, gone, n_gone);
    msg_unref(&m); /* not handed over: no clients without a running server */
    return 0;
}

/* The write samples taken since *mark (the newest max of them) into
 * sum[] (their totals) or split[]; sets *mark, returns how many. */
static int write_samples(struct trk_ws *ws, uint64_t *mark, float *sum,
                         struct trk_ws_write_split *split, int max)
{
    if (!ws || !mark || max < 0 || (!sum && !split && max)) return 0;
    pthread_mutex_lock(&ws->lock);
    uint64_t total = ws->n_writes, from = *mark;
    /* The newest ones when more were taken than the ring (or max) holds. */
    uint64_t keep = (uint64_t)(max < TRK_WS_WRITE_SAMPLES ? max : TRK_WS_WRITE_SAMPLES);
    if (from > total) from = total;
    if (total - from > keep) from = total - keep;
    int n = (int)(total - from);
    for (int i = 0; i < n; i++) {
        const struct trk_ws_write_split *s =
            &ws->write_split[(from + (uint64_t)i) % TRK_WS_WRITE_SAMPLES];
        if (split) split[i] = *s;
        if (sum) sum[i] = s->wake_ms + s->wait_ms + s->call_ms;
    }
    pthread_mutex_unlock(&ws->lock);
    *mark = total;
    return n;
}

int trk_ws_write_delays(struct trk_ws *ws, uint64_t *mark, float *out, int max)
{
    return write_samples(ws, mark, out, NULL, max);
}

int trk_ws_write_splits(struct trk_ws *ws, uint64_t *mark, struct trk_ws_write_split *out, int max)
{
    return write_samples(ws, mark, NULL, out, max);
}
