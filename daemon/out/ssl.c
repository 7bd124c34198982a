#include "ssl.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOG_TAG "ssl"
#include "cli.h"
#include "exit.h"
#include "log.h"
#include "objects.h"
#include "outputs.h"
#include "trk_clock.h"
#include "udp.h"

static int find_object(const struct trk_object_def *defs, int n, const char *name)
{
    for (int i = 0; name && i < n; i++)
        if (!strcmp(defs[i].name, name)) return i;
    return -1;
}

static void fill_balls(struct trk_ssl_frame *f, const struct trk_ssl_map *m,
                       const struct trk_frame_result *r)
{
    f->det.n_balls = 0;
    int i = find_object(r->defs, r->n, m->ball);
    if (i < 0) return;
    const struct trk_result_object *o = &r->obj[i];
    int n = o->n_blobs < TRK_MAX_BLOBS ? o->n_blobs : TRK_MAX_BLOBS;
    for (int k = 0; k < n; k++) {
        const struct trk_blob *b = &r->blobs[o->blob0 + (size_t)k];
        const struct trk_point *c = &r->blob_c[o->blob0 + (size_t)k];
        if (!c->world || !b->mass) continue;
        f->balls[f->det.n_balls++] = (struct trk_ssl_ball){
            .confidence = (float)((double)b->mass / (double)r->blobs[o->blob0].mass),
            .area = b->mass > UINT32_MAX ? UINT32_MAX : (uint32_t)b->mass,
            .x = (float)(c->wx * m->mm_per_unit),
            .y = (float)(c->wy * m->mm_per_unit),
            .pixel_x = (float)c->cx,
            .pixel_y = (float)c->cy,
        };
    }
    if (n == 0 && o->found && o->c.world)
        f->balls[f->det.n_balls++] = (struct trk_ssl_ball){
            .confidence = 1,
            .area = o->r.mass > UINT32_MAX ? UINT32_MAX : (uint32_t)o->r.mass,
            .x = (float)(o->c.wx * m->mm_per_unit),
            .y = (float)(o->c.wy * m->mm_per_unit),
            .pixel_x = (float)o->c.cx,
            .pixel_y = (float)o->c.cy,
        };
}

/* The team of marker k when it goes out as a robot, else TRK_TEAM_NONE. */
static enum trk_pattern_team robot_team(const struct trk_frame_result *r, size_t k)
{
    const struct trk_result_marker *rm = &r->markers[k];
    if (rm->m.lost || !rm->world || rm->m.id < 0 || !r->patterns || rm->m.pattern >= r->n_patterns)
        return TRK_TEAM_NONE;
    return r->patterns[rm->m.pattern].team;
}

/* Appends the robots of team t; *n: robots so far. */
static void fill_team(struct trk_ssl_frame *f, const struct trk_ssl_map *m,
                      const struct trk_frame_result *r, enum trk_pattern_team t, size_t *n)
{
    for (size_t k = 0; k < r->n_markers; k++) {
        if (robot_team(r, k) != t) continue;
        const struct trk_result_marker *rm = &r->markers[k];
        f->robots[(*n)++] = (struct trk_ssl_robot){
            .confidence = (float)rm->m.confidence,
            .robot_id = (uint32_t)rm->m.id,
            .x = (float)(rm->wx * m->mm_per_unit),
            .y = (float)(rm->wy * m->mm_per_unit),
            /* remainder: [-180, 180] */
            .orientation = (float)(remainder(rm->wheading, 360.0) * (M_PI / 180.0)),
            .pixel_x = (float)rm->m.cx,
            .pixel_y = (float)rm->m.cy,
            .height = (float)(r->patterns[rm->m.pattern].height * m->mm_per_unit),
            .has_height = true,
        };
    }
}

int trk_ssl_frame_fill(struct trk_ssl_frame *f, const struct trk_ssl_map *m,
                       const struct trk_frame_result *r, double t_capture, double t_sent)
{
    size_t n_robots = 0;
    for (size_t k = 0; k < r->n_markers; k++)
        n_robots += robot_team(r, k) != TRK_TEAM_NONE;
    if (n_robots > f->robots_cap) {
        struct trk_ssl_robot *v = realloc(f->robots, n_robots * sizeof(*v));
        if (!v) return TRK_ENOMEM;
        f->robots = v;
        f->robots_cap = n_robots;
    }
    f->det = (struct trk_ssl_detection){
        .frame_number = (uint32_t)r->meta.seq,
        .t_capture = t_capture,
        .t_sent = t_sent,
        .camera_id = m->camera_id,
        .balls = f->balls,
    };
    fill_balls(f, m, r);
    size_t n = 0;
    fill_team(f, m, r, TRK_TEAM_YELLOW, &n);
    f->det.n_yellow = n;
    fill_team(f, m, r, TRK_TEAM_BLUE, &n);
    f->det.n_blue = n - f->det.n_yellow;
    f->det.yellow = f->robots;
    f->det.blue = f->robots ? f->robots + f->det.n_yellow : NULL;
    return 0;
}

