#include "pipeline.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LOG_TAG "pipeline"
#include "log.h"
#include "messages.h"
#include "control.h"
#include "preview.h"
#include "ws.h"

/* Latency samples kept per stats interval (older ones are overwritten). */
#define STAT_SAMPLES 1024

/* Shared between the threads; every field below `lock` is guarded by it. */
struct pipe {
    const struct trk_pipeline_cfg *cfg;
    volatile sig_atomic_t *stop;
    double t_start;
    struct trk_pool pool;
    pthread_t capture_thread, process_thread, preview_thread;
    bool have_preview_thread;

    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool capture_done, process_done, source_error;
    uint64_t outages;       /* live source losses (camera unplugged, stalled) */
    uint64_t frames;        /* processed */
    uint64_t skipped;       /* refused by the backend (e.g. a size change) */
    double first_t, last_t; /* monotonic times of first/last processed frame */
    /* Per-interval latency samples in ms: process, queue, upload, kernel,
     * send (results ready -> handed to NDJSON/WebSocket), total (capture ->
     * handed over). */
    float samples[6][STAT_SAMPLES];
    int n_samples;
    /* Preview hand-off: the processing thread parks a frame here when the
     * preview thread is idle; the preview thread releases it to the pool. */
    struct trk_frame *preview_frame;
    bool preview_quit;
};

static bool stopping(struct pipe *p)
{
    return *p->stop != 0;
}

/* Sleeps until monotonic time t, waking early when a stop is requested. */
static void sleep_until(struct pipe *p, double t)
{
    for (;;) {
        double left = t - trk_now();
        if (left <= 0 || stopping(p)) return;
        double slice = left < 0.05 ? left : 0.05;
        struct timespec ts = { (time_t)slice, (long)((slice - (time_t)slice) * 1e9) };
        nanosleep(&ts, NULL);
    }
}

/* Tells web clients what the source is doing (the last one is also sent to
 * clients that connect later). */
static void send_status(const struct trk_pipeline_cfg *cfg, const char *state, const char *text)
{
    if (!cfg->ws) return;
    struct trk_buf b = { 0 };
    if (trk_msg_status(&b, state, text) == 0)
        trk_ws_broadcast(cfg->ws, TRK_WS_STATUS, b.data, b.len);
    trk_buf_free(&b);
}

/* A live source failed with err: close it, tell clients, then reopen it with
 * the same settings at once and every second after until it works. false
 * when a stop was requested meanwhile. Logs once per outage. */
static bool reopen_live(struct pipe *p, int err)
{
    static _Atomic bool lost_logged;
    const struct trk_pipeline_cfg *cfg = p->cfg;
    struct trk_source *src = cfg->source;
    double t_lost = trk_now();
    pthread_mutex_lock(&p->lock);
    uint64_t n = ++p->outages;
    pthread_mutex_unlock(&p->lock);
    log_once(lost_logged, TRK_LOG_WARN, err, "%s lost (outage %llu); retrying every second",
             src->desc, (unsigned long long)n);
    trk_source_close(src);
    send_status(cfg, "lost", trk_strerror(err));
    for (int tries = 0;; tries++) {
        sleep_until(p, t_lost + tries);
        if (stopping(p)) return false;
        if (trk_source_open(src) == 0) break;
        trk_source_close(src);
    }
    log_info("%s back after %.3f s", src->desc, trk_now() - t_lost);
    trk_log_once_reset(lost_logged);
    send_status(cfg, "ok", src->desc);
    return true;
}

