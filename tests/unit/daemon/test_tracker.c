/* The tracker stage (daemon/tracker.h) on synthetic scenes with known
 * answers: red squares on paths written here, painted into RGB frames and
 * measured by the real fast CPU backend in the rounds the tracker plans
 * (full-frame process or one submit_regions call, then the rounds over
 * grown regions and the whole frame it may ask for), exactly as the
 * pipeline runs them. Every scene
 * runs twice, in roi and full mode, and both must report every square that
 * is apart from the others and inside the frame with its exact centroid
 * (a painted s x s square at x, y has centroid x + (s - 1) / 2).
 *
 * Cases: lifecycle and bad arguments; untracked objects pass the backend's
 * full-frame results through; roi frames really use one region per
 * instance; leaving and re-entering (a new id after coast_frames, never a
 * reused one); a short occlusion (same id, lost counts up); crossing at
 * different speeds (the ids stay with their squares); stopping; jumps
 * past the region (same id, found by the grown-region round of the same
 * frame), past the grown region (the whole-frame round) and across the
 * frame (new id); more squares than K (the K largest are followed); a
 * square under a cover leaving a pixel (same id after) and a partly
 * covered one whose region also holds a piece of it (both modes measure
 * the large part); ids unique across objects and resets; a spinning bar's
 * filtered orientation and turn (through 0/180, coasting) and a square's
 * (no axis: no turn); the state round trip (daemon/state.h: saved mid-run,
 * loaded into a fresh tracker counting other seqs, both step alike bit for
 * bit, a fresh one without it does not; damaged bytes are refused at
 * their offset). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "backend.h"
#include "state.h"
#include "tracker.h"

#define W      160
#define H      120
#define MAX_SQ 8

static const uint8_t RED[3] = { 250, 10, 10 }, GREEN[3] = { 10, 250, 10 };

struct sq {
    double x, y; /* top-left corner (rounded when painted) */
    int s;       /* side; 0 = absent */
    const uint8_t *rgb;
};

static uint8_t frame_rgb[W * H * 3];
static const struct trk_image img = { .plane = { frame_rgb },
                                      .pitch = { W * 3 },
                                      .width = W,
                                      .height = H,
                                      .fmt = TRK_FMT_RGB24,
                                      .full_range = true };

static void paint(const struct sq *v, int n)
{
    memset(frame_rgb, 128, sizeof frame_rgb);
    for (int k = 0; k < n; k++) {
        if (!v[k].s) continue;
        const int x0 = (int)lround(v[k].x), y0 = (int)lround(v[k].y);
        for (int y = y0; y < y0 + v[k].s; y++)
            for (int x = x0; x < x0 + v[k].s; x++)
                if (x >= 0 && x < W && y >= 0 && y < H)
                    memcpy(frame_rgb + ((size_t)y * W + x) * 3, v[k].rgb, 3);
    }
}

/* A backend and a tracker over one object set. */
struct rig {
    struct trk_backend *b;
    struct trk_tracker *t;
    const struct trk_object_def *defs;
    int n;
    uint64_t seq;
    int regions;     /* of the last frame's first round when not full */
    int full_rounds; /* of the last frame: bit k set when round k was a full-frame pass */
};

static void rig_open(struct rig *r, const struct trk_object_def *defs, int n,
                     enum trk_track_mode mode, int full_every)
{
    memset(r, 0, sizeof(*r));
    struct trk_backend_cfg bc = { .kind = TRK_BACKEND_CPU, .max_width = W, .max_height = H };
    struct trk_tracker_cfg tc = { .max_objects = 8, .mode = mode, .full_every = full_every };
    CHECK(trk_backend_create(&bc, &r->b) == 0 && trk_backend_set_objects(r->b, defs, n) == 0);
    CHECK(trk_tracker_create(&tc, &r->t) == 0 && trk_tracker_reset(r->t, defs, n) == 0);
    r->defs = defs;
    r->n = n;
    r->seq = 100;
}

static void rig_close(struct rig *r)
{
    trk_backend_destroy(&r->b);
    trk_tracker_destroy(&r->t);
}

/* One frame of squares through backend and tracker; returns the rounds. */
static int rig_frame(struct rig *r, const struct sq *v, int n)
{
    paint(v, n);
    static struct trk_obj_result res[TRK_MAX_REGIONS];
    static const struct trk_blob *lists[TRK_MAX_REGIONS];
    static int nb[TRK_MAX_REGIONS];
    struct trk_tracker_plan plan;
    CHECK(trk_tracker_begin(r->t, r->seq++, W, H, &plan) == 0);
    r->regions = plan.full ? -1 : plan.n;
    r->full_rounds = 0;
    int rounds = 0, more = 1;
    while (more == 1 && rounds < 4) {
        r->full_rounds |= plan.full << rounds;
        rounds++;
        const int units = plan.full ? r->n : plan.n;
        int err = plan.full
                      ? trk_backend_process(r->b, &img, NULL, res, NULL)
                      : trk_backend_process_regions(r->b, &img, plan.regions, plan.n, res, NULL);
        CHECK(err == 0);
        for (int j = 0; j < units; j++)
            nb[j] = trk_backend_blobs(r->b, j, &lists[j]);
        more = trk_tracker_measure(r->t, res, lists, nb, units, &plan);
        CHECK(more == 0 || more == 1);
    }
    CHECK(more == 0 && rounds == trk_tracker_rounds(r->t));
    return rounds;
}

/* Object i's instance with id, or NULL. */
static const struct trk_instance *by_id(const struct rig *r, int i, uint64_t id)
{
    const struct trk_instance *v;
    int n = trk_tracker_instances(r->t, i, &v);
    for (int k = 0; k < n; k++)
        if (v[k].id == id) return &v[k];
    return NULL;
}

/* Object i's instance seen in this frame exactly at square q's centroid. */
static const struct trk_instance *at(const struct rig *r, int i, const struct sq *q)
{
    const double cx = lround(q->x) + (q->s - 1) / 2.0, cy = lround(q->y) + (q->s - 1) / 2.0;
    const struct trk_instance *v;
    int n = trk_tracker_instances(r->t, i, &v);
    for (int k = 0; k < n; k++)
        if (!v[k].lost && v[k].cx == cx && v[k].cy == cy &&
            v[k].blob.mass == (uint64_t)q->s * (uint64_t)q->s)
            return &v[k];
    return NULL;
}

