/* protocol/ logs through the one hook (base/log_hook.h), its own lines under
 * the tag "ws" and libwebsockets' under "lws", with real servers: a web root
 * that is not a directory (ws's warning), a second server on a taken port
 * (ws's error text), and lines libwebsockets itself logs once a server has
 * routed its log. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <libwebsockets.h>

#include "../check.h"
#include "log_hook.h"
#include "ws.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char seen[8192]; /* "level tag: line\n" for every captured line */

static void capture(enum trk_log_level level, const char *tag, const char *line)
{
    pthread_mutex_lock(&lock);
    size_t n = strlen(seen);
    snprintf(seen + n, sizeof(seen) - n, "%s %s: %s\n", trk_log_level_name(level), tag, line);
    pthread_mutex_unlock(&lock);
}

static bool saw(const char *text)
{
    pthread_mutex_lock(&lock);
    bool found = strstr(seen, text) != NULL;
    pthread_mutex_unlock(&lock);
    return found;
}

int main(void)
{
    trk_log_set_hook(capture, TRK_LOG_INFO);
    struct trk_ws *a = NULL, *b = NULL;
    struct trk_ws_cfg ca = { .address = "127.0.0.1", .web_root = "/nonexistent/trackd-web" };
    CHECK(trk_ws_create(&ca, &a) == 0 && trk_ws_start(a) == 0);
    CHECKF(saw("warn ws: web root /nonexistent/trackd-web is not a directory"), "%s", seen);

    struct trk_ws_cfg cb = { .address = "127.0.0.1", .port = a ? trk_ws_port(a) : 1 };
    CHECK(trk_ws_create(&cb, &b) == 0);
    CHECK(trk_ws_start(b) == -EADDRINUSE);
    /* libwebsockets' own logging (what it says on bind or TLS trouble). */
    lwsl_err("lws error %d\n", 1);
    lwsl_warn("lws warning %d\n", 2);
    CHECKF(saw("error lws: lws error 1\n") && saw("warn lws: lws warning 2\n"), "%s", seen);
    /* lws's trailing newline is gone: every captured line is one line. */
    CHECKF(!strstr(seen, "\n\n"), "%s", seen);
    fprintf(stderr, "captured:\n%s", seen);
    trk_ws_destroy(&b);
    trk_ws_destroy(&a);
    return check_exit("ws_log");
}
