/* Internals of the WebSocket + HTTP server (ws.h), shared by its files:
 *   ws.c        the lifecycle, the service thread, connections and clients
 *               coming and going, the lws callback's dispatch;
 *   ws_queue.c  messages, the hand-off and the per-client queues;
 *   ws_rx.c     what a client sends: reassembly, parsing, auth;
 *   ws_peer.c   the token check and the peer's user from /proc;
 *   ws_http.c   mounts, HTTP routes, static-file checks, HTTP answers;
 *   ws_addr.c   address picking and the listening socket;
 * and ws_guard.h beside them, which watches the frames' mask bit. Threads
 * and ownership are described at the top of ws.c. Private to protocol/.
 */
#ifndef TRK_PROTOCOL_WS_INT_H
#define TRK_PROTOCOL_WS_INT_H

#include "ws.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <libwebsockets.h>

#include "trk_buf.h"

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
/* The most one send() of a message may carry (lws's tx_packet_size). Left
 * 0, lws caps each send at rx_buffer_size and sends the rest a chunk per
 * writable callback: a 128 KiB preview took 32 service rounds, 0.36 ms
 * from write to arrival on loopback against 0.02 ms for one send
 * (trackd-ws-bench, docs/BENCHMARKS.md). The kernel still takes only what
 * fits in the socket's buffer; lws keeps the rest for the next POLLOUT. */
#define TX_PACKET (1u << 20)

/* ------------------------------------------------------------ messages */

struct msg {
    atomic_int refs;
    bool binary;
    uint64_t order;   /* publish order, across kinds: writes follow it */
    double t_handoff; /* s, CLOCK_MONOTONIC: a result's broadcast; 0 = other kinds */
    double t_taken;   /* ... when the service thread took it from the hand-off */
    int view;         /* a preview: the view (TRK_WS_VIEWS) whose clients get it;
                       * a result: 1 + the predict slot whose clients get it, 0
                       * the measured one (clients without predict) */
    size_t len;
    unsigned char buf[]; /* LWS_PRE bytes of headroom, then len bytes, NUL */
};

static inline struct msg *msg_ref(struct msg *m)
{
    if (m) atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
    return m;
}

static inline void msg_unref(struct msg **pm)
{
    struct msg *m = *pm;
    *pm = NULL;
    if (m && atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) == 1) free(m);
}

/* ------------------------------------------------------------- clients */

/* A queue of messages bounded in entries and in bytes: the oldest go to make
 * room, the newest always stays. The ring's index side; its cap entries are
 * an array beside it (the hand-off is copied whole, so no pointer to it). */
struct ring {
    unsigned cap, head, count;
    size_t bytes, max_bytes; /* of the messages queued; at most max_bytes */
};

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
    bool peer_closed;       /* the peer's close frame came: lws answers it */
    bool write_failed;      /* a write at hand-off failed: close at WRITEABLE */
    atomic_bool preview_on; /* also read by get_clients */
    atomic_int view;        /* previews of this view only (trk_ws_set_view) */
    int predict_slot;       /* results: those of this predict slot; -1 the measured */
    char peer[64];
    struct msg *hello;                   /* written before anything else */
    struct ring results;                 /* ws->queue_len, TRK_WS_QUEUE_BYTES */
    struct msg **result_at;              /* its entries                       */
    struct msg *slot[TRK_WS_KIND_COUNT]; /* newest-only kinds                 */
    struct ring replies;                 /* CLIENT_REPLIES, CLIENT_REPLY_BYTES */
    struct msg *reply_at[CLIENT_REPLIES];
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
    struct ring results; /* HANDOFF_RESULTS, HANDOFF_RESULT_BYTES */
    struct msg *result_at[HANDOFF_RESULTS];
    struct msg *slot[TRK_WS_KIND_COUNT]; /* previews: in views[] instead */
    struct msg *views[TRK_WS_VIEWS];     /* the newest preview of each view */
    struct ring replies;                 /* HANDOFF_REPLIES, HANDOFF_REPLY_BYTES */
    struct msg *reply_at[HANDOFF_REPLIES];
    uint64_t reply_to[HANDOFF_REPLIES]; /* each reply's client */
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
    /* The predict slots: clients per slot and the time each is for. */
    int predict_refs[TRK_WS_PREDICT_SLOTS];
    double predict_ahead[TRK_WS_PREDICT_SLOTS];
    bool running; /* ctx alive: producers may wake the thread   */
    bool stopped; /* start may not be called again              */
    struct handoff h;
    struct handoff taken; /* service thread only: what drain() took */
    struct msg *hello;
    struct msg *last_status;
    struct msg *last_replay; /* TRK_WS_REPLAY's newest, for new clients */
    struct client *clients;
    /* Hand-off -> written delays of result messages in their parts, every
     * client's write; written by the service thread, read by
     * trk_ws_write_delays and trk_ws_write_splits. */
    struct trk_ws_write_split write_split[TRK_WS_WRITE_SAMPLES];
    uint64_t n_writes; /* taken since start; sample i is at i % TRK_WS_WRITE_SAMPLES */
    /* trk_ws_shutdown: every client gets a close frame with this code and
     * reason after its pending messages; new connections are refused. */
    bool closing;
    int close_code;
    char close_reason[124]; /* a close frame carries at most 123 bytes */

    atomic_int n_clients;
    atomic_int n_predict; /* clients with a predict slot */
    bool predict_ok;      /* trk_ws_cfg.predict */
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
    /* Something was handed over since the service thread last drained:
     * while it spins it looks at this each round instead of being woken
     * (wake()), so a producer saves the wake-up's write and the service
     * thread the pipe's read and a round. */
    atomic_bool handed;
    lws_sorted_usec_list_t spin_sul; /* service thread only */
    atomic_uint_fast64_t next_order;
    atomic_uint_fast64_t next_client_id;
    _Atomic uint64_t sent, dropped, bytes;
};

