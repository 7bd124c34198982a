/* trackd-jitter: how late this machine wakes a thread, measured the ways
 * the daemon hands a frame on. A capture-to-client latency's tail (p99) is
 * made of such wake-ups: the source thread sleeping until a frame is due,
 * the processing thread woken by a condition variable, the WebSocket thread
 * woken through an eventfd in its poll(), and the same with the waiter
 * spinning (--spin). On a quiet machine each is tens of us; where they are
 * milliseconds at p99, no daemon meets a sub-millisecond p99 there.
 *
 *   trackd-jitter [--hz 120] [--samples 600]
 *
 * A producer thread sleeps until each tick (CLOCK_MONOTONIC, absolute),
 * stamps, and wakes one consumer, the kinds in turn; each consumer stamps
 * when it runs. Printed per kind: p50 / p99 / max in us of the hand-off
 * (producer's stamp to consumer's), and of the sleep's overshoot (tick to
 * producer's stamp); then the CPU time the hypervisor took (steal, from
 * /proc/stat) during the run. Exit 1 if a hand-off is lost (a consumer not
 * woken within a second). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

enum { K_CONDVAR, K_EVENTFD, K_SPIN, K_COUNT };
static const char *const kind_name[K_COUNT] = { "condvar hand-off", "eventfd + poll hand-off",
                                                "spinning waiter hand-off" };

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

struct shared {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t cv_seq; /* under mu */
    int efd;         /* eventfd */
    atomic_uint_fast64_t spin_seq;
    atomic_int stop;
    /* Wake stamps, one per kind, written by the consumer before it acks. */
    double woke[K_COUNT];
    atomic_uint_fast64_t ack[K_COUNT];
};

