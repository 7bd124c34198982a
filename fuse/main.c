/* trackd-fuse: one world from many cameras. Subscribes to every trackd's
 * frames, status and config on an MQTT broker, fuses them (fuse.h) and
 * publishes PREFIX/NAME/frame (protocol/PROTOCOL.md, section 12).
 *
 * One thread: libmosquitto's loop delivers the messages, and waits at most
 * until the open epoch is due, so the fused message goes out when the last
 * camera's frame comes in or when the window ends, whichever is first. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <mosquitto.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fuse.h"
#include "ssl_tracked.h"
#include "ws.h"
#include "log_hook.h"
#include "trk_clock.h"
#include "trk_error.h"

#define LOG_TAG "main"

enum { EX_OK = 0, EX_USAGE_ = 64 };
#define KEEPALIVE_S   10
#define BACKOFF_MAX_S 8.0
/* Waiting for the offline status's PUBACK when stopping. */
#define STOP_WAIT_MS 2000
/* The stats line: every this many ms, over at most this many fusions. */
#define STATS_EVERY_MS 10000.0
#define STATS_MAX      4096
/* The longest the loop sleeps: clock sync requests are due every
 * TRK_FUSE_SYNC_FAST_MS at first. */
#define SYNC_POLL_MS 50.0

struct opts {
    char host[256], user[128], pass[128], prefix[256];
    int port;
    bool has_user, has_pass;
    struct trk_fuse_cfg fuse;
    enum trk_log_level level;
    char listen[256]; /* --listen HOST:PORT; "" = no WebSocket server */
    int listen_port;
    const char *web_root;
    const char *ssl_tracked; /* --ssl-tracked URL; NULL = none */
    const char *ssl_ball;
    const char *ssl_team[TRK_FUSE_SSL_TEAMS + 1]; /* --ssl-team specs */
    int n_ssl_team;
};

/* The option table: --help and the man page are made from it. */
struct opt_doc {
    const char *name, *arg, *help;
};
static const struct opt_doc OPTS[] = {
    { "mqtt", "URL",
      "mqtt://[USER[:PASS]@]HOST[:PORT][/PREFIX]: the broker the cameras' trackd publish to, and "
      "their topic prefix (default trackd); required" },
    { "prefix", "P", "the cameras' topic prefix (overrides the URL's)" },
    { "name", "NAME",
      "the fused world's name in topics and messages (default world): publishes "
      "PREFIX/NAME/frame and the retained PREFIX/NAME/status" },
    { "window", "MS",
      "most ms a fused instant waits for the cameras' frames (default: one frame "
      "period of the slowest camera, estimated from its frames)" },
    { "gate", "DIST",
      "world units: detections of one object by two cameras farther apart than "
      "this are two objects (default 100)" },
    { "stale", "MS",
      "a camera whose newest frame is this many ms behind the fused instant is not "
      "used (default 500)" },
    { "keep", "MS", "a fused object no camera saw for this many ms loses its id (default 1000)" },
    { "listen", "HOST:PORT",
      "also serve the fused world over a WebSocket (ws://HOST:PORT/ws, each world message) and "
      "the top-down page at http://HOST:PORT/ (default: off)" },
    { "web-root", "DIR", "the page's files (default " TRK_FUSE_WEB_ROOT ")" },
    { "predict", "send",
      "positions moved on by their velocities from the fused instant to when the message is "
      "sent (the interval is the message's predict_ms); default: positions at the fused instant" },
    { "ssl-tracked", "[udp://]HOST:PORT",
      "also send each world message as the RoboCup Small Size League's tracked format (a "
      "TrackerWrapperPacket: robots from the markers of patterns with a team, balls from the "
      "--ssl-ball objects; m, m/s, rad) in one UDP datagram to HOST:PORT, unicast or multicast "
      "(the league's: udp://224.5.23.2:10010); needs a world unit of mm, cm or m" },
    { "ssl-ball", "NAME",
      "the object whose fused instances are --ssl-tracked's balls (default ball)" },
    { "ssl-team", "PATTERN:TEAM",
      "--ssl-tracked: the markers of pattern PATTERN are team TEAM's (yellow or blue) robots; "
      "repeatable; default: a pattern named yellow or blue is that team's" },
    { "log-level", "LEVEL", "error, warn, info (default) or debug" },
    { "help", NULL, "this text" },
    { "man", NULL, "the man page (roff) on stdout" },
};
#define N_OPTS (sizeof(OPTS) / sizeof(OPTS[0]))

