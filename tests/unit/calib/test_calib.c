/* Unit tests of config/calib.c: world coordinates from point pairs, the
 * lens model, and every rule trk_calib_solve checks. Known answers come
 * from homographies and lenses built here by hand; the comparison with
 * OpenCV is test_calib_opencv.py. Usage: test_calib CASE. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "calib.h"
#include "objects.h"

/* A perspective map (a camera looking at the floor at an angle): pixel ->
 * world in mm, about 2 mm per pixel. */
static const double H_TRUE[9] = { 2.0, 0.3, -150.0, -0.1, 2.6, -90.0, 0.0004, 0.0011, 1.0 };

static void apply_h(const double h[9], double x, double y, double *u, double *v)
{
    double w = h[6] * x + h[7] * y + h[8];
    *u = (h[0] * x + h[1] * y + h[2]) / w;
    *v = (h[3] * x + h[4] * y + h[5]) / w;
}

/* The world point of (x, y) under H_TRUE's inverse direction: the test
 * gives world points and asks for pixels, so pixels are computed from the
 * inverse. inv = adjugate of H_TRUE (any scale of it is the inverse map). */
static void inverse(const double h[9], double inv[9])
{
    inv[0] = h[4] * h[8] - h[5] * h[7];
    inv[1] = h[2] * h[7] - h[1] * h[8];
    inv[2] = h[1] * h[5] - h[2] * h[4];
    inv[3] = h[5] * h[6] - h[3] * h[8];
    inv[4] = h[0] * h[8] - h[2] * h[6];
    inv[5] = h[2] * h[3] - h[0] * h[5];
    inv[6] = h[3] * h[7] - h[4] * h[6];
    inv[7] = h[1] * h[6] - h[0] * h[7];
    inv[8] = h[0] * h[4] - h[1] * h[3];
}

/* c gets n pairs: world points given, pixels by H_TRUE^-1 (so H_TRUE is
 * the exact answer). */
static void make_pairs(struct trk_calib *c, const double (*world)[2], int n)
{
    double inv[9];
    inverse(H_TRUE, inv);
    memset(c, 0, sizeof *c);
    c->n = n;
    snprintf(c->unit, sizeof c->unit, "mm");
    for (int i = 0; i < n; i++) {
        apply_h(inv, world[i][0], world[i][1], &c->pt[i][0], &c->pt[i][1]);
        c->pt[i][2] = world[i][0];
        c->pt[i][3] = world[i][1];
    }
}

/* The largest distance between calib's world point and H_TRUE's over a
 * grid of pixels of a 640x480 frame, relative to 1000 mm. */
static double max_map_error(const struct trk_calib *c)
{
    double worst = 0;
    for (int y = 0; y <= 480; y += 40)
        for (int x = 0; x <= 640; x += 40) {
            double u, v, wx = NAN, wy = NAN;
            apply_h(H_TRUE, x, y, &u, &v);
            if (!trk_calib_to_world(c, x, y, &wx, &wy)) return INFINITY;
            worst = fmax(worst, fmax(fabs(wx - u), fabs(wy - v)) / 1000);
        }
    return worst;
}

static const double RECT[4][2] = { { 0, 0 }, { 1000, 0 }, { 1000, 600 }, { 0, 600 } };

static void test_exact_four(void)
{
    struct trk_calib c;
    make_pairs(&c, RECT, 4);
    struct trk_calib_fault f;
    CHECKF(trk_calib_solve(&c, &f) == 0, "%s", f.msg);
    double e = max_map_error(&c);
    CHECKF(e < 1e-10, "4 points map with error %g", e);
    for (int i = 0; i < 4; i++) {
        double wx, wy;
        CHECK(trk_calib_to_world(&c, c.pt[i][0], c.pt[i][1], &wx, &wy));
        CHECKF(fabs(wx - RECT[i][0]) < 1e-8 && fabs(wy - RECT[i][1]) < 1e-8, "point %d: %g %g", i,
               wx, wy);
    }
    CHECKF(c.rms < 1e-9, "rms %g", c.rms);
    /* About 2 mm per pixel at the centre: 1/100 pixel is 0.02 mm, so 2
     * decimals. In metres the same map needs 5. */
    CHECKF(c.decimals == 2, "decimals %d", c.decimals);
    for (int i = 0; i < 4; i++)
        c.pt[i][2] /= 1000, c.pt[i][3] /= 1000;
    CHECK(trk_calib_solve(&c, &f) == 0);
    CHECKF(c.decimals == 5, "decimals in m %d", c.decimals);
    /* The point order does not matter as long as pixel and world agree. */
    make_pairs(&c, RECT, 4);
    double t[4];
    memcpy(t, c.pt[0], sizeof t);
    memcpy(c.pt[0], c.pt[2], sizeof t);
    memcpy(c.pt[2], t, sizeof t);
    CHECK(trk_calib_solve(&c, &f) == 0 && max_map_error(&c) < 1e-10);
}

