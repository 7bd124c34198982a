#include "metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trk_error.h" /* TRK_E* */
#include "trk_clock.h" /* trk_now, trk_wall_ms */
#include "out/mqtt.h"  /* trk_mqtt_stats */
#include "focus.h"
#include "frame.h" /* trk_frame_downloads */
#include "snapshot.h"
#include "objects.h" /* trk_objects_channel_name */

const double trk_metrics_bucket_le[TRK_METRICS_BUCKETS] = {
    50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3,
};

static const char *const stage_names[TRK_STAGE_COUNT] = {
    "queue", "upload", "kernel", "process", "send", "total",
};

enum state { ST_STARTING, ST_OK, ST_LOST, ST_EOF, ST_ERROR, ST_COUNT };
static const char *const state_names[ST_COUNT] = { "starting", "ok", "lost", "eof", "error" };

/* Per bucket (not cumulative: a frame adds to one), plus +Inf last; the sum
 * in nanoseconds so it is a plain atomic add. */
struct hist {
    _Atomic uint64_t n[TRK_METRICS_BUCKETS + 1];
    _Atomic uint64_t sum_ns;
};

struct trk_metrics {
    /* Written by one thread each (named), read by the renderer. */
    struct hist stage[TRK_STAGE_COUNT]; /* processing */
    _Atomic uint64_t frames, skipped, upload_bytes, pinned;
    _Atomic int objects, found;
    _Atomic double last_frame_t;        /* trk_now() of the newest frame, 0 = none */
    atomic_bool paused;                 /* a replay paused by the page */
    atomic_bool spin;                   /* processing: it polls (--spin)           */
    _Atomic double last_frame_wall;     /* the same as Unix time                   */
    _Atomic double interval;            /* smoothed seconds between frames         */
    _Atomic uint64_t outages, reopens;  /* capture */
    _Atomic uint64_t drops, lines_lost; /* stats loop, processing */
    _Atomic int clients;                /* stats loop */
    _Atomic double fps;                 /* stats loop */
    /* The MQTT sink (stats loop); has_mqtt: shown at all. */
    _Atomic bool has_mqtt, mqtt_connected;
    _Atomic uint64_t mqtt_published, mqtt_connects, mqtt_drops[TRK_MQTT_DROP_N];
    /* /snapshot.jpg's counts are read from it at each render; NULL none. */
    struct trk_snapshot *_Atomic snapshot;
    /* The focus check's reading, read at each render and health check;
     * NULL none (--focus-every 0). */
    struct trk_focus *_Atomic focus;
    double t_start, wall_start; /* set at create */

    pthread_mutex_t lock; /* guards the rest: rarely changed text */
    char version[32], backend[64], source[256];
    double source_fps;
    enum state state;
    char state_text[256];
    double state_wall; /* Unix time of the last state change */
    /* trk_metrics_set_light's copy (under lock); light NULL until first set. */
    int n_light;
    uint32_t gain[3];
    struct trk_metrics_range *light;
};

/* Unix time in seconds. */
static double wall_now(void)
{
    return trk_wall_ms() * 1e-3;
}

int trk_metrics_create(struct trk_metrics **out)
{
    struct trk_metrics *m = calloc(1, sizeof *m);
    *out = m;
    if (!m) return TRK_ENOMEM;
    pthread_mutex_init(&m->lock, NULL);
    m->t_start = trk_now();
    m->wall_start = wall_now();
    m->state_wall = m->wall_start;
    return 0;
}

void trk_metrics_destroy(struct trk_metrics **pm)
{
    if (!pm || !*pm) return;
    pthread_mutex_destroy(&(*pm)->lock);
    free((*pm)->light);
    free(*pm);
    *pm = NULL;
}

void trk_metrics_set_info(struct trk_metrics *m, const char *version, const char *backend,
                          const char *source, double source_fps)
{
    if (!m) return;
    pthread_mutex_lock(&m->lock);
    snprintf(m->version, sizeof m->version, "%s", version ? version : "");
    snprintf(m->backend, sizeof m->backend, "%s", backend ? backend : "");
    snprintf(m->source, sizeof m->source, "%s", source ? source : "");
    m->source_fps = source_fps > 0 ? source_fps : 0;
    pthread_mutex_unlock(&m->lock);
}

