/* The MQTT output: see mqtt.h. The publisher thread drives libmosquitto's
 * external-loop API (connect_async, loop_read/write/misc on its socket in
 * our own poll), so a frame handed over wakes it at once (an eventfd) and
 * nothing but this thread ever touches the handle.
 *
 * Each connection gets a fresh handle state (mosquitto_reinitialise): a
 * handle that lost its connection would otherwise send its unacknowledged
 * QoS-1 messages again after the next CONNACK, stale configs and statuses
 * piling up behind a broker that keeps dropping the connection. */
#include "mqtt.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <netdb.h>
#include <mosquitto.h>
#include <mqtt_protocol.h>

#define LOG_TAG "mqtt"
#include "cli.h"
#include "exit.h"
#include "trk_clock.h"
#include "log.h"
#include "ops/metrics.h"
#include "outputs.h"
#include "messages.h"
#include "objects.h" /* trk_objects_escape_name */
#include "trk_color.h"

/* A queued frame: its message's bytes and what they were allocated for,
 * its objects' messages (objs: per object its topic level and its message,
 * each NUL-terminated), and the frame's capture time (trk_now's clock). */
struct slot {
    struct trk_buf data; /* the frame message                          */
    struct trk_buf objs; /* per object: its topic level, NUL, message, NUL */
    double t;
};

/* A frame sent and awaiting its PUBACK. */
struct flight {
    int mid;        /* the message id of its <camera>/frame message */
    double t, sent; /* captured, handed to libmosquitto            */
    int ahead;      /* frames in flight before it when it was sent  */
    bool late;      /* its max age passed: already counted dropped  */
};

/* "<prefix>/<camera>/": the prefix, the camera name and two slashes. */
#define TOPIC_MAX (TRK_MQTT_FIELD_MAX + 128 + 2)

enum conn_state {
    IDLE,       /* no connection; the next try at next_try        */
    CONNECTING, /* TCP (and TLS) under way or waiting for CONNACK */
    CONNECTED,  /* CONNACK received                               */
};

struct trk_mqtt {
    struct trk_mqtt_url url;
    char camera[128], server[64];
    char *ca_file;
    /* Topics: "<prefix>/<camera>/" and what follows it. */
    char base[TOPIC_MAX];
    char t_frame[TOPIC_MAX + 8], t_status[TOPIC_MAX + 8], t_config[TOPIC_MAX + 8];
    struct mosquitto *mosq;
    int wake_fd; /* eventfd: something was queued, or stop */
    pthread_t thread;
    bool have_thread;

    /* Publisher thread only. */
    enum conn_state state;
    double next_try, t_attempt, backoff;
    double t_connected; /* CONNACK of the connection now; held: TRK_MQTT_HOLD_S passed */
    bool held;
    const char *drop_why; /* why this thread itself dropped the connection */
    _Atomic bool fail_logged, drop_logged, refused_logged, retained_logged;
    bool fallback;       /* the broker refused MQTT 5: retry at once with 3.1.1 (said) */
    int proto;           /* MQTT_PROTOCOL_V5, or V311 once the broker refused 5 */
    bool used;           /* the handle made a connection attempt: reinitialise */
    uint32_t max_packet; /* the broker's maximum packet size (MQTT 5 CONNACK); 0 none */
    size_t largest;      /* the largest message sent on this connection (bytes) */
    double max_age;
    struct slot work;    /* the frame being published */
    struct trk_buf objs; /* processing thread: the frame's object messages */
    struct trk_buf topic, payload;
    struct flight win[TRK_MQTT_WINDOW]; /* frames awaiting PUBACK, oldest first */
    int n_win;
    double per_frame;           /* send-to-PUBACK time per frame in flight, smoothed */
    int status_mid, config_mid; /* the retained messages in flight; 0 none */
    int offline_mid;            /* the offline status's message id at the end; 0 none */
    bool offline_sent;          /* ... and the broker has it (PUBACK) */
    bool closing;               /* finish() disconnects: no warning for it */
    unsigned tries;             /* connection attempts so far (address family choice) */
    double sync_second;         /* clock sync: the second being counted (trk_now) ... */
    int sync_replies;           /* ... and the replies sent in it */

    /* Guarded by lock: what the other threads hand over. */
    pthread_mutex_t lock;
    struct slot ring[TRK_MQTT_QUEUE_LEN];
    int head, count;
    struct trk_buf config; /* the retained config payload; len 0 = none yet */
    char source[16];       /* the source's state */
    char source_text[256];
    bool has_source_text;
    bool status_dirty, config_dirty; /* to publish (again: after each CONNACK);
                                      * only the newest of each is kept */
    bool quit;

    _Atomic bool connected;
    _Atomic uint64_t published, connects, inflight;
    _Atomic uint64_t drops[TRK_MQTT_DROP_N];
};

static void drop(struct trk_mqtt *m, enum trk_mqtt_drop why, uint64_t n)
{
    atomic_fetch_add(&m->drops[why], n);
}

/* ------------------------------------------------------------ the URL */

static int hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* s[0..n) into out (cap bytes) with %XX decoded; false on a bad escape, a
 * NUL or when it does not fit. */
static bool decode(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            int h = i + 2 < n ? hexval(s[i + 1]) : -1, l = i + 2 < n ? hexval(s[i + 2]) : -1;
            if (h < 0 || l < 0 || (h | l) == 0) return false;
            c = (char)(h * 16 + l);
            i += 2;
        }
        if (o + 1 >= cap) return false;
        out[o++] = c;
    }
    out[o] = 0;
    return true;
}

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(why, len, __VA_ARGS__);                                                           \
        return false;                                                                              \
    } while (0)

