/* Integration test of the WebSocket server with real clients.
 *
 * Starts trk_ws on 127.0.0.1, port 0, with a temporary web root, and a
 * broadcaster thread that publishes synthetic frame messages (seq increasing)
 * at --rate per second, real JPEG previews at rate/10 and 1 Hz stats. Then it
 * runs tests/integration/ws_client.py (Debian's python3 + python3-websockets)
 * against it:
 *   1. HTTP: GET / serves index.html; a missing file is 404.
 *   2. Protocol conformance: subprotocols, path rejection, error replies for
 *      malformed input with the connection kept open, ping/pong, subscribe,
 *      a control message answered through on_message + trk_ws_send_to.
 *   3. A fast client alone: schema, seq strictly increasing, results never
 *      pause (MAX_GAP_S), and every result it missed was dropped and counted
 *      by the server, none lost silently.
 *   4. The same fast client once a stalled client (subscribed, never reads,
 *      small receive buffer) has had messages dropped (proof that it really
 *      stalled): its results still never pause, and what it missed is
 *      counted. Rates are printed, not compared: they depend on the load.
 * Also: binding a taken port fails with -EADDRINUSE, an address the host
 * does not have with -EADDRNOTAVAIL (both with a message naming it), and
 * trk_ws_is_loopback goes by the resolved addresses.
 *
 * Usage: ws_harness --client PATH/ws_client.py [--python /usr/bin/python3]
 *                   [--rate 300] [--duration 3] [--serve SECONDS]
 * --serve only runs the server for manual experiments and prints the port.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <turbojpeg.h>

#include "messages.h"
#include "ws.h"

extern char **environ;

#include "../check.h"

#define N_OBJ   3
#define FRAME_W 1280
#define FRAME_H 720
#define PREV_W  320
#define PREV_H  180
#define N_JPEG  4

struct bcast {
    struct trk_ws *ws;
    double rate;
    atomic_bool quit;
    atomic_uint_fast64_t published;
    struct trk_object_def defs[N_OBJ];
    unsigned char *jpeg[N_JPEG];
    unsigned long jpeg_len[N_JPEG];
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_s(double s)
{
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

/* Noisy pictures compress badly: ~30-60 KB each, so a reader that stops
 * reading fills its socket buffers within a second. */
static int make_jpegs(struct bcast *b)
{
    tjhandle tj = tjInitCompress();
    if (!tj) return -1;
    unsigned char *rgb = malloc(PREV_W * PREV_H * 3);
    uint64_t s = 12345;
    for (int k = 0; k < N_JPEG; k++) {
        for (int i = 0; i < PREV_W * PREV_H * 3; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            rgb[i] = (unsigned char)((s >> 56) / 2 + (i % (PREV_W * 3)) / 8 + k * 20);
        }
        if (tjCompress2(tj, rgb, PREV_W, 0, PREV_H, TJPF_RGB, &b->jpeg[k], &b->jpeg_len[k],
                        TJSAMP_420, 90, 0)) {
            free(rgb);
            tjDestroy(tj);
            return -1;
        }
    }
    free(rgb);
    tjDestroy(tj);
    return 0;
}

