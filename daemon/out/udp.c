#include "udp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdbool.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define LOG_TAG "udp"
#include "cli.h"
#include "exit.h"
#include "log.h"
#include "outputs.h"
#include "netaddr.h"
#include "messages.h"
#include "netq.h"

/* The sink thread's state. */
struct udp {
    struct trk_netaddr_dgram net;
    char *camera;
    size_t max_payload;
    struct trk_buf msg;  /* the datagram being built */
    struct trk_buf one;  /* one object, to measure it */
    size_t *obj_len;     /* per unit (object, then marker): its encoded length */
    size_t len_cap;      /* obj_len's room */
    uint64_t split_seen; /* frames split so far (logged once) */
};

static void udp_close(void *ctx)
{
    struct udp *u = ctx;
    if (!u) return;
    trk_netaddr_dgram_close(&u->net);
    trk_buf_free(&u->msg);
    trk_buf_free(&u->one);
    free(u->obj_len);
    free(u->camera);
    free(u);
}

static int send_buf(struct udp *u, const struct trk_buf *b)
{
    if (b->failed) return TRK_ENOMEM;
    return trk_netaddr_dgram_send(&u->net, b->data, b->len);
}

/* One frame: the whole message when it fits, else parts of consecutive
 * objects, each filled as far as max_payload allows. */
static int udp_send(void *ctx, const struct trk_netq_frame *f)
{
    struct udp *u = ctx;
    const struct trk_frame_result *r = &f->r;
    trk_buf_reset(&u->msg);
    /* Units: the objects, then the markers (trk_msg_frame_part). */
    const int units = r->n + (int)r->n_markers;
    trk_msg_frame_part(&u->msg, r, u->camera, 1, 1, 0, units);
    if (u->msg.failed || u->msg.len <= u->max_payload) return send_buf(u, &u->msg);
    size_t whole = u->msg.len;

    /* The header's length with the longest part numbers a frame can have
     * (one part per object), so a part sized with it always fits. */
    trk_buf_reset(&u->one);
    trk_msg_frame_part(&u->one, r, u->camera, TRK_MAX_OBJECTS, TRK_MAX_OBJECTS, 0, 0);
    size_t head = u->one.len;
    if ((size_t)units > u->len_cap) {
        size_t *v = realloc(u->obj_len, (size_t)units * sizeof(*v));
        if (!v) return TRK_ENOMEM;
        u->obj_len = v;
        u->len_cap = (size_t)units;
    }
    for (int i = 0; i < units; i++) {
        trk_buf_reset(&u->one);
        if (i < r->n)
            trk_msg_frame_object(&u->one, r, i);
        else
            trk_msg_frame_marker(&u->one, r, (size_t)(i - r->n));
        if (u->one.failed) return TRK_ENOMEM;
        u->obj_len[i] = u->one.len;
    }
    /* First pass counts the parts, the second sends them: every part says
     * how many there are. */
    int parts = 0, err = 0;
    for (int pass = 0; pass < 2; pass++) {
        int part = 0;
        for (int first = 0; first < units;) {
            size_t len = head + u->obj_len[first];
            int count = 1;
            while (first + count < units && len + 1 + u->obj_len[first + count] <= u->max_payload)
                len += 1 + u->obj_len[first + count++];
            part++;
            if (pass == 1) {
                trk_buf_reset(&u->msg);
                trk_msg_frame_part(&u->msg, r, u->camera, part, parts, first, count);
                int e = send_buf(u, &u->msg);
                if (e && !err) err = e; /* the other parts still go */
            }
            first += count;
        }
        parts = part;
    }
    if (u->split_seen++ == 0)
        log_info("frame %llu is %zu bytes, over %zu: sent in %d datagrams split by object "
                 "(PROTOCOL.md, \"UDP datagrams\"); further splits are not logged",
                 (unsigned long long)r->meta.seq, whole, u->max_payload, parts);
    return err;
}

/* Multicast options: hops and the interface to send on. */
static int set_multicast(int fd, int family, const struct trk_udp_cfg *cfg, unsigned ifindex)
{
    int ttl = cfg->ttl > 0 ? cfg->ttl : 1;
    if (family == AF_INET) {
        if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof(ttl))) return -errno;
        if (ifindex) {
            struct ip_mreqn mr = { .imr_ifindex = (int)ifindex };
            if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &mr, sizeof(mr))) return -errno;
        }
    } else {
        if (setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &ttl, sizeof(ttl))) return -errno;
        if (ifindex && setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &ifindex, sizeof(ifindex)))
            return -errno;
    }
    return 0;
}