/* Square k of v is inside the frame and 2+ pixels from every other. */
static bool apart(const struct sq *v, int n, int k)
{
    const struct sq *q = &v[k];
    if (!q->s || q->x < 0 || q->y < 0 || q->x + q->s > W || q->y + q->s > H) return false;
    for (int j = 0; j < n; j++) {
        if (j == k || !v[j].s) continue;
        if (q->x < v[j].x + v[j].s + 2 && v[j].x < q->x + q->s + 2 && q->y < v[j].y + v[j].s + 2 &&
            v[j].y < q->y + q->s + 2)
            return false;
    }
    return true;
}

static struct trk_object_def red_def(int k, int coast)
{
    struct trk_object_def d = { .name = "red",
                                .space = TRK_SPACE_RGB,
                                .lo = { 200, 0, 0 },
                                .hi = { 255, 50, 50 },
                                .min_mass = 1,
                                .blobs = (uint16_t)k,
                                .min_area = 1,
                                .connectivity = 8,
                                .track = true,
                                .coast_frames = (uint16_t)coast };
    return d;
}

static void lifecycle(void)
{
    struct trk_tracker *t = NULL;
    struct trk_tracker_cfg bad = { .max_objects = 0 };
    CHECK(trk_tracker_create(&bad, &t) == TRK_EINVAL && t == NULL);
    bad.max_objects = TRK_MAX_OBJECTS + 1;
    CHECK(trk_tracker_create(&bad, &t) == TRK_EINVAL && t == NULL);
    bad = (struct trk_tracker_cfg){ .max_objects = 4, .mode = 7 };
    CHECK(trk_tracker_create(&bad, &t) == TRK_EINVAL && t == NULL);
    bad = (struct trk_tracker_cfg){ .max_objects = 4, .full_every = -1 };
    CHECK(trk_tracker_create(&bad, &t) == TRK_EINVAL && t == NULL);
    CHECK(trk_track_mode_parse("roi") == TRK_TRACK_ROI);
    CHECK(trk_track_mode_parse("full") == TRK_TRACK_FULL && trk_track_mode_parse("ROI") == -1);

    struct trk_tracker_cfg cfg = { .max_objects = 4 };
    CHECK(trk_tracker_create(&cfg, &t) == 0 && t != NULL);
    if (!t) return;
    CHECK(trk_tracker_count(t) == 0 && trk_tracker_track(t, 0) == NULL);
    struct trk_object_def defs[5] = { red_def(2, 10) };
    CHECK(trk_tracker_reset(t, defs, 5) == TRK_EINVAL && trk_tracker_count(t) == 0);
    CHECK(trk_tracker_reset(t, defs, -1) == TRK_EINVAL);
    CHECK(trk_tracker_reset(t, defs, 1) == 0 && trk_tracker_count(t) == 1);
    struct trk_tracker_plan plan;
    struct trk_obj_result res = { 0 };
    /* Measuring without a frame begun, or with the wrong unit count. */
    CHECK(trk_tracker_measure(t, &res, NULL, NULL, 1, &plan) == TRK_EINVAL);
    CHECK(trk_tracker_begin(t, 1, 0, H, &plan) == TRK_EINVAL);
    CHECK(trk_tracker_begin(t, 1, W, H, &plan) == 0 && plan.full);
    CHECK(trk_tracker_measure(t, &res, NULL, NULL, 2, &plan) == TRK_EINVAL);
    CHECK(trk_tracker_measure(t, &res, NULL, NULL, 1, &plan) == 0);
    CHECK(trk_tracker_measure(t, &res, NULL, NULL, 1, &plan) == TRK_EINVAL); /* complete */
    CHECK(!trk_tracker_track(t, 0)->found && trk_tracker_track(t, 1) == NULL);
    CHECK(trk_tracker_reset(t, NULL, 0) == 0);
    CHECK(trk_tracker_begin(t, 2, W, H, &plan) == 0);
    CHECK(trk_tracker_measure(t, NULL, NULL, NULL, 0, &plan) == 0);
    trk_tracker_destroy(&t);
    CHECK(t == NULL);
    trk_tracker_destroy(&t); /* twice is fine */
}

/* An untracked object (green) beside a tracked one: in roi mode its result
 * and list are the backend's full-frame ones in every frame. Without blob
 * lists (green_blobs 0) it is one whole-frame region and roi frames search
 * the tracked object in one region per instance; with them (2) every frame
 * is a full-frame pass (a whole-frame region's labelling costs more). */
