#include "pipeline.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LOG_TAG "pipeline"
#include "color.h"
#include "log.h"
#include "messages.h"
#include "prefilter.h"
#include "control/control.h"
#include "ops/notify.h"
#include "ops/metrics.h"
#include "control/preview.h"
#include "out/outputs.h"
#include "out/record.h"
#include "out/rewind.h"
#include "ops/snapshot.h"
#include "light.h"
#include "ops/focus.h"
#include "markers.h"
#include "spin.h"
#include "state.h"
#include "tracker.h"
#include "trk_assert.h"
#include "ws.h"

/* Latency samples kept per stats interval (older ones are overwritten). */
#define STAT_SAMPLES 1024
/* Seconds over which /metrics' frame rate is measured; the other totals
 * there are refreshed every stats loop turn (50 ms). */
#define METRICS_PERIOD 1.0
/* Seconds between the outputs' stats (the page's "stats" messages). */
#define WS_STATS_PERIOD 1.0
/* The share of one core the colour sampler may use: after answering a batch
 * that took t seconds of its CPU time it rests t * (1 / SAMPLER_DUTY - 1), so
 * however many clients keep samples pending, sampling takes at most this
 * much CPU from capture and processing. A lone sample is still answered from
 * the next frame: the rest only delays the batch after it. */
#define SAMPLER_DUTY 0.1
/* Without a watchdog: seconds on one frame after which the service status
 * and the log call the processing thread stalled (with one, half the
 * watchdog interval: the point where petting stops). */
#define STALL_S 10.0
/* The paced hand-off from capture to processing (trk_pool_set_spin): the
 * processing thread polls from HANDOFF_EARLY s before the next frame's
 * predicted arrival until it comes, at most HANDOFF_LATE s after. EARLY
 * covers the thread's own timed wake-up, LATE a capture thread woken late;
 * at 60 fps a frame costs ~0.3 ms of one core (2%). */
#define HANDOFF_EARLY 0.3e-3
#define HANDOFF_LATE  1.0e-3
/* The WebSocket thread stays awake for a frame's result (trk_ws_expect)
 * for EXPECT_FACTOR times the last frame's processing time plus
 * EXPECT_MARGIN s, at most EXPECT_MAX s: long enough for most frames,
 * bounded for the slow ones (they wake it as before). */
#define EXPECT_FACTOR 1.5
#define EXPECT_MARGIN 0.3e-3
#define EXPECT_MAX    3e-3

/* The latency stages sampled for every processed frame (ms). */
enum stage {
    STAGE_PROCESS, /* backend call, wall clock                          */
    STAGE_QUEUE,   /* capture -> processing starts                      */
    STAGE_UPLOAD,  /* host -> device copy (backend's own timing)        */
    STAGE_KERNEL,  /* threshold + reduction (backend's own timing)      */
    STAGE_SEND,    /* results ready -> handed to the outputs          */
    STAGE_TOTAL,   /* capture -> handed over                            */
    N_STAGES
};

/* One running pipeline: its threads and what they share. Every field below
 * `lock` is guarded by it; the ones above it are set before the threads
 * start or owned by the thread named. */
struct pipeline {
    const struct trk_pipeline_cfg *cfg;
    volatile sig_atomic_t *stop;
    double t_start;
    struct trk_pool pool;
    pthread_t capture_thread, process_thread, preview_thread, sampler_thread;
    bool have_preview_thread, have_sampler_thread;
    /* Processing thread: the results of one backend round (per object or
     * per region: TRK_MAX_REGIONS), the units' blob lists (the backend's
     * memory, valid until its next submit), the current object set and the
     * tracker that follows it. */
    struct trk_obj_result *res;
    const struct trk_blob **unit_blobs;
    /* Processing thread: whether it polls (--spin; cfg->spin at start, set
     * later when --spin auto gets a slot another daemon gave up). */
    bool spin;
    int *unit_nb;
    /* The frame's results per object as the tracker reports them (its
     * memory, valid until the next begin: read by keep_results at once),
     * and the frame result the outputs get, filled from them. */
    struct trk_obj_result obj_res[TRK_MAX_OBJECTS];
    struct trk_blob_list blobs[TRK_MAX_OBJECTS];
    struct trk_instance_list instances[TRK_MAX_OBJECTS];
    struct trk_frame_result result;
    struct trk_objects *objects;
    struct trk_tracker *tracker;
    struct trk_marker_stage *markers; /* the set's patterns' markers (markers.h) */
    struct trk_light *light;          /* ranges that follow the light (light.h) */
    struct trk_metrics_range light_ranges[TRK_MAX_OBJECTS]; /* its /metrics report */
    bool light_shown;                                       /* /metrics has light gauges */
    /* A set the control module had for the frame after the one being sent
     * (pipelining looks before this frame's results are out, and they go
     * out under this frame's set): applied before that frame starts. */
    struct trk_objects *polled;
    bool polled_ready;
    /* cfg->state is loaded (before the first frame) and the bytes of the
     * state kept for --rewind before each frame. */
    bool state_loaded;
    struct trk_bytes state;
    /* What the tracker says about the frame's rounds. */
    bool was_full;
    int rounds;
    /* The backend in use: cfg->backend, or `grown` once frames outgrew it
     * (made here, destroyed at the end). max_w/h: the largest frame it
     * takes; frame_w/h: the size clients were last told. */
    struct trk_backend *backend, *grown;
    int max_w, max_h, frame_w, frame_h;
    uint64_t resizes;
    /* Log-once flags for errors that repeat every frame, reset when the
     * thing works again so the next failure is logged too. */
    _Atomic bool lost_logged;    /* capture thread: live source lost    */
    _Atomic bool backend_failed; /* processing thread: backend rejected */
    _Atomic bool set_failed;     /* processing thread: new object set   */
    _Atomic bool blobs_failed;   /* processing thread: blob lists       */
    _Atomic bool stall_logged;   /* caller's thread: processing stalled */
    /* Processing thread: when it took the frame it works on (CLOCK_MONOTONIC
     * ns), 0 while it waits for one. A source that delivers nothing leaves
     * it 0 (healthy, waiting); a thread wedged on one frame (an output
     * nobody reads, a hung driver call) lets it age: the systemd watchdog
     * is petted only while it is young. */
    _Atomic uint64_t busy_since_ns;

    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool capture_done, process_done, source_error, eof;
    uint64_t outages; /* live source losses (camera unplugged, stalled) */
    /* The capture thread is (re)opening a live source: absent at start or
     * lost; waiting_for is its description, for the service status. */
    bool source_waiting;
    char waiting_for[sizeof(((struct trk_source *)0)->desc)];
    uint64_t frames;                 /* processed */
    uint64_t skipped;                /* taken for processing but rejected by the backend */
    uint64_t pipelined;              /* started while the frame before was being sent */
    uint64_t pinned;                 /* read by the backend from pinned host memory */
    struct trk_tracker_stats tstats; /* the tracker's counts after the last frame */
    double first_t, last_t;          /* monotonic times of first/last processed frame */
    /* Per-interval latency samples in ms, per stage, and bytes uploaded. */
    float samples[N_STAGES][STAT_SAMPLES];
    float upload_bytes[STAT_SAMPLES];
    uint64_t n_samples; /* taken since start; sample i is at i % STAT_SAMPLES */
    /* Preview and sampler hand-off: the processing thread parks a frame
     * (one pool holder each) for an idle preview or sampler thread, which
     * releases it to the pool when done. */
    struct trk_frame *preview_frame;
    /* preview_frame's result objects (a carved view protects and maps
     * their boxes). */
    struct trk_result_object preview_obj[TRK_MAX_OBJECTS];
    int preview_n;
    struct trk_frame *sample_frame;
    bool sampler_waiting; /* the sampler waits for a frame (not busy or resting) */
    bool helpers_quit;    /* the preview and sampler threads end */
    /* The pre-filter the backend applies (0 = off), for the mask view. */
    double prefilter;
};

static bool stopping(struct pipeline *p)
{
    return *p->stop != 0;
}

/* Sleeps until monotonic time t, waking early when a stop is requested. */
static void sleep_until(struct pipeline *p, double t)
{
    for (;;) {
        double left = t - trk_now();
        if (left <= 0 || stopping(p)) return;
        double slice = left < 0.05 ? left : 0.05;
        struct timespec ts = { (time_t)slice, (long)((slice - (time_t)slice) * 1e9) };
        nanosleep(&ts, NULL);
    }
}

/* Tells /metrics and the outputs what the source is doing. */
static void send_status(const struct trk_pipeline_cfg *cfg, const char *state, const char *text)
{
    trk_metrics_source_state(cfg->metrics, state, text);
    trk_outputs_status(cfg->outputs, &(struct trk_source_status){ .state = state, .text = text });
}

/* Capture thread: says whether it waits for a live source (the service
 * status reads it). */
