/* The MQTT sink: see mqtt.h. The publisher thread drives libmosquitto's
 * external-loop API (connect_async, loop_read/write/misc on its socket in
 * our own poll), so a frame handed over wakes it at once (an eventfd) and
 * nothing but this thread ever touches the handle. */
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

#include <jansson.h>
#include <netdb.h>
#include <mosquitto.h>

#define LOG_TAG "mqtt"
#include "frame.h" /* trk_now */
#include "log.h"
#include "messages.h"

/* A queued message: the bytes and what they were allocated for. */
struct slot {
    char *data;
    size_t len, cap;
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
    const char *drop_why; /* why this thread itself dropped the connection */
    _Atomic bool fail_logged;
    struct slot work; /* the frame being published */
    struct trk_buf topic, payload;
    int offline_mid;   /* the offline status's message id at the end; 0 none */
    bool offline_sent; /* ... and the broker has it (PUBACK) */
    bool closing;      /* finish() disconnects: no warning for it */
    unsigned tries;    /* connection attempts so far (address family choice) */

    /* Guarded by lock: what the other threads hand over. */
    pthread_mutex_t lock;
    struct slot ring[TRK_MQTT_QUEUE_LEN];
    int head, count;
    struct trk_buf config; /* the retained config payload; len 0 = none yet */
    char source[16];       /* the source's state */
    char source_text[256];
    bool has_source_text;
    bool status_dirty, config_dirty; /* to publish (again: after each CONNACK) */
    bool quit;

    _Atomic bool connected;
    _Atomic uint64_t published, dropped, connects;
};

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
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    if (!cap) return 0;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        bool esc = *p == '/' || *p == '+' || *p == '#' || *p == '%' || *p < 0x20 || *p == 0x7f;
        size_t need = esc ? 3 : 1;
        if (o + need >= cap) break;
        if (esc) {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        } else {
            out[o++] = (char)*p;
        }
    }
    out[o] = 0;
    return o;
}

/* ------------------------------------------------- handing over (any thread) */

static void wake(struct trk_mqtt *m)
{
    uint64_t one = 1;
    ssize_t unused = write(m->wake_fd, &one, sizeof(one));
    (void)unused; /* a full counter (2^64 - 2 wakes) still wakes */
}

/* Frees a slot's buffer when it is over TRK_MQTT_SLOT_KEEP (a spare). */
static void slot_trim(struct slot *s)
{
    if (s->cap <= TRK_MQTT_SLOT_KEEP) return;
    free(s->data);
    *s = (struct slot){ 0 };
}

static bool slot_set(struct slot *s, const char *data, size_t len)
{
    if (len + 1 <= TRK_MQTT_SLOT_KEEP) slot_trim(s);
    if (len + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 1024;
        while (cap < len + 1)
            cap *= 2;
        char *d = realloc(s->data, cap);
        if (!d) return false;
        s->data = d, s->cap = cap;
    }
    memcpy(s->data, data, len);
    s->data[len] = 0;
    s->len = len;
    return true;
}

void trk_mqtt_frame(struct trk_mqtt *m, const char *json, size_t len)
{
    if (!m) return;
    pthread_mutex_lock(&m->lock);
    size_t queued = len;
    for (int i = 0; i < m->count; i++)
        queued += m->ring[(m->head + i) % TRK_MQTT_QUEUE_LEN].len;
    /* The oldest make room for the newest, in slots and in bytes. */
    while (m->count && (m->count == TRK_MQTT_QUEUE_LEN || queued > TRK_MQTT_QUEUE_BYTES)) {
        queued -= m->ring[m->head].len;
        slot_trim(&m->ring[m->head]);
        m->head = (m->head + 1) % TRK_MQTT_QUEUE_LEN;
        m->count--;
        atomic_fetch_add(&m->dropped, 1);
    }
    if (slot_set(&m->ring[(m->head + m->count) % TRK_MQTT_QUEUE_LEN], json, len))
        m->count++;
    else
        atomic_fetch_add(&m->dropped, 1);
    pthread_mutex_unlock(&m->lock);
    wake(m);
}

