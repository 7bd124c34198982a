/* The fusion core (fuse.h says what it does and why). */
#include "fuse.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "log_hook.h"
#include "trk_clock.h"
#include "trk_error.h"

#define LOG_TAG "fuse"

/* Window before any camera's frame period is known (ms): 20 fps. */
#define DEFAULT_WINDOW_MS 50.0
/* A camera becomes late when its newest frame is more than LATE_WINDOWS
 * windows behind the fused instant (cameras of different phases are up to
 * one period apart, and processing jitter adds a little), and is in time
 * again under INTIME_WINDOWS: the gap keeps a camera near the line from
 * logging at frame rate. */
#define LATE_WINDOWS   1.5
#define INTIME_WINDOWS 1.0

/* Ignored messages are logged at most once per this many seconds. */
#define BAD_LOG_EVERY_S 10.0

enum det_kind { DET_OBJECT = 0, DET_MARKER };

/* One detection of one camera, in world units, at its frame's capture. */
struct det {
    enum det_kind kind;
    char name[TRK_FUSE_NAME_MAX]; /* object name or marker pattern */
    int64_t marker;               /* a marker's id */
    int64_t local;                /* the camera's own id for it; -1: none */
    int cam;
    double wx, wy, wvx, wvy; /* unit, unit per second */
    bool has_v;
    double heading; /* degrees, world */
    bool has_heading;
    double w; /* weight: confidence x centre weight */
};

/* One clock sync exchange: the camera's monotonic clock minus the fuser's
 * wall clock (ms) and the round trip's delay (ms). */
struct sync_sample {
    double offset_ms, delay_ms;
};

struct camera {
    char name[TRK_FUSE_NAME_MAX];
    bool online, late, stale;
    /* Clock sync: the last samples (a ring), how many requests went out
     * and when the next is due (monotonic ms). */
    struct sync_sample sync[TRK_FUSE_SYNC_SAMPLES];
    int n_sync, sync_at, sync_asked;
    double sync_next;
    struct trk_calib calib;
    bool has_calib;
    /* newest frame */
    bool has_frame, fresh;
    uint64_t seq;
    int width, height;
    double cap_ms, period_ms; /* capture instant (epoch ms); EMA of its steps */
    struct det *dets;
    size_t n_dets, cap_dets;
};

/* A fused object that persists between epochs under one global id. */
struct track {
    uint64_t gid;
    enum det_kind kind;
    char name[TRK_FUSE_NAME_MAX];
    int64_t marker;
    double wx, wy, wvx, wvy, heading;
    bool has_v, has_heading, taken;
    double t_ms;
    int64_t local[TRK_FUSE_MAX_CAMERAS]; /* per camera its id for it; -1 */
    bool seen[TRK_FUSE_MAX_CAMERAS];     /* per camera: saw it at t_ms */
};

/* Detections of one epoch merged as one object: det index per camera. */
struct cluster {
    int member[TRK_FUSE_MAX_CAMERAS];
    double sw, swx, swy;
    int first; /* the det that started it (its key) */
    int track; /* index into tracks, -1 before assignment */
};

struct trk_fuse {
    struct trk_fuse_cfg cfg;
    char name[TRK_FUSE_NAME_MAX];
    struct camera cams[TRK_FUSE_MAX_CAMERAS];
    int n_cams;
    bool refused_logged;
    double bad_quiet_until; /* bad_msg: trk_now() until which it counts only */
    unsigned long long n_bad_quiet;
    double due; /* < 0: no epoch open */
    uint64_t seq, next_gid;
    struct track *tracks;
    size_t n_tracks, cap_tracks;
    /* The last world message (trk_fuse_last): its instant, prediction and unit. */
    bool emitted;
    double last_t, last_ahead_ms;
    char last_unit[sizeof(((struct trk_calib *)0)->unit)];
    /* per-epoch scratch */
    struct det *all;
    size_t n_all, cap_all;
    struct cluster *cl;
    size_t n_cl, cap_cl;
};

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * size);
    if (!q) return TRK_ENOMEM;
    *p = q;
    *cap = n;
    return 0;
}

struct trk_fuse *trk_fuse_create(const struct trk_fuse_cfg *cfg)
{
    struct trk_fuse *f = calloc(1, sizeof(*f));
    if (!f) return NULL;
    f->cfg = *cfg;
    snprintf(f->name, sizeof(f->name), "%s", cfg->name ? cfg->name : "world");
    f->cfg.name = f->name;
    f->due = -1;
    f->next_gid = 1;
    return f;
}

void trk_fuse_destroy(struct trk_fuse **pf)
{
    struct trk_fuse *f = pf ? *pf : NULL;
    if (!f) return;
    for (int i = 0; i < f->n_cams; i++)
        free(f->cams[i].dets);
    free(f->tracks);
    free(f->all);
    free(f->cl);
    free(f);
    *pf = NULL;
}