static void usage(FILE *out)
{
    fprintf(out, "usage: trackd-fuse --mqtt URL [options]\n\nFuses the frames of several "
                 "trackd cameras on an MQTT broker into one world.\n\n");
    for (size_t i = 0; i < N_OPTS; i++) {
        char lhs[64];
        snprintf(lhs, sizeof(lhs), "--%s%s%s", OPTS[i].name, OPTS[i].arg ? " " : "",
                 OPTS[i].arg ? OPTS[i].arg : "");
        fprintf(out, "  %-16s %s\n", lhs, OPTS[i].help);
    }
}

static void man_page(void)
{
    printf(".TH TRACKD-FUSE 1 \"\" \"trackd\" \"User Commands\"\n.SH NAME\ntrackd-fuse \\- one "
           "world from many trackd cameras over MQTT\n.SH SYNOPSIS\n.B trackd-fuse\n\\-\\-mqtt "
           "URL [options]\n.SH DESCRIPTION\nSubscribes to PREFIX/+/frame, PREFIX/+/status and "
           "PREFIX/+/config on the broker, aligns the cameras' detections to a common instant "
           "by their world velocities, merges what several cameras see of one object, keeps "
           "global ids through hand-over between cameras and publishes PREFIX/NAME/frame. A "
           "late camera is reported and never waited for past the window; a camera that goes "
           "offline (its last will) is shown and the others keep flowing. Each camera's clock "
           "is synced with the NTP-style sync exchange over MQTT, so the cameras' hosts need "
           "not agree on the time. The message format is in PROTOCOL.md, section 12.\n.SH "
           "OPTIONS\n");
    for (size_t i = 0; i < N_OPTS; i++)
        printf(".TP\n.B \\-\\-%s%s%s\n%s\n", OPTS[i].name, OPTS[i].arg ? " " : "",
               OPTS[i].arg ? OPTS[i].arg : "", OPTS[i].help);
    printf(".SH EXIT STATUS\n0 after SIGTERM or SIGINT; 64 for a bad command line; 69 when "
           "--listen cannot listen or the --ssl-tracked host does not resolve.\n.SH SEE "
           "ALSO\ntrackd(1), mosquitto(8)\n");
}

static int bad(const char *fmt, const char *what)
{
    fprintf(stderr, "trackd-fuse: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, " (try --help)\n");
    return EX_USAGE_;
}

/* mqtt://[USER[:PASS]@]HOST[:PORT][/PREFIX] into o; 0 or a usage error. */
static int parse_url(struct opts *o, const char *url)
{
    if (strncmp(url, "mqtt://", 7)) return bad("--mqtt %s: only mqtt:// URLs are supported", url);
    const char *p = url + 7, *at = strchr(p, '@'), *slash = strchr(p, '/');
    if (at && (!slash || at < slash)) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        size_t nu = (size_t)((colon ? colon : at) - p);
        if (nu >= sizeof(o->user)) return bad("--mqtt %s: user name too long", url);
        memcpy(o->user, p, nu);
        o->has_user = true;
        if (colon) {
            size_t np = (size_t)(at - colon - 1);
            if (np >= sizeof(o->pass)) return bad("--mqtt %s: password too long", url);
            memcpy(o->pass, colon + 1, np);
            o->has_pass = true;
        }
        p = at + 1;
    }
    const char *end = slash ? slash : p + strlen(p), *hend = end;
    if (*p == '[') { /* [v6]:port */
        const char *rb = memchr(p, ']', (size_t)(end - p));
        if (!rb) return bad("--mqtt %s: an IPv6 address needs its ]", url);
        memcpy(o->host, p + 1, (size_t)(rb - p - 1));
        hend = rb + 1;
    } else {
        const char *colon = memchr(p, ':', (size_t)(end - p));
        hend = colon ? colon : end;
        if ((size_t)(hend - p) >= sizeof(o->host)) return bad("--mqtt %s: host too long", url);
        memcpy(o->host, p, (size_t)(hend - p));
    }
    if (!o->host[0]) return bad("--mqtt %s: no host", url);
    o->port = 1883;
    if (hend < end && *hend == ':') {
        char *e;
        long port = strtol(hend + 1, &e, 10);
        if (e != end || port < 1 || port > 65535) return bad("--mqtt %s: bad port", url);
        o->port = (int)port;
    }
    if (slash && slash[1]) {
        if (strlen(slash + 1) >= sizeof(o->prefix) || strpbrk(slash + 1, "+#"))
            return bad("--mqtt %s: the prefix must be a topic without wildcards", url);
        snprintf(o->prefix, sizeof(o->prefix), "%s", slash + 1);
    }
    return 0;
}

