/* The fusion core (fuse/fuse.c) driven with frame, status and config
 * messages as trackd publishes them; the world messages it builds are read
 * back with jansson. One ctest per case (argv[1]). Times are passed in, so
 * nothing here depends on the machine's speed. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "fuse.h"
#include "trk_error.h"

#define W 640
#define H 480

static struct trk_fuse *make(double window)
{
    struct trk_fuse_cfg cfg = {
        .window_ms = window, .gate = 50, .stale_ms = 500, .keep_ms = 1000, .name = "world"
    };
    return trk_fuse_create(&cfg);
}

/* A frame with tracked instances of "red": each {id, cx, cy, wx, wy, wvx,
 * wvy} (world fields given, as trackd with `things` sends them). */
struct inst {
    int id;
    double cx, cy, wx, wy, wvx, wvy;
};

static int feed(struct trk_fuse *f, const char *cam, int seq, double cap_ms, const struct inst *in,
                int n, double now)
{
    char buf[4096];
    int k = snprintf(buf, sizeof(buf),
                     "{\"type\":\"frame\",\"camera\":\"%s\",\"seq\":%d,\"width\":%d,\"height\":%d,"
                     "\"wall_ms\":%.3f,\"latency\":{\"queue_ms\":1.0,\"process_ms\":2.0},"
                     "\"objects\":[{\"id\":0,\"name\":\"red\",\"found\":%s,\"instances\":[",
                     cam, seq, W, H, cap_ms + 3.0, n ? "true" : "false");
    for (int i = 0; i < n; i++)
        k += snprintf(buf + k, sizeof(buf) - (size_t)k,
                      "%s{\"id\":%d,\"cx\":%.2f,\"cy\":%.2f,\"wx\":%.3f,\"wy\":%.3f,\"wvx\":%.3f,"
                      "\"wvy\":%.3f,\"lost\":0}",
                      i ? "," : "", in[i].id, in[i].cx, in[i].cy, in[i].wx, in[i].wy, in[i].wvx,
                      in[i].wvy);
    k += snprintf(buf + k, sizeof(buf) - (size_t)k, "]}]}");
    return trk_fuse_frame(f, cam, buf, (size_t)k, now, cap_ms);
}

static json_t *emit(struct trk_fuse *f, double now)
{
    struct trk_buf b = { 0 };
    int rc = trk_fuse_emit(f, now, &b);
    CHECKF(rc == 1, "emit returned %d", rc);
    json_error_t e;
    json_t *j = rc == 1 ? json_loadb(b.data, b.len, 0, &e) : NULL;
    CHECKF(rc != 1 || j, "not JSON: %s", b.data);
    trk_buf_free(&b);
    return j;
}

static size_t n_objects(const json_t *w)
{
    return json_array_size(json_object_get(w, "objects"));
}

static const json_t *object(const json_t *w, size_t i)
{
    return json_array_get(json_object_get(w, "objects"), i);
}

static bool lists(const json_t *arr, const char *name)
{
    size_t i;
    const json_t *v;
    json_array_foreach(arr, i,
                       v) if (json_is_string(v) && !strcmp(json_string_value(v), name)) return true;
    return false;
}