/* The camera of that name, added when new; NULL when the table is full. */
static struct camera *camera_get(struct trk_fuse *f, const char *name)
{
    for (int i = 0; i < f->n_cams; i++)
        if (!strcmp(f->cams[i].name, name)) return &f->cams[i];
    if (f->n_cams == TRK_FUSE_MAX_CAMERAS) {
        if (!f->refused_logged)
            log_warn("more than %d cameras: camera %s (and any further) is not fused",
                     TRK_FUSE_MAX_CAMERAS, name);
        f->refused_logged = true;
        return NULL;
    }
    struct camera *c = &f->cams[f->n_cams++];
    snprintf(c->name, sizeof(c->name), "%s", name);
    c->online = true; /* until a status says otherwise (older trackd send none) */
    return c;
}

/* A message that is ignored: logged, but at most once per BAD_LOG_EVERY_S
 * with the count of those not logged, so a publisher flooding the prefix
 * with garbage cannot flood the log. */
static void bad_msg(struct trk_fuse *f, const char *camera, const char *what, const char *why)
{
    double now = trk_now();
    if (now < f->bad_quiet_until) {
        f->n_bad_quiet++;
        return;
    }
    if (f->n_bad_quiet)
        log_warn("camera %s: its %s is ignored: %s (and %llu bad messages not logged in the last "
                 "%.0f s)",
                 camera, what, why, f->n_bad_quiet, BAD_LOG_EVERY_S);
    else
        log_warn("camera %s: its %s is ignored: %s", camera, what, why);
    f->n_bad_quiet = 0;
    f->bad_quiet_until = now + BAD_LOG_EVERY_S;
}

static json_t *load(struct trk_fuse *f, const char *camera, const char *what, const char *json,
                    size_t n)
{
    json_error_t err;
    json_t *root = json_loadb(json, n, 0, &err);
    if (!root || !json_is_object(root)) {
        bad_msg(f, camera, what, root ? "not a JSON object" : err.text);
        json_decref(root);
        return NULL;
    }
    return root;
}

static double num(const json_t *o, const char *key, double def)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : def;
}

/* The calibration section of an objects message into c (solved). */
static int calib_from_json(const json_t *j, struct trk_calib *c, struct trk_calib_fault *fault)
{
    memset(c, 0, sizeof(*c));
    const json_t *pts = json_object_get(j, "points");
    if (!json_is_array(pts) || json_array_size(pts) < TRK_CALIB_MIN_POINTS ||
        json_array_size(pts) > TRK_CALIB_MAX_POINTS) {
        snprintf(fault->msg, sizeof(fault->msg), "\"points\" is not 4..%d point pairs",
                 TRK_CALIB_MAX_POINTS);
        return TRK_EINVAL;
    }
    c->on = true;
    c->n = (int)json_array_size(pts);
    for (int i = 0; i < c->n; i++)
        for (int k = 0; k < 4; k++)
            c->pt[i][k] =
                json_number_value(json_array_get(json_array_get(pts, (size_t)i), (size_t)k));
    const json_t *m = json_object_get(j, "camera_matrix");
    if (json_is_object(m)) {
        c->lens = true;
        c->fx = num(m, "fx", 0);
        c->fy = num(m, "fy", 0);
        c->cx = num(m, "cx", 0);
        c->cy = num(m, "cy", 0);
    }
    const json_t *d = json_object_get(j, "distortion");
    if (json_is_array(d) && json_array_size(d) <= 5) {
        c->n_dist = (int)json_array_size(d);
        for (int i = 0; i < c->n_dist; i++)
            c->dist[i] = json_number_value(json_array_get(d, (size_t)i));
    }
    const char *unit = json_string_value(json_object_get(j, "unit"));
    snprintf(c->unit, sizeof(c->unit), "%s", unit ? unit : "");
    return trk_calib_solve(c, fault);
}

int trk_fuse_config(struct trk_fuse *f, const char *camera, const char *json, size_t n)
{
    if (!strcmp(camera, f->name)) return 0;
    json_t *root = load(f, camera, "config", json, n);
    if (!root) return TRK_EINVAL;
    struct camera *c = camera_get(f, camera);
    int rc = c ? 0 : -ENOSPC;
    const json_t *j = json_object_get(root, "calibration");
    if (c && json_is_object(j)) {
        struct trk_calib_fault fault = { .point = -1 };
        rc = calib_from_json(j, &c->calib, &fault);
        c->has_calib = rc == 0;
        if (rc) bad_msg(f, camera, "calibration", fault.msg);
    } else if (c) {
        c->has_calib = false;
        log_info("camera %s has no calibration: only world points its frames carry are used",
                 camera);
    }
    json_decref(root);
    return rc;
}

int trk_fuse_status(struct trk_fuse *f, const char *camera, const char *json, size_t n)
{
    if (!strcmp(camera, f->name)) return 0;
    json_t *root = load(f, camera, "status", json, n);
    if (!root) return TRK_EINVAL;
    struct camera *c = camera_get(f, camera);
    if (c) {
        bool online = json_is_true(json_object_get(root, "online"));
        const char *msg = json_string_value(json_object_get(root, "message"));
        if (online != c->online)
            log_info("camera %s %s%s%s", camera, online ? "online" : "offline", msg ? ": " : "",
                     msg ? msg : "");
        c->online = online;
        if (!online) { /* back, it may run on another host: sync again */
            c->has_frame = c->fresh = false;
            c->n_sync = c->sync_at = c->sync_asked = 0;
            c->sync_next = 0;
        }
    }
    json_decref(root);
    return c ? 0 : -ENOSPC;
}

