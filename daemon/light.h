/* Ranges that follow the light (issue 27; OBJECTS.md, "Light").
 *
 * Between frames the module gives back the colour boxes the next frame is
 * thresholded with. The frame itself is never changed, and backends get
 * plain boxes, so every backend stays identical; every step is integer, so
 * a recording replays identically.
 *
 * Two steps a frame, so that no backend copies a frame for it: before
 * frame f+1 is submitted, the *plan* says which of its pixels the module
 * reads, from what is known then: the reference's grid (its rectangle and
 * the frame's size) and, for the adapted objects in turn, points around
 * frame f's blobs (the last results). The backend reads those pixels'
 * native samples with frame f+1's own work (trk_backend_set_gather: on the
 * GPU in the same submission for a device frame, from host memory for a
 * host frame); after frame f+1, the *update* takes them (each point's
 * channels in an object space come from its samples with
 * trk_pixel_triples, as every backend's pixel test) and moves the boxes
 * for frame f+2. The reference is thus measured on the frame it describes,
 * and adaptation reads frame f+1 around where frame f found the object
 * (the grown boxes leave room for its motion); after a reset (a new set)
 * the first plan has no adaptation points.
 *
 * Illumination compensation ("illumination"): the reference's per-channel
 * R, G, B means, Q8 (a patch: every pixel of the rectangle, grey-world: the
 * rectangle or the frame; both on a grid of at most 1024 points: the least
 * step s with ceil(w / s) ceil(h / s) <= 1024, from the top left corner)
 * give gains g[c] = mean[c] / reference[c] (Q16,
 * in steps of 1/256, clamped to 1/8..8). Each object's taught box moves with them: rgb boxes
 * scale per channel (lo floor(lo g), hi ceil(hi g)); hsv and ycbcr boxes
 * move by how a 3x3x3 grid of the box's colours moves when taken to RGB,
 * scaled by the gains and taken back (lo and hi move by the change of the
 * grid's minimum and maximum per channel: unit gains give the taught box
 * exactly; hue from the grid points with saturation >= 48). A bound at a
 * channel's end (0, or 255: saturated pixels) stays there.
 *
 * Adaptation ("adapt"): after each frame, at most 2 adapted objects in
 * turn (each every period = ceil(adapted / 2) frames, its rate times the
 * period), for each object with blobs in the last results, the
 * pixels around its blobs of at least half the largest's mass (each blob's
 * box grown by half its size; a grid of at most 256 / blobs points each) that the
 * current box widened by rate takes give a mean per channel (hue: around the box's
 * centre); the first frame after a reset keeps it as the object's
 * reference, and later frames move the box's offset toward (mean - the
 * reference colour as the compensation moves it) by at most rate per frame and at most max_drift in
 * all. The ring rule: a move is not made when more than the "ring" share of the points of a
 * TRK_ADAPT_RING_PX-wide ring just outside those grown boxes (a grid of step >= 2 with at most
 * 64 points a blob) would match the moved box (the background would be swallowed). An object
 * whose offset is at max_drift or whose move the ring stopped is "on the guard rail".
 *
 * Thread: the processing thread owns a trk_light.
 */
#ifndef TRK_DAEMON_LIGHT_H
#define TRK_DAEMON_LIGHT_H

#include <stdbool.h>
#include <stdint.h>

#include "image.h"
#include "objects.h"
#include "result.h"

#ifdef __cplusplus
extern "C" {
#endif

struct trk_light;

/* One object's state after the last update. */
struct trk_light_state {
    uint16_t lo[3], hi[3]; /* the box the next frame uses */
    int16_t drift[3];      /* adaptation's offset from the compensated box */
    bool rail;             /* on the guard rail (see above) */
};

int trk_light_create(struct trk_light **out);
/* Safe on NULL and twice. */
void trk_light_destroy(struct trk_light **l);

/* A new set (n of its objects applied: 0 when the backend refused it):
 * its boxes are the taught ones, every gain 1, every drift 0. */
void trk_light_reset(struct trk_light *l, const struct trk_objects *set, int n);

/* Object i's adaptation starts over (offset 0, a new reference on its
 * next turn), as reset_range asks (PROTOCOL.md). */
void trk_light_reset_object(struct trk_light *l, int i);

/* Whether the set has illumination or an adapted object (else update does
 * nothing and needs no pixels). */
bool trk_light_on(const struct trk_light *l);

/* The plan for frame `next` (its size is read; light.h): the points whose
 * native samples the update needs, *pts (the module's, valid until the
 * next plan), from res, the last frame's results (NULL: none). Returns
 * how many (0..TRK_MAX_GATHER; 0 also when off). Each plan waits for one
 * update; a new plan replaces one that got none (a failed frame). */
int trk_light_plan(struct trk_light *l, const struct trk_image *next,
                   const struct trk_frame_result *res, const struct trk_gather_point **pts);

/* After frame img (its format and colour matrix are read, not its pixels)
 * whose planned points read vals (n of them: trk_backend_gathered):
 * measures and moves the boxes. Returns true when they differ from those
 * of the last call (or the reset): *defs then points to the n definitions
 * (the module's) to give the backend before the next frame. false, with
 * nothing changed and *defs untouched, when off or when n is not the
 * plan's count (nothing was planned or read). */
bool trk_light_update(struct trk_light *l, const struct trk_image *img,
                      const struct trk_gather_value *vals, int n,
                      const struct trk_object_def **defs);

/* Plan, read and update on a host frame in one call (trk_image_gather):
 * what the pipeline does through the backend, for tests and
 * measurements. res: the results of the frame before img. */
bool trk_light_step_host(struct trk_light *l, const struct trk_image *img,
                         const struct trk_frame_result *res, const struct trk_object_def **defs);

/* Object i's state (NULL out of range); gains: the last gains, Q16. */
const struct trk_light_state *trk_light_state(const struct trk_light *l, int i);
void trk_light_gains(const struct trk_light *l, uint32_t gain_q16[3]);

/* The reference's means the boxes in use belong to (Q8): the set's (or
 * the first frame's) times the gains, for keep_range (a kept set with
 * them has gains 1 for the same light); false while none is known. */
bool trk_light_means(const struct trk_light *l, uint32_t means_q8[3]);

/* The light's state between two frames for state.bin (daemon/state.h):
 * everything the next plan and update read (gains, references, each
 * object's drift, reference and boxes, the turn count) and, for the next
 * plan, each adapted object's best blobs in res (the last frame's
 * results; NULL: none), appended to *b. */
struct trk_bytes;
struct trk_rd;
void trk_light_save(const struct trk_light *l, const struct trk_frame_result *res,
                    struct trk_bytes *b);

/* Loads a trk_light_save into l, reset with the same set beforehand: its
 * next plan reads the saved blobs instead of the results it is given.
 * 0, or TRK_EINVAL with r->bad set at the wrong byte (l is then partly
 * loaded: trk_state_load resets it). */
int trk_light_load(struct trk_light *l, struct trk_rd *r);

/* The boxes the backend is to use now (the n definitions: taught after a
 * reset, the light-adjusted ones after an update or a load). */
const struct trk_object_def *trk_light_defs(const struct trk_light *l);

/* The states for /metrics (ops/metrics.h): n entries into out (names
 * from the set), n = the objects applied (0 when off). */
struct trk_metrics_range;
int trk_light_report(const struct trk_light *l, struct trk_metrics_range *out);

#ifdef __cplusplus
}
#endif
#endif
