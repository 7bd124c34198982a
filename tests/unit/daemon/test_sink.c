/* The network sinks (daemon/out/netq.h, udp.h, osc.h):
 *   queue      a sender stuck in send never holds up trk_netq_push; the
 *              oldest queued frames give way and are counted; what is sent
 *              is a copy (the caller's buffers are reused at once), in
 *              order, and drained at the end;
 *   failures   failed sends are counted and the next frames still go;
 *   udp_split  through a real loopback socket: a small frame is one
 *              datagram, a large one parts of whole objects within the
 *              payload limit (one oversized object alone), each valid JSON
 *              with seq and part i of n, whose objects joined are the frame
 *              message's;
 *   osc_address  reserved characters in OSC addresses, escaped so that no
 *              two names share one;
 *   osc_send   OSC messages through real loopback sockets, IPv6 and IPv4;
 *   addr_pick    the address a name with both families is sent to. */
#include <errno.h>
#include <jansson.h>
#include <lo/lo.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../check.h"
#include "messages.h"
#include "netaddr.h"
#include "out/osc.h"
#include "out/netq.h"
#include "out/udp.h"

/* ------------------------------------------------------------ test frames */

#define MAXN 40

struct scene {
    struct trk_frame_meta meta;
    struct trk_object_def defs[MAXN];
    struct trk_obj_result res[MAXN];
    struct trk_blob blob_store[MAXN][TRK_MAX_BLOBS];
    struct trk_blob_list blobs[MAXN];
    int n;
    struct trk_frame_result r; /* filled by push_scene, as the pipeline does */
};

/* n objects named obj<i>; object i lists k_of(i) blobs; every number is
 * derived from seq so frames differ. */
static void make_scene(struct scene *s, uint64_t seq, int n, int (*k_of)(int))
{
    trk_frame_result_free(&s->r);
    memset(s, 0, sizeof(*s));
    s->n = n;
    s->meta = (struct trk_frame_meta){ .seq = seq,
                                       .pts = seq / 30.0,
                                       .width = 640,
                                       .height = 480,
                                       .t_capture = 1.5,
                                       .wall_ms = 1e12,
                                       .backend = "cpu" };
    for (int i = 0; i < n; i++) {
        snprintf(s->defs[i].name, sizeof(s->defs[i].name), "obj%d", i);
        int k = k_of ? k_of(i) : 0;
        s->defs[i].blobs = (uint16_t)k;
        s->defs[i].min_mass = 10;
        uint64_t mass = (i % 5 == 4) ? 0 : 20 + seq + (uint64_t)i; /* some not found */
        s->res[i] = (struct trk_obj_result){ .mass = mass,
                                             .sum_x = mass * (uint64_t)(10 + i),
                                             .sum_y = mass * 7,
                                             .x0 = mass ? 1 : -1,
                                             .y0 = mass ? 2 : -1,
                                             .x1 = mass ? 30 : -1,
                                             .y1 = mass ? 40 : -1 };
        for (int b = 0; b < k; b++)
            s->blob_store[i][b] = (struct trk_blob){ .mass = 100 + seq * 1000 + (uint64_t)b,
                                                     .sum_x = 500,
                                                     .sum_y = 900,
                                                     .x0 = b,
                                                     .y0 = 1,
                                                     .x1 = b + 3,
                                                     .y1 = 9,
                                                     .perimeter = 12 };
        s->blobs[i] = (struct trk_blob_list){ .blobs = s->blob_store[i], .n = k };
    }
}

static void push_scene(struct trk_netq *sink, struct scene *s)
{
    CHECK(trk_frame_result_fill(&s->r, &s->meta, s->defs, s->n, s->res, s->blobs, NULL, NULL) == 0);
    trk_netq_push(sink, &s->r);
}

/* ------------------------------------------------------------------ queue */

/* A sender that blocks until the test opens its gate, and records what it
 * got: seq and the first blob's mass of object 1. */
