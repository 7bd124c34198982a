/* trackd-ws-handoff: the WebSocket server's share of capture -> client
 * (issue 31, delivery), on the daemon's own server (protocol/ws.h).
 *
 *   trackd-ws-handoff [--frames 600] [--warmup 60] [--hz 60] [--bytes 1500]
 *                     [--process-us 200] [--spin off,on] [--clients 1]
 *                     [--rcvbuf BYTES]
 *
 * This thread plays the processing thread: at --hz it "processes" a frame
 * (a busy --process-us, as the CUDA wait polls; with spin on it first calls
 * trk_ws_expect as the pipeline does with --spin), then publishes a result
 * of --bytes with trk_ws_broadcast. --clients client threads (ws_client.h:
 * blocking sockets, each frame read whole; --rcvbuf: their SO_RCVBUF, small
 * ones make the server's writes partial) stamp each result's arrival.
 * Per --spin mode, p50/p99 in microseconds of:
 *   publish  the trk_ws_broadcast call (what the processing thread pays);
 *   wake     broadcast -> the service thread took it from the hand-off;
 *   wait     -> a client's write began (fan-out, earlier clients, and the
 *            poll round that reports the socket writable);
 *   call     -> the write call returned (lws_write: the kernel's send);
 *   write    wake + wait + call (the daemon's stats ws.write_ms);
 *   arrive   broadcast -> the client has the whole message.
 * The parts come from trk_ws_write_splits (every client's write). Each
 * client checks every message (a text frame, results in order, its bytes);
 * a wrong one fails the run (exit 1). Results a client missed (the server
 * drops the oldest for a slow client) are counted, not failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ws.h"
#include "ws_client.h"

#define MAX_CLIENTS 16

struct opts {
    int frames, warmup, hz, bytes, process_us, clients, rcvbuf;
};

struct client {
    pthread_t thread;
    int port, total, bytes, rcvbuf;
    atomic_bool ready, done;
    bool bad;
    int missed;
    double *arrive_us; /* per result seq; < 0: not received */
};

/* Result seq's message: its sequence and publish time, padded to bytes
 * with printable characters (a text frame of valid JSON). */
static size_t make_result(char *buf, int bytes, int seq, double t_pub)
{
    int n = snprintf(buf, (size_t)bytes + 1,
                     "{\"type\":\"frame\",\"seq\":%d,\"t_pub\":%.9f,\"pad\":\"", seq, t_pub);
    for (; n < bytes - 2; n++)
        buf[n] = (char)('a' + (n + seq) % 26);
    buf[n++] = '"';
    buf[n++] = '}';
    return (size_t)n;
}

/* Reads results until the last one (or the connection ends): each must be
 * the text frame make_result made for its seq, seqs increasing. */
static void *client_main(void *arg)
{
    struct client *c = arg;
    int fd = trk_wsc_connect(c->port, "/ws", c->rcvbuf);
    atomic_store(&c->ready, true);
    size_t cap = (size_t)c->bytes + 64;
    unsigned char *buf = malloc(cap + 1);
    char *want = malloc(cap + 1);
    int last = -1;
    c->bad = fd < 0 || !buf || !want;
    while (!c->bad && last < c->total - 1) {
        unsigned char head;
        size_t len;
        if (trk_wsc_read_frame(fd, &head, buf, cap, &len)) {
            c->bad = true;
            break;
        }
        double t = trk_wsc_mono();
        buf[len] = '\0';
        int seq;
        double t_pub;
        if (head != 0x81 ||
            sscanf((char *)buf, "{\"type\":\"frame\",\"seq\":%d,\"t_pub\":%lf", &seq, &t_pub) !=
                2 ||
            seq <= last || seq >= c->total || make_result(want, c->bytes, seq, t_pub) != len ||
            memcmp(want, buf, len)) {
            fprintf(stderr,
                    "trackd-ws-handoff: after result %d: an unexpected message (%zu bytes)\n", last,
                    len);
            c->bad = true;
            break;
        }
        c->missed += seq - last - 1;
        c->arrive_us[seq] = (t - t_pub) * 1e6;
        last = seq;
    }
    free(buf);
    free(want);
    if (fd >= 0) close(fd);
    atomic_store(&c->done, true);
    return NULL;
}

