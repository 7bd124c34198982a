/* Frames and the bounded frame pool where the capture, processing and preview
 * threads meet. A frame owns one pixel buffer; sources fill it in place. */
#ifndef TRK_DAEMON_FRAME_H
#define TRK_DAEMON_FRAME_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "trk_clock.h" /* trk_now, trk_wall_ms: every frame time is on it */

struct trk_frame {
    struct trk_image img; /* planes point into data, or into hold        */
    uint8_t *data;        /* owned pixel buffer                          */
    size_t cap;           /* its size in bytes                           */
    /* Where data comes from: trk_backend_host_alloc of mem (pinned on CUDA,
     * so the upload needs no staging copy) when mem is set, else the heap
     * (also when the backend had no pinned memory to give: data_host then
     * says false). Set by the pool before the first layout. */
    struct trk_backend *mem;
    bool data_host;
    /* A host buffer someone else owns that img's planes point into instead
     * of data (a decoded AVFrame in the pinned pool, a camera's driver
     * buffer: no copy), let go with keep_release(keep) when the frame is laid
     * out again or freed, or when the pool's last holder releases it. NULL =
     * none. */
    void *keep;
    void (*keep_release)(void *keep);
    uint64_t seq;     /* 0, 1, 2, ... in capture order               */
    double pts;       /* presentation time in the stream, seconds    */
    double t_capture; /* CLOCK_MONOTONIC seconds when captured/decoded */
    /* A device frame (--hwdec: img.mem != TRK_MEM_HOST): img points at a
     * decoder's surface, which `hold` keeps referenced until the frame is
     * filled again or freed (trk_frame_set_device); download copies it into
     * data for the readers of host pixels (trk_frame_host). */
    struct trk_frame_hold *hold;
    struct trk_image host; /* the host copy of a device frame, once made */
    bool host_ok;
};

/* What keeps a device frame's surface alive and can copy it to the host:
 * the source that made it fills one per frame. */
struct trk_frame_hold {
    /* Copies the surface into dst (a host image laid out like the frame:
     * trk_frame_layout's planes); 0 or a negative code. */
    int (*download)(struct trk_frame_hold *h, const struct trk_image *dst);
    /* Drops the surface's reference and frees h. */
    void (*release)(struct trk_frame_hold *h);
};

/* Makes f a device frame: img is the surface as the backend sees it
 * (mem = TRK_MEM_CUDA), hold keeps it alive (f owns it from here). The
 * previous hold, if any, is released first. */
void trk_frame_set_device(struct trk_frame *f, const struct trk_image *img,
                          struct trk_frame_hold *hold);
/* Releases f's hold, if any (f then has no pixels until filled again). */
void trk_frame_unhold(struct trk_frame *f);
/* f's pixels in host memory: &f->img for a host frame; for a device frame
 * the host copy, made on the first call (thread-safe: the preview, the
 * sampler and a snapshot may ask at once; the frame's pool holders keep it
 * from being refilled meanwhile). NULL when the copy fails (logged). */
const struct trk_image *trk_frame_host(struct trk_frame *f);
/* Device frames trk_frame_host copied to the host in this process so far
 * (/metrics trackd_frames_downloaded_total): the preview's, colour
 * samples', snapshots' and recordings' copies; tracking and the light
 * module never make one. */
uint64_t trk_frame_downloads(void);

/* Lays out a frame of fmt/size with each row padded to a multiple of align
 * bytes, growing data as needed; fills img planes and pitches. 0 or
 * TRK_ENOMEM / TRK_EINVAL. */
int trk_frame_layout(struct trk_frame *f, enum trk_pixfmt fmt, int width, int height, size_t align);
void trk_frame_free_data(struct trk_frame *f);
/* Points f at an outside host buffer: the caller sets img's planes into it;
 * the previous one is let go first. keep_release is called once, when f is
 * laid out again, kept again or freed, or (a pool frame) when its last
 * holder releases it, on that holder's thread: it must be thread-safe. */
