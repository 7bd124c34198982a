/* The frame result: one processed frame as every output receives it, with
 * every derived value (centroids as doubles, found, world points) computed
 * once, here, when the pipeline fills it. Encoders (messages.h) and the
 * outputs (daemon/out/) only format what it holds.
 *
 * The result owns its blob and instance lists (grown, kept between frames:
 * no allocation per frame once the counts were reached); objects name their
 * part of them by offset, so a result copies with memcpy.
 *
 * Threads: a result belongs to one thread; trk_frame_result_copy hands a
 * copy to another (daemon/out/sink.c). */
#ifndef TRK_PROTOCOL_RESULT_H
#define TRK_PROTOCOL_RESULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "calib.h"
#include "patterns.h" /* struct trk_marker, struct trk_pattern */

#ifdef __cplusplus
extern "C" {
#endif

/* What the pipeline knows about one processed frame besides the results. */
struct trk_frame_meta {
    uint64_t seq;        /* frame sequence number from the source, increasing  */
    double pts;          /* presentation time in s (file sources: stream time;
                          * cameras/demo: seconds since the source opened)     */
    int width, height;   /* frame size in pixels                               */
    double t_capture;    /* s, CLOCK_MONOTONIC, when the frame was captured    */
    double wall_ms;      /* ms since the Unix epoch when processing finished   */
    double queue_ms;     /* capture -> processing start (waiting in the ring)  */
    double upload_ms;    /* host -> device copy (0 for CPU backends)           */
    double kernel_ms;    /* threshold + reduction                              */
    double process_ms;   /* processing start -> results ready (whole backend
                          * call plus tracker)                                 */
    const char *backend; /* backend name (trk_backend_name), NULL = omitted */
    const char *camera;  /* the camera's name (--name), NULL = omitted       */
    /* The tracker's share (daemon/tracker.h): pass "full" or "roi" (how the
     * frame began) and rounds (backend calls, 1 or 2); NULL = neither key.
     * upload_bytes: host-to-device bytes of the frame, all rounds. */
    const char *pass;
    int rounds;
    uint64_t upload_bytes;
    /* Results ready -> this message's encoding begins (it is then handed to
     * the outputs); includes starting the next frame on the backend
     * (pipelining). < 0 = omitted: callers that zero the struct get
     * 0.000. */
    double handoff_ms;
};

/* One followed blob of a tracked object (daemon/tracker.h makes them). */
struct trk_instance {
    uint64_t id;          /* >= 1, unique within the run, never reused          */
    struct trk_blob blob; /* this frame's measurement (when lost == 0)          */
    double cx, cy;        /* measured centroid (lost == 0), else predicted      */
    double vx, vy;        /* velocity estimate, pixels per frame                */
    uint64_t age;         /* frames since it appeared: 1 on its first           */
    uint32_t lost;        /* frames since last seen; 0 = seen in this frame     */
    bool via_roi;         /* seen in its own region (else a whole-frame search) */
};

struct trk_instance_list {
    const struct trk_instance *v;
    int n;
};

/* One object's blob list of a frame, as trk_backend_blobs gives it: n
 * blobs in list order (largest mass first, ties by first pixel). */
struct trk_blob_list {
    const struct trk_blob *blobs;
    int n;
};

/* A centroid and its world point. */
struct trk_point {
    double cx, cy; /* pixels: sum / mass (valid when the mass is > 0)        */
    bool world;    /* wx, wy hold its world point (a calibration, and the
                    * point has one: config/calib.h trk_calib_to_world)     */
    double wx, wy;
};

/* A marker of the frame (daemon/markers.h) with its world pose: wx, wy at
 * its pattern's height and wheading (degrees, counter-clockwise in the
 * world frame) when world. */
struct trk_result_marker {
    struct trk_marker m;
    bool world;
    double wx, wy, wheading;
};

/* One object's share of a frame result. */
struct trk_result_object {
    struct trk_obj_result r; /* the aggregate: mass, sums, box               */
    bool found;              /* mass >= max(min_mass, 1)                     */
    struct trk_point c;      /* its centroid (r.mass > 0)                    */
    /* Its listed blobs (the list cut to the definition's K) at
     * blobs[blob0..] and their centroids at blob_c[blob0..]. */
    size_t blob0;
    int n_blobs;
    /* has_instances: a tracked object with instances given: its instances
     * (seen and coasting) at inst[inst0..]. */
    bool has_instances;
    size_t inst0;
    int n_inst;
};

struct trk_frame_result {
    struct trk_frame_meta meta;
    const struct trk_object_def *defs; /* n entries (the caller's)          */
    int n;                             /* objects                           */
    /* The set had a calibration: every centroid is followed by its world
     * point (null where it has none), with world_decimals decimals. */
    bool calibrated;
    int world_decimals;
    struct trk_result_object obj[TRK_MAX_OBJECTS];
    /* The lists the objects point into; owned, grown. */
    struct trk_blob *blobs;
    struct trk_point *blob_c;
    struct trk_instance *inst;
    size_t blob_cap, inst_cap;
    /* The frame's markers (found and coasting), owned, grown; patterns:
     * the object set's (n_patterns), which markers' m.pattern index. */
    struct trk_result_marker *markers;
    size_t n_markers, markers_cap;
    const struct trk_pattern *patterns;
    int n_patterns;
};

/* The one place a centroid is computed: (sum_x / mass, sum_y / mass) as
 * doubles; mass must be > 0. Inline: the tracker (also built into
 * trackd-bench, without this library) uses it too. */
static inline void trk_centroid(uint64_t sum_x, uint64_t sum_y, uint64_t mass, double *cx,
                                double *cy)
{
    *cx = (double)sum_x / (double)mass;
    *cy = (double)sum_y / (double)mass;
}

/* Fills r with one frame: meta, n objects of defs with their aggregates
 * res, blob lists (NULL: none) and instances (NULL: none; used for objects
 * whose definition has track on), deriving every centroid, found flag and,
 * with calib (NULL or off: none), world point. The lists are copied; defs
 * is pointed to. 0, or TRK_ENOMEM (r then has no objects). */
int trk_frame_result_fill(struct trk_frame_result *r, const struct trk_frame_meta *m,
                          const struct trk_object_def *defs, int n,
                          const struct trk_obj_result *res, const struct trk_blob_list *blobs,
                          const struct trk_instance_list *instances, const struct trk_calib *calib);

/* Copies src into dst with dst's own lists (dst->defs = src->defs: a copy
 * that outlives them points it at its own). Lists that cannot be copied
 * (no memory) are left out: the objects then list no blobs, or no object
 * has instances. */
void trk_frame_result_copy(struct trk_frame_result *dst, const struct trk_frame_result *src);

/* Frees the lists; safe twice. */
void trk_frame_result_free(struct trk_frame_result *r);

#ifdef __cplusplus
}
#endif
#endif
