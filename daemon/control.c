#include "control.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOG_TAG "control"
#include "color.h"
#include "log.h"
#include "preview.h"
#include "ws.h"

/* Sample requests waiting for the next frame; more get a "busy" error so a
 * client cannot make the processing thread do unbounded work. */
#define MAX_PENDING 16
/* Largest sampled square radius and rectangle side (pixels). */
#define SAMPLE_RADIUS_MAX 16
#define SAMPLE_SIDE_MAX   4096

const char *const trk_control_types[] = {
    "set_objects",   "add_object",  "update_object", "rename_object",
    "remove_object", "get_objects", "save_objects",  "reload_objects",
    "sample",        "preview",     "auth",          NULL,
};

struct sample_req {
    uint64_t client;
    char id[TRK_MSG_ID_MAX * 6 + 3];
    int x0, y0, x1, y1; /* inclusive, clipped to the frame */
    int x, y, radius;   /* as asked (radius -1 for a rectangle) */
};

struct trk_control {
    pthread_mutex_t lock; /* guards everything below */
    struct trk_ws *ws;
    struct trk_objects objs;
    uint64_t version; /* bumped on every change; starts at 1 */
    char *save_path;
    struct trk_hello_info hello;
    char *h_version, *h_backend, *h_source;
    struct sample_req pending[MAX_PENDING];
    int n_pending;
    int preview_width;
    double preview_fps;
    int mask; /* object index shown as a mask, -1 = none */
};

/* ------------------------------------------------------------- pixels */

void trk_pixel_channels(const struct trk_image *img, int x, int y, enum trk_space space, int c[3])
{
    int nat[3], t[3][3];
    const int yuv = trk_pixel_native(img->fmt, img->plane, img->pitch, x, y, nat);
    const int ci = trk_coef_index(img->matrix, img->full_range);
    TRK_ASSERT((unsigned)space <= TRK_SPACE_YCBCR);
    trk_pixel_triples(&trk_yuv2rgb_coefs[ci], &trk_rgb2ycc_coefs[ci], yuv, 1 << space, nat, t);
    c[0] = t[space][0], c[1] = t[space][1], c[2] = t[space][2];
}

bool trk_pixel_matches(const struct trk_image *img, int x, int y, const struct trk_object_def *def)
{
    int c[3];
    trk_pixel_channels(img, x, y, def->space, c);
    return trk_box_match(def->lo, def->hi, def->space == TRK_SPACE_HSV, c[0], c[1], c[2]) != 0;
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
    c->objs = *cfg->objects;
    c->version = 1;
    c->mask = -1;
    c->hello = cfg->hello;
    c->save_path = dup_or_null(cfg->save_path);
    c->h_version = dup_or_null(cfg->hello.version);
    c->h_backend = dup_or_null(cfg->hello.backend);
    c->h_source = dup_or_null(cfg->hello.source);
    c->hello.version = c->h_version;
    c->hello.backend = c->h_backend;
    c->hello.source = c->h_source;
    c->preview_width = cfg->hello.preview.width;
    c->preview_fps = cfg->hello.preview.fps;
    *out = c;
    return 0;
}

void trk_control_destroy(struct trk_control **pc)
{
    if (!pc || !*pc) return;
    struct trk_control *c = *pc;
    pthread_mutex_destroy(&c->lock);
    free(c->save_path);
    free(c->h_version);
    free(c->h_backend);
    free(c->h_source);
    free(c);
    *pc = NULL;
}

/* "#rrggbb" for every object of the set. */
static void color_strings(const struct trk_objects *o, char (*buf)[8], const char **ptr)
{
    for (int i = 0; i < o->n; i++) {
        snprintf(buf[i], 8, "#%02x%02x%02x", o->color[i][0], o->color[i][1], o->color[i][2]);
        ptr[i] = buf[i];
    }
}

/* With the lock held: new hello for the current set, and (broadcast) an
 * "objects" message to everyone connected. */
