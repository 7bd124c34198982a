/* The frame result (protocol/result.h): what trk_frame_result_fill derives
 * once per frame (centroids, found, world points, blob lists cut to K,
 * instances of tracked objects only) and what a copy keeps, against values
 * worked out here by hand. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "result.h"

/* A calibration that maps pixel (x, y) to world (x / 10, y / 10): four
 * corners of a 100 x 100 pixel square. */
static void scale_calib(struct trk_calib *c)
{
    static const double pt[4][4] = {
        { 0, 0, 0, 0 }, { 100, 0, 10, 0 }, { 100, 100, 10, 10 }, { 0, 100, 0, 10 }
    };
    memset(c, 0, sizeof(*c));
    c->on = true;
    c->n = 4;
    memcpy(c->pt, pt, sizeof(pt));
    strcpy(c->unit, "cm");
    CHECK(trk_calib_solve(c, NULL) == 0);
}

static bool near(double a, double b)
{
    return a - b < 1e-9 && b - a < 1e-9;
}

/* World points go through a fitted homography: equal to 1e-6. */
static bool near_world(double a, double b)
{
    return a - b < 1e-6 && b - a < 1e-6;
}

/* Three objects: found with 5 blobs of which K = 3 are listed and tracked
 * with 2 instances; below its min_mass; empty (no centroid). */
static void test_fill(void)
{
    struct trk_object_def defs[3] = {
        { .name = "ball", .min_mass = 2, .blobs = 3, .track = true },
        { .name = "faint", .min_mass = 50, .blobs = 0, .track = false },
        { .name = "gone", .min_mass = 0 },
    };
    const struct trk_obj_result res[3] = {
        { .mass = 4, .sum_x = 4 * 20 + 2, .sum_y = 4 * 30, .x0 = 19, .y0 = 29, .x1 = 21, .y1 = 31 },
        { .mass = 10, .sum_x = 10 * 55, .sum_y = 10 * 66 },
        { .mass = 0, .x0 = -1, .y0 = -1, .x1 = -1, .y1 = -1 },
    };
    struct trk_blob b5[5];
    for (int k = 0; k < 5; k++)
        b5[k] = (struct trk_blob){ .mass = (uint64_t)(10 - k),
                                   .sum_x = (uint64_t)(10 - k) * 40,
                                   .sum_y = (uint64_t)(10 - k) * (uint64_t)k,
                                   .perimeter = 8 };
    const struct trk_blob_list blobs[3] = { { b5, 5 }, { b5, 5 }, { NULL, 0 } };
    const struct trk_instance inst[2] = { { .id = 1, .cx = 1, .cy = 2, .age = 3 },
                                          { .id = 2, .cx = 4, .cy = 5, .lost = 1 } };
    const struct trk_instance_list il[3] = { { inst, 2 }, { inst, 2 }, { NULL, 0 } };
    struct trk_calib calib;
    scale_calib(&calib);
    const struct trk_frame_meta m = { .seq = 9, .width = 100, .height = 100 };
    struct trk_frame_result r = { 0 };
    CHECK(trk_frame_result_fill(&r, &m, defs, 3, res, blobs, il, &calib) == 0);
    CHECK(r.n == 3 && r.meta.seq == 9 && r.defs == defs);
    CHECK(r.calibrated && r.world_decimals == calib.decimals);
    /* found: mass >= max(min_mass, 1). */
    CHECK(r.obj[0].found && !r.obj[1].found && !r.obj[2].found);
    CHECK(near(r.obj[0].c.cx, 20.5) && near(r.obj[0].c.cy, 30));
    CHECK(near(r.obj[1].c.cx, 55) && near(r.obj[1].c.cy, 66));
    /* World points: the calibration's scale. */
    CHECKF(r.obj[0].c.world && near_world(r.obj[0].c.wx, 2.05) && near_world(r.obj[0].c.wy, 3),
           "world %d %.9f %.9f", r.obj[0].c.world, r.obj[0].c.wx, r.obj[0].c.wy);
    CHECK(r.obj[2].r.mass == 0 && !r.obj[2].c.world);
    /* Blobs: the list cut to K, in order, each with its centroid; none for
     * blobs 0. */
    CHECK(r.obj[0].n_blobs == 3 && r.obj[1].n_blobs == 0 && r.obj[2].n_blobs == 0);
    for (int k = 0; k < r.obj[0].n_blobs; k++) {
        const size_t at = r.obj[0].blob0 + (size_t)k;
        CHECK(r.blobs[at].mass == b5[k].mass);
        CHECK(near(r.blob_c[at].cx, 40) && near(r.blob_c[at].cy, k));
        CHECK(r.blob_c[at].world && near_world(r.blob_c[at].wx, 4));
    }
    /* Instances: the tracked object's only. */
    CHECK(r.obj[0].has_instances && r.obj[0].n_inst == 2);
    CHECK(r.inst[r.obj[0].inst0 + 1].id == 2 && r.inst[r.obj[0].inst0 + 1].lost == 1);
    CHECK(!r.obj[1].has_instances && r.obj[1].n_inst == 0);

    /* A copy keeps every value and its own lists. */
    struct trk_frame_result c = { 0 };
    trk_frame_result_copy(&c, &r);
    CHECK(c.n == 3 && c.calibrated && c.obj[0].n_blobs == 3 && c.obj[0].n_inst == 2);
    CHECK(c.blobs != r.blobs && c.inst != r.inst);
    r.blobs[r.obj[0].blob0].mass = 999; /* the next frame reuses the lists */
    CHECK(c.blobs[c.obj[0].blob0].mass == 10);
    CHECK(near(c.blob_c[c.obj[0].blob0 + 2].cy, 2) && c.inst[c.obj[0].inst0].id == 1);

    /* No instances given, no calibration: no key, no world points. */
    CHECK(trk_frame_result_fill(&r, &m, defs, 3, res, blobs, NULL, NULL) == 0);
    CHECK(!r.calibrated && !r.obj[0].has_instances && !r.obj[0].c.world);
    calib.on = false; /* a set without one: the same */
    CHECK(trk_frame_result_fill(&r, &m, defs, 3, res, blobs, il, &calib) == 0);
    CHECK(!r.calibrated && !r.obj[0].c.world && r.obj[0].has_instances);
    trk_frame_result_free(&r);
    trk_frame_result_free(&r); /* twice is safe */
    trk_frame_result_free(&c);
}

