#include "osc.h"

#include <errno.h>
#include <lo/lo.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define LOG_TAG "osc"
#include "cli.h"
#include "exit.h"
#include "log.h"
#include "netaddr.h"
#include "objects.h" /* trk_objects_escape_name */
#include "outputs.h"
#include "netq.h"

/* Longest address: the prefix, a camera and a name (each escaped: up to
 * TRK_NAME_ESCAPED_MAX) and "/instance". */
#define ADDR_MAX (16 + 2 * TRK_NAME_ESCAPED_MAX + 16)
/* The bytes OSC 1.0 reserves in an address part; '%' is escaped too. */
#define OSC_RESERVED " #*,/?[]{}"
/* Longest message: its address and at most ten 4-byte arguments (a
 * marker with its world pose) with their type tags. */
#define MSG_MAX (ADDR_MAX + 96)

/* liblo builds and serialises the messages; they go out on our own socket,
 * IPv4 or IPv6 (through liblo 0.31 as Debian builds it, every send to an
 * IPv6 address failed). */
struct osc {
    struct trk_netaddr_dgram net;
    char *camera;
    unsigned char msg[MSG_MAX]; /* the datagram being sent */
};

static void osc_close(void *ctx)
{
    struct osc *o = ctx;
    if (!o) return;
    trk_netaddr_dgram_close(&o->net);
    free(o->camera);
    free(o);
}

size_t trk_osc_address(char *buf, size_t len, const char *camera, const char *name)
{
    if (!len) return 0;
    size_t at = (size_t)snprintf(buf, len, "/trackd/");
    if (at >= len) return len - 1;
    at += trk_objects_escape_name(camera, OSC_RESERVED, buf + at, len - at);
    if (at + 1 < len) buf[at++] = '/';
    return at + trk_objects_escape_name(name, OSC_RESERVED, buf + at, len - at);
}

static int32_t clamp_mass(uint64_t mass)
{
    return mass > INT32_MAX ? INT32_MAX : (int32_t)mass;
}

/* Appends a shape's arguments (PROTOCOL.md, OSC: after the older ones,
 * so patches that read those are unchanged): f orientation, f major, f
 * minor. */
static void add_shape(lo_message m, double orientation, double major, double minor)
{
    lo_message_add_float(m, (float)orientation);
    lo_message_add_float(m, (float)major);
    lo_message_add_float(m, (float)minor);
}

/* Sends m to path and frees it; 0 or -errno. */
static int send_msg(struct osc *o, const char *path, lo_message m)
{
    if (!m) return TRK_ENOMEM;
    size_t n = lo_message_length(m, path);
    int err = n <= sizeof o->msg && lo_message_serialise(m, path, o->msg, &n)
                  ? trk_netaddr_dgram_send(&o->net, o->msg, n)
                  : TRK_ENOMEM;
    lo_message_free(m);
    return err;
}

/* One object's messages: its centroid or /lost, then its blobs. */
static int send_object(struct osc *o, char *path, size_t at, size_t cap,
                       const struct trk_frame_result *r, const struct trk_result_object *ob)
{
    lo_message m = lo_message_new();
    if (!ob->found) {
        snprintf(path + at, cap - at, "/lost");
        return send_msg(o, path, m);
    }
    if (m) {
        lo_message_add_float(m, (float)ob->c.cx);
        lo_message_add_float(m, (float)ob->c.cy);
        lo_message_add_int32(m, clamp_mass(ob->r.mass));
        add_shape(m, ob->c.shape.orientation, ob->c.shape.major, ob->c.shape.minor);
    }
    int e = send_msg(o, path, m);
    snprintf(path + at, cap - at, "/blob");
    for (int k = 0; k < ob->n_blobs; k++) {
        const struct trk_blob *b = &r->blobs[ob->blob0 + (size_t)k];
        const struct trk_point *c = &r->blob_c[ob->blob0 + (size_t)k];
        if (!b->mass) continue; /* never empty; never divide by 0 all the same */
        lo_message bm = lo_message_new();
        if (bm) {
            lo_message_add_int32(bm, k);
            lo_message_add_float(bm, (float)c->cx);
            lo_message_add_float(bm, (float)c->cy);
            lo_message_add_int32(bm, clamp_mass(b->mass));
            add_shape(bm, c->shape.orientation, c->shape.major, c->shape.minor);
        }
        int be = send_msg(o, path, bm);
        if (be && !e) e = be;
    }
    return e;
}

/* The frame's markers: one message each to /trackd/<camera>/<pattern>/marker
 * (PROTOCOL.md, "OSC"), coasting ones included (lost > 0). */
