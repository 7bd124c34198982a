/* Device images for the GPU tests: a host image's copy in device memory,
 * each plane its own allocation, in-place pitches (like FFmpeg's CUDA
 * frames) or odd ones, its pixels written the way NVDEC's copy reaches a
 * surface. Header-only, for the test files of this folder. */
#ifndef TRK_TEST_DEV_IMAGE_H
#define TRK_TEST_DEV_IMAGE_H

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

/* A device copy of a host image: each plane its own allocation, pitch
 * `pitch_of(row bytes)`; pixels written from pinned memory on stream 0. */
struct dev_image {
    struct trk_image img;
    void *plane[3];
    void *pinned[3];
    size_t bytes[3];
};

static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

/* in_place: a 256-byte pitch with room for 4-pixel loads past the row
 * (what FFmpeg's CUDA frames have); else row bytes + 1 (copied first). */
static int dev_make(const struct trk_image *h, bool in_place, struct dev_image *d)
{
    struct trk_plane_layout L, wide;
    memset(d, 0, sizeof(*d));
    if (trk_image_plane_layout(h->fmt, h->width, h->height, &L) ||
        trk_image_plane_layout(h->fmt, (h->width + 3) / 4 * 4, h->height, &wide))
        return -1;
    d->img = *h;
    d->img.mem = TRK_MEM_CUDA;
    for (int p = 0; p < L.planes; p++) {
        size_t pitch = in_place ? round_up(wide.row_bytes[p], 256) : L.row_bytes[p] + 1;
        d->bytes[p] = pitch * (size_t)L.rows[p];
        if (cudaMalloc(&d->plane[p], d->bytes[p]) != cudaSuccess ||
            cudaMallocHost(&d->pinned[p], d->bytes[p]) != cudaSuccess)
            return -1;
        /* Garbage in the padding: it is read and must not count. */
        memset(d->pinned[p], 0xA5, d->bytes[p]);
        for (int y = 0; y < L.rows[p]; y++)
            memcpy((uint8_t *)d->pinned[p] + y * pitch, h->plane[p] + y * h->pitch[p],
                   L.row_bytes[p]);
        d->img.plane[p] = d->plane[p];
        d->img.pitch[p] = pitch;
    }
    return 0;
}

/* Stale bytes first (synchronously), then the pixels asynchronously on the
 * legacy default stream, not waited for: a backend that did not order its
 * reads after that stream would see the stale bytes. */
static int dev_fill(struct dev_image *d)
{
    for (int p = 0; p < 3 && d->plane[p]; p++)
        if (cudaMemset(d->plane[p], 0x3C, d->bytes[p]) != cudaSuccess) return -1;
    if (cudaDeviceSynchronize() != cudaSuccess) return -1;
    for (int p = 0; p < 3 && d->plane[p]; p++)
        if (cudaMemcpyAsync(d->plane[p], d->pinned[p], d->bytes[p], cudaMemcpyHostToDevice, 0) !=
            cudaSuccess)
            return -1;
    return 0;
}

/* Whether the device planes still hold exactly what was written. */
static bool dev_unchanged(struct dev_image *d)
{
    bool same = true;
    for (int p = 0; p < 3 && d->plane[p]; p++) {
        uint8_t *back = malloc(d->bytes[p]);
        same = same && back &&
               cudaMemcpy(back, d->plane[p], d->bytes[p], cudaMemcpyDeviceToHost) == cudaSuccess &&
               memcmp(back, d->pinned[p], d->bytes[p]) == 0;
        free(back);
    }
    return same;
}

static void dev_free(struct dev_image *d)
{
    for (int p = 0; p < 3; p++) {
        if (d->plane[p]) cudaFree(d->plane[p]);
        if (d->pinned[p]) cudaFreeHost(d->pinned[p]);
    }
    memset(d, 0, sizeof(*d));
}

/* The start of a device-image test's main: 77 (skipped) without a usable
 * GPU, saying why; 0 for --probe on one; else -1 (run), with *quick for
 * --quick. */
static int gpu_test_start(int argc, char **argv, bool *quick)
{
    char why[256];
    if (!trk_cuda_available(why, sizeof(why))) {
        printf("SKIP: no usable GPU (%s)\n", why);
        return 77;
    }
    if (argc > 1 && !strcmp(argv[1], "--probe")) return 0;
    *quick = argc > 1 && !strcmp(argv[1], "--quick");
    return -1;
}

#endif
