/* The second moments a pixel adds, written out pixel by pixel: the oracle
 * side of every test that sums pixels itself (the backends add runs and
 * bit planes; backend.h defines the sums). Header-only. */
#ifndef TRK_TEST_MOMENTS_ORACLE_H
#define TRK_TEST_MOMENTS_ORACLE_H

#include <stdint.h>

/* Adds pixel (x, y) to the sum_xx, sum_yy, sum_xy of *r (a trk_obj_result
 * or trk_blob). */
#define ORACLE_ADD_MOMENTS(r, x, y)                                                                \
    do {                                                                                           \
        (r)->sum_xx += (uint64_t)(x) * (uint64_t)(x);                                              \
        (r)->sum_yy += (uint64_t)(y) * (uint64_t)(y);                                              \
        (r)->sum_xy += (uint64_t)(x) * (uint64_t)(y);                                              \
    } while (0)

/* Whether a and b (trk_obj_result or trk_blob) have the same second moments. */
#define ORACLE_SAME_MOMENTS(a, b)                                                                  \
    ((a)->sum_xx == (b)->sum_xx && (a)->sum_yy == (b)->sum_yy && (a)->sum_xy == (b)->sum_xy)

#endif