void trk_mqtt_objects(struct trk_mqtt *m, const struct trk_objects *set)
{
    if (!m) return;
    /* {"type":"objects","camera":C,"objects":[...]}: the WebSocket objects
     * message with the camera; colours as the control module sends them. */
    char text[TRK_MAX_OBJECTS][8];
    const char *colors[TRK_MAX_OBJECTS];
    for (int i = 0; i < set->n; i++) {
        snprintf(text[i], sizeof(text[i]), "#%02x%02x%02x", set->color[i][0], set->color[i][1],
                 set->color[i][2]);
        colors[i] = text[i];
    }
    struct trk_buf msg = { 0 }, b = { 0 };
    static const char head[] = "{\"type\":\"objects\"";
    if (trk_msg_objects_calib(&msg, NULL, set->def, set->n, colors, &set->calib) == 0 &&
        msg.len > sizeof(head) - 1 && !memcmp(msg.data, head, sizeof(head) - 1)) {
        trk_buf_puts(&b, head);
        trk_buf_puts(&b, ",\"camera\":");
        trk_buf_json_str(&b, m->camera, sizeof(m->camera));
        trk_buf_append(&b, msg.data + sizeof(head) - 1, msg.len - (sizeof(head) - 1));
    }
    if (!b.failed && b.len) {
        pthread_mutex_lock(&m->lock);
        trk_buf_reset(&m->config);
        trk_buf_append(&m->config, b.data, b.len);
        m->config_dirty = true;
        pthread_mutex_unlock(&m->lock);
        wake(m);
    } else {
        log_error("cannot encode the object set for MQTT: %s stays as it was", m->t_config);
    }
    trk_buf_free(&msg);
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

void trk_mqtt_get_stats(struct trk_mqtt *m, struct trk_mqtt_stats *st)
{
    memset(st, 0, sizeof(*st));
    if (!m) return;
    st->connected = atomic_load(&m->connected);
    st->published = atomic_load(&m->published);
    st->dropped = atomic_load(&m->dropped);
    st->connects = atomic_load(&m->connects);
    pthread_mutex_lock(&m->lock);
    st->queue_len = (uint64_t)m->count;
    pthread_mutex_unlock(&m->lock);
}

/* ------------------------------------------------- the publisher thread */

/* {"type":"status","camera":C,"online":B,"server":S,"source":X,"message":T} */
static void status_json(struct trk_mqtt *m, struct trk_buf *b, bool online, const char *source,
                        const char *text)
{
    trk_buf_reset(b);
    trk_buf_puts(b, "{\"type\":\"status\",\"camera\":");
    trk_buf_json_str(b, m->camera, sizeof(m->camera));
    trk_buf_puts(b, online ? ",\"online\":true,\"server\":" : ",\"online\":false,\"server\":");
    trk_buf_json_str(b, m->server, sizeof(m->server));
    trk_buf_puts(b, ",\"source\":");
    trk_buf_json_str(b, source, 16);
    trk_buf_puts(b, ",\"message\":");
    trk_buf_json_str(b, text, 256);
    trk_buf_puts(b, "}");
}

/* Publishes; false when the connection cannot take it (then it is gone). */
static bool publish(struct trk_mqtt *m, const char *topic, const struct trk_buf *b, int qos,
                    bool retain, int *mid)
{
    if (b->failed) return true; /* out of memory: this message is lost, not the connection */
    int rc = mosquitto_publish(m->mosq, mid, topic, (int)b->len, b->data, qos, retain);
    if (rc == MOSQ_ERR_SUCCESS) return true;
    if (rc == MOSQ_ERR_MALFORMED_UTF8 || rc == MOSQ_ERR_PAYLOAD_SIZE || rc == MOSQ_ERR_INVAL) {
        log_warn("cannot publish on %s: %s", topic, mosquitto_strerror(rc));
        return true;
    }
    return false;
}

/* The frame's "objects" array elements: [start, end) byte ranges of the
 * JSON text, found by walking its structure (strings skipped, depth
 * counted), so whatever fields an object carries go along as they are.
 * Returns how many, at most max. */
static int object_ranges(const char *s, size_t len, size_t (*r)[2], int max)
{
    int depth = 0, n = 0;
    bool in_str = false, esc = false, key_objects = false, want_array = false, in_array = false;
    size_t str_start = 0, start = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (in_str) {
            if (esc)
                esc = false;
            else if (c == '\\')
                esc = true;
            else if (c == '"') {
                in_str = false;
                key_objects =
                    depth == 1 && i - str_start == 7 && !memcmp(s + str_start, "objects", 7);
            }
            continue;
        }
        switch (c) {
        case '"':
            in_str = true;
            str_start = i + 1;
            want_array = false;
            break;
        case ':':
            want_array = key_objects;
            key_objects = false;
            break;
        case '{':
        case '[':
            if (c == '[' && want_array && depth == 1) in_array = true;
            if (in_array && depth == 2 && c == '{') start = i;
            want_array = key_objects = false;
            depth++;
            break;
        case '}':
        case ']':
            depth--;
            if (in_array && depth == 2 && c == '}' && n < max) {
                r[n][0] = start;
                r[n][1] = i + 1;
                n++;
            }
            if (in_array && depth == 1) in_array = false;
            break;
        case ' ':
        case '\n':
        case '\t':
        case '\r': break;
        default: want_array = key_objects = false;
        }
    }
    return n;
}

