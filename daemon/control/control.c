#include "control.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOG_TAG "control"
#include "source/camctl.h"
#include "color.h"
#include "log.h"
#include "ops/focus.h"
#include "preview.h"
#include "seam.h" /* TRK_SEAM_MAX_SIDE */
#include "trk_color.h"
#include "workq.h"

/* Sample requests waiting for the sampler, in all and per client; more get
 * a "busy" error. The per-client bound keeps one client from taking every
 * slot; the sampler's own pacing (pipeline.c) bounds the rate. */
#define MAX_PENDING            16
#define MAX_PENDING_PER_CLIENT 4
/* Largest sampled square radius and rectangle side (pixels). */
#define SAMPLE_RADIUS_MAX 16
#define SAMPLE_SIDE_MAX   4096
/* save/reload requests waiting for the file worker; more get "busy" (each
 * save holds a copy of the set). */
#define MAX_JOBS 8

struct sample_req {
    uint64_t client;
    char id[TRK_MSG_ID_MAX * 6 + 3];
    int x0, y0, x1, y1; /* inclusive, clipped to the frame */
    int x, y, radius;   /* as asked (radius -1 for a rectangle) */
    bool by_seq;        /* "seq" named the frame: a kept or held one */
    uint64_t seq;
    /* paint_class: 1 adds the rectangle's colours to object obj's class,
     * -1 removes them; 0 for a sample. */
    int paint;
    char obj[TRK_NAME_MAX];
};

/* The most pixels one paint_class reads (a larger rectangle is read on an
 * evenly spaced grid, as a sample is): every colour of a 1024 x 1024
 * rectangle counts. */
#define PAINT_PIXELS_MAX (1L << 20)

/* A copy of a previewed frame: one of the last few kept, or one a client
 * holds (a paused page). Its planes point into buf, reused from copy to
 * copy. */
struct kept {
    bool valid;
    uint64_t seq;
    uint64_t client; /* a held frame: who holds it */
    struct trk_image img;
    uint8_t *buf;
    size_t cap;
};

/* A client's own mask view (its preview view is its index + 1). */
enum mask_kind { MASK_NONE = 0, MASK_OBJECT, MASK_BOX };
struct viewer {
    uint64_t client; /* 0 = a free entry */
    enum mask_kind kind;
    char name[TRK_NAME_MAX];   /* MASK_OBJECT: followed through edits */
    struct trk_object_def box; /* MASK_BOX: a range not yet added     */
    bool edges;                /* the edges view (focus peaking)      */
    bool carve;                /* fit: "carve" to fit_w:fit_h          */
    int fit_w, fit_h;
};

/* Whether v is a view of its own (else the plain picture's viewer). */
static bool own_view(const struct viewer *v)
{
    return v->kind != MASK_NONE || v->edges || v->carve;
}

/* What a save writes: the whole set, or one section of the set put into
 * the file as it is on disk (save_objects "part"). */
enum save_part { PART_WHOLE = 0, PART_CALIBRATION, PART_CAMERA };
static const char *const part_names[] = {
    [PART_CALIBRATION] = "calibration", [PART_CAMERA] = "camera"
};

/* A save or reload waiting for the file worker. */
struct file_job {
    enum trk_ctl_type type; /* TRK_CTL_SAVE_OBJECTS, _RELOAD_OBJECTS or _LIST_BUNDLES */
    enum save_part part;    /* save: what it writes */
    uint64_t client;
    char id[TRK_MSG_ID_MAX * 6 + 3];
    struct trk_objects *snapshot; /* save: the set when it was asked for */
};

struct trk_control {
    struct trk_reply out;                  /* set at create, then read-only */
    const struct trk_objects_target *save; /* the caller's, read-only; NULL = none */
    struct trk_camctl *camera;             /* the caller's; NULL = none */
    int (*save_rewind)(void *ctx, char *dir, size_t dir_len, char *why, size_t why_len);
    void *save_rewind_ctx;
    int (*replay)(void *ctx, int op, long long a, long long b, long long *frame, char *why,
                  size_t why_len);
    void *replay_ctx;
    int (*list_bundles)(void *ctx, struct trk_buf *out);
    void *list_bundles_ctx;
    struct trk_focus *focus; /* the caller's; NULL = none */
    struct trk_workq *files; /* runs file_jobs: the service thread never waits on disk */
    pthread_mutex_t lock;    /* guards everything below */
    struct trk_objects objs;
    uint64_t version; /* bumped on every change; starts at 1 */
    struct trk_hello_info hello;
    char *h_version, *h_backend, *h_source;
    struct sample_req pending[MAX_PENDING];
    int n_pending;
    int preview_width;
    double preview_fps;
    struct viewer viewers[TRK_CONTROL_VIEWS];
    char color_text[TRK_MAX_OBJECTS][TRK_COLOR_HEX_SIZE]; /* "#rrggbb" per object (color_strings) */
    const char *colors[TRK_MAX_OBJECTS];
    /* Frame copies: written by the preview thread (keep), swapped by the
     * service thread (hold), read by the sampler; taken after lock when
     * both are. */
    pthread_mutex_t frames_lock;
    struct kept kept[TRK_CONTROL_KEPT_FRAMES]; /* ring from kept_next */
    int kept_next;
    struct kept held[TRK_CONTROL_HELD_FRAMES];
    atomic_bool keep_failed; /* a copy failed: logged once until one works */
    /* Ranges that follow the light (trk_control_light_frame; under lock):
     * the boxes the processing thread uses now (n_light: 0 = none), its
     * reference means, and the resets asked for. */
    int n_light;
    uint16_t light_lo[TRK_MAX_OBJECTS][3], light_hi[TRK_MAX_OBJECTS][3];
    uint32_t light_means[3];
    bool light_has_means;
    bool reset_asked[TRK_MAX_OBJECTS];
};

/* ------------------------------------------------------------- pixels */

void trk_pixel_channels(const struct trk_image *img, int x, int y, enum trk_space space, int c[3])
{
    trk_image_pixel_space(img, x, y, space, c);
}

/* ------------------------------------------------------------- replies */

/* Sends b (built by an encoder that returned rc) and frees it. A message
 * that lost an append is dropped, never sent truncated. */
static void send_reply(struct trk_control *c, uint64_t client, struct trk_buf *b, int rc)
{
    if (rc || b->failed)
        log_warn("out of memory building a reply to client %llu: not sent",
                 (unsigned long long)client);
    else if (c->out.send)
        c->out.send(c->out.ctx, client, b);
    trk_buf_free(b);
}

/* code: a TRK_MSG_* error (its "code" string goes out). */
static void vreply_error(struct trk_control *c, uint64_t client, const char *id, int code,
                         const char *fmt, va_list ap)
{
    char text[512];
    vsnprintf(text, sizeof(text), fmt, ap);
    struct trk_buf b = { 0 };
    send_reply(c, client, &b, trk_msg_error(&b, trk_msg_err_code(code), text, id));
}

__attribute__((format(printf, 5, 6))) static void
reply_error(struct trk_control *c, uint64_t client, const char *id, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreply_error(c, client, id, code, fmt, ap);
    va_end(ap);
}

/* The control message being answered. */
struct request {
    uint64_t client;
    const char *id; /* the request's id as JSON text, "" = none */
    enum trk_ctl_type type;
    json_t *msg;
};

/* The error reply to request r. */
__attribute__((format(printf, 4, 5))) static void
refuse(struct trk_control *c, const struct request *r, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreply_error(c, r->client, r->id, code, fmt, ap);
    va_end(ap);
}

/* The ack with one integer field (object_id, count). */
static void ack_int(struct trk_control *c, const struct request *r, const char *key, int64_t v)
{
    struct trk_buf b = { 0 };
    send_reply(c, r->client, &b,
               trk_msg_ack_int(&b, trk_msg_control_types[r->type], r->id, key, v));
}

/* ------------------------------------------------------------ the set */

/* With the lock held: "#rrggbb" for every object of the set. */
static const char *const *color_strings(struct trk_control *c)
{
    const struct trk_objects *o = &c->objs;
    for (int i = 0; i < o->n; i++) {
        trk_color_hex(o->color[i], c->color_text[i]);
        c->colors[i] = c->color_text[i];
    }
    return c->colors;
}

/* With the lock held: new hello for the current set, and (broadcast) an
 * "objects" message to everyone connected. */
static void publish_locked(struct trk_control *c, bool broadcast)
{
    struct trk_hello_info h = c->hello;
    h.defs = c->objs.def;
    h.n_objects = c->objs.n;
    h.colors = color_strings(c);
    h.calib = &c->objs.calib;
    h.patterns = c->objs.patterns;
    h.n_patterns = c->objs.n_patterns;
    h.preview.width = c->preview_width;
    if (h.width > 0 && h.height > 0)
        trk_msg_preview_size(h.width, h.height, c->preview_width, &h.preview.width,
                             &h.preview.height);
    h.preview.fps = c->preview_fps;
    struct trk_buf b = { 0 };
    if (c->out.set_hello && trk_msg_hello(&b, &h) == 0) c->out.set_hello(c->out.ctx, &b);
    trk_buf_reset(&b);
    if (broadcast && c->out.broadcast &&
        trk_msg_objects_patterns(&b, NULL, h.defs, h.n_objects, h.colors, h.calib, h.patterns,
                                 h.n_patterns) == 0)
        c->out.broadcast(c->out.ctx, &b);
    trk_buf_free(&b);
}

/* With the lock held: the set changed. */
static void changed_locked(struct trk_control *c)
{
    /* Tables no object uses any more go; the set may be a copy: bound. */
    trk_objects_compact_classes(&c->objs);
    /* Read without the lock by trk_control_version. */
    __atomic_store_n(&c->version, c->version + 1, __ATOMIC_RELEASE);
    publish_locked(c, true);
}

bool trk_control_poll(struct trk_control *c, uint64_t *version, struct trk_objects *out)
{
    pthread_mutex_lock(&c->lock);
    bool changed = *version != c->version;
    if (changed) {
        *out = c->objs;
        trk_objects_bind_classes(out);
        *version = c->version;
    }
    pthread_mutex_unlock(&c->lock);
    return changed;
}