/* Markers and instances' world values: a marker's world point at its
 * pattern's height (no camera pose: the floor point) and its heading
 * carried through the map (this one keeps screen y down, so a heading of h
 * on screen is -h in the world: mirrored); a copy keeps them; instances'
 * world points and velocities per second at the rate given. */
static void test_markers_world(void)
{
    struct trk_calib calib;
    scale_calib(&calib);
    struct trk_object_def defs[1] = {
        { .name = "ball", .min_mass = 1, .blobs = 1, .track = true }
    };
    const struct trk_obj_result res[1] = { { .mass = 1, .sum_x = 50, .sum_y = 20 } };
    const struct trk_instance inst[1] = { { .id = 4, .cx = 50, .cy = 20, .vx = 1, .vy = -2 } };
    const struct trk_instance_list il[1] = { { inst, 1 } };
    const struct trk_frame_meta m = { .seq = 1, .width = 100, .height = 100 };
    struct trk_frame_result r = { 0 };
    CHECK(trk_frame_result_fill(&r, &m, defs, 1, res, NULL, il, &calib) == 0);
    const struct trk_instance *x = &r.inst[0];
    CHECK(x->world && near_world(x->wx, 5) && near_world(x->wy, 2) && !x->world_v);
    trk_frame_result_set_rate(&r, &calib, 0); /* the rate unknown: no velocity */
    CHECK(!r.inst[0].world_v);
    trk_frame_result_set_rate(&r, &calib, 30);
    CHECKF(x->world_v && near_world(x->wvx, 3) && near_world(x->wvy, -6), "%g %g", x->wvx, x->wvy);

    struct trk_pattern pats[2] = { { .name = "blue", .height = 150 }, { .name = "tag" } };
    const struct trk_marker mk[2] = {
        { .pattern = 0, .id = 5, .cx = 30, .cy = 40, .heading = 30 },
        { .pattern = 1, .id = 9, .cx = 60, .cy = 70, .heading = 270, .lost = 2 }
    };
    CHECK(trk_frame_result_set_markers(&r, pats, 2, mk, 2, &calib) == 0);
    CHECK(r.n_markers == 2 && r.patterns == pats && r.n_patterns == 2);
    CHECK(r.markers[0].m.id == 5 && r.markers[1].m.lost == 2);
    CHECK(r.markers[0].world && near_world(r.markers[0].wx, 3) && near_world(r.markers[0].wy, 4));
    CHECKF(fabs(r.markers[0].wheading - 330) < 1e-6, "%.9f", r.markers[0].wheading);
    CHECKF(fabs(r.markers[1].wheading - 90) < 1e-6, "%.9f", r.markers[1].wheading);
    struct trk_frame_result c = { 0 };
    trk_frame_result_copy(&c, &r);
    CHECK(c.n_markers == 2 && c.markers != r.markers && c.markers[1].m.id == 9 &&
          c.n_patterns == 2 && near(c.markers[0].wheading, r.markers[0].wheading));
    /* Without a calibration: no world pose; refilling clears the markers. */
    CHECK(trk_frame_result_set_markers(&r, pats, 2, mk, 1, NULL) == 0);
    CHECK(r.n_markers == 1 && !r.markers[0].world);
    CHECK(trk_frame_result_fill(&r, &m, defs, 1, res, NULL, il, NULL) == 0);
    CHECK(r.n_markers == 0 && r.n_patterns == 0 && !r.inst[0].world);
    trk_frame_result_free(&r);
    trk_frame_result_free(&c);
    CHECK(r.markers == NULL && c.markers == NULL);
}