static void test_least_squares(void)
{
    double grid[30][2];
    int n = 0;
    for (int y = 0; y < 5; y++)
        for (int x = 0; x < 6; x++) {
            grid[n][0] = x * 200.0;
            grid[n][1] = y * 150.0;
            n++;
        }
    struct trk_calib c;
    struct trk_calib_fault f;
    make_pairs(&c, (const double(*)[2])grid, n);
    CHECKF(trk_calib_solve(&c, &f) == 0, "%s", f.msg);
    CHECKF(max_map_error(&c) < 1e-10, "exact grid: %g", max_map_error(&c));
    CHECKF(c.rms < 1e-8, "rms %g", c.rms);
    /* World points off by +-1 mm, alternating: the fit stays close to
     * H_TRUE (well within 1 mm), and its residual is at most the noise. */
    for (int i = 0; i < n; i++)
        c.pt[i][2] += (i % 2 ? 1.0 : -1.0), c.pt[i][3] += (i % 3 ? 1.0 : -1.0);
    CHECKF(trk_calib_solve(&c, &f) == 0, "%s", f.msg);
    CHECKF(c.rms > 0.5 && c.rms <= sqrt(2.0) + 1e-9, "noisy rms %g", c.rms);
    CHECKF(max_map_error(&c) < 1.0 / 1000, "noisy grid: %g mm", max_map_error(&c) * 1000);
    /* Three of the points on each line is fine with more than 4 points. */
    static const double mid[6][2] = { { 0, 0 },      { 500, 0 },   { 1000, 0 },
                                      { 1000, 600 }, { 500, 600 }, { 0, 600 } };
    make_pairs(&c, mid, 6);
    CHECKF(trk_calib_solve(&c, &f) == 0, "%s", f.msg);
    CHECK(max_map_error(&c) < 1e-10);
}

/* OpenCV's forward model in pixels, written out independently. */
static void distort_px(const struct trk_calib *c, double ux, double uy, double *px, double *py)
{
    double x = (ux - c->cx) / c->fx, y = (uy - c->cy) / c->fy, r2 = x * x + y * y;
    const double *k = c->dist;
    double rad = 1 + k[0] * r2 + k[1] * r2 * r2 + k[4] * r2 * r2 * r2;
    double xd = x * rad + 2 * k[2] * x * y + k[3] * (r2 + 2 * x * x);
    double yd = y * rad + k[2] * (r2 + 2 * y * y) + 2 * k[3] * x * y;
    *px = xd * c->fx + c->cx;
    *py = yd * c->fy + c->cy;
}

