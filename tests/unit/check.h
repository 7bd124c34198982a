/* Minimal test harness shared by the unit and GPU tests: CHECK records a failure with
 * file:line and the expression and keeps going, so one run shows every
 * broken case; main returns check_exit() (non-zero when anything failed). */
#ifndef TRK_TEST_CHECK_H
#define TRK_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            if (check_failures < 50)                                                               \
                fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);           \
            check_failures++;                                                                      \
        }                                                                                          \
    } while (0)

/* CHECK with a printf-style context line printed on failure. */
#define CHECKF(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            if (check_failures < 50) {                                                             \
                fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);           \
                fprintf(stderr, __VA_ARGS__);                                                      \
                fputc('\n', stderr);                                                               \
            }                                                                                      \
            check_failures++;                                                                      \
        }                                                                                          \
    } while (0)

/* Two strings that must be equal; prints both on failure. */
#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        if (strcmp(a_, b_) != 0) {                                                                 \
            if (check_failures < 50)                                                               \
                fprintf(stderr, "%s:%d: got\n  \"%s\"\nwant\n  \"%s\"\n", __FILE__, __LINE__, a_,  \
                        b_);                                                                       \
            check_failures++;                                                                      \
        }                                                                                          \
    } while (0)

static inline int check_exit(const char *name)
{
    if (check_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

#endif