static void untracked_and_regions(int green_blobs)
{
    struct trk_object_def defs[2] = { red_def(4, 10),
                                      { .name = "green",
                                        .space = TRK_SPACE_RGB,
                                        .lo = { 0, 200, 0 },
                                        .hi = { 50, 255, 50 },
                                        .min_mass = 1,
                                        .blobs = (uint16_t)green_blobs,
                                        .min_area = 1,
                                        .connectivity = 8 } };
    struct rig r;
    rig_open(&r, defs, 2, TRK_TRACK_ROI, 15);
    struct trk_backend *ref = NULL;
    struct trk_backend_cfg bc = { .kind = TRK_BACKEND_CPU, .max_width = W, .max_height = H };
    CHECK(trk_backend_create(&bc, &ref) == 0 && trk_backend_set_objects(ref, defs, 2) == 0);
    int roi_frames = 0;
    for (int f = 0; f < 40; f++) {
        struct sq v[4] = { { 10 + 2 * f, 20, 6, RED },
                           { 100, 90 - f, 9, RED },
                           { 60, 40 + f % 3, 7, GREEN },
                           { 130, 10, 5, GREEN } };
        rig_frame(&r, v, 4);
        struct trk_obj_result want[2];
        CHECK(trk_backend_process(ref, &img, NULL, want, NULL) == 0);
        const struct trk_obj_result *got = trk_tracker_result(r.t, 1);
        CHECKF(got && !memcmp(got, &want[1], sizeof(*got)), "frame %d: green's result", f);
        const struct trk_blob *gl, *wl;
        int gn = trk_tracker_blobs(r.t, 1, &gl), wn = trk_backend_blobs(ref, 1, &wl);
        CHECKF(gn == green_blobs && wn == green_blobs && (!gn || !memcmp(gl, wl, 2 * sizeof(*gl))),
               "frame %d: green's blobs", f);
        const struct trk_instance *unused;
        CHECK(trk_tracker_instances(r.t, 1, &unused) == 0);
        /* Red: both squares followed, exact; the first frame and every
         * 15th are full frames, the others 2 regions for red + 1 for green
         * (all full-frame passes when green has blob lists). */
        CHECKF(at(&r, 0, &v[0]) && at(&r, 0, &v[1]), "frame %d: red squares", f);
        CHECKF(trk_tracker_was_full(r.t) == (green_blobs > 0 || f % 15 == 0), "frame %d: pass", f);
        if (!trk_tracker_was_full(r.t)) {
            roi_frames++;
            CHECKF(r.regions == 3, "frame %d: %d regions", f, r.regions);
            CHECKF(at(&r, 0, &v[0])->via_roi && at(&r, 0, &v[1])->via_roi, "frame %d: via", f);
        }
        /* Red's result is the sum over its instances. */
        const struct trk_obj_result *rr = trk_tracker_result(r.t, 0);
        CHECK(rr->mass == 36 + 81 && rr->x0 == 10 + 2 * f && rr->x1 == 108);
        CHECK(trk_tracker_track(r.t, 0)->found && trk_tracker_track(r.t, 1)->found);
    }
    CHECKF(roi_frames == (green_blobs ? 0 : 37), "%d roi frames", roi_frames);
    /* Velocity: 2 px/frame right and 1 px/frame up. */
    CHECK(fabs(at(&r, 0, &(struct sq){ 10 + 2 * 39, 20, 6, RED })->vx - 2) < 1e-6);
    CHECK(fabs(at(&r, 0, &(struct sq){ 100, 90 - 39, 9, RED })->vy + 1) < 1e-6);
    trk_backend_destroy(&ref);
    rig_close(&r);
}

/* A square crosses the right edge and comes back after more than
 * coast_frames (new id), then leaves briefly and comes back along its
 * predicted path (kept: lost counted, then 0). */
static void leave_and_return(enum trk_track_mode mode)
{
    struct trk_object_def d = red_def(2, 5);
    struct rig r;
    rig_open(&r, &d, 1, mode, 15);
    uint64_t first = 0;
    int f = 0;
    for (; f < 30; f++) { /* x = 100 + 4f: fully out from f = 15 on */
        struct sq v = { 100 + 4 * f, 50, 8, RED };
        rig_frame(&r, &v, 1);
        const struct trk_instance *x;
        int n = trk_tracker_instances(r.t, 0, &x);
        if (f == 0) first = n == 1 ? x[0].id : 0;
        if (apart(&v, 1, 0)) CHECKF(at(&r, 0, &v) && at(&r, 0, &v)->id == first, "frame %d", f);
        if (f >= 15 && f < 20) /* coasting: lost 1..5 */
            CHECKF(n == 1 && x[0].id == first && x[0].lost == (uint32_t)(f - 14),
                   "frame %d: n %d lost %u", f, n, n ? x[0].lost : 0);
        if (f >= 20) CHECKF(n == 0, "frame %d: %d instances after coast_frames", f, n);
    }
    /* Back from the right, moving left, on frame 30: a periodic
     * whole-frame pass in roi mode (nothing is followed until one). */
    uint64_t second = 0;
    for (int g = 0; g < 10; g++, f++) {
        struct sq v = { 150 - 3 * g, 50, 8, RED };
        rig_frame(&r, &v, 1);
        const struct trk_instance *x = at(&r, 0, &v);
        CHECKF(x != NULL, "back, frame %d", g);
        if (x && !second) second = x->id;
        CHECKF(x && x->id == second && second > first, "back, frame %d", g);
    }
    /* Hidden for 3 frames while moving on, then seen where predicted. */
    for (int g = 0; g < 8; g++, f++) {
        struct sq v = { 150 - 3 * (10 + g), 50, g >= 2 && g < 5 ? 0 : 8, RED };
        rig_frame(&r, &v, 1);
        const struct trk_instance *x = by_id(&r, 0, second);
        CHECKF(x && x->lost == (g >= 2 && g < 5 ? (uint32_t)(g - 1) : 0), "occlusion frame %d", g);
        if (v.s) CHECKF(at(&r, 0, &v) == x, "occlusion frame %d: measured", g);
        if (x && x->lost)
            CHECKF(fabs(x->cx - (150 - 3 * (10 + g) + 3.5)) < 1e-6,
                   "occlusion frame %d: predicted %.2f", g, x->cx);
    }
    rig_close(&r);
}

/* Two squares of one colour on crossing paths at different speeds, merging
 * for some frames: each id stays with its square. Head-on (4 and -1 px per
 * frame, merged for a few frames) and overtaking (3 and 1 px per frame in
 * the same direction, merged for about 9 frames: the one that holds the
 * merged blob must keep to its own path meanwhile). */
static void crossing(enum trk_track_mode mode, bool overtake)
{
    struct trk_object_def d = red_def(4, 10);
    struct rig r;
    rig_open(&r, &d, 1, mode, 15);
    uint64_t ida = 0, idb = 0;
    int merged = 0;
    for (int f = 0; f < 40; f++) {
        struct sq v[2] = { { 5 + 4 * f, 50 + 0.5 * f, 8, RED }, { 130 - 1 * f, 60, 8, RED } };
        if (overtake) {
            v[0] = (struct sq){ 5 + 3 * f, 50, 8, RED };
            v[1] = (struct sq){ 40 + f, 52 + 0.2 * f, 8, RED };
        }
        rig_frame(&r, v, 2);
        for (int k = 0; k < 2; k++) {
            if (!apart(v, 2, k)) {
                merged += k == 0;
                continue;
            }
            const struct trk_instance *x = at(&r, 0, &v[k]);
            CHECKF(x != NULL, "mode %d frame %d square %d", mode, f, k);
            if (!x) continue;
            uint64_t *id = k ? &idb : &ida;
            if (!*id) *id = x->id;
            CHECKF(x->id == *id, "mode %d frame %d square %d: id %llu, was %llu", mode, f, k,
                   (unsigned long long)x->id, (unsigned long long)*id);
            /* Out of a merge with the speed it went in with. */
            const double vx = overtake ? (k ? 1 : 3) : (k ? -1 : 4);
            if (f > 3) CHECKF(fabs(x->vx - vx) < 0.5, "frame %d square %d: vx %.2f", f, k, x->vx);
        }
    }
    CHECK(merged >= 2 && ida && idb && ida != idb);
    rig_close(&r);
}