static void test_lens(void)
{
    struct trk_calib c;
    make_pairs(&c, RECT, 4);
    double ux, uy;
    CHECK(trk_calib_undistort(&c, 123.25, 77.5, &ux, &uy) && ux == 123.25 && uy == 77.5);
    c.lens = true;
    c.fx = 600, c.fy = 590, c.cx = 320, c.cy = 240;
    c.n_dist = 5;
    const double k[5] = { -0.3, 0.1, 0.001, -0.002, -0.02 };
    memcpy(c.dist, k, sizeof k);
    double worst = 0;
    for (int y = 0; y <= 480; y += 60)
        for (int x = 0; x <= 640; x += 80) {
            double px, py;
            distort_px(&c, x, y, &px, &py);
            bool ok = trk_calib_undistort(&c, px, py, &ux, &uy);
            CHECKF(ok, "(%d, %d) seen at (%g, %g) not undistorted", x, y, px, py);
            if (ok) worst = fmax(worst, fmax(fabs(ux - x), fabs(uy - y)));
        }
    CHECKF(worst < 1e-7, "undistort misses by %g px", worst);
    /* Calibration pixels as the lens shows them: the world map undoes it. */
    double inv[9];
    inverse(H_TRUE, inv);
    for (int i = 0; i < 4; i++) {
        double sx, sy;
        apply_h(inv, RECT[i][0], RECT[i][1], &sx, &sy);
        distort_px(&c, sx, sy, &c.pt[i][0], &c.pt[i][1]);
    }
    struct trk_calib_fault f;
    CHECKF(trk_calib_solve(&c, &f) == 0, "%s", f.msg);
    double px, py, wx, wy, u, v;
    distort_px(&c, 400, 300, &px, &py);
    apply_h(H_TRUE, 400, 300, &u, &v);
    CHECK(trk_calib_to_world(&c, px, py, &wx, &wy));
    CHECKF(fabs(wx - u) < 1e-6 && fabs(wy - v) < 1e-6, "world %g %g, want %g %g", wx, wy, u, v);
    /* Far outside the frame a strong barrel model folds back: no inverse. */
    c.dist[0] = -1.0;
    CHECK(!trk_calib_undistort(&c, 320 + 5000, 240, &ux, &uy));
}

static void test_horizon(void)
{
    struct trk_calib c;
    make_pairs(&c, RECT, 4);
    CHECK(trk_calib_solve(&c, NULL) == 0);
    /* H_TRUE's horizon: 0.0004 x + 0.0011 y + 1 = 0, e.g. y = -1000 at x = 250. */
    double wx = 7, wy = 7;
    CHECK(!trk_calib_to_world(&c, 250, -1000, &wx, &wy) && wx == 7 && wy == 7);
    CHECK(!trk_calib_to_world(&c, 250, -2000, &wx, &wy));
    CHECK(trk_calib_to_world(&c, 250, -900, &wx, &wy));
}

/* solve fails with msg containing want, at point (or -1). */
static void expect_fault(struct trk_calib *c, const char *want, int point)
{
    struct trk_calib_fault f;
    int rc = trk_calib_solve(c, &f);
    CHECKF(rc == TRK_EINVAL, "no error; want \"%s\"", want);
    if (rc) {
        CHECKF(strstr(f.msg, want) != NULL, "\"%s\" lacks \"%s\"", f.msg, want);
        CHECKF(f.point == point, "\"%s\" at point %d, want %d", f.msg, f.point, point);
    }
}

static void test_errors(void)
{
    struct trk_calib c;
    make_pairs(&c, RECT, 3);
    expect_fault(&c, "points has 3 point pairs (4..64 are needed)", -1);
    /* Pixel points: three on one line (point 2 on the line 0-1). */
    make_pairs(&c, RECT, 4);
    c.pt[2][0] = (c.pt[0][0] + c.pt[1][0]) / 2;
    c.pt[2][1] = (c.pt[0][1] + c.pt[1][1]) / 2 + 0.5; /* 0.5 px off a ~500 px side */
    expect_fault(&c, "points[0], [1] and [2] lie on one line in pixels", 2);
    expect_fault(&c, "at least 1% is needed", 2);
    /* Exactly three world points on one line: no homography but a
     * singular one fits 4 pixel points in general position. */
    make_pairs(&c, RECT, 4);
    c.pt[3][2] = 500, c.pt[3][3] = 0;
    expect_fault(&c, "the homography is singular", -1);
    /* Nearly so (0.5% of the side off the line): a regular homography,
     * refused as collinear in world units. */
    make_pairs(&c, RECT, 4);
    c.pt[3][2] = 500, c.pt[3][3] = 5;
    expect_fault(&c, "lie on one line in world units", 3);
    /* World points listed in another order than the pixels. */
    make_pairs(&c, RECT, 4);
    double t[2] = { c.pt[2][2], c.pt[2][3] };
    c.pt[2][2] = c.pt[3][2], c.pt[2][3] = c.pt[3][3];
    c.pt[3][2] = t[0], c.pt[3][3] = t[1];
    expect_fault(&c, "not in the same order", 0);
    /* More than 4 points, all but one on one line. */
    static const double line5[5][2] = { { 0, 0 }, { 200, 0 }, { 500, 0 }, { 1000, 0 }, { 0, 600 } };
    make_pairs(&c, line5, 5);
    expect_fault(&c, "no 4 of the 5 points are free of three on one line in pixels", -1);
    /* Values. */
    make_pairs(&c, RECT, 4);
    c.pt[1][3] = NAN;
    expect_fault(&c, "points[1][3] = nan is not a finite number", 1);
    make_pairs(&c, RECT, 4);
    c.pt[0][0] = 2e6;
    expect_fault(&c, "points[0][0] = 2e+06 is not a finite number within +-1e+06", 0);
    make_pairs(&c, RECT, 4);
    c.n_dist = 4;
    expect_fault(&c, "distortion needs a camera_matrix", -1);
    c.lens = true, c.fx = 0, c.fy = 500;
    expect_fault(&c, "fx and fy must be > 0", -1);
    c.fx = 500, c.cx = INFINITY;
    expect_fault(&c, "camera_matrix cx = inf", -1);
}