static void *broadcaster(void *arg)
{
    struct bcast *b = arg;
    struct trk_buf msg = { 0 };
    struct trk_obj_result res[N_OBJ];
    unsigned char *prev = malloc(TRK_PREVIEW_HDR + 200000);
    double period = 1.0 / b->rate, t0 = now_s(), next = t0, next_stats = t0 + 1;
    uint64_t seq = 1000; /* not starting at 0: clients must not assume it */
    while (!atomic_load(&b->quit)) {
        seq++;
        double t = now_s();
        /* Object 0 circles, object 1 sits still, object 2 is never seen. */
        double a = (double)seq * 0.01;
        int cx = 640 + (int)(300 * cos(a)), cy = 360 + (int)(200 * sin(a));
        res[0] = (struct trk_obj_result){ .mass = 441,
                                          .sum_x = (uint64_t)cx * 441,
                                          .sum_y = (uint64_t)cy * 441,
                                          .x0 = cx - 10,
                                          .y0 = cy - 10,
                                          .x1 = cx + 10,
                                          .y1 = cy + 10 };
        res[1] = (struct trk_obj_result){
            .mass = 5, .sum_x = 15, .sum_y = 25, .x0 = 1, .y0 = 3, .x1 = 5, .y1 = 7
        };
        res[2] = (struct trk_obj_result){ .mass = 0, .x0 = -1, .y0 = -1, .x1 = -1, .y1 = -1 };
        struct trk_frame_meta m = {
            .seq = seq,
            .pts = (double)(seq - 1000) / b->rate,
            .width = FRAME_W,
            .height = FRAME_H,
            .t_capture = t,
            .wall_ms = wall_ms(),
            .queue_ms = 0.1,
            .upload_ms = 0,
            .kernel_ms = 0.5,
            .process_ms = 0.7,
            .backend = "cpu",
        };
        /* Every other result announced, as the pipeline does at a frame's
         * start (--spin): delivered alike whether the service thread
         * polled for it or slept. */
        if (seq % 2) CHECKF(trk_ws_expect(b->ws, 2e-3) == 0, "expect");
        trk_buf_reset(&msg);
        static struct trk_frame_result r; /* this thread's */
        if (trk_frame_result_fill(&r, &m, b->defs, N_OBJ, res, NULL, NULL, NULL) == 0 &&
            trk_msg_frame(&msg, &r) == 0)
            trk_ws_broadcast(b->ws, TRK_WS_RESULT, msg.data, msg.len);
        atomic_fetch_add(&b->published, 1);
        if (prev && seq % 10 == 0) {
            int k = (int)(seq / 10 % N_JPEG);
            trk_msg_preview_header(prev, seq, PREV_W, PREV_H, FRAME_W, FRAME_H);
            memcpy(prev + TRK_PREVIEW_HDR, b->jpeg[k], b->jpeg_len[k]);
            trk_ws_broadcast(b->ws, TRK_WS_PREVIEW, prev, TRK_PREVIEW_HDR + b->jpeg_len[k]);
        }
        if (t >= next_stats) {
            struct trk_ws_stats ws;
            trk_ws_get_stats(b->ws, &ws);
            struct trk_stats_info st = {
                .uptime_s = t - t0,
                .fps = b->rate,
                .frames = seq - 1000,
                .clients = ws.clients,
                .rss_kb = -1,
                .queue_ms = 0.1,
                .upload_ms = 0,
                .kernel_ms = 0.5,
                .process_ms = 0.7,
                .send_ms = -1,
                .total_ms = -1,
                .ws_sent = ws.messages_sent,
                .ws_dropped = ws.messages_dropped,
                .ws_bytes = ws.bytes_sent,
            };
            trk_buf_reset(&msg);
            if (trk_msg_stats(&msg, &st) == 0)
                trk_ws_broadcast(b->ws, TRK_WS_STATS, msg.data, msg.len);
            next_stats += 1;
        }
        next += period;
        double wait = next - now_s();
        if (wait > 0)
            sleep_s(wait);
        else if (wait < -0.5)
            next = now_s(); /* fell far behind (loaded machine): do not burst */
    }
    free(prev);
    trk_buf_free(&msg);
    return NULL;
}

/* The daemon's role for control messages: answer "sample" with an ack that
 * echoes the request id, from the service thread via trk_ws_send_to. */
static void on_message(void *user, uint64_t client, const char *json, size_t len)
{
    struct trk_ws *ws = *(struct trk_ws **)user;
    char id[TRK_MSG_ID_MAX * 6 + 3];
    trk_msg_request_id(json, len, id, sizeof id);
    struct trk_buf b = { 0 };
    if (trk_msg_ack(&b, "sample", id, true) == 0 && trk_buf_puts(&b, ",\"rgb\":[1,2,3]}") == 0)
        trk_ws_send_to(ws, client, b.data, b.len);
    trk_buf_free(&b);
}