/* A square moves, stops, sits: same id, speed back to ~0, and in roi mode
 * the sitting frames need one round. */
static void stopping(enum trk_track_mode mode)
{
    struct trk_object_def d = red_def(1, 10);
    struct rig r;
    rig_open(&r, &d, 1, mode, 15);
    uint64_t id = 0;
    int two_rounds = 0;
    for (int f = 0; f < 40; f++) {
        struct sq v = { 10 + 4 * (f < 12 ? f : 12), 30, 10, RED };
        two_rounds += rig_frame(&r, &v, 1) == 2;
        const struct trk_instance *x = at(&r, 0, &v);
        CHECKF(x != NULL, "frame %d", f);
        if (x && !id) id = x->id;
        CHECKF(x && x->id == id, "frame %d", f);
        if (x && f == 39) CHECK(fabs(x->vx) < 0.01 && fabs(x->vy) < 0.01);
    }
    CHECKF(two_rounds <= 2, "%d frames needed a second round", two_rounds);
    rig_close(&r);
}

/* Jumps: one onto its region's border (the blob is cut: the round over
 * its grown region of the same frame measures it whole), one past its
 * region (the grown region holds it, same id), one past the grown region
 * but within the gate (the whole-frame round finds it, same id), one
 * across the frame (a new id; the old coasts). */
static void jumps(void)
{
    struct trk_object_def d = red_def(2, 3);
    struct rig r;
    rig_open(&r, &d, 1, TRK_TRACK_ROI, 1000);
    uint64_t id = 0;
    double x = 20;
    for (int f = 0; f < 20; f++) {
        /* 2 px/frame, a step of 15 px (13 past the prediction: the square
         * spans 8.5..17.5 px from it, the region's border 16 cuts it), a
         * step of 26 px (out of the region: about size / 2 + speed +
         * margin = 5 + 2 + 9 = 16 px from the prediction; inside the
         * region grown by size + speed + 4 = 16 px; the gate 2 x (10 + 2)
         * + 8 = 32), a step of 30 px (28 past the prediction: the grown
         * region's border, about 11 + 16 = 27 px from it, cuts it). */
        x += f == 4 ? 15 : f == 8 ? 26 : f == 16 ? 30 : 2;
        struct sq v = { x, 40, 10, RED };
        int rounds = rig_frame(&r, &v, 1);
        const struct trk_instance *in = at(&r, 0, &v);
        CHECKF(in != NULL, "frame %d", f);
        if (in && !id) id = in->id;
        CHECKF(in && in->id == id, "frame %d", f);
        if (f == 4 || f == 8)
            CHECKF(rounds == 2 && in && in->via_roi, "frame %d: %d rounds", f, rounds);
        else if (f == 16)
            CHECKF(rounds == 3 && in && !in->via_roi && r.full_rounds == 4,
                   "frame %d: %d rounds, full-pass rounds %#x", f, rounds, r.full_rounds);
        else if (f > 0)
            CHECKF(rounds == 1 && in && in->via_roi, "frame %d", f);
    }
    struct trk_tracker_stats st;
    trk_tracker_get_stats(r.t, &st);
    CHECK(st.frames == 20 && st.full == 1 && st.grown == 3 && st.whole == 1);
    CHECK(st.grown_objects == 3 && st.whole_objects == 1);
    /* Across the frame: neither its region nor the grown one holds it. */
    struct sq v = { 130, 100, 10, RED };
    CHECK(rig_frame(&r, &v, 1) == 3);
    const struct trk_instance *in = at(&r, 0, &v);
    CHECK(in && in->id > id && !in->via_roi && by_id(&r, 0, id) && by_id(&r, 0, id)->lost == 1);
    rig_close(&r);
}

/* Two tracked objects, roi mode: when one loses an instance (a jump across
 * the frame: its third round, a full-frame pass, finds it under a new id),
 * every frame while the lost one coasts is a full-frame pass (not a
 * whole-frame region, which costs more), the other object keeps its id
 * throughout, and once the lost instance is dropped the frames are regions
 * again. */