static int parse_ms(const char *opt, const char *s, double lo, double *out)
{
    char *e;
    double v = strtod(s, &e);
    if (e == s || *e || !(v >= lo) || v > 1e7) {
        char what[200];
        snprintf(what, sizeof(what), "--%s %.60s: a number from %g to 1e7 is needed", opt, s, lo);
        return bad("%s", what);
    }
    *out = v;
    return 0;
}

/* HOST:PORT, [V6]:PORT or :PORT (every interface) into o->listen, port. */
static int parse_listen(struct opts *o, const char *s)
{
    const char *colon = strrchr(s, ':');
    char *e;
    long port = colon ? strtol(colon + 1, &e, 10) : -1;
    if (!colon || *e || colon[1] == 0 || port < 0 || port > 65535)
        return bad("--listen %s: HOST:PORT is needed (port 0..65535; 0: any free port)", s);
    const char *h = s;
    size_t n = (size_t)(colon - s);
    if (n >= 2 && h[0] == '[' && h[n - 1] == ']') h++, n -= 2;
    if (n >= sizeof(o->listen)) return bad("--listen %s: host too long", s);
    memcpy(o->listen, h, n);
    o->listen[n] = 0;
    o->listen_port = (int)port;
    return 0;
}

static const char default_ball[] = "ball";

static int parse_args(int argc, char **argv, struct opts *o, char *name, size_t name_size)
{
    static const struct option lo[] = { { "mqtt", 1, 0, 'm' },
                                        { "prefix", 1, 0, 'p' },
                                        { "name", 1, 0, 'n' },
                                        { "window", 1, 0, 'w' },
                                        { "gate", 1, 0, 'g' },
                                        { "stale", 1, 0, 's' },
                                        { "keep", 1, 0, 'k' },
                                        { "log-level", 1, 0, 'l' },
                                        { "listen", 1, 0, 'L' },
                                        { "web-root", 1, 0, 'r' },
                                        { "predict", 1, 0, 'P' },
                                        { "help", 0, 0, 'h' },
                                        { "ssl-tracked", 1, 0, 'S' },
                                        { "ssl-ball", 1, 0, 'B' },
                                        { "ssl-team", 1, 0, 'T' },
                                        { "man", 0, 0, 'M' },
                                        { 0, 0, 0, 0 } };
    bool url = false, prefix = false;
    char pre[256] = "";
    o->fuse = (struct trk_fuse_cfg){ .gate = 100, .stale_ms = 500, .keep_ms = 1000, .name = name };
    o->level = TRK_LOG_INFO;
    o->web_root = TRK_FUSE_WEB_ROOT;
    o->ssl_ball = default_ball;
    o->listen_port = -1;
    snprintf(o->prefix, sizeof(o->prefix), "trackd");
    snprintf(name, name_size, "world");
    int c, rc = 0;
    while (!rc && (c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'm': rc = parse_url(o, optarg), url = true; break;
        case 'p':
            prefix = true;
            snprintf(pre, sizeof(pre), "%s", optarg);
            if (!*optarg || strpbrk(optarg, "+#") || strlen(optarg) >= sizeof(pre))
                rc = bad("--prefix %s: a topic prefix without wildcards is needed", optarg);
            break;
        case 'n':
            snprintf(name, name_size, "%s", optarg);
            if (!*optarg || strlen(optarg) >= name_size || strpbrk(optarg, "/+#"))
                rc = bad("--name %s: 1..64 bytes without / + #", optarg);
            break;
        case 'L': rc = parse_listen(o, optarg); break;
        case 'r': o->web_root = optarg; break;
        case 'S': o->ssl_tracked = optarg; break;
        case 'T':
            if (o->n_ssl_team == TRK_FUSE_SSL_TEAMS)
                rc = bad("--ssl-team %s: at most 16", optarg);
            else
                o->ssl_team[o->n_ssl_team++] = optarg;
            break;
        case 'B':
            o->ssl_ball = optarg;
            if (!*optarg || strlen(optarg) >= TRK_FUSE_NAME_MAX)
                rc = bad("--ssl-ball %s: an object's name (1..64 bytes) is needed", optarg);
            break;
        case 'P':
            o->fuse.predict = !strcmp(optarg, "send");
            if (!o->fuse.predict) rc = bad("--predict %s: only \"send\" is known", optarg);
            break;
        case 'w': rc = parse_ms("window", optarg, 1, &o->fuse.window_ms); break;
        case 'g': rc = parse_ms("gate", optarg, 1e-6, &o->fuse.gate); break;
        case 's': rc = parse_ms("stale", optarg, 1, &o->fuse.stale_ms); break;
        case 'k': rc = parse_ms("keep", optarg, 0, &o->fuse.keep_ms); break;
        case 'l':
            if (!strcmp(optarg, "error"))
                o->level = TRK_LOG_ERROR;
            else if (!strcmp(optarg, "warn"))
                o->level = TRK_LOG_WARN;
            else if (!strcmp(optarg, "info"))
                o->level = TRK_LOG_INFO;
            else if (!strcmp(optarg, "debug"))
                o->level = TRK_LOG_DEBUG;
            else
                rc = bad("--log-level %s: error, warn, info or debug", optarg);
            break;
        case 'h': usage(stdout); return -1;
        case 'M': man_page(); return -1;
        default: return EX_USAGE_;
        }
    }
    if (rc) return rc;
    if (optind < argc) return bad("%s: no arguments besides options", argv[optind]);
    if (!url) return bad("%s", "--mqtt URL is required");
    if ((o->n_ssl_team || o->ssl_ball != default_ball) && !o->ssl_tracked)
        return bad("%s", "--ssl-team and --ssl-ball go with --ssl-tracked");
    if (prefix) snprintf(o->prefix, sizeof(o->prefix), "%s", pre);
    return 0;
}

