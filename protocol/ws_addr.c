/* Where the server listens (see ws_int.h): the configured address resolved
 * and checked by binding it first (lws takes only numeric addresses and may
 * go on without a listener when it cannot bind), the vhost that listens
 * there and the check that its socket exists, the texts that say why it
 * could not, and trk_ws_is_loopback.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ws_int.h"

void trk_ws_set_why(struct trk_ws *ws, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ws->why, sizeof ws->why, fmt, ap);
    va_end(ap);
}

/* "HOST:PORT" for messages, IPv6 literals in brackets. */
void trk_ws_host_port(const char *host, int port, char *out, size_t len)
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
int trk_ws_pick_address(struct trk_ws *ws, struct sockaddr_storage *out, char *numeric,
                        size_t numeric_len)
{
    char where[300];
    trk_ws_host_port(ws->address, ws->port, where, sizeof where);
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
        if (err)
            trk_ws_set_why(ws, "cannot listen on %s: %s%s", where, strerror(-err), bind_hint(err));
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
        trk_ws_set_why(ws, "cannot listen on %s: cannot resolve %s: %s", where, ws->address,
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
    if (err) trk_ws_set_why(ws, "cannot listen on %s: %s%s", where, strerror(-err), bind_hint(err));
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

int trk_ws_listen(struct trk_ws *ws, const struct sockaddr_storage *sa, const char *numeric,
                  const struct lws_http_mount *mounts)
{
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = ws->port;
    info.iface = numeric[0] ? numeric : NULL;
    info.protocols = ws->protocols;
    info.mounts = mounts;
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
    if (sa->ss_family == AF_INET) info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
    char where[300];
    trk_ws_host_port(ws->address, ws->port, where, sizeof where);
    ws->vhost = lws_create_vhost(ws->ctx, &info);
    int port = ws->vhost ? lws_get_vhost_listen_port(ws->vhost) : -1;
    if (!ws->vhost || port <= 0 || !listener_exists(sa, port)) {
        /* Lost a race for the port since pick_address, or lws failed. */
        int err = ws->vhost ? -EIO
                            : try_bind((const struct sockaddr *)sa,
                                       sa->ss_family == AF_INET ? sizeof(struct sockaddr_in)
                                                                : sizeof(struct sockaddr_in6));
        if (!err) err = -EIO;
        trk_ws_set_why(ws, "cannot listen on %s: %s%s", where,
                       err == -EIO ? "libwebsockets created no listening socket" : strerror(-err),
                       bind_hint(err));
        ws->vhost = NULL;
        return err;
    }
    ws->bound_port = port;
    return 0;
}