struct gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool open, entered;
    int fail_every; /* > 0: every such frame's send fails */
    int n;
    uint64_t seq[64], blob_mass[64];
    int n_objects[64];
};

static int gate_send(void *ctx, const struct trk_netq_frame *f)
{
    struct gate *g = ctx;
    pthread_mutex_lock(&g->lock);
    g->entered = true;
    pthread_cond_broadcast(&g->cond);
    while (!g->open)
        pthread_cond_wait(&g->cond, &g->lock);
    int i = g->n < 64 ? g->n++ : 63;
    const struct trk_frame_result *r = &f->r;
    g->seq[i] = r->meta.seq;
    g->n_objects[i] = r->n;
    g->blob_mass[i] = r->n > 1 && r->obj[1].n_blobs > 0 ? r->blobs[r->obj[1].blob0].mass : 0;
    bool fail = g->fail_every > 0 && r->meta.seq % (uint64_t)g->fail_every == 0;
    pthread_mutex_unlock(&g->lock);
    return fail ? -ECONNREFUSED : 0;
}

static int three_blobs(int i)
{
    return i == 1 ? 3 : 0;
}

static void test_queue(void)
{
    static struct gate g = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
    struct trk_netq_cfg cfg = { .name = "test", .send = gate_send, .ctx = &g };
    struct trk_netq *sink = NULL;
    CHECK(trk_netq_create(&cfg, &sink) == 0 && sink);
    static struct scene s;
    make_scene(&s, 0, 3, three_blobs);
    push_scene(sink, &s);
    /* Wait until the sender holds frame 0 and is stuck in send. */
    pthread_mutex_lock(&g.lock);
    while (!g.entered)
        pthread_cond_wait(&g.cond, &g.lock);
    pthread_mutex_unlock(&g.lock);
    /* Ten more frames while it is stuck: every push returns (a push that
     * waited for the sender would hang this test), the oldest give way.
     * The same scene buffer is rewritten for each: the queue must hold
     * copies. */
    for (uint64_t seq = 1; seq <= 10; seq++) {
        make_scene(&s, seq, 3, three_blobs);
        push_scene(sink, &s);
    }
    struct trk_netq_stats st;
    trk_netq_get_stats(sink, &st);
    CHECKF(st.frames == 11 && st.dropped == 10 - TRK_NETQ_DEPTH && st.sent == 0,
           "frames %llu dropped %llu sent %llu", (unsigned long long)st.frames,
           (unsigned long long)st.dropped, (unsigned long long)st.sent);
    pthread_mutex_lock(&g.lock);
    g.open = true;
    pthread_cond_broadcast(&g.cond);
    pthread_mutex_unlock(&g.lock);
    trk_netq_drain(sink);
    trk_netq_get_stats(sink, &st);
    CHECK(st.sent == 1 + TRK_NETQ_DEPTH && st.failed == 0);
    CHECK(st.frames == st.sent + st.failed + st.dropped);
    /* Frame 0, then the newest DEPTH frames, in order, each with its own
     * blob list. */
    CHECK(g.n == 1 + TRK_NETQ_DEPTH);
    for (int i = 0; i < g.n; i++) {
        uint64_t want = i == 0 ? 0 : 10 - TRK_NETQ_DEPTH + (uint64_t)i;
        CHECKF(g.seq[i] == want, "sent #%d is frame %llu, want %llu", i,
               (unsigned long long)g.seq[i], (unsigned long long)want);
        CHECK(g.n_objects[i] == 3);
        CHECKF(g.blob_mass[i] == 100 + want * 1000, "frame %llu blob mass %llu",
               (unsigned long long)want, (unsigned long long)g.blob_mass[i]);
    }
    make_scene(&s, 99, 3, NULL);
    push_scene(sink, &s); /* after drain: ignored */
    trk_netq_get_stats(sink, &st);
    CHECK(st.frames == 11);
    trk_netq_destroy(&sink);
    CHECK(sink == NULL);
    trk_netq_destroy(&sink);
}