/* ---- the MQTT side ---- */

struct app {
    struct opts *o;
    struct trk_fuse *fuse;
    struct mosquitto *mosq;
    struct trk_ws *ws;        /* --listen; NULL without */
    struct trk_fuse_ssl *ssl; /* --ssl-tracked; NULL without */
    struct trk_buf out;
    char t_frame[400], t_status[400];
    char sync_id[64]; /* this fuser's client id in PREFIX/CAMERA/sync/... */
    size_t prefix_len;
    bool connected, stopping;
    int status_mid;
    bool status_acked;
    unsigned long long published, failed;
    /* The stats line: fuse times (a camera's frame in -> its fused message
     * handed to libmosquitto, ms) since the last line, and when it is due. */
    double fuse_ms[STATS_MAX], stats_due;
    size_t n_fuse;
    unsigned long long published_at_stats;
};

static volatile sig_atomic_t g_stop;
static void on_signal(int sig)
{
    (void)sig, g_stop = 1;
}

static double now_ms(void)
{
    return trk_now() * 1e3;
}

static void log_line(enum trk_log_level level, const char *tag, const char *line)
{
    flockfile(stderr);
    fprintf(stderr, "trackd-fuse %s %s: %s\n", trk_log_level_name(level), tag, line);
    funlockfile(stderr);
}

static void publish_world(struct app *a)
{
    int rc = trk_fuse_emit(a->fuse, trk_wall_ms(), &a->out);
    if (rc <= 0) return;
    if (a->ws) trk_ws_broadcast(a->ws, TRK_WS_RESULT, a->out.data, a->out.len);
    trk_fuse_ssl_send(a->ssl, a->fuse);
    if (!a->connected) return; /* fused all the same: ids and lateness go on */
    rc = mosquitto_publish(a->mosq, NULL, a->t_frame, (int)a->out.len, a->out.data, 0, false);
    if (rc == MOSQ_ERR_SUCCESS)
        a->published++;
    else
        a->failed++;
}

