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
 * copy to another (daemon/out/netq.c). */
#ifndef TRK_PROTOCOL_RESULT_H
#define TRK_PROTOCOL_RESULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "calib.h"
#include "moments.h"  /* struct trk_shape */
#include "patterns.h" /* struct trk_pattern, struct trk_marker */

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
    double backend_ms;   /* of process_ms, the time in the backend's calls (its
                          * submits and waits, all rounds); the rest is host
                          * work: the tracker, the result, markers, the light */
    const char *backend; /* backend name (trk_backend_name), NULL = omitted */
    const char *camera;  /* the camera's name (--name), NULL = omitted       */
    /* The tracker's share (daemon/tracker.h): pass "full" or "roi" (how the
     * frame began) and rounds (backend calls, 1 to 3); NULL = neither key.
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
    /* Its shape (gpu/moments.h): major, minor of this frame's blob (the
     * last measured one while lost); orientation, degrees [0, 180)
     * counter-clockwise on screen, the tracker's filtered major axis, and
     * vth its angular velocity in degrees per frame (counter-clockwise
     * positive; daemon/tracker.h). */
    double orientation, major, minor, vth;
    /* Set by the frame result (result.c), not the tracker: with a
     * calibration, world is its point cx, cy in world units (at height 0,
     * as the object's centroid) and world_v its velocity in world units
     * per second: the world step of one frame's vx, vy (between the world
     * points of the centroid and of the centroid plus that step) times
     * the source's nominal frame rate (trk_frame_result_set_rate; none
     * without one). world_h: wheading holds its orientation in the world
     * (trk_point). rate: vtheta holds vth per second at that frame rate
     * (calibration or not). */
    bool world, world_v, world_h, rate;
    double wx, wy, wvx, wvy, wheading, vtheta;
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

/* A centroid, the shape around it and their world forms. */
struct trk_point {
    double cx, cy; /* pixels: sum / mass (valid when the mass is > 0)        */
    /* orientation, major, minor from the exact second moments
     * (trk_moments_shape): all 0 for a mass of 0 or 1 */
    struct trk_shape shape;
    bool world; /* wx, wy hold its world point (a calibration, and the
                 * point has one: config/calib.h trk_calib_to_world)     */
    double wx, wy;
    /* world_h: wheading holds the major axis in the world: degrees [0,
     * 180) counter-clockwise from world +x, the direction from the world
     * point to that of the pixel one pixel along the orientation
     * (trk_frame_result_world_dir; mass > 0, a world point, and that pixel
     * has one) */
    bool world_h;
    double wheading;
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
    /* Ranges that follow the light (daemon/light.h; set after the fill,
     * which clears them): the box this frame was thresholded with, the
     * adaptation's offset and whether it is on its guard rail. has_range
     * false when the set has neither "illumination" nor "adapt". */
    bool has_range, range_rail;
    uint16_t range_lo[3], range_hi[3];
    int16_t range_drift[3];
};

/* One marker of a frame (config/patterns.h, daemon/markers.h) and, with a
 * calibration, its world pose: the centre's world point at the pattern's
 * height (trk_calib_to_world_at) and wheading, the heading carried through
 * the calibration: the world direction, in degrees counter-clockwise from
 * world +x in [0, 360), from the centre's world point to the world point
 * of the pixel one pixel along the heading (both at the height). */
struct trk_result_marker {
    struct trk_marker m;
    bool world; /* wx, wy, wheading hold it */
    double wx, wy, wheading;
    /* world_v: wvx, wvy hold its world velocity per second (the world step
     * of one frame's vx, vy at its height, times the frame rate r->fps):
     * the message's wvx, wvy, and what moves wx, wy under predict. */
    bool world_v;
    double wvx, wvy;
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
    /* The set's patterns (NULL, 0: none; the caller's, pointed to like
     * defs) and this frame's markers (found ones first, then the ones the
     * follower coasts; owned, grown). Outputs write markers only when
     * n_patterns > 0. */
    const struct trk_pattern *patterns;
    int n_patterns;
    struct trk_result_marker *markers;
    size_t n_markers, markers_cap;
    /* The source's nominal frame rate (trk_frame_result_set_rate; 0 unknown):
     * pixel velocities are per frame. */
    double fps;
    /* Latency compensation (PROTOCOL.md, "predict_dt"): when predict is set
     * the encoders write instances' and markers' positions moved on by
     * their velocities over predict_dt seconds, and "predict_dt". Set on a
     * copy by the output that sends it (daemon/out/outputs.c), never by
     * the pipeline. */
    bool predict;
    double predict_dt;
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

/* The world direction of screen direction deg (degrees counter-clockwise
 * on screen from +x) at pixel (px, py), whose world point at height z is
 * (wx, wy): degrees counter-clockwise from world +x, [0, 360), towards the
 * world point of the pixel one pixel along deg (at the same height). False
 * (out untouched) when that pixel has no world point. calib: solved, on. */
bool trk_frame_result_world_dir(const struct trk_calib *calib, double px, double py, double z,
                                double wx, double wy, double deg, double *out);

/* Fills r with one frame (no markers: trk_frame_result_set_markers adds
 * them): meta, n objects of defs with their aggregates
 * res, blob lists (NULL: none) and instances (NULL: none; used for objects
 * whose definition has track on), deriving every centroid, shape, found
 * flag and, with calib (NULL or off: none), world point and heading. The lists are copied; defs
 * is pointed to. 0, or TRK_ENOMEM (r then has no objects). */
int trk_frame_result_fill(struct trk_frame_result *r, const struct trk_frame_meta *m,
                          const struct trk_object_def *defs, int n,
                          const struct trk_obj_result *res, const struct trk_blob_list *blobs,
                          const struct trk_instance_list *instances, const struct trk_calib *calib);

/* The instances' angular velocities per second (trk_instance.rate) and,
 * with a calibration, world velocities per second (trk_instance.world_v)
 * at a source's nominal frame rate fps; fps <= 0 (unknown): neither.
 * calib: the one r was filled with (NULL or off: no world velocities).
 * Keeps fps in r->fps (the markers set after it get world velocities by
 * it too). */
void trk_frame_result_set_rate(struct trk_frame_result *r, const struct trk_calib *calib,
                               double fps);

/* Sets r's markers: pats[0..n_pats) (pointed to) and m[0..n) copied, each
 * with its world pose by calib (NULL or off: none) at its pattern's
 * height. 0, or TRK_ENOMEM (r then has no markers, its patterns kept). */
int trk_frame_result_set_markers(struct trk_frame_result *r, const struct trk_pattern *pats,
                                 int n_pats, const struct trk_marker *m, size_t n,
                                 const struct trk_calib *calib);

/* Copies src into dst with dst's own lists (dst->defs = src->defs: a copy
 * that outlives them points it at its own). Lists that cannot be copied
 * (no memory) are left out: the objects then list no blobs, or no object
 * has instances. */
void trk_frame_result_copy(struct trk_frame_result *dst, const struct trk_frame_result *src);

/* dst = r as it is to be sent at now (s, CLOCK_MONOTONIC): a shallow copy
 * (it shares r's lists, so it is only for encoding while r lives) with
 * predict set and predict_dt the time from r's capture to now (0 when now
 * is before it). */
void trk_frame_result_predict(struct trk_frame_result *dst, const struct trk_frame_result *r,
                              double now);

/* Frees the lists; safe twice. */
void trk_frame_result_free(struct trk_frame_result *r);

#ifdef __cplusplus
}
#endif
#endif
