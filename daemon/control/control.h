/* The daemon's control plane: the mutable object set and the answers to the
 * control messages of protocol/PROTOCOL.md section 5 (list/add/update/
 * rename/remove objects, sample colours, preview settings and mask view,
 * save/reload the objects file; get_camera and set_camera go on to the
 * camera module, camctl.h).
 *
 * Threads: trk_control_on_message runs on the WebSocket service thread and
 * never blocks on the pipeline or the disk: edits take a short mutex and bump
 * a version; sample requests are queued (at most 16, 4 per client) and
 * answered by the pipeline's sampler thread from the next frame it is handed
 * (trk_control_answer_samples), never by the processing thread; save_objects and
 * reload_objects are queued to the module's file worker thread, which
 * replies when the file is written or read. The processing thread picks up a
 * new object set between frames (trk_control_poll); the preview thread reads
 * the mask and preview settings (trk_control_preview). trk_control_reload
 * may be called from any thread (SIGHUP handling in main). Every function is
 * thread-safe.
 *
 * Lifecycle: create (starts the file worker) / destroy (finishes the queued
 * file requests, then joins it). */
#ifndef TRK_DAEMON_CONTROL_H
#define TRK_DAEMON_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "messages.h"
#include "objects.h"

struct trk_control;

/* Where the module's messages go (the WebSocket server, in the daemon). Each
 * function may be NULL (the message is dropped) and is called from any of
 * the threads above, so it must be thread-safe and must not block; msg is
 * only valid during the call. */
struct trk_reply {
    void *ctx; /* first argument of every function */
    /* A reply to one request (ack, error, objects, sample). */
    void (*send)(void *ctx, uint64_t client, const struct trk_buf *msg);
    /* The "objects" message to every client, after the set changed. */
    void (*broadcast)(void *ctx, const struct trk_buf *msg);
    /* The hello new clients get; replaced after every change. */
    void (*set_hello)(void *ctx, const struct trk_buf *msg);
    /* The preview view (1..TRK_CONTROL_VIEWS, 0 = the plain picture) client
     * receives from now on: its own mask view (trk_control_preview). */
    void (*set_view)(void *ctx, uint64_t client, int view);
};

/* Clients that may watch a mask view at once; each has its own view number
 * 1..TRK_CONTROL_VIEWS (the server's previews of that view go to it alone). */
#define TRK_CONTROL_VIEWS 8
/* Frames kept after their preview was made, so a sample can name the frame
 * its user saw (trk_control_keep_frame), and frames clients may hold at
 * once (a paused page, "preview" "hold"). */
#define TRK_CONTROL_KEPT_FRAMES 4
#define TRK_CONTROL_HELD_FRAMES 4

struct trk_camctl;
struct trk_control_cfg {
    const struct trk_objects *objects; /* the initial set (copied)                  */
    /* Where save_objects writes and reload reads (opened by the caller,
     * config/objects.h rules; borrowed: it must stay open until destroy
     * returns); NULL = save/reload answer "no_file". */
    const struct trk_objects_target *save;
    struct trk_hello_info hello; /* hello template: strings copied; defs,
                                  * n_objects and colors are ignored (the
                                  * current set is used)                      */
    struct trk_reply reply;      /* where replies, broadcasts and the hello go;
                                  * the hello is set at create              */
    /* get_camera / set_camera go to it, saves take its camera section and
     * reloads hand it theirs (camctl.h); NULL: get_camera and set_camera
     * answer "unsupported", the set's own section is saved. Borrowed: it
     * must outlive the module. */
    struct trk_camctl *camera;
    /* save_rewind goes to it (daemon/out/rewind.h trk_rewind_save: 0 with
     * the bundle's folder in dir, or a negative code with why); NULL:
     * save_rewind answers "unsupported". Any thread; must not block. */
    int (*save_rewind)(void *ctx, char *dir, size_t dir_len, char *why, size_t why_len);
    void *save_rewind_ctx;
    /* "focus" requests set its baseline (ops/focus.h); NULL: they answer
     * "unsupported" (--focus-every 0). Borrowed: it must outlive the
     * module. */
    struct trk_focus *focus;
};

/* Returns 0, TRK_EINVAL or TRK_ENOMEM (also when the worker cannot start). */
int trk_control_create(const struct trk_control_cfg *cfg, struct trk_control **out);
/* Safe on NULL and twice. cfg->reply must stay usable until it returns. */
void trk_control_destroy(struct trk_control **c);

/* trk_ws_on_message: user is the struct trk_control. Answers the types of
 * trk_msg_control_types (messages.h) except "auth" (the server's). */
