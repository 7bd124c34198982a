/* SSL_WrapperPacket encoding with protobuf-c (protocol/ssl_packet.h). */
#include "ssl_packet.h"

#include <stdlib.h>
#include <string.h>

#include "ssl_wrapper.pb-c.h"
#include "ssl_wrapper_tracked.pb-c.h"
#include "trk_error.h"

double trk_ssl_unit_mm(const char *unit)
{
    if (!strcmp(unit, "mm")) return 1;
    if (!strcmp(unit, "cm")) return 10;
    if (!strcmp(unit, "m")) return 1000;
    return 0;
}

/* Appends message m packed: 0, TRK_ETOOBIG (over TRK_SSL_PACKET_MAX) or
 * TRK_ENOMEM. */
static int append_packed(const ProtobufCMessage *m, struct trk_buf *out)
{
    size_t size = protobuf_c_message_get_packed_size(m);
    if (size > TRK_SSL_PACKET_MAX) return TRK_ETOOBIG;
    int rc = trk_buf_reserve(out, size);
    if (rc) return rc;
    out->len += protobuf_c_message_pack(m, (uint8_t *)out->data + out->len);
    out->data[out->len] = '\0';
    return 0;
}

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
    if (rc == 0) rc = append_packed(&w.base, out);
    free_scratch(&sc);
    return rc;
}

/* ---- the tracked format */

/* The messages of one tracked frame: each ball and robot with its vectors
 * and id, and the pointer arrays the repeated fields are. */
struct tracked_scratch {
    TrackedBall *balls;
    TrackedRobot *robots;
    Vector3 *v3; /* per ball: pos, vel */
    Vector2 *v2; /* per robot: pos, vel */
    RobotId *ids;
    TrackedBall **ball_ptrs;
    TrackedRobot **robot_ptrs;
};

static void fill_tracked_ball(TrackedBall *m, Vector3 *v, const struct trk_ssl_tracked_ball *b)
{
    tracked_ball__init(m);
    vector3__init(&v[0]);
    v[0].x = b->x, v[0].y = b->y, v[0].z = b->z;
    m->pos = &v[0];
    if (b->has_vel) {
        vector3__init(&v[1]);
        v[1].x = b->vx, v[1].y = b->vy, v[1].z = b->vz;
        m->vel = &v[1];
    }
    m->has_visibility = 1;
    m->visibility = b->visibility;
}

static void fill_tracked_robot(TrackedRobot *m, Vector2 *v, RobotId *id,
                               const struct trk_ssl_tracked_robot *r)
{
    tracked_robot__init(m);
    robot_id__init(id);
    id->id = r->id;
    id->team_color = (TeamColor)r->team;
    m->robot_id = id;
    vector2__init(&v[0]);
    v[0].x = r->x, v[0].y = r->y;
    m->pos = &v[0];
    m->orientation = r->orientation;
    if (r->has_vel) {
        vector2__init(&v[1]);
        v[1].x = r->vx, v[1].y = r->vy;
        m->vel = &v[1];
    }
    m->has_visibility = 1;
    m->visibility = r->visibility;
}

int trk_ssl_pack_tracked(const struct trk_ssl_tracked_frame *f, struct trk_buf *out)
{
    size_t nb = f->n_balls ? f->n_balls : 1, nr = f->n_robots ? f->n_robots : 1;
    struct tracked_scratch s = { .balls = calloc(nb, sizeof(TrackedBall)),
                                 .robots = calloc(nr, sizeof(TrackedRobot)),
                                 .v3 = calloc(2 * nb, sizeof(Vector3)),
                                 .v2 = calloc(2 * nr, sizeof(Vector2)),
                                 .ids = calloc(nr, sizeof(RobotId)),
                                 .ball_ptrs = calloc(nb, sizeof(TrackedBall *)),
                                 .robot_ptrs = calloc(nr, sizeof(TrackedRobot *)) };
    int rc = TRK_ENOMEM;
    if (s.balls && s.robots && s.v3 && s.v2 && s.ids && s.ball_ptrs && s.robot_ptrs) {
        TrackedFrame tf;
        tracked_frame__init(&tf);
        tf.frame_number = f->frame_number;
        tf.timestamp = f->timestamp;
        for (size_t i = 0; i < f->n_balls; i++) {
            fill_tracked_ball(&s.balls[i], &s.v3[2 * i], &f->balls[i]);
            s.ball_ptrs[i] = &s.balls[i];
        }
        for (size_t i = 0; i < f->n_robots; i++) {
            fill_tracked_robot(&s.robots[i], &s.v2[2 * i], &s.ids[i], &f->robots[i]);
            s.robot_ptrs[i] = &s.robots[i];
        }
        tf.n_balls = f->n_balls;
        tf.balls = s.ball_ptrs;
        tf.n_robots = f->n_robots;
        tf.robots = s.robot_ptrs;
        TrackerWrapperPacket w;
        tracker_wrapper_packet__init(&w);
        w.uuid = (char *)f->uuid;
        w.source_name = (char *)f->source_name;
        w.tracked_frame = &tf;
        rc = append_packed(&w.base, out);
    }
    free(s.balls);
    free(s.robots);
    free(s.v3);
    free(s.v2);
    free(s.ids);
    free(s.ball_ptrs);
    free(s.robot_ptrs);
    return rc;
}