static void *condvar_waiter(void *arg)
{
    struct shared *s = arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (s->cv_seq == seen && !atomic_load(&s->stop))
            pthread_cond_wait(&s->cv, &s->mu);
        if (atomic_load(&s->stop)) break;
        s->woke[K_CONDVAR] = now_us();
        seen = s->cv_seq;
        atomic_store(&s->ack[K_CONDVAR], seen);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void *eventfd_waiter(void *arg)
{
    struct shared *s = arg;
    uint64_t n = 0, seen = 0;
    struct pollfd pf = { .fd = s->efd, .events = POLLIN };
    while (!atomic_load(&s->stop)) {
        int r = poll(&pf, 1, 100);
        if (r <= 0) continue;
        double t = now_us();
        if (read(s->efd, &n, sizeof(n)) != sizeof(n)) continue;
        s->woke[K_EVENTFD] = t;
        atomic_store(&s->ack[K_EVENTFD], ++seen);
    }
    return NULL;
}

static void *spin_waiter(void *arg)
{
    struct shared *s = arg;
    uint64_t seen = 0;
    while (!atomic_load(&s->stop)) {
        uint64_t v = atomic_load(&s->spin_seq);
        if (v == seen) {
            sched_yield();
            continue;
        }
        s->woke[K_SPIN] = now_us();
        seen = v;
        atomic_store(&s->ack[K_SPIN], seen);
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(const char *what, double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    int i99 = (int)(0.99 * (n - 1) + 0.5);
    printf("%-28s %6d %9.1f %9.1f %9.1f\n", what, n, v[(n - 1) / 2], v[i99], v[n - 1]);
}

/* user+nice+system+idle+iowait+irq+softirq and steal jiffies of all CPUs. */
static int cpu_times(unsigned long long *total, unsigned long long *steal)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return -1;
    unsigned long long v[8] = { 0 };
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (n < 8) return -1;
    *total = 0;
    for (int i = 0; i < 8; i++)
        *total += v[i];
    *steal = v[7];
    return 0;
}

int main(int argc, char **argv)
{
    double hz = 120;
    int samples = 600;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--hz") && i + 1 < argc)
            hz = atof(argv[++i]);
        else if (!strcmp(argv[i], "--samples") && i + 1 < argc)
            samples = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: trackd-jitter [--hz 120] [--samples 600]\n");
            return 2;
        }
    }
    if (hz <= 0 || hz > 10000 || samples < 1) {
        fprintf(stderr, "trackd-jitter: --hz in (0, 10000], --samples >= 1\n");
        return 2;
    }
    static struct shared s;
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    s.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s.efd < 0) {
        perror("trackd-jitter: eventfd");
        return 1;
    }
    pthread_t th[K_COUNT];
    void *(*fn[K_COUNT])(void *) = { condvar_waiter, eventfd_waiter, spin_waiter };
    for (int k = 0; k < K_COUNT; k++)
        if (pthread_create(&th[k], NULL, fn[k], &s)) {
            fprintf(stderr, "trackd-jitter: cannot start a thread\n");
            return 1;
        }
    double *hand[K_COUNT], *over = calloc((size_t)samples * K_COUNT, sizeof(double));
    for (int k = 0; k < K_COUNT; k++)
        hand[k] = calloc((size_t)samples, sizeof(double));
    if (!over || !hand[0] || !hand[1] || !hand[2]) return 1;
    unsigned long long tot0 = 0, st0 = 0, tot1 = 0, st1 = 0;
    const int have_stat = cpu_times(&tot0, &st0) == 0;

    const long period_ns = (long)(1e9 / hz);
    struct timespec tick;
    clock_gettime(CLOCK_MONOTONIC, &tick);
    int lost = 0, no = 0;
    for (int i = 0; i < samples * K_COUNT && !lost; i++) {
        const int k = i % K_COUNT;
        tick.tv_nsec += period_ns;
        while (tick.tv_nsec >= 1000000000L) {
            tick.tv_nsec -= 1000000000L;
            tick.tv_sec++;
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &tick, NULL) == EINTR) {
        }
        const double t0 = now_us();
        over[no++] = t0 - (tick.tv_sec * 1e6 + tick.tv_nsec * 1e-3);
        const uint64_t want = (uint64_t)(i / K_COUNT) + 1;
        if (k == K_CONDVAR) {
            pthread_mutex_lock(&s.mu);
            s.cv_seq = want;
            pthread_cond_signal(&s.cv);
            pthread_mutex_unlock(&s.mu);
        } else if (k == K_EVENTFD) {
            const uint64_t one = 1;
            if (write(s.efd, &one, sizeof(one)) != sizeof(one)) lost = 1;
        } else {
            atomic_store(&s.spin_seq, want);
        }
        while (atomic_load(&s.ack[k]) < want && !lost)
            if (now_us() - t0 > 1e6) lost = 1;
        hand[k][i / K_COUNT] = s.woke[k] - t0;
        /* Keep the tick schedule if a wait ran long (no catching up in a burst). */
        struct timespec n;
        clock_gettime(CLOCK_MONOTONIC, &n);
        if (n.tv_sec > tick.tv_sec || (n.tv_sec == tick.tv_sec && n.tv_nsec > tick.tv_nsec))
            tick = n;
    }
    atomic_store(&s.stop, 1);
    pthread_mutex_lock(&s.mu);
    pthread_cond_broadcast(&s.cv);
    pthread_mutex_unlock(&s.mu);
    for (int k = 0; k < K_COUNT; k++)
        pthread_join(th[k], NULL);
    if (lost) {
        fprintf(stderr, "trackd-jitter: a hand-off was lost (no wake-up within 1 s)\n");
        return 1;
    }
    printf("# wake-up latency on this machine (%ld CPUs): %d samples per kind at %.0f Hz, us\n",
           sysconf(_SC_NPROCESSORS_ONLN), samples, hz);
    printf("%-28s %6s %9s %9s %9s\n", "kind", "n", "p50", "p99", "max");
    report("sleep overshoot", over, no);
    for (int k = 0; k < K_COUNT; k++)
        report(kind_name[k], hand[k], samples);
    if (have_stat && cpu_times(&tot1, &st1) == 0 && tot1 > tot0)
        printf("steal (hypervisor) %.2f %% of CPU time during the run\n",
               100.0 * (double)(st1 - st0) / (double)(tot1 - tot0));
    for (int k = 0; k < K_COUNT; k++)
        free(hand[k]);
    free(over);
    close(s.efd);
    return 0;
}