bool trk_mqtt_url_parse(const char *url, struct trk_mqtt_url *out, char *why, size_t len)
{
    memset(out, 0, sizeof(*out));
    const char *p;
    if (!strncmp(url, "mqtt://", 7)) {
        p = url + 7;
    } else if (!strncmp(url, "mqtts://", 8)) {
        p = url + 8;
        out->tls = true;
    } else {
        FAIL("the URL must start with mqtt:// or mqtts://");
    }
    out->port = out->tls ? 8883 : 1883;
    const char *slash = strchr(p, '/');
    const char *end = slash ? slash : p + strlen(p);
    /* user[:pass]@ : the last '@' before the path ends it (a password may
     * hold '@' only as %40, but be lenient with the user's). */
    const char *at = NULL;
    for (const char *q = p; q < end; q++)
        if (*q == '@') at = q;
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        const char *user_end = colon ? colon : at;
        if (user_end == p) FAIL("empty user name before '@'");
        if (!decode(p, (size_t)(user_end - p), out->user, sizeof(out->user)))
            FAIL("bad user name (too long, or a bad %%XX escape)");
        if (colon) {
            out->has_pass = true;
            if (!decode(colon + 1, (size_t)(at - colon - 1), out->pass, sizeof(out->pass)))
                FAIL("bad password (too long, or a bad %%XX escape)");
        }
        p = at + 1;
    }
    /* host[:port], the host an IPv6 address in brackets or a name/IPv4. */
    const char *host = p, *host_end, *port = NULL;
    if (*p == '[') {
        host = p + 1;
        host_end = memchr(host, ']', (size_t)(end - host));
        if (!host_end) FAIL("an IPv6 address needs its closing ']'");
        if (host_end + 1 < end) {
            if (host_end[1] != ':') FAIL("expected ':PORT' after ']'");
            port = host_end + 2;
        }
    } else {
        host_end = memchr(p, ':', (size_t)(end - p));
        if (host_end)
            port = host_end + 1;
        else
            host_end = end;
    }
    if (host_end == host) FAIL("no broker host");
    if ((size_t)(host_end - host) > TRK_MQTT_FIELD_MAX) FAIL("the host name is too long");
    memcpy(out->host, host, (size_t)(host_end - host));
    if (port) {
        long v = 0;
        const char *q = port;
        for (; q < end && *q >= '0' && *q <= '9' && v <= 65535; q++)
            v = v * 10 + (*q - '0');
        if (q == port || q != end || v < 1 || v > 65535) FAIL("the port must be 1..65535");
        out->port = (int)v;
    }
    /* The prefix: topic levels, none empty, no wildcards. */
    const char *prefix = slash && slash[1] ? slash + 1 : "trackd";
    if (strlen(prefix) > TRK_MQTT_FIELD_MAX) FAIL("the topic prefix is too long");
    if (strpbrk(prefix, "+#")) FAIL("the topic prefix may not hold '+' or '#' (MQTT wildcards)");
    if (prefix[0] == '/' || strstr(prefix, "//") || prefix[strlen(prefix) - 1] == '/')
        FAIL("the topic prefix has an empty level ('//' or a trailing '/')");
    for (const char *q = prefix; *q; q++)
        if ((unsigned char)*q < 0x20 || *q == 0x7f)
            FAIL("the topic prefix may not hold control characters");
    snprintf(out->prefix, sizeof(out->prefix), "%s", prefix);
    return true;
}
#undef FAIL

size_t trk_mqtt_topic_level(const char *name, char *out, size_t cap)
{
    return trk_objects_escape_name(name, "/+#", out, cap);
}

/* ------------------------------------------------- handing over (any thread) */

static void wake(struct trk_mqtt *m)
{
    uint64_t one = 1;
    ssize_t unused = write(m->wake_fd, &one, sizeof(one));
    (void)unused; /* a full counter (2^64 - 2 wakes) still wakes */
}

/* Frees a slot's buffers when they are over TRK_MQTT_SLOT_KEEP (spares). */
static void slot_trim(struct slot *s)
{
    if (s->data.cap + s->objs.cap <= TRK_MQTT_SLOT_KEEP) return;
    trk_buf_free(&s->data);
    trk_buf_free(&s->objs);
}

/* Copies data[0..len) into b (its memory kept, grown as needed). */
static bool set_bytes(struct trk_buf *b, const char *data, size_t len)
{
    trk_buf_reset(b);
    return trk_buf_append(b, data, len) == 0;
}

static bool slot_set(struct slot *s, const char *data, size_t len, const char *objs,
                     size_t objs_len)
{
    if (len + objs_len + 2 <= TRK_MQTT_SLOT_KEEP) slot_trim(s);
    return set_bytes(&s->data, data, len) && set_bytes(&s->objs, objs, objs_len);
}

void trk_mqtt_frame(struct trk_mqtt *m, const char *json, size_t len, const char *objects,
                    size_t objects_len, double t_capture)
{
    if (!m) return;
    pthread_mutex_lock(&m->lock);
    /* A frame's bytes: its message and its objects' messages. */
    size_t queued = len + objects_len;
    for (int i = 0; i < m->count; i++) {
        const struct slot *q = &m->ring[(m->head + i) % TRK_MQTT_QUEUE_LEN];
        queued += q->data.len + q->objs.len;
    }
    /* The oldest make room for the newest, in slots and in bytes. */
    while (m->count && (m->count == TRK_MQTT_QUEUE_LEN || queued > TRK_MQTT_QUEUE_BYTES)) {
        queued -= m->ring[m->head].data.len + m->ring[m->head].objs.len;
        slot_trim(&m->ring[m->head]);
        m->head = (m->head + 1) % TRK_MQTT_QUEUE_LEN;
        m->count--;
        drop(m, TRK_MQTT_DROP_QUEUE, 1);
    }
    struct slot *s = &m->ring[(m->head + m->count) % TRK_MQTT_QUEUE_LEN];
    if (slot_set(s, json, len, objects, objects_len)) {
        s->t = t_capture;
        m->count++;
    } else {
        drop(m, TRK_MQTT_DROP_ERROR, 1);
    }
    pthread_mutex_unlock(&m->lock);
    wake(m);
}

void trk_mqtt_objects(struct trk_mqtt *m, const struct trk_objects *set)
{
    if (!m) return;
    /* The WebSocket objects message with the camera; colours as the control
     * module sends them. */
    char text[TRK_MAX_OBJECTS][TRK_COLOR_HEX_SIZE];
    const char *colors[TRK_MAX_OBJECTS];
    for (int i = 0; i < set->n; i++) {
        trk_color_hex(set->color[i], text[i]);
        colors[i] = text[i];
    }
    struct trk_buf b = { 0 };
    if (trk_msg_objects_camera(&b, m->camera, set->def, set->n, colors, &set->calib) == 0) {
        pthread_mutex_lock(&m->lock);
        trk_buf_reset(&m->config);
        trk_buf_append(&m->config, b.data, b.len);
        m->config_dirty = true;
        pthread_mutex_unlock(&m->lock);
        wake(m);
    } else {
        log_error("cannot encode the object set for MQTT: %s stays as it was", m->t_config);
    }
    trk_buf_free(&b);
}

