/* The pipeline: a capture thread (source -> frame pool), a processing thread
 * (backend -> results -> NDJSON and WebSocket), a preview thread (JPEG for the
 * web page) and, on the caller's thread, the 1 Hz stats line. */
#ifndef TRK_DAEMON_PIPELINE_H
#define TRK_DAEMON_PIPELINE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "backend.h"
#include "source.h"

struct trk_ws;
struct trk_control;

struct trk_pipeline_cfg {
    struct trk_source *source;   /* opened */
    struct trk_backend *backend; /* objects already set */
    const struct trk_object_def *objects;
    const uint8_t (*colors)[3]; /* display colour per object */
    int n_objects;
    FILE *output;          /* NDJSON sink or NULL */
    bool output_flush;     /* flush each line (pipes, terminals) */
    struct trk_ws *ws;     /* WebSocket server or NULL */
    bool fast;             /* no pacing: as fast as possible */
    uint64_t max_frames;   /* stop after this many frames; 0 = all */
    bool preview;          /* send preview JPEGs to clients */
    int preview_width;     /* largest preview width in pixels */
    double preview_fps;    /* preview rate limit */
    int preview_quality;   /* JPEG quality 1..100 */
    bool progress;         /* progress line on stderr (a terminal) */
    double stats_interval; /* seconds between stats lines; 0 = none */
    /* Live object edits, sampling and mask view (daemon/control.h); NULL =
     * the fixed set above. When set, its object set replaces objects /
     * n_objects from the first frame on, and new versions are applied
     * between frames. */
    struct trk_control *control;
};

/* Every frame the source delivered is accounted for once: processed
 * (frames), dropped for a newer one (drops) or rejected by the backend
 * (skipped). */
struct trk_pipeline_summary {
    uint64_t frames, drops;
    uint64_t skipped; /* frames the backend rejected (not in frames; logged once) */
    double seconds, fps;
    bool source_error; /* stopped because the source failed */
    uint64_t outages;  /* times a live source was lost and reopened */
};

/* Runs until the source ends, max_frames are done, or *stop becomes non-zero
 * (signal handler). Returns 0 or a negative code. */
int trk_pipeline_run(const struct trk_pipeline_cfg *cfg, volatile sig_atomic_t *stop,
                     struct trk_pipeline_summary *summary);

/* Resident set size of this process in kB (from /proc/self/statm). */
long trk_rss_kb(void);

#endif
