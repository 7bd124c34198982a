/* Point gathers (backend.h trk_backend_set_gather, image.h trk_image_gather)
 * on every pixel format, an odd size and padded rows:
 * - trk_image_gather (the definition) gives every pixel's native samples
 *   as pixel_oracle.h addresses them on its own;
 * - cpu-ref and cpu give the same through the backend, on a whole-frame
 *   submit and on a regional one (with the frame's results those of the
 *   oracle and unchanged by the gather);
 * - the gather is read once: a later submit without one keeps the values;
 *   set_gather(0) disarms; a point outside the image fails the submit; n
 *   out of range, or set_gather while a frame is in flight, is refused.
 */
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "backend.h"
#include "pixel_oracle.h"
#include "scene.h"

#define W   37
#define H   23
#define PAD 5

static const enum trk_backend_kind KINDS[] = { TRK_BACKEND_CPU_REF, TRK_BACKEND_CPU };

/* A noise picture in fmt (seeded per format). */
static int noise_image(enum trk_pixfmt fmt, uint64_t seed, uint8_t **buf, struct trk_image *img)
{
    static uint8_t rgb[W * H * 3];
    for (int i = 0; i < W * H * 3; i++)
        rgb[i] = (uint8_t)trk_rand_next(&seed);
    return trk_image_from_rgb(rgb, W, H, fmt, TRK_MATRIX_BT709, false, PAD, buf, img);
}

/* Every pixel, column-major (so the order is not the rows'). */
static int all_points(struct trk_gather_point *pts)
{
    int n = 0;
    for (int x = 0; x < W; x++)
        for (int y = 0; y < H; y++)
            pts[n++] = (struct trk_gather_point){ (uint16_t)x, (uint16_t)y };
    return n;
}

/* Whether vals are the oracle's samples of pts on img; reports the first
 * difference. */
static bool same_as_oracle(const struct trk_image *img, const struct trk_gather_point *pts,
                           const struct trk_gather_value *vals, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        for (int c = 0; c < 3; c++)
            if (vals[i].s[c] != sample(img, pts[i].x, pts[i].y, c) || vals[i].pad) {
                CHECKF(0, "%s %s: point %d (%d, %d) channel %d: %d, oracle %d", what,
                       trk_pixfmt_name(img->fmt), i, pts[i].x, pts[i].y, c, vals[i].s[c],
                       sample(img, pts[i].x, pts[i].y, c));
                return false;
            }
    return true;
}

static void definition(void)
{
    static struct trk_gather_point pts[W * H];
    static struct trk_gather_value vals[W * H];
    const int n = all_points(pts);
    for (int fmt = 0; fmt < TRK_FMT_COUNT; fmt++) {
        uint8_t *buf;
        struct trk_image img;
        CHECK(noise_image(fmt, 27 + (uint64_t)fmt, &buf, &img) == 0);
        CHECK(trk_image_gather_check(&img, pts, n) == 0);
        trk_image_gather(&img, pts, n, vals);
        same_as_oracle(&img, pts, vals, n, "trk_image_gather");
        const struct trk_gather_point out[2] = { { W, 0 }, { 0, H } };
        CHECK(trk_image_gather_check(&img, &out[0], 1) == TRK_EINVAL);
        CHECK(trk_image_gather_check(&img, &out[1], 1) == TRK_EINVAL);
        free(buf);
    }
}

/* One frame through b with the gather armed: whole-frame or regional. */
static int armed_frame(struct trk_backend *b, const struct trk_image *img, bool regional,
                       struct trk_obj_result *out)
{
    const struct trk_region reg = { 0, { 3, 2, 30, 20 } };
    int err =
        regional ? trk_backend_submit_regions(b, img, &reg, 1) : trk_backend_submit(b, img, NULL);
    return err ? err : trk_backend_wait(b, out, NULL);
}