static void test_failures(void)
{
    static struct gate g = { .lock = PTHREAD_MUTEX_INITIALIZER,
                             .cond = PTHREAD_COND_INITIALIZER,
                             .open = true,
                             .fail_every = 2 };
    struct trk_netq_cfg cfg = { .name = "test", .send = gate_send, .ctx = &g };
    struct trk_netq *sink = NULL;
    CHECK(trk_netq_create(&cfg, &sink) == 0);
    static struct scene s;
    for (uint64_t seq = 0; seq < 40; seq++) {
        make_scene(&s, seq, 2, NULL);
        push_scene(sink, &s);
        /* Let the sender keep up, so that no frame is dropped. */
        for (int t = 0; t < 10000; t++) {
            struct trk_netq_stats st;
            trk_netq_get_stats(sink, &st);
            if (st.sent + st.failed == seq + 1) break;
            nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
        }
    }
    trk_netq_drain(sink);
    struct trk_netq_stats st;
    trk_netq_get_stats(sink, &st);
    CHECK(st.frames == 40 && st.frames == st.sent + st.failed + st.dropped);
    CHECKF(st.failed == 20 && st.sent == 20 && st.dropped == 0, "sent %llu failed %llu",
           (unsigned long long)st.sent, (unsigned long long)st.failed);
    trk_netq_destroy(&sink);
}

/* -------------------------------------------------------------- udp_split */

static int many_blobs(int i)
{
    return i == 7 ? TRK_MAX_BLOBS : i % 3 == 0 ? 4 : 0;
}

/* A bound loopback socket; its port in *port. */
/* A datagram socket bound to the loopback address of family (AF_INET or
 * AF_INET6) on a free port; -1 when the host has no such address. */
static int listener(int family, int *port)
{
    int fd = socket(family, SOCK_DGRAM, 0);
    struct sockaddr_storage ss = { .ss_family = (sa_family_t)family };
    struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
    if (family == AF_INET)
        a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else
        a6->sin6_addr = in6addr_loopback;
    socklen_t len = family == AF_INET ? sizeof(*a4) : sizeof(*a6);
    int rcvbuf = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    struct timeval tv = { .tv_sec = 10 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) ||
        getsockname(fd, (struct sockaddr *)&ss, &len)) {
        if (fd >= 0) close(fd);
        return -1;
    }
    *port = ntohs(family == AF_INET ? a4->sin_port : a6->sin6_port);
    return fd;
}

/* The objects array of a frame message, as JSON. */
static json_t *objects_of(const char *text, size_t len)
{
    json_t *root = json_loadb(text, len, 0, NULL);
    json_t *objs = json_incref(json_object_get(root, "objects"));
    json_decref(root);
    return objs;
}

