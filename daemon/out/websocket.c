/* The WebSocket server (protocol/ws.h) as one output of the door: frame
 * messages, the source's status and the 1 Hz stats go to every client. The
 * server itself stays main's (it also carries the hello, control replies
 * and previews): close frees only this adapter. */
#include <stdlib.h>

#include "exit.h"
#include "trk_clock.h"
#include "outputs.h"
#include "ws.h"

struct websocket {
    struct trk_ws *ws;
    uint64_t writes; /* trk_ws_write_delays' mark of the stats message */
    /* Processing thread: the result moved on for the clients that
     * subscribed with "predict" (per slot: ws.h), and its message. */
    struct trk_frame_result pred;
    struct trk_buf pred_msg;
};

static void ws_frame(void *ctx, const struct trk_frame_result *r, const char *json, size_t len)
{
    struct websocket *w = ctx;
    trk_ws_broadcast(w->ws, TRK_WS_RESULT, json, len);
    double ahead[TRK_WS_PREDICT_SLOTS];
    unsigned used = trk_ws_predict_slots(w->ws, ahead);
    for (int k = 0; k < TRK_WS_PREDICT_SLOTS; k++) {
        if (!(used & (1u << k))) continue;
        trk_frame_result_predict(&w->pred, r, trk_now());
        w->pred.predict_dt += ahead[k];
        trk_buf_reset(&w->pred_msg);
        if (trk_msg_frame(&w->pred_msg, &w->pred) == 0)
            trk_ws_broadcast_predicted(w->ws, k, w->pred_msg.data, w->pred_msg.len);
    }
}

/* The last one is also sent to clients that connect later (ws.h). */
static void ws_status(void *ctx, const struct trk_source_status *s)
{
    struct websocket *w = ctx;
    struct trk_buf b = { 0 };
    int err = s->width > 0 ? trk_msg_status_size(&b, s->state, s->text, s->width, s->height)
                           : trk_msg_status(&b, s->state, s->text);
    if (err == 0) trk_ws_broadcast(w->ws, TRK_WS_STATUS, b.data, b.len);
    trk_buf_free(&b);
}

static void ws_tally(void *ctx, struct trk_outputs_tally *t)
{
    struct websocket *w = ctx;
    struct trk_ws_stats ws;
    trk_ws_get_stats(w->ws, &ws);
    t->info->clients = ws.clients;
    t->info->ws_sent = ws.messages_sent;
    t->info->ws_dropped = ws.messages_dropped;
    t->info->ws_bytes = ws.bytes_sent;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The interval's write delays (trk_ws_write_delays) into st: p50, p99 and
 * max, or -1 each when none were written. */
static void write_delays(struct websocket *w, struct trk_stats_info *st)
{
    static float v[TRK_WS_WRITE_SAMPLES]; /* only the caller's thread reports */
    st->write_p50_ms = st->write_p99_ms = st->write_max_ms = -1;
    int n = trk_ws_write_delays(w->ws, &w->writes, v, TRK_WS_WRITE_SAMPLES);
    if (n <= 0) return;
    qsort(v, (size_t)n, sizeof(*v), cmp_float);
    st->write_p50_ms = v[n / 2];
    st->write_p99_ms = v[(int)((n - 1) * 0.99 + 0.5)];
    st->write_max_ms = v[n - 1];
}

static void ws_stats(void *ctx, const struct trk_stats_info *info)
{
    struct websocket *w = ctx;
    struct trk_stats_info st = *info;
    write_delays(w, &st);
    struct trk_buf b = { 0 };
    if (trk_msg_stats(&b, &st) == 0) trk_ws_broadcast(w->ws, TRK_WS_STATS, b.data, b.len);
    trk_buf_free(&b);
}

static int ws_close(void *ctx)
{
    struct websocket *w = ctx;
    trk_buf_free(&w->pred_msg);
    free(ctx);
    return 0;
}

static const struct trk_output_ops websocket_ops = {
    .name = "websocket",
    .json = true,
    .frame = ws_frame,
    .status = ws_status,
    .tally = ws_tally,
    .stats = ws_stats,
    .close = ws_close,
};

int trk_websocket_add(struct trk_outputs *o, struct trk_ws *ws)
{
    struct websocket *w = calloc(1, sizeof(*w));
    if (!w) return TRK_ENOMEM;
    w->ws = ws;
    return trk_outputs_add(o, &websocket_ops, w);
}

int trk_websocket_open(const struct trk_output_env *env, struct trk_outputs *o)
{
    return env->ws && trk_websocket_add(o, env->ws) ? TRK_EX_SOFTWARE : 0;
}