static void observe(struct hist *h, double s)
{
    if (!(s > 0)) s = 0; /* NaN and clock steps count as instant */
    int i = 0;
    while (i < TRK_METRICS_BUCKETS && s > trk_metrics_bucket_le[i])
        i++;
    atomic_fetch_add_explicit(&h->n[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_ns, (uint64_t)llround(s > 1e9 ? 1e18 : s * 1e9),
                              memory_order_relaxed);
}

void trk_metrics_frame(struct trk_metrics *m, const struct trk_metrics_frame *f)
{
    if (!m) return;
    for (int i = 0; i < TRK_STAGE_COUNT; i++)
        observe(&m->stage[i], f->stage_s[i]);
    atomic_fetch_add_explicit(&m->upload_bytes, f->upload_bytes, memory_order_relaxed);
    if (f->pinned) atomic_fetch_add_explicit(&m->pinned, 1, memory_order_relaxed);
    atomic_store_explicit(&m->objects, f->objects, memory_order_relaxed);
    atomic_store_explicit(&m->found, f->found, memory_order_relaxed);
    double now = trk_now();
    double last = atomic_load_explicit(&m->last_frame_t, memory_order_relaxed);
    if (last > 0) {
        /* Smoothed over ~10 frames: one late frame does not move it much. */
        double iv = atomic_load_explicit(&m->interval, memory_order_relaxed);
        iv = iv > 0 ? iv + (now - last - iv) * 0.1 : now - last;
        atomic_store_explicit(&m->interval, iv, memory_order_relaxed);
    }
    atomic_store_explicit(&m->last_frame_t, now, memory_order_relaxed);
    atomic_store_explicit(&m->last_frame_wall, wall_now(), memory_order_relaxed);
    /* Last: a reader that sees the count sees the frame's time too. */
    atomic_fetch_add_explicit(&m->frames, 1, memory_order_release);
}

void trk_metrics_skipped(struct trk_metrics *m)
{
    if (m) atomic_fetch_add_explicit(&m->skipped, 1, memory_order_relaxed);
}

void trk_metrics_set_paused(struct trk_metrics *m, bool paused)
{
    if (!m || atomic_exchange(&m->paused, paused) == paused) return;
    if (!paused && atomic_load(&m->last_frame_t) > 0) atomic_store(&m->last_frame_t, trk_now());
}

void trk_metrics_source_state(struct trk_metrics *m, const char *state, const char *text)
{
    if (!m) return;
    enum state st = ST_ERROR;
    for (int i = ST_OK; i < ST_COUNT; i++)
        if (state && !strcmp(state, state_names[i])) st = (enum state)i;
    pthread_mutex_lock(&m->lock);
    if (st != m->state) m->state_wall = wall_now();
    m->state = st;
    snprintf(m->state_text, sizeof m->state_text, "%s", text ? text : "");
    pthread_mutex_unlock(&m->lock);
}

void trk_metrics_outage(struct trk_metrics *m)
{
    if (m) atomic_fetch_add_explicit(&m->outages, 1, memory_order_relaxed);
}

void trk_metrics_reopen(struct trk_metrics *m)
{
    if (m) atomic_fetch_add_explicit(&m->reopens, 1, memory_order_relaxed);
}

void trk_metrics_set_totals(struct trk_metrics *m, uint64_t drops, int clients, double fps)
{
    if (!m) return;
    atomic_store_explicit(&m->drops, drops, memory_order_relaxed);
    atomic_store_explicit(&m->clients, clients, memory_order_relaxed);
    if (fps >= 0) atomic_store_explicit(&m->fps, fps, memory_order_relaxed);
}

void trk_metrics_set_spin(struct trk_metrics *m, bool spin)
{
    if (m) atomic_store_explicit(&m->spin, spin, memory_order_relaxed);
}

void trk_metrics_set_lines_lost(struct trk_metrics *m, uint64_t lost)
{
    if (m) atomic_store_explicit(&m->lines_lost, lost, memory_order_relaxed);
}

void trk_metrics_set_snapshot(struct trk_metrics *m, struct trk_snapshot *s)
{
    if (m) atomic_store(&m->snapshot, s);
}

void trk_metrics_set_focus(struct trk_metrics *m, struct trk_focus *f)
{
    if (m) atomic_store(&m->focus, f);
}

void trk_metrics_set_mqtt(struct trk_metrics *m, const struct trk_mqtt_stats *st)
{
    if (!m) return;
    atomic_store(&m->mqtt_connected, st->connected);
    atomic_store(&m->mqtt_published, st->published);
    for (int i = 0; i < TRK_MQTT_DROP_N; i++)
        atomic_store(&m->mqtt_drops[i], st->drops[i]);
    atomic_store(&m->mqtt_connects, st->connects);
    atomic_store(&m->has_mqtt, true);
}

/* ------------------------------------------------------------ rendering */

/* A label value with \, " and newline escaped, as the format requires. */
static void put_label(struct trk_buf *b, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"') {
            char e[2] = { '\\', *v };
            trk_buf_append(b, e, 2);
        } else if (*v == '\n') {
            trk_buf_puts(b, "\\n");
        } else {
            trk_buf_append(b, v, 1);
        }
    }
}

