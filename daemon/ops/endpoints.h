/* The daemon's HTTP endpoints on the web server (protocol/ws.h's
 * http_handler): GET /metrics (Prometheus text 0.0.4), /healthz (200 "ok"
 * or 503 and the reason) and /snapshot.jpg (?overlay=1, ?mask=NAME). Who
 * may ask is the server's business (http_private_paths); see
 * protocol/PROTOCOL.md, "HTTP endpoints". */
#ifndef TRK_DAEMON_ENDPOINTS_H
#define TRK_DAEMON_ENDPOINTS_H

#include "metrics.h"
#include "snapshot.h"
#include "ws.h"

/* What the handler answers from; either may be NULL (then 503). */
struct trk_endpoints {
    struct trk_metrics *metrics;
    struct trk_snapshot *snapshot;
};

/* The paths for the main server, the ones of them that need the control
 * token (frames may be private), and those of a --metrics-listen server
 * (no frames there). NULL-terminated. */
extern const char *const trk_endpoint_paths[];
extern const char *const trk_endpoint_private_paths[];
extern const char *const trk_endpoint_metrics_paths[];

/* trk_ws_http_handler; user is a struct trk_endpoints that outlives the
 * server. */
void trk_endpoints_http(void *user, const char *path, const char *const *args, int n_args,
                        struct trk_ws_http_reply *reply);

#endif
