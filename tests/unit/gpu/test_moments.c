/* trk_moments_shape (gpu/moments.h): orientation and axes from exact second
 * moments, against hand-worked values (a pixel, lines in four directions, a
 * rectangle, a disc, an empty set) and against filled rectangles rasterised
 * here at many angles, whose true orientation and standard deviations are
 * known in closed form. Also trk_run_sum_xx against the plain sum, and the
 * moments of a whole row of the widest frame backends take (TRK_MAX_SIDE). */
#include "backend.h"
#include "moments.h"
#include "moments_oracle.h"
#include "../check.h"

#include <math.h>
#include <stdint.h>

#define PI 3.14159265358979323846

/* Moments of a set of pixels, summed pixel by pixel. */
struct sums {
    uint64_t mass, sum_x, sum_y, sum_xx, sum_yy, sum_xy;
};

static void add(struct sums *s, int x, int y)
{
    s->mass++;
    s->sum_x += (uint64_t)x;
    s->sum_y += (uint64_t)y;
    ORACLE_ADD_MOMENTS(s, x, y);
}

static struct trk_shape shape_of(const struct sums *s)
{
    struct trk_shape sh;
    int rc = trk_moments_shape(s->mass, s->sum_x, s->sum_y, s->sum_xx, s->sum_yy, s->sum_xy, &sh);
    CHECKF(rc == 0, "mass %llu: rc %d", (unsigned long long)s->mass, rc);
    return sh;
}

static int near(double a, double b, double tol)
{
    return fabs(a - b) <= tol;
}

/* The smallest difference of two orientations (degrees, period 180). */
static double angle_diff(double a, double b)
{
    double d = fmod(fabs(a - b), 180.0);
    return d > 90.0 ? 180.0 - d : d;
}

static void test_hand(void)
{
    struct trk_shape sh;
    /* Empty: -1 and all zero. */
    CHECK(trk_moments_shape(0, 0, 0, 0, 0, 0, &sh) == -1);
    CHECK(sh.orientation == 0 && sh.major == 0 && sh.minor == 0);

    /* One pixel, anywhere: nothing spreads. */
    struct sums p = { 0 };
    add(&p, 1000, 77);
    sh = shape_of(&p);
    CHECK(sh.orientation == 0 && sh.major == 0 && sh.minor == 0);

    /* A horizontal line of n pixels: variance (n^2 - 1) / 12 along x, none
     * across: orientation 0, minor exactly 0. */
    const int n = 9;
    struct sums h = { 0 }, v = { 0 }, d = { 0 }, a = { 0 };
    for (int i = 0; i < n; i++) {
        add(&h, 10 + i, 5);
        add(&v, 5, 10 + i);
        add(&d, 10 + i, 20 + i);         /* pixel y grows with x: down-right on screen */
        add(&a, 10 + i, 20 + n - 1 - i); /* up-right on screen */
    }
    const double sd = sqrt((n * n - 1) / 12.0);
    sh = shape_of(&h);
    CHECK(sh.orientation == 0 && near(sh.major, sd, 1e-12) && sh.minor == 0);
    /* Vertical: 90 degrees. */
    sh = shape_of(&v);
    CHECK(near(sh.orientation, 90, 1e-9) && near(sh.major, sd, 1e-12) && sh.minor == 0);
    /* Down-right on screen is clockwise from +x: 135 counter-clockwise. The
     * spread along the diagonal is sqrt(2) times the per-axis one. */
    sh = shape_of(&d);
    CHECKF(near(sh.orientation, 135, 1e-9), "down-right line: %.12f", sh.orientation);
    CHECK(near(sh.major, sd * sqrt(2.0), 1e-12) && sh.minor == 0);
    sh = shape_of(&a);
    CHECKF(near(sh.orientation, 45, 1e-9), "up-right line: %.12f", sh.orientation);
    CHECK(near(sh.major, sd * sqrt(2.0), 1e-12) && sh.minor == 0);

    /* A filled 7 x 3 rectangle: (w^2 - 1) / 12 and (h^2 - 1) / 12; tall: 90. */
    struct sums r = { 0 }, t = { 0 };
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 7; x++) {
            add(&r, 40 + x, 60 + y);
            add(&t, 60 + y, 40 + x);
        }
    sh = shape_of(&r);
    CHECK(sh.orientation == 0 && near(sh.major, 2.0, 1e-12) &&
          near(sh.minor, sqrt(8.0 / 12.0), 1e-12));
    sh = shape_of(&t);
    CHECK(near(sh.orientation, 90, 1e-9) && near(sh.major, 2.0, 1e-12) &&
          near(sh.minor, sqrt(8.0 / 12.0), 1e-12));

    /* A square and a rasterised disc have no preferred direction: the
     * symmetric sums make the covariance exactly isotropic, orientation 0. */
    struct sums q = { 0 }, c = { 0 };
    for (int y = -6; y <= 6; y++)
        for (int x = -6; x <= 6; x++) {
            add(&q, 300 + x, 200 + y);
            if (x * x + y * y <= 36) add(&c, 300 + x, 200 + y);
        }
    sh = shape_of(&q);
    CHECK(sh.orientation == 0 && sh.major == sh.minor && near(sh.major, sqrt(168 / 12.0), 1e-12));
    sh = shape_of(&c);
    CHECK(sh.orientation == 0 && sh.major == sh.minor && sh.major > 0);
}

