/* trackd WebSocket + HTTP server on libwebsockets 4.1. See ws.h; its parts
 * are listed in ws_int.h. This file: the lifecycle (create, start, stop,
 * shutdown, destroy), the service thread, the lws callback, which hands each
 * reason to the part it concerns, the connections and the client list, and
 * the server's counts.
 *
 * Threads and ownership:
 *   - Producer threads (pipeline, preview encoder, stats, control replies)
 *     call trk_ws_broadcast / trk_ws_send_to. They touch only `struct
 *     handoff` under ws->lock, then call lws_cancel_service() (the one lws
 *     call that is safe from other threads).
 *   - The service thread runs lws_service(). In EVENT_WAIT_CANCELLED it takes
 *     everything out of the hand-off under the lock, and fans it out to the
 *     per-client queues (owned by the service thread, no lock), writes each
 *     client's next message at once when lws holds nothing of that client's
 *     unsent, and asks for WRITEABLE for the rest; each WRITEABLE writes one
 *     message. While it spins (trk_ws_expect) it looks at the hand-off each
 *     poll round and producers do not wake it.
 *   - The client list is changed only on the service thread, under ws->lock
 *     so trk_ws_get_clients can read it from elsewhere.
 *
 * Messages are refcounted: one copy of the bytes however many clients get
 * them. Counts are atomics so stats can be read from any thread.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "trk_clock.h"
#include "trk_error.h"
#define LOG_TAG "ws"
#include "log_hook.h"
#include "ws_guard.h"
#include "ws_int.h"

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

/* ------------------------------------------------------ frames, paths */

