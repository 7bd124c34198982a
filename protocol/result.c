/* The frame result: see result.h. */
#include "result.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trk_error.h"

bool trk_frame_result_world_dir(const struct trk_calib *calib, double px, double py, double z,
                                double wx, double wy, double deg, double *out)
{
    const double th = deg * M_PI / 180.0;
    double x1, y1;
    /* Screen y points down: counter-clockwise on screen is -y. */
    if (!trk_calib_to_world_at(calib, px + cos(th), py - sin(th), z, &x1, &y1)) return false;
    const double a = atan2(y1 - wy, x1 - wx) * 180.0 / M_PI;
    *out = a < 0 ? a + 360.0 : a;
    if (*out >= 360.0) *out = 0; /* -tiny + 360 rounds up */
    return true;
}

/* An axis's world direction: orientation deg at pixel (px, py) with world
 * point (wx, wy) (height 0), folded into [0, 180). */
static bool world_axis(const struct trk_calib *calib, double px, double py, double wx, double wy,
                       double deg, double *out)
{
    if (!trk_frame_result_world_dir(calib, px, py, 0, wx, wy, deg, out)) return false;
    if (*out >= 180.0) *out -= 180.0;
    return true;
}

/* The centroid and shape of the sums of a (a trk_obj_result or trk_blob:
 * the same member names) and their world forms by calib (NULL: none). */
#define POINT_OF(a, calib)                                                                         \
    point_of((a)->mass, (a)->sum_x, (a)->sum_y, (a)->sum_xx, (a)->sum_yy, (a)->sum_xy, calib)
static struct trk_point point_of(uint64_t mass, uint64_t sum_x, uint64_t sum_y, uint64_t sum_xx,
                                 uint64_t sum_yy, uint64_t sum_xy, const struct trk_calib *calib)
{
    struct trk_point p = { 0 };
    trk_centroid(sum_x, sum_y, mass, &p.cx, &p.cy);
    trk_moments_shape(mass, sum_x, sum_y, sum_xx, sum_yy, sum_xy, &p.shape);
    p.world = calib && trk_calib_to_world(calib, p.cx, p.cy, &p.wx, &p.wy);
    p.world_h =
        p.world && world_axis(calib, p.cx, p.cy, p.wx, p.wy, p.shape.orientation, &p.wheading);
    return p;
}

/* How many of an object's blobs the frame lists: the list cut to the
 * object's K (a list is never longer; the cut keeps the message within
 * what the definition announced whatever a caller passes). */
static int blobs_listed(const struct trk_object_def *def, const struct trk_blob_list *list)
{
    if (!def->blobs || !list || list->n <= 0 || !list->blobs) return 0;
    return list->n < def->blobs ? list->n : def->blobs;
}

/* Room for n blobs (with their centroids) and k instances. */
static bool reserve(struct trk_frame_result *r, size_t n, size_t k)
{
    if (n > r->blob_cap) {
        struct trk_blob *b = realloc(r->blobs, n * sizeof(*b));
        if (b) r->blobs = b;
        struct trk_point *c = realloc(r->blob_c, n * sizeof(*c));
        if (c) r->blob_c = c;
        if (!b || !c) return false;
        r->blob_cap = n;
    }
    if (k > r->inst_cap) {
        struct trk_instance *v = realloc(r->inst, k * sizeof(*v));
        if (!v) return false;
        r->inst = v;
        r->inst_cap = k;
    }
    return true;
}

int trk_frame_result_fill(struct trk_frame_result *r, const struct trk_frame_meta *m,
                          const struct trk_object_def *defs, int n,
                          const struct trk_obj_result *res, const struct trk_blob_list *blobs,
                          const struct trk_instance_list *instances, const struct trk_calib *calib)
{
    if (calib && !calib->on) calib = NULL;
    r->meta = *m;
    r->defs = defs;
    r->n = 0;
    r->calibrated = calib != NULL;
    r->world_decimals = calib ? calib->decimals : 0;
    r->patterns = NULL;
    r->n_patterns = 0;
    r->n_markers = 0;
    size_t nb = 0, ni = 0;
    for (int i = 0; i < n; i++) {
        nb += (size_t)blobs_listed(&defs[i], blobs ? &blobs[i] : NULL);
        if (defs[i].track && instances && instances[i].n > 0) ni += (size_t)instances[i].n;
    }
    if (!reserve(r, nb, ni)) return TRK_ENOMEM;
    nb = ni = 0;
    for (int i = 0; i < n; i++) {
        struct trk_result_object *o = &r->obj[i];
        const uint64_t min_mass = defs[i].min_mass ? defs[i].min_mass : 1;
        *o = (struct trk_result_object){ .r = res[i], .found = res[i].mass >= min_mass };
        if (res[i].mass) o->c = POINT_OF(&res[i], calib);
        o->blob0 = nb;
        o->n_blobs = blobs_listed(&defs[i], blobs ? &blobs[i] : NULL);
        for (int k = 0; k < o->n_blobs; k++, nb++) {
            const struct trk_blob *b = &blobs[i].blobs[k];
            r->blobs[nb] = *b;
            /* No blob is empty; never divide by 0 all the same. */
            r->blob_c[nb] = b->mass ? POINT_OF(b, calib) : (struct trk_point){ 0 };
        }
        o->has_instances = defs[i].track && instances;
        o->inst0 = ni;
        o->n_inst = o->has_instances && instances[i].n > 0 ? instances[i].n : 0;
        if (o->n_inst) memcpy(r->inst + ni, instances[i].v, (size_t)o->n_inst * sizeof(*r->inst));
        for (int k = 0; k < o->n_inst; k++, ni++) {
            struct trk_instance *x = &r->inst[ni];
            x->world = calib && trk_calib_to_world(calib, x->cx, x->cy, &x->wx, &x->wy);
            x->world_h = x->world && world_axis(calib, x->cx, x->cy, x->wx, x->wy, x->orientation,
                                                &x->wheading);
            x->world_v = x->rate = false;
        }
    }
    r->n = n;
    return 0;
}

