/* trackd WebSocket + HTTP server on libwebsockets 4.1. See ws.h.
 *
 * Threads and ownership:
 *   - Producer threads (pipeline, preview encoder, stats, control replies)
 *     call trk_ws_broadcast / trk_ws_send_to. They touch only `struct
 *     handoff` under ws->lock, then call lws_cancel_service() (the one lws
 *     call that is safe from other threads).
 *   - The service thread runs lws_service(). In EVENT_WAIT_CANCELLED it takes
 *     everything out of the hand-off under the lock, and fans it out to the
 *     per-client queues (owned by the service thread, no lock) and asks for
 *     WRITEABLE; each WRITEABLE writes one message.
 *   - The client list is changed only on the service thread, under ws->lock
 *     so trk_ws_get_clients can read it from elsewhere.
 *
 * Messages are refcounted: one copy of the bytes however many clients get
 * them. Counts are atomics so stats can be read from any thread.
 */
#include "ws.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <libwebsockets.h>

#include "trk_clock.h"
#include "trk_error.h"
#define LOG_TAG "ws"
#include "log_hook.h"
#include "messages.h"
#include "ws_guard.h"

#define WS_PATH        "/ws"
#define WS_SUBPROTOCOL "trackd.v1"
/* Hand-off capacity for results between two service-thread wake-ups. The
 * service thread drains it at every wake, so it only fills when that thread
 * is starved for ~a second at hundreds of frames per second. */
#define HANDOFF_RESULTS 256
#define HANDOFF_REPLIES 256
/* ... and in bytes: what the hand-off holds while the service thread is
 * starved stays bounded whatever the messages' size (the oldest go). */
#define HANDOFF_RESULT_BYTES (4u << 20)
#define HANDOFF_REPLY_BYTES  (1u << 20)
/* After an expected result's hand-off the service thread polls on this long
 * (s): its drain and the clients' writes take a few poll rounds. */
#define WRITE_GRACE_S 0.5e-3
/* Per-client replies (pong, errors, acks, send_to) pending; a client that
 * floods requests without reading loses the oldest replies. */
#define CLIENT_REPLIES 32
/* ... and at most this many bytes of them (the newest always stays). */
#define CLIENT_REPLY_BYTES (256u << 10)
/* lws rx chunk size; messages up to TRK_MSG_MAX_CLIENT are reassembled. */
#define RX_CHUNK 16384
/* An http_handler answer is written in pieces of this size, one per
 * HTTP_WRITEABLE, so a large snapshot does not hold up other clients. */
#define HTTP_CHUNK 16384
/* Query arguments handed to the http_handler: at most this many, each cut
 * to HTTP_ARG_MAX - 1 bytes. */
#define HTTP_ARGS    16
#define HTTP_ARG_MAX 256

/* ------------------------------------------------------------- logging */

/* libwebsockets' own lines (errors and warnings only, see trk_ws_start) go
 * to the one logger under the tag "lws"; they come with a trailing newline. */
static void lws_emit(int level, const char *line)
{
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        n--;
    enum trk_log_level l = level == LLL_ERR    ? TRK_LOG_ERROR
                           : level == LLL_WARN ? TRK_LOG_WARN
                                               : TRK_LOG_DEBUG;
    trk_log_write(l, "lws", 0, "%.*s", (int)n, line);
}

/* ------------------------------------------------------------ messages */

struct msg {
    atomic_int refs;
    bool binary;
    uint64_t order;   /* publish order, across kinds: writes follow it */
    double t_handoff; /* s, CLOCK_MONOTONIC: a result's broadcast; 0 = other kinds */
    int view;         /* a preview: the view (TRK_WS_VIEWS) whose clients get it */
    size_t len;
    unsigned char buf[]; /* LWS_PRE bytes of headroom, then len bytes, NUL */
};

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

static struct msg *msg_ref(struct msg *m)
{
    if (m) atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
    return m;
}

static void msg_unref(struct msg **pm)
{
    struct msg *m = *pm;
    *pm = NULL;
    if (m && atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) == 1) free(m);
}

/* ------------------------------------------------------------- clients */

/* lws per-session data: one per connection, zeroed by lws. Owned by the
 * service thread except what get_clients reads: atomics, and id, peer and
 * the list links, which are set under ws->lock. */
struct client {
    struct client *next;
    struct lws *wsi;
    uint64_t id;
    bool established;
    bool authed;            /* may send control messages (token given or none needed) */
    int8_t owner;           /* peer is our own user (owner_types): -1 not known yet, 0, 1 */
    bool closing;           /* send the close frame once nothing is pending */
    atomic_bool preview_on; /* also read by get_clients */
    atomic_int view;        /* previews of this view only (trk_ws_set_view) */
    char peer[64];
    struct msg *hello;    /* written before anything else */
    struct msg **results; /* ring of ws->queue_len         */
    unsigned r_head, r_count;
    size_t r_bytes;                      /* of the results queued, at most TRK_WS_QUEUE_BYTES */
    struct msg *slot[TRK_WS_KIND_COUNT]; /* newest-only kinds            */
    struct msg *replies[CLIENT_REPLIES];
    unsigned q_head, q_count;
    size_t q_bytes; /* of the replies queued, at most CLIENT_REPLY_BYTES */
    /* Reassembly of a message that arrives in several fragments/chunks. */
    char *rx;
    size_t rx_len;
    bool rx_active, rx_over, rx_binary;
    size_t rx_total; /* bytes of the message so far, kept or not */
    int fd;          /* the socket, for its frame guard (ws_guard.h) */
    /* An http_handler answer being written: LWS_PRE bytes of headroom, then
     * http_len bytes, http_off of them written. */
    unsigned char *http_body;
    size_t http_len, http_off;
    _Atomic uint64_t sent, dropped, bytes;
};

struct handoff {
    struct msg *results[HANDOFF_RESULTS];
    unsigned r_head, r_count;
    size_t r_bytes, q_bytes;             /* at most HANDOFF_RESULT_BYTES, HANDOFF_REPLY_BYTES */
    struct msg *slot[TRK_WS_KIND_COUNT]; /* previews: in views[] instead */
    struct msg *views[TRK_WS_VIEWS];     /* the newest preview of each view */
    struct {
        uint64_t client;
        struct msg *m;
    } replies[HANDOFF_REPLIES];
    unsigned q_head, q_count;
};

struct trk_ws {
    /* configuration (immutable after create) */
    char *address, *web_root;
    int port;
    int queue_len;
    trk_ws_on_message on_message;
    trk_ws_on_close on_close;
    void *user;
    const char **control_types; /* NULL-terminated copy, or NULL = default */
    char *control_strings;
    char *token; /* control token, NULL = none required */
    int max_clients;
    char *root_real; /* realpath of web_root at start; NULL = serve nothing */
    size_t root_real_len;
    char **owner_types; /* NULL-terminated copy of cfg->owner_types, or NULL */
    char **http_paths;  /* NULL-terminated copies of cfg's lists, or NULL */
    char **http_private;
    trk_ws_http_handler http_handler;
    void *http_user;
    bool no_websocket;
    int rt_priority;

    /* lws objects: created in start, destroyed in stop, used only by the
     * service thread in between (and lws_cancel_service from others). */
    struct lws_context *ctx;
    struct lws_vhost *vhost;
    struct lws_http_mount mount;
    struct lws_http_mount *route_mounts; /* one per http_paths entry */
    struct lws_protocols protocols[2];
    pthread_t thread;
    bool thread_started;
    atomic_bool stopping;
    int bound_port;
    char why[256]; /* why start failed, for trk_ws_error */