int trk_control_preview(struct trk_control *c, int *width, double *fps,
                        struct trk_control_view *views, int max)
{
    int n = 0;
    pthread_mutex_lock(&c->lock);
    *width = c->preview_width;
    *fps = c->preview_fps;
    if (max > 0) views[n++] = (struct trk_control_view){ .view = 0 };
    for (int i = 0; i < TRK_CONTROL_VIEWS && n < max; i++) {
        const struct viewer *v = &c->viewers[i];
        if (!v->client) continue;
        struct trk_control_view *o = &views[n++];
        *o = (struct trk_control_view){ .view = i + 1,
                                        .mask = v->kind == MASK_BOX,
                                        .edges = v->edges,
                                        .carve = v->carve,
                                        .fit_w = v->fit_w,
                                        .fit_h = v->fit_h };
        if (v->kind == MASK_BOX) o->def = v->box;
        int k = v->kind == MASK_OBJECT ? trk_objects_find(&c->objs, v->name) : -1;
        if (k >= 0) o->mask = true, o->def = c->objs.def[k];
    }
    pthread_mutex_unlock(&c->lock);
    return n;
}

uint64_t trk_control_install(struct trk_control *c, const struct trk_objects *set)
{
    pthread_mutex_lock(&c->lock);
    c->objs = *set;
    changed_locked(c);
    const uint64_t v = c->version;
    pthread_mutex_unlock(&c->lock);
    return v;
}

uint64_t trk_control_version(struct trk_control *c)
{
    return __atomic_load_n(&c->version, __ATOMIC_ACQUIRE);
}

int trk_control_reload(struct trk_control *c, char *msg, size_t msg_len)
{
    if (!c->save) {
        snprintf(msg, msg_len, "no objects file to reload (start with --objects)");
        return TRK_MSG_NO_FILE;
    }
    /* Loading reads a file: done without the lock, then swapped in. The
     * target's rules (objects.h) refuse links, non-regular files and other
     * users' files, and keep the file's text out of the message, which
     * goes to the client that asked. */
    struct trk_objects *o = malloc(sizeof(*o));
    struct trk_config_error cerr;
    int err = o ? trk_objects_target_load(c->save, o, &cerr) : TRK_ENOMEM;
    if (err) {
        if (o)
            trk_config_error_format(&cerr, msg, msg_len);
        else
            snprintf(msg, msg_len, "%s", trk_strerror(err));
    } else {
        pthread_mutex_lock(&c->lock);
        c->objs = *o;
        changed_locked(c);
        pthread_mutex_unlock(&c->lock);
        if (c->camera) trk_camctl_load(c->camera, o->camera, o->n_camera);
        snprintf(msg, msg_len, "%s: %d objects", c->save->path, o->n);
    }
    free(o);
    return err ? TRK_MSG_INVALID_OBJECT : 0;
}

/* ---------------------------------------------------------- file worker */

/* A part save: the file as it is on disk with only j's part replaced by
 * the snapshot's (removed when the snapshot has none), into *disk. Reads by
 * reload's rules (no link, a regular file, errors quoting nothing of it).
 * 1: no file yet, *disk is the whole snapshot; 0: *disk is merged; <0: the
 * file cannot be kept (why says so) and nothing may be written. */
static int merge_part(struct trk_control *c, const struct file_job *j, struct trk_objects *disk,
                      char *why, size_t why_len)
{
    struct trk_config_error cerr;
    int err = trk_objects_target_load(c->save, disk, &cerr);
    if (err == -ENOENT) {
        *disk = *j->snapshot;
        return 1;
    }
    if (err) {
        char m[512];
        trk_config_error_format(&cerr, m, sizeof(m));
        snprintf(why, why_len, "%s; only the %s was to be saved, so nothing was written", m,
                 part_names[j->part]);
        return err;
    }
    if (j->part == PART_CALIBRATION) {
        disk->calib = j->snapshot->calib;
    } else {
        disk->n_camera = j->snapshot->n_camera;
        memcpy(disk->camera, j->snapshot->camera, sizeof(disk->camera));
    }
    return 0;
}

/* On the worker: one save, the whole snapshot or one part of it. */
static void save_job(struct trk_control *c, const struct file_job *j)
{
    char why[800];
    const struct trk_objects *objs = j->snapshot;
    struct trk_objects *disk = NULL;
    int err = 0;
    bool whole = j->part == PART_WHOLE;
    if (!whole) {
        disk = malloc(sizeof(*disk));
        err = disk ? merge_part(c, j, disk, why, sizeof(why)) : TRK_ENOMEM;
        if (!disk) snprintf(why, sizeof(why), "out of memory");
        whole = err == 1;
        err = err == 1 ? 0 : err;
        objs = disk;
    }
    if (!err) err = trk_objects_target_save(c->save, objs, why, sizeof(why));
    if (err) {
        log_warn("saving objects for client %llu refused: %s", (unsigned long long)j->client, why);
        reply_error(c, j->client, j->id, TRK_MSG_IO_ERROR, "%s", why);
    } else {
        const char *part = j->part ? part_names[j->part] : NULL;
        struct trk_buf b = { 0 };
        log_info("saved %s to %s", whole ? "the whole set" : part, c->save->path);
        send_reply(c, j->client, &b,
                   trk_msg_ack_saved(&b, j->id, c->save->path, objs->n, part, whole));
    }
    free(disk);
}

/* On the worker: {"type":"bundles"[,"id":id],"bundles":[...]}. */
static void list_job(struct trk_control *c, const struct file_job *j)
{
    struct trk_buf b = { 0 };
    int rc = trk_buf_printf(&b, "{\"type\":\"bundles\"");
    if (!rc && j->id[0]) rc = trk_buf_printf(&b, ",\"id\":%s", j->id);
    if (!rc) rc = trk_buf_printf(&b, ",\"bundles\":");
    if (!rc) rc = c->list_bundles(c->list_bundles_ctx, &b);
    if (!rc) rc = trk_buf_printf(&b, "}");
    send_reply(c, j->client, &b, rc);
}

/* On the worker, without the lock: does one save, reload or listing and
 * replies. */
static void run_job(struct trk_control *c, const struct file_job *j)
{
    struct trk_buf b = { 0 };
    if (j->type == TRK_CTL_SAVE_OBJECTS) {
        save_job(c, j);
        return;
    }
    if (j->type == TRK_CTL_LIST_BUNDLES) {
        list_job(c, j);
        return;
    }
    char why[600];
    int err = trk_control_reload(c, why, sizeof(why));
    if (err) {
        reply_error(c, j->client, j->id, err, "%s", why);
        return;
    }
    pthread_mutex_lock(&c->lock);
    int n = c->objs.n;
    pthread_mutex_unlock(&c->lock);
    send_reply(c, j->client, &b, trk_msg_ack_int(&b, "reload_objects", j->id, "count", n));
}

/* trk_workq_fn: one job, then its snapshot goes. */
static void file_worker(void *ctx, void *job)
{
    struct file_job *j = job;
    run_job(ctx, j);
    free(j->snapshot);
}

/* With the lock held: hands r to the worker (which frees snapshot). */
static void queue_job(struct trk_control *c, const struct request *r, enum save_part part,
                      struct trk_objects *snapshot)
{
    struct file_job j = {
        .type = r->type, .part = part, .client = r->client, .snapshot = snapshot
    };
    snprintf(j.id, sizeof(j.id), "%s", r->id);
    if (!trk_workq_push(c->files, &j)) {
        free(snapshot);
        refuse(c, r, TRK_MSG_BUSY, "too many save/reload requests pending; try again");
    }
}

/* ------------------------------------------------------------ lifecycle */

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

int trk_control_create(const struct trk_control_cfg *cfg, struct trk_control **out)
{
    *out = NULL;
    if (!cfg || !cfg->objects) return TRK_EINVAL;
    struct trk_control *c = calloc(1, sizeof(*c));
    if (!c) return TRK_ENOMEM;
    pthread_mutex_init(&c->lock, NULL);
    c->out = cfg->reply;
    c->objs = *cfg->objects;
    trk_objects_bind_classes(&c->objs);
    c->version = 1;
    pthread_mutex_init(&c->frames_lock, NULL);
    c->hello = cfg->hello;
    c->save = cfg->save;
    c->camera = cfg->camera;
    c->save_rewind = cfg->save_rewind;
    c->save_rewind_ctx = cfg->save_rewind_ctx;
    c->replay = cfg->replay;
    c->replay_ctx = cfg->replay_ctx;
    c->list_bundles = cfg->list_bundles;
    c->list_bundles_ctx = cfg->list_bundles_ctx;
    c->focus = cfg->focus;
    c->h_version = dup_or_null(cfg->hello.version);
    c->h_backend = dup_or_null(cfg->hello.backend);
    c->h_source = dup_or_null(cfg->hello.source);
    c->hello.version = c->h_version;
    c->hello.backend = c->h_backend;
    c->hello.source = c->h_source;
    c->preview_width = cfg->hello.preview.width;
    c->preview_fps = cfg->hello.preview.fps;
    if (trk_workq_create(sizeof(struct file_job), MAX_JOBS, file_worker, c, &c->files)) {
        trk_control_destroy(&c);
        return TRK_ENOMEM;
    }
    pthread_mutex_lock(&c->lock);
    publish_locked(c, false);
    pthread_mutex_unlock(&c->lock);
    *out = c;
    return 0;
}

void trk_control_destroy(struct trk_control **pc)
{
    if (!pc || !*pc) return;
    struct trk_control *c = *pc;
    *pc = NULL;
    trk_workq_destroy(&c->files);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->frames_lock);
    for (int i = 0; i < TRK_CONTROL_KEPT_FRAMES; i++)
        free(c->kept[i].buf);
    for (int i = 0; i < TRK_CONTROL_HELD_FRAMES; i++)
        free(c->held[i].buf);
    free(c->h_version);
    free(c->h_backend);
    free(c->h_source);
    free(c);
}

/* ------------------------------------------------------------ requests */

/* Reads an integer field; returns 1 when present and in [lo, hi], 0 when
 * absent, -1 after replying with an error. */