static void set_waiting(struct pipeline *p, bool waiting)
{
    pthread_mutex_lock(&p->lock);
    p->source_waiting = waiting;
    if (waiting) snprintf(p->waiting_for, sizeof(p->waiting_for), "%s", p->cfg->source->desc);
    pthread_mutex_unlock(&p->lock);
}

/* A live source failed with err: close it, tell clients, then reopen it with
 * the same settings at once and every second after until it works. false
 * when a stop was requested meanwhile. Logs once per outage. at_start: it
 * was never open (absent at start, already logged), so no outage. */
static bool reopen_live(struct pipeline *p, int err, bool at_start)
{
    const struct trk_pipeline_cfg *cfg = p->cfg;
    struct trk_source *src = cfg->source;
    double t_lost = trk_now();
    if (!at_start) {
        pthread_mutex_lock(&p->lock);
        uint64_t n = ++p->outages;
        pthread_mutex_unlock(&p->lock);
        trk_metrics_outage(cfg->metrics);
        log_once(p->lost_logged, TRK_LOG_WARN, err, "%s lost (outage %llu); retrying every second",
                 src->desc, (unsigned long long)n);
    }
    trk_source_close(src);
    send_status(cfg, "lost", at_start ? "not connected yet" : trk_strerror(err));
    set_waiting(p, true);
    for (int tries = 0;; tries++) {
        sleep_until(p, t_lost + tries);
        if (stopping(p)) return false;
        if (trk_source_open(src) == 0) break;
        trk_source_close(src);
    }
    set_waiting(p, false);
    log_info(at_start ? "%s opened after %.3f s" : "%s back after %.3f s", src->desc,
             trk_now() - t_lost);
    trk_log_once_reset(p->lost_logged);
    if (!at_start) trk_metrics_reopen(cfg->metrics);
    send_status(cfg, "ok", src->desc);
    return true;
}

/* Names the calling thread (top -H, /proc/PID/task/TID/comm: the attack
 * tests read each thread's CPU time by name). */
static void name_thread(const char *name)
{
    prctl(PR_SET_NAME, name, 0, 0, 0);
}

/* --rt-priority: the calling thread (capture or processing) asks for
 * SCHED_FIFO, so a frame never waits for ordinary threads (the preview
 * encoder, other programs) to give up the CPU. Refused (no CAP_SYS_NICE,
 * RLIMIT_RTPRIO too low): one warning, and the thread runs on at normal
 * priority; nothing else changes. */
static void ask_realtime(struct pipeline *p, const char *what)
{
    if (p->cfg->rt_priority <= 0) return;
    struct sched_param sp = { .sched_priority = p->cfg->rt_priority };
    int e = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    /* Each thread asks once, at its start: one line each. */
    if (e)
        log_warn("the %s thread cannot have real-time priority %d (%s: needs CAP_SYS_NICE or an "
                 "RLIMIT_RTPRIO of %d, e.g. systemd's LimitRTPRIO=); it runs at normal priority",
                 what, p->cfg->rt_priority, strerror(e), p->cfg->rt_priority);
}

static void *capture_main(void *arg)
{
    struct pipeline *p = arg;
    name_thread("trk-capture");
    ask_realtime(p, "capture");
    const struct trk_pipeline_cfg *cfg = p->cfg;
    uint64_t seq = 0;
    double t0 = 0, pts0 = 0;
    bool seq_paced = false;           /* t0, pts0 hold: the frame before was paced */
    bool absent = cfg->source_absent; /* reading it fails at once: then wait */
    if (!absent) send_status(cfg, "ok", cfg->source->desc);
    while (!stopping(p) && (!cfg->max_frames || seq < cfg->max_frames)) {
        struct trk_frame *f = trk_pool_get(&p->pool);
        if (!f) break;
        f->t_capture = 0;
        int err = trk_source_read(cfg->source, f);
        if (err == TRK_SOURCE_AGAIN) {
            /* A paused replay: the clock starts over when it plays on. */
            trk_pool_release(&p->pool, f);
            seq_paced = false;
            trk_metrics_set_paused(cfg->metrics, true);
            continue;
        }
        if (!err) trk_metrics_set_paused(cfg->metrics, false);
        if (err && err != TRK_SOURCE_EOF && cfg->source->live) {
            /* A camera that fails is waited for, never the end of the run. */
            trk_pool_release(&p->pool, f);
            if (!reopen_live(p, err, absent)) break;
            absent = false;
            continue;
        }
        if (err) {
            trk_pool_release(&p->pool, f);
            if (err == TRK_SOURCE_EOF) {
                /* The "eof" status goes out once the last result has. */
                log_info("end of input after %llu frames", (unsigned long long)seq);
                pthread_mutex_lock(&p->lock);
                p->eof = true;
                pthread_mutex_unlock(&p->lock);
            } else {
                /* A file that cannot be decoded has said why, in FFmpeg's
                 * words; clients get the same text. */
                const char *why = cfg->source->error;
                if (err != TRK_SOURCE_EDECODE || !*why) {
                    log_error_err(err, "reading the source failed");
                    why = trk_strerror(err);
                }
                send_status(cfg, "error", why);
                pthread_mutex_lock(&p->lock);
                p->source_error = true;
                pthread_mutex_unlock(&p->lock);
            }
            break;
        }
        /* Pace files and the demo at their own rate unless --fast. A stall of
         * over a second (e.g. a suspended process) restarts the clock rather
         * than bursting to catch up. */
        if (cfg->source->unpaced) {
            seq_paced = false;
        } else if (!cfg->fast && !cfg->source->live) {
            double now = trk_now();
            if (!seq_paced || f->pts < pts0 || now - (t0 + f->pts - pts0) > 1.0) {
                t0 = now;
                pts0 = f->pts;
            }
            seq_paced = true;
            sleep_until(p, t0 + (f->pts - pts0));
        }
        f->seq = seq++;
        /* Live sources give the driver's capture time (same clock). */
        double now = trk_now();
        if (!cfg->source->live || !(f->t_capture > 0 && f->t_capture <= now)) f->t_capture = now;
        trk_record_frame(cfg->record, f);
        trk_rewind_frame(cfg->rewind, f);
        if (!trk_pool_publish(&p->pool, f)) break;
    }
    pthread_mutex_lock(&p->lock);
    p->capture_done = true;
    pthread_mutex_unlock(&p->lock);
    trk_pool_close(&p->pool); /* processing drains the ready frame, then ends */
    return NULL;
}

/* Applies a changed object set between frames, never mid-frame: results
 * from here on carry the new names. Returns how many objects the results
 * have: the new set, or none when the backend refused it (reporting old
 * results under new names would be wrong). */
static int apply_objects(struct pipeline *p)
{
    trk_objects_bind_classes(p->objects); /* a copy: its tables are its own */
    const struct trk_objects *set = p->objects;
    int e = trk_backend_set_objects(p->backend, set->def, set->n);
    int k = -1; /* an object with blobs, when the backend has none (TRK_ENODEV) */
    for (int i = 0; e == TRK_ENODEV && k < 0 && i < set->n; i++)
        if (set->def[i].blobs) k = i;
    if (k >= 0) {
        /* A live edit or reload turned blobs on: say so, not "no GPU". */
        log_once(p->set_failed, TRK_LOG_ERROR, 0,
                 "cannot apply the new object set: backend %s does not list blobs (object "
                 "\"%s\" has \"blobs\": %u); no objects are reported until a set it takes",
                 trk_backend_name(p->backend), set->def[k].name, set->def[k].blobs);
    } else if (e) {
        log_once(p->set_failed, TRK_LOG_ERROR, e, "cannot apply the new object set");
    } else if (atomic_exchange(&p->set_failed, false)) {
        log_info("object set applied (%d objects)", set->n);
    }
    /* The pre-filter goes with the set (--prefilter overrides it). A
     * backend that cannot have it (out of memory) tracks the raw frames. */
    const double sigma = p->cfg->prefilter_set ? p->cfg->prefilter : set->prefilter_sigma;
    int pe = trk_backend_set_prefilter(p->backend, sigma);
    if (pe) {
        log_error_err(pe, "cannot apply the pre-filter (sigma %g): tracking the raw frames", sigma);
        trk_backend_set_prefilter(p->backend, 0);
    }
    pthread_mutex_lock(&p->lock);
    p->prefilter = pe ? 0 : sigma;
    pthread_mutex_unlock(&p->lock);
    int n = e ? 0 : set->n;
    /* Cannot fail: n is within the tracker's TRK_MAX_OBJECTS. */
    trk_tracker_reset(p->tracker, set->def, n);
    trk_light_reset(p->light, set, n);
    trk_outputs_objects(p->cfg->outputs, set);
    return n;
}

/* Size changes logged one by one; after that only counted (a stream that
 * changes size every frame must not flood the log). */
#define RESIZES_LOGGED 10

