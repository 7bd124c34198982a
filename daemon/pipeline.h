/* The pipeline: a capture thread (source -> frame pool), a processing thread
 * (tracker plan -> backend rounds -> tracker -> the frame result to the
 * outputs, daemon/out/outputs.h), a
 * preview thread (JPEG for the web page), a sampler thread (the clients'
 * colour samples, at low priority) and, on the caller's thread, the 1 Hz
 * stats line. */
#ifndef TRK_DAEMON_PIPELINE_H
#define TRK_DAEMON_PIPELINE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "backend.h"
#include "source/source.h"

struct trk_ws;
struct trk_control;
struct trk_metrics;
struct trk_snapshot;
struct trk_focus;
struct trk_outputs;
struct trk_record;
struct trk_rewind;

struct trk_pipeline_cfg {
    struct trk_source *source; /* opened, unless source_absent */
    /* A live source that could not be opened at start (the caller said so):
     * the capture thread waits for it without calling it "lost". */
    bool source_absent;
    struct trk_backend *backend;
    /* How backend was made. Given, frames larger than it was made for (a
     * size change mid-stream) get a larger backend made between frames
     * (owned by the pipeline); NULL: such frames are skipped and counted. */
    const struct trk_backend_cfg *backend_cfg;
    /* Where results go (daemon/out/outputs.h: every frame's result, the
     * source's state, the object set, the 1 Hz stats), NULL = nowhere. */
    struct trk_outputs *outputs;
    /* The WebSocket server or NULL: previews, colour samples and the
     * clients count (its results go through outputs). */
    struct trk_ws *ws;
    bool fast;             /* no pacing: as fast as possible */
    uint64_t max_frames;   /* stop after this many frames; 0 = all */
    bool preview;          /* send preview JPEGs to clients */
    int preview_width;     /* largest preview width in pixels */
    double preview_fps;    /* preview rate limit */
    int preview_quality;   /* JPEG quality 1..100 */
    bool progress;         /* progress line on stderr (a terminal) */
    double stats_interval; /* seconds between stats log lines; 0 = none (the
                            * WebSocket "stats" go out every second anyway) */
    /* The object set (daemon/control/control.h: the initial set, live edits and
     * reloads, applied to the backend between frames from the first frame
     * on), colour sampling, preview width / rate and the mask view.
     * Required. */
    struct trk_control *control;
    /* systemd (daemon/ops/notify.h): notify sends a STATUS= line every second
     * ("tracking 29.9 fps, 2 clients", "waiting for camera /dev/video0");
     * watchdog_period > 0 sends WATCHDOG=1 that often while the processing
     * thread is healthy: waiting for a frame (however long the source
     * delivers none) or on one for less than watchdog_period seconds. */
    bool notify;
    double watchdog_period;
    /* The operations endpoints (daemon/ops/metrics.h, daemon/ops/snapshot.h), each
     * NULL = none: every processed frame is counted there and lent to the
     * snapshot; the source's state and outages go to the metrics. */
    struct trk_metrics *metrics;
    struct trk_snapshot *snapshot;
    /* The focus check (daemon/ops/focus.h; NULL = off): its due frames are
     * lent to it like the snapshot's, and its reading goes in the stats. */
    struct trk_focus *focus;
    /* prefilter_set: --prefilter's sigma (prefilter) overrides every
     * object set's own prefilter_sigma; else each set's own applies
     * (gpu/prefilter.h). */
    bool prefilter_set;
    double prefilter;
    /* The camera's name (--name) in every frame message; NULL = none. */
    const char *camera;
    /* The tracker (daemon/tracker.h): enum trk_track_mode (--mode, 0 =
     * roi) and the periodic full-frame pass (--full-every, 0 = default). */
    int track_mode;
    int full_every;
    /* Pipelining: the next frame goes to the backend before this one's
     * results are encoded and sent, so the GPU works while the CPU sends.
     * 0 = when the backend is asynchronous (trk_backend_async) and the next
     * frame is already there (never waiting for it); 1 = always, and for
     * files and the demo the processing thread first waits for the next
     * frame (tests: every frame but the last is pipelined, also on the CPU
     * backends, where a frame's results then wait for the next one's work);
     * -1 = never. */
    int pipeline;
    /* Frames in plain heap memory rather than the backend's host memory
     * (pinned on CUDA: no staging copy on upload); for comparisons. */
    bool pageable;
    /* --spin: unless fast, the processing thread polls for each frame near
     * its predicted arrival (trk_pool_set_spin) and the WebSocket thread
     * for its result (trk_ws_expect) instead of sleeping. */
    bool spin;
    /* > 0: the capture and processing threads ask for SCHED_FIFO at this
     * priority (--rt-priority); refused, one warning and normal priority. */
    int rt_priority;
    /* --record (daemon/out/record.h): the capture thread hands it every
     * frame it publishes; NULL = none. */
    struct trk_record *record;
    /* --rewind (daemon/out/rewind.h): likewise; NULL = none. */
    struct trk_rewind *rewind;
    /* --replay: called on the processing thread just before the control
     * module's object set is looked up for frame seq, so a set the bundle
     * changed at seq is installed (trk_control_install) exactly for that
     * frame; NULL = none. */
    void (*frame_due)(void *ctx, uint64_t seq);
    void *frame_due_ctx;
    /* --replay of a rewind bundle: its state.bin (daemon/state.h), loaded
     * into the tracker and the marker stage before the first frame; NULL =
     * none. */
    const void *state;
    size_t state_len;
    /* --replay's transport (daemon/source/replay.h: pause, step, seek and
     * re-run move between frames), processing thread, ctx replay_ctx:
     * replay_state just before frame seq is begun: 1 with the state to load
     * (a jump to a frame whose state an earlier pass kept), -1 when the
     * tracker and the marker stage start over (a jump to a frame none was
     * kept for), 0 to go on; replay_keep then gets the state before it;
     * replay_show: the frame must be previewed whatever the preview rate
     * (a step or seek, which the page waits to show). NULL = none. */
    int (*replay_state)(void *ctx, uint64_t seq, const void **data, size_t *len);
    void (*replay_keep)(void *ctx, uint64_t seq, const void *data, size_t len);
    bool (*replay_show)(void *ctx, uint64_t seq);
    void *replay_ctx;
};

