/* The server's HTTP side (see ws_int.h): the mounts (the web root's files,
 * one callback mount per HTTP endpoint), the check that a file served is
 * inside the web root, the endpoints' requests handed to the daemon's
 * http_handler with their query and token checked, answers now or later
 * (trk_ws_http_answer) written in pieces, and the answers that refuse a
 * connection (503: too many; 426: not WebSocket version 13).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "trk_clock.h"
#include "trk_error.h"
#define LOG_TAG "ws"
#include "log_hook.h"
#include "ws_int.h"

/* An http_handler answer is written in pieces of this size, one per
 * HTTP_WRITEABLE, so a large snapshot does not hold up other clients. */
#define HTTP_CHUNK 16384
/* Query arguments handed to the http_handler: at most this many, each cut
 * to HTTP_ARG_MAX - 1 bytes. */
#define HTTP_ARGS    16
#define HTTP_ARG_MAX 256

/* ------------------------------------------------------------- mounts */

int trk_ws_http_mounts(struct trk_ws *ws, const struct lws_http_mount **first)
{
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
    *first = n_routes ? ws->route_mounts : ws->web_root ? &ws->mount : NULL;
    return 0;
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

/* -------------------------------------------------- HTTP endpoints */

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
    if (t && trk_ws_token_equal(t, strlen(t), ws->token)) return true;
    int n = lws_hdr_copy(wsi, v, sizeof v, WSI_TOKEN_HTTP_AUTHORIZATION);
    return n > 7 && !strncasecmp(v, "Bearer ", 7) &&
           trk_ws_token_equal(v + 7, strlen(v + 7), ws->token);
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
int trk_ws_http_write_more(struct lws *wsi, struct client *c)
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
int trk_ws_http_request(struct trk_ws *ws, struct lws *wsi, struct client *c)
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

int trk_ws_http_filter(struct trk_ws *ws, struct lws *wsi, const char *uri, size_t len)
{
    if (ws->web_root && !is_route(ws, uri, len) && !path_allowed(ws, uri, len)) {
        lws_return_http_status(wsi, HTTP_STATUS_NOT_FOUND, NULL);
        return -1;
    }
    return 0;
}

/* -------------------------------------------------- answers given later */

void trk_ws_http_answers_free(struct answer *a)
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
void trk_ws_http_deliver(struct trk_ws *ws, struct answer *a)
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
    trk_ws_http_answers_free(a);
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
    trk_ws_http_answers_free(a); /* stopped: no one to answer */
    return 0;
}

/* ------------------------------------------------------------ refusals */

/* Service thread: connection fd is one too many. It gets a 503 before the
 * close, so a client (and its user) knows why. What it sent is read first:
 * closing with unread data resets the connection, which may discard the
 * answer before the client reads it. */
void trk_ws_http_refuse_busy(struct trk_ws *ws, int fd)
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
int trk_ws_http_refuse_version(struct lws *wsi)
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
