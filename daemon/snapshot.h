/* GET /snapshot.jpg: the newest processed frame as a full-size JPEG, with
 * the objects' boxes and centroids drawn in (overlay) or as one object's
 * mask view (protocol/PROTOCOL.md, "HTTP endpoints").
 *
 * The frame is not copied: the processing thread lends each processed frame
 * (with its results) and gets it back through the release function when a
 * newer one replaces it and no request is encoding it, so the hot path pays
 * a short mutex and a copy of the results, never a pixel copy. Encoding
 * happens on the requesting thread (the server's), one request at a time.
 *
 * Lifecycle: create / destroy; trk_snapshot_clear before the frames' owner
 * goes away (it waits for an encoding in progress). */
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
 * is called with holder. defs, colors and res (n of each) are copied. */
struct trk_snapshot_frame {
    const struct trk_image *img;
    uint64_t seq;
    const struct trk_object_def *defs;
    const uint8_t (*colors)[3]; /* display colour per object (R, G, B) */
    const struct trk_obj_result *res;
    int n;
    trk_snapshot_release_fn release;
    void *ctx, *holder;
    /* NULL, or (a device frame, img in GPU memory) the frame's pixels in
     * host memory, asked for only when a request encodes it: NULL there
     * when they cannot be had. */
    const struct trk_image *(*host)(void *holder);
};

/* quality: JPEG quality 1..100. 0 or TRK_ENOMEM. */
int trk_snapshot_create(int quality, struct trk_snapshot **out);
/* Clears, then frees; safe on NULL and twice (sets *s = NULL). */
void trk_snapshot_destroy(struct trk_snapshot **s);

/* Processing thread: f becomes the newest frame; the one before it is
 * released now, or by the request encoding it when that ends. */
void trk_snapshot_publish(struct trk_snapshot *s, const struct trk_snapshot_frame *f);

/* Releases the frame held, waiting for a request encoding one; until the
 * next publish, requests get "no frame". */
void trk_snapshot_clear(struct trk_snapshot *s);

enum trk_snapshot_status {
    TRK_SNAPSHOT_OK = 0,
    TRK_SNAPSHOT_NO_FRAME,  /* none processed yet (or cleared)           */
    TRK_SNAPSHOT_NO_OBJECT, /* mask names no object of the frame's set   */
    TRK_SNAPSHOT_FAILED,    /* out of memory or the encoder failed       */
};

/* The newest frame as a JPEG appended to out: with overlay, each found
 * object's bounding box and centroid cross in its display colour; with mask
 * (an object's name, or NULL), that object's mask view. why gets a line for
 * the user when the status is not OK. */
enum trk_snapshot_status trk_snapshot_jpeg(struct trk_snapshot *s, bool overlay, const char *mask,
                                           struct trk_buf *out, char *why, size_t why_len);

#endif
