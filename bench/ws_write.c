/* trackd-ws-bench: what libwebsockets' write costs against a plain send()
 * of the same WebSocket frame on the same socket (issue 31, delivery).
 *
 *   trackd-ws-bench [--sizes 1024,16384,131072] [--messages 2000] [--warmup 100]
 *                   [--sndbuf BYTES] [--tx-packet BYTES]
 *
 * One lws server made as the daemon makes its own (protocol/ws.c: explicit
 * vhost, UTF-8 validation) on 127.0.0.1, one client thread on a blocking
 * socket that reads each frame whole and stamps its arrival. Messages go one
 * at a time (the next only once the client has the last, as frames do at
 * 60 fps), alternately by the two paths, from the server's writable
 * callback:
 *   lws   lws_write(wsi, payload, LWS_WRITE_TEXT): what the daemon does;
 *   send  the frame's header built here in front of the same payload, one
 *         send() on lws_get_socket_fd(wsi) (server frames are not masked).
 * Per path and size: the call's wall time and thread CPU time, and write ->
 * arrival at the client (the kernel's loopback and the client's wake-up),
 * p50/p99 in microseconds. --sndbuf sets SO_SNDBUF on the server's socket
 * (the kernel doubles it; 0, the default: the kernel's autotuning, which
 * starts at tcp_wmem's 16 KiB). The client checks every frame (opcode, length,
 * sequence, payload bytes), so a path that sent something else fails the
 * run (exit 1).
 */
#define _GNU_SOURCE
#include <libwebsockets.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ws_client.h"

enum { PATH_LWS, PATH_SEND, PATHS };
static const char *const path_name[PATHS] = { "lws_write", "send" };

struct run {
    size_t len;         /* payload bytes of every message */
    int total;          /* messages, warm-up included */
    unsigned char *buf; /* LWS_PRE + 14 + len: header room, payload */
    struct lws *wsi;
    int next;            /* the message the writable callback sends */
    atomic_int received; /* messages the client has read whole */
    atomic_int bad;      /* frames that were not what was sent */
    double *t_write;     /* per message: monotonic s at the call */
    double *call_us[PATHS], *cpu_us[PATHS], *arrive_us[PATHS];
    int n[PATHS];
    int warmup;
    int port;
    int tx_packet; /* the protocol's tx_packet_size, 0: lws's default */
    int sndbuf;    /* SO_SNDBUF on the server's socket, 0: the kernel's autotuning */
};

/* Message i's payload: its sequence number, then bytes derived from it (so
 * the client can check every byte), all printable (a text frame). */
static void fill_payload(unsigned char *p, size_t len, int i)
{
    for (size_t k = 0; k < len; k++)
        p[k] = (unsigned char)('a' + (unsigned)(k + (size_t)i * 7u) % 26u);
    unsigned v = (unsigned)i; /* the sequence, 8 decimal digits */
    for (size_t k = len < 8 ? len : 8; k-- > 0; v /= 10)
        p[k] = (unsigned char)('0' + v % 10);
}

/* The server frame's header for a final text frame of len bytes, written to
 * end right before payload p; returns its first byte. */
static unsigned char *frame_header(unsigned char *p, size_t len)
{
    unsigned char *h;
    if (len < 126) {
        h = p - 2;
        h[1] = (unsigned char)len;
    } else if (len < 65536) {
        h = p - 4;
        h[1] = 126;
        h[2] = (unsigned char)(len >> 8);
        h[3] = (unsigned char)len;
    } else {
        h = p - 10;
        h[1] = 127;
        for (int k = 0; k < 8; k++)
            h[2 + k] = (unsigned char)((uint64_t)len >> (56 - 8 * k));
    }
    h[0] = 0x81; /* FIN, text */
    return h;
}

