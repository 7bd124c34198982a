/* --ssl: SSL-Vision packets (protocol/ssl_packet.h) over UDP, unicast or
 * multicast (the league's group and port: 224.5.23.2:10006), so RoboCup
 * Small Size League software (team AIs, auto-referees, the game
 * controller) reads trackd as it reads ssl-vision (README, "SSL-Vision").
 *
 * Per frame one SSL_WrapperPacket with a detection frame: frame_number (the
 * frame's seq), t_capture and t_sent (seconds since the epoch), camera_id
 * (--camera-id), the balls (--ssl-ball's object) and the robots (markers of
 * patterns with a team); on the first frame and every --ssl-geometry-every
 * frames before it, a packet with the field's size (--ssl-field) and, when
 * the calibration has a camera matrix, the camera's calibration
 * (trk_ssl_calib_fill).
 *
 * Positions are field millimetres: the objects need a calibration whose
 * unit is "mm", "cm" or "m" (world points scaled to mm). Without one at
 * start trackd refuses to start (exit 78); a set without one later (the
 * page's edits) sends nothing, said once, until a set has one again.
 *
 * The packet is built and sent on the processing thread, from the frame
 * result as it is (the markers point at the set's patterns): a datagram on
 * a non-blocking socket, so a network that cannot take it at once loses
 * that packet (counted as failed) and never slows the pipeline. */
#ifndef TRK_DAEMON_SSL_H
#define TRK_DAEMON_SSL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "result.h"
#include "ssl_packet.h"

/* The league's multicast group and port for vision. */
#define TRK_SSL_GROUP "224.5.23.2"
#define TRK_SSL_PORT  10006
/* Geometry packets: the field's sizes unless --ssl-field (Division B), and
 * every how many frames unless --ssl-geometry-every. */
#define TRK_SSL_FIELD_LENGTH   9000
#define TRK_SSL_FIELD_WIDTH    6000
#define TRK_SSL_GOAL_WIDTH     1000
#define TRK_SSL_GOAL_DEPTH     180
#define TRK_SSL_BOUNDARY_WIDTH 300
#define TRK_SSL_GEOMETRY_EVERY 120

/* How a frame result becomes a detection frame. */
struct trk_ssl_map {
    uint32_t camera_id;
    const char *ball;   /* the ball object's name; NULL: no balls      */
    double mm_per_unit; /* millimetres per world unit (trk_ssl_unit_mm) */
};

/* A frame's detection and the storage its lists point into (grown, kept
 * between frames). Zero it before the first fill. */
struct trk_ssl_frame {
    struct trk_ssl_detection det;
    struct trk_ssl_ball balls[TRK_MAX_BLOBS];
    struct trk_ssl_robot *robots;
    size_t robots_cap;
};

/* Fills f->det from r: frame_number r->meta.seq (its low 32 bits),
 * t_capture and t_sent as given (seconds since the epoch), m's camera id;
 * balls: the listed blobs of the object named m->ball (the largest first;
 * confidence its mass over the largest's, area its mass), or its aggregate
 * centroid when it lists none (found; confidence 1); robots: each marker
 * seen in this frame (not lost, a world pose, id >= 0) of a pattern with a
 * team, yellow then blue: robot_id the marker's id, x, y its world point,
 * orientation its wheading in radians in [-pi, pi], pixel_x, pixel_y its
 * centre, confidence, height its pattern's. Points without a world point
 * are left out. x, y and height are scaled by m->mm_per_unit. 0 or
 * TRK_ENOMEM (f keeps what it had). */
int trk_ssl_frame_fill(struct trk_ssl_frame *f, const struct trk_ssl_map *m,
                       const struct trk_frame_result *r, double t_capture, double t_sent);

/* The camera's calibration for geometry packets, from a solved calibration
 * with a pose (a camera matrix was given): q from c->rot (world -> camera,
 * OpenCV's solvePnP convention, which is ssl-vision's field -> camera; the
 * quaternion with q3 >= 0), t = c->tvec and world = c->centre in mm,
 * focal_length the mean of fx and fy, the principal point cx, cy,
 * distortion k1 (0 without), width and height as given. False (out
 * untouched) without a pose, without a unit in mm (mm_per_unit <= 0), or
 * when the camera is below the plane (centre z <= 0: the world's x and y
 * axes, seen from the camera, turn clockwise, so z = x cross y points away
 * from it, where the league's field has z up). */
bool trk_ssl_calib_fill(struct trk_ssl_calib *out, const struct trk_calib *c, double mm_per_unit,
                        uint32_t camera_id, int width, int height);

/* Frees f's storage; safe twice. */
void trk_ssl_frame_free(struct trk_ssl_frame *f);

#endif
