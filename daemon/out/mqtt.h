/* The MQTT sink (--mqtt): every frame message, each object's result, the
 * camera's status and its object set, published to a broker through
 * libmosquitto under <prefix>/<camera>/ (protocol/PROTOCOL.md section 9).
 *
 * Threads: as one output of the door (daemon/out/outputs.h, trk_mqtt_open)
 * the processing thread hands over each frame's messages, encoded by
 * protocol/messages.c (trk_mqtt_frame), and the object set when it changes
 * (trk_mqtt_objects); the capture thread the source's state
 * (trk_mqtt_source_state). Each call
 * copies into a bounded queue under a short mutex and wakes the publisher
 * thread, which owns the libmosquitto handle: it connects, publishes,
 * reconnects with backoff. Nothing here ever waits for the network: a slow
 * or absent broker fills the queue, and the oldest queued frame is dropped
 * (counted) for the newest.
 *
 * What is in flight is bounded by acknowledgements, not by socket buffers
 * (the broker's receive buffer alone can hold megabytes that a socket-level
 * bound never sees): each frame's message on <camera>/frame goes last, at
 * QoS 1, and a frame counts as published only once the broker acknowledged
 * it (PUBACK; the broker handles one connection's packets in order, so the
 * frame's objects/<name> messages before it are in too). At most
 * TRK_MQTT_WINDOW frames await their PUBACK; a frame is sent only while it
 * should reach the broker within half the maximum age (trk_mqtt_cfg.max_age,
 * from its capture), and one not acknowledged within the whole of it is
 * counted dropped: every frame handed over ends up published or dropped for
 * one reason (enum trk_mqtt_drop). Every function is thread-safe.
 *
 * Lifecycle: create (checks the settings, makes the handle) / start (the
 * publisher thread: returns at once, the connection is made in the
 * background and logged) / destroy (publishes what is queued and the
 * "offline" status for up to TRK_MQTT_CLOSE_S, then disconnects). */
#ifndef TRK_DAEMON_MQTT_H
#define TRK_DAEMON_MQTT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "objects.h"

struct trk_mqtt;

/* Longest host name, user, password and prefix in a --mqtt URL (bytes). */
#define TRK_MQTT_FIELD_MAX 255
/* Frames waiting for the broker; more drop the oldest (2 s at 30 fps;
 * frames past the maximum age leave it sooner, dropped too). */
#define TRK_MQTT_QUEUE_LEN 64
/* ... and at most this many bytes of them (frame and object messages
 * together): large frames (a big object set,
 * config/objects.h's frame limits) drop the oldest sooner. A slot's buffer
 * is kept for reuse only up to TRK_MQTT_SLOT_KEEP bytes, so memory follows
 * what is queued, not the largest frames ever seen. */
#define TRK_MQTT_QUEUE_BYTES (4u << 20)
#define TRK_MQTT_SLOT_KEEP   (64u << 10)
/* Seconds a connection may take from the TCP connect to the broker's CONNACK
 * (a port that accepts and never answers); then it is dropped and retried. */
#define TRK_MQTT_CONNACK_S 5.0
/* Reconnect backoff: the first retry after TRK_MQTT_BACKOFF_MIN_S, doubling
 * up to TRK_MQTT_BACKOFF_MAX_S; back to the minimum only after a connection
 * held TRK_MQTT_HOLD_S (a broker that accepts and then drops every
 * connection is retried ever more slowly, not every 0.5 s). */
#define TRK_MQTT_BACKOFF_MIN_S 0.5
#define TRK_MQTT_BACKOFF_MAX_S 8.0
#define TRK_MQTT_HOLD_S        10.0
/* Frames sent and not yet acknowledged (PUBACK): the most that a broker
 * which stops reading can receive late. 8 keeps 30 fps going with a PUBACK
 * round trip up to 260 ms (a broker across the internet). */
#define TRK_MQTT_WINDOW 8
/* --mqtt-max-age: the default and the bounds (seconds since capture). */
#define TRK_MQTT_MAX_AGE_S   1.0
#define TRK_MQTT_MAX_AGE_MIN 0.05
#define TRK_MQTT_MAX_AGE_MAX 60.0
/* MQTT keepalive: a broker that loses trackd without a TCP close (a cut
 * cable) publishes the will after 1.5 times this. */
#define TRK_MQTT_KEEPALIVE_S 10
/* Most seconds destroy spends on the queued frames and the offline status. */
#define TRK_MQTT_CLOSE_S 2.0
/* Clock sync (PROTOCOL.md section 9): most replies per second, all
 * clients together (a flood of requests must not crowd out the frames),
 * and the longest client id (one topic level). */
#define TRK_MQTT_SYNC_PER_S  200
#define TRK_MQTT_SYNC_ID_MAX 64

