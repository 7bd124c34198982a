/* The fusion core of trackd-fuse: many cameras' frame messages (each from
 * its own trackd, over the MQTT broker) in, one world message out. No
 * sockets here: fuse/main.c feeds it what the broker delivers and publishes
 * what it builds, so the unit tests drive the same code with plain strings.
 *
 * Time. Each camera's t_capture is on its own host's CLOCK_MONOTONIC and so
 * not comparable between hosts. The common clock is the fuser's own wall
 * clock (epoch ms). The fuser asks each camera for its clocks (the NTP-style
 * sync exchange over MQTT, PROTOCOL.md section 9) and keeps, of the last
 * TRK_FUSE_SYNC_SAMPLES samples, the one of least round-trip delay: its
 * offset (camera monotonic minus fuser wall, error at most half its delay)
 * maps t_capture onto the common clock. Until a camera has answered (an
 * older trackd never does) its capture instant is wall_ms -
 * latency.queue_ms - latency.process_ms (trackd takes wall_ms at the end of
 * processing, and queue + process span capture to then on its own
 * monotonic clock), which assumes the hosts' wall clocks agree.
 *
 * Epochs. A frame that arrives with no epoch open opens one, due `window`
 * later (--window, default: the largest frame period of the cameras in use,
 * estimated from their capture instants). The epoch is fused as soon as
 * every active camera (online, with frames) has sent a frame since the last
 * fusion, or when it is due: a camera is never waited for past the window.
 * The fused instant T is the newest capture instant of the epoch; each
 * camera's newest frame is moved to T by its detections' world velocities.
 * A camera whose newest frame is more than 1.5 windows behind T is late
 * (listed in the message, logged when it becomes late and when it is back
 * under one window); one more than `stale` behind is not used, nor waited
 * for.
 *
 * Merging. Detections are keyed: an object's by its name, a marker's by
 * pattern and id. Detections with the same key from different cameras
 * within `gate` world units of each other are one object, its position the
 * mean weighted by confidence (1 when the message has none) times the
 * centre weight 1 - 0.9 (r / r_max)^2 (r the pixel distance from the image
 * centre, r_max the half diagonal): lenses are sharpest and calibrations
 * best near the centre.
 *
 * Global ids. A fused object keeps its id while any camera that saw it goes
 * on reporting the same local id (trackd's instance id, a marker's track
 * id), so an object handed over from one camera's view to another's through
 * the overlap keeps its id; failing that, the nearest object of the same key
 * predicted to T within the gate; else a new id (>= 1, never reused). An
 * object unseen for `keep` ms is dropped.
 *
 * Thread safety: one struct trk_fuse belongs to one thread. */
#ifndef TRK_FUSE_FUSE_H
#define TRK_FUSE_FUSE_H

#include <stdbool.h>
#include <stddef.h>

#include "trk_buf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Clock sync: samples kept per camera (the least delay of them is used),
 * the spacing of the first TRK_FUSE_SYNC_SAMPLES requests, and of those
 * after (ms). A reply whose round trip exceeds TRK_FUSE_SYNC_MAX_RTT_MS is
 * no sample. */
#define TRK_FUSE_SYNC_SAMPLES    8
#define TRK_FUSE_SYNC_FAST_MS    100.0
#define TRK_FUSE_SYNC_EVERY_MS   1000.0
#define TRK_FUSE_SYNC_MAX_RTT_MS 2000.0

/* Cameras one fuser follows; more are refused (logged once each). */
#define TRK_FUSE_MAX_CAMERAS 32
/* The longest camera name (trackd's --name: 1..64 bytes). */
#define TRK_FUSE_NAME_MAX 65

struct trk_fuse_cfg {
    double window_ms; /* > 0: the epoch window; 0: one frame period (estimated) */
    double gate;      /* world units: detections farther apart are distinct */
    double stale_ms;  /* a camera's frame older than this (to T) is not used */
    double keep_ms;   /* a fused object unseen this long is dropped */
    const char *name; /* the world's camera name in messages ("world") */
    bool predict;     /* positions moved on to when the message is built */
};

struct trk_fuse;

