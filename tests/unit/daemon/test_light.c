/* Ranges that follow the light (daemon/light.h) on frames painted here:
 * - the light keys load, save and load back identical;
 * - no key: the module is off; a patch at the taught means: the taught
 *   boxes exactly (compensation at unit gains is the identity);
 * - rgb boxes scale per channel with the patch (floor lo, ceil hi, 0 and
 *   255 kept); an hsv box under equal gains keeps its hue and saturation
 *   and scales its value; grey-world measures the whole frame;
 * - the same frames give the same boxes (deterministic);
 * - adaptation follows a square whose red falls by 3 a frame at the rate
 *   (2 a frame; the first plan after a reset reads no object pixels) up to
 *   max_drift, then says it is on the guard rail; with a
 *   background just below the square's colour the ring rule stops the box
 *   before it takes the background;
 * - the plan: the reference's grid and adaptation's points (bounded, in
 *   the frame, from the results before the frame, none after a reset);
 *   an update takes only its own plan's values;
 * - the state save and load (state.bin's light section): a module loaded
 *   with another's state mid-run, its first plan given no results (as a
 *   replay's first frame), goes on exactly as the saved one, where one
 *   starting over does not; a drift past max_drift is refused at its
 *   object's record.
 */
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "light.h"
#include "objects.h"
#include "state.h"

#define W 64
#define H 48

static uint8_t pix[W * H * 3];

static struct trk_image frame(void)
{
    return (struct trk_image){ .plane = { pix },
                               .pitch = { W * 3 },
                               .width = W,
                               .height = H,
                               .fmt = TRK_FMT_RGB24,
                               .full_range = true };
}

static void fill(int x0, int y0, int x1, int y1, int r, int g, int b)
{
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) {
            uint8_t *p = &pix[(y * W + x) * 3];
            p[0] = (uint8_t)r, p[1] = (uint8_t)g, p[2] = (uint8_t)b;
        }
}

static void load(const char *json, struct trk_objects *set)
{
    struct trk_config_error err;
    int rc = trk_objects_load_string(json, strlen(json), "test", set, &err);
    CHECKF(rc == 0, "%s", err.msg);
}

static const char *SET = "{\"objects\": ["
                         "{\"name\": \"r\", \"space\": \"rgb\", \"lo\": [100, 40, 0], "
                         "\"hi\": [200, 80, 255]},"
                         "{\"name\": \"h\", \"space\": \"hsv\", \"lo\": [350, 150, 100], "
                         "\"hi\": [10, 220, 200], \"adapt\": {}}],"
                         "\"illumination\": {\"reference\": \"patch\", \"rect\": [0, 0, 8, 8], "
                         "\"means\": [160, 160, 160]}}";

static void round_trip(void)
{
    struct trk_objects *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    load(SET, a);
    CHECK(a->light.illum.reference == TRK_ILLUM_PATCH && a->light.illum.has_means);
    CHECK(!a->light.adapt[0].on && a->light.adapt[1].on);
    CHECK(a->light.adapt[1].max_drift[0] == TRK_ADAPT_HUE_DRIFT_DEFAULT);
    char *text = trk_objects_to_json(a);
    CHECK(text != NULL);
    if (text) load(text, b);
    CHECK(memcmp(&a->light, &b->light, sizeof a->light) == 0);
    free(text);
    free(a);
    free(b);
}

/* The boxes after one update on the frame as painted. */
static const struct trk_object_def *step(struct trk_light *l, bool *changed)
{
    static struct trk_frame_result res; /* no blobs */
    const struct trk_object_def *d = NULL;
    struct trk_image img = frame();
    *changed = trk_light_step_host(l, &img, &res, &d);
    return d;
}

/* A module reset to the set json (loaded into *set). */
static struct trk_light *light_for(const char *json, struct trk_objects *set)
{
    struct trk_light *l = NULL;
    CHECK(trk_light_create(&l) == 0);
    load(json, set);
    trk_light_reset(l, set, set->n);
    return l;
}

