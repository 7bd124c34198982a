/* trackd WebSocket + HTTP server (libwebsockets 4.1).
 *
 * One service thread owns every socket. Other threads publish messages with
 * trk_ws_broadcast / trk_ws_send_to, which copy the bytes once into a
 * refcounted buffer, put it in a small mutex-protected hand-off and wake the
 * service thread with lws_cancel_service() (unless it is polling for an
 * expected result, trk_ws_expect: it then finds the hand-off itself); they
 * never block on a client. The service thread fans each message out to the
 * per-client queues (sharing the buffer, no per-client copies), writes each
 * client's next message right then when lws holds nothing of that client's
 * unsent (a reply to a client's request likewise, as it is made), and the
 * rest one message per LWS_CALLBACK_SERVER_WRITEABLE.
 *
 * Per client: results queue of cfg->queue_len messages and at most
 * TRK_WS_QUEUE_BYTES, drop-oldest (a slow client skips to the newest
 * results); replies bounded the same way (32 messages, 256 KiB); previews, stats, status and config
 * messages keep only the newest pending one. Every message dropped is counted for the client and in
 * the totals. The wire format is protocol/PROTOCOL.md.
 *
 * Endpoints: ws://ADDR:PORT/ws (subprotocol "trackd.v1", or none), HTTP
 * GET of the paths in cfg->http_paths, answered by cfg->http_handler (the
 * daemon's /metrics, /healthz, /snapshot.jpg), and HTTP GET of files under
 * cfg->web_root at "/" (index.html by default); only files whose real path
 * (symlinks resolved) is inside the web root's are served, others get 404,
 * and directories are never listed.
 *
 * Hardening: at most cfg->max_clients connections (HTTP and WebSocket) at
 * once, more get an HTTP 503 and are closed at accept; a request head must
 * arrive within TRK_WS_HEAD_TIMEOUT_S; WebSocket version 13 only (else 426);
 * an unmasked client frame closes with 1002, a message over
 * TRK_WS_MSG_CLOSE_MAX with 1009; invalid UTF-8 in text closes with 1007;
 * a close code that may not be sent is answered with 1002, never echoed.
 *
 * Lifecycle: create (memory) / start (binds, starts the thread) / shutdown
 * (close frames, then stop) or stop (joins, drops every connection) /
 * destroy. All functions are thread-safe unless noted; shutdown, stop and
 * destroy must not race with each other.
 */
#ifndef TRK_PROTOCOL_WS_H
#define TRK_PROTOCOL_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct trk_ws;

/* The answer to an HTTP GET of one of cfg->http_paths, filled in by
 * cfg->http_handler. */
struct trk_ws_http_reply {
    int status;               /* HTTP status: 200, 404, 503, ...; or
                               * TRK_WS_HTTP_LATER                            */
    const char *content_type; /* a literal, e.g. "text/plain; charset=utf-8" */
    unsigned char *body;      /* malloc'd; the server frees it (NULL: none)   */
    size_t len;
    /* Set by the server before the handler runs: */
    struct trk_ws *server; /* for trk_ws_http_answer                      */
    uint64_t request;      /* this request, for trk_ws_http_answer        */
    const char *peer;      /* the client's address, e.g. "127.0.0.1"      */
};

/* A status the handler sets to answer later, from any thread, with
 * trk_ws_http_answer(reply->server, reply->request, ...): work that would
 * hold up the service thread (a snapshot's JPEG encode) is done elsewhere
 * while the connection waits. */
#define TRK_WS_HTTP_LATER (-1)

/* Called on the service thread for a GET of one of cfg->http_paths (path is
 * that entry) that passed the token rule (http_private_paths). args are the
 * URL's query arguments as lws decodes them, each "name=value" (or "name"),
 * n_args of them. Fills *reply (or says TRK_WS_HTTP_LATER and answers with
 * trk_ws_http_answer); a status of 0 is answered with 500. Must
 * not block for long: the service thread serves every client. */
typedef void (*trk_ws_http_handler)(void *user, const char *path, const char *const *args,
                                    int n_args, struct trk_ws_http_reply *reply);

/* Called on the service thread for each valid control message that the server
 * does not answer itself (types in cfg->control_types). json is the message
 * as received (len bytes, NUL-terminated for convenience). Reply with
 * trk_ws_send_to(client_id, ...) from here or from any thread later. Must not
 * block: the service thread serves every client. */
typedef void (*trk_ws_on_message)(void *user, uint64_t client_id, const char *json, size_t len);

