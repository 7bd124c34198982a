/* The clocks of trackd: one monotonic clock for every timing, deadline and
 * timestamp inside the process (capture times, backend timings, timed
 * waits), and the wall clock for what leaves it (epoch milliseconds).
 *
 * Plain C, usable from .cu files. */
#ifndef TRK_BASE_CLOCK_H
#define TRK_BASE_CLOCK_H

#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Seconds on CLOCK_MONOTONIC. */
double trk_now(void);
/* Milliseconds since the epoch (CLOCK_REALTIME). */
double trk_wall_ms(void);
/* Initialises c so that its timed waits (pthread_cond_timedwait) take
 * absolute deadlines on trk_now's clock. Returns 0 or -errno. */
int trk_cond_init_monotonic(pthread_cond_t *c);

#ifdef __cplusplus
}
#endif
#endif