    pthread_mutex_t lock; /* guards everything below until the atomics */
    bool running;         /* ctx alive: producers may wake the thread   */
    bool stopped;         /* start may not be called again              */
    struct handoff h;
    struct handoff taken; /* service thread only: what drain() took */
    struct msg *hello;
    struct msg *last_status;
    struct client *clients;
    /* Hand-off -> written delays (ms) of result messages, every client's
     * write; written by the service thread, read by trk_ws_write_delays. */
    float write_ms[TRK_WS_WRITE_SAMPLES];
    uint64_t n_writes; /* taken since start; sample i is at i % TRK_WS_WRITE_SAMPLES */
    /* trk_ws_shutdown: every client gets a close frame with this code and
     * reason after its pending messages; new connections are refused. */
    bool closing;
    int close_code;
    char close_reason[124]; /* a close frame carries at most 123 bytes */

    atomic_int n_clients;
    /* Connections (HTTP and WebSocket), counted from lws's WSI_CREATE to
     * WSI_DESTROY; read at accept to refuse one too many. */
    atomic_int n_conns;
    int accepted_fd; /* service thread: from accept to WSI_CREATE */
    struct conn {    /* service thread: the connections counted   */
        struct lws *wsi;
        int fd;
        uint64_t waiting;  /* an HTTP request answered later; 0 none   */
    } * conns;             /* max_clients of them; wsi NULL = free       */
    uint64_t next_request; /* service thread: HTTP request ids           */
    /* Under lock: trk_ws_http_answer's answers for the service thread. */
    struct answer {
        struct answer *next;
        uint64_t request;
        struct trk_ws_http_reply r;
    } * answers;
    uint64_t refused;        /* service thread: connections refused as too many */
    uint64_t refused_logged; /* ... of which the log has told */
    double refused_log_time; /* when it last did */
    /* trk_ws_expect: until when (CLOCK_MONOTONIC s) the service thread polls
     * instead of sleeping, and whether its polling timer is armed (both
     * written by the service thread; hot_until also by producers). */
    _Atomic double hot_until;
    atomic_bool spinning;
    lws_sorted_usec_list_t spin_sul; /* service thread only */
    atomic_uint_fast64_t next_order;
    atomic_uint_fast64_t next_client_id;
    _Atomic uint64_t sent, dropped, bytes;
};

static uint64_t new_order(struct trk_ws *ws)
{
    return atomic_fetch_add_explicit(&ws->next_order, 1, memory_order_relaxed) + 1;
}

static void count_drop(struct trk_ws *ws, struct client *c)
{
    if (c) atomic_fetch_add_explicit(&c->dropped, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&ws->dropped, 1, memory_order_relaxed);
}

static bool client_pending(const struct client *c)
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

static void client_reply_buf(struct trk_ws *ws, struct client *c, const struct trk_buf *b)
{
    struct msg *m = msg_new(b->data, b->len, false, new_order(ws));
    if (m) client_reply(ws, c, m);
}

static void client_error(struct trk_ws *ws, struct client *c, int err, const char *text,
                         const char *id_json)
{
    struct trk_buf b = { 0 };
    if (trk_msg_error(&b, trk_msg_err_code(err), text, id_json) == 0) client_reply_buf(ws, c, &b);
    trk_buf_free(&b);
}

/* Constant-time comparison, so the reply time does not leak the token. */
static bool token_equal(const char *a, size_t alen, const char *b)
{
    size_t blen = strlen(b);
    unsigned diff = alen != blen;
    for (size_t i = 0; i < alen; i++)
        diff |= (unsigned char)a[i] ^ (unsigned char)b[blen ? i % blen : 0];
    return diff == 0;
}

/* ---------------------------------------------------- the peer's user */

static bool is_owner_type(const struct trk_ws *ws, const char *type)
{
    for (size_t i = 0; ws->owner_types && ws->owner_types[i]; i++)
        if (!strcmp(ws->owner_types[i], type)) return true;
    return false;
}

/* "%08X:%04X" (tcp) or "%08X%08X%08X%08X:%04X" (tcp6): an address as the
 * kernel's socket tables print it, each 32-bit word as the number its
 * network-order bytes make in memory. */
static void proc_addr(const void *addr, int words, unsigned port, char *out, size_t n)
{
    uint32_t w[4];
    memcpy(w, addr, (size_t)words * 4);
    int k = 0;
    for (int i = 0; i < words; i++)
        k += snprintf(out + k, n - (size_t)k, "%08X", (unsigned)w[i]);
    snprintf(out + k, n - (size_t)k, ":%04X", port);
}

/* The uid owning the socket whose local end is `local` and remote end is
 * `remote` in table (/proc/net/tcp or tcp6); -1 when it is not there. */
static long table_uid(const char *table, const char *local, const char *remote)
{
    FILE *f = fopen(table, "re");
    if (!f) return -1;
    char line[512], l[64], r[64];
    unsigned uid;
    long found = -1;
    while (found < 0 && fgets(line, sizeof line, f))
        if (sscanf(line, " %*[0-9]: %63s %63s %*s %*s %*s %*s %u", l, r, &uid) == 3 &&
            !strcmp(l, local) && !strcmp(r, remote))
            found = uid;
    fclose(f);
    return found;
}

/* The uid of the process side of TCP connection fd's other end, when that
 * end is on this machine: the kernel lists the peer's socket with its local
 * and remote addresses swapped. -1 when it is not found. */
static long peer_uid(int fd)
{
    struct sockaddr_storage me, peer;
    socklen_t ml = sizeof me, pl = sizeof peer;
    if (getsockname(fd, (struct sockaddr *)&me, &ml) ||
        getpeername(fd, (struct sockaddr *)&peer, &pl) || me.ss_family != peer.ss_family)
        return -1;
    char l[64], r[64];
    if (me.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const void *)&me, *b = (const void *)&peer;
        proc_addr(&b->sin_addr, 1, ntohs(b->sin_port), l, sizeof l);
        proc_addr(&a->sin_addr, 1, ntohs(a->sin_port), r, sizeof r);
        return table_uid("/proc/net/tcp", l, r);
    }
    if (me.ss_family != AF_INET6) return -1;
    const struct sockaddr_in6 *a = (const void *)&me, *b = (const void *)&peer;
    proc_addr(&b->sin6_addr, 4, ntohs(b->sin6_port), l, sizeof l);
    proc_addr(&a->sin6_addr, 4, ntohs(a->sin6_port), r, sizeof r);
    long uid = table_uid("/proc/net/tcp6", l, r);
    /* An IPv4 client of a dual-stack listener: its socket is an IPv4 one. */
    if (uid < 0 && IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) && IN6_IS_ADDR_V4MAPPED(&b->sin6_addr)) {
        proc_addr(&b->sin6_addr.s6_addr[12], 1, ntohs(b->sin6_port), l, sizeof l);
        proc_addr(&a->sin6_addr.s6_addr[12], 1, ntohs(a->sin6_port), r, sizeof r);
        uid = table_uid("/proc/net/tcp", l, r);
    }
    return uid;
}

/* Service thread: whether c's peer runs as our effective user or root.
 * Looked up once per connection (the table read costs a file scan). */
static bool peer_is_owner(struct client *c)
{
    if (c->owner < 0) {
        long uid = peer_uid(lws_get_socket_fd(c->wsi));
        c->owner = uid >= 0 && ((uid_t)uid == geteuid() || uid == 0);
    }
    return c->owner == 1;
}

/* Service thread: {"type":"auth","token":"..."}. */
static void client_auth(struct trk_ws *ws, struct client *c, const char *data, size_t len,
                        const char *id)
{
    json_t *msg = json_loadb(data, len, 0, NULL);
    json_t *tok = json_object_get(msg, "token");
    if (ws->token && !json_is_string(tok)) {
        client_error(ws, c, TRK_MSG_BAD_FIELD, "\"token\" must be a string", id);
    } else if (ws->token &&
               !token_equal(json_string_value(tok), json_string_length(tok), ws->token)) {
        client_error(ws, c, TRK_MSG_UNAUTHORIZED, "wrong control token", id);
    } else {
        c->authed = true;
        struct trk_buf b = { 0 };
        if (trk_msg_ack(&b, "auth", id, true) == 0 && trk_buf_puts(&b, ",\"ok\":true}") == 0)
            client_reply_buf(ws, c, &b);
        trk_buf_free(&b);
    }
    json_decref(msg);
}

