/* What the light module (daemon/light.h) costs per frame against the
 * frame's own processing, in CPU time of one thread (a measurement, not a
 * test: it prints numbers for docs/BENCHMARKS.md; thread CPU time holds
 * on a loaded machine where wall-clock medians move by more than the cost).
 *
 * A 1920x1080 RGB24 frame: a grey-green field, M = 16 objects (boxes in
 * every space), each painted as a disc of radius 30 px in its box's
 * centre colour, a grey card at 8, 8 (48 x 32). For each of F frames the
 * light falls (100 % -> 45 %, every pixel scaled; painting is not timed),
 * then on one thread (the fast CPU backend with 1 thread, blobs 4 per
 * object): trk_light_plan and trk_backend_set_gather, backend process (the
 * frame's cost; the backend reads the planned points in it), then
 * trk_light_update and, when it moved the boxes, trk_backend_set_objects
 * (the light's cost: plan, update and table rebuild).
 * Cases: patch, grey-world (whole frame), adapt on all 16, both.
 *
 *     build/tests/unit/daemon/trk_light_cost [FRAMES]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "color.h"
#include "light.h"
#include "objects.h"

#define W 1920
#define H 1080
#define M 16

static const char *BOXES[M] = {
    "\"hsv\", \"lo\": [348, 120, 100], \"hi\": [12, 255, 255]",
    "\"hsv\", \"lo\": [116, 120, 100], \"hi\": [140, 255, 255]",
    "\"ycbcr\", \"lo\": [40, 180, 70], \"hi\": [140, 240, 120]",
    "\"rgb\", \"lo\": [180, 160, 0], \"hi\": [255, 250, 80]",
    "\"hsv\", \"lo\": [288, 120, 100], \"hi\": [312, 255, 255]",
    "\"hsv\", \"lo\": [171, 120, 100], \"hi\": [195, 255, 255]",
    "\"hsv\", \"lo\": [18, 120, 100], \"hi\": [42, 255, 255]",
    "\"rgb\", \"lo\": [120, 200, 0], \"hi\": [180, 255, 60]",
    "\"rgb\", \"lo\": [0, 0, 90], \"hi\": [40, 40, 160]",
    "\"rgb\", \"lo\": [110, 60, 20], \"hi\": [160, 100, 50]",
    "\"hsv\", \"lo\": [320, 60, 150], \"hi\": [345, 140, 255]",
    "\"hsv\", \"lo\": [160, 120, 60], \"hi\": [175, 255, 160]",
    "\"hsv\", \"lo\": [255, 120, 100], \"hi\": [280, 255, 255]",
    "\"ycbcr\", \"lo\": [120, 100, 135], \"hi\": [200, 120, 160]",
    "\"ycbcr\", \"lo\": [60, 140, 80], \"hi\": [120, 170, 110]",
    "\"ycbcr\", \"lo\": [60, 90, 120], \"hi\": [120, 120, 140]",
};

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint8_t base[W * H * 3], pix[W * H * 3];

static void paint(const struct trk_objects *set)
{
    for (int i = 0; i < W * H; i++)
        base[i * 3] = 60, base[i * 3 + 1] = 100, base[i * 3 + 2] = 60;
    for (int y = 8; y < 40; y++)
        for (int x = 8; x < 56; x++)
            memset(&base[(y * W + x) * 3], 170, 3);
    for (int k = 0; k < set->n; k++) {
        uint8_t rgb[3];
        trk_object_display_rgb(&set->def[k], rgb);
        const int cx = 200 + (k % 8) * 200, cy = 300 + (k / 8) * 400;
        for (int y = cy - 30; y <= cy + 30; y++)
            for (int x = cx - 30; x <= cx + 30; x++)
                if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= 900)
                    memcpy(&base[(y * W + x) * 3], rgb, 3);
    }
}

static void dim(double light)
{
    const int q = (int)lrint(light * 256);
    for (int i = 0; i < W * H * 3; i++)
        pix[i] = (uint8_t)((base[i] * q + 128) >> 8);
}

/* The frame's blob lists into res. */
static void fill_result(struct trk_backend *b, int n, struct trk_frame_result *res,
                        struct trk_blob *all)
{
    int at = 0;
    res->n = n;
    res->blobs = all;
    for (int i = 0; i < n; i++) {
        const struct trk_blob *bl;
        int nb = trk_backend_blobs(b, i, &bl);
        nb = nb < 0 ? 0 : nb;
        memcpy(&all[at], bl, (size_t)nb * sizeof *bl);
        res->obj[i].blob0 = (size_t)at;
        res->obj[i].n_blobs = nb;
        at += nb;
    }
}