static void publish_locked(struct trk_control *c, bool broadcast)
{
    if (!c->ws) return;
    static char buf[TRK_MAX_OBJECTS][8]; /* guarded by c->lock */
    static const char *ptr[TRK_MAX_OBJECTS];
    color_strings(&c->objs, buf, ptr);
    struct trk_hello_info h = c->hello;
    h.defs = c->objs.def;
    h.n_objects = c->objs.n;
    h.colors = ptr;
    h.preview.width = c->preview_width;
    if (h.width > 0 && h.height > 0)
        h.preview.height = (int)((long)h.height * c->preview_width / h.width);
    h.preview.fps = c->preview_fps;
    struct trk_buf b = { 0 };
    if (trk_msg_hello(&b, &h) == 0) trk_ws_set_hello(c->ws, b.data);
    trk_buf_reset(&b);
    if (broadcast && trk_msg_objects(&b, c->objs.def, c->objs.n, ptr) == 0)
        trk_ws_broadcast(c->ws, TRK_WS_CONFIG, b.data, b.len);
    trk_buf_free(&b);
}

void trk_control_set_ws(struct trk_control *c, struct trk_ws *ws)
{
    pthread_mutex_lock(&c->lock);
    c->ws = ws;
    publish_locked(c, false);
    pthread_mutex_unlock(&c->lock);
}

/* With the lock held: the set changed. */
static void changed_locked(struct trk_control *c)
{
    c->version++;
    if (c->mask >= c->objs.n) c->mask = -1;
    publish_locked(c, true);
}

bool trk_control_poll(struct trk_control *c, uint64_t *version, struct trk_objects *out)
{
    pthread_mutex_lock(&c->lock);
    bool changed = *version != c->version;
    if (changed) {
        *out = c->objs;
        *version = c->version;
    }
    pthread_mutex_unlock(&c->lock);
    return changed;
}

bool trk_control_preview(struct trk_control *c, int *width, double *fps,
                         struct trk_object_def *mask)
{
    pthread_mutex_lock(&c->lock);
    *width = c->preview_width;
    *fps = c->preview_fps;
    bool on = c->mask >= 0 && c->mask < c->objs.n;
    if (on) *mask = c->objs.def[c->mask];
    pthread_mutex_unlock(&c->lock);
    return on;
}

int trk_control_reload(struct trk_control *c, char *msg, size_t msg_len)
{
    pthread_mutex_lock(&c->lock);
    char *path = dup_or_null(c->save_path);
    pthread_mutex_unlock(&c->lock);
    if (!path) {
        snprintf(msg, msg_len, "no objects file to reload (start with --objects)");
        return TRK_EINVAL;
    }
    /* Loading reads a file: done without the lock, then swapped in. */
    struct trk_objects *o = malloc(sizeof(*o));
    struct trk_config_error cerr;
    int err = o ? trk_objects_load_file(path, o, &cerr) : TRK_ENOMEM;
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
        snprintf(msg, msg_len, "%s: %d objects", path, o->n);
    }
    free(o);
    free(path);
    return err;
}

/* ------------------------------------------------------------- replies */

static void reply(struct trk_control *c, uint64_t client, struct trk_buf *b)
{
    if (c->ws) trk_ws_send_to(c->ws, client, b->data, b->len);
}

