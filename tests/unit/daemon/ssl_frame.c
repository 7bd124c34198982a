/* The --ssl output's mapping (daemon/out/ssl.h) from a frame result filled
 * by hand to SSL-Vision packets, for test_ssl_frame.py to read with a real
 * protobuf decoder: ssl_frame OUT_DIR writes
 *   frame.bin   a ball object with 3 listed blobs (one without a world
 *               point), markers of a yellow, a blue and a team-less
 *               pattern (some lost, one without a world pose, one with a
 *               negative id), world unit cm (x10 to mm), camera 5;
 *   aggregate.bin the ball object listing no blobs: its centroid;
 *   noball.bin  no ball object (map.ball NULL) and no markers.
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
    trk_ssl_frame_free(&f);
    trk_ssl_frame_free(&f);
    CHECK(f.robots == NULL);
    return check_exit("ssl_frame");
}
