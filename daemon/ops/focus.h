/* The focus check: a sharpness figure of one processed frame in N, its
 * baseline and a verdict, for /healthz, /metrics, the stats message and the
 * log (protocol/PROTOCOL.md, "Focus").
 *
 * Sharpness is gpu/canny.h's figure, sqrt(sum of m2 over the Canny edges /
 * pixels): the RMS Sobel magnitude along the edges times the square root of
 * the edge density. Both factors fall as a picture is blurred (softer steps
 * lose magnitude; the weakest edges drop under the thresholds), so their
 * product falls monotonically with blur where the density alone stays flat
 * (a blurred step is still one line) and the mean gradient alone can rise
 * (the weak edges leave first, lifting the mean of the rest).
 *
 * Cost: Canny on a 1080p frame is ~14-19 ms of one core on the CPU twin
 * (docs/BENCHMARKS.md), a whole frame's budget at 60 fps: it never runs on
 * the processing thread. The pipeline lends the frame (as it lends the
 * snapshot's) to this module's thread (nice 10), which takes it only when
 * idle; a frame offered while one is measured goes straight back.
 *
 * Baseline: the median of the first TRK_FOCUS_LEARN samples after start,
 * unless set (--focus-baseline, or trk_focus_set_baseline: the newest
 * reading or a value). The verdict compares
 * the median of the last TRK_FOCUS_WINDOW samples with warn x baseline, so
 * one odd frame (a hand in front of the lens) neither raises nor clears it;
 * changes are logged (warning when lost, info when back) at most once per
 * TRK_FOCUS_LOG_S seconds, the newest verdict winning.
 *
 * Lifecycle: create (memory, the thread) / clear (gives back a lent frame;
 * before the frames' owner goes away) / destroy. Every function may be
 * called from any thread. */
#ifndef TRK_DAEMON_FOCUS_H
#define TRK_DAEMON_FOCUS_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"

/* Samples the learnt baseline is the median of. */
#define TRK_FOCUS_LEARN 5
/* Samples the verdict's median is taken over. */
#define TRK_FOCUS_WINDOW 3
/* Least seconds between two focus lines in the log. */
#define TRK_FOCUS_LOG_S 30.0
/* The Canny setting of the figure: the one the evaluation measured
 * (docs/BENCHMARKS.md, "Canny edges"). */
#define TRK_FOCUS_SIGMA 1.4
#define TRK_FOCUS_LOW   20
#define TRK_FOCUS_HIGH  50

enum trk_focus_runner {
    TRK_FOCUS_CPU = 0, /* the fast CPU twin, one thread */
    TRK_FOCUS_REF,     /* the plain definition (the cpu-ref backend's)  */
    TRK_FOCUS_CUDA,    /* the CUDA form; the CPU twin when it cannot be made */
};
/* Device frames (img->mem TRK_MEM_CUDA, NVDEC's) are measured in place by
 * the CUDA runner, only the sums copied back; with any other runner (or a
 * CUDA one that could not be made) they are copied to the host through
 * trk_focus_frame's host, which the log says once. */

struct trk_focus_cfg {
    int every;       /* one processed frame in every; 0 = off (create fails) */
    double warn;     /* lost below warn x baseline, 0 < warn <= 1         */
    double baseline; /* > 0: fixed; 0: learnt                           */
    enum trk_focus_runner runner;
    int cuda_device;
};

struct trk_focus;

/* 0, TRK_EINVAL or TRK_ENOMEM. */
int trk_focus_create(const struct trk_focus_cfg *cfg, struct trk_focus **out);
/* Stops the thread, gives back a lent frame, frees; safe on NULL and twice
 * (sets *f = NULL). */
void trk_focus_destroy(struct trk_focus **f);

/* Gives a lent frame back to its owner (as trk_snapshot_release_fn). */
typedef void (*trk_focus_release_fn)(void *ctx, void *holder);

/* A processed frame lent to the check: img's pixels unchanged until release
 * is called with holder; host (may be NULL) gives a device frame's host
 * pixels, NULL when they cannot be had. */
struct trk_focus_frame {
    const struct trk_image *img;
    uint64_t seq;
    trk_focus_release_fn release;
    void *ctx, *holder;
    const struct trk_image *(*host)(void *holder);
};

/* Whether frame seq is one to measure (seq % every == 0). */
bool trk_focus_due(const struct trk_focus *f, uint64_t seq);
/* Processing thread: lends fr to the check's thread when it is idle, else
 * releases it at once. Never waits. */
void trk_focus_offer(struct trk_focus *f, const struct trk_focus_frame *fr);
/* Waits for a measurement in progress; until the next offer nothing is
 * lent. */
void trk_focus_clear(struct trk_focus *f);

enum trk_focus_state {
    TRK_FOCUS_NONE = 0, /* no sample yet                                */
    TRK_FOCUS_LEARNING, /* samples, but fewer than TRK_FOCUS_LEARN       */
    TRK_FOCUS_OK,       /* at or above warn x baseline                   */
    TRK_FOCUS_LOST,     /* below it                                      */
};
/* "none", "learning", "ok", "lost". */
const char *trk_focus_state_name(enum trk_focus_state st);

struct trk_focus_reading {
    enum trk_focus_state state;
    double sharpness; /* the newest sample (< 0: none)                  */
    double baseline;  /* < 0: not known yet                             */
    double ratio;     /* median of the window / baseline (< 0: unknown) */
    double warn;
    double density;     /* the newest sample's edge pixels per pixel      */
    double cost_ms;     /* the newest sample's Canny call, wall clock     */
    uint64_t samples;   /* measured since start                           */
    uint64_t seq;       /* the newest sample's frame                      */
    const char *runner; /* "cpu", "cpu-ref" or "cuda"                   */
};
/* The current reading; f NULL: state NONE, everything unknown. */
void trk_focus_get(struct trk_focus *f, struct trk_focus_reading *r);

/* Sets the baseline: v > 0 that value, v == 0 the newest sample's
 * sharpness. 0, or TRK_EINVAL (v < 0, or 0 with no sample yet or a newest
 * sample without edges: sharpness 0 is no baseline). *set gets
 * the baseline now in force. */
int trk_focus_set_baseline(struct trk_focus *f, double v, double *set);

#endif
