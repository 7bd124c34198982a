/* GET /snapshot.jpg: the newest processed frame as a full-size JPEG, with
 * the objects' boxes and centroids drawn in (overlay) or as one object's
 * mask view (protocol/PROTOCOL.md, "HTTP endpoints").
 *
 * The frame is not copied: the processing thread lends each processed frame
 * (with its results) and gets it back through the release function when a
 * newer one replaces it and no encode is using it, so the hot path pays a
 * short mutex and a copy of the results, never a pixel copy.
 *
 * Requests never encode on the asking thread (the web server's, which also
 * writes every viewer's results): the module's own encoder thread (nice 10)
 * does, once per frame and kind of picture (overlay, mask) however many
 * clients ask, and keeps the JPEGs of the newest frame, so a request for a
 * frame already encoded is answered at once from that cache and the others
 * wait for the encoder. Each client address may ask at most `rate` times a
 * second (a token bucket of `rate` requests, at least 1); more are refused.
 *
 * Lifecycle: create (memory and the encoder thread) / stop (joins the
 * thread; before the answers' receiver goes away) / destroy;
 * trk_snapshot_clear before the frames' owner goes away (it waits for an
 * encode in progress). */
#ifndef TRK_DAEMON_SNAPSHOT_H
#define TRK_DAEMON_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "messages.h" /* struct trk_buf */

struct trk_snapshot;

/* Gives a lent frame back to its owner. */
typedef void (*trk_snapshot_release_fn)(void *ctx, void *holder);

/* One processed frame, lent: img's pixels must stay unchanged until release
 * is called with holder. defs, colors and obj (n of each) are copied. */
struct trk_snapshot_frame {
    const struct trk_image *img;
    uint64_t seq;
    const struct trk_object_def *defs;
    const uint8_t (*colors)[3];          /* display colour per object (R, G, B) */
    const struct trk_result_object *obj; /* the frame result's (protocol/result.h) */
    int n;
    trk_snapshot_release_fn release;
    void *ctx, *holder;
    /* NULL, or (a device frame, img in GPU memory) the frame's pixels in
     * host memory, asked for only when a request encodes it: NULL there
     * when they cannot be had. */
    const struct trk_image *(*host)(void *holder);
};

/* Requests kept waiting for the encoder at once; more are answered busy. */
#define TRK_SNAPSHOT_WAITING_MAX 256

/* quality: JPEG quality 1..100; rate: requests a second one client address
 * may make (0 = no limit). 0, TRK_EINVAL or TRK_ENOMEM. */
int trk_snapshot_create(int quality, double rate, struct trk_snapshot **out);
/* Stops the encoder thread; requests still waiting get no answer. Safe
 * twice; requests after it are answered "no frame". */
void trk_snapshot_stop(struct trk_snapshot *s);
/* Stops, clears, then frees; safe on NULL and twice (sets *s = NULL). */
void trk_snapshot_destroy(struct trk_snapshot **s);

/* Processing thread: f becomes the newest frame; the one before it is
 * released now, or by the request encoding it when that ends. */
void trk_snapshot_publish(struct trk_snapshot *s, const struct trk_snapshot_frame *f);

/* Releases the frame held, waiting for a request encoding one; until the
 * next publish, requests get "no frame". */
void trk_snapshot_clear(struct trk_snapshot *s);

enum trk_snapshot_status {
    TRK_SNAPSHOT_OK = 0,
    TRK_SNAPSHOT_NO_FRAME,  /* none processed yet (or cleared, stopped)  */
    TRK_SNAPSHOT_NO_OBJECT, /* mask names no object of the frame's set   */
    TRK_SNAPSHOT_FAILED,    /* out of memory or the encoder failed       */
    TRK_SNAPSHOT_LATER,     /* queued: answer() brings the result        */
    TRK_SNAPSHOT_LIMITED,   /* over the client's rate                    */
    TRK_SNAPSHOT_BUSY,      /* TRK_SNAPSHOT_WAITING_MAX already waiting  */
    TRK_SNAPSHOT_BAD_SIZE,  /* carve size larger than the frame          */
};

/* Brings a queued request's result, on the encoder thread: jpeg (len bytes,
 * valid during the call) when st is TRK_SNAPSHOT_OK, else why, a line for the
 * user. */
typedef void (*trk_snapshot_answer_fn)(void *ctx, uint64_t request, enum trk_snapshot_status st,
                                       const uint8_t *jpeg, size_t len, const char *why);

/* A request: with overlay, each found object's bounding box and centroid
 * cross in its display colour; with mask (an object's name, or NULL), that
 * object's mask view; with edges, the frame's Canny edges white over the
 * picture at half brightness (trk_preview_edges), under the overlay; with
 * carve_w, carve_h > 0, seam-carved to that size (trk_preview_carve: the
 * objects' boxes protected, the overlay mapped through the seams). */
struct trk_snapshot_req {
    bool overlay;
    bool edges;
    int carve_w, carve_h;
    const char *mask;
    const char *peer; /* the client's address: the rate is per address */
    uint64_t request; /* handed back to answer                         */
    trk_snapshot_answer_fn answer;
    void *ctx;
};

/* The newest frame as a JPEG: from the cache, appended to out now (OK), or
 * queued for the encoder thread (LATER: req->answer is called exactly once,
 * unless trk_snapshot_stop comes first). LIMITED, BUSY and NO_FRAME are
 * answered now, with a line for the user in why. Never waits for an encode:
 * meant for the web server's thread. */
enum trk_snapshot_status trk_snapshot_request(struct trk_snapshot *s,
                                              const struct trk_snapshot_req *req,
                                              struct trk_buf *out, char *why, size_t why_len);

/* Counts since create, for /metrics. */
struct trk_snapshot_stats {
    uint64_t frames;  /* frames lent (published)                      */
    uint64_t encodes; /* JPEGs encoded                                */
    uint64_t served;  /* requests answered with a JPEG               */
    uint64_t cached;  /* ... of them from the cache (no encode)      */
    uint64_t limited; /* requests refused over the client's rate      */
    uint64_t busy;    /* requests refused: too many waiting           */
};
void trk_snapshot_get_stats(struct trk_snapshot *s, struct trk_snapshot_stats *st);

#endif
