/* trackd wire messages: hand-written JSON encoders and the client parser.
 * See messages.h and PROTOCOL.md. */
#include "messages.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "color.h"
#include "objects.h"
#include "trk_clock.h"
#include "trk_color.h"

/* The encoders below chain appends; the first failure wins. */
#define PUT(x)                                                                                     \
    do {                                                                                           \
        if ((x) < 0) return TRK_ENOMEM;                                                            \
    } while (0)
#define LIT(b, s) PUT(trk_buf_append((b), (s), sizeof(s) - 1))

/* A key and its value: key is the raw text before the value, punctuation
 * included (",\"width\":"), so a message reads as its JSON does. One home
 * for every field of every encoder below. */
static inline int kv_u64(struct trk_buf *b, const char *key, uint64_t v)
{
    PUT(trk_buf_puts(b, key));
    return trk_buf_u64(b, v);
}

static inline int kv_i64(struct trk_buf *b, const char *key, int64_t v)
{
    PUT(trk_buf_puts(b, key));
    return trk_buf_i64(b, v);
}

static inline int kv_fixed(struct trk_buf *b, const char *key, double v, int decimals)
{
    PUT(trk_buf_puts(b, key));
    return trk_buf_fixed(b, v, decimals);
}

/* s as a JSON string of at most n bytes (NULL: null). */
static inline int kv_str(struct trk_buf *b, const char *key, const char *s, size_t n)
{
    PUT(trk_buf_puts(b, key));
    return trk_buf_json_str(b, s, n);
}

static inline int kv_bool(struct trk_buf *b, const char *key, bool v)
{
    PUT(trk_buf_puts(b, key));
    return trk_buf_puts(b, v ? "true" : "false");
}

/* A duration in ms, 3 decimals; negative (not measured) is null. */
static inline int kv_ms(struct trk_buf *b, const char *key, double v)
{
    if (v >= 0) return kv_fixed(b, key, v, 3);
    PUT(trk_buf_puts(b, key));
    return trk_buf_puts(b, "null");
}

/* [v0,v1,...]: n integers. */
static int put_ints(struct trk_buf *b, const int *v, int n)
{
    LIT(b, "[");
    for (int i = 0; i < n; i++) {
        if (i) LIT(b, ",");
        PUT(trk_buf_i64(b, v[i]));
    }
    LIT(b, "]");
    return 0;
}

/* ,"width":w,"height":h */
static int put_size(struct trk_buf *b, int width, int height)
{
    PUT(kv_i64(b, ",\"width\":", width));
    return kv_i64(b, ",\"height\":", height);
}

/* ------------------------------------------------- server -> client: frame */

/* ,"wx":..,"wy":..: p's world point with r's decimals, null when it has
 * none. Nothing when r has no calibration. */
static int put_world(struct trk_buf *b, const struct trk_frame_result *r, const struct trk_point *p)
{
    if (!r->calibrated) return 0;
    if (!p->world) {
        LIT(b, ",\"wx\":null,\"wy\":null");
        return 0;
    }
    PUT(kv_fixed(b, ",\"wx\":", p->wx, r->world_decimals));
    return kv_fixed(b, ",\"wy\":", p->wy, r->world_decimals);
}

/* An axis's direction in [0, 180) to 2 decimals, kept there by the
 * rounding (179.996 is 0.00, not 180.00). */
static int kv_axis(struct trk_buf *b, const char *key, double deg)
{
    return kv_fixed(b, key, deg >= 179.995 ? 0.0 : deg, 2);
}

/* ,"orientation":..,"major":..,"minor":..: shape s. */
static int put_shape(struct trk_buf *b, const struct trk_shape *s)
{
    PUT(kv_axis(b, ",\"orientation\":", s->orientation));
    PUT(kv_fixed(b, ",\"major\":", s->major, 2));
    return kv_fixed(b, ",\"minor\":", s->minor, 2);
}

/* ,"wheading":..: with r calibrated, world orientation deg (null when ok
 * is false); nothing without a calibration. */
static int put_wheading(struct trk_buf *b, const struct trk_frame_result *r, bool ok, double deg)
{
    if (!r->calibrated) return 0;
    if (ok) return kv_axis(b, ",\"wheading\":", deg);
    LIT(b, ",\"wheading\":null");
    return 0;
}

/* put_shape and put_wheading of point p. */
static int put_point_shape(struct trk_buf *b, const struct trk_frame_result *r,
                           const struct trk_point *p)
{
    PUT(put_shape(b, &p->shape));
    return put_wheading(b, r, p->world_h, p->wheading);
}

/* Latency compensation (result.h predict): the seconds positions move on,
 * and the frames that is for pixel velocities (0 at an unknown rate). */
static double ahead_s(const struct trk_frame_result *r)
{
    return r->predict ? r->predict_dt : 0;
}

static double ahead_frames(const struct trk_frame_result *r)
{
    return r->fps > 0 ? ahead_s(r) * r->fps : 0;
}

/* ,"cx":..,"cy":..(,"wx":..,"wy":..): centroid p, or nulls when mass is 0. */
static int put_centroid(struct trk_buf *b, const struct trk_frame_result *r, uint64_t mass,
                        const struct trk_point *p)
{
    if (!mass) {
        LIT(b, ",\"cx\":null,\"cy\":null");
        if (r->calibrated) LIT(b, ",\"wx\":null,\"wy\":null");
        return 0;
    }
    PUT(kv_fixed(b, ",\"cx\":", p->cx, 2));
    PUT(kv_fixed(b, ",\"cy\":", p->cy, 2));
    return put_world(b, r, p);
}

/* ,"blobs":[{"mass","cx","cy"(,"wx","wy"),"bbox","perimeter"}, ...]: the
 * blobs object o lists. */
static int put_blobs(struct trk_buf *b, const struct trk_frame_result *r,
                     const struct trk_result_object *o)
{
    LIT(b, ",\"blobs\":[");
    for (int k = 0; k < o->n_blobs; k++) {
        const struct trk_blob *v = &r->blobs[o->blob0 + (size_t)k];
        PUT(kv_u64(b, k ? ",{\"mass\":" : "{\"mass\":", v->mass));
        PUT(put_centroid(b, r, v->mass, &r->blob_c[o->blob0 + (size_t)k]));
        const int box[4] = { v->x0, v->y0, v->x1, v->y1 };
        LIT(b, ",\"bbox\":");
        PUT(put_ints(b, box, 4));
        PUT(kv_u64(b, ",\"perimeter\":", v->perimeter));
        PUT(put_point_shape(b, r, &r->blob_c[o->blob0 + (size_t)k]));
        LIT(b, "}");
    }
    LIT(b, "]");
    return 0;
}

/* ,"wvx","wvy": a world velocity per second (has: it has one; else nulls). */
static int put_world_v(struct trk_buf *b, const struct trk_frame_result *r, bool has, double vx,
                       double vy)
{
    if (!has) {
        LIT(b, ",\"wvx\":null,\"wvy\":null");
        return 0;
    }
    PUT(kv_fixed(b, ",\"wvx\":", vx, r->world_decimals));
    return kv_fixed(b, ",\"wvy\":", vy, r->world_decimals);
}

/* ,"wx","wy","wvx","wvy","wheading": instance x's world point (moved on by
 * the prediction), velocity per second and orientation (nulls where it has
 * none). */