static void lost_means_full(void)
{
    struct trk_object_def defs[2] = { red_def(1, 4), red_def(2, 4) }; /* green: room to coast */
    snprintf(defs[1].name, sizeof(defs[1].name), "green");
    defs[1].lo[0] = 0, defs[1].lo[1] = 200;
    defs[1].hi[0] = 50, defs[1].hi[1] = 255;
    struct rig r;
    rig_open(&r, defs, 2, TRK_TRACK_ROI, 1000);
    uint64_t red_id = 0, green_id = 0, new_green = 0;
    int full_after = 0;
    for (int f = 0; f < 16; f++) {
        struct sq v[2] = { { 10 + 2 * f, 20, 8, RED },
                           { f < 6 ? 120 : 20, f < 6 ? 90 : 95, 8, GREEN } };
        /* Lost and coasting when the frame began (it may be dropped in it). */
        const bool coasting = f > 6 && by_id(&r, 1, green_id) != NULL;
        const int rounds = rig_frame(&r, v, 2);
        const struct trk_instance *red = at(&r, 0, &v[0]), *green = at(&r, 1, &v[1]);
        CHECKF(red && green, "frame %d: both squares followed", f);
        if (!red || !green) break;
        if (!red_id) red_id = red->id, green_id = green->id;
        CHECKF(red->id == red_id, "frame %d: red keeps its id", f);
        const struct trk_instance *old = by_id(&r, 1, green_id);
        if (f < 6) {
            CHECKF(green->id == green_id && (f == 0 || !trk_tracker_was_full(r.t)),
                   "frame %d: regions", f);
        } else if (f == 6) {
            /* Neither its region nor the grown one holds it: a third
             * round, the full-frame pass, gives it a new id. */
            CHECKF(rounds == 3 && r.full_rounds == 4 && green->id != green_id && old && old->lost,
                   "frame %d: %d rounds, full-pass rounds %#x", f, rounds, r.full_rounds);
            new_green = green->id;
        } else {
            CHECKF(green->id == new_green, "frame %d: the new green id holds", f);
            if (coasting) {
                CHECKF(trk_tracker_was_full(r.t) && r.regions == -1 && rounds == 1,
                       "frame %d: a lost instance coasts: a full-frame pass", f);
                full_after++;
            } else {
                CHECKF(!trk_tracker_was_full(r.t) && r.regions == 2 && rounds == 1,
                       "frame %d: dropped: regions again (%d)", f, r.regions);
            }
        }
    }
    CHECKF(full_after >= 3 && by_id(&r, 1, green_id) == NULL,
           "the lost instance coasted (%d full-frame passes) and was dropped", full_after);
    rig_close(&r);
}

/* Five squares of different sizes, K = 2: the two largest are followed,
 * in both modes; when the largest leaves, the next largest becomes a new
 * instance at the next whole-frame search. */
static void more_than_k(enum trk_track_mode mode)
{
    struct trk_object_def d = red_def(2, 2);
    struct rig r;
    rig_open(&r, &d, 1, mode, 5);
    struct sq v[5] = { { 10, 10, 12, RED },
                       { 40, 10, 11, RED },
                       { 70, 10, 6, RED },
                       { 100, 10, 5, RED },
                       { 10, 60, 4, RED } };
    uint64_t ids[2] = { 0, 0 };
    for (int f = 0; f < 20; f++) {
        v[0].s = f < 10 ? 12 : 0;
        rig_frame(&r, v, 5);
        const struct trk_instance *x;
        int n = trk_tracker_instances(r.t, 0, &x);
        CHECKF(n <= 2, "frame %d: %d instances", f, n);
        if (f < 10) {
            CHECKF(at(&r, 0, &v[0]) && at(&r, 0, &v[1]) && n == 2, "frame %d", f);
            if (f == 0) ids[0] = x[0].id, ids[1] = x[1].id;
        } else if (f >= 10 + 3) {
            /* Gone more than coast_frames: square 2 (6 px) has replaced it. */
            CHECKF(at(&r, 0, &v[1]) && at(&r, 0, &v[1])->id == ids[1], "frame %d", f);
            CHECKF(at(&r, 0, &v[2]) && at(&r, 0, &v[2])->id > ids[1], "frame %d", f);
        }
    }
    rig_close(&r);
}

/* New squares in roi mode: one appearing inside an instance's region is
 * followed from that frame on (its regions saw a blob no instance claims,
 * so the object is searched over grown regions, then in the whole frame
 * again: 3 rounds); one appearing away
 * from every region waits for the next whole-frame search (periodic). */
static void appear(void)
{
    struct trk_object_def d = red_def(4, 10);
    struct rig r;
    rig_open(&r, &d, 1, TRK_TRACK_ROI, 10);
    for (int f = 0; f < 20; f++) {
        struct sq v[3] = { { 50, 50, 8, RED },
                           { 61, 50, f >= 5 ? 8 : 0, RED },
                           { 120, 100, f >= 6 ? 6 : 0, RED } };
        int rounds = rig_frame(&r, v, 3);
        CHECKF(at(&r, 0, &v[0]) != NULL, "frame %d", f);
        CHECKF((at(&r, 0, &v[1]) != NULL) == (f >= 5), "frame %d: the near one", f);
        CHECKF((at(&r, 0, &v[2]) != NULL) == (f >= 10), "frame %d: the far one", f);
        if (f == 5) CHECK(rounds == 3); /* grown regions, then the whole frame */
    }
    rig_close(&r);
}

/* A square passes under a cover that leaves one pixel of it showing for a
 * frame, then comes out on its path: the pixel is that instance (measured,
 * same id) but not where the square is or how large, so the square is found
 * again the frame after, same id. The id switch of rrm --regions tracker:
 * the pixel set the instance's size to 1 and its speed off its path, the
 * gate shrank to ~20 px, the square came out outside it, was lost and made
 * a new instance in its place. */
static void covered_sliver(enum trk_track_mode mode)
{
    struct trk_object_def d = red_def(1, 10);
    struct rig r;
    rig_open(&r, &d, 1, mode, 15);
    uint64_t id = 0;
    for (int f = 0; f < 16; f++) {
        const double x = 10 + 5 * f, y = 40;
        /* Frame 6: two grey-green squares painted over all of it but its
         * top-left pixel. */
        const int cover = f == 6 ? 20 : 0;
        struct sq v[3] = { { x, y, 20, RED },
                           { x + 1, y, cover, GREEN },
                           { x, y + 1, cover, GREEN } };
        rig_frame(&r, v, 3);
        const struct trk_instance *in;
        CHECKF(trk_tracker_instances(r.t, 0, &in) == 1, "mode %d frame %d: instances", mode, f);
        if (f == 0) id = in[0].id;
        CHECKF(in[0].id == id && !in[0].lost, "mode %d frame %d: id %llu, was %llu", mode, f,
               (unsigned long long)in[0].id, (unsigned long long)id);
        if (f == 6)
            CHECKF(in[0].blob.mass == 1 && in[0].cx == x && in[0].cy == y,
                   "mode %d frame 6: the pixel is measured", mode);
        else
            CHECKF(at(&r, 0, &v[0]) == in, "mode %d frame %d: measured", mode, f);
    }
    rig_close(&r);
}

