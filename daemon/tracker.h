/* The tracker: the pipeline stage between the backend and the sinks
 * (docs: DESIGN section 1) that owns what is known about each object across
 * frames. Every frame the pipeline asks it where to look
 * (trk_tracker_rois, before the backend) and tells it what was found
 * (trk_tracker_update, after). Today every object is searched in the whole
 * frame and the tracker remembers each object's last sighting; prediction,
 * ROI choice for the next frame and re-acquisition (regional reduction
 * around the predicted position, full frame when lost) plug in behind these
 * calls without the pipeline changing.
 *
 * Threads: one tracker belongs to the processing thread; no locking.
 * Lifecycle: create / destroy; reset whenever the object set changes
 * (per-object state of a replaced set means nothing for the new one). */
#ifndef TRK_DAEMON_TRACKER_H
#define TRK_DAEMON_TRACKER_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"

struct trk_tracker;

struct trk_tracker_cfg {
    int max_objects; /* largest set reset may be given: 1..TRK_MAX_OBJECTS */
};

/* What the tracker knows about one object. */
struct trk_track {
    bool found;         /* found in the last updated frame (mass >= min_mass) */
    bool seen;          /* found at least once since the last reset           */
    uint64_t last_seen; /* seq of the last frame it was found in (when seen)  */
    double cx, cy;      /* centroid in that frame, pixels                      */
    uint64_t mass;      /* mass in that frame                                  */
};

/* 0, TRK_EINVAL (max_objects out of range) or TRK_ENOMEM; *out is NULL on
 * failure. A new tracker has an empty object set until reset. */
int trk_tracker_create(const struct trk_tracker_cfg *cfg, struct trk_tracker **out);

/* Frees everything; safe on NULL and twice (sets *t = NULL). */
void trk_tracker_destroy(struct trk_tracker **t);

/* Starts over with the n objects of defs (n = 0: none): every track is
 * forgotten. 0, or TRK_EINVAL when n is negative or above max_objects (the
 * tracker then has no objects). */
int trk_tracker_reset(struct trk_tracker *t, const struct trk_object_def *defs, int n);

/* The regions to search in img for the current set, one per object, in the
 * form trk_backend_process takes; NULL = the whole frame for every object.
 * Valid until the next call on t. */
const struct trk_roi *trk_tracker_rois(struct trk_tracker *t, const struct trk_image *img);

/* Takes the backend's results for frame seq: res[i] for object i of the
 * set, n must be the set's size. 0 or TRK_EINVAL (n differs, res NULL). */
int trk_tracker_update(struct trk_tracker *t, uint64_t seq, const struct trk_obj_result *res,
                       int n);

/* Objects in the current set. */
int trk_tracker_count(const struct trk_tracker *t);

/* Object i's track, or NULL when i is not in the set. */
const struct trk_track *trk_tracker_track(const struct trk_tracker *t, int i);

#endif