/* The pixel point's world point: the message's wx, wy when it has them,
 * else mapped by the camera's calibration. */
static bool world_of(const struct camera *c, const json_t *o, double *wx, double *wy)
{
    const json_t *x = json_object_get(o, "wx"), *y = json_object_get(o, "wy");
    if (json_is_number(x) && json_is_number(y)) {
        *wx = json_number_value(x);
        *wy = json_number_value(y);
        return true;
    }
    const json_t *px = json_object_get(o, "cx"), *py = json_object_get(o, "cy");
    if (!c->has_calib || !json_is_number(px) || !json_is_number(py)) return false;
    return trk_calib_to_world(&c->calib, json_number_value(px), json_number_value(py), wx, wy);
}

/* World velocity (unit/s): the message's wvx, wvy, else its pixel velocity
 * (px per frame) mapped through the calibration at the point, over the
 * camera's frame period. */
static bool velocity_of(const struct camera *c, const json_t *o, double *vx, double *vy)
{
    const json_t *x = json_object_get(o, "wvx"), *y = json_object_get(o, "wvy");
    if (json_is_number(x) && json_is_number(y)) {
        *vx = json_number_value(x);
        *vy = json_number_value(y);
        return true;
    }
    const json_t *pvx = json_object_get(o, "vx"), *pvy = json_object_get(o, "vy");
    if (!c->has_calib || !(c->period_ms > 0) || !json_is_number(pvx) || !json_is_number(pvy))
        return false;
    double cx = num(o, "cx", NAN), cy = num(o, "cy", NAN), ax, ay, bx, by;
    if (!trk_calib_to_world(&c->calib, cx, cy, &ax, &ay) ||
        !trk_calib_to_world(&c->calib, cx + json_number_value(pvx), cy + json_number_value(pvy),
                            &bx, &by))
        return false;
    *vx = (bx - ax) * 1e3 / c->period_ms;
    *vy = (by - ay) * 1e3 / c->period_ms;
    return true;
}

/* 1 at the image centre, 0.1 in a corner; 1 when the size is unknown. */
static double centre_weight(const struct camera *c, const json_t *o)
{
    double px = num(o, "cx", NAN), py = num(o, "cy", NAN);
    if (c->width <= 0 || c->height <= 0 || !isfinite(px) || !isfinite(py)) return 1.0;
    double hx = c->width / 2.0, hy = c->height / 2.0;
    double r2 = ((px - hx) * (px - hx) + (py - hy) * (py - hy)) / (hx * hx + hy * hy);
    return 1.0 - 0.9 * (r2 < 1 ? r2 : 1);
}

/* Appends one detection from JSON o (an instance, blob, object or marker)
 * when it has a world point. */
static int add_det(struct camera *c, int cam, enum det_kind kind, const char *name, int64_t marker,
                   int64_t local, const json_t *o)
{
    struct det d = { .kind = kind, .marker = marker, .local = local, .cam = cam };
    if (!world_of(c, o, &d.wx, &d.wy)) return 0;
    snprintf(d.name, sizeof(d.name), "%s", name);
    d.has_v = velocity_of(c, o, &d.wvx, &d.wvy);
    const json_t *h = json_object_get(o, "wheading");
    d.has_heading = json_is_number(h);
    d.heading = d.has_heading ? json_number_value(h) : 0;
    double conf = num(o, "confidence", 1.0);
    d.w = (conf > 0 ? conf : 1e-3) * centre_weight(c, o);
    if (grow((void **)&c->dets, &c->cap_dets, c->n_dets + 1, sizeof(d))) return TRK_ENOMEM;
    c->dets[c->n_dets++] = d;
    return 0;
}

static int64_t int_of(const json_t *o, const char *key, int64_t def)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : def;
}

/* One object of a frame: its instances seen now (tracked), else its blobs,
 * else its centroid when found. */
static int add_object(struct camera *c, int cam, const json_t *o)
{
    const char *name = json_string_value(json_object_get(o, "name"));
    if (!name) return 0;
    const json_t *list = json_object_get(o, "instances");
    bool inst = json_is_array(list);
    if (!inst) list = json_object_get(o, "blobs");
    if (json_is_array(list)) {
        size_t i;
        const json_t *e;
        json_array_foreach(list, i, e)
        {
            if (inst && int_of(e, "lost", 0) != 0) continue; /* a prediction */
            int rc = add_det(c, cam, DET_OBJECT, name, 0, inst ? int_of(e, "id", -1) : -1, e);
            if (rc) return rc;
        }
        return 0;
    }
    if (!json_is_true(json_object_get(o, "found"))) return 0;
    return add_det(c, cam, DET_OBJECT, name, 0, -1, o);
}