/* The moments of the pixels (x[i], y[i]), i < n, as a backend sums them. */
static struct trk_obj_result sums_of(const int *x, const int *y, int n)
{
    struct trk_obj_result r = { .mass = (uint64_t)n };
    for (int i = 0; i < n; i++) {
        const uint64_t u = (uint64_t)x[i], v = (uint64_t)y[i];
        r.sum_x += u, r.sum_y += v;
        r.sum_xx += u * u, r.sum_yy += v * v, r.sum_xy += u * v;
    }
    return r;
}

/* Shapes are derived once, for objects, blobs (from their sums) and in the
 * world (instances from the tracker's orientation): a horizontal run of 5
 * pixels (orientation 0, major sqrt(2): the deviation of 10..14, minor 0),
 * a diagonal up to the right on screen (45 degrees; through the
 * calibration, which keeps y down, the world sees it mirrored: 135), one
 * pixel and nothing (all 0, no world heading without a centroid). */
static void test_shape(void)
{
    static const int hx[5] = { 10, 11, 12, 13, 14 }, hy[5] = { 20, 20, 20, 20, 20 };
    static const int dx[3] = { 40, 41, 42 }, dy[3] = { 52, 51, 50 };
    static const int px[1] = { 7 }, py[1] = { 9 };
    struct trk_object_def defs[4] = {
        { .name = "run", .blobs = 1 },
        { .name = "diag" },
        { .name = "dot" },
        { .name = "none", .blobs = 1, .track = true },
    };
    struct trk_obj_result res[4] = { sums_of(hx, hy, 5),
                                     sums_of(dx, dy, 3),
                                     sums_of(px, py, 1),
                                     { .x0 = -1, .y0 = -1, .x1 = -1, .y1 = -1 } };
    struct trk_blob diag = { .mass = 3 };
    diag.sum_x = res[1].sum_x, diag.sum_y = res[1].sum_y;
    diag.sum_xx = res[1].sum_xx, diag.sum_yy = res[1].sum_yy, diag.sum_xy = res[1].sum_xy;
    const struct trk_blob_list blobs[4] = { { &diag, 1 }, { NULL, 0 }, { NULL, 0 }, { NULL, 0 } };
    const struct trk_instance inst[1] = {
        { .id = 3, .cx = 50, .cy = 50, .orientation = 30, .major = 4, .minor = 1, .vth = 2 }
    };
    const struct trk_instance_list il[4] = { { NULL, 0 }, { NULL, 0 }, { NULL, 0 }, { inst, 1 } };
    struct trk_calib calib;
    scale_calib(&calib);
    const struct trk_frame_meta m = { .seq = 1, .width = 100, .height = 100 };
    struct trk_frame_result r = { 0 };
    CHECK(trk_frame_result_fill(&r, &m, defs, 4, res, blobs, il, &calib) == 0);
    const struct trk_shape *s = &r.obj[0].c.shape;
    CHECKF(near(s->orientation, 0) && near(s->major, sqrt(2)) && s->minor == 0, "%g %g %g",
           s->orientation, s->major, s->minor);
    CHECKF(r.obj[0].c.world_h && near_world(r.obj[0].c.wheading, 0), "%g", r.obj[0].c.wheading);
    s = &r.obj[1].c.shape;
    CHECKF(near(s->orientation, 45) && near(s->major, sqrt(4.0 / 3)) && s->minor == 0, "%g %g %g",
           s->orientation, s->major, s->minor);
    CHECKF(r.obj[1].c.world_h && near_world(r.obj[1].c.wheading, 135), "%g", r.obj[1].c.wheading);
    /* The run's blob list holds the diagonal: its own shape, not the object's. */
    CHECK(r.obj[0].n_blobs == 1 && near(r.blob_c[r.obj[0].blob0].shape.orientation, 45));
    CHECK(near_world(r.blob_c[r.obj[0].blob0].wheading, 135));
    s = &r.obj[2].c.shape;
    CHECK(s->orientation == 0 && s->major == 0 && s->minor == 0 && r.obj[2].c.world_h);
    s = &r.obj[3].c.shape;
    CHECK(s->orientation == 0 && s->major == 0 && s->minor == 0 && !r.obj[3].c.world_h);
    /* The instance: its orientation carried into the world (-30: 150),
     * and its angular velocity per second only once a rate is known. */
    const struct trk_instance *x = &r.inst[r.obj[3].inst0];
    CHECKF(x->world_h && near_world(x->wheading, 150), "%g", x->wheading);
    CHECK(!x->rate);
    trk_frame_result_set_rate(&r, NULL, 0);
    CHECK(!x->rate);
    trk_frame_result_set_rate(&r, NULL, 25); /* no calibration needed */
    CHECK(x->rate && near(x->vtheta, 50) && !x->world_v);
    trk_frame_result_free(&r);
}

/* trk_centroid is the division itself: exact as the expression it replaces
 * (the outputs' bytes depend on it). */
static void test_centroid(void)
{
    static const uint64_t mass[] = { 1, 3, 7, 4096, 123457, 1ULL << 40 };
    for (size_t i = 0; i < sizeof(mass) / sizeof(mass[0]); i++) {
        const uint64_t sx = mass[i] * 641 + 1411, sy = mass[i] * 17 + 1;
        double cx, cy;
        trk_centroid(sx, sy, mass[i], &cx, &cy);
        CHECK(cx == (double)sx / (double)mass[i] && cy == (double)sy / (double)mass[i]);
    }
}

int main(void)
{
    test_fill();
    test_centroid();
    test_markers_world();
    test_shape();
    return check_exit("protocol_result");
}