/* One frame: <camera>/frame as it is, then each object on its own topic,
 * its JSON text with the frame's camera, seq and times in front. */
static bool publish_frame(struct trk_mqtt *m, const struct slot *f)
{
    struct trk_buf whole = { .data = f->data, .len = f->len, .cap = f->cap };
    if (!publish(m, m->t_frame, &whole, 0, false, NULL)) return false;
    json_error_t err;
    json_t *root = json_loadb(f->data, f->len, 0, &err);
    json_t *objs = json_object_get(root, "objects");
    static size_t ranges[TRK_MAX_OBJECTS][2]; /* this thread only */
    int n = object_ranges(f->data, f->len, ranges, TRK_MAX_OBJECTS);
    bool ok = true;
    if (!json_is_array(objs) || json_array_size(objs) != (size_t)n) {
        /* Cannot happen with trk_msg_frame's output; say so once. */
        static _Atomic bool logged;
        log_once(logged, TRK_LOG_ERROR, 0, "a frame message the per-object topics cannot split");
        json_decref(root);
        return true;
    }
    char level[TRK_NAME_MAX * 3 + 1];
    for (int i = 0; i < n && ok; i++) {
        const char *name =
            json_string_value(json_object_get(json_array_get(objs, (size_t)i), "name"));
        if (!name) continue;
        trk_mqtt_topic_level(name, level, sizeof(level));
        trk_buf_reset(&m->topic);
        trk_buf_puts(&m->topic, m->base);
        trk_buf_puts(&m->topic, "objects/");
        trk_buf_puts(&m->topic, level);
        struct trk_buf *b = &m->payload;
        trk_buf_reset(b);
        trk_buf_puts(b, "{\"type\":\"object\",\"camera\":");
        trk_buf_json_str(b, m->camera, sizeof(m->camera));
        trk_buf_puts(b, ",\"seq\":");
        trk_buf_u64(b, (uint64_t)json_integer_value(json_object_get(root, "seq")));
        trk_buf_puts(b, ",\"t_capture\":");
        trk_buf_fixed(b, json_number_value(json_object_get(root, "t_capture")), 6);
        trk_buf_puts(b, ",\"wall_ms\":");
        trk_buf_fixed(b, json_number_value(json_object_get(root, "wall_ms")), 3);
        trk_buf_puts(b, ",");
        trk_buf_append(b, f->data + ranges[i][0] + 1, ranges[i][1] - ranges[i][0] - 1);
        if (!m->topic.failed) ok = publish(m, m->topic.data, b, 0, false, NULL);
    }
    json_decref(root);
    return ok;
}

/* After a CONNACK (the broker may have restarted and lost what it
 * retained) and after changes: the status and the object set, retained. */
