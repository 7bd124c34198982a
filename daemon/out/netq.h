/* A network output's queue and thread (netq; --udp and --osc use it, MQTT
 * has its own): the processing thread hands each frame result over with
 * trk_netq_push, which copies it into a bounded queue and returns at once;
 * the queue's own thread takes frames oldest first and calls the output's
 * send function. A slow or absent peer therefore never slows the pipeline:
 * when the queue is full, the oldest queued frame gives way to the new one
 * and is counted as dropped.
 *
 * Threads: trk_netq_push from one thread (processing); send and close run
 * on the queue's thread; trk_netq_get_stats from any thread.
 * Lifecycle: create (starts the thread) / destroy (sends what is queued,
 * joins, closes). */
#ifndef TRK_DAEMON_NETQ_H
#define TRK_DAEMON_NETQ_H

#include <stdint.h>

#include "backend.h"
#include "messages.h"

/* Frames queued at most (besides the one being sent). Small on purpose: a
 * peer that cannot keep up wants the newest positions, not a backlog. */
#define TRK_NETQ_DEPTH 4

/* One frame's result as the pipeline had it, owned by the sink (a copy:
 * r.defs points at defs, r.patterns at patterns, r.meta.backend at backend;
 * r.meta.camera is NULL,
 * the sink is given its camera name), so senders encode with
 * protocol/messages.h. */
struct trk_netq_frame {
    struct trk_frame_result r;
    char backend[32];
    struct trk_object_def defs[TRK_MAX_OBJECTS];
    struct trk_pattern patterns[TRK_PATTERNS_MAX];
};

struct trk_netq_cfg {
    const char *name; /* for the log and stats: "udp 127.0.0.1:9000" */
    /* Sends one frame; 0 or a negative code (-errno). A failure is logged
     * once until a send works again, and counted; the next frame is tried
     * anyway (a listener may come and go). */
    int (*send)(void *ctx, const struct trk_netq_frame *f);
    /* Frees ctx (sockets, buffers) after the thread ended; may be NULL. */
    void (*close)(void *ctx);
    void *ctx; /* owned by the sink from a successful create */
};

struct trk_netq_stats {
    uint64_t frames;  /* pushed                                            */
    uint64_t sent;    /* send returned 0                                   */
    uint64_t failed;  /* send returned an error                            */
    uint64_t dropped; /* gave way in a full queue (frames = sent + failed +
                       * dropped + queued)                                 */
};

struct trk_netq;

/* 0, TRK_EINVAL (no send), TRK_ENOMEM or -errno (the thread). On failure
 * ctx is closed too. */
int trk_netq_create(const struct trk_netq_cfg *cfg, struct trk_netq **out);

/* Copies one frame's result into the queue; never waits for the sender.
 * A frame whose lists cannot be copied (no memory) goes without them
 * (trk_frame_result_copy). */
void trk_netq_push(struct trk_netq *s, const struct trk_frame_result *r);

void trk_netq_get_stats(struct trk_netq *s, struct trk_netq_stats *st);

/* The name given at create. */
const char *trk_netq_name(const struct trk_netq *s);

/* Sends what is queued and ends the thread: the stats are final after it,
 * and later pushes are ignored. Safe on NULL and twice. */
void trk_netq_drain(struct trk_netq *s);

/* Drains, closes and frees; safe on NULL and twice (sets *s = NULL). */
void trk_netq_destroy(struct trk_netq **s);

struct trk_outputs;

/* Registers s with the outputs door (outputs.h): every frame pushed, its
 * counts in the stats log line; at close it drains, logs what it sent and
 * is destroyed. 0, or TRK_EINVAL (the door is full: s destroyed). */
int trk_netq_add(struct trk_outputs *o, struct trk_netq *s);

#endif
