/* Which of a name's resolved addresses trackd sends to. */
#ifndef TRK_DAEMON_NETADDR_H
#define TRK_DAEMON_NETADDR_H

#include <netdb.h>
#include <sys/socket.h>

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

#endif