/* Frame f has another size than the frames before it: make what depends on
 * the size fit it before it is processed. A backend made for smaller frames
 * is replaced by one for the largest size seen (never shrunk, so a stream
 * that goes back and forth does not churn); the tracker starts over (its
 * positions were in the old size); the control module's hello and every
 * client learn the new size. Returns how many objects the results have (as
 * apply_objects). A backend that cannot be made leaves the old one: the
 * frames it rejects are skipped and counted. */
static int follow_size(struct pipeline *p, const struct trk_frame *f, int n_objects)
{
    const struct trk_pipeline_cfg *cfg = p->cfg;
    int w = f->img.width, h = f->img.height;
    if (++p->resizes <= RESIZES_LOGGED)
        log_info("frame size changed from %dx%d to %dx%d at frame %llu%s", p->frame_w, p->frame_h,
                 w, h, (unsigned long long)f->seq,
                 p->resizes == RESIZES_LOGGED ? " (further changes are only counted)" : "");
    p->frame_w = w, p->frame_h = h;
    if ((w > p->max_w || h > p->max_h) && cfg->backend_cfg) {
        struct trk_backend_cfg bc = *cfg->backend_cfg;
        bc.max_width = w > p->max_w ? w : p->max_w;
        bc.max_height = h > p->max_h ? h : p->max_h;
        struct trk_backend *b = NULL;
        int err = trk_backend_create(&bc, &b);
        if (err) {
            log_error_err(err,
                          "cannot make a backend for %dx%d frames; frames that size are "
                          "skipped",
                          bc.max_width, bc.max_height);
        } else {
            trk_backend_destroy(&p->grown);
            p->backend = p->grown = b;
            p->max_w = bc.max_width, p->max_h = bc.max_height;
            log_info("backend %s now takes frames up to %dx%d", trk_backend_name(b), p->max_w,
                     p->max_h);
            n_objects = apply_objects(p); /* the new backend has no objects yet */
        }
    }
    trk_tracker_reset(p->tracker, p->objects->def, n_objects);
    trk_control_set_frame_size(cfg->control, w, h);
    char text[96];
    snprintf(text, sizeof(text), "frame size changed to %dx%d", w, h);
    trk_outputs_status(cfg->outputs, &(struct trk_source_status){
                                         .state = "ok", .text = text, .width = w, .height = h });
    return n_objects;
}

/* Points p->unit_blobs at the backend's blob lists of the round just run
 * (n units: objects, or regions naming them), for the units whose object
 * has blobs on (the others' lists stay empty). */
static void collect_blobs(struct pipeline *p, const struct trk_tracker_plan *plan, int n)
{
    bool failed = false;
    for (int j = 0; j < n; j++) {
        const int obj = plan->full ? j : plan->regions[j].obj;
        p->unit_blobs[j] = NULL;
        p->unit_nb[j] = 0;
        if (!p->objects->def[obj].blobs) continue;
        int nb = trk_backend_blobs(p->backend, j, &p->unit_blobs[j]);
        if (nb < 0) {
            /* Cannot happen after a successful process; should it, the frame
             * goes out with empty lists rather than not at all. */
            log_once(p->blobs_failed, TRK_LOG_ERROR, nb, "backend %s gave no blob list for %s",
                     trk_backend_name(p->backend), p->objects->def[obj].name);
            failed = true;
            p->unit_blobs[j] = NULL;
            nb = 0;
        }
        p->unit_nb[j] = nb;
    }
    if (!failed) trk_log_once_reset(p->blobs_failed);
}

/* The round *plan asks for, on the backend, without waiting; the call's
 * time is added to *backend_s. */
static int submit_round(struct pipeline *p, const struct trk_frame *f,
                        const struct trk_tracker_plan *plan, double *backend_s)
{
    const double t0 = trk_now();
    int err = plan->full ? trk_backend_submit(p->backend, &f->img, NULL)
                         : trk_backend_submit_regions(p->backend, &f->img, plan->regions, plan->n);
    *backend_s += trk_now() - t0;
    return err;
}

/* Starts frame f: the tracker's first round (daemon/tracker.h: one
 * full-frame submit or one submit_regions call) goes to the backend and is
 * left running (pipelining: the CPU sends the previous frame meanwhile).
 * 0 or the backend's error (nothing in flight then). */
/* The light's boxes (light.h) on the backend after a state was loaded
 * into it or it started over. */
static void light_to_backend(struct pipeline *p)
{
    const int n = trk_tracker_count(p->tracker);
    int e = trk_light_on(p->light) && n > 0
                ? trk_backend_set_objects(p->backend, trk_light_defs(p->light), n)
                : 0;
    if (e) log_once(p->set_failed, TRK_LOG_ERROR, e, "cannot apply the light-adjusted ranges");
}

/* Loads state bytes (daemon/state.h) before frame f: 0, or TRK_EINVAL with
 * *off and *what (everything as reset then). */
static int load_state(struct pipeline *p, const struct trk_frame *f, const void *data, size_t len,
                      size_t *off, const char **what)
{
    const int err = trk_state_load(data, len, p->tracker, p->markers, p->light, p->objects,
                                   f->img.width, f->img.height, f->seq, off, what);
    light_to_backend(p);
    return err;
}

/* A replay moved to frame f from elsewhere (a step back, a seek, a
 * re-run): the tracker, the marker stage and the light take the state an
 * earlier pass kept before it, or start over, as the replay says. */
static void replay_jump(struct pipeline *p, const struct trk_frame *f)
{
    const struct trk_pipeline_cfg *cfg = p->cfg;
    const void *data = NULL;
    size_t len = 0, off = 0;
    const char *what = NULL;
    int how = cfg->replay_state(cfg->replay_ctx, f->seq, &data, &len);
    if (how > 0 && load_state(p, f, data, len, &off, &what) == 0) return;
    if (how > 0)
        log_warn("the kept state of frame %llu does not load at byte %zu: %s; the tracker starts "
                 "over there",
                 (unsigned long long)f->seq, off, what);
    if (how == 0) return;
    trk_tracker_reset(p->tracker, p->objects->def, trk_tracker_count(p->tracker));
    trk_light_reset(p->light, p->objects, trk_tracker_count(p->tracker));
    light_to_backend(p);
    struct trk_marker_stage *m = trk_marker_stage_create();
    if (m) {
        trk_marker_stage_destroy(p->markers);
        p->markers = m;
    }
}

/* The state before frame f (daemon/state.h): a replayed rewind bundle's
 * goes into the tracker and the marker stage before its first frame;
 * --rewind keeps a copy before every frame. */
static void frame_state(struct pipeline *p, const struct trk_frame *f)
{
    const struct trk_pipeline_cfg *cfg = p->cfg;
    const int w = f->img.width, h = f->img.height;
    if (cfg->state && !p->state_loaded) {
        size_t off = 0;
        const char *what = NULL;
        if (load_state(p, f, cfg->state, cfg->state_len, &off, &what))
            log_error("the bundle's state.bin cannot be loaded at byte %zu: %s; the replay starts "
                      "without it",
                      off, what);
    }
    p->state_loaded = true;
    if (cfg->replay_state) replay_jump(p, f);
    const bool rec = trk_record_wants_state(cfg->record);
    if (!cfg->rewind && !cfg->replay_keep && !rec) return;
    p->state.len = 0;
    p->state.failed = false;
    trk_state_save(&p->state, p->tracker, p->markers, p->light, &p->result, p->objects, w, h,
                   f->seq);
    if (p->state.failed) return;
    if (cfg->rewind) trk_rewind_state(cfg->rewind, f->seq, p->state.p, p->state.len);
    if (rec) trk_record_state(cfg->record, f->seq, p->state.p, p->state.len);
    if (cfg->replay_keep) cfg->replay_keep(cfg->replay_ctx, f->seq, p->state.p, p->state.len);
}

/* The light's plan for frame f (light.h), from the last frame's results:
 * its points go with f's first round (trk_backend_set_gather), read where
 * f lies, so a device frame is never copied for the light. */
static int plan_light(struct pipeline *p, const struct trk_frame *f)
{
    const struct trk_gather_point *pts;
    const int n = trk_light_plan(p->light, &f->img, &p->result, &pts);
    return trk_backend_set_gather(p->backend, pts, n);
}

static int start_frame(struct pipeline *p, const struct trk_frame *f, struct trk_tracker_plan *plan,
                       double *backend_s)
{
    frame_state(p, f);
    *backend_s = 0;
    int err = trk_tracker_begin(p->tracker, f->seq, f->img.width, f->img.height, plan);
    if (!err) err = plan_light(p, f);
    return err ? err : submit_round(p, f, plan, backend_s);
}

/* Fills p->result from the tracker's per-object results, blob lists and
 * instances (valid only until its next begin, which pipelining calls
 * before this frame is sent): copied, every derived value computed once
 * (protocol/result.h). The frame's meta is set when it is sent. */