/* --spin: auto (in a daemon holding one of the machine's spin slots, at
 * most one per TRK_SPIN_MIN_CPUS online CPUs: polling needs a core to
 * spare, and without one it takes CPU time from the threads doing the
 * work; daemon/spin.h), on, off. */
enum trk_spin { TRK_SPIN_AUTO, TRK_SPIN_ON, TRK_SPIN_OFF };
#define TRK_SPIN_MIN_CPUS 4
/* "auto", "on", "off" -> enum trk_spin; -1 otherwise. */
int trk_spin_parse(const char *s);

/* Every frame the source delivered is accounted for once: processed
 * (frames), dropped for a newer one (drops) or rejected by the backend
 * (skipped). */
struct trk_pipeline_summary {
    uint64_t frames, drops;
    uint64_t skipped; /* frames the backend rejected (not in frames) */
    double seconds, fps;
    bool source_error;  /* stopped because the source failed */
    bool eof;           /* stopped at the end of a file (no --loop) */
    uint64_t outages;   /* times a live source was lost and reopened */
    uint64_t resizes;   /* frame size changes followed mid-stream */
    uint64_t pipelined; /* frames submitted while the one before was sent */
    uint64_t pinned;    /* frames read from pinned host memory (CUDA) */
};

/* Runs until the source ends, max_frames are done, or *stop becomes non-zero
 * (signal handler). Returns 0 or a negative code (TRK_EINVAL without a
 * source, backend or control). */
int trk_pipeline_run(const struct trk_pipeline_cfg *cfg, volatile sig_atomic_t *stop,
                     struct trk_pipeline_summary *summary);

/* Resident set size of this process in kB (from /proc/self/statm). */
long trk_rss_kb(void);

#endif