static bool uri_is_ws_path(struct lws *wsi)
{
    char uri[64];
    int n = lws_hdr_copy(wsi, uri, sizeof uri, WSI_TOKEN_GET_URI);
    return n > 0 && strcmp(uri, WS_PATH) == 0;
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

/* ------------------------------------------------------- connections */

/* Service thread: connection fd was just accepted, nothing read yet: the
 * cheapest moment to refuse one too many (1). */
static int conn_accept(struct trk_ws *ws, int fd)
{
    if (atomic_load(&ws->n_conns) >= ws->max_clients) {
        trk_ws_http_refuse_busy(ws, fd);
        return 1;
    }
    ws->accepted_fd = fd;
    trk_ws_guard_add(fd);
    return 0;
}

/* Service thread, at WSI_CREATE: the connection just accepted (h2 streams
 * have no accept: not counted). Remembered by wsi: lws has no per-wsi field
 * of ours that survives adoption, and at WSI_DESTROY the fd is already gone. */
static int conn_created(struct trk_ws *ws, struct lws *wsi)
{
    if (ws->accepted_fd < 0) return 0;
    for (int i = 0; i < ws->max_clients; i++)
        if (!ws->conns[i].wsi) {
            ws->conns[i] = (struct conn){ wsi, ws->accepted_fd, 0 };
            atomic_fetch_add(&ws->n_conns, 1);
            break;
        }
    ws->accepted_fd = -1;
    return 0;
}

static int conn_destroyed(struct trk_ws *ws, struct lws *wsi)
{
    for (int i = 0; i < ws->max_clients; i++)
        if (ws->conns[i].wsi == wsi) {
            trk_ws_guard_remove(ws->conns[i].fd);
            ws->conns[i] = (struct conn){ 0 }; /* free; a late answer finds no one */
            atomic_fetch_sub(&ws->n_conns, 1);
            break;
        }
    return 0;
}

/* Service thread, at HTTP_CONFIRM_UPGRADE: whether a WebSocket upgrade asks
 * for a version other than 13. */
static bool wrong_version(struct lws *wsi, const char *upgrade)
{
    char v[8];
    return upgrade && !strcasecmp(upgrade, "websocket") &&
           (lws_hdr_copy(wsi, v, sizeof v, WSI_TOKEN_VERSION) != 2 || strcmp(v, "13"));
}

/* Service thread, at FILTER_PROTOCOL_CONNECTION: WebSocket only at /ws
 * (other paths are for files), and no new clients once the server says
 * goodbye (trk_ws_shutdown). */
static bool ws_refused(struct trk_ws *ws, struct lws *wsi)
{
    if (ws->no_websocket || !uri_is_ws_path(wsi)) return true;
    pthread_mutex_lock(&ws->lock);
    bool refuse = ws->closing;
    pthread_mutex_unlock(&ws->lock);
    return refuse;
}

/* Service thread, at WS_PEER_INITIATED_CLOSE: lws answers a close by
 * echoing its payload p; it already turns most codes that may not be sent
 * into 1002, but not 5000 and up. */
static int peer_close(unsigned char *p, size_t len)
{
    if (len == 1) return -1; /* not even a code: hang up */
    if (len >= 2 && !close_code_ok((unsigned)p[0] << 8 | p[1])) {
        p[0] = LWS_CLOSE_STATUS_PROTOCOL_ERR >> 8;
        p[1] = LWS_CLOSE_STATUS_PROTOCOL_ERR & 0xff;
    }
    return 0;
}

/* ------------------------------------------------------------- clients */

/* Service thread: connection wsi became WebSocket client c: its id, rights
 * and queues; it joins the client list with the hello and the last status
 * pending. -1 (hang up) when its queue cannot be allocated. */
static int client_established(struct trk_ws *ws, struct client *c, struct lws *wsi)
{
    c->wsi = wsi;
    c->fd = lws_get_socket_fd(wsi);
    trk_ws_guard_upgraded(c->fd, wsi);
    c->id = atomic_fetch_add(&ws->next_client_id, 1) + 1;
    atomic_store(&c->preview_on, true);
    c->predict_slot = -1;
    c->authed = !ws->token;
    c->owner = -1;
    if (ws->token) { /* ws://host/ws?token=... */
        char arg[256];
        const char *v = lws_get_urlarg_by_name(wsi, "token=", arg, (int)sizeof arg);
        if (v && trk_ws_token_equal(v, strlen(v), ws->token)) c->authed = true;
    }
    if (trk_ws_client_init(ws, c)) return -1;
    if (lws_get_peer_simple(wsi, c->peer, sizeof c->peer) == NULL)
        snprintf(c->peer, sizeof c->peer, "?");
    pthread_mutex_lock(&ws->lock);
    c->hello = msg_ref(ws->hello);
    c->slot[TRK_WS_STATUS] = msg_ref(ws->last_status);
    c->slot[TRK_WS_REPLAY] = msg_ref(ws->last_replay);
    c->next = ws->clients;
    ws->clients = c;
    c->established = true;
    /* Let in just before trk_ws_shutdown: it says goodbye too. */
    c->closing = ws->closing;
    pthread_mutex_unlock(&ws->lock);
    atomic_fetch_add(&ws->n_clients, 1);
    log_debug("client %llu connected from %s", (unsigned long long)c->id, c->peer);
    if (trk_ws_client_pending(c) || c->closing || trk_ws_guard_unmasked(c->fd))
        lws_callback_on_writable(wsi);
    return 0;
}

/* Service thread: established client c has gone: off the list, its queues
 * released, the daemon told. */
static void client_closed(struct trk_ws *ws, struct client *c)
{
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
    trk_ws_predict_join(ws, c, false, 0);
    trk_ws_client_clear(c);
    if (ws->on_close) ws->on_close(ws->user, c->id);
    log_debug("client %llu disconnected (%llu sent, %llu dropped)", (unsigned long long)c->id,
              (unsigned long long)atomic_load(&c->sent),
              (unsigned long long)atomic_load(&c->dropped));
}

/* ------------------------------------------------------- lws callback */

/* Every lws event of the server, on the service thread: each reason to the
 * part it concerns. */
static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len)
{
    struct trk_ws *ws = lws_context_user(lws_get_context(wsi));
    struct client *c = user;

    switch (reason) {
    case LWS_CALLBACK_FILTER_NETWORK_CONNECTION: return conn_accept(ws, (int)(intptr_t)in);

    case LWS_CALLBACK_WSI_CREATE: return conn_created(ws, wsi);

    case LWS_CALLBACK_WSI_DESTROY: return conn_destroyed(ws, wsi);

    case LWS_CALLBACK_FILTER_HTTP_CONNECTION:
        /* A file request, before the mount opens anything. */
        if (trk_ws_http_filter(ws, wsi, in, len)) return -1;
        break;

    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
        if (wrong_version(wsi, in)) return trk_ws_http_refuse_version(wsi);
        break;

    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
        if (c) c->peer_closed = true; /* no more writes at hand-off */
        return peer_close(in, len);

    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
        if (ws_refused(ws, wsi)) return 1;
        break;

    case LWS_CALLBACK_ESTABLISHED:
        if (client_established(ws, c, wsi)) return -1;
        break;

    case LWS_CALLBACK_CLOSED:
        if (c->established) client_closed(ws, c);
        break;

    case LWS_CALLBACK_SERVER_WRITEABLE:
        if (!c->established) break;
        if (trk_ws_guard_unmasked(c->fd))
            return close_with(wsi, LWS_CLOSE_STATUS_PROTOCOL_ERR, "unmasked frame");
        if (trk_ws_client_write(ws, c)) return -1;
        break;

    case LWS_CALLBACK_RECEIVE:
        if (!c->established) break;
        if (trk_ws_guard_unmasked(c->fd))
            return close_with(wsi, LWS_CLOSE_STATUS_PROTOCOL_ERR, "unmasked frame");
        if (!trk_ws_client_receive(ws, c, in, len))
            return close_with(wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, "message too large");
        break;

    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
        if (ws) trk_ws_drain(ws);
        break;

    case LWS_CALLBACK_HTTP: return trk_ws_http_request(ws, wsi, c);

    case LWS_CALLBACK_HTTP_WRITEABLE:
        if (c && c->http_body) return trk_ws_http_write_more(wsi, c);
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
    trk_ws_handoff_clear(&ws->h); /* its bounds */
    if (!(ws->conns = calloc((size_t)ws->max_clients, sizeof *ws->conns))) goto nomem;
    if (cfg->address && *cfg->address && !(ws->address = strdup(cfg->address))) goto nomem;
    if (cfg->web_root && !(ws->web_root = strdup(cfg->web_root))) goto nomem;
    if (cfg->control_token && *cfg->control_token && !(ws->token = strdup(cfg->control_token)))
        goto nomem;
    if (dup_list(cfg->owner_types, &ws->owner_types) ||
        dup_list(cfg->http_paths, &ws->http_paths) ||
        dup_list(cfg->http_private_paths, &ws->http_private))
        goto nomem;
    ws->http_handler = cfg->http_handler;
    ws->http_user = cfg->http_user;
    ws->no_websocket = cfg->no_websocket;
    ws->rt_priority = cfg->rt_priority;
    ws->predict_ok = cfg->predict;
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

/* The one protocol, WebSocket and HTTP alike, served by callback. */
static void set_protocols(struct trk_ws *ws)
{
    ws->protocols[0] = (struct lws_protocols){
        .name = WS_SUBPROTOCOL,
        .callback = callback,
        .per_session_data_size = sizeof(struct client),
        .rx_buffer_size = RX_CHUNK,
        .tx_packet_size = TX_PACKET,
    };
    /* protocols[0] doubles as the default: a client that asks for no
     * subprotocol is bound to it, so any WebSocket library can connect. */
    memset(&ws->protocols[1], 0, sizeof ws->protocols[1]);
}

/* The lws context, without a listener yet (trk_ws_listen adds the vhost). */
static int create_context(struct trk_ws *ws)
{
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
        trk_ws_set_why(ws, "cannot create the libwebsockets context");
        return TRK_ENOMEM;
    }
    return 0;
}

/* A start that failed after create_context: back to no context. */
static void drop_context(struct trk_ws *ws)
{
    lws_context_destroy(ws->ctx);
    ws->ctx = NULL;
    ws->vhost = NULL;
    ws->bound_port = -1;
}

/* The service thread; producers may wake it from now on. 0 or -errno. */
static int start_thread(struct trk_ws *ws)
{
    pthread_mutex_lock(&ws->lock);
    ws->running = true;
    pthread_mutex_unlock(&ws->lock);
    atomic_store(&ws->stopping, false);
    int rc = pthread_create(&ws->thread, NULL, service_main, ws);
    if (rc) {
        pthread_mutex_lock(&ws->lock);
        ws->running = false;
        pthread_mutex_unlock(&ws->lock);
        return -rc;
    }
    ws->thread_started = true;
    return 0;
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
    set_protocols(ws);
    const struct lws_http_mount *mounts;
    int err = trk_ws_http_mounts(ws, &mounts);
    if (err) return err;
    struct sockaddr_storage sa;
    char numeric[INET6_ADDRSTRLEN + 8];
    err = trk_ws_pick_address(ws, &sa, numeric, sizeof numeric);
    if (!err) err = create_context(ws);
    if (err) return err;
    err = trk_ws_listen(ws, &sa, numeric, mounts);
    if (!err) err = start_thread(ws);
    if (err) {
        drop_context(ws);
        return err;
    }
    char where[300];
    trk_ws_host_port(numeric[0] ? numeric : NULL, ws->bound_port, where, sizeof where);
    log_debug("listening on %s", where);
    return 0;
}

int trk_ws_port(const struct trk_ws *ws)
{
    return ws ? ws->bound_port : -1;
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
    trk_ws_handoff_clear(&ws->h);
    struct answer *answers = ws->answers;
    ws->answers = NULL;
    pthread_mutex_unlock(&ws->lock);
    trk_ws_http_answers_free(answers);
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
    trk_ws_handoff_clear(&ws->h);
    msg_unref(&ws->hello);
    msg_unref(&ws->last_status);
    msg_unref(&ws->last_replay);
    pthread_mutex_destroy(&ws->lock);
    free(ws->address);
    free(ws->token);
    free_list(&ws->owner_types);
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