void trk_mqtt_source_state(struct trk_mqtt *m, const char *state, const char *text)
{
    if (!m) return;
    pthread_mutex_lock(&m->lock);
    snprintf(m->source, sizeof(m->source), "%s", state ? state : "error");
    m->has_source_text = text != NULL;
    snprintf(m->source_text, sizeof(m->source_text), "%s", text ? text : "");
    m->status_dirty = true;
    pthread_mutex_unlock(&m->lock);
    wake(m);
}

const char *trk_mqtt_drop_name(enum trk_mqtt_drop why)
{
    static const char *const names[TRK_MQTT_DROP_N] = {
        [TRK_MQTT_DROP_QUEUE] = "queue",     [TRK_MQTT_DROP_AGE] = "age",
        [TRK_MQTT_DROP_LATE] = "late",       [TRK_MQTT_DROP_LOST] = "lost",
        [TRK_MQTT_DROP_REFUSED] = "refused", [TRK_MQTT_DROP_STOPPED] = "stopped",
        [TRK_MQTT_DROP_ERROR] = "error",
    };
    return (unsigned)why < TRK_MQTT_DROP_N ? names[why] : "?";
}

void trk_mqtt_get_stats(struct trk_mqtt *m, struct trk_mqtt_stats *st)
{
    memset(st, 0, sizeof(*st));
    if (!m) return;
    st->connected = atomic_load(&m->connected);
    st->published = atomic_load(&m->published);
    for (int i = 0; i < TRK_MQTT_DROP_N; i++) {
        st->drops[i] = atomic_load(&m->drops[i]);
        st->dropped += st->drops[i];
    }
    st->connects = atomic_load(&m->connects);
    st->inflight = atomic_load(&m->inflight);
    pthread_mutex_lock(&m->lock);
    st->queue_len = (uint64_t)m->count;
    pthread_mutex_unlock(&m->lock);
}

/* ------------------------------------------------- the publisher thread */

/* The retained status message (trk_msg_camera_status) into b. */
static void status_json(struct trk_mqtt *m, struct trk_buf *b, bool online, const char *source,
                        const char *text)
{
    trk_buf_reset(b);
    trk_msg_camera_status(b, m->camera, online, m->server, source, text);
}

/* What mosquitto_publish made of a message. */
enum pub {
    PUB_OK,
    PUB_REFUSED, /* this message cannot go (too large, bad topic): the connection stays */
    PUB_GONE,    /* the connection cannot take it (then it is gone) */
};

/* A message of len bytes over the broker's maximum packet size: said once
 * per connection, with the size the broker announced. */
static void refused_too_large(struct trk_mqtt *m, const char *topic, size_t len)
{
    log_once(m->refused_logged, TRK_LOG_WARN, 0,
             "the broker %s:%d refuses packets over %u bytes (its maximum packet size): a "
             "message of %zu bytes on %s is dropped, and every frame too large is dropped "
             "(counted as refused); logged once per connection",
             m->url.host, m->url.port, (unsigned)m->max_packet, len, topic);
}

static enum pub publish(struct trk_mqtt *m, const char *topic, const struct trk_buf *b, int qos,
                        bool retain, int *mid)
{
    if (b->failed) return PUB_REFUSED; /* out of memory: this message is lost, not the connection */
    int rc = mosquitto_publish(m->mosq, mid, topic, (int)b->len, b->data, qos, retain);
    if (rc == MOSQ_ERR_SUCCESS) {
        if (b->len > m->largest) m->largest = b->len;
        return PUB_OK;
    }
    if (mid) *mid = 0; /* nothing of it awaits a PUBACK */
    if (rc == MOSQ_ERR_OVERSIZE_PACKET) {
        refused_too_large(m, topic, b->len);
        return PUB_REFUSED;
    }
    if (rc == MOSQ_ERR_MALFORMED_UTF8 || rc == MOSQ_ERR_PAYLOAD_SIZE || rc == MOSQ_ERR_INVAL) {
        log_warn("cannot publish on %s: %s", topic, mosquitto_strerror(rc));
        return PUB_REFUSED;
    }
    return PUB_GONE;
}

/* Whether a frame message of len bytes is over the broker's maximum packet
 * size: checked before its objects go out, so a frame goes whole or not
 * at all. Counted as libmosquitto does: fixed header (at most 5), topic
 * (2 + length), packet id (2) and the MQTT 5 properties' length (1). */
static bool frame_too_large(const struct trk_mqtt *m, size_t len)
{
    return m->max_packet && 5 + 2 + strlen(m->t_frame) + 2 + 1 + len > m->max_packet;
}

/* One frame: each object on its own topic (QoS 0), its message as the
 * processing thread encoded it (trk_msg_object_result), then <camera>/frame
 * as it is, at QoS 1 and last, so its PUBACK says the broker has the whole
 * frame (*mid: its message id). */
static enum pub publish_frame(struct trk_mqtt *m, const struct slot *f, int *mid)
{
    if (frame_too_large(m, f->data.len)) {
        refused_too_large(m, m->t_frame, f->data.len);
        return PUB_REFUSED;
    }
    const struct trk_buf *whole = &f->data;
    for (size_t at = 0; at < f->objs.len;) {
        const char *level = f->objs.data + at;
        const char *msg = level + strlen(level) + 1;
        const size_t len = strlen(msg);
        at = (size_t)(msg - f->objs.data) + len + 1;
        trk_buf_reset(&m->topic);
        trk_buf_puts(&m->topic, m->base);
        trk_buf_puts(&m->topic, "objects/");
        trk_buf_puts(&m->topic, level);
        const struct trk_buf b = { .data = (char *)msg, .len = len, .cap = len + 1 };
        if (!m->topic.failed && publish(m, m->topic.data, &b, 0, false, NULL) == PUB_GONE)
            return PUB_GONE;
    }
    return publish(m, m->t_frame, whole, 1, false, mid);
}