static void status_json(struct trk_buf *b, const char *name, bool online, const char *msg)
{
    trk_buf_reset(b);
    trk_buf_puts(b, "{\"type\":\"status\",\"camera\":");
    trk_buf_json_str(b, name, strlen(name));
    trk_buf_puts(b, online ? ",\"online\":true" : ",\"online\":false");
    trk_buf_puts(b, ",\"server\":\"trackd-fuse " TRK_FUSE_VERSION "\",\"message\":");
    trk_buf_json_str(b, msg, strlen(msg));
    trk_buf_puts(b, "}");
}

static void publish_status(struct app *a, bool online, const char *msg)
{
    struct trk_buf b = { 0 };
    status_json(&b, a->o->fuse.name, online, msg);
    if (!b.failed)
        mosquitto_publish(a->mosq, &a->status_mid, a->t_status, (int)b.len, b.data, 1, true);
    trk_buf_free(&b);
}

static void on_connect(struct mosquitto *m, void *ud, int rc)
{
    struct app *a = ud;
    if (rc) {
        log_warn("the broker %s:%d refused the connection: %s", a->o->host, a->o->port,
                 mosquitto_connack_string(rc));
        return;
    }
    log_info("connected to %s:%d; fusing %s/+/frame into %s", a->o->host, a->o->port, a->o->prefix,
             a->t_frame);
    a->connected = true;
    static const char *const kinds[3] = { "frame", "status", "config" };
    char sub[400];
    for (int k = 0; k < 3; k++) {
        snprintf(sub, sizeof(sub), "%s/+/%s", a->o->prefix, kinds[k]);
        mosquitto_subscribe(m, NULL, sub, k ? 1 : 0);
    }
    snprintf(sub, sizeof(sub), "%s/+/sync/reply/%s", a->o->prefix, a->sync_id);
    mosquitto_subscribe(m, NULL, sub, 0);
    publish_status(a, true, "fusing");
}

static void on_disconnect(struct mosquitto *m, void *ud, int rc)
{
    struct app *a = ud;
    (void)m;
    a->connected = false;
    if (!a->stopping)
        log_warn("lost the broker %s:%d (%d); reconnecting", a->o->host, a->o->port, rc);
}

static void on_publish(struct mosquitto *m, void *ud, int mid)
{
    struct app *a = ud;
    (void)m;
    if (mid == a->status_mid) a->status_acked = true;
}

static void on_message(struct mosquitto *m, void *ud, const struct mosquitto_message *msg)
{
    struct app *a = ud;
    (void)m;
    /* PREFIX/CAMERA/KIND */
    const char *t = msg->topic + a->prefix_len + 1, *slash = strchr(t, '/');
    if (!slash || (size_t)(slash - t) >= TRK_FUSE_NAME_MAX || !msg->payloadlen) return;
    char cam[TRK_FUSE_NAME_MAX];
    memcpy(cam, t, (size_t)(slash - t));
    cam[slash - t] = 0;
    const char *kind = slash + 1, *p = msg->payload;
    size_t n = (size_t)msg->payloadlen;
    if (!strcmp(kind, "frame")) {
        double t0 = now_ms();
        if (trk_fuse_frame(a->fuse, cam, p, n, t0, trk_wall_ms()) == 1) {
            publish_world(a);
            if (a->n_fuse < STATS_MAX) a->fuse_ms[a->n_fuse++] = now_ms() - t0;
        }
    } else if (!strcmp(kind, "status")) {
        trk_fuse_status(a->fuse, cam, p, n);
    } else if (!strcmp(kind, "config")) {
        trk_fuse_config(a->fuse, cam, p, n);
    } else if (!strncmp(kind, "sync/reply/", 11) && !strcmp(kind + 11, a->sync_id)) {
        trk_fuse_sync_reply(a->fuse, cam, p, n, trk_wall_ms());
    }
}

/* Clock sync requests to the cameras due one (fuse.h), t0 taken last. */
static void ask_sync(struct app *a)
{
    const char *cam;
    while (a->connected && (cam = trk_fuse_sync_due(a->fuse, now_ms()))) {
        char topic[400], msg[96];
        snprintf(topic, sizeof(topic), "%s/%s/sync/request/%s", a->o->prefix, cam, a->sync_id);
        int n = snprintf(msg, sizeof(msg), "{\"type\":\"sync\",\"t0\":%.3f}", trk_wall_ms());
        mosquitto_publish(a->mosq, NULL, topic, n, msg, 0, false);
    }
}

