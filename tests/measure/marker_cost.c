/* What the marker step costs per frame on the processing thread (a
 * measurement, not a test: it prints numbers for docs/BENCHMARKS.md
 * "Markers"; thread CPU time, which holds on a loaded machine where
 * wall-clock medians move by more than the cost).
 *
 * The scene of the marker benchmark (tests/integration/ssl_scene.py
 * --size 1920x1080 --robots 16, scale 0.45 px/mm): 16 robots wearing the
 * standard 2010 pattern (8 blue, 8 yellow, ids 0..7 each), moving and
 * turning, and a ball, as the blob lists examples/ssl-field.json gives
 * (a disc per spot: its mass, centroid and box; ±0.3 px of seeded jitter).
 * Per frame, the frame result is filled (not timed), then timed:
 * - stage: trk_marker_stage_run (spots, assembly, follower, result);
 * - json: the frame's "markers" as NDJSON/WebSocket encode them
 *   (trk_msg_frame_marker for each);
 * - frame: trk_msg_frame of the whole frame (every output's one encoding)
 *   with the patterns and, for comparison, without them.
 *
 *     build/tests/unit/daemon/trk_marker_cost [OBJECTS.json] [FRAMES]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "markers.h"
#include "messages.h"
#include "objects.h"
#include "result.h"
#include "trk_buf.h"

#define W      1920
#define H      1080
#define ROBOTS 16
#define SCALE  0.45 /* px per mm */

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_us(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), by_value);
    return v[n / 2] * 1e6;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double jitter(void) /* [-0.3, 0.3) px */
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return ((double)(rng >> 11) / 9007199254740992.0 - 0.5) * 0.6;
}

/* The standard pattern's slots (mm, x forward, y left) and ids' colours
 * (0 pink, 1 green), as examples/ssl-field.json. */
static const double DOT[4][2] = {
    { 35, 54.772 }, { 35, -54.772 }, { -54.772, 35 }, { -54.772, -35 }
};
static const char *STD16[8] = { "PPGP", "GPGP", "GGGP", "PGGP", "PPPG", "GPPG", "GGPG", "PGPG" };

struct lists {
    struct trk_blob b[5][64];
    int n[5];
};

static void add_disc(struct lists *l, int obj, double x, double y, double r_mm)
{
    double r = r_mm * SCALE;
    uint64_t mass = (uint64_t)llround(M_PI * r * r);
    x += jitter(), y += jitter();
    l->b[obj][l->n[obj]++] = (struct trk_blob){ .mass = mass,
                                                .sum_x = (uint64_t)llround(x * (double)mass),
                                                .sum_y = (uint64_t)llround(y * (double)mass),
                                                .x0 = (int32_t)(x - r),
                                                .y0 = (int32_t)(y - r),
                                                .x1 = (int32_t)(x + r),
                                                .y1 = (int32_t)(y + r),
                                                .first = (uint64_t)(y * W + x) };
}

/* Frame f's blob lists: objects blue, yellow, pink, green, ball. */
static void scene(int f, struct lists *l)
{
    memset(l->n, 0, sizeof(l->n));
    for (int k = 0; k < ROBOTS; k++) {
        double cx = 160 + (k % 8) * 220 + 40 * sin(0.02 * f + k);
        double cy = 270 + (k / 8) * 540 + 60 * cos(0.015 * f + k);
        double th = (k * 37 + 0.8 * f) * M_PI / 180; /* ccw on screen */
        add_disc(l, k < 8 ? 0 : 1, cx, cy, 25);
        const char *id = STD16[k % 8];
        for (int d = 0; d < 4; d++) {
            double dx = DOT[d][0] * cos(th) - DOT[d][1] * sin(th);
            double dy = DOT[d][0] * sin(th) + DOT[d][1] * cos(th);
            add_disc(l, id[d] == 'P' ? 2 : 3, cx + dx * SCALE, cy - dy * SCALE, 20);
        }
    }
    add_disc(l, 4, 960 + 300 * sin(0.01 * f), 540, 21.5);
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "examples/ssl-field.json";
    const int frames = argc > 2 ? atoi(argv[2]) : 2000;
    static struct trk_objects set;
    struct trk_config_error err;
    if (frames < 1 || trk_objects_load_file(path, &set, &err)) {
        fprintf(stderr, "usage: trk_marker_cost [OBJECTS.json] [FRAMES]: %s\n", err.msg);
        return 2;
    }
    if (set.n != 5) {
        fprintf(stderr, "%s: expected the 5 objects of examples/ssl-field.json\n", path);
        return 2;
    }
    struct trk_marker_stage *stage = trk_marker_stage_create();
    double *t_stage = calloc((size_t)frames, sizeof(double));
    double *t_json = calloc((size_t)frames, sizeof(double));
    double *t_frame = calloc((size_t)frames, sizeof(double));
    double *t_plain = calloc((size_t)frames, sizeof(double));
    struct trk_frame_result r = { 0 };
    struct trk_buf b = { 0 };
    static struct lists l;
    struct trk_obj_result res[5] = { 0 };
    size_t markers = 0;
    if (!stage || !t_stage || !t_json || !t_frame || !t_plain) return 1;
    for (int f = 0; f < frames; f++) {
        scene(f, &l);
        struct trk_blob_list bl[5];
        for (int i = 0; i < 5; i++)
            bl[i] = (struct trk_blob_list){ .blobs = l.b[i], .n = l.n[i] };
        struct trk_frame_meta meta = { .seq = (uint64_t)f, .width = W, .height = H };
        if (trk_frame_result_fill(&r, &meta, set.def, set.n, res, bl, NULL, &set.calib)) return 1;
        double t0 = cpu_s();
        if (trk_marker_stage_run(stage, &set, &r, W, H)) return 1;
        double t1 = cpu_s();
        trk_buf_reset(&b);
        for (size_t k = 0; k < r.n_markers; k++)
            trk_msg_frame_marker(&b, &r, k);
        double t2 = cpu_s();
        trk_buf_reset(&b);
        trk_msg_frame(&b, &r);
        double t3 = cpu_s();
        const int n_pats = r.n_patterns;
        r.n_patterns = 0;
        trk_buf_reset(&b);
        trk_msg_frame(&b, &r);
        double t4 = cpu_s();
        r.n_patterns = n_pats;
        markers += r.n_markers;
        t_stage[f] = t1 - t0, t_json[f] = t2 - t1, t_frame[f] = t3 - t2, t_plain[f] = t4 - t3;
    }
    printf("%s, %d frames, %.1f markers per frame (thread CPU, median us per frame)\n", path,
           frames, (double)markers / frames);
    printf("stage (spots + assembly + follower + result): %.2f\n", median_us(t_stage, frames));
    printf("markers json: %.2f\n", median_us(t_json, frames));
    printf("frame json with markers: %.2f, without: %.2f\n", median_us(t_frame, frames),
           median_us(t_plain, frames));
    trk_marker_stage_destroy(stage);
    trk_frame_result_free(&r);
    trk_buf_free(&b);
    free(t_stage), free(t_json), free(t_frame), free(t_plain);
    return 0;
}