/* Whether s is in list (NULL-terminated; NULL: empty). */
static inline bool in_list(char *const *list, const char *s)
{
    for (size_t i = 0; list && list[i]; i++)
        if (!strcmp(list[i], s)) return true;
    return false;
}

/* Tells the service thread there is something in the hand-off: a spinning
 * thread sees it in its next round, a sleeping one is woken. The flag is
 * set before spinning is read, and the thread clears spinning before it
 * reads the flag (arm_spin): one of the two always sees the other. Caller
 * holds ws->lock (so ctx is alive). */
static inline void wake(struct trk_ws *ws)
{
    if (!ws->running) return;
    atomic_store(&ws->handed, true);
    if (!atomic_load(&ws->spinning)) lws_cancel_service(ws->ctx);
}

/* ---------------------------------------------------------- ws_queue.c */

/* Service thread: whether anything waits to be written to c. */
bool trk_ws_client_pending(const struct client *c);
/* Service thread: client c's predict slot: the one for ahead (s after the
 * send; shared with the clients asking the same) when on, none when off.
 * 0, or -EBUSY when every slot is taken by other times. */
int trk_ws_predict_join(struct trk_ws *ws, struct client *c, bool on, double ahead);
/* Service thread: queues the message in b as a reply to c. */
void trk_ws_client_reply_buf(struct trk_ws *ws, struct client *c, const struct trk_buf *b);
/* Service thread, at c's SERVER_WRITEABLE: writes its next message, or the
 * close frame once nothing is pending and it is closing. -1: close (also
 * when a write at hand-off failed, see drain). */
int trk_ws_client_write(struct trk_ws *ws, struct client *c);
/* Service thread: c's queues, as it becomes a WebSocket client. 0 or
 * TRK_ENOMEM. */
int trk_ws_client_init(struct trk_ws *ws, struct client *c);
/* Releases everything a closing client still holds. */
void trk_ws_client_clear(struct client *c);
/* Service thread, at EVENT_WAIT_CANCELLED: moves everything published since
 * the last wake-up to the clients, and keeps polling while a result is
 * expected (trk_ws_expect). */
void trk_ws_drain(struct trk_ws *ws);
/* Releases what a hand-off holds and empties it (also the first set-up of a
 * zeroed one). */
void trk_ws_handoff_clear(struct handoff *h);

/* ------------------------------------------------------------- ws_rx.c */

/* Service thread: a chunk of received data. lws delivers a message in one or
 * more chunks (fragments, or pieces of a frame larger than RX_CHUNK).
 * Returns false when the message is too large to read on: the caller closes
 * the connection (1009). */
bool trk_ws_client_receive(struct trk_ws *ws, struct client *c, const void *in, size_t len);

/* ----------------------------------------------------------- ws_peer.c */

/* Constant-time comparison, so the reply time does not leak the token. */
bool trk_ws_token_equal(const char *a, size_t alen, const char *b);
/* Service thread: whether c's peer runs as our effective user or root.
 * Looked up once per connection (the table read costs a file scan). */
bool trk_ws_peer_is_owner(struct client *c);

/* ----------------------------------------------------------- ws_http.c */

/* The mounts lws serves: one callback mount per http_paths entry, then the
 * web root's file mount; *first is NULL when there are none. 0 or
 * TRK_ENOMEM. */
int trk_ws_http_mounts(struct trk_ws *ws, const struct lws_http_mount **first);
/* Service thread, at FILTER_HTTP_CONNECTION (a file request, before the
 * mount opens anything): -1 (answered 404, hang up) or 0. */
int trk_ws_http_filter(struct trk_ws *ws, struct lws *wsi, const char *uri, size_t len);
/* Service thread: an HTTP request that no file mount took. */
int trk_ws_http_request(struct trk_ws *ws, struct lws *wsi, struct client *c);
/* Service thread: writes the next piece of an answer. */
int trk_ws_http_write_more(struct lws *wsi, struct client *c);
/* Service thread: the answers trk_ws_http_answer brought, to the connections
 * still waiting for them (freed either way). */
void trk_ws_http_deliver(struct trk_ws *ws, struct answer *a);
void trk_ws_http_answers_free(struct answer *a);
/* Service thread: connection fd is one too many: a 503, then the close. */
void trk_ws_http_refuse_busy(struct trk_ws *ws, int fd);
/* Service thread: a WebSocket request of a version other than 13: 426. */
int trk_ws_http_refuse_version(struct lws *wsi);

/* ----------------------------------------------------------- ws_addr.c */

/* Says why start failed, for trk_ws_error. */
__attribute__((format(printf, 2, 3))) void trk_ws_set_why(struct trk_ws *ws, const char *fmt, ...);
/* "HOST:PORT" for messages, IPv6 literals in brackets. */
void trk_ws_host_port(const char *host, int port, char *out, size_t len);
/* Picks the address to listen on (see ws_addr.c): 0 or a negative code with
 * ws->why set. */
int trk_ws_pick_address(struct trk_ws *ws, struct sockaddr_storage *out, char *numeric,
                        size_t numeric_len);
/* Creates the vhost listening at sa (numeric its text, "" = every interface)
 * and checks that it does: 0 (ws->vhost and ws->bound_port set) or a
 * negative code with ws->why set. */
int trk_ws_listen(struct trk_ws *ws, const struct sockaddr_storage *sa, const char *numeric,
                  const struct lws_http_mount *mounts);

#endif