static int keep_results(struct pipeline *p, int n_objects)
{
    for (int i = 0; i < n_objects; i++) {
        const struct trk_blob *b;
        const struct trk_instance *v;
        int nb = trk_tracker_blobs(p->tracker, i, &b);
        p->blobs[i] = (struct trk_blob_list){ .blobs = nb > 0 ? b : NULL, .n = nb };
        int ni = trk_tracker_instances(p->tracker, i, &v);
        p->instances[i] = (struct trk_instance_list){ .v = ni > 0 ? v : NULL, .n = ni };
        p->obj_res[i] = *trk_tracker_result(p->tracker, i);
    }
    p->was_full = trk_tracker_was_full(p->tracker);
    p->rounds = trk_tracker_rounds(p->tracker);
    const struct trk_objects *set = p->objects;
    int err = trk_frame_result_fill(&p->result, &(struct trk_frame_meta){ 0 }, set->def, n_objects,
                                    p->obj_res, p->blobs, p->instances, &set->calib);
    if (err) return err;
    /* Instances' world velocities per second, then the markers from the
     * blob lists just kept (markers.h). */
    trk_frame_result_set_rate(&p->result, &set->calib, p->cfg->source->fps);
    return trk_marker_stage_run(p->markers, set, &p->result, p->frame_w, p->frame_h);
}

/* Finishes frame f begun with start_frame: waits for the round in flight,
 * runs the rounds the tracker asks for after it (for objects the regions did
 * not explain, a round over grown regions and, if those did not either, a
 * whole-frame round), then keeps the tracker's
 * per-object results in p->obj_res, p->blobs and p->instances. timing sums
 * the rounds; the time spent in the backend's calls is added to *backend_s.
 * 0 or the backend's error. */
static int finish_frame(struct pipeline *p, const struct trk_frame *f, int n_objects,
                        struct trk_tracker_plan *plan, struct trk_backend_timing *timing,
                        double *backend_s)
{
    int err = 0;
    for (int more = 1; !err && more == 1;) {
        struct trk_backend_timing t = { 0 };
        const int n = plan->full ? n_objects : plan->n;
        const double t_wait = trk_now();
        err = trk_backend_wait(p->backend, p->res, &t);
        *backend_s += trk_now() - t_wait;
        if (err) break;
        timing->upload_ms += t.upload_ms;
        timing->kernel_ms += t.kernel_ms;
        timing->total_ms += t.total_ms;
        timing->upload_bytes += t.upload_bytes;
        collect_blobs(p, plan, n);
        more = trk_tracker_measure(p->tracker, p->res, p->unit_blobs, p->unit_nb, n, plan);
        if (more < 0) err = more; /* a broken invariant: counted as a skipped frame */
        if (more == 1) err = submit_round(p, f, plan, backend_s);
    }
    return err ? err : keep_results(p, n_objects);
}

/* Counts a processed frame and keeps its stage latencies (ms) for stats. */
static void record_frame(struct pipeline *p, const struct trk_frame_meta *m, double t_done,
                         double send_ms, double total_ms, bool pinned, bool pipelined)
{
    struct trk_tracker_stats ts; /* the tracker is this (the processing) thread's */
    trk_tracker_get_stats(p->tracker, &ts);
    pthread_mutex_lock(&p->lock);
    p->tstats = ts;
    if (p->frames == 0) p->first_t = t_done;
    p->frames++;
    p->pinned += pinned;
    p->pipelined += pipelined;
    p->last_t = t_done;
    int k = (int)(p->n_samples++ % STAT_SAMPLES);
    p->samples[STAGE_PROCESS][k] = (float)m->process_ms;
    p->samples[STAGE_QUEUE][k] = (float)m->queue_ms;
    p->samples[STAGE_UPLOAD][k] = (float)m->upload_ms;
    p->samples[STAGE_KERNEL][k] = (float)m->kernel_ms;
    p->samples[STAGE_SEND][k] = (float)send_ms;
    p->samples[STAGE_TOTAL][k] = (float)total_ms;
    p->upload_bytes[k] = (float)m->upload_bytes;
    pthread_mutex_unlock(&p->lock);
}

/* A snapshot's frame's host pixels (a device frame's copy, made when a
 * request wants it). */
static const struct trk_image *snapshot_host(void *holder)
{
    return trk_frame_host(holder);
}

/* A snapshot's frame goes back to the pool. */
static void snapshot_release(void *ctx, void *holder)
{
    trk_pool_release(&((struct pipeline *)ctx)->pool, holder);
}

/* The operations endpoints' share of processed frame f: its stage times and
 * counts for /metrics (atomics, no lock), and the frame itself, lent with
 * one more pool holder, for /snapshot.jpg. */
static void report_ops(struct pipeline *p, struct trk_frame *f, const struct trk_frame_meta *m,
                       const struct trk_backend_timing *timing, double t_done, double t_sent,
                       int n_objects, bool pinned)
{
    const struct trk_pipeline_cfg *cfg = p->cfg;
    if (cfg->metrics) {
        struct trk_metrics_frame mf = {
            .stage_s = { [TRK_STAGE_QUEUE] = m->queue_ms * 1e-3,
                         [TRK_STAGE_UPLOAD] = m->upload_ms * 1e-3,
                         [TRK_STAGE_KERNEL] = m->kernel_ms * 1e-3,
                         [TRK_STAGE_PROCESS] = m->process_ms * 1e-3,
                         [TRK_STAGE_SEND] = t_sent - t_done,
                         [TRK_STAGE_TOTAL] = t_sent - f->t_capture },
            .upload_bytes = timing->upload_bytes,
            .objects = n_objects,
            .pinned = pinned,
        };
        for (int i = 0; i < n_objects; i++)
            mf.found += p->result.obj[i].found;
        trk_metrics_frame(cfg->metrics, &mf);
    }
    if (cfg->snapshot) {
        trk_pool_ref(&p->pool, f);
        struct trk_snapshot_frame sf = { .img = &f->img,
                                         .seq = f->seq,
                                         .defs = p->objects->def,
                                         .colors = (const uint8_t(*)[3])p->objects->color,
                                         .obj = p->result.obj,
                                         .n = n_objects,
                                         .release = snapshot_release,
                                         .ctx = p,
                                         .holder = f,
                                         .host =
                                             f->img.mem != TRK_MEM_HOST ? snapshot_host : NULL };
        trk_snapshot_publish(cfg->snapshot, &sf);
    }
    if (trk_focus_due(cfg->focus, f->seq)) {
        trk_pool_ref(&p->pool, f);
        trk_focus_offer(
            cfg->focus,
            &(struct trk_focus_frame){ .img = &f->img,
                                       .seq = f->seq,
                                       .release = snapshot_release,
                                       .ctx = p,
                                       .holder = f,
                                       .host = f->img.mem != TRK_MEM_HOST ? snapshot_host : NULL });
    }
}

/* Hands f to the preview thread when one is due and the encoder is idle,
 * and to the sampler when samples wait and it is idle; never waits for
 * either. Colour samples are answered there, not on the processing thread,
 * so no client can slow the results down. Returns whether a helper took f
 * (else the caller releases it). */
static bool hand_off(struct pipeline *p, struct trk_frame *f, double t_done, double *next_preview)
{
    const struct trk_pipeline_cfg *cfg = p->cfg;
    bool to_preview = false, to_sampler = false;
    pthread_mutex_lock(&p->lock);
    /* A replay's step or seek is previewed whatever the rate: the page
     * shows that frame. Paused, nothing is late for waiting for the
     * encoder to finish the one before (bounded). */
    const bool show = cfg->replay_show && cfg->replay_show(cfg->replay_ctx, f->seq);
    for (int i = 0; show && p->preview_frame && i < 40; i++) {
        pthread_mutex_unlock(&p->lock);
        usleep(5000);
        pthread_mutex_lock(&p->lock);
    }
    if (p->have_preview_thread && !p->preview_frame && (show || t_done >= *next_preview)) {
        struct trk_ws_stats st;
        trk_ws_get_stats(cfg->ws, &st);
        if (st.clients > 0) {
            p->preview_frame = f;
            p->preview_n = p->result.n < TRK_MAX_OBJECTS ? p->result.n : TRK_MAX_OBJECTS;
            memcpy(p->preview_obj, p->result.obj, (size_t)p->preview_n * sizeof p->preview_obj[0]);
            to_preview = true;
            /* Clients may change the rate. */
            int pw;
            double pfps;
            trk_control_preview(cfg->control, &pw, &pfps, NULL, 0);
            if (!(pfps > 0)) pfps = cfg->preview_fps; /* a control made without a hello */
            *next_preview = t_done + 1.0 / pfps;
        }
    }
    if (p->sampler_waiting && !p->sample_frame && trk_control_samples_pending(cfg->control)) {
        /* Processing's holder goes to one helper; the other gets its own. */
        if (to_preview) trk_pool_ref(&p->pool, f);
        p->sample_frame = f;
        p->sampler_waiting = false;
        to_sampler = true;
    }
    if (to_preview || to_sampler) pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    return to_preview || to_sampler;
}