/* Runs the client with args; returns its pid (wait with finish()). */
static pid_t spawn_client(const char *python, const char *client, const char *url,
                          const char *const *extra)
{
    const char *argv[24];
    int n = 0;
    argv[n++] = python;
    argv[n++] = client;
    argv[n++] = "--url";
    argv[n++] = url;
    for (; extra && *extra && n < 23; extra++)
        argv[n++] = *extra;
    argv[n] = NULL;
    pid_t pid;
    int rc = posix_spawn(&pid, python, NULL, NULL, (char *const *)argv, environ);
    if (rc) {
        fprintf(stderr, "cannot run %s: %s\n", python, strerror(rc));
        return -1;
    }
    return pid;
}

static int finish(pid_t pid)
{
    int st;
    if (pid < 0) return -1;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int run_client(const char *python, const char *client, const char *url,
                      const char *const *extra)
{
    return finish(spawn_client(python, client, url, extra));
}

/* Longest pause allowed between two results to a client: nominally 1/rate;
 * a server that blocked on a stalled client would stop them altogether.
 * Generous for a loaded 2-core CI machine (tests/loaded.sh). */
#define MAX_GAP_S 1.0
/* How long the stalled client may take to have messages dropped. */
#define STALL_WAIT_S 30.0

struct report {
    double rate, max_gap;
    long results, span, missing;
};

static int read_report(const char *path, struct report *r)
{
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    if (!j) {
        fprintf(stderr, "cannot read %s: %s\n", path, e.text);
        return -1;
    }
    r->rate = json_number_value(json_object_get(j, "rate_hz"));
    json_t *gap = json_object_get(j, "max_gap_s");
    r->max_gap = json_is_number(gap) ? json_number_value(gap) : INFINITY;
    r->results = (long)json_integer_value(json_object_get(j, "results"));
    r->span = (long)json_integer_value(json_object_get(j, "seq_span"));
    r->missing = (long)json_integer_value(json_object_get(j, "seq_missing"));
    json_decref(j);
    return 0;
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void remove_dir(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

int main(int argc, char **argv)
{
    const char *python = "/usr/bin/python3", *client = NULL;
    double rate = 300, duration = 3, serve = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--client") && i + 1 < argc)
            client = argv[++i];
        else if (!strcmp(argv[i], "--python") && i + 1 < argc)
            python = argv[++i];
        else if (!strcmp(argv[i], "--rate") && i + 1 < argc)
            rate = atof(argv[++i]);
        else if (!strcmp(argv[i], "--duration") && i + 1 < argc)
            duration = atof(argv[++i]);
        else if (!strcmp(argv[i], "--serve") && i + 1 < argc)
            serve = atof(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: %s --client ws_client.py [--python P] [--rate HZ] "
                    "[--duration S] [--serve S]\n",
                    argv[0]);
            return 2;
        }
    }
    if (!client && serve <= 0) {
        fprintf(stderr, "--client is required\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);

    char root[] = "/tmp/trk_ws_harness_XXXXXX";
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 2;
    }
    write_file(root, "index.html",
               "<!doctype html><html><head><title>trackd</title></head>"
               "<body>trackd-harness-index</body></html>\n");
    write_file(root, "app.js", "console.log('trackd');\n");

    static struct bcast b;
    b.rate = rate;
    CHECKF(make_jpegs(&b) == 0, "JPEG encoding failed");
    const char *names[N_OBJ] = { "red", "quote\"back\\slash\ttab", "gr\xc3\xbcn" };
    for (int i = 0; i < N_OBJ; i++) {
        snprintf(b.defs[i].name, sizeof b.defs[i].name, "%s", names[i]);
        b.defs[i].space = i == 0 ? TRK_SPACE_HSV : TRK_SPACE_RGB;
        b.defs[i].lo[0] = i == 0 ? 346 : 10;
        b.defs[i].hi[0] = i == 0 ? 14 : 200;
        for (int c = 1; c < 3; c++) {
            b.defs[i].lo[c] = 50;
            b.defs[i].hi[c] = 255;
        }
        b.defs[i].min_mass = i == 1 ? 30 : 1; /* object 1 (mass 5) is not found */
    }

    static struct trk_ws *ws;
    struct trk_ws_cfg cfg = {
        .address = "127.0.0.1",
        .port = 0,
        .web_root = root,
        .queue_len = 8,
        .on_message = on_message,
        .user = &ws,
    };
    if (trk_ws_create(&cfg, &ws) || trk_ws_start(ws)) {
        fprintf(stderr, "FAIL: cannot start the server\n");
        remove_dir(root);
        return 1;
    }
    int port = trk_ws_port(ws);
    CHECKF(port > 0, "port %d", port);

    /* A second server on the same port must fail cleanly. */
    struct trk_ws *ws2 = NULL;
    struct trk_ws_cfg cfg2 = cfg;
    cfg2.port = port;
    CHECKF(trk_ws_create(&cfg2, &ws2) == 0, "create 2");
    int rc2 = trk_ws_start(ws2);
    CHECKF(rc2 == -EADDRINUSE, "second bind on %d returned %d, expected -EADDRINUSE", port, rc2);
    CHECKF(strstr(trk_ws_error(ws2), "in use"), "port taken: %s", trk_ws_error(ws2));
    trk_ws_destroy(&ws2);
    trk_ws_destroy(&ws2); /* safe twice */

    /* An address this host does not have fails at start, saying so, rather
     * than running without a listener (what libwebsockets alone does). */
    cfg2.address = "192.0.2.1"; /* TEST-NET-1: never assigned */
    cfg2.port = 0;
    CHECKF(trk_ws_create(&cfg2, &ws2) == 0, "create 3");
    rc2 = trk_ws_start(ws2);
    CHECKF(rc2 == -EADDRNOTAVAIL && strstr(trk_ws_error(ws2), "192.0.2.1"),
           "foreign address: %d, %s", rc2, trk_ws_error(ws2));
    trk_ws_destroy(&ws2);

    /* Loopback is decided on the addresses, not the spelling. */
    CHECKF(trk_ws_is_loopback("127.0.0.1") && trk_ws_is_loopback("127.1.2.3") &&
               trk_ws_is_loopback("::1") && trk_ws_is_loopback("::ffff:127.0.0.1") &&
               trk_ws_is_loopback("localhost"),
           "loopback addresses");
    CHECKF(!trk_ws_is_loopback("0.0.0.0") && !trk_ws_is_loopback("::") &&
               !trk_ws_is_loopback("192.0.2.1") && !trk_ws_is_loopback("127.example.invalid") &&
               !trk_ws_is_loopback("") && !trk_ws_is_loopback(NULL),
           "not loopback");

    struct trk_buf hb = { 0 };
    struct trk_hello_info hi = {
        .version = "test",
        .backend = "cpu",
        .source = "ws_harness synthetic frames",
        .width = FRAME_W,
        .height = FRAME_H,
        .fps = rate,
        .preview = { .enabled = true,
                     .width = PREV_W,
                     .height = PREV_H,
                     .fps = rate / 10,
                     .quality = 90 },
        .defs = b.defs,
        .n_objects = N_OBJ,
    };
    CHECKF(trk_msg_hello(&hb, &hi) == 0, "hello");
    trk_ws_set_hello(ws, hb.data);
    trk_buf_free(&hb);
    struct trk_buf sb = { 0 };
    trk_msg_status(&sb, "ok", "synthetic source running");
    trk_ws_broadcast(ws, TRK_WS_STATUS, sb.data, sb.len);
    trk_buf_free(&sb);

    b.ws = ws;
    pthread_t th;
    pthread_create(&th, NULL, broadcaster, &b);

    char url[128];
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/ws", port);
    printf("serving %s (web root %s)\n", url, root);
    fflush(stdout);

    if (serve > 0) {
        sleep_s(serve);
    } else {
        /* 1. HTTP */
        const char *http[] = { "--http-check", "--expect-text", "trackd-harness-index", NULL };
        CHECKF(run_client(python, client, url, http) == 0, "http check");

        /* 2. protocol conformance */
        const char *proto[] = { "--protocol-tests", "--expect-previews", NULL };
        CHECKF(run_client(python, client, url, proto) == 0, "protocol tests");

        char dur[32], rep_a[600], rep_b[600];
        snprintf(dur, sizeof dur, "%g", duration);
        snprintf(rep_a, sizeof rep_a, "%s/alone.json", root);
        snprintf(rep_b, sizeof rep_b, "%s/with_stall.json", root);
        struct trk_ws_stats st0, st1, st2, st3;

        /* 3. fast client alone */
        uint64_t pub0 = atomic_load(&b.published);
        trk_ws_get_stats(ws, &st0);
        const char *fast_a[] = {
            "--duration", dur, "--check-schema", "--json-report", rep_a, NULL
        };
        CHECKF(run_client(python, client, url, fast_a) == 0, "fast client alone");
        trk_ws_get_stats(ws, &st1);
        /* Each result written to a client left its hand-off -> write delay. */
        static float delays[TRK_WS_WRITE_SAMPLES];
        uint64_t mark = 0;
        int nd = trk_ws_write_delays(ws, &mark, delays, TRK_WS_WRITE_SAMPLES);
        bool nonneg = true;
        for (int i = 0; i < nd; i++)
            nonneg &= delays[i] >= 0;
        CHECKF(nd > 0 && mark >= (uint64_t)nd && nonneg,
               "write delays: %d kept of %llu, all >= 0: %d", nd, (unsigned long long)mark, nonneg);
        uint64_t pub1 = atomic_load(&b.published);

        /* 4. with a stalled client, once the server drops messages for it */
        char stall_dur[32];
        snprintf(stall_dur, sizeof stall_dur, "%g", STALL_WAIT_S + duration + 5);
        const char *stall[] = { "--stall", "--duration", stall_dur, NULL };
        pid_t stalled = spawn_client(python, client, url, stall);
        double stall_until = now_s() + STALL_WAIT_S;
        bool stalled_drops = false;
        while (!stalled_drops && now_s() < stall_until) {
            struct trk_ws_client_stats sc[4];
            int n = trk_ws_get_clients(ws, sc, 4);
            stalled_drops = n == 1 && sc[0].messages_dropped > 0;
            sleep_s(0.05);
        }
        CHECKF(stalled_drops, "the stalled client had nothing dropped in %g s: it did not stall",
               STALL_WAIT_S);
        trk_ws_get_stats(ws, &st2);
        const char *fast_b[] = {
            "--duration", dur, "--check-schema", "--json-report", rep_b, NULL
        };
        CHECKF(run_client(python, client, url, fast_b) == 0, "fast client with a stalled one");
        trk_ws_get_stats(ws, &st3);
        /* The stalled client is the only one left now. */
        struct trk_ws_client_stats cs[4];
        int nc = trk_ws_get_clients(ws, cs, 4);
        CHECKF(nc == 1, "%d clients connected, expected the stalled one", nc);
        if (nc >= 1) {
            printf("stalled client %llu: %llu sent, %llu dropped, %llu bytes\n",
                   (unsigned long long)cs[0].id, (unsigned long long)cs[0].messages_sent,
                   (unsigned long long)cs[0].messages_dropped,
                   (unsigned long long)cs[0].bytes_sent);
            CHECKF(cs[0].messages_dropped > 0,
                   "the stalled client had nothing dropped: it did not stall");
        }
        /* It was to stall for longer than the wait could take: end it. */
        if (stalled > 0) kill(stalled, SIGTERM);
        CHECKF(finish(stalled) == 128 + SIGTERM, "stall client ended by SIGTERM");

        struct report a = { 0 }, w = { 0 };
        if (read_report(rep_a, &a) == 0 && read_report(rep_b, &w) == 0) {
            CHECKF(mark >= (uint64_t)a.results, "%llu write delays for %ld results received",
                   (unsigned long long)mark, a.results);
            printf("alone: %ld results, %.1f/s, %ld missing; with stall: %ld results, %.1f/s, "
                   "%ld missing; published %llu in the first window\n",
                   a.results, a.rate, a.missing, w.results, w.rate, w.missing,
                   (unsigned long long)(pub1 - pub0));
            /* Results flowed without a pause, alone and beside the stalled
             * client (a busy reader may miss results, never stop getting
             * them). */
            CHECKF(a.results >= 2 && a.max_gap < MAX_GAP_S, "alone: %ld results, gap %.3f s",
                   a.results, a.max_gap);
            CHECKF(w.results >= 2 && w.max_gap < MAX_GAP_S, "with stall: %ld results, gap %.3f s",
                   w.results, w.max_gap);
            /* Every result a client missed (seq counts publishes) was dropped
             * and counted by the server, whatever the load. */
            uint64_t drop_a = st1.messages_dropped - st0.messages_dropped;
            uint64_t drop_w = st3.messages_dropped - st2.messages_dropped;
            printf("server drops: %llu in the alone window, %llu with the stall\n",
                   (unsigned long long)drop_a, (unsigned long long)drop_w);
            CHECKF((uint64_t)a.missing <= drop_a, "alone: %ld missing, %llu dropped", a.missing,
                   (unsigned long long)drop_a);
            CHECKF((uint64_t)w.missing <= drop_w, "with stall: %ld missing, %llu dropped",
                   w.missing, (unsigned long long)drop_w);
        } else {
            CHECKF(0, "missing client reports");
        }
    }

    if (serve <= 0) {
        /* 5. A bare server: every interface, default queue, no web root, no
         * control handler: control messages get "unsupported", the rest of
         * the protocol works the same. */
        struct trk_ws *bare = NULL;
        struct trk_ws_cfg bc = { .address = NULL, .port = 0 };
        CHECKF(trk_ws_create(&bc, &bare) == 0 && trk_ws_start(bare) == 0, "bare server");
        struct trk_hello_info bh = { .version = "bare", .backend = "none" };
        struct trk_buf bb = { 0 };
        if (trk_msg_hello(&bb, &bh) == 0) trk_ws_set_hello(bare, bb.data);
        trk_buf_free(&bb);
        if (bare) {
            char burl[128];
            snprintf(burl, sizeof burl, "ws://127.0.0.1:%d/ws", trk_ws_port(bare));
            const char *proto[] = { "--protocol-tests", "--expect-control-error", "unsupported",
                                    NULL };
            CHECKF(run_client(python, client, burl, proto) == 0, "protocol tests, bare server");
            /* Destroying a server with a client still connected and messages
             * queued for it must release everything (sanitizer builds check
             * for leaks). */
            const char *stall[] = { "--stall", "--duration", "3", NULL };
            pid_t stalled = spawn_client(python, client, burl, stall);
            struct trk_ws_client_stats cs;
            for (int i = 0; i < 100 && trk_ws_get_clients(bare, &cs, 1) < 1; i++)
                sleep_s(0.05);
            CHECKF(trk_ws_get_clients(bare, &cs, 1) == 1, "stalled client on the bare server");
            struct trk_buf fb = { 0 };
            struct trk_frame_meta fm = { .seq = 1, .width = 4, .height = 4 };
            struct trk_frame_result fr = { .meta = fm };
            trk_msg_frame(&fb, &fr);
            for (int i = 0; i < 2000; i++)
                CHECKF(trk_ws_broadcast(bare, TRK_WS_RESULT, fb.data, fb.len) == 0, "bcast");
            trk_buf_free(&fb);
            sleep_s(0.3);
            trk_ws_destroy(&bare);
            CHECKF(finish(stalled) == 0, "stall client after the server went away");
        }
        trk_ws_destroy(&bare);
    }

    atomic_store(&b.quit, true);
    pthread_join(th, NULL);
    struct trk_ws_stats st;
    trk_ws_get_stats(ws, &st);
    printf("server: %llu sent, %llu dropped, %llu bytes, %d clients at the end\n",
           (unsigned long long)st.messages_sent, (unsigned long long)st.messages_dropped,
           (unsigned long long)st.bytes_sent, st.clients);
    CHECKF(st.messages_sent > 0, "nothing sent");
    trk_ws_stop(ws);
    trk_ws_stop(ws); /* safe twice */
    trk_ws_destroy(&ws);
    trk_ws_destroy(&ws);
    for (int k = 0; k < N_JPEG; k++)
        tjFree(b.jpeg[k]);
    remove_dir(root);
    if (check_failures)
        fprintf(stderr, "%d check(s) failed\n", check_failures);
    else
        printf("ws_harness: all checks passed\n");
    return check_failures ? 1 : 0;
}
