/* Operations counters: what GET /metrics shows in the Prometheus text format
 * (0.0.4) and what GET /healthz decides from (protocol/PROTOCOL.md,
 * "HTTP endpoints").
 *
 * Threads: the processing thread reports each frame (trk_metrics_frame) with
 * relaxed atomics only, no lock, so the hot path never waits for a scrape;
 * the capture thread reports the source's state, the pipeline's stats loop
 * the totals it already gathers; the server's service thread renders. Any
 * function may be called from any thread; the numbers in one rendering are
 * each current, not one consistent snapshot (a histogram's _count always
 * equals its +Inf bucket).
 *
 * Lifecycle: create / destroy; it outlives the pipeline (the server starts
 * first and answers after the pipeline ended). */
#ifndef TRK_DAEMON_METRICS_H
#define TRK_DAEMON_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "messages.h" /* struct trk_buf */

struct trk_metrics;

/* The latency stages of one frame, as the pipeline measures them. */
enum trk_metrics_stage {
    TRK_STAGE_QUEUE,   /* capture -> processing starts                  */
    TRK_STAGE_UPLOAD,  /* host -> device copy (0 on CPU backends)       */
    TRK_STAGE_KERNEL,  /* threshold + reduction (backend's own timing)  */
    TRK_STAGE_PROCESS, /* the backend call, wall clock                  */
    TRK_STAGE_SEND,    /* results ready -> handed to NDJSON / WebSocket */
    TRK_STAGE_TOTAL,   /* capture -> handed over                        */
    TRK_STAGE_COUNT
};

/* Histogram bucket bounds in seconds, for a tracker: 50 us (a small frame
 * on a GPU) to 100 ms (a stalled frame at 10 fps); slower is +Inf. */
#define TRK_METRICS_BUCKETS 11
extern const double trk_metrics_bucket_le[TRK_METRICS_BUCKETS];

/* /healthz: frames flow while the newest processed frame is at most this
 * many source frame intervals old, and never less than TRK_HEALTH_MIN_S
 * (a loaded machine and a 60 fps camera must not flap). */
#define TRK_HEALTH_FRAMES 10
#define TRK_HEALTH_MIN_S  2.0

int trk_metrics_create(struct trk_metrics **out);
/* Safe on NULL and twice (sets *m = NULL). */
void trk_metrics_destroy(struct trk_metrics **m);

/* The trackd_info labels (copied) and the source's nominal frame rate (0 =
 * unknown: /healthz then uses the measured one). */
void trk_metrics_set_info(struct trk_metrics *m, const char *version, const char *backend,
                          const char *source, double source_fps);

/* One processed frame: its stage times in seconds, bytes copied to the
 * device, objects set and found. Processing thread; never blocks. */
struct trk_metrics_frame {
    double stage_s[TRK_STAGE_COUNT];
    uint64_t upload_bytes;
    int objects, found;
    bool pinned; /* its pixels were in host memory the backend reads directly */
};
void trk_metrics_frame(struct trk_metrics *m, const struct trk_metrics_frame *f);

/* Ranges that follow the light (daemon/light.h): the gains (Q16) and each
 * object's box, its adaptation offset and whether it is on its guard
 * rail, after the newest frame. n = 0: none shown (the set has neither
 * "illumination" nor "adapt"). Processing thread; copies under a lock. */
struct trk_metrics_range {
    char name[64];
    int space; /* enum trk_space */
    uint16_t lo[3], hi[3];
    int16_t drift[3];
    bool rail;
};
void trk_metrics_set_light(struct trk_metrics *m, const uint32_t gain_q16[3],
                           const struct trk_metrics_range *r, int n);

/* A frame the backend rejected. */
void trk_metrics_skipped(struct trk_metrics *m);
/* A replay paused by the page (capture thread): no frame is due, so
 * /healthz says "ok; replay paused" rather than a stall; the stall clock
 * starts anew when it plays on. */
void trk_metrics_set_paused(struct trk_metrics *m, bool paused);

/* The source's state as the pipeline tells clients ("ok", "lost", "eof",
 * "error"; anything else counts as "error") and its text; a live source
 * that was lost (outage) and came back (reopen). */
void trk_metrics_source_state(struct trk_metrics *m, const char *state, const char *text);
void trk_metrics_outage(struct trk_metrics *m);
void trk_metrics_reopen(struct trk_metrics *m);

/* Totals gathered elsewhere, set as they are now (not added); fps < 0
 * leaves the frame rate as it was. */
void trk_metrics_set_totals(struct trk_metrics *m, uint64_t drops, int clients, double fps);
void trk_metrics_set_lines_lost(struct trk_metrics *m, uint64_t lost);
/* Whether the processing thread polls (--spin; processing thread). */
void trk_metrics_set_spin(struct trk_metrics *m, bool spin);
/* The MQTT sink's totals (daemon/out/mqtt.h); the trackd_mqtt_* metrics are
 * shown from the first call on (only when --mqtt is given). */
struct trk_mqtt_stats;
void trk_metrics_set_mqtt(struct trk_metrics *m, const struct trk_mqtt_stats *st);

/* /snapshot.jpg's counters (trackd_snapshot_*), read from s at each render
 * (NULL: not shown); s must outlive the renders. */
struct trk_snapshot;
void trk_metrics_set_snapshot(struct trk_metrics *m, struct trk_snapshot *s);

/* The focus check (daemon/ops/focus.h) whose reading the trackd_focus_*
 * metrics and /healthz show (NULL: none); f must outlive the renders. */
struct trk_focus;
void trk_metrics_set_focus(struct trk_metrics *m, struct trk_focus *f);

/* Appends the exposition text (HELP, TYPE and samples of every metric).
 * 0 or TRK_ENOMEM. */
int trk_metrics_render(struct trk_metrics *m, struct trk_buf *out);

/* Whether frames flow. false with the reason in why ("no frames yet",
 * "source lost since ...", "pipeline stalled: ..."); true with "ok", or
 * "ok; focus lost: ..." while the focus check says so. */
bool trk_metrics_healthy(struct trk_metrics *m, char *why, size_t len);

#endif