/* Service thread: one complete text message from client c. */
static void client_message(struct trk_ws *ws, struct client *c, char *data, size_t len)
{
    struct trk_cmsg cm;
    char why[160];
    int rc = trk_msg_parse_client(data, len, (const char *const *)ws->control_types, &cm, why,
                                  sizeof why);
    if (rc != TRK_MSG_OK) {
        client_error(ws, c, rc, why, cm.id);
        return;
    }
    struct trk_buf b = { 0 };
    switch (cm.kind) {
    case TRK_CMSG_PING:
        if (trk_msg_pong(&b, cm.id, trk_wall_ms()) == 0) client_reply_buf(ws, c, &b);
        break;
    case TRK_CMSG_SUBSCRIBE:
        if (cm.preview >= 0) {
            c->preview_on = cm.preview;
            if (!c->preview_on) msg_unref(&c->slot[TRK_WS_PREVIEW]); /* not a drop: unwanted */
        }
        if (trk_msg_ack(&b, "subscribe", cm.id, true) == 0 &&
            trk_buf_puts(&b, c->preview_on ? ",\"preview\":true}" : ",\"preview\":false}") == 0)
            client_reply_buf(ws, c, &b);
        break;
    case TRK_CMSG_CONTROL:
        if (!strcmp(cm.type, "auth")) {
            client_auth(ws, c, data, len, cm.id);
            break;
        }
        if (!c->authed) {
            client_error(ws, c, TRK_MSG_UNAUTHORIZED,
                         "control messages need the control token (auth first)", cm.id);
            break;
        }
        if (!ws->token && is_owner_type(ws, cm.type) && !peer_is_owner(c)) {
            char why[200];
            snprintf(why, sizeof why,
                     "\"%s\" acts with the server's rights: only its own user (uid %u) may "
                     "send it here, or anyone with a control token (--control-token)",
                     cm.type, (unsigned)geteuid());
            client_error(ws, c, TRK_MSG_UNAUTHORIZED, why, cm.id);
            break;
        }
        if (ws->on_message)
            ws->on_message(ws->user, c->id, data, len);
        else
            client_error(ws, c, TRK_MSG_UNSUPPORTED, "this server handles no control messages",
                         cm.id);
        break;
    }
    trk_buf_free(&b);
}

/* Service thread: a chunk of received data. lws delivers a message in one or
 * more chunks (fragments, or pieces of a frame larger than RX_CHUNK).
 * Returns false when the message is too large to read on: the caller closes
 * the connection (1009). */
static bool client_receive(struct trk_ws *ws, struct client *c, const void *in, size_t len)
{
    if (!c->rx_active) {
        c->rx_active = true;
        c->rx_len = 0;
        c->rx_total = 0;
        c->rx_over = false;
        c->rx_binary = lws_frame_is_binary(c->wsi);
    }
    /* The frame's declared length counts at once: a client announcing 16 MB
     * is closed before it sends them. */
    c->rx_total += len;
    if (c->rx_total > TRK_WS_MSG_CLOSE_MAX ||
        lws_remaining_packet_payload(c->wsi) > TRK_WS_MSG_CLOSE_MAX - c->rx_total)
        return false;
    if (!c->rx_binary && !c->rx_over) {
        if (c->rx_len + len > TRK_MSG_MAX_CLIENT) {
            c->rx_over = true; /* keep discarding until the message ends */
        } else {
            if (!c->rx) {
                c->rx = malloc(TRK_MSG_MAX_CLIENT + 1);
                if (!c->rx) {
                    c->rx_over = true;
                    goto check_end;
                }
            }
            memcpy(c->rx + c->rx_len, in, len);
            c->rx_len += len;
        }
    }
check_end:
    if (!lws_is_final_fragment(c->wsi) || lws_remaining_packet_payload(c->wsi)) return true;
    c->rx_active = false;
    if (c->rx_binary) {
        client_error(ws, c, TRK_MSG_BINARY, "binary messages are not accepted; send JSON text",
                     NULL);
    } else if (c->rx_over) {
        client_error(ws, c, TRK_MSG_TOO_LARGE, "message larger than 65536 bytes", NULL);
    } else {
        c->rx[c->rx_len] = '\0';
        client_message(ws, c, c->rx, c->rx_len);
    }
    /* Rare and small: give the buffer back rather than hold 64 KiB per
     * idle client. */
    free(c->rx);
    c->rx = NULL;
    return true;
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
static void client_clear(struct trk_ws *ws, struct client *c)
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

static int http_respond(struct lws *wsi, struct client *c, int status, const char *type,
                        const void *body, size_t len, bool challenge);

static void answers_free(struct answer *a)
{
    while (a) {
        struct answer *next = a->next;
        free(a->r.body);
        free(a);
        a = next;
    }
}

/* Service thread: the answers trk_ws_http_answer brought, to the connections
 * still waiting for them (freed either way). */
static void deliver(struct trk_ws *ws, struct answer *a)
{
    for (struct answer *x = a; x; x = x->next) {
        for (int i = 0; i < ws->max_clients; i++) {
            struct conn *k = &ws->conns[i];
            if (!k->wsi || k->waiting != x->request) continue;
            k->waiting = 0;
            struct client *c = lws_wsi_user(k->wsi);
            const struct trk_ws_http_reply *r = &x->r;
            if (!c || http_respond(k->wsi, c, r->status,
                                   r->content_type ? r->content_type : "application/octet-stream",
                                   r->body, r->len, false))
                lws_set_timeout(k->wsi, PENDING_TIMEOUT_KILLED_BY_PARENT, LWS_TO_KILL_ASYNC);
            break;
        }
    }
    answers_free(a);
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
    deliver(ws, answers);

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
        if (client_pending(c) || c->closing) lws_callback_on_writable(c->wsi);
    }
}

/* -------------------------------------------------- HTTP endpoints */

static bool in_list(char *const *list, const char *s)
{
    for (size_t i = 0; list && list[i]; i++)
        if (!strcmp(list[i], s)) return true;
    return false;
}

/* Whether uri (len bytes) is one of the http_paths. */
static bool is_route(const struct trk_ws *ws, const char *uri, size_t len)
{
    for (size_t i = 0; ws->http_paths && ws->http_paths[i]; i++)
        if (strlen(ws->http_paths[i]) == len && !memcmp(ws->http_paths[i], uri, len)) return true;
    return false;
}

const char *trk_ws_http_arg(const char *const *args, int n_args, const char *name)
{
    size_t k = strlen(name);
    for (int i = 0; i < n_args; i++)
        if (!strncmp(args[i], name, k) && (args[i][k] == '=' || !args[i][k]))
            return args[i][k] ? args[i] + k + 1 : args[i] + k;
    return NULL;
}

/* Service thread: whether the request may have path: paths that are not
 * private, or no token set, or the token given as ?token= or as
 * "Authorization: Bearer TOKEN". */
static bool http_authorized(const struct trk_ws *ws, struct lws *wsi, const char *path)
{
    if (!ws->token || !in_list(ws->http_private, path)) return true;
    char v[256];
    const char *t = lws_get_urlarg_by_name(wsi, "token=", v, (int)sizeof v);
    if (t && token_equal(t, strlen(t), ws->token)) return true;
    int n = lws_hdr_copy(wsi, v, sizeof v, WSI_TOKEN_HTTP_AUTHORIZATION);
    return n > 7 && !strncasecmp(v, "Bearer ", 7) && token_equal(v + 7, strlen(v + 7), ws->token);
}

/* Service thread: sends the head of an answer and keeps a copy of the body
 * for HTTP_WRITEABLE to write. -1 (hang up) when that fails. */