static int run(const char *name, const char *light_keys, const char *adapt, int frames)
{
    char json[8192];
    int len = snprintf(json, sizeof json, "{\"objects\": [");
    for (int k = 0; k < M; k++)
        len += snprintf(json + len, sizeof json - (size_t)len,
                        "%s{\"name\": \"o%d\", \"space\": %s, \"min_mass\": 20, \"blobs\": 4, "
                        "\"min_area\": 20%s}",
                        k ? ", " : "", k, BOXES[k], adapt);
    snprintf(json + len, sizeof json - (size_t)len, "]%s}", light_keys);
    static struct trk_objects set;
    struct trk_config_error err;
    if (trk_objects_load_string(json, strlen(json), "bench", &set, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    paint(&set);
    struct trk_backend *b = NULL;
    struct trk_backend_cfg bc = {
        .kind = TRK_BACKEND_CPU, .max_width = W, .max_height = H, .threads = 1
    };
    struct trk_light *l = NULL;
    if (trk_backend_create(&bc, &b) || trk_backend_set_objects(b, set.def, set.n) ||
        trk_light_create(&l))
        return 1;
    trk_light_reset(l, &set, set.n);
    static struct trk_frame_result res;
    static struct trk_obj_result out[M];
    static struct trk_blob all[M * TRK_MAX_BLOBS];
    const struct trk_image img = { .plane = { pix },
                                   .pitch = { W * 3 },
                                   .width = W,
                                   .height = H,
                                   .fmt = TRK_FMT_RGB24,
                                   .full_range = true };
    double t_frame = 0, t_light = 0;
    int moved = 0;
    for (int f = 0; f < frames; f++) {
        dim(1.0 - 0.55 * f / (frames > 1 ? frames - 1 : 1));
        /* As the pipeline: the plan from the last frame's results goes
         * with the frame (the backend reads its points in process). */
        double t0 = cpu_s();
        const struct trk_gather_point *pts;
        if (trk_backend_set_gather(b, pts, trk_light_plan(l, &img, &res, &pts))) return 1;
        double t1 = cpu_s();
        if (trk_backend_process(b, &img, NULL, out, NULL)) return 1;
        fill_result(b, set.n, &res, all);
        double t2 = cpu_s();
        const struct trk_object_def *defs;
        const struct trk_gather_value *vals;
        const int nv = trk_backend_gathered(b, &vals);
        if (trk_light_update(l, &img, vals, nv < 0 ? 0 : nv, &defs)) {
            trk_backend_set_objects(b, defs, set.n);
            moved++;
        }
        double t3 = cpu_s();
        t_frame += t2 - t1, t_light += (t1 - t0) + (t3 - t2);
    }
    printf("%-10s frame %.3f ms  light %.4f ms  (%.2f %%)  boxes moved in %d of %d frames\n", name,
           t_frame * 1e3 / frames, t_light * 1e3 / frames, 100 * t_light / t_frame, moved, frames);
    trk_light_destroy(&l);
    trk_backend_destroy(&b);
    return 0;
}

int main(int argc, char **argv)
{
    const int frames = argc > 1 ? atoi(argv[1]) : 60;
    const char *patch = ", \"illumination\": {\"reference\": \"patch\", \"rect\": [8, 8, 48, 32]}";
    const char *grey = ", \"illumination\": {\"reference\": \"grey-world\"}";
    const char *adapt = ", \"adapt\": {}";
    return run("off", "", "", frames) || run("patch", patch, "", frames) ||
           run("grey", grey, "", frames) || run("adapt", "", adapt, frames) ||
           run("both", patch, adapt, frames);
}
