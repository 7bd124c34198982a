/* A sparse scene for the second moments at large coordinates (the 8K
 * cases of the CPU and GPU tests): an RGB24 frame, dark except for
 *   - a red filled rectangle near the bottom-right corner,
 *   - a green disc, a green bar at 30 degrees and a green diagonal line
 *     (one 8-connected blob, single pixels under 4-connectivity),
 * and four objects:
 *   0 "all":    every colour: the whole frame (blobs K = 1, 8-connected),
 *   1 "red":    the rectangle (blobs K = 4, 4-connected),
 *   2 "green":  rgb box, blobs K = 8, 8-connected,
 *   3 "green4": the same pixels by an hsv box, blobs K = 64, 4-connected.
 * Objects 0 and 1 have closed-form sums (ms_expect_rect), worked out here
 * from the sums of integers and their squares, independently of the
 * backends' own run formulas. Header-only, for the unit and GPU tests. */
#ifndef TRK_TEST_MOMENTS_SCENE_H
#define TRK_TEST_MOMENTS_SCENE_H

#include "backend.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MS_OBJECTS 4

struct ms_scene {
    uint8_t *rgb;
    int w, h;
    struct trk_image img;
    struct trk_object_def objs[MS_OBJECTS];
    int rx0, ry0, rx1, ry1; /* the red rectangle, inclusive */
};

static void ms_put(struct ms_scene *s, int x, int y, uint8_t r, uint8_t g, uint8_t b)
{
    if (x < 0 || y < 0 || x >= s->w || y >= s->h) return;
    uint8_t *p = s->rgb + ((size_t)y * (size_t)s->w + (size_t)x) * 3;
    p[0] = r, p[1] = g, p[2] = b;
}

static void ms_object(struct trk_object_def *o, const char *name, enum trk_space sp, int lo0,
                      int lo1, int lo2, int hi0, int hi1, int hi2, int blobs, int conn)
{
    memset(o, 0, sizeof(*o));
    strncpy(o->name, name, sizeof(o->name) - 1);
    o->space = sp;
    o->lo[0] = (uint16_t)lo0, o->lo[1] = (uint16_t)lo1, o->lo[2] = (uint16_t)lo2;
    o->hi[0] = (uint16_t)hi0, o->hi[1] = (uint16_t)hi1, o->hi[2] = (uint16_t)hi2;
    o->min_mass = 1;
    o->blobs = (uint16_t)blobs;
    o->connectivity = (uint8_t)conn;
}

/* The scene at w x h (w >= 2000, h >= 1200); 0 or -1 without memory. */
static int ms_make(int w, int h, struct ms_scene *s)
{
    memset(s, 0, sizeof(*s));
    s->w = w, s->h = h;
    s->rgb = malloc((size_t)w * (size_t)h * 3);
    if (!s->rgb) return -1;
    memset(s->rgb, 10, (size_t)w * (size_t)h * 3);
    s->rx0 = w - 701, s->rx1 = w - 3, s->ry0 = h - 401, s->ry1 = h - 2;
    for (int y = s->ry0; y <= s->ry1; y++)
        for (int x = s->rx0; x <= s->rx1; x++)
            ms_put(s, x, y, 200, 30, 30);
    const int cx = w - 1000, cy = 300, rad = 150;
    for (int y = cy - rad; y <= cy + rad; y++)
        for (int x = cx - rad; x <= cx + rad; x++)
            if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= rad * rad)
                ms_put(s, x, y, 30, 200, 30);
    /* The bar: 600 x 24 at 30 degrees counter-clockwise on screen. */
    const double bx = w / 2.0 + 0.4, by = h / 2.0 + 0.3, ux = cos(3.14159265358979323846 / 6),
                 uy = -sin(3.14159265358979323846 / 6);
    for (int y = (int)by - 320; y <= (int)by + 320; y++)
        for (int x = (int)bx - 320; x <= (int)bx + 320; x++) {
            const double dx = x - bx, dy = y - by;
            if (fabs(dx * ux + dy * uy) <= 300 && fabs(-dx * uy + dy * ux) <= 12)
                ms_put(s, x, y, 30, 200, 30);
        }
    for (int i = 0; i < 500; i++)
        ms_put(s, w - 1800 + i, h - 900 + i, 30, 200, 30);
    ms_object(&s->objs[0], "all", TRK_SPACE_RGB, 0, 0, 0, 255, 255, 255, 1, 8);
    ms_object(&s->objs[1], "red", TRK_SPACE_RGB, 180, 0, 0, 220, 60, 60, 4, 4);
    ms_object(&s->objs[2], "green", TRK_SPACE_RGB, 0, 180, 0, 60, 220, 60, 8, 8);
    ms_object(&s->objs[3], "green4", TRK_SPACE_HSV, 100, 150, 150, 140, 255, 255, 64, 4);
    s->img = (struct trk_image){ .plane = { s->rgb },
                                 .pitch = { (size_t)w * 3 },
                                 .width = w,
                                 .height = h,
                                 .fmt = TRK_FMT_RGB24,
                                 .matrix = TRK_MATRIX_BT601,
                                 .full_range = true };
    return 0;
}

static void ms_free(struct ms_scene *s)
{
    free(s->rgb);
    s->rgb = NULL;
}

/* Sum of the integers a..b and of their squares. */
static uint64_t ms_sum(uint64_t a, uint64_t b)
{
    return (a + b) * (b - a + 1) / 2;
}
static uint64_t ms_sum_sq(uint64_t a, uint64_t b)
{
    uint64_t s = 0; /* plainly, one term at a time: the oracle */
    for (uint64_t v = a; v <= b; v++)
        s += v * v;
    return s;
}

/* The result a filled rectangle [x0, x1] x [y0, y1] gives. */
static struct trk_obj_result ms_expect_rect(int x0, int y0, int x1, int y1)
{
    const uint64_t nx = (uint64_t)(x1 - x0 + 1), ny = (uint64_t)(y1 - y0 + 1);
    const uint64_t sx = ms_sum((uint64_t)x0, (uint64_t)x1), sy = ms_sum((uint64_t)y0, (uint64_t)y1);
    struct trk_obj_result r = { 0 };
    r.mass = nx * ny;
    r.sum_x = ny * sx;
    r.sum_y = nx * sy;
    r.x0 = x0, r.y0 = y0, r.x1 = x1, r.y1 = y1;
    r.sum_xx = ny * ms_sum_sq((uint64_t)x0, (uint64_t)x1);
    r.sum_yy = nx * ms_sum_sq((uint64_t)y0, (uint64_t)y1);
    r.sum_xy = sx * sy;
    return r;
}

/* Whether a blob has the sums and box of the rectangle's result. */
static int ms_blob_is(const struct trk_blob *b, const struct trk_obj_result *r)
{
    return b->mass == r->mass && b->sum_x == r->sum_x && b->sum_y == r->sum_y && b->x0 == r->x0 &&
           b->y0 == r->y0 && b->x1 == r->x1 && b->y1 == r->y1 && b->sum_xx == r->sum_xx &&
           b->sum_yy == r->sum_yy && b->sum_xy == r->sum_xy;
}

#endif
