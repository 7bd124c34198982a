/* The tracker: the pipeline stage between the backend and the outputs
 * (docs/ARCHITECTURE.md, the data path) that owns what is known about each object across
 * frames, and decides where the backend looks.
 *
 * An object with "track" on (struct trk_object_def) follows each of its
 * blobs, at most its blobs K, as an instance with a stable id: an integer
 * unique within the tracker's life (resets included), never reused. Each
 * instance has a constant-velocity prediction (an alpha-beta filter with
 * alpha 1: the position is the measurement, the velocity moves half way to
 * the measured step); association is greedy by cost (below).
 *
 * Every frame is one to three rounds of backend work. trk_tracker_begin gives
 * the first round's plan; trk_tracker_measure takes its results and either
 * completes the frame or gives the next round's plan. A plan is either a
 * full-frame trk_backend_process (results and blob lists per object) or one
 * trk_backend_submit_regions call (results and blob lists per region):
 * - mode full: every frame is one full-frame process;
 * - mode roi: a full-frame process every full_every frames (the periodic
 *   re-acquisition), when every object needs the whole frame anyway, and
 *   when an object with blob lists does (untracked, or tracked and to be
 *   re-acquired: an instance lost, or fewer instances than blobs its last
 *   whole-frame search found; labelling a whole-frame region costs more
 *   than a full-frame pass of every object);
 *   otherwise regions: one per instance of each tracked object, around
 *   its predicted box (a covered part's box widened to the whole blob's
 *   size, as the part may lie anywhere in it) grown by its speed (plus a
 *   margin that doubles after its blob touched its region's border),
 *   clipped to the frame, and the whole frame as one region for an
 *   untracked object without blob lists (its aggregate only). A tracked
 *   object with no instances and none found
 *   last time costs nothing until the next periodic pass.
 * A tracked object whose regions did not explain the frame (an instance
 * not in its region, a matched blob touching its region's border, which
 * means it may be cut and measured only as seen, or a blob no instance
 * claims while fewer than K are followed) is measured again in a second
 * round over its regions grown by the blob's size, its speed and the
 * margin (a bounce, a turn, a blob coming out from under a cover: a few
 * times its region, far less than the frame), and only if those do not
 * explain it either, in a third round: a full-frame pass, whose units are
 * those objects' own (the others have none that round). A blob wholly
 * inside a region (not touching a border inside the frame) is the whole
 * blob, so its centroid is the full-frame one; the whole-frame round gives
 * exactly a full-frame search's instances, in the same frame. The frames
 * and objects of each kind of round are counted (trk_tracker_get_stats).
 *
 * Association (per object): every (instance, blob) pair within the
 * instance's gate (2 x (size + speed) + 8 pixels from its prediction, times
 * 1 + frames lost) gets cost distance / gate + 0.1 per halving of mass
 * between the blob and the instance's whole mass (a large part of a covered
 * blob beats a few-pixel piece of it nearer the prediction); pairs are
 * taken greedily by ascending cost (ties: instance, then blob order). Greedy, not globally
 * optimal: with predictions the right pairs are the cheap ones, greedy is
 * deterministic and O(P log P), and the cases where an optimal assignment
 * differs need blobs ambiguous between instances, i.e. touching: merged
 * into one blob, which neither choice measures. Prediction is what keeps
 * ids through a crossing at different speeds. When instances merge (one
 * blob holds another's prediction), the instance that got the blob reports
 * it as measured but keeps predicting on its own path; the other coasts.
 * Likewise a blob with less than half the instance's whole mass (partly
 * covered, partly out of the frame, a piece) is measured and reported, but
 * the instance keeps its path and size: a sliver must not shrink its gate
 * and region to a few pixels or turn its speed.
 * Each instance also follows its blob's orientation (the major axis of
 * its second moments, gpu/moments.h): an alpha-beta filter on the axis
 * with a turn per frame (trk_instance.vth; the frame result makes it
 * degrees per second), where each measured axis counts as the nearer of
 * its two directions to the predicted one, so a blob turning through
 * 0/180 degrees keeps turning the same way (at most 90 degrees a frame can
 * be told apart). The filter's gains are weighed by how elongated the
 * blob is: a disc or a square has no axis and keeps its orientation and
 * turn. A lost, merged or partly covered instance keeps turning as
 * predicted. major and minor are the blob's (the last measured ones while
 * lost).
 * Unclaimed blobs of a whole-frame list become new instances (largest
 * first) while there is room; with K instances the one lost longest makes
 * room, one seen this frame never does. An instance not seen for more than
 * coast_frames frames is dropped.
 *
 * Threads: one tracker belongs to the processing thread; no locking.
 * Lifecycle: create / destroy; reset whenever the object set or the frame
 * size changes (positions of another set or size mean nothing). */
#ifndef TRK_DAEMON_TRACKER_H
#define TRK_DAEMON_TRACKER_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "result.h" /* struct trk_instance, trk_centroid: what the frame result says */

struct trk_tracker;

enum trk_track_mode {
    TRK_TRACK_ROI = 0, /* regions around predictions, periodic full frames */
    TRK_TRACK_FULL,    /* every frame over the whole frame                  */
    TRK_TRACK_AUTO,    /* --mode's default: roi where the backend has a
                        * native regional form, else full (the daemon
                        * resolves it before the tracker sees it)           */
};

/* Default of --full-every. */
#define TRK_TRACK_FULL_EVERY 15

