/* Camera controls for clients (PROTOCOL.md get_camera / set_camera): which
 * exposure, gain and white-balance controls the --device camera has, with
 * their ranges (VIDIOC_QUERY_EXT_CTRL, VIDIOC_QUERYMENU), setting one of
 * them, and the objects file's camera section as clients and reloads change
 * it: the V4L2 source sets that section, then --control, at every open.
 *
 * Threads: get/set requests come from the WebSocket service thread
 * (through control.c) and are queued to the module's own worker, which
 * opens the device on a second fd (V4L2 lets controls be set beside the
 * streaming fd), does the ioctls (a USB camera can take a while to answer)
 * and replies. trk_camctl_controls runs on the capture thread at every
 * open, trk_camctl_load on whichever thread reloads. Every function is
 * thread-safe.
 *
 * Lifecycle: create (starts the worker) / destroy (finishes queued
 * requests, joins it). */
#ifndef TRK_DAEMON_CAMCTL_H
#define TRK_DAEMON_CAMCTL_H

#include <stdbool.h>
#include <stdint.h>

#include "control/control.h" /* struct trk_reply */
#include "objects.h"         /* struct trk_camera_control */

struct trk_camctl;

struct trk_camctl_cfg {
    const char *device; /* the camera; NULL = the source has no controls     */
    const char *reason; /* device NULL: why (told to clients), e.g. "the demo
                         * scene has no camera controls"                      */
    /* The objects file's camera section (copied; clients and reloads change
     * the module's copy) and the --control options, set after it: they
     * win, and set_camera refuses them ("fixed"). */
    const struct trk_camera_control *section;
    int n_section;
    const struct trk_camera_control *cli;
    int n_cli;
};

/* 0, TRK_EINVAL or TRK_ENOMEM (also when the worker cannot start). */
int trk_camctl_create(const struct trk_camctl_cfg *cfg, struct trk_camctl **out);
/* Safe on NULL and twice. The reply must stay usable until it returns. */
void trk_camctl_destroy(struct trk_camctl **c);

/* Where replies and the "camera" broadcasts go (copied); before the first
 * request. Without one, replies are dropped. */
void trk_camctl_set_reply(struct trk_camctl *c, const struct trk_reply *r);

/* Service thread: a get_camera (set false) or set_camera request, msg the
 * parsed message ("name", "value"), id its id as JSON text. Field errors,
 * no camera and --control controls are answered at once; the rest is
 * queued (at most 8, else "busy") and answered by the worker: get_camera
 * with a "camera" message; set_camera with an ack carrying the value the
 * driver took, then a "camera" broadcast to every client. */
struct json_t;
void trk_camctl_request(struct trk_camctl *c, uint64_t client, const char *id, bool set,
                        const struct json_t *msg);

/* Capture thread, at each open: the controls to set, the section then
 * --control, into out[0..max); returns how many. */
int trk_camctl_controls(struct trk_camctl *c, struct trk_camera_control *out, int max);

/* The camera section as it is now (clients' changes included), for a save:
 * out holds TRK_CAMERA_MAX_CONTROLS. */
void trk_camctl_section(struct trk_camctl *c, struct trk_camera_control *out, int *n);

/* A reloaded file's section replaces the module's and is set on the camera
 * now (then --control again), by the worker; clients get a "camera"
 * broadcast after. */
void trk_camctl_load(struct trk_camctl *c, const struct trk_camera_control *section, int n);

#endif
