#include "endpoints.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects.h" /* trk_objects_check_name */

const char *const trk_endpoint_paths[] = { "/metrics", "/healthz", "/snapshot.jpg", NULL };
/* Frames may show people and places: the snapshot needs the token wherever
 * editing does. Counts and the health verdict reveal little and are read by
 * scrapers and load balancers that hold no token. */
const char *const trk_endpoint_private_paths[] = { "/snapshot.jpg", NULL };
const char *const trk_endpoint_metrics_paths[] = { "/metrics", "/healthz", NULL };

static const char text_type[] = "text/plain; charset=utf-8";

/* Hands b's bytes to the reply (the server frees them). */
static void reply_buf(struct trk_ws_http_reply *r, int status, const char *type, struct trk_buf *b)
{
    if (b->failed) {
        trk_buf_free(b);
        return; /* status 0: the server answers 500 */
    }
    r->status = status;
    r->content_type = type;
    r->body = (unsigned char *)b->data;
    r->len = b->len;
    b->data = NULL;
}

static void reply_text(struct trk_ws_http_reply *r, int status, const char *text)
{
    struct trk_buf b = { 0 };
    trk_buf_puts(&b, text);
    trk_buf_puts(&b, "\n");
    reply_buf(r, status, text_type, &b);
}

/* "1", "true", "yes", "" (a bare ?overlay): on. */
static bool arg_on(const char *v)
{
    return v && (!*v || !strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes"));
}

/* Absent, on, or off ("0", "false"). */
static bool arg_valid(const char *v)
{
    return !v || arg_on(v) || !strcmp(v, "0") || !strcmp(v, "false");
}

/* A snapshot request's answer: the JPEG, or the status's code and why. */
static void reply_snapshot(struct trk_ws_http_reply *r, enum trk_snapshot_status st,
                           const uint8_t *jpeg, size_t len, const char *why)
{
    struct trk_buf b = { 0 };
    switch (st) {
    case TRK_SNAPSHOT_OK:
        trk_buf_append(&b, jpeg, len);
        reply_buf(r, 200, "image/jpeg", &b);
        return;
    case TRK_SNAPSHOT_NO_FRAME:
    case TRK_SNAPSHOT_BUSY: reply_text(r, 503, why); return;
    case TRK_SNAPSHOT_NO_OBJECT: reply_text(r, 404, why); return;
    case TRK_SNAPSHOT_BAD_SIZE: reply_text(r, 400, why); return;
    case TRK_SNAPSHOT_LIMITED: reply_text(r, 429, why); return;
    case TRK_SNAPSHOT_FAILED:
    case TRK_SNAPSHOT_LATER: break;
    }
    reply_text(r, 500, why);
}

/* trk_snapshot_answer_fn: a queued request's answer, from the encoder
 * thread, through the server (ctx). */
static void snapshot_later(void *ctx, uint64_t request, enum trk_snapshot_status st,
                           const uint8_t *jpeg, size_t len, const char *why)
{
    struct trk_ws_http_reply r = { 0 };
    reply_snapshot(&r, st, jpeg, len, why);
    if (!r.status) reply_text(&r, 500, "out of memory");
    trk_ws_http_answer(ctx, request, &r);
}

/* A pixel count 1..16384 in decimal digits, else -1. */
static int side(const char *v)
{
    long n = 0;
    for (const char *c = v; *c; c++) {
        if (*c < '0' || *c > '9' || n > 16384) return -1;
        n = n * 10 + (*c - '0');
    }
    return *v && n >= 1 && n <= 16384 ? (int)n : -1;
}

/* fit=carve with w=W and h=H: *w, *h (0 without fit); false with why. */
static bool carve_size(const char *const *args, int n_args, int *w, int *h, char *why,
                       size_t why_len)
{
    const char *fit = trk_ws_http_arg(args, n_args, "fit");
    const char *ws = trk_ws_http_arg(args, n_args, "w"), *hs = trk_ws_http_arg(args, n_args, "h");
    if (!fit && !ws && !hs) return true;
    if (!fit || strcmp(fit, "carve")) {
        snprintf(why, why_len, "%s", fit ? "fit must be carve" : "w and h need fit=carve");
        return false;
    }
    *w = ws ? side(ws) : -1;
    *h = hs ? side(hs) : -1;
    if (*w < 0 || *h < 0) {
        snprintf(why, why_len, "fit=carve needs w and h, whole numbers of pixels 1..16384");
        return false;
    }
    return true;
}

/* GET /snapshot.jpg?overlay=1&mask=NAME&edges=1&w=W&h=H&fit=carve: from the snapshot's cache now,
 * or later, when its encoder thread has the JPEG (the server's thread never encodes). */
static void snapshot(const struct trk_endpoints *e, const char *const *args, int n_args,
                     struct trk_ws_http_reply *r)
{
    char why[400];
    const char *overlay = trk_ws_http_arg(args, n_args, "overlay");
    const char *mask = trk_ws_http_arg(args, n_args, "mask");
    const char *edges = trk_ws_http_arg(args, n_args, "edges");
    if (!arg_valid(overlay) || !arg_valid(edges)) {
        reply_text(r, 400, !arg_valid(overlay) ? "overlay must be 1 or 0" : "edges must be 1 or 0");
        return;
    }
    if (mask && !*mask) {
        reply_text(r, 400, "mask needs an object name: ?mask=NAME");
        return;
    }
    /* No object has such a name, and the answer must not echo it: a body
     * of text/plain; charset=utf-8 holds UTF-8 only, and no controls. */
    if (mask && trk_objects_check_name("mask", mask, why, sizeof why)) {
        reply_text(r, 400, why);
        return;
    }
    int cw = 0, ch = 0;
    if (!carve_size(args, n_args, &cw, &ch, why, sizeof why)) {
        reply_text(r, 400, why);
        return;
    }
    struct trk_buf b = { 0 };
    struct trk_snapshot_req req = { .overlay = arg_on(overlay),
                                    .edges = arg_on(edges),
                                    .carve_w = cw,
                                    .carve_h = ch,
                                    .mask = mask,
                                    .peer = r->peer,
                                    .request = r->request,
                                    .answer = snapshot_later,
                                    .ctx = r->server };
    enum trk_snapshot_status st = trk_snapshot_request(e->snapshot, &req, &b, why, sizeof why);
    if (st == TRK_SNAPSHOT_LATER)
        r->status = TRK_WS_HTTP_LATER;
    else if (st == TRK_SNAPSHOT_OK)
        reply_buf(r, 200, "image/jpeg", &b);
    else
        reply_snapshot(r, st, NULL, 0, why);
    trk_buf_free(&b);
}

void trk_endpoints_http(void *user, const char *path, const char *const *args, int n_args,
                        struct trk_ws_http_reply *r)
{
    const struct trk_endpoints *e = user;
    char why[400];
    if (!strcmp(path, "/metrics") && e->metrics) {
        struct trk_buf b = { 0 };
        trk_metrics_render(e->metrics, &b);
        reply_buf(r, 200, "text/plain; version=0.0.4; charset=utf-8", &b);
    } else if (!strcmp(path, "/healthz")) {
        bool ok = trk_metrics_healthy(e->metrics, why, sizeof why);
        reply_text(r, ok ? 200 : 503, why);
    } else if (!strcmp(path, "/snapshot.jpg")) {
        snapshot(e, args, n_args, r);
    } else {
        reply_text(r, 404, "not found");
    }
}