/* The retained status and object set (QoS 1): after a CONNACK (the broker
 * may have restarted and lost what it retained) and after changes. One of
 * each in flight at most; a change meanwhile waits, only the newest kept,
 * and goes when the broker acknowledged the one before. */
static bool publish_retained(struct trk_mqtt *m)
{
    pthread_mutex_lock(&m->lock);
    bool status = m->status_dirty && !m->status_mid;
    bool config = m->config_dirty && m->config.len && !m->config_mid;
    struct trk_buf c = { 0 };
    if (config) trk_buf_append(&c, m->config.data, m->config.len);
    if (status)
        status_json(m, &m->payload, true, m->source, m->has_source_text ? m->source_text : NULL);
    if (status) m->status_dirty = false;
    if (config) m->config_dirty = false;
    pthread_mutex_unlock(&m->lock);
    bool ok =
        (!status || publish(m, m->t_status, &m->payload, 1, true, &m->status_mid) != PUB_GONE) &&
        (!config || publish(m, m->t_config, &c, 1, true, &m->config_mid) != PUB_GONE);
    trk_buf_free(&c);
    return ok;
}

static void on_connect(struct mosquitto *mosq, void *obj, int rc, int flags,
                       const mosquitto_property *props)
{
    (void)mosq, (void)flags;
    struct trk_mqtt *m = obj;
    if (rc) {
        /* Refused (bad credentials, ...): loop_read returns the error and
         * on_disconnect schedules the retry. A broker that speaks 3.1.1
         * only refuses MQTT 5 thus: the next attempt speaks 3.1.1. */
        if (rc == MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION && m->proto == MQTT_PROTOCOL_V5) {
            m->proto = MQTT_PROTOCOL_V311;
            log_info("the broker %s:%d does not speak MQTT 5: trackd speaks 3.1.1 to it (it "
                     "cannot announce a packet size limit then)",
                     m->url.host, m->url.port);
            m->fallback = true;
        }
        m->drop_why = rc >= 0x80 ? mosquitto_reason_string(rc) : mosquitto_connack_string(rc);
        return;
    }
    m->state = CONNECTED;
    m->t_connected = trk_now();
    m->held = false;
    m->per_frame = 0;
    m->largest = 0;
    uint32_t max_packet = 0;
    mosquitto_property_read_int32(props, MQTT_PROP_MAXIMUM_PACKET_SIZE, &max_packet, false);
    m->max_packet = max_packet;
    trk_log_once_reset(m->refused_logged);
    atomic_store(&m->connected, true);
    uint64_t n = atomic_fetch_add(&m->connects, 1) + 1;
    log_info("connected to %s:%d%s, publishing under %s (connection %llu)", m->url.host,
             m->url.port, m->url.tls ? " (TLS)" : "", m->base, (unsigned long long)n);
    char sub[TOPIC_MAX + 16];
    snprintf(sub, sizeof(sub), "%ssync/request/+", m->base);
    mosquitto_subscribe(mosq, NULL, sub, 0);
    pthread_mutex_lock(&m->lock);
    m->status_dirty = true;
    m->config_dirty = true;
    pthread_mutex_unlock(&m->lock);
}

/* A sync client id: the bytes of a camera name (--name). */
#define SYNC_ID_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"

/* A clock sync request on <base>sync/request/CLIENT: answered at once on
 * <base>sync/reply/CLIENT, QoS 0 (a late retry would only be a worse
 * sample). Anything else, a client id that is not one plain topic level,
 * and requests over TRK_MQTT_SYNC_PER_S are not answered. */
static void on_message(struct mosquitto *mosq, void *obj, const struct mosquitto_message *msg,
                       const mosquitto_property *props)
{
    (void)props;
    struct trk_mqtt *m = obj;
    struct trk_sync_times st = { .rx_mono = trk_now(), .rx_wall_ms = trk_wall_ms() };
    size_t nb = strlen(m->base);
    static const char req[] = "sync/request/";
    if (strncmp(msg->topic, m->base, nb) || strncmp(msg->topic + nb, req, sizeof(req) - 1)) return;
    const char *id = msg->topic + nb + sizeof(req) - 1;
    size_t n = strlen(id);
    if (n < 1 || n > TRK_MQTT_SYNC_ID_MAX || strspn(id, SYNC_ID_CHARS) != n) return;
    if (st.rx_mono - m->sync_second >= 1.0) {
        m->sync_second = st.rx_mono;
        m->sync_replies = 0;
    }
    if (m->sync_replies >= TRK_MQTT_SYNC_PER_S) return;
    struct trk_cmsg cm;
    static const char *const none[] = { NULL };
    if (trk_msg_parse_client(msg->payload, (size_t)msg->payloadlen, none, &cm, NULL, 0) !=
            TRK_MSG_OK ||
        cm.kind != TRK_CMSG_SYNC)
        return;
    char topic[TOPIC_MAX + 16 + TRK_MQTT_SYNC_ID_MAX];
    snprintf(topic, sizeof(topic), "%ssync/reply/%s", m->base, id);
    struct trk_buf b = { 0 };
    trk_msg_sync_stamp_tx(&st);
    if (trk_msg_sync(&b, cm.id, cm.t0, &st) == 0) {
        m->sync_replies++;
        mosquitto_publish(mosq, NULL, topic, (int)b.len, b.data, 0, false);
    }
    trk_buf_free(&b);
}

/* The connection is gone: the frames awaiting their PUBACK are lost (those
 * past their age were counted already), and so are the retained messages
 * in flight, sent again on the next connection. */
static void forget_inflight(struct trk_mqtt *m)
{
    for (int i = 0; i < m->n_win; i++)
        if (!m->win[i].late) drop(m, TRK_MQTT_DROP_LOST, 1);
    m->n_win = 0;
    atomic_store(&m->inflight, 0);
    m->status_mid = m->config_mid = 0;
}