static void sleep_until(double t)
{
    struct timespec ts = { .tv_sec = (time_t)t, .tv_nsec = (long)((t - (double)(time_t)t) * 1e9) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* Growing arrays of the measured values, microseconds. */
struct series {
    double *v;
    int n;
};

static void add(struct series *s, double us)
{
    s->v[s->n++] = us;
}

static void print_pair(struct series *s)
{
    printf(" %8.1f %8.1f", trk_wsc_pct(s->v, s->n, 0.5), trk_wsc_pct(s->v, s->n, 0.99));
}

enum { PUBLISH, WAKE, WAIT, CALL, WRITE, ARRIVE, SERIES };

/* Collects the server's write splits since *mark into the series. */
static void take_splits(struct trk_ws *ws, uint64_t *mark, struct series *s, int room)
{
    static struct trk_ws_write_split sp[TRK_WS_WRITE_SAMPLES];
    int n = trk_ws_write_splits(ws, mark, sp, TRK_WS_WRITE_SAMPLES);
    for (int i = 0; i < n && s[WAKE].n < room; i++) {
        add(&s[WAKE], sp[i].wake_ms * 1e3);
        add(&s[WAIT], sp[i].wait_ms * 1e3);
        add(&s[CALL], sp[i].call_ms * 1e3);
        add(&s[WRITE], (sp[i].wake_ms + sp[i].wait_ms + sp[i].call_ms) * 1e3);
    }
}

/* One run with spin on or off: a server, the clients, the frames. 0, or 1
 * when a client saw a wrong message or the run could not be set up. */
static int run_mode(const struct opts *o, bool spin)
{
    struct trk_ws_cfg cfg = { .address = "127.0.0.1", .port = 0 };
    struct trk_ws *ws = NULL;
    if (trk_ws_create(&cfg, &ws) || trk_ws_start(ws)) {
        fprintf(stderr, "trackd-ws-handoff: cannot start the server: %s\n", trk_ws_error(ws));
        trk_ws_destroy(&ws);
        return 1;
    }
    int total = o->warmup + o->frames, room = o->frames * o->clients;
    struct client cl[MAX_CLIENTS];
    memset(cl, 0, sizeof cl);
    for (int k = 0; k < o->clients; k++) {
        cl[k] = (struct client){
            .port = trk_ws_port(ws), .total = total, .bytes = o->bytes, .rcvbuf = o->rcvbuf
        };
        cl[k].arrive_us = malloc((size_t)total * sizeof(double));
        for (int i = 0; i < total; i++)
            cl[k].arrive_us[i] = -1;
        pthread_create(&cl[k].thread, NULL, client_main, &cl[k]);
    }
    /* Every client connected (bounded: 10 s). */
    struct trk_ws_stats st;
    double until = trk_wsc_mono() + 10;
    do {
        usleep(2000);
        trk_ws_get_stats(ws, &st);
    } while (st.clients < o->clients && trk_wsc_mono() < until);

    struct series s[SERIES];
    for (int k = 0; k < SERIES; k++)
        s[k] = (struct series){ calloc((size_t)room + 1, sizeof(double)), 0 };
    char *msg = malloc((size_t)o->bytes + 1);
    uint64_t mark = 0;
    double period = 1.0 / o->hz, process = o->process_us * 1e-6, t0 = trk_wsc_mono() + 0.05;
    for (int i = 0; i < total && st.clients == o->clients; i++) {
        sleep_until(t0 + i * period);
        /* The last frame's writes are long done: their splits are read
         * outside the timed part (the warm-up's dropped). */
        take_splits(ws, &mark, s, i > o->warmup ? room : 0);
        if (spin) trk_ws_expect(ws, process * 1.5 + 0.3e-3);
        double busy = trk_wsc_mono() + process;
        while (trk_wsc_mono() < busy)
            ;
        double t_pub = trk_wsc_mono();
        size_t len = make_result(msg, o->bytes, i, t_pub);
        trk_ws_broadcast(ws, TRK_WS_RESULT, msg, len);
        if (i >= o->warmup) add(&s[PUBLISH], (trk_wsc_mono() - t_pub) * 1e6);
    }
    /* The clients end with the last result (bounded: 5 s). */
    until = trk_wsc_mono() + 5;
    for (int k = 0; k < o->clients; k++)
        while (!atomic_load(&cl[k].done) && trk_wsc_mono() < until)
            usleep(2000);
    take_splits(ws, &mark, s, room);
    trk_ws_stop(ws); /* a client still reading sees the connection end */
    int rc = st.clients < o->clients, missed = 0;
    for (int k = 0; k < o->clients; k++) {
        pthread_join(cl[k].thread, NULL);
        rc |= cl[k].bad;
        missed += cl[k].missed;
        for (int i = o->warmup; i < total; i++)
            if (cl[k].arrive_us[i] >= 0) add(&s[ARRIVE], cl[k].arrive_us[i]);
        free(cl[k].arrive_us);
    }
    printf("%-5s %7d %6d %6d", spin ? "on" : "off", o->clients, o->frames, missed);
    for (int k = 0; k < SERIES; k++) {
        print_pair(&s[k]);
        free(s[k].v);
    }
    printf("\n");
    fflush(stdout);
    free(msg);
    trk_ws_destroy(&ws);
    if (rc) fprintf(stderr, "trackd-ws-handoff: spin %s: a client failed\n", spin ? "on" : "off");
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: trackd-ws-handoff [--frames N] [--warmup N] [--hz N] [--bytes N] "
               "[--process-us N] [--spin off,on] [--clients N] [--rcvbuf BYTES]\n");
}

static bool int_arg(const char *s, int lo, int hi, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi) return false;
    *out = (int)v;
    return true;
}

