/* Writes SSL-Vision packets (protocol/ssl_packet.h) for test_ssl_decode.py
 * to read with a real protobuf decoder: ssl_pack OUT_DIR writes
 * detection.bin (2 balls, 3 yellow and 2 blue robots, every field set to a
 * value the decoder checks), geometry.bin (the field alone), both.bin, and
 * empty.bin (a frame with nothing seen), tracked.bin (a TrackerWrapperPacket:
 * 2 balls, 3 robots, velocities on some); it checks the refusals itself
 * (nothing to send; over the UDP limit) and exits non-zero on any failure. */
#include <stdio.h>
#include <stdlib.h>

#include "../check.h"
#include "ssl_packet.h"
#include "trk_error.h"

static int write_file(const char *dir, const char *name, const struct trk_buf *b)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t n = fwrite(b->data, 1, b->len, f);
    return fclose(f) == 0 && n == b->len ? 0 : -1;
}

/* Field values follow a rule the decoder recomputes: see test_ssl_decode.py. */
static void fill(struct trk_ssl_ball *balls, struct trk_ssl_robot *robots)
{
    for (int i = 0; i < 2; i++)
        balls[i] = (struct trk_ssl_ball){ .confidence = 0.5f + 0.25f * i,
                                          .area = 40u + i,
                                          .x = -1000.5f + i,
                                          .y = 250.25f * i,
                                          .pixel_x = 10.5f + i,
                                          .pixel_y = 20.5f + i };
    for (int i = 0; i < 5; i++)
        robots[i] = (struct trk_ssl_robot){ .confidence = 0.125f * (i + 1),
                                            .robot_id = 3u * i,
                                            .x = 100.0f * i - 4500.0f,
                                            .y = 3000.0f - 50.0f * i,
                                            .orientation = -3.0f + 1.5f * i,
                                            .pixel_x = 640.25f + i,
                                            .pixel_y = 360.75f - i,
                                            .height = 150.0f,
                                            .has_height = i % 2 == 0 };
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: ssl_pack OUT_DIR\n");
        return 2;
    }
    struct trk_ssl_ball balls[2];
    struct trk_ssl_robot robots[5];
    fill(balls, robots);
    struct trk_ssl_detection det = { .frame_number = 4000000000u,
                                     .t_capture = 1795000000.125,
                                     .t_sent = 1795000000.25,
                                     .camera_id = 3,
                                     .balls = balls,
                                     .n_balls = 2,
                                     .yellow = robots,
                                     .n_yellow = 3,
                                     .blue = robots + 3,
                                     .n_blue = 2 };
    struct trk_ssl_field field = {
        .length = 9000, .width = 6000, .goal_width = 1000, .goal_depth = 180, .boundary_width = 300
    };
    struct trk_ssl_detection none = { .frame_number = 0, .camera_id = 0 };
    struct trk_buf b = { 0 };
    CHECK(trk_ssl_pack(&det, NULL, &b) == 0 && write_file(argv[1], "detection.bin", &b) == 0);
    trk_buf_reset(&b);
    CHECK(trk_ssl_pack(NULL, &field, &b) == 0 && write_file(argv[1], "geometry.bin", &b) == 0);
    trk_buf_reset(&b);
    CHECK(trk_ssl_pack(&det, &field, &b) == 0 && write_file(argv[1], "both.bin", &b) == 0);
    trk_buf_reset(&b);
    CHECK(trk_ssl_pack(&none, NULL, &b) == 0 && write_file(argv[1], "empty.bin", &b) == 0);
    trk_buf_reset(&b);
    struct trk_ssl_tracked_ball tb[2] = {
        { .x = 1.5f, .y = -2.25f, .has_vel = true, .vx = 0.5f, .vy = -0.75f, .visibility = 1 },
        { .x = -4.5f, .y = 3.0f, .z = 0.125f, .visibility = 0.5f }
    };
    struct trk_ssl_tracked_robot tr[3];
    for (int i = 0; i < 3; i++)
        tr[i] = (struct trk_ssl_tracked_robot){ .id = 5u * i,
                                                .team = i == 1 ? TRK_SSL_TEAM_BLUE
                                                               : TRK_SSL_TEAM_YELLOW,
                                                .x = 0.25f * i - 4.0f,
                                                .y = 2.5f - 0.5f * i,
                                                .orientation = -3.0f + 2.5f * i,
                                                .has_vel = i == 2,
                                                .vx = 1.25f,
                                                .vy = -0.5f,
                                                .visibility = 1 };
    struct trk_ssl_tracked_frame tf = { .uuid = "6f1c1e4a-2b7e-4c55-9a0e-1b2c3d4e5f60",
                                        .source_name = "trackd-fuse",
                                        .frame_number = 4000000001u,
                                        .timestamp = 1795000000.375,
                                        .balls = tb,
                                        .n_balls = 2,
                                        .robots = tr,
                                        .n_robots = 3 };
    CHECK(trk_ssl_pack_tracked(&tf, &b) == 0 && write_file(argv[1], "tracked.bin", &b) == 0);
    trk_buf_reset(&b);
    CHECK(trk_ssl_pack(NULL, NULL, &b) == TRK_EINVAL && b.len == 0);
    /* 4000 robots: ~30 bytes each, over the UDP limit: refused, nothing appended */
    struct trk_ssl_robot *many = calloc(4000, sizeof *many);
    CHECK(many != NULL);
    if (many) {
        struct trk_ssl_detection big = { .blue = many, .n_blue = 4000 };
        CHECK(trk_ssl_pack(&big, NULL, &b) == TRK_ETOOBIG && b.len == 0);
        free(many);
    }
    trk_buf_free(&b);
    return check_exit("ssl_pack");
}