static int setup(struct app *a)
{
    char id[96];
    snprintf(id, sizeof(id), "trackd-fuse-%s-%d", a->o->fuse.name, (int)getpid());
    a->mosq = mosquitto_new(id, true, a);
    if (!a->mosq) return -ENOMEM;
    /* Each fused message goes out at once, not held by Nagle's algorithm. */
    mosquitto_int_option(a->mosq, MOSQ_OPT_TCP_NODELAY, 1);
    mosquitto_connect_callback_set(a->mosq, on_connect);
    mosquitto_disconnect_callback_set(a->mosq, on_disconnect);
    mosquitto_publish_callback_set(a->mosq, on_publish);
    mosquitto_message_callback_set(a->mosq, on_message);
    if (a->o->has_user)
        mosquitto_username_pw_set(a->mosq, a->o->user, a->o->has_pass ? a->o->pass : NULL);
    struct trk_buf will = { 0 };
    status_json(&will, a->o->fuse.name, false, "connection lost");
    int rc = will.failed
                 ? MOSQ_ERR_NOMEM
                 : mosquitto_will_set(a->mosq, a->t_status, (int)will.len, will.data, 1, true);
    trk_buf_free(&will);
    return rc == MOSQ_ERR_SUCCESS ? 0 : -ENOMEM;
}

/* The WebSocket server of --listen: every world message to every client,
 * the page from --web-root. 0, or nonzero (logged) when it cannot listen. */
static int start_ws(struct app *a)
{
    struct trk_ws_cfg cfg = { .address = a->o->listen,
                              .port = a->o->listen_port,
                              .web_root = a->o->web_root };
    if (trk_ws_create(&cfg, &a->ws)) {
        log_error("cannot create the WebSocket server");
        return -1;
    }
    struct trk_buf hello = { 0 };
    trk_buf_puts(&hello,
                 "{\"type\":\"hello\",\"version\":1,\"server\":\"trackd-fuse " TRK_FUSE_VERSION
                 "\",\"camera\":");
    trk_buf_json_str(&hello, a->o->fuse.name, strlen(a->o->fuse.name));
    trk_buf_puts(&hello, "}");
    if (!hello.failed) trk_ws_set_hello(a->ws, hello.data);
    trk_buf_free(&hello);
    if (trk_ws_start(a->ws)) {
        log_error("%s", trk_ws_error(a->ws));
        return -1;
    }
    log_info("serving the world at http://%s:%d/ (WebSocket /ws)", a->o->listen,
             trk_ws_port(a->ws));
    return 0;
}

/* Connects, retrying after 0.5 s doubling to 8 s (logged once until it
 * works), until connected or stopped. */