/* A square partly covered so that its region holds a large strip of it and
 * a 2 x 2 piece of it right at its prediction: roi mode's region lists both
 * (the region's K largest), full mode's whole-frame list holds the other
 * square and the strip. Both modes must take the strip (association weighs
 * mass, not only distance), so they report the same blob. */
static void covered_piece(void)
{
    struct trk_object_def d = red_def(2, 10);
    struct rig rr, rf;
    rig_open(&rr, &d, 1, TRK_TRACK_ROI, 15);
    rig_open(&rf, &d, 1, TRK_TRACK_FULL, 15);
    for (int f = 0; f < 10; f++) {
        const double x = 10 + 3 * f, y = 20;
        /* Frame 5: cover columns 6..19 of it, then a 2 x 2 piece of it at
         * its centre on top (3 px from the strip: a blob of its own). */
        const int cover = f == 5 ? 14 : 0;
        struct sq v[5] = { { x, y, 20, RED },
                           { 110, 80, 20, RED },
                           { x + 6, y, cover, GREEN },
                           { x + 6, y + 6, cover, GREEN },
                           { x + 9, y + 9, f == 5 ? 2 : 0, RED } };
        rig_frame(&rr, v, 5);
        rig_frame(&rf, v, 5);
        if (f != 5) {
            CHECKF(at(&rr, 0, &v[0]) && at(&rf, 0, &v[0]), "frame %d", f);
            continue;
        }
        CHECK(!trk_tracker_was_full(rr.t));
        const struct trk_instance *a = NULL, *b = NULL;
        const struct trk_instance *vf;
        const int nf = trk_tracker_instances(rf.t, 0, &vf);
        for (int k = 0; k < nf; k++)
            if (vf[k].blob.x0 < 60) b = &vf[k];
        CHECK(b && b->blob.mass == 6 * 20 && b->blob.x0 == (int)x);
        const struct trk_instance *vr;
        const int nr = trk_tracker_instances(rr.t, 0, &vr);
        for (int k = 0; k < nr; k++)
            if (vr[k].blob.x0 < 60) a = &vr[k];
        CHECKF(a && b && !memcmp(&a->blob, &b->blob, sizeof(a->blob)),
               "roi mode measured mass %llu at x0 %d, full mode the strip",
               a ? (unsigned long long)a->blob.mass : 0ULL, a ? a->blob.x0 : -1);
    }
    CHECK(at(&rr, 0, &(struct sq){ 10 + 3 * 9, 20, 20, RED }) != NULL);
    rig_close(&rr);
    rig_close(&rf);
}

/* A square crossed by a cover on another path (the bench's disks at M =
 * 128: about one in three overlaps another colour's disk): a grey-green
 * strip moving down across a red square moving right. What is seen of the
 * square is more than half its mass most frames, so it is measured as
 * itself (not a covered sliver), but its box shrinks and then jumps from
 * the part below the strip to the part above it. Its region must hold
 * every place the square can be, not the part's box around the part's
 * centroid: all found in their regions, every frame is one round (with
 * the part's box, the region missed the part above the strip: roi mode
 * measured the smaller part below it, then took a second round), and roi
 * mode measures what full mode measures, same id. */
static void cover_crossing(void)
{
    struct trk_object_def d = red_def(1, 10);
    struct rig rr, rf;
    rig_open(&rr, &d, 1, TRK_TRACK_ROI, 1000);
    rig_open(&rf, &d, 1, TRK_TRACK_FULL, 1000);
    uint64_t id = 0;
    int two = 0;
    for (int f = 0; f < 20; f++) {
        const double x = 10 + 3 * f, y = 40;
        /* The strip: 6 px tall, 24 wide (four 6 x 6 squares), wider than
         * the square, rows 28 + 3 f on. */
        const double sy = 28 + 3 * f;
        struct sq v[5] = { { x, y, 20, RED },
                           { x - 2, sy, 6, GREEN },
                           { x + 4, sy, 6, GREEN },
                           { x + 10, sy, 6, GREEN },
                           { x + 16, sy, 6, GREEN } };
        const int rounds = rig_frame(&rr, v, 5);
        rig_frame(&rf, v, 5);
        const struct trk_instance *a, *b;
        CHECKF(trk_tracker_instances(rr.t, 0, &a) == 1 && trk_tracker_instances(rf.t, 0, &b) == 1,
               "frame %d: instances", f);
        if (f == 0) id = a[0].id;
        CHECKF(a[0].id == id && !a[0].lost, "frame %d: id %llu, was %llu", f,
               (unsigned long long)a[0].id, (unsigned long long)id);
        CHECKF(!memcmp(&a[0].blob, &b[0].blob, sizeof(a[0].blob)),
               "frame %d: roi mode measured mass %llu at %d,%d, full mode %llu at %d,%d", f,
               (unsigned long long)a[0].blob.mass, a[0].blob.x0, a[0].blob.y0,
               (unsigned long long)b[0].blob.mass, b[0].blob.x0, b[0].blob.y0);
        if (f >= 3) two += rounds > 1;
    }
    CHECKF(two == 0, "%d covered frames needed a second round", two);
    rig_close(&rr);
    rig_close(&rf);
}

/* A square bouncing off the frame's left and top edges (the bench's disks
 * do): the region of a prediction past an edge reaches as far inside as
 * the mirrored square, so every frame after the first few is one round. */
static void bounce(void)
{
    struct trk_object_def d = red_def(1, 10);
    struct rig r;
    rig_open(&r, &d, 1, TRK_TRACK_ROI, 1000);
    uint64_t id = 0;
    for (int f = 0; f < 24; f++) {
        /* x: 30, 24, ..., 0 (frame 5), 6, ...; y: 16, 12, ..., 0 (frame
         * 4), 4, ... */
        const int x = abs(30 - 6 * f), y = abs(16 - 4 * f);
        struct sq v = { x, y, 10, RED };
        const int rounds = rig_frame(&r, &v, 1);
        const struct trk_instance *in = at(&r, 0, &v);
        CHECKF(in != NULL, "frame %d", f);
        if (in && !id) id = in->id;
        CHECKF(in && in->id == id, "frame %d", f);
        if (f >= 3) CHECKF(rounds == 1, "frame %d at %d,%d: %d rounds", f, x, y, rounds);
    }
    rig_close(&r);
}