static int get_int(struct trk_control *c, const struct request *r, const char *key, long long lo,
                   long long hi, long long *v)
{
    json_t *j = json_object_get(r->msg, key);
    if (!j) return 0;
    if (!json_is_integer(j)) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "\"%s\" must be an integer", key);
        return -1;
    }
    *v = json_integer_value(j);
    if (*v < lo || *v > hi) {
        refuse(c, r, TRK_MSG_OUT_OF_RANGE, "\"%s\" = %lld is out of range %lld..%lld", key, *v, lo,
               hi);
        return -1;
    }
    return 1;
}

/* The object a request names by "object_id" or "name"; -1 after an error
 * reply. Lock held. */
static int find_target(struct trk_control *c, const struct request *r)
{
    json_t *name = json_object_get(r->msg, "name");
    long long k;
    int got = get_int(c, r, "object_id", 0, TRK_MAX_OBJECTS, &k);
    if (got < 0) return -1;
    if (got == 1) {
        if (k >= c->objs.n) {
            refuse(c, r, TRK_MSG_NOT_FOUND, "no object with object_id %lld (%d objects)", k,
                   c->objs.n);
            return -1;
        }
        return (int)k;
    }
    if (!name) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "\"object_id\" (integer) or \"name\" is required");
        return -1;
    }
    if (!json_is_string(name)) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "\"name\" must be a string");
        return -1;
    }
    int i = trk_objects_find(&c->objs, json_string_value(name));
    if (i < 0)
        refuse(c, r, TRK_MSG_NOT_FOUND, "no object named \"%.80s\"", json_string_value(name));
    return i;
}

/* Parses o, msg[key], as one object; false after an error reply. */
static bool parse_value(struct trk_control *c, const struct request *r, const char *key,
                        const json_t *o, struct trk_object_def *def, uint8_t color[3],
                        char file[TRK_CLASS_FILE_MAX])
{
    if (!json_is_object(o)) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "\"%s\" must be an object", key);
        return false;
    }
    char why[256];
    if (trk_objects_parse_object_file(o, def, color, file, why, sizeof(why))) {
        refuse(c, r, TRK_MSG_INVALID_OBJECT, "%s: %s", key, why);
        return false;
    }
    return true;
}

/* Parses msg["object"] as one object; false after an error reply. */
static bool parse_object(struct trk_control *c, const struct request *r, struct trk_object_def *def,
                         uint8_t color[3], char file[TRK_CLASS_FILE_MAX])
{
    return parse_value(c, r, "object", json_object_get(r->msg, "object"), def, color, file);
}

/* Mask views that follow the object called from now show it as to. */
static void rename_views(struct trk_control *c, const char *from, const char *to)
{
    for (int i = 0; i < TRK_CONTROL_VIEWS; i++)
        if (c->viewers[i].kind == MASK_OBJECT && !strcmp(c->viewers[i].name, from))
            snprintf(c->viewers[i].name, TRK_NAME_MAX, "%.*s", TRK_NAME_MAX - 1, to);
}

static bool name_taken(const struct trk_objects *o, const char *name, int except)
{
    for (int i = 0; i < o->n; i++)
        if (i != except && !strcmp(o->def[i].name, name)) return true;
    return false;
}

/* The reply code for a set the objects loader rejected. */
static int config_code(const struct trk_config_error *e)
{
    switch (e->kind) {
    case TRK_CONFIG_DUPLICATE: return TRK_MSG_DUPLICATE_NAME;
    case TRK_CONFIG_TOO_MANY: return TRK_MSG_TOO_MANY_OBJECTS;
    case TRK_CONFIG_INVALID: break;
    }
    return TRK_MSG_INVALID_OBJECT;
}

/* Every handler below runs with the lock held and replies exactly once. */

static void handle_get_objects(struct trk_control *c, const struct request *r)
{
    struct trk_buf b = { 0 };
    send_reply(c, r->client, &b,
               trk_msg_objects_patterns(&b, r->id, c->objs.def, c->objs.n, color_strings(c),
                                        &c->objs.calib, c->objs.patterns, c->objs.n_patterns));
}

/* The message carries no "illumination" and an object's "adapt" only if
 * the client sent one: the set keeps its own, each adapt by name. */
static void carry_light(struct trk_objects *dst, const struct trk_objects *src)
{
    dst->light.illum = src->light.illum;
    for (int i = 0; i < dst->n; i++) {
        const int j = trk_objects_find(src, dst->def[i].name);
        if (!dst->light.adapt[i].on && j >= 0 && src->def[j].space == dst->def[i].space)
            dst->light.adapt[i] = src->light.adapt[j];
    }
}

/* A set from a message names its classes by file but has no tables (no
 * folder to read): each class object keeps the table of the current
 * set's class object of the same file, if any (else its class is empty). */
static void carry_classes(struct trk_objects *dst, const struct trk_objects *src)
{
    for (int k = 0; k < dst->n_classes; k++)
        for (int j = 0; j < src->n_classes; j++)
            if (!strcmp(dst->classes[k].file, src->classes[j].file))
                memcpy(dst->classes[k].bits, src->classes[j].bits, TRK_CLASS_BYTES);
}

static void handle_set_objects(struct trk_control *c, const struct request *r)
{
    json_t *arr = json_object_get(r->msg, "objects");
    /* "calibration": an object replaces the set's (checked as in a file),
     * null removes it, absent keeps it. */
    json_t *cal = json_object_get(r->msg, "calibration");
    /* Without "objects" only the calibration changes: the objects are the
     * daemon's own, so nothing a client did not send is lost. */
    json_t *current = !arr && cal ? trk_objects_to_value(&c->objs) : NULL;
    if (current) arr = json_object_get(current, "objects");
    if (!json_is_array(arr)) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "\"objects\" must be an array");
        json_decref(current);
        return;
    }
    json_t *root = json_pack("{sO}", "objects", arr);
    json_decref(current);
    if (root && cal && !json_is_null(cal) && json_object_set(root, "calibration", cal)) {
        json_decref(root);
        root = NULL;
    }
    struct trk_objects *n = malloc(sizeof(*n));
    struct trk_config_error cerr;
    int err = root && n ? trk_objects_from_json(root, "set_objects", n, &cerr) : TRK_ENOMEM;
    /* The message carries no patterns: the set keeps its own, over the
     * new objects by name (refused when one names an object gone). */
    char why[256];
    if (!err && trk_objects_carry_patterns(n, &c->objs, why, sizeof(why))) {
        refuse(c, r, TRK_MSG_INVALID_OBJECT, "%s", why);
    } else if (!err) {
        /* The message carries no pre-filter or camera section: the set
         * keeps its own. */
        n->prefilter_sigma = c->objs.prefilter_sigma;
        n->n_camera = c->objs.n_camera;
        memcpy(n->camera, c->objs.camera, sizeof(n->camera));
        if (!cal) n->calib = c->objs.calib;
        carry_light(n, &c->objs);
        carry_classes(n, &c->objs);
        c->objs = *n;
        changed_locked(c);
        ack_int(c, r, "count", n->n);
    } else if (err == TRK_ENOMEM) {
        refuse(c, r, TRK_MSG_IO_ERROR, "out of memory");
    } else {
        refuse(c, r, config_code(&cerr), "%s", cerr.msg);
    }
    json_decref(root);
    free(n);
}

/* Whether the set's patterns still hold with def as object k (a colour
 * they use keeps its blobs); else refuses r and says which. */
static bool patterns_keep(struct trk_control *c, const struct request *r, int k,
                          const struct trk_object_def *def)
{
    struct trk_objects *t = malloc(sizeof(*t));
    char why[256] = "out of memory";
    if (t) {
        *t = c->objs;
        t->def[k] = *def;
        if (k == t->n) t->n++;
    }
    bool ok = t && trk_objects_validate(t, why, sizeof(why)) == 0;
    free(t);
    if (!ok) refuse(c, r, TRK_MSG_INVALID_OBJECT, "%s", why);
    return ok;
}

/* Makes def object k (k == n appends one) unless another object has its
 * name. */
static void store_object(struct trk_control *c, const struct request *r, int k,
                         const struct trk_object_def *given, const uint8_t color[3],
                         const char *file)
{
    struct trk_object_def cls_def = *given, *def = &cls_def;
    if (name_taken(&c->objs, def->name, k)) {
        refuse(c, r, TRK_MSG_DUPLICATE_NAME, "an object named \"%s\" exists", def->name);
        return;
    }
    if (def->space == TRK_SPACE_CLASS) {
        /* Its file's table: kept when the set has it, else a new clear one
         * (painted from the page, saved beside the objects file). */
        char why[256];
        const int slot = trk_objects_class_slot(&c->objs, k, file, why, sizeof why);
        if (slot < 0) {
            refuse(c, r, TRK_MSG_INVALID_OBJECT, "%s", why);
            return;
        }
        def->cls_slot = (uint8_t)slot;
        def->cls = c->objs.classes[slot].bits;
    }
    /* The set as it would be, against the frame limits (config/objects.h). */
    struct trk_object_def *t = malloc(sizeof(*t) * (size_t)(c->objs.n + 1));
    if (!t) {
        refuse(c, r, TRK_MSG_IO_ERROR, "out of memory");
        return;
    }
    memcpy(t, c->objs.def, sizeof(*t) * (size_t)c->objs.n);
    t[k] = *def;
    char why[256];
    int over = trk_objects_check_limits(t, c->objs.n + (k == c->objs.n), NULL, why, sizeof(why));
    free(t);
    if (over) {
        refuse(c, r, TRK_MSG_TOO_MANY_OBJECTS, "%s", why);
        return;
    }
    if (c->objs.n_patterns > 0 && !patterns_keep(c, r, k, def)) return;
    if (k == c->objs.n) c->objs.light.adapt[c->objs.n++] = (struct trk_adapt_cfg){ 0 };
    rename_views(c, c->objs.def[k].name, def->name);
    /* An edit keeps the object's "adapt"; one of another space loses it
     * (its bounds are per channel of the old space). */
    if (def->space != c->objs.def[k].space) c->objs.light.adapt[k] = (struct trk_adapt_cfg){ 0 };
    c->objs.def[k] = *def;
    memcpy(c->objs.color[k], color, 3);
    changed_locked(c);
    ack_int(c, r, "object_id", k);
}