static int http_respond(struct lws *wsi, struct client *c, int status, const char *type,
                        const void *body, size_t len, bool challenge)
{
    unsigned char head[LWS_PRE + 512], *start = head + LWS_PRE, *p = start;
    unsigned char *end = head + sizeof head - 1;
    static const char nocache[] = "no-store", bearer[] = "Bearer realm=\"trackd\"";
    unsigned char *copy = malloc(LWS_PRE + len + 1);
    if (!copy) return -1;
    if (len) memcpy(copy + LWS_PRE, body, len);
    if (lws_add_http_common_headers(wsi, (unsigned)status, type, len, &p, end) ||
        lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CACHE_CONTROL,
                                     (const unsigned char *)nocache, sizeof nocache - 1, &p, end) ||
        (challenge &&
         lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_WWW_AUTHENTICATE,
                                      (const unsigned char *)bearer, sizeof bearer - 1, &p, end)) ||
        lws_finalize_write_http_header(wsi, start, &p, end)) {
        free(copy);
        return -1;
    }
    free(c->http_body);
    c->http_body = copy;
    c->http_len = len;
    c->http_off = 0;
    lws_callback_on_writable(wsi);
    return 0;
}

/* Service thread: writes the next piece of the answer; after the last, the
 * connection waits for its next request. */
static int http_write_more(struct lws *wsi, struct client *c)
{
    size_t left = c->http_len - c->http_off, n = left > HTTP_CHUNK ? HTTP_CHUNK : left;
    bool last = n == left;
    if (n && lws_write(wsi, c->http_body + LWS_PRE + c->http_off, n,
                       last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) < (int)n)
        return -1;
    c->http_off += n;
    if (!last) {
        lws_callback_on_writable(wsi);
        return 0;
    }
    free(c->http_body);
    c->http_body = NULL;
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

/* Service thread: an HTTP request that no file mount took: one of the
 * http_paths (through their callback mounts), else 404. */
static int http_request(struct trk_ws *ws, struct lws *wsi, struct client *c)
{
    char path[128];
    if (!c) return -1;
    int n = lws_hdr_copy(wsi, path, sizeof path, WSI_TOKEN_GET_URI);
    if (n <= 0 || !in_list(ws->http_paths, path) || !ws->http_handler) {
        static const char body[] = "not found\n";
        return http_respond(wsi, c, HTTP_STATUS_NOT_FOUND, "text/plain; charset=utf-8", body,
                            sizeof body - 1, false);
    }
    /* A query the handler cannot take whole is refused (414), before the
     * token is checked: cut, it would lose arguments (the token among
     * them) and answer as if they had not been given. */
    /* The total counts one separator between arguments; empty arguments
     * ("&&") are fragments too, so the walk ends on the length, not on an
     * empty fragment. */
    int total = lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_URI_ARGS);
    for (int k = 0, seen = -1; seen < total; k++) {
        int len = lws_hdr_fragment_length(wsi, WSI_TOKEN_HTTP_URI_ARGS, k);
        seen += len + 1;
        if (k >= HTTP_ARGS || len >= HTTP_ARG_MAX) {
            char body[96];
            int n = snprintf(body, sizeof body,
                             "query too long: at most %d arguments of at most %d bytes each\n",
                             HTTP_ARGS, HTTP_ARG_MAX - 1);
            return http_respond(wsi, c, HTTP_STATUS_REQ_URI_TOO_LONG, "text/plain; charset=utf-8",
                                body, (size_t)n, false);
        }
    }
    if (!http_authorized(ws, wsi, path)) {
        static const char body[] = "this needs the control token: ?token=TOKEN or an "
                                   "\"Authorization: Bearer TOKEN\" header\n";
        return http_respond(wsi, c, HTTP_STATUS_UNAUTHORIZED, "text/plain; charset=utf-8", body,
                            sizeof body - 1, true);
    }
    static char store[HTTP_ARGS][HTTP_ARG_MAX]; /* service thread only */
    const char *args[HTTP_ARGS];
    int n_args = 0;
    while (n_args < HTTP_ARGS && lws_hdr_copy_fragment(wsi, store[n_args], HTTP_ARG_MAX,
                                                       WSI_TOKEN_HTTP_URI_ARGS, n_args) >= 0) {
        args[n_args] = store[n_args];
        n_args++;
    }
    char peer[64];
    if (!lws_get_peer_simple(wsi, peer, sizeof peer)) snprintf(peer, sizeof peer, "?");
    struct trk_ws_http_reply r = { .server = ws, .request = ++ws->next_request, .peer = peer };
    ws->http_handler(ws->http_user, path, args, n_args, &r);
    if (r.status == TRK_WS_HTTP_LATER) {
        /* The connection waits for drain() to bring the answer. */
        for (int i = 0; i < ws->max_clients; i++)
            if (ws->conns[i].wsi == wsi) {
                ws->conns[i].waiting = r.request;
                return 0;
            }
        r.status = HTTP_STATUS_SERVICE_UNAVAILABLE; /* not a counted connection */
        r.body = NULL;
    }
    int rc = r.status > 0
                 ? http_respond(wsi, c, r.status,
                                r.content_type ? r.content_type : "application/octet-stream",
                                r.body, r.len, false)
                 : http_respond(wsi, c, HTTP_STATUS_INTERNAL_SERVER_ERROR,
                                "text/plain; charset=utf-8", "no answer\n", 10, false);
    free(r.body);
    return rc;
}

/* ------------------------------------------------------- lws callback */

static bool uri_is_ws_path(struct lws *wsi)
{
    char uri[64];
    int n = lws_hdr_copy(wsi, uri, sizeof uri, WSI_TOKEN_GET_URI);
    return n > 0 && strcmp(uri, WS_PATH) == 0;
}

/* Whether the file the mount would serve for uri is inside the web root once
 * every symlink is resolved: the mount maps "/x" to web_root/x and a
 * directory to its index.html, and follows symlinks wherever they point.
 * lws builds that path in 256 bytes; a longer one would be cut to some other
 * file, so it is refused. */
static bool path_allowed(const struct trk_ws *ws, const char *uri, size_t len)
{
    char path[PATH_MAX], real[PATH_MAX];
    struct stat st;
    int n = snprintf(path, sizeof path, "%s%.*s", ws->web_root, (int)len, uri);
    if (!ws->root_real || !len || uri[0] != '/' || n < 0 ||
        (size_t)n + sizeof "/index.html" > 255 || !realpath(path, real) || stat(real, &st))
        return false;
    if (S_ISDIR(st.st_mode) && (snprintf(path, sizeof path, "%s/index.html", real) >= PATH_MAX ||
                                !realpath(path, real) || stat(real, &st)))
        return false;
    return S_ISREG(st.st_mode) && !strncmp(real, ws->root_real, ws->root_real_len) &&
           real[ws->root_real_len] == '/';
}

/* Service thread: connection fd is one too many. It gets a 503 before the
 * close, so a client (and its user) knows why. What it sent is read first:
 * closing with unread data resets the connection, which may discard the
 * answer before the client reads it. */
