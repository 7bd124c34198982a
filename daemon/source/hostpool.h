/* FFmpeg software decoding straight into the backend's host memory (pinned
 * on CUDA): an AVCodecContext.get_buffer2 that hands the decoder frames from
 * a pool of trk_backend_host_alloc'ed buffers, so a decoded frame can go to
 * the backend as it is, with no staging copy. Formats the backends do not
 * take (they are converted with swscale anyway), decoders without
 * AV_CODEC_CAP_DR1 and allocation failures use FFmpeg's default allocator.
 *
 * The pool's buffers are reference counted by FFmpeg: decoded frames the
 * pipeline still holds keep theirs after the decoder is closed; the pool
 * goes when its owner and the last buffer have let go. */
#ifndef TRK_DAEMON_HOSTPOOL_H
#define TRK_DAEMON_HOSTPOOL_H

#include <stdbool.h>
#include <stdint.h>

#include <libavcodec/avcodec.h>

#include "backend.h"

struct trk_hostpool;

/* Counts since create, for the stats and tests. */
struct trk_hostpool_stats {
    uint64_t frames;    /* get_buffer2 calls the pool served            */
    uint64_t fallbacks; /* calls left to FFmpeg's default allocator     */
    uint64_t allocated; /* buffers allocated from the backend (reuse keeps it small) */
    uint64_t live;      /* of those, not yet freed                      */
};

int trk_hostpool_create(struct trk_hostpool **out);
/* The owner lets go; the pool goes once no buffer is out. NULL-safe, sets
 * *p = NULL. */
void trk_hostpool_destroy(struct trk_hostpool **p);
/* The backend to allocate from from now on (first non-NULL call wins: the
 * buffers already out are freed through it). NULL until then: every frame
 * goes to the default allocator. Thread-safe. */
void trk_hostpool_set_mem(struct trk_hostpool *p, struct trk_backend *mem);
/* Makes dec decode into the pool: call before avcodec_open2. */
void trk_hostpool_attach(struct trk_hostpool *p, AVCodecContext *dec);
void trk_hostpool_get_stats(struct trk_hostpool *p, struct trk_hostpool_stats *st);

#endif