static int put_instance_world(struct trk_buf *b, const struct trk_frame_result *r,
                              const struct trk_instance *x)
{
    const double dt = x->world_v ? ahead_s(r) : 0;
    PUT(put_world(b, r,
                  &(struct trk_point){
                      .world = x->world, .wx = x->wx + x->wvx * dt, .wy = x->wy + x->wvy * dt }));
    PUT(put_world_v(b, r, x->world_v, x->wvx, x->wvy));
    return put_wheading(b, r, x->world_h, x->wheading);
}

/* ,"instances":[{...}, ...]: object o's instances. */
static int put_instances(struct trk_buf *b, const struct trk_frame_result *r,
                         const struct trk_result_object *o)
{
    LIT(b, ",\"instances\":[");
    for (int k = 0; k < o->n_inst; k++) {
        const struct trk_instance *x = &r->inst[o->inst0 + (size_t)k];
        const bool seen = x->lost == 0 && x->blob.mass > 0;
        PUT(kv_u64(b, k ? ",{\"id\":" : "{\"id\":", x->id));
        PUT(kv_u64(b, ",\"mass\":", seen ? x->blob.mass : 0));
        PUT(kv_fixed(b, ",\"cx\":", x->cx + x->vx * ahead_frames(r), 2));
        PUT(kv_fixed(b, ",\"cy\":", x->cy + x->vy * ahead_frames(r), 2));
        if (seen) {
            const int box[4] = { x->blob.x0, x->blob.y0, x->blob.x1, x->blob.y1 };
            LIT(b, ",\"bbox\":");
            PUT(put_ints(b, box, 4));
            PUT(kv_u64(b, ",\"perimeter\":", x->blob.perimeter));
        } else {
            LIT(b, ",\"bbox\":null,\"perimeter\":null");
        }
        const struct trk_shape sh = { x->orientation, x->major, x->minor };
        PUT(put_shape(b, &sh));
        PUT(kv_fixed(b, ",\"vx\":", x->vx, 3));
        PUT(kv_fixed(b, ",\"vy\":", x->vy, 3));
        if (x->rate)
            PUT(kv_fixed(b, ",\"vtheta\":", x->vtheta, 2));
        else
            LIT(b, ",\"vtheta\":null");
        if (r->calibrated) PUT(put_instance_world(b, r, x));
        PUT(kv_u64(b, ",\"age\":", x->age));
        PUT(kv_u64(b, ",\"lost\":", x->lost));
        if (seen)
            PUT(kv_str(b, ",\"via\":", x->via_roi ? "roi" : "full", 8));
        else
            LIT(b, ",\"via\":null");
        LIT(b, "}");
    }
    LIT(b, "]");
    return 0;
}

/* Marker k of r: {"pattern","id","cx","cy","heading","confidence",
 * "track_id","lost"(,"wx","wy","wheading","wvx","wvy")}; the world keys
 * when r is calibrated, null when the marker has no world point (or, for
 * wvx, wvy, no world velocity). */
/* An angle in [0, 360) to 2 decimals, kept in [0, 360) by the rounding
 * (359.996 is 0.00, not 360.00). */
static int kv_angle(struct trk_buf *b, const char *key, double deg)
{
    return kv_fixed(b, key, deg >= 359.995 ? 0.0 : deg, 2);
}

static int put_marker(struct trk_buf *b, const struct trk_frame_result *r, size_t k)
{
    const struct trk_result_marker *x = &r->markers[k];
    const struct trk_marker *m = &x->m;
    const char *name = m->pattern < r->n_patterns ? r->patterns[m->pattern].name : NULL;
    PUT(kv_str(b, "{\"pattern\":", name, TRK_NAME_MAX));
    PUT(kv_i64(b, ",\"id\":", m->id));
    PUT(kv_fixed(b, ",\"cx\":", m->cx + m->vx * ahead_frames(r), 2));
    PUT(kv_fixed(b, ",\"cy\":", m->cy + m->vy * ahead_frames(r), 2));
    PUT(kv_angle(b, ",\"heading\":", m->heading));
    PUT(kv_fixed(b, ",\"confidence\":", m->confidence, 3));
    PUT(kv_u64(b, ",\"track_id\":", m->track_id));
    PUT(kv_u64(b, ",\"lost\":", m->lost));
    if (r->calibrated && !x->world) LIT(b, ",\"wx\":null,\"wy\":null,\"wheading\":null");
    if (r->calibrated && x->world) {
        const double dt = x->world_v ? ahead_s(r) : 0;
        PUT(kv_fixed(b, ",\"wx\":", x->wx + x->wvx * dt, r->world_decimals));
        PUT(kv_fixed(b, ",\"wy\":", x->wy + x->wvy * dt, r->world_decimals));
        PUT(kv_angle(b, ",\"wheading\":", x->wheading));
    }
    if (r->calibrated) PUT(put_world_v(b, r, x->world && x->world_v, x->wvx, x->wvy));
    LIT(b, "}");
    return 0;
}

int trk_msg_frame_marker(struct trk_buf *b, const struct trk_frame_result *r, size_t k)
{
    return k < r->n_markers ? put_marker(b, r, k) : TRK_EINVAL;
}

/* ,"markers":[...]: markers first..first+count-1 (nothing when r's set has
 * no patterns: such frames are as before markers existed). */
static int put_markers(struct trk_buf *b, const struct trk_frame_result *r, size_t first,
                       size_t count)
{
    if (r->n_patterns <= 0) return 0;
    LIT(b, ",\"markers\":[");
    for (size_t k = first; k < first + count && k < r->n_markers; k++) {
        if (k > first) LIT(b, ",");
        PUT(put_marker(b, r, k));
    }
    LIT(b, "]");
    return 0;
}

/* ,"predict_dt":..: only on a predicted message (result.h predict). */
static int put_predict(struct trk_buf *b, const struct trk_frame_result *r)
{
    return r->predict ? kv_fixed(b, ",\"predict_dt\":", r->predict_dt, 6) : 0;
}

/* ,"pts":..,"latency":{..}: the frame fields after seq (and camera). */
static int put_frame_fields(struct trk_buf *b, const struct trk_frame_result *r)
{
    const struct trk_frame_meta *m = &r->meta;
    PUT(kv_fixed(b, ",\"pts\":", m->pts, 3));
    PUT(put_size(b, m->width, m->height));
    /* Microseconds: latency is measured against it in fractions of a ms. */
    PUT(kv_fixed(b, ",\"t_capture\":", m->t_capture, 6));
    PUT(kv_fixed(b, ",\"wall_ms\":", m->wall_ms, 3));
    PUT(put_predict(b, r));
    if (m->backend) PUT(kv_str(b, ",\"backend\":", m->backend, SIZE_MAX));
    if (m->pass) {
        PUT(kv_str(b, ",\"pass\":", m->pass, 8));
        PUT(kv_i64(b, ",\"rounds\":", m->rounds));
        PUT(kv_u64(b, ",\"upload_bytes\":", m->upload_bytes));
    }
    PUT(kv_fixed(b, ",\"latency\":{\"queue_ms\":", m->queue_ms, 3));
    PUT(kv_fixed(b, ",\"upload_ms\":", m->upload_ms, 3));
    PUT(kv_fixed(b, ",\"kernel_ms\":", m->kernel_ms, 3));
    PUT(kv_fixed(b, ",\"process_ms\":", m->process_ms, 3));
    PUT(kv_fixed(b, ",\"backend_ms\":", m->backend_ms, 3));
    if (m->handoff_ms >= 0) PUT(kv_fixed(b, ",\"handoff_ms\":", m->handoff_ms, 3));
    LIT(b, "}");
    return 0;
}

