/* --ssl-tracked (ssl_tracked.h). */
#define _GNU_SOURCE
#include "ssl_tracked.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "log_hook.h"
#include "netaddr.h"
#include "ssl_packet.h"
#include "trk_error.h"

#define LOG_TAG "ssl-tracked"

struct trk_fuse_ssl {
    struct trk_netaddr_dgram d;
    char where[300]; /* HOST:PORT as given, for the log */
    char uuid[37];
    char ball[TRK_FUSE_NAME_MAX];
    unsigned long long sent, failed, unsent; /* unsent: no unit in m */
    bool unit_said, fail_said;
    struct {
        char pattern[TRK_FUSE_NAME_MAX];
        enum trk_ssl_team team;
    } teams[TRK_FUSE_SSL_TEAMS];
    int n_teams;
    struct trk_ssl_tracked_ball *balls;
    struct trk_ssl_tracked_robot *robots;
    size_t cap_balls, cap_robots;
    struct trk_buf pkt;
};

/* [udp://]HOST:PORT or [udp://][V6]:PORT into host (cap bytes) and port. */
static int parse(const char *url, char *host, size_t cap, int *port, const char **why)
{
    const char *p = strncmp(url, "udp://", 6) ? url : url + 6, *colon = strrchr(p, ':');
    char *e;
    long v = colon ? strtol(colon + 1, &e, 10) : 0;
    if (!colon || colon[1] == 0 || *e || v < 1 || v > 65535) {
        *why = "HOST:PORT (port 1..65535) is needed, e.g. udp://224.5.23.2:10010";
        return TRK_EINVAL;
    }
    size_t n = (size_t)(colon - p);
    if (n >= 2 && p[0] == '[' && p[n - 1] == ']') p++, n -= 2;
    if (!n || n >= cap || memchr(p, '/', n)) {
        *why = "no host, or not one host";
        return TRK_EINVAL;
    }
    memcpy(host, p, n);
    host[n] = 0;
    *port = (int)v;
    return 0;
}

/* A random (version 4) UUID in its text form: the league's source id. */
static void make_uuid(char out[37])
{
    uint8_t b[16];
    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) /* then time and pid */
        for (size_t i = 0; i < sizeof(b); i++)
            b[i] = (uint8_t)(((uint64_t)time(NULL) * 2654435761u + (uint64_t)getpid()) >> (i % 8));
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

int trk_fuse_ssl_open(const char *url, const char *ball, struct trk_fuse_ssl **out,
                      const char **why)
{
    char host[256];
    int port, gai = 0;
    *out = NULL;
    int rc = parse(url, host, sizeof(host), &port, why);
    if (rc) return rc;
    struct trk_fuse_ssl *s = calloc(1, sizeof(*s));
    if (!s) return TRK_ENOMEM;
    rc = trk_netaddr_dgram_open(&s->d, host, port, &gai);
    if (rc) {
        if (rc == -ENOENT) *why = gai_strerror(gai);
        if (s->d.fd >= 0) close(s->d.fd);
        free(s);
        return rc;
    }
    /* A datagram the socket cannot take at once is lost, never waited for. */
    fcntl(s->d.fd, F_SETFL, fcntl(s->d.fd, F_GETFL) | O_NONBLOCK);
    snprintf(s->where, sizeof(s->where), "%s:%d", host, port);
    snprintf(s->ball, sizeof(s->ball), "%s", ball);
    make_uuid(s->uuid);
    log_info("sending SSL tracked packets (TrackerWrapperPacket, uuid %s) to %s", s->uuid,
             s->where);
    *out = s;
    return 0;
}

int trk_fuse_ssl_team(struct trk_fuse_ssl *s, const char *spec, const char **why)
{
    const char *colon = strrchr(spec, ':');
    size_t n = colon ? (size_t)(colon - spec) : 0;
    enum trk_ssl_team t = !colon                      ? TRK_SSL_TEAM_UNKNOWN
                          : !strcmp(colon, ":yellow") ? TRK_SSL_TEAM_YELLOW
                          : !strcmp(colon, ":blue")   ? TRK_SSL_TEAM_BLUE
                                                      : TRK_SSL_TEAM_UNKNOWN;
    if (!t || !n || n >= TRK_FUSE_NAME_MAX) {
        *why = "PATTERN:yellow or PATTERN:blue is needed (a pattern name of 1..64 bytes)";
        return TRK_EINVAL;
    }
    int k = 0;
    while (k < s->n_teams &&
           (strlen(s->teams[k].pattern) != n || memcmp(s->teams[k].pattern, spec, n)))
        k++;
    if (k == TRK_FUSE_SSL_TEAMS) {
        *why = "too many patterns (at most 16)";
        return TRK_EINVAL;
    }
    if (k == s->n_teams) {
        memcpy(s->teams[k].pattern, spec, n);
        s->teams[s->n_teams++].pattern[n] = 0;
    }
    s->teams[k].team = t;
    return 0;
}

