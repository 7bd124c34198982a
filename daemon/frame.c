#include "frame.h"

#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#define LOG_TAG "frame"
#include "log.h"
#include "trk_assert.h"

static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

/* A buffer of need bytes in place of data (whose pixels the caller is about
 * to overwrite: nothing is kept). The backend's host memory when the frame
 * has one and it can give it, else the heap. */
static int grow(struct trk_frame *f, size_t need)
{
    trk_frame_free_data(f);
    uint8_t *d = f->mem ? trk_backend_host_alloc(f->mem, need) : NULL;
    f->data_host = d != NULL;
    if (!d && !(d = malloc(need))) return TRK_ENOMEM;
    f->data = d;
    f->cap = need;
    return 0;
}

int trk_frame_layout(struct trk_frame *f, enum trk_pixfmt fmt, int width, int height, size_t align)
{
    struct trk_plane_layout L;
    if (align == 0 || trk_image_plane_layout(fmt, width, height, &L)) return TRK_EINVAL;
    size_t pitch[3] = { 0, 0, 0 }, rows[3] = { 0, 0, 0 };
    for (int p = 0; p < L.planes; p++) {
        pitch[p] = round_up(L.row_bytes[p], align);
        rows[p] = (size_t)L.rows[p];
    }
    size_t need = pitch[0] * rows[0] + pitch[1] * rows[1] + pitch[2] * rows[2];
    trk_frame_keep(f, NULL, NULL);
    if (need > f->cap && grow(f, need)) return TRK_ENOMEM;
    memset(&f->img, 0, sizeof(f->img));
    size_t off = 0;
    for (int i = 0; i < 3 && pitch[i]; i++) {
        f->img.plane[i] = f->data + off;
        f->img.pitch[i] = pitch[i];
        off += pitch[i] * rows[i];
    }
    f->img.width = width;
    f->img.height = height;
    f->img.fmt = fmt;
    return 0;
}

void trk_frame_unhold(struct trk_frame *f)
{
    if (f->hold) f->hold->release(f->hold);
    f->hold = NULL;
    f->host_ok = false;
}

void trk_frame_set_device(struct trk_frame *f, const struct trk_image *img,
                          struct trk_frame_hold *hold)
{
    trk_frame_unhold(f);
    trk_frame_keep(f, NULL, NULL);
    f->img = *img;
    f->hold = hold;
}

/* One lock for every frame's host copy: copies are rare (the preview's
 * rate, samples, snapshots) and short, and the frame has no lock of its
 * own to initialise. */
static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t downloads; /* device frames copied to the host */

uint64_t trk_frame_downloads(void)
{
    return atomic_load_explicit(&downloads, memory_order_relaxed);
}

const struct trk_image *trk_frame_host(struct trk_frame *f)
{
    if (f->img.mem == TRK_MEM_HOST) return &f->img;
    const struct trk_image *out = NULL;
    pthread_mutex_lock(&host_lock);
    if (!f->host_ok && f->hold) {
        /* Laid out in data without touching img, which other holders read. */
        struct trk_frame tmp = {
            .data = f->data, .cap = f->cap, .mem = f->mem, .data_host = f->data_host
        };
        int err = trk_frame_layout(&tmp, f->img.fmt, f->img.width, f->img.height, 64);
        f->data = tmp.data, f->cap = tmp.cap, f->data_host = tmp.data_host;
        if (!err) {
            tmp.img.matrix = f->img.matrix;
            tmp.img.full_range = f->img.full_range;
            err = f->hold->download(f->hold, &tmp.img);
        }
        if (err)
            TRK_LOGX(TRK_LOG_ERROR, err, "cannot copy frame %llu from the GPU to the host",
                     (unsigned long long)f->seq);
        else {
            f->host = tmp.img, f->host_ok = true;
            atomic_fetch_add_explicit(&downloads, 1, memory_order_relaxed);
            /* Which thread asked (the preview, sampler, snapshot encoder or
             * recorder each have their own name): why a copy was made. */
            char who[16] = "?";
            prctl(PR_GET_NAME, who, 0, 0, 0);
            log_debug("frame %llu copied from the GPU for %s", (unsigned long long)f->seq, who);
        }
    }
    if (f->host_ok) out = &f->host;
    pthread_mutex_unlock(&host_lock);
    return out;
}

