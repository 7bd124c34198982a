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

#endif