/* Called on the service thread when a WebSocket client that was connected
 * has gone (closed, dropped or disconnected at shutdown), after its last
 * on_message: what was kept for that client may be forgotten. Must not
 * block. */
typedef void (*trk_ws_on_close)(void *user, uint64_t client_id);

struct trk_ws_cfg {
    const char *address;          /* what to bind: an IPv4 or IPv6 address
                                   * ("127.0.0.1", "::1", "0.0.0.0") or a host name
                                   * (resolved; the first of its addresses that
                                   * binds is used); NULL or "" = every interface  */
    int port;                     /* TCP port; 0 = any free port (see trk_ws_port)   */
    const char *web_root;         /* directory served at "/"; NULL = no HTTP files   */
    int queue_len;                /* per-client result queue, 0 = default (8)        */
    trk_ws_on_message on_message; /* NULL: control messages get an
                                   * "unsupported" error                      */
    void *user;                   /* passed to on_message and on_close                */
    trk_ws_on_close on_close;     /* NULL: not told                                   */
    /* Control message types forwarded to on_message (NULL-terminated);
     * NULL = trk_msg_control_types (messages.h). Other types get an
     * "unknown_type" error. */
    const char *const *control_types;
    /* Access control: when non-NULL and non-empty, forwarded control
     * messages need this token first, either as a ?token= query on the
     * WebSocket URL or as {"type":"auth","token":...}; until then they get
     * an "unauthorized" error (results, previews, ping and subscribe still
     * flow). "auth" must be in control_types to be accepted; the server
     * answers it itself (ack with "ok":true, or "unauthorized"). */
    const char *control_token;
    /* Connections (HTTP and WebSocket) served at once; one more gets an
     * HTTP 503 and is closed. 0 = TRK_WS_MAX_CLIENTS_DEFAULT. */
    int max_clients;
    /* Control types that act with the server's own rights (trackd: saving
     * and reloading its objects file), NULL-terminated; NULL = none. With a
     * control_token they need the token like the others. Without one, only
     * a client of the server's own user or root may send them: a TCP peer
     * on this machine whose socket the kernel lists (/proc/net/tcp, tcp6) as
     * owned by that uid; anyone else, and any peer that cannot be looked up
     * (another machine), gets "unauthorized". Cached per connection. */
    const char *const *owner_types;
    /* HTTP paths answered by http_handler rather than from the web root
     * (NULL-terminated, exact paths such as "/metrics"; NULL = none). */
    const char *const *http_paths;
    trk_ws_http_handler http_handler;
    void *http_user;
    /* Of those, the ones that need the control token when there is one: as
     * a ?token= query argument or an "Authorization: Bearer TOKEN" header;
     * without it they get 401. NULL = none. */
    const char *const *http_private_paths;
    /* HTTP only: WebSocket upgrades are refused (a metrics listener). */
    bool no_websocket;
    /* > 0: the service thread asks for SCHED_FIFO at this priority (1..99),
     * so a result's write never waits behind ordinary threads; refused
     * (no CAP_SYS_NICE or RLIMIT_RTPRIO), it logs one warning and runs at
     * normal priority. 0 = normal priority. */
    int rt_priority;
    /* The application sends, besides each result, copies with positions
     * moved on (trk_ws_broadcast_predicted) to clients that subscribe with
     * "predict" ("send" or a time after it); false: such a subscribe is
     * "unsupported". */
    bool predict;
};

#define TRK_WS_MAX_CLIENTS_DEFAULT 64
#define TRK_WS_MAX_CLIENTS_LIMIT   4096 /* the table of followed sockets is larger */
/* Seconds a connection has to send its complete request head. */
#define TRK_WS_HEAD_TIMEOUT_S 5
/* Client messages over TRK_MSG_MAX_CLIENT get a "too_large" error; over this
 * the connection is closed (1009): no reason to read megabytes to drop them. */
#define TRK_WS_MSG_CLOSE_MAX (1024 * 1024)

/* Default per-client result queue length. */
#define TRK_WS_QUEUE_DEFAULT 8
/* A client's queued results are also bounded in bytes: the oldest go while
 * a new one would take them over this (the newest is always kept; a frame
 * message is bounded by the objects' frame limits, config/objects.h). */
#define TRK_WS_QUEUE_BYTES (2u << 20)

/* Answers a request whose handler said TRK_WS_HTTP_LATER; any thread, once
 * per request. Takes over reply->body (the server frees it, also when the
 * client has gone or the server has stopped: then nothing is sent). reply's
 * status must be a real one. 0 or TRK_EINVAL / TRK_ENOMEM (body freed). */