static void compensation(void)
{
    struct trk_objects *set = calloc(1, sizeof *set);
    struct trk_light *l = light_for("{\"objects\": [{\"name\": \"r\", \"space\": \"rgb\", "
                                    "\"lo\": [1, 1, 1], \"hi\": [2, 2, 2]}]}",
                                    set);
    CHECK(!trk_light_on(l));

    load(SET, set);
    trk_light_reset(l, set, set->n);
    CHECK(trk_light_on(l));
    bool changed;
    fill(0, 0, W, H, 30, 90, 30);
    fill(0, 0, 8, 8, 160, 160, 160);
    step(l, &changed);
    CHECK(!changed); /* unit gains: the taught boxes */
    CHECK(memcmp(trk_light_state(l, 0)->lo, set->def[0].lo, sizeof set->def[0].lo) == 0);

    fill(0, 0, 8, 8, 80, 120, 160); /* R half, G 3/4, B 1 */
    const struct trk_object_def *d = step(l, &changed);
    CHECK(changed);
    CHECKF(d[0].lo[0] == 50 && d[0].hi[0] == 100 && d[0].lo[1] == 30 && d[0].hi[1] == 60 &&
               d[0].lo[2] == 0 && d[0].hi[2] == 255,
           "rgb %u..%u %u..%u %u..%u", d[0].lo[0], d[0].hi[0], d[0].lo[1], d[0].hi[1], d[0].lo[2],
           d[0].hi[2]);
    const struct trk_object_def again = d[0];
    step(l, &changed);
    CHECK(!changed && memcmp(&again, &d[0], sizeof again) == 0);

    fill(0, 0, 8, 8, 80, 80, 80); /* every channel half: hue and saturation stay */
    d = step(l, &changed);
    CHECK(changed);
    CHECKF(abs((int)d[1].lo[0] - 350) <= 1 && abs((int)d[1].hi[0] - 10) <= 1 &&
               abs((int)d[1].lo[1] - 150) <= 3 && abs((int)d[1].hi[1] - 220) <= 3 &&
               abs((int)d[1].lo[2] - 50) <= 1 && abs((int)d[1].hi[2] - 100) <= 1,
           "hsv %u..%u %u..%u %u..%u", d[1].lo[0], d[1].hi[0], d[1].lo[1], d[1].hi[1], d[1].lo[2],
           d[1].hi[2]);

    /* Grey-world over the whole frame, reference from the first frame. */
    load("{\"objects\": [{\"name\": \"r\", \"space\": \"rgb\", \"lo\": [100, 100, 100], "
         "\"hi\": [200, 200, 200]}], \"illumination\": {\"reference\": \"grey-world\"}}",
         set);
    trk_light_reset(l, set, set->n);
    fill(0, 0, W, H, 100, 100, 100);
    step(l, &changed);
    CHECK(!changed);
    uint32_t m[3];
    CHECK(trk_light_means(l, m) && m[0] == 100 * 256);
    fill(0, 0, W, H, 200, 100, 50);
    d = step(l, &changed);
    CHECKF(changed && d[0].lo[0] == 200 && d[0].hi[0] == 255 && d[0].lo[1] == 100 &&
               d[0].lo[2] == 50 && d[0].hi[2] == 100,
           "grey-world %u %u %u %u %u", d[0].lo[0], d[0].hi[0], d[0].lo[1], d[0].lo[2], d[0].hi[2]);
    trk_light_destroy(&l);
    trk_light_destroy(&l);
    free(set);
}

/* A square at 20..35 x 16..31 of colour r and its blob in res. */
static void square(int r, struct trk_frame_result *res, struct trk_blob *blob)
{
    fill(20, 16, 36, 32, r, 50, 50);
    *blob = (struct trk_blob){ .mass = 256, .x0 = 20, .y0 = 16, .x1 = 35, .y1 = 31 };
    res->n = 1;
    res->blobs = blob;
    res->obj[0].n_blobs = 1;
    res->obj[0].blob0 = 0;
}

/* Runs frames with the square's red falling by 3 from 150; returns the
 * drift of R at the end and whether the rail was reported. */
static int follow(struct trk_light *l, int bg, int frames, bool *rail)
{
    struct trk_frame_result res = { 0 };
    struct trk_blob blob;
    fill(0, 0, W, H, bg, 50, 50);
    *rail = false;
    for (int f = 0; f < frames; f++) {
        square(150 - 3 * f, &res, &blob);
        const struct trk_object_def *d;
        struct trk_image img = frame();
        trk_light_step_host(l, &img, &res, &d);
        *rail |= trk_light_state(l, 0)->rail;
    }
    return trk_light_state(l, 0)->drift[0];
}

