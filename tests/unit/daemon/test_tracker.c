/* The tracker stage (daemon/tracker.h): lifecycle, the full-frame search it
 * asks for today, what it remembers of each object across frames (found,
 * last sighting and its centroid, by the result messages' min_mass rule),
 * and that a new object set forgets all of it. Inputs are made by the CPU
 * reference backend on a scene with known answers, as the pipeline does. */
#include <string.h>

#include "../check.h"
#include "backend.h"
#include "tracker.h"

#define W 40
#define H 30

/* A gray frame with a red 4x4 square at (x, y) when x >= 0. */
static void paint(uint8_t *rgb, int x, int y)
{
    memset(rgb, 128, (size_t)W * H * 3);
    for (int j = 0; x >= 0 && j < 4; j++)
        for (int i = 0; i < 4; i++) {
            uint8_t *p = rgb + ((size_t)(y + j) * W + x + i) * 3;
            p[0] = 250, p[1] = p[2] = 10;
        }
}

int main(void)
{
    struct trk_tracker *t = NULL;
    struct trk_tracker_cfg bad = { .max_objects = 0 };
    CHECK(trk_tracker_create(&bad, &t) == TRK_EINVAL && t == NULL);
    bad.max_objects = TRK_MAX_OBJECTS + 1;
    CHECK(trk_tracker_create(&bad, &t) == TRK_EINVAL && t == NULL);

    struct trk_tracker_cfg cfg = { .max_objects = 4 };
    CHECK(trk_tracker_create(&cfg, &t) == 0 && t != NULL);
    if (!t) return check_exit("tracker");
    CHECK(trk_tracker_count(t) == 0 && trk_tracker_track(t, 0) == NULL);

    /* red (a 16-pixel square), "big red" (needs 20 pixels), green (absent). */
    struct trk_object_def defs[3] = {
        { .name = "red", .space = TRK_SPACE_RGB, .lo = { 200, 0, 0 }, .hi = { 255, 50, 50 } },
        { .name = "big",
          .space = TRK_SPACE_RGB,
          .lo = { 200, 0, 0 },
          .hi = { 255, 50, 50 },
          .min_mass = 20 },
        { .name = "green", .space = TRK_SPACE_RGB, .lo = { 0, 200, 0 }, .hi = { 50, 255, 50 } },
    };
    CHECK(trk_tracker_reset(t, defs, 5) == TRK_EINVAL && trk_tracker_count(t) == 0);
    CHECK(trk_tracker_reset(t, defs, -1) == TRK_EINVAL);
    CHECK(trk_tracker_reset(t, defs, 3) == 0 && trk_tracker_count(t) == 3);
    for (int i = 0; i < 3; i++)
        CHECK(!trk_tracker_track(t, i)->seen && !trk_tracker_track(t, i)->found);
    CHECK(trk_tracker_track(t, 3) == NULL && trk_tracker_track(t, -1) == NULL);

    struct trk_backend *b = NULL;
    struct trk_backend_cfg bc = { .kind = TRK_BACKEND_CPU_REF, .max_width = W, .max_height = H };
    CHECK(trk_backend_create(&bc, &b) == 0 && trk_backend_set_objects(b, defs, 3) == 0);
    static uint8_t rgb[W * H * 3];
    struct trk_image img = { .plane = { rgb },
                             .pitch = { W * 3 },
                             .width = W,
                             .height = H,
                             .fmt = TRK_FMT_RGB24,
                             .full_range = true };
    struct trk_obj_result res[3];

    /* Frame 10: the square at (5, 6); its centroid is (6.5, 7.5). Today
     * every object is searched in the whole frame. */
    paint(rgb, 5, 6);
    const struct trk_roi *rois = trk_tracker_rois(t, &img);
    CHECK(rois == NULL);
    CHECK(trk_backend_process(b, &img, rois, res, NULL) == 0);
    CHECK(trk_tracker_update(t, 10, res, 3) == 0);
    const struct trk_track *red = trk_tracker_track(t, 0);
    CHECK(red->found && red->seen && red->last_seen == 10 && red->mass == 16);
    CHECK(red->cx == 6.5 && red->cy == 7.5);
    /* 16 pixels are below "big"'s min_mass: seen nowhere yet. */
    CHECK(!trk_tracker_track(t, 1)->found && !trk_tracker_track(t, 1)->seen);
    CHECK(!trk_tracker_track(t, 2)->found && !trk_tracker_track(t, 2)->seen);

    /* Frame 11: gone. Not found, but the last sighting is kept. */
    paint(rgb, -1, 0);
    CHECK(trk_backend_process(b, &img, trk_tracker_rois(t, &img), res, NULL) == 0);
    CHECK(trk_tracker_update(t, 11, res, 3) == 0);
    CHECK(!red->found && red->seen && red->last_seen == 10 && red->cx == 6.5 && red->cy == 7.5);

    /* Frame 12: back elsewhere. */
    paint(rgb, 30, 20);
    CHECK(trk_backend_process(b, &img, trk_tracker_rois(t, &img), res, NULL) == 0);
    CHECK(trk_tracker_update(t, 12, res, 3) == 0);
    CHECK(red->found && red->last_seen == 12 && red->cx == 31.5 && red->cy == 21.5);

    /* Results for another number of objects than the set: refused. */
    CHECK(trk_tracker_update(t, 13, res, 2) == TRK_EINVAL);
    CHECK(trk_tracker_update(t, 13, NULL, 3) == TRK_EINVAL);
    CHECK(red->last_seen == 12);

    /* A new set (green first now) forgets everything. */
    CHECK(trk_tracker_reset(t, defs + 2, 1) == 0 && trk_tracker_count(t) == 1);
    CHECK(!trk_tracker_track(t, 0)->seen && !trk_tracker_track(t, 0)->found);
    CHECK(trk_tracker_track(t, 1) == NULL);
    /* And an empty one takes empty results. */
    CHECK(trk_tracker_reset(t, NULL, 0) == 0 && trk_tracker_update(t, 14, NULL, 0) == 0);

    trk_backend_destroy(&b);
    trk_tracker_destroy(&t);
    CHECK(t == NULL);
    trk_tracker_destroy(&t); /* twice is fine */
    return check_exit("tracker");
}