static int add_markers(struct camera *c, int cam, const json_t *list)
{
    size_t i;
    const json_t *e;
    json_array_foreach(list, i, e)
    {
        const char *pat = json_string_value(json_object_get(e, "pattern"));
        if (!pat || int_of(e, "lost", 0) != 0) continue;
        int64_t local = int_of(e, "track_id", int_of(e, "track", -1));
        int rc = add_det(c, cam, DET_MARKER, pat, int_of(e, "id", 0), local, e);
        if (rc) return rc;
    }
    return 0;
}

/* Whether every camera worth waiting for has a fresh frame: online, with
 * frames, and not stale against the newest fresh one (a camera cut off
 * without a last will yet must not hold every epoch for its window). */
static bool epoch_complete(const struct trk_fuse *f)
{
    double t = -INFINITY;
    for (int i = 0; i < f->n_cams; i++)
        if (f->cams[i].fresh && f->cams[i].cap_ms > t) t = f->cams[i].cap_ms;
    for (int i = 0; i < f->n_cams; i++) {
        const struct camera *c = &f->cams[i];
        if (c->online && c->has_frame && !c->fresh && t - c->cap_ms <= f->cfg.stale_ms)
            return false;
    }
    return true;
}

static double window_ms(const struct trk_fuse *f)
{
    if (f->cfg.window_ms > 0) return f->cfg.window_ms;
    double w = 0;
    for (int i = 0; i < f->n_cams; i++)
        if (f->cams[i].online && f->cams[i].period_ms > w) w = f->cams[i].period_ms;
    return w > 0 ? w : DEFAULT_WINDOW_MS;
}

/* The sample of least delay, or NULL before the camera has answered. */
static const struct sync_sample *sync_best(const struct camera *c)
{
    const struct sync_sample *best = NULL;
    for (int i = 0; i < c->n_sync; i++)
        if (!best || c->sync[i].delay_ms < best->delay_ms) best = &c->sync[i];
    return best;
}

int trk_fuse_frame(struct trk_fuse *f, const char *camera, const char *json, size_t n,
                   double now_ms, double wall_ms)
{
    if (!strcmp(camera, f->name)) return 0;
    json_t *root = load(f, camera, "frame", json, n);
    if (!root) return TRK_EINVAL;
    struct camera *c = camera_get(f, camera);
    if (!c || !c->online) { /* a frame racing its camera's last will */
        json_decref(root);
        return c ? 0 : -ENOSPC;
    }
    const json_t *lat = json_object_get(root, "latency");
    const struct sync_sample *sync = sync_best(c);
    double cap =
        sync ? num(root, "t_capture", NAN) * 1e3 - sync->offset_ms
             : num(root, "wall_ms", NAN) - num(lat, "queue_ms", 0) - num(lat, "process_ms", 0);
    if (!isfinite(cap) || fabs(cap - wall_ms) > f->cfg.stale_ms) {
        /* One frame from the future would make every other camera stale. */
        bad_msg(f, camera, "frame",
                isfinite(cap) ? "its capture instant is off this host's clock by more than --stale"
                              : "no wall_ms");
        json_decref(root);
        return TRK_EINVAL;
    }
    if (c->has_frame) {
        double step = cap - c->cap_ms;
        if (step > 0 && step < 1000)
            c->period_ms = c->period_ms > 0 ? 0.8 * c->period_ms + 0.2 * step : step;
    }
    c->seq = (uint64_t)int_of(root, "seq", 0);
    c->width = (int)int_of(root, "width", 0);
    c->height = (int)int_of(root, "height", 0);
    c->cap_ms = cap;
    c->n_dets = 0;
    int cam = (int)(c - f->cams), rc = 0;
    size_t i;
    const json_t *o;
    json_array_foreach(json_object_get(root, "objects"), i, o) if (!rc) rc = add_object(c, cam, o);
    const json_t *markers = json_object_get(root, "markers");
    if (!rc && json_is_array(markers)) rc = add_markers(c, cam, markers);
    json_decref(root);
    if (rc) return rc;
    c->has_frame = c->fresh = true;
    if (f->due < 0) f->due = now_ms + window_ms(f);
    return epoch_complete(f) ? 1 : 0;
}

const char *trk_fuse_sync_due(struct trk_fuse *f, double now_ms)
{
    for (int i = 0; i < f->n_cams; i++) {
        struct camera *c = &f->cams[i];
        if (!c->online || now_ms < c->sync_next) continue;
        c->sync_asked++;
        c->sync_next = now_ms + (c->sync_asked < TRK_FUSE_SYNC_SAMPLES ? TRK_FUSE_SYNC_FAST_MS
                                                                       : TRK_FUSE_SYNC_EVERY_MS);
        return c->name;
    }
    return NULL;
}