/* A pattern's team: --ssl-team's, else by its name (yellow, blue). */
static enum trk_ssl_team team_of(const struct trk_fuse_ssl *s, const char *pattern)
{
    for (int k = 0; k < s->n_teams; k++)
        if (!strcmp(s->teams[k].pattern, pattern)) return s->teams[k].team;
    return !strcmp(pattern, "yellow") ? TRK_SSL_TEAM_YELLOW
           : !strcmp(pattern, "blue") ? TRK_SSL_TEAM_BLUE
                                      : TRK_SSL_TEAM_UNKNOWN;
}

/* Grows *p (of *cap elements of size) to hold n; false when out of memory. */
static bool room(void **p, size_t *cap, size_t n, size_t size)
{
    if (n <= *cap) return true;
    void *q = realloc(*p, n * size);
    if (!q) return false;
    *p = q;
    *cap = n;
    return true;
}

/* Degrees counter-clockwise to the league's radians in [-pi, pi]. */
static float radians(double deg)
{
    double a = fmod(deg, 360.0) * M_PI / 180.0;
    if (a > M_PI) a -= 2 * M_PI;
    if (a < -M_PI) a += 2 * M_PI;
    return (float)a;
}

/* The last world's balls and robots into s's arrays (m, m/s). */
static bool collect(struct trk_fuse_ssl *s, const struct trk_fuse *f, double m_per_unit, size_t *nb,
                    size_t *nr)
{
    struct trk_fuse_obj o;
    *nb = *nr = 0;
    for (size_t i = 0; trk_fuse_last_obj(f, i, &o); i++) {
        float x = (float)(o.wx * m_per_unit), y = (float)(o.wy * m_per_unit);
        float vx = (float)(o.wvx * m_per_unit), vy = (float)(o.wvy * m_per_unit);
        if (!o.marker && !strcmp(o.name, s->ball)) {
            if (!room((void **)&s->balls, &s->cap_balls, *nb + 1, sizeof(*s->balls))) return false;
            s->balls[(*nb)++] = (struct trk_ssl_tracked_ball){
                .x = x, .y = y, .has_vel = o.has_v, .vx = vx, .vy = vy, .visibility = 1
            };
        } else if (o.marker && team_of(s, o.name) && o.marker_id >= 0 &&
                   o.marker_id <= UINT32_MAX && o.has_heading) {
            if (!room((void **)&s->robots, &s->cap_robots, *nr + 1, sizeof(*s->robots)))
                return false;
            s->robots[(*nr)++] = (struct trk_ssl_tracked_robot){ .id = (uint32_t)o.marker_id,
                                                                 .team = team_of(s, o.name),
                                                                 .x = x,
                                                                 .y = y,
                                                                 .orientation = radians(o.heading),
                                                                 .has_vel = o.has_v,
                                                                 .vx = vx,
                                                                 .vy = vy,
                                                                 .visibility = 1 };
        }
    }
    return true;
}

void trk_fuse_ssl_send(struct trk_fuse_ssl *s, const struct trk_fuse *f)
{
    struct trk_fuse_world w;
    if (!s || !trk_fuse_last(f, &w)) return;
    double m_per_unit = trk_ssl_unit_mm(w.unit) / 1e3;
    if (!(m_per_unit > 0)) {
        if (!s->unit_said)
            log_warn("the world unit is \"%s\", not mm, cm or m: no SSL tracked packets until a "
                     "camera's calibration is in one of those",
                     w.unit);
        s->unit_said = true;
        s->unsent++;
        return;
    }
    s->unit_said = false;
    size_t nb, nr;
    trk_buf_reset(&s->pkt);
    int rc = collect(s, f, m_per_unit, &nb, &nr) ? 0 : TRK_ENOMEM;
    if (!rc)
        rc = trk_ssl_pack_tracked(
            &(struct trk_ssl_tracked_frame){ .uuid = s->uuid,
                                             .source_name = "trackd-fuse",
                                             .frame_number = (uint32_t)w.seq,
                                             .timestamp = (w.t_ms + w.ahead_ms) / 1e3,
                                             .balls = s->balls,
                                             .n_balls = nb,
                                             .robots = s->robots,
                                             .n_robots = nr },
            &s->pkt);
    if (!rc) rc = trk_netaddr_dgram_send(&s->d, s->pkt.data, s->pkt.len);
    if (!rc) {
        s->sent++;
        if (s->fail_said) log_info("SSL tracked packets to %s go out again", s->where);
        s->fail_said = false;
        return;
    }
    s->failed++;
    if (!s->fail_said)
        log_warn("cannot send SSL tracked packets to %s: %s (counted; said once until it works)",
                 s->where, trk_strerror(rc));
    s->fail_said = true;
}

void trk_fuse_ssl_close(struct trk_fuse_ssl **ps)
{
    struct trk_fuse_ssl *s = ps ? *ps : NULL;
    if (!s) return;
    log_info("SSL tracked packets to %s: %llu sent, %llu failed, %llu not sent (no unit in m)",
             s->where, s->sent, s->failed, s->unsent);
    if (s->d.fd >= 0) close(s->d.fd);
    free(s->balls);
    free(s->robots);
    trk_buf_free(&s->pkt);
    free(s);
    *ps = NULL;
}