static void connect_loop(struct app *a, bool first)
{
    double backoff = 0.5;
    bool said = false;
    while (!g_stop) {
        int rc = first ? mosquitto_connect(a->mosq, a->o->host, a->o->port, KEEPALIVE_S)
                       : mosquitto_reconnect(a->mosq);
        if (rc == MOSQ_ERR_SUCCESS) return;
        if (!said)
            log_warn("cannot reach the broker %s:%d: %s; retrying", a->o->host, a->o->port,
                     rc == MOSQ_ERR_ERRNO ? strerror(errno) : mosquitto_strerror(rc));
        said = true;
        struct timespec ts = { (time_t)backoff, (long)((backoff - (int)backoff) * 1e9) };
        nanosleep(&ts, NULL);
        backoff = backoff * 2 < BACKOFF_MAX_S ? backoff * 2 : BACKOFF_MAX_S;
    }
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Every STATS_EVERY_MS: world messages per second and the fuse time's
 * p50 / p99 / max over the fusions a camera's frame completed. */
static void stats_line(struct app *a)
{
    double now = now_ms();
    if (now < a->stats_due) return;
    double span = now - a->stats_due + STATS_EVERY_MS;
    a->stats_due = now + STATS_EVERY_MS;
    qsort(a->fuse_ms, a->n_fuse, sizeof(double), cmp_double);
    size_t n = a->n_fuse;
    log_info("%.1f world frames/s; fuse ms p50 %.3f p99 %.3f max %.3f (%zu fusions)",
             (double)(a->published - a->published_at_stats) * 1e3 / span,
             n ? a->fuse_ms[n / 2] : NAN, n ? a->fuse_ms[n * 99 / 100] : NAN,
             n ? a->fuse_ms[n - 1] : NAN, n);
    a->published_at_stats = a->published;
    a->n_fuse = 0;
}

/* Serves until SIGTERM/SIGINT: messages, and each epoch when it is due. */
static void run(struct app *a)
{
    a->stats_due = now_ms() + STATS_EVERY_MS;
    connect_loop(a, true);
    while (!g_stop) {
        /* At most SYNC_POLL_MS: clock sync requests fall due too. */
        double due = trk_fuse_due(a->fuse), wait = SYNC_POLL_MS;
        if (due >= 0 && due - now_ms() < wait) wait = due - now_ms();
        int rc = mosquitto_loop(a->mosq, wait > 0 ? (int)ceil(wait) : 0, 1);
        if (rc != MOSQ_ERR_SUCCESS && !g_stop) {
            a->connected = false;
            connect_loop(a, false);
        }
        due = trk_fuse_due(a->fuse);
        if (due >= 0 && now_ms() >= due) publish_world(a);
        ask_sync(a);
        stats_line(a);
    }
    a->stopping = true;
    if (a->connected) {
        a->status_acked = false;
        publish_status(a, false, "trackd-fuse stopped");
        double end = now_ms() + STOP_WAIT_MS;
        while (!a->status_acked && now_ms() < end)
            if (mosquitto_loop(a->mosq, 100, 1) != MOSQ_ERR_SUCCESS) break;
        mosquitto_disconnect(a->mosq);
    }
    log_info("stopped: %llu world frames published, %llu not", a->published, a->failed);
}

/* --ssl-tracked: its socket and --ssl-team's patterns. 0, or the exit
 * code (said why). */
static int open_ssl(struct app *a)
{
    const struct opts *o = a->o;
    const char *why = "";
    char what[400];
    if (!o->ssl_tracked) return 0;
    int rc = trk_fuse_ssl_open(o->ssl_tracked, o->ssl_ball, &a->ssl, &why);
    if (rc == TRK_EINVAL) {
        snprintf(what, sizeof(what), "--ssl-tracked %.200s: %s", o->ssl_tracked, why);
        return bad("%s", what);
    }
    if (rc) {
        log_error("--ssl-tracked %s: %s", o->ssl_tracked, rc == -ENOENT ? why : trk_strerror(rc));
        return 69;
    }
    for (int i = 0; i < o->n_ssl_team; i++)
        if (trk_fuse_ssl_team(a->ssl, o->ssl_team[i], &why)) {
            snprintf(what, sizeof(what), "--ssl-team %.100s: %s", o->ssl_team[i], why);
            return bad("%s", what);
        }
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o = { 0 };
    char name[TRK_FUSE_NAME_MAX];
    int rc = parse_args(argc, argv, &o, name, sizeof(name));
    if (rc) return rc < 0 ? EX_OK : rc;
    trk_log_set_hook(log_line, o.level);
    struct app a = { .o = &o, .prefix_len = strlen(o.prefix) };
    snprintf(a.t_frame, sizeof(a.t_frame), "%s/%s/frame", o.prefix, name);
    snprintf(a.t_status, sizeof(a.t_status), "%s/%s/status", o.prefix, name);
    /* One topic level of the camera name's bytes, different for each
     * fuser on the broker (pid and start time: hosts may share pids). */
    snprintf(a.sync_id, sizeof(a.sync_id), "fuse-%d-%llx", (int)getpid(),
             (unsigned long long)trk_wall_ms() & 0xffffffffffULL);
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    mosquitto_lib_init();
    a.fuse = trk_fuse_create(&o.fuse);
    if (!a.fuse || setup(&a)) {
        log_error("out of memory at start");
        rc = 70;
    } else if (o.listen_port >= 0 && start_ws(&a)) {
        rc = 69;
    } else if (!(rc = open_ssl(&a))) {
        run(&a);
        if (a.ws) trk_ws_shutdown(a.ws, 1001, "trackd-fuse stopped", 2.0);
    }
    /* Every way out frees what was made (a sanitizer build checks). */
    trk_ws_destroy(&a.ws);
    trk_fuse_ssl_close(&a.ssl);
    mosquitto_destroy(a.mosq);
    trk_fuse_destroy(&a.fuse);
    trk_buf_free(&a.out);
    mosquitto_lib_cleanup();
    return rc;
}
