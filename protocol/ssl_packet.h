/* SSL-Vision packets (issue 26): what trackd's --ssl output sends, in the
 * RoboCup Small Size League's wire format (the .proto files in protocol/ssl/: the names
 * and field numbers of ssl-vision's detection, geometry and wrapper
 * messages), so team software, auto-referees and the game controller read
 * trackd as they read SSL-Vision. Encoding only: the plain-C structs below
 * are filled by the output from the frame result (positions already in
 * field millimetres, orientations in radians counter-clockwise), and
 * trk_ssl_pack turns them into one SSL_WrapperPacket with protobuf-c.
 *
 * Thread safety: reentrant. */
#ifndef TRK_PROTOCOL_SSL_PACKET_H
#define TRK_PROTOCOL_SSL_PACKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trk_buf.h"

/* The largest UDP payload over IPv4; a packet that would not fit is refused. */
#define TRK_SSL_PACKET_MAX 65507

struct trk_ssl_ball {
    float confidence; /* [0, 1] */
    uint32_t area;    /* pixels */
    float x, y;       /* mm */
    float pixel_x, pixel_y;
};

struct trk_ssl_robot {
    float confidence;
    uint32_t robot_id;
    float x, y;        /* mm */
    float orientation; /* radians, counter-clockwise from the field's +x */
    float pixel_x, pixel_y;
    float height; /* mm; sent when has_height */
    bool has_height;
};

/* One camera's frame: SSL_DetectionFrame. Times are seconds since the Unix
 * epoch (ssl-vision's convention). */
struct trk_ssl_detection {
    uint32_t frame_number;
    double t_capture, t_sent;
    uint32_t camera_id;
    const struct trk_ssl_ball *balls;
    size_t n_balls;
    const struct trk_ssl_robot *yellow, *blue;
    size_t n_yellow, n_blue;
};

/* One camera's calibration: SSL_GeometryCameraCalibration, in ssl-vision's
 * conventions: a point of the field p (mm, z up) is at q p + t in the
 * camera's frame (q the rotation as a unit quaternion, q0..q2 its vector
 * part, q3 its scalar), projected with one focal length (pixels) about the
 * principal point; distortion is the first radial coefficient; world is the
 * camera's position on the field (mm), the packet's derived_camera_world_*;
 * width, height the image's size (0: not sent). */
struct trk_ssl_calib {
    uint32_t camera_id;
    float focal_length, principal_point_x, principal_point_y, distortion;
    float q[4];
    float t[3];
    float world[3];
    uint32_t width, height;
};

/* The field: SSL_GeometryFieldSize's required sizes (mm); the marking lines
 * and arcs are not sent. With it, n_calib camera calibrations (calib may be
 * NULL when n_calib is 0). */
struct trk_ssl_field {
    int32_t length, width;
    int32_t goal_width, goal_depth;
    int32_t boundary_width;
    const struct trk_ssl_calib *calib;
    size_t n_calib;
};

/* At most this many calibrations in one geometry packet (a few cameras per
 * field in the league; each is ~80 bytes). */
#define TRK_SSL_CALIB_MAX 16

/* Millimetres per unit for a calibration's unit "mm", "cm" or "m"; 0 for
 * any other. */
double trk_ssl_unit_mm(const char *unit);

/* The tracked format (protocol/ssl/ssl_*_tracked.proto: ssl-vision's
 * TrackerWrapperPacket), what a tracker sends for the whole field: metres,
 * metres per second, radians. */
enum trk_ssl_team { TRK_SSL_TEAM_UNKNOWN = 0, TRK_SSL_TEAM_YELLOW = 1, TRK_SSL_TEAM_BLUE = 2 };

struct trk_ssl_tracked_ball {
    float x, y, z;    /* m */
    bool has_vel;     /* vx, vy, vz are sent */
    float vx, vy, vz; /* m/s */
    float visibility; /* [0, 1] */
};

struct trk_ssl_tracked_robot {
    uint32_t id;
    enum trk_ssl_team team;
    float x, y;        /* m */
    float orientation; /* rad, counter-clockwise from the field's +x, [-pi, pi] */
    bool has_vel;      /* vx, vy are sent */
    float vx, vy;      /* m/s */
    float visibility;  /* [0, 1] */
};

struct trk_ssl_tracked_frame {
    const char *uuid;        /* the source's id, the same in every packet */
    const char *source_name; /* NULL: not sent */
    uint32_t frame_number;
    double timestamp; /* Unix s the positions are for */
    const struct trk_ssl_tracked_ball *balls;
    size_t n_balls;
    const struct trk_ssl_tracked_robot *robots;
    size_t n_robots;
};

/* Appends one TrackerWrapperPacket holding f to out: 0, TRK_ETOOBIG (over
 * TRK_SSL_PACKET_MAX: nothing appended) or TRK_ENOMEM. */
int trk_ssl_pack_tracked(const struct trk_ssl_tracked_frame *f, struct trk_buf *out);

/* Appends one SSL_WrapperPacket holding det and/or field (either may be
 * NULL, not both; source SSL_SOURCE_OTHER) to out. 0, TRK_EINVAL (nothing
 * to send, or over TRK_SSL_CALIB_MAX calibrations), TRK_ETOOBIG (over TRK_SSL_PACKET_MAX: nothing
 * appended) or TRK_ENOMEM. */
int trk_ssl_pack(const struct trk_ssl_detection *det, const struct trk_ssl_field *field,
                 struct trk_buf *out);

#endif
