/* Orientation and axes from exact second moments (moments.h). */
#include "moments.h"

#include <math.h>

#define PI 3.14159265358979323846

typedef __int128 i128;
typedef unsigned __int128 u128;

/* The 256-bit product of two non-negative 128-bit numbers, as hi * 2^128 + lo. */
static void mul_wide(u128 a, u128 b, u128 *hi, u128 *lo)
{
    const u128 m = ((u128)1 << 64) - 1;
    const u128 a0 = a & m, a1 = a >> 64, b0 = b & m, b1 = b >> 64;
    const u128 p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    const u128 mid = (p00 >> 64) + (p01 & m) + (p10 & m);
    *lo = (p00 & m) | (mid << 64);
    *hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
}

/* a * b - c * c for a, b >= 0, exactly, as a double (0 when negative, which
 * no real set of pixels gives: Cauchy-Schwarz). */
static double det_exact(i128 a, i128 b, i128 c)
{
    if (a <= 0 || b <= 0) return 0;
    const u128 cc = (u128)(c < 0 ? -c : c);
    u128 h1, l1, h2, l2;
    mul_wide((u128)a, (u128)b, &h1, &l1);
    mul_wide(cc, cc, &h2, &l2);
    if (h1 < h2 || (h1 == h2 && l1 <= l2)) return 0;
    const u128 lo = l1 - l2, hi = h1 - h2 - (l1 < l2);
    return ldexp((double)hi, 128) + (double)lo;
}

int trk_moments_shape(uint64_t mass, uint64_t sum_x, uint64_t sum_y, uint64_t sum_xx,
                      uint64_t sum_yy, uint64_t sum_xy, struct trk_shape *out)
{
    *out = (struct trk_shape){ 0, 0, 0 };
    if (mass == 0) return -1;
    /* mass^2 times the covariance matrix [[a, c], [c, b]]: mass <= 2^32,
     * sum_x, sum_y < 2^48 and the second moments < 2^63 (backend.h,
     * TRK_MAX_SIDE), so each product is below 2^96 and the differences fit
     * i128 with room to spare. */
    const i128 m = (i128)mass;
    i128 a = m * (i128)sum_xx - (i128)sum_x * (i128)sum_x;
    i128 b = m * (i128)sum_yy - (i128)sum_y * (i128)sum_y;
    i128 c = m * (i128)sum_xy - (i128)sum_x * (i128)sum_y;
    if (a < 0) a = 0;
    if (b < 0) b = 0;
    if (a == 0 || b == 0) c = 0; /* c * c <= a * b for real pixels */
    const double m2 = (double)mass * (double)mass;
    /* Eigenvalues: l1 = (a + b) / 2 + r, r = hypot((a - b) / 2, c), both
     * terms >= 0 (no cancellation); l2 = det / l1 (the small one, taken
     * from the exact determinant rather than as a difference). */
    const double half_diff = (double)(a - b) / 2, cd = (double)(c);
    const double l1 = (double)(a + b) / 2 + hypot(half_diff, cd);
    const double l2 = l1 > 0 ? det_exact(a, b, c) / l1 : 0;
    out->major = sqrt(l1 / m2);
    out->minor = sqrt(l2 / m2);
    if (out->minor > out->major) out->minor = out->major; /* rounding at a disc */
    /* The major axis: 2 theta = atan2(2c, a - b) in pixel coordinates (y
     * down, so clockwise on screen); on screen, counter-clockwise, the
     * covariance changes sign. No preferred direction (a == b, c == 0):
     * atan2(0, 0) = 0, orientation 0 as moments.h defines. */
    if (c == 0 && a == b) return 0;
    double deg = 0.5 * atan2(-2.0 * cd, 2.0 * half_diff) * (180.0 / PI);
    deg = deg < 0 ? deg + 180.0 : deg + 0.0; /* + 0.0: no -0 */
    if (deg >= 180.0) deg -= 180.0;
    out->orientation = deg;
    return 0;
}