void trk_frame_free_data(struct trk_frame *f)
{
    trk_frame_unhold(f);
    trk_frame_keep(f, NULL, NULL);
    if (f->data_host)
        trk_backend_host_free(f->mem, f->data);
    else
        free(f->data);
    f->data = NULL;
    f->data_host = false;
    f->cap = 0;
    free(f->packet);
    f->packet = NULL;
    f->packet_len = f->packet_cap = 0;
}

int trk_frame_set_packet(struct trk_frame *f, const uint8_t *data, size_t len)
{
    if (len > f->packet_cap) {
        uint8_t *np = realloc(f->packet, len);
        if (!np) return TRK_ENOMEM;
        f->packet = np;
        f->packet_cap = len;
    }
    memcpy(f->packet, data, len);
    f->packet_len = len;
    return 0;
}

void trk_frame_keep(struct trk_frame *f, void *keep, void (*keep_release)(void *keep))
{
    if (f->keep && f->keep_release) f->keep_release(f->keep);
    f->keep = keep;
    f->keep_release = keep ? keep_release : NULL;
}

void trk_pool_init(struct trk_pool *p, bool lossless)
{
    memset(p, 0, sizeof(*p));
    p->lossless = lossless;
    atomic_init(&p->poke, false);
    pthread_mutex_init(&p->lock, NULL);
    /* The paced take's timed wait is on trk_now's clock. Linux's condvar
     * init allocates nothing: a failure is a broken invariant. */
    int err = trk_cond_init_monotonic(&p->cond);
    TRK_ASSERT(err == 0);
}

void trk_pool_set_spin(struct trk_pool *p, double early, double late)
{
    pthread_mutex_lock(&p->lock);
    p->spin_early = early > 0 ? early : 0;
    p->spin_late = late > 0 ? late : 0;
    pthread_mutex_unlock(&p->lock);
}

void trk_pool_set_host_mem(struct trk_pool *p, struct trk_backend *b)
{
    for (int i = 0; i < TRK_POOL_FRAMES; i++)
        p->frames[i].mem = b;
}

void trk_pool_destroy(struct trk_pool *p)
{
    for (int i = 0; i < TRK_POOL_FRAMES; i++)
        trk_frame_free_data(&p->frames[i]);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
}

static int index_of(struct trk_pool *p, struct trk_frame *f)
{
    return (int)(f - p->frames);
}

/* An outside buffer taken off a frame, to be let go of outside the lock. */
struct held {
    void *hold;
    void (*unhold)(void *hold);
};

/* One holder of f lets go (lock held). When it was the last, f's outside
 * buffer is taken off it into *h: a camera's driver buffer goes back to the
 * driver as soon as no one reads it, not when the frame is next filled (a
 * camera has fewer buffers than an idle pool has frames). unhold runs after
 * the pool's lock is dropped: it takes the camera's own lock. */
static void let_go(struct trk_pool *p, struct trk_frame *f, struct held *h)
{
    h->hold = NULL;
    h->unhold = NULL;
    if (--p->holders[index_of(p, f)] > 0) return;
    h->hold = f->keep;
    h->unhold = f->keep_release;
    f->keep = NULL;
    f->keep_release = NULL;
}

static void unhold_now(const struct held *h)
{
    if (h->hold && h->unhold) h->unhold(h->hold);
}

