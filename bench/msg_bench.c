/* trackd-msg-bench: what encoding one frame message costs on this CPU
 * (issue 31, delivery: the encoding is the processing thread's share of a
 * result's way to the client). A frame like the SSL field clip's: O objects,
 * each with K blobs and K tracked instances (protocol/result.h; 16 x 10 is
 * about the clip's 54 KB), moments
 * and shapes set, values drawn from a fixed seed so every run encodes the
 * same bytes. Prints the message's size, a checksum of its bytes (equal
 * between trees that encode alike), and the median and minimum time of
 * one trk_msg_frame over --reps rounds of --iters messages.
 *
 *   trackd-msg-bench [--objects 16] [--blobs 16] [--iters 200] [--reps 15]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "messages.h"
#include "result.h"
#include "trk_buf.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

/* A blob of about r pixels' radius at x, y: its moments as a disk's. */
static struct trk_blob disk(uint64_t *s, int w, int h)
{
    const int r = 8 + (int)(rnd(s) % 5);
    const int x = r + (int)(rnd(s) % (uint64_t)(w - 2 * r)),
              y = r + (int)(rnd(s) % (uint64_t)(h - 2 * r));
    struct trk_blob b = { 0 };
    for (int dy = -r; dy <= r; dy++)
        for (int dx = -r; dx <= r; dx++) {
            if (dx * dx + dy * dy > r * r + (int)(rnd(s) % 3)) continue;
            const uint64_t px = (uint64_t)(x + dx), py = (uint64_t)(y + dy);
            b.mass++, b.sum_x += px, b.sum_y += py;
            b.sum_xx += px * px, b.sum_yy += py * py, b.sum_xy += px * py;
        }
    b.x0 = x - r, b.x1 = x + r, b.y0 = y - r, b.y1 = y + r;
    b.perimeter = (uint64_t)(6 * r + (int)(rnd(s) % 5));
    b.first = (uint64_t)(b.y0 * w + x);
    return b;
}

int main(int argc, char **argv)
{
    int n = 16, k = 10, iters = 200, reps = 15;
    for (int i = 1; i + 1 < argc; i += 2) {
        int v = atoi(argv[i + 1]);
        if (!strcmp(argv[i], "--objects"))
            n = v;
        else if (!strcmp(argv[i], "--blobs"))
            k = v;
        else if (!strcmp(argv[i], "--iters"))
            iters = v;
        else if (!strcmp(argv[i], "--reps"))
            reps = v;
        else {
            fprintf(stderr, "trackd-msg-bench: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (n < 1 || n > TRK_MAX_OBJECTS || k < 0 || k > TRK_MAX_BLOBS || iters < 1 || reps < 1 ||
        reps > 101) {
        fprintf(stderr, "trackd-msg-bench: bad value\n");
        return 2;
    }
    const int w = 1920, h = 1080;
    uint64_t seed = 31;
    struct trk_object_def *defs = calloc((size_t)n, sizeof *defs);
    struct trk_obj_result *res = calloc((size_t)n, sizeof *res);
    struct trk_blob_list *lists = calloc((size_t)n, sizeof *lists);
    struct trk_instance_list *inst = calloc((size_t)n, sizeof *inst);
    struct trk_blob *blobs = calloc((size_t)n * (size_t)k + 1, sizeof *blobs);
    struct trk_instance *ins = calloc((size_t)n * (size_t)k + 1, sizeof *ins);
    static struct trk_frame_result r;
    if (!defs || !res || !lists || !inst || !blobs || !ins) return 1;
    for (int i = 0; i < n; i++) {
        snprintf(defs[i].name, sizeof defs[i].name, "robot-%02d", i);
        defs[i].blobs = (uint16_t)k;
        defs[i].track = k > 0;
        defs[i].min_mass = 1;
        struct trk_blob *b = blobs + (size_t)i * (size_t)k;
        struct trk_obj_result *o = &res[i];
        o->x0 = o->y0 = INT32_MAX;
        for (int j = 0; j < k; j++) {
            b[j] = disk(&seed, w, h);
            o->mass += b[j].mass, o->sum_x += b[j].sum_x, o->sum_y += b[j].sum_y;
            o->sum_xx += b[j].sum_xx, o->sum_yy += b[j].sum_yy, o->sum_xy += b[j].sum_xy;
            if (b[j].x0 < o->x0) o->x0 = b[j].x0;
            if (b[j].y0 < o->y0) o->y0 = b[j].y0;
            if (b[j].x1 > o->x1) o->x1 = b[j].x1;
            if (b[j].y1 > o->y1) o->y1 = b[j].y1;
            struct trk_instance *v = &ins[(size_t)i * (size_t)k + (size_t)j];
            v->id = (uint64_t)(i * k + j + 1);
            v->blob = b[j];
            v->cx = (double)b[j].sum_x / (double)b[j].mass;
            v->cy = (double)b[j].sum_y / (double)b[j].mass;
            v->vx = (double)(rnd(&seed) % 4001) / 1000.0 - 2.0;
            v->vy = (double)(rnd(&seed) % 4001) / 1000.0 - 2.0;
            v->age = 1 + rnd(&seed) % 5000;
            v->via_roi = true;
            v->orientation = (double)(rnd(&seed) % 18000) / 100.0;
            v->major = 5 + (double)(rnd(&seed) % 100) / 100.0;
            v->minor = 5 + (double)(rnd(&seed) % 50) / 100.0;
            v->vth = (double)(rnd(&seed) % 2001) / 100.0 - 10.0;
        }
        lists[i] = (struct trk_blob_list){ .blobs = b, .n = k };
        inst[i] = (struct trk_instance_list){ .v = ins + (size_t)i * (size_t)k, .n = k };
    }
    const struct trk_frame_meta m = { .seq = 1234,
                                      .pts = 20.567,
                                      .width = w,
                                      .height = h,
                                      .t_capture = 65246.239040,
                                      .wall_ms = 1795829821295.541,
                                      .queue_ms = 0.012,
                                      .kernel_ms = 0.078,
                                      .process_ms = 0.376,
                                      .backend_ms = 0.195,
                                      .handoff_ms = 0.002,
                                      .backend = "cuda",
                                      .camera = "ssl1080",
                                      .pass = "roi",
                                      .rounds = 1 };
    if (trk_frame_result_fill(&r, &m, defs, n, res, lists, inst, NULL)) return 1;
    trk_frame_result_set_rate(&r, NULL, 60);
    struct trk_buf b = { 0 };
    double t[101];
    uint64_t sum = 0;
    for (int rep = 0; rep < reps; rep++) {
        const double t0 = now_s();
        for (int i = 0; i < iters; i++) {
            trk_buf_reset(&b);
            if (trk_msg_frame(&b, &r)) return 1;
        }
        t[rep] = (now_s() - t0) / iters * 1e6;
    }
    for (size_t i = 0; i < b.len; i++)
        sum = sum * 31 + (unsigned char)b.data[i];
    for (int i = 1; i < reps; i++)
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    printf("frame message, %d objects x %d blobs and instances: %zu bytes, checksum %016llx\n", n,
           k, b.len, (unsigned long long)sum);
    printf("encode us: median %.2f  min %.2f  (%d rounds of %d)  %.0f MB/s\n", t[reps / 2], t[0],
           reps, iters, (double)b.len / t[reps / 2]);
    trk_buf_free(&b);
    trk_frame_result_free(&r);
    free(defs), free(res), free(lists), free(inst), free(blobs), free(ins);
    return 0;
}