void trk_frame_result_set_rate(struct trk_frame_result *r, const struct trk_calib *calib,
                               double fps)
{
    r->fps = fps > 0 ? fps : 0;
    if (!(fps > 0)) return;
    if (calib && !calib->on) calib = NULL;
    for (int i = 0; i < r->n; i++) {
        const struct trk_result_object *o = &r->obj[i];
        for (int k = 0; k < o->n_inst; k++) {
            struct trk_instance *x = &r->inst[o->inst0 + (size_t)k];
            x->rate = true;
            x->vtheta = x->vth * fps;
            double x1, y1;
            x->world_v = calib && x->world &&
                         trk_calib_to_world(calib, x->cx + x->vx, x->cy + x->vy, &x1, &y1);
            if (!x->world_v) continue;
            x->wvx = (x1 - x->wx) * fps;
            x->wvy = (y1 - x->wy) * fps;
        }
    }
}

/* The world pose of marker rm->m by calib at height z (rm->world false
 * when the centre or the point along the heading has none), and its world
 * velocity at frame rate fps (rm->world_v false without one). */
static void marker_world(struct trk_result_marker *rm, const struct trk_calib *calib, double z,
                         double fps)
{
    const struct trk_marker *m = &rm->m;
    rm->world = trk_calib_to_world_at(calib, m->cx, m->cy, z, &rm->wx, &rm->wy) &&
                trk_frame_result_world_dir(calib, m->cx, m->cy, z, rm->wx, rm->wy, m->heading,
                                           &rm->wheading);
    if (!rm->world) return;
    double vx, vy;
    rm->world_v =
        fps > 0 && trk_calib_to_world_at(calib, m->cx + m->vx, m->cy + m->vy, z, &vx, &vy);
    rm->wvx = rm->world_v ? (vx - rm->wx) * fps : 0;
    rm->wvy = rm->world_v ? (vy - rm->wy) * fps : 0;
}

int trk_frame_result_set_markers(struct trk_frame_result *r, const struct trk_pattern *pats,
                                 int n_pats, const struct trk_marker *m, size_t n,
                                 const struct trk_calib *calib)
{
    if (calib && !calib->on) calib = NULL;
    r->patterns = n_pats > 0 ? pats : NULL;
    r->n_patterns = n_pats > 0 ? n_pats : 0;
    r->n_markers = 0;
    if (n > r->markers_cap) {
        struct trk_result_marker *v = realloc(r->markers, n * sizeof(*v));
        if (!v) return TRK_ENOMEM;
        r->markers = v;
        r->markers_cap = n;
    }
    for (size_t i = 0; i < n; i++) {
        struct trk_result_marker *rm = &r->markers[i];
        *rm = (struct trk_result_marker){ .m = m[i] };
        if (calib && m[i].pattern < n_pats)
            marker_world(rm, calib, pats[m[i].pattern].height, r->fps);
    }
    r->n_markers = n;
    return 0;
}

void trk_frame_result_predict(struct trk_frame_result *dst, const struct trk_frame_result *r,
                              double now)
{
    *dst = *r;
    dst->predict = true;
    dst->predict_dt = now > r->meta.t_capture ? now - r->meta.t_capture : 0;
}

void trk_frame_result_copy(struct trk_frame_result *dst, const struct trk_frame_result *src)
{
    size_t nb = 0, ni = 0;
    for (int i = 0; i < src->n; i++) {
        nb += (size_t)src->obj[i].n_blobs;
        ni += (size_t)src->obj[i].n_inst;
    }
    bool blobs_ok = reserve(dst, nb, 0), inst_ok = reserve(dst, 0, ni);
    dst->meta = src->meta;
    dst->defs = src->defs;
    dst->n = src->n;
    dst->calibrated = src->calibrated;
    dst->world_decimals = src->world_decimals;
    dst->fps = src->fps;
    memcpy(dst->obj, src->obj, (size_t)src->n * sizeof(*dst->obj));
    for (int i = 0; i < src->n; i++) {
        if (!blobs_ok) dst->obj[i].n_blobs = 0;
        if (!inst_ok) dst->obj[i].has_instances = false, dst->obj[i].n_inst = 0;
    }
    if (blobs_ok && nb) {
        memcpy(dst->blobs, src->blobs, nb * sizeof(*dst->blobs));
        memcpy(dst->blob_c, src->blob_c, nb * sizeof(*dst->blob_c));
    }
    if (inst_ok && ni) memcpy(dst->inst, src->inst, ni * sizeof(*dst->inst));
    /* Markers: all or none (the patterns stay: a frame without markers). */
    dst->patterns = src->patterns;
    dst->n_patterns = src->n_patterns;
    dst->n_markers = 0;
    if (src->n_markers > dst->markers_cap) {
        struct trk_result_marker *v = realloc(dst->markers, src->n_markers * sizeof(*v));
        if (!v) return;
        dst->markers = v;
        dst->markers_cap = src->n_markers;
    }
    if (src->n_markers) memcpy(dst->markers, src->markers, src->n_markers * sizeof(*dst->markers));
    dst->n_markers = src->n_markers;
}

void trk_frame_result_free(struct trk_frame_result *r)
{
    free(r->blobs);
    free(r->blob_c);
    free(r->inst);
    free(r->markers);
    r->markers = NULL;
    r->n_markers = r->markers_cap = 0;
    r->blobs = NULL;
    r->blob_c = NULL;
    r->inst = NULL;
    r->blob_cap = r->inst_cap = 0;
}
