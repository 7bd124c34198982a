/* The outputs door: where every frame's results, the source's state, the
 * object set and the 1 Hz stats go. The pipeline calls each entry point
 * once; the door hands it to every registered output in registration order
 * (the order of the table in outputs.c: ndjson, websocket, udp, osc, ssl,
 * mqtt).
 * An output is an ops table (struct trk_output_ops: NULL = not interested)
 * and its context; it encodes only what it needs, with protocol/messages.h,
 * from the frame result the pipeline filled once (protocol/result.h).
 *
 * Adding an output: one new file out/NAME.c with its ops and an open
 * function (struct trk_output_env in, trk_outputs_add when its option is
 * set), declared below, and one line in outputs.c's table (docs/
 * ARCHITECTURE.md, "Adding an output").
 *
 * Threads: the set of outputs is fixed before the pipeline starts (no lock).
 * frame and objects come from the processing thread; status from the
 * capture thread, the processing thread (a size change) and the caller's
 * (the end of input); tally, stats and flush from the caller's thread
 * (flush once the pipeline has ended). Each output is safe for the threads
 * that call it.
 * Lifecycle: create / add ... / destroy (closes every output, in order). */
#ifndef TRK_DAEMON_OUTPUTS_H
#define TRK_DAEMON_OUTPUTS_H

#include <stdbool.h>
#include <stddef.h>

#include "messages.h"

struct trk_objects;
struct trk_metrics;
struct trk_settings;
struct trk_ws;

/* Most outputs one door holds. */
#define TRK_OUTPUTS_MAX 16

/* What the source is doing, as clients are told (PROTOCOL.md, "status"). */
struct trk_source_status {
    const char *state; /* "ok", "lost", "eof" or "error"                       */
    const char *text;  /* why, or the source's description; may be NULL         */
    /* > 0: the frame size changed to width x height (clients that draw
     * rescale); the source's state itself did not change. 0: a state. */
    int width, height;
};

/* The stats outputs add to (trk_outputs_tally). */
struct trk_outputs_tally {
    struct trk_stats_info *info; /* their totals: clients, ws, mqtt        */
    char *log;                   /* their part of the stats log line,      */
    size_t log_len, log_at;      /* appended at log_at (log_len bytes)      */
    struct trk_metrics *metrics; /* non-NULL: their totals for /metrics too */
};

struct trk_output_ops {
    const char *name;
    /* frame wants the frame message (trk_msg_frame of the result): encoded
     * once by the door for every output that does. */
    bool json;
    /* With --predict send every output gets the result moved on to when it
     * is handed the frame (result.h predict; its frame message too), except
     * those that keep what was measured (a recording). */
    bool measured;
    /* Processing thread: one frame's result; json/len its frame message
     * when the ops say json (a frame whose message could not be encoded
     * reaches only the outputs that do not). Never waits for a peer. */
    void (*frame)(void *ctx, const struct trk_frame_result *r, const char *json, size_t len);
    /* The source's state (capture, processing or the caller's thread: may
     * run concurrently with itself). */
    void (*status)(void *ctx, const struct trk_source_status *s);
    /* Processing thread: the object set in use, initially and after every
     * change. */
    void (*objects)(void *ctx, const struct trk_objects *set);
    /* The caller's thread: adds this output's totals (see the struct). */
    void (*tally)(void *ctx, struct trk_outputs_tally *t);
    /* The caller's thread: the 1 Hz stats, totals of every output in. */
    void (*stats)(void *ctx, const struct trk_stats_info *st);
    /* The caller's thread, once the pipeline has ended (no more frames):
     * writes out what is buffered. */
    void (*flush)(void *ctx);
    /* Ends the output (sends what it still queues, logs its account) and
     * frees ctx. 0, or a negative code when results were lost on the way
     * (trackd then exits 74). */
    int (*close)(void *ctx);
};

struct trk_outputs;

/* 0 or TRK_ENOMEM. */
int trk_outputs_create(struct trk_outputs **out);

/* Registers an output (ops stays the caller's, static). 0, or TRK_EINVAL
 * when the door is full: ctx is then closed. */
int trk_outputs_add(struct trk_outputs *o, const struct trk_output_ops *ops, void *ctx);

/* The entry points; each safe on NULL (no outputs). */
void trk_outputs_frame(struct trk_outputs *o, const struct trk_frame_result *r);
void trk_outputs_status(struct trk_outputs *o, const struct trk_source_status *s);
void trk_outputs_objects(struct trk_outputs *o, const struct trk_objects *set);
void trk_outputs_tally(struct trk_outputs *o, struct trk_outputs_tally *t);
void trk_outputs_stats(struct trk_outputs *o, const struct trk_stats_info *st);
void trk_outputs_flush(struct trk_outputs *o);

/* Closes every output in registration order and frees; safe on NULL and
 * twice (sets *o = NULL). 0, or the first close's error. */
int trk_outputs_destroy(struct trk_outputs **o);

/* ------------------------------------------------- opening from settings */

/* What an output's open function may use. */
struct trk_output_env {
    const struct trk_settings *s; /* the command line (daemon/cli.h)        */
    struct trk_ws *ws;            /* the web server, NULL with --no-server  */
    struct trk_metrics *metrics;  /* /metrics, NULL = none                  */
    /* The objects at start (NULL: none); later sets reach the outputs
     * through their objects hook. */
    const struct trk_objects *objects;
};

/* Each output's open: registers it when its option is set, else does
 * nothing. 0, or the exit code (daemon/exit.h) after saying why. */
int trk_ndjson_open(const struct trk_output_env *env, struct trk_outputs *o);
int trk_websocket_open(const struct trk_output_env *env, struct trk_outputs *o);
int trk_mqtt_open(const struct trk_output_env *env, struct trk_outputs *o);
int trk_udp_open(const struct trk_output_env *env, struct trk_outputs *o);
int trk_osc_open(const struct trk_output_env *env, struct trk_outputs *o);
int trk_ssl_open(const struct trk_output_env *env, struct trk_outputs *o);

/* The WebSocket output (websocket.c) on a server the caller keeps (tests
 * register it so; trk_websocket_open does for trackd). 0 or TRK_ENOMEM. */
int trk_websocket_add(struct trk_outputs *o, struct trk_ws *ws);

/* Opens every output of the table in outputs.c, in its order; stops at the
 * first that fails and returns its exit code. */
int trk_outputs_open(struct trk_outputs *o, const struct trk_output_env *env);

#endif
