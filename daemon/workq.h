/* A worker thread with a bounded queue of fixed-size jobs, for control work
 * that must not run on the WebSocket service thread (saving and reloading
 * files, a camera's control ioctls). Jobs run one at a time, in the order
 * they were pushed, on the worker; destroy runs the ones still queued, then
 * joins it.
 *
 * Threads: push from any thread (a mutex); run() is called on the worker
 * with no lock of the queue held, so it may push again or take the caller's
 * own locks. */
#ifndef TRK_DAEMON_WORKQ_H
#define TRK_DAEMON_WORKQ_H

#include <stdbool.h>
#include <stddef.h>

struct trk_workq;

/* Runs one job (a copy of what push was given; valid during the call). */
typedef void (*trk_workq_fn)(void *ctx, void *job);

/* job_size bytes a job, at most max_jobs waiting. 0, TRK_EINVAL, or
 * TRK_ENOMEM (also when the thread cannot start). */
int trk_workq_create(size_t job_size, int max_jobs, trk_workq_fn run, void *ctx,
                     struct trk_workq **out);

/* Copies job into the queue and wakes the worker; false (nothing queued)
 * when max_jobs wait already. */
bool trk_workq_push(struct trk_workq *q, const void *job);

/* Runs the queued jobs, joins the worker, frees. Safe on NULL and twice. */
void trk_workq_destroy(struct trk_workq **q);

#endif