int trk_ws_http_answer(struct trk_ws *ws, uint64_t request, struct trk_ws_http_reply *reply);

/* The value of query argument name ("mask" for "mask=red") among args as
 * the http_handler gets them; "" for a bare "name"; NULL when absent. */
const char *trk_ws_http_arg(const char *const *args, int n_args, const char *name);

/* Allocates the server; nothing is bound yet. cfg is copied (strings too).
 * Returns 0 or TRK_EINVAL / TRK_ENOMEM; *out is NULL on failure. */
int trk_ws_create(const struct trk_ws_cfg *cfg, struct trk_ws **out);

/* Binds the listening socket and starts the service thread; on return clients
 * can connect (the listening socket is verified to exist). Returns 0,
 * -EADDRINUSE when the port is taken, -EADDRNOTAVAIL for an address that is
 * not local or a name that does not resolve, -EALREADY when running, or
 * another negative code; trk_ws_error then says why. Not restartable after
 * trk_ws_stop: create a new server. */
int trk_ws_start(struct trk_ws *ws);

/* Why trk_ws_start failed, for the user: the address, port and reason, e.g.
 * "cannot listen on 10.1.2.3:8080: Cannot assign requested address (not an
 * address of this machine)". "no error" when it did not fail. */
const char *trk_ws_error(const struct trk_ws *ws);

/* Whether address (as in trk_ws_cfg.address) is loopback only: every address
 * it resolves to is in 127.0.0.0/8 or is ::1 (or ::ffff:127.x.x.x). false for
 * NULL, "", wildcard addresses and names that do not resolve. */
bool trk_ws_is_loopback(const char *address);

/* The bound TCP port (useful with cfg->port == 0), or -1 before start. */
int trk_ws_port(const struct trk_ws *ws);

/* Sets the hello message (JSON, copied) that every client gets first when it
 * connects. Clients already connected do not get it again: broadcast an
 * "objects" message (TRK_WS_CONFIG) for changes. NULL clears it. */
void trk_ws_set_hello(struct trk_ws *ws, const char *json);

enum trk_ws_kind {
    TRK_WS_RESULT = 0, /* text; per-client ring of queue_len, drop-oldest     */
    TRK_WS_PREVIEW,    /* binary; newest only; only to clients subscribed      */
    TRK_WS_STATS,      /* text; newest only                                    */
    TRK_WS_STATUS,     /* text; newest only; the last one is also sent to new
                        * clients right after the hello                        */
    TRK_WS_CONFIG,     /* text (e.g. "objects"); newest only                   */
    TRK_WS_CAMERA,     /* text ("camera"); newest only, apart from "objects"  */
    TRK_WS_REPLAY,     /* text ("replay"); newest only; like STATUS, the last
                        * one is also sent to new clients after the hello    */
    TRK_WS_KIND_COUNT
};

/* Publishes one message to every connected client. data is copied. Never
 * blocks on clients: when the service thread is behind, the oldest pending
 * result (or the older message of a newest-only kind) is dropped and
 * counted. Returns 0 (also when nobody is connected: the message is dropped
 * without being copied, not counted), TRK_EINVAL or TRK_ENOMEM. */
int trk_ws_broadcast(struct trk_ws *ws, enum trk_ws_kind kind, const void *data, size_t len);

/* Latency compensation: clients subscribed with "predict" share a slot per
 * distinct time they ask for ("send": 0 s after it); a client asking for a
 * time no slot has while all are taken gets "busy". */
#define TRK_WS_PREDICT_SLOTS 4
/* A TRK_WS_RESULT for the clients of predict slot `slot`, moved on to the
 * send plus that slot's time (trk_ws_broadcast's results go to the
 * clients without predict). Same returns; TRK_EINVAL for a bad slot. */
int trk_ws_broadcast_predicted(struct trk_ws *ws, int slot, const void *data, size_t len);
/* The predict slots in use now (any thread): bit k set when slot k has
 * clients, ahead[k] its time (s after the send). 0 (the common case, no
 * lock taken) when no client predicts. */
unsigned trk_ws_predict_slots(struct trk_ws *ws, double ahead[TRK_WS_PREDICT_SLOTS]);

/* Says a TRK_WS_RESULT broadcast is likely within within_s seconds (the
 * processing thread calls it as it starts a frame): the service thread then
 * polls without sleeping until that result is handed off (and written) or
 * the time passes, so the result does not wait for the thread to wake up.
 * Costs the service thread's CPU for that time; nothing without clients.
 * 0 or TRK_EINVAL. Thread-safe. */