/* Between frames (nothing in flight): the control module's new object set,
 * if any, and f's size (a new size may grow the backend). Returns the
 * number of objects from f on. */
static int prepare_frame(struct pipeline *p, const struct trk_frame *f, uint64_t *version,
                         int n_objects)
{
    if (!p->polled_ready && p->cfg->frame_due) p->cfg->frame_due(p->cfg->frame_due_ctx, f->seq);
    if (p->polled_ready || trk_control_poll(p->cfg->control, version, p->polled)) {
        struct trk_objects *t = p->objects;
        p->objects = p->polled;
        p->polled = t;
        p->polled_ready = false;
        n_objects = apply_objects(p);
    }
    if (f->img.width != p->frame_w || f->img.height != p->frame_h)
        n_objects = follow_size(p, f, n_objects);
    return n_objects;
}

/* Pipelining: the frame after the one whose results are about to go out,
 * taken and started on the backend now when it can be (cfg->pipeline):
 * waited for only in mode 1 on a lossless source; not started (left to
 * prepare_frame) when the object set or the frame size changes with it.
 * *started says whether it was; *err is its start's error. */
static struct trk_frame *take_next(struct pipeline *p, uint64_t *version,
                                   struct trk_tracker_plan *plan, bool *started, double *t_start,
                                   double *backend_s, int *err)
{
    const struct trk_pipeline_cfg *cfg = p->cfg;
    *started = false;
    *err = 0;
    if (cfg->pipeline < 0 || (cfg->pipeline == 0 && !trk_backend_async(p->backend))) return NULL;
    struct trk_frame *next = cfg->pipeline == 1 && p->pool.lossless ? trk_pool_take(&p->pool)
                                                                    : trk_pool_try_take(&p->pool);
    if (!next) return NULL;
    if (!p->polled_ready && cfg->frame_due) cfg->frame_due(cfg->frame_due_ctx, next->seq);
    if (!p->polled_ready && trk_control_poll(cfg->control, version, p->polled))
        p->polled_ready = true;
    if (p->polled_ready || next->img.width != p->frame_w || next->img.height != p->frame_h)
        return next;
    *t_start = trk_now();
    *err = start_frame(p, next, plan, backend_s);
    *started = true;
    return next;
}

/* A frame the backend rejects (e.g. a size change it was not created for)
 * is skipped and counted, not fatal; logged once until a frame works
 * again. */
static void skip_frame(struct pipeline *p, struct trk_frame *f, int err)
{
    log_once(p->backend_failed, TRK_LOG_ERROR, err,
             "backend %s failed on frame %llu; skipping frames until it works",
             trk_backend_name(p->backend), (unsigned long long)f->seq);
    pthread_mutex_lock(&p->lock);
    p->skipped++;
    pthread_mutex_unlock(&p->lock);
    trk_metrics_skipped(p->cfg->metrics);
    trk_pool_release(&p->pool, f);
}

/* Unless --fast (throughput, not latency): tells the WebSocket thread the
 * result of the frame starting now is coming (trk_ws_expect), from the
 * last frame's processing time (s). */
static void expect_result(struct pipeline *p, double last_process_s)
{
    if (!p->cfg->ws || p->cfg->fast || !p->spin) return;
    double within = last_process_s * EXPECT_FACTOR + EXPECT_MARGIN;
    trk_ws_expect(p->cfg->ws, within < EXPECT_MAX ? within : EXPECT_MAX);
}

/* The skipped frames are over: said once, with how many there were. */
static void backend_works(struct pipeline *p, const struct trk_frame *f)
{
    pthread_mutex_lock(&p->lock);
    uint64_t skipped = p->skipped;
    pthread_mutex_unlock(&p->lock);
    log_info("backend %s works again on frame %llu (%llu frames skipped since start)",
             trk_backend_name(p->backend), (unsigned long long)f->seq, (unsigned long long)skipped);
}

/* Illumination and adaptation (light.h): the points of frame f that its
 * plan asked for, read by the backend with f's first round (no copy of a
 * device frame), move the boxes the next frame is thresholded with, before
 * it is started (pipelining included), so a replay gives the same boxes. */
static void follow_light(struct pipeline *p, struct trk_frame *f, int n_objects)
{
    const bool on = trk_light_on(p->light);
    for (int i = 0; on && i < n_objects; i++) {
        /* The frame's results carry the box it was thresholded with. */
        const struct trk_light_state *st = trk_light_state(p->light, i);
        struct trk_result_object *o = &p->result.obj[i];
        if (p->objects->def[i].space == TRK_SPACE_CLASS) continue; /* painted: no box */
        o->has_range = true, o->range_rail = st->rail;
        memcpy(o->range_lo, st->lo, sizeof o->range_lo);
        memcpy(o->range_hi, st->hi, sizeof o->range_hi);
        memcpy(o->range_drift, st->drift, sizeof o->range_drift);
    }
    if (on) {
        const struct trk_gather_value *vals;
        const int nv = trk_backend_gathered(p->backend, &vals);
        const struct trk_object_def *defs = NULL;
        const bool changed = trk_light_update(p->light, &f->img, vals, nv < 0 ? 0 : nv, &defs);
        int e = changed ? trk_backend_set_objects(p->backend, defs, n_objects) : 0;
        if (e) log_once(p->set_failed, TRK_LOG_ERROR, e, "cannot apply the light-adjusted ranges");
        /* keep_range's boxes; reset_range's requests, for the next update. */
        uint32_t means[3] = { 0, 0, 0 };
        const bool has_means = trk_light_means(p->light, means);
        bool reset[TRK_MAX_OBJECTS];
        if (defs &&
            trk_control_light_frame(p->cfg->control, defs, n_objects, means, has_means, reset))
            for (int i = 0; i < n_objects; i++)
                if (reset[i]) trk_light_reset_object(p->light, i);
    }
    if (p->cfg->metrics && (on || p->light_shown)) {
        uint32_t g[3];
        trk_light_gains(p->light, g);
        trk_metrics_set_light(p->cfg->metrics, g, p->light_ranges,
                              trk_light_report(p->light, p->light_ranges));
        p->light_shown = on;
    }
}

/* Processed frame f's meta: its times (processing from t_start to t_done,
 * handed to the outputs now) and the tracker's share. */
static struct trk_frame_meta frame_meta(const struct pipeline *p, const struct trk_frame *f,
                                        const struct trk_backend_timing *timing, double t_start,
                                        double t_done, double backend_s)
{
    struct trk_frame_meta meta = {
        .seq = f->seq,
        .pts = f->pts,
        .width = f->img.width,
        .height = f->img.height,
        .t_capture = f->t_capture,
        .wall_ms = trk_wall_ms(),
        .queue_ms = (t_start - f->t_capture) * 1e3,
        .upload_ms = timing->upload_ms,
        .kernel_ms = timing->kernel_ms,
        .process_ms = (t_done - t_start) * 1e3,
        .backend_ms = backend_s * 1e3,
        .backend = trk_backend_name(p->backend),
        .camera = p->cfg->camera,
        .pass = p->was_full ? "full" : "roi",
        .rounds = p->rounds,
        .upload_bytes = timing->upload_bytes,
    };
    meta.handoff_ms = (trk_now() - t_done) * 1e3;
    return meta;
}

