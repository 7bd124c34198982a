/* TRK_ASSERT(cond): an invariant check that stays on in release builds.
 *
 * For branches that cannot be reached unless the program itself is wrong (a
 * format that trk_image_check already rejected, a switch over an enum that
 * has a case for every value). Returning a made-up default there would turn
 * a bug into silently wrong tracking results; the assert stops at the place
 * instead: it prints file:line and the condition, then aborts (host) or
 * traps the kernel (CUDA device code, where the launch then fails with
 * cudaErrorLaunchFailure and TRK_CUDA_TRY logs it).
 *
 * Not for bad input: input from outside (files, clients, cameras) gets an
 * error code and a message. Usable from every layer (C, C++ and CUDA host
 * and device code); it depends on nothing but the C library. Named
 * trk_assert.h, not assert.h, because base/ is on the include path and would
 * shadow <assert.h>. */
#ifndef TRK_BASE_TRK_ASSERT_H
#define TRK_BASE_TRK_ASSERT_H

#include <stdio.h>
#include <stdlib.h>

/* Out of line in spirit: cold and noreturn, so the check costs the hot path
 * one predictable branch. */
__attribute__((noreturn, cold)) static inline void trk_assert_fail(const char *cond,
                                                                   const char *file, int line)
{
    fprintf(stderr, "trackd: %s:%d: assertion failed: %s\n", file, line, cond);
    fflush(stderr);
    abort();
}

#if defined(__CUDA_ARCH__)
/* Device pass of nvcc: printf goes to the host's stdout at the next
 * synchronisation; __trap() aborts the kernel. */
#define TRK_ASSERT(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("trackd: %s:%d: assertion failed: %s\n", __FILE__, __LINE__, #cond);            \
            __trap();                                                                              \
        }                                                                                          \
    } while (0)
#else
#define TRK_ASSERT(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) trk_assert_fail(#cond, __FILE__, __LINE__);                                   \
    } while (0)
#endif

#endif
