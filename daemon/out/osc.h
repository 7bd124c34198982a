/* --osc: Open Sound Control messages (liblo) for creative and AR tools
 * (TouchDesigner, Max, Unity, ...), sent from their own thread through a
 * trk_netq (daemon/out/netq.h). Per frame, for each object in order:
 *   found:      /trackd/<camera>/<name> f:cx f:cy i:mass
 *               then per listed blob k (0 = largest):
 *               /trackd/<camera>/<name>/blob i:k f:cx f:cy i:mass
 *   not found:  /trackd/<camera>/<name>/lost (no arguments)
 * one message per datagram, IPv4 or IPv6. In <camera> and <name> the
 * characters OSC reserves in addresses (space # * , / ? [ ] { }), '%' and
 * control characters are written %XX, so no two names share an address.
 * PROTOCOL.md, "OSC", is the document. */
#ifndef TRK_DAEMON_OSC_H
#define TRK_DAEMON_OSC_H

#include <stddef.h>

struct trk_netq;

struct trk_osc_cfg {
    const char *host;   /* name, IPv4 or IPv6 address */
    int port;           /* 1..65535 */
    const char *camera; /* <camera> in every address */
};

/* Resolves the address and starts the sink. 0, TRK_EINVAL, TRK_ENOMEM or
 * -errno (-ENOENT: the host does not resolve); failures are logged. */
int trk_osc_create(const struct trk_osc_cfg *cfg, struct trk_netq **out);

/* Writes "/trackd/<camera>/<name>" with reserved characters escaped
 * (trk_objects_escape_name) into buf (len bytes, cut to fit, never inside an
 * escape); returns its length. */
size_t trk_osc_address(char *buf, size_t len, const char *camera, const char *name);

#endif