void trk_ssl_frame_free(struct trk_ssl_frame *f)
{
    free(f->robots);
    f->robots = NULL;
    f->robots_cap = 0;
}

/* The unit quaternion of rotation matrix m (row-major), scalar last:
 * whichever of 4 q3^2 = 1 + trace, 4 q0^2 = 1 + m00 - m11 - m22, ... is
 * largest gives the first component by a square root (no cancellation),
 * the others from the off-diagonal sums and differences. q3 >= 0. */
static void quat_of(const double m[9], double q[4])
{
    double d[4] = { 1 + m[0] - m[4] - m[8], 1 - m[0] + m[4] - m[8], 1 - m[0] - m[4] + m[8],
                    1 + m[0] + m[4] + m[8] };
    int k = 0;
    for (int i = 1; i < 4; i++)
        if (d[i] > d[k]) k = i;
    double r = sqrt(d[k]), h = 0.5 / r;
    /* m[i*3+j] - m[j*3+i]: the skew part, 4 q3 (q0, q1, q2); sums: 4 qi qj. */
    double w4[3] = { m[7] - m[5], m[2] - m[6], m[3] - m[1] };
    double s01 = m[1] + m[3], s02 = m[2] + m[6], s12 = m[5] + m[7];
    if (k == 3) {
        q[3] = 0.5 * r;
        for (int i = 0; i < 3; i++)
            q[i] = w4[i] * h;
    } else {
        double v[3];
        v[k] = 0.5 * r;
        int a = (k + 1) % 3, b = (k + 2) % 3;
        double sab[3][3] = { { 0, s01, s02 }, { s01, 0, s12 }, { s02, s12, 0 } };
        v[a] = sab[k][a] * h;
        v[b] = sab[k][b] * h;
        q[0] = v[0], q[1] = v[1], q[2] = v[2];
        q[3] = w4[k] * h;
    }
    if (q[3] < 0)
        for (int i = 0; i < 4; i++)
            q[i] = -q[i];
}

bool trk_ssl_calib_fill(struct trk_ssl_calib *out, const struct trk_calib *c, double mm_per_unit,
                        uint32_t camera_id, int width, int height)
{
    if (!c->pose || !(mm_per_unit > 0) || !(c->centre[2] > 0)) return false;
    double q[4];
    quat_of(c->rot, q);
    struct trk_ssl_calib k = {
        .camera_id = camera_id,
        .focal_length = (float)(0.5 * (c->fx + c->fy)),
        .principal_point_x = (float)c->cx,
        .principal_point_y = (float)c->cy,
        .distortion = (float)(c->n_dist ? c->dist[0] : 0),
        .width = width > 0 ? (uint32_t)width : 0,
        .height = height > 0 ? (uint32_t)height : 0,
    };
    for (int i = 0; i < 4; i++)
        k.q[i] = (float)q[i];
    for (int i = 0; i < 3; i++) {
        k.t[i] = (float)(c->tvec[i] * mm_per_unit);
        k.world[i] = (float)(c->centre[i] * mm_per_unit);
    }
    *out = k;
    return true;
}

/* ------------------------------------------------- the output */

/* Owned by the processing thread, but for the counters (the tally reads
 * them from the caller's thread). */
struct ssl {
    struct trk_netaddr_dgram net;
    char name[300]; /* "ssl HOST:PORT" */
    char ball[TRK_NAME_MAX];
    bool ball_given; /* --ssl-ball: its absence is said */
    struct trk_ssl_map map;
    struct trk_ssl_field field;
    struct trk_ssl_calib calib; /* the set's camera, when field.n_calib is 1 */
    struct trk_calib set_calib; /* the set's calibration, for calib's refills */
    int geometry_every;
    uint64_t frames; /* frames seen while sending: the geometry's cadence */
    struct trk_ssl_frame f;
    struct trk_buf pkt;
    _Atomic uint64_t sent, geometry, failed, skipped;
    _Atomic bool send_failed;
};