static void adaptation(void)
{
    struct trk_objects *set = calloc(1, sizeof *set);
    struct trk_light *l = light_for("{\"objects\": [{\"name\": \"r\", \"space\": \"rgb\", "
                                    "\"lo\": [135, 35, 35], \"hi\": [165, 65, 65], "
                                    "\"adapt\": {\"max_drift\": [20, 20, 20]}}]}",
                                    set);
    bool rail;
    /* 5 frames: the first plan has no results to go by (a reset), the
     * second frame gives the reference, then 3 moves of 2. */
    int dr = follow(l, 0, 5, &rail);
    CHECKF(dr == -6 && !rail, "drift %d", dr);
    trk_light_reset(l, set, set->n);
    dr = follow(l, 0, 20, &rail);
    CHECKF(dr == -20 && rail, "drift %d rail %d", dr, rail);
    CHECK(trk_light_state(l, 0)->lo[0] == 115 && trk_light_state(l, 0)->hi[0] == 145);

    /* The background at R 120: a box reaching down to it would take the
     * ring; the box stops above it. */
    trk_light_reset(l, set, set->n);
    dr = follow(l, 120, 20, &rail);
    CHECKF(rail && 135 + dr > 120, "drift %d rail %d", dr, rail);
    trk_light_destroy(&l);
    free(set);
}

/* Whether every planned point lies in the rectangle x0..x1, y0..y1
 * (exclusive ends). */
static bool points_in(const struct trk_gather_point *p, int n, int x0, int y0, int x1, int y1)
{
    for (int i = 0; i < n; i++)
        if (p[i].x < x0 || p[i].x >= x1 || p[i].y < y0 || p[i].y >= y1) return false;
    return true;
}

/* The plan (light.h): the reference's grid is the least step with at most
 * 1024 points, inside the rectangle and the frame; adaptation's points
 * come from the results before the frame, none right after a reset, at
 * most 256 around the blobs and 64 a ring, inside the frame; an update
 * takes only the values of its own plan. */
static void plan(void)
{
    struct trk_objects *set = calloc(1, sizeof *set);
    struct trk_light *l = light_for("{\"objects\": [{\"name\": \"r\", \"space\": \"rgb\", "
                                    "\"lo\": [1, 1, 1], \"hi\": [2, 2, 2], \"adapt\": {}}], "
                                    "\"illumination\": {\"reference\": \"patch\", "
                                    "\"rect\": [8, 8, 48, 32]}}",
                                    set);
    const struct trk_image hd = { .width = 1920, .height = 1080 }; /* only the size is read */
    static struct trk_frame_result res;
    static struct trk_blob blob[TRK_MAX_BLOBS];
    const struct trk_gather_point *p;
    /* 48 x 32 at step 2: 24 x 16; no results yet: no adaptation points. */
    int n = trk_light_plan(l, &hd, &res, &p);
    CHECKF(n == 24 * 16 && points_in(p, n, 8, 8, 56, 40), "patch plan %d", n);
    CHECK(p[1].x == 10 && p[24].y == 10);
    /* A plan's update takes its own count only; a new plan replaces it. */
    static struct trk_gather_value vals[TRK_MAX_GATHER];
    const struct trk_object_def *d = NULL;
    CHECK(!trk_light_update(l, &hd, vals, n - 1, &d) && !d);
    CHECK(!trk_light_update(l, &hd, NULL, n, &d) && !d);
    n = trk_light_plan(l, &hd, &res, &p);
    /* One big blob in the results: still none (they are another set's
     * until an update since the reset). */
    blob[0] = (struct trk_blob){ .mass = 90000, .x0 = 100, .y0 = 100, .x1 = 399, .y1 = 399 };
    res = (struct trk_frame_result){ .n = 1, .blobs = blob };
    res.obj[0].n_blobs = 1;
    n = trk_light_plan(l, &hd, &res, &p);
    CHECKF(n == 24 * 16, "plan after a reset %d", n);
    memset(vals, 160, sizeof vals);
    trk_light_update(l, &hd, vals, n, &d);
    n = trk_light_plan(l, &hd, &res, &p);
    CHECKF(n > 24 * 16 && n <= 24 * 16 + 256 + 64 && points_in(p, n, 0, 0, 1920, 1080),
           "plan with a blob %d", n);
    CHECKF(points_in(p + 24 * 16, n - 24 * 16, 100 - 154, 100 - 154, 400 + 154, 400 + 154),
           "points around the blob's grown box and ring");
    /* 64 blobs over the whole frame: every point inside it, within one
     * gather. */
    for (int k = 0; k < TRK_MAX_BLOBS; k++)
        blob[k] =
            (struct trk_blob){ .mass = 1000000, .x0 = k, .y0 = k, .x1 = 1919 - k, .y1 = 1079 };
    res.obj[0].n_blobs = TRK_MAX_BLOBS;
    trk_light_update(l, &hd, vals, trk_light_plan(l, &hd, &res, &p), &d);
    n = trk_light_plan(l, &hd, &res, &p);
    CHECKF(n <= 24 * 16 + 256 + 64 * TRK_MAX_BLOBS && n <= TRK_MAX_GATHER &&
               points_in(p, n, 0, 0, 1920, 1080),
           "plan with 64 blobs %d", n);
    /* Grey-world over the frame: the least step with <= 1024 points (46:
     * 42 x 24); a one-row frame too. */
    load("{\"objects\": [{\"name\": \"r\", \"space\": \"rgb\", \"lo\": [1, 1, 1], "
         "\"hi\": [2, 2, 2]}], \"illumination\": {\"reference\": \"grey-world\"}}",
         set);
    trk_light_reset(l, set, set->n);
    n = trk_light_plan(l, &hd, &res, &p);
    CHECKF(n == 42 * 24 && p[1].x == 46, "grey-world plan %d", n);
    const struct trk_image row = { .width = 4000, .height = 1 };
    n = trk_light_plan(l, &row, &res, &p);
    CHECKF(n <= 1024 && n >= 1000 && points_in(p, n, 0, 0, 4000, 1), "one-row plan %d", n);
    trk_light_destroy(&l);
    free(set);
}