int trk_ws_expect(struct trk_ws *ws, double within_s);

/* Preview views: each client receives the previews of one view, 0 (the
 * plain picture) until trk_ws_set_view says otherwise. Views let clients
 * watch different pictures of the same frame (trackd: its mask views). */
#define TRK_WS_VIEWS 9

/* Publishes a TRK_WS_PREVIEW message to the subscribed clients of view
 * (0..TRK_WS_VIEWS-1; trk_ws_broadcast of a preview is view 0). Newest-only
 * per view. Same returns as trk_ws_broadcast. */
int trk_ws_broadcast_view(struct trk_ws *ws, int view, const void *data, size_t len);

/* The view client_id receives from now on (a preview of its old view that
 * is already queued for it may still go out). 0, TRK_EINVAL (view out of
 * range) or -ENOENT (no such client, e.g. it has gone). Any thread. */
int trk_ws_set_view(struct trk_ws *ws, uint64_t client_id, int view);

/* Sends one text message to one client (replies to control messages). Queued
 * behind nothing of other kinds; kept in a bounded per-client reply queue.
 * Returns 0 (also when the client has gone: the message is discarded),
 * TRK_EINVAL or TRK_ENOMEM. */
int trk_ws_send_to(struct trk_ws *ws, uint64_t client_id, const char *json, size_t len);

struct trk_ws_stats {
    int clients;               /* WebSocket clients connected now             */
    uint64_t messages_sent;    /* WebSocket messages written, all clients     */
    uint64_t messages_dropped; /* messages discarded for queue overflow       */
    uint64_t bytes_sent;       /* payload bytes written                       */
};

/* Totals since start. */
void trk_ws_get_stats(struct trk_ws *ws, struct trk_ws_stats *st);

/* Result messages' hand-off -> written delays the server keeps (the newest). */
#define TRK_WS_WRITE_SAMPLES 4096
/* For each write of a TRK_WS_RESULT message to a client, the ms from its
 * trk_ws_broadcast to lws_write returning (the service thread's wake-up,
 * fan-out and the socket write): copies those taken since *mark (the
 * newest max of them; 0 = from the start) into out, sets *mark to the
 * count now and returns how many it copied. Each reader keeps its own
 * mark. */
int trk_ws_write_delays(struct trk_ws *ws, uint64_t *mark, float *out, int max);

/* One result write's delay (trk_ws_write_delays' sample) in its parts, ms. */
struct trk_ws_write_split {
    float wake_ms; /* trk_ws_broadcast -> the service thread took it from the
                    * hand-off (its wake-up, or its next poll round)     */
    float wait_ms; /* -> this client's write began (fan-out, the writes to
                    * clients before it, a poll round for POLLOUT)       */
    float call_ms; /* -> the write call returned (the kernel's send)     */
};
/* trk_ws_write_delays' samples split in their parts, with a mark of their
 * own (the same rules). For measurements (bench/ws_handoff.c). */
int trk_ws_write_splits(struct trk_ws *ws, uint64_t *mark, struct trk_ws_write_split *out, int max);

/* Per-client counters (for the stats line and tests). */
struct trk_ws_client_stats {
    uint64_t id;   /* client id as passed to on_message           */
    char peer[64]; /* remote address                              */
    int preview;   /* 1 when the client receives previews         */
    uint64_t messages_sent, messages_dropped, bytes_sent;
};

/* Copies up to max clients' counters into out; returns how many clients there
 * are (may exceed max). */
int trk_ws_get_clients(struct trk_ws *ws, struct trk_ws_client_stats *out, int max);

/* Stops the service thread and closes every connection. Safe twice and
 * before start. */
void trk_ws_stop(struct trk_ws *ws);

/* Says goodbye, then stops: new connections are refused, each client gets
 * what is pending for it (e.g. a final "status"), then a WebSocket close frame
 * with code (1000..4999; else 1000) and reason (at most 123 bytes, cut
 * there); waits until every client has closed or timeout_s has passed (a
 * client that does not read cannot hold the caller longer), then
 * trk_ws_stop. Safe before start and after stop. */
void trk_ws_shutdown(struct trk_ws *ws, int code, const char *reason, double timeout_s);

/* Stops if needed and frees; safe on NULL and twice (sets *ws = NULL). */
void trk_ws_destroy(struct trk_ws **ws);

#ifdef __cplusplus
}
#endif
#endif