struct trk_tracker_cfg {
    int max_objects;          /* largest set reset may be given: 1..TRK_MAX_OBJECTS */
    enum trk_track_mode mode; /* TRK_TRACK_ROI (0) by default                       */
    int full_every;           /* roi mode: a full-frame pass every this many frames,
                               * 1..1000000; 0 = TRK_TRACK_FULL_EVERY               */
};

/* What the tracker knows about one object (tracked or not). */
struct trk_track {
    bool found;         /* found in the last frame (mass >= min_mass)        */
    bool seen;          /* found at least once since the last reset          */
    uint64_t last_seen; /* seq of the last frame it was found in (when seen) */
    double cx, cy;      /* centroid in that frame, pixels                    */
    uint64_t mass;      /* mass in that frame                                */
};

/* What the backend is asked for in one round. */
struct trk_tracker_plan {
    bool full; /* trk_backend_process(rois NULL): units are the objects     */
    int n;     /* else trk_backend_submit_regions with these n regions      */
    const struct trk_region *regions; /* valid until the next call on t     */
};

/* 0, TRK_EINVAL (max_objects or full_every out of range, unknown mode) or
 * TRK_ENOMEM; *out is NULL on failure. A new tracker has an empty object
 * set until reset. */
int trk_tracker_create(const struct trk_tracker_cfg *cfg, struct trk_tracker **out);

/* Frees everything; safe on NULL and twice (sets *t = NULL). */
void trk_tracker_destroy(struct trk_tracker **t);

/* Starts over with the n objects of defs (n = 0: none): every track and
 * instance is forgotten (ids are not reused) and the next frame is a
 * full-frame one. 0, or TRK_EINVAL when n is negative or above max_objects
 * (the tracker then has no objects). */
int trk_tracker_reset(struct trk_tracker *t, const struct trk_object_def *defs, int n);

/* Starts frame seq (increasing; gaps are frames not processed, counted in
 * predictions) of width x height: *plan is the first round. TRK_EINVAL for
 * a size <= 0. */
int trk_tracker_begin(struct trk_tracker *t, uint64_t seq, int width, int height,
                      struct trk_tracker_plan *plan);

/* The round's results, in the plan's units: n = objects (plan.full) or
 * regions; res[j] the aggregate and blobs[j] / n_blobs[j] the blob list of
 * unit j (blobs may be NULL when no object has blobs on). The lists are
 * read, not kept. Returns 0 when the frame is complete, 1 when *plan holds
 * another round to run and measure, TRK_EINVAL when n does not match the
 * plan, or the frame was not begun or is already complete. */
int trk_tracker_measure(struct trk_tracker *t, const struct trk_obj_result *res,
                        const struct trk_blob *const *blobs, const int *n_blobs, int n,
                        struct trk_tracker_plan *plan);

/* After a complete frame, per object i of the set: the result to report
 * and its blob list. An untracked object's are the backend's full-frame
 * ones; a tracked object's are over its instances seen in the frame: mass
 * and sums added, box the union, blobs their measurements in list order
 * (mass descending, ties by first pixel). The same in every mode and
 * round, so full and roi modes report alike. NULL / 0 when i is not in the
 * set. Valid until the next begin or reset. */
const struct trk_obj_result *trk_tracker_result(const struct trk_tracker *t, int i);
int trk_tracker_blobs(const struct trk_tracker *t, int i, const struct trk_blob **blobs);

/* Object i's instances (seen and coasting, in id order) and their count;
 * 0 for an untracked object or i not in the set. */
int trk_tracker_instances(const struct trk_tracker *t, int i, const struct trk_instance **v);

/* "roi" / "full" to enum trk_track_mode; -1 if unknown. */
int trk_track_mode_parse(const char *s);

/* Objects in the current set. */
int trk_tracker_count(const struct trk_tracker *t);

/* Object i's track, or NULL when i is not in the set. */
const struct trk_track *trk_tracker_track(const struct trk_tracker *t, int i);

/* Whether the last complete frame began with a full-frame plan, and how
 * many backend rounds it took: 1, 2 (some objects again over grown
 * regions) or 3 (some of those again over the whole frame). */
bool trk_tracker_was_full(const struct trk_tracker *t);
int trk_tracker_rounds(const struct trk_tracker *t);

/* Counts since create (resets do not clear them): what roi mode's reruns
 * cost. */
struct trk_tracker_stats {
    uint64_t frames;        /* complete frames                                */
    uint64_t full;          /* that began with a full-frame plan              */
    uint64_t grown;         /* that took a round over grown regions (2+)      */
    uint64_t whole;         /* that then took a whole-frame round (3)         */
    uint64_t grown_objects; /* objects measured over grown regions            */
    uint64_t whole_objects; /* objects measured over the whole frame after    */
};
void trk_tracker_get_stats(const struct trk_tracker *t, struct trk_tracker_stats *out);

#endif

/* The state a frame's step reads from the frames before it (every
 * instance with its filters, the tracks, the next id, the frame count
 * since the reset), for rewind bundles (daemon/state.h). save appends it
 * to b; load reads it back into t, reset with the same object set, adding
 * delta to every stored seq (the replayed frame's seq minus the saved
 * one's, wrapping: only differences of seqs are used). 0, or TRK_EINVAL
 * with r marked bad where it failed (t then holds part of it: reset it). */
struct trk_bytes;
struct trk_rd;
void trk_tracker_save(const struct trk_tracker *t, struct trk_bytes *b);
int trk_tracker_load(struct trk_tracker *t, struct trk_rd *r, uint64_t delta);
