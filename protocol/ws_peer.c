/* Who a client is (see ws_int.h): the control token compared in constant
 * time, and, for a connection from this machine, the user of the process at
 * its other end, read from the kernel's socket tables (/proc/net/tcp, tcp6):
 * without a token, only trackd's own user (or root) may send the control
 * messages that act with the server's rights (owner_types).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ws_int.h"

bool trk_ws_token_equal(const char *a, size_t alen, const char *b)
{
    size_t blen = strlen(b);
    unsigned diff = alen != blen;
    for (size_t i = 0; i < alen; i++)
        diff |= (unsigned char)a[i] ^ (unsigned char)b[blen ? i % blen : 0];
    return diff == 0;
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
bool trk_ws_peer_is_owner(struct client *c)
{
    if (c->owner < 0) {
        long uid = peer_uid(lws_get_socket_fd(c->wsi));
        c->owner = uid >= 0 && ((uid_t)uid == geteuid() || uid == 0);
    }
    return c->owner == 1;
}