int main(int argc, char **argv)
{
    struct opts o = {
        .frames = 600, .warmup = 60, .hz = 60, .bytes = 1500, .process_us = 200, .clients = 1
    };
    const char *spins = "off,on";
    for (int i = 1; i < argc; i++) {
        bool has = i + 1 < argc, ok = true;
        if (!strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--spin") && has)
            spins = argv[++i];
        else if (!strcmp(argv[i], "--frames") && has)
            ok = int_arg(argv[++i], 2, 100000, &o.frames);
        else if (!strcmp(argv[i], "--warmup") && has)
            ok = int_arg(argv[++i], 0, 100000, &o.warmup);
        else if (!strcmp(argv[i], "--hz") && has)
            ok = int_arg(argv[++i], 1, 10000, &o.hz);
        else if (!strcmp(argv[i], "--bytes") && has)
            ok = int_arg(argv[++i], 80, 1 << 20, &o.bytes);
        else if (!strcmp(argv[i], "--process-us") && has)
            ok = int_arg(argv[++i], 0, 100000, &o.process_us);
        else if (!strcmp(argv[i], "--clients") && has)
            ok = int_arg(argv[++i], 1, MAX_CLIENTS, &o.clients);
        else if (!strcmp(argv[i], "--rcvbuf") && has)
            ok = int_arg(argv[++i], 0, 1 << 30, &o.rcvbuf);
        else
            ok = false;
        if (!ok) {
            usage(stderr);
            return 2;
        }
    }
    printf("# trackd-ws-handoff: %d frames at %d Hz, %d bytes, %d us processing; "
           "microseconds p50 p99\n",
           o.frames, o.hz, o.bytes, o.process_us);
    printf("%-5s %7s %6s %6s %18s %18s %18s %18s %18s %18s\n", "spin", "clients", "frames",
           "missed", "publish", "wake", "wait", "call", "write", "arrive");
    int rc = 0;
    for (const char *p = spins; *p;) {
        size_t n = strcspn(p, ",");
        if (n == 2 && !strncmp(p, "on", 2))
            rc |= run_mode(&o, true);
        else if (n == 3 && !strncmp(p, "off", 3))
            rc |= run_mode(&o, false);
        else {
            usage(stderr);
            return 2;
        }
        p += n + (p[n] == ',');
    }
    return rc;
}
