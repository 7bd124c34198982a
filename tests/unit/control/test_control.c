/* daemon/control.c: trk_pixel_matches (the mask view) counts exactly the
 * CPU reference backend's mass for every object of random scenes in every
 * pixel format and matrix; trk_control_poll hands out each new version once;
 * trk_control_reload keeps the current set when the file is invalid. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "control.h"
#include "scene.h"

static void mask_equals_mass(void)
{
    static const enum trk_pixfmt fmts[] = { TRK_FMT_RGB24, TRK_FMT_BGRA, TRK_FMT_YUYV, TRK_FMT_NV12,
                                            TRK_FMT_I420 };
    for (int seed = 1; seed <= 3; seed++) {
        struct trk_scene sc;
        CHECK(trk_scene_random(97, 61, 24, (uint64_t)seed, &sc) == 0);
        for (size_t fi = 0; fi < sizeof(fmts) / sizeof(fmts[0]); fi++) {
            for (int m = 0; m < 4; m++) {
                uint8_t *buf = NULL;
                struct trk_image img;
                CHECK(trk_image_from_rgb(sc.rgb, sc.width, sc.height, fmts[fi],
                                         (enum trk_matrix)(m / 2), m % 2, 3, &buf, &img) == 0);
                struct trk_backend *b = NULL;
                struct trk_backend_cfg bc = { .kind = TRK_BACKEND_CPU_REF,
                                              .max_width = sc.width,
                                              .max_height = sc.height };
                CHECK(trk_backend_create(&bc, &b) == 0);
                CHECK(trk_backend_set_objects(b, sc.objects, sc.n_objects) == 0);
                struct trk_obj_result res[TRK_MAX_OBJECTS];
                CHECK(trk_backend_process(b, &img, NULL, res, NULL) == 0);
                for (int i = 0; i < sc.n_objects; i++) {
                    uint64_t n = 0;
                    for (int y = 0; y < sc.height; y++)
                        for (int x = 0; x < sc.width; x++)
                            n += trk_pixel_matches(&img, x, y, &sc.objects[i]);
                    CHECKF(n == res[i].mass,
                           "seed %d %s matrix/range %d object %d: mask %llu, "
                           "mass %llu",
                           seed, trk_pixfmt_name(fmts[fi]), m, i, (unsigned long long)n,
                           (unsigned long long)res[i].mass);
                }
                trk_backend_destroy(&b);
                free(buf);
            }
        }
        trk_scene_free(&sc);
    }
}

static void versions_and_reload(void)
{
    char path[] = "/tmp/trk_control_test_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    const char *good = "{\"objects\":[{\"name\":\"a\",\"space\":\"rgb\",\"lo\":[1,2,3],"
                       "\"hi\":[4,5,6]}]}";
    CHECK(write(fd, good, strlen(good)) == (ssize_t)strlen(good));
    close(fd);
    static struct trk_objects objs, got;
    struct trk_config_error cerr;
    CHECK(trk_objects_load_file(path, &objs, &cerr) == 0);
    struct trk_control_cfg cfg = { .objects = &objs, .save_path = path };
    struct trk_control *c = NULL;
    CHECK(trk_control_create(&cfg, &c) == 0);
    uint64_t v = 0;
    CHECK(trk_control_poll(c, &v, &got) && got.n == 1 && !strcmp(got.def[0].name, "a"));
    CHECK(!trk_control_poll(c, &v, &got)); /* nothing new */

    FILE *f = fopen(path, "w");
    fputs("{\"objects\":[{\"name\":\"b\",\"space\":\"rgb\",\"lo\":[1,2,3]}]}", f);
    fclose(f);
    char msg[600];
    CHECK(trk_control_reload(c, msg, sizeof(msg)) != 0);
    CHECKF(strstr(msg, path) && strstr(msg, ":1:"), "%s", msg);
    CHECK(!trk_control_poll(c, &v, &got)); /* the old set stays, same version */

    f = fopen(path, "w");
    fputs("{\"objects\":[{\"name\":\"b\",\"space\":\"hsv\",\"lo\":[350,2,3],"
          "\"hi\":[10,5,6]},{\"name\":\"c\",\"space\":\"ycbcr\",\"lo\":[0,0,0],"
          "\"hi\":[9,9,9]}]}",
          f);
    fclose(f);
    CHECK(trk_control_reload(c, msg, sizeof(msg)) == 0);
    CHECK(trk_control_poll(c, &v, &got) && got.n == 2 && !strcmp(got.def[1].name, "c"));
    trk_control_destroy(&c);
    CHECK(c == NULL);
    unlink(path);
}

int main(void)
{
    mask_equals_mass();
    versions_and_reload();
    return check_exit("control");
}