static void refuse_busy(struct trk_ws *ws, int fd)
{
    static const char body[] = "trackd: too many connections (see --max-clients), try again\n";
    char msg[320];
    int n = snprintf(msg, sizeof msg,
                     "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
                     "Content-Length: %zu\r\nRetry-After: 5\r\nConnection: close\r\n\r\n%s",
                     sizeof body - 1, body);
    if (send(fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) { /* closed anyway */
    }
    shutdown(fd, SHUT_WR);
    char sink[2048];
    for (int i = 0; i < 4 && recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; i++) {
    }
    /* Once per burst (at most every 10 s): a flood must not flood the log. */
    ws->refused++;
    if (trk_now() - ws->refused_log_time >= 10) {
        log_warn("refused %llu connection(s): %d open, the most allowed (--max-clients)",
                 (unsigned long long)(ws->refused - ws->refused_logged), ws->max_clients);
        ws->refused_logged = ws->refused;
        ws->refused_log_time = trk_now();
    }
}

/* Service thread: RFC 6455 4.4: a WebSocket request of a version other than
 * 13 gets 426 and the version we speak. Returns -1: lws then hangs up. */
static int refuse_version(struct lws *wsi)
{
    static const char body[] = "trackd speaks WebSocket version 13 only\n";
    unsigned char buf[LWS_PRE + 320];
    int n = snprintf((char *)buf + LWS_PRE, sizeof buf - LWS_PRE,
                     "HTTP/1.1 426 Upgrade Required\r\nSec-WebSocket-Version: 13\r\n"
                     "Content-Type: text/plain\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n%s",
                     sizeof body - 1, body);
    lws_write(wsi, buf + LWS_PRE, (size_t)n, LWS_WRITE_HTTP);
    return -1;
}

/* Close codes a peer may send (RFC 6455 7.4): the defined ones that are not
 * reserved for local use, and 3000..4999 (libraries, applications). */
static bool close_code_ok(unsigned code)
{
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1011) ||
           (code >= 3000 && code <= 4999);
}

/* Service thread: close the WebSocket with code and reason (a literal). */
static int close_with(struct lws *wsi, enum lws_close_status code, const char *reason)
{
    lws_close_reason(wsi, code, (unsigned char *)reason, strlen(reason));
    return -1;
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

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len)
{
    struct trk_ws *ws = lws_context_user(lws_get_context(wsi));
    struct client *c = user;

    switch (reason) {
    case LWS_CALLBACK_FILTER_NETWORK_CONNECTION: {
        /* Just accepted, nothing read yet: the cheapest moment to refuse. */
        int fd = (int)(intptr_t)in;
        if (atomic_load(&ws->n_conns) >= ws->max_clients) {
            refuse_busy(ws, fd);
            return 1;
        }
        ws->accepted_fd = fd;
        trk_ws_guard_add(fd);
        return 0;
    }

    case LWS_CALLBACK_WSI_CREATE:
        /* The connection just accepted (h2 streams have no accept: not
         * counted). Remembered by wsi: lws has no per-wsi field of ours that
         * survives adoption, and at WSI_DESTROY the fd is already gone. */
        if (ws->accepted_fd >= 0) {
            for (int i = 0; i < ws->max_clients; i++)
                if (!ws->conns[i].wsi) {
                    ws->conns[i] = (struct conn){ wsi, ws->accepted_fd, 0 };
                    atomic_fetch_add(&ws->n_conns, 1);
                    break;
                }
            ws->accepted_fd = -1;
        }
        return 0;

    case LWS_CALLBACK_WSI_DESTROY:
        for (int i = 0; i < ws->max_clients; i++)
            if (ws->conns[i].wsi == wsi) {
                trk_ws_guard_remove(ws->conns[i].fd);
                ws->conns[i] = (struct conn){ 0 }; /* free; a late answer finds no one */
                atomic_fetch_sub(&ws->n_conns, 1);
                break;
            }
        return 0;

    case LWS_CALLBACK_FILTER_HTTP_CONNECTION:
        /* A file request, before the mount opens anything. */
        if (ws->web_root && !is_route(ws, in, len) && !path_allowed(ws, in, len)) {
            lws_return_http_status(wsi, HTTP_STATUS_NOT_FOUND, NULL);
            return -1;
        }
        break;

    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: {
        char v[8];
        if (in && !strcasecmp(in, "websocket") &&
            (lws_hdr_copy(wsi, v, sizeof v, WSI_TOKEN_VERSION) != 2 || strcmp(v, "13")))
            return refuse_version(wsi);
        break;
    }

    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE: {
        /* lws answers a close by echoing its payload; it already turns most
         * codes that may not be sent into 1002, but not 5000 and up. */
        unsigned char *p = in;
        if (len == 1) return -1; /* not even a code: hang up */
        if (len >= 2 && !close_code_ok((unsigned)p[0] << 8 | p[1])) {
            p[0] = LWS_CLOSE_STATUS_PROTOCOL_ERR >> 8;
            p[1] = LWS_CLOSE_STATUS_PROTOCOL_ERR & 0xff;
        }
        return 0;
    }

    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
        /* WebSocket only at /ws: other paths are for files. No new
         * clients once the server says goodbye (trk_ws_shutdown). */
        if (ws->no_websocket || !uri_is_ws_path(wsi)) return 1;
        pthread_mutex_lock(&ws->lock);
        bool refuse = ws->closing;
        pthread_mutex_unlock(&ws->lock);
        if (refuse) return 1;
        break;

    case LWS_CALLBACK_ESTABLISHED: {
        c->wsi = wsi;
        c->fd = lws_get_socket_fd(wsi);
        trk_ws_guard_upgraded(c->fd, wsi);
        c->id = atomic_fetch_add(&ws->next_client_id, 1) + 1;
        atomic_store(&c->preview_on, true);
        c->authed = !ws->token;
        c->owner = -1;
        if (ws->token) { /* ws://host/ws?token=... */
            char arg[256];
            const char *v = lws_get_urlarg_by_name(wsi, "token=", arg, (int)sizeof arg);
            if (v && token_equal(v, strlen(v), ws->token)) c->authed = true;
        }
        c->results = calloc((size_t)ws->queue_len, sizeof *c->results);
        if (!c->results) return -1;
        if (lws_get_peer_simple(wsi, c->peer, sizeof c->peer) == NULL)
            snprintf(c->peer, sizeof c->peer, "?");
        pthread_mutex_lock(&ws->lock);
        c->hello = msg_ref(ws->hello);
        c->slot[TRK_WS_STATUS] = msg_ref(ws->last_status);
        c->next = ws->clients;
        ws->clients = c;
        c->established = true;
        /* Let in just before trk_ws_shutdown: it says goodbye too. */
        c->closing = ws->closing;
        pthread_mutex_unlock(&ws->lock);
        atomic_fetch_add(&ws->n_clients, 1);
        log_debug("client %llu connected from %s", (unsigned long long)c->id, c->peer);
        if (client_pending(c) || c->closing || trk_ws_guard_unmasked(c->fd))
            lws_callback_on_writable(wsi);
        break;
    }

    case LWS_CALLBACK_CLOSED:
        if (!c->established) break;
        trk_ws_guard_remove(c->fd); /* before lws closes the fd */
        pthread_mutex_lock(&ws->lock);
        for (struct client **p = &ws->clients; *p; p = &(*p)->next)
            if (*p == c) {
                *p = c->next;
                break;
            }
        c->established = false;
        pthread_mutex_unlock(&ws->lock);
        atomic_fetch_sub(&ws->n_clients, 1);
        client_clear(ws, c);
        if (ws->on_close) ws->on_close(ws->user, c->id);
        log_debug("client %llu disconnected (%llu sent, %llu dropped)", (unsigned long long)c->id,
                  (unsigned long long)atomic_load(&c->sent),
                  (unsigned long long)atomic_load(&c->dropped));
        break;

    case LWS_CALLBACK_SERVER_WRITEABLE: {
        if (!c->established) break;
        if (trk_ws_guard_unmasked(c->fd))
            return close_with(wsi, LWS_CLOSE_STATUS_PROTOCOL_ERR, "unmasked frame");
        struct msg **where = client_next(ws, c);
        if (!where && c->closing) {
            /* Everything pending is written: a close frame, so the client
             * sees a clean close with the reason rather than a dropped
             * connection (1006). lws sends it and waits for the answer. */
            lws_close_reason(wsi, (enum lws_close_status)ws->close_code,
                             (unsigned char *)ws->close_reason, strlen(ws->close_reason));
            return -1;
        }
        if (!where) break;
        struct msg *m = *where;
        int n =
            lws_write(wsi, m->buf + LWS_PRE, m->len, m->binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT);
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
        if (client_pending(c) || c->closing) lws_callback_on_writable(wsi);
        break;
    }

    case LWS_CALLBACK_RECEIVE:
        if (!c->established) break;
        if (trk_ws_guard_unmasked(c->fd))
            return close_with(wsi, LWS_CLOSE_STATUS_PROTOCOL_ERR, "unmasked frame");
        if (!client_receive(ws, c, in, len))
            return close_with(wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, "message too large");
        break;

    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        if (ws) {
            drain(ws);
            if (!atomic_load(&ws->spinning)) arm_spin(ws);
        }
        break;

    case LWS_CALLBACK_HTTP: return http_request(ws, wsi, c);

    case LWS_CALLBACK_HTTP_WRITEABLE:
        if (c && c->http_body) return http_write_more(wsi, c);
        break;

    case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
    case LWS_CALLBACK_CLOSED_HTTP:
        if (c) {
            free(c->http_body);
            c->http_body = NULL;
        }
        break;

    default: break;
    }
    /* HTTP file serving from the mount is lws's own work. */
    return lws_callback_http_dummy(wsi, reason, user, in, len);
}