/* NULL when out of memory. cfg is copied (name too). */
struct trk_fuse *trk_fuse_create(const struct trk_fuse_cfg *cfg);
/* Frees *f and sets it NULL; safe on NULL. */
void trk_fuse_destroy(struct trk_fuse **f);

/* A camera's retained config (the objects message with its calibration).
 * 0; TRK_EINVAL for bad JSON or a calibration that does not solve (logged
 * with the camera's name; the camera then uses only the wx, wy its frames
 * carry); TRK_ENOMEM; -ENOSPC when TRK_FUSE_MAX_CAMERAS are known. */
int trk_fuse_config(struct trk_fuse *f, const char *camera, const char *json, size_t n);
/* A camera's retained status (online or not; its last will says "offline").
 * Same returns. */
int trk_fuse_status(struct trk_fuse *f, const char *camera, const char *json, size_t n);
/* A camera's frame message, arrived at now_ms (the fuser's monotonic clock,
 * ms) and wall_ms (its epoch time, ms). Returns 1 when the epoch is
 * complete (every active camera has sent a frame since the last fusion:
 * call trk_fuse_emit now), 0 when not yet, or the errors of
 * trk_fuse_config; a frame whose capture instant is more than `stale` from
 * wall_ms (a clock far off, or a forged frame from the future that would
 * make every other camera stale) is TRK_EINVAL. Frames from the world's own
 * name are ignored (0). */
int trk_fuse_frame(struct trk_fuse *f, const char *camera, const char *json, size_t n,
                   double now_ms, double wall_ms);
/* What the last world message (trk_fuse_emit that returned 1) holds, for
 * the outputs that send it in other formats (--ssl-tracked). */
struct trk_fuse_world {
    unsigned long long seq; /* the message's seq */
    double t_ms;            /* its fused instant (wall_ms) */
    double ahead_ms;        /* --predict send: positions are at t_ms + this */
    const char *unit;       /* the world unit ("" unknown) */
};

/* One fused object or marker of the last world message, as it has it. */
struct trk_fuse_obj {
    bool marker;
    const char *name;      /* the object's name, a marker's pattern */
    long long marker_id;   /* a marker's id */
    unsigned long long id; /* global id */
    double wx, wy;         /* unit, at t_ms + ahead_ms */
    bool has_v;            /* wvx, wvy hold its velocity (unit/s) */
    double wvx, wvy;
    bool has_heading; /* heading holds its world heading (degrees) */
    double heading;
};

/* The last world message; false before the first. */
bool trk_fuse_last(const struct trk_fuse *f, struct trk_fuse_world *w);
/* Its objects and markers: o is the i-th (i from 0) while this returns
 * true. */
bool trk_fuse_last_obj(const struct trk_fuse *f, size_t i, struct trk_fuse_obj *o);

/* Clock sync. The name of a camera due a sync request at now_ms (the
 * fuser's monotonic clock), its next one scheduled; NULL when none is due.
 * The caller sends {"type":"sync","t0":<its wall clock, epoch ms>}. */
const char *trk_fuse_sync_due(struct trk_fuse *f, double now_ms);
/* A camera's sync reply, received at wall_ms (the fuser's epoch ms, the
 * clock of the request's t0). 0 when it made a sample; TRK_EINVAL for a
 * reply that is not one (bad JSON, no t0, a round trip over
 * TRK_FUSE_SYNC_MAX_RTT_MS); -ENOSPC as trk_fuse_config. */
int trk_fuse_sync_reply(struct trk_fuse *f, const char *camera, const char *json, size_t n,
                        double wall_ms);

/* When the open epoch is due (monotonic ms); a negative value when none is
 * open. */
double trk_fuse_due(const struct trk_fuse *f);
/* Fuses the open epoch into out (reset first): the world frame message
 * (protocol/PROTOCOL.md, section 12). wall_ms is the fuser's epoch time now
 * (for the message's sent_ms and the cameras' delay). 1 when a message was
 * built, 0 when no epoch was open (or every camera of it went offline),
 * TRK_ENOMEM. */
int trk_fuse_emit(struct trk_fuse *f, double wall_ms, struct trk_buf *out);

#ifdef __cplusplus
}
#endif
#endif