static double dnum(const json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

/* One ball in both views, 10 units apart in their estimates: one object,
 * seen by both, nearer the camera that has it nearer its image centre. */
static void merge(void)
{
    struct trk_fuse *f = make(30);
    struct inst a = { 7, 320, 240, 1000, 500, 0, 0 }; /* a's image centre */
    struct inst b = { 3, 620, 470, 1010, 500, 0, 0 }; /* b's corner */
    CHECK(feed(f, "a", 1, 1000, &a, 1, 0) == 1);      /* the only camera known */
    json_decref(emit(f, 1));
    CHECK(feed(f, "b", 1, 1000, &b, 1, 2) == 0); /* a not fresh: wait */
    CHECK(feed(f, "a", 2, 1033, &a, 1, 3) == 1); /* both fresh */
    json_t *w = emit(f, 4);
    CHECKF(n_objects(w) == 1, "%zu objects", n_objects(w));
    const json_t *o = object(w, 0);
    CHECK(lists(json_object_get(o, "cameras"), "a") && lists(json_object_get(o, "cameras"), "b"));
    double wx = dnum(o, "wx");
    CHECKF(wx > 1000 && wx < 1002, "wx %.3f: a's centre weight should dominate", wx);
    CHECK(lists(json_object_get(w, "cameras"), "a") && lists(json_object_get(w, "cameras"), "b"));
    json_decref(w);
    trk_fuse_destroy(&f);
    CHECK(f == NULL);
    trk_fuse_destroy(&f);
}

/* Two balls of one name farther apart than the gate stay two; one camera's
 * two instances are never merged with each other. */
static void distinct(void)
{
    struct trk_fuse *f = make(30);
    struct inst a[2] = { { 1, 100, 100, 0, 0, 0, 0 }, { 2, 110, 100, 20, 0, 0, 0 } };
    struct inst b[1] = { { 5, 300, 300, 300, 0, 0, 0 } };
    feed(f, "a", 1, 1000, a, 2, 0);
    feed(f, "b", 1, 1000, b, 1, 1);
    json_t *w = emit(f, 2);
    CHECKF(n_objects(w) == 3, "%zu objects", n_objects(w));
    json_decref(w);
    trk_fuse_destroy(&f);
}

/* Checks that world message w of frame k has one object, with the id of
 * the earlier frames (*gid; the first sets it); returns that object. */
static const json_t *one_id(const json_t *w, int k, long *gid)
{
    CHECKF(n_objects(w) == 1, "frame %d: %zu objects", k, n_objects(w));
    const json_t *o = object(w, 0);
    long id = (long)json_integer_value(json_object_get(o, "id"));
    if (*gid < 0) *gid = id;
    CHECKF(id == *gid, "frame %d: id %ld, was %ld", k, id, *gid);
    return o;
}

/* A ball moving +1000 units/s from a's view through the overlap into b's:
 * one global id throughout; frames of different phases (b 15 ms after a)
 * are aligned by velocity, so both estimates agree at the fused instant. */
static void handover(void)
{
    struct trk_fuse *f = make(40);
    long gid = -1;
    for (int k = 0; k < 30; k++) {
        double ta = 1000 + 33.0 * k, tb = ta + 15, xa = ta, xb = tb; /* x = t: 1 unit/ms */
        bool in_a = (xa < 1600), in_b = (xa > 1300);
        struct inst a = { 11, 320, 240, xa, 0, 1000, 0 }, b = { 4, 320, 240, xb, 0, 1000, 0 };
        feed(f, "a", k, ta, &a, in_a, 2.0 * k);
        feed(f, "b", k, tb, &b, in_b, 2.0 * k + 1);
        json_t *w = emit(f, 2.0 * k + 1.5);
        const json_t *o = one_id(w, k, &gid);
        double t = dnum(w, "wall_ms");
        CHECKF(fabs(dnum(o, "wx") - t) < 0.01, "frame %d: wx %.3f at t %.3f", k, dnum(o, "wx"), t);
        json_decref(w);
    }
    trk_fuse_destroy(&f);
}

/* --predict send: positions moved on from the fused instant to the send
 * time by their velocities, the interval in predict_ms; without it, none. */
static void predict(void)
{
    for (int on = 0; on < 2; on++) {
        struct trk_fuse_cfg cfg = { .gate = 50, .stale_ms = 500, .keep_ms = 1000, .predict = on };
        struct trk_fuse *f = trk_fuse_create(&cfg);
        struct inst a = { 1, 320, 240, 100, 0, 1000, -500 };
        CHECK(feed(f, "a", 1, 1000, &a, 1, 0) == 1);
        struct trk_buf b = { 0 };
        CHECK(trk_fuse_emit(f, 1050, &b) == 1);
        json_t *w = json_loads(b.data, 0, NULL);
        const json_t *o = object(w, 0);
        double want_x = on ? 150 : 100, want_y = on ? -25 : 0;
        CHECKF(fabs(dnum(o, "wx") - want_x) < 1e-6 && fabs(dnum(o, "wy") - want_y) < 1e-6,
               "predict %d: wx %.3f wy %.3f", on, dnum(o, "wx"), dnum(o, "wy"));
        CHECK(on ? fabs(dnum(w, "predict_ms") - 50) < 1e-6 : !json_object_get(w, "predict_ms"));
        json_decref(w);
        trk_buf_free(&b);
        trk_fuse_destroy(&f);
    }
}

/* A ball bouncing off a wall at 2000 units/s: where it is after the bounce
 * is far (132 units) from where its velocity predicted it, past the gate,
 * but the camera's instance id keeps the global id. */
static void bounce(void)
{
    struct trk_fuse *f = make(40);
    long gid = -1;
    for (int k = 0; k < 10; k++) {
        double t = 1000 + 33.0 * k, x = k <= 5 ? 66.0 * k : 66.0 * (10 - k),
               v = k <= 5 ? 2000 : -2000;
        struct inst a = { 21, 320, 240, x, 0, v, 0 };
        CHECK(feed(f, "a", k, t, &a, 1, 2.0 * k) == 1);
        json_t *w = emit(f, 2.0 * k + 1);
        one_id(w, k, &gid);
        json_decref(w);
    }
    trk_fuse_destroy(&f);
}

/* Cameras a and b, a ball each, 500 units apart (window 33 ms): a's frame
 * captured at 1000 ms, b's at b_cap; *w is their first world message. */
#define A_ALONE                                                                                    \
    {                                                                                              \
        1, 320, 240, 0, 0, 0, 0                                                                    \
    }
#define B_ALONE                                                                                    \
    {                                                                                              \
        2, 320, 240, 500, 0, 0, 0                                                                  \
    }
static struct trk_fuse *two_cameras(double b_cap, json_t **w)
{
    struct trk_fuse *f = make(33);
    struct inst a = A_ALONE, b = B_ALONE;
    feed(f, "a", 1, 1000, &a, 1, 0);
    feed(f, "b", 1, b_cap, &b, 1, 1);
    *w = emit(f, 2);
    return f;
}

/* A camera 100 ms behind (3 frames at 30 fps) is listed late, its frame
 * still used (moved by velocity); the other is not held back: the epoch is
 * due a window after it opened. */
static void late(void)
{
    struct inst a = A_ALONE;
    json_t *w;
    struct trk_fuse *f = two_cameras(900, &w);
    CHECK(lists(json_object_get(w, "late"), "b") && !lists(json_object_get(w, "late"), "a"));
    CHECK(n_objects(w) == 2);
    json_decref(w);
    CHECK(trk_fuse_due(f) < 0);
    CHECK(feed(f, "a", 2, 1033, &a, 1, 10) == 0); /* b has sent nothing new */
    CHECKF(fabs(trk_fuse_due(f) - 43) < 1e-9, "due %.3f", trk_fuse_due(f));
    json_decref(emit(f, 43));
    /* b silent for over --stale (cut off, its will not come yet): not used,
     * not waited for, still listed late. */
    CHECK(feed(f, "a", 3, 1600, &a, 1, 50) == 1);
    w = emit(f, 51);
    CHECK(lists(json_object_get(w, "late"), "b") && !lists(json_object_get(w, "cameras"), "b"));
    CHECK(n_objects(w) == 1);
    json_decref(w);
    trk_fuse_destroy(&f);
}

/* A camera's last will: listed offline, its objects gone, the other's go
 * on and complete epochs alone; a frame racing the will is ignored. */
static void offline(void)
{
    struct inst a = A_ALONE, b = B_ALONE;
    json_t *w;
    struct trk_fuse *f = two_cameras(1000, &w);
    json_decref(w);
    const char *will = "{\"type\":\"status\",\"camera\":\"b\",\"online\":false,\"server\":\"trackd "
                       "0.1.0\",\"source\":null,\"message\":\"connection lost\"}";
    CHECK(trk_fuse_status(f, "b", will, strlen(will)) == 0);
    CHECK(feed(f, "b", 2, 1033, &b, 1, 3) == 0);
    CHECK(feed(f, "a", 2, 1033, &a, 1, 4) == 1);
    w = emit(f, 5);
    CHECK(lists(json_object_get(w, "offline"), "b"));
    CHECK(!lists(json_object_get(w, "cameras"), "b") && lists(json_object_get(w, "cameras"), "a"));
    CHECKF(n_objects(w) == 1 && dnum(object(w, 0), "wx") == 0, "%zu objects", n_objects(w));
    json_decref(w);
    trk_fuse_destroy(&f);
}

/* Instances without world fields (trackd before `things`) are mapped by
 * the camera's retained calibration: pixel = world / 2 + 10. */
static void calibration(void)
{
    struct trk_fuse *f = make(33);
    const char *cfg = "{\"type\":\"objects\",\"camera\":\"a\",\"objects\":[],\"calibration\":"
                      "{\"unit\":\"mm\",\"points\":[[10,10,0,0],[510,10,1000,0],[510,410,1000,"
                      "800],[10,410,0,800]],\"decimals\":2}}";
    CHECK(trk_fuse_config(f, "a", cfg, strlen(cfg)) == 0);
    const char *fr = "{\"type\":\"frame\",\"camera\":\"a\",\"seq\":1,\"width\":640,\"height\":480,"
                     "\"wall_ms\":5000,\"latency\":{\"queue_ms\":0,\"process_ms\":0},\"objects\":"
                     "[{\"id\":0,\"name\":\"red\",\"found\":true,\"instances\":[{\"id\":3,\"cx\":"
                     "110,\"cy\":60,\"vx\":2,\"vy\":0,\"lost\":0},{\"id\":4,\"cx\":300,\"cy\":300,"
                     "\"vx\":0,\"vy\":0,\"lost\":2}]}]}";
    CHECK(trk_fuse_frame(f, "a", fr, strlen(fr), 0, 5000) == 1);
    json_t *w = emit(f, 1);
    CHECKF(n_objects(w) == 1, "%zu objects (a coasting instance is a prediction)", n_objects(w));
    CHECKF(fabs(dnum(object(w, 0), "wx") - 200) < 1e-6 &&
               fabs(dnum(object(w, 0), "wy") - 100) < 1e-6,
           "wx %.3f wy %.3f", dnum(object(w, 0), "wx"), dnum(object(w, 0), "wy"));
    CHECK(!strcmp(json_string_value(json_object_get(w, "unit")), "mm"));
    const json_t *fp =
        json_object_get(json_array_get(json_object_get(w, "sources"), 0), "footprint");
    CHECKF(json_array_size(fp) == 4 &&
               fabs(json_number_value(json_array_get(json_array_get(fp, 2), 0)) - 1260) < 1e-6,
           "footprint");
    json_decref(w);
    const char *bad = "{\"type\":\"objects\",\"calibration\":{\"points\":[[0,0,0,0],[1,1,1,1],[2,2,"
                      "2,2],[3,3,3,3]]}}";
    CHECK(trk_fuse_config(f, "a", bad, strlen(bad)) == TRK_EINVAL);
    trk_fuse_destroy(&f);
}

/* Bad input: an error, nothing else changes. */
static void bad_input(void)
{
    struct trk_fuse *f = make(33);
    CHECK(trk_fuse_frame(f, "a", "{", 1, 0, 0) == TRK_EINVAL);
    CHECK(trk_fuse_frame(f, "a", "[1]", 3, 0, 0) == TRK_EINVAL);
    CHECK(trk_fuse_frame(f, "a", "{\"seq\":1}", 9, 0, 0) == TRK_EINVAL);
    CHECK(trk_fuse_status(f, "a", "x", 1) == TRK_EINVAL);
    /* A capture instant far from this host's clock (a forged frame from the
     * future would make every other camera stale). */
    const char *fut = "{\"wall_ms\":1e6,\"objects\":[]}";
    CHECK(trk_fuse_frame(f, "a", fut, strlen(fut), 0, 0) == TRK_EINVAL);
    CHECK(trk_fuse_frame(f, "a", fut, strlen(fut), 0, 1e6 - 400) == 1);
    struct trk_buf b0 = { 0 };
    CHECK(trk_fuse_emit(f, 1e6, &b0) == 1);
    trk_buf_free(&b0);
    CHECK(trk_fuse_due(f) < 0);
    CHECK(feed(f, "world", 1, 1000, NULL, 0, 0) == 0); /* its own output */
    CHECK(trk_fuse_due(f) < 0);
    struct trk_buf b = { 0 };
    CHECK(trk_fuse_emit(f, 0, &b) == 0);
    trk_buf_free(&b);
    trk_fuse_destroy(&f);
}

/* A sync reply from camera a: request sent at t0 (fuser wall ms), the
 * camera's monotonic rx, tx (ms), received at t3. */
static int sync_reply(struct trk_fuse *f, double t0, double rx, double tx, double t3)
{
    char buf[256];
    int n = snprintf(buf, sizeof(buf),
                     "{\"type\":\"sync\",\"t0\":%.3f,\"rx_wall_ms\":0,\"tx_wall_ms\":0,"
                     "\"rx_mono\":%.6f,\"tx_mono\":%.6f,\"capture_clock\":\"mono\"}",
                     t0, rx / 1e3, tx / 1e3);
    return trk_fuse_sync_reply(f, "a", buf, (size_t)n, t3);
}

/* Camera a's wall clock is 10 s fast and its monotonic clock is OFF ms from
 * the fuser's wall clock: its frames are refused until it answers a sync,
 * then placed by t_capture with the offset of the least-delay sample. */
static void clock_sync(void)
{
    const double OFF = -1763699000000.0, CAP = 1763700000000.0;
    struct trk_fuse *f = make(30);
    char fr[512];
    int n = snprintf(fr, sizeof(fr),
                     "{\"type\":\"frame\",\"camera\":\"a\",\"seq\":1,\"width\":%d,"
                     "\"height\":%d,\"t_capture\":%.6f,\"wall_ms\":%.3f,\"latency\":{"
                     "\"queue_ms\":1.0,\"process_ms\":2.0},\"objects\":[{\"id\":0,\"name\":"
                     "\"red\",\"found\":true,\"instances\":[{\"id\":1,\"cx\":1,\"cy\":1,\"wx\":5,"
                     "\"wy\":5,\"lost\":0}]}]}",
                     W, H, (CAP + OFF) / 1e3, CAP + 10003.0);
    CHECK(trk_fuse_frame(f, "a", fr, (size_t)n, 0, CAP + 5) == TRK_EINVAL);
    const char *due = trk_fuse_sync_due(f, 0);
    CHECKF(due && !strcmp(due, "a"), "a is due a sync request (%s)", due ? due : "none");
    CHECK(trk_fuse_sync_due(f, 1) == NULL); /* asked: not again at once */
    CHECK(trk_fuse_sync_due(f, 100) != NULL);
    /* 8 ms out, 1 ms in the camera, 1 ms back: offset off by 3.5 ms. */
    CHECK(sync_reply(f, 1000, 1008 + OFF, 1009 + OFF, 1010) == 0);
    /* 0.5 ms each way: exact, and the least delay (1 ms). */
    CHECK(sync_reply(f, 2000, 2000.5 + OFF, 2000.6 + OFF, 2001.1) == 0);
    CHECK(sync_reply(f, 3000, 3004 + OFF, 3005 + OFF, 3006) == 0); /* 5 ms: not used */
    CHECK(sync_reply(f, 4000, 1 + OFF, 2 + OFF, 4000 + 2 * TRK_FUSE_SYNC_MAX_RTT_MS) == TRK_EINVAL);
    CHECK(trk_fuse_sync_reply(f, "a", "{\"type\":\"sync\"}", 15, 5000) == TRK_EINVAL);
    CHECK(trk_fuse_frame(f, "a", fr, (size_t)n, 0, CAP + 5) == 1);
    json_t *w = emit(f, CAP + 6);
    CHECKF(fabs(dnum(w, "wall_ms") - CAP) < 1e-3, "fused instant %.3f: the capture by t_capture",
           dnum(w, "wall_ms"));
    const json_t *src = json_array_get(json_object_get(w, "sources"), 0);
    CHECK(!strcmp(json_string_value(json_object_get(src, "clock")), "sync"));
    CHECKF(fabs(dnum(src, "clock_offset_ms") - OFF) < 1e-3 &&
               fabs(dnum(src, "sync_delay_ms") - 1.0) < 1e-3,
           "offset %.3f delay %.3f: the least-delay sample's", dnum(src, "clock_offset_ms"),
           dnum(src, "sync_delay_ms"));
    CHECK(n_objects(w) == 1);
    json_decref(w);
    trk_fuse_destroy(&f);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } cases[] = { { "merge", merge },         { "distinct", distinct },
                  { "handover", handover },   { "bounce", bounce },
                  { "predict", predict },     { "late", late },
                  { "offline", offline },     { "calibration", calibration },
                  { "bad_input", bad_input }, { "clock_sync", clock_sync } };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (argc < 2 || !strcmp(argv[1], cases[i].name)) cases[i].fn();
    return check_exit(argc > 1 ? argv[1] : "fuse");
}