static void reply_error(struct trk_control *c, uint64_t client, const char *id, const char *code,
                        const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void reply_error(struct trk_control *c, uint64_t client, const char *id, const char *code,
                        const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    struct trk_buf b = { 0 };
    if (trk_msg_error(&b, code, text, id) == 0) reply(c, client, &b);
    trk_buf_free(&b);
}

/* ack with optional extra fields (raw JSON text after a comma, or NULL). */
static void reply_ack(struct trk_control *c, uint64_t client, const char *type, const char *id,
                      const char *extra)
{
    struct trk_buf b = { 0 };
    if (trk_msg_ack(&b, type, id, extra != NULL) == 0 &&
        (!extra || (trk_buf_puts(&b, ",") == 0 && trk_buf_puts(&b, extra) == 0 &&
                    trk_buf_puts(&b, "}") == 0)))
        reply(c, client, &b);
    trk_buf_free(&b);
}

/* ------------------------------------------------------------ requests */

/* Reads an integer field; returns 1 when present and in [lo, hi], 0 when
 * absent, -1 after replying with an error. */
static int get_int(struct trk_control *c, uint64_t client, const char *id, json_t *msg,
                   const char *key, long long lo, long long hi, long long *v)
{
    json_t *j = json_object_get(msg, key);
    if (!j) return 0;
    if (!json_is_integer(j)) {
        reply_error(c, client, id, "bad_field", "\"%s\" must be an integer", key);
        return -1;
    }
    *v = json_integer_value(j);
    if (*v < lo || *v > hi) {
        reply_error(c, client, id, "out_of_range", "\"%s\" = %lld is out of range %lld..%lld", key,
                    *v, lo, hi);
        return -1;
    }
    return 1;
}

/* The object a request names by "object_id" or "name"; -1 after an error
 * reply. Lock held. */
static int find_target(struct trk_control *c, uint64_t client, const char *id, json_t *msg)
{
    json_t *name = json_object_get(msg, "name");
    long long k;
    int r = get_int(c, client, id, msg, "object_id", 0, TRK_MAX_OBJECTS, &k);
    if (r < 0) return -1;
    if (r == 1) {
        if (k >= c->objs.n) {
            reply_error(c, client, id, "not_found", "no object with object_id %lld (%d objects)", k,
                        c->objs.n);
            return -1;
        }
        return (int)k;
    }
    if (!name) {
        reply_error(c, client, id, "bad_field", "\"object_id\" (integer) or \"name\" is required");
        return -1;
    }
    if (!json_is_string(name)) {
        reply_error(c, client, id, "bad_field", "\"name\" must be a string");
        return -1;
    }
    int i = trk_objects_find(&c->objs, json_string_value(name));
    if (i < 0)
        reply_error(c, client, id, "not_found", "no object named \"%.80s\"",
                    json_string_value(name));
    return i;
}

/* Parses msg[key] as one object; false after an error reply. */
static bool parse_object(struct trk_control *c, uint64_t client, const char *id, json_t *msg,
                         struct trk_object_def *def, uint8_t color[3])
{
    json_t *o = json_object_get(msg, "object");
    if (!json_is_object(o)) {
        reply_error(c, client, id, "bad_field", "\"object\" must be an object");
        return false;
    }
    char why[256];
    if (trk_objects_parse_object(o, def, color, why, sizeof(why))) {
        reply_error(c, client, id, "invalid_object", "object: %s", why);
        return false;
    }
    return true;
}

static bool name_taken(const struct trk_objects *o, const char *name, int except)
{
    for (int i = 0; i < o->n; i++)
        if (i != except && !strcmp(o->def[i].name, name)) return true;
    return false;
}

static void handle_sample(struct trk_control *c, uint64_t client, const char *id, json_t *msg)
{
    struct sample_req r = { .client = client, .radius = -1 };
    snprintf(r.id, sizeof(r.id), "%s", id);
    int fw = c->hello.width, fh = c->hello.height;
    long long x, y, v;
    int rx = get_int(c, client, id, msg, "x", 0, fw > 0 ? fw - 1 : 0, &x);
    if (rx < 0) return;
    int ry = get_int(c, client, id, msg, "y", 0, fh > 0 ? fh - 1 : 0, &y);
    if (ry < 0) return;
    if (!rx || !ry) {
        reply_error(c, client, id, "bad_field", "\"x\" and \"y\" (integers) are required");
        return;
    }
    r.x = (int)x, r.y = (int)y;
    long long w = 0, h = 0;
    int rw = get_int(c, client, id, msg, "w", 1, SAMPLE_SIDE_MAX, &w);
    if (rw < 0) return;
    int rh = get_int(c, client, id, msg, "h", 1, SAMPLE_SIDE_MAX, &h);
    if (rh < 0) return;
    if (rw != rh) {
        reply_error(c, client, id, "bad_field", "\"w\" and \"h\" go together");
        return;
    }
    if (rw) { /* a rectangle from (x, y) */
        r.x0 = r.x, r.y0 = r.y;
        r.x1 = (int)(x + w - 1), r.y1 = (int)(y + h - 1);
    } else {
        v = 2;
        if (get_int(c, client, id, msg, "radius", 0, SAMPLE_RADIUS_MAX, &v) < 0) return;
        r.radius = (int)v;
        r.x0 = r.x - r.radius, r.y0 = r.y - r.radius;
        r.x1 = r.x + r.radius, r.y1 = r.y + r.radius;
    }
    if (r.x0 < 0) r.x0 = 0;
    if (r.y0 < 0) r.y0 = 0;
    if (fw > 0 && r.x1 > fw - 1) r.x1 = fw - 1;
    if (fh > 0 && r.y1 > fh - 1) r.y1 = fh - 1;
    if (c->n_pending == MAX_PENDING) {
        reply_error(c, client, id, "busy", "too many sample requests pending; try again");
        return;
    }
    c->pending[c->n_pending++] = r;
}

static void handle_preview(struct trk_control *c, uint64_t client, const char *id, json_t *msg)
{
    long long w = c->preview_width;
    int fw = c->hello.width > 16 ? c->hello.width : 4096;
    if (get_int(c, client, id, msg, "width", 16, fw, &w) < 0) return;
    json_t *fps = json_object_get(msg, "fps");
    double f = c->preview_fps;
    if (fps) {
        if (!json_is_number(fps)) {
            reply_error(c, client, id, "bad_field", "\"fps\" must be a number");
            return;
        }
        f = json_number_value(fps);
        if (!(f >= 0.1 && f <= 60)) {
            reply_error(c, client, id, "out_of_range", "\"fps\" = %g is out of range 0.1..60", f);
            return;
        }
    }
    int mask = c->mask;
    json_t *m = json_object_get(msg, "mask");
    if (m && json_is_null(m))
        mask = -1;
    else if (m) {
        if (!json_is_string(m)) {
            reply_error(c, client, id, "bad_field", "\"mask\" must be an object name or null");
            return;
        }
        mask = trk_objects_find(&c->objs, json_string_value(m));
        if (mask < 0) {
            reply_error(c, client, id, "not_found", "no object named \"%.80s\"",
                        json_string_value(m));
            return;
        }
    }
    c->preview_width = (int)w;
    c->preview_fps = f;
    c->mask = mask;
    publish_locked(c, false);
    struct trk_buf b = { 0 };
    if (trk_buf_puts(&b, "\"width\":") == 0 && trk_buf_i64(&b, w) == 0 &&
        trk_buf_puts(&b, ",\"fps\":") == 0 && trk_buf_fixed(&b, f, 3) == 0 &&
        trk_buf_puts(&b, ",\"mask\":") == 0 &&
        trk_buf_json_str(&b, mask >= 0 ? c->objs.def[mask].name : NULL, TRK_NAME_MAX) == 0)
        reply_ack(c, client, "preview", id, b.data);
    trk_buf_free(&b);
}

/* With the lock held. */
static void handle(struct trk_control *c, uint64_t client, const char *type, const char *id,
                   json_t *msg)
{
    char extra[TRK_NAME_MAX * 6 + 4200];
    if (!strcmp(type, "get_objects")) {
        static char buf[TRK_MAX_OBJECTS][8];
        static const char *ptr[TRK_MAX_OBJECTS];
        color_strings(&c->objs, buf, ptr);
        struct trk_buf b = { 0 }, o = { 0 };
        /* {"type":"objects","id":X,"objects":[...]}: the broadcast form plus id. */
        if (trk_msg_objects(&o, c->objs.def, c->objs.n, ptr) == 0 &&
            trk_buf_puts(&b, "{\"type\":\"objects\"") == 0 &&
            (!*id || (trk_buf_puts(&b, ",\"id\":") == 0 && trk_buf_puts(&b, id) == 0)) &&
            trk_buf_puts(&b, o.data + strlen("{\"type\":\"objects\"")) == 0)
            reply(c, client, &b);
        trk_buf_free(&b);
        trk_buf_free(&o);
    } else if (!strcmp(type, "set_objects")) {
        json_t *arr = json_object_get(msg, "objects");
        if (!json_is_array(arr)) {
            reply_error(c, client, id, "bad_field", "\"objects\" must be an array");
            return;
        }
        if (json_array_size(arr) > TRK_MAX_OBJECTS) {
            reply_error(c, client, id, "too_many_objects", "%zu objects (at most %d)",
                        json_array_size(arr), TRK_MAX_OBJECTS);
            return;
        }
        json_t *root = json_pack("{sO}", "objects", arr);
        struct trk_objects *n = malloc(sizeof(*n));
        struct trk_config_error cerr;
        int err = root && n ? trk_objects_from_json(root, "set_objects", n, &cerr) : TRK_ENOMEM;
        if (!err) {
            c->objs = *n;
            changed_locked(c);
            snprintf(extra, sizeof(extra), "\"count\":%d", n->n);
            reply_ack(c, client, type, id, extra);
        } else if (err == TRK_ENOMEM) {
            reply_error(c, client, id, "io_error", "out of memory");
        } else {
            reply_error(c, client, id,
                        strstr(cerr.msg, "already used") ? "duplicate_name" : "invalid_object",
                        "%s", cerr.msg);
        }
        json_decref(root);
        free(n);
    } else if (!strcmp(type, "add_object")) {
        struct trk_object_def def;
        uint8_t color[3];
        if (!parse_object(c, client, id, msg, &def, color)) return;
        if (c->objs.n >= TRK_MAX_OBJECTS) {
            reply_error(c, client, id, "too_many_objects", "already %d objects (the most)",
                        c->objs.n);
            return;
        }
        if (name_taken(&c->objs, def.name, -1)) {
            reply_error(c, client, id, "duplicate_name", "an object named \"%s\" exists", def.name);
            return;
        }
        int k = c->objs.n++;
        c->objs.def[k] = def;
        memcpy(c->objs.color[k], color, 3);
        changed_locked(c);
        snprintf(extra, sizeof(extra), "\"object_id\":%d", k);
        reply_ack(c, client, type, id, extra);
    } else if (!strcmp(type, "update_object")) {
        int k = find_target(c, client, id, msg);
        if (k < 0) return;
        struct trk_object_def def;
        uint8_t color[3];
        if (!parse_object(c, client, id, msg, &def, color)) return;
        if (name_taken(&c->objs, def.name, k)) {
            reply_error(c, client, id, "duplicate_name", "an object named \"%s\" exists", def.name);
            return;
        }
        c->objs.def[k] = def;
        memcpy(c->objs.color[k], color, 3);
        changed_locked(c);
        snprintf(extra, sizeof(extra), "\"object_id\":%d", k);
        reply_ack(c, client, type, id, extra);
    } else if (!strcmp(type, "rename_object")) {
        int k = find_target(c, client, id, msg);
        if (k < 0) return;
        json_t *nn = json_object_get(msg, "new_name");
        if (!json_is_string(nn)) {
            reply_error(c, client, id, "bad_field", "\"new_name\" must be a string");
            return;
        }
        struct trk_objects *t = malloc(sizeof(*t));
        if (!t) return;
        *t = c->objs;
        const char *s = json_string_value(nn);
        size_t len = json_string_length(nn);
        char why[256] = "";
        if (len >= TRK_NAME_MAX || strlen(s) != len) {
            snprintf(why, sizeof(why), "new_name must be 1..%d bytes without NUL",
                     TRK_NAME_MAX - 1);
        } else {
            memcpy(t->def[k].name, s, len + 1);
            if (name_taken(t, s, k)) {
                free(t);
                reply_error(c, client, id, "duplicate_name", "an object named \"%s\" exists", s);
                return;
            }
            trk_objects_validate(t, why, sizeof(why));
        }
        if (*why) {
            reply_error(c, client, id, "invalid_object", "%s", why);
        } else {
            c->objs = *t;
            changed_locked(c);
            snprintf(extra, sizeof(extra), "\"object_id\":%d", k);
            reply_ack(c, client, type, id, extra);
        }
        free(t);
    } else if (!strcmp(type, "remove_object")) {
        int k = find_target(c, client, id, msg);
        if (k < 0) return;
        memmove(&c->objs.def[k], &c->objs.def[k + 1], (c->objs.n - k - 1) * sizeof(c->objs.def[0]));
        memmove(&c->objs.color[k], &c->objs.color[k + 1],
                (c->objs.n - k - 1) * sizeof(c->objs.color[0]));
        c->objs.n--;
        memset(&c->objs.def[c->objs.n], 0, sizeof(c->objs.def[0]));
        memset(&c->objs.color[c->objs.n], 0, sizeof(c->objs.color[0]));
        if (c->mask == k)
            c->mask = -1;
        else if (c->mask > k)
            c->mask--;
        changed_locked(c);
        reply_ack(c, client, type, id, NULL);
    } else if (!strcmp(type, "save_objects")) {
        if (!c->save_path) {
            reply_error(c, client, id, "no_file", "the daemon has no objects file");
            return;
        }
        /* A small file written and renamed: short enough to do here. */
        int err = trk_objects_save_file(c->save_path, &c->objs);
        if (err) {
            reply_error(c, client, id, "io_error", "%s: %s", c->save_path, trk_strerror(err));
            return;
        }
        struct trk_buf b = { 0 };
        if (trk_buf_puts(&b, "\"path\":") == 0 &&
            trk_buf_json_str(&b, c->save_path, strlen(c->save_path)) == 0 &&
            trk_buf_puts(&b, ",\"count\":") == 0 && trk_buf_i64(&b, c->objs.n) == 0)
            reply_ack(c, client, type, id, b.data);
        trk_buf_free(&b);
        log_info("saved %d objects to %s", c->objs.n, c->save_path);
    } else if (!strcmp(type, "sample")) {
        handle_sample(c, client, id, msg);
    } else if (!strcmp(type, "preview")) {
        handle_preview(c, client, id, msg);
    } else {
        reply_error(c, client, id, "unsupported", "\"%s\" is not handled", type);
    }
}

void trk_control_on_message(void *user, uint64_t client_id, const char *json, size_t len)
{
    struct trk_control *c = user;
    char id[TRK_MSG_ID_MAX * 6 + 3];
    trk_msg_request_id(json, len, id, sizeof(id));
    json_error_t jerr;
    /* The server checked JSON, object and type already. */
    json_t *msg = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    const char *type = msg ? json_string_value(json_object_get(msg, "type")) : NULL;
    if (!type) {
        reply_error(c, client_id, id, "bad_json", "invalid message");
        json_decref(msg);
        return;
    }
    if (!strcmp(type, "reload_objects")) {
        char why[600];
        int err = trk_control_reload(c, why, sizeof(why));
        if (err) {
            reply_error(c, client_id, id,
                        err == TRK_EINVAL && strstr(why, "no objects file") ? "no_file"
                                                                            : "invalid_object",
                        "%s", why);
        } else {
            pthread_mutex_lock(&c->lock);
            char extra[32];
            snprintf(extra, sizeof(extra), "\"count\":%d", c->objs.n);
            reply_ack(c, client_id, type, id, extra);
            pthread_mutex_unlock(&c->lock);
        }
    } else {
        pthread_mutex_lock(&c->lock);
        handle(c, client_id, type, id, msg);
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

static void put_box(struct trk_buf *b, const char *space, const int lo[3], const int hi[3])
{
    trk_buf_puts(b, "{\"space\":");
    trk_buf_json_str(b, space, 8);
    for (int k = 0; k < 2; k++) {
        const int *v = k ? hi : lo;
        trk_buf_puts(b, k ? ",\"hi\":[" : ",\"lo\":[");
        for (int i = 0; i < 3; i++) {
            if (i) trk_buf_puts(b, ",");
            trk_buf_i64(b, v[i]);
        }
        trk_buf_puts(b, "]");
    }
    trk_buf_puts(b, "}");
}

static int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static void answer_sample(struct trk_control *c, const struct sample_req *r,
                          const struct trk_image *img, uint64_t seq)
{
    int x0 = r->x0, y0 = r->y0;
    int x1 = r->x1 < img->width - 1 ? r->x1 : img->width - 1;
    int y1 = r->y1 < img->height - 1 ? r->y1 : img->height - 1;
    if (x0 > x1 || y0 > y1) {
        reply_error(c, r->client, r->id, "out_of_range", "the sample lies outside the %dx%d frame",
                    img->width, img->height);
        return;
    }
    struct chan_stats st[3];
    int h_ref = -1;
    long n = 0;
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < 3; i++)
            st[s].lo[i] = 1 << 20, st[s].hi[i] = -(1 << 20), st[s].sum[i] = 0;
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++) {
            for (int s = 0; s < 3; s++) {
                int ch[3];
                trk_pixel_channels(img, x, y, (enum trk_space)s, ch);
                if (s == TRK_SPACE_HSV) {
                    /* Hue as a signed offset from the first pixel's hue. */
                    if (h_ref < 0) h_ref = ch[0];
                    int d = ch[0] - h_ref;
                    if (d > TRK_HUE_VALUES / 2) d -= TRK_HUE_VALUES;
                    if (d < -TRK_HUE_VALUES / 2) d += TRK_HUE_VALUES;
                    ch[0] = d;
                }
                for (int i = 0; i < 3; i++) {
                    if (ch[i] < st[s].lo[i]) st[s].lo[i] = ch[i];
                    if (ch[i] > st[s].hi[i]) st[s].hi[i] = ch[i];
                    st[s].sum[i] += ch[i];
                }
            }
            n++;
        }
    int mean[3][3];
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < 3; i++)
            mean[s][i] = (int)((st[s].sum[i] + (st[s].sum[i] >= 0 ? n / 2 : -n / 2)) / n);
    mean[TRK_SPACE_HSV][0] = trk_hue_wrap(h_ref + mean[TRK_SPACE_HSV][0]);
    /* Boxes: observed range plus a margin (channels), clamped. */
    int lo[3][3], hi[3][3];
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < 3; i++) {
            int margin = (s == TRK_SPACE_HSV && i == 0) ? 8 : 25;
            int max = trk_chan_max(s, i);
            if (s == TRK_SPACE_HSV && i == 0) {
                int span = st[s].hi[0] - st[s].lo[0] + 2 * margin;
                if (span >= max) {
                    lo[s][0] = 0, hi[s][0] = max;
                } else {
                    lo[s][0] = trk_hue_wrap(h_ref + st[s].lo[0] - margin);
                    hi[s][0] = trk_hue_wrap(h_ref + st[s].hi[0] + margin);
                }
            } else {
                lo[s][i] = clampi(st[s].lo[i] - margin, 0, max);
                hi[s][i] = clampi(st[s].hi[i] + margin, 0, max);
            }
        }
    /* Saturation floor: a grey-ish sample keeps the full hue range useful. */
    struct trk_buf b = { 0 };
    trk_buf_puts(&b, "{\"type\":\"sample\"");
    if (*r->id) {
        trk_buf_puts(&b, ",\"id\":");
        trk_buf_puts(&b, r->id);
    }
    trk_buf_puts(&b, ",\"x\":");
    trk_buf_i64(&b, r->x);
    trk_buf_puts(&b, ",\"y\":");
    trk_buf_i64(&b, r->y);
    if (r->radius >= 0) {
        trk_buf_puts(&b, ",\"radius\":");
        trk_buf_i64(&b, r->radius);
    }
    trk_buf_puts(&b, ",\"rect\":[");
    int rect[4] = { x0, y0, x1, y1 };
    for (int i = 0; i < 4; i++) {
        if (i) trk_buf_puts(&b, ",");
        trk_buf_i64(&b, rect[i]);
    }
    trk_buf_puts(&b, "],\"seq\":");
    trk_buf_u64(&b, seq);
    trk_buf_puts(&b, ",\"n\":");
    trk_buf_i64(&b, n);
    static const char *names[3] = { "rgb", "hsv", "ycbcr" };
    for (int s = 0; s < 3; s++) {
        trk_buf_puts(&b, ",\"");
        trk_buf_puts(&b, names[s]);
        trk_buf_puts(&b, "\":[");
        for (int i = 0; i < 3; i++) {
            if (i) trk_buf_puts(&b, ",");
            trk_buf_i64(&b, mean[s][i]);
        }
        trk_buf_puts(&b, "]");
    }
    trk_buf_puts(&b, ",\"suggest\":");
    put_box(&b, "hsv", lo[TRK_SPACE_HSV], hi[TRK_SPACE_HSV]);
    trk_buf_puts(&b, ",\"suggest_all\":{");
    for (int s = 0; s < 3; s++) {
        if (s) trk_buf_puts(&b, ",");
        trk_buf_json_str(&b, names[s], 8);
        trk_buf_puts(&b, ":");
        put_box(&b, names[s], lo[s], hi[s]);
    }
    if (trk_buf_puts(&b, "}}") == 0 && c->ws) trk_ws_send_to(c->ws, r->client, b.data, b.len);
    trk_buf_free(&b);
}

void trk_control_frame(struct trk_control *c, const struct trk_image *img, uint64_t seq)
{
    struct sample_req req[MAX_PENDING];
    pthread_mutex_lock(&c->lock);
    int n = c->n_pending;
    memcpy(req, c->pending, n * sizeof(req[0]));
    c->n_pending = 0;
    pthread_mutex_unlock(&c->lock);
    for (int i = 0; i < n; i++)
        answer_sample(c, &req[i], img, seq);
}