static void on_disconnect(struct mosquitto *mosq, void *obj, int rc,
                          const mosquitto_property *props)
{
    (void)mosq, (void)props;
    struct trk_mqtt *m = obj;
    int e = errno;
    double now = trk_now();
    bool was = m->state == CONNECTED && !m->closing;
    /* rc: a DISCONNECT's reason code from an MQTT 5 broker (0x80 and up,
     * e.g. "Packet too large"), else libmosquitto's error. */
    const char *why = m->drop_why            ? m->drop_why
                      : rc >= 0x80           ? mosquitto_reason_string(rc)
                      : rc == MOSQ_ERR_ERRNO ? strerror(e)
                      : rc                   ? mosquitto_strerror(rc)
                                             : "closed";
    atomic_store(&m->connected, false);
    m->state = IDLE;
    m->drop_why = NULL;
    forget_inflight(m);
    if (m->closing) return; /* finish()'s own DISCONNECT */
    if (m->fallback) {      /* said in on_connect; not a failure */
        m->fallback = false;
        m->next_try = now;
        return;
    }
    if (was && m->held) { /* publish_due set the backoff back to the minimum */
        log_warn("connection to %s:%d lost (%s): frames are dropped (counted) until it is back; "
                 "reconnecting",
                 m->url.host, m->url.port, why);
    } else if (was) {
        /* Accepted, then dropped before it held: a broker that refuses what
         * trackd sends (a 3.1.1 broker closes the connection on a packet
         * over its size limit without a word) is retried with backoff. */
        char size[96] = "";
        if (m->proto != MQTT_PROTOCOL_V5 && m->largest)
            snprintf(size, sizeof(size), "; the largest message sent on it was %zu bytes",
                     m->largest);
        log_once(m->drop_logged, TRK_LOG_WARN, 0,
                 "the broker %s:%d accepted the connection and it ended %.1f s later (%s%s): "
                 "trackd retries with backoff up to %g s; logged once until a connection holds "
                 "%g s",
                 m->url.host, m->url.port, now - m->t_connected, why, size, TRK_MQTT_BACKOFF_MAX_S,
                 TRK_MQTT_HOLD_S);
    } else {
        log_once(m->fail_logged, TRK_LOG_WARN, 0,
                 "cannot connect to the broker %s:%d (%s): trackd runs on and retries "
                 "(backoff up to %g s); logged once until a connection works",
                 m->url.host, m->url.port, why, TRK_MQTT_BACKOFF_MAX_S);
    }
    m->next_try = now + m->backoff;
    m->backoff *= 2;
    if (m->backoff > TRK_MQTT_BACKOFF_MAX_S) m->backoff = TRK_MQTT_BACKOFF_MAX_S;
}

/* A PUBACK (or, for QoS 0, the write): a frame of the window is published
 * unless its age passed or the broker refused it (an MQTT 5 error code). */
static void on_publish(struct mosquitto *mosq, void *obj, int mid, int reason,
                       const mosquitto_property *props)
{
    (void)mosq, (void)props;
    struct trk_mqtt *m = obj;
    if (mid == m->offline_mid) m->offline_sent = true;
    if (mid == m->status_mid || mid == m->config_mid) {
        if (reason >= 0x80)
            log_once(m->retained_logged, TRK_LOG_WARN, 0,
                     "the broker refused the retained %s (%s); logged once",
                     mid == m->status_mid ? m->t_status : m->t_config,
                     mosquitto_reason_string(reason));
        if (mid == m->status_mid) m->status_mid = 0;
        if (mid == m->config_mid) m->config_mid = 0;
        return;
    }
    for (int i = 0; i < m->n_win; i++) {
        struct flight *f = &m->win[i];
        if (f->mid != mid) continue;
        if (reason >= 0x80) {
            log_once(m->refused_logged, TRK_LOG_WARN, 0,
                     "the broker refuses the frame messages on %s (%s): they are dropped "
                     "(counted as refused); logged once per connection",
                     m->t_frame, mosquitto_reason_string(reason));
            if (!f->late) drop(m, TRK_MQTT_DROP_REFUSED, 1);
        } else if (!f->late) {
            atomic_fetch_add(&m->published, 1);
        }
        double per = (trk_now() - f->sent) / (f->ahead + 1);
        m->per_frame = m->per_frame ? 0.75 * m->per_frame + 0.25 * per : per;
        memmove(f, f + 1, (size_t)(m->n_win - i - 1) * sizeof(*f));
        m->n_win--;
        atomic_store(&m->inflight, (uint64_t)m->n_win);
        return;
    }
}

/* The handle's settings, callbacks and will: at create (so a bad TLS setup
 * fails there) and before every connection attempt after the first, on a
 * reinitialised handle (see the top of this file). 0 or TRK_EINVAL
 * (logged), TRK_ENOMEM. */
static int setup_handle(struct trk_mqtt *m)
{
    /* A client id per process: two trackd with one camera name must not
     * take each other's session over. */
    char id[200];
    snprintf(id, sizeof(id), "trackd-%.64s-%ld", m->camera, (long)getpid());
    if (!m->mosq) {
        if (!(m->mosq = mosquitto_new(id, true, m))) return TRK_ENOMEM;
    } else if (mosquitto_reinitialise(m->mosq, id, true, m) != MOSQ_ERR_SUCCESS) {
        return TRK_ENOMEM;
    }
    mosquitto_int_option(m->mosq, MOSQ_OPT_PROTOCOL_VERSION, m->proto);
    /* Frames are small and go out one by one: Nagle's algorithm would hold
     * each back until the previous one is acknowledged. */
    mosquitto_int_option(m->mosq, MOSQ_OPT_TCP_NODELAY, 1);
    /* The window and the retained messages, never queued in libmosquitto. */
    mosquitto_int_option(m->mosq, MOSQ_OPT_SEND_MAXIMUM, TRK_MQTT_WINDOW + 3);
    mosquitto_connect_v5_callback_set(m->mosq, on_connect);
    mosquitto_disconnect_v5_callback_set(m->mosq, on_disconnect);
    mosquitto_publish_v5_callback_set(m->mosq, on_publish);
    mosquitto_message_v5_callback_set(m->mosq, on_message);
    int rc = MOSQ_ERR_SUCCESS;
    if (m->url.user[0])
        rc = mosquitto_username_pw_set(m->mosq, m->url.user, m->url.has_pass ? m->url.pass : NULL);
    struct trk_buf will = { 0 };
    status_json(m, &will, false, NULL, "connection lost");
    if (rc == MOSQ_ERR_SUCCESS && !will.failed)
        rc = mosquitto_will_set(m->mosq, m->t_status, (int)will.len, will.data, 1, true);
    trk_buf_free(&will);
    if (rc == MOSQ_ERR_SUCCESS && m->url.tls) {
        rc = mosquitto_tls_set(m->mosq, m->ca_file, m->ca_file ? NULL : "/etc/ssl/certs", NULL,
                               NULL, NULL);
        if (rc != MOSQ_ERR_SUCCESS) {
            log_error("--mqtt-ca %s: %s", m->ca_file ? m->ca_file : "(system CAs)",
                      mosquitto_strerror(rc));
            return TRK_EINVAL;
        }
    }
    if (rc != MOSQ_ERR_SUCCESS) {
        log_error("cannot set up the MQTT client: %s", mosquitto_strerror(rc));
        return rc == MOSQ_ERR_NOMEM ? TRK_ENOMEM : TRK_EINVAL;
    }
    return 0;
}