static bool is_multicast(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return IN_MULTICAST(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
    return sa->sa_family == AF_INET6 &&
           IN6_IS_ADDR_MULTICAST(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

void trk_udp_addr_text(const char *host, int port, char *buf, size_t len)
{
    bool v6 = strchr(host, ':') != NULL;
    snprintf(buf, len, "%s%s%s:%d", v6 ? "[" : "", host, v6 ? "]" : "", port);
}

int trk_udp_socket_open(const struct trk_udp_cfg *cfg, const char *opt,
                        struct trk_netaddr_dgram *net, bool *multicast)
{
    char name[300];
    trk_udp_addr_text(cfg->host, cfg->port, name, sizeof(name));
    unsigned ifindex = 0;
    net->fd = -1;
    if (cfg->iface && !(ifindex = if_nametoindex(cfg->iface))) {
        log_error("--udp-iface %s: no such network interface (ip link lists them)", cfg->iface);
        return -ENODEV;
    }
    int gai, err = trk_netaddr_dgram_open(net, cfg->host, cfg->port, &gai);
    if (err == -ENOENT) {
        log_error("%s %s: cannot resolve %s: %s", opt, name, cfg->host, gai_strerror(gai));
        return err;
    }
    const struct sockaddr *to = (const struct sockaddr *)&net->to;
    *multicast = is_multicast(to);
    if (!err && *multicast) err = set_multicast(net->fd, to->sa_family, cfg, ifindex);
    if (err) {
        log_error_err(err, "%s %s: cannot set up the socket", opt, name);
        trk_netaddr_dgram_close(net);
        return err;
    }
    if (!*multicast && (cfg->iface || cfg->ttl > 1))
        log_warn("%s %s is a unicast address: --udp-ttl and --udp-iface apply to multicast "
                 "only and are ignored",
                 opt, name);
    return 0;
}

int trk_udp_create(const struct trk_udp_cfg *cfg, struct trk_netq **out)
{
    *out = NULL;
    if (!cfg || !cfg->host || cfg->port < 1 || cfg->port > 65535) return TRK_EINVAL;
    char name[300] = "udp ";
    trk_udp_addr_text(cfg->host, cfg->port, name + 4, sizeof(name) - 4);
    struct udp *u = calloc(1, sizeof(*u));
    if (u) u->net.fd = -1;
    if (!u || !(u->camera = strdup(cfg->camera ? cfg->camera : "trackd")) ||
        !(u->obj_len = calloc(TRK_MAX_OBJECTS, sizeof(*u->obj_len)))) {
        udp_close(u);
        return TRK_ENOMEM;
    }
    u->len_cap = TRK_MAX_OBJECTS;
    size_t max_payload = cfg->max_payload > 0 ? (size_t)cfg->max_payload : TRK_UDP_PAYLOAD;
    u->max_payload = max_payload;
    bool multicast;
    int err = trk_udp_socket_open(cfg, "--udp", &u->net, &multicast);
    if (err) {
        udp_close(u);
        return err;
    }
    struct trk_netq_cfg sc = { .name = name, .send = udp_send, .close = udp_close, .ctx = u };
    if ((err = trk_netq_create(&sc, out))) { /* closes u */
        log_error_err(err, "%s: cannot start its thread", name);
        return err;
    }
    log_info("sending one JSON datagram per frame to %s (%s, split above %zu bytes)", name + 4,
             multicast ? "multicast" : "unicast", max_payload);
    return 0;
}

int trk_udp_open(const struct trk_output_env *env, struct trk_outputs *o)
{
    const struct trk_settings *s = env->s;
    if (!s->udp) return 0;
    struct trk_udp_cfg uc = { .host = s->udp_host,
                              .port = s->udp_port,
                              .ttl = s->udp_ttl,
                              .iface = s->udp_iface,
                              .camera = s->camera_name };
    struct trk_netq *sink;
    if (trk_udp_create(&uc, &sink) || trk_netq_add(o, sink)) return TRK_EX_UNAVAILABLE;
    return 0;
}