/* ,"range":{"lo":[..],"hi":[..],"drift":[..],"rail":B}: the light's box. */
static int put_range(struct trk_buf *b, const struct trk_result_object *o)
{
    int v[3][3];
    for (int c = 0; c < 3; c++)
        v[0][c] = o->range_lo[c], v[1][c] = o->range_hi[c], v[2][c] = o->range_drift[c];
    LIT(b, ",\"range\":{\"lo\":");
    PUT(put_ints(b, v[0], 3));
    LIT(b, ",\"hi\":");
    PUT(put_ints(b, v[1], 3));
    LIT(b, ",\"drift\":");
    PUT(put_ints(b, v[2], 3));
    PUT(kv_bool(b, ",\"rail\":", o->range_rail));
    LIT(b, "}");
    return 0;
}

/* Object id's fields from "id" on and its closing brace; key is the text
 * before the id's value ("{\"id\":" in a frame's objects[]). */
static int put_frame_object(struct trk_buf *b, const struct trk_frame_result *r, int id,
                            const char *key)
{
    const struct trk_object_def *def = &r->defs[id];
    const struct trk_result_object *o = &r->obj[id];
    PUT(kv_i64(b, key, id));
    PUT(kv_str(b, ",\"name\":", def->name, sizeof def->name));
    PUT(kv_bool(b, ",\"found\":", o->found));
    PUT(kv_u64(b, ",\"mass\":", o->r.mass));
    PUT(put_centroid(b, r, o->r.mass, &o->c));
    if (o->r.mass == 0) {
        LIT(b, ",\"bbox\":null");
    } else {
        const int box[4] = { o->r.x0, o->r.y0, o->r.x1, o->r.y1 };
        LIT(b, ",\"bbox\":");
        PUT(put_ints(b, box, 4));
    }
    PUT(put_point_shape(b, r, &o->c));
    /* Objects with blobs off have no key: their output is as before. */
    if (def->blobs) PUT(put_blobs(b, r, o));
    if (o->has_instances) PUT(put_instances(b, r, o));
    if (o->has_range) PUT(put_range(b, o));
    LIT(b, "}");
    return 0;
}

int trk_msg_frame_object(struct trk_buf *b, const struct trk_frame_result *r, int id)
{
    return put_frame_object(b, r, id, "{\"id\":");
}

int trk_msg_object_result(struct trk_buf *b, const struct trk_frame_result *r, const char *camera,
                          int id)
{
    PUT(kv_str(b, "{\"type\":\"object\",\"camera\":", camera, 256));
    PUT(kv_u64(b, ",\"seq\":", r->meta.seq));
    PUT(kv_fixed(b, ",\"t_capture\":", r->meta.t_capture, 6));
    PUT(kv_fixed(b, ",\"wall_ms\":", r->meta.wall_ms, 3));
    PUT(put_predict(b, r));
    return put_frame_object(b, r, id, ",\"id\":");
}

/* ,"objects":[...](,"markers":[...])}: units first..first+count-1, the
 * objects (with their ids) then the markers (unit r->n + k is marker k). */
static int put_frame_objects(struct trk_buf *b, const struct trk_frame_result *r, int first,
                             int count)
{
    LIT(b, ",\"objects\":[");
    for (int i = first; i < first + count && i < r->n; i++) {
        if (i > first) LIT(b, ",");
        PUT(trk_msg_frame_object(b, r, i));
    }
    LIT(b, "]");
    const int m0 = first > r->n ? first - r->n : 0, m1 = first + count - r->n;
    PUT(put_markers(b, r, (size_t)m0, m1 > m0 ? (size_t)(m1 - m0) : 0));
    LIT(b, "}");
    return 0;
}

int trk_msg_frame(struct trk_buf *b, const struct trk_frame_result *r)
{
    /* ~190 bytes per object, ~180 per blob or instance (the shape's
     * orientation, major, minor included) + ~300 of header: one reserve,
     * no regrowth on the hot path after the first frame. */
    size_t listed = 0;
    for (int i = 0; i < r->n; i++)
        listed += (size_t)r->obj[i].n_blobs + 2 * (size_t)r->obj[i].n_inst;
    /* wx, wy: up to 2 x 24 bytes more per centroid, wheading 20. */
    const size_t world = r->calibrated ? 68 : 0;
    PUT(trk_buf_reserve(b, 320 + (size_t)(r->n > 0 ? r->n : 0) * (210 + world + TRK_NAME_MAX * 6) +
                               listed * (200 + world) +
                               r->n_markers * (170 + world + TRK_NAME_MAX * 6)));
    LIT(b, "{\"type\":\"frame\"");
    if (r->meta.camera) PUT(kv_str(b, ",\"camera\":", r->meta.camera, 256));
    PUT(kv_u64(b, ",\"seq\":", r->meta.seq));
    PUT(put_frame_fields(b, r));
    return put_frame_objects(b, r, 0, r->n + (int)r->n_markers);
}

int trk_msg_frame_part(struct trk_buf *b, const struct trk_frame_result *r, const char *camera,
                       int part, int parts, int first, int count)
{
    PUT(kv_str(b, "{\"type\":\"frame\",\"camera\":", camera, SIZE_MAX));
    PUT(kv_u64(b, ",\"seq\":", r->meta.seq));
    PUT(kv_i64(b, ",\"part\":", part));
    PUT(kv_i64(b, ",\"parts\":", parts));
    PUT(put_frame_fields(b, r));
    return put_frame_objects(b, r, first, count);
}

/* ------------------------------------------------- server -> client: hello */

void trk_msg_object_color(const struct trk_object_def *def, char out[8])
{
    uint8_t rgb[3];
    trk_object_display_rgb(def, rgb);
    trk_color_hex(rgb, out);
}

/* <key>"<sp>","lo":[lo],"hi":[hi]: a colour box, of an object or of a
 * sample's suggestion; key is the text up to the space's value
 * (",\"space\":"). */
static int put_box(struct trk_buf *b, const char *key, enum trk_space sp, const int lo[3],
                   const int hi[3])
{
    PUT(kv_str(b, key, trk_objects_space_name(sp), 8));
    LIT(b, ",\"lo\":");
    PUT(put_ints(b, lo, 3));
    LIT(b, ",\"hi\":");
    return put_ints(b, hi, 3);
}

int trk_msg_object(struct trk_buf *b, int id, const struct trk_object_def *def, const char *color)
{
    char derived[8];
    if (!color) {
        trk_msg_object_color(def, derived);
        color = derived;
    }
    const int lo[3] = { def->lo[0], def->lo[1], def->lo[2] };
    const int hi[3] = { def->hi[0], def->hi[1], def->hi[2] };
    PUT(kv_i64(b, "{\"id\":", id));
    PUT(kv_str(b, ",\"name\":", def->name, sizeof def->name));
    PUT(put_box(b, ",\"space\":", def->space, lo, hi));
    PUT(kv_u64(b, ",\"min_mass\":", def->min_mass ? def->min_mass : 1));
    /* The backend's reading of 0 (backend.h), as for min_mass. */
    PUT(kv_u64(b, ",\"blobs\":", def->blobs));
    PUT(kv_u64(b, ",\"min_area\":", def->min_area ? def->min_area : 1));
    PUT(kv_u64(b, ",\"connectivity\":", def->connectivity ? def->connectivity : 8));
    PUT(kv_bool(b, ",\"track\":", def->track));
    PUT(kv_u64(b, ",\"coast_frames\":", def->coast_frames));
    PUT(kv_str(b, ",\"color\":", color, 16));
    LIT(b, "}");
    return 0;
}

