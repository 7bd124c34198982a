/* The server's messages on their way out (see ws_int.h): refcounted
 * messages, the hand-off producers fill under ws->lock, the service thread's
 * fan-out to the per-client queues (results bounded in messages and bytes,
 * replies likewise, newest-only slots for the other kinds), the writes in
 * publish order, and the polling while a result is expected. The producers'
 * side of ws.h (broadcast, send_to, hello, views, stats) lives here too.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "trk_clock.h"
#include "trk_error.h"
#define LOG_TAG "ws"
#include "log_hook.h"
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

bool trk_ws_client_pending(const struct client *c)
{
    if (c->hello || c->r_count || c->q_count) return true;
    for (int k = 0; k < TRK_WS_KIND_COUNT; k++)
        if (c->slot[k]) return true;
    return false;
}

/* Service thread: queue m (taking a new reference) for client c. */
static void client_push(struct trk_ws *ws, struct client *c, int kind, struct msg *m)
{
    if (kind == TRK_WS_RESULT) {
        unsigned cap = (unsigned)ws->queue_len;
        /* Drop-oldest, in messages and in bytes: a slow client skips ahead
         * to the newest results. */
        while (c->r_count && (c->r_count == cap || c->r_bytes + m->len > TRK_WS_QUEUE_BYTES)) {
            c->r_bytes -= c->results[c->r_head]->len;
            msg_unref(&c->results[c->r_head]);
            c->r_head = (c->r_head + 1) % cap;
            c->r_count--;
            count_drop(ws, c);
        }
        c->r_bytes += m->len;
        c->results[(c->r_head + c->r_count++) % cap] = msg_ref(m);
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
    while (c->q_count &&
           (c->q_count == CLIENT_REPLIES || c->q_bytes + m->len > CLIENT_REPLY_BYTES)) {
        c->q_bytes -= c->replies[c->q_head]->len;
        msg_unref(&c->replies[c->q_head]);
        c->q_head = (c->q_head + 1) % CLIENT_REPLIES;
        c->q_count--;
        count_drop(ws, c);
    }
    c->q_bytes += m->len;
    c->replies[(c->q_head + c->q_count++) % CLIENT_REPLIES] = m;
    lws_callback_on_writable(c->wsi);
}

void trk_ws_client_reply_buf(struct trk_ws *ws, struct client *c, const struct trk_buf *b)
{
    struct msg *m = msg_new(b->data, b->len, false, new_order(ws));
    if (m) client_reply(ws, c, m);
}

/* Service thread: the next message to write, in publish order (hello
 * first). Returns where it is stored so the caller can release it. */
static struct msg **client_next(struct trk_ws *ws, struct client *c)
{
    if (c->hello) return &c->hello;
    struct msg **best = NULL;
    if (c->q_count) best = &c->replies[c->q_head];
    if (c->r_count) {
        struct msg **r = &c->results[c->r_head];
        if (!best || (*r)->order < (*best)->order) best = r;
    }
    for (int k = 0; k < TRK_WS_KIND_COUNT; k++)
        if (c->slot[k] && (!best || c->slot[k]->order < (*best)->order)) best = &c->slot[k];
    (void)ws;
    return best;
}

static void client_pop(struct trk_ws *ws, struct client *c, struct msg **where)
{
    size_t len = *where ? (*where)->len : 0;
    msg_unref(where);
    if (where == &c->replies[c->q_head] && c->q_count) {
        c->q_head = (c->q_head + 1) % CLIENT_REPLIES;
        c->q_count--;
        c->q_bytes -= len;
    } else if (c->r_count && where == &c->results[c->r_head]) {
        c->r_head = (c->r_head + 1) % (unsigned)ws->queue_len;
        c->r_count--;
        c->r_bytes -= len;
    }
}

/* Releases everything a closing client still holds. */
void trk_ws_client_clear(struct trk_ws *ws, struct client *c)
{
    while (c->r_count) {
        msg_unref(&c->results[c->r_head]);
        c->r_head = (c->r_head + 1) % (unsigned)ws->queue_len;
        c->r_count--;
    }
    c->r_bytes = 0;
    free(c->results);
    c->results = NULL;
    msg_unref(&c->hello);
    for (int k = 0; k < TRK_WS_KIND_COUNT; k++)
        msg_unref(&c->slot[k]);
    for (unsigned i = 0; i < c->q_count; i++)
        msg_unref(&c->replies[(c->q_head + i) % CLIENT_REPLIES]);
    c->q_count = 0;
    c->q_bytes = 0;
    free(c->rx);
    c->rx = NULL;
}

/* Service thread: result m has just been written to a client; keeps how
 * long after its hand-off (the wake-up, fan-out and write: issue 14's
 * latency split). */
static void record_write(struct trk_ws *ws, const struct msg *m)
{
    float ms = (float)((trk_now() - m->t_handoff) * 1e3);
    pthread_mutex_lock(&ws->lock);
    ws->write_ms[ws->n_writes++ % TRK_WS_WRITE_SAMPLES] = ms;
    pthread_mutex_unlock(&ws->lock);
}

int trk_ws_client_write(struct trk_ws *ws, struct client *c)
{
    struct lws *wsi = c->wsi;
    struct msg **where = client_next(ws, c);
    if (!where && c->closing) {
        /* Everything pending is written: a close frame, so the client
         * sees a clean close with the reason rather than a dropped
         * connection (1006). lws sends it and waits for the answer. */
        lws_close_reason(wsi, (enum lws_close_status)ws->close_code,
                         (unsigned char *)ws->close_reason, strlen(ws->close_reason));
        return -1;
    }
    if (!where) return 0;
    struct msg *m = *where;
    int n = lws_write(wsi, m->buf + LWS_PRE, m->len, m->binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT);
    if (n < (int)m->len) {
        log_warn("client %llu: write failed, closing", (unsigned long long)c->id);
        return -1;
    }
    if (m->t_handoff > 0) record_write(ws, m);
    atomic_fetch_add_explicit(&c->sent, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->bytes, m->len, memory_order_relaxed);
    atomic_fetch_add_explicit(&ws->sent, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&ws->bytes, m->len, memory_order_relaxed);
    client_pop(ws, c, where);
    if (trk_ws_client_pending(c) || c->closing) lws_callback_on_writable(wsi);
    return 0;
}

/* ------------------------------------------------------------ hand-off */

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
    arm_spin(ws);
    /* An expect that came as the window closed (it saw the timer armed
     * and did not wake the thread) still gets its spin. */
    if (!atomic_load(&ws->spinning) && !atomic_load(&ws->stopping) &&
        trk_now() < atomic_load(&ws->hot_until))
        arm_spin(ws);
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
    memset(&ws->h, 0, sizeof ws->h);
    bool closing = ws->closing;
    struct answer *answers = ws->answers;
    ws->answers = NULL;
    pthread_mutex_unlock(&ws->lock);
    trk_ws_http_deliver(ws, answers);

    for (unsigned i = 0; i < h->r_count; i++) {
        struct msg **m = &h->results[(h->r_head + i) % HANDOFF_RESULTS];
        for (struct client *c = ws->clients; c; c = c->next)
            client_push(ws, c, TRK_WS_RESULT, *m);
        msg_unref(m);
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
    for (unsigned i = 0; i < h->q_count; i++) {
        unsigned j = (h->q_head + i) % HANDOFF_REPLIES;
        struct client *c = ws->clients;
        while (c && c->id != h->replies[j].client)
            c = c->next;
        if (c)
            client_reply(ws, c, h->replies[j].m);
        else
            msg_unref(&h->replies[j].m); /* the client has gone */
    }
    for (struct client *c = ws->clients; c; c = c->next) {
        c->closing |= closing;
        if (trk_ws_client_pending(c) || c->closing) lws_callback_on_writable(c->wsi);
    }
}

void trk_ws_drain(struct trk_ws *ws)
{
    drain(ws);
    if (!atomic_load(&ws->spinning)) arm_spin(ws);
}

void trk_ws_handoff_clear(struct handoff *h)
{
    for (unsigned i = 0; i < h->r_count; i++)
        msg_unref(&h->results[(h->r_head + i) % HANDOFF_RESULTS]);
    for (int k = 0; k < TRK_WS_KIND_COUNT; k++)
        msg_unref(&h->slot[k]);
    for (int v = 0; v < TRK_WS_VIEWS; v++)
        msg_unref(&h->views[v]);
    for (unsigned i = 0; i < h->q_count; i++)
        msg_unref(&h->replies[(h->q_head + i) % HANDOFF_REPLIES].m);
    memset(h, 0, sizeof *h);
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

/* trk_ws_broadcast and trk_ws_broadcast_view: view is a preview's. */
static int publish(struct trk_ws *ws, enum trk_ws_kind kind, int view, const void *data, size_t len)
{
    if (!ws || (int)kind < 0 || kind >= TRK_WS_KIND_COUNT || (!data && len)) return TRK_EINVAL;
    if (view < 0 || view >= TRK_WS_VIEWS) return TRK_EINVAL;
    /* Nobody to send to: skip the copy. STATUS is kept for future clients. */
    if (atomic_load_explicit(&ws->n_clients, memory_order_relaxed) == 0 && kind != TRK_WS_STATUS)
        return 0;
    struct msg *m = msg_new(data, len, kind == TRK_WS_PREVIEW, 0);
    if (!m) return TRK_ENOMEM;
    m->view = view;
    struct msg *old = NULL, *old_status = NULL;
    struct msg *gone[HANDOFF_RESULTS]; /* results dropped for m, freed after the lock */
    unsigned n_gone = 0;
    pthread_mutex_lock(&ws->lock);
    /* The order is taken under the lock so hand-off order == publish order. */
    m->order = new_order(ws);
    struct handoff *h = &ws->h;
    if (!ws->running) {
        /* Before start or after stop: nothing to hand over; a status is
         * still remembered for the clients of a later start. */
        if (kind == TRK_WS_STATUS) {
            old_status = ws->last_status;
            ws->last_status = m;
        } else {
            old = m;
        }
    } else if (kind == TRK_WS_RESULT) {
        m->t_handoff = trk_now();
        /* The expected result is here: poll on only while it is written. */
        if (atomic_load(&ws->hot_until) > m->t_handoff + WRITE_GRACE_S)
            atomic_store(&ws->hot_until, m->t_handoff + WRITE_GRACE_S);
        while (h->r_count &&
               (h->r_count == HANDOFF_RESULTS || h->r_bytes + len > HANDOFF_RESULT_BYTES)) {
            gone[n_gone++] = h->results[h->r_head];
            h->r_bytes -= gone[n_gone - 1]->len;
            h->r_head = (h->r_head + 1) % HANDOFF_RESULTS;
            h->r_count--;
            count_drop(ws, NULL);
        }
        h->r_bytes += len;
        h->results[(h->r_head + h->r_count++) % HANDOFF_RESULTS] = m;
    } else if (kind == TRK_WS_PREVIEW) {
        old = h->views[view];
        h->views[view] = m;
    } else {
        old = h->slot[kind];
        h->slot[kind] = m;
        if (kind == TRK_WS_STATUS) {
            old_status = ws->last_status;
            ws->last_status = msg_ref(m);
        }
    }
    if (old && old != m) count_drop(ws, NULL);
    wake(ws);
    pthread_mutex_unlock(&ws->lock);
    msg_unref(&old);
    msg_unref(&old_status);
    while (n_gone)
        msg_unref(&gone[--n_gone]);
    return 0;
}

int trk_ws_broadcast(struct trk_ws *ws, enum trk_ws_kind kind, const void *data, size_t len)
{
    return publish(ws, kind, 0, data, len);
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
    pthread_mutex_lock(&ws->lock);
    m->order = new_order(ws);
    struct handoff *h = &ws->h;
    if (!ws->running) {
        pthread_mutex_unlock(&ws->lock);
        msg_unref(&m); /* no clients without a running server */
        return 0;
    }
    while (h->q_count &&
           (h->q_count == HANDOFF_REPLIES || h->q_bytes + len > HANDOFF_REPLY_BYTES)) {
        gone[n_gone++] = h->replies[h->q_head].m;
        h->q_bytes -= gone[n_gone - 1]->len;
        h->q_head = (h->q_head + 1) % HANDOFF_REPLIES;
        h->q_count--;
        count_drop(ws, NULL);
    }
    h->q_bytes += len;
    unsigned j = (h->q_head + h->q_count++) % HANDOFF_REPLIES;
    h->replies[j].client = client_id;
    h->replies[j].m = m;
    wake(ws);
    pthread_mutex_unlock(&ws->lock);
    while (n_gone)
        msg_unref(&gone[--n_gone]);
    return 0;
}

void trk_ws_get_stats(struct trk_ws *ws, struct trk_ws_stats *st)
{
    memset(st, 0, sizeof *st);
    if (!ws) return;
    st->clients = atomic_load(&ws->n_clients);
    st->messages_sent = atomic_load(&ws->sent);
    st->messages_dropped = atomic_load(&ws->dropped);
    st->bytes_sent = atomic_load(&ws->bytes);
}

int trk_ws_write_delays(struct trk_ws *ws, uint64_t *mark, float *out, int max)
{
    if (!ws || !mark || max < 0 || (!out && max)) return 0;
    pthread_mutex_lock(&ws->lock);
    uint64_t total = ws->n_writes, from = *mark;
    /* The newest ones when more were taken than the ring (or max) holds. */
    uint64_t keep = (uint64_t)(max < TRK_WS_WRITE_SAMPLES ? max : TRK_WS_WRITE_SAMPLES);
    if (from > total) from = total;
    if (total - from > keep) from = total - keep;
    int n = (int)(total - from);
    for (int i = 0; i < n; i++)
        out[i] = ws->write_ms[(from + (uint64_t)i) % TRK_WS_WRITE_SAMPLES];
    pthread_mutex_unlock(&ws->lock);
    *mark = total;
    return n;
}