int trk_fuse_sync_reply(struct trk_fuse *f, const char *camera, const char *json, size_t n,
                        double wall_ms)
{
    if (!strcmp(camera, f->name)) return 0;
    json_t *root = load(f, camera, "sync reply", json, n);
    if (!root) return TRK_EINVAL;
    struct camera *c = camera_get(f, camera);
    /* t0, t3 on the fuser's wall clock; rx, tx on the camera's monotonic
     * clock (s): NTP's offset and delay. */
    double t0 = num(root, "t0", NAN), rx = num(root, "rx_mono", NAN) * 1e3,
           tx = num(root, "tx_mono", NAN) * 1e3, t3 = wall_ms;
    json_decref(root);
    if (!c) return -ENOSPC;
    double rtt = t3 - t0, delay = rtt - (tx - rx);
    if (!isfinite(delay) || !(rtt >= 0 && rtt <= TRK_FUSE_SYNC_MAX_RTT_MS) || tx < rx) {
        bad_msg(f, camera, "sync reply", "no t0, rx_mono, tx_mono of a recent request");
        return TRK_EINVAL;
    }
    bool first = c->n_sync == 0;
    c->sync[c->sync_at] = (struct sync_sample){ .offset_ms = ((rx - t0) + (tx - t3)) / 2,
                                                .delay_ms = delay > 0 ? delay : 0 };
    c->sync_at = (c->sync_at + 1) % TRK_FUSE_SYNC_SAMPLES;
    if (c->n_sync < TRK_FUSE_SYNC_SAMPLES) c->n_sync++;
    if (first)
        log_info("camera %s: clock synced (round trip %.3f ms): its t_capture is used", camera,
                 rtt);
    return 0;
}

double trk_fuse_due(const struct trk_fuse *f)
{
    return f->due;
}

static bool same_key(const struct det *a, enum det_kind kind, const char *name, int64_t marker)
{
    return a->kind == kind && a->marker == marker && !strcmp(a->name, name);
}

/* Each camera's newest frame, when used, moved to instant t into f->all;
 * sets the cameras' late and stale flags (logged on change). */
static int gather(struct trk_fuse *f, double t, double window)
{
    f->n_all = 0;
    for (int i = 0; i < f->n_cams; i++) {
        struct camera *c = &f->cams[i];
        if (!c->online || !c->has_frame) continue;
        double behind = t - c->cap_ms;
        bool late = behind > (c->late ? INTIME_WINDOWS : LATE_WINDOWS) * window;
        c->stale = behind > f->cfg.stale_ms;
        if (late != c->late) {
            if (late)
                log_warn("camera %s is late: its newest frame is %.0f ms behind the fused "
                         "instant (window %.0f ms); not waited for%s",
                         c->name, behind, window, c->stale ? ", not used" : "");
            else
                log_info("camera %s is in time again", c->name);
        }
        c->late = late;
        if (c->stale) continue;
        if (grow((void **)&f->all, &f->cap_all, f->n_all + c->n_dets, sizeof(struct det)))
            return TRK_ENOMEM;
        double dt = behind / 1e3;
        for (size_t k = 0; k < c->n_dets; k++) {
            struct det d = c->dets[k];
            if (d.has_v) {
                d.wx += d.wvx * dt;
                d.wy += d.wvy * dt;
            }
            f->all[f->n_all++] = d;
        }
    }
    return 0;
}

static int by_weight(const void *a, const void *b)
{
    double wa = ((const struct det *)a)->w, wb = ((const struct det *)b)->w;
    return (wa < wb) - (wa > wb);
}

/* Merges f->all into clusters: each detection (heaviest first) joins the
 * nearest cluster of its key within the gate that has none of its camera. */
static int cluster(struct trk_fuse *f)
{
    if (f->n_all > 1) qsort(f->all, f->n_all, sizeof(struct det), by_weight);
    f->n_cl = 0;
    if (grow((void **)&f->cl, &f->cap_cl, f->n_all, sizeof(struct cluster))) return TRK_ENOMEM;
    for (size_t i = 0; i < f->n_all; i++) {
        const struct det *d = &f->all[i];
        struct cluster *best = NULL;
        double best_d2 = f->cfg.gate * f->cfg.gate;
        for (size_t k = 0; k < f->n_cl; k++) {
            struct cluster *c = &f->cl[k];
            const struct det *key = &f->all[c->first];
            if (c->member[d->cam] >= 0 || !same_key(key, d->kind, d->name, d->marker)) continue;
            double dx = c->swx / c->sw - d->wx, dy = c->swy / c->sw - d->wy;
            if (dx * dx + dy * dy <= best_d2) {
                best_d2 = dx * dx + dy * dy;
                best = c;
            }
        }
        if (!best) {
            best = &f->cl[f->n_cl++];
            memset(best, 0, sizeof(*best));
            for (int k = 0; k < TRK_FUSE_MAX_CAMERAS; k++)
                best->member[k] = -1;
            best->first = (int)i;
            best->track = -1;
        }
        best->member[d->cam] = (int)i;
        best->sw += d->w;
        best->swx += d->w * d->wx;
        best->swy += d->w * d->wy;
    }
    return 0;
}