static bool publish_retained(struct trk_mqtt *m)
{
    pthread_mutex_lock(&m->lock);
    bool status = m->status_dirty, config = m->config_dirty && m->config.len;
    struct trk_buf c = { 0 };
    if (config) trk_buf_append(&c, m->config.data, m->config.len);
    status_json(m, &m->payload, true, m->source, m->has_source_text ? m->source_text : NULL);
    m->status_dirty = false;
    if (config) m->config_dirty = false;
    pthread_mutex_unlock(&m->lock);
    bool ok = (!status || publish(m, m->t_status, &m->payload, 1, true, NULL)) &&
              (!config || publish(m, m->t_config, &c, 1, true, NULL));
    trk_buf_free(&c);
    return ok;
}

static void on_connect(struct mosquitto *mosq, void *obj, int rc)
{
    (void)mosq;
    struct trk_mqtt *m = obj;
    if (rc) {
        /* Refused (bad credentials, ...): loop_read returns the error and
         * on_disconnect schedules the retry. */
        m->drop_why = mosquitto_connack_string(rc);
        return;
    }
    m->state = CONNECTED;
    m->backoff = TRK_MQTT_BACKOFF_MIN_S;
    atomic_store(&m->connected, true);
    uint64_t n = atomic_fetch_add(&m->connects, 1) + 1;
    trk_log_once_reset(m->fail_logged);
    log_info("connected to %s:%d%s, publishing under %s (connection %llu)", m->url.host,
             m->url.port, m->url.tls ? " (TLS)" : "", m->base, (unsigned long long)n);
    pthread_mutex_lock(&m->lock);
    m->status_dirty = true;
    m->config_dirty = true;
    pthread_mutex_unlock(&m->lock);
}

static void on_disconnect(struct mosquitto *mosq, void *obj, int rc)
{
    (void)mosq;
    struct trk_mqtt *m = obj;
    int e = errno;
    bool was = m->state == CONNECTED && !m->closing;
    const char *why = m->drop_why            ? m->drop_why
                      : rc == MOSQ_ERR_ERRNO ? strerror(e)
                      : rc                   ? mosquitto_strerror(rc)
                                             : "closed";
    atomic_store(&m->connected, false);
    m->state = IDLE;
    m->drop_why = NULL;
    if (m->closing) return; /* finish()'s own DISCONNECT */
    m->next_try = trk_now() + m->backoff;
    if (was)
        log_warn("connection to %s:%d lost (%s): frames are dropped (counted) until it is back; "
                 "reconnecting",
                 m->url.host, m->url.port, why);
    else
        log_once(m->fail_logged, TRK_LOG_WARN, 0,
                 "cannot connect to the broker %s:%d (%s): trackd runs on and retries "
                 "(backoff up to %g s); logged once until a connection works",
                 m->url.host, m->url.port, why, TRK_MQTT_BACKOFF_MAX_S);
    m->backoff *= 2;
    if (m->backoff > TRK_MQTT_BACKOFF_MAX_S) m->backoff = TRK_MQTT_BACKOFF_MAX_S;
}

static void on_publish(struct mosquitto *mosq, void *obj, int mid)
{
    (void)mosq;
    struct trk_mqtt *m = obj;
    if (m->offline_mid && mid == m->offline_mid) m->offline_sent = true;
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
    on_disconnect(m->mosq, m, rc);
}

