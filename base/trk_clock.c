#include "trk_clock.h"

#include <time.h>

double trk_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double trk_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

int trk_cond_init_monotonic(pthread_cond_t *c)
{
    pthread_condattr_t ca;
    int err = pthread_condattr_init(&ca);
    if (err) return -err;
    err = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (!err) err = pthread_cond_init(c, &ca);
    pthread_condattr_destroy(&ca);
    return -err;
}