static void handle_add_object(struct trk_control *c, const struct request *r)
{
    struct trk_object_def def;
    uint8_t color[3];
    char file[TRK_CLASS_FILE_MAX];
    if (!parse_object(c, r, &def, color, file)) return;
    if (c->objs.n >= TRK_MAX_OBJECTS) {
        refuse(c, r, TRK_MSG_TOO_MANY_OBJECTS, "already %d objects (the most)", c->objs.n);
        return;
    }
    store_object(c, r, c->objs.n, &def, color, file);
}

static void handle_update_object(struct trk_control *c, const struct request *r)
{
    int k = find_target(c, r);
    if (k < 0) return;
    struct trk_object_def def;
    uint8_t color[3];
    char file[TRK_CLASS_FILE_MAX];
    json_t *changes = json_object_get(r->msg, "changes");
    if (!changes) {
        if (parse_object(c, r, &def, color, file)) store_object(c, r, k, &def, color, file);
        return;
    }
    if (!json_is_object(changes)) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "\"changes\" must be an object");
        return;
    }
    /* Only the keys sent change: the rest are the daemon's own (a default
     * colour stays default, following the box). */
    json_t *merged = trk_objects_object_value(&c->objs, k, false);
    if (!merged || json_object_update(merged, changes)) {
        refuse(c, r, TRK_MSG_IO_ERROR, "out of memory");
    } else if (parse_value(c, r, "changes", merged, &def, color, file)) {
        store_object(c, r, k, &def, color, file);
    }
    json_decref(merged);
}

static void handle_rename_object(struct trk_control *c, const struct request *r)
{
    int k = find_target(c, r);
    if (k < 0) return;
    json_t *nn = json_object_get(r->msg, "new_name");
    if (!json_is_string(nn)) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "\"new_name\" must be a string");
        return;
    }
    const char *s = json_string_value(nn);
    size_t len = json_string_length(nn);
    if (len >= TRK_NAME_MAX || strlen(s) != len) {
        refuse(c, r, TRK_MSG_INVALID_OBJECT, "new_name must be 1..%d bytes without NUL",
               TRK_NAME_MAX - 1);
        return;
    }
    if (name_taken(&c->objs, s, k)) {
        refuse(c, r, TRK_MSG_DUPLICATE_NAME, "an object named \"%s\" exists", s);
        return;
    }
    /* The renamed set is checked whole, by the loader's rules, before it is
     * taken. */
    struct trk_objects *t = malloc(sizeof(*t));
    if (!t) {
        refuse(c, r, TRK_MSG_IO_ERROR, "out of memory");
        return;
    }
    *t = c->objs;
    memcpy(t->def[k].name, s, len + 1);
    char why[256];
    if (trk_objects_validate(t, why, sizeof(why))) {
        refuse(c, r, TRK_MSG_INVALID_OBJECT, "%s", why);
    } else {
        rename_views(c, c->objs.def[k].name, s);
        c->objs = *t;
        changed_locked(c);
        ack_int(c, r, "object_id", k);
    }
    free(t);
}

static void handle_remove_object(struct trk_control *c, const struct request *r)
{
    int k = find_target(c, r);
    if (k < 0) return;
    struct trk_objects *o = &c->objs;
    if (o->n_patterns > 0) {
        /* A pattern's colours are object indices: the ones after k move. */
        struct trk_objects *t = malloc(sizeof(*t));
        char why[256] = "out of memory";
        int err = TRK_ENOMEM;
        if (t) {
            *t = *o;
            memmove(&t->def[k], &t->def[k + 1], (t->n - k - 1) * sizeof(t->def[0]));
            t->n--;
            err = trk_objects_carry_patterns(t, o, why, sizeof(why));
        }
        if (!err) memcpy(o->patterns, t->patterns, sizeof(o->patterns));
        free(t);
        if (err) {
            refuse(c, r, err == TRK_ENOMEM ? TRK_MSG_IO_ERROR : TRK_MSG_INVALID_OBJECT, "%s", why);
            return;
        }
    }
    memmove(&o->def[k], &o->def[k + 1], (o->n - k - 1) * sizeof(o->def[0]));
    memmove(&o->color[k], &o->color[k + 1], (o->n - k - 1) * sizeof(o->color[0]));
    memmove(&o->light.adapt[k], &o->light.adapt[k + 1], (o->n - k - 1) * sizeof(o->light.adapt[0]));
    o->n--;
    memset(&o->def[o->n], 0, sizeof(o->def[0]));
    memset(&o->color[o->n], 0, sizeof(o->color[0]));
    memset(&o->light.adapt[o->n], 0, sizeof(o->light.adapt[0]));
    changed_locked(c);
    struct trk_buf b = { 0 };
    send_reply(c, r->client, &b, trk_msg_ack(&b, "remove_object", r->id, false));
}

/* msg[key], when present, as up to max object names into names; -1
 * after an error reply, else how many (0 when absent). */
static int name_list(struct trk_control *c, const struct request *r, const char *key,
                     const char **names, unsigned max)
{
    json_t *a = json_object_get(r->msg, key);
    if (!a) return 0;
    bool ok = json_is_array(a) && json_array_size(a) >= 1 && json_array_size(a) <= max;
    for (size_t i = 0; ok && i < json_array_size(a); i++) {
        names[i] = json_string_value(json_array_get(a, i));
        ok = names[i] != NULL;
    }
    if (!ok) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "\"%s\" must be an array of 1..%u object names", key, max);
        return -1;
    }
    return (int)json_array_size(a);
}

/* A pattern's colours by object name (PROTOCOL.md section 5, set_pattern):
 * "center" and "dots" (the distinct dot colours) of a centre + dots
 * pattern, "colors" of a colour code; checked as the objects file checks
 * them, taken whole or not at all. */
static void handle_set_pattern(struct trk_control *c, const struct request *r)
{
    json_t *name = json_object_get(r->msg, "name");
    json_t *centre = json_object_get(r->msg, "center");
    if (!json_is_string(name) || (centre && !json_is_string(centre))) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "\"%s\" must be a string", centre ? "center" : "name");
        return;
    }
    int k = c->objs.n_patterns - 1;
    while (k >= 0 && strcmp(c->objs.patterns[k].name, json_string_value(name)))
        k--;
    if (k < 0) {
        refuse(c, r, TRK_MSG_NOT_FOUND, "no pattern named \"%.80s\"", json_string_value(name));
        return;
    }
    bool dots = c->objs.patterns[k].kind == TRK_PATTERN_DOTS;
    const char *key = dots ? "dots" : "colors";
    if (json_object_get(r->msg, dots ? "colors" : "dots")) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "pattern \"%s\" is %s: its colours are \"%s\"",
               c->objs.patterns[k].name, dots ? "centre + dots" : "a colour code", key);
        return;
    }
    const char *names[TRK_PATTERN_SLOTS_MAX];
    int n = name_list(c, r, key, names, TRK_PATTERN_SLOTS_MAX);
    if (n < 0) return;
    if (!n && !centre) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "give \"%s\"%s", key, dots ? " or \"center\"" : "");
        return;
    }
    char why[256];
    if (trk_objects_set_pattern(&c->objs, k, centre ? json_string_value(centre) : NULL,
                                n ? names : NULL, (unsigned)n, key, why, sizeof(why))) {
        refuse(c, r, TRK_MSG_INVALID_OBJECT, "%s", why);
        return;
    }
    changed_locked(c);
    struct trk_buf b = { 0 };
    send_reply(c, r->client, &b, trk_msg_ack(&b, "set_pattern", r->id, false));
}

/* Saving writes and fsyncs a file: the worker does it, from a copy of the
 * set as it is now. */
static void handle_save_objects(struct trk_control *c, const struct request *r)
{
    if (!c->save) {
        refuse(c, r, TRK_MSG_NO_FILE, "the daemon has no objects file");
        return;
    }
    /* "part": write only that section into the file as it is on disk. */
    enum save_part part = PART_WHOLE;
    json_t *p = json_object_get(r->msg, "part");
    if (p && !json_is_string(p)) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "\"part\" must be a string: \"calibration\" or \"camera\"");
        return;
    }
    for (int i = PART_CALIBRATION; p && i <= PART_CAMERA; i++)
        if (!strcmp(json_string_value(p), part_names[i])) part = i;
    if (p && !part) {
        refuse(c, r, TRK_MSG_OUT_OF_RANGE,
               "\"part\" must be \"calibration\" or \"camera\" (without it: the whole set)");
        return;
    }
    struct trk_objects *snapshot = malloc(sizeof(*snapshot));
    if (!snapshot) {
        refuse(c, r, TRK_MSG_IO_ERROR, "out of memory");
        return;
    }
    *snapshot = c->objs;
    /* The camera section as clients have set it. */
    if (c->camera) trk_camctl_section(c->camera, snapshot->camera, &snapshot->n_camera);
    queue_job(c, r, part, snapshot);
}

int trk_control_light_frame(struct trk_control *c, const struct trk_object_def *defs, int n,
                            const uint32_t means_q8[3], bool has_means, bool *reset)
{
    int k = 0;
    if (!c) return 0;
    pthread_mutex_lock(&c->lock);
    c->n_light = n;
    for (int i = 0; i < n; i++) {
        memcpy(c->light_lo[i], defs[i].lo, sizeof c->light_lo[i]);
        memcpy(c->light_hi[i], defs[i].hi, sizeof c->light_hi[i]);
        reset[i] = c->reset_asked[i];
        k += reset[i];
        c->reset_asked[i] = false;
    }
    memcpy(c->light_means, means_q8, sizeof c->light_means);
    c->light_has_means = has_means;
    pthread_mutex_unlock(&c->lock);
    return k;
}

/* The object a range request names ("name" or "object_id"), -1 after a
 * refusal, or TRK_MAX_OBJECTS for every object when it names none. */
static int range_target(struct trk_control *c, const struct request *r)
{
    if (!json_object_get(r->msg, "name") && !json_object_get(r->msg, "object_id"))
        return TRK_MAX_OBJECTS;
    return find_target(c, r);
}

/* reset_range: the adaptation of one object (or all) starts over from the
 * (compensated) taught box on the next frame. */