/* Whether name has addresses of family fam (numeric, /etc/hosts or DNS). */
static bool has_family(const char *name, int fam)
{
    struct addrinfo hints = { .ai_family = fam, .ai_socktype = SOCK_STREAM }, *ai = NULL;
    if (getaddrinfo(name, NULL, &hints, &ai) != 0) return false;
    freeaddrinfo(ai);
    return true;
}

static void try_connect(struct trk_mqtt *m, double now)
{
    m->t_attempt = now;
    int err = m->used ? setup_handle(m) : 0;
    m->used = true;
    if (err) {
        m->drop_why = "cannot set up the client again";
        m->state = CONNECTING; /* on_disconnect reads it as "never connected" */
        on_disconnect(m->mosq, m, 0, NULL);
        return;
    }
    /* A name with IPv4 and IPv6 addresses (localhost on a stock Debian lists
     * ::1 first): libmosquitto's asynchronous connect takes the first address
     * whose connect() is merely in progress, so a broker listening on IPv4
     * only would never be reached. Every other attempt therefore binds the
     * socket to 0.0.0.0, which makes libmosquitto skip the IPv6 addresses;
     * the attempts between use its own order (a broker on ::1 only). The
     * name itself is kept, so TLS still checks the certificate against it. */
    const bool v4_first = m->tries++ % 2 == 0 && has_family(m->url.host, AF_INET) &&
                          has_family(m->url.host, AF_INET6);
    errno = 0;
    int rc = mosquitto_connect_bind_async(m->mosq, m->url.host, m->url.port, TRK_MQTT_KEEPALIVE_S,
                                          v4_first ? "0.0.0.0" : NULL);
    if (rc == MOSQ_ERR_SUCCESS) {
        m->state = CONNECTING;
        return;
    }
    /* Failed at once (refused on loopback, a name that does not resolve). */
    m->drop_why = rc == MOSQ_ERR_ERRNO ? strerror(errno) : mosquitto_strerror(rc);
    m->state = CONNECTING; /* on_disconnect reads it as "never connected" */
    on_disconnect(m->mosq, m, rc, NULL);
}

/* Takes the oldest queued frame that should reach the broker within half
 * its max age into m->work, dropping (counted) those that cannot; false
 * when none. "Should": its age plus its expected wait for the PUBACK, the
 * recent send-to-PUBACK time per frame in flight times the frames in flight
 * with it (a slow broker takes them one after the other). Half, so that a
 * PUBACK slower than the last ones still comes within the max age; so a
 * slow broker gets fewer frames in flight rather than late ones. With none
 * in flight any frame within half its age goes, which measures again. */
static bool take_frame(struct trk_mqtt *m, double now)
{
    bool any = false;
    double ahead = m->n_win ? (m->n_win + 1) * m->per_frame : 0;
    pthread_mutex_lock(&m->lock);
    while (!any && m->count > 0) {
        struct slot *s = &m->ring[m->head];
        if (now - s->t + ahead > m->max_age / 2) {
            drop(m, TRK_MQTT_DROP_AGE, 1);
        } else {
            struct slot t = m->work;
            m->work = *s;
            *s = t; /* the ring keeps the spare buffer, a small one */
            any = true;
        }
        slot_trim(s);
        m->head = (m->head + 1) % TRK_MQTT_QUEUE_LEN;
        m->count--;
    }
    pthread_mutex_unlock(&m->lock);
    return any;
}

/* Frames past their age: queued ones are dropped, sent ones without a
 * PUBACK counted dropped now (their slot in the window stays until the
 * PUBACK or the end of the connection, so a broker that stopped reading
 * gets no more than the window). */
static void expire(struct trk_mqtt *m, double now)
{
    pthread_mutex_lock(&m->lock);
    while (m->count > 0 && now - m->ring[m->head].t > m->max_age) {
        drop(m, TRK_MQTT_DROP_AGE, 1);
        slot_trim(&m->ring[m->head]);
        m->head = (m->head + 1) % TRK_MQTT_QUEUE_LEN;
        m->count--;
    }
    pthread_mutex_unlock(&m->lock);
    for (int i = 0; i < m->n_win; i++) {
        if (!m->win[i].late && now - m->win[i].t > m->max_age) {
            m->win[i].late = true;
            drop(m, TRK_MQTT_DROP_LATE, 1);
        }
    }
}

/* One turn: poll the socket and the wake fd for at most timeout_ms, then
 * let libmosquitto read, write and keep alive. */
static void turn(struct trk_mqtt *m, int timeout_ms)
{
    struct pollfd pf[2] = { { .fd = m->wake_fd, .events = POLLIN }, { .fd = -1 } };
    int sock = mosquitto_socket(m->mosq);
    if (sock >= 0) {
        pf[1].fd = sock;
        pf[1].events = POLLIN | (mosquitto_want_write(m->mosq) ? POLLOUT : 0);
    }
    if (poll(pf, 2, timeout_ms) < 0) return;
    if (pf[0].revents & POLLIN) {
        uint64_t v;
        ssize_t unused = read(m->wake_fd, &v, sizeof(v));
        (void)unused;
    }
    if (sock >= 0 && (pf[1].revents & (POLLIN | POLLERR | POLLHUP)))
        mosquitto_loop_read(m->mosq, 1);
    if (mosquitto_socket(m->mosq) >= 0 && (pf[1].revents & POLLOUT))
        mosquitto_loop_write(m->mosq, 1);
    if (mosquitto_socket(m->mosq) >= 0) mosquitto_loop_misc(m->mosq);
}

