/* The processing thread's state between two frames, as bytes: what a
 * rewind bundle needs to replay from mid-run exactly as the live run went
 * on (docs/RECORDING.md, state.bin). The tracker's instances and the
 * marker follower's tracks are what a frame's step reads from the frames
 * before it; trk_state_save writes them just before a frame is begun,
 * trk_state_load puts them back before the same frame is replayed.
 *
 * The bytes are the build's own: numbers as they are in memory (doubles
 * bit for bit, so the replay computes bit-identical results), in the
 * machine's byte order, with a layout word (the sizes of the structures
 * written) that a reader checks: a build of another layout refuses the
 * file with a clear error instead of misreading it.
 *
 * Threads: the processing thread's (save, load); the check runs anywhere
 * (it loads into its own tracker and stage). */
#ifndef TRK_DAEMON_STATE_H
#define TRK_DAEMON_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct trk_tracker;
struct trk_marker_stage;
struct trk_objects;
struct trk_light;
struct trk_frame_result;

/* A growing byte buffer (writers) and a cursor over bytes (readers): a read
 * past the end or a value out of range sets bad at the offset it failed
 * at, and every later read gives zeros. */
struct trk_bytes {
    uint8_t *p;
    size_t len, cap;
    bool failed; /* out of memory: p holds what fit */
};
struct trk_rd {
    const uint8_t *p;
    size_t len, off;
    bool bad;
    size_t bad_off;
    const char *what; /* what was wrong at bad_off */
};

/* Inline: the tracker is also built alone (trackd-bench). */
static inline void trk_bytes_put(struct trk_bytes *b, const void *v, size_t n)
{
    if (b->failed || !n) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, v, n);
    b->len += n;
}

static inline void trk_rd_fail(struct trk_rd *r, const char *what)
{
    if (r->bad) return;
    r->bad = true;
    r->bad_off = r->off;
    r->what = what;
}

static inline void trk_rd_get(struct trk_rd *r, void *v, size_t n)
{
    if (!r->bad && n > r->len - r->off) trk_rd_fail(r, "the file ends inside a record");
    if (r->bad) {
        memset(v, 0, n);
        return;
    }
    memcpy(v, r->p + r->off, n);
    r->off += n;
}

/* state.bin's version (docs/RECORDING.md). */
#define TRK_STATE_VERSION 2

/* Appends the state the tracker, the stage and the light (res: the last
 * frame's results, the light's next plan reads them) have before frame seq
 * (set: the objects in force for it; width x height its size) to *b. */
void trk_state_save(struct trk_bytes *b, const struct trk_tracker *t,
                    const struct trk_marker_stage *s, const struct trk_light *l,
                    const struct trk_frame_result *res, const struct trk_objects *set, int width,
                    int height, uint64_t seq);

/* Loads len bytes of a trk_state_save into t (reset with set, for frames of
 * width x height), s and l (reset with set here; a version 1 file has no
 * light: it stays so), for frame seq (the saved frame's seq may differ: a
 * replay counts its frames from 0). 0, or TRK_EINVAL with *bad_off and
 * *what (t and l are then as reset). */
int trk_state_load(const void *data, size_t len, struct trk_tracker *t, struct trk_marker_stage *s,
                   struct trk_light *l, const struct trk_objects *set, int width, int height,
                   uint64_t seq, size_t *bad_off, const char **what);

/* Checks the bytes against set (the bundle's first) by loading them into a
 * tracker and a stage of its own. 0, TRK_EINVAL as load, or TRK_ENOMEM. */
int trk_state_check(const void *data, size_t len, const struct trk_objects *set, size_t *bad_off,
                    const char **what);

#endif
