#include "outputs.h"

#include <stdlib.h>

#define LOG_TAG "outputs"
#include "cli.h"
#include "exit.h"
#include "log.h"
#include "trk_clock.h"

/* Every output, in the order they open and a frame reaches them; one line
 * each. MQTT last: it starts its thread and connects, so an output that
 * cannot start (a --udp name that does not resolve) leaves no status on
 * the broker. */
static int (*const opens[])(const struct trk_output_env *, struct trk_outputs *) = {
    trk_ndjson_open, trk_websocket_open, trk_udp_open, trk_osc_open, trk_ssl_open, trk_mqtt_open,
};

struct trk_outputs {
    struct {
        const struct trk_output_ops *ops;
        void *ctx;
    } out[TRK_OUTPUTS_MAX];
    int n;
    bool json;          /* some output wants the frame message */
    struct trk_buf msg; /* the processing thread's frame message */
    /* --predict send: each output gets a copy of the result moved on to
     * when it is handed the frame (processing thread's; NULL: off). */
    struct trk_frame_result *pred;
};

int trk_outputs_create(struct trk_outputs **out)
{
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : TRK_ENOMEM;
}

int trk_outputs_add(struct trk_outputs *o, const struct trk_output_ops *ops, void *ctx)
{
    if (o->n == TRK_OUTPUTS_MAX) {
        if (ops->close) ops->close(ctx);
        return TRK_EINVAL;
    }
    o->out[o->n].ops = ops;
    o->out[o->n].ctx = ctx;
    o->n++;
    o->json |= ops->json && ops->frame;
    return 0;
}

int trk_outputs_open(struct trk_outputs *o, const struct trk_output_env *env)
{
    if (env->s->predict && !o->pred && !(o->pred = calloc(1, sizeof(*o->pred))))
        return TRK_EX_SOFTWARE;
    for (size_t i = 0; i < sizeof(opens) / sizeof(opens[0]); i++) {
        int rc = opens[i](env, o);
        if (rc) return rc;
    }
    return 0;
}

void trk_outputs_frame(struct trk_outputs *o, const struct trk_frame_result *r)
{
    if (!o) return;
    if (o->pred) {
        for (int i = 0; i < o->n; i++) {
            const struct trk_output_ops *ops = o->out[i].ops;
            if (!ops->frame) continue;
            /* Each output's own moment: the ones before it took time. */
            const struct trk_frame_result *p = r;
            if (!ops->measured) {
                trk_frame_result_predict(o->pred, r, trk_now());
                p = o->pred;
            }
            trk_buf_reset(&o->msg);
            if (ops->json && trk_msg_frame(&o->msg, p)) continue;
            ops->frame(o->out[i].ctx, p, ops->json ? o->msg.data : NULL,
                       ops->json ? o->msg.len : 0);
        }
        return;
    }
    bool have_json = false;
    if (o->json) {
        trk_buf_reset(&o->msg);
        have_json = trk_msg_frame(&o->msg, r) == 0;
    }
    for (int i = 0; i < o->n; i++) {
        const struct trk_output_ops *ops = o->out[i].ops;
        if (!ops->frame || (ops->json && !have_json)) continue;
        ops->frame(o->out[i].ctx, r, ops->json ? o->msg.data : NULL, ops->json ? o->msg.len : 0);
    }
}

/* Calls the hook at member `hook` of every output that has it. */
#define EACH(o, hook, ...)                                                                         \
    do {                                                                                           \
        for (int i_ = 0; (o) && i_ < (o)->n; i_++)                                                 \
            if ((o)->out[i_].ops->hook) (o)->out[i_].ops->hook((o)->out[i_].ctx, __VA_ARGS__);     \
    } while (0)

void trk_outputs_status(struct trk_outputs *o, const struct trk_source_status *s)
{
    EACH(o, status, s);
}

void trk_outputs_objects(struct trk_outputs *o, const struct trk_objects *set)
{
    EACH(o, objects, set);
}

void trk_outputs_tally(struct trk_outputs *o, struct trk_outputs_tally *t)
{
    EACH(o, tally, t);
}

void trk_outputs_stats(struct trk_outputs *o, const struct trk_stats_info *st)
{
    EACH(o, stats, st);
}

void trk_outputs_flush(struct trk_outputs *o)
{
    for (int i = 0; o && i < o->n; i++)
        if (o->out[i].ops->flush) o->out[i].ops->flush(o->out[i].ctx);
}

int trk_outputs_destroy(struct trk_outputs **po)
{
    if (!po || !*po) return 0;
    struct trk_outputs *o = *po;
    int err = 0;
    for (int i = 0; i < o->n; i++) {
        int e = o->out[i].ops->close ? o->out[i].ops->close(o->out[i].ctx) : 0;
        if (e && !err) err = e;
    }
    trk_buf_free(&o->msg);
    free(o->pred);
    free(o);
    *po = NULL;
    return err;
}