/* Ids are unique across objects and never reused, also after a reset. */
static void ids_unique(void)
{
    struct trk_object_def defs[2] = { red_def(3, 0), red_def(3, 0) };
    snprintf(defs[1].name, sizeof defs[1].name, "red2");
    struct rig r;
    rig_open(&r, defs, 2, TRK_TRACK_ROI, 2);
    uint64_t max_seen = 0;
    for (int f = 0; f < 20; f++) {
        /* Squares blink: each appearance after an absence (coast 0) is a
         * new instance with a new id. */
        struct sq v[3] = { { 10, 10, f % 2 ? 0 : 6, RED },
                           { 50, 50, 6, RED },
                           { 90 + f, 20, f % 3 ? 7 : 0, RED } };
        rig_frame(&r, v, 3);
        for (int i = 0; i < 2; i++) {
            const struct trk_instance *x;
            int n = trk_tracker_instances(r.t, i, &x);
            for (int k = 0; k < n; k++) {
                /* A new id is above every id seen before; both objects see
                 * the same squares, so their ids differ. */
                if (x[k].age == 1) {
                    CHECKF(x[k].id > max_seen, "frame %d: id %llu reused", f,
                           (unsigned long long)x[k].id);
                }
            }
            for (int k = 0; k < n; k++)
                if (x[k].id > max_seen) max_seen = x[k].id;
        }
    }
    CHECK(max_seen >= 2 * (1 + 6 + 4));
    CHECK(trk_tracker_reset(r.t, defs, 2) == 0);
    struct sq v = { 50, 50, 6, RED };
    rig_frame(&r, &v, 1);
    const struct trk_instance *x;
    CHECK(trk_tracker_instances(r.t, 0, &x) == 1 && x[0].id > max_seen);
    rig_close(&r);
}

/* A bar len x wid px centred on (cx, cy) along deg (counter-clockwise on
 * screen from +x): the pixels whose centres lie in it, red, on grey. */
static void paint_bar(double cx, double cy, double len, double wid, double deg)
{
    memset(frame_rgb, 128, sizeof frame_rgb);
    const double c = cos(deg * M_PI / 180), s = sin(deg * M_PI / 180);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const double dx = x - cx, dy = y - cy;
            /* along: (c, -s) on screen (y down); across: (s, c) */
            if (fabs(dx * c - dy * s) <= len / 2 && fabs(dx * s + dy * c) <= wid / 2)
                memcpy(frame_rgb + ((size_t)y * W + x) * 3, RED, 3);
        }
}

/* The axis distance of two orientations (degrees, modulo 180). */
static double axis_diff(double a, double b)
{
    double d = fmod(fabs(a - b), 180.0);
    return d > 90 ? 180 - d : d;
}

/* rig_frame for a frame painted by the caller. */
static void rig_painted(struct rig *r)
{
    static struct trk_obj_result res[TRK_MAX_REGIONS];
    static const struct trk_blob *lists[TRK_MAX_REGIONS];
    static int nb[TRK_MAX_REGIONS];
    struct trk_tracker_plan plan;
    CHECK(trk_tracker_begin(r->t, r->seq++, W, H, &plan) == 0);
    int rounds = 0, more = 1;
    while (more == 1 && rounds < 4) {
        rounds++;
        const int units = plan.full ? r->n : plan.n;
        CHECK((plan.full ? trk_backend_process(r->b, &img, NULL, res, NULL)
                         : trk_backend_process_regions(r->b, &img, plan.regions, plan.n, res,
                                                       NULL)) == 0);
        for (int j = 0; j < units; j++)
            nb[j] = trk_backend_blobs(r->b, j, &lists[j]);
        more = trk_tracker_measure(r->t, res, lists, nb, units, &plan);
    }
    CHECK(more == 0);
}

/* A 40 x 7 bar drifting right while it spins rate degrees a frame (both
 * ways, through 0/180 twice): one id throughout; from the third frame the
 * filtered orientation stays within 1 degree of the blob's measured axis
 * and 1.5 of the painted one, and the turn per frame within 1 of the spin
 * (the sign right: no jump where the axis passes 180). Then the bar is
 * hidden for 2 frames: the instance coasts, turning as predicted; back, it
 * keeps its id. A square (no axis) standing still never turns: vth stays
 * exactly 0. */
static void spin(enum trk_track_mode mode, double rate)
{
    struct trk_object_def defs[1] = { red_def(1, 5) };
    struct rig r;
    rig_open(&r, defs, 1, mode, 0);
    uint64_t id = 0;
    double deg = 150, worst = 0, worst_v = 0;
    for (int f = 0; f < 40; f++, deg += rate) {
        paint_bar(50 + 0.5 * f, 60, 40, 7, deg);
        rig_painted(&r);
        const struct trk_instance *x;
        CHECK(trk_tracker_instances(r.t, 0, &x) == 1 && !x[0].lost);
        if (f == 0) id = x[0].id;
        CHECK(x[0].id == id && x[0].orientation >= 0 && x[0].orientation < 180);
        struct trk_shape sh;
        const struct trk_blob *b = &x[0].blob;
        trk_moments_shape(b->mass, b->sum_x, b->sum_y, b->sum_xx, b->sum_yy, b->sum_xy, &sh);
        CHECK(x[0].major == sh.major && x[0].minor == sh.minor);
        if (f < 2) continue;
        const double e = axis_diff(x[0].orientation, sh.orientation);
        const double ev = fabs(x[0].vth - rate);
        worst = fmax(worst, e);
        worst_v = fmax(worst_v, ev);
        CHECKF(e < 1.0 && axis_diff(x[0].orientation, deg) < 1.5 && ev < 1.0,
               "mode %d rate %g frame %d: orientation %.3f, measured %.3f, painted %.1f, vth %.3f",
               mode, rate, f, x[0].orientation, sh.orientation, fmod(deg, 180), x[0].vth);
    }
    printf("spin %+g deg/frame (%s): worst orientation error %.3f deg, turn error %.3f deg/frame\n",
           rate, mode == TRK_TRACK_ROI ? "roi" : "full", worst, worst_v);
    const struct trk_instance *x;
    trk_tracker_instances(r.t, 0, &x);
    const double last = x[0].orientation, vth = x[0].vth;
    memset(frame_rgb, 128, sizeof frame_rgb);
    for (int k = 1; k <= 2; k++) {
        rig_painted(&r);
        CHECK(trk_tracker_instances(r.t, 0, &x) == 1 && x[0].lost == (uint32_t)k);
        CHECKF(axis_diff(x[0].orientation, last + k * vth) < 1e-9 && x[0].vth == vth,
               "coasting: %.6f after %.6f turning %.6f", x[0].orientation, last, vth);
    }
    deg += 2 * rate;
    paint_bar(50 + 0.5 * 42, 60, 40, 7, deg);
    rig_painted(&r);
    CHECK(trk_tracker_instances(r.t, 0, &x) == 1 && x[0].id == id && !x[0].lost);
    CHECK(axis_diff(x[0].orientation, deg) < 1.5);

    CHECK(trk_tracker_reset(r.t, defs, 1) == 0);
    const struct sq square = { 70, 50, 12, RED };
    for (int f = 0; f < 8; f++) {
        rig_frame(&r, &square, 1);
        CHECK(trk_tracker_instances(r.t, 0, &x) == 1 && x[0].vth == 0 && x[0].orientation == 0);
    }
    rig_close(&r);
}