static int write_one(struct run *r)
{
    int i = r->next++;
    int path = i % PATHS;
    unsigned char *payload = r->buf + LWS_PRE + 14;
    fill_payload(payload, r->len, i);
    double c0 = trk_wsc_thread_cpu(), t0 = trk_wsc_mono();
    r->t_write[i] = t0;
    int rc = 0;
    if (path == PATH_LWS) {
        /* lws writes its header into the LWS_PRE bytes before the payload. */
        int n = lws_write(r->wsi, payload, r->len, LWS_WRITE_TEXT);
        rc = n < (int)r->len ? -1 : 0;
    } else {
        unsigned char *h = frame_header(payload, r->len);
        rc = trk_wsc_send_all(lws_get_socket_fd(r->wsi), h, (size_t)(payload + r->len - h));
    }
    double t1 = trk_wsc_mono(), c1 = trk_wsc_thread_cpu();
    if (i >= r->warmup) {
        int k = r->n[path]++;
        r->call_us[path][k] = (t1 - t0) * 1e6;
        r->cpu_us[path][k] = (c1 - c0) * 1e6;
    }
    return rc;
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len)
{
    (void)user;
    (void)in;
    (void)len;
    struct run *r = lws_context_user(lws_get_context(wsi));
    switch (reason) {
    case LWS_CALLBACK_ESTABLISHED:
        r->wsi = wsi;
        if (r->sndbuf)
            setsockopt(lws_get_socket_fd(wsi), SOL_SOCKET, SO_SNDBUF, &r->sndbuf, sizeof r->sndbuf);
        break;
    case LWS_CALLBACK_SERVER_WRITEABLE:
        if (r->next < r->total && r->next == atomic_load(&r->received)) return write_one(r);
        break;
    case LWS_CALLBACK_CLOSED: r->wsi = NULL; break;
    default: break;
    }
    return 0;
}

/* ------------------------------------------------------------ the client */

/* Connects, upgrades, then reads r->total frames, checking each. */
static void *client_main(void *arg)
{
    struct run *r = arg;
    int fd = trk_wsc_connect(r->port, "/", 0);
    bool ok = fd >= 0;
    unsigned char *want = malloc(r->len), *have = malloc(r->len);
    for (int i = 0; ok && i < r->total; i++) {
        unsigned char head = 0;
        size_t len = 0;
        ok =
            trk_wsc_read_frame(fd, &head, have, r->len, &len) == 0 && head == 0x81 && len == r->len;
        double t = trk_wsc_mono();
        fill_payload(want, r->len, i);
        if (!ok || memcmp(want, have, r->len)) {
            fprintf(stderr, "trackd-ws-bench: message %d: header %02x, %zu bytes, %s\n", i, head,
                    len, ok ? "other bytes" : "not a whole text frame");
            ok = false;
            break;
        }
        int path = i % PATHS;
        if (i >= r->warmup) r->arrive_us[path][(i - r->warmup) / PATHS] = (t - r->t_write[i]) * 1e6;
        atomic_store(&r->received, i + 1);
    }
    if (!ok) atomic_store(&r->bad, 1);
    atomic_store(&r->received, r->total); /* done either way: the server stops */
    free(want);
    free(have);
    if (fd >= 0) close(fd);
    return NULL;
}

/* --------------------------------------------------------------- numbers */

/* One size: a server, a client, r->total messages. 0, or 1 when a frame was
 * wrong or the exchange stalled. */