/* The track a camera's local id links the cluster to (lowest id wins). */
static int track_by_link(const struct trk_fuse *f, const struct cluster *c)
{
    int best = -1;
    const struct det *key = &f->all[c->first];
    for (size_t t = 0; t < f->n_tracks; t++) {
        const struct track *tr = &f->tracks[t];
        if (tr->taken || !same_key(key, tr->kind, tr->name, tr->marker)) continue;
        for (int k = 0; k < TRK_FUSE_MAX_CAMERAS; k++) {
            int m = c->member[k];
            if (m >= 0 && f->all[m].local >= 0 && tr->local[k] == f->all[m].local &&
                (best < 0 || tr->gid < f->tracks[best].gid))
                best = (int)t;
        }
    }
    return best;
}

/* The nearest free track of the cluster's key, predicted to t, in the gate. */
static int track_by_distance(const struct trk_fuse *f, const struct cluster *c, double t)
{
    int best = -1;
    double best_d2 = f->cfg.gate * f->cfg.gate;
    const struct det *key = &f->all[c->first];
    for (size_t k = 0; k < f->n_tracks; k++) {
        const struct track *tr = &f->tracks[k];
        if (tr->taken || !same_key(key, tr->kind, tr->name, tr->marker)) continue;
        double dt = tr->has_v ? (t - tr->t_ms) / 1e3 : 0;
        double dx = tr->wx + tr->wvx * dt - c->swx / c->sw,
               dy = tr->wy + tr->wvy * dt - c->swy / c->sw;
        if (dx * dx + dy * dy <= best_d2) {
            best_d2 = dx * dx + dy * dy;
            best = (int)k;
        }
    }
    return best;
}

static int track_new(struct trk_fuse *f, const struct cluster *c)
{
    if (grow((void **)&f->tracks, &f->cap_tracks, f->n_tracks + 1, sizeof(struct track)))
        return TRK_ENOMEM;
    struct track *tr = &f->tracks[f->n_tracks];
    const struct det *key = &f->all[c->first];
    memset(tr, 0, sizeof(*tr));
    tr->gid = f->next_gid++;
    tr->kind = key->kind;
    tr->marker = key->marker;
    memcpy(tr->name, key->name, sizeof(tr->name));
    for (int k = 0; k < TRK_FUSE_MAX_CAMERAS; k++)
        tr->local[k] = -1;
    return (int)f->n_tracks++;
}

/* The cluster's fused state into its track at instant t. */
static void track_update(struct trk_fuse *f, struct cluster *c, struct track *tr, double t)
{
    double sv = 0, svx = 0, svy = 0, sh = 0, hs = 0, hc = 0;
    for (int k = 0; k < TRK_FUSE_MAX_CAMERAS; k++) {
        tr->seen[k] = c->member[k] >= 0;
        if (c->member[k] < 0) continue;
        const struct det *d = &f->all[c->member[k]];
        if (d->local >= 0) tr->local[k] = d->local;
        if (d->has_v) {
            sv += d->w;
            svx += d->w * d->wvx;
            svy += d->w * d->wvy;
        }
        if (d->has_heading) {
            sh += d->w;
            hs += d->w * sin(d->heading * M_PI / 180);
            hc += d->w * cos(d->heading * M_PI / 180);
        }
    }
    tr->wx = c->swx / c->sw;
    tr->wy = c->swy / c->sw;
    tr->has_v = sv > 0;
    tr->wvx = sv > 0 ? svx / sv : 0;
    tr->wvy = sv > 0 ? svy / sv : 0;
    tr->has_heading = sh > 0;
    if (sh > 0) tr->heading = fmod(atan2(hs, hc) * 180 / M_PI + 360, 360);
    tr->t_ms = t;
    tr->taken = true;
}

/* Gives every cluster a track: by a camera's link first (so a hand-over
 * keeps the id), then by distance, else a new one; drops old tracks. */
static int assign(struct trk_fuse *f, double t)
{
    for (size_t k = 0; k < f->n_tracks; k++)
        f->tracks[k].taken = false;
    for (int pass = 0; pass < 3; pass++) {
        for (size_t i = 0; i < f->n_cl; i++) {
            struct cluster *c = &f->cl[i];
            if (c->track >= 0) continue;
            int tr = pass == 0   ? track_by_link(f, c)
                     : pass == 1 ? track_by_distance(f, c, t)
                                 : track_new(f, c);
            if (tr == TRK_ENOMEM) return TRK_ENOMEM;
            if (tr < 0) continue;
            c->track = tr;
            track_update(f, c, &f->tracks[tr], t);
        }
    }
    size_t kept = 0;
    for (size_t k = 0; k < f->n_tracks; k++)
        if (t - f->tracks[k].t_ms <= f->cfg.keep_ms) f->tracks[kept++] = f->tracks[k];
    f->n_tracks = kept;
    for (size_t i = 0; i < f->n_cl; i++)
        f->cl[i].track = -1; /* indices moved */
    return 0;
}

static void put_str(struct trk_buf *b, const char *s)
{
    trk_buf_json_str(b, s, strlen(s));
}