static void test_udp_split(void)
{
    int port = 0, fd = listener(AF_INET, &port);
    CHECK(fd >= 0);
    const int limit = 700;
    struct trk_udp_cfg cfg = {
        .host = "127.0.0.1", .port = port, .camera = "cam \"1\"", .max_payload = limit
    };
    struct trk_netq *sink = NULL;
    CHECK(trk_udp_create(&cfg, &sink) == 0);
    static struct scene small, big;
    make_scene(&small, 5, 2, NULL);
    make_scene(&big, 6, MAXN, many_blobs);
    push_scene(sink, &small);
    push_scene(sink, &big);
    trk_netq_drain(sink);
    struct trk_netq_stats st;
    trk_netq_get_stats(sink, &st);
    CHECK(st.sent == 2 && st.dropped == 0 && st.failed == 0);

    /* The small frame: one datagram, the frame message plus camera and
     * part 1 of 1. */
    static char d[70000];
    ssize_t n = recv(fd, d, sizeof(d), 0);
    CHECK(n > 0 && n <= limit);
    struct trk_buf want = { 0 };
    trk_msg_frame_part(&want, &small.r, cfg.camera, 1, 1, 0, small.n);
    CHECK(n == (ssize_t)want.len && memcmp(d, want.data, want.len) == 0);
    json_t *j = json_loadb(d, n > 0 ? (size_t)n : 0, 0, NULL);
    CHECK(j && !strcmp(json_string_value(json_object_get(j, "camera")), "cam \"1\""));
    CHECK(json_integer_value(json_object_get(j, "part")) == 1 &&
          json_integer_value(json_object_get(j, "parts")) == 1);
    json_decref(j);

    /* The big frame: parts 1..parts in order (loopback keeps order), each
     * valid JSON, within the limit unless it holds one object alone. */
    trk_buf_reset(&want);
    trk_msg_frame(&want, &big.r);
    CHECK(want.len > (size_t)limit * 4);
    json_t *all = objects_of(want.data, want.len), *joined = json_array();
    int parts = -1, got = 0;
    for (int part = 1; parts < 0 || part <= parts; part++) {
        n = recv(fd, d, sizeof(d), 0);
        if (n <= 0) {
            CHECKF(0, "part %d not received", part);
            break;
        }
        got++;
        json_error_t e;
        j = json_loadb(d, (size_t)n, 0, &e);
        CHECKF(j != NULL, "part %d is not JSON: %s", part, e.text);
        if (!j) break;
        if (parts < 0) parts = (int)json_integer_value(json_object_get(j, "parts"));
        CHECK(json_integer_value(json_object_get(j, "seq")) == 6);
        CHECK(json_integer_value(json_object_get(j, "part")) == part);
        CHECK(json_integer_value(json_object_get(j, "parts")) == parts);
        CHECK(json_integer_value(json_object_get(j, "width")) == 640);
        json_t *objs = json_object_get(j, "objects");
        CHECKF(n <= limit || json_array_size(objs) == 1, "part %d: %zd bytes, %zu objects", part, n,
               json_array_size(objs));
        json_array_extend(joined, objs);
        json_decref(j);
    }
    CHECKF(parts > 4 && got == parts, "parts %d received %d", parts, got);
    CHECKF(json_equal(all, joined), "the parts' objects joined differ from the frame's");
    /* Object 7 (64 blobs) is over the limit alone: it was sent anyway. */
    CHECK(json_array_size(joined) == MAXN);
    json_decref(all);
    json_decref(joined);
    trk_buf_free(&want);
    trk_netq_destroy(&sink);
    close(fd);

    /* A name that does not resolve fails at create. */
    struct trk_udp_cfg bad = { .host = "no-such-host.invalid", .port = 9, .camera = "c" };
    CHECK(trk_udp_create(&bad, &sink) < 0 && sink == NULL);
    struct trk_udp_cfg bad_if = {
        .host = "239.255.0.1", .port = 9, .camera = "c", .iface = "nosuchif0"
    };
    CHECK(trk_udp_create(&bad_if, &sink) == -ENODEV && sink == NULL);
}

static void test_osc_address(void)
{
    char buf[256];
    CHECK(trk_osc_address(buf, sizeof(buf), "cam 1", "red/ball#2") == strlen(buf));
    CHECK_STR(buf, "/trackd/cam%201/red%2Fball%232");
    trk_osc_address(buf, sizeof(buf), "c", "a*b,c?d[e]f{g}h\t%ü");
    CHECK_STR(buf, "/trackd/c/a%2Ab%2Cc%3Fd%5Be%5Df%7Bg%7Dh%09%25ü");
    CHECK(trk_osc_address(buf, 12, "camera", "name") == 11 && !strcmp(buf, "/trackd/cam"));
    CHECK(trk_osc_address(buf, 13, "c", "a/b") == 11 &&
          !strcmp(buf, "/trackd/c/a")); /* no cut escape */
    /* Names that once shared an address (every reserved byte was '_')
     * have one each; a name holding what looks like an escape too. */
    static const char *const names[] = { "a/b", "a_b", "a b", "a#b", "a,b", "a*b", "a%2Fb" };
    char addr[7][64];
    for (int i = 0; i < 7; i++) {
        trk_osc_address(addr[i], sizeof(addr[i]), "c", names[i]);
        for (int j = 0; j < i; j++)
            CHECKF(strcmp(addr[i], addr[j]) != 0, "%s and %s share %s", names[i], names[j],
                   addr[i]);
    }
}