static void *process_main(void *arg)
{
    struct pipeline *p = arg;
    name_thread("trk-process");
    ask_realtime(p, "processing");
    const struct trk_pipeline_cfg *cfg = p->cfg;
    uint64_t version = 0; /* 0: the first poll gets the control's set */
    int n_objects = 0;
    double next_preview = 0;
    /* The frame taken ahead (pipelining), whether its first round is in
     * flight, since when, and its start's error. */
    struct trk_frame *next = NULL;
    bool next_started = false;
    double next_t = 0, next_backend = 0;
    int next_err = 0;
    struct trk_tracker_plan plan;
    double last_process = 0; /* s, the last frame's */
    for (;;) {
        struct trk_frame *f = next;
        bool started = next_started;
        double t_start = next_t, backend_s = next_backend;
        int err = next_err;
        next = NULL;
        if (!f) {
            atomic_store(&p->busy_since_ns, 0);
            f = trk_pool_take(&p->pool);
            if (!f) break;
        }
        atomic_store(&p->busy_since_ns, (uint64_t)(trk_now() * 1e9) + 1);
        if (!started) {
            n_objects = prepare_frame(p, f, &version, n_objects);
            expect_result(p, last_process);
            t_start = trk_now();
            err = start_frame(p, f, &plan, &backend_s);
        }
        struct trk_backend_timing timing = { 0 };
        if (!err) err = finish_frame(p, f, n_objects, &plan, &timing, &backend_s);
        if (!err) follow_light(p, f, n_objects); /* in process_ms: it delays the results */
        double t_done = trk_now();
        if (err) {
            skip_frame(p, f, err);
            continue;
        }
        last_process = t_done - t_start;
        if (atomic_exchange(&p->backend_failed, false)) backend_works(p, f);
        const bool pinned = trk_backend_image_pinned(p->backend, &f->img);
        /* The next frame goes to the backend now: its upload and kernels run
         * while this frame's results are encoded and sent below. */
        next = take_next(p, &version, &plan, &next_started, &next_t, &next_backend, &next_err);
        const struct trk_frame_meta meta = frame_meta(p, f, &timing, t_start, t_done, backend_s);
        p->result.meta = meta;
        trk_outputs_frame(cfg->outputs, &p->result);
        double t_sent = trk_now();
        /* The next frame, already on the backend, is expected now: this
         * frame's broadcast ended the last expectation. */
        if (next_started) expect_result(p, last_process);

        record_frame(p, &meta, t_done, (t_sent - t_done) * 1e3, (t_sent - f->t_capture) * 1e3,
                     pinned, started);
        /* --spin auto without a slot: one may have come free (spin.h). */
        if (!p->spin && !cfg->fast && trk_spin_retry(t_sent)) {
            p->spin = true;
            trk_pool_set_spin(&p->pool, HANDOFF_EARLY, HANDOFF_LATE);
            trk_metrics_set_spin(cfg->metrics, true);
        }
        report_ops(p, f, &meta, &timing, t_done, t_sent, n_objects, pinned);
        /* The preview and the sampler get the frame only after its results
         * are out, on their own threads, and only when idle: neither ever
         * delays results. */
        if (!hand_off(p, f, t_done, &next_preview)) trk_pool_release(&p->pool, f);
    }
    pthread_mutex_lock(&p->lock);
    p->process_done = true;
    p->helpers_quit = true;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static void *preview_main(void *arg)
{
    struct pipeline *p = arg;
    name_thread("trk-preview");
    /* Below the capture, processing and server threads (nice 10, this
     * thread only): on a busy machine the JPEG encoder gets what they leave
     * and never delays a result. It holds no lock while it encodes. */
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10) != 0)
        TRK_LOGX(TRK_LOG_DEBUG, errno, "cannot lower the preview thread's priority");
    const struct trk_pipeline_cfg *cfg = p->cfg;
    struct trk_preview *enc = NULL;
    uint8_t *msg = NULL;
    size_t msg_cap = 0;
    int enc_width = cfg->preview_width;
    struct trk_prefilter_buf pf_buf = { 0 };
    if (trk_preview_create(cfg->preview_width, cfg->preview_quality, &enc)) {
        log_error("cannot start the preview encoder; previews are off");
    }
    for (;;) {
        pthread_mutex_lock(&p->lock);
        while (!p->preview_frame && !p->helpers_quit)
            pthread_cond_wait(&p->cond, &p->lock);
        struct trk_frame *f = p->preview_frame;
        pthread_mutex_unlock(&p->lock);
        if (!f) break;
        /* Clients may change the preview width, and each may ask for its
         * own mask view: one picture per view. */
        int want_w;
        double unused_fps;
        struct trk_control_view views[1 + TRK_CONTROL_VIEWS];
        int n_views =
            trk_control_preview(cfg->control, &want_w, &unused_fps, views, 1 + TRK_CONTROL_VIEWS);
        bool mask = false;
        for (int i = 0; i < n_views; i++)
            mask |= views[i].mask;
        if (want_w <= 0) want_w = cfg->preview_width; /* a control made without a hello */
        if (want_w != enc_width) {
            trk_preview_destroy(&enc);
            if (trk_preview_create(want_w, cfg->preview_quality, &enc) == 0) enc_width = want_w;
        }
        /* With the pre-filter on, the mask view tests the filtered frame
         * (what the backend tracks: the same bytes, gpu/prefilter.h, made
         * here on the preview thread); the dimmed picture stays raw. */
        /* A device frame (--hwdec) is copied down for this; NULL when it
         * cannot be (logged): the frame gets no preview. */
        const struct trk_image *host = trk_frame_host(f);
        const struct trk_image *test = host;
        struct trk_image filtered;
        if (mask) {
            pthread_mutex_lock(&p->lock);
            const double sigma = p->prefilter;
            pthread_mutex_unlock(&p->lock);
            struct trk_prefilter pf;
            if (host && sigma > 0 && trk_prefilter_init(&pf, sigma) == 0 &&
                trk_prefilter_apply(&pf, host, &pf_buf, &filtered) == 0)
                test = &filtered;
        }
        /* A sample may name this frame, the picture its user saw: kept
         * before any client can see it. */
        if (enc && host) trk_control_keep_frame(cfg->control, host, f->seq);
        for (int i = 0; enc && host && i < n_views; i++) {
            size_t len;
            if (trk_preview_message(enc, host, test, &views[i], f->seq, p->preview_obj,
                                    p->preview_n, &msg, &msg_cap, &len) == 0)
                trk_ws_broadcast_view(cfg->ws, views[i].view, msg, len);
        }
        pthread_mutex_lock(&p->lock);
        p->preview_frame = NULL;
        pthread_mutex_unlock(&p->lock);
        trk_pool_release(&p->pool, f);
    }
    free(msg);
    trk_prefilter_buf_free(&pf_buf);
    trk_preview_destroy(&enc);
    return NULL;
}

/* CPU seconds this thread has used. */
static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The colour sampler: answers every pending sample request from the frame
 * the processing thread hands it, then rests so that it uses at most
 * SAMPLER_DUTY of a core. Requests that arrive meanwhile wait (the control
 * module bounds how many) and are answered from a newer frame. It runs at
 * the lowest priority (nice 19, this thread only): on a busy machine the
 * kernel gives the capture, processing and server threads the CPU first. */
static void *sampler_main(void *arg)
{
    struct pipeline *p = arg;
    name_thread("trk-sampler");
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19) != 0)
        TRK_LOGX(TRK_LOG_DEBUG, errno, "cannot lower the sampler thread's priority");
    pthread_mutex_lock(&p->lock);
    for (;;) {
        p->sampler_waiting = true;
        while (!p->sample_frame && !p->helpers_quit)
            pthread_cond_wait(&p->cond, &p->lock);
        struct trk_frame *f = p->sample_frame;
        pthread_mutex_unlock(&p->lock);
        if (!f) break;
        double cpu0 = thread_cpu();
        const struct trk_image *host = trk_frame_host(f); /* a device frame: copied */
        if (host) trk_control_answer_samples(p->cfg->control, host, f->seq);
        double rest = (thread_cpu() - cpu0) * (1.0 / SAMPLER_DUTY - 1.0);
        pthread_mutex_lock(&p->lock);
        p->sample_frame = NULL;
        pthread_mutex_unlock(&p->lock);
        trk_pool_release(&p->pool, f);
        /* Rest without a frame; the end of the run cuts it short. */
        double t = trk_now() + rest;
        struct timespec until = { (time_t)t, (long)((t - (double)(time_t)t) * 1e9) };
        pthread_mutex_lock(&p->lock);
        int rc = 0;
        while (!p->helpers_quit && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&p->cond, &p->lock, &until);
    }
    return NULL;
}

int trk_spin_parse(const char *s)
{
    if (!strcmp(s, "auto")) return TRK_SPIN_AUTO;
    if (!strcmp(s, "on")) return TRK_SPIN_ON;
    if (!strcmp(s, "off")) return TRK_SPIN_OFF;
    return -1;
}

long trk_rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, rss = 0;
    if (!f) return -1;
    int n = fscanf(f, "%ld %ld", &size, &rss);
    fclose(f);
    return n == 2 ? rss * (sysconf(_SC_PAGESIZE) / 1024) : -1;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Median and max of the first n samples (sorted in place). */
static void summarize(float *v, int n, double *median, double *max)
{
    *median = *max = 0;
    if (n <= 0) return;
    qsort(v, (size_t)n, sizeof(*v), cmp_float);
    *median = v[n / 2];
    *max = v[n - 1];
}

/* Where one stats reader's interval began: the log line and the 1 Hz
 * stats each have their own (their periods differ). */
struct stats_mark {
    uint64_t frames, samples;
    double t;
};

/* The interval's samples since *mark into st (medians, maxima of process
 * and queue in *process_max, *queue_max); *mark moves to now. */