static void backends(void)
{
    static struct trk_gather_point pts[W * H];
    const int n = all_points(pts);
    const struct trk_object_def def = { .name = "o",
                                        .space = TRK_SPACE_RGB,
                                        .lo = { 0, 0, 0 },
                                        .hi = { 127, 255, 255 },
                                        .min_mass = 1,
                                        .blobs = 2 };
    for (size_t k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++) {
        struct trk_backend *b = NULL;
        const struct trk_backend_cfg cfg = { .kind = KINDS[k], .max_width = 64, .max_height = 64 };
        CHECK(trk_backend_create(&cfg, &b) == 0);
        if (!b) continue;
        CHECK(trk_backend_set_objects(b, &def, 1) == 0);
        for (int fmt = 0; fmt < TRK_FMT_COUNT; fmt++)
            for (int regional = 0; regional < 2; regional++) {
                uint8_t *buf;
                struct trk_image img;
                CHECK(noise_image(fmt, 270 + (uint64_t)fmt, &buf, &img) == 0);
                struct trk_obj_result plain, with;
                CHECK(armed_frame(b, &img, regional, &plain) == 0); /* nothing armed */
                const struct trk_gather_value *vals;
                CHECK(trk_backend_gathered(b, &vals) == TRK_EINVAL && !vals);
                CHECK(trk_backend_set_gather(b, pts, n) == 0);
                CHECK(trk_backend_gathered(b, &vals) == TRK_EINVAL); /* not yet read */
                CHECK(armed_frame(b, &img, regional, &with) == 0);
                CHECK(memcmp(&plain, &with, sizeof plain) == 0);
                uint64_t mass = 0; /* the frame's own result, from the oracle */
                for (int y = regional ? 2 : 0; y <= (regional ? 20 : H - 1); y++)
                    for (int x = regional ? 3 : 0; x <= (regional ? 30 : W - 1); x++)
                        mass += (uint64_t)matches(&img, &def, x, y);
                CHECKF(with.mass == mass, "%s mass %llu, oracle %llu", trk_backend_name(b),
                       (unsigned long long)with.mass, (unsigned long long)mass);
                CHECK(trk_backend_gathered(b, &vals) == n);
                if (vals) same_as_oracle(&img, pts, vals, n, trk_backend_name(b));
                /* Read once: the next frame (another picture) reads none. */
                uint8_t *buf2;
                struct trk_image img2;
                CHECK(noise_image(fmt, 2700 + (uint64_t)fmt, &buf2, &img2) == 0);
                CHECK(armed_frame(b, &img2, regional, &with) == 0);
                CHECK(trk_backend_gathered(b, &vals) == n);
                if (vals) same_as_oracle(&img, pts, vals, n, "kept");
                CHECK(trk_backend_set_gather(b, NULL, 0) == 0);
                CHECK(trk_backend_gathered(b, &vals) == TRK_EINVAL);
                free(buf);
                free(buf2);
            }
        /* Refusals. */
        uint8_t *buf;
        struct trk_image img;
        CHECK(noise_image(TRK_FMT_RGB24, 1, &buf, &img) == 0);
        const struct trk_gather_point outside = { 10, H };
        CHECK(trk_backend_set_gather(b, &outside, 1) == 0);
        CHECK(trk_backend_submit(b, &img, NULL) == TRK_EINVAL);
        CHECK(trk_backend_set_gather(b, pts, -1) == TRK_EINVAL);
        CHECK(trk_backend_set_gather(b, pts, TRK_MAX_GATHER + 1) == TRK_EINVAL);
        CHECK(trk_backend_set_gather(b, NULL, 1) == TRK_EINVAL);
        CHECK(trk_backend_set_gather(b, pts, 1) == 0);
        CHECK(trk_backend_submit(b, &img, NULL) == 0);
        CHECK(trk_backend_set_gather(b, pts, 1) == TRK_EINVAL); /* in flight */
        const struct trk_gather_value *vals;
        CHECK(trk_backend_gathered(b, &vals) == TRK_EINVAL);
        struct trk_obj_result r;
        CHECK(trk_backend_wait(b, &r, NULL) == 0);
        CHECK(trk_backend_gathered(b, &vals) == 1 && vals && vals[0].s[0] == sample(&img, 0, 0, 0));
        free(buf);
        trk_backend_destroy(&b);
    }
}

int main(void)
{
    definition();
    backends();
    return check_exit("gather");
}
