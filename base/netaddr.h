/* Which of a name's resolved addresses trackd sends to, and the datagram
 * socket the UDP and OSC outputs send on. */
#ifndef TRK_DAEMON_NETADDR_H
#define TRK_DAEMON_NETADDR_H

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The first IPv4 entry of res, else res itself: for a name with both
 * families (localhost on a stock Debian lists ::1 first) the IPv4 address,
 * which a peer bound to 127.0.0.1 or 0.0.0.0 receives; the rule --listen
 * follows too (protocol/ws.c). A peer on IPv6 only is named by its IPv6
 * address or an IPv6-only name. */
static inline const struct addrinfo *trk_addrinfo_pick(const struct addrinfo *res)
{
    for (const struct addrinfo *a = res; a; a = a->ai_next)
        if (a->ai_family == AF_INET) return a;
    return res;
}

/* A socket and the one peer it sends datagrams to. */
struct trk_netaddr_dgram {
    int fd;
    struct sockaddr_storage to;
    socklen_t to_len;
};

/* Resolves host:port (numeric or a name; trk_addrinfo_pick's choice) into
 * d->to and opens a datagram socket of that family, IPv4 or IPv6, as d->fd.
 * 0; -ENOENT when it does not resolve (*gai gets getaddrinfo's code, for
 * gai_strerror); -errno when no socket opens. d->fd is -1 on failure. */
static inline int trk_netaddr_dgram_open(struct trk_netaddr_dgram *d, const char *host, int port,
                                         int *gai)
{
    char serv[8];
    struct addrinfo hints = { .ai_socktype = SOCK_DGRAM, .ai_flags = AI_NUMERICSERV }, *ai;
    d->fd = -1;
    snprintf(serv, sizeof serv, "%d", port);
    if ((*gai = getaddrinfo(host, serv, &hints, &ai))) return -ENOENT;
    const struct addrinfo *to = trk_addrinfo_pick(ai);
    memcpy(&d->to, to->ai_addr, to->ai_addrlen);
    d->to_len = to->ai_addrlen;
    d->fd = socket(to->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int err = d->fd < 0 ? -errno : 0;
    freeaddrinfo(ai);
    return err;
}

/* Sends n bytes as one datagram to d->to (again after EINTR). 0 or -errno. */
static inline int trk_netaddr_dgram_send(const struct trk_netaddr_dgram *d, const void *data,
                                         size_t n)
{
    for (;;) {
        if (sendto(d->fd, data, n, 0, (const struct sockaddr *)&d->to, d->to_len) >= 0) return 0;
        if (errno != EINTR) return -errno;
    }
}

/* Closes the socket; safe to call twice. */
static inline void trk_netaddr_dgram_close(struct trk_netaddr_dgram *d)
{
    if (d->fd >= 0) close(d->fd);
    d->fd = -1;
}

#endif