static void test_file_round_trip(void)
{
    static const char text[] =
        "{\"objects\": [{\"name\": \"red\", \"space\": \"hsv\", \"lo\": [346, 110, 70], "
        "\"hi\": [14, 255, 255]}],\n"
        " \"calibration\": {\"unit\": \"mm\", \"points\": [[100.5, 80, 0, 0], "
        "[540, 90.25, 1000, 0], [560, 400, 1000, 600], [90, 420, 0, 600.1]],\n"
        "  \"camera_matrix\": {\"fx\": 600, \"fy\": 600, \"cx\": 320, \"cy\": 240},\n"
        "  \"distortion\": [-0.1, 0.01, 0, 0.0001]}}";
    static struct trk_objects a, b;
    struct trk_config_error e;
    CHECKF(trk_objects_load_string(text, strlen(text), "t", &a, &e) == 0, "%s", e.msg);
    CHECK(a.calib.on && a.calib.n == 4 && a.calib.lens && a.calib.n_dist == 4);
    CHECK(!strcmp(a.calib.unit, "mm") && a.calib.pt[3][3] == 600.1 && a.calib.dist[3] == 0.0001);
    char *json = trk_objects_to_json(&a);
    CHECK(json != NULL);
    if (json) {
        CHECKF(trk_objects_load_string(json, strlen(json), "t2", &b, &e) == 0, "%s", e.msg);
        CHECKF(memcmp(&a, &b, sizeof a) == 0, "round trip differs:\n%s", json);
        CHECKF(strstr(json, "\"calibration\": {\"unit\": \"mm\", \"points\": [\n    [100.5, 80, "
                            "0, 0],") != NULL,
               "%s", json);
        free(json);
    }
    /* A set built in code is checked by the same rules. */
    char msg[256];
    b = a;
    b.calib.pt[1][0] = b.calib.pt[0][0], b.calib.pt[1][1] = b.calib.pt[0][1];
    CHECK(trk_objects_validate(&b, msg, sizeof msg) == TRK_EINVAL);
    CHECKF(strstr(msg, "calibration.points[0], [1] and [2] lie on one line") != NULL, "%s", msg);
    CHECK(trk_objects_to_json(&b) == NULL);
    b = a;
    b.calib.unit[0] = 0;
    CHECK(trk_objects_validate(&b, msg, sizeof msg) == TRK_EINVAL);
    CHECK_STR(msg, "calibration.unit must not be empty");
    b.calib.on = false; /* off: its fields are not looked at */
    CHECK(trk_objects_validate(&b, msg, sizeof msg) == 0);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } cases[] = {
        { "exact_four", test_exact_four },
        { "least_squares", test_least_squares },
        { "lens", test_lens },
        { "horizon", test_horizon },
        { "errors", test_errors },
        { "file_round_trip", test_file_round_trip },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (argc < 2 || !strcmp(argv[1], cases[i].name)) cases[i].fn();
    }
    return check_exit(argc > 1 ? argv[1] : "test_calib");
}
