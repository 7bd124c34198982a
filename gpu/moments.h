/* Second moments: the exact integer sums every backend accumulates
 * (backend.h: sum_xx, sum_yy, sum_xy next to mass, sum_x, sum_y) and the
 * pure math that turns them into a shape: orientation of the major axis and
 * the spread along both principal axes.
 *
 * The sums are over pixel coordinates (x right, y down, the pixel's integer
 * index, not its centre: a shift of every pixel by the same amount leaves the
 * central moments, hence the shape, unchanged). */
#ifndef TRK_GPU_MOMENTS_H
#define TRK_GPU_MOMENTS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The shape of a set of pixels from its moments.
 * orientation: degrees in [0, 180), the direction of the major axis,
 *   counter-clockwise on screen from +x. Pixel y grows downwards, so the
 *   covariance's sign is flipped before the angle is taken: a blob running
 *   from bottom-left to top-right on screen (x up as y goes down, negative
 *   pixel covariance) has orientation in (0, 90).
 * major, minor: pixels, the standard deviations of the pixel coordinates
 *   along the major and minor axes (square roots of the covariance
 *   matrix's eigenvalues, population form: divided by mass), major >=
 *   minor >= 0. Not the equivalent ellipse's semi-axes: a uniformly filled
 *   ellipse with semi-axes a >= b has major = a / 2, minor = b / 2 (so the
 *   equivalent ellipse is 2 * major by 2 * minor); a filled w x h rectangle
 *   (w >= h) has major = sqrt((w*w - 1) / 12), minor = sqrt((h*h - 1) / 12).
 * Degenerate cases: mass 0 gives all zero (and trk_moments_shape returns
 *   -1); one pixel gives all zero; pixels on one straight line give minor
 *   exactly 0; no preferred direction (equal spread on both axes and no
 *   covariance: a single pixel, a square, a disc) gives orientation 0. */
struct trk_shape {
    double orientation;
    double major, minor;
};

/* The shape from the exact sums of backend.h (mass pixels; sum_x .. sum_xy
 * over them). The central moments are formed exactly in 128-bit integers
 * (mass * sum_xx - sum_x * sum_x: no cancellation in floating point), and the
 * minor axis from the exact determinant, so a thin blob's minor axis keeps
 * its precision. The sums must be ones a backend can return (backend.h's
 * bounds: at most 2^32 pixels of coordinates below 2^16). Returns 0, or -1
 * when mass == 0 (out all zero). Sums that no set of mass pixels can have
 * (a negative variance) are clamped to 0, and with a variance of 0 so is
 * the covariance (a backend's fixture without second moments: all 0). */
int trk_moments_shape(uint64_t mass, uint64_t sum_x, uint64_t sum_y, uint64_t sum_xx,
                      uint64_t sum_yy, uint64_t sum_xy, struct trk_shape *out);

/* Sum of x*x over the run of integers [a, b] (0 <= a <= b < TRK_MAX_SIDE):
 * what a run of pixels adds to sum_xx, by the closed form
 * n (n + 1) (2n + 1) / 6 (exact: the product is divisible by 6). */
#ifdef __CUDACC__
__host__ __device__
#endif
    static inline uint64_t
    trk_run_sum_xx(uint32_t a, uint32_t b)
{
    const uint64_t hi = (uint64_t)b * (b + 1) * (2 * (uint64_t)b + 1) / 6;
    const uint64_t lo = a ? (uint64_t)(a - 1) * a * (2 * (uint64_t)a - 1) / 6 : 0;
    return hi - lo;
}

#ifdef __cplusplus
}
#endif
#endif
