/* The CUDA backend's host memory (backend.h host_alloc / host_register):
 * the process-wide registry of pinned ranges that the uploads consult. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log_hook.h"
#include "cuda_internal.cuh"

namespace trk_cuda
{

bool host_pinned(const void *p)
{
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return a.type == cudaMemoryTypeHost;
}

/* ------------------------------------------- host memory (backend.h) */

/* Every range this process pinned through a CUDA backend (host_alloc or
 * host_register), shared by all instances: a pool allocated through one
 * backend is uploaded directly by another (the pipeline's grown backend),
 * and the upload asks about the whole plane, not just its first byte (a
 * plane that runs past a registered buffer must take the staging path).
 * Frame pools are small: a fixed table, a lock taken once per plane. */
#define PIN_RANGES 512

struct pin_range {
    const uint8_t *p;
    size_t n;
    bool owned;         /* cudaHostAlloc'ed (host_free), else registered */
    const uint8_t *dev; /* p's address in the device's space (mapped), or NULL */
};

static pthread_mutex_t pin_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pin_range pins[PIN_RANGES];
int n_pins;

static bool pin_add(const void *p, size_t n, bool owned)
{
    void *dev = NULL;
    if (cudaHostGetDevicePointer(&dev, (void *)p, 0) != cudaSuccess) {
        cudaGetLastError(); /* not mapped: uploaded, never read in place */
        dev = NULL;
    }
    pthread_mutex_lock(&pin_lock);
    bool ok = n_pins < PIN_RANGES;
    if (ok) pins[n_pins++] = pin_range{ (const uint8_t *)p, n, owned, (const uint8_t *)dev };
    pthread_mutex_unlock(&pin_lock);
    return ok;
}

/* Removes p's range; whether it was there and, in *owned, how it was made. */
static bool pin_remove(const void *p, bool *owned)
{
    bool found = false;
    pthread_mutex_lock(&pin_lock);
    for (int i = 0; i < n_pins && !found; i++)
        if (pins[i].p == p) {
            *owned = pins[i].owned;
            pins[i] = pins[--n_pins];
            found = true;
        }
    pthread_mutex_unlock(&pin_lock);
    return found;
}

/* 1: [p, p + n) lies in one recorded range; -1: p is in one but the span
 * runs past its end; 0: p is in none. */
int pin_lookup(const void *p, size_t n)
{
    const uint8_t *a = (const uint8_t *)p;
    int r = 0;
    pthread_mutex_lock(&pin_lock);
    for (int i = 0; i < n_pins && r != 1; i++)
        if (a >= pins[i].p && (size_t)(a - pins[i].p) < pins[i].n)
            r = n <= pins[i].n - (size_t)(a - pins[i].p) ? 1 : -1;
    pthread_mutex_unlock(&pin_lock);
    return r;
}

bool pin_covers(const void *p, size_t n)
{
    return pin_lookup(p, n) == 1;
}

/* The device's address of host bytes [p, p + n) when they lie in one
 * recorded, mapped range; NULL otherwise. */
const uint8_t *pin_device(const void *p, size_t n)
{
    const uint8_t *a = (const uint8_t *)p, *d = NULL;
    pthread_mutex_lock(&pin_lock);
    for (int i = 0; i < n_pins && !d; i++)
        if (a >= pins[i].p && (size_t)(a - pins[i].p) < pins[i].n &&
            n <= pins[i].n - (size_t)(a - pins[i].p) && pins[i].dev)
            d = pins[i].dev + (a - pins[i].p);
    pthread_mutex_unlock(&pin_lock);
    return d;
}

void *cu_host_alloc(void *self, size_t bytes)
{
    struct cuda_be *b = (struct cuda_be *)self;
    log_scope ls(b);
    void *p = NULL;
    if (cudaSetDevice(b->dev) != cudaSuccess ||
        cudaHostAlloc(&p, bytes, cudaHostAllocPortable | cudaHostAllocMapped) != cudaSuccess) {
        cudaGetLastError(); /* the caller falls back to pageable memory */
        return NULL;
    }
    if (!pin_add(p, bytes, true)) {
        /* Unrecorded, it would never be freed right: give it back. */
        cudaFreeHost(p);
        return NULL;
    }
    return p;
}

void cu_host_free(void *self, void *p)
{
    (void)self;
    bool owned = false;
    if (pin_remove(p, &owned) && owned) cudaFreeHost(p);
}

int cu_host_register(void *self, void *p, size_t n)
{
    struct cuda_be *b = (struct cuda_be *)self;
    log_scope ls(b);
    if (cudaSetDevice(b->dev) != cudaSuccess) {
        cudaGetLastError();
        return TRK_EBACKEND;
    }
    /* Mapped, so that the kernels can read frames there in place; where the
     * system cannot map it, pinned only (uploaded by the copy engine). */
    if (cudaHostRegister(p, n, cudaHostRegisterPortable | cudaHostRegisterMapped) != cudaSuccess &&
        (cudaGetLastError(), cudaHostRegister(p, n, cudaHostRegisterPortable)) != cudaSuccess) {
        cudaGetLastError(); /* the caller logs it once and stays pageable */
        return TRK_EBACKEND;
    }
    if (!pin_add(p, n, false)) {
        cudaHostUnregister(p);
        return TRK_EBACKEND;
    }
    return 0;
}

void cu_host_unregister(void *self, void *p)
{
    (void)self;
    bool owned = true;
    if (pin_remove(p, &owned) && !owned) cudaHostUnregister(p);
}

bool cu_host_pinned(const void *self, const void *p, size_t n)
{
    (void)self;
    return pin_covers(p, n);
}

} // namespace trk_cuda
