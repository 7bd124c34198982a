/* The CUDA backend's wait: waiting for a frame (events or the results'
 * hand-over), its timings, and decoding the accumulators and blob lists. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log_hook.h"
#include "cuda_internal.cuh"
#include "regions.cuh"

namespace trk_cuda
{

/* Waits for ev: polls it for up to TRK_CU_WAIT_SPIN_US, then blocks (in
 * whatever way the context's scheduling flags say). The poll spares a
 * blocking-sync context a sleep and a wake-up per frame. */
cudaError_t wait_event(cudaEvent_t ev)
{
    const double until = trk_backend_now_ms() + TRK_CU_WAIT_SPIN_US * 1e-3;
    cudaError_t e;
    while ((e = cudaEventQuery(ev)) == cudaErrorNotReady && trk_backend_now_ms() < until) {
    }
    /* "Not ready" is no error: none may be left for a launch check. */
    if (cudaPeekAtLastError() == cudaErrorNotReady) cudaGetLastError();
    return e == cudaErrorNotReady ? cudaEventSynchronize(ev) : e;
}

/* Waits for a frame whose kernel hands its results over (trk_cu_pub):
 * watches the record's seq in host memory, which the GPU writes the moment
 * its last block is done, sooner than an event after the kernel completes.
 * Every 20 us it asks the stream's event as well, for an error (the kernel
 * then never writes seq); after TRK_CU_WAIT_SPIN_US it blocks on the event
 * as wait_event does. */
static cudaError_t wait_handover(struct cuda_be *b)
{
    const unsigned want = b->pub_seq;
    const unsigned *seq = &b->hp_pub->seq;
    const double t0 = trk_backend_now_ms(), until = t0 + TRK_CU_WAIT_SPIN_US * 1e-3;
    double ask = t0 + 0.02;
    for (;;) {
        if (__atomic_load_n(seq, __ATOMIC_ACQUIRE) == want) return cudaSuccess;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        asm volatile("yield");
#endif
        const double now = trk_backend_now_ms();
        if (now < ask) continue;
        ask = now + 0.02;
        cudaError_t e = cudaEventQuery(b->ev_done);
        if (e == cudaErrorNotReady) {
            if (cudaPeekAtLastError() == cudaErrorNotReady) cudaGetLastError();
            if (now < until) continue;
            e = cudaEventSynchronize(b->ev_done);
        }
        if (e != cudaSuccess) return e;
        /* The stream is done, so the kernel's writes are all visible: seq
         * is there unless the kernel did not hand over (a defect). */
        if (__atomic_load_n(seq, __ATOMIC_ACQUIRE) == want) return cudaSuccess;
        trk_log_write(TRK_LOG_ERROR, "cuda", 0,
                      "the kernel finished without handing its results over (seq %u, want %u)",
                      __atomic_load_n(seq, __ATOMIC_ACQUIRE), want);
        b->dirty = true; /* reset the hand-over's state before the next frame */
        return cudaErrorUnknown;
    }
}

void decode(const struct trk_cu_acc *acc, const int *pos, int n, struct trk_obj_result *out)
{
    for (int k = 0; k < n; k++)
        trk_cu_acc_result(&acc[pos[k]], &out[k]);
}

/* The time between two events of a frame that wait() has seen done. They
 * were queued before what it waited for, yet can show as complete a little
 * later: a hand-over's seq and the engines' event stamps take different
 * paths, as do a copy engine's event and a kernel's (1 call in ~3600 on
 * the H100 read "not ready"). So z is waited for first, which is at once
 * in the usual case. */
float span(cudaEvent_t a, cudaEvent_t z)
{
    if (wait_event(z) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return elapsed(a, z);
}

/* The time between two completed events; 0 if CUDA cannot say (logged,
 * the first few times in the process: a timing of 0 is then no
 * measurement). */
float elapsed(cudaEvent_t a, cudaEvent_t z)
{
    static int logged;
    float ms = 0;
    const cudaError_t e = cudaEventElapsedTime(&ms, a, z);
    if (e != cudaSuccess) {
        cudaGetLastError();
        if (__atomic_fetch_add(&logged, 1, __ATOMIC_RELAXED) < 3)
            trk_log_write(TRK_LOG_WARN, "cuda", 0, "event timing unavailable: %s",
                          cudaGetErrorString(e));
        return 0;
    }
    return ms;
}

int cu_wait(void *self, struct trk_obj_result *out, struct trk_backend_timing *t)
{
    struct cuda_be *b = (struct cuda_be *)self;
    log_scope ls(b);
    if (b->rmode) return wait_regions(b, out, t);
    if (!b->work) {
        if (t) {
            t->upload_ms = t->kernel_ms = 0;
            t->upload_bytes = 0;
            t->total_ms = trk_backend_now_ms() - b->t_submit;
        }
        return 0;
    }
    b->work = false;
    TRK_CUDA_TRY(cudaSetDevice(b->dev));
    TRK_CUDA_TRY(b->pub_wait ? wait_handover(b) : wait_event(b->ev_done));
    b->log.lines = 0; /* a good frame ends the failure streak */
    decode(b->hp_res, b->pos, b->n, out);
    if (b->blob_work) decode_blobs(b);
    if (t) {
        t->upload_ms = b->up_timed ? span(b->ev_up0, b->ev_up1) : 0;
        t->upload_bytes = b->up_bytes;
        t->in_place_bytes = b->in_place_bytes;
        double k = b->roi ? span(b->ev_roi0, b->ev_roi1) : 0;
        if (b->blob_work) k += span(b->ev_b0, b->ev_b1);
        for (int i = 0; i < b->nk; i++)
            k += span(b->ev_ks[i], b->ev_ke[i]);
        if (b->pub_wait) k += (double)b->hp_pub->kernel_ns * 1e-6;
        t->kernel_ms = k;
        t->total_ms = trk_backend_now_ms() - b->t_submit;
    }
    return 0;
}

int cu_blobs(void *self, int obj, const struct trk_blob **out)
{
    struct cuda_be *b = (struct cuda_be *)self;
    if (b->rmode) return trk_cu_rrm_blobs(b->rrm, obj, out);
    *out = b->h_blob[obj];
    return b->n_blob[obj];
}

} // namespace trk_cuda