static int put_objects(struct trk_buf *b, const struct trk_object_def *defs, int n,
                       const char *const *colors)
{
    LIT(b, "[");
    for (int i = 0; i < n; i++) {
        if (i) LIT(b, ",");
        PUT(trk_msg_object(b, i, &defs[i], colors ? colors[i] : NULL));
    }
    LIT(b, "]");
    return 0;
}

/* <sep>"<space name>": the key of a per-space member. */
static int space_key(struct trk_buf *b, const char *sep, enum trk_space sp)
{
    PUT(kv_str(b, sep, trk_objects_space_name(sp), 8));
    LIT(b, ":");
    return 0;
}

/* hello.limits: what the object loader accepts, from its own rules, so a
 * client that edits objects keeps no copies of them. */
static int put_space_limits(struct trk_buf *b, enum trk_space s)
{
    LIT(b, "{\"channels\":[");
    for (int c = 0; c < 3; c++) {
        if (c) LIT(b, ",");
        PUT(trk_buf_json_str(b, trk_objects_channel_name(s, c), 8));
    }
    int max[3];
    for (int c = 0; c < 3; c++)
        max[c] = trk_objects_channel_max(s, c);
    LIT(b, "],\"max\":");
    PUT(put_ints(b, max, 3));
    LIT(b, ",\"wraps\":[");
    for (int c = 0; c < 3; c++)
        PUT(kv_bool(b, c ? "," : "", trk_objects_channel_wraps(s, c)));
    LIT(b, "]}");
    return 0;
}

static int put_limits(struct trk_buf *b)
{
    PUT(kv_i64(b, "\"limits\":{\"max_objects\":", TRK_MAX_OBJECTS));
    PUT(kv_i64(b, ",\"name_max_bytes\":", TRK_NAME_MAX - 1)); /* TRK_NAME_MAX counts the NUL */
    PUT(kv_i64(b, ",\"max_blobs\":", TRK_MAX_BLOBS));
    PUT(kv_i64(b, ",\"max_min_area\":", TRK_OBJECTS_MIN_AREA_MAX));
    LIT(b, ",\"connectivity\":[4,8]");
    LIT(b, ",\"spaces\":{");
    for (int s = TRK_SPACE_RGB; s < TRK_SPACE_COUNT; s++) {
        PUT(space_key(b, s != TRK_SPACE_RGB ? "," : "", (enum trk_space)s));
        PUT(put_space_limits(b, (enum trk_space)s));
    }
    LIT(b, "}}");
    return 0;
}

/* ",\"names\":[...]": objects idx[0..n) by name (an index out of the set
 * as null). */
static int put_names(struct trk_buf *b, const char *key, const struct trk_object_def *defs,
                     int n_defs, const uint16_t *idx, unsigned n)
{
    PUT(trk_buf_printf(b, ",\"%s\":[", key));
    for (unsigned i = 0; i < n; i++) {
        if (i) LIT(b, ",");
        PUT(kv_str(b, "", idx[i] < n_defs ? defs[idx[i]].name : NULL, TRK_NAME_MAX));
    }
    LIT(b, "]");
    return 0;
}

/* ",\"patterns\":[...]": each pattern's name, kind, team and colour slots
 * by object name (trk_pattern_slots), the ids table's size for centre +
 * dots (PROTOCOL.md section 3, hello). */
static int put_patterns(struct trk_buf *b, const struct trk_object_def *defs, int n_defs,
                        const struct trk_pattern *p, int n)
{
    static const char *const teams[] = { NULL, "blue", "yellow" };
    LIT(b, ",\"patterns\":[");
    for (int i = 0; p && i < n; i++) {
        const struct trk_pattern *pt = &p[i];
        bool dots = pt->kind == TRK_PATTERN_DOTS;
        uint16_t slot[TRK_PATTERN_SLOTS_MAX];
        unsigned k = trk_pattern_slots(pt, slot);
        PUT(kv_str(b, i ? ",{\"name\":" : "{\"name\":", pt->name, TRK_NAME_MAX));
        PUT(kv_str(b, ",\"kind\":", dots ? "dots" : "code", 8));
        PUT(kv_str(b, ",\"team\":", pt->team <= TRK_TEAM_YELLOW ? teams[pt->team] : NULL, 8));
        if (dots) {
            PUT(kv_str(b, ",\"center\":", pt->centre < n_defs ? defs[pt->centre].name : NULL,
                       TRK_NAME_MAX));
            PUT(put_names(b, "dots", defs, n_defs, slot, k));
            PUT(kv_i64(b, ",\"ids\":", pt->n_ids));
        } else {
            PUT(put_names(b, "colors", defs, n_defs, slot, k));
            PUT(kv_i64(b, ",\"id\":", pt->code_id));
        }
        LIT(b, "}");
    }
    LIT(b, "]");
    return 0;
}

int trk_msg_hello(struct trk_buf *b, const struct trk_hello_info *h)
{
    PUT(kv_i64(b, "{\"type\":\"hello\",\"version\":", TRK_PROTOCOL_VERSION));
    char server[96];
    snprintf(server, sizeof server, "trackd %.64s", h->version ? h->version : "?");
    PUT(kv_str(b, ",\"server\":", server, sizeof server));
    if (h->camera) PUT(kv_str(b, ",\"camera\":", h->camera, 256));
    PUT(kv_str(b, ",\"backend\":", h->backend, 256));
    PUT(kv_str(b, ",\"source\":", h->source, 4096));
    PUT(put_size(b, h->width, h->height));
    PUT(kv_fixed(b, ",\"fps\":", h->fps, 3));
    PUT(kv_bool(b, ",\"preview\":{\"enabled\":", h->preview.enabled));
    PUT(put_size(b, h->preview.width, h->preview.height));
    PUT(kv_fixed(b, ",\"fps\":", h->preview.fps, 3));
    PUT(kv_i64(b, ",\"quality\":", h->preview.quality));
    PUT(kv_bool(b, ",\"format\":\"jpeg\"},\"control_auth\":", h->control_auth));
    LIT(b, ",");
    PUT(put_limits(b));
    LIT(b, ",\"objects\":");
    PUT(put_objects(b, h->defs, h->n_objects, h->colors));
    LIT(b, ",\"calibration\":");
    PUT(trk_msg_calibration(b, h->calib));
    PUT(put_patterns(b, h->defs, h->n_objects, h->patterns, h->n_patterns));
    LIT(b, "}");
    return 0;
}

int trk_msg_objects(struct trk_buf *b, const struct trk_object_def *defs, int n,
                    const char *const *colors)
{
    return trk_msg_objects_reply(b, NULL, defs, n, colors);
}

/* v with the fewest digits that read back as the same double (the values
 * a client sends back in set_objects then save unchanged). Finite only. */
static int put_double(struct trk_buf *b, double v)
{
    char num[32];
    snprintf(num, sizeof num, "%.15g", v);
    if (strtod(num, NULL) != v) snprintf(num, sizeof num, "%.17g", v);
    return trk_buf_puts(b, num);
}

static int put_doubles(struct trk_buf *b, const double *v, int n)
{
    LIT(b, "[");
    for (int i = 0; i < n; i++) {
        if (i) LIT(b, ",");
        PUT(put_double(b, v[i]));
    }
    LIT(b, "]");
    return 0;
}

