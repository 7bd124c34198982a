/* The --ssl output's mapping (daemon/out/ssl.h) from a frame result filled
 * by hand to SSL-Vision packets, for test_ssl_frame.py to read with a real
 * protobuf decoder: ssl_frame OUT_DIR writes
 *   frame.bin   a ball object with 3 listed blobs (one without a world
 *               point), markers of a yellow, a blue and a team-less
 *               pattern (some lost, one without a world pose, one with a
 *               negative id), world unit cm (x10 to mm), camera 5;
 *   aggregate.bin the ball object listing no blobs: its centroid;
 *   noball.bin  no ball object (map.ball NULL) and no markers;
 *   geometry.bin the field and the camera's calibration: trk_calib_solve on
 *               six floor points (cm) projected by a known camera (CAM_*
 *               below; test_ssl_frame.py rebuilds it), then
 *               trk_ssl_calib_fill in mm, camera 5, 1280x720. The same
 *               points with the world's y flipped (a left-handed view: the
 *               camera below the plane) must give no calibration.
 * The expected values are in test_ssl_frame.py; exits non-zero on a
 * failure it can see itself (unit names, a fill or pack error). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "out/ssl.h"
#include "trk_error.h"

static int write_packet(const char *dir, const char *name, const struct trk_ssl_frame *f)
{
    struct trk_buf b = { 0 };
    char path[4096];
    int rc = trk_ssl_pack(&f->det, NULL, &b);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = rc ? NULL : fopen(path, "wb");
    if (fp) {
        size_t n = fwrite(b.data, 1, b.len, fp);
        rc = fclose(fp) == 0 && n == b.len ? 0 : -1;
    } else {
        rc = -1;
    }
    trk_buf_free(&b);
    return rc;
}

/* The known camera: fx = fy = 800 px, principal point (640, 360); centre
 * (50, -20, 300) cm over the floor; R = Rx(10 deg) Rz(20 deg) diag(1, -1, -1)
 * (looking down, image x along the world's x before the turns). */
#define CAM_F 800.0
static void cam_rot(double r[9])
{
    double a = 10 * M_PI / 180, b = 20 * M_PI / 180;
    double rx[9] = { 1, 0, 0, 0, cos(a), -sin(a), 0, sin(a), cos(a) };
    double rz[9] = { cos(b), -sin(b), 0, sin(b), cos(b), 0, 0, 0, 1 };
    double d[9] = { 1, 0, 0, 0, -1, 0, 0, 0, -1 }, t[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            t[i * 3 + j] = 0;
            for (int k = 0; k < 3; k++)
                t[i * 3 + j] += rz[i * 3 + k] * d[k * 3 + j];
        }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            r[i * 3 + j] = 0;
            for (int k = 0; k < 3; k++)
                r[i * 3 + j] += rx[i * 3 + k] * t[k * 3 + j];
        }
}

/* The calibration of the known camera from six floor points; flip: the
 * world's y negated (same pixels). */
static struct trk_calib known_calib(bool flip)
{
    static const double w[6][2] = { { -100, -80 }, { 180, -60 }, { 160, 90 },
                                    { -90, 70 },   { 40, 10 },   { -20, -40 } };
    const double c[3] = { 50, -20, 300 };
    double r[9];
    cam_rot(r);
    struct trk_calib k = {
        .on = true, .n = 6, .lens = true, .fx = CAM_F, .fy = CAM_F, .cx = 640, .cy = 360
    };
    snprintf(k.unit, sizeof k.unit, "cm");
    for (int i = 0; i < 6; i++) {
        double p[3] = { w[i][0] - c[0], w[i][1] - c[1], -c[2] }, q[3];
        for (int j = 0; j < 3; j++)
            q[j] = r[j * 3] * p[0] + r[j * 3 + 1] * p[1] + r[j * 3 + 2] * p[2];
        k.pt[i][0] = CAM_F * q[0] / q[2] + 640;
        k.pt[i][1] = CAM_F * q[1] / q[2] + 360;
        k.pt[i][2] = w[i][0];
        k.pt[i][3] = flip ? -w[i][1] : w[i][1];
    }
    CHECK(trk_calib_solve(&k, NULL) == 0 && k.pose);
    return k;
}

static void write_geometry(const char *dir)
{
    struct trk_ssl_calib cal;
    struct trk_calib k = known_calib(false);
    CHECK(trk_ssl_calib_fill(&cal, &k, 10.0, 5, 1280, 720));
    struct trk_ssl_field field = { .length = 9000,
                                   .width = 6000,
                                   .goal_width = 1000,
                                   .goal_depth = 180,
                                   .boundary_width = 300,
                                   .calib = &cal,
                                   .n_calib = 1 };
    struct trk_buf b = { 0 };
    char path[4096];
    snprintf(path, sizeof path, "%s/geometry.bin", dir);
    FILE *fp = NULL;
    CHECK(trk_ssl_pack(NULL, &field, &b) == 0 && (fp = fopen(path, "wb")) != NULL);
    if (fp) CHECK(fwrite(b.data, 1, b.len, fp) == b.len && fclose(fp) == 0);
    trk_buf_free(&b);
    struct trk_calib flipped = known_calib(true);
    CHECK(flipped.centre[2] < 0 && !trk_ssl_calib_fill(&cal, &flipped, 10.0, 5, 1280, 720));
    CHECK(!trk_ssl_calib_fill(&cal, &k, 0, 5, 1280, 720)); /* no mm */
    k.pose = false;
    CHECK(!trk_ssl_calib_fill(&cal, &k, 10.0, 5, 1280, 720)); /* no camera matrix */
}