/* Squares for frame f of the state test: three moving at different
 * speeds, the second gone for frames 8..11 (it coasts across the save). */
static int state_scene(int f, struct sq *v)
{
    v[0] = (struct sq){ 10 + 3.0 * f, 20 + 1.0 * f, 9, RED };
    v[1] = (struct sq){ 120 - 2.5 * f, 60, (f >= 8 && f < 12) ? 0 : 7, RED };
    v[2] = (struct sq){ 40 + 1.5 * f, 100 - 2.0 * f, 5, RED };
    return 3;
}

/* Both trackers report the same instances, bit for bit (ids, positions,
 * velocities, orientation, lost) and the same plan. */
static bool same_instances(const struct rig *a, const struct rig *b)
{
    const struct trk_instance *va, *vb;
    const int na = trk_tracker_instances(a->t, 0, &va), nb = trk_tracker_instances(b->t, 0, &vb);
    bool same = na == nb && trk_tracker_was_full(a->t) == trk_tracker_was_full(b->t) &&
                trk_tracker_rounds(a->t) == trk_tracker_rounds(b->t);
    for (int k = 0; same && k < na; k++) {
        const double da[] = {
            va[k].cx, va[k].cy, va[k].vx, va[k].vy, va[k].orientation, va[k].vth
        };
        const double db[] = {
            vb[k].cx, vb[k].cy, vb[k].vx, vb[k].vy, vb[k].orientation, vb[k].vth
        };
        same = va[k].id == vb[k].id && va[k].lost == vb[k].lost && va[k].age == vb[k].age &&
               va[k].via_roi == vb[k].via_roi && !memcmp(da, db, sizeof(da));
    }
    return same;
}

static void state_round_trip(enum trk_track_mode mode)
{
    const struct trk_object_def defs[1] = { red_def(4, 6) };
    struct rig a, b, c;
    struct sq v[3];
    rig_open(&a, defs, 1, mode, 5);
    rig_open(&b, defs, 1, mode, 5);
    rig_open(&c, defs, 1, mode, 5);
    b.seq = c.seq = 7; /* a replay counts from elsewhere */
    for (int f = 0; f < 10; f++)
        rig_frame(&a, v, state_scene(f, v));
    struct trk_bytes st = { 0 };
    trk_tracker_save(a.t, &st);
    CHECK(!st.failed && st.len > 0);
    struct trk_rd rd = { .p = st.p, .len = st.len };
    CHECK(trk_tracker_load(b.t, &rd, b.seq - a.seq) == 0 && rd.off == st.len);
    bool same = true, fresh_same = true;
    for (int f = 10; f < 30; f++) {
        const int n = state_scene(f, v);
        rig_frame(&a, v, n);
        rig_frame(&b, v, n);
        rig_frame(&c, v, n);
        same = same && same_instances(&a, &b);
        fresh_same = fresh_same && same_instances(&a, &c);
    }
    CHECKF(same, "mode %d: the loaded tracker steps as the saved one", mode);
    CHECKF(!fresh_same, "mode %d: a fresh tracker does not (the test can tell)", mode);
    /* Damaged: cut inside an instance, an object count of another set. */
    struct trk_rd cut = { .p = st.p, .len = st.len - 3 };
    CHECK(trk_tracker_load(c.t, &cut, 0) == TRK_EINVAL && cut.bad && cut.bad_off > 0 &&
          cut.bad_off < st.len - 3);
    trk_tracker_reset(c.t, defs, 1);
    uint8_t *bad = malloc(st.len);
    memcpy(bad, st.p, st.len);
    bad[8] = 2; /* the object count */
    struct trk_rd other = { .p = bad, .len = st.len };
    CHECK(trk_tracker_load(c.t, &other, 0) == TRK_EINVAL && other.bad_off == 8);
    free(bad);
    free(st.p);
    rig_close(&a);
    rig_close(&b);
    rig_close(&c);
}

int main(void)
{
    lifecycle();
    untracked_and_regions(0);
    untracked_and_regions(2);
    for (int m = TRK_TRACK_ROI; m <= TRK_TRACK_FULL; m++) {
        leave_and_return((enum trk_track_mode)m);
        crossing((enum trk_track_mode)m, false);
        crossing((enum trk_track_mode)m, true);
        stopping((enum trk_track_mode)m);
        more_than_k((enum trk_track_mode)m);
        covered_sliver((enum trk_track_mode)m);
        spin((enum trk_track_mode)m, 7);
        spin((enum trk_track_mode)m, -5);
    }
    jumps();
    lost_means_full();
    appear();
    covered_piece();
    cover_crossing();
    bounce();
    ids_unique();
    state_round_trip(TRK_TRACK_ROI);
    state_round_trip(TRK_TRACK_FULL);
    return check_exit("tracker");
}