int trk_msg_calibration(struct trk_buf *b, const struct trk_calib *c)
{
    if (!c || !c->on) {
        LIT(b, "null");
        return 0;
    }
    PUT(kv_str(b, "{\"unit\":", c->unit, sizeof c->unit));
    LIT(b, ",\"points\":[");
    for (int i = 0; i < c->n; i++) {
        if (i) LIT(b, ",");
        PUT(put_doubles(b, c->pt[i], 4));
    }
    LIT(b, "]");
    if (c->lens) {
        PUT(trk_buf_puts(b, ",\"camera_matrix\":{\"fx\":"));
        PUT(put_double(b, c->fx));
        LIT(b, ",\"fy\":");
        PUT(put_double(b, c->fy));
        LIT(b, ",\"cx\":");
        PUT(put_double(b, c->cx));
        LIT(b, ",\"cy\":");
        PUT(put_double(b, c->cy));
        LIT(b, "}");
    }
    if (c->n_dist) {
        LIT(b, ",\"distortion\":");
        PUT(put_doubles(b, c->dist, c->n_dist));
    }
    LIT(b, ",\"homography\":");
    PUT(put_doubles(b, c->h, 9));
    LIT(b, ",\"rms\":");
    PUT(put_double(b, c->rms));
    PUT(kv_i64(b, ",\"decimals\":", c->decimals));
    LIT(b, "}");
    return 0;
}

/* ------------------------------------------- server -> client: stats etc. */

int trk_msg_stats(struct trk_buf *b, const struct trk_stats_info *s)
{
    PUT(kv_fixed(b, "{\"type\":\"stats\",\"uptime_s\":", s->uptime_s, 3));
    PUT(kv_fixed(b, ",\"fps\":", s->fps, 2));
    PUT(kv_u64(b, ",\"frames\":", s->frames));
    PUT(kv_u64(b, ",\"drops\":", s->drops));
    PUT(kv_u64(b, ",\"skipped\":", s->skipped));
    PUT(kv_i64(b, ",\"clients\":", s->clients));
    if (s->rss_kb < 0)
        LIT(b, ",\"rss_kb\":null");
    else
        PUT(kv_i64(b, ",\"rss_kb\":", s->rss_kb));
    PUT(kv_ms(b, ",\"latency_median\":{\"queue_ms\":", s->queue_ms));
    PUT(kv_ms(b, ",\"upload_ms\":", s->upload_ms));
    PUT(kv_ms(b, ",\"kernel_ms\":", s->kernel_ms));
    PUT(kv_ms(b, ",\"process_ms\":", s->process_ms));
    PUT(kv_ms(b, ",\"send_ms\":", s->send_ms));
    PUT(kv_ms(b, ",\"total_ms\":", s->total_ms));
    PUT(kv_u64(b, "},\"ws\":{\"messages_sent\":", s->ws_sent));
    PUT(kv_u64(b, ",\"messages_dropped\":", s->ws_dropped));
    PUT(kv_u64(b, ",\"bytes_sent\":", s->ws_bytes));
    PUT(kv_ms(b, ",\"write_ms\":{\"p50\":", s->write_p50_ms));
    PUT(kv_ms(b, ",\"p99\":", s->write_p99_ms));
    PUT(kv_ms(b, ",\"max\":", s->write_max_ms));
    LIT(b, "}}");
    if (s->has_mqtt) {
        PUT(kv_bool(b, ",\"mqtt\":{\"connected\":", s->mqtt_connected));
        PUT(kv_u64(b, ",\"published\":", s->mqtt_published));
        PUT(kv_u64(b, ",\"dropped\":", s->mqtt_dropped));
        PUT(kv_u64(b, ",\"connects\":", s->mqtt_connects));
        LIT(b, "}");
    }
    if (s->mode) {
        PUT(kv_str(b, ",\"mode\":", s->mode, 8));
        if (s->upload_bytes < 0)
            LIT(b, ",\"upload_bytes\":null");
        else
            PUT(kv_fixed(b, ",\"upload_bytes\":", s->upload_bytes, 0));
        PUT(kv_u64(b, ",\"pinned_frames\":", s->pinned_frames));
        PUT(kv_u64(b, ",\"reruns\":{\"grown\":", s->grown_frames));
        PUT(kv_u64(b, ",\"whole\":", s->whole_frames));
        LIT(b, "}");
    }
    if (s->focus_on) {
        PUT(kv_str(b, ",\"focus\":{\"state\":", s->focus_state, 16));
        PUT(kv_ms(b, ",\"sharpness\":", s->focus_sharpness)); /* 3 decimals, < 0 null */
        PUT(kv_ms(b, ",\"baseline\":", s->focus_baseline));   /* 3 decimals, < 0 null */
        PUT(kv_fixed(b, ",\"warn\":", s->focus_warn, 3));
        LIT(b, "}");
    }
    LIT(b, "}");
    return 0;
}

/* {"type":"status","source":...,"message":...[,"width":w,"height":h]} */
static int status_msg(struct trk_buf *b, const char *state, const char *message, int width,
                      int height)
{
    PUT(kv_str(b, "{\"type\":\"status\",\"source\":", state ? state : "ok", 64));
    PUT(kv_str(b, ",\"message\":", message, 4096));
    if (width > 0) PUT(put_size(b, width, height));
    LIT(b, "}");
    return 0;
}

int trk_msg_status(struct trk_buf *b, const char *state, const char *message)
{
    return status_msg(b, state, message, 0, 0);
}

int trk_msg_status_size(struct trk_buf *b, const char *state, const char *message, int width,
                        int height)
{
    return status_msg(b, state, message, width, height);
}

void trk_msg_preview_size(int width, int height, int max_width, int *pw, int *ph)
{
    *pw = *ph = 0;
    if (width <= 0 || height <= 0) return;
    int w = max_width > 0 && max_width < width ? max_width : width;
    /* Rounded down like the encoder's nearest sampling, at least one row. */
    long h = (long)height * w / width;
    *pw = w;
    *ph = h < 1 ? 1 : (int)h;
}

/* ,"id":<id> when the request had an id (id_json: already JSON). */
static int put_id(struct trk_buf *b, const char *id_json)
{
    if (!id_json || !*id_json) return 0;
    LIT(b, ",\"id\":");
    return trk_buf_puts(b, id_json);
}

int trk_msg_error(struct trk_buf *b, const char *code, const char *message, const char *id_json)
{
    PUT(kv_str(b, "{\"type\":\"error\",\"code\":", code ? code : "error", 64));
    PUT(kv_str(b, ",\"message\":", message ? message : "", 4096));
    PUT(put_id(b, id_json));
    LIT(b, "}");
    return 0;
}

int trk_msg_pong(struct trk_buf *b, const char *id_json, double wall_ms)
{
    LIT(b, "{\"type\":\"pong\"");
    PUT(put_id(b, id_json));
    PUT(kv_fixed(b, ",\"wall_ms\":", wall_ms, 3));
    LIT(b, "}");
    return 0;
}

int trk_msg_sync(struct trk_buf *b, const char *id_json, const char *t0_json,
                 const struct trk_sync_times *t)
{
    LIT(b, "{\"type\":\"sync\"");
    PUT(put_id(b, id_json));
    if (t0_json && *t0_json) {
        LIT(b, ",\"t0\":");
        PUT(trk_buf_puts(b, t0_json));
    }
    PUT(kv_fixed(b, ",\"rx_wall_ms\":", t->rx_wall_ms, 3));
    PUT(kv_fixed(b, ",\"tx_wall_ms\":", t->tx_wall_ms, 3));
    PUT(kv_fixed(b, ",\"rx_mono\":", t->rx_mono, 6));
    PUT(kv_fixed(b, ",\"tx_mono\":", t->tx_mono, 6));
    LIT(b, ",\"capture_clock\":\"mono\"}");
    return 0;
}