static int run_size(size_t len, int messages, int warmup, int sndbuf, int tx_packet)
{
    struct run r = { .len = len, .warmup = warmup, .sndbuf = sndbuf, .tx_packet = tx_packet };
    r.total = warmup + messages;
    r.buf = calloc(LWS_PRE + 14 + len, 1);
    r.t_write = calloc((size_t)r.total, sizeof(double));
    for (int p = 0; p < PATHS; p++) {
        r.call_us[p] = calloc((size_t)messages, sizeof(double));
        r.cpu_us[p] = calloc((size_t)messages, sizeof(double));
        r.arrive_us[p] = calloc((size_t)messages, sizeof(double));
    }
    struct lws_protocols protocols[2] = {
        { .name = "trackd", .callback = callback, .tx_packet_size = (size_t)tx_packet }, { 0 }
    };
    struct lws_context_creation_info info = { 0 };
    info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS | LWS_SERVER_OPTION_VALIDATE_UTF8;
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.user = &r;
    info.gid = -1;
    info.uid = -1;
    struct lws_context *ctx = lws_create_context(&info);
    struct lws_context_creation_info vi = { 0 };
    vi.port = 0;
    vi.iface = "127.0.0.1";
    vi.protocols = protocols;
    struct lws_vhost *vh = ctx ? lws_create_vhost(ctx, &vi) : NULL;
    if (!vh) {
        fprintf(stderr, "trackd-ws-bench: cannot create the server\n");
        if (ctx) lws_context_destroy(ctx);
        return 1;
    }
    r.port = lws_get_vhost_listen_port(vh);
    pthread_t client;
    pthread_create(&client, NULL, client_main, &r);
    double deadline = trk_wsc_mono() + 60 + r.total * 0.01;
    while (atomic_load(&r.received) < r.total && trk_wsc_mono() < deadline) {
        if (r.wsi && r.next < r.total && r.next == atomic_load(&r.received))
            lws_callback_on_writable(r.wsi);
        lws_service(ctx, -1); /* no sleep: the client's progress is polled */
    }
    int stalled = atomic_load(&r.received) < r.total;
    if (stalled) atomic_store(&r.received, r.total);
    lws_context_destroy(ctx); /* closes the socket: the client ends */
    pthread_join(client, NULL);
    int rc = stalled || atomic_load(&r.bad);
    if (rc)
        fprintf(stderr, "trackd-ws-bench: %zu bytes: %s\n", len,
                stalled ? "the exchange stalled" : "a frame was not what was sent");
    for (int p = 0; p < PATHS; p++) {
        int n = r.n[p] < messages / PATHS ? r.n[p] : messages / PATHS;
        printf("%8zu %-10s %6d %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n", len, path_name[p], n,
               trk_wsc_pct(r.call_us[p], n, 0.5), trk_wsc_pct(r.call_us[p], n, 0.99),
               trk_wsc_pct(r.cpu_us[p], n, 0.5), trk_wsc_pct(r.cpu_us[p], n, 0.99),
               trk_wsc_pct(r.arrive_us[p], n, 0.5), trk_wsc_pct(r.arrive_us[p], n, 0.99));
        free(r.call_us[p]);
        free(r.cpu_us[p]);
        free(r.arrive_us[p]);
    }
    free(r.buf);
    free(r.t_write);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: trackd-ws-bench [--sizes 1024,16384,131072] [--messages N] "
               "[--warmup N] [--sndbuf BYTES] [--tx-packet BYTES]\n");
}

int main(int argc, char **argv)
{
    const char *sizes = "1024,16384,131072";
    int messages = 2000, warmup = 100, sndbuf = 0, tx_packet = 0;
    for (int i = 1; i < argc; i++) {
        bool has = i + 1 < argc;
        if (!strcmp(argv[i], "--sizes") && has)
            sizes = argv[++i];
        else if (!strcmp(argv[i], "--messages") && has)
            messages = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && has)
            warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sndbuf") && has)
            sndbuf = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tx-packet") && has)
            tx_packet = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (messages < 2 || warmup < 0 || messages > 10000000 || sndbuf < 0 || tx_packet < 0) {
        usage(stderr);
        return 2;
    }
    warmup += warmup % 2; /* both paths keep their turns after the warm-up */
    lws_set_log_level(LLL_ERR, NULL);
    printf("# trackd-ws-bench: microseconds; call = the write call (wall, thread CPU), arrive = "
           "call start -> the client has the frame\n");
    printf("%8s %-10s %6s %9s %9s %9s %9s %9s %9s\n", "bytes", "path", "n", "call_p50", "call_p99",
           "cpu_p50", "cpu_p99", "arrive_p50", "arrive_p99");
    int rc = 0;
    for (const char *s = sizes; *s;) {
        char *end;
        unsigned long len = strtoul(s, &end, 10);
        if (end == s || len == 0 || len > (64u << 20)) {
            usage(stderr);
            return 2;
        }
        rc |= run_size((size_t)len, messages, warmup, sndbuf, tx_packet);
        s = *end == ',' ? end + 1 : end;
    }
    return rc;
}
