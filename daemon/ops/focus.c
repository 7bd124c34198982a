#include "focus.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LOG_TAG "focus"
#include "canny.h"
#include "frame.h" /* trk_now */
#include "log.h"

struct trk_focus {
    struct trk_focus_cfg cfg;
    struct trk_canny_params params;
    pthread_t thread;
    bool have_thread;
    pthread_mutex_t lock; /* guards everything below but the thread's own */
    pthread_cond_t work;  /* a frame is lent, or quit                     */
    pthread_cond_t idle;  /* lent went back to NULL                       */
    bool quit;
    struct trk_focus_frame lent; /* lent.holder NULL: none */
    /* The readings. */
    double recent[TRK_FOCUS_LEARN]; /* the first samples, then the newest */
    uint64_t samples, seq;
    double sharpness, density, cost_ms, baseline;
    bool baseline_set; /* fixed or set, not learnt */
    enum trk_focus_state state, logged;
    double logged_t; /* when the last focus line went out; 0 = never */
    const char *runner_name;
    /* The thread's own: the runner (the sums only, no edge map). */
    struct trk_canny *canny;
    bool ref;
    int canny_w, canny_h;
    bool download_logged; /* said once that device frames are copied */
};

static void *focus_main(void *arg);

int trk_focus_create(const struct trk_focus_cfg *cfg, struct trk_focus **out)
{
    *out = NULL;
    if (cfg->every <= 0 || !(cfg->warn > 0 && cfg->warn <= 1) || !(cfg->baseline >= 0))
        return TRK_EINVAL;
    struct trk_focus *f = calloc(1, sizeof *f);
    if (!f) return TRK_ENOMEM;
    f->cfg = *cfg;
    struct trk_canny_cfg cc = { .sigma = TRK_FOCUS_SIGMA,
                                .low = TRK_FOCUS_LOW,
                                .high = TRK_FOCUS_HIGH };
    int err = trk_canny_params_init(&f->params, &cc);
    if (err) {
        free(f);
        return err;
    }
    f->sharpness = -1;
    f->baseline = cfg->baseline > 0 ? cfg->baseline : -1;
    f->baseline_set = cfg->baseline > 0;
    f->ref = cfg->runner == TRK_FOCUS_REF;
    f->runner_name = f->ref ? "cpu-ref" : "cpu";
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->work, NULL);
    pthread_cond_init(&f->idle, NULL);
    if (pthread_create(&f->thread, NULL, focus_main, f)) {
        trk_focus_destroy(&f);
        return TRK_ENOMEM;
    }
    f->have_thread = true;
    *out = f;
    return 0;
}

void trk_focus_destroy(struct trk_focus **pf)
{
    if (!pf || !*pf) return;
    struct trk_focus *f = *pf;
    pthread_mutex_lock(&f->lock);
    f->quit = true;
    pthread_cond_broadcast(&f->work);
    pthread_mutex_unlock(&f->lock);
    if (f->have_thread) pthread_join(f->thread, NULL);
    /* A frame lent and never measured goes back. */
    if (f->lent.holder) f->lent.release(f->lent.ctx, f->lent.holder);
    trk_canny_destroy(&f->canny);
    pthread_mutex_destroy(&f->lock);
    pthread_cond_destroy(&f->work);
    pthread_cond_destroy(&f->idle);
    free(f);
    *pf = NULL;
}

bool trk_focus_due(const struct trk_focus *f, uint64_t seq)
{
    return f && seq % (uint64_t)f->cfg.every == 0;
}

void trk_focus_offer(struct trk_focus *f, const struct trk_focus_frame *fr)
{
    bool taken = false;
    pthread_mutex_lock(&f->lock);
    if (!f->lent.holder && !f->quit) {
        f->lent = *fr;
        taken = true;
        pthread_cond_signal(&f->work);
    }
    pthread_mutex_unlock(&f->lock);
    if (!taken) fr->release(fr->ctx, fr->holder);
}

void trk_focus_clear(struct trk_focus *f)
{
    if (!f) return;
    pthread_mutex_lock(&f->lock);
    while (f->lent.holder && !f->quit)
        pthread_cond_wait(&f->idle, &f->lock);
    pthread_mutex_unlock(&f->lock);
}