/* ---------------------------------------------------------- public API */

/* A NULL-terminated copy of in (NULL stays NULL). 0 or TRK_ENOMEM. */
static int dup_list(const char *const *in, char ***out)
{
    *out = NULL;
    if (!in) return 0;
    size_t n = 0;
    while (in[n])
        n++;
    if (!(*out = calloc(n + 1, sizeof **out))) return TRK_ENOMEM;
    for (size_t i = 0; i < n; i++)
        if (!((*out)[i] = strdup(in[i]))) return TRK_ENOMEM;
    return 0;
}

static void free_list(char ***list)
{
    for (size_t i = 0; *list && (*list)[i]; i++)
        free((*list)[i]);
    free(*list);
    *list = NULL;
}

int trk_ws_create(const struct trk_ws_cfg *cfg, struct trk_ws **out)
{
    *out = NULL;
    if (!cfg || cfg->port < 0 || cfg->port > 65535 || cfg->queue_len < 0 || cfg->queue_len > 4096 ||
        cfg->max_clients < 0 || cfg->max_clients > TRK_WS_MAX_CLIENTS_LIMIT)
        return TRK_EINVAL;
    struct trk_ws *ws = calloc(1, sizeof *ws);
    if (!ws) return TRK_ENOMEM;
    ws->port = cfg->port;
    ws->queue_len = cfg->queue_len ? cfg->queue_len : TRK_WS_QUEUE_DEFAULT;
    ws->on_message = cfg->on_message;
    ws->on_close = cfg->on_close;
    ws->user = cfg->user;
    ws->bound_port = -1;
    ws->max_clients = cfg->max_clients ? cfg->max_clients : TRK_WS_MAX_CLIENTS_DEFAULT;
    ws->accepted_fd = -1;
    pthread_mutex_init(&ws->lock, NULL);
    if (!(ws->conns = calloc((size_t)ws->max_clients, sizeof *ws->conns))) goto nomem;
    if (cfg->address && *cfg->address && !(ws->address = strdup(cfg->address))) goto nomem;
    if (cfg->web_root && !(ws->web_root = strdup(cfg->web_root))) goto nomem;
    if (cfg->control_token && *cfg->control_token && !(ws->token = strdup(cfg->control_token)))
        goto nomem;
    if (cfg->owner_types) {
        size_t n = 0;
        while (cfg->owner_types[n])
            n++;
        if (!(ws->owner_types = calloc(n + 1, sizeof *ws->owner_types))) goto nomem;
        for (size_t i = 0; i < n; i++)
            if (!(ws->owner_types[i] = strdup(cfg->owner_types[i]))) goto nomem;
    }
    if (dup_list(cfg->http_paths, &ws->http_paths) ||
        dup_list(cfg->http_private_paths, &ws->http_private))
        goto nomem;
    ws->http_handler = cfg->http_handler;
    ws->http_user = cfg->http_user;
    ws->no_websocket = cfg->no_websocket;
    ws->rt_priority = cfg->rt_priority;
    if (cfg->control_types) {
        size_t n = 0, bytes = 0;
        while (cfg->control_types[n])
            bytes += strlen(cfg->control_types[n++]) + 1;
        ws->control_types = calloc(n + 1, sizeof *ws->control_types);
        ws->control_strings = malloc(bytes ? bytes : 1);
        if (!ws->control_types || !ws->control_strings) goto nomem;
        char *p = ws->control_strings;
        for (size_t i = 0; i < n; i++) {
            size_t k = strlen(cfg->control_types[i]) + 1;
            memcpy(p, cfg->control_types[i], k);
            ws->control_types[i] = p;
            p += k;
        }
    }
    *out = ws;
    return 0;
nomem:
    trk_ws_destroy(&ws);
    return TRK_ENOMEM;
}

__attribute__((format(printf, 2, 3))) static void set_why(struct trk_ws *ws, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ws->why, sizeof ws->why, fmt, ap);
    va_end(ap);
}

/* "HOST:PORT" for messages, IPv6 literals in brackets. */
static void host_port(const char *host, int port, char *out, size_t len)
{
    if (!host) host = "*";
    snprintf(out, len, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
}

/* Binds (and releases) a socket at sa, the way lws will, to learn whether it
 * can: 0 or -errno. SO_REUSEADDR as lws sets it; on Linux it still fails
 * with EADDRINUSE while another socket listens on the port. */
static int try_bind(const struct sockaddr *sa, socklen_t sl)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc = bind(fd, sa, sl) ? -errno : 0;
    close(fd);
    return rc;
}

static const char *bind_hint(int err)
{
    switch (err) {
    case -EADDRINUSE: return " (another program is using this port)";
    case -EADDRNOTAVAIL: return " (not an address of this machine)";
    case -EACCES: return " (ports below 1024 need privileges)";
    default: return "";
    }
}

/* Resolves ws->address (a host name, an IPv4 or IPv6 address; NULL = every
 * interface) and picks the first of its addresses that can be bound at
 * ws->port. lws takes only numeric addresses and interface names, and when
 * it cannot bind it may only log and go on without a listener, so the
 * address is checked here first. On success *out holds the address (port
 * included) and numeric its text for lws. Returns 0 or a negative code with
 * ws->why set. */