static void handle_reset_range(struct trk_control *c, const struct request *r)
{
    const int k = range_target(c, r);
    if (k < 0) return;
    for (int i = 0; i < c->objs.n; i++)
        if (k == TRK_MAX_OBJECTS || k == i) c->reset_asked[i] = true;
    struct trk_buf b = { 0 };
    send_reply(c, r->client, &b, trk_msg_ack(&b, "reset_range", r->id, false));
}

/* keep_range: the boxes in use become the taught ones, every object at
 * once (with "illumination" they are relative to the reference's means,
 * which are kept with them); the set is published; "save": true also
 * writes it as save_objects would (its reply follows). */
static void handle_keep_range(struct trk_control *c, const struct request *r)
{
    json_t *save = json_object_get(r->msg, "save");
    if (save && !json_is_boolean(save)) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "\"save\" must be true or false");
        return;
    }
    if (c->n_light != c->objs.n || c->objs.n == 0) {
        refuse(c, r, TRK_MSG_NOT_FOUND,
               "no adapted ranges to keep (the set has no \"illumination\" or \"adapt\", or "
               "no frame has been processed with it yet)");
        return;
    }
    if (json_is_true(save) && !c->save) {
        refuse(c, r, TRK_MSG_NO_FILE, "the daemon has no objects file");
        return;
    }
    for (int i = 0; i < c->objs.n; i++) {
        memcpy(c->objs.def[i].lo, c->light_lo[i], sizeof c->light_lo[i]);
        memcpy(c->objs.def[i].hi, c->light_hi[i], sizeof c->light_hi[i]);
    }
    struct trk_illum_cfg *il = &c->objs.light.illum;
    if (il->reference != TRK_ILLUM_OFF && c->light_has_means) {
        memcpy(il->means_q8, c->light_means, sizeof il->means_q8);
        il->has_means = true;
    }
    c->n_light = 0; /* until the processing thread reports on the kept set */
    changed_locked(c);
    struct trk_buf b = { 0 };
    send_reply(c, r->client, &b, trk_msg_ack(&b, "keep_range", r->id, false));
    if (json_is_true(save)) {
        struct request rs = *r; /* the file worker answers as save_objects */
        rs.type = TRK_CTL_SAVE_OBJECTS;
        handle_save_objects(c, &rs);
    }
}

static void handle_reload_objects(struct trk_control *c, const struct request *r)
{
    if (!c->save) {
        refuse(c, r, TRK_MSG_NO_FILE, "no objects file to reload (start with --objects)");
        return;
    }
    queue_job(c, r, PART_WHOLE, NULL);
}

/* The frame and the pixels a sample (or paint_class) request reads into
 * *q: false after an error reply. */
static bool rect_request(struct trk_control *c, const struct request *r, struct sample_req *q0)
{
    struct sample_req q = *q0;
    q.radius = -1;
    q.client = r->client;
    snprintf(q.id, sizeof(q.id), "%s", r->id);
    int fw = c->hello.width, fh = c->hello.height;
    long long x, y, w = 0, h = 0, v = 2;
    int rx = get_int(c, r, "x", 0, fw > 0 ? fw - 1 : 0, &x);
    int ry = rx < 0 ? -1 : get_int(c, r, "y", 0, fh > 0 ? fh - 1 : 0, &y);
    if (ry < 0) return false;
    if (!rx || !ry) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "\"x\" and \"y\" (integers) are required");
        return false;
    }
    int rw = get_int(c, r, "w", 1, SAMPLE_SIDE_MAX, &w);
    int rh = rw < 0 ? -1 : get_int(c, r, "h", 1, SAMPLE_SIDE_MAX, &h);
    if (rh < 0) return false;
    if (rw != rh) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "\"w\" and \"h\" go together");
        return false;
    }
    if (!rw && get_int(c, r, "radius", 0, SAMPLE_RADIUS_MAX, &v) < 0) return false;
    long long seq;
    int rs = get_int(c, r, "seq", 0, INT64_MAX, &seq);
    if (rs < 0) return false;
    q.by_seq = rs == 1;
    q.seq = q.by_seq ? (uint64_t)seq : 0;
    q.x = (int)x, q.y = (int)y;
    if (rw) { /* a rectangle from (x, y) */
        q.x0 = q.x, q.y0 = q.y;
        q.x1 = (int)(x + w - 1), q.y1 = (int)(y + h - 1);
    } else {
        q.radius = (int)v;
        q.x0 = q.x - q.radius, q.y0 = q.y - q.radius;
        q.x1 = q.x + q.radius, q.y1 = q.y + q.radius;
    }
    if (q.x0 < 0) q.x0 = 0;
    if (q.y0 < 0) q.y0 = 0;
    if (fw > 0 && q.x1 > fw - 1) q.x1 = fw - 1;
    if (fh > 0 && q.y1 > fh - 1) q.y1 = fh - 1;
    int mine = 0;
    for (int i = 0; i < c->n_pending; i++)
        mine += c->pending[i].client == r->client;
    if (mine == MAX_PENDING_PER_CLIENT || c->n_pending == MAX_PENDING) {
        refuse(c, r, TRK_MSG_BUSY,
               "too many sample requests pending (%d of yours, %d in all); "
               "try again after a reply",
               mine, c->n_pending);
        return false;
    }
    *q0 = q;
    return true;
}

static void handle_sample(struct trk_control *c, const struct request *r)
{
    struct sample_req q = { 0 };
    if (rect_request(c, r, &q)) c->pending[c->n_pending++] = q;
}

/* The class object a paint_class or clear_class names: its index, or -1
 * after an error reply. */
static int class_target(struct trk_control *c, const struct request *r)
{
    const int k = find_target(c, r);
    if (k >= 0 && c->objs.def[k].space != TRK_SPACE_CLASS) {
        refuse(c, r, TRK_MSG_INVALID_OBJECT,
               "\"%s\" is not a class object (add one with \"class\": \"FILE.lut\")",
               c->objs.def[k].name);
        return -1;
    }
    return k;
}

/* paint_class: the rectangle (x, y, w, h of frame seq, as a sample's) is
 * queued for the sampler, which adds its pixels' colour cells to the
 * object's table ("remove": true takes them out). */
static void handle_paint_class(struct trk_control *c, const struct request *r)
{
    const int k = class_target(c, r);
    if (k < 0) return;
    json_t *rm = json_object_get(r->msg, "remove");
    if (rm && !json_is_boolean(rm)) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "\"remove\" must be true or false");
        return;
    }
    if (!json_object_get(r->msg, "w")) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "\"w\" and \"h\" (the rectangle) are required");
        return;
    }
    struct sample_req q = { .paint = json_is_true(rm) ? -1 : 1 };
    snprintf(q.obj, sizeof q.obj, "%s", c->objs.def[k].name);
    if (rect_request(c, r, &q)) c->pending[c->n_pending++] = q;
}

/* clear_class: the object's table emptied (its file changes at the next
 * save). */
static void handle_clear_class(struct trk_control *c, const struct request *r)
{
    const int k = class_target(c, r);
    if (k < 0) return;
    memset(c->objs.classes[c->objs.def[k].cls_slot].bits, 0, TRK_CLASS_BYTES);
    changed_locked(c);
    ack_int(c, r, "object_id", k);
}

/* The client's mask view entry (-1: none). Lock held. */
static int viewer_of(const struct trk_control *c, uint64_t client)
{
    for (int i = 0; i < TRK_CONTROL_VIEWS; i++)
        if (c->viewers[i].client == client) return i;
    return -1;
}

/* msg["mask"] into *v: unchanged when absent, null = none, a name = that
 * object, an object {"space","lo","hi"} = that range (a candidate before
 * it is added). false after an error reply. */
static bool get_mask(struct trk_control *c, const struct request *r, struct viewer *v)
{
    json_t *m = json_object_get(r->msg, "mask");
    if (!m) return true;
    if (json_is_null(m)) {
        v->kind = MASK_NONE;
        return true;
    }
    if (json_is_object(m)) {
        /* Checked by the objects file's rules, under a name of our own. */
        json_t *o = json_deep_copy(m);
        uint8_t color[3];
        char file[TRK_CLASS_FILE_MAX]; /* a class range has no table here: shows nothing */
        bool ok = o && !json_object_set_new(o, "name", json_string("mask")) &&
                  parse_value(c, r, "mask", o, &v->box, color, file);
        if (!o) refuse(c, r, TRK_MSG_IO_ERROR, "out of memory");
        json_decref(o);
        if (ok) v->kind = MASK_BOX;
        return ok;
    }
    if (!json_is_string(m)) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "\"mask\" must be an object name, a range or null");
        return false;
    }
    int k = trk_objects_find(&c->objs, json_string_value(m));
    if (k < 0) {
        refuse(c, r, TRK_MSG_NOT_FOUND, "no object named \"%.80s\"", json_string_value(m));
        return false;
    }
    v->kind = MASK_OBJECT;
    snprintf(v->name, sizeof(v->name), "%s", c->objs.def[k].name);
    return true;
}

/* msg["edges"] (bool), msg["fit"] ("scale" or "carve") and msg["size"]
 * ([W, H], the screen the carved view fits: its aspect) into *v; absent
 * keys keep what v had. false after an error reply. */
static bool get_view_opts(struct trk_control *c, const struct request *r, struct viewer *v)
{
    json_t *e = json_object_get(r->msg, "edges"), *fit = json_object_get(r->msg, "fit");
    json_t *size = json_object_get(r->msg, "size");
    if (e && !json_is_boolean(e)) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "\"edges\" must be true or false");
        return false;
    }
    const char *f = fit ? json_string_value(fit) : NULL;
    if (fit && (!f || (strcmp(f, "scale") && strcmp(f, "carve")))) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "\"fit\" must be \"scale\" or \"carve\"");
        return false;
    }
    json_t *sw = json_array_get(size, 0), *sh = json_array_get(size, 1);
    if (size && (!json_is_array(size) || json_array_size(size) != 2 || !json_is_integer(sw) ||
                 !json_is_integer(sh))) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "\"size\" must be [width, height] in pixels");
        return false;
    }
    if (size && (json_integer_value(sw) < 1 || json_integer_value(sw) > TRK_SEAM_MAX_SIDE ||
                 json_integer_value(sh) < 1 || json_integer_value(sh) > TRK_SEAM_MAX_SIDE)) {
        refuse(c, r, TRK_MSG_OUT_OF_RANGE, "\"size\" = [%lld, %lld] is out of range 1..%d",
               (long long)json_integer_value(sw), (long long)json_integer_value(sh),
               TRK_SEAM_MAX_SIDE);
        return false;
    }
    bool carve = f ? !strcmp(f, "carve") : v->carve;
    if (carve && !size && !v->fit_w) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "\"fit\": \"carve\" needs \"size\": [width, height]");
        return false;
    }
    if (e) v->edges = json_is_true(e);
    v->carve = carve;
    if (size) v->fit_w = (int)json_integer_value(sw), v->fit_h = (int)json_integer_value(sh);
    return true;
}