void trk_msg_sync_stamp_tx(struct trk_sync_times *t)
{
    t->tx_mono = trk_now();
    t->tx_wall_ms = trk_wall_ms();
}

int trk_msg_ack(struct trk_buf *b, const char *request, const char *id_json, bool more)
{
    PUT(kv_str(b, "{\"type\":\"ack\",\"request\":", request ? request : "", 64));
    PUT(put_id(b, id_json));
    if (!more) LIT(b, "}");
    return 0;
}

/* ------------------------------------- server -> client: control replies */

int trk_msg_objects_reply(struct trk_buf *b, const char *id_json, const struct trk_object_def *defs,
                          int n, const char *const *colors)
{
    LIT(b, "{\"type\":\"objects\"");
    PUT(put_id(b, id_json));
    LIT(b, ",\"objects\":");
    PUT(put_objects(b, defs, n, colors));
    LIT(b, "}");
    return 0;
}

/* {"type":"objects"[,"camera":..][,"id":..],"objects":[...],"calibration":..} */
static int objects_calib(struct trk_buf *b, const char *camera, const char *id_json,
                         const struct trk_object_def *defs, int n, const char *const *colors,
                         const struct trk_calib *calib, const struct trk_pattern *patterns,
                         int n_patterns)
{
    LIT(b, "{\"type\":\"objects\"");
    if (camera) PUT(kv_str(b, ",\"camera\":", camera, 256));
    PUT(put_id(b, id_json));
    LIT(b, ",\"objects\":");
    PUT(put_objects(b, defs, n, colors));
    LIT(b, ",\"calibration\":");
    PUT(trk_msg_calibration(b, calib));
    if (patterns) PUT(put_patterns(b, defs, n, patterns, n_patterns));
    LIT(b, "}");
    return 0;
}

int trk_msg_objects_patterns(struct trk_buf *b, const char *id_json,
                             const struct trk_object_def *defs, int n, const char *const *colors,
                             const struct trk_calib *calib, const struct trk_pattern *patterns,
                             int n_patterns)
{
    static const struct trk_pattern none;
    return objects_calib(b, NULL, id_json, defs, n, colors, calib, patterns ? patterns : &none,
                         patterns ? n_patterns : 0);
}

int trk_msg_objects_calib(struct trk_buf *b, const char *id_json, const struct trk_object_def *defs,
                          int n, const char *const *colors, const struct trk_calib *calib)
{
    return objects_calib(b, NULL, id_json, defs, n, colors, calib, NULL, 0);
}

int trk_msg_objects_camera(struct trk_buf *b, const char *camera, const struct trk_object_def *defs,
                           int n, const char *const *colors, const struct trk_calib *calib)
{
    return objects_calib(b, camera, NULL, defs, n, colors, calib, NULL, 0);
}

int trk_msg_camera_status(struct trk_buf *b, const char *camera, bool online, const char *server,
                          const char *state, const char *message)
{
    PUT(kv_str(b, "{\"type\":\"status\",\"camera\":", camera, 256));
    PUT(kv_bool(b, ",\"online\":", online));
    PUT(kv_str(b, ",\"server\":", server, 256));
    PUT(kv_str(b, ",\"source\":", state, 64));
    PUT(kv_str(b, ",\"message\":", message, 4096));
    LIT(b, "}");
    return 0;
}

int trk_msg_ack_int(struct trk_buf *b, const char *request, const char *id_json, const char *key,
                    int64_t value)
{
    PUT(trk_msg_ack(b, request, id_json, true));
    PUT(kv_str(b, ",", key, 64));
    PUT(kv_i64(b, ":", value));
    LIT(b, "}");
    return 0;
}

int trk_msg_ack_saved(struct trk_buf *b, const char *id_json, const char *path, int count,
                      const char *part, bool whole)
{
    PUT(trk_msg_ack(b, "save_objects", id_json, true));
    PUT(kv_str(b, ",\"path\":", path, path ? strlen(path) : 0));
    PUT(kv_i64(b, ",\"count\":", count));
    if (part) {
        PUT(kv_str(b, ",\"part\":", part, strlen(part)));
        PUT(kv_bool(b, ",\"whole\":", whole));
    }
    LIT(b, "}");
    return 0;
}

int trk_msg_ack_preview_view(struct trk_buf *b, const char *id_json, int width, double fps,
                             const struct trk_msg_view *v)
{
    PUT(trk_msg_ack(b, "preview", id_json, true));
    PUT(kv_i64(b, ",\"width\":", width));
    PUT(kv_fixed(b, ",\"fps\":", fps, 3));
    if (v->box) {
        const int lo[3] = { v->box->lo[0], v->box->lo[1], v->box->lo[2] };
        const int hi[3] = { v->box->hi[0], v->box->hi[1], v->box->hi[2] };
        PUT(put_box(b, ",\"mask\":{\"space\":", v->box->space, lo, hi));
        LIT(b, "}");
    } else {
        PUT(kv_str(b, ",\"mask\":", v->name, TRK_NAME_MAX));
    }
    if (v->hold >= 0)
        PUT(kv_i64(b, ",\"hold\":", v->hold));
    else if (v->hold == -1)
        LIT(b, ",\"hold\":null");
    if (v->hold != -2) {
        PUT(kv_bool(b, ",\"edges\":", v->edges));
        PUT(kv_str(b, ",\"fit\":", v->carve ? "carve" : "scale", 8));
        if (v->carve) {
            PUT(kv_i64(b, ",\"size\":[", v->fit_w));
            PUT(kv_i64(b, ",", v->fit_h));
            LIT(b, "]");
        }
    }
    LIT(b, "}");
    return 0;
}

int trk_msg_ack_focus(struct trk_buf *b, const char *id_json, double baseline)
{
    PUT(trk_msg_ack(b, "focus", id_json, true));
    PUT(kv_fixed(b, ",\"baseline\":", baseline, 3));
    LIT(b, "}");
    return 0;
}

int trk_msg_ack_preview(struct trk_buf *b, const char *id_json, int width, double fps,
                        const char *mask)
{
    const struct trk_msg_view v = { .name = mask, .hold = -2 };
    return trk_msg_ack_preview_view(b, id_json, width, fps, &v);
}

/* {"space":...,"lo":...,"hi":...}: the box sampling suggests for sp. */
static int put_sample_box(struct trk_buf *b, const struct trk_sample_info *s, enum trk_space sp)
{
    PUT(put_box(b, "{\"space\":", sp, s->lo[sp], s->hi[sp]));
    LIT(b, "}");
    return 0;
}