/* ,"cameras":[...]: the cameras that saw track tr in this epoch. */
static void put_seen_by(const struct trk_fuse *f, struct trk_buf *b, const struct track *tr)
{
    trk_buf_puts(b, ",\"cameras\":[");
    bool first = true;
    for (int k = 0; k < f->n_cams; k++) {
        if (!tr->seen[k]) continue;
        if (!first) trk_buf_puts(b, ",");
        put_str(b, f->cams[k].name);
        first = false;
    }
    trk_buf_puts(b, "]");
}

static void put_xy(struct trk_buf *b, const char *kx, double x, const char *ky, double y, int dec)
{
    trk_buf_puts(b, kx);
    trk_buf_fixed(b, x, dec);
    trk_buf_puts(b, ky);
    trk_buf_fixed(b, y, dec);
}

/* The tracks of one kind fused at t, positions moved on by their
 * velocities over ahead_s (--predict send; 0 otherwise). */
static void put_tracks(struct trk_fuse *f, struct trk_buf *b, enum det_kind kind, double t,
                       double ahead_s, int dec)
{
    trk_buf_puts(b, kind == DET_OBJECT ? ",\"objects\":[" : ",\"markers\":[");
    bool first = true;
    for (size_t k = 0; k < f->n_tracks; k++) {
        const struct track *tr = &f->tracks[k];
        if (tr->kind != kind || tr->t_ms != t) continue;
        trk_buf_puts(b, first ? "{\"id\":" : ",{\"id\":");
        first = false;
        trk_buf_u64(b, tr->gid);
        trk_buf_puts(b, kind == DET_OBJECT ? ",\"name\":" : ",\"pattern\":");
        put_str(b, tr->name);
        if (kind == DET_MARKER) {
            trk_buf_puts(b, ",\"marker\":");
            trk_buf_i64(b, tr->marker);
        }
        double dt = tr->has_v ? ahead_s : 0;
        put_xy(b, ",\"wx\":", tr->wx + tr->wvx * dt, ",\"wy\":", tr->wy + tr->wvy * dt, dec);
        put_xy(b, ",\"wvx\":", tr->has_v ? tr->wvx : NAN, ",\"wvy\":", tr->has_v ? tr->wvy : NAN,
               dec);
        if (kind == DET_MARKER) {
            trk_buf_puts(b, ",\"wheading\":");
            trk_buf_fixed(b, tr->has_heading ? tr->heading : NAN, 2);
        }
        put_seen_by(f, b, tr);
        trk_buf_puts(b, "}");
    }
    trk_buf_puts(b, "]");
}

/* The camera's footprint: its image corners on the world plane (null for
 * a corner past the horizon); null without a calibration or frame size. */
static void put_footprint(struct trk_buf *b, const struct camera *c, int dec)
{
    trk_buf_puts(b, ",\"footprint\":");
    if (!c->has_calib || c->width <= 0 || c->height <= 0) {
        trk_buf_puts(b, "null");
        return;
    }
    const double px[4] = { 0, c->width, c->width, 0 }, py[4] = { 0, 0, c->height, c->height };
    for (int k = 0; k < 4; k++) {
        double wx, wy;
        trk_buf_puts(b, k ? "," : "[");
        if (!trk_calib_to_world(&c->calib, px[k], py[k], &wx, &wy))
            trk_buf_puts(b, "null");
        else
            put_xy(b, "[", wx, ",", wy, dec), trk_buf_puts(b, "]");
    }
    trk_buf_puts(b, "]");
}

/* ,"cameras":[contributing],"late":[...],"offline":[...],"sources":[...] */
static void put_cameras(struct trk_fuse *f, struct trk_buf *b, double t, double wall, int dec)
{
    static const char *const lists[3] = { ",\"cameras\":[", "],\"late\":[", "],\"offline\":[" };
    for (int l = 0; l < 3; l++) {
        trk_buf_puts(b, lists[l]);
        bool first = true;
        for (int i = 0; i < f->n_cams; i++) {
            const struct camera *c = &f->cams[i];
            bool in = l == 0   ? c->online && c->has_frame && !c->stale
                      : l == 1 ? c->online && c->has_frame && c->late
                               : !c->online;
            if (!in) continue;
            if (!first) trk_buf_puts(b, ",");
            put_str(b, c->name);
            first = false;
        }
    }
    trk_buf_puts(b, "],\"sources\":[");
    for (int i = 0; i < f->n_cams; i++) {
        const struct camera *c = &f->cams[i];
        trk_buf_puts(b, i ? ",{\"camera\":" : "{\"camera\":");
        put_str(b, c->name);
        trk_buf_puts(b, c->online ? ",\"online\":true" : ",\"online\":false");
        trk_buf_puts(b, c->late && c->online ? ",\"late\":true" : ",\"late\":false");
        trk_buf_puts(b, ",\"seq\":");
        trk_buf_u64(b, c->seq);
        bool fr = c->has_frame && c->online;
        trk_buf_puts(b, ",\"behind_ms\":");
        trk_buf_fixed(b, fr ? t - c->cap_ms : NAN, 1);
        trk_buf_puts(b, ",\"delay_ms\":");
        trk_buf_fixed(b, fr ? wall - c->cap_ms : NAN, 1);
        trk_buf_puts(b, ",\"fps\":");
        trk_buf_fixed(b, c->period_ms > 0 ? 1e3 / c->period_ms : NAN, 2);
        const struct sync_sample *sync = sync_best(c);
        trk_buf_puts(b, sync ? ",\"clock\":\"sync\"" : ",\"clock\":\"wall\"");
        put_xy(b, ",\"clock_offset_ms\":", sync ? sync->offset_ms : NAN,
               ",\"sync_delay_ms\":", sync ? sync->delay_ms : NAN, 3);
        put_footprint(b, c, dec);
        trk_buf_puts(b, "}");
    }
    trk_buf_puts(b, "]");
}