static void sample_stats(struct pipeline *p, struct stats_mark *mark, struct trk_stats_info *st,
                         double *process_max)
{
    static float v[N_STAGES + 1][STAT_SAMPLES]; /* only the caller's thread reports */
    pthread_mutex_lock(&p->lock);
    uint64_t frames = p->frames, skipped = p->skipped, total = p->n_samples, pinned = p->pinned;
    const struct trk_tracker_stats ts = p->tstats;
    /* The newest samples of the interval, as many as the ring still holds. */
    uint64_t from = mark->samples + STAT_SAMPLES < total ? total - STAT_SAMPLES : mark->samples;
    int n = (int)(total - from);
    for (int i = 0; i < N_STAGES; i++)
        for (int k = 0; k < n; k++)
            v[i][k] = p->samples[i][(from + (uint64_t)k) % STAT_SAMPLES];
    for (int k = 0; k < n; k++)
        v[N_STAGES][k] = p->upload_bytes[(from + (uint64_t)k) % STAT_SAMPLES];
    pthread_mutex_unlock(&p->lock);
    double now = trk_now();
    double fps = now > mark->t ? (frames - mark->frames) / (now - mark->t) : 0;
    *mark = (struct stats_mark){ .frames = frames, .samples = total, .t = now };
    *st = (struct trk_stats_info){
        .uptime_s = now - p->t_start,
        .fps = fps,
        .frames = frames,
        .drops = trk_pool_drops(&p->pool),
        .skipped = skipped,
        .rss_kb = trk_rss_kb(),
        .pinned_frames = pinned,
    };
    double queue_max, unused;
    summarize(v[STAGE_PROCESS], n, &st->process_ms, process_max);
    summarize(v[STAGE_QUEUE], n, &st->queue_ms, &queue_max);
    summarize(v[STAGE_UPLOAD], n, &st->upload_ms, &unused);
    summarize(v[STAGE_KERNEL], n, &st->kernel_ms, &unused);
    st->send_ms = st->total_ms = st->upload_bytes = -1; /* null when no frame was processed */
    st->mode = p->cfg->track_mode == TRK_TRACK_FULL ? "full" : "roi";
    st->grown_frames = ts.grown;
    st->whole_frames = ts.whole;
    struct trk_focus_reading fr;
    trk_focus_get(p->cfg->focus, &fr);
    st->focus_on = p->cfg->focus != NULL;
    st->focus_state = trk_focus_state_name(fr.state);
    st->focus_sharpness = fr.sharpness;
    st->focus_baseline = fr.baseline;
    st->focus_warn = fr.warn;
    if (n > 0) {
        summarize(v[STAGE_SEND], n, &st->send_ms, &unused);
        summarize(v[STAGE_TOTAL], n, &st->total_ms, &unused);
        summarize(v[N_STAGES], n, &st->upload_bytes, &unused);
    }
}

/* The stats for the interval since *mark, as a log line (to_log) or the
 * outputs' 1 Hz stats (to_outputs); *mark moves to now. */
static void report_stats(struct pipeline *p, struct stats_mark *mark, bool to_log, bool to_outputs)
{
    const struct trk_pipeline_cfg *cfg = p->cfg;
    struct trk_stats_info st;
    double process_max;
    sample_stats(p, mark, &st, &process_max);
    char tail[2048] = "";
    struct trk_outputs_tally t = { .info = &st, .log = tail, .log_len = sizeof(tail) };
    trk_outputs_tally(cfg->outputs, &t);
    if (to_log)
        log_info("%.1f fps, %llu frames, %llu dropped, %llu skipped, process %.2f ms (p50) "
                 "%.2f ms (max), queue %.2f ms (p50), rss %ld kB, %d clients%s",
                 st.fps, (unsigned long long)st.frames, (unsigned long long)st.drops,
                 (unsigned long long)st.skipped, st.process_ms, process_max, st.queue_ms, st.rss_kb,
                 st.clients, tail);
    if (to_outputs) trk_outputs_stats(cfg->outputs, &st);
}

/* The totals /metrics shows that are gathered here rather than per frame:
 * drops, clients, the outputs' own and the frame rate over the last
 * METRICS_PERIOD or more. */
static void update_metrics(struct pipeline *p, struct stats_mark *mark)
{
    const struct trk_pipeline_cfg *cfg = p->cfg;
    pthread_mutex_lock(&p->lock);
    uint64_t frames = p->frames;
    pthread_mutex_unlock(&p->lock);
    double now = trk_now(), fps = -1;
    if (now - mark->t >= METRICS_PERIOD) {
        fps = (double)(frames - mark->frames) / (now - mark->t);
        *mark = (struct stats_mark){ .frames = frames, .t = now };
    }
    struct trk_stats_info st = { 0 };
    char tail[1];
    struct trk_outputs_tally t = { .info = &st, .log = tail, .metrics = cfg->metrics };
    trk_outputs_tally(cfg->outputs, &t);
    trk_metrics_set_totals(cfg->metrics, trk_pool_drops(&p->pool), st.clients, fps);
}

static void show_progress(struct pipeline *p, bool final)
{
    pthread_mutex_lock(&p->lock);
    uint64_t frames = p->frames;
    double dt = p->last_t - p->first_t;
    pthread_mutex_unlock(&p->lock);
    fprintf(stderr, "\r%llu frames, %.1f fps%s", (unsigned long long)frames,
            dt > 0 ? (frames - 1) / dt : 0.0, final ? "\n" : "   ");
}

/* The caller's thread's account of the service (daemon/ops/notify.h). */
struct service_mark {
    double next_pet, next_status;
    double t;        /* when the last status went out */
    uint64_t frames; /* p->frames then */
};

/* Seconds the processing thread has been on its current frame; 0 while it
 * waits for one. */
static double busy_for(struct pipeline *p, double now)
{
    uint64_t since = atomic_load(&p->busy_since_ns);
    return since ? now - (double)(since - 1) * 1e-9 : 0;
}

/* The systemd side of the stats loop: WATCHDOG=1 every watchdog_period
 * seconds while the processing thread is healthy (waiting for a frame or on
 * one for less than that), and once a second a STATUS= line that says what
 * trackd is doing. A stall is logged once (the journal then says why the
 * watchdog fired). */
static void service_tick(struct pipeline *p, struct service_mark *m, double now)
{
    const struct trk_pipeline_cfg *cfg = p->cfg;
    double stall_s = cfg->watchdog_period > 0 ? cfg->watchdog_period : STALL_S;
    double busy = busy_for(p, now);
    if (busy >= stall_s)
        log_once(p->stall_logged, TRK_LOG_ERROR, 0,
                 "the processing thread has been on one frame for %.1f s: the pipeline is "
                 "stalled%s",
                 busy, cfg->watchdog_period > 0 ? " (no more watchdog pets)" : "");
    else if (atomic_exchange(&p->stall_logged, false))
        log_info("the processing thread goes on again");
    if (cfg->watchdog_period > 0 && now >= m->next_pet && busy < stall_s) {
        trk_notify_watchdog();
        m->next_pet = now + cfg->watchdog_period;
    }
    if (!cfg->notify || now < m->next_status) return;
    m->next_status = now + 1.0;
    pthread_mutex_lock(&p->lock);
    uint64_t frames = p->frames;
    double last_t = frames ? p->last_t : p->t_start;
    bool waiting = p->source_waiting;
    char what[sizeof(p->waiting_for)];
    snprintf(what, sizeof(what), "%s", p->waiting_for);
    pthread_mutex_unlock(&p->lock);
    char text[sizeof(what) + 64];
    if (busy >= stall_s) {
        snprintf(text, sizeof(text), "stalled: one frame in processing for %.0f s", busy);
    } else if (waiting) {
        snprintf(text, sizeof(text), "waiting for %s (retrying every second)", what);
    } else if (frames == m->frames && now - last_t >= 2.0) {
        snprintf(text, sizeof(text), "no frames from the source for %.0f s", now - last_t);
    } else {
        double fps = now > m->t && m->t > 0 ? (double)(frames - m->frames) / (now - m->t) : 0;
        int n = snprintf(text, sizeof(text), "tracking %.1f fps", fps);
        struct trk_ws_stats ws;
        if (cfg->ws) {
            trk_ws_get_stats(cfg->ws, &ws);
            n += snprintf(text + n, sizeof(text) - (size_t)n, ", %d client%s", ws.clients,
                          ws.clients == 1 ? "" : "s");
        }
        struct trk_focus_reading fr;
        trk_focus_get(cfg->focus, &fr);
        if (fr.state == TRK_FOCUS_LOST && n < (int)sizeof(text))
            snprintf(text + n, sizeof(text) - (size_t)n, ", focus lost (%.0f%% of its sharpness)",
                     fr.ratio * 100);
    }
    m->t = now, m->frames = frames;
    trk_notify_status(text);
}

/* Frees p's memory and tracker. */
static void free_parts(struct pipeline *p)
{
    trk_tracker_destroy(&p->tracker);
    trk_marker_stage_destroy(p->markers);
    trk_light_destroy(&p->light);
    free(p->res);
    free(p->unit_blobs);
    free(p->unit_nb);
    free(p->objects);
    free(p->polled);
    trk_frame_result_free(&p->result);
    free(p->state.p);
    free(p);
}