struct trk_frame *trk_pool_get(struct trk_pool *p)
{
    struct trk_frame *f = NULL;
    pthread_mutex_lock(&p->lock);
    while (!p->closed) {
        for (int i = 0; i < TRK_POOL_FRAMES && !f; i++)
            if (!p->holders[i]) {
                p->holders[i] = 1;
                f = &p->frames[i];
            }
        if (f) break;
        pthread_cond_wait(&p->cond, &p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    /* Free and now the producer's alone: a device surface it held goes
     * back to its decoder. */
    if (f) trk_frame_unhold(f);
    return f;
}

/* Publishes that come further apart than this are a pause, not the rate. */
#define MAX_PERIOD 1.0

/* Lock held, a frame just published: learns the rate and predicts the
 * next publish. Paced sources keep an absolute
 * schedule (a frame whose producer woke late is followed by one on time),
 * so the prediction follows the schedule, not the last publish: it moves
 * by a quarter of each error, and starts over after a pause or a jump of
 * half a period or more. */
static void note_publish(struct trk_pool *p)
{
    double now = trk_now(), d = now - p->last_pub;
    if (p->last_pub > 0 && d > 0 && d < MAX_PERIOD)
        p->period = p->period > 0 ? p->period + (d - p->period) * 0.125 : d;
    else
        p->period = 0;
    p->last_pub = now;
    double err = now - p->next_due;
    if (p->period > 0 && p->next_due > 0 && fabs(err) < p->period / 2)
        p->next_due += p->period + err * 0.25;
    else
        p->next_due = p->period > 0 ? now + p->period : 0;
}

/* Lock held, nothing ready: when the next publish is predicted soon, sleeps
 * until spin_early before it and then polls, without the lock, until a
 * publish or close pokes or spin_late after it passes. Returns with the
 * lock held; the caller waits on as usual if nothing came. */
static void take_paced(struct trk_pool *p)
{
    const double due = p->next_due, now = trk_now();
    if (p->spin_late <= 0 || due <= 0 || now > due + p->spin_late || due - now > MAX_PERIOD) return;
    const double wake = due - p->spin_early;
    while (!p->ready && !p->closed && trk_now() < wake) {
        struct timespec ts = { (time_t)wake, (long)((wake - (double)(time_t)wake) * 1e9) };
        pthread_cond_timedwait(&p->cond, &p->lock, &ts);
    }
    if (p->ready || p->closed) return;
    const double until = due + p->spin_late;
    /* Cleared with the lock held and nothing ready: from here every
     * publish (or close) sets it again, after its unlock. */
    atomic_store_explicit(&p->poke, false, memory_order_relaxed);
    pthread_mutex_unlock(&p->lock);
    /* Yielding keeps the thread runnable (no sleep, no wake-up) yet lets a
     * producer that shares its core run. */
    while (!atomic_load_explicit(&p->poke, memory_order_acquire) && trk_now() < until)
        sched_yield();
    pthread_mutex_lock(&p->lock);
}

bool trk_pool_publish(struct trk_pool *p, struct trk_frame *f)
{
    struct held h = { 0 };
    pthread_mutex_lock(&p->lock);
    while (p->lossless && p->ready && !p->closed)
        pthread_cond_wait(&p->cond, &p->lock);
    bool ok = !p->closed;
    if (ok) {
        if (p->ready) { /* live source: the older frame is stale, drop it */
            let_go(p, p->ready, &h);
            p->drops++;
        }
        p->ready = f;
        note_publish(p);
    } else {
        let_go(p, f, &h);
    }
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    /* After the unlock: a spinning take goes for the lock at once, and
     * finding it held would put it to sleep after all. */
    if (ok) atomic_store_explicit(&p->poke, true, memory_order_release);
    unhold_now(&h);
    return ok;
}

struct trk_frame *trk_pool_take(struct trk_pool *p)
{
    pthread_mutex_lock(&p->lock);
    if (!p->ready && !p->closed) take_paced(p);
    while (!p->ready && !p->closed)
        pthread_cond_wait(&p->cond, &p->lock);
    struct trk_frame *f = p->ready;
    p->ready = NULL;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    return f;
}

struct trk_frame *trk_pool_try_take(struct trk_pool *p)
{
    pthread_mutex_lock(&p->lock);
    struct trk_frame *f = p->ready;
    p->ready = NULL;
    if (f) pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    return f;
}

void trk_pool_ref(struct trk_pool *p, struct trk_frame *f)
{
    pthread_mutex_lock(&p->lock);
    TRK_ASSERT(p->holders[index_of(p, f)] > 0);
    p->holders[index_of(p, f)]++;
    pthread_mutex_unlock(&p->lock);
}

void trk_pool_release(struct trk_pool *p, struct trk_frame *f)
{
    if (!f) return;
    struct held h;
    pthread_mutex_lock(&p->lock);
    TRK_ASSERT(p->holders[index_of(p, f)] > 0);
    let_go(p, f, &h);
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    unhold_now(&h);
}

void trk_pool_close(struct trk_pool *p)
{
    pthread_mutex_lock(&p->lock);
    p->closed = true;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    atomic_store_explicit(&p->poke, true, memory_order_release);
}

uint64_t trk_pool_drops(struct trk_pool *p)
{
    pthread_mutex_lock(&p->lock);
    uint64_t d = p->drops;
    pthread_mutex_unlock(&p->lock);
    return d;
}