/* Hands libmosquitto what is due: the retained messages, then frames while
 * the window has room. */
static void publish_due(struct trk_mqtt *m)
{
    double now = trk_now();
    expire(m, now);
    if (m->state != CONNECTED) return;
    if (!m->held && now - m->t_connected >= TRK_MQTT_HOLD_S) {
        /* This connection held: the backoff and the failure log start over. */
        m->held = true;
        m->backoff = TRK_MQTT_BACKOFF_MIN_S;
        trk_log_once_reset(m->fail_logged);
        trk_log_once_reset(m->drop_logged);
    }
    if (!publish_retained(m)) return;
    while (m->state == CONNECTED && m->n_win < TRK_MQTT_WINDOW && take_frame(m, now)) {
        int mid = 0;
        switch (publish_frame(m, &m->work, &mid)) {
        case PUB_OK:
            m->win[m->n_win] =
                (struct flight){ .mid = mid, .t = m->work.t, .sent = now, .ahead = m->n_win };
            m->n_win++;
            atomic_store(&m->inflight, (uint64_t)m->n_win);
            break;
        case PUB_REFUSED: drop(m, TRK_MQTT_DROP_REFUSED, 1); break;
        case PUB_GONE: drop(m, TRK_MQTT_DROP_LOST, 1); return;
        }
    }
}

static bool quitting(struct trk_mqtt *m)
{
    pthread_mutex_lock(&m->lock);
    bool q = m->quit;
    pthread_mutex_unlock(&m->lock);
    return q;
}

/* The end: what is queued goes out while the broker takes it and its
 * PUBACKs come, then "offline" (TRK_MQTT_CLOSE_S in all at most), then a
 * clean DISCONNECT, so the broker drops the will. Frames left over are
 * dropped (counted). */
static void finish(struct trk_mqtt *m)
{
    double deadline = trk_now() + TRK_MQTT_CLOSE_S;
    while (m->state == CONNECTED && trk_now() < deadline) {
        publish_due(m);
        pthread_mutex_lock(&m->lock);
        bool empty = m->count == 0;
        pthread_mutex_unlock(&m->lock);
        if (empty && !m->n_win && !mosquitto_want_write(m->mosq)) break;
        turn(m, 20);
    }
    for (int i = 0; i < m->n_win; i++)
        if (!m->win[i].late) drop(m, TRK_MQTT_DROP_STOPPED, 1);
    m->n_win = 0;
    if (m->state == CONNECTED) {
        pthread_mutex_lock(&m->lock);
        status_json(m, &m->payload, false, m->source, "trackd stopped");
        pthread_mutex_unlock(&m->lock);
        int mid = 0;
        if (publish(m, m->t_status, &m->payload, 1, true, &mid) == PUB_OK) {
            m->offline_mid = mid;
            while (m->state == CONNECTED && !m->offline_sent && trk_now() < deadline)
                turn(m, 20);
        }
        m->closing = true;
        mosquitto_disconnect(m->mosq);
    }
    pthread_mutex_lock(&m->lock);
    drop(m, TRK_MQTT_DROP_STOPPED, (uint64_t)m->count);
    m->count = 0;
    pthread_mutex_unlock(&m->lock);
}

static void *mqtt_main(void *arg)
{
    struct trk_mqtt *m = arg;
    prctl(PR_SET_NAME, "trk-mqtt", 0, 0, 0);
    while (!quitting(m)) {
        double now = trk_now();
        if (m->state == IDLE && now >= m->next_try) try_connect(m, now);
        if (m->state == CONNECTING && now - m->t_attempt > TRK_MQTT_CONNACK_S) {
            m->drop_why = "no answer to CONNECT within 5 s";
            mosquitto_disconnect(m->mosq); /* calls on_disconnect */
            if (m->state != IDLE) on_disconnect(m->mosq, m, 0, NULL);
        }
        publish_due(m);
        /* Connected: frames and PUBACKs wake the thread; otherwise (and for
         * the ages of frames) poll often enough for the backoff and the
         * CONNACK timeout. */
        int timeout = 100;
        if (m->state == IDLE) {
            double left = m->next_try - trk_now();
            timeout = left <= 0 ? 0 : left < 0.1 ? (int)(left * 1000) + 1 : 100;
        }
        turn(m, timeout);
    }
    finish(m);
    return NULL;
}

/* ------------------------------------------------------------ lifecycle */

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static void lib_init(void)
{
    mosquitto_lib_init();
}