static int pick_address(struct trk_ws *ws, struct sockaddr_storage *out, char *numeric,
                        size_t numeric_len)
{
    char where[300];
    host_port(ws->address, ws->port, where, sizeof where);
    memset(out, 0, sizeof *out);
    numeric[0] = '\0';
    if (!ws->address) {
        /* Every interface: one dual-stack IPv6 socket (what lws opens), or
         * IPv4 only on a host without IPv6. */
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)out;
        s6->sin6_family = AF_INET6;
        s6->sin6_addr = in6addr_any;
        s6->sin6_port = htons((uint16_t)ws->port);
        int err = try_bind((struct sockaddr *)s6, sizeof *s6);
        if (err == -EAFNOSUPPORT) {
            struct sockaddr_in *s4 = (struct sockaddr_in *)out;
            memset(out, 0, sizeof *out);
            s4->sin_family = AF_INET;
            s4->sin_addr.s_addr = htonl(INADDR_ANY);
            s4->sin_port = htons((uint16_t)ws->port);
            err = try_bind((struct sockaddr *)s4, sizeof *s4);
        }
        if (err) set_why(ws, "cannot listen on %s: %s%s", where, strerror(-err), bind_hint(err));
        return err;
    }
    char port[8];
    snprintf(port, sizeof port, "%d", ws->port);
    struct addrinfo hints = { .ai_family = AF_UNSPEC,
                              .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
    struct addrinfo *res = NULL;
    int g = getaddrinfo(ws->address, port, &hints, &res);
    if (g) {
        set_why(ws, "cannot listen on %s: cannot resolve %s: %s", where, ws->address,
                g == EAI_SYSTEM ? strerror(errno) : gai_strerror(g));
        return -EADDRNOTAVAIL;
    }
    /* One address is served: for a name with both (localhost: 127.0.0.1 and
     * ::1, in either order by /etc/hosts), IPv4 first, which every client
     * reaches, then the rest in the resolver's order. */
    int err = -EADDRNOTAVAIL;
    bool tried = false;
    for (int pass = 0; pass < 2 && err; pass++)
        for (struct addrinfo *a = res; a; a = a->ai_next) {
            if ((a->ai_family == AF_INET) != (pass == 0) || a->ai_addrlen > sizeof *out) continue;
            int e = try_bind(a->ai_addr, a->ai_addrlen);
            if (e == 0 && getnameinfo(a->ai_addr, a->ai_addrlen, numeric, (socklen_t)numeric_len,
                                      NULL, 0, NI_NUMERICHOST) == 0) {
                memcpy(out, a->ai_addr, a->ai_addrlen);
                err = 0;
                break;
            }
            /* A port conflict says more than an address family the host lacks. */
            if (!tried || e == -EADDRINUSE) err = e ? e : -EADDRNOTAVAIL;
            tried = true;
        }
    freeaddrinfo(res);
    if (err) set_why(ws, "cannot listen on %s: %s%s", where, strerror(-err), bind_hint(err));
    return err;
}

/* Whether this process has a listening TCP socket bound to want's address
 * and port (port 0 in want: any port). lws gives no access to its listen
 * socket, so the file descriptors are inspected: the proof that clients can
 * connect. true when /proc cannot be read (nothing to check with). */
static bool listener_exists(const struct sockaddr_storage *want, int port)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) return true;
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);
        if (*end || end == e->d_name || fd == dirfd(d)) continue;
        int listening = 0;
        socklen_t ol = sizeof listening;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        if (getsockopt((int)fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ol) || !listening ||
            getsockname((int)fd, (struct sockaddr *)&ss, &sl) || ss.ss_family != want->ss_family)
            continue;
        if (ss.ss_family == AF_INET) {
            const struct sockaddr_in *a = (const void *)&ss, *b = (const void *)want;
            found = ntohs(a->sin_port) == port && a->sin_addr.s_addr == b->sin_addr.s_addr;
        } else if (ss.ss_family == AF_INET6) {
            const struct sockaddr_in6 *a = (const void *)&ss, *b = (const void *)want;
            found = ntohs(a->sin6_port) == port &&
                    !memcmp(&a->sin6_addr, &b->sin6_addr, sizeof a->sin6_addr);
        }
    }
    closedir(d);
    return found;
}

bool trk_ws_is_loopback(const char *address)
{
    if (!address || !*address) return false;
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
    struct addrinfo *res = NULL;
    if (getaddrinfo(address, NULL, &hints, &res)) return false;
    bool all = res != NULL;
    for (struct addrinfo *a = res; a && all; a = a->ai_next) {
        if (a->ai_family == AF_INET) {
            const struct sockaddr_in *s4 = (const void *)a->ai_addr;
            all = (ntohl(s4->sin_addr.s_addr) >> 24) == 127;
        } else if (a->ai_family == AF_INET6) {
            const struct in6_addr *x = &((const struct sockaddr_in6 *)a->ai_addr)->sin6_addr;
            all = IN6_IS_ADDR_LOOPBACK(x) || (IN6_IS_ADDR_V4MAPPED(x) && x->s6_addr[12] == 127);
        } else {
            all = false;
        }
    }
    freeaddrinfo(res);
    return all;
}

const char *trk_ws_error(const struct trk_ws *ws)
{
    return ws && ws->why[0] ? ws->why : "no error";
}

static void *service_main(void *arg)
{
    struct trk_ws *ws = arg;
    if (ws->rt_priority > 0) {
        struct sched_param sp = { .sched_priority = ws->rt_priority };
        int e = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
        if (e)
            log_warn("the WebSocket thread cannot have real-time priority %d (%s: needs "
                     "CAP_SYS_NICE or an RLIMIT_RTPRIO of %d); it runs at normal priority",
                     ws->rt_priority, strerror(e), ws->rt_priority);
    }
    while (!atomic_load(&ws->stopping))
        if (lws_service(ws->ctx, 0) < 0) {
            log_error("the WebSocket service loop failed; clients are no longer served");
            break;
        }
    return NULL;
}

int trk_ws_start(struct trk_ws *ws)
{
    if (!ws) return TRK_EINVAL;
    pthread_mutex_lock(&ws->lock);
    bool busy = ws->running || ws->stopped;
    pthread_mutex_unlock(&ws->lock);
    if (busy) return -EALREADY;

    /* lws logs to stderr at NOTICE by default; the daemon wants only
     * problems, through its own logger. */
    lws_set_log_level(LLL_ERR | LLL_WARN, lws_emit);

    ws->protocols[0] = (struct lws_protocols){
        .name = WS_SUBPROTOCOL,
        .callback = callback,
        .per_session_data_size = sizeof(struct client),
        .rx_buffer_size = RX_CHUNK,
    };
    /* protocols[0] doubles as the default: a client that asks for no
     * subprotocol is bound to it, so any WebSocket library can connect. */
    memset(&ws->protocols[1], 0, sizeof ws->protocols[1]);

    if (ws->web_root) {
        struct stat st;
        if (stat(ws->web_root, &st) || !S_ISDIR(st.st_mode))
            log_warn("web root %s is not a directory: HTTP requests will get 404", ws->web_root);
        /* Resolved once: what every served file's real path must be in. */
        free(ws->root_real);
        ws->root_real = realpath(ws->web_root, NULL);
        ws->root_real_len = ws->root_real ? strlen(ws->root_real) : 0;
        /* "/" as the root: every path is inside it, its own "/" included. */
        if (ws->root_real_len == 1) ws->root_real_len = 0;
        memset(&ws->mount, 0, sizeof ws->mount);
        ws->mount.mountpoint = "/";
        ws->mount.mountpoint_len = 1;
        ws->mount.origin = ws->web_root;
        ws->mount.def = "index.html";
        ws->mount.origin_protocol = LWSMPRO_FILE;
    }

    /* The http_paths: callback mounts, which lws prefers to "/" (the
     * longest mountpoint that matches wins). */
    size_t n_routes = 0;
    while (ws->http_paths && ws->http_paths[n_routes])
        n_routes++;
    free(ws->route_mounts);
    ws->route_mounts = n_routes ? calloc(n_routes, sizeof *ws->route_mounts) : NULL;
    if (n_routes && !ws->route_mounts) return TRK_ENOMEM;
    for (size_t i = 0; i < n_routes; i++) {
        struct lws_http_mount *m = &ws->route_mounts[i];
        m->mountpoint = ws->http_paths[i];
        m->mountpoint_len = (unsigned char)strlen(ws->http_paths[i]);
        m->origin = WS_SUBPROTOCOL;
        m->origin_protocol = LWSMPRO_CALLBACK;
        m->mount_next = i + 1 < n_routes ? &ws->route_mounts[i + 1]
                        : ws->web_root   ? &ws->mount
                                         : NULL;
    }

    struct sockaddr_storage sa;
    char numeric[INET6_ADDRSTRLEN + 8];
    int err = pick_address(ws, &sa, numeric, sizeof numeric);
    if (err) return err;

    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    /* Text messages and close reasons must be UTF-8 (else close 1007). */
    info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS | LWS_SERVER_OPTION_VALIDATE_UTF8;
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.user = ws;
    info.gid = -1;
    info.uid = -1;
    ws->ctx = lws_create_context(&info);
    if (!ws->ctx) {
        set_why(ws, "cannot create the libwebsockets context");
        return TRK_ENOMEM;
    }

    memset(&info, 0, sizeof info);
    info.port = ws->port;
    info.iface = numeric[0] ? numeric : NULL;
    info.protocols = ws->protocols;
    info.mounts = n_routes ? ws->route_mounts : ws->web_root ? &ws->mount : NULL;
    info.vhost_name = "trackd";
    /* TCP keepalive finds peers that vanished (cable pulled, laptop closed)
     * on otherwise idle connections. */
    info.ka_time = 30;
    info.ka_probes = 3;
    info.ka_interval = 10;
    /* A request head must be complete this soon (slow senders hold a
     * connection slot and a header buffer). */
    info.timeout_secs_ah_idle = TRK_WS_HEAD_TIMEOUT_S;
    /* Without it lws keeps a vhost it could not bind and retries later. */
    info.options = LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND;
    /* An IPv4 address cannot be bound on an IPv6 socket. */
    if (sa.ss_family == AF_INET) info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
    char where[300];
    host_port(ws->address, ws->port, where, sizeof where);
    ws->vhost = lws_create_vhost(ws->ctx, &info);
    int port = ws->vhost ? lws_get_vhost_listen_port(ws->vhost) : -1;
    if (!ws->vhost || port <= 0 || !listener_exists(&sa, port)) {
        /* Lost a race for the port since pick_address, or lws failed. */
        err = ws->vhost ? -EIO
                        : try_bind((struct sockaddr *)&sa, sa.ss_family == AF_INET
                                                               ? sizeof(struct sockaddr_in)
                                                               : sizeof(struct sockaddr_in6));
        if (!err) err = -EIO;
        set_why(ws, "cannot listen on %s: %s%s", where,
                err == -EIO ? "libwebsockets created no listening socket" : strerror(-err),
                bind_hint(err));
        lws_context_destroy(ws->ctx);
        ws->ctx = NULL;
        ws->vhost = NULL;
        return err;
    }
    ws->bound_port = port;

    pthread_mutex_lock(&ws->lock);
    ws->running = true;
    pthread_mutex_unlock(&ws->lock);
    atomic_store(&ws->stopping, false);
    int rc = pthread_create(&ws->thread, NULL, service_main, ws);
    if (rc) {
        pthread_mutex_lock(&ws->lock);
        ws->running = false;
        pthread_mutex_unlock(&ws->lock);
        lws_context_destroy(ws->ctx);
        ws->ctx = NULL;
        ws->vhost = NULL;
        ws->bound_port = -1;
        return -rc;
    }
    ws->thread_started = true;
    host_port(numeric[0] ? numeric : NULL, ws->bound_port, where, sizeof where);
    log_debug("listening on %s", where);
    return 0;
}