/* --osc to ::1 and to 127.0.0.1 (liblo alone sends IPv4 only): the messages
 * arrive as liblo encodes them, at escaped addresses, none failed. */
static void test_osc_send(void)
{
    static const int families[] = { AF_INET6, AF_INET };
    for (int f = 0; f < 2; f++) {
        int port = 0, fd = listener(families[f], &port);
        if (fd < 0 && families[f] == AF_INET6) {
            printf("SKIP osc_send over IPv6: this host has no ::1\n");
            continue;
        }
        CHECK(fd >= 0);
        struct trk_osc_cfg cfg = { .host = families[f] == AF_INET6 ? "::1" : "127.0.0.1",
                                   .port = port,
                                   .camera = "c" };
        struct trk_netq *sink = NULL;
        CHECK(trk_osc_create(&cfg, &sink) == 0);
        static struct scene sc;
        make_scene(&sc, 3, 2, NULL);
        snprintf(sc.defs[0].name, sizeof(sc.defs[0].name), "a/b");
        snprintf(sc.defs[1].name, sizeof(sc.defs[1].name), "a b");
        push_scene(sink, &sc);
        trk_netq_drain(sink);
        struct trk_netq_stats st;
        trk_netq_get_stats(sink, &st);
        CHECKF(st.sent == 1 && st.failed == 0, "%s: sent %llu failed %llu", cfg.host,
               (unsigned long long)st.sent, (unsigned long long)st.failed);
        static const char *const want[2] = { "/trackd/c/a%2Fb", "/trackd/c/a%20b" };
        for (int i = 0; i < 2; i++) {
            static char d[2048];
            ssize_t n = recv(fd, d, sizeof(d), 0);
            CHECKF(n > 0, "%s: message %d not received", cfg.host, i);
            if (n <= 0) break;
            int res = 0;
            lo_message m = lo_message_deserialise(d, (size_t)n, &res);
            CHECKF(m != NULL, "%s: message %d is not OSC (%d)", cfg.host, i, res);
            char *path = lo_get_path(d, n);
            CHECKF(path && !strncmp(path, want[i], strlen(want[i])), "%s: address %s, want %s...",
                   cfg.host, path ? path : "(none)", want[i]);
            if (m) lo_message_free(m);
        }
        trk_netq_destroy(&sink);
        close(fd);
    }
}

/* A name with both families (localhost on a stock Debian: ::1 first) is
 * sent to on its IPv4 address; a name with one family on that one. */
static void test_addr_pick(void)
{
    struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
    struct sockaddr_in s4 = { .sin_family = AF_INET };
    struct addrinfo v4 = { .ai_family = AF_INET, .ai_addr = (struct sockaddr *)&s4 };
    struct addrinfo v6 = { .ai_family = AF_INET6,
                           .ai_addr = (struct sockaddr *)&s6,
                           .ai_next = &v4 };
    CHECK(trk_addrinfo_pick(&v6) == &v4);
    CHECK(trk_addrinfo_pick(&v4) == &v4);
    v6.ai_next = NULL;
    CHECK(trk_addrinfo_pick(&v6) == &v6);
}

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "all";
    bool all = !strcmp(which, "all");
    if (all || !strcmp(which, "queue")) test_queue();
    if (all || !strcmp(which, "failures")) test_failures();
    if (all || !strcmp(which, "udp_split")) test_udp_split();
    if (all || !strcmp(which, "osc_address")) test_osc_address();
    if (all || !strcmp(which, "osc_send")) test_osc_send();
    if (all || !strcmp(which, "addr_pick")) test_addr_pick();
    return check_exit("test_sink");
}