/* A parsed mqtt://[user:pass@]host[:port][/prefix] (mqtts:// for TLS). */
struct trk_mqtt_url {
    bool tls;
    char host[TRK_MQTT_FIELD_MAX + 1]; /* an IPv6 address without its brackets */
    int port;                          /* 1883, 8883 with TLS, unless given */
    char user[TRK_MQTT_FIELD_MAX + 1]; /* "" = none; %XX decoded, as the password */
    char pass[TRK_MQTT_FIELD_MAX + 1];
    bool has_pass;
    char prefix[TRK_MQTT_FIELD_MAX + 1]; /* topic levels before the camera; "trackd" when none */
};

/* Parses url into *out. false with the reason in why (len bytes) for
 * anything but the form above: another scheme, an empty host, a port
 * outside 1..65535, a prefix with '+', '#', an empty level or a trailing
 * '/', a field over TRK_MQTT_FIELD_MAX bytes, a bad %XX escape. */
bool trk_mqtt_url_parse(const char *url, struct trk_mqtt_url *out, char *why, size_t len);

/* Appends name to out as one topic level: the bytes '/', '+', '#', '%' and
 * control characters as %XX (uppercase hex), everything else as is, so
 * every object name has one topic and the topic gives the name back.
 * Returns the length written (out is NUL-terminated, cut at cap). */
size_t trk_mqtt_topic_level(const char *name, char *out, size_t cap);

struct trk_mqtt_cfg {
    const char *url;     /* --mqtt, checked by trk_mqtt_url_parse              */
    const char *ca_file; /* --mqtt-ca: CA certificates (PEM) for mqtts://; NULL:
                          * the system's (/etc/ssl/certs)                      */
    const char *camera;  /* the camera's name (--name): a topic level, already
                          * restricted to [A-Za-z0-9._-] by the CLI           */
    const char *server;  /* "trackd <version>", for the status message          */
    double max_age;      /* --mqtt-max-age: seconds from a frame's capture within
                          * which the broker must have it; older frames are
                          * dropped, not sent late. 0: TRK_MQTT_MAX_AGE_S     */
};

/* 0, TRK_EINVAL (a bad URL, logged) or TRK_ENOMEM. */
int trk_mqtt_create(const struct trk_mqtt_cfg *cfg, struct trk_mqtt **out);

/* Starts the publisher thread. 0 or a negative errno. */
int trk_mqtt_start(struct trk_mqtt *m);

/* Processing thread: one frame message (protocol/messages.h trk_msg_frame,
 * the WebSocket text) to publish on <camera>/frame, and its objects'
 * messages (objects_len bytes: per object the topic level, NUL, its
 * trk_msg_object_result message, NUL; NULL = none) to publish on
 * <camera>/objects/<level> before it; t_capture is its capture time
 * (trk_now's clock), from which its age is counted. Copies them; never
 * blocks on the network. The queue's byte bound counts the frame
 * messages. */
void trk_mqtt_frame(struct trk_mqtt *m, const char *json, size_t len, const char *objects,
                    size_t objects_len, double t_capture);

/* Processing thread: the object set in use (initially and after every
 * change), published retained on <camera>/config. */
void trk_mqtt_objects(struct trk_mqtt *m, const struct trk_objects *set);

/* The source's state ("ok", "lost", "eof", "error") and text (may be NULL),
 * as the pipeline tells web clients: the retained <camera>/status says it. */
void trk_mqtt_source_state(struct trk_mqtt *m, const char *state, const char *text);

/* Why a frame was not published (each frame handed over is counted once:
 * published, or dropped for one of these). */
enum trk_mqtt_drop {
    TRK_MQTT_DROP_QUEUE,   /* the queue was full: the oldest made room for the newest */
    TRK_MQTT_DROP_AGE,     /* older than the maximum age before it could be sent      */
    TRK_MQTT_DROP_LATE,    /* sent, not acknowledged within the maximum age           */
    TRK_MQTT_DROP_LOST,    /* sent, the connection ended before its PUBACK            */
    TRK_MQTT_DROP_REFUSED, /* the broker refuses it (larger than the maximum packet
                            * size it announced, or a PUBACK with an error code)      */
    TRK_MQTT_DROP_STOPPED, /* queued or unacknowledged when trackd stopped            */
    TRK_MQTT_DROP_ERROR,   /* could not be copied or encoded (out of memory)          */
    TRK_MQTT_DROP_N
};

/* The reason's name in /metrics and the log ("queue", "age", ...). */
const char *trk_mqtt_drop_name(enum trk_mqtt_drop why);

struct trk_mqtt_stats {
    bool connected;                  /* the broker accepted the connection (CONNACK)     */
    uint64_t published;              /* frames the broker acknowledged within the maximum age */
    uint64_t dropped;                /* frames not published: the sum of drops[]         */
    uint64_t drops[TRK_MQTT_DROP_N]; /* ... by reason                       */
    uint64_t connects;               /* connections the broker accepted                   */
    uint64_t queue_len;              /* frames waiting now                               */
    uint64_t inflight;               /* frames sent, awaiting their PUBACK now           */
};

/* Safe on NULL (zeroes *st). */
void trk_mqtt_get_stats(struct trk_mqtt *m, struct trk_mqtt_stats *st);

/* Stops the thread as said above and frees; safe on NULL and twice. */
void trk_mqtt_destroy(struct trk_mqtt **m);

#endif