int trk_msg_sample(struct trk_buf *b, const struct trk_sample_info *s)
{
    LIT(b, "{\"type\":\"sample\"");
    PUT(put_id(b, s->id_json));
    PUT(kv_i64(b, ",\"x\":", s->x));
    PUT(kv_i64(b, ",\"y\":", s->y));
    if (s->radius >= 0) PUT(kv_i64(b, ",\"radius\":", s->radius));
    LIT(b, ",\"rect\":");
    PUT(put_ints(b, s->rect, 4));
    PUT(kv_u64(b, ",\"seq\":", s->seq));
    PUT(kv_i64(b, ",\"n\":", s->n));
    for (int sp = TRK_SPACE_RGB; sp < TRK_SPACE_COUNT; sp++) {
        PUT(space_key(b, ",", (enum trk_space)sp));
        PUT(put_ints(b, s->mean[sp], 3));
    }
    LIT(b, ",\"suggest\":");
    PUT(put_sample_box(b, s, TRK_SPACE_HSV));
    LIT(b, ",\"suggest_all\":{");
    for (int sp = TRK_SPACE_RGB; sp < TRK_SPACE_COUNT; sp++) {
        PUT(space_key(b, sp != TRK_SPACE_RGB ? "," : "", (enum trk_space)sp));
        PUT(put_sample_box(b, s, (enum trk_space)sp));
    }
    LIT(b, "}");
    if (s->has_share) {
        LIT(b, ",\"frame_share\":{");
        for (int sp = TRK_SPACE_RGB; sp < TRK_SPACE_COUNT; sp++) {
            PUT(space_key(b, sp != TRK_SPACE_RGB ? "," : "", (enum trk_space)sp));
            PUT(kv_fixed(b, "", s->share[sp], 3));
        }
        LIT(b, "}");
    }
    LIT(b, "}");
    return 0;
}

/* ---------------------------------------------------- preview (binary) */

static void put_le16(uint8_t *p, int v)
{
    unsigned u = v < 0 ? 0u : v > 65535 ? 65535u : (unsigned)v;
    p[0] = (uint8_t)(u & 0xFF);
    p[1] = (uint8_t)(u >> 8);
}

void trk_msg_preview_header(uint8_t out[TRK_PREVIEW_HDR], uint64_t seq, int preview_w,
                            int preview_h, int frame_w, int frame_h)
{
    memcpy(out, "TRKP", 4);
    for (int i = 0; i < 8; i++)
        out[4 + i] = (uint8_t)(seq >> (8 * i));
    put_le16(out + 12, preview_w);
    put_le16(out + 14, preview_h);
    put_le16(out + 16, frame_w);
    put_le16(out + 18, frame_h);
}

/* ------------------------------------------- server -> client: camera */

static int put_cam_ctrl(struct trk_buf *b, const struct trk_cam_ctrl_info *k)
{
    PUT(kv_str(b, "{\"name\":", k->name, 63));
    PUT(kv_str(b, ",\"label\":", k->label, 63));
    PUT(kv_str(b, ",\"group\":", k->group, 31));
    PUT(kv_bool(b, ",\"auto\":", k->is_auto));
    PUT(kv_str(b, ",\"kind\":", k->kind, 15));
    PUT(kv_i64(b, ",\"min\":", k->min));
    PUT(kv_i64(b, ",\"max\":", k->max));
    PUT(kv_i64(b, ",\"step\":", k->step));
    PUT(kv_i64(b, ",\"default\":", k->def));
    PUT(kv_i64(b, ",\"value\":", k->value));
    if (k->is_auto) {
        PUT(kv_i64(b, ",\"auto_value\":", k->auto_value));
        PUT(kv_i64(b, ",\"manual_value\":", k->manual_value));
    }
    PUT(kv_bool(b, ",\"inactive\":", k->inactive));
    PUT(kv_bool(b, ",\"fixed\":", k->fixed));
    if (k->n_menu > 0) {
        LIT(b, ",\"menu\":[");
        for (int i = 0; i < k->n_menu; i++) {
            PUT(kv_i64(b, i ? ",{\"value\":" : "{\"value\":", k->menu_values[i]));
            PUT(kv_str(b, ",\"name\":", k->menu_names[i], 63));
            LIT(b, "}");
        }
        LIT(b, "]");
    }
    LIT(b, "}");
    return 0;
}

int trk_msg_camera(struct trk_buf *b, const char *id_json, const struct trk_camera_info *c)
{
    LIT(b, "{\"type\":\"camera\"");
    PUT(put_id(b, id_json));
    PUT(kv_bool(b, ",\"available\":", c->device != NULL));
    PUT(kv_str(b, ",\"device\":", c->device, c->device ? strlen(c->device) : 0));
    PUT(kv_str(b, ",\"reason\":", c->reason, c->reason ? strlen(c->reason) : 0));
    LIT(b, ",\"controls\":[");
    for (int i = 0; i < c->n; i++) {
        if (i) LIT(b, ",");
        PUT(put_cam_ctrl(b, &c->ctrls[i]));
    }
    LIT(b, "]}");
    return 0;
}

int trk_msg_ack_str(struct trk_buf *b, const char *request, const char *id_json, const char *key,
                    const char *value)
{
    PUT(trk_msg_ack(b, request, id_json, true));
    PUT(kv_str(b, ",", key, 64));
    PUT(kv_str(b, ":", value, strlen(value)));
    LIT(b, "}");
    return 0;
}

int trk_msg_ack_camera(struct trk_buf *b, const char *id_json, const char *name, int64_t value)
{
    PUT(trk_msg_ack(b, "set_camera", id_json, true));
    PUT(kv_str(b, ",\"name\":", name, 63));
    PUT(kv_i64(b, ",\"value\":", value));
    LIT(b, "}");
    return 0;
}

/* ---------------------------------------------- client -> server: parsing */

const char *const trk_msg_control_types[TRK_CTL_COUNT + 1] = {
    [TRK_CTL_SET_OBJECTS] = "set_objects",
    [TRK_CTL_ADD_OBJECT] = "add_object",
    [TRK_CTL_UPDATE_OBJECT] = "update_object",
    [TRK_CTL_RENAME_OBJECT] = "rename_object",
    [TRK_CTL_REMOVE_OBJECT] = "remove_object",
    [TRK_CTL_GET_OBJECTS] = "get_objects",
    [TRK_CTL_SAVE_OBJECTS] = "save_objects",
    [TRK_CTL_RELOAD_OBJECTS] = "reload_objects",
    [TRK_CTL_SAMPLE] = "sample",
    [TRK_CTL_PREVIEW] = "preview",
    [TRK_CTL_AUTH] = "auth",
    [TRK_CTL_GET_CAMERA] = "get_camera",
    [TRK_CTL_SET_CAMERA] = "set_camera",
    [TRK_CTL_SAVE_REWIND] = "save_rewind",
    [TRK_CTL_RESET_RANGE] = "reset_range",
    [TRK_CTL_KEEP_RANGE] = "keep_range",
    [TRK_CTL_FOCUS] = "focus",
    [TRK_CTL_SET_PATTERN] = "set_pattern",
    [TRK_CTL_REPLAY_PAUSE] = "replay_pause",
    [TRK_CTL_REPLAY_PLAY] = "replay_play",
    [TRK_CTL_REPLAY_STEP] = "replay_step",
    [TRK_CTL_REPLAY_SEEK] = "replay_seek",
    [TRK_CTL_REPLAY_RUN] = "replay_run",
    [TRK_CTL_LIST_BUNDLES] = "list_bundles",
    [TRK_CTL_PAINT_CLASS] = "paint_class",
    [TRK_CTL_CLEAR_CLASS] = "clear_class",
    [TRK_CTL_COUNT] = NULL,
};

int trk_msg_control_type(const char *type)
{
    for (int t = 0; type && t < TRK_CTL_COUNT; t++)
        if (!strcmp(trk_msg_control_types[t], type)) return t;
    return -1;
}

