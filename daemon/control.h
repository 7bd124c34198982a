/* The daemon's control plane: the mutable object set and the answers to the
 * control messages of protocol/PROTOCOL.md section 5 (list/add/update/
 * rename/remove objects, sample colours, preview settings and mask view,
 * save/reload the objects file).
 *
 * Threads: trk_control_on_message runs on the WebSocket service thread and
 * never blocks on the pipeline: edits take a short mutex and bump a version;
 * sample requests are queued and answered by the processing thread from the
 * next frame (trk_control_frame). The processing thread picks up a new object
 * set between frames (trk_control_poll); the preview thread reads the mask
 * and preview settings (trk_control_preview). trk_control_reload may be
 * called from any thread (SIGHUP handling in main). Every function is
 * thread-safe.
 *
 * Lifecycle: create / set_ws / destroy. */
#ifndef TRK_DAEMON_CONTROL_H
#define TRK_DAEMON_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "messages.h"
#include "objects.h"

struct trk_control;
struct trk_ws;

struct trk_control_cfg {
    const struct trk_objects *objects; /* the initial set (copied)                  */
    const char *save_path;             /* where save_objects writes and reload reads;
                                        * NULL = save/reload answer "no_file"       */
    struct trk_hello_info hello;       /* hello template: strings copied; defs,
                                        * n_objects and colors are ignored (the
                                        * current set is used)                      */
};

/* Control message types this module answers (NULL-terminated), for
 * trk_ws_cfg.control_types. */
extern const char *const trk_control_types[];

int trk_control_create(const struct trk_control_cfg *cfg, struct trk_control **out);
/* Attaches the server that replies and broadcasts go to, and sets its hello
 * for the current set. Call once, before clients can send messages. */
void trk_control_set_ws(struct trk_control *c, struct trk_ws *ws);
void trk_control_destroy(struct trk_control **c);

/* trk_ws_on_message: user is the struct trk_control. */
void trk_control_on_message(void *user, uint64_t client_id, const char *json, size_t len);

/* Processing thread: when the set changed since *version, copies it into
 * *out, updates *version and returns true. *version = 0 gets the first set. */
bool trk_control_poll(struct trk_control *c, uint64_t *version, struct trk_objects *out);

/* Processing thread, after each frame: answers pending sample requests from
 * img (frame seq). Cheap when none are pending. */
void trk_control_frame(struct trk_control *c, const struct trk_image *img, uint64_t seq);

/* Preview thread: current preview width / rate and the mask object (def
 * copied into *mask; returns false when no mask is shown). */
bool trk_control_preview(struct trk_control *c, int *width, double *fps,
                         struct trk_object_def *mask);

/* Reloads the objects file (SIGHUP). On failure the current set stays and
 * the "file:line:col: message" text is in msg. Returns 0 or a negative code. */
int trk_control_reload(struct trk_control *c, char *msg, size_t msg_len);

/* The channel triple the backends test for an object of space at pixel
 * (x, y) of img (gpu/color.h rules: native Y/Cb/Cr for YUV frames and ycbcr
 * objects, otherwise RGB converted). c[0] is hue for hsv. */
void trk_pixel_channels(const struct trk_image *img, int x, int y, enum trk_space space, int c[3]);

/* True when pixel (x, y) of img matches def's box (the backends' rule). */
bool trk_pixel_matches(const struct trk_image *img, int x, int y, const struct trk_object_def *def);

#endif