/* A filled L x W rectangle centred at (cx, cy), its long side at deg
 * degrees counter-clockwise on screen: the pixels whose centres lie inside
 * it. Its continuous moments: L / sqrt(12) and W / sqrt(12) along the axes. */
static void test_rotated(void)
{
    const double L = 80, Wd = 16, cx = 200.3, cy = 150.6;
    int cases = 0;
    double worst_deg = 0, worst_major = 0, worst_minor = 0;
    for (int step = 0; step < 48; step++) {
        const double deg = step * 3.75, th = deg * PI / 180.0;
        /* Screen y points down: the axis direction in pixel coordinates. */
        const double ux = cos(th), uy = -sin(th);
        struct sums s = { 0 };
        for (int y = 0; y < 300; y++)
            for (int x = 0; x < 400; x++) {
                const double dx = x - cx, dy = y - cy;
                const double along = dx * ux + dy * uy, across = -dx * uy + dy * ux;
                if (fabs(along) <= L / 2 && fabs(across) <= Wd / 2) add(&s, x, y);
            }
        const struct trk_shape sh = shape_of(&s);
        const double e_deg = angle_diff(sh.orientation, deg);
        const double e_major = fabs(sh.major / (L / sqrt(12.0)) - 1);
        const double e_minor = fabs(sh.minor / (Wd / sqrt(12.0)) - 1);
        worst_deg = fmax(worst_deg, e_deg);
        worst_major = fmax(worst_major, e_major);
        worst_minor = fmax(worst_minor, e_minor);
        /* Rasterisation: the pixel set differs from the rectangle by about
         * its perimeter's worth of half pixels, a few per cent of the area
         * of a 16-pixel side; the angle of an 80-pixel axis moves by well
         * under a degree. */
        CHECKF(e_deg < 0.5, "rectangle at %.2f deg: orientation %.4f", deg, sh.orientation);
        CHECKF(e_major < 0.01 && e_minor < 0.05, "rectangle at %.2f deg: axes %.4f %.4f", deg,
               sh.major, sh.minor);
        CHECK(sh.orientation >= 0 && sh.orientation < 180);
        cases++;
    }
    printf("rotated rectangles: %d angles, worst orientation error %.3f deg, axes %.2f%% %.2f%%\n",
           cases, worst_deg, 100 * worst_major, 100 * worst_minor);
}

/* The closed form of a run's squares, and the sums at the largest frame side:
 * a full row of TRK_MAX_SIDE pixels on the last row. */
static void test_wide(void)
{
    uint64_t plain = 0;
    for (uint32_t x = 0; x <= 70000; x++) {
        plain += (uint64_t)x * x;
        if (x % 9973 == 0 || x == 65535) {
            CHECK(trk_run_sum_xx(0, x) == plain);
            CHECK(trk_run_sum_xx(x, x) == (uint64_t)x * x);
        }
    }
    CHECK(trk_run_sum_xx(100, 199) == trk_run_sum_xx(0, 199) - trk_run_sum_xx(0, 99));
    const uint64_t w = TRK_MAX_SIDE, y = TRK_MAX_SIDE - 1;
    const uint64_t sx = w * (w - 1) / 2;
    struct trk_shape sh;
    CHECK(trk_moments_shape(w, sx, y * w, trk_run_sum_xx(0, (uint32_t)w - 1), y * y * w, y * sx,
                            &sh) == 0);
    CHECKF(sh.orientation == 0 && sh.minor == 0 && near(sh.major, sqrt((w * w - 1) / 12.0), 1e-6),
           "full row: %.9f %.9f %.9f", sh.orientation, sh.major, sh.minor);
}

int main(void)
{
    test_hand();
    test_rotated();
    test_wide();
    return check_exit("test_moments");
}
