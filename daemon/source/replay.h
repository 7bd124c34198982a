/* --replay DIR: a bundle made with --record (docs/RECORDING.md) as a
 * source. Frames come back bit-exact with their recorded pts (the pipeline
 * paces them, or --fast); each recorded object set is installed in the
 * control module just before the frame it first applied to
 * (trk_replay_frame_due, the pipeline's frame_due hook); --verify compares
 * every new result with the recorded one (trk_replay_verify_add).
 *
 * The whole bundle is checked at open (manifest, every index line against
 * frames.raw's size, every object set), so a damaged bundle fails before
 * the first frame with the file and the offset.
 *
 * Threads: read from the capture thread, frame_due and the verifier from
 * the processing thread; they share nothing mutable.
 * Lifecycle: trk_replay_open fills a struct trk_source that owns the
 * replay (trk_source_destroy frees it): destroy it after the outputs. */
#ifndef TRK_DAEMON_REPLAY_H
#define TRK_DAEMON_REPLAY_H

#include <stdbool.h>
#include <stddef.h>

#include "source.h"

struct trk_replay;
struct trk_control;
struct trk_outputs;
struct trk_objects;

/* Opens the bundle in dir as *src. 0, TRK_REPLAY_ENOBUNDLE (no bundle
 * there: not a folder, no manifest.json) or TRK_REPLAY_EDAMAGED (a file of
 * it is unreadable or inconsistent); why says which file and offset. */
#define TRK_REPLAY_ENOBUNDLE (-10110)
#define TRK_REPLAY_EDAMAGED  (-10111)
int trk_replay_open(const char *dir, struct trk_source *src, struct trk_replay **out, char *why,
                    size_t why_len);

/* The set the bundle starts with (version 1). */
const struct trk_objects *trk_replay_first_set(const struct trk_replay *r);

/* The recorded run's --mode as resolved (enum trk_track_mode: roi or
 * full), or -1 when the manifest does not say (an older bundle). */
int trk_replay_track_mode(const struct trk_replay *r);
/* A rewind save's state before its first frame (state.bin, checked at
 * open): its length and *data, for the pipeline's cfg.state; 0 and NULL
 * when the bundle has none. */
size_t trk_replay_state(const struct trk_replay *r, const void **data);
/* Where frame_due installs the recorded sets. */
void trk_replay_set_control(struct trk_replay *r, struct trk_control *c);

/* The pipeline's frame_due hook (ctx: the replay): installs every recorded
 * set that applies from replayed frame seq on and is not yet installed. */
void trk_replay_frame_due(void *ctx, uint64_t seq);

/* Registers the verifier with the door: every frame message is compared
 * with the recorded one, the fields of TRK_REPLAY_TIMING_FIELDS aside. */
int trk_replay_verify_add(struct trk_replay *r, struct trk_outputs *o);

/* The fields --verify ignores: they measure this run, not what was found
 * ("backend" and "camera" name the run's backend and camera; "seq" is the
 * replay's count, matched with the recorded seq through the index). */
#define TRK_REPLAY_TIMING_FIELDS                                                                   \
    "t_capture", "wall_ms", "latency", "upload_bytes", "backend", "camera", "seq"

/* After the run: true when verification found no difference (and every
 * recorded result was replayed); otherwise the first difference was
 * printed on stdout. */
bool trk_replay_verified(const struct trk_replay *r);

#endif