static void put_head(struct trk_buf *b, const char *name, const char *type, const char *help)
{
    char line[512];
    snprintf(line, sizeof line, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    trk_buf_puts(b, line);
}

/* Go's strconv 'g'-like text for a sample value: integers without a point,
 * others with enough digits to read back. */
static void put_value(struct trk_buf *b, double v)
{
    char s[64];
    if (isnan(v))
        snprintf(s, sizeof s, "NaN");
    else if (v == floor(v) && fabs(v) < 1e15)
        snprintf(s, sizeof s, "%.0f", v);
    else
        snprintf(s, sizeof s, "%.15g", v);
    trk_buf_puts(b, s);
}

static void put_sample(struct trk_buf *b, const char *name, double v)
{
    trk_buf_puts(b, name);
    trk_buf_puts(b, " ");
    put_value(b, v);
    trk_buf_puts(b, "\n");
}

static void counter(struct trk_buf *b, const char *name, const char *help, uint64_t v)
{
    put_head(b, name, "counter", help);
    put_sample(b, name, (double)v);
}

static void gauge(struct trk_buf *b, const char *name, const char *help, double v)
{
    put_head(b, name, "gauge", help);
    put_sample(b, name, v);
}

static void histograms(struct trk_metrics *m, struct trk_buf *b)
{
    static const char name[] = "trackd_stage_latency_seconds";
    put_head(b, name, "histogram",
             "Per-frame latency by pipeline stage (queue, upload, kernel, process, send, total).");
    char line[256];
    for (int s = 0; s < TRK_STAGE_COUNT; s++) {
        const struct hist *h = &m->stage[s];
        uint64_t cum = 0;
        for (int i = 0; i <= TRK_METRICS_BUCKETS; i++) {
            cum += atomic_load_explicit(&h->n[i], memory_order_relaxed);
            if (i < TRK_METRICS_BUCKETS)
                snprintf(line, sizeof line, "%s_bucket{stage=\"%s\",le=\"%g\"} %llu\n", name,
                         stage_names[s], trk_metrics_bucket_le[i], (unsigned long long)cum);
            else
                snprintf(line, sizeof line, "%s_bucket{stage=\"%s\",le=\"+Inf\"} %llu\n", name,
                         stage_names[s], (unsigned long long)cum);
            trk_buf_puts(b, line);
        }
        snprintf(line, sizeof line, "%s_sum{stage=\"%s\"} %.9f\n%s_count{stage=\"%s\"} %llu\n",
                 name, stage_names[s],
                 (double)atomic_load_explicit(&h->sum_ns, memory_order_relaxed) * 1e-9, name,
                 stage_names[s], (unsigned long long)cum);
        trk_buf_puts(b, line);
    }
}

void trk_metrics_set_light(struct trk_metrics *m, const uint32_t gain_q16[3],
                           const struct trk_metrics_range *r, int n)
{
    if (!m || n < 0 || n > TRK_MAX_OBJECTS) return;
    pthread_mutex_lock(&m->lock);
    if (!m->light && n > 0) m->light = calloc(TRK_MAX_OBJECTS, sizeof *m->light);
    if (m->light) {
        memcpy(m->gain, gain_q16, sizeof m->gain);
        if (n > 0) memcpy(m->light, r, (size_t)n * sizeof *r);
        m->n_light = n;
    }
    pthread_mutex_unlock(&m->lock);
}

/* name{object="O",channel="C"} v, one line. */
static void range_sample(struct trk_buf *b, const char *name, const struct trk_metrics_range *r,
                         int c, double v)
{
    trk_buf_puts(b, name);
    trk_buf_puts(b, "{object=\"");
    put_label(b, r->name);
    if (c >= 0) {
        trk_buf_puts(b, "\",channel=\"");
        put_label(b, trk_objects_channel_name((enum trk_space)r->space, c));
    }
    trk_buf_puts(b, "\"} ");
    put_value(b, v);
    trk_buf_puts(b, "\n");
}

/* The light gauges (trk_metrics_set_light), under m->lock. */
static void light_gauges(struct trk_metrics *m, struct trk_buf *b)
{
    static const char *const rgb[3] = { "R", "G", "B" };
    put_head(b, "trackd_light_gain", "gauge",
             "Illumination compensation's gain per channel (1: as taught).");
    for (int c = 0; c < 3; c++) {
        char line[96];
        snprintf(line, sizeof line, "trackd_light_gain{channel=\"%s\"} ", rgb[c]);
        trk_buf_puts(b, line);
        put_value(b, m->gain[c] / 65536.0);
        trk_buf_puts(b, "\n");
    }
    static const char *const names[3] = { "trackd_range_lo", "trackd_range_hi",
                                          "trackd_range_drift" };
    static const char *const helps[3] = {
        "The colour box's lower bound the next frame uses, per object and channel.",
        "The colour box's upper bound the next frame uses, per object and channel.",
        "Adaptation's offset from the (compensated) taught box, per object and channel."
    };
    for (int k = 0; k < 3; k++) {
        put_head(b, names[k], "gauge", helps[k]);
        for (int i = 0; i < m->n_light; i++)
            for (int c = 0; c < 3 && m->light[i].space != TRK_SPACE_CLASS; c++) {
                const struct trk_metrics_range *r = &m->light[i];
                range_sample(b, names[k], r, c,
                             k == 0   ? r->lo[c]
                             : k == 1 ? r->hi[c]
                                      : r->drift[c]);
            }
    }
    put_head(b, "trackd_range_on_guard_rail", "gauge",
             "1 while the adapted range sits on its guard rail (max_drift or the ring rule).");
    for (int i = 0; i < m->n_light; i++)
        range_sample(b, "trackd_range_on_guard_rail", &m->light[i], -1, m->light[i].rail);
}

/* /snapshot.jpg's counters, when the encoder exists. */
static void snapshot_counters(struct trk_metrics *m, struct trk_buf *b)
{
    struct trk_snapshot *snap = atomic_load(&m->snapshot);
    if (snap) {
        struct trk_snapshot_stats ss;
        trk_snapshot_get_stats(snap, &ss);
        counter(b, "trackd_snapshot_encodes_total", "JPEGs the snapshot encoder made.", ss.encodes);
        counter(b, "trackd_snapshot_served_total", "Snapshot requests answered with a JPEG.",
                ss.served);
        counter(b, "trackd_snapshot_cached_total",
                "Snapshot requests answered from the newest frame's cache (no encode).", ss.cached);
        counter(b, "trackd_snapshot_limited_total",
                "Snapshot requests refused (429): over the client's --snapshot-rate.", ss.limited);
        counter(b, "trackd_snapshot_busy_total",
                "Snapshot requests refused (503): too many waiting for the encoder.", ss.busy);
    }
}

/* The focus check's samples and readings, when it runs. */
static void focus_gauges(struct trk_metrics *m, struct trk_buf *b)
{
    struct trk_focus *focus = atomic_load(&m->focus);
    if (focus) {
        struct trk_focus_reading fr;
        trk_focus_get(focus, &fr);
        counter(b, "trackd_focus_samples_total", "Frames the focus check measured.", fr.samples);
        /* Unknown values are left out, not shown as 0 (a 0 would read as
         * a blind camera). */
        if (fr.sharpness >= 0)
            gauge(b, "trackd_focus_sharpness",
                  "Sharpness of the newest measured frame: sqrt(sum of squared Sobel magnitudes "
                  "over the Canny edges / pixels).",
                  fr.sharpness);
        if (fr.baseline > 0)
            gauge(b, "trackd_focus_baseline",
                  "The sharpness of the camera in focus (learnt at start, --focus-baseline or "
                  "set from the page).",
                  fr.baseline);
        if (fr.samples)
            gauge(b, "trackd_focus_check_seconds",
                  "Wall-clock time of the newest focus measurement (Canny of one frame, on the "
                  "focus thread).",
                  fr.cost_ms * 1e-3);
        gauge(b, "trackd_focus_lost",
              "1 while the sharpness is below --focus-warn times the baseline, else 0.",
              fr.state == TRK_FOCUS_LOST);
    }
}

int trk_metrics_render(struct trk_metrics *m, struct trk_buf *b)
{
    if (!m || !b) return TRK_EINVAL;
    pthread_mutex_lock(&m->lock);
    char version[sizeof m->version], backend[sizeof m->backend], source[sizeof m->source];
    memcpy(version, m->version, sizeof version);
    memcpy(backend, m->backend, sizeof backend);
    memcpy(source, m->source, sizeof source);
    enum state st = m->state;
    pthread_mutex_unlock(&m->lock);

    put_head(b, "trackd_info", "gauge", "Always 1; the labels say which trackd this is.");
    trk_buf_puts(b, "trackd_info{version=\"");
    put_label(b, version);
    trk_buf_puts(b, "\",backend=\"");
    put_label(b, backend);
    trk_buf_puts(b, "\",source=\"");
    put_label(b, source);
    trk_buf_puts(b, "\"} 1\n");
    gauge(b, "trackd_start_time_seconds", "When trackd started, seconds since the Unix epoch.",
          m->wall_start);

    uint64_t frames = atomic_load_explicit(&m->frames, memory_order_acquire);
    counter(b, "trackd_frames_processed_total", "Frames the backend processed.", frames);
    counter(b, "trackd_frames_dropped_total",
            "Frames dropped for a newer one before processing (live sources).",
            atomic_load(&m->drops));
    counter(b, "trackd_frames_skipped_total", "Frames the backend rejected.",
            atomic_load(&m->skipped));
    counter(b, "trackd_source_outages_total", "Times a live source was lost.",
            atomic_load(&m->outages));
    counter(b, "trackd_source_reopens_total", "Times a lost live source was opened again.",
            atomic_load(&m->reopens));
    counter(b, "trackd_uploaded_bytes_total",
            "Frame bytes copied from host to GPU memory (0 for CPU backends).",
            atomic_load(&m->upload_bytes));
    counter(b, "trackd_frames_downloaded_total",
            "GPU-decoded frames copied to host memory (the preview, colour samples, snapshots, "
            "recordings; never for tracking or the light).",
            trk_frame_downloads());
    counter(b, "trackd_frames_pinned_total",
            "Frames whose pixels the backend read from pinned host memory (no staging copy; "
            "0 for CPU backends).",
            atomic_load(&m->pinned));
    counter(b, "trackd_ndjson_lines_lost_total",
            "Result lines that could not be written to --output.", atomic_load(&m->lines_lost));
    snapshot_counters(m, b);
    focus_gauges(m, b);
    if (atomic_load(&m->has_mqtt)) {
        counter(b, "trackd_mqtt_frames_published_total",
                "Frames the MQTT broker acknowledged within --mqtt-max-age of their capture.",
                atomic_load(&m->mqtt_published));
        static const char dropped[] = "trackd_mqtt_frames_dropped_total";
        put_head(b, dropped, "counter",
                 "Frames not published to MQTT, by reason (PROTOCOL.md section 9).");
        char line[128];
        for (int i = 0; i < TRK_MQTT_DROP_N; i++) {
            snprintf(line, sizeof line, "%s{reason=\"%s\"} %llu\n", dropped, trk_mqtt_drop_name(i),
                     (unsigned long long)atomic_load(&m->mqtt_drops[i]));
            trk_buf_puts(b, line);
        }
        counter(b, "trackd_mqtt_connects_total", "Connections the MQTT broker accepted.",
                atomic_load(&m->mqtt_connects));
        gauge(b, "trackd_mqtt_connected", "1 while connected to the MQTT broker.",
              atomic_load(&m->mqtt_connected) ? 1 : 0);
    }
    gauge(b, "trackd_clients", "WebSocket clients connected.", atomic_load(&m->clients));
    gauge(b, "trackd_spin",
          "1 while the processing and WebSocket threads poll for frames and results (--spin; "
          "auto: a spin slot held), 0 while they sleep.",
          atomic_load(&m->spin));
    gauge(b, "trackd_objects_configured", "Objects in the current object set.",
          atomic_load(&m->objects));
    gauge(b, "trackd_objects_found", "Objects found in the newest processed frame.",
          atomic_load(&m->found));
    gauge(b, "trackd_frames_per_second", "Frames processed per second over the last second.",
          atomic_load(&m->fps));
    gauge(b, "trackd_last_frame_timestamp_seconds",
          "When the newest frame was processed, seconds since the Unix epoch (0: none yet).",
          frames ? atomic_load(&m->last_frame_wall) : 0);

    put_head(b, "trackd_source_state", "gauge",
             "1 for the state the source is in (starting, ok, lost, eof, error), else 0.");
    for (int i = 0; i < ST_COUNT; i++) {
        char line[96];
        snprintf(line, sizeof line, "trackd_source_state{state=\"%s\"} %d\n", state_names[i],
                 i == (int)st);
        trk_buf_puts(b, line);
    }
    histograms(m, b);
    pthread_mutex_lock(&m->lock);
    if (m->n_light > 0) light_gauges(m, b);
    pthread_mutex_unlock(&m->lock);
    return b->failed ? TRK_ENOMEM : 0;
}

/* ---------------------------------------------------------------- health */

bool trk_metrics_healthy(struct trk_metrics *m, char *why, size_t len)
{
    if (!m) {
        snprintf(why, len, "no metrics");
        return false;
    }
    pthread_mutex_lock(&m->lock);
    enum state st = m->state;
    double since = m->state_wall, nominal = m->source_fps;
    char text[sizeof m->state_text];
    memcpy(text, m->state_text, sizeof text);
    pthread_mutex_unlock(&m->lock);
    double now = trk_now(), wall = wall_now();
    uint64_t frames = atomic_load_explicit(&m->frames, memory_order_acquire);

    if (st == ST_LOST || st == ST_ERROR || st == ST_EOF) {
        time_t t = (time_t)since;
        struct tm tm;
        char when[32] = "?";
        if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
        snprintf(why, len, "%s since %s (%.0f s ago)%s%s",
                 st == ST_LOST    ? "source lost"
                 : st == ST_ERROR ? "source failed"
                                  : "end of input",
                 when, wall - since, *text ? ": " : "", text);
        return false;
    }
    if (frames == 0) {
        snprintf(why, len, "no frames yet (started %.0f s ago)", now - m->t_start);
        return false;
    }
    /* The interval the source promises, else the one measured. */
    double iv = nominal > 0 ? 1.0 / nominal : atomic_load(&m->interval);
    double limit = iv * TRK_HEALTH_FRAMES;
    if (!(limit > TRK_HEALTH_MIN_S)) limit = TRK_HEALTH_MIN_S;
    double age = now - atomic_load(&m->last_frame_t);
    if (atomic_load(&m->paused)) {
        snprintf(why, len, "ok; replay paused");
        return true;
    }
    if (age > limit) {
        snprintf(why, len,
                 "pipeline stalled: no frame processed for %.1f s (frames are due every %.3f s; "
                 "stalled after %.1f s)",
                 age, iv, limit);
        return false;
    }
    /* A blurred picture still tracks, if worse: frames flow, so healthy,
     * with the loss said on the same line (PROTOCOL.md, "/healthz"). */
    struct trk_focus_reading fr;
    trk_focus_get(atomic_load(&m->focus), &fr);
    if (fr.state == TRK_FOCUS_LOST)
        snprintf(why, len,
                 "ok; focus lost: sharpness %.2f is %.0f%% of the baseline %.2f (warning below "
                 "%.0f%%)",
                 fr.sharpness, fr.ratio * 100, fr.baseline, fr.warn * 100);
    else
        snprintf(why, len, "ok");
    return true;
}