/* Whether a and b have the same gains and object 0's state. */
static bool same(const struct trk_light *a, const struct trk_light *b)
{
    uint32_t ga[3], gb[3];
    trk_light_gains(a, ga);
    trk_light_gains(b, gb);
    const struct trk_light_state *x = trk_light_state(a, 0), *y = trk_light_state(b, 0);
    return !memcmp(ga, gb, sizeof ga) && !memcmp(x->lo, y->lo, sizeof x->lo) &&
           !memcmp(x->hi, y->hi, sizeof x->hi) && !memcmp(x->drift, y->drift, sizeof x->drift) &&
           x->rail == y->rail;
}

static void saved_state(void)
{
    struct trk_objects *set = calloc(1, sizeof *set);
    const char *json = "{\"objects\": [{\"name\": \"r\", \"space\": \"rgb\", "
                       "\"lo\": [135, 35, 35], \"hi\": [165, 65, 65], \"adapt\": {}}], "
                       "\"illumination\": {\"reference\": \"grey-world\"}}";
    struct trk_light *a = light_for(json, set), *b = light_for(json, set),
                     *c = light_for(json, set);
    struct trk_frame_result res = { 0 }, none = { 0 };
    struct trk_blob blob;
    struct trk_bytes bytes = { 0 };
    bool loaded = false, differs = false;
    for (int f = 0; f < 16; f++) {
        /* The light falls and turns bluer; the square's red falls faster. */
        fill(0, 0, W, H, 90 - 2 * f, 90 - 2 * f, 90 + f);
        square(150 - 3 * f, &res, &blob);
        if (f == 8) {
            trk_light_save(a, &res, &bytes);
            struct trk_rd r = { .p = bytes.p, .len = bytes.len };
            loaded = !bytes.failed && trk_light_load(b, &r) == 0 && r.off == r.len;
        }
        const struct trk_object_def *d;
        struct trk_image img = frame();
        trk_light_step_host(a, &img, &res, &d);
        if (f < 8) continue;
        trk_light_step_host(b, &img, f == 8 ? &none : &res, &d);
        trk_light_step_host(c, &img, f == 8 ? &none : &res, &d);
        CHECKF(same(a, b), "frame %d: the loaded module differs from the saved one", f);
        differs |= !same(a, c);
    }
    CHECK(loaded);
    CHECKF(differs, "a module starting over at frame 8 never differed: the test shows nothing");
    CHECKF(trk_light_state(a, 0)->drift[0] != 0, "no drift: the state saved had nothing to carry");

    /* Object 0's drift (its record after the 16-byte head and the 48-byte
     * module record; 24 bytes in) past max_drift. */
    const int32_t far = 1000;
    memcpy(bytes.p + 16 + 48 + 24, &far, sizeof far);
    struct trk_rd r = { .p = bytes.p, .len = bytes.len };
    CHECK(trk_light_load(b, &r) != 0 && r.bad && r.bad_off == 16 + 48 && r.what &&
          strstr(r.what, "max_drift"));
    free(bytes.p);
    trk_light_destroy(&a);
    trk_light_destroy(&b);
    trk_light_destroy(&c);
    free(set);
}

int main(void)
{
    round_trip();
    compensation();
    adaptation();
    plan();
    saved_state();
    return check_exit("light");
}