int trk_ws_port(const struct trk_ws *ws)
{
    return ws ? ws->bound_port : -1;
}

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

/* Wakes the service thread; caller holds ws->lock (so ctx is alive). */
static void wake(struct trk_ws *ws)
{
    if (ws->running) lws_cancel_service(ws->ctx);
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

int trk_ws_http_answer(struct trk_ws *ws, uint64_t request, struct trk_ws_http_reply *reply)
{
    if (!reply) return TRK_EINVAL;
    struct answer *a = ws && reply->status > 0 ? malloc(sizeof *a) : NULL;
    if (!a) {
        free(reply->body);
        reply->body = NULL;
        return ws && reply->status > 0 ? TRK_ENOMEM : TRK_EINVAL;
    }
    a->request = request;
    a->r = *reply;
    reply->body = NULL;
    pthread_mutex_lock(&ws->lock);
    if (ws->running) {
        a->next = ws->answers;
        ws->answers = a;
        wake(ws);
        a = NULL;
    }
    pthread_mutex_unlock(&ws->lock);
    if (a) a->next = NULL;
    answers_free(a); /* stopped: no one to answer */
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

int trk_ws_get_clients(struct trk_ws *ws, struct trk_ws_client_stats *out, int max)
{
    if (!ws) return 0;
    int n = 0;
    pthread_mutex_lock(&ws->lock);
    for (struct client *c = ws->clients; c; c = c->next, n++) {
        if (n >= max || !out) continue;
        struct trk_ws_client_stats *s = &out[n];
        s->id = c->id;
        snprintf(s->peer, sizeof s->peer, "%s", c->peer);
        s->preview = atomic_load(&c->preview_on);
        s->messages_sent = atomic_load(&c->sent);
        s->messages_dropped = atomic_load(&c->dropped);
        s->bytes_sent = atomic_load(&c->bytes);
    }
    pthread_mutex_unlock(&ws->lock);
    return n;
}

static void handoff_clear(struct handoff *h)
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

void trk_ws_stop(struct trk_ws *ws)
{
    if (!ws) return;
    pthread_mutex_lock(&ws->lock);
    bool was_running = ws->running;
    ws->stopped = true;
    if (was_running) {
        atomic_store(&ws->stopping, true);
        lws_cancel_service(ws->ctx);
    }
    pthread_mutex_unlock(&ws->lock);
    if (ws->thread_started) {
        pthread_join(ws->thread, NULL);
        ws->thread_started = false;
    }
    pthread_mutex_lock(&ws->lock);
    ws->running = false; /* producers no longer touch ctx */
    pthread_mutex_unlock(&ws->lock);
    if (ws->ctx) lws_sul_schedule(ws->ctx, 0, &ws->spin_sul, NULL, LWS_SET_TIMER_USEC_CANCEL);
    if (ws->ctx) {
        /* Closes every connection: CLOSED runs here, on this thread, now that
         * the service thread is gone. */
        lws_context_destroy(ws->ctx);
        ws->ctx = NULL;
        ws->vhost = NULL;
    }
    pthread_mutex_lock(&ws->lock);
    handoff_clear(&ws->h);
    struct answer *answers = ws->answers;
    ws->answers = NULL;
    pthread_mutex_unlock(&ws->lock);
    answers_free(answers);
}

void trk_ws_shutdown(struct trk_ws *ws, int code, const char *reason, double timeout_s)
{
    if (!ws) return;
    pthread_mutex_lock(&ws->lock);
    bool running = ws->running;
    if (running && !ws->closing) {
        ws->close_code = code >= 1000 && code <= 4999 ? code : 1000;
        snprintf(ws->close_reason, sizeof ws->close_reason, "%s", reason ? reason : "");
        ws->closing = true;
        wake(ws);
    }
    pthread_mutex_unlock(&ws->lock);
    /* The service thread writes what is pending, then the close frames; lws
     * waits for each client's answer. A client that does not read (full
     * socket buffers) never gets that far: the deadline bounds the wait. */
    double deadline = trk_now() + (timeout_s > 0 ? timeout_s : 0);
    while (running && atomic_load(&ws->n_clients) > 0 && trk_now() < deadline) {
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    int left = atomic_load(&ws->n_clients);
    if (running && left > 0)
        log_warn("%d client(s) did not finish closing within %g s; dropping them", left, timeout_s);
    trk_ws_stop(ws);
}

void trk_ws_destroy(struct trk_ws **pws)
{
    if (!pws || !*pws) return;
    struct trk_ws *ws = *pws;
    *pws = NULL;
    trk_ws_stop(ws);
    handoff_clear(&ws->h);
    msg_unref(&ws->hello);
    msg_unref(&ws->last_status);
    pthread_mutex_destroy(&ws->lock);
    free(ws->address);
    free(ws->token);
    for (size_t i = 0; ws->owner_types && ws->owner_types[i]; i++)
        free(ws->owner_types[i]);
    free(ws->owner_types);
    free_list(&ws->http_paths);
    free_list(&ws->http_private);
    free(ws->route_mounts);
    free(ws->web_root);
    free(ws->root_real);
    free(ws->conns);
    free(ws->control_types);
    free(ws->control_strings);
    free(ws);
}