static int send_markers(struct osc *o, const struct trk_frame_result *r)
{
    char path[ADDR_MAX + 8];
    int err = 0;
    for (size_t k = 0; k < r->n_markers; k++) {
        const struct trk_result_marker *x = &r->markers[k];
        const struct trk_marker *m = &x->m;
        if (m->pattern >= r->n_patterns) continue;
        size_t at = trk_osc_address(path, ADDR_MAX, o->camera, r->patterns[m->pattern].name);
        snprintf(path + at, sizeof(path) - at, "/marker");
        lo_message mm = lo_message_new();
        if (mm) {
            lo_message_add_int32(mm, m->id);
            lo_message_add_int32(mm, m->track_id > INT32_MAX ? INT32_MAX : (int32_t)m->track_id);
            lo_message_add_float(mm, (float)m->cx);
            lo_message_add_float(mm, (float)m->cy);
            lo_message_add_float(mm, (float)m->heading);
            lo_message_add_float(mm, (float)m->confidence);
            lo_message_add_int32(mm, m->lost > INT32_MAX ? INT32_MAX : (int32_t)m->lost);
            if (x->world) {
                lo_message_add_float(mm, (float)x->wx);
                lo_message_add_float(mm, (float)x->wy);
                lo_message_add_float(mm, (float)x->wheading);
            }
        }
        int e = send_msg(o, path, mm);
        if (e && !err) err = e;
    }
    return err;
}

static int osc_send(void *ctx, const struct trk_netq_frame *f)
{
    struct osc *o = ctx;
    const struct trk_frame_result *r = &f->r;
    char path[ADDR_MAX + 8];
    int err = 0;
    for (int i = 0; i < r->n; i++) {
        const struct trk_result_object *ob = &r->obj[i];
        size_t at = trk_osc_address(path, ADDR_MAX, o->camera, r->defs[i].name);
        int e = send_object(o, path, at, sizeof(path), r, ob);
        /* Tracked objects: one message per instance, seen or coasting
         * (lost > 0: the predicted position, mass 0). */
        snprintf(path + at, sizeof(path) - at, "/instance");
        for (int k = 0; k < ob->n_inst; k++) {
            const struct trk_instance *x = &r->inst[ob->inst0 + (size_t)k];
            lo_message im = lo_message_new();
            if (im) {
                lo_message_add_int32(im, x->id > INT32_MAX ? INT32_MAX : (int32_t)x->id);
                lo_message_add_float(im, (float)x->cx);
                lo_message_add_float(im, (float)x->cy);
                lo_message_add_int32(im, x->lost ? 0 : clamp_mass(x->blob.mass));
                lo_message_add_int32(im, x->lost > INT32_MAX ? INT32_MAX : (int32_t)x->lost);
                add_shape(im, x->orientation, x->major, x->minor);
                lo_message_add_float(im, x->rate ? (float)x->vtheta : 0.0f);
            }
            int ie = send_msg(o, path, im);
            if (ie && !e) e = ie;
        }
        if (e && !err) err = e; /* the other objects still go */
    }
    int e = send_markers(o, r);
    return err ? err : e;
}

int trk_osc_create(const struct trk_osc_cfg *cfg, struct trk_netq **out)
{
    *out = NULL;
    if (!cfg || !cfg->host || cfg->port < 1 || cfg->port > 65535) return TRK_EINVAL;
    char name[300];
    snprintf(name, sizeof(name), "osc %s%s%s:%d", strchr(cfg->host, ':') ? "[" : "", cfg->host,
             strchr(cfg->host, ':') ? "]" : "", cfg->port);
    struct osc *o = calloc(1, sizeof(*o));
    if (o) o->net.fd = -1;
    if (!o || !(o->camera = strdup(cfg->camera ? cfg->camera : "trackd"))) {
        osc_close(o);
        return TRK_ENOMEM;
    }
    /* Resolved here, once, so a bad name fails the start with a clear
     * message. */
    int gai, err = trk_netaddr_dgram_open(&o->net, cfg->host, cfg->port, &gai);
    if (err) {
        if (err == -ENOENT)
            log_error("--osc %s: cannot resolve %s: %s", name + 4, cfg->host, gai_strerror(gai));
        else
            log_error_err(err, "--osc %s: cannot open a socket", name + 4);
        osc_close(o);
        return err;
    }
    struct trk_netq_cfg sc = { .name = name, .send = osc_send, .close = osc_close, .ctx = o };
    err = trk_netq_create(&sc, out); /* closes o on failure */
    if (err) {
        log_error_err(err, "%s: cannot start its thread", name);
        return err;
    }
    char addr[ADDR_MAX];
    trk_osc_address(addr, sizeof(addr), cfg->camera ? cfg->camera : "trackd", "<name>");
    log_info("sending OSC messages %s ... per object and frame to %s", addr, name + 4);
    return 0;
}

int trk_osc_open(const struct trk_output_env *env, struct trk_outputs *o)
{
    const struct trk_settings *s = env->s;
    if (!s->osc) return 0;
    struct trk_osc_cfg oc = { .host = s->osc_host, .port = s->osc_port, .camera = s->camera_name };
    struct trk_netq *sink;
    if (trk_osc_create(&oc, &sink) || trk_netq_add(o, sink)) return TRK_EX_UNAVAILABLE;
    return 0;
}
