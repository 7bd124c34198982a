/* --rewind SECONDS: the last SECONDS of frames (as the source delivered
 * them), their frame messages and the object sets in force, kept in memory
 * and saved as a bundle (docs/RECORDING.md) on demand: trk_rewind_save
 * (the save_rewind control message, the page's button, SIGUSR1) or by a
 * trigger (--rewind-on lost:K, --rewind-on health).
 *
 * The buffer is bounded twice: by time (the newest frame's t_capture minus
 * the oldest's is at most SECONDS) and by bytes (--rewind-max-mem; the
 * oldest frames go first, logged once). A save takes the frames whose
 * results are in (newer ones stay for the next save) out of the buffer in
 * O(1) under the lock and hands them to a saver thread of its own, which
 * writes the bundle (trk_record_write) and frees them; while it writes,
 * the buffer fills again, so memory peaks at twice the buffer during a
 * save. A failing disk fails that save (logged, the folder named), never
 * tracking. Frames the processing thread skipped (a live camera's pool
 * keeps the newest) have no result and are left out of the save: the
 * bundle holds the frames the tracker saw.
 *
 * Threads: trk_rewind_frame from the capture thread; the output hooks from
 * the processing thread; trk_rewind_save from any thread (it never waits
 * on the disk); the saver thread also polls the health callback.
 * Lifecycle: trk_rewind_add registers it with the outputs door, whose
 * destroy closes it (the save being written is finished first). */
#ifndef TRK_DAEMON_REWIND_H
#define TRK_DAEMON_REWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "record.h"

struct trk_outputs;
struct trk_rewind;

struct trk_rewind_cfg {
    double seconds;     /* the buffer's length, > 0                           */
    uint64_t max_bytes; /* the most frame bytes held                          */
    const char *dir;    /* saves go to DIR/rewind-YYYYMMDD-HHMMSS-N           */
    double min_gap;     /* seconds between two saves                          */
    int lost_frames;    /* > 0: save when something is lost for more than it  */
    /* non-NULL: polled about 4 times a second by the saver; a change from
     * healthy to not saves (why: the reason, for the manifest). */
    bool (*healthy)(void *ctx, char *why, size_t len);
    void *healthy_ctx;
    /* The manifest's fields (dir, trigger, rewind_seconds and
     * started_wall_ms are set per save). Strings copied. */
    struct trk_record_cfg bundle;
};

/* Bytes a second the buffer needs for w x h frames at fps, at bpp bytes a
 * pixel. */
double trk_rewind_bytes_per_second(int width, int height, double fps, double bpp);

/* Starts the saver thread and registers with the door; *out for
 * trk_rewind_frame / trk_rewind_save (owned by the door). 0, TRK_ENOMEM. */
int trk_rewind_add(const struct trk_rewind_cfg *cfg, struct trk_outputs *o,
                   struct trk_rewind **out);

/* Capture thread: keeps a packed copy of f (seq, t_capture, pts set) and
 * lets the oldest frames go past the bounds. NULL rw: nothing. */
void trk_rewind_frame(struct trk_rewind *rw, struct trk_frame *f);

/* Processing thread: the state (daemon/state.h) it has just before frame
 * seq, kept while that frame is in the buffer; a save writes the one
 * before its first frame as state.bin, so tracked objects and markers
 * replay as they went on live. NULL rw: nothing. */
void trk_rewind_state(struct trk_rewind *rw, uint64_t seq, const void *data, size_t len);

/* Saves the buffer: trigger says why ("request", "signal", "lost: ...",
 * "health: ..."). Never waits on the disk: the bundle's folder is named in
 * dir at once and written by the saver. 0; or -EBUSY (a save is being
 * written), -EAGAIN (within the gap since the last), -ENODATA (no frame
 * with its result yet), each with why. */
int trk_rewind_save(struct trk_rewind *rw, const char *trigger, char *dir, size_t dir_len,
                    char *why, size_t why_len);

#endif