const char *trk_focus_state_name(enum trk_focus_state st)
{
    switch (st) {
    case TRK_FOCUS_LEARNING: return "learning";
    case TRK_FOCUS_OK: return "ok";
    case TRK_FOCUS_LOST: return "lost";
    case TRK_FOCUS_NONE: break;
    }
    return "none";
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
    double s[TRK_FOCUS_LEARN];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* Under lock: the median of the last TRK_FOCUS_WINDOW samples (fewer at
 * the start). recent[] is a ring of TRK_FOCUS_LEARN from sample 0. */
static double window_median(const struct trk_focus *f)
{
    double w[TRK_FOCUS_WINDOW];
    int n = f->samples < TRK_FOCUS_WINDOW ? (int)f->samples : TRK_FOCUS_WINDOW;
    for (int i = 0; i < n; i++)
        w[i] = f->recent[(f->samples - 1 - (uint64_t)i) % TRK_FOCUS_LEARN];
    return median(w, n);
}

/* Under lock: the verdict after a sample or a new baseline. */
static void judge(struct trk_focus *f)
{
    if (!f->samples) {
        f->state = TRK_FOCUS_NONE;
    } else if (f->baseline <= 0) {
        f->state = TRK_FOCUS_LEARNING;
    } else {
        f->state = window_median(f) < f->cfg.warn * f->baseline ? TRK_FOCUS_LOST : TRK_FOCUS_OK;
    }
}

/* Under lock: a line when the verdict changed between ok and lost since the
 * last line, at most one per TRK_FOCUS_LOG_S. */
static void log_change(struct trk_focus *f)
{
    if (f->state != TRK_FOCUS_LOST && f->state != TRK_FOCUS_OK) return;
    /* Learnt as ok: nothing to say. */
    if (f->logged == TRK_FOCUS_NONE && f->state == TRK_FOCUS_OK) f->logged = TRK_FOCUS_OK;
    double now = trk_now();
    if (f->state == f->logged || (f->logged_t > 0 && now - f->logged_t < TRK_FOCUS_LOG_S)) return;
    double ratio = window_median(f) / f->baseline;
    if (f->state == TRK_FOCUS_LOST)
        log_warn("focus lost: sharpness %.2f is %.0f%% of the baseline %.2f (warning below "
                 "%.0f%%): is the lens bumped, fogged or out of focus?",
                 f->sharpness, ratio * 100, f->baseline, f->cfg.warn * 100);
    else
        log_info("focus back: sharpness %.2f is %.0f%% of the baseline %.2f", f->sharpness,
                 ratio * 100, f->baseline);
    f->logged = f->state;
    f->logged_t = now;
}

/* Focus thread: the runner for frames of w x h (the CUDA one when asked
 * and it can be made, else the CPU twin); false when none can be. */
static bool have_runner(struct trk_focus *f, int w, int h)
{
    if (f->ref || (f->canny && w <= f->canny_w && h <= f->canny_h)) return true;
    trk_canny_destroy(&f->canny);
    struct trk_canny_opts o = { .kind = f->cfg.runner == TRK_FOCUS_CUDA ? TRK_CANNY_CUDA
                                                                        : TRK_CANNY_CPU,
                                .max_width = w,
                                .max_height = h,
                                .threads = 1,
                                .cuda_device = f->cfg.cuda_device };
    int err = trk_canny_create(&o, &f->canny);
    if (err && o.kind == TRK_CANNY_CUDA) {
        log_warn_err(err, "the focus check cannot use the GPU; it runs on the CPU");
        f->cfg.runner = TRK_FOCUS_CPU;
        o.kind = TRK_CANNY_CPU;
        err = trk_canny_create(&o, &f->canny);
    }
    if (err) return false;
    f->canny_w = w, f->canny_h = h;
    pthread_mutex_lock(&f->lock);
    f->runner_name = trk_canny_name(f->canny);
    pthread_mutex_unlock(&f->lock);
    return true;
}

/* Focus thread: the sharpness of fr's frame into *st; 0 or the runner's
 * error. A device frame is measured in place by the CUDA runner; without
 * one it is copied to the host (fr->host), which is said once. */
static int measure(struct trk_focus *f, const struct trk_focus_frame *fr,
                   struct trk_canny_stats *st)
{
    const struct trk_image *img = fr->img;
    if (!img) return TRK_EINVAL;
    if (!have_runner(f, img->width, img->height)) return TRK_ENOMEM;
    if (img->mem != TRK_MEM_HOST && (f->ref || f->cfg.runner != TRK_FOCUS_CUDA)) {
        if (!f->download_logged)
            log_info("the focus check has no CUDA runner: it copies each frame it measures from "
                     "the GPU to the host");
        f->download_logged = true;
        img = fr->host ? fr->host(fr->holder) : NULL;
        if (!img) return TRK_EINVAL;
    }
    /* Only the sums make the figure: no edge map is written back. */
    if (f->ref) return trk_canny_ref(&f->params, img, NULL, 0, st);
    return trk_canny_run(f->canny, &f->params, img, NULL, 0, st, NULL);
}

/* Under lock: keeps one sample and learns or judges. */
static void add_sample(struct trk_focus *f, const struct trk_canny_stats *st, uint64_t seq,
                       double cost_ms)
{
    f->recent[f->samples % TRK_FOCUS_LEARN] = st->sharpness;
    f->samples++;
    f->seq = seq;
    f->sharpness = st->sharpness;
    f->density = st->density;
    f->cost_ms = cost_ms;
    if (!f->baseline_set && f->baseline <= 0 && f->samples == TRK_FOCUS_LEARN) {
        f->baseline = median(f->recent, TRK_FOCUS_LEARN);
        log_info("focus baseline learnt: sharpness %.2f (median of the first %d samples)",
                 f->baseline, TRK_FOCUS_LEARN);
    }
    judge(f);
    log_change(f);
}

static void *focus_main(void *arg)
{
    struct trk_focus *f = arg;
    /* Named for top -H and tests/device/many_cameras.py's CPU split. */
    prctl(PR_SET_NAME, "trk-focus", 0, 0, 0);
    /* Below capture, processing and the server: on a busy machine the
     * check waits, results do not. */
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10) != 0)
        log_debug("cannot lower the focus thread's priority");
    bool failed = false;
    pthread_mutex_lock(&f->lock);
    for (;;) {
        while (!f->quit && !f->lent.holder)
            pthread_cond_wait(&f->work, &f->lock);
        if (f->quit) break;
        struct trk_focus_frame fr = f->lent;
        pthread_mutex_unlock(&f->lock);
        struct trk_canny_stats st;
        double t0 = trk_now();
        int err = measure(f, &fr, &st);
        double cost_ms = (trk_now() - t0) * 1e3;
        fr.release(fr.ctx, fr.holder);
        if (err && !failed) log_warn_err(err, "the focus check cannot measure a frame");
        failed = err != 0;
        pthread_mutex_lock(&f->lock);
        if (!err) add_sample(f, &st, fr.seq, cost_ms);
        f->lent.holder = NULL;
        pthread_cond_broadcast(&f->idle);
    }
    pthread_mutex_unlock(&f->lock);
    return NULL;
}