static struct trk_point point(double cx, double cy, bool world, double wx, double wy)
{
    return (struct trk_point){ .cx = cx, .cy = cy, .world = world, .wx = wx, .wy = wy };
}

static struct trk_result_marker marker(uint16_t pattern, int32_t id, double cx, double cy,
                                       uint32_t lost, bool world, double wx, double wy,
                                       double wheading, double confidence)
{
    return (struct trk_result_marker){ .m = { .pattern = pattern,
                                              .id = id,
                                              .cx = cx,
                                              .cy = cy,
                                              .confidence = confidence,
                                              .lost = lost },
                                       .world = world,
                                       .wx = wx,
                                       .wy = wy,
                                       .wheading = wheading };
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: ssl_frame OUT_DIR\n");
        return 2;
    }
    CHECK(trk_ssl_unit_mm("mm") == 1 && trk_ssl_unit_mm("cm") == 10 &&
          trk_ssl_unit_mm("m") == 1000);
    CHECK(trk_ssl_unit_mm("px") == 0 && trk_ssl_unit_mm("") == 0 && trk_ssl_unit_mm("MM") == 0);

    struct trk_object_def defs[2] = { { .name = "robot-dots", .blobs = 4 },
                                      { .name = "ball", .blobs = 3 } };
    struct trk_blob blobs[3] = { { .mass = 400 }, { .mass = 100 }, { .mass = 50 } };
    struct trk_point blob_c[3] = { point(320.5, 240.25, true, -12.5, 7.25),
                                   point(10, 20, false, 0, 0), point(600.75, 30.5, true, 30, -20) };
    struct trk_pattern pats[3] = { { .name = "yellow", .team = TRK_TEAM_YELLOW, .height = 15 },
                                   { .name = "blue", .team = TRK_TEAM_BLUE, .height = 14.5 },
                                   { .name = "tag", .team = TRK_TEAM_NONE, .height = 0 } };
    struct trk_result_marker markers[] = {
        marker(1, 3, 100.5, 200.5, 0, true, 50, -25, 90, 0.75),       /* blue 3     */
        marker(0, 0, 110, 210, 0, true, -450, 300, 270, 1),           /* yellow 0   */
        marker(2, 7, 120, 220, 0, true, 1, 2, 0, 1),                  /* no team    */
        marker(0, 1, 130, 230, 2, true, 5, 5, 45, 0.5),               /* lost       */
        marker(1, 4, 140, 240, 0, false, 0, 0, 0, 0.5),               /* no world   */
        marker(1, -1, 150, 250, 0, true, 5, 5, 45, 0.5),              /* id < 0     */
        marker(0, 15, 160.25, 260.75, 0, true, 0.5, -0.5, -30, 0.25), /* yellow 15 */
        marker(1, 9, 170, 270, 0, true, -1, 1, 180, 0.5),             /* blue 9     */
    };
    struct trk_frame_result r = {
        .meta = { .seq = (1ull << 32) + 77 },
        .defs = defs,
        .n = 2,
        .calibrated = true,
        .blobs = blobs,
        .blob_c = blob_c,
        .markers = markers,
        .n_markers = sizeof markers / sizeof markers[0],
        .patterns = pats,
        .n_patterns = 3,
    };
    r.obj[0] = (struct trk_result_object){ .found = false };
    r.obj[1] = (struct trk_result_object){ .r = { .mass = 550 },
                                           .found = true,
                                           .c = point(333, 222, true, -1, 1),
                                           .blob0 = 0,
                                           .n_blobs = 3 };
    struct trk_ssl_map map = { .camera_id = 5, .ball = "ball", .mm_per_unit = 10 };
    struct trk_ssl_frame f = { 0 };
    CHECK(trk_ssl_frame_fill(&f, &map, &r, 1795000000.5, 1795000000.625) == 0);
    CHECK(f.det.n_balls == 2 && f.det.n_yellow == 2 && f.det.n_blue == 2);
    CHECK(write_packet(argv[1], "frame.bin", &f) == 0);

    /* The ball object lists no blobs: its centroid, confidence 1. */
    r.obj[1].n_blobs = 0;
    r.meta.seq = 78;
    CHECK(trk_ssl_frame_fill(&f, &map, &r, 1.5, 2.5) == 0);
    CHECK(f.det.n_balls == 1);
    CHECK(write_packet(argv[1], "aggregate.bin", &f) == 0);

    /* No ball object, no markers (the robots' storage is kept). */
    map.ball = NULL;
    r.n_markers = 0;
    CHECK(trk_ssl_frame_fill(&f, &map, &r, 3, 4) == 0);
    CHECK(f.det.n_balls == 0 && f.det.n_yellow == 0 && f.det.n_blue == 0);
    CHECK(write_packet(argv[1], "noball.bin", &f) == 0);
    write_geometry(argv[1]);
    trk_ssl_frame_free(&f);
    trk_ssl_frame_free(&f);
    CHECK(f.robots == NULL);
    return check_exit("ssl_frame");
}