static void *capture_main(void *arg)
{
    struct pipe *p = arg;
    const struct trk_pipeline_cfg *cfg = p->cfg;
    uint64_t seq = 0;
    double t0 = 0, pts0 = 0;
    send_status(cfg, "ok", cfg->source->desc);
    while (!stopping(p) && (!cfg->max_frames || seq < cfg->max_frames)) {
        struct trk_frame *f = trk_pool_get(&p->pool);
        if (!f) break;
        f->t_capture = 0;
        int err = trk_source_read(cfg->source, f);
        if (err && err != TRK_SOURCE_EOF && cfg->source->live) {
            /* A camera that fails is waited for, never the end of the run. */
            trk_pool_release(&p->pool, f);
            if (!reopen_live(p, err)) break;
            continue;
        }
        if (err) {
            trk_pool_release(&p->pool, f);
            if (err == TRK_SOURCE_EOF) {
                log_info("end of input after %llu frames", (unsigned long long)seq);
                send_status(cfg, "eof", "end of input");
            } else {
                log_error_err(err, "reading the source failed");
                send_status(cfg, "error", trk_strerror(err));
                pthread_mutex_lock(&p->lock);
                p->source_error = true;
                pthread_mutex_unlock(&p->lock);
            }
            break;
        }
        /* Pace files and the demo at their own rate unless --fast. A stall of
         * over a second (e.g. a suspended process) restarts the clock rather
         * than bursting to catch up. */
        if (!cfg->fast && !cfg->source->live) {
            double now = trk_now();
            if (seq == 0 || f->pts < pts0 || now - (t0 + f->pts - pts0) > 1.0) {
                t0 = now;
                pts0 = f->pts;
            }
            sleep_until(p, t0 + (f->pts - pts0));
        }
        f->seq = seq++;
        /* Live sources give the driver's capture time (same clock). */
        double now = trk_now();
        if (!cfg->source->live || !(f->t_capture > 0 && f->t_capture <= now)) f->t_capture = now;
        if (!trk_pool_publish(&p->pool, f)) break;
    }
    pthread_mutex_lock(&p->lock);
    p->capture_done = true;
    pthread_mutex_unlock(&p->lock);
    trk_pool_close(&p->pool); /* processing drains the ready frame, then ends */
    return NULL;
}

static void write_output(const struct trk_pipeline_cfg *cfg, const struct trk_buf *msg)
{
    static _Atomic bool write_failed;
    if (fwrite(msg->data, 1, msg->len, cfg->output) != msg->len ||
        fputc('\n', cfg->output) == EOF || (cfg->output_flush && fflush(cfg->output) != 0))
        log_once(write_failed, TRK_LOG_ERROR, errno, "writing the results file failed");
}