/* Takes the oldest queued frame into m->work; false when none. */
static bool take_frame(struct trk_mqtt *m)
{
    pthread_mutex_lock(&m->lock);
    bool any = m->count > 0;
    if (any) {
        struct slot *s = &m->ring[m->head];
        struct slot t = m->work;
        m->work = *s;
        *s = t; /* the ring keeps the spare buffer, a small one */
        slot_trim(s);
        m->head = (m->head + 1) % TRK_MQTT_QUEUE_LEN;
        m->count--;
    }
    pthread_mutex_unlock(&m->lock);
    return any;
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

/* Hands libmosquitto what is due while it has written everything before
 * (so its own queue never grows): the retained messages, then frames. */
static void publish_due(struct trk_mqtt *m)
{
    if (m->state != CONNECTED) return;
    pthread_mutex_lock(&m->lock);
    bool retained = m->status_dirty || (m->config_dirty && m->config.len);
    pthread_mutex_unlock(&m->lock);
    if (retained && !publish_retained(m)) return;
    while (m->state == CONNECTED && !mosquitto_want_write(m->mosq) && take_frame(m)) {
        if (!publish_frame(m, &m->work)) {
            atomic_fetch_add(&m->dropped, 1);
            return;
        }
        atomic_fetch_add(&m->published, 1);
    }
}

static bool quitting(struct trk_mqtt *m)
{
    pthread_mutex_lock(&m->lock);
    bool q = m->quit;
    pthread_mutex_unlock(&m->lock);
    return q;
}

/* The end: what is queued and "offline" go out while the broker takes them
 * (TRK_MQTT_CLOSE_S at most), then a clean DISCONNECT, so the broker drops
 * the will. Frames left over are dropped (counted). */
static void finish(struct trk_mqtt *m)
{
    double deadline = trk_now() + TRK_MQTT_CLOSE_S;
    while (m->state == CONNECTED && trk_now() < deadline) {
        publish_due(m);
        pthread_mutex_lock(&m->lock);
        bool empty = m->count == 0;
        pthread_mutex_unlock(&m->lock);
        if (empty && !mosquitto_want_write(m->mosq)) break;
        turn(m, 20);
    }
    if (m->state == CONNECTED) {
        pthread_mutex_lock(&m->lock);
        status_json(m, &m->payload, false, m->source, "trackd stopped");
        pthread_mutex_unlock(&m->lock);
        int mid = 0;
        if (publish(m, m->t_status, &m->payload, 1, true, &mid)) {
            m->offline_mid = mid;
            while (m->state == CONNECTED && !m->offline_sent && trk_now() < deadline)
                turn(m, 20);
        }
        m->closing = true;
        mosquitto_disconnect(m->mosq);
    }
    pthread_mutex_lock(&m->lock);
    atomic_fetch_add(&m->dropped, (uint64_t)m->count);
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
            if (m->state != IDLE) on_disconnect(m->mosq, m, 0);
        }
        publish_due(m);
        /* Connected: frames wake the thread; otherwise poll often enough for
         * the backoff and the CONNACK timeout. */
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
    err = TRK_ENOMEM;
    if (cfg->ca_file && !(m->ca_file = strdup(cfg->ca_file))) goto fail;
    if ((m->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        err = -errno;
        goto fail;
    }
    pthread_once(&lib_once, lib_init);
    /* A client id per process: two trackd with one camera name must not
     * take each other's session over. */
    char id[200];
    snprintf(id, sizeof(id), "trackd-%.64s-%ld", m->camera, (long)getpid());
    if (!(m->mosq = mosquitto_new(id, true, m))) goto fail;
    /* Frames are small and go out one by one: Nagle's algorithm would hold
     * each back until the previous one is acknowledged. */
    mosquitto_int_option(m->mosq, MOSQ_OPT_TCP_NODELAY, 1);
    mosquitto_connect_callback_set(m->mosq, on_connect);
    mosquitto_disconnect_callback_set(m->mosq, on_disconnect);
    mosquitto_publish_callback_set(m->mosq, on_publish);
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
            err = TRK_EINVAL;
            goto fail;
        }
    }
    if (rc != MOSQ_ERR_SUCCESS) {
        log_error("cannot set up the MQTT client: %s", mosquitto_strerror(rc));
        err = TRK_EINVAL;
        goto fail;
    }
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
        log_info("%llu frames published, %llu dropped, %llu connections",
                 (unsigned long long)st.published, (unsigned long long)st.dropped,
                 (unsigned long long)st.connects);
    }
    if (m->mosq) mosquitto_destroy(m->mosq);
    if (m->wake_fd >= 0) close(m->wake_fd);
    for (int i = 0; i < TRK_MQTT_QUEUE_LEN; i++)
        free(m->ring[i].data);
    free(m->work.data);
    trk_buf_free(&m->topic);
    trk_buf_free(&m->payload);
    trk_buf_free(&m->config);
    free(m->ca_file);
    pthread_mutex_destroy(&m->lock);
    free(m);
    *pm = NULL;
}