/* Why set cannot be sent in millimetres, or NULL when it can. */
static const char *no_mm(const struct trk_objects *set, char *buf, size_t len)
{
    if (!set->calib.on) return "has no \"calibration\"";
    if (trk_ssl_unit_mm(set->calib.unit) > 0) return NULL;
    snprintf(buf, len, "has a calibration in \"%s\"", set->calib.unit);
    return buf;
}

/* Takes the set's unit and ball; says what it cannot send. */
static void take_set(struct ssl *s, const struct trk_objects *set)
{
    char why[80];
    const char *bad = no_mm(set, why, sizeof(why));
    double mm = bad ? 0 : trk_ssl_unit_mm(set->calib.unit);
    if (bad && s->map.mm_per_unit > 0)
        log_warn("%s: the objects now in use %s: SSL-Vision positions are field millimetres, "
                 "so no packets are sent until a calibration in mm, cm or m is set",
                 s->name, bad);
    else if (!bad && !(s->map.mm_per_unit > 0))
        log_info("%s: the objects now in use have a calibration in %s: sending again", s->name,
                 set->calib.unit);
    s->map.mm_per_unit = mm;
    s->set_calib = set->calib;
    s->field.n_calib = 0; /* filled with the frame's size when geometry is due */
    bool had = s->map.ball != NULL;
    s->map.ball = find_object(set->def, set->n, s->ball) >= 0 ? s->ball : NULL;
    if (had && !s->map.ball && s->ball_given)
        log_warn("%s: no object is named \"%s\" (--ssl-ball) any more: no balls are sent", s->name,
                 s->ball);
}

static void send_pkt(struct ssl *s)
{
    int err = s->pkt.failed ? TRK_ENOMEM : trk_netaddr_dgram_send(&s->net, s->pkt.data, s->pkt.len);
    if (err) {
        atomic_fetch_add(&s->failed, 1);
        log_once(s->send_failed, TRK_LOG_WARN, err,
                 "%s: a packet could not be sent; packets are being lost (counted) until one is",
                 s->name);
        return;
    }
    atomic_fetch_add(&s->sent, 1);
    if (atomic_exchange(&s->send_failed, false)) log_info("%s: sending works again", s->name);
}

static void ssl_frame(void *ctx, const struct trk_frame_result *r, const char *json, size_t len)
{
    (void)json, (void)len;
    struct ssl *s = ctx;
    if (!(s->map.mm_per_unit > 0)) {
        atomic_fetch_add(&s->skipped, 1);
        return;
    }
    /* Both clocks now: the capture time moves from the monotonic clock to
     * the wall clock by their present offset. */
    double mono = trk_now(), wall = trk_wall_ms() / 1e3;
    if (s->geometry_every > 0 && s->frames++ % (uint64_t)s->geometry_every == 0) {
        trk_buf_reset(&s->pkt);
        s->field.n_calib = trk_ssl_calib_fill(&s->calib, &s->set_calib, s->map.mm_per_unit,
                                              s->map.camera_id, r->meta.width, r->meta.height);
        if (trk_ssl_pack(NULL, &s->field, &s->pkt) == 0) {
            send_pkt(s);
            atomic_fetch_add(&s->geometry, 1);
        }
    }
    trk_buf_reset(&s->pkt);
    int err = trk_ssl_frame_fill(&s->f, &s->map, r, r->meta.t_capture + (wall - mono), wall);
    if (!err) err = trk_ssl_pack(&s->f.det, NULL, &s->pkt);
    if (err) {
        atomic_fetch_add(&s->failed, 1);
        log_once(s->send_failed, TRK_LOG_WARN, err, "%s: frame %llu could not be encoded", s->name,
                 (unsigned long long)r->meta.seq);
        return;
    }
    send_pkt(s);
}

static void ssl_objects(void *ctx, const struct trk_objects *set)
{
    take_set(ctx, set);
}

/* "; ssl HOST:PORT 300 sent, 0 failed" in the stats log line. */
static void ssl_tally(void *ctx, struct trk_outputs_tally *t)
{
    struct ssl *s = ctx;
    if (t->log_at >= t->log_len) return;
    int n = snprintf(t->log + t->log_at, t->log_len - t->log_at, "; %s %llu sent, %llu failed",
                     s->name, (unsigned long long)atomic_load(&s->sent),
                     (unsigned long long)atomic_load(&s->failed));
    if (n > 0) t->log_at += (size_t)n;
}