int trk_mqtt_create(const struct trk_mqtt_cfg *cfg, struct trk_mqtt **out)
{
    *out = NULL;
    char why[160];
    struct trk_mqtt *m = calloc(1, sizeof(*m));
    if (!m) return TRK_ENOMEM;
    m->wake_fd = -1;
    pthread_mutex_init(&m->lock, NULL);
    int err = TRK_EINVAL;
    if (!trk_mqtt_url_parse(cfg->url, &m->url, why, sizeof(why))) {
        log_error("--mqtt %s: %s", cfg->url, why);
        goto fail;
    }
    snprintf(m->camera, sizeof(m->camera), "%s", cfg->camera ? cfg->camera : "trackd");
    snprintf(m->server, sizeof(m->server), "%s", cfg->server ? cfg->server : "trackd");
    snprintf(m->base, sizeof(m->base), "%s/%s/", m->url.prefix, m->camera);
    snprintf(m->t_frame, sizeof(m->t_frame), "%sframe", m->base);
    snprintf(m->t_status, sizeof(m->t_status), "%sstatus", m->base);
    snprintf(m->t_config, sizeof(m->t_config), "%sconfig", m->base);
    snprintf(m->source, sizeof(m->source), "starting");
    m->status_dirty = true;
    m->backoff = TRK_MQTT_BACKOFF_MIN_S;
    m->max_age = cfg->max_age > 0 ? cfg->max_age : TRK_MQTT_MAX_AGE_S;
    err = TRK_ENOMEM;
    if (cfg->ca_file && !(m->ca_file = strdup(cfg->ca_file))) goto fail;
    if ((m->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        err = -errno;
        goto fail;
    }
    pthread_once(&lib_once, lib_init);
    m->proto = MQTT_PROTOCOL_V5;
    if ((err = setup_handle(m))) goto fail;
    *out = m;
    return 0;
fail:
    trk_mqtt_destroy(&m);
    return err;
}

int trk_mqtt_start(struct trk_mqtt *m)
{
    int e = pthread_create(&m->thread, NULL, mqtt_main, m);
    if (e) return -e;
    m->have_thread = true;
    log_info("publishing to %s:%d%s under %s (connecting in the background)", m->url.host,
             m->url.port, m->url.tls ? " (TLS)" : "", m->base);
    return 0;
}

void trk_mqtt_destroy(struct trk_mqtt **pm)
{
    struct trk_mqtt *m = *pm;
    if (!m) return;
    if (m->have_thread) {
        pthread_mutex_lock(&m->lock);
        m->quit = true;
        pthread_mutex_unlock(&m->lock);
        wake(m);
        pthread_join(m->thread, NULL);
        struct trk_mqtt_stats st;
        trk_mqtt_get_stats(m, &st);
        char why[256] = "";
        size_t n = 0;
        for (int i = 0; i < TRK_MQTT_DROP_N && n < sizeof(why); i++)
            if (st.drops[i])
                n += (size_t)snprintf(why + n, sizeof(why) - n, "%s%s %llu", n ? ", " : " (",
                                      trk_mqtt_drop_name(i), (unsigned long long)st.drops[i]);
        if (n && n < sizeof(why) - 1) snprintf(why + n, sizeof(why) - n, ")");
        log_info("%llu frames published, %llu dropped%s, %llu connections",
                 (unsigned long long)st.published, (unsigned long long)st.dropped, why,
                 (unsigned long long)st.connects);
    }
    if (m->mosq) mosquitto_destroy(m->mosq);
    if (m->wake_fd >= 0) close(m->wake_fd);
    for (int i = 0; i < TRK_MQTT_QUEUE_LEN; i++) {
        trk_buf_free(&m->ring[i].data);
        trk_buf_free(&m->ring[i].objs);
    }
    trk_buf_free(&m->work.data);
    trk_buf_free(&m->work.objs);
    trk_buf_free(&m->objs);
    trk_buf_free(&m->topic);
    trk_buf_free(&m->payload);
    trk_buf_free(&m->config);
    free(m->ca_file);
    pthread_mutex_destroy(&m->lock);
    free(m);
    *pm = NULL;
}

/* ------------------------------------------------- the outputs door */

/* The frame message and, per object, its topic level and its message:
 * encoded here (messages.h), so the publisher only publishes. */
static void mq_frame(void *ctx, const struct trk_frame_result *r, const char *json, size_t len)
{
    struct trk_mqtt *m = ctx;
    struct trk_buf *b = &m->objs;
    char level[TRK_NAME_MAX * 3 + 1];
    trk_buf_reset(b);
    for (int i = 0; i < r->n; i++) {
        trk_mqtt_topic_level(r->defs[i].name, level, sizeof(level));
        trk_buf_append(b, level, strlen(level) + 1);
        trk_msg_object_result(b, r, m->camera, i);
        trk_buf_append(b, "", 1);
    }
    if (b->failed) {
        drop(m, TRK_MQTT_DROP_ERROR, 1);
        return;
    }
    trk_mqtt_frame(m, json, len, b->data, b->len, r->meta.t_capture);
}

/* The retained status says the source's state; a size change is not one. */
static void mq_status(void *ctx, const struct trk_source_status *s)
{
    if (s->width <= 0) trk_mqtt_source_state(ctx, s->state, s->text);
}

static void mq_objects(void *ctx, const struct trk_objects *set)
{
    trk_mqtt_objects(ctx, set);
}

static void mq_tally(void *ctx, struct trk_outputs_tally *t)
{
    struct trk_mqtt_stats ms;
    trk_mqtt_get_stats(ctx, &ms);
    t->info->has_mqtt = true;
    t->info->mqtt_connected = ms.connected;
    t->info->mqtt_published = ms.published;
    t->info->mqtt_dropped = ms.dropped;
    t->info->mqtt_connects = ms.connects;
    if (t->metrics) trk_metrics_set_mqtt(t->metrics, &ms);
}

/* The last frames and "offline" go out (TRK_MQTT_CLOSE_S at most). */
static int mq_close(void *ctx)
{
    struct trk_mqtt *m = ctx;
    trk_mqtt_destroy(&m);
    return 0;
}

static const struct trk_output_ops mqtt_ops = {
    .name = "mqtt",
    .json = true,
    .frame = mq_frame,
    .status = mq_status,
    .objects = mq_objects,
    .tally = mq_tally,
    .close = mq_close,
};

/* --mqtt: the publisher starts now and connects in the background, so a
 * broker that is down or slow never holds trackd's start (it is logged once
 * and retried). A CA file that cannot be read is an input error. */
int trk_mqtt_open(const struct trk_output_env *env, struct trk_outputs *o)
{
    const struct trk_settings *s = env->s;
    if (!s->mqtt) return 0;
    if (s->mqtt_ca && access(s->mqtt_ca, R_OK) != 0) {
        log_error_err(-errno, "--mqtt-ca %s", s->mqtt_ca);
        return TRK_EX_NOINPUT;
    }
    struct trk_mqtt_cfg mc = { .url = s->mqtt,
                               .ca_file = s->mqtt_ca,
                               .camera = s->camera_name,
                               .server = "trackd " TRK_VERSION,
                               .max_age = s->mqtt_max_age };
    struct trk_mqtt *m;
    int err = trk_mqtt_create(&mc, &m);
    if (err == TRK_EINVAL) return TRK_EX_CONFIG; /* said why */
    if (!err && (err = trk_mqtt_start(m))) trk_mqtt_destroy(&m);
    if (err) {
        log_error_err(err, "cannot start the MQTT publisher");
        return TRK_EX_SOFTWARE;
    }
    return trk_outputs_add(o, &mqtt_ops, m) ? TRK_EX_SOFTWARE : 0;
}