void trk_frame_keep(struct trk_frame *f, void *keep, void (*keep_release)(void *keep));

/* The pool: TRK_POOL_FRAMES frames cycling between capture (fills one),
 * the newest ready frame, processing, the preview encoder and the colour
 * sampler. Owned by the pipeline; every function is thread-safe. A frame has
 * holders: get gives the producer the only one; publish passes it to the
 * ready slot and take to the consumer; trk_pool_ref adds one (processing
 * hands one frame to both the preview and the sampler); each holder calls
 * release once. The frame is reused when the last holder lets go, so pixels
 * never change under a reader. One frame for each of the five roles above,
 * a second one for processing (pipelining: the next frame is in the backend
 * while the last one's results are sent), and two lent to /snapshot.jpg (the
 * newest, and an older one a request may still be encoding), means capture
 * never waits on the preview, the sampler or a snapshot. With lossless =
 * true (files, demo), publish waits for the processing thread to take the
 * previous frame; with lossless = false (live cameras) it replaces it and
 * counts a drop, so processing always gets the newest frame. */
#define TRK_POOL_FRAMES 8

struct trk_pool {
    struct trk_frame frames[TRK_POOL_FRAMES];
    int holders[TRK_POOL_FRAMES]; /* 0 = free */
    struct trk_frame *ready;
    bool lossless;
    bool closed; /* no more frames will be published */
    uint64_t drops;
    /* Paced hand-off (trk_pool_set_spin): the spin window around the next
     * frame's predicted publish (s; 0 = never spin), the last publish's time,
     * the smoothed interval between publishes and the next one's predicted
     * time (0 = not known). */
    double spin_early, spin_late;
    double last_pub, period, next_due;
    /* Set by publish and close, cleared by take: what a spinning take
     * watches without the lock. */
    atomic_bool poke;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* on CLOCK_MONOTONIC */
};

void trk_pool_init(struct trk_pool *p, bool lossless);
/* The frames' pixel buffers come from b's host memory (pinned on CUDA);
 * call before the first get. b must outlive the pool. NULL = the heap. */
void trk_pool_set_host_mem(struct trk_pool *p, struct trk_backend *b);
void trk_pool_destroy(struct trk_pool *p);
/* A free frame for the producer; NULL once the pool is closed. */
struct trk_frame *trk_pool_get(struct trk_pool *p);
/* Publishes f as the newest ready frame (see lossless). false if closed. */
bool trk_pool_publish(struct trk_pool *p, struct trk_frame *f);
/* Waits for the newest ready frame; NULL when closed and drained. With a
 * spin window set, a take that comes before the next frame's predicted
 * publish sleeps until spin_early before it, then polls until the frame is
 * there or spin_late after it (and then sleeps as before). */
struct trk_frame *trk_pool_take(struct trk_pool *p);
/* A source that delivers at a steady rate (paced files and the demo,
 * cameras) hands frames over without a thread wake-up: the consumer is
 * already running when the frame comes (a sleeping one costs tens of us on
 * an idle machine, ms on a loaded or virtualised one). The price: up to
 * early + late seconds of one core per frame, none while frames come
 * faster than the consumer takes them. Call before the consumer starts;
 * 0, 0 = off (the default). */
void trk_pool_set_spin(struct trk_pool *p, double early, double late);
/* The ready frame if there is one, without waiting; else NULL. */
struct trk_frame *trk_pool_try_take(struct trk_pool *p);
/* One more holder of f, which the caller holds (so it is not free). */
void trk_pool_ref(struct trk_pool *p, struct trk_frame *f);
/* The caller stops holding f; NULL is ignored. */
void trk_pool_release(struct trk_pool *p, struct trk_frame *f);
/* Wakes every waiter; later gets/takes return NULL once drained. */
void trk_pool_close(struct trk_pool *p);
uint64_t trk_pool_drops(struct trk_pool *p);

#endif
