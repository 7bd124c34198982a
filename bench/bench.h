/* trackd-bench extension points.
 *
 * trackd-bench (bench.c) runs every backend on the standard scenes. Extra
 * experiments that need more than the backend interface (e.g. a CUDA memory
 * floor or the seed paper's parameter sweeps) live in their own bench/bench_*.c
 * files, which bench/CMakeLists.txt compiles into the same executable. Such a
 * file registers itself from a constructor:
 *
 *     static int run_floor(int argc, char **argv) { ... return 0; }
 *     static const struct trk_bench_experiment floor_exp = {
 *         "memfloor", "device memory read floor", run_floor};
 *     __attribute__((constructor)) static void reg(void)
 *     { trk_bench_register(&floor_exp); }
 *
 * and runs with `trackd-bench --experiment memfloor [its own args...]`.
 */
#ifndef TRK_BENCH_H
#define TRK_BENCH_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct trk_bench_experiment {
    const char *name; /* --experiment NAME */
    const char *help; /* one line for --list-experiments */
    /* Gets the arguments after NAME (argv[0] = NAME); returns the exit code. */
    int (*run)(int argc, char **argv);
};

/* Registers e (kept by pointer: give it static storage). At most 32. */
void trk_bench_register(const struct trk_bench_experiment *e);

/* Monotonic clock in milliseconds. */
double trk_bench_now_ms(void);

/* Median of n values (sorts v in place); 0 when n == 0. */
double trk_bench_median(double *v, size_t n);

#ifdef __cplusplus
}
#endif
#endif
