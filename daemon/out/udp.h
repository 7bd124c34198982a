/* --udp: one compact JSON datagram per frame to a unicast or multicast
 * address (PROTOCOL.md, "UDP datagrams"), sent from its own thread through
 * a trk_netq (daemon/out/netq.h), so a slow network never slows the pipeline.
 *
 * A frame whose message is longer than TRK_UDP_PAYLOAD bytes is split by
 * object into parts, each a complete JSON object with the frame's header,
 * "part" i of "parts" n and a run of consecutive objects; one object that
 * alone is longer (many blobs) goes in a part of its own, which IP then
 * fragments. */
#ifndef TRK_DAEMON_UDP_H
#define TRK_DAEMON_UDP_H

#include <stdbool.h>
#include <stddef.h>

#include "netaddr.h"

struct trk_netq;

/* Most payload bytes per datagram before a frame is split: a 1500-byte
 * Ethernet MTU less the IPv6 (40) and UDP (8) headers is 1452; 1400 leaves
 * room for a tunnel or VLAN header on the way, so no datagram is
 * fragmented. */
#define TRK_UDP_PAYLOAD 1400

struct trk_udp_cfg {
    const char *host;   /* name, IPv4 or IPv6 address (unicast or multicast) */
    int port;           /* 1..65535 */
    int ttl;            /* multicast hops, 1..255 (1: this link only)        */
    const char *iface;  /* multicast interface name; NULL: the route's       */
    const char *camera; /* the "camera" of every datagram                    */
    int max_payload;    /* split above this many bytes; 0 = TRK_UDP_PAYLOAD  */
};

/* Resolves the address, opens the socket and starts the sink. 0, TRK_EINVAL,
 * TRK_ENOMEM or -errno (-ENOENT: the host name does not resolve, -ENODEV:
 * no such interface); failures are logged with the address. */
int trk_udp_create(const struct trk_udp_cfg *cfg, struct trk_netq **out);

/* "host:port", "[v6]:port" for an IPv6 address, into buf (len bytes). */
void trk_udp_addr_text(const char *host, int port, char *buf, size_t len);

/* The datagram socket of a --udp or --ssl output: resolves cfg's host and
 * port into net (netaddr.h's trk_netaddr_dgram_open) and, for a multicast
 * address (*multicast then true), sets cfg's hops and interface. opt names
 * the option in messages ("--udp"). 0, or -errno (-ENOENT: does not
 * resolve, -ENODEV: no such interface) with the reason logged and net->fd
 * -1. */
int trk_udp_socket_open(const struct trk_udp_cfg *cfg, const char *opt,
                        struct trk_netaddr_dgram *net, bool *multicast);

#endif
