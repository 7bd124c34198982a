/* Markers: things assembled from blobs (issue 26). A marker is a pattern of
 * coloured spots on one thing (a robot's cover, a tag): which thing (an id),
 * where (its centre) and facing which way (a heading), read from the blob
 * lists of the frame's objects. Two kinds:
 *
 * - centre + dots (RoboCup SSL style): a centre spot of one colour (the team
 *   colour) and n dots (2..TRK_PATTERN_DOTS_MAX) at known offsets in the
 *   pattern's own frame (millimetres, +x forward, +y to the left). The id
 *   comes from the dots' colours in their slots, the heading from fitting
 *   the whole dot template to the dots seen (below), not from one dot.
 * - colour codes (Pixy2 style): 2..TRK_CODE_MAX blobs of listed colours
 *   side by side in a row; the code's id is the pattern's, its heading runs
 *   from the first colour's blob to the last.
 *
 * Assembly is host code over spots (a blob reduced to its centroid and
 * mass): it depends only on the blob lists, so it gives the same markers
 * whichever backend produced them, and it is deterministic (spots are taken
 * in the order given; ties keep that order).
 *
 * Centre + dots, per centre spot (in the order given, so the larger centres
 * of a mass-ordered list first):
 * 1. scale: px_per_mm if set, else from the centre spot's area as a disc of
 *    centre_mm diameter (sqrt(4 mass / pi) / centre_mm);
 * 2. dots: every unused spot of a dot colour whose distance from the centre
 *    is within [1 - tol, 1 + tol] times the template's dot radius (each
 *    dot's distance from the pattern origin, scaled); with more candidates
 *    than dots, those nearest to their expected distance; fewer: no marker
 *    (the tracker coasts it);
 * 3. fit: the dots seen and the template's dots are each ordered by angle
 *    around the centre; for each of the n cyclic pairings the rotation that
 *    best maps template onto seen dots in the least-squares sense is
 *    theta = atan2(sum t x o, sum t . o) (2-D Procrustes with the scale
 *    known); the pairing with the least residual wins. The heading is that
 *    theta: the template's +x axis, counter-clockwise on screen from +x
 *    (screen y points down, so seen offsets enter with y negated);
 * 4. id: the colour in each template slot under the winning pairing, looked
 *    up in the pattern's id table; no exact match: no marker;
 * 5. confidence: 1 - rms residual / (tol x mean dot radius), clamped to
 *    [0, 1].
 * Dots used by a marker are not used again in the same frame.
 *
 * Colour codes, per spot of the first colour: each next colour's nearest
 * unused spot within gap x (r_prev + r_next) of the previous one (r: the
 * radius of a disc of the spot's mass), turning by less than 45 degrees
 * from the previous step; the centre is the chain's mass-weighted mean,
 * the confidence 1 - the largest distance of a middle spot from the line
 * first-last over its radius, clamped. */
#ifndef TRK_DAEMON_MARKERS_H
#define TRK_DAEMON_MARKERS_H

#include <stddef.h>
#include <stdint.h>

#include "patterns.h" /* struct trk_pattern, trk_spot, trk_marker */

/* Finds the markers of every pattern among the spots, in pattern order then
 * centre order; writes at most max of them into out and returns how many
 * were found (which may exceed max: the rest are not written). At most
 * TRK_PATTERNS_MAX patterns (a set's most) are looked for. A centre looks
 * at the spots near it only (a grid of the dot colours' spots, built once
 * per call), which finds the same dots as looking at every spot. */
size_t trk_markers_find(const struct trk_pattern *pats, size_t n_pats, const struct trk_spot *spots,
                        size_t n_spots, struct trk_marker *out, size_t max);

/* Following markers through frames: each found marker is matched to a
 * track of the same pattern and id (the nearest to its predicted position
 * when one id is seen twice), keeping its track_id; a track not matched
 * this frame coasts on its velocities for up to coast_frames frames and is
 * reported with lost > 0 and its predicted pose, so a marker that misses a
 * dot for a frame or two keeps its track_id when it is found again. A
 * found marker no track takes gets a new track_id. Velocities move half way
 * to each measured step (the instances' rule, daemon/tracker.h).
 * Threads: one follower belongs to the processing thread. */
struct trk_marker_follower;

/* NULL on allocation failure. coast_frames 0 counts as 10. */
struct trk_marker_follower *trk_markers_follower_create(uint32_t coast_frames);
void trk_markers_follower_destroy(struct trk_marker_follower *f);
/* Forgets every track (a new object set or frame size); ids go on rising. */
void trk_markers_follower_reset(struct trk_marker_follower *f);
/* Follows this frame's n found markers (in place: track_id, lost 0,
 * velocities) and appends the coasting tracks after them, up to max in
 * all; returns the new count (found + coasting written). TRK_ENOMEM keeps
 * the tracks as they were and returns n with track_ids 0. */
size_t trk_markers_follow(struct trk_marker_follower *f, struct trk_marker *m, size_t n,
                          size_t max);

/* The pipeline's marker step (markers_frame.c): after the tracker, the
 * frame result's blob lists as spots (centroids from the result, objects
 * in index order, each list in its order: the same spots, so the same
 * markers, whichever backend listed them), trk_markers_find and the
 * follower, into the result (trk_frame_result_set_markers, world poses by
 * the set's calibration). The follower starts over when the patterns, the
 * object count or the frame size change. Threads: the processing
 * thread's. */
struct trk_marker_stage;
struct trk_frame_result;
struct trk_objects;

/* NULL on allocation failure. */
struct trk_marker_stage *trk_marker_stage_create(void);
/* Safe with NULL. */
void trk_marker_stage_destroy(struct trk_marker_stage *s);
/* Finds and follows the markers of set's patterns in r (filled for a
 * width x height frame) and sets them into it; a set without patterns
 * gives r none. 0, or TRK_ENOMEM (r then has no markers this frame). */
int trk_marker_stage_run(struct trk_marker_stage *s, const struct trk_objects *set,
                         struct trk_frame_result *r, int width, int height);

/* The follower's tracks and next id, and the stage's (with whether its
 * tracks belong to set at width x height), for rewind bundles
 * (daemon/state.h): save appends them to b, load reads them back (the
 * follower: tracks of patterns below n_patterns; the stage: into a stage
 * that then follows set's patterns at that size, or starts over at its
 * next frame as the saved one would have). 0, or TRK_EINVAL with r
 * marked bad where it failed, or TRK_ENOMEM. */
struct trk_bytes;
struct trk_rd;
void trk_markers_follower_save(const struct trk_marker_follower *f, struct trk_bytes *b);
int trk_markers_follower_load(struct trk_marker_follower *f, struct trk_rd *r, size_t n_patterns);
void trk_marker_stage_save(const struct trk_marker_stage *s, const struct trk_objects *set,
                           int n_objects, int width, int height, struct trk_bytes *b);
int trk_marker_stage_load(struct trk_marker_stage *s, const struct trk_objects *set, int n_objects,
                          int width, int height, struct trk_rd *r);

#endif