void trk_focus_get(struct trk_focus *f, struct trk_focus_reading *r)
{
    *r = (struct trk_focus_reading){ .sharpness = -1, .baseline = -1, .ratio = -1 };
    if (!f) return;
    pthread_mutex_lock(&f->lock);
    *r = (struct trk_focus_reading){ .state = f->state,
                                     .sharpness = f->sharpness,
                                     .baseline = f->baseline,
                                     .ratio = f->samples && f->baseline > 0
                                                  ? window_median(f) / f->baseline
                                                  : -1,
                                     .warn = f->cfg.warn,
                                     .density = f->density,
                                     .cost_ms = f->cost_ms,
                                     .samples = f->samples,
                                     .seq = f->seq,
                                     .runner = f->runner_name };
    pthread_mutex_unlock(&f->lock);
}

int trk_focus_set_baseline(struct trk_focus *f, double v, double *set)
{
    if (!f || !(v >= 0)) return TRK_EINVAL;
    pthread_mutex_lock(&f->lock);
    int err = 0;
    if (v == 0 && !(f->samples && f->sharpness > 0)) { /* no edges: no baseline */
        err = TRK_EINVAL;
    } else {
        f->baseline = v > 0 ? v : f->sharpness;
        f->baseline_set = true;
        judge(f);
        log_info("focus baseline set: sharpness %.2f", f->baseline);
        /* The verdict starts over from the new baseline. */
        f->logged = f->state;
        f->logged_t = 0;
    }
    if (set) *set = f->baseline;
    pthread_mutex_unlock(&f->lock);
    return err;
}
