/* SSL_WrapperPacket encoding with protobuf-c (protocol/ssl_packet.h). */
#include "ssl_packet.h"

#include <stdlib.h>

#include "ssl_wrapper.pb-c.h"
#include "trk_error.h"

static void fill_ball(SSLDetectionBall *m, const struct trk_ssl_ball *b)
{
    ssl__detection_ball__init(m);
    m->confidence = b->confidence;
    m->has_area = 1;
    m->area = b->area;
    m->x = b->x;
    m->y = b->y;
    m->pixel_x = b->pixel_x;
    m->pixel_y = b->pixel_y;
}

static void fill_robot(SSLDetectionRobot *m, const struct trk_ssl_robot *r)
{
    ssl__detection_robot__init(m);
    m->confidence = r->confidence;
    m->has_robot_id = 1;
    m->robot_id = r->robot_id;
    m->x = r->x;
    m->y = r->y;
    m->has_orientation = 1;
    m->orientation = r->orientation;
    m->pixel_x = r->pixel_x;
    m->pixel_y = r->pixel_y;
    m->has_height = r->has_height;
    m->height = r->height;
}

/* The frame's repeated fields point into these arrays, allocated by
 * fill_detection and freed by the caller (free_scratch). */
struct scratch {
    SSLDetectionBall *balls;
    SSLDetectionRobot *robots;
    void **ptrs; /* balls, then yellow, then blue */
};

static void free_scratch(struct scratch *s)
{
    free(s->balls);
    free(s->robots);
    free(s->ptrs);
}

static int fill_detection(SSLDetectionFrame *f, const struct trk_ssl_detection *d,
                          struct scratch *s)
{
    size_t n_robots = d->n_yellow + d->n_blue, n = d->n_balls + n_robots;
    s->balls = calloc(d->n_balls ? d->n_balls : 1, sizeof *s->balls);
    s->robots = calloc(n_robots ? n_robots : 1, sizeof *s->robots);
    s->ptrs = calloc(n ? n : 1, sizeof *s->ptrs);
    if (!s->balls || !s->robots || !s->ptrs) return TRK_ENOMEM;
    ssl__detection_frame__init(f);
    f->frame_number = d->frame_number;
    f->t_capture = d->t_capture;
    f->t_sent = d->t_sent;
    f->camera_id = d->camera_id;
    f->n_balls = d->n_balls;
    f->balls = (SSLDetectionBall **)s->ptrs;
    for (size_t i = 0; i < d->n_balls; i++) {
        fill_ball(&s->balls[i], &d->balls[i]);
        f->balls[i] = &s->balls[i];
    }
    SSLDetectionRobot **rp = (SSLDetectionRobot **)(s->ptrs + d->n_balls);
    for (size_t i = 0; i < n_robots; i++) {
        fill_robot(&s->robots[i], i < d->n_yellow ? &d->yellow[i] : &d->blue[i - d->n_yellow]);
        rp[i] = &s->robots[i];
    }
    f->n_robots_yellow = d->n_yellow;
    f->robots_yellow = rp;
    f->n_robots_blue = d->n_blue;
    f->robots_blue = rp + d->n_yellow;
    return 0;
}

static void fill_calib(SSLGeometryCameraCalibration *o, const struct trk_ssl_calib *c)
{
    ssl__geometry_camera_calibration__init(o);
    o->camera_id = c->camera_id;
    o->focal_length = c->focal_length;
    o->principal_point_x = c->principal_point_x;
    o->principal_point_y = c->principal_point_y;
    o->distortion = c->distortion;
    o->q0 = c->q[0];
    o->q1 = c->q[1];
    o->q2 = c->q[2];
    o->q3 = c->q[3];
    o->tx = c->t[0];
    o->ty = c->t[1];
    o->tz = c->t[2];
    o->has_derived_camera_world_tx = o->has_derived_camera_world_ty = 1;
    o->has_derived_camera_world_tz = 1;
    o->derived_camera_world_tx = c->world[0];
    o->derived_camera_world_ty = c->world[1];
    o->derived_camera_world_tz = c->world[2];
    o->has_pixel_image_width = o->has_pixel_image_height = c->width > 0 && c->height > 0;
    o->pixel_image_width = c->width;
    o->pixel_image_height = c->height;
}

static void fill_field(SSLGeometryData *g, SSLGeometryFieldSize *fs, const struct trk_ssl_field *f,
                       SSLGeometryCameraCalibration *cal, SSLGeometryCameraCalibration **cal_at)
{
    ssl__geometry_field_size__init(fs);
    fs->field_length = f->length;
    fs->field_width = f->width;
    fs->goal_width = f->goal_width;
    fs->goal_depth = f->goal_depth;
    fs->boundary_width = f->boundary_width;
    ssl__geometry_data__init(g);
    g->field = fs;
    for (size_t i = 0; i < f->n_calib; i++) {
        fill_calib(&cal[i], &f->calib[i]);
        cal_at[i] = &cal[i];
    }
    g->n_calib = f->n_calib;
    g->calib = cal_at;
}

int trk_ssl_pack(const struct trk_ssl_detection *det, const struct trk_ssl_field *field,
                 struct trk_buf *out)
{
    if (!det && !field) return TRK_EINVAL;
    if (field && (field->n_calib > TRK_SSL_CALIB_MAX || (field->n_calib && !field->calib)))
        return TRK_EINVAL;
    SSLGeometryCameraCalibration cal[TRK_SSL_CALIB_MAX], *cal_at[TRK_SSL_CALIB_MAX];
    SSLWrapperPacket w;
    SSLDetectionFrame f;
    SSLGeometryData g;
    SSLGeometryFieldSize fs;
    struct scratch sc = { 0 };
    int rc = 0;
    ssl__wrapper_packet__init(&w);
    w.has_source = 1;
    w.source = SSL__SOURCE__SSL_SOURCE_OTHER;
    if (det) {
        rc = fill_detection(&f, det, &sc);
        w.detection = &f;
    }
    if (field) {
        fill_field(&g, &fs, field, cal, cal_at);
        w.geometry = &g;
    }
    if (rc == 0) {
        size_t size = ssl__wrapper_packet__get_packed_size(&w);
        if (size > TRK_SSL_PACKET_MAX)
            rc = TRK_ETOOBIG;
        else if ((rc = trk_buf_reserve(out, size)) == 0)
            out->len += ssl__wrapper_packet__pack(&w, (uint8_t *)out->data + out->len);
        if (rc == 0) out->data[out->len] = '\0';
    }
    free_scratch(&sc);
    return rc;
}