/* The held frame of client (-1: none). frames_lock held. */
static int held_of(const struct trk_control *c, uint64_t client)
{
    for (int i = 0; i < TRK_CONTROL_HELD_FRAMES; i++)
        if (c->held[i].valid && c->held[i].client == client) return i;
    return -1;
}

/* msg["hold"]: a seq holds that kept frame for the client (instead of the
 * one it held), null lets it go. *seq: the frame held after, -1 none.
 * false after an error reply. Lock held. */
static bool hold_frame(struct trk_control *c, const struct request *r, long long *seq)
{
    json_t *j = json_object_get(r->msg, "hold");
    long long want = -1;
    if (j && !json_is_null(j) && get_int(c, r, "hold", 0, INT64_MAX, &want) < 0) return false;
    bool ok = true;
    pthread_mutex_lock(&c->frames_lock);
    int h = held_of(c, r->client);
    if (!j) {
        want = h >= 0 ? (long long)c->held[h].seq : -1;
    } else if (want < 0) {
        if (h >= 0) c->held[h].valid = false;
    } else if (h < 0 || c->held[h].seq != (uint64_t)want) {
        int k = -1;
        for (int i = 0; i < TRK_CONTROL_KEPT_FRAMES; i++)
            if (c->kept[i].valid && c->kept[i].seq == (uint64_t)want) k = i;
        for (int i = 0; h < 0 && i < TRK_CONTROL_HELD_FRAMES; i++)
            if (!c->held[i].valid) h = i;
        if (k < 0) {
            refuse(c, r, TRK_MSG_NOT_FOUND,
                   "frame %lld is no longer kept (the last %d previewed frames are)", want,
                   TRK_CONTROL_KEPT_FRAMES);
            ok = false;
        } else if (h < 0) {
            refuse(c, r, TRK_MSG_BUSY, "%d clients hold a frame already (the most)",
                   TRK_CONTROL_HELD_FRAMES);
            ok = false;
        } else {
            /* The copy changes places: no pixels are copied here. */
            struct kept t = c->held[h];
            c->held[h] = c->kept[k];
            c->held[h].client = r->client;
            c->kept[k] = t;
            c->kept[k].valid = false;
        }
    }
    pthread_mutex_unlock(&c->frames_lock);
    *seq = want;
    return ok;
}

static void handle_preview(struct trk_control *c, const struct request *r)
{
    long long w = c->preview_width;
    int fw = c->hello.width > 16 ? c->hello.width : 4096;
    if (get_int(c, r, "width", 16, fw, &w) < 0) return;
    json_t *fps = json_object_get(r->msg, "fps");
    double f = c->preview_fps;
    if (fps) {
        if (!json_is_number(fps)) {
            refuse(c, r, TRK_MSG_BAD_FIELD, "\"fps\" must be a number");
            return;
        }
        f = json_number_value(fps);
        if (!(f >= 0.1 && f <= 60)) {
            refuse(c, r, TRK_MSG_OUT_OF_RANGE, "\"fps\" = %g is out of range 0.1..60", f);
            return;
        }
    }
    /* The mask view is this client's own: an entry while it is on. */
    int i = viewer_of(c, r->client);
    struct viewer v = i >= 0 ? c->viewers[i] : (struct viewer){ .client = r->client };
    if (!get_mask(c, r, &v) || !get_view_opts(c, r, &v)) return;
    if (i < 0 && own_view(&v)) {
        i = viewer_of(c, 0);
        if (i < 0) {
            refuse(c, r, TRK_MSG_BUSY,
                   "%d clients watch a view of their own already (mask, edges or carve; the most)",
                   TRK_CONTROL_VIEWS);
            return;
        }
    }
    long long held;
    if (!hold_frame(c, r, &held)) return;
    c->preview_width = (int)w;
    c->preview_fps = f;
    if (i >= 0) {
        c->viewers[i] = own_view(&v) ? v : (struct viewer){ 0 };
        if (c->out.set_view) c->out.set_view(c->out.ctx, r->client, own_view(&v) ? i + 1 : 0);
    }
    publish_locked(c, false);
    struct trk_buf b = { 0 };
    struct trk_msg_view mv = { .name = v.kind == MASK_OBJECT ? v.name : NULL,
                               .box = v.kind == MASK_BOX ? &v.box : NULL,
                               .hold = held,
                               .edges = v.edges,
                               .carve = v.carve,
                               .fit_w = v.fit_w,
                               .fit_h = v.fit_h };
    send_reply(c, r->client, &b, trk_msg_ack_preview_view(&b, r->id, (int)w, f, &mv));
}

void trk_control_client_closed(struct trk_control *c, uint64_t client)
{
    pthread_mutex_lock(&c->lock);
    int i = viewer_of(c, client);
    if (i >= 0 && client) c->viewers[i] = (struct viewer){ 0 };
    pthread_mutex_lock(&c->frames_lock);
    int h = held_of(c, client);
    if (h >= 0) c->held[h].valid = false;
    pthread_mutex_unlock(&c->frames_lock);
    pthread_mutex_unlock(&c->lock);
}

/* get_camera and set_camera: the camera module answers them. */
static void handle_camera(struct trk_control *c, const struct request *r)
{
    if (!c->camera)
        refuse(c, r, TRK_MSG_UNSUPPORTED, "this daemon has no camera controls");
    else
        trk_camctl_request(c->camera, r->client, r->id, r->type == TRK_CTL_SET_CAMERA, r->msg);
}

/* save_rewind: the rewind buffer (--rewind) is saved by its own thread; the
 * ack names the bundle's folder at once. */
static void handle_save_rewind(struct trk_control *c, const struct request *r)
{
    char dir[4200], why[700] = "--rewind is off";
    int err = c->save_rewind
                  ? c->save_rewind(c->save_rewind_ctx, dir, sizeof(dir), why, sizeof(why))
                  : TRK_ENODEV;
    if (err == TRK_ENODEV) {
        refuse(c, r, TRK_MSG_UNSUPPORTED, "%s (start trackd with --rewind SECONDS)", why);
    } else if (err) {
        refuse(c, r, err == TRK_ENOMEM ? TRK_MSG_IO_ERROR : TRK_MSG_BUSY, "%s", why);
    } else {
        struct trk_buf b = { 0 };
        send_reply(c, r->client, &b, trk_msg_ack_str(&b, "save_rewind", r->id, "dir", dir));
    }
}

/* replay_pause, replay_play, replay_step {delta}, replay_seek {frame},
 * replay_run {from, to}: to the replay's transport; the ack names the frame
 * it goes to (run: its first counted frame). */
static void handle_replay(struct trk_control *c, const struct request *r)
{
    static const char *const keys[][2] = {
        [TRK_CTL_REPLAY_STEP - TRK_CTL_REPLAY_PAUSE] = { "delta", NULL },
        [TRK_CTL_REPLAY_SEEK - TRK_CTL_REPLAY_PAUSE] = { "frame", NULL },
        [TRK_CTL_REPLAY_RUN - TRK_CTL_REPLAY_PAUSE] = { "from", "to" },
    };
    if (!c->replay) {
        refuse(c, r, TRK_MSG_UNSUPPORTED,
               "not a replay: the transport works while trackd plays a bundle (--replay DIR)");
        return;
    }
    long long v[2] = { 0, 0 }, frame = 0;
    for (int i = 0; i < 2; i++) {
        const char *key = keys[r->type - TRK_CTL_REPLAY_PAUSE][i];
        if (!key) continue;
        int got = get_int(c, r, key, INT32_MIN, INT32_MAX, &v[i]);
        if (got < 0) return;
        if (!got) {
            refuse(c, r, TRK_MSG_BAD_FIELD, "\"%s\" (an integer) is missing", key);
            return;
        }
    }
    char why[300] = "";
    int code = c->replay(c->replay_ctx, (int)r->type, v[0], v[1], &frame, why, sizeof(why));
    if (code)
        refuse(c, r, code, "%s", why);
    else
        ack_int(c, r, "frame", frame);
}

/* list_bundles: read on the file worker, which replies. */
static void handle_list_bundles(struct trk_control *c, const struct request *r)
{
    if (!c->list_bundles)
        refuse(c, r, TRK_MSG_UNSUPPORTED, "this daemon lists no bundles");
    else
        queue_job(c, r, PART_WHOLE, NULL);
}

/* focus: "baseline" "now" (the newest sample's sharpness) or a number
 * (0 < S <= TRK_CANNY_MAX_THRESH): the in-focus sharpness from now on. */
static void handle_focus(struct trk_control *c, const struct request *r)
{
    if (!c->focus) {
        refuse(c, r, TRK_MSG_UNSUPPORTED, "the focus check is off (--focus-every 0)");
        return;
    }
    json_t *j = json_object_get(r->msg, "baseline");
    const char *now = json_string_value(j);
    double v = json_is_number(j) ? json_number_value(j) : 0;
    if (!(now && !strcmp(now, "now")) && !json_is_number(j)) {
        refuse(c, r, TRK_MSG_BAD_FIELD, "\"baseline\" must be \"now\" or a sharpness");
        return;
    }
    if (json_is_number(j) && !(v > 0 && v <= 1443)) {
        refuse(c, r, TRK_MSG_OUT_OF_RANGE, "\"baseline\" = %g is out of range (0, 1443]", v);
        return;
    }
    double set;
    if (trk_focus_set_baseline(c->focus, v, &set)) {
        refuse(c, r, TRK_MSG_BUSY,
               "no focus sample with edges yet: try again once the page shows a reading");
        return;
    }
    struct trk_buf b = { 0 };
    send_reply(c, r->client, &b, trk_msg_ack_focus(&b, r->id, set));
}