static void ssl_free(struct ssl *s)
{
    trk_netaddr_dgram_close(&s->net);
    trk_ssl_frame_free(&s->f);
    trk_buf_free(&s->pkt);
    free(s);
}

static int ssl_close(void *ctx)
{
    struct ssl *s = ctx;
    log_info("%s: %llu packets sent (%llu of them geometry), %llu failed, %llu frames not sent "
             "(no calibration in mm, cm or m)",
             s->name, (unsigned long long)s->sent, (unsigned long long)s->geometry,
             (unsigned long long)s->failed, (unsigned long long)s->skipped);
    ssl_free(s);
    return 0;
}

static const struct trk_output_ops ssl_ops = {
    .name = "ssl",
    .frame = ssl_frame,
    .objects = ssl_objects,
    .tally = ssl_tally,
    .close = ssl_close,
};

/* The objects at start must give millimetres and the ball asked for. */
static int check_start(const struct ssl *s, const struct trk_objects *set, const char *file)
{
    char why[80];
    const char *bad = no_mm(set, why, sizeof(why));
    if (bad) {
        log_error("--ssl: %s %s: SSL-Vision positions are field millimetres; give the objects a "
                  "\"calibration\" whose \"unit\" is \"mm\" (or \"cm\", \"m\"; config/OBJECTS.md, "
                  "Calibration)",
                  file, bad);
        return TRK_EX_CONFIG;
    }
    if (s->ball_given && find_object(set->def, set->n, s->ball) < 0) {
        log_error("--ssl-ball %s: %s has no object of that name", s->ball, file);
        return TRK_EX_CONFIG;
    }
    return 0;
}

int trk_ssl_open(const struct trk_output_env *env, struct trk_outputs *o)
{
    const struct trk_settings *st = env->s;
    if (!st->ssl) return 0;
    struct ssl *s = calloc(1, sizeof(*s));
    if (!s) return TRK_EX_SOFTWARE;
    s->net.fd = -1;
    char addr[280];
    trk_udp_addr_text(st->ssl_host, st->ssl_port, addr, sizeof(addr));
    snprintf(s->name, sizeof(s->name), "ssl %s", addr);
    snprintf(s->ball, sizeof(s->ball), "%s", st->ssl_ball ? st->ssl_ball : "ball");
    s->ball_given = st->ssl_ball != NULL;
    s->map.camera_id = (uint32_t)st->ssl_camera_id;
    s->field = (struct trk_ssl_field){ .length = st->ssl_field_length,
                                       .width = st->ssl_field_width,
                                       .goal_width = TRK_SSL_GOAL_WIDTH,
                                       .goal_depth = TRK_SSL_GOAL_DEPTH,
                                       .boundary_width = TRK_SSL_BOUNDARY_WIDTH,
                                       .calib = &s->calib };
    s->geometry_every = st->ssl_geometry_every;
    static const struct trk_objects none;
    const struct trk_objects *set = env->objects ? env->objects : &none;
    const char *file = st->objects ? st->objects : "<demo objects>";
    int rc = check_start(s, set, file);
    if (rc) {
        ssl_free(s);
        return rc;
    }
    struct trk_udp_cfg uc = {
        .host = st->ssl_host, .port = st->ssl_port, .ttl = st->udp_ttl, .iface = st->udp_iface
    };
    bool multicast;
    if (trk_udp_socket_open(&uc, "--ssl", &s->net, &multicast)) {
        ssl_free(s);
        return TRK_EX_UNAVAILABLE;
    }
    /* A full socket buffer loses the packet rather than wait. */
    if (fcntl(s->net.fd, F_SETFL, fcntl(s->net.fd, F_GETFL) | O_NONBLOCK)) {
        log_error_err(-errno, "--ssl %s: cannot set up the socket", addr);
        ssl_free(s);
        return TRK_EX_UNAVAILABLE;
    }
    s->map.mm_per_unit = trk_ssl_unit_mm(set->calib.unit); /* check_start: > 0 */
    take_set(s, set);
    log_info("sending SSL-Vision packets to %s (%s): camera %d, balls from %s, geometry (field "
             "%dx%d mm) every %d frames (0: never)",
             addr, multicast ? "multicast" : "unicast", st->ssl_camera_id,
             s->map.ball ? s->ball : "no object (none is named ball)", s->field.length,
             s->field.width, s->geometry_every);
    if (trk_outputs_add(o, &ssl_ops, s)) return TRK_EX_SOFTWARE; /* closed s */
    return 0;
}