void trk_control_on_message(void *user, uint64_t client_id, const char *json, size_t len);

/* Processing thread: when the set changed since *version, copies it into
 * *out, updates *version and returns true. *version = 0 gets the first set. */
bool trk_control_poll(struct trk_control *c, uint64_t *version, struct trk_objects *out);

/* The most pixels one sample reads: a larger rectangle is read on an evenly
 * spaced grid (every k-th pixel of every k-th row, the smallest k that fits),
 * so the cost of a reply is bounded whatever the frame size. */
#define TRK_SAMPLE_PIXELS_MAX 65536
/* The most pixels a sample reads to tell how much of the frame its
 * suggested boxes match ("frame_share"): a grid over the whole frame,
 * enough for a share to about 1%. */
#define TRK_SAMPLE_SHARE_PIXELS 4096

/* Processing thread, after each frame: whether sample requests wait (then
 * the frame goes to the sampler thread). A mutex and a load. */
bool trk_control_samples_pending(struct trk_control *c);

/* Sampler thread: answers every pending sample request from img (frame seq),
 * or, for a request that names its frame, from that kept or held frame, and
 * returns the pixels read (at most TRK_SAMPLE_PIXELS_MAX +
 * TRK_SAMPLE_SHARE_PIXELS per request), so the caller can pace itself. */
long trk_control_answer_samples(struct trk_control *c, const struct trk_image *img, uint64_t seq);

/* One picture the preview thread makes of each previewed frame. */
struct trk_control_view {
    int view;                  /* 0 = the plain picture, else a client's view */
    bool mask;                 /* false: the plain picture (also for a client
                                * whose mask object is gone)                  */
    struct trk_object_def def; /* the mask's box, when mask                  */
    bool edges;                /* the edges view: Canny edges drawn in      */
    bool carve;                /* seam-carved to the aspect fit_w:fit_h     */
    int fit_w, fit_h;
};

/* Preview thread: current preview width / rate, and the pictures to make:
 * views[0] is the plain picture, then one per client with a view of its
 * own (mask, edges, carve; at most max in all). Returns how many views were written. */
int trk_control_preview(struct trk_control *c, int *width, double *fps,
                        struct trk_control_view *views, int max);

/* Preview thread: img (frame seq) was previewed; keeps a copy of it among
 * the last TRK_CONTROL_KEPT_FRAMES, so that "sample" requests naming seq are
 * answered from the picture the client saw. A copy that cannot be made
 * (memory) is skipped: samples naming it get "not_found". */
void trk_control_keep_frame(struct trk_control *c, const struct trk_image *img, uint64_t seq);

/* Service thread (trk_ws_cfg.on_close): the client has gone; its mask view
 * and held frame are forgotten. */
void trk_control_client_closed(struct trk_control *c, uint64_t client);

/* Processing thread: the source's frames are now width x height (a size
 * change mid-stream). New clients get a hello with it (and the preview
 * size fitted to it); sample and preview requests are checked against it. */
void trk_control_set_frame_size(struct trk_control *c, int width, int height);

/* Makes set the current object set, as a teach edit would (clients get
 * the new set; the pipeline's next poll takes it). --replay installs each
 * recorded set so. Any thread. */
void trk_control_install(struct trk_control *c, const struct trk_objects *set);

/* Ranges that follow the light (daemon/light.h), processing thread, once
 * a frame while the set has "illumination" or "adapt": the boxes the next
 * frame uses (defs[0..n), the current set's objects) and the reference's
 * means (Q8; has_means false while none is known), for keep_range; then
 * the objects whose adaptation reset_range asked to reset since the last
 * call: reset[i] set for each (false for the others), returns how many. */
int trk_control_light_frame(struct trk_control *c, const struct trk_object_def *defs, int n,
                            const uint32_t means_q8[3], bool has_means, bool *reset);

/* Reloads the objects file (SIGHUP). On failure the current set stays and
 * the "file:line:col: message" text is in msg. Returns 0, TRK_MSG_NO_FILE
 * (no save target) or TRK_MSG_INVALID_OBJECT (the file cannot be read or is
 * not a valid objects file): the error code of a reload_objects reply. */
int trk_control_reload(struct trk_control *c, char *msg, size_t msg_len);

/* The channel triple the backends test for an object of space at pixel
 * (x, y) of img (gpu/color.h rules: native Y/Cb/Cr for YUV frames and ycbcr
 * objects, otherwise RGB converted). c[0] is hue for hsv. */
void trk_pixel_channels(const struct trk_image *img, int x, int y, enum trk_space space, int c[3]);

#endif