/* The one table of what answers each control type (messages.h lists the
 * types). "auth" has none: the server answers it before it gets here. */
typedef void (*handler_fn)(struct trk_control *c, const struct request *r);
static const handler_fn handlers[TRK_CTL_COUNT] = {
    [TRK_CTL_SET_OBJECTS] = handle_set_objects,
    [TRK_CTL_ADD_OBJECT] = handle_add_object,
    [TRK_CTL_UPDATE_OBJECT] = handle_update_object,
    [TRK_CTL_RENAME_OBJECT] = handle_rename_object,
    [TRK_CTL_REMOVE_OBJECT] = handle_remove_object,
    [TRK_CTL_GET_OBJECTS] = handle_get_objects,
    [TRK_CTL_SAVE_OBJECTS] = handle_save_objects,
    [TRK_CTL_RELOAD_OBJECTS] = handle_reload_objects,
    [TRK_CTL_SAMPLE] = handle_sample,
    [TRK_CTL_PREVIEW] = handle_preview,
    [TRK_CTL_AUTH] = NULL,
    [TRK_CTL_GET_CAMERA] = handle_camera,
    [TRK_CTL_SET_CAMERA] = handle_camera,
    [TRK_CTL_SAVE_REWIND] = handle_save_rewind,
    [TRK_CTL_RESET_RANGE] = handle_reset_range,
    [TRK_CTL_KEEP_RANGE] = handle_keep_range,
    [TRK_CTL_FOCUS] = handle_focus,
    [TRK_CTL_SET_PATTERN] = handle_set_pattern,
    [TRK_CTL_REPLAY_PAUSE] = handle_replay,
    [TRK_CTL_REPLAY_PLAY] = handle_replay,
    [TRK_CTL_REPLAY_STEP] = handle_replay,
    [TRK_CTL_REPLAY_SEEK] = handle_replay,
    [TRK_CTL_REPLAY_RUN] = handle_replay,
    [TRK_CTL_LIST_BUNDLES] = handle_list_bundles,
    [TRK_CTL_PAINT_CLASS] = handle_paint_class,
    [TRK_CTL_CLEAR_CLASS] = handle_clear_class,
};

void trk_control_on_message(void *user, uint64_t client_id, const char *json, size_t len)
{
    struct trk_control *c = user;
    char id[TRK_MSG_ID_MAX * 6 + 3];
    trk_msg_request_id(json, len, id, sizeof(id));
    json_error_t jerr;
    /* The server checked JSON, object and type already. */
    json_t *msg = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    const char *type = msg ? json_string_value(json_object_get(msg, "type")) : NULL;
    int t = trk_msg_control_type(type);
    if (!type) {
        reply_error(c, client_id, id, TRK_MSG_BAD_JSON, "invalid message");
    } else if (t < 0 || !handlers[t]) {
        reply_error(c, client_id, id, TRK_MSG_UNSUPPORTED, "\"%s\" is not handled", type);
    } else {
        struct request r = { .client = client_id, .id = id, .type = t, .msg = msg };
        pthread_mutex_lock(&c->lock);
        handlers[t](c, &r);
        pthread_mutex_unlock(&c->lock);
    }
    json_decref(msg);
}

/* ------------------------------------------------------------- sampling */

/* Suggested box for one space from per-channel ranges of the sampled
 * pixels, widened by a margin so neighbouring shades still match. Hue uses
 * offsets from the first pixel's hue so a red sample wraps through 0. */
struct chan_stats {
    int lo[3], hi[3];
    long long sum[3];
};

static int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* The grid step that reads at most max pixels of a w x h rectangle: every
 * step-th pixel of every step-th row. */
static int grid_step(int w, int h, long max)
{
    int step = 1;
    while ((long)((w + step - 1) / step) * ((h + step - 1) / step) > max)
        step++;
    return step;
}

/* Per-space channel ranges and sums of the pixels of s->rect on a grid of
 * step; the hue as a signed offset from the first pixel's hue (*h_ref).
 * Returns how many pixels were read. */
static long sample_stats(const struct trk_image *img, const struct trk_sample_info *s, int step,
                         struct chan_stats st[TRK_SPACE_COUNT], int *h_ref)
{
    const int ci = trk_coef_index(img->matrix, img->full_range);
    long n = 0;
    *h_ref = -1;
    for (int sp = 0; sp < TRK_SPACE_COUNT; sp++)
        for (int i = 0; i < 3; i++)
            st[sp].lo[i] = 1 << 20, st[sp].hi[i] = -(1 << 20), st[sp].sum[i] = 0;
    for (int y = s->rect[1]; y <= s->rect[3]; y += step)
        for (int x = s->rect[0]; x <= s->rect[2]; x += step, n++) {
            /* Every space from one read (the backends' rules, gpu/color.h). */
            int nat[3], ch[TRK_SPACE_COUNT][3];
            const int yuv = trk_pixel_native(img->fmt, img->plane, img->pitch, x, y, nat);
            trk_pixel_spaces(&trk_yuv2rgb_coefs[ci], &trk_rgb2ycc_coefs[ci], trk_light_tables(),
                             yuv, TRK_SPACES_EVERY, nat, ch);
            /* Hue as a signed offset from the first pixel's hue. */
            if (*h_ref < 0) *h_ref = ch[TRK_SPACE_HSV][0];
            int d = ch[TRK_SPACE_HSV][0] - *h_ref;
            if (d > TRK_HUE_VALUES / 2) d -= TRK_HUE_VALUES;
            if (d < -TRK_HUE_VALUES / 2) d += TRK_HUE_VALUES;
            ch[TRK_SPACE_HSV][0] = d;
            for (int sp = 0; sp < TRK_SPACE_COUNT; sp++)
                for (int i = 0; i < 3; i++) {
                    if (ch[sp][i] < st[sp].lo[i]) st[sp].lo[i] = ch[sp][i];
                    if (ch[sp][i] > st[sp].hi[i]) st[sp].hi[i] = ch[sp][i];
                    st[sp].sum[i] += ch[sp][i];
                }
        }
    return n;
}

/* Means and suggested boxes (observed range plus a margin, clamped) into s
 * from the statistics of s->n pixels. The spaces that separate light from
 * colour leave the light open: lab's L 0..255, rg's I from 10 (the
 * chromaticity of near-black pixels is noise), with a margin of 12 on
 * their colour channels (they span less of their range than rgb's do). */
static void sample_boxes(const struct chan_stats st[TRK_SPACE_COUNT], int h_ref,
                         struct trk_sample_info *s)
{
    long n = s->n;
    for (int sp = 0; sp < TRK_SPACE_COUNT; sp++)
        for (int i = 0; i < 3; i++)
            s->mean[sp][i] = (int)((st[sp].sum[i] + (st[sp].sum[i] >= 0 ? n / 2 : -n / 2)) / n);
    s->mean[TRK_SPACE_HSV][0] = trk_hue_wrap(h_ref + s->mean[TRK_SPACE_HSV][0]);
    for (int sp = 0; sp < TRK_SPACE_COUNT; sp++)
        for (int i = 0; i < 3; i++) {
            bool hue = sp == TRK_SPACE_HSV && i == 0;
            bool light = sp == TRK_SPACE_LAB || sp == TRK_SPACE_RG;
            int margin = hue ? 8 : light ? 12 : 25;
            int max = trk_chan_max(sp, i);
            if ((sp == TRK_SPACE_LAB && i == 0) || (sp == TRK_SPACE_RG && i == 2)) {
                s->lo[sp][i] = sp == TRK_SPACE_RG ? 10 : 0;
                s->hi[sp][i] = max;
            } else if (!hue) {
                s->lo[sp][i] = clampi(st[sp].lo[i] - margin, 0, max);
                s->hi[sp][i] = clampi(st[sp].hi[i] + margin, 0, max);
            } else if (st[sp].hi[0] - st[sp].lo[0] + 2 * margin >= max) {
                s->lo[sp][0] = 0, s->hi[sp][0] = max;
            } else {
                s->lo[sp][0] = trk_hue_wrap(h_ref + st[sp].lo[0] - margin);
                s->hi[sp][0] = trk_hue_wrap(h_ref + st[sp].hi[0] + margin);
            }
        }
}

/* The share of img's pixels (read on a grid of at most
 * TRK_SAMPLE_SHARE_PIXELS) that each suggested box of s matches: a box that
 * matches much of the frame was sampled mostly from the background.
 * Returns the pixels read. */
static long frame_share(const struct trk_image *img, struct trk_sample_info *s)
{
    const int ci = trk_coef_index(img->matrix, img->full_range);
    const int step = grid_step(img->width, img->height, TRK_SAMPLE_SHARE_PIXELS);
    uint16_t lo[TRK_SPACE_COUNT][3], hi[TRK_SPACE_COUNT][3];
    for (int sp = 0; sp < TRK_SPACE_COUNT; sp++)
        for (int i = 0; i < 3; i++)
            lo[sp][i] = (uint16_t)s->lo[sp][i], hi[sp][i] = (uint16_t)s->hi[sp][i];
    long n = 0, hit[TRK_SPACE_COUNT] = { 0 };
    for (int y = 0; y < img->height; y += step)
        for (int x = 0; x < img->width; x += step, n++) {
            int nat[3], ch[TRK_SPACE_COUNT][3];
            const int yuv = trk_pixel_native(img->fmt, img->plane, img->pitch, x, y, nat);
            trk_pixel_spaces(&trk_yuv2rgb_coefs[ci], &trk_rgb2ycc_coefs[ci], trk_light_tables(),
                             yuv, TRK_SPACES_EVERY, nat, ch);
            for (int sp = 0; sp < TRK_SPACE_COUNT; sp++)
                hit[sp] += trk_box_match(lo[sp], hi[sp], sp == TRK_SPACE_HSV, ch[sp][0], ch[sp][1],
                                         ch[sp][2]) != 0;
        }
    for (int sp = 0; sp < TRK_SPACE_COUNT; sp++)
        s->share[sp] = n ? (double)hit[sp] / (double)n : 0;
    s->has_share = n > 0;
    return n;
}