/* Frees p and everything it holds; the threads have ended. */
static void pipeline_free(struct pipeline *p)
{
    trk_backend_destroy(&p->grown);
    trk_pool_destroy(&p->pool);
    free_parts(p);
}

/* A pipeline for cfg, its memory and tracker made, the frame pool set up;
 * NULL with *err set when something cannot be made. */
static struct pipeline *pipeline_new(const struct trk_pipeline_cfg *cfg,
                                     volatile sig_atomic_t *stop, int *err)
{
    struct pipeline *p = calloc(1, sizeof(*p));
    *err = TRK_ENOMEM;
    if (!p) return NULL;
    struct trk_tracker_cfg tc = { .max_objects = TRK_MAX_OBJECTS,
                                  .mode = cfg->track_mode,
                                  .full_every = cfg->full_every };
    /* A round has a result per object or per region. */
    const int units = TRK_MAX_REGIONS > TRK_MAX_OBJECTS ? TRK_MAX_REGIONS : TRK_MAX_OBJECTS;
    p->res = calloc((size_t)units, sizeof(*p->res));
    p->unit_blobs = calloc((size_t)units, sizeof(*p->unit_blobs));
    p->unit_nb = calloc((size_t)units, sizeof(*p->unit_nb));
    p->objects = calloc(1, sizeof(*p->objects));
    p->polled = calloc(1, sizeof(*p->polled));
    p->markers = trk_marker_stage_create();
    if (!p->res || !p->unit_blobs || !p->unit_nb || !p->objects || !p->polled || !p->markers ||
        (*err = trk_tracker_create(&tc, &p->tracker)) || (*err = trk_light_create(&p->light))) {
        free_parts(p);
        return NULL;
    }
    p->cfg = cfg;
    p->stop = stop;
    p->t_start = trk_now();
    p->backend = cfg->backend;
    p->frame_w = cfg->source->width, p->frame_h = cfg->source->height;
    p->max_w = cfg->backend_cfg ? cfg->backend_cfg->max_width : p->frame_w;
    p->max_h = cfg->backend_cfg ? cfg->backend_cfg->max_height : p->frame_h;
    trk_pool_init(&p->pool, !cfg->source->live);
    /* Real-time frames (paced files, the demo, cameras) reach a running
     * processing thread (--spin); --fast is about throughput, not latency. */
    p->spin = cfg->spin && !cfg->fast;
    if (p->spin) trk_pool_set_spin(&p->pool, HANDOFF_EARLY, HANDOFF_LATE);
    trk_metrics_set_spin(cfg->metrics, p->spin);
    /* Frames in the backend's host memory (pinned on CUDA): sources draw,
     * copy or decode into it and the upload needs no staging copy. The
     * caller's backend, not a grown one: it outlives the pool and the
     * source's buffers. */
    if (!cfg->pageable) trk_pool_set_host_mem(&p->pool, cfg->backend);
    cfg->source->host_mem = cfg->pageable ? NULL : cfg->backend;
    *err = 0;
    return p;
}

/* The caller's thread: stats, the service and progress until processing
 * ends. The outputs get their stats every WS_STATS_PERIOD whatever
 * --stats-interval says; that governs only the log line. */
static void stats_loop(struct pipeline *p)
{
    const struct trk_pipeline_cfg *cfg = p->cfg;
    double t_start = trk_now(), next_stats = t_start + cfg->stats_interval, next_progress = t_start;
    double next_ws_stats = t_start + WS_STATS_PERIOD;
    struct stats_mark log_mark = { .t = t_start }, ws_mark = { .t = t_start };
    struct service_mark svc = { .next_status = t_start + 1.0, .t = t_start };
    struct stats_mark metrics_mark = { .t = t_start };
    double next_metrics = t_start;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        bool done = p->process_done;
        pthread_mutex_unlock(&p->lock);
        if (done) break;
        if (stopping(p)) trk_pool_close(&p->pool); /* capture and processing wind down */
        double now = trk_now();
        if (cfg->stats_interval > 0 && now >= next_stats) {
            report_stats(p, &log_mark, true, false);
            next_stats += cfg->stats_interval;
            if (next_stats < now) next_stats = now + cfg->stats_interval;
        }
        if (now >= next_ws_stats) {
            report_stats(p, &ws_mark, false, true);
            next_ws_stats += WS_STATS_PERIOD;
            if (next_ws_stats < now) next_ws_stats = now + WS_STATS_PERIOD;
        }
        service_tick(p, &svc, now);
        if (cfg->metrics && now >= next_metrics) {
            update_metrics(p, &metrics_mark);
            next_metrics = now + METRICS_PERIOD;
        }
        if (cfg->progress && now >= next_progress) {
            show_progress(p, false);
            next_progress = now + 0.5;
        }
        struct timespec ts = { 0, 50 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    if (cfg->progress) show_progress(p, true);
}

/* Which threads run_threads started, for its unwinding. */
enum started { STARTED_NONE, STARTED_HELPERS, STARTED_PROCESS, STARTED_ALL };

/* Starts the preview and sampler threads (with a server), then processing
 * and capture; returns how far it got (err: the failure). */
static enum started start_threads(struct pipeline *p, int *err)
{
    const struct trk_pipeline_cfg *cfg = p->cfg;
    *err = 0;
    p->have_preview_thread = cfg->ws && cfg->preview;
    if (p->have_preview_thread &&
        (*err = -pthread_create(&p->preview_thread, NULL, preview_main, p)) != 0) {
        p->have_preview_thread = false;
        return STARTED_NONE;
    }
    /* Sample requests come from WebSocket clients only. */
    p->have_sampler_thread = cfg->ws != NULL;
    if (p->have_sampler_thread &&
        (*err = -pthread_create(&p->sampler_thread, NULL, sampler_main, p)) != 0) {
        p->have_sampler_thread = false;
        return STARTED_HELPERS;
    }
    if ((*err = -pthread_create(&p->process_thread, NULL, process_main, p)) != 0)
        return STARTED_HELPERS;
    if ((*err = -pthread_create(&p->capture_thread, NULL, capture_main, p)) != 0) {
        trk_pool_close(&p->pool);
        return STARTED_PROCESS;
    }
    return STARTED_ALL;
}

/* Joins what start_threads started, in reverse; the end of input goes to
 * the clients once the last result has. */
static void join_threads(struct pipeline *p, enum started started)
{
    if (started == STARTED_ALL) pthread_join(p->capture_thread, NULL);
    if (started >= STARTED_PROCESS) {
        trk_pool_close(&p->pool);
        pthread_join(p->process_thread, NULL);
        if (p->eof) send_status(p->cfg, "eof", "end of input");
    }
    if (started >= STARTED_HELPERS) {
        pthread_mutex_lock(&p->lock);
        p->helpers_quit = true;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        if (p->have_preview_thread) pthread_join(p->preview_thread, NULL);
        if (p->have_sampler_thread) pthread_join(p->sampler_thread, NULL);
    }
}

static void fill_summary(struct pipeline *p, struct trk_pipeline_summary *summary)
{
    memset(summary, 0, sizeof(*summary));
    summary->frames = p->frames;
    summary->drops = trk_pool_drops(&p->pool);
    summary->skipped = p->skipped;
    summary->seconds = p->last_t - p->first_t;
    summary->fps = summary->seconds > 0 ? (p->frames - 1) / summary->seconds : 0;
    summary->source_error = p->source_error;
    summary->eof = p->eof;
    summary->outages = p->outages;
    summary->resizes = p->resizes;
    summary->pipelined = p->pipelined;
    summary->pinned = p->pinned;
}

int trk_pipeline_run(const struct trk_pipeline_cfg *cfg, volatile sig_atomic_t *stop,
                     struct trk_pipeline_summary *summary)
{
    /* The object set always comes from the control module (initial set,
     * live edits, reloads): there is no other. */
    if (!cfg->control || !cfg->backend || !cfg->source) return TRK_EINVAL;
    int err;
    struct pipeline *p = pipeline_new(cfg, stop, &err);
    if (!p) return err;
    pthread_mutex_init(&p->lock, NULL);
    /* Timed waits (the sampler's rest) on the monotonic clock. Linux's
     * condvar init allocates nothing: a failure is a broken invariant. */
    err = trk_cond_init_monotonic(&p->cond);
    TRK_ASSERT(err == 0);
    enum started started = start_threads(p, &err);
    if (started == STARTED_ALL) stats_loop(p);
    join_threads(p, started);
    /* The snapshot and the focus check give back the frames they were lent
     * before the pool goes. */
    trk_snapshot_clear(cfg->snapshot);
    trk_focus_clear(cfg->focus);
    trk_outputs_flush(cfg->outputs);
    if (summary) fill_summary(p, summary);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
    pipeline_free(p);
    return err;
}