/* The unit and decimals of the first calibrated camera. */
static const struct trk_calib *world_calib(const struct trk_fuse *f)
{
    for (int i = 0; i < f->n_cams; i++)
        if (f->cams[i].has_calib) return &f->cams[i].calib;
    return NULL;
}

int trk_fuse_emit(struct trk_fuse *f, double wall_ms, struct trk_buf *out)
{
    if (f->due < 0) return 0;
    f->due = -1;
    double t = -INFINITY, window = window_ms(f);
    for (int i = 0; i < f->n_cams; i++)
        if (f->cams[i].online && f->cams[i].has_frame && f->cams[i].cap_ms > t)
            t = f->cams[i].cap_ms;
    if (!isfinite(t)) return 0; /* every camera of the epoch went offline */
    int rc = gather(f, t, window);
    if (!rc) rc = cluster(f);
    if (!rc) rc = assign(f, t);
    if (rc) return rc;
    const struct trk_calib *wc = world_calib(f);
    int dec = wc ? wc->decimals : 3;
    trk_buf_reset(out);
    trk_buf_puts(out, "{\"type\":\"frame\",\"camera\":");
    put_str(out, f->name);
    trk_buf_puts(out, ",\"seq\":");
    trk_buf_u64(out, ++f->seq);
    trk_buf_puts(out, ",\"wall_ms\":");
    trk_buf_fixed(out, t, 3);
    trk_buf_puts(out, ",\"sent_ms\":");
    trk_buf_fixed(out, wall_ms, 3);
    trk_buf_puts(out, ",\"window_ms\":");
    trk_buf_fixed(out, window, 1);
    trk_buf_puts(out, ",\"unit\":");
    put_str(out, wc ? wc->unit : "");
    put_cameras(f, out, t, wall_ms, dec);
    /* --predict send: the interval from the fused instant to now, when the
     * message goes out (never backwards). */
    double ahead_s = f->cfg.predict && wall_ms > t ? (wall_ms - t) / 1e3 : 0;
    if (f->cfg.predict) {
        trk_buf_puts(out, ",\"predict_ms\":");
        trk_buf_fixed(out, ahead_s * 1e3, 3);
    }
    put_tracks(f, out, DET_OBJECT, t, ahead_s, dec);
    put_tracks(f, out, DET_MARKER, t, ahead_s, dec);
    trk_buf_puts(out, "}");
    for (int i = 0; i < f->n_cams; i++)
        f->cams[i].fresh = false;
    f->emitted = true;
    f->last_t = t;
    f->last_ahead_ms = ahead_s * 1e3;
    snprintf(f->last_unit, sizeof(f->last_unit), "%s", wc ? wc->unit : "");
    return out->failed ? TRK_ENOMEM : 1;
}

bool trk_fuse_last(const struct trk_fuse *f, struct trk_fuse_world *w)
{
    if (!f->emitted) return false;
    *w = (struct trk_fuse_world){
        .seq = f->seq, .t_ms = f->last_t, .ahead_ms = f->last_ahead_ms, .unit = f->last_unit
    };
    return true;
}

bool trk_fuse_last_obj(const struct trk_fuse *f, size_t i, struct trk_fuse_obj *o)
{
    if (!f->emitted) return false;
    for (size_t k = 0; k < f->n_tracks; k++) {
        const struct track *tr = &f->tracks[k];
        if (tr->t_ms != f->last_t || i--) continue; /* not in it, or not the i-th yet */
        double dt = tr->has_v ? f->last_ahead_ms / 1e3 : 0;
        *o = (struct trk_fuse_obj){ .marker = tr->kind == DET_MARKER,
                                    .name = tr->name,
                                    .marker_id = tr->marker,
                                    .id = tr->gid,
                                    .wx = tr->wx + tr->wvx * dt,
                                    .wy = tr->wy + tr->wvy * dt,
                                    .has_v = tr->has_v,
                                    .wvx = tr->wvx,
                                    .wvy = tr->wvy,
                                    .has_heading = tr->has_heading,
                                    .heading = tr->heading };
        return true;
    }
    return false;
}