/* Answers r from img; returns the pixels read. */
static long answer_sample(struct trk_control *c, const struct sample_req *r,
                          const struct trk_image *img, uint64_t seq)
{
    struct trk_sample_info s = { .id_json = r->id, .x = r->x, .y = r->y, .radius = r->radius };
    s.rect[0] = r->x0, s.rect[1] = r->y0;
    s.rect[2] = r->x1 < img->width - 1 ? r->x1 : img->width - 1;
    s.rect[3] = r->y1 < img->height - 1 ? r->y1 : img->height - 1;
    if (s.rect[0] > s.rect[2] || s.rect[1] > s.rect[3]) {
        reply_error(c, r->client, r->id, TRK_MSG_OUT_OF_RANGE,
                    "the sample lies outside the %dx%d frame", img->width, img->height);
        return 0;
    }
    struct chan_stats st[TRK_SPACE_COUNT];
    int h_ref;
    int step =
        grid_step(s.rect[2] - s.rect[0] + 1, s.rect[3] - s.rect[1] + 1, TRK_SAMPLE_PIXELS_MAX);
    s.n = sample_stats(img, &s, step, st, &h_ref);
    s.seq = seq;
    sample_boxes(st, h_ref, &s);
    long read = s.n + frame_share(img, &s);
    struct trk_buf b = { 0 };
    send_reply(c, r->client, &b, trk_msg_sample(&b, &s));
    return read;
}

/* The frame r names: the one its client holds or a kept one; NULL when
 * gone. frames_lock held. */
static const struct kept *kept_for(const struct trk_control *c, const struct sample_req *r)
{
    const int h = held_of(c, r->client);
    if (h >= 0 && c->held[h].seq == r->seq) return &c->held[h];
    for (int i = 0; i < TRK_CONTROL_KEPT_FRAMES; i++)
        if (c->kept[i].valid && c->kept[i].seq == r->seq) return &c->kept[i];
    return NULL;
}

/* The colour cells of the pixels of r's rectangle of img into cells
 * (TRK_CLASS_BYTES, cleared here): the pixels read, 0 when the rectangle
 * lies outside the frame. */
static long paint_cells(const struct sample_req *r, const struct trk_image *img, uint8_t *cells)
{
    const int x1 = r->x1 < img->width - 1 ? r->x1 : img->width - 1;
    const int y1 = r->y1 < img->height - 1 ? r->y1 : img->height - 1;
    memset(cells, 0, TRK_CLASS_BYTES);
    if (r->x0 > x1 || r->y0 > y1) return 0;
    const int step = grid_step(x1 - r->x0 + 1, y1 - r->y0 + 1, PAINT_PIXELS_MAX);
    long n = 0;
    for (int y = r->y0; y <= y1; y += step)
        for (int x = r->x0; x <= x1; x += step, n++) {
            uint8_t rgb[3];
            trk_image_pixel_rgb(img, x, y, rgb);
            const int cell = trk_class_cell(rgb[0], rgb[1], rgb[2]);
            cells[cell >> 3] |= (uint8_t)(1u << (cell & 7));
        }
    return n;
}

/* Answers a paint_class from img (NULL: its frame seq, kept or held):
 * the rectangle's cells into the object's table, the set published when
 * it changed, an ack with the cells the table has now; returns the pixels
 * read. */
static long answer_paint(struct trk_control *c, const struct sample_req *r,
                         const struct trk_image *img)
{
    static _Thread_local uint8_t cells[TRK_CLASS_BYTES];
    long read = -1;
    int fw = 0, fh = 0;
    if (r->by_seq) {
        pthread_mutex_lock(&c->frames_lock);
        const struct kept *k = kept_for(c, r);
        if (k) read = paint_cells(r, &k->img, cells), fw = k->img.width, fh = k->img.height;
        pthread_mutex_unlock(&c->frames_lock);
    } else {
        read = paint_cells(r, img, cells), fw = img->width, fh = img->height;
    }
    if (read <= 0) {
        if (read < 0)
            reply_error(c, r->client, r->id, TRK_MSG_NOT_FOUND,
                        "frame %llu is no longer kept (the last %d previewed frames are; "
                        "pause the video to hold one)",
                        (unsigned long long)r->seq, TRK_CONTROL_KEPT_FRAMES);
        else
            reply_error(c, r->client, r->id, TRK_MSG_OUT_OF_RANGE,
                        "the rectangle lies outside the %dx%d frame", fw, fh);
        return 0;
    }
    pthread_mutex_lock(&c->lock);
    const int k = trk_objects_find(&c->objs, r->obj);
    long set = -1;
    if (k >= 0 && c->objs.def[k].space == TRK_SPACE_CLASS) {
        uint8_t *bits = c->objs.classes[c->objs.def[k].cls_slot].bits;
        /* A default display colour follows the painted colours. */
        uint8_t was[3];
        trk_objects_display_rgb(&c->objs, k, was);
        const bool own_color = memcmp(was, c->objs.color[k], 3) != 0;
        bool changed = false;
        set = 0;
        for (size_t i = 0; i < TRK_CLASS_BYTES; i++) {
            const uint8_t v = r->paint > 0 ? bits[i] | cells[i] : bits[i] & ~cells[i];
            changed |= v != bits[i];
            bits[i] = v;
            set += __builtin_popcount(v);
        }
        if (changed && !own_color) trk_objects_display_rgb(&c->objs, k, c->objs.color[k]);
        if (changed) changed_locked(c);
    }
    pthread_mutex_unlock(&c->lock);
    struct trk_buf b = { 0 };
    if (set < 0)
        reply_error(c, r->client, r->id, TRK_MSG_NOT_FOUND, "no class object named \"%s\" any more",
                    r->obj);
    else
        send_reply(
            c, r->client, &b,
            trk_msg_ack_int(&b, trk_msg_control_types[TRK_CTL_PAINT_CLASS], r->id, "cells", set));
    return read;
}

/* Answers r, which names its frame, from the frame the client holds or a
 * kept one; returns the pixels read. */
static long answer_by_seq(struct trk_control *c, const struct sample_req *r)
{
    long read = 0;
    pthread_mutex_lock(&c->frames_lock);
    const struct kept *k = kept_for(c, r);
    if (k)
        read = answer_sample(c, r, &k->img, k->seq);
    else
        reply_error(c, r->client, r->id, TRK_MSG_NOT_FOUND,
                    "frame %llu is no longer kept (the last %d previewed frames are; "
                    "pause the video to hold one)",
                    (unsigned long long)r->seq, TRK_CONTROL_KEPT_FRAMES);
    pthread_mutex_unlock(&c->frames_lock);
    return read;
}

/* Copies img into k (its buffer grown as needed). 0 or TRK_EINVAL,
 * TRK_ENOMEM (k is then not valid). */
static int copy_frame(struct kept *k, const struct trk_image *img, uint64_t seq)
{
    struct trk_plane_layout L;
    k->valid = false;
    if (img->mem != TRK_MEM_HOST || trk_image_plane_layout(img->fmt, img->width, img->height, &L))
        return TRK_EINVAL;
    size_t total = 0;
    for (int p = 0; p < L.planes; p++)
        total += L.row_bytes[p] * (size_t)L.rows[p];
    if (total > k->cap) {
        uint8_t *n = realloc(k->buf, total);
        if (!n) return TRK_ENOMEM;
        k->buf = n, k->cap = total;
    }
    k->img = *img;
    uint8_t *dst = k->buf;
    for (int p = 0; p < 3; p++) {
        k->img.plane[p] = NULL, k->img.pitch[p] = 0;
        if (p >= L.planes) continue;
        for (int y = 0; y < L.rows[p]; y++)
            memcpy(dst + y * L.row_bytes[p], img->plane[p] + y * img->pitch[p], L.row_bytes[p]);
        k->img.plane[p] = dst, k->img.pitch[p] = L.row_bytes[p];
        dst += L.row_bytes[p] * (size_t)L.rows[p];
    }
    k->seq = seq;
    k->client = 0;
    k->valid = true;
    return 0;
}

void trk_control_keep_frame(struct trk_control *c, const struct trk_image *img, uint64_t seq)
{
    pthread_mutex_lock(&c->frames_lock);
    struct kept *k = &c->kept[c->kept_next];
    c->kept_next = (c->kept_next + 1) % TRK_CONTROL_KEPT_FRAMES;
    int err = copy_frame(k, img, seq);
    pthread_mutex_unlock(&c->frames_lock);
    if (!err)
        trk_log_once_reset(c->keep_failed);
    else
        log_once(c->keep_failed, TRK_LOG_WARN, 0, "cannot keep previewed frames for sampling: %s",
                 trk_strerror(err));
}

void trk_control_set_frame_size(struct trk_control *c, int width, int height)
{
    pthread_mutex_lock(&c->lock);
    if (c->hello.width != width || c->hello.height != height) {
        c->hello.width = width;
        c->hello.height = height;
        publish_locked(c, false);
    }
    pthread_mutex_unlock(&c->lock);
}

static long area(const struct sample_req *r)
{
    return (long)(r->x1 - r->x0 + 1) * (r->y1 - r->y0 + 1);
}

bool trk_control_samples_pending(struct trk_control *c)
{
    pthread_mutex_lock(&c->lock);
    bool any = c->n_pending > 0;
    pthread_mutex_unlock(&c->lock);
    return any;
}

long trk_control_answer_samples(struct trk_control *c, const struct trk_image *img, uint64_t seq)
{
    struct sample_req req[MAX_PENDING];
    pthread_mutex_lock(&c->lock);
    int n = c->n_pending;
    memcpy(req, c->pending, n * sizeof(req[0]));
    c->n_pending = 0;
    pthread_mutex_unlock(&c->lock);
    /* Smallest first: a click's few pixels go out before a flood's big
     * rectangles. */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && area(&req[j]) < area(&req[j - 1]); j--) {
            struct sample_req t = req[j];
            req[j] = req[j - 1], req[j - 1] = t;
        }
    long pixels = 0;
    for (int i = 0; i < n; i++)
        pixels += req[i].paint    ? answer_paint(c, &req[i], img)
                  : req[i].by_seq ? answer_by_seq(c, &req[i])
                                  : answer_sample(c, &req[i], img, seq);
    return pixels;
}