const char *trk_msg_err_code(int err)
{
    switch (err) {
    case TRK_MSG_OK: return "ok";
    case TRK_MSG_BAD_JSON: return "bad_json";
    case TRK_MSG_NOT_OBJECT: return "not_object";
    case TRK_MSG_BAD_TYPE: return "bad_type";
    case TRK_MSG_UNKNOWN_TYPE: return "unknown_type";
    case TRK_MSG_TOO_LARGE: return "too_large";
    case TRK_MSG_BAD_FIELD: return "bad_field";
    case TRK_MSG_BINARY: return "binary";
    case TRK_MSG_UNSUPPORTED: return "unsupported";
    case TRK_MSG_UNAUTHORIZED: return "unauthorized";
    case TRK_MSG_INVALID_OBJECT: return "invalid_object";
    case TRK_MSG_DUPLICATE_NAME: return "duplicate_name";
    case TRK_MSG_TOO_MANY_OBJECTS: return "too_many_objects";
    case TRK_MSG_NOT_FOUND: return "not_found";
    case TRK_MSG_OUT_OF_RANGE: return "out_of_range";
    case TRK_MSG_BUSY: return "busy";
    case TRK_MSG_NO_FILE: return "no_file";
    case TRK_MSG_IO_ERROR: return "io_error";
    case TRK_MSG_NO_CAMERA: return "no_camera";
    case TRK_MSG_FIXED: return "fixed";
    }
    return "error";
}

/* The echoable form of an id: integers, reals and short strings. Anything
 * else is not echoed: echoing arbitrary structures back would let a client
 * make the server amplify its input. */
static size_t id_to_json(json_t *id, char *out, size_t cap)
{
    if (!cap) return 0;
    out[0] = '\0';
    if (!id || !(json_is_number(id) || json_is_string(id))) return 0;
    if (json_is_string(id) && json_string_length(id) > TRK_MSG_ID_MAX) return 0;
    char *s = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!s) return 0;
    size_t n = strlen(s);
    if (n >= cap)
        n = 0;
    else
        memcpy(out, s, n + 1);
    free(s);
    return n;
}

static void set_err(char *err_msg, size_t err_len, const char *fmt, const char *arg)
{
    if (err_msg && err_len) snprintf(err_msg, err_len, fmt, arg);
}

int trk_msg_parse_client(const char *data, size_t len, const char *const *control_types,
                         struct trk_cmsg *out, char *err_msg, size_t err_len)
{
    memset(out, 0, sizeof *out);
    out->preview = out->predict = -1;
    if (err_msg && err_len) err_msg[0] = '\0';
    if (len > TRK_MSG_MAX_CLIENT) {
        set_err(err_msg, err_len, "message larger than %s bytes", "65536");
        return TRK_MSG_TOO_LARGE;
    }
    json_error_t jerr;
    /* REJECT_DUPLICATES: {"type":"ping","type":"x"} has no single meaning.
     * DECODE_ANY: a bare scalar is valid JSON, just not an object. */
    json_t *root = json_loadb(data, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!root) {
        set_err(err_msg, err_len, "invalid JSON: %s", jerr.text);
        return TRK_MSG_BAD_JSON;
    }
    int rc = TRK_MSG_OK;
    if (!json_is_object(root)) {
        set_err(err_msg, err_len, "%s", "message must be a JSON object");
        rc = TRK_MSG_NOT_OBJECT;
        goto end;
    }
    id_to_json(json_object_get(root, "id"), out->id, sizeof out->id);
    json_t *type = json_object_get(root, "type");
    if (!json_is_string(type)) {
        set_err(err_msg, err_len, "%s", "\"type\" must be a string");
        rc = TRK_MSG_BAD_TYPE;
        goto end;
    }
    const char *t = json_string_value(type);
    size_t tlen = json_string_length(type);
    if (tlen >= sizeof out->type || strlen(t) != tlen) {
        set_err(err_msg, err_len, "%s", "unknown message type");
        rc = TRK_MSG_UNKNOWN_TYPE;
        goto end;
    }
    memcpy(out->type, t, tlen + 1);
    if (!strcmp(t, "ping")) {
        out->kind = TRK_CMSG_PING;
    } else if (!strcmp(t, "subscribe")) {
        out->kind = TRK_CMSG_SUBSCRIBE;
        json_t *pv = json_object_get(root, "preview");
        if (pv && !json_is_boolean(pv)) {
            set_err(err_msg, err_len, "%s", "\"preview\" must be true or false");
            rc = TRK_MSG_BAD_FIELD;
            goto end;
        }
        out->preview = pv ? json_is_true(pv) : -1;
        json_t *pr = json_object_get(root, "predict");
        double ahead = json_is_number(pr) ? json_number_value(pr) : 0;
        if (pr && !json_is_false(pr) &&
            !(json_is_string(pr) && !strcmp(json_string_value(pr), "send")) &&
            !(json_is_number(pr) && ahead >= 0 && ahead <= TRK_MSG_PREDICT_MAX_S)) {
            set_err(err_msg, err_len, "%s",
                    "\"predict\" must be \"send\", a number of seconds after the send (0..1) "
                    "or false");
            rc = TRK_MSG_BAD_FIELD;
            goto end;
        }
        out->predict = pr ? !json_is_false(pr) : -1;
        out->predict_ahead = ahead;
    } else if (!strcmp(t, "sync")) {
        out->kind = TRK_CMSG_SYNC;
        json_t *t0 = json_object_get(root, "t0");
        if (t0 && !json_is_number(t0)) {
            set_err(err_msg, err_len, "%s", "\"t0\" must be a number");
            rc = TRK_MSG_BAD_FIELD;
            goto end;
        }
        /* Echoed with 17 significant digits: the same double reads back. */
        char *txt = t0 ? json_dumps(t0, JSON_ENCODE_ANY | JSON_REAL_PRECISION(17)) : NULL;
        if (txt && strlen(txt) < sizeof out->t0) memcpy(out->t0, txt, strlen(txt) + 1);
        free(txt);
    } else {
        const char *const *types = control_types ? control_types : trk_msg_control_types;
        bool known = false;
        for (; *types && !known; types++)
            known = !strcmp(*types, t);
        if (!known) {
            set_err(err_msg, err_len, "unknown message type \"%.40s\"", t);
            rc = TRK_MSG_UNKNOWN_TYPE;
            goto end;
        }
        out->kind = TRK_CMSG_CONTROL;
    }
end:
    json_decref(root);
    return rc;
}

size_t trk_msg_request_id(const char *data, size_t len, char *out, size_t cap)
{
    if (cap) out[0] = '\0';
    if (len > TRK_MSG_MAX_CLIENT) return 0;
    json_t *root = json_loadb(data, len, JSON_DECODE_ANY, NULL);
    if (!root) return 0;
    size_t n = json_is_object(root) ? id_to_json(json_object_get(root, "id"), out, cap) : 0;
    json_decref(root);
    return n;
}

/* ----------------------------------- server -> client: the server's own acks */

int trk_msg_ack_subscribe(struct trk_buf *b, const char *id_json, bool preview, int predict,
                          double ahead)
{
    PUT(trk_msg_ack(b, "subscribe", id_json, true));
    PUT(trk_buf_puts(b, preview ? ",\"preview\":true" : ",\"preview\":false"));
    if (predict == 0) LIT(b, ",\"predict\":false");
    if (predict > 0 && ahead == 0) LIT(b, ",\"predict\":\"send\"");
    if (predict > 0 && ahead != 0) PUT(kv_fixed(b, ",\"predict\":", ahead, 6));
    LIT(b, "}");
    return 0;
}

int trk_msg_ack_bool(struct trk_buf *b, const char *request, const char *id_json, const char *key,
                     bool value)
{
    PUT(trk_msg_ack(b, request, id_json, true));
    PUT(kv_str(b, ",", key, 64));
    return trk_buf_puts(b, value ? ":true}" : ":false}");
}