static void *process_main(void *arg)
{
    struct pipe *p = arg;
    const struct trk_pipeline_cfg *cfg = p->cfg;
    /* With a control module the set can grow to TRK_MAX_OBJECTS at runtime. */
    int max_objects = cfg->control ? TRK_MAX_OBJECTS : cfg->n_objects ? cfg->n_objects : 1;
    struct trk_obj_result *res = calloc(max_objects, sizeof(*res));
    struct trk_objects *live = cfg->control ? malloc(sizeof(*live)) : NULL;
    const struct trk_object_def *defs = cfg->objects;
    int n_defs = cfg->n_objects;
    uint64_t version = 0;
    struct trk_buf msg = { 0 };
    double next_preview = 0;
    static _Atomic bool backend_failed, set_failed;
    if (cfg->control && !live) res = (free(res), NULL);
    for (;;) {
        struct trk_frame *f = trk_pool_take(&p->pool);
        if (!f) break;
        /* A changed object set takes effect between frames, never mid-frame;
         * results from here on carry the new names. */
        if (live && trk_control_poll(cfg->control, &version, live)) {
            int e = trk_backend_set_objects(cfg->backend, live->def, live->n);
            /* live now holds the new names: on failure report no objects
             * rather than old results under new names. */
            if (e) log_once(set_failed, TRK_LOG_ERROR, e, "cannot apply the new object set");
            defs = live->def, n_defs = e ? 0 : live->n;
        }
        double t_start = trk_now();
        struct trk_backend_timing timing = { 0 };
        int err = res ? trk_backend_process(cfg->backend, &f->img, NULL, res, &timing) : TRK_ENOMEM;
        double t_done = trk_now();
        if (err) {
            /* A frame the backend rejects (e.g. a size change it was not
             * created for) is skipped, not fatal; logged once. */
            log_once(backend_failed, TRK_LOG_ERROR, err, "backend %s failed on frame %llu",
                     trk_backend_name(cfg->backend), (unsigned long long)f->seq);
            pthread_mutex_lock(&p->lock);
            p->skipped++;
            pthread_mutex_unlock(&p->lock);
            trk_pool_release(&p->pool, f);
            continue;
        }
        struct trk_frame_meta meta = {
            .seq = f->seq,
            .pts = f->pts,
            .width = f->img.width,
            .height = f->img.height,
            .t_capture = f->t_capture,
            .wall_ms = trk_wall_ms(),
            .queue_ms = (t_start - f->t_capture) * 1e3,
            .upload_ms = timing.upload_ms,
            .kernel_ms = timing.kernel_ms,
            .process_ms = (t_done - t_start) * 1e3,
            .backend = trk_backend_name(cfg->backend),
        };
        trk_buf_reset(&msg);
        if (trk_msg_frame(&msg, &meta, defs, res, n_defs) == 0) {
            if (cfg->output) write_output(cfg, &msg);
            if (cfg->ws) trk_ws_broadcast(cfg->ws, TRK_WS_RESULT, msg.data, msg.len);
        }
        double t_sent = trk_now();
        /* Sampling after the send, so it never delays the results. */
        if (cfg->control) trk_control_frame(cfg->control, &f->img, f->seq);

        pthread_mutex_lock(&p->lock);
        if (p->frames == 0) p->first_t = t_done;
        p->frames++;
        p->last_t = t_done;
        int k = p->n_samples++ % STAT_SAMPLES;
        p->samples[0][k] = (float)meta.process_ms;
        p->samples[1][k] = (float)meta.queue_ms;
        p->samples[2][k] = (float)meta.upload_ms;
        p->samples[3][k] = (float)meta.kernel_ms;
        p->samples[4][k] = (float)((t_sent - t_done) * 1e3);
        p->samples[5][k] = (float)((t_sent - f->t_capture) * 1e3);
        /* Hand the frame to the preview thread when one is due and the
         * encoder is idle; never wait for it. */
        bool to_preview = false;
        if (p->have_preview_thread && !p->preview_frame && t_done >= next_preview) {
            struct trk_ws_stats st;
            trk_ws_get_stats(cfg->ws, &st);
            if (st.clients > 0) {
                p->preview_frame = f;
                to_preview = true;
                double pfps = cfg->preview_fps;
                if (cfg->control) { /* clients may change the rate */
                    int pw;
                    struct trk_object_def unused;
                    trk_control_preview(cfg->control, &pw, &pfps, &unused);
                }
                next_preview = t_done + 1.0 / pfps;
                pthread_cond_broadcast(&p->cond);
            }
        }
        pthread_mutex_unlock(&p->lock);
        if (!to_preview) trk_pool_release(&p->pool, f);
    }
    trk_buf_free(&msg);
    free(res);
    free(live);
    pthread_mutex_lock(&p->lock);
    p->process_done = true;
    p->preview_quit = true;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* The mask view: src downscaled to at most width (same nearest sampling as
 * the preview encoder), pixels that match def (the backends' rule, gpu/
 * color.h) white, the rest a dimmed copy of the picture, as an RGB24 image
 * in *buf that the encoder then takes unscaled. 0 or TRK_ENOMEM. */
static int render_mask(const struct trk_image *src, int width, const struct trk_object_def *def,
                       uint8_t **buf, size_t *cap, struct trk_image *out)
{
    int w = src->width <= width ? src->width : width;
    int h = (int)((long)src->height * w / src->width);
    if (h < 1) h = 1;
    size_t need = (size_t)w * h * 3;
    if (need > *cap) {
        uint8_t *n = realloc(*buf, need);
        if (!n) return TRK_ENOMEM;
        *buf = n, *cap = need;
    }
    for (int y = 0; y < h; y++) {
        int sy = (int)(((long)y * 2 + 1) * src->height / (2L * h));
        for (int x = 0; x < w; x++) {
            int sx = (int)(((long)x * 2 + 1) * src->width / (2L * w));
            uint8_t *px = *buf + ((size_t)y * w + x) * 3;
            if (trk_pixel_matches(src, sx, sy, def)) {
                px[0] = px[1] = px[2] = 255;
            } else {
                trk_image_pixel_rgb(src, sx, sy, px);
                px[0] /= 4, px[1] /= 4, px[2] /= 4;
            }
        }
    }
    *out = (struct trk_image){ .plane = { *buf },
                               .pitch = { (size_t)w * 3 },
                               .width = w,
                               .height = h,
                               .fmt = TRK_FMT_RGB24,
                               .matrix = TRK_MATRIX_BT601,
                               .full_range = true };
    return 0;
}

static void *preview_main(void *arg)
{
    struct pipe *p = arg;
    const struct trk_pipeline_cfg *cfg = p->cfg;
    struct trk_preview *enc = NULL;
    uint8_t *msg = NULL;
    size_t msg_cap = 0;
    int enc_width = cfg->preview_width;
    uint8_t *mask_buf = NULL;
    size_t mask_cap = 0;
    if (trk_preview_create(cfg->preview_width, cfg->preview_quality, &enc)) {
        log_error("cannot start the preview encoder; previews are off");
    }
    for (;;) {
        pthread_mutex_lock(&p->lock);
        while (!p->preview_frame && !p->preview_quit)
            pthread_cond_wait(&p->cond, &p->lock);
        struct trk_frame *f = p->preview_frame;
        pthread_mutex_unlock(&p->lock);
        if (!f) break;
        const uint8_t *jpeg;
        size_t size;
        int pw, ph;
        const struct trk_image *img = &f->img;
        struct trk_image masked;
        if (cfg->control) {
            /* Clients may change the preview width and ask for a mask. */
            int want_w;
            double unused_fps;
            struct trk_object_def mdef;
            bool mask = trk_control_preview(cfg->control, &want_w, &unused_fps, &mdef);
            if (want_w != enc_width) {
                trk_preview_destroy(&enc);
                if (trk_preview_create(want_w, cfg->preview_quality, &enc) == 0) enc_width = want_w;
            }
            if (mask && render_mask(img, enc_width, &mdef, &mask_buf, &mask_cap, &masked) == 0)
                img = &masked;
        }
        if (enc && trk_preview_encode(enc, img, &jpeg, &size, &pw, &ph) == 0) {
            if (size + TRK_PREVIEW_HDR > msg_cap) {
                uint8_t *n = realloc(msg, size + TRK_PREVIEW_HDR);
                if (n) msg = n, msg_cap = size + TRK_PREVIEW_HDR;
            }
            if (msg_cap >= size + TRK_PREVIEW_HDR) {
                trk_msg_preview_header(msg, f->seq, pw, ph, f->img.width, f->img.height);
                memcpy(msg + TRK_PREVIEW_HDR, jpeg, size);
                trk_ws_broadcast(cfg->ws, TRK_WS_PREVIEW, msg, size + TRK_PREVIEW_HDR);
            }
        }
        pthread_mutex_lock(&p->lock);
        p->preview_frame = NULL;
        pthread_mutex_unlock(&p->lock);
        trk_pool_release(&p->pool, f);
    }
    free(msg);
    free(mask_buf);
    trk_preview_destroy(&enc);
    return NULL;
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

/* One stats line (log + WebSocket) for the interval since the last call. */
static void report_stats(struct pipe *p, uint64_t *last_frames, double *last_t)
{
    const struct trk_pipeline_cfg *cfg = p->cfg;
    static float v[6][STAT_SAMPLES]; /* only the caller's thread reports */
    pthread_mutex_lock(&p->lock);
    uint64_t frames = p->frames;
    int n = p->n_samples < STAT_SAMPLES ? p->n_samples : STAT_SAMPLES;
    for (int i = 0; i < 6; i++)
        memcpy(v[i], p->samples[i], n * sizeof(float));
    p->n_samples = 0;
    pthread_mutex_unlock(&p->lock);
    double now = trk_now();
    double fps = now > *last_t ? (frames - *last_frames) / (now - *last_t) : 0;
    *last_frames = frames;
    *last_t = now;
    struct trk_stats_info st = {
        .uptime_s = now - p->t_start,
        .fps = fps,
        .frames = frames,
        .drops = trk_pool_drops(&p->pool),
        .rss_kb = trk_rss_kb(),
    };
    double process_max, queue_max, unused;
    summarize(v[0], n, &st.process_ms, &process_max);
    summarize(v[1], n, &st.queue_ms, &queue_max);
    summarize(v[2], n, &st.upload_ms, &unused);
    summarize(v[3], n, &st.kernel_ms, &unused);
    st.send_ms = st.total_ms = -1; /* null when no frame was processed */
    if (n > 0) {
        summarize(v[4], n, &st.send_ms, &unused);
        summarize(v[5], n, &st.total_ms, &unused);
    }
    if (cfg->ws) {
        struct trk_ws_stats ws;
        trk_ws_get_stats(cfg->ws, &ws);
        st.clients = ws.clients;
        st.ws_sent = ws.messages_sent;
        st.ws_dropped = ws.messages_dropped;
        st.ws_bytes = ws.bytes_sent;
    }
    log_info("%.1f fps, %llu frames, %llu dropped, process %.2f ms (p50) %.2f ms (max), "
             "queue %.2f ms (p50), rss %ld kB, %d clients",
             st.fps, (unsigned long long)st.frames, (unsigned long long)st.drops, st.process_ms,
             process_max, st.queue_ms, st.rss_kb, st.clients);
    if (cfg->ws) {
        struct trk_buf b = { 0 };
        if (trk_msg_stats(&b, &st) == 0) trk_ws_broadcast(cfg->ws, TRK_WS_STATS, b.data, b.len);
        trk_buf_free(&b);
    }
}

static void show_progress(struct pipe *p, bool final)
{
    pthread_mutex_lock(&p->lock);
    uint64_t frames = p->frames;
    double dt = p->last_t - p->first_t;
    pthread_mutex_unlock(&p->lock);
    fprintf(stderr, "\r%llu frames, %.1f fps%s", (unsigned long long)frames,
            dt > 0 ? (frames - 1) / dt : 0.0, final ? "\n" : "   ");
}

int trk_pipeline_run(const struct trk_pipeline_cfg *cfg, volatile sig_atomic_t *stop,
                     struct trk_pipeline_summary *summary)
{
    struct pipe *p = calloc(1, sizeof(*p));
    if (!p) return TRK_ENOMEM;
    p->cfg = cfg;
    p->stop = stop;
    p->t_start = trk_now();
    trk_pool_init(&p->pool, !cfg->source->live);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    int err = 0;
    p->have_preview_thread = cfg->ws && cfg->preview;
    if (p->have_preview_thread &&
        (err = -pthread_create(&p->preview_thread, NULL, preview_main, p)) != 0) {
        p->have_preview_thread = false;
        goto end;
    }
    if ((err = -pthread_create(&p->process_thread, NULL, process_main, p)) != 0) goto end_preview;
    if ((err = -pthread_create(&p->capture_thread, NULL, capture_main, p)) != 0) {
        trk_pool_close(&p->pool);
        goto end_process;
    }

    /* The caller's thread: stats and progress until processing ends. */
    double t_start = trk_now(), next_stats = t_start + cfg->stats_interval, next_progress = t_start;
    uint64_t last_frames = 0;
    double last_t = t_start;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        bool done = p->process_done;
        pthread_mutex_unlock(&p->lock);
        if (done) break;
        if (stopping(p)) trk_pool_close(&p->pool); /* capture and processing wind down */
        double now = trk_now();
        if (cfg->stats_interval > 0 && now >= next_stats) {
            report_stats(p, &last_frames, &last_t);
            next_stats += cfg->stats_interval;
            if (next_stats < now) next_stats = now + cfg->stats_interval;
        }
        if (cfg->progress && now >= next_progress) {
            show_progress(p, false);
            next_progress = now + 0.5;
        }
        struct timespec ts = { 0, 50 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    if (cfg->progress) show_progress(p, true);
    pthread_join(p->capture_thread, NULL);
end_process:
    trk_pool_close(&p->pool);
    pthread_join(p->process_thread, NULL);
end_preview:
    if (p->have_preview_thread) {
        pthread_mutex_lock(&p->lock);
        p->preview_quit = true;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        pthread_join(p->preview_thread, NULL);
    }
end:
    if (summary) {
        memset(summary, 0, sizeof(*summary));
        summary->frames = p->frames;
        summary->drops = trk_pool_drops(&p->pool);
        summary->skipped = p->skipped;
        summary->seconds = p->last_t - p->first_t;
        summary->fps = summary->seconds > 0 ? (p->frames - 1) / summary->seconds : 0;
        summary->source_error = p->source_error;
        summary->outages = p->outages;
    }
    if (cfg->output) fflush(cfg->output);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
    trk_pool_destroy(&p->pool);
    free(p);
    return err;
}
